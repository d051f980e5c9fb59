/* The JSON writer (json.h): output matching Python's json.dumps(ensure_ascii=False) byte for byte, doubles in
 * their shortest round-tripping form. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/json_internal.h"

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
