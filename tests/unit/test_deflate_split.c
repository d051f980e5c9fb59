/* One DEFLATE stream decoded by several threads (src/codec/deflate_split.c), through the gzip and zlib codecs'
 * decode_bytes_split as reads call it: label volumes, noisy images, text, floats, random bytes (stored blocks) and
 * zeros, compressed by libdeflate and zlib at several levels and strategies (fixed Huffman blocks, Huffman only), at
 * 4 and 12 ways, against the original bytes, and split where the model says it pays; damaged streams (bits flipped,
 * truncated, trailing bytes, a wrong CRC32, Adler-32 or size) give exactly what the one-thread decode gives; several
 * members, nested splits from pool tasks, the cost model. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zgpu.h"
#include "zgpu_experimental.h"

#include "codec/deflate_split.h"
#include "common/endian.h"
#include "common/status.h"
#include "api/array.h"
#include "host/pool.h"
#include "inflate_cases.h"
#include "sampling.h"
#include "test.h"

extern const zg_codec_vtable zg_codec_gzip, zg_codec_zlib;

static zg_pool *pool;
static zg_codec *gz, *zl;

/* A label volume as the benchmark's (../shared/bench/datasets.py): 32-bit cells of 16 x 24 x 20, z x y x x. */
static sample make_labels(uint32_t planes) {
    const size_t n = (size_t)planes * 256 * 256 * 4;
    sample s = {"labels", malloc(n), n};
    uint32_t *v = (uint32_t *)s.p;
    for (uint32_t z = 0; z < planes; z++)
        for (uint32_t y = 0; y < 256; y++)
            for (uint32_t x = 0; x < 256; x++)
                v[((size_t)z * 256 + y) * 256 + x] = (z / 16 * 7919u + y / 24 * 104729u + x / 20 * 1299709u) % 50000u;
    return s;
}

/* Raw DEFLATE c[0, cn) of the n bytes raw in a gzip member or a zlib stream. */
static uint8_t *frame(const uint8_t *c, size_t cn, const uint8_t *raw, size_t n, int zlib, size_t *fn) {
    uint8_t *f = malloc(cn + 18);
    if (zlib) {
        f[0] = 0x78;
        f[1] = 0x9c;
        memcpy(f + 2, c, cn);
        const uint32_t a = libdeflate_adler32(1, raw, n);
        for (int k = 0; k < 4; k++) f[2 + cn + (size_t)k] = (uint8_t)(a >> (24 - 8 * k));
        *fn = cn + 6;
    } else {
        static const uint8_t head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
        memcpy(f, head, 10);
        memcpy(f + 10, c, cn);
        const uint32_t crc = libdeflate_crc32(0, raw, n);
        for (int k = 0; k < 4; k++) {
            f[10 + cn + (size_t)k] = (uint8_t)(crc >> (8 * k));
            f[14 + cn + (size_t)k] = (uint8_t)((uint32_t)n >> (8 * k));
        }
        *fn = cn + 18;
    }
    return f;
}

static zgpu_status split(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size, int ways) {
    zg_decode_par par = {pool, ways};
    return c->vt->decode_bytes_split(c, in, n, out, size, 0, size, &par);
}

/* The model the codecs and the route model share. */
static void test_speedup_model(void) {
    CHECK(zg_deflate_split_speedup(500000, 33, 1) == 1);
    const double labels2 = zg_deflate_split_speedup(500000, 33, 2), labels4 = zg_deflate_split_speedup(500000, 33, 4);
    const double labels8 = zg_deflate_split_speedup(500000, 33, 8), labels12 = zg_deflate_split_speedup(500000, 33, 12);
    CHECK_MSG(labels2 > ZG_DEFLATE_SPLIT_GAIN_MIN && labels2 < 2 && labels4 > 2 && labels4 < labels8 && labels8 > 3 &&
                  labels8 < 4 && labels12 > labels8,
              "labels: %.2f, %.2f, %.2f, %.2f at 2, 4, 8, 12 ways", labels2, labels4, labels8, labels12);
    CHECK(zg_deflate_split_speedup(500000, 33, 64) == labels12); /* at most ZI_MAX_PARTS parts */
    const double oct4 = zg_deflate_split_speedup(7600000, 1.1, 4), oct8 = zg_deflate_split_speedup(7600000, 1.1, 8);
    CHECK_MSG(oct4 < ZG_DEFLATE_SPLIT_GAIN_MIN && oct8 > 1.5 && oct8 < labels4, "oct: %.2f at 4 ways, %.2f at 8", oct4,
              oct8); /* (literal-heavy streams split from 5 ways) */
    CHECK(zg_deflate_split_speedup(ZG_DEFLATE_PART_MIN_BYTES, 33, 8) == 1); /* one part: nothing to split */
    CHECK(zg_deflate_split_speedup(3 * ZG_DEFLATE_PART_MIN_BYTES, 33, 8) == zg_deflate_split_speedup(500000, 33, 3));
    /* through the codec: its stored size from the decoded size and the ratio */
    CHECK(gz->vt->split_speedup(gz, 16u << 20, 33, 8) == zg_deflate_split_speedup((16u << 20) / 33, 33, 8));
    CHECK(zl->vt->split_speedup(zl, 16u << 20, 33, 8) > 2.5);
}

/* Every stream of the cases, gzip- and zlib-framed, at 4, 8 and 12 ways: the original bytes; how many split. */
static void test_streams(void) {
    sample ss[7];
    ss[0] = make_labels(32);
    ss[1] = make("oct", (size_t)1 << 20, 0);
    ss[2] = make("text", (size_t)1 << 20, 2);
    ss[3] = make("random", (size_t)1 << 20, 3);
    ss[4] = make("floats", (size_t)1 << 20, 4);
    ss[5] = make("zeros", (size_t)8 << 20, 5);
    ss[6] = make("label runs", (size_t)2 << 20, 1);
    size_t streams = 0, splits = 0, label_splits = 0;
    for (int i = 0; i < 7; i++) {
        const sample *s = &ss[i];
        uint8_t *out = malloc(s->n);
        for (int enc = 0; enc < 7; enc++) {
            static const int lib_levels[3] = {1, 6, 12};
            static const int zlib_levels[2] = {1, 9};
            size_t cn = 0;
            uint8_t *c = enc < 3   ? libdeflate_raw(s, lib_levels[enc], &cn)
                         : enc < 5 ? zlib_raw(s, zlib_levels[enc - 3], Z_DEFAULT_STRATEGY, 8, &cn)
                         : zlib_raw(s, 6, enc == 5 ? Z_FIXED : Z_HUFFMAN_ONLY, 8, &cn);
            CHECK(c != NULL);
            for (int zlib = 0; c && zlib < 2; zlib++) {
                size_t fn;
                uint8_t *f = frame(c, cn, s->p, s->n, zlib, &fn);
                for (int ways = 4; ways <= 12; ways += 8) {
                    const zg_deflate_split_stats s0 = zg_deflate_split_stats_get();
                    memset(out, 0xa5, s->n);
                    const zgpu_status st = split(zlib ? zl : gz, f, fn, out, s->n, ways);
                    CHECK_MSG(st == ZGPU_OK && !memcmp(out, s->p, s->n), "%s, encoder %d, %s, %d ways: %s", s->name,
                              enc, zlib ? "zlib" : "gzip", ways, zg_error_message());
                    const zg_deflate_split_stats s1 = zg_deflate_split_stats_get();
                    CHECK_MSG(s1.fallbacks == s0.fallbacks, "%s, encoder %d, %d ways: the split fell back", s->name,
                              enc, ways);
                    /* split exactly where the model expects it to pay */
                    const int want = zg_deflate_split_speedup(cn, (double)s->n / (double)cn, ways) >=
                                     ZG_DEFLATE_SPLIT_GAIN_MIN;
                    CHECK_MSG(s1.streams - s0.streams == (unsigned long long)want, "%s, encoder %d, %d ways: split %llu",
                              s->name, enc, ways, s1.streams - s0.streams);
                    streams++;
                    splits += s1.streams - s0.streams;
                    if (i == 0) label_splits += s1.streams - s0.streams;
                }
                free(f);
            }
            free(c);
        }
        free(out);
    }
    printf("deflate split: %zu of %zu streams split (labels: %zu of 28)\n", splits, streams, label_splits);
    /* the model takes most label streams (the larger ones at 4 ways), and a good share of the rest */
    CHECK_MSG(label_splits >= 20, "labels split %zu times", label_splits);
    CHECK_MSG(splits >= streams / 3, "%zu of %zu split", splits, streams);
    for (int i = 0; i < 7; i++) free(ss[i].p);
}

/* Damaged streams: the split gives what the one-thread decode gives (the same error, or the same bytes), and falls
 * back wherever the parts do not hold; a wrong checksum or size in the trailer, too. */
static void test_damaged(void) {
    sample ss[2] = {make_labels(16), make("text", (size_t)1 << 20, 2)};
    size_t trials = 0, errors = 0;
    const zg_deflate_split_stats s0 = zg_deflate_split_stats_get();
    for (int i = 0; i < 2; i++) {
        const sample *s = &ss[i];
        size_t cn;
        uint8_t *c = libdeflate_raw(s, 6, &cn);
        uint8_t *out = malloc(s->n), *ref = malloc(s->n), *d = malloc(cn + 8);
        for (int zlib = 0; zlib < 2; zlib++) {
            size_t fn;
            uint8_t *f = frame(c, cn, s->p, s->n, zlib, &fn);
            const size_t head = zlib ? 2 : 10, tail = zlib ? 4 : 8;
            for (int trial = 0; trial < 40; trial++) {
                uint8_t *g = malloc(fn + 8);
                size_t gn;
                if (trial < 36) { /* the DEFLATE body damaged (zt_take: a sample under the sanitizers) */
                    const size_t dn = damage(c, cn, d, trial);
                    memcpy(g, f, head);
                    memcpy(g + head, d, dn);
                    memcpy(g + head + dn, f + head + cn, tail);
                    gn = head + dn + tail;
                } else { /* the trailer: a checksum byte, the size, a byte too many, a byte too few */
                    memcpy(g, f, fn);
                    gn = fn;
                    if (trial == 36) g[head + cn] ^= 0x40;
                    if (trial == 37) g[fn - 1] ^= (uint8_t)(zlib ? 1 : 0x10);
                    if (trial == 38) g[gn++] = 0;
                    if (trial == 39) gn--;
                }
                /* (a wrong checksum byte always: under a sample of 1 in 32 a seed could take no trial that errs) */
                if (trial != 36 && !zt_take()) {
                    free(g);
                    continue;
                }
                const zg_codec *cd = zlib ? zl : gz;
                zg_buf rb = zg_buf_wrap(ref, s->n);
                const zgpu_status want = cd->vt->decode_bytes(cd, g, gn, &rb, zg_out_exact(s->n));
                const zgpu_status got = split(cd, g, gn, out, s->n, 8);
                CHECK_MSG(got == want && (want != ZGPU_OK || !memcmp(out, ref, s->n)),
                          "%s %s damage %d: split %d, one thread %d", s->name, zlib ? "zlib" : "gzip", trial, got, want);
                trials++;
                errors += want != ZGPU_OK;
                free(g);
            }
            free(f);
        }
        free(c);
        free(out);
        free(ref);
        free(d);
        free(s->p);
    }
    const zg_deflate_split_stats s1 = zg_deflate_split_stats_get();
    printf("deflate split: %zu damaged streams, %zu errors, %llu split decodes fell back\n", trials, errors,
           s1.fallbacks - s0.fallbacks);
    CHECK(errors > 0 && s1.fallbacks > s0.fallbacks); /* the faults reached the split and it declined them */
}

/* Two members (an empty one, then all of the data: the last member's size is the chunk's, so the split runs and
 * finds the first member's stream ending early), or zero padding after one: the split falls back or declines, the
 * codec still decodes. */
static void test_members(void) {
    sample s = make_labels(64);
    sample a = {"empty", s.p, 0};
    size_t an, fa, cn, fn;
    uint8_t *ca = libdeflate_raw(&a, 6, &an), *ga = frame(ca, an, a.p, 0, 0, &fa);
    uint8_t *c = libdeflate_raw(&s, 6, &cn), *f = frame(c, cn, s.p, s.n, 0, &fn);
    uint8_t *two = malloc(fa + fn), *out = malloc(s.n);
    memcpy(two, ga, fa);
    memcpy(two + fa, f, fn);
    const zg_deflate_split_stats s0 = zg_deflate_split_stats_get();
    CHECK(split(gz, two, fa + fn, out, s.n, 8) == ZGPU_OK && !memcmp(out, s.p, s.n));
    CHECK(zg_deflate_split_stats_get().fallbacks == s0.fallbacks + 1);
    uint8_t *padded = malloc(fn + 16);
    memcpy(padded, f, fn);
    memset(padded + fn, 0, 16);
    memset(out, 0, s.n);
    CHECK(split(gz, padded, fn + 16, out, s.n, 8) == ZGPU_OK && !memcmp(out, s.p, s.n));
    free(ca), free(ga), free(two), free(out), free(c), free(f), free(padded), free(s.p);
}

/* Small parts forced on small streams (a part per 2 KiB stored, no gain asked): many guesses, some in stored blocks
 * of random bytes or in Huffman-only data, where a wrong one must be passed over; a valid stream never declines. */
static void test_forced_parts(void) {
    size_t streams = 0;
    const zg_deflate_split_stats s0 = zg_deflate_split_stats_get();
    for (int kind = 0; kind < 6; kind++) {
        sample s = make("forced", (size_t)256 << 10, kind);
        uint8_t *out = malloc(s.n);
        for (int enc = 0; enc < 5; enc++) {
            size_t cn = 0;
            uint8_t *c = enc < 3 ? libdeflate_raw(&s, enc == 0 ? 1 : enc == 1 ? 6 : 12, &cn)
                                 : zlib_raw(&s, 6, enc == 3 ? Z_DEFAULT_STRATEGY : Z_HUFFMAN_ONLY, 8, &cn);
            for (int ways = 3; c && ways <= 12; ways += 9) {
                zg_decode_par par = {pool, ways};
                int declined = 1;
                memset(out, 0x5a, s.n);
                CHECK(zg_deflate_decode_split(c, cn, out, s.n, ZG_DEFLATE_CRC32, libdeflate_crc32(0, s.p, s.n), &par,
                                              2048, 0, &declined) == ZGPU_OK);
                const int parts = cn / 2048 >= 2;
                CHECK_MSG(declined == !parts && (declined || !memcmp(out, s.p, s.n)),
                          "kind %d, encoder %d, %d ways: declined %d", kind, enc, ways, declined);
                streams += !declined;
                /* the same with a wrong checksum: declined, whatever the parts did */
                CHECK(zg_deflate_decode_split(c, cn, out, s.n, ZG_DEFLATE_ADLER32, libdeflate_crc32(0, s.p, s.n), &par,
                                              2048, 0, &declined) == ZGPU_OK && declined == 1);
            }
            free(c);
        }
        free(out);
        free(s.p);
    }
    const zg_deflate_split_stats s1 = zg_deflate_split_stats_get();
    printf("deflate split: %zu small streams forced into %llu parts\n", streams, s1.parts - s0.parts);
    CHECK(streams >= 40 && s1.parts - s0.parts >= 8 * streams);
}

/* Pool tasks that each decode a stream split: the nesting host reads do (a task's decode runs jobs on its pool). */
typedef struct nest_job {
    const uint8_t *f;
    size_t fn, n;
    uint8_t **outs;
    zgpu_status *st;
} nest_job;

static zgpu_status nest_task(void *arg, size_t i) {
    nest_job *nj = arg;
    nj->st[i] = split(gz, nj->f, nj->fn, nj->outs[i], nj->n, 4);
    return ZGPU_OK;
}

static void test_nested(void) {
    sample s = make_labels(32);
    size_t cn, fn;
    uint8_t *c = libdeflate_raw(&s, 6, &cn), *f = frame(c, cn, s.p, s.n, 0, &fn);
    uint8_t *outs[3];
    zgpu_status st[3];
    for (int i = 0; i < 3; i++) outs[i] = malloc(s.n);
    nest_job nj = {f, fn, s.n, outs, st};
    const zg_deflate_split_stats s0 = zg_deflate_split_stats_get();
    CHECK(zg_pool_run(pool, 3, nest_task, &nj) == ZGPU_OK);
    for (int i = 0; i < 3; i++) CHECK(st[i] == ZGPU_OK && !memcmp(outs[i], s.p, s.n));
    CHECK(zg_deflate_split_stats_get().streams - s0.streams == 3);
    for (int i = 0; i < 3; i++) free(outs[i]);
    free(c), free(f), free(s.p);
}

/* Reads of a gzip and a zlib label array (8 MiB chunks) through the host executor with 8 threads: one chunk, a crop of
 * two, a patch; each chunk's decode lent its share of the threads and split (counted), the values those written;
 * with split_decode off the same reads split nothing. */
static void array_reads(void) {
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/zgpu_test_deflate_split_%d", (int)getpid());
    mkdir(dir, 0755);
    const uint64_t shape[3] = {32, 256, 512}, n = 32 * 256 * 512;
    uint32_t *all = malloc(n * 4), *box = malloc(n * 4);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t z = i / (256 * 512), y = (i / 512) % 256, x = i % 512;
        all[i] = (uint32_t)((z / 16 * 7919 + y / 24 * 104729 + x / 20 * 1299709) % 50000);
    }
    static const char *codecs[2] = {"{\"name\": \"gzip\", \"configuration\": {\"level\": 5}}",
                                    "{\"name\": \"numcodecs.zlib\", \"configuration\": {\"level\": 5}}"};
    for (int c = 0; c < 2; c++) {
        char path[300], meta[1024];
        snprintf(path, sizeof path, "%s/%s", dir, c ? "zlib" : "gzip");
        snprintf(meta, sizeof meta,
                 "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [32, 256, 512], \"data_type\": \"uint32\", "
                 "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [32, 256, 256]}}, "
                 "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": "
                 "\"bytes\", \"configuration\": {\"endian\": \"little\"}}, %s]}",
                 codecs[c]);
        for (int split_on = 0; split_on < 2; split_on++) {
            zgpu_tuning t;
            zgpu_tuning_init(&t);
            t.split_decode = split_on ? ZGPU_SWITCH_ON : ZGPU_SWITCH_OFF;
            zgpu_context_options o;
            zgpu_context_options_init(&o);
            o.num_threads = 8;
            o.tuning = &t;
            zgpu_context *ctx = NULL;
            CHECK_OK(zgpu_context_create(&o, &ctx));
            zgpu_array *a = NULL;
            if (ctx) CHECK_OK(split_on ? zgpu_array_open(ctx, path, &a) : zgpu_array_create(ctx, path, meta, 1, &a));
            if (!a) {
                zgpu_context_free(ctx);
                continue;
            }
            static const uint64_t s00[3] = {0, 0, 0};
            if (!split_on) CHECK_OK(zgpu_array_write(a, s00, shape, all, NULL));
            const zg_deflate_split_stats s0 = zg_deflate_split_stats_get();
            /* one chunk (8 ways), a crop across both (4 ways each), a one-plane patch across both */
            static const uint64_t st[3][3] = {{0, 0, 256}, {5, 40, 200}, {17, 0, 100}};
            static const uint64_t ct[3][3] = {{32, 256, 256}, {20, 150, 120}, {1, 256, 300}};
            for (int r = 0; r < 3; r++) {
                CHECK_OK(zgpu_array_read(a, st[r], ct[r], box, NULL));
                int bad = 0;
                for (uint64_t z = 0; z < ct[r][0] && !bad; z++)
                    for (uint64_t y = 0; y < ct[r][1] && !bad; y++)
                        for (uint64_t x = 0; x < ct[r][2] && !bad; x++)
                            bad = box[(z * ct[r][1] + y) * ct[r][2] + x] !=
                                  all[((st[r][0] + z) * 256 + st[r][1] + y) * 512 + st[r][2] + x];
                CHECK_MSG(!bad, "%s, split %d: read %d differs", c ? "zlib" : "gzip", split_on, r);
            }
            const unsigned long long splits = zg_deflate_split_stats_get().streams - s0.streams;
            /* (other tests' splits may run meanwhile only in this process: none) */
            CHECK_MSG(split_on ? splits == 5 : splits == 0, "%s, split_decode %d: %llu chunks split",
                      c ? "zlib" : "gzip", split_on, splits);
            zgpu_array_close(a);
            zgpu_context_free(ctx);
        }
    }
    CHECK(zt_remove_dir(dir) == 0);
    free(all);
    free(box);
}

/* Timings on every core of the machine (printed, not checked: benchmarks hold the targets): a 64x256x256 chunk of
 * each benchmark volume's kind, gzip level 5, on one thread (libdeflate and its CRC32) and split (taken whatever the
 * model says) at 2 ways up to all cores, with each phase's time. */
/* (best of five, one where make test runs a sample: ZGPU_TEST_SAMPLE; the decodes are checked either way) */
static int time_runs(void) { return zt_sampled() ? 1 : 5; }

static void time_one(const sample *s, int cores) {
    size_t cn, fn;
    uint8_t *c = libdeflate_raw(s, 5, &cn), *f = frame(c, cn, s->p, s->n, 0, &fn), *out = malloc(s->n);
    double one = 1e9;
    for (int r = 0; r < time_runs(); r++) {
        const double t0 = zg_now();
        zg_buf w = zg_buf_wrap(out, s->n);
        CHECK(gz->vt->decode_bytes(gz, f, fn, &w, zg_out_exact(s->n)) == ZGPU_OK);
        const double t = zg_now() - t0;
        if (t < one) one = t;
    }
    printf("time %s (%zu -> %zu bytes): one thread %.2f ms;", s->name, s->n, cn, one * 1e3);
    const uint32_t crc = (uint32_t)libdeflate_crc32(0, s->p, s->n);
    for (int ways = 2; ways <= cores; ways = ways * 2 > cores && ways < cores ? cores : ways * 2) {
        double best = 1e9;
        const zg_deflate_split_stats s0 = zg_deflate_split_stats_get();
        for (int r = 0; r < time_runs(); r++) {
            const double t0 = zg_now();
            const zg_decode_par par = {pool, ways};
            int declined = 1;
            const zgpu_status st = zg_deflate_decode_split(c, cn, out, s->n, ZG_DEFLATE_CRC32, crc, &par,
                                                           ZG_DEFLATE_PART_MIN_BYTES, 0, &declined);
            const double t = zg_now() - t0;
            CHECK(st == ZGPU_OK && !declined && !memcmp(out, s->p, s->n));
            if (t < best) best = t;
        }
        const zg_deflate_split_stats s1 = zg_deflate_split_stats_get();
        const double m = 1e3 / (double)(s1.streams - s0.streams); /* (ms a split) */
        printf("\n  %2d ways %.2f ms (model %.2fx): find+decode %.2f (slowest part %.2f, mean %.2f) tails %.2f "
               "replay %.2f", ways, best * 1e3, zg_deflate_split_speedup(cn, (double)s->n / (double)cn, ways),
               (s1.phase_s[0] - s0.phase_s[0]) * m, (s1.part_max_s - s0.part_max_s) * m,
               (s1.part_mean_s - s0.part_mean_s) * m, (s1.phase_s[1] - s0.phase_s[1]) * m,
               (s1.phase_s[2] - s0.phase_s[2]) * m);
    }
    printf("\n");
    free(c), free(f), free(out);
}

int main(void) {
    zt_sample_init();
    CHECK(zg_pool_create(8, &pool) == ZGPU_OK);
    CHECK(zg_codec_gzip.create(NULL, NULL, &gz) == ZGPU_OK);
    CHECK(zg_codec_zlib.create(NULL, NULL, &zl) == ZGPU_OK);
    test_speedup_model();
    test_streams();
    test_damaged();
    test_members();
    test_forced_parts();
    test_nested();
    array_reads();
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores >= 2) {
        zg_pool *small = pool;
        CHECK(zg_pool_create((int)cores, &pool) == ZGPU_OK);
        sample ts[3] = {make_labels(64), make("oct", (size_t)8 << 20, 0), make("floats", (size_t)16 << 20, 4)};
        for (int i = 0; i < 3; i++) {
            time_one(&ts[i], (int)cores);
            free(ts[i].p);
        }
        zg_pool_free(pool);
        pool = small;
    }
    zt_sample_report();
    (void)reference_decode; /* (inflate_cases.h's; the codecs' one-thread decode is the reference here) */
    gz->vt->destroy(gz);
    zl->vt->destroy(zl);
    zg_pool_free(pool);
    TEST_MAIN_END();
}
