"""The Python mirrors of C agree with the loaded library: every ctypes Structure of the zgpu package has the
C struct's size and member offsets, the status names and messages come from C, and MAX_DIMS is C's."""
from __future__ import annotations

import ctypes
import importlib
import pkgutil

import pytest

import zgpu
from zgpu import _capi, errors

# Modules whose ctypes structures mirror other libraries' headers (dlpack.h, the CUDA runtime), not zgpu's.
_EXTERNAL_MODULES = {"zgpu._dlpack", "zgpu._cuda"}
# The C struct each ctypes mirror of a zgpu header stands for.
_C_NAMES = {"ContextOptions": "zgpu_context_options", "ReadStats": "zgpu_read_stats",
            "ArraySpec": "zgpu_array_spec", "Tuning": "zgpu_tuning", "RemoteOptions": "zgpu_remote_options",
            "ReadOptions": "zgpu_read_options"}


def _mirrors():
    """Every ctypes.Structure subclass defined in a module of the zgpu package that mirrors zgpu's headers."""
    found = {}
    for info in pkgutil.iter_modules(zgpu.__path__):
        if "zgpu." + info.name in _EXTERNAL_MODULES:
            continue
        module = importlib.import_module("zgpu." + info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, ctypes.Structure) and value is not ctypes.Structure
                    and value.__module__ == module.__name__):
                found[value.__name__] = value
    return sorted(found.items())


def test_every_mirror_is_known():
    names = [name for name, _ in _mirrors()]
    assert {"ContextOptions", "ReadStats", "ArraySpec"} <= set(names)
    unknown = [n for n in names if n not in _C_NAMES]
    assert not unknown, "ctypes structures without a C struct name here: %s" % unknown


@pytest.mark.parametrize("name, cls", _mirrors(), ids=lambda x: x if isinstance(x, str) else "")
def test_struct_layout_matches_c(name, cls):
    c_name = _C_NAMES[name].encode()
    size = _capi.lib.zgpu_struct_size(c_name)
    assert size > 0, "the library does not know %s" % _C_NAMES[name]
    assert ctypes.sizeof(cls) == size, "%s: ctypes %d bytes, C %d" % (name, ctypes.sizeof(cls), size)
    checked = 0
    for field in cls._fields_:
        offset = _capi.lib.zgpu_struct_offset(c_name, field[0].encode())
        if offset < 0:  # a member the library does not list (zgpu_struct_offset): the size still checks it
            continue
        assert getattr(cls, field[0]).offset == offset, "%s.%s" % (name, field[0])
        checked += 1
    assert checked >= 1


def test_statuses_come_from_c():
    lib = _capi.lib
    assert errors.STATUS_NAMES[0] == "ZGPU_OK"
    for number, name in errors.STATUS_NAMES.items():
        assert lib.zgpu_status_name(number).decode() == name
        assert errors.STATUS_MESSAGES[number] == lib.zgpu_status_message(number).decode()
    assert lib.zgpu_status_name(len(errors.STATUS_NAMES)).decode() == "ZGPU_ERR_UNKNOWN"
    e = errors.make_error(errors.status_of("ZGPU_ERR_CORRUPT_DATA"), "bad chunk")
    assert isinstance(e, zgpu.CorruptDataError) and e.status_name == "ZGPU_ERR_CORRUPT_DATA"
    e = errors.make_error(errors.status_of("ZGPU_ERR_NOT_FOUND"), "gone")
    assert isinstance(e, FileNotFoundError) and str(e) == "gone"
    assert isinstance(errors.make_error(999, "?"), zgpu.InternalError)
    # every C status but OK has its exception class
    for number, name in errors.STATUS_NAMES.items():
        if number:
            assert type(errors.make_error(number, "x")).__name__ != "ZgpuError"


def test_max_dims_from_c():
    assert _capi.MAX_DIMS == _capi.lib.zgpu_max_dims() == 32


def test_metadata_rules_are_c():
    from zgpu import _metadata
    import numpy as np
    assert _metadata.v3_dtype_name(np.dtype(">u2")) == "uint16"
    assert _metadata.v2_typestr(np.dtype(">u2")) == ">u2"
    assert _metadata.v2_typestr(np.dtype("u1")) == "|u1"
    assert _metadata.dtype_from_enum(7, 2) == np.dtype("u2")
    assert _metadata.fill_json(float("nan"), np.dtype("f4"), 2) == "NaN"
    assert _metadata.fill_json(None, np.dtype("f4"), 2) is None
    assert _metadata.fill_json(b"\x01\x02\x03", np.dtype("V3"), 2) == "AQID"
    assert _metadata.fill_json(1 + 2j, np.dtype("c8"), 3) == [1.0, 2.0]
    with pytest.raises(zgpu.UnsupportedError, match="unicode"):
        _metadata.v3_dtype_name(np.dtype("U3"))
