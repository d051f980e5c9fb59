/* delta codec (numcodecs Delta; v3 "numcodecs.delta", v2 id "delta"): array -> array over the flattened
 * chunk. Follows numcodecs exactly:
 *   encode: enc[0] = x[0]; enc[i] = x[i] - x[i-1] computed in `dtype` (integers wrap), then cast to `astype`;
 *   decode: numpy.cumsum(enc, out=dec): summed in np.result_type(astype, dtype) (an integer sum wraps
 *           exactly as one in `dtype`; a float sum rounds to that float type at each step), each partial
 *           sum cast to `dtype`.
 * Integer and float types of every size; little-endian (or byte-order-free) typestrings only. */
#include <stdlib.h>
#include <string.h>
#include "codec/codec.h"
#include "codec/numconv.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_delta;

typedef struct delta_codec {
    zg_codec base;
    zg_dtype dtype, astype;
    uint8_t fill[8]; /* the fill value cast to astype: the encoded repr's fill value */
} delta_codec;

static zgpu_status delta_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "delta: configuration must be an object");
    static const char *const keys[] = {"dtype", "astype", NULL};
    ZG_FORWARD(zg_config_only(config, "delta", "delta", keys));
    ZG_RETURN_IF(!nc_is_numeric(decoded->dtype.id), ZGPU_ERR_UNSUPPORTED,
                 "delta: data type %s is not supported (integer or float types only)", decoded->dtype.name);
    zg_dtype dt, ast;
    /* dtype null is refused: numcodecs reads np.dtype(None), float64 */
    ZG_FORWARD(zg_config_numeric_typestr(config, "delta", "dtype", &decoded->dtype, 0, &dt));
    ZG_RETURN_IF(dt.id != decoded->dtype.id, ZGPU_ERR_BAD_METADATA,
                 "delta: \"dtype\" is %s but the data reaching this codec is %s", dt.name, decoded->dtype.name);
    ZG_FORWARD(zg_config_numeric_typestr(config, "delta", "astype", &dt, 1, &ast)); /* null: dtype, as numcodecs */
    delta_codec *d = calloc(1, sizeof *d);
    ZG_RETURN_IF(!d, ZGPU_ERR_NO_MEMORY, "delta: out of memory");
    d->base.vt = &zg_codec_delta;
    d->base.decoded = *decoded;
    d->base.encoded = *decoded;
    d->base.encoded.dtype = ast;
    /* Codecs further down (sharding) compare chunks against the fill value of their repr: give them the
     * fill value cast to astype, as zarr-python keeps the same scalar under the new data type. */
    if (decoded->fill_value) {
        nc_convert(dt.id, decoded->fill_value, ast.id, d->fill, 1);
        d->base.encoded.fill_value = d->fill;
    }
    d->dtype = dt;
    d->astype = ast;
    *out = &d->base;
    return ZGPU_OK;
}

static void delta_destroy(zg_codec *c) { free(c); }

static zj_value *delta_conf(const zg_codec *c, int v2) {
    const delta_codec *d = (const delta_codec *)c;
    char a[16], b[16];
    zj_value *conf = zj_new_object();
    if (!conf) return NULL;
    if ((v2 && zj_set(conf, "id", zj_new_string("delta")) != ZGPU_OK) ||
        zj_set(conf, "dtype", zj_new_string(zg_dtype_to_v2(&d->dtype, 0, a))) != ZGPU_OK ||
        zj_set(conf, "astype", zj_new_string(zg_dtype_to_v2(&d->astype, 0, b))) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    return conf;
}
static zj_value *delta_to_json(const zg_codec *c) {
    zj_value *conf = delta_conf(c, 0);
    return conf ? zg_codec_json("numcodecs.delta", conf) : NULL;
}
static zj_value *delta_to_json_v2(const zg_codec *c) { return delta_conf(c, 1); }

/* Differences in the decoded type for elements i0..i0+m-1 (integers wrap at the type width). */
static void diff_int(zgpu_dtype t, const uint8_t *x, size_t i0, size_t m, uint8_t *d) {
    switch (nc_size(t)) {
    case 1: for (size_t i = 0; i < m; i++) { size_t k = i0 + i; nc_st_u8(d, i, k ? (uint8_t)(nc_ld_u8(x, k) - nc_ld_u8(x, k - 1)) : nc_ld_u8(x, 0)); } break;
    case 2: for (size_t i = 0; i < m; i++) { size_t k = i0 + i; nc_st_u16(d, i, k ? (uint16_t)(nc_ld_u16(x, k) - nc_ld_u16(x, k - 1)) : nc_ld_u16(x, 0)); } break;
    case 4: for (size_t i = 0; i < m; i++) { size_t k = i0 + i; nc_st_u32(d, i, k ? nc_ld_u32(x, k) - nc_ld_u32(x, k - 1) : nc_ld_u32(x, 0)); } break;
    default: for (size_t i = 0; i < m; i++) { size_t k = i0 + i; nc_st_u64(d, i, k ? nc_ld_u64(x, k) - nc_ld_u64(x, k - 1) : nc_ld_u64(x, 0)); } break;
    }
}

static void diff_float(zgpu_dtype t, const uint8_t *x, size_t i0, size_t m, uint8_t *d) {
    switch (t) {
    case ZGPU_FLOAT16:
        for (size_t i = 0; i < m; i++) {
            size_t k = i0 + i;
            uint16_t v = nc_ld_u16(x, k);
            if (k) v = zg_float_to_half(zg_half_to_float(v) - zg_half_to_float(nc_ld_u16(x, k - 1)));
            nc_st_u16(d, i, v);
        }
        break;
    case ZGPU_FLOAT32: for (size_t i = 0; i < m; i++) { size_t k = i0 + i; nc_st_f32(d, i, k ? nc_ld_f32(x, k) - nc_ld_f32(x, k - 1) : nc_ld_f32(x, 0)); } break;
    default: for (size_t i = 0; i < m; i++) { size_t k = i0 + i; nc_st_f64(d, i, k ? nc_ld_f64(x, k) - nc_ld_f64(x, k - 1) : nc_ld_f64(x, 0)); } break;
    }
}

static zgpu_status delta_encode(const zg_codec *c, const uint8_t *in, uint8_t *out) {
    const delta_codec *d = (const delta_codec *)c;
    size_t n = (size_t)zg_repr_count(&c->decoded);
    zgpu_dtype dt = d->dtype.id, at = d->astype.id;
    uint32_t asz = nc_size(at);
    uint64_t tmp[NC_BLOCK]; /* one block of differences in the decoded type (<= 8 bytes each) */
    for (size_t i0 = 0; i0 < n; i0 += NC_BLOCK) {
        size_t m = n - i0 < NC_BLOCK ? n - i0 : NC_BLOCK;
        uint8_t *t = (uint8_t *)tmp;
        if (nc_is_int(dt)) diff_int(dt, in, i0, m, t);
        else diff_float(dt, in, i0, m, t);
        nc_convert(dt, t, at, out + i0 * asz, m);
    }
    return ZGPU_OK;
}

/* In-place running sum in type t over n elements. */
static void cumsum(zgpu_dtype t, uint8_t *x, size_t n) {
    switch (t) {
    case ZGPU_FLOAT16: {
        uint16_t acc = 0;
        for (size_t i = 0; i < n; i++) {
            uint16_t v = nc_ld_u16(x, i);
            acc = i ? zg_float_to_half(zg_half_to_float(acc) + zg_half_to_float(v)) : v;
            nc_st_u16(x, i, acc);
        }
        break;
    }
    case ZGPU_FLOAT32: { float acc = 0; for (size_t i = 0; i < n; i++) { float v = nc_ld_f32(x, i); acc = i ? acc + v : v; nc_st_f32(x, i, acc); } break; }
    case ZGPU_FLOAT64: { double acc = 0; for (size_t i = 0; i < n; i++) { double v = nc_ld_f64(x, i); acc = i ? acc + v : v; nc_st_f64(x, i, acc); } break; }
    default:
        switch (nc_size(t)) {
        case 1: { uint8_t acc = 0; for (size_t i = 0; i < n; i++) { acc = (uint8_t)(acc + nc_ld_u8(x, i)); nc_st_u8(x, i, acc); } break; }
        case 2: { uint16_t acc = 0; for (size_t i = 0; i < n; i++) { acc = (uint16_t)(acc + nc_ld_u16(x, i)); nc_st_u16(x, i, acc); } break; }
        case 4: { uint32_t acc = 0; for (size_t i = 0; i < n; i++) { acc += nc_ld_u32(x, i); nc_st_u32(x, i, acc); } break; }
        default: { uint64_t acc = 0; for (size_t i = 0; i < n; i++) { acc += nc_ld_u64(x, i); nc_st_u64(x, i, acc); } break; }
        }
    }
}

/* Running sum in float type ft over doubles (holding ft values), rounding each step to ft. */
static void cumsum_float(zgpu_dtype ft, double *w, size_t m, double *acc, int first) {
    size_t i = 0;
    if (first && m) { *acc = w[0]; i = 1; }
    switch (ft) {
    case ZGPU_FLOAT16:
        for (; i < m; i++) w[i] = *acc = zg_half_to_float(zg_float_to_half((float)*acc + (float)w[i]));
        break;
    case ZGPU_FLOAT32:
        for (; i < m; i++) w[i] = *acc = (double)((float)*acc + (float)w[i]);
        break;
    default:
        for (; i < m; i++) w[i] = *acc = *acc + w[i];
        break;
    }
}

static zgpu_status delta_decode(const zg_codec *c, const uint8_t *in, uint8_t *out) {
    const delta_codec *d = (const delta_codec *)c;
    size_t n = (size_t)zg_repr_count(&c->decoded);
    zgpu_dtype at = d->astype.id, dt = d->dtype.id, acc_t = nc_promote(at, dt);
    if (nc_is_int(acc_t)) {
        /* integer sums: casting to dtype first and wrapping in dtype gives the same bits */
        nc_convert(at, in, dt, out, n);
        cumsum(dt, out, n);
        return ZGPU_OK;
    }
    uint32_t asz = nc_size(at), dsz = nc_size(dt);
    double w[NC_BLOCK], acc = 0;
    for (size_t i0 = 0; i0 < n; i0 += NC_BLOCK) {
        size_t m = n - i0 < NC_BLOCK ? n - i0 : NC_BLOCK;
        if (nc_is_int(at)) {
            /* int -> acc_t: one rounding, done by storing into acc_t and loading back */
            uint64_t wi[NC_BLOCK];
            uint8_t tmp[NC_BLOCK * 8];
            nc_load_int(at, in + i0 * asz, wi, m);
            nc_store_from_int(acc_t, wi, nc_is_signed(at), tmp, m);
            nc_load_float(acc_t, tmp, w, m);
        } else {
            nc_load_float(at, in + i0 * asz, w, m);
        }
        cumsum_float(acc_t, w, m, &acc, i0 == 0);
        nc_store_from_double(dt, w, out + i0 * dsz, m);
    }
    return ZGPU_OK;
}

/* GPU: the delta kernel, for integers decoded to their own type (a wrapping prefix sum). */
static void delta_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    const zgpu_dtype id = c->decoded.dtype.id;
    if (id != c->encoded.dtype.id || id < ZGPU_INT8 || id > ZGPU_UINT64) return; /* ZG_GPU_STAGE_NONE */
    out->kind = ZG_GPU_STAGE_POST;
    out->post = ZG_GPU_POST_DELTA;
    out->param = (int)c->decoded.dtype.size;
}

const zg_codec_vtable zg_codec_delta = {
    .name = "numcodecs.delta",
    .kind = ZG_ARRAY_TO_ARRAY,
    .create = delta_create,
    .destroy = delta_destroy,
    .to_json = delta_to_json,
    .to_json_v2 = delta_to_json_v2,
    .decode_array = delta_decode,
    .encode_array = delta_encode,
    .gpu_stage = delta_gpu_stage,
};
