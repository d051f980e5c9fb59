"""zgpu.config's tuning fields (zgpu_tuning, include/zgpu_experimental.h): what is set reaches the C context
(read back through zgpu_context_tuning), bad values raise ValueError and change nothing, None restores a default,
and arrays keep the context they were opened with. CPU only."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import zgpu
from zgpu import _capi, _tuning
from zgpu._context import Config, Context

# The variables src/common/env.c reads into tuning fields: set, they override what these tests set.
TUNING_ENV = ("ZGPU_ZSTD_DECODER", "ZGPU_DEFLATE_DECODER", "ZGPU_LZ4_DECODER", "ZGPU_PIPELINE_WAVES",
              "ZGPU_WAVE_SHAPE", "ZGPU_WAVE_SETS", "ZGPU_WAVE_OVERLAP", "ZGPU_ZSTD_ROWS", "ZGPU_ZSTD_HUF_PROBE",
              "ZGPU_INFLATE_PARTS", "ZGPU_TRACE", "ZGPU_PROFILE", "ZGPU_ZSTD_PROFILE", "ZGPU_INFLATE_TIMES",
              "ZGPU_CLI_SLAB_BYTES", "ZGPU_READ_ROUTE", "ZGPU_PARTIAL_DECODE", "ZGPU_ZSTD_ENCODER",
              "ZGPU_WRITE_WAVE_BYTES", "ZGPU_HOST_READ_ROUTE", "ZGPU_SPLIT_DECODE", "ZGPU_POOL_SPIN_US")
pytestmark = pytest.mark.skipif(any(os.environ.get(v) for v in TUNING_ENV),
                                reason="a ZGPU_* tuning variable is set; it overrides every context's tuning")

DEFAULTS = {"zstd_decoder": "auto", "deflate_decoder": "auto", "lz4_decoder": "auto", "pipeline_waves": 0,
            "wave_shape": (), "wave_sets": 0, "wave_overlap": None, "zstd_rows": None, "zstd_huf_probe": -1,
            "inflate_parts": 0, "trace": False, "profile": False, "copy_slab_bytes": 0,
            "read_route": "auto", "partial_decode": None, "zstd_encoder": "auto",
            "write_wave_bytes": 0, "host_read_route": "auto", "split_decode": None, "pool_spin_us": 0}

EVERY_FIELD = {"zstd_decoder": "host", "deflate_decoder": "nvcomp", "lz4_decoder": "zgpu", "pipeline_waves": 64,
               "wave_shape": (1, 2, 1000000), "wave_sets": 4, "wave_overlap": False, "zstd_rows": True,
               "zstd_huf_probe": 4096, "inflate_parts": 7, "trace": True, "profile": True,
               "copy_slab_bytes": 3 << 20, "read_route": "host", "partial_decode": False, "zstd_encoder": "nvcomp",
               "write_wave_bytes": 5 << 20, "host_read_route": "device", "split_decode": False,
               "pool_spin_us": 250}


@pytest.fixture
def cfg():
    """A Config of its own, so that the module's zgpu.config stays as the other tests expect it."""
    return Config()


def test_mirror_matches_the_library():
    t = _tuning.Tuning()
    _capi.lib.zgpu_tuning_init(ctypes.byref(t))
    assert t.struct_size == ctypes.sizeof(_tuning.Tuning)
    assert t.zstd_huf_probe == -1 and t.pipeline_waves == 0 and t.n_wave_shape == 0
    assert _tuning.from_struct(t) == DEFAULTS


def test_defaults(cfg):
    assert cfg.tuning() == DEFAULTS
    assert zgpu.config.tuning() == DEFAULTS
    assert "pipeline_waves" not in repr(cfg)


def test_one_field_reaches_the_context(cfg):
    cfg.set(pipeline_waves=3)
    assert cfg.tuning()["pipeline_waves"] == 3
    assert cfg.tuning() == dict(DEFAULTS, pipeline_waves=3)
    assert "pipeline_waves=3" in repr(cfg)
    cfg.set(pipeline_waves=None)  # back to zgpu's choice
    assert cfg.tuning() == DEFAULTS


def test_every_field_round_trips(cfg):
    cfg.set(**EVERY_FIELD)
    assert cfg.tuning() == EVERY_FIELD
    # other settings leave the tuning alone
    cfg.set(num_threads=2, gds="off")
    assert cfg.tuning() == EVERY_FIELD
    cfg.set(wave_shape=[], wave_overlap=None, zstd_rows=None, trace=False, zstd_decoder="auto")
    got = cfg.tuning()
    assert got["wave_shape"] == () and got["wave_overlap"] is None and got["zstd_rows"] is None
    assert got["trace"] is False and got["zstd_decoder"] == "auto"
    assert got["pipeline_waves"] == 64 and got["profile"] is True
    cfg.set(**{k: None for k in EVERY_FIELD})
    assert cfg.tuning() == DEFAULTS


def test_edges(cfg):
    cfg.set(pipeline_waves=1, wave_shape=tuple(range(1, 17)), wave_sets=2, zstd_huf_probe=0, inflate_parts=1,
            wave_overlap=True, zstd_rows=False, deflate_decoder="host", lz4_decoder="nvcomp")
    got = cfg.tuning()
    assert got["pipeline_waves"] == 1 and got["wave_shape"] == tuple(range(1, 17)) and got["wave_sets"] == 2
    assert got["zstd_huf_probe"] == 0 and got["inflate_parts"] == 1
    assert got["wave_overlap"] is True and got["zstd_rows"] is False
    assert got["deflate_decoder"] == "host" and got["lz4_decoder"] == "nvcomp"
    cfg.set(wave_shape=np.array([3, 1], dtype=np.int64))  # any sequence of integers
    assert cfg.tuning()["wave_shape"] == (3, 1)


@pytest.mark.parametrize("field, value, words", [
    ("zstd_decoder", "gpu", "zstd_decoder must be one of"),
    ("deflate_decoder", 1, "deflate_decoder must be one of"),
    ("lz4_decoder", "host", "lz4_decoder must be one of 'auto', 'zgpu', 'nvcomp'"),
    ("pipeline_waves", -1, "pipeline_waves must be in 0..64"),
    ("pipeline_waves", 65, "pipeline_waves must be in 0..64"),
    ("pipeline_waves", 2.5, "pipeline_waves must be an integer"),
    ("pipeline_waves", True, "pipeline_waves must be an integer"),
    ("wave_shape", (1, 0), "wave_shape[1] must be in 1..1000000"),
    ("wave_shape", (1000001,), "wave_shape[0] must be in 1..1000000"),
    ("wave_shape", tuple([1] * 17), "at most 16"),
    ("wave_shape", "1,2", "wave_shape must be a sequence"),
    ("wave_shape", 3, "wave_shape must be a sequence"),
    ("wave_sets", 5, "wave_sets must be in 0..4"),
    ("wave_sets", 1, "wave_sets must be 0 or in 2..4"),
    ("wave_overlap", "on", "wave_overlap must be True or False"),
    ("zstd_rows", 2, "zstd_rows must be True or False"),
    ("zstd_huf_probe", -2, "zstd_huf_probe must be in -1..4096"),
    ("zstd_huf_probe", 4097, "zstd_huf_probe must be in -1..4096"),
    ("inflate_parts", -1, "inflate_parts must be in"),
    ("trace", "yes", "trace must be True or False"),
    ("profile", 3, "profile must be True or False"),
    ("copy_slab_bytes", -1, "copy_slab_bytes must be in"),
    ("read_route", "gpu", "read_route must be one of"),
    ("host_read_route", "gpu", "host_read_route must be one of 'auto', 'device', 'host'"),
    ("host_read_route", 1, "host_read_route must be one of"),
    ("zstd_encoder", "gpu", "zstd_encoder must be one of 'auto', 'zgpu', 'nvcomp', 'host'"),
    ("zstd_encoder", 2, "zstd_encoder must be one of"),
    ("zstd_encoder", True, "zstd_encoder must be one of"),
    ("pool_spin_us", -2, "pool_spin_us must be in -1..1000000"),
    ("pool_spin_us", 1000001, "pool_spin_us must be in -1..1000000"),
    ("pool_spin_us", 1.5, "pool_spin_us must be an integer"),
])
def test_bad_values(cfg, field, value, words):
    cfg.set(pipeline_waves=2, num_threads=3)
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        cfg.set(num_threads=1, **{field: value})
    # nothing changed, the valid arguments of the same call included
    assert cfg.num_threads == 3
    assert cfg.tuning() == dict(DEFAULTS, pipeline_waves=2)


def test_zstd_encoder(cfg):
    """Each compressor choice of the GPU write path's zstd reaches the C context; None goes back to "auto"."""
    for choice in ("zgpu", "nvcomp", "host", "auto"):
        cfg.set(zstd_encoder=choice)
        assert cfg.tuning() == dict(DEFAULTS, zstd_encoder=choice)
        assert cfg.tuning()["zstd_decoder"] == "auto"  # the decoder is a field of its own
    cfg.set(zstd_encoder="host")
    assert "zstd_encoder='host'" in repr(cfg)
    cfg.set(zstd_encoder=None)
    assert cfg.tuning() == DEFAULTS and "zstd_encoder" not in repr(cfg)
    t = _tuning.to_struct({"zstd_encoder": "nvcomp"})
    assert t.zstd_encoder == 2 and t.zstd_decoder == 0  # ZGPU_DECODER_NVCOMP


def _field_in_child(variable: str, value: str, field: str):
    """zgpu.config.tuning()[field] in a child process with the environment variable set (the environment is read once
    a process): (stdout stripped, stderr)."""
    src = os.path.dirname(os.path.dirname(os.path.abspath(zgpu.__file__)))
    env = dict(os.environ, **{variable: value},
               PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p))
    code = "import zgpu; print(zgpu.config.tuning()[%r])" % field
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip(), r.stderr


def test_zstd_encoder_from_the_environment():
    """ZGPU_ZSTD_ENCODER overrides the field; a value that does not parse is ignored with a line on stderr."""
    for value, want in (("nvcomp", "nvcomp"), ("host", "host"), ("zgpu", "zgpu"), ("gpu", "auto")):
        out, err = _field_in_child("ZGPU_ZSTD_ENCODER", value, "zstd_encoder")
        assert out == want
        assert ("ignoring ZGPU_ZSTD_ENCODER=gpu" in err) == (value == "gpu")


def test_write_wave_bytes_from_the_environment():
    """ZGPU_WRITE_WAVE_BYTES overrides the field; 0 or text is ignored with a line on stderr, and the Python check
    refuses what the C range would."""
    for value, want in (("8388608", "8388608"), ("0", "0"), ("big", "0")):
        out, err = _field_in_child("ZGPU_WRITE_WAVE_BYTES", value, "write_wave_bytes")
        assert out == want
        assert ("ignoring ZGPU_WRITE_WAVE_BYTES" in err) == (value != "8388608")
    with pytest.raises(ValueError, match="write_wave_bytes must be in 0..1099511627776"):
        Config().set(write_wave_bytes=(1 << 40) + 1)
    with pytest.raises(ValueError, match="write_wave_bytes must be an integer"):
        Config().set(write_wave_bytes=1.5)


def test_host_read_route_from_the_environment():
    """ZGPU_HOST_READ_ROUTE overrides the field; a value that does not parse is ignored with a line on stderr."""
    for value, want in (("device", "device"), ("host", "host"), ("gpu", "auto")):
        out, err = _field_in_child("ZGPU_HOST_READ_ROUTE", value, "host_read_route")
        assert out == want
        assert ("ignoring ZGPU_HOST_READ_ROUTE=gpu" in err) == (value == "gpu")


def test_pool_spin_us(tmp_path):
    """ZGPU_POOL_SPIN_US overrides the field (out of range: ignored with a line on stderr); reads through a context
    whose host threads poll between jobs read the same values as through one whose threads sleep at once."""
    for value, want in (("300", "300"), ("-1", "-1"), ("0", "0"), ("-5", "0"), ("fast", "0")):
        out, err = _field_in_child("ZGPU_POOL_SPIN_US", value, "pool_spin_us")
        assert out == want
        assert ("ignoring ZGPU_POOL_SPIN_US" in err) == (value in ("-5", "fast"))
    data = np.arange(8 * 64 * 64, dtype="<u4").reshape(8, 64, 64)
    zgpu.create(tmp_path / "a", shape=data.shape, dtype="<u4", chunks=(2, 16, 16), compressors="zstd")[...] = data
    threads = zgpu.config.num_threads
    try:
        for spin in (-1, 1000, 0):
            zgpu.config.set(num_threads=4, pool_spin_us=spin)
            a = zgpu.open_array(tmp_path / "a")
            assert a._ctx.tuning()["pool_spin_us"] == spin
            for k in range(20):
                box = (slice(k % 7, k % 7 + 2), slice(3 * k % 40, 3 * k % 40 + 20), slice(5, 60))
                np.testing.assert_array_equal(a[box], data[box])
            np.testing.assert_array_equal(a.read_batch([(slice(0, 8), slice(0, 64), slice(0, 64))] * 3)[2], data)
    finally:
        zgpu.config.set(num_threads=threads, pool_spin_us=None)
    assert zgpu.config.tuning() == DEFAULTS


def test_c_checks_name_the_field():
    """What the Python checks would catch, the C context refuses too, naming the field."""
    for tuning, field in (({"pipeline_waves": 65}, "pipeline_waves"), ({"wave_sets": 9}, "wave_sets"),
                          ({"wave_shape": (0,)}, "wave_shape[0]"), ({"inflate_parts": -3}, "inflate_parts"),
                          ({"pool_spin_us": -2}, "pool_spin_us")):
        with pytest.raises(zgpu.InvalidArgumentError, match=field.replace("[", r"\[").replace("]", r"\]")):
            Context(1, 0, 0, "auto", True, False, tuning)


def test_arrays_keep_their_context(tmp_path):
    a = zgpu.create(tmp_path / "a", shape=(64,), dtype="<u2", chunks=(16,), compressors="gzip")
    data = np.arange(64, dtype="<u2")
    a[...] = data
    try:
        zgpu.config.set(pipeline_waves=5, deflate_decoder="host", copy_slab_bytes=1 << 20)
        b = zgpu.open_array(tmp_path / "a")
        assert b._ctx.tuning()["pipeline_waves"] == 5 and b._ctx.tuning()["deflate_decoder"] == "host"
        assert a._ctx.tuning()["pipeline_waves"] == 0  # opened before: its context is the earlier one
        np.testing.assert_array_equal(b[...], data)  # a context with a tuning reads as any other
        np.testing.assert_array_equal(a[...], data)
    finally:
        zgpu.config.set(pipeline_waves=None, deflate_decoder=None, copy_slab_bytes=None)
    assert zgpu.config.tuning() == DEFAULTS


def test_unknown_field():
    with pytest.raises(ValueError, match="unknown tuning field"):
        _tuning.validate("waves", 3)
    with pytest.raises(TypeError):
        zgpu.config.set(waves=3)
