/* numcodecs.bz2 codec (v2 id "bz2"). bzip2 records no decoded size, so decode streams straight into the
 * destination: with a known size into exactly that many bytes, otherwise into a buffer that grows only as
 * data arrives and never past the limit (a bzip2 bomb stops at what the chunk can hold). Concatenated
 * streams are accepted, as Python's bz2.decompress accepts them. */
#include <bzlib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_bz2;

typedef struct bz2_codec {
    zg_codec base;
    int level;
} bz2_codec;

static zgpu_status bz2_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA,
                 "numcodecs.bz2: configuration must be an object");
    static const char *const keys[] = {"level", NULL};
    ZG_FORWARD(zg_config_only(config, "numcodecs.bz2", "bz2", keys));
    int64_t level;
    ZG_FORWARD(zg_config_int(config, "numcodecs.bz2", "level", 1, 1, 9, &level));
    bz2_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "numcodecs.bz2: out of memory");
    c->base.vt = &zg_codec_bz2;
    if (decoded) c->base.decoded = c->base.encoded = *decoded;
    c->level = (int)level;
    *out = &c->base;
    return ZGPU_OK;
}

static void bz2_destroy(zg_codec *c) { free(c); }

static zj_value *bz2_conf(const bz2_codec *c, int with_id) {
    zj_value *o = zj_new_object();
    if (!o) return NULL;
    if ((with_id && zj_set(o, "id", zj_new_string("bz2")) != ZGPU_OK) ||
        zj_set(o, "level", zj_new_int(c->level)) != ZGPU_OK) {
        zj_free(o);
        return NULL;
    }
    return o;
}

static zj_value *bz2_to_json(const zg_codec *c) {
    zj_value *conf = bz2_conf((const bz2_codec *)c, 0);
    return conf ? zg_codec_json("numcodecs.bz2", conf) : NULL;
}

static zj_value *bz2_to_json_v2(const zg_codec *c) { return bz2_conf((const bz2_codec *)c, 1); }

/* bzip2's counters are unsigned int: feed at most this much per call. */
#define BZ_STEP ((size_t)UINT_MAX)

static zgpu_status bz2_run(bz_stream *s, const uint8_t *in, size_t n, zg_buf *out, size_t limit) {
    size_t in_pos = 0;
    int streams = 0;
    for (;;) {
        /* Room to write: up to the limit, growing an owned buffer geometrically as data arrives. */
        if (out->size == out->cap && out->size < limit && !out->fixed) {
            size_t want = out->cap < 65536 ? 65536 : out->cap;
            if (want > limit - out->size) want = limit - out->size;
            ZG_FORWARD(zg_buf_reserve(out, out->size + want));
        }
        size_t room = (out->cap < limit ? out->cap : limit) - out->size;
        uint8_t probe; /* with no room left: a 1-byte probe tells "finished" from "too much data" */
        int probing = room == 0;
        s->next_out = probing ? (char *)&probe : (char *)out->data + out->size;
        s->avail_out = probing ? 1 : (unsigned)(room < BZ_STEP ? room : BZ_STEP);
        if (s->avail_in == 0 && in_pos < n) {
            size_t step = n - in_pos < BZ_STEP ? n - in_pos : BZ_STEP;
            s->next_in = (char *)(uintptr_t)(in + in_pos);
            s->avail_in = (unsigned)step;
            in_pos += step;
        }
        unsigned out_before = s->avail_out, in_before = s->avail_in;
        int r = BZ2_bzDecompress(s);
        size_t produced = out_before - s->avail_out;
        if (probing && produced)
            return zg_error(ZGPU_ERR_CORRUPT_DATA, "bz2: data decodes to more than the %zu bytes this chunk can hold",
                            limit);
        if (!probing) out->size += produced;
        if (r == BZ_STREAM_END) {
            streams++;
            size_t rest = s->avail_in + (n - in_pos);
            if (rest == 0) return ZGPU_OK;
            /* Another stream follows: restart the decoder on the remaining input. */
            const uint8_t *next = in + (n - rest);
            BZ2_bzDecompressEnd(s);
            memset(s, 0, sizeof *s);
            r = BZ2_bzDecompressInit(s, 0, 0);
            ZG_RETURN_IF(r != BZ_OK, ZGPU_ERR_NO_MEMORY, "bz2: cannot initialise the decoder (%d)", r);
            in = next;
            n = rest;
            in_pos = 0;
            continue;
        }
        if (r == BZ_MEM_ERROR) return zg_error(ZGPU_ERR_NO_MEMORY, "bz2: out of memory while decoding");
        if (r == BZ_DATA_ERROR_MAGIC)
            return zg_error(ZGPU_ERR_CORRUPT_DATA, "bz2: stream %d does not start with the \"BZh\" signature", streams);
        ZG_RETURN_IF(r != BZ_OK, ZGPU_ERR_CORRUPT_DATA, "bz2: stream %d: corrupt data (error %d)", streams, r);
        /* bzip2 always moves when it has both input and room; a call that moves nothing has run out of input. */
        if (produced == 0 && s->avail_in == in_before)
            return zg_error(ZGPU_ERR_CORRUPT_DATA, "bz2: stream %d is truncated (input ends before end-of-stream)",
                            streams);
    }
}

static zgpu_status bz2_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    ZG_RETURN_IF(n == 0, ZGPU_ERR_CORRUPT_DATA, "bz2: empty input (no stream)");
    const size_t expected = want.exact;
    size_t limit = zg_out_limit(want, out);
    out->size = 0;
    if (expected != SIZE_MAX && !out->fixed && limit > 0) ZG_FORWARD(zg_buf_reserve(out, limit));
    bz_stream s;
    memset(&s, 0, sizeof s);
    int r = BZ2_bzDecompressInit(&s, 0, 0);
    ZG_RETURN_IF(r != BZ_OK, ZGPU_ERR_NO_MEMORY, "bz2: cannot initialise the decoder (%d)", r);
    zgpu_status st = bz2_run(&s, in, n, out, limit);
    BZ2_bzDecompressEnd(&s);
    ZG_FORWARD(st);
    ZG_RETURN_IF(expected != SIZE_MAX && out->size != expected, ZGPU_ERR_CORRUPT_DATA,
                 "bz2: decoded %zu bytes, expected %zu", out->size, expected);
    return ZGPU_OK;
}

/* The bzip2 manual's bound: 1% larger than the input plus 600 bytes (601: rounding). */
static size_t bz2_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    return zg_size_add(decoded, zg_size_add(decoded / 100, 601));
}

static zgpu_status bz2_encode(const zg_codec *cc, const uint8_t *in, size_t n, zg_buf *out) {
    const bz2_codec *c = (const bz2_codec *)cc;
    /* The bzip2 manual's bound: 1% larger than the input plus 600 bytes. */
    ZG_RETURN_IF(n > UINT_MAX - UINT_MAX / 100 - 601, ZGPU_ERR_UNSUPPORTED,
                 "bz2: input of %zu bytes is too large for one bzip2 call", n);
    unsigned bound = (unsigned)(n + n / 100 + 601);
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, bound));
    static char empty = 0;
    unsigned dlen = bound;
    int r = BZ2_bzBuffToBuffCompress((char *)out->data, &dlen, n ? (char *)(uintptr_t)in : &empty, (unsigned)n,
                                     c->level, 0, 0);
    if (r == BZ_MEM_ERROR) return zg_error(ZGPU_ERR_NO_MEMORY, "bz2: out of memory while compressing");
    ZG_RETURN_IF(r != BZ_OK, ZGPU_ERR_INTERNAL, "bz2: compression of %zu bytes failed (error %d)", n, r);
    out->size = dlen;
    return ZGPU_OK;
}

const zg_codec_vtable zg_codec_bz2 = {
    .name = "numcodecs.bz2",
    .kind = ZG_BYTES_TO_BYTES,
    .create = bz2_create,
    .destroy = bz2_destroy,
    .to_json = bz2_to_json,
    .to_json_v2 = bz2_to_json_v2,
    .decode_bytes = bz2_decode,
    .encode_bytes = bz2_encode,
    .encoded_size = bz2_encoded_size,
};
