#!/usr/bin/env python3
"""One remote crop's latency, HTTP against S3, build against build: each cell served by zgpu_range_server twice
(plain HTTP, and --s3 over a bucket that links to the same files), the remote benchmark's 100 random 32x128x128
crops (bench_remote.crops, one read each) read through the http:// and the s3:// store into host memory (NumPy)
or GPU memory (CuPy, out=), and the median milliseconds a crop of `--repeat` passes after a checked warm-up. With
several --libs each runs in a process of its own, in turn, `--rounds` times (the machines are noisy: builds are
compared within one run). Also zgpu's own time of a read (last_read_stats total_s) and its fetch (io_s).

Usage: python bench/probe_remote_latency.py --libs /tmp/zgpu-new/lib/libzgpu.so,/tmp/zgpu-base/lib/libzgpu.so
           [--cells labels_u32.sharded-zstd,oct_u16.sharded-zstd] [--targets host,gpu] [--rounds 2] [--repeat 5]"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_gpu as bg  # noqa: E402

BUCKET = "bench"


def serve(exe: str, root: str, s3: bool):
    proc = subprocess.Popen([exe, "--root", root] + (["--s3"] if s3 else []), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline().split()[1])


def measure(args) -> None:
    """In the child: one build's rows as JSON lines on stdout."""
    lib = bg.Lib(args.lib)
    zgpu = lib.zgpu
    from bench_remote import crops
    cp = None
    if "gpu" in args.targets:
        import cupy as cp
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1",
                      AWS_EC2_METADATA_DISABLED="true", NO_PROXY="127.0.0.1")
    zgpu.config.set(s3_endpoint=f"http://127.0.0.1:{args.s3_port}", s3_region="us-east-1", s3_addressing="path")
    for path in args.paths.split(","):
        name = os.path.basename(path)
        urls = {"http": f"http://127.0.0.1:{args.http_port}/{name}", "s3": f"s3://{BUCKET}/{name}"}
        src = None
        for target in args.targets.split(","):
            for store, url in urls.items():
                a = zgpu.open(url)
                bx = crops(a.shape)
                if src is None:
                    src = zgpu.open(path)
                bufs = {}

                def read(box):
                    if target == "host":
                        return a[box]
                    shape = tuple(s.stop - s.start for s in box)
                    if shape not in bufs:
                        bufs[shape] = cp.empty(shape, a.dtype)
                    return a.read(box, out=bufs[shape])
                for b in bx[:10]:  # checked warm-up
                    got = read(b)
                    got = cp.asnumpy(got) if target == "gpu" else got
                    if not np.array_equal(got, src[b]):
                        raise SystemExit(f"{name} over {store}: wrong values for {b}")
                passes, total, io = [], [], []
                for _ in range(args.repeat):
                    if cp is not None:
                        cp.cuda.Device().synchronize()
                    t0 = time.perf_counter()
                    for b in bx:
                        read(b)
                        s = a.last_read_stats
                        total.append(s["total_s"])
                        io.append(s["io_s"])
                    if cp is not None:
                        cp.cuda.Device().synchronize()
                    passes.append((time.perf_counter() - t0) / len(bx))
                print(json.dumps({"cell": name, "target": target, "store": store,
                                  "ms": 1e3 * statistics.median(passes), "total_ms": 1e3 * statistics.median(total),
                                  "io_ms": 1e3 * statistics.median(io)}), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--libs", default=os.path.join(bg.ROOT, "build", "lib", "libzgpu.so"))
    ap.add_argument("--cells", default="labels_u32.sharded-zstd")
    ap.add_argument("--targets", default="host")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--planes", type=int, default=64)
    ap.add_argument("--range-server", default=None, help="default: <build>/bin/zgpu_range_server of the first lib")
    # the child's
    ap.add_argument("--lib", help=argparse.SUPPRESS)
    ap.add_argument("--paths", help=argparse.SUPPRESS)
    ap.add_argument("--http-port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--s3-port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.lib:
        measure(args)
        return 0
    libs = args.libs.split(",")
    exe = args.range_server or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(libs[0]))), "bin",
                                            "zgpu_range_server")
    sys.path.insert(0, os.path.join(bg.shared_root(), "bench"))
    import datasets
    data = os.path.realpath(os.path.join(bg.ROOT, "bench", "data"))
    os.makedirs(data, exist_ok=True)
    writer = bg.Lib(libs[0])
    paths = []
    for vol, lay in (c.split(".") for c in args.cells.split(",")):
        paths.append(bg.cell_array(writer, data, vol, lay, datasets.make(vol, planes=args.planes), args.planes))
    s3_root = tempfile.mkdtemp(prefix="zgpu-latency-s3-")
    os.symlink(data, os.path.join(s3_root, BUCKET))
    (hp, http_port), (sp, s3_port) = serve(exe, data, False), serve(exe, s3_root, True)
    rows = {}
    try:
        for r in range(args.rounds):
            for lib in libs:
                out = subprocess.run([sys.executable, __file__, "--lib", lib, "--paths", ",".join(paths),
                                      "--http-port", str(http_port), "--s3-port", str(s3_port),
                                      "--targets", args.targets, "--repeat", str(args.repeat)],
                                     capture_output=True, text=True, timeout=600)
                if out.returncode:
                    print(out.stdout, out.stderr)
                    return 1
                for line in out.stdout.splitlines():
                    if line.startswith("{"):
                        row = json.loads(line)
                        rows.setdefault((row["cell"], row["target"], row["store"], lib), []).append(row)
    finally:
        for p in (hp, sp):
            p.stdin.close()
            p.wait(10)
    print("| cell | into | store | build | ms a crop (each round) | zgpu total_s ms | io_s ms |")
    print("|---|---|---|---|---|---|---|")
    for (cell, target, store, lib), rs in sorted(rows.items()):
        print(f"| {cell} | {target} | {store} | {lib} | {' '.join('%.3f' % x['ms'] for x in rs)} | "
              f"{statistics.median(x['total_ms'] for x in rs):.3f} | {statistics.median(x['io_ms'] for x in rs):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
