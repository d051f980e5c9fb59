/* Partial decodes: a read that needs part of a chunk decodes only that part where the codec can stop short
 * (zstd: up to the last byte needed; blosc: only the blocks that hold it; uncompressed chunks: only the bytes
 * between the first and the last needed). Checked at three levels:
 *   codec  decode_bytes_range of zstd and blosc against the raw bytes, and that it really stopped short (the bytes
 *          it must not touch keep a sentinel), or decoded everything where a checksum covers the whole output;
 *   chain  a chain with an outer crc32c stage, and chains that cannot decode ranges (fall back to whole chunks);
 *   array  random boxes of arrays in every such layout against the values written (not against another read),
 *          label chunks whose boxes decode only their rows (sparse) with one thread and eight, converting too;
 * and hostile chunks: a range decode finds the faults the whole decode finds. */
#include <blosc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/array.h"
#include "codec/chain.h"
#include "codec/codec.h"
#include "codec/zstd_split.h"
#include "common/json.h"
#include "host/host_read.h"
#include "meta/dtype.h"
#include "test.h"
#include "zgpu_experimental.h"

extern const zg_codec_vtable zg_codec_zstd, zg_codec_blosc;

static uint32_t rng = 77;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

#define SENTINEL 0xEE

/* 64 x 64 x 64 uint16 values, smooth with noise in the low bits: compressible, but not trivially. */
#define NZ 64
#define NY 64
#define NX 64
#define RAW_N (NZ * NY * NX * 2)
static uint16_t value_at(size_t i) { return (uint16_t)((i / 97) * 13 + (i % 7) + ((i * 2654435761u) >> 29)); }

static zg_codec *make_codec(const zg_codec_vtable *vt, const char *conf, const zg_repr *repr) {
    zj_value *cfg = NULL;
    if (zj_parse(conf, strlen(conf), "codec configuration", &cfg) != ZGPU_OK) return NULL;
    zg_codec *c = NULL;
    zgpu_status st = vt->create(cfg, repr, &c);
    zj_free(cfg);
    return st == ZGPU_OK ? c : NULL;
}

static int untouched(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != SENTINEL) return 0;
    return 1;
}

/* A zstd frame decodes block by block from its start and stops after the block holding byte hi - 1 (a block
 * decodes to at most 128 KiB): out[0, hi) is the raw prefix, and the bytes from hi + 128 KiB on are not the decoded
 * data. (They need not stay untouched: libzstd may keep a block's literals in the free end of the output.) */
#define ZSTD_BLOCK_MAX ((size_t)128 << 10)
static int stopped_after_block(const uint8_t *out, const uint8_t *raw, size_t hi, size_t n) {
    if (memcmp(out, raw, hi)) return 0;
    const size_t e = hi + ZSTD_BLOCK_MAX;
    return e >= n || memcmp(out + e, raw + e, n - e);
}

typedef struct codec_case {
    const zg_codec_vtable *vt;
    const char *conf;
    int stops_short; /* 1: decoded no further than the block holding byte hi - 1; 2: so do whole blocks outside [lo, hi); 0: all decoded */
} codec_case;

static void codec_ranges(const uint8_t *raw, const zg_repr *repr) {
    const codec_case cases[] = {
        {&zg_codec_zstd, "{\"level\": 3, \"checksum\": false}", 1},
        {&zg_codec_zstd, "{\"level\": 3, \"checksum\": true}", 0},
        {&zg_codec_blosc, "{\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 2, \"blocksize\": 65536}", 2},
        {&zg_codec_blosc, "{\"cname\": \"zstd\", \"clevel\": 3, \"shuffle\": \"bitshuffle\", \"typesize\": 2, \"blocksize\": 65536}", 2},
        {&zg_codec_blosc, "{\"cname\": \"blosclz\", \"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 4, \"blocksize\": 65536}", 2},
    };
    uint8_t *enc_out = malloc(RAW_N), *ref = malloc(RAW_N);
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const codec_case *cc = &cases[k];
        zg_codec *c = make_codec(cc->vt, cc->conf, repr);
        CHECK_MSG(c != NULL, "create %s %s: %s", cc->vt->name, cc->conf, zgpu_last_error());
        if (!c) continue;
        CHECK(c->vt->decode_bytes_range != NULL);
        zg_buf enc = {0};
        CHECK_OK(c->vt->encode_bytes(c, raw, RAW_N, &enc));
        /* (c-blosc raises blocks below 64 KiB: the header says what it used) */
        const size_t block = cc->stops_short == 2 ? (size_t)enc.data[8] | (size_t)enc.data[9] << 8 | (size_t)enc.data[10] << 16 : 0;
        if (cc->stops_short == 2)
            CHECK_MSG(block > 0 && block <= RAW_N / 2 && !(enc.data[2] & 0x02), "blosc block %zu, flags 0x%x", block,
                      enc.data[2]);
        for (int round = 0; round < 60; round++) {
            size_t lo = rnd() % RAW_N, len = 1 + rnd() % (round < 30 ? 512 : RAW_N / 3);
            if (round == 0) lo = 0;
            size_t hi = lo + len > RAW_N ? RAW_N : lo + len;
            memset(enc_out, SENTINEL, RAW_N);
            zgpu_status st = c->vt->decode_bytes_range(c, enc.data, enc.size, enc_out, RAW_N, lo, hi);
            CHECK_MSG(st == ZGPU_OK, "%s %s [%zu, %zu): %s", cc->vt->name, cc->conf, lo, hi, zgpu_last_error());
            CHECK_MSG(!memcmp(enc_out + lo, raw + lo, hi - lo), "%s %s [%zu, %zu): wrong bytes", cc->vt->name, cc->conf,
                      lo, hi);
            if (cc->stops_short == 0) {
                CHECK_MSG(!memcmp(enc_out, raw, RAW_N), "%s %s: a checksummed frame decodes whole", cc->vt->name,
                          cc->conf);
            } else if (cc->stops_short == 1) { /* a frame decodes from its start, up to hi and no further */
                CHECK_MSG(stopped_after_block(enc_out, raw, hi, RAW_N), "%s %s: prefix [0, %zu), then the block "
                          "holding it and no further", cc->vt->name, cc->conf, hi);
            } else { /* blocks before the first and after the last block needed are never decoded */
                const size_t b0 = lo / block * block, b1 = (hi + block - 1) / block * block;
                CHECK_MSG(untouched(enc_out, b0) && untouched(enc_out + b1, RAW_N - b1),
                          "%s %s [%zu, %zu): decoded blocks outside [%zu, %zu)", cc->vt->name, cc->conf, lo, hi, b0, b1);
            }
        }
        /* an empty range writes nothing; the whole range is the whole decode */
        memset(enc_out, SENTINEL, RAW_N);
        CHECK_OK(c->vt->decode_bytes_range(c, enc.data, enc.size, enc_out, RAW_N, 100, 100));
        if (cc->stops_short) CHECK(untouched(enc_out, RAW_N));
        CHECK_OK(c->vt->decode_bytes_range(c, enc.data, enc.size, enc_out, RAW_N, 0, RAW_N));
        CHECK(!memcmp(enc_out, raw, RAW_N));

        /* hostile chunks: what the whole decode refuses, a range refuses too */
        uint8_t *bad = malloc(enc.size);
        /* truncated inside the range */
        zgpu_status st = c->vt->decode_bytes_range(c, enc.data, enc.size / 2, enc_out, RAW_N, 0, RAW_N - 1);
        CHECK_MSG(st == ZGPU_ERR_CORRUPT_DATA, "%s %s: truncated chunk gives %d", cc->vt->name, cc->conf, (int)st);
        /* a size that is not the chunk's */
        st = c->vt->decode_bytes_range(c, enc.data, enc.size, enc_out, RAW_N - 2, 0, 10);
        CHECK_MSG(st == ZGPU_ERR_CORRUPT_DATA, "%s %s: wrong size gives %d", cc->vt->name, cc->conf, (int)st);
        if (cc->vt == &zg_codec_blosc) {
            /* a block start pointing past the chunk: refused where the block is needed; a block the range does
             * not need is never read (a partial read may leave it on disk) */
            const uint32_t nblocks = (RAW_N + (uint32_t)block - 1) / (uint32_t)block;
            const uint32_t past = (uint32_t)enc.size + 100;
            memcpy(bad, enc.data, enc.size);
            memcpy(bad + 16, &past, 4); /* block 0 */
            st = c->vt->decode_bytes_range(c, bad, enc.size, enc_out, RAW_N, 0, 10);
            CHECK_MSG(st == ZGPU_ERR_CORRUPT_DATA, "%s %s: bad block start gives %d", cc->vt->name, cc->conf, (int)st);
            CHECK(strstr(zgpu_last_error(), "blosc: block 0") != NULL);
            memcpy(bad, enc.data, enc.size);
            memcpy(bad + 16 + 4 * (nblocks - 1), &past, 4); /* the last block */
            memset(enc_out, SENTINEL, RAW_N);
            CHECK_OK(c->vt->decode_bytes_range(c, bad, enc.size, enc_out, RAW_N, 0, 10));
            CHECK(!memcmp(enc_out, raw, 10));
            /* a needed block whose stream runs into the next block's bytes */
            memcpy(bad, enc.data, enc.size);
            uint32_t start0;
            memcpy(&start0, bad + 16, 4);
            uint32_t start1;
            memcpy(&start1, bad + 20, 4);
            const uint32_t long_cs = start1 - start0; /* longer than the block's first stream can be */
            memcpy(bad + start0, &long_cs, 4);
            st = c->vt->decode_bytes_range(c, bad, enc.size, enc_out, RAW_N, 0, 10);
            CHECK_MSG(st == ZGPU_ERR_CORRUPT_DATA, "%s %s: stream past its block gives %d", cc->vt->name, cc->conf,
                      (int)st);
        }
        free(bad);
        zg_buf_free(&enc);
        c->vt->destroy(c);
    }
    /* blocks stored out of index order (as c-blosc's threads store them, in the order they finish): every block's end
     * is the next start above its own, so ranges still decode right, as the whole decode does */
    zg_codec *rc = make_codec(&zg_codec_blosc, "{\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", "
                                               "\"typesize\": 2, \"blocksize\": 65536}", repr);
    CHECK(rc != NULL);
    if (rc) {
        zg_buf enc = {0};
        CHECK_OK(rc->vt->encode_bytes(rc, raw, RAW_N, &enc));
        uint32_t bs;
        memcpy(&bs, enc.data + 8, 4); /* (the block size c-blosc used) */
        const uint32_t nb = (RAW_N + bs - 1) / bs;
        CHECK_MSG(nb >= 3 && nb <= 64 && !(enc.data[2] & 0x02), "%u blocks", nb);
        if (nb >= 3 && nb <= 64 && !(enc.data[2] & 0x02)) {
            uint32_t st0[64];
            memcpy(st0, enc.data + 16, 4 * nb);
            uint8_t *rev = malloc(enc.size);
            memcpy(rev, enc.data, 16 + 4 * nb);
            size_t at = 16 + 4 * nb;
            for (uint32_t j = nb; j-- > 0;) { /* the last block first */
                const size_t from = st0[j], to = j + 1 < nb ? st0[j + 1] : enc.size;
                memcpy(rev + at, enc.data + from, to - from);
                const uint32_t nst = (uint32_t)at;
                memcpy(rev + 16 + 4 * j, &nst, 4);
                at += to - from;
            }
            CHECK(at == enc.size && st0[0] < st0[1]);
            zg_buf whole = {0};
            CHECK_OK(rc->vt->decode_bytes(rc, rev, enc.size, &whole, zg_out_exact(RAW_N)));
            CHECK(whole.size == RAW_N && !memcmp(whole.data, raw, RAW_N));
            for (int round = 0; round < 20; round++) {
                const size_t lo = rnd() % RAW_N, hi = lo + 1 + rnd() % (RAW_N - lo);
                CHECK_OK(rc->vt->decode_bytes_range(rc, rev, enc.size, enc_out, RAW_N, lo, hi));
                CHECK_MSG(!memcmp(enc_out + lo, raw + lo, hi - lo), "reversed blocks [%zu, %zu)", lo, hi);
            }
            zg_buf_free(&whole);
            free(rev);
        }
        zg_buf_free(&enc);
        rc->vt->destroy(rc);
    }
    /* a blosc chunk stored as is (incompressible data): ranges are plain copies */
    uint8_t *noise = malloc(RAW_N);
    for (size_t i = 0; i < RAW_N; i++) noise[i] = (uint8_t)(rnd() >> 3);
    zg_codec *c = make_codec(&zg_codec_blosc, "{\"cname\": \"lz4\", \"clevel\": 1, \"shuffle\": \"noshuffle\", \"typesize\": 2}", repr);
    CHECK(c != NULL);
    if (c) {
        zg_buf enc = {0};
        CHECK_OK(c->vt->encode_bytes(c, noise, RAW_N, &enc));
        CHECK(enc.size == RAW_N + 16 && (enc.data[2] & 0x02)); /* memcpyed */
        memset(enc_out, SENTINEL, RAW_N);
        CHECK_OK(c->vt->decode_bytes_range(c, enc.data, enc.size, enc_out, RAW_N, 1001, 5003));
        CHECK(!memcmp(enc_out + 1001, noise + 1001, 4002) && untouched(enc_out, 1001) &&
              untouched(enc_out + 5003, RAW_N - 5003));
        zg_buf_free(&enc);
        c->vt->destroy(c);
    }
    free(noise);
    free(enc_out);
    free(ref);
}

/* Chains: an outer crc32c over zstd still decodes ranges (the checksum is of the stored bytes, checked whole);
 * a chain with a transpose or gzip decodes whole chunks. */
static void chain_ranges(const uint8_t *raw, const zg_repr *repr) {
    const struct {
        const char *codecs;
        int ranges;
    } cases[] = {
        {"[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": "
         "{\"level\": 1, \"checksum\": false}}, {\"name\": \"crc32c\"}]", 1},
        {"[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"gzip\", \"configuration\": "
         "{\"level\": 1}}]", 0},
        {"[{\"name\": \"transpose\", \"configuration\": {\"order\": [2, 1, 0]}}, {\"name\": \"bytes\", "
         "\"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": 1, "
         "\"checksum\": false}}]", 0},
        {"[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, {\"name\": \"zstd\", \"configuration\": "
         "{\"level\": 1, \"checksum\": false}}]", 0},
    };
    uint8_t *out = malloc(RAW_N);
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        zj_value *codecs = NULL;
        CHECK_OK(zj_parse(cases[k].codecs, strlen(cases[k].codecs), "codecs", &codecs));
        zg_chain *ch = NULL;
        CHECK_OK(zg_chain_create(codecs, repr, &ch));
        zj_free(codecs);
        if (!ch) continue;
        CHECK_MSG(zg_chain_decodes_ranges(ch) == cases[k].ranges, "chain %zu: decodes ranges %d", k,
                  zg_chain_decodes_ranges(ch));
        /* what a host read makes of it: by default (and ON) a zstd frame from its start, nothing when OFF */
        zgpu_tuning t;
        zgpu_tuning_init(&t);
        CHECK_EQ_U64(zg_host_partial_kind(&t, ch), cases[k].ranges ? ZG_PARTIAL_PREFIX : ZG_PARTIAL_NONE);
        t.partial_decode = ZGPU_SWITCH_ON;
        CHECK_EQ_U64(zg_host_partial_kind(&t, ch), cases[k].ranges ? ZG_PARTIAL_PREFIX : ZG_PARTIAL_NONE);
        t.partial_decode = ZGPU_SWITCH_OFF;
        CHECK_EQ_U64(zg_host_partial_kind(&t, ch), ZG_PARTIAL_NONE);
        zg_scratch s = {0};
        zg_buf enc = {0};
        CHECK_OK(zg_chain_encode(ch, raw, &enc, &s));
        memset(out, SENTINEL, RAW_N);
        CHECK_OK(zg_chain_decode_range(ch, enc.data, enc.size, out, 3000, 9000, &s));
        CHECK(!memcmp(out + 3000, raw + 3000, 6000));
        if (cases[k].ranges) CHECK(stopped_after_block(out, raw, 9000, RAW_N));
        else CHECK(!memcmp(out, raw, RAW_N));
        if (cases[k].ranges) { /* the outer checksum is still checked */
            enc.data[enc.size - 1] ^= 1;
            CHECK(zg_chain_decode_range(ch, enc.data, enc.size, out, 0, 10, &s) == ZGPU_ERR_CORRUPT_DATA);
        }
        zg_buf_free(&enc);
        zg_scratch_free(&s);
        zg_chain_free(ch);
    }
    free(out);
}

/* ---- arrays: random boxes against the values written ---- */
#define AZ 40
#define AY 50
#define AX 60
static uint16_t array_value(uint64_t z, uint64_t y, uint64_t x) { return (uint16_t)(z * 1009 + y * 31 + x * 3 + (x & 1)); }

static void array_boxes(zgpu_context *ctx, const char *dir) {
    static const char *const layouts[] = {
        "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": "
        "{\"level\": 1, \"checksum\": false}}]",
        "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": "
        "{\"level\": 1, \"checksum\": true}}]",
        "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", \"configuration\": "
        "{\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 2, \"blocksize\": 1024}}]",
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [8, 10, 12], \"codecs\": [{\"name\": "
        "\"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", \"configuration\": {\"cname\": "
        "\"zstd\", \"clevel\": 3, \"shuffle\": \"bitshuffle\", \"typesize\": 2, \"blocksize\": 256}}], "
        "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": "
        "\"crc32c\"}], \"index_location\": \"end\"}}]",
        "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]", /* uncompressed */
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [8, 10, 12], \"codecs\": [{\"name\": "
        "\"bytes\", \"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": \"bytes\", "
        "\"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]",
    };
    uint16_t *all = malloc(AZ * AY * AX * 2);
    for (uint64_t z = 0; z < AZ; z++)
        for (uint64_t y = 0; y < AY; y++)
            for (uint64_t x = 0; x < AX; x++) all[(z * AY + y) * AX + x] = array_value(z, y, x);
    uint16_t *box = malloc(AZ * AY * AX * 2);
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++) {
        char path[512], meta[2048];
        snprintf(path, sizeof path, "%s/a%zu", dir, l);
        snprintf(meta, sizeof meta,
                 "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [%d, %d, %d], \"data_type\": \"uint16\", "
                 "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [16, 20, 24]}}, "
                 "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": %s}",
                 AZ, AY, AX, layouts[l]);
        zgpu_array *a = NULL;
        CHECK_OK(zgpu_array_create(ctx, path, meta, 1, &a));
        if (!a) continue;
        const uint64_t s0[3] = {0, 0, 0}, c0[3] = {AZ, AY, AX};
        CHECK_OK(zgpu_array_write(a, s0, c0, all, NULL));
        int bad = 0;
        for (int round = 0; round < 200 && !bad; round++) {
            uint64_t st[3], ct[3];
            const uint64_t shape[3] = {AZ, AY, AX};
            for (int d = 0; d < 3; d++) {
                ct[d] = 1 + rnd() % (round % 3 == 0 ? 3 : shape[d] / 2);
                st[d] = rnd() % (shape[d] - ct[d] + 1);
            }
            memset(box, SENTINEL, ct[0] * ct[1] * ct[2] * 2);
            CHECK_OK(zgpu_array_read(a, st, ct, box, NULL));
            for (uint64_t z = 0; z < ct[0] && !bad; z++)
                for (uint64_t y = 0; y < ct[1] && !bad; y++)
                    for (uint64_t x = 0; x < ct[2] && !bad; x++)
                        if (box[(z * ct[1] + y) * ct[2] + x] != array_value(st[0] + z, st[1] + y, st[2] + x)) bad = 1;
            CHECK_MSG(!bad, "layout %zu: box [%llu %llu %llu] + [%llu %llu %llu] differs", l,
                      (unsigned long long)st[0], (unsigned long long)st[1], (unsigned long long)st[2],
                      (unsigned long long)ct[0], (unsigned long long)ct[1], (unsigned long long)ct[2]);
        }
        zgpu_array_close(a);
    }
    free(all);
    free(box);
}

/* A context whose tuning sets partial_decode. */
static zgpu_context *context_with(zgpu_switch partial) {
    zgpu_tuning t;
    zgpu_tuning_init(&t);
    t.partial_decode = partial;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.tuning = &t;
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    return ctx;
}

/* The metadata of a uint16 array of one chunk (shape: "d0, d1, ..."), bytes then `codec`. */
/* The metadata of an array of `dtype` (shape and chunks: "d0, d1, ..."), bytes then `codec`. */
static void array_meta(char *meta, size_t n, const char *shape, const char *chunks, const char *dtype,
                       const char *codec) {
    snprintf(meta, n,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [%s], \"data_type\": \"%s\", "
             "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [%s]}}, "
             "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", "
             "\"configuration\": {\"endian\": \"little\"}}, %s]}",
             shape, dtype, chunks, codec);
}

static void one_chunk_meta(char *meta, size_t n, const char *shape, const char *codec) {
    array_meta(meta, n, shape, shape, "uint16", codec);
}

/* A new array at path (metadata meta) in a context of its own; NULL (nothing to free) when either fails. */
/* A new array at path with a context of `threads` threads (0: the default); NULL (and *ctx NULL) where either
 * failed. */
static zgpu_array *array_with_threads(const char *path, const char *meta, int threads, zgpu_context **ctx) {
    *ctx = NULL;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    if (threads) o.num_threads = threads;
    CHECK_OK(zgpu_context_create(&o, ctx));
    zgpu_array *a = NULL;
    if (*ctx) CHECK_OK(zgpu_array_create(*ctx, path, meta, 1, &a));
    if (!a) {
        zgpu_context_free(*ctx);
        *ctx = NULL;
    }
    return a;
}

static zgpu_array *array_at(const char *path, const char *meta, zgpu_context **ctx) {
    *ctx = NULL;
    CHECK_OK(zgpu_context_create(NULL, ctx));
    zgpu_array *a = NULL;
    if (*ctx) CHECK_OK(zgpu_array_create(*ctx, path, meta, 1, &a));
    if (!a) {
        zgpu_context_free(*ctx);
        *ctx = NULL;
    }
    return a;
}

/* With partial_decode off every read of a chunk reads and checks it whole: one of a damaged chunk fails, whatever
 * part of it the read needs. */
static void whole_read_fails(const char *path, const uint64_t *start, const uint64_t *count, void *box) {
    zgpu_context *whole = context_with(ZGPU_SWITCH_OFF);
    zgpu_array *b = NULL;
    CHECK_OK(zgpu_array_open(whole, path, &b));
    if (b) CHECK(zgpu_array_read(b, start, count, box, NULL) == ZGPU_ERR_CORRUPT_DATA);
    zgpu_array_close(b);
    zgpu_context_free(whole);
}

/* A blosc chunk needed in part is read in part: a plane of a 4-block chunk reads its header, block starts and one
 * block; a fault in a block the read does not need does not fail it, one in a block it needs does (naming the
 * chunk), and with partial_decode off the whole chunk is read and checked again. */
static void ranged_reads(const char *dir) {
    char path[512], meta[2048], file[600];
    snprintf(path, sizeof path, "%s/ranged", dir);
    one_chunk_meta(meta, sizeof meta, "64, 64, 64",
                   "{\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": "
                   "\"shuffle\", \"typesize\": 2, \"blocksize\": 65536}}");
    zgpu_context *ctx = NULL;
    zgpu_array *a = array_at(path, meta, &ctx);
    if (!a) return;
    uint16_t *all = malloc(64 * 64 * 64 * 2), *box = malloc(64 * 64 * 2);
    uint32_t stored = 0, nblocks = 0;
    for (uint64_t i = 0; i < 64 * 64 * 64; i++) all[i] = array_value(i / 4096, (i / 64) % 64, i % 64);
    const uint64_t s0[3] = {0, 0, 0}, c0[3] = {64, 64, 64};
    CHECK_OK(zgpu_array_write(a, s0, c0, all, NULL));
    snprintf(file, sizeof file, "%s/c/0/0/0", path);
    FILE *fp = fopen(file, "r+b");
    CHECK(fp != NULL);
    if (!fp) goto out;
    uint8_t head[32];
    CHECK(fread(head, 1, 32, fp) == 32);
    stored = head[12] | head[13] << 8 | head[14] << 16 | (uint32_t)head[15] << 24;
    const uint32_t block = head[8] | head[9] << 8 | head[10] << 16 | (uint32_t)head[11] << 24;
    nblocks = block ? (64 * 64 * 64 * 2 + block - 1) / block : 0;
    CHECK_MSG(nblocks >= 3 && !(head[2] & 0x02), "blosc block %u, flags 0x%x", block, head[2]);
    const uint64_t plane0[3] = {0, 0, 0}, plane63[3] = {63, 0, 0}, one_plane[3] = {1, 64, 64};
    CHECK_OK(zgpu_array_read(a, plane0, one_plane, box, NULL));
    CHECK(box[0] == array_value(0, 0, 0) && box[4095] == array_value(0, 63, 63));
    zgpu_read_stats rs;
    memset(&rs, 0, sizeof rs);
    rs.struct_size = sizeof rs;
    zgpu_array_last_read_stats(a, &rs);
    CHECK_MSG(rs.stored_bytes > 0 && rs.stored_bytes < stored / 2, "a plane read %llu of the chunk's %u stored bytes",
              (unsigned long long)rs.stored_bytes, stored);
    /* the last block's start pointing past the chunk */
    const uint32_t past = stored + 1000;
    fseek(fp, 16 + 4 * (long)(nblocks - 1), SEEK_SET);
    CHECK(fwrite(&past, 4, 1, fp) == 1);
    fclose(fp);
    memset(box, 0, 64 * 64 * 2);
    CHECK_OK(zgpu_array_read(a, plane0, one_plane, box, NULL));
    CHECK(box[0] == array_value(0, 0, 0) && box[4095] == array_value(0, 63, 63));
    zgpu_status st = zgpu_array_read(a, plane63, one_plane, box, NULL);
    CHECK(st == ZGPU_ERR_CORRUPT_DATA);
    CHECK_MSG(strstr(zgpu_last_error(), "c/0/0/0") && strstr(zgpu_last_error(), "blosc: block"), "%s", zgpu_last_error());
    whole_read_fails(path, plane0, one_plane, box);
out:
    free(all);
    free(box);
    zgpu_array_close(a);
    zgpu_context_free(ctx);
}

/* A zstd chunk needed in part decodes from its start up to the last byte needed, by default: a plane of a chunk of
 * four 128 KiB zstd blocks never decodes its last block, so garbage there fails only reads that need it (and every
 * read with partial_decode off, which decodes whole chunks). */
static void prefix_reads(const char *dir) {
    char path[512], meta[2048], file[600];
    snprintf(path, sizeof path, "%s/prefix", dir);
    one_chunk_meta(meta, sizeof meta, "4, 256, 256",
                   "{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}");
    zgpu_context *ctx = NULL;
    zgpu_array *a = array_at(path, meta, &ctx);
    if (!a) return;
    const size_t n = 4 * 256 * 256;
    uint16_t *all = malloc(n * 2), *box = malloc(256 * 256 * 2);
    for (size_t i = 0; i < n; i++) all[i] = value_at(i);
    const uint64_t s0[3] = {0, 0, 0}, c0[3] = {4, 256, 256};
    CHECK_OK(zgpu_array_write(a, s0, c0, all, NULL));
    snprintf(file, sizeof file, "%s/c/0/0/0", path);
    FILE *fp = fopen(file, "r+b");
    CHECK(fp != NULL);
    if (!fp) goto out;
    uint8_t *enc = malloc(n * 2 + 1024);
    const size_t en = fread(enc, 1, n * 2 + 1024, fp);
    /* the last block: walk the block headers after the frame header (magic, descriptor, content size) */
    const uint8_t fhd = en > 5 ? enc[4] : 0;
    const size_t fcs = (size_t[]){(fhd & 0x20) ? 1 : 0, 2, 4, 8}[fhd >> 6];
    size_t at = 5 + ((fhd & 0x20) ? 0 : 1) + (size_t[]){0, 1, 2, 4}[fhd & 3] + fcs, last = 0;
    int blocks = 0;
    while (at + 3 <= en) {
        const uint32_t bh = enc[at] | enc[at + 1] << 8 | (uint32_t)enc[at + 2] << 16;
        const uint32_t size = (bh >> 3 & 3) == 1 ? 1 : bh >> 3; /* (an RLE block stores one byte) */
        last = at;
        blocks++;
        at += 3 + size;
        if (bh & 1) break;
    }
    CHECK_MSG(blocks == 4 && at == en && (enc[last] >> 1 & 3) == 2, "%d blocks, the last of type %d", blocks,
              enc[last] >> 1 & 3);
    /* the last block's content: garbage */
    for (size_t k = last + 3; k < en; k++) enc[k] = 0xFF;
    fseek(fp, 0, SEEK_SET);
    CHECK(fwrite(enc, 1, en, fp) == en);
    fclose(fp);
    free(enc);
    const uint64_t plane0[3] = {0, 0, 0}, plane3[3] = {3, 0, 0}, one_plane[3] = {1, 256, 256};
    memset(box, 0, 256 * 256 * 2);
    CHECK_OK(zgpu_array_read(a, plane0, one_plane, box, NULL));
    CHECK(!memcmp(box, all, 256 * 256 * 2));
    zgpu_status st = zgpu_array_read(a, plane3, one_plane, box, NULL);
    CHECK(st == ZGPU_ERR_CORRUPT_DATA);
    CHECK_MSG(strstr(zgpu_last_error(), "c/0/0/0") && strstr(zgpu_last_error(), "zstd"), "%s", zgpu_last_error());
    whole_read_fails(path, plane0, one_plane, box);
out:
    free(all);
    free(box);
    zgpu_array_close(a);
    zgpu_context_free(ctx);
}

/* A new uint16 array dir/name of `shape` in 64x128x128 blosc-LZ4 chunks (2 MiB, 16 blocks), with a
 * context of `threads` threads. */
static zgpu_array *blosc_u16_array(const char *dir, const char *name, const char *shape, int threads,
                                   zgpu_context **ctx) {
    char path[512], meta[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    array_meta(meta, sizeof meta, shape, "64, 128, 128", "uint16",
               "{\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", "
               "\"typesize\": 2}}");
    return array_with_threads(path, meta, threads, ctx);
}

/* A read of fewer chunks than threads splits its boxes along axis 0 into pieces, each reading and decoding its own
 * blocks (host/host_read.c, split_pieces): 8 threads, one 2 MiB chunk of 16 blosc blocks, boxes of every height
 * against the values written. */
static void pieces(const char *dir) {
    zgpu_context *ctx = NULL;
    zgpu_array *a = blosc_u16_array(dir, "pieces", "64, 128, 130", 8, &ctx);
    if (!a) return;
    const uint64_t n = 64 * 128 * 130;
    uint16_t *all = malloc(n * 2), *box = malloc(n * 2);
    for (uint64_t i = 0; i < n; i++) all[i] = array_value(i / (128 * 130), (i / 130) % 128, i % 130);
    const uint64_t s0[3] = {0, 0, 0}, c0[3] = {64, 128, 130};
    CHECK_OK(zgpu_array_write(a, s0, c0, all, NULL));
    int bad = 0;
    for (int round = 0; round < 60 && !bad; round++) {
        uint64_t st[3], ct[3];
        ct[0] = 1 + rnd() % 64;
        ct[1] = round % 4 == 0 ? 128 : 1 + rnd() % 128;
        ct[2] = round % 5 == 0 ? 130 : 1 + rnd() % 128; /* (some boxes reach the second chunk along x) */
        for (int d = 0; d < 3; d++) st[d] = rnd() % (c0[d] - ct[d] + 1);
        CHECK_OK(zgpu_array_read(a, st, ct, box, NULL));
        for (uint64_t z = 0; z < ct[0] && !bad; z++)
            for (uint64_t y = 0; y < ct[1] && !bad; y++)
                for (uint64_t x = 0; x < ct[2] && !bad; x++)
                    bad = box[(z * ct[1] + y) * ct[2] + x] != array_value(st[0] + z, st[1] + y, st[2] + x);
        CHECK_MSG(!bad, "box [%llu %llu %llu] + [%llu %llu %llu] differs", (unsigned long long)st[0],
                  (unsigned long long)st[1], (unsigned long long)st[2], (unsigned long long)ct[0],
                  (unsigned long long)ct[1], (unsigned long long)ct[2]);
    }
    /* several boxes in one batch, overlapping and far apart in one chunk */
    const uint64_t starts[9] = {0, 0, 0, 40, 10, 3, 2, 1, 0}, counts[9] = {30, 128, 128, 24, 100, 120, 60, 20, 128};
    uint16_t *b0 = malloc(30 * 128 * 128 * 2), *b1 = malloc(24 * 100 * 120 * 2), *b2 = malloc(60 * 20 * 128 * 2);
    void *outs[3] = {b0, b1, b2};
    CHECK_OK(zgpu_array_read_regions(a, 3, starts, counts, outs, NULL, NULL));
    const uint16_t *bs[3] = {b0, b1, b2};
    for (int r = 0; r < 3 && !bad; r++)
        for (uint64_t z = 0; z < counts[3 * r] && !bad; z++)
            for (uint64_t y = 0; y < counts[3 * r + 1] && !bad; y++)
                for (uint64_t x = 0; x < counts[3 * r + 2] && !bad; x++)
                    bad = bs[r][(z * counts[3 * r + 1] + y) * counts[3 * r + 2] + x] !=
                          array_value(starts[3 * r] + z, starts[3 * r + 1] + y, starts[3 * r + 2] + x);
    CHECK_MSG(!bad, "batch of three boxes differs");
    free(b0);
    free(b1);
    free(b2);
    free(all);
    free(box);
    zgpu_array_close(a);
    zgpu_context_free(ctx);
}

/* A batch over as many chunks as threads or more is balanced in pieces too (split_pieces): a unit's boxes become
 * pieces of their own and a box of more than half a thread's share is cut. 4 threads, 6 chunks of 2 MiB (16 blosc
 * blocks), batches of crops and of patches (many boxes a chunk), and of one tall box (cut in four) beside a small
 * box in each other chunk, against the values written. */
static void pieces_many_chunks(const char *dir) {
    zgpu_context *ctx = NULL;
    zgpu_array *a = blosc_u16_array(dir, "pieces_many", "64, 256, 260", 4, &ctx);
    if (!a) return;
    const uint64_t shape[3] = {64, 256, 260}, n = 64 * 256 * 260, s0[3] = {0, 0, 0};
    uint16_t *all = malloc(n * 2);
    for (uint64_t i = 0; i < n; i++) all[i] = array_value(i / (256 * 260), (i / 260) % 256, i % 260);
    CHECK_OK(zgpu_array_write(a, s0, shape, all, NULL));
    enum { BOXES = 40 };
    uint64_t starts[BOXES * 3], counts[BOXES * 3];
    void *outs[BOXES];
    int bad = 0;
    for (int round = 0; round < 9 && !bad; round++) {
        const int kind = round % 3, nb = kind == 2 ? 6 : BOXES;
        for (int b = 0; b < nb; b++) {
            uint64_t *st = starts + 3 * b, *ct = counts + 3 * b;
            ct[0] = kind == 1 ? 1 : 1 + rnd() % 64; /* (patches of one plane; crops up to the chunk's height) */
            ct[1] = 1 + rnd() % 160;
            ct[2] = 1 + rnd() % 160;
            for (int d = 0; d < 3; d++) st[d] = rnd() % (shape[d] - ct[d] + 1);
            if (kind == 2) { /* box 0: the whole first chunk but a column; the others: a few values in chunk b */
                ct[0] = b ? 1 + rnd() % 3 : 64;
                ct[1] = b ? 1 + rnd() % 8 : 128;
                ct[2] = b ? 1 + rnd() % 2 : 127;
                st[0] = b ? rnd() % 60 : 0;
                st[1] = b ? (uint64_t)(b / 3) * 128 + rnd() % 100 : 0;
                st[2] = (uint64_t)(b % 3) * 128 + (b ? rnd() % 2 : 1); /* (the third column of chunks is 4 wide) */
            }
            outs[b] = malloc(ct[0] * ct[1] * ct[2] * 2);
        }
        CHECK_OK(zgpu_array_read_regions(a, (size_t)nb, starts, counts, outs, NULL, NULL));
        for (int b = 0; b < nb; b++) {
            const uint64_t *st = starts + 3 * b, *ct = counts + 3 * b;
            const uint16_t *box = outs[b];
            for (uint64_t z = 0; z < ct[0] && !bad; z++)
                for (uint64_t y = 0; y < ct[1] && !bad; y++)
                    for (uint64_t x = 0; x < ct[2] && !bad; x++)
                        bad = box[(z * ct[1] + y) * ct[2] + x] != array_value(st[0] + z, st[1] + y, st[2] + x);
            CHECK_MSG(!bad, "round %d, box %d [%llu %llu %llu] + [%llu %llu %llu] differs", round, b,
                      (unsigned long long)st[0], (unsigned long long)st[1], (unsigned long long)st[2],
                      (unsigned long long)ct[0], (unsigned long long)ct[1], (unsigned long long)ct[2]);
            free(outs[b]);
        }
    }
    free(all);
    zgpu_array_close(a);
    zgpu_context_free(ctx);
}

/* A segmentation's value at (z, y, x): cells of 8 planes x 12 rows x 10 columns (long zstd matches). */
/* An uncompressed chunk needed in part reads only the bytes from the first to the last it needs (a plane of a 512 KiB
 * chunk: its 8 KiB), swapped where it is big-endian, alone in a shard too; one of another size (truncated) fails
 * every read of it, naming the chunk, as its whole read does: a short chunk is never read in part. */
static void raw_reads(const char *dir) {
    char path[512], meta[2048], file[600];
    zgpu_context *ctx = NULL;
    zgpu_array *a = NULL;
    uint16_t *all = malloc(64 * 64 * 64 * 2), *box = malloc(64 * 64 * 64 * 2);
    for (uint64_t i = 0; i < 64 * 64 * 64; i++) all[i] = array_value(i / 4096, (i / 64) % 64, i % 64);
    const uint64_t s0[3] = {0, 0, 0}, c0[3] = {64, 64, 64};
    zgpu_read_stats rs;
    for (int big = 1; big >= 0; big--) { /* (big-endian chunks are swapped as they are read; the little one stays) */
        zgpu_array_close(a);
        zgpu_context_free(ctx);
        snprintf(path, sizeof path, "%s/raw%s", dir, big ? "_big" : "");
        snprintf(meta, sizeof meta,
                 "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [64, 64, 64], \"data_type\": \"uint16\", "
                 "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [64, 64, 64]}}, "
                 "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", "
                 "\"configuration\": {\"endian\": \"%s\"}}]}", big ? "big" : "little");
        a = array_with_threads(path, meta, 1, &ctx);
        if (!a) {
            free(all);
            free(box);
            return;
        }
        const zg_chain *ch = a->chain;
        CHECK(zg_chain_stores_raw(ch) && zg_chain_decodes_ranges(ch) && zg_chain_reads_spans(ch));
        zgpu_tuning t;
        zgpu_tuning_init(&t);
        CHECK_EQ_U64(zg_host_partial_kind(&t, ch), ZG_PARTIAL_SPANS);
        CHECK_OK(zgpu_array_write(a, s0, c0, all, NULL));
        const struct {
            uint64_t s[3], c[3];
        } boxes[] = {{{0, 0, 0}, {1, 64, 64}}, {{63, 0, 0}, {1, 64, 64}}, {{10, 5, 3}, {2, 4, 4}}, {{5, 60, 0}, {30, 4, 64}}};
        for (size_t b = 0; b < sizeof boxes / sizeof *boxes; b++) {
            const uint64_t *st = boxes[b].s, *ct = boxes[b].c;
            memset(box, 0, 64 * 64 * 64 * 2);
            CHECK_OK(zgpu_array_read(a, st, ct, box, NULL));
            int bad = 0;
            for (uint64_t z = 0; z < ct[0]; z++)
                for (uint64_t y = 0; y < ct[1]; y++)
                    for (uint64_t x = 0; x < ct[2]; x++)
                        bad |= box[(z * ct[1] + y) * ct[2] + x] != array_value(st[0] + z, st[1] + y, st[2] + x);
            CHECK_MSG(!bad, "box %zu of the uncompressed chunk (%s-endian) differs", b, big ? "big" : "little");
            const uint64_t lo = ((st[0] * 64 + st[1]) * 64 + st[2]) * 2,
                           hi = (((st[0] + ct[0] - 1) * 64 + st[1] + ct[1] - 1) * 64 + st[2] + ct[2]) * 2;
            memset(&rs, 0, sizeof rs);
            rs.struct_size = sizeof rs;
            zgpu_array_last_read_stats(a, &rs);
            CHECK_MSG(rs.stored_bytes == hi - lo, "box %zu read %llu stored bytes, its span is %llu", b,
                      (unsigned long long)rs.stored_bytes, (unsigned long long)(hi - lo));
        }
    }
    /* two bytes short: every read fails, a plane far from the end too */
    snprintf(file, sizeof file, "%s/c/0/0/0", path);
    CHECK(truncate(file, 64 * 64 * 64 * 2 - 2) == 0);
    const uint64_t plane[3] = {0, 0, 0}, one_plane[3] = {1, 64, 64};
    CHECK(zgpu_array_read(a, plane, one_plane, box, NULL) == ZGPU_ERR_CORRUPT_DATA);
    CHECK_MSG(strstr(zgpu_last_error(), "c/0/0/0") && strstr(zgpu_last_error(), "bytes") &&
              strstr(zgpu_last_error(), "524286"), "%s", zgpu_last_error());
    zgpu_array_close(a);
    zgpu_context_free(ctx);
    /* a shard of uncompressed inner chunks: a plane of one reads its index and that plane */
    snprintf(path, sizeof path, "%s/raw_sharded", dir);
    snprintf(meta, sizeof meta,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [64, 64, 64], \"data_type\": \"uint16\", "
             "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [64, 64, 64]}}, "
             "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": "
             "\"sharding_indexed\", \"configuration\": {\"chunk_shape\": [32, 32, 32], \"codecs\": [{\"name\": \"bytes\", "
             "\"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": \"bytes\", "
             "\"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]}");
    a = array_with_threads(path, meta, 1, &ctx);
    if (a) {
        CHECK_OK(zgpu_array_write(a, s0, c0, all, NULL));
        const uint64_t ps[3] = {40, 0, 0}, pc[3] = {1, 32, 32};
        CHECK_OK(zgpu_array_read(a, ps, pc, box, NULL));
        CHECK(box[0] == array_value(40, 0, 0) && box[1023] == array_value(40, 31, 31));
        memset(&rs, 0, sizeof rs);
        rs.struct_size = sizeof rs;
        zgpu_array_last_read_stats(a, &rs);
        CHECK_MSG(rs.stored_bytes == 32 * 32 * 2, "a plane of an inner chunk read %llu stored bytes",
                  (unsigned long long)rs.stored_bytes);
    }
    zgpu_array_close(a);
    zgpu_context_free(ctx);
    free(all);
    free(box);
}

static uint32_t label_at(uint64_t z, uint64_t y, uint64_t x) {
    return (uint32_t)(((z / 8) * 7919 + (y / 12) * 104729 + (x / 10) * 1299709) % 50000);
}

/* Whether box (C order, `count`) holds the labels of [start, start + count). */
static int labels_match(const uint32_t *box, const uint64_t *start, const uint64_t *count) {
    for (uint64_t z = 0; z < count[0]; z++)
        for (uint64_t y = 0; y < count[1]; y++)
            for (uint64_t x = 0; x < count[2]; x++)
                if (box[(z * count[1] + y) * count[2] + x] != label_at(start[0] + z, start[1] + y, start[2] + x))
                    return 0;
    return 1;
}

/* Crops, patches and batches of boxes of a label array (zstd, 4 MiB chunks) read with 1 and 8 threads: only the rows
 * the boxes need are decoded (codec/zstd_split.h, zg_zstd_decode_sparse), against the values written; the sparse
 * decodes counted so that the path is known to have run. */
static void sparse_reads(const char *dir) {
    char path[512], meta[2048];
    snprintf(path, sizeof path, "%s/labels", dir);
    static const char zstd3[] = "{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}";
    array_meta(meta, sizeof meta, "64, 256, 250", "32, 128, 256", "uint32", zstd3);
    const uint64_t shape[3] = {64, 256, 250}, n = 64 * 256 * 250;
    uint32_t *all = malloc(n * 4), *box = malloc(n * 4);
    for (uint64_t i = 0; i < n; i++) all[i] = label_at(i / (256 * 250), (i / 250) % 256, i % 250);
    const zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
    for (int threads = 1; threads <= 8; threads += 7) {
        zgpu_context_options o;
        zgpu_context_options_init(&o);
        o.num_threads = threads;
        zgpu_context *ctx = NULL;
        CHECK_OK(zgpu_context_create(&o, &ctx));
        zgpu_array *a = NULL;
        if (ctx) CHECK_OK(threads == 1 ? zgpu_array_create(ctx, path, meta, 1, &a) : zgpu_array_open(ctx, path, &a));
        if (!a) {
            zgpu_context_free(ctx);
            break;
        }
        const uint64_t s00[3] = {0, 0, 0};
        if (threads == 1) CHECK_OK(zgpu_array_write(a, s00, shape, all, NULL));
        int bad = 0;
        for (int round = 0; round < 40 && !bad; round++) {
            uint64_t st[3], ct[3];
            ct[0] = round % 3 == 0 ? 1 : 1 + rnd() % 24;
            ct[1] = round % 3 == 0 ? 1 + rnd() % 256 : 1 + rnd() % 100;
            ct[2] = round % 4 == 0 ? 250 : 16 + rnd() % 100;
            for (int d = 0; d < 3; d++) st[d] = rnd() % (shape[d] - ct[d] + 1);
            CHECK_OK(zgpu_array_read(a, st, ct, box, NULL));
            bad = !labels_match(box, st, ct);
            CHECK_MSG(!bad, "%d threads: labels box [%llu %llu %llu] + [%llu %llu %llu] differs", threads,
                      (unsigned long long)st[0], (unsigned long long)st[1], (unsigned long long)st[2],
                      (unsigned long long)ct[0], (unsigned long long)ct[1], (unsigned long long)ct[2]);
        }
        /* boxes of a batch sharing chunks, overlapping: one decode of each chunk's runs of all of them */
        const uint64_t starts[9] = {3, 10, 20, 5, 40, 60, 40, 130, 0}, counts[9] = {8, 60, 70, 8, 60, 70, 1, 100, 250};
        uint32_t *b[3] = {malloc(8 * 60 * 70 * 4), malloc(8 * 60 * 70 * 4), malloc(100 * 250 * 4)};
        void *outs[3] = {b[0], b[1], b[2]};
        CHECK_OK(zgpu_array_read_regions(a, 3, starts, counts, outs, NULL, NULL));
        for (int r = 0; r < 3 && !bad; r++) bad = !labels_match(b[r], starts + 3 * r, counts + 3 * r);
        CHECK_MSG(!bad, "%d threads: labels batch of three boxes differs", threads);
        for (int r = 0; r < 3; r++) free(b[r]);
        /* a box of most of one chunk (4 MB): with threads to spare, placed by several in slabs (place_par) */
        const uint64_t big_s[3] = {32, 128, 3}, big_c[3] = {32, 128, 247};
        CHECK_OK(zgpu_array_read(a, big_s, big_c, box, NULL));
        bad = !labels_match(box, big_s, big_c);
        CHECK_MSG(!bad, "%d threads: a box of most of a chunk differs", threads);
        /* batches of 2 to 13 random boxes, many in one chunk and overlapping: each unit's runs merged in order */
        for (int round = 0; round < 12 && !bad; round++) {
            const size_t nb = 2 + (size_t)round;
            uint64_t bst[13 * 3], bct[13 * 3];
            void *bouts[13];
            for (size_t r = 0; r < nb; r++) {
                uint64_t *st = bst + 3 * r, *ct = bct + 3 * r;
                ct[0] = 1 + rnd() % 12;
                ct[1] = 1 + rnd() % 90;
                ct[2] = r % 3 == 0 ? 250 : 20 + rnd() % 100;
                for (int d = 0; d < 3; d++) st[d] = rnd() % (shape[d] - ct[d] + 1);
                bouts[r] = malloc(ct[0] * ct[1] * ct[2] * 4);
            }
            CHECK_OK(zgpu_array_read_regions(a, nb, bst, bct, bouts, NULL, NULL));
            for (size_t r = 0; r < nb; r++) {
                if (!bad) bad = !labels_match(bouts[r], bst + 3 * r, bct + 3 * r);
                free(bouts[r]);
            }
            CHECK_MSG(!bad, "%d threads: labels batch of %zu random boxes differs", threads, nb);
        }
        /* thin boxes (1-5 columns: rows of 4-20 bytes, widened to 256 within the chunk's row) in a batch, and a
         * box into a strided destination (every other element: the chunk's rows placed, not written there) */
        const unsigned long long sparse0 = zg_zstd_split_stats_get().sparse;
        for (int round = 0; round < 6 && !bad; round++) {
            uint64_t tst[4 * 3], tct[4 * 3];
            void *touts[4];
            for (size_t r = 0; r < 4; r++) {
                uint64_t *st = tst + 3 * r, *ct = tct + 3 * r;
                ct[0] = 1 + rnd() % 20;
                ct[1] = 1 + rnd() % 100;
                ct[2] = 1 + rnd() % 5;
                for (int d = 0; d < 3; d++) st[d] = rnd() % (shape[d] - ct[d] + 1);
                if (r == 3) st[2] = shape[2] - ct[2]; /* (one at the array's edge) */
                touts[r] = malloc(ct[0] * ct[1] * ct[2] * 4);
            }
            CHECK_OK(zgpu_array_read_regions(a, 4, tst, tct, touts, NULL, NULL));
            for (size_t r = 0; r < 4; r++) {
                if (!bad) bad = !labels_match(touts[r], tst + 3 * r, tct + 3 * r);
                free(touts[r]);
            }
            CHECK_MSG(!bad, "%d threads: labels batch of thin boxes differs", threads);
        }
        CHECK_MSG(zg_zstd_split_stats_get().sparse > sparse0, "%d threads: thin boxes not decoded sparse", threads);
        const uint64_t ss[3] = {10, 50, 60}, sc[3] = {3, 40, 90};
        const int64_t sstr[3] = {40 * 90 * 8, 90 * 8, 8};
        uint32_t *wide = malloc(3 * 40 * 90 * 8), *packed = malloc(3 * 40 * 90 * 4);
        CHECK_OK(zgpu_array_read(a, ss, sc, wide, sstr));
        for (size_t i = 0; i < 3 * 40 * 90; i++) packed[i] = wide[2 * i];
        bad = !labels_match(packed, ss, sc);
        CHECK_MSG(!bad, "%d threads: labels box into a strided destination differs", threads);
        free(wide);
        free(packed);
        /* a converting read (float32, scaled): the rows are decoded sparse, then converted as they are placed */
        zgpu_read_options ro;
        zgpu_read_options_init(&ro);
        ro.out_dtype = ZGPU_FLOAT32;
        ro.scale = 0.5;
        const uint64_t cs[3] = {20, 30, 40}, cc[3] = {12, 90, 200}; /* (two chunks along axis 0) */
        float *f = malloc(12 * 90 * 200 * sizeof *f);
        CHECK_OK(zgpu_array_read_ex(a, cs, cc, f, NULL, &ro));
        for (uint64_t z = 0; z < cc[0] && !bad; z++)
            for (uint64_t y = 0; y < cc[1] && !bad; y++)
                for (uint64_t x = 0; x < cc[2] && !bad; x++)
                    bad = f[(z * cc[1] + y) * cc[2] + x] != (float)(0.5 * label_at(cs[0] + z, cs[1] + y, cs[2] + x));
        CHECK_MSG(!bad, "%d threads: labels read as scaled float32 differs", threads);
        free(f);
        zgpu_array_close(a);
        zgpu_context_free(ctx);
    }
    /* zstd inside a crc32c: the chain has two stages, so the rows are not decoded alone (zg_chain_decode_runs falls
     * back to the prefix, the checksum verified whole first) */
    char cpath[600], cmeta[1024];
    snprintf(cpath, sizeof cpath, "%s/labels_crc", dir);
    array_meta(cmeta, sizeof cmeta, "64, 256, 250", "32, 128, 256", "uint32",
               "{\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": false}}, {\"name\": \"crc32c\"}");
    zgpu_context *cctx = NULL;
    zgpu_array *ca = array_at(cpath, cmeta, &cctx);
    if (ca) {
        const uint64_t s00[3] = {0, 0, 0};
        CHECK_OK(zgpu_array_write(ca, s00, shape, all, NULL));
        const unsigned long long before = zg_zstd_split_stats_get().sparse;
        const uint64_t cs[3] = {40, 100, 30}, cc[3] = {20, 60, 200};
        CHECK_OK(zgpu_array_read(ca, cs, cc, box, NULL));
        CHECK_MSG(labels_match(box, cs, cc), "labels inside a crc32c: box differs");
        CHECK(zg_zstd_split_stats_get().sparse == before);
        zgpu_array_close(ca);
        zgpu_context_free(cctx);
    }
    /* a zstd scalar read converting (its one chunk is decoded as a partial one: nothing to split into rows) */
    char spath[600], smeta[1024];
    snprintf(spath, sizeof spath, "%s/scalar", dir);
    array_meta(smeta, sizeof smeta, "", "", "uint32", zstd3);
    zgpu_context *sctx = NULL;
    zgpu_array *sa = array_at(spath, smeta, &sctx);
    if (sa) {
        const uint32_t v = 4242;
        CHECK_OK(zgpu_array_write(sa, NULL, NULL, &v, NULL));
        zgpu_read_options ro;
        zgpu_read_options_init(&ro);
        ro.out_dtype = ZGPU_FLOAT64;
        ro.offset = 1;
        double got = 0;
        CHECK_OK(zgpu_array_read_ex(sa, NULL, NULL, &got, NULL, &ro));
        CHECK_MSG(got == 4243.0, "scalar read as float64: %g", got);
        zgpu_array_close(sa);
        zgpu_context_free(sctx);
    }
    const unsigned long long sparse = zg_zstd_split_stats_get().sparse - s0.sparse;
    printf("labels: %llu chunks decoded sparse\n", sparse);
    CHECK(sparse >= 40);
    free(all);
    free(box);
}

int main(void) {
    uint16_t *vals = malloc(RAW_N);
    for (size_t i = 0; i < RAW_N / 2; i++) vals[i] = value_at(i);
    zg_repr repr = {.ndim = 3, .shape = {NZ, NY, NX}};
    zj_value *dt = zj_new_string("uint16");
    CHECK_OK(zg_dtype_from_v3(dt, &repr.dtype));
    zj_free(dt);
    static const uint8_t zero[8] = {0};
    repr.fill_value = zero;
    codec_ranges((const uint8_t *)vals, &repr);
    chain_ranges((const uint8_t *)vals, &repr);
    free(vals);

    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/zgpu_test_decode_range_%d", (int)getpid());
    mkdir(dir, 0755);
    /* partial_decode ON and the default (the same: zstd frames stop short, blosc reads blocks) */
    zgpu_context *ctx = context_with(ZGPU_SWITCH_ON);
    if (ctx) array_boxes(ctx, dir);
    char dir2[300];
    snprintf(dir2, sizeof dir2, "%s/default", dir);
    mkdir(dir2, 0755);
    zgpu_context *dflt = context_with(ZGPU_SWITCH_DEFAULT);
    if (dflt) array_boxes(dflt, dir2);
    zgpu_context_free(dflt);
    ranged_reads(dir);
    raw_reads(dir);
    prefix_reads(dir);
    pieces(dir);
    pieces_many_chunks(dir);
    sparse_reads(dir);
    zgpu_context_free(ctx);
    zt_remove_dir(dir);
    TEST_MAIN_END();
}
