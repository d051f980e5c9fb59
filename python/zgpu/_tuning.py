"""zgpu_tuning (include/zgpu_experimental.h): the device path's experimental knobs, as zgpu.config settings.

UNSTABLE, as the C struct: fields may change or go between versions. The defaults are what zgpu measured
fastest (docs/tuning.md); set a field to measure, to work around a problem, or to force a decoder for a test.

Python names are the C field names. Values: decoders and ``zstd_encoder`` as "auto" | "zgpu" | "nvcomp" | "host"
(lz4: no "host"), ``wave_shape`` as a sequence of relative wave sizes (empty = equal waves), ``wave_overlap`` /
``zstd_rows`` / ``partial_decode`` as True / False / None (None = zgpu's default), ``trace`` / ``profile`` as bools,
the rest as ints.
"""
from __future__ import annotations

import ctypes
import operator
from ctypes import POINTER, Structure, c_int, c_size_t, c_uint, c_void_p
from typing import Any, Dict, Mapping, Tuple

from ._capi import lib

MAX_SHAPE = 16  # ZGPU_TUNING_MAX_SHAPE

DECODERS = {"auto": 0, "zgpu": 1, "nvcomp": 2, "host": 3}  # zgpu_decoder_choice
_DECODER_NAMES = {v: k for k, v in DECODERS.items()}
_SWITCH = {None: 0, True: 1, False: 2}  # zgpu_switch: DEFAULT, ON, OFF
_SWITCH_VALUES = {v: k for k, v in _SWITCH.items()}


class Tuning(Structure):
    """zgpu_tuning. Enums are ints; the field order is the C struct's."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("zstd_decoder", c_int), ("deflate_decoder", c_int), ("lz4_decoder", c_int),
        ("pipeline_waves", c_int),
        ("wave_shape", c_uint * MAX_SHAPE),
        ("n_wave_shape", c_int),
        ("wave_sets", c_int),
        ("wave_overlap", c_int),
        ("zstd_rows", c_int),
        ("zstd_huf_probe", c_int),
        ("inflate_parts", c_int),
        ("trace", c_int),
        ("profile", c_int),
        ("copy_slab_bytes", c_size_t),
        ("read_route", c_int),
        ("partial_decode", c_int),
        ("zstd_encoder", c_int),
        ("write_wave_bytes", c_size_t),
        ("host_read_route", c_int),
        ("split_decode", c_int),
        ("pool_spin_us", c_int),
    ]


lib.zgpu_tuning_init.restype = None
lib.zgpu_tuning_init.argtypes = [POINTER(Tuning)]
lib.zgpu_context_tuning.restype = None
lib.zgpu_context_tuning.argtypes = [c_void_p, POINTER(Tuning)]


def _check_layout() -> None:
    """zgpu_tuning_init writes sizeof(zgpu_tuning) bytes: a library whose struct differs from this mirror would
    write past it, so the size is read first into a buffer with room to spare."""
    scratch = (ctypes.c_char * 4096)()
    lib.zgpu_tuning_init(ctypes.cast(scratch, POINTER(Tuning)))
    size = c_size_t.from_buffer(scratch).value
    if size != ctypes.sizeof(Tuning):
        raise ImportError("zgpu: the loaded libzgpu's zgpu_tuning is %d bytes, this package's mirror %d: the "
                          "library and the Python package are of different versions" % (size, ctypes.sizeof(Tuning)))


_check_layout()

# (python name, default): the order of docs/tuning.md
DEFAULTS: Dict[str, Any] = {
    "zstd_decoder": "auto", "deflate_decoder": "auto", "lz4_decoder": "auto",
    "pipeline_waves": 0, "wave_shape": (), "wave_sets": 0, "wave_overlap": None,
    "zstd_rows": None, "zstd_huf_probe": -1, "inflate_parts": 0,
    "trace": False, "profile": False, "copy_slab_bytes": 0, "read_route": "auto",
    "partial_decode": None, "zstd_encoder": "auto", "write_wave_bytes": 0,
    "host_read_route": "auto", "split_decode": None, "pool_spin_us": 0,
}
ROUTES = {"auto": 0, "device": 1, "host": 2}
_ROUTE_NAMES = {v: k for k, v in ROUTES.items()}
FIELDS = tuple(DEFAULTS)


def _int(name: str, value: Any, lo: int, hi: int, meaning: str = "") -> int:
    if isinstance(value, bool):
        raise ValueError("%s must be an integer, got %r" % (name, value))
    try:
        x = operator.index(value)
    except TypeError:
        raise ValueError("%s must be an integer, got %r" % (name, value)) from None
    if not lo <= x <= hi:
        raise ValueError("%s must be in %d..%d%s, got %d" % (name, lo, hi, meaning, x))
    return x


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool) and value not in (0, 1):
        raise ValueError("%s must be True or False, got %r" % (name, value))
    return bool(value)


def validate(name: str, value: Any) -> Any:
    """The value `value` for field `name` in its canonical Python form (None: the default); ValueError if not
    valid. The ranges are those zgpu_context_create checks (src/api/context.c)."""
    if name not in DEFAULTS:
        raise ValueError("unknown tuning field %r (fields: %s)" % (name, ", ".join(FIELDS)))
    if value is None:
        return DEFAULTS[name]
    if name.endswith(("_decoder", "_encoder")):
        allowed = ("auto", "zgpu", "nvcomp") if name == "lz4_decoder" else tuple(DECODERS)
        if value not in allowed:
            raise ValueError("%s must be one of %s, got %r" % (name, ", ".join(repr(a) for a in allowed), value))
        return value
    if name == "pipeline_waves":
        return _int(name, value, 0, 64, " (0 = zgpu's choice)")
    if name == "wave_shape":
        if isinstance(value, (str, bytes)):
            raise ValueError("wave_shape must be a sequence of integers, got %r" % (value,))
        try:
            parts = tuple(value)
        except TypeError:
            raise ValueError("wave_shape must be a sequence of integers, got %r" % (value,)) from None
        if len(parts) > MAX_SHAPE:
            raise ValueError("wave_shape has %d sizes; at most %d" % (len(parts), MAX_SHAPE))
        return tuple(_int("wave_shape[%d]" % i, p, 1, 1000000) for i, p in enumerate(parts))
    if name == "wave_sets":
        n = _int(name, value, 0, 4, " (0 = as many as the memory budget holds; a read needs two)")
        if n == 1:
            raise ValueError("wave_sets must be 0 or in 2..4 (a read needs two buffer sets), got 1")
        return n
    if name in ("wave_overlap", "zstd_rows", "partial_decode", "split_decode"):
        return _bool(name, value)
    if name == "zstd_huf_probe":
        return _int(name, value, -1, 4096, " (-1 = the default)")
    if name == "inflate_parts":
        return _int(name, value, 0, 1 << 20, " (0 = enough to fill the GPU)")
    if name in ("trace", "profile"):
        return _bool(name, value)
    if name in ("read_route", "host_read_route"):
        if value not in ROUTES:
            raise ValueError("%s must be one of 'auto', 'device', 'host', got %r" % (name, value))
        return value
    if name == "write_wave_bytes":
        return _int(name, value, 0, 1 << 40, " (0 = zgpu's choice)")
    if name == "pool_spin_us":
        return _int(name, value, -1, 1000000, " (0 = zgpu's default, -1 = never)")
    return _int(name, value, 0, (1 << 63) - 1, " (0 = 256 MiB)")  # copy_slab_bytes


def to_struct(settings: Mapping[str, Any]) -> Tuning:
    """A zgpu_tuning with zgpu's defaults and the fields of `settings` (validated values)."""
    t = Tuning()
    lib.zgpu_tuning_init(ctypes.byref(t))
    for name, value in settings.items():
        if name.endswith(("_decoder", "_encoder")):
            setattr(t, name, DECODERS[value])
        elif name == "wave_shape":
            for i, p in enumerate(value):
                t.wave_shape[i] = p
            t.n_wave_shape = len(value)
        elif name in ("wave_overlap", "zstd_rows", "partial_decode", "split_decode"):
            setattr(t, name, _SWITCH[value])
        elif name in ("read_route", "host_read_route"):
            setattr(t, name, ROUTES[value])
        else:
            setattr(t, name, int(value))
    return t


def from_struct(t: Tuning) -> Dict[str, Any]:
    """The fields of a zgpu_tuning in their Python form."""
    out: Dict[str, Any] = {}
    for name in FIELDS:
        if name.endswith(("_decoder", "_encoder")):
            out[name] = _DECODER_NAMES.get(getattr(t, name), getattr(t, name))
        elif name == "wave_shape":
            n = max(0, min(t.n_wave_shape, MAX_SHAPE))
            out[name] = tuple(t.wave_shape[i] for i in range(n))
        elif name in ("wave_overlap", "zstd_rows", "partial_decode", "split_decode"):
            out[name] = _SWITCH_VALUES.get(getattr(t, name), getattr(t, name))
        elif name in ("trace", "profile"):
            out[name] = bool(getattr(t, name))
        elif name in ("read_route", "host_read_route"):
            out[name] = _ROUTE_NAMES.get(getattr(t, name), getattr(t, name))
        else:
            out[name] = getattr(t, name)
    return out


def context_tuning(handle: ctypes.c_void_p) -> Dict[str, Any]:
    """zgpu_context_tuning of a context: its tuning with the environment's overrides."""
    t = Tuning()
    lib.zgpu_context_tuning(handle, ctypes.byref(t))
    return from_struct(t)


def changed(settings: Mapping[str, Any]) -> Tuple[Tuple[str, Any], ...]:
    """The settings that differ from the defaults, in field order (for repr)."""
    return tuple((k, settings[k]) for k in FIELDS if k in settings and settings[k] != DEFAULTS[k])
