"""Running one hostile case's read on the host or on a device, in this process or in a child process (special
files that could block, bombs under an address-space limit), and checking the outcome against the expectation.

Also a script: `python hostile_run.py '<json request>'` is the child; it prints one JSON line.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# The modes (the test module and conftest read them here: "from conftest import" is ambiguous when pytest
# collects several test folders at once).
FULL = os.environ.get("ZGPU_HOSTILE", "") == "full"
DEVICE = os.environ.get("ZGPU_HOSTILE_DEVICE") or None


class Recorder:
    """Counts per family: cases, host errors, device errors, agreements, failures; memory peaks."""

    def __init__(self) -> None:
        self.families: dict = {}
        self.memory: list = []

    def add(self, family: str, host_kind: str, dev_kind: str = "", agree: bool = True, ok: bool = True) -> None:
        f = self.families.setdefault(family, {"cases": 0, "host_errors": 0, "host_ok": 0, "device_cases": 0,
                                              "device_errors": 0, "device_ok": 0, "agreements": 0,
                                              "unexpected": 0})
        f["cases"] += 1
        f["host_errors" if host_kind != "ok" else "host_ok"] += 1
        if dev_kind:
            f["device_cases"] += 1
            f["device_errors" if dev_kind != "ok" else "device_ok"] += 1
            f["agreements"] += 1 if agree else 0
        f["unexpected"] += 0 if ok else 1


RECORDER = Recorder()


@dataclass
class Outcome:
    kind: str                       # ok | error | timeout | crash
    cls: str = ""
    msg: str = ""
    values: Optional[np.ndarray] = None
    info: Optional[Dict[str, Any]] = None  # what a child measured (memory)

    def short(self) -> str:
        if self.kind == "ok":
            return "ok"
        return "%s %s: %s" % (self.kind, self.cls, self.msg[:300])


def _encode_select(sel: Any) -> Any:
    if sel is Ellipsis:
        return None
    return [[s.start, s.stop] for s in sel]


def _decode_select(sel: Any) -> Any:
    if sel is None:
        return Ellipsis
    return tuple(slice(a, b) for a, b in sel)


# ZGPU_HOSTILE_DEVICE=host-twin: the "device" path is a second host read, to test this runner's device mode
# (agreement checks, counts, children) on a machine without a GPU.
TWIN = "host-twin"


def _to_host(d: Any) -> np.ndarray:
    import cupy
    return cupy.asnumpy(cupy.asarray(d))


def read_once(array: str, select: Any, device: Optional[str], confine: bool) -> Outcome:
    """Opens and reads in this process; an exception of any kind becomes an error outcome named by its class."""
    import zgpu
    if confine:
        zgpu.config.set(confine_to_store=True)
    try:
        a = zgpu.open_array(array)
        try:
            if device is None or device == TWIN:
                v = np.asarray(a.read(select))
            else:
                v = _to_host(a.read(select, device=device))
        finally:
            a.close()
        return Outcome("ok", values=v)
    except Exception as e:  # noqa: BLE001 - every exception is an outcome to check
        return Outcome("error", type(e).__name__, str(e))
    finally:
        if confine:
            zgpu.config.set(confine_to_store=False)


def read_in_child(array: str, select: Any, device: Optional[str], confine: bool, child: Dict[str, Any],
                  workdir: str) -> Outcome:
    """Reads in a child process with a timeout (a FIFO must not block the suite) and, for bombs on the host, an
    address-space limit a little above what the child had after a clean warm-up read."""
    req = {"array": array, "select": _encode_select(select), "device": device, "confine": confine,
           "rlimit_extra": child.get("rlimit_extra") if device is None else None, "nofile": child.get("nofile"),
           "npy": os.path.join(workdir, "child-values-%s.npy" % ("host" if device is None else "device"))}
    env = dict(os.environ)
    env["MALLOC_ARENA_MAX"] = "2"  # glibc reserves 64 MiB of address space per arena: keep the baseline honest
    if device is None:
        # the host read of a CUDA build under an address-space limit: no CUDA context (it reserves gigabytes)
        env["CUDA_VISIBLE_DEVICES"] = ""
    t0 = time.time()
    try:
        r = subprocess.run([sys.executable, os.path.join(HERE, "hostile_run.py"), json.dumps(req)],
                           capture_output=True, text=True, timeout=child.get("timeout", 30), env=env)
    except subprocess.TimeoutExpired:
        return Outcome("timeout", "Timeout", "no answer in %s s (blocked?)" % child.get("timeout", 30))
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    if r.returncode != 0 or not lines:
        return Outcome("crash", "exit %d" % r.returncode, (r.stderr or r.stdout)[-2000:])
    res = json.loads(lines[-1])
    res["seconds"] = round(time.time() - t0, 3)
    if res["kind"] == "ok":
        return Outcome("ok", values=np.load(req["npy"]), info=res)
    return Outcome(res["kind"], res["cls"], res["msg"], info=res)


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def child_main(req: Dict[str, Any]) -> None:
    import zgpu
    # bombs read under an address-space limit on one thread: a pool thread that first allocates during the read
    # (not in the warm-up, which reads one chunk on whichever thread takes it) would reserve a 64 MiB malloc arena
    # past the limit, and fail the read with an out-of-memory error that is not the bomb's
    zgpu.config.set(num_threads=1 if req.get("rlimit_extra") else 2)
    select = _decode_select(req["select"])
    info: Dict[str, Any] = {}
    if req.get("rlimit_extra"):
        # warm up: the pool's threads and the library's allocations exist before the limit is measured
        try:
            w = zgpu.open_array(req["array"])
            w.read((slice(0, 1),) * w.ndim)
            w.close()
        except Exception:  # noqa: BLE001 - the warm-up only prepares; the read below is what is checked
            pass
        vm = _status_kib("VmSize") * 1024
        limit = vm + int(req["rlimit_extra"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        info.update(vm_before=vm, rlimit_as=limit)
    # peak RSS of the read alone: the kernel's high-water mark reset (clear_refs 5) just before it
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    gpu = req.get("device") not in (None, TWIN)
    if gpu:
        # the GPU decoders are what the device mode checks: the cost model would send these small reads to the host
        zgpu.config.set(read_route="device")
        # warm up on the device too (context, buffer sets), then what the GPU has free: buffers a read grows
        # stay with the context, so the free memory after the read shows what a bomb made zgpu allocate
        import cupy
        try:
            w = zgpu.open_array(req["array"])
            w.read((slice(0, 1),) * w.ndim, device=req["device"])
            w.close()
        except Exception:  # noqa: BLE001 - the warm-up only prepares
            pass
        free0 = cupy.cuda.runtime.memGetInfo()[0]
    if req.get("nofile"):
        # `nofile` descriptors free above the highest one open now (stdio, Python's, and on the device CUDA's:
        # the limit comes after the device warm-up, since the CUDA runtime cannot start under it)
        import glob
        used = [int(os.path.basename(p)) for p in glob.glob("/proc/self/fd/*")]
        n = max(used) + 1 + int(req["nofile"])
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        info.update(nofile_limit=n, fds_open=len(used))
    reset = True
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        reset = False  # no reset: the high-water mark would include the imports; no peak then
    rss0 = _status_kib("VmRSS") * 1024
    t0 = time.time()
    out = read_once(req["array"], select, req.get("device"), bool(req.get("confine")))
    info.update(read_seconds=round(time.time() - t0, 3), rss_before=rss0, peak_rss=_status_kib("VmHWM") * 1024,
                maxrss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    info["peak_growth"] = info["peak_rss"] - rss0 if reset else None
    if gpu:
        info["gpu_growth"] = free0 - cupy.cuda.runtime.memGetInfo()[0]
    if out.kind == "ok":
        np.save(req["npy"], out.values)
    info.update(kind=out.kind, cls=out.cls, msg=out.msg)
    print(json.dumps(info))
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------------------------------
def check_expected(case: Any, out: Outcome, array: str) -> List[str]:
    """The ways `out` differs from the case's expectation (empty: as expected)."""
    bad: List[str] = []
    if out.kind in ("timeout", "crash"):
        return ["%s: %s" % (out.kind, out.msg)]
    if case.expect == "ok":
        if out.kind != "ok":
            return ["expected success, got %s" % out.short()]
        want = case.values(array)
        if out.values.shape != want.shape or not np.array_equal(out.values, want):
            diff = int(np.count_nonzero(out.values != want)) if out.values.shape == want.shape else -1
            bad.append("values differ from the expected ones (%d elements)" % diff)
        return bad
    if out.kind == "ok":
        if case.expect == "error":
            return ["expected %s, got success (damage accepted)" % "/".join(case.errors)]
        if case.expect == "same":
            want = case.values(array)
            if out.values.shape != want.shape or not np.array_equal(out.values, want):
                return ["expected %s or the clean values, got success with other values (damage accepted)"
                        % "/".join(case.errors)]
        return []  # either: undetectable damage read without an error
    if out.cls not in case.errors:
        bad.append("expected %s, got %s" % ("/".join(case.errors), out.short()))
    for n in case.names:
        if "'%s'" % n not in out.msg and n not in out.msg:
            bad.append("message does not name %r: %s" % (n, out.msg[:300]))
    if case.any_name and not any(n in out.msg for n in case.any_name):
        bad.append("message names none of the codecs %s: %s" % (list(case.any_name), out.msg[:300]))
    return bad


# Damage the host's library decodes (to wrong values) and the device rightly rejects, by the device's message:
# - a zstd Huffman literals stream not read exactly to its start: RFC 8878 section 4.2.2 calls such a stream
#   faulty; libzstd's fast 4-stream decoder skips that check (tests/unit/test_zstd_decode.c shows both);
# - an LZ4 match offset of 0, which the LZ4 block format forbids and liblz4 1.9 copies unwritten output for.
DEVICE_STRICTER = ("a Huffman literals stream does not decode to its literal count", "match offset 0")


def check_agree(host: Outcome, dev: Outcome) -> List[str]:
    """Device against host: same outcome class, never accepting what the host rejects, equal values."""
    if dev.kind in ("timeout", "crash"):
        return ["device %s: %s" % (dev.kind, dev.msg)]
    if host.kind == "error" and dev.kind == "ok":
        return ["device ACCEPTED what the host rejects (%s)" % host.short()]
    if host.kind == "ok" and dev.kind != "ok":
        if dev.kind == "error" and any(m in dev.msg for m in DEVICE_STRICTER):
            return []  # the device is right and the host library lenient (DEVICE_STRICTER says why)
        return ["device rejected what the host reads: %s" % dev.short()]
    if host.kind == "ok":
        if host.values.shape != dev.values.shape or not np.array_equal(host.values, dev.values):
            return ["device values differ from the host's"]
        return []
    if host.cls != dev.cls:
        return ["device error class %s, host %s (%s)" % (dev.cls, host.cls, dev.msg[:200])]
    return []


if __name__ == "__main__":
    child_main(json.loads(sys.argv[1]))
