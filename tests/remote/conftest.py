"""tests/remote: zgpu against remote stores, end to end.

Session fixtures: the test HTTP server (http_server.py, in this process, over a temporary root), a moto S3 server
(ThreadedMotoServer on 127.0.0.1, one bucket), the AWS environment of the session (fixed test credentials, no
~/.aws, no profile), zgpu.config's S3 endpoint, and helpers shared by the test modules: the array set-ups written
by zarr-python (every codec set-up of the suite, v2 and v3, sharded), zarr-python stores on the moto bucket
(s3fs), the CLI runner.

Run: ZGPU_LIB=build/lib/libzgpu.so PYTHONPATH=python ZGPU_CLI=build/bin/zgpu .venv/bin/python -m pytest tests/remote
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import re
import subprocess
import sys
import urllib.request
import warnings

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import zgpu  # noqa: E402

BUCKET = "zgpu-remote-tests"
KEY = "testing"            # moto accepts any credentials
REGION = "us-east-1"
CLI_TIMEOUT_S = 60         # a hang is a failure, not a stuck CI job
# Every remote call of the suite is bounded: a hang in the client fails a test instead of the run.
SESSION_REMOTE = dict(request_timeout_ms=15000, connect_timeout_ms=5000)

# The AWS variables the session sets or removes (restored at the end).
_AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
             "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
             "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_EC2_METADATA_DISABLED", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
             "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
             "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
             "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL_STS")


def pytest_configure(config):
    # zarr-python warns about numcodecs codecs in v3 metadata and about v2 details; not our concern here.
    for cat in ("UserWarning", "RuntimeWarning", "FutureWarning", "DeprecationWarning"):
        config.addinivalue_line("filterwarnings", "ignore::%s" % cat)
    warnings.filterwarnings("ignore", category=UserWarning)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request otherwise


# ---- names ----------------------------------------------------------------------------------------------------
_counter = itertools.count()


def unique(request, suffix=".zarr") -> str:
    """A key or directory name of its own for each use (tests never share objects)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", request.node.name).strip("-")[:60]
    return "%s-%d%s" % (name, next(_counter), suffix)


# ---- data and the array set-ups ---------------------------------------------------------------------------------
SHAPE = (40, 36, 50)        # edge chunks partial on every axis
# Two chunk grids of the set-ups: "fine" (36 chunks of 16^3; 8 shards of 32^3 with 8 inner chunks each) for the
# local HTTP server, "coarse" (8 chunks; 2 shards of 8 inner chunks) for moto, whose requests cost ~20 ms each.
GRIDS = {
    "fine": dict(chunks=(16, 16, 16), shards=(32, 32, 32),
                 holes=[(slice(0, 16), slice(0, 16), slice(0, 16)), (slice(16, 32), slice(0, 16), slice(16, 32)),
                        (slice(32, 40), slice(32, 36), slice(32, 50))],
                 written=(slice(0, 16),)),
    "coarse": dict(chunks=(12, 18, 25), shards=(24, 36, 50),
                   holes=[(slice(0, 12), slice(0, 18), slice(0, 25)), (slice(12, 24), slice(18, 36), slice(25, 50))],
                   written=(slice(0, 12),)),
}
CHUNKS = GRIDS["fine"]["chunks"]
SHARDS = GRIDS["fine"]["shards"]


def make_data(shape=SHAPE, dtype="uint16", seed=0) -> np.ndarray:
    """Compressible but not trivial: a ramp plus noise."""
    rng = np.random.default_rng(seed)
    ramp = np.indices(shape).sum(axis=0) * 7
    return (ramp + rng.integers(0, 50, size=shape)).astype(dtype)


def _codecs():
    from zarr.codecs import BloscCodec, Crc32cCodec, GzipCodec, ZstdCodec
    import numcodecs
    return {
        "v2-none": dict(zarr_format=2, compressors=None),
        "v2-zstd": dict(zarr_format=2, compressors=numcodecs.Zstd(level=3)),
        "v2-gzip": dict(zarr_format=2, compressors=numcodecs.GZip(level=5)),
        "v2-blosc-lz4-shuffle": dict(zarr_format=2, compressors=numcodecs.Blosc(cname="lz4", clevel=5,
                                                                                shuffle=numcodecs.Blosc.SHUFFLE)),
        "v2-zstd-slash": dict(zarr_format=2, compressors=numcodecs.Zstd(level=1),
                              chunk_key_encoding={"name": "v2", "separator": "/"}),
        "v3-none": dict(zarr_format=3, compressors=None),
        "v3-zstd": dict(zarr_format=3, compressors=ZstdCodec(level=3)),
        "v3-gzip": dict(zarr_format=3, compressors=GzipCodec(level=5)),
        "v3-blosc-lz4-shuffle": dict(zarr_format=3, compressors=BloscCodec(cname="lz4", clevel=5, shuffle="shuffle",
                                                                           typesize=2)),
        "v3-zstd-crc32c": dict(zarr_format=3, compressors=[ZstdCodec(level=1), Crc32cCodec()]),
        "v3-sharded": dict(zarr_format=3, compressors=ZstdCodec(level=1), shards=True),
        "v3-sharded-holes": dict(zarr_format=3, compressors=ZstdCodec(level=1), shards=True),
        "v3-missing-chunks": dict(zarr_format=3, compressors=ZstdCodec(level=1), fill_value=7),
        "v2-missing-chunks": dict(zarr_format=2, compressors=numcodecs.Zstd(level=1), fill_value=7),
    }


CASES = ["v2-none", "v2-zstd", "v2-gzip", "v2-blosc-lz4-shuffle", "v2-zstd-slash", "v3-none", "v3-zstd",
         "v3-gzip", "v3-blosc-lz4-shuffle", "v3-zstd-crc32c", "v3-sharded", "v3-sharded-holes",
         "v3-missing-chunks", "v2-missing-chunks"]

# Selections compared with zarr-python: the whole array, boxes across chunk (and shard) borders, one inside one
# chunk, single elements, the last partial chunks.
REGIONS = [
    (slice(None),),
    (slice(5, 37), slice(3, 33), slice(10, 45)),
    (slice(15, 18), slice(14, 20), slice(30, 35)),
    (slice(1, 3), slice(2, 5), slice(17, 20)),
    (slice(33, 40), slice(30, 36), slice(47, 50)),
    (0, slice(None), 49),
    (39, 35, 0),
]


def write_case(store, case: str, seed: int = 0, grid: str = "fine"):
    """Writes the set-up `case` with zarr-python into `store` (a local path or a zarr store), chunked as `grid`
    says; returns (zarr array, expected contents) -- the data, or for the missing-chunks set-ups the fill value
    where nothing was written."""
    import zarr
    g = GRIDS[grid]
    kw = dict(_codecs()[case])
    kw.setdefault("fill_value", 0)
    if kw.pop("shards", None):
        kw["shards"] = g["shards"]
    data = make_data(seed=seed)
    if case == "v3-sharded-holes":
        # Inner chunks all at the fill value: zarr-python leaves them out of their shard (empty index entries).
        for box in g["holes"]:
            data[box] = 0
    z = zarr.create_array(store, shape=SHAPE, chunks=g["chunks"], dtype=data.dtype, **kw)
    if case.endswith("missing-chunks"):
        # only some chunks written, one of them in part: the others read as the fill value
        exp = np.full(SHAPE, kw["fill_value"], data.dtype)
        for box in (g["written"], (slice(30, 34), slice(0, 10), slice(0, 10))):
            z[box] = data[box]
            exp[box] = data[box]
        return z, exp
    z[...] = data
    return z, data


def check_regions(zg, ref: np.ndarray, regions=REGIONS) -> None:
    """Every region of zgpu array `zg` equals the reference `ref` (a NumPy array of the whole)."""
    assert zg.shape == ref.shape
    assert zg.dtype == ref.dtype
    for sel in regions:
        got = np.asarray(zg[sel])
        exp = ref[sel]
        assert got.shape == np.shape(exp), sel
        np.testing.assert_array_equal(got, exp, err_msg="region %r" % (sel,))


# ---- environment and zgpu settings -------------------------------------------------------------------------------
@pytest.fixture(scope="session", autouse=True)
def aws_env(tmp_path_factory):
    """Fixed credentials for the session; the developer's ~/.aws and profile never take part."""
    saved = {k: os.environ.get(k) for k in _AWS_VARS}
    nowhere = str(tmp_path_factory.mktemp("no-aws"))
    for k in _AWS_VARS:
        os.environ.pop(k, None)
    os.environ.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=KEY, AWS_DEFAULT_REGION=REGION,
                      AWS_SHARED_CREDENTIALS_FILE=os.path.join(nowhere, "credentials"),
                      AWS_CONFIG_FILE=os.path.join(nowhere, "config"), AWS_EC2_METADATA_DISABLED="true")
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def zcfg():
    """zgpu.config.set for one test: what it changes goes back to its value before (None = default) after."""
    before = {}

    def set_(**kw):
        for k in kw:
            before.setdefault(k, zgpu.config.remote.get(k))
        zgpu.config.set(**kw)

    yield set_
    if before:
        zgpu.config.set(**before)


FAST_RETRY = dict(max_retries=3, retry_base_ms=5)


# ---- the HTTP server ----------------------------------------------------------------------------------------------
class HTTPServer:
    """The test server (http_server.py) over `root`, plus a log of what it sent (method, path, Range, status,
    body bytes) kept by a handler subclass: the stats endpoint counts requests, the log also counts bytes."""

    def __init__(self, root: str):
        import http_server
        self.root = root
        self.srv, self.thread = http_server.serve(root)
        self.port = self.srv.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.srv.log = []

        class Logging(http_server.Handler):
            def send_response(self, code, message=None):
                self._zg_code = code
                super().send_response(code, message)

            def send_header(self, keyword, value):
                super().send_header(keyword, value)
                if keyword.lower() == "content-length" and not self.path.startswith(http_server.CONTROL):
                    n = int(value) if self.command == "GET" else 0
                    with self.server.lock:
                        self.server.log.append((self.command, self.path, self.headers.get("Range"),
                                                getattr(self, "_zg_code", None), n))

        self.srv.RequestHandlerClass = Logging

    def _call(self, method: str, path: str, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def faults(self, *rules) -> None:
        self._call("POST", "/__faults__", {"rules": list(rules)})

    def clear_faults(self) -> None:
        self._call("DELETE", "/__faults__")

    def stats(self) -> dict:
        return self._call("GET", "/__stats__")

    def reset_stats(self) -> None:
        self._call("DELETE", "/__stats__")
        with self.srv.lock:
            self.srv.log = []

    def log(self) -> list:
        with self.srv.lock:
            return list(self.srv.log)

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture(scope="session")
def http(tmp_path_factory):
    s = HTTPServer(str(tmp_path_factory.mktemp("http-root")))
    yield s
    s.close()


@pytest.fixture
def httpsrv(http):
    """The session's server with no fault rules, before and after the test."""
    http.clear_faults()
    yield http
    http.clear_faults()


# ---- moto S3 ----------------------------------------------------------------------------------------------------
class S3:
    def __init__(self, endpoint: str):
        import boto3
        self.endpoint = endpoint
        self.bucket = BUCKET
        self._fs = None
        self.client = boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=KEY,
                                   aws_secret_access_key=KEY)

    def url(self, key: str) -> str:
        return "s3://%s/%s" % (self.bucket, key)

    def storage_options(self) -> dict:
        return dict(key=KEY, secret=KEY, client_kwargs={"endpoint_url": self.endpoint, "region_name": REGION},
                    skip_instance_cache=True, use_listings_cache=False)

    def store(self, key: str, read_only: bool = False, bucket: str = None):
        """A zarr-python store on s3://bucket/key (one async s3fs filesystem, listings never cached)."""
        import s3fs
        import zarr
        if self._fs is None:
            self._fs = s3fs.S3FileSystem(asynchronous=True, **self.storage_options())
        return zarr.storage.FsspecStore(fs=self._fs, path="%s/%s" % (bucket or self.bucket, key),
                                       read_only=read_only)

    def close(self) -> None:
        """Closes s3fs's aiohttp session (else "Unclosed client session" at exit)."""
        fs, self._fs = self._fs, None
        if fs is not None and getattr(fs, "_s3", None) is not None:
            try:
                from zarr.core.sync import sync
                sync(fs._s3.close())
            except Exception:
                pass

    def zarr_read(self, key: str) -> np.ndarray:
        import zarr
        return zarr.open_array(store=self.store(key, read_only=True), mode="r")[...]

    def keys(self, prefix: str) -> dict:
        """{key: size} of every object under prefix."""
        out = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for o in page.get("Contents", []):
                out[o["Key"]] = o["Size"]
        return out

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
            return True
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise


@pytest.fixture(scope="session")
def s3(aws_env):
    try:
        import boto3  # noqa: F401
        import s3fs  # noqa: F401
        from moto.server import ThreadedMotoServer
    except ImportError as e:  # pragma: no cover - installed by make deps
        pytest.skip("moto[s3], boto3 and s3fs are needed for the S3 tests: %s" % e)
    srv = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    s = S3("http://%s:%d" % (host, port))
    s.client.create_bucket(Bucket=BUCKET)
    before = {k: zgpu.config.remote.get(k) for k in ("s3_endpoint", "s3_region", "s3_addressing")}
    zgpu.config.set(s3_endpoint=s.endpoint, s3_region=REGION, s3_addressing="path")
    yield s
    zgpu.config.set(**before)
    s.close()
    srv.stop()


@pytest.fixture(scope="session", autouse=True)
def session_remote_settings():
    before = {k: zgpu.config.remote.get(k) for k in SESSION_REMOTE}
    zgpu.config.set(**SESSION_REMOTE)
    yield
    zgpu.config.set(**before)


# ---- the CLI ------------------------------------------------------------------------------------------------------
def cli_path() -> str:
    return os.environ.get("ZGPU_CLI") or os.path.join(ROOT, "build", "bin", "zgpu")


class Cli:
    def __init__(self, exe: str, env: dict):
        self.exe = exe
        self.env = env

    def __call__(self, *args, env=None, cwd=None) -> subprocess.CompletedProcess:
        cmd = [self.exe] + [str(a) for a in args]
        try:
            return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=CLI_TIMEOUT_S,
                                  env=env or self.env, cwd=cwd)
        except subprocess.TimeoutExpired:
            pytest.fail("zgpu hung (> %d s): %s" % (CLI_TIMEOUT_S, " ".join(cmd)))

    def ok(self, *args, **kw) -> subprocess.CompletedProcess:
        r = self(*args, **kw)
        assert r.returncode == 0, ("zgpu %s exited %d\nstdout: %s\nstderr: %s"
                                   % (" ".join(map(str, args)), r.returncode, r.stdout, r.stderr))
        return r


@pytest.fixture(scope="session")
def cli(s3) -> Cli:
    exe = cli_path()
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        pytest.fail("zgpu CLI not found at %s: run `make build` first (or set ZGPU_CLI)" % exe)
    env = dict(os.environ)  # the session's AWS variables (aws_env) plus the endpoint
    env.update(AWS_ENDPOINT_URL=s3.endpoint, AWS_REGION=REGION)
    return Cli(exe, env)
