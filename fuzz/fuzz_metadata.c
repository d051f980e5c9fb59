/* Fuzz target: v2 / v3 array and group metadata parsing. Every document that parses must write back to a
 * document that parses to the same metadata; any difference aborts. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/metadata.h"
#include "common/json.h"

static void fail(const char *what, const char *text) {
    fprintf(stderr, "fuzz_metadata: %s\n%s\n", what, text ? text : "(null)");
    abort();
}

/* Fill bytes agree; for v2 every NaN is written as "NaN", so NaN components only need to stay NaN. */
static int fill_equal(const zg_array_meta *a, const zg_array_meta *b) {
    if (memcmp(a->fill_value, b->fill_value, a->dtype.size) == 0) return 1;
    if (a->zarr_format != 2) return 0;
    uint32_t unit = a->dtype.id == ZGPU_COMPLEX64 ? 4 : a->dtype.id == ZGPU_COMPLEX128 ? 8 : a->dtype.size;
    for (uint32_t off = 0; off < a->dtype.size; off += unit) {
        const uint8_t *x = a->fill_value + off, *y = b->fill_value + off;
        int nan_x, nan_y;
        if (unit == 2) {
            uint16_t hx, hy;
            memcpy(&hx, x, 2);
            memcpy(&hy, y, 2);
            nan_x = isnan(zg_half_to_float(hx));
            nan_y = isnan(zg_half_to_float(hy));
        } else if (unit == 4) {
            float fx, fy;
            memcpy(&fx, x, 4);
            memcpy(&fy, y, 4);
            nan_x = isnan(fx);
            nan_y = isnan(fy);
        } else {
            double dx, dy;
            memcpy(&dx, x, 8);
            memcpy(&dy, y, 8);
            nan_x = isnan(dx);
            nan_y = isnan(dy);
        }
        if (nan_x && nan_y) continue;
        if (memcmp(x, y, unit) != 0) return 0;
    }
    return 1;
}

static void check_same(const zg_array_meta *a, const zg_array_meta *b, const char *text) {
    if (a->zarr_format != b->zarr_format || a->ndim != b->ndim) fail("format/ndim changed", text);
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i] || a->chunk_shape[i] != b->chunk_shape[i]) fail("shape changed", text);
    if (a->dtype.id != b->dtype.id || a->dtype.size != b->dtype.size || strcmp(a->dtype.name, b->dtype.name))
        fail("dtype changed", text);
    if (a->fill_is_null != b->fill_is_null || !fill_equal(a, b)) fail("fill value changed", text);
    if (a->key_v2 != b->key_v2 || a->separator != b->separator) fail("chunk key encoding changed", text);
    if (!zj_equal(a->codecs, b->codecs)) fail("codecs changed", text);
    if (!zj_equal(a->attributes, b->attributes)) fail("attributes changed", text);
    for (int i = 0; i < a->ndim; i++) {
        const char *x = a->dimension_names[i], *y = b->dimension_names[i];
        if ((x == NULL) != (y == NULL) || (x && strcmp(x, y))) fail("dimension names changed", text);
    }
}

static void exercise(const zg_array_meta *m) {
    uint64_t coords[ZGPU_MAX_DIMS];
    char key[72];
    memset(key, 'Z', sizeof key);
    for (int i = 0; i < m->ndim; i++) coords[i] = m->shape[i] / m->chunk_shape[i];
    zg_meta_chunk_key(m, coords, key, 64); /* short on purpose: long keys must truncate, not overrun */
    for (size_t i = 64; i < sizeof key; i++)
        if (key[i] != 'Z') fail("chunk key overran its buffer", NULL);
    if (memchr(key, 0, 64) == NULL) fail("chunk key not terminated", NULL);
    if (key[0] != (m->key_v2 ? (m->ndim ? key[0] : '0') : 'c')) fail("chunk key prefix", key);

    char *text = zg_meta_to_json(m);
    if (!text) fail("to_json failed", NULL);
    char *attrs = zg_meta_attrs_json(m);
    if (!attrs) fail("attrs_json failed", NULL);
    zg_array_meta again;
    zgpu_status s = m->zarr_format == 3
                        ? zg_meta_parse_v3(text, strlen(text), "fuzz", &again)
                        : zg_meta_parse_v2(text, strlen(text), attrs, strlen(attrs), "fuzz", &again);
    if (s != ZGPU_OK) fail(zgpu_last_error(), text);
    check_same(m, &again, text);
    zg_meta_free(&again);
    free(attrs);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    zg_array_meta m;
    if (zg_meta_parse_v3(text, size, "fuzz", &m) == ZGPU_OK) {
        exercise(&m);
        zg_meta_free(&m);
    }
    if (zg_meta_parse_v2(text, size, NULL, 0, "fuzz", &m) == ZGPU_OK) {
        exercise(&m);
        zg_meta_free(&m);
    }
    /* The same bytes as .zattrs of a fixed, valid .zarray. */
    static const char zarray[] = "{\"zarr_format\": 2, \"shape\": [5], \"chunks\": [2], \"dtype\": \"<i4\", "
                                 "\"fill_value\": 0, \"order\": \"C\", \"filters\": null, \"compressor\": null}";
    if (zg_meta_parse_v2(zarray, sizeof zarray - 1, text, size, "fuzz", &m) == ZGPU_OK) {
        exercise(&m);
        zg_meta_free(&m);
    }
    /* Creation documents are NUL-terminated strings. */
    char *z = malloc(size + 1);
    if (!z) return 0;
    memcpy(z, data, size);
    z[size] = 0;
    if (zg_meta_parse_create(z, "fuzz", &m) == ZGPU_OK) {
        exercise(&m);
        zg_meta_free(&m);
    }
    free(z);
    zg_group_meta g;
    if (zg_group_meta_parse_v3(text, size, "fuzz", &g) == ZGPU_OK) {
        char *out = zg_group_meta_to_json(&g);
        zg_group_meta g2;
        if (!out || zg_group_meta_parse_v3(out, strlen(out), "fuzz", &g2) != ZGPU_OK) fail("group round trip", out);
        if (!zj_equal(g.attributes, g2.attributes)) fail("group attributes changed", out);
        zg_group_meta_free(&g2);
        free(out);
        zg_group_meta_free(&g);
    }
    if (zg_group_meta_parse_v2(text, size, NULL, 0, "fuzz", &g) == ZGPU_OK) zg_group_meta_free(&g);
    return 0;
}
