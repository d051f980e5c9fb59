/* JSON DOM: values, builders, accessors, deep equality and clone (the parser: json_parse.c; the writer, whose
 * output matches Python's json.dumps(ensure_ascii=False) byte for byte: json_write.c).
 * Metadata only, so the code favours clarity; containers grow by doubling to stay linear. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/json.h"
#include "common/json_internal.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

/* ------------------------------------------------------------------------------------------------
 * Locale-independent number conversion: strtod and printf follow LC_NUMERIC, which a host application
 * may have changed to one with a decimal comma. We always parse with the "C" locale. */

static locale_t zj_c_locale;
static pthread_once_t zj_locale_once = PTHREAD_ONCE_INIT;

static void zj_locale_init(void) { zj_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

double zj_strtod(const char *s) {
    pthread_once(&zj_locale_once, zj_locale_init);
    if (zj_c_locale != (locale_t)0) return strtod_l(s, NULL, zj_c_locale);
    return strtod(s, NULL); /* newlocale failed (out of memory): best effort */
}

/* ------------------------------------------------------------------------------------------------
 * Values */

zj_value *zj_alloc(zj_type t) {
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
int zj_grow(zj_value *c) {
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

ptrdiff_t zj_find(const zj_value *obj, const char *key) {
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
