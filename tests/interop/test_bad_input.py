"""Bad input: corrupt chunks, bad metadata, bad regions. zgpu must exit non-zero with a one-line message
(naming the chunk and codec where a chunk is bad) and never crash or hang."""
import json
import os

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.codecs as zc

from interop_util import assert_fails_cleanly, assert_same_array
from gen_fixtures import sample, zn

SHAPE, CHUNKS = (12, 20), (4, 10)
BAD_KEY_V3 = "c/1/1"   # the chunk we damage (rows 4:8, cols 10:20)
BAD_KEY_V2 = "1.1"
GOOD_REGION = "0:4,0:20"  # touches only chunks c/0/0 and c/0/1


def _make_v3(path, compressors, serializer="auto", dtype="int32"):
    a = zarr.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype=dtype, compressors=compressors,
                          serializer=serializer)
    a[...] = sample(dtype, SHAPE, seed=11)
    return str(path)


def _make_v2(path, compressor, dtype="<i4"):
    a = zarr.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype=dtype, zarr_format=2, compressors=compressor)
    a[...] = sample(dtype, SHAPE, seed=12)
    return str(path)


def _flip(path, frac=0.5, n=4):
    b = bytearray(open(path, "rb").read())
    at = min(len(b) - n, max(0, int(len(b) * frac)))
    for i in range(at, at + n):
        b[i] ^= 0xA5
    open(path, "wb").write(bytes(b))


def _truncate(path, keep=0.5):
    b = open(path, "rb").read()
    open(path, "wb").write(b[: int(len(b) * keep)])


def _replace(path, data: bytes):
    open(path, "wb").write(data)


# (id, maker, damage, codec named in the message)
CORRUPTIONS = [
    ("zstd_checksum_flip", lambda p: _make_v3(p, [zc.ZstdCodec(checksum=True)]), lambda f: _flip(f, 0.6), "zstd"),
    ("zstd_truncated", lambda p: _make_v3(p, [zc.ZstdCodec()]), _truncate, "zstd"),
    ("zstd_header_flip", lambda p: _make_v3(p, [zc.ZstdCodec()]), lambda f: _flip(f, 0.0), "zstd"),
    ("zstd_wrong_size", lambda p: _make_v3(p, [zc.ZstdCodec()]),
     lambda f: _replace(f, numcodecs.Zstd().encode(np.zeros(7, "u1").tobytes())), "zstd"),
    ("gzip_flip", lambda p: _make_v3(p, [zc.GzipCodec()]), lambda f: _flip(f, 0.5), "gzip"),
    ("gzip_truncated", lambda p: _make_v3(p, [zc.GzipCodec()]), lambda f: _truncate(f, 0.7), "gzip"),
    ("blosc_truncated", lambda p: _make_v3(p, [zc.BloscCodec(cname="lz4")]), _truncate, "blosc"),
    ("blosc_header_flip", lambda p: _make_v3(p, [zc.BloscCodec(cname="zstd")]),
     lambda f: _flip(f, 0.0, n=16), "blosc"),
    ("crc32c_mismatch", lambda p: _make_v3(p, [zc.Crc32cCodec()]), lambda f: _flip(f, 0.3, n=1), "crc32c"),
    ("bytes_truncated", lambda p: _make_v3(p, None), lambda f: _truncate(f, 0.9), "bytes"),
    ("bytes_too_long", lambda p: _make_v3(p, None),
     lambda f: _replace(f, open(f, "rb").read() + b"\0" * 8), "bytes"),
    ("lz4_truncated", lambda p: _make_v3(p, [zn.LZ4()]), _truncate, "numcodecs.lz4"),
    ("bz2_flip", lambda p: _make_v3(p, [zn.BZ2()]), lambda f: _flip(f, 0.5), "numcodecs.bz2"),
    ("zlib_flip", lambda p: _make_v3(p, [zn.Zlib()]), lambda f: _flip(f, 0.5), "numcodecs.zlib"),
    ("empty_chunk_file", lambda p: _make_v3(p, [zc.ZstdCodec()]), lambda f: _replace(f, b""), "zstd"),
]


@pytest.mark.parametrize("cid,make,damage,codec", CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def test_corrupt_chunk_v3(zgpu, tmp_path, cid, make, damage, codec):
    path = make(tmp_path / "a.zarr")
    expected = zarr.open_array(path, mode="r")[0:4, :]
    damage(os.path.join(path, *BAD_KEY_V3.split("/")))
    r = zgpu("read", path, "-o", tmp_path / "out.npy")
    assert_fails_cleanly(r, BAD_KEY_V3, codec)
    # chunks that are intact still read correctly
    zgpu.ok("read", path, "--region", GOOD_REGION, "-o", tmp_path / "good.npy")
    assert_same_array(np.load(tmp_path / "good.npy"), expected, "intact chunks next to a corrupt one")


V2_CORRUPTIONS = [
    ("v2_zlib_flip", lambda p: _make_v2(p, numcodecs.Zlib()), lambda f: _flip(f, 0.5), "zlib"),
    ("v2_blosc_truncated", lambda p: _make_v2(p, numcodecs.Blosc()), _truncate, "blosc"),
    ("v2_zstd_truncated", lambda p: _make_v2(p, numcodecs.Zstd()), _truncate, "zstd"),
    ("v2_lz4_flip_size", lambda p: _make_v2(p, numcodecs.LZ4()), lambda f: _flip(f, 0.0, n=4), "lz4"),
    ("v2_uncompressed_short", lambda p: _make_v2(p, None), lambda f: _truncate(f, 0.5), None),
]


@pytest.mark.parametrize("cid,make,damage,codec", V2_CORRUPTIONS, ids=[c[0] for c in V2_CORRUPTIONS])
def test_corrupt_chunk_v2(zgpu, tmp_path, cid, make, damage, codec):
    path = make(tmp_path / "a.zarr")
    damage(os.path.join(path, BAD_KEY_V2))
    r = zgpu("read", path, "-o", tmp_path / "out.npy")
    assert_fails_cleanly(r, BAD_KEY_V2, *([codec] if codec else []))


def _make_sharded(path, index_codecs=None, index_location="end"):
    kw = {} if index_codecs is None else {"index_codecs": index_codecs}
    a = zarr.create_array(str(path), shape=(16, 16), chunks=(8, 8), dtype="uint16", compressors=None,
                          serializer=zc.ShardingCodec(chunk_shape=(4, 4), codecs=[zc.BytesCodec(), zc.ZstdCodec()],
                                                      index_location=index_location, **kw))
    a[...] = sample("uint16", (16, 16), seed=9)
    return str(path)


def _shard_index_entries(shard: bytes, n_inner: int, location: str, crc: bool):
    size = n_inner * 16
    start = 0 if location == "start" else len(shard) - size - (4 if crc else 0)
    return start, np.frombuffer(shard[start:start + size], "<u8").reshape(n_inner, 2).copy()


@pytest.mark.parametrize("what", ["truncated", "index_crc", "offset_past_end", "length_huge", "overlap_index"])
def test_corrupt_shard(zgpu, tmp_path, what):
    crc = what in ("truncated", "index_crc")
    path = _make_sharded(tmp_path / "s.zarr", index_codecs=None if crc else [zc.BytesCodec()])
    f = os.path.join(path, "c", "1", "0")
    shard = open(f, "rb").read()
    if what == "truncated":
        _replace(f, shard[: len(shard) // 2])
    elif what == "index_crc":
        b = bytearray(shard)
        b[-6] ^= 0xFF  # inside the index, before its crc32c
        _replace(f, bytes(b))
    else:
        start, idx = _shard_index_entries(shard, 4, "end", crc=False)
        if what == "offset_past_end":
            idx[1, 0] = len(shard) + 1000
        elif what == "length_huge":
            idx[2, 1] = 2**62
        else:  # an inner chunk whose bytes run into the index itself
            idx[3, 1] = len(shard) - idx[3, 0]
        b = bytearray(shard)
        b[start:start + idx.nbytes] = idx.tobytes()
        _replace(f, bytes(b))
    r = zgpu("read", path, "-o", tmp_path / "out.npy")
    assert_fails_cleanly(r, "c/1/0")


# ---- bad metadata ----
def _v3_doc():
    return {"zarr_format": 3, "node_type": "array", "shape": [10, 10], "data_type": "int16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": {}}


def _edit(**changes):
    def f(d):
        for k, v in changes.items():
            if v is _DELETE:
                d.pop(k, None)
            else:
                d[k] = v
        return d
    return f


_DELETE = object()
BAD_V3 = [
    ("not_json", "this is not json", None),
    ("empty_file", "", None),
    ("truncated_json", json.dumps(_v3_doc())[:60], None),
    ("json_array", "[1, 2, 3]", None),
    ("missing_shape", _edit(shape=_DELETE), "shape"),
    ("shape_negative", _edit(shape=[-1, 10]), None),
    ("shape_not_ints", _edit(shape=["a", 10]), None),
    ("chunk_zero", _edit(chunk_grid={"name": "regular", "configuration": {"chunk_shape": [0, 5]}}), None),
    ("chunk_rank_mismatch", _edit(chunk_grid={"name": "regular", "configuration": {"chunk_shape": [5]}}), None),
    ("unknown_grid", _edit(chunk_grid={"name": "irregular", "configuration": {}}), "irregular"),
    ("unknown_dtype", _edit(data_type="quaternion128"), "quaternion128"),
    ("unknown_codec", _edit(codecs=[{"name": "bytes", "configuration": {"endian": "little"}},
                                    {"name": "frobnicate"}]), "frobnicate"),
    ("no_array_to_bytes", _edit(codecs=[{"name": "zstd", "configuration": {"level": 1}}]), None),
    ("two_array_to_bytes", _edit(codecs=[{"name": "bytes"}, {"name": "bytes"}]), None),
    ("bad_endian", _edit(codecs=[{"name": "bytes", "configuration": {"endian": "middle"}}]), None),
    ("transpose_bad_order", _edit(codecs=[{"name": "transpose", "configuration": {"order": [0, 0]}},
                                          {"name": "bytes"}]), "transpose"),
    ("blosc_bad_cname", _edit(codecs=[{"name": "bytes"}, {"name": "blosc", "configuration": {
        "cname": "nope", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}]), "blosc"),
    ("fill_wrong_type", _edit(fill_value="banana"), None),
    ("fill_out_of_range", _edit(fill_value=70000), None),
    ("zarr_format_4", _edit(zarr_format=4), None),
    ("node_type_group", _edit(node_type="group"), None),
    ("unknown_must_understand", _edit(storage_transformers=[{"name": "mystery"}]), None),
    ("unknown_top_level_field", lambda d: {**d, "extension_x": {"must_understand": True}}, None),
    ("bad_key_encoding", _edit(chunk_key_encoding={"name": "default", "configuration": {"separator": "|"}}), None),
]


@pytest.mark.parametrize("bid,change,mention", BAD_V3, ids=[b[0] for b in BAD_V3])
def test_bad_zarr_json(zgpu, tmp_path, bid, change, mention):
    path = tmp_path / "a.zarr"
    path.mkdir()
    text = change if isinstance(change, str) else json.dumps(change(_v3_doc()))
    (path / "zarr.json").write_text(text)
    for cmd in (["info", path], ["read", path, "-o", tmp_path / "o.npy"]):
        assert_fails_cleanly(zgpu(*cmd), *([mention] if mention else []))


def test_good_zarr_json_baseline(zgpu, tmp_path):
    """The unmodified document of test_bad_zarr_json is valid: the failures above come from the edits."""
    path = tmp_path / "a.zarr"
    path.mkdir()
    (path / "zarr.json").write_text(json.dumps(_v3_doc()))
    zgpu.ok("read", path, "-o", tmp_path / "o.npy")
    assert_same_array(np.load(tmp_path / "o.npy"), zarr.open_array(str(path), mode="r")[...], "baseline")


def _v2_doc():
    return {"zarr_format": 2, "shape": [10, 10], "chunks": [5, 5], "dtype": "<i2", "compressor": None,
            "fill_value": 0, "filters": None, "order": "C"}


BAD_V2 = [
    ("v2_not_json", "{{{", None),
    ("v2_bad_dtype", _edit(dtype="<x9"), None),
    ("v2_struct_dtype_duplicate_field", _edit(dtype=[["a", "<i4"], ["a", "<f8"]]), None),  # (records are read; not this)
    ("v2_unknown_compressor", _edit(compressor={"id": "snappy9"}), "snappy9"),
    ("v2_unknown_filter", _edit(filters=[{"id": "wavelet"}]), "wavelet"),
    ("v2_rank_mismatch", _edit(chunks=[5]), None),
    ("v2_bad_order", _edit(order="K"), None),
    ("v2_missing_dtype", _edit(dtype=_DELETE), None),
    ("v2_format_3_in_zarray", _edit(zarr_format=3), None),
]


@pytest.mark.parametrize("bid,change,mention", BAD_V2, ids=[b[0] for b in BAD_V2])
def test_bad_zarray(zgpu, tmp_path, bid, change, mention):
    path = tmp_path / "a.zarr"
    path.mkdir()
    text = change if isinstance(change, str) else json.dumps(change(_v2_doc()))
    (path / ".zarray").write_text(text)
    for cmd in (["info", path], ["read", path, "-o", tmp_path / "o.npy"]):
        assert_fails_cleanly(zgpu(*cmd), *([mention] if mention else []))


BAD_REGIONS = ["0:13,0:20", "0:12,0:21", "5:3,0:20", "0:4,0:4,0:4", "a:b,0:4", "-13:4,0:4", "12,0", "0,-21",
               "0:4;0:4", "99999999999999999999999:1,0:1", "1:2:3,0:1", "0:4,"]


@pytest.mark.parametrize("region", BAD_REGIONS)
def test_bad_region(zgpu, tmp_path, region):
    path = _make_v3(tmp_path / "a.zarr", [zc.ZstdCodec()])
    assert_fails_cleanly(zgpu("read", path, "--region", region, "-o", tmp_path / "o.npy"))


def test_missing_path(zgpu, tmp_path):
    assert_fails_cleanly(zgpu("read", tmp_path / "does-not-exist.zarr", "-o", tmp_path / "o.npy"))
    assert_fails_cleanly(zgpu("info", tmp_path / "does-not-exist.zarr"))


def test_group_is_not_an_array(zgpu, tmp_path):
    zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    assert_fails_cleanly(zgpu("read", tmp_path / "g.zarr", "-o", tmp_path / "o.npy"))


def test_bad_npy_input(zgpu, tmp_path):
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00garbage")
    assert_fails_cleanly(zgpu("write", tmp_path / "x.zarr", bad))
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array(["a", "bc"]))  # a string dtype zgpu does not store
    assert_fails_cleanly(zgpu("write", tmp_path / "y.zarr", obj))


def test_unknown_subcommand_and_options(zgpu, tmp_path):
    assert_fails_cleanly(zgpu("frobnicate"))
    assert_fails_cleanly(zgpu("read"))
    assert_fails_cleanly(zgpu("read", tmp_path, "--no-such-option"))
