"""The xarray backend (issue 21): xr.open_dataset(path, engine="zgpu") against xarray's own Zarr backend on
datasets xarray wrote (v2 and v3), lazily, with Dask chunks, CF decoding and indexing."""
from __future__ import annotations

import numpy as np
import pytest

import zgpu

xr = pytest.importorskip("xarray")
pytest.importorskip("dask")
from zgpu.xarray import ZgpuBackendEntrypoint  # noqa: E402

ENGINE = ZgpuBackendEntrypoint  # (engine="zgpu" once the package is installed: test_entry_point)


def _dataset():
    rng = np.random.default_rng(0)
    t = np.arange("2026-01-01", "2026-01-11", dtype="datetime64[D]").astype("datetime64[ns]")
    temp = rng.normal(280, 5, (10, 6, 8)).astype("f4")
    temp[2, 3, 4] = np.nan
    ds = xr.Dataset(
        {"temp": (("time", "lat", "lon"), temp, {"units": "K", "long_name": "temperature"}),
         "count": (("lat", "lon"), rng.integers(0, 100, (6, 8)).astype("i2")),
         "scaled": (("time", "lat"), rng.normal(0, 1, (10, 6)))},
        coords={"time": t, "lat": np.linspace(-50, 50, 6), "lon": np.arange(8) * 45.0},
        attrs={"title": "test", "version": 3})
    ds["scaled"].encoding.update(scale_factor=0.01, add_offset=5.0, dtype="i2", _FillValue=-9999)
    ds["temp"].encoding.update(chunks=(4, 3, 8))
    return ds


@pytest.fixture(params=[2, 3])
def written(tmp_path, request):
    ds = _dataset()
    path = str(tmp_path / "ds.zarr")
    ds.to_zarr(path, zarr_format=request.param, consolidated=False)
    return path, ds


def test_same_as_xarrays_zarr_backend(written):
    path, ds = written
    got = xr.open_dataset(path, engine=ENGINE)
    ref = xr.open_dataset(path, engine="zarr", consolidated=False)
    xr.testing.assert_identical(got.load(), ref.load())
    assert np.isnan(got["temp"].values[2, 3, 4]) and got["temp"].attrs["units"] == "K"
    assert got["time"].dtype == np.dtype("datetime64[ns]") and got.attrs["version"] == 3
    np.testing.assert_allclose(got["scaled"].values, ds["scaled"].values, atol=0.006)


def test_lazy_and_indexed(written):
    path, ds = written
    got = xr.open_dataset(path, engine=ENGINE)
    assert not got["temp"].variable._in_memory
    sub = got["temp"].isel(time=[7, 1, 1], lat=slice(1, 5), lon=[0, 7])          # outer indexing
    xr.testing.assert_equal(sub, ds["temp"].isel(time=[7, 1, 1], lat=slice(1, 5), lon=[0, 7]))
    pts = got["temp"].isel(time=xr.DataArray([0, 9, 4], dims="p"), lon=xr.DataArray([1, 2, 3], dims="p"))
    xr.testing.assert_equal(pts, ds["temp"].isel(time=xr.DataArray([0, 9, 4], dims="p"),
                                                 lon=xr.DataArray([1, 2, 3], dims="p")))  # vectorised
    xr.testing.assert_equal(got["temp"].sel(lat=50.0, lon=90.0), ds["temp"].sel(lat=50.0, lon=90.0))


def test_dask_chunks(written):
    path, ds = written
    got = xr.open_dataset(path, engine=ENGINE, chunks={})
    assert got["temp"].chunks == ((4, 4, 2), (3, 3), (8,))  # the stored grid
    xr.testing.assert_allclose(got["temp"].mean("time").compute(), ds["temp"].mean("time"))
    got = xr.open_dataset(path, engine=ENGINE, chunks={"time": 5})
    assert got["temp"].chunks[0] == (5, 5)


def test_errors(tmp_path):
    a = zgpu.create(str(tmp_path / "a.zarr"), shape=(3,), dtype="u1")
    with pytest.raises(ValueError, match="is an array"):
        xr.open_dataset(a.path, engine=ENGINE)
    g = zgpu.create_group(str(tmp_path / "g.zarr"))
    g.create_array("x", shape=(3,), dtype="u1")  # no dimension names
    with pytest.raises(ValueError, match="no dimension names"):
        xr.open_dataset(g.path, engine=ENGINE)


def test_entry_point(written):
    """engine="zgpu" where the package is installed (make test installs it into .venv)."""
    from importlib.metadata import entry_points
    if not any(e.name == "zgpu" for e in entry_points(group="xarray.backends")):
        pytest.skip("the zgpu package is not installed (its xarray entry point is registered at install)")
    path, ds = written
    xr.testing.assert_identical(xr.open_dataset(path, engine="zgpu").load(),
                                xr.open_dataset(path, engine="zarr", consolidated=False).load())


def test_device(written):
    if not zgpu.gpu_available():
        pytest.skip("skipped: no GPU")
    cp = pytest.importorskip("cupy")
    path, ds = written
    got = xr.open_dataset(path, engine=ENGINE, device="cuda")
    assert isinstance(got["count"].data, cp.ndarray) and isinstance(got["temp"].data, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(got["count"].data), ds["count"].values)


@pytest.mark.parametrize("fmt", [2, 3])
def test_open_datatree_as_xarrays_zarr_backend(tmp_path, fmt):
    """xr.open_datatree / open_groups with the zgpu engine: the same tree as xarray's zarr engine, every group a
    node (an empty group included), and group= opens a subgroup as a Dataset."""
    ds = _dataset()
    tree = xr.DataTree.from_dict({"/": ds[["count"]], "/sub": ds[["temp"]], "/sub/deeper": ds[["scaled"]],
                                  "/empty": xr.Dataset(attrs={"note": "no variables"})})
    path = str(tmp_path / "tree.zarr")
    tree.to_zarr(path, zarr_format=fmt, consolidated=False)
    got = xr.open_datatree(path, engine=ENGINE)
    ref = xr.open_datatree(path, engine="zarr", consolidated=False)
    xr.testing.assert_identical(got.load(), ref.load())
    assert sorted(xr.open_groups(path, engine=ENGINE)) == ["/", "/empty", "/sub", "/sub/deeper"]
    sub = xr.open_dataset(path, engine=ENGINE, group="sub/deeper")
    xr.testing.assert_identical(sub.load(), xr.open_dataset(path, engine="zarr", group="sub/deeper",
                                                            consolidated=False).load())
