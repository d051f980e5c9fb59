"""zgpu.DeviceArray: GPU memory returned by device reads, handed to CuPy / PyTorch without a copy."""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from . import _cuda, _dlpack
from .errors import UnsupportedError


def c_strides(shape: Tuple[int, ...], itemsize: int) -> Tuple[int, ...]:
    out = []
    acc = itemsize
    for s in reversed(shape):
        out.append(acc)
        acc *= max(1, s)
    return tuple(reversed(out))


class DeviceArray:
    """An N-dimensional view of CUDA device memory that zgpu allocated and filled.

    Implements ``__cuda_array_interface__`` (version 3) and ``__dlpack__`` / ``__dlpack_device__``, so
    ``cupy.asarray(x)`` and ``torch.from_dlpack(x)`` use the memory in place. The memory stays alive as long
    as this object or any array created from it (through the DLPack deleter or CuPy's reference) exists.
    Use :meth:`get` to copy to a NumPy array.

    The data is complete when the read that made it returns, so the interfaces report no stream to wait on.
    """

    __slots__ = ("_owner", "_ptr", "_shape", "_strides", "_dtype", "_device", "__weakref__")

    def __init__(self, owner: Any, ptr: int, shape: Tuple[int, ...], strides: Optional[Tuple[int, ...]],
                 dtype: np.dtype, device: int) -> None:
        self._owner = owner
        self._ptr = int(ptr)
        self._shape = tuple(int(s) for s in shape)
        self._dtype = np.dtype(dtype)
        self._strides = (c_strides(self._shape, self._dtype.itemsize) if strides is None
                         else tuple(int(s) for s in strides))
        self._device = int(device)

    @property
    def shape(self) -> Tuple[int, ...]:
        """Shape, like ndarray.shape."""
        return self._shape

    @property
    def strides(self) -> Tuple[int, ...]:
        """Byte strides, like ndarray.strides."""
        return self._strides

    @property
    def dtype(self) -> np.dtype:
        """NumPy data type (native byte order)."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self._shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (size times the item size)."""
        return self.size * self._dtype.itemsize

    @property
    def ptr(self) -> int:
        """Device address of element [0, ..., 0]."""
        return self._ptr

    @property
    def device(self) -> int:
        """CUDA device ordinal."""
        return self._device

    @property
    def is_c_contiguous(self) -> bool:
        """Whether the elements lie in C order without gaps."""
        return self.size <= 1 or all(
            st == cs for n, st, cs in zip(self._shape, self._strides, c_strides(self._shape, self._dtype.itemsize))
            if n > 1)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": self._shape,
            "typestr": self._dtype.str,
            "descr": [("", self._dtype.str)],
            "data": (self._ptr if self.size else 0, False),
            "strides": None if self.is_c_contiguous else self._strides,
            "version": 3,
            "stream": None,  # the read synchronised its stream: nothing to wait for
        }

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_dlpack.KDL_CUDA, self._device)

    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """A DLPack capsule (versioned when the consumer's max_version is >= 1.0).

        `stream` needs no action: the data is complete before this object is returned to the user."""
        if dl_device is not None and tuple(int(x) for x in dl_device) != self.__dlpack_device__():
            raise BufferError("zgpu.DeviceArray lives on cuda:%d and cannot be exported to %r"
                              % (self._device, dl_device))
        if copy:
            raise BufferError("zgpu.DeviceArray cannot export a copy (copy=True)")
        if any(st < 0 for n, st in zip(self._shape, self._strides) if n > 1):
            # PyTorch aborts the process on negative strides; zgpu's own reads never produce them
            raise BufferError("a DeviceArray with negative strides cannot be exported through DLPack; use "
                              "cupy.asarray(x) (CUDA array interface) instead")
        versioned = max_version is not None and int(max_version[0]) >= 1
        return _dlpack.export(self._ptr, self._shape, self._strides, self._dtype, _dlpack.KDL_CUDA,
                              self._device, self, versioned)

    def get(self) -> np.ndarray:
        """Copies the data to a new C-contiguous NumPy array."""
        return _cuda.to_host(self._ptr, self._shape, self._strides, self._dtype, owner=self)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self._shape[0]

    def __repr__(self) -> str:
        return "zgpu.DeviceArray(shape=%r, dtype=%s, device='cuda:%d')" % (self._shape, self._dtype,
                                                                         self._device)


def to_host(value: Any) -> Any:
    """NumPy data for a write: device arrays are copied to the host."""
    if isinstance(value, np.ndarray) or np.isscalar(value) or isinstance(value, (list, tuple)):
        return value
    if isinstance(value, DeviceArray):
        return value.get()
    mod = type(value).__module__
    if mod.startswith("torch") and hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    if mod.startswith("cupy") and hasattr(value, "get"):
        return value.get()
    ext = _dlpack.foreign(value, 1)
    if ext is not None:
        try:
            return _cuda.to_host(ext.ptr, ext.shape, ext.strides, ext.dtype, owner=value)
        finally:
            ext.release()
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    return np.asarray(value)


def device_copy(dst: Any, src: "DeviceArray") -> None:
    """dst[...] = src between device arrays with arbitrary strides (needs CuPy or PyTorch)."""
    try:
        import cupy
        cupy.asarray(dst)[...] = cupy.asarray(src)
        cupy.cuda.get_current_stream().synchronize()
        return
    except ImportError:
        pass
    try:
        import torch
        d = torch.from_dlpack(dst) if hasattr(dst, "__dlpack__") else torch.as_tensor(dst, device="cuda")
        d.copy_(torch.from_dlpack(src))
        torch.cuda.synchronize(d.device)
        return
    except ImportError:
        pass
    raise UnsupportedError("reading a selection with |step| > 1 into a device `out` needs CuPy or PyTorch "
                           "for the strided copy; read without out= to get a strided DeviceArray view")
