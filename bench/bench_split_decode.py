"""Host reads of few zstd or gzip chunks, each chunk decoded on one thread (libzstd, libdeflate) or split over the
idle threads (split_decode: src/codec/zstd_split.c, src/codec/deflate_split.c): reads into NumPy on the host threads
(host_read_route "host"), median ms.

cells   the zstd, sharded-zstd and gzip layouts of the three volumes of ../shared/bench/datasets.py (--planes
        planes), written by zgpu as bench_gpu.py writes them (chunks 64x256x256; shards 128x512x512 of 32x128x128)
reads   chunk: one whole chunk; crop: 100 random 32x128x128 boxes (1-4 chunks each, seed 11), one read each, ms a
        crop; 4 chunks: a 64x512x512 box; plane: a 1x1024x1024 plane (16 chunks)
One warm-up pass, then the median of --repeat passes; split off and on in the same process, alternating, and
tensorstore (file kvstore, all cores, no cache) beside them.

Usage: python bench/bench_split_decode.py [--lib build/lib/libzgpu.so] [--planes 64] [--repeat 5] [--json PATH]
       [--docs]; python bench/bench_split_decode.py --from-json PATH --docs (the table of a run on another machine)
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpu as bg  # noqa: E402

ROOT = bg.ROOT
SECTION = "Host reads of few chunks: one thread a chunk or split (`split_decode`)"
LAYOUTS = ["zstd", "sharded-zstd", "gzip"]


def crop_boxes(shape, n, seed):
    rng = np.random.default_rng(seed)
    crop = [min(c, s) for c, s in zip((32, 128, 128), shape)]  # (volumes of fewer than 32 planes: thinner crops)
    out = []
    for _ in range(n):
        st = [int(rng.integers(0, s - c + 1)) for s, c in zip(shape, crop)]
        out.append(tuple(slice(a, a + c) for a, c in zip(st, crop)))
    return out


def reads_of(shape):
    return {"chunk": [tuple(slice(0, min(c, s)) for c, s in zip(bg.CHUNKS, shape))],
            "crop": crop_boxes(shape, 100, 11),
            "4 chunks": [(slice(0, min(64, shape[0])), slice(0, 512), slice(0, 512))],
            "plane": [(slice(0, 1), slice(0, shape[1]), slice(0, shape[2]))]}


def timed(fn, boxes, repeat):
    """Median over passes of the time a pass takes per box (ms)."""
    for b in boxes:
        fn(b)
    passes = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for b in boxes:
            fn(b)
        passes.append((time.perf_counter() - t0) / len(boxes))
    return statistics.median(passes) * 1e3


def cell_rows(zgpu, path, src, cell, repeat):
    arrays = {}
    for split in (False, None):
        zgpu.config.set(host_read_route="host", split_decode=split, cache_bytes=0)
        arrays["on" if split is None else "off"] = zgpu.open_array(path)
    zgpu.config.set(host_read_route=None, split_decode=None)
    try:
        import tensorstore as ts
        store = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path},
                         "context": {"cache_pool": {"total_bytes_limit": 0},
                                     "data_copy_concurrency": {"limit": os.cpu_count()},
                                     "file_io_concurrency": {"limit": os.cpu_count()}}}, read=True).result()
    except ImportError:
        store = None
    rows = []
    for name, boxes in reads_of(src.shape).items():
        for b in boxes[:3]:  # checked against the source
            for a in arrays.values():
                if not np.array_equal(a[b], src[b]):
                    raise RuntimeError(f"{cell} {name}: wrong result")
        r = {"cell": cell, "read": name}
        times = {"off": [], "on": []}
        for _ in range(2):  # alternating, so that the machine's drift falls on both
            for k, a in arrays.items():
                times[k].append(timed(lambda b, a=a: a[b], boxes, repeat))
        r["off"], r["on"] = min(times["off"]), min(times["on"])
        s = arrays["on"].last_read_stats
        r["chunks"] = s.get("chunks", 0)
        if store is not None:
            r["ts"] = timed(lambda b: store[b].read().result(), boxes, repeat)
        print(f"  {cell:24s} {name:9s} one thread {r['off']:8.2f}  split {r['on']:8.2f}  "
              f"ts {r.get('ts', 0):8.2f} ms", flush=True)
        rows.append(r)
    return rows


def section(meta, rows):
    lines = [f"## {SECTION}", "",
             f"Machine: {meta['machine']}. Date: {meta['date']}. Command: `{meta['command']}`. Volumes of "
             f"{meta['planes']} planes (x1024x1024), Zarr v3 written by zgpu (zstd level 3, gzip level 5; chunks "
             "64x256x256, shards 128x512x512 of 32x128x128), files in the page cache. Reads into NumPy on the host "
             "threads (`host_read_route=\"host\"`, all cores), median of passes (ms a read; crop: 100 random "
             "32x128x128 boxes, ms a crop): `split_decode` off (each chunk on one thread, libzstd or libdeflate) and "
             "on (a read of fewer chunks than threads splits each zstd frame or DEFLATE stream over the idle "
             "threads), tensorstore (file kvstore, all cores, no cache) beside them.", "",
             "| cell | read | one thread ms | split ms | speedup | tensorstore ms | split / ts |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        ts = r.get("ts")
        tail = f"{ts:.2f} | {ts / r['on']:.2f}x" if ts else "- | -"
        lines.append(f"| {r['cell']} | {r['read']} | {r['off']:.2f} | {r['on']:.2f} | {r['off'] / r['on']:.2f}x | {tail} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libzgpu.so"))
    ap.add_argument("--planes", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cells", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--from-json", default="", help="render the table of an earlier run's --json (no reads)")
    ap.add_argument("--docs", action="store_true")
    args = ap.parse_args()
    if args.from_json:
        got = json.load(open(args.from_json))
        meta, rows = got["meta"], got["rows"]
    else:
        meta, rows = run(args)
        if args.json:
            json.dump({"meta": meta, "rows": rows}, open(args.json, "w"), indent=1)
    text = section(meta, rows)
    print(text)
    if args.docs:
        bg.replace_section(os.path.join(ROOT, "docs", "benchmarks.md"), text, SECTION)
    return 0


def run(args):
    """Every cell's reads: (meta, rows)."""
    lib = bg.Lib(args.lib)
    zgpu = lib.zgpu
    sys.path.insert(0, os.path.join(bg.shared_root(), "bench"))
    import datasets
    cells = [c.split(".") for c in args.cells.split(",")] if args.cells else \
        [(v, lay) for v in bg.VOLUMES for lay in LAYOUTS]
    data_dir = os.path.join(ROOT, "bench", "data")
    os.makedirs(data_dir, exist_ok=True)
    rows = []
    for vol, lay in cells:
        src = datasets.make(vol, planes=args.planes)
        path = bg.cell_array(lib, data_dir, vol, lay, src, args.planes)
        rows += cell_rows(zgpu, path, src, f"{vol} {lay}", args.repeat)
    meta = {"machine": bg.machine(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": "python bench/bench_split_decode.py " + " ".join(sys.argv[1:]), "planes": args.planes}
    return meta, rows


if __name__ == "__main__":
    sys.exit(main())
