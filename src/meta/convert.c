/* zgpu_metadata_convert (include/zgpu_meta.h): a whole array metadata document rewritten in the other Zarr format.
 * The document is read by the library's own parser (meta/metadata.c), which validates it and turns a v2 .zarray into
 * the v3-style codec chain that reading uses; the result is written by the same writer as zarr.json / .zarray. So a
 * converted document means what the original means, and every rule lives once: v2 -> v3 is the parser's chain (with
 * the numcodecs compressors that have standard v3 codecs rewritten as those), v3 -> v2 is its exact inverse, and what
 * has no inverse (sharding, other transposes, crc32c, dimension names...) is refused by name. */
#include "meta/build.h"
#include "meta/metadata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

#define UNSUP(...) zg_error(ZGPU_ERR_UNSUPPORTED, "zgpu_metadata_convert: " __VA_ARGS__)
#define OOM() zg_error(ZGPU_ERR_NO_MEMORY, "zgpu_metadata_convert: out of memory")

/* The v2 form of a "numcodecs.<id>" entry: {"id": <id>, ...configuration} (the inverse of the v2 parser's). */
static zgpu_status numcodecs_v2(const zj_value *codec, const char *id, zj_value **out) {
    zj_value *o = zj_new_object();
    zgpu_status st = o ? zg_json_put(o, "id", zj_new_string(id)) : OOM();
    const zj_value *conf = zj_get(codec, "configuration");
    for (size_t i = 0; st == ZGPU_OK && conf && i < conf->n; i++)
        if (strcmp(conf->keys[i], "id") != 0) st = zg_json_put(o, conf->keys[i], zj_clone(conf->items[i]));
    if (st != ZGPU_OK) {
        zj_free(o);
        return st;
    }
    *out = o;
    return ZGPU_OK;
}

static const char *numcodecs_id(const char *name) {
    return strncmp(name, "numcodecs.", 10) == 0 && name[10] ? name + 10 : NULL;
}

/* 1 if list is [0, 1, ..., n-1] (rev = 0) or [n-1, ..., 0] (rev = 1). */
static int is_perm(const zj_value *list, int n, int rev) {
    if (!list || list->type != ZJ_ARRAY || (int)list->n != n) return 0;
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (!zj_is_int(list->items[i], &v) || v != (rev ? n - 1 - i : i)) return 0;
    }
    return 1;
}

typedef struct v2_codecs {
    zj_value *filters;    /* list (possibly empty) */
    zj_value *compressor; /* object or NULL */
    char order;           /* 'C' or 'F' */
    int big_endian;
} v2_codecs;

/* The v3 chain of m as v2 order + filters + compressor + byte order, or UNSUPPORTED naming what has no v2 form.
 * Exactly the chains the v2 parser synthesises are accepted, so reading the result back gives the same chain. */
static zgpu_status chain_to_v2(const zg_array_meta *m, v2_codecs *out) {
    const zj_value *list = m->codecs;
    size_t n = list ? list->n : 0, i = 0;
    zj_value *bytes_filters = zj_new_array();
    out->filters = zj_new_array();
    out->compressor = NULL;
    out->order = 'C';
    out->big_endian = 0;
    zgpu_status st = out->filters && bytes_filters ? ZGPU_OK : OOM();
    const char *name = n ? zj_string(zj_get(list->items[0], "name")) : NULL;
    if (st == ZGPU_OK && name && !strcmp(name, "transpose")) {
        const zj_value *perm = zj_get(zj_get(list->items[0], "configuration"), "order");
        if (is_perm(perm, m->ndim, 1) && m->ndim > 1) {
            out->order = 'F';
        } else if (!is_perm(perm, m->ndim, 0)) {
            char *text = zj_write(perm, 0);
            st = UNSUP("codec 'transpose' with order %s has no Zarr v2 form (v2 has only order C, the identity, and "
                       "order F, the reversed axes)", text ? text : "?");
            free(text);
        }
        i = 1;
    }
    /* array->array filters, up to the array->bytes codec */
    for (; st == ZGPU_OK && i < n; i++) {
        name = zj_string(zj_get(list->items[i], "name"));
        int kind = zg_codec_kind_of(name);
        const char *id = numcodecs_id(name);
        if (kind == 1) break;
        if (id && kind != 2 && zg_meta_v2_array_filter(id)) {
            zj_value *f = NULL;
            st = numcodecs_v2(list->items[i], id, &f);
            if (st == ZGPU_OK) st = zg_json_put_append(out->filters, f);
        } else if (!strcmp(name, "transpose")) {
            st = UNSUP("codec 'transpose' after other array->array codecs has no Zarr v2 form (v2's order comes "
                       "first)");
        } else {
            st = UNSUP("codec '%s' before the array->bytes codec has no Zarr v2 form", name);
        }
    }
    if (st == ZGPU_OK && i == n) st = UNSUP("the codecs have no array->bytes codec");
    if (st == ZGPU_OK) {
        if (!strcmp(name, "sharding_indexed")) {
            st = UNSUP("sharding (codec 'sharding_indexed') has no Zarr v2 form");
        } else if (strcmp(name, "bytes") != 0) {
            st = UNSUP("array->bytes codec '%s' has no Zarr v2 form (only 'bytes')", name);
        } else {
            const char *endian = zj_string(zj_get(zj_get(list->items[i], "configuration"), "endian"));
            out->big_endian = endian && !strcmp(endian, "big");
        }
        i++;
    }
    /* bytes->bytes codecs: the last one is the compressor, the others filters */
    for (; st == ZGPU_OK && i < n; i++) {
        name = zj_string(zj_get(list->items[i], "name"));
        const char *id = numcodecs_id(name);
        zj_value *f = NULL;
        int kind = zg_codec_kind_of(name);
        if (kind == 2 && (!id || !zg_meta_v2_array_filter(id))) { /* written by its implementation */
            st = zg_codec_to_v2(list->items[i], &m->dtype, &f);
            if (st == ZGPU_ERR_UNSUPPORTED) zg_error_prefix("zgpu_metadata_convert: ");
        } else if (id && kind == -1 && !zg_meta_v2_array_filter(id)) { /* numcodecs ids zgpu does not know */
            st = numcodecs_v2(list->items[i], id, &f);
        } else {
            st = UNSUP("codec '%s' after the array->bytes codec has no Zarr v2 form", name);
        }
        if (st == ZGPU_OK) st = zg_json_put_append(bytes_filters, f);
    }
    if (st == ZGPU_OK && bytes_filters->n) {
        out->compressor = bytes_filters->items[--bytes_filters->n];
        for (size_t k = 0; st == ZGPU_OK && k < bytes_filters->n; k++) {
            st = zg_json_put_append(out->filters, bytes_filters->items[k]);
            bytes_filters->items[k] = NULL;
        }
    }
    zj_free(bytes_filters);
    if (st != ZGPU_OK) {
        zj_free(out->filters);
        zj_free(out->compressor);
        out->filters = out->compressor = NULL;
    }
    return st;
}

static zgpu_status check_no_dimension_names(const zg_array_meta *m) {
    int any = 0;
    for (int i = 0; i < m->ndim; i++) any |= m->dimension_names[i] != NULL;
    if (!any) return ZGPU_OK;
    zj_value *names = zj_new_array();
    for (int i = 0; names && i < m->ndim; i++)
        if (zg_json_put_append(names, m->dimension_names[i] ? zj_new_string(m->dimension_names[i]) : zj_new_null()) !=
            ZGPU_OK) {
            zj_free(names);
            names = NULL;
        }
    char *text = names ? zj_write(names, 0) : NULL;
    zgpu_status st = UNSUP("dimension_names %s have no Zarr v2 form (remove them to convert)", text ? text : "");
    free(text);
    zj_free(names);
    return st;
}

/* v3 -> v2: the .zarray members plus "attributes". */
static zgpu_status to_v2(const zg_array_meta *m, unsigned flags, zj_value **out) {
    ZG_FORWARD(check_no_dimension_names(m));
    if (!m->key_v2 && (flags & ZGPU_CONVERT_KEEP_CHUNK_KEYS))
        return UNSUP("chunk_key_encoding 'default' (keys \"c%c0...\") has no Zarr v2 form, so the stored chunks "
                     "cannot be kept (convert without ZGPU_CONVERT_KEEP_CHUNK_KEYS and rewrite them)",
                     m->separator ? m->separator : '/');
    v2_codecs c;
    ZG_FORWARD(chain_to_v2(m, &c));
    char typestr[ZG_DTYPE_V2_MAX], order[2] = {c.order, 0};
    zj_value *doc = zj_new_object();
    zgpu_status st = doc ? zg_json_put(doc, "dtype", zj_new_string(zg_dtype_to_v2(&m->dtype, c.big_endian, typestr))) : OOM();
    if (st == ZGPU_OK) st = zg_json_put(doc, "order", zj_new_string(order));
    if (st == ZGPU_OK) {
        st = zg_json_put(doc, "filters", c.filters->n ? c.filters : zj_new_null());
        if (c.filters->n) c.filters = NULL;
    }
    if (st == ZGPU_OK) {
        st = zg_json_put(doc, "compressor", c.compressor ? c.compressor : zj_new_null());
        c.compressor = NULL;
    }
    zj_free(c.filters);
    zj_free(c.compressor);
    zg_array_meta v2 = *m; /* borrowed members; never freed through v2 */
    v2.zarr_format = 2;
    v2.key_v2 = 1;
    v2.fill_is_null = 0;
    v2.doc = doc;
    if (st == ZGPU_OK) {
        *out = zg_meta_to_value(&v2);
        if (!*out) st = OOM();
    }
    if (st == ZGPU_OK) st = zg_json_put(*out, "attributes", zj_clone(m->attributes));
    if (st != ZGPU_OK && *out) {
        zj_free(*out);
        *out = NULL;
    }
    zj_free(doc);
    return st;
}

/* v2 -> v3: zarr.json with the parser's chain, standard codecs where numcodecs ones have them. */
static zgpu_status to_v3(const zg_array_meta *m, unsigned flags, zj_value **out) {
    zj_value *codecs = zj_clone(m->codecs);
    if (!codecs) return OOM();
    zgpu_status st = zg_codecs_standardize(codecs, m->dtype.size);
    zg_array_meta v3 = *m; /* borrowed members; never freed through v3 */
    v3.zarr_format = 3;
    v3.key_v2 = (flags & ZGPU_CONVERT_KEEP_CHUNK_KEYS) != 0;
    v3.codecs = codecs;
    v3.doc = NULL;
    if (st == ZGPU_OK) {
        *out = zg_meta_to_value(&v3);
        if (!*out) st = OOM();
    }
    zj_free(codecs);
    return st;
}

ZGPU_API zgpu_status zgpu_metadata_convert(const char *json, int to_zarr_format, unsigned flags, char **out) {
    if (!out) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_metadata_convert: out is NULL");
    *out = NULL;
    if (!json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_metadata_convert: json is NULL");
    if (to_zarr_format != 2 && to_zarr_format != 3)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_metadata_convert: zarr_format %d is not 2 or 3",
                        to_zarr_format);
    if (flags & ~(unsigned)ZGPU_CONVERT_KEEP_CHUNK_KEYS)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_metadata_convert: unknown flags 0x%x", flags);
    zg_array_meta m;
    ZG_FORWARD(zg_meta_parse_create(json, "zgpu_metadata_convert", &m));
    zj_value *doc = NULL;
    zgpu_status st = ZGPU_OK;
    if (m.zarr_format != to_zarr_format && (m.dtype.kind == ZG_KIND_STRUCT || zg_dtype_is_vlen(&m.dtype))) {
        /* records (v2 only here) and vlen types change codecs between the formats: not yet */
        st = UNSUP("data type %s is not converted between Zarr formats", m.dtype.name);
    } else if (to_zarr_format == 2 && m.zarr_format == 3) {
        st = to_v2(&m, flags, &doc);
    } else if (to_zarr_format == 3 && m.zarr_format == 2) {
        st = to_v3(&m, flags, &doc);
    } else { /* same format: the document as zgpu writes it */
        doc = zg_meta_to_value(&m);
        st = doc ? ZGPU_OK : OOM();
        if (st == ZGPU_OK && m.zarr_format == 2) st = zg_json_put(doc, "attributes", zj_clone(m.attributes));
    }
    zg_meta_free(&m);
    if (st == ZGPU_OK) {
        *out = zj_write(doc, 0);
        if (!*out) st = OOM();
    }
    zj_free(doc);
    return st;
}
