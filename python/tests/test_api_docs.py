"""The Python API reference (docs/api/python.md) is what scripts/gen-api-docs.py writes from the docstrings now, and
every public name has a docstring. Regenerate it with `make api-docs`.

Runs where the checkout is at hand (make test-python); a copy of the tests beside an installed wheel skips it.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "scripts" / "gen-api-docs.py"
REFERENCE = ROOT / "docs" / "api" / "python.md"


@pytest.fixture(scope="module")
def generated():
    # python/tests of a checkout only: a copy of the tests run against a wheel (make test-wheel) documents that
    # wheel's zgpu, built from whatever the checkout held then
    if Path(__file__).resolve().parent.parent.name != "python" or not SCRIPT.exists() or not REFERENCE.exists():
        pytest.skip("not in a zgpu checkout's python/tests (no scripts/gen-api-docs.py or docs/api/python.md)")
    for mod in ("zarr", "xarray", "dask"):  # zgpu.zarr, zgpu.xarray and zgpu.dask import them
        pytest.importorskip(mod)
    spec = importlib.util.spec_from_file_location("gen_api_docs", SCRIPT)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen.generate()  # documents the zgpu imported here


def test_every_public_name_has_a_docstring(generated):
    _, missing = generated
    assert not missing, "public names without a docstring: %s" % ", ".join(missing)


def test_reference_is_current(generated):
    text, _ = generated
    current = REFERENCE.read_text()
    if current != text:
        import difflib
        diff = "".join(list(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                                 "docs/api/python.md", "generated", n=1))[:60])
        pytest.fail("docs/api/python.md is out of date: run `make api-docs`\n" + diff)
