"""Helpers shared by the zgpu Python tests (a module of its own: `from conftest import` would be ambiguous
when pytest also collects tests/interop, which has its own conftest.py)."""
from __future__ import annotations

import signal

import numpy as np

NO_GPU = "skipped: no GPU"

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def make_data(shape, dtype, seed=0):
    """Deterministic data that uses the whole range of the type (NaN-free for floats)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    elif dt.kind == "f":
        a = (rng.standard_normal(n) * 1000).astype(dt)
    elif dt.kind == "c":
        a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    else:
        a = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).view(dt)
    return a.reshape(shape)


def assert_same(got, expected):
    """Element-wise equality including NaN positions and exact bit patterns of floats."""
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if got.dtype.kind in "fc":
        assert np.array_equal(got, expected, equal_nan=True)
    else:
        assert np.array_equal(got, expected)


def gpu_available() -> bool:
    """zgpu.gpu_available(), False where even asking fails (no CUDA runtime at all)."""
    import zgpu
    try:
        return zgpu.gpu_available()
    except Exception:
        return False


def hang_guard(seconds, what):
    """The body of an autouse fixture (`yield from hang_guard(...)`): SIGALRM after `seconds` raises TimeoutError
    naming `what`, so that a hang fails its test instead of blocking the suite."""
    def expired(signum, frame):
        raise TimeoutError("%s: no progress in %d s (a hang?)" % (what, seconds))

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
