/* One zstd frame decoded by several threads (src/codec/zstd_split.c), through the codec's decode_bytes_split as
 * reads call it: every case of zstd_cases.h whole and in part at 2-8 ways against the original bytes; frames whose
 * runs must resolve matches in earlier runs, and ones whose chains run too deep for that (finished in order);
 * damaged frames give libzstd's verdict (an error, or exactly libzstd's bytes); layouts it declines still decode.
 * Sparse decodes (decode_bytes_runs): a label chunk's crops, patches and rows at 1-16 ways, other frames' runs,
 * damaged label frames against the in-order decode of the same prefix. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "api/array.h"
#include "codec/zstd_split.h"
#include "common/status.h"
#include "host/pool.h"
#include "sampling.h"
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

/* ---- sparse decodes: only the byte runs of boxes in a chunk ---- */

/* The rows of a box [z0, z0 + nz) x [y0, y0 + ny) x [x0, x0 + nx) of a 64 x 256 x 256 chunk of `item`-byte elements,
 * appended to runs (rows spanning whole planes merged, as the host executor makes them). */
static size_t box_runs(zg_byte_run *runs, size_t m, size_t item, size_t z0, size_t nz, size_t y0, size_t ny, size_t x0,
                       size_t nx) {
    if (nx == 256 && ny == 256) {
        runs[m++] = (zg_byte_run){z0 * 65536 * item, nz * 65536 * item, NULL};
        return m;
    }
    for (size_t z = z0; z < z0 + nz; z++)
        if (nx == 256) runs[m++] = (zg_byte_run){(z * 65536 + y0 * 256) * item, ny * 256 * item, NULL};
        else
            for (size_t y = y0; y < y0 + ny; y++) runs[m++] = (zg_byte_run){(z * 65536 + y * 256 + x0) * item, nx * item, NULL};
    return m;
}

/* A decode of runs through the codec at `ways` (1: no pool), checked run by run against raw; how many frames it
 * decoded sparse (0 or 1), and in runs_lazy how many lazily. Bytes between the runs are poisoned first: none may be
 * read as decoded. Then the same runs written at destinations of their own (dst). */
static unsigned long long runs_lazy;
static unsigned long long runs_ok(const uint8_t *comp, size_t cn, const uint8_t *raw, size_t n, uint8_t *out,
                                  const zg_byte_run *runs, size_t m, int ways, const char *what) {
    memset(out, 0xA5, n);
    zg_decode_par par = {pool, ways};
    const zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
    zgpu_status st = codec->vt->decode_bytes_runs(codec, comp, cn, out, n, runs, m, ways > 1 ? &par : NULL, NULL);
    int same = st == ZGPU_OK;
    for (size_t r = 0; same && r < m; r++) same = !memcmp(out + runs[r].off, raw + runs[r].off, runs[r].len);
    CHECK_MSG(same, "%s, %d ways: status %d", what, ways, st);
    const unsigned long long sparse = zg_zstd_split_stats_get().sparse - s0.sparse;
    runs_lazy = zg_zstd_split_stats_get().lazy - s0.lazy;
    /* the same runs, each written at a dst of its own (a read's destination) in the order they come, whether the
     * frame decodes sparse or in order (then copied out) */
    zg_byte_run *to = malloc((m ? m : 1) * sizeof *to);
    size_t total = 0;
    for (size_t r = 0; r < m; r++) total += runs[r].len;
    uint8_t *dbuf = malloc(total ? total : 1);
    memset(dbuf, 0x5A, total);
    for (size_t r = 0, at = 0; r < m; at += runs[r].len, r++) to[r] = (zg_byte_run){runs[r].off, runs[r].len, dbuf + at};
    st = codec->vt->decode_bytes_runs(codec, comp, cn, out, n, to, m, ways > 1 ? &par : NULL, NULL);
    same = st == ZGPU_OK;
    for (size_t r = 0, at = 0; same && r < m; at += runs[r].len, r++)
        same = !memcmp(dbuf + at, raw + runs[r].off, runs[r].len);
    CHECK_MSG(same, "%s, %d ways, each run at its dst: status %d", what, ways, st);
    free(dbuf);
    free(to);
    return sparse;
}

/* The route model's guess of a sparse decode's cost (in bytes of an in-order decode): labels' crops a fixed cost
 * and six times their bytes' worth shared among the threads, capped at the prefix; literal frames (OCT, fields) the
 * blocks from the first byte's to the last's; frames between the two, small ones and 2 MiB prefixes the prefix. */
static void test_sparse_cost(void) {
    const uint64_t crop = (uint64_t)2 << 20, hi = (uint64_t)12 << 20, lo = (uint64_t)4 << 20;
    const size_t chunk = (size_t)16 << 20;
    CHECK(zg_zstd_sparse_cost(chunk, 1400, crop, lo, hi, 4) ==
          (double)ZG_ZSTD_SPARSE_FIXED + (double)crop * ZG_ZSTD_SPARSE_BYTE_COST / 4);
    /* one thread: a crop near a frame's start in order, one near its end sparse */
    CHECK(zg_zstd_sparse_cost(chunk, 1400, crop, 0, (uint64_t)8 << 20, 1) == (double)(8 << 20));
    CHECK(zg_zstd_sparse_cost(chunk, 1400, crop, lo, chunk, 1) < (double)chunk);
    CHECK(zg_zstd_sparse_cost(chunk, 1400, crop / 8, lo, hi, 1) < (double)hi / 2);
    CHECK(zg_zstd_sparse_cost(chunk / 8, 1400, 65536, 0, (uint64_t)2 << 20, 1) == (double)(2 << 20));
    CHECK(zg_zstd_sparse_cost(chunk, 8, crop, lo, hi, 16) == (double)hi);
    CHECK(zg_zstd_sparse_cost(ZG_ZSTD_SPARSE_MIN / 2, 1400, 1024, 0, 16384, 16) == 16384.0);
    /* literal frames: a plane of a sharded OCT inner chunk (32 KiB of 1 MiB) costs its block and a quarter; a crop's
     * rows from plane 32 of a 64x256x256 chunk half the chunk; rows from the start the prefix */
    const double block = 131072.0; /* (zstd's blocks) */
    CHECK(zg_zstd_sparse_cost((size_t)1 << 20, 1.05, 32768, 600 << 10, 632 << 10, 1) == block * 1.25);
    CHECK(zg_zstd_sparse_cost((size_t)1 << 20, 1.05, 32768, 630 << 10, 662 << 10, 8) == 2 * block * 1.25);
    CHECK(zg_zstd_sparse_cost(chunk / 2, 1.3, crop / 2, lo, (uint64_t)8 << 20, 4) == (double)(5 << 20));
    CHECK(zg_zstd_sparse_cost(chunk / 2, 1.3, crop / 2, 0, (uint64_t)4 << 20, 4) == (double)(4 << 20));
}

/* Noisy uint16 samples as the OCT benchmark volume's (a smooth layered signal, 4 bits of speckle): zstd keeps them as
 * Huffman literals in 128 KiB blocks with a few short matches. `copies`: every ~100 bytes a copy of 8-40 bytes from
 * up to 256 KiB back (a field's repeats: matches across blocks, chains into earlier ones). */
static void oct_fill(uint8_t *p, size_t n, size_t ny, size_t nx, int copies, uint64_t seed) {
    uint64_t s = seed;
    for (size_t i = 0; i + 2 <= n; i += 2) {
        const size_t e = i / 2, z = e / (ny * nx), y = e / nx % ny, x = e % nx;
        const double base = 12000 + 9000 * sin(z / 37.0) * cos(y / 53.0) + 5000 * sin(x / 29.0 + y / 71.0);
        const uint16_t v = (uint16_t)(((uint16_t)(int32_t)base & 0xFFF0) | (zc_rng(&s) & 15)); /* (wraps as NumPy does) */
        memcpy(p + i, &v, 2);
    }
    for (size_t i = 1024; copies && i + 64 < n; i += 60 + zc_rng(&s) % 80) {
        const size_t len = 8 + zc_rng(&s) % 33, back = 64 + zc_rng(&s) % (i < 262144 ? i - 64 : 262144 - 64);
        memmove(p + i, p + i - back, len);
    }
}

/* Literal frames decoded lazily: OCT chunks of 64x256x256 (8 MiB, a third of their blocks treeless: their table
 * borrowed for libzstd) and sharded inner chunks of 32x128x128 (1 MiB), fields' frames with matches across blocks,
 * frames of ~2 KiB blocks (treeless literals decoded by huf_four, raw literal sections), patches, crops and rows at
 * 1, 3 and 16 ways against the original bytes; damaged frames: an error as the in-order decode gives, or
 * the in-order decode's bytes, or where that fails on damage the runs never read, the original ones. */
static void test_sparse_literals(void) {
    const size_t n = (size_t)64 * 65536 * 2;
    uint8_t *raw = malloc(n), *out = malloc(n), *ref = malloc(n), *comp = malloc(ZSTD_compressBound(n)),
            *bad = malloc(ZSTD_compressBound(n));
    zg_byte_run *runs = malloc(70000 * sizeof *runs);
    uint64_t s = 29;
    const zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
    unsigned long long lazy_patches = 0, lazy_inner = 0, lazy_field = 0, lazy_small = 0, tried = 0;
    for (int kind = 0; kind < 4; kind++) {
        /* 0: OCT chunk; 1: OCT inner chunk; 2: field-like chunk (copies); 3: OCT chunk in ~2 KiB blocks */
        const size_t cn_raw = kind == 1 ? n / 8 : n, ny = kind == 1 ? 128 : 256;
        oct_fill(raw, cn_raw, ny, ny, kind == 2, 100 + (uint64_t)kind);
        const size_t cn = zc_compress(raw, cn_raw, comp, ZSTD_compressBound(n), 3, 0, 0, kind == 3 ? 2048 : 0);
        CHECK(cn > cn_raw / 2 && cn < cn_raw);
        const size_t item = 2, plane = ny * ny * item, depth = cn_raw / plane;
        for (int w = 0; w < 3; w++) /* one thread, a few, many */
            for (int t = 0, ways = w == 0 ? 1 : w == 1 ? 3 : 16; t < 4; t++) {
                const size_t z = depth / 4 + zc_rng(&s) % (depth - depth / 4);
                runs[0] = (zg_byte_run){z * plane, plane, NULL}; /* a patch: one plane */
                runs_ok(comp, cn, raw, cn_raw, out, runs, 1, ways, "literal patch");
                const unsigned long long got = runs_lazy;
                if (kind == 0) lazy_patches += got;
                else if (kind == 1) lazy_inner += got;
                else if (kind == 2) lazy_field += got;
                else lazy_small += got;
                /* a crop's rows, and a few short rows */
                size_t m = 0;
                const size_t z0 = zc_rng(&s) % (depth / 2), y0 = zc_rng(&s) % (ny / 2), x0 = zc_rng(&s) % (ny / 2);
                for (size_t zz = z0; zz < z0 + depth / 2; zz++)
                    for (size_t y = y0; y < y0 + ny / 2; y++)
                        runs[m++] = (zg_byte_run){zz * plane + (y * ny + x0) * item, ny / 2 * item, NULL};
                runs_ok(comp, cn, raw, cn_raw, out, runs, m, ways, "literal crop");
                m = 0;
                for (size_t y = 0; y < 6; y++) runs[m++] = (zg_byte_run){(depth - 1) * plane + (y * 40 + 3) * item, 14, NULL};
                runs_ok(comp, cn, raw, cn_raw, out, runs, m, ways, "literal rows");
                tried += 3;
            }
        /* damaged frames */
        for (int t = 0; t < 24; t++) {
            memcpy(bad, comp, cn);
            size_t bn = cn;
            if (t % 6 == 5) bn = cn - 1 - zc_rng(&s) % (cn / 2);
            else for (int k = 0; k <= t % 6; k++) bad[12 + zc_rng(&s) % (cn - 12)] ^= (uint8_t)(1 + zc_rng(&s) % 255);
            const size_t z = depth / 2 + zc_rng(&s) % (depth / 2);
            runs[0] = (zg_byte_run){z * plane, plane, NULL};
            zgpu_status one = codec->vt->decode_bytes_range(codec, bad, bn, ref, cn_raw, 0, (z + 1) * plane);
            zg_decode_par par = {pool, 1 + t % 4};
            memset(out, 0xA5, cn_raw);
            zgpu_status two = codec->vt->decode_bytes_runs(codec, bad, bn, out, cn_raw, runs, 1, &par, NULL);
            const uint8_t *want = one == ZGPU_OK ? ref : raw;
            CHECK_MSG(two != ZGPU_OK ? one != ZGPU_OK : !memcmp(out + z * plane, want + z * plane, plane),
                      "damaged literal frame %d/%d: in order %d, sparse %d", kind, t, one, two);
        }
    }
    const zg_zstd_split_stats s1 = zg_zstd_split_stats_get();
    printf("sparse literals: %llu runs decodes; lazy patches: OCT chunks %llu/12, inner chunks %llu/12, fields %llu/12, "
           "small blocks %llu/12; %llu lazy in all, %llu blocks' literals by libzstd\n",
           tried, lazy_patches, lazy_inner, lazy_field, lazy_small, s1.lazy - s0.lazy, s1.wrapped - s0.wrapped);
    /* a plane past the first quarter costs less than the prefix at every ways (but an inner chunk's second half at 16
     * ways, where the prefix splits 4.5 ways) */
    CHECK(lazy_patches == 12 && lazy_inner >= 8 && lazy_field >= 10 && lazy_small >= 10);
    CHECK(s1.wrapped - s0.wrapped > 100);
    free(raw);
    free(out);
    free(ref);
    free(comp);
    free(bad);
    free(runs);
}

/* A frame read in part (zg_part_input): bytes copied from the stored frame as the decode asks, counted; the buffer
 * poisoned first, so a byte decoded from what was never read shows. */
typedef struct part_src {
    const uint8_t *frame;
    size_t n;
    uint64_t bytes, reads;
    int fail_after; /* reads that succeed before one fails (-1: none fails) */
} part_src;

static zgpu_status part_copy(void *ctx, uint64_t off, uint64_t len, uint8_t *dst) {
    part_src *p = ctx;
    CHECK(off <= p->n && len <= p->n - off);
    if (p->fail_after >= 0 && p->reads >= (uint64_t)p->fail_after)
        return zg_error(ZGPU_ERR_IO, "test: read %llu of the frame fails", (unsigned long long)p->reads);
    __atomic_add_fetch(&p->bytes, len, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p->reads, 1, __ATOMIC_RELAXED);
    memcpy(dst, p->frame + off, len);
    return ZGPU_OK;
}

/* Literal frames read in part: a plane of an OCT inner chunk (1 MiB) or chunk (8 MiB), a field-like chunk's, and a
 * crop's rows, at 1-8 ways, read only their blocks (and every block's headers and sequences) and decode right; label
 * frames (long matches), damaged frames and failing reads read the whole frame and then decode or fail as a whole
 * read would. */
static void test_sparse_part(void) {
    const size_t n = (size_t)64 * 65536 * 2;
    uint8_t *raw = malloc(n), *out = malloc(n), *comp = malloc(ZSTD_compressBound(n)), *buf = malloc(ZSTD_compressBound(n));
    zg_byte_run *runs = malloc(8192 * sizeof *runs);
    uint64_t s = 41;
    for (int kind = 0; kind < 3; kind++) {
        const size_t raw_n = kind == 1 ? n / 8 : n, ny = kind == 1 ? 128 : 256, plane = ny * ny * 2, depth = raw_n / plane;
        oct_fill(raw, raw_n, ny, ny, kind == 2, 200 + (uint64_t)kind);
        const size_t cn = zc_compress(raw, raw_n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
        uint64_t fetched = 0, planes = 0;
        for (int t = 0; t < 8; t++) {
            const int ways = 1 << (t % 4);
            const size_t z = depth / 2 + zc_rng(&s) % (depth / 2);
            size_t m = 0;
            if (t < 6) runs[m++] = (zg_byte_run){z * plane, plane, NULL};
            else
                for (size_t y = 0; y < ny / 2; y++) runs[m++] = (zg_byte_run){z * plane + y * ny * 2 + 20, ny, NULL};
            part_src src = {comp, cn, 0, 0, -1};
            zg_part_input part = {buf, part_copy, &src};
            memset(buf, 0xA5, cn);
            memset(out, 0x5A, raw_n);
            zg_decode_par par = {pool, ways};
            const zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
            CHECK(codec->vt->decode_bytes_runs(codec, buf, cn, out, raw_n, runs, m, ways > 1 ? &par : NULL, &part) ==
                  ZGPU_OK);
            int same = 1;
            for (size_t r = 0; r < m; r++) same &= !memcmp(out + runs[r].off, raw + runs[r].off, runs[r].len);
            CHECK_MSG(same && zg_zstd_split_stats_get().lazy == s0.lazy + 1, "part read %d/%d", kind, t);
            fetched += src.bytes;
            planes++;
        }
        printf("sparse part reads (%zu -> %zu bytes): %llu reads of a plane or rows, %.0f stored bytes read each\n",
               raw_n, cn, (unsigned long long)planes, (double)fetched / (double)planes);
        /* a plane's block and a quarter, and what its matches reach: OCT a block or two, the field's copies more */
        CHECK(fetched / planes < (kind == 2 ? cn / 3 : cn / 4));
    }
    /* a box covering its chunk is one run: at 4 ways the split shares the frame, a lazy decode would give it one
     * thread (a 64x512x512 box of four OCT chunks took 19-23 ms so on a 16-core machine, 10-13 split) */
    oct_fill(raw, n, 256, 256, 0, 11);
    size_t cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    runs[0] = (zg_byte_run){0, n, NULL};
    zg_decode_par par4 = {pool, 4};
    for (int in_part = 0; in_part < 2; in_part++) {
        part_src src = {comp, cn, 0, 0, -1};
        zg_part_input part = {buf, part_copy, &src};
        const zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
        CHECK(codec->vt->decode_bytes_runs(codec, in_part ? buf : comp, cn, out, n, runs, 1, &par4,
                                           in_part ? &part : NULL) == ZGPU_OK &&
              !memcmp(out, raw, n));
        CHECK_MSG(zg_zstd_split_stats_get().lazy == s0.lazy, "a whole chunk's run decoded lazily (%d)", in_part);
    }
    /* labels: long matches, not read in part; damaged frames and failing reads: as a whole read */
    zc_fill(raw, n, 8, 0);
    cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    runs[0] = (zg_byte_run){n / 2, 65536, NULL};
    part_src src = {comp, cn, 0, 0, -1};
    zg_part_input part = {buf, part_copy, &src};
    CHECK(codec->vt->decode_bytes_runs(codec, buf, cn, out, n, runs, 1, NULL, &part) == ZGPU_OK &&
          !memcmp(out + n / 2, raw + n / 2, 65536) && src.bytes >= cn);
    oct_fill(raw, n, 256, 256, 0, 5);
    cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    uint8_t *bad = malloc(cn), *ref = malloc(n);
    int errors = 0, failed_reads = 0;
    for (int t = 0; t < 40; t++) {
        memcpy(bad, comp, cn);
        const int fail = t % 5 == 4;
        if (!fail)
            for (int k = 0; k <= t % 4; k++) bad[12 + zc_rng(&s) % (cn - 12)] ^= (uint8_t)(1 + zc_rng(&s) % 255);
        const size_t z = 32 + zc_rng(&s) % 32;
        runs[0] = (zg_byte_run){z * 131072, 131072, NULL};
        const zgpu_status one = codec->vt->decode_bytes_range(codec, bad, cn, ref, n, 0, (z + 1) * 131072);
        part_src bs = {bad, cn, 0, 0, fail ? (int)(zc_rng(&s) % 12) : -1};
        zg_part_input bp = {buf, part_copy, &bs};
        memset(buf, 0xA5, cn);
        zg_decode_par par = {pool, 1 + t % 4};
        const zgpu_status two = codec->vt->decode_bytes_runs(codec, buf, cn, out, n, runs, 1, &par, &bp);
        if (fail) {
            failed_reads++;
            CHECK_MSG(two == ZGPU_ERR_IO, "a failing read %d: %d", t, two);
            continue;
        }
        const uint8_t *want = one == ZGPU_OK ? ref : raw;
        CHECK_MSG(two != ZGPU_OK ? one != ZGPU_OK : !memcmp(out + z * 131072, want + z * 131072, 131072),
                  "damaged frame read in part %d: in order %d, in part %d", t, one, two);
        errors += two != ZGPU_OK;
    }
    printf("sparse part reads of damaged frames: 32 trials, %d errors; %d failing reads\n", errors, failed_reads);
    free(bad);
    free(ref);
    free(raw);
    free(out);
    free(comp);
    free(buf);
    free(runs);
}

static void test_sparse(zcase *cs, size_t ncases) {
    test_sparse_cost();
    test_sparse_literals();
    test_sparse_part();
    const size_t item = 4, n = (size_t)64 * 65536 * item;
    uint8_t *lab = malloc(n), *out = malloc(n), *comp = malloc(ZSTD_compressBound(n));
    zg_byte_run *runs = malloc(70000 * sizeof *runs);
    zc_fill(lab, n, 8, 0);
    const size_t cn = zc_compress(lab, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    uint64_t s = 17;
    unsigned long long crops = 0, patches = 0, thin = 0, wide = 0;
    for (int ways = 1; ways <= 16; ways *= 2)
        for (int t = 0; t < 6; t++) {
            /* a 32x128x128 crop, a 1x256x256 patch (one run), 1x4x256 rows near the end, a 2x100x7 box (short rows) */
            const size_t z = zc_rng(&s) % 33, y = zc_rng(&s) % 129, x = zc_rng(&s) % 129;
            size_t m = box_runs(runs, 0, item, z, 32, y, 128, x, 128);
            crops += runs_ok(comp, cn, lab, n, out, runs, m, ways, "labels crop");
            m = box_runs(runs, 0, item, 20 + zc_rng(&s) % 44, 1, 0, 256, 0, 256);
            patches += runs_ok(comp, cn, lab, n, out, runs, m, ways, "labels patch");
            m = box_runs(runs, 0, item, 60 + zc_rng(&s) % 4, 1, zc_rng(&s) % 252, 4, 0, 256);
            thin += runs_ok(comp, cn, lab, n, out, runs, m, ways, "labels rows");
            m = box_runs(runs, 0, item, 30 + zc_rng(&s) % 30, 2, zc_rng(&s) % 150, 100, zc_rng(&s) % 249, 7);
            runs_ok(comp, cn, lab, n, out, runs, m, ways, "labels short rows");
            /* two boxes' runs interleaved, overlapping (regions sharing a chunk, merged or not) */
            m = box_runs(runs, 0, item, 40, 8, 10, 64, 30, 100);
            m = box_runs(runs, m, item, 44, 8, 40, 64, 60, 100);
            wide += runs_ok(comp, cn, lab, n, out, runs, m, ways, "labels two boxes");
        }
    printf("sparse labels (%zu -> %zu bytes): crops %llu/30, patches %llu/30, rows %llu/30, two boxes %llu/30 sparse\n",
           n, cn, crops, patches, thin, wide);
    /* a crop costs less sparse from two threads on; a patch or a few rows from one (ZG_ZSTD_SPARSE_BYTE_COST) */
    CHECK(crops >= 20 && patches >= 25 && thin >= 25 && wide >= 20);
    /* frames that are not long matches (noise, text), small frames and checksummed ones decode in order */
    size_t tried = 0;
    unsigned long long sparse_others = 0;
    for (size_t i = 0; i < ncases; i++) {
        const zcase *c = &cs[i];
        if (c->n < 4096) continue;
        for (int t = 0; t < 3; t++) {
            const size_t a = zc_rng(&s) % (c->n / 2), len = 1 + zc_rng(&s) % (c->n / 64 + 1);
            zg_byte_run r[3] = {{a, len, NULL}, {a + c->n / 8, len, NULL}, {a + c->n / 3, len, NULL}};
            tried++;
            sparse_others += runs_ok(c->comp, c->cn, c->raw, c->n, out, r, 3, 1 + (int)(t * 7 % 16), c->name);
        }
    }
    printf("sparse: %zu runs decodes of the zstd cases, %llu of them sparse\n", tried, sparse_others);
    CHECK(tried > 300);
    /* damaged label frames: an error, or exactly the bytes the in-order decode of the same prefix gives */
    int trials = 0, errors = 0;
    uint8_t *bad = malloc(cn), *ref = malloc(n);
    for (int t = 0; t < 60; t++) {
        memcpy(bad, comp, cn);
        size_t bn = cn;
        if (t % 6 == 5) bn = cn - 1 - zc_rng(&s) % (cn / 2);
        else for (int k = 0; k <= t % 6; k++) bad[12 + zc_rng(&s) % (cn - 12)] ^= (uint8_t)(1 + zc_rng(&s) % 255);
        const size_t m = box_runs(runs, 0, item, 8 + zc_rng(&s) % 24, 32, zc_rng(&s) % 129, 128, zc_rng(&s) % 129, 128);
        const size_t hi = (size_t)(runs[m - 1].off + runs[m - 1].len);
        zgpu_status one = codec->vt->decode_bytes_range(codec, bad, bn, ref, n, (size_t)runs[0].off, hi);
        zg_decode_par par = {pool, 4};
        zgpu_status two = codec->vt->decode_bytes_runs(codec, bad, bn, out, n, runs, m, &par, NULL);
        int agree = (one != ZGPU_OK) == (two != ZGPU_OK);
        for (size_t r = 0; agree && one == ZGPU_OK && r < m; r++)
            agree = !memcmp(out + runs[r].off, ref + runs[r].off, runs[r].len);
        trials++;
        errors += one != ZGPU_OK;
        CHECK_MSG(agree, "damaged labels %d: in order %d, sparse %d", t, one, two);
    }
    printf("sparse damaged: %d trials, %d errors\n", trials, errors);
    CHECK(errors > 10);
    free(bad);
    free(ref);
    free(lab);
    free(out);
    free(comp);
    free(runs);
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

/* Timings beside libzstd's one thread (printed; benchmarks hold the targets): best of several runs, one where make
 * test runs a sample of the long suites (ZGPU_TEST_SAMPLE: the decodes are still checked, their times only shown). */
static int time_runs(int whole) { return zt_sampled() ? 1 : whole; }

static void time_one(const char *what, const uint8_t *raw, size_t n, int ways) {
    size_t cap = ZSTD_compressBound(n);
    uint8_t *comp = malloc(cap), *out = malloc(n);
    size_t cn = zc_compress(raw, n, comp, cap, 3, 0, 0, 0);
    double best1 = 1e9, best2 = 1e9;
    for (int r = 0; r < time_runs(5); r++) {
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

/* A plane of a noisy uint16 frame (OCT) on one thread: lazily, against the prefix in order. */
static void time_lazy(const char *what, size_t ny, size_t depth, size_t z) {
    const size_t plane = ny * ny * 2, n = plane * depth;
    uint8_t *raw = malloc(n), *out = malloc(n), *comp = malloc(ZSTD_compressBound(n));
    oct_fill(raw, n, ny, ny, 0, 7);
    const size_t cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    const zg_byte_run run = {z * plane, plane, NULL};
    double best1 = 1e9, best2 = 1e9;
    for (int r = 0; r < time_runs(7); r++) {
        double t0 = zg_now();
        CHECK(codec->vt->decode_bytes_range(codec, comp, cn, out, n, 0, (z + 1) * plane) == ZGPU_OK);
        double t1 = zg_now();
        const zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
        CHECK(codec->vt->decode_bytes_runs(codec, comp, cn, out, n, &run, 1, NULL, NULL) == ZGPU_OK);
        double t2 = zg_now();
        CHECK(zg_zstd_split_stats_get().lazy == s0.lazy + 1 && !memcmp(out + run.off, raw + run.off, plane));
        if (t1 - t0 < best1) best1 = t1 - t0;
        if (t2 - t1 < best2) best2 = t2 - t1;
    }
    printf("time %s plane %zu of %zu (%zu -> %zu bytes): in order %.3f ms, lazy %.3f ms\n", what, z, depth, n, cn,
           best1 * 1e3, best2 * 1e3);
    free(raw);
    free(out);
    free(comp);
}

/* A box's rows of a noisy uint16 64x256x256 frame (OCT) at `ways`: as decode_bytes_runs takes them, against the
 * prefix in order (one thread) and split (`ways`). */
static void time_rows(const char *what, size_t z0, size_t nz, size_t y0, size_t ny, size_t x0, size_t nx, int ways) {
    const size_t n = (size_t)64 * 65536 * 2;
    uint8_t *raw = malloc(n), *out = malloc(n), *comp = malloc(ZSTD_compressBound(n));
    zg_byte_run *runs = malloc(nz * ny * sizeof *runs);
    oct_fill(raw, n, 256, 256, 0, 9);
    const size_t cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    const size_t m = box_runs(runs, 0, 2, z0, nz, y0, ny, x0, nx), hi = (size_t)(runs[m - 1].off + runs[m - 1].len);
    zg_decode_par par = {pool, ways};
    double best[3] = {1e9, 1e9, 1e9};
    unsigned long long lazy = 0;
    for (int r = 0; r < time_runs(5); r++) {
        double t0 = zg_now();
        CHECK(codec->vt->decode_bytes_range(codec, comp, cn, out, n, 0, hi) == ZGPU_OK);
        double t1 = zg_now();
        CHECK(codec->vt->decode_bytes_split(codec, comp, cn, out, n, 0, hi, &par) == ZGPU_OK);
        double t2 = zg_now();
        const zg_zstd_split_stats s0 = zg_zstd_split_stats_get();
        CHECK(codec->vt->decode_bytes_runs(codec, comp, cn, out, n, runs, m, &par, NULL) == ZGPU_OK);
        double t3 = zg_now();
        lazy += zg_zstd_split_stats_get().lazy - s0.lazy;
        const double d[3] = {t1 - t0, t2 - t1, t3 - t2};
        for (int k = 0; k < 3; k++) best[k] = d[k] < best[k] ? d[k] : best[k];
    }
    printf("time %s (%zu runs, %d ways): in order %.2f ms, split %.2f ms, runs %.2f ms (%s)\n", what, m, ways,
           best[0] * 1e3, best[1] * 1e3, best[2] * 1e3, lazy ? "lazy" : "declined");
    free(raw);
    free(out);
    free(comp);
    free(runs);
}

/* The gain model: poorly compressible frames split up to 5x, by 1.4x on two threads (libzstd's literals), label-like
 * ratios never. */
static void test_speedup_model(void) {
    CHECK(zg_zstd_split_speedup(1.05, 16) >= 4.9 && zg_zstd_split_speedup(1.05, 16) <= 5.0);
    CHECK(zg_zstd_split_speedup(1.3, 4) > zg_zstd_split_speedup(1.3, 2));
    CHECK(zg_zstd_split_speedup(1.3, 2) > ZG_ZSTD_SPLIT_GAIN_MIN && zg_zstd_split_speedup(1.3, 2) < 1.5);
    CHECK(zg_zstd_split_speedup(12, 2) < ZG_ZSTD_SPLIT_GAIN_MIN); /* (a ratio of 12 gains less than 1.2 on two) */
    CHECK(zg_zstd_split_speedup(1400, 16) == 0);
    CHECK(zg_zstd_split_speedup(8, 16) > zg_zstd_split_speedup(16, 16));
    /* through the codec: a 2 MiB frame of noisy u16 (Huffman literals, few sequences) splits at 16 ways and at 2; one
     * thread decodes alone; a random walk's (150 sequences a KiB) never */
    const size_t n = (size_t)2 << 20;
    uint8_t *raw = malloc(n), *out = malloc(n), *comp = malloc(ZSTD_compressBound(n));
    zc_fill(raw, n, 0, 5);
    for (size_t i = 1; i < n; i += 2) raw[i] &= 0x0f;
    size_t cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    CHECK_EQ_U64(codec_splits(comp, cn, raw, n, out, 1), 0);
    CHECK_EQ_U64(codec_splits(comp, cn, raw, n, out, 2), 1);
    CHECK_EQ_U64(codec_splits(comp, cn, raw, n, out, 16), 1);
    zc_fill(raw, n, 3, 5);
    cn = zc_compress(raw, n, comp, ZSTD_compressBound(n), 3, 0, 0, 0);
    CHECK_EQ_U64(codec_splits(comp, cn, raw, n, out, 16), 0);
    free(raw);
    free(out);
    free(comp);
}

int main(void) {
    zt_sample_init();
    CHECK(zg_pool_create(4, &pool) == ZGPU_OK);
    CHECK(zg_codec_zstd.create(NULL, NULL, &codec) == ZGPU_OK);
    zcase *cs;
    size_t n = zc_build(&cs, 0);
    test_speedup_model();
    test_cases(cs, n);
    test_nested(cs, n);
    test_chains();
    test_damaged(cs, n);
    test_sparse(cs, n);
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
    for (int ways = 2; ways < zg_pool_size(pool); ways *= 2) time_one("u16 noise", raw, tn, ways);
    time_one("u16 noise", raw, tn, zg_pool_size(pool));
    time_lazy("OCT inner chunk", 128, 32, 16);
    time_lazy("OCT chunk", 256, 64, 32);
    for (int ways = 1; ways <= zg_pool_size(pool); ways *= 2) {
        time_rows("OCT crop rows", 16, 32, 64, 128, 64, 128, ways);
        time_rows("OCT box rows", 0, 64, 64, 192, 64, 192, ways);
    }
    free(raw);
    zg_pool_free(pool);
    pool = small;
    zc_free(cs, n);
    codec->vt->destroy(codec);
    zg_pool_free(pool);
    TEST_MAIN_END();
}
