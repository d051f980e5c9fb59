"""Orthogonal, coordinate and block selections (issue 21: indexing like zarr-python), against NumPy and zarr-python
on the same data, for reads and writes; sharded arrays and chunk edges included. Device reads run on a GPU."""
from __future__ import annotations

import numpy as np
import pytest
import zarr

import zgpu

SHAPE = (23, 17, 30)
CHUNKS = (5, 4, 7)


def _data(seed=0):
    return np.random.default_rng(seed).integers(0, 1 << 30, SHAPE, dtype=np.int64).astype("i4")


def _make_pair(path, layout):
    data = _data()
    kw = dict(shards=(10, 8, 14)) if layout == "sharded" else {}
    z = zarr.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype="i4", **kw)
    z[...] = data
    return zgpu.open_array(str(path), mode="r+"), z, data


@pytest.fixture(params=["plain", "sharded"])
def pair(tmp_path, request):
    """(zgpu array, zarr-python array of the same data), a fresh pair for a test that writes."""
    return _make_pair(tmp_path / "a.zarr", request.param)


@pytest.fixture(scope="module", params=["plain", "sharded"])
def ro_pair(tmp_path_factory, request):
    """The same, written once for the tests that only read it (a pair costs 0.1-0.2 s to write)."""
    return _make_pair(tmp_path_factory.mktemp("ro") / "a.zarr", request.param)


RNG = np.random.default_rng(7)
ORTHO = [
    ([3, 0, 22, 3],),                                               # repeats, any order
    (slice(None), [16, 2, 2, 9]),
    ([1, 7], slice(2, 15, 3), np.array([29, 0, -1])),               # negative index
    (np.arange(23) % 3 == 0, 4, slice(None)),                       # a mask and an integer
    (Ellipsis, np.array([6, 13, 20, 27])),
    (RNG.integers(0, 23, 40), RNG.integers(0, 17, 9), RNG.integers(0, 30, 11)),
    (np.array([], int), slice(None), [1]),                         # empty
]


@pytest.mark.parametrize("sel", ORTHO, ids=range(len(ORTHO)))
def test_oindex_read(ro_pair, sel):
    a, z, data = ro_pair
    np.testing.assert_array_equal(a.oindex[sel], z.oindex[sel])


VINDEX = [
    ([0, 22, 5, 5], [16, 0, 3, 3], [29, 0, 7, 7]),                  # repeats
    (np.array([[1, 2], [3, 4]]), np.array([[5], [6]]), 7),          # broadcasting, an integer
    (RNG.integers(0, 23, 500), RNG.integers(0, 17, 500), RNG.integers(-30, 30, 500)),
]


@pytest.mark.parametrize("sel", VINDEX, ids=range(len(VINDEX)))
def test_vindex_read(ro_pair, sel):
    a, z, data = ro_pair
    np.testing.assert_array_equal(a.vindex[sel], data[sel])
    np.testing.assert_array_equal(a.vindex[sel], z.vindex[sel])


def test_mask_and_getitem_dispatch(ro_pair):
    a, z, data = ro_pair
    m = (data % 7) == 0
    np.testing.assert_array_equal(a.vindex[m], data[m])
    np.testing.assert_array_equal(a[m], data[m])                               # NumPy's full mask
    np.testing.assert_array_equal(a[[1, 5], [2, 3], [4, 29]], z[[1, 5], [2, 3], [4, 29]])   # coordinate
    np.testing.assert_array_equal(a[[1, 5], :, [4, 29]], z.oindex[[1, 5], :, [4, 29]])      # orthogonal
    np.testing.assert_array_equal(a[np.arange(23) > 10], data[np.arange(23) > 10])


@pytest.mark.parametrize("sel", [(1,), (slice(1, 3), 1), (-1, slice(None), slice(1, 3)), (Ellipsis, 2)])
def test_blocks(ro_pair, sel):
    """(On the chunk grid, or the shard grid of a sharded array, as zarr-python.)"""
    a, z, data = ro_pair
    np.testing.assert_array_equal(a.blocks[sel], z.blocks[sel])
    with pytest.raises(zgpu.OutOfRangeError):
        a.blocks[0, 0, 9]


def test_writes(pair, tmp_path):
    a, z, data = pair
    ref = data.copy()
    a.oindex[[0, 21, 3], :, [29, 1]] = 7
    ref[np.ix_([0, 21, 3], range(17), [29, 1])] = 7
    v = np.arange(4 * 3, dtype="i4").reshape(4, 3)
    a.oindex[[2, 9, 11, 22], 5, [0, 15, 16]] = v
    ref[np.ix_([2, 9, 11, 22], [5], [0, 15, 16])] = v[:, None, :]
    pts = (np.array([0, 22, 7]), np.array([16, 0, 8]), np.array([0, 29, 14]))
    a.vindex[pts] = [-1, -2, -3]
    ref[pts] = [-1, -2, -3]
    m = (ref % 11) == 0
    a[m] = 5
    ref[m] = 5
    a.blocks[1, 1] = 9
    g = a.shards or a.chunks
    ref[g[0]:2 * g[0], g[1]:2 * g[1], :] = 9
    np.testing.assert_array_equal(a[...], ref)
    np.testing.assert_array_equal(z[...], ref)  # zarr-python reads what zgpu wrote


def test_errors(ro_pair):
    a, _, _ = ro_pair
    with pytest.raises(zgpu.OutOfRangeError):
        a.oindex[[0, 23], :, :]
    with pytest.raises(zgpu.OutOfRangeError):
        a.vindex[[0], [17], [0]]
    with pytest.raises(IndexError, match="boolean mask for axis 0"):
        a.oindex[np.ones(5, bool)]
    with pytest.raises(IndexError, match="broadcast"):
        a.vindex[[0, 1], [0, 1, 2], [0]]
    with pytest.raises(IndexError, match="one integer array per axis"):
        a.vindex[[0, 1], [0, 1]]
    with pytest.raises(IndexError, match="step 1"):
        a.blocks[::2]
    with pytest.raises(TypeError, match="convert it afterwards"):
        a.read(([0, 1],), dtype="f4")
    with pytest.raises(zgpu.ReadOnlyError):
        zgpu.open_array(a.path).oindex[[0], :, :] = 1


def test_device(ro_pair):
    if not zgpu.gpu_available():
        pytest.skip("skipped: no GPU")
    cp = pytest.importorskip("cupy")
    a, z, data = ro_pair
    sel = (np.array([3, 0, 22]), slice(None), [29, 4])
    got = a.oindex.read(sel, device="cuda")
    assert isinstance(got, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(got), z.oindex[sel])
    pts = VINDEX[2]
    np.testing.assert_array_equal(cp.asnumpy(a.vindex.read(pts, device="cuda")), data[pts])
    np.testing.assert_array_equal(cp.asnumpy(a.read([1, 5], device="cuda")), data[[1, 5]])
