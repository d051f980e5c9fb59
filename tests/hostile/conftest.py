"""tests/hostile: the modes (fast subset / full, host / device), the shared base arrays, and the counts printed at
the end and written to $ZGPU_HOSTILE_JSON.

  ZGPU_HOSTILE=full            every case (make test-long); default: the fast subset (make test)
  ZGPU_HOSTILE_DEVICE=cuda:0   also read every case into GPU memory (CuPy) and compare with the host's read
                               (host-twin: a second host read instead, to check the runner without a GPU)
  ZGPU_HOSTILE_JSON=path       write the counts (per family and path) there
"""
from __future__ import annotations

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hostile_cases  # noqa: E402
from hostile_run import DEVICE, FULL, RECORDER  # noqa: E402



def pytest_addoption(parser):
    parser.addoption("--device", default=None, help="also read every case on this device (e.g. cuda:0)")


@pytest.fixture(scope="session")
def device(request):
    dev = request.config.getoption("--device") or DEVICE
    if dev == "host-twin":
        return dev  # the runner's own check: a second host read stands for the device
    if dev:
        import zgpu
        if not zgpu.gpu_available():
            pytest.fail("device mode (%s) asked for, but the zgpu library has no usable GPU" % dev)
        try:
            import cupy  # noqa: F401
        except ImportError:
            pytest.fail("device mode needs CuPy")
    return dev


@pytest.fixture(scope="session")
def builder(tmp_path_factory):
    return hostile_cases.Builder(str(tmp_path_factory.mktemp("hostile-base")), hostile_cases.bomb_bytes(FULL))


@pytest.fixture(scope="session")
def recorder():
    return RECORDER


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    fams = RECORDER.families
    if not fams:
        return
    tr = terminalreporter
    mode = ("full" if FULL else "fast subset") + (", device " + str(config.getoption("--device") or DEVICE)
                                                  if (config.getoption("--device") or DEVICE) else ", host only")
    tr.section("hostile input: cases per family (%s)" % mode)
    tot: dict = {}
    for name in sorted(fams):
        f = fams[name]
        for k, v in f.items():
            tot[k] = tot.get(k, 0) + v
        tr.write_line("%-9s cases %5d  host: %5d errors %5d ok  device: %5d cases %5d errors %5d ok %5d agree  "
                      "unexpected %d" % (name, f["cases"], f["host_errors"], f["host_ok"], f["device_cases"],
                                         f["device_errors"], f["device_ok"], f["agreements"], f["unexpected"]))
    tr.write_line("%-9s cases %5d  host: %5d errors %5d ok  device: %5d cases %5d errors %5d ok %5d agree  "
                  "unexpected %d" % ("total", tot["cases"], tot["host_errors"], tot["host_ok"], tot["device_cases"],
                                     tot["device_errors"], tot["device_ok"], tot["agreements"], tot["unexpected"]))
    worst = max(RECORDER.memory, key=lambda m: m.get("peak_growth") or 0, default=None)
    if worst:
        peak = ("%.1f MiB" % (worst["peak_growth"] / 2 ** 20) if worst.get("peak_growth") is not None
                else "not measured (no /proc/self/clear_refs)")
        tr.write_line("memory: worst bomb %s: peak RSS of the read %s above the RSS before it (address-space limit "
                      "%.0f MiB above the baseline), %s" % (worst["case"], peak, worst.get("rlimit_extra", 0) / 2 ** 20,
                                                            worst.get("outcome", "")))
    gpu = [m for m in RECORDER.memory if m.get("gpu_growth") is not None]
    if gpu:
        g = max(gpu, key=lambda m: m["gpu_growth"])
        tr.write_line("memory: worst bomb on the device %s: GPU memory in use grew %.1f MiB over the read, %s"
                      % (g["case"], g["gpu_growth"] / 2 ** 20, g.get("device_outcome", "")))
    path = os.environ.get("ZGPU_HOSTILE_JSON")
    if path:
        with open(path, "w") as f:
            json.dump({"mode": mode, "families": fams, "total": tot, "memory": RECORDER.memory,
                       "worst_memory": worst}, f, indent=1)
        tr.write_line("counts written to %s" % path)
