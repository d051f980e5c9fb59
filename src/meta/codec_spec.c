/* Codec specs ("zstd:3", "blosc:lz4:5:shuffle+crc32c") and v2 <-> v3 codec conversions (include/zgpu_meta.h).
 * A spec becomes a configuration object that the codec's own implementation (codec/registry.c) validates and
 * writes back, so the JSON is exactly what opening that array would give. */
#include "meta/build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec/codec.h"
#include "common/status.h"

typedef struct codec_spec {
    char name[16];  /* registry name: zstd, gzip, numcodecs.zlib, numcodecs.bz2, numcodecs.lz4, blosc; "" = none */
    const char *level_key; /* "level", "acceleration" or "clevel" */
    int level;
    int checksum;   /* zstd */
    char cname[16]; /* blosc */
    int shuffle;    /* blosc: -1 = by item size (bitshuffle for 1-byte types, else shuffle), 0, 1, 2 */
    int crc32c;
} codec_spec;

static int field_is(const char *s, size_t n, const char *word) { return strlen(word) == n && !strncasecmp(s, word, n); }

/* A decimal integer filling s[0..n) in [lo, hi]. */
static zgpu_status spec_int(const char *s, size_t n, int lo, int hi, const char *codec, const char *what, int *out) {
    char tmp[24];
    long long v = 0;
    int ok = n > 0 && n < sizeof tmp;
    if (ok) {
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        char *end;
        v = strtoll(tmp, &end, 10);
        ok = *end == '\0' && (tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9')) && v >= lo && v <= hi;
    }
    if (!ok)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "codec %s: %s '%.*s' is not an integer in [%d, %d]", codec, what,
                        (int)n, s, lo, hi);
    *out = (int)v;
    return ZGPU_OK;
}

static zgpu_status parse_spec(const char *text, codec_spec *out) {
    memset(out, 0, sizeof *out);
    out->shuffle = -1;
    if (!text) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "codec spec is NULL");
    size_t base_len = strlen(text);
    const char *plus = strchr(text, '+');
    if (plus) {
        if (strcmp(plus + 1, "crc32c") != 0)
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "codec '%s': only '+crc32c' may follow the compressor", text);
        out->crc32c = 1;
        base_len = (size_t)(plus - text);
    }
    const char *f[4];
    size_t fl[4];
    int nf = 0;
    const char *p = text, *end = text + base_len;
    for (;;) {
        const char *c = memchr(p, ':', (size_t)(end - p));
        if (nf == 4) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "codec '%s': too many ':' fields", text);
        f[nf] = p;
        fl[nf] = c ? (size_t)(c - p) : (size_t)(end - p);
        nf++;
        if (!c) break;
        p = c + 1;
    }
    const char *name = f[0];
    size_t nl = fl[0];
    if (field_is(name, nl, "crc32c") && !plus && nf == 1) {
        out->crc32c = 1;
        return ZGPU_OK;
    }
    if (field_is(name, nl, "none") || (nl == 0 && plus)) {
        if (nf > 1) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "codec 'none' takes no parameters");
        return ZGPU_OK;
    }
    if (field_is(name, nl, "zstd")) {
        strcpy(out->name, "zstd");
        out->level_key = "level";
        if (nf > 3) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "codec zstd: expected zstd[:LEVEL[:checksum]]");
        if (nf > 1) ZG_FORWARD(spec_int(f[1], fl[1], -131072, 22, "zstd", "level", &out->level));
        if (nf > 2) {
            if (field_is(f[2], fl[2], "checksum") || field_is(f[2], fl[2], "true") || field_is(f[2], fl[2], "1"))
                out->checksum = 1;
            else if (!field_is(f[2], fl[2], "nochecksum") && !field_is(f[2], fl[2], "false") &&
                     !field_is(f[2], fl[2], "0"))
                return zg_error(ZGPU_ERR_INVALID_ARGUMENT,
                                "codec zstd: third field '%.*s' must be 'checksum' or 'nochecksum'", (int)fl[2], f[2]);
        }
        return ZGPU_OK;
    }
    static const struct {
        const char *spec, *name, *key, *what;
        int def, lo, hi;
    } simple[] = {
        {"gzip", "gzip", "level", "level", 5, 0, 9},
        {"zlib", "numcodecs.zlib", "level", "level", 1, 0, 9},
        {"bz2", "numcodecs.bz2", "level", "level", 1, 1, 9},
        {"lz4", "numcodecs.lz4", "acceleration", "acceleration", 1, 1, 65537},
    };
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        if (!field_is(name, nl, simple[i].spec)) continue;
        strcpy(out->name, simple[i].name);
        out->level_key = simple[i].key;
        out->level = simple[i].def;
        if (nf > 2)
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "codec %s: expected %s[:%s]", simple[i].spec, simple[i].spec,
                            simple[i].what);
        if (nf > 1)
            ZG_FORWARD(spec_int(f[1], fl[1], simple[i].lo, simple[i].hi, simple[i].spec, simple[i].what, &out->level));
        return ZGPU_OK;
    }
    if (field_is(name, nl, "blosc")) {
        static const char *const cnames[] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};
        strcpy(out->name, "blosc");
        strcpy(out->cname, "zstd");
        out->level_key = "clevel";
        out->level = 5;
        if (nf > 1) {
            int ok = 0;
            for (size_t i = 0; i < sizeof cnames / sizeof cnames[0]; i++)
                if (field_is(f[1], fl[1], cnames[i])) {
                    strcpy(out->cname, cnames[i]);
                    ok = 1;
                }
            if (!ok)
                return zg_error(ZGPU_ERR_INVALID_ARGUMENT,
                                "codec blosc: unknown compressor '%.*s' (blosclz, lz4, lz4hc, snappy, zlib, zstd)",
                                (int)fl[1], f[1]);
        }
        if (nf > 2) ZG_FORWARD(spec_int(f[2], fl[2], 0, 9, "blosc", "clevel", &out->level));
        if (nf > 3) {
            static const char *const names[] = {"noshuffle", "shuffle", "bitshuffle"};
            static const char *const digits[] = {"0", "1", "2"};
            out->shuffle = -2;
            for (int i = 0; i < 3; i++)
                if (field_is(f[3], fl[3], names[i]) || field_is(f[3], fl[3], digits[i])) out->shuffle = i;
            if (out->shuffle == -2)
                return zg_error(ZGPU_ERR_INVALID_ARGUMENT,
                                "codec blosc: shuffle '%.*s' must be noshuffle, shuffle or bitshuffle", (int)fl[3],
                                f[3]);
        }
        return ZGPU_OK;
    }
    return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "unknown codec '%.*s' (none, zstd, gzip, zlib, bz2, lz4, blosc)",
                    (int)nl, name);
}

/* The configuration object the codec implementation parses. */
static zj_value *spec_config(const codec_spec *s, uint32_t itemsize) {
    zj_value *o = zj_new_object();
    if (!o) return NULL;
    int ok = zj_set(o, s->level_key, zj_new_int(s->level)) == ZGPU_OK;
    if (ok && !strcmp(s->name, "zstd")) ok = zj_set(o, "checksum", zj_new_bool(s->checksum)) == ZGPU_OK;
    if (ok && !strcmp(s->name, "blosc")) {
        static const char *const names[] = {"noshuffle", "shuffle", "bitshuffle"};
        int shuffle = s->shuffle >= 0 ? s->shuffle : itemsize == 1 ? 2 : 1;
        ok = zj_set(o, "typesize", zj_new_int(itemsize)) == ZGPU_OK &&
             zj_set(o, "cname", zj_new_string(s->cname)) == ZGPU_OK &&
             zj_set(o, "shuffle", zj_new_string(names[shuffle])) == ZGPU_OK &&
             zj_set(o, "blocksize", zj_new_int(0)) == ZGPU_OK;
    }
    if (!ok) {
        zj_free(o);
        return NULL;
    }
    return o;
}

/* Creates the codec `name` from `config` for elements of dt; `what` names it in messages. */
static zgpu_status make_codec(const char *name, const zj_value *config, const zg_dtype *dt, zg_codec **out) {
    const zg_codec_vtable *vt = zg_codec_find(name);
    if (!vt) return zg_error(ZGPU_ERR_UNSUPPORTED, "codec '%s' is not known to zgpu", name);
    zg_repr repr = {.ndim = 1, .shape = {1}, .dtype = *dt};
    return vt->create(config, &repr, out);
}

zgpu_status zg_codec_spec_to_json(const char *text, const zg_dtype *dt, int zarr_format, zj_value **out) {
    codec_spec s;
    ZG_FORWARD(parse_spec(text, &s));
    if (zarr_format == 2 && s.crc32c)
        return zg_error(ZGPU_ERR_UNSUPPORTED, "codec '%s': +crc32c has no Zarr v2 form (use format 3)", text);
    zj_value *result = zarr_format == 2 ? NULL : zj_new_array();
    if (zarr_format != 2 && !result) return zg_error(ZGPU_ERR_NO_MEMORY, "codec spec: out of memory");
    if (s.name[0]) {
        zj_value *conf = spec_config(&s, dt->size);
        if (!conf) {
            zj_free(result);
            return zg_error(ZGPU_ERR_NO_MEMORY, "codec spec: out of memory");
        }
        zg_codec *c = NULL;
        zgpu_status st = make_codec(s.name, conf, dt, &c);
        zj_free(conf);
        if (st != ZGPU_OK) {
            zj_free(result);
            zg_error_prefix("codec '%s': ", text);
            return st == ZGPU_ERR_BAD_METADATA ? ZGPU_ERR_INVALID_ARGUMENT : st;
        }
        zj_value *j = zarr_format == 2 ? c->vt->to_json_v2(c) : c->vt->to_json(c);
        c->vt->destroy(c);
        if (!j || (zarr_format != 2 && zj_append(result, j) != ZGPU_OK)) {
            zj_free(result);
            return zg_error(ZGPU_ERR_NO_MEMORY, "codec spec: out of memory");
        }
        if (zarr_format == 2) result = j;
    } else if (zarr_format == 2) {
        result = zj_new_null();
        if (!result) return zg_error(ZGPU_ERR_NO_MEMORY, "codec spec: out of memory");
    }
    if (s.crc32c && zj_append(result, zg_codec_json("crc32c", NULL)) != ZGPU_OK) {
        zj_free(result);
        return zg_error(ZGPU_ERR_NO_MEMORY, "codec spec: out of memory");
    }
    *out = result;
    return ZGPU_OK;
}

zgpu_status zg_codec_normalize(const zj_value *codec, const zg_dtype *dt, zj_value **out) {
    const char *name = zj_string(zj_get(codec, "name"));
    const zg_codec_vtable *vt = name ? zg_codec_find(name) : NULL;
    if (!vt || vt->kind != ZG_BYTES_TO_BYTES) {
        *out = zj_clone(codec);
        return *out ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "codecs: out of memory");
    }
    zg_codec *c = NULL;
    zgpu_status st = make_codec(name, zj_get(codec, "configuration"), dt, &c);
    if (st != ZGPU_OK) return st;
    *out = c->vt->to_json(c);
    c->vt->destroy(c);
    return *out ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "codecs: out of memory");
}

/* ---- conversions of codec lists ---- */
static zgpu_status parse_list(const char *text, const char *what, zj_value **out) {
    if (!text) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: codec list is NULL", what);
    ZG_FORWARD(zj_parse(text, strlen(text), what, out));
    if ((*out)->type == ZJ_ARRAY) return ZGPU_OK;
    zj_free(*out);
    return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: codec list is not a JSON list", what);
}

static zgpu_status write_out(zj_value *v, char **json) {
    *json = zj_write(v, 0);
    zj_free(v);
    return *json ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "codecs: out of memory");
}

static zgpu_status entry_name(const zj_value *el, const char *what, const char **name) {
    *name = zj_string(zj_get(el, "name"));
    if (!*name) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: codec list entry without a name", what);
    return ZGPU_OK;
}

zgpu_status zg_codecs_standardize(zj_value *list, size_t itemsize) {
    zg_dtype raw;
    if (!zg_dtype_for(ZGPU_RAW, itemsize ? itemsize : 1, &raw))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "codecs: bad item size %zu", itemsize);
    for (size_t i = 0; i < list->n; i++) {
        const char *name = zj_string(zj_get(list->items[i], "name"));
        const char *standard = !name                              ? NULL
                               : !strcmp(name, "numcodecs.zstd")  ? "zstd"
                               : !strcmp(name, "numcodecs.gzip")  ? "gzip"
                               : !strcmp(name, "numcodecs.blosc") ? "blosc"
                                                                  : NULL;
        if (!standard) continue;
        zg_codec *c = NULL;
        /* A configuration the standard codec refuses stays as it was: opening the array will say why. */
        if (make_codec(standard, zj_get(list->items[i], "configuration"), &raw, &c) != ZGPU_OK) continue;
        zj_value *j = c->vt->to_json(c);
        c->vt->destroy(c);
        if (!j) return zg_error(ZGPU_ERR_NO_MEMORY, "codecs: out of memory");
        zj_free(list->items[i]);
        list->items[i] = j;
    }
    return ZGPU_OK;
}

zgpu_status zg_codec_to_v2(const zj_value *codec, const zg_dtype *dt, zj_value **out) {
    const char *name = zj_string(zj_get(codec, "name"));
    const zg_codec_vtable *vt = name ? zg_codec_find(name) : NULL;
    *out = NULL;
    if (!vt || vt->kind != ZG_BYTES_TO_BYTES || !vt->to_json_v2)
        return zg_error(ZGPU_ERR_UNSUPPORTED, "codec '%s' has no Zarr v2 form", name ? name : "(no name)");
    zg_codec *c = NULL;
    ZG_FORWARD(make_codec(name, zj_get(codec, "configuration"), dt, &c));
    *out = c->vt->to_json_v2(c);
    c->vt->destroy(c);
    return *out ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "codecs: out of memory");
}

ZGPU_API zgpu_status zgpu_codecs_v2_to_v3(const char *codecs_json, size_t itemsize, char **json) {
    static const char *const what = "zgpu_codecs_v2_to_v3";
    if (!json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: json is NULL", what);
    *json = NULL;
    zg_dtype raw;
    if (!zg_dtype_for(ZGPU_RAW, itemsize ? itemsize : 1, &raw))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: bad item size %zu", what, itemsize);
    zj_value *list;
    ZG_FORWARD(parse_list(codecs_json, what, &list));
    for (size_t i = 0; i < list->n; i++) {
        const char *name;
        zgpu_status st = entry_name(list->items[i], what, &name);
        if (st != ZGPU_OK) {
            zj_free(list);
            return st;
        }
    }
    zgpu_status st = zg_codecs_standardize(list, itemsize);
    if (st != ZGPU_OK) {
        zj_free(list);
        zg_error_prefix("%s: ", what);
        return st;
    }
    return write_out(list, json);
}

ZGPU_API zgpu_status zgpu_codecs_v3_to_v2(const char *codecs_json, char **json) {
    static const char *const what = "zgpu_codecs_v3_to_v2";
    if (!json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "%s: json is NULL", what);
    *json = NULL;
    zj_value *list;
    ZG_FORWARD(parse_list(codecs_json, what, &list));
    const zj_value *compressor = NULL;
    const char *compressor_name = NULL;
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; i < list->n && st == ZGPU_OK; i++) {
        const char *name;
        st = entry_name(list->items[i], what, &name);
        if (st != ZGPU_OK || !strcmp(name, "bytes")) continue;
        if (compressor)
            st = zg_error(ZGPU_ERR_UNSUPPORTED, "codecs '%s' and '%s' cannot both be expressed in Zarr v2 metadata",
                          compressor_name, name);
        compressor = list->items[i];
        compressor_name = name;
    }
    zj_value *result = NULL;
    if (st == ZGPU_OK && !compressor) {
        result = zj_new_null();
        if (!result) st = zg_error(ZGPU_ERR_NO_MEMORY, "%s: out of memory", what);
    } else if (st == ZGPU_OK) {
        zg_dtype raw;
        zg_dtype_for(ZGPU_RAW, 1, &raw);
        st = zg_codec_to_v2(compressor, &raw, &result);
    }
    zj_free(list);
    if (st != ZGPU_OK) {
        zj_free(result);
        return st;
    }
    return write_out(result, json);
}

ZGPU_API zgpu_status zgpu_codec_spec_json(const char *spec, zgpu_dtype dtype, size_t itemsize, int zarr_format,
                                          char **json) {
    if (!json) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_codec_spec_json: json is NULL");
    *json = NULL;
    if (zarr_format != 2 && zarr_format != 3)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_codec_spec_json: zarr_format %d is not 2 or 3", zarr_format);
    zg_dtype dt;
    if (!zg_dtype_for(dtype, itemsize, &dt))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_codec_spec_json: unknown data type %d (item size %zu)",
                        (int)dtype, itemsize);
    zj_value *v;
    ZG_FORWARD(zg_codec_spec_to_json(spec, &dt, zarr_format, &v));
    return write_out(v, json);
}

int zg_codec_kind_of(const char *name) {
    const zg_codec_vtable *vt = name ? zg_codec_find(name) : NULL;
    if (!vt) return -1;
    return vt->kind == ZG_ARRAY_TO_ARRAY ? 0 : vt->kind == ZG_ARRAY_TO_BYTES ? 1 : 2;
}
