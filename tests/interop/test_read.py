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
