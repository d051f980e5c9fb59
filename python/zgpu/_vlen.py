"""Arrays of variable-length elements (Zarr "string" and "variable_length_bytes"): a box read and written through
zgpu_array_read_vlen / zgpu_array_write_vlen as offsets + bytes, and turned into NumPy arrays here. Strings come as
NumPy StringDType arrays (object arrays on NumPy 1), bytes as object arrays of bytes: what zarr-python returns for
the same array."""
from __future__ import annotations

import ctypes
from typing import Any, Optional, Tuple

import numpy as np

from . import _capi
from ._capi import lib
from ._indexing import normalize
from .errors import UnsupportedError

STRING_NAME, BYTES_NAME = "string", "variable_length_bytes"
_HAS_STRINGDTYPE = hasattr(np.dtypes, "StringDType")


def numpy_dtype(name: str) -> Optional[np.dtype]:
    """The NumPy dtype of a vlen data type name (zgpu_array_dtype_name), None for other types."""
    if name == STRING_NAME:
        return np.dtypes.StringDType() if _HAS_STRINGDTYPE else np.dtype(object)
    if name == BYTES_NAME:
        return np.dtype(object)
    return None


def is_vlen_request(dtype: Any) -> Optional[str]:
    """The vlen data type name a create(dtype=...) asks for, else None: str, "string", NumPy StringDType ("T"),
    "variable_length_bytes", or zarr-python's VariableLengthUTF8 / VariableLengthBytes objects."""
    if dtype is str or (isinstance(dtype, str) and dtype in ("str", STRING_NAME, "T")):
        return STRING_NAME
    if isinstance(dtype, str) and dtype == BYTES_NAME:
        return BYTES_NAME
    kind = type(dtype).__name__
    if kind == "VariableLengthUTF8":
        return STRING_NAME
    if kind == "VariableLengthBytes":
        return BYTES_NAME
    if _HAS_STRINGDTYPE and isinstance(dtype, np.dtypes.StringDType):
        return STRING_NAME
    return None


def _decode(raw: bytes, offs: np.ndarray, strings: bool) -> list:
    if strings:
        return [raw[offs[i]:offs[i + 1]].decode("utf-8") for i in range(len(offs) - 1)]
    return [raw[offs[i]:offs[i + 1]] for i in range(len(offs) - 1)]


def fill_value(handle: Any, strings: bool) -> Any:
    n = ctypes.c_size_t()
    p = lib.zgpu_array_vlen_fill_value(handle, ctypes.byref(n))
    raw = ctypes.string_at(p, n.value)
    return raw.decode("utf-8") if strings else raw


def fill_json(value: Any, strings: bool) -> Any:
    """The JSON of a fill value as zarr-python writes it: the string itself, or base64 of the bytes."""
    import base64
    if value is None or (isinstance(value, (int, float)) and value == 0):
        value = "" if strings else b""
    if strings:
        if not isinstance(value, str):
            raise TypeError("fill_value of a string array must be a str, got %r" % (value,))
        return value
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, (bytes, bytearray, np.bytes_)):
        raise TypeError("fill_value of a variable_length_bytes array must be bytes, got %r" % (value,))
    return base64.standard_b64encode(bytes(value)).decode("ascii")


def _read_box(arr: Any, start: Tuple[int, ...], count: Tuple[int, ...]) -> np.ndarray:
    offs_p = ctypes.POINTER(ctypes.c_uint64)()
    data_p = ctypes.c_void_p()
    size = ctypes.c_size_t()
    n = 1
    for c in count:
        n *= c
    with arr._lock.shared():
        _capi.check(lib.zgpu_array_read_vlen(arr._h(), _capi.u64_array(start), _capi.u64_array(count),
                                             ctypes.byref(offs_p), ctypes.byref(data_p), ctypes.byref(size)))
    try:
        offs = np.ctypeslib.as_array(offs_p, shape=(n + 1,)).copy()
        raw = ctypes.string_at(data_p, size.value)
    finally:
        lib.zgpu_free(ctypes.cast(offs_p, ctypes.c_void_p))
        lib.zgpu_free(data_p)
    out = np.empty(n, dtype=object)
    out[:] = _decode(raw, offs, arr._dtype.kind != "O" or arr._vlen_strings)
    return out.reshape(count).astype(arr._dtype, copy=False)


def read(arr: Any, selection: Any) -> Any:
    from . import _fancy
    if _fancy.is_fancy(selection):
        raise UnsupportedError("array %r: orthogonal and coordinate selections of %s arrays are not supported yet "
                               "(read a slice, then index the NumPy array)" % (arr._path, arr._dtype))
    sel = normalize(selection, arr.shape)
    if sel.empty:
        return np.empty(sel.shape, arr._dtype)
    box = _read_box(arr, tuple(sel.start), tuple(sel.count))
    res = box[sel.view]
    return res.copy() if isinstance(res, np.ndarray) and not sel.dense else res


def _encode(values: np.ndarray, strings: bool) -> Tuple[Any, bytes]:
    items = []
    for v in values.reshape(-1):
        if strings:
            if not isinstance(v, str):
                v = str(v)
            items.append(v.encode("utf-8", "surrogatepass"))
        else:
            if isinstance(v, str):
                raise TypeError("a variable_length_bytes array takes bytes, got the str %r" % (v,))
            items.append(bytes(v))
    lens = np.fromiter((len(b) for b in items), dtype=np.uint64, count=len(items))
    offs = np.zeros(len(items) + 1, dtype=np.uint64)
    np.cumsum(lens, out=offs[1:])
    return offs, b"".join(items)


def write(arr: Any, selection: Any, value: Any) -> None:
    from . import _fancy
    if _fancy.is_fancy(selection):
        raise UnsupportedError("array %r: orthogonal and coordinate selections of %s arrays are not supported yet"
                               % (arr._path, arr._dtype))
    sel = normalize(selection, arr.shape)
    strings = arr._vlen_strings
    val = np.asarray(value, dtype=object if not strings or not _HAS_STRINGDTYPE else arr._dtype)
    if sel.empty:
        np.broadcast_to(val, sel.shape)
        return
    src = np.broadcast_to(val, sel.shape)
    src = src[()] if src.ndim == 0 else src  # (an object slot takes the element, not a 0-d array holding it)
    if sel.dense:
        box = np.empty(sel.count, dtype=object)
    else:  # a strided selection: read, merge and rewrite the bounding box
        box = _read_box(arr, tuple(sel.start), tuple(sel.count)).astype(object)
    box[sel.view] = src
    offs, data = _encode(box, strings)
    buf = ctypes.create_string_buffer(data, max(1, len(data)))
    with arr._lock.exclusive():
        _capi.check(lib.zgpu_array_write_vlen(arr._h(), _capi.u64_array(sel.start), _capi.u64_array(sel.count),
                                              offs.ctypes.data_as(_capi._u64p), buf))
