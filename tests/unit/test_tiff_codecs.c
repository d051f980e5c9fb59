/* TIFF's codecs: tiff_lzw (new- and old-style streams, every code width change, ClearCode mid-stream, KwKwK,
 * truncated, corrupt and bomb streams), packbits, tiff_predictor (2 for every integer width and samples per pixel,
 * 3 for 16/32/64-bit floats), tiff_lzma, tiff_jpeg (with JPEGTables) and tiff_short_strip in a chain.
 * Streams are built bit by bit here from the TIFF 6.0 rules, independently of the encoder, and known vectors come
 * from the specification and from imagecodecs (libtiff's LZW). */
#include <math.h>
#include "test.h"
#include <jpeglib.h> /* after stdio.h, which it needs */
#include "codec/chain.h"
#include "codec/codec.h"
#include "codec/tiff_lzw.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_tiff_lzw, zg_codec_packbits, zg_codec_tiff_predictor, zg_codec_tiff_lzma,
    zg_codec_tiff_jpeg, zg_codec_tiff_short_strip;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static zg_repr mk_repr(const char *dtype, int ndim, const uint64_t *shape) {
    zg_repr r;
    memset(&r, 0, sizeof r);
    if (!zg_dtype_from_name(dtype, &r.dtype)) { fprintf(stderr, "unknown dtype %s\n", dtype); exit(2); }
    r.ndim = ndim;
    for (int i = 0; i < ndim; i++) r.shape[i] = shape[i];
    return r;
}

static zgpu_status mk(const zg_codec_vtable *vt, const char *conf, const zg_repr *r, zg_codec **out) {
    zj_value *cv = NULL;
    *out = NULL;
    if (conf) {
        zgpu_status st = zj_parse(conf, strlen(conf), "test config", &cv);
        if (st != ZGPU_OK) return st;
    }
    zgpu_status st = vt->create(cv, r, out);
    zj_free(cv);
    return st;
}
static void destroy(zg_codec *c) { if (c) c->vt->destroy(c); }

/* ---- a bit writer for hand-built LZW streams ---- */
typedef struct bitw {
    uint8_t buf[16384];
    size_t n;
    uint64_t acc;
    unsigned bits;
    int lsb; /* old-style */
} bitw;
static void put(bitw *w, unsigned code, unsigned width) {
    if (w->lsb) {
        w->acc |= (uint64_t)code << w->bits;
        w->bits += width;
        while (w->bits >= 8) { w->buf[w->n++] = (uint8_t)w->acc; w->acc >>= 8; w->bits -= 8; }
    } else {
        w->acc = w->acc << width | code;
        w->bits += width;
        while (w->bits >= 8) { w->buf[w->n++] = (uint8_t)(w->acc >> (w->bits - 8)); w->bits -= 8; }
    }
}
static void flush(bitw *w) {
    if (w->bits) w->buf[w->n++] = w->lsb ? (uint8_t)w->acc : (uint8_t)(w->acc << (8 - w->bits));
    w->bits = 0;
    w->acc = 0;
}
/* The TIFF 6.0 width of the k-th code after a ClearCode (k = 1, 2, ...): the table grows by one entry per code
 * from the second on, the first new entry is 258 and the width goes up when the next entry would be 511, 1023 or
 * 2047 (one early: "the switch to 10 bits occurs after code 510 is added"). Old-style widens at 512, 1024, 2048. */
static unsigned width_of(unsigned k, int old_style) {
    unsigned next = k >= 2 ? 258 + (k - 2) : 258;
    if (next > 4096) next = 4096;
    unsigned t = old_style ? 0 : 1;
    return next + t >= 2048 ? 12 : next + t >= 1024 ? 11 : next + t >= 512 ? 10 : 9;
}

static zgpu_status lzw(const uint8_t *in, size_t n, zg_buf *out, size_t exact, size_t limit) {
    out->size = 0;
    return zg_tiff_lzw_decode(in, n, out, exact, limit);
}

static void test_lzw_widths(void) {
    for (int old = 0; old <= 1; old++) {
        /* 3000 single-byte codes after a ClearCode: every width from 9 to 12 bits, then a ClearCode written at 12
         * bits and 300 more codes from 9 bits again, then EOI. */
        bitw w = {.lsb = old};
        uint8_t want[3300];
        size_t nw = 0;
        put(&w, 256, 9);
        unsigned k = 0;
        for (unsigned i = 0; i < 3000; i++) {
            uint8_t b = (uint8_t)(rnd() >> 40);
            if (i == 0 && old) b |= 0; /* nothing: the ClearCode already sets the old-style signature */
            put(&w, b, width_of(++k, old));
            want[nw++] = b;
        }
        put(&w, 256, width_of(k + 1, old));
        k = 0;
        for (unsigned i = 0; i < 300; i++) {
            uint8_t b = (uint8_t)(rnd() >> 40);
            put(&w, b, width_of(++k, old));
            want[nw++] = b;
        }
        put(&w, 257, width_of(k + 1, old));
        flush(&w);
        CHECK(zg_tiff_lzw_is_old_style(w.buf, w.n) == old);
        zg_buf out = ZG_BUF_INIT;
        CHECK_OK(lzw(w.buf, w.n, &out, nw, nw));
        CHECK_EQ_U64(out.size, nw);
        CHECK(out.size == nw && memcmp(out.data, want, nw) == 0);
        zg_buf_free(&out);
        /* the same codes written with the switch one code late (old-style's rule for a new-style stream and the
         * reverse): a different decode or an error, so the test above pins the rule */
        bitw late = {.lsb = old};
        put(&late, 256, 9);
        for (unsigned i = 0; i < 600; i++) put(&late, want[i], width_of(i + 1, !old));
        put(&late, 257, width_of(601, !old));
        flush(&late);
        zg_buf o2 = ZG_BUF_INIT;
        zgpu_status st = lzw(late.buf, late.n, &o2, SIZE_MAX, 1 << 20);
        CHECK(st != ZGPU_OK || o2.size != 600 || memcmp(o2.data, want, 600) != 0);
        zg_buf_free(&o2);
    }
}

static void test_lzw_known(void) {
    /* KwKwK: Clear, 'a', 258 (the code being made), 259, EOI -> "a" "aa" "aaa" */
    bitw w = {0};
    put(&w, 256, 9); put(&w, 'a', 9); put(&w, 258, 9); put(&w, 259, 9); put(&w, 257, 9);
    flush(&w);
    zg_buf out = ZG_BUF_INIT;
    CHECK_OK(lzw(w.buf, w.n, &out, 6, 6));
    CHECK(out.size == 6 && memcmp(out.data, "aaaaaa", 6) == 0);
    /* a code past the next one is corrupt, and names the codec */
    bitw bad = {0};
    put(&bad, 256, 9); put(&bad, 'a', 9); put(&bad, 259, 9); put(&bad, 257, 9);
    flush(&bad);
    CHECK_STATUS(lzw(bad.buf, bad.n, &out, SIZE_MAX, 100), ZGPU_ERR_CORRUPT_DATA);
    CHECK(strstr(zgpu_last_error(), "tiff_lzw") != NULL);
    /* a multi-byte code right after a ClearCode */
    bitw bad2 = {0};
    put(&bad2, 256, 9); put(&bad2, 258, 9); put(&bad2, 257, 9);
    flush(&bad2);
    CHECK_STATUS(lzw(bad2.buf, bad2.n, &out, SIZE_MAX, 100), ZGPU_ERR_CORRUPT_DATA);
    /* imagecodecs.lzw_encode(b"TOBEORNOTTOBEORTOBEORNOT#") (libtiff's encoder) */
    static const uint8_t tobe[] = {128, 21, 9, 228, 34, 41, 60, 164, 78, 39, 149,
                                   32, 80, 72, 52, 46, 11, 7, 132, 136, 224, 32};
    const char *text = "TOBEORNOTTOBEORTOBEORNOT#";
    CHECK_OK(lzw(tobe, sizeof tobe, &out, strlen(text), strlen(text)));
    CHECK(out.size == strlen(text) && memcmp(out.data, text, out.size) == 0);
    zg_buf_free(&out);
}

static void test_lzw_roundtrip(void) {
    static const size_t sizes[] = {0, 1, 2, 3, 100, 4093, 4096, 70000, 300000};
    for (int old = 0; old <= 1; old++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
            for (int kind = 0; kind < 3; kind++) {
                size_t n = sizes[si];
                uint8_t *x = malloc(n + 1);
                for (size_t i = 0; i < n; i++)
                    x[i] = kind == 0 ? (uint8_t)(rnd() >> 56) : kind == 1 ? (uint8_t)(i / 300) : (uint8_t)(rnd() >> 62);
                zg_buf enc = ZG_BUF_INIT, dec = ZG_BUF_INIT;
                CHECK_OK(zg_tiff_lzw_encode(x, n, &enc, old));
                CHECK(enc.size <= zg_tiff_lzw_bound(n));
                if (n >= 2) CHECK(zg_tiff_lzw_is_old_style(enc.data, enc.size) == old);
                CHECK_OK(lzw(enc.data, enc.size, &dec, n, n));
                CHECK_MSG(dec.size == n && (n == 0 || memcmp(dec.data, x, n) == 0), "old %d size %zu kind %d", old, n,
                          kind);
                if (n > 100) {
                    /* truncated: fewer bytes than the chunk */
                    CHECK_STATUS(lzw(enc.data, enc.size / 2, &dec, n, n), ZGPU_ERR_CORRUPT_DATA);
                    /* a limit below what it decodes to: refused, nothing past the limit allocated */
                    zg_buf fresh = ZG_BUF_INIT;
                    CHECK_STATUS(lzw(enc.data, enc.size, &fresh, SIZE_MAX, n - 7), ZGPU_ERR_CORRUPT_DATA);
                    CHECK(fresh.cap <= 2 * n); /* zg_buf rounds up to a power of two */
                    zg_buf_free(&fresh);
                    /* every single-bit flip: an error or some output, never a crash (ASan) */
                    for (int t = 0; t < 40; t++) {
                        size_t at = (size_t)(rnd() % enc.size);
                        enc.data[at] ^= (uint8_t)(1u << (rnd() % 8));
                        (void)lzw(enc.data, enc.size, &dec, n, n);
                        enc.data[at] = 0;
                        (void)lzw(enc.data, enc.size, &dec, SIZE_MAX, n);
                    }
                }
                zg_buf_free(&enc);
                zg_buf_free(&dec);
                free(x);
            }
    /* the vtable: encode, decode into fixed memory */
    zg_codec *c = NULL;
    CHECK_STATUS(mk(&zg_codec_tiff_lzw, "{\"x\": 1}", NULL, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_OK(mk(&zg_codec_tiff_lzw, NULL, NULL, &c));
    if (!c) return;
    uint8_t x[5000], y[5000];
    for (int i = 0; i < 5000; i++) x[i] = (uint8_t)(i * i >> 5);
    zg_buf enc = ZG_BUF_INIT;
    CHECK_OK(c->vt->encode_bytes(c, x, sizeof x, &enc));
    zg_buf fixed = zg_buf_wrap(y, sizeof y);
    CHECK_OK(c->vt->decode_bytes(c, enc.data, enc.size, &fixed, zg_out_exact(sizeof y)));
    CHECK(memcmp(x, y, sizeof x) == 0);
    zg_buf_free(&enc);
    destroy(c);
}

/* A bomb: KwKwK codes chained, each one byte longer than the last: quadratic output from a small stream. */
static void test_lzw_bomb(void) {
    bitw w = {0};
    put(&w, 256, 9);
    put(&w, 0, 9);
    unsigned k = 1;
    for (unsigned code = 258; code < 258 + 1500; code++) put(&w, code, width_of(++k, 0));
    flush(&w);
    zg_buf out = ZG_BUF_INIT;
    CHECK_STATUS(lzw(w.buf, w.n, &out, SIZE_MAX, 1 << 20), ZGPU_ERR_CORRUPT_DATA);
    CHECK(strstr(zgpu_last_error(), "more than") != NULL);
    CHECK(out.cap <= (1u << 20)); /* the limit is a power of two: zg_buf allocates exactly it */
    /* the same, with room: 1 + 2 + ... + 1501 bytes, all zero */
    CHECK_OK(lzw(w.buf, w.n, &out, SIZE_MAX, 2000000));
    CHECK_EQ_U64(out.size, (uint64_t)1501 * 1502 / 2);
    zg_buf_free(&out);
}

static void test_packbits(void) {
    /* TIFF 6.0 section 9's example */
    static const uint8_t packed[] = {0xFE, 0xAA, 0x02, 0x80, 0x00, 0x2A, 0xFD, 0xAA, 0x03, 0x80, 0x00, 0x2A, 0x22, 0xF7, 0xAA};
    static const uint8_t unpacked[] = {0xAA, 0xAA, 0xAA, 0x80, 0x00, 0x2A, 0xAA, 0xAA, 0xAA, 0xAA, 0x80, 0x00,
                                       0x2A, 0x22, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA};
    zg_codec *c = NULL;
    CHECK_OK(mk(&zg_codec_packbits, NULL, NULL, &c));
    if (!c) return;
    zg_buf out = ZG_BUF_INIT, enc = ZG_BUF_INIT;
    CHECK_OK(c->vt->decode_bytes(c, packed, sizeof packed, &out, zg_out_exact(sizeof unpacked)));
    CHECK(out.size == sizeof unpacked && memcmp(out.data, unpacked, sizeof unpacked) == 0);
    /* -128 is a no-op */
    static const uint8_t noop[] = {0x80, 0x00, 0x41, 0x80};
    CHECK_OK(c->vt->decode_bytes(c, noop, sizeof noop, &out, zg_out_exact(1)));
    CHECK(out.size == 1 && out.data[0] == 0x41);
    /* truncated literal, run without its byte, too long, too short */
    static const uint8_t cut[] = {0x05, 1, 2};
    CHECK_STATUS(c->vt->decode_bytes(c, cut, sizeof cut, &out, ZG_OUT_ANY), ZGPU_ERR_CORRUPT_DATA);
    CHECK(strstr(zgpu_last_error(), "packbits") != NULL);
    static const uint8_t norun[] = {0x00, 7, 0xF0};
    CHECK_STATUS(c->vt->decode_bytes(c, norun, sizeof norun, &out, ZG_OUT_ANY), ZGPU_ERR_CORRUPT_DATA);
    static const uint8_t bomb[] = {0x81, 0, 0x81, 0, 0x81, 0};
    CHECK_STATUS(c->vt->decode_bytes(c, bomb, sizeof bomb, &out, zg_out_upto(200)), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(c->vt->decode_bytes(c, packed, sizeof packed, &out, zg_out_exact(sizeof unpacked + 1)),
                 ZGPU_ERR_CORRUPT_DATA);
    /* round trips */
    for (int t = 0; t < 200; t++) {
        size_t n = (size_t)(rnd() % 3000);
        uint8_t *x = malloc(n + 1);
        for (size_t i = 0; i < n; i++) x[i] = t % 2 ? (uint8_t)(rnd() >> 62) : (uint8_t)(i / (1 + t % 13));
        CHECK_OK(c->vt->encode_bytes(c, x, n, &enc));
        int ex = 1;
        CHECK(enc.size <= c->vt->encoded_size(c, n, &ex));
        CHECK_OK(c->vt->decode_bytes(c, enc.data, enc.size, &out, zg_out_exact(n)));
        CHECK(out.size == n && (n == 0 || memcmp(out.data, x, n) == 0));
        free(x);
    }
    zg_buf_free(&out);
    zg_buf_free(&enc);
    destroy(c);
}

static void test_predictor_vectors(void) {
    /* predictor 2, uint8, 2 samples per pixel: a row of 3 pixels */
    uint64_t shape1[3] = {1, 3, 2};
    zg_repr r = mk_repr("uint8", 3, shape1);
    zg_codec *c = NULL;
    CHECK_OK(mk(&zg_codec_tiff_predictor, "{\"predictor\": 2, \"row_samples\": 6, \"samples_per_pixel\": 2}", &r, &c));
    if (c) {
        const uint8_t enc[6] = {10, 200, 1, 100, 255, 0}, want[6] = {10, 200, 11, 44, 10, 44};
        uint8_t out[6];
        CHECK_OK(c->vt->decode_array(c, enc, out));
        CHECK(memcmp(out, want, 6) == 0);
        destroy(c);
    }
    /* predictor 3, float32: 1.0, 2.0 -> planes 3F 40 | 80 00 | 00 00 | 00 00, differenced */
    uint64_t shape2[2] = {1, 2};
    r = mk_repr("float32", 2, shape2);
    CHECK_OK(mk(&zg_codec_tiff_predictor, "{\"predictor\": 3, \"row_samples\": 2, \"samples_per_pixel\": 1}", &r, &c));
    if (c) {
        const uint8_t enc[8] = {0x3F, 0x01, 0x40, 0x80, 0, 0, 0, 0};
        float out[2];
        CHECK_OK(c->vt->decode_array(c, enc, (uint8_t *)out));
        CHECK(out[0] == 1.0f && out[1] == 2.0f);
        uint8_t back[8];
        CHECK_OK(c->vt->encode_array(c, (const uint8_t *)out, back));
        CHECK(memcmp(back, enc, 8) == 0);
        destroy(c);
    }
    /* bad configurations */
    r = mk_repr("uint8", 3, shape1);
    CHECK_STATUS(mk(&zg_codec_tiff_predictor, "{\"predictor\": 3, \"row_samples\": 6}", &r, &c), ZGPU_ERR_UNSUPPORTED);
    CHECK_STATUS(mk(&zg_codec_tiff_predictor, "{\"predictor\": 4, \"row_samples\": 6}", &r, &c), ZGPU_ERR_UNSUPPORTED);
    CHECK_STATUS(mk(&zg_codec_tiff_predictor, "{\"predictor\": 2, \"row_samples\": 4}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_tiff_predictor, "{\"predictor\": 2, \"row_samples\": 6, \"samples_per_pixel\": 4}", &r, &c),
                 ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_tiff_predictor, "{\"predictor\": 2}", &r, &c), ZGPU_ERR_BAD_METADATA);
}

/* Round trips of both predictors for every width and several samples per pixel, against a reference computed
 * here in the most direct way (per sample: the sum of the differences before it in its row and channel). */
static void test_predictor_roundtrip(void) {
    static const char *types[] = {"uint8", "int16", "uint32", "int64", "float16", "float32", "float64"};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (int pred = 2; pred <= 3; pred++)
            for (unsigned spp = 1; spp <= 5; spp += 2) {
                if (pred == 3 && ti < 4) continue;
                uint64_t shape[3] = {7, 13, spp};
                zg_repr r = mk_repr(types[ti], 3, shape);
                char conf[128];
                snprintf(conf, sizeof conf, "{\"predictor\": %d, \"row_samples\": %u, \"samples_per_pixel\": %u}", pred,
                         13 * spp, spp);
                zg_codec *c = NULL;
                CHECK_OK(mk(&zg_codec_tiff_predictor, conf, &r, &c));
                if (!c) continue;
                const size_t es = r.dtype.size, n = 7 * 13 * spp;
                uint8_t *x = malloc(n * es), *enc = malloc(n * es), *dec = malloc(n * es);
                for (size_t i = 0; i < n * es; i++) x[i] = (uint8_t)(rnd() >> 56);
                CHECK_OK(c->vt->encode_array(c, x, enc));
                CHECK_OK(c->vt->decode_array(c, enc, dec));
                CHECK_MSG(memcmp(x, dec, n * es) == 0, "%s predictor %d spp %u", types[ti], pred, spp);
                if (pred == 2) {
                    /* the first pixel of each row is stored as is; the next is the difference from it */
                    int ok = 1;
                    for (size_t row = 0; row < 7; row++) {
                        const size_t o = row * 13 * spp * es;
                        if (memcmp(enc + o, x + o, spp * es) != 0) ok = 0;
                        uint64_t a = 0, b = 0, d = 0;
                        memcpy(&a, x + o, es);
                        memcpy(&b, x + o + spp * es, es);
                        memcpy(&d, enc + o + spp * es, es);
                        uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
                        if (((b - a) & mask) != d) ok = 0;
                    }
                    CHECK_MSG(ok, "%s predictor 2 spp %u: differences", types[ti], spp);
                }
                free(x);
                free(enc);
                free(dec);
                destroy(c);
            }
}

static void test_lzma(void) {
    zg_codec *c = NULL;
    CHECK_OK(mk(&zg_codec_tiff_lzma, NULL, NULL, &c));
    if (!c) return;
    size_t n = 200000;
    uint8_t *x = malloc(n);
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)((i % 1000) ^ (i / 7000));
    zg_buf enc = ZG_BUF_INIT, out = ZG_BUF_INIT;
    CHECK_OK(c->vt->encode_bytes(c, x, n, &enc));
    CHECK_OK(c->vt->decode_bytes(c, enc.data, enc.size, &out, zg_out_exact(n)));
    CHECK(out.size == n && memcmp(out.data, x, n) == 0);
    CHECK_OK(c->vt->decode_bytes(c, enc.data, enc.size, &out, zg_out_upto(n)));
    CHECK(out.size == n);
    CHECK_STATUS(c->vt->decode_bytes(c, enc.data, enc.size, &out, zg_out_upto(n - 1)), ZGPU_ERR_CORRUPT_DATA);
    CHECK(strstr(zgpu_last_error(), "tiff_lzma") != NULL);
    CHECK_STATUS(c->vt->decode_bytes(c, enc.data, enc.size / 2, &out, zg_out_exact(n)), ZGPU_ERR_CORRUPT_DATA);
    enc.data[enc.size / 2] ^= 0x10;
    CHECK_STATUS(c->vt->decode_bytes(c, enc.data, enc.size, &out, zg_out_exact(n)), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(c->vt->decode_bytes(c, x, 100, &out, zg_out_exact(n)), ZGPU_ERR_CORRUPT_DATA);
    zg_buf_free(&enc);
    zg_buf_free(&out);
    free(x);
    destroy(c);
}

/* ---- JPEG: tables and an abbreviated image written with libjpeg, as libtiff writes them ---- */
static void b64(const uint8_t *p, size_t n, char *out) {
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out[k++] = al[v >> 18 & 63];
        out[k++] = al[v >> 12 & 63];
        out[k++] = i + 1 < n ? al[v >> 6 & 63] : '=';
        out[k++] = i + 2 < n ? al[v & 63] : '=';
    }
    out[k] = 0;
}

static void jpeg_pair(const uint8_t *img, unsigned w, unsigned h, int comps, uint8_t **tables, unsigned long *tn,
                      uint8_t **image, unsigned long *in) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    c.image_width = w;
    c.image_height = h;
    c.input_components = comps;
    c.in_color_space = comps == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 95, TRUE);
    *tables = NULL;
    *tn = 0;
    jpeg_mem_dest(&c, tables, tn);
    jpeg_write_tables(&c);
    *image = NULL;
    *in = 0;
    jpeg_mem_dest(&c, image, in);
    jpeg_suppress_tables(&c, TRUE);
    jpeg_start_compress(&c, FALSE);
    while (c.next_scanline < h) {
        JSAMPROW row = (JSAMPROW)(img + (size_t)c.next_scanline * w * comps);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
}

static void test_jpeg(void) {
    for (int comps = 1; comps <= 3; comps += 2) {
        const unsigned w = 32, h = 24;
        uint8_t img[32 * 24 * 3];
        for (unsigned y = 0; y < h; y++)
            for (unsigned x = 0; x < w; x++)
                for (int k = 0; k < comps; k++) img[(y * w + x) * comps + k] = (uint8_t)(x * 4 + y * 2 + k * 30);
        uint8_t *tables, *image;
        unsigned long tn, in;
        jpeg_pair(img, w, h, comps, &tables, &tn, &image, &in);
        char *tb = malloc(tn * 2 + 8), conf[4096];
        b64(tables, tn, tb);
        snprintf(conf, sizeof conf, "{\"tables\": \"%s\", \"photometric\": %d, \"samples_per_pixel\": %d}", tb,
                 comps == 3 ? 6 : 1, comps);
        uint64_t shape[3] = {h, w, (uint64_t)comps};
        zg_repr r = mk_repr("uint8", comps == 3 ? 3 : 2, shape);
        zg_codec *c = NULL;
        CHECK_OK(mk(&zg_codec_tiff_jpeg, conf, &r, &c));
        if (c) {
            zg_buf out = ZG_BUF_INIT;
            const size_t n = (size_t)w * h * comps;
            CHECK_OK(c->vt->decode_bytes(c, image, in, &out, zg_out_exact(n)));
            int worst = 0;
            for (size_t i = 0; i < n && out.size == n; i++) {
                int d = abs((int)out.data[i] - (int)img[i]);
                if (d > worst) worst = d;
            }
            CHECK_MSG(out.size == n && worst <= 6, "jpeg %d components: max error %d", comps, worst);
            /* without the tables the abbreviated stream cannot decode */
            zg_codec *bare = NULL;
            char conf2[128];
            snprintf(conf2, sizeof conf2, "{\"photometric\": %d, \"samples_per_pixel\": %d}", comps == 3 ? 6 : 1, comps);
            CHECK_OK(mk(&zg_codec_tiff_jpeg, conf2, &r, &bare));
            if (bare) CHECK_STATUS(bare->vt->decode_bytes(bare, image, in, &out, zg_out_exact(n)), ZGPU_ERR_CORRUPT_DATA);
            destroy(bare);
            /* truncated and damaged streams: errors, not exits */
            CHECK_STATUS(c->vt->decode_bytes(c, image, in / 2, &out, zg_out_exact(n)), ZGPU_ERR_CORRUPT_DATA);
            CHECK(strstr(zgpu_last_error(), "tiff_jpeg") != NULL);
            for (int t = 0; t < 50; t++) {
                uint8_t *copy = malloc(in);
                memcpy(copy, image, in);
                copy[rnd() % in] ^= (uint8_t)(1u << (rnd() % 8));
                (void)c->vt->decode_bytes(c, copy, in, &out, zg_out_exact(n));
                free(copy);
            }
            /* a chunk of another width */
            uint64_t other[3] = {h, w + 8, (uint64_t)comps};
            zg_repr r2 = mk_repr("uint8", comps == 3 ? 3 : 2, other);
            zg_codec *c2 = NULL;
            CHECK_OK(mk(&zg_codec_tiff_jpeg, conf, &r2, &c2));
            if (c2) CHECK_STATUS(c2->vt->decode_bytes(c2, image, in, &out, zg_out_exact(zg_repr_nbytes(&r2))),
                                 ZGPU_ERR_CORRUPT_DATA);
            destroy(c2);
            zg_buf_free(&out);
            destroy(c);
        }
        CHECK_STATUS(mk(&zg_codec_tiff_jpeg, "{\"tables\": \"@@@\"}", &r, &c), ZGPU_ERR_BAD_METADATA);
        free(tb);
        free(tables);
        free(image);
    }
}

/* A stripped page's chain: predictor 2 -> bytes(big) -> tiff_short_strip -> tiff_lzw; the short last strip (3 of
 * 5 rows) pads, a strip of any other size fails. */
static void test_short_strip_chain(void) {
    const char *codecs = "[{\"name\": \"tiff_predictor\", \"configuration\": {\"predictor\": 2, \"row_samples\": 8, "
                         "\"samples_per_pixel\": 1}},"
                         " {\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}},"
                         " {\"name\": \"tiff_short_strip\", \"configuration\": {\"short_bytes\": 48}},"
                         " {\"name\": \"tiff_lzw\"}]";
    zj_value *cv = NULL;
    CHECK_OK(zj_parse(codecs, strlen(codecs), "codecs", &cv));
    uint64_t shape[2] = {5, 8};
    zg_repr r = mk_repr("uint16", 2, shape);
    zg_chain *ch = NULL;
    CHECK_OK(zg_chain_create(cv, &r, &ch));
    zj_free(cv);
    if (!ch) return;
    uint16_t x[40], back[40];
    for (int i = 0; i < 40; i++) x[i] = (uint16_t)(1000 + 37 * i * i);
    zg_buf enc = ZG_BUF_INIT;
    zg_scratch s = ZG_SCRATCH_INIT;
    CHECK_OK(zg_chain_encode(ch, (const uint8_t *)x, &enc, &s));
    CHECK_OK(zg_chain_decode(ch, enc.data, enc.size, (uint8_t *)back, &s));
    CHECK(memcmp(back, x, sizeof x) == 0);
    /* the short strip: 3 rows, encoded by hand (big-endian differences, LZW) */
    uint8_t raw[48];
    for (int row = 0; row < 3; row++)
        for (int i = 0; i < 8; i++) {
            uint16_t d = (uint16_t)(x[row * 8 + i] - (i ? x[row * 8 + i - 1] : 0));
            raw[(row * 8 + i) * 2] = (uint8_t)(d >> 8);
            raw[(row * 8 + i) * 2 + 1] = (uint8_t)d;
        }
    zg_buf lz = ZG_BUF_INIT;
    CHECK_OK(zg_tiff_lzw_encode(raw, 48, &lz, 0));
    memset(back, 0xEE, sizeof back);
    CHECK_OK(zg_chain_decode(ch, lz.data, lz.size, (uint8_t *)back, &s));
    CHECK(memcmp(back, x, 48) == 0);
    CHECK(back[24] == 0 && back[39] == 0);
    lz.size = 0;
    CHECK_OK(zg_tiff_lzw_encode(raw, 46, &lz, 0));
    CHECK_STATUS(zg_chain_decode(ch, lz.data, lz.size, (uint8_t *)back, &s), ZGPU_ERR_CORRUPT_DATA);
    CHECK(strstr(zgpu_last_error(), "tiff_short_strip") != NULL);
    zg_buf_free(&lz);
    zg_buf_free(&enc);
    zg_scratch_free(&s);
    zg_chain_free(ch);
}

int main(void) {
    test_lzw_widths();
    test_lzw_known();
    test_lzw_roundtrip();
    test_lzw_bomb();
    test_packbits();
    test_predictor_vectors();
    test_predictor_roundtrip();
    test_lzma();
    test_jpeg();
    test_short_strip_chain();
    TEST_MAIN_END();
}
