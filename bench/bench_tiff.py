#!/usr/bin/env python3
"""Tiled TIFF into GPU memory (issue 22): zgpu against tifffile + imagecodecs, rasterio / GDAL and nvImageCodec.

Files: 8192x8192 images (the first 64 planes of a benchmark volume of ../shared/bench/datasets.py laid out as an
8x8 mosaic of its 1024x1024 planes): uint16 (oct_u16) and float32 (field_f32), tiled 256x256 and 512x512, each
stored as Deflate + predictor (2 for integers, 3 for floats), LZW + predictor 2 (uint16), Zstd and none, and a
3-band 8-bit RGB Cloud-Optimized GeoTIFF (the OCT mosaic's high bytes, three shifts of it; Deflate + predictor 2,
512x512 tiles, two overviews), written once by tifffile (with imagecodecs) into --data.

Readers, each into GPU memory:
  zgpu        zgpu.open(file) read with device="cuda" (CUDA events on the current stream)
  tifffile    tifffile.imread(file, maxworkers=all cores) with imagecodecs, then cupy.asarray (wall time)
  gdal        rasterio: dataset.read() with GDAL_NUM_THREADS=ALL_CPUS, then cupy.asarray (wall time)
  nvimgcodec  nvImageCodec's decoder, straight into GPU memory (wall time), where its wheel is importable

Each reader: one warm-up read (files in the page cache), then the median of --repeat; the first result of every
reader is compared with the source image. GB/s = decoded bytes / time, 1 GB = 1e9 bytes. Readers that are not
importable are "-". Target (issue 22): zgpu >= 10x tifffile-plus-copy on every file.

--docs writes the section "Tiled TIFF into GPU memory" of docs/benchmarks.md; --json keeps the rows;
--merge-json a.json,b.json joins runs (each reader's figure from the first file that has it: tifffile and rasterio
do not fit one call's carry to the GPU machine together).

Usage: python bench/bench_tiff.py [--lib build/lib/libzgpu.so] [--data DIR] [--repeat 5] [--readers zgpu,tifffile,...]
                                  [--files name,...] [--json out.json] [--merge-json a,b] [--docs]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_gpu as bg  # noqa: E402  (machine(), replace_section(), median_events(), shared_root())

SECTION = "Tiled TIFF into GPU memory"
SIDE = 8192
READERS = ("zgpu", "tifffile", "gdal", "nvimgcodec")


def mosaic(vol: str) -> np.ndarray:
    """8192x8192: the volume's first 64 planes of 1024x1024 as an 8x8 mosaic."""
    sys.path.insert(0, os.path.join(bg.shared_root(), "bench"))
    import datasets
    v = datasets.make(vol, planes=64)
    return v.reshape(8, 8, 1024, 1024).transpose(0, 2, 1, 3).reshape(SIDE, SIDE)


def file_specs():
    """(name, source volume, dtype kind, tile, compression, predictor, overviews) of every benchmark file;
    overviews: None, "tifffile" (two reduced-resolution pages after the image) or "gdal" (a COG written by GDAL's
    COG driver through rasterio, with its overviews)."""
    out = []
    for vol, dt in (("oct_u16", "u16"), ("field_f32", "f32")):
        pred = 2 if dt == "u16" else 3
        for tile in (256, 512):
            codecs = [("deflate", pred), ("zstd", 1), ("none", 1)]
            if dt == "u16":
                codecs.insert(1, ("lzw", 2))
            for comp, p in codecs:
                name = f"{dt}_t{tile}_{comp}" + (f"_p{p}" if p > 1 else "")
                out.append((name, vol, dt, tile, comp, p, None))
    out.append(("rgb8_t512_deflate_p2_ovr", "oct_u16", "rgb8", 512, "deflate", 2, "tifffile"))
    out.append(("rgb8_cog_t512_deflate_p2", "oct_u16", "rgb8", 512, "deflate", 2, "gdal"))
    return out


def source(vol: str, kind: str) -> np.ndarray:
    m = mosaic(vol)
    if kind == "rgb8":
        hi = (m >> 8).astype(np.uint8)
        return np.stack([hi, np.roll(hi, 97, axis=1), hi[::-1]], axis=-1)  # (y, x, 3): PlanarConfiguration 1
    return m


def write_cog_gdal(path: str, img: np.ndarray, tile: int, pred: int) -> None:
    import rasterio
    from rasterio.transform import from_origin
    tmp = path + ".tmp.tif"
    bands = np.moveaxis(img, -1, 0) if img.ndim == 3 else img[None]
    with rasterio.Env(GDAL_NUM_THREADS="ALL_CPUS"):
        with rasterio.open(tmp, "w", driver="COG", width=img.shape[1], height=img.shape[0], count=bands.shape[0],
                           dtype=img.dtype, compress="DEFLATE", predictor=pred, blocksize=tile,
                           overview_resampling="nearest", bigtiff="NO", crs="EPSG:32633",
                           transform=from_origin(500000.0, 5000000.0, 10.0, 10.0)) as ds:
            ds.write(bands)
    os.replace(tmp, path)


def write_file(path: str, img: np.ndarray, tile: int, comp: str, pred: int, ovr) -> None:
    if ovr == "gdal":
        return write_cog_gdal(path, img, tile, pred)
    import tifffile
    compression = None if comp == "none" else {"deflate": "adobe_deflate", "lzw": "lzw", "zstd": "zstd"}[comp]
    kw = dict(tile=(tile, tile), compression=compression, predictor=pred if pred > 1 else None,
              maxworkers=os.cpu_count(), metadata=None)
    if img.ndim == 3:
        kw["photometric"] = "rgb"
    tmp = path + ".tmp"
    with tifffile.TiffWriter(tmp, bigtiff=False) as w:
        w.write(img, **kw)
        if ovr:  # two reduced-resolution pages after the full image, as GDAL lays out a COG's overviews
            for k in (2, 4):
                w.write(img[::k, ::k], subfiletype=1, **kw)
    os.replace(tmp, path)


def ensure_files(data: str, names) -> dict:
    os.makedirs(data, exist_ok=True)
    files, sources = {}, {}
    for name, vol, kind, tile, comp, pred, ovr in file_specs():
        if names and name not in names:
            continue
        key = (vol, kind)
        if key not in sources:
            sources[key] = source(vol, kind)
        path = os.path.join(data, name + ".tif")
        if not os.path.exists(path):
            try:
                write_file(path, sources[key], tile, comp, pred, ovr)
            except (ImportError, KeyError) as e:  # (tifffile without imagecodecs: a KeyError naming it)
                print(f"{name}: not written here ({e}); a run with its writer writes it", flush=True)
                continue
        files[name] = (path, sources[key])
    return files


# ---------------------------------------------------------------------------------------------------
# Readers: each returns (first result on the device, seconds)
# ---------------------------------------------------------------------------------------------------
LAST_ZGPU_STATS: dict = {}  # the route of zgpu's last timed read and where its tiles decoded


def read_zgpu(cp, path, repeat):
    import zgpu
    a = zgpu.open(path)
    if not hasattr(a, "read"):  # a file of several levels: its full-resolution one
        a = a.levels[0] if hasattr(a, "levels") else a[0]
    first = a.read(device="cuda")
    sec = bg.median_events(cp, lambda: a.read(device="cuda"), repeat)
    st = a.last_read_stats
    LAST_ZGPU_STATS.clear()
    LAST_ZGPU_STATS.update(route="device" if st["route"] == 1 else "host", gpu_decoded=st["gpu_decoded"],
                           cpu_decoded=st["cpu_decoded"])
    return first, sec


def read_tifffile(cp, path, repeat):
    import tifffile
    fn = lambda: cp.asarray(tifffile.imread(path, maxworkers=os.cpu_count()))  # noqa: E731
    first = fn()
    return first, bg.median_wall(cp, fn, repeat)


def read_gdal(cp, path, repeat):
    import rasterio
    with rasterio.Env(GDAL_NUM_THREADS="ALL_CPUS", GDAL_CACHEMAX=0):
        def fn():
            with rasterio.open(path) as ds:
                a = ds.read()  # (bands, y, x)
            return cp.asarray(a[0] if a.shape[0] == 1 else np.moveaxis(a, 0, -1))
        first = fn()
        return first, bg.median_wall(cp, fn, repeat)


def read_nvimgcodec(cp, path, repeat):
    from nvidia import nvimgcodec
    dec = nvimgcodec.Decoder()
    params = nvimgcodec.DecodeParams(color_spec=nvimgcodec.ColorSpec.UNCHANGED, allow_any_depth=True)

    def fn():
        img = dec.decode(nvimgcodec.CodeStream(path), params=params)  # (the file read, parsed and decoded)
        if img is None:
            raise RuntimeError("nvImageCodec decoded nothing")
        return cp.asarray(img)
    first = fn()
    return first, bg.median_wall(cp, fn, repeat)


READ = {"zgpu": read_zgpu, "tifffile": read_tifffile, "gdal": read_gdal, "nvimgcodec": read_nvimgcodec}


def run(args) -> list:
    import cupy as cp
    if args.lib:
        os.environ["ZGPU_LIB"] = args.lib
    names = [n for n in args.files.split(",") if n]
    files = ensure_files(args.data, names)
    readers = [r for r in args.readers.split(",") if r]
    rows = []
    for name, (path, src) in files.items():
        row = {"file": name, "bytes": int(src.nbytes), "stored": os.path.getsize(path)}
        for r in readers:
            try:
                first, sec = READ[r](cp, path, args.repeat)
                got = cp.asnumpy(first).reshape(src.shape) if first.size == src.size else None
                del first
                if got is None or not np.array_equal(got, src):
                    raise ValueError("a wrong image")
            except Exception as e:  # noqa: BLE001 (a peer that cannot read a file is reported, not fatal)
                if r == "zgpu":
                    raise
                print(f"{name}: {r}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                row.setdefault("failed", {})[r] = f"{type(e).__name__}: {str(e)[:120]}"
                continue
            row[r] = sec
            if r == "zgpu":
                row["zgpu_route"] = dict(LAST_ZGPU_STATS)
            print(f"{name}: {r} {sec * 1e3:.1f} ms, {src.nbytes / sec / 1e9:.2f} GB/s"
                  + (f" {row['zgpu_route']}" if r == "zgpu" else ""), flush=True)
        rows.append(row)
    return rows


def section(rows, metas) -> str:
    L = [f"## {SECTION}", ""]
    L.append("8192x8192 images (the first 64 planes of a benchmark volume as an 8x8 mosaic of 1024x1024 planes; "
             "uint16: oct_u16, float32: field_f32; rgb8: a 3-band 8-bit COG of the OCT mosaic's high bytes with two "
             "overviews), tiled 256x256 (t256) or 512x512 (t512), written by tifffile with imagecodecs, files in the "
             "page cache, read whole into GPU memory: zgpu `zgpu.open(f).read(device=\"cuda\")` (CUDA events), "
             "tifffile + imagecodecs on all cores then `cupy.asarray`, rasterio (GDAL, `GDAL_NUM_THREADS=ALL_CPUS`) "
             "then `cupy.asarray`, nvImageCodec where its wheel was carried (wall time). Median of the repeats "
             "after a warm-up; GB/s of decoded bytes. Target: zgpu >= 10x tifffile-plus-copy on every file.")
    for m in metas:
        L.append("")
        L.append(f"Run ({', '.join(m.get('readers_run', []))}): {m['machine']}; {m['date']}; `{m['command']}`.")
    L += ["", "| file | ratio | zgpu GB/s (route) | tifffile+copy GB/s | GDAL+copy GB/s | nvImageCodec GB/s | zgpu / tifffile | "
          "zgpu / GDAL |", "|---|---|---|---|---|---|---|---|"]

    def gbs(r, k):
        return f"{r['bytes'] / r[k] / 1e9:.2f}" if k in r else "-"

    def ratio(r, k):
        return f"{r[k] / r['zgpu']:.1f}x" if k in r and "zgpu" in r else "-"
    for r in rows:
        route = r.get("zgpu_route", {}).get("route")
        L.append(f"| {r['file']} | {r['bytes'] / r['stored']:.2f} | {gbs(r, 'zgpu')}{f' ({route})' if route else ''} | "
                 f"{gbs(r, 'tifffile')} | "
                 f"{gbs(r, 'gdal')} | {gbs(r, 'nvimgcodec')} | {ratio(r, 'tifffile')} | {ratio(r, 'gdal')} |")
    met = [r for r in rows if "zgpu" in r and "tifffile" in r and r["tifffile"] / r["zgpu"] >= 10]
    both = [r for r in rows if "zgpu" in r and "tifffile" in r]
    L += ["", f"{len(met)} of {len(both)} files at 10x tifffile-plus-copy or more."]
    fails = [(r["file"], k, v) for r in rows for k, v in sorted(r.get("failed", {}).items()) if k not in r]
    if fails:
        L += ["", "Readers that could not read a file (\"-\" above): " +
              "; ".join(f"{k} on {f}: {v}" for f, k, v in fails) + "."]
    return "\n".join(L) + "\n"


def merge(paths):
    rows, metas = {}, []
    for p in paths:
        d = json.load(open(p))
        metas.append(d["meta"])
        for r in d["rows"]:
            have = rows.setdefault(r["file"], {"file": r["file"], "bytes": r["bytes"], "stored": r["stored"]})
            for k in READERS + ("zgpu_route",):
                if k in r and k not in have:
                    have[k] = r[k]
            for k, v in r.get("failed", {}).items():
                have.setdefault("failed", {}).setdefault(k, v)
    return list(rows.values()), metas


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default="")
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data", "tiff"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument("--files", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--merge-json", default="")
    ap.add_argument("--docs", action="store_true")
    args = ap.parse_args()
    if args.merge_json:
        rows, metas = merge(args.merge_json.split(","))
    else:
        rows = run(args)
        meta = {"machine": bg.machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "command": "python bench/bench_tiff.py " + " ".join(sys.argv[1:]),
                "readers_run": sorted({k for r in rows for k in READERS if k in r})}
        metas = [meta]
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    text = section(rows, metas)
    print(text)
    if args.docs:
        bg.replace_section(os.path.join(ROOT, "docs", "benchmarks.md"), text, SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
