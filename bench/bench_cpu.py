#!/usr/bin/env python3
"""CPU read-all benchmark: zgpu against tensorstore and zarr-python on the shared benchmark volumes.

For each volume of ../shared/bench/datasets.py (oct_u16, labels_u32, field_f32) and each storage layout
(zstd, blosc-lz4-shuffle, gzip, sharded zstd), the array is written once by zarr-python into bench/data/,
then read whole by each reader: one warm-up read (which also warms the page cache), then the median of
--repeat timed reads. Throughput is decoded bytes / wall time (GB = 1e9 bytes).

Readers:
  zgpu-py     in-process through the Python package `zgpu` (when importable)
  zgpu-bench  the CLI's own timing loop: `zgpu bench PATH` (median wall of the library read)
  zgpu-cli    `zgpu read PATH -o /dev/null`, whole-process wall time (includes start-up and open)
  tensorstore zarr3 driver, file kvstore, concurrency limits = number of cores, no cache
  zarr-python zarr.open_array(path)[...], default configuration

The results go into docs/benchmarks.md, section "CPU read-all" (other sections are kept), unless
--planes is given (a quick run) and --docs is not.

Usage: python bench/bench_cpu.py [--planes N] [--repeat 5] [--volumes a,b] [--layouts x,y] [--docs]
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SHARED = os.path.abspath(os.path.join(ROOT, "..", "shared"))
warnings.filterwarnings("ignore")

VOLUMES = ["oct_u16", "labels_u32", "field_f32"]
LAYOUTS = ["zstd", "blosc-lz4-shuffle", "gzip", "sharded-zstd"]
CHUNKS = (64, 256, 256)
SHARDS, INNER = (128, 512, 512), (32, 128, 128)
SECTION = "CPU read-all"


def shared_root() -> str:
    try:
        top = subprocess.run(["git", "-C", ROOT, "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                             check=True).stdout.strip()
        cand = os.path.join(top, "..", "shared")
        if os.path.isdir(cand):
            return os.path.abspath(cand)
    except (OSError, subprocess.CalledProcessError):
        pass
    return SHARED


def load_datasets():
    sys.path.insert(0, os.path.join(shared_root(), "bench"))
    import datasets  # noqa: E402  (../shared/bench/datasets.py)
    return datasets


# ---------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------
def write_array(path: str, data: np.ndarray, layout: str) -> None:
    import zarr
    import zarr.codecs as zc
    chunks = tuple(min(c, s) for c, s in zip(CHUNKS, data.shape))
    kw = dict(shape=data.shape, dtype=data.dtype, zarr_format=3, filters=None, fill_value=0)
    if layout == "zstd":
        a = zarr.create_array(path, chunks=chunks, compressors=[zc.ZstdCodec()], **kw)
    elif layout == "blosc-lz4-shuffle":
        a = zarr.create_array(path, chunks=chunks, compressors=[zc.BloscCodec(cname="lz4", clevel=5,
                                                                              shuffle="shuffle")], **kw)
    elif layout == "gzip":
        a = zarr.create_array(path, chunks=chunks, compressors=[zc.GzipCodec()], **kw)
    elif layout == "sharded-zstd":
        a = zarr.create_array(path, chunks=INNER, shards=SHARDS, compressors=[zc.ZstdCodec()], **kw)
    else:
        raise KeyError(layout)
    a[...] = data


def ensure_data(datasets, data_dir: str, volume: str, layouts, planes):
    """Writes the arrays of one volume that are missing; returns (source array or None, {layout: path})."""
    tag = volume if planes is None else f"{volume}_p{planes}"
    paths = {lay: os.path.join(data_dir, f"{tag}.{lay}.zarr") for lay in layouts}
    todo = [lay for lay, p in paths.items() if not os.path.exists(os.path.join(p, ".complete"))]
    src = None
    if todo:
        t = time.perf_counter()
        src = datasets.make(volume, planes=planes)
        print(f"  made {volume} {src.shape} {src.dtype} in {time.perf_counter() - t:.1f} s", flush=True)
        for lay in todo:
            shutil.rmtree(paths[lay], ignore_errors=True)
            t = time.perf_counter()
            write_array(paths[lay], src, lay)
            open(os.path.join(paths[lay], ".complete"), "w").close()
            print(f"  wrote {paths[lay]} in {time.perf_counter() - t:.1f} s", flush=True)
    return src, paths


def stored_bytes(path: str) -> int:
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            if f not in ("zarr.json", ".complete"):
                total += os.path.getsize(os.path.join(d, f))
    return total


# ---------------------------------------------------------------------------------------------------
# Readers: each returns (median seconds, first result or None)
# ---------------------------------------------------------------------------------------------------
def timed(fn, repeat: int):
    first = fn()  # warm-up: page cache, thread pools, imports
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), first


def read_zarr_python(path, repeat):
    import zarr
    return timed(lambda: zarr.open_array(path, mode="r")[...], repeat)


def read_tensorstore(path, repeat, ncores):
    import tensorstore as ts
    ctx = ts.Context({"cache_pool": {"total_bytes_limit": 0},
                      "data_copy_concurrency": {"limit": ncores},
                      "file_io_concurrency": {"limit": ncores}})

    def once():
        arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}, context=ctx,
                      open=True, read=True).result()
        return arr.read().result()
    return timed(once, repeat)


def zgpu_python():
    """The zgpu Python package, if it imports and can read (else None)."""
    try:
        sys.path.append(os.path.join(ROOT, "python"))  # an installed package (make python) comes first
        mod = importlib.import_module("zgpu")
        if not (hasattr(mod, "open_array") or hasattr(mod, "open")):
            raise ImportError("no zgpu.open / zgpu.open_array")
        return mod
    except Exception as e:  # noqa: BLE001 - any failure just means: not available
        print(f"  (zgpu Python package not usable: {type(e).__name__}: {e})", flush=True)
        return None


def read_zgpu_python(mod, path, repeat):
    opener = getattr(mod, "open_array", None) or getattr(mod, "open")
    return timed(lambda: opener(path)[...], repeat)


def read_zgpu_cli(cli, path, repeat):
    def once():
        subprocess.run([cli, "read", path, "-o", "/dev/null"], check=True, capture_output=True)
    return timed(once, repeat)


def read_zgpu_bench(cli, path, repeat):
    r = subprocess.run([cli, "bench", path, "--repeat", str(repeat), "--warmup", "1"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    m = re.search(r"median\s+([0-9.]+)\s*ms", r.stdout)
    if not m:
        raise RuntimeError(f"cannot parse zgpu bench output:\n{r.stdout}")
    return float(m.group(1)) / 1e3, None


# ---------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------
def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.M)
        if m:
            model = m.group(1).strip()
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{model}, {os.cpu_count()} cores{mem}, {platform.system()} {platform.release()}"


def git_commit() -> str:
    try:
        r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        commit = r.stdout.strip() or "uncommitted"
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return commit + (" (+ local changes)" if dirty else "")
    except OSError:
        return "unknown"


def versions() -> str:
    out = []
    for mod in ("zarr", "tensorstore", "numcodecs", "numpy"):
        try:
            out.append(f"{mod} {importlib.import_module(mod).__version__}")
        except Exception:  # noqa: BLE001
            pass
    return ", ".join(out)


def render(rows, readers, args, started) -> str:
    cmd = "python bench/bench_cpu.py" + "".join(f" {a}" for a in sys.argv[1:])
    cmd = cmd.replace(ROOT + os.sep, "")  # paths inside the repository, relative
    lines = [
        f"## {SECTION}",
        "",
        "Whole-array reads into host memory, decoded GB/s (1 GB = 1e9 bytes), median of "
        f"{args.repeat} runs after one warm-up read (page cache warm). Generated by `bench/bench_cpu.py`.",
        "",
        f"- machine: {machine()}",
        f"- command: `{cmd}`",
        f"- date: {started:%Y-%m-%d %H:%M} UTC",
        f"- zgpu commit: {git_commit()}",
        f"- readers: {versions()}; tensorstore with data_copy/file_io concurrency = {os.cpu_count()}, no cache",
        f"- layouts: chunks {'x'.join(map(str, CHUNKS))}; sharded: shards {'x'.join(map(str, SHARDS))} "
        f"with inner chunks {'x'.join(map(str, INNER))}; all written by zarr-python (zarr v3)",
        "",
        "| volume | layout | size | ratio | " + " | ".join(readers) + " |",
        "|---|---|---|---|" + "---|" * len(readers),
    ]
    for r in rows:
        cells = []
        for name in readers:
            v = r["gbps"].get(name)
            cells.append("n/a" if v is None else f"{v:.2f}")
        lines.append(f"| {r['volume']} {r['shape']} | {r['layout']} | {r['nbytes'] / 2**30:.2f} GiB | "
                     f"{r['ratio']:.2f} | " + " | ".join(cells) + " |")
    notes = sorted({n for r in rows for n in r["notes"]})
    if notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in notes]
    lines += ["", "zgpu-bench: the CLI's timing loop around the library read (`zgpu bench`); zgpu-cli: the "
              "whole `zgpu read -o /dev/null` process; zgpu-py: the Python package in-process.", ""]
    return "\n".join(lines)


def replace_section(doc_path: str, section_text: str) -> None:
    """Replaces the '## CPU read-all' section (up to the next '## ' heading) or appends it."""
    old = open(doc_path).read() if os.path.exists(doc_path) else "# zgpu benchmarks\n\n"
    pat = re.compile(rf"^## {re.escape(SECTION)}\n.*?(?=^## |\Z)", re.M | re.S)
    if pat.search(old):
        new = pat.sub(lambda _: section_text.rstrip("\n") + "\n\n", old, count=1)
    else:
        new = old.rstrip("\n") + "\n\n" + section_text
    new = new.rstrip("\n") + "\n"
    os.makedirs(os.path.dirname(doc_path), exist_ok=True)
    with open(doc_path, "w") as fh:
        fh.write(new)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--planes", type=int, default=None, help="planes along axis 0 (quick run); default full size")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--volumes", default=",".join(VOLUMES))
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data"))
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "zgpu"))
    ap.add_argument("--docs", action="store_true", help="write docs/benchmarks.md also for a --planes run")
    ap.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    ap.add_argument("--json", help="also write the raw results to this file")
    args = ap.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)
    ncores = os.cpu_count() or 1
    datasets = load_datasets()
    os.makedirs(args.data, exist_ok=True)
    have_cli = os.access(args.cli, os.X_OK)
    if not have_cli:
        print(f"warning: {args.cli} not found: zgpu columns will be n/a (run `make build`)", file=sys.stderr)
    zmod = zgpu_python()

    readers = ["zgpu-py", "zgpu-bench", "zgpu-cli", "tensorstore", "zarr-python"]
    rows = []
    for volume in args.volumes.split(","):
        layouts = args.layouts.split(",")
        print(f"{volume}:", flush=True)
        src, paths = ensure_data(datasets, args.data, volume, layouts, args.planes)
        for layout in layouts:
            path = paths[layout]
            meta = json.load(open(os.path.join(path, "zarr.json")))
            shape = tuple(meta["shape"])
            nbytes = int(np.prod(shape)) * np.dtype(meta["data_type"]).itemsize
            row = {"volume": volume, "shape": "x".join(map(str, shape)), "layout": layout, "nbytes": nbytes,
                   "ratio": nbytes / max(1, stored_bytes(path)), "gbps": {}, "notes": []}
            if src is None:  # data already on disk: regenerate the source only if a check needs it
                src = datasets.make(volume, planes=args.planes)
            jobs = {
                "zgpu-py": (lambda: read_zgpu_python(zmod, path, args.repeat)) if zmod else None,
                "zgpu-bench": (lambda: read_zgpu_bench(args.cli, path, args.repeat)) if have_cli else None,
                "zgpu-cli": (lambda: read_zgpu_cli(args.cli, path, args.repeat)) if have_cli else None,
                "tensorstore": lambda: read_tensorstore(path, args.repeat, ncores),
                "zarr-python": lambda: read_zarr_python(path, args.repeat),
            }
            for name in readers:
                job = jobs[name]
                if job is None:
                    continue
                try:
                    secs, result = job()
                except Exception as e:  # noqa: BLE001 - a reader failing is a result to report, not a crash
                    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    row["notes"].append(f"{name} failed on {volume}/{layout}: {msg[:200]}")
                    print(f"  {layout:18s} {name:12s} FAILED: {msg[:200]}", flush=True)
                    continue
                if result is not None and not np.array_equal(np.asarray(result), src):
                    row["notes"].append(f"{name} returned WRONG DATA for {volume}/{layout}")
                    print(f"  {layout:18s} {name:12s} WRONG DATA", flush=True)
                    continue
                row["gbps"][name] = nbytes / secs / 1e9
                print(f"  {layout:18s} {name:12s} {secs * 1e3:9.1f} ms  {nbytes / secs / 1e9:6.2f} GB/s", flush=True)
            rows.append(row)
        src = None

    text = render(rows, readers, args, started)
    print()
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    if not args.no_docs and (args.planes is None or args.docs):
        doc = os.path.join(ROOT, "docs", "benchmarks.md")
        replace_section(doc, text)
        print(f"wrote section '{SECTION}' of {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
