"""zgpu.iter_slabs: slabs along an axis with the next ones read in the background.

Every slab's values against the array's; ragged last slabs; other axes; chunk-aligned slabs (size=None); how many
slabs are in flight for prefetch 0, 1 and 3; the ring buffers' lifetime contract; an error of a background read
raised at the next() of its slab, unchanged; stopping early (break, close(), with, garbage collection) joins the
background thread. The device variants need a GPU (skipped with "skipped: no GPU" elsewhere).

Each test runs under an alarm: a hang fails it instead of blocking the suite."""
from __future__ import annotations

import gc
import os
import threading
import time

import numpy as np
import pytest

import zgpu
from zg_helpers import NO_GPU, assert_same, gpu_available, hang_guard, make_data

TIMEOUT_S = 30


HAVE_GPU = gpu_available()
requires_gpu = pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU)


@pytest.fixture(autouse=True)
def alarm():
    yield from hang_guard(TIMEOUT_S, "test_prefetch")


SHAPE = (53, 30, 7)
CHUNKS = (8, 7, 7)


@pytest.fixture(scope="module")
def arr(tmp_path_factory):
    path = tmp_path_factory.mktemp("prefetch") / "a.zarr"
    data = make_data(SHAPE, "int32", seed=3)
    with zgpu.create(path, shape=SHAPE, dtype="int32", chunks=CHUNKS, compressors="zstd") as w:
        w[...] = data
    return zgpu.open_array(path), data


def _sl(axis, lo, hi, ndim=3):
    return (slice(None),) * axis + (slice(lo, hi),) + (slice(None),) * (ndim - axis - 1)


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name.startswith("zgpu-prefetch")]


def _threads_settle(baseline, timeout=5.0):
    """threading.active_count() once no prefetch thread is left (checked): back to `baseline`, or below it where
    another test's Timer thread ended meanwhile."""
    t_end = time.monotonic() + timeout
    while _prefetch_threads() and time.monotonic() < t_end:
        time.sleep(0.01)
    assert not _prefetch_threads(), _prefetch_threads()
    return threading.active_count()


# ---- values ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("prefetch", [0, 1, 3])
@pytest.mark.parametrize("axis,size", [(0, 10), (0, 8), (1, 4), (2, 3), (-1, 7), (0, 100)])
def test_slab_values(arr, axis, size, prefetch):
    a, data = arr
    it = zgpu.iter_slabs(a, axis=axis, size=size, prefetch=prefetch)
    n = data.shape[axis]
    assert it.bounds == [(lo, min(lo + size, n)) for lo in range(0, n, size)]
    assert len(it) == -(-n // size)
    got = []
    for k, slab in enumerate(it):
        lo, hi = it.bounds[k]
        assert isinstance(slab, np.ndarray) and slab.flags.c_contiguous
        assert_same(slab, data[_sl(axis % 3, lo, hi)])
        got.append(k)
    assert got == list(range(len(it)))
    with pytest.raises(StopIteration):
        next(it)


def test_ragged_last_slab(arr):
    a, data = arr
    slabs = list(zgpu.iter_slabs(a, size=10, copy=True))
    assert [s.shape[0] for s in slabs] == [10, 10, 10, 10, 10, 3]
    assert_same(np.concatenate(slabs), data)


def test_size_none_is_one_row_of_chunks(arr, tmp_path):
    a, data = arr
    it = zgpu.iter_slabs(a)
    assert it.size == CHUNKS[0]
    assert it.bounds[-1] == (48, 53)
    assert all(lo % CHUNKS[0] == 0 for lo, _ in it.bounds)
    assert_same(np.concatenate(list(zgpu.iter_slabs(a, copy=True))), data)
    it1 = zgpu.iter_slabs(a, axis=1, copy=True)
    assert it1.size == CHUNKS[1]
    assert_same(np.concatenate(list(it1), axis=1), data)
    # sharded: one row of shards
    s = zgpu.create(tmp_path / "s", shape=(40, 12), dtype="uint16", chunks=(5, 4), shards=(10, 12))
    d = make_data((40, 12), "uint16", seed=4)
    s[...] = d
    it = zgpu.iter_slabs(s)
    assert it.size == 10 and len(it) == 4
    assert_same(np.concatenate(list(zgpu.iter_slabs(s, copy=True))), d)


def test_empty_and_bad_arguments(arr, tmp_path):
    a, _ = arr
    e = zgpu.create(tmp_path / "e", shape=(0, 5), dtype="f4", chunks=(4, 5))
    assert list(zgpu.iter_slabs(e)) == []
    z = zgpu.create(tmp_path / "z", shape=(9, 0), dtype="f4", chunks=(4, 1))
    assert [s.shape for s in zgpu.iter_slabs(z, copy=True)] == [(4, 0), (4, 0), (1, 0)]
    with pytest.raises(ValueError):
        zgpu.iter_slabs(a, axis=3)
    with pytest.raises(ValueError):
        zgpu.iter_slabs(a, size=0)
    with pytest.raises(ValueError):
        zgpu.iter_slabs(a, prefetch=-1)
    with pytest.raises(TypeError):
        zgpu.iter_slabs(np.zeros(4))


# ---- in flight and lifetime -------------------------------------------------------------------------
class _Watched:
    """An Array whose reads are recorded (the start of each slab read) and can be held back by a gate."""

    def __init__(self, a):
        self._a = a
        self.started = []
        self.finished = []
        self.cond = threading.Condition()
        self.gate = threading.Event()
        self.gate.set()
        self.free = set()  # slab starts whose reads pass the gate even while it is closed

    def __getattr__(self, name):
        return getattr(self._a, name)

    def read(self, sel, **kw):
        with self.cond:
            self.started.append(sel[0].start)
            self.cond.notify_all()
        if sel[0].start not in self.free:
            assert self.gate.wait(TIMEOUT_S / 3)
        try:
            return self._a.read(sel, **kw)
        finally:
            with self.cond:
                self.finished.append(sel[0].start)
                self.cond.notify_all()

    def wait_started(self, n, timeout=5.0):
        with self.cond:
            return self.cond.wait_for(lambda: len(self.started) >= n, timeout)

    def wait_finished(self, n, timeout=5.0):
        with self.cond:
            return self.cond.wait_for(lambda: len(self.finished) >= n, timeout)


@pytest.mark.parametrize("prefetch", [0, 1, 3])
def test_prefetch_depth(arr, prefetch):
    a, data = arr
    w = _Watched(a)
    it = zgpu.iter_slabs(w, size=5, prefetch=prefetch)  # 11 slabs
    assert w.started == []  # nothing is read before the first next()
    s0 = next(it)
    assert_same(s0, data[0:5])
    # slabs 1..prefetch are read (or being read) in the background, none further
    assert w.wait_started(1 + prefetch)
    time.sleep(0.05)
    assert w.started == [5 * k for k in range(1 + prefetch)]
    for k in range(1, 4):
        s = next(it)
        assert_same(s, data[5 * k:5 * k + 5])
        assert w.wait_started(1 + k + prefetch)
        time.sleep(0.02)
        assert len(w.started) == 1 + k + prefetch
    it.close()


def test_background_reads_overlap_the_consumer(arr):
    a, data = arr
    w = _Watched(a)
    it = zgpu.iter_slabs(w, size=5, prefetch=2)
    next(it)
    assert w.wait_finished(3)  # while the caller holds slab 0, slabs 1 and 2 are read
    w.gate.clear()  # reads from now on block until the gate opens
    assert_same(next(it), data[5:10])  # already there: no read waited for
    assert_same(next(it), data[10:15])
    threading.Timer(0.2, w.gate.set).start()
    t0 = time.monotonic()
    assert_same(next(it), data[15:20])  # slab 3 was held back: this next() waited for it
    assert time.monotonic() - t0 > 0.1
    rest = list(it)
    assert_same(rest[-1], data[50:53])


def test_ring_buffers_contract(arr):
    a, data = arr
    prefetch = 1
    it = zgpu.iter_slabs(a, size=4, prefetch=prefetch)  # ring of prefetch + 2 = 3 buffers
    slabs = []
    for k, s in enumerate(it):
        slabs.append(s)
        # the slab returned and the one before it are intact
        assert_same(s, data[4 * k:4 * k + 4])
        if k >= 1:
            assert_same(slabs[k - 1], data[4 * (k - 1):4 * k])
        # slab k's buffer is slab k + prefetch + 2's
        if k >= prefetch + 2:
            assert np.shares_memory(s, slabs[k - prefetch - 2])
        for j in range(max(0, k - prefetch - 1), k):
            assert not np.shares_memory(s, slabs[j])
    # copy=True: every slab its own array, all still valid at the end
    kept = list(zgpu.iter_slabs(a, size=4, prefetch=prefetch, copy=True))
    assert_same(np.concatenate(kept), data)
    assert not any(np.shares_memory(kept[i], kept[j]) for i in range(len(kept)) for j in range(i))


# ---- errors ----------------------------------------------------------------------------------------
def _corrupt_copy(tmp_path):
    data = make_data((40, 6), "float64", seed=5)
    path = tmp_path / "c.zarr"
    with zgpu.create(path, shape=data.shape, dtype=data.dtype, chunks=(5, 6), compressors="zstd") as w:
        w[...] = data
    a = zgpu.open_array(path)
    chunk = path / "c" / "3" / "0"  # rows 15..20: slab 3 of size 5
    assert chunk.is_file()
    return a, data, chunk


@pytest.mark.parametrize("prefetch", [0, 2, 5])
def test_background_error_surfaces_at_its_slab(tmp_path, prefetch):
    a, data, chunk = _corrupt_copy(tmp_path)
    chunk.write_bytes(b"\x28\xb5\x2f\xfd this is no zstd frame" * 3)  # damaged after the array was opened
    with pytest.raises(zgpu.CorruptDataError) as direct:
        a[15:20]
    w = _Watched(a)
    it = zgpu.iter_slabs(w, size=5, prefetch=prefetch)
    got = [next(it).copy()]
    if prefetch >= 3:
        assert w.wait_finished(1 + prefetch)  # slab 3's read has failed in the background already ...
    got += [next(it).copy(), next(it).copy()]  # ... yet slabs 1 and 2 come out
    with pytest.raises(zgpu.ZgpuError) as raised:  # and the error is raised by the next() of slab 3
        next(it)
    assert_same(np.concatenate(got), data[0:15])
    # the read's own error: class and message
    assert type(raised.value) is type(direct.value)
    assert str(raised.value) == str(direct.value)
    assert "c/3/0" in str(raised.value)
    with pytest.raises(StopIteration):  # closed by the error
        next(it)


def test_missing_chunk_file_reads_fill_value_not_error(tmp_path):
    a, data, chunk = _corrupt_copy(tmp_path)
    it = zgpu.iter_slabs(a, size=5, prefetch=2, copy=True)
    first = next(it)
    os.unlink(chunk)  # a missing chunk is the fill value, as for any read
    rest = list(it)
    want = data.copy()
    want[15:20] = 0
    assert_same(np.concatenate([first] + rest), want)


# ---- stopping early ----------------------------------------------------------------------------------
def test_break_joins_the_thread(arr):
    a, data = arr
    baseline = threading.active_count()
    for k, _ in enumerate(zgpu.iter_slabs(a, size=2, prefetch=3)):
        if k == 2:
            assert len(_prefetch_threads()) == 1
            break
    assert not _prefetch_threads()  # the iterator was dropped at the break: joined at once
    assert _threads_settle(baseline) <= baseline


def test_close_and_with_join_the_thread(arr):
    a, _ = arr
    baseline = threading.active_count()
    it = zgpu.iter_slabs(a, size=2, prefetch=3)
    next(it)
    it.close()
    assert not _prefetch_threads()
    assert _threads_settle(baseline) <= baseline
    with pytest.raises(StopIteration):
        next(it)
    it.close()  # twice is fine
    with zgpu.iter_slabs(a, size=2, prefetch=2) as it:
        next(it)
        next(it)
    assert not _prefetch_threads()
    # exhausted: the thread is gone once StopIteration is raised
    it = zgpu.iter_slabs(a, size=20, prefetch=2)
    list(it)
    assert not _prefetch_threads()
    assert _threads_settle(baseline) <= baseline


def test_garbage_collection_joins_the_thread(arr):
    a, _ = arr
    baseline = threading.active_count()
    it = zgpu.iter_slabs(a, size=2, prefetch=3)
    next(it)
    cycle = [it]
    cycle.append(cycle)  # only the cycle collector frees it
    del it, cycle
    gc.collect()
    assert _threads_settle(baseline) <= baseline


def test_close_while_reads_are_held_back(arr):
    a, _ = arr
    baseline = threading.active_count()
    w = _Watched(a)
    # only the first read passes: the second is held at the gate (closing it after next() raced with the
    # background thread, which could run on past it under load), the three after it stay queued
    w.free = {0}
    w.gate.clear()
    it = zgpu.iter_slabs(w, size=2, prefetch=4)
    next(it)
    assert w.wait_started(2)
    pool = it._pool

    def open_once_cancelled():
        # the gate opens (the read under way finishes) only once close() has cancelled the queued reads: the
        # executor's shutdown marks it shut down and cancels its queue under its lock (a timer here failed under
        # load: close() had not got that far when it fired)
        deadline = time.monotonic() + TIMEOUT_S
        while not pool._shutdown and time.monotonic() < deadline:
            time.sleep(0.001)
        with pool._shutdown_lock:
            w.gate.set()

    opener = threading.Thread(target=open_once_cancelled)
    opener.start()
    it.close()
    opener.join()
    assert w.started == [0, 2]  # the queued reads of slabs 4, 6 and 8 never started
    assert _threads_settle(baseline) <= baseline


def test_consumer_exception_joins_the_thread(arr):
    a, _ = arr
    baseline = threading.active_count()
    with pytest.raises(KeyError):
        for k, _ in enumerate(zgpu.iter_slabs(a, size=3, prefetch=2)):
            if k == 1:
                raise KeyError("consumer")
    gc.collect()  # (the traceback held the frame, and the frame the iterator)
    assert _threads_settle(baseline) <= baseline


# ---- the device ring's ordering, against a fake CUDA runtime (runs without a GPU) -------------------------
class _FakeRuntime:
    """The cudart calls _prefetch makes, logged: ("record", event, stream) and ("wait", stream, event)."""

    def __init__(self):
        self.log = []
        self.lock = threading.Lock()
        self.handles = iter(range(100, 10 ** 6))
        self.live = set()
        rt = self

        def create(pp, flags):
            h = next(rt.handles)
            pp._obj.value = h
            rt.live.add(h)
            return 0

        def destroy(h):
            rt.live.discard(h.value)
            return 0

        def record(e, st):
            with rt.lock:
                rt.log.append(("record", e.value, st.value or 0))
            return 0

        def wait(st, e, flags):
            with rt.lock:
                rt.log.append(("wait", st.value or 0, e.value))
            return 0

        def get_device(p):
            p._obj.value = 0
            return 0

        self.cudaStreamCreateWithFlags = create
        self.cudaEventCreateWithFlags = create
        self.cudaStreamDestroy = destroy
        self.cudaEventDestroy = destroy
        self.cudaEventRecord = record
        self.cudaStreamWaitEvent = wait
        self.cudaGetDevice = get_device
        self.cudaSetDevice = lambda d: 0
        self.cudaGetErrorString = lambda e: b"fake"

    def mark(self, what):
        with self.lock:
            self.log.append(("mark", what))


class _FakeDeviceArray:
    """An Array whose (device) reads are only logged: ("read", first row, destination pointer, stream)."""

    def __init__(self, a, rt):
        self._a, self._rt = a, rt

    def __getattr__(self, name):
        return getattr(self._a, name)

    def read(self, sel, device=None, out=None, stream=None):
        assert device == 0 and isinstance(out, zgpu.DeviceArray)
        with self._rt.lock:
            self._rt.log.append(("read", sel[0].start, out.ptr, stream))
        return out


@pytest.mark.parametrize("prefetch", [0, 1, 2])
def test_device_ring_ordering_with_a_fake_runtime(arr, monkeypatch, prefetch):
    from zgpu import _cuda, _prefetch

    a, _ = arr
    rt = _FakeRuntime()
    ptrs = iter(range(1 << 20, 1 << 40, 1 << 20))

    class Mem:
        def __init__(self, nbytes, device):
            self.ptr, self.nbytes = next(ptrs), nbytes

    monkeypatch.setattr(_cuda, "cudart", lambda: rt)
    monkeypatch.setattr(_cuda, "claim", lambda: None, raising=False)
    monkeypatch.setattr(_cuda, "alloc", Mem)
    monkeypatch.setattr(_prefetch, "_bound", None)
    consumer = 77
    slots = prefetch + 2
    it = zgpu.iter_slabs(_FakeDeviceArray(a, rt), size=5, device="cuda", prefetch=prefetch, stream=consumer)
    n = len(it)  # 11 slabs
    slabs = []
    for k in range(n):
        rt.mark(("next", k))
        slabs.append(next(it))
        rt.mark(("got", k))
    with pytest.raises(StopIteration):
        next(it)
    assert not rt.live  # streams and events destroyed at the end

    log = rt.log
    reads = {e[1] // 5: e for e in log if e[0] == "read"}
    assert sorted(reads) == list(range(n))
    streams = {k: reads[k][3] for k in range(n)}
    bufs = {k: reads[k][2] for k in range(n)}
    for k in range(n):
        assert slabs[k].ptr == bufs[k] and slabs[k].shape == (min(5, 53 - 5 * k), 30, 7)
        assert streams[k] == streams[k % slots] and bufs[k] == bufs[k % slots]  # a ring of prefetch + 2 slots
    assert len(set(streams[k] for k in range(slots))) == slots  # a side stream per slot, not the caller's
    assert len(set(bufs[k] for k in range(slots))) == slots
    assert consumer not in streams.values()

    def pos(entry):
        return log.index(entry)  # (marks and reads are unique)

    def first(pred, after):
        return next(i for i in range(after + 1, len(log)) if pred(log[i]))

    for k in range(n):
        slot_stream = streams[k]
        read_at = pos(reads[k])
        # after its read, the slab's ready event is recorded on its stream, and the caller's stream waits for it
        # within the next() that returns it
        rec = first(lambda e: e[0] == "record" and e[2] == slot_stream, read_at)
        waited = first(lambda e: e == ("wait", consumer, log[rec][1]), rec)
        assert pos(("mark", ("next", k))) < waited < pos(("mark", ("got", k)))
        # the read into a reused buffer waits for the caller's stream as it was when slab k - prefetch was asked
        # for (the caller was then done with slab k - slots, two slabs back): the release is recorded on the
        # caller's stream and the slot's stream waits on it, within that next(), before the read
        waits_before_read = [i for i in range(read_at) if log[i][0] == "wait" and log[i][1] == slot_stream
                             and i > pos(("mark", ("next", max(0, k - prefetch))))]
        if k >= slots:
            asked, got = pos(("mark", ("next", k - prefetch))), pos(("mark", ("got", k - prefetch)))
            rel = first(lambda e: e[0] == "record" and e[2] == consumer, asked)
            assert rel < got
            assert len(waits_before_read) == 1 and rel < waits_before_read[0] < got
            assert log[waits_before_read[0]][2] == log[rel][1]
            assert rel > pos(("mark", ("got", k - slots + 1)))  # slab k - slots + 1 (one back) was still in use
        else:
            assert not waits_before_read  # a fresh buffer: nothing to wait for
    # copy=True: a new buffer for every slab, so no read waits for the caller
    rt.log.clear()
    kept = list(zgpu.iter_slabs(_FakeDeviceArray(a, rt), size=5, device="cuda", prefetch=prefetch, stream=consumer,
                                copy=True))
    assert len({s.ptr for s in kept}) == n
    assert not [e for e in rt.log if e[0] == "wait" and e[1] != consumer]
    assert len([e for e in rt.log if e[0] == "wait" and e[1] == consumer]) == n
    assert not rt.live


# ---- device ------------------------------------------------------------------------------------------
@requires_gpu
@pytest.mark.parametrize("prefetch", [0, 2])
@pytest.mark.parametrize("axis,size", [(0, 10), (1, None), (2, 3)])
def test_gpu_slab_values(arr, axis, size, prefetch):
    a, data = arr
    it = zgpu.iter_slabs(a, axis=axis, size=size, device="cuda", prefetch=prefetch)
    prev = None
    for k, slab in enumerate(it):
        lo, hi = it.bounds[k]
        assert isinstance(slab, zgpu.DeviceArray) and slab.is_c_contiguous
        assert_same(slab.get(), data[_sl(axis, lo, hi)])
        if prev is not None:  # the slab before is still intact
            assert_same(prev[1].get(), data[_sl(axis, *it.bounds[prev[0]])])
        prev = (k, slab)
    kept = list(zgpu.iter_slabs(a, axis=axis, size=size, device="cuda", prefetch=prefetch, copy=True))
    assert_same(np.concatenate([s.get() for s in kept], axis=axis), data)


@requires_gpu
def test_gpu_consumer_stream_ordering(arr):
    torch = pytest.importorskip("torch", reason="skipped: no GPU (PyTorch is not installed)")
    if not torch.cuda.is_available():
        pytest.skip("skipped: no GPU (torch.cuda is not available)")
    a, data = arr
    s = torch.cuda.Stream()
    total = torch.zeros((), dtype=torch.int64, device="cuda")
    with torch.cuda.stream(s):
        for slab in zgpu.iter_slabs(a, size=3, device="cuda", prefetch=2, stream=s):
            t = torch.from_dlpack(slab)
            for _ in range(20):  # keep the stream busy so that reads of reused buffers must wait for it
                total += t.to(torch.int64).sum() - t.to(torch.int64).sum()
            total += t.to(torch.int64).sum()
    s.synchronize()
    assert int(total) == int(data.astype(np.int64).sum())


@requires_gpu
def test_gpu_error_and_break(tmp_path):
    a, data, chunk = _corrupt_copy(tmp_path)
    baseline = threading.active_count()
    chunk.write_bytes(b"\x28\xb5\x2f\xfd this is no zstd frame" * 3)
    it = zgpu.iter_slabs(a, size=5, device="cuda", prefetch=2)
    for k in range(3):
        assert_same(next(it).get(), data[5 * k:5 * k + 5])
    with pytest.raises(zgpu.ZgpuError, match="c/3/0"):
        next(it)
    assert _threads_settle(baseline) <= baseline
    for k, _ in enumerate(zgpu.iter_slabs(a, size=2, device="cuda", prefetch=3)):
        if k == 1:
            break
    assert _threads_settle(baseline) <= baseline
