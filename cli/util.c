/* Errors, a string builder, number lists and a minimal JSON reader for the zgpu command. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static char cli_errbuf[1024];

int cli_err(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cli_errbuf, sizeof cli_errbuf, fmt, ap);
    va_end(ap);
    return -1;
}

const char *cli_errmsg(void) { return cli_errbuf; }

int cli_host_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* ---- string builder ---- */
static int sb_reserve(cli_sb *sb, size_t extra) {
    if (sb->oom) return -1;
    if (sb->n + extra + 1 <= sb->cap) return 0;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->n + extra + 1) {
        if (cap > SIZE_MAX / 2) { sb->oom = 1; return -1; }
        cap *= 2;
    }
    char *p = realloc(sb->p, cap);
    if (!p) { sb->oom = 1; return -1; }
    sb->p = p;
    sb->cap = cap;
    return 0;
}

void cli_sb_putn(cli_sb *sb, const char *s, size_t n) {
    if (sb_reserve(sb, n)) return;
    memcpy(sb->p + sb->n, s, n);
    sb->n += n;
    sb->p[sb->n] = '\0';
}

void cli_sb_puts(cli_sb *sb, const char *s) { cli_sb_putn(sb, s, strlen(s)); }

void cli_sb_printf(cli_sb *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { sb->oom = 1; return; }
    if (sb_reserve(sb, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(sb->p + sb->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->n += (size_t)n;
}

char *cli_sb_finish(cli_sb *sb) {
    if (!sb->oom && !sb->p) sb_reserve(sb, 0);
    if (sb->oom) {
        free(sb->p);
        sb->p = NULL;
        cli_err("out of memory building a string");
        return NULL;
    }
    char *p = sb->p;
    sb->p = NULL;
    sb->n = sb->cap = 0;
    return p;
}

void cli_sb_free(cli_sb *sb) {
    free(sb->p);
    sb->p = NULL;
    sb->n = sb->cap = 0;
    sb->oom = 0;
}

/* ---- numbers ---- */
int cli_parse_i64(const char *s, size_t n, int64_t *out) {
    char tmp[32];
    while (n && isspace((unsigned char)*s)) { s++; n--; }
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    /* Only an optional sign and digits: strtoll would also take "0x10" or leading blanks. */
    size_t i = (tmp[0] == '-' || tmp[0] == '+') ? 1 : 0;
    if (i == n) return -1;
    for (; i < n; i++)
        if (!isdigit((unsigned char)tmp[i])) return -1;
    errno = 0;
    long long v = strtoll(tmp, NULL, 10);
    if (errno == ERANGE) return -1;
    *out = (int64_t)v;
    return 0;
}

int cli_parse_u64_list(const char *s, int ndim, uint64_t *out, const char *what) {
    int i = 0;
    const char *p = s;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int64_t v;
        if (cli_parse_i64(p, n, &v) != 0 || v <= 0)
            return cli_err("%s: '%.*s' is not a positive integer", what, (int)n, p);
        if (i >= ndim) return cli_err("%s: %d values given but the array has %d dimensions", what, i + 1, ndim);
        out[i++] = (uint64_t)v;
        if (!e) break;
        p = e + 1;
    }
    if (i != ndim) return cli_err("%s: %d values given but the array has %d dimensions", what, i, ndim);
    return 0;
}

/* ---- minimal JSON ---- */
static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static const char *skip_string(const char *p) {
    if (*p != '"') return NULL;
    for (p++; *p; p++) {
        if (*p == '\\') {
            if (!p[1]) return NULL;
            p++;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* Nesting is bounded so that hostile documents cannot exhaust the stack. */
static const char *skip_value_depth(const char *p, int depth) {
    if (depth > 256) return NULL;
    p = skip_ws(p);
    if (*p == '"') return skip_string(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        int is_obj = *p == '{';
        p = skip_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (is_obj) {
                p = skip_string(skip_ws(p));
                if (!p) return NULL;
                p = skip_ws(p);
                if (*p != ':') return NULL;
                p++;
            }
            p = skip_value_depth(p, depth + 1);
            if (!p) return NULL;
            p = skip_ws(p);
            if (*p == ',') { p++; continue; }
            if (*p == close) return p + 1;
            return NULL;
        }
    }
    /* numbers and literals, including NaN / Infinity / -Infinity */
    const char *s = p;
    while (isalnum((unsigned char)*p) || *p == '-' || *p == '+' || *p == '.') p++;
    return p == s ? NULL : p;
}

const char *cli_json_skip_value(const char *p) { return skip_value_depth(p, 0); }

int cli_json_member(const char *obj, const char *key, const char **val, size_t *len) {
    const char *p = skip_ws(obj);
    if (*p != '{') return -1;
    p = skip_ws(p + 1);
    if (*p == '}') return 0;
    size_t klen = strlen(key);
    for (;;) {
        const char *ks = skip_ws(p);
        const char *ke = skip_string(ks);
        if (!ke) return -1;
        p = skip_ws(ke);
        if (*p != ':') return -1;
        const char *vs = skip_ws(p + 1);
        const char *ve = cli_json_skip_value(vs);
        if (!ve) return -1;
        /* Keys zgpu writes need no escapes: compare the raw text. */
        if ((size_t)(ke - ks - 2) == klen && memcmp(ks + 1, key, klen) == 0) {
            *val = vs;
            *len = (size_t)(ve - vs);
            return 1;
        }
        p = skip_ws(ve);
        if (*p == ',') { p++; continue; }
        if (*p == '}') return 0;
        return -1;
    }
}

int cli_json_index(const char *arr, size_t i, const char **val, size_t *len) {
    const char *p = skip_ws(arr);
    if (*p != '[') return -1;
    p = skip_ws(p + 1);
    if (*p == ']') return 0;
    for (size_t k = 0;; k++) {
        const char *vs = skip_ws(p);
        const char *ve = cli_json_skip_value(vs);
        if (!ve) return -1;
        if (k == i) {
            *val = vs;
            *len = (size_t)(ve - vs);
            return 1;
        }
        p = skip_ws(ve);
        if (*p == ',') { p++; continue; }
        if (*p == ']') return 0;
        return -1;
    }
}

int cli_json_string(const char *val, size_t len, char *buf, size_t cap) {
    if (len < 2 || val[0] != '"' || val[len - 1] != '"' || cap == 0) return -1;
    size_t o = 0;
    for (size_t i = 1; i + 1 < len; i++) {
        char c = val[i];
        if (c == '\\') {
            i++;
            if (i + 1 >= len) return -1;
            switch (val[i]) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                if (i + 4 >= len) return -1;
                unsigned v = 0;
                for (int k = 1; k <= 4; k++) {
                    char h = val[i + k];
                    if (!isxdigit((unsigned char)h)) return -1;
                    v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
                }
                i += 4;
                c = v < 128 ? (char)v : '?';
                break;
            }
            default: c = val[i]; break; /* \" \\ \/ */
            }
        }
        if (o + 1 >= cap) return -1;
        buf[o++] = c;
    }
    buf[o] = '\0';
    return 0;
}

char *cli_json_compact(const char *text) {
    size_t n = strlen(text);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t o = 0;
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (in_str) {
            out[o++] = c;
            if (c == '\\' && i + 1 < n) out[o++] = text[++i];
            else if (c == '"') in_str = 0;
        } else if (c == '"') {
            in_str = 1;
            out[o++] = c;
        } else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    return out;
}
