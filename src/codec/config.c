/* Configuration helpers shared by the codec implementations. */
#include <string.h>

#include "codec/codec.h"
#include "common/status.h"

zgpu_status zg_config_int(const zj_value *config, const char *codec, const char *key, int64_t def, int64_t lo,
                          int64_t hi, int64_t *out) {
    const zj_value *v = config ? zj_get(config, key) : NULL;
    if (!v || v->type == ZJ_NULL) {
        *out = def;
        return ZGPU_OK;
    }
    int64_t x;
    if (v->type == ZJ_BOOL) x = v->boolean; /* numcodecs writes some flags as true/false */
    else if (!zj_is_int(v, &x))
        return zg_error(ZGPU_ERR_BAD_METADATA, "codec '%s': configuration \"%s\" must be an integer", codec, key);
    if (x < lo || x > hi)
        return zg_error(ZGPU_ERR_BAD_METADATA, "codec '%s': configuration \"%s\" = %lld is outside [%lld, %lld]",
                        codec, key, (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return ZGPU_OK;
}

zgpu_status zg_config_str(const zj_value *config, const char *codec, const char *key, const char *def,
                          const char **out) {
    const zj_value *v = config ? zj_get(config, key) : NULL;
    if (!v || v->type == ZJ_NULL) {
        *out = def;
        return ZGPU_OK;
    }
    if (v->type != ZJ_STRING)
        return zg_error(ZGPU_ERR_BAD_METADATA, "codec '%s': configuration \"%s\" must be a string", codec, key);
    *out = v->str;
    return ZGPU_OK;
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
                                      zg_dtype *out) {
    const char *s = NULL;
    ZG_FORWARD(zg_config_str(config, codec, key, NULL, &s));
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
