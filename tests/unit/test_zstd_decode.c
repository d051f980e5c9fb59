/* The block-parallel zstd decoder's rules (src/gpucodec/zstd/zstd_rules.h) and its host planner (zstd_plan.c), run on
 * the CPU in the same three steps as the GPU kernels (K1 per block, K2 per frame, K3 per block in any order
 * that respects the waits), against libzstd on frames that reach every part of the format, on batches of
 * many frames, and on damaged frames (never a wild access: ASan; decoded output only when libzstd agrees). */
#include <limits.h>
#include <stdio.h>

#include "gpucodec/zstd/zstd_plan.h"
#include "test.h"
#include "zstd_cases.h"
#include "zstd_cpu_ref.h"

/* What the cases reach, so that a change in libzstd's choices cannot quietly skip a rule. */
typedef struct coverage {
    size_t blocks[3], lits[3], streams[5], treeless, fse_modes[4], seqs;
} coverage;

static void count_coverage(const zg_zd_plan *pl, coverage *cv) {
    int32_t last_huf = -1;
    for (size_t b = 0; b < pl->n_blocks; b++) {
        const zg_zd_block *blk = &pl->blocks[b];
        cv->blocks[blk->type]++;
        if (blk->type != ZG_ZD_BLOCK_COMPRESSED) continue;
        cv->lits[blk->lit_type]++;
        if (blk->lit_type == ZG_ZD_LIT_HUF) {
            cv->streams[blk->n_streams]++;
            if ((int32_t)blk->huf == last_huf) cv->treeless++;
            last_huf = (int32_t)blk->huf;
        }
        cv->seqs += blk->nseq;
        if (blk->nseq) {
            const zg_zd_fse_desc *d = &pl->fses[blk->ll];
            cv->fse_modes[d->log == 0 ? 1 : 2]++;
            if (b > 0 && blk->ll == pl->blocks[b - 1].ll && pl->blocks[b - 1].nseq) cv->fse_modes[3]++;
            if ((int32_t)blk->ll == pl->predefined[0] || (int32_t)blk->of == pl->predefined[1]) cv->fse_modes[0]++;
        }
    }
}

static void test_cases_one_by_one(zcase *cs, size_t n) {
    coverage cv;
    memset(&cv, 0, sizeof cv);
    int bad = 0;
    zg_zd_plan kept; /* every case again in one plan reset between them (its arrays kept), as device reads do */
    zg_zd_plan_init(&kept);
    size_t kept_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        zg_zd_plan pl;
        zg_zd_plan_init(&pl);
        zgpu_status s = zg_zd_plan_frame(&pl, cs[i].comp, cs[i].cn, cs[i].n, 0);
        CHECK_MSG(s == ZGPU_OK, "%s: plan: %s", cs[i].name, zgpu_last_error());
        if (s != ZGPU_OK) continue;
        count_coverage(&pl, &cv);
        uint8_t *out = (uint8_t *)malloc(cs[i].n + 1);
        int err = -1;
        zc_cpu_run(&pl, cs[i].comp, &out, &err);
        int ok = err == 0 && memcmp(out, cs[i].raw, cs[i].n) == 0;
        if (!ok && bad++ < 10) fprintf(stderr, "%s: err %d (%s)\n", cs[i].name, err, zg_zd_error_text(err));
        CHECK_MSG(ok, "%s decodes as libzstd", cs[i].name);
        zg_zd_plan_reset(&kept);
        CHECK(kept.n_frames == 0 && kept.n_blocks == 0 && kept.n_hufs == 0 && kept.n_fses == 0 &&
              kept.lit_bytes == 0 && kept.n_seq == 0 && kept.predefined[0] == -1 && zg_zd_plan_bytes(&kept) == kept_bytes);
        if (zg_zd_plan_frame(&kept, cs[i].comp, cs[i].cn, cs[i].n, 0) == ZGPU_OK) {
            err = -1;
            memset(out, 0, cs[i].n);
            zc_cpu_run(&kept, cs[i].comp, &out, &err);
            CHECK_MSG(err == 0 && memcmp(out, cs[i].raw, cs[i].n) == 0, "%s: in a reset plan", cs[i].name);
            CHECK(kept.n_blocks == pl.n_blocks && kept.n_fses == pl.n_fses && kept.n_hufs == pl.n_hufs);
        } else {
            CHECK_MSG(0, "%s: plan into a reset plan: %s", cs[i].name, zgpu_last_error());
        }
        CHECK(zg_zd_plan_bytes(&kept) >= kept_bytes && zg_zd_plan_bytes(&pl) >= sizeof(zg_zd_frame)); /* kept grows only */
        kept_bytes = zg_zd_plan_bytes(&kept);
        free(out);
        zg_zd_plan_free(&pl);
    }
    zg_zd_plan_free(&kept);
    printf("coverage: blocks raw %zu rle %zu compressed %zu; literals raw %zu rle %zu huffman %zu (1 stream %zu, 4 "
           "streams %zu, reused table %zu); sequences %zu; LL tables rle %zu fse %zu repeated %zu predefined-or %zu\n",
           cv.blocks[0], cv.blocks[1], cv.blocks[2], cv.lits[0], cv.lits[1], cv.lits[2], cv.streams[1], cv.streams[4],
           cv.treeless, cv.seqs, cv.fse_modes[1], cv.fse_modes[2], cv.fse_modes[3], cv.fse_modes[0]);
    CHECK(cv.blocks[0] > 0 && cv.blocks[1] > 0 && cv.blocks[2] > 0);
    CHECK(cv.lits[0] > 0 && cv.lits[1] > 0 && cv.lits[2] > 0);
    CHECK(cv.streams[1] > 0 && cv.streams[4] > 0 && cv.treeless > 0);
    CHECK(cv.fse_modes[0] > 0 && cv.fse_modes[1] > 0 && cv.fse_modes[2] > 0 && cv.fse_modes[3] > 0);
}

/* All cases in one plan, as a wave would batch them: src offsets relative to one buffer. */
static void test_one_batch(zcase *cs, size_t n) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += cs[i].cn;
    uint8_t *buf = (uint8_t *)malloc(total), **dst = (uint8_t **)malloc(n * sizeof *dst);
    int *err = (int *)malloc(n * sizeof *err);
    zg_zd_plan pl;
    zg_zd_plan_init(&pl);
    size_t at = 0, planned = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(buf + at, cs[i].comp, cs[i].cn);
        if (zg_zd_plan_frame(&pl, buf + at, cs[i].cn, cs[i].n, at) == ZGPU_OK) planned++;
        at += cs[i].cn;
        dst[i] = (uint8_t *)malloc(cs[i].n + 1);
    }
    CHECK_EQ_U64(planned, n);
    CHECK_EQ_U64(pl.n_frames, n);
    zc_cpu_run(&pl, buf, dst, err);
    size_t good = 0;
    for (size_t i = 0; i < n; i++) good += err[i] == 0 && memcmp(dst[i], cs[i].raw, cs[i].n) == 0;
    CHECK_EQ_U64(good, n);
    printf("one batch: %zu frames, %zu blocks, %zu Huffman + %zu FSE table descriptions, %llu literal bytes, %llu "
           "sequences\n", pl.n_frames, pl.n_blocks, pl.n_hufs, pl.n_fses, (unsigned long long)pl.lit_bytes,
           (unsigned long long)pl.n_seq);
    for (size_t i = 0; i < n; i++) free(dst[i]);
    free(dst);
    free(err);
    free(buf);
    zg_zd_plan_free(&pl);
}

/* Damaged frames: byte flips in the body, truncations. Whatever libzstd makes of a damaged frame, ours either
 * reports an error or produces exactly libzstd's bytes, and rejects a frame that libzstd decodes only when
 * libzstd's bytes are not the original ones: libzstd is lenient in places (its double-symbol Huffman decoder
 * lets a stream's last code run past the stream's start), we are not. */
static void test_damaged(zcase *cs, size_t n) {
    uint64_t s = 77;
    int trials = 0, both_ok = 0, ours_only = 0, theirs_only = 0, theirs_only_intact = 0, both_bad = 0, wrong = 0,
        plan_rej = 0;
    for (size_t i = 0; i < n; i++) {
        if (cs[i].cn < 40 || cs[i].n > 300000) continue;
        for (int t = 0; t < 12; t++) {
            uint8_t *bad = (uint8_t *)malloc(cs[i].cn);
            memcpy(bad, cs[i].comp, cs[i].cn);
            size_t m = cs[i].cn;
            if (t < 10) bad[8 + zc_rng(&s) % (m - 8)] ^= (uint8_t)(1 + zc_rng(&s) % 255);
            else m = 8 + zc_rng(&s) % (m - 8);
            trials++;
            uint8_t *ref = (uint8_t *)malloc(cs[i].n + 1), *out = (uint8_t *)malloc(cs[i].n + 1);
            size_t rn = ZSTD_decompress(ref, cs[i].n, bad, m);
            int theirs = !ZSTD_isError(rn) && rn == cs[i].n;
            zg_zd_plan pl;
            zg_zd_plan_init(&pl);
            int ours = 0, err = -1;
            if (zg_zd_plan_frame(&pl, bad, m, cs[i].n, 0) == ZGPU_OK) {
                zc_cpu_run(&pl, bad, &out, &err);
                ours = err == 0;
            } else {
                plan_rej++;
            }
            if (theirs && !ours && memcmp(ref, cs[i].raw, cs[i].n) == 0) {
                theirs_only_intact++;
                fprintf(stderr, "%s: we reject a damaged frame that still decodes to the original: %s\n", cs[i].name,
                        err >= 0 ? zg_zd_error_text(err) : zgpu_last_error());
            }
            if (ours && theirs) {
                both_ok++;
                if (memcmp(out, ref, cs[i].n) != 0) wrong++;
            } else if (ours) ours_only++;
            else if (theirs) theirs_only++;
            else both_bad++;
            zg_zd_plan_free(&pl);
            free(ref);
            free(out);
            free(bad);
        }
    }
    printf("damaged: %d trials; both decode %d (differ %d); both reject %d (host plan rejects %d); only ours decodes "
           "%d; only libzstd decodes %d (to the original bytes: %d)\n", trials, both_ok, wrong, both_bad, plan_rej,
           ours_only, theirs_only, theirs_only_intact);
    CHECK(trials > 1000);
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(theirs_only_intact, 0);
    CHECK_MSG(ours_only <= trials / 100, "ours accepts %d frames libzstd rejects", ours_only);
}

/* ---- Huffman streams not read exactly to their first bit (issue 25; RFC 8878 4.2.2, see zstd_cases.h) ----
 * libzstd 1.5's fast 4-stream Huffman decoder does not check that rule, so it decodes such frames (to other bytes
 * than were written: without a content checksum nothing else notices). The small hand-made frames below take its
 * plain path, which checks the rule: libzstd 1.5.4 rejects them too (printed, not asserted). */

/* Bits of stream src[0, n) left after `count` symbols of the table's code (negative: read past its first bit),
 * counted bit by bit from the stream's top: independent of zd_br and zd_huf_stream's fast loops. */
static long huf_bits_left(const zg_zd_huf_desc *hd, const uint8_t *src, uint32_t n, uint32_t count) {
    uint16_t table[1 << ZG_ZD_HUF_LOG_MAX], start[256];
    zd_huf_starts(hd, start);
    for (uint32_t s = 0; s < hd->nsym; s++) zd_huf_fill(table, hd, start, s);
    if (n == 0 || src[n - 1] == 0) return LONG_MIN;
    long top = 8 * (long)(n - 1) + zd_highbit(src[n - 1]); /* bits below the start mark */
    for (uint32_t i = 0; i < count; i++) {
        uint32_t v = 0;
        for (uint32_t k = 1; k <= hd->max_bits; k++) { /* the next max_bits bits, those before the stream 0 */
            long bit = top - (long)k;
            v = v << 1 | (bit >= 0 ? (uint32_t)(src[bit >> 3] >> (bit & 7) & 1) : 0u);
        }
        top -= table[v] >> 8;
    }
    return top;
}

/* Bits left in each Huffman stream of a frame's first Huffman block; returns the block's stream count (0: none). */
static int frame_bits_left(const uint8_t *p, size_t n, size_t size, long left[4]) {
    zg_zd_plan pl;
    zg_zd_plan_init(&pl);
    int streams = 0;
    if (zg_zd_plan_frame(&pl, p, n, size, 0) == ZGPU_OK)
        for (size_t b = 0; b < pl.n_blocks && !streams; b++) {
            const zg_zd_block *blk = &pl.blocks[b];
            if (blk->type != ZG_ZD_BLOCK_COMPRESSED || blk->lit_type != ZG_ZD_LIT_HUF) continue;
            uint64_t at = blk->src + blk->lit_off;
            for (int k = 0; k < blk->n_streams; at += blk->stream_len[k], k++)
                left[k] = huf_bits_left(&pl.hufs[blk->huf], p + at, blk->stream_len[k], zd_stream_count(blk, k));
            streams = blk->n_streams;
        }
    zg_zd_plan_free(&pl);
    return streams;
}

/* CPU model of the GPU decoder on one frame: its ZG_ZD_* code (-1: the host plan rejects it). */
static int model_decode(const uint8_t *p, size_t n, size_t size, uint8_t *out) {
    zg_zd_plan pl;
    zg_zd_plan_init(&pl);
    int err = -1;
    if (zg_zd_plan_frame(&pl, p, n, size, 0) == ZGPU_OK) zc_cpu_run(&pl, p, &out, &err);
    zg_zd_plan_free(&pl);
    return err;
}

/* Frames written by hand (zc_hand_frame), in 1 and 4 streams: undamaged, libzstd and the model decode them to
 * the literals with every stream read exactly; with 2 bits left over in a stream, or its last code 1 bit past
 * its start, the model rejects them for the rule. */
static void test_huf_hand_frames(void) {
    uint8_t lit[40], f[128], out[64], ref[64];
    zc_hand_literals(lit);
    for (int four = 0; four <= 1; four++) {
        size_t m = zc_hand_frame(f, lit, 40, four, -1, 0);
        long left[4] = {9, 9, 9, 9};
        CHECK_EQ_U64(frame_bits_left(f, m, 40, left), four ? 4 : 1);
        CHECK(left[0] == 0 && (!four || (left[1] == 0 && left[2] == 0 && left[3] == 0)));
        size_t r = ZSTD_decompress(ref, sizeof ref, f, m);
        CHECK_MSG(!ZSTD_isError(r) && r == 40 && memcmp(ref, lit, 40) == 0, "%d streams: libzstd: %s", four ? 4 : 1,
                  ZSTD_isError(r) ? ZSTD_getErrorName(r) : "other bytes");
        CHECK_EQ_U64(model_decode(f, m, 40, out), ZG_ZD_OK);
        CHECK(memcmp(out, lit, 40) == 0);
        for (int how = 1; how <= 2; how++) {
            const int bad = four ? (how == 1 ? 1 : 3) : 0;
            m = zc_hand_frame(f, lit, 40, four, bad, how);
            for (int k = 0; k < 4; k++) left[k] = 0;
            CHECK_EQ_U64(frame_bits_left(f, m, 40, left), four ? 4 : 1);
            CHECK_MSG(left[bad] == (how == 1 ? 2 : -1), "%d streams, damage %d: stream %d has %ld bits left",
                      four ? 4 : 1, how, bad, left[bad]);
            for (int k = 0; k < (four ? 4 : 1); k++) CHECK(k == bad || left[k] == 0);
            const int e = model_decode(f, m, 40, out);
            CHECK_MSG(e == ZG_ZD_E_LITERALS, "%d streams, damage %d: the model gives %d", four ? 4 : 1, how, e);
            r = ZSTD_decompress(ref, sizeof ref, f, m);
            printf("hand-made frame, %d stream(s), %s: ours rejects it (%s); libzstd: %s\n", four ? 4 : 1,
                   how == 1 ? "2 bits left over" : "1 bit read past the start", zg_zd_error_text(e),
                   ZSTD_isError(r) ? ZSTD_getErrorName(r) : "decodes it");
        }
    }
}

/* The chunk of test_gpu_hostile.c's set-up "zstd" (zc_hostile_chunk) with that test's 48 single bit flips. Where
 * libzstd decodes a flipped frame and the model rejects it, the reason must be the rule: a Huffman stream with
 * bits left over or read past its first bit, and libzstd's bytes not the original ones. With libzstd 1.5.4's
 * frame (by its XXH64) these are exactly the 8 flips the GPU test met on an H200, all in the 4-stream literals
 * of the frame's only block: stream 0 (bytes 57-661) at bytes 214, 321, 428; stream 1 (662-1299) at 856, 1070,
 * 1284; stream 3 (1932-2574) at 2354, 2461. */
static void test_huf_hostile_flips(void) {
    const size_t size = 64 * 64 * 4, cap = ZSTD_compressBound(size);
    uint32_t *data = (uint32_t *)malloc(size);
    uint8_t *frame = (uint8_t *)malloc(cap), *d = (uint8_t *)malloc(cap), *ref = (uint8_t *)malloc(size),
            *out = (uint8_t *)malloc(size);
    const size_t n = zc_hostile_chunk(data, frame, cap);
    CHECK(n > 0);
    const int known = n == 5030 && zd_xxh64(frame, n) == ZC_HOSTILE_XXH64;
    static const int want_stream[8] = {0, 0, 0, 1, 1, 1, 3, 3};
    static const long want_left[8] = {9, -20, -30, 7, 2, 2, -20, -20};
    int loose = 0, other = 0;
    for (int k = 0; k < 48 && n; k++) {
        const size_t at = (size_t)k * (n - 1) / 47;
        memcpy(d, frame, n);
        d[at] ^= (uint8_t)(1u << (k % 8));
        const size_t r = ZSTD_decompress(ref, size, d, n);
        const int e = model_decode(d, n, size, out);
        if (ZSTD_isError(r) || r != size || e != ZG_ZD_E_LITERALS) {
            other += !ZSTD_isError(r) && r == size && e != ZG_ZD_OK; /* libzstd decodes, we reject otherwise */
            continue;
        }
        long left[4] = {0, 0, 0, 0};
        const int ns = frame_bits_left(d, n, size, left);
        int s = -1;
        for (int q = 0; q < ns; q++)
            if (left[q] != 0 && s < 0) s = q;
        CHECK_MSG(s >= 0, "bit %d of byte %zu: rejected for a Huffman stream, yet each is read exactly", k % 8, at);
        CHECK_MSG(memcmp(ref, data, size) != 0, "bit %d of byte %zu: libzstd's bytes are the original ones", k % 8, at);
        if (known)
            CHECK_MSG(loose < 8 && k == zc_hostile_loose[loose] && ns == 4 && s == want_stream[loose] &&
                          left[s] == want_left[loose],
                      "bit %d of byte %zu: stream %d of %d, %ld bits left", k % 8, at, s, ns, s >= 0 ? left[s] : 0);
        printf("bit %d of byte %zu flipped: %d-stream literals, stream %d has %ld bits left; libzstd decodes it to "
               "other bytes, ours rejects it\n", k % 8, at, ns, s, s >= 0 ? left[s] : 0);
        loose++;
    }
    printf("hostile chunk (libzstd %s, %zu bytes%s): %d flips rejected for this rule alone\n", ZSTD_versionString(),
           n, known ? ", the frame the GPU test met" : "", loose);
    CHECK_EQ_U64(other, 0);
    if (known) CHECK_EQ_U64(loose, 8);
    free(data);
    free(frame);
    free(d);
    free(ref);
    free(out);
}

static void test_xxh64(void) {
    /* reference values of XXH64 with seed 0 (xxHash's own test vectors) */
    CHECK_EQ_U64(zd_xxh64((const uint8_t *)"", 0), 0xEF46DB3751D8E999ull);
    CHECK_EQ_U64(zd_xxh64((const uint8_t *)"a", 1), 0xD24EC4F1A98C6E5Bull);
    CHECK_EQ_U64(zd_xxh64((const uint8_t *)"abc", 3), 0x44BC2CF5AD770999ull);
}

static void test_error_texts(void) {
    for (int e = ZG_ZD_E_LITERALS; e <= ZG_ZD_E_CHECKSUM; e++) CHECK(strcmp(zg_zd_error_text(e), "unknown zstd decoder error") != 0);
}

/* K3b's ticket order: every block once, round robin over the frames, each frame's blocks in order. */
static void test_ticket_order(void) {
    zg_zd_frame fr[4];
    memset(fr, 0, sizeof fr);
    const uint32_t counts[4] = {3, 0, 1, 2}; /* blocks 0-2, none, 3, 4-5 */
    for (uint32_t f = 0, b = 0; f < 4; b += counts[f++]) {
        fr[f].first_block = b;
        fr[f].n_blocks = counts[f];
    }
    uint32_t order[6];
    CHECK(zg_zd_ticket_order(fr, 4, order) == ZGPU_OK);
    const uint32_t want[6] = {0, 3, 4, 1, 5, 2};
    for (int t = 0; t < 6; t++) CHECK(order[t] == want[t]);
    CHECK(zg_zd_ticket_order(fr, 0, order) == ZGPU_OK); /* no frames: nothing written, no failure */
}

int main(void) {
    zcase *cs;
    size_t n = zc_build(&cs, 0);
    printf("%zu frames from libzstd %s\n", n, ZSTD_versionString());
    test_xxh64();
    test_error_texts();
    test_ticket_order();
    test_cases_one_by_one(cs, n);
    test_one_batch(cs, n);
    test_damaged(cs, n);
    test_huf_hand_frames();
    test_huf_hostile_flips();
    zc_free(cs, n);
    TEST_MAIN_END();
}
