/* JSON DOM: a strict RFC 8259 parser (plus bare NaN / Infinity / -Infinity), builders, deep equality,
 * clone, and a writer whose output matches Python's json.dumps(ensure_ascii=False) byte for byte.
 * Metadata only, so the code favours clarity; containers grow by doubling to stay linear. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/json.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

#define ZJ_MAX_DEPTH 512

/* ------------------------------------------------------------------------------------------------
 * Locale-independent number conversion: strtod and printf follow LC_NUMERIC, which a host application
 * may have changed to one with a decimal comma. We always parse with the "C" locale. */

static locale_t zj_c_locale;
static pthread_once_t zj_locale_once = PTHREAD_ONCE_INIT;

static void zj_locale_init(void) { zj_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

static double zj_strtod(const char *s) {
    pthread_once(&zj_locale_once, zj_locale_init);
    if (zj_c_locale != (locale_t)0) return strtod_l(s, NULL, zj_c_locale);
    return strtod(s, NULL); /* newlocale failed (out of memory): best effort */
}

/* ------------------------------------------------------------------------------------------------
 * Values */

static zj_value *zj_alloc(zj_type t) {
    zj_value *v = calloc(1, sizeof *v);
    if (v) v->type = t;
    return v;
}

void zj_free(zj_value *v) {
    if (!v) return;
    if (v->type == ZJ_STRING) free(v->str);
    if (v->type == ZJ_NUMBER) free(v->digits);
    if (v->type == ZJ_ARRAY || v->type == ZJ_OBJECT) {
        for (size_t i = 0; i < v->n; i++) {
            zj_free(v->items[i]);
            if (v->keys) free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    free(v);
}

zj_value *zj_new_null(void) { return zj_alloc(ZJ_NULL); }

zj_value *zj_new_bool(int b) {
    zj_value *v = zj_alloc(ZJ_BOOL);
    if (v) v->boolean = b ? 1 : 0;
    return v;
}

zj_value *zj_new_double(double d) {
    zj_value *v = zj_alloc(ZJ_NUMBER);
    if (v) v->num = d;
    return v;
}

zj_value *zj_new_int(int64_t i) {
    zj_value *v = zj_alloc(ZJ_NUMBER);
    if (!v) return NULL;
    v->is_int = 1;
    v->is_negative = i < 0;
    v->i64 = i;
    v->u64 = i < 0 ? 0 : (uint64_t)i;
    v->num = (double)i;
    return v;
}

zj_value *zj_new_uint(uint64_t u) {
    zj_value *v = zj_alloc(ZJ_NUMBER);
    if (!v) return NULL;
    v->is_int = 1;
    v->u64 = u;
    v->i64 = u <= (uint64_t)INT64_MAX ? (int64_t)u : 0;
    v->num = (double)u;
    return v;
}

zj_value *zj_new_string_len(const char *s, size_t len) {
    if (!s && len) return NULL;
    zj_value *v = zj_alloc(ZJ_STRING);
    if (!v) return NULL;
    v->str = malloc(len + 1);
    if (!v->str) { free(v); return NULL; }
    if (len) memcpy(v->str, s, len);
    v->str[len] = '\0';
    v->len = len;
    return v;
}

zj_value *zj_new_string(const char *s) { return s ? zj_new_string_len(s, strlen(s)) : NULL; }

zj_value *zj_new_array(void) { return zj_alloc(ZJ_ARRAY); }
zj_value *zj_new_object(void) { return zj_alloc(ZJ_OBJECT); }

/* Makes room for one more item (and key, for objects). */
static int zj_grow(zj_value *c) {
    if (c->n < c->cap) return 1;
    size_t cap = c->cap ? c->cap * 2 : 4;
    if (cap > SIZE_MAX / sizeof(void *)) return 0;
    zj_value **items = realloc(c->items, cap * sizeof *items);
    if (!items) return 0;
    c->items = items;
    if (c->type == ZJ_OBJECT) {
        char **keys = realloc(c->keys, cap * sizeof *keys);
        if (!keys) return 0; /* items grew, keys did not: cap stays, so the next call retries both */
        c->keys = keys;
    }
    c->cap = cap;
    return 1;
}

zj_value *zj_new_uint_list(size_t n, const uint64_t *v) {
    zj_value *a = zj_new_array();
    for (size_t i = 0; a && i < n; i++)
        if (zj_append(a, zj_new_uint(v[i])) != ZGPU_OK) {
            zj_free(a);
            return NULL;
        }
    return a;
}

zgpu_status zj_append(zj_value *arr, zj_value *item) {
    if (!item) return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: appending a NULL item (allocation failed)");
    if (!arr || arr->type != ZJ_ARRAY) {
        zj_free(item);
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "JSON: zj_append on a value that is not an array");
    }
    if (!zj_grow(arr)) {
        zj_free(item);
        return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: out of memory growing an array of %zu items", arr->n);
    }
    arr->items[arr->n++] = item;
    return ZGPU_OK;
}

static ptrdiff_t zj_find(const zj_value *obj, const char *key) {
    /* From the end so that, should an object ever hold a duplicate, the last one wins. */
    for (size_t i = obj->n; i-- > 0;)
        if (strcmp(obj->keys[i], key) == 0) return (ptrdiff_t)i;
    return -1;
}

zgpu_status zj_set(zj_value *obj, const char *key, zj_value *val) {
    if (!val) return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: setting member '%s' to NULL (allocation failed)",
                              key ? key : "(null)");
    if (!obj || obj->type != ZJ_OBJECT || !key) {
        zj_free(val);
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "JSON: zj_set needs an object and a key");
    }
    ptrdiff_t at = zj_find(obj, key);
    if (at >= 0) {
        zj_free(obj->items[at]);
        obj->items[at] = val;
        return ZGPU_OK;
    }
    char *k = strdup(key);
    if (!k || !zj_grow(obj)) {
        free(k);
        zj_free(val);
        return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: out of memory adding member '%s'", key);
    }
    obj->keys[obj->n] = k;
    obj->items[obj->n++] = val;
    return ZGPU_OK;
}

int zj_remove(zj_value *obj, const char *key) {
    if (!obj || obj->type != ZJ_OBJECT || !key) return 0;
    ptrdiff_t at = zj_find(obj, key);
    if (at < 0) return 0;
    zj_free(obj->items[at]);
    free(obj->keys[at]);
    size_t tail = obj->n - (size_t)at - 1;
    memmove(obj->items + at, obj->items + at + 1, tail * sizeof *obj->items);
    memmove(obj->keys + at, obj->keys + at + 1, tail * sizeof *obj->keys);
    obj->n--;
    return 1;
}

/* ------------------------------------------------------------------------------------------------
 * Queries */

zj_value *zj_get(const zj_value *obj, const char *key) {
    if (!obj || obj->type != ZJ_OBJECT || !key) return NULL;
    ptrdiff_t at = zj_find(obj, key);
    return at < 0 ? NULL : obj->items[at];
}

zj_value *zj_at(const zj_value *arr, size_t i) {
    if (!arr || arr->type != ZJ_ARRAY || i >= arr->n) return NULL;
    return arr->items[i];
}

const char *zj_string(const zj_value *v) { return v && v->type == ZJ_STRING ? v->str : NULL; }

int zj_is_uint(const zj_value *v, uint64_t *out) {
    if (!v || v->type != ZJ_NUMBER || !v->is_int || v->is_negative) return 0;
    if (out) *out = v->u64;
    return 1;
}

int zj_is_int(const zj_value *v, int64_t *out) {
    if (!v || v->type != ZJ_NUMBER || !v->is_int) return 0;
    if (!v->is_negative && v->u64 > (uint64_t)INT64_MAX) return 0;
    if (out) *out = v->is_negative ? v->i64 : (int64_t)v->u64;
    return 1;
}

/* ------------------------------------------------------------------------------------------------
 * Clone and equality */

zj_value *zj_clone(const zj_value *v) {
    if (!v) return NULL;
    if (v->type == ZJ_STRING) return zj_new_string_len(v->str, v->len);
    zj_value *c = zj_alloc(v->type);
    if (!c) return NULL;
    if (v->type != ZJ_ARRAY && v->type != ZJ_OBJECT) {
        *c = *v; /* scalars: no owned memory but a big integer's digits */
        if (v->digits && !(c->digits = strdup(v->digits))) { free(c); return NULL; }
        return c;
    }
    if (v->n) {
        c->items = calloc(v->n, sizeof *c->items);
        if (v->type == ZJ_OBJECT) c->keys = calloc(v->n, sizeof *c->keys);
        if (!c->items || (v->type == ZJ_OBJECT && !c->keys)) { zj_free(c); return NULL; }
        c->cap = v->n;
    }
    for (size_t i = 0; i < v->n; i++) {
        /* c->n counts fully copied members so zj_free cleans up exactly those on failure */
        zj_value *item = zj_clone(v->items[i]);
        char *key = v->type == ZJ_OBJECT ? strdup(v->keys[i]) : NULL;
        if (!item || (v->type == ZJ_OBJECT && !key)) {
            zj_free(item);
            free(key);
            zj_free(c);
            return NULL;
        }
        c->items[i] = item;
        if (key) c->keys[i] = key;
        c->n = i + 1;
    }
    return c;
}

/* An exact integer against a double: equal only when the double is that very integer (as in Python). */
static int zj_int_equals_double(const zj_value *iv, double d) {
    if (!isfinite(d) || d != floor(d)) return 0;
    if (iv->is_negative) {
        if (d < -9223372036854775808.0 || d >= 0) return 0;
        return (int64_t)d == iv->i64;
    }
    if (d < 0 || d >= 18446744073709551616.0) return 0;
    return (uint64_t)d == iv->u64;
}

static int zj_numbers_equal(const zj_value *a, const zj_value *b) {
    /* Integers beyond 64 bits: equal to each other when their (canonical, JSON has no leading zeros) digits
     * are; never to a 64-bit integer; against a double by value. */
    if (a->digits && b->digits) return strcmp(a->digits, b->digits) == 0;
    if ((a->digits && b->is_int) || (b->digits && a->is_int)) return 0;
    if (a->is_int && b->is_int)
        return a->is_negative == b->is_negative && (a->is_negative ? a->i64 == b->i64 : a->u64 == b->u64);
    if (a->is_int) return zj_int_equals_double(a, b->num);
    if (b->is_int) return zj_int_equals_double(b, a->num);
    return a->num == b->num || (isnan(a->num) && isnan(b->num));
}

/* qsort has no context argument: the object being sorted travels in a thread-local. */
static _Thread_local const zj_value *zj_sort_tls;

static int zj_cmp_key_index(const void *x, const void *y) {
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    return strcmp(zj_sort_tls->keys[i], zj_sort_tls->keys[j]);
}

/* Indices of obj's members sorted by key, or NULL on allocation failure. */
static size_t *zj_sorted_indices(const zj_value *obj) {
    size_t *idx = malloc(obj->n * sizeof *idx);
    if (!idx) return NULL;
    for (size_t i = 0; i < obj->n; i++) idx[i] = i;
    zj_sort_tls = obj;
    qsort(idx, obj->n, sizeof *idx, zj_cmp_key_index);
    zj_sort_tls = NULL;
    return idx;
}

int zj_equal(const zj_value *a, const zj_value *b) {
    if (a == b) return 1;
    if (!a || !b || a->type != b->type) return 0;
    switch (a->type) {
    case ZJ_NULL: return 1;
    case ZJ_BOOL: return a->boolean == b->boolean;
    case ZJ_NUMBER: return zj_numbers_equal(a, b);
    case ZJ_STRING: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case ZJ_ARRAY:
        if (a->n != b->n) return 0;
        for (size_t i = 0; i < a->n; i++)
            if (!zj_equal(a->items[i], b->items[i])) return 0;
        return 1;
    case ZJ_OBJECT: {
        if (a->n != b->n) return 0;
        /* Objects compare as mappings (order does not matter, like Python dicts). Fast path: same order. */
        size_t i = 0;
        while (i < a->n && strcmp(a->keys[i], b->keys[i]) == 0) {
            if (!zj_equal(a->items[i], b->items[i])) return 0;
            i++;
        }
        if (i == a->n) return 1;
        size_t *ia = zj_sorted_indices(a), *ib = zj_sorted_indices(b);
        int eq = ia && ib;
        for (size_t k = 0; eq && k < a->n; k++)
            eq = strcmp(a->keys[ia[k]], b->keys[ib[k]]) == 0 && zj_equal(a->items[ia[k]], b->items[ib[k]]);
        free(ia);
        free(ib);
        return eq;
    }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Parser */

typedef struct zj_parser {
    const char *text;
    size_t len;
    size_t pos;
    const char *what;
    int depth;
} zj_parser;

static zgpu_status zj_perr(const zj_parser *ps, size_t at, const char *fmt, ...) ZG_PRINTF(3, 4);

/* "zarr.json: JSON: <msg> at line L column C" (1-based; column counts bytes). */
static zgpu_status zj_perr(const zj_parser *ps, size_t at, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t line = 1, col = 1;
    if (at > ps->len) at = ps->len;
    for (size_t i = 0; i < at; i++) {
        if (ps->text[i] == '\n') { line++; col = 1; }
        else col++;
    }
    return zg_error(ZGPU_ERR_BAD_METADATA, "%s%sJSON: %s at line %zu column %zu", ps->what ? ps->what : "",
                    ps->what ? ": " : "", msg, line, col);
}

/* Describes the byte at pos for an error message. */
static void zj_describe(const zj_parser *ps, size_t pos, char out[32]) {
    if (pos >= ps->len) { snprintf(out, 32, "end of input"); return; }
    unsigned char c = (unsigned char)ps->text[pos];
    if (c >= 0x21 && c < 0x7f) snprintf(out, 32, "'%c'", c);
    else snprintf(out, 32, "byte 0x%02x", c);
}

static void zj_skip_ws(zj_parser *ps) {
    while (ps->pos < ps->len) {
        char c = ps->text[ps->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        ps->pos++;
    }
}

static int zj_match(zj_parser *ps, const char *word) {
    size_t n = strlen(word);
    if (ps->len - ps->pos < n || memcmp(ps->text + ps->pos, word, n) != 0) return 0;
    ps->pos += n;
    return 1;
}

static int zj_hex4(const char *s, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t zj_put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the well-formed UTF-8 sequence at s[0..avail), or 0 if it is malformed (overlong, surrogate,
 * beyond U+10FFFF, truncated). */
static size_t zj_utf8_seq(const unsigned char *s, size_t avail) {
    unsigned c = s[0];
    size_t n;
    unsigned cp, min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (avail < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

/* Parses a string starting at the opening quote into a malloc'd NUL-terminated buffer. */
static zgpu_status zj_parse_string(zj_parser *ps, char **out, size_t *out_len) {
    size_t start = ++ps->pos; /* after the quote */
    /* Find the closing quote first: the decoded text is never longer than the raw text. */
    size_t end = start;
    while (end < ps->len && ps->text[end] != '"') end += ps->text[end] == '\\' ? 2 : 1;
    if (end >= ps->len) return zj_perr(ps, start - 1, "unterminated string");
    char *buf = malloc(end - start + 1);
    if (!buf) return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: out of memory for a string of %zu bytes", end - start);
    const unsigned char *t = (const unsigned char *)ps->text;
    size_t o = 0, i = start;
    while (i < end) {
        unsigned char c = t[i];
        if (c < 0x20) {
            free(buf);
            return zj_perr(ps, i, "control character 0x%02x in a string (must be escaped)", c);
        }
        if (c >= 0x80) {
            size_t n = zj_utf8_seq(t + i, end - i);
            if (!n) { free(buf); return zj_perr(ps, i, "invalid UTF-8 in a string"); }
            memcpy(buf + o, t + i, n);
            o += n;
            i += n;
            continue;
        }
        if (c != '\\') { buf[o++] = (char)c; i++; continue; }
        /* escape: end - i >= 2 is guaranteed by the quote scan above */
        char e = (char)t[i + 1];
        switch (e) {
        case '"': buf[o++] = '"'; i += 2; continue;
        case '\\': buf[o++] = '\\'; i += 2; continue;
        case '/': buf[o++] = '/'; i += 2; continue;
        case 'b': buf[o++] = '\b'; i += 2; continue;
        case 'f': buf[o++] = '\f'; i += 2; continue;
        case 'n': buf[o++] = '\n'; i += 2; continue;
        case 'r': buf[o++] = '\r'; i += 2; continue;
        case 't': buf[o++] = '\t'; i += 2; continue;
        case 'u': break;
        default: {
            char d[32];
            zj_describe(ps, i + 1, d);
            free(buf);
            return zj_perr(ps, i, "invalid escape \\%s in a string", d);
        }
        }
        unsigned cp;
        if (end - i < 6 || !zj_hex4(ps->text + i + 2, &cp)) {
            free(buf);
            return zj_perr(ps, i, "invalid \\u escape (needs 4 hex digits)");
        }
        i += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            free(buf);
            return zj_perr(ps, i - 6, "unpaired low surrogate \\u%04x in a string", cp);
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (end - i < 6 || t[i] != '\\' || t[i + 1] != 'u' || !zj_hex4(ps->text + i + 2, &lo) || lo < 0xDC00 ||
                lo > 0xDFFF) {
                free(buf);
                return zj_perr(ps, i - 6, "unpaired high surrogate \\u%04x in a string", cp);
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        }
        o += zj_put_utf8(buf + o, cp);
    }
    buf[o] = '\0';
    ps->pos = end + 1;
    *out = buf;
    *out_len = o;
    return ZGPU_OK;
}

static int zj_is_digit(char c) { return c >= '0' && c <= '9'; }

static zgpu_status zj_parse_number(zj_parser *ps, zj_value *v) {
    size_t start = ps->pos, p = ps->pos;
    const char *t = ps->text;
    int neg = 0;
    if (t[p] == '-') {
        neg = 1;
        p++;
        if (p < ps->len && t[p] == 'I') {
            ps->pos = p;
            if (!zj_match(ps, "Infinity")) return zj_perr(ps, start, "invalid literal (expected -Infinity)");
            v->num = -INFINITY;
            return ZGPU_OK;
        }
    }
    if (p >= ps->len || !zj_is_digit(t[p])) return zj_perr(ps, start, "invalid number (expected a digit after '-')");
    /* Integer part: "0" or a non-zero digit then digits. Accumulate exactly while it fits 64 bits. */
    uint64_t mag = 0;
    int overflow = 0;
    if (t[p] == '0') p++;
    else {
        while (p < ps->len && zj_is_digit(t[p])) {
            unsigned d = (unsigned)(t[p] - '0');
            if (mag > (UINT64_MAX - d) / 10) overflow = 1;
            else mag = mag * 10 + d;
            p++;
        }
    }
    int is_integer = 1;
    if (p < ps->len && t[p] == '.') {
        is_integer = 0;
        p++;
        if (p >= ps->len || !zj_is_digit(t[p])) return zj_perr(ps, p, "invalid number (expected a digit after '.')");
        while (p < ps->len && zj_is_digit(t[p])) p++;
    }
    if (p < ps->len && (t[p] == 'e' || t[p] == 'E')) {
        is_integer = 0;
        p++;
        if (p < ps->len && (t[p] == '+' || t[p] == '-')) p++;
        if (p >= ps->len || !zj_is_digit(t[p]))
            return zj_perr(ps, p, "invalid number (expected a digit in the exponent)");
        while (p < ps->len && zj_is_digit(t[p])) p++;
    }
    ps->pos = p;
    if (is_integer && !overflow) {
        if (!neg || mag == 0) { /* "-0" is the integer 0, as in Python */
            v->is_int = 1;
            v->u64 = mag;
            v->i64 = mag <= (uint64_t)INT64_MAX ? (int64_t)mag : 0;
            v->num = (double)mag;
            return ZGPU_OK;
        }
        if (mag <= (uint64_t)INT64_MAX + 1) {
            v->is_int = 1;
            v->is_negative = 1;
            v->i64 = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
            v->num = (double)v->i64;
            return ZGPU_OK;
        }
    }
    /* A fraction, an exponent, or an integer beyond 64 bits: nearest double (overflow gives +-inf, as Python). */
    size_t n = p - start;
    char small[64];
    char *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp) return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: out of memory for a number of %zu digits", n);
    memcpy(tmp, t + start, n);
    tmp[n] = '\0';
    v->num = zj_strtod(tmp);
    if (is_integer) {
        /* Beyond 64 bits: keep the literal so that writing the document again does not turn it into a float. */
        v->digits = tmp == small ? strdup(tmp) : tmp;
        if (!v->digits) return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: out of memory for a number of %zu digits", n);
        return ZGPU_OK;
    }
    if (tmp != small) free(tmp);
    return ZGPU_OK;
}

static zgpu_status zj_parse_value(zj_parser *ps, zj_value **out);

static zgpu_status zj_parse_array(zj_parser *ps, zj_value *arr) {
    ps->pos++; /* '[' */
    zj_skip_ws(ps);
    if (ps->pos < ps->len && ps->text[ps->pos] == ']') { ps->pos++; return ZGPU_OK; }
    for (;;) {
        zj_value *item = NULL;
        ZG_FORWARD(zj_parse_value(ps, &item));
        ZG_FORWARD(zj_append(arr, item));
        zj_skip_ws(ps);
        if (ps->pos < ps->len && ps->text[ps->pos] == ',') { ps->pos++; continue; }
        if (ps->pos < ps->len && ps->text[ps->pos] == ']') { ps->pos++; return ZGPU_OK; }
        char d[32];
        zj_describe(ps, ps->pos, d);
        return zj_perr(ps, ps->pos, "expected ',' or ']' in an array, found %s", d);
    }
}

/* Open-addressing index of an object's keys, so duplicate detection stays linear for large objects. */
typedef struct zj_keyindex {
    size_t *slot; /* member index + 1; 0 = empty */
    size_t cap;   /* power of two, or 0 while the object is small enough to scan */
} zj_keyindex;

#define ZJ_INDEX_FROM 16

static size_t zj_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

static int zj_index_rebuild(zj_keyindex *ix, const zj_value *obj, size_t want) {
    size_t cap = 64;
    while (cap < want * 2) cap *= 2;
    size_t *slot = calloc(cap, sizeof *slot);
    if (!slot) return 0;
    for (size_t i = 0; i < obj->n; i++) {
        size_t h = zj_hash(obj->keys[i]) & (cap - 1);
        while (slot[h]) h = (h + 1) & (cap - 1);
        slot[h] = i + 1;
    }
    free(ix->slot);
    ix->slot = slot;
    ix->cap = cap;
    return 1;
}

/* Member index of key, or -1. */
static ptrdiff_t zj_index_find(const zj_keyindex *ix, const zj_value *obj, const char *key) {
    if (!ix->cap) return zj_find(obj, key);
    size_t h = zj_hash(key) & (ix->cap - 1);
    while (ix->slot[h]) {
        size_t i = ix->slot[h] - 1;
        if (strcmp(obj->keys[i], key) == 0) return (ptrdiff_t)i;
        h = (h + 1) & (ix->cap - 1);
    }
    return -1;
}

/* Adds key/val (owned) to obj; a duplicate key keeps its first position and takes the new value, which is
 * what Python's json.loads produces. */
static zgpu_status zj_object_put(zj_keyindex *ix, zj_value *obj, char *key, zj_value *val) {
    ptrdiff_t at = zj_index_find(ix, obj, key);
    if (at >= 0) {
        zj_free(obj->items[at]);
        obj->items[at] = val;
        free(key);
        return ZGPU_OK;
    }
    if (!zj_grow(obj)) {
        free(key);
        zj_free(val);
        return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: out of memory growing an object of %zu members", obj->n);
    }
    obj->keys[obj->n] = key;
    obj->items[obj->n++] = val;
    if (obj->n >= ZJ_INDEX_FROM && obj->n * 2 > ix->cap) {
        if (!zj_index_rebuild(ix, obj, obj->n * 2))
            return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: out of memory indexing an object of %zu members", obj->n);
    } else if (ix->cap) {
        size_t h = zj_hash(key) & (ix->cap - 1);
        while (ix->slot[h]) h = (h + 1) & (ix->cap - 1);
        ix->slot[h] = obj->n;
    }
    return ZGPU_OK;
}

static zgpu_status zj_parse_object_members(zj_parser *ps, zj_value *obj, zj_keyindex *ix) {
    ps->pos++; /* '{' */
    zj_skip_ws(ps);
    if (ps->pos < ps->len && ps->text[ps->pos] == '}') { ps->pos++; return ZGPU_OK; }
    for (;;) {
        zj_skip_ws(ps);
        if (ps->pos >= ps->len || ps->text[ps->pos] != '"') {
            char d[32];
            zj_describe(ps, ps->pos, d);
            return zj_perr(ps, ps->pos, "expected a string key in an object, found %s", d);
        }
        size_t key_pos = ps->pos;
        char *key;
        size_t key_len;
        ZG_FORWARD(zj_parse_string(ps, &key, &key_len));
        if (strlen(key) != key_len) {
            free(key);
            return zj_perr(ps, key_pos, "object key contains \\u0000 (not supported)");
        }
        zj_skip_ws(ps);
        if (ps->pos >= ps->len || ps->text[ps->pos] != ':') {
            char d[32];
            zj_describe(ps, ps->pos, d);
            free(key);
            return zj_perr(ps, ps->pos, "expected ':' after an object key, found %s", d);
        }
        ps->pos++;
        zj_value *val = NULL;
        zgpu_status st = zj_parse_value(ps, &val);
        if (st != ZGPU_OK) { free(key); return st; }
        ZG_FORWARD(zj_object_put(ix, obj, key, val));
        zj_skip_ws(ps);
        if (ps->pos < ps->len && ps->text[ps->pos] == ',') { ps->pos++; continue; }
        if (ps->pos < ps->len && ps->text[ps->pos] == '}') { ps->pos++; return ZGPU_OK; }
        char d[32];
        zj_describe(ps, ps->pos, d);
        return zj_perr(ps, ps->pos, "expected ',' or '}' in an object, found %s", d);
    }
}

static zgpu_status zj_parse_value(zj_parser *ps, zj_value **out) {
    zj_skip_ws(ps);
    if (ps->pos >= ps->len) return zj_perr(ps, ps->pos, "unexpected end of input (expected a value)");
    char c = ps->text[ps->pos];
    size_t at = ps->pos;
    zj_type type;
    switch (c) {
    case '{': type = ZJ_OBJECT; break;
    case '[': type = ZJ_ARRAY; break;
    case '"': type = ZJ_STRING; break;
    case 't': case 'f': type = ZJ_BOOL; break;
    case 'n': type = ZJ_NULL; break;
    case 'N': case 'I': case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
    case '8': case '9': type = ZJ_NUMBER; break;
    default: {
        char d[32];
        zj_describe(ps, at, d);
        return zj_perr(ps, at, "unexpected %s (expected a value)", d);
    }
    }
    zj_value *v = zj_alloc(type);
    if (!v) return zg_error(ZGPU_ERR_NO_MEMORY, "JSON: out of memory for a value");
    zgpu_status st = ZGPU_OK;
    switch (type) {
    case ZJ_OBJECT:
    case ZJ_ARRAY:
        if (++ps->depth > ZJ_MAX_DEPTH) {
            st = zj_perr(ps, at, "nesting deeper than %d levels", ZJ_MAX_DEPTH);
        } else if (type == ZJ_ARRAY) {
            st = zj_parse_array(ps, v);
        } else {
            zj_keyindex ix = {NULL, 0};
            st = zj_parse_object_members(ps, v, &ix);
            free(ix.slot);
        }
        ps->depth--;
        break;
    case ZJ_STRING: st = zj_parse_string(ps, &v->str, &v->len); break;
    case ZJ_BOOL:
        if (zj_match(ps, "true")) v->boolean = 1;
        else if (!zj_match(ps, "false")) st = zj_perr(ps, at, "invalid literal (expected true or false)");
        break;
    case ZJ_NULL:
        if (!zj_match(ps, "null")) st = zj_perr(ps, at, "invalid literal (expected null)");
        break;
    case ZJ_NUMBER:
        if (c == 'N') {
            if (zj_match(ps, "NaN")) v->num = NAN;
            else st = zj_perr(ps, at, "invalid literal (expected NaN)");
        } else if (c == 'I') {
            if (zj_match(ps, "Infinity")) v->num = INFINITY;
            else st = zj_perr(ps, at, "invalid literal (expected Infinity)");
        } else {
            st = zj_parse_number(ps, v);
        }
        break;
    }
    if (st != ZGPU_OK) { zj_free(v); return st; }
    *out = v;
    return ZGPU_OK;
}

zgpu_status zj_parse(const char *text, size_t len, const char *what, zj_value **out) {
    if (!out) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "JSON: zj_parse needs an output pointer");
    *out = NULL;
    if (!text && len) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "JSON: zj_parse got NULL text");
    zj_parser ps = {text ? text : "", len, 0, what, 0};
    /* RFC 8259 lets parsers ignore a UTF-8 byte order mark; Python's json.loads(bytes) does. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ps.pos = 3;
    zj_value *v = NULL;
    ZG_FORWARD(zj_parse_value(&ps, &v));
    zj_skip_ws(&ps);
    if (ps.pos < ps.len) {
        char d[32];
        zj_describe(&ps, ps.pos, d);
        zj_free(v);
        return zj_perr(&ps, ps.pos, "unexpected %s after the JSON value", d);
    }
    *out = v;
    return ZGPU_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Writer */

typedef struct zj_out {
    char *d;
    size_t n, cap;
    int oom;
} zj_out;

static void zj_put(zj_out *w, const char *s, size_t n) {
    if (w->oom) return;
    if (w->cap - w->n < n + 1) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap - w->n < n + 1) {
            if (cap > SIZE_MAX / 2) { w->oom = 1; return; }
            cap *= 2;
        }
        char *d = realloc(w->d, cap);
        if (!d) { w->oom = 1; return; }
        w->d = d;
        w->cap = cap;
    }
    memcpy(w->d + w->n, s, n);
    w->n += n;
    w->d[w->n] = '\0';
}

static void zj_puts(zj_out *w, const char *s) { zj_put(w, s, strlen(s)); }

static void zj_put_spaces(zj_out *w, size_t n) {
    static const char sp[] = "                                ";
    while (n) {
        size_t k = n < sizeof sp - 1 ? n : sizeof sp - 1;
        zj_put(w, sp, k);
        n -= k;
    }
}

static void zj_write_string(zj_out *w, const char *s, size_t len) {
    zj_put(w, "\"", 1);
    size_t run = 0; /* start of the pending run of bytes that need no escaping */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char ubuf[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(ubuf, sizeof ubuf, "\\u%04x", c);
                esc = ubuf;
            }
        }
        if (!esc) continue;
        zj_put(w, s + run, i - run);
        zj_puts(w, esc);
        run = i + 1;
    }
    zj_put(w, s + run, len - run);
    zj_put(w, "\"", 1);
}

/* Does "<m>e<k>" read back as exactly d? */
static int zj_candidate_ok(uint64_t m, int k, double d) {
    char s[48];
    snprintf(s, sizeof s, "%" PRIu64 "e%d", m, k);
    return zj_strtod(s) == d;
}

/* Is there a p-significant-digit decimal that reads back as d? If so, stores it as m x 10^k. Besides the
 * correctly rounded p-digit decimal, its two neighbours are tried: at a power of two the round-trip interval
 * is lopsided, so the nearest p-digit decimal may miss it while the neighbour on the far side hits it. */
static int zj_digits_at(double d, int p, uint64_t *m_out, int *k_out) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.*e", p - 1, d); /* correctly rounded to p significant digits */
    /* Collect the digits (skipping the locale's decimal point, whatever it is) and the exponent. */
    uint64_t m = 0;
    const char *q = buf;
    while (*q && *q != 'e') {
        if (zj_is_digit(*q)) m = m * 10 + (uint64_t)(*q - '0');
        q++;
    }
    int k = (*q == 'e' ? atoi(q + 1) : 0) - (p - 1); /* d ~= m x 10^k */
    if (zj_candidate_ok(m, k, d)) { *m_out = m; *k_out = k; return 1; }
    if (zj_candidate_ok(m + 1, k, d)) { *m_out = m + 1; *k_out = k; return 1; }
    /* The p-digit decimal just below m x 10^k; below a power of ten (m = 10^(p-1)) the spacing is finer. */
    uint64_t pow10 = 1;
    for (int i = 1; i < p; i++) pow10 *= 10;
    uint64_t below = m == pow10 ? m * 10 - 1 : m - 1;
    int kb = m == pow10 ? k - 1 : k;
    if (below > 0 && zj_candidate_ok(below, kb, d)) { *m_out = below; *k_out = kb; return 1; }
    return 0;
}

/* Shortest decimal digits (no trailing zeros) and exponent E such that D1.D2D3... x 10^E reads back as d,
 * choosing, among the shortest such strings, the one nearest to d (what Python's repr does).
 * d must be finite and > 0. Whether some p-digit decimal reads back is monotone in p (append a zero), so
 * the shortest p is found by bisection; 17 digits always suffice. */
static void zj_shortest(double d, char digits[24], int *exp10) {
    uint64_t best_m = 0, m;
    int best_k = 0, k;
    int lo = 1, hi = 17;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (zj_digits_at(d, mid, &m, &k)) { hi = mid; best_m = m; best_k = k; }
        else lo = mid + 1;
    }
    /* best_m, when set, belongs to the final hi; otherwise no probe succeeded and the answer is 17 digits */
    if (!best_m && zj_digits_at(d, lo, &m, &k)) { best_m = m; best_k = k; }
    while (best_m && best_m % 10 == 0) { best_m /= 10; best_k++; }
    int n = snprintf(digits, 24, "%" PRIu64, best_m);
    *exp10 = best_k + n - 1;
}

/* Python repr() of a float. */
static void zj_write_double(zj_out *w, double d) {
    if (isnan(d)) { zj_puts(w, "NaN"); return; }
    if (isinf(d)) { zj_puts(w, d < 0 ? "-Infinity" : "Infinity"); return; }
    if (signbit(d)) { zj_put(w, "-", 1); d = -d; }
    if (d == 0) { zj_puts(w, "0.0"); return; }
    char dig[24];
    int e;
    zj_shortest(d, dig, &e);
    int n = (int)strlen(dig);
    if (e < -4 || e >= 16) {
        zj_put(w, dig, 1);
        if (n > 1) { zj_put(w, ".", 1); zj_put(w, dig + 1, (size_t)n - 1); }
        char eb[16];
        snprintf(eb, sizeof eb, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
        zj_puts(w, eb);
    } else if (e >= 0) {
        if (n <= e + 1) {
            zj_put(w, dig, (size_t)n);
            for (int i = n; i < e + 1; i++) zj_put(w, "0", 1);
            zj_puts(w, ".0");
        } else {
            zj_put(w, dig, (size_t)e + 1);
            zj_put(w, ".", 1);
            zj_put(w, dig + e + 1, (size_t)(n - e - 1));
        }
    } else {
        zj_puts(w, "0.");
        for (int i = 0; i < -e - 1; i++) zj_put(w, "0", 1);
        zj_put(w, dig, (size_t)n);
    }
}

static void zj_write_value(zj_out *w, const zj_value *v, int indent, size_t level) {
    char nb[32];
    switch (v->type) {
    case ZJ_NULL: zj_puts(w, "null"); return;
    case ZJ_BOOL: zj_puts(w, v->boolean ? "true" : "false"); return;
    case ZJ_NUMBER:
        if (v->digits) { zj_puts(w, v->digits); return; }
        if (!v->is_int) { zj_write_double(w, v->num); return; }
        if (v->is_negative) snprintf(nb, sizeof nb, "%" PRId64, v->i64);
        else snprintf(nb, sizeof nb, "%" PRIu64, v->u64);
        zj_puts(w, nb);
        return;
    case ZJ_STRING: zj_write_string(w, v->str, v->len); return;
    case ZJ_ARRAY:
    case ZJ_OBJECT: {
        int is_obj = v->type == ZJ_OBJECT;
        if (v->n == 0) { zj_puts(w, is_obj ? "{}" : "[]"); return; }
        zj_put(w, is_obj ? "{" : "[", 1);
        for (size_t i = 0; i < v->n; i++) {
            if (indent > 0) {
                zj_put(w, i ? ",\n" : "\n", i ? 2 : 1);
                zj_put_spaces(w, (size_t)indent * (level + 1));
            } else if (i) {
                zj_put(w, ", ", 2);
            }
            if (is_obj) {
                zj_write_string(w, v->keys[i], strlen(v->keys[i]));
                zj_put(w, ": ", 2);
            }
            zj_write_value(w, v->items[i], indent, level + 1);
        }
        if (indent > 0) {
            zj_put(w, "\n", 1);
            zj_put_spaces(w, (size_t)indent * level);
        }
        zj_put(w, is_obj ? "}" : "]", 1);
        return;
    }
    }
}

char *zj_write(const zj_value *v, int indent) {
    if (!v) return NULL;
    zj_out w = {NULL, 0, 0, 0};
    zj_write_value(&w, v, indent, 0);
    if (w.oom || !w.d) { free(w.d); return NULL; }
    return w.d;
}
