/* fixedscaleoffset codec (numcodecs FixedScaleOffset; v3 "numcodecs.fixedscaleoffset", v2 id
 * "fixedscaleoffset"): array -> array.
 *   encode: numpy.around((x - offset) * scale).astype(astype)   (round half to even)
 *   decode: (enc / scale + offset).astype(dtype)
 * The arithmetic types follow NumPy 2 (NEP 50: Python scalars are "weak"): a float array computes in its
 * own precision; an integer array stays integer (wrapping) while the scalar it meets is a JSON integer and
 * turns float64 as soon as it meets a JSON float; division always gives float64 for integer input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "codec/codec.h"
#include "codec/numconv.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_fixedscaleoffset;

typedef struct fso_codec {
    zg_codec base;
    zg_dtype dtype, astype;
    double offset, scale;
    int offset_is_int, scale_is_int;
    int64_t offset_i, scale_i;
    zj_value *offset_json, *scale_json; /* as given, for to_json */
    uint8_t fill[8];
} fso_codec;

static zgpu_status parse_number(const zj_value *config, const char *key, double *d, int *is_int, int64_t *i,
                                zj_value **json) {
    const zj_value *v = config ? zj_get(config, key) : NULL;
    ZG_RETURN_IF(!v || v->type != ZJ_NUMBER, ZGPU_ERR_BAD_METADATA,
                 "fixedscaleoffset: configuration \"%s\" must be a number", key);
    *d = v->num;
    *is_int = v->is_int && zj_is_int(v, i);
    *json = zj_clone(v);
    ZG_RETURN_IF(!*json, ZGPU_ERR_NO_MEMORY, "fixedscaleoffset: out of memory");
    return ZGPU_OK;
}

static void fso_destroy(zg_codec *c) {
    fso_codec *f = (fso_codec *)c;
    if (!f) return;
    zj_free(f->offset_json);
    zj_free(f->scale_json);
    free(f);
}

static zgpu_status fso_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(!config || config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA,
                 "fixedscaleoffset: a configuration object with \"offset\" and \"scale\" is required");
    static const char *const keys[] = {"offset", "scale", "dtype", "astype", NULL};
    ZG_FORWARD(zg_config_only(config, "fixedscaleoffset", "fixedscaleoffset", keys));
    ZG_RETURN_IF(!nc_is_numeric(decoded->dtype.id), ZGPU_ERR_UNSUPPORTED,
                 "fixedscaleoffset: data type %s is not supported (integer or float types only)", decoded->dtype.name);
    zg_dtype dt, ast;
    /* dtype absent or null: the array's, as zarr-python's numcodecs.fixedscaleoffset fills it in */
    ZG_FORWARD(zg_config_numeric_typestr(config, "fixedscaleoffset", "dtype", &decoded->dtype, 1, &dt));
    ZG_RETURN_IF(dt.id != decoded->dtype.id, ZGPU_ERR_BAD_METADATA,
                 "fixedscaleoffset: \"dtype\" is %s but the data reaching this codec is %s", dt.name,
                 decoded->dtype.name);
    ZG_FORWARD(zg_config_numeric_typestr(config, "fixedscaleoffset", "astype", &dt, 1, &ast));
    fso_codec *f = calloc(1, sizeof *f);
    ZG_RETURN_IF(!f, ZGPU_ERR_NO_MEMORY, "fixedscaleoffset: out of memory");
    zgpu_status st = parse_number(config, "offset", &f->offset, &f->offset_is_int, &f->offset_i, &f->offset_json);
    if (st == ZGPU_OK) st = parse_number(config, "scale", &f->scale, &f->scale_is_int, &f->scale_i, &f->scale_json);
    if (st != ZGPU_OK) { fso_destroy(&f->base); return st; }
    f->base.vt = &zg_codec_fixedscaleoffset;
    f->base.decoded = *decoded;
    f->base.encoded = *decoded;
    f->base.encoded.dtype = ast;
    if (decoded->fill_value) {
        nc_convert(dt.id, decoded->fill_value, ast.id, f->fill, 1);
        f->base.encoded.fill_value = f->fill;
    }
    f->dtype = dt;
    f->astype = ast;
    *out = &f->base;
    return ZGPU_OK;
}

static zj_value *fso_conf(const zg_codec *c, int v2) {
    const fso_codec *f = (const fso_codec *)c;
    char a[16], b[16];
    zj_value *conf = zj_new_object();
    if (!conf) return NULL;
    if ((v2 && zj_set(conf, "id", zj_new_string("fixedscaleoffset")) != ZGPU_OK) ||
        zj_set(conf, "scale", zj_clone(f->scale_json)) != ZGPU_OK ||
        zj_set(conf, "offset", zj_clone(f->offset_json)) != ZGPU_OK ||
        zj_set(conf, "dtype", zj_new_string(zg_dtype_to_v2(&f->dtype, 0, a))) != ZGPU_OK ||
        zj_set(conf, "astype", zj_new_string(zg_dtype_to_v2(&f->astype, 0, b))) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    return conf;
}
static zj_value *fso_to_json(const zg_codec *c) {
    zj_value *conf = fso_conf(c, 0);
    return conf ? zg_codec_json("numcodecs.fixedscaleoffset", conf) : NULL;
}
static zj_value *fso_to_json_v2(const zg_codec *c) { return fso_conf(c, 1); }

static inline uint16_t half_op(float v) { return zg_float_to_half(v); }
static inline float hf(uint16_t h) { return zg_half_to_float(h); }

/* Sign- or zero-extends the low `bytes` bytes of v per signedness. */
static inline uint64_t extend(uint64_t v, uint32_t bytes, int is_signed) {
    if (bytes == 8) return v;
    unsigned sh = 64 - 8 * bytes;
    return is_signed ? (uint64_t)((int64_t)(v << sh) >> sh) : (v << sh) >> sh;
}

static zgpu_status fso_encode(const zg_codec *c, const uint8_t *in, uint8_t *out) {
    const fso_codec *f = (const fso_codec *)c;
    size_t n = (size_t)zg_repr_count(&c->decoded);
    zgpu_dtype dt = f->dtype.id, at = f->astype.id;
    uint32_t dsz = nc_size(dt), asz = nc_size(at);
    double w[NC_BLOCK];
    uint64_t wi[NC_BLOCK];
    for (size_t i0 = 0; i0 < n; i0 += NC_BLOCK) {
        size_t m = n - i0 < NC_BLOCK ? n - i0 : NC_BLOCK;
        const uint8_t *src = in + i0 * dsz;
        uint8_t *dst = out + i0 * asz;
        if (dt == ZGPU_FLOAT64) {
            nc_load_float(dt, src, w, m);
            for (size_t i = 0; i < m; i++) w[i] = rint((w[i] - f->offset) * f->scale);
            nc_store_from_double(at, w, dst, m);
        } else if (dt == ZGPU_FLOAT32) {
            float o = (float)f->offset, s = (float)f->scale;
            for (size_t i = 0; i < m; i++) w[i] = rintf((nc_ld_f32(src, i) - o) * s);
            nc_store_from_double(at, w, dst, m);
        } else if (dt == ZGPU_FLOAT16) {
            float o = hf(half_op((float)f->offset)), s = hf(half_op((float)f->scale));
            for (size_t i = 0; i < m; i++) w[i] = rintf(hf(half_op(hf(half_op(hf(nc_ld_u16(src, i)) - o)) * s)));
            nc_store_from_double(at, w, dst, m);
        } else {
            int sgn = nc_is_signed(dt);
            nc_load_int(dt, src, wi, m);
            if (f->offset_is_int && f->scale_is_int) {
                /* integer all the way, wrapping at the width of dtype */
                for (size_t i = 0; i < m; i++)
                    wi[i] = extend((wi[i] - (uint64_t)f->offset_i) * (uint64_t)f->scale_i, dsz, sgn);
                nc_store_from_int(at, wi, sgn, dst, m);
            } else {
                for (size_t i = 0; i < m; i++) {
                    double t;
                    if (f->offset_is_int) {
                        uint64_t d = extend(wi[i] - (uint64_t)f->offset_i, dsz, sgn);
                        t = sgn ? (double)(int64_t)d : (double)d;
                    } else {
                        t = (sgn ? (double)(int64_t)wi[i] : (double)wi[i]) - f->offset;
                    }
                    w[i] = rint(t * f->scale);
                }
                nc_store_from_double(at, w, dst, m);
            }
        }
    }
    return ZGPU_OK;
}

static zgpu_status fso_decode(const zg_codec *c, const uint8_t *in, uint8_t *out) {
    const fso_codec *f = (const fso_codec *)c;
    size_t n = (size_t)zg_repr_count(&c->decoded);
    zgpu_dtype dt = f->dtype.id, at = f->astype.id;
    uint32_t dsz = nc_size(dt), asz = nc_size(at);
    double w[NC_BLOCK];
    for (size_t i0 = 0; i0 < n; i0 += NC_BLOCK) {
        size_t m = n - i0 < NC_BLOCK ? n - i0 : NC_BLOCK;
        const uint8_t *src = in + i0 * asz;
        if (at == ZGPU_FLOAT32) {
            float o = (float)f->offset, s = (float)f->scale;
            for (size_t i = 0; i < m; i++) w[i] = nc_ld_f32(src, i) / s + o;
        } else if (at == ZGPU_FLOAT16) {
            float o = hf(half_op((float)f->offset)), s = hf(half_op((float)f->scale));
            for (size_t i = 0; i < m; i++) w[i] = hf(half_op(hf(half_op(hf(nc_ld_u16(src, i)) / s)) + o));
        } else {
            /* float64, and integer input (true division gives float64) */
            if (at == ZGPU_FLOAT64) nc_load_float(at, src, w, m);
            else {
                uint64_t wi[NC_BLOCK];
                nc_load_int(at, src, wi, m);
                if (nc_is_signed(at)) for (size_t i = 0; i < m; i++) w[i] = (double)(int64_t)wi[i];
                else for (size_t i = 0; i < m; i++) w[i] = (double)wi[i];
            }
            for (size_t i = 0; i < m; i++) w[i] = w[i] / f->scale + f->offset;
        }
        nc_store_from_double(dt, w, out + i0 * dsz, m);
    }
    return ZGPU_OK;
}

const zg_codec_vtable zg_codec_fixedscaleoffset = {
    .name = "numcodecs.fixedscaleoffset",
    .kind = ZG_ARRAY_TO_ARRAY,
    .create = fso_create,
    .destroy = fso_destroy,
    .to_json = fso_to_json,
    .to_json_v2 = fso_to_json_v2,
    .decode_array = fso_decode,
    .encode_array = fso_encode,
};
