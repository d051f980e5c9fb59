#!/usr/bin/env python3
"""Training-loop reads (issue 20): random crops per second, and the latency of single reads by route.

The 12 cells of bench_gpu.py (volumes of ../shared/bench/datasets.py with --planes planes x layouts zstd,
blosc-lz4-shuffle, gzip, sharded-zstd; Zarr v3 written by zgpu, chunks 64x256x256, shards 128x512x512 of
32x128x128), in bench/data/ (the files bench_remote.py uses at the same --planes).

crops   random boxes (32x128x128 crops and 1x256x256 patches), in batches of 1, 8 and 64, cache off and on:
          zgpu         Array.read_batch(boxes, out=a preallocated CuPy array): one plan, one batch on the GPU (or the
                       host route, as the cost model picks)
          ts+copy      tensorstore (all cores; cache_pool 0, or cache_bytes when the cache is on): every crop of the
                       batch issued at once, then stacked and copied with cupy.asarray
          zarr-python  arr[box] per crop under zarr.config.enable_gpu() (--zarr-crops crops per cell, batch 1 only)
        crops/s = crops / wall time (device synchronised); each pass draws fresh boxes (seeded per pass), after a
        warm-up pass; the median of --repeat passes of --crops crops.
latency one read (median of --repeat, at least 5, after one warm-up) of: one inner chunk's box (32x128x128 at the
        origin of a chunk), one chunk (64x256x256), a 32x128x128 crop at a random place, one plane (1 x 1024 x 1024),
        the whole array; zgpu through the device route, the host route and auto (the route it took), and tensorstore+copy.
loader  a PyTorch DataLoader epoch of random crops (zgpu.torch.RandomCropDataset) with 0 and 4 workers.

Usage: python bench/bench_train.py [--planes 64] [--repeat 3] [--crops 256] [--cells vol.layout,..]
           [--parts crops,latency,loader] [--cache-bytes 1073741824] [--device-cache-bytes N] [--json PATH] [--merge-json A,B] [--docs]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_gpu as bg  # noqa: E402

ROOT = bg.ROOT
LAYOUTS = ["zstd", "blosc-lz4-shuffle", "gzip", "sharded-zstd"]
CROP_KINDS = {"crop 32x128x128": (32, 128, 128), "patch 1x256x256": (1, 256, 256)}
BATCHES = (1, 8, 64)
SECTION = "Training-loop reads (crops, batches, routes)"
TARGET = 3.0  # the issue's: zgpu at least 3x tensorstore-plus-copy with the cache off


def boxes(shape, crop, n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        st = [int(rng.integers(0, s - c + 1)) for s, c in zip(shape, crop)]
        out.append(tuple(slice(a, a + c) for a, c in zip(st, crop)))
    return out


def tensorstore_store(path, cache_bytes):
    import tensorstore as ts
    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path},
                    "context": {"cache_pool": {"total_bytes_limit": cache_bytes},
                                "data_copy_concurrency": {"limit": os.cpu_count()},
                                "file_io_concurrency": {"limit": os.cpu_count()}}}, read=True).result()


def wall(cp, fn):
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    fn()
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t0


def crops_per_second(cp, read_batch, shape, crop, batch, total, repeat, src=None):
    """Median crops/s over `repeat` passes of `total` crops in batches (fresh boxes each pass); the warm-up pass
    is checked against src."""
    n_batches = max(1, total // batch)
    rates = []
    for p in range(repeat + 1):
        bxs = boxes(shape, crop, n_batches * batch, 1000 * p + batch)
        groups = [bxs[i:i + batch] for i in range(0, len(bxs), batch)]
        if p == 0 and src is not None:
            got = cp.asnumpy(read_batch(groups[0]))
            for i, b in enumerate(groups[0]):
                if not np.array_equal(got[i], src[b]):
                    raise RuntimeError(f"wrong result for box {b}")
        t = wall(cp, lambda: [read_batch(g) for g in groups])
        if p:
            rates.append(len(bxs) / t)
    return statistics.median(rates)


def zgpu_batch_reader(cp, a, crop, batch):
    out = cp.empty((batch,) + tuple(crop), a.dtype)
    # (a full batch reads into `out` itself: a CuPy slice of it each batch was in zgpu's measured time)
    return lambda g: a.read_batch(g, out=out if len(g) == batch else out[:len(g)])


def ts_batch_reader(cp, store):
    def read(g):
        futs = [store[b].read() for b in g]
        return cp.asarray(np.stack([f.result() for f in futs]))
    return read


def zarr_reader(cp, path):
    import zarr
    arr = zarr.open_array(path, mode="r")

    def read(g):
        with zarr.config.enable_gpu():
            return cp.stack([arr[b] for b in g])
    return read


def crops_part(zgpu, cp, path, src, args, cell):
    rows = []
    a_by_cache = {}
    for cache in ("off", "on"):
        on = cache == "on"
        zgpu.config.set(cache_bytes=args.cache_bytes if on else 0,
                        device_cache_bytes=(args.device_cache_bytes if args.device_cache_bytes >= 0 else args.cache_bytes)
                        if on else 0, read_route=None)
        a_by_cache[cache] = zgpu.open_array(path)
    try:
        store = {c: tensorstore_store(path, args.cache_bytes if c == "on" else 0) for c in ("off", "on")}
    except ImportError:
        store = None
    for kind, crop in CROP_KINDS.items():
        crop = tuple(min(c, s) for c, s in zip(crop, src.shape))
        for cache in ("off", "on"):
            for batch in BATCHES:
                r = {"cell": cell, "kind": kind, "cache": cache, "batch": batch}
                a = a_by_cache[cache]
                r["zgpu"] = crops_per_second(cp, zgpu_batch_reader(cp, a, crop, batch), src.shape, crop, batch,
                                             args.crops, args.repeat, src)
                st = a.last_read_stats
                r["route"] = {1: "device", 2: "host"}.get(st.get("route"), "?")
                r["cache_hits"] = st.get("cache_hits", 0)
                if store:
                    r["ts"] = crops_per_second(cp, ts_batch_reader(cp, store[cache]), src.shape, crop, batch,
                                               args.crops, args.repeat, src)
                if batch == 1 and cache == "off" and not args.skip_zarr_python and bg.zarr_version():
                    try:
                        r["zarr"] = crops_per_second(cp, zarr_reader(cp, path), src.shape, crop, 1, args.zarr_crops,
                                                     1, src)
                    except Exception as e:  # noqa: BLE001 - one reader failing keeps the others
                        print(f"  zarr-python: {type(e).__name__}: {e}", file=sys.stderr)
                print(f"  {cell:32s} {kind:16s} cache {cache:3s} batch {batch:2d}: zgpu {r['zgpu']:8.1f}/s "
                      f"({r['route']}) ts {r.get('ts', 0):8.1f}/s zarr {r.get('zarr', 0):6.1f}/s", flush=True)
                rows.append(r)
    zgpu.config.set(cache_bytes=0, device_cache_bytes=0)
    return rows


def latency_part(zgpu, cp, path, src, args, cell):
    rows = []
    shape = src.shape
    reads = {"inner chunk": tuple(slice(0, min(c, s)) for c, s in zip(bg.INNER, shape)),
             "chunk": tuple(slice(0, min(c, s)) for c, s in zip(bg.CHUNKS, shape)),
             "crop": boxes(shape, (32, 128, 128), 1, 7)[0],
             "plane": (slice(0, 1), slice(0, shape[1]), slice(0, shape[2])),
             "whole": tuple(slice(0, s) for s in shape)}
    # (at least 9: a median of two is their mean, and auto's model tries the other route once every 64 reads of a
    # kind, which one of two timed reads then carries half of)
    latency_repeat = max(9, args.repeat)
    arrays = {}
    for route in ("device", "host", "auto"):
        zgpu.config.set(read_route=route, cache_bytes=0)
        arrays[route] = zgpu.open_array(path)
    zgpu.config.set(read_route=None)
    try:
        store = tensorstore_store(path, 0)
    except ImportError:
        store = None
    for name, box in reads.items():
        shp = tuple(b.stop - b.start for b in box)
        out = cp.empty(shp, src.dtype)
        r = {"cell": cell, "read": name}
        for route, a in arrays.items():
            for _ in range(3 if route == "auto" else 1):  # (auto: its first reads may try the other route once)
                a.read(box, out=out)
            if route == "device" and not bool(cp.all(out == cp.asarray(src[box]))):
                raise RuntimeError(f"{cell} {name}: wrong result")
        # the routes in turn, read after read: a host read of 1-2 ms varies 2x from one moment to the next on these
        # shared machines, so blocks of one route's reads compared drifts, not routes; the order rotates, since a
        # read right after a whole host read (every core, the caches flushed) runs 10-15% slower
        times = {route: [] for route in arrays}
        order = list(arrays)
        for i in range(latency_repeat):
            for route in order[i % len(order):] + order[:i % len(order)]:
                times[route].append(wall(cp, lambda: arrays[route].read(box, out=out)))
        for route, a in arrays.items():
            r[route] = statistics.median(times[route])
        r["auto_route"] = {1: "device", 2: "host"}.get(arrays["auto"].last_read_stats.get("route"), "?")
        if store is not None:
            cp.asarray(store[box].read().result())
            r["ts"] = statistics.median(wall(cp, lambda: cp.asarray(store[box].read().result()))
                                        for _ in range(latency_repeat))
        print(f"  {cell:32s} {name:12s} device {r['device']*1e3:8.2f} host {r['host']*1e3:8.2f} auto "
              f"{r['auto']*1e3:8.2f} ({r['auto_route']}) ts {r.get('ts', 0)*1e3:8.2f} ms", flush=True)
        rows.append(r)
    return rows


def loader_part(zgpu, path, args, cell):
    """A PyTorch DataLoader epoch of random 32x128x128 crops in batches of 8 (zgpu.torch.RandomCropDataset): no
    workers, reading straight into GPU memory; 4 workers (spawned: this process holds CUDA), each reading into
    pinned host memory, the batches then copied to the GPU. Crops/s of the second epoch (workers kept)."""
    import torch
    import zgpu.torch as zt
    rows = []
    for workers in (0, 4):
        ds = zt.RandomCropDataset(path, (32, 128, 128), batch_size=8, n_batches=32, seed=1,
                                  device="cuda" if workers == 0 else None, pinned=workers > 0)
        kw = {"num_workers": workers, "batch_size": None}
        if workers:
            kw.update(multiprocessing_context="spawn", persistent_workers=True, pin_memory=False)
        loader = torch.utils.data.DataLoader(ds, **kw)
        rates = []
        for epoch in range(3):
            ds.set_epoch(epoch)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            n = 0
            for batch in loader:
                b = batch.cuda(non_blocking=True) if workers else batch
                n += b.shape[0]
            torch.cuda.synchronize()
            if epoch:
                rates.append(n / (time.perf_counter() - t0))
        r = {"cell": cell, "workers": workers, "crops_per_s": statistics.median(rates)}
        print(f"  {cell:32s} DataLoader workers {workers}: {r['crops_per_s']:.0f} crops/s", flush=True)
        rows.append(r)
        del loader
    return rows


def fmt_rate(x):
    return "-" if x is None else (f"{x:.0f}" if x >= 100 else f"{x:.1f}")


def section(meta, crops, lat, loader=()):
    out = [f"## {SECTION}", ""]
    out.append(f"Machine: {meta['machine']}. Date: {meta['date']}. Command: `{meta['command']}`. Volumes of "
               f"{meta['planes']} planes (x1024x1024), Zarr v3 written by zgpu (chunks 64x256x256; sharded: "
               "128x512x512 shards of 32x128x128), files in the page cache. Crops/s: random boxes drawn afresh each "
               f"pass, {meta['crops']} crops a pass in batches, median of {meta['repeat']} passes after a checked "
               "warm-up; zgpu: `Array.read_batch(boxes, out=cupy array)` (route: what its cost model took for the last "
               "batch); ts+copy: tensorstore with every crop of a batch issued at once, then `cupy.asarray` of the "
               "stack (its cache_pool 0, or the same bytes as zgpu's `cache_bytes` when the cache is on; zgpu then "
               "also keeps GPU-decoded chunks in as many bytes of device memory, `device_cache_bytes`); zarr-python: "
               "`arr[box]` per crop under `enable_gpu()`, batch 1, cache off. Target: zgpu >= 3x ts+copy in every "
               "cell and batch size with the cache off.")
    out.append("")
    if crops:
        out += ["| cell | read | cache | batch | zgpu crops/s (route) | ts+copy crops/s | zarr-python crops/s | "
                "zgpu / ts |", "|---|---|---|---|---|---|---|---|"]
        met = total = 0
        for r in crops:
            ratio = r["zgpu"] / r["ts"] if r.get("ts") else None
            if r["cache"] == "off" and ratio is not None:
                total += 1
                met += ratio >= TARGET
            out.append(f"| {r['cell']} | {r['kind']} | {r['cache']} | {r['batch']} | {fmt_rate(r['zgpu'])} "
                       f"({r['route']}) | {fmt_rate(r.get('ts'))} | {fmt_rate(r.get('zarr'))} | "
                       f"{'-' if ratio is None else f'{ratio:.2f}x'} |")
        out += ["", f"{met} of {total} cache-off rows at {TARGET:.0f}x tensorstore-plus-copy or more.", ""]
    if lat:
        out += ["Single reads into GPU memory (ms, median): the device route (GPU decode: today's device path "
                "before routing), the host route (host decode into pinned memory, one copy), auto (the cost "
                "model's pick), tensorstore+copy; the three routes in turn (the order rotating), median of 9 after "
                "warm-ups (auto: 3, its model corrected by every read of the run before). Goal: auto within 10% of "
                "the faster route and never slower than the device route.", "",
                "| cell | read | device route | host route + copy | auto (route) | ts+copy | auto / best |",
                "|---|---|---|---|---|---|---|"]
        ok = 0
        for r in lat:
            best = min(r["device"], r["host"])
            good = r["auto"] <= 1.1 * best
            ok += good
            ts = "-" if r.get("ts") is None else f"{r['ts'] * 1e3:.2f}"
            out.append(f"| {r['cell']} | {r['read']} | {r['device']*1e3:.2f} | {r['host']*1e3:.2f} | "
                       f"{r['auto']*1e3:.2f} ({r['auto_route']}) | {ts} | {r['auto'] / best:.2f} |")
        out += ["", f"{ok} of {len(lat)} reads with auto within 10% of the faster route.", ""]
    if loader:
        out += ["A PyTorch DataLoader epoch (`zgpu.torch.RandomCropDataset`, 32 batches of 8 random 32x128x128 crops; "
                "no workers: read straight into GPU memory; 4 spawned workers: into pinned host memory, then "
                "`.cuda(non_blocking=True)`; crops/s, the median of epochs 2 and 3):", "",
                "| cell | workers | crops/s |", "|---|---|---|"]
        out += [f"| {r['cell']} | {r['workers']} | {r['crops_per_s']:.0f} |" for r in loader]
        out.append("")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libzgpu.so"))
    ap.add_argument("--planes", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--crops", type=int, default=256)
    ap.add_argument("--zarr-crops", type=int, default=16)
    ap.add_argument("--cache-bytes", type=int, default=1 << 30)
    ap.add_argument("--device-cache-bytes", type=int, default=-1,
                    help="zgpu's device_cache_bytes when the cache is on (-1: as --cache-bytes)")
    ap.add_argument("--cells", default="")
    ap.add_argument("--parts", default="crops,latency")
    ap.add_argument("--skip-zarr-python", action="store_true")
    ap.add_argument("--json", default="")
    ap.add_argument("--merge-json", default="")
    ap.add_argument("--docs", action="store_true")
    args = ap.parse_args()
    cmd = "python bench/bench_train.py " + " ".join(sys.argv[1:])
    if args.merge_json:
        parts = [json.load(open(p)) for p in args.merge_json.split(",")]
        meta = parts[0]["meta"]
        crops = [r for p in parts for r in p["crops"]]
        lat = [r for p in parts for r in p["latency"]]
        loader = [r for p in parts for r in p.get("loader", [])]
    else:
        import cupy as cp
        lib = bg.Lib(args.lib)
        zgpu = lib.zgpu
        sys.path.insert(0, os.path.join(bg.shared_root(), "bench"))
        import datasets
        cells = [c.split(".") for c in args.cells.split(",")] if args.cells else \
            [(v, lay) for v in bg.VOLUMES for lay in LAYOUTS]
        data_dir = os.path.join(ROOT, "bench", "data")
        os.makedirs(data_dir, exist_ok=True)
        crops, lat, loader = [], [], []
        for vol, lay in cells:
            src = datasets.make(vol, planes=args.planes)
            path = bg.cell_array(lib, data_dir, vol, lay, src, args.planes)
            cell = f"{vol} {lay}"
            if "crops" in args.parts:
                crops += crops_part(zgpu, cp, path, src, args, cell)
            if "latency" in args.parts:
                lat += latency_part(zgpu, cp, path, src, args, cell)
            if "loader" in args.parts:
                loader += loader_part(zgpu, path, args, cell)
        meta = {"machine": bg.machine(), "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
                "command": cmd, "planes": args.planes, "crops": args.crops, "repeat": args.repeat}
    if args.json:
        json.dump({"meta": meta, "crops": crops, "latency": lat, "loader": loader}, open(args.json, "w"), indent=1)
    text = section(meta, crops, lat, loader)
    print(text)
    if args.docs:
        bg.replace_section(os.path.join(ROOT, "docs", "benchmarks.md"), text, SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
