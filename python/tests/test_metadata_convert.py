"""zgpu_metadata_convert through Python: whole documents between Zarr v2 and v3 (zgpu._metadata.convert_document)."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import zgpu
from zgpu._metadata import convert_document
from zg_helpers import assert_same


def test_v3_v2_v3_round_trip(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(10, 20), dtype=">f4", chunks=(3, 7), fill_value=np.nan,
                    compressors="zstd:3", attributes={"units": "m", "n": [1, 2.5]})
    v3 = a.metadata
    v2 = convert_document(v3, 2)
    assert v2["zarr_format"] == 2 and v2["dtype"] == ">f4" and v2["chunks"] == [3, 7]
    assert v2["fill_value"] == "NaN" and v2["order"] == "C" and v2["filters"] is None
    assert v2["compressor"] == {"id": "zstd", "level": 3, "checksum": False}
    assert v2["attributes"] == {"units": "m", "n": [1, 2.5]}
    assert convert_document(v2, 3) == v3
    assert convert_document(json.dumps(v3), 3) == v3  # text in, same format: unchanged


def test_v2_array_migrated_in_place(tmp_path):
    """keep_chunk_keys: the v3 document reads the chunks the v2 array stored, where they are."""
    data = np.arange(12 * 9, dtype="<i2").reshape(12, 9)
    a = zgpu.create(tmp_path / "v2", shape=data.shape, dtype=data.dtype, chunks=(5, 4), zarr_format=2,
                    order="F", attributes={"k": "v"})
    a[...] = data
    src = str(tmp_path / "v2")
    with open(os.path.join(src, ".zarray")) as f:
        doc = json.load(f)
    with open(os.path.join(src, ".zattrs")) as f:
        doc["attributes"] = json.load(f)
    v3 = convert_document(doc, 3, keep_chunk_keys=True)
    assert v3["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "."}}
    assert v3["codecs"][0] == {"name": "transpose", "configuration": {"order": [1, 0]}}
    dst = str(tmp_path / "v3")
    shutil.copytree(src, dst)
    for name in (".zarray", ".zattrs"):
        os.remove(os.path.join(dst, name))
    with open(os.path.join(dst, "zarr.json"), "w") as f:
        json.dump(v3, f)
    b = zgpu.open_array(dst)
    assert b.zarr_format == 3 and dict(b.attrs) == {"k": "v"}
    assert_same(b[...], data)
    # without the flag the keys are v3's own style, with v2's separator
    assert convert_document(doc, 3)["chunk_key_encoding"] == {"name": "default", "configuration": {"separator": "."}}


@pytest.mark.parametrize("kwargs,needle", [
    ({"dimension_names": ["t", None]}, "dimension_names"),
    ({"shards": (4, 4)}, "sharding"),
    ({"compressors": "zstd+crc32c"}, "crc32c"),
])
def test_what_v2_cannot_express_is_refused(tmp_path, kwargs, needle):
    a = zgpu.create(tmp_path / "a", shape=(8, 8), dtype="u2", chunks=(2, 2), **kwargs)
    with pytest.raises(zgpu.UnsupportedError, match=needle):
        convert_document(a.metadata, 2)
