#!/usr/bin/env python3
"""The zgpu command against tensorstore: whole arrays read to /dev/null, peak memory and throughput.

For each volume of ../shared/bench/datasets.py and each layout of bench/bench_gpu.py (zstd, blosc-lz4-shuffle,
gzip, sharded zstd; Zarr v3, chunks 64x256x256, shards 128x512x512 with 32x128x128 inner chunks), the array is the
one bench_gpu.py writes into bench/data/ (written here, by zgpu through bench_gpu's Lib, when missing), then:

  zgpu read   `zgpu read PATH -o /dev/null -v`: the whole process's wall time (start-up and open included) and
              peak resident memory (wait4), and the read's own time as the command reports it (-v). The command
              streams the array in slabs, sized with its decode threads' scratch to stay under 300 MB
  tensorstore the zarr3 driver reading the array into host memory in a process of its own (file kvstore,
              concurrency limits = number of cores, no cache, as bench_cpu.py), opened and read each time;
              its peak resident memory includes Python's and the whole array's

Each reader: one warm-up run (page cache), then the median of --repeat runs (CPU s: user + system time of a
run, for machines shared with other work, where wall times vary). GB = 1e9 bytes of the decoded array.
Prints a Markdown table (and --json writes the rows); docs/benchmarks.md is left alone.

Usage: python bench/bench_cli.py [--cli build/bin/zgpu] [--lib build/lib/libzgpu.so] [--planes N] [--repeat 5]
                                 [--volumes a,b] [--layouts x,y] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpu  # noqa: E402  (the arrays, their metadata and their writer)

VOLUMES = bench_gpu.VOLUMES
LAYOUTS = ["zstd", "blosc-lz4-shuffle", "gzip", "sharded-zstd"]
LIMIT_MB = 300


def run_measured(cmd: list) -> tuple:
    """(wall seconds, CPU seconds, peak resident KiB, stderr) of one process (its own: wait4's rusage)."""
    import tempfile
    with tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {text.strip()}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, text


def zgpu_cell(cli: str, path: str, repeat: int) -> dict:
    cmd = [cli, "read", path, "-o", "/dev/null", "-v"]
    run_measured(cmd)  # warm-up
    walls, cpus, reads, rss, line = [], [], [], 0, ""
    for _ in range(repeat):
        wall, cpu, kb, err = run_measured(cmd)
        walls.append(wall)
        cpus.append(cpu)
        rss = max(rss, kb)
        line = err.strip().splitlines()[-1] if err.strip() else ""
        m = re.search(r" in ([0-9.]+) s, ", line)
        if m:
            reads.append(float(m.group(1)))
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
            "read_s": statistics.median(reads) if reads else None,
            "rss_kb": rss, "summary": line}


TS_CHILD = r"""
import json, os, resource, statistics, sys, time
import tensorstore as ts
path, repeat = sys.argv[1], int(sys.argv[2])
n = os.cpu_count()
ctx = ts.Context({"cache_pool": {"total_bytes_limit": 0}, "data_copy_concurrency": {"limit": n},
                  "file_io_concurrency": {"limit": n}})
def once():
    a = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}, context=ctx, open=True,
                read=True).result()
    return a.read().result()
nbytes = once().nbytes
times = []
r0 = resource.getrusage(resource.RUSAGE_SELF)
for _ in range(repeat):
    t = time.perf_counter()
    once()
    times.append(time.perf_counter() - t)
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / repeat
print(json.dumps({"s": statistics.median(times), "cpu_s": cpu, "nbytes": nbytes,
                  "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def tensorstore_cell(path: str, repeat: int) -> dict | None:
    try:
        r = subprocess.run([sys.executable, "-c", TS_CHILD, path, str(repeat)], capture_output=True, text=True,
                           check=True)
    except subprocess.CalledProcessError as e:
        print(f"  tensorstore {path}: {e.stderr.strip()[-500:]}", file=sys.stderr, flush=True)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def ensure_array(lib_path: str, data_dir: str, vol: str, lay: str, planes, cache: dict) -> tuple:
    """The array's path (written like bench_gpu.py's when missing) and its decoded bytes."""
    tag = vol if planes is None else f"{vol}_p{planes}"
    path = os.path.join(data_dir, f"{tag}.{lay}.zgpu.zarr")
    if not os.path.exists(os.path.join(path, ".complete")):
        if "src" not in cache or cache.get("vol") != vol:
            sys.path.insert(0, os.path.join(bench_gpu.shared_root(), "bench"))
            import datasets  # noqa: E402
            t = time.perf_counter()
            cache.update(vol=vol, src=datasets.make(vol, planes=planes))
            print(f"made {vol} {cache['src'].shape} {cache['src'].dtype} in {time.perf_counter() - t:.1f} s",
                  flush=True)
        if "lib" not in cache:
            cache["lib"] = bench_gpu.Lib(lib_path)
        src = cache["src"]
        shutil.rmtree(path, ignore_errors=True)
        t = time.perf_counter()
        cache["lib"].write(path, bench_gpu.metadata(src.shape, src.dtype, lay), src)
        open(os.path.join(path, ".complete"), "w").close()
        os.sync()
        print(f"  wrote {path} in {time.perf_counter() - t:.1f} s", flush=True)
    with open(os.path.join(path, "zarr.json")) as fh:
        meta = json.load(fh)
    nbytes = 1
    for n in meta["shape"]:
        nbytes *= n
    itemsize = {"uint8": 1, "uint16": 2, "uint32": 4, "float32": 4, "int16": 2, "int32": 4, "float64": 8}
    return path, nbytes * itemsize[meta["data_type"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "zgpu"))
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libzgpu.so"),
                    help="the library that writes missing arrays (through bench_gpu.py's Lib)")
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data"))
    ap.add_argument("--planes", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--volumes", default=",".join(VOLUMES))
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--json", default=None, help="also write the raw rows as JSON here")
    ap.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.makedirs(args.data, exist_ok=True)
    cells = [(v, lay) for v in args.volumes.split(",") for lay in args.layouts.split(",")]
    if not args.measure_only:
        cache = {}
        for vol, lay in cells:
            ensure_array(args.lib, args.data, vol, lay, args.planes, cache)
        if "lib" in cache or "src" in cache:
            # A child's peak memory counts its parent's at the fork (wait4's maxrss takes the parent's high-water
            # mark when a vfork child execs): measure from a fresh image, without the volumes just written.
            sys.stdout.flush()
            os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:], "--measure-only"])
    rows = []
    for vol, lay in cells:
        path, nbytes = ensure_array(args.lib, args.data, vol, lay, args.planes, {})
        z = zgpu_cell(args.cli, path, args.repeat)
        t = tensorstore_cell(path, args.repeat)
        rows.append({"volume": vol, "layout": lay, "decoded": nbytes, "zgpu": z, "tensorstore": t})
        ts_txt = f"{nbytes / t['s'] / 1e9:.2f} GB/s, {t['rss_kb'] / 1024:.0f} MiB" if t else "-"
        print(f"{vol} {lay}: zgpu {nbytes / z['wall_s'] / 1e9:.2f} GB/s, {z['rss_kb'] / 1024:.0f} MiB; "
              f"tensorstore {ts_txt}", flush=True)
    print()
    print(f"Machine: {platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; median of {args.repeat} runs after a warm-up.")
    print()
    print("| volume | layout | MB | zgpu read GB/s (process) | its read GB/s (-v) | zgpu CPU s | zgpu peak MiB | "
          "tensorstore GB/s | tensorstore CPU s | tensorstore peak MiB | zgpu / tensorstore | zgpu slabs, threads |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    over, slower = 0, 0
    for r in rows:
        z, t, n = r["zgpu"], r["tensorstore"], r["decoded"]
        zr = n / z["wall_s"] / 1e9
        tr = n / t["s"] / 1e9 if t else None
        over += z["rss_kb"] * 1024 >= LIMIT_MB * 1e6
        slower += tr is not None and zr < tr
        m = re.search(r"; (\d+ slabs? of up to .*)$", z["summary"])
        cells = [r["volume"], r["layout"], f"{n / 1e6:.0f}", f"{zr:.2f}",
                 f"{n / z['read_s'] / 1e9:.2f}" if z["read_s"] else "-", f"{z['cpu_s']:.2f}",
                 f"{z['rss_kb'] / 1024:.0f}", f"{tr:.2f}" if tr else "-", f"{t['cpu_s']:.2f}" if t else "-",
                 f"{t['rss_kb'] / 1024:.0f}" if t else "-",
                 f"{zr / tr:.2f}x" if tr else "-", m.group(1) if m else "-"]
        print("| " + " | ".join(cells) + " |")
    print()
    print(f"{len(rows) - over} of {len(rows)} cells under {LIMIT_MB} MB peak; zgpu read at least as fast as "
          f"tensorstore in {len(rows) - slower} of {len(rows)}.")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
