/* sharding_indexed: encode/decode of whole shards, index access, index at start and end, empty inner
 * chunks, nested sharding, corrupt indexes, and byte-exact agreement with shards written by zarr-python. */
#include "test.h"
#include "codec/chain.h"
#include "codec/crc32c.h"
#include "codec/sharding.h"
#include "common/status.h"

/* Written by zarr-python 3.1.6: shape (4, 6) uint16, fill 7, one shard of (4, 6), inner chunks (2, 3),
 * values (arange(24).reshape(4, 6) * 1000 + 1) with [2:4, 0:3] = 7 (that inner chunk stays empty). */
static const char zp_end_codecs[] =
    "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], \"codecs\": [{\"name\": \"bytes\", "
    "\"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
    "{\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]";
static const uint8_t zp_end_shard[104] =
    "\x01\x00\xe9\x03\xd1\x07\x71\x17\x59\x1b\x41\x1f\xb9\x0b\xa1\x0f\x89\x13\x29\x23\x11\x27\xf9\x2a\x99\x3a\x81\x3e"
    "\x69\x42\x09\x52\xf1\x55\xd9\x59\x00\x00\x00\x00\x00\x00\x00\x00\x0c\x00\x00\x00\x00\x00\x00\x00\x0c\x00\x00\x00"
    "\x00\x00\x00\x00\x0c\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
    "\x18\x00\x00\x00\x00\x00\x00\x00\x0c\x00\x00\x00\x00\x00\x00\x00\xac\x43\xee\x37";
static const char zp_start_codecs[] =
    "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], \"codecs\": [{\"name\": "
    "\"transpose\", \"configuration\": {\"order\": [1, 0]}}, {\"name\": \"bytes\", \"configuration\": {\"endian\": "
    "\"big\"}}, {\"name\": \"crc32c\"}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
    "\"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"start\"}}]";
static const uint8_t zp_start_shard[116] =
    "\x44\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x54\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00"
    "\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x64\x00\x00\x00\x00\x00\x00\x00"
    "\x10\x00\x00\x00\x00\x00\x00\x00\xff\x0c\x9b\x4e\x00\x01\x17\x71\x03\xe9\x1b\x59\x07\xd1\x1f\x41\xa0\xd5\x69\x85"
    "\x0b\xb9\x23\x29\x0f\xa1\x27\x11\x13\x89\x2a\xf9\xc7\x6d\x55\x53\x3a\x99\x52\x09\x3e\x81\x55\xf1\x42\x69\x59\xd9"
    "\xe9\xb1\xbb\xcb";

static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static zg_chain *mk_chain(const char *codecs, const char *dtype, int ndim, const uint64_t *shape, const void *fill,
                          zgpu_status want) {
    zj_value *cv = NULL;
    if (zj_parse(codecs, strlen(codecs), "codecs", &cv) != ZGPU_OK) {
        fprintf(stderr, "bad test JSON: %s\n", zgpu_last_error());
        exit(2);
    }
    zg_repr r;
    memset(&r, 0, sizeof r);
    if (!zg_dtype_from_name(dtype, &r.dtype)) exit(2);
    r.ndim = ndim;
    for (int i = 0; i < ndim; i++) r.shape[i] = shape[i];
    r.fill_value = fill;
    zg_chain *ch = NULL;
    CHECK_STATUS(zg_chain_create(cv, &r, &ch), want);
    if (ch && want == ZGPU_OK && strstr(codecs, "index_location")) {
        /* the chain writes back the (fully specified) configuration it read */
        zj_value *back = zg_chain_to_json(ch);
        CHECK_MSG(back && zj_equal(back, cv), "to_json differs for %s", codecs);
        zj_free(back);
    }
    zj_free(cv);
    return ch;
}

static void zp_values(uint16_t *v) {
    for (int i = 0; i < 24; i++) v[i] = (uint16_t)(i * 1000 + 1);
    for (int r = 2; r < 4; r++)
        for (int c = 0; c < 3; c++) v[r * 6 + c] = 7;
}

static void test_zarr_python_shards(void) {
    uint64_t shape[2] = {4, 6};
    uint16_t fill = 7, want[24], got[24];
    zp_values(want);
    zg_scratch s = ZG_SCRATCH_INIT;
    for (int start = 0; start < 2; start++) {
        const uint8_t *shard = start ? zp_start_shard : zp_end_shard;
        size_t n = start ? sizeof zp_start_shard : sizeof zp_end_shard;
        zg_chain *ch = mk_chain(start ? zp_start_codecs : zp_end_codecs, "uint16", 2, shape, &fill, ZGPU_OK);
        if (!ch) continue;
        const zg_codec *sc = ch->a2b;
        CHECK(zg_is_sharding(sc));
        CHECK_EQ_U64(zg_sharding_n_inner(sc), 4);
        CHECK_EQ_U64(zg_sharding_inner_shape(sc)[0], 2);
        CHECK_EQ_U64(zg_sharding_inner_shape(sc)[1], 3);
        CHECK_EQ_U64(zg_sharding_chunks_per_shard(sc)[0], 2);
        CHECK_EQ_U64(zg_sharding_chunks_per_shard(sc)[1], 2);
        CHECK_EQ_U64(zg_sharding_index_nbytes(sc), 4 * 16 + 4);
        CHECK_EQ_U64(zg_sharding_index_at_end(sc), !start);
        memset(got, 0, sizeof got);
        CHECK_OK(zg_chain_decode(ch, shard, n, (uint8_t *)got, &s));
        CHECK_MSG(memcmp(got, want, sizeof want) == 0, "zarr-python shard (index at %s)", start ? "start" : "end");

        /* through the index, one inner chunk at a time */
        uint64_t off[4], len[4];
        const uint8_t *index = start ? shard : shard + n - 68;
        CHECK_OK(zg_sharding_decode_index(sc, index, 68, n, off, len));
        CHECK_EQ_U64(off[2], ZG_SHARD_EMPTY);
        CHECK_EQ_U64(len[2], ZG_SHARD_EMPTY);
        CHECK_EQ_U64(off[0], start ? 68 : 0);
        CHECK_EQ_U64(len[0], start ? 16 : 12);
        const zg_chain *inner = zg_sharding_inner_chain(sc);
        CHECK_EQ_U64(inner->repr.shape[0], 2);
        CHECK_EQ_U64(inner->repr.shape[1], 3);
        for (int k = 0; k < 4; k++) {
            if (off[k] == ZG_SHARD_EMPTY) continue;
            uint16_t chunk[6];
            CHECK_OK(zg_chain_decode(inner, shard + off[k], (size_t)len[k], (uint8_t *)chunk, &s));
            int gr = k / 2, gc = k % 2, bad = 0;
            for (int r = 0; r < 2; r++)
                for (int c = 0; c < 3; c++) if (chunk[r * 3 + c] != want[(gr * 2 + r) * 6 + gc * 3 + c]) bad++;
            CHECK_MSG(bad == 0, "inner chunk %d via the index", k);
        }
        CHECK_STATUS(zg_sharding_decode_index(sc, index, 67, n, off, len), ZGPU_ERR_CORRUPT_DATA);

        /* our encoder writes the same bytes as zarr-python */
        zg_buf enc = ZG_BUF_INIT;
        CHECK_OK(zg_chain_encode(ch, (const uint8_t *)want, &enc, &s));
        CHECK_MSG(enc.size == n && memcmp(enc.data, shard, n) == 0, "encode matches zarr-python (index at %s)",
                  start ? "start" : "end");

        /* corruptions */
        uint8_t *bad = malloc(n);
        memcpy(bad, shard, n);
        bad[start ? 5 : n - 30] ^= 1; /* a bit in the index: crc32c fails */
        CHECK_STATUS(zg_chain_decode(ch, bad, n, (uint8_t *)got, &s), ZGPU_ERR_CORRUPT_DATA);
        CHECK_STATUS(zg_chain_decode(ch, shard, 60, (uint8_t *)got, &s), ZGPU_ERR_CORRUPT_DATA);
        CHECK_STATUS(zg_chain_decode(ch, shard, 0, (uint8_t *)got, &s), ZGPU_ERR_CORRUPT_DATA);
        /* out-of-range offset / length with a valid checksum */
        uint64_t pairs[8];
        uint8_t idx[68];
        memcpy(idx, index, 68);
        memcpy(pairs, idx, 64);
        const uint64_t evil[][2] = {{n, 1}, {n - 4, 8}, {10, UINT64_MAX - 5}, {UINT64_MAX, 3}, {0, n + 1}};
        for (size_t e = 0; e < sizeof evil / sizeof *evil; e++) {
            uint64_t p2[8];
            memcpy(p2, pairs, 64);
            p2[2] = evil[e][0];
            p2[3] = evil[e][1];
            memcpy(idx, p2, 64);
            uint32_t crc = zg_crc32c(0, idx, 64);
            for (int b = 0; b < 4; b++) idx[64 + b] = (uint8_t)(crc >> (8 * b));
            CHECK_STATUS(zg_sharding_decode_index(sc, idx, 68, n, off, len), ZGPU_ERR_CORRUPT_DATA);
            memcpy(bad, shard, n);
            memcpy(start ? bad : bad + n - 68, idx, 68);
            CHECK_STATUS(zg_chain_decode(ch, bad, n, (uint8_t *)got, &s), ZGPU_ERR_CORRUPT_DATA);
        }
        /* a valid range of the wrong size for the inner chunk */
        memcpy(pairs + 2, (uint64_t[2]){start ? 84 : 12, start ? 15 : 11}, 16);
        memcpy(idx, pairs, 64);
        uint32_t crc = zg_crc32c(0, idx, 64);
        for (int b = 0; b < 4; b++) idx[64 + b] = (uint8_t)(crc >> (8 * b));
        memcpy(bad, shard, n);
        memcpy(start ? bad : bad + n - 68, idx, 68);
        CHECK_OK(zg_sharding_decode_index(sc, idx, 68, n, off, len));
        CHECK_STATUS(zg_chain_decode(ch, bad, n, (uint8_t *)got, &s), ZGPU_ERR_CORRUPT_DATA);
        CHECK(strstr(zgpu_last_error(), "inner chunk 1") != NULL);
        free(bad);
        zg_buf_free(&enc);
        zg_chain_free(ch);
    }
    zg_scratch_free(&s);
}

/* Encodes `data` through the chain, decodes it back and compares every byte. Returns the shard size. */
static size_t round_trip(zg_chain *ch, const uint8_t *data, size_t nbytes, zg_buf *enc) {
    zg_scratch s = ZG_SCRATCH_INIT;
    enc->size = 0;
    CHECK_OK(zg_chain_encode(ch, data, enc, &s));
    uint8_t *back = malloc(nbytes);
    memset(back, 0xA5, nbytes);
    CHECK_OK(zg_chain_decode(ch, enc->data, enc->size, back, &s));
    CHECK_MSG(memcmp(back, data, nbytes) == 0, "shard round trip (%zu bytes)", nbytes);
    free(back);
    zg_scratch_free(&s);
    return enc->size;
}

static void test_round_trips(void) {
    /* 3-d, non-contiguous inner chunks, index at the start, float32 with NaN-free random data and
     * some inner chunks left at the fill value */
    const char *c3 = "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3, 4], \"codecs\": "
                     "[{\"name\": \"transpose\", \"configuration\": {\"order\": [2, 0, 1]}}, {\"name\": \"bytes\", "
                     "\"configuration\": {\"endian\": \"big\"}}], \"index_codecs\": [{\"name\": \"bytes\", "
                     "\"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"start\"}}]";
    uint64_t shape[3] = {4, 9, 8};
    float fill = -1.5f;
    zg_chain *ch = mk_chain(c3, "float32", 3, shape, &fill, ZGPU_OK);
    if (ch) {
        const zg_codec *sc = ch->a2b;
        CHECK_EQ_U64(zg_sharding_n_inner(sc), 2 * 3 * 2);
        float v[4 * 9 * 8];
        for (int i = 0; i < 4 * 9 * 8; i++) v[i] = (float)(rnd() % 100000) / 7.0f;
        /* inner chunk (1, 1, 0): rows 2..3, cols 3..5, depth 0..3 -> fill; so is (0, 2, 1) */
        for (int a = 2; a < 4; a++)
            for (int b = 3; b < 6; b++)
                for (int c = 0; c < 4; c++) v[(a * 9 + b) * 8 + c] = fill;
        for (int a = 0; a < 2; a++)
            for (int b = 6; b < 9; b++)
                for (int c = 4; c < 8; c++) v[(a * 9 + b) * 8 + c] = fill;
        zg_buf enc = ZG_BUF_INIT;
        size_t n = round_trip(ch, (const uint8_t *)v, sizeof v, &enc);
        uint64_t idx_n = zg_sharding_index_nbytes(sc);
        CHECK_EQ_U64(idx_n, 12 * 16 + 4);
        CHECK_EQ_U64(n, idx_n + 10 * 24 * 4);
        uint64_t off[12], len[12];
        CHECK_OK(zg_sharding_decode_index(sc, enc.data, (size_t)idx_n, n, off, len));
        /* C order over the (2, 3, 2) grid: (1,1,0) = 8, (0,2,1) = 5 */
        int empties = 0;
        for (int k = 0; k < 12; k++) empties += off[k] == ZG_SHARD_EMPTY;
        CHECK_EQ_U64(empties, 2);
        CHECK(off[8] == ZG_SHARD_EMPTY && off[5] == ZG_SHARD_EMPTY);
        CHECK(off[0] == idx_n && len[0] == 96);
        /* all fill: an index of empties only, decoding to the fill value */
        for (int i = 0; i < 4 * 9 * 8; i++) v[i] = fill;
        n = round_trip(ch, (const uint8_t *)v, sizeof v, &enc);
        CHECK_EQ_U64(n, idx_n);
        zg_buf_free(&enc);
        zg_chain_free(ch);
    }

    /* nested: outer shard (8, 8) of (4, 4) inner shards of (2, 2) chunks, crc32c on the inner chunks */
    const char *nested =
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [4, 4], \"codecs\": [{\"name\": "
        "\"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 2], \"codecs\": [{\"name\": \"bytes\", "
        "\"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_codecs\": [{\"name\": \"bytes\", "
        "\"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}], "
        "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], "
        "\"index_location\": \"end\"}}]";
    uint64_t s2[2] = {8, 8};
    int64_t zero = 0;
    ch = mk_chain(nested, "int64", 2, s2, &zero, ZGPU_OK);
    if (ch) {
        int64_t v[64];
        for (int i = 0; i < 64; i++) v[i] = (int64_t)rnd();
        v[0] = v[1] = v[8] = v[9] = 0; /* one innermost chunk empty */
        for (int r = 4; r < 8; r++)
            for (int c = 0; c < 4; c++) v[r * 8 + c] = 0; /* one middle shard empty */
        zg_buf enc = ZG_BUF_INIT;
        size_t n = round_trip(ch, (const uint8_t *)v, sizeof v, &enc);
        const zg_codec *outer = ch->a2b;
        const zg_chain *mid = zg_sharding_inner_chain(outer);
        CHECK(zg_is_sharding(mid->a2b));
        uint64_t off[4], len[4];
        CHECK_OK(zg_sharding_decode_index(outer, enc.data + n - 68, 68, n, off, len));
        CHECK_EQ_U64(off[2], ZG_SHARD_EMPTY);
        CHECK_EQ_U64(len[0], 3 * (32 + 4) + 68); /* three non-empty 2x2 int64 chunks + crc, and an index */
        /* a bit flipped inside an innermost chunk is caught by its crc32c */
        enc.data[3] ^= 4;
        int64_t back[64];
        zg_scratch s = ZG_SCRATCH_INIT;
        CHECK_STATUS(zg_chain_decode(ch, enc.data, enc.size, (uint8_t *)back, &s), ZGPU_ERR_CORRUPT_DATA);
        zg_scratch_free(&s);
        zg_buf_free(&enc);
        zg_chain_free(ch);
    }

    /* 1-d, index_codecs absent (defaults to bytes + crc32c), default index location */
    const char *c1 = "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [5], \"codecs\": "
                     "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}]";
    uint64_t s1[1] = {20};
    uint8_t f8 = 0;
    zj_value *cv = NULL;
    CHECK_OK(zj_parse(c1, strlen(c1), "codecs", &cv));
    zg_repr r;
    memset(&r, 0, sizeof r);
    zg_dtype_from_name("uint8", &r.dtype);
    r.ndim = 1;
    r.shape[0] = s1[0];
    r.fill_value = &f8;
    ch = NULL;
    CHECK_OK(zg_chain_create(cv, &r, &ch));
    zj_free(cv);
    if (ch) {
        CHECK_EQ_U64(zg_sharding_index_at_end(ch->a2b), 1);
        CHECK_EQ_U64(zg_sharding_index_nbytes(ch->a2b), 4 * 16 + 4);
        uint8_t v[20];
        for (int i = 0; i < 20; i++) v[i] = (uint8_t)(i < 10 ? i + 1 : 0);
        zg_buf enc = ZG_BUF_INIT;
        CHECK_EQ_U64(round_trip(ch, v, sizeof v, &enc), 10 + 68);
        zg_buf_free(&enc);
        zg_chain_free(ch);
    }
}

static void test_bad_configs(void) {
    uint64_t shape[2] = {4, 6};
    uint16_t fill = 0;
    const char *bad_meta[] = {
        /* chunk shape does not divide the shard */
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [3, 3], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}]",
        /* wrong rank, zero, not a list */
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}]",
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [0, 3], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}]",
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": 2, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}]",
        /* codecs missing / empty / without array->bytes */
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3]}}]",
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], \"codecs\": []}}]",
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], \"codecs\": [{\"name\": \"crc32c\"}]}}]",
        /* bad index location */
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}], \"index_location\": \"middle\"}}]",
        /* no configuration */
        "[{\"name\": \"sharding_indexed\"}]",
    };
    for (size_t i = 0; i < sizeof bad_meta / sizeof *bad_meta; i++) {
        zg_chain *ch = mk_chain(bad_meta[i], "uint16", 2, shape, &fill, ZGPU_ERR_BAD_METADATA);
        zg_chain_free(ch);
    }
    /* an index codec that makes the index size vary */
    zg_chain *ch = mk_chain("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], \"codecs\": "
                            "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": "
                            "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"gzip\", "
                            "\"configuration\": {\"level\": 1}}]}}]",
                            "uint16", 2, shape, &fill, ZGPU_ERR_UNSUPPORTED);
    zg_chain_free(ch);

    /* huge inner grids: refused beyond 2^28 inner chunks; below that, create allocates nothing big and a
     * tiny shard is refused by size before any index allocation */
    const char *tiny = "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [1, 1], \"codecs\": "
                       "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}]";
    uint64_t huge[2] = {(uint64_t)1 << 20, (uint64_t)1 << 20};
    ch = mk_chain(tiny, "uint16", 2, huge, &fill, ZGPU_ERR_UNSUPPORTED);
    zg_chain_free(ch);
    uint64_t large[2] = {(uint64_t)1 << 14, (uint64_t)1 << 14};
    ch = mk_chain(tiny, "uint8", 2, large, &fill, ZGPU_OK);
    if (ch) {
        CHECK_EQ_U64(zg_sharding_index_nbytes(ch->a2b), ((uint64_t)1 << 28) * 16 + 4);
        uint8_t small[100] = {0}, out[1];
        uint64_t off[1], len[1];
        CHECK_STATUS(zg_sharding_decode_index(ch->a2b, small, sizeof small, sizeof small, off, len), ZGPU_ERR_CORRUPT_DATA);
        CHECK_STATUS(ch->a2b->vt->decode_to_array(ch->a2b, small, sizeof small, out), ZGPU_ERR_CORRUPT_DATA);
        zg_chain_free(ch);
    }
}

int main(void) {
    test_zarr_python_shards();
    test_round_trips();
    test_bad_configs();
    TEST_MAIN_END();
}
