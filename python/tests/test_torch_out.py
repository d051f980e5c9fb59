"""read(out=...) into host tensors that are not NumPy arrays: PyTorch CPU tensors (contiguous, strided, pinned),
written in place through their own memory with the same shape / dtype / read-only checks as NumPy's, and any
DLPack producer whose tensor is in host memory. The PyTorch tests skip where PyTorch is not installed (CI's
requirements leave it out); the DLPack ones need only NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import zgpu


@pytest.fixture
def arr(tmp_path):
    data = np.arange(24 * 20, dtype=np.float32).reshape(24, 20)
    a = zgpu.create(tmp_path / "a", shape=data.shape, dtype=data.dtype, chunks=(7, 6), compressors="zstd")
    a[...] = data
    return zgpu.open_array(tmp_path / "a"), data


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch is not installed")


def test_torch_cpu_contiguous(arr, torch):
    a, data = arr
    out = torch.zeros(10, 20)
    res = a.read(np.s_[3:13], out=out)
    assert res is out
    np.testing.assert_array_equal(out.numpy(), data[3:13])


def test_torch_cpu_strided(arr, torch):
    a, data = arr
    base = torch.full((21, 30), -1.0)
    out = base.t()[2:22:2, 1:21]  # non-contiguous: transposed, every other row
    assert not out.is_contiguous()
    assert a.read(np.s_[4:14, :], out=out) is out
    np.testing.assert_array_equal(out.numpy(), data[4:14])
    untouched = base.clone()
    untouched.t()[2:22:2, 1:21] = -1.0
    assert (untouched == -1.0).all()  # nothing outside the view was written
    # a selection with steps into a strided tensor (read into a box, then copied into the view)
    y = torch.zeros(10, 12)
    a.read(np.s_[0:24:2, 0:20:2], out=y.t())
    np.testing.assert_array_equal(y.t().numpy(), data[0:24:2, 0:20:2])


def test_torch_cpu_pinned(arr, torch):
    if not torch.cuda.is_available():
        pytest.skip("skipped: no GPU (pinned memory needs CUDA)")
    a, data = arr
    out = torch.zeros(24, 20).pin_memory()
    assert out.is_pinned()
    assert a.read(out=out) is out
    np.testing.assert_array_equal(out.numpy(), data)


def test_torch_cpu_checks(arr, torch):
    a, _ = arr
    with pytest.raises(TypeError, match="dtype"):
        a.read(np.s_[0:2], out=torch.zeros(2, 20, dtype=torch.float64))
    with pytest.raises(ValueError, match="shape"):
        a.read(np.s_[0:2], out=torch.zeros(3, 20))
    with pytest.raises(ValueError, match="requires grad"):
        a.read(np.s_[0:2], out=torch.zeros(2, 20, requires_grad=True))
    with pytest.raises(TypeError, match="NumPy cannot view"):
        a.read(np.s_[0:2], out=torch.zeros(2, 20, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="device='cuda' needs a device array"):
        a.read(np.s_[0:2], device="cuda", out=torch.zeros(2, 20))
    ok = torch.zeros(2, 20, requires_grad=True)
    a.read(np.s_[0:2], out=ok.detach())  # the documented way round: same memory
    assert ok.detach().abs().sum() > 0


class _HostDLPack:
    """A host tensor that only speaks DLPack (NumPy underneath, but not an ndarray)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_host_dlpack_out(arr):
    a, data = arr
    backing = np.zeros((20, 24), np.float32)
    out = _HostDLPack(backing.T[2:12])  # strided
    assert a.read(np.s_[5:15], out=out) is out
    np.testing.assert_array_equal(backing.T[2:12], data[5:15])
    assert not backing.T[:2].any() and not backing.T[12:].any()
    with pytest.raises(TypeError, match="dtype"):
        a.read(np.s_[0:2], out=_HostDLPack(np.zeros((2, 20), np.int32)))
    with pytest.raises(ValueError, match="shape"):
        a.read(np.s_[0:2], out=_HostDLPack(np.zeros((2, 21), np.float32)))
    empty = _HostDLPack(np.zeros((0, 20), np.float32))
    assert a.read(np.s_[3:3], out=empty) is empty


def test_host_dlpack_read_only(arr):
    a, _ = arr
    ro = np.zeros((2, 20), np.float32)
    ro.flags.writeable = False
    try:
        ro.__dlpack__(max_version=(1, 0))
    except (TypeError, BufferError):
        pytest.skip("this NumPy exports no read-only DLPack tensors")
    with pytest.raises(ValueError, match="read-only"):
        a.read(np.s_[0:2], out=_HostDLPack(ro))
