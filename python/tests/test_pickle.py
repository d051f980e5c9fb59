"""Arrays and groups pickle as their path, mode and context settings: what Dask and multiprocessing workers need
(issue 21). Unpickled they are opened anew, with a context of the same settings."""
from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest

import zgpu
from zgpu import _context


@pytest.fixture
def arr(tmp_path):
    data = np.arange(5 * 6 * 7, dtype="i4").reshape(5, 6, 7)
    a = zgpu.create(str(tmp_path / "a.zarr"), shape=data.shape, dtype=data.dtype, chunks=(2, 3, 4))
    a[...] = data
    return a, data


def test_array_roundtrip(arr):
    a, data = arr
    b = pickle.loads(pickle.dumps(a))
    assert b is not a and b.path == a.path and b.shape == a.shape and b.dtype == a.dtype
    np.testing.assert_array_equal(b[1:4, :, 2:], data[1:4, :, 2:])
    assert b.read_only == a.read_only
    r = zgpu.open_array(a.path, mode="r")
    assert pickle.loads(pickle.dumps(r)).read_only
    with pytest.raises(zgpu.ReadOnlyError):
        pickle.loads(pickle.dumps(r))[0, 0, 0] = 1
    # the same settings as zgpu.config's: the same context
    assert b._ctx is a._ctx


def test_settings_travel(arr):
    """A context of other settings (here a chunk cache) is made again from them, once for all arrays of them."""
    a, data = arr
    zgpu.config.set(cache_bytes=1 << 20)
    try:
        c = zgpu.open_array(a.path)
        blob = pickle.dumps(c)
    finally:
        zgpu.config.set(cache_bytes=0)
    d, e = pickle.loads(blob), pickle.loads(blob)
    assert d._ctx.settings["cache_bytes"] == 1 << 20 and d._ctx is e._ctx and d._ctx is not a._ctx
    assert d._ctx is _context.context_like(c._ctx.settings)
    np.testing.assert_array_equal(d[...], data)


def test_group_roundtrip(tmp_path):
    g = zgpu.create_group(str(tmp_path / "g.zarr"), attributes={"k": 1})
    g.create_array("x", shape=(3,), dtype="u1")
    h = pickle.loads(pickle.dumps(g))
    assert h.path == g.path and h.attrs["k"] == 1 and h.keys() == ["x"]


def test_staged_and_closed_refuse(tmp_path):
    s = zgpu.open_array(str(tmp_path / "s.zarr"), mode="w", shape=(3,), dtype="u1")
    with pytest.raises(TypeError, match="staged"):
        pickle.dumps(s)
    s.close()
    with pytest.raises(zgpu.InvalidArgumentError):
        pickle.dumps(s)


def _worker_sum(a):
    return int(a[...].sum())


def test_in_a_spawned_process(arr):
    a, data = arr
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_worker_sum, (a,)) == int(data.sum())
