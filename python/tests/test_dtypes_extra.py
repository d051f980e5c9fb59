"""Data types beyond plain numbers, against zarr-python on the same data in both directions: numpy.datetime64 /
timedelta64, v2 structured records, and variable-length strings and bytes."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import zgpu

zarr = pytest.importorskip("zarr")

warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
warnings.filterwarnings("ignore", category=UserWarning, module="zarr")


def _same(a, b):
    """Equal values, NaT equal to NaT, the same dtype."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape
    if a.dtype.kind in "Mm":
        assert (a.view("i8") == b.view("i8")).all(), (a, b)
    else:
        assert (a == b).all(), (a, b)


# ---- numpy.datetime64 / numpy.timedelta64 -------------------------------------------------------------------

# (zarr-python 3.1 cannot read a generic-unit "M8" with an integer fill value: that one is zgpu's alone, below)
TIME_TYPES = ["M8[ns]", "M8[10ms]", "m8[s]", "M8[D]", ">m8[3h]", "m8[us]"]


def _time_values(dt: np.dtype, n: int) -> np.ndarray:
    v = np.arange(n, dtype="i8") * 1000 - 7
    v[1] = np.iinfo("i8").min  # NaT
    return v.view(np.dtype(dt).newbyteorder("="))


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dt", TIME_TYPES)
def test_time_zgpu_writes_zarr_reads(tmp_path, fmt, dt):
    p = str(tmp_path / "a")
    z = zgpu.create(p, shape=(9,), chunks=(4,), dtype=dt, zarr_format=fmt, fill_value="NaT")
    assert z.dtype == np.dtype(dt).newbyteorder("=")
    vals = _time_values(dt, 6)
    z[2:8] = vals
    z.close()
    r = zarr.open_array(p, mode="r")
    assert r.dtype.newbyteorder("=") == np.dtype(dt).newbyteorder("=")
    got = r[:].astype(r.dtype.newbyteorder("="))
    want = np.concatenate([np.array(["NaT"] * 2, z.dtype), vals, np.array(["NaT"], z.dtype)])
    _same(got, want)
    assert np.isnat(r.fill_value)
    back = zgpu.open_array(p)
    _same(back[:], want)
    assert np.isnat(back.fill_value) and back.fill_value.dtype == back.dtype


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dt", TIME_TYPES)
def test_time_zarr_writes_zgpu_reads(tmp_path, fmt, dt):
    p = str(tmp_path / "a")
    fill = np.array(5, "i8").view(np.dtype(dt).newbyteorder("="))[()]
    r = zarr.create_array(p, shape=(9,), chunks=(4,), dtype=dt, zarr_format=fmt, fill_value=fill,
                          compressors=None)
    vals = _time_values(dt, 6)
    r[1:7] = vals
    z = zgpu.open_array(p)
    assert z.dtype == np.dtype(dt).newbyteorder("=")
    _same(z[:], r[:].astype(z.dtype))
    assert z.fill_value.view("i8") == 5
    meta = z.metadata
    if fmt == 3:
        unit, scale = np.datetime_data(np.dtype(dt))
        assert meta["data_type"]["configuration"] == {"unit": unit, "scale_factor": scale}
    else:
        assert meta["dtype"] == np.dtype(dt).str
    # a write through zgpu, read by zarr-python
    z2 = zgpu.open_array(p, mode="r+")
    z2[0] = vals[2]
    _same(zarr.open_array(p, mode="r")[:1].astype(z.dtype), vals[2:3])


@pytest.mark.parametrize("fmt", [2, 3])
def test_time_generic_unit(tmp_path, fmt):
    p = str(tmp_path / "a")
    z = zgpu.create(p, shape=(3,), chunks=(2,), dtype="m8", zarr_format=fmt, fill_value="NaT")
    z[1:] = np.array([4, 5], "m8")
    back = zgpu.open_array(p)
    assert back.dtype == np.dtype("m8")
    _same(back[:], np.array(["NaT", 4, 5], "m8"))
    assert back.metadata["dtype" if fmt == 2 else "data_type"] == (
        "<m8" if fmt == 2 else {"name": "numpy.timedelta64", "configuration": {"unit": "generic", "scale_factor": 1}})


def test_time_microsecond_alias(tmp_path):
    """zarr-python may write the unit "μs"; NumPy calls it "us"."""
    p = tmp_path / "a"
    p.mkdir()
    doc = {"zarr_format": 3, "node_type": "array", "shape": [2], "fill_value": "NaT",
           "data_type": {"name": "numpy.timedelta64", "configuration": {"unit": "\u03bcs", "scale_factor": 2}},
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}
    (p / "zarr.json").write_text(json.dumps(doc))
    z = zgpu.open_array(str(p))
    assert z.dtype == np.dtype("m8[2us]")
    assert np.isnat(z[:]).all()


def test_time_bad_metadata(tmp_path):
    p = tmp_path / "a"
    p.mkdir()
    doc = {"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<M8[0s]", "fill_value": None,
           "order": "C", "filters": None, "compressor": None}
    (p / ".zarray").write_text(json.dumps(doc))
    with pytest.raises(zgpu.BadMetadataError, match="M8"):
        zgpu.open_array(str(p))


def test_time_device_read_is_int64_like(tmp_path):
    """The device path carries datetimes as int64: no refusal before the GPU is looked for."""
    if not zgpu.gpu_available():
        pytest.skip("no GPU")
    p = str(tmp_path / "a")
    z = zgpu.create(p, shape=(4,), chunks=(2,), dtype="M8[s]", fill_value="NaT")
    z[:] = np.arange(4).astype("M8[s]")
    d = z.read(device="cuda")
    assert d.dtype == np.dtype("M8[s]")
