/* shuffle codec (numcodecs Shuffle; v3 name "numcodecs.shuffle", v2 id "shuffle"): bytes -> bytes byte
 * transposition. Byte j of element i goes to j*count + i. As in numcodecs, elementsize <= 1 is a plain
 * copy, and a buffer whose size is not a multiple of elementsize is an error. */
#include <stdlib.h>
#include <string.h>
#include "codec/codec.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_shuffle;

typedef struct shuffle_codec {
    zg_codec base;
    int64_t elementsize;
} shuffle_codec;

static zgpu_status sh_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "shuffle: configuration must be an object");
    static const char *const keys[] = {"elementsize", NULL};
    ZG_FORWARD(zg_config_only(config, "shuffle", "shuffle", keys));
    int64_t es;
    /* absent or null: the item size, as zarr-python's numcodecs.shuffle fills it in */
    ZG_FORWARD(zg_config_int_or_null(config, "shuffle", "elementsize", decoded->dtype.size ? decoded->dtype.size : 1, 0,
                             1 << 20, &es));
    shuffle_codec *s = calloc(1, sizeof *s);
    ZG_RETURN_IF(!s, ZGPU_ERR_NO_MEMORY, "shuffle: out of memory");
    s->base.vt = &zg_codec_shuffle;
    s->base.decoded = *decoded;
    s->base.encoded = *decoded;
    s->elementsize = es;
    *out = &s->base;
    return ZGPU_OK;
}

static void sh_destroy(zg_codec *c) { free(c); }

static zj_value *sh_conf(const zg_codec *c, int v2) {
    zj_value *conf = zj_new_object();
    if (!conf) return NULL;
    if ((v2 && zj_set(conf, "id", zj_new_string("shuffle")) != ZGPU_OK) ||
        zj_set(conf, "elementsize", zj_new_int(((const shuffle_codec *)c)->elementsize)) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    return conf;
}
static zj_value *sh_to_json(const zg_codec *c) {
    zj_value *conf = sh_conf(c, 0);
    return conf ? zg_codec_json("numcodecs.shuffle", conf) : NULL;
}
static zj_value *sh_to_json_v2(const zg_codec *c) { return sh_conf(c, 1); }

/* Specialised loops for common sizes: the compiler unrolls the inner byte loop. */
#define DEFINE_SHUF(NAME, ES)                                                                   \
    static void NAME##_fwd(const uint8_t *in, uint8_t *out, size_t count) {                     \
        for (size_t i = 0; i < count; i++)                                                      \
            for (size_t j = 0; j < (ES); j++) out[j * count + i] = in[i * (ES) + j];            \
    }                                                                                           \
    static void NAME##_inv(const uint8_t *in, uint8_t *out, size_t count) {                     \
        for (size_t i = 0; i < count; i++)                                                      \
            for (size_t j = 0; j < (ES); j++) out[i * (ES) + j] = in[j * count + i];            \
    }
DEFINE_SHUF(s2, 2)
DEFINE_SHUF(s4, 4)
DEFINE_SHUF(s8, 8)

/* Generic size: walk one output stream at a time so writes stay sequential. */
static void shuf_any(const uint8_t *in, uint8_t *out, size_t count, size_t es, int inverse) {
    for (size_t j = 0; j < es; j++) {
        if (!inverse) {
            const uint8_t *src = in + j;
            uint8_t *dst = out + j * count;
            for (size_t i = 0; i < count; i++, src += es) dst[i] = *src;
        } else {
            const uint8_t *src = in + j * count;
            uint8_t *dst = out + j;
            for (size_t i = 0; i < count; i++, dst += es) *dst = src[i];
        }
    }
}

static zgpu_status sh_run(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, int inverse) {
    size_t es = (size_t)((const shuffle_codec *)c)->elementsize;
    ZG_FORWARD(zg_buf_reserve(out, n));
    out->size = 0;
    if (es <= 1) {
        if (n) memcpy(out->data, in, n);
    } else {
        ZG_RETURN_IF(n % es != 0, inverse ? ZGPU_ERR_CORRUPT_DATA : ZGPU_ERR_INVALID_ARGUMENT,
                     "shuffle: buffer of %zu bytes is not a multiple of elementsize %zu", n, es);
        size_t count = n / es;
        switch (es) {
        case 2: inverse ? s2_inv(in, out->data, count) : s2_fwd(in, out->data, count); break;
        case 4: inverse ? s4_inv(in, out->data, count) : s4_fwd(in, out->data, count); break;
        case 8: inverse ? s8_inv(in, out->data, count) : s8_fwd(in, out->data, count); break;
        default: shuf_any(in, out->data, count, es, inverse); break;
        }
    }
    out->size = n;
    return ZGPU_OK;
}

static zgpu_status sh_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    ZG_RETURN_IF(want.exact != SIZE_MAX && want.exact != n, ZGPU_ERR_CORRUPT_DATA,
                 "shuffle: %zu bytes, expected %zu", n, want.exact);
    ZG_RETURN_IF(n > want.limit, ZGPU_ERR_CORRUPT_DATA,
                 "shuffle: data decodes to more than the %zu bytes this chunk can hold", want.limit);
    return sh_run(c, in, n, out, 1);
}

/* Size-preserving. */
static size_t sh_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c, (void)exact;
    return decoded;
}

static zgpu_status sh_encode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out) {
    return sh_run(c, in, n, out, 0);
}

/* GPU: the byte unshuffle kernel, for element sizes it takes. */
static void sh_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    const int64_t es = ((const shuffle_codec *)c)->elementsize;
    if (es <= 0 || es >= 65536) return; /* ZG_GPU_STAGE_NONE */
    out->kind = ZG_GPU_STAGE_POST;
    out->post = ZG_GPU_POST_SHUFFLE;
    out->param = (int)es;
}

const zg_codec_vtable zg_codec_shuffle = {
    .name = "numcodecs.shuffle",
    .kind = ZG_BYTES_TO_BYTES,
    .create = sh_create,
    .destroy = sh_destroy,
    .to_json = sh_to_json,
    .to_json_v2 = sh_to_json_v2,
    .decode_bytes = sh_decode,
    .encode_bytes = sh_encode,
    .encoded_size = sh_encoded_size,
    .gpu_stage = sh_gpu_stage,
};
