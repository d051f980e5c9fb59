#!/usr/bin/env python3
"""Before/after check of the GPU read path: two builds of libzgpu on the 12 benchmark cells, side by side.

The 12 cells of bench_gpu.py (volumes oct_u16, labels_u32, field_f32 x layouts zstd, blosc-lz4-shuffle, gzip,
sharded-zstd; default decoders) are read whole into GPU memory by each library in turn, in separate processes
(each library links its own CUDA runtime), alternating A, B, A, B ... for --rounds rounds so that drift of a
shared machine falls on both. Each process times every cell as bench_gpu.py does: one warm-up read, then the
median of --repeat reads between CUDA events; in the first round the first read is compared with the source volume. A cell's figure
is the median of its rounds; the table gives both libraries and B / A.

Arrays are written once (by library B) into --data, as bench_gpu.py writes them, and reused.

Usage: python bench/compare_gpu.py --lib-a OLD/libzgpu.so --lib-b NEW/libzgpu.so [--rounds 3] [--repeat 5]
                                   [--data DIR] [--volumes a,b] [--layouts x,y] [--markdown FILE]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_gpu  # noqa: E402  (metadata(), shared_root(), median_events())

LAYOUTS = ["zstd", "blosc-lz4-shuffle", "gzip", "sharded-zstd"]


def open_lib(path: str):
    c = ctypes.CDLL(path)
    vp, u64p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)
    c.zgpu_last_error.restype = ctypes.c_char_p
    c.zgpu_context_create.argtypes = [vp, ctypes.POINTER(vp)]
    c.zgpu_array_create.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp)]
    c.zgpu_array_open.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(vp)]
    c.zgpu_array_close.argtypes = [vp]
    c.zgpu_array_write.argtypes = [vp, u64p, u64p, vp, vp]
    c.zgpu_array_read_device.argtypes = [vp, u64p, u64p, vp, vp, vp]
    ctx = vp()
    if c.zgpu_context_create(None, ctypes.byref(ctx)) != 0:  # default options: what users get
        raise RuntimeError(c.zgpu_last_error().decode())
    return c, ctx


def check(c, st: int, what: str) -> None:
    if st != 0:
        raise RuntimeError(f"{what}: status {st}: {c.zgpu_last_error().decode()}")


def cells(args):
    for vol in args.volumes.split(","):
        for lay in args.layouts.split(","):
            yield vol, lay, os.path.join(args.data, f"{vol}.{lay}.zgpu.zarr")


def prepare(args) -> None:
    """Writes the arrays that are missing (with library B)."""
    import numpy as np
    sys.path.insert(0, os.path.join(bench_gpu.shared_root(), "bench"))
    import datasets
    c, ctx = open_lib(args.lib_b)
    os.makedirs(args.data, exist_ok=True)
    made = {}
    for vol, lay, path in cells(args):
        if os.path.exists(os.path.join(path, ".complete")):
            continue
        if vol not in made:
            made.clear()
            made[vol] = datasets.make(vol)
        src = np.ascontiguousarray(made[vol])
        h = ctypes.c_void_p()
        meta = json.dumps(bench_gpu.metadata(src.shape, src.dtype, lay)).encode()
        check(c, c.zgpu_array_create(ctx, path.encode(), meta, 1, ctypes.byref(h)), f"create {path}")
        nd = src.ndim
        start, count = (ctypes.c_uint64 * nd)(*([0] * nd)), (ctypes.c_uint64 * nd)(*src.shape)
        check(c, c.zgpu_array_write(h, start, count, src.ctypes.data_as(ctypes.c_void_p), None), f"write {path}")
        c.zgpu_array_close(h)
        open(os.path.join(path, ".complete"), "w").close()
        print(f"wrote {path}", flush=True)
    os.sync()


def worker(args) -> None:
    """One library, every cell: prints {cell: seconds} as JSON on its last line."""
    import cupy as cp
    import numpy as np
    sys.path.insert(0, os.path.join(bench_gpu.shared_root(), "bench"))
    import datasets
    c, ctx = open_lib(args.worker)
    out = {}
    src_of = {}
    for vol, lay, path in cells(args):
        h = ctypes.c_void_p()
        check(c, c.zgpu_array_open(ctx, path.encode(), ctypes.byref(h)), f"open {path}")
        with open(os.path.join(path, "zarr.json")) as f:
            meta = json.load(f)
        shape, dtype = tuple(meta["shape"]), np.dtype(meta["data_type"])
        nd = len(shape)
        start, count = (ctypes.c_uint64 * nd)(*([0] * nd)), (ctypes.c_uint64 * nd)(*shape)
        buf = cp.empty(shape, dtype=dtype)
        stream = cp.cuda.get_current_stream().ptr

        def read():
            check(c, c.zgpu_array_read_device(h, start, count, ctypes.c_void_p(buf.data.ptr), None,
                                              ctypes.c_void_p(stream)), f"read {path}")

        if args.check:  # the first round only: making the volumes takes 20 s
            if vol not in src_of:
                src_of.clear()
                src_of[vol] = datasets.make(vol)
            buf.fill(0x5A if dtype.itemsize == 1 else 12345)
            read()
            if not bool(cp.all(buf == cp.asarray(src_of[vol]))):
                raise RuntimeError(f"{path}: {args.worker} read wrong data")
        out[f"{vol}/{lay}"] = bench_gpu.median_events(cp, read, args.repeat)
        c.zgpu_array_close(h)
        del buf
    print(json.dumps(out), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib-a")
    ap.add_argument("--lib-b")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default=os.path.join(bench_gpu.ROOT, "bench", "data"))
    ap.add_argument("--volumes", default=",".join(bench_gpu.VOLUMES))
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--markdown", default=None, help="also write the table here")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    if not (args.lib_a and args.lib_b):
        ap.error("--lib-a and --lib-b are required")
    prepare(args)
    times = {"a": [], "b": []}
    common = [sys.executable, os.path.abspath(__file__), "--data", args.data, "--volumes", args.volumes,
              "--layouts", args.layouts, "--repeat", str(args.repeat)]
    for r in range(args.rounds):
        for which, lib in (("a", args.lib_a), ("b", args.lib_b)):
            p = subprocess.run(common + ["--worker", lib] + (["--check"] if r == 0 else []), capture_output=True,
                               text=True)
            if p.returncode != 0:
                print(p.stdout, p.stderr, file=sys.stderr)
                return 1
            times[which].append(json.loads(p.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1} {which}: " + " ".join(f"{k}={v * 1e3:.1f}" for k, v in times[which][-1].items()),
                  flush=True)
    lines = ["| volume | layout | A ms (rounds) | B ms (rounds) | A median | B median | B / A |", "|---|---|---|---|---|---|---|"]
    worst = 0.0
    for vol, lay, _ in cells(args):
        k = f"{vol}/{lay}"
        a = [t[k] * 1e3 for t in times["a"]]
        b = [t[k] * 1e3 for t in times["b"]]
        ma, mb = statistics.median(a), statistics.median(b)
        worst = max(worst, mb / ma)
        lines.append(f"| {vol} | {lay} | {' '.join(f'{x:.1f}' for x in a)} | {' '.join(f'{x:.1f}' for x in b)} | "
                     f"{ma:.1f} | {mb:.1f} | {mb / ma:.3f} |")
    lines.append(f"\nA: {args.lib_a}; B: {args.lib_b}; {args.rounds} rounds, median of {args.repeat} reads each; "
                 f"largest B / A: {worst:.3f}")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
