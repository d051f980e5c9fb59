"""Faults while writing: kill -9 at random moments of `zgpu write --overwrite`, `zgpu cp` (to a new path and over an
existing array) and a Python mode="w" write; a full disk; a read-only subdirectory in the array being replaced.

After every fault, zgpu (the CLI) and zarr-python must read either the complete old array or the complete new one
(for a copy to a new path: no array at all), never a mix; the next writer of the path must leave no hidden leftovers
(.NAME.zgpu-stage-*, -old-*, -lock-*) behind.

Usage: faults.py ZGPU_CLI LIBZGPU   (run with the project's .venv: needs numpy and zarr)
Environment: ZGPU_FAULT_ROUNDS (kill -9 rounds per scenario, default 4; `make test-long`-style runs: 50 or more),
ZGPU_FAULT_SEED (the random seed, printed).
"""
from __future__ import annotations

import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import zarr

CLI, LIB = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROUNDS = int(os.environ.get("ZGPU_FAULT_ROUNDS", "4"))
SEED = int(os.environ.get("ZGPU_FAULT_SEED", str(random.randrange(1 << 30))))
rng = random.Random(SEED)
SHAPE, CHUNKS = (512, 2048), "64,256"

failures: list = []
counts: dict = {}


T0 = time.monotonic()


def note(text: str) -> None:
    print("[%5.1f s] %s" % (time.monotonic() - T0, text), flush=True)


def check(cond: bool, what: str) -> None:
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, **kw)


def leftovers(path: str) -> list:
    parent, name = os.path.split(path.rstrip("/"))
    return [e for e in os.listdir(parent) if e.startswith("." + name + ".zgpu-")]


def read_zgpu(path: str, work: str):
    """The array through the CLI (None if it does not open)."""
    out = os.path.join(work, "read.npy")
    r = run("read", path, "-o", out)
    if r.returncode != 0:
        return None
    return np.load(out)


def read_zarr(path: str):
    try:
        return zarr.open_array(path, mode="r")[...]
    except Exception:
        return None


def classify(path: str, work: str, old, new) -> str:
    """'old', 'new' or 'absent' when both readers agree on one of them; else what each reader saw."""
    seen = []
    for name, data in (("zgpu", read_zgpu(path, work)), ("zarr", read_zarr(path))):
        if data is None:
            seen.append("absent")
        elif old is not None and data.shape == old.shape and np.array_equal(data, old):
            seen.append("old")
        elif data.shape == new.shape and np.array_equal(data, new):
            seen.append("new")
        else:
            seen.append("%s: MIXED (shape %s)" % (name, data.shape))
    return seen[0] if seen[0] == seen[1] else " / ".join(seen)


def start(cmd: list, env, ready: bool) -> subprocess.Popen:
    """Starts a writer; ready: wait for its "go" line (a Python writer, once its imports are done)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if ready else subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    if ready:
        p.stdout.readline()
    return p


def kill_rounds(label: str, path: str, work: str, writer: list, old, new, restore, env=None,
                ready: bool = False) -> None:
    """Runs `writer` ROUNDS times, killing it with SIGKILL at a random moment of its run, and checks what readers
    see; `restore()` (a complete writer) puts the old state back, and must leave no leftovers."""
    restore()
    p = start(writer, env, ready)
    t = time.monotonic()
    p.wait()
    full = time.monotonic() - t
    check(p.returncode == 0, "%s: the uninterrupted writer failed" % label)
    restore()
    outcomes: dict = {}
    for i in range(ROUNDS):
        p = start(writer, env, ready)
        time.sleep(rng.uniform(0, full * 1.1))
        p.send_signal(signal.SIGKILL)
        p.wait()
        if leftovers(path):  # killed mid-write: its stage (or the old tree) is still there (an opener of an
            outcomes["killed mid-write"] = outcomes.get("killed mid-write", 0) + 1  # empty path cleans it)
        seen = classify(path, work, old, new)
        outcomes[seen] = outcomes.get(seen, 0) + 1
        allowed = ("old", "new") if old is not None else ("absent", "new")
        check(seen in allowed, "%s round %d: readers saw %s" % (label, i, seen))
        restore()  # the next writer of the path: cleans what the killed one left
        left = leftovers(path)
        check(not left, "%s round %d: leftovers after the next writer: %s" % (label, i, left))
    counts[label] = outcomes
    note("%-32s %d kills (full run %.2f s): %s" % (label, ROUNDS, full, outcomes))


def main() -> int:
    print("faults: seed %d (ZGPU_FAULT_SEED), %d rounds per scenario (ZGPU_FAULT_ROUNDS)" % (SEED, ROUNDS))
    work = tempfile.mkdtemp(prefix="zgpu_faults_")
    try:
        return scenarios(work)
    finally:
        subprocess.run(["chmod", "-R", "u+w", work], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def scenarios(work: str) -> int:
    n = SHAPE[0] * SHAPE[1]
    # every element differs between old and new: any mix of their chunks is visible
    old = (np.arange(n, dtype=np.int32) * 7 % 1000003).reshape(SHAPE)
    new = old + 1
    np.save(os.path.join(work, "old.npy"), old)
    np.save(os.path.join(work, "new.npy"), new)
    arr = os.path.join(work, "d", "arr.zarr")
    src_new = os.path.join(work, "src_new.zarr")
    subprocess.run([CLI, "write", src_new, os.path.join(work, "new.npy"), "--chunks", CHUNKS], check=True)

    def restore_old():
        r = run("write", arr, os.path.join(work, "old.npy"), "--chunks", CHUNKS, "--overwrite")
        check(r.returncode == 0, "restoring writer failed: " + r.stderr)

    # 1. zgpu write --overwrite
    kill_rounds("write --overwrite", arr, work,
                [CLI, "write", arr, os.path.join(work, "new.npy"), "--chunks", CHUNKS, "--overwrite"],
                old, new, restore_old)
    # 2. zgpu cp over an existing array
    kill_rounds("cp --overwrite (over an array)", arr, work,
                [CLI, "cp", src_new, arr, "--overwrite", "--chunks", "256,128", "-q"], old, new, restore_old)

    # 3. zgpu cp to a new path
    dst = os.path.join(work, "d", "copy.zarr")

    def restore_absent():
        # the next writer cleans the leftovers; then the path is emptied for the next round
        r = run("cp", src_new, dst, "-q", "--overwrite")
        check(r.returncode == 0, "cp after a kill failed: " + r.stderr)
        check(classify(dst, work, None, new) == "new", "cp after a kill: not the new array")
        shutil.rmtree(dst, ignore_errors=True)

    kill_rounds("cp (new path)", dst, work, [CLI, "cp", src_new, dst, "--chunks", "64,512", "-q"],
                None, new, restore_absent)

    # 4. Python mode="w" (the array commits when closed)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), ZGPU_LIB=LIB)
    code = ("import numpy as np, zgpu\n"
            "new = np.load(%r)\n"
            "print('go', flush=True)\n"
            "a = zgpu.open(%r, mode='w', shape=new.shape, dtype=new.dtype, chunks=(64, 256))\n"
            "for i in range(0, new.shape[0], 64):\n"
            "    a[i:i + 64] = new[i:i + 64]\n"
            "a.close()\n") % (os.path.join(work, "new.npy"), arr)
    kill_rounds("python mode='w'", arr, work, [sys.executable, "-c", code], old, new, restore_old, env, ready=True)

    # 5. a Python writer that raises: the with block discards the new array
    restore_old()
    bad = ("import numpy as np, zgpu\n"
           "new = np.load(%r)\n"
           "with zgpu.open(%r, mode='w', shape=new.shape, dtype=new.dtype, chunks=(64, 256)) as a:\n"
           "    a[:256] = new[:256]\n"
           "    raise RuntimeError('boom')\n") % (os.path.join(work, "new.npy"), arr)
    r = subprocess.run([sys.executable, "-c", bad], capture_output=True, text=True, env=env)
    check(r.returncode != 0 and "boom" in r.stderr, "python writer that raises: " + r.stderr[-300:])
    check(classify(arr, work, old, new) == "old", "python writer that raises: the old array did not stay")
    check(not leftovers(arr), "python writer that raises left %s" % leftovers(arr))
    # ... and an unhandled exception outside a with block discards it too (atexit)
    bad2 = bad.replace("with zgpu.open", "a = zgpu.open").replace(" as a:\n    a[:256]", "\na[:256]").replace(
        "\n    raise", "\nraise")
    r = subprocess.run([sys.executable, "-c", bad2], capture_output=True, text=True, env=env)
    check(r.returncode != 0 and "boom" in r.stderr, "python unhandled exception: " + r.stderr[-300:])
    check(classify(arr, work, old, new) == "old", "python unhandled exception: the old array did not stay")
    check(not leftovers(arr), "python unhandled exception left %s" % leftovers(arr))
    # ... while leaving the interpreter normally commits it
    ok_code = bad2.replace("\nraise RuntimeError('boom')\n", "\na[256:] = new[256:]\n")
    r = subprocess.run([sys.executable, "-c", ok_code], capture_output=True, text=True, env=env)
    check(r.returncode == 0, "python writer without close: " + r.stderr[-300:])
    check(classify(arr, work, old, new) == "new", "python writer without close: not committed at exit")
    note("python: a raising with block and an unhandled exception keep the old array; a normal exit commits")

    full_disk(work, old, new, arr)
    readonly_subdir(work, old, new)

    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("faults: all passed (%s)" % ", ".join("%s %s" % (k, v) for k, v in counts.items()))
    return 0


def full_disk(work: str, old, new, arr: str) -> None:
    """A write that runs out of room midway fails with exit 1 and leaves the old array and no leftovers."""
    rnd = np.random.default_rng(1).integers(0, 1 << 31, size=SHAPE, dtype=np.int32)  # incompressible chunks
    np.save(os.path.join(work, "rnd.npy"), rnd)

    # (a) RLIMIT_FSIZE: a file past the limit fails with EFBIG (SIGXFSZ ignored). Works for every user.
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (32 << 10, 32 << 10))

    subprocess.run([CLI, "write", arr, os.path.join(work, "old.npy"), "--chunks", CHUNKS, "--overwrite",
                    "--codec", "zstd"], check=True)
    r = subprocess.run([CLI, "write", arr, os.path.join(work, "rnd.npy"), "--chunks", CHUNKS, "--overwrite",
                        "--codec", "none"], capture_output=True, text=True, preexec_fn=limit)
    check(r.returncode == 1 and "File too large" in r.stderr, "RLIMIT_FSIZE write: rc %d %s" % (r.returncode, r.stderr))
    check(classify(arr, work, old, new) == "old", "RLIMIT_FSIZE write: the old array did not stay")
    check(not leftovers(arr), "RLIMIT_FSIZE write left %s" % leftovers(arr))
    note("full disk (RLIMIT_FSIZE, EFBIG): exit %d, old array intact, no leftovers" % r.returncode)

    # (b) a small tmpfs, where mounting one works (root in a container that allows it); else a visible skip
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    size_kb = rnd.nbytes * 3 // 2 >> 10  # room for one array, not two
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % size_kb, "tmpfs", mnt],
                                           capture_output=True).returncode != 0:
        print("skipped: full tmpfs (needs root and a mount that works here); RLIMIT_FSIZE above covers EFBIG")
        return
    try:
        small = os.path.join(mnt, "arr.zarr")
        r1 = run("write", small, os.path.join(work, "rnd.npy"), "--chunks", CHUNKS, "--codec", "none")
        check(r1.returncode == 0, "tmpfs: first write: " + r1.stderr)
        r = run("write", small, os.path.join(work, "old.npy"), "--chunks", CHUNKS, "--codec", "none", "--overwrite")
        check(r.returncode == 1 and "No space left" in r.stderr, "tmpfs full: rc %d %s" % (r.returncode, r.stderr))
        check(classify(small, work, rnd, new) == "old", "tmpfs full: the old array did not stay")
        check(not leftovers(small), "tmpfs full left %s" % leftovers(small))
        r = run("cp", small, os.path.join(mnt, "copy.zarr"), "-q")
        check(r.returncode == 1 and not os.path.exists(os.path.join(mnt, "copy.zarr")),
              "tmpfs full cp: rc %d, destination %s" % (r.returncode, os.listdir(mnt)))
        check(sorted(os.listdir(mnt)) == ["arr.zarr"], "tmpfs full cp left %s" % os.listdir(mnt))
        note("full disk (tmpfs of %d KiB): overwrite and cp exit 1, old array intact, no leftovers" % size_kb)
        # the root of a mount cannot be renamed: an empty one is written in place (metadata last), a node there is
        # not replaced (that could not be atomic), and a copy killed midway leaves no node
        r = run("write", mnt, os.path.join(work, "new.npy"), "--chunks", CHUNKS)
        check(r.returncode == 1, "write over a mount point holding files: rc %d" % r.returncode)
        subprocess.run(["umount", mnt], capture_output=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % size_kb, "tmpfs", mnt], check=True)
        src = os.path.join(work, "src_new.zarr")
        r = run("cp", src, mnt, "-q")
        check(r.returncode == 0 and classify(mnt, work, None, new) == "new", "cp onto an empty mount point: " + r.stderr)
        r = run("write", mnt, os.path.join(work, "old.npy"), "--chunks", CHUNKS, "--overwrite")
        check(r.returncode == 1 and "mount point" in r.stderr, "overwrite of a mount point: %s" % r.stderr)
        check(classify(mnt, work, None, new) == "new", "overwrite of a mount point: the array changed")
        subprocess.run(["umount", mnt], capture_output=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % size_kb, "tmpfs", mnt], check=True)
        p = subprocess.Popen([CLI, "cp", src, mnt, "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, 0.1))
        p.send_signal(signal.SIGKILL)
        p.wait()
        seen = classify(mnt, work, None, new)
        check(seen in ("absent", "new"), "cp onto a mount point, killed: readers saw %s" % seen)
        note("mount point: written in place (metadata last), never replaced; a killed cp left: %s" % seen)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


def readonly_subdir(work: str, old, new) -> None:
    """A read-only subdirectory of the array being replaced: the new array goes in whole; the old tree, which
    cannot be deleted, stays hidden (not a node) until a later writer can remove it. Root ignores the mode, so
    as root the writers run as 'nobody' (runuser / setpriv); without either the case is skipped, visibly."""
    base = os.path.join(work, "ro")
    os.mkdir(base)
    prefix: list = []
    if os.geteuid() == 0:
        for tool in (["runuser", "-u", "nobody", "--"], ["setpriv", "--reuid=65534", "--regid=65534",
                                                         "--clear-groups"]):
            if shutil.which(tool[0]):
                prefix = tool
                break
        if not prefix:
            print("skipped: read-only subdirectory (root, and neither runuser nor setpriv to drop privileges)")
            return
        os.chown(base, 65534, 65534)
        for f in ("old.npy", "new.npy"):
            os.chmod(os.path.join(work, f), 0o644)
        os.chmod(work, 0o755)
    arr = os.path.join(base, "arr.zarr")
    as_user = lambda *a: subprocess.run(prefix + [CLI, *a], capture_output=True, text=True)  # noqa: E731
    r = as_user("write", arr, os.path.join(work, "old.npy"), "--chunks", CHUNKS)
    if r.returncode != 0 and prefix:
        print("skipped: read-only subdirectory (the unprivileged user cannot run zgpu here: %s)" % r.stderr.strip())
        return
    check(r.returncode == 0, "read-only: first write: " + r.stderr)
    sub = os.path.join(arr, "c", "1")
    os.chmod(sub, 0o555)
    r = as_user("write", arr, os.path.join(work, "new.npy"), "--chunks", CHUNKS, "--overwrite")
    check(r.returncode == 0, "read-only: overwrite: rc %d %s" % (r.returncode, r.stderr))
    check(classify(arr, work, old, new) == "new", "read-only: not the new array")
    left = leftovers(arr)
    check(len(left) == 1 and not os.path.exists(os.path.join(base, left[0], "zarr.json")),
          "read-only: expected one hidden leftover without metadata, got %s" % left)
    subprocess.run(["chmod", "-R", "u+w", base], capture_output=True)
    r = as_user("write", arr, os.path.join(work, "old.npy"), "--chunks", CHUNKS, "--overwrite")
    check(r.returncode == 0 and not leftovers(arr), "read-only: the next writer left %s" % leftovers(arr))
    check(classify(arr, work, old, new) == "old", "read-only: the next writer's array")
    note("read-only subdirectory%s: overwrite exit 0, new array whole, old tree hidden, then cleaned"
          % (" (as nobody)" if prefix else ""))


if __name__ == "__main__":
    sys.exit(main())
