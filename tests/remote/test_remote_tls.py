"""HTTPS and proxies: certificates are verified by default (a self-signed server is refused, saying why), a CA
bundle given as ca_file is trusted, and tls_verify=False reads from any server (the test server over TLS with a
certificate made here for 127.0.0.1); http_proxy from the environment is used."""
from __future__ import annotations

import datetime
import ipaddress

import numpy as np
import pytest

import zgpu
from conftest import unique, write_case


@pytest.fixture(scope="module")
def https(tmp_path_factory):
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import http_server

    d = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "zgpu test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    certfile, keyfile = d / "cert.pem", d / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    root = d / "root"
    root.mkdir()
    srv, _ = http_server.serve(str(root), tls=(str(certfile), str(keyfile)))
    yield srv, str(root), "https://127.0.0.1:%d" % srv.server_address[1], str(certfile)
    srv.shutdown()
    srv.server_close()


def test_self_signed_refused_by_default(https, request, zcfg):
    srv, root, url, _ = https
    zcfg(max_retries=-1)
    key = unique(request)
    write_case("%s/%s" % (root, key), "v3-zstd")
    with pytest.raises(zgpu.ZgpuError) as e:
        zgpu.open("%s/%s" % (url, key))
    assert "certificate" in str(e.value).lower(), str(e.value)
    assert url in str(e.value)


def test_ca_file_trusted(https, request, zcfg):
    srv, root, url, certfile = https
    zcfg(ca_file=certfile)
    key = unique(request)
    _, ref = write_case("%s/%s" % (root, key), "v3-sharded")
    np.testing.assert_array_equal(zgpu.open("%s/%s" % (url, key))[...], ref)


def test_verification_off(https, request, zcfg):
    srv, root, url, _ = https
    zcfg(tls_verify=False)
    key = unique(request)
    _, ref = write_case("%s/%s" % (root, key), "v2-blosc-lz4-shuffle")
    np.testing.assert_array_equal(zgpu.open("%s/%s" % (url, key))[5:30, 2:9, 40:50], ref[5:30, 2:9, 40:50])


def test_proxy_from_environment(httpsrv, request, monkeypatch, zcfg):
    """http_proxy (read by libcurl) sends requests through the proxy: a host that does not resolve is reached
    through the test server, which serves absolute-URI requests from its root."""
    key = unique(request)
    _, ref = write_case("%s/%s" % (httpsrv.root, key), "v3-zstd")
    monkeypatch.setenv("http_proxy", httpsrv.url)
    for v in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(v, raising=False)
    zcfg(max_retries=1)  # a fresh context (and connections) for this test
    a = zgpu.open("http://zgpu-proxy-test.invalid/%s" % key)
    np.testing.assert_array_equal(a[...], ref)
