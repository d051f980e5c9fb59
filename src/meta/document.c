/* zgpu_metadata_build: a whole zarr.json (v3) or .zarray + "attributes" (v2) from a zgpu_array_spec, built on the
 * JSON DOM. Codecs are made by their implementations (meta/codec_spec.c), fill values by meta/dtype.c. */
#include "meta/build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "common/status.h"

#define BAD(...) zg_error(ZGPU_ERR_INVALID_ARGUMENT, __VA_ARGS__)
#define OOM() zg_error(ZGPU_ERR_NO_MEMORY, "metadata: out of memory")

zgpu_status zg_json_put(zj_value *obj, const char *key, zj_value *val) {
    if (!val || zj_set(obj, key, val) != ZGPU_OK) return OOM();
    return ZGPU_OK;
}

zgpu_status zg_json_put_append(zj_value *arr, zj_value *item) {
    if (!item || zj_append(arr, item) != ZGPU_OK) return OOM();
    return ZGPU_OK;
}

/* Parses an optional JSON member of the spec; `member` names it in messages. want: required type or -1. */
static zgpu_status parse_member(const char *text, const char *member, int want, zj_value **out) {
    *out = NULL;
    if (!text) return ZGPU_OK;
    zgpu_status st = zj_parse(text, strlen(text), member, out);
    if (st != ZGPU_OK) return ZGPU_ERR_INVALID_ARGUMENT;
    if (want >= 0 && (*out)->type != (zj_type)want) {
        zj_free(*out);
        *out = NULL;
        static const char *const names[] = {"null", "a bool", "a number", "a string", "a list", "an object"};
        return BAD("%s must be %s", member, names[want]);
    }
    return ZGPU_OK;
}

/* The `bytes` codec for dt: 1-byte types carry no endian (as zarr-python writes them). */
static zj_value *bytes_codec(const zg_dtype *dt, int big_endian) {
    /* variable-length types: their serializer, with the empty configuration zarr-python writes */
    if (zg_dtype_is_vlen(dt)) {
        zj_value *conf = zj_new_object();
        return conf ? zg_codec_json(dt->kind == ZG_KIND_STRING ? "vlen-utf8" : "vlen-bytes", conf) : NULL;
    }
    /* No byte order for 1-byte and raw types, as the v2 reader's chain and creation defaults (meta/metadata.c). */
    if (dt->size == 1 || dt->id == ZGPU_RAW) return zg_codec_json("bytes", NULL);
    zj_value *conf = zj_new_object();
    if (!conf || zj_set(conf, "endian", zj_new_string(big_endian ? "big" : "little")) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    return zg_codec_json("bytes", conf);
}

/* Appends every item of list `from` (taken) to `to`. */
static zgpu_status splice(zj_value *to, zj_value *from) {
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; i < from->n && st == ZGPU_OK; i++) {
        st = zj_append(to, from->items[i]);
        from->items[i] = NULL;
    }
    zj_free(from);
    return st == ZGPU_OK ? ZGPU_OK : OOM();
}

/* The codec chain of one (inner) chunk, v3. */
static zgpu_status v3_chain(const zgpu_array_spec *s, const zg_dtype *dt, int big_endian, zj_value **out) {
    zj_value *chain = zj_new_array();
    if (!chain) return OOM();
    zgpu_status st = ZGPU_OK;
    if (!s->codecs) {
        zj_value *tail = NULL;
        st = zg_json_put_append(chain, bytes_codec(dt, big_endian));
        if (st == ZGPU_OK) st = zg_codec_spec_to_json(s->codec_spec ? s->codec_spec : "none", dt, 3, &tail);
        if (st == ZGPU_OK) st = splice(chain, tail);
        if (st != ZGPU_OK) zj_free(chain);
        else *out = chain;
        return st;
    }
    zj_value *given;
    st = parse_member(s->codecs, "codecs", ZJ_ARRAY, &given);
    int has_array_to_bytes = 0;
    size_t n_leading_a2a = 0;
    int prefix_done = 0;
    for (size_t i = 0; st == ZGPU_OK && i < given->n; i++) {
        const zj_value *el = given->items[i];
        if (el->type == ZJ_STRING) { /* a codec spec: its bytes->bytes codecs */
            zj_value *tail = NULL;
            st = zg_codec_spec_to_json(el->str, dt, 3, &tail);
            if (st == ZGPU_OK) st = splice(chain, tail);
            prefix_done = 1;
            continue;
        }
        const char *name = zj_string(zj_get(el, "name"));
        if (el->type != ZJ_OBJECT || !name) {
            char *text = zj_write(el, 0);
            int v2_form = el->type == ZJ_OBJECT && zj_get(el, "id");
            st = BAD("codec %s has no \"name\"%s", text ? text : "?",
                     v2_form ? " (it is in Zarr v2 form {\"id\": ...}; Zarr v3 codecs are {\"name\": ..., "
                               "\"configuration\": {...}})"
                             : "");
            free(text);
            break;
        }
        int kind = zg_codec_kind_of(name);
        if (kind == 0 && !prefix_done) n_leading_a2a++;
        else prefix_done = 1;
        has_array_to_bytes |= kind == 1;
        zj_value *norm = NULL;
        st = zg_codec_normalize(el, dt, &norm);
        if (st == ZGPU_OK) st = zg_json_put_append(chain, norm);
        else zg_error_prefix("codec '%s': ", name);
    }
    zj_free(given);
    if (st == ZGPU_OK && !has_array_to_bytes) { /* the serializer goes after the array->array codecs */
        zj_value *b = bytes_codec(dt, big_endian);
        st = zg_json_put_append(chain, b);
        if (st == ZGPU_OK) {
            memmove(chain->items + n_leading_a2a + 1, chain->items + n_leading_a2a,
                    (chain->n - 1 - n_leading_a2a) * sizeof *chain->items);
            chain->items[n_leading_a2a] = b;
        }
    }
    if (st != ZGPU_OK) zj_free(chain);
    else *out = chain;
    return st;
}

/* The sharding codec around an inner chain (taken), index at the end with bytes + crc32c as zarr-python writes. */
static zgpu_status sharding_codec(int ndim, const uint64_t *chunks, zj_value *inner, zj_value **out) {
    zj_value *conf = zj_new_object(), *index = zj_new_array();
    zj_value *little = zj_new_object();
    zgpu_status st = conf && index && little ? ZGPU_OK : OOM();
    if (st == ZGPU_OK) st = zg_json_put(little, "endian", zj_new_string("little"));
    if (st == ZGPU_OK) {
        st = zg_json_put_append(index, zg_codec_json("bytes", little));
        little = NULL;
    }
    if (st == ZGPU_OK) st = zg_json_put_append(index, zg_codec_json("crc32c", NULL));
    if (st == ZGPU_OK) st = zg_json_put(conf, "chunk_shape", zj_new_uint_list((size_t)ndim, chunks));
    if (st == ZGPU_OK) {
        st = zg_json_put(conf, "codecs", inner);
        inner = NULL;
    }
    if (st == ZGPU_OK) {
        st = zg_json_put(conf, "index_codecs", index);
        index = NULL;
    }
    if (st == ZGPU_OK) st = zg_json_put(conf, "index_location", zj_new_string("end"));
    zj_free(inner);
    zj_free(index);
    zj_free(little);
    if (st != ZGPU_OK) {
        zj_free(conf);
        return st;
    }
    *out = zg_codec_json("sharding_indexed", conf);
    return *out ? ZGPU_OK : OOM();
}

/* dt_json (taken): the data type member. */
static zgpu_status build_v3(const zgpu_array_spec *s, const zg_dtype *dt, int big_endian, zj_value *dt_json,
                            const uint64_t *chunks, zj_value *doc) {
    zgpu_status st = zg_json_put(doc, "zarr_format", zj_new_int(3));
    if (st == ZGPU_OK) st = zg_json_put(doc, "node_type", zj_new_string("array"));
    if (st == ZGPU_OK) st = zg_json_put(doc, "shape", zj_new_uint_list((size_t)s->ndim, s->shape));
    if (st == ZGPU_OK) {
        st = zg_json_put(doc, "data_type", dt_json);
        dt_json = NULL;
    }
    zj_free(dt_json);
    zj_value *grid = NULL, *gconf = NULL, *cke = NULL, *v = NULL;
    if (st == ZGPU_OK) {
        gconf = zj_new_object();
        const uint64_t *grid_shape = s->shards ? s->shards : chunks;
        st = gconf ? zg_json_put(gconf, "chunk_shape", zj_new_uint_list((size_t)s->ndim, grid_shape)) : OOM();
        if (st == ZGPU_OK) {
            grid = zj_new_object();
            st = grid ? zg_json_put(grid, "name", zj_new_string("regular")) : OOM();
        }
        if (st == ZGPU_OK) {
            st = zg_json_put(grid, "configuration", gconf);
            gconf = NULL;
        }
        if (st == ZGPU_OK) {
            st = zg_json_put(doc, "chunk_grid", grid);
            grid = NULL;
        }
        zj_free(gconf);
        zj_free(grid);
    }
    if (st == ZGPU_OK && s->chunk_key_encoding) {
        st = parse_member(s->chunk_key_encoding, "chunk_key_encoding", ZJ_OBJECT, &cke);
    } else if (st == ZGPU_OK) {
        char sep[2] = {s->separator ? s->separator : '/', 0};
        zj_value *conf = zj_new_object();
        st = conf ? zg_json_put(conf, "separator", zj_new_string(sep)) : OOM();
        if (st == ZGPU_OK) {
            cke = zj_new_object();
            st = cke ? zg_json_put(cke, "name", zj_new_string("default")) : OOM();
            if (st == ZGPU_OK) {
                st = zg_json_put(cke, "configuration", conf);
                conf = NULL;
            }
        }
        zj_free(conf);
    }
    if (st == ZGPU_OK) {
        st = zg_json_put(doc, "chunk_key_encoding", cke);
        cke = NULL;
    }
    zj_free(cke);
    if (st == ZGPU_OK) st = parse_member(s->fill_value, "fill_value", -1, &v);
    if (st == ZGPU_OK && !v && zg_dtype_is_vlen(dt)) {
        v = zj_new_string("");
        if (!v) st = OOM();
    } else if (st == ZGPU_OK && !v) {
        uint8_t *zero = calloc(1, dt->size);
        v = zero ? zg_fill_to_json(zero, dt, 3) : NULL;
        free(zero);
        if (!v) st = OOM();
    }
    if (st == ZGPU_OK) {
        st = zg_json_put(doc, "fill_value", v);
        v = NULL;
    }
    zj_value *chain = NULL;
    if (st == ZGPU_OK) st = v3_chain(s, dt, big_endian, &chain);
    if (st == ZGPU_OK && s->shards) {
        zj_value *shard = NULL;
        st = sharding_codec(s->ndim, chunks, chain, &shard);
        chain = NULL;
        if (st == ZGPU_OK) {
            chain = zj_new_array();
            st = chain ? zg_json_put_append(chain, shard) : OOM();
            if (!chain) zj_free(shard);
        }
    }
    if (st == ZGPU_OK) {
        st = zg_json_put(doc, "codecs", chain);
        chain = NULL;
    }
    zj_free(chain);
    if (st == ZGPU_OK && s->attributes) {
        st = parse_member(s->attributes, "attributes", ZJ_OBJECT, &v);
        if (st == ZGPU_OK) st = zg_json_put(doc, "attributes", v);
    }
    if (st == ZGPU_OK && s->dimension_names) {
        st = parse_member(s->dimension_names, "dimension_names", ZJ_ARRAY, &v);
        for (size_t i = 0; st == ZGPU_OK && i < v->n; i++)
            if (v->items[i]->type != ZJ_STRING && v->items[i]->type != ZJ_NULL)
                st = BAD("dimension_names: entry %zu is neither a string nor null", i);
        if (st == ZGPU_OK && v->n != (size_t)s->ndim)
            st = BAD("dimension_names has %zu entries, the array %d dimensions", v->n, s->ndim);
        if (st == ZGPU_OK) st = zg_json_put(doc, "dimension_names", v);
        else zj_free(v);
    }
    return st;
}

/* dt_json (taken): the data type member. */
static zgpu_status build_v2(const zgpu_array_spec *s, const zg_dtype *dt, int big_endian, zj_value *dt_json,
                            const uint64_t *chunks, zj_value *doc) {
    (void)big_endian; /* (in dt_json's typestring) */
    zgpu_status st = ZGPU_OK;
    if (s->shards) st = BAD("sharding needs Zarr format 3");
    else if (s->dimension_names) st = BAD("dimension names need Zarr format 3");
    else if (s->codecs) st = BAD("a v3 codec list was given for a Zarr v2 array (use v2_compressor / v2_filters)");
    char order = s->order ? s->order : 'C';
    if (st == ZGPU_OK && order != 'C' && order != 'F') st = BAD("order '%c' is not C or F", order);
    char sep = s->separator ? s->separator : '.';
    if (st == ZGPU_OK && sep != '.' && sep != '/') st = BAD("dimension separator '%c' is not '.' or '/'", sep);
    if (st != ZGPU_OK) {
        zj_free(dt_json);
        return st;
    }
    char text[2] = {0, 0};
    zj_value *v = NULL;
    st = zg_json_put(doc, "zarr_format", zj_new_int(2));
    if (st == ZGPU_OK) st = zg_json_put(doc, "shape", zj_new_uint_list((size_t)s->ndim, s->shape));
    if (st == ZGPU_OK) st = zg_json_put(doc, "chunks", zj_new_uint_list((size_t)s->ndim, chunks));
    if (st == ZGPU_OK) {
        st = zg_json_put(doc, "dtype", dt_json);
        dt_json = NULL;
    }
    zj_free(dt_json);
    if (st == ZGPU_OK && s->v2_compressor) st = parse_member(s->v2_compressor, "compressor", -1, &v);
    else if (st == ZGPU_OK) st = zg_codec_spec_to_json(s->codec_spec ? s->codec_spec : "none", dt, 2, &v);
    if (st == ZGPU_OK && v->type != ZJ_NULL && v->type != ZJ_OBJECT) {
        zj_free(v);
        st = BAD("compressor must be null or an object");
    }
    if (st == ZGPU_OK) st = zg_json_put(doc, "compressor", v);
    if (st == ZGPU_OK) st = parse_member(s->fill_value, "fill_value", -1, &v);
    if (st == ZGPU_OK) st = zg_json_put(doc, "fill_value", v ? v : zj_new_null());
    text[0] = order;
    if (st == ZGPU_OK) st = zg_json_put(doc, "order", zj_new_string(text));
    if (st == ZGPU_OK) st = parse_member(s->v2_filters, "filters", -1, &v);
    if (st == ZGPU_OK && v && v->type != ZJ_NULL && v->type != ZJ_ARRAY) {
        zj_free(v);
        st = BAD("filters must be null or a list");
    }
    if (st == ZGPU_OK && zg_dtype_is_vlen(dt)) {
        /* "|O" says "objects": the first filter (numcodecs' object codec) says which */
        zj_value *list = zj_new_array(), *first = zj_new_object();
        st = list && first ? zg_json_put(first, "id", zj_new_string(dt->kind == ZG_KIND_STRING ? "vlen-utf8"
                                                                                             : "vlen-bytes"))
                           : OOM();
        if (st == ZGPU_OK) {
            st = zg_json_put_append(list, first);
            first = NULL;
        }
        for (size_t i = 0; st == ZGPU_OK && v && v->type == ZJ_ARRAY && i < v->n; i++) {
            st = zg_json_put_append(list, v->items[i]);
            v->items[i] = NULL;
        }
        zj_free(first);
        zj_free(v);
        v = list;
    }
    if (st == ZGPU_OK) st = zg_json_put(doc, "filters", v ? v : zj_new_null());
    text[0] = sep;
    if (st == ZGPU_OK) st = zg_json_put(doc, "dimension_separator", zj_new_string(text));
    if (st == ZGPU_OK && s->attributes) {
        st = parse_member(s->attributes, "attributes", ZJ_OBJECT, &v);
        if (st == ZGPU_OK) st = zg_json_put(doc, "attributes", v);
    }
    return st;
}

static int host_big_endian(void) {
    const uint16_t one = 1;
    uint8_t low;
    memcpy(&low, &one, 1);
    return low == 0;
}

/* The spec's data type: data_type (JSON in the target format) when given, else (dtype, itemsize). *dt_json: the
 * document's data type member as zgpu writes it (v3 "data_type", v2 "dtype"); *big_endian: the stored byte order. */
static zgpu_status spec_dtype(const zgpu_array_spec *s, int fmt, zg_dtype *dt, int *big_endian, zj_value **dt_json) {
    *dt_json = NULL;
    *big_endian = s->big_endian != 0;
    if (!s->data_type) {
        if (!zg_dtype_for(s->dtype, s->itemsize, dt))
            return BAD("unknown data type %d (item size %zu)", (int)s->dtype, s->itemsize);
        char typestr[ZG_DTYPE_V2_MAX];
        *dt_json = fmt == 3 ? zg_dtype_to_v3_json(dt) : zj_new_string(zg_dtype_to_v2(dt, *big_endian, typestr));
        return *dt_json ? ZGPU_OK : OOM();
    }
    zj_value *given = NULL;
    ZG_FORWARD(parse_member(s->data_type, "data_type", -1, &given));
    zgpu_status st;
    /* a NumPy typestring names the type in either format ("<M8[ns]": datetime64 of ns, stored little-endian) */
    int typestr = given->type == ZJ_STRING && given->len > 0 && strchr("<>|=", given->str[0]);
    if (typestr && given->str[0] == '=') given->str[0] = host_big_endian() ? '>' : '<';
    if (fmt == 3 && given->type == ZJ_ARRAY) {
        st = zg_error(ZGPU_ERR_UNSUPPORTED, "structured data types are written in Zarr v2 only");
    } else if (fmt == 3 && !typestr) {
        st = zg_dtype_from_v3(given, dt);
        if (st == ZGPU_OK) *dt_json = zg_dtype_to_v3_json(dt);
    } else if (fmt == 2 && given->type == ZJ_STRING && !typestr) {
        /* the variable-length types by their v3 names: "|O" has no type of its own */
        st = zg_dtype_from_v3(given, dt);
        if (st == ZGPU_OK && !zg_dtype_is_vlen(dt)) st = BAD("'%s' is not a Zarr v2 dtype", given->str);
        if (st == ZGPU_OK) *dt_json = zj_new_string("|O");
    } else if (typestr) {
        st = zg_dtype_from_v2(given->str, dt, big_endian);
        char v2[ZG_DTYPE_V2_MAX];
        if (st == ZGPU_OK)
            *dt_json = fmt == 3 ? zg_dtype_to_v3_json(dt) : zj_new_string(zg_dtype_to_v2(dt, *big_endian, v2));
    } else if (fmt == 2 && given->type == ZJ_ARRAY) {
        st = zg_dtype_from_v2_struct(given, dt);
        if (st == ZGPU_OK) *dt_json = zj_clone(given);
    } else {
        st = BAD("a Zarr v2 dtype must be a NumPy typestring or a structured field list");
    }
    zj_free(given);
    if (st != ZGPU_OK) {
        zg_error_prefix("data_type: ");
        return st == ZGPU_ERR_UNSUPPORTED ? st : ZGPU_ERR_INVALID_ARGUMENT;
    }
    return *dt_json ? ZGPU_OK : OOM();
}

ZGPU_API zgpu_status zgpu_metadata_build(const zgpu_array_spec *s, char **json) {
    if (!json) return BAD("zgpu_metadata_build: json is NULL");
    *json = NULL;
    if (!s || s->struct_size < sizeof(zgpu_array_spec))
        return BAD("zgpu_metadata_build: spec is NULL or its struct_size is not sizeof(zgpu_array_spec)");
    int fmt = s->zarr_format ? s->zarr_format : 3;
    if (fmt != 2 && fmt != 3) return BAD("zarr_format %d is not 2 or 3", s->zarr_format);
    if (s->ndim < 0 || s->ndim > ZGPU_MAX_DIMS) return BAD("ndim %d is not in [0, %d]", s->ndim, ZGPU_MAX_DIMS);
    if (s->ndim && !s->shape) return BAD("shape is NULL");
    zg_dtype dt;
    int big_endian;
    zj_value *dt_json;
    ZG_FORWARD(spec_dtype(s, fmt, &dt, &big_endian, &dt_json));
    uint64_t chunks[ZGPU_MAX_DIMS];
    if (s->chunks) memcpy(chunks, s->chunks, (size_t)s->ndim * sizeof *chunks);
    else zgpu_default_chunks(s->ndim, s->shape, dt.size, s->shards, 0, chunks);
    for (int i = 0; i < s->ndim; i++) {
        zgpu_status bad = ZGPU_OK;
        if (!chunks[i]) bad = BAD("chunk extent on axis %d is 0", i);
        else if (s->shards && (!s->shards[i] || s->shards[i] % chunks[i]))
            bad = BAD("shard extent %llu on axis %d is not a multiple of the chunk extent %llu",
                      (unsigned long long)s->shards[i], i, (unsigned long long)chunks[i]);
        if (bad != ZGPU_OK) {
            zj_free(dt_json);
            return bad;
        }
    }
    zj_value *doc = zj_new_object();
    if (!doc) {
        zj_free(dt_json);
        return OOM();
    }
    zgpu_status st = fmt == 3 ? build_v3(s, &dt, big_endian, dt_json, chunks, doc)
                              : build_v2(s, &dt, big_endian, dt_json, chunks, doc);
    if (st == ZGPU_OK) {
        *json = zj_write(doc, 0);
        if (!*json) st = OOM();
    }
    zj_free(doc);
    return st;
}
