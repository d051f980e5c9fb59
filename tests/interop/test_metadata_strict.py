"""Strict metadata (issue 25, item 6): for a table of hostile and borderline documents, zgpu and zarr-python
agree on accept or reject, and where both accept they read the same values (the array has no chunks, so a
whole read is the fill value everywhere, compared bit for bit). The rows where the two differ on purpose are
marked with the difference and its reason (docs/metadata-validation.md lists them); the test checks that each
difference is exactly the one documented, so a change on either side shows up here.

zgpu is driven through its CLI (`zgpu read`); zarr-python is the venv's (3.1)."""
from __future__ import annotations

import json
import math
import os

import numcodecs
import numpy as np
import pytest
import zarr

from interop_util import assert_fails_cleanly, assert_same_array

DEL = object()

SAME = "same"
# zgpu refuses a document zarr-python reads; zgpu accepts one zarr-python refuses; both read, values differ.
ZGPU_STRICTER, ZGPU_LAXER, VALUES_DIFFER = "zgpu-stricter", "zgpu-laxer", "values-differ"

BYTES_LE = [{"name": "bytes", "configuration": {"endian": "little"}}]


def v3(**kw) -> str:
    d = {"zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "float32",
         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
         "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
         "fill_value": 0.0, "codecs": BYTES_LE, "attributes": {}}
    return _apply(d, kw)


def v2(**kw) -> str:
    d = {"zarr_format": 2, "shape": [4, 4], "chunks": [2, 2], "dtype": "<f4", "fill_value": 0.0,
         "order": "C", "filters": None, "compressor": None, "dimension_separator": "."}
    return _apply(d, kw)


def _apply(d: dict, kw: dict) -> str:
    for k, v in kw.items():
        if v is DEL:
            d.pop(k, None)
        else:
            d[k] = v
    return json.dumps(d)  # ensure_ascii: a NUL is written as \u0000, as a hostile writer would


R = "regular"
ZSTD = lambda **conf: {"name": "zstd", "configuration": {"level": 1, "checksum": False, **conf}}  # noqa: E731
BLOSC = lambda **conf: {"name": "blosc", "configuration": {  # noqa: E731
    "typesize": 4, "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "blocksize": 0, **conf}}
GRID = lambda **conf: {"name": R, "configuration": {"chunk_shape": [2, 2], **conf}}  # noqa: E731

# (id, format, document text, expectation, words zgpu's message must hold when it refuses)
CASES = [
    # --- hex fill values: exactly 2 * itemsize digits (v3 spec); zarr-python picks the width from the digits ---
    ("hex_f32_4digits", 3, v3(fill_value="0x1234"), ZGPU_STRICTER, ["fill_value", "0x1234", "needs exactly 8"]),
    ("hex_f32_16digits", 3, v3(fill_value="0x3ff0000000000000"), ZGPU_STRICTER, ["fill_value", "needs exactly 8"]),
    ("hex_f16_8digits", 3, v3(data_type="float16", fill_value="0x3f800000"), ZGPU_STRICTER, ["needs exactly 4"]),
    ("hex_f64_8digits", 3, v3(data_type="float64", fill_value="0x3f800000"), ZGPU_STRICTER, ["needs exactly 16"]),
    ("hex_c64_part_4digits", 3, v3(data_type="complex64", fill_value=["0x3c00", 0.0]), ZGPU_STRICTER,
     ["needs exactly 8"]),
    ("hex_f32_ok", 3, v3(fill_value="0x3f800000"), SAME, []),
    ("hex_f32_upper_digits", 3, v3(fill_value="0x3F800000"), SAME, []),
    ("hex_f32_nan_payload", 3, v3(fill_value="0x7fc00001"), SAME, []),
    ("hex_f16_ok", 3, v3(data_type="float16", fill_value="0x3c00"), SAME, []),
    ("hex_f64_ok", 3, v3(data_type="float64", fill_value="0x3ff0000000000000"), SAME, []),
    ("hex_c64_parts", 3, v3(data_type="complex64", fill_value=["0x3f800000", "0x7fc00000"]), SAME, []),
    ("hex_upper_0X", 3, v3(fill_value="0X3f800000"), SAME, ["fill_value", "0X3f800000"]),
    ("hex_bad_digit", 3, v3(fill_value="0x3f80000g"), SAME, ["fill_value"]),
    ("hex_empty", 3, v3(fill_value="0x"), SAME, ["fill_value"]),
    ("hex_in_v2", 2, v2(fill_value="0x3f800000"), SAME, ["fill_value"]),
    ("hex_for_int", 3, v3(data_type="int32", fill_value="0x00000001"), SAME, ["fill_value"]),
    # --- NUL and control characters in names ---
    ("dtype_nul", 3, v3(data_type="int32\u0000x", fill_value=0), SAME, ["data_type", "int32\\u0000x"]),
    ("dtype_newline", 3, v3(data_type="float32\n"), SAME, ["data_type"]),
    ("node_type_nul", 3, v3(node_type="array\u0000"), SAME, ["node_type"]),
    ("grid_name_nul", 3, v3(chunk_grid={"name": "regular\u0000x", "configuration": {"chunk_shape": [2, 2]}}), SAME,
     ["chunk_grid.name"]),
    ("cke_name_nul", 3, v3(chunk_key_encoding={"name": "default\u0000", "configuration": {"separator": "/"}}), SAME,
     ["chunk_key_encoding.name"]),
    ("cke_separator_nul", 3, v3(chunk_key_encoding={"name": "default", "configuration": {"separator": "/\u0000"}}),
     SAME, ["chunk_key_encoding.separator"]),
    ("codec_name_nul", 3, v3(codecs=[{"name": "bytes\u0000x", "configuration": {"endian": "little"}}]), SAME,
     ["codecs[0].name"]),
    ("codec_endian_nul", 3, v3(codecs=[{"name": "bytes", "configuration": {"endian": "little\u0000"}}]), SAME,
     ["codecs[0].configuration.endian"]),
    ("v2_dtype_nul", 2, v2(dtype="<f4\u0000x"), SAME, ["dtype", "<f4\\u0000x"]),
    ("v2_dtype_newline", 2, v2(dtype="<f4\n"), SAME, ["dtype"]),
    ("v2_compressor_id_nul", 2, v2(compressor={"id": "zstd\u0000x", "level": 1}), SAME, ["compressor.id"]),
    ("v2_filter_id_nul", 2, v2(filters=[{"id": "delta\u0000", "dtype": "<f4"}]), SAME, ["filters[0].id"]),
    ("v2_order_nul", 2, v2(order="C\u0000"), SAME, ["order"]),
    ("v2_separator_nul", 2, v2(dimension_separator=".\u0000"), SAME, ["dimension_separator"]),
    ("v2_blosc_cname_nul", 2, v2(compressor={"id": "blosc", "cname": "lz4\u0000", "clevel": 5, "shuffle": 1,
                                             "blocksize": 0}), ZGPU_STRICTER, ["compressor.cname"]),
    ("dimension_name_nul", 3, v3(dimension_names=["a\u0000b", None]), ZGPU_STRICTER, ["dimension_names[0]"]),
    ("dimension_name_newline", 3, v3(dimension_names=["a\nb", None]), SAME, []),
    ("attribute_key_nul", 3, v3(attributes={"a\u0000b": 1}), ZGPU_STRICTER, ["object key contains"]),
    ("attribute_value_nul", 3, v3(attributes={"k": "a\u0000b"}), SAME, []),
    ("attribute_lone_surrogate", 3, v3(attributes={"k": "\ud800"}), ZGPU_STRICTER, ["surrogate"]),
    ("json_byte_order_mark", 3, "\ufeff" + v3(), SAME, []),
    ("json_trailing_comma", 3, v3()[:-1] + ",}", SAME, ["JSON"]),
    # --- extension points ---
    ("grid_conf_extra", 3, v3(chunk_grid=GRID(x=1)), SAME, ["chunk_grid.configuration", "'x'"]),
    ("cke_conf_extra", 3, v3(chunk_key_encoding={"name": "default", "configuration": {"separator": "/", "x": 1}}),
     SAME, ["chunk_key_encoding.configuration", "'x'"]),
    ("cke_separator_dash", 3, v3(chunk_key_encoding={"name": "default", "configuration": {"separator": "-"}}), SAME,
     ["separator"]),
    ("cke_separator_null", 3, v3(chunk_key_encoding={"name": "default", "configuration": {"separator": None}}),
     SAME, ["separator"]),
    ("cke_v2_default_separator", 3, v3(chunk_key_encoding={"name": "v2"}), SAME, []),
    ("cke_name_only_string", 3, v3(chunk_key_encoding="default"), ZGPU_LAXER, []),
    ("codec_name_only_string", 3, v3(data_type="uint8", fill_value=0, codecs=["bytes"]), ZGPU_LAXER, []),
    ("grid_no_configuration", 3, v3(chunk_grid={"name": R}), SAME, ["chunk_grid.configuration"]),
    ("grid_name_only_string", 3, v3(chunk_grid=R), SAME, ["chunk_grid"]),
    ("grid_unknown_member", 3, v3(chunk_grid={**GRID(), "x": 1}), ZGPU_STRICTER, ["chunk_grid member 'x'"]),
    ("grid_member_must_understand_false", 3, v3(chunk_grid={**GRID(), "x": {"must_understand": False}}), SAME, []),
    ("dtype_object_name_only", 3, v3(data_type={"name": "float32"}), ZGPU_LAXER, []),
    ("dtype_object_empty_conf", 3, v3(data_type={"name": "float32", "configuration": {}}), SAME, ["data_type"]),
    ("dtype_spec_raw_r16", 3, v3(data_type="r16", fill_value=[1, 2]), ZGPU_LAXER, []),
    ("dtype_raw_bytes_object", 3, v3(data_type={"name": "raw_bytes", "configuration": {"length_bytes": 2}},
                                     fill_value="AQI="), SAME, []),
    ("dtype_uppercase", 3, v3(data_type="Float32"), SAME, ["data_type"]),
    ("codec_must_understand_false", 3, v3(codecs=BYTES_LE + [{"name": "foo", "must_understand": False}]),
     ZGPU_LAXER, []),
    ("codec_bytes_without_endian", 3, v3(codecs=[{"name": "bytes"}]), ZGPU_STRICTER, ["endian"]),
    ("codecs_empty", 3, v3(codecs=[]), SAME, ["codecs"]),
    ("codecs_two_bytes", 3, v3(codecs=BYTES_LE + BYTES_LE), SAME, ["bytes"]),
    ("codec_configuration_null", 3, v3(codecs=[{"name": "bytes", "configuration": None}]), SAME, ["configuration"]),
    ("codec_gzip_level_10", 3, v3(codecs=BYTES_LE + [{"name": "gzip", "configuration": {"level": 10}}]), SAME,
     ["gzip", "level"]),
    ("codec_zstd_level_float", 3, v3(codecs=BYTES_LE + [{"name": "zstd", "configuration": {"level": 1.0,
                                                                                     "checksum": False}}]),
     SAME, ["zstd", "level"]),
    ("codec_blosc_unknown_cname", 3, v3(codecs=BYTES_LE + [{"name": "blosc", "configuration": {
        "cname": "nope", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}]), SAME, ["nope"]),
    ("codec_transpose_repeated_axis", 3, v3(codecs=[{"name": "transpose", "configuration": {"order": [0, 0]}}]
                                          + BYTES_LE), SAME, ["transpose"]),
    ("codec_sharding_not_divisible", 3, v3(codecs=[{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [3, 2], "codecs": BYTES_LE, "index_codecs": BYTES_LE + [{"name": "crc32c"}],
        "index_location": "end"}}]), SAME, ["sharding_indexed"]),
    ("codec_sharding_index_location", 3, v3(codecs=[{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [1, 2], "codecs": BYTES_LE, "index_codecs": BYTES_LE + [{"name": "crc32c"}],
        "index_location": "middle"}}]), SAME, ["index_location"]),
    # --- codec configurations: members, null, bools (zarr-python passes them to the codec's constructor) ---
    ("codec_bytes_unknown_key", 3, v3(codecs=[{"name": "bytes", "configuration": {"endian": "little", "x": 1}}]),
     SAME, ["codec 'bytes'", 'unknown configuration member "x"']),
    ("codec_zstd_unknown_key", 3, v3(codecs=BYTES_LE + [ZSTD(x=2)]), SAME,
     ["codec 'zstd'", 'unknown configuration member "x"']),
    ("codec_gzip_unknown_key", 3, v3(codecs=BYTES_LE + [{"name": "gzip", "configuration": {"level": 1, "x": 1}}]),
     SAME, ["codec 'gzip'", '"x"']),
    ("codec_blosc_unknown_key", 3, v3(codecs=BYTES_LE + [BLOSC(nthreads=2)]), SAME,
     ["codec 'blosc'", '"nthreads"']),
    ("codec_transpose_unknown_key", 3, v3(codecs=[{"name": "transpose", "configuration": {"order": [1, 0],
                                                                                         "x": 1}}] + BYTES_LE),
     SAME, ["codec 'transpose'", '"x"']),
    ("codec_sharding_unknown_key", 3, v3(codecs=[{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [1, 2], "codecs": BYTES_LE, "index_codecs": BYTES_LE + [{"name": "crc32c"}],
        "index_location": "end", "x": 1}}]), SAME, ["sharding_indexed", '"x"']),
    ("codec_sharding_inner_unknown_key", 3, v3(codecs=[{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [1, 2], "codecs": BYTES_LE + [ZSTD(x=1)], "index_codecs": BYTES_LE + [{"name": "crc32c"}],
        "index_location": "end"}}]), SAME, ["codec 'zstd'", '"x"']),
    ("codec_crc32c_unknown_key", 3, v3(codecs=BYTES_LE + [{"name": "crc32c", "configuration": {"x": 1}}]),
     ZGPU_STRICTER, ["codec 'crc32c'", '"x"']),
    ("codec_zstd_id_member", 3, v3(codecs=BYTES_LE + [ZSTD(id="zstd")]), ZGPU_LAXER, []),
    ("codec_zstd_level_null", 3, v3(codecs=BYTES_LE + [ZSTD(level=None)]), SAME, ["zstd", "level", "null"]),
    ("codec_zstd_level_true", 3, v3(codecs=BYTES_LE + [ZSTD(level=True)]), SAME, []),
    ("codec_zstd_checksum_null", 3, v3(codecs=BYTES_LE + [ZSTD(checksum=None)]), ZGPU_LAXER, []),
    ("codec_gzip_level_null", 3, v3(codecs=BYTES_LE + [{"name": "gzip", "configuration": {"level": None}}]), SAME,
     ["gzip", "level", "null"]),
    ("codec_blosc_typesize_shuffle_null", 3, v3(codecs=BYTES_LE + [BLOSC(typesize=None, shuffle=None)]), SAME, []),
    ("codec_blosc_cname_null", 3, v3(codecs=BYTES_LE + [BLOSC(cname=None)]), SAME, ["blosc", "cname", "null"]),
    ("codec_blosc_clevel_null", 3, v3(codecs=BYTES_LE + [BLOSC(clevel=None)]), SAME, ["blosc", "clevel", "null"]),
    ("codec_blosc_shuffle_int", 3, v3(codecs=BYTES_LE + [BLOSC(shuffle=1)]), ZGPU_LAXER, []),
    ("codec_bytes_endian_null_uint8", 3, v3(data_type="uint8", fill_value=0,
                                            codecs=[{"name": "bytes", "configuration": {"endian": None}}]), SAME, []),
    ("codec_sharding_index_location_null", 3, v3(codecs=[{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [1, 2], "codecs": BYTES_LE, "index_codecs": BYTES_LE + [{"name": "crc32c"}],
        "index_location": None}}]), SAME, ["index_location", "null"]),
    ("v2_zstd_unknown_key", 2, v2(compressor={"id": "zstd", "level": 1, "x": 2}), SAME,
     ["codec 'numcodecs.zstd'", 'unknown configuration member "x"']),
    ("v2_blosc_unknown_key", 2, v2(compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
                                               "blocksize": 0, "nthreads": 2}), SAME, ["blosc", '"nthreads"']),
    ("v2_blosc_typesize", 2, v2(compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
                                            "blocksize": 0, "typesize": 4}), SAME, []),
    ("v2_gzip_unknown_key", 2, v2(compressor={"id": "gzip", "level": 1, "mtime": 0}), SAME, ["gzip", '"mtime"']),
    ("v2_zlib_unknown_key", 2, v2(compressor={"id": "zlib", "level": 1, "wbits": 15}), SAME, ["zlib", '"wbits"']),
    ("v2_lz4_unknown_key", 2, v2(compressor={"id": "lz4", "acceleration": 1, "x": 1}), SAME, ["lz4", '"x"']),
    ("v2_bz2_unknown_key", 2, v2(compressor={"id": "bz2", "level": 1, "x": 1}), SAME, ["bz2", '"x"']),
    ("v2_delta_unknown_key", 2, v2(filters=[{"id": "delta", "dtype": "<f4", "x": 1}]), SAME, ["delta", '"x"']),
    ("v2_shuffle_unknown_key", 2, v2(filters=[{"id": "shuffle", "elementsize": 4, "x": 1}]), SAME,
     ["shuffle", '"x"']),
    ("v2_fixedscaleoffset_unknown_key", 2, v2(filters=[{"id": "fixedscaleoffset", "offset": 0, "scale": 1,
                                                        "dtype": "<f4", "x": 1}]), SAME,
     ["fixedscaleoffset", '"x"']),
    ("v2_zstd_checksum_null", 2, v2(compressor={"id": "zstd", "level": 1, "checksum": None}), SAME, []),
    ("v2_delta_astype_null", 2, v2(filters=[{"id": "delta", "dtype": "<f4", "astype": None}]), SAME, []),
    ("v2_zstd_level_true", 2, v2(compressor={"id": "zstd", "level": True}), SAME, []),
    # numcodecs keeps these until it encodes (a null or "1" level) or reads another type (np.dtype(None) is float64)
    ("v2_zstd_level_null", 2, v2(compressor={"id": "zstd", "level": None}), ZGPU_STRICTER, ["level", "null"]),
    ("v2_zlib_level_string", 2, v2(compressor={"id": "zlib", "level": "1"}), ZGPU_STRICTER, ["level"]),
    ("v2_blosc_shuffle_5", 2, v2(compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 5,
                                             "blocksize": 0}), ZGPU_STRICTER, ["shuffle"]),
    ("v2_delta_dtype_null", 2, v2(filters=[{"id": "delta", "dtype": None}]), ZGPU_STRICTER, ["dtype", "null"]),
    # --- shapes ---
    ("shape_negative", 3, v3(shape=[-1, 4]), SAME, ["shape[0]"]),
    ("shape_float", 3, v3(shape=[4.0, 4]), SAME, ["shape[0]"]),
    ("shape_string", 3, v3(shape=["4", 4]), SAME, ["shape[0]"]),
    ("shape_bool", 3, v3(shape=[True, 4]), ZGPU_STRICTER, ["shape[0]"]),
    ("shape_zero", 3, v3(shape=[0, 4]), SAME, []),
    ("shape_scalar", 3, v3(shape=[], chunk_grid={"name": R, "configuration": {"chunk_shape": []}}), SAME, []),
    ("shape_length_mismatch", 3, v3(shape=[4]), SAME, ["shape has 1"]),
    ("shape_2^124_elements", 3, v3(shape=[2**62, 2**62]), ZGPU_STRICTER, ["2^64"]),
    ("chunk_zero", 3, v3(chunk_grid={"name": R, "configuration": {"chunk_shape": [0, 2]}}), ZGPU_STRICTER,
     ["chunk_shape[0] is 0"]),
    ("chunk_float", 3, v3(chunk_grid={"name": R, "configuration": {"chunk_shape": [2.0, 2]}}), SAME,
     ["chunk_shape[0]"]),
    ("chunk_2^80_elements", 3, v3(chunk_grid={"name": R, "configuration": {"chunk_shape": [2**40, 2**40]}}),
     ZGPU_STRICTER, ["2^64"]),
    ("v2_chunks_zero", 2, v2(chunks=[0, 2]), ZGPU_STRICTER, ["chunks[0] is 0"]),
    ("v2_chunks_short", 2, v2(chunks=[2]), SAME, ["chunks"]),
    ("v2_shape_float", 2, v2(shape=[4.0, 4]), SAME, ["shape[0]"]),
    # --- fill values by data type ---
    ("fill_nan_bare", 3, v3(fill_value=float("nan")), SAME, []),
    ("fill_minus_zero", 3, v3(fill_value=-0.0), SAME, []),
    ("fill_infinity_strings", 3, v3(data_type="complex64", fill_value=["Infinity", "-Infinity"]), SAME, []),
    ("fill_1e39_to_float32_inf", 3, v3(fill_value=1e39), SAME, []),
    ("fill_1e400", 3, v3(fill_value=1e400), SAME, []),
    ("fill_null_v3", 3, v3(fill_value=None), SAME, ["fill_value"]),
    ("fill_missing_v3", 3, v3(fill_value=DEL), SAME, ["fill_value"]),
    ("fill_float_string", 3, v3(fill_value="1.5"), ZGPU_STRICTER, ["fill_value", "1.5"]),
    ("fill_nan_lowercase", 3, v3(fill_value="nan"), ZGPU_STRICTER, ["fill_value"]),
    ("fill_nan_with_nul", 3, v3(fill_value="NaN\u0000"), SAME, ["fill_value", "NaN\\u0000"]),
    ("fill_bool_for_float", 3, v3(fill_value=True), ZGPU_STRICTER, ["fill_value"]),
    ("int_fill_out_of_range", 3, v3(data_type="int8", fill_value=300), SAME, ["fill_value", "300"]),
    ("uint_fill_negative", 3, v3(data_type="uint8", fill_value=-1), SAME, ["fill_value"]),
    ("int64_fill_2^63", 3, v3(data_type="int64", fill_value=2**63), SAME, ["fill_value"]),
    ("uint64_fill_max", 3, v3(data_type="uint64", fill_value=2**64 - 1), SAME, []),
    ("uint64_fill_2^64", 3, v3(data_type="uint64", fill_value=2**64), SAME, ["fill_value"]),
    ("int_fill_1e400", 3, v3(data_type="int32", fill_value=1e400), SAME, ["fill_value"]),
    ("int_fill_fraction", 3, v3(data_type="int32", fill_value=1.5), SAME, ["fill_value"]),
    ("int_fill_integral_float", 3, v3(data_type="int32", fill_value=1.0), ZGPU_STRICTER, ["fill_value"]),
    ("int_fill_string", 3, v3(data_type="int32", fill_value="7"), ZGPU_STRICTER, ["fill_value"]),
    ("int_fill_bool", 3, v3(data_type="int8", fill_value=True), ZGPU_STRICTER, ["fill_value"]),
    ("bool_fill_int", 3, v3(data_type="bool", fill_value=1), ZGPU_STRICTER, ["fill_value"]),
    ("bool_fill_string", 3, v3(data_type="bool", fill_value="false"), ZGPU_STRICTER, ["fill_value"]),
    ("complex_fill_scalar", 3, v3(data_type="complex64", fill_value=1.0), SAME, ["fill_value"]),
    ("complex_fill_three", 3, v3(data_type="complex64", fill_value=[1, 2, 3]), SAME, ["fill_value"]),
    ("v2_fill_nan_string", 2, v2(fill_value="NaN"), SAME, []),
    ("v2_fill_float_string", 2, v2(fill_value="1.5"), ZGPU_STRICTER, ["fill_value"]),
    ("v2_int_fill_integral_float", 2, v2(dtype="<i4", fill_value=1.0), SAME, []),
    ("v2_int_fill_out_of_range", 2, v2(dtype="<i2", fill_value=70000), SAME, ["fill_value"]),
    ("v2_bool_fill_1", 2, v2(dtype="|b1", fill_value=1), SAME, []),
    ("v2_bool_fill_2", 2, v2(dtype="|b1", fill_value=2), ZGPU_STRICTER, ["fill_value"]),
    ("v2_complex_fill_pair", 2, v2(dtype="<c8", fill_value=[1.0, 2.0]), SAME, []),
    ("v2_complex_fill_scalar", 2, v2(dtype="<c8", fill_value=1.0), ZGPU_LAXER, []),
    ("v2_raw_fill_base64", 2, v2(dtype="|V2", fill_value="AQI="), SAME, []),
    ("v2_raw_fill_zero", 2, v2(dtype="|V2", fill_value=0), ZGPU_LAXER, []),
    ("v2_raw_fill_bad_base64", 2, v2(dtype="|V2", fill_value="AQ"), SAME, ["fill_value"]),
    ("v2_fill_missing", 2, v2(fill_value=DEL), ZGPU_LAXER, []),
    ("v2_fill_null", 2, v2(fill_value=None), VALUES_DIFFER, []),
    # --- format, node type, members ---
    ("zarr_format_float", 3, v3(zarr_format=3.0), ZGPU_STRICTER, ["zarr_format"]),
    ("zarr_format_string", 3, v3(zarr_format="3"), SAME, ["zarr_format"]),
    ("zarr_format_2_in_zarr_json", 3, v3(zarr_format=2), SAME, ["zarr_format"]),
    ("v2_zarr_format_3", 2, v2(zarr_format=3), SAME, ["zarr_format"]),
    ("v2_zarr_format_missing", 2, v2(zarr_format=DEL), SAME, ["zarr_format"]),
    ("node_type_missing", 3, v3(node_type=DEL), SAME, ["node_type"]),
    ("unknown_member", 3, v3(foo=1), SAME, ["'foo'"]),
    ("unknown_member_must_understand_true", 3, v3(foo={"must_understand": True}), SAME, ["'foo'"]),
    ("unknown_member_must_understand_false", 3, v3(foo={"must_understand": False}), SAME, []),
    ("storage_transformers_empty", 3, v3(storage_transformers=[]), SAME, []),
    ("storage_transformer", 3, v3(storage_transformers=[{"name": "x"}]), SAME, ["storage transformer"]),
    ("storage_transformer_must_understand_false", 3,
     v3(storage_transformers=[{"name": "x", "must_understand": False}]), ZGPU_LAXER, []),
    ("storage_transformers_null", 3, v3(storage_transformers=None), ZGPU_STRICTER, ["storage_transformers"]),
    ("dimension_names_short", 3, v3(dimension_names=["a"]), SAME, ["dimension_names"]),
    ("dimension_names_ints", 3, v3(dimension_names=[1, 2]), SAME, ["dimension_names[0]"]),
    ("dimension_names_string", 3, v3(dimension_names="ab"), ZGPU_STRICTER, ["dimension_names"]),
    ("attributes_null", 3, v3(attributes=None), ZGPU_STRICTER, ["attributes"]),
    ("attributes_missing", 3, v3(attributes=DEL), SAME, []),
    ("duplicate_key_last_wins", 3, v3()[:-1] + ', "fill_value": 2.0}', SAME, []),
    ("deep_nesting", 3, v3()[:-1] + ', "foo": {"must_understand": false, "x": ' + "[" * 600 + "]" * 600 + "}}",
     ZGPU_STRICTER, ["nesting deeper than 512"]),
    # --- v2 data types and members ---
    ("v2_dtype_no_byte_order", 2, v2(dtype="f4"), SAME, ["dtype"]),
    ("v2_dtype_pipe_f4", 2, v2(dtype="|f4"), SAME, ["dtype"]),
    ("v2_dtype_leading_zero", 2, v2(dtype="<f04"), SAME, ["dtype"]),
    ("v2_dtype_lt_i1", 2, v2(dtype="<i1", fill_value=0), ZGPU_LAXER, []),
    ("v2_dtype_raw_zero", 2, v2(dtype="|V0", fill_value=None), SAME, ["dtype"]),
    # both read it; the zgpu command writes datetimes to .npy as their int64 counts (zeros for the null fill)
    ("v2_dtype_datetime", 2, v2(dtype="<M8[s]", fill_value=None), VALUES_DIFFER, []),
    ("v2_order_lowercase", 2, v2(order="c"), SAME, ["order"]),
    ("v2_order_missing", 2, v2(order=DEL), ZGPU_LAXER, []),
    ("v2_separator_null", 2, v2(dimension_separator=None), ZGPU_LAXER, []),
    ("v2_separator_missing", 2, v2(dimension_separator=DEL), SAME, []),
    ("v2_compressor_string", 2, v2(compressor="zstd"), SAME, ["compressor"]),
    ("v2_compressor_without_id", 2, v2(compressor={"level": 1}), SAME, ["compressor"]),
    ("v2_compressor_unknown", 2, v2(compressor={"id": "nope"}), SAME, ["nope"]),
    ("v2_filters_object", 2, v2(filters={"id": "delta", "dtype": "<f4"}), SAME, ["filters"]),
    ("v2_filters_empty", 2, v2(filters=[]), SAME, []),
    ("v2_unknown_member", 2, v2(foo=1), SAME, []),
]


def _write(tmp_path, fmt: int, text: str) -> str:
    path = tmp_path / "a.zarr"
    os.makedirs(path)
    (path / ("zarr.json" if fmt == 3 else ".zarray")).write_text(text)
    return str(path)


def _zarr_read(path: str, fmt: int):
    """(opened, values, error). Opening is what accepts the metadata; the values are read only where the array
    is small enough (some rows have shapes nobody can read), and a read that fails leaves them None (zarr-python
    opens chunk shape 0 and then divides by it)."""
    try:
        a = zarr.open_array(path, mode="r", zarr_format=fmt)
    except Exception as e:  # noqa: BLE001 - any refusal counts
        return False, None, e
    if math.prod(a.shape) > 1 << 20:
        return True, None, None
    try:
        return True, a[...], None
    except Exception as e:  # noqa: BLE001
        return True, None, e


@pytest.mark.parametrize("name,fmt,text,expect,words", CASES, ids=[c[0] for c in CASES])
def test_zgpu_and_zarr_python_agree(name, fmt, text, expect, words, zgpu, tmp_path):
    path = _write(tmp_path, fmt, text)
    z_ok, z_val, z_err = _zarr_read(path, fmt)
    out = tmp_path / "out.npy"
    r = zgpu("read", path, "-o", out)
    g_ok = r.returncode == 0
    if not g_ok:
        # A refusal is one clean line naming the array and the field (and value) at fault.
        assert_fails_cleanly(r, *words)
        assert "a.zarr" in r.stderr, f"message does not name the array: {r.stderr}"
    if expect == SAME:
        assert g_ok == z_ok, (f"zgpu {'accepts' if g_ok else 'refuses'} and zarr-python "
                              f"{'accepts' if z_ok else 'refuses'}: zgpu: {r.stderr.strip()}; zarr: {z_err!r}")
        if g_ok:
            assert z_err is None, f"zarr-python opens but cannot read: {z_err!r}"
        if g_ok and z_val is not None:
            assert_same_array(np.load(out), np.asarray(z_val), name)
    elif expect == ZGPU_STRICTER:
        assert not g_ok and z_ok, f"documented: zgpu refuses, zarr-python reads; got zgpu {g_ok}, zarr {z_ok}"
    elif expect == ZGPU_LAXER:
        assert g_ok and not z_ok, f"documented: zgpu reads, zarr-python refuses; got zgpu {g_ok}, zarr {z_ok}"
    else:
        # v2 "fill_value": null: zgpu reads zeros; zarr-python leaves missing chunks uninitialised.
        assert g_ok and z_ok
        assert not np.load(out).any(), "zgpu reads a null v2 fill value as zeros"


def test_nul_in_path_is_refused(tmp_path):
    """The Python package refuses a path holding a NUL byte (C would open the path cut at the NUL)."""
    zgpu_py = pytest.importorskip("zgpu")
    good = _write(tmp_path, 3, v3())
    with pytest.raises(ValueError, match="null byte"):
        zgpu_py.open_array(good + "\0ignored")


def test_big_integer_attribute_survives_a_rewrite(tmp_path):
    """An attribute integer beyond 64 bits stays that integer when zgpu writes the document again (it used to
    become a float, which zarr-python then read as one)."""
    zgpu_py = pytest.importorskip("zgpu")
    path = str(tmp_path / "big.zarr")
    a = zarr.create_array(path, shape=(4,), chunks=(2,), dtype="int32")
    a.attrs["big"] = 2**70
    a.attrs["neg"] = -(2**65) - 1
    g = zgpu_py.open_array(path, mode="r+")
    g.attrs["other"] = 1  # zgpu rewrites zarr.json with every attribute
    g.close()
    attrs = zarr.open_array(path, mode="r").attrs.asdict()
    assert attrs == {"big": 2**70, "neg": -(2**65) - 1, "other": 1}
    assert isinstance(attrs["big"], int) and isinstance(attrs["neg"], int)


NUMCODECS_V3 = [
    ("numcodecs.zstd", {"level": 1, "checksum": False}, "after"),
    ("numcodecs.zlib", {"level": 1}, "after"),
    ("numcodecs.lz4", {"acceleration": 1}, "after"),
    ("numcodecs.shuffle", {"elementsize": 4}, "after"),
    ("numcodecs.delta", {"dtype": "<i4"}, "before"),
]


@pytest.mark.parametrize("name,conf,where", NUMCODECS_V3, ids=[c[0] for c in NUMCODECS_V3])
def test_numcodecs_v3_members_need_a_chunk(name, conf, where, zgpu, tmp_path):
    """zarr-python builds a "numcodecs.*" codec only when it decodes a chunk, so the table's empty arrays do not
    show its refusal: here zarr-python writes a chunk with the valid configuration, and then an unknown member
    is refused by both, an "id" naming the codec is read by both, and another "id" refused by both."""
    path = tmp_path / "a.zarr"
    os.makedirs(path)

    def doc(c):
        codec = {"name": name, "configuration": c}
        codecs = [codec] + BYTES_LE if where == "before" else BYTES_LE + [codec]
        return json.dumps({"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "int32",
                           "chunk_grid": {"name": R, "configuration": {"chunk_shape": [8]}},
                           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                           "fill_value": 0, "codecs": codecs, "attributes": {}})

    (path / "zarr.json").write_text(doc(conf))
    zarr.open_array(str(path), mode="r+")[:] = np.arange(8, dtype="int32") * 3
    out = tmp_path / "out.npy"
    for extra, same in (({"x": 1}, False), ({"id": name[len("numcodecs."):]}, True), ({"id": "zstd2"}, False)):
        (path / "zarr.json").write_text(doc({**conf, **extra}))
        z_ok, z_val, z_err = _zarr_read(str(path), 3)
        r = zgpu("read", path, "-o", out)
        if same:
            assert r.returncode == 0 and z_ok and z_err is None, (r.stderr, z_err)
            assert_same_array(np.load(out), np.asarray(z_val), name)
            assert (np.load(out) == np.arange(8) * 3).all()
        else:
            assert not z_ok or z_err is not None, f"zarr-python reads {extra}"
            assert_fails_cleanly(r, f"codec '{name}'", "id" if "id" in extra else '"x"')


def test_v2_shuffle_without_elementsize_is_numcodecs_default(zgpu, tmp_path):
    """A v2 shuffle filter without "elementsize" is numcodecs' Shuffle(), whose elements are 4 bytes, also on an
    int16 array (v3's numcodecs.shuffle defaults to the item size instead): zgpu reads what zarr-python reads."""
    path = tmp_path / "s.zarr"
    data = (np.arange(64, dtype=np.int16) * 1031).reshape(8, 8)
    a = zarr.create_array(str(path), shape=(8, 8), chunks=(4, 8), dtype="<i2", zarr_format=2,
                          filters=[numcodecs.Shuffle(elementsize=4)], compressors=None)
    a[...] = data
    meta = json.loads((path / ".zarray").read_text())
    assert meta["filters"] == [{"id": "shuffle", "elementsize": 4}]
    meta["filters"] = [{"id": "shuffle"}]
    (path / ".zarray").write_text(json.dumps(meta))
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[...], data)
    out = tmp_path / "out.npy"
    r = zgpu("read", path, "-o", out)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(out), data)

