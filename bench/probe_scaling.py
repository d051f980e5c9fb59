#!/usr/bin/env python3
"""How host reads of random crops scale with threads (issue 20's sharded and label rows): for each cell and each
thread count, zgpu's read_batch into NumPy (cache off) and tensorstore (file kvstore, data_copy_concurrency and
file_io_concurrency limited to the same count, cache_pool 0), crops per second, and zgpu's CPU seconds per batch
(user + system, so work that grows with threads shows apart from threads left idle) and its read statistics.

Usage: python bench/probe_scaling.py [--lib build/lib/libzgpu.so] [--cells oct_u16.sharded-zstd,..]
           [--threads 1,2,4,8,16] [--reads patch:8,crop:1] [--crops 128] [--planes 64]"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_gpu as bg  # noqa: E402
from bench_train import CROP_KINDS, boxes  # noqa: E402

VARIANTS = {"default": {}, "whole": {"partial_decode": False}, "nosplit": {"split_decode": False}}
KINDS = {"crop": CROP_KINDS["crop 32x128x128"], "patch": CROP_KINDS["patch 1x256x256"], "chunk": (64, 256, 256)}


def read_boxes(shape, kind, crop, n, seed):
    """n random boxes of the kind: crops and patches anywhere, chunks (64x256x256) on the chunk grid."""
    if kind != "chunk":
        return boxes(shape, crop, n, seed)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ks = [int(rng.integers(0, s // c)) for s, c in zip(shape, crop)]
        out.append(tuple(slice(k * c, k * c + c) for k, c in zip(ks, crop)))
    return out


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.path.join(bg.ROOT, "build", "lib", "libzgpu.so"))
    ap.add_argument("--cells", default="oct_u16.sharded-zstd")
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--reads", default="patch:8,crop:1")
    ap.add_argument("--crops", type=int, default=128)
    ap.add_argument("--planes", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-ts", action="store_true", help="zgpu alone (builds compared with each other)")
    ap.add_argument("--variants", default="default", help="zgpu settings: " + ",".join(VARIANTS))
    args = ap.parse_args()
    import tensorstore as ts
    lib = bg.Lib(args.lib)
    zgpu = lib.zgpu
    sys.path.insert(0, os.path.join(bg.shared_root(), "bench"))
    import datasets
    data_dir = os.path.join(bg.ROOT, "bench", "data")
    os.makedirs(data_dir, exist_ok=True)
    print("| cell | read | zgpu | threads | zgpu crops/s | ts crops/s | zgpu / ts | zgpu CPU ms a batch | wall ms a batch | "
          "stored KB a chunk | chunks a batch |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for vol, lay in (c.split(".") for c in args.cells.split(",")):
        src = datasets.make(vol, planes=args.planes)
        path = bg.cell_array(lib, data_dir, vol, lay, src, args.planes)
        for spec in args.reads.split(","):
            kind, batch = spec.split(":")
            crop, batch = KINDS[kind], int(batch)
            for t, var in ((int(x), v) for x in args.threads.split(",") for v in args.variants.split(",")):
                zgpu.config.set(**dict(dict.fromkeys(("partial_decode", "split_decode")), **VARIANTS[var]))
                zgpu.set_threads(t)
                a = zgpu.open(path)
                st = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "context": {
                    "cache_pool": {"total_bytes_limit": 0}, "data_copy_concurrency": {"limit": t},
                    "file_io_concurrency": {"limit": t}}}).result()
                out = np.empty((batch,) + crop, a.dtype)
                n = max(args.crops // batch, 2) * batch
                stats = {"cpu": [], "stored": [], "chunks": []}

                def zr(g):
                    c0 = cpu_s()
                    a.read_batch(g, out=out)
                    s = a.last_read_stats
                    stats["cpu"].append(cpu_s() - c0)
                    stats["stored"].append(s["stored_bytes"] / max(s["chunks"], 1))
                    stats["chunks"].append(s["chunks"])

                def tr(g):
                    fs = [st[b].read() for b in g]
                    return [f.result() for f in fs]
                rates = {}
                for name, fn in (("zgpu", zr),) + (() if args.skip_ts else (("ts", tr),)):
                    r = []
                    for rep in range(args.repeat + 1):
                        bx = read_boxes(a.shape, kind, crop, n, 1000 * rep + t)
                        t0 = time.perf_counter()
                        for i in range(0, n, batch):
                            fn(bx[i:i + batch])
                        r.append(n / (time.perf_counter() - t0))
                    rates[name] = statistics.median(r[1:])
                bx = read_boxes(a.shape, kind, crop, batch, 7)
                a.read_batch(bx, out=out)
                if not all((out[k] == src[b]).all() for k, b in enumerate(bx)):
                    raise SystemExit(f"{vol}.{lay}: zgpu read the wrong values")
                k = len(stats["cpu"]) // (args.repeat + 1)  # (the warm-up pass's batches left out)
                print(f"| {vol} {lay} | {kind} b{batch} | {var} | {t} | {rates['zgpu']:.0f} | {rates.get('ts', 0):.0f} | "
                      f"{rates['zgpu'] / rates['ts'] if 'ts' in rates else 0:.2f}x | {1e3 * statistics.median(stats['cpu'][k:]):.2f} | "
                      f"{1e3 * batch / rates['zgpu']:.2f} | {statistics.median(stats['stored'][k:]) / 1e3:.0f} | "
                      f"{statistics.median(stats['chunks'][k:]):.0f} |", flush=True)
                del a
    return 0


if __name__ == "__main__":
    sys.exit(main())
