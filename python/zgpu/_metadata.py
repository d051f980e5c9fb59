"""Building Zarr metadata documents for zgpu.create: dtypes, fill values, codecs, chunk guesses."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _capi

_V3_NAMES = {
    ("b", 1): "bool", ("i", 1): "int8", ("i", 2): "int16", ("i", 4): "int32", ("i", 8): "int64",
    ("u", 1): "uint8", ("u", 2): "uint16", ("u", 4): "uint32", ("u", 8): "uint64",
    ("f", 2): "float16", ("f", 4): "float32", ("f", 8): "float64",
    ("c", 8): "complex64", ("c", 16): "complex128",
}

_FROM_ENUM = {
    _capi.BOOL: "?", _capi.INT8: "i1", _capi.INT16: "i2", _capi.INT32: "i4", _capi.INT64: "i8",
    _capi.UINT8: "u1", _capi.UINT16: "u2", _capi.UINT32: "u4", _capi.UINT64: "u8",
    _capi.FLOAT16: "f2", _capi.FLOAT32: "f4", _capi.FLOAT64: "f8",
    _capi.COMPLEX64: "c8", _capi.COMPLEX128: "c16",
}


def dtype_from_enum(code: int, itemsize: int) -> np.dtype:
    """NumPy dtype (native byte order) of a zgpu_dtype; raw types become void dtypes 'V<n>'."""
    if code == _capi.RAW:
        return np.dtype("V%d" % itemsize)
    try:
        return np.dtype(_FROM_ENUM[code])
    except KeyError:
        raise _capi.make_error(6, "unknown zgpu data type code %d" % code) from None


def v3_dtype_name(dt: np.dtype) -> str:
    if dt.kind == "V" and dt.fields is None and dt.subdtype is None:
        return "r%d" % (dt.itemsize * 8)
    name = _V3_NAMES.get((dt.kind, dt.itemsize))
    if name is None:
        raise _capi.make_error(6, "data type %s is not supported by zgpu (supported: bool, int8..int64, "
                                  "uint8..uint64, float16/32/64, complex64/128, raw void)" % dt)
    return name


def v2_typestr(dt: np.dtype) -> str:
    v3_dtype_name(dt)  # validates
    if dt.itemsize == 1 or dt.kind == "V":
        return "|" + dt.str[1:]
    return dt.str  # keeps the byte order the user asked for


def _float_json(x: float) -> Any:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(x)


def fill_json(value: Any, dt: np.dtype, zarr_format: int) -> Any:
    """The JSON form of a fill value, as zarr-python writes it."""
    if value is None:
        return None if zarr_format == 2 else fill_json(0, dt, 3)
    if dt.kind == "V":
        if isinstance(value, (bytes, bytearray)):
            b = bytes(value)
        elif isinstance(value, np.void):
            b = value.tobytes()
        elif value == 0:
            b = bytes(dt.itemsize)
        else:
            raise ValueError("fill_value of a raw type must be bytes of length %d" % dt.itemsize)
        if len(b) != dt.itemsize:
            raise ValueError("fill_value has %d bytes, the data type has %d" % (len(b), dt.itemsize))
        if zarr_format == 2:
            import base64
            return base64.b64encode(b).decode()
        return list(b)
    v = np.array(value, dtype=dt.newbyteorder("=")) if not isinstance(value, np.ndarray) else value.astype(dt)
    v = v.reshape(()).item()
    if dt.kind == "b":
        return bool(v)
    if dt.kind in "iu":
        return int(v)
    if dt.kind == "f":
        return _float_json(float(v))
    if dt.kind == "c":
        return [_float_json(v.real), _float_json(v.imag)]
    raise ValueError("cannot encode fill value %r for %s" % (value, dt))


def guess_chunks(shape: Sequence[int], itemsize: int, target: int = 1 << 20) -> Tuple[int, ...]:
    """Chunk shape of about `target` bytes: halve the largest axis until the chunk fits."""
    chunks = [max(1, int(s)) for s in shape]
    while chunks and math.prod(chunks) * itemsize > target:
        i = max(range(len(chunks)), key=lambda k: chunks[k])
        if chunks[i] == 1:
            break
        chunks[i] = (chunks[i] + 1) // 2
    return tuple(chunks)


def normalize_chunks(chunks: Any, shape: Sequence[int], itemsize: int, name: str = "chunks") -> Tuple[int, ...]:
    if chunks is None or chunks == "auto":
        return guess_chunks(shape, itemsize)
    if isinstance(chunks, (int, np.integer)):
        chunks = (int(chunks),) * len(shape)
    chunks = tuple(chunks)
    if len(chunks) != len(shape):
        raise ValueError("%s %r has %d dimensions, the shape %r has %d"
                         % (name, chunks, len(chunks), tuple(shape), len(shape)))
    out = []
    for c, s in zip(chunks, shape):
        if c is None or c == -1:
            c = max(1, int(s))
        c = int(c)
        if c < 1:
            raise ValueError("%s must be positive, got %r" % (name, chunks))
        out.append(c)
    return tuple(out)


_V3_DEFAULTS: Dict[str, Dict[str, Any]] = {
    "zstd": {"level": 0, "checksum": False},
    "gzip": {"level": 5},
    "blosc": {"cname": "zstd", "clevel": 5, "shuffle": "shuffle", "blocksize": 0},
    "crc32c": {},
}
_V2_DEFAULTS: Dict[str, Dict[str, Any]] = {
    "zstd": {"level": 0, "checksum": False},
    "gzip": {"level": 5},
    "zlib": {"level": 5},
    "bz2": {"level": 9},
    "lz4": {"acceleration": 1},
    "blosc": {"cname": "zstd", "clevel": 5, "shuffle": 1, "blocksize": 0},
}


def _codec_to_dict(c: Any) -> Any:
    """zarr-python codec objects (to_dict) and numcodecs codecs (get_config) become dicts."""
    if isinstance(c, (str, dict)):
        return c
    if hasattr(c, "to_dict"):
        return c.to_dict()
    if hasattr(c, "get_config"):
        return c.get_config()
    raise TypeError("a codec must be a name, a dict or a codec object, got %r" % (c,))


def v3_codec(c: Any, dt: np.dtype) -> Dict[str, Any]:
    c = _codec_to_dict(c)
    if isinstance(c, str):
        if c not in _V3_DEFAULTS:
            raise ValueError("unknown codec name %r (known: %s; or pass a dict)" % (c, ", ".join(_V3_DEFAULTS)))
        conf = dict(_V3_DEFAULTS[c])
        if c == "blosc":
            conf["typesize"] = dt.itemsize
        return {"name": c, "configuration": conf} if conf else {"name": c}
    if "id" in c and "name" not in c:
        raise ValueError("codec %r is in Zarr v2 form ({'id': ...}); Zarr v3 codecs are "
                         "{'name': ..., 'configuration': {...}}" % (c,))
    if "name" not in c:
        raise ValueError("codec %r has no 'name'" % (c,))
    out = {"name": c["name"]}
    if c.get("configuration") is not None:
        out["configuration"] = dict(c["configuration"])
    if c["name"] == "blosc":
        conf = dict(_V3_DEFAULTS["blosc"], typesize=dt.itemsize)
        conf.update(out.get("configuration", {}))
        out["configuration"] = conf
    return out


def v2_codec(c: Any) -> Dict[str, Any]:
    c = _codec_to_dict(c)
    if isinstance(c, str):
        if c not in _V2_DEFAULTS:
            raise ValueError("unknown codec name %r (known: %s; or pass a dict)" % (c, ", ".join(_V2_DEFAULTS)))
        return dict(_V2_DEFAULTS[c], id=c)
    if "id" in c:
        return dict(c)
    if "name" in c:  # v3 form given for a v2 array: translate the common case
        return dict(c.get("configuration") or {}, id=c["name"])
    raise ValueError("codec %r has no 'id'" % (c,))


def _as_list(x: Any) -> List[Any]:
    if x is None:
        return []
    if isinstance(x, (str, dict)) or not isinstance(x, (list, tuple)):
        return [x]
    return list(x)


def build_document(shape: Sequence[int], dtype: Any, chunks: Any, shards: Any, fill_value: Any,
                   compressors: Any, filters: Any, serializer: Any, zarr_format: int,
                   attributes: Optional[Dict[str, Any]], dimension_names: Optional[Sequence[Optional[str]]],
                   order: str, chunk_key_encoding: Any, dimension_separator: Optional[str]) -> Dict[str, Any]:
    """The zarr.json (v3) or .zarray + "attributes" (v2) document for zgpu_array_create."""
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("shape must be non-negative, got %r" % (shape,))
    dt = np.dtype(dtype)
    if order not in ("C", "F"):
        raise ValueError("order must be 'C' or 'F', got %r" % (order,))
    if zarr_format not in (2, 3):
        raise ValueError("zarr_format must be 2 or 3, got %r" % (zarr_format,))
    if isinstance(compressors, str) and compressors == "auto":
        compressors = ["zstd"]
    if zarr_format == 2:
        if shards is not None:
            raise ValueError("shards need zarr_format=3 (Zarr v2 has no sharding)")
        if dimension_names is not None:
            raise ValueError("dimension_names need zarr_format=3")
        comps = _as_list(compressors)
        if len(comps) > 1:
            raise ValueError("Zarr v2 arrays take at most one compressor, got %d" % len(comps))
        flt = [v2_codec(f) for f in _as_list(filters)]
        doc: Dict[str, Any] = {
            "zarr_format": 2,
            "shape": list(shape),
            "chunks": list(normalize_chunks(chunks, shape, dt.itemsize)),
            "dtype": v2_typestr(dt),
            "compressor": v2_codec(comps[0]) if comps else None,
            "fill_value": fill_json(fill_value, dt, 2),
            "order": order,
            "filters": flt or None,
            "dimension_separator": dimension_separator or ".",
        }
        if attributes:
            doc["attributes"] = dict(attributes)
        return doc
    # Zarr v3. `order` is a memory-layout preference in zarr-python 3 and is not stored; the same here.
    name = v3_dtype_name(dt)
    array_to_array = [v3_codec(f, dt) for f in _as_list(filters)]
    if serializer is None or serializer == "auto":
        ser: Dict[str, Any] = {"name": "bytes"}
        if dt.itemsize > 1:
            ser["configuration"] = {"endian": "big" if dt.byteorder == ">" else "little"}
    else:
        ser = v3_codec(serializer, dt)
    bytes_to_bytes = [v3_codec(c, dt) for c in _as_list(compressors)]
    inner = array_to_array + [ser] + bytes_to_bytes
    if shards is not None:
        shard_shape = normalize_chunks(shards, shape, dt.itemsize, "shards")
        if chunks is None:
            chunk_shape = guess_chunks(shard_shape, dt.itemsize)
        else:
            chunk_shape = normalize_chunks(chunks, shape, dt.itemsize)
        for s, c in zip(shard_shape, chunk_shape):
            if s % c:
                raise ValueError("shards %r must be a multiple of chunks %r" % (shard_shape, chunk_shape))
        grid = list(shard_shape)
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(chunk_shape),
            "codecs": inner,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}]
    else:
        grid = list(normalize_chunks(chunks, shape, dt.itemsize))
        codecs = inner
    if chunk_key_encoding is None:
        cke: Dict[str, Any] = {"name": "default", "configuration": {"separator": dimension_separator or "/"}}
    elif isinstance(chunk_key_encoding, dict) and "configuration" not in chunk_key_encoding:
        sep = chunk_key_encoding.get("separator", "/" if chunk_key_encoding.get("name") == "default" else ".")
        cke = {"name": chunk_key_encoding["name"], "configuration": {"separator": sep}}
    else:
        cke = dict(chunk_key_encoding)
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        "data_type": name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid}},
        "chunk_key_encoding": cke,
        "fill_value": fill_json(fill_value, dt, 3),
        "codecs": codecs,
        "attributes": dict(attributes or {}),
    }
    if dimension_names is not None:
        dn = list(dimension_names)
        if len(dn) != len(shape):
            raise ValueError("dimension_names has %d entries, the array %d dimensions" % (len(dn), len(shape)))
        doc["dimension_names"] = dn
    return doc
