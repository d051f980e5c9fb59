"""Array.read_batch: many selections of one shape read as one batch (zgpu_array_read_regions / _device), into one
stacked array: every chunk the selections need is fetched and decoded once, on the GPU as one batch."""
from __future__ import annotations

import ctypes
import math
from typing import Any, List, Sequence, Tuple

import numpy as np

from . import _capi, _convert, _cuda, _dlpack
from ._capi import lib
from ._device import DeviceArray, c_strides
from ._indexing import box_layout, normalize


class _PlainBoxes:
    """A batch whose every selection is a tuple of one slice of step 1 per axis, with int bounds inside the shape,
    all of one shape (a training loop's crops), read in one go instead of one selection at a time: starts (n * ndim
    values) and the one box's counts (ndim), as Python lists for few boxes, as uint64 arrays for many (Python's time
    for the boxes and their C arrays on the 2-core machine, against one selection at a time: one box 34 -> 11 us,
    8 boxes 81 -> 29 us, 64 patches 0.89 -> 0.15 ms)."""

    def __init__(self, n: int, starts: Any, count: Tuple[int, ...]) -> None:
        self.n = n
        self.starts = starts
        self.count = count

    def __len__(self) -> int:
        return self.n


# From this many selections NumPy's fixed costs are outweighed by its speed a box.
_PLAIN_NUMPY_MIN = 32


def _plain_boxes(arr: Any, selections: Sequence[Any]) -> Any:
    """_PlainBoxes of `selections`, or None where any is something else (then each is parsed on its own)."""
    shape = arr.shape
    ndim = len(shape)
    if not ndim or type(selections) not in (list, tuple) or not selections:
        return None
    if len(selections) < _PLAIN_NUMPY_MIN:
        return _few_plain_boxes(shape, selections)
    bounds: List[Any] = []
    for sel in selections:
        if type(sel) is not tuple or len(sel) != ndim:
            return None
        for s in sel:
            if type(s) is not slice or (s.step is not None and s.step != 1):
                return None
            first, stop = s.start, s.stop
            if (type(first) is not int and not isinstance(first, np.integer)) or \
                    (type(stop) is not int and not isinstance(stop, np.integer)):
                return None  # (None, a float, a bool: the general path's rules and errors)
            bounds.append(first)
            bounds.append(stop)
    try:
        b = np.array(bounds, dtype=np.int64).reshape(len(selections), ndim, 2)
    except (TypeError, ValueError, OverflowError):
        return None
    lo, hi = b[..., 0], b[..., 1]
    if (lo < 0).any() or (hi > np.array(shape, dtype=np.int64)).any() or (hi <= lo).any():
        return None
    counts = hi - lo
    if (counts != counts[0]).any():
        return None  # (the general path names the selection whose shape differs)
    return _PlainBoxes(len(selections), np.ascontiguousarray(lo, dtype=np.uint64),
                       tuple(int(c) for c in counts[0]))


def _few_plain_boxes(shape: Tuple[int, ...], selections: Sequence[Any]) -> Any:
    """_plain_boxes of a few selections, in plain Python."""
    ndim = len(shape)
    starts: List[int] = []
    count: Any = None
    for sel in selections:
        if type(sel) is not tuple or len(sel) != ndim:
            return None
        c = []
        for s, dim in zip(sel, shape):
            if type(s) is not slice or (s.step is not None and s.step != 1):
                return None
            first, stop = s.start, s.stop
            if type(first) is not int:
                if not isinstance(first, np.integer):
                    return None  # (None, a float, a bool: the general path's rules and errors)
                first = int(first)
            if type(stop) is not int:
                if not isinstance(stop, np.integer):
                    return None
                stop = int(stop)
            if first < 0 or stop > dim or stop <= first:
                return None
            starts.append(first)
            c.append(stop - first)
        if count is None:
            count = tuple(c)
        elif tuple(c) != count:
            return None  # (the general path names the selection whose shape differs)
    return _PlainBoxes(len(selections), starts, count)


def _selections(arr: Any, selections: Sequence[Any]) -> Tuple[Any, Tuple[int, ...]]:
    plain = _plain_boxes(arr, selections)
    if plain is not None:
        return plain, plain.count
    try:
        sels = [normalize(s, arr.shape) for s in selections]
    except TypeError:
        raise TypeError("read_batch takes a sequence of selections (NumPy basic indexing each)") from None
    if not sels:
        raise ValueError("read_batch needs at least one selection")
    shape = sels[0].shape
    for i, s in enumerate(sels):
        if s.shape != shape:
            raise ValueError("read_batch: selection %d has shape %r, selection 0 %r (the batch is one stacked array)"
                             % (i, s.shape, shape))
        if not s.dense:
            raise ValueError("read_batch: selection %d has a step other than 1 or -1; read it with read()" % i)
    return sels, shape


def _regions(sels: Any, base: int, strides: Sequence[int], ndim: int) -> Tuple[Any, Any, Any, Any]:
    """The C arrays of zgpu_array_read_regions: starts, counts, destinations (base + i * strides[0] + the box's
    offset) and byte strides per box, for a stacked destination of `strides`."""
    n = len(sels)
    if isinstance(sels, _PlainBoxes):  # (every box at offset 0 of its slot, the destination's strides)
        st = [int(x) if x else _nonzero_stride(strides) for x in strides[1:]]
        step = int(strides[0])
        if isinstance(sels.starts, list):
            return ((ctypes.c_uint64 * (n * ndim))(*sels.starts), (ctypes.c_uint64 * (n * ndim))(*(sels.count * n)),
                    (ctypes.c_void_p * n)(*[base + i * step for i in range(n)]),
                    (ctypes.c_int64 * (n * ndim))(*(st * n)))
        outs_np = (np.int64(base) + np.arange(n, dtype=np.int64) * np.int64(step)).astype(np.uint64)
        return ((ctypes.c_uint64 * (n * ndim)).from_buffer_copy(sels.starts),
                (ctypes.c_uint64 * (n * ndim)).from_buffer_copy(np.tile(np.array(sels.count, dtype=np.uint64), n)),
                (ctypes.c_void_p * n).from_buffer_copy(outs_np),
                (ctypes.c_int64 * (n * ndim)).from_buffer_copy(np.tile(np.array(st, dtype=np.int64), n)))
    starts = (ctypes.c_uint64 * max(1, n * ndim))()
    counts = (ctypes.c_uint64 * max(1, n * ndim))()
    outs = (ctypes.c_void_p * n)()
    box_strides = (ctypes.c_int64 * max(1, n * ndim))()
    for i, s in enumerate(sels):
        layout = box_layout(s, strides[1:])
        assert layout is not None  # (dense: checked)
        st, offset = layout
        outs[i] = base + i * strides[0] + offset
        for d in range(ndim):
            starts[i * ndim + d] = s.start[d]
            counts[i * ndim + d] = s.count[d]
            # an axis selected by an integer has one element: any non-zero stride will do
            box_strides[i * ndim + d] = st[d] if st[d] != 0 else _nonzero_stride(strides)
    return starts, counts, outs, box_strides


def _nonzero_stride(strides: Sequence[int]) -> int:
    """A non-zero stride for an axis of one element (the C API refuses zero strides)."""
    for s in strides:
        if s:
            return abs(int(s))
    return 1


def read_batch(arr: Any, selections: Sequence[Any], dev: Any, device: Any, out: Any, stream: Any,
               conv: Tuple[np.dtype, Any]) -> Any:
    """See Array.read_batch; dev: the device parsed from `device` (None: host); conv: (the destination's dtype,
    the read options or None), _convert.read_options."""
    sels, shape = _selections(arr, selections)
    n = len(sels)
    full = (n,) + shape
    dtype, opts = conv
    item = dtype.itemsize
    ndim = arr.ndim
    sh = _cuda.stream_handle(stream)
    ext = None
    host_out = out
    if out is not None and not isinstance(out, np.ndarray):
        host_out = _dlpack.host_array(out)
        if host_out is None:
            ext = _dlpack.foreign(out, sh if sh else 1)  # (DLPack: 1 is the legacy default stream)
            if ext is None:
                raise TypeError("out must be a NumPy array, a host tensor or a device array, got %s"
                                % type(out).__name__)
    if ext is None and host_out is None and dev is None:  # host, allocated here
        host_out = np.empty(full, dtype)
    if host_out is not None:
        if dev is not None and out is not None:
            raise ValueError("device=%r needs a device array for out, got a host array" % (device,))
        _check(host_out.shape, host_out.dtype, full, dtype)
        if not host_out.flags.writeable:
            raise ValueError("out is read-only")
        starts, counts, outs, bs = _regions(sels, host_out.ctypes.data, host_out.strides, ndim)
        with arr._lock.shared():
            _capi.check(lib.zgpu_array_read_regions(arr._h(), n, starts, counts, outs, bs, _convert.byref(opts)))
        return out if out is not None else host_out
    if ext is not None:
        try:
            if ext.device_type not in (_dlpack.KDL_CUDA, _dlpack.KDL_CUDA_MANAGED):
                raise TypeError("out is not in CUDA device memory")
            _check(ext.shape, ext.dtype, full, dtype)
            if ext.readonly:
                raise ValueError("out is read-only")
            out_dev = ext.device_id if ext.device_id >= 0 else (dev if dev is not None else arr._ctx.device)
            if device is not None and dev != out_dev:
                raise ValueError("out is on cuda:%d but device=%r" % (out_dev, device))
            if ext.stream is not None and not _cuda.same_stream(ext.stream, sh):
                _cuda.synchronize(int(ext.stream))
            _device_read(arr, sels, ext.ptr, ext.strides, out_dev, sh, ndim, opts)
        finally:
            ext.release()
        return out
    mem = _cuda.alloc(max(1, math.prod(full) * item), dev)
    strides = c_strides(full, item)
    _device_read(arr, sels, mem.ptr, strides, dev, sh, ndim, opts)
    return DeviceArray(mem, mem.ptr, full, strides, dtype, dev)


def _device_read(arr: Any, sels: Any, ptr: int, strides: Sequence[int], device: int, stream: int,
                 ndim: int, opts: Any) -> None:
    starts, counts, outs, bs = _regions(sels, ptr, strides, ndim)
    with arr._lock.shared():
        h = arr._handle_for(device)
        _capi.check(lib.zgpu_array_read_regions_device(h, len(sels), starts, counts, outs, bs,
                                                       ctypes.c_void_p(stream), _convert.byref(opts), None))


def _check(got_shape: Sequence[int], got_dtype: Any, shape: Tuple[int, ...], dtype: np.dtype) -> None:
    if tuple(got_shape) != shape:
        raise ValueError("out has shape %r, the batch %r" % (tuple(got_shape), shape))
    if np.dtype(got_dtype) != dtype:
        raise TypeError("out has dtype %s, the array %s" % (got_dtype, dtype))


__all__ = ["read_batch"]
