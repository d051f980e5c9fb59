"""Helpers of the interop tests (a module of its own: a conftest.py cannot be imported by name when
several test folders have one)."""
from __future__ import annotations

import subprocess

import numpy as np

# ---------------------------------------------------------------------------------------------------
# Comparison helpers
# ---------------------------------------------------------------------------------------------------
def parse_region(region: str, shape) -> tuple:
    """'a:b,c:,:d,:' -> tuple of slices (the CLI's --region syntax)."""
    parts = region.split(",")
    assert len(parts) == len(shape)
    out = []
    for p in parts:
        lo, hi = p.split(":")
        out.append(slice(int(lo) if lo else None, int(hi) if hi else None))
    return tuple(out)


def _native(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "V" or a.dtype.byteorder in ("=", "|"):
        return a
    return a.astype(a.dtype.newbyteorder("="))


def assert_same_array(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Shape, dtype (byte order aside) and every element equal; floats and complex compared by bit pattern
    too, so NaN payloads, -0.0 and fill values must match exactly."""
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert (actual.dtype.kind, actual.dtype.itemsize) == (expected.dtype.kind, expected.dtype.itemsize), \
        f"{what}: dtype {actual.dtype} != {expected.dtype}"
    a, e = _native(actual), _native(expected)
    if e.dtype.kind == "V":
        assert a.tobytes() == e.tobytes(), f"{what}: raw bytes differ"
        return
    np.testing.assert_array_equal(a, e, err_msg=what, strict=False)
    if e.dtype.kind in "fc":
        unit = e.dtype.itemsize if e.dtype.kind == "f" else e.dtype.itemsize // 2
        ua = np.ascontiguousarray(a).view(f"u{unit}")
        ue = np.ascontiguousarray(e).view(f"u{unit}")
        bad = np.flatnonzero(ua != ue)
        assert bad.size == 0, (f"{what}: {bad.size} elements differ in bit pattern, first at flat index {bad[0]}: "
                               f"{ua.ravel()[bad[0]]:#x} != {ue.ravel()[bad[0]]:#x}")


def assert_fails_cleanly(r: subprocess.CompletedProcess, *must_mention: str) -> None:
    """Non-zero exit without a crash (no signal, code < 128) and one line on stderr naming each of must_mention."""
    assert r.returncode != 0, f"expected failure, got exit 0; stdout: {r.stdout[:500]}"
    assert 0 < r.returncode < 128, f"crashed: exit {r.returncode}; stderr: {r.stderr[-2000:]}"
    # One message line; a usage hint after it ("Try 'zgpu read --help'.") is allowed.
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip() and not ln.startswith("Try '")]
    assert lines, "no message on stderr"
    assert len(lines) == 1, f"stderr is not one line:\n{r.stderr[:2000]}"
    msg = lines[0]
    for m in must_mention:
        assert m in msg, f"message does not name {m!r}: {msg}"
