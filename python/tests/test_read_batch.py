"""Array.read_batch: many selections of one shape as one stacked array, every chunk they share decoded once
(zgpu_array_read_regions). Host here; the device variants run where a GPU is (else skipped, saying so)."""
from __future__ import annotations

import numpy as np
import pytest

import zgpu

SHAPE, CHUNKS = (40, 50, 60), (16, 20, 24)


@pytest.fixture(params=["zstd", "sharded"])
def arr(request, tmp_path):
    data = (np.arange(np.prod(SHAPE), dtype=np.uint32).reshape(SHAPE) * 2654435761 % 100000).astype(np.uint16)
    kw = {"shards": (32, 40, 48)} if request.param == "sharded" else {}
    chunks = (8, 10, 12) if request.param == "sharded" else CHUNKS
    a = zgpu.create(tmp_path / "a", shape=SHAPE, dtype=data.dtype, chunks=chunks, compressors="zstd",
                    fill_value=7, **kw)
    a[16:, :, :] = data[16:]  # the first row of chunks stays missing: the fill value
    want = data.copy()
    want[:16] = 7
    return a, want


def _boxes(rng, n, shape):
    out = []
    for _ in range(n):
        start = [int(rng.integers(0, s - c + 1)) for s, c in zip(SHAPE, shape)]
        out.append(tuple(slice(s, s + c) for s, c in zip(start, shape)))
    return out


def test_matches_single_reads(arr):
    a, want = arr
    rng = np.random.default_rng(5)
    sels = _boxes(rng, 12, (6, 9, 13))
    sels[3] = sels[0]  # identical boxes share every chunk
    got = a.read_batch(sels)
    assert got.shape == (12, 6, 9, 13) and got.dtype == np.uint16
    for i, s in enumerate(sels):
        np.testing.assert_array_equal(got[i], want[s])


def test_chunks_decoded_once(arr):
    a, want = arr
    sel = (slice(24, 32), slice(0, 10), slice(0, 12))  # inside one read chunk of either layout
    got = a.read_batch([sel] * 8)
    np.testing.assert_array_equal(got, np.broadcast_to(want[sel], (8,) + want[sel].shape))
    assert a.last_read_stats["chunks"] == 1


def test_integer_and_reversed_axes(arr):
    a, want = arr
    sels = [(5, slice(10, 20), slice(None, None, -1)), (30, slice(40, 50), slice(0, 60)),
            (39, slice(19, 9, -1), slice(59, None, -1))]
    got = a.read_batch(sels)
    assert got.shape == (3, 10, 60)
    for i, s in enumerate(sels):
        np.testing.assert_array_equal(got[i], want[s])


def test_into_out_strided(arr):
    a, want = arr
    rng = np.random.default_rng(9)
    sels = _boxes(rng, 5, (4, 7, 11))
    big = np.zeros((5, 8, 7, 11), np.uint16)
    out = big[:, ::2]  # every other row of axis 1: strided destination
    assert a.read_batch(sels, out=out) is out
    for i, s in enumerate(sels):
        np.testing.assert_array_equal(out[i], want[s])
    assert not big[:, 1::2].any()  # nothing written between


@pytest.mark.parametrize("n", [1, 20, 40])
def test_many_plain_boxes(arr, n):
    """Batches of plain boxes (one slice of step 1 an axis) go through the batch's fast path (_batch._plain_boxes:
    plain Python for a few, NumPy from _PLAIN_NUMPY_MIN on): the same values as one read each, into new,
    C-contiguous and strided stacks, NumPy ints as bounds, reversed and sliced stacks; a box it cannot take (an open
    bound, one past the shape, a negative bound, another shape) leaves the batch to the selection-by-selection path,
    with its errors."""
    from zgpu import _batch
    assert (n >= _batch._PLAIN_NUMPY_MIN) == (n == 40)
    a, want = arr
    rng = np.random.default_rng(21 + n)
    sels = _boxes(rng, n, (5, 8, 9))
    plain = _batch._plain_boxes(a, sels)
    assert plain is not None and len(plain) == n and plain.count == (5, 8, 9)
    assert isinstance(plain.starts, list) == (n < _batch._PLAIN_NUMPY_MIN)
    got = a.read_batch(sels)
    for i, s in enumerate(sels):
        np.testing.assert_array_equal(got[i], want[s])
    big = np.zeros((2 * n, 5, 8, 18), np.uint16)
    for out in (big[::2, :, :, ::2], big[::-2, :, :, 1::2], np.empty((n, 5, 8, 9), np.uint16)):
        assert a.read_batch(sels, out=out) is out
        for i, s in enumerate(sels):
            np.testing.assert_array_equal(out[i], want[s])
    assert not big[::2, :, :, 1::2].any() and not big[1::2, :, :, ::2].any()  # nothing written between
    np_sels = [tuple(slice(np.int64(x.start), np.int64(x.stop), 1) for x in s) for s in sels]
    assert _batch._plain_boxes(a, np_sels) is not None
    np.testing.assert_array_equal(a.read_batch(np_sels), got)
    k = max(n // 2, 1)  # (the box that differs, after at least one that does not)
    for odd, want_k in (((slice(None, 5), slice(0, 8), slice(51, None)), want[:5, 0:8, 51:]),
                        ((slice(-5, None), slice(0, 8), slice(0, 9)), want[-5:, 0:8, 0:9])):
        mixed = sels[:k] + [odd] + sels[k + 1:]
        assert _batch._plain_boxes(a, mixed) is None
        got2 = a.read_batch(mixed)
        np.testing.assert_array_equal(got2[k], want_k)
        np.testing.assert_array_equal(got2[:k], got[:k])
    with pytest.raises(ValueError, match="selection %d has shape" % k):  # (clipped as NumPy clips: 5 columns)
        a.read_batch(sels[:k] + [(slice(0, 5), slice(0, 8), slice(55, 64))])
    with pytest.raises(TypeError):  # (a float bound: refused as NumPy refuses it, not truncated)
        a.read_batch(sels[:k] + [(slice(0.0, 5.0), slice(0, 8), slice(0, 9))])
    with pytest.raises(ValueError, match="selection %d has shape" % k):
        a.read_batch(sels[:k] + [(slice(0, 5), slice(0, 8), slice(0, 10))])


def test_errors(arr):
    a, _ = arr
    with pytest.raises(ValueError, match="shape"):
        a.read_batch([(slice(0, 2),), (slice(0, 3),)])
    with pytest.raises(ValueError, match="at least one"):
        a.read_batch([])
    with pytest.raises(ValueError, match="step"):
        a.read_batch([(slice(0, 10, 2),)])
    with pytest.raises(IndexError):
        a.read_batch([(0, 0, 0), (0, 0, 99)])
    with pytest.raises(ValueError, match="out has shape"):
        a.read_batch([(slice(0, 2),)], out=np.empty((2, 2, 50, 60), np.uint16))


def _gpu():
    return zgpu.gpu_available() if hasattr(zgpu, "gpu_available") else False


@pytest.mark.parametrize("route", ["device", "host", "auto"])
def test_device(arr, route):
    if not _gpu():
        pytest.skip("skipped: no GPU")
    cp = pytest.importorskip("cupy")
    a, want = arr
    zgpu.config.set(read_route=route)
    try:
        b = zgpu.open_array(a.path)
        rng = np.random.default_rng(11)
        sels = _boxes(rng, 16, (8, 10, 12))
        sels[5] = sels[2]
        got = b.read_batch(sels, device="cuda")
        host = cp.asnumpy(cp.asarray(got))
        for i, s in enumerate(sels):
            np.testing.assert_array_equal(host[i], want[s])
        out = cp.zeros((16, 8, 10, 12), np.uint16)
        assert b.read_batch(sels, out=out) is out
        np.testing.assert_array_equal(cp.asnumpy(out), host)
        if route != "auto":
            assert b.last_read_stats["route"] == (1 if route == "device" else 2)
    finally:
        zgpu.config.set(read_route=None)


def _normalised(x, dtype, scale, offset, lo=None, hi=None):
    y = x.astype(np.float64) * scale + offset
    if lo is not None:
        y = np.clip(y, lo, hi)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.rint(y), info.min, info.max).astype(dtype)
    return y.astype(np.float32).astype(dtype) if np.dtype(dtype) == np.float16 else y.astype(dtype)


def test_read_converts(arr):
    a, want = arr
    sel = (slice(3, 30), slice(2, 40), slice(None, None, -1))
    got = a.read(sel, dtype=np.float32, scale=1 / 65535)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want[sel].astype(np.float64) / 65535, rtol=1e-6)
    got = a.read(sel, dtype=np.uint8, scale=0.01, offset=3, clamp=(0, 200))
    np.testing.assert_array_equal(got, _normalised(want[sel], np.uint8, 0.01, 3, 0, 200))
    out = np.empty(want[sel].shape, np.float16)
    assert a.read(sel, out=out, dtype=np.float16, scale=1 / 4096, offset=-8) is out
    np.testing.assert_array_equal(out, _normalised(want[sel], np.float16, 1 / 4096, -8))
    with pytest.raises(TypeError, match="dtype"):
        a.read(sel, out=np.empty(want[sel].shape, np.float32), dtype=np.float16)
    with pytest.raises(ValueError, match="clamp"):
        a.read(sel, dtype=np.float32, clamp=3)


def test_read_batch_converts(arr):
    a, want = arr
    sels = _boxes(np.random.default_rng(3), 6, (4, 5, 6))
    got = a.read_batch(sels, dtype=np.float32, scale=2.0, offset=-1.0)
    assert got.dtype == np.float32 and got.shape == (6, 4, 5, 6)
    for i, s in enumerate(sels):
        np.testing.assert_array_equal(got[i], _normalised(want[s], np.float32, 2.0, -1.0))


def test_device_converts(arr):
    if not _gpu():
        pytest.skip("skipped: no GPU")
    cp = pytest.importorskip("cupy")
    a, want = arr
    sels = _boxes(np.random.default_rng(4), 8, (8, 10, 12))
    got = cp.asnumpy(cp.asarray(a.read_batch(sels, device="cuda", dtype=np.float16, scale=1 / 65535)))
    for i, s in enumerate(sels):
        np.testing.assert_array_equal(got[i], _normalised(want[s], np.float16, 1 / 65535, 0.0))
    one = cp.asnumpy(cp.asarray(a.read(sels[0], device="cuda", dtype=np.int32, scale=-1, offset=100)))
    np.testing.assert_array_equal(one, _normalised(want[sels[0]], np.int32, -1, 100))
