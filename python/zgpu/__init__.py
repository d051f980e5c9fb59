"""zgpu: read and write Zarr v2 and v3 arrays into NumPy arrays or straight into GPU memory.

    >>> import zgpu
    >>> a = zgpu.open_array("data/image.zarr")
    >>> a[0, 100:200]                      # NumPy array (basic indexing)
    >>> d = a.read(device="cuda")          # zgpu.DeviceArray in GPU memory
    >>> cupy.asarray(d); torch.from_dlpack(d)   # zero-copy views
"""
from __future__ import annotations

import os as _os
from typing import Any as _Any, Dict as _Dict, Optional as _Optional, Sequence as _Sequence, Union as _Union

# before the imports: _capi checks that an installed CUDA plugin (zgpu-cuda12/13) is of this version
__version__ = "0.1.0"

from . import _capi  # noqa: E402
from ._context import config, set_threads
from ._device import DeviceArray
from ._metadata import build_document as _build_document
from ._prefetch import SlabIterator, iter_slabs
from .array import Array
from .attrs import Attributes
from .errors import (BadMetadataError, CorruptDataError, CudaError, ExistsError, InternalError,
                     InvalidArgumentError, MemberNotFoundError, NoGPUError, NotFoundError, OutOfRangeError,
                     ReadOnlyError, UnsupportedError, ZgpuError, ZgpuIOError, ZgpuMemoryError)
from .group import Group
from .group import node_kind as _node_kind, open_node as _open_node
from . import ome
from .dask import to_dask, to_zarr

__all__ = [
    "open", "open_array", "open_group", "create", "create_group", "Array", "Group", "DeviceArray",
    "Attributes", "config", "set_threads", "gpu_available", "library_version", "library_path",
    "iter_slabs", "SlabIterator", "consolidate_metadata", "open_consolidated", "ome", "to_dask", "to_zarr",
    "ZgpuError", "InvalidArgumentError", "NotFoundError", "MemberNotFoundError", "ExistsError",
    "ZgpuIOError", "BadMetadataError", "UnsupportedError", "CorruptDataError", "OutOfRangeError",
    "ZgpuMemoryError", "NoGPUError", "CudaError", "InternalError", "ReadOnlyError",
]

_PathLike = _Union[str, "_os.PathLike[str]"]
_MODES = ("r", "r+", "a", "w", "w-")


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ValueError("mode must be one of %s, got %r" % (", ".join(repr(m) for m in _MODES), mode))


def gpu_available() -> bool:
    """True if the loaded library was built with CUDA and a CUDA device is usable."""
    return _capi.gpu_available()


def library_version() -> str:
    """Version of the loaded C library."""
    return _capi.version()


def library_path() -> str:
    """Path of the loaded libzgpu.so."""
    return _capi.LIB_PATH


def create(path: _PathLike, shape: _Union[int, _Sequence[int]], dtype: _Any, chunks: _Any = None,
           shards: _Any = None, fill_value: _Any = 0, compressors: _Any = "auto", filters: _Any = None,
           serializer: _Any = "auto", zarr_format: int = 3, overwrite: bool = False,
           attributes: _Optional[_Dict[str, _Any]] = None,
           dimension_names: _Optional[_Sequence[_Optional[str]]] = None, order: str = "C",
           chunk_key_encoding: _Any = None, dimension_separator: _Optional[str] = None) -> Array:
    """Creates an array, with zarr-python 3's argument names and meanings.

    chunks: chunk shape (an int for every axis; None guesses ~1 MiB chunks, one chunk under 4 MiB; -1 or None in a
        tuple = the
        whole axis). With shards, chunks is the inner chunk shape.
    shards: shard shape (Zarr v3 sharding_indexed with a crc32c-checked index at the end), or None.
    compressors: "auto" (zstd level 0, as zarr-python), None, a name ("zstd", "gzip", "blosc", "crc32c";
        v2 also "zlib", "bz2", "lz4"), a dict ({"name": "zstd", "configuration": {"level": 3}} for v3,
        {"id": "zstd", "level": 3} for v2), a zarr/numcodecs codec object, or a list of those.
    filters: array-to-array codecs (v3 dicts such as {"name": "transpose", ...}) or numcodecs filter
        configs for v2.
    fill_value: the value of unwritten elements (None = v2 null).
    order: "C" or "F"; stored for Zarr v2, ignored for v3 (as in zarr-python 3).
    overwrite: replace an existing node (or a non-empty directory, as zarr-python does); else ExistsError.
        The new array is *staged*: it is built in a hidden directory beside `path` (``.NAME.zgpu-stage-*``)
        while other handles, processes and zarr-python still see what was there (or nothing), and it is swapped
        in whole, with renames, when it is committed: by ``close()``, by leaving a ``with`` block normally, when
        the object is garbage collected, or at interpreter exit. It is discarded instead (the path keeps what it
        held) when a ``with`` block raises, when the interpreter exits through an unhandled exception, or when
        the process dies; the next writer of the path removes such leftovers. Until then, read it on the array's
        own device only.
    """
    doc = _build_document(shape, dtype, chunks, shards, fill_value, compressors, filters, serializer,
                         zarr_format, attributes, dimension_names, order, chunk_key_encoding,
                         dimension_separator)
    return Array._create(path, doc, overwrite)


def create_group(path: _PathLike, *, zarr_format: int = 3, attributes: _Optional[_Dict[str, _Any]] = None,
                 overwrite: bool = False) -> Group:
    """Creates a group. overwrite: a node (or non-empty directory) at `path` is replaced, with its members, in
    one atomic swap (an interruption leaves the old one whole); else ExistsError."""
    return Group._create(path, zarr_format, attributes, overwrite)


def open_array(path: _PathLike, mode: str = "r", **create_kwargs: _Any) -> Array:
    """Opens an array.

    mode: "r" read-only; "r+" read/write, must exist; "a" read/write, created from `create_kwargs` if
    absent; "w" created (replacing what is there); "w-" created, ExistsError if something is there.
    A "w" array is staged (see :func:`create`, ``overwrite``): what was at `path` stays visible until the array
    is closed (``close()``, the end of a ``with`` block that did not raise, garbage collection, interpreter
    exit), which swaps the new array in whole.
    """
    _check_mode(mode)
    if mode in ("w", "w-"):
        if "shape" not in create_kwargs or "dtype" not in create_kwargs:
            raise TypeError("open_array(mode=%r) creates the array: pass shape= and dtype= (or use "
                            "zgpu.create)" % mode)
        return create(path, overwrite=(mode == "w"), **create_kwargs)
    if mode == "a" and _node_kind(path) == 0:
        if "shape" not in create_kwargs or "dtype" not in create_kwargs:
            raise NotFoundError("no array at %r; pass shape= and dtype= to create one" % _os.fspath(path))
        return create(path, **create_kwargs)
    if create_kwargs:
        raise TypeError("unexpected arguments for opening an existing array: %s" % ", ".join(create_kwargs))
    try:  # (the open itself tells an array from nothing: one round trip less on a remote store)
        return Array._open(path, read_only=(mode == "r"))
    except (NotFoundError, BadMetadataError):  # a v2 group has no .zarray; a v3 one says node_type "group"
        if _node_kind(path) == 2:
            raise _capi.make_error(_capi.ERR_NOT_FOUND, "%r is a group, not an array" % _os.fspath(path)) from None
        raise


def open_group(path: _PathLike, mode: str = "r", *, zarr_format: _Optional[int] = None,
               attributes: _Optional[_Dict[str, _Any]] = None) -> Group:
    """Opens a group. mode as for :func:`open_array`; created groups use zarr_format (default 3) and
    attributes."""
    _check_mode(mode)
    fmt = 3 if zarr_format is None else zarr_format
    if mode in ("w", "w-"):
        return Group._create(path, fmt, attributes, overwrite=(mode == "w"))
    kind = _node_kind(path)
    if mode == "a" and kind == 0:
        return Group._create(path, fmt, attributes, overwrite=False)
    if kind == 1:
        raise _capi.make_error(_capi.ERR_NOT_FOUND, "%r is an array, not a group" % _os.fspath(path))
    return Group._open(path, read_only=(mode == "r"))


def open_consolidated(path: _PathLike, mode: str = "r", **kwargs: _Any) -> Group:
    """Opens a group that holds consolidated metadata, as zarr-python's ``zarr.open_consolidated``: mode and
    keywords as for :func:`open_group`; BadMetadataError where the group has none (:func:`consolidate_metadata`
    writes it). zgpu lists members from it on stores that cannot list (plain HTTP)."""
    g = open_group(path, mode, **kwargs)
    if not g.has_consolidated_metadata():
        raise _capi.make_error(_capi.ERR_BAD_METADATA, "group %r has no consolidated metadata (v2: .zmetadata; v3: "
                               "consolidated_metadata in zarr.json); zgpu.consolidate_metadata(path) writes it"
                               % _os.fspath(path))
    return g


def consolidate_metadata(path: _PathLike) -> Group:
    """Consolidates the metadata of the hierarchy below the group at `path` into it, as zarr-python's
    ``zarr.consolidate_metadata`` (see :meth:`Group.consolidate_metadata`); returns the group."""
    return Group._open(path, read_only=False).consolidate_metadata()


def open(path: _PathLike, mode: str = "r", **kwargs: _Any) -> _Union[Array, Group]:  # noqa: A001
    """Opens the array or group at `path` (like zarr.open).

    "r"/"r+": whatever is there. "a": whatever is there, else an array if shape= is given, else a group.
    "w"/"w-": a new array if shape= is given (see :func:`create`), else a new group.

    A TIFF file (classic or BigTIFF, GeoTIFF, COG) opens as a read-only array: its full-resolution image (a stack
    of its pages where they are alike); ``"x.tif#level=K"`` opens resolution level K (COG overviews, SubIFDs),
    ``"x.tif#page=K"`` page K. Its GeoTIFF keys are in :attr:`Array.geo`, its layout in ``attrs["tiff"]``
    (docs/tiff.md).
    """
    _check_mode(mode)
    if mode in ("w", "w-"):
        if "shape" in kwargs:
            return open_array(path, mode, **kwargs)
        return open_group(path, mode, **kwargs)
    # whatever is there, its metadata read once (one request on a remote store)
    try:
        node = _open_node(path, read_only=(mode == "r"))
    except NotFoundError:
        if mode != "a" or _node_kind(path) != 0:
            raise
        if "shape" in kwargs:
            return open_array(path, mode, **kwargs)
        return open_group(path, mode, **kwargs)
    unexpected = [k for k in kwargs if isinstance(node, Array) or k not in ("zarr_format", "attributes")]
    if unexpected:
        node.close()
        raise TypeError("unexpected arguments for opening an existing %s: %s"
                        % ("array" if isinstance(node, Array) else "group", ", ".join(unexpected)))
    return node


del annotations  # (the __future__ import: not part of the namespace)
