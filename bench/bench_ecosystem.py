#!/usr/bin/env python3
"""Where users already are (issue 21): zarr-python, xarray and Dask code running on zgpu, and reads over many GPUs.

Parts (--parts, comma-separated; every one by default):
  pipeline  zarr-python's own codec pipeline against zgpu's (codec_pipeline.path = zgpu.zarr.ZgpuCodecPipeline) on
            the 12 cells (three volumes of ../shared/bench/datasets.py x zstd, blosc-lz4-shuffle, gzip, sharded
            zstd; Zarr v3 written by zgpu into bench/data/, as bench_train.py), into host memory and under
            zarr.config.enable_gpu() (CuPy results): the whole array (`a[...]`, median of --repeat after a warm-up)
            and --crops random 32x128x128 crops (`a[box]` one after another; crops/s). Targets: zgpu's pipeline
            >= 5x zarr-python's on the host and >= 20x under enable_gpu().
  xarray    xr.open_dataset(group, engine=...).load() of a group holding the three zstd volumes (dims z, y, x):
            engine "zarr" against engine "zgpu" (host), and engine "zgpu" with device="cuda" (CuPy variables).
  spread    one array read whole into GPU 0 by zgpu from one GPU (device="cuda:0") and from two
            (devices=[0, 1]: each decodes half the chunks and writes them over the peer path); needs 2 GPUs.
  dask      a Dask reduction over the label volume (zstd, --dask-planes planes): zgpu.to_dask(path,
            device="cuda").sum() on a dask-cuda LocalCUDACluster of 1 and of 2 GPUs (a worker a GPU), median of
            --repeat after a warm-up; and on the host (NumPy blocks, the threaded scheduler) for reference.

Every reader's first result is compared with the source. GB = 1e9 bytes. --docs writes the section
"Where users already are (zarr-python, xarray, Dask, many GPUs)" of docs/benchmarks.md; --json keeps the rows,
--merge-json A,B joins runs (e.g. the 2-GPU machine's spread/dask rows with a 1-GPU run's pipeline rows).

Usage: python bench/bench_ecosystem.py [--lib build/lib/libzgpu.so] [--planes 64] [--repeat 3] [--crops 32]
                                       [--parts pipeline,xarray,spread,dask] [--cells vol.layout,...] [--docs]
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

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_gpu as bg  # noqa: E402

SECTION = "Where users already are (zarr-python, xarray, Dask, many GPUs)"
LAYOUTS = ["zstd", "blosc-lz4-shuffle", "gzip", "sharded-zstd"]
PIPELINE = "zgpu.zarr.ZgpuCodecPipeline"
CROP = (32, 128, 128)


def timed(fn, repeat, sync=None):
    """(first result, median seconds of `repeat` calls after the first, which is the warm-up)."""
    first = fn()
    if sync:
        sync()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t)
    return first, statistics.median(times)


def as_host(x):
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def crop_boxes(shape, n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        crop = [min(c, s) for s, c in zip(shape, CROP)]
        start = [int(rng.integers(0, s - c + 1)) for s, c in zip(shape, crop)]
        out.append(tuple(slice(a, a + c) for a, c in zip(start, crop)))
    return out


# ---------------------------------------------------------------------------------------------------
# Parts
# ---------------------------------------------------------------------------------------------------
def pipeline_part(cp, path, src, args, cell):
    import zarr
    import zgpu.zarr  # noqa: F401 (registers the pipeline where the package's entry point is not installed)
    rows = []
    boxes = crop_boxes(src.shape, args.crops, 1)
    sync = cp.cuda.Device().synchronize if cp is not None else None
    for where in (["host", "gpu"] if cp is not None else ["host"]):
        res = {}
        for who in ("zarr-python", "zgpu"):
            cfg = {"codec_pipeline.path": PIPELINE if who == "zgpu" else
                   "zarr.core.codec_pipeline.BatchedCodecPipeline"}
            gpu_cfg = zarr.config.enable_gpu() if where == "gpu" else zarr.config.set({})
            with gpu_cfg, zarr.config.set(cfg):
                a = zarr.open_array(path, mode="r")
                assert (type(a._async_array.codec_pipeline).__name__ == "ZgpuCodecPipeline") == (who == "zgpu")
                first, whole = timed(lambda: a[...], args.repeat, sync if where == "gpu" else None)
                if not np.array_equal(as_host(first), src):
                    raise SystemExit(f"{cell}: {who} {where} read a wrong whole array")
                del first
                if not np.array_equal(as_host(a[boxes[0]]), src[boxes[0]]):
                    raise SystemExit(f"{cell}: {who} {where} read a wrong crop")
                t = time.perf_counter()
                for b in boxes:
                    a[b]
                if where == "gpu":
                    sync()
                res[who] = (whole, args.crops / (time.perf_counter() - t))
        rows.append({"cell": cell, "where": where, "zarr_whole_s": res["zarr-python"][0],
                     "zgpu_whole_s": res["zgpu"][0], "zarr_crops_s": res["zarr-python"][1],
                     "zgpu_crops_s": res["zgpu"][1], "bytes": int(src.nbytes)})
        r = rows[-1]
        print(f"pipeline {cell} {where}: whole {r['zarr_whole_s'] * 1e3:.0f} -> {r['zgpu_whole_s'] * 1e3:.0f} ms "
              f"({r['zarr_whole_s'] / r['zgpu_whole_s']:.1f}x), crops {r['zarr_crops_s']:.0f} -> "
              f"{r['zgpu_crops_s']:.0f}/s ({r['zgpu_crops_s'] / r['zarr_crops_s']:.1f}x)", flush=True)
    return rows


def xarray_part(zgpu, cp, lib, data_dir, vols, args):
    import xarray as xr
    gpath = os.path.join(data_dir, f"xarray_p{args.planes}.zgpu.zarr")
    done = gpath + ".complete"  # (beside the group: xarray and zarr-python list what is inside it)
    if not os.path.exists(done):
        g = zgpu.create_group(gpath, overwrite=True)
        for name, src in vols.items():
            a = zgpu.create(os.path.join(gpath, name), shape=src.shape, dtype=src.dtype, chunks=bg.CHUNKS,
                            compressors="zstd", dimension_names=["z", "y", "x"])
            a[...] = src
        del g
        open(done, "w").close()
    total = sum(int(v.nbytes) for v in vols.values())
    rows = []
    from zgpu.xarray import ZgpuBackendEntrypoint  # (engine="zgpu" where the package is installed: the same class)
    runs = [("zarr", "host", dict(engine="zarr", consolidated=False)),
            ("zgpu", "host", dict(engine=ZgpuBackendEntrypoint))]
    if cp is not None:
        runs.append(("zgpu", "gpu", dict(engine=ZgpuBackendEntrypoint, device="cuda")))
    for engine, where, kw in runs:
        def load():
            ds = xr.open_dataset(gpath, **kw).load()
            return ds
        ds, s = timed(load, args.repeat, cp.cuda.Device().synchronize if cp is not None else None)
        for name, src in vols.items():
            if not np.array_equal(as_host(ds[name].data), src):
                raise SystemExit(f"xarray {engine} {where}: {name} differs")
        rows.append({"engine": engine, "where": where, "seconds": s, "bytes": total})
        print(f"xarray {engine} {where}: {s * 1e3:.0f} ms ({total / s / 1e9:.2f} GB/s)", flush=True)
    return rows


def spread_part(zgpu, cp, path, src, args, cell):
    a = zgpu.open_array(path)
    rows = []
    for devs in ([0], [0, 1]):
        def read():
            return a.read(device="cuda:0", devices=devs)
        first, s = timed(read, args.repeat, lambda: (cp.cuda.Device(0).synchronize(), cp.cuda.Device(1).synchronize()))
        if not np.array_equal(cp.asnumpy(cp.asarray(first)), src):
            raise SystemExit(f"spread {cell} {devs}: wrong data")
        del first
        rows.append({"cell": cell, "gpus": len(devs), "seconds": s, "bytes": int(src.nbytes)})
    print(f"spread {cell}: 1 GPU {rows[0]['seconds'] * 1e3:.1f} ms, 2 GPUs {rows[1]['seconds'] * 1e3:.1f} ms "
          f"({rows[0]['seconds'] / rows[1]['seconds']:.2f}x)", flush=True)
    return rows


def dask_part(zgpu, path, src, args, n_gpus):
    import dask
    rows = []
    expect = int(src.sum(dtype=np.uint64))
    x = zgpu.to_dask(path)
    with dask.config.set(scheduler="threads"):
        got, s = timed(lambda: int(x.sum().compute()), args.repeat)
    assert got == expect, (got, expect)
    rows.append({"where": "host (threads)", "gpus": 0, "seconds": s, "bytes": int(src.nbytes)})
    print(f"dask host: {s * 1e3:.0f} ms", flush=True)
    from dask_cuda import LocalCUDACluster
    from distributed import Client
    for n in range(1, min(2, n_gpus) + 1):
        visible = ",".join(str(i) for i in range(n))
        with LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, n_workers=n, threads_per_worker=4) as cluster, \
                Client(cluster) as client:
            xs = zgpu.to_dask(path, device="cuda")
            got, s = timed(lambda: int(client.compute(xs.sum()).result()), args.repeat)
            assert got == expect, (got, expect)
        rows.append({"where": "dask-cuda", "gpus": n, "seconds": s, "bytes": int(src.nbytes)})
        print(f"dask-cuda {n} GPU(s): {s * 1e3:.0f} ms", flush=True)
    return rows


# ---------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------
def run_line(meta):
    machine = " / ".join(dict.fromkeys(meta["machine"].split("\n")))  # (one line a GPU: two alike on the 2-GPU kind)
    return (f"Run: {machine}; {meta['date']}; `{meta['command']}`; median of {meta['repeat']} after a "
            "warm-up.")


def section(metas, pipe, xa, spread, dk):
    """The docs section; metas: the run (machine, date, command) of each part, by part name."""
    first = next(iter(metas.values()))
    L = [f"## {SECTION}", ""]
    L.append(f"Volumes of {first['planes']} planes (x1024x1024) unless a table says otherwise, Zarr v3 written by zgpu "
             "(chunks 64x256x256; sharded: 128x512x512 shards of 32x128x128), files in the page cache. "
             "`python bench/bench_ecosystem.py --help` tells the parts.")
    if pipe:
        meta = metas["pipeline"]
        L += ["", "zarr-python 3 with its own codec pipeline against zgpu's (`codec_pipeline.path` = "
              f"`{PIPELINE}`), the same `zarr.open_array(path)` code: whole array `a[...]` (ms) and "
              f"{meta.get('crops', 32)} random 32x128x128 crops `a[box]` one after another (crops/s); host: NumPy "
              "results, gpu: under `zarr.config.enable_gpu()` (CuPy results). Target: zgpu >= 5x on the host, "
              ">= 20x with enable_gpu(). " + run_line(meta), "",
              "| cell | memory | whole: zarr-python ms | whole: zgpu ms | x | crops/s: zarr-python | crops/s: zgpu | x |",
              "|---|---|---|---|---|---|---|---|"]
        for r in pipe:
            L.append(f"| {r['cell']} | {r['where']} | {r['zarr_whole_s'] * 1e3:.0f} | {r['zgpu_whole_s'] * 1e3:.1f} | "
                     f"{r['zarr_whole_s'] / r['zgpu_whole_s']:.1f}x | {r['zarr_crops_s']:.0f} | {r['zgpu_crops_s']:.0f} | "
                     f"{r['zgpu_crops_s'] / r['zarr_crops_s']:.1f}x |")
    if xa:
        L += ["", "xarray: `xr.open_dataset(group, engine=...).load()` of a group of the three zstd volumes "
              "(dims z, y, x). " + run_line(metas["xarray"]), "", "| engine | memory | ms | GB/s |", "|---|---|---|---|"]
        for r in xa:
            L.append(f"| {r['engine']} | {r['where']} | {r['seconds'] * 1e3:.0f} | {r['bytes'] / r['seconds'] / 1e9:.2f} |")
    if spread:
        meta = metas["spread"]
        L += ["", f"One array ({meta.get('spread_planes', meta['planes'])} planes) read whole into GPU 0 by one GPU "
              "(`device=\"cuda:0\"`) and by two (`devices=[0, 1]`: each reads and decodes half the chunks and writes "
              "them into GPU 0 over the peer path). " + run_line(meta), "",
              "| cell | 1 GPU ms | 2 GPUs ms | 1 GPU GB/s | 2 GPUs GB/s | speed-up |", "|---|---|---|---|---|---|"]
        by = {}
        for r in spread:
            by.setdefault(r["cell"], {})[r["gpus"]] = r
        for cell, d in by.items():
            one, two = d[1], d[2]
            L.append(f"| {cell} | {one['seconds'] * 1e3:.1f} | {two['seconds'] * 1e3:.1f} | "
                     f"{one['bytes'] / one['seconds'] / 1e9:.1f} | {two['bytes'] / two['seconds'] / 1e9:.1f} | "
                     f"{one['seconds'] / two['seconds']:.2f}x |")
    if dk:
        meta = metas["dask"]
        L += ["", f"A Dask reduction over the label volume (zstd, {meta.get('dask_planes')} planes): "
              "`zgpu.to_dask(path, device=\"cuda\").sum()` on a dask-cuda `LocalCUDACluster` (a worker a GPU, "
              "4 threads each; blocks of whole chunks merged up to 256 MiB), and `zgpu.to_dask(path).sum()` on the "
              "threaded scheduler for reference. " + run_line(meta), "",
              "| where | GPUs | ms | GB/s |", "|---|---|---|---|"]
        for r in dk:
            L.append(f"| {r['where']} | {r['gpus']} | {r['seconds'] * 1e3:.0f} | {r['bytes'] / r['seconds'] / 1e9:.2f} |")
    return "\n".join(L) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libzgpu.so"))
    ap.add_argument("--planes", type=int, default=64)
    ap.add_argument("--dask-planes", type=int, default=256)
    ap.add_argument("--spread-planes", type=int, default=0, help="the spread part's volumes (0: --planes)")
    ap.add_argument("--spread-cells", default="", help="the spread part's cells (default: --cells)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--crops", type=int, default=32)
    ap.add_argument("--cells", default="")
    ap.add_argument("--parts", default="pipeline,xarray,spread,dask")
    ap.add_argument("--json", default="")
    ap.add_argument("--merge-json", default="")
    ap.add_argument("--docs", action="store_true")
    args = ap.parse_args()
    cmd = "python bench/bench_ecosystem.py " + " ".join(sys.argv[1:])
    keys = ("pipeline", "xarray", "spread", "dask")
    if args.merge_json:
        # each part from the first file that has it (runs on different machines: the 2-GPU parts on the 2-GPU kind)
        parts = [json.load(open(p)) for p in args.merge_json.split(",")]
        got, metas = {k: [] for k in keys}, {}
        for k in keys:
            for p in parts:
                if p.get(k):
                    got[k], metas[k] = p[k], p["meta"]
                    break
        metas = metas or {"all": parts[0]["meta"]}
    else:
        try:
            import cupy as cp
            cp.cuda.runtime.getDeviceCount()
        except Exception:  # noqa: BLE001 (no GPU: the host rows only)
            cp = None
        lib = bg.Lib(args.lib)
        zgpu = lib.zgpu
        sys.path.insert(0, os.path.join(bg.shared_root(), "bench"))
        import datasets
        cells = [c.split(".") for c in args.cells.split(",")] if args.cells else \
            [(v, lay) for v in bg.VOLUMES for lay in LAYOUTS]
        data_dir = os.path.join(ROOT, "bench", "data")
        os.makedirs(data_dir, exist_ok=True)
        parts = args.parts.split(",")
        got = {k: [] for k in keys}

        def stored(vol, lay, planes):
            src = datasets.make(vol, planes=planes)
            return bg.cell_array(lib, data_dir, vol, lay, src, planes), src

        n_gpus = cp.cuda.runtime.getDeviceCount() if cp is not None else 0
        def run(part, fn):
            """One part; a part that fails is reported and the others still run."""
            try:
                return fn()
            except Exception as e:  # noqa: BLE001
                print(f"{part} FAILED: {type(e).__name__}: {e}", flush=True)
                return []

        for vol, lay in cells if "pipeline" in parts else []:
            path, src = stored(vol, lay, args.planes)
            got["pipeline"] += run("pipeline", lambda: pipeline_part(cp, path, src, args, f"{vol} {lay}"))
        if "spread" in parts and n_gpus >= 2:
            spread_cells = [c.split(".") for c in args.spread_cells.split(",")] if args.spread_cells else cells
            for vol, lay in spread_cells:
                path, src = stored(vol, lay, args.spread_planes or args.planes)
                got["spread"] += run("spread", lambda: spread_part(zgpu, cp, path, src, args, f"{vol} {lay}"))
                del src
        if "dask" in parts and n_gpus >= 1:
            path, src = stored("labels_u32", "zstd", args.dask_planes)
            got["dask"] = run("dask", lambda: dask_part(zgpu, path, src, args, n_gpus))
            del src
        if "xarray" in parts:
            vols = {v: datasets.make(v, planes=args.planes) for v in bg.VOLUMES}
            got["xarray"] = run("xarray", lambda: xarray_part(zgpu, cp, lib, data_dir, vols, args))
        meta = {"machine": bg.machine(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "command": cmd, "planes": args.planes, "crops": args.crops, "repeat": args.repeat,
                "dask_planes": args.dask_planes, "spread_planes": args.spread_planes or args.planes}
    if args.json:
        json.dump({"meta": meta, **got}, open(args.json, "w"), indent=1)
    if not args.merge_json:
        metas = {k: meta for k in keys} | {"all": meta}
    text = section(metas, got["pipeline"], got["xarray"], got["spread"], got["dask"])
    print(text)
    if args.docs:
        bg.replace_section(os.path.join(ROOT, "docs", "benchmarks.md"), text, SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
