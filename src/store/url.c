/* Parsing of store locations (url.h). */
#include "store/url.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

static size_t scheme_len(const char *t) {
    if (!isalpha((unsigned char)t[0])) return 0;
    size_t i = 1;
    while (isalnum((unsigned char)t[i]) || t[i] == '+' || t[i] == '-' || t[i] == '.') i++;
    return strncmp(t + i, "://", 3) == 0 ? i : 0;
}

int zg_is_url(const char *text) { return text && scheme_len(text) > 0; }

int zg_is_local(const char *text) {
    size_t n = text ? scheme_len(text) : 0;
    return !text ? 0 : n == 0 || (n == 4 && strncasecmp(text, "file", 4) == 0);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int zg_percent_decode(char *s) {
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        int hi = hexval(r[1]), lo = hi < 0 ? -1 : hexval(r[2]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return -1;
        *w++ = (char)(hi * 16 + lo);
        r += 2;
    }
    *w = '\0';
    return 0;
}

void zg_location_free(zg_location *l) {
    free(l->path);
    free(l->base);
    free(l->bucket);
    free(l->prefix);
    memset(l, 0, sizeof *l);
}

/* S3's rules for bucket names (3-63 of [a-z0-9.-], starting and ending with a letter or digit, no ".."). */
static int bucket_ok(const char *b, size_t n) {
    if (n < 3 || n > 63 || !isalnum((unsigned char)b[0]) || !isalnum((unsigned char)b[n - 1])) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)b[i];
        if (!(islower(c) || isdigit(c) || c == '.' || c == '-')) return 0;
        if (c == '.' && b[i + 1] == '.') return 0;
    }
    return 1;
}

/* A key prefix or URL path: no "." or ".." segment (a key with one would name another place on a server that
 * normalises paths, and the filesystem store refuses them too); empty segments from doubled '/' are dropped. */
static zgpu_status clean_segments(const char *in, const char *text, char **out) {
    size_t n = strlen(in);
    char *o = malloc(n + 1);
    if (!o) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    size_t w = 0;
    const char *p = in;
    while (*p) {
        while (*p == '/') p++;
        const char *e = p;
        while (*e && *e != '/') e++;
        size_t len = (size_t)(e - p);
        if (len == 0) break;
        if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) {
            free(o);
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "'%s': a URL path may not have '.' or '..' segments", text);
        }
        if (w) o[w++] = '/';
        memcpy(o + w, p, len);
        w += len;
        p = e;
    }
    o[w] = '\0';
    *out = o;
    return ZGPU_OK;
}

zgpu_status zg_location_parse(const char *text, zg_location *out) {
    memset(out, 0, sizeof *out);
    if (!text || !*text) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "an empty path or URL");
    size_t sl = scheme_len(text);
    if (sl == 0) {
        out->kind = ZG_LOC_FILE;
        out->path = strdup(text);
        return out->path ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    char scheme[16] = {0};
    for (size_t i = 0; i < sl && i + 1 < sizeof scheme; i++) scheme[i] = (char)tolower((unsigned char)text[i]);
    const char *rest = text + sl + 3;
    if (sl >= sizeof scheme - 1 ||
        (strcmp(scheme, "file") && strcmp(scheme, "http") && strcmp(scheme, "https") && strcmp(scheme, "s3")))
        return zg_error(ZGPU_ERR_UNSUPPORTED, "'%s': zgpu reads local paths, file://, http://, https:// and s3:// "
                        "locations; not '%.*s://'", text, (int)sl, text);
    if (strpbrk(rest, "?#"))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "'%s': a store URL may not have a query or fragment", text);
    zgpu_status st = ZGPU_OK;
    if (!strcmp(scheme, "file")) {
        /* file:///abs/path or file://localhost/abs/path (RFC 8089); another host is not local */
        if (strncmp(rest, "localhost/", 10) == 0) rest += 9;
        if (rest[0] != '/')
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "'%s': a file URL names an absolute path (file:///dir/x.zarr)", text);
        out->kind = ZG_LOC_FILE;
        out->path = strdup(rest);
        if (!out->path) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        if (zg_percent_decode(out->path) != 0) st = zg_error(ZGPU_ERR_INVALID_ARGUMENT, "'%s': a bad %%-escape", text);
    } else if (!strcmp(scheme, "s3")) {
        out->kind = ZG_LOC_S3;
        const char *slash = strchr(rest, '/');
        size_t bn = slash ? (size_t)(slash - rest) : strlen(rest);
        if (!bucket_ok(rest, bn))
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "'%s': '%.*s' is not an S3 bucket name (3-63 of a-z 0-9 . -)",
                            text, (int)bn, rest);
        out->bucket = strndup(rest, bn);
        if (!out->bucket) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        st = clean_segments(slash ? slash : "", text, &out->prefix);
        /* keys are what the user typed, percent-escapes included: S3 keys may contain '%' */
    } else {
        out->kind = ZG_LOC_HTTP;
        const char *slash = strchr(rest, '/');
        size_t an = slash ? (size_t)(slash - rest) : strlen(rest);
        if (an == 0 || memchr(rest, '@', an))
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "'%s': %s", text,
                            an == 0 ? "no host" : "credentials in a URL are not accepted (they would show in messages)");
        char *path = NULL;
        st = clean_segments(slash ? slash : "", text, &path);
        if (st == ZGPU_OK) {
            size_t n = sl + 3 + an + 1 + strlen(path) + 1;
            out->base = malloc(n);
            if (!out->base) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
            else snprintf(out->base, n, "%s://%.*s%s%s", scheme, (int)an, rest, *path ? "/" : "", path);
        }
        free(path);
    }
    if (st != ZGPU_OK) zg_location_free(out);
    return st;
}

char *zg_location_canonical(const char *text) {
    if (!zg_is_url(text) || !zg_is_local(text)) return strdup(text);
    zg_location l;
    if (zg_location_parse(text, &l) != ZGPU_OK) return strdup(text);
    char *p = l.path;
    l.path = NULL;
    zg_location_free(&l);
    return p;
}
