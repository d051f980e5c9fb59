/* Data type names, fill value JSON, default chunks and whole metadata documents (include/zgpu_meta.h), on the
 * JSON DOM and the dtype / fill value rules that parsing uses (meta/dtype.c), so what is written is what is read. */
#include "meta/build.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/status.h"

static int host_big_endian(void) {
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 0;
}

int zg_dtype_for(zgpu_dtype dtype, size_t itemsize, zg_dtype *out) {
    static const char *const names[] = {"",       "bool",    "int8",    "int16",     "int32",     "int64",
                                        "uint8",  "uint16",  "uint32",  "uint64",    "float16",   "float32",
                                        "float64", "complex64", "complex128"};
    if (dtype == ZGPU_RAW) {
        if (itemsize == 0 || itemsize > (1u << 20)) return 0;
        char name[24];
        snprintf(name, sizeof name, "r%zu", itemsize * 8);
        return zg_dtype_from_name(name, out);
    }
    if ((int)dtype < ZGPU_BOOL || (int)dtype > ZGPU_COMPLEX128) return 0;
    if (!zg_dtype_from_name(names[dtype], out)) return 0;
    return itemsize == 0 || itemsize == out->size;
}

/* ---- data types ---- */
static zgpu_status copy_out(const char *s, char *buf, size_t bufsize, const char *fn) {
    if (!buf || bufsize <= strlen(s)) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: buffer too small", fn);
    memcpy(buf, s, strlen(s) + 1);
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_dtype_from_name(const char *name, zgpu_dtype *dtype, size_t *itemsize) {
    zg_dtype dt;
    if (!name || !zg_dtype_from_name(name, &dt))
        return zg_error(ZGPU_ERR_UNSUPPORTED, "data type '%s' is not supported (bool, int8..int64, uint8..uint64, "
                        "float16/32/64, complex64/128, rN)", name ? name : "(null)");
    if (dtype) *dtype = dt.id;
    if (itemsize) *itemsize = dt.size;
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_dtype_name(zgpu_dtype dtype, size_t itemsize, char *buf, size_t bufsize) {
    zg_dtype dt;
    if (!zg_dtype_for(dtype, itemsize, &dt))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_dtype_name: unknown data type %d (item size %zu)",
                        (int)dtype, itemsize);
    return copy_out(dt.name, buf, bufsize, "zgpu_dtype_name");
}

ZGPU_API zgpu_status zgpu_dtype_from_typestr(const char *typestr, zgpu_dtype *dtype, size_t *itemsize,
                                             int *big_endian) {
    if (!typestr) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "NumPy typestring is NULL");
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%s", typestr);
    if (tmp[0] == '=') tmp[0] = host_big_endian() ? '>' : '<'; /* native order, as numpy's dtype.str never says */
    zg_dtype dt;
    int big = 0;
    zgpu_status st = strlen(typestr) >= sizeof tmp
                         ? zg_error(ZGPU_ERR_UNSUPPORTED, "dtype '%s' is not supported", typestr)
                         : zg_dtype_from_v2(tmp, &dt, &big);
    if (st != ZGPU_OK) return st;
    if (dtype) *dtype = dt.id;
    if (itemsize) *itemsize = dt.size;
    if (big_endian) *big_endian = big && dt.size > 1;
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_dtype_typestr(zgpu_dtype dtype, size_t itemsize, char byte_order, char *buf,
                                        size_t bufsize) {
    zg_dtype dt;
    if (!zg_dtype_for(dtype, itemsize, &dt))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_dtype_typestr: unknown data type %d (item size %zu)",
                        (int)dtype, itemsize);
    if (byte_order != '<' && byte_order != '>' && byte_order != '=')
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_dtype_typestr: byte order '%c' is not <, > or =", byte_order);
    int big = byte_order == '>' || (byte_order == '=' && host_big_endian());
    char tmp[ZG_DTYPE_V2_MAX];
    return copy_out(zg_dtype_to_v2(&dt, big, tmp), buf, bufsize, "zgpu_dtype_typestr");
}

/* ---- fill values ---- */
/* Decimal floats, nan, inf and infinity (any case, optional sign); nothing else (no hex floats). */
static int parse_float_text(const char *t, size_t n, double *out) {
    char tmp[64];
    while (n && isspace((unsigned char)*t)) t++, n--;
    while (n && isspace((unsigned char)t[n - 1])) n--;
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, t, n);
    tmp[n] = '\0';
    const char *s = tmp;
    int neg = *s == '-';
    if (*s == '-' || *s == '+') s++;
    if (!strcasecmp(s, "nan")) { *out = NAN; return 0; }
    if (!strcasecmp(s, "inf") || !strcasecmp(s, "infinity")) { *out = neg ? -INFINITY : INFINITY; return 0; }
    for (const char *c = s; *c; c++)
        if (!isdigit((unsigned char)*c) && *c != '.' && *c != 'e' && *c != 'E' && *c != '-' && *c != '+') return -1;
    char *end;
    double v = strtod(tmp, &end);
    if (end == tmp || *end) return -1;
    *out = v;
    return 0;
}

static void store_float(double v, uint32_t size, uint8_t *out) {
    if (size == 2) {
        uint16_t h = zg_double_to_half(v); /* one rounding, as NumPy's float16(text) */
        memcpy(out, &h, 2);
    } else if (size == 4) {
        float f = (float)v;
        memcpy(out, &f, 4);
    } else {
        memcpy(out, &v, 8);
    }
}

static int all_digits(const char *s, size_t n, int allow_sign) {
    if (allow_sign && n && *s == '-') s++, n--;
    if (!n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return 0;
    return 1;
}

/* Text -> dt->size native-endian bytes at out. */
static zgpu_status fill_from_text(const char *text, const zg_dtype *dt, uint8_t *out) {
    size_t n = strlen(text);
    int bits = (int)dt->size * 8;
    switch (dt->id) {
    case ZGPU_BOOL:
        if (!strcasecmp(text, "true") || !strcmp(text, "1")) out[0] = 1;
        else if (!strcasecmp(text, "false") || !strcmp(text, "0")) out[0] = 0;
        else return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "fill value '%s' is not a bool (true, false, 1, 0)", text);
        return ZGPU_OK;
    case ZGPU_INT8: case ZGPU_INT16: case ZGPU_INT32: case ZGPU_INT64: {
        if (!all_digits(text, n, 1))
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "fill value '%s' is not an integer", text);
        errno = 0;
        long long v = strtoll(text, NULL, 10);
        if (errno == ERANGE || (bits < 64 && (v < -(1LL << (bits - 1)) || v >= (1LL << (bits - 1)))))
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "fill value %s is out of range for int%d", text, bits);
        int64_t x = v;
        if (bits == 8) { int8_t y = (int8_t)x; memcpy(out, &y, 1); }
        else if (bits == 16) { int16_t y = (int16_t)x; memcpy(out, &y, 2); }
        else if (bits == 32) { int32_t y = (int32_t)x; memcpy(out, &y, 4); }
        else memcpy(out, &x, 8);
        return ZGPU_OK;
    }
    case ZGPU_UINT8: case ZGPU_UINT16: case ZGPU_UINT32: case ZGPU_UINT64: {
        if (!all_digits(text, n, 0) || n > 20)
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "fill value '%s' is not an unsigned integer", text);
        errno = 0;
        unsigned long long v = strtoull(text, NULL, 10);
        if (errno == ERANGE || (bits < 64 && v >> bits))
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "fill value %s is out of range for uint%d", text, bits);
        uint64_t x = v;
        if (bits == 8) { uint8_t y = (uint8_t)x; memcpy(out, &y, 1); }
        else if (bits == 16) { uint16_t y = (uint16_t)x; memcpy(out, &y, 2); }
        else if (bits == 32) { uint32_t y = (uint32_t)x; memcpy(out, &y, 4); }
        else memcpy(out, &x, 8);
        return ZGPU_OK;
    }
    case ZGPU_FLOAT16: case ZGPU_FLOAT32: case ZGPU_FLOAT64: {
        double v;
        if (parse_float_text(text, n, &v) != 0)
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "fill value '%s' is not a number", text);
        store_float(v, dt->size, out);
        return ZGPU_OK;
    }
    case ZGPU_COMPLEX64: case ZGPU_COMPLEX128: {
        const char *comma = strchr(text, ',');
        double re, im = 0;
        if (parse_float_text(text, comma ? (size_t)(comma - text) : n, &re) != 0 ||
            (comma && parse_float_text(comma + 1, strlen(comma + 1), &im) != 0))
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT,
                            "fill value '%s' is not a complex number (write RE or RE,IM)", text);
        store_float(re, dt->size / 2, out);
        store_float(im, dt->size / 2, out + dt->size / 2);
        return ZGPU_OK;
    }
    case ZGPU_RAW: {
        /* One byte value for every byte, or exactly itemsize comma-separated byte values. */
        const char *p = text;
        size_t k = 0;
        int bad = 0;
        for (;;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            long v = all_digits(p, len, 0) && len <= 3 ? strtol(p, NULL, 10) : -1;
            if (k >= dt->size || v < 0 || v > 255) { bad = 1; break; }
            out[k++] = (uint8_t)v;
            if (!e) break;
            p = e + 1;
        }
        if (!bad && k == 1) memset(out, out[0], dt->size);
        else if (!bad && k != dt->size) bad = 1;
        if (bad)
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT,
                            "fill value '%s' for a %u-byte raw type: give one byte value (0-255) or %u of them", text,
                            dt->size, dt->size);
        return ZGPU_OK;
    }
    default: return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "fill value: unknown data type");
    }
}

static zgpu_status fill_json(const uint8_t *bytes, const zg_dtype *dt, int zarr_format, char **json) {
    zj_value *v = bytes ? zg_fill_to_json(bytes, dt, zarr_format) : NULL;
    if (!bytes) {
        uint8_t *zero = calloc(1, dt->size);
        if (!zero) return zg_error(ZGPU_ERR_NO_MEMORY, "fill value: out of memory");
        v = zarr_format == 2 ? zj_new_null() : zg_fill_to_json(zero, dt, zarr_format);
        free(zero);
    }
    *json = v ? zj_write(v, 0) : NULL;
    zj_free(v);
    return *json ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "fill value: out of memory");
}

static zgpu_status fill_args(zgpu_dtype dtype, size_t itemsize, int zarr_format, char **json, zg_dtype *dt,
                             const char *fn) {
    if (!json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: json is NULL", fn);
    *json = NULL;
    if (zarr_format != 2 && zarr_format != 3)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: zarr_format %d is not 2 or 3", fn, zarr_format);
    if (!zg_dtype_for(dtype, itemsize, dt))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: unknown data type %d (item size %zu)", fn, (int)dtype,
                        itemsize);
    return ZGPU_OK;
}

ZGPU_API zgpu_status zgpu_fill_json_from_text(const char *text, zgpu_dtype dtype, size_t itemsize, int zarr_format,
                                              char **json) {
    zg_dtype dt;
    ZG_FORWARD(fill_args(dtype, itemsize, zarr_format, json, &dt, "zgpu_fill_json_from_text"));
    if (!text) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_fill_json_from_text: text is NULL");
    uint8_t *bytes = calloc(1, dt.size);
    if (!bytes) return zg_error(ZGPU_ERR_NO_MEMORY, "fill value: out of memory");
    zgpu_status st = fill_from_text(text, &dt, bytes);
    if (st == ZGPU_OK) st = fill_json(bytes, &dt, zarr_format, json);
    free(bytes);
    return st;
}

ZGPU_API zgpu_status zgpu_fill_json_from_bytes(const void *bytes, zgpu_dtype dtype, size_t itemsize,
                                               int zarr_format, char **json) {
    zg_dtype dt;
    ZG_FORWARD(fill_args(dtype, itemsize, zarr_format, json, &dt, "zgpu_fill_json_from_bytes"));
    return fill_json(bytes, &dt, zarr_format, json);
}

/* ---- default chunks ---- */
static uint64_t box_bytes(int ndim, const uint64_t *shape, size_t itemsize) {
    /* Saturating: only compared against a few MiB. */
    uint64_t n = itemsize;
    for (int i = 0; i < ndim; i++) {
        uint64_t s = shape[i] ? shape[i] : 1;
        n = n > UINT64_MAX / s ? UINT64_MAX : n * s;
    }
    return n;
}

ZGPU_API void zgpu_default_chunks(int ndim, const uint64_t *shape, size_t itemsize, const uint64_t *within,
                                  uint64_t target_bytes, uint64_t *chunks) {
    const uint64_t target = target_bytes ? target_bytes : (uint64_t)4 << 20;
    const uint64_t *base = within ? within : shape;
    if (ndim <= 0 || ndim > ZGPU_MAX_DIMS || !base || !chunks) return;
    for (int i = 0; i < ndim; i++) chunks[i] = base[i] ? base[i] : 1;
    if (!within && box_bytes(ndim, chunks, itemsize) < (target > UINT64_MAX / 4 ? UINT64_MAX : 4 * target)) return;
    /* Halve axes in turn, slowest first (as zarr-python's guess does), keeping the fast axis contiguous the
     * longest. Inside a shard, only extents dividing the shard extent are allowed. */
    int axis = 0, stuck = 0;
    while (box_bytes(ndim, chunks, itemsize) > target && stuck < ndim) {
        uint64_t c = chunks[axis], next = c;
        if (c > 1) {
            if (!within) {
                next = (c + 1) / 2;
            } else {
                for (uint64_t d = c / 2; d >= 1; d--)
                    if (within[axis] % d == 0) { next = d; break; }
            }
        }
        if (next < c) {
            chunks[axis] = next;
            stuck = 0;
        } else {
            stuck++;
        }
        axis = (axis + 1) % ndim;
    }
}
