"""Arrays opened before fork() read and write in the child (multiprocessing's fork start method, PyTorch
DataLoader workers). The child never touches the parent's pool threads, lock or queue (one of the parent's workers
may hold the lock forever there): its first read starts a pool of its own with the configured number of threads,
so it decodes in parallel as the parent does; changing zgpu.config in the child frees the inherited pool without
waiting on the parent's lock or condition variables; a remote array's child opens connections of its own rather
than sending on the parent's sockets. Device reads: a child of a process that used CUDA is refused with a clear
error, while its host reads (host_read_route auto or device) stay on its cores; one of a CUDA-free parent
initialises CUDA itself (those run on a GPU machine only).

Every child runs under an alarm and every wait has a timeout: a hang fails a test instead of blocking the suite."""
from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback
import urllib.request

import numpy as np
import pytest

import zgpu
from zgpu import _capi

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


def test_locks_held_by_parent_threads_at_the_fork(tmp_path):
    """Python-level locks another thread of the parent holds at the fork (an array's lock in a read's brief hold, a
    read in progress counted as a reader, the config's lock) start afresh in the child: its reads, writes and
    zgpu.config.set do not wait for a thread that is not there. Every one of these hung the child before."""
    a = zgpu.create(tmp_path / "h", shape=(32, 32), dtype="int32", chunks=(8, 8), fill_value=0)
    a[...] = np.arange(32 * 32, dtype=np.int32).reshape(32, 32)
    for hold in ("cond", "reader", "config"):
        held, release = threading.Event(), threading.Event()

        def holder():
            lock = {"cond": a._lock._cond, "reader": a._lock.shared(), "config": zgpu.config._lock}[hold]
            with lock:
                held.set()
                release.wait()

        t = threading.Thread(target=holder)
        t.start()
        held.wait()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.alarm(CHILD_TIMEOUT_S)
                ok = int(a[0:8].astype(np.int64).sum()) == sum(range(8 * 32))
                a[0:1, 0:1] = -1  # (an exclusive hold: waits for readers)
                zgpu.config.set(num_threads=2)
                code = 0 if ok and a[0, 0] == -1 else 2
            finally:
                os._exit(code)
        release.set()
        t.join()
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (hold, status)
        assert a[0, 0] == -1  # (the child's write)
        a[0:1, 0:1] = 0
    zgpu.config.set(num_threads=0)


# ---- helpers ----------------------------------------------------------------------------------------------------
CHILD_TIMEOUT_S = 20


def _pool_info(a):
    """(state, size, live workers, indices run by workers) of the pool of a's context as this process sees it
    (zg_test_pool_info, an internal test hook of src/host/pool.c): state 1 = the pool's threads are this
    process's, 0 = an ancestor's (a forked child that has not used it yet)."""
    fn = _capi.lib.zg_test_pool_info
    fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_longlong)]
    fn.restype = ctypes.c_int
    out = (ctypes.c_longlong * 3)()
    state = fn(a._ctx.handle, out)
    return state, out[0], out[1], out[2]


def _parallel_pool(a, read, size, inherited=True):
    """In a child: reads with `read` until the pool's workers have run some of the chunks (they are woken per job,
    and a caller may finish a small job before they wake), then checks every worker thread is running.
    inherited: a's context was made by an ancestor, so its pool is re-created on the first read here."""
    if inherited:
        assert _pool_info(a)[0] == 0, "the child's pool was made before its first use"
    deadline = time.monotonic() + 10
    while True:
        read()
        state, n, live, items = _pool_info(a)
        assert state == 1 and n == size, (state, n)
        if items > 0 and live == size - 1:
            return {"live": live, "items": items}
        assert time.monotonic() < deadline, ("the child's pool never ran in parallel", live, items)


def _in_child(fn, timeout=CHILD_TIMEOUT_S):
    """Runs fn() in a forked child; returns its JSON result, or fails with the child's traceback. A child that
    hangs is killed by SIGALRM (and so is the test's wait)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            signal.alarm(timeout)
            try:
                msg = json.dumps({"ok": fn()})
                code = 0
            except BaseException:
                msg = json.dumps({"error": traceback.format_exc()})
            os.write(w, msg.encode())
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert not os.WIFSIGNALED(status), "the child died of signal %d (SIGALRM: it hung)" % os.WTERMSIG(status)
    res = json.loads(data.decode() or "{}")
    assert "error" not in res, res.get("error")
    assert os.WEXITSTATUS(status) == 0 and "ok" in res, (status, res)
    return res["ok"]


def _array(path, shape=(64, 64), chunks=(8, 8), dtype=np.int32):
    data = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    with zgpu.create(path, shape=data.shape, dtype=data.dtype, chunks=chunks, compressors="zstd") as w:
        w[...] = data
    return data


@pytest.fixture
def four_threads():
    zgpu.config.set(num_threads=4)
    yield
    zgpu.config.set(num_threads=0)


# ---- the pool in a forked child -----------------------------------------------------------------------------------
def test_forked_child_reads_in_parallel(tmp_path, four_threads):
    data = _array(tmp_path / "a")
    a = zgpu.open_array(tmp_path / "a")
    np.testing.assert_array_equal(a[...], data)
    assert _pool_info(a)[:2] == (1, 4)

    def child():
        def read():
            np.testing.assert_array_equal(a[...], data)
        res = _parallel_pool(a, read, 4)
        # a grandchild (forked from a child with a pool of its own) makes its own again
        res["grandchild"] = _in_child(lambda: _parallel_pool(a, read, 4), timeout=CHILD_TIMEOUT_S - 5)
        return res

    res = _in_child(child)
    assert res["live"] == 3 and res["items"] > 0 and res["grandchild"]["live"] == 3
    np.testing.assert_array_equal(a[...], data)  # the parent's pool is as it was
    assert _pool_info(a)[:2] == (1, 4)


def test_config_change_in_forked_child(tmp_path, four_threads):
    """zgpu.set_threads(1) in a DataLoader worker used to hang forever: dropping the context destroyed the inherited
    pool, whose condition variable the parent's idle workers wait on (glibc's pthread_cond_destroy waits for them)."""
    data = _array(tmp_path / "a")
    a = zgpu.open_array(tmp_path / "a")
    np.testing.assert_array_equal(a[...], data)
    del a
    gc.collect()  # the config's context now holds the pool alone: the child's config change frees it

    def child():
        zgpu.set_threads(1)
        gc.collect()
        one = zgpu.open_array(tmp_path / "a")
        np.testing.assert_array_equal(one[...], data)
        assert _pool_info(one)[:2] == (1, 1)
        zgpu.config.set(num_threads=3)  # and back to several threads, freeing the child's own one-thread pool
        del one
        gc.collect()
        b = zgpu.open_array(tmp_path / "a")

        def read():
            np.testing.assert_array_equal(b[...], data)
        res = _parallel_pool(b, read, 3, inherited=False)
        zgpu.config.set(num_threads=0)
        del b
        gc.collect()  # the child's own pool: its workers stop and are joined
        return res

    assert _in_child(child)["live"] == 2
    np.testing.assert_array_equal(zgpu.open_array(tmp_path / "a")[...], data)


def test_fork_while_reading_then_parallel_child(tmp_path, eight_threads):
    """Forks while another thread reads with the pool's 8 threads (its lock taken and released all the time): each
    child reads correctly on a pool of its own with its 7 workers running."""
    data = _array(tmp_path / "a", shape=(96, 96))
    a = zgpu.open_array(tmp_path / "a")

    def child():
        def read():
            np.testing.assert_array_equal(a[...], data)
        return _parallel_pool(a, read, 8)

    with _busy_pool(a):
        for _ in range(4):
            assert _in_child(child)["live"] == 7
    assert _pool_info(a)[:2] == (1, 8)


def _fork_pool_crop(i):
    lo = 8 * i
    state_before = _pool_info(_ARRAY)[0]
    crop = _ARRAY[lo:lo + 8, 4:60]
    state, size, _, _ = _pool_info(_ARRAY)
    return int(crop.astype(np.int64).sum()), state_before, state, size, os.getpid()


def test_multiprocessing_fork_pool_parallel(tmp_path, four_threads):
    """What a DataLoader's fork workers do, without PyTorch: a multiprocessing fork Pool whose workers read crops of
    an array the parent opened (and read) before starting them; each worker's pool is its own, full size."""
    global _ARRAY
    data = _array(tmp_path / "a")
    a = _ARRAY = zgpu.open_array(tmp_path / "a")
    a[...]
    want = [int(data[8 * i:8 * i + 8, 4:60].astype(np.int64).sum()) for i in range(8)]
    with mp.get_context("fork").Pool(2) as pool:
        res = pool.map_async(_fork_pool_crop, range(8)).get(timeout=CHILD_TIMEOUT_S)
    assert [r[0] for r in res] == want
    assert all(r[2] == 1 and r[3] == 4 for r in res), res
    first = {}  # per worker: the pool state its first read found (0: inherited, made anew by that read)
    for r in res:
        first[r[4]] = min(first.get(r[4], 1), r[1])
    assert os.getpid() not in first and set(first.values()) == {0}, res


# ---- remote arrays: connections of the child's own -------------------------------------------------------------
_HERE = os.path.dirname(os.path.abspath(__file__))
_HTTP_SERVER = os.path.join(_HERE, "..", "..", "tests", "remote", "http_server.py")


@pytest.fixture
def http_root(tmp_path):
    """tests/remote/http_server.py over tmp_path in a process of its own (so that this process's sockets are
    zgpu's alone); yields its base URL."""
    proc = subprocess.Popen([sys.executable, _HTTP_SERVER, "--root", str(tmp_path), "--port", "0"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield "http://127.0.0.1:%d" % int(line.split()[1])
    finally:
        proc.stdin.close()  # the server exits when its stdin closes
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _stats(base, reset=False):
    req = urllib.request.Request(base + "/__stats__", method="DELETE" if reset else "GET")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


def _socket_inodes():
    """This process's TCP sockets ("socket:[inode]"): its connections. (Not every socket: the wake-up socket pair of
    each libcurl multi handle kept for the next batch connects nothing; a child leaves its copies alone.)"""
    tcp = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                tcp.update(line.split()[9] for line in list(f)[1:])
        except OSError:
            pass
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            t = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if t.startswith("socket:[") and t[len("socket:["):-1] in tcp:
            out.add(t)
    return out


@pytest.mark.skipif(not os.path.exists(_HTTP_SERVER), reason="tests/remote/http_server.py not found")
def test_remote_array_in_forked_children(tmp_path, http_root, four_threads):
    """A remote array opened (and read) in the parent reads in three children at once: each child's requests
    arrive on connections of its own (the server counts them), never on the parent's kept-alive sockets, which each
    child closes its copies of; the parent still reads afterwards."""
    zgpu.config.set(request_timeout_ms=10000, connect_timeout_ms=5000)
    try:
        data = _array(tmp_path / "a", shape=(64, 64), chunks=(16, 16))
        before_parent = _socket_inodes()
        a = zgpu.open_array(http_root + "/a")
        np.testing.assert_array_equal(a[...], data)
        parent_sockets = _socket_inodes() - before_parent
        assert parent_sockets, "the parent kept no connection open"
        _stats(http_root, reset=True)

        def child():
            for _ in range(3):
                np.testing.assert_array_equal(a[...], data)
            still = parent_sockets & _socket_inodes()
            return {"parent_sockets_open": len(still)}

        results, errors = [], []

        def run():
            try:
                results.append(_in_child(child))
            except BaseException as e:  # noqa: B036 (reported below, with the others)
                errors.append(str(e))
        threads = [threading.Thread(target=run) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(CHILD_TIMEOUT_S + 5)
        assert not errors and len(results) == 3, errors or "a child hung"
        assert all(r["parent_sockets_open"] == 0 for r in results), results
        st = _stats(http_root)
        # each child: at least one connection of its own (+1: the stats request's); 16 chunks x 3 reads each
        assert st["connections"] >= 3 + 1 and st["GET"] >= 3 * 3 * 16, st
        np.testing.assert_array_equal(a[...], data)  # the parent's connections, untouched by the children
    finally:
        zgpu.config.set(request_timeout_ms=None, connect_timeout_ms=None)


# ---- PyTorch DataLoader ---------------------------------------------------------------------------------------------
def test_torch_dataloader_fork_workers(tmp_path, four_threads):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (the fork Pool test covers the same path)")
    from torch.utils.data import DataLoader, Dataset

    data = _array(tmp_path / "a", shape=(64, 64), dtype=np.float32)
    a = zgpu.open_array(tmp_path / "a")
    a[...]  # the parent's pool has its threads running when the workers fork

    class Crops(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            r, c = divmod(i, 4)
            crop = a[16 * r:16 * r + 16, 16 * c:16 * c + 12]
            state, size, _, _ = _pool_info(a)
            return torch.from_numpy(crop), torch.tensor([state, size])

    loader = DataLoader(Crops(), batch_size=4, num_workers=2, multiprocessing_context="fork",
                        timeout=CHILD_TIMEOUT_S)
    got = []
    for crops, info in loader:
        assert (info[:, 0] == 1).all() and (info[:, 1] == 4).all(), info
        got.append(crops.numpy())
    want = [data[16 * r:16 * r + 16, 16 * c:16 * c + 12] for r in range(4) for c in range(4)]
    np.testing.assert_array_equal(np.concatenate(got), np.stack(want))


# ---- device reads after fork (GPU machine) ------------------------------------------------------------------------
_GPU_SCRIPT = textwrap.dedent(r"""
    import json, os, signal, sys
    import numpy as np
    import zgpu

    def child(fn):
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)
            code = 3
            try:
                code = fn()
            except BaseException as e:
                print("child: unexpected %s: %s" % (type(e).__name__, e), flush=True)
            os._exit(code)
        _, st = os.waitpid(pid, 0)
        return os.WEXITSTATUS(st) if os.WIFEXITED(st) else -os.WTERMSIG(st)

    mode, path = sys.argv[1], sys.argv[2]
    a = zgpu.open_array(path)
    data = a[...]
    if mode == "parent_cuda":
        np.testing.assert_array_equal(a.read(device="cuda").get(), data)   # CUDA initialised here

        def refused():
            try:
                a.read(device="cuda")
            except zgpu.CudaError as e:
                msg = str(e)
                ok = "fork()" in msg and "spawn" in msg and "forkserver" in msg
                print("child: refused: %s" % msg, flush=True)
                np.testing.assert_array_equal(a[...], data)  # host reads still work
                # (host_read_route: neither "auto" above, the context's GPU being up, nor "device" touches CUDA here)
                zgpu.config.set(host_read_route="device")
                b = zgpu.open_array(path)
                np.testing.assert_array_equal(b[...], data)
                return 0 if ok and b.last_read_stats["route"] == 0 else 4
            return 5
        rc = child(refused)
    else:
        def device_read():
            np.testing.assert_array_equal(a.read(device="cuda").get(), data)   # CUDA initialised in the child
            # and the child's own child is refused, the child having initialised CUDA
            return child(lambda: 0 if _refused(a) else 6)

        def _refused(arr):
            try:
                arr.read(device="cuda")
            except zgpu.CudaError as e:
                return "fork()" in str(e)
            return False
        rc = child(device_read)
        np.testing.assert_array_equal(a[...], data)
    print("RC %d" % rc, flush=True)
""")


_GPU = []


def _gpu_in_subprocess():
    """zgpu.gpu_available() asked in a process of its own (once): asking here would initialise CUDA in this
    process."""
    if not _GPU:
        r = subprocess.run([sys.executable, "-c", "import zgpu; print(zgpu.gpu_available())"], capture_output=True,
                           text=True, timeout=60)
        _GPU.append(r.stdout.strip() == "True")
    return _GPU[0]


@pytest.mark.parametrize("mode", ["parent_cuda", "parent_cuda_free"])
def test_device_read_after_fork(tmp_path, mode):
    if not _gpu_in_subprocess():
        pytest.skip("skipped: no GPU")
    _array(tmp_path / "a", shape=(64, 64), dtype=np.float32)
    script = tmp_path / "gpu_fork.py"
    script.write_text(_GPU_SCRIPT)
    r = subprocess.run([sys.executable, str(script), mode, str(tmp_path / "a")], capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0 and "RC 0" in r.stdout, (r.returncode, r.stdout, r.stderr)
