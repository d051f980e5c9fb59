/* tiff_short_strip codec: bytes -> bytes, next to the array -> bytes codec of a stripped TIFF page whose last strip
 * holds fewer rows than RowsPerStrip (TIFF 6.0: "the last strip may be shorter"). Each strip is a chunk of
 * RowsPerStrip rows; the short one decodes to "short_bytes" bytes, which this stage pads with zeros to the chunk
 * (those rows lie below the image, so no read ever shows them). Any other size is an error: only a whole strip
 * or the short one is taken. Configuration {"short_bytes": N} (0 < N < the chunk's bytes). */
#include <stdlib.h>
#include <string.h>
#include "codec/codec.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_tiff_short_strip;

typedef struct short_strip_codec {
    zg_codec base;
    uint64_t short_bytes;
} short_strip_codec;

static zgpu_status ss_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(!config || config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA,
                 "tiff_short_strip: configuration must be an object");
    static const char *const keys[] = {"short_bytes", NULL};
    ZG_FORWARD(zg_config_only(config, "tiff_short_strip", NULL, keys));
    int64_t sb;
    ZG_FORWARD(zg_config_int(config, "tiff_short_strip", "short_bytes", 0, 1, INT64_MAX, &sb));
    ZG_RETURN_IF(decoded && (uint64_t)sb >= zg_repr_nbytes(decoded), ZGPU_ERR_BAD_METADATA,
                 "tiff_short_strip: short_bytes %lld is not less than the chunk's %llu bytes", (long long)sb,
                 (unsigned long long)zg_repr_nbytes(decoded));
    short_strip_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "tiff_short_strip: out of memory");
    c->base.vt = &zg_codec_tiff_short_strip;
    if (decoded) c->base.decoded = c->base.encoded = *decoded;
    c->short_bytes = (uint64_t)sb;
    *out = &c->base;
    return ZGPU_OK;
}

static void ss_destroy(zg_codec *c) { free(c); }

static zj_value *ss_to_json(const zg_codec *c) {
    zj_value *conf = zj_new_object();
    if (!conf) return NULL;
    if (zj_set(conf, "short_bytes", zj_new_uint(((const short_strip_codec *)c)->short_bytes)) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    return zg_codec_json("tiff_short_strip", conf);
}

static zgpu_status ss_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    const short_strip_codec *s = (const short_strip_codec *)c;
    const size_t full = want.exact != SIZE_MAX ? want.exact : (size_t)zg_repr_nbytes(&c->decoded);
    ZG_RETURN_IF(n != full && n != s->short_bytes, ZGPU_ERR_CORRUPT_DATA,
                 "tiff_short_strip: a strip of %zu bytes is neither whole (%zu bytes) nor the short last one (%llu)",
                 n, full, (unsigned long long)s->short_bytes);
    ZG_RETURN_IF(full > zg_out_limit(want, out), ZGPU_ERR_CORRUPT_DATA,
                 "tiff_short_strip: data decodes to more than the %zu bytes this chunk can hold", zg_out_limit(want, out));
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, full));
    if (out->data != in) memmove(out->data, in, n);
    memset(out->data + n, 0, full - n);
    out->size = full;
    return ZGPU_OK;
}

static zgpu_status ss_encode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out) {
    (void)c;
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, n));
    memcpy(out->data, in, n);
    out->size = n;
    return ZGPU_OK;
}

/* What reaches it is at most the chunk: only a bound, since the short strip is less. */
static size_t ss_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    return decoded;
}

const zg_codec_vtable zg_codec_tiff_short_strip = {
    .name = "tiff_short_strip",
    .kind = ZG_BYTES_TO_BYTES,
    .create = ss_create,
    .destroy = ss_destroy,
    .to_json = ss_to_json,
    .decode_bytes = ss_decode,
    .encode_bytes = ss_encode,
    .encoded_size = ss_encoded_size,
};
