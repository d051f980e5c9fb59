"""zarr-python reads what zgpu wrote: `zgpu write` from .npy and `zgpu cp` between formats."""
import json
import os

import numpy as np
import pytest
import zarr

from interop_util import assert_fails_cleanly, assert_same_array
from gen_fixtures import DTYPES, sample, stored_codec_names

# --codec spec -> (codec names expected in v3 metadata, in v2 metadata)
CODECS = {
    "none": ((), ()),
    "zstd": (("zstd",), ("zstd",)),
    "zstd:5": (("zstd",), ("zstd",)),
    "gzip:6": (("gzip",), ("gzip",)),
    "blosc:lz4:5:shuffle": (("blosc",), ("blosc",)),
    "blosc:zstd:3:bitshuffle": (("blosc",), ("blosc",)),
    "blosc:blosclz:9:noshuffle": (("blosc",), ("blosc",)),
    "zlib": (("numcodecs.zlib",), ("zlib",)),
    "lz4": (("numcodecs.lz4",), ("lz4",)),
    "bz2": (("numcodecs.bz2",), ("bz2",)),
    "bz2:9": (("numcodecs.bz2",), ("bz2",)),
    "zlib:1": (("numcodecs.zlib",), ("zlib",)),
    "lz4:3": (("numcodecs.lz4",), ("lz4",)),
    "zstd:3:checksum": (("zstd",), ("zstd",)),
}


def _meta(path):
    for f, fmt in (("zarr.json", 3), (".zarray", 2)):
        p = os.path.join(path, f)
        if os.path.exists(p):
            with open(p) as fh:
                return fmt, json.load(fh)
    raise AssertionError(f"no metadata at {path}")


def _codec_config(path, name):
    fmt, doc = _meta(path)
    if fmt == 2:
        for c in (doc.get("filters") or []) + ([doc["compressor"]] if doc.get("compressor") else []):
            if c["id"] == name:
                return c
    else:
        for c in doc["codecs"]:
            if c["name"] == name:
                return c.get("configuration") or {}
    raise AssertionError(f"codec {name} not in metadata of {path}")


def _check_codec_options(path, codec, fmt):
    """The levels and blosc options asked for are the ones stored."""
    parts = codec.split(":")
    if parts[0] in ("zstd", "gzip", "zlib", "bz2") and len(parts) >= 2:
        name = parts[0] if fmt == 2 or parts[0] in ("zstd", "gzip") else "numcodecs." + parts[0]
        assert _codec_config(path, name)["level"] == int(parts[1])
    if parts[0] == "zstd" and parts[-1] == "checksum":
        assert _codec_config(path, "zstd")["checksum"] is True
    if parts[0] == "blosc":
        cfg = _codec_config(path, "blosc")
        assert cfg["cname"] == parts[1] and cfg["clevel"] == int(parts[2])
        shuffle = cfg["shuffle"]
        if fmt == 2:
            shuffle = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}[shuffle]
        assert shuffle == parts[3]


def _write(zgpu, tmp_path, data, *opts, name="w.zarr"):
    npy = tmp_path / "in.npy"
    np.save(npy, data)
    dst = tmp_path / name
    zgpu.ok("write", dst, npy, *opts)
    return str(dst)


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("codec", list(CODECS))
def test_write_codec(zgpu, tmp_path, fmt, codec):
    data = sample("int32", (19, 33, 40), seed=3)
    path = _write(zgpu, tmp_path, data, "--format", fmt, "--chunks", "8,16,16", "--codec", codec)
    a = zarr.open_array(path, mode="r")
    assert a.metadata.zarr_format == fmt
    assert a.chunks == (8, 16, 16)
    assert_same_array(a[...], data, f"write {codec} v{fmt}")
    want = CODECS[codec][0 if fmt == 3 else 1]
    names = stored_codec_names(path)
    for n in want:
        assert n in names, f"{n} not in stored codecs {names}"
    _check_codec_options(path, codec, fmt)


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dtype", DTYPES)
def test_write_dtype(zgpu, tmp_path, fmt, dtype):
    data = sample(dtype, (11, 23), seed=5)
    path = _write(zgpu, tmp_path, data, "--format", fmt, "--chunks", "4,8", "--codec", "zstd")
    a = zarr.open_array(path, mode="r")
    assert_same_array(a[...], data, f"write {dtype} v{fmt}")


@pytest.mark.parametrize("codec", ["none", "zstd", "blosc:lz4:5:shuffle", "gzip:6"])
def test_write_sharded(zgpu, tmp_path, codec):
    data = sample("uint16", (30, 50, 41), seed=7)
    path = _write(zgpu, tmp_path, data, "--format", 3, "--chunks", "5,10,8", "--shards", "10,20,16", "--codec", codec)
    a = zarr.open_array(path, mode="r")
    assert a.shards == (10, 20, 16) and a.chunks == (5, 10, 8)
    assert "sharding_indexed" in stored_codec_names(path)
    assert_same_array(a[...], data, f"write sharded {codec}")


def test_write_default_options(zgpu, tmp_path):
    data = sample("float32", (70, 90), seed=1)
    path = _write(zgpu, tmp_path, data)
    a = zarr.open_array(path, mode="r")
    assert_same_array(a[...], data, "write defaults")


@pytest.mark.parametrize("fmt", [2, 3])
def test_write_zero_d_and_empty(zgpu, tmp_path, fmt):
    scalar = np.array(4.5, dtype="float64")
    path = _write(zgpu, tmp_path, scalar, "--format", fmt, name="s.zarr")
    assert_same_array(zarr.open_array(path, mode="r")[...], scalar, "0-d")
    empty = np.zeros((0, 7), dtype="int16")
    path = _write(zgpu, tmp_path, empty, "--format", fmt, "--chunks", "4,4", name="e.zarr")
    assert_same_array(zarr.open_array(path, mode="r")[...], empty, "empty")


@pytest.mark.parametrize("codec", ["zstd+crc32c", "none+crc32c", "gzip:1+crc32c"])
def test_write_crc32c(zgpu, tmp_path, codec):
    data = sample("float64", (21, 10), seed=8)
    path = _write(zgpu, tmp_path, data, "--format", 3, "--chunks", "8,4", "--codec", codec)
    assert "crc32c" in stored_codec_names(path)
    assert_same_array(zarr.open_array(path, mode="r")[...], data, f"write {codec}")


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dtype,fill", [("float32", "NaN"), ("float64", "-Infinity"), ("int16", "-5"),
                                        ("bool", "true"), ("complex64", "1.5,-2"), ("uint64", "18446744073709551615")])
def test_write_fill_value_and_attrs(zgpu, tmp_path, fmt, dtype, fill):
    data = sample(dtype, (9, 8), seed=6)
    path = _write(zgpu, tmp_path, data, "--format", fmt, "--chunks", "4,4", "--fill-value", fill,
                  "--attrs", '{"unit": "mm", "n": [1, 2]}')
    a = zarr.open_array(path, mode="r")
    assert_same_array(a[...], data, "data")
    want = {"NaN": np.nan, "-Infinity": -np.inf, "true": True, "1.5,-2": complex(1.5, -2)}.get(fill)
    want = np.array(want if want is not None else int(fill), dtype=dtype)
    assert_same_array(np.array(a.fill_value, dtype=dtype), want, "fill value")
    assert dict(a.attrs) == {"unit": "mm", "n": [1, 2]}


def test_write_then_read_back(zgpu, tmp_path):
    """zgpu's own round trip, and zgpu's reading of its output equals zarr-python's."""
    data = sample("complex64", (17, 9), seed=2)
    path = _write(zgpu, tmp_path, data, "--format", 3, "--chunks", "5,4", "--codec", "blosc:zstd:3:bitshuffle")
    out = tmp_path / "back.npy"
    zgpu.ok("read", path, "-o", out)
    assert_same_array(np.load(out), data, "zgpu round trip")


def test_write_fortran_order_input(zgpu, tmp_path):
    data = np.asfortranarray(sample("int64", (13, 21), seed=4))
    path = _write(zgpu, tmp_path, data, "--chunks", "4,4", "--codec", "zstd")
    assert_same_array(zarr.open_array(path, mode="r")[...], data, "F-order .npy input")


def test_write_overwrite(zgpu, tmp_path):
    first = sample("uint8", (20, 20), seed=1)
    path = _write(zgpu, tmp_path, first, "--chunks", "5,5")
    second = sample("uint8", (8, 9), seed=2)
    npy = tmp_path / "second.npy"
    np.save(npy, second)
    r = zgpu("write", path, npy, "--chunks", "4,4")
    assert_fails_cleanly(r)
    assert_same_array(zarr.open_array(path, mode="r")[...], first, "unchanged after refused write")
    zgpu.ok("write", path, npy, "--chunks", "4,4", "--overwrite")
    assert_same_array(zarr.open_array(path, mode="r")[...], second, "after --overwrite")


def test_write_v2_with_shards_is_refused(zgpu, tmp_path):
    npy = tmp_path / "in.npy"
    np.save(npy, np.zeros((8, 8), "int32"))
    r = zgpu("write", tmp_path / "x.zarr", npy, "--format", 2, "--chunks", "2,2", "--shards", "4,4")
    assert_fails_cleanly(r)


def test_write_bad_codec_is_refused(zgpu, tmp_path):
    npy = tmp_path / "in.npy"
    np.save(npy, np.zeros((8, 8), "int32"))
    assert_fails_cleanly(zgpu("write", tmp_path / "x.zarr", npy, "--codec", "nosuchcodec"), "nosuchcodec")
    assert_fails_cleanly(zgpu("write", tmp_path / "y.zarr", npy, "--codec", "zstd:notanumber"))
    assert_fails_cleanly(zgpu("write", tmp_path / "z.zarr", npy, "--chunks", "0,4"))


# ---- zgpu cp: fixture written by zarr-python -> new array (other format / chunks / codec) ----
CP_CASES = [
    ("v3_shard_end", ["--format", "2", "--chunks", "7,9", "--codec", "zlib"]),
    ("v2_order_F_dot", ["--format", "3", "--chunks", "4,8,16", "--shards", "8,16,32", "--codec", "zstd"]),
    ("v3_missing_chunks_nan", ["--format", "2"]),
    ("v2_fill_null_missing", ["--format", "3", "--codec", "gzip:6"]),
    ("v3_dtype_complex128_be_gzip", ["--format", "3", "--codec", "blosc:lz4:5:shuffle"]),
    ("v2_filter_fso", ["--format", "3", "--codec", "zstd"]),
    ("v3_transpose_zstd", []),
    ("v3_shard_nested", ["--format", "3", "--chunks", "3,5", "--shards", "none", "--codec", "bz2"]),
    ("v3_shard_end", ["--chunks", "5,4"]),  # keeps the 10x12 shards, new inner chunks
    ("v3_dtype_uint16_le_zstd", ["--chunks", "4,4", "--shards", "8,8", "--codec", "zstd:3:checksum+crc32c"]),
    ("v2_dtype_bool_le", ["--format", "3"]),
    ("v3_missing_chunks_bool", ["--format", "2", "--codec", "lz4"]),
    ("v3_zero_d", ["--format", "2"]),
    ("v2_zero_d", ["--format", "3"]),
    ("v3_empty_2d", ["--format", "2"]),
    ("v3_4d", ["--format", "3", "--chunks", "3,5,7,11"]),
]


@pytest.mark.parametrize("src_name,opts", CP_CASES, ids=[f"{n}{'_'.join([''] + o)}" for n, o in CP_CASES])
def test_cp(zgpu, fixture_paths, tmp_path, src_name, opts):
    src = fixture_paths[src_name]
    dst = str(tmp_path / "dst.zarr")
    zgpu.ok("cp", src, dst, *opts)
    a, b = zarr.open_array(src, mode="r"), zarr.open_array(dst, mode="r")
    if "--format" in opts:
        assert b.metadata.zarr_format == int(opts[opts.index("--format") + 1])
    if "--chunks" in opts:
        assert b.chunks == tuple(int(x) for x in opts[opts.index("--chunks") + 1].split(","))
    if "--shards" in opts:
        want = opts[opts.index("--shards") + 1]
        assert b.shards == (None if want == "none" else tuple(int(x) for x in want.split(",")))
    elif "--format" not in opts or opts[opts.index("--format") + 1] == "3":
        if a.metadata.zarr_format == 3:
            assert b.shards == a.shards, "cp without --shards keeps the source's shards"
    assert_same_array(b[...], a[...], f"cp {src_name} {' '.join(opts)}")
    # The fill value survives the copy (bit-exact, NaN included); v2 null has no v3 form: zeros then.
    fa, fb = np.array(a.fill_value if a.fill_value is not None else 0, dtype=a.dtype), \
        np.array(b.fill_value if b.fill_value is not None else 0, dtype=b.dtype)
    assert_same_array(fb.reshape(()), fa.reshape(()), "fill value")


def test_bench_subcommand(zgpu, fixture_paths):
    r = zgpu.ok("bench", fixture_paths["v3_blosc_lz4_shuffle"])
    assert r.stdout.strip(), "bench printed nothing"
