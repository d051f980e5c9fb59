"""zgpu.to_dask / zgpu.to_zarr (issue 21): Dask arrays whose blocks are zgpu reads, and writes from Dask."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import zarr

import zgpu

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


@pytest.fixture(params=["plain", "sharded"])
def stored(tmp_path, request):
    data = np.random.default_rng(3).random((40, 30, 20)).astype("f4")
    kw = dict(shards=(20, 30, 20)) if request.param == "sharded" else {}
    a = zgpu.create(str(tmp_path / "a.zarr"), shape=data.shape, dtype=data.dtype, chunks=(10, 15, 20), **kw)
    a[...] = data
    return a, data


def test_blocks_follow_the_stored_grid(stored):
    a, data = stored
    x = zgpu.to_dask(a.path)
    want = a.shards or a.chunks
    assert x.chunksize == want and x.dtype == data.dtype and isinstance(x._meta, np.ndarray)
    np.testing.assert_array_equal(x.compute(), data)
    assert float(x.sum().compute()) == pytest.approx(float(data.sum(dtype="f8")), rel=1e-5)
    y = zgpu.to_dask(a, chunks=(7, 30, 5))
    assert y.chunks[0] == (7,) * 5 + (5,)
    np.testing.assert_array_equal(y[3:33:2, ::-1, 4].compute(), data[3:33:2, ::-1, 4])


def test_graph_runs_in_processes(stored):
    """The graph pickles (zgpu arrays reopen by path): the processes scheduler reads the same values."""
    a, data = stored
    x = zgpu.to_dask(a)
    pickle.loads(pickle.dumps(x))
    got = x.mean(axis=0).compute(scheduler="processes", num_workers=2)
    np.testing.assert_allclose(got, data.mean(axis=0), rtol=1e-5)


def test_to_zarr(tmp_path):
    src = da.from_array(np.arange(24 * 10, dtype="i4").reshape(24, 10), chunks=(5, 4))
    a = zgpu.to_zarr(src * 2, str(tmp_path / "w.zarr"))
    assert a.chunks == (5, 4)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "w.zarr"))[...], np.arange(240).reshape(24, 10) * 2)
    # stored chunks other than the Dask blocks: tasks write parts of one chunk side by side (zgpu's write lock)
    b = zgpu.to_zarr(src + 1, str(tmp_path / "w.zarr"), chunks=(7, 7), overwrite=True)
    assert b.chunks == (7, 7)
    np.testing.assert_array_equal(b[...], np.arange(240).reshape(24, 10) + 1)
    d = zgpu.to_zarr(src, str(tmp_path / "lazy.zarr"), compute=False)
    assert not zgpu.open_array(str(tmp_path / "lazy.zarr"))[...].any()
    d.compute()
    np.testing.assert_array_equal(zgpu.open_array(str(tmp_path / "lazy.zarr"))[...], src.compute())


def test_device_blocks(stored):
    if not zgpu.gpu_available():
        pytest.skip("skipped: no GPU")
    cp = pytest.importorskip("cupy")
    a, data = stored
    x = zgpu.to_dask(a, device="cuda")
    assert isinstance(x._meta, cp.ndarray)
    got = x.sum(axis=(1, 2)).compute()
    np.testing.assert_allclose(cp.asnumpy(got), data.sum(axis=(1, 2)), rtol=1e-5)


def test_gpu_dask_cuda_cluster_reduction(tmp_path):
    """A reduction over a label volume on a dask-cuda LocalCUDACluster (a worker a GPU, every GPU of the machine):
    the blocks are zgpu reads into each worker's GPU (workers reopen the array by path)."""
    if not zgpu.gpu_available():
        pytest.skip("skipped: no GPU")
    cp = pytest.importorskip("cupy", reason="skipped: no GPU (CuPy is not installed)")
    dask_cuda = pytest.importorskip("dask_cuda", reason="dask-cuda is not installed")
    distributed = pytest.importorskip("distributed")
    z, y, x = np.meshgrid(np.arange(48), np.arange(64), np.arange(80), indexing="ij")
    labels = ((z // 16) * 7919 + (y // 24) * 104729 + (x // 20) * 1299709).astype(np.uint32) % 50000
    a = zgpu.create(str(tmp_path / "labels.zarr"), shape=labels.shape, dtype=labels.dtype, chunks=(16, 32, 40),
                    compressors="zstd")
    a[...] = labels
    n = cp.cuda.runtime.getDeviceCount()
    with dask_cuda.LocalCUDACluster(n_workers=n, threads_per_worker=2, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        xs = zgpu.to_dask(a.path, device="cuda")
        assert int(client.compute(xs.sum()).result()) == int(labels.sum(dtype=np.uint64))
        per_plane = client.compute(xs.max(axis=(1, 2))).result()
        np.testing.assert_array_equal(cp.asnumpy(per_plane), labels.max(axis=(1, 2)))
        # every worker took part: each holds its own GPU
        assert len(client.scheduler_info()["workers"]) == n


def test_device_blocks_merge_stored_chunks():
    from zgpu.dask import merged_blocks
    # the label volume: 64x256x256 chunks of 4 bytes (16 MiB) merge to whole planes of 64 (256 MiB)
    assert merged_blocks((256, 1024, 1024), (64, 256, 256), 4, 256 << 20) == (64, 1024, 1024)
    # a smaller limit: the last axis whole, then as many rows of chunks as fit
    assert merged_blocks((256, 1024, 1024), (64, 256, 256), 4, 64 << 20) == (64, 256, 1024)
    assert merged_blocks((256, 1024, 1024), (64, 256, 256), 4, 128 << 20) == (64, 512, 1024)
    # a unit over the limit stays one unit; small arrays become one block
    assert merged_blocks((100, 100), (80, 80), 8, 1 << 10) == (80, 80)
    assert merged_blocks((100, 100), (10, 10), 8, 256 << 20) == (100, 100)
    assert merged_blocks((0, 5), (4, 4), 1, 100) == (0, 4)
    assert merged_blocks((), (), 4, 100) == ()
