"""Zarr arrays written by zarr-python 3.1.6 + numcodecs, covering every feature zgpu reads.

Each fixture is a `Case`: a name, a function that writes the array at a path, and the regions the read
tests cut out of it. zarr-python is the reference: the tests compare what `zgpu read` returns with what
zarr-python returns for the same array (not with the data that was written, so fill values, missing
chunks and lossy filters are judged by zarr-python's own reading).

Usable on its own: `python gen_fixtures.py OUTDIR` writes every fixture under OUTDIR.
"""
from __future__ import annotations

import json
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numcodecs
import numpy as np
import zarr
import zarr.codecs as zc

try:  # numcodecs codecs wrapped for Zarr v3 ("numcodecs.zlib", ...); zarr 3.1 ships them here
    import zarr.codecs.numcodecs as zn
except ImportError:  # pragma: no cover - older zarr
    import numcodecs.zarr3 as zn

warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", category=RuntimeWarning)
try:
    from zarr.errors import ZarrUserWarning  # zarr >= 3.1 warns on numcodecs codecs in v3 metadata
    warnings.filterwarnings("ignore", category=ZarrUserWarning)
except ImportError:  # pragma: no cover
    pass

# Every data type zgpu supports (Zarr v3 names; v2 uses the NumPy typestring of the same type).
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
BLOSC_CNAMES = ["lz4", "lz4hc", "blosclz", "zstd", "zlib"]
BLOSC_SHUFFLES = ["noshuffle", "shuffle", "bitshuffle"]


@dataclass
class Case:
    name: str
    build: Callable[[str], None]  # writes the array at the given path
    regions: list[str] = field(default_factory=list)  # --region strings besides the whole array
    zarr_format: int = 3
    # Codec names that must appear in the stored metadata (a check that the fixture is what it claims).
    codec_names: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------------
# Sample data
# ---------------------------------------------------------------------------------------------------
def sample(dtype, shape, seed: int = 0) -> np.ndarray:
    """Deterministic values of `dtype` spanning its range, with the special floats sprinkled in."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        flat = rng.random(n) < 0.4
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        flat = rng.integers(info.min, info.max, size=n, dtype=dt.newbyteorder("="), endpoint=True)
        # runs of small values too, so compressors and delta filters see realistic data
        flat[: n // 2] = (np.arange(n // 2) % 97).astype(flat.dtype)
    elif dt.kind == "f":
        flat = (rng.standard_normal(n) * 1000.0).astype(dt.newbyteorder("="))
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, np.finfo(dt).tiny, np.finfo(dt).max,
                             np.finfo(dt).smallest_subnormal], dtype=flat.dtype)
        k = min(n, specials.size)
        flat[np.linspace(0, n - 1, k, dtype=np.int64)] = specials[:k]
    elif dt.kind == "c":
        part = np.dtype(f"f{dt.itemsize // 2}")
        re = (rng.standard_normal(n) * 100.0).astype(part)
        im = (rng.standard_normal(n) * 100.0).astype(part)
        flat = (re + 1j * im).astype(dt.newbyteorder("="))
        if n >= 3:
            flat[0] = complex(np.nan, 1.0)
            flat[n // 2] = complex(-0.0, np.inf)
    elif dt.kind == "V":
        flat = np.frombuffer(rng.integers(0, 256, size=n * dt.itemsize, dtype=np.uint8).tobytes(), dtype=dt)
    else:
        raise TypeError(dt)
    return flat.reshape(shape)


def v2_typestr(name: str, big_endian: bool = False) -> str:
    dt = np.dtype(name)
    if dt.itemsize == 1:
        return dt.str  # '|b1', '|i1', '|u1'
    return dt.newbyteorder(">" if big_endian else "<").str


def write_meta(path: str, fmt: int, edit: Callable[[dict], None]) -> None:
    """Edits the stored metadata document in place (for forms zarr-python accepts but does not write)."""
    f = os.path.join(path, "zarr.json" if fmt == 3 else ".zarray")
    with open(f) as fh:
        doc = json.load(fh)
    edit(doc)
    with open(f, "w") as fh:
        json.dump(doc, fh, indent=2)


def regions_for(shape, chunks) -> list[str]:
    """A few selections: chunk-aligned, unaligned across chunk borders, one element, open-ended, edges."""
    if len(shape) == 0 or any(s == 0 for s in shape):
        return []
    out = []
    # unaligned box crossing chunk borders
    out.append(",".join(f"{min(1, s - 1)}:{max(min(1, s - 1) + 1, s - 1)}" for s in shape))
    # one element in the middle
    out.append(",".join(f"{s // 2}:{s // 2 + 1}" for s in shape))
    # chunk-aligned first chunk
    out.append(",".join(f"0:{min(c, s)}" for s, c in zip(shape, chunks)))
    # open-ended: last partial (edge) chunk region, start only / end only forms
    parts = []
    for i, (s, c) in enumerate(zip(shape, chunks)):
        start = max(0, s - c // 2 - 1)
        parts.append(f"{start}:" if i % 2 == 0 else f":{s}")
    out.append(",".join(parts))
    # a thin slab through the middle along the first axis (full extent elsewhere)
    out.append(",".join([f"{shape[0] // 2}:{shape[0] // 2 + 1}"] + [":"] * (len(shape) - 1)))
    return out


# ---------------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------------
def _v3(shape, chunks, dtype, *, data=None, shards=None, serializer="auto", filters="auto", compressors="auto",
        fill_value=None, chunk_key_encoding=None, write=None, attributes=None, dimension_names=None, edit=None):
    def build(path):
        kw = {}
        if chunk_key_encoding is not None:
            kw["chunk_key_encoding"] = chunk_key_encoding
        if attributes is not None:
            kw["attributes"] = attributes
        if dimension_names is not None:
            kw["dimension_names"] = dimension_names
        a = zarr.create_array(path, shape=shape, chunks=chunks, shards=shards, dtype=dtype, serializer=serializer,
                              filters=filters, compressors=compressors, fill_value=fill_value, zarr_format=3, **kw)
        vals = sample(dtype, shape, seed=len(path)) if data is None else data
        if write is None:
            a[...] = vals
        else:
            write(a, vals)
        if edit is not None:
            write_meta(path, 3, edit)
    return build


def _v2(shape, chunks, dtype, *, order="C", separator=".", compressor=None, filters=None, fill_value=0,
        data=None, write=None, edit=None):
    def build(path):
        a = zarr.create_array(path, shape=shape, chunks=chunks, dtype=dtype, zarr_format=2, order=order,
                              compressors=compressor, filters=filters, fill_value=fill_value,
                              chunk_key_encoding={"name": "v2", "separator": separator})
        vals = sample(dtype, shape, seed=len(path)) if data is None else data
        if write is None:
            a[...] = vals
        else:
            write(a, vals)
        if edit is not None:
            write_meta(path, 2, edit)
    return build


def _partial(a, vals):
    """Writes only some chunks: the rest stay missing and must read as the fill value."""
    sl = tuple(slice(0, max(1, s // 3)) for s in a.shape)
    a[sl] = vals[sl]
    if a.ndim >= 1 and a.shape[0] > 2:
        sl2 = (slice(a.shape[0] - 1, a.shape[0]),) + tuple(slice(s // 2, s) for s in a.shape[1:])
        a[sl2] = vals[sl2]


def _sparse_shard(a, vals):
    """In each written shard leave some inner chunks all fill (they are then absent from the shard index)."""
    out = np.full(a.shape, a.fill_value, dtype=a.dtype)
    out[::2] = vals[::2]  # every other row: with inner chunks of 1 row, half the inner chunks are empty
    a[...] = out


def cases() -> list[Case]:
    C: list[Case] = []

    def add(name, build, shape, chunks, fmt=3, codec_names=(), regions=None):
        C.append(Case(name, build, regions_for(shape, chunks) if regions is None else regions, fmt, codec_names))

    # ---- v3: every dtype, little and big endian, edge chunks ----
    for dt in DTYPES:
        shape, chunks = (13, 17), (5, 6)
        add(f"v3_dtype_{dt}_le_zstd", _v3(shape, chunks, dt, compressors=[zc.ZstdCodec(level=3)]), shape, chunks,
            codec_names=("bytes", "zstd"))
        if np.dtype(dt).itemsize > 1:
            add(f"v3_dtype_{dt}_be_gzip", _v3(shape, chunks, dt, serializer=zc.BytesCodec(endian="big"),
                                              compressors=[zc.GzipCodec(level=6)]), shape, chunks,
                codec_names=("bytes", "gzip"))
    # ---- v3: codecs on a 3-d array ----
    shape3, chunks3 = (9, 20, 31), (4, 8, 16)
    add("v3_bytes_only", _v3(shape3, chunks3, "int32", compressors=None), shape3, chunks3, codec_names=("bytes",))
    add("v3_transpose_zstd", _v3(shape3, chunks3, "uint16", filters=[zc.TransposeCodec(order=(2, 0, 1))],
                                 compressors=[zc.ZstdCodec()]), shape3, chunks3, codec_names=("transpose", "zstd"))
    add("v3_transpose_rev_be", _v3(shape3, chunks3, "float64", filters=[zc.TransposeCodec(order=(2, 1, 0))],
                                   serializer=zc.BytesCodec(endian="big"), compressors=None),
        shape3, chunks3, codec_names=("transpose",))
    for cname in BLOSC_CNAMES:
        for shuf in BLOSC_SHUFFLES:
            dt = "uint16" if shuf != "bitshuffle" else "float32"
            add(f"v3_blosc_{cname}_{shuf}", _v3(shape3, chunks3, dt, compressors=[
                zc.BloscCodec(cname=cname, clevel=5, shuffle=shuf)]), shape3, chunks3, codec_names=("blosc",))
    add("v3_blosc_uint8_bitshuffle", _v3(shape3, chunks3, "uint8", compressors=[
        zc.BloscCodec(cname="lz4", clevel=9, shuffle="bitshuffle")]), shape3, chunks3, codec_names=("blosc",))
    add("v3_blosc_clevel0", _v3(shape3, chunks3, "int64", compressors=[
        zc.BloscCodec(cname="zstd", clevel=0, shuffle="shuffle")]), shape3, chunks3, codec_names=("blosc",))
    for lvl in (1, 9):
        add(f"v3_gzip_{lvl}", _v3(shape3, chunks3, "int16", compressors=[zc.GzipCodec(level=lvl)]), shape3, chunks3,
            codec_names=("gzip",))
    add("v3_zstd_checksum", _v3(shape3, chunks3, "float32", compressors=[zc.ZstdCodec(level=5, checksum=True)]),
        shape3, chunks3, codec_names=("zstd",))
    add("v3_zstd_nochecksum", _v3(shape3, chunks3, "float32", compressors=[zc.ZstdCodec(level=19, checksum=False)]),
        shape3, chunks3, codec_names=("zstd",))
    add("v3_zstd_negative_level", _v3(shape3, chunks3, "uint32", compressors=[zc.ZstdCodec(level=-5)]),
        shape3, chunks3, codec_names=("zstd",))
    add("v3_crc32c_only", _v3(shape3, chunks3, "int8", compressors=[zc.Crc32cCodec()]), shape3, chunks3,
        codec_names=("crc32c",))
    add("v3_zstd_crc32c", _v3(shape3, chunks3, "uint64", compressors=[zc.ZstdCodec(), zc.Crc32cCodec()]),
        shape3, chunks3, codec_names=("zstd", "crc32c"))
    add("v3_gzip_then_blosc", _v3(shape3, chunks3, "int32", compressors=[zc.GzipCodec(level=1), zc.BloscCodec(
        cname="lz4", clevel=3, shuffle="noshuffle")]), shape3, chunks3, codec_names=("gzip", "blosc"))
    # ---- v3: numcodecs codecs through zarr's v3 wrappers ----
    add("v3_numcodecs_zlib", _v3(shape3, chunks3, "int32", compressors=[zn.Zlib(level=4)]), shape3, chunks3,
        codec_names=("numcodecs.zlib",))
    add("v3_numcodecs_bz2", _v3(shape3, chunks3, "uint16", compressors=[zn.BZ2(level=9)]), shape3, chunks3,
        codec_names=("numcodecs.bz2",))
    add("v3_numcodecs_lz4", _v3(shape3, chunks3, "float64", compressors=[zn.LZ4()]), shape3, chunks3,
        codec_names=("numcodecs.lz4",))
    add("v3_numcodecs_shuffle_lz4", _v3(shape3, chunks3, "int32", compressors=[zn.Shuffle(elementsize=4), zn.LZ4()]),
        shape3, chunks3, codec_names=("numcodecs.shuffle", "numcodecs.lz4"))
    add("v3_numcodecs_delta", _v3(shape3, chunks3, "int16", filters=[zn.Delta(dtype="<i2")],
                                  compressors=[zc.ZstdCodec()]), shape3, chunks3, codec_names=("numcodecs.delta",))
    add("v3_numcodecs_delta_u8", _v3(shape3, chunks3, "uint8", filters=[zn.Delta(dtype="|u1")],
                                     compressors=[zn.Zlib(level=1)]), shape3, chunks3,
        codec_names=("numcodecs.delta", "numcodecs.zlib"))
    fso_data = (np.linspace(50.0, 99.0, int(np.prod(shape3))).reshape(shape3) + 0.0137).astype("float64")
    add("v3_numcodecs_fixedscaleoffset_f8",
        _v3(shape3, chunks3, "float64", data=fso_data, compressors=[zc.ZstdCodec()],
            filters=[zn.FixedScaleOffset(offset=50, scale=100, dtype="<f8", astype="<u2")]),
        shape3, chunks3, codec_names=("numcodecs.fixedscaleoffset",))
    add("v3_numcodecs_fixedscaleoffset_f4",
        _v3(shape3, chunks3, "float32", data=fso_data.astype("float32"), compressors=None,
            filters=[zn.FixedScaleOffset(offset=10.5, scale=10, dtype="<f4", astype="<i4")]),
        shape3, chunks3, codec_names=("numcodecs.fixedscaleoffset",))
    # ---- v3: sharding ----
    shp, inner, shard = (40, 36), (5, 6), (10, 12)
    add("v3_shard_end", _v3(shp, inner, "int32", shards=shard, compressors=[zc.ZstdCodec()]), shp, inner,
        codec_names=("sharding_indexed",))
    add("v3_shard_start", _v3(shp, shard, "uint16", compressors=None, serializer=zc.ShardingCodec(
        chunk_shape=inner, codecs=[zc.BytesCodec(), zc.GzipCodec(level=3)], index_location="start")),
        shp, shard, codec_names=("sharding_indexed", "gzip"))
    add("v3_shard_index_no_crc", _v3(shp, shard, "float32", compressors=None, serializer=zc.ShardingCodec(
        chunk_shape=inner, codecs=[zc.BytesCodec(endian="big"), zc.ZstdCodec()], index_codecs=[zc.BytesCodec()])),
        shp, shard, codec_names=("sharding_indexed",))
    add("v3_shard_empty_inner", _v3((40, 36), (1, 6), "int16", shards=(10, 12), fill_value=-7,
                                    compressors=[zc.ZstdCodec()], write=_sparse_shard), shp, (1, 6),
        codec_names=("sharding_indexed",))
    add("v3_shard_missing_shards", _v3(shp, inner, "float64", shards=shard, fill_value=float("nan"),
                                       compressors=[zc.BloscCodec(cname="zstd", shuffle="shuffle")], write=_partial),
        shp, inner, codec_names=("sharding_indexed", "blosc"))
    add("v3_shard_edge", _v3((37, 29), inner, "uint8", shards=shard, compressors=[zc.ZstdCodec()]), (37, 29), inner,
        codec_names=("sharding_indexed",))
    add("v3_shard_nested", _v3(shp, shard, "int32", compressors=None, serializer=zc.ShardingCodec(
        chunk_shape=(5, 12), codecs=[zc.ShardingCodec(chunk_shape=(1, 6), codecs=[zc.BytesCodec(), zc.GzipCodec()])],
        index_location="start")), shp, shard, codec_names=("sharding_indexed",))
    add("v3_shard_transpose_inner", _v3(shp, shard, "uint32", compressors=None, serializer=zc.ShardingCodec(
        chunk_shape=inner, codecs=[zc.TransposeCodec(order=(1, 0)), zc.BytesCodec(), zc.ZstdCodec()])),
        shp, shard, codec_names=("sharding_indexed", "transpose"))
    add("v3_shard_3d", _v3(shape3, (2, 4, 8), "complex64", shards=(4, 8, 16), compressors=[zc.ZstdCodec()]),
        shape3, (2, 4, 8), codec_names=("sharding_indexed",))
    add("v3_shard_then_zstd", _v3(shp, shard, "int64", compressors=[zc.ZstdCodec()], serializer=zc.ShardingCodec(
        chunk_shape=inner, codecs=[zc.BytesCodec()])), shp, shard, codec_names=("sharding_indexed", "zstd"))
    # ---- v3: chunk key encodings, missing chunks, fill values, 0-d, empty ----
    add("v3_key_v2_dot", _v3(shape3, chunks3, "int16", chunk_key_encoding={"name": "v2", "separator": "."}),
        shape3, chunks3)
    add("v3_key_v2_slash", _v3(shape3, chunks3, "int16", chunk_key_encoding={"name": "v2", "separator": "/"}),
        shape3, chunks3)
    add("v3_key_default_dot", _v3(shape3, chunks3, "int16", chunk_key_encoding={"name": "default", "separator": "."}),
        shape3, chunks3)
    add("v3_missing_chunks_int", _v3(shape3, chunks3, "int32", fill_value=-123, write=_partial), shape3, chunks3)
    add("v3_missing_chunks_nan", _v3(shape3, chunks3, "float32", fill_value=float("nan"), write=_partial),
        shape3, chunks3)
    add("v3_missing_chunks_nan_payload", _v3(shape3, chunks3, "float32", fill_value=float("nan"), write=_partial,
                                             edit=lambda d: d.update(fill_value="0x7fc00001")), shape3, chunks3)
    add("v3_missing_chunks_f64_hex", _v3(shape3, chunks3, "float64", fill_value=0.0, write=_partial,
                                         edit=lambda d: d.update(fill_value="0x7ff0000000000123")), shape3, chunks3)
    add("v3_missing_chunks_inf", _v3(shape3, chunks3, "float64", fill_value=float("-inf"), write=_partial),
        shape3, chunks3)
    add("v3_missing_chunks_f16", _v3(shape3, chunks3, "float16", fill_value=float("inf"), write=_partial),
        shape3, chunks3)
    add("v3_missing_chunks_complex", _v3(shape3, chunks3, "complex128", fill_value=complex(1.5, -2.0),
                                         write=_partial), shape3, chunks3)
    add("v3_missing_chunks_bool", _v3(shape3, chunks3, "bool", fill_value=True, write=_partial), shape3, chunks3)
    add("v3_missing_chunks_u64max", _v3(shape3, chunks3, "uint64", fill_value=2**64 - 1, write=_partial),
        shape3, chunks3)
    add("v3_no_chunks_written", _v3(shape3, chunks3, "int8", fill_value=3, write=lambda a, v: None), shape3, chunks3)
    add("v3_all_fill_written", _v3(shape3, chunks3, "uint16", fill_value=9,
                                   write=lambda a, v: a.__setitem__(Ellipsis, 9)), shape3, chunks3)
    add("v3_attrs_dimnames", _v3(shape3, chunks3, "float32", attributes={"units": "m", "nested": {"a": [1, 2]}},
                                 dimension_names=["z", "y", None]), shape3, chunks3)
    add("v3_zero_d", _v3((), (), "float64", data=np.array(3.25), fill_value=1.5), (), ())
    add("v3_zero_d_unwritten", _v3((), (), "int32", fill_value=-9, write=lambda a, v: None), (), ())
    add("v3_empty_2d", _v3((0, 5), (2, 2), "int16"), (0, 5), (2, 2))
    add("v3_empty_last_axis", _v3((7, 0), (3, 3), "float32"), (7, 0), (3, 3))
    add("v3_1d_long", _v3((1000,), (64,), "int64", compressors=[zc.ZstdCodec()]), (1000,), (64,))
    add("v3_4d", _v3((3, 5, 7, 11), (2, 2, 3, 4), "uint16", compressors=[zc.BloscCodec(cname="lz4")]),
        (3, 5, 7, 11), (2, 2, 3, 4))
    add("v3_chunk_larger_than_array", _v3((5, 3), (8, 8), "int32"), (5, 3), (8, 8))
    add("v3_chunk_one", _v3((4, 5), (1, 1), "uint8", compressors=None), (4, 5), (1, 1))

    # ---- v2: every dtype, both byte orders ----
    for dt in DTYPES:
        shape, chunks = (13, 17), (5, 6)
        add(f"v2_dtype_{dt}_le", _v2(shape, chunks, v2_typestr(dt), compressor=None), shape, chunks, fmt=2)
        if np.dtype(dt).itemsize > 1:
            add(f"v2_dtype_{dt}_be_zlib", _v2(shape, chunks, v2_typestr(dt, big_endian=True),
                                              compressor=numcodecs.Zlib(level=5)), shape, chunks, fmt=2)
    add("v2_raw_V3", _v2((13, 7), (5, 3), "|V3", compressor=numcodecs.Zstd(), fill_value=None), (13, 7), (5, 3), fmt=2)
    # ---- v2: order, separator, compressors ----
    for order in ("C", "F"):
        for sep in (".", "/"):
            tag = f"{order}_{'dot' if sep == '.' else 'slash'}"
            add(f"v2_order_{tag}", _v2(shape3, chunks3, "<i4", order=order, separator=sep,
                                       compressor=numcodecs.Zstd(level=1)), shape3, chunks3, fmt=2)
    add("v2_order_F_big_endian", _v2(shape3, chunks3, ">f8", order="F", compressor=numcodecs.GZip(level=5)),
        shape3, chunks3, fmt=2)
    v2_comp = {
        "blosc_lz4_shuffle": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
        "blosc_zstd_bitshuffle": numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
        "blosc_blosclz_noshuffle": numcodecs.Blosc(cname="blosclz", clevel=9, shuffle=numcodecs.Blosc.NOSHUFFLE),
        "blosc_zlib_autoshuffle": numcodecs.Blosc(cname="zlib", clevel=1, shuffle=numcodecs.Blosc.AUTOSHUFFLE),
        "blosc_lz4hc_shuffle": numcodecs.Blosc(cname="lz4hc", clevel=4, shuffle=numcodecs.Blosc.SHUFFLE),
        "zstd": numcodecs.Zstd(level=3),
        "zstd_checksum": numcodecs.Zstd(level=3, checksum=True),
        "zlib": numcodecs.Zlib(level=6),
        "gzip": numcodecs.GZip(level=9),
        "lz4": numcodecs.LZ4(acceleration=1),
        "bz2": numcodecs.BZ2(level=1),
    }
    for tag, comp in v2_comp.items():
        for dt in ("<u2", "<f4"):
            add(f"v2_comp_{tag}_{dt[1:]}", _v2(shape3, chunks3, dt, compressor=comp), shape3, chunks3, fmt=2)
    # ---- v2: filters ----
    add("v2_filter_delta", _v2(shape3, chunks3, "<i2", filters=[numcodecs.Delta(dtype="<i2")],
                               compressor=numcodecs.Zstd()), shape3, chunks3, fmt=2)
    add("v2_filter_delta_be", _v2(shape3, chunks3, ">i4", filters=[numcodecs.Delta(dtype=">i4")],
                                  compressor=numcodecs.Zlib()), shape3, chunks3, fmt=2)
    add("v2_filter_shuffle", _v2(shape3, chunks3, "<f8", filters=[numcodecs.Shuffle(elementsize=8)],
                                 compressor=numcodecs.LZ4()), shape3, chunks3, fmt=2)
    add("v2_filter_fso", _v2(shape3, chunks3, "<f8", data=fso_data, compressor=numcodecs.Zstd(),
                             filters=[numcodecs.FixedScaleOffset(offset=50, scale=100, dtype="<f8", astype="<u2")]),
        shape3, chunks3, fmt=2)
    add("v2_filter_fso_f4_order_F", _v2(shape3, chunks3, "<f4", data=fso_data.astype("<f4"), order="F",
                                        filters=[numcodecs.FixedScaleOffset(offset=10.5, scale=10, dtype="<f4",
                                                                            astype="<i4")]), shape3, chunks3, fmt=2)
    add("v2_filter_chain", _v2(shape3, chunks3, "<u4", compressor=numcodecs.Blosc(cname="lz4", shuffle=0),
                               filters=[numcodecs.Delta(dtype="<u4"), numcodecs.Shuffle(elementsize=4)]),
        shape3, chunks3, fmt=2)
    # ---- v2: fill values, missing chunks, 0-d, empty ----
    add("v2_fill_null_missing", _v2(shape3, chunks3, "<i4", fill_value=None, write=_partial), shape3, chunks3, fmt=2)
    add("v2_fill_nan_missing", _v2(shape3, chunks3, "<f8", fill_value=float("nan"), write=_partial,
                                   compressor=numcodecs.Zstd()), shape3, chunks3, fmt=2)
    add("v2_fill_inf_missing", _v2(shape3, chunks3, ">f4", fill_value=float("inf"), write=_partial), shape3, chunks3,
        fmt=2)
    add("v2_fill_neginf_missing", _v2(shape3, chunks3, "<f2", fill_value=float("-inf"), write=_partial),
        shape3, chunks3, fmt=2)
    add("v2_fill_number_missing", _v2(shape3, chunks3, "<i8", fill_value=-42, write=_partial), shape3, chunks3, fmt=2)
    add("v2_fill_float_missing", _v2(shape3, chunks3, "<f4", fill_value=2.5, write=_partial), shape3, chunks3, fmt=2)
    add("v2_fill_complex_missing", _v2(shape3, chunks3, "<c8", fill_value=complex(1, 2), write=_partial),
        shape3, chunks3, fmt=2)
    add("v2_fill_bool_missing", _v2(shape3, chunks3, "|b1", fill_value=True, write=_partial), shape3, chunks3, fmt=2)
    add("v2_fill_null_float_missing", _v2(shape3, chunks3, "<f8", fill_value=None, write=_partial), shape3, chunks3,
        fmt=2)
    add("v2_fill_nan_string_form", _v2(shape3, chunks3, "<f4", fill_value=float("nan"), write=_partial,
                                       edit=lambda d: d.update(fill_value="NaN")), shape3, chunks3, fmt=2)
    add("v2_no_chunks_written", _v2(shape3, chunks3, "<u2", fill_value=77, write=lambda a, v: None), shape3, chunks3,
        fmt=2)
    add("v2_zero_d", _v2((), (), "<f8", data=np.array(-2.5), fill_value=1.0), (), (), fmt=2)
    add("v2_zero_d_unwritten", _v2((), (), "<u4", fill_value=7, write=lambda a, v: None), (), (), fmt=2)
    add("v2_empty", _v2((0, 4), (3, 3), "<i2"), (0, 4), (3, 3), fmt=2)
    add("v2_edge_1d", _v2((101,), (10,), "<u8", compressor=numcodecs.Zlib()), (101,), (10,), fmt=2)
    add("v2_attrs", _v2(shape3, chunks3, "<i2", write=lambda a, v: (a.__setitem__(Ellipsis, v),
                                                                     a.attrs.update({"k": [1, 2, 3]}))),
        shape3, chunks3, fmt=2)
    names = [c.name for c in C]
    assert len(names) == len(set(names)), "duplicate fixture names"
    return C


CASES = cases()
CASES_BY_NAME = {c.name: c for c in CASES}


def stored_codec_names(path: str) -> list[str]:
    """Names of the codecs recorded in an array's metadata (v3 codec names, nested ones included; v2 ids)."""
    names: list[str] = []
    if os.path.exists(os.path.join(path, "zarr.json")):
        with open(os.path.join(path, "zarr.json")) as fh:
            doc = json.load(fh)

        def walk(codecs):
            for c in codecs:
                names.append(c["name"])
                cfg = c.get("configuration") or {}
                for key in ("codecs", "index_codecs"):
                    if key in cfg:
                        walk(cfg[key])
        walk(doc["codecs"])
    else:
        with open(os.path.join(path, ".zarray")) as fh:
            doc = json.load(fh)
        for f in doc.get("filters") or []:
            names.append(f["id"])
        if doc.get("compressor"):
            names.append(doc["compressor"]["id"])
    return names


def generate(root: str, names=None) -> dict[str, str]:
    """Writes the fixtures (all, or those named) under root; returns name -> path."""
    out = {}
    for case in CASES:
        if names is not None and case.name not in names:
            continue
        path = os.path.join(root, case.name + ".zarr")
        if not os.path.exists(path):
            case.build(path)
            missing = [n for n in case.codec_names if n not in stored_codec_names(path)]
            assert not missing, f"fixture {case.name}: codecs {missing} not in its metadata"
        out[case.name] = path
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_fixtures.py OUTDIR")
    paths = generate(sys.argv[1])
    print(f"{len(paths)} arrays written under {sys.argv[1]}")
