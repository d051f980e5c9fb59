"""zarr-python's codec pipeline through zgpu (issue 21): zarr.config's codec_pipeline.path =
"zgpu.zarr.ZgpuCodecPipeline" makes existing zarr-python code read and write through zgpu, with the same results as
zarr-python's own pipeline, and falls back to it, per array, for what zgpu does not do."""
from __future__ import annotations

import logging

import numpy as np
import pytest
import zarr

import zgpu.zarr  # noqa: F401 (registers the pipeline; the installed package's entry point does the same)

PATH = "zgpu.zarr.ZgpuCodecPipeline"

CASES = {
    "v3-zstd": dict(zarr_format=3),
    "v3-sharded": dict(zarr_format=3, shards=(20, 40, 60)),
    "v3-gzip-transpose": dict(zarr_format=3, compressors=[zarr.codecs.GzipCodec(level=1)],
                              filters=[zarr.codecs.TransposeCodec(order=(2, 0, 1))]),
    "v2-blosc": dict(zarr_format=2),
    "v2-F": dict(zarr_format=2, order="F"),
}
SELS = [np.s_[...], np.s_[3:37, 5, 10:70], np.s_[0, 0, 0], np.s_[::3, 1:2, -5:], np.s_[-1], np.s_[7:8, 11:12, 13:14]]


@pytest.fixture(params=list(CASES))
def stored(tmp_path, request):
    data = np.random.default_rng(1).integers(-1000, 1000, (40, 50, 70)).astype("i4")
    path = str(tmp_path / "a.zarr")
    zarr.create_array(path, shape=data.shape, chunks=(10, 20, 30), dtype="i4", **CASES[request.param])[...] = data
    return path, data


def test_reads_and_writes_as_zarr_python(stored, caplog):
    path, data = stored
    with zarr.config.set({"codec_pipeline.path": PATH}), caplog.at_level(logging.DEBUG, logger="zgpu.zarr"):
        a = zarr.open_array(path, mode="r+")
        assert type(a._async_array.codec_pipeline).__name__ == "ZgpuCodecPipeline"
        for sel in SELS:
            np.testing.assert_array_equal(a[sel], data[sel])
        # fancy selections hand the chunks index arrays: zarr-python's own pipeline, with a debug line
        np.testing.assert_array_equal(a.oindex[[1, 30], :, [3, 4]], data[np.ix_([1, 30], range(50), [3, 4])])
        np.testing.assert_array_equal(a.vindex[[0, 39], [1, 2], [68, 3]], data[[0, 39], [1, 2], [68, 3]])
        a[5:25, 3:9, 7] = -7
        a[0] = 5
        a[39, 49, 69] = 123
        data[5:25, 3:9, 7] = -7
        data[0] = 5
        data[39, 49, 69] = 123
        np.testing.assert_array_equal(a[...], data)
    assert not any("cannot open" in r.getMessage() for r in caplog.records), caplog.text
    np.testing.assert_array_equal(zarr.open_array(path)[...], data)  # zarr-python's own pipeline agrees


def test_fallback_per_array(tmp_path, caplog):
    """A store zgpu does not read (zarr's MemoryStore) and a data type it lacks (strings) go through zarr-python's
    pipeline, with a debug log saying why."""
    with zarr.config.set({"codec_pipeline.path": PATH}), caplog.at_level(logging.DEBUG, logger="zgpu.zarr"):
        m = zarr.create_array(zarr.storage.MemoryStore(), shape=(10,), chunks=(5,), dtype="u2")
        m[...] = np.arange(10)
        np.testing.assert_array_equal(m[...], np.arange(10))
        s = zarr.create_array(str(tmp_path / "s.zarr"), shape=(3,), chunks=(2,), dtype=str)
        s[...] = np.array(["a", "bc", "def"])
        assert list(s[...]) == ["a", "bc", "def"]
    text = caplog.text
    assert "MemoryStore, neither a local directory" in text and "elements have variable length" in text, text


def _refuse(*args, **kwargs):
    raise AssertionError("a read went through zarr-python's own pipeline")


def test_box_reads_are_zgpu_reads(stored, monkeypatch):
    """Box selections never reach zarr-python's pipeline: each chunk's box is read straight into zarr's output."""
    from zarr.core.codec_pipeline import BatchedCodecPipeline
    path, data = stored
    with zarr.config.set({"codec_pipeline.path": PATH}):
        a = zarr.open_array(path)
        monkeypatch.setattr(BatchedCodecPipeline, "read", _refuse)
        for sel in SELS:
            np.testing.assert_array_equal(a[sel], data[sel])
        out = np.zeros((40, 50, 70), "i4")
        out[...] = a  # (numpy's __array__ of a zarr array: a whole read)
        np.testing.assert_array_equal(out, data)


def test_gpu_enable_gpu_decodes_into_cupy(stored, monkeypatch):
    """With zarr.config.enable_gpu(), arr[...] returns CuPy arrays read by zgpu on the GPU (zarr-python's pipeline,
    which decodes on the host, is never asked), and GPU buffers can be written."""
    import zgpu
    if not zgpu.gpu_available():
        pytest.skip("skipped: no GPU")
    cupy = pytest.importorskip("cupy", reason="skipped: no GPU (CuPy is not installed)")
    from zarr.core.codec_pipeline import BatchedCodecPipeline
    path, data = stored
    with zarr.config.enable_gpu(), zarr.config.set({"codec_pipeline.path": PATH}):
        a = zarr.open_array(path, mode="r+")
        with monkeypatch.context() as m:
            m.setattr(BatchedCodecPipeline, "read", _refuse)
            for sel in SELS:
                r = a[sel]
                assert isinstance(r, cupy.ndarray), type(r)
                np.testing.assert_array_equal(cupy.asnumpy(r), data[sel])
            # a stream of the caller's: the read is ordered on it
            s = cupy.cuda.Stream(non_blocking=True)
            with s:
                r = a[3:37, 5, 10:70] * 2
            s.synchronize()
            np.testing.assert_array_equal(cupy.asnumpy(r), data[3:37, 5, 10:70] * 2)
        a[5:25, 3:9, 7] = cupy.full((20, 6), -7, "i4")
        data[5:25, 3:9, 7] = -7
        np.testing.assert_array_equal(cupy.asnumpy(a[...]), data)
    np.testing.assert_array_equal(zarr.open_array(path)[...], data)
