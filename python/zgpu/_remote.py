"""Settings of remote stores (http://, https://, s3://): zgpu_remote_options, as ``zgpu.config.set(...)`` keywords.

Each setting has a default that lets the C library choose (0 / None); :data:`DEFAULTS` lists them."""
from __future__ import annotations

import ctypes
from ctypes import Structure, c_char_p, c_int, c_longlong, c_size_t, c_ulonglong
from typing import Any, Dict

ADDRESSING = {"auto": 0, "path": 1, "virtual": 2}

DEFAULTS: Dict[str, Any] = {
    "max_in_flight": 0,         # requests in flight per batch over HTTP/2; 0 = 64
    "max_host_connections": 0,  # HTTP/1.1 connections (requests in flight) per host per batch; 0 = 16
    "connect_timeout_ms": 0,    # 0 = 10000
    "request_timeout_ms": 0,    # one attempt; 0 = 60000
    "max_retries": 0,           # 0 = 6, -1 = none
    "retry_base_ms": 0,         # first backoff; 0 = 100
    "tls_verify": True,
    "ca_file": None,
    "range_merge_gap": 0,       # bytes; 0 = 64 KiB, -1 = never merge
    "s3_endpoint": None,        # e.g. "http://127.0.0.1:9000"; None = AWS_ENDPOINT_URL(_S3), profile, AWS
    "s3_region": None,
    "s3_profile": None,
    "s3_anonymous": False,
    "s3_addressing": "auto",    # "auto", "path", "virtual"
    "multipart_threshold": 0,   # 0 = 64 MiB
    "multipart_part_size": 0,   # 0 = 16 MiB (at least 5 MiB)
    "fetch_threads": 0,         # threads receiving one batch of requests; 0 = num_threads
    "window_bytes": 0,          # host reads and writes in windows of about this many bytes of chunks; 0 = 256 MiB
    "shard_index_cache_bytes": 0,  # decoded shard indexes kept for later reads (checked by ETag); 0 = 32 MiB, -1 = off
}


class RemoteOptions(Structure):
    """zgpu_remote_options (zgpu.h)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("max_in_flight", c_int),
        ("connect_timeout_ms", c_int),
        ("request_timeout_ms", c_int),
        ("max_retries", c_int),
        ("retry_base_ms", c_int),
        ("tls_no_verify", c_int),
        ("ca_file", c_char_p),
        ("range_merge_gap", c_longlong),
        ("s3_endpoint", c_char_p),
        ("s3_region", c_char_p),
        ("s3_profile", c_char_p),
        ("s3_anonymous", c_int),
        ("s3_addressing", c_int),
        ("multipart_threshold", c_ulonglong),
        ("multipart_part_size", c_ulonglong),
        ("max_host_connections", c_int),
        ("window_bytes", c_ulonglong),
        ("fetch_threads", c_int),
        ("shard_index_cache_bytes", c_longlong),
    ]


def validate(name: str, value: Any) -> Any:
    """The checked value of one setting (None = back to the default); ValueError / TypeError otherwise."""
    if name not in DEFAULTS:
        raise TypeError("unknown setting %r" % (name,))
    if value is None:
        return DEFAULTS[name]
    if name in ("ca_file", "s3_endpoint", "s3_region", "s3_profile"):
        if not isinstance(value, str) or not value or "\0" in value:
            raise ValueError("%s must be a non-empty string, got %r" % (name, value))
        if name == "s3_endpoint" and "://" not in value:
            raise ValueError("s3_endpoint must be a URL such as 'http://127.0.0.1:9000', got %r" % (value,))
        return value
    if name in ("tls_verify", "s3_anonymous"):
        return bool(value)
    if name == "s3_addressing":
        if value not in ADDRESSING:
            raise ValueError("s3_addressing must be one of 'auto', 'path', 'virtual', got %r" % (value,))
        return value
    v = int(value)
    lo = -1 if name in ("max_retries", "range_merge_gap", "shard_index_cache_bytes") else 0
    if v < lo:
        raise ValueError("%s must be >= %d, got %r" % (name, lo, value))
    if name == "multipart_part_size" and 0 < v < 5 << 20:
        raise ValueError("multipart_part_size must be at least 5 MiB (S3's minimum), got %r" % (value,))
    return v


def to_struct(settings: Dict[str, Any], lib: Any) -> RemoteOptions:
    """The C struct for these settings (strings kept alive by the struct's fields until the context copies them)."""
    o = RemoteOptions()
    lib.zgpu_remote_options_init(ctypes.byref(o))
    s = dict(DEFAULTS, **settings)
    for k in ("max_in_flight", "max_host_connections", "connect_timeout_ms", "request_timeout_ms", "max_retries", "retry_base_ms",
              "range_merge_gap", "multipart_threshold", "multipart_part_size", "window_bytes", "fetch_threads",
              "shard_index_cache_bytes"):
        setattr(o, k, s[k])
    o.tls_no_verify = 0 if s["tls_verify"] else 1
    o.s3_anonymous = 1 if s["s3_anonymous"] else 0
    o.s3_addressing = ADDRESSING[s["s3_addressing"]]
    for k in ("ca_file", "s3_endpoint", "s3_region", "s3_profile"):
        setattr(o, k, s[k].encode() if s[k] else None)
    return o
