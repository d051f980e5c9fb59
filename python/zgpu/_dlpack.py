"""DLPack (v0.8 legacy and v1.x versioned capsules) with ctypes: export our buffers, import foreign ones.

Export: the capsule's DLManagedTensor keeps a Python reference to the memory owner in a registry keyed by
the struct's address; the deleter (called by the consumer, e.g. when a torch tensor dies) drops it, and the
capsule destructor calls the deleter if no consumer ever took the capsule.
"""
from __future__ import annotations

import ctypes
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_int, c_int32, c_int64, c_uint8, c_uint16,
                    c_uint32, c_uint64, c_void_p, py_object)
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3
KDL_CUDA_MANAGED = 13

_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_BFLOAT, _KDL_COMPLEX, _KDL_BOOL = 0, 1, 2, 4, 5, 6

_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"
_NAME_V = b"dltensor_versioned"
_USED_NAME_V = b"used_dltensor_versioned"


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


_Deleter = CFUNCTYPE(None, c_void_p)


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", _Deleter)]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", c_void_p),
        ("deleter", _Deleter),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


_api = ctypes.pythonapi
_api.PyCapsule_New.restype = py_object
_api.PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
_api.PyCapsule_IsValid.restype = c_int
_api.PyCapsule_IsValid.argtypes = [c_void_p, c_char_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [c_void_p, c_char_p]
_api.PyCapsule_SetName.restype = c_int
_api.PyCapsule_SetName.argtypes = [c_void_p, c_char_p]

# address of a DLManagedTensor[Versioned] we exported -> (struct, shape, strides, owner)
_live: Dict[int, Tuple[Any, ...]] = {}
_live_lock = threading.Lock()


def _release(addr: int) -> None:
    with _live_lock:
        _live.pop(addr, None)


@_Deleter
def _deleter(addr: Optional[int]) -> None:
    if addr:
        _release(addr)


@CFUNCTYPE(None, c_void_p)
def _capsule_destructor(capsule: Optional[int]) -> None:
    # Only a capsule nobody consumed still carries its original name; a consumer renamed it "used_...".
    if not capsule:
        return
    for name in (_NAME, _NAME_V):
        if _api.PyCapsule_IsValid(capsule, name):
            addr = _api.PyCapsule_GetPointer(capsule, name)
            if addr:
                _release(addr)
            return


_DESTRUCTOR_PTR = ctypes.cast(_capsule_destructor, c_void_p).value


def dl_dtype(dt: np.dtype) -> DLDataType:
    codes = {"b": _KDL_BOOL, "i": _KDL_INT, "u": _KDL_UINT, "f": _KDL_FLOAT, "c": _KDL_COMPLEX}
    if dt.kind not in codes:
        raise BufferError("data type %s has no DLPack equivalent" % dt)
    return DLDataType(codes[dt.kind], dt.itemsize * 8, 1)


def np_dtype(d: DLDataType) -> np.dtype:
    if d.lanes != 1:
        raise BufferError("DLPack tensors with lanes != 1 are not supported")
    kinds = {_KDL_BOOL: "b", _KDL_INT: "i", _KDL_UINT: "u", _KDL_FLOAT: "f", _KDL_COMPLEX: "c"}
    if d.code not in kinds or d.bits % 8:
        raise BufferError("DLPack data type code %d bits %d is not supported" % (d.code, d.bits))
    if d.code == _KDL_BOOL:
        return np.dtype(bool)
    return np.dtype("%s%d" % (kinds[d.code], d.bits // 8))


def export(ptr: int, shape: Sequence[int], strides: Sequence[int], dtype: np.dtype, device_type: int,
           device_id: int, owner: Any, versioned: bool, readonly: bool = False) -> Any:
    """A DLPack capsule over memory at `ptr` (byte strides), keeping `owner` alive until the consumer's
    deleter runs (or the capsule dies unconsumed)."""
    dtype = np.dtype(dtype)
    item = dtype.itemsize
    for s in strides:
        if s % item:
            raise BufferError("stride %d is not a multiple of the item size %d" % (s, item))
    ndim = len(shape)
    shape_arr = (c_int64 * max(1, ndim))(*shape)
    strides_arr = (c_int64 * max(1, ndim))(*[s // item for s in strides])
    m: Any = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = m.dl_tensor
    t.data = ptr
    t.device = DLDevice(device_type, device_id)
    t.ndim = ndim
    t.dtype = dl_dtype(dtype)
    t.shape = ctypes.cast(shape_arr, POINTER(c_int64))
    t.strides = ctypes.cast(strides_arr, POINTER(c_int64))
    t.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _deleter
    if versioned:
        m.version = DLPackVersion(1, 0)
        m.flags = 1 if readonly else 0
    addr = ctypes.addressof(m)
    with _live_lock:
        _live[addr] = (m, shape_arr, strides_arr, owner)
    try:
        return _api.PyCapsule_New(addr, _NAME_V if versioned else _NAME, _DESTRUCTOR_PTR)
    except BaseException:
        _release(addr)
        raise


def live_exports() -> int:
    """Number of exported tensors whose deleter has not run yet (for tests)."""
    with _live_lock:
        return len(_live)


class ForeignTensor:
    """A view of someone else's memory from __cuda_array_interface__ or a DLPack capsule.

    ``release()`` (or garbage collection) gives an imported DLPack tensor back to its producer."""

    def __init__(self, ptr: int, shape: Tuple[int, ...], strides: Tuple[int, ...], dtype: np.dtype,
                 device_type: int, device_id: int, readonly: bool = False, stream: Optional[int] = None,
                 release: Optional[Callable[[], None]] = None, keep: Any = None) -> None:
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.device_type = device_type
        self.device_id = device_id
        self.readonly = readonly
        self.stream = stream  # CUDA array interface "stream": work that must finish before we touch it
        self._release = release
        self._keep = keep

    def release(self) -> None:
        r, self._release = self._release, None
        if r is not None:
            r()

    def __del__(self) -> None:
        self.release()


def _c_strides(shape: Sequence[int], item: int) -> Tuple[int, ...]:
    out = []
    acc = item
    for s in reversed(shape):
        out.append(acc)
        acc *= max(1, s)
    return tuple(reversed(out))


def from_cai(obj: Any) -> ForeignTensor:
    """Reads obj.__cuda_array_interface__ (versions 0-3)."""
    cai = obj.__cuda_array_interface__
    shape = tuple(int(s) for s in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    if not dtype.isnative:
        raise TypeError("device array has non-native byte order %s" % cai["typestr"])
    ptr, readonly = cai["data"]
    strides = cai.get("strides")
    strides = _c_strides(shape, dtype.itemsize) if strides is None else tuple(int(s) for s in strides)
    mask = cai.get("mask")
    if mask is not None:
        raise TypeError("masked device arrays are not supported")
    device_id = _pointer_device(ptr)
    return ForeignTensor(int(ptr or 0), shape, strides, dtype, KDL_CUDA, device_id, bool(readonly),
                         cai.get("stream"), keep=obj)


def _pointer_device(ptr: int) -> int:
    """CUDA device ordinal holding `ptr` (-1 if unknown: no CUDA runtime to ask)."""
    from . import _cuda
    return _cuda.pointer_device(ptr)


def from_dlpack(obj: Any, stream: Optional[int]) -> ForeignTensor:
    """Takes obj.__dlpack__(stream=...) (versioned if the producer supports it) and views its tensor."""
    try:
        cap = obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:
        cap = obj.__dlpack__(stream=stream)
    capp = ctypes.c_void_p(id(cap))  # borrowed: `cap` stays referenced below
    if _api.PyCapsule_IsValid(capp, _NAME_V):
        addr = _api.PyCapsule_GetPointer(capp, _NAME_V)
        m: Any = DLManagedTensorVersioned.from_address(addr)
        readonly = bool(m.flags & 1)
        _api.PyCapsule_SetName(capp, _USED_NAME_V)
    elif _api.PyCapsule_IsValid(capp, _NAME):
        addr = _api.PyCapsule_GetPointer(capp, _NAME)
        m = DLManagedTensor.from_address(addr)
        readonly = False
        _api.PyCapsule_SetName(capp, _USED_NAME)
    else:
        raise BufferError("__dlpack__ did not return a DLPack capsule")
    del cap
    deleter_ptr = ctypes.cast(m.deleter, c_void_p).value

    def release() -> None:
        if deleter_ptr:
            _Deleter(deleter_ptr)(addr)

    t = m.dl_tensor
    dtype = np_dtype(t.dtype)
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    if t.strides:
        strides = tuple(t.strides[i] * dtype.itemsize for i in range(ndim))
    else:
        strides = _c_strides(shape, dtype.itemsize)
    ptr = (t.data or 0) + t.byte_offset
    return ForeignTensor(ptr, shape, strides, dtype, t.device.device_type, t.device.device_id, readonly,
                         None, release)


class _HostHolder:
    """Exposes a host ForeignTensor through __array_interface__, so that the NumPy array made from it keeps the
    tensor (and with it the producer's memory) alive, and gives it back when the array dies."""

    def __init__(self, t: ForeignTensor) -> None:
        self._t = t
        self.__array_interface__ = {"shape": t.shape, "typestr": t.dtype.str, "data": (t.ptr, t.readonly),
                                    "strides": t.strides, "version": 3}


def _torch_host(obj: Any) -> Optional[np.ndarray]:
    if obj.device.type != "cpu":
        return None
    if obj.requires_grad:
        raise ValueError("out requires grad: zgpu writes into it outside autograd; pass out.detach() (the same "
                         "memory) to read into it anyway")
    try:
        return obj.numpy()  # a view of the tensor's own memory (pinned too), with its strides
    except (TypeError, RuntimeError) as e:  # bfloat16, conjugate / negative bit, sparse, quantized ...
        raise TypeError("out: a torch %s tensor that NumPy cannot view (%s); read into a tensor of the array's "
                        "dtype" % (obj.dtype, e)) from None


def host_array(obj: Any) -> Optional[np.ndarray]:
    """A NumPy array sharing memory with a host tensor that is not a NumPy array: a PyTorch CPU tensor (pinned or
    not, any strides: through .numpy(), which views the tensor's memory), or any DLPack producer whose tensor is in
    host memory (kDLCPU, or kDLCUDAHost: pinned). None for everything else (device arrays, lists, scalars).

    Never initialises CUDA (a DataLoader worker forked from a CUDA-free parent must stay so): neither path asks
    the CUDA runtime anything."""
    if type(obj).__module__.startswith("torch") and hasattr(obj, "numpy") and hasattr(obj, "device"):
        return _torch_host(obj)
    if not (hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")):
        return None
    try:
        dev_type, _ = obj.__dlpack_device__()
    except Exception:  # a producer that cannot say where it lives is not a host tensor we can use
        return None
    if int(dev_type) not in (KDL_CPU, KDL_CUDA_HOST):
        return None
    t = from_dlpack(obj, None)  # host memory: no stream (DLPack: None for the CPU)
    if t.readonly:
        t.release()
        raise ValueError("out is read-only")
    if 0 in t.shape:  # nothing to write (and its pointer may be NULL, which NumPy refuses)
        t.release()
        return np.empty(t.shape, t.dtype)
    return np.asarray(_HostHolder(t))


def foreign(obj: Any, stream: Optional[int] = None) -> Optional[ForeignTensor]:
    """A ForeignTensor for a device array (CUDA array interface preferred, then DLPack); None for objects
    that are neither (NumPy arrays, scalars, lists)."""
    if hasattr(obj, "__cuda_array_interface__"):
        try:
            return from_cai(obj)
        except (AttributeError, RuntimeError, TypeError):  # e.g. torch tensors that require grad
            pass
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        dev_type, _ = obj.__dlpack_device__()
        if int(dev_type) in (KDL_CUDA, KDL_CUDA_MANAGED):
            return from_dlpack(obj, stream)
    return None
