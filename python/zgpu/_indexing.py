"""NumPy basic indexing mapped onto zgpu's box reads (selections with arrays: _fancy.py).

A selection (integers, slices with any non-zero step, Ellipsis, np.newaxis) becomes one bounding box
[start, start+count) read from the array, plus a view taken of the box, exactly as NumPy would index it.
Slices with |step| > 1 read the whole bounding box and then take the strided view: the bytes read grow with
the step (a[::10] decodes every chunk the box touches).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from .errors import OutOfRangeError

Shape = Tuple[int, ...]

_VALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`), integer arrays and boolean masks "
          "are valid indices (NumPy basic indexing; arrays as zarr-python's oindex / vindex)")


@dataclass(frozen=True)
class Item:
    """One expanded selection item: kind "int" (drops the axis), "slice" (step, n = result length) or "new"."""

    kind: str
    step: int = 1
    n: int = 1


@dataclass(frozen=True)
class Selection:
    """A normalised basic-indexing selection of an array of shape `shape`."""

    start: Shape          # bounding box start, one per array axis
    count: Shape          # bounding box size, one per array axis
    view: tuple           # index applied to the box (an ndarray of shape `count`) to give the result
    items: Tuple[Item, ...]  # expanded items, array axes and new axes in selection order
    shape: Shape          # result shape
    scalar: bool          # the result is a NumPy scalar (every axis taken by an integer, no Ellipsis)

    @property
    def empty(self) -> bool:
        return any(c == 0 for c in self.count)

    @property
    def dense(self) -> bool:
        """True when the result covers every element of the box (all |steps| are 1 where n > 1)."""
        return all(it.kind != "slice" or abs(it.step) == 1 or it.n <= 1 for it in self.items)


def _as_index(x: Any) -> Optional[int]:
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return None
    try:
        return operator.index(x)
    except TypeError:
        return None


_FULL_ITEMS: dict = {}  # Item("slice", 1, n) by n: shared (frozen), the fast path's


def _slice_item(n: int) -> Item:
    it = _FULL_ITEMS.get(n)
    if it is None:
        if len(_FULL_ITEMS) > 4096:
            _FULL_ITEMS.clear()
        it = _FULL_ITEMS[n] = Item("slice", 1, n)
    return it


def _plain_slices(sel: tuple, shape: Sequence[int]) -> Optional[Selection]:
    """The common case fast (a training loop's crops): one slice of step 1 (or None) per axis. None otherwise."""
    start: List[int] = []
    count: List[int] = []
    for s, dim in zip(sel, shape):
        if type(s) is not slice or (s.step is not None and s.step != 1):
            return None
        first, stop, _ = s.indices(dim)
        n = stop - first if stop > first else 0
        start.append(first if n else min(first, dim))
        count.append(n)
    c = tuple(count)
    return Selection(tuple(start), c, (slice(None),) * len(c), tuple(_slice_item(n) for n in c), c, False)


def normalize(selection: Any, shape: Sequence[int]) -> Selection:
    """Normalises `selection` for an array of `shape`, with NumPy's rules and error types."""
    if type(selection) is tuple and len(selection) == len(shape) and len(shape):
        fast = _plain_slices(selection, shape)
        if fast is not None:
            return fast
    shape = tuple(int(s) for s in shape)
    ndim = len(shape)
    sel = selection if isinstance(selection, tuple) else (selection,)
    n_ellipsis = sum(1 for s in sel if s is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_axes = sum(1 for s in sel if s is not None and s is not Ellipsis)
    if n_axes > ndim:
        raise IndexError("too many indices for array: array is %d-dimensional, but %d were indexed"
                         % (ndim, n_axes))
    start: List[int] = []
    count: List[int] = []
    view: List[Any] = []
    items: List[Item] = []
    axis = 0
    for s in sel:
        if s is Ellipsis:
            for _ in range(ndim - n_axes):
                start.append(0)
                count.append(shape[axis])
                items.append(Item("slice", 1, shape[axis]))
                axis += 1
            view.append(Ellipsis)
            continue
        if s is None:
            items.append(Item("new"))
            view.append(None)
            continue
        if isinstance(s, slice):
            dim = shape[axis]
            first, stop, step = s.indices(dim)  # raises ValueError for step 0, TypeError for bad types
            n = len(range(first, stop, step))
            if n == 0:
                start.append(min(first, dim) if step > 0 else 0)
                count.append(0)
                view.append(slice(None))
            elif step > 0:
                start.append(first)
                count.append((n - 1) * step + 1)
                view.append(slice(None, None, step) if step != 1 else slice(None))
            else:
                last = first + (n - 1) * step
                c = (n - 1) * (-step) + 1
                start.append(last)
                count.append(c)
                view.append(slice(c - 1, None, step))
            items.append(Item("slice", step, n))
            axis += 1
            continue
        i = _as_index(s)
        if i is None:
            raise IndexError(_VALID)
        dim = shape[axis]
        if i < -dim or i >= dim:
            raise OutOfRangeError("index %d is out of bounds for axis %d with size %d" % (i, axis, dim))
        if i < 0:
            i += dim
        start.append(i)
        count.append(1)
        view.append(0)
        items.append(Item("int"))
        axis += 1
    while axis < ndim:  # trailing axes not named: full slices (numpy's implicit Ellipsis at the end)
        start.append(0)
        count.append(shape[axis])
        items.append(Item("slice", 1, shape[axis]))
        view.append(slice(None))
        axis += 1
    out_shape = tuple(it.n for it in items if it.kind != "int")
    scalar = n_ellipsis == 0 and all(it.kind == "int" for it in items)
    return Selection(tuple(start), tuple(count), tuple(view), tuple(items), out_shape, scalar)


def strided_view(shape: Sequence[int], strides: Sequence[int], offset: int, view: tuple
                 ) -> Tuple[Shape, Tuple[int, ...], int]:
    """Applies a basic index to a strided layout (byte strides) the way NumPy does to an ndarray.

    Returns (shape, strides, byte offset). Used for device arrays, where no ndarray exists to index.
    """
    shape = list(shape)
    strides = list(strides)
    n_axes = sum(1 for v in view if v is not None and v is not Ellipsis)
    out_shape: List[int] = []
    out_strides: List[int] = []
    axis = 0
    for v in view:
        if v is Ellipsis:
            for _ in range(len(shape) - n_axes):
                out_shape.append(shape[axis])
                out_strides.append(strides[axis])
                axis += 1
        elif v is None:
            out_shape.append(1)
            out_strides.append(0)
        elif isinstance(v, slice):
            first, stop, step = v.indices(shape[axis])
            n = len(range(first, stop, step))
            if n > 0:
                offset += first * strides[axis]
            out_shape.append(n)
            out_strides.append(strides[axis] * step)
            axis += 1
        else:
            i = operator.index(v)
            if i < 0:
                i += shape[axis]
            offset += i * strides[axis]
            axis += 1
    while axis < len(shape):
        out_shape.append(shape[axis])
        out_strides.append(strides[axis])
        axis += 1
    return tuple(out_shape), tuple(out_strides), offset


def box_layout(sel: Selection, out_strides: Sequence[int]) -> Optional[Tuple[Tuple[int, ...], int]]:
    """For a dense selection, the byte strides of the box and the byte offset of its first element inside a
    result buffer with `out_strides` (one per result axis), so the C read can write the result directly.
    None when the selection is not dense (|step| > 1 skips elements the result has no room for)."""
    if not sel.dense:
        return None
    box_strides: List[int] = []
    offset = 0
    r = 0  # result axis
    for it in sel.items:
        if it.kind == "new":
            r += 1
        elif it.kind == "int":
            box_strides.append(0)
        else:
            st = out_strides[r]
            if it.step < 0 and it.n > 1:
                offset += (it.n - 1) * st
                st = -st
            box_strides.append(st)
            r += 1
    return tuple(box_strides), offset
