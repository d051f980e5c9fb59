"""Dask arrays read and written through zgpu (issue 21: "Dask and many GPUs").

``zgpu.to_dask(path_or_array)`` builds a Dask array whose blocks are zgpu reads: by default one block per stored
object (a shard of a sharded array, else a chunk), so no two tasks decode the same chunk; NumPy blocks, or CuPy
blocks read straight into GPU memory with ``device="cuda"``. The graph pickles (zgpu arrays reopen by path and
settings), so it runs on threads, processes and distributed workers alike. ``zgpu.to_zarr(dask_array, path)``
writes one through zgpu, each task writing its block (partial chunks are merged under zgpu's per-chunk write lock).
"""
from __future__ import annotations

import math
import os
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .array import Array, DeviceLike, parse_device

__all__ = ["to_dask", "to_zarr"]


class _Blocks:
    """What dask.array.from_array reads blocks from: `a[slices]` is a zgpu read, into GPU memory (a CuPy array)
    when `device` is set."""

    def __init__(self, array: Array, device: Optional[str]) -> None:
        self.array = array
        self.device = device
        self.shape = array.shape
        self.dtype = array.dtype
        self.ndim = array.ndim

    def __getitem__(self, key: Any) -> Any:
        if self.device is None:
            return self.array.read(key)
        import cupy
        return cupy.asarray(self.array.read(key, device=self.device))


DEVICE_BLOCK_BYTES = 256 << 20


def merged_blocks(shape: Sequence[int], unit: Sequence[int], itemsize: int, limit: int) -> Tuple[int, ...]:
    """A block shape of whole units (stored chunks or shards) of at most `limit` bytes (one unit if a unit is
    larger): grown along the last axes first, to the whole axis where it fits, so a block is one run of C order
    where it can be."""
    block = [min(u, n) for u, n in zip(unit, shape)]
    if not all(block):
        return tuple(block)
    for ax in range(len(shape) - 1, -1, -1):
        others = itemsize * math.prod(b for k, b in enumerate(block) if k != ax)
        fits = max(1, limit // max(1, others)) // max(1, block[ax])  # units along ax that fit
        if fits <= 1:
            break
        whole = -(-shape[ax] // block[ax])
        block[ax] = min(shape[ax], block[ax] * min(fits, whole))
        if block[ax] < shape[ax]:
            break
    return tuple(block)


def to_dask(array: Any, chunks: Any = None, device: DeviceLike = None, *, name: Optional[str] = None) -> Any:
    """A Dask array of the zgpu array (or the array at a path / URL, opened read-only).

    chunks: Dask's chunk specification (a tuple, "auto", a dict per axis...); None: the stored grid, one block per
        shard of a sharded array, else per chunk; with `device`, whole stored units merged into blocks of up to
        about 256 MiB (a GPU decodes a block's chunks as one batch, where one chunk a read would leave it idle and
        pay a read's fixed cost per chunk).
    device: None (NumPy blocks) or "cuda" / "cuda:N" (CuPy blocks, read straight into that GPU's memory; the
        Dask array's meta is a CuPy array).
    """
    import dask.array as da
    from dask.base import tokenize
    a = array if isinstance(array, Array) else Array._open(os.fspath(array), read_only=True)
    dev = parse_device(device, a._ctx.device)
    if chunks is None:
        chunks = a.shards or a.chunks
        if dev is not None:
            chunks = merged_blocks(a.shape, chunks, a.dtype.itemsize, DEVICE_BLOCK_BYTES)
    spec = None if dev is None else "cuda:%d" % dev
    if spec is None:
        meta = np.empty((0,) * a.ndim, a.dtype)
    else:
        import cupy
        with cupy.cuda.Device(dev):
            meta = cupy.empty((0,) * a.ndim, a.dtype)
    return da.from_array(_Blocks(a, spec), chunks=chunks, lock=False, asarray=False, fancy=False, meta=meta,
                         name=name or "zgpu-read-" + tokenize(a.path, a.shape, a.dtype, chunks, spec))


def to_zarr(x: Any, path: Any, *, chunks: Any = None, overwrite: bool = False, compute: bool = True,
            **create_kwargs: Any) -> Any:
    """Writes the Dask array `x` into a new zgpu array at `path` (the arguments of :func:`zgpu.create` in
    create_kwargs), each task writing its block. chunks: the stored chunks (default: x's first block along every
    axis). Returns the array (compute=True) or the Dask delayed write (compute=False; the array is committed once
    it has run and close() is called)."""
    import dask.array as da
    from . import create
    if chunks is None:
        chunks = tuple(c[0] if c else 1 for c in x.chunks)
    # (overwrite: a staged array, written through this handle and committed below: threads only, as a staged
    # array does not pickle)
    a = create(path, shape=x.shape, dtype=x.dtype, chunks=chunks, overwrite=overwrite, **create_kwargs)
    result = da.store(x, a, lock=False, compute=compute, return_stored=False)
    if not compute:
        return result
    if overwrite:
        a.close()
        return Array._open(os.fspath(path))
    return a
