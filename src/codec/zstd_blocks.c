/* A zstd frame's blocks outside the split's scheduling (zstd_blocks.h): one block's Huffman literals, and the block
 * headers of a frame read in part. */
#include "codec/zstd_blocks.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/endian.h"
#include "common/status.h"
#include "common/tls.h"

/* A block's four Huffman streams decoded side by side (each one's next symbol depends on the bits its last one
 * took: one stream at a time waits on that chain, four interleaved keep the core busy); the streams' ends and
 * exact lengths checked as zd_huf_stream checks them. */
int zg_zstd_huf_four(const uint16_t *t, uint32_t log, const zg_zd_block *blk, const uint8_t *at, uint8_t *dst) {
    zd_br r[4];
    uint8_t *o[4];
    uint32_t cnt[4];
    for (int k = 0; k < 4; k++) {
        if (zd_br_init(&r[k], at, blk->stream_len[k])) return ZG_ZD_E_LITERALS;
        cnt[k] = zd_stream_count(blk, k);
        o[k] = dst;
        dst += cnt[k];
        at += blk->stream_len[k];
    }
    const uint32_t common = cnt[3] < cnt[0] ? cnt[3] : cnt[0]; /* (streams 0-2 hold the same count) */
    uint32_t i = 0;
    /* the four readers' windows in locals, four symbols of a stream gathered into one word store (a byte store
     * may alias anything: the readers would go back to memory after each) */
    uint64_t c0 = r[0].c, c1 = r[1].c, c2 = r[2].c, c3 = r[3].c;
    uint32_t b0 = r[0].bc, b1 = r[1].bc, b2 = r[2].bc, b3 = r[3].bc;
    int64_t p0 = r[0].ptr, p1 = r[1].ptr, p2 = r[2].ptr, p3 = r[3].ptr;
    const uint32_t sh = 64 - log;
#define HUF_RELOAD(k)                                                                                                \
    do {                                                                                                             \
        const uint32_t nb = b##k >> 3;                                                                               \
        p##k -= nb;                                                                                                  \
        b##k &= 7;                                                                                                   \
        c##k = zd_load(r[k].p, p##k);                                                                                \
    } while (0)
#define HUF_SYM(k, w, s)                                                                                             \
    do {                                                                                                             \
        const uint16_t e = t[(c##k << b##k) >> sh];                                                                  \
        w |= (uint32_t)(e & 0xff) << (8 * (s));                                                                      \
        b##k += e >> 8;                                                                                              \
    } while (0)
    for (; i + 4 <= common && p0 >= 0 && p1 >= 0 && p2 >= 0 && p3 >= 0; i += 4) { /* bc <= 7 + 4 * 11 <= 64 */
        HUF_RELOAD(0);
        HUF_RELOAD(1);
        HUF_RELOAD(2);
        HUF_RELOAD(3);
        uint32_t w0 = 0, w1 = 0, w2 = 0, w3 = 0;
        for (int q = 0; q < 4; q++) {
            HUF_SYM(0, w0, q);
            HUF_SYM(1, w1, q);
            HUF_SYM(2, w2, q);
            HUF_SYM(3, w3, q);
        }
        memcpy(o[0] + i, &w0, 4); /* little endian: byte q is symbol q */
        memcpy(o[1] + i, &w1, 4);
        memcpy(o[2] + i, &w2, 4);
        memcpy(o[3] + i, &w3, 4);
    }
#undef HUF_RELOAD
#undef HUF_SYM
    r[0].c = c0, r[1].c = c1, r[2].c = c2, r[3].c = c3;
    r[0].bc = b0, r[1].bc = b1, r[2].bc = b2, r[3].bc = b3;
    r[0].ptr = p0, r[1].ptr = p1, r[2].ptr = p2, r[3].ptr = p3;
    for (int k = 0; k < 4; k++) {
        for (uint32_t x = i; x < cnt[k]; x++) {
            zd_br_reload(&r[k]);
            const uint16_t e = t[zd_br_peek(&r[k], log)];
            o[k][x] = (uint8_t)e;
            r[k].bc += e >> 8;
        }
        if (zd_br_left(&r[k]) != 0) return ZG_ZD_E_LITERALS;
    }
    return ZG_ZD_OK;
}

/* A thread's libzstd context and room for one block wrapped as a frame (huf_libzstd). */
typedef struct wrap_tls {
    ZSTD_DCtx *dctx;
    uint8_t frame[ZG_ZD_BLOCK_MAX + 512];
} wrap_tls;

static _Thread_local void *tl_wrap;

static void wrap_tls_free(void *p) {
    ZSTD_freeDCtx(((wrap_tls *)p)->dctx);
    free(p);
}

/* Block b's Huffman literals decoded by libzstd, about twice as fast as huf_four on one core: the block's literal
 * section (a treeless one given the table description of the block that last carried one) wrapped as a frame of one
 * block without sequences, whose content is then exactly the literals. Returns 0 when done, -1 where libzstd finds
 * them damaged, 1 where the section does not wrap (a single stream that outgrows its 10-bit sizes with the table
 * added, no memory for a context): the caller then decodes it with huf_four. */
int zg_zstd_huf_libzstd(const zg_zd_plan *pl, const uint8_t *in, uint32_t b, uint8_t *dst) {
    const zg_zd_block *blk = &pl->blocks[b];
    const uint8_t *sec = in + blk->src;
    const size_t hs = zg_zd_lit_header_size(sec[0]), jump = blk->n_streams == 4 ? 6 : 0;
    /* the streams (jump table first), and the table description: this block's, or the last earlier one's */
    const uint8_t *streams = sec + blk->lit_off - jump, *tree = sec + hs;
    size_t tree_n = (size_t)(streams - tree);
    if ((sec[0] & 3) == 3) {
        const zg_zd_block *e = NULL;
        for (uint32_t d = b; d > 0 && !e; d--) {
            const zg_zd_block *c = &pl->blocks[d - 1];
            if (c->type == ZG_ZD_BLOCK_COMPRESSED && c->lit_type == ZG_ZD_LIT_HUF && (in[c->src] & 3) == 2) e = c;
        }
        if (!e || e->huf != blk->huf) return 1;
        const uint8_t *esec = in + e->src;
        tree = esec + zg_zd_lit_header_size(esec[0]);
        tree_n = (size_t)(esec + e->lit_off - (e->n_streams == 4 ? 6 : 0) - tree);
    }
    size_t streams_n = jump;
    for (int k = 0; k < blk->n_streams; k++) streams_n += blk->stream_len[k];
    const size_t csize = tree_n + streams_n;
    int sf = 0, bits = 10;
    if (blk->n_streams == 4) {
        const size_t big = csize > blk->lit_n ? csize : blk->lit_n;
        sf = big < 1024 ? 1 : big < 16384 ? 2 : 3;
        bits = sf == 1 ? 10 : sf == 2 ? 14 : 18;
    }
    if (csize >= ((size_t)1 << bits) || blk->lit_n >= ((size_t)1 << bits)) return 1;
    const size_t nhs = zg_zd_lit_header_size((uint8_t)(2 | sf << 2)), content = nhs + csize + 1;
    if (content > ZG_ZD_BLOCK_MAX) return 1;
    wrap_tls *w = zg_tls_get(&tl_wrap, sizeof(wrap_tls), wrap_tls_free);
    if (!w || (!w->dctx && !(w->dctx = ZSTD_createDCtx()))) return 1;
    /* frame header: no single segment (a 128 KiB window, so the block may hold more than its literals' count),
     * a 4-byte content size; then the last block, compressed */
    uint8_t *f = w->frame;
    size_t at = 0;
    const uint32_t magic = 0xFD2FB528u, lit_n = blk->lit_n, bh = (uint32_t)(content << 3) | (2u << 1) | 1u;
    for (int k = 0; k < 4; k++) f[at++] = (uint8_t)(magic >> (8 * k));
    f[at++] = 0x80;            /* content size in 4 bytes */
    f[at++] = (17 - 10) << 3;  /* window 2^17 */
    for (int k = 0; k < 4; k++) f[at++] = (uint8_t)(lit_n >> (8 * k));
    for (int k = 0; k < 3; k++) f[at++] = (uint8_t)(bh >> (8 * k));
    const uint64_t h = 2u | (uint64_t)sf << 2 | (uint64_t)lit_n << 4 | (uint64_t)csize << (4 + bits);
    for (size_t k = 0; k < nhs; k++) f[at++] = (uint8_t)(h >> (8 * k));
    memcpy(f + at, tree, tree_n);
    memcpy(f + at + tree_n, streams, streams_n);
    at += csize;
    f[at++] = 0; /* no sequences */
    const size_t got = ZSTD_decompressDCtx(w->dctx, dst, lit_n, f, at);
    return ZSTD_isError(got) || got != lit_n ? -1 : 0;
}

/* A frame read in part: its frame header, then each block's header, literals header (with its table description and
 * jump table: PART_HEAD bytes hold them) and sequences, one read a block (each also reads the next block's header
 * and head). Returns 0, or 1 where the frame is not one to read so (not a single zstd frame, sizes past its end, a
 * read error): the caller then reads it whole, and its decode names what is wrong. */
#define PART_HEAD 256
int zg_zstd_part_heads(const zg_part_input *part, size_t n) {
    uint8_t *in = part->buf;
    char saved[ZG_ERRMSG_MAX];
    zg_error_save(saved);
    int bad = 1;
#define PART_FETCH(lo, hi)                                                                                           \
    if ((hi) > (lo) && part->fetch(part->ctx, (lo), (hi) - (lo), in + (lo)) != ZGPU_OK) goto out;
    size_t got = n < 18 + 3 + PART_HEAD ? n : 18 + 3 + PART_HEAD; /* [0, got): read */
    PART_FETCH(0, got);
    if (n < 6 || zg_le32(in) != 0xFD2FB528u) goto out;
    const uint8_t fhd = in[4];
    const int single = (fhd >> 5) & 1, fcs = fhd >> 6, sum = (fhd >> 2) & 1;
    static const size_t did_n[4] = {0, 1, 2, 4}, fcs_n[4] = {0, 2, 4, 8};
    size_t p = 5 + (size_t)!single + did_n[fhd & 3] + (fcs == 0 && single ? 1 : fcs_n[fcs]);
    for (;;) { /* [p, min(got, p + 3 + PART_HEAD)) is read */
        if (p + 3 > got) goto out;
        const uint32_t bh = (uint32_t)in[p] | (uint32_t)in[p + 1] << 8 | (uint32_t)in[p + 2] << 16;
        const int last = bh & 1, type = (bh >> 1) & 3;
        const size_t bsize = bh >> 3, c = p + 3, next = type == 1 ? c + 1 : c + bsize;
        if (type == 3 || next > n) goto out;
        size_t from = next; /* past the head: what the decode needs of this block (its sequences) */
        if (type == 2) {
            zg_zd_lit_head lh;
            if (bsize < 1 || c + 5 > got || zg_zd_lit_header(in + c, got - c, &lh)) goto out;
            const size_t lit = lh.type == 0 ? lh.regen : lh.type == 1 ? 1 : lh.csize; /* (its bytes after the header) */
            if (lh.hs + lit > bsize) goto out;
            from = c + lh.hs + lit;
        }
        const size_t head_end = got, to = last ? (sum ? next + 4 : next) : next + 3 + PART_HEAD;
        const size_t end = to < n ? to : n;
        PART_FETCH(from > head_end ? from : head_end, end);
        got = end;
        if (last) break;
        p = next;
    }
    bad = 0;
out:
#undef PART_FETCH
    zg_error_restore(saved);
    return bad;
}

