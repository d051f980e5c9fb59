"""The decoded-chunk cache (zgpu.config.set(cache_bytes=...)) through the read paths: a second read of the same
chunks is served from the cache (read stats cache_hits), a write through zgpu (any handle, any context) drops
what it changed, regions share hits, and a cache too small keeps reads correct."""
from __future__ import annotations

import numpy as np
import pytest

import zgpu


@pytest.fixture
def cached():
    zgpu.config.set(cache_bytes=64 << 20)
    yield
    zgpu.config.set(cache_bytes=0)


@pytest.fixture(params=["zstd", "sharded"])
def path(request, tmp_path):
    data = np.arange(32 * 40 * 48, dtype=np.int32).reshape(32, 40, 48)
    kw = {"shards": (16, 20, 24)} if request.param == "sharded" else {}
    chunks = (8, 10, 12) if request.param == "sharded" else (16, 20, 24)
    a = zgpu.create(tmp_path / "a", shape=data.shape, dtype=data.dtype, chunks=chunks, compressors="zstd", **kw)
    a[...] = data
    return tmp_path / "a", data


def test_second_read_hits(path, cached):
    p, data = path
    a = zgpu.open_array(p)
    np.testing.assert_array_equal(a[...], data)
    s = a.last_read_stats
    assert s["cache_hits"] == 0 and s["cache_misses"] == s["chunks"] > 0
    np.testing.assert_array_equal(a[...], data)
    s = a.last_read_stats
    assert s["cache_hits"] == s["chunks"] and s["cache_misses"] == 0 and s["stored_bytes"] == 0
    # a box inside: hits too, placed right
    np.testing.assert_array_equal(a[3:29, 5:17, 40:47], data[3:29, 5:17, 40:47])
    assert a.last_read_stats["cache_misses"] == 0


def test_write_invalidates(path, cached):
    p, data = path
    a = zgpu.open_array(p)
    a[...]
    w = zgpu.open_array(p, mode="r+")  # another handle writes
    w[0:5, 0:5, 0:5] = -1
    data = data.copy()
    data[0:5, 0:5, 0:5] = -1
    np.testing.assert_array_equal(a[...], data)
    s = a.last_read_stats
    assert 0 < s["cache_misses"] < s["chunks"]  # only the chunk written was dropped


def test_regions_share_hits(path, cached):
    p, data = path
    a = zgpu.open_array(p)
    sels = [(slice(0, 8), slice(0, 10), slice(0, 12))] * 3 + [(slice(20, 28), slice(30, 40), slice(30, 42))]
    got = a.read_batch(sels)
    for i, s in enumerate(sels):
        np.testing.assert_array_equal(got[i], data[s])
    got = a.read_batch(sels)
    for i, s in enumerate(sels):
        np.testing.assert_array_equal(got[i], data[s])
    assert a.last_read_stats["cache_misses"] == 0


def test_tiny_cache_stays_correct(path):
    zgpu.config.set(cache_bytes=1 << 12)  # a quarter is less than a chunk: nothing kept
    try:
        p, data = path
        a = zgpu.open_array(p)
        for _ in range(2):
            np.testing.assert_array_equal(a[...], data)
        assert a.last_read_stats["cache_hits"] == 0
    finally:
        zgpu.config.set(cache_bytes=0)


def test_off_by_default(path):
    p, data = path
    a = zgpu.open_array(p)
    a[...]
    a[...]
    s = a.last_read_stats
    assert s["cache_hits"] == 0 and s["cache_misses"] == 0


def test_stale_handle_misses_new_chunks(tmp_path, cached):
    """A handle of the old metadata must not take a newer array's (smaller) chunks from the cache."""
    data = np.arange(16 * 16, dtype=np.int32).reshape(16, 16)
    w = zgpu.create(tmp_path / "a", shape=data.shape, dtype=data.dtype, chunks=(8, 8), compressors="zstd")
    w[...] = data
    old = zgpu.open_array(tmp_path / "a")
    old[...]
    with zgpu.create(tmp_path / "a", shape=data.shape, dtype=data.dtype, chunks=(4, 8), compressors="zstd",
                     overwrite=True) as new:
        new[...] = data + 1  # (staged: in place at the close)
    np.testing.assert_array_equal(zgpu.open_array(tmp_path / "a")[...], data + 1)  # fills the cache anew
    with pytest.raises(zgpu.ZgpuError):
        old[...]  # its chunk keys now hold other chunks: as without a cache, an error, never a wrong size


def test_device_cache_settings():
    zgpu.config.set(device_cache_bytes=32 << 20)
    try:
        assert zgpu.config.device_cache_bytes == 32 << 20
        assert "device_cache_bytes=33554432" in repr(zgpu.config)
        for bad in (-1, True):
            with pytest.raises(ValueError):
                zgpu.config.set(device_cache_bytes=bad)
        assert zgpu.config.device_cache_bytes == 32 << 20  # a refused value changes nothing
    finally:
        zgpu.config.set(device_cache_bytes=0)


def test_device_cache_serves_device_reads(path):
    if not zgpu.gpu_available():
        pytest.skip("skipped: no GPU")
    cp = pytest.importorskip("cupy")
    p, data = path
    zgpu.config.set(device_cache_bytes=64 << 20, read_route="device")
    try:
        a = zgpu.open_array(p, mode="r+")
        first = a.read(device="cuda")
        s = a.last_read_stats
        assert s["device_cache_hits"] == 0 and s["gpu_decoded"] == s["chunks"] > 0
        again = a.read(device="cuda")
        s = a.last_read_stats
        assert s["device_cache_hits"] == s["chunks"] and s["gpu_decoded"] == 0 and s["stored_bytes"] == 0
        np.testing.assert_array_equal(cp.asnumpy(first), data)
        np.testing.assert_array_equal(cp.asnumpy(again), data)
        # a write through zgpu drops what it changed: the device read sees the new values
        a[0:2, 0:2, 0:2] = -5
        data = data.copy()
        data[0:2, 0:2, 0:2] = -5
        np.testing.assert_array_equal(cp.asnumpy(a.read(device="cuda")), data)
        assert 0 < a.last_read_stats["gpu_decoded"] < a.last_read_stats["chunks"]
    finally:
        zgpu.config.set(device_cache_bytes=0, read_route=None)
