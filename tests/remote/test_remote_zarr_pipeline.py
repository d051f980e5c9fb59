"""zarr-python's codec pipeline through zgpu on remote stores (issue 21): arrays on fsspec's HTTP and S3 filesystems
(zarr.storage.FsspecStore) are read -- and on S3 written -- by zgpu's own HTTP and S3 stores, reached as the fsspec
filesystem reaches them (its URL, its S3 endpoint and region); an s3fs filesystem with credentials of its own falls
back to zarr-python's pipeline, with a debug log saying why."""
from __future__ import annotations

import logging
import os

import numpy as np
import pytest

from conftest import REGIONS, unique, write_case

zarr = pytest.importorskip("zarr")
import zgpu  # noqa: E402
import zgpu.zarr  # noqa: E402,F401 (registers the pipeline)
from zarr.core.codec_pipeline import BatchedCodecPipeline  # noqa: E402

PATH = "zgpu.zarr.ZgpuCodecPipeline"
CASES = ["v3-zstd", "v3-sharded", "v2-blosc-lz4-shuffle", "v3-missing-chunks"]


def _refuse(*args, **kwargs):
    raise AssertionError("a read went through zarr-python's own pipeline")


def _check(z, expect, monkeypatch):
    assert type(z._async_array.codec_pipeline).__name__ == "ZgpuCodecPipeline"
    with monkeypatch.context() as m:
        m.setattr(BatchedCodecPipeline, "read", _refuse)
        for sel in REGIONS + [Ellipsis]:
            np.testing.assert_array_equal(z[sel], expect[sel])


@pytest.mark.parametrize("case", CASES)
def test_s3_reads_and_writes_through_zgpu(s3, request, case, monkeypatch):
    key = unique(request)
    _, expect = write_case(s3.store(key), case, grid="coarse")
    with zarr.config.set({"codec_pipeline.path": PATH}):
        _check(zarr.open_array(store=s3.store(key, read_only=True), mode="r"), expect, monkeypatch)
        z = zarr.open_array(store=s3.store(key), mode="r+")
        z[3:20, 5, 7:40] = 99
        expect[3:20, 5, 7:40] = 99
    np.testing.assert_array_equal(zarr.open_array(store=s3.store(key, read_only=True), mode="r")[...], expect)


@pytest.mark.parametrize("case", ["v3-zstd", "v3-sharded", "v2-zstd-slash"])
def test_http_reads_through_zgpu(httpsrv, request, case, monkeypatch):
    name = unique(request)
    _, expect = write_case(os.path.join(httpsrv.root, name), case)
    with zarr.config.set({"codec_pipeline.path": PATH}):
        store = zarr.storage.FsspecStore.from_url(httpsrv.url + "/" + name, read_only=True)
        _check(zarr.open_array(store=store, mode="r"), expect, monkeypatch)


def test_s3fs_with_its_own_credentials_falls_back(s3, request, caplog):
    import s3fs
    key = unique(request)
    _, expect = write_case(s3.store(key), "v3-zstd", grid="coarse")
    opts = s3.storage_options()
    opts.update(key="someone-else", secret="not-the-environment")
    fs = s3fs.S3FileSystem(asynchronous=True, **opts)
    store = zarr.storage.FsspecStore(fs=fs, path="%s/%s" % (s3.bucket, key), read_only=True)
    with zarr.config.set({"codec_pipeline.path": PATH}), caplog.at_level(logging.DEBUG, logger="zgpu.zarr"):
        np.testing.assert_array_equal(zarr.open_array(store=store, mode="r")[...], expect)
    assert "credentials of its own" in caplog.text, caplog.text


def _cupy_or_skip():
    try:
        gpu = zgpu.gpu_available()
    except Exception:
        gpu = False
    if not gpu:
        pytest.skip("skipped: no GPU")
    return pytest.importorskip("cupy", reason="skipped: no GPU (CuPy is not installed)")


@pytest.mark.parametrize("case", ["v3-zstd", "v3-sharded", "v2-blosc-lz4-shuffle"])
@pytest.mark.parametrize("where", ["s3", "http"])
def test_enable_gpu_reads_remote_arrays_into_cupy(s3, httpsrv, request, case, where, monkeypatch):
    """Under zarr.config.enable_gpu(), an array on an fsspec S3 or HTTP store is read by zgpu's own store and
    decoded into zarr-python's CuPy output, never through zarr-python's pipeline."""
    cupy = _cupy_or_skip()
    key = unique(request)
    if where == "s3":
        _, expect = write_case(s3.store(key), case, grid="coarse")
        open_store = lambda: s3.store(key, read_only=True)  # noqa: E731
    else:
        _, expect = write_case(os.path.join(httpsrv.root, key), case)
        open_store = lambda: zarr.storage.FsspecStore.from_url(httpsrv.url + "/" + key, read_only=True)  # noqa: E731
    with zarr.config.set({"codec_pipeline.path": PATH}), zarr.config.enable_gpu(), monkeypatch.context() as m:
        z = zarr.open_array(store=open_store(), mode="r")
        assert type(z._async_array.codec_pipeline).__name__ == "ZgpuCodecPipeline"
        m.setattr(BatchedCodecPipeline, "read", _refuse)
        for sel in REGIONS + [Ellipsis]:
            got = z[sel]
            assert isinstance(got, cupy.ndarray), type(got)
            np.testing.assert_array_equal(cupy.asnumpy(got), expect[sel], err_msg="%s %r" % (case, sel))
