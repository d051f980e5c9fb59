/* bytes codec (Zarr v3 "bytes"): array -> bytes in little- or big-endian element order.
 * Configuration {"endian": "little"|"big"}; required for multi-byte types, optional for 1-byte and raw rN ones. */
#include "codec/bytes.h"
#include <stdlib.h>
#include <string.h>
#include "common/status.h"

typedef struct bytes_codec {
    zg_codec base;
    int has_endian;   /* "endian" was given (zarr-python omits the configuration for 1-byte types) */
    int big;          /* stored big-endian */
    uint32_t unit;    /* swap unit in bytes (1: never swap) */
    int swap;         /* stored order differs from the host's and unit > 1 */
} bytes_codec;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG 1
#else
#define HOST_BIG 0
#endif

void zg_byteswap(void *dst, const void *src, size_t n, uint32_t unit) {
    uint8_t *d = dst;
    const uint8_t *s = src;
    switch (unit) {
    case 2:
        for (size_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, s + 2 * i, 2);
            v = __builtin_bswap16(v);
            memcpy(d + 2 * i, &v, 2);
        }
        break;
    case 4:
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, s + 4 * i, 4);
            v = __builtin_bswap32(v);
            memcpy(d + 4 * i, &v, 4);
        }
        break;
    case 8:
        for (size_t i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, s + 8 * i, 8);
            v = __builtin_bswap64(v);
            memcpy(d + 8 * i, &v, 8);
        }
        break;
    default:
        if (d != s) memmove(d, s, n * (size_t)unit);
        break;
    }
}

static zgpu_status bytes_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    const char *endian = NULL;
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "bytes: configuration must be an object");
    static const char *const keys[] = {"endian", NULL};
    ZG_FORWARD(zg_config_only(config, "bytes", NULL, keys));
    /* null: no byte order given, as zarr-python reads it (then required for multi-byte types, below) */
    ZG_FORWARD(zg_config_str_or_null(config, "bytes", "endian", NULL, &endian));
    int big = HOST_BIG;
    if (endian) {
        if (strcmp(endian, "little") == 0) big = 0;
        else if (strcmp(endian, "big") == 0) big = 1;
        else return zg_error(ZGPU_ERR_BAD_METADATA, "bytes: endian must be \"little\" or \"big\", found \"%s\"", endian);
    }
    ZG_RETURN_IF(zg_dtype_is_vlen(&decoded->dtype), ZGPU_ERR_BAD_METADATA,
                 "bytes: the variable-length data type %s needs the %s codec", decoded->dtype.name,
                 decoded->dtype.kind == ZG_KIND_STRING ? "vlen-utf8" : "vlen-bytes");
    uint32_t unit = zg_dtype_swap_unit(&decoded->dtype);
    /* raw rN elements are opaque bytes: byte order does not apply to them */
    ZG_RETURN_IF(!endian && zg_dtype_swap_unit(&decoded->dtype) > 1, ZGPU_ERR_BAD_METADATA,
                 "bytes: configuration \"endian\" is required for the %u-byte data type %s", decoded->dtype.size,
                 decoded->dtype.name);
    ZG_RETURN_IF(unit != 1 && unit != 2 && unit != 4 && unit != 8, ZGPU_ERR_INTERNAL,
                 "bytes: unexpected swap unit %u for %s", unit, decoded->dtype.name);
    bytes_codec *b = calloc(1, sizeof *b);
    ZG_RETURN_IF(!b, ZGPU_ERR_NO_MEMORY, "bytes: out of memory");
    b->base.vt = &zg_codec_bytes;
    b->base.decoded = *decoded;
    b->base.encoded = *decoded;
    b->has_endian = endian != NULL;
    b->big = big;
    b->unit = unit;
    b->swap = unit > 1 && big != HOST_BIG;
    *out = &b->base;
    return ZGPU_OK;
}

static void bytes_destroy(zg_codec *c) { free(c); }

static zj_value *bytes_to_json(const zg_codec *c) {
    const bytes_codec *b = (const bytes_codec *)c;
    if (!b->has_endian) return zg_codec_json("bytes", NULL);
    zj_value *conf = zj_new_object();
    if (!conf) return NULL;
    if (zj_set(conf, "endian", zj_new_string(b->big ? "big" : "little")) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    return zg_codec_json("bytes", conf);
}

int zg_bytes_is_native(const zg_codec *c) {
    return c && c->vt == &zg_codec_bytes && !((const bytes_codec *)c)->swap;
}

int zg_bytes_decode_range(const zg_codec *c, const uint8_t *in, uint8_t *out, size_t lo, size_t hi) {
    const bytes_codec *b = (const bytes_codec *)c;
    if (lo % b->unit || hi % b->unit || hi < lo) return 0;
    if (b->swap) zg_byteswap(out + lo, in + lo, (hi - lo) / b->unit, b->unit);
    else memcpy(out + lo, in + lo, hi - lo);
    return 1;
}

static zgpu_status bytes_decode(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out) {
    const bytes_codec *b = (const bytes_codec *)c;
    uint64_t want = zg_repr_nbytes(&c->decoded);
    ZG_RETURN_IF(n != want, ZGPU_ERR_CORRUPT_DATA, "bytes: chunk has %zu bytes, expected %llu", n,
                 (unsigned long long)want);
    if (b->swap) zg_byteswap(out, in, n / b->unit, b->unit);
    else if (n && out != in) memmove(out, in, n);
    return ZGPU_OK;
}

static zgpu_status bytes_encode(const zg_codec *c, const uint8_t *in, zg_buf *out) {
    const bytes_codec *b = (const bytes_codec *)c;
    uint64_t n = zg_repr_nbytes(&c->decoded);
    ZG_RETURN_IF(n > SIZE_MAX - out->size, ZGPU_ERR_NO_MEMORY, "bytes: chunk of %llu bytes is too large",
                 (unsigned long long)n);
    ZG_FORWARD(zg_buf_reserve(out, out->size + (size_t)n));
    uint8_t *dst = out->data + out->size;
    if (b->swap) zg_byteswap(dst, in, (size_t)n / b->unit, b->unit);
    else if (n) memcpy(dst, in, (size_t)n);
    out->size += (size_t)n;
    return ZGPU_OK;
}

/* Stores exactly the chunk's bytes. */
static size_t bytes_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c, (void)exact;
    return decoded;
}

/* GPU: nothing for bytes stored little-endian (the GPU path runs on little-endian hosts); a byte swap kernel for
 * big-endian ones. */
static void bytes_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    const bytes_codec *b = (const bytes_codec *)c;
    out->kind = ZG_GPU_STAGE_IDENTITY;
    if (b->unit <= 1 || !b->has_endian || !b->big) return;
    if (b->unit != 2 && b->unit != 4 && b->unit != 8 && b->unit != 16) {
        out->kind = ZG_GPU_STAGE_NONE;
        out->why = "bytes: byte swap unit";
        return;
    }
    out->kind = ZG_GPU_STAGE_POST;
    out->post = ZG_GPU_POST_BYTESWAP;
    out->param = (int)b->unit;
}

const zg_codec_vtable zg_codec_bytes = {
    .name = "bytes",
    .kind = ZG_ARRAY_TO_BYTES,
    .create = bytes_create,
    .destroy = bytes_destroy,
    .to_json = bytes_to_json,
    .to_json_v2 = NULL,
    .decode_to_array = bytes_decode,
    .encode_from_array = bytes_encode,
    .encoded_size = bytes_encoded_size,
    .gpu_stage = bytes_gpu_stage,
};
