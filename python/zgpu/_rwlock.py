"""The reader-writer lock of a zgpu.Array's handle (fork-safe: a child resets it)."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator


class _Shared:
    """``with lock.shared():`` without a generator (a read's fixed cost: 2-5 us less than @contextmanager)."""

    __slots__ = ("_l",)

    def __init__(self, lock: "RWLock") -> None:
        self._l = lock

    def __enter__(self) -> None:
        l = self._l
        with l._cond:
            while l._writer:
                l._cond.wait()
            l._readers += 1

    def __exit__(self, *exc: Any) -> None:
        l = self._l
        with l._cond:
            l._readers -= 1
            if l._readers == 0 and l._waiting:
                l._cond.notify_all()


class RWLock:
    """Many readers or one writer: the C API lets reads share a handle but needs writes, resize and attribute
    updates serialised against every other use of it."""

    def __init__(self) -> None:
        self._reset()
        self._shared = _Shared(self)

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._waiting = 0  # writers waiting (a reader's exit notifies only then)

    def shared(self) -> _Shared:
        return self._shared  # (stateless: one object serves every thread)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()
