"""A device read spread over several GPUs: ``Array.read(selection, devices=[0, 1])``.

The selection's bounding box is cut into parts of whole chunks along the axis that spans the most chunks, one part
a GPU. Each GPU reads its part with its own context (its own streams, buffers and device cache; its decode on its
own SMs) straight into the result on the destination GPU, writing over the peer path (NVLink or PCIe P2P), and the
call returns when every part is in place. So decoding, the bound of a whole-array read, scales with the GPUs, and
the result is one array as from a one-GPU read. A GPU that cannot reach the destination's memory hands its part to
the destination GPU.
"""
from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, List, Optional, Sequence, Tuple

from . import _cuda


def split_box(start: Sequence[int], count: Sequence[int], chunks: Sequence[int],
              parts: int) -> Tuple[int, List[Tuple[int, int]]]:
    """Cuts the box [start, start + count) into at most `parts` pieces of whole chunks along the axis spanning the
    most chunks (the first of equals). Returns (axis, [(lo, hi), ...]) with lo/hi relative to start[axis], the
    pieces in order and covering the box; axis -1 and one piece (0, 0) where nothing can be cut (an empty box, or one
    chunk)."""
    axis, most = -1, 1
    for d, (s, c, ch) in enumerate(zip(start, count, chunks)):
        if c == 0:
            return -1, [(0, 0)]
        k = (s + c - 1) // ch - s // ch + 1
        if k > most:
            axis, most = d, k
    if axis < 0 or parts <= 1:
        return -1, [(0, 0)]
    s, c, ch = start[axis], count[axis], chunks[axis]
    first = s // ch
    m = min(parts, most)
    pieces = []
    for j in range(m):
        c0 = first + j * most // m
        c1 = first + (j + 1) * most // m
        pieces.append((max(s, c0 * ch) - s, min(s + c, c1 * ch) - s))
    return axis, pieces


def read_spread(arr: Any, start: Sequence[int], count: Sequence[int], ptr: int, strides: Sequence[int],
                devices: Sequence[int], dst: int, stream: int, opts: Any) -> None:
    """Reads the box [start, start + count) of `arr` into device memory on `dst` at `ptr` (byte strides of the box,
    negative for reversed axes) with the GPUs `devices`; the destination device's part on `stream`. Returns when the
    data is in place; the first error of any part is raised after every part has ended."""
    axis, pieces = split_box(start, count, arr.chunks, len(devices))
    # the GPUs named, the destination first where it is one of them: it needs no peer path, and with fewer pieces
    # than GPUs it is the one kept
    named = list(dict.fromkeys(devices))
    order = ([dst] if dst in named else []) + [d for d in named if d != dst]
    jobs: List[Tuple[int, Sequence[int], Sequence[int], int]] = []
    for j, (lo, hi) in enumerate(pieces):
        dev = order[j % len(order)]
        if axis < 0:
            jobs.append((dev, start, count, ptr))
            continue
        s = list(start)
        c = list(count)
        s[axis] += lo
        c[axis] = hi - lo
        jobs.append((dev, s, c, ptr + lo * strides[axis]))
    for i, (dev, s, c, p) in enumerate(jobs):
        if not _cuda.enable_peer_access(dev, dst):
            jobs[i] = (dst, s, c, p)
    if any(dev != dst for dev, _, _, _ in jobs):
        # other GPUs write the destination, ordered on none of its streams: the caller's pending work on it (its
        # stream's, or the default stream's, where CuPy's zeros() and the like run) must be done first
        _cuda.synchronize_on(dst, stream)

    errors: List[Optional[BaseException]] = [None] * len(jobs)

    def run(i: int) -> None:
        dev, s, c, p = jobs[i]
        try:
            arr._read_box_device(SimpleNamespace(start=s, count=c, empty=not all(c)), dev, p, strides,
                                 stream if dev == dst else 0, opts)
        except BaseException as e:  # noqa: BLE001 (re-raised below, in the caller's thread)
            errors[i] = e

    threads = [threading.Thread(target=run, args=(i,), name="zgpu-spread-%d" % i) for i in range(1, len(jobs))]
    for t in threads:
        t.start()
    if jobs:
        run(0)
    for t in threads:
        t.join()
    for e in errors:
        if e is not None:
            raise e
