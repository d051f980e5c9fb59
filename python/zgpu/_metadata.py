"""Building Zarr metadata documents for zgpu.create.

The rules (data type names, v2 typestrings, fill value JSON, codec defaults, chunk guesses, the documents
themselves) are the C library's (include/zgpu_meta.h), shared with the zgpu command. What stays here is the
Python side: accepting NumPy dtypes and scalars, numcodecs / zarr codec objects and zarr-python's argument
forms, and turning them into the C inputs.
"""
from __future__ import annotations

import ctypes
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _capi

lib = _capi.lib


def _c_dtype(dt: np.dtype) -> Tuple[int, int]:
    """(zgpu_dtype, itemsize) of a NumPy dtype, by its typestring (the C library decides what is supported)."""
    if dt.fields is not None:  # records: opaque bytes of their size to the C library
        return _capi.RAW, dt.itemsize
    if dt.subdtype is not None:
        raise _capi.make_error(_capi.ERR_UNSUPPORTED, "data type %s is not supported by zgpu (a subarray type is "
                                                      "not a Zarr data type; as a field of a record it is)" % dt)
    code, size = ctypes.c_int(), ctypes.c_size_t()
    _capi.check(lib.zgpu_dtype_from_typestr(dt.str.encode(), ctypes.byref(code), ctypes.byref(size), None))
    return code.value, size.value


def _numpy_descr(descr: Any) -> Any:
    """A structured dtype's JSON field list ([name, type] or [name, type, shape], nested) as np.dtype takes it."""
    if isinstance(descr, str):
        return descr
    return [(f[0], _numpy_descr(f[1])) + ((tuple(f[2]),) if len(f) > 2 else ()) for f in descr]


def array_dtype(handle: Any) -> np.dtype:
    """The NumPy dtype of an open array's elements as reads produce them (zgpu_array_numpy_dtype): native byte
    order, datetime64 / timedelta64 with their unit, structured records as stored."""
    from . import _vlen
    vlen = _vlen.numpy_dtype(lib.zgpu_array_dtype_name(handle).decode())
    if vlen is not None:
        return vlen
    descr = json.loads(_capi.call_string(lib.zgpu_array_numpy_dtype, handle))
    return np.dtype(_numpy_descr(descr))


def dtype_from_enum(code: int, itemsize: int) -> np.dtype:
    """NumPy dtype (native byte order) of a zgpu_dtype; raw types become void dtypes 'V<n>'."""
    buf = ctypes.create_string_buffer(32)
    _capi.check(lib.zgpu_dtype_typestr(code, itemsize, b"=", buf, len(buf)))
    return np.dtype(buf.value.decode())


def v3_dtype_name(dt: np.dtype) -> str:
    code, size = _c_dtype(np.dtype(dt))
    buf = ctypes.create_string_buffer(32)
    _capi.check(lib.zgpu_dtype_name(code, size, buf, len(buf)))
    return buf.value.decode()


def v2_typestr(dt: np.dtype) -> str:
    dt = np.dtype(dt)
    code, size = _c_dtype(dt)
    buf = ctypes.create_string_buffer(32)
    order = {">": b">", "<": b"<"}.get(dt.byteorder, b"=")  # keeps the byte order the user asked for
    _capi.check(lib.zgpu_dtype_typestr(code, size, order, buf, len(buf)))
    return buf.value.decode()


def _fill_bytes(value: Any, dt: np.dtype) -> bytes:
    """itemsize native-endian bytes of a fill value given as any NumPy-convertible value (or bytes for raw)."""
    if dt.fields is not None and isinstance(value, (tuple, np.void)):
        return np.array(value, dtype=dt).tobytes()  # a record, fields in their stored byte order
    if dt.kind == "V":
        if isinstance(value, (bytes, bytearray)):
            b = bytes(value)
        elif isinstance(value, np.void):
            b = value.tobytes()
        elif isinstance(value, (int, float)) and value == 0:
            b = bytes(dt.itemsize)
        else:
            raise ValueError("fill_value of a raw type must be bytes of length %d" % dt.itemsize)
        if len(b) != dt.itemsize:
            raise ValueError("fill_value has %d bytes, the data type has %d" % (len(b), dt.itemsize))
        return b
    native = dt.newbyteorder("=")
    v = value.astype(native) if isinstance(value, np.ndarray) else np.array(value, dtype=native)
    if v.size != 1:
        raise ValueError("fill_value must be a scalar, got %r" % (value,))
    return v.reshape(()).tobytes()


def fill_json_text(value: Any, dt: np.dtype, zarr_format: int) -> str:
    """The JSON text of a fill value, as zarr-python writes it (None: v2 null, v3 zero)."""
    dt = np.dtype(dt)
    code, size = _c_dtype(dt)
    if value is None:
        return _capi.call_out_string(lib.zgpu_fill_json_from_bytes, None, code, size, zarr_format)
    b = _fill_bytes(value, dt)
    return _capi.call_out_string(lib.zgpu_fill_json_from_bytes, b, code, size, zarr_format)


def fill_json(value: Any, dt: np.dtype, zarr_format: int) -> Any:
    """The JSON form (a Python value) of a fill value, as zarr-python writes it."""
    return json.loads(fill_json_text(value, dt, zarr_format))


def guess_chunks(shape: Sequence[int], itemsize: int, within: Optional[Sequence[int]] = None,
                 target: int = 1 << 20) -> Tuple[int, ...]:
    """zgpu's default chunk shape for chunks of about `target` bytes (the zgpu command uses 4 MiB): the whole
    array under 4 * target, else axes halved slowest first; inside shards (`within`), extents dividing the shard."""
    n = len(shape)
    if n == 0:
        return ()
    out = _capi.u64_array([0] * n)
    lib.zgpu_default_chunks(n, _capi.u64_array(shape), itemsize,
                            _capi.u64_array(within) if within is not None else None, target, out)
    return tuple(int(out[i]) for i in range(n))


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


def _codec_to_plain(c: Any) -> Any:
    """zarr-python codec objects (to_dict) and numcodecs codecs (get_config) become dicts; names stay names."""
    if isinstance(c, (str, dict)):
        return c
    if hasattr(c, "to_dict"):
        return c.to_dict()
    if hasattr(c, "get_config"):
        return c.get_config()
    raise TypeError("a codec must be a name, a dict or a codec object, got %r" % (c,))


def _as_list(x: Any) -> List[Any]:
    if x is None:
        return []
    if isinstance(x, (str, dict)) or not isinstance(x, (list, tuple)):
        return [x]
    return list(x)


def _v2_codec(c: Any, dt: np.dtype) -> Dict[str, Any]:
    """A v2 compressor or filter: a numcodecs object as it is; a name as a codec spec; a v3 form converted."""
    c = _codec_to_plain(c)
    code, size = _c_dtype(dt)
    if isinstance(c, str):
        return json.loads(_capi.call_out_string(lib.zgpu_codec_spec_json, c.encode(), code, size, 2))
    if "id" in c:
        return dict(c)
    if "name" in c:  # v3 form given for a v2 array
        return json.loads(_capi.call_out_string(lib.zgpu_codecs_v3_to_v2, json.dumps([c]).encode()))
    raise ValueError("codec %r has no 'id'" % (c,))


def _chunk_key_encoding(cke: Any, separator: Optional[str]) -> Optional[str]:
    """zarr-python's shorthand {"name": "v2", "separator": "."} -> the v3 object; None = C's default."""
    if cke is None:
        return None
    if isinstance(cke, dict) and "configuration" not in cke:
        sep = cke.get("separator", "/" if cke.get("name") == "default" else ".")
        cke = {"name": cke["name"], "configuration": {"separator": sep}}
    return json.dumps(cke)


class _Spec:
    """A zgpu_array_spec being filled, with the C strings and arrays it points at kept alive beside it."""

    def __init__(self, zarr_format: int, shape: Sequence[int]) -> None:
        self.keep: List[Any] = []
        self.spec = _capi.ArraySpec()
        self.spec.struct_size = ctypes.sizeof(self.spec)
        self.spec.zarr_format = zarr_format
        self.spec.ndim = len(shape)
        self.spec.shape = self.u64(shape)

    def text(self, value: Optional[str]) -> Optional[bytes]:
        if value is None:
            return None
        b = value.encode()
        self.keep.append(b)
        return b

    def u64(self, values: Sequence[int]) -> Any:
        a = _capi.u64_array(values)
        self.keep.append(a)
        return a

    def build(self) -> Dict[str, Any]:
        """The document zgpu_metadata_build makes of the spec."""
        return json.loads(_capi.call_out_string(lib.zgpu_metadata_build, ctypes.byref(self.spec)))


def build_document(shape: Sequence[int], dtype: Any, chunks: Any, shards: Any, fill_value: Any,
                   compressors: Any, filters: Any, serializer: Any, zarr_format: int,
                   attributes: Optional[Dict[str, Any]], dimension_names: Optional[Sequence[Optional[str]]],
                   order: str, chunk_key_encoding: Any, dimension_separator: Optional[str]) -> Dict[str, Any]:
    """The zarr.json (v3) or .zarray + "attributes" (v2) document for zgpu_array_create, built by
    zgpu_metadata_build."""
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("shape must be non-negative, got %r" % (shape,))
    from . import _vlen
    vlen = _vlen.is_vlen_request(dtype)
    if vlen is not None:
        return _build_vlen_document(shape, vlen, chunks, shards, fill_value, compressors, filters, zarr_format,
                                    attributes, dimension_names, chunk_key_encoding, dimension_separator)
    dt = np.dtype(dtype)
    code, size = _c_dtype(dt)
    if order not in ("C", "F"):
        raise ValueError("order must be 'C' or 'F', got %r" % (order,))
    if zarr_format not in (2, 3):
        raise ValueError("zarr_format must be 2 or 3, got %r" % (zarr_format,))
    if dimension_separator not in (None, ".", "/"):
        raise ValueError("dimension_separator must be '.' or '/', got %r" % (dimension_separator,))
    if isinstance(compressors, str) and compressors == "auto":
        compressors = ["zstd"]
    b = _Spec(zarr_format, shape)
    spec, text = b.spec, b.text
    spec.dtype, spec.itemsize = code, size
    spec.big_endian = 1 if dt.byteorder == ">" else 0
    if dt.kind in "Mm":  # datetime64 / timedelta64: the typestring carries the unit (C writes each format's form)
        spec.data_type = text(json.dumps(dt.str))
    elif dt.fields is not None:  # a v2 structured dtype: its field list (C refuses it for v3)
        spec.data_type = text(json.dumps(dt.descr))
    if zarr_format == 2:
        if shards is not None:
            raise ValueError("shards need zarr_format=3 (Zarr v2 has no sharding)")
        if dimension_names is not None:
            raise ValueError("dimension_names need zarr_format=3")
        comps = _as_list(compressors)
        if len(comps) > 1:
            raise ValueError("Zarr v2 arrays take at most one compressor, got %d" % len(comps))
        flt = [_v2_codec(f, dt) for f in _as_list(filters)]
        spec.v2_compressor = text(json.dumps(_v2_codec(comps[0], dt) if comps else None))
        spec.v2_filters = text(json.dumps(flt or None))
        spec.order = order.encode()
        chunk_shape = normalize_chunks(chunks, shape, dt.itemsize)
    else:
        # `order` is a memory-layout preference in zarr-python 3 and is not stored; the same here.
        chain: List[Any] = [_codec_to_plain(f) for f in _as_list(filters)]
        if serializer is not None and serializer != "auto":
            chain.append(_codec_to_plain(serializer))
        chain += [_codec_to_plain(c) for c in _as_list(compressors)]
        spec.codecs = text(json.dumps(chain, allow_nan=True))
        if shards is not None:
            shard_shape = normalize_chunks(shards, shape, dt.itemsize, "shards")
            spec.shards = b.u64(shard_shape)
            chunk_shape = (guess_chunks(shape, dt.itemsize, shard_shape) if chunks is None
                           else normalize_chunks(chunks, shape, dt.itemsize))
        else:
            chunk_shape = normalize_chunks(chunks, shape, dt.itemsize)
        spec.chunk_key_encoding = text(_chunk_key_encoding(chunk_key_encoding, dimension_separator))
        spec.attributes = text(json.dumps(dict(attributes or {}), allow_nan=True))
        if dimension_names is not None:
            spec.dimension_names = text(json.dumps(list(dimension_names)))
    if zarr_format == 2 and attributes:
        spec.attributes = text(json.dumps(dict(attributes), allow_nan=True))
    if dimension_separator:
        spec.separator = dimension_separator.encode()
    spec.chunks = b.u64(chunk_shape)
    spec.fill_value = text(fill_json_text(fill_value, dt, zarr_format))
    return b.build()


def _build_vlen_document(shape: Tuple[int, ...], name: str, chunks: Any, shards: Any, fill_value: Any,
                         compressors: Any, filters: Any, zarr_format: int, attributes: Optional[Dict[str, Any]],
                         dimension_names: Any, chunk_key_encoding: Any, dimension_separator: Optional[str]) -> Dict[str, Any]:
    """build_document for "string" / "variable_length_bytes": the data type by name (C writes v2's "|O" with the
    vlen filter first, v3's vlen codec as serializer), compressors as for other types, no sharding yet. Chunks are
    guessed as for 16-byte elements."""
    from . import _vlen
    if shards is not None:
        raise _capi.make_error(_capi.ERR_UNSUPPORTED, "sharded %s arrays are not supported yet" % name)
    if filters:
        raise _capi.make_error(_capi.ERR_UNSUPPORTED, "filters on %s arrays are not supported" % name)
    if isinstance(compressors, str) and compressors == "auto":
        compressors = ["zstd"]
    b = _Spec(zarr_format, shape)
    spec, text = b.spec, b.text
    spec.data_type = text(json.dumps(name))
    spec.chunks = b.u64(normalize_chunks(chunks, shape, 16))
    comps = _as_list(compressors)
    if zarr_format == 2:
        if len(comps) > 1:
            raise ValueError("Zarr v2 arrays take at most one compressor, got %d" % len(comps))
        raw = np.dtype("V1")
        spec.v2_compressor = text(json.dumps(_v2_codec(comps[0], raw) if comps else None))
    else:
        spec.codecs = text(json.dumps([_codec_to_plain(c) for c in comps]))
        spec.chunk_key_encoding = text(_chunk_key_encoding(chunk_key_encoding, dimension_separator))
        if dimension_names is not None:
            spec.dimension_names = text(json.dumps(list(dimension_names)))
    if attributes:
        spec.attributes = text(json.dumps(dict(attributes), allow_nan=True))
    if dimension_separator:
        spec.separator = dimension_separator.encode()
    spec.fill_value = text(json.dumps(_vlen.fill_json(fill_value, name == _vlen.STRING_NAME)))
    return b.build()


#: zgpu_metadata_convert's flag ZGPU_CONVERT_KEEP_CHUNK_KEYS.
CONVERT_KEEP_CHUNK_KEYS = 1


def convert_document(doc: Any, zarr_format: int, keep_chunk_keys: bool = False) -> Dict[str, Any]:
    """A whole array metadata document (a v3 zarr.json, or a v2 .zarray with an "attributes" member; dict or JSON
    text) in the other Zarr format, by the C library's zgpu_metadata_convert. keep_chunk_keys: the result must
    address the chunks already stored (v2 -> v3 uses chunk_key_encoding "v2"). What the target format cannot
    express (sharding, dimension names in v2, crc32c...) raises zgpu's UnsupportedError naming it."""
    text = doc if isinstance(doc, str) else json.dumps(doc)
    flags = CONVERT_KEEP_CHUNK_KEYS if keep_chunk_keys else 0
    return json.loads(_capi.call_out_string(lib.zgpu_metadata_convert, text.encode(), zarr_format, flags))
