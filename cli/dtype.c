/* Data type names, NumPy typestrings, byte swapping and fill values for the zgpu command. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli.h"

typedef struct dtype_row {
    zgpu_dtype dt;
    const char *v3;
    char kind; /* NumPy kind letter */
    size_t size;
} dtype_row;

static const dtype_row dtype_rows[] = {
    {ZGPU_BOOL, "bool", 'b', 1},         {ZGPU_INT8, "int8", 'i', 1},
    {ZGPU_INT16, "int16", 'i', 2},       {ZGPU_INT32, "int32", 'i', 4},
    {ZGPU_INT64, "int64", 'i', 8},       {ZGPU_UINT8, "uint8", 'u', 1},
    {ZGPU_UINT16, "uint16", 'u', 2},     {ZGPU_UINT32, "uint32", 'u', 4},
    {ZGPU_UINT64, "uint64", 'u', 8},     {ZGPU_FLOAT16, "float16", 'f', 2},
    {ZGPU_FLOAT32, "float32", 'f', 4},   {ZGPU_FLOAT64, "float64", 'f', 8},
    {ZGPU_COMPLEX64, "complex64", 'c', 8}, {ZGPU_COMPLEX128, "complex128", 'c', 16},
};
#define N_DTYPE_ROWS (sizeof dtype_rows / sizeof dtype_rows[0])

static const dtype_row *row_of(zgpu_dtype dt) {
    for (size_t i = 0; i < N_DTYPE_ROWS; i++)
        if (dtype_rows[i].dt == dt) return &dtype_rows[i];
    return NULL;
}

size_t cli_dtype_fixed_size(zgpu_dtype dt) {
    const dtype_row *r = row_of(dt);
    return r ? r->size : 0;
}

const char *cli_dtype_v3_name(zgpu_dtype dt, size_t itemsize, char *buf) {
    if (dt == ZGPU_RAW) {
        if (itemsize == 0) return NULL;
        snprintf(buf, 32, "r%llu", (unsigned long long)itemsize * 8);
        return buf;
    }
    const dtype_row *r = row_of(dt);
    if (!r) return NULL;
    snprintf(buf, 32, "%s", r->v3);
    return buf;
}

const char *cli_dtype_npy_descr(zgpu_dtype dt, size_t itemsize, char *buf) {
    if (dt == ZGPU_RAW) {
        if (itemsize == 0) return NULL;
        snprintf(buf, 32, "|V%llu", (unsigned long long)itemsize);
        return buf;
    }
    const dtype_row *r = row_of(dt);
    if (!r) return NULL;
    char order = r->size == 1 ? '|' : (cli_host_little_endian() ? '<' : '>');
    snprintf(buf, 32, "%c%c%zu", order, r->kind, r->size);
    return buf;
}

int cli_dtype_from_descr(const char *descr, zgpu_dtype *dt, size_t *itemsize, int *nonnative) {
    char order = descr[0];
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return cli_err("unsupported NumPy type '%s' (expected a byte order character first)", descr);
    char kind = descr[1];
    int64_t size;
    if (!kind || cli_parse_i64(descr + 2, strlen(descr + 2), &size) != 0 || size <= 0)
        return cli_err("unsupported NumPy type '%s'", descr);
    int big = order == '>' || (order == '=' && !cli_host_little_endian());
    int little = order == '<' || (order == '=' && cli_host_little_endian());
    if (kind == 'V') {
        if (size > (1 << 20)) return cli_err("unsupported NumPy type '%s' (raw type too large)", descr);
        *dt = ZGPU_RAW;
        *itemsize = (size_t)size;
        *nonnative = 0;
        return 0;
    }
    for (size_t i = 0; i < N_DTYPE_ROWS; i++) {
        if (dtype_rows[i].kind == kind && dtype_rows[i].size == (size_t)size) {
            *dt = dtype_rows[i].dt;
            *itemsize = (size_t)size;
            /* '|' (no byte order) is only meaningful for 1-byte types; NumPy never writes it otherwise. */
            if (size > 1 && order == '|') return cli_err("NumPy type '%s' lacks a byte order", descr);
            *nonnative = size > 1 && (cli_host_little_endian() ? big : little);
            return 0;
        }
    }
    return cli_err("unsupported NumPy type '%s' (zgpu supports b1, i1-i8, u1-u8, f2-f8, c8, c16, V<n>)", descr);
}

size_t cli_dtype_swap_unit(zgpu_dtype dt, size_t itemsize) {
    if (dt == ZGPU_RAW) return 1;
    if (dt == ZGPU_COMPLEX64 || dt == ZGPU_COMPLEX128) return itemsize / 2;
    return itemsize;
}

void cli_byteswap(void *data, size_t nbytes, size_t unit) {
    unsigned char *p = data;
    size_t n = nbytes / (unit ? unit : 1);
    /* One loop per unit size keeps the compiler's byte-swap idiom recognition working. */
    switch (unit) {
    case 2:
        for (size_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, p + 2 * i, 2);
            v = (uint16_t)((v >> 8) | (v << 8));
            memcpy(p + 2 * i, &v, 2);
        }
        break;
    case 4:
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, p + 4 * i, 4);
            v = __builtin_bswap32(v);
            memcpy(p + 4 * i, &v, 4);
        }
        break;
    case 8:
        for (size_t i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, p + 8 * i, 8);
            v = __builtin_bswap64(v);
            memcpy(p + 8 * i, &v, 8);
        }
        break;
    default:
        if (unit > 1)
            for (size_t i = 0; i < n; i++)
                for (size_t a = i * unit, b = a + unit - 1; a < b; a++, b--) {
                    unsigned char t = p[a];
                    p[a] = p[b];
                    p[b] = t;
                }
        break;
    }
}

float cli_half_to_float(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0) v = ldexpf((float)mant, -24);
    else if (exp == 31) v = mant ? NAN : INFINITY;
    else v = ldexpf((float)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

/* ---- fill values ---- */
static void put_float(cli_sb *sb, double v, int digits) {
    if (isnan(v)) cli_sb_puts(sb, "\"NaN\"");
    else if (isinf(v)) cli_sb_puts(sb, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    else cli_sb_printf(sb, "%.*g", digits, v);
}

static int parse_float_text(const char *t, size_t n, double *out) {
    char tmp[64];
    while (n && isspace((unsigned char)*t)) { t++; n--; }
    while (n && isspace((unsigned char)t[n - 1])) n--;
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, t, n);
    tmp[n] = '\0';
    const char *s = tmp;
    int neg = 0;
    if (*s == '-' || *s == '+') { neg = *s == '-'; s++; }
    if (!strcasecmp(s, "nan")) { *out = NAN; return 0; }
    if (!strcasecmp(s, "inf") || !strcasecmp(s, "infinity")) { *out = neg ? -INFINITY : INFINITY; return 0; }
    /* Decimal only: strtod would also accept hex floats and "nan(...)". */
    for (const char *c = s; *c; c++)
        if (!isdigit((unsigned char)*c) && *c != '.' && *c != 'e' && *c != 'E' && *c != '-' && *c != '+') return -1;
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    if (end == tmp || *end) return -1;
    *out = v;
    return 0;
}

static void put_base64(cli_sb *sb, const unsigned char *b, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    cli_sb_puts(sb, "\"");
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)b[i] << 16;
        if (i + 1 < n) v |= (unsigned)b[i + 1] << 8;
        if (i + 2 < n) v |= b[i + 2];
        char q[4] = {tab[(v >> 18) & 63], tab[(v >> 12) & 63], i + 1 < n ? tab[(v >> 6) & 63] : '=',
                     i + 2 < n ? tab[v & 63] : '='};
        cli_sb_putn(sb, q, 4);
    }
    cli_sb_puts(sb, "\"");
}

static void put_raw(cli_sb *sb, const unsigned char *b, size_t n, int zarr_format) {
    if (zarr_format == 2) {
        put_base64(sb, b, n);
        return;
    }
    cli_sb_puts(sb, "[");
    for (size_t i = 0; i < n; i++) cli_sb_printf(sb, "%s%u", i ? "," : "", b[i]);
    cli_sb_puts(sb, "]");
}

int cli_fill_json_from_text(const char *text, zgpu_dtype dt, size_t itemsize, int zarr_format, cli_sb *sb) {
    size_t n = strlen(text);
    switch (dt) {
    case ZGPU_BOOL:
        if (!strcasecmp(text, "true") || !strcmp(text, "1")) cli_sb_puts(sb, "true");
        else if (!strcasecmp(text, "false") || !strcmp(text, "0")) cli_sb_puts(sb, "false");
        else return cli_err("fill value '%s' is not a bool (true, false, 1, 0)", text);
        return 0;
    case ZGPU_INT8: case ZGPU_INT16: case ZGPU_INT32: case ZGPU_INT64: {
        int64_t v;
        if (cli_parse_i64(text, n, &v) != 0) return cli_err("fill value '%s' is not an integer", text);
        int bits = (int)itemsize * 8;
        if (bits < 64 && (v < -((int64_t)1 << (bits - 1)) || v >= ((int64_t)1 << (bits - 1))))
            return cli_err("fill value %s is out of range for int%d", text, bits);
        cli_sb_printf(sb, "%lld", (long long)v);
        return 0;
    }
    case ZGPU_UINT8: case ZGPU_UINT16: case ZGPU_UINT32: case ZGPU_UINT64: {
        if (!n || n > 20) return cli_err("fill value '%s' is not an unsigned integer", text);
        for (size_t i = 0; i < n; i++)
            if (!isdigit((unsigned char)text[i])) return cli_err("fill value '%s' is not an unsigned integer", text);
        errno = 0;
        unsigned long long v = strtoull(text, NULL, 10);
        int bits = (int)itemsize * 8;
        if (errno == ERANGE || (bits < 64 && v >> bits))
            return cli_err("fill value %s is out of range for uint%d", text, bits);
        cli_sb_printf(sb, "%llu", v);
        return 0;
    }
    case ZGPU_FLOAT16: case ZGPU_FLOAT32: case ZGPU_FLOAT64: {
        double v;
        if (parse_float_text(text, n, &v) != 0) return cli_err("fill value '%s' is not a number", text);
        put_float(sb, v, 17);
        return 0;
    }
    case ZGPU_COMPLEX64: case ZGPU_COMPLEX128: {
        /* "re" or "re,im" */
        const char *comma = strchr(text, ',');
        double re, im = 0;
        if (parse_float_text(text, comma ? (size_t)(comma - text) : n, &re) != 0 ||
            (comma && parse_float_text(comma + 1, strlen(comma + 1), &im) != 0))
            return cli_err("fill value '%s' is not a complex number (write RE or RE,IM)", text);
        cli_sb_puts(sb, "[");
        put_float(sb, re, 17);
        cli_sb_puts(sb, ",");
        put_float(sb, im, 17);
        cli_sb_puts(sb, "]");
        return 0;
    }
    case ZGPU_RAW: {
        /* One byte value for every byte, or exactly itemsize comma-separated byte values. */
        unsigned char *bytes = calloc(itemsize ? itemsize : 1, 1);
        if (!bytes) return cli_err("out of memory");
        const char *p = text;
        size_t k = 0;
        int bad = 0;
        for (;;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            int64_t v;
            if (k >= itemsize || cli_parse_i64(p, len, &v) != 0 || v < 0 || v > 255) { bad = 1; break; }
            bytes[k++] = (unsigned char)v;
            if (!e) break;
            p = e + 1;
        }
        if (!bad && k == 1) memset(bytes, bytes[0], itemsize);
        else if (!bad && k != itemsize) bad = 1;
        if (bad) {
            free(bytes);
            return cli_err("fill value '%s' for a %zu-byte raw type: give one byte value (0-255) or %zu of them",
                           text, itemsize, itemsize);
        }
        put_raw(sb, bytes, itemsize, zarr_format);
        free(bytes);
        return 0;
    }
    }
    return cli_err("fill value: unknown data type");
}

int cli_fill_json_from_bytes(const void *bytes, zgpu_dtype dt, size_t itemsize, int zarr_format, cli_sb *sb) {
    const unsigned char *b = bytes;
    switch (dt) {
    case ZGPU_BOOL: cli_sb_puts(sb, b[0] ? "true" : "false"); return 0;
    case ZGPU_INT8: cli_sb_printf(sb, "%d", (int)(int8_t)b[0]); return 0;
    case ZGPU_UINT8: cli_sb_printf(sb, "%u", (unsigned)b[0]); return 0;
    case ZGPU_INT16: { int16_t v; memcpy(&v, b, 2); cli_sb_printf(sb, "%d", (int)v); return 0; }
    case ZGPU_UINT16: { uint16_t v; memcpy(&v, b, 2); cli_sb_printf(sb, "%u", (unsigned)v); return 0; }
    case ZGPU_INT32: { int32_t v; memcpy(&v, b, 4); cli_sb_printf(sb, "%ld", (long)v); return 0; }
    case ZGPU_UINT32: { uint32_t v; memcpy(&v, b, 4); cli_sb_printf(sb, "%lu", (unsigned long)v); return 0; }
    case ZGPU_INT64: { int64_t v; memcpy(&v, b, 8); cli_sb_printf(sb, "%lld", (long long)v); return 0; }
    case ZGPU_UINT64: { uint64_t v; memcpy(&v, b, 8); cli_sb_printf(sb, "%llu", (unsigned long long)v); return 0; }
    case ZGPU_FLOAT16: { uint16_t v; memcpy(&v, b, 2); put_float(sb, cli_half_to_float(v), 6); return 0; }
    case ZGPU_FLOAT32: { float v; memcpy(&v, b, 4); put_float(sb, v, 9); return 0; }
    case ZGPU_FLOAT64: { double v; memcpy(&v, b, 8); put_float(sb, v, 17); return 0; }
    case ZGPU_COMPLEX64: {
        float re, im;
        memcpy(&re, b, 4);
        memcpy(&im, b + 4, 4);
        cli_sb_puts(sb, "[");
        put_float(sb, re, 9);
        cli_sb_puts(sb, ",");
        put_float(sb, im, 9);
        cli_sb_puts(sb, "]");
        return 0;
    }
    case ZGPU_COMPLEX128: {
        double re, im;
        memcpy(&re, b, 8);
        memcpy(&im, b + 8, 8);
        cli_sb_puts(sb, "[");
        put_float(sb, re, 17);
        cli_sb_puts(sb, ",");
        put_float(sb, im, 17);
        cli_sb_puts(sb, "]");
        return 0;
    }
    case ZGPU_RAW: put_raw(sb, b, itemsize, zarr_format); return 0;
    }
    return cli_err("fill value: unknown data type");
}
