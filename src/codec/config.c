/* Configuration helpers shared by the codec implementations.
 *
 * What they accept follows zarr-python (v3 codecs) and numcodecs (v2 objects, "numcodecs.*" configurations):
 *   - members a codec does not know are refused (zg_config_only): zarr-python passes the configuration to the
 *     codec's constructor as keyword arguments, so an unknown one is a TypeError there, and a member zgpu skipped
 *     could be an option that changes what the stored bytes mean;
 *   - null is not "absent": zg_config_int / zg_config_str refuse it, and a codec uses the _or_null variants only
 *     for the members where zarr-python or numcodecs give None a meaning (blosc typesize, delta astype, ...);
 *   - true and false are integers 1 and 0 where an integer is expected, as Python's bool is an int (zarr-python
 *     and numcodecs accept them: a gzip level of true is level 1 there). */
#include <stdio.h>
#include <string.h>

#include "codec/codec.h"
#include "common/status.h"
#include "meta/names.h"

zgpu_status zg_config_only(const zj_value *config, const char *codec, const char *nc_id, const char *const allowed[]) {
    if (!config || config->type != ZJ_OBJECT) return ZGPU_OK;
    for (size_t i = 0; i < config->n; i++) {
        const char *key = config->keys[i];
        int known = 0;
        for (size_t k = 0; allowed[k] && !known; k++) known = strcmp(key, allowed[k]) == 0;
        if (known) continue;
        if (nc_id && strcmp(key, "id") == 0) {
            /* numcodecs objects carry their id; zarr-python accepts it in a "numcodecs.*" configuration when it
             * names the codec itself, and refuses another. */
            const zj_value *v = config->items[i];
            if (v->type == ZJ_STRING && strcmp(v->str, nc_id) == 0 && strlen(v->str) == v->len) continue;
            char q[96];
            return zg_error(ZGPU_ERR_BAD_METADATA, "codec '%s': configuration \"id\" %s does not name this codec (\"%s\")",
                            codec, v->type == ZJ_STRING ? zg_meta_quote(v->str, v->len, q, sizeof q) : "(not a string)",
                            nc_id);
        }
        char q[96], list[160];
        size_t o = 0;
        list[0] = 0;
        for (size_t k = 0; allowed[k] && o < sizeof list; k++) {
            int n = snprintf(list + o, sizeof list - o, "%s%s", k ? ", " : "", allowed[k]);
            if (n < 0) break;
            o += (size_t)n;
        }
        return zg_error(ZGPU_ERR_BAD_METADATA, "codec '%s': unknown configuration member %s (%s%s)", codec,
                        zg_meta_quote(key, strlen(key), q, sizeof q), allowed[0] ? "known: " : "it takes none",
                        list);
    }
    return ZGPU_OK;
}

static zgpu_status config_int(const zj_value *config, const char *codec, const char *key, int64_t def, int64_t lo,
                              int64_t hi, int null_ok, int64_t *out) {
    const zj_value *v = config ? zj_get(config, key) : NULL;
    if (!v || (null_ok && v->type == ZJ_NULL)) {
        *out = def;
        return ZGPU_OK;
    }
    int64_t x;
    if (v->type == ZJ_BOOL) x = v->boolean; /* Python's bools are ints: zarr-python and numcodecs take them */
    else if (!zj_is_int(v, &x))
        return zg_error(ZGPU_ERR_BAD_METADATA, "codec '%s': configuration \"%s\" must be an integer%s", codec, key,
                        v->type == ZJ_NULL ? ", not null" : "");
    if (x < lo || x > hi)
        return zg_error(ZGPU_ERR_BAD_METADATA, "codec '%s': configuration \"%s\" = %lld is outside [%lld, %lld]",
                        codec, key, (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return ZGPU_OK;
}

zgpu_status zg_config_int(const zj_value *config, const char *codec, const char *key, int64_t def, int64_t lo,
                          int64_t hi, int64_t *out) {
    return config_int(config, codec, key, def, lo, hi, 0, out);
}

zgpu_status zg_config_int_or_null(const zj_value *config, const char *codec, const char *key, int64_t def,
                                  int64_t lo, int64_t hi, int64_t *out) {
    return config_int(config, codec, key, def, lo, hi, 1, out);
}

static zgpu_status config_str(const zj_value *config, const char *codec, const char *key, const char *def,
                              int null_ok, const char **out) {
    const zj_value *v = config ? zj_get(config, key) : NULL;
    if (!v || (null_ok && v->type == ZJ_NULL)) {
        *out = def;
        return ZGPU_OK;
    }
    if (v->type != ZJ_STRING)
        return zg_error(ZGPU_ERR_BAD_METADATA, "codec '%s': configuration \"%s\" must be a string%s", codec, key,
                        v->type == ZJ_NULL ? ", not null" : "");
    *out = v->str;
    return ZGPU_OK;
}

zgpu_status zg_config_str(const zj_value *config, const char *codec, const char *key, const char *def,
                          const char **out) {
    return config_str(config, codec, key, def, 0, out);
}

zgpu_status zg_config_str_or_null(const zj_value *config, const char *codec, const char *key, const char *def,
                                  const char **out) {
    return config_str(config, codec, key, def, 1, out);
}

zj_value *zg_codec_json(const char *name, zj_value *conf) {
    zj_value *o = zj_new_object();
    if (!o || zj_set(o, "name", zj_new_string(name)) != ZGPU_OK) {
        zj_free(o);
        zj_free(conf);
        return NULL;
    }
    if (conf && zj_set(o, "configuration", conf) != ZGPU_OK) {
        zj_free(o);
        return NULL;
    }
    return o;
}

zgpu_status zg_config_numeric_typestr(const zj_value *config, const char *codec, const char *key, const zg_dtype *def,
                                      int null_ok, zg_dtype *out) {
    const char *s = NULL;
    ZG_FORWARD(config_str(config, codec, key, NULL, null_ok, &s));
    if (!s) {
        *out = *def;
        return ZGPU_OK;
    }
    int big = 0;
    if (zg_dtype_from_v2(s, out, &big) != ZGPU_OK)
        return zg_error(ZGPU_ERR_BAD_METADATA, "%s: \"%s\" is not a valid data type: \"%s\"", codec, key, s);
    ZG_RETURN_IF(out->id < ZGPU_INT8 || out->id > ZGPU_FLOAT64, ZGPU_ERR_UNSUPPORTED,
                 "%s: \"%s\" must be an integer or float type, found \"%s\"", codec, key, s);
    return ZGPU_OK;
}
