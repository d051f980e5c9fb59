/* The block-parallel zstd decoder run on the CPU with the same shared rules and the same three steps as the
 * GPU kernels (K1 per block, K2 per frame, K3 per block): the reference the GPU test compares against and the
 * way the CPU test checks the rules against libzstd. */
#ifndef ZG_ZSTD_CPU_REF_H
#define ZG_ZSTD_CPU_REF_H
#include <stdlib.h>
#include <string.h>
#include "gpucodec/zstd/zstd_plan.h"

static const zg_zd_consts zc_consts = ZG_ZD_CONSTS_INIT;

/* CPU run of a plan whose block src offsets are relative to `base`, step by step as the GPU kernels do it;
 * dst[f] receives frame f (its size in bytes); err[f]: ZG_ZD_* per frame. */
static void zc_cpu_run(const zg_zd_plan *pl, const uint8_t *base, uint8_t **dst, int *err) {
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
            r->err = (uint32_t)zd_sequences(&zc_consts, tll, pl->fses[blk->ll].log, tof, pl->fses[blk->of].log, tml,
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

#endif
