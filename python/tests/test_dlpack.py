"""DLPack export/import machinery and the DeviceArray interfaces, checked on host memory (no GPU needed)."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from zgpu import DeviceArray, _dlpack


class HostProducer:
    """Exports a (possibly strided) view of a NumPy buffer through zgpu's DLPack code, as kDLCPU."""

    def __init__(self, base, view, legacy_only=False):
        self.base = base
        self.view = view
        self.legacy_only = legacy_only
        self.calls = []

    def __dlpack_device__(self):
        return (_dlpack.KDL_CPU, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self.legacy_only and max_version is not None:
            raise TypeError("old producer: no max_version")
        self.calls.append(max_version)
        return _dlpack.export(self.view.ctypes.data, self.view.shape, self.view.strides, self.view.dtype,
                              _dlpack.KDL_CPU, 0, self.base,
                              versioned=max_version is not None and max_version[0] >= 1)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32", "complex128"])
@pytest.mark.parametrize("view", [np.s_[...], np.s_[::-1, 1::2], np.s_[2, :], np.s_[1:3, ::-3]], ids=repr)
def test_numpy_consumes_our_capsule(dtype, view):
    base = np.arange(24).reshape(4, 6).astype(dtype)
    v = base[view]
    before = _dlpack.live_exports()
    prod = HostProducer(base, v)
    y = np.from_dlpack(prod)
    assert y.shape == v.shape and y.strides == v.strides and y.dtype == v.dtype
    assert np.array_equal(y, v)
    assert y.ctypes.data == v.ctypes.data  # no copy
    expected = v.copy()
    del prod, v, base
    gc.collect()
    assert np.array_equal(y, expected)  # the owner is kept alive by the capsule's manager
    assert _dlpack.live_exports() == before + 1
    del y
    gc.collect()
    assert _dlpack.live_exports() == before  # the deleter ran


@pytest.mark.parametrize("versioned", [False, True])
def test_unconsumed_capsule_releases_owner(versioned):
    base = np.arange(6.0)
    before = _dlpack.live_exports()
    cap = _dlpack.export(base.ctypes.data, base.shape, base.strides, base.dtype, _dlpack.KDL_CPU, 0, base,
                         versioned)
    assert _dlpack.live_exports() == before + 1
    del cap
    gc.collect()
    assert _dlpack.live_exports() == before


@pytest.mark.parametrize("legacy", [False, True])
def test_import_side_reads_capsules_and_calls_deleter(legacy):
    base = np.arange(20, dtype=np.int32).reshape(4, 5)
    v = base[::-1, 1:4]
    before = _dlpack.live_exports()
    prod = HostProducer(base, v, legacy_only=legacy)
    t = _dlpack.from_dlpack(prod, None)
    assert prod.calls == [None] if legacy else prod.calls == [(1, 0)]
    assert t.ptr == v.ctypes.data and t.shape == v.shape and t.strides == v.strides and t.dtype == v.dtype
    assert t.device_type == _dlpack.KDL_CPU
    assert _dlpack.live_exports() == before + 1
    t.release()
    assert _dlpack.live_exports() == before
    t.release()  # idempotent


def test_export_rejects_unrepresentable():
    base = np.zeros(4, "V3")
    with pytest.raises(BufferError):
        _dlpack.export(base.ctypes.data, base.shape, base.strides, base.dtype, _dlpack.KDL_CPU, 0, base, True)
    b = np.zeros(8, "u1")
    with pytest.raises(BufferError):  # a stride that is not a whole number of items
        _dlpack.export(b.ctypes.data, (2,), (3,), np.dtype("u2"), _dlpack.KDL_CPU, 0, b, True)


def test_device_array_interfaces_describe_the_view():
    owner = object()
    d = DeviceArray(owner, 0x10000, (3, 4), None, np.dtype("float32"), 1)
    cai = d.__cuda_array_interface__
    assert cai["shape"] == (3, 4) and cai["typestr"] == "<f4" and cai["version"] == 3
    assert cai["data"] == (0x10000, False) and cai["strides"] is None and cai["stream"] is None
    assert d.__dlpack_device__() == (_dlpack.KDL_CUDA, 1)
    assert d.strides == (16, 4) and d.nbytes == 48 and d.size == 12 and len(d) == 3
    s = DeviceArray(owner, 0x10010, (2, 2), (-32, 8), np.dtype("float32"), 0)
    assert s.__cuda_array_interface__["strides"] == (-32, 8)
    assert not s.is_c_contiguous
    with pytest.raises(BufferError, match="negative strides"):
        s.__dlpack__()
    z = DeviceArray(owner, 0x10000, (0, 4), None, np.dtype("int8"), 0)
    assert z.__cuda_array_interface__["data"][0] == 0
    with pytest.raises(BufferError):
        d.__dlpack__(dl_device=(_dlpack.KDL_CPU, 0))
    with pytest.raises(BufferError):
        d.__dlpack__(copy=True)
    assert "cuda:1" in repr(d)


def test_cai_stream_matches_the_read_stream():
    # (CuPy's arrays name the legacy default stream 1 in __cuda_array_interface__; zgpu's handle for it is 0: a read
    # ordered on it must not synchronise the device first)
    from zgpu import _cuda
    assert _cuda.same_stream(1, 0) and _cuda.same_stream(1, 1) and _cuda.same_stream(0x7F00, 0x7F00)
    assert not _cuda.same_stream(2, 0) and not _cuda.same_stream(1, 0x7F00) and not _cuda.same_stream(0x7F00, 0)
