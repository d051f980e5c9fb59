#!/usr/bin/env python3
"""GPU read-all benchmark: whole arrays read into GPU memory.

For each volume of ../shared/bench/datasets.py and each layout (zstd, blosc-lz4-shuffle, gzip, sharded zstd;
Zarr v3, chunks 64x256x256, shards 128x512x512 with 32x128x128 inner chunks), the array is written once
by zgpu itself (zarr-python is not needed to write them) into bench/data/, then:

  zgpu         zgpu_array_read_device into a preallocated CuPy buffer (C API through ctypes)
  ts+copy      tensorstore read into host memory, then cupy.asarray (when tensorstore is importable)
  zarr-python  arr[...] under zarr.config.enable_gpu(), which returns a CuPy array (when zarr is importable;
               scripts/gpu/prepare-carry.sh carries its wheels to the GPU machine). Per chunk, zarr reads the
               file (a shard whole) into host memory and copies it to the GPU; its zstd/blosc/gzip codecs
               (numcodecs) copy the chunk back to host memory, decode it there and copy the result to the GPU

and the limits of the same bytes on the same machine:
  H2D          decoded bytes over a pinned host-to-device copy of that many bytes
  page cache   stored bytes read back with pread on a thread pool (files already cached)
  to GPU       the same bytes, in pieces, read into pinned memory and each copied to the device as it is read
  GPU decode   decoded bytes over zgpu's decode stage alone (nvCOMP batches + our kernels, CUDA events), from
               the same read without pipelining (tuning pipeline_waves=1: the fewest waves, decodes not overlapping)

Each reader: one warm-up read (page cache, nvCOMP and pool start-up), then the median of --repeat timed
reads, timed with CUDA events on the stream (wall time, device synchronized, for ts+copy and zarr-python).
The first result of every reader is compared with the source volume. GB = 1e9 bytes.

Writes section "GPU read-all" of docs/benchmarks.md (other sections kept) unless --planes is given
without --docs: the table, and each default-decoder cell against the targets (10x tensorstore-plus-copy, within
1.5x of its bound: the slower of the page cache read and the GPU decode stage).

Usage: python bench/bench_gpu.py [--lib build/lib/libzgpu.so] [--planes N] [--repeat 5]
                                 [--volumes a,b] [--layouts x,y] [--docs] [--no-docs] [--no-zarr-python]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import ctypes
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
VOLUMES = ["oct_u16", "labels_u32", "field_f32"]
# The gzip arrays are also read with the other DEFLATE decoders (zgpu's own GPU decoder is the default):
# "gzip-host" on host threads, "gzip-nvcomp" by nvCOMP (which needs valid input: a gpu_trust_input context).
# Each: (stored layout, trusted context, tuning of its reads: zgpu_tuning fields, docs/tuning.md).
DECODER_ROWS = {"gzip-host": ("gzip", False, {"deflate_decoder": "host"}),
                "gzip-nvcomp": ("gzip", True, {"deflate_decoder": "nvcomp"})}
# The tuning fields this benchmark sets; each context gets the defaults for those it does not name.
BENCH_TUNING = ("pipeline_waves", "zstd_decoder", "deflate_decoder", "lz4_decoder")
LAYOUTS = ["zstd", "blosc-lz4-shuffle", "gzip", "gzip-host", "gzip-nvcomp", "sharded-zstd"]
CHUNKS = (64, 256, 256)
SHARDS, INNER = (128, 512, 512), (32, 128, 128)
SECTION = "GPU read-all"


def shared_root() -> str:
    for cand in (os.path.join(ROOT, "..", "shared"), os.path.join(ROOT, "shared")):
        if os.path.isfile(os.path.join(cand, "bench", "datasets.py")):
            return os.path.abspath(cand)
    try:
        top = subprocess.run(["git", "-C", ROOT, "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                             check=True).stdout.strip()
        return os.path.abspath(os.path.join(top, "..", "shared"))
    except (OSError, subprocess.CalledProcessError):
        return os.path.join(ROOT, "..", "shared")


# ---------------------------------------------------------------------------------------------------
# The C library through ctypes
# ---------------------------------------------------------------------------------------------------
class ReadStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("plan_s", ctypes.c_double), ("io_s", ctypes.c_double),
                ("h2d_s", ctypes.c_double), ("decode_s", ctypes.c_double), ("scatter_s", ctypes.c_double),
                ("total_s", ctypes.c_double), ("stored_bytes", ctypes.c_uint64), ("decoded_bytes", ctypes.c_uint64),
                ("chunks", ctypes.c_int), ("waves", ctypes.c_int), ("gds_used", ctypes.c_int),
                ("gpu_decoded", ctypes.c_int), ("cpu_decoded", ctypes.c_int)]


class Lib:
    def __init__(self, path: str):
        self.c = ctypes.CDLL(path)
        c = self.c
        vp, u64p, i64p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_int64)
        c.zgpu_last_error.restype = ctypes.c_char_p
        c.zgpu_context_create.argtypes = [vp, ctypes.POINTER(vp)]
        c.zgpu_context_free.argtypes = [vp]
        c.zgpu_array_create.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp)]
        c.zgpu_array_open.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(vp)]
        c.zgpu_array_close.argtypes = [vp]
        c.zgpu_array_write.argtypes = [vp, u64p, u64p, vp, i64p]
        c.zgpu_array_read_device.argtypes = [vp, u64p, u64p, vp, i64p, vp]
        c.zgpu_array_last_read_stats.argtypes = [vp, ctypes.POINTER(ReadStats)]
        c.zgpu_gpu_available.restype = ctypes.c_int
        # Contexts come from the zgpu package (zgpu.config: gpu_trust_input and the tuning fields) loaded from the
        # same libzgpu.so: zgpu reads the environment once per process, so a setting per read goes through the API.
        os.environ["ZGPU_LIB"] = os.path.abspath(path)
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import zgpu  # noqa: E402
        if not os.path.samefile(zgpu.library_path(), path):
            raise RuntimeError(f"the zgpu package loaded {zgpu.library_path()}, not {path}")
        self.zgpu = zgpu
        self.base = self.context()  # writes (host only)

    def context(self, trusted: bool = False, **tuning):
        """A context (zgpu's Python Context: .handle) with gpu_trust_input and these tuning fields, the others at
        their defaults. Keep it while arrays opened with it are open; dropped, it frees its device buffers."""
        settings = dict.fromkeys(BENCH_TUNING)  # None: the default
        settings.update(tuning)
        self.zgpu.config.set(gpu_trust_input=trusted, **settings)
        return self.zgpu.config.context()

    def check(self, st: int, what: str) -> None:
        if st != 0:
            raise RuntimeError(f"zgpu {what}: status {st}: {self.c.zgpu_last_error().decode()}")

    def open(self, path: str, ctx):
        h = ctypes.c_void_p()
        self.check(self.c.zgpu_array_open(ctx.handle, path.encode(), ctypes.byref(h)), f"open {path}")
        return h

    def write(self, path: str, meta: dict, data: np.ndarray) -> None:
        h = ctypes.c_void_p()
        self.check(self.c.zgpu_array_create(self.base.handle, path.encode(), json.dumps(meta).encode(), 1,
                                            ctypes.byref(h)),
                   f"create {path}")
        nd = data.ndim
        start, count = (ctypes.c_uint64 * nd)(*([0] * nd)), (ctypes.c_uint64 * nd)(*data.shape)
        data = np.ascontiguousarray(data)
        try:
            self.check(self.c.zgpu_array_write(h, start, count, data.ctypes.data_as(ctypes.c_void_p), None), "write")
        finally:
            self.c.zgpu_array_close(h)

    def read_device(self, h, shape, ptr: int, stream: int = 0) -> None:
        nd = len(shape)
        start, count = (ctypes.c_uint64 * nd)(*([0] * nd)), (ctypes.c_uint64 * nd)(*shape)
        self.check(self.c.zgpu_array_read_device(h, start, count, ctypes.c_void_p(ptr), None,
                                                 ctypes.c_void_p(stream)), "read_device")

    def stats(self, h) -> ReadStats:
        s = ReadStats()
        s.struct_size = ctypes.sizeof(ReadStats)
        self.c.zgpu_array_last_read_stats(h, ctypes.byref(s))
        return s


# ---------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------
def metadata(shape, dtype: np.dtype, layout: str) -> dict:
    chunks = [min(c, s) for c, s in zip(CHUNKS, shape)]
    bytes_codec = {"name": "bytes", "configuration": {"endian": "little"}}
    zstd = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
    if layout == "zstd":
        codecs = [bytes_codec, zstd]
    elif layout == "blosc-lz4-shuffle":
        codecs = [bytes_codec, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                                                  "typesize": dtype.itemsize, "blocksize": 0}}]
    elif layout == "gzip":
        codecs = [bytes_codec, {"name": "gzip", "configuration": {"level": 5}}]
    elif layout == "sharded-zstd":
        chunks = [min(c, s) for c, s in zip(SHARDS, shape)]
        inner = [min(c, s) if s % min(c, s) == 0 else s for c, s in zip(INNER, chunks)]
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": [bytes_codec, zstd],
            "index_codecs": [bytes_codec, {"name": "crc32c"}], "index_location": "end"}}]
    else:
        raise KeyError(layout)
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": str(dtype),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": codecs}


def cell_array(lib, data: str, vol: str, lay: str, src, planes: int) -> str:
    """The benchmark array of one cell (volume `vol` of `planes` planes, layout `lay`) under data/, written by zgpu
    from `src` unless a complete one is there (the marker .complete is written last)."""
    path = os.path.join(data, f"{vol}_p{planes}.{lay}.zgpu.zarr")
    if not os.path.exists(os.path.join(path, ".complete")):
        shutil.rmtree(path, ignore_errors=True)
        lib.write(path, metadata(src.shape, src.dtype, lay), src)
        open(os.path.join(path, ".complete"), "w").close()
    return path


def stored_files(path: str):
    out = []
    for d, _, files in os.walk(path):
        for f in files:
            if f not in ("zarr.json", ".complete"):
                out.append(os.path.join(d, f))
    return out


# ---------------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------------
def median_events(cp, fn, repeat: int) -> float:
    """Median seconds of fn() between CUDA events on the current stream, after one warm-up."""
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b) * 1e-3)
    return statistics.median(times)


def median_wall(cp, fn, repeat: int) -> float:
    """Median wall seconds of fn() with the device synchronized around it (readers that return when the data
    is on the GPU but not on a stream we can time); the caller did the warm-up."""
    times = []
    for _ in range(repeat):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def h2d_seconds(cp, nbytes: int, repeat: int) -> float:
    host = cp.cuda.alloc_pinned_memory(nbytes)
    hv = np.frombuffer(host, dtype=np.uint8, count=nbytes)
    hv[:] = 1
    dev = cp.cuda.alloc(nbytes)
    return median_events(cp, lambda: dev.copy_from_host(host.ptr, nbytes), repeat)


def page_cache_seconds(files, repeat: int) -> float:
    sizes = [os.path.getsize(f) for f in files]
    bufs = [bytearray(s) for s in sizes]

    def read_one(i):
        with open(files[i], "rb", buffering=0) as fh:
            fh.readinto(bufs[i])

    with cf.ThreadPoolExecutor(max_workers=os.cpu_count()) as ex:
        def once():
            list(ex.map(read_one, range(len(files))))
        once()
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            once()
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def read_to_device_seconds(cp, files, repeat: int) -> float:
    """Stored bytes from the page cache into GPU memory, the way any reader without GPUDirect Storage must move
    them: pieces of at most 16 MiB read with pread on a thread pool into pinned host memory, each copied to the
    device (on its thread's stream) as soon as it is read. On a machine whose host memory bandwidth is shared
    by the copy out of the page cache and the DMA, this is slower than either alone."""
    import threading
    piece = 16 << 20
    jobs, total = [], 0
    for f in files:
        n = os.path.getsize(f)
        for o in range(0, n, piece):
            jobs.append((f, o, min(piece, n - o), total + o))
        total += n
    host = cp.cuda.alloc_pinned_memory(max(total, 1))
    hv = memoryview(np.frombuffer(host, dtype=np.uint8, count=total))
    dev = cp.cuda.alloc(max(total, 1))
    local = threading.local()
    streams = []

    def one(job):
        f, o, n, at = job
        if not hasattr(local, "stream"):
            local.stream = cp.cuda.Stream(non_blocking=True)
            streams.append(local.stream)
        fd = os.open(f, os.O_RDONLY)
        try:
            got = os.preadv(fd, [hv[at:at + n]], o)
        finally:
            os.close(fd)
        assert got == n
        (dev + at).copy_from_host_async(host.ptr + at, n, local.stream)

    with cf.ThreadPoolExecutor(max_workers=os.cpu_count()) as ex:
        def once():
            list(ex.map(one, jobs))
            for st in list(streams):
                st.synchronize()
        once()
        return median_wall(cp, once, repeat)


def read_tensorstore_copy(cp, path, repeat, src):
    try:
        import tensorstore as ts
    except ImportError:
        return None, "not installed"
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path},
            "context": {"cache_pool": {"total_bytes_limit": 0},
                        "data_copy_concurrency": {"limit": os.cpu_count()},
                        "file_io_concurrency": {"limit": os.cpu_count()}}}
    store = ts.open(spec, read=True).result()
    out = {}

    def once():
        out["d"] = cp.asarray(store.read().result())

    once()
    ok = src is None or bool(cp.all(out["d"] == cp.asarray(src)))
    return median_wall(cp, once, repeat), ("" if ok else "WRONG RESULT")


def zarr_version() -> str | None:
    try:
        import zarr
    except Exception:  # noqa: BLE001 - missing, or broken against this machine's numpy: not measured either way
        return None
    return zarr.__version__


def read_zarr_python(cp, path, repeat, src):
    """Median wall seconds of zarr-python reading the whole array into a CuPy array, after one warm-up."""
    try:
        import zarr
    except ModuleNotFoundError:
        return None, "not installed"
    except Exception as e:  # noqa: BLE001 - e.g. the carried wheels against an older numpy (zarr 3 needs numpy 2)
        print(f"  zarr-python: import failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return None, "import failed"
    out = {}
    try:
        # the buffer prototype is looked up at each read, so the reads (not only the open) stay inside
        with zarr.config.enable_gpu():
            arr = zarr.open_array(path, mode="r")

            def once():
                out["d"] = arr[...]

            once()
            # a host result would mean enable_gpu did not take: not the measurement the column claims
            ok = isinstance(out["d"], cp.ndarray) and out["d"].shape == src.shape and \
                out["d"].dtype == src.dtype and bool(cp.all(out["d"] == cp.asarray(src)))
            t_med = median_wall(cp, once, repeat)
    except Exception as e:  # noqa: BLE001 - one reader failing should not lose the other columns
        print(f"  zarr-python {path}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return None, f"error: {type(e).__name__}"
    return t_med, ("" if ok else "WRONG RESULT")


# ---------------------------------------------------------------------------------------------------
def machine() -> str:
    gpu = "?"
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return f"{platform.node()}: {os.cpu_count()} CPUs, {platform.platform()}; GPU: {gpu}"


def replace_section(doc_path: str, section_text: str, title: str = SECTION) -> None:
    """Replaces the section `title` of doc_path (or appends it), leaving the others as they are."""
    old = open(doc_path).read() if os.path.exists(doc_path) else "# zgpu benchmarks\n\n"
    pat = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.M | re.S)
    new = pat.sub(lambda _: section_text.rstrip("\n") + "\n\n", old, count=1) if pat.search(old) else \
        old.rstrip("\n") + "\n\n" + section_text
    os.makedirs(os.path.dirname(doc_path), exist_ok=True)
    with open(doc_path, "w") as fh:
        fh.write(new.rstrip("\n") + "\n")


def decode_limit(r: dict) -> str:
    """The GPU decode stage as a rate, or a note when no chunk decoded on the GPU."""
    s = r["stats"]
    if not r["decode_stage_s"]:
        return "-"
    rate = f"{r['decoded'] / r['decode_stage_s'] / 1e9:.2f}"
    return rate + " (host)" if s["gpu_decoded"] == 0 else rate


# The targets for a cell: zgpu at least TARGET_TS times tensorstore-plus-copy, and within TARGET_BOUND
# times the cell's bound, the slower of reading the stored bytes from the page cache and the GPU decode stage alone.
TARGET_TS, TARGET_BOUND = 10.0, 1.5


def targets_table(rows: list) -> list:
    """Markdown lines: each default-decoder cell against the targets (rows forcing another decoder are left out)."""
    out = ["| volume | layout | zgpu ms | zgpu / ts+copy | bound: its stage (ms) | zgpu / bound | "
           "zgpu / bound with page cache to GPU (ms) | targets |", "|---|---|---|---|---|---|---|---|"]
    met_ts = met_bound = n = 0
    for r in rows:
        if r["layout"] in DECODER_ROWS or not r["zgpu_s"]:
            continue
        n += 1
        z, dec, pc, dev = r["zgpu_s"], r["decode_stage_s"] or 0.0, r["pagecache_s"] or 0.0, r["read_device_s"] or 0.0
        bound, stage = (dec, "decode stage") if dec >= pc else (pc, "page cache read")
        strict = max(dec, dev)
        ts = r["ts_s"] / z if r["ts_s"] else None
        ok_ts = ts is not None and ts >= TARGET_TS
        ok_bound = bound > 0 and z / bound <= TARGET_BOUND
        met_ts += ok_ts
        met_bound += ok_bound
        miss = [w for w, ok in ((f"{TARGET_TS:g}x", ok_ts), (f"{TARGET_BOUND:g}x bound", ok_bound)) if not ok]
        out.append(f"| {r['volume']} | {r['layout']} | {z * 1e3:.1f} | {f'{ts:.1f}x' if ts else '-'} | "
                   f"{stage} ({bound * 1e3:.1f}) | {z / bound:.2f} | "
                   f"{f'{z / strict:.2f} ({strict * 1e3:.1f})' if strict else '-'} | "
                   f"{'met' if not miss else 'missed: ' + ', '.join(miss)} |")
    out += ["", f"{met_ts} of {n} cells at {TARGET_TS:g}x tensorstore-plus-copy or more; {met_bound} of {n} within "
            f"{TARGET_BOUND:g}x of their bound."]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libzgpu.so"))
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data"))
    ap.add_argument("--planes", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--volumes", default=",".join(VOLUMES))
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--docs", action="store_true")
    ap.add_argument("--no-docs", action="store_true")
    ap.add_argument("--json", default=None, help="also write the raw rows as JSON here")
    ap.add_argument("--no-zarr-python", action="store_true",
                    help="skip the zarr-python column (--repeat + 1 more whole reads per stored array)")
    args = ap.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)
    try:
        import cupy as cp
    except ImportError:
        print("bench_gpu: cupy is required (GPU buffers and CUDA events)", file=sys.stderr)
        return 2
    lib = Lib(args.lib)
    if not lib.c.zgpu_gpu_available():
        print(f"bench_gpu: no GPU: {lib.c.zgpu_last_error().decode()}", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.join(shared_root(), "bench"))
    import datasets  # noqa: E402
    os.makedirs(args.data, exist_ok=True)
    rows = []
    for vol in args.volumes.split(","):
        src = None
        for lay in args.layouts.split(","):
            tag = vol if args.planes is None else f"{vol}_p{args.planes}"
            data_lay, trusted, row_tuning = DECODER_ROWS.get(lay, (lay, False, {}))
            path = os.path.join(args.data, f"{tag}.{data_lay}.zgpu.zarr")
            if src is None:
                t = time.perf_counter()
                src = datasets.make(vol, planes=args.planes)
                print(f"made {vol} {src.shape} {src.dtype} in {time.perf_counter() - t:.1f} s", flush=True)
            if not os.path.exists(os.path.join(path, ".complete")):
                shutil.rmtree(path, ignore_errors=True)
                t = time.perf_counter()
                lib.write(path, metadata(src.shape, src.dtype, data_lay), src)
                open(os.path.join(path, ".complete"), "w").close()
                # the freshly written GB must not be written back to disk while the reads and limits are timed
                # (a run of 00:54 UTC measured the page cache at 14-16 GB/s on the first volume, 33-43 elsewhere)
                os.sync()
                print(f"  wrote {path} in {time.perf_counter() - t:.1f} s", flush=True)
            files = stored_files(path)
            stored = sum(os.path.getsize(f) for f in files)
            nbytes = src.nbytes
            out = cp.empty(src.shape, dtype=src.dtype)

            def timed_read(extra: dict, check: bool = False):
                """(median s, stats of the last read, correct?) of the whole array read in a context of its own
                with the row's tuning and `extra` (a context's tuning is fixed when it is created); the first read
                (a warm-up, with the context's start-up) is checked against the source when `check` is set."""
                ctx = lib.context(trusted, **{**row_tuning, **extra})
                h = lib.open(path, ctx)
                try:
                    good = None
                    if check:  # correctness first, on a poisoned buffer
                        out.fill(0x5A if src.dtype.itemsize == 1 else 12345)
                        lib.read_device(h, src.shape, out.data.ptr, cp.cuda.get_current_stream().ptr)
                        good = bool(cp.all(out == cp.asarray(src)))
                    t = median_events(cp, lambda: lib.read_device(h, src.shape, out.data.ptr,
                                                                  cp.cuda.get_current_stream().ptr), args.repeat)
                    return t, lib.stats(h), good
                finally:
                    lib.c.zgpu_array_close(h)

            def decode_stage(extra: dict) -> float:
                """The decode stage alone: the same read in the fewest waves (no pipelining), whose decode time
                then overlaps nothing (the default read's waves decode concurrently, so their times overlap)."""
                return timed_read({**extra, "pipeline_waves": 1})[1].decode_s

            t_zgpu, st, ok = timed_read({}, check=True)
            dec_s = decode_stage({})
            # zstd and blosc-lz4: the same read with each decoder forced: (read s, decode-stage s)
            forced = {}
            dec_field = "zstd_decoder" if "zstd" in lay else "lz4_decoder" if "lz4" in lay else None
            for dec in ("zgpu", "nvcomp") if dec_field else ():
                t_dec, st_dec, _ = timed_read({dec_field: dec})
                forced[dec] = (t_dec, decode_stage({dec_field: dec})) if st_dec.gpu_decoded else None
            nvc, own = forced.get("nvcomp"), forced.get("zgpu")
            del out
            prev = rows[-1] if rows and lay != data_lay else None  # the same stored data: reuse its references
            if prev:
                t_ts, ts_note, t_h2d, t_pc = prev["ts_s"], prev["ts_note"], prev["h2d_s"], prev["pagecache_s"]
                t_rd = prev["read_device_s"]
                t_zp, zp_note = prev["zarr_s"], prev["zarr_note"]
            else:
                t_ts, ts_note = read_tensorstore_copy(cp, path, args.repeat, src if lay == "zstd" else None)
                # every layout is checked: zarr-python decodes each codec on its own path
                t_zp, zp_note = (None, "skipped") if args.no_zarr_python else \
                    read_zarr_python(cp, path, args.repeat, src)
                t_h2d = h2d_seconds(cp, nbytes, args.repeat)
                t_pc = page_cache_seconds(files, args.repeat)
                try:
                    t_rd = read_to_device_seconds(cp, files, args.repeat)
                except Exception as e:  # a limit column must not cost the whole run
                    print(f"  page cache to GPU not measured: {e!r}", flush=True)
                    t_rd = None
            row = dict(volume=vol, layout=lay, shape=list(src.shape), dtype=str(src.dtype), decoded=nbytes, stored=stored,
                       zgpu_s=t_zgpu, zgpu_ok=ok, ts_s=t_ts, ts_note=ts_note, zarr_s=t_zp, zarr_note=zp_note,
                       h2d_s=t_h2d, pagecache_s=t_pc, read_device_s=t_rd, nvcomp_dec=nvc, zgpu_dec=own,
                       decode_stage_s=dec_s,
                       stats={k: getattr(st, k) for k, _ in ReadStats._fields_ if k != "struct_size"})
            rows.append(row)
            gb = lambda s, n=nbytes: f"{n / s / 1e9:.2f}" if s else "-"  # noqa: E731
            zp_txt = f"{gb(t_zp)} {zp_note}".rstrip() if t_zp else zp_note
            print(f"  {vol:11s} {lay:18s} zgpu {gb(t_zgpu)} GB/s{'' if ok else ' WRONG'}  ts+copy "
                  f"{gb(t_ts) if t_ts else ts_note}  zarr-python {zp_txt}  "
                  f"H2D {gb(t_h2d)}  pagecache {gb(t_pc, stored)} (stored)  to-GPU {gb(t_rd, stored)} (stored)  "
                  f"decode-stage {gb(dec_s)}"
                  f"{f'  zgpu-decoder read {gb(own[0])} decode-stage {gb(own[1])}' if own else ''}"
                  f"{f'  nvCOMP-decoder read {gb(nvc[0])} decode-stage {gb(nvc[1])}' if nvc else ''}"
                  f"  [io {st.io_s * 1e3:.1f} h2d {st.h2d_s * 1e3:.1f} dec "
                  f"{st.decode_s * 1e3:.1f} scatter {st.scatter_s * 1e3:.1f} ms, waves {st.waves}, gpu/cpu chunks "
                  f"{st.gpu_decoded}/{st.cpu_decoded}, gds {st.gds_used}]", flush=True)
        src = None
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    zv = zarr_version()
    if args.no_zarr_python or zv is None:
        zarr_text = "zarr-python: " + ("not measured (--no-zarr-python)." if zv else
                                       "not installed (or not importable), not measured.")
    else:
        zarr_text = (f"zarr-python {zv}: `arr[...]` under `zarr.config.enable_gpu()` (default config), which "
                     "returns a CuPy array; per chunk it reads the file (a shard whole) into host memory and copies "
                     "it to the GPU, then its zstd/blosc/gzip codecs (numcodecs) copy the chunk back to host memory, "
                     "decode it there and copy the result to the GPU; wall time, device synchronized.")
    lines = [f"## {SECTION}", "",
             f"Whole arrays read into GPU memory. Machine: {machine()}. Date: {started:%Y-%m-%d %H:%M} UTC. "
             f"Command: `python bench/bench_gpu.py{'' if args.planes is None else f' --planes {args.planes}'} "
             f"--repeat {args.repeat}`. Arrays written by zgpu (Zarr v3, chunks 64x256x256; sharded: 128x512x512 "
             "shards of 32x128x128). Median of the timed reads after one warm-up; GB/s = decoded bytes (stored "
             f"bytes for the page-cache column) / time, 1 GB = 1e9 bytes. {zarr_text}", "",
             "| volume | layout | stored MB | zgpu GB/s | ts+copy GB/s | zarr-python GB/s | limit: pinned H2D GB/s | "
             "limit: page cache GB/s (stored) | limit: page cache to GPU GB/s (stored) | limit: GPU decode stage GB/s | zgpu decoder (zstd, LZ4): read / decode stage GB/s | "
             "nvCOMP decoder (zstd, LZ4): read / decode stage GB/s | zgpu io / h2d / decode / scatter ms | chunks GPU/CPU | waves |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["stats"]
        f = lambda t, n=r["decoded"]: f"{n / t / 1e9:.2f}" if t else "-"  # noqa: E731
        zp = f"{f(r['zarr_s'])}{' (WRONG)' if r['zarr_note'] else ''}" if r["zarr_s"] else r["zarr_note"]
        nv = f"{f(r['nvcomp_dec'][0])} / {f(r['nvcomp_dec'][1])}" if r.get("nvcomp_dec") else "-"
        ow = f"{f(r['zgpu_dec'][0])} / {f(r['zgpu_dec'][1])}" if r.get("zgpu_dec") else "-"
        lines.append(f"| {r['volume']} | {r['layout']} | {r['stored'] / 1e6:.0f} | {f(r['zgpu_s'])}"
                     f"{'' if r['zgpu_ok'] else ' (WRONG)'} | {f(r['ts_s']) if r['ts_s'] else r['ts_note']} | "
                     f"{zp} | {f(r['h2d_s'])} | {f(r['pagecache_s'], r['stored'])} | {f(r['read_device_s'], r['stored'])} | {decode_limit(r)} | "
                     f"{ow} | {nv} | "
                     f"{s['io_s'] * 1e3:.1f} / {s['h2d_s'] * 1e3:.1f} / {s['decode_s'] * 1e3:.1f} / "
                     f"{s['scatter_s'] * 1e3:.1f} | {s['gpu_decoded']}/{s['cpu_decoded']} | {s['waves']} |")
    lines += ["", "Page cache to GPU: the stored files in pieces of at most 16 MiB, read with pread on a thread pool "
              "into pinned host memory and each copied to the device as soon as it is read (what every reader "
              "without GPUDirect Storage must do with the stored bytes; the copy out of the page cache and the DMA "
              "share the host's memory bandwidth).", "",
              "gzip rows: zgpu's own GPU DEFLATE decoder (the default); gzip-host: host threads "
              "(tuning `deflate_decoder = host`), marked (host) as the decode limit is then the host decode rate; "
              "gzip-nvcomp: nvCOMP's DEFLATE decoder (`deflate_decoder = nvcomp`, which needs "
              "`gpu_trust_input`). The decode limit and the decoder columns' decode "
              "stage come from the same read without pipelining (`pipeline_waves = 1`); the io / h2d / decode / "
              "scatter column is the pipelined read's, whose waves decode concurrently (their decode times overlap "
              "each other and the I/O). zstd rows: zgpu's own block-parallel decoder by default; blosc-lz4 rows: "
              "zgpu's own LZ4 decoder (a parser and a copier warp a stream, checking as they go) by default, or the LZ4 "
              "check kernel then nvCOMP's LZ4 batch; the two decoder columns force one for every chunk "
              "(tuning `zstd_decoder` / `lz4_decoder` = `zgpu` / `nvcomp`; docs/tuning.md).", "",
              "Against the targets (default decoders; same run): a cell's bound is the slower of reading its stored "
              "bytes from the page cache and its GPU decode stage alone (one wave); the page-cache-to-GPU column "
              "is the stricter I/O limit of a reader without GPUDirect Storage (the copy out of the page cache "
              "and the DMA share the host's memory bandwidth).", ""]
    lines += targets_table(rows)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_docs and (args.planes is None or args.docs):
        doc = os.path.join(ROOT, "docs", "benchmarks.md")
        replace_section(doc, text)
        print(f"wrote section '{SECTION}' of {doc}")
    return 0 if all(r["zgpu_ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
