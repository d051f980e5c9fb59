"""zarr-python's codec pipeline through zgpu (issue 21): with

    zarr.config.set({"codec_pipeline.path": "zgpu.zarr.ZgpuCodecPipeline"})

(or ``ZARR_CODEC_PIPELINE__PATH=zgpu.zarr.ZgpuCodecPipeline`` in the environment) existing zarr-python code reads and
writes arrays of a local store through zgpu: the chunks one zarr-python request needs are read and decoded as one
zgpu batch (zgpu_array_read_regions: every chunk once, on the context's threads, zstd stopping short where the
request needs part of a chunk), and written as zgpu writes (partial chunks merged under zgpu's per-chunk write
lock), instead of one asyncio task a chunk.

Anything zgpu cannot do falls back to zarr-python's own pipeline (BatchedCodecPipeline), per array, with a debug
log saying why: a store other than a local directory, a codec, data type or layout zgpu does not read, a selection
other than a box per chunk (fancy indexing hands the chunks index arrays), or memory that is not NumPy's (GPU
buffers under ``zarr.config.enable_gpu()``).
"""
from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Iterable, Iterator, List, Optional, Tuple

import numpy as np
from zarr.abc.codec import CodecPipeline
from zarr.core.codec_pipeline import BatchedCodecPipeline

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


def _box_of(selection: Any, chunk_shape: Tuple[int, ...]) -> Optional[Tuple[Tuple[int, ...], Tuple[int, ...]]]:
    """(start, count) within a chunk of a selection of step-1 slices (and integers); None for anything else."""
    start, count = [], []
    for s, n in zip(selection, chunk_shape):
        if isinstance(s, slice):
            a, b, step = s.indices(n)
            if step != 1:
                return None
            start.append(a)
            count.append(max(0, b - a))
        elif isinstance(s, (int, np.integer)):
            start.append(int(s))
            count.append(1)
        else:
            return None
    return tuple(start), tuple(count)


class ZgpuCodecPipeline(CodecPipeline):
    """A zarr-python CodecPipeline whose read and write go through zgpu where they can (see the module)."""

    def __init__(self, fallback: BatchedCodecPipeline, metadata: Any = None, store: Any = None) -> None:
        self.fallback = fallback
        self.metadata = metadata
        self.store = store
        self._array: Optional[Array] = None
        self._array_dir: Optional[str] = None
        self._why_not: Optional[str] = None if metadata is not None else "no array metadata and store were given"
        root = getattr(store, "root", None)
        if self._why_not is None and (root is None or type(store).__name__ != "LocalStore"):
            self._why_not = "the store is a %s, not a local directory" % type(store).__name__

    def __eq__(self, other: object) -> bool:  # (as zarr-python's pipelines: by value; arrays compare them)
        return (type(other) is type(self) and self.fallback == other.fallback  # type: ignore[attr-defined]
                and self.metadata == other.metadata and self.store == other.store)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.fallback)

    # ---- construction (zarr.core.array.create_codec_pipeline) --------------------------------------------
    @classmethod
    def from_codecs(cls, codecs: Iterable[Any]) -> "ZgpuCodecPipeline":
        return cls(BatchedCodecPipeline.from_codecs(codecs))

    @classmethod
    def from_array_metadata_and_store(cls, array_metadata: Any, store: Any) -> "ZgpuCodecPipeline":
        return cls(_fallback_for(array_metadata), array_metadata, store)

    def evolve_from_array_spec(self, array_spec: Any) -> "ZgpuCodecPipeline":
        return type(self)(self.fallback.evolve_from_array_spec(array_spec), self.metadata, self.store)

    # ---- what zarr-python's own pipeline answers --------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        return iter(self.fallback)

    @property
    def supports_partial_decode(self) -> bool:
        return self.fallback.supports_partial_decode

    @property
    def supports_partial_encode(self) -> bool:
        return self.fallback.supports_partial_encode

    def validate(self, *, shape: Any, dtype: Any, chunk_grid: Any) -> None:
        self.fallback.validate(shape=shape, dtype=dtype, chunk_grid=chunk_grid)

    def compute_encoded_size(self, byte_length: int, array_spec: Any) -> int:
        return self.fallback.compute_encoded_size(byte_length, array_spec)

    async def decode(self, chunk_bytes_and_specs: Any) -> Any:
        return await self.fallback.decode(chunk_bytes_and_specs)

    async def encode(self, chunk_arrays_and_specs: Any) -> Any:
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

    def _locate(self, byte_getter: Any) -> Optional[Tuple[Array, Tuple[int, ...]]]:
        """The zgpu array and the chunk's grid coordinates of one of zarr-python's chunk paths, or None (and
        _why_not says why) where zgpu is not to read it."""
        if self._why_not is not None:
            return None
        full = os.path.join(self.store.root, byte_getter.path)
        if self._array is None:
            # the array's directory: the nearest above the chunk's file that holds its metadata
            d = os.path.dirname(full)
            while d and not any(os.path.exists(os.path.join(d, f)) for f in ("zarr.json", ".zarray")):
                parent = os.path.dirname(d)
                if parent == d:
                    break
                d = parent
            try:
                self._array = Array._open(d, read_only=bool(getattr(self.store, "read_only", False)))
            except ZgpuError as e:
                self._why_not = "zgpu cannot open it (%s)" % e
                log.debug("zgpu.zarr: array under %r goes through zarr-python's pipeline: %s", full, self._why_not)
                return None
            if self._array.shape != tuple(self.metadata.shape) or self._array.dtype != np.dtype(self.metadata.dtype.to_native_dtype()):
                self._why_not = "zgpu reads it as %r %s, zarr-python as %r" % (
                    self._array.shape, self._array.dtype, tuple(self.metadata.shape))
                return None
            self._array_dir = d
        rel = os.path.relpath(full, self._array_dir)
        try:
            return self._array, self._chunk_coords(rel.replace(os.sep, "/"))
        except (ValueError, TypeError) as e:
            self._why_not = "chunk key %r: %s" % (rel, e)
            return None

    def _boxes(self, batch: List[Any], out: Any) -> Optional[Tuple[Array, List[Any]]]:
        """Per chunk of the batch: the box (array coordinates) it contributes and where it goes, or None."""
        if self._why_not is not None or not isinstance(getattr(out, "_data", None), np.ndarray):
            return None  # (GPU buffers: zarr-python's pipeline)
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
            boxes.append((start, box[1], out_sel, chunk_sel))
        return (arr, boxes) if arr is not None else None

    def _plan(self, batch: List[Any], buf: Any, what: str, eligible: bool = True) -> Optional[Tuple[Array, List[Any]]]:
        """_boxes for a request zgpu may serve, else None (with the debug line saying why)."""
        plan = self._boxes(batch, buf) if batch and eligible else None
        if plan is None and self._why_not:
            log.debug("zgpu.zarr: zarr-python's pipeline %s: %s", what, self._why_not)
        return plan

    # ---- read and write ---------------------------------------------------------------------------------
    async def read(self, batch_info: Any, out: Any, drop_axes: Tuple[int, ...] = ()) -> None:
        batch = list(batch_info)
        plan = self._plan(batch, out, "reads")
        if plan is None:
            return await self.fallback.read(batch, out, drop_axes)
        arr, boxes = plan
        dest = out._data

        def run() -> None:
            from . import _fancy
            with arr._lock.shared():
                views = _fancy.read_regions_host(arr._h(), [b[0] for b in boxes], [b[1] for b in boxes], arr.ndim,
                                                 arr.dtype)
            for (start, count, out_sel, chunk_sel), v in zip(boxes, views):
                tile = v.reshape(count)
                # the chunk selection's integer axes stay as length-1 axes in the box: dropped as zarr drops them
                ints = tuple(k for k, s in enumerate(chunk_sel) if isinstance(s, (int, np.integer)))
                if ints:
                    tile = tile.reshape([n for k, n in enumerate(count) if k not in ints])
                if drop_axes:
                    tile = tile.squeeze(axis=tuple(a for a in drop_axes if a < tile.ndim and tile.shape[a] == 1))
                dest[out_sel] = tile

        await asyncio.to_thread(run)

    async def write(self, batch_info: Any, value: Any, drop_axes: Tuple[int, ...] = ()) -> None:
        batch = list(batch_info)
        # (a read-only store: zarr-python's pipeline, whose store refuses the write as zarr-python does)
        writable = not getattr(self.store, "read_only", False)
        plan = self._plan(batch, value, "writes", eligible=not drop_axes and writable)
        if plan is None:
            return await self.fallback.write(batch, value, drop_axes)
        arr, boxes = plan
        src = value._data

        def run() -> None:
            for start, count, out_sel, _ in boxes:
                if not all(count):
                    continue
                v = src[out_sel] if src.ndim else src  # (a scalar value: every chunk gets it)
                box = tuple(slice(s, s + c) for s, c in zip(start, count))
                arr.write(box, np.broadcast_to(v, count) if np.ndim(v) == 0 else np.reshape(v, count))

        await asyncio.to_thread(run)


# (the entry point "zarr.codec_pipeline" registers it where the package is installed; importing registers it too)
from zarr.registry import register_pipeline  # noqa: E402

register_pipeline(ZgpuCodecPipeline)
