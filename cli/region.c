/* --region parsing: NumPy basic slicing without steps (see cli_parse_region in cli.h). */
#include <string.h>
#include "cli.h"

/* Resolves a slice bound (negative counts from the end) into [0, n]. */
static int slice_bound(const char *s, size_t len, uint64_t n, int axis, uint64_t *out) {
    int64_t v;
    if (cli_parse_i64(s, len, &v) != 0) return cli_err("region axis %d: '%.*s' is not an integer", axis, (int)len, s);
    if (v < 0) {
        if ((uint64_t)(-(v + 1)) + 1 > n)
            return cli_err("region axis %d: %lld is out of range for length %llu", axis, (long long)v,
                           (unsigned long long)n);
        *out = n - ((uint64_t)(-(v + 1)) + 1);
    } else {
        if ((uint64_t)v > n)
            return cli_err("region axis %d: %lld is out of range for length %llu", axis, (long long)v,
                           (unsigned long long)n);
        *out = (uint64_t)v;
    }
    return 0;
}

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t') return 0;
    return 1;
}

static int parse_axis(const char *s, size_t len, uint64_t n, int axis, uint64_t *start, uint64_t *count) {
    const char *colon = memchr(s, ':', len);
    if (!colon) {
        int64_t v;
        if (is_blank(s, len)) return cli_err("region axis %d: empty entry (use ':' for the whole axis)", axis);
        if (cli_parse_i64(s, len, &v) != 0)
            return cli_err("region axis %d: '%.*s' is not an integer or a:b slice", axis, (int)len, s);
        int64_t idx = v < 0 ? v + (int64_t)n : v;
        if (n > INT64_MAX || idx < 0 || (uint64_t)idx >= n)
            return cli_err("region axis %d: index %lld is out of range for length %llu", axis, (long long)v,
                           (unsigned long long)n);
        *start = (uint64_t)idx;
        *count = 1;
        return 0;
    }
    const char *rest = colon + 1;
    size_t alen = (size_t)(colon - s), blen = len - alen - 1;
    if (memchr(rest, ':', blen)) return cli_err("region axis %d: steps (a:b:c) are not supported", axis);
    uint64_t a = 0, b = n;
    if (!is_blank(s, alen) && slice_bound(s, alen, n, axis, &a) != 0) return -1;
    if (!is_blank(rest, blen) && slice_bound(rest, blen, n, axis, &b) != 0) return -1;
    if (a > b)
        return cli_err("region axis %d: start %llu is after stop %llu", axis, (unsigned long long)a,
                       (unsigned long long)b);
    *start = a;
    *count = b - a;
    return 0;
}

int cli_parse_region(const char *spec, int ndim, const uint64_t *shape, uint64_t *start, uint64_t *count) {
    for (int i = 0; i < ndim; i++) {
        start[i] = 0;
        count[i] = shape[i];
    }
    if (!spec || is_blank(spec, strlen(spec))) return 0;
    const char *p = spec;
    int axis = 0;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (axis >= ndim) return cli_err("region '%s' has more entries than the array's %d dimensions", spec, ndim);
        if (parse_axis(p, len, shape[axis], axis, &start[axis], &count[axis]) != 0) return -1;
        axis++;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}
