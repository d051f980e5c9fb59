"""Arrays opened before fork() read and write in the child (multiprocessing's fork start method, PyTorch
DataLoader workers): the child runs the pool's jobs on its own thread instead of waiting for workers it lacks,
or for the pool's lock that one of them held at the fork. Before the pool knew, these tests hung."""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading

import numpy as np
import pytest

import zgpu

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="fork() is Linux-only here")

_ARRAY = None  # the parent's array, inherited by the forked workers (an Array does not pickle)


def _child_sum(rows):
    lo, hi = rows
    return int(_ARRAY[lo:hi].astype(np.int64).sum())


@contextlib.contextmanager
def _busy_pool(a):
    """Another thread keeps reading `a` with 8 pool threads, so the pool's workers are waking (and holding its
    lock now and then) at the forks, as in a training loop that reads while its DataLoader starts workers."""
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            a[...]

    t = threading.Thread(target=churn)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


@pytest.fixture
def eight_threads():
    zgpu.config.set(num_threads=8)
    yield
    zgpu.config.set(num_threads=0)


def test_reads_in_forked_workers(tmp_path, eight_threads):
    global _ARRAY
    data = np.arange(64 * 64, dtype=np.int32).reshape(64, 64)
    with zgpu.create(tmp_path / "a", shape=data.shape, dtype=data.dtype, chunks=(8, 8), compressors="zstd") as w:
        w[...] = data
    a = _ARRAY = zgpu.open_array(tmp_path / "a")
    want = [int(data[i:i + 8].astype(np.int64).sum()) for i in range(0, 64, 8)]
    with _busy_pool(a):
        for _ in range(20):
            with mp.get_context("fork").Pool(4) as pool:
                res = pool.map_async(_child_sum, [(i, i + 8) for i in range(0, 64, 8)])
                assert res.get(timeout=30) == want  # a hang fails here instead of blocking the suite


def test_writes_in_forked_children(tmp_path, eight_threads):
    a = zgpu.create(tmp_path / "w", shape=(32, 32), dtype="float32", chunks=(8, 8), fill_value=0.0)
    a[...] = 1.0
    r = zgpu.open_array(tmp_path / "w")
    with _busy_pool(r):
        for k in range(10):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    signal.alarm(30)
                    a[8:24, 8:24] = 5.0 + k  # partial chunks: read, merge, write, on the child's thread
                    code = 0 if a[8:24, 8:24].min() == 5.0 + k else 2
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (k, status)
    want = np.ones((32, 32), np.float32)
    want[8:24, 8:24] = 14.0
    np.testing.assert_array_equal(zgpu.open_array(tmp_path / "w")[...], want)
