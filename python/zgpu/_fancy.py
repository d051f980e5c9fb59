"""Indexing beyond NumPy's basic kind, as zarr-python does it: orthogonal (``a.oindex[...]``: integer arrays and
boolean masks per axis, the outer product of the axes' selections), coordinate (``a.vindex[...]``: integer arrays
broadcast together, or one boolean mask of the array's shape: a point each) and blocks (``a.blocks[...]``: indices
of the chunk grid). ``a[...]`` with arrays in it takes zarr-python's choice: coordinate when every axis has an
integer array (or one mask covers the array), else orthogonal.

A selection becomes the boxes it needs, one per chunk it touches (the bounding box of the selected elements inside
that chunk), read in one batch (zgpu_array_read_regions: each chunk fetched and decoded once, on the GPU for device
reads), then gathered into the result with NumPy (CuPy on the device). A write reads those boxes, merges the values
and writes them back, box by box.
"""
from __future__ import annotations

import ctypes
import math
import operator
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from . import _capi
from ._capi import lib
from .errors import OutOfRangeError

Shape = Tuple[int, ...]


def _is_array_like(x: Any) -> bool:
    return isinstance(x, (list, np.ndarray)) or (hasattr(x, "__array__") and not np.isscalar(x))


def is_fancy(selection: Any) -> bool:
    """Whether a selection needs this module (holds a list or array), rather than basic indexing."""
    items = selection if isinstance(selection, tuple) else (selection,)
    return any(_is_array_like(x) for x in items)


def _expand(selection: Any, ndim: int) -> Tuple[Any, ...]:
    items = list(selection) if isinstance(selection, tuple) else [selection]
    if sum(x is Ellipsis for x in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if any(x is None for x in items):
        raise IndexError("numpy.newaxis (None) is not valid in an orthogonal or coordinate selection")
    if Ellipsis in [x for x in items if not _is_array_like(x)]:
        k = next(i for i, x in enumerate(items) if not _is_array_like(x) and x is Ellipsis)
        items[k:k + 1] = [slice(None)] * (ndim - len(items) + 1)
    if len(items) > ndim:
        raise IndexError("too many indices for an array of %d dimensions: %d were given" % (ndim, len(items)))
    return tuple(items) + (slice(None),) * (ndim - len(items))


def _int_index(x: Any) -> Optional[int]:
    if isinstance(x, (bool, np.bool_)):
        return None
    try:
        return operator.index(x)
    except TypeError:
        return None


def _axis_indices(x: Any, n: int, axis: int) -> Tuple[np.ndarray, bool]:
    """One axis of an orthogonal selection: (the indices it takes, in result order; whether the axis stays)."""
    i = _int_index(x)
    if i is not None:
        if not -n <= i < n:
            raise OutOfRangeError("index %d is out of bounds for axis %d of size %d" % (i, axis, n))
        return np.array([i % n], np.int64), False
    if isinstance(x, slice):
        return np.arange(*x.indices(n), dtype=np.int64), True
    if _is_array_like(x):
        v = np.asarray(x)
        if v.dtype == bool:
            if v.shape != (n,):
                raise IndexError("a boolean mask for axis %d must have shape (%d,), got %r" % (axis, n, v.shape))
            return np.nonzero(v)[0].astype(np.int64), True
        if v.ndim != 1 or (v.size and not np.issubdtype(v.dtype, np.integer)):
            raise IndexError("an orthogonal selection takes one-dimensional integer arrays or boolean masks per "
                             "axis; axis %d got %r" % (axis, v))
        v = v.astype(np.int64)
        if v.size and (v.min() < -n or v.max() >= n):
            raise OutOfRangeError("index %d is out of bounds for axis %d of size %d"
                                  % (int(v[(v < -n) | (v >= n)][0]), axis, n))
        return np.where(v < 0, v + n, v), True
    raise IndexError("only integers, slices, integer arrays and boolean masks are valid in an orthogonal "
                     "selection; axis %d got %r" % (axis, x))


class Boxes:
    """The boxes a selection needs (starts, counts: one row per box) and, per box, where its elements go: `dst`
    (indices into the flat result), `src` (flat indices into the box, C order)."""

    def __init__(self, ndim: int) -> None:
        self.starts: List[Tuple[int, ...]] = []
        self.counts: List[Tuple[int, ...]] = []
        self.dst: List[np.ndarray] = []
        self.src: List[np.ndarray] = []
        self.ndim = ndim

    def add(self, start: Sequence[int], count: Sequence[int], dst: np.ndarray, src: np.ndarray) -> None:
        self.starts.append(tuple(int(s) for s in start))
        self.counts.append(tuple(int(c) for c in count))
        self.dst.append(dst)
        self.src.append(src)

    def sizes(self) -> List[int]:
        return [math.prod(c) for c in self.counts]


def orthogonal(selection: Any, shape: Shape, chunks: Shape) -> Tuple[Shape, Boxes]:
    """(result shape, boxes) of an orthogonal selection."""
    items = _expand(selection, len(shape))
    per_axis = [_axis_indices(x, n, d) for d, (x, n) in enumerate(zip(items, shape))]
    idx = [p[0] for p in per_axis]
    out_shape = tuple(len(v) for v, keep in per_axis if keep)
    full = tuple(len(v) for v in idx)  # the result before integer axes drop
    boxes = Boxes(len(shape))
    if any(n == 0 for n in full):
        return out_shape, boxes
    # per axis: the chunks touched, and in each the positions (in the result) and indices it supplies
    groups = []
    for d, v in enumerate(idx):
        c = v // chunks[d]
        order = np.argsort(c, kind="stable")
        cs = c[order]
        cuts = np.flatnonzero(np.diff(cs)) + 1
        groups.append([(order[a:b], v[order[a:b]]) for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(cs)])])
    out_strides = np.array([math.prod(full[d + 1:]) for d in range(len(full))], np.int64)
    for combo in np.ndindex(*[len(g) for g in groups]):
        pos = [groups[d][k][0] for d, k in enumerate(combo)]
        ind = [groups[d][k][1] for d, k in enumerate(combo)]
        lo = [int(v.min()) for v in ind]
        cnt = [int(v.max()) - l + 1 for v, l in zip(ind, lo)]
        box_strides = [math.prod(cnt[d + 1:]) for d in range(len(cnt))]
        dst = np.zeros([len(p) for p in pos], np.int64)
        src = np.zeros_like(dst)
        for d in range(len(shape)):
            sh = [1] * len(shape)
            sh[d] = len(pos[d])
            dst = dst + (pos[d] * out_strides[d]).reshape(sh)
            src = src + ((ind[d] - lo[d]) * box_strides[d]).reshape(sh)
        boxes.add(lo, cnt, dst.ravel(), src.ravel())
    return out_shape, boxes


def coordinate(selection: Any, shape: Shape, chunks: Shape) -> Tuple[Shape, Boxes]:
    """(result shape, boxes) of a coordinate selection: integer arrays broadcast together (one per axis), or one
    boolean mask of the array's shape."""
    items = list(selection) if isinstance(selection, tuple) else [selection]
    if len(items) == 1 and _is_array_like(items[0]) and np.asarray(items[0]).dtype == bool:
        m = np.asarray(items[0])
        if m.shape != tuple(shape):
            raise IndexError("a boolean mask selection must have the array's shape %r, got %r" % (tuple(shape), m.shape))
        coords = [c.astype(np.int64) for c in np.nonzero(m)]
        out_shape: Shape = (len(coords[0]) if coords else 0,)
    else:
        if len(items) != len(shape):
            raise IndexError("a coordinate selection takes one integer array per axis (%d), got %d items"
                             % (len(shape), len(items)))
        arrays = []
        for d, x in enumerate(items):
            i = _int_index(x)
            v = np.asarray(i if i is not None else x)
            if v.dtype == bool or (v.size and not np.issubdtype(v.dtype, np.integer)):
                raise IndexError("a coordinate selection takes integer arrays (or one boolean mask of the array's "
                                 "shape); axis %d got %r" % (d, x))
            arrays.append(v.astype(np.int64))
        try:
            b = np.broadcast_arrays(*arrays)
        except ValueError:
            raise IndexError("the coordinate arrays do not broadcast together: shapes %s"
                             % ", ".join(str(a.shape) for a in arrays)) from None
        out_shape = b[0].shape
        coords = []
        for d, v in enumerate(b):
            v = v.ravel()
            n = shape[d]
            if v.size and (v.min() < -n or v.max() >= n):
                raise OutOfRangeError("index %d is out of bounds for axis %d of size %d"
                                      % (int(v[(v < -n) | (v >= n)][0]), d, n))
            coords.append(np.where(v < 0, v + n, v))
    boxes = Boxes(len(shape))
    npts = len(coords[0]) if coords else 0
    if npts == 0:
        return out_shape, boxes
    cidx = np.stack([c // chunks[d] for d, c in enumerate(coords)], axis=1)
    keys, inverse = np.unique(cidx, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    cuts = np.flatnonzero(np.diff(inverse[order])) + 1
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, npts]):
        pts = order[a:b]
        pc = [c[pts] for c in coords]
        lo = [int(v.min()) for v in pc]
        cnt = [int(v.max()) - l + 1 for v, l in zip(pc, lo)]
        box_strides = [math.prod(cnt[d + 1:]) for d in range(len(cnt))]
        src = sum((v - l) * s for v, l, s in zip(pc, lo, box_strides))
        boxes.add(lo, cnt, pts.astype(np.int64), np.asarray(src, np.int64))
    return out_shape, boxes


def blocks(selection: Any, shape: Shape, chunks: Shape) -> Tuple[slice, ...]:
    """The element slices of a selection of the chunk grid (integers and step-1 slices of chunk indices)."""
    items = _expand(selection, len(shape))
    out = []
    for d, (x, n, c) in enumerate(zip(items, shape, chunks)):
        nb = -(-n // c) if c else 0
        i = _int_index(x)
        if i is not None:
            if not -nb <= i < nb:
                raise OutOfRangeError("block %d is out of bounds for axis %d of %d blocks" % (i, d, nb))
            i %= nb
            out.append(slice(i * c, min(n, (i + 1) * c)))
        elif isinstance(x, slice):
            a, b, step = x.indices(nb)
            if step != 1:
                raise IndexError("block selections take slices of step 1, axis %d got %r" % (d, x))
            out.append(slice(a * c, min(n, max(a, b) * c)))
        else:
            raise IndexError("block selections take integers and slices, axis %d got %r" % (d, x))
    return tuple(out)


# ---- reading and writing the boxes --------------------------------------------------------------------------
def _region_args(box_starts: Sequence[Sequence[int]], box_counts: Sequence[Sequence[int]], nd: int, base: int,
                 itemsize: int) -> Tuple[Any, Any, Any]:
    n = len(box_starts)
    starts = (ctypes.c_uint64 * max(1, n * nd))()
    counts = (ctypes.c_uint64 * max(1, n * nd))()
    outs = (ctypes.c_void_p * max(1, n))()
    at = 0
    for i, (s, c) in enumerate(zip(box_starts, box_counts)):
        for d in range(nd):
            starts[i * nd + d] = s[d]
            counts[i * nd + d] = c[d]
        outs[i] = base + at * itemsize
        at += math.prod(c)
    return starts, counts, outs


def read_regions_host(handle: Any, box_starts: Sequence[Sequence[int]], box_counts: Sequence[Sequence[int]],
                      nd: int, dtype: np.dtype) -> List[np.ndarray]:
    """Boxes (starts, counts: one row each) read in one batch, as flat arrays (views of one buffer)."""
    sizes = [math.prod(c) for c in box_counts]
    buf = np.empty(max(1, sum(sizes)), dtype)
    if sizes:
        starts, counts, outs = _region_args(box_starts, box_counts, nd, buf.ctypes.data, dtype.itemsize)
        _capi.check(lib.zgpu_array_read_regions(handle, len(sizes), starts, counts, outs, None, None))
    return flat_views(buf, box_counts)


def flat_views(buf: Any, box_counts: Sequence[Sequence[int]]) -> List[Any]:
    """The boxes of a stacked buffer (NumPy or CuPy; box i after boxes 0..i-1), as flat views, one a box."""
    views, at = [], 0
    for c in box_counts:
        n = math.prod(c)
        views.append(buf[at:at + n])
        at += n
    return views


def _placed_args(box_starts: Sequence[Sequence[int]], box_counts: Sequence[Sequence[int]],
                 places: Sequence[Tuple[int, Sequence[int]]], nd: int) -> Tuple[Any, Any, Any, Any]:
    starts, counts, _ = _region_args(box_starts, box_counts, nd, 0, 1)
    n = len(places)
    outs = (ctypes.c_void_p * max(1, n))()
    strides = (ctypes.c_int64 * max(1, n * nd))()
    for i, (ptr, st) in enumerate(places):
        outs[i] = ptr
        for d in range(nd):
            strides[i * nd + d] = st[d]
    return starts, counts, outs, strides


def read_regions_into_host(handle: Any, box_starts: Sequence[Sequence[int]], box_counts: Sequence[Sequence[int]],
                           places: Sequence[Tuple[int, Sequence[int]]], nd: int) -> None:
    """Boxes read in one batch, each straight into host memory at places[i] = (address, byte strides)."""
    if places:
        starts, counts, outs, strides = _placed_args(box_starts, box_counts, places, nd)
        _capi.check(lib.zgpu_array_read_regions(handle, len(places), starts, counts, outs, strides, None))


def read_regions_into_device(handle: Any, box_starts: Sequence[Sequence[int]], box_counts: Sequence[Sequence[int]],
                             places: Sequence[Tuple[int, Sequence[int]]], nd: int, stream: int) -> None:
    """As read_regions_into_host into device memory (the handle's device), ordered on `stream`."""
    if places:
        starts, counts, outs, strides = _placed_args(box_starts, box_counts, places, nd)
        _capi.check(lib.zgpu_array_read_regions_device(handle, len(places), starts, counts, outs, strides,
                                                       ctypes.c_void_p(stream), None, None))


def read_boxes_host(handle: Any, boxes: Boxes, dtype: np.dtype) -> List[np.ndarray]:
    """Every box of a selection, read in one batch, as flat arrays."""
    return read_regions_host(handle, boxes.starts, boxes.counts, boxes.ndim, dtype)


def gather_host(boxes: Boxes, views: List[np.ndarray], out_shape: Shape, dtype: np.dtype) -> np.ndarray:
    out = np.empty(math.prod(out_shape), dtype)
    for dst, src, v in zip(boxes.dst, boxes.src, views):
        out[dst] = v[src]
    return out.reshape(out_shape)


def read_regions_device(handle: Any, box_starts: Sequence[Sequence[int]], box_counts: Sequence[Sequence[int]],
                        nd: int, dtype: np.dtype, device: int, stream: int) -> Any:
    """Boxes (starts, counts: one row each) read in one batch into one CuPy buffer on `device` (the handle's), box
    after box, on `stream`; returns the buffer (flat_views splits it)."""
    import cupy as cp
    sizes = [math.prod(c) for c in box_counts]
    with cp.cuda.Device(device):
        buf = cp.empty(max(1, sum(sizes)), dtype)
    if sizes:
        starts, counts, outs = _region_args(box_starts, box_counts, nd, buf.data.ptr, dtype.itemsize)
        _capi.check(lib.zgpu_array_read_regions_device(handle, len(sizes), starts, counts, outs, None,
                                                       ctypes.c_void_p(stream), None, None))
    return buf


def read_boxes_device(handle: Any, boxes: Boxes, dtype: np.dtype, device: int, stream: int) -> Any:
    """Every box of a selection read in one batch into one CuPy buffer, on `stream`; returns the buffer."""
    return read_regions_device(handle, boxes.starts, boxes.counts, boxes.ndim, dtype, device, stream)


def gather_device(boxes: Boxes, buf: Any, out_shape: Shape, dtype: np.dtype, device: int, stream: int) -> Any:
    import cupy as cp
    with cp.cuda.Device(device), cp.cuda.ExternalStream(stream):
        out = cp.empty(math.prod(out_shape), dtype)
        at = 0
        for dst, src, n in zip(boxes.dst, boxes.src, boxes.sizes()):
            out[cp.asarray(dst)] = buf[at:at + n][cp.asarray(src)]
            at += n
        return out.reshape(out_shape)


def write_boxes(handle: Any, boxes: Boxes, value: np.ndarray, out_shape: Shape, dtype: np.dtype) -> None:
    """Merges `value` (broadcast to the selection's shape) into the boxes read first, then writes each back."""
    flat = np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype=dtype), out_shape)).ravel()
    views = read_boxes_host(handle, boxes, dtype)
    for s, c, dst, src, v in zip(boxes.starts, boxes.counts, boxes.dst, boxes.src, views):
        v[src] = flat[dst]
        _capi.check(lib.zgpu_array_write(handle, _capi.u64_array(s), _capi.u64_array(c),
                                         ctypes.c_void_p(v.ctypes.data), None))
