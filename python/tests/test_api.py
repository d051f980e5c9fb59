"""The Python API: create/open modes, properties, attributes, groups, errors, threads."""
from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest

import zgpu
from zg_helpers import assert_same, make_data


def test_create_properties(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(10, 20), dtype="<u2", chunks=(3, 7), fill_value=9,
                    attributes={"a": 1}, dimension_names=["t", None])
    assert a.shape == (10, 20) and a.ndim == 2 and a.size == 200 and a.nbytes == 400 and len(a) == 10
    assert a.dtype == np.dtype("uint16") and a.chunks == (3, 7) and a.shards is None
    assert a.fill_value == 9 and isinstance(a.fill_value, np.uint16)
    assert a.zarr_format == 3 and a.path == str(tmp_path / "a")
    assert a.codecs[0]["name"] == "bytes" and a.codecs[-1]["name"] == "zstd"
    md = a.metadata
    assert md["node_type"] == "array" and md["shape"] == [10, 20] and md["dimension_names"] == ["t", None]
    assert dict(a.attrs) == {"a": 1}
    assert_same(a[...], np.full((10, 20), 9, "uint16"))
    assert a.nchunks_initialized == 0
    a[0, 0] = 1
    assert a.nchunks_initialized == 1 and a.nbytes_stored() > 0
    assert "zgpu.Array" in repr(a)


def test_create_guesses_chunks_and_normalises_them(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(4096, 4096), dtype="f8")
    assert np.prod(a.chunks) * 8 <= 1 << 20
    b = zgpu.create(tmp_path / "b", shape=(10, 20), dtype="i1", chunks=4)
    assert b.chunks == (4, 4)
    c = zgpu.create(tmp_path / "c", shape=(10, 20), dtype="i1", chunks=(-1, None))
    assert c.chunks == (10, 20)
    d = zgpu.create(tmp_path / "d", shape=(0, 5), dtype="i1")
    assert d.shape == (0, 5) and d[...].shape == (0, 5)


@pytest.mark.parametrize("bad, exc", [
    (dict(shape=(4,), dtype="i4", chunks=(2, 2)), ValueError),
    (dict(shape=(4,), dtype="i4", chunks=(0,)), ValueError),
    (dict(shape=(4,), dtype="U5"), zgpu.UnsupportedError),
    (dict(shape=(4,), dtype="i4", compressors="nope"), ValueError),
    (dict(shape=(4,), dtype="i4", zarr_format=2, shards=(4,)), ValueError),
    (dict(shape=(4,), dtype="i4", zarr_format=2, compressors=["zstd", "gzip"]), ValueError),
    (dict(shape=(4,), dtype="i4", shards=(3,), chunks=(2,)), ValueError),
    (dict(shape=(4,), dtype="i4", zarr_format=4), ValueError),
    (dict(shape=(4,), dtype="i4", dimension_names=["a", "b"]), ValueError),
    (dict(shape=(4,), dtype="u1", fill_value=300), OverflowError),
    (dict(shape=(4,), dtype="i4", compressors={"id": "zstd"}), ValueError),
])
def test_create_rejects_bad_arguments(tmp_path, bad, exc):
    with pytest.raises(exc):
        zgpu.create(tmp_path / "a", **bad)


def test_create_existing_needs_overwrite(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(4,), dtype="i4")
    a[...] = 5
    with pytest.raises(zgpu.ExistsError) as ei:
        zgpu.create(tmp_path / "a", shape=(4,), dtype="i4")
    assert isinstance(ei.value, FileExistsError) and ei.value.status_name == "ZGPU_ERR_EXISTS"
    assert str(tmp_path / "a") in str(ei.value) or "exist" in str(ei.value).lower()
    b = zgpu.create(tmp_path / "a", shape=(4,), dtype="i4", overwrite=True, fill_value=1)
    assert_same(b[...], np.ones(4, "i4"))  # old chunks were deleted


def test_compressor_forms(tmp_path):
    numcodecs = pytest.importorskip("numcodecs")
    zc = pytest.importorskip("zarr.codecs")
    data = make_data((30,), "int32")
    for i, comp in enumerate(["gzip", {"name": "gzip", "configuration": {"level": 1}}, zc.GzipCodec(level=2),
                              ["blosc", "crc32c"], None]):
        a = zgpu.create(tmp_path / ("v3_%d" % i), shape=(30,), dtype="i4", chunks=(7,), compressors=comp)
        a[...] = data
        assert_same(a[...], data)
    for i, comp in enumerate(["zlib", {"id": "zlib", "level": 1}, numcodecs.Zlib(level=2), None]):
        a = zgpu.create(tmp_path / ("v2_%d" % i), shape=(30,), dtype="i4", chunks=(7,), compressors=comp,
                        zarr_format=2)
        a[...] = data
        assert_same(a[...], data)
    md = zgpu.open_array(tmp_path / "v2_1").metadata
    assert md["compressor"] == {"id": "zlib", "level": 1}


def test_open_modes(tmp_path):
    p = tmp_path / "a"
    with pytest.raises(zgpu.NotFoundError) as ei:
        zgpu.open(p)
    assert isinstance(ei.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError):
        zgpu.open_array(p, mode="r+")
    a = zgpu.open_array(p, mode="a", shape=(5,), dtype="f4")
    a[...] = 1.0
    r = zgpu.open(p, mode="r")
    assert isinstance(r, zgpu.Array) and r.read_only
    with pytest.raises(zgpu.ReadOnlyError):
        r[0] = 2.0
    with pytest.raises(PermissionError):
        r.attrs["x"] = 1
    with pytest.raises(zgpu.ReadOnlyError):
        r.resize((3,))
    rw = zgpu.open(p, mode="r+")
    rw[0] = 2.0
    assert r[0] == 1.0 or r[0] == 2.0  # another handle: data is read from storage
    assert zgpu.open_array(p)[0] == 2.0
    w = zgpu.open(p, mode="w", shape=(2,), dtype="i2")
    assert w.shape == (2,) and w.dtype == np.dtype("i2")
    with pytest.raises(zgpu.ExistsError):
        zgpu.open(p, mode="w-", shape=(2,), dtype="i2")
    with pytest.raises(TypeError):
        zgpu.open_array(p, mode="w")
    with pytest.raises(ValueError):
        zgpu.open(p, mode="x")
    g = zgpu.open(tmp_path / "g", mode="a")
    assert isinstance(g, zgpu.Group)
    assert isinstance(zgpu.open(tmp_path / "g"), zgpu.Group)
    with pytest.raises(zgpu.NotFoundError):
        zgpu.open_array(tmp_path / "g")
    with pytest.raises(zgpu.NotFoundError):
        zgpu.open_group(p)


def test_attrs_mapping(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(2,), dtype="i1")
    a.attrs["x"] = 1
    a.attrs["arr"] = np.arange(3)
    a.attrs["f"] = np.float32(0.5)
    a.attrs["nan"] = float("nan")
    a.attrs.update({"y": "s", "z": None})
    assert "x" in a.attrs and len(a.attrs) == 6
    assert a.attrs["arr"] == [0, 1, 2] and a.attrs["f"] == 0.5 and np.isnan(a.attrs["nan"])
    del a.attrs["x"]
    assert "x" not in a.attrs
    with pytest.raises(KeyError):
        a.attrs["x"]
    b = zgpu.open_array(tmp_path / "a")
    assert b.attrs.asdict()["y"] == "s" and b.attrs["z"] is None
    a.attrs.put({"only": True})
    assert zgpu.open_array(tmp_path / "a").attrs.asdict() == {"only": True}
    with pytest.raises(TypeError):
        a.attrs["bad"] = object()


def test_v2_attrs_go_to_zattrs(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(2,), dtype="i1", zarr_format=2, attributes={"k": "v"})
    a.attrs["k2"] = 2
    with open(tmp_path / "a" / ".zattrs") as f:
        assert json.load(f) == {"k": "v", "k2": 2}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_groups(tmp_path, zarr_format):
    g = zgpu.open_group(tmp_path / "g", mode="w", zarr_format=zarr_format, attributes={"root": 1})
    assert g.zarr_format == zarr_format and g.attrs["root"] == 1
    sub = g.create_group("sub", attributes={"s": 2})
    arr = g.create_array("arr", shape=(4, 4), dtype="f4", chunks=(2, 2), fill_value=1.0)
    assert arr.zarr_format == zarr_format
    sub.create_array("inner", shape=(3,), dtype="i8")[...] = [1, 2, 3]
    assert list(g) == ["arr", "sub"] and len(g) == 2 and g.keys() == ["arr", "sub"]
    assert "arr" in g and "sub/inner" in g and "missing" not in g and 3 not in g
    members = dict(g.members())
    assert isinstance(members["arr"], zgpu.Array) and isinstance(members["sub"], zgpu.Group)
    assert [n for n, _ in g.arrays()] == ["arr"] and [n for n, _ in g.groups()] == ["sub"]
    assert_same(g["sub/inner"][...], np.array([1, 2, 3], "i8"))
    assert g["sub"].attrs["s"] == 2
    with pytest.raises(KeyError):
        g["missing"]
    with pytest.raises(zgpu.MemberNotFoundError):
        g["missing"]
    assert g.get("missing") is None
    with pytest.raises(ValueError):
        g["../escape"]
    assert g.require_group("sub").attrs["s"] == 2
    assert isinstance(g.require_group("new"), zgpu.Group)
    with pytest.raises(zgpu.ExistsError):
        g.create_group("sub")
    g.attrs["root"] = 5
    ro = zgpu.open_group(tmp_path / "g")
    assert ro.attrs["root"] == 5
    with pytest.raises(zgpu.ReadOnlyError):
        ro.create_group("x")
    with pytest.raises(zgpu.ReadOnlyError):
        ro["arr"][0, 0] = 3.0


def test_bad_metadata_and_corrupt_data_errors(tmp_path):
    p = tmp_path / "a"
    a = zgpu.create(p, shape=(8,), dtype="i4", chunks=(4,), compressors="gzip")
    a[...] = np.arange(8, dtype="i4")
    with open(p / "c" / "0", "r+b") as f:
        f.seek(12)
        f.write(b"\xff\xff\xff\xff")
    b = zgpu.open_array(p)
    with pytest.raises(zgpu.CorruptDataError) as ei:
        b[0:4]
    assert "gzip" in str(ei.value) and "c/0" in str(ei.value)
    assert_same(b[4:8], np.arange(4, 8, dtype="i4"))  # the other chunk is fine
    with open(p / "zarr.json", "w") as f:
        f.write('{"zarr_format": 3, "node_type": "array", "shape": [8]')
    with pytest.raises(zgpu.BadMetadataError) as ei:
        zgpu.open_array(p)
    assert isinstance(ei.value, ValueError) and ei.value.status_name == "ZGPU_ERR_BAD_METADATA"


def test_unsupported_codec_error(tmp_path):
    p = tmp_path / "a"
    os.makedirs(p)
    with open(p / "zarr.json", "w") as f:
        json.dump({"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "int32",
                   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
                   "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
                   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                              {"name": "no_such_codec"}]}, f)
    with pytest.raises(zgpu.UnsupportedError) as ei:
        zgpu.open_array(p)
    assert "no_such_codec" in str(ei.value) and isinstance(ei.value, NotImplementedError)


def test_out_argument_checks(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(6, 4), dtype="f8", chunks=(2, 2))
    a[...] = np.arange(24.0).reshape(6, 4)
    with pytest.raises(ValueError):
        a.read(np.s_[0:2], out=np.empty((3, 4)))
    with pytest.raises(TypeError):
        a.read(np.s_[0:2], out=np.empty((2, 4), "f4"))
    ro = np.empty((2, 4))
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        a.read(np.s_[0:2], out=ro)
    with pytest.raises(TypeError):
        a.read(out=[1, 2])
    fortran = np.asfortranarray(np.zeros((6, 4)))
    a.read(out=fortran)
    assert_same(fortran, np.arange(24.0).reshape(6, 4))
    with pytest.raises(ValueError):
        a.read(device="tpu")


def test_write_forms_and_casting(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(4, 3), dtype="i4", chunks=(2, 2))
    a[...] = [[1, 2, 3]] * 4                       # a list, broadcast rows
    assert_same(a[...], np.array([[1, 2, 3]] * 4, "i4"))
    a[:, 1] = np.array([1.9, 2.9, 3.9, 4.9])        # float -> int casts like NumPy
    assert_same(a[:, 1], np.array([1, 2, 3, 4], "i4"))
    a[1:3] = np.arange(6, dtype="i4").reshape(3, 2).T  # non-contiguous source
    assert_same(a[1:3], np.arange(6, dtype="i4").reshape(3, 2).T)
    a[::-1, ::-1] = np.arange(12, dtype="i4").reshape(4, 3)
    assert_same(a[...], np.arange(12, dtype="i4").reshape(4, 3)[::-1, ::-1])
    a[0] = np.broadcast_to(np.int32(7), (3,))      # zero-stride source
    assert_same(a[0], np.full(3, 7, "i4"))


def test_array_dunder_array_and_resize(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(3, 3), dtype="u1", chunks=(2, 2))
    a[...] = np.eye(3, dtype="u1")
    assert_same(np.asarray(a), np.eye(3, dtype="u1"))
    a.resize(5, 2)
    assert a.shape == (5, 2)
    assert_same(a[...], np.array([[1, 0], [0, 1], [0, 0], [0, 0], [0, 0]], "u1"))
    with pytest.raises(ValueError):
        a.resize((5,))


def test_raw_dtype(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(5,), dtype="V3", chunks=(2,), fill_value=b"\x01\x02\x03")
    assert a.dtype == np.dtype("V3") and a.metadata["data_type"] == "r24"
    assert a[4].tobytes() == b"\x01\x02\x03"
    vals = np.frombuffer(bytes(range(15)), dtype="V3")
    a[...] = vals
    assert a[...].tobytes() == bytes(range(15))


def test_threads_share_an_array(tmp_path):
    zgpu.set_threads(2)
    try:
        data = make_data((64, 64), "float32", seed=2)
        a = zgpu.create(tmp_path / "a", shape=(64, 64), dtype="f4", chunks=(8, 8), compressors="gzip")
        a[...] = data
        errors = []

        def work(i):
            try:
                for j in range(10):
                    r = (i * 7 + j) % 56
                    assert_same(a[r:r + 8, :], data[r:r + 8, :])
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
    finally:
        zgpu.set_threads(0)


def test_config_and_stats(tmp_path):
    with pytest.raises(ValueError):
        zgpu.config.set(gds="maybe")
    with pytest.raises(ValueError):
        zgpu.set_threads(-1)
    a = zgpu.create(tmp_path / "a", shape=(16,), dtype="i2", chunks=(4,))
    a[...] = np.arange(16, dtype="i2")
    a[...]
    st = a.last_read_stats
    assert set(st) >= {"total_s", "chunks", "decoded_bytes"}
    assert st["chunks"] == 4
    assert isinstance(zgpu.gpu_available(), bool)
    assert zgpu.library_version().count(".") == 2


def test_device_read_without_a_device_fails(tmp_path):
    if zgpu.gpu_available():
        pytest.skip("a GPU is available")
    a = zgpu.create(tmp_path / "a", shape=(4,), dtype="i2")
    with pytest.raises((zgpu.NoGPUError, zgpu.CudaError)):
        a.read(device="cuda")
