#!/usr/bin/env python3
"""Remote-read benchmark (issue 23): Zarr arrays read over HTTP and S3 into host and GPU memory.

The 12 cells of bench_gpu.py (volumes oct_u16, labels_u32, field_f32 of ../shared/bench/datasets.py with --planes
planes, x layouts zstd, blosc-lz4-shuffle, gzip, sharded-zstd; Zarr v3, chunks 64x256x256, shards 128x512x512 of
32x128x128) are written once by zgpu into bench/data/ (the files bench_gpu.py writes at the same --planes), and
served on 127.0.0.1 by two servers, each in a subprocess of its own (its GIL is not the readers'):

  http  --server c (the default when built): zgpu_range_server (bench/range_server.c) over bench/data/;
        --server python: tests/remote/http_server.py over bench/data/ (~2,000 requests/s: it bounds the readers)
  s3    --s3-server c (the default when built): zgpu_range_server --s3 over a directory whose subdirectory
        "bench" (the bucket) is a link to bench/data/: path-style, auth ignored, ListObjectsV2;
        --s3-server moto: moto's S3 server (ThreadedMotoServer), bucket "bench"; each cell's files are uploaded
        with boto3 before it is read and deleted after (real S3 semantics, but ~250 requests/s)

The C server is build/bin/zgpu_range_server beside --lib's build directory (<build>/lib/libzgpu.so ->
<build>/bin/zgpu_range_server), or --range-server PATH; without it the defaults are python and moto.

Every cell is read two ways, each pass timed as a whole: "whole" (one read of the whole array) and "crops" (100
random 32x128x128 boxes, fixed seed, one read call each), into host memory and, when cupy and a GPU are there,
into GPU memory, by

  zgpu         zgpu.open(url)[box] (host); .read(box, out=a preallocated cupy array) (GPU)
  tensorstore  zarr3 driver over its s3 / http kvstore (64 requests in flight, as zgpu; no cache),
               store[box].read().result(); then cupy.asarray (GPU)
  zarr-python  zarr.open_array over zarr.storage.FsspecStore (s3fs / fsspec's HTTPFileSystem, asynchronous,
               default config); for the GPU under zarr.config.enable_gpu()

Bounds, same run: the server's raw rates (a cell's stored objects fetched whole by 64 threads with plain
keep-alive GETs: stored GB/s; 1-byte range GETs from 64 threads: requests/s, once per server), and zgpu's own
stages from its read stats (fetch = plan_s, every request of the read; decode; copy = staging, H2D and scatter
on the GPU). A zgpu pass is judged "server" when its fetch takes the most time and is within 1.5x of what the
server needs for its bytes and requests at the raw rates, "network" when the fetch is slower than that (client
and network stack), else "decode" or "copy", whichever stage takes longer. The probes' client is Python
(http.client in threads): against the C server the rates it finds are its own limits (~3,000 requests/s on 2
cores), lower bounds of the server's, so "server" there is a generous judgement.

Each reader: one warm-up pass (checked against the source volume; its requests are counted with the server's
/__stats__ on the HTTP server and on the C S3 server), then the median of --repeat timed passes; GB/s = decoded
bytes / wall time (device synchronised for GPU reads), 1 GB = 1e9 bytes.

Usage: python bench/bench_remote.py [--lib build/lib/libzgpu.so] [--planes 64] [--repeat 3] [--cells vol.layout,..]
           [--stores http,s3] [--targets host,gpu] [--skip-zarr-python] [--docs] [--json PATH]
           [--server c|python] [--s3-server c|moto] [--range-server PATH]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import http.client
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_gpu as bg  # noqa: E402

ROOT = bg.ROOT
LAYOUTS = ["zstd", "blosc-lz4-shuffle", "gzip", "sharded-zstd"]
CROP, N_CROPS, SEED = (32, 128, 128), 100, 23
BUCKET, KEY, REGION = "bench", "testing", "us-east-1"
IN_FLIGHT = 64          # zgpu's default max_in_flight; tensorstore and the raw probes get as many
PROBE_REQUESTS = 2000   # 1-byte range GETs of the request-rate probe
SERVER_SLACK = 1.5      # a fetch within this factor of the server's raw time is "server"
TARGET = 2.0            # the target: zgpu at least 2x tensorstore
SECTION = "Remote reads (HTTP and S3)"
READERS = ["zgpu", "tensorstore", "zarr-python"]
MOTO = ("import logging, sys\n"
        "from moto.server import ThreadedMotoServer\n"
        "logging.getLogger('werkzeug').setLevel(logging.ERROR)\n"
        "s = ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False)\n"
        "s.start()\n"
        "print('PORT %d' % s.get_host_and_port()[1], flush=True)\n"
        "sys.stdin.read()\n")


# ---------------------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------------------
def start_server(argv: list) -> tuple:
    """(process, port) of a server that prints "PORT n" first and stops when its stdin closes."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"{argv[:3]} did not start: {line!r}")
    return proc, int(line.split()[1])


def range_server_path(args) -> str:
    """The C server's binary: --range-server, else <build>/bin/zgpu_range_server beside --lib (<build>/lib/...);
    None when it is not there."""
    exe = args.range_server or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.lib))), "bin",
                                            "zgpu_range_server")
    return exe if os.path.isfile(exe) and os.access(exe, os.X_OK) else None


def stop_server(proc) -> None:
    proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def http_requests(port: int) -> int:
    """GET + HEAD requests the HTTP server has answered (its control requests are not counted)."""
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("GET", "/__stats__")
    s = json.loads(c.getresponse().read())
    c.close()
    return s["GET"] + s["HEAD"]


def s3_client(endpoint: str):
    import boto3
    import botocore.config
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION,
                        config=botocore.config.Config(max_pool_connections=IN_FLIGHT))


def array_files(local: str, with_metadata: bool = True) -> list:
    """The files of a local array: its chunks (or shards) and, with_metadata, zarr.json (not the benchmark's
    .complete marker nor zgpu's local write lock)."""
    skip = {".complete", ".zgpu-lock"} | (set() if with_metadata else {"zarr.json"})
    return [os.path.join(d, f) for d, _, fs in os.walk(local) for f in fs if f not in skip]


def s3_upload(client, local: str, prefix: str) -> list:
    """Uploads the files of the local array under prefix; returns the keys."""
    files = array_files(local)
    keys = [prefix + "/" + os.path.relpath(f, local).replace(os.sep, "/") for f in files]
    with cf.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda fk: client.upload_file(fk[0], BUCKET, fk[1]), zip(files, keys)))
    return keys


def request_paths(env: dict, store: str, name: str, rels: list) -> list:
    """The request targets (path and query) of these objects of array `name`: presigned URLs on moto, so that
    plain GETs are accepted and the probe's client does not sign each request (the C server ignores auth)."""
    if store == "http":
        return [f"/{name}/{r}" for r in rels]
    if env["s3_server"] == "c":
        return [f"/{BUCKET}/{name}/{r}" for r in rels]
    urls = [env["s3"].generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": f"{name}/{r}"},
                                             ExpiresIn=24 * 3600) for r in rels]
    return [u[u.index("/", len("http://")):] for u in urls]


def s3_delete(client, keys: list) -> None:
    for i in range(0, len(keys), 1000):
        client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]]})


# ---------------------------------------------------------------------------------------------------
# Raw server rates: plain keep-alive GETs from many threads
# ---------------------------------------------------------------------------------------------------
def fetch_all(port: int, requests: list) -> tuple:
    """Seconds and bytes of (path, range header or None) GETs on IN_FLIGHT keep-alive connections."""
    def worker(part):
        c, got, buf = http.client.HTTPConnection("127.0.0.1", port), 0, memoryview(bytearray(1 << 20))
        for path, rng in part:
            c.request("GET", path, headers={"Range": rng} if rng else {})
            r = c.getresponse()
            if r.status not in (200, 206):
                raise RuntimeError(f"GET {path}: HTTP {r.status}")
            while n := r.readinto(buf):  # into one buffer: the client copies as little as it can
                got += n
        c.close()
        return got
    parts = [requests[i::IN_FLIGHT] for i in range(min(IN_FLIGHT, len(requests)))]
    t = time.perf_counter()
    with cf.ThreadPoolExecutor(len(parts)) as ex:
        got = sum(ex.map(worker, parts))
    return time.perf_counter() - t, got


def server_gbps(port: int, paths: list, repeat: int) -> float:
    """Stored GB/s of fetching every object (whole) of a cell: median of repeat passes after one warm-up."""
    fetch_all(port, [(p, None) for p in paths])
    runs = [fetch_all(port, [(p, None) for p in paths]) for _ in range(repeat)]
    return statistics.median(n / s for s, n in runs) / 1e9


def server_rps(port: int, paths: list) -> float:
    """Requests/s of 1-byte range GETs over these objects."""
    reqs = [(paths[i % len(paths)], "bytes=0-0") for i in range(PROBE_REQUESTS)]
    fetch_all(port, reqs[:IN_FLIGHT * 2])
    return PROBE_REQUESTS / fetch_all(port, reqs)[0]


# ---------------------------------------------------------------------------------------------------
# Readers: each a function box -> array, for one array at one URL and one target
# ---------------------------------------------------------------------------------------------------
def zgpu_reader(zgpu, url: str, cp, start_gpu: bool = False):
    """(read, its last read's stats): host reads return NumPy arrays; GPU reads fill a cupy array kept per box
    shape. start_gpu: one element read into GPU memory first, so that the context's GPU is up (host_read_route
    "auto" decodes host reads on the GPU only then)."""
    a = zgpu.open(url)
    if start_gpu:
        a.read(tuple(slice(0, 1) for _ in a.shape), device="cuda")
    if cp is None:
        return (lambda box: a[box]), (lambda: a.last_read_stats)
    bufs = {}

    def read(box):
        shape = tuple(s.stop - s.start for s in box)
        if shape not in bufs:
            bufs[shape] = cp.empty(shape, a.dtype)
        return a.read(box, out=bufs[shape])
    return read, (lambda: a.last_read_stats)


def tensorstore_reader(kvstore: dict, cp):
    import tensorstore as ts
    spec = {"driver": "zarr3", "kvstore": kvstore,
            "context": {"cache_pool": {"total_bytes_limit": 0},
                        "data_copy_concurrency": {"limit": os.cpu_count()},
                        "http_request_concurrency": {"limit": IN_FLIGHT},
                        "s3_request_concurrency": {"limit": IN_FLIGHT}}}
    store = ts.open(spec, read=True).result()
    if cp is None:
        return (lambda box: store[box].read().result()), None
    return (lambda box: cp.asarray(store[box].read().result())), None


def zarr_reader(fs, path: str, cp):
    import zarr
    arr = zarr.open_array(store=zarr.storage.FsspecStore(fs=fs, path=path, read_only=True), mode="r")
    if cp is None:
        return (lambda box: arr[box]), None

    def read(box):
        with zarr.config.enable_gpu():  # the buffer prototype is looked up at each read
            out = arr[box]
        if not isinstance(out, cp.ndarray):
            raise TypeError("enable_gpu did not take: a host result")
        return out
    return read, None


def close_filesystems(fs: dict) -> None:
    """Closes the aiohttp sessions of zarr-python's filesystems (else "Unclosed client session" at exit)."""
    if not fs:  # (--skip-zarr-python: none opened, and zarr may not be installed)
        return
    from zarr.core.sync import sync
    for f in fs.values():
        for closing in (getattr(f, "_session", None), getattr(f, "_s3", None)):
            if closing is not None:
                sync(closing.close())


def fsspec_filesystems(endpoint: str) -> dict:
    """zarr-python's asynchronous fsspec filesystems, by store name."""
    import fsspec.implementations.http
    import s3fs
    return {"http": fsspec.implementations.http.HTTPFileSystem(asynchronous=True),
            "s3": s3fs.S3FileSystem(asynchronous=True, key=KEY, secret=KEY, skip_instance_cache=True,
                                    client_kwargs={"endpoint_url": endpoint, "region_name": REGION})}


# ---------------------------------------------------------------------------------------------------
# Passes
# ---------------------------------------------------------------------------------------------------
def crops(shape) -> list:
    rng = np.random.default_rng(SEED)
    size = [min(c, s) for c, s in zip(CROP, shape)]
    out = []
    for _ in range(N_CROPS):
        start = [int(rng.integers(0, s - c + 1)) for s, c in zip(shape, size)]
        out.append(tuple(slice(a, a + c) for a, c in zip(start, size)))
    return out


def checked_pass(read, boxes, src, cp, stats_of=None) -> tuple:
    """The warm-up pass: (all results equal the source?, zgpu's summed read stats or None)."""
    ok, total = True, None
    for box in boxes:
        got = read(box)
        got = cp.asnumpy(got) if cp is not None else np.asarray(got)
        ok = ok and np.array_equal(got, src[box])
        if stats_of is not None:
            s = stats_of()
            total = {k: (total or {}).get(k, 0) + s[k] for k in ("plan_s", "io_s", "h2d_s", "decode_s",
                                                                  "scatter_s", "stored_bytes")} | \
                {"reads": (total or {}).get("reads", 0) + 1,  # (host reads: how many the GPU decoded)
                 "gpu_reads": (total or {}).get("gpu_reads", 0) + (s.get("route") == 1 and cp is None)}
    return ok, total


def timed_passes(read, boxes, cp, repeat: int) -> float:
    """Median wall seconds of reading every box, the device synchronised at the end of each pass."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for box in boxes:
            read(box)
        if cp is not None:
            cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(make_reader, boxes, src, cp, repeat, count=None) -> dict:
    """One reader over one selection: {"s", "ok", "requests", "stats"} or {"note"} when it failed."""
    try:
        read, stats_of = make_reader()
        before = count() if count else None
        ok, stats = checked_pass(read, boxes, src, cp, stats_of)
        requests = count() - before if count else None
        return {"s": timed_passes(read, boxes, cp, repeat), "ok": ok, "requests": requests, "stats": stats}
    except Exception as e:  # noqa: BLE001 - one reader failing must not lose the other columns
        print(f"    failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return {"note": f"error: {type(e).__name__}"}


# ---------------------------------------------------------------------------------------------------
# Judgement and the table
# ---------------------------------------------------------------------------------------------------
def server_seconds(nbytes: int, requests, srv: dict) -> float:
    """What the server alone needs for these bytes and requests at its raw rates."""
    t = nbytes / (srv["gbps"] * 1e9)
    return max(t, requests / srv["rps"]) if requests else t


def bound(m: dict, srv: dict, requests) -> str:
    """One word: which stage of a zgpu pass takes the most time (see the module docstring)."""
    s = m.get("stats")
    if not s:
        return "-"
    fetch = s["plan_s"]
    copy = s["io_s"] + s["h2d_s"] + s["scatter_s"] if s["h2d_s"] else 0.0  # (host: scatter is in decode_s)
    if fetch >= max(s["decode_s"], copy):
        return "server" if fetch <= SERVER_SLACK * server_seconds(s["stored_bytes"], requests, srv) else "network"
    return "decode" if s["decode_s"] >= copy else "copy"


def gbps(m: dict, nbytes: int) -> str:
    if "s" not in m:
        return m.get("note", "-")
    return f"{nbytes / m['s'] / 1e9:.2f}" + ("" if m["ok"] else " (WRONG)")


def ratio(r: dict, target: str):
    z, t = r[target].get("zgpu", {}), r[target].get("tensorstore", {})
    return t["s"] / z["s"] if "s" in z and "s" in t else None


def table(rows: list, targets: list) -> list:
    head = "| store | volume | layout | read | stored MB (zgpu fetched) | requests zgpu / ts / zarr-python | " \
           "server: stored GB/s, req/s | server bound ms |"
    for t in targets:
        name = "GPU (ts+copy)" if t == "gpu" else "host"
        head += f" {name}: zgpu / ts / zarr-python GB/s | {t}: zgpu / ts | {t}: bound |"
    lines = [head, "|" + "---|" * (8 + 3 * len(targets))]
    for r in rows:
        srv, zh = r["server"], r["host"].get("zgpu", {}) if "host" in targets else {}
        fetched = (zh.get("stats") or {}).get("stored_bytes")
        req = " / ".join("-" if r["requests"].get(k) is None else str(r["requests"][k]) for k in READERS)
        line = (f"| {r['store']} | {r['volume']} | {r['layout']} | {r['read']} | {r['stored'] / 1e6:.1f}"
                f"{f' ({fetched / 1e6:.1f})' if fetched else ''} | {req} | {srv['gbps']:.2f}, {srv['rps']:.0f} | "
                f"{server_seconds(fetched or r['stored'], r['requests'].get('zgpu'), srv) * 1e3:.0f} |")
        for t in targets:
            q = ratio(r, t)
            zs = r[t].get("zgpu", {}).get("stats") or {}
            g, n = zs.get("gpu_reads", 0), zs.get("reads", 0)
            on_gpu = "" if not g else " (GPU)" if g == n else f" (GPU {g}/{n})"  # host reads the GPU decoded
            line += (f" {' / '.join(gbps(r[t].get(k, {}), r['decoded']) for k in READERS)} | "
                     f"{f'{q:.2f}x' if q else '-'} | "
                     f"{bound(r[t].get('zgpu', {}), srv, r['requests'].get('zgpu'))}{on_gpu} |")
        lines.append(line)
    return lines


def verdict(rows: list, targets: list) -> str:
    qs = [ratio(r, t) for r in rows for t in targets if ratio(r, t) is not None]
    return f"{sum(q >= TARGET for q in qs)} of {len(qs)} cells at {TARGET:g}x tensorstore or more."


def replace_section(doc: str, text: str) -> None:
    """Replaces the section titled SECTION of doc (or appends it), leaving the others as they are."""
    bg.replace_section(doc, text, SECTION)


# ---------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------
def gpu_module(targets: list):
    """cupy when the GPU target is asked for and a GPU is there, else None."""
    if "gpu" not in targets:
        return None
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
        return cp
    except Exception as e:  # noqa: BLE001 - no cupy, no driver, no device
        print(f"no GPU target: {type(e).__name__}: {e}", file=sys.stderr)
        return None


def read_cell(env: dict, store: str, name: str, src, cp_by_target: dict, args) -> list:
    """The rows (whole, crops) of one cell on one store."""
    port = env[store + "_port"]
    url = f"http://127.0.0.1:{port}/{name}" if store == "http" else f"s3://{BUCKET}/{name}"
    paths = request_paths(env, store, name, [os.path.relpath(f, env["local"]).replace(os.sep, "/")
                                             for f in array_files(env["local"], False)])
    srv = {"gbps": server_gbps(port, paths, args.repeat), "rps": env[store + "_rps"],
           "impl": env[store + "_server"]}  # which server: c, python or moto
    kv = {"driver": "http", "base_url": f"http://127.0.0.1:{port}", "path": f"/{name}/"} if store == "http" else \
        {"driver": "s3", "bucket": BUCKET, "path": f"{name}/", "endpoint": env["s3_endpoint"], "aws_region": REGION}
    fs_path = url if store == "http" else f"{BUCKET}/{name}"
    makers = {"zgpu": lambda cp: zgpu_reader(env["zgpu"], url, cp, args.host_read_route == "auto-gpu"),
              "tensorstore": lambda cp: tensorstore_reader(kv, cp),
              "zarr-python": lambda cp: zarr_reader(env["fs"][store], fs_path, cp)}
    count = (lambda: http_requests(port)) if counted(env, store) else None
    rows = []
    for read, boxes in (("whole", [tuple(slice(0, s) for s in src.shape)]), ("crops", crops(src.shape))):
        row = {"store": store, "read": read, "server": srv, "requests": {},
               "decoded": sum(int(np.prod([s.stop - s.start for s in b])) for b in boxes) * src.itemsize}
        for target, cp in cp_by_target.items():
            row[target] = {}
            for reader in READERS:
                if reader == "zarr-python" and args.skip_zarr_python:
                    continue
                if target == "gpu" and cp is None:
                    continue
                m = measure(lambda: makers[reader](cp), boxes, src, cp, args.repeat, count)
                row[target][reader] = m
                if m.get("requests") is not None:
                    row["requests"].setdefault(reader, m["requests"])
        rows.append(row)
    return rows


def counted(env: dict, store: str) -> bool:
    """Does this store's server count requests (/__stats__)? The HTTP servers and the C S3 server do, moto not."""
    return store == "http" or env.get("s3_server") == "c"


def print_row(r: dict) -> None:
    out = [f"  {r['store']:4s} {r['volume']:10s} {r['layout']:17s} {r['read']:5s}"
           f" server {r['server']['gbps']:.2f} GB/s {r['server']['rps']:.0f} req/s"]
    for t in ("host", "gpu"):
        out += [f"{t}: " + " ".join(f"{k} {gbps(m, r['decoded'])}" for k, m in r.get(t, {}).items())]
    print("  ".join(out), flush=True)


def section(args, rows, targets, started, env) -> str:
    zv = bg.zarr_version() or "not installed"
    stores = args.stores.split(",")
    cmd = f"python bench/bench_remote.py --planes {args.planes} --repeat {args.repeat} --stores {args.stores} " \
          f"--targets {args.targets}{f' --cells {args.cells}' if args.cells else ''}" \
          f"{f' --host-read-route {args.host_read_route}' if args.host_read_route != 'auto' else ''}" \
          f"{' --skip-zarr-python' if args.skip_zarr_python else ''}" \
          f"{f' --server {args.server}' if 'http' in stores else ''}" \
          f"{f' --s3-server {args.s3_server}' if 's3' in stores else ''}"
    served = []
    if "http" in stores:
        served.append("zgpu_range_server (bench/range_server.c, C, sendfile) (http)" if args.server == "c" else
                      "tests/remote/http_server.py (http)")
    if "s3" in stores:
        served.append("zgpu_range_server --s3 (path-style, auth ignored) (s3)" if args.s3_server == "c" else
                      "moto's ThreadedMotoServer (s3; files uploaded with boto3)")
    where = ("the HTTP server" if args.server == "python" else "the server") if args.s3_server == "moto" or \
        "s3" not in stores else "the servers"
    c_used = ("http" in stores and args.server == "c") or ("s3" in stores and args.s3_server == "c")
    probe_note = " (against zgpu_range_server: the limits of the probe's Python client, lower bounds of the " \
        "server's)" if c_used else ""
    lines = [f"## {SECTION}", "",
             f"Machine: {getattr(args, 'machine', None) or bg.machine()}. Date: {started:%Y-%m-%d %H:%M} UTC. Command: `{cmd}`. "
             f"Volumes of {args.planes} planes (x1024x1024), Zarr v3 written by zgpu (chunks 64x256x256; sharded: "
             "128x512x512 shards of 32x128x128), served on 127.0.0.1 by " + " and ".join(served) +
             f", each in its own process. whole: one read "
             f"of the whole array; crops: {N_CROPS} random {'x'.join(map(str, CROP))} boxes (seed {SEED}), one "
             f"read each. Median of {args.repeat} timed passes after one checked warm-up; GB/s = decoded bytes / "
             "wall time, 1 GB = 1e9 bytes. tensorstore: zarr3 over its http / s3 kvstore, 64 requests in flight, "
             f"no cache (GPU: then cupy.asarray). zarr-python {zv}: FsspecStore over fsspec's HTTPFileSystem / "
             "s3fs (asynchronous, default config); GPU: under zarr.config.enable_gpu(). Requests: counted by "
             f"{where} in the warm-up pass (of the host read when there is one"
             f"{'' if args.s3_server == 'c' else '; on moto, those of the HTTP server: zgpu plans the same on S3'}"
             "). Server: the cell's stored objects fetched whole by 64 threads with plain keep-alive GETs "
             f"(stored GB/s), and {PROBE_REQUESTS} 1-byte range GETs (req/s)"
             f"{probe_note}"
             "; server bound: what the server alone "
             "needs for zgpu's bytes and requests at those rates. Bound (zgpu): the stage of its read stats that "
             f"takes the most time; a fetch within {SERVER_SLACK:g}x of the server bound is \"server\", a slower "
             "one \"network\" (client and network stack); else \"decode\" or \"copy\" (staging, H2D, scatter). "
             "A missing GPU target or reader is \"-\"." + HOST_ROUTE_NOTE.get(args.host_read_route, ""), ""]
    lines += table(rows, targets) + ["", verdict(rows, targets)]
    return "\n".join(lines) + "\n"


HOST_ROUTE_NOTE = {
    "auto-gpu": " zgpu's host reads: host_read_route auto with the context's GPU started (a one-element read into GPU "
                "memory first), so the route model decodes each read on the GPU, then copies it back (\"(GPU)\" "
                "beside its bound; \"(GPU k/n)\": k of the n crops), or on the host threads.",
    "device": " zgpu's host reads: host_read_route device (decoded on the GPU, then copied back).",
    "host": " zgpu's host reads: host_read_route host (the host threads decode).",
}


def setup(args, lib) -> dict:
    """Servers, the S3 bucket, the zgpu settings and the fsspec filesystems of the run."""
    os.environ.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=KEY, AWS_REGION=REGION, AWS_DEFAULT_REGION=REGION,
                      AWS_EC2_METADATA_DISABLED="true", NO_PROXY="127.0.0.1,localhost")
    env = {"zgpu": lib.zgpu, "procs": [], "local": None}
    lib.zgpu.config.set(host_read_route="auto" if args.host_read_route == "auto-gpu" else args.host_read_route)
    stores = args.stores.split(",")
    env.update(http_server=args.server, s3_server=args.s3_server, s3_root=None)
    if "http" in stores:
        argv = [args.range_server, "--root", args.data] if args.server == "c" else \
            [sys.executable, os.path.join(ROOT, "tests", "remote", "http_server.py"), "--root", args.data]
        proc, port = start_server(argv)
        env.update(procs=env["procs"] + [proc], http_port=port)
    if "s3" in stores:
        if args.s3_server == "c":  # the bucket: a link to the data directory, in a directory of its own
            import tempfile
            env["s3_root"] = tempfile.mkdtemp(prefix="zgpu-bench-s3-")
            os.symlink(args.data, os.path.join(env["s3_root"], BUCKET))
            proc, port = start_server([args.range_server, "--root", env["s3_root"], "--s3"])
        else:
            proc, port = start_server([sys.executable, "-c", MOTO])
        endpoint = f"http://127.0.0.1:{port}"
        env.update(procs=env["procs"] + [proc], s3_port=port, s3_endpoint=endpoint)
        if args.s3_server == "moto":
            env["s3"] = s3_client(endpoint)
            env["s3"].create_bucket(Bucket=BUCKET)
        lib.zgpu.config.set(s3_endpoint=endpoint, s3_region=REGION, s3_addressing="path")
    env["fs"] = {} if args.skip_zarr_python else fsspec_filesystems(env.get("s3_endpoint", "http://127.0.0.1:1"))
    return env


def probe_rates(env: dict, stores: list, probe_path: str) -> None:
    """Each server's request rate, on the objects of the first cell (uploaded for S3 meanwhile)."""
    name = os.path.basename(probe_path)
    if "http" in stores:
        env["http_rps"] = server_rps(env["http_port"], request_paths(env, "http", name, ["zarr.json"]))
    if "s3" in stores:
        keys = s3_upload(env["s3"], probe_path, name) if env["s3_server"] == "moto" else None
        env["s3_rps"] = server_rps(env["s3_port"], request_paths(env, "s3", name, ["zarr.json"]))
        if keys:
            s3_delete(env["s3"], keys)
    print("server request rates: " + ", ".join(f"{s} ({env[s + '_server']}) {env[s + '_rps']:.0f} req/s"
                                                for s in stores), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libzgpu.so"))
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data"))
    ap.add_argument("--planes", type=int, default=64, help="planes of each volume (the full ones: 256 and 512)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cells", default=None, help="volume.layout,... or volume / layout names (default: all 12)")
    ap.add_argument("--stores", default="http,s3")
    ap.add_argument("--targets", default="host,gpu")
    ap.add_argument("--skip-zarr-python", action="store_true")
    ap.add_argument("--shard-index-cache", type=int, default=None,
                    help="zgpu's shard_index_cache_bytes (-1: off, every read fetches its shards' indexes)")
    ap.add_argument("--docs", action="store_true", help=f"write section '{SECTION}' of docs/benchmarks.md")
    ap.add_argument("--json", default=None, help="also write the rows as JSON here")
    ap.add_argument("--host-read-route", choices=["auto", "auto-gpu", "device", "host"], default="auto",
                    help="zgpu's host_read_route for the host target: auto (a host read never starts the GPU, so "
                         "here the host decodes), auto-gpu (auto with the context's GPU started: the route model "
                         "picks the GPU or the host per read), device (the GPU whenever it can), host")
    ap.add_argument("--server", choices=["c", "python"], default=None,
                    help="the HTTP server: c (zgpu_range_server; the default when found) or python "
                         "(tests/remote/http_server.py)")
    ap.add_argument("--s3-server", choices=["c", "moto"], default=None,
                    help="the S3 server: c (zgpu_range_server --s3; the default when found) or moto")
    ap.add_argument("--range-server", default=None,
                    help="zgpu_range_server's path (default: <build>/bin/zgpu_range_server beside --lib)")
    ap.add_argument("--machine", default=None, help="with --merge-json: the machine the rows were measured on")
    ap.add_argument("--merge-json", default=None,
                    help="A.json,B.json: no reads; the section from the rows of earlier runs on this machine (e.g. "
                         "one per store, each within one device command's time), with --docs to write it")
    args = ap.parse_args()
    if args.merge_json:
        return merge(args)
    exe = range_server_path(args)
    if args.range_server and not exe:
        ap.error(f"--range-server {args.range_server}: not an executable")
    args.server = args.server or ("c" if exe else "python")
    args.s3_server = args.s3_server or ("c" if exe else "moto")
    if "c" in (args.server, args.s3_server) and not exe:
        ap.error("the C server is not built: cmake --build BUILD --target zgpu_range_server (or --range-server)")
    args.range_server = exe
    started = datetime.datetime.now(datetime.timezone.utc)
    targets, stores = args.targets.split(","), args.stores.split(",")
    cells = [(v, lay) for v in bg.VOLUMES for lay in LAYOUTS
             if args.cells is None or any(c in (v, lay, f"{v}.{lay}") for c in args.cells.split(","))]
    lib = bg.Lib(args.lib)
    sys.path.insert(0, os.path.join(bg.shared_root(), "bench"))
    import datasets  # noqa: E402
    os.makedirs(args.data, exist_ok=True)
    args.data = os.path.realpath(args.data)
    cp = gpu_module(targets)
    cp_by_target = {t: (cp if t == "gpu" else None) for t in targets}
    env = setup(args, lib)
    if args.shard_index_cache is not None:
        lib.zgpu.config.set(shard_index_cache_bytes=args.shard_index_cache)
    rows, src, src_name = [], None, None
    try:
        for vol, lay in cells:
            if src_name != vol:
                src, src_name = datasets.make(vol, planes=args.planes), vol
            env["local"] = bg.cell_array(lib, args.data, vol, lay, src, args.planes)
            if "http_rps" not in env and "s3_rps" not in env:
                probe_rates(env, stores, env["local"])
            name = os.path.basename(env["local"])
            for store in stores:
                keys = s3_upload(env["s3"], env["local"], name) if store == "s3" and env["s3_server"] == "moto" \
                    else None
                for r in read_cell(env, store, name, src, cp_by_target, args):
                    r.update(volume=vol, layout=lay, stored=sum(os.path.getsize(f)
                                                                for f in array_files(env["local"], False)))
                    if not counted(env, store):  # moto: zgpu's requests as counted on the HTTP server
                        same = [x for x in rows if x["store"] == "http" and x["volume"] == vol
                                and x["layout"] == lay and x["read"] == r["read"]]
                        r["requests"] = dict(same[0]["requests"]) if same else {}
                    rows.append(r)
                    print_row(r)
                if keys:
                    s3_delete(env["s3"], keys)
    finally:
        close_filesystems(env["fs"])
        for proc in env["procs"]:
            stop_server(proc)
        if env.get("s3_root"):
            import shutil
            shutil.rmtree(env["s3_root"], ignore_errors=True)  # the link, not the data it points to
    text = section(args, rows, targets, started, env)
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    if args.docs:
        replace_section(os.path.join(ROOT, "docs", "benchmarks.md"), text)
        print(f"wrote section '{SECTION}' of docs/benchmarks.md")
    ok = all(m.get("ok", True) for r in rows for t in targets for m in r.get(t, {}).values())
    return 0 if ok else 1


def merge(args) -> int:
    """The section from earlier runs' JSON rows (same options but --stores), as if one run had made them."""
    rows = []
    for path in args.merge_json.split(","):
        with open(path) as fh:
            rows += json.load(fh)
    stores = [st for st in ("http", "s3") if any(r["store"] == st for r in rows)]
    args.stores = ",".join(stores)
    args.server = args.server or next((r["server"]["impl"] for r in rows if r["store"] == "http"), "c")
    args.s3_server = args.s3_server or next((r["server"]["impl"] for r in rows if r["store"] == "s3"), "c")
    targets = args.targets.split(",")
    text = section(args, rows, targets, datetime.datetime.now(datetime.timezone.utc), {})
    print(text)
    if args.docs:
        replace_section(os.path.join(ROOT, "docs", "benchmarks.md"), text)
        print(f"wrote section '{SECTION}' of docs/benchmarks.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
