"""The zarr-python names people type on an array (issue 21): dimension_names, filters / serializer / compressors,
order, info / info_complete(), append, np.asarray; compared with zarr-python on the same arrays."""
from __future__ import annotations

import numpy as np
import pytest
import zarr

import zgpu


def test_v3_names(tmp_path):
    path = str(tmp_path / "a.zarr")
    z = zarr.create_array(path, shape=(20, 6), chunks=(5, 6), dtype="u2", dimension_names=["t", "x"],
                          filters=[zarr.codecs.TransposeCodec(order=(1, 0))],
                          compressors=[zarr.codecs.ZstdCodec(level=2), zarr.codecs.Crc32cCodec()])
    z[...] = np.arange(120, dtype="u2").reshape(20, 6)
    a = zgpu.open_array(path, mode="r+")
    assert a.dimension_names == ("t", "x") == z.metadata.dimension_names
    assert [f["name"] for f in a.filters] == ["transpose"]
    assert a.serializer["name"] == "bytes"
    assert [c["name"] for c in a.compressors] == ["zstd", "crc32c"] and a.compressors[0]["configuration"]["level"] == 2
    assert a.order == "C"
    text = repr(a.info)
    assert "Type               : Array" in text and "Zarr format        : 3" in text
    assert "Shape              : (20, 6)" in text and "Chunk shape        : (5, 6)" in text
    assert '"name": "zstd"' in text and "No. bytes          : 240 (240 B)" in text
    full = a.info_complete()
    assert full.count_chunks_initialized == 4 and full.count_bytes_stored == a.nbytes_stored()
    assert "Chunks Initialized : 4/4" in repr(full)
    np.testing.assert_array_equal(np.asarray(a), z[...])


def test_v2_names_and_sharded(tmp_path):
    p2 = str(tmp_path / "v2.zarr")
    zarr.create_array(p2, shape=(4,), chunks=(2,), dtype="f8", zarr_format=2, order="F")
    a = zgpu.open_array(p2)
    assert a.dimension_names is None and a.order == "F" and a.serializer["name"] == "bytes"
    ps = str(tmp_path / "s.zarr")
    zarr.create_array(ps, shape=(8, 8), chunks=(2, 2), shards=(4, 8), dtype="i1")
    s = zgpu.open_array(ps)
    assert s.serializer["name"] == "sharding_indexed" and s.compressors == ()
    assert "Shard shape        : (4, 8)" in repr(s.info)


def test_append(tmp_path):
    path = str(tmp_path / "a.zarr")
    a = zgpu.create(path, shape=(3, 4), dtype="i4", chunks=(2, 2))
    a[...] = 1
    assert a.append(np.full((2, 4), 2, "i4")) == (5, 4)
    assert a.append(np.full((5, 1), 3, "i4"), axis=1) == (5, 5)
    want = np.ones((5, 5), "i4")
    want[3:, :4] = 2
    want[:, 4] = 3
    np.testing.assert_array_equal(a[...], want)
    np.testing.assert_array_equal(zarr.open_array(path)[...], want)
    with pytest.raises(ValueError, match="cannot append"):
        a.append(np.zeros((1, 2), "i4"))
    with pytest.raises(ValueError, match="out of range"):
        a.append(np.zeros((5, 5), "i4"), axis=2)


def _hierarchy(path):
    g = zarr.open_group(path, mode="w")
    g.create_array("a", shape=(2,), dtype="i8")
    s = g.create_group("b")
    s.create_array("c", shape=(3, 4), dtype="f4")
    s.create_group("e").create_array("f", shape=(1,), dtype="u1")
    g.create_group("z")
    return g


@pytest.mark.parametrize("depth", [0, 1, 2, None])
def test_members_max_depth_and_tree_as_zarr_python(tmp_path, depth):
    ref = _hierarchy(str(tmp_path / "g.zarr"))
    g = zgpu.open_group(str(tmp_path / "g.zarr"))
    got = g.members(max_depth=depth)
    assert [n for n, _ in got] == sorted(n for n, _ in ref.members(max_depth=depth))
    kinds = {n: type(node).__name__ for n, node in got}
    assert all(kinds[n] == ("Group" if isinstance(node, zarr.Group) else "Array")
               for n, node in ref.members(max_depth=depth))
    assert repr(g.tree(level=depth)) == repr(ref.tree(level=depth))
    with pytest.raises(ValueError):
        g.members(max_depth=-1)


@pytest.mark.parametrize("fmt", [2, 3])
def test_open_consolidated(tmp_path, fmt):
    path = str(tmp_path / "g.zarr")
    g = zarr.open_group(path, mode="w", zarr_format=fmt)
    g.create_array("a", shape=(4,), dtype="u2")[...] = [1, 2, 3, 4]
    assert not zgpu.open_group(path).has_consolidated_metadata()
    with pytest.raises(zgpu.BadMetadataError, match="no consolidated metadata"):
        zgpu.open_consolidated(path)
    zarr.consolidate_metadata(path)
    c = zgpu.open_consolidated(path)
    assert c.has_consolidated_metadata() and list(c) == ["a"]
    np.testing.assert_array_equal(c["a"][...], [1, 2, 3, 4])
    # zgpu's own consolidation is found the same way
    path2 = str(tmp_path / "h.zarr")
    zgpu.create_group(path2, zarr_format=fmt).create_array("x", shape=(2,), dtype="i4")
    zgpu.consolidate_metadata(path2)
    assert zgpu.open_consolidated(path2).has_consolidated_metadata()
