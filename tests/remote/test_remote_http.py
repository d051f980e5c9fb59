"""zgpu over HTTP (tests/remote/http_server.py): arrays written by zarr-python into the server's root, read by URL
and compared with zarr-python's local read; sharded partial reads fetch only the index and the inner chunks
needed; faults (5xx, broken bodies, bad ranges) are retried or reported, never turned into wrong data; groups
over HTTP; writes by PUT; schemes zgpu does not support."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest
import zarr

import zgpu
from conftest import CASES, FAST_RETRY, SHARDS, REGIONS, check_regions, make_data, unique, write_case


def _local(http, name):
    return os.path.join(http.root, name)


# ---- reads of every set-up -------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_read_matches_zarr_python(httpsrv, request, case):
    name = unique(request)
    write_case(_local(httpsrv, name), case)
    ref = zarr.open_array(_local(httpsrv, name), mode="r")[...]
    a = zgpu.open(httpsrv.url + "/" + name)
    assert isinstance(a, zgpu.Array)
    check_regions(a, ref)
    assert a.zarr_format == (2 if case.startswith("v2") else 3)
    # open_array and the read() method too, with a region across every chunk border of axis 0
    b = zgpu.open_array(httpsrv.url + "/" + name, mode="r")
    np.testing.assert_array_equal(b.read((slice(8, 40), slice(None), slice(0, 17))), ref[8:40, :, 0:17])


def test_blosc_crops_decoded_in_pieces(httpsrv, request):
    """A crop of fewer blosc chunks than threads is decoded in pieces by several threads once its chunks have
    arrived (as a local read's): every crop equals zarr-python's, a piece of an absent chunk reads as the fill
    value, and each fetched chunk counts once in the stored bytes however many pieces decoded it."""
    from zarr.codecs import BloscCodec
    name = unique(request)
    rng = np.random.default_rng(5)
    data = (np.indices((64, 128, 256)).sum(axis=0) * 3 + rng.integers(0, 40, (64, 128, 256))).astype("uint16")
    z = zarr.create_array(_local(httpsrv, name), shape=data.shape, chunks=(32, 128, 256), dtype="uint16",
                          fill_value=9, compressors=BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2))
    z[0:32] = data[0:32]  # the chunk of planes 32-63 is never written: absent
    ref = np.full(data.shape, 9, "uint16")
    ref[0:32] = data[0:32]
    before = zgpu.config.num_threads
    zgpu.config.set(num_threads=8)  # 2 MiB chunks, crops of 1-2 chunks: pieces of at least 512 KiB on 8 threads
    try:
        a = zgpu.open(httpsrv.url + "/" + name)
        chunk_bytes = os.path.getsize(os.path.join(_local(httpsrv, name), "c", "0", "0", "0"))
        for box in [(slice(2, 30), slice(10, 120), slice(5, 250)),   # one chunk, four pieces
                    (slice(0, 32), slice(None), slice(None)),         # one chunk whole (one piece)
                    (slice(20, 50), slice(0, 64), slice(100, 200)),   # one present, one absent
                    (slice(40, 60), slice(1, 2), slice(None))]:       # absent only
            np.testing.assert_array_equal(a[box], ref[box])
        a[2:30, 10:120, 5:250]
        assert a.last_read_stats["stored_bytes"] == chunk_bytes, (a.last_read_stats, chunk_bytes)
    finally:
        zgpu.config.set(num_threads=before)


def test_blosc_crop_fetches_part_of_its_chunk(httpsrv, request, zcfg):
    """A crop needing a small part of a large blosc chunk fetches its head (header and block starts), then only
    the blocks between the first and the last it needs, If-Match on the head's ETag; without a strong ETag the
    chunk comes whole, a chunk replaced between the two requests (412) is read again, and a server ignoring Range
    is sliced. Every answer equals zarr-python's."""
    from zarr.codecs import BloscCodec
    name = unique(request)
    rng = np.random.default_rng(9)
    data = (np.indices((64, 256, 256)).sum(axis=0) + rng.integers(0, 300, (64, 256, 256))).astype("uint16")
    z = zarr.create_array(_local(httpsrv, name), shape=data.shape, chunks=data.shape, dtype="uint16",
                          compressors=BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2))
    z[...] = data
    path = os.path.join(_local(httpsrv, name), "c", "0", "0", "0")
    size = os.path.getsize(path)
    url = httpsrv.url + "/" + name
    box = (slice(10, 30), slice(20, 100), slice(0, 256))  # planes 10-29 of 64: about a third of the chunk

    def read(expect_gets, expect_whole, timeout_ms):
        # a context of its own for each read: a client that has seen no body yet takes the link for an object
        # store's (100 MB/s), where a part fetch always pays; one that measured this loopback's rate on a loaded
        # 2-core machine may find a first byte's wait outlasts what the part saves, and fetch the chunk whole
        zcfg(request_timeout_ms=timeout_ms)
        a = zgpu.open(url)
        httpsrv.reset_stats()
        np.testing.assert_array_equal(a[box], data[box])
        gets = [e for e in httpsrv.log() if e[0] == "GET" and e[1].endswith("/c/0/0/0")]
        assert len(gets) == expect_gets, gets
        stored = a.last_read_stats["stored_bytes"]
        if expect_whole:
            assert stored == size, (stored, size)
        else:
            assert 0.2 * size < stored < 0.5 * size, (stored, size)  # its head and a third of its blocks
            assert all(e[2] for e in gets) and gets[0][2].startswith("bytes=0-"), gets
        return gets

    read(2, False, 59998)
    httpsrv.faults({"path_re": "/c/0/0/0$", "kind": "no_etag"})   # nothing to hold a second request to
    gets = read(2, True, 59997)
    assert gets[1][2] is None, gets
    httpsrv.faults({"path_re": "/c/0/0/0$", "kind": "slow", "delay_s": 0, "times": 1},  # the head
                   {"path_re": "/c/0/0/0$", "kind": "status", "code": 412, "times": 1})  # the span: replaced
    read(4, False, 59996)
    httpsrv.faults({"path_re": "/c/0/0/0$", "kind": "ignore_range"})  # 200 and the whole chunk, every time
    httpsrv.reset_stats()
    np.testing.assert_array_equal(zgpu.open(url)[box], data[box])
    # broken answers to the head or the span: retried, never a wrong crop
    for kind in ("short", "reset", "bad_range"):
        httpsrv.faults({"path_re": "/c/0/0/0$", "kind": kind, "times": 2})
        np.testing.assert_array_equal(zgpu.open(url)[box], data[box])
    # a head claiming 1000 bytes more than the chunk holds: right data, or (where the span it names runs to that
    # claimed end: blosc's threads may store the last block needed last) a clean error naming the chunk
    httpsrv.faults({"path_re": "/c/0/0/0$", "kind": "wrong_total", "times": 1})
    try:
        got = zgpu.open(url)[box]
    except zgpu.CorruptDataError as e:
        assert "c/0/0/0" in str(e) and "past its end" in str(e), str(e)
    else:
        np.testing.assert_array_equal(got, data[box])
    # a crop needing most of the chunk fetches it whole, in one request
    httpsrv.clear_faults()
    a = zgpu.open(url)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[2:60, :, 3:200], data[2:60, :, 3:200])
    gets = [e for e in httpsrv.log() if e[0] == "GET" and e[1].endswith("/c/0/0/0")]
    assert len(gets) == 1 and gets[0][2] is None, gets


def test_blosc_crop_on_a_slow_link_fetches_whole(httpsrv, request, zcfg):
    """Where a first byte takes longer than receiving the bytes a head-then-span fetch would save (an object
    store far away: here 0.3 s a request), a crop's blosc chunk comes whole in one request."""
    from zarr.codecs import BloscCodec
    name = unique(request)
    data = make_data((64, 256, 256), seed=4)
    z = zarr.create_array(_local(httpsrv, name), shape=data.shape, chunks=data.shape, dtype="uint16",
                          compressors=BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2))
    z[...] = data
    zcfg(request_timeout_ms=59999)  # a context of its own: its client has seen only this slow server
    httpsrv.faults({"path_re": "/" + name + "/", "kind": "slow", "delay_s": 0.3})
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[10:30, 20:100, :], data[10:30, 20:100, :])
    gets = [e for e in httpsrv.log() if e[0] == "GET" and e[1].endswith("/c/0/0/0")]
    assert len(gets) == 1 and gets[0][2] is None, gets


def test_missing_chunk_is_fill_value(httpsrv, request):
    """A chunk the server answers 404 for reads as the fill value (a deleted one, beside never-written ones)."""
    name = unique(request)
    _, data = write_case(_local(httpsrv, name), "v3-zstd")
    os.unlink(os.path.join(_local(httpsrv, name), "c", "1", "1", "1"))
    ref = zarr.open_array(_local(httpsrv, name), mode="r")[...]
    assert (ref[16:32, 16:32, 16:32] == 0).all()
    check_regions(zgpu.open(httpsrv.url + "/" + name), ref)


def test_url_forms(httpsrv, request):
    """A trailing slash and a nested path (directories in the URL) name the same array."""
    name = unique(request)
    sub = os.path.join(_local(httpsrv, "nested"), "deeper", name)
    os.makedirs(os.path.dirname(sub), exist_ok=True)
    _, data = write_case(sub, "v3-zstd")
    for url in ("%s/nested/deeper/%s" % (httpsrv.url, name), "%s/nested/deeper/%s/" % (httpsrv.url, name)):
        np.testing.assert_array_equal(zgpu.open(url)[...], data)


@pytest.mark.parametrize("case", ["v3-zstd", "v2-zstd"])
def test_open_reads_metadata_once(httpsrv, request, case):
    """zgpu.open of an array or a group reads the node's metadata document once (zgpu_context_open_node): one
    request for a v3 node, where looking first (node_kind) then opening took two."""
    name = unique(request)
    _, data = write_case(_local(httpsrv, name), case)
    gname = unique(request, suffix=".group")
    g = zarr.open_group(_local(httpsrv, gname), mode="w", zarr_format=2 if case.startswith("v2") else 3)
    g.attrs["k"] = 1
    docs = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")
    for node, kind in ((name, zgpu.Array), (gname, zgpu.Group)):
        httpsrv.reset_stats()
        z = zgpu.open(httpsrv.url + "/" + node)
        assert isinstance(z, kind)
        got = [(m, p.rsplit("/", 1)[-1]) for m, p, *_ in httpsrv.log() if p.rsplit("/", 1)[-1] in docs]
        if case.startswith("v3"):
            assert got == [("GET", "zarr.json")], got
        else:  # zarr.json missing, then .zarray (missing for a group, then .zgroup) and the attributes, each once
            docs_v2 = [".zarray"] if kind is zgpu.Array else [".zarray", ".zgroup"]
            assert got == [("GET", d) for d in ["zarr.json"] + docs_v2 + [".zattrs"]], got
        if kind is zgpu.Array:
            np.testing.assert_array_equal(z[...], data)
        else:
            assert z.attrs["k"] == 1
    with pytest.raises(TypeError, match="existing array"):
        zgpu.open(httpsrv.url + "/" + name, shape=(3,))


def test_not_found(httpsrv):
    with pytest.raises(zgpu.NotFoundError) as ei:
        zgpu.open(httpsrv.url + "/no-such-array.zarr")
    assert "no-such-array.zarr" in str(ei.value)
    with pytest.raises(zgpu.NotFoundError):
        zgpu.open_array(httpsrv.url + "/no-such-array.zarr")


# ---- sharded partial reads: only the index and the inner chunks needed -------------------------------------------
def _shard_index(path, n_inner):
    """(offset, nbytes) of each inner chunk, from a shard file's index at its end (crc32c after it)."""
    with open(path, "rb") as f:
        raw = f.read()
    idx = raw[-(16 * n_inner + 4):-4]
    return [struct.unpack_from("<QQ", idx, 16 * i) for i in range(n_inner)], len(raw)


def test_zero_length_inner_chunk_fails_cleanly(httpsrv, request, zcfg):
    """A shard whose index gives one inner chunk 0 bytes (hostile or damaged): a read of part of the shard that
    needs it fails with an error, on the host path that decodes chunks as they arrive, never hangs."""
    import google_crc32c
    name = unique(request)
    local = _local(httpsrv, name)
    data = make_data((64, 64, 64), seed=5)
    z = zarr.create_array(local, shape=data.shape, chunks=(16, 16, 16), shards=(64, 64, 64), dtype=data.dtype,
                          compressors=None)
    z[...] = data
    path = os.path.join(local, "c", "0", "0", "0")
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    n_inner = 64
    at = len(raw) - (16 * n_inner + 4)
    off, _ = struct.unpack_from("<QQ", raw, at)
    struct.pack_into("<QQ", raw, at, off, 0)  # inner chunk (0, 0, 0): 0 bytes
    raw[-4:] = struct.pack("<I", google_crc32c.value(bytes(raw[at:-4])))
    with open(path, "wb") as f:
        f.write(raw)
    zcfg(range_merge_gap=-1)  # the empty range alone, not inside a merged request
    a = zgpu.open(httpsrv.url + "/" + name)
    with pytest.raises(zgpu.ZgpuError):
        a[0:20, 0:20, 0:10]  # inner chunks (0, 0, 0) and (1, 1, 0) among others, not the whole shard


def test_uncompressed_crop_fetches_its_span(httpsrv, request):
    """A crop of a chunk stored uncompressed (its bytes are the values) fetches, in one request, only the bytes from
    the first to the last the crop needs; a server ignoring Range is sliced, a short body retried. A chunk of another
    size (truncated, or a server claiming more) fails the crop, naming the chunk, as its whole read does: never a
    crop of a short chunk."""
    name = unique(request)
    rng = np.random.default_rng(4)
    data = rng.integers(0, 60000, (64, 128, 128), dtype="uint16")
    z = zarr.create_array(_local(httpsrv, name), shape=data.shape, chunks=data.shape, dtype="uint16",
                          compressors=None)
    z[...] = data
    path = os.path.join(_local(httpsrv, name), "c", "0", "0", "0")
    assert os.path.getsize(path) == data.nbytes
    url = httpsrv.url + "/" + name
    box = (slice(10, 13), slice(20, 100), slice(5, 120))
    lo = ((10 * 128 + 20) * 128 + 5) * 2
    hi = ((12 * 128 + 99) * 128 + 119 + 1) * 2
    a = zgpu.open(url)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[box], data[box])
    gets = [e for e in httpsrv.log() if e[0] == "GET" and e[1].endswith("/c/0/0/0")]
    assert len(gets) == 1 and gets[0][2] == "bytes=%d-%d" % (lo, hi - 1), gets
    assert a.last_read_stats["stored_bytes"] == hi - lo, a.last_read_stats
    np.testing.assert_array_equal(a[0:1], data[0:1])  # the first plane: a span from byte 0
    for kind in ("ignore_range", "short", "reset"):
        httpsrv.faults({"path_re": "/c/0/0/0$", "kind": kind, "times": 2})
        np.testing.assert_array_equal(a[box], data[box])
    httpsrv.clear_faults()
    httpsrv.faults({"path_re": "/c/0/0/0$", "kind": "wrong_total", "times": 1})
    with pytest.raises(zgpu.CorruptDataError, match="c/0/0/0.*bytes"):
        a[box]
    httpsrv.clear_faults()
    os.truncate(path, data.nbytes - 2)
    for sel in (box, (slice(63, 64),)):
        with pytest.raises(zgpu.CorruptDataError, match="c/0/0/0"):
            a[sel]


def test_sharded_partial_read_fetches_little(httpsrv, request, zcfg):
    name = unique(request)
    local = _local(httpsrv, name)
    data = make_data((64, 64, 64), seed=3)
    z = zarr.create_array(local, shape=data.shape, chunks=(16, 16, 16), shards=(64, 64, 64), dtype=data.dtype,
                          compressors=None)
    z[...] = data
    entries, shard_size = _shard_index(os.path.join(local, "c", "0", "0", "0"), 64)
    index_bytes = 64 * 16 + 4
    assert shard_size == 64 * 8192 + index_bytes

    zcfg(range_merge_gap=-1)  # every inner chunk its own request
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[2:10, 3:12, 1:14], data[2:10, 3:12, 1:14])  # inside inner chunk (0, 0, 0)
    st = httpsrv.stats()
    log = httpsrv.log()
    gets = [e for e in log if e[0] == "GET"]
    assert st["GET"] + st["HEAD"] <= 3, log
    assert all(e[1].endswith("/c/0/0/0") for e in log), log
    got_bytes = sum(e[4] for e in gets)
    assert entries[0][1] <= got_bytes <= entries[0][1] + index_bytes, log
    assert all(e[2] for e in gets), "every GET of the shard asks for a range: %r" % (log,)

    # Two inner chunks, neither next to the other in the shard: two chunk requests and the index at most.
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[20:21, 0:2, 50:60], data[20:21, 0:2, 50:60])       # inner (1, 0, 3)
    np.testing.assert_array_equal(a[40:42, 40:42, 0:64], data[40:42, 40:42, 0:64])     # inner (2, 2, 0..3)
    gets = [e for e in httpsrv.log() if e[0] == "GET"]
    got_bytes = sum(e[4] for e in gets)
    assert got_bytes <= 5 * 8192 + 2 * index_bytes, httpsrv.log()

    # With the default merge gap (64 KiB) inner chunks close together in the shard come in one request: the four
    # of (0, 0, 0..3) lie in zarr-python's Morton order at chunks 0, 4, 32, 36 -> two requests, not four.
    zcfg(range_merge_gap=None)
    b = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(b[0:16, 0:16, :], data[0:16, 0:16, :])               # inner (0, 0, 0..3)
    st = httpsrv.stats()
    assert st["GET"] + st["HEAD"] <= 3, httpsrv.log()          # the index and two merged ranges
    got_bytes = sum(e[4] for e in httpsrv.log() if e[0] == "GET")
    assert 4 * 8192 <= got_bytes <= 4 * 8192 + index_bytes + (64 << 10), httpsrv.log()


def test_sharded_inner_chunks_decode_as_they_come(httpsrv, request, zcfg):
    """A read of part of two shards decodes each inner chunk as its range arrives (host/host_read.c, task_fetched):
    with one shard's ranges slow the values are right; with one shard's ranges failing (its index cached from a
    read before) the read fails naming that shard, and nothing waits forever for the chunks that never came."""
    zcfg(range_merge_gap=-1, **FAST_RETRY)
    name = unique(request)
    local = _local(httpsrv, name)
    data = make_data((64, 64, 128), seed=11)
    z = zarr.create_array(local, shape=data.shape, chunks=(16, 16, 16), shards=(64, 64, 64), dtype=data.dtype,
                          compressors=zarr.codecs.ZstdCodec(level=1))
    z[...] = data
    a = zgpu.open(httpsrv.url + "/" + name)
    box = (slice(3, 40), slice(10, 50), slice(20, 100))  # 3 x 3 inner chunks of each of shards (0, 0, 0), (0, 0, 1)
    np.testing.assert_array_equal(a[box], data[box])  # (the shards' indexes now cached)
    httpsrv.faults({"path_re": "/%s/c/0/0/0$" % name, "kind": "slow", "delay_s": 0.05})
    np.testing.assert_array_equal(a[box], data[box])
    httpsrv.clear_faults()
    httpsrv.faults({"path_re": "/%s/c/0/0/1$" % name, "kind": "status", "code": 503})
    with pytest.raises(zgpu.ZgpuError) as ei:
        a[box]
    assert "503" in str(ei.value) and "c/0/0/1" in str(ei.value), str(ei.value)
    httpsrv.clear_faults()
    np.testing.assert_array_equal(a[box], data[box])


def test_whole_shards_one_get_each(httpsrv, request):
    """A read needing every inner chunk of a shard fetches the shard whole, in one request without a range (not
    its index and then its chunks); a read needing part of a shard still fetches only the index and that part."""
    name = unique(request)
    _, data = write_case(_local(httpsrv, name), "v3-sharded-holes")
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[...], data)
    gets = [e for e in httpsrv.log() if e[0] == "GET" and "/c/" in e[1]]
    grid = [-(-n // s) for n, s in zip(data.shape, SHARDS)]
    assert len(gets) == grid[0] * grid[1] * grid[2], httpsrv.log()  # one each, the missing shard's a 404
    assert all(not e[2] for e in gets), "whole shards are fetched without a Range: %r" % (gets,)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[0:32, 0:32, 0:16], data[0:32, 0:32, 0:16])  # half of shard (0, 0, 0)
    gets = [e for e in httpsrv.log() if e[0] == "GET" and "/c/" in e[1]]
    assert gets and all(e[2] for e in gets), httpsrv.log()


def test_whole_read_of_unsharded_array_one_get_per_chunk(httpsrv, request):
    name = unique(request)
    _, data = write_case(_local(httpsrv, name), "v3-zstd")
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[...], data)
    st = httpsrv.stats()
    assert st["GET"] == 3 * 3 * 4, httpsrv.log()   # 36 chunks, each fetched once
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[0:16, 0:16, 0:16], data[0:16, 0:16, 0:16])
    assert httpsrv.stats()["GET"] == 1, httpsrv.log()


# ---- the shard index cache ----------------------------------------------------------------------------------------
def _index_gets(httpsrv):
    """GETs of shard indexes (suffix ranges: the index ends the shard) and of anything else under c/, with codes."""
    gets = [e for e in httpsrv.log() if e[0] == "GET" and "/c/" in e[1]]
    return [e for e in gets if e[2] and e[2].startswith("bytes=-")], [e for e in gets if not (e[2] or "").startswith("bytes=-")]


def _sharded(httpsrv, request, seed=3):
    name = unique(request)
    data = make_data((64, 64, 64), seed=seed)
    z = zarr.create_array(_local(httpsrv, name), shape=data.shape, chunks=(16, 16, 16), shards=(32, 32, 32),
                          dtype=data.dtype, compressors=zarr.codecs.ZstdCodec(level=1))
    z[...] = data
    return name, data


def test_shard_index_cached(httpsrv, request):
    """A shard's index is fetched once: later reads of the shard ask for its inner chunks alone (with If-Match on
    the shard's ETag)."""
    name, data = _sharded(httpsrv, request)
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[1:3, 2:9, 4:30], data[1:3, 2:9, 4:30])  # shard (0, 0, 0)
    index, chunks = _index_gets(httpsrv)
    assert len(index) == 1 and chunks, httpsrv.log()
    for box in [(slice(17, 20), slice(0, 5), slice(3, 4)), (slice(0, 32), slice(30, 32), slice(0, 32))]:
        httpsrv.reset_stats()
        np.testing.assert_array_equal(a[box], data[box])
        index, chunks = _index_gets(httpsrv)
        assert not index and chunks and all(e[3] == 206 for e in chunks), httpsrv.log()
    # another handle of the context (zgpu.open again) shares the cache; another shard is fetched once
    b = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    np.testing.assert_array_equal(b[0:2, 0:2, 40:42], data[0:2, 0:2, 40:42])  # shard (0, 0, 1)
    index, _ = _index_gets(httpsrv)
    assert len(index) == 1 and index[0][1].endswith("/c/0/0/1"), httpsrv.log()
    httpsrv.reset_stats()
    np.testing.assert_array_equal(b[0:2, 0:2, 0:2], data[0:2, 0:2, 0:2])
    assert not _index_gets(httpsrv)[0], httpsrv.log()


@pytest.mark.parametrize("device", [None, "cuda"])
def test_shard_replaced_on_the_server(httpsrv, request, device):
    """A shard rewritten behind zgpu's back (zarr-python writing the same array anew) after its index was cached:
    the inner-chunk request's If-Match gets a 412, and the read runs again from a fresh index, returning the new
    values (never the old index's ranges cut out of the new shard)."""
    if device and not zgpu.gpu_available():
        pytest.skip("skipped: no GPU")
    name, data = _sharded(httpsrv, request)
    a = zgpu.open(httpsrv.url + "/" + name)
    box = (slice(1, 20), slice(2, 9), slice(4, 30))

    def read():
        v = a.read(box, device=device)
        return v if device is None else v.get()

    np.testing.assert_array_equal(read(), data[box])
    new = make_data((64, 64, 64), seed=4)
    zarr.open_array(_local(httpsrv, name), mode="r+")[...] = new
    httpsrv.reset_stats()
    np.testing.assert_array_equal(read(), new[box])
    codes = [e[3] for e in httpsrv.log() if e[0] == "GET" and "/c/" in e[1]]
    assert 412 in codes, httpsrv.log()
    index, _ = _index_gets(httpsrv)
    assert index, httpsrv.log()  # read again
    httpsrv.reset_stats()
    np.testing.assert_array_equal(read(), new[box])  # the fresh index is kept
    index, chunks = _index_gets(httpsrv)
    assert not index and all(e[3] == 206 for e in chunks), httpsrv.log()


def test_shard_deleted_on_the_server(httpsrv, request):
    """A shard deleted behind zgpu's back after its index was cached: the inner-chunk request's 404 (its version is
    gone) makes the read run again, which finds no shard: the fill value, not an error."""
    name, data = _sharded(httpsrv, request)
    a = zgpu.open(httpsrv.url + "/" + name)
    np.testing.assert_array_equal(a[1:3, 2:9, 4:30], data[1:3, 2:9, 4:30])
    os.unlink(os.path.join(_local(httpsrv, name), "c", "0", "0", "0"))
    np.testing.assert_array_equal(a[1:3, 2:9, 4:30], 0)


@pytest.mark.parametrize("kind", ["weak_etag", "no_etag"])
def test_shard_index_not_cached_without_a_strong_etag(httpsrv, request, kind):
    """If-Match compares ETags strongly: with a weak ETag (or none) nothing could check a cached index, so every
    read fetches its shards' indexes, and no request is refused."""
    name, data = _sharded(httpsrv, request)
    httpsrv.faults({"path_re": "/c/", "kind": kind})
    try:
        a = zgpu.open(httpsrv.url + "/" + name)
        for _ in range(2):
            httpsrv.reset_stats()
            np.testing.assert_array_equal(a[1:3, 2:9, 4:30], data[1:3, 2:9, 4:30])
            index, chunks = _index_gets(httpsrv)
            assert len(index) == 1 and chunks and all(e[3] == 206 for e in index + chunks), httpsrv.log()
    finally:
        httpsrv.clear_faults()


def test_shard_index_cache_off(httpsrv, request, zcfg):
    name, data = _sharded(httpsrv, request)
    zcfg(shard_index_cache_bytes=-1)
    a = zgpu.open(httpsrv.url + "/" + name)
    for _ in range(2):
        httpsrv.reset_stats()
        np.testing.assert_array_equal(a[1:3, 2:9, 4:30], data[1:3, 2:9, 4:30])
        assert len(_index_gets(httpsrv)[0]) == 1, httpsrv.log()


def test_zgpu_write_drops_the_cached_index(httpsrv, request):
    """A write through zgpu replaces the shard and drops its cached index (as it drops decoded chunks): the next
    read fetches the new index at once, with no 412 on the way."""
    name, data = _sharded(httpsrv, request)
    a = zgpu.open(httpsrv.url + "/" + name, mode="r+")
    np.testing.assert_array_equal(a[1:3, 2:9, 4:30], data[1:3, 2:9, 4:30])
    a[0:4, 0:4, 0:4] = 7
    data[0:4, 0:4, 0:4] = 7
    httpsrv.reset_stats()
    np.testing.assert_array_equal(a[0:3, 2:9, 2:30], data[0:3, 2:9, 2:30])
    codes = [e[3] for e in httpsrv.log() if e[0] == "GET"]
    assert 412 not in codes and len(_index_gets(httpsrv)[0]) == 1, httpsrv.log()


# ---- faults -------------------------------------------------------------------------------------------------------
def _fault_array(httpsrv, request, case="v3-zstd"):
    name = unique(request)
    write_case(_local(httpsrv, name), case)
    ref = zarr.open_array(_local(httpsrv, name), mode="r")[...]
    return name, ref


def test_fault_500_twice_then_ok(httpsrv, request, zcfg):
    zcfg(**FAST_RETRY)
    name, ref = _fault_array(httpsrv, request)
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    httpsrv.faults({"path_re": "/%s/c/0/1/2$" % name, "kind": "status", "code": 500, "times": 2})
    np.testing.assert_array_equal(a[...], ref)
    assert httpsrv.stats()["faults"] == 2


def test_fault_500_on_metadata_then_ok(httpsrv, request, zcfg):
    zcfg(**FAST_RETRY)
    name, ref = _fault_array(httpsrv, request)
    httpsrv.faults({"path_re": "/%s/zarr.json$" % name, "kind": "status", "code": 500, "times": 2})
    np.testing.assert_array_equal(zgpu.open_array(httpsrv.url + "/" + name)[...], ref)


def test_fault_503_forever_is_a_clean_error(httpsrv, request, zcfg):
    zcfg(**FAST_RETRY)
    name, ref = _fault_array(httpsrv, request)
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    httpsrv.faults({"path_re": "/%s/c/1/0/2$" % name, "kind": "status", "code": 503})
    with pytest.raises(zgpu.ZgpuError) as ei:
        a[...]
    msg = str(ei.value)
    assert "503" in msg, msg
    assert "c/1/0/2" in msg, msg
    assert not isinstance(ei.value, (zgpu.NotFoundError, zgpu.CorruptDataError)), repr(ei.value)
    # max_retries=3: the first attempt and three retries, no more
    assert httpsrv.stats()["faults"] == 4, httpsrv.log()
    # the fault gone, the same handle reads again
    httpsrv.clear_faults()
    np.testing.assert_array_equal(a[...], ref)


def test_fault_403_is_not_retried(httpsrv, request, zcfg):
    """A 4xx other than 404 (here 403) is an error at once, without retries."""
    zcfg(**FAST_RETRY)
    name, ref = _fault_array(httpsrv, request)
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    httpsrv.faults({"path_re": "/%s/c/0/0/0$" % name, "kind": "status", "code": 403})
    with pytest.raises(zgpu.ZgpuError) as ei:
        a[0:4, 0:4, 0:4]
    assert "403" in str(ei.value)
    assert httpsrv.stats()["faults"] == 1, httpsrv.log()


@pytest.mark.parametrize("kind", ["short", "reset"])
@pytest.mark.parametrize("case", ["v3-zstd", "v3-sharded"])
def test_fault_broken_body_once_is_retried(httpsrv, request, zcfg, kind, case):
    zcfg(**FAST_RETRY)
    name, ref = _fault_array(httpsrv, request, case)
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.reset_stats()
    httpsrv.faults({"path_re": "/%s/c/0/0/1$" % name, "kind": kind, "times": 1, "method": "GET"})
    np.testing.assert_array_equal(a[...], ref)
    assert httpsrv.stats()["faults"] == 1


def test_fault_stall_once_times_out_and_is_retried(httpsrv, request, zcfg):
    zcfg(request_timeout_ms=400, **FAST_RETRY)
    name, ref = _fault_array(httpsrv, request)
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.faults({"path_re": "/%s/c/2/1/0$" % name, "kind": "stall", "times": 1, "delay_s": 3})
    np.testing.assert_array_equal(a[...], ref)


@pytest.mark.parametrize("kind", ["bad_range", "wrong_total"])
def test_fault_bad_content_range_never_wrong_data(httpsrv, request, zcfg, kind):
    """A 206 whose Content-Range is not the range asked for (shifted, or a total unlike the object's): an error,
    never data taken from the wrong bytes."""
    zcfg(range_merge_gap=-1, **FAST_RETRY)
    name, ref = _fault_array(httpsrv, request, "v3-sharded")
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.faults({"path_re": "/%s/c/" % name, "kind": kind})
    with pytest.raises(zgpu.ZgpuError) as ei:
        a[0:10, 0:10, 0:10]  # one inner chunk: the shard's index and the chunk by range
    assert not isinstance(ei.value, zgpu.NotFoundError), repr(ei.value)
    httpsrv.clear_faults()
    np.testing.assert_array_equal(a[...], ref)


def test_fault_ignore_range_still_right(httpsrv, request, zcfg):
    """A server that answers a range request with 200 and the whole object: the client takes the range itself."""
    zcfg(**FAST_RETRY)
    for merge in (-1, None):
        zcfg(range_merge_gap=merge)
        name, ref = _fault_array(httpsrv, request, "v3-sharded-holes")
        a = zgpu.open(httpsrv.url + "/" + name)
        httpsrv.reset_stats()
        httpsrv.faults({"path_re": "/%s/c/" % name, "kind": "ignore_range"})
        check_regions(a, ref)
        assert httpsrv.stats()["faults"] > 0
        httpsrv.clear_faults()


def test_fault_slow_server_is_fine(httpsrv, request, zcfg):
    zcfg(**FAST_RETRY)
    name, ref = _fault_array(httpsrv, request)
    a = zgpu.open(httpsrv.url + "/" + name)
    httpsrv.faults({"path_re": "/%s/c/" % name, "kind": "slow", "delay_s": 0.05, "times": 8})
    np.testing.assert_array_equal(a[...], ref)


def test_connection_refused_is_a_clean_error(zcfg):
    import socket
    zcfg(max_retries=1, retry_base_ms=5, connect_timeout_ms=1000)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(zgpu.ZgpuError) as ei:
        zgpu.open_array("http://127.0.0.1:%d/x.zarr" % port)
    assert "127.0.0.1:%d" % port in str(ei.value)


# ---- schemes zgpu does not support ------------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["gs://bucket/x.zarr", "memory://x.zarr", "ftp://host/x.zarr",
                                 "az://container/x.zarr"])
def test_unsupported_scheme(url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for call in (lambda: zgpu.open(url), lambda: zgpu.open_array(url), lambda: zgpu.open_group(url),
                 lambda: zgpu.open(url, mode="w", shape=(4, 4), dtype="uint8"),
                 lambda: zgpu.create(url, shape=(4,), dtype="uint8"),
                 lambda: zgpu.create_group(url)):
        with pytest.raises(zgpu.UnsupportedError) as ei:
            call()
        assert url.split("://")[0] + "://" in str(ei.value), str(ei.value)
    assert os.listdir(tmp_path) == []  # nothing made locally under a name like "gs:"


# ---- groups over HTTP -------------------------------------------------------------------------------------------
def test_group_over_http(httpsrv, request):
    name = unique(request)
    g = zarr.open_group(_local(httpsrv, name), mode="w", attributes={"title": "remote group"})
    data = make_data((20, 30), seed=5)
    g.create_array("arr", shape=data.shape, chunks=(8, 8), dtype=data.dtype)[...] = data
    g.create_group("sub").create_array("inner", shape=(5,), dtype="int32", fill_value=-1)

    url = httpsrv.url + "/" + name
    zg = zgpu.open_group(url)
    assert zg.zarr_format == 3
    assert zg.attrs["title"] == "remote group"
    assert isinstance(zgpu.open(url), zgpu.Group)
    np.testing.assert_array_equal(zg["arr"][...], data)
    np.testing.assert_array_equal(zg["sub"]["inner"][...], np.full(5, -1, "int32"))
    np.testing.assert_array_equal(zg["sub/inner"][...], np.full(5, -1, "int32"))
    assert "arr" in zg and "sub" in zg and "nothing" not in zg
    with pytest.raises(KeyError):
        zg["nothing"]
    # HTTP has no listing: listing members is refused, with a message that says why
    for listing in (zg.keys, lambda: len(zg), zg.array_keys, zg.members):
        with pytest.raises(zgpu.UnsupportedError) as ei:
            listing()
        msg = str(ei.value).lower()
        assert "http" in msg and "list" in msg, msg


# ---- writes by PUT ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,kw", [
    (3, dict(compressors="zstd")),
    (3, dict(compressors="gzip", shards=(32, 32, 32))),
    (2, dict(compressors="blosc")),
])
def test_write_over_http_put(httpsrv, request, fmt, kw):
    name = unique(request)
    url = httpsrv.url + "/" + name
    data = make_data(seed=11)
    a = zgpu.create(url, shape=data.shape, dtype=data.dtype, chunks=(16, 16, 16), zarr_format=fmt, fill_value=3,
                    attributes={"k": [1, 2]}, **kw)
    a[...] = data
    a[5:9, 30:36, 40:50] = 1234
    data[5:9, 30:36, 40:50] = 1234
    a.close()
    z = zarr.open_array(_local(httpsrv, name), mode="r")
    assert z.attrs["k"] == [1, 2]
    np.testing.assert_array_equal(z[...], data)
    np.testing.assert_array_equal(zgpu.open(url)[...], data)
    # r+ over HTTP: a region rewritten, read back by both
    b = zgpu.open_array(url, mode="r+")
    b[0:2, 0:2, 0:2] = 9
    data[0:2, 0:2, 0:2] = 9
    b.close()
    np.testing.assert_array_equal(zarr.open_array(_local(httpsrv, name), mode="r")[...], data)
    assert not any(n.startswith(".put-") for n in os.listdir(_local(httpsrv, name)))


@pytest.mark.parametrize("case", ["v3-zstd", "v3-sharded-holes", "v2-missing-chunks"])
def test_small_windows(httpsrv, request, zcfg, case):
    """Reads and writes in windows of a few chunks (window_bytes): every window fetched, decoded and freed in
    turn gives the same array as one window."""
    zcfg(window_bytes=20000)  # two or three 16^3 uint16 chunks a window; a shard of 32^3 alone
    key = unique(request)
    _, ref = write_case("%s/%s" % (httpsrv.root, key), case)
    check_regions(zgpu.open("%s/%s" % (httpsrv.url, key)), ref)
    url = "%s/%s-copy" % (httpsrv.url, key)
    b = zgpu.create(url, shape=ref.shape, dtype=ref.dtype, chunks=(16, 16, 16), fill_value=7)
    b[...] = ref
    b[3:30, 2:20, 5:45] = ref[3:30, 2:20, 5:45] + 1
    exp = ref.copy()
    exp[3:30, 2:20, 5:45] += 1
    b.close()
    np.testing.assert_array_equal(zgpu.open(url)[...], exp)


def test_write_batches_requests(httpsrv, request):
    """A remote write goes in batches: one GET for each chunk written in part (to merge into), one PUT for each
    chunk written, one DELETE for each chunk that became the fill value everywhere, nothing else."""
    name = unique(request)
    url = httpsrv.url + "/" + name
    data = make_data(seed=15)
    a = zgpu.create(url, shape=data.shape, dtype=data.dtype, chunks=(16, 16, 16), fill_value=0)
    a[...] = data
    grid = [-(-n // 16) for n in data.shape]
    n_chunks = grid[0] * grid[1] * grid[2]
    httpsrv.srv.log.clear()
    # a box from (8, 8, 8) to the end: the chunks at index 0 on any axis are written in part
    a[8:, 8:, 8:] = 5
    data[8:, 8:, 8:] = 5
    log = [(m, p) for m, p, *_ in httpsrv.srv.log if "/%s/c/" % name in p]
    partial = n_chunks - (grid[0] - 1) * (grid[1] - 1) * (grid[2] - 1)
    assert sum(m == "GET" for m, _ in log) == partial
    assert sum(m == "PUT" for m, _ in log) == n_chunks
    assert all(m in ("GET", "PUT") for m, _ in log)
    # the whole first chunk set to the fill value: deleted
    httpsrv.srv.log.clear()
    a[0:16, 0:16, 0:16] = 0
    data[0:16, 0:16, 0:16] = 0
    log = [(m, p) for m, p, *_ in httpsrv.srv.log if "/%s/c/" % name in p]
    assert log == [("DELETE", "/%s/c/0/0/0" % name)]
    a.close()
    np.testing.assert_array_equal(zgpu.open(url)[...], data)
    np.testing.assert_array_equal(zarr.open_array(_local(httpsrv, name), mode="r")[...], data)


def test_write_over_http_put_fault_retried(httpsrv, request, zcfg):
    zcfg(**FAST_RETRY)
    name = unique(request)
    url = httpsrv.url + "/" + name
    data = make_data(seed=12)
    httpsrv.faults({"path_re": "/%s/c/0/0/0$" % name, "method": "PUT", "kind": "status", "code": 503, "times": 2})
    a = zgpu.create(url, shape=data.shape, dtype=data.dtype, chunks=(16, 16, 16))
    a[...] = data
    a.close()
    np.testing.assert_array_equal(zarr.open_array(_local(httpsrv, name), mode="r")[...], data)
    assert httpsrv.stats()["faults"] >= 2


def test_write_over_http_put_failure_raises(httpsrv, request, zcfg):
    zcfg(**FAST_RETRY)
    name = unique(request)
    url = httpsrv.url + "/" + name
    data = make_data(seed=13)
    a = zgpu.create(url, shape=data.shape, dtype=data.dtype, chunks=(16, 16, 16))
    httpsrv.faults({"path_re": "/%s/c/1/" % name, "method": "PUT", "kind": "status", "code": 500})
    with pytest.raises(zgpu.ZgpuError) as ei:
        a[...] = data
    assert "500" in str(ei.value)


def test_overwrite_over_http_is_refused_cleanly(httpsrv, request):
    """Replacing an array needs a listing of what is there: over HTTP that is refused, and the old array stays."""
    name = unique(request)
    url = httpsrv.url + "/" + name
    data = make_data((8, 8), seed=14)
    a = zgpu.create(url, shape=data.shape, dtype=data.dtype, chunks=(4, 4))
    a[...] = data
    a.close()
    with pytest.raises(zgpu.UnsupportedError) as ei:
        b = zgpu.open(url, mode="w", shape=(4, 4), dtype="uint8", chunks=(2, 2))
        b[...] = 2
        b.close()
    assert "http" in str(ei.value).lower() and "list" in str(ei.value), str(ei.value)
    with pytest.raises(zgpu.ExistsError):
        zgpu.open(url, mode="w-", shape=(4, 4), dtype="uint8")
    np.testing.assert_array_equal(zarr.open_array(_local(httpsrv, name), mode="r")[...], data)
    np.testing.assert_array_equal(zgpu.open(url)[...], data)


def test_group_and_resize_over_http_put(httpsrv, request):
    name = unique(request)
    url = httpsrv.url + "/" + name
    g = zgpu.create_group(url, attributes={"a": 1})
    x = g.create_array("x", shape=(8, 8), dtype="int16", chunks=(4, 4), fill_value=-1)
    x[...] = np.arange(64, dtype="int16").reshape(8, 8)
    x.resize(4, 6)                  # chunk keys are known: those wholly outside are deleted without a listing
    x.close()
    exp = np.full((4, 6), -1, "int16")
    exp[:, :] = np.arange(64, dtype="int16").reshape(8, 8)[:4, :6]
    zg = zarr.open_group(_local(httpsrv, name), mode="r")
    assert zg.attrs["a"] == 1
    np.testing.assert_array_equal(zg["x"][...], exp)
    chunks = sorted(os.path.relpath(os.path.join(d, f), os.path.join(_local(httpsrv, name), "x"))
                    for d, _, fs in os.walk(os.path.join(_local(httpsrv, name), "x", "c")) for f in fs)
    assert chunks == ["c/0/0", "c/0/1"], chunks


def test_write_over_http_put_404_raises(httpsrv, request, zcfg):
    """A PUT answered 404 (a server or bucket that is not there) is a failed write, not a success."""
    zcfg(**FAST_RETRY)
    name = unique(request)
    url = httpsrv.url + "/" + name
    a = zgpu.create(url, shape=(8, 8), dtype="uint8", chunks=(4, 4))
    httpsrv.faults({"path_re": "/%s/c/" % name, "method": "PUT", "kind": "status", "code": 404})
    with pytest.raises(zgpu.ZgpuError) as ei:
        a[...] = 1
    assert "404" in str(ei.value), str(ei.value)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("fmt", [2, 3])
def test_group_members_from_consolidated_metadata(httpsrv, request, fmt):
    """A plain HTTP server cannot list: a group's members come from its consolidated metadata, and without any
    the listing is a clear UNSUPPORTED."""
    name = unique(request)
    g = zarr.open_group(_local(httpsrv, name), mode="w", zarr_format=fmt)
    g.create_array("b", shape=(3,), dtype="u1")
    g.create_group("a").create_array("deep", shape=(2,), dtype="u1")
    zg = zgpu.open_group(httpsrv.url + "/" + name)
    with pytest.raises(zgpu.UnsupportedError, match="consolidated"):
        zg.keys()
    zarr.consolidate_metadata(_local(httpsrv, name))
    zg = zgpu.open_group(httpsrv.url + "/" + name)
    assert zg.keys() == ["a", "b"] and zg.group_keys() == ["a"] and zg.array_keys() == ["b"]
    assert zg["b"].shape == (3,)
