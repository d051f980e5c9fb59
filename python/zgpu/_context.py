"""The module-level zgpu_context (thread pool, GPU settings), created lazily, and zgpu.config."""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import Any, Dict, Optional

from . import _capi, _remote, _tuning
from ._capi import lib

_GDS = {"auto": _capi.GDS_AUTO, "off": _capi.GDS_OFF, "on": _capi.GDS_ON}


class Context:
    """Owns one zgpu_context. Arrays and groups hold a reference, so it is freed after the last of them."""

    def __init__(self, num_threads: int, device: int, budget: int, gds: str, gpu_decode: bool,
                 gpu_trust_input: bool = False, tuning: Optional[Dict[str, Any]] = None,
                 max_decoded_chunk_bytes: int = 0, confine_to_store: bool = False,
                 remote: Optional[Dict[str, Any]] = None, cache_bytes: int = 0,
                 device_cache_bytes: int = 0) -> None:
        opts = _capi.ContextOptions()
        lib.zgpu_context_options_init(ctypes.byref(opts))
        opts.num_threads = num_threads
        opts.device = device
        opts.device_memory_budget = budget
        opts.gds_mode = _GDS[gds]
        opts.gpu_decode = 1 if gpu_decode else 0
        opts.gpu_trust_input = 1 if gpu_trust_input else 0
        opts.max_decoded_chunk_bytes = max_decoded_chunk_bytes
        opts.confine_to_store = 1 if confine_to_store else 0
        opts.cache_bytes = cache_bytes
        opts.device_cache_bytes = device_cache_bytes
        t = _tuning.to_struct(tuning) if tuning else None  # the context copies it: it need not outlive the call
        opts.tuning = ctypes.addressof(t) if t is not None else None
        r = _remote.to_struct(remote or {}, lib)  # copied by the context, strings too
        opts.remote = ctypes.addressof(r)
        handle = ctypes.c_void_p()
        _capi.check(lib.zgpu_context_create(ctypes.byref(opts), ctypes.byref(handle)))
        self.handle = handle
        self.device = device
        # what made it: a pickled array or group carries these, and the process that unpickles it opens it with
        # a context of the same settings (context_like)
        self.settings = dict(num_threads=num_threads, device=device, budget=budget, gds=gds, gpu_decode=gpu_decode,
                             gpu_trust_input=gpu_trust_input, tuning=dict(tuning or {}),
                             max_decoded_chunk_bytes=max_decoded_chunk_bytes, confine_to_store=confine_to_store,
                             remote=dict(remote or {}), cache_bytes=cache_bytes,
                             device_cache_bytes=device_cache_bytes)

    def __del__(self) -> None:
        h = getattr(self, "handle", None)
        if h is not None and h.value and not sys.is_finalizing():
            lib.zgpu_context_free(h)
            self.handle = None

    def tuning(self) -> Dict[str, Any]:
        """The tuning this context runs with (zgpu_context_tuning: the environment's overrides included)."""
        return _tuning.context_tuning(self.handle)


_UNSET: Any = object()  # a tuning argument not given (None means "back to the default" there)


class Config:
    """Settings for contexts created from now on (arrays already open keep the context they were opened with).

    Attributes: ``num_threads`` (host decode threads, 0 = all CPUs), ``device`` (CUDA ordinal of
    ``device="cuda"``), ``device_memory_budget`` (bytes of staging and scratch for device reads, 0 = an eighth of the GPU's memory,
    256 MiB to 16 GiB), ``gds`` ("auto", "off",
    "on"), ``gpu_decode`` (decode on the GPU where a GPU decoder exists), ``gpu_trust_input`` (lets nvCOMP's
    DEFLATE decoder, chosen with ``deflate_decoder="nvcomp"``, decode gzip / zlib: it needs valid input, so only
    for data you trust; zgpu's own GPU DEFLATE decoder, the default, checks every stream and needs no trust),
    ``cache_bytes`` (a cache of decoded chunks in host memory shared by the context's arrays, 0 = off),
    ``device_cache_bytes`` (a cache of GPU-decoded chunks in device memory, which device reads scatter from,
    0 = off).

    Tuning of the device path (experimental, unstable: zgpu_tuning in zgpu_experimental.h; docs/tuning.md says
    what each does and what was measured): ``zstd_decoder``, ``deflate_decoder``, ``lz4_decoder`` ("auto",
    "zgpu", "nvcomp", "host"; lz4 has no "host"), ``pipeline_waves``, ``wave_shape`` (relative wave sizes),
    ``wave_sets``, ``wave_overlap`` and ``zstd_rows`` (True / False / None = default), ``zstd_huf_probe``,
    ``inflate_parts``, ``trace``, ``profile``, ``copy_slab_bytes``, ``read_route`` ("auto", "device",
    "host": how device reads decode), ``partial_decode`` (None or True: blosc chunks a read needs in part read and
    decode only the blocks it needs, uncompressed chunks read only the bytes it needs, zstd frames stop after the
    block holding the last byte needed; False: whole chunks), ``zstd_encoder`` ("auto", "zgpu", "nvcomp", "host": the compressor of zstd chunks on device writes
    (blosc's zstd streams always get zgpu's); "auto" is zgpu's own GPU encoder), ``write_wave_bytes`` (decoded
    bytes a device write encodes a wave; 0 = zgpu's choice), ``host_read_route`` ("auto", "device", "host": whether
    reads into host memory decode on the GPU; "auto" only once the context has used its GPU), ``split_decode`` (None or
    True: a read of fewer chunks than threads decodes each zstd, gzip or zlib chunk on several threads; False: one
    thread a chunk), ``pool_spin_us`` (microseconds an idle host thread polls for the next job before it sleeps; 0 =
    the default, 100; -1 = it sleeps at once). Given as None, a tuning field goes back to
    its default. :meth:`tuning` shows what a context runs with (ZGPU_* environment overrides included).

    Remote stores (http://, https://, s3:// paths; docs/remote.md): ``s3_endpoint``, ``s3_region``,
    ``s3_profile``, ``s3_anonymous``, ``s3_addressing`` ("auto", "path", "virtual"), ``max_in_flight``,
    ``max_host_connections``,
    ``connect_timeout_ms``, ``request_timeout_ms``, ``max_retries``, ``retry_base_ms``, ``tls_verify``,
    ``ca_file``, ``range_merge_gap``, ``multipart_threshold``, ``multipart_part_size``, ``window_bytes``,
    ``fetch_threads``, ``shard_index_cache_bytes``; :attr:`remote` holds
    those set away from their defaults. Given as None, one goes back to its default.
    """

    def __init__(self) -> None:
        self.num_threads = 0
        self.device = 0
        self.device_memory_budget = 0
        self.gds = "auto"
        self.gpu_decode = True
        self.gpu_trust_input = False
        self.max_decoded_chunk_bytes = 0
        self.confine_to_store = False
        self.cache_bytes = 0
        self.device_cache_bytes = 0
        self._tuning: Dict[str, Any] = {}  # the tuning fields set away from their defaults
        self.remote: Dict[str, Any] = {}   # the remote-store settings set away from their defaults
        self._lock = threading.Lock()
        self._contexts: Dict[int, Context] = {}

    def set(self, *, num_threads: Optional[int] = None, device: Optional[int] = None,
            device_memory_budget: Optional[int] = None, gds: Optional[str] = None,
            gpu_decode: Optional[bool] = None, gpu_trust_input: Optional[bool] = None,
            max_decoded_chunk_bytes: Optional[int] = None, confine_to_store: Optional[bool] = None,
            cache_bytes: Optional[int] = None, device_cache_bytes: Optional[int] = None, zstd_decoder: Any = _UNSET, deflate_decoder: Any = _UNSET, lz4_decoder: Any = _UNSET,
            pipeline_waves: Any = _UNSET, wave_shape: Any = _UNSET, wave_sets: Any = _UNSET,
            wave_overlap: Any = _UNSET, zstd_rows: Any = _UNSET, zstd_huf_probe: Any = _UNSET,
            inflate_parts: Any = _UNSET, trace: Any = _UNSET, profile: Any = _UNSET,
            copy_slab_bytes: Any = _UNSET, read_route: Any = _UNSET, partial_decode: Any = _UNSET,
            zstd_encoder: Any = _UNSET, write_wave_bytes: Any = _UNSET, host_read_route: Any = _UNSET,
            split_decode: Any = _UNSET, pool_spin_us: Any = _UNSET, **remote: Any) -> None:
        """Changes settings; contexts are recreated for arrays and groups opened afterwards. Every value is
        checked before any is changed: a ValueError leaves the settings as they were."""
        given = {"zstd_decoder": zstd_decoder, "deflate_decoder": deflate_decoder, "lz4_decoder": lz4_decoder,
                 "pipeline_waves": pipeline_waves, "wave_shape": wave_shape, "wave_sets": wave_sets,
                 "wave_overlap": wave_overlap, "zstd_rows": zstd_rows, "zstd_huf_probe": zstd_huf_probe,
                 "inflate_parts": inflate_parts, "trace": trace, "profile": profile,
                 "copy_slab_bytes": copy_slab_bytes, "read_route": read_route, "partial_decode": partial_decode,
                 "zstd_encoder": zstd_encoder, "write_wave_bytes": write_wave_bytes,
                 "host_read_route": host_read_route, "split_decode": split_decode, "pool_spin_us": pool_spin_us}
        tuning = {k: _tuning.validate(k, v) for k, v in given.items() if v is not _UNSET}
        for k in remote:
            if k not in _remote.DEFAULTS:
                raise TypeError("zgpu.config.set() got an unexpected keyword argument %r" % (k,))
        remote = {k: _remote.validate(k, v) for k, v in remote.items()}
        if num_threads is not None and int(num_threads) < 0:
            raise ValueError("num_threads must be >= 0 (0 = number of CPUs), got %r" % num_threads)
        if max_decoded_chunk_bytes is not None and int(max_decoded_chunk_bytes) < 0:
            raise ValueError("max_decoded_chunk_bytes must be >= 0 (0 = the default cap), got %r"
                             % (max_decoded_chunk_bytes,))
        if cache_bytes is not None and (isinstance(cache_bytes, bool) or int(cache_bytes) < 0):
            raise ValueError("cache_bytes must be an integer >= 0 (0 = no cache), got %r" % (cache_bytes,))
        if device_cache_bytes is not None and (isinstance(device_cache_bytes, bool) or int(device_cache_bytes) < 0):
            raise ValueError("device_cache_bytes must be an integer >= 0 (0 = no cache), got %r"
                             % (device_cache_bytes,))
        if gds is not None and gds not in _GDS:
            raise ValueError("gds must be one of 'auto', 'off', 'on', got %r" % (gds,))
        with self._lock:
            for k, v in tuning.items():
                if v == _tuning.DEFAULTS[k]:
                    self._tuning.pop(k, None)
                else:
                    self._tuning[k] = v
            if num_threads is not None:
                self.num_threads = int(num_threads)
            if device is not None:
                self.device = int(device)
            if device_memory_budget is not None:
                self.device_memory_budget = int(device_memory_budget)
            if gds is not None:
                self.gds = gds
            if gpu_decode is not None:
                self.gpu_decode = bool(gpu_decode)
            if gpu_trust_input is not None:
                self.gpu_trust_input = bool(gpu_trust_input)
            if max_decoded_chunk_bytes is not None:
                self.max_decoded_chunk_bytes = int(max_decoded_chunk_bytes)
            if confine_to_store is not None:
                self.confine_to_store = bool(confine_to_store)
            if cache_bytes is not None:
                self.cache_bytes = int(cache_bytes)
            if device_cache_bytes is not None:
                self.device_cache_bytes = int(device_cache_bytes)
            for k, v in remote.items():
                if v == _remote.DEFAULTS[k]:
                    self.remote.pop(k, None)
                else:
                    self.remote[k] = v
            self._contexts.clear()

    def context(self, device: Optional[int] = None) -> Context:
        """The shared context whose device reads go to CUDA device `device` (default: config.device)."""
        dev = self.device if device is None else int(device)
        with self._lock:
            ctx = self._contexts.get(dev)
            if ctx is None:
                ctx = Context(self.num_threads, dev, self.device_memory_budget, self.gds, self.gpu_decode,
                              self.gpu_trust_input, dict(self._tuning), self.max_decoded_chunk_bytes,
                              self.confine_to_store, dict(self.remote), self.cache_bytes,
                              self.device_cache_bytes)
                self._contexts[dev] = ctx
            return ctx

    def tuning(self, device: Optional[int] = None) -> Dict[str, Any]:
        """The tuning that reads on `device` (default: config.device) run with: every field, the settings made
        with :meth:`set` and the ZGPU_* environment's overrides applied (read from the C context)."""
        return self.context(device).tuning()

    def __repr__(self) -> str:
        tuning = "".join(", %s=%r" % kv for kv in _tuning.changed(self._tuning))
        tuning += "".join(", %s=%r" % kv for kv in sorted(self.remote.items()))
        return ("zgpu.Config(num_threads=%d, device=%d, device_memory_budget=%d, gds=%r, gpu_decode=%r, "
                "gpu_trust_input=%r, max_decoded_chunk_bytes=%d, confine_to_store=%r, cache_bytes=%d, "
                "device_cache_bytes=%d%s)"
                % (self.num_threads, self.device, self.device_memory_budget, self.gds, self.gpu_decode,
                   self.gpu_trust_input, self.max_decoded_chunk_bytes, self.confine_to_store, self.cache_bytes,
                   self.device_cache_bytes, tuning))


config = Config()


def set_threads(n: int) -> None:
    """Number of host decode threads for arrays opened from now on (0 = number of online CPUs)."""
    config.set(num_threads=n)


_unpickled: Dict[str, Context] = {}  # contexts made for unpickled arrays and groups, by their settings
_unpickled_lock = threading.Lock()


def _locks_after_fork() -> None:
    """A forked child's locks of the config and of the unpickled contexts start afresh: one held by another thread of
    the parent at the fork would stay held in the child for ever (zgpu.config.set there would hang)."""
    global _unpickled_lock
    config._lock = threading.Lock()
    _unpickled_lock = threading.Lock()


os.register_at_fork(after_in_child=_locks_after_fork)


def context_like(settings: Dict[str, Any]) -> Context:
    """A context with these settings (Context.settings): zgpu.config's own for that device when its settings are
    the same, else one shared by every unpickled array and group of these settings (a Dask worker unpickles many
    tasks: they share one context, its threads and caches)."""
    ctx = config.context(settings.get("device", 0))
    if ctx.settings == settings:
        return ctx
    key = repr(sorted((k, repr(v)) for k, v in settings.items()))
    with _unpickled_lock:
        ctx = _unpickled.get(key)
        if ctx is None:
            ctx = _unpickled[key] = Context(**settings)
        return ctx
