"""zgpu.ome: OME-Zarr 0.4 and 0.5 multiscale images (axes, units, levels, scale and translation), written here the
way the OME-NGFF specification's examples lay them out."""
from __future__ import annotations

import numpy as np
import pytest
import zarr

import zgpu

AXES = [{"name": "c", "type": "channel"}, {"name": "z", "type": "space", "unit": "micrometer"},
        {"name": "y", "type": "space", "unit": "micrometer"}, {"name": "x", "type": "space", "unit": "micrometer"}]


def _image(path, version, multiscales=None, levels=3, omero=None, extra_levels=None):
    fmt = 3 if version == "0.5" else 2
    g = zarr.open_group(str(path), mode="w", zarr_format=fmt)
    data = []
    for k in range(levels):
        shape = (2, 8 >> k, 16 >> k, 16 >> k)
        a = g.create_array(str(k), shape=shape, dtype="u2", chunks=(1, 4, 8, 8))
        v = (np.arange(np.prod(shape), dtype="u2") * (k + 1)).reshape(shape)
        a[...] = v
        data.append(v)
    if multiscales is None:
        multiscales = [{
            "name": "cells", "axes": AXES,
            "datasets": [{"path": str(k), "coordinateTransformations": [
                {"type": "scale", "scale": [1.0, 0.5 * 2 ** k, 0.25 * 2 ** k, 0.25 * 2 ** k]},
                {"type": "translation", "translation": [0.0, 0.25 * (2 ** k - 1), 0.0, 1.5]}]} for k in range(levels)],
            "coordinateTransformations": [{"type": "scale", "scale": [1.0, 2.0, 2.0, 2.0]}],
        }]
    if version == "0.5":
        ome = {"version": "0.5", "multiscales": multiscales}
        if omero:
            ome["omero"] = omero
        g.attrs["ome"] = ome
    else:
        for m in multiscales:
            m.setdefault("version", "0.4")
        g.attrs["multiscales"] = multiscales
        if omero:
            g.attrs["omero"] = omero
    return data


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_levels_axes_transforms(tmp_path, version):
    data = _image(tmp_path / "img.zarr", version, omero={"channels": [{"label": "dna"}, {"label": "actin"}]})
    img = zgpu.ome.open(tmp_path / "img.zarr")
    assert img.version == version and img.name == "cells" and len(img) == 3
    assert [a.name for a in img.axes] == ["c", "z", "y", "x"]
    assert img.axes[0] == zgpu.ome.Axis("c", "channel", None)
    assert img.axes[1] == zgpu.ome.Axis("z", "space", "micrometer")
    assert [lv.path for lv in img.levels] == ["0", "1", "2"]
    assert [lv.shape for lv in img.levels] == [(2, 8, 16, 16), (2, 4, 8, 8), (2, 2, 4, 4)]
    # the multiscale's scale [1, 2, 2, 2] after each dataset's: scale 2 * s, translation 2 * t + 0
    assert img.levels[0].scale == (1.0, 1.0, 0.5, 0.5)
    assert img.levels[2].scale == (1.0, 4.0, 2.0, 2.0)
    assert img.levels[2].translation == (0.0, 1.5, 0.0, 3.0)
    for k in range(3):
        np.testing.assert_array_equal(img[k][...], data[k])
    assert img.omero["channels"][1]["label"] == "actin"
    assert "OME-NGFF " + version in repr(img)


def test_second_multiscale_and_nested_paths(tmp_path):
    path = tmp_path / "img.zarr"
    _image(path, "0.4")
    g = zarr.open_group(str(path), mode="r+")
    g.create_group("labels").create_array("0", shape=(2, 8, 16, 16), dtype="u4")
    ms = g.attrs["multiscales"]
    ms.append({"version": "0.4", "axes": AXES, "datasets": [
        {"path": "labels/0", "coordinateTransformations": [{"type": "scale", "scale": [1, 1, 1, 1]}]}]})
    g.attrs["multiscales"] = ms
    img = zgpu.ome.open(path, multiscale=1)
    assert len(img) == 1 and img.levels[0].path == "labels/0" and img[0].dtype == np.dtype("u4")
    assert img.levels[0].translation == (0.0, 0.0, 0.0, 0.0) and img.name is None
    with pytest.raises(IndexError):
        zgpu.ome.open(path, multiscale=2)


def _broken(tmp_path, mutate):
    path = tmp_path / "bad.zarr"
    _image(path, "0.5", levels=2)
    g = zarr.open_group(str(path), mode="r+")
    ome = g.attrs["ome"]
    mutate(ome["multiscales"][0], ome)
    g.attrs["ome"] = ome
    with pytest.raises(zgpu.BadMetadataError) as ei:
        zgpu.ome.open(path)
    assert "bad.zarr" in str(ei.value)
    return str(ei.value)


@pytest.mark.parametrize("mutate, says", [
    (lambda m, o: m["axes"].pop(), "3 numbers"),
    (lambda m, o: (m["axes"].pop(), m.pop("coordinateTransformations"),
                   [d.update(coordinateTransformations=[{"type": "scale", "scale": [1, 1, 1]}]) for d in m["datasets"]]),
     "4 dimensions, the image 3 axes"),
    (lambda m, o: m["datasets"][1].update(path="9"), "no array"),
    (lambda m, o: m["datasets"][0].update(coordinateTransformations=[{"type": "translation", "translation": [0] * 4}]),
     "a scale, then"),
    (lambda m, o: m["datasets"][0]["coordinateTransformations"][0].update(scale=[1, 2]), "4 numbers"),
    (lambda m, o: m["datasets"][0]["coordinateTransformations"][0].update(scale=[1, 2, "x", 4]), "finite"),
    (lambda m, o: m["datasets"][0]["coordinateTransformations"][0].update(path="s.bin"), "not supported"),
    (lambda m, o: m["axes"].__setitem__(1, {"name": "y"}), "unique"),
    (lambda m, o: m["datasets"][0].update(path="../escape"), "inside the image"),
    (lambda m, o: m.update(datasets=[]), "non-empty"),
    (lambda m, o: o.update(version="0.6"), "not supported"),
])
def test_broken_metadata(tmp_path, mutate, says):
    assert says in _broken(tmp_path, mutate)


def test_not_an_image(tmp_path):
    zgpu.create_group(str(tmp_path / "g.zarr"))
    with pytest.raises(zgpu.BadMetadataError, match="no 'multiscales'"):
        zgpu.ome.open(tmp_path / "g.zarr")
