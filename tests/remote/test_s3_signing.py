"""zgpu's S3 requests checked signature by signature: a proxy in front of moto (which accepts any signature)
recomputes every request's Signature V4 with botocore's signer from the headers the request says it signed, checks
x-amz-content-sha256 against the body and x-amz-date against the clock, answers 403 SignatureDoesNotMatch where
anything differs, and forwards the rest to moto. Reads (whole, crops, sharded ranges), writes (single and multipart
PUTs), listings (signed queries) and deletes go through it; so do a session token (carried and signed) and keys S3
encodes in the path (space, '+', '=', '&', '%', '~', non-ASCII), and virtual-host addressing (the bucket in the signed
Host); a wrong secret is refused, so the check can fail."""
from __future__ import annotations

import calendar
import hashlib
import http.client
import http.server
import threading
import time
import urllib.parse

import numpy as np
import pytest

import zgpu
from conftest import BUCKET, KEY, REGION, unique

pytest.importorskip("botocore")
from botocore.auth import S3SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402

def check_signature(method: str, raw_path: str, headers, body: bytes, token=None, keys=(KEY, KEY)) -> str:
    """'' when the request's Authorization is botocore's signature of it with the key pair `keys` (and, given a
    session token, carries and signs it), else why not."""
    auth = headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "no SigV4 Authorization header"
    parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    date = headers.get("x-amz-date", "")
    scope = "%s/%s/%s/s3/aws4_request" % (keys[0], date[:8], REGION)
    if parts.get("Credential") != scope:
        return "credential %r, not %r" % (parts.get("Credential"), scope)
    try:
        signed_at = calendar.timegm(time.strptime(date, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        return "bad x-amz-date %r" % date
    if abs(signed_at - time.time()) > 900:
        return "x-amz-date %s is more than 15 minutes off" % date
    payload = headers.get("x-amz-content-sha256")
    if payload != "UNSIGNED-PAYLOAD" and payload != hashlib.sha256(body).hexdigest():
        return "x-amz-content-sha256 %r is not the body's hash" % payload
    names = parts.get("SignedHeaders", "").split(";")
    if not {"host", "x-amz-date", "x-amz-content-sha256"} <= set(names):
        return "signed headers %r lack host, x-amz-date or x-amz-content-sha256" % names
    if token is not None and (headers.get("x-amz-security-token") != token or "x-amz-security-token" not in names):
        return "session token %r, signed: %s" % (headers.get("x-amz-security-token"), "x-amz-security-token" in names)
    signed = {n: headers.get(n, "") for n in names}
    req = AWSRequest(method=method, url="http://%s%s" % (headers["Host"], raw_path), headers=signed, data=body)
    req.context["timestamp"] = date
    signer = S3SigV4Auth(Credentials(keys[0], keys[1]), "s3", REGION)
    want = signer.signature(signer.string_to_sign(req, signer.canonical_request(req)), req)
    return "" if parts.get("Signature") == want else "signature %s, botocore's %s" % (parts.get("Signature"), want)


class VerifyingProxy(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str):
        u = urllib.parse.urlsplit(upstream)
        self.upstream = (u.hostname, u.port)
        self.checked = 0
        self.token = None  # a session token every request must carry and sign
        self.keys = (KEY, KEY)  # the key pair every request must be signed with
        self.paths = []
        self.hosts = set()
        self.refused = []
        self.methods = set()
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), ProxyHandler)


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        srv = self.server
        why = check_signature(self.command, self.path, self.headers, body, srv.token, srv.keys)
        with srv.lock:
            srv.checked += 1
            srv.paths.append(self.path)
            srv.hosts.add(self.headers.get("Host", ""))
            srv.methods.add(self.command + ("?" if "?" in self.path else ""))
            if why:
                srv.refused.append("%s %s: %s" % (self.command, self.path, why))
        if why:
            msg = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SignatureDoesNotMatch</Code><Message>%s"
                   "</Message></Error>" % why).encode()
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(msg)
            return
        c = http.client.HTTPConnection(*srv.upstream, timeout=30)
        fwd = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
        c.request(self.command, self.path, body=body if body or self.command in ("PUT", "POST") else None,
                  headers=fwd)
        r = c.getresponse()
        data = r.read()
        self.send_response(r.status, r.reason)
        for k, v in r.getheaders():
            if k.lower() not in ("content-length", "connection", "transfer-encoding", "keep-alive", "server", "date"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        c.close()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _any


@pytest.fixture
def proxy(s3):
    srv = VerifyingProxy(s3.endpoint)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    before = zgpu.config.remote.get("s3_endpoint")
    zgpu.config.set(s3_endpoint="http://127.0.0.1:%d" % srv.server_address[1])
    yield srv
    zgpu.config.set(s3_endpoint=before)
    srv.shutdown()
    srv.server_close()


def test_every_request_signed(proxy, request, zcfg):
    zcfg(multipart_threshold=5 << 20, multipart_part_size=5 << 20)
    rng = np.random.default_rng(3)
    data = rng.integers(0, 1 << 16, size=(24, 96, 80), dtype=np.uint16)
    big = rng.integers(0, 1 << 30, size=(1, 1600, 1000), dtype=np.uint32)  # a 6.4 MB chunk: a multipart upload
    url = "s3://%s/%s" % (BUCKET, unique(request, ""))
    g = zgpu.open_group(url, mode="w")
    a = g.create_array("plain", shape=data.shape, dtype="uint16", chunks=(8, 32, 32), compressors="zstd")
    a[...] = data
    s = g.create_array("sharded", shape=data.shape, dtype="uint16", chunks=(4, 16, 16), shards=(8, 32, 32),
                       compressors="zstd")
    s[...] = data
    m = g.create_array("multipart", shape=big.shape, dtype="uint32", chunks=big.shape)
    m[...] = big
    g = zgpu.open_group(url)
    assert sorted(g.array_keys()) == ["multipart", "plain", "sharded"]  # (a signed listing query)
    for name in ("plain", "sharded"):
        r = g[name]
        np.testing.assert_array_equal(r[...], data)
        np.testing.assert_array_equal(r[3:19, 10:90, 7:61], data[3:19, 10:90, 7:61])
        got = r.read_batch([np.s_[i:i + 4, 5:21, 9:25] for i in range(0, 20, 5)])
        np.testing.assert_array_equal(got, np.stack([data[i:i + 4, 5:21, 9:25] for i in range(0, 20, 5)]))
    np.testing.assert_array_equal(g["multipart"][...], big)
    zgpu.open_group(url, mode="w")  # overwrite: the old members erased (listing and deletes)
    assert list(zgpu.open_group(url).array_keys()) == []
    assert proxy.refused == []
    assert proxy.checked > 30
    assert {"GET", "GET?", "PUT", "PUT?", "POST?", "DELETE"} <= proxy.methods, proxy.methods


def test_wrong_secret_refused(proxy, request, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-" + KEY)
    with pytest.raises(zgpu.ZgpuError) as ei:
        zgpu.open_array("s3://%s/%s" % (BUCKET, unique(request)))
    assert "403" in str(ei.value) and "SignatureDoesNotMatch" in str(ei.value), str(ei.value)
    assert "[requests signed with the credentials of environment]" in str(ei.value), str(ei.value)
    assert proxy.refused and "signature" in proxy.refused[0]


# Keys S3 encodes: a space, '+', '=', '&', '%', '~' and non-ASCII, in the path the signature covers.
ODD_NAMES = ["with space", "plus+sign", "eq=amp&", "pct%41", "tilde~", "\u00fcn\u00efc\u00f8de"]


def test_session_token_and_keys_to_encode(proxy, request, monkeypatch, s3):
    token = "FQoGZXIvYXdzE+session/token=="
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    proxy.token = token
    base = unique(request, "")
    data = np.arange(6 * 40 * 30, dtype=np.int32).reshape(6, 40, 30)
    for name in ODD_NAMES:
        a = zgpu.create("s3://%s/%s/%s" % (BUCKET, base, name), shape=data.shape, dtype=data.dtype,
                        chunks=(3, 16, 16), shards=(6, 32, 32))
        a[...] = data
        a.close()
    for name in ODD_NAMES:
        a = zgpu.open_array("s3://%s/%s/%s" % (BUCKET, base, name))
        np.testing.assert_array_equal(a[...], data)
        np.testing.assert_array_equal(a[1:5, 7:33, 2:29], data[1:5, 7:33, 2:29])
    # the keys are the names themselves in the bucket (encoded on the wire, decoded by the server)
    stored = {k.split("/")[1] for k in s3.keys(base + "/")}
    assert stored == set(ODD_NAMES), stored
    assert proxy.refused == []
    assert any("%20" in p for p in proxy.paths) and any("%C3%BC" in p for p in proxy.paths), proxy.paths[:5]


def test_virtual_host_signed(proxy, request, zcfg):
    """Virtual-host style (the bucket in the host name, AWS's default) signs the Host it sends: writes, reads and a
    listing through http://bucket.localhost:port (libcurl resolves *.localhost to the loopback address)."""
    zcfg(s3_endpoint="http://localhost:%d" % proxy.server_address[1], s3_addressing="virtual")
    url = "s3://%s/%s" % (BUCKET, unique(request, ""))
    data = np.arange(24 * 20, dtype=np.uint16).reshape(24, 20)
    g = zgpu.open_group(url, mode="w")
    a = g.create_array("v", shape=data.shape, dtype="uint16", chunks=(8, 8), compressors="zstd")
    a[...] = data
    g = zgpu.open_group(url)
    assert list(g.array_keys()) == ["v"]
    np.testing.assert_array_equal(g["v"][3:21, 2:19], data[3:21, 2:19])
    assert proxy.refused == []
    assert "%s.localhost:%d" % (BUCKET, proxy.server_address[1]) in proxy.hosts, proxy.hosts
