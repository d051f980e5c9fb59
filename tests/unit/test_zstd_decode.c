/* The block-parallel zstd decoder's rules (src/gpucodec/zstd/zstd_rules.h) and its host planner (zstd_plan.c), run on
 * the CPU in the same three steps as the GPU kernels (K1 per block, K2 per frame, K3 per block in any order
 * that respects the waits), against libzstd on frames that reach every part of the format, on batches of
 * many frames, and on damaged frames (never a wild access: ASan; decoded output only when libzstd agrees). */
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
    zc_free(cs, n);
    TEST_MAIN_END();
}
