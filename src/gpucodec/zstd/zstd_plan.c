/* Host side of the block-parallel zstd decoder (see zstd_plan.h, zstd_decode.h). */
#include "gpucodec/zstd/zstd_plan.h"

#include <stdlib.h>
#include <string.h>

#include "gpucodec/common/lsb_bits.h"
#include "common/endian.h"
#include "common/status.h"

const char *zg_zd_error_text(int code) {
    switch (code) {
    case ZG_ZD_OK: return "no error";
    case ZG_ZD_E_LITERALS: return "a Huffman literals stream does not decode to its literal count";
    case ZG_ZD_E_SEQUENCES: return "the sequence bitstream does not end after its sequences";
    case ZG_ZD_E_LITLEN: return "sequences take more literals than the block holds";
    case ZG_ZD_E_BLOCKSIZE: return "a block decodes to more than 128 KiB";
    case ZG_ZD_E_OFFSET: return "a match offset reaches before the start of the frame";
    case ZG_ZD_E_SIZE: return "the blocks decode to a size other than the frame's";
    case ZG_ZD_E_CHECKSUM: return "content checksum mismatch";
    default: return "unknown zstd decoder error";
    }
}

void zg_zd_plan_init(zg_zd_plan *pl) {
    memset(pl, 0, sizeof *pl);
    for (int k = 0; k < 3; k++) pl->predefined[k] = -1;
}

void zg_zd_plan_free(zg_zd_plan *pl) {
    free(pl->frames);
    free(pl->blocks);
    free(pl->hufs);
    free(pl->fses);
    zg_zd_plan_init(pl);
}

void zg_zd_plan_reset(zg_zd_plan *pl) {
    pl->n_frames = pl->n_blocks = pl->n_hufs = pl->n_fses = 0;
    pl->lit_bytes = pl->n_seq = 0;
    for (int k = 0; k < 3; k++) pl->predefined[k] = -1;
}

size_t zg_zd_plan_bytes(const zg_zd_plan *pl) {
    return pl->cap_frames * sizeof *pl->frames + pl->cap_blocks * sizeof *pl->blocks +
           pl->cap_hufs * sizeof *pl->hufs + pl->cap_fses * sizeof *pl->fses;
}

/* Room for one more element of an array in the plan. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return 0;
    size_t nc = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, nc * elem);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
    return 0;
}
#define PLAN_PUSH(pl, field, n, cap)                                                                         \
    (grow((void **)&(pl)->field, &(pl)->cap, (pl)->n, sizeof *(pl)->field) ? NULL : &(pl)->field[(pl)->n++])

/* ------------------------------------------------------------------------------------------------
 * Table descriptions
 * ---------------------------------------------------------------------------------------------- */
/* FSE table description (RFC 8878 4.1.1) in p[0, n): accuracy log at most max_log, symbols at most max_sym,
 * normalized probabilities summing exactly to 1 << log. *used: its size in bytes; d (if not NULL): the counts. */
static zgpu_status fse_table_desc(const uint8_t *p, size_t n, int max_log, int max_sym, const char *what,
                                  size_t *used, zg_zd_fse_desc *d) {
    zg_bits b = {p, n, 0};
    int log = (int)bits_get(&b, 4) + 5;
    ZG_RETURN_IF(log > max_log, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table accuracy log %d exceeds %d", what, log, max_log);
    int32_t remaining = (1 << log) + 1, threshold = 1 << log;
    int nbits = log + 1, sym = 0;
    int16_t norm[53] = {0};
    while (remaining > 1) {
        ZG_RETURN_IF(sym > max_sym, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table probabilities do not sum to %d", what,
                     1 << log);
        ZG_RETURN_IF(bits_over(&b), ZGPU_ERR_CORRUPT_DATA, "zstd: %s table description runs past the end", what);
        int32_t max = 2 * threshold - 1 - remaining;
        uint32_t raw = bits_peek(&b, nbits);
        int32_t v = (int32_t)(raw & (uint32_t)(threshold - 1));
        if (v < max) {
            b.pos += (uint64_t)(nbits - 1);
        } else {
            v = (int32_t)(raw & (uint32_t)(2 * threshold - 1));
            if (v >= threshold) v -= max;
            b.pos += (uint64_t)nbits;
        }
        int32_t count = v - 1; /* -1: "less than 1" probability, takes one cell */
        remaining -= count < 0 ? -count : count;
        norm[sym++] = (int16_t)count;
        if (count == 0) { /* 2-bit repeat flags: more zero-probability symbols */
            uint32_t r;
            do {
                ZG_RETURN_IF(bits_over(&b), ZGPU_ERR_CORRUPT_DATA, "zstd: %s table description runs past the end", what);
                r = bits_get(&b, 2);
                sym += (int)r;
                ZG_RETURN_IF(sym > max_sym + 1, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table has too many symbols", what);
            } while (r == 3);
        }
        if (remaining <= 1) break;
        while (remaining < threshold) {
            nbits--;
            threshold >>= 1;
        }
    }
    ZG_RETURN_IF(remaining != 1, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table probabilities over-subscribed", what);
    uint64_t bytes = (b.pos + 7) / 8;
    ZG_RETURN_IF(bytes > n, ZGPU_ERR_CORRUPT_DATA, "zstd: %s table description runs past the end", what);
    *used = (size_t)bytes;
    if (d) {
        memset(d, 0, sizeof *d);
        memcpy(d->norm, norm, sizeof norm);
        d->log = (uint8_t)log;
        d->nsym = (uint8_t)sym;
    }
    return ZGPU_OK;
}

static int highbit32(uint32_t v) { /* v > 0 */
    int h = 0;
    while (v >>= 1) h++;
    return h;
}

/* FSE-compressed Huffman weights (RFC 8878 4.2.1.2): two interleaved states over one backward bitstream,
 * until the bitstream is over-read; then the other state gives the last weight. */
static zgpu_status huffman_weights_fse(const uint8_t *p, size_t hb, uint8_t *w, unsigned *nw) {
    size_t u = 0;
    zg_zd_fse_desc d;
    ZG_FORWARD(fse_table_desc(p, hb, 6, 12, "Huffman weight", &u, &d));
    ZG_RETURN_IF(u >= hb, ZGPU_ERR_CORRUPT_DATA, "zstd: no Huffman weight bitstream");
    zd_fse_cell t[64];
    uint16_t next[64];
    zd_fse_build(t, &d, next);
    zd_br r;
    ZG_RETURN_IF(zd_br_init(&r, p + u, (uint32_t)(hb - u)), ZGPU_ERR_CORRUPT_DATA,
                 "zstd: Huffman weight bitstream lacks its end mark");
    uint32_t st[2];
    st[0] = zd_br_read(&r, d.log);
    st[1] = zd_br_read(&r, d.log);
    unsigned n = 0;
    for (int k = 0;; k ^= 1) {
        ZG_RETURN_IF(n >= 254, ZGPU_ERR_CORRUPT_DATA, "zstd: more than 255 Huffman weights");
        const zd_fse_cell c = t[st[k]];
        w[n++] = c.sym;
        st[k] = c.base + zd_br_read(&r, c.nbits);
        if (zd_br_left(&r) < 0) {
            w[n++] = t[st[k ^ 1]].sym;
            break;
        }
    }
    *nw = n;
    return ZGPU_OK;
}

/* Huffman_Tree_Description (RFC 8878 4.2.1) at the start of p[0, n); d (if not NULL): the weights. */
static zgpu_status zstd_huffman_desc(const uint8_t *p, size_t n, size_t *used, zg_zd_huf_desc *d) {
    ZG_RETURN_IF(n < 1, ZGPU_ERR_CORRUPT_DATA, "zstd: missing Huffman tree description");
    unsigned hb = p[0], nw = 0;
    uint8_t w[256];
    if (hb < 128) { /* FSE-compressed weights: hb bytes */
        ZG_RETURN_IF(hb == 0 || hb > n - 1, ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weights of %u bytes in %zu", hb, n - 1);
        ZG_FORWARD(huffman_weights_fse(p + 1, hb, w, &nw));
        *used = 1 + hb;
    } else { /* direct 4-bit weights */
        nw = hb - 127;
        unsigned bytes = (nw + 1) / 2;
        ZG_RETURN_IF(bytes > n - 1, ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weights run past the literals");
        for (unsigned i = 0; i < nw; i++) w[i] = (i & 1) ? p[1 + i / 2] & 15 : p[1 + i / 2] >> 4;
        *used = 1 + bytes;
    }
    /* the weights must describe a complete code once the implied last weight is added */
    uint32_t total = 0, rank1 = 0;
    for (unsigned i = 0; i < nw; i++) {
        ZG_RETURN_IF(w[i] > 11, ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weight %u exceeds 11", w[i]);
        if (w[i]) total += 1u << (w[i] - 1);
        rank1 += w[i] == 1;
    }
    ZG_RETURN_IF(total == 0, ZGPU_ERR_CORRUPT_DATA, "zstd: all Huffman weights are zero");
    int log = highbit32(total) + 1;
    ZG_RETURN_IF(log > 11, ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman code of %d bits exceeds 11", log);
    uint32_t rest = (1u << log) - total;
    ZG_RETURN_IF(rest & (rest - 1), ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weights leave no valid last weight");
    unsigned last = (unsigned)highbit32(rest) + 1;
    rank1 += last == 1;
    ZG_RETURN_IF(rank1 < 2 || (rank1 & 1), ZGPU_ERR_CORRUPT_DATA, "zstd: Huffman weights give %u codes of the longest length",
                 rank1);
    if (d) {
        memset(d, 0, sizeof *d);
        memcpy(d->w, w, nw);
        d->w[nw] = (uint8_t)last;
        d->nsym = (uint16_t)(nw + 1);
        d->max_bits = (uint8_t)log;
    }
    return ZGPU_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Frame walk
 * ---------------------------------------------------------------------------------------------- */
typedef struct zstd_state {
    zg_zd_plan *pl;    /* NULL: check only */
    int32_t huf;       /* table of the last Huffman-compressed literals (treeless literals reuse it), -1 none */
    int32_t seq[3];    /* current LL / OF / ML tables (Repeat mode reuses them), -1 none */
    size_t block_max;
} zstd_state;

/* A table description slot in the plan, or `scratch` when only checking (the description is dropped). */
static zg_zd_fse_desc *new_fse(zstd_state *st, int32_t *index, zg_zd_fse_desc *scratch) {
    if (!st->pl) {
        *index = 0;
        return scratch;
    }
    *index = (int32_t)st->pl->n_fses;
    return PLAN_PUSH(st->pl, fses, n_fses, cap_fses);
}

/* Huffman-coded streams: non-empty, each ending in a byte with the end mark (`marks` 0: the streams' bytes were not
 * read, their marks are checked where they are decoded). */
static zgpu_status zstd_huffman_streams(const uint8_t *q, size_t qn, int four, int marks, uint32_t *len) {
    if (!four) {
        ZG_RETURN_IF(qn < 1 || (marks && q[qn - 1] == 0), ZGPU_ERR_CORRUPT_DATA,
                     "zstd: literals stream is empty or lacks its end mark");
        len[0] = (uint32_t)qn;
        return ZGPU_OK;
    }
    ZG_RETURN_IF(qn < 6, ZGPU_ERR_CORRUPT_DATA, "zstd: no room for the literals jump table");
    size_t sz[4], sum = 0;
    for (int i = 0; i < 3; i++) sum += sz[i] = (size_t)q[2 * i] | (size_t)q[2 * i + 1] << 8;
    ZG_RETURN_IF(sum >= qn - 6, ZGPU_ERR_CORRUPT_DATA, "zstd: literals jump table runs past the literals");
    sz[3] = qn - 6 - sum;
    size_t at = 6;
    for (int i = 0; i < 4; i++) {
        at += sz[i];
        ZG_RETURN_IF(sz[i] == 0 || (marks && q[at - 1] == 0), ZGPU_ERR_CORRUPT_DATA,
                     "zstd: literals stream %d is empty or lacks its end mark", i + 1);
        len[i] = (uint32_t)sz[i];
    }
    return ZGPU_OK;
}

size_t zg_zd_lit_header_size(uint8_t h0) {
    const int type = h0 & 3, sf = (h0 >> 2) & 3;
    if (type <= 1) return (sf & 1) == 0 ? 1 : sf == 1 ? 2 : 3;
    return sf <= 1 ? 3 : (size_t)sf + 2;
}

int zg_zd_lit_header(const uint8_t *p, size_t n, zg_zd_lit_head *h) {
    if (n < 1) return -1;
    const int type = p[0] & 3, sf = (p[0] >> 2) & 3;
    const size_t hs = zg_zd_lit_header_size(p[0]);
    if (n < hs) return -1;
    *h = (zg_zd_lit_head){type, type >= 2 && sf != 0, hs, 0, 0};
    if (type <= 1) { /* raw or RLE */
        h->regen = (sf & 1) == 0 ? (size_t)(p[0] >> 3)
                                 : (size_t)(p[0] >> 4) + ((size_t)p[1] << 4) + (sf == 3 ? (size_t)p[2] << 12 : 0);
        return 0;
    }
    const int bits = sf <= 1 ? 10 : (sf == 2 ? 14 : 18);
    uint64_t v = 0;
    for (size_t i = 0; i < hs; i++) v |= (uint64_t)p[i] << (8 * i);
    const uint64_t mask = (1u << bits) - 1;
    h->regen = (size_t)((v >> 4) & mask);
    h->csize = (size_t)((v >> (4 + bits)) & mask);
    return 0;
}

/* Literals_Section (RFC 8878 3.1.1.3.1) at the start of a compressed block's content p[0, n). */
static zgpu_status zstd_literals(const uint8_t *p, size_t n, zstd_state *st, zg_zd_block *blk, size_t *used) {
    ZG_RETURN_IF(n < 1, ZGPU_ERR_CORRUPT_DATA, "zstd: empty compressed block");
    const int type = p[0] & 3;
    ZG_RETURN_IF(type == 3 && st->huf < 0, ZGPU_ERR_CORRUPT_DATA, "zstd: treeless literals with no previous Huffman table");
    zg_zd_lit_head lh;
    ZG_RETURN_IF(zg_zd_lit_header(p, n, &lh), ZGPU_ERR_CORRUPT_DATA, "zstd: truncated literals header");
    const size_t hs = lh.hs, regen = lh.regen;
    ZG_RETURN_IF(regen > st->block_max, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu literals exceed the block maximum %zu", regen,
                 st->block_max);
    if (type <= 1) { /* raw or RLE */
        size_t content = type == 0 ? regen : 1;
        ZG_RETURN_IF(content > n - hs, ZGPU_ERR_CORRUPT_DATA, "zstd: literals run past the block");
        *used = hs + content;
        blk->lit_type = type == 0 ? ZG_ZD_LIT_RAW : ZG_ZD_LIT_RLE;
        blk->lit_n = (uint32_t)regen;
        blk->lit_off = (uint32_t)hs;
        return ZGPU_OK;
    }
    /* Huffman-compressed (2) or treeless (3) */
    const int four = lh.four;
    const size_t csize = lh.csize;
    ZG_RETURN_IF(regen == 0 || (four && regen < 6), ZGPU_ERR_CORRUPT_DATA, "zstd: %zu compressed literals in %d streams",
                 regen, four ? 4 : 1);
    ZG_RETURN_IF(csize > n - hs, ZGPU_ERR_CORRUPT_DATA, "zstd: compressed literals of %zu bytes run past the block",
                 csize);
    const uint8_t *q = p + hs;
    size_t qn = csize;
    if (type == 2) {
        size_t u = 0;
        zg_zd_huf_desc *d = NULL;
        if (st->pl) {
            st->huf = (int32_t)st->pl->n_hufs;
            d = PLAN_PUSH(st->pl, hufs, n_hufs, cap_hufs);
            ZG_RETURN_IF(!d, ZGPU_ERR_NO_MEMORY, "zstd: out of memory for table descriptions");
        } else {
            st->huf = 0;
        }
        ZG_FORWARD(zstd_huffman_desc(q, qn, &u, d));
        q += u;
        qn -= u;
    }
    ZG_FORWARD(zstd_huffman_streams(q, qn, four, !(st->pl && st->pl->streams_unread), blk->stream_len));
    *used = hs + csize;
    blk->lit_type = ZG_ZD_LIT_HUF;
    blk->n_streams = four ? 4 : 1;
    blk->lit_n = (uint32_t)regen;
    blk->lit_off = (uint32_t)(q - p) + (four ? 6 : 0);
    blk->huf = (uint32_t)st->huf;
    return ZGPU_OK;
}

/* RFC 8878 3.1.1.3.2.2: the predefined distributions of literal lengths, offsets, match lengths. */
static const int16_t predefined_norm[3][53] = {
    {4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1},
    {1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1},
    {1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  1,
     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1}};
static const uint8_t predefined_log[3] = {6, 5, 6}, predefined_nsym[3] = {36, 29, 53};

/* Sequences_Section (RFC 8878 3.1.1.3.2): the rest of the block, p[0, n); `base`: its offset from the block
 * content. */
static zgpu_status zstd_sequences(const uint8_t *p, size_t n, zstd_state *st, zg_zd_block *blk, size_t base) {
    ZG_RETURN_IF(n < 1, ZGPU_ERR_CORRUPT_DATA, "zstd: missing sequences section");
    size_t pos, nseq;
    if (p[0] < 128) {
        nseq = p[0];
        pos = 1;
    } else if (p[0] < 255) {
        ZG_RETURN_IF(n < 2, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated sequences header");
        nseq = ((size_t)(p[0] - 128) << 8) + p[1];
        pos = 2;
    } else {
        ZG_RETURN_IF(n < 3, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated sequences header");
        nseq = (size_t)p[1] + ((size_t)p[2] << 8) + 0x7f00;
        pos = 3;
    }
    blk->nseq = (uint32_t)nseq;
    if (nseq == 0) {
        ZG_RETURN_IF(pos != n, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu bytes after an empty sequences section", n - pos);
        return ZGPU_OK;
    }
    ZG_RETURN_IF(pos >= n, ZGPU_ERR_CORRUPT_DATA, "zstd: missing symbol compression modes");
    unsigned modes = p[pos++];
    ZG_RETURN_IF(modes & 3, ZGPU_ERR_CORRUPT_DATA, "zstd: reserved bits of the compression modes set (0x%02x)", modes);
    static const char *const names[3] = {"literal length", "offset", "match length"};
    static const int max_sym[3] = {35, 31, 52}, max_log[3] = {9, 8, 9};
    for (int k = 0; k < 3; k++) {
        unsigned mode = (modes >> (6 - 2 * k)) & 3;
        int32_t idx = st->seq[k];
        zg_zd_fse_desc *d = NULL, scratch;
        if (mode == 0) { /* predefined */
            if (!st->pl) {
                idx = 0;
            } else if (st->pl->predefined[k] >= 0) {
                idx = st->pl->predefined[k];
            } else {
                ZG_RETURN_IF(!(d = new_fse(st, &idx, &scratch)), ZGPU_ERR_NO_MEMORY, "zstd: out of memory for table descriptions");
                memset(d, 0, sizeof *d);
                memcpy(d->norm, predefined_norm[k], sizeof predefined_norm[k]);
                d->log = predefined_log[k];
                d->nsym = predefined_nsym[k];
                st->pl->predefined[k] = idx;
            }
        } else if (mode == 1) { /* RLE: one symbol byte */
            ZG_RETURN_IF(pos >= n, ZGPU_ERR_CORRUPT_DATA, "zstd: missing %s RLE symbol", names[k]);
            ZG_RETURN_IF(p[pos] > max_sym[k], ZGPU_ERR_CORRUPT_DATA, "zstd: %s RLE symbol %u exceeds %d", names[k],
                         p[pos], max_sym[k]);
            ZG_RETURN_IF(!(d = new_fse(st, &idx, &scratch)), ZGPU_ERR_NO_MEMORY, "zstd: out of memory for table descriptions");
            memset(d, 0, sizeof *d);
            d->norm[p[pos]] = 1;
            d->nsym = (uint8_t)(p[pos] + 1);
            pos++;
        } else if (mode == 2) {
            size_t u = 0;
            ZG_RETURN_IF(!(d = new_fse(st, &idx, &scratch)), ZGPU_ERR_NO_MEMORY, "zstd: out of memory for table descriptions");
            ZG_FORWARD(fse_table_desc(p + pos, n - pos, max_log[k], max_sym[k], names[k], &u, d));
            pos += u;
        } else {
            ZG_RETURN_IF(idx < 0, ZGPU_ERR_CORRUPT_DATA, "zstd: %s repeat mode with no previous table", names[k]);
        }
        st->seq[k] = idx;
    }
    ZG_RETURN_IF(pos >= n, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu sequences with an empty bitstream", nseq);
    ZG_RETURN_IF(p[n - 1] == 0, ZGPU_ERR_CORRUPT_DATA, "zstd: sequence bitstream lacks its end mark");
    blk->ll = (uint32_t)st->seq[0];
    blk->of = (uint32_t)st->seq[1];
    blk->ml = (uint32_t)st->seq[2];
    blk->seq_off = (uint32_t)(base + pos);
    blk->seq_len = (uint32_t)(n - pos);
    return ZGPU_OK;
}

static zgpu_status plan_frame(zstd_state *st, const uint8_t *p, size_t n, size_t expected, uint64_t src_off) {
    zg_zd_plan *pl = st->pl;
    ZG_RETURN_IF(n < 6, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu bytes is shorter than a frame", n);
    uint32_t magic = zg_le32(p);
    if ((magic & 0xfffffff0u) == 0x184d2a50u) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: skippable frame");
    ZG_RETURN_IF(magic != 0xfd2fb528u, ZGPU_ERR_CORRUPT_DATA, "zstd: bad magic 0x%08x", magic);
    uint8_t fhd = p[4];
    ZG_RETURN_IF(fhd & 0x08, ZGPU_ERR_CORRUPT_DATA, "zstd: reserved frame header bit set");
    int fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, checksum = (fhd >> 2) & 1, did_flag = fhd & 3;
    static const int did_size[4] = {0, 1, 2, 4};
    int fcs_size = fcs_flag == 0 ? single : (fcs_flag == 1 ? 2 : (fcs_flag == 2 ? 4 : 8));
    size_t pos = 5;
    uint64_t window = 0;
    if (!single) {
        unsigned wd = p[5], wlog = 10 + (wd >> 3);
        ZG_RETURN_IF(wlog > 31, ZGPU_ERR_UNSUPPORTED, "zstd: window of 2^%u bytes", wlog);
        window = (1ull << wlog) + ((1ull << wlog) >> 3) * (wd & 7);
        pos++;
    }
    ZG_RETURN_IF(pos + did_size[did_flag] + fcs_size > n, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated frame header");
    uint64_t did = 0;
    for (int i = 0; i < did_size[did_flag]; i++) did |= (uint64_t)p[pos + i] << (8 * i);
    pos += did_size[did_flag];
    if (did) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: frame needs dictionary %llu", (unsigned long long)did);
    uint64_t target = expected == SIZE_MAX ? UINT64_MAX : (uint64_t)expected; /* UINT64_MAX: unknown */
    if (fcs_size) {
        uint64_t fcs = 0;
        for (int i = 0; i < fcs_size; i++) fcs |= (uint64_t)p[pos + i] << (8 * i);
        if (fcs_size == 2) fcs += 256;
        pos += fcs_size;
        ZG_RETURN_IF(expected != SIZE_MAX && fcs != expected, ZGPU_ERR_CORRUPT_DATA,
                     "zstd: frame content size %llu, expected %zu", (unsigned long long)fcs, expected);
        target = fcs;
        if (single) window = fcs;
    }
    if (pl) {
        if (target == UINT64_MAX) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: frame of unknown decoded size");
        if (target > ZG_ZD_MAX_FRAME)
            return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: frame of %llu bytes", (unsigned long long)target);
        zg_zd_frame *f = PLAN_PUSH(pl, frames, n_frames, cap_frames);
        ZG_RETURN_IF(!f, ZGPU_ERR_NO_MEMORY, "zstd: out of memory for frame descriptors");
        memset(f, 0, sizeof *f);
        f->size = target;
        f->first_block = (uint32_t)pl->n_blocks;
    }
    st->block_max = window < ZG_ZD_BLOCK_MAX ? (size_t)window : ZG_ZD_BLOCK_MAX;
    /* bounds of the decoded size: exact for raw/RLE blocks and compressed blocks without sequences; otherwise
     * a compressed block makes at least its literals plus 3 bytes per sequence and at most block_max */
    uint64_t lo = 0, hi = 0;
    /* The plan's descriptors (about 100 bytes a block on the host and the device) must stay within a few times
     * the frame's decoded size, which is validated: empty blocks cost 3 stored bytes each, so a hostile frame
     * could otherwise ask for 30 times its stored size. A block holds up to the window's size, at least 1 KiB,
     * and writers fill their blocks (libzstd: 128 KiB); a frame of more blocks than one a KiB (plus slack)
     * decodes on the host. */
    const uint64_t max_blocks = target == UINT64_MAX ? UINT64_MAX : target / 1024 + 64;
    uint64_t n_blk = 0;
    for (;;) {
        ZG_RETURN_IF(pos + 3 > n, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated block header at %zu", pos);
        if (pl && ++n_blk > max_blocks)
            return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: more than %llu blocks for %llu decoded bytes",
                            (unsigned long long)max_blocks, (unsigned long long)target);
        uint32_t bh = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8 | (uint32_t)p[pos + 2] << 16;
        pos += 3;
        int last = bh & 1, type = (bh >> 1) & 3;
        size_t bsize = bh >> 3;
        ZG_RETURN_IF(type == 3, ZGPU_ERR_CORRUPT_DATA, "zstd: reserved block type");
        /* raw/RLE sizes are decoded sizes, limited by the window; a compressed block's stored size only by
         * 128 KiB (libzstd takes one larger than a small single-segment frame's content) */
        size_t limit = type == 2 ? ZG_ZD_BLOCK_MAX : st->block_max;
        ZG_RETURN_IF(bsize > limit, ZGPU_ERR_CORRUPT_DATA, "zstd: block of %zu bytes exceeds the maximum %zu", bsize, limit);
        size_t stored = type == 1 ? 1 : bsize;
        ZG_RETURN_IF(stored > n - pos, ZGPU_ERR_CORRUPT_DATA, "zstd: block of %zu bytes runs past the end", stored);
        zg_zd_block blk;
        memset(&blk, 0, sizeof blk);
        blk.src = src_off + pos;
        blk.type = (uint8_t)type;
        blk.last = (uint8_t)last;
        if (type == 2) {
            size_t used = 0;
            ZG_FORWARD(zstd_literals(p + pos, bsize, st, &blk, &used));
            ZG_FORWARD(zstd_sequences(p + pos + used, bsize - used, st, &blk, used));
            uint64_t lit = blk.lit_n, nseq = blk.nseq;
            ZG_RETURN_IF(lit + 3 * nseq > st->block_max, ZGPU_ERR_CORRUPT_DATA,
                         "zstd: %llu literals and %llu sequences exceed the block maximum %zu", (unsigned long long)lit,
                         (unsigned long long)nseq, st->block_max);
            lo += lit + 3 * nseq;
            hi += nseq ? st->block_max : lit; /* without sequences the block is its literals */
        } else {
            blk.lit_n = (uint32_t)bsize;
            lo += bsize;
            hi += bsize;
        }
        ZG_RETURN_IF(target != UINT64_MAX && lo > target, ZGPU_ERR_CORRUPT_DATA,
                     "zstd: blocks decode to more than %llu bytes", (unsigned long long)target);
        if (pl) {
            zg_zd_block *b = PLAN_PUSH(pl, blocks, n_blocks, cap_blocks);
            ZG_RETURN_IF(!b, ZGPU_ERR_NO_MEMORY, "zstd: out of memory for block descriptors");
            blk.frame = (uint32_t)(pl->n_frames - 1);
            if (type == 2) {
                blk.lit = pl->lit_bytes;
                blk.seq = pl->n_seq;
                pl->lit_bytes += blk.lit_n;
                pl->n_seq += blk.nseq;
            }
            *b = blk;
        }
        pos += stored;
        if (last) break;
    }
    ZG_RETURN_IF(target != UINT64_MAX && hi < target, ZGPU_ERR_CORRUPT_DATA,
                 "zstd: blocks decode to at most %llu bytes, expected %llu", (unsigned long long)hi,
                 (unsigned long long)target);
    if (checksum) {
        ZG_RETURN_IF(n - pos < 4, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated content checksum");
        if (pl) {
            pl->frames[pl->n_frames - 1].has_checksum = 1;
            pl->frames[pl->n_frames - 1].checksum = zg_le32(p + pos);
        }
        pos += 4;
    }
    if (pos != n) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: %zu bytes follow the first frame", n - pos);
    if (pl) pl->frames[pl->n_frames - 1].n_blocks = (uint32_t)(pl->n_blocks - pl->frames[pl->n_frames - 1].first_block);
    return ZGPU_OK;
}

zgpu_status zg_zd_plan_frame(zg_zd_plan *pl, const uint8_t *p, size_t n, size_t expected, uint64_t src_off) {
    zstd_state st;
    memset(&st, 0, sizeof st);
    st.pl = pl;
    st.huf = -1;
    for (int k = 0; k < 3; k++) st.seq[k] = -1;
    if (!pl) return plan_frame(&st, p, n, expected, src_off);
    zg_zd_plan saved = *pl; /* counts to roll back to; arrays may have moved, their prefix is unchanged */
    zgpu_status s = plan_frame(&st, p, n, expected, src_off);
    if (s != ZGPU_OK) {
        pl->n_frames = saved.n_frames;
        pl->n_blocks = saved.n_blocks;
        pl->n_hufs = saved.n_hufs;
        pl->n_fses = saved.n_fses;
        pl->lit_bytes = saved.lit_bytes;
        pl->n_seq = saved.n_seq;
        for (int k = 0; k < 3; k++)
            if (pl->predefined[k] >= (int32_t)pl->n_fses) pl->predefined[k] = -1;
    }
    return s;
}

zgpu_status zg_zd_ticket_order(const zg_zd_frame *frames, size_t n_frames, uint32_t *order) {
    uint32_t *live = malloc((n_frames ? n_frames : 1) * sizeof *live); /* frames with blocks left, in order */
    if (!live) return ZGPU_ERR_NO_MEMORY;
    size_t n_live = 0, t = 0;
    for (size_t f = 0; f < n_frames; f++)
        if (frames[f].n_blocks) live[n_live++] = (uint32_t)f;
    for (uint32_t r = 0; n_live; r++) {
        size_t kept = 0;
        for (size_t i = 0; i < n_live; i++) {
            const zg_zd_frame *fr = &frames[live[i]];
            order[t++] = fr->first_block + r;
            if (fr->n_blocks > r + 1) live[kept++] = live[i];
        }
        n_live = kept;
    }
    free(live);
    return ZGPU_OK;
}

void zg_zd_plan_emit(const zg_zd_plan *pl, const zg_zd_bases *at, zg_zd_block *blocks, zg_zd_frame *frames,
                     zg_zd_huf_desc *hufs, zg_zd_fse_desc *fses) {
    for (size_t i = 0; i < pl->n_blocks; i++) {
        zg_zd_block b = pl->blocks[i];
        b.src += at->src;
        b.lit += at->lit;
        b.seq = at->seq + b.seq * sizeof(zg_zd_seq);
        b.frame += at->frame;
        b.huf += at->huf;
        b.ll += at->fse;
        b.of += at->fse;
        b.ml += at->fse;
        blocks[at->block + i] = b;
    }
    for (size_t i = 0; i < pl->n_frames; i++) {
        zg_zd_frame f = pl->frames[i];
        f.first_block += at->block;
        frames[at->frame + i] = f;
    }
    if (pl->n_hufs) memcpy(hufs + at->huf, pl->hufs, pl->n_hufs * sizeof *hufs);
    if (pl->n_fses) memcpy(fses + at->fse, pl->fses, pl->n_fses * sizeof *fses);
}
