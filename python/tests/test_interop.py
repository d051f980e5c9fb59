"""zarr-python 3 writes, zgpu reads every element; zgpu writes, zarr-python reads every element."""
from __future__ import annotations

import numpy as np
import pytest

import zgpu
from zg_helpers import DTYPES, assert_same, make_data

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")
from zarr import codecs as zc  # noqa: E402

SHAPE = (23, 17)   # not a multiple of the chunks: edge chunks are partial
CHUNKS = (8, 5)


def _v3_compressors():
    return {
        "none": None,
        "zstd": zc.ZstdCodec(level=3),
        "zstd-checksum": zc.ZstdCodec(level=1, checksum=True),
        "gzip": zc.GzipCodec(level=6),
        "blosc-lz4-shuffle": zc.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"),
        "blosc-zstd-bitshuffle": zc.BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle"),
        "blosc-noshuffle": zc.BloscCodec(cname="blosclz", clevel=5, shuffle="noshuffle"),
        "crc32c": zc.Crc32cCodec(),
    }


def _v2_compressors():
    return {
        "none": None,
        "zstd": numcodecs.Zstd(level=2),
        "zlib": numcodecs.Zlib(level=4),
        "gzip": numcodecs.GZip(level=5),
        "bz2": numcodecs.BZ2(level=3),
        "lz4": numcodecs.LZ4(),
        "blosc": numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.SHUFFLE),
        "blosc-bitshuffle": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.BITSHUFFLE),
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_read_what_zarr_wrote_every_dtype(tmp_path, dtype, zarr_format):
    data = make_data(SHAPE, dtype)
    z = zarr.create_array(tmp_path / "a", shape=SHAPE, dtype=dtype, chunks=CHUNKS, zarr_format=zarr_format)
    z[...] = data
    a = zgpu.open_array(tmp_path / "a")
    assert a.shape == SHAPE and a.chunks == CHUNKS and a.dtype == np.dtype(dtype)
    assert a.zarr_format == zarr_format
    assert_same(a[...], data)
    assert_same(a[3:19, 2:11], data[3:19, 2:11])


@pytest.mark.parametrize("name", list(_v3_compressors()))
def test_read_what_zarr_wrote_v3_codecs(tmp_path, name):
    comp = _v3_compressors()[name]
    data = make_data(SHAPE, "float32", seed=3)
    z = zarr.create_array(tmp_path / "a", shape=SHAPE, dtype="float32", chunks=CHUNKS,
                          compressors=comp if comp is not None else None)
    z[...] = data
    assert_same(zgpu.open_array(tmp_path / "a")[...], data)


@pytest.mark.parametrize("name", list(_v2_compressors()))
def test_read_what_zarr_wrote_v2_codecs(tmp_path, name):
    comp = _v2_compressors()[name]
    data = make_data(SHAPE, "int32", seed=4)
    z = zarr.create_array(tmp_path / "a", shape=SHAPE, dtype="int32", chunks=CHUNKS, zarr_format=2,
                          compressors=comp)
    z[...] = data
    assert_same(zgpu.open_array(tmp_path / "a")[...], data)


@pytest.mark.parametrize("order", ["C", "F"])
def test_v2_order(tmp_path, order):
    data = make_data(SHAPE, "uint16", seed=5)
    z = zarr.create_array(tmp_path / "a", shape=SHAPE, dtype="uint16", chunks=CHUNKS, zarr_format=2,
                          order=order)
    z[...] = data
    assert_same(zgpu.open_array(tmp_path / "a")[...], data)
    b = zgpu.create(tmp_path / "b", shape=SHAPE, dtype="uint16", chunks=CHUNKS, zarr_format=2, order=order)
    b[...] = data
    zb = zarr.open_array(tmp_path / "b", mode="r")
    assert zb.metadata.order == order
    assert_same(zb[...], data)


def test_v2_filters_delta(tmp_path):
    data = np.cumsum(make_data(SHAPE, "int16", seed=6) % 7, axis=1).astype("int16")
    z = zarr.create_array(tmp_path / "a", shape=SHAPE, dtype="int16", chunks=CHUNKS, zarr_format=2,
                          filters=[numcodecs.Delta(dtype="<i2")], compressors=numcodecs.Zlib())
    z[...] = data
    assert_same(zgpu.open_array(tmp_path / "a")[...], data)


def test_v3_big_endian_and_transpose(tmp_path):
    data = make_data(SHAPE, "float64", seed=7)
    z = zarr.create_array(tmp_path / "a", shape=SHAPE, dtype="float64", chunks=CHUNKS,
                          serializer=zc.BytesCodec(endian="big"), filters=[zc.TransposeCodec(order=(1, 0))])
    z[...] = data
    a = zgpu.open_array(tmp_path / "a")
    assert a.dtype == np.dtype("float64")  # native order in memory whatever is stored
    assert_same(a[...], data)


@pytest.mark.parametrize("dtype", ["int32", "float32", "complex128", "uint8"])
@pytest.mark.parametrize("index_location", ["end", "start"])
def test_read_what_zarr_wrote_sharded(tmp_path, dtype, index_location):
    shape = (40, 30)
    data = make_data(shape, dtype, seed=8)
    z = zarr.create_array(tmp_path / "a", shape=shape, dtype=dtype, chunks=(5, 6), shards=(20, 12),
                          compressors=zc.ZstdCodec(level=1))
    if index_location == "start":  # rewrite through the codec API: zarr's default is "end"
        z = zarr.create_array(tmp_path / "a", shape=shape, dtype=dtype, overwrite=True,
                              chunks=(20, 12), serializer=zc.ShardingCodec(
                                  chunk_shape=(5, 6), codecs=[zc.BytesCodec(), zc.ZstdCodec(level=1)],
                                  index_location="start"), compressors=None)
    z[...] = data
    a = zgpu.open_array(tmp_path / "a")
    assert a.chunks == (5, 6) and a.shards == (20, 12)
    assert_same(a[...], data)
    assert_same(a[7:33, 4:29:3], data[7:33, 4:29:3])


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("fill", [0, 7.5, float("nan"), float("-inf")])
def test_missing_chunks_read_as_fill_value(tmp_path, zarr_format, fill):
    z = zarr.create_array(tmp_path / "a", shape=SHAPE, dtype="float32", chunks=CHUNKS, fill_value=fill,
                          zarr_format=zarr_format)
    z[0:3, 0:3] = 1.0
    exp = np.full(SHAPE, fill, dtype="float32")
    exp[0:3, 0:3] = 1.0
    a = zgpu.open_array(tmp_path / "a")
    assert_same(a[...], exp)
    assert_same(np.asarray(a.fill_value), np.asarray(np.float32(fill)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_reads_what_we_wrote_every_dtype(tmp_path, dtype, zarr_format):
    data = make_data(SHAPE, dtype, seed=9)
    a = zgpu.create(tmp_path / "a", shape=SHAPE, dtype=dtype, chunks=CHUNKS, zarr_format=zarr_format)
    a[...] = data
    a[2:5, 3:4] = data[2:5, 3:4]  # partial chunk rewrite
    z = zarr.open_array(tmp_path / "a", mode="r")
    assert z.shape == SHAPE and z.chunks == CHUNKS and z.dtype == np.dtype(dtype)
    assert_same(z[...], data)


@pytest.mark.parametrize("compressors", [None, "zstd", "gzip", "blosc", {"name": "zstd", "configuration":
                                                                        {"level": 5, "checksum": True}},
                                         ["crc32c"]], ids=repr)
@pytest.mark.parametrize("shards", [None, (16, 10)], ids=repr)
def test_zarr_reads_what_we_wrote_v3_codecs(tmp_path, compressors, shards):
    data = make_data(SHAPE, "int64", seed=10)
    a = zgpu.create(tmp_path / "a", shape=SHAPE, dtype="int64", chunks=CHUNKS if shards is None else (8, 5),
                    shards=shards, compressors=compressors)
    a[...] = data
    z = zarr.open_array(tmp_path / "a", mode="r")
    assert_same(z[...], data)
    if shards is not None:
        assert z.shards == shards and z.chunks == (8, 5)


@pytest.mark.parametrize("compressors", [None, "zstd", "zlib", "gzip", "bz2", "lz4", "blosc",
                                         {"id": "zstd", "level": 3}], ids=repr)
def test_zarr_reads_what_we_wrote_v2_codecs(tmp_path, compressors):
    data = make_data(SHAPE, "float64", seed=11)
    a = zgpu.create(tmp_path / "a", shape=SHAPE, dtype="float64", chunks=CHUNKS, zarr_format=2,
                    compressors=compressors)
    a[...] = data
    assert_same(zarr.open_array(tmp_path / "a", mode="r")[...], data)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_fill_values_written_like_zarr(tmp_path, zarr_format):
    for i, (dtype, fill) in enumerate([("float32", float("nan")), ("float64", float("inf")), ("int16", -5),
                                       ("bool", True), ("complex64", 1 + 2j), ("uint64", 2**64 - 1)]):
        p = tmp_path / ("a%d" % i)
        a = zgpu.create(p, shape=(4,), dtype=dtype, chunks=(2,), fill_value=fill, zarr_format=zarr_format)
        a[0] = np.zeros((), dtype)  # one chunk written, one missing
        z = zarr.open_array(p, mode="r")
        exp = np.full(4, fill, dtype=dtype)
        exp[0] = 0
        assert_same(z[...], exp)
        assert_same(np.asarray(a.fill_value), np.asarray(np.array(fill, dtype=dtype)))


def test_default_compressor_is_zstd_level0_like_zarr(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(10,), dtype="i4")
    z = zarr.create_array(tmp_path / "z", shape=(10,), dtype="i4")
    assert a.metadata["codecs"] == list(z.metadata.to_dict()["codecs"])
    assert a.metadata["codecs"][-1] == {"name": "zstd", "configuration": {"level": 0, "checksum": False}}


def test_attributes_and_dimension_names_interop(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(3, 4), dtype="u1", attributes={"units": "m", "n": [1, 2]},
                    dimension_names=["y", "x"])
    z = zarr.open_array(tmp_path / "a", mode="r")
    assert dict(z.attrs) == {"units": "m", "n": [1, 2]}
    assert z.metadata.dimension_names == ("y", "x")
    z2 = zarr.open_array(tmp_path / "a", mode="r+")
    z2.attrs["more"] = {"k": 1.5}
    assert zgpu.open_array(tmp_path / "a").attrs["more"] == {"k": 1.5}


def test_resize_visible_to_zarr(tmp_path):
    data = make_data((20, 10), "int32", seed=12)
    a = zgpu.create(tmp_path / "a", shape=(20, 10), dtype="int32", chunks=(4, 4))
    a[...] = data
    a.resize((9, 12))
    assert a.shape == (9, 12)
    exp = np.zeros((9, 12), "int32")
    exp[:9, :10] = data[:9, :10]
    z = zarr.open_array(tmp_path / "a", mode="r")
    assert_same(z[...], exp)
    assert_same(a[...], exp)


def test_groups_written_by_zarr(tmp_path):
    root = zarr.open_group(tmp_path / "g", mode="w", attributes={"title": "t"})
    root.create_group("sub").create_array("deep", shape=(2,), dtype="i1")
    arr = root.create_array("data", shape=(5,), dtype="f8", fill_value=3.0)
    arr[...] = np.arange(5.0)
    g = zgpu.open_group(tmp_path / "g")
    assert g.attrs["title"] == "t"
    assert list(g) == ["data", "sub"]
    assert g.array_keys() == ["data"] and g.group_keys() == ["sub"]
    assert_same(g["data"][...], np.arange(5.0))
    assert isinstance(g["sub/deep"], zgpu.Array)
    assert "sub/deep" in g and "nope" not in g
