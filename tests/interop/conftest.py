"""Shared pieces of the interop tests: the zgpu CLI runner, the fixture arrays, comparisons."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import warnings
import zlib

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import gen_fixtures  # noqa: E402

CLI_TIMEOUT_S = 120  # a hang is a failure, not a stuck CI job


def _sample():
    """ZGPU_TEST_SAMPLE=1/N or 1/N:SEED (tests/unit/sampling.h's rule): (N, SEED), or None to run every case. A
    malformed value is an error: a suite that silently ran nothing would pass."""
    v = os.environ.get("ZGPU_TEST_SAMPLE", "")
    if not v:
        return None
    m = re.fullmatch(r"1/(\d+)(?::(\d+))?", v)
    if not m or int(m.group(1)) < 1:
        raise pytest.UsageError(f"ZGPU_TEST_SAMPLE must be 1/N or 1/N:SEED (N >= 1), got {v!r}")
    return int(m.group(1)), int(m.group(2)) if m.group(2) else int(time.time() * 1000) % 1000003


def pytest_collection_modifyitems(config, items):
    """`make test` runs about one in N of the tests marked `sampled` (the region reads: 810 CLI processes, the
    longest part of the Python stages on the 2-core machine), a different sample each run; `make test-long` runs
    all. Every fixture is still read whole and described by `zgpu info`."""
    s = _sample()
    if not s or s[0] == 1:
        return
    n, seed = s
    keep, drop = [], []
    for it in items:
        sampled = it.get_closest_marker("sampled") is not None
        (drop if sampled and zlib.crc32(f"{seed}:{it.nodeid}".encode()) % n else keep).append(it)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    config._zgpu_sample = (n, seed, len(drop))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    s = getattr(config, "_zgpu_sample", None)
    if s:
        terminalreporter.write_line(f"sampled tests: about 1 in {s[0]} ran, {s[2]} left out (seed {s[1]}: "
                                    f"ZGPU_TEST_SAMPLE=1/{s[0]}:{s[1]} repeats this sample; unset runs all)")


def pytest_configure(config):
    config.addinivalue_line("markers", "sampled: one of many like cases; ZGPU_TEST_SAMPLE=1/N runs about 1 in N")
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
