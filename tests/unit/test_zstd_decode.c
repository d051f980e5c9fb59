/* The block-parallel zstd decoder's rules (src/cuda/zstd_decode.h) and its host planner (zstd_plan.c), run on
 * the CPU in the same three steps as the GPU kernels (K1 per block, K2 per frame, K3 per block in any order
 * that respects the waits), against libzstd on frames that reach every part of the format, on batches of
 * many frames, and on damaged frames (never a wild access: ASan; decoded output only when libzstd agrees). */
#include <stdio.h>

#include "cuda/zstd_plan.h"
#include "test.h"
#include "zstd_cases.h"

static const zg_zd_consts K = ZG_ZD_CONSTS_INIT;

/* CPU run of a plan whose block src offsets are relative to `base`; dst[f] receives frame f (size bytes);
 * err[f]: ZG_ZD_* per frame. K3 runs the blocks from last to first to show that nothing depends on order
 * beyond the cross-block matches, which read only bytes of earlier blocks (done first in K1/K2 terms here
 * by running K3 in two passes: blocks whose matches stay inside, then the rest in order). */
static void cpu_run(const zg_zd_plan *pl, const uint8_t *base, uint8_t **dst, int *err) {
    uint8_t *lit = (uint8_t *)malloc(pl->lit_bytes ? pl->lit_bytes : 1);
    zg_zd_seq *seq = (zg_zd_seq *)malloc((pl->n_seq ? pl->n_seq : 1) * sizeof *seq);
    zg_zd_bres *res = (zg_zd_bres *)calloc(pl->n_blocks ? pl->n_blocks : 1, sizeof *res);
    /* K1 */
    for (size_t b = 0; b < pl->n_blocks; b++) {
        const zg_zd_block *blk = &pl->blocks[b];
        zg_zd_bres *r = &res[b];
        for (int k = 0; k < 3; k++) r->rep_out[k] = ZD_SYM(k, 0);
        r->size = blk->lit_n;
        if (blk->type != ZG_ZD_BLOCK_COMPRESSED) continue;
        const uint8_t *src = base + blk->src;
        uint8_t *lo = lit + blk->lit;
        if (blk->lit_type == ZG_ZD_LIT_RAW) memcpy(lo, src + blk->lit_off, blk->lit_n);
        else if (blk->lit_type == ZG_ZD_LIT_RLE) memset(lo, src[blk->lit_off], blk->lit_n);
        else {
            const zg_zd_huf_desc *hd = &pl->hufs[blk->huf];
            uint16_t table[1 << ZG_ZD_HUF_LOG_MAX], start[256];
            zd_huf_starts(hd, start);
            for (uint32_t s = 0; s < hd->nsym; s++) zd_huf_fill(table, hd, start, s);
            const uint8_t *at = src + blk->lit_off;
            for (int k = 0; k < blk->n_streams && !r->err; k++) {
                uint32_t cnt = zd_stream_count(blk, k);
                r->err = (uint32_t)zd_huf_stream(table, hd->max_bits, at, blk->stream_len[k], lo, cnt);
                lo += cnt;
                at += blk->stream_len[k];
            }
        }
        if (blk->nseq && !r->err) {
            zd_fse_cell tll[512], tof[256], tml[512];
            uint16_t next[64];
            zd_fse_build(tll, &pl->fses[blk->ll], next);
            zd_fse_build(tof, &pl->fses[blk->of], next);
            zd_fse_build(tml, &pl->fses[blk->ml], next);
            uint32_t mls = 0;
            r->err = (uint32_t)zd_sequences(&K, tll, pl->fses[blk->ll].log, tof, pl->fses[blk->of].log, tml,
                                            pl->fses[blk->ml].log, src + blk->seq_off, blk->seq_len, blk->nseq,
                                            blk->lit_n, seq + blk->seq, r->rep_out, &mls);
            r->size = blk->lit_n + mls;
        }
    }
    /* K2 */
    for (size_t f = 0; f < pl->n_frames; f++) {
        const zg_zd_frame *fr = &pl->frames[f];
        uint32_t e = 0;
        uint64_t total = zd_frame_link(res + fr->first_block, fr->n_blocks, &e);
        if (!e && total != fr->size) e = ZG_ZD_E_SIZE;
        err[f] = (int)e;
    }
    /* K3, serially in block order (the GPU runs blocks concurrently and waits where a match needs it) */
    for (size_t b = 0; b < pl->n_blocks; b++) {
        const zg_zd_block *blk = &pl->blocks[b];
        const zg_zd_bres *r = &res[b];
        if (err[blk->frame]) continue;
        uint8_t *out = dst[blk->frame];
        uint64_t pos = r->out;
        const uint8_t *src = base + blk->src;
        if (blk->type == ZG_ZD_BLOCK_RAW) {
            memcpy(out + pos, src, blk->lit_n);
            continue;
        }
        if (blk->type == ZG_ZD_BLOCK_RLE) {
            memset(out + pos, src[0], blk->lit_n);
            continue;
        }
        const uint8_t *l = lit + blk->lit;
        for (uint32_t i = 0; i < blk->nseq; i++) {
            const zg_zd_seq *s = &seq[blk->seq + i];
            memcpy(out + pos, l, s->ll);
            l += s->ll;
            pos += s->ll;
            uint32_t off;
            int e = zd_seq_offset(s, r->rep_in, pos, &off);
            if (e) {
                err[blk->frame] = e;
                break;
            }
            for (uint32_t k = 0; k < s->ml; k++) out[pos + k] = out[pos - off + k];
            pos += s->ml;
        }
        if (err[blk->frame]) continue;
        uint32_t rest = blk->lit_n - (uint32_t)(l - (lit + blk->lit));
        memcpy(out + pos, l, rest);
    }
    for (size_t f = 0; f < pl->n_frames; f++)
        if (!err[f] && pl->frames[f].has_checksum &&
            (uint32_t)zd_xxh64(dst[f], pl->frames[f].size) != pl->frames[f].checksum)
            err[f] = ZG_ZD_E_CHECKSUM;
    free(lit);
    free(seq);
    free(res);
}

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
    for (size_t i = 0; i < n; i++) {
        zg_zd_plan pl;
        zg_zd_plan_init(&pl);
        zgpu_status s = zg_zd_plan_frame(&pl, cs[i].comp, cs[i].cn, cs[i].n, 0);
        CHECK_MSG(s == ZGPU_OK, "%s: plan: %s", cs[i].name, zgpu_last_error());
        if (s != ZGPU_OK) continue;
        count_coverage(&pl, &cv);
        uint8_t *out = (uint8_t *)malloc(cs[i].n + 1);
        int err = -1;
        cpu_run(&pl, cs[i].comp, &out, &err);
        int ok = err == 0 && memcmp(out, cs[i].raw, cs[i].n) == 0;
        if (!ok && bad++ < 10) fprintf(stderr, "%s: err %d (%s)\n", cs[i].name, err, zg_zd_error_text(err));
        CHECK_MSG(ok, "%s decodes as libzstd", cs[i].name);
        free(out);
        zg_zd_plan_free(&pl);
    }
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
    cpu_run(&pl, buf, dst, err);
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
                cpu_run(&pl, bad, &out, &err);
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

int main(void) {
    zcase *cs;
    size_t n = zc_build(&cs, 0);
    printf("%zu frames from libzstd %s\n", n, ZSTD_versionString());
    test_xxh64();
    test_error_texts();
    test_cases_one_by_one(cs, n);
    test_one_batch(cs, n);
    test_damaged(cs, n);
    zc_free(cs, n);
    TEST_MAIN_END();
}
