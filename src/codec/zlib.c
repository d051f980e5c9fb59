/* numcodecs.zlib codec (v2 id "zlib"): the RFC 1950 zlib wrapper around raw DEFLATE.
 * We check the 2-byte header and the big-endian Adler-32 trailer ourselves and let libdeflate decode the
 * DEFLATE stream in one pass straight into the destination. */
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/deflate_split.h"
#include "codec/deflate_tls.h"
#include "common/endian.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_zlib;

typedef struct zlib_codec {
    zg_codec base;
    int level; /* as configured (-1 = zlib's default, 6) */
} zlib_codec;

/* ---- config ---- */
static zgpu_status zlib_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA,
                 "numcodecs.zlib: configuration must be an object");
    static const char *const keys[] = {"level", NULL};
    ZG_FORWARD(zg_config_only(config, "numcodecs.zlib", "zlib", keys));
    int64_t level;
    /* numcodecs' default is 1; -1 is zlib's Z_DEFAULT_COMPRESSION, which Python accepts. */
    ZG_FORWARD(zg_config_int(config, "numcodecs.zlib", "level", 1, -1, 9, &level));
    zlib_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "numcodecs.zlib: out of memory");
    c->base.vt = &zg_codec_zlib;
    if (decoded) c->base.decoded = c->base.encoded = *decoded;
    c->level = (int)level;
    *out = &c->base;
    return ZGPU_OK;
}

static void zlib_destroy(zg_codec *c) { free(c); }

static zj_value *zlib_conf(const zlib_codec *c, int with_id) {
    zj_value *o = zj_new_object();
    if (!o) return NULL;
    if ((with_id && zj_set(o, "id", zj_new_string("zlib")) != ZGPU_OK) ||
        zj_set(o, "level", zj_new_int(c->level)) != ZGPU_OK) {
        zj_free(o);
        return NULL;
    }
    return o;
}

static zj_value *zlib_to_json(const zg_codec *c) {
    zj_value *conf = zlib_conf((const zlib_codec *)c, 0);
    return conf ? zg_codec_json("numcodecs.zlib", conf) : NULL;
}

static zj_value *zlib_to_json_v2(const zg_codec *c) { return zlib_conf((const zlib_codec *)c, 1); }

/* ---- decode ---- */
/* The 2-byte header: DEFLATE with a window of at most 32 KiB, its check bits, no preset dictionary. */
static zgpu_status zlib_header(const uint8_t *in, size_t n) {
    ZG_RETURN_IF(n < 2, ZGPU_ERR_CORRUPT_DATA, "zlib: input of %zu bytes is shorter than the 2-byte header", n);
    unsigned cmf = in[0], flg = in[1];
    ZG_RETURN_IF((cmf & 0x0F) != 8 || (cmf >> 4) > 7, ZGPU_ERR_CORRUPT_DATA,
                 "zlib: bad header byte 0x%02x (not DEFLATE with a window of at most 32 KiB)", cmf);
    ZG_RETURN_IF((cmf << 8 | flg) % 31 != 0, ZGPU_ERR_CORRUPT_DATA,
                 "zlib: header check bits fail (0x%02x%02x is not a multiple of 31)", cmf, flg);
    ZG_RETURN_IF(flg & 0x20, ZGPU_ERR_CORRUPT_DATA, "zlib: stream needs a preset dictionary, which Zarr never uses");
    return ZGPU_OK;
}

static zgpu_status zlib_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    ZG_FORWARD(zlib_header(in, n));
    struct libdeflate_decompressor *d = zg_deflate_decompressor();
    ZG_RETURN_IF(!d, ZGPU_ERR_NO_MEMORY, "zlib: out of memory allocating a decompressor");

    const uint8_t *body = in + 2;
    size_t body_n = n - 2, used = 0, got = 0;
    const size_t expected = want.exact;
    const size_t limit = zg_out_limit(want, out);
    out->size = 0;
    enum libdeflate_result r;
    uint8_t dummy;
    if (expected != SIZE_MAX || out->fixed) {
        /* Known size: one pass straight into the destination. */
        if (!out->fixed && limit > 0) ZG_FORWARD(zg_buf_reserve(out, limit));
        r = libdeflate_deflate_decompress_ex(d, body, body_n, limit ? out->data : &dummy, limit, &used, &got);
        ZG_RETURN_IF(r == LIBDEFLATE_INSUFFICIENT_SPACE, ZGPU_ERR_CORRUPT_DATA,
                     "zlib: data decodes to more than the %zu bytes this chunk can hold", limit);
    } else {
        /* Only a limit: guess, and retry with twice the room while too small (linear total work), never past
         * the limit nor DEFLATE's ratio. */
        size_t ratio = body_n > (SIZE_MAX - 64) / DEFLATE_MAX_RATIO ? SIZE_MAX - 64 : body_n * DEFLATE_MAX_RATIO;
        size_t ceiling = limit < ratio ? limit : ratio;
        size_t guess = body_n < 1024 ? 4096 : 4 * body_n;
        if (guess > ceiling) guess = ceiling;
        for (;;) {
            ZG_FORWARD(zg_buf_reserve(out, guess));
            r = libdeflate_deflate_decompress_ex(d, body, body_n, guess ? out->data : &dummy, guess, &used, &got);
            if (r != LIBDEFLATE_INSUFFICIENT_SPACE) break;
            if (guess >= ceiling) {
                ZG_RETURN_IF(ceiling == limit, ZGPU_ERR_CORRUPT_DATA,
                             "zlib: data decodes to more than the %zu bytes this chunk can hold", limit);
                return zg_error(ZGPU_ERR_CORRUPT_DATA,
                                "zlib: data decodes to more than %zu bytes, beyond DEFLATE's 1032:1 limit", ceiling);
            }
            guess = guess > ceiling / 2 ? ceiling : guess * 2;
        }
    }
    ZG_RETURN_IF(r != LIBDEFLATE_SUCCESS, ZGPU_ERR_CORRUPT_DATA, "zlib: invalid or truncated DEFLATE data");
    ZG_RETURN_IF(body_n - used < 4, ZGPU_ERR_CORRUPT_DATA, "zlib: truncated Adler-32 trailer (%zu of 4 bytes)",
                 body_n - used);
    const uint32_t stored = zg_be32(body + used);
    uint32_t actual = got ? libdeflate_adler32(1, out->data, got) : 1;
    ZG_RETURN_IF(stored != actual, ZGPU_ERR_CORRUPT_DATA,
                 "zlib: Adler-32 mismatch (stored 0x%08x, computed 0x%08x over %zu bytes)", stored, actual, got);
    ZG_RETURN_IF(body_n - used > 4, ZGPU_ERR_CORRUPT_DATA, "zlib: %zu unexpected bytes after the end of the stream",
                 body_n - used - 4);
    out->size = got;
    ZG_RETURN_IF(expected != SIZE_MAX && got != expected, ZGPU_ERR_CORRUPT_DATA,
                 "zlib: decoded %zu bytes, expected %zu", got, expected);
    return ZGPU_OK;
}

/* A chunk of known size over several threads (codec/deflate_split.h) where that pays; else, and wherever the split
 * declines (a fault, which this thread's decode then names), on this thread. Whole either way: the Adler-32 covers
 * every byte. */
static zgpu_status zlib_decode_split(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                     size_t lo, size_t hi, const zg_decode_par *par) {
    (void)lo, (void)hi;
    if (n > 6 && zlib_header(in, n) == ZGPU_OK) { /* (else this thread's decode names what is wrong) */
        int declined = 1;
        ZG_FORWARD(zg_deflate_decode_split(in + 2, n - 6, out, size, ZG_DEFLATE_ADLER32, zg_be32(in + n - 4), par,
                                           ZG_DEFLATE_PART_MIN_BYTES, ZG_DEFLATE_SPLIT_GAIN_MIN, &declined));
        if (!declined) return ZGPU_OK;
    }
    zg_buf dst = zg_buf_wrap(out, size);
    return zlib_decode(c, in, n, &dst, zg_out_exact(size));
}

/* DEFLATE's worst case for the data stored as is, with the 2-byte header and the Adler-32. */
static size_t zlib_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    return zg_size_add(zg_deflate_bound(decoded), 6);
}

/* ---- encode ---- */
static zgpu_status zlib_encode(const zg_codec *cc, const uint8_t *in, size_t n, zg_buf *out) {
    const zlib_codec *c = (const zlib_codec *)cc;
    int level = c->level < 0 ? 6 : c->level;
    struct libdeflate_compressor *comp = zg_deflate_compressor(level);
    ZG_RETURN_IF(!comp, ZGPU_ERR_NO_MEMORY, "zlib: out of memory allocating a level-%d compressor", level);
    size_t bound = libdeflate_zlib_compress_bound(comp, n);
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, bound));
    static const uint8_t empty = 0;
    size_t m = libdeflate_zlib_compress(comp, n ? in : &empty, n, out->data, bound);
    ZG_RETURN_IF(m == 0, ZGPU_ERR_INTERNAL, "zlib: compression of %zu bytes did not fit its own bound", n);
    out->size = m;
    return ZGPU_OK;
}

/* GPU: a zlib stream, whose DEFLATE payload a GPU DEFLATE decoder takes (its Adler-32 checked on the GPU). */
static void zlib_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    out->kind = ZG_GPU_STAGE_COMPRESSOR;
    out->format = ZG_GPU_FORMAT_ZLIB;
    out->level = ((const zlib_codec *)c)->level;
}

const zg_codec_vtable zg_codec_zlib = {
    .name = "numcodecs.zlib",
    .kind = ZG_BYTES_TO_BYTES,
    .create = zlib_create,
    .destroy = zlib_destroy,
    .to_json = zlib_to_json,
    .to_json_v2 = zlib_to_json_v2,
    .decode_bytes = zlib_decode,
    .decode_bytes_split = zlib_decode_split,
    .split_speedup = zg_deflate_chunk_split_speedup,
    .encode_bytes = zlib_encode,
    .encoded_size = zlib_encoded_size,
    .gpu_stage = zlib_gpu_stage,
};
