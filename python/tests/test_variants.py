"""Which library zgpu loads where CUDA plugin wheels (zgpu-cuda13 / zgpu-cuda12, `pip install zgpu[cu13]`) are
installed: the choice made by zgpu._capi, with stand-in plugin modules (no GPU, no wheel needed; the wheels
themselves are tested by make test-wheel-cuda)."""
from __future__ import annotations

import sys
import types

import pytest

import zgpu
from zgpu import _capi


def _plugin(monkeypatch, name, version=None):
    mod = types.ModuleType(name)
    mod.__version__ = zgpu.__version__ if version is None else version
    mod.CUDA_MAJOR = int(name[len("zgpu_cuda"):])
    mod.library_path = lambda: "/nonexistent/%s/_lib/libzgpu.so" % name
    monkeypatch.setitem(sys.modules, name, mod)
    return mod


@pytest.fixture
def no_plugins(monkeypatch):
    """No plugin importable (a real one installed beside this zgpu is hidden), no ZGPU_VARIANT."""
    monkeypatch.delenv("ZGPU_VARIANT", raising=False)
    for name in ("zgpu_cuda13", "zgpu_cuda12"):
        monkeypatch.setitem(sys.modules, name, None)  # (None in sys.modules: import raises ImportError)
    monkeypatch.setattr(_capi, "_driver_cuda_version", lambda: 0)


def test_none_installed(no_plugins):
    assert _capi._cuda_plugins() == []


def test_cuda13_first_by_default(no_plugins, monkeypatch):
    p13, p12 = _plugin(monkeypatch, "zgpu_cuda13"), _plugin(monkeypatch, "zgpu_cuda12")
    assert _capi._cuda_plugins() == [p13, p12]
    monkeypatch.setattr(_capi, "_driver_cuda_version", lambda: 13000)
    assert _capi._cuda_plugins() == [p13, p12]


def test_cuda12_first_under_a_cuda12_driver(no_plugins, monkeypatch):
    p13, p12 = _plugin(monkeypatch, "zgpu_cuda13"), _plugin(monkeypatch, "zgpu_cuda12")
    monkeypatch.setattr(_capi, "_driver_cuda_version", lambda: 12080)
    assert _capi._cuda_plugins() == [p12, p13]


def test_variant_picks_one(no_plugins, monkeypatch):
    _plugin(monkeypatch, "zgpu_cuda13")
    p12 = _plugin(monkeypatch, "zgpu_cuda12")
    monkeypatch.setenv("ZGPU_VARIANT", "cu12")
    assert _capi._cuda_plugins() == [p12]
    monkeypatch.setenv("ZGPU_VARIANT", "cpu")
    assert _capi._cuda_plugins() == []


def test_variant_not_installed(no_plugins, monkeypatch):
    monkeypatch.setenv("ZGPU_VARIANT", "cu13")
    with pytest.raises(ImportError, match=r"zgpu\[cu13\]"):
        _capi._cuda_plugins()


def test_variant_misspelt(no_plugins, monkeypatch):
    p13 = _plugin(monkeypatch, "zgpu_cuda13")
    monkeypatch.setenv("ZGPU_VARIANT", "cuda13")
    with pytest.warns(RuntimeWarning, match="ZGPU_VARIANT"):
        assert _capi._cuda_plugins() == [p13]


def test_other_version_skipped(no_plugins, monkeypatch):
    _plugin(monkeypatch, "zgpu_cuda13", version="0.0.0-other")
    with pytest.warns(RuntimeWarning, match="cannot use zgpu_cuda13"):
        assert _capi._cuda_plugins() == []


def test_candidates_order(no_plugins, monkeypatch):
    """ZGPU_LIB first, then the plugins' libraries, then the package's own."""
    _plugin(monkeypatch, "zgpu_cuda13")
    monkeypatch.setenv("ZGPU_LIB", "/x/libzgpu.so")
    c = [str(p) for p in _capi._candidates()]
    assert c[0] == "/x/libzgpu.so"
    assert c[1] == "/nonexistent/zgpu_cuda13/_lib/libzgpu.so"
    assert c[2].endswith("zgpu/_lib/libzgpu.so")
