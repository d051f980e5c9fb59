/* One zstd frame decoded by several threads (src/codec/zstd_split.c), through the codec's decode_bytes_split as
 * reads call it: every case of zstd_cases.h whole and in part at 2-8 ways against the original bytes; frames whose
 * runs must resolve matches in earlier runs, and ones whose chains run too deep for that (finished in order);
 * damaged frames give libzstd's verdict (an error, or exactly libzstd's bytes); layouts it declines still decode. */
#include <stdio.h>
#include <unistd.h>

#include "api/array.h"
#include "codec/zstd_split.h"
#include "common/status.h"
#include "host/pool.h"
#include "test.h"
#include "zstd_cases.h"

extern const zg_codec_vtable zg_codec_zstd;

static zg_pool *pool;
static zg_codec *codec;

static zgpu_status split(const uint8_t *in, size_t n, uint8_t *out, size_t size, size_t lo, size_t hi, int ways) {
    zg_decode_par par = {pool, ways};
    return codec->vt->decode_bytes_split(codec, in, n, out, size, lo, hi, &par);
}

/* The split itself, whatever zg_zstd_split_speedup expects of it (label chunks: none); *declined when it does not
 * apply (then the frame is decoded on this thread, as the codec would). */
static zgpu_status forced(const uint8_t *in, size_t n, uint8_t *out, size_t size, size_t hi, int ways, int *declined) {
    zg_decode_par par = {pool, ways};
    zgpu_status st = zg_zstd_decode_split(in, n, out, size, hi, &par, 0, declined);
    if (st == ZGPU_OK && *declined) return split(in, n, out, size, 0, hi, 1);
    return st;
}

/* A decode through the codec at `ways`, checked against raw: how many frames it split (0 or 1). */
static unsigned long long codec_splits(const uint8_t *comp, size_t cn, const uint8_t *raw, size_t n, uint8_t *out,
                                       int ways) {
    const zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
    CHECK(split(comp, cn, out, n, 0, n, ways) == ZGPU_OK && !memcmp(out, raw, n));
    return zg_zstd_split_stats_get().frames - s0.frames;
}

/* Pool tasks that each decode a frame split: the nesting host reads do (a task's decode runs jobs on its pool). */
typedef struct nest_job {
    const zcase *c;
    uint8_t **outs;
    zgpu_status *st;
} nest_job;

static zgpu_status nest_task(void *arg, size_t i) {
    nest_job *nj = arg;
    int declined;
    nj->st[i] = forced(nj->c->comp, nj->c->cn, nj->outs[i], nj->c->n, nj->c->n, 4, &declined);
    return ZGPU_OK;
}

static void test_cases(zcase *cs, size_t n) {
    size_t split_cases = 0, ok = 0, part_ok = 0, parts = 0;
    zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
    for (size_t i = 0; i < n; i++) {
        const zcase *c = &cs[i];
        uint8_t *out = malloc(c->n + 1);
        split_cases += c->n >= ZG_ZSTD_SPLIT_MIN;
        int declined;
        for (int ways = 2; ways <= 8; ways *= 2) {
            memset(out, 0xA5, c->n);
            zgpu_status st = forced(c->comp, c->cn, out, c->n, c->n, ways, &declined);
            int good = st == ZGPU_OK && !memcmp(out, c->raw, c->n);
            CHECK_MSG(good, "%s at %d ways: %s", c->name, ways, st == ZGPU_OK ? "bytes differ" : zgpu_last_error());
            ok += good;
            /* part: [lo, hi) right, whatever the rest holds */
            const size_t lo = c->n / 3, hi = c->n / 2 + 1;
            if (hi <= lo || hi > c->n) continue;
            memset(out, 0xA5, c->n);
            st = forced(c->comp, c->cn, out, c->n, hi, ways, &declined);
            good = st == ZGPU_OK && !memcmp(out + lo, c->raw + lo, hi - lo);
            CHECK_MSG(good, "%s [%zu, %zu) at %d ways", c->name, lo, hi, ways);
            part_ok += good;
            parts++;
        }
        /* through the codec, which splits where zg_zstd_split_speedup expects a gain */
        memset(out, 0xA5, c->n);
        zgpu_status st = split(c->comp, c->cn, out, c->n, 0, c->n, 16);
        CHECK_MSG(st == ZGPU_OK && !memcmp(out, c->raw, c->n), "%s through the codec", c->name);
        free(out);
    }
    zg_zstd_split_stats s1 = zg_zstd_split_stats_get();
    printf("cases: %zu (%zu of at least %zu bytes), whole decodes right %zu, parts right %zu of %zu; split %llu, runs "
           "that resolved earlier runs' bytes %llu, finished in order %llu\n",
           n, split_cases, ZG_ZSTD_SPLIT_MIN, ok, part_ok, parts, s1.frames - s0.frames, s1.chased - s0.chased,
           s1.deferred - s0.deferred);
    /* the 2 MiB cases of every kind split (those with a checksum too when whole), and matches reached across runs */
    CHECK(s1.frames - s0.frames >= split_cases * 3);
    CHECK(s1.chased > s0.chased);
}

/* A frame decoded split from inside pool tasks, several at once. */
static void test_nested(zcase *cs, size_t n) {
    const zcase *big = NULL;
    for (size_t i = 0; i < n && !big; i++)
        if (cs[i].n >= ((size_t)1 << 21) && cs[i].cn < cs[i].n / 4) big = &cs[i];
    CHECK(big != NULL);
    if (!big) return;
    uint8_t *outs[6];
    zgpu_status st[6];
    for (int k = 0; k < 6; k++) outs[k] = calloc(big->n, 1);
    nest_job nj = {big, outs, st};
    const zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
    CHECK(zg_pool_run(pool, 6, nest_task, &nj) == ZGPU_OK);
    for (int k = 0; k < 6; k++) {
        CHECK_MSG(st[k] == ZGPU_OK && !memcmp(outs[k], big->raw, big->n), "%s nested %d", big->name, k);
        free(outs[k]);
    }
    CHECK_EQ_U64(zg_zstd_split_stats_get().frames - s0.frames, 6);
}

/* Bytes whose every match copies the window before it with a change every few bytes: a byte near a run's start
 * follows hundreds of matches back, so runs stop at their budget and finish in order; and a label volume's chunk,
 * whose runs resolve the planes before them (chains back to the frame's first literals; windows and the memo keep
 * them short, and a run past its budget finishes in order). */
static void test_chains(void) {
    const size_t n = (size_t)8 << 20;
    uint8_t *raw = malloc(n), *out = malloc(n);
    uint64_t s = 99;
    for (size_t i = 0; i < n; i++) raw[i] = i < 1024 ? (uint8_t)zc_rng(&s) : raw[i - 1024];
    for (size_t i = 1024; i < n; i += 7 + zc_rng(&s) % 9) raw[i] ^= (uint8_t)(1 + zc_rng(&s) % 255);
    size_t cap = ZSTD_compressBound(n);
    uint8_t *comp = malloc(cap);
    size_t cn = zc_compress(raw, n, comp, cap, 3, 0, 0, 0);
    CHECK(cn > 0);
    zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
    int declined;
    CHECK(forced(comp, cn, out, n, n, 8, &declined) == ZGPU_OK && !memcmp(out, raw, n));
    zg_zstd_split_stats s1 = zg_zstd_split_stats_get();
    printf("deep chains: %zu -> %zu bytes, runs finished in order %llu\n", n, cn, s1.deferred - s0.deferred);
    CHECK(s1.deferred > s0.deferred);
    CHECK_EQ_U64(s1.frames - s0.frames, 1);

    /* labels: 64 x 256 x 256 uint32 (16 MiB), the benchmark volume's chunk */
    const size_t ln = (size_t)16 << 20;
    uint8_t *lab = malloc(ln), *lout = malloc(ln);
    zc_fill(lab, ln, 8, 0);
    size_t lcap = ZSTD_compressBound(ln);
    uint8_t *lcomp = malloc(lcap);
    size_t lcn = zc_compress(lab, ln, lcomp, lcap, 3, 0, 0, 0);
    s0 = zg_zstd_split_stats_get();
    for (int ways = 2; ways <= 16; ways *= 2) {
        memset(lout, 0, ln);
        CHECK_MSG(forced(lcomp, lcn, lout, ln, ln, ways, &declined) == ZGPU_OK && !memcmp(lout, lab, ln), "labels %d ways",
                  ways);
        /* a crop's prefix: planes 0-40 */
        memset(lout, 0, ln);
        const size_t hi = (size_t)41 << 18;
        CHECK_MSG(forced(lcomp, lcn, lout, ln, hi, ways, &declined) == ZGPU_OK && !memcmp(lout, lab, hi),
                  "labels prefix %d", ways);
    }
    s1 = zg_zstd_split_stats_get();
    printf("labels: %zu -> %zu bytes; split %llu, runs that resolved %llu, in order %llu\n", ln, lcn,
           s1.frames - s0.frames, s1.chased - s0.chased, s1.deferred - s0.deferred);
    CHECK_EQ_U64(s1.frames - s0.frames, 8);
    CHECK(s1.chased - s0.chased >= 8); /* (runs whose first plane's matches reach into the run before) */
    /* the codec leaves such a frame to one thread: libzstd writes its long matches at memory speed */
    CHECK_EQ_U64(codec_splits(lcomp, lcn, lab, ln, lout, 16), 0);
    free(lab);
    free(lout);
    free(lcomp);
    free(raw);
    free(out);
    free(comp);
}

/* Damaged frames: whatever the split decode makes of one is what the one-thread decode makes of it. */
static void test_damaged(zcase *cs, size_t n) {
    uint64_t s = 5;
    int trials = 0, errors = 0, same = 0;
    for (size_t i = 0; i < n; i++) {
        const zcase *c = &cs[i];
        if (c->n < ZG_ZSTD_SPLIT_MIN || c->cn < 64) continue;
        uint8_t *bad = malloc(c->cn), *a = malloc(c->n), *b = malloc(c->n);
        for (int t = 0; t < 6; t++) {
            memcpy(bad, c->comp, c->cn);
            size_t cn = c->cn;
            if (t == 5) cn = c->cn - 1 - zc_rng(&s) % (c->cn / 2); /* truncated */
            else for (int k = 0; k <= t; k++) bad[12 + zc_rng(&s) % (c->cn - 12)] ^= (uint8_t)(1 + zc_rng(&s) % 255);
            zg_buf wa = zg_buf_wrap(a, c->n);
            zgpu_status one = codec->vt->decode_bytes(codec, bad, cn, &wa, zg_out_exact(c->n));
            int declined;
            zgpu_status two = forced(bad, cn, b, c->n, c->n, 8, &declined);
            trials++;
            errors += one != ZGPU_OK;
            const int agree = (one != ZGPU_OK && two != ZGPU_OK) || (one == ZGPU_OK && two == ZGPU_OK && !memcmp(a, b, c->n));
            same += agree;
            CHECK_MSG(agree, "%s damaged %d: one thread %d, split %d", c->name, t, one, two);
        }
        free(bad);
        free(a);
        free(b);
    }
    printf("damaged: %d trials, %d errors, %d the same verdict\n", trials, errors, same);
    CHECK(trials > 20 && errors > trials / 2);
}

/* Timings beside libzstd's one thread (printed; benchmarks hold the targets). */
static void time_one(const char *what, const uint8_t *raw, size_t n, int ways) {
    size_t cap = ZSTD_compressBound(n);
    uint8_t *comp = malloc(cap), *out = malloc(n);
    size_t cn = zc_compress(raw, n, comp, cap, 3, 0, 0, 0);
    double best1 = 1e9, best2 = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = zg_now();
        zg_buf w = zg_buf_wrap(out, n);
        CHECK(codec->vt->decode_bytes(codec, comp, cn, &w, zg_out_exact(n)) == ZGPU_OK);
        double t1 = zg_now();
        int declined;
        CHECK(forced(comp, cn, out, n, n, ways, &declined) == ZGPU_OK && !declined && !memcmp(out, raw, n));
        double t2 = zg_now();
        if (t1 - t0 < best1) best1 = t1 - t0;
        if (t2 - t1 < best2) best2 = t2 - t1;
    }
    printf("time %s (%zu -> %zu bytes): libzstd %.2f ms, split %d ways %.2f ms\n", what, n, cn, best1 * 1e3, ways,
           best2 * 1e3);
    free(comp);
    free(out);
}

/* The gain model: poorly compressible frames split up to 4x, two threads are not worth it, label-like ratios never. */
static void test_speedup_model(void) {
    CHECK(zg_zstd_split_speedup(1.05, 16) >= 4.4 && zg_zstd_split_speedup(1.05, 16) <= 4.5);
    CHECK(zg_zstd_split_speedup(1.3, 4) > ZG_ZSTD_SPLIT_GAIN_MIN);
    CHECK(zg_zstd_split_speedup(1.3, 2) < ZG_ZSTD_SPLIT_GAIN_MIN);
    CHECK(zg_zstd_split_speedup(1400, 16) == 0);
    CHECK(zg_zstd_split_speedup(8, 16) > zg_zstd_split_speedup(16, 16));
    /* through the codec: a 2 MiB frame of noisy u16 (Huffman literals, few sequences) splits at 16 ways, not at 2;
     * a random walk's (150 sequences a KiB) never */
    const size_t n = (size_t)2 << 20;
    uint8_t *raw = malloc(n), *out = malloc(n), *comp = malloc(ZSTD_compressBound(n));
    zc_fill(raw, n, 0, 5);
    for (size_t i = 1; i < n; i += 2) raw[i] &= 0x0f;
    size_t cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    CHECK_EQ_U64(codec_splits(comp, cn, raw, n, out, 2), 0);
    CHECK_EQ_U64(codec_splits(comp, cn, raw, n, out, 16), 1);
    zc_fill(raw, n, 3, 5);
    cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    CHECK_EQ_U64(codec_splits(comp, cn, raw, n, out, 16), 0);
    free(raw);
    free(out);
    free(comp);
}

int main(void) {
    CHECK(zg_pool_create(4, &pool) == ZGPU_OK);
    CHECK(zg_codec_zstd.create(NULL, NULL, &codec) == ZGPU_OK);
    zcase *cs;
    size_t n = zc_build(&cs, 0);
    test_speedup_model();
    test_cases(cs, n);
    test_nested(cs, n);
    test_chains();
    test_damaged(cs, n);
    /* timings on every core of the machine */
    zg_pool *small = pool;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(zg_pool_create(cores > 1 ? (int)cores : 1, &pool) == ZGPU_OK);
    const size_t tn = (size_t)16 << 20;
    uint8_t *raw = malloc(tn);
    zc_fill(raw, tn, 8, 0);
    time_one("labels", raw, tn, zg_pool_size(pool));
    zc_fill(raw, tn, 3, 1);
    time_one("u16 random walk", raw, tn, zg_pool_size(pool));
    zc_fill(raw, tn, 0, 1);
    for (size_t i = 1; i < tn; i += 2) raw[i] &= 0x0f; /* u16 of 12 noise bits: Huffman literals */
    time_one("u16 noise", raw, tn, zg_pool_size(pool));
    free(raw);
    zg_pool_free(pool);
    pool = small;
    zc_free(cs, n);
    codec->vt->destroy(codec);
    zg_pool_free(pool);
    TEST_MAIN_END();
}
