/* The JSON parser (json.h): strict RFC 8259, plus the bare NaN / Infinity / -Infinity zarr-python writes; errors
 * name the document (`what`) and the byte where it went wrong. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/json_internal.h"
#include "common/status.h"

#define ZJ_MAX_DEPTH 512

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
