/* tiff_predictor codec: TIFF's Predictor tag (317), array -> array over the rows of a tile or strip.
 * Configuration:
 *   "predictor"          2 (horizontal differencing, TIFF 6.0 section 14) or 3 (floating point, Adobe's
 *                        TIFF Technical Note 3)
 *   "row_samples"        samples in one row: tile (or image) width times samples per pixel for
 *                        PlanarConfiguration 1, the width for 2; the chunk holds a whole number of rows
 *   "samples_per_pixel"  the distance between a sample and the one it is predicted from: samples per pixel
 *                        for PlanarConfiguration 1, else 1
 * Predictor 2 sums each row's samples, as unsigned integers of the element's width that wrap (libtiff does so for
 * every sample width, floats' bit patterns included), on native-order values: the chain's bytes codec has
 * already put them in the host's order. Predictor 3 (16-, 32- and 64-bit floats) stores each row as byte planes,
 * most significant byte first whatever the file's byte order, byte-differenced with that same stride: decoding
 * sums the row's bytes, then gathers each value's bytes into host order, so its chain's bytes codec is the
 * host's order (a copy). */
#include <stdlib.h>
#include <string.h>
#include "codec/codec.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_tiff_predictor;

typedef struct predictor_codec {
    zg_codec base;
    int predictor;
    uint64_t row_samples;
    uint64_t stride;
    uint32_t size; /* bytes per sample */
} predictor_codec;

static zgpu_status pred_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(!config || config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA,
                 "tiff_predictor: configuration must be an object");
    static const char *const keys[] = {"predictor", "row_samples", "samples_per_pixel", NULL};
    ZG_FORWARD(zg_config_only(config, "tiff_predictor", NULL, keys));
    int64_t pred, row, spp;
    ZG_FORWARD(zg_config_int(config, "tiff_predictor", "predictor", 2, 1, 65535, &pred));
    ZG_FORWARD(zg_config_int(config, "tiff_predictor", "row_samples", 0, 1, INT64_MAX, &row));
    ZG_FORWARD(zg_config_int(config, "tiff_predictor", "samples_per_pixel", 1, 1, 65535, &spp));
    ZG_RETURN_IF(pred != 2 && pred != 3, ZGPU_ERR_UNSUPPORTED,
                 "tiff_predictor: predictor %lld is not one of TIFF's (2: horizontal, 3: floating point)",
                 (long long)pred);
    const uint32_t size = decoded->dtype.size;
    ZG_RETURN_IF(size != 1 && size != 2 && size != 4 && size != 8, ZGPU_ERR_UNSUPPORTED,
                 "tiff_predictor: samples of %u bytes (%s) are not 8, 16, 32 or 64 bits", size, decoded->dtype.name);
    ZG_RETURN_IF(pred == 3 && (size == 1 || (decoded->dtype.id != ZGPU_FLOAT16 && decoded->dtype.id != ZGPU_FLOAT32 &&
                                             decoded->dtype.id != ZGPU_FLOAT64)),
                 ZGPU_ERR_UNSUPPORTED, "tiff_predictor: predictor 3 is for 16-, 32- and 64-bit floats, not %s",
                 decoded->dtype.name);
    ZG_RETURN_IF((uint64_t)spp > (uint64_t)row || (uint64_t)row % (uint64_t)spp, ZGPU_ERR_BAD_METADATA,
                 "tiff_predictor: a row of %lld samples is no whole number of pixels of %lld samples", (long long)row,
                 (long long)spp);
    const uint64_t count = zg_repr_count(decoded);
    ZG_RETURN_IF(count % (uint64_t)row, ZGPU_ERR_BAD_METADATA,
                 "tiff_predictor: a chunk of %llu samples is no whole number of rows of %lld samples",
                 (unsigned long long)count, (long long)row);
    ZG_RETURN_IF((uint64_t)row > SIZE_MAX / 8, ZGPU_ERR_BAD_METADATA, "tiff_predictor: rows of %lld samples are too long",
                 (long long)row);
    predictor_codec *p = calloc(1, sizeof *p);
    ZG_RETURN_IF(!p, ZGPU_ERR_NO_MEMORY, "tiff_predictor: out of memory");
    p->base.vt = &zg_codec_tiff_predictor;
    p->base.decoded = p->base.encoded = *decoded;
    p->predictor = (int)pred;
    p->row_samples = (uint64_t)row;
    p->stride = (uint64_t)spp;
    p->size = size;
    *out = &p->base;
    return ZGPU_OK;
}

static void pred_destroy(zg_codec *c) { free(c); }

static zj_value *pred_to_json(const zg_codec *c) {
    const predictor_codec *p = (const predictor_codec *)c;
    zj_value *conf = zj_new_object();
    if (!conf) return NULL;
    if (zj_set(conf, "predictor", zj_new_int(p->predictor)) != ZGPU_OK ||
        zj_set(conf, "row_samples", zj_new_int((int64_t)p->row_samples)) != ZGPU_OK ||
        zj_set(conf, "samples_per_pixel", zj_new_int((int64_t)p->stride)) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    return zg_codec_json("tiff_predictor", conf);
}

/* Predictor 2 over one row of m samples, in place: x[i] += x[i - s] (decode) or the differences (encode, from the
 * end). Unsigned arithmetic wraps as libtiff's does. */
#define HORIZONTAL(NAME, T)                                                                  \
    static void NAME##_acc(uint8_t *row, size_t m, size_t s) {                               \
        for (size_t i = s; i < m; i++) {                                                     \
            T a, b;                                                                          \
            memcpy(&a, row + (i - s) * sizeof(T), sizeof(T));                                \
            memcpy(&b, row + i * sizeof(T), sizeof(T));                                      \
            b = (T)(a + b);                                                                  \
            memcpy(row + i * sizeof(T), &b, sizeof(T));                                      \
        }                                                                                    \
    }                                                                                        \
    static void NAME##_diff(uint8_t *row, size_t m, size_t s) {                              \
        for (size_t i = m; i-- > s;) {                                                       \
            T a, b;                                                                          \
            memcpy(&a, row + (i - s) * sizeof(T), sizeof(T));                                \
            memcpy(&b, row + i * sizeof(T), sizeof(T));                                      \
            b = (T)(b - a);                                                                  \
            memcpy(row + i * sizeof(T), &b, sizeof(T));                                      \
        }                                                                                    \
    }
HORIZONTAL(h8, uint8_t)
HORIZONTAL(h16, uint16_t)
HORIZONTAL(h32, uint32_t)
HORIZONTAL(h64, uint64_t)

static void horizontal(const predictor_codec *p, uint8_t *data, int decode) {
    const size_t m = (size_t)p->row_samples, s = (size_t)p->stride, row_bytes = m * p->size;
    const size_t rows = (size_t)(zg_repr_count(&p->base.decoded) / p->row_samples);
    for (size_t r = 0; r < rows; r++) {
        uint8_t *row = data + r * row_bytes;
        switch (p->size) {
        case 1: decode ? h8_acc(row, m, s) : h8_diff(row, m, s); break;
        case 2: decode ? h16_acc(row, m, s) : h16_diff(row, m, s); break;
        case 4: decode ? h32_acc(row, m, s) : h32_diff(row, m, s); break;
        default: decode ? h64_acc(row, m, s) : h64_diff(row, m, s); break;
        }
    }
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define PLANE_OF(byte, size) (byte)              /* byte k of a value in memory is its k-th most significant */
#else
#define PLANE_OF(byte, size) ((size) - 1 - (byte))
#endif

/* Bytes added lane by lane, without carries between them (mod 256 each). */
static inline uint64_t add_bytes(uint64_t a, uint64_t b) {
    const uint64_t high = 0x8080808080808080ull;
    return ((a & ~high) + (b & ~high)) ^ ((a ^ b) & high);
}

/* Predictor 3's byte differences undone over one row, x[i] += x[i - s]. With s = 1 (one sample a pixel, or planar
 * 2) the sum is one serial chain, so on little-endian hosts it runs eight bytes at a time: a prefix sum inside each
 * word in three steps, then the previous word's last byte added to every lane. */
static void byte_prefix_sum(uint8_t *x, size_t n, size_t s) {
    size_t i = s;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (s == 1) {
        uint64_t carry = x[0];
        for (i = 1; i + 8 <= n; i += 8) {
            uint64_t w;
            memcpy(&w, x + i, 8);
            w = add_bytes(w, w << 8);
            w = add_bytes(w, w << 16);
            w = add_bytes(w, w << 32);
            w = add_bytes(w, carry * 0x0101010101010101ull);
            memcpy(x + i, &w, 8);
            carry = w >> 56;
        }
    }
#endif
    for (; i < n; i++) x[i] = (uint8_t)(x[i] + x[i - s]);
}

/* The byte planes of one row (most significant first) back into m values of `size` bytes in host order. */
#define GATHER(NAME, T, SIZE)                                                         \
    static void NAME(const uint8_t *planes, size_t m, uint8_t *dst) {                \
        for (size_t i = 0; i < m; i++) {                                             \
            T v = 0;                                                                 \
            for (size_t b = 0; b < (SIZE); b++) v = (T)(v << 8 | planes[b * m + i]); \
            memcpy(dst + i * (SIZE), &v, (SIZE));                                    \
        }                                                                            \
    }
GATHER(gather2, uint16_t, 2)
GATHER(gather4, uint32_t, 4)
GATHER(gather8, uint64_t, 8)

static zgpu_status pred_decode(const zg_codec *c, const uint8_t *in, uint8_t *out) {
    const predictor_codec *p = (const predictor_codec *)c;
    const size_t total = (size_t)zg_repr_nbytes(&c->decoded);
    if (p->predictor == 2) {
        memcpy(out, in, total);
        horizontal(p, out, 1);
        return ZGPU_OK;
    }
    const size_t m = (size_t)p->row_samples, s = (size_t)p->stride, bs = p->size, row_bytes = m * bs;
    uint8_t stack_row[16384];
    uint8_t *tmp = row_bytes <= sizeof stack_row ? stack_row : malloc(row_bytes);
    ZG_RETURN_IF(!tmp, ZGPU_ERR_NO_MEMORY, "tiff_predictor: out of memory for a row of %zu bytes", row_bytes);
    for (size_t off = 0; off < total; off += row_bytes) {
        memcpy(tmp, in + off, row_bytes);
        byte_prefix_sum(tmp, row_bytes, s);
        uint8_t *dst = out + off;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (bs == 2) gather2(tmp, m, dst);
        else if (bs == 4) gather4(tmp, m, dst);
        else if (bs == 8) gather8(tmp, m, dst);
        else
#endif
            for (size_t i = 0; i < m; i++)
                for (size_t b = 0; b < bs; b++) dst[i * bs + b] = tmp[PLANE_OF(b, bs) * m + i];
    }
    if (tmp != stack_row) free(tmp);
    return ZGPU_OK;
}

static zgpu_status pred_encode(const zg_codec *c, const uint8_t *in, uint8_t *out) {
    const predictor_codec *p = (const predictor_codec *)c;
    const size_t total = (size_t)zg_repr_nbytes(&c->decoded);
    if (p->predictor == 2) {
        memcpy(out, in, total);
        horizontal(p, out, 0);
        return ZGPU_OK;
    }
    const size_t m = (size_t)p->row_samples, s = (size_t)p->stride, bs = p->size, row_bytes = m * bs;
    for (size_t off = 0; off < total; off += row_bytes) {
        uint8_t *dst = out + off;
        const uint8_t *src = in + off;
        for (size_t i = 0; i < m; i++)
            for (size_t b = 0; b < bs; b++) dst[PLANE_OF(b, bs) * m + i] = src[i * bs + b];
        for (size_t i = row_bytes; i-- > s;) dst[i] = (uint8_t)(dst[i] - dst[i - s]);
    }
    return ZGPU_OK;
}

/* On the GPU: a post stage of src/gpucodec/post/ (a warp a row), predictor 2's in place, 3's out of place. */
static void pred_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    const predictor_codec *p = (const predictor_codec *)c;
    if (p->row_samples > INT32_MAX || p->stride > INT32_MAX) {
        out->kind = ZG_GPU_STAGE_NONE;
        out->why = "tiff_predictor: rows too long for the GPU's predictor stage";
        return;
    }
    out->kind = ZG_GPU_STAGE_POST;
    out->post = p->predictor == 2 ? ZG_GPU_POST_ROW_DELTA : ZG_GPU_POST_ROW_FLOAT;
    out->param = (int)p->size;
    out->row = (int)p->row_samples;
    out->stride = (int)p->stride;
}

const zg_codec_vtable zg_codec_tiff_predictor = {
    .name = "tiff_predictor",
    .kind = ZG_ARRAY_TO_ARRAY,
    .create = pred_create,
    .destroy = pred_destroy,
    .to_json = pred_to_json,
    .decode_array = pred_decode,
    .encode_array = pred_encode,
    .gpu_stage = pred_gpu_stage,
};
