/* gzip codec (Zarr v3 "gzip", numcodecs "gzip"): RFC 1952 members around raw DEFLATE.
 * We parse the member header and trailer ourselves (all flags, the optional header CRC, CRC32 and ISIZE,
 * any number of concatenated members) so every failure gets a precise message, and let libdeflate do
 * the DEFLATE part: it decodes a whole buffer at once, straight into the destination. */
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/deflate_split.h"
#include "codec/deflate_tls.h"
#include "common/endian.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_gzip;

typedef struct gzip_codec {
    zg_codec base;
    int level;
} gzip_codec;

/* ---- config ---- */
static zgpu_status gzip_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "gzip: configuration must be an object");
    static const char *const keys[] = {"level", NULL};
    ZG_FORWARD(zg_config_only(config, "gzip", "gzip", keys));
    int64_t level;
    ZG_FORWARD(zg_config_int(config, "gzip", "level", 5, 0, 9, &level));
    gzip_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "gzip: out of memory");
    c->base.vt = &zg_codec_gzip;
    if (decoded) c->base.decoded = c->base.encoded = *decoded;
    c->level = (int)level;
    *out = &c->base;
    return ZGPU_OK;
}

static void gzip_destroy(zg_codec *c) { free(c); }

static zj_value *gzip_conf(const gzip_codec *c, int with_id) {
    zj_value *o = zj_new_object();
    if (!o) return NULL;
    if ((with_id && zj_set(o, "id", zj_new_string("gzip")) != ZGPU_OK) ||
        zj_set(o, "level", zj_new_int(c->level)) != ZGPU_OK) {
        zj_free(o);
        return NULL;
    }
    return o;
}

static zj_value *gzip_to_json(const zg_codec *c) {
    zj_value *conf = gzip_conf((const gzip_codec *)c, 0);
    return conf ? zg_codec_json("gzip", conf) : NULL;
}

static zj_value *gzip_to_json_v2(const zg_codec *c) { return gzip_conf((const gzip_codec *)c, 1); }

/* ---- decode ---- */

/* Parses one member header at p[0..n); *hdr_len gets its length. */
static zgpu_status gz_parse_header(const uint8_t *p, size_t n, int member, size_t *hdr_len) {
    ZG_RETURN_IF(n < 10, ZGPU_ERR_CORRUPT_DATA, "gzip: member %d: truncated header (%zu of at least 10 bytes)",
                 member, n);
    ZG_RETURN_IF(p[0] != 0x1f || p[1] != 0x8b, ZGPU_ERR_CORRUPT_DATA,
                 "gzip: member %d: bad magic bytes 0x%02x 0x%02x (expected 0x1f 0x8b)", member, p[0], p[1]);
    ZG_RETURN_IF(p[2] != 8, ZGPU_ERR_CORRUPT_DATA, "gzip: member %d: compression method %u is not DEFLATE (8)",
                 member, p[2]);
    uint8_t flg = p[3];
    ZG_RETURN_IF(flg & 0xE0, ZGPU_ERR_CORRUPT_DATA, "gzip: member %d: reserved header flag bits set (0x%02x)",
                 member, flg);
    size_t pos = 10;
    if (flg & 0x04) { /* FEXTRA: 2-byte length, then that many bytes */
        ZG_RETURN_IF(n - pos < 2, ZGPU_ERR_CORRUPT_DATA, "gzip: member %d: truncated FEXTRA length", member);
        size_t xlen = (size_t)p[pos] | (size_t)p[pos + 1] << 8;
        pos += 2;
        ZG_RETURN_IF(n - pos < xlen, ZGPU_ERR_CORRUPT_DATA,
                     "gzip: member %d: FEXTRA field of %zu bytes runs past the end of the input", member, xlen);
        pos += xlen;
    }
    for (int bit = 0x08; bit <= 0x10; bit <<= 1) { /* FNAME, then FCOMMENT: NUL-terminated strings */
        if (!(flg & bit)) continue;
        const uint8_t *z = memchr(p + pos, 0, n - pos);
        ZG_RETURN_IF(!z, ZGPU_ERR_CORRUPT_DATA, "gzip: member %d: unterminated %s field", member,
                     bit == 0x08 ? "FNAME" : "FCOMMENT");
        pos = (size_t)(z - p) + 1;
    }
    if (flg & 0x02) { /* FHCRC: low 16 bits of the CRC32 of the header so far */
        ZG_RETURN_IF(n - pos < 2, ZGPU_ERR_CORRUPT_DATA, "gzip: member %d: truncated header CRC", member);
        uint32_t want = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8;
        uint32_t got = libdeflate_crc32(0, p, pos) & 0xFFFFu;
        ZG_RETURN_IF(want != got, ZGPU_ERR_CORRUPT_DATA,
                     "gzip: member %d: header CRC mismatch (stored 0x%04x, computed 0x%04x)", member, want, got);
        pos += 2;
    }
    *hdr_len = pos;
    return ZGPU_OK;
}

static int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static zgpu_status gzip_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    ZG_RETURN_IF(n == 0, ZGPU_ERR_CORRUPT_DATA, "gzip: empty input (no gzip member)");
    struct libdeflate_decompressor *d = zg_deflate_decompressor();
    ZG_RETURN_IF(!d, ZGPU_ERR_NO_MEMORY, "gzip: out of memory allocating a decompressor");
    const size_t expected = want.exact;
    /* The most we may write: the exact size or the limit, and never past a fixed buffer. */
    const size_t limit = zg_out_limit(want, out);
    const int one_pass = expected != SIZE_MAX || out->fixed;
    out->size = 0;
    if (one_pass && !out->fixed && limit > 0) ZG_FORWARD(zg_buf_reserve(out, limit));

    size_t pos = 0;
    for (int member = 0; pos < n; member++) {
        if (member > 0 && all_zero(in + pos, n - pos)) break; /* trailing zero padding, as gzip(1) allows */
        size_t hdr = 0;
        ZG_FORWARD(gz_parse_header(in + pos, n - pos, member, &hdr));
        const uint8_t *body = in + pos + hdr;
        size_t body_n = n - pos - hdr;
        ZG_RETURN_IF(body_n == 0, ZGPU_ERR_CORRUPT_DATA, "gzip: member %d: truncated after the header", member);
        size_t used = 0, got = 0;
        enum libdeflate_result r;
        uint8_t dummy;
        const size_t room = limit == SIZE_MAX ? SIZE_MAX : limit - out->size;
        if (one_pass) {
            /* Known size: one pass straight into the destination. */
            uint8_t *dst = room ? out->data + out->size : &dummy;
            r = libdeflate_deflate_decompress_ex(d, body, body_n, dst, room, &used, &got);
            ZG_RETURN_IF(r == LIBDEFLATE_INSUFFICIENT_SPACE, ZGPU_ERR_CORRUPT_DATA,
                         "gzip: member %d: data decodes to more than the %zu bytes this chunk can hold", member, limit);
        } else {
            /* Only a limit: guess (the ISIZE of the last member is a good hint for the common single member)
             * and retry with twice the room while it is too small, never past the limit nor DEFLATE's ratio. */
            size_t ratio = body_n > (SIZE_MAX - 64) / DEFLATE_MAX_RATIO ? SIZE_MAX - 64 : body_n * DEFLATE_MAX_RATIO;
            size_t ceiling = room < ratio ? room : ratio;
            size_t guess = body_n >= 4 ? (size_t)zg_le32(in + n - 4) : 0;
            if (guess < 4 * body_n) guess = 4 * body_n;
            if (guess < 4096) guess = 4096;
            if (guess > ceiling) guess = ceiling;
            for (;;) {
                ZG_FORWARD(zg_buf_reserve(out, out->size + guess));
                r = libdeflate_deflate_decompress_ex(d, body, body_n, guess ? out->data + out->size : &dummy, guess,
                                                     &used, &got);
                if (r != LIBDEFLATE_INSUFFICIENT_SPACE) break;
                if (guess >= ceiling) {
                    if (ceiling == room)
                        return zg_error(ZGPU_ERR_CORRUPT_DATA,
                                        "gzip: member %d: data decodes to more than the %zu bytes this chunk can hold",
                                        member, limit);
                    return zg_error(ZGPU_ERR_CORRUPT_DATA,
                                    "gzip: member %d decodes to more than %zu bytes, beyond DEFLATE's 1032:1 limit",
                                    member, ceiling);
                }
                guess = guess > ceiling / 2 ? ceiling : guess * 2;
            }
        }
        ZG_RETURN_IF(r != LIBDEFLATE_SUCCESS, ZGPU_ERR_CORRUPT_DATA,
                     "gzip: member %d: invalid or truncated DEFLATE data", member);
        ZG_RETURN_IF(body_n - used < 8, ZGPU_ERR_CORRUPT_DATA,
                     "gzip: member %d: truncated trailer (%zu of 8 bytes of CRC32 and ISIZE)", member, body_n - used);
        const uint8_t *trailer = body + used;
        const uint8_t *data = got ? out->data + out->size : NULL;
        uint32_t crc = data ? libdeflate_crc32(0, data, got) : 0;
        ZG_RETURN_IF(crc != zg_le32(trailer), ZGPU_ERR_CORRUPT_DATA,
                     "gzip: member %d: CRC32 mismatch (stored 0x%08x, computed 0x%08x)", member, zg_le32(trailer),
                     crc);
        ZG_RETURN_IF((uint32_t)got != zg_le32(trailer + 4), ZGPU_ERR_CORRUPT_DATA,
                     "gzip: member %d: ISIZE %u does not match the %zu bytes decoded", member,
                     zg_le32(trailer + 4), got);
        out->size += got;
        pos += hdr + used + 8;
    }
    ZG_RETURN_IF(expected != SIZE_MAX && out->size != expected, ZGPU_ERR_CORRUPT_DATA,
                 "gzip: decoded %zu bytes, expected %zu", out->size, expected);
    return ZGPU_OK;
}

/* A chunk of known size over several threads (codec/deflate_split.h) where that pays; else, and wherever the split
 * declines (another layout: several members, padding; a fault, which this thread's decode then names), on this
 * thread. Whole either way: the CRC32 covers every byte. */
static zgpu_status gzip_decode_split(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                     size_t lo, size_t hi, const zg_decode_par *par) {
    (void)lo, (void)hi;
    size_t hdr = 0;
    if (n > 18 && in[0] == 0x1f && in[1] == 0x8b && gz_parse_header(in, n, 0, &hdr) == ZGPU_OK && n - hdr > 8 &&
        zg_le32(in + n - 4) == (uint32_t)size) {
        int declined = 1;
        ZG_FORWARD(zg_deflate_decode_split(in + hdr, n - hdr - 8, out, size, ZG_DEFLATE_CRC32, zg_le32(in + n - 8), par,
                                           ZG_DEFLATE_PART_MIN_BYTES, ZG_DEFLATE_SPLIT_GAIN_MIN, &declined));
        if (!declined) return ZGPU_OK;
    }
    zg_buf dst = zg_buf_wrap(out, size);
    return gzip_decode(c, in, n, &dst, zg_out_exact(size));
}

/* ---- encode ---- */
/* DEFLATE's worst case for the data stored as is, with the 10-byte header and 8-byte trailer, and room for
 * the optional header fields (name, comment, extra) that other writers add. */
static size_t gzip_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    return zg_size_add(zg_deflate_bound(decoded), 18 + ZG_GZIP_HEADER_SLACK);
}

static zgpu_status gzip_encode(const zg_codec *cc, const uint8_t *in, size_t n, zg_buf *out) {
    const gzip_codec *c = (const gzip_codec *)cc;
    struct libdeflate_compressor *comp = zg_deflate_compressor(c->level);
    ZG_RETURN_IF(!comp, ZGPU_ERR_NO_MEMORY, "gzip: out of memory allocating a level-%d compressor", c->level);
    size_t bound = libdeflate_gzip_compress_bound(comp, n);
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, bound));
    static const uint8_t empty = 0;
    size_t m = libdeflate_gzip_compress(comp, n ? in : &empty, n, out->data, bound);
    ZG_RETURN_IF(m == 0, ZGPU_ERR_INTERNAL, "gzip: compression of %zu bytes did not fit its own bound", n);
    out->size = m;
    return ZGPU_OK;
}

/* GPU: a gzip member, whose DEFLATE payload a GPU DEFLATE decoder takes (its CRC32 checked on the GPU). */
static void gzip_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    out->kind = ZG_GPU_STAGE_COMPRESSOR;
    out->format = ZG_GPU_FORMAT_GZIP;
    out->level = ((const gzip_codec *)c)->level;
}

const zg_codec_vtable zg_codec_gzip = {
    .name = "gzip",
    .kind = ZG_BYTES_TO_BYTES,
    .create = gzip_create,
    .destroy = gzip_destroy,
    .to_json = gzip_to_json,
    .to_json_v2 = gzip_to_json_v2,
    .decode_bytes = gzip_decode,
    .decode_bytes_split = gzip_decode_split,
    .split_speedup = zg_deflate_chunk_split_speedup,
    .encode_bytes = gzip_encode,
    .encoded_size = gzip_encoded_size,
    .gpu_stage = gzip_gpu_stage,
};
