"""zgpu.Group: a Zarr v2/v3 group, its attributes and its members."""
from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _capi
from ._capi import lib
from ._context import Context, config
from .array import Array
from .attrs import Attributes, dumps
from .errors import InvalidArgumentError, MemberNotFoundError, ReadOnlyError

ARRAY, GROUP = 1, 2


def node_kind(path: Any) -> int:
    """What is at `path` (a URL is reached with zgpu.config's remote settings): 1 array, 2 group, 0 nothing."""
    k = ctypes.c_int()
    _capi.check(lib.zgpu_context_node_kind(config.context().handle, _capi.path_bytes(path), ctypes.byref(k)))
    return k.value


def open_node(path: Any, read_only: bool) -> Union[Array, "Group"]:
    """Whatever is at `path`, its metadata read once (one request on a remote store): an Array or a Group.
    Nothing there: NotFoundError."""
    ctx = config.context()
    ha, hg = ctypes.c_void_p(), ctypes.c_void_p()
    _capi.check(lib.zgpu_context_open_node(ctx.handle, _capi.path_bytes(path), ctypes.byref(ha), ctypes.byref(hg)))
    if ha.value:
        return Array(ha, ctx, read_only)
    return Group(hg, ctx, os.fspath(path), read_only)


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError("member names are non-empty strings, got %r" % (name,))
    parts = name.strip("/").split("/")
    if name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError("invalid member name %r" % (name,))
    return "/".join(parts)


class Group:
    """A Zarr group. ``g[name]`` opens a member (nested names like "a/b" work), ``name in g`` tests one,
    iterating gives member names (sorted)."""

    def __init__(self, handle: ctypes.c_void_p, ctx: Context, path: str, read_only: bool = False) -> None:
        self._handle = handle
        self._ctx = ctx
        self._path = os.fspath(path)
        self._read_only = read_only

    @classmethod
    def _open(cls, path: Any, read_only: bool = False, ctx: Optional[Context] = None) -> "Group":
        ctx = ctx or config.context()
        h = ctypes.c_void_p()
        _capi.check(lib.zgpu_group_open(ctx.handle, _capi.path_bytes(path), ctypes.byref(h)))
        return cls(h, ctx, os.fspath(path), read_only)

    @classmethod
    def _create(cls, path: Any, zarr_format: int = 3, attributes: Optional[Dict[str, Any]] = None,
                overwrite: bool = False) -> "Group":
        if zarr_format not in (2, 3):
            raise ValueError("zarr_format must be 2 or 3, got %r" % (zarr_format,))
        ctx = config.context()
        h = ctypes.c_void_p()
        attrs = dumps(dict(attributes)).encode() if attributes else None
        _capi.check(lib.zgpu_group_create(ctx.handle, _capi.path_bytes(path), zarr_format, attrs,
                                          1 if overwrite else 0, ctypes.byref(h)))
        return cls(h, ctx, os.fspath(path), False)

    def close(self) -> None:
        """Closes the C handle now (otherwise done when the object is garbage collected)."""
        h, self._handle = self._handle, None
        if h is not None and h.value:
            lib.zgpu_group_close(h)

    def __del__(self) -> None:
        h = getattr(self, "_handle", None)
        if h is not None and h.value and not sys.is_finalizing():
            try:
                lib.zgpu_group_close(h)
            except Exception:
                pass

    def __enter__(self) -> "Group":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _h(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise InvalidArgumentError("group %r is closed" % self._path)
        return self._handle

    @property
    def path(self) -> str:
        """The path or URL the group was opened at."""
        return self._path

    @property
    def zarr_format(self) -> int:
        """Zarr format of the group: 2 or 3."""
        return lib.zgpu_group_zarr_format(self._h())

    @property
    def read_only(self) -> bool:
        """Whether the group was opened read-only (mode="r")."""
        return self._read_only

    @property
    def attrs(self) -> Attributes:
        """Attributes (a MutableMapping, written to storage at every change)."""
        return Attributes(lambda: _capi.call_string(lib.zgpu_group_attributes, self._h()),
                          lambda text: _capi.check(lib.zgpu_group_set_attributes(self._h(), text.encode())),
                          self._read_only)

    def _member_list(self) -> List[Dict[str, str]]:
        return json.loads(_capi.call_string(lib.zgpu_group_members, self._h()))

    def _child(self, name: str) -> str:
        return os.path.join(self._path, _check_name(name))

    def __getitem__(self, name: str) -> Union[Array, "Group"]:
        path = self._child(name)
        kind = node_kind(path)
        if kind == ARRAY:
            return Array._open(path, self._read_only, self._ctx)
        if kind == GROUP:
            return Group._open(path, self._read_only)
        raise _capi.make_error(_capi.ERR_NOT_FOUND, "group %r has no member %r" % (self._path, name),
                               MemberNotFoundError)

    def get(self, name: str, default: Any = None) -> Any:
        """The member `name`, or `default` when there is none."""
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            return node_kind(self._child(name)) != 0
        except ValueError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._member_list())

    def keys(self) -> List[str]:
        """Member names, sorted."""
        return [m["name"] for m in self._member_list()]

    def array_keys(self) -> List[str]:
        """Names of the member arrays, sorted."""
        return [m["name"] for m in self._member_list() if m["kind"] == "array"]

    def group_keys(self) -> List[str]:
        """Names of the member groups, sorted."""
        return [m["name"] for m in self._member_list() if m["kind"] == "group"]

    def members(self, max_depth: Optional[int] = 0) -> Tuple[Tuple[str, Union[Array, "Group"]], ...]:
        """(name, Array | Group) pairs of the members, sorted by name (``dict(g.members())`` gives a name -> node
        mapping). max_depth as zarr-python's: 0 (default) the direct members, k also the members of member groups
        down to k levels below them, None every node below this group; deeper names are paths ("sub/name")."""
        if max_depth is not None and (isinstance(max_depth, bool) or int(max_depth) < 0):
            raise ValueError("max_depth must be None or an integer >= 0, got %r" % (max_depth,))
        out: List[Tuple[str, Union[Array, "Group"]]] = []
        for m in self._member_list():
            node = self[m["name"]]
            out.append((m["name"], node))
            if isinstance(node, Group) and (max_depth is None or max_depth > 0):
                below = node.members(None if max_depth is None else max_depth - 1)
                out += [(m["name"] + "/" + n, child) for n, child in below]
        return tuple(sorted(out, key=lambda kv: kv[0]))

    def tree(self, expand: Optional[bool] = None, level: Optional[int] = None) -> "Tree":
        """The hierarchy below this group as text, as zarr-python's ``Group.tree()`` prints it: the group as "/",
        then each member, groups by name and arrays as "name shape dtype", children indented under their group
        with box-drawing branches. level: as zarr-python's, the max_depth of the members shown (0: the direct
        members; None: all); expand: accepted for zarr-python's signature (the text is always expanded)."""
        del expand
        lines = ["/"]

        def walk(g: "Group", prefix: str, depth: int) -> None:
            members = g.members()
            for i, (name, node) in enumerate(members):
                last = i == len(members) - 1
                label = name if isinstance(node, Group) else "%s %s %s" % (name, tuple(node.shape), node.dtype)
                lines.append(prefix + ("└── " if last else "├── ") + label)
                if isinstance(node, Group) and (level is None or depth < level):
                    walk(node, prefix + ("    " if last else "│   "), depth + 1)

        walk(self, "", 0)
        return Tree("\n".join(lines) + "\n")

    def has_consolidated_metadata(self) -> bool:
        """True if the group holds consolidated metadata (v3: in its zarr.json; v2: a .zmetadata)."""
        has = ctypes.c_int()
        _capi.check(lib.zgpu_group_has_consolidated(self._h(), ctypes.byref(has)))
        return bool(has.value)

    def arrays(self) -> Tuple[Tuple[str, Array], ...]:
        """(name, Array) pairs of the member arrays."""
        return tuple((n, self[n]) for n in self.array_keys())  # type: ignore[misc]

    def groups(self) -> Tuple[Tuple[str, "Group"], ...]:
        """(name, Group) pairs of the member groups."""
        return tuple((n, self[n]) for n in self.group_keys())  # type: ignore[misc]

    def create_group(self, name: str, *, attributes: Optional[Dict[str, Any]] = None,
                     overwrite: bool = False) -> "Group":
        """Creates a member group (same Zarr format as this one)."""
        if self._read_only:
            raise ReadOnlyError("group %r was opened read-only (mode='r')" % self._path)
        return Group._create(self._child(name), self.zarr_format, attributes, overwrite)

    def require_group(self, name: str) -> "Group":
        """The member group `name`, created if absent."""
        path = self._child(name)
        if node_kind(path) == GROUP:
            return Group._open(path, self._read_only)
        return self.create_group(name)

    def create_array(self, name: str, *, shape: Any, dtype: Any, **kwargs: Any) -> Array:
        """Creates a member array; keyword arguments as for :func:`zgpu.create` (zarr_format defaults to
        this group's)."""
        if self._read_only:
            raise ReadOnlyError("group %r was opened read-only (mode='r')" % self._path)
        from . import create
        kwargs.setdefault("zarr_format", self.zarr_format)
        return create(self._child(name), shape=shape, dtype=dtype, **kwargs)

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        """Pickles as its path, mode and context settings (see Array.__reduce__)."""
        self._h()
        return (_unpickle_group, (self._path, self._read_only, self._ctx.settings))

    def consolidate_metadata(self) -> "Group":
        """Writes the metadata of every node below this group into it, as ``zarr.consolidate_metadata`` does
        (v2: ``.zmetadata``; v3: ``consolidated_metadata`` in its ``zarr.json``), for zarr-python and xarray to open
        the hierarchy in one request. zgpu keeps it current afterwards: what zgpu creates, resizes or gives
        attributes below a group with consolidated metadata (made by zgpu or zarr-python) is copied into it.
        Returns the group."""
        if self._read_only:
            raise ReadOnlyError("group %r was opened read-only (mode='r')" % self._path)
        _capi.check(lib.zgpu_group_consolidate(self._h()))
        return self

    def __repr__(self) -> str:
        return "<zgpu.Group %r zarr_format=%d>" % (self._path, self.zarr_format)


class Tree:
    """Group.tree()'s result: its text as repr (and as HTML in Jupyter)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> Dict[str, str]:
        """The tree for Jupyter: the text, and the same in a <pre> block."""
        import html
        return {"text/plain": self.text, "text/html": "<pre>%s</pre>" % html.escape(self.text)}


def _unpickle_group(path: str, read_only: bool, settings: Dict[str, Any]) -> Group:
    from ._context import context_like
    return Group._open(path, read_only, context_like(settings))
