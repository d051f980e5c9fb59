"""Consolidated metadata (v2 .zmetadata, v3 consolidated_metadata): zgpu writes it as zarr-python does, and keeps
it current, so that zarr-python (and xarray), which open a consolidated hierarchy from it alone, see what zgpu adds
or changes below such a group."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import zarr

import zgpu

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # zarr-python: "not part of the v3 spec"


def _zarr_members(path):
    """What zarr-python lists from the consolidated metadata alone (use_consolidated=True fails without it)."""
    g = zarr.open_group(path, mode="r", use_consolidated=True)
    return sorted(name for name, _ in g.members(max_depth=None))


@pytest.mark.parametrize("fmt", [2, 3])
def test_zgpu_array_in_a_zarr_python_consolidated_group(tmp_path, fmt):
    """The issue's user: zarr-python makes and consolidates a group, zgpu adds an array (and a nested group with an
    array), and zarr-python's open_group lists them, with their shapes and attributes, from the consolidated copy."""
    path = str(tmp_path / "g.zarr")
    g = zarr.open_group(path, mode="w", zarr_format=fmt)
    g.create_array("old", shape=(4,), dtype="u2")
    zarr.consolidate_metadata(path)
    assert _zarr_members(path) == ["old"]
    zg = zgpu.open_group(path, mode="r+")
    a = zg.create_array("new", shape=(10, 6), dtype="f4", chunks=(5, 3))
    a[...] = np.arange(60, dtype="f4").reshape(10, 6)
    a.attrs["units"] = "m"
    sub = zg.create_group("sub")
    sub.create_array("deep", shape=(3,), dtype="i8")
    assert _zarr_members(path) == ["new", "old", "sub", "sub/deep"]
    z = zarr.open_group(path, mode="r", use_consolidated=True)
    assert z["new"].shape == (10, 6) and z["new"].attrs["units"] == "m"
    np.testing.assert_array_equal(z["new"][...], np.arange(60, dtype="f4").reshape(10, 6))
    a.resize((12, 6))
    assert zarr.open_group(path, mode="r", use_consolidated=True)["new"].shape == (12, 6)
    # replaced by a group of the same name: its entries go, the group's come
    zgpu.create_group(os.path.join(path, "new"), zarr_format=fmt, overwrite=True)
    assert _zarr_members(path) == ["new", "old", "sub", "sub/deep"]
    z = zarr.open_group(path, mode="r", use_consolidated=True)
    assert isinstance(z["new"], zarr.Group)
    # the group's own attributes keep the consolidated copy (written by zgpu's group handle opened earlier)
    zg.attrs["title"] = "t"
    assert _zarr_members(path) == ["new", "old", "sub", "sub/deep"]
    assert zarr.open_group(path, mode="r", use_consolidated=True).attrs["title"] == "t"


@pytest.mark.parametrize("fmt", [2, 3])
def test_consolidate_like_zarr_python(tmp_path, fmt):
    """zgpu's consolidate_metadata writes what zarr-python's writes for the same hierarchy."""
    ours, theirs = str(tmp_path / "ours.zarr"), str(tmp_path / "theirs.zarr")
    for p in (ours, theirs):
        g = zarr.open_group(p, mode="w", zarr_format=fmt)
        g.attrs["k"] = 1
        g.create_array("a", shape=(4,), dtype="u2", chunks=(2,))
        s = g.create_group("s")
        s.create_array("b", shape=(3, 3), dtype="f4").attrs["x"] = [1, 2]
        s.create_group("t")
    zarr.consolidate_metadata(theirs)
    got = zgpu.consolidate_metadata(ours)
    assert isinstance(got, zgpu.Group)
    doc = "zarr.json" if fmt == 3 else ".zmetadata"
    mine, ref = (json.load(open(os.path.join(p, doc))) for p in (ours, theirs))
    if fmt == 3:
        mine, ref = mine["consolidated_metadata"], ref["consolidated_metadata"]
    assert mine == ref
    assert _zarr_members(ours) == ["a", "s", "s/b", "s/t"]


def test_group_without_consolidated_metadata_untouched(tmp_path):
    path = str(tmp_path / "plain.zarr")
    zgpu.create_group(path)
    zgpu.open_group(path, mode="r+").create_array("a", shape=(3,), dtype="u1")
    assert "consolidated_metadata" not in json.load(open(os.path.join(path, "zarr.json")))
    p2 = str(tmp_path / "plain2.zarr")
    zgpu.create_group(p2, zarr_format=2)
    zgpu.open_group(p2, mode="r+").create_array("a", shape=(3,), dtype="u1")
    assert not os.path.exists(os.path.join(p2, ".zmetadata"))


def test_consolidated_above_a_plain_group(tmp_path):
    """A consolidating group two levels up gets the entries of a node whose parent group does not consolidate."""
    path = str(tmp_path / "top.zarr")
    zgpu.create_group(path).create_group("mid")
    zgpu.consolidate_metadata(path)
    zgpu.open_group(os.path.join(path, "mid"), mode="r+").create_array("leaf", shape=(2, 2), dtype="u1")
    assert _zarr_members(path) == ["mid", "mid/leaf"]
    assert "consolidated_metadata" not in json.load(open(os.path.join(path, "mid", "zarr.json")))


def test_group_handle_older_than_the_consolidation(tmp_path):
    """A group handle opened before zarr-python consolidated the group writes its attributes with the consolidated
    metadata stored now (not its own older document, which had none)."""
    path = str(tmp_path / "g.zarr")
    zg = zgpu.create_group(path)
    zg.create_array("a", shape=(2,), dtype="u1")
    zarr.consolidate_metadata(path)
    zg.attrs["k"] = 2
    assert _zarr_members(path) == ["a"]
    assert zarr.open_group(path, mode="r", use_consolidated=True).attrs["k"] == 2


def test_members_added_at_once_all_kept(tmp_path):
    """Writers adding members side by side update the group's consolidated copy under its write lock: none is
    lost."""
    import threading
    path = str(tmp_path / "g.zarr")
    zgpu.create_group(path)
    zgpu.consolidate_metadata(path)
    names = ["m%02d" % i for i in range(16)]
    errors = []

    def add(n):
        try:
            zgpu.create(os.path.join(path, n), shape=(4,), dtype="u1")
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=add, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _zarr_members(path) == names


def test_unreadable_parent_document_is_no_group(tmp_path):
    """A directory above whose zarr.json does not parse is no group: creating an array below it still works."""
    top = tmp_path / "top"
    top.mkdir()
    (top / "zarr.json").write_text("{not json")
    a = zgpu.create(str(top / "a.zarr"), shape=(3,), dtype="u1")
    a[...] = 5
    np.testing.assert_array_equal(zgpu.open(str(top / "a.zarr"))[...], [5, 5, 5])
