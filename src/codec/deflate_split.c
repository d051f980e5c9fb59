/* One DEFLATE stream decoded by several host threads (see deflate_split.h): the GPU decoder's parts rules
 * (inflate_parts.h) with host steps where the GPU's would be slow on one core: a finder that scans 32 positions a
 * step and stops at its first hit, tables built in one pass, a token loop that reads 56 bits a refill and copies
 * 16 bytes a step, and a later part's tokens kept and replayed at its place once the bytes before it are final. */
#include "codec/deflate_split.h"

#include <libdeflate.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "common/status.h"
#include "common/tls.h"
#include "gpucodec/common/checksum_combine.h"
#include "gpucodec/deflate/inflate_rules.h"
#include "host/pool.h"

static atomic_ullong st_streams, st_parts, st_fallbacks;

zg_deflate_split_stats zg_deflate_split_stats_get(void) {
    return (zg_deflate_split_stats){atomic_load(&st_streams), atomic_load(&st_parts), atomic_load(&st_fallbacks)};
}

/* A split's time in one-thread decodes (libdeflate and its checksum) of the same stream: its work spread over the
 * parts, WORK / parts, plus PART_COST (the finder, the tails in order, the pool's hand-offs). Fitted on the 2-core
 * machine with the phases run one after another and each part's decode and replay timed (libdeflate 1.14; one
 * 64x256x256 chunk of each benchmark volume at level 5, the label one at level 6 too), taking the slowest part of
 * each phase (part 0 writes bytes straight away and idles first): label chunks (33:1, 129:1) 0.62 of a one-thread
 * decode at 4 parts, 0.36 at 8 (SPLIT_WORK_DENSE, from 16:1 on); OCT (1.1:1) 0.5 at 8 (SPLIT_WORK_LOOSE, 2:1 and
 * under: mostly literals, whose bookkeeping weighs, and block headers far apart for the finder). */
#define SPLIT_WORK_DENSE 2.1
#define SPLIT_WORK_LOOSE 3.2
#define PART_COST 0.10

double zg_deflate_split_speedup(size_t stored, double ratio, int ways) {
    const size_t most = stored / ZG_DEFLATE_PART_MIN_BYTES;
    size_t parts = (size_t)(ways > 0 ? ways : 1);
    if (parts > most) parts = most;
    if (parts > ZI_MAX_PARTS) parts = ZI_MAX_PARTS;
    if (parts < 2) return 1;
    const double x = ratio <= 2 ? 0 : ratio >= 16 ? 1 : log2(ratio / 2) / 3; /* 2:1 .. 16:1, log-linear */
    const double work = SPLIT_WORK_LOOSE + (SPLIT_WORK_DENSE - SPLIT_WORK_LOOSE) * x;
    const double t = work / (double)parts + PART_COST;
    return t < 1 ? 1 / t : 1;
}

double zg_deflate_chunk_split_speedup(size_t decoded, double ratio, int ways) {
    return ratio > 0 ? zg_deflate_split_speedup((size_t)((double)decoded / ratio), ratio, ways) : 1;
}

/* ------------------------------------------------------------------------------------------------ find */
/* The first bit in [from, to) where a dynamic Huffman block header passes every check (zi_header_at), or
 * ZI_NO_BIT: 32 positions a step through the bit-sliced quick checks, the full check on what passes them. */
static uint32_t find_first(const uint8_t *in, uint32_t nbytes, uint32_t from, uint32_t to, zi_find_scratch *w) {
    for (uint32_t c0 = from & ~31u; c0 < to; c0 += 32) {
        uint32_t m = zi_header_quick32(in, nbytes, c0);
        if (c0 < from) m &= ~0u << (from - c0);
        if (to - c0 < 32) m &= (1u << (to - c0)) - 1;
        for (; m; m &= m - 1) {
            const uint32_t c = c0 + (uint32_t)__builtin_ctz(m);
            if (zi_header_rest(in, nbytes, c, w)) return c;
        }
    }
    return ZI_NO_BIT;
}

/* ------------------------------------------------------------------------------------------------ decode */
/* A block's two tables from sh->lens: the kernel's steps with one thread for the lanes, but each symbol's rank
 * among the symbols of its length counted in one pass (the kernel's lane a symbol counts them again for each). */
static void build_tables(zi_shared *sh) {
    for (uint32_t lane = 0; lane < ZI_NL; lane++) zi_tables_clear(sh, lane);
    uint32_t rank[2][16] = {{0}};
    for (uint32_t s = 0; s < 320; s++) {
        const uint32_t l = sh->lens[s], t = s >= 288;
        if (!l) continue;
        sh->codes[s] = (uint16_t)rank[t][l]++;
        sh->lcount[t][l]++;
    }
    zi_tables_first(sh);
    if (sh->err_code) return;
    for (uint32_t lane = 0; lane < ZI_NL; lane++) zi_tables_codes(sh, lane);
    for (uint32_t lane = 0; lane < ZI_NL; lane++) zi_tables_sub_sizes(sh, lane);
    for (uint32_t lane = 0; lane < ZI_NL; lane++) zi_tables_sub_place(sh, lane);
    if (sh->sub_err) {
        sh->err_code = sh->sub_err;
        return;
    }
    for (uint32_t lane = 0; lane < ZI_NL; lane++) zi_tables_fill(sh, lane);
}

/* ------------------------------------------------------------------------------------------------ part output */
/* What a part k > 0 keeps of its decode (it cannot write bytes yet: the 32 KiB before it are unknown):
 *   tokens   its output in order: a match (distance << 16 | length) or a run of literals (length, distance 0) whose
 *            bytes follow one another in lit (a stored block's bytes too): 4 bytes a token, a byte a literal;
 *   recent   its last elements as 16-bit values (bytes, or marks for the bytes before the part: zi_put's), in a
 *            buffer that keeps the last ZI_WINDOW of them as it moves on; at the end they are its tail, which the
 *            tails step turns into bytes in chain order. Then the part's tokens are replayed into bytes at its
 *            place (replay), every byte before it final: no 16-bit buffer of the whole part, and no per-byte
 *            lookup of marks (half of a label part's elements are marks to its end). */
#define RECENT_CAP (4 * ZI_WINDOW) /* elements; moved down once a token might pass RECENT_CAP - RECENT_SLACK */
#define RECENT_SLACK 512           /* a match's 258 elements and a 16-byte copy's overrun */
#define RUN_MAX 0xffffu

typedef struct part_out {
    uint32_t *tok;
    size_t ntok, tok_cap;
    uint8_t *lit;
    size_t nlit, lit_cap;
    uint16_t *recent;
    uint32_t recent_base; /* the logical position (zi's outpos) of recent[0] */
    int no_memory;
} part_out;

static int part_grow(part_out *p, size_t ntok, size_t nlit) {
    if (p->ntok + ntok > p->tok_cap) {
        const size_t cap = (p->tok_cap ? 2 * p->tok_cap : 4096) + ntok;
        uint32_t *t = realloc(p->tok, cap * sizeof *t);
        if (!t) return p->no_memory = 1, 0;
        p->tok = t;
        p->tok_cap = cap;
    }
    if (p->nlit + nlit > p->lit_cap) {
        const size_t cap = (p->lit_cap ? 2 * p->lit_cap : 16384) + nlit;
        uint8_t *l = realloc(p->lit, cap);
        if (!l) return p->no_memory = 1, 0;
        p->lit = l;
        p->lit_cap = cap;
    }
    return 1;
}

/* Literal bytes [b, b + n) at the end of the tokens: onto the last run where it has room. */
static void part_literals(part_out *p, const uint8_t *b, uint32_t n) {
    memcpy(p->lit + p->nlit, b, n);
    p->nlit += n;
    while (n) {
        uint32_t *last = p->ntok ? &p->tok[p->ntok - 1] : NULL;
        if (!last || (*last >> 16) || *last == RUN_MAX) {
            p->tok[p->ntok++] = 0;
            last = &p->tok[p->ntok - 1];
        }
        const uint32_t take = RUN_MAX - *last < n ? RUN_MAX - *last : n;
        *last += take;
        n -= take;
    }
}

/* Keeps the last ZI_WINDOW elements at the buffer's start once position op (and a match after it) might pass it. */
static void recent_room(part_out *p, uint32_t op) {
    if (op - p->recent_base + RECENT_SLACK <= RECENT_CAP) return;
    const uint32_t keep_from = op - ZI_WINDOW;
    memmove(p->recent, p->recent + (keep_from - p->recent_base), ZI_WINDOW * sizeof(uint16_t));
    p->recent_base = keep_from;
}

/* A stored block's len bytes at position op into the recent elements: those of the last ZI_WINDOW positions up to
 * op + len that the buffer lacks moved down first, then the block's last ZI_WINDOW bytes or fewer widened. */
static void recent_bytes(part_out *p, uint32_t op, const uint8_t *b, uint32_t len) {
    const uint32_t end = op + len, keep = end - ZI_WINDOW; /* (op >= ZI_WINDOW: the marks come first) */
    if (end - p->recent_base + RECENT_SLACK > RECENT_CAP) {
        if (keep < op) memmove(p->recent, p->recent + (keep - p->recent_base), (size_t)(op - keep) * sizeof(uint16_t));
        p->recent_base = keep;
    }
    const uint32_t from = op > keep ? op : keep;
    for (uint32_t x = from; x < end; x++) p->recent[x - p->recent_base] = b[x - op];
}

/* The reader topped up to 56 bits or more by one 8-byte load where 8 bytes remain (the uncounted bits above `avail`
 * hold the next bytes already, so a later load ORs the same bits over them); else zi_refill's 32 or more. */
static inline void refill_wide(zi_br *b) {
    if (b->next + 8 <= b->n) {
        b->buf |= zg_le64(b->p + b->next) << b->avail;
        b->next += (63 - b->avail) >> 3;
        b->avail |= 56;
    } else {
        zi_refill(b);
    }
}

/* A Huffman block's tokens (its tables built) from sh->bitpos at sh->outpos to its end of block, with every check
 * of zi_serial_fill (valid symbols, no distance before the output's start, nothing past cap, no bits past the
 * stream), one token at a time: part 0's bytes into out (p NULL), a later part's into its tokens and recent
 * elements. Leaves sh->bitpos, sh->outpos, and sh->err_code on a fault. */
static void block_tokens(zi_shared *sh, const uint8_t *in, uint8_t *out, part_out *p) {
    const uint32_t *lt = sh->lt, *dt = sh->dt;
    const uint32_t cap = sh->cap, nbits = sh->nbits;
    zi_br b;
    zi_br_init(&b, in, nbits >> 3, sh->bitpos);
    uint32_t op = sh->outpos, e = 0;
    uint32_t *run = NULL; /* p: the literal run being extended, if the last token was one */
    for (;;) {
        if (p) {
            if (p->ntok + 2 > p->tok_cap || p->nlit + 1 > p->lit_cap) {
                if (!part_grow(p, 1024, 4096)) break;
                run = run ? p->tok + p->ntok - 1 : NULL;
            }
            recent_room(p, op);
        }
        if (b.avail < 48) refill_wide(&b); /* (a token takes 48 bits at most) */
        const uint32_t x = zi_lookup(lt, ZI_LROOT, b.buf), kind = ZI_E_KIND(x);
        b.buf >>= ZI_E_LEN(x);
        b.avail -= ZI_E_LEN(x);
        if (kind == ZI_LIT) {
            if (8 * b.next - b.avail > nbits && b.next > b.n) {
                e = ZI_E_TRUNC;
                break;
            }
            if (op >= cap) {
                e = ZI_E_OVERFLOW;
                break;
            }
            const uint8_t v = (uint8_t)ZI_E_VAL(x);
            if (!p) {
                out[op++] = v;
                continue;
            }
            p->recent[op++ - p->recent_base] = v;
            p->lit[p->nlit++] = v;
            if (run && *run < RUN_MAX) {
                (*run)++;
            } else {
                run = &p->tok[p->ntok++];
                *run = 1;
            }
            continue;
        }
        if (kind == ZI_EOB) {
            if (8 * b.next - b.avail > nbits && b.next > b.n) e = ZI_E_TRUNC;
            break;
        }
        if (kind != ZI_LEN) {
            e = ZI_E_SYMBOL;
            break;
        }
        /* at most 15 + 5 bits taken since the refill: 12 or more left */
        const uint32_t xb = ZI_E_EXTRA(x), len = ZI_E_VAL(x) + ((uint32_t)b.buf & ((1u << xb) - 1));
        b.buf >>= xb;
        b.avail -= xb;
        if (b.avail < 28) zi_refill(&b); /* (near the stream's end only: a distance takes 28 bits at most) */
        const uint32_t y = zi_lookup(dt, ZI_DROOT, b.buf);
        b.buf >>= ZI_E_LEN(y);
        b.avail -= ZI_E_LEN(y);
        const uint32_t yb = ZI_E_EXTRA(y), d = ZI_E_VAL(y) + ((uint32_t)b.buf & ((1u << yb) - 1));
        b.buf >>= yb;
        b.avail -= yb;
        if (ZI_E_KIND(y) != ZI_DISTK) e = ZI_E_SYMBOL;
        else if (d > op) e = ZI_E_DIST;
        else if (8 * b.next - b.avail > nbits && b.next > b.n) e = ZI_E_TRUNC;
        else if (len > cap - op) e = ZI_E_OVERFLOW;
        if (e) break;
        if (!p) {
            uint8_t *dst = out + op;
            if (cap - op >= len + 16) ZI_COPY_MATCH(uint8_t, dst, d, len);
            else for (uint32_t i = 0; i < len; i++) dst[i] = dst[(ptrdiff_t)i - d];
        } else {
            uint16_t *dst = p->recent + (op - p->recent_base); /* (d <= ZI_WINDOW: its source is in the buffer) */
            ZI_COPY_MATCH(uint16_t, dst, d, len);                    /* (RECENT_SLACK covers the overrun) */
            p->tok[p->ntok++] = d << 16 | len;
            run = NULL;
        }
        op += len;
    }
    sh->bitpos = 8 * b.next - b.avail;
    sh->outpos = op;
    if (e) sh->err_code = e;
    else if (p && p->no_memory) sh->err_code = ZI_E_TOO_BIG;
}

/* ------------------------------------------------------------------------------------------------ decode */
/* zi_decode in serial mode with the host's steps: from spec->start, block by block, to a later part's start or the
 * final block; part 0 (p NULL) writes its bytes into out, a later part its tokens into *p. Afterwards
 * zi_verdict(sh) and sh->outpos - sh->out0 elements decoded. */
static void part_decode(zi_shared *sh, const uint8_t *in, uint32_t nbytes, uint8_t *out, part_out *p,
                        const zi_spec *spec) {
    sh->bitpos = spec->start;
    sh->nbits = nbytes * 8;
    sh->wide = spec->wide;
    sh->out0 = spec->wide ? ZI_WINDOW : 0;
    sh->outpos = sh->out0;
    sh->cap = spec->cap;
    sh->block_final = 0;
    sh->nstops = spec->nstops;
    for (uint32_t m = 0; m < spec->nstops; m++) sh->stops[m] = spec->stops[m];
    sh->stopped = 0;
    sh->end_part = spec->nstops;
    sh->serial = 1;
    sh->swin_lo = sh->outpos;
    sh->err_code = sh->out0 > spec->cap ? ZI_E_TOO_BIG : 0;
    if (p) {
        for (uint32_t k = 0; k < ZI_WINDOW; k++) p->recent[k] = (uint16_t)(255 + ZI_WINDOW - k); /* the marks */
        p->recent_base = 0;
    }
    while (!sh->err_code) {
        if (sh->nstops) {
            zi_part_stop(sh);
            if (sh->stopped) break;
        }
        for (uint32_t lane = 0; lane < ZI_NL; lane++) zi_header_stage(sh, in, lane);
        zi_block_header(sh, in);
        if (!sh->err_code && sh->btype == 2) {
            for (uint32_t lane = 0; lane < ZI_NL; lane++) zi_header_table(sh, lane);
            zi_header_lengths(sh);
            if (!sh->err_code)
                for (uint32_t lane = 0; lane < ZI_NL; lane++) zi_header_split(sh, lane);
        }
        if (sh->err_code) break;
        if (sh->btype == 0) { /* stored: its length was checked against the input and cap */
            const uint8_t *from = in + (sh->next >> 3);
            const uint32_t len = sh->stored_len;
            if (!p) {
                memcpy(out + sh->outpos, from, len);
            } else if (part_grow(p, len / RUN_MAX + 1, len)) {
                part_literals(p, from, len);
                recent_bytes(p, sh->outpos, from, len);
            }
            sh->outpos += len;
            sh->bitpos = sh->next + len * 8;
        } else {
            build_tables(sh);
            if (sh->err_code) break;
            block_tokens(sh, in, out, p);
        }
        if (p && p->no_memory && !sh->err_code) sh->err_code = ZI_E_TOO_BIG;
        if (sh->err_code || sh->block_final) break;
    }
}

/* ------------------------------------------------------------------------------------------------ the split */
typedef struct split_job {
    const uint8_t *in;
    uint32_t nbytes, size, np;
    uint8_t *out;
    zg_deflate_check_kind kind;
    uint32_t start[ZI_MAX_PARTS];
    int status[ZI_MAX_PARTS];
    uint32_t got[ZI_MAX_PARTS], end[ZI_MAX_PARTS]; /* elements decoded, the stop it ended at (np - 1 - k: none) */
    part_out part[ZI_MAX_PARTS];
    uint32_t chain[ZI_MAX_PARTS], off[ZI_MAX_PARTS], nchain;
    uint32_t sum[ZI_MAX_PARTS]; /* each chain member's checksum */
    atomic_int bad;             /* replay: a match reaching before the output (a damaged stream) */
} split_job;

static _Thread_local void *tl_sh, *tl_find;

/* Where part k of np (1 <= k <= np) begins its search: part 0 takes PART0_SHARE shares of the stream's bits, the others
 * one each, as part 0 writes its bytes straight away (no tokens, no replay): on a label chunk its decode took 0.62 of
 * a later part's and its checksum 0.52 of a later part's replay (2-core machine, 8 parts). */
#define PART0_SHARE 1.5
static uint32_t part_from(uint32_t nbits, uint32_t k, uint32_t np) {
    return k >= np ? nbits : (uint32_t)((double)nbits * ((double)k - 1 + PART0_SHARE) / ((double)np - 1 + PART0_SHARE));
}

static zgpu_status find_task(void *arg, size_t index) {
    split_job *j = arg;
    const uint32_t k = (uint32_t)index + 1, nbits = j->nbytes * 8;
    zi_find_scratch *w = zg_tls_get(&tl_find, sizeof *w, free);
    if (!w) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    j->start[k] = find_first(j->in, j->nbytes, part_from(nbits, k, j->np), part_from(nbits, k + 1, j->np), w);
    return ZGPU_OK;
}

static zgpu_status decode_task(void *arg, size_t index) {
    split_job *j = arg;
    const uint32_t k = (uint32_t)index;
    j->status[k] = ZI_OK;
    j->got[k] = 0;
    j->end[k] = j->np - 1 - k;
    if (k && j->start[k] == ZI_NO_BIT) return ZGPU_OK; /* nothing to decode: the part before decodes over it */
    zi_shared *sh = zg_tls_get(&tl_sh, sizeof *sh, free);
    if (!sh) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    part_out *p = k ? &j->part[k] : NULL;
    /* a part without memory for its tokens fails: the chain breaks and the stream is decoded on one thread, which
     * needs none (a hostile stream whose wrong guesses decode far must not fail a read the one-thread decode can do) */
    if (p && !(p->recent = malloc(RECENT_CAP * sizeof(uint16_t)))) {
        j->status[k] = ZI_E_TOO_BIG;
        return ZGPU_OK;
    }
    /* a part's elements: its marks and at most the whole output (a wrong guess decodes garbage up to there) */
    zi_spec sp = zi_part_spec(j->start, k, j->np, k ? ZI_WINDOW + j->size : j->size);
    part_decode(sh, j->in, j->nbytes, j->out, p, &sp); /* (out of memory: ZI_E_TOO_BIG) */
    j->status[k] = zi_verdict(sh);
    j->got[k] = sh->outpos - sh->out0;
    j->end[k] = sh->end_part;
    return ZGPU_OK;
}

static uint32_t tail_of(uint32_t got) { return got < ZI_WINDOW ? 0 : got - ZI_WINDOW; }

/* Chain member q > 0's last elements (from tail_of) into bytes at out[off + tail_of(got)...], every byte before the
 * part final; 0, or 1 for a mark naming a byte before the output (a damaged stream). */
static int resolve_tail(const split_job *j, uint32_t q) {
    const uint32_t k = j->chain[q], got = j->got[k], off = j->off[q], t0 = tail_of(got);
    const part_out *p = &j->part[k];
    const uint16_t *e = p->recent + (ZI_WINDOW + t0 - p->recent_base); /* element i: recent[ZI_WINDOW + i - base] */
    for (uint32_t i = 0; i < got - t0; i++) {
        const uint32_t v = e[i];
        if (v < 256) {
            j->out[off + t0 + i] = (uint8_t)v;
        } else {
            const uint32_t d = v - 255;
            if (d > off) return 1;
            j->out[off + t0 + i] = j->out[off - d];
        }
    }
    return 0;
}

/* Chain member q > 0's tokens into bytes at out[off, off + tail_of(got)) (its tail is final already, and read by the
 * next part's replay meanwhile: never written here); 0, or 1 for a match reaching before the output. */
static int replay(const split_job *j, uint32_t q) {
    const uint32_t k = j->chain[q], off = j->off[q], end = tail_of(j->got[k]);
    const part_out *p = &j->part[k];
    uint8_t *o = j->out + off;
    const uint8_t *lit = p->lit;
    uint32_t x = 0;
    for (size_t i = 0; i < p->ntok && x < end; i++) {
        const uint32_t t = p->tok[i], d = t >> 16, len = t & 0xffffu;
        const uint32_t n = len < end - x ? len : end - x; /* (clipped at the tail) */
        if (!d) {
            memcpy(o + x, lit, n);
            lit += len;
        } else if ((size_t)d > (size_t)off + x) {
            return 1;
        } else if (end - x >= len + 16) { /* (the copy's overrun before the tail) */
            uint8_t *dst = o + x;
            ZI_COPY_MATCH(uint8_t, dst, d, len);
        } else {
            uint8_t *dst = o + x;
            for (uint32_t w = 0; w < n; w++) dst[w] = dst[(ptrdiff_t)w - d];
        }
        x += len;
    }
    return 0;
}

/* Chain member q: its bytes (part 0's are, from its decode; a later part's tokens replayed), then their checksum. */
static zgpu_status replay_task(void *arg, size_t index) {
    split_job *j = arg;
    const uint32_t q = (uint32_t)index, k = j->chain[q], got = j->got[k], off = j->off[q];
    if (q && replay(j, q)) {
        atomic_store(&j->bad, 1);
        return ZGPU_OK;
    }
    j->sum[q] = j->kind == ZG_DEFLATE_CRC32 ? libdeflate_crc32(0, j->out + off, got)
                                            : libdeflate_adler32(1, j->out + off, got);
    return ZGPU_OK;
}

static uint32_t crc_pow[ZG_CRC_POW_N];
static pthread_once_t crc_pow_once = PTHREAD_ONCE_INIT;
static void crc_pow_init(void) { zg_crc_pow_init(crc_pow, ZG_CRC32_POLY); }

/* Parts, chain, tails, replay; 0 where the chain holds and the checksum matches (out final), else 1. */
static int run_split(split_job *j, const zg_decode_par *par, uint32_t check, zgpu_status *st) {
    if (j->np > 1 && (*st = zg_pool_run(par->pool, j->np - 1, find_task, j)) != ZGPU_OK) return 1;
    if ((*st = zg_pool_run(par->pool, j->np, decode_task, j)) != ZGPU_OK) return 1;
    atomic_fetch_add(&st_parts, j->np);
    if (zi_parts_chain(j->status, j->got, j->end, j->start, j->np, j->size, j->chain, j->off, &j->nchain)) return 1;
    for (uint32_t q = 1; q < j->nchain; q++) /* the tails, in order: the windows later parts read */
        if (resolve_tail(j, q)) return 1;
    if ((*st = zg_pool_run(par->pool, j->nchain, replay_task, j)) != ZGPU_OK || atomic_load(&j->bad)) return 1;
    uint32_t sum = j->sum[0];
    if (j->kind == ZG_DEFLATE_CRC32) pthread_once(&crc_pow_once, crc_pow_init);
    for (uint32_t q = 1; q < j->nchain; q++) {
        const uint32_t len = j->got[j->chain[q]];
        sum = j->kind == ZG_DEFLATE_CRC32 ? zg_crc_combine(sum, j->sum[q], len, crc_pow, ZG_CRC32_POLY)
                                          : zg_adler_combine(sum, j->sum[q], len);
    }
    return sum != check;
}

zgpu_status zg_deflate_decode_split(const uint8_t *in, size_t n, uint8_t *out, size_t size, zg_deflate_check_kind kind,
                                    uint32_t check, const zg_decode_par *par, size_t part_min, double min_gain,
                                    int *declined) {
    *declined = 1;
    if (!par || !par->pool || par->ways < 2 || n > ZI_MAX_BYTES || size > ZI_MAX_BYTES - ZI_WINDOW || size == 0 ||
        part_min == 0)
        return ZGPU_OK;
    const uint32_t ways = par->ways < ZI_MAX_PARTS ? (uint32_t)par->ways : ZI_MAX_PARTS;
    const uint32_t np = zi_stream_parts((uint32_t)n, ways, part_min < ZI_MAX_BYTES ? (uint32_t)part_min : ZI_MAX_BYTES);
    if (np < 2 || (min_gain > 1 && zg_deflate_split_speedup(n, (double)size / (double)n, par->ways) < min_gain))
        return ZGPU_OK;
    split_job *j = calloc(1, sizeof *j);
    if (!j) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    j->in = in;
    j->nbytes = (uint32_t)n;
    j->size = (uint32_t)size;
    j->np = np;
    j->out = out;
    j->kind = kind;
    zgpu_status st = ZGPU_OK;
    const int failed = run_split(j, par, check, &st);
    for (uint32_t k = 0; k < np; k++) {
        free(j->part[k].tok);
        free(j->part[k].lit);
        free(j->part[k].recent);
    }
    free(j);
    if (st != ZGPU_OK) return st;
    atomic_fetch_add(&st_streams, 1);
    if (failed) atomic_fetch_add(&st_fallbacks, 1);
    *declined = failed;
    return ZGPU_OK;
}
