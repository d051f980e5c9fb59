"""S3 reads and writes with a role's temporary credentials, where no key pair is configured: an EC2 instance profile
through a local stand-in for the instance metadata service (IMDSv2: a session token, the role's name, its
credentials; at AWS_EC2_METADATA_SERVICE_ENDPOINT), and a container's credentials endpoint (ECS, EKS Pod Identity:
AWS_CONTAINER_CREDENTIALS_FULL_URI with its authorization token). Every S3 request goes through test_s3_signing's
checking proxy, which accepts only the role's current keys, so the credentials in use are the ones checked: the
served ones, fetched again once they expire; no role or no metadata service leaves the requests unsigned."""
from __future__ import annotations

import datetime
import http.server
import json
import threading
import urllib.parse

import numpy as np
import pytest

import zgpu
from conftest import BUCKET, unique
from test_s3_signing import proxy  # noqa: F401 (the fixture)

pytest.importorskip("botocore")


class RoleServer(http.server.ThreadingHTTPServer):
    """IMDSv2 and a container endpoint in one: each credentials answer hands out the next key set."""
    daemon_threads = True

    def __init__(self, role="zgpu-role", auth=None):
        self.role = role
        self.web_token = None         # the web identity token STS accepts
        self.lifetimes = []           # seconds each of the next key sets lasts (< 0: expired already); then an hour
        self.auth = auth              # the container endpoint's expected Authorization, or None
        self.tokens = set()
        self.handed = []              # (akid, secret, token) in order
        self.requests = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), RoleHandler)

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.server_address[1]

    def next_keys(self) -> dict:
        with self.lock:
            n = len(self.handed) + 1
            keys = ("ASIAROLE%d" % n, "rolesecret%d" % n, "roletoken%d/+=" % n)
            self.handed.append(keys)
            lifetime = self.lifetimes.pop(0) if self.lifetimes else 3600
        exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=lifetime)
        return {"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": keys[0], "SecretAccessKey": keys[1],
                "Token": keys[2], "Expiration": exp.strftime("%Y-%m-%dT%H:%M:%SZ")}


class RoleHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        srv = self.server
        srv.requests.append("PUT " + self.path)
        if self.path != "/latest/api/token" or not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self._send(400)
        tok = "imds-token-%d" % len(srv.tokens)
        srv.tokens.add(tok)
        self._send(200, tok.encode())

    def do_POST(self):  # STS AssumeRoleWithWebIdentity (form-encoded, unsigned)
        srv = self.server
        n = int(self.headers.get("Content-Length") or 0)
        form = urllib.parse.parse_qs(self.rfile.read(n).decode())
        srv.requests.append("POST %s %s" % (self.path, form.get("Action", [""])[0]))
        if not self.path.startswith("/sts/") or form.get("Action") != ["AssumeRoleWithWebIdentity"] or \
                form.get("Version") != ["2011-06-15"] or not form.get("RoleSessionName"):
            return self._send(400)
        if form.get("WebIdentityToken") != [srv.web_token] or form.get("RoleArn") != ["arn:aws:iam::1:role/pod"]:
            return self._send(403, b"<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                                   b"<Message>the token is not valid</Message></Error></ErrorResponse>")
        k = srv.next_keys()
        xml = ("<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
               "<AssumeRoleWithWebIdentityResult><Credentials><SessionToken>%s</SessionToken>"
               "<SecretAccessKey>%s</SecretAccessKey><Expiration>%s</Expiration><AccessKeyId>%s</AccessKeyId>"
               "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"
               % (k["Token"], k["SecretAccessKey"], k["Expiration"], k["AccessKeyId"]))
        self._send(200, xml.encode())

    def do_GET(self):
        srv = self.server
        srv.requests.append("GET " + self.path)
        if self.path.startswith("/latest/meta-data/"):  # IMDSv2: only with a session token
            if self.headers.get("X-aws-ec2-metadata-token") not in srv.tokens:
                return self._send(401)
            base = "/latest/meta-data/iam/security-credentials/"
            if self.path == base:
                return self._send(200, srv.role.encode()) if srv.role else self._send(404)
            if self.path == base + srv.role:
                return self._send(200, json.dumps(srv.next_keys()).encode())
            return self._send(404)
        if self.path.startswith("/container/creds"):
            if self.headers.get("Authorization") != srv.auth:
                return self._send(401)
            return self._send(200, json.dumps(srv.next_keys()).encode())
        self._send(404)


@pytest.fixture
def role_server():
    srv = RoleServer()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def no_keys(monkeypatch):
    """No key pair anywhere (the session's aws_env sets one; no profile files exist), the metadata service allowed."""
    for v in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


def _round_trip(url):
    data = np.arange(12 * 20, dtype=np.int16).reshape(12, 20)
    a = zgpu.create(url, shape=data.shape, dtype=data.dtype, chunks=(4, 8), compressors="zstd")
    a[...] = data
    a.close()
    np.testing.assert_array_equal(zgpu.open_array(url)[2:11, 3:19], data[2:11, 3:19])


def test_instance_profile(proxy, role_server, no_keys, request):  # noqa: F811
    no_keys.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", role_server.url)
    proxy.keys, proxy.token = ("ASIAROLE1", "rolesecret1"), "roletoken1/+="
    _round_trip("s3://%s/%s" % (BUCKET, unique(request)))
    assert proxy.refused == [] and proxy.checked > 3
    assert len(role_server.handed) == 1  # one fetch for the process's stores
    assert role_server.requests[:3] == ["PUT /latest/api/token", "GET /latest/meta-data/iam/security-credentials/",
                                        "GET /latest/meta-data/iam/security-credentials/zgpu-role"]
    # refused, an access-denied error says whose keys signed
    proxy.keys = ("ASIAOTHER", "other")
    with pytest.raises(zgpu.ZgpuError) as ei:
        zgpu.open_array("s3://%s/%s" % (BUCKET, unique(request)))
    assert "signed with the credentials of instance profile 'zgpu-role'" in str(ei.value), str(ei.value)


def test_expired_keys_fetched_again(proxy, role_server, no_keys, request):  # noqa: F811
    """Keys handed out already expired are replaced before a request is signed with them: the proxy accepts only the
    second set."""
    role_server.lifetimes = [-5]  # set 1 expired when handed out, set 2 lasting
    no_keys.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", role_server.url)
    proxy.keys, proxy.token = ("ASIAROLE2", "rolesecret2"), "roletoken2/+="
    url = "s3://%s/%s" % (BUCKET, unique(request))
    a = zgpu.create(url, shape=(4,), dtype="uint8", chunks=(2,))
    a[...] = np.arange(4, dtype=np.uint8)
    a.close()
    np.testing.assert_array_equal(zgpu.open_array(url)[...], np.arange(4, dtype=np.uint8))
    assert proxy.refused == []
    assert [k[0] for k in role_server.handed] == ["ASIAROLE1", "ASIAROLE2"]


def test_container_credentials(proxy, role_server, no_keys, request):  # noqa: F811
    role_server.auth = "Bearer pod-identity-token"
    no_keys.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", role_server.url + "/container/creds")
    no_keys.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", role_server.auth)
    proxy.keys, proxy.token = ("ASIAROLE1", "rolesecret1"), "roletoken1/+="
    _round_trip("s3://%s/%s" % (BUCKET, unique(request)))
    assert proxy.refused == []
    # a wrong token: the endpoint refuses, and so does zgpu, naming it
    no_keys.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", role_server.url + "/container/creds-again")
    no_keys.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Bearer wrong")
    with pytest.raises(zgpu.ZgpuError) as ei:
        zgpu.open_array("s3://%s/%s" % (BUCKET, unique(request)))
    assert "container/creds" in str(ei.value) and "401" in str(ei.value), str(ei.value)


def test_no_role_is_anonymous(proxy, role_server, no_keys, request):  # noqa: F811
    """An instance without a role (its metadata service answers 404 for the role list): unsigned requests, which the
    checking proxy refuses with 403, as a private bucket would (for unsigned requests, a missing key: no array)."""
    role_server.role = ""
    no_keys.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", role_server.url)
    with pytest.raises(zgpu.NotFoundError):
        zgpu.open_array("s3://%s/%s" % (BUCKET, unique(request)))
    assert proxy.refused and all("no SigV4 Authorization" in r for r in proxy.refused), proxy.refused
    assert role_server.handed == []


def test_keys_near_expiry_not_fetched_per_request(proxy, role_server, no_keys, request):  # noqa: F811
    """Keys with 5 minutes left (EC2 may hand out such) are fetched again at most once a minute until they expire,
    not for every request: a write and a read in that minute are all signed with the first set."""
    role_server.lifetimes = [300]
    no_keys.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", role_server.url)
    proxy.keys, proxy.token = ("ASIAROLE1", "rolesecret1"), "roletoken1/+="
    _round_trip("s3://%s/%s" % (BUCKET, unique(request)))
    assert proxy.refused == [] and proxy.checked > 3
    assert len(role_server.handed) == 1


def test_web_identity(proxy, role_server, no_keys, request, tmp_path):  # noqa: F811
    """A pod's role on EKS (IAM roles for service accounts): the token file exchanged at STS for the role's keys,
    taken before the shared files; a token STS refuses is an error naming the role and STS's code."""
    token = tmp_path / "token"
    token.write_text("eyJ-web-identity+token/==\n")
    role_server.web_token = "eyJ-web-identity+token/=="
    no_keys.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(token))
    no_keys.setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/pod")
    no_keys.setenv("AWS_ENDPOINT_URL_STS", role_server.url + "/sts/")
    proxy.keys, proxy.token = ("ASIAROLE1", "rolesecret1"), "roletoken1/+="
    _round_trip("s3://%s/%s" % (BUCKET, unique(request)))
    assert proxy.refused == []
    assert role_server.requests == ["POST /sts/ AssumeRoleWithWebIdentity"]
    role_server.web_token = "another"
    no_keys.setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/pod")
    no_keys.setenv("AWS_ENDPOINT_URL_STS", role_server.url + "/sts/?again")
    with pytest.raises(zgpu.ZgpuError) as ei:
        zgpu.open_array("s3://%s/%s" % (BUCKET, unique(request)))
    assert "arn:aws:iam::1:role/pod" in str(ei.value) and "InvalidIdentityToken" in str(ei.value), str(ei.value)
