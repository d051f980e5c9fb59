"""Remote reads into GPU memory: every codec set-up of the remote suite, stored on the test HTTP server and on
moto's S3 server, read with device="cuda" whole and by region, compared element by element with the host read
of the same data. Sharded set-ups take the device path's per-wave fetch (inner chunks straight into pinned
staging, one batch of requests a wave); the others the plan's whole-chunk fetch. Skipped with "skipped: no GPU"
where the library has no usable GPU or CuPy is missing."""
from __future__ import annotations

import numpy as np
import pytest

import zgpu
from conftest import CASES, REGIONS, unique, write_case

NO_GPU = "skipped: no GPU"


def _gpu() -> bool:
    try:
        return zgpu.gpu_available()
    except Exception:
        return False


@pytest.fixture(autouse=True, params=["device", "auto"])
def route(request):
    """Each case through the device route (the GPU decoders, remote inner chunks fetched per wave) and as the cost
    model picks (small reads: the host route)."""
    zgpu.config.set(read_route=request.param)
    yield request.param
    zgpu.config.set(read_route=None)


@pytest.fixture(scope="module")
def cupy():
    if not _gpu():
        pytest.skip(NO_GPU)
    try:
        import cupy
    except ImportError:
        pytest.skip(NO_GPU + " (CuPy is not installed)")
    return cupy


def _check_device(cupy, url: str, ref: np.ndarray) -> None:
    a = zgpu.open(url)
    for sel in REGIONS:
        got = a.read(sel, device="cuda")
        np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(got)), ref[sel], err_msg="%s %r" % (url, sel))


@pytest.mark.parametrize("case", CASES)
def test_gpu_http(cupy, httpsrv, request, case):
    key = unique(request)
    _, ref = write_case("%s/%s" % (httpsrv.root, key), case)
    _check_device(cupy, "%s/%s" % (httpsrv.url, key), ref)


@pytest.mark.parametrize("case", ["v3-zstd", "v3-blosc-lz4-shuffle", "v3-gzip", "v3-sharded", "v3-sharded-holes",
                                  "v2-missing-chunks"])
def test_gpu_s3(cupy, s3, request, case):
    key = unique(request)
    _, ref = write_case(s3.store(key), case)
    _check_device(cupy, s3.url(key), ref)


def test_gpu_sharded_waves(cupy, s3, request, route):
    """A sharded read split into several waves (tuning pipeline_waves): each wave's inner chunks are fetched
    while the wave before decodes; the result is the same as one wave's."""
    key = unique(request)
    _, ref = write_case(s3.store(key), "v3-sharded")
    zgpu.config.set(pipeline_waves=4)
    try:
        a = zgpu.open(s3.url(key))
        got = cupy.asnumpy(cupy.asarray(a.read(..., device="cuda")))
        assert route == "auto" or a.last_read_stats["waves"] >= 2
    finally:
        zgpu.config.set(pipeline_waves=None)
    np.testing.assert_array_equal(got, ref)


def test_gpu_remote_fault_is_clean(cupy, httpsrv, request):
    """A server that keeps failing gives a clean error on the device path too, never data."""
    key = unique(request)
    write_case("%s/%s" % (httpsrv.root, key), "v3-sharded")
    a = zgpu.open("%s/%s" % (httpsrv.url, key))
    httpsrv.faults({"path_re": key + "/c/", "kind": "status", "code": 503})
    with pytest.raises(zgpu.errors.ZgpuError) as e:
        a.read(..., device="cuda")
    assert "503" in str(e.value)
