/* Zarr v2 / v3 array and group metadata: parsing, validation, normalisation into zg_array_meta, writing. */
#include "meta/metadata.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "meta/names.h"

#define ZG_NOMEM() zg_error(ZGPU_ERR_NO_MEMORY, "out of memory")

/* ---------------------------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------------------------- */

static const char *where_or_default(const char *where, const char *dflt) { return where && where[0] ? where : dflt; }

/* Members given as {"must_understand": false, ...} may be ignored by readers that do not know them. */
static int ignorable(const zj_value *v) {
    const zj_value *mu = zj_get(v, "must_understand");
    return v && v->type == ZJ_OBJECT && mu && mu->type == ZJ_BOOL && !mu->boolean;
}

static int in_list(const char *key, const char *const *list) {
    for (; *list; list++)
        if (strcmp(key, *list) == 0) return 1;
    return 0;
}

/* Sets obj[key] = val, reporting allocation failure (val may be NULL when its builder failed). */
static zgpu_status set_member(zj_value *obj, const char *key, zj_value *val) {
    if (!val) return ZG_NOMEM();
    if (zj_set(obj, key, val) != ZGPU_OK) return ZG_NOMEM();
    return ZGPU_OK;
}

static zgpu_status append_item(zj_value *arr, zj_value *item) {
    if (!item) return ZG_NOMEM();
    if (zj_append(arr, item) != ZGPU_OK) return ZG_NOMEM();
    return ZGPU_OK;
}

/* A JSON list of non-negative integers (>= 1 when min_one) of at most ZGPU_MAX_DIMS entries. */
static zgpu_status parse_uint_list(const zj_value *v, const char *name, int min_one, int *n, uint64_t *out) {
    if (!v) return zg_error(ZGPU_ERR_BAD_METADATA, "%s is missing", name);
    if (v->type != ZJ_ARRAY) return zg_error(ZGPU_ERR_BAD_METADATA, "%s must be a list of integers", name);
    if (v->n > ZGPU_MAX_DIMS)
        return zg_error(ZGPU_ERR_UNSUPPORTED, "%s has %zu dimensions; zgpu supports at most %d", name, v->n,
                        ZGPU_MAX_DIMS);
    for (size_t i = 0; i < v->n; i++) {
        uint64_t x;
        if (!zj_is_uint(v->items[i], &x))
            return zg_error(ZGPU_ERR_BAD_METADATA, "%s[%zu] is not a non-negative integer", name, i);
        if (min_one && x == 0) return zg_error(ZGPU_ERR_BAD_METADATA, "%s[%zu] is 0; chunk sizes must be >= 1", name, i);
        out[i] = x;
    }
    *n = (int)v->n;
    return ZGPU_OK;
}

/* Element counts must fit 64 bits so that later index arithmetic cannot overflow. */
static zgpu_status check_sizes(const zg_array_meta *m) {
    uint64_t total = 1;
    for (int i = 0; i < m->ndim; i++) {
        if (m->shape[i] > INT64_MAX)
            return zg_error(ZGPU_ERR_BAD_METADATA, "shape[%d] = %" PRIu64 " is too large", i, m->shape[i]);
        if (m->shape[i] && total > UINT64_MAX / m->shape[i])
            return zg_error(ZGPU_ERR_BAD_METADATA, "shape has more than 2^64 elements");
        if (m->shape[i]) total *= m->shape[i];
    }
    uint64_t chunk = m->dtype.size ? m->dtype.size : 1;
    for (int i = 0; i < m->ndim; i++) {
        if (chunk > UINT64_MAX / m->chunk_shape[i])
            return zg_error(ZGPU_ERR_BAD_METADATA, "one chunk would hold more than 2^64 bytes");
        chunk *= m->chunk_shape[i];
    }
    return ZGPU_OK;
}

static zgpu_status parse_attributes(const zj_value *v, const char *name, zj_value **out) {
    if (!v) {
        *out = zj_new_object();
        return *out ? ZGPU_OK : ZG_NOMEM();
    }
    if (v->type != ZJ_OBJECT) return zg_error(ZGPU_ERR_BAD_METADATA, "%s must be a JSON object", name);
    *out = zj_clone(v);
    return *out ? ZGPU_OK : ZG_NOMEM();
}

/* An extension point given as "name" or {"name": ..., "configuration": {...}, "must_understand": ...}. */
static zgpu_status ext_point(const zj_value *v, const char *member, const char **name, const zj_value **conf) {
    *conf = NULL;
    if (!v) return zg_error(ZGPU_ERR_BAD_METADATA, "%s is missing", member);
    if (v->type == ZJ_STRING) {
        ZG_FORWARD(zg_meta_check_name(v, member));
        *name = v->str;
        return ZGPU_OK;
    }
    if (v->type != ZJ_OBJECT) return zg_error(ZGPU_ERR_BAD_METADATA, "%s must be an object or a string", member);
    *name = zj_string(zj_get(v, "name"));
    if (!*name) return zg_error(ZGPU_ERR_BAD_METADATA, "%s has no string \"name\"", member);
    char field[64];
    snprintf(field, sizeof field, "%s.name", member);
    ZG_FORWARD(zg_meta_check_name(zj_get(v, "name"), field));
    *conf = zj_get(v, "configuration");
    if (*conf && (*conf)->type != ZJ_OBJECT)
        return zg_error(ZGPU_ERR_BAD_METADATA, "%s.configuration must be an object", member);
    static const char *const known[] = {"name", "configuration", "must_understand", NULL};
    for (size_t i = 0; i < v->n; i++)
        if (!in_list(v->keys[i], known) && !ignorable(v->items[i]))
            return zg_error(ZGPU_ERR_UNSUPPORTED, "%s member '%s' is not supported", member, v->keys[i]);
    return ZGPU_OK;
}

static zgpu_status parse_separator(const zj_value *v, const char *member, char *sep) {
    const char *s = zj_string(v);
    if (!s || v->len != 1 || (s[0] != '/' && s[0] != '.')) {
        char q[96];
        return zg_error(ZGPU_ERR_BAD_METADATA, "%s must be \"/\" or \".\", not %s", member,
                        s ? zg_meta_quote(s, v->len, q, sizeof q) : "a non-string");
    }
    *sep = s[0];
    return ZGPU_OK;
}

/* Members of an extension point's configuration that zgpu does not know change its meaning in ways zgpu cannot
 * honour; zarr-python rejects them too. */
static zgpu_status only_members(const zj_value *conf, const char *member, const char *const *known) {
    for (size_t i = 0; conf && i < conf->n; i++)
        if (!in_list(conf->keys[i], known))
            return zg_error(ZGPU_ERR_BAD_METADATA, "%s.configuration member '%s' is not allowed", member,
                            conf->keys[i]);
    return ZGPU_OK;
}

static zgpu_status alloc_fill(zg_array_meta *m) {
    m->fill_value = calloc(1, m->dtype.size ? m->dtype.size : 1);
    return m->fill_value ? ZGPU_OK : ZG_NOMEM();
}

/* ---------------------------------------------------------------------------------------------------
 * v3
 * ------------------------------------------------------------------------------------------------- */

static const char *const k_v3_members[] = {"zarr_format", "node_type", "shape", "data_type", "chunk_grid",
                                           "chunk_key_encoding", "fill_value", "codecs", "attributes",
                                           "dimension_names", "storage_transformers", NULL};

static zgpu_status check_format(const zj_value *doc, int want) {
    const zj_value *f = zj_get(doc, "zarr_format");
    int64_t v;
    if (!f) return zg_error(ZGPU_ERR_BAD_METADATA, "zarr_format is missing");
    if (!zj_is_int(f, &v)) return zg_error(ZGPU_ERR_BAD_METADATA, "zarr_format must be an integer");
    if (v != want)
        return zg_error(ZGPU_ERR_BAD_METADATA, "zarr_format is %lld, expected %d", (long long)v, want);
    return ZGPU_OK;
}

static zgpu_status check_node_type(const zj_value *doc, const char *want) {
    const zj_value *nt = zj_get(doc, "node_type");
    if (!nt) return zg_error(ZGPU_ERR_BAD_METADATA, "node_type is missing");
    const char *s = zj_string(nt);
    if (!s) return zg_error(ZGPU_ERR_BAD_METADATA, "node_type must be a string");
    ZG_FORWARD(zg_meta_check_name(nt, "node_type"));
    if (strcmp(s, want) != 0)
        return zg_error(ZGPU_ERR_BAD_METADATA, "node_type is '%.64s', expected '%s'", s, want);
    return ZGPU_OK;
}

static zgpu_status parse_v3_codecs(const zj_value *v, zj_value **out) {
    if (!v) return zg_error(ZGPU_ERR_BAD_METADATA, "codecs is missing");
    if (v->type != ZJ_ARRAY) return zg_error(ZGPU_ERR_BAD_METADATA, "codecs must be a list");
    if (v->n == 0) return zg_error(ZGPU_ERR_BAD_METADATA, "codecs is empty; an array->bytes codec is required");
    /* Codec implementations compare names and configuration strings as C strings: a NUL would cut them short. */
    ZG_FORWARD(zg_meta_check_no_nul(v, "codecs"));
    for (size_t i = 0; i < v->n; i++) {
        char field[32];
        snprintf(field, sizeof field, "codecs[%zu].name", i);
        ZG_FORWARD(zg_meta_check_name(v->items[i]->type == ZJ_STRING ? v->items[i] : zj_get(v->items[i], "name"), field));
    }
    zj_value *list = zj_new_array();
    if (!list) return ZG_NOMEM();
    for (size_t i = 0; i < v->n; i++) {
        const zj_value *c = v->items[i];
        zj_value *copy = NULL;
        if (c->type == ZJ_STRING) {
            /* Name-only form: normalised to {"name": ...} so later stages see one shape. */
            copy = zj_new_object();
            if (copy && set_member(copy, "name", zj_new_string(c->str)) != ZGPU_OK) { zj_free(copy); copy = NULL; }
        } else if (c->type == ZJ_OBJECT) {
            if (!zj_string(zj_get(c, "name"))) {
                zj_free(list);
                return zg_error(ZGPU_ERR_BAD_METADATA, "codecs[%zu] has no string \"name\"", i);
            }
            const zj_value *conf = zj_get(c, "configuration");
            if (conf && conf->type != ZJ_OBJECT) {
                zj_free(list);
                return zg_error(ZGPU_ERR_BAD_METADATA, "codecs[%zu] ('%s'): configuration must be an object", i,
                                zj_string(zj_get(c, "name")));
            }
            copy = zj_clone(c);
        } else {
            zj_free(list);
            return zg_error(ZGPU_ERR_BAD_METADATA, "codecs[%zu] must be an object with a \"name\"", i);
        }
        if (append_item(list, copy) != ZGPU_OK) { zj_free(list); return ZG_NOMEM(); }
    }
    *out = list;
    return ZGPU_OK;
}

static zgpu_status parse_dimension_names(const zj_value *v, zg_array_meta *m) {
    if (!v || v->type == ZJ_NULL) return ZGPU_OK;
    if (v->type != ZJ_ARRAY) return zg_error(ZGPU_ERR_BAD_METADATA, "dimension_names must be a list");
    if ((int)v->n != m->ndim)
        return zg_error(ZGPU_ERR_BAD_METADATA, "dimension_names has %zu entries, shape has %d", v->n, m->ndim);
    for (size_t i = 0; i < v->n; i++) {
        const zj_value *d = v->items[i];
        if (d->type == ZJ_NULL) continue;
        if (d->type != ZJ_STRING)
            return zg_error(ZGPU_ERR_BAD_METADATA, "dimension_names[%zu] must be a string or null", i);
        if (memchr(d->str, 0, d->len)) {
            /* zgpu hands dimension names out as C strings; one cut at the NUL would be another name. */
            char q[96];
            return zg_error(ZGPU_ERR_BAD_METADATA, "dimension_names[%zu] %s contains a NUL character", i,
                            zg_meta_quote(d->str, d->len, q, sizeof q));
        }
        m->dimension_names[i] = strdup(d->str);
        if (!m->dimension_names[i]) return ZG_NOMEM();
    }
    return ZGPU_OK;
}

/* Validates doc (already stored in m->doc) into m. */
static zgpu_status parse_v3_fields(zg_array_meta *m) {
    const zj_value *doc = m->doc;
    if (doc->type != ZJ_OBJECT) return zg_error(ZGPU_ERR_BAD_METADATA, "the document must be a JSON object");
    ZG_FORWARD(check_format(doc, 3));
    ZG_FORWARD(check_node_type(doc, "array"));
    m->zarr_format = 3;

    /* Unknown top-level members first: they may change the meaning of everything else. */
    for (size_t i = 0; i < doc->n; i++)
        if (!in_list(doc->keys[i], k_v3_members) && !ignorable(doc->items[i]))
            return zg_error(ZGPU_ERR_UNSUPPORTED, "member '%s' is not supported (no \"must_understand\": false)",
                            doc->keys[i]);

    ZG_FORWARD(parse_uint_list(zj_get(doc, "shape"), "shape", 0, &m->ndim, m->shape));

    ZG_FORWARD(zg_dtype_from_v3(zj_get(doc, "data_type"), &m->dtype));

    const char *name;
    const zj_value *conf;
    ZG_FORWARD(ext_point(zj_get(doc, "chunk_grid"), "chunk_grid", &name, &conf));
    if (strcmp(name, "regular") != 0)
        return zg_error(ZGPU_ERR_UNSUPPORTED, "chunk_grid '%.64s' is not supported (only 'regular')", name);
    int cn = 0;
    if (!conf) return zg_error(ZGPU_ERR_BAD_METADATA, "chunk_grid.configuration is missing");
    static const char *const grid_conf[] = {"chunk_shape", NULL};
    ZG_FORWARD(only_members(conf, "chunk_grid", grid_conf));
    ZG_FORWARD(parse_uint_list(zj_get(conf, "chunk_shape"), "chunk_grid.chunk_shape", 1, &cn, m->chunk_shape));
    if (cn != m->ndim)
        return zg_error(ZGPU_ERR_BAD_METADATA, "chunk_grid.chunk_shape has %d entries, shape has %d", cn, m->ndim);

    ZG_FORWARD(ext_point(zj_get(doc, "chunk_key_encoding"), "chunk_key_encoding", &name, &conf));
    if (strcmp(name, "default") == 0) {
        m->key_v2 = 0;
        m->separator = '/';
    } else if (strcmp(name, "v2") == 0) {
        m->key_v2 = 1;
        m->separator = '.';
    } else {
        return zg_error(ZGPU_ERR_UNSUPPORTED, "chunk_key_encoding '%.64s' is not supported (only 'default', 'v2')",
                        name);
    }
    static const char *const cke_conf[] = {"separator", NULL};
    ZG_FORWARD(only_members(conf, "chunk_key_encoding", cke_conf));
    const zj_value *sep = zj_get(conf, "separator");
    if (sep) ZG_FORWARD(parse_separator(sep, "chunk_key_encoding.separator", &m->separator));

    ZG_FORWARD(alloc_fill(m));
    if (zg_dtype_is_vlen(&m->dtype)) {
        const zj_value *fv = zj_get(doc, "fill_value");
        if (!fv || fv->type == ZJ_NULL) return zg_error(ZGPU_ERR_BAD_METADATA, "fill_value must be a string for %s",
                                                       m->dtype.name);
        ZG_FORWARD(zg_fill_vlen_from_json(fv, &m->dtype, 3, &m->vlen_fill, &m->vlen_fill_len));
    } else {
        ZG_FORWARD(zg_fill_from_json(zj_get(doc, "fill_value"), &m->dtype, 3, m->fill_value, &m->fill_is_null));
    }

    ZG_FORWARD(parse_v3_codecs(zj_get(doc, "codecs"), &m->codecs));
    ZG_FORWARD(parse_attributes(zj_get(doc, "attributes"), "attributes", &m->attributes));
    ZG_FORWARD(parse_dimension_names(zj_get(doc, "dimension_names"), m));

    const zj_value *st = zj_get(doc, "storage_transformers");
    if (st) {
        if (st->type != ZJ_ARRAY) return zg_error(ZGPU_ERR_BAD_METADATA, "storage_transformers must be a list");
        for (size_t i = 0; i < st->n; i++)
            if (!ignorable(st->items[i])) {
                const char *tn = zj_string(zj_get(st->items[i], "name"));
                return zg_error(ZGPU_ERR_UNSUPPORTED, "storage transformer '%.64s' is not supported",
                                tn ? tn : zj_string(st->items[i]) ? zj_string(st->items[i]) : "?");
            }
    }
    return check_sizes(m);
}

/* Takes ownership of doc. */
static zgpu_status parse_v3_doc(zj_value *doc, const char *where, zg_array_meta *out) {
    memset(out, 0, sizeof *out);
    out->doc = doc;
    zgpu_status s = parse_v3_fields(out);
    if (s != ZGPU_OK) {
        zg_meta_free(out);
        zg_error_prefix("%s: zarr.json: ", where_or_default(where, "array"));
    }
    return s;
}

zgpu_status zg_meta_parse_v3(const char *text, size_t len, const char *where, zg_array_meta *out) {
    zj_value *doc = NULL;
    memset(out, 0, sizeof *out);
    zgpu_status s = zj_parse(text, len, "zarr.json", &doc);
    if (s != ZGPU_OK) {
        zg_error_prefix("%s: ", where_or_default(where, "array"));
        return s;
    }
    return parse_v3_doc(doc, where, out);
}

/* ---------------------------------------------------------------------------------------------------
 * v2
 * ------------------------------------------------------------------------------------------------- */

/* numcodecs filters that act on array elements (array->array in Zarr v3 terms); every other id acts on bytes. */
int zg_meta_v2_array_filter(const char *id) {
    static const char *const ids[] = {"delta", "fixedscaleoffset", "astype", "quantize", "bitround", "packbits", NULL};
    return in_list(id, ids);
}

/* {"name": "numcodecs.<id>", "configuration": <obj minus "id">} */
static zj_value *numcodecs_entry(const zj_value *obj) {
    const char *id = zj_string(zj_get(obj, "id"));
    size_t n = strlen(id) + sizeof "numcodecs.";
    char *name = malloc(n);
    zj_value *conf = zj_clone(obj), *e = zj_new_object();
    if (!name || !conf || !e) goto fail;
    snprintf(name, n, "numcodecs.%s", id);
    zj_remove(conf, "id");
    /* numcodecs' Shuffle() defaults to 4-byte elements; v3's numcodecs.shuffle (the codec this becomes) to the
     * item size: a v2 filter without the member is numcodecs', so it says 4 here */
    if (!strcmp(id, "shuffle") && !zj_get(conf, "elementsize") && set_member(conf, "elementsize", zj_new_int(4)) != ZGPU_OK)
        goto fail;
    if (set_member(e, "name", zj_new_string(name)) != ZGPU_OK) goto fail;
    free(name);
    name = NULL;
    if (set_member(e, "configuration", conf) != ZGPU_OK) { conf = NULL; goto fail; }
    return e;
fail:
    free(name);
    zj_free(conf);
    zj_free(e);
    return NULL;
}

/* Array filters compute on native values and the bytes codec stores them in the array's byte order, so a
 * filter typestring (dtype/astype) of the other byte order cannot be honoured. */
static zgpu_status check_filter_byte_order(const zj_value *filter, size_t i, int big_endian) {
    static const char *keys[] = {"dtype", "astype"};
    for (int k = 0; k < 2; k++) {
        const char *ts = zj_string(zj_get(filter, keys[k]));
        if (!ts || (ts[0] != '<' && ts[0] != '>') || strlen(ts) < 3 || !strcmp(ts + 2, "1")) continue;
        if ((ts[0] == '>') != (big_endian != 0))
            return zg_error(ZGPU_ERR_UNSUPPORTED,
                            "filters[%zu] '%s': %s \"%s\" has the other byte order than the array's dtype", i,
                            zj_string(zj_get(filter, "id")), keys[k], ts);
    }
    return ZGPU_OK;
}

static zgpu_status synthesize_v2_codecs(zg_array_meta *m, int big_endian, char order, const zj_value *filters,
                                        const zj_value *compressor) {
    zj_value *list = zj_new_array();
    if (!list) return ZG_NOMEM();
    m->codecs = list;
    if (order == 'F' && m->ndim > 1) {
        zj_value *t = zj_new_object(), *conf = zj_new_object(), *perm = zj_new_array();
        zgpu_status s = (t && conf && perm) ? ZGPU_OK : ZG_NOMEM();
        for (int i = m->ndim - 1; s == ZGPU_OK && i >= 0; i--) s = append_item(perm, zj_new_int(i));
        if (s == ZGPU_OK) { s = set_member(conf, "order", perm); perm = NULL; }
        if (s == ZGPU_OK) s = set_member(t, "name", zj_new_string("transpose"));
        if (s == ZGPU_OK) { s = set_member(t, "configuration", conf); conf = NULL; }
        if (s == ZGPU_OK) { s = append_item(list, t); t = NULL; }
        zj_free(t);
        zj_free(conf);
        zj_free(perm);
        ZG_FORWARD(s);
    }
    size_t nf = filters && filters->type == ZJ_ARRAY ? filters->n : 0;
    size_t i = 0;
    if (zg_dtype_is_vlen(&m->dtype)) {
        /* filters[0] is the object codec (vlen-utf8 / vlen-bytes): the chain's array->bytes codec, as in v3 */
        const zj_value *conf = zj_get(filters->items[0], "id");
        zj_value *e = zj_new_object();
        if (!e) return ZG_NOMEM();
        zgpu_status s = set_member(e, "name", zj_new_string(zj_string(conf)));
        for (size_t k = 0; s == ZGPU_OK && k < filters->items[0]->n; k++)
            if (strcmp(filters->items[0]->keys[k], "id") != 0)
                s = zg_error(ZGPU_ERR_BAD_METADATA, "filters[0] '%s': unknown member \"%.64s\"", zj_string(conf),
                             filters->items[0]->keys[k]);
        if (s != ZGPU_OK) { zj_free(e); return s; }
        ZG_FORWARD(append_item(list, e));
        for (i = 1; i < nf; i++) {
            const char *id = zj_string(zj_get(filters->items[i], "id"));
            if (zg_meta_v2_array_filter(id))
                return zg_error(ZGPU_ERR_UNSUPPORTED, "filters[%zu] '%s' works on array elements, which %s arrays "
                                "do not have", i, id, m->dtype.name);
            ZG_FORWARD(append_item(list, numcodecs_entry(filters->items[i])));
        }
        if (compressor && compressor->type == ZJ_OBJECT) ZG_FORWARD(append_item(list, numcodecs_entry(compressor)));
        return ZGPU_OK;
    }
    for (; i < nf && zg_meta_v2_array_filter(zj_string(zj_get(filters->items[i], "id"))); i++) {
        ZG_FORWARD(check_filter_byte_order(filters->items[i], i, big_endian));
        ZG_FORWARD(append_item(list, numcodecs_entry(filters->items[i])));
    }

    zj_value *bytes = zj_new_object();
    if (!bytes) return ZG_NOMEM();
    zgpu_status s = set_member(bytes, "name", zj_new_string("bytes"));
    if (s == ZGPU_OK && m->dtype.size > 1 && m->dtype.id != ZGPU_RAW) {
        zj_value *conf = zj_new_object();
        s = conf ? set_member(conf, "endian", zj_new_string(big_endian ? "big" : "little")) : ZG_NOMEM();
        if (s == ZGPU_OK) s = set_member(bytes, "configuration", conf);
        else zj_free(conf);
    }
    if (s != ZGPU_OK) { zj_free(bytes); return s; }
    ZG_FORWARD(append_item(list, bytes));

    for (; i < nf; i++) {
        const char *id = zj_string(zj_get(filters->items[i], "id"));
        if (zg_meta_v2_array_filter(id))
            return zg_error(ZGPU_ERR_UNSUPPORTED,
                            "filters[%zu] '%s' works on array elements but follows a byte filter; zgpu cannot "
                            "express that order as a codec chain", i, id);
        ZG_FORWARD(append_item(list, numcodecs_entry(filters->items[i])));
    }
    if (compressor && compressor->type == ZJ_OBJECT) ZG_FORWARD(append_item(list, numcodecs_entry(compressor)));
    return ZGPU_OK;
}

static zgpu_status parse_v2_fields(zg_array_meta *m, const zj_value *attrs) {
    const zj_value *doc = m->doc;
    if (doc->type != ZJ_OBJECT) return zg_error(ZGPU_ERR_BAD_METADATA, "the document must be a JSON object");
    ZG_FORWARD(check_format(doc, 2));
    m->zarr_format = 2;
    m->key_v2 = 1;

    ZG_FORWARD(parse_uint_list(zj_get(doc, "shape"), "shape", 0, &m->ndim, m->shape));
    int cn = 0;
    ZG_FORWARD(parse_uint_list(zj_get(doc, "chunks"), "chunks", 1, &cn, m->chunk_shape));
    if (cn != m->ndim) return zg_error(ZGPU_ERR_BAD_METADATA, "chunks has %d entries, shape has %d", cn, m->ndim);

    const zj_value *dt = zj_get(doc, "dtype");
    int big_endian = 0;
    if (!dt) return zg_error(ZGPU_ERR_BAD_METADATA, "dtype is missing");
    if (dt->type == ZJ_ARRAY) {
        /* records are opaque bytes, read and written as stored (each field keeps its byte order) */
        zgpu_status s = zg_dtype_from_v2_struct(dt, &m->dtype);
        if (s != ZGPU_OK) {
            char *text = zj_write(dt, 0);
            zg_error_prefix("dtype %.120s%s: ", text ? text : "(list)", text && strlen(text) > 120 ? "..." : "");
            free(text);
            return s;
        }
    } else if (dt->type != ZJ_STRING) {
        return zg_error(ZGPU_ERR_BAD_METADATA, "dtype must be a string or a structured field list");
    } else if (dt->len == 2 && !strcmp(dt->str, "|O")) {
        /* objects: the first filter says what they are (numcodecs' object codec; zarr-python's object_codec_id) */
        const zj_value *f = zj_get(doc, "filters");
        const zj_value *first = f && f->type == ZJ_ARRAY && f->n ? f->items[0] : NULL;
        ZG_FORWARD(zg_dtype_object_v2(zj_string(zj_get(first, "id")), &m->dtype));
    } else {
        ZG_FORWARD(zg_meta_check_name(dt, "dtype"));
        ZG_FORWARD(zg_dtype_from_v2(dt->str, &m->dtype, &big_endian));
    }

    ZG_FORWARD(alloc_fill(m));
    const zj_value *fv = zj_get(doc, "fill_value");
    if (zg_dtype_is_vlen(&m->dtype)) {
        ZG_FORWARD(zg_fill_vlen_from_json(fv, &m->dtype, 2, &m->vlen_fill, &m->vlen_fill_len));
        m->fill_is_null = !fv || fv->type == ZJ_NULL;
    } else if (fv) {
        ZG_FORWARD(zg_fill_from_json(fv, &m->dtype, 2, m->fill_value, &m->fill_is_null));
    } else {
        m->fill_is_null = 1; /* absent: treated as null (zeros), as zarr-python does */
    }

    char order = 'C';
    const zj_value *ov = zj_get(doc, "order");
    if (ov) {
        const char *o = zj_string(ov);
        if (!o || ov->len != 1 || (o[0] != 'C' && o[0] != 'F')) {
            char q[96];
            return zg_error(ZGPU_ERR_BAD_METADATA, "order must be \"C\" or \"F\", not %s",
                            o ? zg_meta_quote(o, ov->len, q, sizeof q) : "a non-string");
        }
        order = o[0];
    }

    const zj_value *filters = zj_get(doc, "filters");
    if (filters && filters->type != ZJ_NULL) {
        if (filters->type != ZJ_ARRAY) return zg_error(ZGPU_ERR_BAD_METADATA, "filters must be null or a list");
        for (size_t i = 0; i < filters->n; i++) {
            if (!zj_string(zj_get(filters->items[i], "id")))
                return zg_error(ZGPU_ERR_BAD_METADATA, "filters[%zu] must be an object with a string \"id\"", i);
            char field[32];
            snprintf(field, sizeof field, "filters[%zu].id", i);
            ZG_FORWARD(zg_meta_check_name(zj_get(filters->items[i], "id"), field));
        }
        ZG_FORWARD(zg_meta_check_no_nul(filters, "filters"));
    }
    const zj_value *comp = zj_get(doc, "compressor");
    if (comp && comp->type != ZJ_NULL) {
        if (!zj_string(zj_get(comp, "id")))
            return zg_error(ZGPU_ERR_BAD_METADATA, "compressor must be null or an object with a string \"id\"");
        ZG_FORWARD(zg_meta_check_name(zj_get(comp, "id"), "compressor.id"));
        ZG_FORWARD(zg_meta_check_no_nul(comp, "compressor"));
    }

    m->separator = '.';
    const zj_value *sep = zj_get(doc, "dimension_separator");
    if (sep && sep->type != ZJ_NULL) ZG_FORWARD(parse_separator(sep, "dimension_separator", &m->separator));

    ZG_FORWARD(synthesize_v2_codecs(m, big_endian, order, filters, comp));

    zgpu_status s = parse_attributes(attrs, "attributes", &m->attributes);
    if (s != ZGPU_OK) return s;
    return check_sizes(m);
}

/* Takes ownership of doc and attrs. */
static zgpu_status parse_v2_doc(zj_value *doc, zj_value *attrs, const char *where, const char *file,
                                zg_array_meta *out) {
    memset(out, 0, sizeof *out);
    out->doc = doc;
    zgpu_status s = parse_v2_fields(out, attrs);
    zj_free(attrs);
    if (s != ZGPU_OK) {
        zg_meta_free(out);
        zg_error_prefix("%s: %s: ", where_or_default(where, "array"), file);
    }
    return s;
}

zgpu_status zg_meta_parse_v2(const char *zarray, size_t len, const char *zattrs, size_t attrs_len,
                             const char *where, zg_array_meta *out) {
    zj_value *doc = NULL, *attrs = NULL;
    memset(out, 0, sizeof *out);
    zgpu_status s = zj_parse(zarray, len, ".zarray", &doc);
    if (s == ZGPU_OK && zattrs) {
        s = zj_parse(zattrs, attrs_len, ".zattrs", &attrs);
        if (s != ZGPU_OK) zj_free(doc);
    }
    if (s != ZGPU_OK) {
        zg_error_prefix("%s: ", where_or_default(where, "array"));
        return s;
    }
    if (attrs && attrs->type != ZJ_OBJECT) {
        zj_free(doc);
        zj_free(attrs);
        return zg_error(ZGPU_ERR_BAD_METADATA, "%s: .zattrs: the attributes must be a JSON object",
                        where_or_default(where, "array"));
    }
    return parse_v2_doc(doc, attrs, where, ".zarray", out);
}

/* ---------------------------------------------------------------------------------------------------
 * Creation documents
 * ------------------------------------------------------------------------------------------------- */

static zgpu_status set_default(zj_value *doc, const char *key, zj_value *val) {
    if (zj_get(doc, key)) { zj_free(val); return ZGPU_OK; }
    return set_member(doc, key, val);
}

/* Zero fill value in the form the format writes, or NULL when the data type does not parse (reported later). */
static zj_value *zero_fill(const zj_value *doc, int fmt) {
    zg_dtype dt;
    int be;
    const zj_value *v = zj_get(doc, fmt == 3 ? "data_type" : "dtype");
    if (fmt == 3 ? zg_dtype_from_v3(v, &dt) != ZGPU_OK : (!zj_string(v) || zg_dtype_from_v2(v->str, &dt, &be) != ZGPU_OK))
        return NULL;
    if (zg_dtype_is_vlen(&dt)) return zj_new_string("");
    uint8_t *zeros = calloc(1, dt.size);
    if (!zeros) return NULL;
    zj_value *fv = zg_fill_to_json(zeros, &dt, fmt);
    free(zeros);
    return fv;
}

static zgpu_status fill_create_defaults(zj_value *doc, int fmt) {
    if (fmt == 3) {
        ZG_FORWARD(set_default(doc, "node_type", zj_new_string("array")));
        if (!zj_get(doc, "chunk_key_encoding")) {
            zj_value *cke = zj_new_object(), *conf = zj_new_object();
            zgpu_status s = (cke && conf) ? set_member(conf, "separator", zj_new_string("/")) : ZG_NOMEM();
            if (s == ZGPU_OK) s = set_member(cke, "name", zj_new_string("default"));
            if (s == ZGPU_OK) { s = set_member(cke, "configuration", conf); conf = NULL; }
            if (s == ZGPU_OK) { s = set_member(doc, "chunk_key_encoding", cke); cke = NULL; }
            zj_free(cke);
            zj_free(conf);
            ZG_FORWARD(s);
        }
        if (!zj_get(doc, "codecs")) {
            zg_dtype dt;
            int one_byte = zg_dtype_from_v3(zj_get(doc, "data_type"), &dt) == ZGPU_OK &&
                           (dt.size == 1 || dt.id == ZGPU_RAW);
            zj_value *list = zj_new_array(), *bytes = zj_new_object();
            int vlen = zg_dtype_from_v3(zj_get(doc, "data_type"), &dt) == ZGPU_OK && zg_dtype_is_vlen(&dt);
            const char *serializer = !vlen ? "bytes" : dt.kind == ZG_KIND_STRING ? "vlen-utf8" : "vlen-bytes";
            zgpu_status s = (list && bytes) ? set_member(bytes, "name", zj_new_string(serializer)) : ZG_NOMEM();
            if (s == ZGPU_OK && !one_byte && !vlen) {
                zj_value *conf = zj_new_object();
                s = conf ? set_member(conf, "endian", zj_new_string("little")) : ZG_NOMEM();
                if (s == ZGPU_OK) s = set_member(bytes, "configuration", conf);
                else zj_free(conf);
            }
            if (s == ZGPU_OK) { s = append_item(list, bytes); bytes = NULL; }
            if (s == ZGPU_OK) { s = set_member(doc, "codecs", list); list = NULL; }
            zj_free(list);
            zj_free(bytes);
            ZG_FORWARD(s);
        }
        if (!zj_get(doc, "fill_value")) {
            zj_value *fv = zero_fill(doc, 3);
            if (fv) ZG_FORWARD(set_member(doc, "fill_value", fv));
        }
        ZG_FORWARD(set_default(doc, "attributes", zj_new_object()));
    } else {
        ZG_FORWARD(set_default(doc, "order", zj_new_string("C")));
        ZG_FORWARD(set_default(doc, "filters", zj_new_null()));
        ZG_FORWARD(set_default(doc, "compressor", zj_new_null()));
        ZG_FORWARD(set_default(doc, "dimension_separator", zj_new_string(".")));
        if (!zj_get(doc, "fill_value")) {
            zj_value *fv = zero_fill(doc, 2);
            if (fv) ZG_FORWARD(set_member(doc, "fill_value", fv));
        }
    }
    return ZGPU_OK;
}

zgpu_status zg_meta_parse_create(const char *text, const char *where, zg_array_meta *out) {
    const char *w = where_or_default(where, "array");
    zj_value *doc = NULL;
    memset(out, 0, sizeof *out);
    if (!text) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: metadata document is NULL", w);
    zgpu_status s = zj_parse(text, strlen(text), "metadata", &doc);
    if (s != ZGPU_OK) {
        zg_error_prefix("%s: ", w);
        return s;
    }
    if (doc->type != ZJ_OBJECT) {
        zj_free(doc);
        return zg_error(ZGPU_ERR_BAD_METADATA, "%s: metadata: the document must be a JSON object", w);
    }
    int64_t fmt = 3;
    const zj_value *fv = zj_get(doc, "zarr_format");
    if (fv && (!zj_is_int(fv, &fmt) || (fmt != 2 && fmt != 3))) {
        zj_free(doc);
        return zg_error(ZGPU_ERR_BAD_METADATA, "%s: metadata: zarr_format must be 2 or 3", w);
    }
    s = fv ? ZGPU_OK : set_member(doc, "zarr_format", zj_new_int(3));
    if (s == ZGPU_OK) s = fill_create_defaults(doc, (int)fmt);
    if (s != ZGPU_OK) {
        zj_free(doc);
        zg_error_prefix("%s: ", w);
        return s;
    }
    if (fmt == 3) return parse_v3_doc(doc, where, out);
    /* v2 attributes live in .zattrs: lift them out of the creation document. */
    zj_value *attrs = NULL;
    const zj_value *a = zj_get(doc, "attributes");
    if (a) {
        attrs = zj_clone(a);
        if (!attrs) { zj_free(doc); return ZG_NOMEM(); }
        zj_remove(doc, "attributes");
    }
    return parse_v2_doc(doc, attrs, where, ".zarray", out);
}

/* ---------------------------------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------------------------------- */

static zj_value *clone_or(const zj_value *v, zj_value *dflt) {
    if (!v) return dflt;
    zj_free(dflt);
    return zj_clone(v);
}

static zgpu_status build_v3(const zg_array_meta *m, zj_value *o) {
    /* Member order as zarr-python 3.1 writes zarr.json. */
    ZG_FORWARD(set_member(o, "shape", zj_new_uint_list((size_t)m->ndim, m->shape)));
    const zj_value *doc_dt = zj_get(m->doc, "data_type");
    int dt_object = doc_dt && doc_dt->type == ZJ_OBJECT;
    ZG_FORWARD(set_member(o, "data_type", dt_object ? zj_clone(doc_dt) : zg_dtype_to_v3_json(&m->dtype)));

    zj_value *grid = zj_new_object(), *gconf = zj_new_object();
    zgpu_status s = (grid && gconf) ? set_member(gconf, "chunk_shape", zj_new_uint_list((size_t)m->ndim, m->chunk_shape))
                                    : ZG_NOMEM();
    if (s == ZGPU_OK) s = set_member(grid, "name", zj_new_string("regular"));
    if (s == ZGPU_OK) { s = set_member(grid, "configuration", gconf); gconf = NULL; }
    if (s == ZGPU_OK) { s = set_member(o, "chunk_grid", grid); grid = NULL; }
    zj_free(grid);
    zj_free(gconf);
    ZG_FORWARD(s);

    zj_value *cke = zj_new_object(), *kconf = zj_new_object();
    char sep[2] = {m->separator ? m->separator : '/', 0};
    s = (cke && kconf) ? set_member(cke, "name", zj_new_string(m->key_v2 ? "v2" : "default")) : ZG_NOMEM();
    if (s == ZGPU_OK) s = set_member(kconf, "separator", zj_new_string(sep));
    if (s == ZGPU_OK) { s = set_member(cke, "configuration", kconf); kconf = NULL; }
    if (s == ZGPU_OK) { s = set_member(o, "chunk_key_encoding", cke); cke = NULL; }
    zj_free(cke);
    zj_free(kconf);
    ZG_FORWARD(s);

    /* zarr-python's raw_bytes data type stores its fill value as base64, like v2. */
    int fill_fmt = dt_object && m->dtype.id == ZGPU_RAW ? 2 : 3;
    ZG_FORWARD(set_member(o, "fill_value", zg_dtype_is_vlen(&m->dtype)
                                               ? zg_fill_vlen_to_json(m->vlen_fill, m->vlen_fill_len, &m->dtype)
                                               : zg_fill_to_json(m->fill_value, &m->dtype, fill_fmt)));
    ZG_FORWARD(set_member(o, "codecs", m->codecs ? zj_clone(m->codecs) : zj_new_array()));
    ZG_FORWARD(set_member(o, "attributes", m->attributes ? zj_clone(m->attributes) : zj_new_object()));

    int any_names = 0;
    for (int i = 0; i < m->ndim; i++) any_names |= m->dimension_names[i] != NULL;
    if (any_names) {
        zj_value *names = zj_new_array();
        if (!names) return ZG_NOMEM();
        for (int i = 0; i < m->ndim; i++) {
            s = append_item(names, m->dimension_names[i] ? zj_new_string(m->dimension_names[i]) : zj_new_null());
            if (s != ZGPU_OK) { zj_free(names); return s; }
        }
        ZG_FORWARD(set_member(o, "dimension_names", names));
    }
    ZG_FORWARD(set_member(o, "zarr_format", zj_new_int(3)));
    ZG_FORWARD(set_member(o, "node_type", zj_new_string("array")));
    ZG_FORWARD(set_member(o, "storage_transformers", clone_or(zj_get(m->doc, "storage_transformers"), zj_new_array())));
    /* Extension members that were accepted (must_understand: false) are kept. */
    if (m->doc && m->doc->type == ZJ_OBJECT)
        for (size_t i = 0; i < m->doc->n; i++)
            if (!in_list(m->doc->keys[i], k_v3_members))
                ZG_FORWARD(set_member(o, m->doc->keys[i], zj_clone(m->doc->items[i])));
    return ZGPU_OK;
}

static const char *const k_v2_members[] = {"zarr_format", "shape", "chunks", "dtype", "fill_value", "order",
                                           "filters", "dimension_separator", "compressor", "attributes", NULL};

static zgpu_status build_v2(const zg_array_meta *m, zj_value *o) {
    /* Member order as zarr-python 3.1 writes .zarray. */
    ZG_FORWARD(set_member(o, "shape", zj_new_uint_list((size_t)m->ndim, m->shape)));
    ZG_FORWARD(set_member(o, "chunks", zj_new_uint_list((size_t)m->ndim, m->chunk_shape)));
    const zj_value *dt = zj_get(m->doc, "dtype");
    char buf[ZG_DTYPE_V2_MAX];
    ZG_FORWARD(set_member(o, "dtype", dt ? zj_clone(dt) : zj_new_string(zg_dtype_to_v2(&m->dtype, 0, buf))));
    ZG_FORWARD(set_member(o, "fill_value", m->fill_is_null ? zj_new_null()
                                           : zg_dtype_is_vlen(&m->dtype)
                                               ? zg_fill_vlen_to_json(m->vlen_fill, m->vlen_fill_len, &m->dtype)
                                               : zg_fill_to_json(m->fill_value, &m->dtype, 2)));
    ZG_FORWARD(set_member(o, "order", clone_or(zj_get(m->doc, "order"), zj_new_string("C"))));
    ZG_FORWARD(set_member(o, "filters", clone_or(zj_get(m->doc, "filters"), zj_new_null())));
    char sep[2] = {m->separator ? m->separator : '.', 0};
    ZG_FORWARD(set_member(o, "dimension_separator", zj_new_string(sep)));
    ZG_FORWARD(set_member(o, "compressor", clone_or(zj_get(m->doc, "compressor"), zj_new_null())));
    ZG_FORWARD(set_member(o, "zarr_format", zj_new_int(2)));
    if (m->doc && m->doc->type == ZJ_OBJECT)
        for (size_t i = 0; i < m->doc->n; i++)
            if (!in_list(m->doc->keys[i], k_v2_members))
                ZG_FORWARD(set_member(o, m->doc->keys[i], zj_clone(m->doc->items[i])));
    return ZGPU_OK;
}

zj_value *zg_meta_to_value(const zg_array_meta *m) {
    zj_value *o = zj_new_object();
    if (!o) return NULL;
    zgpu_status s = m->zarr_format == 2 ? build_v2(m, o) : build_v3(m, o);
    if (s == ZGPU_OK) return o;
    zj_free(o);
    return NULL;
}

char *zg_meta_to_json(const zg_array_meta *m) {
    zj_value *o = zg_meta_to_value(m);
    char *text = o ? zj_write(o, 2) : NULL;
    zj_free(o);
    return text;
}

char *zg_meta_attrs_json(const zg_array_meta *m) {
    if (m->attributes) return zj_write(m->attributes, 2);
    zj_value *empty = zj_new_object();
    char *text = empty ? zj_write(empty, 2) : NULL;
    zj_free(empty);
    return text;
}

void zg_meta_chunk_key(const zg_array_meta *m, const uint64_t *coords, char *buf, size_t bufsize) {
    if (!buf || bufsize == 0) return;
    if (m->single_key) {
        snprintf(buf, bufsize, "%s", m->single_key);
        return;
    }
    size_t pos = 0;
    buf[0] = 0;
    char sep = m->separator ? m->separator : (m->key_v2 ? '.' : '/');
    if (!m->key_v2) {
        pos = (size_t)snprintf(buf, bufsize, "c");
    } else if (m->ndim == 0) {
        snprintf(buf, bufsize, "0");
        return;
    }
    for (int i = 0; i < m->ndim && pos < bufsize; i++) {
        int n = (m->key_v2 && i == 0) ? snprintf(buf + pos, bufsize - pos, "%" PRIu64, coords[i])
                                      : snprintf(buf + pos, bufsize - pos, "%c%" PRIu64, sep, coords[i]);
        if (n < 0) return;
        pos += (size_t)n;
    }
}

void zg_meta_free(zg_array_meta *m) {
    if (!m) return;
    free(m->fill_value);
    free(m->vlen_fill);
    free(m->single_key);
    zj_free(m->codecs);
    zj_free(m->attributes);
    zj_free(m->doc);
    for (int i = 0; i < ZGPU_MAX_DIMS; i++) free(m->dimension_names[i]);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------------------------------------------
 * Groups
 * ------------------------------------------------------------------------------------------------- */

static zgpu_status group_v3_fields(zg_group_meta *g) {
    const zj_value *doc = g->doc;
    if (doc->type != ZJ_OBJECT) return zg_error(ZGPU_ERR_BAD_METADATA, "the document must be a JSON object");
    ZG_FORWARD(check_format(doc, 3));
    ZG_FORWARD(check_node_type(doc, "group"));
    g->zarr_format = 3;
    static const char *const known[] = {"zarr_format", "node_type", "attributes", NULL};
    for (size_t i = 0; i < doc->n; i++) {
        const char *k = doc->keys[i];
        if (in_list(k, known) || ignorable(doc->items[i])) continue;
        /* zarr-python writes "consolidated_metadata": null on some groups; it is only a cache. */
        if (strcmp(k, "consolidated_metadata") == 0 && doc->items[i]->type == ZJ_NULL) continue;
        return zg_error(ZGPU_ERR_UNSUPPORTED, "member '%s' is not supported (no \"must_understand\": false)", k);
    }
    return parse_attributes(zj_get(doc, "attributes"), "attributes", &g->attributes);
}

zgpu_status zg_group_meta_parse_v3(const char *text, size_t len, const char *where, zg_group_meta *out) {
    memset(out, 0, sizeof *out);
    const char *w = where_or_default(where, "group");
    zgpu_status s = zj_parse(text, len, "zarr.json", &out->doc);
    if (s != ZGPU_OK) {
        zg_error_prefix("%s: ", w);
        return s;
    }
    s = group_v3_fields(out);
    if (s != ZGPU_OK) {
        zg_group_meta_free(out);
        zg_error_prefix("%s: zarr.json: ", w);
    }
    return s;
}

zgpu_status zg_group_meta_parse_v2(const char *zgroup, size_t len, const char *zattrs, size_t attrs_len,
                                   const char *where, zg_group_meta *out) {
    memset(out, 0, sizeof *out);
    const char *w = where_or_default(where, "group");
    zj_value *attrs = NULL;
    zgpu_status s = zj_parse(zgroup, len, ".zgroup", &out->doc);
    if (s == ZGPU_OK && zattrs) s = zj_parse(zattrs, attrs_len, ".zattrs", &attrs);
    if (s != ZGPU_OK) {
        zg_group_meta_free(out);
        zg_error_prefix("%s: ", w);
        return s;
    }
    const char *file = ".zgroup";
    if (out->doc->type != ZJ_OBJECT) s = zg_error(ZGPU_ERR_BAD_METADATA, "the document must be a JSON object");
    if (s == ZGPU_OK) s = check_format(out->doc, 2);
    if (s == ZGPU_OK) {
        file = ".zattrs";
        s = parse_attributes(attrs, "the attributes", &out->attributes);
    }
    zj_free(attrs);
    if (s != ZGPU_OK) {
        zg_group_meta_free(out);
        zg_error_prefix("%s: %s: ", w, file);
        return s;
    }
    out->zarr_format = 2;
    return ZGPU_OK;
}

zgpu_status zg_group_meta_new(int zarr_format, const char *attributes_json, zg_group_meta *out) {
    memset(out, 0, sizeof *out);
    if (zarr_format != 2 && zarr_format != 3)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "group: zarr_format must be 2 or 3, got %d", zarr_format);
    zj_value *attrs = NULL;
    if (attributes_json) {
        ZG_FORWARD(zj_parse(attributes_json, strlen(attributes_json), "group attributes", &attrs));
        if (attrs->type != ZJ_OBJECT) {
            zj_free(attrs);
            return zg_error(ZGPU_ERR_BAD_METADATA, "group attributes must be a JSON object");
        }
    } else if (!(attrs = zj_new_object())) {
        return ZG_NOMEM();
    }
    out->zarr_format = zarr_format;
    out->attributes = attrs;
    out->doc = zj_new_object();
    zgpu_status s = out->doc ? set_member(out->doc, "zarr_format", zj_new_int(zarr_format)) : ZG_NOMEM();
    if (s == ZGPU_OK && zarr_format == 3) s = set_member(out->doc, "node_type", zj_new_string("group"));
    if (s != ZGPU_OK) zg_group_meta_free(out);
    return s;
}

char *zg_group_meta_to_json(const zg_group_meta *g) {
    zj_value *o = zj_new_object();
    if (!o) return NULL;
    zgpu_status s;
    if (g->zarr_format == 2) {
        s = set_member(o, "zarr_format", zj_new_int(2));
    } else {
        /* Member order as zarr-python 3.1 writes it. */
        static const char *const known[] = {"zarr_format", "node_type", "attributes", "consolidated_metadata", NULL};
        s = set_member(o, "attributes", g->attributes ? zj_clone(g->attributes) : zj_new_object());
        if (s == ZGPU_OK) s = set_member(o, "zarr_format", zj_new_int(3));
        const zj_value *cm = zj_get(g->doc, "consolidated_metadata");
        if (s == ZGPU_OK && cm) s = set_member(o, "consolidated_metadata", zj_clone(cm));
        if (s == ZGPU_OK) s = set_member(o, "node_type", zj_new_string("group"));
        if (g->doc && g->doc->type == ZJ_OBJECT)
            for (size_t i = 0; s == ZGPU_OK && i < g->doc->n; i++)
                if (!in_list(g->doc->keys[i], known)) s = set_member(o, g->doc->keys[i], zj_clone(g->doc->items[i]));
    }
    char *text = s == ZGPU_OK ? zj_write(o, 2) : NULL;
    zj_free(o);
    return text;
}

void zg_group_meta_free(zg_group_meta *g) {
    if (!g) return;
    zj_free(g->attributes);
    zj_free(g->doc);
    memset(g, 0, sizeof *g);
}
