/* numcodecs.lz4 codec (v2 id "lz4"): numcodecs' framing, a 4-byte little-endian decoded size followed by
 * one raw LZ4 block. The size is checked against what the caller expects and against LZ4's ~255:1
 * maximum ratio before anything is allocated; the block then decodes straight into the destination. */
#include <limits.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "common/endian.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_lz4;

typedef struct lz4_codec {
    zg_codec base;
    int acceleration;
} lz4_codec;

static zgpu_status lz4_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA,
                 "numcodecs.lz4: configuration must be an object");
    static const char *const keys[] = {"acceleration", NULL};
    ZG_FORWARD(zg_config_only(config, "numcodecs.lz4", "lz4", keys));
    int64_t accel;
    /* LZ4 treats values below 1 as 1; numcodecs passes any int through, so accept the int range. */
    ZG_FORWARD(zg_config_int(config, "numcodecs.lz4", "acceleration", 1, INT_MIN, INT_MAX, &accel));
    lz4_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "numcodecs.lz4: out of memory");
    c->base.vt = &zg_codec_lz4;
    if (decoded) c->base.decoded = c->base.encoded = *decoded;
    c->acceleration = (int)accel;
    *out = &c->base;
    return ZGPU_OK;
}

static void lz4_destroy(zg_codec *c) { free(c); }

static zj_value *lz4_conf(const lz4_codec *c, int with_id) {
    zj_value *o = zj_new_object();
    if (!o) return NULL;
    if ((with_id && zj_set(o, "id", zj_new_string("lz4")) != ZGPU_OK) ||
        zj_set(o, "acceleration", zj_new_int(c->acceleration)) != ZGPU_OK) {
        zj_free(o);
        return NULL;
    }
    return o;
}

static zj_value *lz4_to_json(const zg_codec *c) {
    zj_value *conf = lz4_conf((const lz4_codec *)c, 0);
    return conf ? zg_codec_json("numcodecs.lz4", conf) : NULL;
}

static zj_value *lz4_to_json_v2(const zg_codec *c) { return lz4_conf((const lz4_codec *)c, 1); }

static zgpu_status lz4_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    ZG_RETURN_IF(n < 5, ZGPU_ERR_CORRUPT_DATA,
                 "lz4: input of %zu bytes is shorter than the 4-byte size header plus a block", n);
    size_t size = zg_le32(in);
    size_t block = n - 4;
    ZG_RETURN_IF(want.exact != SIZE_MAX && size != want.exact, ZGPU_ERR_CORRUPT_DATA,
                 "lz4: header size %zu does not match the expected %zu bytes", size, want.exact);
    ZG_RETURN_IF(size > want.limit, ZGPU_ERR_CORRUPT_DATA,
                 "lz4: data decodes to more than the %zu bytes this chunk can hold (header size %zu)", want.limit,
                 size);
    ZG_RETURN_IF(size > (size_t)INT_MAX || block > (size_t)INT_MAX, ZGPU_ERR_CORRUPT_DATA,
                 "lz4: sizes beyond LZ4's 2 GiB limit (header %zu, block %zu bytes)", size, block);
    /* Each input byte yields at most 255 output bytes (long match-length runs), plus a small constant. */
    ZG_RETURN_IF(size > block * 255 + 64, ZGPU_ERR_CORRUPT_DATA,
                 "lz4: header size %zu is impossible for a %zu-byte block", size, block);
    ZG_RETURN_IF(out->fixed && size > out->cap, ZGPU_ERR_CORRUPT_DATA,
                 "lz4: header size %zu is larger than the %zu-byte output buffer", size, out->cap);
    out->size = 0;
    if (size) ZG_FORWARD(zg_buf_reserve(out, size));
    char dummy;
    int r = LZ4_decompress_safe((const char *)in + 4, size ? (char *)out->data : &dummy, (int)block, (int)size);
    ZG_RETURN_IF(r < 0, ZGPU_ERR_CORRUPT_DATA, "lz4: corrupt or truncated block (%zu bytes)", block);
    ZG_RETURN_IF((size_t)r != size, ZGPU_ERR_CORRUPT_DATA, "lz4: block decodes to %d bytes, header says %zu", r, size);
    out->size = size;
    return ZGPU_OK;
}

/* numcodecs' 4-byte size header and LZ4's own bound of one block. */
static size_t lz4_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    if (decoded > LZ4_MAX_INPUT_SIZE) return SIZE_MAX; /* numcodecs cannot write it: no bound */
    return 4 + (size_t)LZ4_compressBound((int)decoded);
}

static zgpu_status lz4_encode(const zg_codec *cc, const uint8_t *in, size_t n, zg_buf *out) {
    const lz4_codec *c = (const lz4_codec *)cc;
    ZG_RETURN_IF(n > LZ4_MAX_INPUT_SIZE, ZGPU_ERR_UNSUPPORTED, "lz4: input of %zu bytes exceeds LZ4's limit of %d",
                 n, LZ4_MAX_INPUT_SIZE);
    int bound = LZ4_compressBound((int)n);
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, 4 + (size_t)bound));
    out->data[0] = (uint8_t)n;
    out->data[1] = (uint8_t)(n >> 8);
    out->data[2] = (uint8_t)(n >> 16);
    out->data[3] = (uint8_t)(n >> 24);
    static const char empty = 0;
    int m = LZ4_compress_fast(n ? (const char *)in : &empty, (char *)out->data + 4, (int)n, bound,
                              c->acceleration < 1 ? 1 : c->acceleration);
    ZG_RETURN_IF(m <= 0, ZGPU_ERR_INTERNAL, "lz4: compression of %zu bytes failed", n);
    out->size = 4 + (size_t)m;
    return ZGPU_OK;
}

/* GPU: numcodecs' LZ4 framing (a size, then one block), for a GPU LZ4 decoder. */
static void lz4_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    out->kind = ZG_GPU_STAGE_COMPRESSOR;
    out->format = ZG_GPU_FORMAT_LZ4_NUMCODECS;
    out->level = ((const lz4_codec *)c)->acceleration; /* (nvCOMP's LZ4 has no level: unused) */
}

const zg_codec_vtable zg_codec_lz4 = {
    .name = "numcodecs.lz4",
    .kind = ZG_BYTES_TO_BYTES,
    .create = lz4_create,
    .destroy = lz4_destroy,
    .to_json = lz4_to_json,
    .to_json_v2 = lz4_to_json_v2,
    .decode_bytes = lz4_decode,
    .encode_bytes = lz4_encode,
    .encoded_size = lz4_encoded_size,
    .gpu_stage = lz4_gpu_stage,
};
