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


# Exception class of each C status, by the status's name. The numbers and the names come from the loaded
# library (zgpu_status_name, zgpu_status_message: _capi registers them at import), not from a copy here.
_BY_NAME: Dict[str, Type[ZgpuError]] = {
    "ZGPU_ERR_INVALID_ARGUMENT": InvalidArgumentError,
    "ZGPU_ERR_NOT_FOUND": NotFoundError,
    "ZGPU_ERR_EXISTS": ExistsError,
    "ZGPU_ERR_IO": ZgpuIOError,
    "ZGPU_ERR_BAD_METADATA": BadMetadataError,
    "ZGPU_ERR_UNSUPPORTED": UnsupportedError,
    "ZGPU_ERR_CORRUPT_DATA": CorruptDataError,
    "ZGPU_ERR_OUT_OF_RANGE": OutOfRangeError,
    "ZGPU_ERR_NO_MEMORY": ZgpuMemoryError,
    "ZGPU_ERR_NO_GPU": NoGPUError,
    "ZGPU_ERR_CUDA": CudaError,
    "ZGPU_ERR_INTERNAL": InternalError,
}

#: status number -> name and one-line description, as the C library gives them.
STATUS_NAMES: Dict[int, str] = {}
STATUS_MESSAGES: Dict[int, str] = {}


def register_statuses(names: Dict[int, str], messages: Dict[int, str]) -> None:
    """Called once by _capi with every status of the loaded library."""
    STATUS_NAMES.update(names)
    STATUS_MESSAGES.update(messages)


def status_of(name: str) -> int:
    """The number of a status by its C name, e.g. status_of("ZGPU_ERR_NOT_FOUND")."""
    for number, n in STATUS_NAMES.items():
        if n == name:
            return number
    raise KeyError("the loaded zgpu library has no status %s" % name)


def make_error(status: int, message: str, cls: Optional[Type[ZgpuError]] = None) -> ZgpuError:
    """Builds the exception for a C status code (single-argument construction keeps OSError's str())."""
    name = STATUS_NAMES.get(status, "ZGPU_ERR_UNKNOWN(%d)" % status)
    if cls is None:
        cls = _BY_NAME.get(name, InternalError)
    exc = cls(message)
    exc.status = status
    exc.status_name = name
    return exc
