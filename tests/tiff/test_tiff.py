"""TIFF through zgpu (issue 22, docs/tiff.md): files written by tifffile (with imagecodecs) and by GDAL (rasterio's
wheel) across codecs x predictors x layouts x data types x byte orders, each read whole and in regions and compared
element by element with tifffile's reading; GeoTIFF metadata against GDAL's; damaged files give errors naming the
file, page and tile. Device reads run the same comparisons where a GPU is present (else they skip)."""
from __future__ import annotations

import os
import struct
import subprocess

import numpy as np
import pytest

tifffile = pytest.importorskip("tifffile")
try:
    import imagecodecs  # noqa: F401 (tifffile's codecs beyond zlib: written files and references)
    HAVE_CODECS = True
except ImportError:  # (the GPU machine's carry holds imagecodecs or GDAL: GDAL's cases then check against GDAL)
    HAVE_CODECS = False
needs_codecs = pytest.mark.skipif(not HAVE_CODECS, reason="could not import 'imagecodecs'")
import zgpu  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GPU = zgpu.gpu_available()
RNG = np.random.default_rng(22)


def smooth(shape, dtype):
    """Compressible, predictor-friendly data with every byte varying (so byte order and predictors matter)."""
    dtype = np.dtype(dtype)
    idx = np.indices(shape).sum(axis=0).astype(np.float64)
    base = np.sin(idx / 7.0) * 0.45 + 0.5
    if dtype.kind == "f":
        return (base * 1000 - 300 + RNG.normal(0, 0.01, shape)).astype(dtype)
    info = np.iinfo(dtype)
    span = min(float(info.max) - float(info.min), 2.0 ** 40)
    v = float(info.min) + base * span + RNG.integers(0, 3, shape)
    return np.clip(v, info.min, info.max).astype(dtype)


def expected(path, key=None):
    if not HAVE_CODECS and key is None:
        return gdal_levels(path)[0]
    with tifffile.TiffFile(path) as tf:
        if key is None:
            return tf.series[0].levels[0].asarray()
        return tf.pages[key].asarray()


def gdal_levels(path):
    """Every resolution level of a GDAL-readable file as GDAL reads it, in zgpu's (and tifffile's) layout: one band
    (y, x), pixel-interleaved bands (y, x, bands), band-interleaved ones (bands, y, x)."""
    out = []
    with rasterio.open(path) as ds:
        n = 1 + len(ds.overviews(1))
        band = ds.profile.get("interleave", "pixel").lower() == "band"
    for k in range(n):
        with (rasterio.open(path, overview_level=k - 1) if k else rasterio.open(path)) as ds:
            a = ds.read()
        out.append(a[0] if a.shape[0] == 1 else a if band else np.moveaxis(a, 0, -1))
    return out


def levels_of(path):
    """Every level of a file: tifffile's reading where it has the codecs, else GDAL's."""
    if not HAVE_CODECS:
        return gdal_levels(path)
    with tifffile.TiffFile(path) as tf:
        return [lv.asarray() for lv in tf.series[0].levels]


def check_reads(path, want, zpath=None):
    """Whole read, a region read and a batch of regions, host and (where present) device."""
    z = zgpu.open(zpath or str(path))
    assert z.shape == want.shape, (z.shape, want.shape)
    assert z.dtype == want.dtype
    np.testing.assert_array_equal(z[...], want)
    sl = tuple(slice(s // 3, max(s // 3 + 1, s - s // 5)) for s in want.shape)
    np.testing.assert_array_equal(z[sl], want[sl])
    if GPU:
        got = z.read(..., device="cuda:0")
        np.testing.assert_array_equal(np.asarray(got.get() if hasattr(got, "get") else got), want)
    return z


# ---- tifffile: codecs x predictors x dtypes x layouts -------------------------------------------------------------
CODECS = [None, "lzw", "zlib", "adobe_deflate", "zstd", "packbits", "lzma"]
DTYPES = ["uint8", "int16", "uint16", "int32", "uint32", "float16", "float32", "float64", "int64", "uint64", "int8"]


def predictors(dtype, codec):
    if codec is None:
        return [None]
    # tifffile refuses horizontal differencing of floats (GDAL's files below have it)
    return [None, "floatingpoint" if np.dtype(dtype).kind == "f" else "horizontal"]


CASES = [(c, d, p) for c in CODECS for d in DTYPES for p in predictors(d, c)
         if not (c == "packbits" and np.dtype(d).itemsize > 1 and p is None and d not in ("uint16", "float32"))]


@needs_codecs
@pytest.mark.parametrize("codec,dtype,predictor", CASES)
def test_tifffile_tiled(tmp_path, codec, dtype, predictor):
    want = smooth((70, 99), dtype)
    path = tmp_path / "t.tif"
    tifffile.imwrite(path, want, tile=(32, 48), compression=codec, predictor=predictor)
    z = check_reads(path, want)
    assert z.attrs["tiff"]["layout"] == "tiles"
    assert z.geo is None


LAYOUTS = ["strips7", "strips_full", "rgb", "planar", "bigendian", "bigtiff", "planar_strips", "rgb_bigendian"]


CHAINS = [(c, p, d) for d in ("uint16", "float32", "uint8")
          for c, p in ((None, None), ("lzw", "horizontal"), ("zlib", "horizontal"), ("zstd", None),
                       ("packbits", None), ("zlib", "floatingpoint"), ("lzw", "floatingpoint"))
          if (p == "floatingpoint") == (d == "float32" and p is not None)]  # (tifffile: 2 for ints, 3 for floats)


@needs_codecs
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("codec,predictor,dtype", CHAINS)
def test_tifffile_layouts(tmp_path, layout, codec, predictor, dtype):
    rgb = layout in ("rgb", "planar", "planar_strips", "rgb_bigendian")
    shape = (3, 53, 61) if layout.startswith("planar") else (53, 61, 3) if rgb else (53, 61)
    want = smooth(shape, dtype)
    kw = dict(compression=codec, predictor=predictor)
    if layout == "strips7":
        kw["rowsperstrip"] = 7  # 53 = 7 * 7 + 4: a short last strip
    elif layout == "planar_strips":
        kw.update(rowsperstrip=10, planarconfig="separate", photometric="rgb")
    elif layout == "strips_full":
        kw["rowsperstrip"] = 1000
    else:
        kw["tile"] = (16, 32)
    if layout == "rgb" or layout == "rgb_bigendian":
        kw["photometric"] = "rgb"
    if layout == "planar":
        kw.update(planarconfig="separate", photometric="rgb")
    if "bigendian" in layout:
        kw["byteorder"] = ">"
    if layout == "bigtiff":
        kw["bigtiff"] = True
    path = tmp_path / "l.tif"
    tifffile.imwrite(path, want, **kw)
    np.testing.assert_array_equal(expected(path), want)
    check_reads(path, want)


@needs_codecs
def test_multipage_stack_and_pages(tmp_path):
    want = smooth((5, 40, 50), "uint16")
    path = tmp_path / "stack.tif"
    with tifffile.TiffWriter(path) as tw:
        for k in range(5):
            tw.write(want[k], tile=(16, 16), compression="lzw", predictor=True, contiguous=False)
    z = check_reads(path, want)
    assert z.attrs["tiff"]["pages"] == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(zgpu.open(str(path) + "#page=3")[...], want[3])
    with pytest.raises(zgpu.NotFoundError, match="no page 9"):
        zgpu.open(str(path) + "#page=9")


@needs_codecs
def test_pages_not_alike_open_alone(tmp_path):
    path = tmp_path / "mixed.tif"
    a, b = smooth((30, 40), "uint8"), smooth((20, 10), "float32")
    with tifffile.TiffWriter(path) as tw:
        tw.write(a, compression="zlib")
        tw.write(b, compression="lzw", predictor=3)
    np.testing.assert_array_equal(zgpu.open(str(path))[...], a)
    np.testing.assert_array_equal(zgpu.open(str(path) + "#page=1")[...], b)


@needs_codecs
def test_subifd_pyramid(tmp_path):
    path = tmp_path / "pyr.tif"
    full = smooth((128, 96), "uint16")
    levels = [full, full[::2, ::2].copy(), full[::4, ::4].copy()]
    with tifffile.TiffWriter(path) as tw:
        tw.write(levels[0], tile=(32, 32), compression="zstd", subifds=2)
        for lv in levels[1:]:
            tw.write(lv, tile=(16, 16), compression="lzw", predictor=2, subfiletype=1)
    for k, lv in enumerate(levels):
        z = check_reads(path, lv, str(path) + "#level=%d" % k)
        assert z.attrs["tiff"]["n_levels"] == 3
    with pytest.raises(zgpu.NotFoundError, match="no level 3"):
        zgpu.open(str(path) + "#level=3")
    # the levels share the file's name as their chunks' key: the decoded-chunk cache still tells them apart
    zgpu.config.set(cache_bytes=64 << 20)
    try:
        for _ in range(2):
            for k, lv in enumerate(levels):
                np.testing.assert_array_equal(zgpu.open(str(path) + "#level=%d" % k)[:8, :8], lv[:8, :8])
    finally:
        zgpu.config.set(cache_bytes=0)


@needs_codecs
def test_jpeg_tifffile(tmp_path):
    want = smooth((64, 80, 3), "uint8")
    path = tmp_path / "j.tif"
    tifffile.imwrite(path, want, tile=(32, 32), compression="jpeg", photometric="rgb")
    got = zgpu.open(str(path))[...]
    np.testing.assert_array_equal(got, expected(path))


@needs_codecs
def test_read_only(tmp_path):
    path = tmp_path / "ro.tif"
    tifffile.imwrite(path, smooth((20, 20), "uint8"))
    z = zgpu.open(str(path))
    with pytest.raises(zgpu.ZgpuError, match="read-only"):
        z[0:2, 0:2] = 1
    assert tifffile.imread(path).shape == (20, 20)


# ---- GDAL (rasterio): COG with overviews, GeoTIFF keys, nodata, sparse -------------------------------------------
try:
    import rasterio
    import rasterio.enums
    import rasterio.windows
    from rasterio.transform import from_origin
except ImportError:  # (the GDAL cases skip, tifffile's run: the GPU machine's carry holds one of the two)
    rasterio = None
needs_gdal = pytest.mark.skipif(rasterio is None, reason="could not import 'rasterio' (GDAL)")


def gdal_write(path, data, **opts):
    count = 1 if data.ndim == 2 else data.shape[0]
    profile = dict(driver="GTiff", width=data.shape[-1], height=data.shape[-2], count=count, dtype=data.dtype.name,
                   crs="EPSG:32633", transform=from_origin(500000.0, 4100000.0, 30.0, 30.0))
    profile.update(opts)
    with rasterio.open(path, "w", **profile) as ds:
        ds.write(data if data.ndim == 3 else data[None])
    return path


GDAL_CASES = [("LZW", 2, "uint16"), ("DEFLATE", 2, "int16"), ("DEFLATE", 3, "float32"), ("ZSTD", 1, "float64"),
              ("LZW", 3, "float64"), ("PACKBITS", 1, "uint8"), ("LZMA", 2, "uint32"), ("NONE", 1, "int8"),
              ("JPEG", 1, "uint8"), ("LZW", 2, "uint64")]


@needs_gdal
@pytest.mark.parametrize("compress,predictor,dtype", GDAL_CASES)
@pytest.mark.parametrize("tiled", [True, False])
def test_gdal(tmp_path, compress, predictor, dtype, tiled):
    want = smooth((100, 130), dtype)
    opts = dict(compress=compress, tiled=tiled)
    if predictor > 1:
        opts["predictor"] = predictor
    if tiled:
        opts.update(blockxsize=32, blockysize=48)
    else:
        opts["blockysize"] = 8 if compress == "JPEG" else 9  # (JPEG strips: a multiple of 8 rows)
    path = gdal_write(str(tmp_path / "g.tif"), want, **opts)
    ref = expected(path)
    if compress != "JPEG":
        np.testing.assert_array_equal(ref, want)
    z = check_reads(path, ref)
    geo = z.geo
    assert geo == z.attrs["geo"] and geo["epsg"] == 32633
    with rasterio.open(path) as ds:
        assert geo["geotransform"] == list(ds.transform.to_gdal())


@needs_gdal
def test_gdal_rgb_planar_and_nodata(tmp_path):
    want = smooth((3, 70, 90), "uint16")
    path = gdal_write(str(tmp_path / "p.tif"), want, compress="LZW", predictor=2, tiled=True, blockxsize=32,
                      blockysize=32, interleave="band", nodata=7)
    z = check_reads(path, want)
    assert z.attrs["geo"]["nodata"] == 7
    assert z.fill_value == 7


@needs_gdal
def test_gdal_sparse(tmp_path):
    path = str(tmp_path / "sparse.tif")
    profile = dict(driver="GTiff", width=128, height=96, count=1, dtype="float32", tiled=True, blockxsize=32,
                   blockysize=32, compress="DEFLATE", nodata=-9999.0, sparse_ok=True)
    block = smooth((32, 32), "float32")
    with rasterio.open(path, "w", **profile) as ds:
        ds.write(block, 1, window=rasterio.windows.Window(32, 32, 32, 32))
    with tifffile.TiffFile(path) as tf:
        assert 0 in tf.pages[0].databytecounts  # really sparse
    want = np.full((96, 128), -9999.0, np.float32)
    want[32:64, 32:64] = block
    check_reads(path, want)


@needs_gdal
def test_cog_overviews(tmp_path):
    src = str(tmp_path / "src.tif")
    want = smooth((256, 320), "uint16")
    gdal_write(src, want, tiled=True, blockxsize=64, blockysize=64)
    from rasterio.shutil import copy as rcopy
    with rasterio.open(src, "r+") as ds:
        ds.build_overviews([2, 4], rasterio.enums.Resampling.average)
    cog = str(tmp_path / "cog.tif")
    rcopy(src, cog, driver="COG", compress="DEFLATE", predictor=2, blocksize=64)
    refs = levels_of(cog)
    n = len(refs)
    assert n == 3
    for k in range(n):
        z = check_reads(cog, refs[k], cog + "#level=%d" % k)
        assert z.attrs["tiff"]["n_levels"] == 3
    np.testing.assert_array_equal(refs[0], want)


# ---- damaged files: clean errors naming file, page and tile ------------------------------------------------------
def tiled_lzw(tmp_path):
    want = smooth((64, 64), "uint16")
    path = tmp_path / "d.tif"
    tifffile.imwrite(path, want, tile=(32, 32), compression="lzw")
    with tifffile.TiffFile(path) as tf:
        offs, counts = tf.pages[0].dataoffsets, tf.pages[0].databytecounts
    return path, want, offs, counts


@needs_codecs
def test_damaged_tile_names_page_and_tile(tmp_path):
    path, want, offs, counts = tiled_lzw(tmp_path)
    raw = bytearray(path.read_bytes())
    for i in range(offs[2] + 2, offs[2] + counts[2]):
        raw[i] = 0xFF
    path.write_bytes(bytes(raw))
    z = zgpu.open(str(path))
    with pytest.raises(zgpu.CorruptDataError, match=r"page 0, tile 2 \(row 1, column 0\).*tiff_lzw"):
        z[...]
    np.testing.assert_array_equal(z[0:32, :], want[0:32, :])  # the other tiles still read
    if GPU:
        with pytest.raises(zgpu.CorruptDataError, match="tile 2"):
            z.read(..., device="cuda:0")


@needs_codecs
def test_truncated_file(tmp_path):
    path, _, offs, counts = tiled_lzw(tmp_path)
    raw = path.read_bytes()
    path.write_bytes(raw[: offs[3] + 5])
    with pytest.raises(zgpu.CorruptDataError, match=r"d\.tif.*page 0.*tile 3.*past the end"):
        zgpu.open(str(path))


def patch_ifd_entry(path, tag, value):
    """Rewrites the first IFD's entry `tag` (classic little-endian TIFF) to hold the LONG value inline."""
    raw = bytearray(path.read_bytes())
    ifd = struct.unpack_from("<I", raw, 4)[0]
    n = struct.unpack_from("<H", raw, ifd)[0]
    for k in range(n):
        at = ifd + 2 + 12 * k
        if struct.unpack_from("<H", raw, at)[0] == tag:
            struct.pack_into("<HII", raw, at + 2, 4, 1, value)
            path.write_bytes(bytes(raw))
            return
    raise AssertionError("no tag %d" % tag)


@needs_codecs
def test_hostile_headers(tmp_path):
    path, _, _, _ = tiled_lzw(tmp_path)
    good = path.read_bytes()
    ifd = struct.unpack_from("<I", good, 4)[0]
    n = struct.unpack_from("<H", good, ifd)[0]
    # the IFD chain looping back to itself
    raw = bytearray(good)
    struct.pack_into("<I", raw, ifd + 2 + 12 * n, ifd)
    path.write_bytes(bytes(raw))
    with pytest.raises(zgpu.CorruptDataError, match="loops"):
        zgpu.open(str(path))
    # the first IFD past the end (at an even offset: an odd one is refused first, as not on a word boundary)
    raw = bytearray(good)
    struct.pack_into("<I", raw, 4, (len(good) + 100) & ~1)
    path.write_bytes(bytes(raw))
    with pytest.raises(zgpu.CorruptDataError, match="past the end"):
        zgpu.open(str(path))
    # absurd sizes, tile counts not matching the layout
    path.write_bytes(good)
    patch_ifd_entry(path, 256, 0xFFFFFFF0)
    with pytest.raises(zgpu.ZgpuError, match="page 0"):
        zgpu.open(str(path))
    path.write_bytes(good)
    patch_ifd_entry(path, 257, 200)
    with pytest.raises(zgpu.CorruptDataError, match="tile offsets"):
        zgpu.open(str(path))
    # an unsupported codec: named
    path.write_bytes(good)
    patch_ifd_entry(path, 259, 34712)
    with pytest.raises(zgpu.UnsupportedError, match="Compression 34712"):
        zgpu.open(str(path))


# ---- the CLI -----------------------------------------------------------------------------------------------------
def cli():
    exe = os.environ.get("ZGPU_CLI") or os.path.join(ROOT, "build", "bin", "zgpu")
    if not os.path.exists(exe):
        pytest.skip("no zgpu CLI at %s (ZGPU_CLI)" % exe)
    return exe


@needs_gdal
def test_cli_info_read_cp(tmp_path):
    exe = cli()
    want = smooth((60, 70), "int16")
    path = gdal_write(str(tmp_path / "c.tif"), want, compress="LZW", predictor=2, tiled=True, blockxsize=32,
                      blockysize=32)
    out = subprocess.run([exe, "info", path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "LZW" in out.stdout and "32633" in out.stdout
    lines = out.stdout.splitlines()
    assert any(ln.startswith("tiff:") and "1 page" in ln for ln in lines), out.stdout
    assert any(ln.strip().startswith("codec:") and "LZW (5), predictor 2" in ln for ln in lines), out.stdout
    assert any(ln.strip().startswith("level 0") and "[60, 70] in chunks of [32, 32]" in ln for ln in lines), out.stdout
    assert "geo:              EPSG:32633" in lines, out.stdout
    stored = os.path.getsize(path)
    # the file's 6 tiles and their bytes (less than the file: its header and IFD), not the directory's files
    line = next(ln for ln in lines if ln.startswith("stored_objects:"))
    assert line.split()[1:] == ["6", "of", "6", "tiles", "or", "strips"], line
    n = int(next(ln for ln in lines if ln.startswith("stored_bytes:")).split()[1])
    assert 0 < n < stored
    info = zgpu.open(path).info_complete()
    assert info.count_chunks_initialized == 6 and info.count_bytes_stored == n
    npy = tmp_path / "r.npy"
    out = subprocess.run([exe, "read", path, "--region", "10:50,5:60", "-o", str(npy)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    np.testing.assert_array_equal(np.load(npy), want[10:50, 5:60])
    dst = tmp_path / "c.zarr"
    out = subprocess.run([exe, "cp", path, str(dst)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    z = zgpu.open(str(dst))
    np.testing.assert_array_equal(z[...], want)
    assert z.chunks == (32, 32)
    assert "tiff" not in z.attrs and z.attrs["tiff_source"]["compression"] == "LZW"
    assert z.attrs["geo"]["epsg"] == 32633


@needs_codecs
def test_cli_cp_levels(tmp_path):
    """cp --levels: a pyramid's levels into a group, DST/K each."""
    exe = cli()
    path = tmp_path / "pyr.tif"
    full = smooth((96, 64), "float32")
    levels = [full, full[::2, ::2].copy()]
    with tifffile.TiffWriter(path) as tw:
        tw.write(levels[0], tile=(32, 32), compression="zlib", predictor=3, subifds=1)
        tw.write(levels[1], tile=(16, 16), compression="lzw", subfiletype=1)
    dst = tmp_path / "pyr.zarr"
    out = subprocess.run([exe, "cp", "-q", str(path), str(dst), "--levels"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    g = zgpu.open(str(dst))
    assert g.attrs["tiff_levels"] == 2
    for k, lv in enumerate(levels):
        np.testing.assert_array_equal(zgpu.open("%s/%d" % (dst, k))[...], lv)
    out = subprocess.run([exe, "cp", "-q", str(dst / "0"), str(tmp_path / "x.zarr"), "--levels"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "TIFF" in out.stderr


@needs_codecs
@needs_gdal
@pytest.mark.parametrize("photometric", ["YCBCR", "RGB"])
def test_gdal_jpeg_rgb(tmp_path, photometric):
    """3-band JPEG with JPEGTables; YCbCr decodes to RGB as tifffile's (libjpeg's upsampling, not libtiff's RGBA)."""
    data = smooth((3, 64, 96), "uint8")
    path = gdal_write(str(tmp_path / "y.tif"), data, compress="JPEG", photometric=photometric, tiled=True,
                      blockxsize=32, blockysize=32)
    with tifffile.TiffFile(path) as tf:
        assert tf.pages[0].jpegtables is not None
    z = check_reads(path, expected(path))
    assert z.attrs["tiff"]["photometric"] == (6 if photometric == "YCBCR" else 2)


@needs_gdal
def test_remote_cog_over_http(tmp_path):
    """A COG over HTTP: header and IFDs by range requests, then only the tiles a read needs."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests", "remote"))
    import http_server
    src, cog = str(tmp_path / "s.tif"), str(tmp_path / "cog.tif")
    want = smooth((200, 260), "int16")
    gdal_write(src, want, tiled=True, blockxsize=64, blockysize=64)
    with rasterio.open(src, "r+") as ds:
        ds.build_overviews([2], rasterio.enums.Resampling.nearest)
    from rasterio.shutil import copy as rcopy
    rcopy(src, cog, driver="COG", compress="ZSTD", blocksize=64)
    refs = levels_of(cog)
    srv, _ = http_server.serve(str(tmp_path))
    try:
        url = "http://127.0.0.1:%d/cog.tif" % srv.server_address[1]
        for k, ref in enumerate(refs):
            z = check_reads(url, ref, url + "#level=%d" % k)
            assert z.geo["epsg"] == 32633
            with rasterio.open(cog, overview_level=k - 1) if k else rasterio.open(cog) as ds:
                assert z.geo["geotransform"] == pytest.approx(list(ds.transform.to_gdal()))
    finally:
        srv.shutdown()
