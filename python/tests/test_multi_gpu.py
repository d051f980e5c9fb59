"""Many GPUs (issue 21): device="cuda:N" from any thread (each read sets and restores the caller's device), and
reads spread over several GPUs (devices=[...]). The split itself is tested here without a GPU; the reads skip with
"skipped: no GPU" (or "needs 2 GPUs") elsewhere.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import zgpu
from zgpu._spread import split_box
from zg_helpers import NO_GPU, gpu_available

HAVE_GPU = gpu_available()


def _gpu_count() -> int:
    if not HAVE_GPU:
        return 0
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001
        return 0


N_GPUS = _gpu_count()


@pytest.fixture
def cupy():
    if not HAVE_GPU:
        pytest.skip(NO_GPU)
    return pytest.importorskip("cupy", reason="skipped: no GPU (CuPy is not installed)")


def _covers(start, count, chunks, parts):
    axis, pieces = split_box(start, count, chunks, parts)
    if axis < 0:
        assert pieces == [(0, 0)]
        return axis, pieces
    assert pieces[0][0] == 0 and pieces[-1][1] == count[axis]
    for (a, b), (c, _) in zip(pieces, pieces[1:]):
        assert b == c and a < b
    for lo, _ in pieces[1:]:  # every cut on a chunk boundary
        assert (start[axis] + lo) % chunks[axis] == 0
    return axis, pieces


def test_split_box_whole_chunks_balanced():
    # 64 planes of 10 chunks along axis 0 (3 chunks along 1): cut along axis 0, 5 + 5 chunks
    assert _covers((0, 0), (640, 30), (64, 10), 2) == (0, [(0, 320), (320, 640)])
    # the axis spanning the most chunks is cut (axis 1: 8 chunks against 2)
    axis, pieces = _covers((0, 0, 0), (128, 1024, 64), (64, 128, 64), 3)
    assert axis == 1 and [b - a for a, b in pieces] == [256, 384, 384]
    # an unaligned box: first and last pieces partial chunks, the cuts on chunk boundaries
    axis, pieces = _covers((5, 0), (100, 4), (10, 4), 4)
    assert axis == 0 and pieces == [(0, 15), (15, 45), (45, 75), (75, 100)]
    # more GPUs than chunks: a piece a chunk
    assert _covers((0,), (25,), (10,), 8) == (0, [(0, 10), (10, 20), (20, 25)])


def test_split_box_nothing_to_cut():
    assert split_box((3, 3), (4, 4), (10, 10), 2) == (-1, [(0, 0)])  # one chunk
    assert split_box((0, 0), (0, 50), (10, 10), 2) == (-1, [(0, 0)])  # empty
    assert split_box((0,), (50,), (10,), 1) == (-1, [(0, 0)])         # one GPU
    assert split_box((), (), (), 2) == (-1, [(0, 0)])                 # 0-d


def test_devices_argument_checked(tmp_path):
    a = zgpu.create(str(tmp_path / "a.zarr"), shape=(8,), dtype="u1", chunks=(4,))
    with pytest.raises(ValueError, match="devices must name"):
        a.read(devices=[])
    with pytest.raises(ValueError, match="devices must name"):
        a.read(devices=["cpu"])
    with pytest.raises(ValueError, match="reads into GPU memory"):
        a.read(device="cpu", devices=[0])


def _volume(tmp_path, codec="zstd"):
    rng = np.random.default_rng(7)
    data = (rng.integers(0, 50, (48, 40, 36)) // 7).astype(np.uint16)  # compressible, not constant
    a = zgpu.create(str(tmp_path / ("v_%s.zarr" % codec)), shape=data.shape, dtype=data.dtype, chunks=(8, 16, 12),
                    compressors=None if codec == "none" else codec)
    a[...] = data
    return a, data


def _device_of(cupy, r) -> int:
    """The GPU holding a device array's memory (CuPy's asarray would copy it to the current device)."""
    return cupy.cuda.runtime.pointerGetAttributes(r.__cuda_array_interface__["data"][0]).device


def _host(cupy, r):
    with cupy.cuda.Device(_device_of(cupy, r)):
        return cupy.asnumpy(cupy.asarray(r))


# (that a thread without CUDA keeps none after a device read, and the async and host routes: test_gpu_device_scope.c)


@pytest.mark.skipif(N_GPUS < 2, reason="skipped: needs 2 GPUs")
def test_gpu_any_thread_any_device(cupy, tmp_path):
    """Threads read into cuda:0 and cuda:1 in turn; each result lives on the device asked for, and each thread's
    current device is what it set before the read."""
    a, data = _volume(tmp_path)
    errors = []

    def worker(k):
        try:
            cupy.cuda.runtime.setDevice(k % 2)
            for i in range(6):
                dev = (k + i) % 2
                r = a.read((slice(i, i + 30),), device="cuda:%d" % dev)
                assert cupy.cuda.runtime.getDevice() == k % 2
                assert _device_of(cupy, r) == dev
                np.testing.assert_array_equal(_host(cupy, r), data[i:i + 30])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


@pytest.mark.skipif(N_GPUS < 2, reason="skipped: needs 2 GPUs")
@pytest.mark.parametrize("codec", ["zstd", "gzip", "none"])
def test_gpu_read_spread_over_two_gpus(cupy, tmp_path, codec):
    a, data = _volume(tmp_path, codec)
    whole = a.read(devices=["cuda:0", "cuda:1"])
    assert _device_of(cupy, whole) == 0
    np.testing.assert_array_equal(_host(cupy, whole), data)
    # onto the second GPU, a reversed and strided selection, with a conversion
    sel = (slice(40, 2, -1), slice(None, None, 3), 5)
    r = a.read(sel, devices=[0, 1], device="cuda:1", dtype="float32", scale=0.5)
    assert _device_of(cupy, r) == 1
    np.testing.assert_array_equal(_host(cupy, r), data[sel].astype(np.float32) * 0.5)
    # into out= on cuda:1, a strided view of a bigger array
    with cupy.cuda.Device(1):
        big = cupy.zeros((48, 40, 72), np.uint16)
    view = big[:, :, ::2]
    a.read(out=view, devices=[1, 0])
    with cupy.cuda.Device(1):
        np.testing.assert_array_equal(cupy.asnumpy(big[:, :, ::2]), data)
        assert not cupy.asnumpy(big[:, :, 1::2]).any()


@pytest.mark.skipif(N_GPUS < 2, reason="skipped: needs 2 GPUs")
def test_gpu_read_spread_reports_errors(cupy, tmp_path):
    """A damaged chunk in the other GPU's part: the read fails naming the chunk, after both parts ended."""
    a, _ = _volume(tmp_path)
    import os
    with open(os.path.join(a.path, "c", "5", "0", "0"), "r+b") as f:
        f.seek(8)
        f.write(b"\xff" * 16)
    with pytest.raises(zgpu.CorruptDataError, match=r"chunk 'c/5/0/0': codec 'zstd'"):
        a.read(devices=[0, 1])


@pytest.mark.skipif(N_GPUS < 2, reason="skipped: needs 2 GPUs")
def test_gpu_read_spread_over_all_gpus(cupy, tmp_path):
    a, data = _volume(tmp_path)
    r = a.read((slice(3, 45), 7), devices="all")
    assert _device_of(cupy, r) == 0
    np.testing.assert_array_equal(_host(cupy, r), data[3:45, 7])


@pytest.mark.skipif(HAVE_GPU, reason="a machine without a GPU's answer")
def test_devices_all_without_gpu_says_so(tmp_path):
    a = zgpu.create(str(tmp_path / "a.zarr"), shape=(8,), dtype="u1", chunks=(4,))
    with pytest.raises(zgpu.NoGPUError):
        a.read(devices="all")
