"""zgpu reads what zarr-python wrote: whole arrays and regions, every fixture of gen_fixtures."""
import numpy as np
import pytest
import zarr

from interop_util import assert_same_array, parse_region
from gen_fixtures import CASES

REGION_CASES = [(c, r) for c in CASES for r in c.regions]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_read_whole(case, zgpu, fixture_paths, tmp_path):
    path = fixture_paths[case.name]
    out = tmp_path / "out.npy"
    zgpu.ok("read", path, "-o", out)
    expected = zarr.open_array(path, mode="r")[...]
    assert_same_array(np.load(out), expected, f"{case.name} whole")


@pytest.mark.sampled
@pytest.mark.parametrize("case,region", REGION_CASES, ids=[f"{c.name}[{r}]" for c, r in REGION_CASES])
def test_read_region(case, region, zgpu, fixture_paths, tmp_path):
    path = fixture_paths[case.name]
    out = tmp_path / "out.npy"
    zgpu.ok("read", path, "--region", region, "-o", out)
    a = zarr.open_array(path, mode="r")
    expected = a[parse_region(region, a.shape)]
    assert_same_array(np.load(out), expected, f"{case.name} region {region}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_info(case, zgpu, fixture_paths):
    """`zgpu info` succeeds and reports the data type and the shape."""
    path = fixture_paths[case.name]
    r = zgpu.ok("info", path)
    a = zarr.open_array(path, mode="r")
    text = r.stdout
    dt = np.dtype(a.dtype)
    names = {dt.name, str(dt), dt.str}
    if dt.kind == "V":
        names.add(f"r{dt.itemsize * 8}")
    assert any(n in text for n in names), f"dtype {dt} not in info output:\n{text}"
    for n in a.shape:
        assert str(n) in text, f"shape {a.shape} not in info output:\n{text}"


# The --region forms of `zgpu read --help`: a:b, a:, :b, :, negative bounds, a single index (axis kept
# with length 1), fewer entries than dimensions, and the empty string (whole array).
REGION_FORMS = [
    ("0:4", np.s_[0:4, :, :]),
    ("-3:,5", np.s_[-3:, 5:6, :]),
    (":,:-4,-7", np.s_[:, :-4, -7:-6]),
    ("2,3,4", np.s_[2:3, 3:4, 4:5]),
    ("-1,-1,-1", np.s_[-1:, -1:, -1:]),
    ("3:3,:,:", np.s_[3:3, :, :]),
    ("", np.s_[:, :, :]),
]


@pytest.mark.parametrize("region,sl", REGION_FORMS, ids=[f"[{r}]" for r, _ in REGION_FORMS])
def test_region_forms(region, sl, zgpu, fixture_paths, tmp_path):
    path = fixture_paths["v3_transpose_zstd"]
    out = tmp_path / "out.npy"
    zgpu.ok("read", path, "--region", region, "-o", out)
    assert_same_array(np.load(out), zarr.open_array(path, mode="r")[sl], f"region {region!r}")


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_info_ome_image(zgpu, tmp_path, version):
    """zgpu info of an OME-Zarr image shows its multiscale: version, name, axes with types and units, and every
    level's array, shape, dtype, and scale and translation composed with the multiscale's own."""
    fmt = 3 if version == "0.5" else 2
    g = zarr.open_group(str(tmp_path / "img.zarr"), mode="w", zarr_format=fmt)
    for k in range(2):
        g.create_array(str(k), shape=(3, 16 >> k, 16 >> k), dtype="u2")
    axes = [{"name": "c", "type": "channel"}, {"name": "y", "type": "space", "unit": "micrometer"},
            {"name": "x", "type": "space", "unit": "micrometer"}]
    m = {"name": "img", "axes": axes, "datasets": [
        {"path": str(k), "coordinateTransformations": [{"type": "scale", "scale": [1, 0.5 * 2 ** k, 0.5 * 2 ** k]},
                                                       {"type": "translation", "translation": [0, 0, 0.25 * k]}]}
        for k in range(2)], "coordinateTransformations": [{"type": "scale", "scale": [1, 2, 2]}]}
    if version == "0.5":
        g.attrs["ome"] = {"version": "0.5", "multiscales": [m]}
    else:
        g.attrs["multiscales"] = [dict(m, version="0.4")]
    out = zgpu.ok("info", tmp_path / "img.zarr").stdout
    assert 'multiscale:       OME-NGFF %s "img"' % version in out, out
    assert "axes:           c (channel), y (space, micrometer), x (space, micrometer)" in out, out
    assert "level 0         '0'  [3, 16, 16] uint16  scale [1, 1, 1]  translation [0, 0, 0]" in out, out
    assert "level 1         '1'  [3, 8, 8] uint16  scale [1, 2, 2]  translation [0, 0, 0.5]" in out, out
