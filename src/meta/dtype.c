/* Data types and fill values of Zarr v2 and v3. */
#include "meta/dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/status.h"
#include "meta/names.h"

/* The largest raw element zgpu accepts (bytes). Larger "rN" types are valid Zarr but make no sense to read
 * and would let a tiny document demand a huge fill value allocation. */
#define ZG_RAW_MAX_BYTES (1u << 20)

typedef struct dtype_entry {
    const char *name;
    zgpu_dtype id;
    uint32_t size;
} dtype_entry;

static const dtype_entry k_dtypes[] = {
    {"bool", ZGPU_BOOL, 1},       {"int8", ZGPU_INT8, 1},         {"int16", ZGPU_INT16, 2},
    {"int32", ZGPU_INT32, 4},     {"int64", ZGPU_INT64, 8},       {"uint8", ZGPU_UINT8, 1},
    {"uint16", ZGPU_UINT16, 2},   {"uint32", ZGPU_UINT32, 4},     {"uint64", ZGPU_UINT64, 8},
    {"float16", ZGPU_FLOAT16, 2}, {"float32", ZGPU_FLOAT32, 4},   {"float64", ZGPU_FLOAT64, 8},
    {"complex64", ZGPU_COMPLEX64, 8}, {"complex128", ZGPU_COMPLEX128, 16},
};

static void set_dtype(zg_dtype *out, zgpu_dtype id, uint32_t size, const char *name) {
    memset(out, 0, sizeof *out);
    out->id = id;
    out->size = size;
    snprintf(out->name, sizeof out->name, "%s", name);
}

static int set_from_id(zgpu_dtype id, zg_dtype *out) {
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (k_dtypes[i].id == id) { set_dtype(out, id, k_dtypes[i].size, k_dtypes[i].name); return 1; }
    return 0;
}

/* Parses the decimal digits of s entirely into *out (no sign, no leading '+' or '0', at most 9 digits): NumPy
 * and zarr-python know "<f4", not "<f04". */
static int parse_small_decimal(const char *s, uint32_t *out) {
    if (!s[0] || strlen(s) > 9 || (s[0] == '0' && s[1])) return 0;
    uint32_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        v = v * 10 + (uint32_t)(*p - '0');
    }
    *out = v;
    return 1;
}

static int set_raw(uint32_t bytes, zg_dtype *out) {
    if (bytes == 0 || bytes > ZG_RAW_MAX_BYTES) return 0;
    char name[16];
    snprintf(name, sizeof name, "r%u", bytes * 8u);
    set_dtype(out, ZGPU_RAW, bytes, name);
    return 1;
}

int zg_dtype_from_name(const char *name, zg_dtype *out) {
    if (!name) return 0;
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (strcmp(name, k_dtypes[i].name) == 0) {
            set_dtype(out, k_dtypes[i].id, k_dtypes[i].size, k_dtypes[i].name);
            return 1;
        }
    uint32_t bits;
    if (name[0] == 'r' && name[1] != '0' && parse_small_decimal(name + 1, &bits) && bits % 8 == 0)
        return set_raw(bits / 8, out);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * numpy.datetime64 / numpy.timedelta64: int64 counts of scale x unit
 * ------------------------------------------------------------------------------------------------- */

/* NumPy's units; zarr-python also writes "μs" (U+03BC) for microseconds, which NumPy calls "us". */
static const char *const k_time_units[] = {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
                                           "generic", NULL};

/* The unit as NumPy names it, or NULL when s[0..len) is not one. */
static const char *time_unit(const char *s, size_t len) {
    if (len == 3 && memcmp(s, "\xce\xbcs", 3) == 0) return "us";
    for (const char *const *u = k_time_units; *u; u++)
        if (strlen(*u) == len && memcmp(*u, s, len) == 0) return *u;
    return NULL;
}

static void set_time(zg_dtype *out, int timedelta, const char *unit, uint32_t scale) {
    set_dtype(out, ZGPU_INT64, 8, timedelta ? "numpy.timedelta64" : "numpy.datetime64");
    out->kind = timedelta ? ZG_KIND_TIMEDELTA : ZG_KIND_DATETIME;
    snprintf(out->unit, sizeof out->unit, "%s", unit);
    out->scale = scale;
}

/* {"name": ..., "configuration": {"unit": U, "scale_factor": N}}: both members and no others, as zarr-python
 * requires; scale_factor in [1, 2^31). */
static zgpu_status time_from_v3(const zj_value *v, const char *name, zg_dtype *out) {
    const zj_value *conf = zj_get(v, "configuration");
    static const char *const members[] = {"name", "configuration", NULL};
    for (size_t i = 0; i < v->n; i++) {
        int known = 0;
        for (const char *const *m = members; *m; m++) known |= strcmp(v->keys[i], *m) == 0;
        if (!known)
            return zg_error(ZGPU_ERR_BAD_METADATA, "data_type '%s': member \"%.64s\" is not allowed", name, v->keys[i]);
    }
    if (!conf || conf->type != ZJ_OBJECT)
        return zg_error(ZGPU_ERR_BAD_METADATA, "data_type '%s' needs a configuration {\"unit\", \"scale_factor\"}", name);
    for (size_t i = 0; i < conf->n; i++)
        if (strcmp(conf->keys[i], "unit") != 0 && strcmp(conf->keys[i], "scale_factor") != 0)
            return zg_error(ZGPU_ERR_BAD_METADATA, "data_type '%s': configuration member \"%.64s\" is not allowed",
                            name, conf->keys[i]);
    const zj_value *unit = zj_get(conf, "unit");
    uint64_t scale;
    const char *u = unit && unit->type == ZJ_STRING ? time_unit(unit->str, unit->len) : NULL;
    if (!u) {
        char q[96];
        return zg_error(ZGPU_ERR_BAD_METADATA,
                        "data_type '%s': configuration.unit %s is not a NumPy time unit (Y M W D h m s ms us ns ps fs "
                        "as generic)", name, unit && unit->type == ZJ_STRING ? zg_meta_quote(unit->str, unit->len, q, sizeof q) : "(missing or not a string)");
    }
    if (!zj_is_uint(zj_get(conf, "scale_factor"), &scale) || scale < 1 || scale >= (UINT64_C(1) << 31))
        return zg_error(ZGPU_ERR_BAD_METADATA, "data_type '%s': configuration.scale_factor must be an integer in "
                        "[1, 2147483647]", name);
    set_time(out, name[6] == 't', u, (uint32_t)scale);
    return ZGPU_OK;
}

/* The part of a v2 typestring after "<M8" / ">m8": "" (generic) or "[" [digits] unit "]". */
static int time_from_v2_suffix(const char *s, int timedelta, zg_dtype *out) {
    if (!*s) {
        set_time(out, timedelta, "generic", 1);
        return 1;
    }
    size_t len = strlen(s);
    if (s[0] != '[' || s[len - 1] != ']' || len < 3) return 0;
    const char *p = s + 1, *end = s + len - 1;
    uint64_t scale = 0;
    int digits = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        if (digits == 0 && *p == '0') return 0; /* NumPy writes no leading zeros (and no scale 0) */
        scale = scale * 10 + (uint64_t)(*p++ - '0');
        if (++digits > 10) return 0;
    }
    if (!digits) scale = 1;
    if (scale < 1 || scale >= (UINT64_C(1) << 31)) return 0;
    const char *u = time_unit(p, (size_t)(end - p));
    if (!u) return 0;
    set_time(out, timedelta, u, (uint32_t)scale);
    return 1;
}

/* ---------------------------------------------------------------------------------------------------
 * v2 structured dtypes: [[name, type], [name, type, shape], ...], types typestrings or nested lists
 * ------------------------------------------------------------------------------------------------- */

/* Limits on documents that could otherwise demand deep recursion or huge records (NumPy has its own). */
#define ZG_STRUCT_MAX_DEPTH 16
#define ZG_STRUCT_MAX_FIELDS 4096

/* Bytes of one leaf typestring of a record field: the plain types, raw V, datetimes, and the fixed-width strings
 * S<n> / U<n> that only live inside records here (records are opaque bytes to zgpu). 0 if not one. */
static uint64_t struct_leaf_size(const char *ts) {
    zg_dtype dt;
    int big;
    if (ts[0] && ts[1] && (ts[0] == '<' || ts[0] == '>' || ts[0] == '|') && (ts[1] == 'S' || ts[1] == 'U')) {
        uint32_t n;
        if (!parse_small_decimal(ts + 2, &n) || n == 0) return 0;
        if (ts[1] == 'U' && ts[0] == '|') return 0;
        return ts[1] == 'U' ? 4 * (uint64_t)n : n;
    }
    zgpu_status st = zg_dtype_from_v2(ts, &dt, &big);
    return st == ZGPU_OK ? dt.size : 0;
}

/* The record size of a field list, at nesting `depth`; *fields counts fields over the whole tree. */
static zgpu_status struct_size(const zj_value *list, int depth, uint32_t *fields, uint64_t *size) {
    if (depth > ZG_STRUCT_MAX_DEPTH)
        return zg_error(ZGPU_ERR_UNSUPPORTED, "structured dtype nests deeper than %d levels", ZG_STRUCT_MAX_DEPTH);
    if (list->type != ZJ_ARRAY || list->n == 0)
        return zg_error(ZGPU_ERR_BAD_METADATA, "structured dtype: a field list must be a non-empty list");
    uint64_t total = 0;
    for (size_t i = 0; i < list->n; i++) {
        const zj_value *f = list->items[i];
        if (++*fields > ZG_STRUCT_MAX_FIELDS)
            return zg_error(ZGPU_ERR_UNSUPPORTED, "structured dtype has more than %d fields", ZG_STRUCT_MAX_FIELDS);
        if (f->type != ZJ_ARRAY || (f->n != 2 && f->n != 3) || f->items[0]->type != ZJ_STRING)
            return zg_error(ZGPU_ERR_BAD_METADATA,
                            "structured dtype: field %zu must be [name, type] or [name, type, shape]", i);
        const zj_value *name = f->items[0];
        char q[96];
        if (name->len == 0)
            return zg_error(ZGPU_ERR_BAD_METADATA, "structured dtype: field %zu has an empty name (padding is not "
                            "supported)", i);
        ZG_FORWARD(zg_meta_check_name(name, "structured dtype field name"));
        for (size_t k = 0; k < i; k++)
            if (list->items[k]->items[0]->len == name->len && !memcmp(list->items[k]->items[0]->str, name->str, name->len))
                return zg_error(ZGPU_ERR_BAD_METADATA, "structured dtype: field name %s appears twice",
                                zg_meta_quote(name->str, name->len, q, sizeof q));
        const zj_value *type = f->items[1];
        uint64_t item;
        if (type->type == ZJ_STRING) {
            ZG_FORWARD(zg_meta_check_name(type, "structured dtype field type"));
            item = struct_leaf_size(type->str);
            if (!item)
                return zg_error(ZGPU_ERR_UNSUPPORTED, "structured dtype: field %s has type %s, which is not a "
                                "fixed-size NumPy typestring zgpu reads", zg_meta_quote(name->str, name->len, q, sizeof q),
                                type->str);
        } else {
            ZG_FORWARD(struct_size(type, depth + 1, fields, &item));
        }
        if (f->n == 3) {
            const zj_value *shape = f->items[2];
            if (shape->type != ZJ_ARRAY || shape->n == 0 || shape->n > ZGPU_MAX_DIMS)
                return zg_error(ZGPU_ERR_BAD_METADATA, "structured dtype: the shape of field %s must be a list of 1 "
                                "to %d extents", zg_meta_quote(name->str, name->len, q, sizeof q), ZGPU_MAX_DIMS);
            for (size_t d = 0; d < shape->n; d++) {
                uint64_t e;
                if (!zj_is_uint(shape->items[d], &e) || e == 0)
                    return zg_error(ZGPU_ERR_BAD_METADATA, "structured dtype: the shape of field %s has an extent "
                                    "that is not a positive integer", zg_meta_quote(name->str, name->len, q, sizeof q));
                if (e > ZG_RAW_MAX_BYTES || item > ZG_RAW_MAX_BYTES / e) goto too_big;
                item *= e;
            }
        }
        total += item;
        if (total > ZG_RAW_MAX_BYTES) goto too_big;
    }
    *size = total;
    return ZGPU_OK;
too_big:
    return zg_error(ZGPU_ERR_UNSUPPORTED, "structured dtype: records larger than %u bytes are not supported",
                    ZG_RAW_MAX_BYTES);
}

zgpu_status zg_dtype_from_v2_struct(const zj_value *fields, zg_dtype *out) {
    uint32_t count = 0;
    uint64_t size = 0;
    ZG_FORWARD(struct_size(fields, 1, &count, &size));
    set_raw((uint32_t)size, out);
    snprintf(out->name, sizeof out->name, "structured");
    out->kind = ZG_KIND_STRUCT;
    return ZGPU_OK;
}

zj_value *zg_dtype_to_v3_json(const zg_dtype *dt) {
    if (dt->kind != ZG_KIND_DATETIME && dt->kind != ZG_KIND_TIMEDELTA) return zj_new_string(dt->name);
    zj_value *conf = zj_new_object();
    if (!conf || zj_set(conf, "unit", zj_new_string(dt->unit)) != ZGPU_OK ||
        zj_set(conf, "scale_factor", zj_new_uint(dt->scale)) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    zj_value *o = zj_new_object();
    /* (zj_set takes its value, also when it fails) */
    if (!o || zj_set(o, "name", zj_new_string(dt->name)) != ZGPU_OK || zj_set(o, "configuration", conf) != ZGPU_OK) {
        if (!o || !zj_get(o, "name")) zj_free(conf);
        zj_free(o);
        return NULL;
    }
    return o;
}

static void set_vlen(zg_dtype *out, zg_dtype_kind kind) {
    set_dtype(out, kind == ZG_KIND_STRING ? ZGPU_STRING : ZGPU_BYTES, 0,
              kind == ZG_KIND_STRING ? "string" : "variable_length_bytes");
    out->kind = kind;
}

zgpu_status zg_dtype_object_v2(const char *codec_id, zg_dtype *out) {
    if (codec_id && !strcmp(codec_id, "vlen-utf8")) set_vlen(out, ZG_KIND_STRING);
    else if (codec_id && !strcmp(codec_id, "vlen-bytes")) set_vlen(out, ZG_KIND_BYTES);
    else
        return zg_error(ZGPU_ERR_UNSUPPORTED, "dtype '|O' with object codec '%.64s' is not supported (Python objects; "
                        "zgpu reads vlen-utf8 and vlen-bytes)", codec_id ? codec_id : "(none: no filters)");
    return ZGPU_OK;
}

zgpu_status zg_dtype_from_v3(const zj_value *v, zg_dtype *out) {
    if (!v) return zg_error(ZGPU_ERR_BAD_METADATA, "data_type is missing");
    if (v->type == ZJ_STRING) {
        /* "int32\u0000x" would compare equal to "int32" as a C string. */
        ZG_FORWARD(zg_meta_check_name(v, "data_type"));
        if (zg_dtype_from_name(v->str, out)) return ZGPU_OK;
        /* variable-length: zarr-python 3.1 writes "string" and "variable_length_bytes" (and reads "bytes") */
        if (!strcmp(v->str, "string") || !strcmp(v->str, "variable_length_bytes") || !strcmp(v->str, "bytes")) {
            set_vlen(out, v->str[0] == 's' ? ZG_KIND_STRING : ZG_KIND_BYTES);
            return ZGPU_OK;
        }
        if (v->str[0] == 'r' && v->str[1] >= '1' && v->str[1] <= '9')
            return zg_error(ZGPU_ERR_UNSUPPORTED,
                            "data_type '%s': raw types need a bit count that is a multiple of 8, at most %u",
                            v->str, ZG_RAW_MAX_BYTES * 8u);
        return zg_error(ZGPU_ERR_UNSUPPORTED, "data_type '%s' is not supported", v->str);
    }
    if (v->type == ZJ_OBJECT) {
        const char *name = zj_string(zj_get(v, "name"));
        if (!name) return zg_error(ZGPU_ERR_BAD_METADATA, "data_type object has no string \"name\"");
        ZG_FORWARD(zg_meta_check_name(zj_get(v, "name"), "data_type.name"));
        const zj_value *conf = zj_get(v, "configuration");
        /* zarr-python writes fixed-size opaque bytes as {"name":"raw_bytes","configuration":{"length_bytes":N}}. */
        if (strcmp(name, "raw_bytes") == 0) {
            uint64_t n;
            if (!zj_is_uint(zj_get(conf, "length_bytes"), &n) || n == 0)
                return zg_error(ZGPU_ERR_BAD_METADATA,
                                "data_type 'raw_bytes' needs configuration.length_bytes >= 1");
            if (n > ZG_RAW_MAX_BYTES || !set_raw((uint32_t)n, out))
                return zg_error(ZGPU_ERR_UNSUPPORTED, "data_type 'raw_bytes' of %llu bytes is too large (max %u)",
                                (unsigned long long)n, ZG_RAW_MAX_BYTES);
            return ZGPU_OK;
        }
        if (strcmp(name, "numpy.datetime64") == 0 || strcmp(name, "numpy.timedelta64") == 0)
            return time_from_v3(v, name, out);
        /* A plain name wrapped in an object without configuration is the same data type. */
        if (!conf && zg_dtype_from_name(name, out)) return ZGPU_OK;
        return zg_error(ZGPU_ERR_UNSUPPORTED, "data_type '%s' is not supported", name);
    }
    return zg_error(ZGPU_ERR_BAD_METADATA, "data_type must be a string or an object");
}

zgpu_status zg_dtype_from_v2(const char *typestr, zg_dtype *out, int *big_endian) {
    if (!typestr) return zg_error(ZGPU_ERR_BAD_METADATA, "dtype is missing");
    size_t len = strlen(typestr);
    char order = typestr[0];
    if (len < 2 || (order != '<' && order != '>' && order != '|'))
        return zg_error(ZGPU_ERR_BAD_METADATA, "dtype '%s' is not a NumPy typestring (byte order <, > or | first)",
                        typestr);
    char kind = typestr[1];
    if ((kind == 'M' || kind == 'm') && typestr[2] == '8') {
        if (order == '|' || !time_from_v2_suffix(typestr + 3, kind == 'm', out))
            return zg_error(ZGPU_ERR_BAD_METADATA,
                            "dtype '%.64s' is not a NumPy %s typestring ('<' or '>', then %s8, then nothing or "
                            "[N unit], e.g. \"<%s8[10ms]\")", typestr, kind == 'M' ? "datetime64" : "timedelta64",
                            kind == 'M' ? "M" : "m", kind == 'M' ? "M" : "m");
        if (big_endian) *big_endian = order == '>';
        return ZGPU_OK;
    }
    uint32_t size;
    int size_ok = parse_small_decimal(typestr + 2, &size);
    zgpu_dtype id = 0;
    if (size_ok) {
        switch (kind) {
        case 'b': id = size == 1 ? ZGPU_BOOL : 0; break;
        case 'i': id = size == 1 ? ZGPU_INT8 : size == 2 ? ZGPU_INT16 : size == 4 ? ZGPU_INT32 : size == 8 ? ZGPU_INT64 : 0; break;
        case 'u': id = size == 1 ? ZGPU_UINT8 : size == 2 ? ZGPU_UINT16 : size == 4 ? ZGPU_UINT32 : size == 8 ? ZGPU_UINT64 : 0; break;
        case 'f': id = size == 2 ? ZGPU_FLOAT16 : size == 4 ? ZGPU_FLOAT32 : size == 8 ? ZGPU_FLOAT64 : 0; break;
        case 'c': id = size == 8 ? ZGPU_COMPLEX64 : size == 16 ? ZGPU_COMPLEX128 : 0; break;
        case 'V': id = ZGPU_RAW; break;
        default: break;
        }
    }
    if (!id) {
        const char *what = "";
        switch (kind) {
        case 'U': what = " (unicode strings)"; break;
        case 'S': case 'a': what = " (byte strings)"; break;
        case 'O': what = " (Python objects)"; break;
        case 'M': case 'm': what = " (datetimes are 8 bytes: M8, m8)"; break;
        default: break;
        }
        return zg_error(ZGPU_ERR_UNSUPPORTED, "dtype '%s'%s is not supported", typestr, what);
    }
    if (id == ZGPU_RAW) {
        if (!set_raw(size, out))
            return zg_error(ZGPU_ERR_UNSUPPORTED, "dtype '%s': raw items of %u bytes are not supported (1..%u)",
                            typestr, size, ZG_RAW_MAX_BYTES);
    } else {
        set_from_id(id, out);
    }
    if (order == '|' && out->size > 1 && id != ZGPU_RAW)
        return zg_error(ZGPU_ERR_BAD_METADATA, "dtype '%s': a %u-byte type needs byte order '<' or '>'", typestr,
                        out->size);
    if (big_endian) *big_endian = order == '>';
    return ZGPU_OK;
}

const char *zg_dtype_to_v2(const zg_dtype *dt, int big_endian, char *buf) {
    if (dt->kind == ZG_KIND_DATETIME || dt->kind == ZG_KIND_TIMEDELTA) {
        char c = dt->kind == ZG_KIND_DATETIME ? 'M' : 'm', o = big_endian ? '>' : '<';
        if (strcmp(dt->unit, "generic") == 0 && dt->scale == 1) snprintf(buf, ZG_DTYPE_V2_MAX, "%c%c8", o, c);
        else if (dt->scale == 1) snprintf(buf, ZG_DTYPE_V2_MAX, "%c%c8[%s]", o, c, dt->unit);
        else snprintf(buf, ZG_DTYPE_V2_MAX, "%c%c8[%u%s]", o, c, dt->scale, dt->unit);
        return buf;
    }
    if (zg_dtype_is_vlen(dt)) {
        snprintf(buf, ZG_DTYPE_V2_MAX, "|O");
        return buf;
    }
    char order = (dt->size == 1 || dt->id == ZGPU_RAW) ? '|' : big_endian ? '>' : '<';
    char kind;
    switch (dt->id) {
    case ZGPU_BOOL: kind = 'b'; break;
    case ZGPU_INT8: case ZGPU_INT16: case ZGPU_INT32: case ZGPU_INT64: kind = 'i'; break;
    case ZGPU_UINT8: case ZGPU_UINT16: case ZGPU_UINT32: case ZGPU_UINT64: kind = 'u'; break;
    case ZGPU_FLOAT16: case ZGPU_FLOAT32: case ZGPU_FLOAT64: kind = 'f'; break;
    case ZGPU_COMPLEX64: case ZGPU_COMPLEX128: kind = 'c'; break;
    default: kind = 'V'; break;
    }
    snprintf(buf, 16, "%c%c%u", order, kind, dt->size);
    return buf;
}

uint32_t zg_dtype_swap_unit(const zg_dtype *dt) {
    switch (dt->id) {
    case ZGPU_COMPLEX64: return 4;
    case ZGPU_COMPLEX128: return 8;
    case ZGPU_RAW: return 1;
    default: return dt->size;
    }
}

/* ---------------------------------------------------------------------------------------------------
 * Half precision
 * ------------------------------------------------------------------------------------------------- */

float zg_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13); /* inf, or NaN keeping its payload */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13); /* rebias 15 -> 127 */
    } else if (mant == 0) {
        bits = sign;
    } else {
        /* Subnormal half: normalise (value = mant * 2^-24). */
        int e = -14;
        while (!(mant & 0x400)) { mant <<= 1; e--; }
        mant &= 0x3ff;
        bits = sign | ((uint32_t)(e + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* x >> s rounded to nearest, ties to even (s in 1..63). */
static uint64_t shift_round_even(uint64_t x, unsigned s) {
    uint64_t q = x >> s, rem = x & ((UINT64_C(1) << s) - 1), half = UINT64_C(1) << (s - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return q;
}

/* Correct rounding straight from double (a float first would round twice). */
static uint16_t double_to_half(double d) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 63) << 15);
    int exp = (int)((bits >> 52) & 0x7ff);
    uint64_t mant = bits & ((UINT64_C(1) << 52) - 1);
    if (exp == 0x7ff) {
        if (!mant) return sign | 0x7c00;
        return (uint16_t)(sign | 0x7e00 | ((mant >> 42) & 0x3ff)); /* quiet NaN, top payload bits kept */
    }
    if (exp == 0) return sign; /* zero or double subnormal: far below half's smallest subnormal */
    int e = exp - 1023;
    if (e > 15) return sign | 0x7c00;
    uint64_t sig = mant | (UINT64_C(1) << 52);
    if (e >= -14) {
        /* Normal: the rounded 11-bit significand carries into the exponent (and to inf) by itself. */
        uint64_t r = shift_round_even(sig, 42);
        return (uint16_t)(sign | (uint16_t)((((uint64_t)(e + 14)) << 10) + r));
    }
    unsigned shift = (unsigned)(28 - e); /* value in units of 2^-24 */
    if (shift > 63) return sign;
    return (uint16_t)(sign | (uint16_t)shift_round_even(sig, shift));
}

uint16_t zg_float_to_half(float f) { return double_to_half((double)f); }
uint16_t zg_double_to_half(double d) { return double_to_half(d); }

/* ---------------------------------------------------------------------------------------------------
 * Fill values
 * ------------------------------------------------------------------------------------------------- */

/* Parses "0x" + exactly 2*size hex digits into an unsigned bit pattern: the v3 spec gives the raw bytes of the
 * IEEE value, so another width is an error (zero-extending "0x1234" for float32 would read a value that
 * zarr-python, which takes 4 digits as a float16, does not). */
static int parse_hex_bits(const char *s, size_t len, uint32_t size, uint64_t *out) {
    if (len < 2 || s[0] != '0' || s[1] != 'x') return 0;
    const char *p = s + 2;
    size_t n = len - 2;
    if (n != 2 * (size_t)size) return 0;
    uint64_t v = 0;
    for (const char *e = p + n; p < e; p++) {
        int d;
        if (*p >= '0' && *p <= '9') d = *p - '0';
        else if (*p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
        else return 0;
        v = (v << 4) | (uint64_t)d;
    }
    *out = v;
    return 1;
}

static int all_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F'))) return 0;
    return 1;
}

/* The whole string equals word ("NaN\u0000" is not "NaN"). */
static int str_is(const zj_value *v, const char *word) { return v->len == strlen(word) && !memcmp(v->str, word, v->len); }

static const char *hex_hint(uint32_t size) {
    return size == 2 ? " or \"0x\" and 4 hex digits" : size == 4 ? " or \"0x\" and 8 hex digits" : " or \"0x\" and 16 hex digits";
}

/* Writes one float component (size 2, 4 or 8) from a JSON value into out. */
static zgpu_status float_from_json(const zj_value *v, uint32_t size, int zarr_format, const char *type_name,
                                   uint8_t *out) {
    double d;
    if (v && v->type == ZJ_NUMBER) {
        d = isnan(v->num) ? NAN : v->num; /* the canonical quiet NaN, whatever sign the parser produced */
    } else if (v && v->type == ZJ_STRING) {
        uint64_t bits;
        if (str_is(v, "NaN")) d = NAN;
        else if (str_is(v, "Infinity")) d = INFINITY;
        else if (str_is(v, "-Infinity")) d = -INFINITY;
        else if (zarr_format == 3 && parse_hex_bits(v->str, v->len, size, &bits)) {
            if (size == 2) { uint16_t b = (uint16_t)bits; memcpy(out, &b, 2); }
            else if (size == 4) { uint32_t b = (uint32_t)bits; memcpy(out, &b, 4); }
            else memcpy(out, &bits, 8);
            return ZGPU_OK;
        } else {
            char q[96];
            zg_meta_quote(v->str, v->len, q, sizeof q);
            if (zarr_format == 3 && v->len >= 2 && v->str[0] == '0' && v->str[1] == 'x' && all_hex(v->str + 2, v->len - 2))
                return zg_error(ZGPU_ERR_BAD_METADATA,
                                "fill_value %s has %zu hex digits; %s needs exactly %u (the value's %u bytes)", q,
                                v->len - 2, type_name, 2 * size, size);
            return zg_error(ZGPU_ERR_BAD_METADATA,
                            "fill_value %s is not valid for %s (expected a number, \"NaN\", \"Infinity\", "
                            "\"-Infinity\"%s)",
                            q, type_name, zarr_format == 3 ? hex_hint(size) : "");
        }
    } else {
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for %s must be a number or a string", type_name);
    }
    if (size == 2) {
        uint16_t h = double_to_half(d);
        memcpy(out, &h, 2);
    } else if (size == 4) {
        float f = (float)d; /* out-of-range finite values become inf, as NumPy does */
        if (isnan(d)) f = NAN;
        memcpy(out, &f, 4);
    } else {
        memcpy(out, &d, 8);
    }
    return ZGPU_OK;
}

static zgpu_status int_from_json(const zj_value *v, const zg_dtype *dt, int zarr_format, uint8_t *out) {
    int is_signed = dt->id >= ZGPU_INT8 && dt->id <= ZGPU_INT64;
    if (!v || v->type != ZJ_NUMBER)
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for %s must be an integer", dt->name);
    int64_t i = 0;
    uint64_t u = 0;
    int have = 0;
    if (v->is_int) {
        if (is_signed) have = zj_is_int(v, &i);
        else have = zj_is_uint(v, &u);
    } else if (zarr_format == 2 && isfinite(v->num) && v->num == floor(v->num)) {
        /* v2 writers sometimes store integral fill values as floats (0.0). */
        if (is_signed && v->num >= -9223372036854775808.0 && v->num < 9223372036854775808.0) { i = (int64_t)v->num; have = 1; }
        if (!is_signed && v->num >= 0 && v->num < 18446744073709551616.0) { u = (uint64_t)v->num; have = 1; }
    }
    if (!have) goto range;
    if (is_signed) {
        int bits = (int)dt->size * 8;
        if (bits < 64) {
            int64_t lo = -((int64_t)1 << (bits - 1)), hi = ((int64_t)1 << (bits - 1)) - 1;
            if (i < lo || i > hi) goto range;
        }
        switch (dt->size) {
        case 1: { int8_t x = (int8_t)i; memcpy(out, &x, 1); break; }
        case 2: { int16_t x = (int16_t)i; memcpy(out, &x, 2); break; }
        case 4: { int32_t x = (int32_t)i; memcpy(out, &x, 4); break; }
        default: memcpy(out, &i, 8); break;
        }
    } else {
        if (dt->size < 8 && u > ((UINT64_C(1) << (dt->size * 8)) - 1)) goto range;
        switch (dt->size) {
        case 1: { uint8_t x = (uint8_t)u; memcpy(out, &x, 1); break; }
        case 2: { uint16_t x = (uint16_t)u; memcpy(out, &x, 2); break; }
        case 4: { uint32_t x = (uint32_t)u; memcpy(out, &x, 4); break; }
        default: memcpy(out, &u, 8); break;
        }
    }
    return ZGPU_OK;
range:
    if (v->digits)
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value %.40s is out of range for %s", v->digits, dt->name);
    if (!v->is_int)
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value %.17g is not an integer of type %s", v->num, dt->name);
    if (v->is_negative)
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value %lld is out of range for %s", (long long)v->i64, dt->name);
    return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value %llu is out of range for %s", (unsigned long long)v->u64,
                    dt->name);
}

/* Padded base64 of exactly `size` bytes into out. */
static int base64_exact(const char *s, size_t len, uint8_t *out, size_t size) {
    size_t n;
    return zg_base64_decode(s, len, out, size, &n) && n == size;
}

zgpu_status zg_fill_from_json(const zj_value *v, const zg_dtype *dt, int zarr_format, uint8_t *out, int *is_null) {
    if (is_null) *is_null = 0;
    memset(out, 0, dt->size);
    if (!v) return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value is missing");
    if (v->type == ZJ_NULL) {
        if (zarr_format == 2) {
            if (is_null) *is_null = 1;
            return ZGPU_OK;
        }
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value must not be null in Zarr v3 (data type %s)", dt->name);
    }
    switch (dt->id) {
    case ZGPU_BOOL:
        if (v->type == ZJ_BOOL) { out[0] = v->boolean ? 1 : 0; return ZGPU_OK; }
        if (zarr_format == 2 && v->type == ZJ_NUMBER && (v->num == 0 || v->num == 1)) {
            out[0] = v->num == 1;
            return ZGPU_OK;
        }
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for bool must be true or false");
    case ZGPU_INT8: case ZGPU_INT16: case ZGPU_INT32: case ZGPU_INT64:
    case ZGPU_UINT8: case ZGPU_UINT16: case ZGPU_UINT32: case ZGPU_UINT64:
        if ((dt->kind == ZG_KIND_DATETIME || dt->kind == ZG_KIND_TIMEDELTA) && v->type == ZJ_STRING) {
            /* zarr-python writes NaT as the integer INT64_MIN and reads the string "NaT" too */
            if (!str_is(v, "NaT")) {
                char q[96];
                return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value %s for %s must be an integer or \"NaT\"",
                                zg_meta_quote(v->str, v->len, q, sizeof q), dt->name);
            }
            int64_t nat = INT64_MIN;
            memcpy(out, &nat, 8);
            return ZGPU_OK;
        }
        return int_from_json(v, dt, zarr_format, out);
    case ZGPU_FLOAT16: case ZGPU_FLOAT32: case ZGPU_FLOAT64:
        return float_from_json(v, dt->size, zarr_format, dt->name, out);
    case ZGPU_COMPLEX64: case ZGPU_COMPLEX128: {
        uint32_t part = dt->size / 2;
        if (v->type == ZJ_ARRAY) {
            if (v->n != 2)
                return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for %s must be a [real, imaginary] pair, got %zu items",
                                dt->name, v->n);
            ZG_FORWARD(float_from_json(v->items[0], part, zarr_format, dt->name, out));
            return float_from_json(v->items[1], part, zarr_format, dt->name, out + part);
        }
        if (zarr_format == 2 && (v->type == ZJ_NUMBER || v->type == ZJ_STRING)) {
            /* A lone real value; the imaginary part is +0 (already zeroed). */
            return float_from_json(v, part, zarr_format, dt->name, out);
        }
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for %s must be a [real, imaginary] pair", dt->name);
    }
    case ZGPU_RAW:
        if (v->type == ZJ_ARRAY && zarr_format == 3) {
            if (v->n != dt->size)
                return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for %s must list %u bytes, got %zu items", dt->name,
                                dt->size, v->n);
            for (size_t i = 0; i < v->n; i++) {
                uint64_t b;
                if (!zj_is_uint(v->items[i], &b) || b > 255)
                    return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for %s: item %zu is not a byte value 0..255",
                                    dt->name, i);
                out[i] = (uint8_t)b;
            }
            return ZGPU_OK;
        }
        if (v->type == ZJ_STRING) {
            if (base64_exact(v->str, v->len, out, dt->size)) return ZGPU_OK;
            char q[96];
            return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value %s for %s is not base64 of %u bytes",
                            zg_meta_quote(v->str, v->len, q, sizeof q), dt->name, dt->size);
        }
        if (zarr_format == 2 && v->type == ZJ_NUMBER && v->num == 0) return ZGPU_OK; /* zeros */
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for %s must be %s", dt->name,
                        zarr_format == 3 ? "an array of byte values" : "a base64 string");
    default:
        return zg_error(ZGPU_ERR_INTERNAL, "fill_value: unknown data type id %d", (int)dt->id);
    }
}

/* ---------------------------------------------------------------------------------------------------
 * Variable-length fill values and UTF-8
 * ------------------------------------------------------------------------------------------------- */

int zg_utf8_valid(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) { i++; continue; }
        size_t len;
        uint32_t cp, min;
        if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07, min = 0x10000;
        else return 0; /* a continuation byte first, an overlong 2-byte lead (c0, c1), or past U+10FFFF (f5..) */
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += len;
    }
    return 1;
}

zgpu_status zg_fill_vlen_from_json(const zj_value *v, const zg_dtype *dt, int zarr_format, uint8_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    if (!v || (v->type == ZJ_NULL && zarr_format == 2)) return ZGPU_OK; /* empty, as zarr-python's default */
    if (v->type != ZJ_STRING)
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for %s must be a string", dt->name);
    if (dt->kind == ZG_KIND_STRING) {
        /* (the JSON reader made it UTF-8; a lone surrogate escape would not be) */
        if (!zg_utf8_valid((const uint8_t *)v->str, v->len))
            return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value for string is not valid UTF-8");
        *out = malloc(v->len ? v->len : 1);
        if (!*out) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        memcpy(*out, v->str, v->len);
        *n = v->len;
        return ZGPU_OK;
    }
    size_t cap = v->len / 4 * 3;
    *out = malloc(cap ? cap : 1);
    if (!*out) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    size_t pad = v->len >= 1 && v->str[v->len - 1] == '=' ? (v->len >= 2 && v->str[v->len - 2] == '=' ? 2 : 1) : 0;
    if (v->len % 4 || !base64_exact(v->str, v->len, *out, cap - pad)) {
        free(*out);
        *out = NULL;
        char q[96];
        return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value %s for %s is not base64",
                        zg_meta_quote(v->str, v->len, q, sizeof q), dt->name);
    }
    *n = cap - pad;
    return ZGPU_OK;
}

zj_value *zg_fill_vlen_to_json(const uint8_t *p, size_t n, const zg_dtype *dt) {
    if (dt->kind == ZG_KIND_STRING) {
        char *s = malloc(n + 1);
        if (!s) return NULL;
        if (n) memcpy(s, p, n);
        s[n] = 0;
        zj_value *v = zj_new_string_len(s, n);
        free(s);
        return v;
    }
    char *s = zg_base64_encode(p, n);
    if (!s) return NULL;
    zj_value *v = zj_new_string(s);
    free(s);
    return v;
}

/* zj_append that also fails cleanly when the item could not be allocated. */
static int append_ok(zj_value *arr, zj_value *item) { return item && zj_append(arr, item) == ZGPU_OK; }

/* Float component -> JSON. v3 writes NaNs other than the canonical quiet NaN as hex so no bits are lost. */
static zj_value *float_to_json(const uint8_t *p, uint32_t size, int zarr_format) {
    double d;
    uint64_t bits = 0;
    int canonical_nan;
    if (size == 2) {
        uint16_t h;
        memcpy(&h, p, 2);
        bits = h;
        d = zg_half_to_float(h);
        canonical_nan = h == 0x7e00;
    } else if (size == 4) {
        float f;
        uint32_t b;
        memcpy(&f, p, 4);
        memcpy(&b, p, 4);
        bits = b;
        d = f;
        canonical_nan = b == 0x7fc00000u;
    } else {
        memcpy(&d, p, 8);
        memcpy(&bits, p, 8);
        canonical_nan = bits == UINT64_C(0x7ff8000000000000);
    }
    if (isnan(d)) {
        if (zarr_format == 3 && !canonical_nan) {
            char hex[24];
            snprintf(hex, sizeof hex, "0x%0*llx", (int)size * 2, (unsigned long long)bits);
            return zj_new_string(hex);
        }
        return zj_new_string("NaN");
    }
    if (isinf(d)) return zj_new_string(d > 0 ? "Infinity" : "-Infinity");
    return zj_new_double(d);
}

zj_value *zg_fill_to_json(const uint8_t *fill, const zg_dtype *dt, int zarr_format) {
    switch (dt->id) {
    case ZGPU_BOOL: return zj_new_bool(fill[0] != 0);
    case ZGPU_INT8: { int8_t x; memcpy(&x, fill, 1); return zj_new_int(x); }
    case ZGPU_INT16: { int16_t x; memcpy(&x, fill, 2); return zj_new_int(x); }
    case ZGPU_INT32: { int32_t x; memcpy(&x, fill, 4); return zj_new_int(x); }
    case ZGPU_INT64: { int64_t x; memcpy(&x, fill, 8); return zj_new_int(x); }
    case ZGPU_UINT8: return zj_new_uint(fill[0]);
    case ZGPU_UINT16: { uint16_t x; memcpy(&x, fill, 2); return zj_new_uint(x); }
    case ZGPU_UINT32: { uint32_t x; memcpy(&x, fill, 4); return zj_new_uint(x); }
    case ZGPU_UINT64: { uint64_t x; memcpy(&x, fill, 8); return zj_new_uint(x); }
    case ZGPU_FLOAT16: case ZGPU_FLOAT32: case ZGPU_FLOAT64: return float_to_json(fill, dt->size, zarr_format);
    case ZGPU_COMPLEX64: case ZGPU_COMPLEX128: {
        uint32_t part = dt->size / 2;
        zj_value *arr = zj_new_array();
        if (!arr) return NULL;
        if (!append_ok(arr, float_to_json(fill, part, zarr_format)) ||
            !append_ok(arr, float_to_json(fill + part, part, zarr_format))) {
            zj_free(arr);
            return NULL;
        }
        return arr;
    }
    case ZGPU_RAW: {
        if (zarr_format == 2) {
            char *s = zg_base64_encode(fill, dt->size);
            if (!s) return NULL;
            zj_value *v = zj_new_string(s);
            free(s);
            return v;
        }
        zj_value *arr = zj_new_array();
        if (!arr) return NULL;
        for (uint32_t i = 0; i < dt->size; i++)
            if (!append_ok(arr, zj_new_uint(fill[i]))) { zj_free(arr); return NULL; }
        return arr;
    }
    default: return NULL;
    }
}
