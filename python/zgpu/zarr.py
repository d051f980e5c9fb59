"""zarr-python's codec pipeline through zgpu (issue 21): with

    zarr.config.set({"codec_pipeline.path": "zgpu.zarr.ZgpuCodecPipeline"})

(or ``ZARR_CODEC_PIPELINE__PATH=zgpu.zarr.ZgpuCodecPipeline`` in the environment) existing zarr-python code reads and
writes arrays of a local store (LocalStore), or of HTTP or S3 (FsspecStore over fsspec's HTTP or s3fs filesystems:
zgpu's own HTTP and S3 stores reach the same URL, with the s3fs filesystem's endpoint, region and anonymity) through
zgpu: the chunks one zarr-python request needs are read and decoded as one
zgpu batch (zgpu_array_read_regions: every chunk once, on the context's threads, zstd stopping short where the
request needs part of a chunk), and written as zgpu writes (partial chunks merged under zgpu's per-chunk write
lock), instead of one asyncio task a chunk.

Anything zgpu cannot do falls back to zarr-python's own pipeline (BatchedCodecPipeline), per array, with a debug
log saying why: another store (zarr's MemoryStore, ZipStore, fsspec's other filesystems; an s3fs filesystem given
credentials other than the environment's, as zgpu takes them from the environment or a profile), a codec, data type
or layout zgpu does not read, a selection other than a box per chunk (fancy indexing hands the chunks index arrays).

Under ``zarr.config.enable_gpu()`` zarr-python's output buffers are CuPy arrays: zgpu then reads the request's chunks
into them as one device read (decoded on the GPU, or on the host with one copy where its cost model finds that
faster: docs/tuning.md), on CuPy's current stream, so ``arr[...]`` returns a CuPy array that zarr-python never
decoded on the host. Writes of GPU buffers are encoded on the host (one copy of the value).
"""
from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np
from zarr.abc.codec import CodecPipeline
from zarr.core.codec_pipeline import BatchedCodecPipeline

from ._context import config, context_like
from .array import Array
from .errors import ZgpuError

__all__ = ["ZgpuCodecPipeline"]

log = logging.getLogger("zgpu.zarr")


def _fallback_for(metadata: Any) -> BatchedCodecPipeline:
    """zarr-python's own pipeline for the array (what zarr.core.array.create_codec_pipeline would make)."""
    if getattr(metadata, "zarr_format", 3) == 2:
        from zarr.codecs._v2 import V2Codec
        return BatchedCodecPipeline.from_codecs([V2Codec(filters=metadata.filters, compressor=metadata.compressor)])
    return BatchedCodecPipeline.from_codecs(metadata.codecs)


def _box_of(selection: Any, chunk_shape: Tuple[int, ...]
            ) -> Optional[Tuple[Tuple[int, ...], Tuple[int, ...], Tuple[int, ...]]]:
    """(start, count, steps) within a chunk of a selection of slices with positive steps (and integers): the box
    that bounds it and the step along each axis (1 for integers); None for anything else."""
    start, count, steps = [], [], []
    for s, n in zip(selection, chunk_shape):
        if isinstance(s, slice):
            a, b, step = s.indices(n)
            if step < 1:
                return None
            k = len(range(a, b, step))
            start.append(a)
            count.append((k - 1) * step + 1 if k else 0)
            steps.append(step)
        elif isinstance(s, (int, np.integer)):
            start.append(int(s))
            count.append(1)
            steps.append(1)
        else:
            return None
    return tuple(start), tuple(count), tuple(steps)


def _fsspec_target(store: Any) -> Any:
    """For a zarr-python FsspecStore: (zgpu's URL of the store's root, the zgpu remote settings that make zgpu reach
    it as the fsspec filesystem does), or a string saying why zgpu is not to (then: zarr-python's pipeline)."""
    fs = store.fs
    protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    path = str(store.path).rstrip("/")
    if any(p in ("http", "https") for p in protocols):
        if not path.startswith(("http://", "https://")):
            return "fsspec's HTTP filesystem at %r, not a URL" % (path,)
        return path, {}
    if any(p in ("s3", "s3a") for p in protocols):
        ck = getattr(fs, "client_kwargs", None) or {}
        remote: Dict[str, Any] = {}
        endpoint = getattr(fs, "endpoint_url", None) or ck.get("endpoint_url")
        if endpoint:
            remote["s3_endpoint"] = endpoint
        if ck.get("region_name"):
            remote["s3_region"] = ck["region_name"]
        if getattr(fs, "anon", False):
            remote["s3_anonymous"] = True
        given = (getattr(fs, "key", None), getattr(fs, "secret", None), getattr(fs, "token", None))
        if any(given) and given != (os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY"),
                                    os.environ.get("AWS_SESSION_TOKEN")):
            return ("s3fs was given credentials of its own; zgpu takes them from the environment (AWS_ACCESS_KEY_ID, "
                    "...) or a profile")
        return "s3://" + path.split("://", 1)[-1].strip("/"), remote
    return "the store is fsspec's %r filesystem (zgpu reads local, HTTP and S3 stores)" % (protocols[0],)


def _gpu_available() -> bool:
    from . import gpu_available
    return gpu_available()


def _current_stream() -> int:
    import cupy
    return int(cupy.cuda.get_current_stream().ptr)


def _int_axes(chunk_sel: Any) -> Tuple[int, ...]:
    return tuple(k for k, s in enumerate(chunk_sel) if isinstance(s, (int, np.integer)))


def _tile(v: Any, count: Tuple[int, ...], steps: Tuple[int, ...], chunk_sel: Any, drop_axes: Tuple[int, ...]) -> Any:
    """A box read flat, shaped as zarr-python's output selection expects it: its steps taken, the chunk selection's
    integer axes (length-1 axes of the box) dropped as zarr drops them, then the request's drop_axes."""
    tile = v.reshape(count)
    if any(st != 1 for st in steps):
        tile = tile[tuple(slice(None, None, st) for st in steps)]
    ints = _int_axes(chunk_sel)
    if ints:
        tile = tile.reshape([n for k, n in enumerate(tile.shape) if k not in ints])
    if drop_axes:
        tile = tile.squeeze(axis=tuple(a for a in drop_axes if a < tile.ndim and tile.shape[a] == 1))
    return tile


def _place_in(dest: Any, out_sel: Any, chunk_sel: Any, count: Tuple[int, ...],
              drop_axes: Tuple[int, ...]) -> Optional[Tuple[int, Tuple[int, ...]]]:
    """Where a box goes inside zarr's output buffer, as (address, byte strides of the box's axes), when
    dest[out_sel] is a view whose axes are the box's (less the dropped ones); else None (then: read, then copy)."""
    if not isinstance(out_sel, tuple) or not all(isinstance(x, (slice, int, np.integer)) for x in out_sel):
        return None
    view = dest[out_sel]
    if not isinstance(view, np.ndarray) and not hasattr(view, "__cuda_array_interface__"):
        return None  # (a NumPy scalar: every axis taken by an integer)
    ints = _int_axes(chunk_sel)
    kept = [k for k in range(len(count)) if k not in ints]
    if drop_axes:  # (as _tile: the dropped axes are positions among the kept ones, taken where their length is 1)
        gone = {kept[a] for a in drop_axes if a < len(kept) and count[kept[a]] == 1}
        kept = [k for k in kept if k not in gone]
    if tuple(view.shape) != tuple(count[k] for k in kept):
        return None
    strides = [0] * len(count)
    for k, st in zip(kept, view.strides):
        strides[k] = st
    ptr = view.ctypes.data if isinstance(view, np.ndarray) else int(view.data.ptr)
    return ptr, tuple(strides)


class ZgpuCodecPipeline(CodecPipeline):
    """A zarr-python CodecPipeline whose read and write go through zgpu where they can (see the module)."""

    def __init__(self, fallback: BatchedCodecPipeline, metadata: Any = None, store: Any = None) -> None:
        self.fallback = fallback
        self.metadata = metadata
        self.store = store
        self._array: Optional[Array] = None
        self._array_dir: Optional[str] = None  # (local) the array's directory
        self._array_key: Optional[str] = None  # (remote) the array's path in the store
        self._remote: Optional[Tuple[str, Dict[str, Any]]] = None  # (remote) the store's URL, its zgpu settings
        self._why_not: Optional[str] = None if metadata is not None else "no array metadata and store were given"
        if self._why_not is None:
            kind = type(store).__name__
            if kind == "FsspecStore":
                target = _fsspec_target(store)
                if isinstance(target, str):
                    self._why_not = target
                else:
                    self._remote = target
            elif kind != "LocalStore" or getattr(store, "root", None) is None:
                self._why_not = "the store is a %s, neither a local directory nor fsspec's HTTP or S3" % kind

    def __eq__(self, other: object) -> bool:  # (as zarr-python's pipelines: by value; arrays compare them)
        return (type(other) is type(self) and self.fallback == other.fallback  # type: ignore[attr-defined]
                and self.metadata == other.metadata and self.store == other.store)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.fallback)

    # ---- construction (zarr.core.array.create_codec_pipeline) --------------------------------------------
    @classmethod
    def from_codecs(cls, codecs: Iterable[Any]) -> "ZgpuCodecPipeline":
        """zarr-python's constructor: a pipeline of these codecs, with no array behind it yet (zarr-python's own
        pipeline does all its work)."""
        return cls(BatchedCodecPipeline.from_codecs(codecs))

    @classmethod
    def from_array_metadata_and_store(cls, array_metadata: Any, store: Any) -> "ZgpuCodecPipeline":
        """zarr-python's constructor for an array: its reads and writes go through zgpu where they can."""
        return cls(_fallback_for(array_metadata), array_metadata, store)

    def evolve_from_array_spec(self, array_spec: Any) -> "ZgpuCodecPipeline":
        """The pipeline with its codecs evolved for the array spec (as zarr-python's), the same array behind it."""
        return type(self)(self.fallback.evolve_from_array_spec(array_spec), self.metadata, self.store)

    # ---- what zarr-python's own pipeline answers --------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        return iter(self.fallback)

    @property
    def supports_partial_decode(self) -> bool:
        """As zarr-python's own pipeline for these codecs."""
        return self.fallback.supports_partial_decode

    @property
    def supports_partial_encode(self) -> bool:
        """As zarr-python's own pipeline for these codecs."""
        return self.fallback.supports_partial_encode

    def validate(self, *, shape: Any, dtype: Any, chunk_grid: Any) -> None:
        """zarr-python's own pipeline checks the codecs against the array."""
        self.fallback.validate(shape=shape, dtype=dtype, chunk_grid=chunk_grid)

    def compute_encoded_size(self, byte_length: int, array_spec: Any) -> int:
        """As zarr-python's own pipeline for these codecs."""
        return self.fallback.compute_encoded_size(byte_length, array_spec)

    async def decode(self, chunk_bytes_and_specs: Any) -> Any:
        """Decodes chunks already fetched, with zarr-python's own pipeline (zgpu takes whole reads: `read`)."""
        return await self.fallback.decode(chunk_bytes_and_specs)

    async def encode(self, chunk_arrays_and_specs: Any) -> Any:
        """Encodes chunks with zarr-python's own pipeline (zgpu takes whole writes: `write`)."""
        return await self.fallback.encode(chunk_arrays_and_specs)

    # ---- the zgpu array behind the chunks --------------------------------------------------------------
    def _chunk_coords(self, key: str) -> Tuple[int, ...]:
        """A chunk key's grid coordinates: v3 "default" encoding "c" + separator + indices ("c" alone for 0-d),
        v3 "v2" encoding and v2 indices joined by the separator ("0" for 0-d)."""
        m = self.metadata
        if m.zarr_format == 3:
            enc = m.chunk_key_encoding
            sep, name = enc.separator, enc.name
        else:
            sep, name = getattr(m, "dimension_separator", None) or ".", "v2"
        if name == "default":
            if key == "c":
                return ()
            if not key.startswith("c" + sep):
                raise ValueError("not a chunk key of the default encoding")
            key = key[2:]
        elif name != "v2":
            raise ValueError("chunk key encoding %r" % (name,))
        coords = tuple(int(x) for x in key.split(sep)) if len(m.shape) else ()
        if len(coords) != len(m.shape):
            raise ValueError("%d indices for %d dimensions" % (len(coords), len(m.shape)))
        return coords

    def _key_depth(self) -> int:
        """How many trailing parts of a chunk's path (split at "/") its chunk key takes."""
        m = self.metadata
        if m.zarr_format == 3:
            sep, name = m.chunk_key_encoding.separator, m.chunk_key_encoding.name
            if name == "default":
                return len(m.shape) + 1 if sep == "/" else 1
        else:
            sep = getattr(m, "dimension_separator", None) or "."
        return max(1, len(m.shape)) if sep == "/" else 1

    def _open_array(self, byte_getter: Any) -> bool:
        """Opens the zgpu array behind the chunks (the first time a chunk is asked for); False with _why_not."""
        read_only = bool(getattr(self.store, "read_only", False))
        if self._remote is None:
            full = os.path.join(self.store.root, byte_getter.path)
            # the array's directory: the nearest above the chunk's file that holds its metadata
            d = os.path.dirname(full)
            while d and not any(os.path.exists(os.path.join(d, f)) for f in ("zarr.json", ".zarray")):
                parent = os.path.dirname(d)
                if parent == d:
                    break
                d = parent
            where, ctx = d, None
        else:
            # the array's path: the chunk's path less its chunk key (which has a fixed number of parts)
            parts = byte_getter.path.split("/")
            self._array_key = "/".join(parts[:len(parts) - self._key_depth()])
            base, remote = self._remote
            where = base + ("/" + self._array_key if self._array_key else "")
            ctx = None
            if remote:  # (the fsspec filesystem's endpoint, region, anonymity: a context with them)
                settings = dict(config.context().settings)
                settings["remote"] = {**settings["remote"], **remote}
                ctx = context_like(settings)
        try:
            self._array = Array._open(where, read_only=read_only, ctx=ctx)
        except ZgpuError as e:
            self._why_not = "zgpu cannot open it (%s)" % e
            log.debug("zgpu.zarr: array %r goes through zarr-python's pipeline: %s", where, self._why_not)
            return False
        if self._array._vlen:  # (zgpu's fixed-size boxes cannot hold them; zarr-python decodes them itself)
            self._why_not = "its %s elements have variable length" % self._array.dtype
        elif self._array.shape != tuple(self.metadata.shape) or \
                self._array.dtype != np.dtype(self.metadata.dtype.to_native_dtype()):
            self._why_not = "zgpu reads it as %r %s, zarr-python as %r" % (
                self._array.shape, self._array.dtype, tuple(self.metadata.shape))
        if self._why_not is not None:
            log.debug("zgpu.zarr: array %r goes through zarr-python's pipeline: %s", where, self._why_not)
            return False
        self._array_dir = where if self._remote is None else None
        return True

    def _locate(self, byte_getter: Any) -> Optional[Tuple[Array, Tuple[int, ...]]]:
        """The zgpu array and the chunk's grid coordinates of one of zarr-python's chunk paths, or None (and
        _why_not says why) where zgpu is not to read it."""
        if self._why_not is not None:
            return None
        if self._array is None and not self._open_array(byte_getter):
            return None
        if self._remote is None:
            rel = os.path.relpath(os.path.join(self.store.root, byte_getter.path), self._array_dir)
            rel = rel.replace(os.sep, "/")
        else:
            rel = byte_getter.path[len(self._array_key) + 1:] if self._array_key else byte_getter.path
        try:
            return self._array, self._chunk_coords(rel)
        except (ValueError, TypeError) as e:
            self._why_not = "chunk key %r: %s" % (rel, e)
            return None

    def _boxes(self, batch: List[Any], out: Any) -> Optional[Tuple[Array, List[Any]]]:
        """Per chunk of the batch: the box (array coordinates) it contributes and where it goes, or None."""
        if self._why_not is not None:
            return None
        data = getattr(out, "_data", None)
        if not isinstance(data, np.ndarray):
            if not hasattr(data, "__cuda_array_interface__"):
                self._why_not = "its buffers are %s, neither NumPy nor CUDA arrays" % type(data).__name__
                return None
            if not _gpu_available():
                self._why_not = "its buffers are in GPU memory and this zgpu has no usable GPU"
                return None
        arr = None
        boxes = []
        m = self.metadata
        # the grid zarr-python's requests are cut on: the stored objects (v3: shards where sharded)
        grid = tuple(m.chunk_grid.chunk_shape) if m.zarr_format == 3 else tuple(m.chunks)
        for byte_getter, spec, chunk_sel, out_sel, _complete in batch:
            loc = self._locate(byte_getter)
            if loc is None:
                return None
            arr, coords = loc
            box = _box_of(chunk_sel, tuple(spec.shape))
            if box is None:
                return None
            start = tuple(c * g + s for c, g, s in zip(coords, grid, box[0]))
            boxes.append((start, box[1], out_sel, chunk_sel, box[2]))
        return (arr, boxes) if arr is not None else None

    def _plan(self, batch: List[Any], buf: Any, what: str, eligible: bool = True) -> Optional[Tuple[Array, List[Any]]]:
        """_boxes for a request zgpu may serve, else None (with the debug line saying why)."""
        plan = self._boxes(batch, buf) if batch and eligible else None
        if plan is None and self._why_not:
            log.debug("zgpu.zarr: zarr-python's pipeline %s: %s", what, self._why_not)
        return plan

    # ---- read and write ---------------------------------------------------------------------------------
    async def read(self, batch_info: Any, out: Any, drop_axes: Tuple[int, ...] = ()) -> None:
        """Reads a batch of chunk selections into zarr-python's output buffer: with zgpu (host or GPU memory)
        where the array and selections allow, else with zarr-python's own pipeline."""
        batch = list(batch_info)
        plan = self._plan(batch, out, "reads")
        if plan is None:
            return await self.fallback.read(batch, out, drop_axes)
        arr, boxes = plan
        dest = out._data
        on_gpu = not isinstance(dest, np.ndarray)
        # (CuPy's current stream is the caller's thread's: taken here, before the read moves to a worker thread)
        stream = _current_stream() if on_gpu else 0

        def run() -> None:
            if not on_gpu:
                return place(None)
            import cupy
            with cupy.cuda.Device(dest.device.id), cupy.cuda.ExternalStream(stream):
                return place(dest.device.id)

        def place(device: Optional[int]) -> None:
            from . import _fancy
            if dest.dtype == arr.dtype:
                places = [_place_in(dest, out_sel, chunk_sel, count, drop_axes)
                          if all(st == 1 for st in steps) else None
                          for _start, count, out_sel, chunk_sel, steps in boxes]
                if all(p is not None for p in places):
                    # each box straight into zarr's output buffer: one batch, no copy after it
                    starts = [b[0] for b in boxes]
                    counts = [b[1] for b in boxes]
                    with arr._lock.shared():
                        if device is not None:
                            _fancy.read_regions_into_device(arr._handle_for(device), starts, counts, places,
                                                            arr.ndim, stream)
                        else:
                            _fancy.read_regions_into_host(arr._h(), starts, counts, places, arr.ndim)
                    return
            with arr._lock.shared():
                if device is not None:
                    views = _fancy.flat_views(
                        _fancy.read_regions_device(arr._handle_for(device), [b[0] for b in boxes],
                                                   [b[1] for b in boxes], arr.ndim, arr.dtype, device, stream),
                        [b[1] for b in boxes])
                else:
                    views = _fancy.read_regions_host(arr._h(), [b[0] for b in boxes], [b[1] for b in boxes],
                                                     arr.ndim, arr.dtype)
            for (_start, count, out_sel, chunk_sel, steps), v in zip(boxes, views):
                dest[out_sel] = _tile(v, count, steps, chunk_sel, drop_axes)

        await asyncio.to_thread(run)

    async def write(self, batch_info: Any, value: Any, drop_axes: Tuple[int, ...] = ()) -> None:
        """Writes a batch of chunk selections from `value`: with zgpu where the array and selections allow, else
        with zarr-python's own pipeline."""
        batch = list(batch_info)
        # (a read-only store: zarr-python's pipeline, whose store refuses the write as zarr-python does)
        writable = not getattr(self.store, "read_only", False)
        plan = self._plan(batch, value, "writes", eligible=not drop_axes and writable)
        if plan is not None and any(st != 1 for b in plan[1] for st in b[4]):
            plan = None  # (strided writes: zgpu writes boxes)
        if plan is None:
            return await self.fallback.write(batch, value, drop_axes)
        arr, boxes = plan
        src = value._data
        if not isinstance(src, np.ndarray):  # (GPU buffers: zgpu encodes on the host; one copy of the value)
            import cupy
            src = cupy.asnumpy(src)

        def run() -> None:
            for start, count, out_sel, _, _ in boxes:
                if not all(count):
                    continue
                v = src[out_sel] if src.ndim else src  # (a scalar value: every chunk gets it)
                box = tuple(slice(s, s + c) for s, c in zip(start, count))
                arr.write(box, np.broadcast_to(v, count) if np.ndim(v) == 0 else np.reshape(v, count))

        await asyncio.to_thread(run)


# (the entry point "zarr.codec_pipeline" registers it where the package is installed; importing registers it too)
from zarr.registry import register_pipeline  # noqa: E402

register_pipeline(ZgpuCodecPipeline)
