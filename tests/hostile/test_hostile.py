"""The hostile-input suite (issue 25): damaged and malicious inputs for every codec set-up, format and store, each
with its expected clean error (hostile_cases.py says what each family holds and what it expects).

Fast subset by default; ZGPU_HOSTILE=full for every case; ZGPU_HOSTILE_DEVICE=cuda:0 (or --device cuda:0) reads
every case on the host and into GPU memory and checks that the device agrees: same outcome class, never accepting
what the host rejects, equal values when both succeed.

PENDING lists the cases that fail today because their fix has not landed: each is an xfail(strict=True), so a
fix that lands makes its case XPASS and fail the run until its line is removed here.
"""
from __future__ import annotations

import fnmatch
import os
from typing import Dict, List

import pytest

import hostile_cases
from hostile_run import DEVICE, FULL, Outcome, check_agree, check_expected, read_in_child, read_once

# case id pattern (fnmatch) -> the fix it waits for, e.g. "store/fifo-as-*": "fs.c: refuse special files".
# PENDING: failures of the host path (xfail in every mode); DEVICE_PENDING: failures only in device mode (fill it
# from a run of scripts/gpu/hostile.sh). Both empty on 2026-11-26: every case passes on the host with the fixes
# of issue 25 in the tree (bounded decodes, special files, strict metadata, confinement).
PENDING: Dict[str, str] = {}
DEVICE_PENDING: Dict[str, str] = {}

# A bomb's read may add this much to the peak RSS: the decoders' fixed state (bz2's 900 kB blocks take ~4 MiB)
# and a few times the 4 KiB chunk; an unbounded decode of the bomb (256 MiB, 1 GiB in full) is far above.
MEMORY_BOUND = 24 << 20
# On the device: what a bomb's read may leave allocated beyond a clean read's buffers (a bomb decoded in full is
# 256 MiB, 1 GiB in full mode).
GPU_MEMORY_BOUND = 64 << 20

CASES = [c for c in hostile_cases.all_cases(FULL) if FULL or c.fast]


def _pending(case_id: str) -> List[str]:
    table = dict(PENDING)
    if DEVICE:
        table.update(DEVICE_PENDING)
    return [reason for pat, reason in table.items() if fnmatch.fnmatchcase(case_id, pat)]


def _params():
    out = []
    for c in CASES:
        reasons = _pending(c.id)
        marks = [pytest.mark.xfail(strict=True, reason="pending: " + "; ".join(reasons))] if reasons else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def _read(case, array: str, device, workdir: str) -> Outcome:
    if case.child:
        return read_in_child(array, case.select, device, case.confine, case.child, workdir)
    return read_once(array, case.select, device, case.confine)


def _run_one(case, array: str, device, workdir: str, recorder, family: str, label: str) -> List[str]:
    """Reads on the host (and the device), checks, records; returns the problems found."""
    host = _read(case, array, None, workdir)
    problems = ["host: " + p for p in check_expected(case, host, array)]
    dev_kind, agree, dev = "", True, None
    if device:
        dev = _read(case, array, device, workdir)
        dev_kind = dev.kind
        dp = check_agree(host, dev)
        agree = not dp
        problems += ["device: " + p for p in dp]
        # the device must meet the expectation itself too (an error class and message naming the chunk)
        problems += ["device: " + p for p in check_expected(case, dev, array) if not dp]
    if case.family == "memory" and host.info:
        entry = dict(host.info, case=case.id, outcome=host.short()[:160],
                     rlimit_extra=case.child.get("rlimit_extra", 0))
        if host.info["peak_growth"] is not None and host.info["peak_growth"] > MEMORY_BOUND:
            problems.append("host: the read's peak RSS grew %.1f MiB (bound %d MiB)"
                            % (host.info["peak_growth"] / 2 ** 20, MEMORY_BOUND >> 20))
        if device and dev.info:
            entry.update(device_peak_growth=dev.info.get("peak_growth"), gpu_growth=dev.info.get("gpu_growth"),
                         device_outcome=dev.short()[:160])
            if (dev.info.get("gpu_growth") or 0) > GPU_MEMORY_BOUND:
                problems.append("device: GPU memory in use grew %.1f MiB over the read (bound %d MiB)"
                                % (dev.info["gpu_growth"] / 2 ** 20, GPU_MEMORY_BOUND >> 20))
        recorder.memory.append(entry)
    recorder.add(family, host.kind, dev_kind, agree, not problems)
    return ["%s: %s" % (label, p) for p in problems]


@pytest.mark.parametrize("case", _params())
def test_hostile(case, tmp_path, builder, recorder, device):
    if case.skip_root and os.geteuid() == 0:
        pytest.skip("root reads files whatever their permissions")
    case.build(str(tmp_path), builder)
    array = str(tmp_path / case.array_dir)
    try:
        if case.sweep is None:
            problems = _run_one(case, array, device, str(tmp_path), recorder, case.family, case.id)
        else:
            problems = []
            subs = case.sweep(str(tmp_path), builder)
            assert subs, "a sweep without offsets checks nothing"
            for name, damage in subs:
                damage(array)
                problems += _run_one(case, array, device, str(tmp_path), recorder, case.family,
                                     "%s/%s" % (case.id, name))
    finally:
        _make_removable(str(tmp_path))
    assert not problems, "%d problem(s):\n%s" % (len(problems), "\n".join(problems[:20]))


def _make_removable(d: str) -> None:
    """Cases leave unreadable files and special files behind: make pytest's clean-up of tmp_path work."""
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            if not os.path.islink(p):
                try:
                    os.chmod(p, 0o755)
                except OSError:
                    pass


def test_every_family_and_setup_in_this_run():
    """The subset that runs covers every family, every codec set-up and every kind of chunk damage."""
    families = {c.family for c in CASES}
    assert families == {"chunk", "checksum", "blosc", "shard", "metadata", "store", "memory"}, families
    chunk_setups = {c.setup for c in CASES if c.family == "chunk"}
    assert chunk_setups == {s.name for s in hostile_cases.SETUPS}
    kinds = {c.id.rsplit("/", 1)[1] for c in CASES if c.family == "chunk"}
    assert {d[0] for d in hostile_cases.CHUNK_DAMAGES} <= kinds
    blosc = {s.name for s in hostile_cases.SETUPS if s.fmt.startswith("blosc") or s.fmt == "shard:blosc"}
    assert {c.setup for c in CASES if c.family == "blosc"} == blosc
    assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"


def test_bombs_are_valid_streams():
    """The bombs decode (with the standard library where it can) to what they claim: a check that the memory
    family tests decoders against real bombs, not against garbage any decoder rejects at once."""
    import bz2
    import zlib
    n = 8 << 20
    assert zlib.decompress(hostile_cases.zlib_bomb(n)) == bytes(n)
    assert zlib.decompress(hostile_cases.gzip_bomb(n), 31) == bytes(n)
    assert bz2.decompress(hostile_cases.bz2_bomb(n)) == bytes(n)
    lz = hostile_cases.lz4_bomb(n)
    assert int.from_bytes(lz[:4], "little") == n and len(lz) < n // 200
    z = hostile_cases.zstd_rle_bomb(n)
    assert len(z) == 4 + 2 + 4 * (n >> 17)


def test_runner_checks_can_fail():
    """The checks themselves: each kind of wrong outcome is reported (a check that cannot fail checks nothing)."""
    import numpy as np
    s = hostile_cases.SETUP_BY_NAME["v3-zstd"]
    err = Outcome("error", "CorruptDataError", "array 'a', chunk 'c/1/1': codec 'zstd': zstd: bad")
    clean = hostile_cases.base_data()
    ok_clean = Outcome("ok", values=clean)
    ok_other = Outcome("ok", values=clean + 1)
    case = hostile_cases.Case("x", "chunk", s.name, lambda d, b: None, "error", names=(s.key,), any_name=s.codecs)
    assert check_expected(case, err, "") == []
    assert check_expected(case, ok_clean, "")                               # damage accepted
    assert check_expected(case, Outcome("error", "BadMetadataError", err.msg), "")  # wrong class
    assert check_expected(case, Outcome("error", "CorruptDataError", "codec 'zstd'"), "")  # no chunk key
    assert check_expected(case, Outcome("error", "CorruptDataError", "chunk 'c/1/1'"), "")  # no codec
    assert check_expected(case, Outcome("timeout", "Timeout", "blocked"), "")
    same = hostile_cases.Case("y", "chunk", s.name, lambda d, b: None, "same", names=(s.key,),
                              values=lambda _: clean)
    assert check_expected(same, ok_clean, "") == [] and check_expected(same, err, "") == []
    assert check_expected(same, ok_other, "")                               # accepted and changed
    want = hostile_cases.Case("z", "chunk", s.name, lambda d, b: None, "ok", values=lambda _: clean)
    assert check_expected(want, ok_other, "") and check_expected(want, err, "")
    assert check_agree(err, err) == [] and check_agree(ok_clean, ok_clean) == []
    assert check_agree(err, ok_clean)                                       # device accepts what the host rejects
    assert check_agree(ok_clean, err)
    assert check_agree(ok_clean, ok_other)                                  # values differ
    assert check_agree(err, Outcome("error", "ZgpuIOError", "x"))           # error class differs
    assert np.array_equal(ok_clean.values, clean)
