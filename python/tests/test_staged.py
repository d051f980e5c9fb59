"""mode="w" / overwrite=True arrays are staged: built beside the path, swapped in whole when committed (close(),
a with block that does not raise, garbage collection, interpreter exit); discarded when a with block raises."""
from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import zgpu


def hidden(parent):
    return sorted(e for e in os.listdir(parent) if ".zgpu-" in e)


def test_overwrite_is_invisible_until_close(tmp_path):
    p = tmp_path / "a"
    old = np.arange(24, dtype=np.int32).reshape(4, 6)
    with zgpu.create(p, shape=old.shape, dtype=old.dtype, chunks=(2, 3)) as a:
        a[...] = old
    a = zgpu.create(p, shape=(5, 6), dtype="int32", chunks=(2, 3), fill_value=-1, overwrite=True)
    a[:2] = 7
    np.testing.assert_array_equal(a[:2], np.full((2, 6), 7, np.int32))  # the staged handle reads its writes
    assert a.shape == (5, 6)
    reader = zgpu.open_array(p)
    np.testing.assert_array_equal(reader[...], old)  # others still see the old array
    assert len(hidden(tmp_path)) == 2  # the stage and its lock
    a.close()
    want = np.full((5, 6), -1, np.int32)
    want[:2] = 7
    np.testing.assert_array_equal(zgpu.open_array(p)[...], want)
    assert hidden(tmp_path) == []


def test_with_block_commits_or_discards(tmp_path):
    p = tmp_path / "b"
    with zgpu.open(p, mode="w", shape=(8,), dtype="uint8", chunks=(4,)) as a:
        a[...] = 3
        assert zgpu.group.node_kind(str(p)) == 0  # a new path: nothing there until the commit
    np.testing.assert_array_equal(zgpu.open_array(p)[...], np.full(8, 3, np.uint8))
    with pytest.raises(RuntimeError, match="boom"):
        with zgpu.open(p, mode="w", shape=(8,), dtype="uint8", chunks=(4,)) as a:
            a[...] = 9
            raise RuntimeError("boom")
    np.testing.assert_array_equal(zgpu.open_array(p)[...], np.full(8, 3, np.uint8))
    assert hidden(tmp_path) == []


def test_garbage_collection_commits(tmp_path):
    p = tmp_path / "c"
    zgpu.create(p, shape=(4,), dtype="int16", chunks=(2,), fill_value=1).close()

    def write():
        a = zgpu.create(p, shape=(6,), dtype="int16", chunks=(2,), overwrite=True)
        a[...] = np.arange(6, dtype=np.int16)
        a.attrs["k"] = "v"  # metadata of a staged array waits for the commit
        a.resize(5)

    write()
    gc.collect()
    b = zgpu.open_array(p)
    np.testing.assert_array_equal(b[...], np.arange(5, dtype=np.int16))
    assert dict(b.attrs) == {"k": "v"}
    assert hidden(tmp_path) == []


def test_zarr_python_sees_old_then_new(tmp_path, zarr):
    p = tmp_path / "z"
    old = np.arange(100, dtype=np.float64)
    zarr.create_array(str(p), shape=old.shape, dtype=old.dtype, chunks=(10,))[...] = old
    a = zgpu.open(p, mode="w", shape=(100,), dtype="float64", chunks=(25,))
    a[...] = old * 2
    np.testing.assert_array_equal(zarr.open_array(str(p), mode="r")[...], old)
    a.close()
    np.testing.assert_array_equal(zarr.open_array(str(p), mode="r")[...], old * 2)


def test_staged_array_in_a_group_is_not_a_member(tmp_path, zarr):
    g = zgpu.create_group(tmp_path / "g")
    a = g.create_array("x", shape=(4,), dtype="int8", overwrite=True)
    a[...] = 1
    assert g.array_keys() == []
    assert list(zarr.open_group(str(tmp_path / "g"), mode="r").array_keys()) == []
    a.close()
    assert g.array_keys() == ["x"]


def test_group_overwrite_replaces_members(tmp_path):
    g = zgpu.create_group(tmp_path / "g", attributes={"v": 1})
    g.create_array("m", shape=(2,), dtype="int8").close()
    with pytest.raises(zgpu.ExistsError):
        zgpu.create_group(tmp_path / "g")
    g2 = zgpu.create_group(tmp_path / "g", zarr_format=2, attributes={"v": 2}, overwrite=True)
    assert g2.array_keys() == []
    assert dict(zgpu.open_group(tmp_path / "g").attrs) == {"v": 2}
    assert hidden(tmp_path) == []


def test_interpreter_exit(tmp_path):
    """A normal exit commits a staged array still open; an unhandled exception discards it."""
    p = tmp_path / "e"
    zgpu.create(p, shape=(3,), dtype="int32", fill_value=5).close()
    code = ("import zgpu, sys\n"
            "a = zgpu.open(%r, mode='w', shape=(3,), dtype='int32', fill_value=0)\n"
            "a[...] = [1, 2, 3]\n"
            "if sys.argv[1] == 'raise':\n"
            "    raise KeyError('unhandled')\n"
            "if sys.argv[1] == 'exit':\n"
            "    sys.exit(3)\n") % str(p)
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code, "raise"], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "unhandled" in r.stderr
    np.testing.assert_array_equal(zgpu.open_array(p)[...], [5, 5, 5])
    r = subprocess.run([sys.executable, "-c", code, "exit"], capture_output=True, text=True, env=env)
    assert r.returncode == 3, r.stderr
    np.testing.assert_array_equal(zgpu.open_array(p)[...], [1, 2, 3])
    assert hidden(tmp_path) == []
