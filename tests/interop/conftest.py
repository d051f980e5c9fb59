"""Shared pieces of the interop tests: the zgpu CLI runner, the fixture arrays, comparisons."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import gen_fixtures  # noqa: E402

CLI_TIMEOUT_S = 120  # a hang is a failure, not a stuck CI job


def pytest_configure(config):
    # zarr-python warns about numcodecs codecs in v3 metadata and about v2 details; not our concern here.
    config.addinivalue_line("filterwarnings", "ignore::UserWarning")
    config.addinivalue_line("filterwarnings", "ignore::RuntimeWarning")
    config.addinivalue_line("filterwarnings", "ignore::FutureWarning")
    warnings.filterwarnings("ignore", category=UserWarning)


def cli_path() -> str:
    return os.environ.get("ZGPU_CLI") or os.path.join(ROOT, "build", "bin", "zgpu")


class Zgpu:
    """Runs the CLI; every call returns the CompletedProcess (text mode)."""

    def __init__(self, exe: str):
        self.exe = exe

    def __call__(self, *args, timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
        cmd = [self.exe] + [str(a) for a in args]
        try:
            return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"zgpu hung (> {timeout} s): {' '.join(cmd)}")

    def ok(self, *args, **kw) -> subprocess.CompletedProcess:
        r = self(*args, **kw)
        assert r.returncode == 0, (f"zgpu {' '.join(map(str, args))} exited {r.returncode}\n"
                                   f"stdout: {r.stdout}\nstderr: {r.stderr}")
        return r


@pytest.fixture(scope="session")
def zgpu() -> Zgpu:
    exe = cli_path()
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        pytest.fail(f"zgpu CLI not found at {exe}: run `make build` first (or set ZGPU_CLI)")
    return Zgpu(exe)


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory):
    return tmp_path_factory.mktemp("fixtures")


@pytest.fixture(scope="session")
def fixture_paths(fixture_root) -> dict[str, str]:
    """All fixture arrays, written once per session by zarr-python."""
    return gen_fixtures.generate(str(fixture_root))
