"""Conversion on the fly for reads (zgpu_read_options): the keywords dtype, scale, offset and clamp of
Array.read / read_batch as the C struct."""
from __future__ import annotations

import ctypes
import math
from typing import Any, Optional, Tuple

import numpy as np

from . import _capi
from ._capi import lib
from ._metadata import _c_dtype


def read_options(stored: np.dtype, dtype: Any = None, scale: Any = None, offset: Any = None,
                 clamp: Any = None) -> Tuple[np.dtype, Optional[_capi.ReadOptions]]:
    """(the destination's dtype, the options or None). Each value v becomes clamp(v * scale + offset) in `dtype`
    (integers round to nearest, ties to even, and saturate; include/zgpu.h says the rest)."""
    if dtype is None and scale is None and offset is None and clamp is None:
        return stored, None
    out = np.dtype(dtype) if dtype is not None else stored
    if not out.isnative:
        raise ValueError("dtype %s: reads convert into native byte order only" % out)
    o = _capi.ReadOptions()
    lib.zgpu_read_options_init(ctypes.byref(o))
    o.out_dtype = _c_dtype(out)[0]
    o.scale = 1.0 if scale is None else float(scale)
    o.offset = 0.0 if offset is None else float(offset)
    if clamp is not None:
        try:
            lo, hi = clamp
        except (TypeError, ValueError):
            raise ValueError("clamp must be a pair (low, high), either of them None, got %r" % (clamp,)) from None
        o.clamp = 1
        o.clamp_min = -math.inf if lo is None else float(lo)
        o.clamp_max = math.inf if hi is None else float(hi)
    return out, o


def byref(o: Optional[_capi.ReadOptions]) -> Any:
    return ctypes.byref(o) if o is not None else None
