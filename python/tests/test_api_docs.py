"""The API references (docs/api/python.md, docs/api/c.md) are what scripts/gen-api-docs.py writes now from the
docstrings and the headers' comments, and every public Python name has a docstring. Regenerate them with
`make api-docs`.

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
    return gen.generate() + (gen.generate_c(),)  # documents the zgpu imported here, and the C headers


def test_every_public_name_has_a_docstring(generated):
    _, missing, _ = generated
    assert not missing, "public names without a docstring: %s" % ", ".join(missing)


@pytest.mark.parametrize("which", ["python", "c"])
def test_reference_is_current(generated, which):
    text = generated[0] if which == "python" else generated[2]
    path = REFERENCE.parent / ("%s.md" % which)
    current = path.read_text() if path.exists() else ""
    if current != text:
        import difflib
        diff = "".join(list(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                                 "docs/api/%s.md" % which, "generated", n=1))[:60])
        pytest.fail("docs/api/%s.md is out of date: run `make api-docs`\n%s" % (which, diff))
