"""An xarray backend (issue 21): ``xr.open_dataset(path, engine="zgpu")`` opens a Zarr group (v2 or v3, local or
remote) with zgpu, lazily: a variable's values are read (through zgpu's batched reads, orthogonal and vectorised
indexing included) when they are needed. Dimensions come from ``dimension_names`` (v3) or xarray's
``_ARRAY_DIMENSIONS`` attribute (v2); CF conventions are decoded by xarray as for its own Zarr backend (v2: the
array's fill value masks, v3: only a ``_FillValue`` attribute does, as xarray's ``use_zarr_fill_value_as_mask``
defaults). ``chunks=`` gives Dask arrays as for any backend (``chunks={}``: the stored grid, shards where the array
is sharded). ``device="cuda"`` gives CuPy-backed data variables (the cupy-xarray convention), read into GPU memory
as the dataset opens (straight from zgpu where no CF decoding applies to them, else decoded on the host first);
coordinates stay in NumPy, which xarray's indexes need.

The entry point is registered under ``xarray.backends`` when the package is installed; without it, pass
``engine=zgpu.xarray.ZgpuBackendEntrypoint``.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Optional, Tuple

import numpy as np
from xarray import Variable
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.backends.common import AbstractDataStore
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing

from .array import Array
from .group import Group, open_node

__all__ = ["ZgpuBackendEntrypoint", "ZgpuDataStore"]

_DIMS_ATTR = "_ARRAY_DIMENSIONS"  # xarray's dimension names on Zarr v2


class ZgpuBackendArray(BackendArray):
    """A zgpu array as xarray reads it: basic, outer (oindex) and vectorised (vindex) indexing, all in zgpu."""

    def __init__(self, array: Array) -> None:
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> Any:
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.VECTORIZED, self._raw)

    def _raw(self, key: Any) -> Any:
        if isinstance(key, indexing.VectorizedIndexer):
            return self.array.vindex[key.tuple]
        if isinstance(key, indexing.OuterIndexer):
            return self.array.oindex[key.tuple]
        t = key.tuple if hasattr(key, "tuple") else key
        return np.asarray(self.array[t])


def _dims(name: str, a: Array, attrs: Dict[str, Any]) -> Tuple[str, ...]:
    dims = attrs.pop(_DIMS_ATTR, None)
    if dims is None:
        dims = a.metadata.get("dimension_names") if a.zarr_format == 3 else None
    if dims is None or any(d is None for d in dims):
        raise ValueError("zgpu backend: array %r has no dimension names (v3 dimension_names, or the %s attribute "
                         "xarray writes on v2): xarray cannot place it" % (name, _DIMS_ATTR))
    dims = tuple(dims)
    if len(dims) != a.ndim:
        raise ValueError("zgpu backend: array %r has %d dimensions but %d dimension names %r"
                         % (name, a.ndim, len(dims), dims))
    return dims


class ZgpuDataStore(AbstractDataStore):
    """A zgpu group as an xarray data store: its arrays (direct members) are the variables."""

    def __init__(self, group: Group) -> None:
        self.group = group

    def get_variables(self) -> Dict[str, Variable]:
        """The group's arrays as lazily indexed xarray variables, their dimension names from the metadata."""
        out = {}
        for name in self.group.array_keys():
            a = self.group[name]
            attrs = dict(a.attrs)
            dims = _dims(name, a, attrs)
            encoding: Dict[str, Any] = {"chunks": a.chunks, "preferred_chunks": dict(zip(dims, a.shards or a.chunks))}
            # (xarray's Zarr backend on v2: the fill value masks, unless it is null)
            if a.zarr_format == 2 and a.metadata.get("fill_value") is not None and "_FillValue" not in attrs:
                attrs["_FillValue"] = a.fill_value
            data = indexing.LazilyIndexedArray(ZgpuBackendArray(a))
            out[name] = Variable(dims, data, attrs, encoding)
        return out

    def get_attrs(self) -> Dict[str, Any]:
        """The group's attributes."""
        return dict(self.group.attrs)

    def get_dimensions(self) -> Dict[str, int]:
        """Every dimension name of the variables, with its length."""
        dims: Dict[str, int] = {}
        for v in self.get_variables().values():
            dims.update(zip(v.dims, v.shape))
        return dims

    def close(self) -> None:
        """Closes the group."""
        self.group.close()


class ZgpuBackendEntrypoint(BackendEntrypoint):
    """``engine="zgpu"``: Zarr groups read with zgpu (see the module's docstring)."""

    description = "Open Zarr v2 / v3 groups with zgpu (host or GPU memory)"
    url = "https://github.com/zgpu/zgpu"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "mask_and_scale", "decode_times",
                               "concat_characters", "decode_coords", "use_cftime", "decode_timedelta", "device",
                               "group")
    supports_groups = True

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """True for a path ending in .zarr (xarray asks each backend when no engine is given)."""
        try:
            p = os.fspath(filename_or_obj)
        except TypeError:
            return False
        return isinstance(p, str) and p.rstrip("/").endswith(".zarr")

    def open_dataset(self, filename_or_obj: Any, *, drop_variables: Optional[Iterable[str]] = None,
                     mask_and_scale: bool = True, decode_times: bool = True, concat_characters: bool = True,
                     decode_coords: bool = True, use_cftime: Any = None, decode_timedelta: Any = None,
                     device: Any = None, group: Optional[str] = None) -> Any:
        """The Zarr group at `filename_or_obj` (or its member group `group`, a path such as "a/b") as an xarray
        Dataset, its arrays the variables, read with zgpu; xarray's decoding options as its zarr engine.
        device="cuda" (or a GPU index) reads the data variables into GPU memory as CuPy arrays."""
        decode = dict(drop_variables=drop_variables, mask_and_scale=mask_and_scale, decode_times=decode_times,
                      concat_characters=concat_characters, decode_coords=decode_coords, use_cftime=use_cftime,
                      decode_timedelta=decode_timedelta)
        return _dataset(_open_group(filename_or_obj, group), device, decode)

    def open_groups_as_dict(self, filename_or_obj: Any, *, drop_variables: Optional[Iterable[str]] = None,
                            mask_and_scale: bool = True, decode_times: bool = True, concat_characters: bool = True,
                            decode_coords: bool = True, use_cftime: Any = None, decode_timedelta: Any = None,
                            device: Any = None, group: Optional[str] = None) -> Dict[str, Any]:
        """Every group of the hierarchy at `filename_or_obj` (below `group`, if given) as a Dataset, by path ("/"
        the root, "/a/b" below it), as xarray.open_groups asks; decoding options and device as open_dataset."""
        decode = dict(drop_variables=drop_variables, mask_and_scale=mask_and_scale, decode_times=decode_times,
                      concat_characters=concat_characters, decode_coords=decode_coords, use_cftime=use_cftime,
                      decode_timedelta=decode_timedelta)
        root = _open_group(filename_or_obj, group)
        out = {"/": _dataset(root, device, decode)}
        for name, node in root.members(max_depth=None):
            if isinstance(node, Group):
                out["/" + name] = _dataset(node, device, decode)
        return out

    def open_datatree(self, filename_or_obj: Any, **kwargs: Any) -> Any:
        """The hierarchy at `filename_or_obj` as an xarray DataTree (xr.open_datatree(path, engine="zgpu")): a
        node a group, its arrays the node's variables; keywords as open_groups_as_dict."""
        from xarray import DataTree
        return DataTree.from_dict(self.open_groups_as_dict(filename_or_obj, **kwargs))


def _open_group(filename_or_obj: Any, group: Optional[str]) -> Group:
    path = os.fspath(filename_or_obj)
    if group:
        path = path.rstrip("/") + "/" + group.strip("/")
    node = open_node(path, True)
    if not isinstance(node, Group):
        raise ValueError("zgpu backend: %r is an array; xarray opens a group (its arrays are the variables)"
                         % (path,))
    return node


def _dataset(node: Group, device: Any, decode: Dict[str, Any]) -> Any:
    store = ZgpuDataStore(node)
    ds = StoreBackendEntrypoint().open_dataset(store, **decode)
    ds.set_close(store.close)
    if device is not None:
        ds.encoding["zgpu_device"] = device
        ds = _to_device(ds, device)
    return ds


def _to_device(ds: Any, device: Any) -> Any:
    """Every data variable read into GPU memory as a CuPy array (coordinates stay NumPy: xarray indexes them)."""
    import cupy
    out = ds.copy()
    for name, var in ds.data_vars.items():
        a = var.variable._data
        whole = isinstance(a, indexing.LazilyIndexedArray) and all(k == slice(None) for k in a.key.tuple)
        if whole and isinstance(a.array, ZgpuBackendArray):
            # undecoded and unindexed: straight from zgpu into GPU memory
            data = cupy.asarray(a.array.array.read(device=device))
        else:  # (CF decoding wrapped it: decoded on the host first)
            data = cupy.asarray(np.asarray(var.values))
        out[name] = var.copy(data=data)
    return out
