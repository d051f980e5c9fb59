"""host_read_route: reads into host memory (NumPy) decoded on the GPU. With "device" every read equals the host
executor's and says it took the GPU (last_read_stats' route 1) where there is one, else reads on the host (route 0);
"host" never uses the GPU. Runs everywhere: without a GPU it checks the fallback."""
from __future__ import annotations

import numpy as np
import pytest

import zgpu

SHAPE, CHUNKS = (40, 50, 60), (16, 20, 24)
DEVICE_ROUTE = 1


@pytest.fixture(params=["zstd", "gzip", "sharded"])
def stored(request, tmp_path):
    rng = np.random.default_rng(11)
    data = (np.arange(np.prod(SHAPE), dtype=np.uint32).reshape(SHAPE) * 7 + rng.integers(0, 1024, SHAPE)) \
        .astype(np.uint16)
    kw = {"shards": (32, 40, 48)} if request.param == "sharded" else {}
    chunks = (8, 10, 12) if request.param == "sharded" else CHUNKS
    comp = "gzip" if request.param == "gzip" else "zstd"
    a = zgpu.create(tmp_path / "a", shape=SHAPE, dtype=data.dtype, chunks=chunks, compressors=comp, fill_value=7, **kw)
    a[16:] = data[16:]
    want = data.copy()
    want[:16] = 7
    return tmp_path / "a", want


@pytest.fixture
def device_route():
    zgpu.config.set(host_read_route="device")
    yield
    zgpu.config.set(host_read_route=None)


def test_device_route_reads_the_same(stored, device_route):
    path, want = stored
    a = zgpu.open_array(path)
    np.testing.assert_array_equal(a[...], want)
    route = a.last_read_stats["route"]
    assert route == (DEVICE_ROUTE if zgpu.gpu_available() else 0)
    if zgpu.gpu_available():
        assert a.last_read_stats["gpu_decoded"] > 0
    np.testing.assert_array_equal(a[3:30, 7:41, 5:59], want[3:30, 7:41, 5:59])
    sels = [(slice(s, s + 6), slice(s + 7, s + 16), slice(s, s + 13)) for s in range(0, 30, 3)]
    got = a.read_batch(sels)
    for i, s in enumerate(sels):
        np.testing.assert_array_equal(got[i], want[s])
    conv = a.read((slice(0, 40), slice(10, 50), slice(0, 60)), dtype=np.float32, scale=0.5, offset=1.0)
    np.testing.assert_array_equal(conv, want[:, 10:].astype(np.float32) * 0.5 + 1.0)


def test_host_route_never_uses_the_gpu(stored):
    path, want = stored
    zgpu.config.set(host_read_route="host")
    try:
        a = zgpu.open_array(path)
        np.testing.assert_array_equal(a[...], want)
        assert a.last_read_stats["route"] == 0
    finally:
        zgpu.config.set(host_read_route=None)
