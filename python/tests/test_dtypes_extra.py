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


# ---- v2 structured dtypes ---------------------------------------------------------------------------------

# zarr-python 3.1 reads flat records only (no nested records, no subarray fields): those are zgpu's alone below
RECORD = np.dtype([("a", "<i4"), ("b", ">f8"), ("y", ">i2"), ("s", "S3")])
RECORD_SUB = np.dtype([("a", "<i4"), ("b", "<f8", (2, 3)), ("c", [("x", "u1", (4,)), ("y", "<u2")])])


def _records(dt: np.dtype, n: int) -> np.ndarray:
    rng = np.random.default_rng(5)
    return np.frombuffer(rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes(), dtype=dt)


def test_struct_zgpu_writes_zarr_reads(tmp_path):
    p = str(tmp_path / "a")
    fill = (7, 2.5, -4, b"ab")
    z = zgpu.create(p, shape=(7,), chunks=(3,), dtype=RECORD, zarr_format=2, fill_value=fill, compressors="zstd")
    assert z.dtype == RECORD
    vals = _records(RECORD, 4)
    z[1:5] = vals
    z.close()
    meta = json.loads((tmp_path / "a" / ".zarray").read_text())
    assert meta["dtype"] == [["a", "<i4"], ["b", ">f8"], ["y", ">i2"], ["s", "|S3"]]
    r = zarr.open_array(p, mode="r")
    assert r.dtype == RECORD
    got = r[:]
    assert got[1:5].tobytes() == vals.tobytes()
    assert got[0].tobytes() == np.array(fill, RECORD).tobytes() == r.fill_value.tobytes()
    # the fill value is the base64 of the record's bytes, as zarr-python writes it
    ref = zarr.create_array(str(tmp_path / "ref"), shape=(7,), chunks=(3,), dtype=RECORD, zarr_format=2,
                            fill_value=np.array(fill, RECORD).tobytes())
    assert meta["fill_value"] == json.loads((tmp_path / "ref" / ".zarray").read_text())["fill_value"]
    del ref


def test_struct_zarr_writes_zgpu_reads(tmp_path):
    p = str(tmp_path / "a")
    fill = np.array((1, -1.0, 9, b"zz"), RECORD)
    r = zarr.create_array(p, shape=(5, 4), chunks=(2, 3), dtype=RECORD, zarr_format=2,
                          fill_value=fill.tobytes(), compressors=None)
    vals = _records(RECORD, 6).reshape(2, 3)
    r[1:3, 1:4] = vals
    z = zgpu.open_array(p)
    assert z.dtype == RECORD and z.zarr_format == 2
    assert z[:].tobytes() == r[:].tobytes()
    assert z.fill_value.tobytes() == fill.tobytes()
    assert z[2, 1]["y"] == r[2, 1]["y"]
    # zgpu writes into it; zarr-python reads the change
    w = zgpu.open_array(p, mode="r+")
    w[0, 0] = vals[0, 0]
    assert zarr.open_array(p, mode="r")[0, 0].tobytes() == vals[0, 0].tobytes()


def test_struct_subarray_fields(tmp_path):
    """Subarray fields (zarr-python 3.1 cannot read these; NumPy's bytes are the reference)."""
    p = tmp_path / "a"
    z = zgpu.create(str(p), shape=(5,), chunks=(2,), dtype=RECORD_SUB, zarr_format=2, fill_value=None,
                    compressors=None)
    vals = _records(RECORD_SUB, 5)
    z[:] = vals
    meta = json.loads((p / ".zarray").read_text())
    assert meta["dtype"] == [["a", "<i4"], ["b", "<f8", [2, 3]], ["c", [["x", "|u1", [4]], ["y", "<u2"]]]]
    assert (p / "0").read_bytes() == vals[:2].tobytes()
    back = zgpu.open_array(str(p))
    assert back.dtype == RECORD_SUB
    assert back[:].tobytes() == vals.tobytes()
    assert back[3]["b"].shape == (2, 3)


def test_struct_v3_is_refused(tmp_path):
    with pytest.raises(zgpu.UnsupportedError, match="Zarr v2 only"):
        zgpu.create(str(tmp_path / "a"), shape=(2,), dtype=RECORD, zarr_format=3)


def test_struct_device_read_refused_clearly(tmp_path):
    p = str(tmp_path / "a")
    z = zgpu.create(p, shape=(2,), dtype=RECORD, zarr_format=2)
    with pytest.raises(zgpu.UnsupportedError, match="'.*a'.*no record types"):
        z._handle_for(0)  # (where every device read starts, GPU or not)


HOSTILE_STRUCT = [
    ([["a", "<i4"], ["a", "<f8"]], zgpu.BadMetadataError, "appears twice"),
    ([["", "<i4"]], zgpu.BadMetadataError, "empty name"),
    ([["a", "|O"]], zgpu.UnsupportedError, "fixed-size"),
    ([["a", "<U0"]], zgpu.UnsupportedError, "fixed-size"),
    ([["a", "<f8", [1 << 20, 1 << 20]]], zgpu.UnsupportedError, "larger than"),
    ([["a", "<f8", [0]]], zgpu.BadMetadataError, "positive"),
    ([["a", "<f8", [-1]]], zgpu.BadMetadataError, "positive"),
    ([["a", "<f8", "3"]], zgpu.BadMetadataError, "shape"),
    ([["a"]], zgpu.BadMetadataError, "field 0"),
    ([], zgpu.BadMetadataError, "non-empty"),
    ([["a", "<i4"], 5], zgpu.BadMetadataError, "field 1"),
    ([["a\u0000b", "<i4"]], zgpu.BadMetadataError, "control"),
    ([["f%d" % i, "<i4"] for i in range(5000)], zgpu.UnsupportedError, "more than 4096"),
]


def _deep(n: int):
    t = "<i4"
    for _ in range(n):
        t = [["x", t]]
    return t


@pytest.mark.parametrize("descr,exc,words", HOSTILE_STRUCT + [(_deep(40), zgpu.UnsupportedError, "deeper")],
                         ids=lambda x: None)
def test_struct_hostile_metadata(tmp_path, descr, exc, words):
    p = tmp_path / "a"
    p.mkdir()
    (p / ".zarray").write_text(json.dumps({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": descr,
                                           "fill_value": None, "order": "C", "filters": None, "compressor": None}))
    with pytest.raises(exc, match=words) as info:
        zgpu.open_array(str(p))
    assert "'%s'" % p in str(info.value) or str(p) in str(info.value)


def test_struct_corrupt_chunk_named(tmp_path):
    p = tmp_path / "a"
    z = zgpu.create(str(p), shape=(4,), chunks=(2,), dtype=RECORD, zarr_format=2, compressors=None)
    z[:] = _records(RECORD, 4)
    (p / "1").write_bytes(b"\0" * 5)  # short
    with pytest.raises(zgpu.CorruptDataError, match="chunk '1'"):
        zgpu.open_array(str(p))[:]


# ---- variable-length strings and bytes --------------------------------------------------------------------

from zarr.core.dtype import VariableLengthBytes  # noqa: E402

STRS = np.array([["a", "", "h\u00e9llo"], ["\U0001f600" * 3, "x" * 300, "\u0000nul"]], dtype=object)
BYTS = np.array([[b"a", b"", b"\xff\x00"], [b"\x00" * 3, b"x" * 300, b"z"]], dtype=object)


def _as_list(a):
    return np.asarray(a, dtype=object).tolist()


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("kind", ["string", "bytes"])
def test_vlen_zgpu_writes_zarr_reads(tmp_path, fmt, kind):
    p = str(tmp_path / "a")
    strings = kind == "string"
    fill = "f\u00fcll" if strings else b"\x01fill"
    z = zgpu.create(p, shape=(5, 4), chunks=(2, 3), dtype=str if strings else "variable_length_bytes",
                    zarr_format=fmt, fill_value=fill)
    vals = STRS if strings else BYTS
    z[1:3, 1:4] = vals
    z[4, ::3] = ["s0", "s1"] if strings else [b"s0", b"s1"]  # a strided write: read, merge, rewrite
    z.close()
    r = zarr.open_array(p, mode="r")
    got = r[:]
    assert got.dtype == zgpu.open_array(p).dtype
    want = np.full((5, 4), fill, dtype=object)
    want[1:3, 1:4] = vals
    want[4, 0], want[4, 3] = (("s0", "s1") if strings else (b"s0", b"s1"))
    assert _as_list(got) == _as_list(want)
    assert r.fill_value == fill
    back = zgpu.open_array(p)
    assert _as_list(back[:]) == _as_list(want)
    assert back.fill_value == fill
    assert _as_list(back[1:3, ::-2]) == _as_list(want[1:3, ::-2])
    assert back[2, 2] == want[2, 2]


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("kind", ["string", "bytes"])
def test_vlen_zarr_writes_zgpu_reads(tmp_path, fmt, kind):
    p = str(tmp_path / "a")
    strings = kind == "string"
    r = zarr.create_array(p, shape=(7,), chunks=(3,), dtype=str if strings else VariableLengthBytes(),
                          zarr_format=fmt, compressors=zarr.codecs.ZstdCodec() if fmt == 3 else None)
    vals = STRS.reshape(-1) if strings else BYTS.reshape(-1)
    r[1:7] = vals
    z = zgpu.open_array(p)
    want = r[:]
    assert z.dtype == want.dtype
    assert _as_list(z[:]) == _as_list(want)
    assert z.fill_value == r.fill_value
    w = zgpu.open_array(p, mode="r+")
    w[0] = "zero" if strings else b"zero"
    assert zarr.open_array(p, mode="r")[0] == ("zero" if strings else b"zero")


def test_vlen_refusals_are_clear(tmp_path):
    p = str(tmp_path / "a")
    z = zgpu.create(p, shape=(4,), chunks=(2,), dtype=str)
    with pytest.raises(zgpu.UnsupportedError, match="cannot be read into device memory: variable-length elements cannot live in a strided"):
        z._handle_for(0)  # every device read starts here
    with pytest.raises(zgpu.UnsupportedError, match="orthogonal and coordinate"):
        z[[0, 2]]
    with pytest.raises(zgpu.UnsupportedError, match="sharded"):
        zgpu.create(str(tmp_path / "b"), shape=(4,), chunks=(2,), shards=(4,), dtype=str)
    # the fixed-size C entry point refuses the array by name
    import ctypes
    from zgpu import _capi
    buf = ctypes.create_string_buffer(64)
    st = _capi.lib.zgpu_array_read(z._h(), _capi.u64_array([0]), _capi.u64_array([4]), buf, None)
    assert st == _capi.ERR_UNSUPPORTED and "variable-length" in _capi.last_error() and "'%s'" % p in _capi.last_error()


def _vlen_chunk(items):
    out = len(items).to_bytes(4, "little")
    for b in items:
        out += len(b).to_bytes(4, "little") + b
    return out


VLEN_HOSTILE = [
    ("truncated-count", b"\x03\x00", "too short"),
    ("count-lies", _vlen_chunk([b"a", b"b"]), "holds 2 items, its shape holds 3"),
    ("length-lies", _vlen_chunk([b"a", b"b", b"c"])[:-1] + b"", "says it has 1 bytes"),
    ("huge-length", b"\x03\x00\x00\x00" + b"\xff\xff\xff\xff" + b"abc", "says it has 4294967295 bytes"),
    ("missing-length", _vlen_chunk([b"a", b"b"])[:4].replace(b"\x02", b"\x03") + _vlen_chunk([b"a", b"b"])[4:],
     "before the length of item 2"),
    ("trailing", _vlen_chunk([b"a", b"b", b"c"]) + b"junk", "follow the last"),
    ("bad-utf8", _vlen_chunk([b"a", b"\xc3\x28", b"c"]), "item 1 is not valid UTF-8"),
    ("surrogate", _vlen_chunk([b"\xed\xa0\x80", b"", b""]), "item 0 is not valid UTF-8"),
    ("overlong", _vlen_chunk([b"", b"\xc0\xaf", b""]), "item 1 is not valid UTF-8"),
]


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("name,chunk,words", VLEN_HOSTILE, ids=[c[0] for c in VLEN_HOSTILE])
def test_vlen_hostile_chunks(tmp_path, fmt, name, chunk, words):
    p = tmp_path / "a"
    z = zgpu.create(str(p), shape=(6,), chunks=(3,), dtype=str, zarr_format=fmt, compressors=None)
    z[:] = ["a", "b", "c", "d", "e", "f"]
    key = p / ("c/1" if fmt == 3 else "1")
    key.write_bytes(chunk)
    a = zgpu.open_array(str(p))
    assert _as_list(a[:3]) == ["a", "b", "c"]
    with pytest.raises(zgpu.CorruptDataError) as info:
        a[:]
    msg = str(info.value)
    assert words in msg and "vlen-utf8" in msg and ("'c/1'" in msg or "'1'" in msg) and str(p) in msg, msg


def test_vlen_bytes_take_any_bytes(tmp_path):
    p = tmp_path / "a"
    z = zgpu.create(str(p), shape=(3,), chunks=(3,), dtype="variable_length_bytes", compressors=None)
    z[:] = [b"\xc3\x28", b"", b"\xff"]
    assert _as_list(zgpu.open_array(str(p))[:]) == [b"\xc3\x28", b"", b"\xff"]
    with pytest.raises(TypeError, match="takes bytes"):
        z[0] = "text"
