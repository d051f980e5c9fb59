"""Exceptions raised by zgpu.

Every failed C call becomes an instance of a :class:`ZgpuError` subclass chosen by its status code; the
exception message is the C library's message (it names the array, the chunk key and the codec involved).
Each subclass also derives from the built-in exception a Python user would expect, so
``except FileNotFoundError`` or ``except IndexError`` work as usual.
"""
from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "ZgpuError", "InvalidArgumentError", "NotFoundError", "MemberNotFoundError", "ExistsError",
    "ZgpuIOError", "BadMetadataError", "UnsupportedError", "CorruptDataError", "OutOfRangeError",
    "ZgpuMemoryError", "NoGPUError", "CudaError", "InternalError", "ReadOnlyError",
]


class ZgpuError(Exception):
    """Base class of every zgpu error. ``status`` is the C status code, ``status_name`` its name."""

    status: int = -1
    status_name: str = "ZGPU_ERR_PYTHON"


class InvalidArgumentError(ZgpuError, ValueError):
    """The call received something unusable (wrong ndim, bad stride, bad argument)."""


class NotFoundError(ZgpuError, FileNotFoundError):
    """No array, group or key at that path."""


class MemberNotFoundError(NotFoundError, KeyError):
    """A group has no member of that name (``group[name]``); also a :class:`KeyError`."""

    def __str__(self) -> str:  # KeyError would quote the message
        return Exception.__str__(self)


class ExistsError(ZgpuError, FileExistsError):
    """A node already exists where one was to be created without ``overwrite=True``."""


class ZgpuIOError(ZgpuError, OSError):
    """The operating system failed a read, write or rename."""


class BadMetadataError(ZgpuError, ValueError):
    """zarr.json / .zarray / .zattrs are malformed or inconsistent."""


class UnsupportedError(ZgpuError, NotImplementedError):
    """Valid Zarr that zgpu does not implement (a data type, codec or extension)."""


class CorruptDataError(ZgpuError):
    """A stored chunk or shard failed to decode or has the wrong size or checksum."""


class OutOfRangeError(ZgpuError, IndexError):
    """A selection or index outside the array's shape."""


class ZgpuMemoryError(ZgpuError, MemoryError):
    """Host or device allocation failed, or the memory budget is too small."""


class NoGPUError(ZgpuError, RuntimeError):
    """A device operation on a build or machine without a usable GPU."""


class CudaError(ZgpuError, RuntimeError):
    """The CUDA runtime, cuFile or nvCOMP reported an error."""


class InternalError(ZgpuError, RuntimeError):
    """A bug in zgpu: please report it with the message."""


class ReadOnlyError(ZgpuError, PermissionError):
    """A write to an array or group opened with ``mode="r"``."""


# Status codes of include/zgpu.h, in enum order.
_BY_STATUS: Dict[int, Type[ZgpuError]] = {
    1: InvalidArgumentError,
    2: NotFoundError,
    3: ExistsError,
    4: ZgpuIOError,
    5: BadMetadataError,
    6: UnsupportedError,
    7: CorruptDataError,
    8: OutOfRangeError,
    9: ZgpuMemoryError,
    10: NoGPUError,
    11: CudaError,
    12: InternalError,
}

STATUS_NAMES: Dict[int, str] = {
    0: "ZGPU_OK", 1: "ZGPU_ERR_INVALID_ARGUMENT", 2: "ZGPU_ERR_NOT_FOUND", 3: "ZGPU_ERR_EXISTS",
    4: "ZGPU_ERR_IO", 5: "ZGPU_ERR_BAD_METADATA", 6: "ZGPU_ERR_UNSUPPORTED", 7: "ZGPU_ERR_CORRUPT_DATA",
    8: "ZGPU_ERR_OUT_OF_RANGE", 9: "ZGPU_ERR_NO_MEMORY", 10: "ZGPU_ERR_NO_GPU", 11: "ZGPU_ERR_CUDA",
    12: "ZGPU_ERR_INTERNAL",
}


def make_error(status: int, message: str, cls: Optional[Type[ZgpuError]] = None) -> ZgpuError:
    """Builds the exception for a C status code (single-argument construction keeps OSError's str())."""
    if cls is None:
        cls = _BY_STATUS.get(status, InternalError)
    exc = cls(message)
    exc.status = status
    exc.status_name = STATUS_NAMES.get(status, "ZGPU_ERR_UNKNOWN(%d)" % status)
    return exc
