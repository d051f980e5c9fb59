/* Data types and fill values, for both Zarr formats. */
#ifndef ZG_DTYPE_H
#define ZG_DTYPE_H
#include <stdint.h>
#include "zgpu.h"
#include "common/json.h"

/* What an element means beyond its storage type `id`. Datetimes keep id ZGPU_INT64 (they are int64 counts on
 * every path); structured records keep ZGPU_RAW (opaque bytes to every codec); variable-length strings and
 * bytes have no fixed size (size 0) and are read and written only through the vlen entry points (codec/vlen.h). */
typedef enum zg_dtype_kind {
    ZG_KIND_PLAIN = 0,
    ZG_KIND_DATETIME,  /* numpy.datetime64: int64 count of `scale` x `unit` since the epoch, NaT = INT64_MIN */
    ZG_KIND_TIMEDELTA, /* numpy.timedelta64: the same, a duration */
    ZG_KIND_STRUCT,    /* a v2 structured (record) dtype: ZGPU_RAW of the record size; fields in meta's document */
    ZG_KIND_STRING,    /* variable-length UTF-8 (v3 "string", v2 "|O" + vlen-utf8) */
    ZG_KIND_BYTES,     /* variable-length bytes (v3 "variable_length_bytes", v2 "|O" + vlen-bytes) */
} zg_dtype_kind;

typedef struct zg_dtype {
    zgpu_dtype id;
    uint32_t size;  /* bytes per element (ZGPU_RAW: N/8; 0 for variable-length kinds) */
    char name[32];  /* Zarr v3 name: "bool", "int8".."uint64", "float16".."float64", "complex64", "complex128", "rN",
                     * "numpy.datetime64", "numpy.timedelta64", "structured", "string", "variable_length_bytes" */
    zg_dtype_kind kind;
    char unit[8];   /* DATETIME / TIMEDELTA: NumPy's unit ("ns", "D", "generic"; "us" also for zarr-python's "μs") */
    uint32_t scale; /* DATETIME / TIMEDELTA: the unit's multiplier, 1 .. 2^31 - 1 */
} zg_dtype;

/* Room for any v2 typestring zg_dtype_to_v2 writes ("<M8[2147483647generic]" is the longest). */
#define ZG_DTYPE_V2_MAX 32

/** 1 for the kinds whose elements have no fixed size (strings, bytes). */
static inline int zg_dtype_is_vlen(const zg_dtype *dt) {
    return dt->kind == ZG_KIND_STRING || dt->kind == ZG_KIND_BYTES;
}

/** v3 "data_type" value: a name, or an object ({"name": "numpy.datetime64", "configuration": {"unit": "ns",
 *  "scale_factor": 1}}, numpy.timedelta64, raw_bytes). An object with must_understand=false is not a data type. */
zgpu_status zg_dtype_from_v3(const zj_value *v, zg_dtype *out);
/** v2 NumPy typestring ("<u2", ">f8", "|b1", "<c16", "|u1", "|V3" -> raw r24, "<M8[10ms]", ">m8").
 *  *big_endian: 1 for '>' (0 for '|'). "|O" is not a data type by itself (see zg_dtype_object_v2). */
zgpu_status zg_dtype_from_v2(const char *typestr, zg_dtype *out, int *big_endian);
/** A v2 structured dtype (the .zarray "dtype" list: [name, type] or [name, type, shape] fields, types typestrings
 *  or nested lists) as ZGPU_RAW records of its size, kind ZG_KIND_STRUCT. Refused: empty or repeated names,
 *  object or unknown field types, nesting past 16 levels, more than 4096 fields, records over 1 MiB. */
zgpu_status zg_dtype_from_v2_struct(const zj_value *fields, zg_dtype *out);
/** The variable-length type of a v2 "|O" array from the id of its object codec ("vlen-utf8", "vlen-bytes");
 *  ZGPU_ERR_UNSUPPORTED naming the id otherwise (vlen-array, pickle, json2, msgpack2: Python objects). */
zgpu_status zg_dtype_object_v2(const char *codec_id, zg_dtype *out);
/** v2 typestring for dt with the given byte order ("|" for 1-byte types and raw; "|O" for vlen kinds).
 *  buf: at least ZG_DTYPE_V2_MAX bytes. */
const char *zg_dtype_to_v2(const zg_dtype *dt, int big_endian, char *buf);
/** The v3 "data_type" JSON of dt: its name, or the configured object of datetimes. NULL on allocation failure. */
zj_value *zg_dtype_to_v3_json(const zg_dtype *dt);
/** Lookup by v3 name; 0 if unknown. */
int zg_dtype_from_name(const char *name, zg_dtype *out);
/** Size in bytes of one scalar component that byte-swapping works on (complex64 -> 4, raw -> 1, bool -> 1). */
uint32_t zg_dtype_swap_unit(const zg_dtype *dt);

/** Parses a fill value from JSON into dt->size native-endian bytes at out.
 *  v3: numbers, "NaN", "Infinity", "-Infinity", "0x..." hex bit patterns for floats, [re, im] pairs for
 *  complex (each part any float form), true/false for bool, arrays of byte values for raw.
 *  v2: numbers, bare NaN/Infinity, the strings "NaN"/"Infinity"/"-Infinity", null (-> zeros; *is_null = 1),
 *  base64 strings for raw types; bool true/false.
 *  Datetimes (both): an integer or "NaT" (INT64_MIN). Vlen kinds have no fixed-size fill value: see
 *  zg_fill_vlen_from_json. */
zgpu_status zg_fill_from_json(const zj_value *v, const zg_dtype *dt, int zarr_format, uint8_t *out, int *is_null);
/** Inverse: the JSON that zarr-python would write for this fill value in the given format. */
zj_value *zg_fill_to_json(const uint8_t *fill, const zg_dtype *dt, int zarr_format);

/** The fill value of a vlen kind: a string (ZG_KIND_STRING: its UTF-8 bytes, checked; BYTES: base64, as zarr-python
 *  writes it) or v2 null / absent (empty). *out: malloc'd (may be NULL when *n is 0). */
zgpu_status zg_fill_vlen_from_json(const zj_value *v, const zg_dtype *dt, int zarr_format, uint8_t **out, size_t *n);
/** Inverse: the JSON string zarr-python writes for a vlen fill value. */
zj_value *zg_fill_vlen_to_json(const uint8_t *p, size_t n, const zg_dtype *dt);
/** 1 if p[0..n) is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF). */
int zg_utf8_valid(const uint8_t *p, size_t n);

/** IEEE half <-> float conversions (exact for all finite halves; round-to-nearest-even on narrowing). */
float zg_half_to_float(uint16_t h);
uint16_t zg_float_to_half(float f);
/** double -> half rounded once (through float it would round twice: 1 + 2^-11 + 2^-40 would become 1.0). */
uint16_t zg_double_to_half(double d);

#endif
