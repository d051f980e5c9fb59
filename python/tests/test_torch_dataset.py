"""zgpu.torch: RandomCropDataset and RandomCropSampler with PyTorch's DataLoader.

Each crop equals the array at the box the dataset says it drew; an epoch yields every batch once, with no
duplicate across workers (num_workers 0 and 2), the same batches whatever the number of workers; epochs and seeds;
the array opened lazily in each process and CUDA never touched by the constructor; dtype conversion; pinned
memory and device="cuda" (those two skip with "skipped: no GPU" where there is none).

The tests that need PyTorch skip when it is not installed (it is not in the development requirements); importing
zgpu must not import torch, and zgpu.torch must import without it (its sampler works, its dataset says what is
missing), which is checked without it. Each test runs under an alarm and each DataLoader with a
timeout: a hang fails instead of blocking the suite."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import zgpu
from zg_helpers import NO_GPU, assert_same, hang_guard, make_data

TIMEOUT_S = 60


@pytest.fixture(autouse=True)
def alarm():
    yield from hang_guard(TIMEOUT_S, "test_torch_dataset")


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="PyTorch is not installed")


@pytest.fixture(scope="module")
def zt(torch):
    import zgpu.torch
    return zgpu.torch


@pytest.fixture
def cuda(torch):
    try:
        ok = zgpu.gpu_available() and torch.cuda.is_available()
    except Exception:
        ok = False
    if not ok:
        pytest.skip(NO_GPU)
    return torch


SHAPE = (9, 40, 33)


@pytest.fixture(scope="module")
def vol(tmp_path_factory):
    path = tmp_path_factory.mktemp("torchds") / "v.zarr"
    data = make_data(SHAPE, "int16", seed=7)
    with zgpu.create(path, shape=SHAPE, dtype="int16", chunks=(3, 16, 16), compressors="zstd") as w:
        w[...] = data
    return str(path), data


def _crop(data, start, crop):
    lead = data.ndim - len(crop)
    return data[tuple(int(s) for s in start[:lead]) +
                tuple(slice(int(s), int(s) + c) for s, c in zip(start[lead:], crop))]


def _loader(torch, ds, workers):
    return torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                       timeout=TIMEOUT_S / 2 if workers else 0)


def test_import_zgpu_does_not_import_torch():
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(zgpu.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([pkg, os.environ.get("PYTHONPATH", "")]))
    code = "\n".join([
        "import sys, zgpu",
        "zgpu.iter_slabs",
        "assert 'torch' not in sys.modules, 'zgpu imported torch'",
        "sys.modules['torch'] = None  # as if PyTorch were not installed: zgpu.torch still imports",
        "import zgpu.torch as zt",
        "assert len(zt.RandomCropSampler((10, 10), (3, 3), 2, 1).selections(0)) == 2",
        "try:",
        "    zt.RandomCropDataset('nowhere', (3, 3), 2)",
        "except ImportError as e:",
        "    assert 'needs PyTorch' in str(e), e",
        "else:",
        "    raise SystemExit('RandomCropDataset without PyTorch: no ImportError')",
    ])
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("crop", [(4, 10, 7), (12, 5), (9, 40, 33)])
def test_crops_equal_the_array_at_their_boxes(torch, zt, vol, crop):
    path, data = vol
    ds = zt.RandomCropDataset(path, crop, batch_size=5, n_batches=4, seed=1, return_boxes=True)
    n = 0
    for batch, starts in _loader(torch, ds, 0):
        assert isinstance(batch, torch.Tensor) and batch.dtype == torch.int16 and not batch.is_cuda
        assert tuple(batch.shape) == (5,) + crop
        assert tuple(starts.shape) == (5, 3) and starts.dtype == torch.int64
        for i in range(5):
            assert_same(batch[i].numpy(), _crop(data, starts[i].numpy(), crop))
        n += 1
    assert n == len(ds) == 4


def _epoch(torch, ds, workers):
    out = []
    for batch, starts in _loader(torch, ds, workers):
        out.append((batch.numpy().copy(), starts.numpy().copy()))
    return out


def test_epoch_covers_every_batch_once_across_workers(torch, zt, vol):
    path, data = vol
    crop = (2, 8, 8)
    ds = zt.RandomCropDataset(path, crop, batch_size=3, n_batches=7, seed=11, return_boxes=True)
    want = [ds.sampler.starts(b) for b in range(7)]
    keys = {b.tobytes() for b in want}
    assert len(keys) == 7  # (distinct batches to tell apart)
    for workers in (0, 2):
        got = _epoch(torch, ds, workers)
        assert len(got) == 7
        seen = [s.tobytes() for _, s in got]
        assert len(set(seen)) == 7 and set(seen) == keys  # each batch once, none twice, none missing
        assert seen == [b.tobytes() for b in want]  # (the DataLoader keeps the batches in order)
        for batch, starts in got:  # read right in the workers too
            for i in range(3):
                assert_same(batch[i], _crop(data, starts[i], crop))


def test_workers_shard_the_batches(zt, vol):
    path, _ = vol
    ds = zt.RandomCropDataset(path, (3, 3, 3), batch_size=2, n_batches=5, seed=2, return_boxes=True)

    class Info:
        def __init__(self, i, n):
            self.id, self.num_workers = i, n

    mine = []
    import zgpu.torch as mod
    real = mod.get_worker_info
    try:
        for w in range(3):
            mod.get_worker_info = lambda w=w: Info(w, 3)
            mine.append([s.numpy().tobytes() for _, s in ds])
    finally:
        mod.get_worker_info = real
    assert [len(m) for m in mine] == [2, 2, 1]
    flat = [x for m in mine for x in m]
    assert sorted(flat) == sorted(ds.sampler.starts(b).tobytes() for b in range(5))


def test_epochs_and_seeds(torch, zt, vol):
    path, _ = vol
    a = zt.RandomCropDataset(path, (5, 5), batch_size=4, n_batches=3, seed=5, return_boxes=True)
    b = zt.RandomCropDataset(path, (5, 5), batch_size=4, n_batches=3, seed=5, return_boxes=True)
    e0 = [s.numpy() for _, s in a]
    assert all(np.array_equal(x, s.numpy()) for x, (_, s) in zip(e0, b))  # same seed, same crops
    a.set_epoch(1)
    assert a.epoch == 1
    e1 = [s.numpy() for _, s in a]
    assert not all(np.array_equal(x, y) for x, y in zip(e0, e1))  # another epoch, other crops
    c = zt.RandomCropDataset(path, (5, 5), batch_size=4, n_batches=3, seed=6, return_boxes=True)
    assert not all(np.array_equal(x, s.numpy()) for x, (_, s) in zip(e0, c))
    # crops stay inside the array; leading axes are indices
    for s in e0 + e1:
        assert (s >= 0).all() and (s[:, 0] < SHAPE[0]).all()
        assert (s[:, 1] <= SHAPE[1] - 5).all() and (s[:, 2] <= SHAPE[2] - 5).all()


def test_defaults_dtype_and_errors(torch, zt, vol):
    path, data = vol
    ds = zt.RandomCropDataset(path, (3, 10, 11), batch_size=2, seed=0)
    assert len(ds) == -(-data.size // (2 * 3 * 10 * 11))  # n_batches None: the volume once on average
    batch = next(iter(ds))
    assert isinstance(batch, torch.Tensor) and tuple(batch.shape) == (2, 3, 10, 11)
    f = zt.RandomCropDataset(path, (3, 10, 11), batch_size=2, n_batches=1, seed=0, dtype=torch.float32,
                             return_boxes=True)
    fb, starts = next(iter(f))
    assert fb.dtype == torch.float32
    assert_same(fb[1].numpy(), _crop(data, starts[1].numpy(), (3, 10, 11)).astype(np.float32))
    assert torch.equal(f.read(0)[0], fb)  # read(b): the same batch as the iteration gives
    with pytest.raises(ValueError):
        zt.RandomCropDataset(path, (3, 41, 11), batch_size=2)
    with pytest.raises(ValueError):
        zt.RandomCropDataset(path, (1, 1, 1, 1), batch_size=2)
    with pytest.raises(ValueError):
        zt.RandomCropDataset(path, (3, 3), batch_size=2, device="cuda", pinned=True)
    with pytest.raises(zgpu.NotFoundError):
        zt.RandomCropDataset(os.path.join(path, "nothing"), (3, 3), batch_size=2)


def test_array_source_lazy_open_and_pickle(torch, zt, vol):
    path, data = vol
    a = zgpu.open_array(path)
    before = torch.cuda.is_initialized()  # (an earlier test of this process may have initialised it)
    ds = zt.RandomCropDataset(a, (4, 4), batch_size=3, n_batches=2, seed=3, device="cuda", return_boxes=True)
    assert torch.cuda.is_initialized() == before  # the constructor leaves CUDA to the reading process
    host = zt.RandomCropDataset(a, (4, 4), batch_size=3, n_batches=2, seed=3, return_boxes=True)
    assert host._array is a  # this process reads through the caller's array
    clone = pickle.loads(pickle.dumps(host))  # (spawned workers get a pickled copy: the path, not the handle)
    assert clone._array is None
    for (b1, s1), (b2, s2) in zip(host, clone):
        assert torch.equal(b1, b2) and torch.equal(s1, s2)
        for i in range(3):
            assert_same(b2[i].numpy(), _crop(data, s2[i].numpy(), (4, 4)))
    assert clone._array is not None and clone._array is not a
    assert "RandomCropDataset" in repr(ds)


def test_sampler_with_read_batch(zt, vol):
    path, data = vol
    a = zgpu.open_array(path)
    s = zt.RandomCropSampler(a.shape, (2, 6, 6), batch_size=4, n_batches=3, seed=9)
    assert s.batch_shape == (4, 2, 6, 6) and len(s) == 3
    for b, sels in enumerate(s):
        got = a.read_batch(sels)
        for i, st in enumerate(s.starts(b)):
            assert_same(got[i], _crop(data, st, (2, 6, 6)))


def test_gpu_pinned(cuda, zt, vol):
    torch = cuda
    path, data = vol
    ds = zt.RandomCropDataset(path, (2, 8, 8), batch_size=3, n_batches=2, seed=4, pinned=True, return_boxes=True)
    for batch, starts in _loader(torch, ds, 0):
        assert batch.is_pinned()
        for i in range(3):
            assert_same(batch[i].numpy(), _crop(data, starts[i].numpy(), (2, 8, 8)))
    f = zt.RandomCropDataset(path, (2, 8, 8), batch_size=3, n_batches=1, seed=4, pinned=True, dtype=torch.float64)
    assert next(iter(f)).is_pinned()


def test_gpu_device_batches(cuda, zt, vol):
    torch = cuda
    path, data = vol
    for dtype in (None, torch.float32):
        ds = zt.RandomCropDataset(path, (3, 9, 9), batch_size=4, n_batches=3, seed=8, device="cuda", dtype=dtype,
                                  return_boxes=True)
        n = 0
        for batch, starts in _loader(torch, ds, 0):
            assert batch.is_cuda and tuple(batch.shape) == (4, 3, 9, 9)
            host = batch.cpu().numpy()
            for i in range(4):
                want = _crop(data, starts[i].numpy(), (3, 9, 9))
                assert_same(host[i], want if dtype is None else want.astype(np.float32))
            n += 1
        assert n == 3
