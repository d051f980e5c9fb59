#!/usr/bin/env python3
"""GPU write-all benchmark: whole arrays written from GPU memory (issue 24).

For each volume of ../shared/bench/datasets.py and each layout of bench_gpu.py (zstd, blosc-lz4-shuffle, gzip level 5,
sharded zstd; Zarr v3, chunks 64x256x256, shards 128x512x512 of 32x128x128), the volume is put in GPU memory (CuPy)
once, then written whole, over the same array each time (every object replaced: temporary name, then rename), by

  zgpu          `arr[...] = device_array` (zgpu_array_write_device: gather, encode and copy back on the GPU, files
                written by the pool)
  ts+copy       the array copied to host memory (cupy.asnumpy), then tensorstore's write (all cores)
  zarr-python   the same copy, then `arr[...] = host_array` (zarr-python 3, default config)

Each writer: one warm-up write, then the median of --repeat timed writes (wall time, the device synchronized before;
a write returns when its files are written); zarr-python, whose writes take seconds: one timed write. GB/s = the array's decoded bytes / time (1 GB = 1e9 bytes); ratio =
decoded bytes / stored bytes. Every array zgpu wrote is read back by tensorstore and compared with the source, the
first time it is written.

--recompress: the recompression job on one cell: the gzip array rewritten as zstd (chunks the same) by
`zgpu cp --device cuda:0`, by `zgpu cp` (host), and by tensorstore (read, write).

Writes section "GPU write-all" of docs/benchmarks.md (other sections kept) unless --planes is given without --docs.

Usage: python bench/bench_write_gpu.py [--lib build/lib/libzgpu.so] [--planes N] [--repeat 3] [--volumes a,b]
                                       [--layouts x,y] [--dir D] [--no-zarr-python] [--recompress] [--docs]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_gpu  # noqa: E402  (metadata, machine, replace_section, shared_root)

ROOT = bench_gpu.ROOT
SECTION = "GPU write-all"
LAYOUTS = ["zstd", "blosc-lz4-shuffle", "gzip", "sharded-zstd"]
TARGET_TS = 5.0      # the target: zgpu at least 5x tensorstore-plus-copy
TARGET_RATIO = 0.90  # and a ratio within 10% of the CPU codec's (tensorstore's, at the same level)


def stored_bytes(path: str) -> int:
    return sum(os.path.getsize(f) for f in bench_gpu.stored_files(path))


def median_wall(cp, fn, repeat: int) -> float:
    """One warm-up write, then bench_gpu's median of synchronized wall times."""
    fn()
    return bench_gpu.median_wall(cp, fn, repeat)


def write_zgpu(zgpu, cp, path, meta, d_src, repeat):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    with open(os.path.join(path, "zarr.json"), "w") as fh:
        json.dump(meta, fh)
    arr = zgpu.open_array(path, mode="r+")

    def once():
        arr[...] = d_src

    return median_wall(cp, once, repeat)


def ts_spec(path: str) -> dict:
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": path},
            "context": {"cache_pool": {"total_bytes_limit": 0},
                        "data_copy_concurrency": {"limit": os.cpu_count()},
                        "file_io_concurrency": {"limit": os.cpu_count()}}}


def write_tensorstore(cp, path, meta, d_src, repeat):
    try:
        import tensorstore as ts
    except ImportError:
        return None
    shutil.rmtree(path, ignore_errors=True)
    spec = ts_spec(path)
    spec["metadata"] = meta
    store = ts.open(spec, create=True).result()

    def once():
        store.write(cp.asnumpy(d_src)).result()

    return median_wall(cp, once, repeat)


def write_zarr_python(cp, path, meta, d_src, repeat):
    try:
        import zarr
    except Exception as e:  # noqa: BLE001 - missing, or broken against this machine's numpy
        print(f"  zarr-python: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return None
    shutil.rmtree(path, ignore_errors=True)
    m = dict(meta)
    kw = {"chunks": m["chunk_grid"]["configuration"]["chunk_shape"]}
    kw.update(zarr_codecs(m))  # (sharded: shards, and the inner chunks as chunks)
    arr = zarr.create_array(path, shape=m["shape"], dtype=m["data_type"], fill_value=0, **kw)

    # one timed write, no warm-up: zarr-python's writes take seconds, and a first write pays nothing a later one
    # would not
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    arr[...] = cp.asnumpy(d_src)
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t


def zarr_codecs(meta: dict) -> dict:
    """zarr.create_array's codec arguments for bench_gpu's metadata."""
    from zarr.codecs import BloscCodec, GzipCodec, ShardingCodec, ZstdCodec, BytesCodec, Crc32cCodec
    c = meta["codecs"]
    if c[0]["name"] == "sharding_indexed":
        cfg = c[0]["configuration"]
        inner = cfg["chunk_shape"]
        return {"shards": meta["chunk_grid"]["configuration"]["chunk_shape"], "chunks": inner,
                "compressors": [ZstdCodec(level=0)], "serializer": BytesCodec()}
    comp = c[1]
    if comp["name"] == "zstd":
        return {"compressors": [ZstdCodec(level=0)]}
    if comp["name"] == "gzip":
        return {"compressors": [GzipCodec(level=comp["configuration"]["level"])]}
    cfg = comp["configuration"]
    return {"compressors": [BloscCodec(cname=cfg["cname"], clevel=cfg["clevel"], shuffle=cfg["shuffle"],
                                       typesize=cfg["typesize"])]}


def check_with_tensorstore(path: str, src: np.ndarray) -> str:
    try:
        import tensorstore as ts
    except ImportError:
        return "not checked (no tensorstore)"
    got = ts.open(ts_spec(path), read=True).result().read().result()
    return "" if np.array_equal(got, src) else "WRONG RESULT (tensorstore reads other values)"


def recompress(cp, zgpu_bin: str, src_path: str, work: str, meta_zstd: dict, repeat: int) -> list:
    """Seconds of gzip -> zstd by zgpu cp --device, zgpu cp, and tensorstore (read, write); each run removes the
    last one's output first (timed with it)."""
    rows = []
    dst = os.path.join(work, "recompressed.zarr")
    for label, extra in (("zgpu cp --device cuda:0", ["--device", "cuda:0"]), ("zgpu cp", [])):
        def once(extra=extra):
            shutil.rmtree(dst, ignore_errors=True)
            subprocess.run([zgpu_bin, "cp", src_path, dst, "--codec", "zstd:0", "-q"] + extra, check=True,
                           stdout=subprocess.DEVNULL)
        rows.append((label, median_wall(cp, once, repeat), stored_bytes(dst)))
    try:
        import tensorstore as ts
    except ImportError:
        return rows

    def ts_once():
        shutil.rmtree(dst, ignore_errors=True)
        spec = ts_spec(dst)
        spec["metadata"] = meta_zstd
        out = ts.open(spec, create=True).result()
        out.write(ts.open(ts_spec(src_path), read=True).result()).result()
    rows.append(("tensorstore (read, write)", median_wall(cp, ts_once, repeat), stored_bytes(dst)))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libzgpu.so"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "zgpu"))
    ap.add_argument("--planes", type=int)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--volumes", default="oct_u16,labels_u32,field_f32")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--dir", default=os.path.join(ROOT, "bench", "data", "write"))
    ap.add_argument("--no-zarr-python", action="store_true")
    ap.add_argument("--recompress", action="store_true")
    ap.add_argument("--docs", action="store_true")
    args = ap.parse_args()

    import cupy as cp
    os.environ["ZGPU_LIB"] = os.path.abspath(args.lib)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import zgpu
    sys.path.insert(0, os.path.join(bench_gpu.shared_root(), "bench"))
    import datasets

    os.makedirs(args.dir, exist_ok=True)
    rows = []
    for vol in args.volumes.split(","):
        src = datasets.make(vol, planes=args.planes)
        d_src = cp.asarray(src)
        for lay in args.layouts.split(","):
            meta = bench_gpu.metadata(src.shape, src.dtype, lay)
            r = {"vol": vol, "lay": lay, "nbytes": src.nbytes}
            p = os.path.join(args.dir, f"{vol}.{lay}.zgpu.zarr")
            r["zgpu"] = write_zgpu(zgpu, cp, p, meta, d_src, args.repeat)
            r["zgpu_ratio"] = src.nbytes / stored_bytes(p)
            r["check"] = check_with_tensorstore(p, src)
            pt = os.path.join(args.dir, f"{vol}.{lay}.ts.zarr")
            r["ts"] = write_tensorstore(cp, pt, meta, d_src, args.repeat)
            r["ts_ratio"] = src.nbytes / stored_bytes(pt) if r["ts"] else None
            r["zp"] = None
            if not args.no_zarr_python:
                pz = os.path.join(args.dir, f"{vol}.{lay}.zp.zarr")
                r["zp"] = write_zarr_python(cp, pz, meta, d_src, args.repeat)
                shutil.rmtree(pz, ignore_errors=True)
            shutil.rmtree(pt, ignore_errors=True)
            rows.append(r)
            gbs = lambda t: f"{src.nbytes / t / 1e9:.2f}" if t else "-"  # noqa: E731
            print(f"{vol:11s} {lay:18s} zgpu {gbs(r['zgpu'])} GB/s (ratio {r['zgpu_ratio']:.3f}) | ts+copy "
                  f"{gbs(r['ts'])} (ratio {r['ts_ratio'] or 0:.3f}) | zarr-python {gbs(r['zp'])} {r['check']}",
                  flush=True)
            if not (args.recompress and lay == "gzip" and vol == args.volumes.split(",")[0]):
                shutil.rmtree(p, ignore_errors=True)
        del d_src
    rc_rows = []
    if args.recompress:
        vol = args.volumes.split(",")[0]
        src_path = os.path.join(args.dir, f"{vol}.gzip.zgpu.zarr")
        src = datasets.make(vol, planes=args.planes)
        rc_rows = recompress(cp, args.bin, src_path, args.dir, bench_gpu.metadata(src.shape, src.dtype, "zstd"),
                             args.repeat)
        for label, t, n in rc_rows:
            print(f"recompress {vol} gzip -> zstd: {label}: {t * 1e3:.0f} ms, {src.nbytes / t / 1e9:.2f} GB/s, "
                  f"ratio {src.nbytes / n:.3f}", flush=True)
        shutil.rmtree(src_path, ignore_errors=True)

    fmt = lambda r, k: f"{r['nbytes'] / r[k] / 1e9:.2f}" if r[k] else "-"  # noqa: E731
    lines = [f"## {SECTION}", "",
             f"Whole arrays written from GPU memory. Machine: {bench_gpu.machine()}. Date: "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. Command: "
             f"`python bench/bench_write_gpu.py {' '.join(sys.argv[1:])}`. Zarr v3 as bench_gpu.py (chunks 64x256x256; "
             "sharded: 128x512x512 shards of 32x128x128; zstd level 0 = 3, gzip level 5, blosc lz4 clevel 5 shuffle). "
             "Median wall time of the timed writes after one warm-up (zarr-python: one write), each over the same array; GB/s = decoded "
             "bytes / time; ratio = decoded / stored bytes. ts+copy: `cupy.asnumpy` then tensorstore's write (all "
             "cores); zarr-python: the same copy, then `arr[...] =`. Every zgpu-written array was read back by "
             "tensorstore and compared with the source.", "",
             "| volume | layout | zgpu GB/s | ts+copy GB/s | zarr-python GB/s | zgpu / ts+copy | ratio zgpu | "
             "ratio tensorstore | check |",
             "|---|---|---|---|---|---|---|---|---|"]
    met = 0
    for r in rows:
        speed = r["ts"] / r["zgpu"] if r["ts"] else None
        ratio_ok = r["ts_ratio"] is None or r["zgpu_ratio"] >= TARGET_RATIO * r["ts_ratio"]
        met += bool(speed and speed >= TARGET_TS and ratio_ok)
        lines.append(f"| {r['vol']} | {r['lay']} | {fmt(r, 'zgpu')} | {fmt(r, 'ts')} | {fmt(r, 'zp')} | "
                     f"{speed or 0:.1f}x | {r['zgpu_ratio']:.3f} | {r['ts_ratio'] or 0:.3f} | {r['check'] or 'ok'} |")
    lines += ["", f"{met} of {len(rows)} cells at {TARGET_TS:g}x tensorstore-plus-copy with a ratio within "
              f"{(1 - TARGET_RATIO) * 100:.0f}% of tensorstore's."]
    if rc_rows:
        lines += ["", f"Recompression of {args.volumes.split(',')[0]} from gzip to zstd (same chunks), whole "
                  "processes for the CLI, median of the timed runs:", "",
                  "| tool | ms | GB/s (decoded) | ratio |", "|---|---|---|---|"]
        n = rows[0]["nbytes"]
        for label, t, nb in rc_rows:
            lines.append(f"| {label} | {t * 1e3:.0f} | {n / t / 1e9:.2f} | {n / nb:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.planes is None or args.docs:
        doc = os.path.join(ROOT, "docs", "benchmarks.md")
        bench_gpu.replace_section(doc, text, SECTION)
        print(f"wrote section '{SECTION}' of {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
