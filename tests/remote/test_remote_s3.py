"""zgpu over S3 (moto): arrays written by zarr-python through s3fs read by zgpu; arrays written by zgpu (create,
regions, resize, overwrite, staged commit, multipart uploads) read back by zarr-python; groups with listing;
errors (missing bucket); unsigned requests."""
from __future__ import annotations

import os

import numpy as np
import pytest
import zarr

import zgpu
from conftest import BUCKET, CASES, check_regions, make_data, unique, write_case


# ---- zarr-python writes, zgpu reads -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_read_matches_zarr_python(s3, request, case):
    key = unique(request)
    _, ref = write_case(s3.store(key), case, grid="coarse")
    if case in ("v3-sharded-holes", "v2-missing-chunks"):  # the expected contents are zarr-python's too
        np.testing.assert_array_equal(s3.zarr_read(key), ref)
    a = zgpu.open(s3.url(key))
    assert isinstance(a, zgpu.Array)
    check_regions(a, ref)
    assert a.zarr_format == (2 if case.startswith("v2") else 3)


def test_read_through_prefix_with_trailing_slash(s3, request):
    key = "deep/er/" + unique(request)
    _, data = write_case(s3.store(key), "v3-sharded", grid="coarse")
    np.testing.assert_array_equal(zgpu.open_array(s3.url(key) + "/")[...], data)


def test_storage_info(s3, request):
    key = unique(request)
    write_case(s3.store(key), "v3-missing-chunks", grid="coarse")
    objs = {k: v for k, v in s3.keys(key + "/").items() if "/c/" in k}
    a = zgpu.open_array(s3.url(key))
    assert a.nchunks_initialized == len(objs)
    assert a.nbytes_stored() == sum(objs.values())


def test_not_found(s3, request):
    with pytest.raises(zgpu.NotFoundError) as ei:
        zgpu.open(s3.url("nothing-here.zarr"))
    assert "nothing-here.zarr" in str(ei.value)


def test_missing_bucket_read(s3, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = "s3://no-such-bucket-zgpu/x.zarr"
    for call in (lambda: zgpu.open_array(url), lambda: zgpu.open_group(url), lambda: zgpu.open(url)):
        with pytest.raises(zgpu.ZgpuError) as ei:
            call()
        assert "no-such-bucket-zgpu" in str(ei.value), str(ei.value)
    assert os.listdir(tmp_path) == []


# ---- zgpu writes, zarr-python reads -----------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,kw", [
    (3, dict(compressors="zstd")),
    (3, dict(compressors=None)),
    (3, dict(compressors=["zstd", "crc32c"])),
    (3, dict(compressors="blosc", shards=(24, 36, 50))),
    (2, dict(compressors="gzip")),
    (2, dict(compressors="blosc", dimension_separator="/")),
])
def test_write_then_zarr_python_reads(s3, request, fmt, kw):
    key = unique(request)
    data = make_data(seed=21)
    a = zgpu.create(s3.url(key), shape=data.shape, dtype=data.dtype, chunks=(12, 18, 25), zarr_format=fmt,
                    fill_value=5, attributes={"owner": "zgpu"}, **kw)
    a[...] = data
    a[10:30, 20:36, 0:3] = 77      # a region across chunk (and shard) borders
    data[10:30, 20:36, 0:3] = 77
    a.close()
    z = zarr.open_array(store=s3.store(key, read_only=True), mode="r")
    assert z.attrs["owner"] == "zgpu"
    assert z.metadata.zarr_format == fmt
    np.testing.assert_array_equal(z[...], data)
    check_regions(zgpu.open(s3.url(key)), data)


def test_write_regions_into_zarr_python_array(s3, request):
    """zgpu r+ writes into an array zarr-python made (partial chunks read-modify-written)."""
    key = unique(request)
    _, data = write_case(s3.store(key), "v3-sharded-holes", grid="coarse")
    a = zgpu.open_array(s3.url(key), mode="r+")
    a[3:9, 30:34, 14:40] = 4321
    data[3:9, 30:34, 14:40] = 4321
    a[0:16, 0:16, 0:16] = 0        # an inner chunk back to the fill value
    data[0:16, 0:16, 0:16] = 0
    a.close()
    np.testing.assert_array_equal(s3.zarr_read(key), data)


def test_resize(s3, request):
    key = unique(request)
    data = make_data((64, 48), seed=22)
    a = zgpu.create(s3.url(key), shape=data.shape, dtype=data.dtype, chunks=(16, 16), fill_value=9)
    a[...] = data
    assert len([k for k in s3.keys(key + "/") if "/c/" in k]) == 12
    a.resize(32, 48)                # chunks wholly outside go
    chunks = sorted(k[len(key) + 1:] for k in s3.keys(key + "/") if "/c/" in k)
    assert chunks == sorted("c/%d/%d" % (i, j) for i in range(2) for j in range(3)), chunks
    np.testing.assert_array_equal(s3.zarr_read(key), data[:32])
    a.resize(40, 60)
    exp = np.full((40, 60), 9, data.dtype)
    exp[:32, :48] = data[:32]
    np.testing.assert_array_equal(a[...], exp)
    a[35:40, 50:60] = 1
    exp[35:40, 50:60] = 1
    a.close()
    np.testing.assert_array_equal(s3.zarr_read(key), exp)
    np.testing.assert_array_equal(zgpu.open(s3.url(key))[...], exp)


def test_multipart_upload(s3, request, zcfg):
    """An object over the threshold goes in parts (5 MiB each: 5 + 5 + the rest)."""
    zcfg(multipart_threshold=5 << 20, multipart_part_size=5 << 20)
    key = unique(request)
    rng = np.random.default_rng(23)
    data = rng.integers(0, 2 ** 16, size=(3000, 2000), dtype="uint16")    # 12,000,000 bytes in one chunk
    a = zgpu.create(s3.url(key), shape=data.shape, dtype=data.dtype, chunks=data.shape, compressors=None)
    a[...] = data
    a.close()
    objs = s3.keys(key + "/")
    assert objs[key + "/c/0/0"] == data.nbytes, objs
    head = s3.client.head_object(Bucket=BUCKET, Key=key + "/c/0/0")
    assert head["ContentLength"] == data.nbytes
    assert head["ETag"].strip('"').endswith("-3"), head["ETag"]    # an S3 multipart ETag: md5-of-parts "-3"
    np.testing.assert_array_equal(s3.zarr_read(key), data)
    np.testing.assert_array_equal(zgpu.open(s3.url(key))[...], data)
    # a sharded array whose one shard is that large, too
    key2 = unique(request)
    b = zgpu.create(s3.url(key2), shape=data.shape, dtype=data.dtype, chunks=(500, 500), shards=data.shape,
                    compressors=None)
    b[...] = data
    b.close()
    size = s3.keys(key2 + "/")[key2 + "/c/0/0"]
    assert size > 11 << 20
    np.testing.assert_array_equal(s3.zarr_read(key2), data)
    np.testing.assert_array_equal(zgpu.open(s3.url(key2))[1000:2100, 333:1777], data[1000:2100, 333:1777])


def test_below_threshold_is_one_put(s3, request, zcfg):
    zcfg(multipart_threshold=5 << 20, multipart_part_size=5 << 20)
    key = unique(request)
    data = make_data((1000, 1000), seed=24)    # 2 MB
    a = zgpu.create(s3.url(key), shape=data.shape, dtype=data.dtype, chunks=data.shape, compressors=None)
    a[...] = data
    a.close()
    head = s3.client.head_object(Bucket=BUCKET, Key=key + "/c/0/0")
    assert head["ContentLength"] == data.nbytes
    assert "-" not in head["ETag"].strip('"')
    np.testing.assert_array_equal(s3.zarr_read(key), data)


# ---- groups -------------------------------------------------------------------------------------------------------
def test_group_with_members(s3, request):
    key = unique(request)
    g = zgpu.create_group(s3.url(key), attributes={"title": "on s3"})
    data = make_data((30, 20), seed=25)
    a = g.create_array("arr", shape=data.shape, dtype=data.dtype, chunks=(8, 8))
    a[...] = data
    a.close()
    sub = g.create_group("sub")
    sub.create_array("inner", shape=(6,), dtype="int32", fill_value=-2).close()
    g.create_array("zz", shape=(3,), dtype="float32").close()

    zg = zgpu.open_group(s3.url(key))
    assert zg.attrs["title"] == "on s3"
    assert zg.keys() == ["arr", "sub", "zz"]
    assert zg.array_keys() == ["arr", "zz"]
    assert zg.group_keys() == ["sub"]
    assert len(zg) == 3
    assert zgpu.open_group(s3.url(key + "/sub")).keys() == ["inner"]
    np.testing.assert_array_equal(zg["arr"][...], data)
    np.testing.assert_array_equal(zg["sub/inner"][...], np.full(6, -2, "int32"))
    assert isinstance(zgpu.open(s3.url(key)), zgpu.Group)

    zgrp = zarr.open_group(store=s3.store(key, read_only=True), mode="r")
    assert sorted(zgrp.array_keys()) == ["arr", "zz"]
    assert sorted(zgrp.group_keys()) == ["sub"]
    assert zgrp.attrs["title"] == "on s3"
    np.testing.assert_array_equal(zgrp["arr"][...], data)


def test_group_written_by_zarr_python(s3, request):
    key = unique(request)
    zg = zarr.open_group(store=s3.store(key), mode="w")
    for i in range(5):
        zg.create_array("a%d" % i, shape=(4,), dtype="uint8", fill_value=i)
    zg.create_group("g")
    zg2 = zarr.open_group(store=s3.store(key + "/v2"), mode="w", zarr_format=2)
    zg2.create_array("x", shape=(3,), dtype="int16", fill_value=1)
    g = zgpu.open_group(s3.url(key))
    assert g.keys() == ["a0", "a1", "a2", "a3", "a4", "g", "v2"]
    np.testing.assert_array_equal(g["a3"][...], np.full(4, 3, "uint8"))
    assert zgpu.open_group(s3.url(key + "/v2")).zarr_format == 2
    np.testing.assert_array_equal(g["v2"]["x"][...], np.ones(3, "int16"))


def test_group_listing_many_members(s3, request):
    """Members with chunks each: the listing (delimiter "/") names the members, not their chunks."""
    key = unique(request)
    g = zgpu.create_group(s3.url(key))
    names = ["m%02d" % i for i in range(12)]
    for n in names:
        a = g.create_array(n, shape=(8,), dtype="uint8", chunks=(2,))
        a[...] = 1
        a.close()
    assert zgpu.open_group(s3.url(key)).keys() == names


# ---- overwrite and staged creation -------------------------------------------------------------------------------
def test_overwrite_replaces_array(s3, request):
    key = unique(request)
    old = make_data((64, 64), seed=26)
    a = zgpu.create(s3.url(key), shape=old.shape, dtype=old.dtype, chunks=(16, 16))
    a[...] = old
    a.close()
    assert len([k for k in s3.keys(key + "/") if "/c/" in k]) == 16
    new = make_data((20, 20), "int32", seed=27)
    b = zgpu.open(s3.url(key), mode="w", shape=new.shape, dtype=new.dtype, chunks=(16, 16))
    b[...] = new
    b.close()
    keys = sorted(k[len(key) + 1:] for k in s3.keys(key + "/"))
    assert keys == ["c/0/0", "c/0/1", "c/1/0", "c/1/1", "zarr.json"], keys   # old chunks gone
    np.testing.assert_array_equal(s3.zarr_read(key), new)
    np.testing.assert_array_equal(zgpu.open(s3.url(key))[...], new)


def test_overwrite_v3_with_v2(s3, request):
    key = unique(request)
    a = zgpu.create(s3.url(key), shape=(10,), dtype="uint8", chunks=(5,))
    a[...] = 1
    a.close()
    b = zgpu.create(s3.url(key), shape=(10,), dtype="uint8", chunks=(5,), zarr_format=2, overwrite=True)
    b[...] = 2
    b.close()
    keys = sorted(k[len(key) + 1:] for k in s3.keys(key + "/"))
    assert "zarr.json" not in keys and ".zarray" in keys, keys
    np.testing.assert_array_equal(s3.zarr_read(key), np.full(10, 2, "uint8"))


def test_create_without_overwrite_refuses_existing(s3, request):
    key = unique(request)
    zgpu.create(s3.url(key), shape=(4,), dtype="uint8").close()
    with pytest.raises(zgpu.ExistsError):
        zgpu.create(s3.url(key), shape=(4,), dtype="uint8")
    with pytest.raises(zgpu.ExistsError):
        zgpu.open(s3.url(key), mode="w-", shape=(4,), dtype="uint8")


def test_staged_metadata_appears_at_close(s3, request):
    key = unique(request)
    data = make_data((32, 32), seed=28)
    a = zgpu.open(s3.url(key), mode="w", shape=data.shape, dtype=data.dtype, chunks=(16, 16))
    a[...] = data
    assert not s3.exists(key + "/zarr.json")
    with pytest.raises(zgpu.NotFoundError):
        zgpu.open_array(s3.url(key))
    np.testing.assert_array_equal(a[...], data)   # the handle itself reads what it wrote
    a.close()
    assert s3.exists(key + "/zarr.json")
    np.testing.assert_array_equal(s3.zarr_read(key), data)


def test_staged_with_block(s3, request):
    key = unique(request)
    with zgpu.open(s3.url(key), mode="w", shape=(6, 6), dtype="float64", chunks=(3, 3)) as a:
        a[...] = 2.5
        assert not s3.exists(key + "/zarr.json")
    assert s3.exists(key + "/zarr.json")
    np.testing.assert_array_equal(s3.zarr_read(key), np.full((6, 6), 2.5))


def test_mode_w_makes_nothing_locally(s3, request, tmp_path, monkeypatch):
    """An s3:// path is never taken for a local directory named "s3:"."""
    monkeypatch.chdir(tmp_path)
    key = unique(request)
    a = zgpu.open("s3://%s/%s" % (BUCKET, key), mode="w", shape=(8, 8), dtype="uint16", chunks=(4, 4))
    a[...] = 3
    a.close()
    g = zgpu.open_group("s3://%s/%s" % (BUCKET, unique(request)), mode="w")
    g.close()
    assert os.listdir(tmp_path) == []
    assert s3.exists(key + "/zarr.json")
    np.testing.assert_array_equal(s3.zarr_read(key), np.full((8, 8), 3, "uint16"))


def test_file_url_is_local(tmp_path):
    data = make_data((10, 10), seed=29)
    path = str(tmp_path / "f.zarr")
    zarr.create_array(path, shape=data.shape, chunks=(4, 4), dtype=data.dtype)[...] = data
    np.testing.assert_array_equal(zgpu.open("file://" + path)[...], data)


# ---- credentials and anonymous access ----------------------------------------------------------------------------
def test_anonymous_reads(s3, request, zcfg):
    """Unsigned requests (s3_anonymous): a public bucket reads (listing too); a private one is refused."""
    import json
    public = "zgpu-remote-public"
    s3.client.create_bucket(Bucket=public)
    s3.client.put_bucket_policy(Bucket=public, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:ListBucket"],
         "Resource": ["arn:aws:s3:::%s" % public, "arn:aws:s3:::%s/*" % public]}]}))
    key = unique(request)
    _, data = write_case(s3.store(key, bucket=public), "v3-zstd", grid="coarse")
    g = zarr.open_group(store=s3.store("grp", bucket=public), mode="w")
    g.create_array("m", shape=(2,), dtype="uint8", fill_value=4)
    key_private = unique(request)
    write_case(s3.store(key_private), "v3-zstd", grid="coarse")

    zcfg(s3_anonymous=True)
    np.testing.assert_array_equal(zgpu.open("s3://%s/%s" % (public, key))[...], data)
    grp = zgpu.open_group("s3://%s/grp" % public)
    assert grp.keys() == ["m"]
    np.testing.assert_array_equal(grp["m"][...], np.full(2, 4, "uint8"))
    with pytest.raises(zgpu.ZgpuError):
        zgpu.open_array(s3.url(key_private))[...]


def test_endpoint_from_environment(s3, request, zcfg, monkeypatch):
    """No s3_endpoint setting: AWS_ENDPOINT_URL is used."""
    key = unique(request)
    _, data = write_case(s3.store(key), "v2-zstd", grid="coarse")
    zcfg(s3_endpoint=None)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    zgpu.config.set()   # a fresh context, which reads the environment
    np.testing.assert_array_equal(zgpu.open(s3.url(key))[...], data)


def test_missing_bucket_write(s3, tmp_path, monkeypatch):
    """A write into a bucket that does not exist (PUT answered 404 NoSuchBucket) fails; it is not lost silently."""
    monkeypatch.chdir(tmp_path)
    url = "s3://no-such-bucket-zgpu/x.zarr"
    with pytest.raises(zgpu.ZgpuError) as ei:
        a = zgpu.create(url, shape=(8, 8), dtype="uint8", chunks=(4, 4))
        a[...] = 1
        a.close()
    assert "no-such-bucket-zgpu" in str(ei.value), str(ei.value)
    assert os.listdir(tmp_path) == []


def test_virtual_host_addressing(s3, request, zcfg):
    """Virtual-host style (http://bucket.host/key, AWS's default): writes, reads and listing reach the bucket
    through its host name (libcurl resolves *.localhost to the loopback address)."""
    port = s3.endpoint.rsplit(":", 1)[1]
    zcfg(s3_endpoint="http://localhost:%s" % port, s3_addressing="virtual")
    key = unique(request, suffix="")
    data = make_data((20, 30), "int32", seed=21)
    a = zgpu.create(s3.url(key + "/a"), shape=data.shape, dtype=data.dtype, chunks=(8, 8))
    a[...] = data
    a.close()
    assert s3.exists(key + "/a/zarr.json") and s3.exists(key + "/a/c/2/3")
    np.testing.assert_array_equal(zgpu.open(s3.url(key + "/a"))[...], data)
    zgpu.create_group(s3.url(key + "/g"))
    zgpu.create(s3.url(key + "/g/x"), shape=(2,), dtype="int8")
    assert list(zgpu.open_group(s3.url(key + "/g"))) == ["x"]


# ---- a server that lies in its listing -----------------------------------------------------------------------------
def test_listing_that_never_ends(httpsrv, zcfg):
    """Truncated listing pages that repeat one continuation token: an error that says so, never an endless loop
    (the test server answers every ListObjectsV2 request with the same page)."""
    import json
    root = os.path.join(httpsrv.root, "lying-bucket", "g")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    page = ('<?xml version="1.0" encoding="UTF-8"?>'
            '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>lying-bucket</Name>'
            '<Prefix>g/</Prefix><KeyCount>1</KeyCount><MaxKeys>1</MaxKeys><Delimiter>/</Delimiter>'
            '<IsTruncated>true</IsTruncated><CommonPrefixes><Prefix>g/m/</Prefix></CommonPrefixes>'
            '<NextContinuationToken>same</NextContinuationToken></ListBucketResult>')
    httpsrv.faults({"path_re": "list-type=2", "method": "GET", "kind": "status", "code": 200, "body": page,
                    "headers": {"Content-Type": "application/xml"}})
    zcfg(s3_endpoint=httpsrv.url, s3_anonymous=True, s3_addressing="path")
    httpsrv.reset_stats()
    grp = zgpu.open_group("s3://lying-bucket/g")
    with pytest.raises(zgpu.ZgpuError, match="repeats the continuation token"):
        grp.keys()
    assert httpsrv.stats()["faults"] == 2  # the first page, and the second that repeated its token


def test_shard_replaced_in_the_bucket(s3, request):
    """A shard rewritten by another writer after zgpu cached its index: the inner-chunk request names the cached
    version (If-Match; the answer's ETag is checked too), and the read runs again from a fresh index."""
    key = unique(request)
    store = s3.store(key)
    data = make_data((40, 36, 50), seed=1)
    z = zarr.create_array(store, shape=data.shape, chunks=(12, 18, 25), shards=(24, 36, 50), dtype=data.dtype,
                          compressors=zarr.codecs.ZstdCodec(level=1))
    z[...] = data
    a = zgpu.open(s3.url(key))
    box = (slice(1, 10), slice(2, 20), slice(3, 30))
    np.testing.assert_array_equal(a[box], data[box])
    new = make_data((40, 36, 50), seed=2)
    zarr.open_array(s3.store(key), mode="r+")[...] = new
    np.testing.assert_array_equal(a[box], new[box])
    np.testing.assert_array_equal(a[...], new)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("fmt", [2, 3])
def test_array_added_to_consolidated_group(s3, request, fmt):
    """zgpu keeps a bucket's consolidated metadata current: an array it adds to a group that zarr-python
    consolidated is listed by zarr-python from the consolidated copy alone."""
    key = unique(request)
    g = zarr.open_group(s3.store(key), mode="w", zarr_format=fmt)
    g.create_array("old", shape=(3,), dtype="u1")
    zarr.consolidate_metadata(s3.store(key))
    a = zgpu.open_group(s3.url(key), mode="r+").create_array("new", shape=(8, 8), dtype="u2", chunks=(4, 4))
    a[...] = np.arange(64, dtype="u2").reshape(8, 8)
    z = zarr.open_group(s3.store(key, read_only=True), mode="r", use_consolidated=True)
    assert sorted(n for n, _ in z.members()) == ["new", "old"]
    np.testing.assert_array_equal(z["new"][...], np.arange(64, dtype="u2").reshape(8, 8))
