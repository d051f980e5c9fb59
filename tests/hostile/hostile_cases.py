"""The hostile-input cases of tests/hostile: damaged chunks, blosc header lies, shard index tricks, bad
metadata, special files in the store, decompression bombs under a memory limit.

Every case is built with zgpu's own writer (python/zgpu) or with the standard library (zlib, bz2, struct), so the
runner needs only NumPy and the zgpu package (plus CuPy for device reads): no zarr-python, no numcodecs.

A case is a small array on disk (a copy of a clean "base" array of one codec set-up, then damaged), the read to
do and the expected outcome:
  ok      success with exactly `values`
  error   a zgpu exception of one of `errors` whose message contains every string of `names` (the chunk or
          shard key, and a codec of the chain where the damage is inside a chunk)
  either  the damage is undetectable by construction (a bit flip in a raw chunk or in data of a format without a
          checksum that still decodes to the right size): an error of `errors`, or success; in device mode host
          and device must still agree
  same    damage a checksum must catch unless it changes nothing: an error as above, or success with exactly the
          clean array's values (a flipped bit that no decoder reads, as libzstd shows for some bits of FSE table
          descriptions; zero padding after a gzip member, which gzip(1) and zarr-python accept)
"""
from __future__ import annotations

import bz2
import hashlib
import json
import os
import shutil
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

SHAPE = (64, 64)
CHUNKS = (32, 32)
SHARDS = (64, 32)            # two shards c/0/0 and c/0/1, each of two inner chunks
BOMB_SCALE = 8               # a bomb: the same set-up's chunk over 8x8 chunks, a valid stream 64x too large
BIG_SHAPE, BIG_CHUNKS = (512, 512), (256, 256)  # 256 KiB chunks: several zstd / deflate / blosc blocks each,
                                                # the multi-block paths of the GPU decoders

CORRUPT = ("CorruptDataError",)


def base_data(dtype: str = "int32", shape: Tuple[int, int] = SHAPE) -> np.ndarray:
    """Compressible but not trivial (entropy-coded by zstd/deflate, not stored raw by blosc), never all fill."""
    rng = np.random.default_rng(25)
    a = rng.integers(0, 48, shape) + (np.arange(shape[1]) // 4)[None, :]
    return a.astype(dtype)


# ---------------------------------------------------------------------------------------------------------------
# Codec set-ups. `fmt` says what the stored chunk is, for the expectations of bit flips:
#   raw        uncompressed, no checksum (a flip changes one value: the expected values are computed)
#   crc32c     raw + crc32c (every flip detected)
#   zstd-ck    zstd frame with its xxhash64 checksum; gzip (CRC32); zlib (header check + Adler-32);
#   bz2        (block and stream CRCs): every flip in the payload detected
#   zstd, lz4  no checksum: a flip past the header may decode to the right size
#   blosc-zlib blosc framing around zlib streams (each with its Adler-32): flips in the streams detected,
#              flips in blosc's 16-byte header may not be
#   blosc      blosc with blosclz / lz4 / lz4hc / zstd streams: no checksum
#   shard:<f>  a shard of inner chunks of format f, its index checked by crc32c at the end
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Setup:
    name: str
    fmt: str
    kwargs: Dict[str, Any]
    codecs: Tuple[str, ...]          # codec names one of which the error message of a damaged chunk must name
    zarr_format: int = 3
    dtype: str = "int32"
    sharded: bool = False
    flip_bit: int = 0                # deflate and zstd fill bits from the LSB, bz2 from the MSB: a used bit
    shape: Tuple[int, int] = SHAPE
    chunks: Tuple[int, int] = CHUNKS  # of the chunk grid (for a sharded set-up: the shard, kwargs "chunks")

    def data(self) -> np.ndarray:
        return base_data(self.dtype, self.shape)

    @property
    def key(self) -> str:            # the damaged chunk (or shard)
        if self.sharded:
            return "c/0/1"
        return "1.1" if self.zarr_format == 2 else "c/1/1"

    @property
    def other_key(self) -> str:
        if self.sharded:
            return "c/0/0"
        return "0.0" if self.zarr_format == 2 else "c/0/0"

    @property
    def region(self) -> Tuple[slice, slice]:
        c0, c1 = self.chunks
        return (slice(0, 64), slice(32, 64)) if self.sharded else (slice(c0, 2 * c0), slice(c1, 2 * c1))

    @property
    def other_region(self) -> Tuple[slice, slice]:
        c0, c1 = self.chunks
        return (slice(0, 64), slice(0, 32)) if self.sharded else (slice(0, c0), slice(0, c1))


def _blosc3(cname: str, shuffle: str) -> Dict[str, Any]:
    return {"name": "blosc", "configuration": {"cname": cname, "clevel": 5, "shuffle": shuffle, "typesize": 4,
                                               "blocksize": 0}}


def _blosc2(cname: str, shuffle: int) -> Dict[str, Any]:
    return {"id": "blosc", "cname": cname, "clevel": 5, "shuffle": shuffle, "blocksize": 0}


def _zstd(checksum: bool = False, level: int = 3) -> Dict[str, Any]:
    return {"name": "zstd", "configuration": {"level": level, "checksum": checksum}}


SHUF = {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}}
INDEX = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _shard_ser(inner: List[Any]) -> Dict[str, Any]:
    return {"name": "sharding_indexed", "configuration": {"chunk_shape": list(CHUNKS), "codecs": [BYTES] + inner,
                                                          "index_codecs": INDEX, "index_location": "end"}}


def _setups() -> List[Setup]:
    s: List[Setup] = []
    add = s.append
    # Zarr v3
    add(Setup("v3-raw", "raw", dict(compressors=None), ("bytes",)))
    add(Setup("v3-raw-be", "raw", dict(compressors=None), ("bytes",), dtype=">i4"))
    add(Setup("v3-raw-u8", "raw", dict(compressors=None), ("bytes",), dtype="uint8"))
    add(Setup("v3-zstd", "zstd", dict(compressors=[_zstd()]), ("zstd",)))
    add(Setup("v3-zstd-ck", "zstd-ck", dict(compressors=[_zstd(True)]), ("zstd",)))
    add(Setup("v3-zstd-be", "zstd", dict(compressors=[_zstd()]), ("zstd",), dtype=">i4"))
    add(Setup("v3-gzip", "gzip", dict(compressors=[{"name": "gzip", "configuration": {"level": 5}}]), ("gzip",)))
    add(Setup("v3-crc32c", "crc32c", dict(compressors=[{"name": "crc32c"}]), ("crc32c",)))
    add(Setup("v3-zlib", "zlib", dict(compressors=[{"name": "numcodecs.zlib", "configuration": {"level": 5}}]),
              ("zlib",)))
    add(Setup("v3-bz2", "bz2", dict(compressors=[{"name": "numcodecs.bz2", "configuration": {"level": 5}}]),
              ("bz2",), flip_bit=7))
    add(Setup("v3-lz4", "lz4", dict(compressors=[{"name": "numcodecs.lz4",
                                                  "configuration": {"acceleration": 1}}]), ("lz4",)))
    for cname, shuffle in [("blosclz", "shuffle"), ("lz4", "shuffle"), ("lz4hc", "shuffle"), ("zstd", "shuffle"),
                           ("zlib", "shuffle"), ("lz4", "noshuffle"), ("lz4", "bitshuffle"), ("zstd", "bitshuffle"),
                           ("zlib", "bitshuffle"), ("zlib", "noshuffle")]:
        add(Setup("v3-blosc-%s-%s" % (cname, shuffle), "blosc-zlib" if cname == "zlib" else "blosc",
                  dict(compressors=[_blosc3(cname, shuffle)]), ("blosc",)))
    add(Setup("v3-zstd-crc32c", "crc32c", dict(compressors=[_zstd(), {"name": "crc32c"}]), ("crc32c", "zstd")))
    add(Setup("v3-shuffle-zstd", "zstd", dict(compressors=[SHUF, _zstd()]), ("zstd", "shuffle")))
    add(Setup("v3-shuffle-bz2", "bz2", dict(compressors=[SHUF, {"name": "numcodecs.bz2",
                                                               "configuration": {"level": 5}}]),
              ("bz2", "shuffle"), flip_bit=7))
    add(Setup("v3-shuffle-gzip", "gzip", dict(compressors=[SHUF, {"name": "gzip", "configuration": {"level": 5}}]),
              ("gzip", "shuffle")))
    add(Setup("v3-delta-zstd", "zstd", dict(filters=[{"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}}],
                                            compressors=[_zstd()]), ("zstd", "delta")))
    add(Setup("v3-fso-zstd", "zstd", dict(filters=[{"name": "numcodecs.fixedscaleoffset",
                                                    "configuration": {"offset": 0, "scale": 1, "dtype": "<i4",
                                                                      "astype": "<i2"}}],
                                          compressors=[_zstd()]), ("zstd", "fixedscaleoffset")))
    add(Setup("v3-transpose-zstd", "zstd", dict(filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
                                                compressors=[_zstd()]), ("zstd", "transpose")))
    add(Setup("v3-shard-raw", "shard:raw", dict(serializer=_shard_ser([]), compressors=None, chunks=SHARDS),
              ("sharding_indexed", "bytes"), sharded=True))
    add(Setup("v3-shard-zstd", "shard:zstd", dict(serializer=_shard_ser([_zstd()]), compressors=None, chunks=SHARDS),
              ("sharding_indexed", "zstd"), sharded=True))
    add(Setup("v3-shard-gzip", "shard:gzip", dict(serializer=_shard_ser([{"name": "gzip",
                                                                          "configuration": {"level": 5}}]),
                                                  compressors=None, chunks=SHARDS),
              ("sharding_indexed", "gzip"), sharded=True))
    add(Setup("v3-shard-blosc-lz4", "shard:blosc", dict(serializer=_shard_ser([_blosc3("lz4", "shuffle")]),
                                                        compressors=None, chunks=SHARDS),
              ("sharding_indexed", "blosc"), sharded=True))
    add(Setup("v3-shard-then-zstd", "zstd", dict(serializer=_shard_ser([]), compressors=[_zstd()], chunks=SHARDS),
              ("zstd", "sharding_indexed"), sharded=True))
    add(Setup("v3-shard-then-gzip", "gzip", dict(serializer=_shard_ser([]),
                                                 compressors=[{"name": "gzip", "configuration": {"level": 5}}],
                                                 chunks=SHARDS), ("gzip", "sharding_indexed"), sharded=True))
    # Zarr v2
    add(Setup("v2-raw", "raw", dict(compressors=None), ("bytes",), zarr_format=2))
    add(Setup("v2-raw-be", "raw", dict(compressors=None), ("bytes",), zarr_format=2, dtype=">i4"))
    add(Setup("v2-zlib", "zlib", dict(compressors={"id": "zlib", "level": 5}), ("zlib",), zarr_format=2))
    add(Setup("v2-gzip", "gzip", dict(compressors={"id": "gzip", "level": 5}), ("gzip",), zarr_format=2))
    add(Setup("v2-bz2", "bz2", dict(compressors={"id": "bz2", "level": 5}), ("bz2",), zarr_format=2, flip_bit=7))
    add(Setup("v2-lz4", "lz4", dict(compressors={"id": "lz4", "acceleration": 1}), ("lz4",), zarr_format=2))
    add(Setup("v2-zstd", "zstd", dict(compressors={"id": "zstd", "level": 3}), ("zstd",), zarr_format=2))
    for cname, shuffle in [("lz4", 1), ("zlib", 1), ("zstd", 2), ("blosclz", 0), ("lz4hc", 2)]:
        add(Setup("v2-blosc-%s-%d" % (cname, shuffle), "blosc-zlib" if cname == "zlib" else "blosc",
                  dict(compressors=_blosc2(cname, shuffle)), ("blosc",), zarr_format=2))
    add(Setup("v2-delta-zlib", "zlib", dict(filters=[{"id": "delta", "dtype": "<i4"}],
                                            compressors={"id": "zlib", "level": 5}), ("zlib", "delta"),
              zarr_format=2))
    add(Setup("v2-shuffle-zstd", "zstd", dict(filters=[{"id": "shuffle", "elementsize": 4}],
                                              compressors={"id": "zstd", "level": 3}), ("zstd", "shuffle"),
              zarr_format=2))
    # 256 KiB chunks
    big = dict(shape=BIG_SHAPE, chunks=BIG_CHUNKS)
    add(Setup("v3-big-zstd", "zstd", dict(compressors=[_zstd()]), ("zstd",), **big))
    add(Setup("v3-big-zstd-ck", "zstd-ck", dict(compressors=[_zstd(True)]), ("zstd",), **big))
    add(Setup("v3-big-gzip", "gzip", dict(compressors=[{"name": "gzip", "configuration": {"level": 5}}]), ("gzip",),
              **big))
    add(Setup("v3-big-blosc-lz4-shuffle", "blosc", dict(compressors=[_blosc3("lz4", "shuffle")]), ("blosc",), **big))
    add(Setup("v3-big-blosc-zlib-shuffle", "blosc-zlib", dict(compressors=[_blosc3("zlib", "shuffle")]), ("blosc",),
              **big))
    add(Setup("v3-big-blosc-zstd-bitshuffle", "blosc", dict(compressors=[_blosc3("zstd", "bitshuffle")]),
              ("blosc",), **big))
    add(Setup("v2-big-zlib", "zlib", dict(compressors={"id": "zlib", "level": 5}), ("zlib",), zarr_format=2, **big))
    add(Setup("v2-big-lz4", "lz4", dict(compressors={"id": "lz4", "acceleration": 1}), ("lz4",), zarr_format=2,
              **big))
    add(Setup("v3-big-shuffle-zstd", "zstd", dict(compressors=[SHUF, _zstd()]), ("zstd", "shuffle"), **big))
    return s


SETUPS: List[Setup] = _setups()
SETUP_BY_NAME = {s.name: s for s in SETUPS}


def make_array(path: str, setup: Setup, bomb: bool = False) -> None:
    """Writes the set-up's array with zgpu's own writer; a bomb's array is one chunk (or shard) of the set-up's
    over BOMB_SCALE x BOMB_SCALE of its chunks, all ones."""
    import zgpu
    kw = dict(setup.kwargs)
    chunks = tuple(kw.pop("chunks", setup.chunks))
    shape = tuple(setup.shape)
    if bomb:
        shape = chunks = tuple(BOMB_SCALE * c for c in chunks)
    a = zgpu.create(path, shape=shape, dtype=setup.dtype, chunks=chunks, zarr_format=setup.zarr_format,
                    fill_value=0, **kw)
    a[...] = np.ones(shape, setup.dtype) if bomb else setup.data()


# ---------------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Case:
    id: str
    family: str
    setup: str                              # set-up name, or a label for the families without one
    build: Callable[[str, "Builder"], None]  # makes the case's array under the given directory
    expect: str                             # ok | error | either
    errors: Tuple[str, ...] = CORRUPT
    names: Tuple[str, ...] = ()
    any_name: Tuple[str, ...] = ()          # the message names at least one of these (a codec of the chain)
    values: Optional[Callable[[str], np.ndarray]] = None  # expected values (given the case's array path)
    select: Any = Ellipsis
    child: Optional[Dict[str, Any]] = None  # run the read in a subprocess: {"timeout": s, "rlimit": bytes, ...}
    confine: bool = False
    skip_root: bool = False
    sweep: Optional[Callable[[str, "Builder"], List[Tuple[str, Callable[[str], None]]]]] = None
    fast: bool = False                      # in the fast subset
    path_in_array: str = ""                 # where the case's array is (below the case directory)

    @property
    def array_dir(self) -> str:
        return self.path_in_array or "a.zarr"


class Builder:
    """Clean base arrays, built once per session under `root` and copied for each case."""

    def __init__(self, root: str, bomb_bytes: int) -> None:
        self.root = root
        self.bomb_bytes = bomb_bytes
        os.makedirs(root, exist_ok=True)

    def base(self, setup_name: str) -> str:
        p = os.path.join(self.root, "base", setup_name)
        if not os.path.exists(p):
            tmp = p + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            make_array(tmp, SETUP_BY_NAME[setup_name])
            os.rename(tmp, p)
        return p

    def bomb_chunk(self, setup_name: str) -> bytes:
        """The one chunk of the same set-up's bomb array: a valid stream 64x too large."""
        p = os.path.join(self.root, "bomb", setup_name)
        s = SETUP_BY_NAME[setup_name]
        if not os.path.exists(p):
            tmp = p + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            make_array(tmp, s, bomb=True)
            os.rename(tmp, p)
        return read_bytes(os.path.join(p, *("0.0" if s.zarr_format == 2 else "c/0/0").split("/")))

    def copy(self, setup_name: str, dest: str) -> str:
        shutil.copytree(self.base(setup_name), dest)
        return dest

    def cached(self, name: str, make: Callable[[], bytes]) -> bytes:
        p = os.path.join(self.root, "blobs", name)
        if not os.path.exists(p):
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p + ".tmp", "wb") as f:
                f.write(make())
            os.rename(p + ".tmp", p)
        return read_bytes(p)


def read_bytes(p: str) -> bytes:
    with open(p, "rb") as f:
        return f.read()


def write_bytes(p: str, b: bytes) -> None:
    with open(p, "wb") as f:
        f.write(b)


def chunk_path(array: str, key: str) -> str:
    return os.path.join(array, *key.split("/"))


def _values_with(setup: Setup, region_values: Optional[np.ndarray]) -> Callable[[str], np.ndarray]:
    """Expected: the base data with the damaged chunk's region replaced."""
    def f(_: str) -> np.ndarray:
        d = setup.data().copy()
        if region_values is not None:
            d[setup.region] = region_values
        return d
    return f


def _raw_values(setup: Setup) -> Callable[[str], np.ndarray]:
    """For a raw chunk: the values its (damaged, right-sized) bytes hold, read back from the case's file."""
    def f(array: str) -> np.ndarray:
        b = read_bytes(chunk_path(array, setup.key))
        shape = tuple(r.stop - r.start for r in setup.region)
        d = setup.data().copy()
        d[setup.region] = np.frombuffer(b, dtype=np.dtype(setup.dtype)).reshape(shape)
        return d
    return f


# --- damage to a stored chunk: (name, function of the chunk's bytes) ---------------------------------------------
def _flip(pos: Callable[[int], int], bit: Optional[int] = None) -> Callable[[bytes, Setup], bytes]:
    def f(b: bytes, s: Setup) -> bytes:
        out = bytearray(b)
        i = pos(len(b))
        out[i] ^= 1 << (s.flip_bit if bit is None else bit)
        return bytes(out)
    return f


def _xor_head(n: int) -> Callable[[bytes, Setup], bytes]:
    def f(b: bytes, s: Setup) -> bytes:
        return bytes(x ^ 0xFF for x in b[:n]) + b[n:]
    return f


# where a flip lands, by name: first byte (magic / header), quarter, middle, three quarters, last byte (checksum)
FLIPS = {"first": lambda n: 0, "q1": lambda n: n // 4, "mid": lambda n: n // 2, "q3": lambda n: 3 * n // 4,
         "last": lambda n: n - 1}


def flip_expect(setup: Setup, where: str) -> str:
    """What a single-bit flip at `where` must give for the set-up's format."""
    f = setup.fmt
    if f == "raw":
        return "exact"
    if f in ("crc32c", "zstd-ck", "gzip", "zlib", "bz2"):
        return "same"
    if f in ("zstd", "lz4"):  # magic / declared size in the first byte; no checksum behind it
        return "error" if where == "first" else "either"
    if f == "blosc-zlib":     # blosc's version byte may be accepted; zlib streams carry Adler-32
        return "either" if where == "first" else "same"
    if f == "blosc":
        return "either"
    if f.startswith("shard:"):  # the first bytes are inner chunk 0, the last the index's crc32c
        inner = f.split(":", 1)[1]
        if where == "last":
            return "same"
        if where == "first":
            return "error" if inner in ("zstd", "gzip") else "either"
        return "same" if inner == "gzip" else "either"
    raise AssertionError(f)


def _zero_pad(s: Setup) -> str:
    return "same" if s.fmt == "gzip" else "error"  # zero padding after a gzip member is tolerated by gzip(1)


def _chunk_damages() -> List[Tuple[str, Callable[[bytes, Setup], bytes], Callable[[Setup], str]]]:
    err = lambda s: "error"  # noqa: E731
    d: List[Tuple[str, Callable[[bytes, Setup], bytes], Callable[[Setup], str]]] = [
        ("empty", lambda b, s: b"", err),
        ("trunc-1", lambda b, s: b[:1], err),
        ("trunc-half", lambda b, s: b[:len(b) // 2], err),
        ("trunc-minus1", lambda b, s: b[:-1], err),
        ("trunc-minus4", lambda b, s: b[:-4], err),
        ("trail-1zero", lambda b, s: b + b"\0", _zero_pad),
        ("trail-16junk", lambda b, s: b + hashlib.sha256(b).digest()[:16], err),
        ("trail-4k-zeros", lambda b, s: b + bytes(4096), _zero_pad),
        # a shard twice over: the index at the end points into the first copy, the rest is unreferenced
        ("doubled", lambda b, s: b + b, lambda s: "same" if s.fmt.startswith("shard:") else "error"),
        ("zeros", lambda b, s: bytes(len(b)), lambda s: "exact" if s.fmt == "raw" else "error"),
        ("head-xor1", _xor_head(1), lambda s: "exact" if s.fmt == "raw" else
         ("either" if s.fmt == "shard:raw" else "error")),
        ("head-xor4", _xor_head(4), lambda s: "exact" if s.fmt == "raw" else
         ("either" if s.fmt == "shard:raw" else "error")),
    ]
    for where, pos in FLIPS.items():
        d.append(("flip-" + where, _flip(pos), lambda s, w=where: flip_expect(s, w)))
    return d


CHUNK_DAMAGES = _chunk_damages()


def _damage_case(s: Setup, dname: str, fn: Callable[[bytes, Setup], bytes], how: str) -> Case:
    def build(d: str, b: Builder) -> None:
        a = b.copy(s.name, os.path.join(d, "a.zarr"))
        p = chunk_path(a, s.key)
        write_bytes(p, fn(read_bytes(p), s))
    exp, values = how, None
    if how == "exact":
        exp, values = "ok", _raw_values(s)
    if how == "same":
        values = _values_with(s, None)
    return Case("chunk/%s/%s" % (s.name, dname), "chunk", s.name, build, exp, names=(s.key,),
                any_name=s.codecs, values=values)


def chunk_cases() -> List[Case]:
    out = []
    for s in SETUPS:
        for dname, fn, how in CHUNK_DAMAGES:
            out.append(_damage_case(s, dname, fn, how(s)))

        def other(d: str, b: Builder, s: Setup = s) -> None:  # another chunk's bytes: valid, undetectable
            a = b.copy(s.name, os.path.join(d, "a.zarr"))
            write_bytes(chunk_path(a, s.key), read_bytes(chunk_path(a, s.other_key)))
        sd = s.data()
        out.append(Case("chunk/%s/other-chunk" % s.name, "chunk", s.name, other, "ok",
                        values=_values_with(s, sd[s.other_region])))

        def foreign(d: str, b: Builder, s: Setup = s) -> None:  # a chunk of another codec set-up
            src = "v3-gzip" if s.fmt in ("zstd", "zstd-ck") else "v3-zstd"
            a = b.copy(s.name, os.path.join(d, "a.zarr"))
            so = SETUP_BY_NAME[src]
            write_bytes(chunk_path(a, s.key), read_bytes(chunk_path(b.base(src), so.key)))
        out.append(Case("chunk/%s/foreign-codec" % s.name, "chunk", s.name, foreign, "error", names=(s.key,),
                        any_name=s.codecs))

        def bomb(d: str, b: Builder, s: Setup = s) -> None:
            a = b.copy(s.name, os.path.join(d, "a.zarr"))
            write_bytes(chunk_path(a, s.key), b.bomb_chunk(s.name))
        out.append(Case("chunk/%s/bomb-64x" % s.name, "chunk", s.name, bomb, "error", names=(s.key,),
                        any_name=s.codecs))
    return out


# --- checksum sweeps: every byte of a checksummed payload, one bit each ------------------------------------------
def _payload_range(s: Setup, b: bytes) -> Tuple[int, int]:
    """The bytes a flip of which the format must detect (its header's ignorable fields left out)."""
    if s.fmt == "gzip":
        return 10, len(b)                    # mtime, xfl and os of the 10-byte header are not checked
    if s.fmt == "zstd-ck":
        return 4, len(b)
    if s.fmt == "blosc-zlib":
        return 16, len(b)                    # the streams (and their offsets) after blosc's header
    if s.fmt.startswith("shard:"):
        return len(b) - (16 * 2 + 4), len(b)  # the index (two entries) and its crc32c
    return 0, len(b)


SWEEP_SETUPS = ["v3-zstd-ck", "v3-gzip", "v3-crc32c", "v3-zlib", "v3-bz2", "v3-zstd-crc32c", "v3-blosc-zlib-shuffle",
                "v3-blosc-zlib-noshuffle", "v3-shuffle-gzip", "v3-shard-then-gzip", "v3-shard-zstd", "v2-zlib",
                "v2-gzip", "v2-bz2", "v2-blosc-zlib-1"]
# 256 KiB chunks (the checksums of multi-block streams on the GPU): a flip every BIG_STRIDE bytes in the full run
BIG_SWEEP_SETUPS = ["v3-big-zstd-ck", "v3-big-gzip", "v3-big-blosc-zlib-shuffle", "v2-big-zlib"]
BIG_STRIDE = 61


def sweep_cases(stride: int) -> List[Case]:
    out = []
    for name in SWEEP_SETUPS + BIG_SWEEP_SETUPS:
        s = SETUP_BY_NAME[name]
        stride_s = stride if name in SWEEP_SETUPS else BIG_STRIDE * (1 if stride == 1 else 67)

        def sweep(d: str, b: Builder, s: Setup = s,
                  stride_s: int = stride_s) -> List[Tuple[str, Callable[[str], None]]]:
            clean = read_bytes(chunk_path(b.base(s.name), s.key))
            lo, hi = _payload_range(s, clean)
            subs = []
            for i in range(lo, hi, stride_s):
                def damage(array: str, i: int = i) -> None:
                    x = bytearray(clean)
                    x[i] ^= 1 << s.flip_bit
                    write_bytes(chunk_path(array, s.key), bytes(x))
                subs.append(("byte%d" % i, damage))
            return subs

        def build(d: str, b: Builder, s: Setup = s) -> None:
            b.copy(s.name, os.path.join(d, "a.zarr"))
        out.append(Case("checksum/%s/every-%d-bytes" % (name, stride_s), "checksum", name, build, "same",
                        names=(s.key,), any_name=s.codecs, sweep=sweep, values=_values_with(s, None)))
    return out


# --- blosc header lies -------------------------------------------------------------------------------------------
def _put_u32(b: bytes, off: int, v: int) -> bytes:
    return b[:off] + struct.pack("<I", v & 0xFFFFFFFF) + b[off + 4:]


def _u32(b: bytes, off: int) -> int:
    return struct.unpack_from("<I", b, off)[0]


BLOSC_LIES: List[Tuple[str, Callable[[bytes], bytes], str]] = [
    ("version-ff", lambda b: b"\xff" + b[1:], "error"),
    ("version-0", lambda b: b"\x00" + b[1:], "error"),
    ("versionlz-ff", lambda b: b[:1] + b"\xff" + b[2:], "either"),
    ("flags-memcpy", lambda b: b[:2] + bytes([b[2] | 0x02]) + b[3:], "error"),
    ("flags-codec-7", lambda b: b[:2] + bytes([(b[2] & 0x1F) | 0xE0]) + b[3:], "error"),
    ("flags-shuffle-toggle", lambda b: b[:2] + bytes([b[2] ^ 0x01]) + b[3:], "either"),
    ("typesize-0", lambda b: b[:3] + b"\x00" + b[4:], "either"),
    ("typesize-3", lambda b: b[:3] + b"\x03" + b[4:], "either"),
    ("nbytes-plus1", lambda b: _put_u32(b, 4, _u32(b, 4) + 1), "error"),
    ("nbytes-minus1", lambda b: _put_u32(b, 4, _u32(b, 4) - 1), "error"),
    ("nbytes-double", lambda b: _put_u32(b, 4, _u32(b, 4) * 2), "error"),
    ("nbytes-max", lambda b: _put_u32(b, 4, 0xFFFFFFFF), "error"),
    ("nbytes-0", lambda b: _put_u32(b, 4, 0), "error"),
    ("blocksize-0", lambda b: _put_u32(b, 8, 0), "error"),
    ("blocksize-max", lambda b: _put_u32(b, 8, 0xFFFFFFFF), "error"),
    ("blocksize-half", lambda b: _put_u32(b, 8, _u32(b, 8) // 2), "either"),
    ("blocksize-7", lambda b: _put_u32(b, 8, 7), "either"),
    ("cbytes-plus1", lambda b: _put_u32(b, 12, _u32(b, 12) + 1), "error"),
    ("cbytes-minus1", lambda b: _put_u32(b, 12, _u32(b, 12) - 1), "error"),
    ("cbytes-max", lambda b: _put_u32(b, 12, 0xFFFFFFFF), "error"),
    ("cbytes-16", lambda b: _put_u32(b, 12, 16), "error"),
    ("bytes-past-cbytes", lambda b: b + b"\0" * 8, "error"),
    ("bstart0-max", lambda b: _put_u32(b, 16, 0xFFFFFFFF), "error"),
    ("bstart0-cbytes", lambda b: _put_u32(b, 16, len(b)), "error"),
    ("bstart0-0", lambda b: _put_u32(b, 16, 0), "error"),
    ("bstart0-header", lambda b: _put_u32(b, 16, 8), "error"),
    ("stream0-csize-max", lambda b: _put_u32(b, _u32(b, 16), 0x7FFFFFFF), "error"),
    ("stream0-csize-0", lambda b: _put_u32(b, _u32(b, 16), 0), "error"),
]


def _inner_lie(fn: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    """The lie told by inner chunk 1 of a shard: the new inner chunk appended, the index pointing at it (its
    crc32c recomputed), so only blosc's header lies."""
    def f(shard: bytes) -> bytes:
        e = _index(shard)
        off, n = e[1]
        inner = fn(shard[off:off + n])
        body = shard[:len(shard) - (16 * NENT + 4)]
        e[1] = [len(body), len(inner)]
        return _with_index(body + inner + bytes(16 * NENT + 4), e)
    return f


def blosc_cases() -> List[Case]:
    out = []
    for s in SETUPS:
        if not (s.fmt.startswith("blosc") or s.fmt == "shard:blosc"):
            continue
        for lname, fn, how in BLOSC_LIES:
            if s.sharded:
                fn = _inner_lie(fn)

            def build(d: str, b: Builder, s: Setup = s, fn: Callable[[bytes], bytes] = fn) -> None:
                a = b.copy(s.name, os.path.join(d, "a.zarr"))
                p = chunk_path(a, s.key)
                write_bytes(p, fn(read_bytes(p)))
            out.append(Case("blosc/%s/%s" % (s.name, lname), "blosc", s.name, build, how, names=(s.key,),
                            any_name=("blosc",)))
    return out


# --- shard index tricks (the index's crc32c recomputed, so only the entries lie) ---------------------------------
def _crc32c_table() -> List[int]:
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC32C = _crc32c_table()


def crc32c(b: bytes) -> int:
    c = 0xFFFFFFFF
    for x in b:
        c = _CRC32C[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


NENT = 2  # inner chunks per shard
ALL1 = 0xFFFFFFFFFFFFFFFF


def _index(b: bytes) -> List[List[int]]:
    raw = b[len(b) - (16 * NENT + 4):len(b) - 4]
    return [list(struct.unpack_from("<QQ", raw, 16 * i)) for i in range(NENT)]


def _with_index(b: bytes, ents: List[List[int]], fix_crc: bool = True) -> bytes:
    body = b[:len(b) - (16 * NENT + 4)]
    raw = b"".join(struct.pack("<QQ", o & ALL1, n & ALL1) for o, n in ents)
    crc = struct.pack("<I", crc32c(raw)) if fix_crc else b[-4:]
    return body + raw + crc


def _edit(fn: Callable[[List[List[int]], int], None], fix_crc: bool = True) -> Callable[[bytes], bytes]:
    def f(b: bytes) -> bytes:
        e = _index(b)
        fn(e, len(b))
        return _with_index(b, e, fix_crc)
    return f


def _set(i: int, off: Optional[int] = None, n: Optional[int] = None, off_f: Any = None, n_f: Any = None):
    def f(e: List[List[int]], size: int) -> None:
        if off is not None:
            e[i][0] = off
        if n is not None:
            e[i][1] = n
        if off_f is not None:
            e[i][0] = off_f(e, size)
        if n_f is not None:
            e[i][1] = n_f(e, size)
    return f


def _flip_byte(at: Callable[[int], int]) -> Callable[[bytes], bytes]:
    def f(b: bytes) -> bytes:
        x = bytearray(b)
        x[at(len(b))] ^= 0x10
        return bytes(x)
    return f


SHARD_TRICKS: List[Tuple[str, Callable[[bytes], bytes], str]] = [
    ("offset-past-end", _edit(_set(1, off_f=lambda e, n: n + 100)), "error"),
    ("offset-at-index", _edit(_set(1, off_f=lambda e, n: n - 36)), "error"),
    ("length-past-end", _edit(_set(1, n_f=lambda e, n: n)), "error"),
    ("length-huge", _edit(_set(1, n=1 << 62)), "error"),
    ("offset-huge", _edit(_set(1, off=1 << 63)), "error"),
    ("offset-wraps", _edit(_set(1, off=ALL1 - 7, n=64)), "error"),
    ("length-0", _edit(_set(1, n=0)), "error"),
    ("length-minus1", _edit(_set(1, n_f=lambda e, n: e[1][1] - 1)), "error"),
    ("length-plus1", _edit(_set(1, n_f=lambda e, n: e[1][1] + 1)), "error"),  # gzip inner: "same", below
    ("offset-ones-only", _edit(_set(1, off=ALL1)), "error"),
    ("length-ones-only", _edit(_set(1, n=ALL1)), "error"),
    ("index-crc-flip", _flip_byte(lambda n: n - 2), "error"),
    ("index-entry-flip-nocrc", _flip_byte(lambda n: n - 36 + 9), "error"),
    ("index-truncated", lambda b: b[-20:], "error"),
    ("index-only", lambda b: b[-36:], "error"),
]


def shard_cases() -> List[Case]:
    out = []
    for name in ("v3-shard-raw", "v3-shard-zstd", "v3-shard-gzip", "v3-shard-blosc-lz4"):
        s = SETUP_BY_NAME[name]
        sd = s.data()
        for tname, fn, how in SHARD_TRICKS:
            def build(d: str, b: Builder, s: Setup = s, fn: Callable[[bytes], bytes] = fn) -> None:
                a = b.copy(s.name, os.path.join(d, "a.zarr"))
                p = chunk_path(a, s.key)
                write_bytes(p, fn(read_bytes(p)))
            if tname == "length-plus1" and name == "v3-shard-gzip":
                how = "same"  # the extra byte is the index's first, a zero: gzip's tolerated padding
            out.append(Case("shard/%s/%s" % (name, tname), "shard", name, build, how, names=(s.key,),
                            any_name=("sharding_indexed",) + s.codecs, values=_values_with(s, None)))
        # Valid tricks: overlapping entries (inner chunk 1 = inner chunk 0's bytes), a missing inner chunk
        # (all-ones entry: the fill value), a whole index of missing chunks.
        shard_vals = sd[s.region].copy()
        overlap = shard_vals.copy()
        overlap[32:64] = shard_vals[0:32]
        missing1 = shard_vals.copy()
        missing1[32:64] = 0
        for tname, fn, vals in [
            ("overlap", _edit(lambda e, n: e.__setitem__(1, list(e[0]))), overlap),
            ("missing-one", _edit(_set(1, off=ALL1, n=ALL1)), missing1),
            ("missing-all", _edit(lambda e, n: [x.__setitem__(slice(None), [ALL1, ALL1]) for x in e]),
             np.zeros_like(shard_vals)),
        ]:
            def build(d: str, b: Builder, s: Setup = s, fn: Callable[[bytes], bytes] = fn) -> None:
                a = b.copy(s.name, os.path.join(d, "a.zarr"))
                p = chunk_path(a, s.key)
                write_bytes(p, fn(read_bytes(p)))
            out.append(Case("shard/%s/%s" % (name, tname), "shard", name, build, "ok",
                            values=_values_with(s, vals)))
    return out


# --- hostile metadata ----------------------------------------------------------------------------------------------
def _override(d: Dict[str, Any], over: Dict[str, Any]) -> Dict[str, Any]:
    """d with the members of `over` set (or, given as _DROP, removed)."""
    for k, v in over.items():
        if v is _DROP:
            d.pop(k, None)
        else:
            d[k] = v
    return d


def _v3doc(**over: Any) -> Dict[str, Any]:
    d: Dict[str, Any] = {
        "zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [BYTES], "attributes": {}}
    return _override(d, over)


def _v2doc(**over: Any) -> Dict[str, Any]:
    d: Dict[str, Any] = {"zarr_format": 2, "shape": [8, 8], "chunks": [4, 4], "dtype": "<i4", "compressor": None,
                         "fill_value": 0, "order": "C", "filters": None}
    return _override(d, over)


def _nested_fields(depth: int) -> Any:
    t: Any = "<i4"
    for _ in range(depth):
        t = [["x", t]]
    return t


_DROP = object()
BAD = ("BadMetadataError",)
BAD_OR_UNSUP = ("BadMetadataError", "UnsupportedError")
UNSUP = ("UnsupportedError",)


def _grid(*c: Any) -> Dict[str, Any]:
    return {"name": "regular", "configuration": {"chunk_shape": list(c)}}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _metadata_table() -> List[Tuple[str, int, Any, Tuple[str, ...]]]:
    """(name, zarr_format, document (dict, or text/bytes as stored), expected error classes)"""
    t: List[Tuple[str, int, Any, Tuple[str, ...]]] = [
        ("v3-not-json", 3, "{", BAD),
        ("v3-empty-object", 3, "{}", BAD),
        ("v3-top-array", 3, "[]", BAD),
        ("v3-invalid-utf8", 3, b'{"zarr_format": 3, "node_type": "array\xff"}', BAD),
        ("v3-nul-byte-text", 3, json.dumps(_v3doc()).replace('"attributes"', '"attri\\u0000butes"'), BAD_OR_UNSUP),
        ("v3-deep-nesting", 3, '{"zarr_format": 3, "node_type": "array", "attributes": {"a": %s}}'
         % _nested(100000), BAD),
        ("v3-deep-attrs-valid-array", 3, json.dumps(_v3doc())[:-1] + ', "x": ' + _nested(100000) + "}", BAD),
        ("v3-zarr-format-4", 3, _v3doc(zarr_format=4), BAD_OR_UNSUP),
        ("v3-zarr-format-string", 3, _v3doc(zarr_format="3"), BAD),
        ("v3-node-type-missing", 3, _v3doc(node_type=_DROP), BAD),
        ("v3-node-type-bad", 3, _v3doc(node_type="arrayx"), BAD),
        ("v3-shape-missing", 3, _v3doc(shape=_DROP), BAD),
        ("v3-shape-negative", 3, _v3doc(shape=[-1, 8]), BAD),
        ("v3-shape-float", 3, _v3doc(shape=[8.5, 8]), BAD),
        ("v3-shape-string", 3, _v3doc(shape="8,8"), BAD),
        ("v3-shape-2pow64", 3, _v3doc(shape=[2 ** 64, 8]), BAD),
        ("v3-shape-product-overflow", 3, _v3doc(shape=[2 ** 62, 2 ** 62], chunk_grid=_grid(1, 1)), BAD),
        ("v3-ndim-mismatch", 3, _v3doc(chunk_grid=_grid(4)), BAD),
        ("v3-chunk-zero", 3, _v3doc(chunk_grid=_grid(0, 4)), BAD),
        ("v3-chunk-negative", 3, _v3doc(chunk_grid=_grid(-4, 4)), BAD),
        ("v3-chunk-2pow64", 3, _v3doc(chunk_grid=_grid(2 ** 64, 4)), BAD),
        ("v3-chunk-huge-bytes", 3, _v3doc(shape=[2 ** 40, 2 ** 40], chunk_grid=_grid(2 ** 40, 2 ** 40)),
         BAD_OR_UNSUP),
        ("v3-grid-irregular", 3, _v3doc(chunk_grid={"name": "rectilinear", "configuration": {}}), BAD_OR_UNSUP),
        ("v3-dtype-unknown", 3, _v3doc(data_type="int33"), BAD_OR_UNSUP),
        ("v3-dtype-nul-suffix", 3, _v3doc(data_type="int32\u0000x"), BAD_OR_UNSUP),
        ("v3-dtype-number", 3, _v3doc(data_type=4), BAD),
        ("v3-dtype-raw-bits-7", 3, _v3doc(data_type="r7"), BAD_OR_UNSUP),
        ("v3-fill-hex-short-float32", 3, _v3doc(data_type="float32", fill_value="0x1234"), BAD),
        ("v3-fill-hex-long-float32", 3, _v3doc(data_type="float32", fill_value="0x1234567890"), BAD),
        ("v3-fill-hex-nonhex", 3, _v3doc(data_type="float32", fill_value="0x12zz5678"), BAD),
        ("v3-fill-string-int", 3, _v3doc(fill_value="abc"), BAD),
        ("v3-fill-out-of-range", 3, _v3doc(data_type="uint8", fill_value=300), BAD),
        ("v3-fill-float-for-int", 3, _v3doc(fill_value=1.5), BAD),
        ("v3-fill-null", 3, _v3doc(fill_value=None), BAD),
        ("v3-fill-missing", 3, _v3doc(fill_value=_DROP), BAD),
        ("v3-fill-bool-list", 3, _v3doc(data_type="bool", fill_value=[True]), BAD),
        ("v3-codecs-missing", 3, _v3doc(codecs=_DROP), BAD),
        ("v3-codecs-empty", 3, _v3doc(codecs=[]), BAD),
        ("v3-codecs-not-list", 3, _v3doc(codecs={"name": "bytes"}), BAD),
        ("v3-codec-unknown", 3, _v3doc(codecs=[BYTES, {"name": "nope"}]), UNSUP),
        ("v3-codec-name-nul", 3, _v3doc(codecs=[BYTES, {"name": "zstd\u0000"}]), BAD_OR_UNSUP),
        ("v3-codec-name-number", 3, _v3doc(codecs=[{"name": 7}]), BAD),
        ("v3-two-serializers", 3, _v3doc(codecs=[BYTES, BYTES]), BAD),
        ("v3-no-serializer", 3, _v3doc(codecs=[_zstd()]), BAD),
        ("v3-compressor-before-serializer", 3, _v3doc(codecs=[_zstd(), BYTES]), BAD),
        ("v3-bytes-endian-middle", 3, _v3doc(codecs=[{"name": "bytes", "configuration": {"endian": "middle"}}]),
         BAD),
        ("v3-bytes-no-endian-int32", 3, _v3doc(codecs=[{"name": "bytes"}]), BAD),
        ("v3-zstd-level-string", 3, _v3doc(codecs=[BYTES, {"name": "zstd", "configuration": {"level": "high"}}]),
         BAD),
        ("v3-zstd-level-1000", 3, _v3doc(codecs=[BYTES, {"name": "zstd", "configuration": {"level": 1000}}]), BAD),
        ("v3-zstd-config-list", 3, _v3doc(codecs=[BYTES, {"name": "zstd", "configuration": [1]}]), BAD),
        ("v3-gzip-level-99", 3, _v3doc(codecs=[BYTES, {"name": "gzip", "configuration": {"level": 99}}]), BAD),
        ("v3-blosc-cname-bad", 3, _v3doc(codecs=[BYTES, {"name": "blosc", "configuration": {
            "cname": "nope", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}]), BAD_OR_UNSUP),
        ("v3-blosc-shuffle-bad", 3, _v3doc(codecs=[BYTES, {"name": "blosc", "configuration": {
            "cname": "lz4", "clevel": 5, "shuffle": "sideways", "typesize": 4, "blocksize": 0}}]), BAD),
        ("v3-blosc-typesize-0", 3, _v3doc(codecs=[BYTES, {"name": "blosc", "configuration": {
            "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 0, "blocksize": 0}}]), BAD),
        ("v3-blosc-clevel-10", 3, _v3doc(codecs=[BYTES, {"name": "blosc", "configuration": {
            "cname": "lz4", "clevel": 10, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}]), BAD),
        ("v3-transpose-dup", 3, _v3doc(codecs=[{"name": "transpose", "configuration": {"order": [0, 0]}}, BYTES]),
         BAD),
        ("v3-transpose-short", 3, _v3doc(codecs=[{"name": "transpose", "configuration": {"order": [0]}}, BYTES]),
         BAD),
        ("v3-transpose-after-bytes", 3, _v3doc(codecs=[BYTES, {"name": "transpose",
                                                                "configuration": {"order": [1, 0]}}]), BAD),
        ("v3-shard-not-dividing", 3, _v3doc(codecs=[{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [3, 4], "codecs": [BYTES], "index_codecs": INDEX}}]), BAD),
        ("v3-shard-ndim", 3, _v3doc(codecs=[{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [4], "codecs": [BYTES], "index_codecs": INDEX}}]), BAD),
        ("v3-shard-index-location", 3, _v3doc(codecs=[{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 2], "codecs": [BYTES], "index_codecs": INDEX, "index_location": "middle"}}]), BAD),
        ("v3-shard-index-compressed", 3, _v3doc(codecs=[{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 2], "codecs": [BYTES], "index_codecs": [BYTES, _zstd()]}}]), BAD_OR_UNSUP),
        ("v3-shard-codecs-missing", 3, _v3doc(codecs=[{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 2], "index_codecs": INDEX}}]), BAD),

        ("v3-delta-dtype-bad", 3, _v3doc(codecs=[{"name": "numcodecs.delta", "configuration": {"dtype": "<x9"}},
                                                 BYTES]), BAD_OR_UNSUP),
        ("v3-key-encoding-bad", 3, _v3doc(chunk_key_encoding={"name": "weird"}), BAD_OR_UNSUP),
        ("v3-key-separator-bad", 3, _v3doc(chunk_key_encoding={"name": "default",
                                                               "configuration": {"separator": "x"}}), BAD),
        ("v3-dimension-names-length", 3, _v3doc(dimension_names=["x"]), BAD),
        ("v3-dimension-names-number", 3, _v3doc(dimension_names=[1, 2]), BAD),
        ("v3-dimension-name-nul", 3, _v3doc(dimension_names=["x\u0000", "y"]), BAD),
        ("v3-storage-transformer", 3, _v3doc(storage_transformers=[{"name": "x"}]), UNSUP),
        ("v3-unknown-key-must-understand", 3, _v3doc(extension_x={"must_understand": True}), BAD_OR_UNSUP),
        ("v3-attributes-not-object", 3, _v3doc(attributes=[1]), BAD),
        ("v2-not-json", 2, "[", BAD),
        ("v2-zarr-format-3", 2, _v2doc(zarr_format=3), BAD),
        ("v2-shape-missing", 2, _v2doc(shape=_DROP), BAD),
        ("v2-chunks-mismatch", 2, _v2doc(chunks=[4]), BAD),
        ("v2-chunks-zero", 2, _v2doc(chunks=[0, 4]), BAD),
        ("v2-dtype-i3", 2, _v2doc(dtype="<i3"), BAD_OR_UNSUP),
        ("v2-dtype-object", 2, _v2doc(dtype="|O"), BAD_OR_UNSUP),
        ("v2-dtype-structured-duplicate", 2, _v2doc(dtype=[["a", "<i4"], ["a", "<i4"]]), BAD),
        ("v2-dtype-structured-huge", 2, _v2doc(dtype=[["a", "<f8", [1 << 30, 1 << 30]]]), UNSUP),
        ("v2-dtype-structured-deep", 2, _v2doc(dtype=_nested_fields(64)), UNSUP),
        ("v2-dtype-structured-object", 2, _v2doc(dtype=[["a", "|O"]]), UNSUP),
        ("v2-dtype-nul", 2, _v2doc(dtype="<i4\u0000"), BAD_OR_UNSUP),
        ("v2-order-z", 2, _v2doc(order="Z"), BAD),
        ("v2-compressor-unknown", 2, _v2doc(compressor={"id": "nope"}), UNSUP),
        ("v2-compressor-no-id", 2, _v2doc(compressor={"level": 1}), BAD),
        ("v2-compressor-zlib-level-string", 2, _v2doc(compressor={"id": "zlib", "level": "x"}), BAD),
        ("v2-filters-not-list", 2, _v2doc(filters={"id": "delta"}), BAD),
        ("v2-filter-unknown", 2, _v2doc(filters=[{"id": "nope"}]), UNSUP),
        ("v2-fill-nan-int", 2, _v2doc(fill_value="NaN"), BAD),
        ("v2-fill-string-int", 2, _v2doc(fill_value="abc"), BAD),
        ("v2-separator-bad", 2, _v2doc(dimension_separator="x"), BAD),
        ("v2-blosc-shuffle-9", 2, _v2doc(compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 9}),
         BAD),
    ]
    return t


def _deep_shard_text(depth: int) -> str:
    """The codecs text of `depth` nested sharding_indexed codecs (text: json.dumps recurses per level)."""
    head = '{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4], "index_codecs": %s, "codecs": [' \
        % json.dumps(INDEX)
    return "[" + head * depth + json.dumps(BYTES) + "]}}" * depth + "]"


def metadata_cases() -> List[Case]:
    out = []
    for name, fmt, doc, errs in _metadata_table():
        def build(d: str, b: Builder, fmt: int = fmt, doc: Any = doc) -> None:
            a = os.path.join(d, "a.zarr")
            os.makedirs(a)
            if isinstance(doc, dict):
                doc = json.dumps(doc)
            data = doc if isinstance(doc, bytes) else doc.encode()
            write_bytes(os.path.join(a, "zarr.json" if fmt == 3 else ".zarray"), data)
        out.append(Case("metadata/%s" % name, "metadata", "v%d" % fmt, build, "error", errors=errs))
    # Sharding nested deep is valid Zarr: a clean error or a read of the fill value, never a crash (in a child:
    # unbounded recursion would take the runner down).
    for depth in (64, 5000):
        def nested(d: str, b: Builder, depth: int = depth) -> None:
            a = os.path.join(d, "a.zarr")
            os.makedirs(a)
            text = json.dumps(_v3doc(codecs="CODECS")).replace('"CODECS"', _deep_shard_text(depth))
            write_bytes(os.path.join(a, "zarr.json"), text.encode())
        out.append(Case("metadata/v3-shard-nested-%d" % depth, "metadata", "v3", nested, "either",
                        errors=BAD_OR_UNSUP, child={"timeout": 60}))
    # A huge but valid shape opens and reads as the fill value (nothing is allocated for it).
    def huge(d: str, b: Builder) -> None:
        a = os.path.join(d, "a.zarr")
        os.makedirs(a)
        write_bytes(os.path.join(a, "zarr.json"), json.dumps(_v3doc(shape=[2 ** 30, 2 ** 30],
                                                                    chunk_grid=_grid(64, 64), fill_value=7)).encode())
    out.append(Case("metadata/v3-huge-shape-valid", "metadata", "v3", huge, "ok",
                    values=lambda _: np.full((2, 3), 7, "int32"), select=(slice(5, 7), slice(2 ** 29, 2 ** 29 + 3))))
    return out


# --- the store: special files, links, permissions ------------------------------------------------------------------
def store_cases() -> List[Case]:
    out = []
    s = SETUP_BY_NAME["v3-zstd"]
    s2 = SETUP_BY_NAME["v2-zlib"]
    IO_OR_CORRUPT = ("ZgpuIOError", "CorruptDataError")
    IO_OR_BAD = ("ZgpuIOError", "BadMetadataError")

    def replace_chunk(maker: Callable[[str], None], setup: Setup = s):
        def build(d: str, b: Builder) -> None:
            a = b.copy(setup.name, os.path.join(d, "a.zarr"))
            p = chunk_path(a, setup.key)
            os.unlink(p)
            maker(p)
        return build

    def replace_meta(maker: Callable[[str], None], setup: Setup = s):
        def build(d: str, b: Builder) -> None:
            a = b.copy(setup.name, os.path.join(d, "a.zarr"))
            p = os.path.join(a, "zarr.json" if setup.zarr_format == 3 else ".zarray")
            os.unlink(p)
            maker(p)
        return build

    def sock(p: str) -> None:
        import socket
        x = socket.socket(socket.AF_UNIX)
        x.bind(p)
        x.close()

    def link_outside(p: str) -> None:  # a chunk that is a link to a valid chunk outside the store
        outside = os.path.join(os.path.dirname(p).split("a.zarr")[0], "outside-chunk")
        shutil.copyfile(os.path.join(os.path.dirname(p), "0"), outside)
        os.symlink(outside, p)

    sub = {"timeout": 20}
    sd = s.data()
    other_vals = _values_with(s, sd[32:64, 0:32])  # the values of chunk c/1/0, the link's target
    # Sharded reads under a low descriptor limit: 64 shards, 2 threads, 20 descriptors (stdio, Python's, the
    # library's own take some): fewer open files, not "Too many open files".
    def many_shards(d: str, b: Builder) -> None:
        import zgpu
        a = zgpu.create(os.path.join(d, "a.zarr"), shape=SHAPE, dtype="int32", chunks=(4, 4), shards=(8, 8),
                        compressors=[_zstd()])
        a[...] = base_data()
    out.append(Case("store/sharded-low-nofile", "store", "v3-shard-zstd", many_shards, "ok",
                    values=lambda _: base_data(), child={"timeout": 60, "nofile": 20}))
    for name, build, exp, errs, names, child, confine, skip_root, values in [
        ("fifo-as-chunk", replace_chunk(os.mkfifo), "error", IO_OR_CORRUPT, (s.key,), sub, False, False, None),
        ("fifo-as-chunk-v2", replace_chunk(os.mkfifo, s2), "error", IO_OR_CORRUPT, (s2.key,), sub, False, False,
         None),
        ("fifo-as-metadata", replace_meta(os.mkfifo), "error", IO_OR_BAD, (), sub, False, False, None),
        ("fifo-as-metadata-v2", replace_meta(os.mkfifo, s2), "error", IO_OR_BAD, (), sub, False, False, None),
        ("socket-as-chunk", replace_chunk(sock), "error", IO_OR_CORRUPT, (s.key,), sub, False, False, None),
        ("dev-zero-as-chunk", replace_chunk(lambda p: os.symlink("/dev/zero", p)), "error", IO_OR_CORRUPT,
         (s.key,), sub, False, False, None),
        ("dev-null-as-chunk", replace_chunk(lambda p: os.symlink("/dev/null", p)), "error", IO_OR_CORRUPT,
         (s.key,), sub, False, False, None),
        ("dev-zero-as-metadata", replace_meta(lambda p: os.symlink("/dev/zero", p)), "error", IO_OR_BAD, (), sub,
         False, False, None),
        ("directory-as-chunk", replace_chunk(os.mkdir), "error", IO_OR_CORRUPT, (s.key,), None, False, False,
         None),
        ("directory-as-chunk-v2", replace_chunk(os.mkdir, s2), "error", IO_OR_CORRUPT, (s2.key,), None, False,
         False, None),
        ("directory-as-metadata", replace_meta(os.mkdir), "error", IO_OR_BAD, (), None, False, False, None),
        ("empty-metadata", replace_meta(lambda p: write_bytes(p, b"")), "error", ("BadMetadataError",), (), None,
         False, False, None),
        ("empty-metadata-v2", replace_meta(lambda p: write_bytes(p, b""), s2), "error", ("BadMetadataError",), (),
         None, False, False, None),
        ("unreadable-chunk", replace_chunk(lambda p: (write_bytes(p, b"x"), os.chmod(p, 0))), "error",
         ("ZgpuIOError",), (s.key,), None, False, True, None),
        ("unreadable-metadata", replace_meta(lambda p: (write_bytes(p, b"{}"), os.chmod(p, 0))), "error",
         ("ZgpuIOError",), (), None, False, True, None),
        ("link-outside-confined", replace_chunk(link_outside), "error", ("ZgpuIOError", "NotFoundError",
                                                                         "CorruptDataError"),
         (s.key,), None, True, False, None),
        ("link-outside-unconfined", replace_chunk(link_outside), "ok", (), (), None, False, False, other_vals),
        ("link-inside-confined", replace_chunk(lambda p: os.symlink("0", p)), "ok", (), (), None, True, False,
         other_vals),
        ("link-dotdot-confined", replace_chunk(lambda p: os.symlink("../../../outside-chunk", p)), "error",
         ("ZgpuIOError", "NotFoundError", "CorruptDataError"), (s.key,), None, True, False, None),
        ("dangling-link-chunk", replace_chunk(lambda p: os.symlink("nowhere", p)), "either", IO_OR_CORRUPT, (),
         None, False, False, None),
        ("link-loop-chunk", replace_chunk(lambda p: os.symlink(os.path.basename(p), p)), "error", IO_OR_CORRUPT,
         (s.key,), None, False, False, None),
    ]:
        if name == "link-dotdot-confined":
            def build(d: str, b: Builder, inner: Callable = build) -> None:
                inner(d, b)  # and the target exists: only the confinement refuses it
                shutil.copyfile(chunk_path(os.path.join(d, "a.zarr"), "c/1/0"), os.path.join(d, "outside-chunk"))
        out.append(Case("store/%s" % name, "store", s.name if "v2" not in name else s2.name, build, exp,
                        errors=errs, names=names, child=child, confine=confine, skip_root=skip_root,
                        values=values))
    return out


# --- memory: decompression bombs of `bomb_bytes` under an address-space limit --------------------------------------
def zstd_rle_bomb(n: int, fcs: Optional[int] = None) -> bytes:
    """A valid zstd frame of RLE blocks decoding to n zero bytes; no content size unless `fcs` (a lie) is given."""
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    if fcs is None:
        out += bytes([0x00, 7 << 3])           # no FCS, not single segment; window 2^17
    else:
        out += bytes([0xC0, 7 << 3]) + struct.pack("<Q", fcs)  # 8-byte FCS
    bs = 1 << 17
    while n > 0:
        k = min(bs, n)
        n -= k
        out += struct.pack("<I", (1 if n == 0 else 0) | (1 << 1) | (k << 3))[:3] + b"\0"
    return bytes(out)


def _deflate_zeros(n: int) -> Tuple[bytes, int]:
    """Raw DEFLATE of n zero bytes, built from one 1 MiB segment repeated (full flushes make them identical)."""
    mib = 1 << 20
    z = bytes(mib)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    seg1 = c.compress(z) + c.flush(zlib.Z_FULL_FLUSH)
    seg = c.compress(z) + c.flush(zlib.Z_FULL_FLUSH)
    assert n % mib == 0
    body = seg1 + seg * (n // mib - 1) + c.flush()
    crc = 0
    for _ in range(n // mib):
        crc = zlib.crc32(z, crc)
    return body, crc


def gzip_bomb(n: int) -> bytes:
    body, crc = _deflate_zeros(n)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + body + struct.pack("<II", crc, n & 0xFFFFFFFF)


def zlib_bomb(n: int) -> bytes:
    body, _ = _deflate_zeros(n)
    return b"\x78\xda" + body + struct.pack(">I", ((n % 65521) << 16) | 1)


def bz2_bomb(n: int) -> bytes:
    """Concatenated bz2 streams of 64 MiB of zeros each (one compressed, repeated)."""
    part = 64 << 20
    one = bz2.compress(bytes(min(part, n)), 9)
    return one * max(1, n // part)


def lz4_bomb(n: int) -> bytes:
    """numcodecs LZ4: 4-byte declared size, then an LZ4 block of one literal and one long match."""
    run = n - 6
    body = bytearray([0x1F, 0x00]) + struct.pack("<H", 1)
    left = run - 4 - 15  # the match's length past the token's 4 + 15
    body += b"\xff" * (left // 255) + bytes([left % 255])
    body += bytes([0x50]) + b"\0" * 5  # last sequence: five literals
    return struct.pack("<I", n) + bytes(body)


MEMORY_BOMBS: List[Tuple[str, str, str]] = [
    # (case, set-up, bomb maker)
    ("zstd-rle", "v3-zstd", "zstd"), ("zstd-rle-fcs-lie", "v3-zstd", "zstd-fcs"),
    ("shuffle-zstd", "v3-shuffle-zstd", "zstd"), ("shuffle-bz2", "v3-shuffle-bz2", "bz2"),
    ("shuffle-gzip", "v3-shuffle-gzip", "gzip"), ("delta-zstd", "v3-delta-zstd", "zstd"),
    ("transpose-zstd", "v3-transpose-zstd", "zstd"), ("gzip", "v3-gzip", "gzip"), ("zlib-v2", "v2-zlib", "zlib"),
    ("bz2-v2", "v2-bz2", "bz2"), ("lz4-v2", "v2-lz4", "lz4"), ("shard-then-zstd", "v3-shard-then-zstd", "zstd"),
    ("shard-then-gzip", "v3-shard-then-gzip", "gzip"), ("v2-shuffle-zstd", "v2-shuffle-zstd", "zstd"),
    ("v2-delta-zlib", "v2-delta-zlib", "zlib"),
]


def memory_cases(bomb_bytes: int) -> List[Case]:
    out = []
    makers = {"zstd": lambda n: zstd_rle_bomb(n), "zstd-fcs": lambda n: zstd_rle_bomb(n, fcs=n),
              "gzip": gzip_bomb, "zlib": zlib_bomb, "bz2": bz2_bomb, "lz4": lz4_bomb}
    for cname, sname, maker in MEMORY_BOMBS:
        s = SETUP_BY_NAME[sname]

        def build(d: str, b: Builder, s: Setup = s, maker: str = maker) -> None:
            a = b.copy(s.name, os.path.join(d, "a.zarr"))
            blob = b.cached("%s-%d" % (maker, b.bomb_bytes), lambda: makers[maker](b.bomb_bytes))
            write_bytes(chunk_path(a, s.key), blob)
        # the limit: what the process had after a warm-up read, plus a quarter of the bomb (an unbounded decode
        # passes it), so a bounded decode gets through and an unbounded one fails with ZgpuMemoryError
        out.append(Case("memory/%s" % cname, "memory", sname, build, "error", names=(s.key,), any_name=s.codecs,
                        child={"timeout": 120, "rlimit_extra": bomb_bytes // 4}))
    return out


# ---------------------------------------------------------------------------------------------------------------
def all_cases(full: bool) -> List[Case]:
    bomb = (1 << 30) if full else (256 << 20)
    cases = (chunk_cases() + sweep_cases(1 if full else 16) + blosc_cases() + shard_cases() + metadata_cases()
             + store_cases() + memory_cases(bomb))
    _mark_fast(cases)
    return cases


def bomb_bytes(full: bool) -> int:
    return (1 << 30) if full else (256 << 20)


def _mark_fast(cases: List[Case]) -> None:
    """The fast subset: every case of the small families, and of the chunk and blosc families a deterministic
    sample that still holds every set-up and every kind of damage at least once."""
    seen_setup: Dict[Tuple[str, str], bool] = {}
    seen_kind: Dict[Tuple[str, str], bool] = {}
    for c in cases:
        if c.family not in ("chunk", "blosc"):
            c.fast = True
            continue
        kind = c.id.rsplit("/", 1)[1]
        h = int(hashlib.sha1(c.id.encode()).hexdigest()[:8], 16)
        pick = h % 5 == 0
        if not seen_setup.get((c.family, c.setup)) or not seen_kind.get((c.family, kind)):
            pick = True
        if pick:
            c.fast = True
            seen_setup[(c.family, c.setup)] = True
            seen_kind[(c.family, kind)] = True
