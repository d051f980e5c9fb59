"""Attributes: a MutableMapping over a node's stored attributes (zgpu_*_attributes / set_attributes)."""
from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any, Callable, Dict, Iterator

import numpy as np


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset)):
        return list(o)
    raise TypeError("attribute value %r of type %s is not JSON serialisable" % (o, type(o).__name__))


def dumps(value: Any) -> str:
    """JSON text with NaN/Infinity allowed (zgpu's JSON reader accepts them) and NumPy values converted."""
    return json.dumps(value, default=_json_default, allow_nan=True)


class Attributes(MutableMapping):
    """The attributes of an array or group, as its handle knows them (read when it was opened, then kept
    current by its own changes; reopen to see changes made by other writers). Every change is written to
    storage at once (``update`` writes once for all its keys)."""

    def __init__(self, load: Callable[[], str], store: Callable[[str], None], read_only: bool) -> None:
        self._load = load
        self._store = store
        self._read_only = read_only

    def asdict(self) -> Dict[str, Any]:
        """A copy of all attributes as a dict."""
        text = self._load()
        d = json.loads(text) if text else {}
        if not isinstance(d, dict):
            raise ValueError("attributes are not a JSON object: %r" % (text[:80],))
        return d

    def put(self, d: Dict[str, Any]) -> None:
        """Replaces all attributes with `d`."""
        if self._read_only:
            from .errors import ReadOnlyError
            raise ReadOnlyError("cannot change attributes: opened read-only (mode='r')")
        self._store(dumps(dict(d)))

    def __getitem__(self, key: str) -> Any:
        return self.asdict()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        d = self.asdict()
        d[key] = value
        self.put(d)

    def __delitem__(self, key: str) -> None:
        d = self.asdict()
        del d[key]
        self.put(d)

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """As dict.update; the attributes are written once, after the update."""
        d = self.asdict()
        d.update(*args, **kwargs)
        self.put(d)

    def __iter__(self) -> Iterator[str]:
        return iter(self.asdict())

    def __len__(self) -> int:
        return len(self.asdict())

    def __contains__(self, key: object) -> bool:
        return key in self.asdict()

    def __repr__(self) -> str:
        return "Attributes(%r)" % (self.asdict(),)
