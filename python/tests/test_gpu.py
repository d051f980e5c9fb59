"""GPU tests: device reads, zero-copy hand-off to CuPy and PyTorch, out=, streams, writes from device arrays.

Run on a GPU machine with `python -m pytest python/tests -k gpu`. Every test here is named test_gpu_* and
is skipped with reason "skipped: no GPU" where the library has no usable GPU, or CuPy / PyTorch is missing.
"""
from __future__ import annotations

import asyncio
import gc

import numpy as np
import pytest

import zgpu
from zg_helpers import NO_GPU, assert_same, gpu_available, make_data

HAVE_GPU = gpu_available()
requires_gpu = pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU)


@pytest.fixture
def cupy():
    if not HAVE_GPU:
        pytest.skip(NO_GPU)
    try:
        import cupy
    except ImportError:
        pytest.skip("skipped: no GPU (CuPy is not installed)")
    return cupy


@pytest.fixture
def torch():
    if not HAVE_GPU:
        pytest.skip(NO_GPU)
    try:
        import torch
    except ImportError:
        pytest.skip("skipped: no GPU (PyTorch is not installed)")
    if not torch.cuda.is_available():
        pytest.skip("skipped: no GPU (torch.cuda is not available)")
    return torch


@pytest.fixture(autouse=True, params=["device", "auto"])
def route(request):
    """Each test through the device route (the GPU decoders) and as the cost model picks (these small arrays:
    mostly the host route plus one copy)."""
    zgpu.config.set(read_route=request.param)
    yield request.param
    zgpu.config.set(read_route=None)


SHAPE = (67, 45)
CHUNKS = (16, 10)


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    """Arrays with several codecs and layouts, all holding the same float32 data."""
    root = tmp_path_factory.mktemp("gpu")
    data = make_data(SHAPE, "float32", seed=21)
    made = {}
    for name, kw in {
        "raw": dict(compressors=None),
        "zstd": dict(compressors="zstd"),
        "gzip": dict(compressors="gzip"),
        "blosc": dict(compressors="blosc"),
        "sharded": dict(shards=(32, 20), compressors="zstd"),
        "v2-lz4": dict(zarr_format=2, compressors="lz4"),
        "v2-zlib-F": dict(zarr_format=2, compressors="zlib", order="F"),
    }.items():
        a = zgpu.create(root / name, shape=SHAPE, dtype="float32", chunks=CHUNKS, **kw)
        a[...] = data
        made[name] = zgpu.open_array(root / name)
    return made, data


SELECTIONS = [np.s_[...], np.s_[3:50, 7:44], np.s_[5], np.s_[:, -1], np.s_[10:60:3, ::-2], np.s_[4, 5],
              np.s_[None, 2:4], np.s_[0:0]]


@pytest.mark.parametrize("name", ["raw", "zstd", "gzip", "blosc", "sharded", "v2-lz4", "v2-zlib-F"])
def test_gpu_device_read_equals_host_read(arrays, cupy, name):
    made, data = arrays
    a = made[name]
    for sel in SELECTIONS:
        d = a.read(sel, device="cuda")
        assert isinstance(d, zgpu.DeviceArray)
        host = np.asarray(a[sel])
        assert d.shape == host.shape and d.dtype == host.dtype
        assert_same(d.get(), host)
        assert_same(cupy.asnumpy(cupy.asarray(d)), np.asarray(data[sel]))
    st = a.last_read_stats
    assert st["chunks"] >= 1


def test_gpu_cupy_zero_copy(arrays, cupy):
    made, data = arrays
    x = made["zstd"].read(device="cuda")
    c = cupy.asarray(x)
    assert c.data.ptr == x.__cuda_array_interface__["data"][0]
    assert_same(cupy.asnumpy(c), data)
    c2 = cupy.from_dlpack(x)
    assert c2.data.ptr == x.ptr
    assert_same(cupy.asnumpy(c2), data)
    del x
    gc.collect()
    assert_same(cupy.asnumpy(c), data)   # memory alive while CuPy holds it
    assert_same(cupy.asnumpy(c2), data)


def test_gpu_torch_zero_copy(arrays, torch):
    made, data = arrays
    x = made["gzip"].read(device="cuda")
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.__cuda_array_interface__["data"][0]
    assert t.device.type == "cuda" and tuple(t.shape) == SHAPE
    assert_same(t.cpu().numpy(), data)
    del x
    gc.collect()
    assert_same(t.cpu().numpy(), data)  # the DLPack deleter keeps the memory until torch lets go
    for sel in (np.s_[10:60:3, ::-2], np.s_[::-1, 3], np.s_[60:2:-7, 40:1:-1]):
        v = made["raw"].read(sel, device="cuda")  # reversed axes come back with positive strides
        assert all(s > 0 for s in v.strides)
        tv = torch.from_dlpack(v)
        assert tv.data_ptr() == v.ptr
        assert_same(tv.cpu().numpy(), data[sel])


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64", "uint32", "float16",
                                   "float64", "complex64", "complex128"])
def test_gpu_dtypes(tmp_path, cupy, dtype):
    data = make_data((33, 17), dtype, seed=5)
    a = zgpu.create(tmp_path / "a", shape=data.shape, dtype=dtype, chunks=(8, 8))
    a[...] = data
    d = a.read(device="cuda")
    assert_same(cupy.asnumpy(cupy.asarray(d)), data)


def test_gpu_read_into_cupy_out(arrays, cupy):
    made, data = arrays
    a = made["zstd"]
    out = cupy.full(SHAPE, -1, dtype=cupy.float32)
    assert a.read(out=out) is out
    assert_same(cupy.asnumpy(out), data)
    big = cupy.zeros((50, 80), dtype=cupy.float32)
    view = big[3:50, ::2][:, :40]          # strided destination
    a.read(np.s_[10:57, 5:45], out=view)
    assert_same(cupy.asnumpy(view), data[10:57, 5:45])
    assert float(cupy.abs(big[:, 1::2]).sum()) == 0.0  # nothing written between the strided columns
    stepped = cupy.empty((17, 23), dtype=cupy.float32)
    a.read(np.s_[10:60:3, ::-2], out=stepped)  # |step| > 1: box read + device copy
    assert_same(cupy.asnumpy(stepped), data[10:60:3, ::-2])
    with pytest.raises(TypeError):
        a.read(out=cupy.empty(SHAPE, dtype=cupy.float64))


def test_gpu_read_into_torch_out_and_stream(arrays, torch):
    made, data = arrays
    a = made["sharded"]
    out = torch.empty(SHAPE, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    a.read(out=out, stream=s)
    assert_same(out.cpu().numpy(), data)
    t = torch.zeros((45, 67), dtype=torch.float32, device="cuda").t()  # transposed (F-order) destination
    a.read(out=t)
    assert_same(t.cpu().numpy(), data)


def test_gpu_streams(arrays, cupy):
    made, data = arrays
    a = made["blosc"]
    s = cupy.cuda.Stream(non_blocking=True)
    for stream in (s, s.ptr, None):
        d = a.read(np.s_[1:40], device="cuda:0", stream=stream)
        assert_same(d.get(), data[1:40])


def test_gpu_read_async(arrays, cupy):
    made, data = arrays

    async def main():
        return await asyncio.gather(made["zstd"].read_async(device="cuda"),
                                    made["gzip"].read_async(np.s_[3], device="cuda"))

    x, y = asyncio.run(main())
    assert_same(cupy.asnumpy(cupy.asarray(x)), data)
    assert_same(cupy.asnumpy(cupy.asarray(y)), data[3])


def test_gpu_write_from_device_arrays(tmp_path, cupy, torch):
    data = make_data((20, 30), "int32", seed=9)
    a = zgpu.create(tmp_path / "a", shape=(20, 30), dtype="int32", chunks=(7, 7))
    a[...] = cupy.asarray(data)
    assert_same(a[...], data)
    a[::2, 1:5] = torch.from_numpy(-data[::2, 1:5].copy()).cuda()
    exp = data.copy()
    exp[::2, 1:5] = -data[::2, 1:5]
    assert_same(a[...], exp)
    a[0] = a.read(np.s_[1], device="cuda")  # a zgpu.DeviceArray
    exp[0] = exp[1]
    assert_same(a[...], exp)


def test_gpu_write_async_from_device_on_a_stream(tmp_path, cupy):
    """write_async of a CuPy array: written from GPU memory after the work queued on `stream` (the value filled
    there), while the event loop runs."""
    data = make_data((20, 30), "int32", seed=5)
    a = zgpu.create(tmp_path / "a", shape=(20, 30), dtype="int32", chunks=(7, 7))
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.asarray(data)
        x *= 2

    async def main():
        await a.write_async(np.s_[...], x, stream=stream)

    asyncio.run(main())
    assert_same(a[...], data * 2)


WRITE_CODECS = [  # (zarr_format, compressors, filters, shards): GPU-encoded ones and host-encoded ones
    (3, "zstd", None, None), (3, {"name": "zstd", "configuration": {"level": 5, "checksum": True}}, None, None),
    (3, "gzip", None, None), (3, None, None, None), (3, "blosc", None, None), (3, "zstd", None, (16, 16, 30)),
    (3, "gzip", [{"name": "transpose", "configuration": {"order": [2, 0, 1]}}], None),
    (2, "zlib", None, None), (2, "lz4", None, None), (2, {"id": "gzip", "level": 9}, None, None),
    (2, "zstd", [{"id": "delta", "dtype": "<u2"}], None), (2, "bz2", None, None),
]


@pytest.mark.parametrize("fmt,compressors,filters,shards", WRITE_CODECS)
def test_gpu_write_device_reads_back_in_zarr_python(tmp_path, cupy, fmt, compressors, filters, shards):
    """Writes from CuPy arrays (whole, a region not aligned to chunks, a Fortran-ordered one) encode on the GPU
    where the codecs allow, and every chunk reads back in zgpu and in zarr-python."""
    zarr = pytest.importorskip("zarr")
    shape, chunks = (33, 40, 61), (8, 8, 30)
    data = (np.arange(np.prod(shape)).reshape(shape) // 7 % 5000).astype("uint16")
    data[:8, :8, :30] = 3  # one chunk of fill value: deleted, not written
    a = zgpu.create(tmp_path / "a", shape=shape, dtype="uint16", chunks=chunks, shards=shards, fill_value=3,
                    compressors=compressors, filters=filters, zarr_format=fmt)
    a[...] = cupy.asarray(data)
    region = np.s_[3:30, 5:37, 11:50]
    new = cupy.asfortranarray(cupy.asarray(data[region][::-1] + 1))
    a.write(region, new)
    exp = data.copy()
    exp[region] = data[region][::-1] + 1
    assert_same(a[...], exp)
    z = zarr.open_array(str(tmp_path / "a"), mode="r")
    assert_same(z[...], exp)
    b = zgpu.open(tmp_path / "a")
    assert_same(b.read(device="cuda").get(), exp)


def test_gpu_device_array_lifetime_with_many_consumers(arrays, cupy, torch):
    made, data = arrays
    for _ in range(20):
        x = made["raw"].read(device="cuda")
        t = torch.from_dlpack(x)
        c = cupy.asarray(x)
        del x
        gc.collect()
        assert float(t.sum().item()) == pytest.approx(float(c.sum().get()), rel=1e-4)
    assert_same(t.cpu().numpy(), data)
