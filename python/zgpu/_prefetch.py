"""zgpu.iter_slabs: an array read slab by slab along one axis, the next slabs read in the background while the
caller works on the current one.

One background thread per iterator reads the slabs in order, up to `prefetch` ahead of the caller. A single
thread is enough: every slab read is itself parallel inside the C library (its pool decodes chunks on every core;
device reads run as batches on the GPU, one at a time per context), so reading several slabs at once would only
make them compete and delay the one the caller waits for next.

Host slabs are read (Array.read) into a ring of ``prefetch + 2`` preallocated NumPy buffers. Device slabs are
read into a ring of ``prefetch + 2`` device buffers, each slot with a side CUDA stream of its own: the read of a
slot waits (on the GPU, through a CUDA event recorded on the caller's stream) for the caller's work on the slab
that used the slot before, and the caller's stream waits (another event) for the read of each slab it is given.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import math
import threading
from collections import deque
from ctypes import c_int, c_uint, c_void_p
from typing import Any, Deque, List, Optional, Tuple

import numpy as np

from . import _cuda
from ._device import DeviceArray, c_strides

_CUDA_STREAM_NON_BLOCKING = 1  # cudaStreamNonBlocking
_CUDA_EVENT_DISABLE_TIMING = 2  # cudaEventDisableTiming

_bound: Optional[ctypes.CDLL] = None
_bound_lock = threading.Lock()


def _rt() -> Optional[ctypes.CDLL]:
    """libcudart (the one _cuda loads) with the stream and event functions this module calls declared; None when
    no runtime can be loaded."""
    global _bound
    rt = _cuda.cudart()
    if rt is None:
        return None
    with _bound_lock:
        if _bound is not rt:
            for name, args in (("cudaStreamCreateWithFlags", [ctypes.POINTER(c_void_p), c_uint]),
                               ("cudaStreamDestroy", [c_void_p]),
                               ("cudaEventCreateWithFlags", [ctypes.POINTER(c_void_p), c_uint]),
                               ("cudaEventDestroy", [c_void_p]),
                               ("cudaEventRecord", [c_void_p, c_void_p]),
                               ("cudaStreamWaitEvent", [c_void_p, c_void_p, c_uint])):
                fn = getattr(rt, name)
                fn.argtypes = args
                fn.restype = c_int
            _bound = rt
    return rt


class _SideStreams:
    """The device ring's CUDA objects: for each slot a non-blocking stream that its reads run on, an event
    `release` (recorded on the caller's stream: the caller is done with the slot's previous slab) and an event
    `ready` (recorded on the slot's stream after a read). Made on `device`; the current device of the calling
    thread is put back."""

    def __init__(self, rt: ctypes.CDLL, device: int, slots: int) -> None:
        self._rt = rt
        self.device = device
        self.streams: List[int] = []
        self.release: List[int] = []
        self.ready: List[int] = []
        with _on_device(rt, device):
            try:
                for _ in range(slots):
                    s = c_void_p()
                    _cuda._check(rt, rt.cudaStreamCreateWithFlags(ctypes.byref(s), _CUDA_STREAM_NON_BLOCKING),
                                 "cudaStreamCreateWithFlags")
                    self.streams.append(s.value or 0)
                    for bag in (self.release, self.ready):
                        e = c_void_p()
                        _cuda._check(rt, rt.cudaEventCreateWithFlags(ctypes.byref(e), _CUDA_EVENT_DISABLE_TIMING),
                                     "cudaEventCreateWithFlags")
                        bag.append(e.value or 0)
            except BaseException:
                self.destroy()
                raise

    def record(self, event: int, stream: int) -> None:
        _cuda._check(self._rt, self._rt.cudaEventRecord(c_void_p(event), c_void_p(_legacy(stream))),
                     "cudaEventRecord")

    def wait(self, stream: int, event: int) -> None:
        _cuda._check(self._rt, self._rt.cudaStreamWaitEvent(c_void_p(_legacy(stream)), c_void_p(event), 0),
                     "cudaStreamWaitEvent")

    def destroy(self) -> None:
        """Releases the streams and events (work still queued on a stream completes first: CUDA defers it)."""
        rt = self._rt
        for e in self.release + self.ready:
            rt.cudaEventDestroy(c_void_p(e))
        for s in self.streams:
            rt.cudaStreamDestroy(c_void_p(s))
        self.streams, self.release, self.ready = [], [], []


def _legacy(stream: int) -> int:
    # zgpu's handles follow DLPack (1: the legacy default stream); CUDA names it 0 (or cudaStreamLegacy = 1)
    return 0 if stream == 1 else stream


class _on_device:
    """Makes `device` current on this thread for a block, then puts the previous one back."""

    def __init__(self, rt: ctypes.CDLL, device: int) -> None:
        self._rt = rt
        self._device = device
        self._prev = c_int(-1)

    def __enter__(self) -> None:
        _cuda._check(self._rt, self._rt.cudaGetDevice(ctypes.byref(self._prev)), "cudaGetDevice")
        if self._prev.value != self._device:
            _cuda._check(self._rt, self._rt.cudaSetDevice(self._device), "cudaSetDevice(%d)" % self._device)

    def __exit__(self, *exc: Any) -> None:
        if self._prev.value >= 0 and self._prev.value != self._device:
            self._rt.cudaSetDevice(self._prev.value)


def slab_bounds(length: int, size: int) -> List[Tuple[int, int]]:
    """[(start, stop), ...] covering range(length) in steps of `size` (the last one shorter)."""
    return [(lo, min(lo + size, length)) for lo in range(0, length, size)]


def _read_host(array: Any, sel: Tuple[slice, ...], out: Optional[np.ndarray]) -> np.ndarray:
    # (module level: the background thread holds no reference to the iterator, which can then be collected)
    if out is None:
        return np.ascontiguousarray(array.read(sel))
    array.read(sel, out=out)
    return out


def _read_device(array: Any, sel: Tuple[slice, ...], out: DeviceArray, device: int, stream: int,
                 side: Optional[_SideStreams], slot: int) -> DeviceArray:
    array.read(sel, device=device, out=out, stream=stream)  # (returns when the data is in place)
    if side is not None:
        with _on_device(side._rt, side.device):
            side.record(side.ready[slot], stream)
    return out


class SlabIterator:
    """The iterator :func:`zgpu.iter_slabs` returns: slabs of an array along one axis, the next ones read in the
    background. Iterate it (``for slab in it``), or call ``next(it)``; ``close()`` (or leaving a ``with`` block,
    or dropping the last reference) stops the background reads and joins the thread.

    ``bounds`` lists every slab's (start, stop) along ``axis``: slab ``k`` is
    ``array[(slice(None),) * axis + (slice(*bounds[k]),)]``; ``len(it)`` is the number of slabs.
    """

    def __init__(self, array: Any, axis: int, size: Optional[int], device: Any, prefetch: int, stream: Any,
                 copy: bool) -> None:
        from .array import parse_device
        if getattr(array, "ndim", None) is None or not hasattr(array, "read"):
            raise TypeError("iter_slabs takes a zgpu.Array, got %s" % type(array).__name__)
        ndim = array.ndim
        if ndim == 0:
            raise ValueError("iter_slabs: a 0-d array has no axis to iterate along")
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError("axis must be an int, got %r" % (axis,))
        if not -ndim <= axis < ndim:
            axis_error = getattr(getattr(np, "exceptions", np), "AxisError", None) or np.AxisError
            raise axis_error(int(axis), ndim)
        axis = int(axis) % ndim
        if isinstance(prefetch, bool) or not isinstance(prefetch, (int, np.integer)) or prefetch < 0:
            raise ValueError("prefetch must be an int >= 0, got %r" % (prefetch,))
        shape = tuple(array.shape)
        if size is None:
            grid = array.shards or array.chunks
            size = grid[axis]
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError("size must be an int >= 1 (or None: one row of chunks), got %r" % (size,))
        self._array = array
        self.axis = axis
        self.size = int(size)
        self.prefetch = int(prefetch)
        self.copy = bool(copy)
        self.bounds: List[Tuple[int, int]] = slab_bounds(shape[axis], self.size)
        self._shape = shape
        self._dtype = np.dtype(array.dtype)
        self._device = parse_device(device, array._ctx.device)
        self._stream = _cuda.stream_handle(stream) if self._device is not None else 0
        self._slots = self.prefetch + 2  # slab k's buffer is refilled with slab k + prefetch + 2
        self._buffers: List[Any] = [None] * self._slots
        self._next = 0       # the index of the slab the next next() returns
        self._submitted = 0  # slabs handed to the background thread (or read inline) so far
        self._pending: Deque[Tuple[int, "concurrent.futures.Future[Any]"]] = deque()
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._side: Optional[_SideStreams] = None
        self._side_made = False
        self._closed = False
        self._lock = threading.RLock()  # close() may come from another thread (or a finaliser) mid-next()

    # ---- the slabs ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.bounds)

    def __iter__(self) -> "SlabIterator":
        return self

    def _selection(self, k: int) -> Tuple[slice, ...]:
        lo, hi = self.bounds[k]
        return (slice(None),) * self.axis + (slice(lo, hi),) + (slice(None),) * (len(self._shape) - self.axis - 1)

    def _slab_shape(self, k: int) -> Tuple[int, ...]:
        lo, hi = self.bounds[k]
        return self._shape[:self.axis] + (hi - lo,) + self._shape[self.axis + 1:]

    def _full_elements(self) -> int:
        return math.prod(self._slab_shape(0))

    def _host_out(self, k: int) -> Optional[np.ndarray]:
        """The ring buffer of slab k as an array of its shape (C-contiguous: the first elements of the slot), or
        None with copy=True (a fresh array is read)."""
        if self.copy:
            return None
        slot = k % self._slots
        if self._buffers[slot] is None:
            self._buffers[slot] = np.empty(self._full_elements(), self._dtype)
        shape = self._slab_shape(k)
        return self._buffers[slot][:math.prod(shape)].reshape(shape)

    def _device_out(self, k: int) -> DeviceArray:
        shape = self._slab_shape(k)
        item = self._dtype.itemsize
        slot = k % self._slots
        if self.copy:
            mem = _cuda.alloc(max(1, math.prod(shape) * item), self._device)
        else:
            if self._buffers[slot] is None:
                self._buffers[slot] = _cuda.alloc(max(1, self._full_elements() * item), self._device)
            mem = self._buffers[slot]
        return DeviceArray(mem, mem.ptr, shape, c_strides(shape, item), self._dtype, self._device)

    def _side_streams(self) -> Optional[_SideStreams]:
        """The ring's side streams and events, made at the first device slab; None where no CUDA runtime can be
        loaded through ctypes (then reads are ordered on the caller's stream itself, which is correct but lets a
        read wait for all of the caller's earlier work)."""
        if not self._side_made:
            self._side_made = True
            claim = getattr(_cuda, "claim", None)
            if claim is not None:
                claim()  # (a forked child of a CUDA process: zgpu's clear error before any CUDA call)
            rt = _rt()
            if rt is not None:
                self._side = _SideStreams(rt, self._device, self._slots)
        return self._side

    def _submit(self, k: int) -> "concurrent.futures.Future[Any]":
        """Starts the read of slab k: in the background thread with prefetch > 0, else here (a finished future)."""
        sel = self._selection(k)
        if self._device is None:
            fn, args = _read_host, (self._array, sel, self._host_out(k))
        else:
            side = self._side_streams()
            slot = k % self._slots
            out = self._device_out(k)
            stream = self._stream
            if side is not None:
                stream = side.streams[slot]
                if not self.copy and k >= self._slots:
                    # the slot held slab k - slots: the read waits (on the GPU) for the caller's work queued so far
                    with _on_device(side._rt, side.device):
                        side.record(side.release[slot], self._stream)
                        side.wait(stream, side.release[slot])
            fn, args = _read_device, (self._array, sel, out, self._device, stream, side, slot)
        if self.prefetch == 0:
            f: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
            try:
                f.set_result(fn(*args))
            except BaseException as e:  # (raised from next(), as a background read's error would be)
                f.set_exception(e)
            return f
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="zgpu-prefetch")
        return self._pool.submit(fn, *args)

    def __next__(self) -> Any:
        with self._lock:
            if self._closed:
                raise StopIteration
            k = self._next
            if k >= len(self.bounds):
                self._close_locked()
                raise StopIteration
            try:
                last = min(k + self.prefetch, len(self.bounds) - 1)
                while self._submitted <= last:
                    self._pending.append((self._submitted, self._submit(self._submitted)))
                    self._submitted += 1
                idx, fut = self._pending.popleft()
                assert idx == k
                slab = fut.result()  # a background read's exception is raised here, unchanged
                self._next = k + 1
                if self._device is not None and self._side is not None:
                    side = self._side
                    with _on_device(side._rt, side.device):  # the caller's stream after the slab's read
                        side.wait(self._stream, side.ready[k % self._slots])
                return slab
            except BaseException:
                self._close_locked()
                raise

    # ---- stopping ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stops the iteration: reads not started are cancelled, the one running (if any) is waited for, the
        background thread is joined and the side streams released. Further next() calls raise StopIteration.
        Slabs already yielded stay as they are (a ring buffer is not overwritten any more)."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._closed:
            return
        self._closed = True
        pool, self._pool = self._pool, None
        pending, self._pending = self._pending, deque()
        for _, f in pending:
            f.cancel()
        if pool is not None:
            # a finaliser run on the background thread itself cannot join it: it exits once idle
            own = threading.current_thread().name.startswith("zgpu-prefetch")
            pool.shutdown(wait=not own, cancel_futures=True)
        for _, f in pending:  # (a cancelled or failed read: nothing to raise now)
            if not f.cancelled() and f.done():
                f.exception()
        side, self._side = self._side, None
        if side is not None:
            side.destroy()
        self._buffers = [None] * self._slots

    def __enter__(self) -> "SlabIterator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not getattr(self, "_closed", True):
                self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        where = "cpu" if self._device is None else "cuda:%d" % self._device
        return "<zgpu.SlabIterator axis=%d size=%d slabs=%d prefetch=%d device=%s next=%d>" % (
            self.axis, self.size, len(self.bounds), self.prefetch, where, self._next)


def iter_slabs(array: Any, axis: int = 0, size: Optional[int] = None, *, device: Any = None, prefetch: int = 2,
               stream: Any = None, copy: bool = False) -> SlabIterator:
    """Reads `array` slab by slab along `axis`, keeping the next `prefetch` slabs in flight while the caller
    works on the current one.

    Slab k is ``array[..., bounds[k][0]:bounds[k][1], ...]`` on `axis` with every other axis whole: `size` thick
    (the last slab shorter), or, with ``size=None``, one row of chunks (of shards for a sharded array), so that
    no chunk is decoded twice. ``it.bounds`` lists them; ``len(it)`` is their number.

    device: None / "cpu" yields NumPy arrays; "cuda" / "cuda:N" yields :class:`zgpu.DeviceArray` slabs read
        into GPU memory (zero-copy into CuPy / PyTorch as any DeviceArray).
    prefetch: how many slabs after the current one are read in the background (0: each slab is read when asked
        for, in the calling thread). A background thread reads them in order; on the GPU each read runs on a
        side stream of its own.
    stream: device slabs only: the stream the caller works on (int cudaStream_t, cupy / torch stream; None: the
        legacy default stream). Work the caller queues on it after receiving a slab is ordered after that slab's
        read, and the read that reuses a slab's buffer waits, on the GPU, for the work the caller queued on it
        before asking for the slab that triggers the reuse.
    copy: False (default): slabs live in a ring of ``prefetch + 2`` buffers allocated once (host or device) and
        reused. **A slab stays valid until the caller asks for the second slab after it**: when next() is
        asked for slab k, the read of slab k + prefetch starts, into the buffer of slab k - 2; so the slab just
        returned and the one before it may be used, and anything older must have been copied (or, on the GPU,
        only used by work already queued on `stream`). True: every slab is a new array that the caller may keep.

    Errors of a background read (a corrupt chunk, a missing file, a store that fails) are raised, unchanged,
    by the next() that reaches that slab; the iterator is closed then. Stopping early - ``break``,
    :meth:`SlabIterator.close`, a ``with`` block, or dropping the iterator - cancels the reads not yet started,
    waits for the one running (a C read is not interrupted) and joins the background thread.

        >>> for k, slab in enumerate(zgpu.iter_slabs(a, axis=0, size=64, device="cuda")):
        ...     x = torch.from_dlpack(slab)          # slab k: a[k*64:(k+1)*64]
    """
    return SlabIterator(array, axis, size, device, prefetch, stream, copy)


__all__ = ["iter_slabs", "SlabIterator", "slab_bounds"]
