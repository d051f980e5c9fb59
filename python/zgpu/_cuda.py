"""The few CUDA runtime services the package needs: device allocation, copies, stream handles.

Allocation goes through CuPy's or PyTorch's allocator when that library is already imported (so zgpu's
buffers come from the pool the user's code already uses), else through libcudart loaded with ctypes, else
through CuPy or PyTorch if either can be imported. NoGPUError when none is available.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading
from contextlib import contextmanager
from ctypes import c_int, c_size_t, c_void_p
from typing import Any, Iterator, List, Optional, Sequence

import numpy as np

from .errors import CudaError, NoGPUError

_lock = threading.Lock()
_cudart: Optional[ctypes.CDLL] = None
_cudart_tried = False


def _cudart_candidates() -> List[str]:
    out: List[str] = []
    env = os.environ.get("ZGPU_CUDART")
    if env:
        out.append(env)
    try:  # a runtime already loaded (by libzgpu, torch or cupy) is the one to share
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1]
                if "libcudart.so" in os.path.basename(p) and p not in out:
                    out.append(p)
    except OSError:
        pass
    import ctypes.util
    found = ctypes.util.find_library("cudart")
    if found:
        out.append(found)
    out += ["libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"]
    for sp in sys.path:
        out += sorted(glob.glob(os.path.join(sp, "nvidia", "cuda_runtime", "lib", "libcudart.so*")))
        out += sorted(glob.glob(os.path.join(sp, "nvidia", "cu1*", "lib", "libcudart.so*")))
    out += sorted(glob.glob("/usr/local/cuda*/lib64/libcudart.so*"))
    return out


def cudart() -> Optional[ctypes.CDLL]:
    """libcudart via ctypes, or None if none can be loaded."""
    global _cudart, _cudart_tried
    with _lock:
        if _cudart_tried:
            return _cudart
        _cudart_tried = True
        for name in _cudart_candidates():
            try:
                lib = ctypes.CDLL(name)
                lib.cudaMalloc  # noqa: B018 (probe)
            except (OSError, AttributeError):
                continue
            lib.cudaMalloc.argtypes = [ctypes.POINTER(c_void_p), c_size_t]
            lib.cudaMalloc.restype = c_int
            lib.cudaFree.argtypes = [c_void_p]
            lib.cudaFree.restype = c_int
            lib.cudaMemcpy.argtypes = [c_void_p, c_void_p, c_size_t, c_int]
            lib.cudaMemcpy.restype = c_int
            lib.cudaStreamSynchronize.argtypes = [c_void_p]
            lib.cudaStreamSynchronize.restype = c_int
            lib.cudaGetDevice.argtypes = [ctypes.POINTER(c_int)]
            lib.cudaGetDevice.restype = c_int
            lib.cudaSetDevice.argtypes = [c_int]
            lib.cudaSetDevice.restype = c_int
            lib.cudaGetErrorString.argtypes = [c_int]
            lib.cudaGetErrorString.restype = ctypes.c_char_p
            lib.cudaPointerGetAttributes.argtypes = [c_void_p, c_void_p]
            lib.cudaPointerGetAttributes.restype = c_int
            _cudart = lib
            break
        return _cudart


def _check(rt: ctypes.CDLL, err: int, what: str) -> None:
    if err != 0:
        msg = rt.cudaGetErrorString(err)
        raise CudaError("%s failed: CUDA error %d (%s)" % (what, err, msg.decode() if msg else "?"))


@contextmanager
def _device_current(rt: ctypes.CDLL, device: int) -> Iterator[None]:
    """`device` current (cudaSetDevice) for the block, the caller's device put back after."""
    cur = c_int()
    _check(rt, rt.cudaGetDevice(ctypes.byref(cur)), "cudaGetDevice")
    _check(rt, rt.cudaSetDevice(device), "cudaSetDevice(%d)" % device)
    try:
        yield
    finally:
        rt.cudaSetDevice(cur.value)


class _CudartBuffer:
    """Device memory from cudaMalloc, freed with cudaFree when the last reference goes."""

    def __init__(self, nbytes: int, device: int) -> None:
        rt = cudart()
        assert rt is not None
        self._rt = rt
        self.ptr = 0
        self.nbytes = nbytes
        self.device = device
        with _device_current(rt, device):
            p = c_void_p()
            _check(rt, rt.cudaMalloc(ctypes.byref(p), max(1, nbytes)), "cudaMalloc(%d bytes)" % nbytes)
            self.ptr = p.value or 0

    def __del__(self) -> None:
        if self.ptr and not sys.is_finalizing():
            self._rt.cudaFree(c_void_p(self.ptr))
            self.ptr = 0


class _LibBuffer:
    """Device memory owned by a CuPy MemoryPointer or a PyTorch tensor."""

    def __init__(self, owner: Any, ptr: int, nbytes: int, device: int) -> None:
        self.owner = owner
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device


def _alloc_cupy(nbytes: int, device: int) -> Optional[_LibBuffer]:
    try:
        import cupy
    except ImportError:
        return None
    with cupy.cuda.Device(device):
        mem = cupy.cuda.alloc(max(1, nbytes))
    return _LibBuffer(mem, int(mem.ptr), nbytes, device)


def _alloc_torch(nbytes: int, device: int) -> Optional[_LibBuffer]:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    t = torch.empty(max(1, nbytes), dtype=torch.uint8, device="cuda:%d" % device)
    return _LibBuffer(t, int(t.data_ptr()), nbytes, device)


def claim() -> None:
    """Asks the C library whether this process may use CUDA before the package's first CUDA call of a device read:
    in a child forked from a process that initialised CUDA it raises CudaError saying so (and what to do), where
    CUDA itself would only answer "initialization error". Also marks this process as CUDA's, so that its own
    forked children are refused likewise. A library built without CUDA has nothing to say (no symbol)."""
    from . import _capi
    fn = getattr(_capi.lib, "zg_cuda_claim", None)
    if fn is None:
        return
    fn.restype = c_int
    fn.argtypes = []
    _capi.check(fn())


def alloc(nbytes: int, device: int) -> Any:
    """Device memory of nbytes on `device`: an object with .ptr that frees the memory when collected."""
    claim()
    if "cupy" in sys.modules:
        b = _alloc_cupy(nbytes, device)
        if b is not None:
            return b
    if "torch" in sys.modules:
        b = _alloc_torch(nbytes, device)
        if b is not None:
            return b
    if cudart() is not None:
        return _CudartBuffer(nbytes, device)
    for f in (_alloc_cupy, _alloc_torch):
        b = f(nbytes, device)
        if b is not None:
            return b
    raise NoGPUError("no way to allocate device memory: libcudart, CuPy and PyTorch are all unavailable")


def stream_handle(stream: Any) -> int:
    """A cudaStream_t as an int from None (0 = legacy default stream), an int, a cupy.cuda.Stream, a
    torch.cuda.Stream or any object with __cuda_stream__."""
    if stream is None:
        return 0
    if isinstance(stream, (int, np.integer)):
        return int(stream)
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        return int(stream.cuda_stream)
    if hasattr(stream, "ptr"):  # cupy.cuda.Stream
        return int(stream.ptr)
    raise TypeError("stream must be an int handle, a cupy.cuda.Stream or a torch.cuda.Stream, got %r"
                    % (stream,))


def same_stream(cai_stream: int, handle: int) -> bool:
    """Whether a __cuda_array_interface__ stream (1: the legacy default stream, 2: the per-thread one, else a
    cudaStream_t) is the stream of handle `handle` (0 or 1: the legacy default stream)."""
    return int(cai_stream) == int(handle) or (int(cai_stream) == 1 and int(handle) == 0)


def synchronize(stream: int) -> None:
    """Waits for all work on `stream` (an int handle; 1 and 2 are the legacy / per-thread defaults)."""
    rt = cudart()
    if rt is not None:
        s = 0 if stream == 1 else stream
        _check(rt, rt.cudaStreamSynchronize(c_void_p(s)), "cudaStreamSynchronize")
        return
    if "cupy" in sys.modules or _try_import("cupy"):
        import cupy
        cupy.cuda.ExternalStream(stream).synchronize()
        return
    if "torch" in sys.modules or _try_import("torch"):
        import torch
        torch.cuda.synchronize()
        return
    raise NoGPUError("no CUDA runtime to synchronise a stream with")


def device_count() -> int:
    """The number of CUDA devices this process sees (CUDA_VISIBLE_DEVICES applied)."""
    claim()
    rt = cudart()
    if rt is not None:
        n = c_int()
        _check(rt, rt.cudaGetDeviceCount(ctypes.byref(n)), "cudaGetDeviceCount")
        return n.value
    import cupy
    return int(cupy.cuda.runtime.getDeviceCount())


def synchronize_on(device: int, stream: int) -> None:
    """synchronize(stream) with `device` current (the default streams 0, 1 and 2 are per device), the caller's
    device put back."""
    rt = cudart()
    if rt is None:
        import cupy  # (synchronize's other ways have no device to name)
        with cupy.cuda.Device(device):
            cupy.cuda.ExternalStream(stream).synchronize()
        return
    with _device_current(rt, device):
        synchronize(stream)


_peer_lock = threading.Lock()
_peer: dict = {}  # (device, peer) -> whether kernels on `device` may write `peer`'s memory


def enable_peer_access(device: int, peer: int) -> bool:
    """Lets kernels on `device` read and write memory of `peer` (cudaDeviceEnablePeerAccess, once a pair); False
    where the two GPUs cannot reach each other's memory (no NVLink or PCIe peer path)."""
    if device == peer:
        return True
    with _peer_lock:
        known = _peer.get((device, peer))
        if known is not None:
            return known
        ok = False
        rt = cudart()
        if rt is not None:
            can = c_int(0)
            if rt.cudaDeviceCanAccessPeer(ctypes.byref(can), device, peer) == 0 and can.value:
                with _device_current(rt, device):
                    err = rt.cudaDeviceEnablePeerAccess(peer, 0)
                    if err == 704:  # cudaErrorPeerAccessAlreadyEnabled (by CuPy, PyTorch or the user)
                        rt.cudaGetLastError()
                        err = 0
                    ok = err == 0
        elif _try_import("cupy"):
            import cupy
            if cupy.cuda.runtime.deviceCanAccessPeer(device, peer):
                with cupy.cuda.Device(device):
                    try:
                        cupy.cuda.runtime.deviceEnablePeerAccess(peer)
                    except cupy.cuda.runtime.CUDARuntimeError as e:
                        if "AlreadyEnabled" not in str(e):
                            raise
                ok = True
        _peer[(device, peer)] = ok
        return ok


def _try_import(name: str) -> bool:
    try:
        __import__(name)
        return True
    except ImportError:
        return False


class _PointerAttributes(ctypes.Structure):
    # cudaPointerAttributes (CUDA >= 10): type, device, devicePointer, hostPointer (+ reserved in 12+)
    _fields_ = [("type", c_int), ("device", c_int), ("devicePointer", c_void_p), ("hostPointer", c_void_p),
                ("reserved", c_int * 16)]


def pointer_device(ptr: int) -> int:
    """CUDA device ordinal of a device pointer; -1 when unknown."""
    rt = cudart()
    if rt is None or not ptr:
        return -1
    attrs = _PointerAttributes()
    if rt.cudaPointerGetAttributes(ctypes.byref(attrs), c_void_p(ptr)) != 0:
        return -1
    return int(attrs.device)


def span(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple:
    """(low, high) byte offsets covered by a strided layout relative to its first element."""
    if any(s == 0 for s in shape):
        return 0, 0
    lo = hi = 0
    for n, st in zip(shape, strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + itemsize


def to_host(ptr: int, shape: Sequence[int], strides: Sequence[int], dtype: np.dtype, owner: Any = None
            ) -> np.ndarray:
    """Copies a strided device layout to a new C-contiguous NumPy array."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    lo, hi = span(shape, strides, dtype.itemsize)
    if hi - lo == 0:
        return np.empty(shape, dtype)
    rt = cudart()
    if rt is not None:
        raw = np.empty(hi - lo, np.uint8)
        _check(rt, rt.cudaMemcpy(c_void_p(raw.ctypes.data), c_void_p(ptr + lo), hi - lo, 2), "cudaMemcpy D2H")
        arr = np.ndarray(shape, dtype=dtype, buffer=raw, offset=-lo, strides=tuple(strides))
        return arr.copy(order="C")  # (ascontiguousarray would make a 0-d result 1-d)
    if owner is not None:
        if _try_import("cupy"):
            import cupy
            return cupy.asnumpy(cupy.asarray(owner))
        if _try_import("torch"):
            import torch
            return torch.from_dlpack(owner).cpu().numpy()
    raise NoGPUError("no CUDA runtime (libcudart, CuPy or PyTorch) to copy device memory to the host")
