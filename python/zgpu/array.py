"""zgpu.Array: a Zarr v2/v3 array read and written through the C library."""
from __future__ import annotations

import asyncio
import atexit
import ctypes
import functools
import json
import math
import operator
import os
import sys
import threading
import warnings
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _batch, _capi, _convert, _cuda, _dlpack, _fancy, _spread
from ._capi import lib
from ._context import Context, config, context_like
from ._device import DeviceArray, c_strides, device_copy, to_host
from ._indexing import Selection, box_layout, normalize, strided_view
from ._metadata import array_dtype
from ._rwlock import RWLock
from . import _vlen
from .attrs import Attributes
from .errors import InvalidArgumentError, ReadOnlyError, UnsupportedError

DeviceLike = Union[str, int, None, Any]


def parse_device(device: DeviceLike, default_cuda: int) -> Optional[int]:
    """None for host ("cpu"), else the CUDA ordinal ("cuda", "cuda:1", 1, torch.device, cupy.cuda.Device)."""
    if device is None:
        return None
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        return int(device)
    if hasattr(device, "id") and type(device).__module__.startswith("cupy"):
        return int(device.id)
    s = str(device).strip().lower()
    if s == "cpu":
        return None
    if s in ("cuda", "gpu"):
        return default_cuda
    for prefix in ("cuda:", "gpu:"):
        if s.startswith(prefix) and s[len(prefix):].isdigit():
            return int(s[len(prefix):])
    raise ValueError("device must be 'cpu', 'cuda' or 'cuda:N', got %r" % (device,))


def _close_handle(handle: ctypes.c_void_p) -> None:
    if handle is not None and handle.value and not sys.is_finalizing():
        lib.zgpu_array_close(handle)


# zgpu_array_create's `overwrite` bits (include/zgpu.h)
_CREATE_OVERWRITE = 1
_CREATE_STAGED = 2

# Staged arrays not yet committed: committed at interpreter exit, unless it exits through an unhandled exception.
_staged: "weakref.WeakSet[Array]" = weakref.WeakSet()
# Every open array, for the locks' reset in a forked child (_locks_after_fork).
_opened: "weakref.WeakSet[Array]" = weakref.WeakSet()


def _locks_after_fork() -> None:
    """In a forked child only the forking thread is left. A lock another thread of the parent held at the fork (a
    read's brief hold of its array's lock, in a training loop that reads while its DataLoader starts workers) would
    stay held there for ever, and the child's first read of that array would hang; readers counted by the parent's
    threads would keep a write waiting. Each array's locks start afresh in the child, as the C library's pool does."""
    for a in list(_opened):
        a._lock._reset()
        a._handles_lock = threading.Lock()


os.register_at_fork(after_in_child=_locks_after_fork)


def _dying() -> bool:
    """True when the interpreter is leaving through an unhandled exception (CPython sets sys.last_exc /
    sys.last_value before atexit runs then; sys.exit() does not). At an interactive prompt these stay set after
    any error, so there the exit always commits."""
    if hasattr(sys, "ps1"):
        return False
    return getattr(sys, "last_exc", None) is not None or getattr(sys, "last_value", None) is not None


@atexit.register
def _finish_staged() -> None:
    dying = _dying()
    for a in list(_staged):
        try:
            if dying:
                a._discard()
            else:
                a.close()
        except Exception as e:  # nowhere to raise at exit: say so
            warnings.warn("zgpu: array %r was not committed at exit: %s" % (a._path, e), RuntimeWarning)


class Array:
    """A Zarr array (format 2 or 3). Open one with :func:`zgpu.open_array` or make one with
    :func:`zgpu.create`.

    ``a[sel]`` reads with NumPy basic indexing and returns a NumPy array (a NumPy scalar when every axis is
    taken by an integer); ``a[sel] = x`` writes. :meth:`read` also reads into GPU memory.
    """

    def __init__(self, handle: ctypes.c_void_p, ctx: Context, read_only: bool = False,
                 staged: bool = False) -> None:
        self._handle = handle
        self._staged = staged
        self._ctx = ctx
        self._read_only = read_only
        self._lock = RWLock()
        self._device_handles: Dict[int, Tuple[ctypes.c_void_p, Context]] = {}
        self._handles_lock = threading.Lock()  # readers share _lock; this guards the lazy opens
        _opened.add(self)
        self._path = lib.zgpu_array_path(handle).decode("utf-8", "surrogateescape")
        self._ndim = lib.zgpu_array_ndim(handle)
        self._shape: Optional[Tuple[int, ...]] = None  # (the C handle's, cached: only resize changes it)
        self._dtype = array_dtype(handle)
        # variable-length strings / bytes: read and written by _vlen (offsets + bytes), never on a device
        self._vlen = _vlen.numpy_dtype(lib.zgpu_array_dtype_name(handle).decode()) is not None
        self._vlen_strings = self._vlen and lib.zgpu_array_dtype(handle) == _capi.STRING

    # ---- opening ---------------------------------------------------------------------------------
    @classmethod
    def _open(cls, path: Any, read_only: bool = False, ctx: Optional[Context] = None) -> "Array":
        ctx = ctx or config.context()
        h = ctypes.c_void_p()
        _capi.check(lib.zgpu_array_open(ctx.handle, _capi.path_bytes(path), ctypes.byref(h)))
        return cls(h, ctx, read_only)

    @classmethod
    def _create(cls, path: Any, document: Dict[str, Any], overwrite: bool) -> "Array":
        """overwrite: staged (see zgpu.create): built beside `path`, swapped in by close()."""
        ctx = config.context()
        h = ctypes.c_void_p()
        text = json.dumps(document, allow_nan=True).encode()
        flags = _CREATE_OVERWRITE | _CREATE_STAGED if overwrite else 0
        _capi.check(lib.zgpu_array_create(ctx.handle, _capi.path_bytes(path), text, flags, ctypes.byref(h)))
        a = cls(h, ctx, False, staged=bool(overwrite))
        if overwrite:
            _staged.add(a)
        return a

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        """Pickles as its path, mode and context settings: unpickled (in this process or another: a Dask or
        multiprocessing worker) it is the array opened anew there, with a context of the same settings."""
        if self._staged:
            raise TypeError("array %r is staged (made with mode='w' / overwrite=True, not committed yet): close() "
                            "commits it; only then can it be pickled" % self._path)
        self._h()  # (a closed array raises)
        return (_unpickle_array, (self._path, self._read_only, self._ctx.settings))

    def close(self) -> None:
        """Closes the C handles now (otherwise done when the object is garbage collected).

        An array made with ``mode="w"`` / ``overwrite=True`` is staged: it is built in a hidden directory beside
        its path while other handles (and zarr-python) still see what was there before, and close() commits it,
        swapping it in whole with renames. A failed commit raises (the new array is then discarded and the old
        one stays)."""
        with self._lock.exclusive():
            self._drop_device_handles()
            h, self._handle = self._handle, None
            staged, self._staged = self._staged, False
            _staged.discard(self)
            try:
                if staged and h is not None and h.value:
                    _capi.check(lib.zgpu_array_commit(h))
            finally:
                _close_handle(h)

    def _discard(self) -> None:
        """Closes a staged array without committing it: whatever was at the path stays."""
        with self._lock.exclusive():
            self._drop_device_handles()
            h, self._handle = self._handle, None
            self._staged = False
            _staged.discard(self)
            _close_handle(h)

    def __del__(self) -> None:
        try:
            for h, _ in getattr(self, "_device_handles", {}).values():
                _close_handle(h)
            h = getattr(self, "_handle", None)
            if getattr(self, "_staged", False) and h is not None and h.value and not sys.is_finalizing():
                if lib.zgpu_array_commit(h) != 0:  # garbage collected: commit, as close() would
                    warnings.warn("zgpu: array %r could not be committed: %s" % (self._path, _capi.last_error()),
                                  RuntimeWarning)
            _close_handle(h)
        except Exception:
            pass

    def __enter__(self) -> "Array":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        """Leaving the block closes the array; a staged one is committed, unless the block raised: then it is
        discarded and the path keeps what it held."""
        if exc_type is not None and self._staged:
            self._discard()
        else:
            self.close()

    def _h(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise InvalidArgumentError("array %r is closed" % self._path)
        return self._handle

    def _drop_device_handles(self) -> None:
        for h, _ in self._device_handles.values():
            _close_handle(h)
        self._device_handles.clear()

    def _handle_for(self, device: int) -> ctypes.c_void_p:
        """A handle whose context reads into CUDA device `device` (the array's own when it matches)."""
        if self._dtype.fields is not None or self._dtype.kind in "OT":  # (every device read comes here first)
            raise UnsupportedError("array %r: data type %s cannot be read into device memory: %s; read it on the "
                                   "host" % (self._path, self._dtype, "variable-length elements cannot live in a "
                                   "strided device array" if self._dtype.fields is None else "DLPack and the CUDA "
                                   "array interface have no record types"))
        if device == self._ctx.device:
            return self._h()
        if self._staged:  # another handle would open the path, where the old array still is
            raise UnsupportedError("array %r is staged (mode='w'): read it on device %d after close()"
                                   % (self._path, device))
        with self._handles_lock:
            entry = self._device_handles.get(device)
            if entry is None:
                # (the array's own settings on that device: its remote settings, cache sizes, ...)
                ctx = context_like({**self._ctx.settings, "device": device})
                h = ctypes.c_void_p()
                _capi.check(lib.zgpu_array_open(ctx.handle, _capi.path_bytes(self._path), ctypes.byref(h)))
                entry = (h, ctx)
                self._device_handles[device] = entry
            return entry[0]

    # ---- properties ------------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """Filesystem path of the array."""
        return self._path

    @property
    def zarr_format(self) -> int:
        """2 or 3."""
        return lib.zgpu_array_zarr_format(self._h())

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self._ndim

    def _shape_of(self, fn: Any) -> Tuple[int, ...]:
        buf = (ctypes.c_uint64 * max(1, self._ndim))()
        fn(self._h(), buf)
        return tuple(buf[:self._ndim])  # (c_uint64 items come out as Python ints)

    @property
    def shape(self) -> Tuple[int, ...]:
        """Shape of the array (current: reflects resize)."""
        shape = self._shape
        if shape is None:  # (every read's selection asks: 2-3 us a call to the C library)
            shape = self._shape = self._shape_of(lib.zgpu_array_shape)
        return shape

    @property
    def chunks(self) -> Tuple[int, ...]:
        """Shape of a read/write chunk (the inner chunk of a sharded array)."""
        return self._shape_of(lib.zgpu_array_chunk_shape)

    @property
    def shards(self) -> Optional[Tuple[int, ...]]:
        """Shard shape, or None when the array is not sharded."""
        buf = (ctypes.c_uint64 * max(1, self._ndim))()
        if not lib.zgpu_array_shard_shape(self._h(), buf):
            return None
        return tuple(int(buf[i]) for i in range(self._ndim))

    @property
    def dtype(self) -> np.dtype:
        """NumPy data type, native byte order (raw Zarr types are void dtypes 'V<n>')."""
        return self._dtype

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the whole array, uncompressed."""
        return self.size * self._dtype.itemsize

    @property
    def fill_value(self) -> Any:
        """The fill value as a NumPy scalar (a str or bytes for variable-length arrays)."""
        if self._vlen:
            return _vlen.fill_value(self._h(), self._vlen_strings)
        p = lib.zgpu_array_fill_value(self._h())
        raw = ctypes.string_at(p, self._dtype.itemsize)
        return np.frombuffer(raw, dtype=self._dtype)[0]

    @property
    def metadata(self) -> Dict[str, Any]:
        """The metadata document (zarr.json, or .zarray with "attributes" for v2) as a dict."""
        return json.loads(_capi.call_string(lib.zgpu_array_metadata_json, self._h()))

    @property
    def codecs(self) -> List[Dict[str, Any]]:
        """The codec chain as Zarr v3 codec dicts (v2 compressor/filters/order expressed the same way)."""
        return json.loads(_capi.call_string(lib.zgpu_array_codecs_json, self._h()))

    # ---- zarr-python's names for the same things ---------------------------------------------------
    @property
    def dimension_names(self) -> Optional[Tuple[Optional[str], ...]]:
        """Zarr v3 ``dimension_names`` (None where unset; always None for v2, as in zarr-python)."""
        names = self.metadata.get("dimension_names") if self.zarr_format == 3 else None
        return tuple(names) if names is not None else None

    def _codec_parts(self) -> Tuple[Tuple[Dict[str, Any], ...], Optional[Dict[str, Any]], Tuple[Dict[str, Any], ...]]:
        """(filters, serializer, compressors) of the codec chain, as zarr-python splits it: array -> array codecs,
        the array -> bytes codec, bytes -> bytes codecs."""
        codecs = self.codecs
        at = next((i for i, c in enumerate(codecs) if c.get("name") in _ARRAY_TO_BYTES), None)
        if at is None:
            return tuple(codecs), None, ()
        return tuple(codecs[:at]), codecs[at], tuple(codecs[at + 1:])

    @property
    def filters(self) -> Tuple[Dict[str, Any], ...]:
        """The array -> array codecs (v3 codec dicts; v2 filters expressed the same way)."""
        return self._codec_parts()[0]

    @property
    def serializer(self) -> Optional[Dict[str, Any]]:
        """The array -> bytes codec (``bytes``, or ``sharding_indexed`` with its inner codecs)."""
        return self._codec_parts()[1]

    @property
    def compressors(self) -> Tuple[Dict[str, Any], ...]:
        """The bytes -> bytes codecs (a v2 array's compressor among them)."""
        return self._codec_parts()[2]

    @property
    def order(self) -> str:
        """The memory order of a chunk: a v2 array's ``order``; "C" for v3 (a transpose codec is a filter)."""
        return str(self.metadata.get("order", "C")) if self.zarr_format == 2 else "C"

    @property
    def info(self) -> "ArrayInfo":
        """What zarr-python's ``Array.info`` shows (printable), from the metadata alone."""
        return ArrayInfo(self, complete=False)

    def info_complete(self) -> "ArrayInfo":
        """``info`` with what storage holds (lists the store): bytes stored, storage ratio, chunks initialised."""
        return ArrayInfo(self, complete=True)

    def append(self, data: Any, axis: int = 0) -> Tuple[int, ...]:
        """Grows the array along `axis` by `data` (every other axis as the array's) and writes it there, as
        zarr-python's ``append``; returns the new shape."""
        data = np.asarray(to_host(data))
        shape = self.shape
        axis = operator.index(axis)
        if not -len(shape) <= axis < len(shape):
            raise ValueError("axis %d is out of range for an array of %d dimensions" % (axis, len(shape)))
        axis %= len(shape)
        if data.ndim != len(shape) or any(d != s for k, (d, s) in enumerate(zip(data.shape, shape)) if k != axis):
            raise ValueError("cannot append data of shape %r to an array of shape %r along axis %d"
                             % (data.shape, shape, axis))
        new = tuple(s + data.shape[axis] if k == axis else s for k, s in enumerate(shape))
        self.resize(new)
        sel = tuple(slice(shape[axis], None) if k == axis else slice(None) for k in range(len(shape)))
        self.write(sel, data)
        return new

    @property
    def attrs(self) -> Attributes:
        """Attributes (a MutableMapping, written to storage at every change)."""
        return Attributes(self._load_attrs, self._store_attrs, self._read_only)

    def _load_attrs(self) -> str:
        with self._lock.shared():
            return _capi.call_string(lib.zgpu_array_attributes, self._h())

    def _store_attrs(self, text: str) -> None:
        with self._lock.exclusive():
            _capi.check(lib.zgpu_array_set_attributes(self._h(), text.encode()))
            self._drop_device_handles()

    @property
    def read_only(self) -> bool:
        """Whether the array was opened read-only (mode="r")."""
        return self._read_only

    @property
    def geo(self) -> Optional[Dict[str, Any]]:
        """GeoTIFF metadata of an array opened from a TIFF file (docs/tiff.md), else None.

        A dict with, where the file has them: ``epsg`` (the ProjectedCSType or GeographicType key),
        ``geotransform`` (GDAL's six numbers: x origin, pixel width, row rotation, y origin, column rotation,
        pixel height), ``nodata`` (GDAL_NODATA; also the array's fill value where the data type holds it),
        ``raster_type`` ("area" or "point"), ``geokeys`` (every GeoKey by number) and the model tags
        (``model_tiepoint``, ``model_pixel_scale``, ``model_transformation``). None for a TIFF without geo tags.
        """
        return json.loads(self._load_attrs()).get("geo")

    def _storage_info(self) -> Tuple[int, int]:
        n = ctypes.c_uint64()
        b = ctypes.c_uint64()
        with self._lock.shared():
            _capi.check(lib.zgpu_array_storage_info(self._h(), ctypes.byref(n), ctypes.byref(b)))
        return int(n.value), int(b.value)

    @property
    def nchunks_initialized(self) -> int:
        """Number of chunk (or shard) objects present in storage."""
        return self._storage_info()[0]

    def nbytes_stored(self) -> int:
        """Total size in bytes of the stored chunk (or shard) objects."""
        return self._storage_info()[1]

    @property
    def last_read_stats(self) -> Dict[str, Any]:
        """Per-stage timings and counters of the last completed read on this handle."""
        s = _capi.ReadStats()
        s.struct_size = ctypes.sizeof(s)
        lib.zgpu_array_last_read_stats(self._h(), ctypes.byref(s))
        return {name: getattr(s, name) for name, _ in _capi.ReadStats._fields_ if name != "struct_size"}

    def __len__(self) -> int:
        if self._ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        return "<zgpu.Array %r shape=%r dtype=%s zarr_format=%d>" % (self._path, self.shape, self._dtype,
                                                                     self.zarr_format)

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        if copy is False:
            raise ValueError("reading a zgpu.Array always makes a copy")
        a = np.asarray(self[...])
        return a if dtype is None else a.astype(dtype, copy=False)

    # ---- reading ---------------------------------------------------------------------------------
    def __getitem__(self, selection: Any) -> Any:
        return self.read(selection)

    def _read_box_host(self, sel: Selection, ptr: int, strides: Optional[Sequence[int]],
                       opts: Optional[_capi.ReadOptions] = None) -> None:
        if sel.empty:
            return
        start = _capi.u64_array(sel.start)
        count = _capi.u64_array(sel.count)
        st = _capi.i64_array(strides) if strides is not None else None
        with self._lock.shared():
            if opts is None:
                _capi.check(lib.zgpu_array_read(self._h(), start, count, ctypes.c_void_p(ptr), st))
            else:
                _capi.check(lib.zgpu_array_read_ex(self._h(), start, count, ctypes.c_void_p(ptr), st,
                                                   ctypes.byref(opts)))

    def _read_box_device(self, sel: Selection, device: int, ptr: int, strides: Optional[Sequence[int]],
                         stream: int, opts: Optional[_capi.ReadOptions] = None,
                         spread: Optional[Sequence[int]] = None) -> None:
        """The box of `sel` into device memory at ptr (byte strides; None: C-contiguous) on `device`; with
        `spread` (several GPUs, strides given) read by those GPUs together (zgpu/_spread.py)."""
        if sel.empty:
            return
        if spread is not None and any(d != device for d in spread):
            assert strides is not None
            _spread.read_spread(self, sel.start, sel.count, ptr, strides, spread, device, stream, opts)
            return
        start = _capi.u64_array(sel.start)
        count = _capi.u64_array(sel.count)
        st = _capi.i64_array(strides) if strides is not None else None
        with self._lock.shared():
            h = self._handle_for(device)
            if opts is None:
                _capi.check(lib.zgpu_array_read_device(h, start, count, ctypes.c_void_p(ptr), st,
                                                       ctypes.c_void_p(stream)))
            else:
                _capi.check(lib.zgpu_array_read_device_ex(h, start, count, ctypes.c_void_p(ptr), st,
                                                          ctypes.c_void_p(stream), ctypes.byref(opts), None))

    def read(self, selection: Any = Ellipsis, *, device: DeviceLike = None, out: Any = None,
             stream: Any = None, dtype: Any = None, scale: Optional[float] = None, offset: Optional[float] = None,
             clamp: Any = None, devices: Union[None, str, Sequence[DeviceLike]] = None) -> Any:
        """Reads a selection (NumPy basic indexing) into host or device memory.

        device: "cpu" (default; or inferred from `out`), "cuda" (the configured device), "cuda:N". Any thread
            may read into any GPU: the read runs with that device current and leaves the caller's as it was.
        devices: several GPUs ("cuda:N" or N each; "all": every GPU of the process) that read the selection
            together, each a part of whole chunks, into one result on `device` (default: the first of them, or
            out's), written over the peer path (NVLink / PCIe P2P). It pays where GPU decode bounds the read
            (DEFLATE: 1.3x on two H100s); reads bound by the host's page cache gain little.
        out: a NumPy array or host tensor (a PyTorch CPU tensor, pinned or not; any DLPack tensor in host
            memory), or any __cuda_array_interface__ / DLPack device array, of the selection's shape and the
            array's dtype; the data is written straight into it, honouring its strides.
        stream: for device reads, an int cudaStream_t, a cupy.cuda.Stream or a torch.cuda.Stream; the read
            is ordered on it and has completed when this returns.
        dtype, scale, offset, clamp: convert while reading: each value v becomes clamp(v * scale + offset)
            in `dtype` (default: the array's), clamp a pair (low, high) (either None); integers round to
            nearest (ties to even) and saturate, NaN becomes 0 in integers. On the GPU the conversion is fused
            into the scatter (a kernel compiled at run time and cached); `out` then has `dtype`.
        Returns a NumPy array or scalar (host), a :class:`DeviceArray` (device), or `out`.
        Slices with |step| > 1 read the bounding box of the selection, then take the strided view.
        A selection with integer arrays or boolean masks is read as zarr-python reads it (orthogonal, or
        coordinate when every axis has an integer array: see :attr:`oindex`, :attr:`vindex`).
        """
        if self._vlen and device is None and out is None and dtype is None and scale is None and offset is None:
            return _vlen.read(self, selection)  # strings, bytes: host only (the device path refuses them by name)
        if _fancy.is_fancy(selection):
            kind = "vindex" if _pure_fancy(selection, self._ndim) else "oindex"
            return self._fancy_read(kind, selection, device, out, stream, dtype, scale, offset, clamp)
        sel = normalize(selection, self.shape)
        odt, opts = _convert.read_options(self._dtype, dtype, scale, offset, clamp)
        ext = None
        host_out = out  # `out` as a NumPy array when it is in host memory (a view of a torch CPU tensor's memory)
        if out is not None and not isinstance(out, np.ndarray):
            host_out = _dlpack.host_array(out)  # torch CPU (pinned or not) or a host DLPack tensor; never CUDA
            if host_out is None:
                ext = _dlpack.foreign(out, _dlpack_stream(_cuda.stream_handle(stream)))
                if ext is None:
                    raise TypeError("out must be a NumPy array, a host tensor (PyTorch CPU, host DLPack) or a "
                                    "device array (__cuda_array_interface__ or DLPack), got %s" % type(out).__name__)
        dev = parse_device(device, self._ctx.device)
        spread = None
        if devices is not None:
            if isinstance(devices, str) and devices == "all":
                devices = list(range(_cuda.device_count()))
            spread = [parse_device(d, self._ctx.device) for d in devices]
            if not spread or any(d is None for d in spread):
                raise ValueError("devices must name one or more GPUs ('cuda:N' or N), got %r" % (devices,))
            if device is not None and dev is None:
                raise ValueError("devices=%r reads into GPU memory, but device=%r" % (devices, device))
            if dev is None and ext is None:
                dev = spread[0]
        if ext is not None:
            if ext.device_type not in (_dlpack.KDL_CUDA, _dlpack.KDL_CUDA_MANAGED):
                raise TypeError("out is not in CUDA device memory")
            out_dev = ext.device_id if ext.device_id >= 0 else (dev if dev is not None else self._ctx.device)
            if device is not None and dev != out_dev:
                raise ValueError("out is on cuda:%d but device=%r" % (out_dev, device))
            try:
                return self._read_into_device(sel, ext, out_dev, _cuda.stream_handle(stream), out, odt, opts,
                                              spread)
            finally:
                ext.release()
        if dev is None:
            res = self._read_host(sel, host_out, odt, opts)
            return out if out is not None else res  # the caller's object itself, a torch tensor too
        if out is not None:
            raise ValueError("device=%r needs a device array for out, got a host array (%s)"
                             % (device, type(out).__name__))
        return self._read_device(sel, dev, _cuda.stream_handle(stream), odt, opts, spread)

    def _check_out(self, shape: Tuple[int, ...], dtype: np.dtype, sel: Selection,
                   want: Optional[np.dtype] = None) -> None:
        want = self._dtype if want is None else want
        if tuple(shape) != sel.shape:
            raise ValueError("out has shape %r, the selection %r" % (tuple(shape), sel.shape))
        if np.dtype(dtype) != want:
            raise TypeError("out has dtype %s, the read %s" % (dtype, want))

    def _read_host(self, sel: Selection, out: Optional[np.ndarray], odt: Optional[np.dtype] = None,
                   opts: Optional[_capi.ReadOptions] = None) -> Any:
        odt = self._dtype if odt is None else odt
        if out is None:
            box = np.empty(sel.count, odt)
            self._read_box_host(sel, box.ctypes.data, None, opts)
            res = box[sel.view]
            if isinstance(res, np.ndarray) and not sel.dense:
                res = res.copy()  # do not keep the whole bounding box alive
            return res
        self._check_out(out.shape, out.dtype, sel, odt)
        if not out.flags.writeable:
            raise ValueError("out is read-only")
        layout = box_layout(sel, out.strides)
        if layout is not None:
            strides, offset = layout
            self._read_box_host(sel, out.ctypes.data + offset, strides, opts)
        else:
            box = np.empty(sel.count, odt)
            self._read_box_host(sel, box.ctypes.data, None, opts)
            out[...] = box[sel.view]
        return out

    def _read_device(self, sel: Selection, device: int, stream: int, odt: Optional[np.dtype] = None,
                     opts: Optional[_capi.ReadOptions] = None, spread: Optional[List[int]] = None) -> DeviceArray:
        # Axes selected with a negative step are read into the buffer reversed (negative strides in the C
        # read), so the result only has positive strides: PyTorch cannot hold negative ones.
        odt = self._dtype if odt is None else odt
        item = odt.itemsize
        nbytes = math.prod(sel.count) * item
        mem = _cuda.alloc(nbytes, device)
        cs = c_strides(sel.count, item)
        box_strides = list(cs)
        base = 0
        view: List[Any] = []
        axis = 0
        for it in sel.items:
            if it.kind == "new":
                view.append(None)
                continue
            if it.kind == "int":
                view.append(0)
            elif it.step < 0:
                if sel.count[axis] > 1:
                    base += (sel.count[axis] - 1) * cs[axis]
                    box_strides[axis] = -cs[axis]
                view.append(slice(None, None, -it.step))
            else:
                view.append(slice(None, None, it.step))
            axis += 1
        explicit = spread is not None or any(b < 0 for b in box_strides)
        self._read_box_device(sel, device, mem.ptr + base, box_strides if explicit else None, stream, opts, spread)
        shape, strides, offset = strided_view(sel.count, cs, 0, tuple(view))
        return DeviceArray(mem, mem.ptr + offset, shape, strides, odt, device)

    def _read_into_device(self, sel: Selection, ext: "_dlpack.ForeignTensor", device: int, stream: int,
                          out: Any, odt: Optional[np.dtype] = None, opts: Optional[_capi.ReadOptions] = None,
                          spread: Optional[List[int]] = None) -> Any:
        self._check_out(ext.shape, ext.dtype, sel, odt)
        if ext.readonly:
            raise ValueError("out is read-only")
        if ext.stream is not None and not _cuda.same_stream(ext.stream, stream):
            _cuda.synchronize(int(ext.stream))  # the producer's pending work on `out` must finish first
        layout = box_layout(sel, ext.strides)
        if layout is not None:
            strides, offset = layout
            self._read_box_device(sel, device, ext.ptr + offset, strides, stream, opts, spread)
            return out
        tmp = self._read_device(sel, device, stream, odt, opts, spread)
        device_copy(out, tmp)
        return out

    def read_batch(self, selections: Sequence[Any], *, device: DeviceLike = None, out: Any = None,
                   stream: Any = None, dtype: Any = None, scale: Optional[float] = None,
                   offset: Optional[float] = None, clamp: Any = None) -> Any:
        """Reads many selections of one shape as one batch into one stacked array of shape
        ``(len(selections),) + shape`` (NumPy basic indexing each; steps of 1 or -1).

        Every chunk the selections need is fetched and decoded once, however many of them share it; into GPU
        memory the whole batch is one plan and one batch on the GPU (or the host route for small batches, as the
        cost model picks: docs/tuning.md). device, out, stream, dtype, scale, offset and clamp as for :meth:`read`
        (out: the stacked array). Returns a NumPy array (host), a :class:`DeviceArray` (device), or `out`.
        """
        conv = _convert.read_options(self._dtype, dtype, scale, offset, clamp)
        return _batch.read_batch(self, selections, parse_device(device, self._ctx.device), device, out, stream, conv)

    # ---- async -----------------------------------------------------------------------------------
    async def read_async(self, selection: Any = Ellipsis, *, device: DeviceLike = None, out: Any = None,
                         stream: Any = None) -> Any:
        """``await a.read_async(...)``: :meth:`read` run in a worker thread, so the event loop keeps running
        while chunks are fetched and decoded (the C call runs without the GIL)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(self.read, selection, device=device,
                                                                  out=out, stream=stream))

    async def write_async(self, selection: Any, value: Any, *, stream: Any = None) -> None:
        """``await a.write_async(sel, value)``: :meth:`write` in a worker thread, so the event loop keeps running
        while chunks are encoded and written (the C call runs without the GIL); a device array is written from GPU
        memory after the work already on `stream`, as :meth:`write` does."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, functools.partial(self.write, selection, value, stream=stream))

    # ---- writing ---------------------------------------------------------------------------------
    def __setitem__(self, selection: Any, value: Any) -> None:
        self.write(selection, value)

    def write(self, selection: Any, value: Any, *, stream: Any = None) -> None:
        """Writes `value` (NumPy array, scalar, anything NumPy converts, or a CUDA device array) into the
        selection, broadcasting like NumPy. A device array (CuPy, PyTorch CUDA, any __cuda_array_interface__ or
        DLPack device array) of exactly the selection's shape and the array's dtype, any strides, is written
        from GPU memory: its chunks are gathered and compressed on the GPU (zgpu_array_write_device), after the
        work already on `stream` (an int cudaStream_t, a cupy.cuda.Stream or a torch.cuda.Stream; default: the
        value's own stream where it names one, else the default stream). Other device values are copied to the
        host first. Slices with |step| > 1 read, merge and rewrite the bounding box."""
        if self._read_only:
            raise ReadOnlyError("array %r was opened read-only (mode='r')" % self._path)
        if self._vlen:
            return _vlen.write(self, selection, value)
        if not _fancy.is_fancy(selection) and self._write_from_device(selection, value, stream):
            return
        value = to_host(value)
        if _fancy.is_fancy(selection):
            return self._fancy_write("vindex" if _pure_fancy(selection, self._ndim) else "oindex", selection, value)
        sel = normalize(selection, self.shape)
        if sel.empty:
            np.broadcast_to(np.asarray(value), sel.shape)  # same error as NumPy for a bad shape
            return
        start = _capi.u64_array(sel.start)
        count = _capi.u64_array(sel.count)
        if sel.dense:
            if (isinstance(value, np.ndarray) and value.dtype == self._dtype and value.shape == sel.shape
                    and all(s != 0 or n <= 1 for s, n in zip(value.strides, value.shape))):
                strides, offset = box_layout(sel, value.strides)  # type: ignore[misc]
                with self._lock.exclusive():
                    _capi.check(lib.zgpu_array_write(self._h(), start, count,
                                                     ctypes.c_void_p(value.ctypes.data + offset),
                                                     _capi.i64_array(strides)))
                    self._drop_device_handles()
                return
            box = np.empty(sel.count, self._dtype)
            box[sel.view] = value
            with self._lock.exclusive():
                _capi.check(lib.zgpu_array_write(self._h(), start, count, ctypes.c_void_p(box.ctypes.data),
                                                 None))
                self._drop_device_handles()
            return
        box = np.empty(sel.count, self._dtype)
        with self._lock.exclusive():  # read-merge-write of the bounding box, as one step
            h = self._h()
            _capi.check(lib.zgpu_array_read(h, start, count, ctypes.c_void_p(box.ctypes.data), None))
            box[sel.view] = value
            _capi.check(lib.zgpu_array_write(h, start, count, ctypes.c_void_p(box.ctypes.data), None))
            self._drop_device_handles()

    def _write_from_device(self, selection: Any, value: Any, stream: Any) -> bool:
        """`value` written from GPU memory (zgpu_array_write_device) where it is a device array of exactly the
        dense selection's shape and the array's dtype; False (nothing written) otherwise."""
        if isinstance(value, (np.ndarray, list, tuple)) or np.isscalar(value):
            return False
        sh = _cuda.stream_handle(stream)
        ext = _dlpack.foreign(value, _dlpack_stream(sh))
        if ext is None:
            return False
        try:
            if ext.device_type not in (_dlpack.KDL_CUDA, _dlpack.KDL_CUDA_MANAGED):
                return False
            sel = normalize(selection, self.shape)
            if (sel.empty or not sel.dense or np.dtype(ext.dtype) != self._dtype
                    or tuple(ext.shape) != tuple(sel.shape)):
                return False
            layout = box_layout(sel, ext.strides)
            if layout is None:
                return False
            if ext.stream is not None and not _cuda.same_stream(ext.stream, sh):
                _cuda.synchronize(int(ext.stream))  # the producer's pending work on `value` must finish first
            strides, offset = layout
            device = ext.device_id if ext.device_id >= 0 else self._ctx.device
            with self._lock.exclusive():
                _capi.check(lib.zgpu_array_write_device(self._handle_for(device), _capi.u64_array(sel.start),
                                                        _capi.u64_array(sel.count), ctypes.c_void_p(ext.ptr + offset),
                                                        _capi.i64_array(strides), ctypes.c_void_p(sh)))
                self._drop_device_handles()
            return True
        finally:
            ext.release()

    # ---- orthogonal, coordinate and block selections (zarr-python's oindex, vindex, blocks) -----------------
    @property
    def oindex(self) -> "_Indexer":
        """Orthogonal selection, as zarr-python's ``oindex``: per axis an integer, a slice, an integer array (any
        order, repeats allowed) or a boolean mask; the result is their outer product. ``a.oindex[[0, 5], :, m]``
        reads; ``a.oindex[...] = v`` writes; ``a.oindex.read(sel, device="cuda")`` reads into GPU memory (a CuPy
        array)."""
        return _Indexer(self, "oindex")

    @property
    def vindex(self) -> "_Indexer":
        """Coordinate selection, as zarr-python's ``vindex``: one integer array per axis, broadcast together (the
        result has their shape: a point each), or one boolean mask of the array's shape (the selected elements
        in C order)."""
        return _Indexer(self, "vindex")

    @property
    def blocks(self) -> "_Indexer":
        """Block selection, as zarr-python's ``blocks``: integers and step-1 slices of the chunk grid (of a sharded
        array, the shard grid, as in zarr-python): ``a.blocks[1, :2]`` is chunk row 1, chunk columns 0 and 1."""
        return _Indexer(self, "blocks")

    def _block_slices(self, selection: Any) -> Tuple[slice, ...]:
        """A block selection's element slices: zarr-python's blocks are the stored objects (shards if sharded)."""
        return _fancy.blocks(selection, self.shape, self.shards or self.chunks)

    def _fancy_boxes(self, kind: str, selection: Any) -> Tuple[Tuple[int, ...], "_fancy.Boxes"]:
        chunks = self.chunks
        if kind == "oindex":
            return _fancy.orthogonal(selection, self.shape, chunks)
        return _fancy.coordinate(selection, self.shape, chunks)

    def _fancy_read(self, kind: str, selection: Any, device: DeviceLike = None, out: Any = None,
                    stream: Any = None, dtype: Any = None, scale: Optional[float] = None,
                    offset: Optional[float] = None, clamp: Any = None) -> Any:
        if kind == "blocks":
            return self.read(self._block_slices(selection), device=device, out=out,
                             stream=stream, dtype=dtype, scale=scale, offset=offset, clamp=clamp)
        if out is not None or dtype is not None or scale is not None or offset is not None or clamp is not None:
            raise TypeError("out=, dtype=, scale=, offset= and clamp= apply to basic, block and batch selections; "
                            "an orthogonal or coordinate selection returns a new array (convert it afterwards)")
        shape, boxes = self._fancy_boxes(kind, selection)
        dev = parse_device(device, self._ctx.device)
        with self._lock.shared():
            if dev is None:
                views = _fancy.read_boxes_host(self._h(), boxes, self._dtype)
                return _fancy.gather_host(boxes, views, shape, self._dtype)
            s = _cuda.stream_handle(stream)
            buf = _fancy.read_boxes_device(self._handle_for(dev), boxes, self._dtype, dev, s)
        return _fancy.gather_device(boxes, buf, shape, self._dtype, dev, s)

    def _fancy_write(self, kind: str, selection: Any, value: Any) -> None:
        if self._read_only:
            raise ReadOnlyError("array %r was opened read-only (mode='r')" % self._path)
        if kind == "blocks":
            return self.write(self._block_slices(selection), value)
        value = to_host(value)
        shape, boxes = self._fancy_boxes(kind, selection)
        with self._lock.exclusive():  # read-merge-write of the boxes, as one step for this handle
            _fancy.write_boxes(self._h(), boxes, value, shape, self._dtype)
            self._drop_device_handles()

    def resize(self, *shape: Any) -> None:
        """Changes the shape (same number of dimensions); chunks wholly outside the new shape are deleted."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        if self._read_only:
            raise ReadOnlyError("array %r was opened read-only (mode='r')" % self._path)
        if len(shape) != self._ndim:
            raise ValueError("new shape %r has %d dimensions, the array %d" % (shape, len(shape), self._ndim))
        if any(int(s) < 0 for s in shape):
            raise ValueError("shape must be non-negative, got %r" % (shape,))
        with self._lock.exclusive():
            try:
                _capi.check(lib.zgpu_array_resize(self._h(), _capi.u64_array(int(s) for s in shape)))
            finally:
                self._shape = None
            self._drop_device_handles()


def _dlpack_stream(stream: int) -> int:
    # DLPack reserves 0 for CUDA; the legacy default stream is 1.
    return stream if stream else 1


def _unpickle_array(path: str, read_only: bool, settings: Dict[str, Any]) -> Array:
    return Array._open(path, read_only, context_like(settings))


def _pure_fancy(selection: Any, ndim: int) -> bool:
    """zarr-python's choice for ``a[...]`` with arrays (is_pure_fancy_indexing): a coordinate selection when every
    axis is an integer or an integer array (one at least), or (as NumPy) one boolean mask covers the array; else
    orthogonal."""
    items = selection if isinstance(selection, tuple) else (selection,)
    if len(items) == 1 and _fancy._is_array_like(items[0]):
        v = np.asarray(items[0])
        return v.ndim == ndim and (v.dtype != bool or ndim > 1)
    if len(items) != ndim:
        return False
    arrays = 0
    for x in items:
        if _fancy._is_array_like(x):
            if np.asarray(x).dtype == bool:
                return False
            arrays += 1
        elif _fancy._int_index(x) is None:  # a slice or an Ellipsis
            return False
    return arrays > 0


class _Indexer:
    """``a.oindex`` / ``a.vindex`` / ``a.blocks``: [] reads into host memory, []= writes, read(sel, device=...)
    reads into host or GPU memory."""

    def __init__(self, array: Array, kind: str) -> None:
        self._a = array
        self._kind = kind

    def __getitem__(self, selection: Any) -> Any:
        return self._a._fancy_read(self._kind, selection)

    def read(self, selection: Any, *, device: DeviceLike = None, stream: Any = None) -> Any:
        return self._a._fancy_read(self._kind, selection, device=device, stream=stream)

    def __setitem__(self, selection: Any, value: Any) -> None:
        self._a._fancy_write(self._kind, selection, value)


_ARRAY_TO_BYTES = ("bytes", "sharding_indexed", "vlen-utf8", "vlen-bytes")


class ArrayInfo:
    """``Array.info``: printed, the lines zarr-python's ``Array.info`` prints (codecs as v3 dicts); its fields are
    attributes (type, zarr_format, data_type, shape, chunk_shape, shard_shape, order, read_only, store_type, filters,
    serializer, compressors, count_bytes, and with info_complete() count_bytes_stored, storage_ratio,
    count_chunks_initialized)."""

    def __init__(self, a: Array, complete: bool) -> None:
        self.type = "Array"
        self.zarr_format = a.zarr_format
        self.data_type = str(a.dtype)
        self.shape = a.shape
        self.shard_shape = a.shards
        self.chunk_shape = a.chunks
        self.order = a.order
        self.read_only = a.read_only
        p = a.path
        self.store_type = ("S3 (zgpu)" if p.startswith("s3://") else "HTTP (zgpu)" if p.startswith(("http://", "https://"))
                           else "local (zgpu)")
        self.filters, self.serializer, self.compressors = a._codec_parts()
        self.count_bytes = a.nbytes
        self.count_bytes_stored: Optional[int] = None
        self.storage_ratio: Optional[float] = None
        self.count_chunks_initialized: Optional[int] = None
        self.count_chunks = math.prod(-(-n // c) if c else 0 for n, c in zip(a.shape, a.shards or a.chunks))
        if complete:
            n, b = a._storage_info()
            self.count_chunks_initialized, self.count_bytes_stored = n, b
            self.storage_ratio = self.count_bytes / b if b else None

    def __repr__(self) -> str:
        def codec(c: Any) -> str:
            return json.dumps(c, separators=(", ", ": "))
        rows = [("Type", self.type), ("Zarr format", self.zarr_format), ("Data type", self.data_type),
                ("Shape", self.shape)]
        if self.shard_shape is not None:
            rows.append(("Shard shape", self.shard_shape))
        rows += [("Chunk shape", self.chunk_shape), ("Order", self.order), ("Read-only", self.read_only),
                 ("Store type", self.store_type),
                 ("Filters", "(%s)" % ", ".join(codec(c) for c in self.filters)),
                 ("Serializer", codec(self.serializer) if self.serializer else "-"),
                 ("Compressors", "(%s)" % ", ".join(codec(c) for c in self.compressors)),
                 ("No. bytes", "%d (%s)" % (self.count_bytes, _human(self.count_bytes)))]
        if self.count_bytes_stored is not None:
            rows.append(("No. bytes stored", "%d (%s)" % (self.count_bytes_stored, _human(self.count_bytes_stored))))
            rows.append(("Storage ratio", "%.1f" % self.storage_ratio if self.storage_ratio else "-"))
            rows.append(("Chunks Initialized", "%d/%d" % (self.count_chunks_initialized, self.count_chunks)))
        return "\n".join("%-19s: %s" % (k, v) for k, v in rows)

    __str__ = __repr__


def _human(n: int) -> str:
    for unit in ("", "K", "M", "G", "T"):
        if n < 1024 or unit == "T":
            return ("%d B" % n) if not unit else "%.1f %siB" % (n, unit)
        n /= 1024  # type: ignore[assignment]
    return str(n)
