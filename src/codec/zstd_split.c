/* One zstd frame decoded by several host threads (see zstd_split.h). Three steps, as the GPU decoder's kernels:
 *   blocks   (parallel, a block an index) each block's literals (Huffman streams decoded) and sequences, in the
 *            same shared rules the GPU runs (zstd_rules.h); blocks are handed out in order and stop once the ones
 *            decoded so far reach byte hi (a crop's last needed byte);
 *   link     (the caller) each block's place in the frame and its incoming repeat offsets;
 *   runs     (parallel, a run of blocks a thread, about equal in decoded bytes) the literals and matches written
 *            in order. A match whose source starts before the run is resolved by following it back: a byte of an
 *            earlier match is the byte `offset` before it (a periodic match's byte k is byte k mod offset of its
 *            first period), down to a literal or a raw or RLE block, so no thread waits for another (the ranges
 *            being resolved and a memo of the positions passed keep long chains from being walked twice). A run
 *            whose lookups pass a budget that grows with what it has written (matches reaching far back
 *            everywhere) stops there and is finished afterwards, in order, when every byte before it is final.
 * A frame the block rules find damaged is declined, so that the one-thread decode (libzstd) names the fault. */
#include "codec/zstd_split.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "codec/zstd_blocks.h"
#include "common/status.h"
#include "common/tls.h"
#include "gpucodec/zstd/zstd_plan.h"
#include "host/pool.h"

static const zg_zd_consts split_consts = ZG_ZD_CONSTS_INIT;

#define LIT_SLACK 32 /* bytes after the literal buffer that 16-byte copies may read */
/* Fewer Huffman literals than this decode with huf_four (wrapping them for libzstd costs more than it saves). */
#define HUF_LIBZSTD_MIN 4096

static atomic_ullong st_frames, st_chased, st_deferred, st_sparse, st_lazy, st_wrapped, job_ids;

zg_zstd_split_stats zg_zstd_split_stats_get(void) {
    return (zg_zstd_split_stats){atomic_load(&st_frames), atomic_load(&st_chased), atomic_load(&st_deferred),
                                 atomic_load(&st_sparse), atomic_load(&st_lazy),
                                 atomic_load(&st_wrapped)};
}

/* Where a sequence's literal run starts in its block's output, and its first literal in the block's literals. */
typedef struct seq_at {
    uint32_t pos, lit;
} seq_at;

/* The calling thread's buffers, kept across frames (a read decodes many). */
typedef struct split_tls {
    int ready; /* pl initialised */
    zg_zd_plan pl;
    uint8_t *lit;
    size_t lit_cap;
    zg_zd_seq *seq;
    seq_at *at;
    size_t seq_cap;
    zg_zd_bres *res;
    uint32_t *first; /* runs: first block of each, and one past the last */
    uint32_t *stop;  /* runs: the block a run stopped at (UINT32_MAX: finished) */
    atomic_uchar *lit_state; /* a lazy sparse decode: each block's literals (LIT_*) */
    size_t blk_cap;
} split_tls;

static _Thread_local void *tl_split;

static void split_tls_free(void *p) {
    split_tls *t = p;
    zg_zd_plan_free(&t->pl);
    free(t->lit);
    free(t->seq);
    free(t->at);
    free(t->res);
    free(t->first);
    free(t->stop);
    free(t->lit_state);
    free(t);
}

static split_tls *split_tls_get(void) {
    split_tls *t = zg_tls_get(&tl_split, sizeof(split_tls), split_tls_free);
    if (t && !t->ready) {
        zg_zd_plan_init(&t->pl);
        t->ready = 1;
    }
    return t;
}

/* Room for the frame's literals, sequences and blocks in the kept buffers (their contents need not survive). */
static int reserve(split_tls *t, const zg_zd_plan *pl) {
    if (pl->lit_bytes + LIT_SLACK > t->lit_cap) {
        free(t->lit);
        t->lit_cap = 0;
        if (!(t->lit = malloc(pl->lit_bytes + LIT_SLACK))) return -1;
        t->lit_cap = pl->lit_bytes + LIT_SLACK;
    }
    if (pl->n_seq + 1 > t->seq_cap) {
        free(t->seq);
        free(t->at);
        t->seq_cap = 0;
        t->seq = malloc((pl->n_seq + 1) * sizeof *t->seq);
        t->at = malloc((pl->n_seq + 1) * sizeof *t->at);
        if (!t->seq || !t->at) return -1;
        t->seq_cap = pl->n_seq + 1;
    }
    if (pl->n_blocks + 1 > t->blk_cap) {
        free(t->res);
        free(t->first);
        free(t->stop);
        free(t->lit_state);
        t->blk_cap = 0;
        t->res = malloc((pl->n_blocks + 1) * sizeof *t->res);
        t->first = malloc((pl->n_blocks + 1) * sizeof *t->first);
        t->stop = malloc((pl->n_blocks + 1) * sizeof *t->stop);
        t->lit_state = malloc((pl->n_blocks + 1) * sizeof *t->lit_state);
        if (!t->res || !t->first || !t->stop || !t->lit_state) return -1;
        t->blk_cap = pl->n_blocks + 1;
    }
    return 0;
}

typedef struct split_job {
    uint64_t id;                /* this decode's number in the process (the threads' table caches: block_tables) */
    const uint8_t *in;
    uint8_t *out;
    size_t size, hi;
    const zg_zd_plan *pl;
    uint8_t *lit;
    zg_zd_seq *seq;
    seq_at *at;
    zg_zd_bres *res;
    uint32_t n_blocks;
    /* blocks step: blocks [0, done_prefix) are decoded and hold done_bytes; once those reach hi, need says how
     * many blocks the read takes and later blocks are skipped */
    pthread_mutex_t mu;
    uint8_t *done;
    uint32_t done_prefix;
    uint64_t done_bytes;
    atomic_uint need;
    atomic_int bad; /* a block the rules reject: the frame is declined */
    /* runs step */
    const uint32_t *first;
    uint32_t *stop;
    /* a lazy sparse decode (literal frames): each block's literals' state, decoded once a run needs them (NULL: the
     * blocks step decodes every block's literals) */
    atomic_uchar *lit_state;
    const zg_part_input *part; /* a frame read in part: a block's literals (or raw bytes) read before they decode */
} split_job;

enum { LIT_NONE = 0, LIT_BUSY, LIT_READY, LIT_BAD };

/* ---- blocks ---- */

/* A thread's decoding tables of the last blocks it decoded, by their descriptions' indices in the job's plan: blocks
 * of a frame that repeat a table or use the predefined ones share a description, and a label frame's blocks hold a
 * dozen sequences each, for which building three FSE tables cost more than decoding them. */
typedef struct block_tables {
    uint64_t job;         /* the split_job they belong to (0: none) */
    uint32_t fse_idx[3];  /* ll, of, ml descriptions built into fse[] */
    uint32_t huf_idx;     /* the Huffman description built into huf[] */
    int fse_ok[3], huf_ok;
    zd_fse_cell fse[3][512];
    uint16_t huf[1 << ZG_ZD_HUF_LOG_MAX];
} block_tables;

static _Thread_local void *tl_tables;

/* This thread's tables, emptied when they are another job's; NULL without memory for them (the frame is then
 * declined: the one-thread decode takes it). */
static block_tables *job_tables(const split_job *j) {
    block_tables *bt = zg_tls_get(&tl_tables, sizeof(block_tables), free);
    if (bt && bt->job != j->id) {
        bt->job = j->id;
        bt->fse_ok[0] = bt->fse_ok[1] = bt->fse_ok[2] = bt->huf_ok = 0;
    }
    return bt;
}

/* Block b's literals into its place in the literal buffer (nothing for a raw or RLE block, whose bytes are the
 * input's). Returns 0, or -1 where they are damaged or no table memory was had (the frame is then declined). */
static int decode_literals(const split_job *j, uint32_t b) {
    const zg_zd_block *blk = &j->pl->blocks[b];
    if (blk->type != ZG_ZD_BLOCK_COMPRESSED) return 0;
    const uint8_t *src = j->in + blk->src;
    uint8_t *lo = j->lit + blk->lit;
    if (blk->lit_type == ZG_ZD_LIT_RAW) memcpy(lo, src + blk->lit_off, blk->lit_n);
    else if (blk->lit_type == ZG_ZD_LIT_RLE) memset(lo, src[blk->lit_off], blk->lit_n);
    else {
        const int wrapped = blk->lit_n < HUF_LIBZSTD_MIN ? 1 : zg_zstd_huf_libzstd(j->pl, j->in, b, lo);
        if (wrapped < 0) return -1;
        if (!wrapped) {
            atomic_fetch_add_explicit(&st_wrapped, 1, memory_order_relaxed);
            return 0;
        }
        block_tables *bt = job_tables(j);
        if (!bt) return -1;
        const zg_zd_huf_desc *hd = &j->pl->hufs[blk->huf];
        if (!bt->huf_ok || bt->huf_idx != blk->huf) {
            uint16_t start[256];
            zd_huf_starts(hd, start);
            for (uint32_t s = 0; s < hd->nsym; s++) zd_huf_fill(bt->huf, hd, start, s);
            bt->huf_idx = blk->huf;
            bt->huf_ok = 1;
        }
        const uint8_t *at = src + blk->lit_off;
        if (blk->n_streams == 4 ? zg_zstd_huf_four(bt->huf, hd->max_bits, blk, at, lo)
                                : zd_huf_stream(bt->huf, hd->max_bits, at, blk->stream_len[0], lo, blk->lit_n))
            return -1;
    }
    return 0;
}

/* A frame read in part: block b's literals (a raw block's bytes) read; its headers and sequences are (part_heads).
 * Returns 0, or -1 on a read error (the frame is declined: its reading whole then names it). */
static int fetch_literals(const split_job *j, uint32_t b) {
    if (!j->part) return 0;
    const zg_zd_block *blk = &j->pl->blocks[b];
    uint64_t off = blk->src, len = 0;
    if (blk->type == ZG_ZD_BLOCK_RAW) len = blk->lit_n;
    else if (blk->type == ZG_ZD_BLOCK_COMPRESSED && blk->lit_type == ZG_ZD_LIT_RAW) {
        off += blk->lit_off;
        len = blk->lit_n;
    } else if (blk->type == ZG_ZD_BLOCK_COMPRESSED && blk->lit_type == ZG_ZD_LIT_HUF) {
        off += blk->lit_off;
        for (int k = 0; k < blk->n_streams; k++) len += blk->stream_len[k];
    }
    char saved[ZG_ERRMSG_MAX];
    zg_error_save(saved);
    const zgpu_status st = len ? j->part->fetch(j->part->ctx, off, len, j->part->buf + off) : ZGPU_OK;
    zg_error_restore(saved);
    return st == ZGPU_OK ? 0 : -1;
}

/* A lazy (sparse) decode's literals of block b, decoded by the first thread that needs them while others wait:
 * 0 once they are there, -1 where they are damaged. */
static int need_literals(const split_job *j, uint32_t b) {
    atomic_uchar *s = &j->lit_state[b];
    unsigned char v = atomic_load_explicit(s, memory_order_acquire);
    if (v == LIT_READY) return 0;
    if (v == LIT_NONE && atomic_compare_exchange_strong(s, &v, LIT_BUSY)) {
        const int e = fetch_literals(j, b) || decode_literals(j, b);
        atomic_store_explicit(s, e ? LIT_BAD : LIT_READY, memory_order_release);
        return e;
    }
    while ((v = atomic_load_explicit(s, memory_order_acquire)) == LIT_BUSY) sched_yield();
    return v == LIT_READY ? 0 : -1;
}

/* Block b's sequences (and, unless the decode is lazy, its literals): its decoded size and outgoing repeat offsets
 * in res[b], each sequence's place in at[]. */
static int decode_block(split_job *j, uint32_t b) {
    const zg_zd_block *blk = &j->pl->blocks[b];
    zg_zd_bres *r = &j->res[b];
    for (int k = 0; k < 3; k++) r->rep_out[k] = ZD_SYM(k, 0);
    r->size = blk->lit_n;
    r->err = 0;
    if (blk->type != ZG_ZD_BLOCK_COMPRESSED) return 0;
    if (!j->lit_state && decode_literals(j, b)) return -1;
    if (!blk->nseq) return 0;
    block_tables *bt = job_tables(j);
    if (!bt) return -1;
    const uint8_t *src = j->in + blk->src;
    uint16_t next[64];
    const uint32_t idx[3] = {blk->ll, blk->of, blk->ml};
    for (int k = 0; k < 3; k++)
        if (!bt->fse_ok[k] || bt->fse_idx[k] != idx[k]) {
            zd_fse_build(bt->fse[k], &j->pl->fses[idx[k]], next);
            bt->fse_idx[k] = idx[k];
            bt->fse_ok[k] = 1;
        }
    const zg_zd_fse_desc *fl = &j->pl->fses[blk->ll], *fo = &j->pl->fses[blk->of], *fm = &j->pl->fses[blk->ml];
    uint32_t mls = 0;
    zg_zd_seq *sq = j->seq + blk->seq;
    if (zd_sequences(&split_consts, bt->fse[0], fl->log, bt->fse[1], fo->log, bt->fse[2], fm->log, src + blk->seq_off,
                     blk->seq_len, blk->nseq, blk->lit_n, sq, r->rep_out, &mls))
        return -1;
    r->size = blk->lit_n + mls;
    seq_at *at = j->at + blk->seq;
    uint32_t pos = 0, lit = 0;
    for (uint32_t i = 0; i < blk->nseq; i++) {
        at[i] = (seq_at){pos, lit};
        pos += sq[i].ll + sq[i].ml;
        lit += sq[i].ll;
    }
    return 0;
}

static zgpu_status blocks_task(void *arg, size_t i) {
    split_job *j = arg;
    const uint32_t b = (uint32_t)i;
    if (b >= atomic_load(&j->need) || atomic_load(&j->bad)) return ZGPU_OK;
    if (decode_block(j, b)) {
        atomic_store(&j->bad, 1);
        return ZGPU_OK;
    }
    pthread_mutex_lock(&j->mu);
    j->done[b] = 1;
    while (j->done_prefix < j->n_blocks && j->done[j->done_prefix]) j->done_bytes += j->res[j->done_prefix++].size;
    if (j->hi < j->size && j->done_bytes >= j->hi && j->done_prefix < atomic_load(&j->need))
        atomic_store(&j->need, j->done_prefix);
    pthread_mutex_unlock(&j->mu);
    return ZGPU_OK;
}

/* ---- runs ---- */

/* Copies n literal bytes; 16 at a time where the run's end leaves room (the literal buffer has LIT_SLACK). */
static inline void copy_literals(uint8_t *d, const uint8_t *s, size_t n, const uint8_t *run_end) {
    if (d + n + 16 <= run_end) {
        for (size_t i = 0; i < n; i += 16) memcpy(d + i, s + i, 16);
        return;
    }
    memcpy(d, s, n);
}

/* d[0, n) = the bytes `off` before each, exactly (n may exceed off: a periodic copy). */
static inline void copy_periodic(uint8_t *d, size_t off, size_t n) {
    if (off >= n) {
        memmove(d, d - off, n);
        return;
    }
    if (off == 1) {
        memset(d, d[-1], n);
        return;
    }
    /* the first period, then copies of what is already out, doubling */
    size_t done = 0, dist = off;
    while (done < n) {
        const size_t k = n - done < dist ? n - done : dist;
        memcpy(d + done, d + done - dist, k);
        done += k;
        if (dist <= n) dist *= 2;
    }
}

/* out[pos, pos + ml) = the bytes `off` before each, all of them this run's (pos - off >= the run's start); 16 at
 * a time where the run's end leaves room. */
static inline void copy_match(uint8_t *d, size_t off, size_t ml, const uint8_t *run_end) {
    if (d + ml + 16 <= run_end) {
        size_t i = 0, dist = off;
        if (off < 16) { /* a short period: its first 16 bytes one by one, then 16 at a time from a whole number of
                         * periods back (at least 16, at most 15 + off: never before the period's start) */
            for (; i < ml && i < 16; i++) d[i] = *(d + i - off); /* ((d + i) - off: never a wrapped index) */
            dist = off * ((16 + off - 1) / off);
        }
        for (; i < ml; i += 16) memcpy(d + i, d + i - dist, 16);
        return;
    }
    copy_periodic(d, off, ml);
}

/* The block holding frame byte p (< the needed blocks' end). */
static uint32_t block_of(const split_job *j, uint64_t p, uint32_t n) {
    /* (blocks but the last are mostly zstd's largest, 128 KiB: the guess is nearly always right) */
    const uint64_t g = p >> 17;
    if (g < n && j->res[g].out <= p && (g + 1 == n || p < j->res[g + 1].out)) return (uint32_t)g;
    uint32_t lo = 0, hi = n; /* res[lo].out <= p < res[hi].out */
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (j->res[mid].out <= p) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* A run's lookups into earlier runs, counted against a budget. Two shortcuts keep chains from being walked twice:
 * the ranges being resolved (one per nesting level) are windows, so a lookup that lands in the part of one already
 * written copies from there; and every byte position a lookup passed through is remembered with where its bytes
 * finally came from (path compression), so a later lookup that reaches it stops there. A label chunk's matches
 * chain back through every earlier row to the frame's first literals: each lookup would walk thousands of them. */
#define RESOLVE_DEPTH 32
#define MEMO_BITS 13
#define PATH_MAX_HOPS 4096 /* the path stack, all levels */
typedef struct chase_win {
    uint64_t q0, done; /* source bytes [q0, done) are written at d0 */
    uint8_t *d0;
} chase_win;
typedef struct memo_entry {
    uint64_t key;       /* (source position + 1) << 8 | generation, 0: empty */
    const uint8_t *src; /* where its bytes are (a literal buffer, the input, or this run's output) */
    uint32_t len;       /* how many of them */
} memo_entry;
typedef struct chase {
    uint64_t steps, budget;
    int depth;
    uint8_t gen;        /* this run's memo entries (the table is the thread's, kept across runs) */
    memo_entry *memo;   /* 1 << MEMO_BITS entries, or NULL */
    chase_win win[RESOLVE_DEPTH];
    size_t path_top;               /* path[0, path_top): the hops of the lookups under way, outermost level first */
    /* the sequence the last lookup landed in: frame bytes [sq_lo, sq_hi) (its literals and match), block sq_b's
     * sequence sq_i (a run's rows land in the same long match one after another: no search for it) */
    uint64_t sq_lo, sq_hi;
    uint32_t sq_b, sq_i;
    /* a sparse decode: the runs this thread has written (ascending; runs[0, n_done) hold their final bytes, at their
     * dst or in out) */
    const zg_byte_run *runs;
    size_t n_done;
    const uint8_t *out;
    uint64_t path[PATH_MAX_HOPS];
} chase;

static _Thread_local void *tl_memo;
static _Thread_local uint8_t tl_gen;

static void chase_init(chase *ch, uint64_t budget) {
    ch->sq_lo = ch->sq_hi = 0;
    ch->runs = NULL;
    ch->n_done = 0;
    ch->steps = 0;
    ch->budget = budget;
    ch->depth = 0;
    ch->path_top = 0;
    ch->memo = zg_tls_get(&tl_memo, sizeof(memo_entry) << MEMO_BITS, free);
    if (++tl_gen == 0 && ch->memo) { /* generations wrapped: old entries could look current */
        memset(ch->memo, 0, sizeof(memo_entry) << MEMO_BITS);
        tl_gen = 1;
    }
    ch->gen = tl_gen;
}

static inline memo_entry *memo_slot(const chase *ch, uint64_t p) {
    return &ch->memo[(p * 0x9E3779B97F4A7C15ull) >> (64 - MEMO_BITS)];
}

/* The hops of a lookup (path[base, end)) all came to len bytes at src. */
static void memo_put(chase *ch, size_t base, size_t end, const uint8_t *src, size_t len) {
    if (!ch->memo) return;
    for (size_t i = base; i < end; i++) {
        memo_entry *m = memo_slot(ch, ch->path[i]);
        *m = (memo_entry){((ch->path[i] + 1) << 8) | ch->gen, src, (uint32_t)len};
    }
}

/* A window holding source byte p, innermost first; NULL if none. */
static const chase_win *chase_find(const chase *ch, uint64_t p) {
    for (int w = ch->depth - 1; w >= 0; w--)
        if (p >= ch->win[w].q0 && p < ch->win[w].done) return &ch->win[w];
    return NULL;
}

/* A sparse decode's last written run, if it holds source byte p (a row's match often copies the row before it;
 * earlier runs are found through the memo: searching them all cost more than it saved); *avail: its bytes from p
 * on. NULL if not. */
static const uint8_t *chase_done_run(const chase *ch, uint64_t p, uint64_t *avail) {
    if (!ch->n_done) return NULL;
    const zg_byte_run *r = &ch->runs[ch->n_done - 1];
    if (p < r->off || p - r->off >= r->len) return NULL;
    *avail = r->off + r->len - p;
    return r->dst ? r->dst + (p - r->off) : ch->out + p;
}

/* out[q, q + len) (all before the run's start: other runs' bytes) written to d, from the literals and raw or RLE
 * blocks they were copied from: byte k of a match is byte k mod offset of its source's first period, followed back
 * until it is a literal, in a window or remembered. A part of a match longer than its source's period (a periodic
 * match) resolves that period once, one level deeper, and repeats it. Returns 1 past the budget or RESOLVE_DEPTH,
 * -1 on a bad offset. */
static int resolve(const split_job *j, uint32_t n_blocks, uint64_t q, size_t len, uint8_t *d, chase *ch) {
    if (ch->depth == RESOLVE_DEPTH) return 1;
    const int level = ch->depth++;
    ch->win[level].q0 = ch->win[level].done = q;
    ch->win[level].d0 = d;
    int e = 0;
    while (len && !e) {
        uint64_t p = q;
        size_t take = len;
        const size_t base = ch->path_top; /* this piece's hops: path[base, path_top) */
        const uint8_t *from = NULL; /* where the piece's bytes are, once found (NULL: written otherwise) */
        /* What is at p holds `avail` of the piece's bytes contiguously: fewer than the piece after a hop (all of
         * its bytes map to p on) are resolved from p one level deeper, whose window then serves what follows;
         * else the piece shrinks to them. */
#define FIT(avail)                                                                                                   \
    if ((avail) < take) {                                                                                            \
        if (p != q && ch->depth < RESOLVE_DEPTH) {                                                                   \
            e = resolve(j, n_blocks, p, take, d, ch);                                                                \
            from = d;                                                                                                \
            break;                                                                                                   \
        }                                                                                                            \
        take = (size_t)(avail);                                                                                      \
    }
/* (a lazy decode's literals of block b are decoded by the first lookup that reads them) */
#define NEED_LITERALS(b)                                                                                             \
    if (j->lit_state && need_literals(j, (b))) {                                                                     \
        e = -1;                                                                                                      \
        break;                                                                                                       \
    }
        for (;;) { /* one piece: follow byte p back */
            if (++ch->steps > ch->budget) {
                e = 1;
                break;
            }
            if (ch->memo && (p != q || level || !ch->runs)) { /* (a sparse decode's own run is new: not remembered) */
                const memo_entry *m = memo_slot(ch, p);
                if (m->key == (((p + 1) << 8) | ch->gen)) {
                    FIT(m->len);
                    from = m->src;
                    break;
                }
            }
            const chase_win *w = chase_find(ch, p);
            if (w) {
                FIT(w->done - p);
                from = w->d0 + (p - w->q0);
                break;
            }
            uint64_t avail;
            const uint8_t *done = chase_done_run(ch, p, &avail);
            if (done) {
                FIT(avail);
                from = done;
                break;
            }
            const int cached = p >= ch->sq_lo && p < ch->sq_hi;
            const uint32_t b = cached ? ch->sq_b : block_of(j, p, n_blocks);
            const zg_zd_block *blk = &j->pl->blocks[b];
            const zg_zd_bres *r = &j->res[b];
            const uint64_t rel = p - r->out;
            FIT(r->size - rel);
            if (blk->type == ZG_ZD_BLOCK_RAW) {
                if (j->part) NEED_LITERALS(b);
                from = j->in + blk->src + rel;
                break;
            }
            if (blk->type == ZG_ZD_BLOCK_RLE) {
                memset(d, j->in[blk->src], take);
                break;
            }
            const uint8_t *lits = j->lit + blk->lit;
            const seq_at *at = j->at + blk->seq;
            const zg_zd_seq *sq = j->seq + blk->seq;
            /* the last sequence starting at or before rel; the block's trailing literals after the last one */
            uint32_t lo = 0, hi = blk->nseq;
            if (cached) {
                lo = ch->sq_i;
            } else {
                const uint64_t tail = hi ? (uint64_t)at[hi - 1].pos + sq[hi - 1].ll + sq[hi - 1].ml : 0;
                if (rel >= tail) {
                    NEED_LITERALS(b);
                    from = lits + (hi ? at[hi - 1].lit + sq[hi - 1].ll : 0) + (rel - tail);
                    break;
                }
                while (hi - lo > 1) {
                    const uint32_t mid = (lo + hi) / 2;
                    if (at[mid].pos <= rel) lo = mid;
                    else hi = mid;
                }
                ch->sq_lo = r->out + at[lo].pos;
                ch->sq_hi = ch->sq_lo + sq[lo].ll + sq[lo].ml;
                ch->sq_b = b;
                ch->sq_i = lo;
            }
            const zg_zd_seq *s = &sq[lo];
            const uint64_t in_seq = rel - at[lo].pos;
            if (in_seq < s->ll) {
                FIT(s->ll - in_seq);
                NEED_LITERALS(b);
                from = lits + at[lo].lit + in_seq;
                break;
            }
            const uint64_t k = in_seq - s->ll, mstart = r->out + at[lo].pos + s->ll;
            const uint32_t off = zd_rep_resolve(s->of, r->rep_in);
            if (off == 0 || off > mstart) {
                e = -1;
                break;
            }
            FIT(s->ml - k);
            const size_t phase = (size_t)(k % off);
            if (take <= off - phase) { /* within one period of the source: follow it */
                if (ch->path_top < PATH_MAX_HOPS) ch->path[ch->path_top++] = p;
                p = mstart - off + phase;
                continue;
            }
            /* more than the source's period holds: its bytes from k's phase on, then the ones before it, make one
             * whole period in d (resolved a level deeper); the rest repeats it */
            const size_t first = off - phase, wrap = take - first < phase ? take - first : phase;
            if (off <= s->ll) { /* the period is the sequence's own last literals (a run of one value: RLE) */
                NEED_LITERALS(b);
                const uint8_t *per = lits + at[lo].lit + s->ll - off;
                memcpy(d, per + phase, first);
                memcpy(d + first, per, wrap);
            } else {
                e = resolve(j, n_blocks, mstart - off + phase, first, d, ch);
                if (!e && wrap) e = resolve(j, n_blocks, mstart - off, wrap, d + first, ch);
            }
            if (!e && take > off) copy_periodic(d + off, off, take - off);
            from = d; /* (for the memo: the piece's bytes are now these) */
            break;
        }
#undef FIT
#undef NEED_LITERALS
        if (!e && from) {
            if (from != d) memmove(d, from, take);
            if (ch->path_top > base) {
                if (ch->path_top < PATH_MAX_HOPS) ch->path[ch->path_top++] = p;
                memo_put(ch, base, ch->path_top, from, take);
            }
        }
        ch->path_top = base;
        if (e) break;
        d += take;
        q += take;
        len -= take;
        ch->win[level].done = q;
    }
    ch->depth--;
    return e;
}

/* Writes block b; run_start: the first byte this run owns (earlier bytes are resolved, never read). Returns 0,
 * 1 when the lookups passed the budget (nothing after the failing match is written), -1 on a bad offset. */
static int write_block(const split_job *j, uint32_t n_blocks, uint32_t b, uint64_t run_start, const uint8_t *run_end,
                       chase *ch) {
    const zg_zd_block *blk = &j->pl->blocks[b];
    const zg_zd_bres *r = &j->res[b];
    uint8_t *out = j->out;
    uint64_t pos = r->out;
    if (blk->type == ZG_ZD_BLOCK_RAW) {
        memcpy(out + pos, j->in + blk->src, blk->lit_n);
        return 0;
    }
    if (blk->type == ZG_ZD_BLOCK_RLE) {
        memset(out + pos, j->in[blk->src], blk->lit_n);
        return 0;
    }
    const uint8_t *l = j->lit + blk->lit;
    const zg_zd_seq *sq = j->seq + blk->seq;
    for (uint32_t i = 0; i < blk->nseq; i++) {
        const zg_zd_seq *s = &sq[i];
        copy_literals(out + pos, l, s->ll, run_end);
        l += s->ll;
        pos += s->ll;
        const uint32_t off = zd_rep_resolve(s->of, r->rep_in);
        if (off == 0 || off > pos) return -1;
        const uint64_t src = pos - off;
        if (src >= run_start) {
            copy_match(out + pos, off, s->ml, run_end);
        } else { /* the first period (or all of a shorter match) reaches into earlier runs */
            const size_t first = s->ml < off ? s->ml : off;
            const size_t before = run_start - src < first ? (size_t)(run_start - src) : first;
            int e = resolve(j, n_blocks, src, before, out + pos, ch);
            if (e) return e;
            if (first > before) memcpy(out + pos + before, out + run_start, first - before);
            if (s->ml > first) copy_match(out + pos + first, off, s->ml - first, run_end);
        }
        pos += s->ml;
    }
    memcpy(out + pos, l, blk->lit_n - (size_t)(l - (j->lit + blk->lit)));
    return 0;
}

/* Lookups a run may spend resolving, against what it has written so far (a lookup costs several times a sequence):
 * a run whose matches reach into earlier runs only near its start (rows or planes back) resolves those; one whose
 * matches reach far back everywhere (a random walk: half of a run's matches reach into the run before) stops after
 * a few blocks and is finished in order afterwards. */
static uint64_t run_budget(uint64_t bytes_done, uint64_t seqs_done) { return 4096 + seqs_done / 8 + bytes_done / 1024; }

static zgpu_status runs_task(void *arg, size_t i) {
    split_job *j = arg;
    const uint32_t b0 = j->first[i], b1 = j->first[i + 1];
    const uint64_t start = j->res[b0].out, end = j->res[b1 - 1].out + j->res[b1 - 1].size;
    chase ch;
    chase_init(&ch, 0);
    uint64_t seqs = 0;
    for (uint32_t b = b0; b < b1; b++) {
        ch.budget = run_budget(j->res[b].out - start, seqs);
        int e = write_block(j, b1, b, start, j->out + end, &ch);
        if (e < 0) atomic_store(&j->bad, 1);
        if (e) {
            j->stop[i] = b;
            return ZGPU_OK;
        }
        seqs += j->pl->blocks[b].nseq;
    }
    if (ch.steps) atomic_fetch_add(&st_chased, 1);
    return ZGPU_OK;
}

/* A literal-dominated frame's gain with `ways` threads, its Huffman literals decoded by libzstd (zstd_blocks.c):
 * the OCT and field volumes' chunks (ratio 1.05-1.3) 3.9-5.4x faster with 16 threads (H100 machine, 16 cores),
 * 1.4x with 2 (the 2-core machine). (Fitted before to huf_four's literals: 4.3-4.5x at 16, 1.0 at 2.) */
static double literal_gain(int ways) { return fmin(5.0, 0.3 * ways + 0.8); }

double zg_zstd_split_speedup(double ratio, int ways) {
    /* (a label chunk, 1,400:1, which libzstd writes at memory speed: 0.7x with 16 threads) */
    const double lo = 2, hi = 32, w = ratio <= lo ? 1 : ratio >= hi ? 0 : log(hi / ratio) / log(hi / lo);
    return ways > 1 ? literal_gain(ways) * w : 0;
}

/* How a sparse decode may take a frame (frame_blocks): one of long matches (labels: literals decoded with the blocks,
 * runs resolved through the matches), one of literals (lazy: only the blocks the runs and their matches read decode
 * their literals), either, or none (a split). */
enum { SPARSE_NONE = 0, SPARSE_LONG = 1, SPARSE_LAZY = 2 };

/* The frame planned, its blocks decoded (in parallel on par's threads where given) as far as byte hi and linked:
 * *need blocks, ready for the runs (or a sparse decode, `sparse` the ways it may take). *ok = 0 (nothing else done)
 * where the frame is one the block rules decline (another layout, damage: the one-thread decode then judges it), one
 * the sparse ways allowed do not fit, or, for a split (!sparse), where its blocks promise less than min_gain. */
static zgpu_status frame_blocks(split_tls *t, const uint8_t *in, size_t n, uint8_t *out, size_t size, size_t hi,
                                const zg_decode_par *par, int sparse, double min_gain, const zg_part_input *part,
                                split_job *j, uint32_t *need, int *ok) {
    *ok = 0;
    zg_zd_plan *pl = &t->pl;
    zg_zd_plan_reset(pl);
    pl->streams_unread = part != NULL;
    char saved[ZG_ERRMSG_MAX];
    zg_error_save(saved);
    zgpu_status ps = zg_zd_plan_frame(pl, in, n, size, 0);
    zg_error_restore(saved); /* (a frame the planner refuses is the one-thread decode's to judge) */
    if (ps != ZGPU_OK) return ps == ZGPU_ERR_NO_MEMORY ? zg_error(ps, "zstd: out of memory planning a split decode") : ZGPU_OK;
    const zg_zd_frame *fr = &pl->frames[0];
    if (fr->has_checksum && (sparse || hi != size))
        return ZGPU_OK; /* (the checksum covers the whole output: decoded on one thread) */
    const uint32_t nb = (uint32_t)pl->n_blocks;
    if (nb < 1 || (!sparse && nb < 2)) return ZGPU_OK;
    /* a sparse decode: of literals (their blocks decoded where read), or of long matches (a lookup costs tens of ns,
     * a byte of an in-order decode a fraction of one) */
    const int literal = pl->lit_bytes * ZG_ZSTD_SPARSE_LIT_SHARE > size, lazy = sparse && literal;
    if (part && !lazy) return ZGPU_OK; /* (a frame read in part decodes only literals it has read) */
    if (sparse && (literal ? !(sparse & SPARSE_LAZY)
                           : !(sparse & SPARSE_LONG) || pl->n_seq * ZG_ZSTD_SPARSE_SEQ_BYTES > size))
        return ZGPU_OK;
    if (!sparse) {
        const double lit_share = (double)pl->lit_bytes / (double)size,
                     seq_per_kib = (double)pl->n_seq * 1024.0 / (double)size;
        const double gain = lit_share >= 0.5 && seq_per_kib <= 32 ? literal_gain(par->ways) : 0;
        if (gain < min_gain) return ZGPU_OK;
    }
    /* a lazy decode reads every block's sequences, so that their sizes must add up to the frame's: a damaged literals
     * header in a block whose literals it never decodes would move every later byte */
    if (lazy) hi = size;
    uint8_t *done = reserve(t, pl) ? NULL : calloc(nb, 1);
    if (!done) return zg_error(ZGPU_ERR_NO_MEMORY, "zstd: out of memory for a split decode of %zu bytes", size);
    *j = (split_job){atomic_fetch_add(&job_ids, 1) + 1, in, out, size, hi, pl, t->lit, t->seq, t->at, t->res, nb,
                     PTHREAD_MUTEX_INITIALIZER, done, 0, 0, nb, 0, t->first, t->stop, lazy ? t->lit_state : NULL,
                     part};
    if (lazy)
        for (uint32_t b = 0; b < nb; b++) atomic_init(&t->lit_state[b], LIT_NONE);
    zgpu_status st = ZGPU_OK;
    if (par && par->ways > 1 && par->pool) st = zg_pool_run(par->pool, nb, blocks_task, j);
    else
        for (uint32_t b = 0; b < nb && b < atomic_load(&j->need); b++) blocks_task(j, b);
    free(done);
    j->done = NULL;
    if (st != ZGPU_OK) return st;
    *need = atomic_load(&j->need);
    if (atomic_load(&j->bad)) return ZGPU_OK;
    /* link: places and incoming repeat offsets of the needed blocks */
    uint32_t err = 0;
    const uint64_t total = zd_frame_link(j->res, *need, &err);
    if (err || total > size || (hi == size && total != size) || total < hi) return ZGPU_OK;
    *ok = 1;
    return ZGPU_OK;
}

zgpu_status zg_zstd_decode_split(const uint8_t *in, size_t n, uint8_t *out, size_t size, size_t hi,
                                 const zg_decode_par *par, double min_gain, int *declined) {
    *declined = 1;
    if (!par || par->ways < 2 || !par->pool || size < ZG_ZSTD_SPLIT_MIN || hi == 0 || hi > size) return ZGPU_OK;
    split_tls *t = split_tls_get();
    if (!t) return zg_error(ZGPU_ERR_NO_MEMORY, "zstd: out of memory for a split decode");
    split_job j;
    uint32_t need = 0;
    int ok = 0;
    ZG_FORWARD(frame_blocks(t, in, n, out, size, hi, par, 0, min_gain, NULL, &j, &need, &ok));
    if (!ok) return ZGPU_OK;
    const int whole = hi == size;
    const zg_zd_frame *fr = &t->pl.frames[0];
    const uint64_t total = j.res[need - 1].out + j.res[need - 1].size;
    /* runs of about equal decoded bytes, on block boundaries */
    uint32_t runs = (uint32_t)par->ways < need ? (uint32_t)par->ways : need, m = 0;
    t->first[m++] = 0;
    for (uint32_t r = 1; r < runs; r++) {
        const uint64_t at = total * r / runs;
        uint32_t b = block_of(&j, at, need);
        if (b > t->first[m - 1]) t->first[m++] = b;
    }
    t->first[m] = need;
    for (uint32_t r = 0; r < m; r++) t->stop[r] = UINT32_MAX;
    zgpu_status st = zg_pool_run(par->pool, m, runs_task, &j);
    if (st != ZGPU_OK) return st;
    if (atomic_load(&j.bad)) return ZGPU_OK;
    /* runs that stopped: finished in order, every byte before each now final (run start 0: nothing to resolve) */
    chase in_order;
    chase_init(&in_order, 0);
    for (uint32_t r = 0; r < m; r++) {
        if (t->stop[r] == UINT32_MAX) continue;
        atomic_fetch_add(&st_deferred, 1);
        const uint64_t end = j.res[t->first[r + 1] - 1].out + j.res[t->first[r + 1] - 1].size;
        for (uint32_t b = t->stop[r]; b < t->first[r + 1]; b++)
            if (write_block(&j, need, b, 0, out + end, &in_order)) return ZGPU_OK; /* (a bad offset) */
    }
    if (whole && fr->has_checksum && (uint32_t)zd_xxh64(out, size) != fr->checksum) return ZGPU_OK;
    atomic_fetch_add(&st_frames, 1);
    *declined = 0;
    return ZGPU_OK;
}

/* ---- sparse: only the byte runs a read needs ---- */

static double sparse_cost(uint64_t bytes, int ways) {
    return (double)ZG_ZSTD_SPARSE_FIXED + (double)bytes * ZG_ZSTD_SPARSE_BYTE_COST / ways;
}

/* A lazy sparse decode's cost in bytes of an in-order decode: the literals of the `touched` bytes' blocks (libzstd's
 * Huffman decode, as in order), LAZY_OVERHEAD for every block's sequences and the lookups, shared among as many
 * threads as there are blocks and runs (a thread takes whole runs: a box covering its chunk is one run, which one
 * thread would decode while the split shares the frame among them all). */
#define LAZY_OVERHEAD 1.25
static double lazy_cost(uint64_t touched, uint64_t n_touched, size_t n_runs, int ways) {
    uint64_t w = (uint64_t)ways < n_touched ? (uint64_t)ways : n_touched;
    if (w > n_runs) w = n_runs;
    return (double)touched * LAZY_OVERHEAD / (double)(w ? w : 1);
}

/* The in-order decode of a prefix of hi bytes: split among the threads from ZG_ZSTD_SPLIT_MIN on (literal frames). */
static double prefix_cost(uint64_t hi, int ways) {
    return ways > 1 && hi >= ZG_ZSTD_SPLIT_MIN ? (double)hi / literal_gain(ways) : (double)hi;
}

/* zstd's blocks are of 128 KiB but the last (ZG_ZD_BLOCK_MAX): the bytes of the blocks that hold [lo, hi), from the
 * block after `after` on (UINT64_MAX: none before), *last the last of them. */
static uint64_t blocks_bytes(size_t size, uint64_t lo, uint64_t hi, uint64_t after, uint64_t *n, uint64_t *last) {
    uint64_t g = lo / ZG_ZD_BLOCK_MAX, bytes = 0;
    const uint64_t end = (hi - 1) / ZG_ZD_BLOCK_MAX;
    if (after != UINT64_MAX && g <= after) g = after + 1;
    *last = after;
    for (; g <= end; g++) {
        const uint64_t b0 = g * ZG_ZD_BLOCK_MAX, b1 = b0 + ZG_ZD_BLOCK_MAX < size ? b0 + ZG_ZD_BLOCK_MAX : size;
        bytes += b1 - b0;
        (*n)++;
        *last = g;
    }
    return bytes;
}

double zg_zstd_sparse_cost(size_t size, double ratio, uint64_t bytes, uint64_t lo, uint64_t hi, int ways) {
    if (size < ZG_ZSTD_SPARSE_MIN || ways < 1 || hi <= lo || hi > size) return (double)hi;
    double c = (double)hi;
    if (ratio >= ZG_ZSTD_SPARSE_RATIO) c = sparse_cost(bytes, ways);
    else if (ratio < ZG_ZSTD_SPARSE_LIT_RATIO) { /* (every block between the first byte and the last: rows of planes) */
        uint64_t n = 0, last;
        c = (double)blocks_bytes(size, lo, hi, UINT64_MAX, &n, &last) * LAZY_OVERHEAD;
    }
    return c < (double)hi ? c : (double)hi;
}

typedef struct sparse_job {
    const split_job *j;
    uint32_t need;
    const zg_byte_run *runs;
    const size_t *group; /* group g: runs [group[g], group[g + 1]) */
    atomic_int over;     /* a group passed its budget or found a bad offset: declined */
} sparse_job;

/* Lookups a group of runs may spend, against the bytes of its runs so far: past it, chains run too deep for a sparse
 * decode to pay and the frame decodes in order. */
static uint64_t sparse_budget(uint64_t bytes) { return 16384 + bytes / 8; }

static zgpu_status sparse_task(void *arg, size_t g) {
    sparse_job *s = arg;
    chase ch;
    chase_init(&ch, 0);
    ch.runs = s->runs + s->group[g];
    ch.out = s->j->out;
    uint64_t bytes = 0;
    for (size_t r = s->group[g]; r < s->group[g + 1] && !atomic_load(&s->over); r++, ch.n_done++) {
        const zg_byte_run *u = &s->runs[r];
        bytes += u->len;
        ch.budget = sparse_budget(bytes);
        uint8_t *d = u->dst ? u->dst : s->j->out + u->off;
        if (resolve(s->j, s->need, u->off, (size_t)u->len, d, &ch)) atomic_store(&s->over, 1);
    }
    if (ch.steps) atomic_fetch_add(&st_chased, 1);
    return ZGPU_OK;
}

/* A lazy decode's blocks that hold the runs' bytes: their literals decoded (and read) by the pool's threads before
 * the runs are written, as a split decodes every block's (the runs' groups are as many as the read lends threads;
 * the pool may have more). Blocks only matches reach stay lazy. Returns 1 where a block is damaged or unread. */
typedef struct predecode_job {
    const split_job *j;
    const uint32_t *blocks;
    atomic_int bad;
} predecode_job;

static zgpu_status predecode_task(void *arg, size_t i) {
    predecode_job *p = arg;
    if (!atomic_load(&p->bad) && need_literals(p->j, p->blocks[i])) atomic_store(&p->bad, 1);
    return ZGPU_OK;
}

static int predecode(const split_job *j, uint32_t need, const zg_byte_run *runs, size_t n_runs,
                     const zg_decode_par *par, uint32_t *blocks) {
    if (!par || !par->pool || par->ways < 2) return 0;
    uint32_t n = 0;
    for (size_t r = 0; r < n_runs; r++) {
        if (!runs[r].len) continue;
        uint32_t b0 = block_of(j, runs[r].off, need);
        const uint32_t b1 = block_of(j, runs[r].off + runs[r].len - 1, need);
        if (n && b0 <= blocks[n - 1]) b0 = blocks[n - 1] + 1;
        for (uint32_t b = b0; b <= b1; b++) blocks[n++] = b;
    }
    if (n < 2) return 0;
    predecode_job p = {j, blocks, 0};
    if (zg_pool_run(par->pool, n, predecode_task, &p) != ZGPU_OK) return 1;
    return atomic_load(&p.bad);
}

zgpu_status zg_zstd_decode_sparse(const uint8_t *in, size_t n, uint8_t *out, size_t size, const zg_byte_run *runs,
                                  size_t n_runs, const zg_decode_par *par, const zg_part_input *part, int *declined) {
    *declined = 1;
    if (!n_runs || size < ZG_ZSTD_SPARSE_MIN) return ZGPU_OK;
    /* nothing to weigh (a label crop's eight inner chunks had their 1,500-2,000 runs scanned each, 2.7% of the read)
     * where neither way can pay: long matches cost ZG_ZSTD_SPARSE_FIXED bytes of an in-order decode at least, and a
     * frame of literals (an eighth of it or more, a bit each at least in Huffman code) is 64:1 at most (one of RLE
     * literals decodes in order about as fast) */
    if (size <= ZG_ZSTD_SPARSE_FIXED && (double)size > 8.0 * ZG_ZSTD_SPARSE_LIT_SHARE * (double)n) return ZGPU_OK;
    uint64_t bytes = 0, hi = 0;
    for (size_t r = 0; r < n_runs; r++) {
        if (runs[r].off > size || runs[r].len > size - runs[r].off) return ZGPU_OK;
        bytes += runs[r].len;
        if (runs[r].off + runs[r].len > hi) hi = runs[r].off + runs[r].len;
    }
    const int ways = par && par->pool && par->ways > 1 ? par->ways : 1;
    /* the ways that would cost less than the prefix in order: through long matches, or the runs' blocks' literals */
    uint64_t touched = 0, n_touched = 0, last = UINT64_MAX;
    for (size_t r = 0; r < n_runs; r++)
        if (runs[r].len) touched += blocks_bytes(size, runs[r].off, runs[r].off + runs[r].len, last, &n_touched, &last);
    const int modes = (hi && sparse_cost(bytes, ways) < (double)hi ? SPARSE_LONG : 0) |
                      (hi && lazy_cost(touched, n_touched, n_runs, ways) < prefix_cost(hi, ways) ? SPARSE_LAZY : 0);
    if (!modes) return ZGPU_OK;
    split_tls *t = split_tls_get();
    if (!t) return zg_error(ZGPU_ERR_NO_MEMORY, "zstd: out of memory for a sparse decode");
    split_job j;
    uint32_t need = 0;
    int ok = 0;
    if (part && (!(modes & SPARSE_LAZY) || zg_zstd_part_heads(part, n))) return ZGPU_OK;
    ZG_FORWARD(frame_blocks(t, in, n, out, size, (size_t)hi, par, part ? SPARSE_LAZY : modes, 0, part, &j, &need, &ok));
    if (!ok) return ZGPU_OK;
    if (j.lit_state && predecode(&j, need, runs, n_runs, par, t->first)) return ZGPU_OK;
    /* groups of about equal bytes, one a thread */
    size_t group[65], m = 0;
    group[m++] = 0;
    uint64_t acc = 0;
    for (size_t r = 0; r < n_runs && m < (size_t)ways && m < 64; r++) {
        acc += runs[r].len;
        if (acc * (uint64_t)ways >= bytes * m && r + 1 < n_runs && r + 1 > group[m - 1]) group[m++] = r + 1;
    }
    group[m] = n_runs;
    sparse_job s = {&j, need, runs, group, 0};
    if (m > 1) ZG_FORWARD(zg_pool_run(par->pool, m, sparse_task, &s));
    else sparse_task(&s, 0);
    if (atomic_load(&s.over)) return ZGPU_OK;
    atomic_fetch_add(&st_sparse, 1);
    if (j.lit_state) atomic_fetch_add(&st_lazy, 1);
    *declined = 0;
    return ZGPU_OK;
}
