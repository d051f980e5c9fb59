"""Basic indexing semantics against NumPy: a table of selections, read and written, on a real array."""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import zgpu
from zgpu import _indexing

SHAPE = (9, 7, 5)

SELECTIONS = [
    (), Ellipsis, 0, -1, 8, -9, (1, 2, 3), (-1, -1, -1), (1, 2, 3, Ellipsis), (Ellipsis, 4),
    slice(None), slice(2, 5), slice(-3, None), slice(None, None, 2), slice(1, 8, 3), slice(7, 2, -1),
    slice(None, None, -1), slice(None, None, -3), slice(5, 100), slice(-100, 3), slice(4, 2), slice(3, 3),
    (slice(1, 3), 2), (0, slice(None), 0), (slice(None), slice(None), slice(None, None, 4)),
    (Ellipsis, slice(1, -1, 2)), (2, Ellipsis, 1), (slice(None, None, -2), 3, slice(4, 0, -2)),
    (None, 1), (1, None, slice(2, 4)), (Ellipsis, None), (None, Ellipsis, None, 0),
    (np.int64(3), np.int32(-2)), (slice(np.int64(1), np.int64(6), np.int64(2)),),
]


@pytest.fixture(scope="module")
def arr(tmp_path_factory):
    path = tmp_path_factory.mktemp("idx") / "a.zarr"
    data = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)
    a = zgpu.create(path, shape=SHAPE, dtype="int32", chunks=(4, 3, 2))
    a[...] = data
    return a, data


@pytest.mark.parametrize("sel", SELECTIONS, ids=repr)
def test_read_matches_numpy(arr, sel):
    a, data = arr
    got = a[sel]
    exp = data[sel]
    assert type(got) is type(exp)
    assert np.shape(got) == np.shape(exp)
    assert np.array_equal(got, exp)


@pytest.mark.parametrize("sel", SELECTIONS, ids=repr)
def test_read_into_out_matches_numpy(arr, sel):
    a, data = arr
    exp = np.asarray(data[sel])
    # a non-contiguous, reversed destination: strides of `out` must be honoured
    big = np.full(exp.shape + (2,), -7, dtype=np.int32)
    out = big[..., 0]
    if out.ndim:
        out = out[::-1][::-1]
    res = a.read(sel, out=out)
    assert res is out
    assert np.array_equal(out, exp)
    assert (big[..., 1] == -7).all()


@pytest.mark.parametrize("sel", SELECTIONS, ids=repr)
def test_write_matches_numpy(tmp_path, sel):
    data = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)
    a = zgpu.create(tmp_path / "w.zarr", shape=SHAPE, dtype="int32", chunks=(4, 3, 2), fill_value=-1)
    a[...] = data
    target = np.array(data)
    value = -np.arange(np.asarray(target[sel]).size, dtype=np.int32).reshape(np.shape(target[sel])) - 100
    target[sel] = value
    a[sel] = value
    assert np.array_equal(a[...], target)
    # scalars broadcast
    target[sel] = 42
    a[sel] = 42
    assert np.array_equal(a[...], target)


@pytest.mark.parametrize("sel, exc", [
    ((1, 2, 3, 4), IndexError), (9, IndexError), (-10, IndexError), ((0, 7), IndexError),
    ((Ellipsis, Ellipsis), IndexError), (1.5, IndexError), (slice(None, None, 0), ValueError),
    ("a", IndexError),
])
def test_bad_selections_raise_like_numpy(arr, sel, exc):
    a, data = arr
    with pytest.raises(exc):
        data[sel]
    with pytest.raises(exc):
        a[sel]


@pytest.mark.parametrize("sel", [[1, 2], np.array([0, 1]), np.zeros(SHAPE, bool), (0, [1])], ids=repr)
def test_array_indices_read_as_numpy(arr, sel):
    """Arrays in a selection: zarr-python's orthogonal or coordinate selection (test_fancy_indexing.py), which
    for these equals NumPy's."""
    a, data = arr
    np.testing.assert_array_equal(a[sel], data[sel])


def test_bool_scalar_is_refused(arr):
    a, _ = arr
    with pytest.raises(IndexError, match="basic indexing"):
        a[True]
    with pytest.raises(IndexError, match="basic indexing"):
        a[True] = 0


def test_out_of_bounds_integer_is_out_of_range_error(arr):
    a, _ = arr
    with pytest.raises(zgpu.OutOfRangeError, match="out of bounds for axis 1 with size 7"):
        a[0, 7]


def test_write_shape_mismatch_raises_like_numpy(arr):
    a, data = arr
    with pytest.raises(ValueError):
        np.empty(SHAPE)[0:2] = np.ones((3, 7, 5))
    with pytest.raises(ValueError):
        a[0:2] = np.ones((3, 7, 5))


def test_random_selections_normalize_like_numpy():
    """Thousands of random selections: box + view reproduce NumPy's result, type and shape."""
    rng = random.Random(7)
    x = np.arange(np.prod(SHAPE)).reshape(SHAPE)

    def item(dim):
        r = rng.random()
        if r < 0.3:
            return rng.randint(-dim, dim - 1)
        if r < 0.9:
            return slice(rng.choice([None, -9, -3, 0, 1, 2, 6, 10]), rng.choice([None, -9, -3, 0, 1, 3, 5, 10]),
                         rng.choice([None, 1, 2, 3, -1, -2, 5]))
        return None

    checked = 0
    for _ in range(3000):
        items = [item(SHAPE[min(i, 2)]) for i in range(rng.randint(0, 3))]
        if rng.random() < 0.3:
            items.insert(rng.randint(0, len(items)), Ellipsis)
        sel = tuple(items)
        try:
            exp = x[sel]
        except IndexError:
            with pytest.raises(IndexError):
                _indexing.normalize(sel, SHAPE)
            continue
        s = _indexing.normalize(sel, SHAPE)
        box = np.ascontiguousarray(x[tuple(slice(b, b + c) for b, c in zip(s.start, s.count))])
        assert box.shape == s.count
        got = box[s.view]
        assert type(got) is type(exp) and np.shape(got) == np.shape(exp) == s.shape
        assert np.array_equal(got, exp)
        # the strided description used for device arrays equals NumPy's view
        shape, strides, off = _indexing.strided_view(box.shape, box.strides, 0, s.view)
        if isinstance(got, np.ndarray) and got.size:
            assert shape == got.shape
            view = np.ndarray(shape, box.dtype, buffer=box, offset=off, strides=strides)
            assert np.array_equal(view, exp)
        # the direct layout used to read straight into `out`
        if s.dense and isinstance(got, np.ndarray) and got.size:
            out = np.zeros(s.shape, x.dtype)
            st, o = _indexing.box_layout(s, out.strides)
            np.ndarray(s.count, x.dtype, buffer=out, offset=o, strides=st)[...] = box
            assert np.array_equal(out, exp)
        checked += 1
    assert checked > 2000


def test_zero_dimensional_array(tmp_path):
    a = zgpu.create(tmp_path / "s.zarr", shape=(), dtype="float64", fill_value=1.5)
    assert a.shape == () and a.ndim == 0
    assert a[()] == 1.5 and isinstance(a[()], np.float64)
    assert isinstance(a[...], np.ndarray) and a[...].shape == ()
    a[()] = 2.25
    assert a[...] == 2.25
    with pytest.raises(TypeError):
        len(a)


def test_plain_slices_fast_path_matches_the_general_one():
    """normalize() takes a fast path for one step-1 slice per axis (a training loop's crops); it must give what
    the general path gives for every such selection, empty and out-of-range bounds included."""
    import random

    from zgpu import _indexing as ix
    rng = random.Random(7)
    checked = 0
    for _ in range(5000):
        shape = tuple(rng.randint(0, 9) for _ in range(rng.randint(1, 4)))

        def bound():
            return rng.choice([None, rng.randint(-12, 12)])
        sel = tuple(slice(bound(), bound(), rng.choice([None, 1])) for _ in shape)
        fast = ix._plain_slices(sel, shape)
        assert fast is not None
        # the general path: the same selection with an Ellipsis, which the fast path does not take
        general = ix.normalize(sel + (Ellipsis,), shape)
        assert (fast.start, fast.count, fast.shape, fast.items, fast.scalar) == \
            (general.start, general.count, general.shape, general.items, general.scalar), (sel, shape)
        assert np.zeros(shape)[sel].shape == fast.shape
        checked += 1
    assert checked == 5000
    assert ix._plain_slices((slice(0, 4, 2),), (9,)) is None and ix._plain_slices((3,), (9,)) is None
