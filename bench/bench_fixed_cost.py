"""The fixed cost of a small device read (issue 20: at most 30 us of host time for a one-chunk read): reads that
decode nothing, timed one by one, each route and cache.

cases   missing   a 1x16x16 box in a chunk never written (fill value): plan, staging, launch, no decode
        dcache    the same box in a chunk the device cache holds (device_cache_bytes): one scatter from it
        hcache    the same box in a chunk the host cache holds (cache_bytes), device route: a copy and a scatter
        host      the cached box on the host route (host cache, then one copy)
Each case: 30 warm-up reads, then --reads reads into one preallocated CuPy buffer; per read the wall time of the
Python call and the library's own total_s (read stats), median and 10th percentile. With --trace, a second run of
each case under ZGPU_TRACE=1 splits the library's time (plan, tasks, lock, ordering, waves, finish; medians, us).

Usage: python bench/bench_fixed_cost.py [--lib build/lib/libzgpu.so] [--reads 500] [--trace] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

CASES = ("missing", "dcache", "hcache", "host")


def settings(case):
    if case == "missing":
        return dict(read_route="device")
    if case == "dcache":
        return dict(read_route="device", device_cache_bytes=256 << 20)
    if case == "hcache":
        return dict(read_route="device", cache_bytes=256 << 20)
    return dict(read_route="host", cache_bytes=256 << 20)


def run_case(case, path, reads):
    import cupy as cp
    import numpy as np

    import zgpu
    zgpu.config.set(**settings(case))
    a = zgpu.open_array(path)
    box = (0, slice(0, 16), slice(0, 16)) if case != "missing" else (0, slice(256, 272), slice(256, 272))
    out = cp.empty((16, 16), dtype=np.uint16)
    for _ in range(30):
        a.read(box, device="cuda", out=out)
    cp.cuda.runtime.deviceSynchronize()
    wall, lib = [], []
    for _ in range(reads):
        t0 = time.perf_counter()
        a.read(box, device="cuda", out=out)
        wall.append(time.perf_counter() - t0)
        lib.append(a.last_read_stats["total_s"])
    st = a.last_read_stats
    want = np.full((16, 16), 7, np.uint16) if case == "missing" else \
        (np.arange(16)[:, None] * 256 + np.arange(16)).astype(np.uint16)
    assert (cp.asnumpy(out) == want).all(), case
    q = lambda v, p: sorted(v)[int(p * (len(v) - 1))]  # noqa: E731
    return {"case": case, "route": {1: "device", 2: "host"}.get(st["route"], "?"),
            "device_cache_hits": st.get("device_cache_hits", 0), "cache_hits": st["cache_hits"],
            "wall_us": statistics.median(wall) * 1e6, "wall_p10_us": q(wall, 0.1) * 1e6,
            "lib_us": statistics.median(lib) * 1e6, "lib_p10_us": q(lib, 0.1) * 1e6}


def make_array(path):
    import numpy as np

    import zgpu
    a = zgpu.create(path, shape=(64, 512, 512), dtype="uint16", chunks=(64, 256, 256), compressors="zstd",
                    fill_value=7)
    data = np.arange(64 * 256 * 256, dtype=np.uint16).reshape(64, 256, 256) % 65535
    data[0] = np.arange(256 * 256, dtype=np.uint16).reshape(256, 256) % 65535
    a[:, :256, :256] = data  # chunk (0, 0, 0) only: the others stay missing


TRACE = re.compile(r"device read ([\d.]+) us: plan ([\d.]+), tasks ([\d.]+), lock ([\d.]+), ordering ([\d.]+), "
                   r"waves ([\d.]+), finish ([\d.]+)")


def traced(case, path, args):
    env = dict(os.environ, ZGPU_TRACE="1")
    r = subprocess.run([sys.executable, __file__, "--child", case, "--path", path, "--reads", "100"]
                       + (["--lib", args.lib] if args.lib else []), env=env, capture_output=True, text=True)
    rows = [tuple(float(x) for x in m.groups()) for m in TRACE.finditer(r.stderr)][-100:]
    if not rows:
        return None
    names = ("total", "plan", "tasks", "lock", "ordering", "waves", "finish")
    return {n: statistics.median(r[i] for r in rows) for i, n in enumerate(names)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib")
    ap.add_argument("--reads", type=int, default=500)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--child")
    ap.add_argument("--path")
    args = ap.parse_args()
    if args.lib:
        os.environ["ZGPU_LIB"] = os.path.abspath(args.lib)
    if args.child:
        print(json.dumps(run_case(args.child, args.path, args.reads)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "a.zarr")
        make_array(path)
        rows = []
        for case in CASES:
            # each case in a process of its own (settings are per context; no state carried between cases)
            r = subprocess.run([sys.executable, __file__, "--child", case, "--path", path, "--reads", str(args.reads)]
                               + (["--lib", args.lib] if args.lib else []), capture_output=True, text=True)
            if r.returncode:
                print(r.stderr[-2000:], file=sys.stderr)
                continue
            row = json.loads(r.stdout.strip().splitlines()[-1])
            if args.trace and row["route"] == "device":
                row["trace_us"] = traced(case, path, args)
            rows.append(row)
            print(f"{case:8s} route {row['route']:6s} hits {row['cache_hits']} (device {row['device_cache_hits']}): "
                  f"wall {row['wall_us']:.1f} us (p10 {row['wall_p10_us']:.1f}), library {row['lib_us']:.1f} us "
                  f"(p10 {row['lib_p10_us']:.1f})" +
                  (" | " + ", ".join(f"{k} {v:.1f}" for k, v in row["trace_us"].items()) if row.get("trace_us") else ""),
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
