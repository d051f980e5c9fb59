"""OME-Zarr multiscale images (OME-NGFF 0.4 on Zarr v2 or v3, 0.5 on Zarr v3).

``zgpu.ome.open(path)`` reads an image group's ``multiscales`` metadata (0.4: the group's attributes; 0.5: under
their ``"ome"`` key) and opens its resolution levels as :class:`zgpu.Array` objects, with the axes (name, type,
unit) and each level's scale and translation: the per-dataset transformations composed with the multiscale's own,
so that ``physical = index * scale + translation`` on every axis. Metadata that breaks the specification (an axis
count other than the levels' dimensions, a transformation list not ``[scale]`` or ``[scale, translation]``, a
missing level) is a :class:`zgpu.BadMetadataError` naming the image and what is wrong.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .array import Array
from .errors import BadMetadataError, NotFoundError
from .group import Group, open_node

__all__ = ["open", "Image", "Level", "Axis"]


@dataclass(frozen=True)
class Axis:
    """One axis of an image: its name, type ("space", "time", "channel", another string, or None) and unit."""

    name: str
    type: Optional[str]
    unit: Optional[str]


@dataclass(frozen=True)
class Level:
    """One resolution level: its dataset path in the image group, its array, and its voxel size and offset in the
    axes' units (physical coordinate = index * scale + translation, per axis)."""

    path: str
    array: Array
    scale: Tuple[float, ...]
    translation: Tuple[float, ...]

    @property
    def shape(self) -> Tuple[int, ...]:
        """The level's array shape."""
        return self.array.shape


class Image:
    """An OME-Zarr multiscale image: ``levels`` from the finest (0) to the coarsest, ``axes``, ``version``,
    ``name``, ``omero`` (the rendering metadata, a dict, or None) and ``group`` (the image's zgpu.Group).
    ``image[k]`` is level k's array; ``len(image)`` the number of levels."""

    def __init__(self, group: Group, version: str, name: Optional[str], axes: Tuple[Axis, ...],
                 levels: Tuple[Level, ...], omero: Optional[Dict[str, Any]]) -> None:
        self.group = group
        self.version = version
        self.name = name
        self.axes = axes
        self.levels = levels
        self.omero = omero

    @property
    def path(self) -> str:
        """Path of the image's group."""
        return self.group.path

    def __len__(self) -> int:
        return len(self.levels)

    def __getitem__(self, k: int) -> Array:
        return self.levels[k].array

    def __repr__(self) -> str:
        return "<zgpu.ome.Image %r OME-NGFF %s, axes %s, %d levels %s>" % (
            self.path, self.version, "".join(a.name for a in self.axes), len(self.levels),
            " ".join("x".join(map(str, lv.shape)) for lv in self.levels))


def _bad(path: str, what: str) -> BadMetadataError:
    return BadMetadataError("OME-Zarr image '%s': %s" % (path, what))


def _numbers(path: str, where: str, v: Any, n: int) -> Tuple[float, ...]:
    if not isinstance(v, list) or len(v) != n:
        raise _bad(path, "%s must be a list of %d numbers (one per axis), got %r" % (where, n, v))
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise _bad(path, "%s must hold finite numbers, got %r" % (where, v))
        out.append(float(x))
    return tuple(out)


def _transforms(path: str, where: str, v: Any, n: int, required: bool) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
    """(scale, translation) of a coordinateTransformations list: [scale] or [scale, translation] (OME-NGFF 0.4 and
    0.5: exactly one scale, first; at most one translation, after it)."""
    if v is None and not required:
        return (1.0,) * n, (0.0,) * n
    if not isinstance(v, list) or not 1 <= len(v) <= 2 or not all(isinstance(t, dict) for t in v):
        raise _bad(path, "%s: coordinateTransformations must be [scale] or [scale, translation], got %r" % (where, v))
    kinds = [t.get("type") for t in v]
    if kinds not in (["scale"], ["scale", "translation"]):
        raise _bad(path, "%s: coordinateTransformations must be a scale, then optionally a translation, got types %r"
                   % (where, kinds))
    for t in v:
        if "path" in t:
            raise _bad(path, "%s: a %s stored in a file ('path') is not supported" % (where, t["type"]))
    scale = _numbers(path, where + " scale", v[0].get("scale"), n)
    translation = _numbers(path, where + " translation", v[1].get("translation"), n) if len(v) == 2 else (0.0,) * n
    return scale, translation


def _axes(path: str, v: Any) -> Tuple[Axis, ...]:
    if not isinstance(v, list) or not v:
        raise _bad(path, "axes must be a non-empty list, got %r" % (v,))
    axes = []
    for a in v:
        if isinstance(a, str):  # (OME-NGFF 0.3 wrote bare names; 0.4 readers accept them)
            a = {"name": a}
        if not isinstance(a, dict) or not isinstance(a.get("name"), str) or not a["name"]:
            raise _bad(path, "every axis needs a name, got %r" % (a,))
        typ, unit = a.get("type"), a.get("unit")
        if typ is not None and not isinstance(typ, str) or unit is not None and not isinstance(unit, str):
            raise _bad(path, "axis %r: type and unit must be strings, got %r" % (a["name"], a))
        axes.append(Axis(a["name"], typ, unit))
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise _bad(path, "axis names must be unique, got %r" % (names,))
    return tuple(axes)


def _multiscales(group: Group) -> Tuple[str, List[Any], Optional[Dict[str, Any]]]:
    """(version, multiscales list, omero) from the group's attributes: 0.5 under "ome", 0.4 at the top."""
    attrs = dict(group.attrs)
    ome = attrs.get("ome")
    if isinstance(ome, dict) and "multiscales" in ome:
        version = ome.get("version")
        if not isinstance(version, str):
            raise _bad(group.path, "'ome' must name its version, got %r" % (version,))
        return version, ome["multiscales"], ome.get("omero")
    ms = attrs.get("multiscales")
    if ms is None:
        raise _bad(group.path, "the group has no 'multiscales' metadata (neither OME-NGFF 0.5's 'ome' attribute "
                   "nor 0.4's 'multiscales')")
    first = ms[0] if isinstance(ms, list) and ms and isinstance(ms[0], dict) else {}
    version = first.get("version", "0.4")
    return str(version), ms, attrs.get("omero")


def open(path: Any, *, multiscale: int = 0, mode: str = "r") -> Image:  # noqa: A001
    """Opens the OME-Zarr image (multiscale group) at `path`: its `multiscale`-th multiscales entry (the first by
    default), with every level's array opened (mode "r" or "r+")."""
    group = Group._open(os.fspath(path), read_only=(mode == "r"))
    p = group.path
    version, ms, omero = _multiscales(group)
    if version not in ("0.4", "0.5"):
        raise _bad(p, "OME-NGFF version %r is not supported (0.4 and 0.5 are)" % (version,))
    if not isinstance(ms, list) or not ms:
        raise _bad(p, "multiscales must be a non-empty list, got %r" % (ms,))
    if not 0 <= multiscale < len(ms):
        raise IndexError("image '%s' has %d multiscales, not %d" % (p, len(ms), multiscale + 1))
    m = ms[multiscale]
    if not isinstance(m, dict):
        raise _bad(p, "a multiscales entry must be an object, got %r" % (m,))
    axes = _axes(p, m.get("axes"))
    n = len(axes)
    g_scale, g_trans = _transforms(p, "the multiscale's", m.get("coordinateTransformations"), n, required=False)
    datasets = m.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        raise _bad(p, "datasets must be a non-empty list, got %r" % (datasets,))
    levels = []
    for i, d in enumerate(datasets):
        dpath = d.get("path") if isinstance(d, dict) else None
        if not isinstance(dpath, str) or not dpath or dpath.startswith("/") or ".." in dpath.split("/"):
            raise _bad(p, "dataset %d: path must name an array inside the image, got %r" % (i, dpath))
        where = "dataset '%s'" % dpath
        scale, trans = _transforms(p, where, d.get("coordinateTransformations"), n, required=True)
        try:
            arr = open_node(os.path.join(p, dpath), group.read_only)
        except NotFoundError as e:
            raise _bad(p, "%s: no array there" % where) from e
        if not isinstance(arr, Array):
            raise _bad(p, "%s is a group, not an array" % where)
        if arr.ndim != n:
            raise _bad(p, "%s has %d dimensions, the image %d axes (%s)" % (where, arr.ndim, n,
                                                                             ", ".join(a.name for a in axes)))
        # the multiscale's transformations apply after the dataset's: x = g_s * (s * i + t) + g_t
        levels.append(Level(dpath, arr, tuple(gs * s for gs, s in zip(g_scale, scale)),
                            tuple(gs * t + gt for gs, t, gt in zip(g_scale, trans, g_trans))))
    name = m.get("name")
    return Image(group, version, name if isinstance(name, str) else None, axes, tuple(levels),
                 omero if isinstance(omero, dict) else None)
