/* Filter and serializer codecs: bytes, transpose, crc32c, numcodecs delta / shuffle / fixedscaleoffset.
 * Known vectors (crc32c from RFC 3720; numcodecs outputs embedded below), round trips across data types,
 * bad configurations and corrupt inputs. */
#include <math.h>
#include "test.h"
#include "codec/bytes.h"
#include "codec/chain.h"
#include "codec/codec.h"
#include "codec/crc32c.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_transpose, zg_codec_delta, zg_codec_shuffle, zg_codec_fixedscaleoffset;

typedef struct filter_vec {
    const char *name, *conf, *dtype; /* dtype: the decoded (array-side) v3 type */
    size_t count;
    const char *in, *enc;
    size_t enc_len;
    const char *dec;
} filter_vec;

/* Generated with numcodecs 0.16.6 / numpy 2.4 (Delta and FixedScaleOffset encode + decode). */
static const filter_vec delta_vecs[] = {
    {"i2->i1", "{\"dtype\": \"<i2\", \"astype\": \"|i1\"}", "int16", 10,
     "\x64\x00\x66\x00\x68\x00\x6a\x00\x6c\x00\x6e\x00\x70\x00\x72\x00\x74\x00\x76\x00",
     "\x64\x02\x02\x02\x02\x02\x02\x02\x02\x02", 10,
     "\x64\x00\x66\x00\x68\x00\x6a\x00\x6c\x00\x6e\x00\x70\x00\x72\x00\x74\x00\x76\x00"},
    {"u1->i2 (diff wraps in u1)", "{\"dtype\": \"|u1\", \"astype\": \"<i2\"}", "uint8", 4,
     "\x0a\x05\xfa\x03",
     "\x0a\x00\xfb\x00\xf5\x00\x09\x00", 8,
     "\x0a\x05\xfa\x03"},
    {"f4->f8", "{\"dtype\": \"<f4\", \"astype\": \"<f8\"}", "float32", 4,
     "\x00\x00\xc0\x3f\x00\x00\x10\x40\xca\xf2\x49\x71\x00\x00\x40\x40",
     "\x00\x00\x00\x00\x00\x00\xf8\x3f\x00\x00\x00\x00\x00\x00\xe8\x3f\x00\x00\x00\x40\x59\x3e\x29\x46\x00\x00\x00\x40\x59\x3e\x29\xc6", 32,
     "\x00\x00\xc0\x3f\x00\x00\x10\x40\xca\xf2\x49\x71\x00\x00\x00\x00"},
    {"i4->f4 (sum in f8)", "{\"dtype\": \"<i4\", \"astype\": \"<f4\"}", "int32", 4,
     "\x01\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x01\x03\x00\x00\x00",
     "\x00\x00\x80\x3f\x00\x00\x80\x3f\xff\xff\x7f\x4b\xfe\xff\x7f\xcb", 16,
     "\x01\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x01\x03\x00\x00\x00"},
    {"f8->f4", "{\"dtype\": \"<f8\", \"astype\": \"<f4\"}", "float64", 4,
     "\x9a\x99\x99\x99\x99\x99\xb9\x3f\x33\x33\x33\x33\x33\x33\xd3\x3f\x9a\x99\x05\x20\x5f\xa0\x02\x42\x00\x00\x00\x00\x00\x00\x14\x40",
     "\xcd\xcc\xcc\x3d\xcd\xcc\x4c\x3e\xf9\x02\x15\x50\xf9\x02\x15\xd0", 16,
     "\x00\x00\x00\xa0\x99\x99\xb9\x3f\x00\x00\x00\x38\x33\x33\xd3\x3f\x66\x66\x02\x20\x5f\xa0\x02\x42\x00\x00\x00\x00\x30\x33\xd3\x3f"},
    {"f2", "{\"dtype\": \"<f2\", \"astype\": \"<f2\"}", "float16", 5,
     "\x66\x2e\x66\x32\xcd\x34\xef\x7b\x80\xc7",
     "\x66\x2e\x66\x2e\x68\x2e\xef\x7b\xef\xfb", 10,
     "\x66\x2e\x66\x32\xcd\x34\xef\x7b\x00\x00"},
    {"i8->u8 (sum in f8)", "{\"dtype\": \"<i8\", \"astype\": \"<u8\"}", "int64", 4,
     "\xfb\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x80\x07\x00\x00\x00\x00\x00\x00\x00",
     "\xfb\xff\xff\xff\xff\xff\xff\xff\x05\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x40\x07\x00\x00\x00\x00\x00\x00\x80", 32,
     "\x00\x00\x00\x00\x00\x00\x00\x80\x00\x00\x00\x00\x00\x00\x00\x80\x00\x00\x00\x00\x00\x00\x00\x80\x00\x00\x00\x00\x00\x00\x00\x80"},
    {"u4->f2 (overflow to inf)", "{\"dtype\": \"<u4\", \"astype\": \"<f2\"}", "uint32", 4,
     "\x01\x00\x00\x00\x02\x00\x00\x00\xb8\x0b\x00\x00\x03\x00\x00\x00",
     "\x00\x3c\x00\x3c\xdb\x69\x00\x7c", 8,
     "\x01\x00\x00\x00\x02\x00\x00\x00\xb8\x0b\x00\x00\x00\x00\x00\x00"},
    {"i2->u1", "{\"dtype\": \"<i2\", \"astype\": \"|u1\"}", "int16", 5,
     "\x2c\x01\xfe\xff\x07\x00\xe8\x03\x18\xfc",
     "\x2c\xd2\x09\xe1\x30", 5,
     "\x2c\x00\xfe\x00\x07\x01\xe8\x01\x18\x02"},
    {"f4->i2", "{\"dtype\": \"<f4\", \"astype\": \"<i2\"}", "float32", 4,
     "\x9a\x99\xd9\x3f\xcd\xcc\x0c\x40\x9a\x99\x79\xc0\x00\x00\x40\x40",
     "\x01\x00\x00\x00\xfa\xff\x06\x00", 8,
     "\x00\x00\x80\x3f\x00\x00\x80\x3f\x00\x00\xa0\xc0\x00\x00\x80\x3f"},
    {"u2", "{\"dtype\": \"<u2\", \"astype\": \"<u2\"}", "uint16", 5,
     "\x00\x00\xff\xff\x01\x00\xff\xff\x00\x00",
     "\x00\x00\xff\xff\x02\x00\xfe\xff\x01\x00", 10,
     "\x00\x00\xff\xff\x01\x00\xff\xff\x00\x00"},
};
static const filter_vec fso_vecs[] = {
    {"numcodecs doc example", "{\"offset\": 1000, \"scale\": 10, \"dtype\": \"<f8\", \"astype\": \"|u1\"}", "float64", 10,
     "\x00\x00\x00\x00\x00\x40\x8f\x40\x8e\xe3\x38\x8e\xe3\x40\x8f\x40\x1c\xc7\x71\x1c\xc7\x41\x8f\x40\xab\xaa\xaa\xaa\xaa\x42\x8f\x40\x39\x8e\xe3\x38\x8e\x43\x8f\x40\xc7\x71\x1c\xc7\x71\x44\x8f\x40\x55\x55\x55\x55\x55\x45\x8f\x40\xe4\x38\x8e\xe3\x38\x46\x8f\x40\x72\x1c\xc7\x71\x1c\x47\x8f\x40\x00\x00\x00\x00\x00\x48\x8f\x40",
     "\x00\x01\x02\x03\x04\x06\x07\x08\x09\x0a", 10,
     "\x00\x00\x00\x00\x00\x40\x8f\x40\xcd\xcc\xcc\xcc\xcc\x40\x8f\x40\x9a\x99\x99\x99\x99\x41\x8f\x40\x66\x66\x66\x66\x66\x42\x8f\x40\x33\x33\x33\x33\x33\x43\x8f\x40\xcd\xcc\xcc\xcc\xcc\x44\x8f\x40\x9a\x99\x99\x99\x99\x45\x8f\x40\x66\x66\x66\x66\x66\x46\x8f\x40\x33\x33\x33\x33\x33\x47\x8f\x40\x00\x00\x00\x00\x00\x48\x8f\x40"},
    {"f4 with float scale", "{\"offset\": 0.25, \"scale\": 2.0, \"dtype\": \"<f4\", \"astype\": \"<i2\"}", "float32", 7,
     "\x00\x00\x00\x3f\x00\x00\xc0\x3f\x00\x00\x20\x40\x00\x00\x00\xbf\xd0\x0f\x49\x40\x4d\xf8\x2d\xc0\x00\x80\xc8\x42",
     "\x00\x00\x02\x00\x04\x00\xfe\xff\x06\x00\xfa\xff\xc8\x00", 14,
     "\x00\x00\x80\x3e\x00\x00\xa0\x3f\x00\x00\x10\x40\x00\x00\x40\xbf\x00\x00\x50\x40\x00\x00\x30\xc0\x00\x80\xc8\x42"},
    {"round half to even", "{\"offset\": 0, \"scale\": 1, \"dtype\": \"<f8\", \"astype\": \"<i4\"}", "float64", 6,
     "\x00\x00\x00\x00\x00\x00\xe0\x3f\x00\x00\x00\x00\x00\x00\xf8\x3f\x00\x00\x00\x00\x00\x00\x04\x40\x00\x00\x00\x00\x00\x00\xe0\xbf\x00\x00\x00\x00\x00\x00\xf8\xbf\x00\x00\x00\x00\x00\x00\x0c\x40",
     "\x00\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\xfe\xff\xff\xff\x04\x00\x00\x00", 24,
     "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x10\x40"},
    {"i2, integer offset and scale (wraps)", "{\"offset\": 1000, \"scale\": 3, \"dtype\": \"<i2\", \"astype\": \"<i2\"}", "int16", 5,
     "\xe8\x03\xed\x03\xff\x7f\x00\x80\x07\x00",
     "\x00\x00\x0f\x00\x45\x74\x48\x74\x5d\xf4", 10,
     "\xe8\x03\xed\x03\xa9\x2a\xaa\x2a\x07\x00"},
    {"i2, float offset and scale", "{\"offset\": 1000.5, \"scale\": 0.5, \"dtype\": \"<i2\", \"astype\": \"<i4\"}", "int16", 5,
     "\xe8\x03\xed\x03\xff\x7f\x00\x80\x07\x00",
     "\x00\x00\x00\x00\x02\x00\x00\x00\x0b\x3e\x00\x00\x0c\xbe\xff\xff\x0f\xfe\xff\xff", 20,
     "\xe8\x03\xec\x03\xfe\x7f\x01\x80\x06\x00"},
    {"f8->f4", "{\"offset\": 1.5, \"scale\": 3.0, \"dtype\": \"<f8\", \"astype\": \"<f4\"}", "float64", 4,
     "\x00\x00\x00\x00\x00\x00\xf0\x3f\x1b\xcb\xb9\xe9\xd6\xfc\x00\x40\x00\x00\x00\x00\xc0\x5c\x15\xc1\xfc\xa9\xf1\xd2\x4d\x62\x50\x3f",
     "\x00\x00\x00\xc0\x00\x00\x00\x40\xa0\x2c\x80\xc9\x00\x00\x80\xc0", 16,
     "\x00\x00\x00\xa0\xaa\xaa\xea\x3f\x00\x00\x00\x60\x55\x55\x01\x40\x00\x00\x00\x60\xbf\x5c\x15\xc1\x00\x00\x00\x00\x55\x55\xc5\x3f"},
    {"f2->i1", "{\"offset\": 0.5, \"scale\": 4, \"dtype\": \"<f2\", \"astype\": \"|i1\"}", "float16", 4,
     "\x00\x3c\x00\x41\x80\xc2\x40\x56",
     "\x02\x08\xf1\x8e", 4,
     "\x00\x3c\x00\x41\x80\xc2\x00\xcf"},
    {"u2->u1", "{\"offset\": 0, \"scale\": 0.5, \"dtype\": \"<u2\", \"astype\": \"|u1\"}", "uint16", 4,
     "\x00\x00\x64\x00\xc8\x00\x2c\x01",
     "\x00\x32\x64\x96", 4,
     "\x00\x00\x64\x00\xc8\x00\x2c\x01"},
    {"f8->u2 negative scale", "{\"offset\": 10, \"scale\": -4, \"dtype\": \"<f8\", \"astype\": \"<u2\"}", "float64", 4,
     "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf4\xbf\x00\x00\x00\x00\x00\x00\x04\xc0\x00\x00\x00\x00\x00\x00\x1f\x40",
     "\x28\x00\x2d\x00\x32\x00\x09\x00", 8,
     "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf4\xbf\x00\x00\x00\x00\x00\x00\x04\xc0\x00\x00\x00\x00\x00\x00\x1f\x40"},
    {"i4, int offset float scale", "{\"offset\": 5, \"scale\": 0.25, \"dtype\": \"<i4\", \"astype\": \"<i2\"}", "int32", 4,
     "\x05\x00\x00\x00\x09\x00\x00\x00\xfd\xff\xff\xff\xa0\x86\x01\x00",
     "\x00\x00\x01\x00\xfe\xff\xa7\x61", 8,
     "\x05\x00\x00\x00\x09\x00\x00\x00\xfd\xff\xff\xff\xa1\x86\x01\x00"},
};
static const filter_vec shuffle_vecs[] = {
    {"elementsize 4", "{\"elementsize\": 4}", "uint8", 12,
     "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c",
     "\x01\x05\x09\x02\x06\x0a\x03\x07\x0b\x04\x08\x0c", 12,
     "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"},
    {"elementsize 3", "{\"elementsize\": 3}", "uint8", 15,
     "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
     "\x01\x04\x07\x0a\x0d\x02\x05\x08\x0b\x0e\x03\x06\x09\x0c\x0f", 15,
     "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"},
    {"elementsize 8", "{\"elementsize\": 8}", "uint8", 16,
     "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
     "\x00\x08\x01\x09\x02\x0a\x03\x0b\x04\x0c\x05\x0d\x06\x0e\x07\x0f", 16,
     "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"},
    {"elementsize 2", "{\"elementsize\": 2}", "uint8", 6,
     "\x00\x01\x02\x03\x04\x05",
     "\x00\x02\x04\x01\x03\x05", 6,
     "\x00\x01\x02\x03\x04\x05"},
    {"elementsize 1", "{\"elementsize\": 1}", "uint8", 5,
     "\x00\x01\x02\x03\x04",
     "\x00\x01\x02\x03\x04", 5,
     "\x00\x01\x02\x03\x04"},
    {"elementsize 5", "{\"elementsize\": 5}", "uint8", 20,
     "\x00\x07\x0e\x15\x1c\x23\x2a\x31\x38\x3f\x46\x4d\x54\x5b\x62\x69\x70\x77\x7e\x85",
     "\x00\x23\x46\x69\x07\x2a\x4d\x70\x0e\x31\x54\x77\x15\x38\x5b\x7e\x1c\x3f\x62\x85", 20,
     "\x00\x07\x0e\x15\x1c\x23\x2a\x31\x38\x3f\x46\x4d\x54\x5b\x62\x69\x70\x77\x7e\x85"},
};

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { /* xorshift64*: deterministic test data */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
static void fill_random(uint8_t *p, size_t n) { for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(rnd() >> 56); }

static zg_repr mk_repr(const char *dtype, int ndim, const uint64_t *shape) {
    zg_repr r;
    memset(&r, 0, sizeof r);
    if (!zg_dtype_from_name(dtype, &r.dtype)) { fprintf(stderr, "unknown dtype %s\n", dtype); exit(2); }
    r.ndim = ndim;
    for (int i = 0; i < ndim; i++) r.shape[i] = shape[i];
    return r;
}

/* Creates a codec from a configuration given as JSON text (NULL: no configuration). */
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

/* The codec's to_json, serialised compactly; caller frees. */
static char *json_of(const zg_codec *c, int v2) {
    zj_value *j = v2 ? c->vt->to_json_v2(c) : c->vt->to_json(c);
    char *s = j ? zj_write(j, 0) : NULL;
    zj_free(j);
    return s;
}

/* ------------------------------------------------------------------------------------------------ */
static void test_crc32c(void) {
    const char *digits = "123456789";
    CHECK_EQ_U64(zg_crc32c(0, digits, 9), 0xE3069283u);
    CHECK_EQ_U64(zg_crc32c_portable(0, digits, 9), 0xE3069283u);
    CHECK_EQ_U64(zg_crc32c(0, "", 0), 0);
    /* RFC 3720 B.4 test vectors */
    uint8_t buf[32];
    memset(buf, 0, 32);
    CHECK_EQ_U64(zg_crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, 32);
    CHECK_EQ_U64(zg_crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
    CHECK_EQ_U64(zg_crc32c(0, buf, 32), 0x46DD794Eu);
    CHECK_EQ_U64(zg_crc32c_portable(0, buf, 32), 0x46DD794Eu);
    /* incremental == one shot */
    CHECK_EQ_U64(zg_crc32c(zg_crc32c(0, digits, 4), digits + 4, 5), 0xE3069283u);
    /* hardware and table paths agree at every length and alignment */
    uint8_t big[1100];
    fill_random(big, sizeof big);
    int mismatches = 0;
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n < 1050; n += (n < 40 ? 1 : 37))
            if (zg_crc32c(0, big + off, n) != zg_crc32c_portable(0, big + off, n)) mismatches++;
    CHECK_EQ_U64(mismatches, 0);

    /* the codec: data + 4 bytes LE */
    uint64_t shape[1] = {9};
    zg_repr r = mk_repr("uint8", 1, shape);
    zg_codec *c = NULL;
    CHECK_OK(mk(&zg_codec_crc32c, NULL, &r, &c));
    if (!c) return;
    zg_buf enc = ZG_BUF_INIT, dec = ZG_BUF_INIT;
    CHECK_OK(c->vt->encode_bytes(c, (const uint8_t *)digits, 9, &enc));
    CHECK_EQ_U64(enc.size, 13);
    CHECK(enc.size == 13 && memcmp(enc.data, "123456789\x83\x92\x06\xE3", 13) == 0);
    CHECK_OK(c->vt->decode_bytes(c, enc.data, enc.size, &dec, zg_out_exact(9)));
    CHECK(dec.size == 9 && memcmp(dec.data, digits, 9) == 0);
    CHECK_OK(c->vt->decode_bytes(c, enc.data, enc.size, &dec, ZG_OUT_ANY));
    CHECK_STATUS(c->vt->decode_bytes(c, enc.data, enc.size, &dec, zg_out_exact(8)), ZGPU_ERR_CORRUPT_DATA);
    enc.data[3] ^= 0x10; /* one flipped bit */
    CHECK_STATUS(c->vt->decode_bytes(c, enc.data, enc.size, &dec, zg_out_exact(9)), ZGPU_ERR_CORRUPT_DATA);
    CHECK(strstr(zgpu_last_error(), "checksum mismatch") != NULL);
    enc.data[3] ^= 0x10;
    enc.data[12] ^= 0x01; /* corrupt checksum */
    CHECK_STATUS(c->vt->decode_bytes(c, enc.data, enc.size, &dec, zg_out_exact(9)), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(c->vt->decode_bytes(c, enc.data, 3, &dec, ZG_OUT_ANY), ZGPU_ERR_CORRUPT_DATA);
    /* the empty payload */
    CHECK_OK(c->vt->encode_bytes(c, NULL, 0, &enc));
    CHECK(enc.size == 4 && memcmp(enc.data, "\0\0\0\0", 4) == 0);
    CHECK_OK(c->vt->decode_bytes(c, enc.data, 4, &dec, zg_out_exact(0)));
    CHECK_EQ_U64(dec.size, 0);
    /* fixed output too small */
    CHECK_OK(c->vt->encode_bytes(c, (const uint8_t *)digits, 9, &enc));
    uint8_t small[4];
    zg_buf fixed = zg_buf_wrap(small, sizeof small);
    CHECK_STATUS(c->vt->decode_bytes(c, enc.data, enc.size, &fixed, ZG_OUT_ANY), ZGPU_ERR_CORRUPT_DATA);
    char *j = json_of(c, 0);
    CHECK_STR(j, "{\"name\": \"crc32c\"}");
    free(j);
    zg_buf_free(&enc);
    zg_buf_free(&dec);
    destroy(c);
    CHECK_STATUS(mk(&zg_codec_crc32c, "[1]", &r, &c), ZGPU_ERR_BAD_METADATA);
}

/* ------------------------------------------------------------------------------------------------ */
static const char *all_dtypes[] = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                   "uint64", "float16", "float32", "float64", "complex64", "complex128"};

static void test_bytes(void) {
    uint64_t shape[1] = {3};
    zg_repr r = mk_repr("int32", 1, shape);
    zg_codec *c = NULL;
    CHECK_OK(mk(&zg_codec_bytes, "{\"endian\": \"big\"}", &r, &c));
    if (!c) return;
    int32_t v[3] = {1, 0x01020304, -2};
    zg_buf out = ZG_BUF_INIT;
    CHECK_OK(c->vt->encode_from_array(c, (const uint8_t *)v, &out));
    CHECK(out.size == 12 && memcmp(out.data, "\0\0\0\1\1\2\3\4\xff\xff\xff\xfe", 12) == 0);
    /* encode appends */
    CHECK_OK(c->vt->encode_from_array(c, (const uint8_t *)v, &out));
    CHECK(out.size == 24 && memcmp(out.data + 12, "\0\0\0\1\1\2\3\4\xff\xff\xff\xfe", 12) == 0);
    int32_t back[3] = {0};
    CHECK_OK(c->vt->decode_to_array(c, out.data, 12, (uint8_t *)back));
    CHECK(memcmp(back, v, sizeof v) == 0);
    CHECK_STATUS(c->vt->decode_to_array(c, out.data, 11, (uint8_t *)back), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(c->vt->decode_to_array(c, out.data, 16, (uint8_t *)back), ZGPU_ERR_CORRUPT_DATA);
    CHECK(!zg_bytes_is_native(c));
    char *j = json_of(c, 0);
    CHECK_STR(j, "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}");
    free(j);
    destroy(c);

    CHECK_OK(mk(&zg_codec_bytes, "{\"endian\": \"little\"}", &r, &c));
    CHECK(c && zg_bytes_is_native(c));
    destroy(c);
    /* complex: each part swapped separately */
    zg_repr rc = mk_repr("complex64", 1, shape);
    CHECK_OK(mk(&zg_codec_bytes, "{\"endian\": \"big\"}", &rc, &c));
    if (c) {
        float z[2 * 3] = {1.0f, 2.0f, -0.5f, 0.0f, 3.0f, 4.0f};
        out.size = 0;
        CHECK_OK(c->vt->encode_from_array(c, (const uint8_t *)z, &out));
        CHECK(out.size == 24 && memcmp(out.data, "\x3f\x80\0\0\x40\0\0\0\xbf\0\0\0\0\0\0\0", 16) == 0);
        destroy(c);
    }
    /* 1-byte types need no endian; multi-byte ones do */
    zg_repr r8 = mk_repr("uint8", 1, shape);
    CHECK_OK(mk(&zg_codec_bytes, NULL, &r8, &c));
    if (c) {
        CHECK(zg_bytes_is_native(c));
        j = json_of(c, 0);
        CHECK_STR(j, "{\"name\": \"bytes\"}");
        free(j);
        destroy(c);
    }
    CHECK_STATUS(mk(&zg_codec_bytes, NULL, &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_bytes, "{}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_bytes, "{\"endian\": \"middle\"}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_bytes, "{\"endian\": 1}", &r, &c), ZGPU_ERR_BAD_METADATA);

    /* every data type, both byte orders: big-endian output reverses each swap unit; round trip exact */
    uint64_t sh2[2] = {5, 7};
    for (size_t t = 0; t < sizeof all_dtypes / sizeof *all_dtypes; t++) {
        zg_repr rt = mk_repr(all_dtypes[t], 2, sh2);
        size_t nb = (size_t)zg_repr_nbytes(&rt);
        uint32_t unit = zg_dtype_swap_unit(&rt.dtype);
        uint8_t *src = malloc(nb), *dst = malloc(nb);
        fill_random(src, nb);
        for (int big = 0; big < 2; big++) {
            zg_codec *b = NULL;
            CHECK_OK(mk(&zg_codec_bytes, big ? "{\"endian\": \"big\"}" : "{\"endian\": \"little\"}", &rt, &b));
            if (!b) continue;
            out.size = 0;
            CHECK_OK(b->vt->encode_from_array(b, src, &out));
            CHECK_EQ_U64(out.size, nb);
            int wrong = 0;
            for (size_t k = 0; k < nb; k++) {
                size_t unit_start = k / unit * unit, within = k % unit;
                uint8_t want = big ? src[unit_start + unit - 1 - within] : src[k];
                if (out.data[k] != want) wrong++;
            }
            CHECK_MSG(wrong == 0, "%s big=%d: %d bytes wrong", all_dtypes[t], big, wrong);
            memset(dst, 0, nb);
            CHECK_OK(b->vt->decode_to_array(b, out.data, out.size, dst));
            CHECK_MSG(memcmp(src, dst, nb) == 0, "%s big=%d round trip", all_dtypes[t], big);
            destroy(b);
        }
        free(src);
        free(dst);
    }
    zg_buf_free(&out);
}

/* ------------------------------------------------------------------------------------------------ */
/* Reference: encoded[j] = decoded[x] with x[order[i]] = j[i]. */
static void naive_transpose(const uint8_t *in, uint8_t *out, int nd, const uint64_t *dshape, const int *order,
                            size_t es) {
    uint64_t eshape[ZGPU_MAX_DIMS], n = 1;
    for (int i = 0; i < nd; i++) { eshape[i] = dshape[order[i]]; n *= dshape[i]; }
    for (uint64_t e = 0; e < n; e++) {
        uint64_t rem = e, x[ZGPU_MAX_DIMS];
        for (int i = nd - 1; i >= 0; i--) { x[order[i]] = rem % eshape[i]; rem /= eshape[i]; }
        uint64_t flat = 0;
        for (int k = 0; k < nd; k++) flat = flat * dshape[k] + x[k];
        memcpy(out + e * es, in + flat * es, es);
    }
}

static void check_transpose(const char *dtype_name, uint32_t raw_size, int nd, const uint64_t *shape, const int *order) {
    zg_repr r;
    if (raw_size) {
        memset(&r, 0, sizeof r);
        r.ndim = nd;
        for (int i = 0; i < nd; i++) r.shape[i] = shape[i];
        r.dtype.id = ZGPU_RAW;
        r.dtype.size = raw_size;
        snprintf(r.dtype.name, sizeof r.dtype.name, "r%u", raw_size * 8);
    } else {
        r = mk_repr(dtype_name, nd, shape);
    }
    char conf[256];
    int p = snprintf(conf, sizeof conf, "{\"order\": [");
    for (int i = 0; i < nd; i++) p += snprintf(conf + p, sizeof conf - (size_t)p, "%s%d", i ? ", " : "", order[i]);
    snprintf(conf + p, sizeof conf - (size_t)p, "]}");
    zg_codec *c = NULL;
    CHECK_OK(mk(&zg_codec_transpose, conf, &r, &c));
    if (!c) return;
    for (int i = 0; i < nd; i++) CHECK_EQ_U64(c->encoded.shape[i], shape[order[i]]);
    size_t es = r.dtype.size, nb = (size_t)zg_repr_nbytes(&r);
    uint8_t *src = malloc(nb + 1), *enc = malloc(nb + 1), *ref = malloc(nb + 1), *dec = malloc(nb + 1);
    fill_random(src, nb);
    naive_transpose(src, ref, nd, shape, order, es);
    CHECK_OK(c->vt->encode_array(c, src, enc));
    CHECK_MSG(memcmp(enc, ref, nb) == 0, "transpose encode %s %s", r.dtype.name, conf);
    memset(dec, 0, nb);
    CHECK_OK(c->vt->decode_array(c, enc, dec));
    CHECK_MSG(memcmp(dec, src, nb) == 0, "transpose decode %s %s", r.dtype.name, conf);
    free(src); free(enc); free(ref); free(dec);
    destroy(c);
}

static void test_transpose(void) {
    /* a fixed 2 x 3 example */
    uint64_t s23[2] = {2, 3};
    zg_repr r = mk_repr("int16", 2, s23);
    zg_codec *c = NULL;
    CHECK_OK(mk(&zg_codec_transpose, "{\"order\": [1, 0]}", &r, &c));
    if (c) {
        int16_t v[6] = {0, 1, 2, 3, 4, 5}, e[6], d[6];
        const int16_t want[6] = {0, 3, 1, 4, 2, 5};
        CHECK_OK(c->vt->encode_array(c, (const uint8_t *)v, (uint8_t *)e));
        CHECK(memcmp(e, want, sizeof e) == 0);
        CHECK_OK(c->vt->decode_array(c, (const uint8_t *)e, (uint8_t *)d));
        CHECK(memcmp(d, v, sizeof d) == 0);
        CHECK_EQ_U64(c->encoded.shape[0], 3);
        CHECK_EQ_U64(c->encoded.shape[1], 2);
        char *j = json_of(c, 0);
        CHECK_STR(j, "{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}");
        free(j);
        destroy(c);
    }
    /* every permutation of 3 axes, element sizes 1..16 and a 3-byte raw type */
    static const int perms3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    uint64_t s3[3] = {4, 5, 6};
    const char *types[] = {"uint8", "int16", "float32", "float64", "complex128"};
    for (int p = 0; p < 6; p++) {
        for (int t = 0; t < 5; t++) check_transpose(types[t], 0, 3, s3, perms3[p]);
        check_transpose(NULL, 3, 3, s3, perms3[p]);
    }
    /* 2-d larger than a tile, ragged edges */
    uint64_t s2[2] = {70, 45};
    int o2[2] = {1, 0};
    check_transpose("float64", 0, 2, s2, o2);
    check_transpose("uint8", 0, 2, s2, o2);
    check_transpose(NULL, 5, 2, s2, o2);
    /* 4-d and 5-d */
    uint64_t s4[4] = {3, 4, 5, 6};
    int o4[4] = {3, 1, 0, 2};
    check_transpose("int32", 0, 4, s4, o4);
    uint64_t s5[5] = {2, 3, 1, 4, 5};
    int o5[5] = {4, 2, 0, 3, 1};
    check_transpose("uint16", 0, 5, s5, o5);
    /* 1-d identity */
    uint64_t s1[1] = {17};
    int o1[1] = {0};
    check_transpose("int64", 0, 1, s1, o1);

    CHECK_STATUS(mk(&zg_codec_transpose, "{\"order\": [0, 0]}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_transpose, "{\"order\": [0, 2]}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_transpose, "{\"order\": [0]}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_transpose, "{\"order\": [1, -1]}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_transpose, "{\"order\": \"C\"}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_transpose, "{}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_transpose, NULL, &r, &c), ZGPU_ERR_BAD_METADATA);
}

/* ------------------------------------------------------------------------------------------------ */
/* Runs a table of numcodecs vectors through an array->array codec: encode(in) == enc, decode(enc) == dec. */
static void run_array_vectors(const zg_codec_vtable *vt, const filter_vec *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t shape[1] = {v[i].count};
        zg_repr r = mk_repr(v[i].dtype, 1, shape);
        zg_codec *c = NULL;
        CHECK_OK(mk(vt, v[i].conf, &r, &c));
        if (!c) continue;
        size_t dn = (size_t)zg_repr_nbytes(&c->decoded), en = (size_t)zg_repr_nbytes(&c->encoded);
        CHECK_EQ_U64(en, v[i].enc_len);
        uint8_t *enc = calloc(1, en + 1), *dec = calloc(1, dn + 1);
        CHECK_OK(c->vt->encode_array(c, (const uint8_t *)v[i].in, enc));
        CHECK_MSG(en == v[i].enc_len && memcmp(enc, v[i].enc, en) == 0, "%s %s: encode differs from numcodecs",
                  vt->name, v[i].name);
        CHECK_OK(c->vt->decode_array(c, (const uint8_t *)v[i].enc, dec));
        CHECK_MSG(memcmp(dec, v[i].dec, dn) == 0, "%s %s: decode differs from numcodecs", vt->name, v[i].name);
        free(enc);
        free(dec);
        destroy(c);
    }
}

static void test_delta(void) {
    run_array_vectors(&zg_codec_delta, delta_vecs, sizeof delta_vecs / sizeof *delta_vecs);

    /* integer round trips (exact: wrapping sums), longer than one internal block */
    static const char *ints[][2] = {{"int8", "|i1"}, {"int16", "<i2"}, {"int32", "<i4"}, {"int64", "<i8"},
                                    {"uint8", "|u1"}, {"uint16", "<u2"}, {"uint32", "<u4"}, {"uint64", "<u8"}};
    uint64_t shape[2] = {37, 29};
    for (int t = 0; t < 8; t++) {
        zg_repr r = mk_repr(ints[t][0], 2, shape);
        char conf[64];
        snprintf(conf, sizeof conf, "{\"dtype\": \"%s\"}", ints[t][1]);
        zg_codec *c = NULL;
        CHECK_OK(mk(&zg_codec_delta, conf, &r, &c));
        if (!c) continue;
        size_t nb = (size_t)zg_repr_nbytes(&r), es = r.dtype.size;
        uint8_t *src = malloc(nb), *enc = malloc(nb), *dec = malloc(nb);
        fill_random(src, nb);
        CHECK_OK(c->vt->encode_array(c, src, enc));
        /* element 256 sits at a block boundary: check its difference directly */
        uint64_t a = 0, b = 0, e = 0;
        memcpy(&a, src + 256 * es, es);
        memcpy(&b, src + 255 * es, es);
        memcpy(&e, enc + 256 * es, es);
        uint64_t mask = es == 8 ? ~0ull : ((1ull << (8 * es)) - 1);
        CHECK_EQ_U64(e, (a - b) & mask);
        CHECK(memcmp(enc, src, es) == 0);
        CHECK_OK(c->vt->decode_array(c, enc, dec));
        CHECK_MSG(memcmp(dec, src, nb) == 0, "delta round trip %s", ints[t][0]);
        free(src); free(enc); free(dec);
        destroy(c);
    }
    /* float64 with integer-valued data round-trips exactly; dtype defaults to the array's */
    uint64_t s1[1] = {600};
    zg_repr rf = mk_repr("float64", 1, s1);
    zg_codec *c = NULL;
    CHECK_OK(mk(&zg_codec_delta, "{}", &rf, &c));
    if (c) {
        double x[600], e[600], d[600];
        for (int i = 0; i < 600; i++) x[i] = (double)((int64_t)(rnd() % 2000001) - 1000000);
        CHECK_OK(c->vt->encode_array(c, (const uint8_t *)x, (uint8_t *)e));
        CHECK(e[0] == x[0] && e[599] == x[599] - x[598] && e[256] == x[256] - x[255]);
        CHECK_OK(c->vt->decode_array(c, (const uint8_t *)e, (uint8_t *)d));
        CHECK(memcmp(d, x, sizeof x) == 0);
        char *j = json_of(c, 0);
        CHECK_STR(j, "{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"<f8\", \"astype\": \"<f8\"}}");
        free(j);
        j = json_of(c, 1);
        CHECK_STR(j, "{\"id\": \"delta\", \"dtype\": \"<f8\", \"astype\": \"<f8\"}");
        free(j);
        destroy(c);
    }
    /* the encoded repr carries astype and the fill value cast to it */
    uint64_t s4[1] = {4};
    zg_repr r16 = mk_repr("int16", 1, s4);
    int16_t fill = 300;
    r16.fill_value = (const uint8_t *)&fill;
    CHECK_OK(mk(&zg_codec_delta, "{\"dtype\": \"<i2\", \"astype\": \"|u1\"}", &r16, &c));
    if (c) {
        CHECK(c->encoded.dtype.id == ZGPU_UINT8);
        CHECK(c->encoded.fill_value && c->encoded.fill_value[0] == 44);
        destroy(c);
    }
    /* big-endian typestrings name the same type: values are native here, the bytes codec stores the order */
    CHECK_OK(mk(&zg_codec_delta, "{\"dtype\": \">i2\"}", &r16, &c));
    if (c) { CHECK(c->encoded.dtype.id == ZGPU_INT16); destroy(c); }
    CHECK_OK(mk(&zg_codec_delta, "{\"dtype\": \"<i2\", \"astype\": \">i4\"}", &r16, &c));
    if (c) { CHECK(c->encoded.dtype.id == ZGPU_INT32); destroy(c); }
    CHECK_STATUS(mk(&zg_codec_delta, "{\"dtype\": \"<i4\"}", &r16, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_delta, "{\"dtype\": \"int16\"}", &r16, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_delta, "{\"dtype\": 5}", &r16, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_delta, "{\"dtype\": \"<i2\", \"astype\": \"|b1\"}", &r16, &c), ZGPU_ERR_UNSUPPORTED);
    zg_repr rb = mk_repr("bool", 1, s4);
    CHECK_STATUS(mk(&zg_codec_delta, "{\"dtype\": \"|b1\"}", &rb, &c), ZGPU_ERR_UNSUPPORTED);
    zg_repr rcx = mk_repr("complex64", 1, s4);
    CHECK_STATUS(mk(&zg_codec_delta, "{\"dtype\": \"<c8\"}", &rcx, &c), ZGPU_ERR_UNSUPPORTED);
}

static void test_fixedscaleoffset(void) {
    run_array_vectors(&zg_codec_fixedscaleoffset, fso_vecs, sizeof fso_vecs / sizeof *fso_vecs);
    uint64_t s4[1] = {4};
    zg_repr r = mk_repr("float64", 1, s4);
    zg_codec *c = NULL;
    CHECK_OK(mk(&zg_codec_fixedscaleoffset, "{\"offset\": 1000, \"scale\": 10, \"dtype\": \"<f8\", \"astype\": \"|u1\"}", &r, &c));
    if (c) {
        CHECK(c->encoded.dtype.id == ZGPU_UINT8);
        char *j = json_of(c, 1);
        CHECK_STR(j, "{\"id\": \"fixedscaleoffset\", \"scale\": 10, \"offset\": 1000, \"dtype\": \"<f8\", \"astype\": \"|u1\"}");
        free(j);
        destroy(c);
    }
    /* longer than a block: encode then decode within half a quantum */
    uint64_t s1[1] = {700};
    zg_repr r1 = mk_repr("float32", 1, s1);
    CHECK_OK(mk(&zg_codec_fixedscaleoffset, "{\"offset\": -3.5, \"scale\": 100.0, \"astype\": \"<i4\"}", &r1, &c));
    if (c) {
        float x[700], d[700];
        int32_t e[700];
        for (int i = 0; i < 700; i++) x[i] = (float)((double)(rnd() % 100000) / 1000.0 - 50.0);
        CHECK_OK(c->vt->encode_array(c, (const uint8_t *)x, (uint8_t *)e));
        CHECK_EQ_U64((uint64_t)(int64_t)e[650], (uint64_t)(int64_t)lrintf((x[650] + 3.5f) * 100.0f));
        CHECK_OK(c->vt->decode_array(c, (const uint8_t *)e, (uint8_t *)d));
        int far = 0;
        for (int i = 0; i < 700; i++) if (fabsf(d[i] - x[i]) > 0.0051f) far++;
        CHECK_EQ_U64(far, 0);
        destroy(c);
    }
    CHECK_STATUS(mk(&zg_codec_fixedscaleoffset, "{\"offset\": 1}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_fixedscaleoffset, "{\"scale\": 1}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_fixedscaleoffset, "{\"offset\": \"1\", \"scale\": 1}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_OK(mk(&zg_codec_fixedscaleoffset, "{\"offset\": 1, \"scale\": 1, \"astype\": \">u2\"}", &r, &c));
    if (c) { CHECK(c->encoded.dtype.id == ZGPU_UINT16); destroy(c); }
    CHECK_STATUS(mk(&zg_codec_fixedscaleoffset, "{\"offset\": 1, \"scale\": 1, \"dtype\": \"<f4\"}", &r, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_fixedscaleoffset, NULL, &r, &c), ZGPU_ERR_BAD_METADATA);
}

static void test_shuffle(void) {
    for (size_t i = 0; i < sizeof shuffle_vecs / sizeof *shuffle_vecs; i++) {
        const filter_vec *v = &shuffle_vecs[i];
        uint64_t shape[1] = {v->count};
        zg_repr r = mk_repr("uint8", 1, shape);
        zg_codec *c = NULL;
        CHECK_OK(mk(&zg_codec_shuffle, v->conf, &r, &c));
        if (!c) continue;
        zg_buf enc = ZG_BUF_INIT, dec = ZG_BUF_INIT;
        CHECK_OK(c->vt->encode_bytes(c, (const uint8_t *)v->in, v->count, &enc));
        CHECK_MSG(enc.size == v->enc_len && memcmp(enc.data, v->enc, enc.size) == 0, "shuffle %s encode", v->name);
        CHECK_OK(c->vt->decode_bytes(c, (const uint8_t *)v->enc, v->enc_len, &dec, zg_out_exact(v->count)));
        CHECK_MSG(dec.size == v->count && memcmp(dec.data, v->dec, dec.size) == 0, "shuffle %s decode", v->name);
        zg_buf_free(&enc);
        zg_buf_free(&dec);
        destroy(c);
    }
    /* default elementsize = the decoded type's size; random round trips incl. an odd size */
    uint64_t shape[1] = {1000};
    zg_repr r64 = mk_repr("uint64", 1, shape);
    const char *confs[] = {NULL, "{\"elementsize\": 5}", "{\"elementsize\": 16}"};
    for (int k = 0; k < 3; k++) {
        zg_codec *c = NULL;
        CHECK_OK(mk(&zg_codec_shuffle, confs[k], &r64, &c));
        if (!c) continue;
        if (k == 0) {
            char *j = json_of(c, 0);
            CHECK_STR(j, "{\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 8}}");
            free(j);
        }
        uint8_t src[8000], back[8000];
        fill_random(src, sizeof src);
        zg_buf enc = ZG_BUF_INIT;
        zg_buf dec = zg_buf_wrap(back, sizeof back);
        CHECK_OK(c->vt->encode_bytes(c, src, sizeof src, &enc));
        size_t es = k == 0 ? 8 : k == 1 ? 5 : 16, count = sizeof src / es;
        CHECK(enc.size == sizeof src && enc.data[1 * count + 7] == src[7 * es + 1]);
        CHECK_OK(c->vt->decode_bytes(c, enc.data, enc.size, &dec, zg_out_exact(sizeof src)));
        CHECK(dec.size == sizeof src && memcmp(back, src, sizeof src) == 0);
        /* a size that is not a multiple of elementsize */
        CHECK_STATUS(c->vt->decode_bytes(c, enc.data, enc.size - 3, &dec, ZG_OUT_ANY), ZGPU_ERR_CORRUPT_DATA);
        CHECK_STATUS(c->vt->decode_bytes(c, enc.data, enc.size, &dec, zg_out_exact(100)), ZGPU_ERR_CORRUPT_DATA);
        zg_buf_free(&enc);
        destroy(c);
    }
    zg_codec *c = NULL;
    CHECK_STATUS(mk(&zg_codec_shuffle, "{\"elementsize\": \"4\"}", &r64, &c), ZGPU_ERR_BAD_METADATA);
    CHECK_STATUS(mk(&zg_codec_shuffle, "{\"elementsize\": -1}", &r64, &c), ZGPU_ERR_BAD_METADATA);
}

/* A whole chain of these codecs: delta -> bytes(big) -> shuffle -> crc32c. */
static void test_chain(void) {
    const char *codecs = "[{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"<i4\", \"astype\": \"<i2\"}},"
                         " {\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}},"
                         " {\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}},"
                         " {\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 2}},"
                         " {\"name\": \"crc32c\"}]";
    zj_value *cv = NULL;
    CHECK_OK(zj_parse(codecs, strlen(codecs), "codecs", &cv));
    uint64_t shape[2] = {6, 10};
    zg_repr r = mk_repr("int32", 2, shape);
    zg_chain *ch = NULL;
    CHECK_OK(zg_chain_create(cv, &r, &ch));
    zj_free(cv);
    if (!ch) return;
    int32_t x[60], back[60];
    for (int i = 0; i < 60; i++) x[i] = 1000 + 3 * i - (i % 7) * 11;
    zg_buf enc = ZG_BUF_INIT;
    zg_scratch s = ZG_SCRATCH_INIT;
    CHECK_OK(zg_chain_encode(ch, (const uint8_t *)x, &enc, &s));
    CHECK_EQ_U64(enc.size, 60 * 2 + 4);
    CHECK_EQ_U64(zg_crc32c(0, enc.data, 120), (uint32_t)enc.data[120] | (uint32_t)enc.data[121] << 8 |
                                                  (uint32_t)enc.data[122] << 16 | (uint32_t)enc.data[123] << 24);
    memset(back, 0, sizeof back);
    CHECK_OK(zg_chain_decode(ch, enc.data, enc.size, (uint8_t *)back, &s));
    CHECK(memcmp(back, x, sizeof x) == 0);
    enc.data[5] ^= 0x40;
    CHECK_STATUS(zg_chain_decode(ch, enc.data, enc.size, (uint8_t *)back, &s), ZGPU_ERR_CORRUPT_DATA);
    CHECK_STATUS(zg_chain_decode(ch, enc.data, enc.size - 1, (uint8_t *)back, &s), ZGPU_ERR_CORRUPT_DATA);
    zg_buf_free(&enc);
    zg_scratch_free(&s);
    zg_chain_free(ch);
}

int main(void) {
    test_crc32c();
    test_bytes();
    test_transpose();
    test_delta();
    test_fixedscaleoffset();
    test_shuffle();
    test_chain();
    TEST_MAIN_END();
}
