"""The public namespace (issue 21, 'install like a Python package'): only the API in dir(zgpu), every public name
documented, one version."""
from __future__ import annotations

import inspect
import types

import pytest

import zgpu

SUBMODULES = {"array", "attrs", "dask", "errors", "group", "ome", "torch", "xarray", "zarr"}  # (as imported so far)


def test_no_helpers_in_the_namespace():
    extra = {n for n in dir(zgpu) if not n.startswith("_")} - set(zgpu.__all__) - SUBMODULES
    assert not extra, "not part of the API: %r" % sorted(extra)
    for n in ("os", "Any", "Dict", "Union", "annotations", "build_document", "open_node"):
        assert not hasattr(zgpu, n), n


def test_every_public_name_documented():
    missing = []
    for n in zgpu.__all__:
        obj = getattr(zgpu, n)
        if isinstance(obj, (types.FunctionType, type, types.ModuleType)) and not inspect.getdoc(obj):
            missing.append(n)
        if isinstance(obj, type) and not issubclass(obj, Exception):
            for m, v in vars(obj).items():
                if not m.startswith("_") and (callable(v) or isinstance(v, property)) and not inspect.getdoc(v):
                    missing.append("%s.%s" % (n, m))
    assert not missing, "undocumented: %r" % missing


def test_one_version():
    assert zgpu.__version__ == zgpu.library_version()  # the package and its C library move together
    from importlib.metadata import PackageNotFoundError, version
    try:
        installed = version("zgpu")
    except PackageNotFoundError:
        pytest.skip("the zgpu package is not installed (run from a checkout)")
    assert installed == zgpu.__version__


def test_console_script(tmp_path):
    """pip installs the `zgpu` command beside the Python that has the package (make test installs it)."""
    import os
    import subprocess
    import sys
    exe = os.path.join(os.path.dirname(sys.executable), "zgpu")
    if not os.path.isfile(exe):
        pytest.skip("the zgpu package is not installed here with its console script")
    a = zgpu.create(str(tmp_path / "a.zarr"), shape=(6, 4), dtype="u2", chunks=(3, 4))
    # (the installed package, not a checkout on PYTHONPATH)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ZGPU_LIB")}
    r = subprocess.run([exe, "info", a.path], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "[6, 4]" in r.stdout and "uint16" in r.stdout, (r.returncode, r.stdout, r.stderr)
