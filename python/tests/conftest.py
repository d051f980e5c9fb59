"""Shared fixtures for the zgpu Python tests.

The package is imported from the installed copy (make test pip-installs ./python) or, on a development
machine, from the source tree with PYTHONPATH=python and ZGPU_LIB=/path/to/libzgpu.so.
"""
from __future__ import annotations

import pytest


@pytest.fixture
def zarr():
    return pytest.importorskip("zarr")
