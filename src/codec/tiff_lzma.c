/* tiff_lzma codec: TIFF's LZMA2 compression (Compression = 34925, as libtiff writes it: an .xz stream), bytes ->
 * bytes, no configuration, through liblzma. The decoder's memory is bounded (ZG_LZMA_MEMLIMIT) and its output
 * stops at the chunk's limit: a stream that decodes to more is an error before anything past it is allocated. */
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include "codec/codec.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_tiff_lzma;

#define ZG_LZMA_MEMLIMIT ((uint64_t)256 << 20) /* a dictionary of up to about 256 MiB, which xz -9 stays far below */

static zgpu_status lzma_create_codec(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "tiff_lzma: configuration must be an object");
    static const char *const keys[] = {NULL};
    ZG_FORWARD(zg_config_only(config, "tiff_lzma", NULL, keys));
    zg_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "tiff_lzma: out of memory");
    c->vt = &zg_codec_tiff_lzma;
    if (decoded) c->decoded = c->encoded = *decoded;
    *out = c;
    return ZGPU_OK;
}

static void lzma_destroy_codec(zg_codec *c) { free(c); }

static zj_value *lzma_to_json(const zg_codec *c) {
    (void)c;
    return zg_codec_json("tiff_lzma", NULL);
}

static const char *lzma_what(lzma_ret r) {
    switch (r) {
    case LZMA_FORMAT_ERROR: return "not an .xz stream";
    case LZMA_OPTIONS_ERROR: return "unsupported options";
    case LZMA_DATA_ERROR: return "corrupt data";
    case LZMA_BUF_ERROR: return "truncated stream";
    case LZMA_MEMLIMIT_ERROR: return "needs more than 256 MiB of decoder memory";
    case LZMA_MEM_ERROR: return "out of memory";
    default: return "decoder error";
    }
}

static zgpu_status lzma_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    (void)c;
    const size_t limit = zg_out_limit(want, out);
    lzma_stream s = LZMA_STREAM_INIT;
    lzma_ret r = lzma_stream_decoder(&s, ZG_LZMA_MEMLIMIT, 0);
    ZG_RETURN_IF(r != LZMA_OK, ZGPU_ERR_NO_MEMORY, "tiff_lzma: cannot start a decoder (%s)", lzma_what(r));
    out->size = 0;
    size_t room = out->fixed ? limit : (limit < 65536 ? limit : 65536);
    zgpu_status st = ZGPU_OK;
    if (!out->fixed && (st = zg_buf_reserve(out, room ? room : 1)) != ZGPU_OK) goto done;
    s.next_in = in;
    s.avail_in = n;
    for (;;) {
        s.next_out = out->data + s.total_out;
        s.avail_out = room - (size_t)s.total_out;
        r = lzma_code(&s, LZMA_FINISH);
        if (r == LZMA_STREAM_END) break;
        if (r != LZMA_OK) {
            st = zg_error(ZGPU_ERR_CORRUPT_DATA, "tiff_lzma: %s after %zu input bytes", lzma_what(r),
                          (size_t)s.total_in);
            goto done;
        }
        if (s.avail_out == 0) {
            if (room >= limit) {
                st = zg_error(ZGPU_ERR_CORRUPT_DATA, "tiff_lzma: data decodes to more than the %zu bytes this chunk can hold",
                              limit);
                goto done;
            }
            room = room > limit / 2 ? limit : room * 2;
            if ((st = zg_buf_reserve(out, room)) != ZGPU_OK) goto done;
        }
    }
    out->size = (size_t)s.total_out;
    if (want.exact != SIZE_MAX && out->size != want.exact)
        st = zg_error(ZGPU_ERR_CORRUPT_DATA, "tiff_lzma: data decodes to %zu bytes, expected %zu", out->size, want.exact);
done:
    lzma_end(&s);
    return st;
}

static zgpu_status lzma_encode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out) {
    (void)c;
    size_t bound = lzma_stream_buffer_bound(n);
    ZG_RETURN_IF(bound == 0, ZGPU_ERR_INVALID_ARGUMENT, "tiff_lzma: %zu bytes are too many to compress", n);
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, bound));
    size_t pos = 0;
    lzma_ret r = lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, in, n, out->data, &pos, bound);
    ZG_RETURN_IF(r != LZMA_OK, ZGPU_ERR_INTERNAL, "tiff_lzma: compression failed (%s)", lzma_what(r));
    out->size = pos;
    return ZGPU_OK;
}

static size_t lzma_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    size_t b = lzma_stream_buffer_bound(decoded);
    return b ? b : SIZE_MAX;
}

const zg_codec_vtable zg_codec_tiff_lzma = {
    .name = "tiff_lzma",
    .kind = ZG_BYTES_TO_BYTES,
    .create = lzma_create_codec,
    .destroy = lzma_destroy_codec,
    .to_json = lzma_to_json,
    .decode_bytes = lzma_decode,
    .encode_bytes = lzma_encode,
    .encoded_size = lzma_encoded_size,
};
