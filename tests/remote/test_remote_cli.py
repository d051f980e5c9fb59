"""The zgpu CLI on remote paths: info and read of s3:// and http:// arrays, cp and write to S3, unsupported
schemes. The CLI finds moto through AWS_ENDPOINT_URL and the session's credentials (conftest's cli fixture)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import zarr

from conftest import make_data, unique, write_case


def test_info_s3(cli, s3, request):
    key = unique(request)
    write_case(s3.store(key), "v3-sharded", grid="coarse")
    r = cli.ok("info", s3.url(key))
    assert "[40, 36, 50]" in r.stdout, r.stdout
    assert "uint16" in r.stdout
    assert "sharding_indexed" in r.stdout and "zstd" in r.stdout, r.stdout
    assert "[24, 36, 50]" in r.stdout and "[12, 18, 25]" in r.stdout
    doc = json.loads(cli.ok("info", s3.url(key), "--json").stdout)
    assert doc["shape"] == [40, 36, 50]


def test_info_s3_group(cli, s3, request):
    key = unique(request)
    g = zarr.open_group(store=s3.store(key), mode="w")
    g.create_array("alpha", shape=(3,), dtype="uint8")
    g.create_group("beta")
    r = cli.ok("info", s3.url(key))
    assert "group" in r.stdout and "alpha" in r.stdout and "beta" in r.stdout, r.stdout


def test_read_s3(cli, s3, request, tmp_path):
    key = unique(request)
    _, data = write_case(s3.store(key), "v3-zstd-crc32c", grid="coarse")
    out = tmp_path / "out.npy"
    cli.ok("read", s3.url(key), "-o", out)
    np.testing.assert_array_equal(np.load(out), data)
    cli.ok("read", s3.url(key), "-o", out, "--region", "5:37,3:33,-5:")
    np.testing.assert_array_equal(np.load(out), data[5:37, 3:33, -5:])


def test_read_http(cli, http, request, tmp_path):
    name = unique(request)
    _, data = write_case(os.path.join(http.root, name), "v3-sharded-holes")
    ref = zarr.open_array(os.path.join(http.root, name), mode="r")[...]
    out = tmp_path / "out.npy"
    cli.ok("read", "%s/%s" % (http.url, name), "-o", out)
    np.testing.assert_array_equal(np.load(out), ref)
    cli.ok("read", "%s/%s" % (http.url, name), "-o", out, "--region", "10:20,0:36,31:33")
    np.testing.assert_array_equal(np.load(out), ref[10:20, 0:36, 31:33])


def test_cp_local_to_s3_and_back(cli, s3, request, tmp_path):
    local = str(tmp_path / "local.zarr")
    _, data = write_case(local, "v2-gzip", grid="coarse")
    key = unique(request)
    cli.ok("cp", local, s3.url(key), "-q")
    np.testing.assert_array_equal(s3.zarr_read(key), data)
    assert zarr.open_array(store=s3.store(key, read_only=True), mode="r").metadata.zarr_format == 2
    # S3 to S3, converted to sharded v3
    key2 = unique(request)
    cli.ok("cp", s3.url(key), s3.url(key2), "--format", "3", "--chunks", "10,18,25", "--shards", "20,36,50",
           "--codec", "zstd:3", "-q")
    z2 = zarr.open_array(store=s3.store(key2, read_only=True), mode="r")
    assert z2.shards == (20, 36, 50)
    np.testing.assert_array_equal(z2[...], data)
    # and back to a local directory
    back = str(tmp_path / "back.zarr")
    cli.ok("cp", s3.url(key2), back, "-q")
    np.testing.assert_array_equal(zarr.open_array(back, mode="r")[...], data)
    # overwrite needs --overwrite
    r = cli("cp", local, s3.url(key), "-q")
    assert r.returncode == 1, (r.stdout, r.stderr)
    cli.ok("cp", back, s3.url(key), "--overwrite", "--format", "3", "-q")
    np.testing.assert_array_equal(s3.zarr_read(key), data)
    assert zarr.open_array(store=s3.store(key, read_only=True), mode="r").metadata.zarr_format == 3
    assert not any(k.endswith(".zarray") for k in s3.keys(key + "/")), s3.keys(key + "/")


def test_write_npy_to_s3(cli, s3, request, tmp_path):
    data = make_data((30, 40), "int32", seed=31)
    npy = tmp_path / "in.npy"
    np.save(npy, data)
    key = unique(request)
    cli.ok("write", s3.url(key), npy, "--chunks", "16,16", "--codec", "blosc:lz4:5:shuffle")
    np.testing.assert_array_equal(s3.zarr_read(key), data)


def test_cp_http_to_local(cli, http, request, tmp_path):
    name = unique(request)
    _, data = write_case(os.path.join(http.root, name), "v3-gzip")
    dst = str(tmp_path / "dst.zarr")
    cli.ok("cp", "%s/%s" % (http.url, name), dst, "-q")
    np.testing.assert_array_equal(zarr.open_array(dst, mode="r")[...], data)


def test_unsupported_scheme(cli, tmp_path):
    out = tmp_path / "out.npy"
    r = cli("read", "gs://x/y", "-o", out, cwd=str(tmp_path))
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "gs://" in r.stderr, r.stderr
    r = cli("info", "memory://x", cwd=str(tmp_path))
    assert r.returncode == 1 and "memory://" in r.stderr, (r.returncode, r.stderr)
    r = cli("cp", str(tmp_path / "none.zarr"), "gs://x/y", cwd=str(tmp_path))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == []


def test_missing_s3_array_exit_1(cli, s3):
    r = cli("info", s3.url("does-not-exist.zarr"))
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "does-not-exist.zarr" in r.stderr, r.stderr


def test_info_http(cli, http, request):
    name = unique(request)
    write_case(os.path.join(http.root, name), "v2-blosc-lz4-shuffle")
    r = cli.ok("info", "%s/%s" % (http.url, name))
    assert "[40, 36, 50]" in r.stdout, r.stdout
    assert "blosc" in r.stdout and "lz4" in r.stdout, r.stdout
    assert "zarr_format:      2" in r.stdout, r.stdout


@pytest.mark.parametrize("case", ["v3-zstd", "v2-zstd"])
def test_info_http_reads_metadata_once(cli, httpsrv, request, case):
    """zgpu info opens the node once (zgpu_context_open_node): a v3 array's zarr.json is one GET, where looking at
    the node first and then opening it took two."""
    name = unique(request)
    write_case(os.path.join(httpsrv.root, name), case)
    httpsrv.reset_stats()
    r = cli.ok("info", "%s/%s" % (httpsrv.url, name))
    assert "[40, 36, 50]" in r.stdout, r.stdout
    docs = ("zarr.json", ".zarray", ".zgroup", ".zattrs")
    got = [(m, p.rsplit("/", 1)[-1]) for m, p, *_ in httpsrv.log() if p.rsplit("/", 1)[-1] in docs]
    if case.startswith("v3"):
        assert got == [("GET", "zarr.json")], got
    else:  # zarr.json missing, then .zarray and the attributes, each once
        assert got == [("GET", "zarr.json"), ("GET", ".zarray"), ("GET", ".zattrs")], got
