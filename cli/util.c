/* Errors, a string builder, number lists and JSON output on the library's DOM for the zgpu command. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

/* Per thread: the slab pipeline (pipe.c) reads and writes on several threads, each failing with its own message. */
static _Thread_local char cli_errbuf[1024];

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

/* ---- JSON, on the library's DOM (common/json.h) ---- */
int cli_json_parse(const char *text, const char *what, zj_value **out) {
    *out = NULL;
    if (!text) return cli_err("%s: no JSON text", what);
    if (zj_parse(text, strlen(text), what, out) != ZGPU_OK) return cli_err("%s", zgpu_last_error());
    return 0;
}

/* A number, string, bool or null as the library's writer spells it. */
static void put_leaf(cli_sb *sb, const zj_value *v) {
    char *t = zj_write(v, 0);
    if (!t) {
        sb->oom = 1;
        return;
    }
    cli_sb_puts(sb, t);
    free(t);
}

static void put_tight(cli_sb *sb, const zj_value *v) {
    if (v->type != ZJ_ARRAY && v->type != ZJ_OBJECT) {
        put_leaf(sb, v);
        return;
    }
    int obj = v->type == ZJ_OBJECT;
    cli_sb_putn(sb, obj ? "{" : "[", 1);
    for (size_t i = 0; i < v->n && !sb->oom; i++) {
        if (i) cli_sb_putn(sb, ",", 1);
        if (obj) {
            zj_value *key = zj_new_string(v->keys[i]);
            if (key) put_leaf(sb, key);
            else sb->oom = 1;
            zj_free(key);
            cli_sb_putn(sb, ":", 1);
        }
        put_tight(sb, v->items[i]);
    }
    cli_sb_putn(sb, obj ? "}" : "]", 1);
}

char *cli_json_tight(const zj_value *v) {
    cli_sb sb = {0};
    if (v) put_tight(&sb, v);
    return cli_sb_finish(&sb);
}

char *cli_json_text(const zj_value *v) {
    if (!v || v->type == ZJ_NULL) return NULL;
    char *t = zj_write(v, 0);
    if (!t) cli_err("out of memory writing JSON");
    return t;
}
