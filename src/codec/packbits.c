/* packbits codec: TIFF's PackBits run-length scheme (Compression = 32773, TIFF 6.0 section 9), bytes -> bytes,
 * no configuration. A header byte n in [0, 127] copies the next n + 1 bytes; n in [-127, -1] repeats the next byte
 * 1 - n times; -128 is skipped. Decoding stops at the end of the input or once the chunk is full (libtiff reads no
 * further either); a run or copy that would pass the chunk, or that the input ends inside, is an error. */
#include <stdlib.h>
#include <string.h>
#include "codec/codec.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_packbits;

static zgpu_status pb_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "packbits: configuration must be an object");
    static const char *const keys[] = {NULL};
    ZG_FORWARD(zg_config_only(config, "packbits", NULL, keys));
    zg_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "packbits: out of memory");
    c->vt = &zg_codec_packbits;
    if (decoded) c->decoded = c->encoded = *decoded;
    *out = c;
    return ZGPU_OK;
}

static void pb_destroy(zg_codec *c) { free(c); }

static zj_value *pb_to_json(const zg_codec *c) {
    (void)c;
    return zg_codec_json("packbits", NULL);
}

static zgpu_status pb_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    (void)c;
    const size_t limit = zg_out_limit(want, out);
    /* Each header byte makes at most 128 bytes: the output is bounded by the input before any allocation. */
    size_t most = n > SIZE_MAX / 128 ? SIZE_MAX : n * 128;
    size_t cap = most < limit ? most : limit;
    out->size = 0;
    if (!out->fixed) ZG_FORWARD(zg_buf_reserve(out, cap ? cap : 1));
    size_t have = 0, i = 0;
    while (i < n && have < limit) {
        int8_t h = (int8_t)in[i++];
        if (h == -128) continue;
        if (h >= 0) {
            size_t len = (size_t)h + 1;
            ZG_RETURN_IF(len > n - i, ZGPU_ERR_CORRUPT_DATA,
                         "packbits: a copy of %zu bytes at input byte %zu runs past the end of the %zu-byte input", len,
                         i - 1, n);
            ZG_RETURN_IF(len > limit - have, ZGPU_ERR_CORRUPT_DATA,
                         "packbits: data decodes to more than the %zu bytes this chunk can hold", limit);
            memcpy(out->data + have, in + i, len);
            i += len;
            have += len;
        } else {
            size_t len = (size_t)(1 - h);
            ZG_RETURN_IF(i >= n, ZGPU_ERR_CORRUPT_DATA, "packbits: a run at input byte %zu has no byte to repeat", i - 1);
            ZG_RETURN_IF(len > limit - have, ZGPU_ERR_CORRUPT_DATA,
                         "packbits: data decodes to more than the %zu bytes this chunk can hold", limit);
            memset(out->data + have, in[i++], len);
            have += len;
        }
    }
    out->size = have;
    ZG_RETURN_IF(want.exact != SIZE_MAX && have != want.exact, ZGPU_ERR_CORRUPT_DATA,
                 "packbits: data decodes to %zu bytes, expected %zu", have, want.exact);
    return ZGPU_OK;
}

/* Runs of 3 or more equal bytes become runs (of at most 128), the rest literal copies of at most 128 bytes. */
static zgpu_status pb_encode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out) {
    (void)c;
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, n + n / 128 + 1));
    uint8_t *o = out->data;
    size_t i = 0, k = 0;
    while (i < n) {
        size_t run = 1;
        while (i + run < n && run < 128 && in[i + run] == in[i]) run++;
        if (run >= 3) {
            o[k++] = (uint8_t)(int8_t)(1 - (int)run);
            o[k++] = in[i];
            i += run;
            continue;
        }
        size_t start = i, len = 0;
        while (i < n && len < 128) {
            if (i + 2 < n && in[i] == in[i + 1] && in[i] == in[i + 2]) break;
            i++;
            len++;
        }
        o[k++] = (uint8_t)(len - 1);
        memcpy(o + k, in + start, len);
        k += len;
    }
    out->size = k;
    return ZGPU_OK;
}

static size_t pb_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    return zg_size_add(decoded, decoded / 128 + 1);
}

/* On the GPU: zgpu's PackBits decoder (src/gpucodec/packbits/). */
static void pb_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    (void)c;
    out->kind = ZG_GPU_STAGE_COMPRESSOR;
    out->format = ZG_GPU_FORMAT_PACKBITS;
}

const zg_codec_vtable zg_codec_packbits = {
    .name = "packbits",
    .kind = ZG_BYTES_TO_BYTES,
    .create = pb_create,
    .destroy = pb_destroy,
    .to_json = pb_to_json,
    .decode_bytes = pb_decode,
    .encode_bytes = pb_encode,
    .encoded_size = pb_encoded_size,
    .gpu_stage = pb_gpu_stage,
};
