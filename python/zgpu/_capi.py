"""ctypes binding of include/zgpu.h: every function with its argtypes and restype, in one place.

ctypes.CDLL releases the GIL for the duration of every foreign call, so reads and writes from several
Python threads run in parallel, and an asyncio executor thread never blocks the event loop.

The library is found, in order: the ZGPU_LIB environment variable (a path to libzgpu.so), the CUDA build of an
installed zgpu-cuda13 / zgpu-cuda12 plugin (``pip install zgpu[cu13]``; docs/install.md), the copy packaged in
zgpu/_lib/ by ``pip install`` (built without CUDA in the published wheel), then the build trees of a source
checkout (build/lib, python/build/cmake/lib). ZGPU_VARIANT=cpu|cu12|cu13 picks one variant where several are
installed; by default the one the driver supports (CUDA 13 from driver 580), and a CUDA build that cannot load
(its CUDA runtime missing) gives way to the next with a warning.
"""
from __future__ import annotations

import ctypes
import importlib
import os
import warnings
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int64, c_long, c_size_t, c_uint,
                    c_uint64, c_void_p)
from pathlib import Path
from typing import Any, List, Optional

from .errors import ZgpuError, make_error, register_statuses

# zgpu_dtype enum values
BOOL, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64 = range(1, 10)
FLOAT16, FLOAT32, FLOAT64, COMPLEX64, COMPLEX128, RAW = range(10, 16)
STRING, BYTES = 16, 17  # variable-length (zgpu_array_read_vlen)

# zgpu_gds_mode
GDS_AUTO, GDS_OFF, GDS_ON = 0, 1, 2


class ContextOptions(Structure):
    """zgpu_context_options."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("num_threads", c_int),
        ("device", c_int),
        ("device_memory_budget", c_size_t),
        ("gds_mode", c_int),
        ("gpu_decode", c_int),
        ("gpu_trust_input", c_int),
        ("tuning", c_void_p),  # const zgpu_tuning * (zgpu_experimental.h); NULL = defaults
        ("max_decoded_chunk_bytes", c_size_t),
        ("confine_to_store", c_int),
        ("remote", c_void_p),  # const zgpu_remote_options * (_remote.RemoteOptions); NULL = defaults
        ("cache_bytes", c_size_t),
        ("device_cache_bytes", c_size_t),
    ]


class ReadStats(Structure):
    """zgpu_read_stats."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("plan_s", c_double), ("io_s", c_double), ("h2d_s", c_double), ("decode_s", c_double),
        ("scatter_s", c_double), ("total_s", c_double),
        ("stored_bytes", c_uint64), ("decoded_bytes", c_uint64),
        ("chunks", c_int), ("waves", c_int),
        ("gds_used", c_int), ("gpu_decoded", c_int), ("cpu_decoded", c_int),
        ("cache_hits", c_int), ("cache_misses", c_int), ("route", c_int),
        ("device_cache_hits", c_int),
    ]


class ReadOptions(Structure):
    """zgpu_read_options: conversion on the fly."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("out_dtype", c_int),
        ("scale", c_double), ("offset", c_double),
        ("clamp", c_int),
        ("clamp_min", c_double), ("clamp_max", c_double),
    ]


class ArraySpec(Structure):
    """zgpu_array_spec (zgpu_meta.h): what zgpu_metadata_build builds a document from."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("zarr_format", c_int),
        ("ndim", c_int),
        ("shape", POINTER(c_uint64)),
        ("chunks", POINTER(c_uint64)),
        ("shards", POINTER(c_uint64)),
        ("dtype", c_int),
        ("itemsize", c_size_t),
        ("big_endian", c_int),
        ("codec_spec", c_char_p),
        ("codecs", c_char_p),
        ("v2_compressor", c_char_p),
        ("v2_filters", c_char_p),
        ("fill_value", c_char_p),
        ("attributes", c_char_p),
        ("dimension_names", c_char_p),
        ("chunk_key_encoding", c_char_p),
        ("separator", c_char),
        ("order", c_char),
        ("data_type", c_char_p),  # JSON of the data type in the target format; NULL = dtype and itemsize
    ]


_VARIANTS = ("cu13", "cu12")


def _driver_cuda_version() -> int:
    """The CUDA version the installed driver supports (13000 for 13.0), 0 without a driver. cuDriverGetVersion
    needs no cuInit and no GPU."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        v = c_int(0)
        return v.value if cuda.cuDriverGetVersion(ctypes.byref(v)) == 0 else 0
    except (OSError, AttributeError):
        return 0


def _cuda_plugins() -> List[Any]:
    """The installed CUDA plugins (zgpu_cuda13, zgpu_cuda12 modules) in the order to try them: ZGPU_VARIANT's alone
    when set (none for "cpu"), else the newest CUDA the driver supports first. A plugin of another zgpu version is
    skipped: its library may not match this package's bindings."""
    want = os.environ.get("ZGPU_VARIANT", "").strip().lower()
    if want == "cpu":
        return []
    if want and want not in _VARIANTS:
        warnings.warn("ZGPU_VARIANT=%s: expected cpu, cu12 or cu13; ignored" % want, RuntimeWarning, stacklevel=3)
        want = ""
    names = [want] if want else list(_VARIANTS)
    if not want and 0 < _driver_cuda_version() < 13000:
        names.reverse()  # a CUDA 12 driver cannot run the CUDA 13 build
    from . import __version__
    out = []
    for name in names:
        try:
            mod = importlib.import_module("zgpu_cuda" + name[2:])
        except ImportError:
            continue
        if getattr(mod, "__version__", None) != __version__:
            warnings.warn("zgpu %s cannot use %s %s (install zgpu[%s]==%s): it is skipped"
                          % (__version__, mod.__name__, getattr(mod, "__version__", "?"), name, __version__),
                          RuntimeWarning, stacklevel=3)
            continue
        out.append(mod)
    if want and not out:
        raise ImportError("ZGPU_VARIANT=%s but zgpu-cuda%s %s is not installed (pip install zgpu[%s])"
                          % (want, want[2:], __version__, want))
    return out


def _candidates(plugins: Optional[List[Any]] = None) -> List[Path]:
    here = Path(__file__).resolve().parent
    out: List[Path] = []
    env = os.environ.get("ZGPU_LIB")
    if env:
        out.append(Path(env))
    out.extend(Path(m.library_path()) for m in (_cuda_plugins() if plugins is None else plugins))
    out.append(here / "_lib" / "libzgpu.so")
    repo = here.parent.parent  # python/zgpu -> repository root, when imported from a source checkout
    out.append(repo / "build" / "lib" / "libzgpu.so")
    out.append(repo / "python" / "build" / "cmake" / "lib" / "libzgpu.so")
    return out


def _load() -> ctypes.CDLL:
    env = os.environ.get("ZGPU_LIB")
    found = [] if env else _cuda_plugins()  # (once: its warnings too)
    plugins = {m.library_path(): m for m in found}
    errors = []
    for path in _candidates(found):
        if not path.exists():
            if env and str(path) == env:
                raise ImportError("ZGPU_LIB=%s: no such file" % env)
            continue
        plugin = plugins.get(str(path))
        if plugin is not None:
            plugin.preload()  # the CUDA runtime, NVRTC and nvCOMP of the nvidia-* wheels, by full path
        try:
            loaded = ctypes.CDLL(str(path))
            global PLUGIN
            PLUGIN = plugin
            return loaded
        except OSError as e:  # e.g. a missing dependency (libzstd, libblosc, libcudart)
            errors.append("%s: %s" % (path, e))
            if env and str(path) == env:
                break
            if plugin is not None:
                # the CUDA build cannot load here (no libcudart.so.N): the next candidate, the CPU library, can
                warnings.warn("zgpu: %s could not be loaded (%s); falling back to the next library. Install its "
                              "CUDA runtime with pip install zgpu[cu%d]." % (path, e, plugin.CUDA_MAJOR),
                              RuntimeWarning, stacklevel=2)
    detail = "; ".join(errors) if errors else "looked in: " + ", ".join(str(p) for p in _candidates(found))
    raise ImportError("zgpu: cannot load libzgpu.so (%s). Install with `pip install ./python` from the "
                      "repository root, or set ZGPU_LIB=/path/to/libzgpu.so." % detail)


# the CUDA plugin module (zgpu_cuda13 / zgpu_cuda12) whose library was loaded, else None
PLUGIN: Optional[Any] = None
lib = _load()
LIB_PATH: str = lib._name

_P = POINTER
_u64p = _P(c_uint64)
_i64p = _P(c_int64)
_charpp = _P(c_void_p)  # char ** out-parameters: kept as void* so we can zgpu_free them


def _proto(name: str, restype, *argtypes) -> None:
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_proto("zgpu_version_number", c_uint)
_proto("zgpu_version_string", c_char_p)
_proto("zgpu_status_name", c_char_p, c_int)
_proto("zgpu_last_error", c_char_p)
_proto("zgpu_free", None, c_void_p)
_proto("zgpu_context_options_init", None, _P(ContextOptions))
_proto("zgpu_context_create", c_int, _P(ContextOptions), _P(c_void_p))
_proto("zgpu_context_free", None, c_void_p)
_proto("zgpu_gpu_available", c_int)
_proto("zgpu_array_open", c_int, c_void_p, c_char_p, _P(c_void_p))
_proto("zgpu_array_create", c_int, c_void_p, c_char_p, c_char_p, c_int, _P(c_void_p))
_proto("zgpu_array_commit", c_int, c_void_p)
_proto("zgpu_array_resize", c_int, c_void_p, _u64p)
_proto("zgpu_array_close", None, c_void_p)
_proto("zgpu_array_zarr_format", c_int, c_void_p)
_proto("zgpu_array_ndim", c_int, c_void_p)
_proto("zgpu_array_path", c_char_p, c_void_p)
_proto("zgpu_array_shape", None, c_void_p, _u64p)
_proto("zgpu_array_chunk_shape", None, c_void_p, _u64p)
_proto("zgpu_array_shard_shape", c_int, c_void_p, _u64p)
_proto("zgpu_array_dtype", c_int, c_void_p)
_proto("zgpu_array_itemsize", c_size_t, c_void_p)
_proto("zgpu_array_dtype_name", c_char_p, c_void_p)
_proto("zgpu_array_fill_value", c_void_p, c_void_p)
_proto("zgpu_array_numpy_dtype", c_int, c_void_p, _charpp)
_proto("zgpu_array_read_vlen", c_int, c_void_p, _u64p, _u64p, _P(_P(c_uint64)), _P(c_void_p), _P(c_size_t))
_proto("zgpu_array_write_vlen", c_int, c_void_p, _u64p, _u64p, _u64p, c_void_p)
_proto("zgpu_array_vlen_fill_value", c_void_p, c_void_p, _P(c_size_t))
_proto("zgpu_array_metadata_json", c_int, c_void_p, _charpp)
_proto("zgpu_array_codecs_json", c_int, c_void_p, _charpp)
_proto("zgpu_array_attributes", c_int, c_void_p, _charpp)
_proto("zgpu_array_set_attributes", c_int, c_void_p, c_char_p)
_proto("zgpu_array_storage_info", c_int, c_void_p, _u64p, _u64p)
_proto("zgpu_array_read", c_int, c_void_p, _u64p, _u64p, c_void_p, _i64p)
_proto("zgpu_array_write", c_int, c_void_p, _u64p, _u64p, c_void_p, _i64p)
_proto("zgpu_array_read_device", c_int, c_void_p, _u64p, _u64p, c_void_p, _i64p, c_void_p)
_proto("zgpu_array_read_device_async", c_int, c_void_p, _u64p, _u64p, c_void_p, _i64p, c_void_p,
       _P(c_void_p))
_proto("zgpu_read_options_init", None, _P(ReadOptions))
_proto("zgpu_array_read_regions", c_int, c_void_p, c_size_t, _u64p, _u64p, _P(c_void_p), _i64p, _P(ReadOptions))
_proto("zgpu_array_read_regions_device", c_int, c_void_p, c_size_t, _u64p, _u64p, _P(c_void_p), _i64p, c_void_p,
       _P(ReadOptions), _P(c_void_p))
_proto("zgpu_array_read_ex", c_int, c_void_p, _u64p, _u64p, c_void_p, _i64p, _P(ReadOptions))
_proto("zgpu_array_read_device_ex", c_int, c_void_p, _u64p, _u64p, c_void_p, _i64p, c_void_p, _P(ReadOptions),
       _P(c_void_p))
_proto("zgpu_array_write_device", c_int, c_void_p, _u64p, _u64p, c_void_p, _i64p, c_void_p)
_proto("zgpu_array_write_device_async", c_int, c_void_p, _u64p, _u64p, c_void_p, _i64p, c_void_p, _P(c_void_p))
_proto("zgpu_event_wait", c_int, c_void_p)
_proto("zgpu_event_query", c_int, c_void_p)
_proto("zgpu_event_free", None, c_void_p)
_proto("zgpu_array_last_read_stats", None, c_void_p, _P(ReadStats))
_proto("zgpu_group_open", c_int, c_void_p, c_char_p, _P(c_void_p))
_proto("zgpu_group_create", c_int, c_void_p, c_char_p, c_int, c_char_p, c_int, _P(c_void_p))
_proto("zgpu_group_close", None, c_void_p)
_proto("zgpu_group_zarr_format", c_int, c_void_p)
_proto("zgpu_group_members", c_int, c_void_p, _charpp)
_proto("zgpu_group_attributes", c_int, c_void_p, _charpp)
_proto("zgpu_group_set_attributes", c_int, c_void_p, c_char_p)
_proto("zgpu_group_consolidate", c_int, c_void_p)
_proto("zgpu_group_has_consolidated", c_int, c_void_p, POINTER(c_int))
_proto("zgpu_node_kind", c_int, c_char_p, _P(c_int))
_proto("zgpu_context_node_kind", c_int, c_void_p, c_char_p, _P(c_int))
_proto("zgpu_context_open_node", c_int, c_void_p, c_char_p, _P(c_void_p), _P(c_void_p))
_proto("zgpu_remote_options_init", None, c_void_p)
_proto("zgpu_status_message", c_char_p, c_int)
# zgpu_meta.h: the metadata rules live in C once
_proto("zgpu_dtype_from_name", c_int, c_char_p, _P(c_int), _P(c_size_t))
_proto("zgpu_dtype_name", c_int, c_int, c_size_t, c_char_p, c_size_t)
_proto("zgpu_dtype_from_typestr", c_int, c_char_p, _P(c_int), _P(c_size_t), _P(c_int))
_proto("zgpu_dtype_typestr", c_int, c_int, c_size_t, c_char, c_char_p, c_size_t)
_proto("zgpu_fill_json_from_text", c_int, c_char_p, c_int, c_size_t, c_int, _charpp)
_proto("zgpu_fill_json_from_bytes", c_int, c_void_p, c_int, c_size_t, c_int, _charpp)
_proto("zgpu_codec_spec_json", c_int, c_char_p, c_int, c_size_t, c_int, _charpp)
_proto("zgpu_codecs_v2_to_v3", c_int, c_char_p, c_size_t, _charpp)
_proto("zgpu_codecs_v3_to_v2", c_int, c_char_p, _charpp)
_proto("zgpu_default_chunks", None, c_int, _u64p, c_size_t, _u64p, c_uint64, _u64p)
_proto("zgpu_metadata_build", c_int, _P(ArraySpec), _charpp)
_proto("zgpu_metadata_convert", c_int, c_char_p, c_int, c_uint, _charpp)
_proto("zgpu_max_dims", c_int)
_proto("zgpu_struct_size", c_size_t, c_char_p)
_proto("zgpu_struct_offset", c_long, c_char_p, c_char_p)

#: ZGPU_MAX_DIMS of the loaded library.
MAX_DIMS: int = lib.zgpu_max_dims()


def _statuses():
    """Every status of the loaded library: {number: name}, {number: message} (numbers 0.. until unknown)."""
    names, messages = {}, {}
    for number in range(256):
        name = lib.zgpu_status_name(number).decode()
        if name == "ZGPU_ERR_UNKNOWN":
            break
        names[number] = name
        messages[number] = lib.zgpu_status_message(number).decode()
    return names, messages


_STATUS_NAMES, _STATUS_MESSAGES = _statuses()
register_statuses(_STATUS_NAMES, _STATUS_MESSAGES)
_STATUS = {name: number for number, name in _STATUS_NAMES.items()}
ERR_INVALID_ARGUMENT = _STATUS["ZGPU_ERR_INVALID_ARGUMENT"]
ERR_NOT_FOUND = _STATUS["ZGPU_ERR_NOT_FOUND"]
ERR_UNSUPPORTED = _STATUS["ZGPU_ERR_UNSUPPORTED"]
ERR_BAD_METADATA = _STATUS["ZGPU_ERR_BAD_METADATA"]


def last_error() -> str:
    """The C library's message for the last failed call on this thread."""
    msg = lib.zgpu_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(status: int, cls=None) -> None:
    """Raises the ZgpuError subclass for `status` with the C message; returns on ZGPU_OK.

    Must be called on the thread that made the failing call (the C message is thread-local)."""
    if status != 0:
        msg = last_error() or "zgpu call failed with status %d" % status
        raise make_error(status, msg, cls)


def call_out_string(fn, *args) -> str:
    """Calls fn(*args, char **out), checks the status and returns the string (freed with zgpu_free)."""
    out = c_void_p()
    check(fn(*args, ctypes.byref(out)))
    return take_string(out)


def take_string(ptr: c_void_p) -> str:
    """Decodes a `char **` result and frees it with zgpu_free."""
    if not ptr.value:
        return ""
    try:
        return ctypes.string_at(ptr.value).decode("utf-8")
    finally:
        lib.zgpu_free(ptr.value)


def call_string(fn, handle) -> str:
    """Calls fn(handle, char **out), checks the status and returns the string."""
    out = c_void_p()
    check(fn(handle, ctypes.byref(out)))
    return take_string(out)


_U64 = [c_uint64 * max(1, k) for k in range(33)]  # (the array types of up to ZGPU_MAX_DIMS values, made once)
_I64 = [c_int64 * max(1, k) for k in range(33)]


def u64_array(values) -> "ctypes.Array":
    vals = values if type(values) in (tuple, list) else list(values)
    n = len(vals)
    return (_U64[n] if n < 33 else c_uint64 * n)(*vals)


def i64_array(values) -> "ctypes.Array":
    vals = values if type(values) in (tuple, list) else list(values)
    n = len(vals)
    return (_I64[n] if n < 33 else c_int64 * n)(*vals)


def path_bytes(path) -> bytes:
    b = os.fsencode(os.fspath(path))
    if b"\0" in b:  # C would stop at the NUL and open another path; os.open raises the same
        raise ValueError(f"embedded null byte in path {path!r}")
    return b


def version() -> str:
    """Version string of the loaded C library."""
    return lib.zgpu_version_string().decode()


def gpu_available() -> bool:
    """True if the loaded library has CUDA support and a CUDA device is usable."""
    return bool(lib.zgpu_gpu_available())


__all__ = ["lib", "check", "last_error", "ZgpuError", "ContextOptions", "ReadStats", "ReadOptions", "ArraySpec", "LIB_PATH",
           "MAX_DIMS"]
