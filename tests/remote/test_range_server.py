"""bench/range_server.c (zgpu_range_server, the C server of the remote benchmarks) checked over plain HTTP and
as a read-only path-style S3 endpoint (--s3): whole files, the three range forms, 416, 404 (text and S3 XML),
HEAD, keep-alive, `..` refused, concurrent range requests, ListObjectsV2, and zgpu reading an array through it
over http:// and s3://.

The binary is looked up next to the CLI (ZGPU_CLI's directory, as `make test-remote` sets it); without it the
tests are skipped."""
from __future__ import annotations

import concurrent.futures as cf
import http.client
import json
import os
import random
import re
import socket
import subprocess

import numpy as np
import pytest

import zgpu
from conftest import REGION, cli_path

BIG = 5 * 1000 * 1000 + 17


def server_path() -> str:
    return os.path.join(os.path.dirname(os.environ.get("ZGPU_CLI") or cli_path()), "zgpu_range_server")


class RangeServer:
    """zgpu_range_server over root in a subprocess; it stops when its stdin closes."""

    def __init__(self, root: str, *extra: str):
        exe = server_path()
        self.proc = subprocess.Popen([exe, "--root", root, "--port", "0", "--threads", "8", *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        self.url = "http://127.0.0.1:%d" % self.port

    def conn(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def get(self, path: str, method: str = "GET", headers=None):
        c = self.conn()
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        body = r.read()
        c.close()
        return r, body

    def close(self) -> None:
        self.proc.stdin.close()  # EOF on stdin: the server exits
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("zgpu_range_server did not stop at EOF on stdin")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    exe = server_path()
    if not os.access(exe, os.X_OK):
        pytest.skip("zgpu_range_server not built (looked for %s; cmake --build BUILD --target zgpu_range_server)"
                    % exe)
    d = tmp_path_factory.mktemp("range-root")
    rng = np.random.default_rng(5)
    files = {"small.txt": b"hello, range server\n", "empty": b"", "bkt/big.bin": rng.bytes(BIG),
             "bkt/dir/a b%.txt": b"spaces and percent", "bkt/dir/sub/c": b"c"}
    for rel, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        with open(os.path.join(d, rel), "wb") as f:
            f.write(data)
    return str(d), files


@pytest.fixture(scope="module")
def plain(root):
    s = RangeServer(root[0])
    yield s
    s.close()


@pytest.fixture(scope="module")
def s3srv(root):
    s = RangeServer(root[0], "--s3")
    yield s
    s.close()


def test_whole_and_head(plain, root):
    _, files = root
    for rel, data in files.items():
        path = "/" + rel.replace(" ", "%20").replace("%.", "%25.")
        r, body = plain.get(path)
        assert r.status == 200 and body == data, rel
        assert r.getheader("Content-Length") == str(len(data))
        assert r.getheader("Accept-Ranges") == "bytes"
        assert r.getheader("Content-Type") == "application/octet-stream"
        assert r.getheader("ETag") and r.getheader("Last-Modified")
        h, hbody = plain.get(path, "HEAD")
        assert h.status == 200 and hbody == b"" and h.getheader("Content-Length") == str(len(data))
        assert h.getheader("ETag") == r.getheader("ETag")


def test_ranges(plain, root):
    data = root[1]["bkt/big.bin"]
    n = len(data)
    for rng, a, b in (("bytes=0-0", 0, 0), ("bytes=10-99", 10, 99), ("bytes=%d-" % (n - 1000), n - 1000, n - 1),
                      ("bytes=-4096", n - 4096, n - 1), ("bytes=-%d" % (2 * n), 0, n - 1),
                      ("bytes=100-%d" % (10 * n), 100, n - 1), ("bytes=1000000-3999999", 1000000, 3999999)):
        r, body = plain.get("/bkt/big.bin", headers={"Range": rng})
        assert r.status == 206, rng
        assert r.getheader("Content-Range") == "bytes %d-%d/%d" % (a, b, n), rng
        assert body == data[a:b + 1], rng
        assert r.getheader("Content-Length") == str(b + 1 - a)
    # HEAD with a range: the range's headers, no body
    h, body = plain.get("/bkt/big.bin", "HEAD", {"Range": "bytes=5-9"})
    assert h.status == 206 and body == b"" and h.getheader("Content-Length") == "5"
    # several ranges, or a malformed one: the whole file
    for rng in ("bytes=0-1,5-6", "bytes=abc", "items=0-1"):
        r, body = plain.get("/small.txt", headers={"Range": rng})
        assert r.status == 200 and body == root[1]["small.txt"], rng


def test_unsatisfiable(plain):
    for path, rng, total in (("/small.txt", "bytes=20-", 20), ("/small.txt", "bytes=100-200", 20),
                             ("/small.txt", "bytes=-0", 20), ("/small.txt", "bytes=5-4", 20),
                             ("/empty", "bytes=0-0", 0), ("/empty", "bytes=-1", 0)):
        r, body = plain.get(path, headers={"Range": rng})
        assert r.status == 416, (path, rng)
        assert r.getheader("Content-Range") == "bytes */%d" % total


def test_not_found_and_refused(plain):
    for path in ("/nope", "/bkt/nope/x", "/bkt", "/bkt/dir/", "/"):
        r, body = plain.get(path)
        assert r.status == 404, path
        assert b"<Error>" not in body
    for path in ("/bkt/../small.txt", "/bkt/%2e%2e/small.txt", "/..", "/bkt/dir/.."):
        r, _ = plain.get(path)
        assert r.status == 400, path
    r, _ = plain.get("/bad%zz")
    assert r.status == 400
    # the query string is not part of the path
    r, body = plain.get("/small.txt?x=1&y=%2F")
    assert r.status == 200 and body.startswith(b"hello")


def test_methods_and_malformed(plain):
    c = plain.conn()
    c.request("PUT", "/small.txt", body=b"x" * 1000)
    r = c.getresponse()
    r.read()
    assert r.status == 405
    c.request("GET", "/small.txt")  # the PUT's body was read: the connection is still in step
    r = c.getresponse()
    assert r.status == 200 and r.read().startswith(b"hello")
    c.close()
    for raw, code in ((b"garbage\r\n\r\n", 400), (b"GET /small.txt HTTP/2.0\r\n\r\n", 400),
                      (b"GET /small.txt HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n", 431)):
        c = plain.conn()
        c.connect()
        c.sock.sendall(raw)
        reply = b""
        while chunk := c.sock.recv(65536):  # the server answers, then closes
            reply += chunk
        c.close()
        assert reply.startswith(b"HTTP/1.1 %d " % code), raw[:40]


def test_keep_alive_and_close(plain, root):
    c = plain.conn()
    c.request("GET", "/small.txt")
    r = c.getresponse()
    r.read()
    sock = c.sock
    for i in range(20):
        c.request("GET", "/bkt/big.bin", headers={"Range": "bytes=%d-%d" % (i * 1000, i * 1000 + 9)})
        r = c.getresponse()
        assert r.status == 206 and r.read() == root[1]["bkt/big.bin"][i * 1000:i * 1000 + 10]
        assert c.sock is sock  # one connection throughout
    c.request("HEAD", "/empty")
    r = c.getresponse()
    assert r.status == 200 and r.read() == b""
    c.request("GET", "/small.txt", headers={"Connection": "close"})
    r = c.getresponse()
    assert r.getheader("Connection") == "close" and r.read().startswith(b"hello")
    c.close()
    # the server closes the connection after that answer: read to EOF on a plain socket
    with socket.create_connection(("127.0.0.1", plain.port), timeout=10) as raw:
        raw.sendall(b"GET /small.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := raw.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b"hello, range server\n")


def test_concurrent_ranges(plain, root):
    data = root[1]["bkt/big.bin"]
    rnd = random.Random(7)
    reqs = [(a, a + rnd.randrange(1, 200000)) for a in (rnd.randrange(0, BIG) for _ in range(200))]

    def worker(part):
        c, bad = plain.conn(), 0
        for a, b in part:
            c.request("GET", "/bkt/big.bin", headers={"Range": "bytes=%d-%d" % (a, b)})
            r = c.getresponse()
            b = min(b, BIG - 1)
            bad += r.status != 206 or r.read() != data[a:b + 1] or \
                r.getheader("Content-Range") != "bytes %d-%d/%d" % (a, b, BIG)
        c.close()
        return bad

    with cf.ThreadPoolExecutor(32) as ex:
        assert sum(ex.map(worker, [reqs[i::32] for i in range(32)])) == 0


def test_stats(plain):
    plain.get("/__stats__", "DELETE")
    plain.get("/small.txt")
    plain.get("/small.txt", "HEAD")
    r, body = plain.get("/__stats__")
    s = json.loads(body)
    assert s["GET"] == 1 and s["HEAD"] == 1


def test_s3_errors_and_objects(s3srv, root):
    r, body = s3srv.get("/bkt/nope", headers={"Authorization": "AWS4-HMAC-SHA256 Credential=x",
                                              "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    assert r.status == 404 and r.getheader("x-amz-request-id")
    assert re.search(rb"<Error><Code>NoSuchKey</Code>.*<Key>nope</Key>", body), body
    r, body = s3srv.get("/no-bucket/x")
    assert r.status == 404 and b"<Code>NoSuchBucket</Code>" in body
    r, body = s3srv.get("/bkt/big.bin?x-id=GetObject", headers={"Range": "bytes=-10"})
    assert r.status == 206 and body == root[1]["bkt/big.bin"][-10:] and r.getheader("ETag")
    r, body = s3srv.get("/bkt/big.bin", headers={"Range": "bytes=%d-" % BIG})
    assert r.status == 416 and b"<Code>InvalidRange</Code>" in body
    assert s3srv.get("/bkt", "HEAD")[0].status == 200
    assert s3srv.get("/nob", "HEAD")[0].status == 404
    r, body = s3srv.get("/bkt/dir/a%20b%25.txt", "HEAD")
    assert r.status == 200 and r.getheader("Content-Length") == "18"


def test_s3_list(s3srv):
    import boto3
    c = boto3.client("s3", endpoint_url=s3srv.url, region_name=REGION, aws_access_key_id="any",
                     aws_secret_access_key="any")
    r = c.list_objects_v2(Bucket="bkt", Prefix="dir/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["dir/a b%.txt"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["dir/sub/"]
    assert r["IsTruncated"] is False
    r = c.list_objects_v2(Bucket="bkt")
    assert {o["Key"]: o["Size"] for o in r["Contents"]} == {"big.bin": BIG, "dir/a b%.txt": 18, "dir/sub/c": 1}
    pages = c.get_paginator("list_objects_v2").paginate(Bucket="bkt", PaginationConfig={"PageSize": 2})
    assert [o["Key"] for p in pages for o in p.get("Contents", [])] == ["big.bin", "dir/a b%.txt", "dir/sub/c"]
    r = c.list_objects_v2(Bucket="bkt", Prefix="di")
    assert len(r["Contents"]) == 2 and "CommonPrefixes" not in r


def _zgpu_array(path):
    data = np.arange(30 * 40 * 20, dtype="uint16").reshape(30, 40, 20)
    a = zgpu.create(path, shape=data.shape, dtype=data.dtype, chunks=(16, 16, 16))
    a[...] = data
    s = zgpu.create(path + "-sharded", shape=data.shape, dtype=data.dtype, chunks=(8, 8, 8), shards=(16, 16, 16))
    s[...] = data
    return data


def test_zgpu_over_http(plain, root):
    data = _zgpu_array(os.path.join(root[0], "x.zarr"))
    for name in ("x.zarr", "x.zarr-sharded"):
        a = zgpu.open("%s/%s" % (plain.url, name))
        np.testing.assert_array_equal(a[...], data)
        np.testing.assert_array_equal(a[3:29, 5:7, 1:19], data[3:29, 5:7, 1:19])


def test_zgpu_over_s3(s3srv, root, zcfg):
    data = _zgpu_array(os.path.join(root[0], "bkt", "x.zarr"))
    zcfg(s3_endpoint=s3srv.url, s3_region=REGION, s3_addressing="path")
    for name in ("x.zarr", "x.zarr-sharded"):
        a = zgpu.open("s3://bkt/" + name)
        np.testing.assert_array_equal(a[...], data)
        np.testing.assert_array_equal(a[3:29, 5:7, 1:19], data[3:29, 5:7, 1:19])
