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
#include <time.h>

#include "common/endian.h"
#include "common/status.h"
#include "common/tls.h"
#include "gpucodec/common/checksum_combine.h"
#include "gpucodec/deflate/inflate_rules.h"
#include "host/pool.h"

static atomic_ullong st_streams, st_parts, st_fallbacks, st_phase_ns[3], st_part_max_ns, st_part_mean_ns;

zg_deflate_split_stats zg_deflate_split_stats_get(void) {
    zg_deflate_split_stats s = {atomic_load(&st_streams), atomic_load(&st_parts), atomic_load(&st_fallbacks), {0}, 0, 0};
    for (int i = 0; i < 3; i++) s.phase_s[i] = (double)atomic_load(&st_phase_ns[i]) * 1e-9;
    s.part_max_s = (double)atomic_load(&st_part_max_ns) * 1e-9;
    s.part_mean_s = (double)atomic_load(&st_part_mean_ns) * 1e-9;
    return s;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A split's time in one-thread decodes (libdeflate and its checksum) of the same stream: its work spread over the
 * parts, WORK / parts, plus a COST that does not shrink with them (the tails in chain order, the slowest part's
 * imbalance, the pool's hand-offs). Fitted on the H100 machine's 16 cores (test_deflate_split's time lines, a
 * 64x256x256 chunk at level 5, libdeflate 1.14): a label chunk (33:1) at 0.62 / 0.38 / 0.30 / 0.27 of a one-thread
 * decode at 2 / 4 / 8 / 12 parts (WORK_DENSE, COST_DENSE: from 16:1 on); float32 noise (1.13:1) 0.74 / 0.42 / 0.30
 * at 4 / 8 / 12 (WORK_LOOSE, COST_LOOSE: 2:1 and under, mostly literals), taken a little higher for streams whose
 * block headers lie far apart (a part searches its range up to the first: the test's 1.3:1 sample, 0.8 at 12). On
 * the 2-core machine a one-thread decode is relatively faster (its libdeflate ~2x the H100 machine's per core, the
 * split's parts about the same): 2 parts there about break even. */
#define WORK_DENSE 0.85
#define COST_DENSE 0.20
#define WORK_LOOSE 3.0
#define COST_LOOSE 0.10

double zg_deflate_split_speedup(size_t stored, double ratio, int ways) {
    const size_t most = stored / ZG_DEFLATE_PART_MIN_BYTES;
    size_t parts = (size_t)(ways > 0 ? ways : 1);
    if (parts > most) parts = most;
    if (parts > ZI_MAX_PARTS) parts = ZI_MAX_PARTS;
    if (parts < 2) return 1;
    const double x = ratio <= 2 ? 0 : ratio >= 16 ? 1 : log2(ratio / 2) / 3; /* 2:1 .. 16:1, log-linear */
    const double work = WORK_LOOSE + (WORK_DENSE - WORK_LOOSE) * x, cost = COST_LOOSE + (COST_DENSE - COST_LOOSE) * x;
    const double t = work / (double)parts + cost;
    return t < 1 ? 1 / t : 1;
}

double zg_deflate_chunk_split_speedup(const zg_codec *c, size_t decoded, double ratio, int ways) {
    (void)c;
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
    char pad[64]; /* parts side by side in split_job, each written by its own thread: no cache line shared */
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
 * stream), one token at a time: part 0's bytes into out (keep 0), a later part's into its tokens and recent elements
 * (keep 1, p). Leaves sh->bitpos, sh->outpos, and sh->err_code on a fault. Inlined once for each kind of part (a
 * literal is a few instructions: no branch on which it is). */
static inline __attribute__((always_inline)) void block_tokens_of(zi_shared *sh, const uint8_t *in, uint8_t *out,
                                                                  part_out *p, const int keep) {
    const uint32_t *lt = sh->lt, *dt = sh->dt;
    const uint32_t cap = sh->cap, nbits = sh->nbits;
    zi_br b;
    zi_br_init(&b, in, nbits >> 3, sh->bitpos);
    uint32_t op = sh->outpos, e = 0;
    /* p's cursor in locals, written back at the end: a literal's byte store may alias anything, so through p every
     * literal would reload and store them (and each part's thread would write its own fields a token at a time);
     * the literal run being extended (its token tok[run_at], run elements so far) likewise */
    uint32_t *tok = keep ? p->tok : NULL;
    uint8_t *lit = keep ? p->lit : NULL;
    uint16_t *recent = keep ? p->recent : NULL;
    size_t ntok = keep ? p->ntok : 0, nlit = keep ? p->nlit : 0;
    size_t tok_cap = keep ? p->tok_cap : 0, lit_cap = keep ? p->lit_cap : 0;
    uint32_t base = keep ? p->recent_base : 0, *run = NULL;
    for (;;) {
        if (keep) {
            if (ntok + 2 > tok_cap || nlit + 1 > lit_cap) {
                p->ntok = ntok, p->nlit = nlit;
                if (!part_grow(p, 1024, 4096)) break;
                tok = p->tok, lit = p->lit, tok_cap = p->tok_cap, lit_cap = p->lit_cap;
                run = run ? tok + ntok - 1 : NULL;
            }
            if (op - base + RECENT_SLACK > RECENT_CAP) { /* the last ZI_WINDOW elements down to the buffer's start */
                memmove(recent, recent + (op - ZI_WINDOW - base), ZI_WINDOW * sizeof(uint16_t));
                base = op - ZI_WINDOW;
            }
        }
        if (b.avail < 48) refill_wide(&b); /* (a token takes 48 bits at most) */
        const uint32_t x = zi_lookup(lt, ZI_LROOT, b.buf), kind = ZI_E_KIND(x);
        b.buf >>= ZI_E_LEN(x);
        b.avail -= ZI_E_LEN(x);
        if (kind == ZI_LIT) {
            if (b.next > b.n && 8 * b.next - b.avail > nbits) {
                e = ZI_E_TRUNC;
                break;
            }
            if (op >= cap) {
                e = ZI_E_OVERFLOW;
                break;
            }
            const uint8_t v = (uint8_t)ZI_E_VAL(x);
            if (!keep) {
                out[op++] = v;
                continue;
            }
            recent[op++ - base] = v;
            lit[nlit++] = v;
            if (run && *run < RUN_MAX) {
                (*run)++;
            } else {
                run = &tok[ntok++];
                *run = 1;
            }
            continue;
        }
        if (kind == ZI_EOB) {
            if (b.next > b.n && 8 * b.next - b.avail > nbits) e = ZI_E_TRUNC;
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
        else if (b.next > b.n && 8 * b.next - b.avail > nbits) e = ZI_E_TRUNC;
        else if (len > cap - op) e = ZI_E_OVERFLOW;
        if (e) break;
        if (!keep) {
            uint8_t *dst = out + op;
            if (cap - op >= len + 16) ZI_COPY_MATCH(uint8_t, dst, d, len);
            else for (uint32_t i = 0; i < len; i++) dst[i] = dst[(ptrdiff_t)i - d];
        } else {
            uint16_t *dst = recent + (op - base); /* (d <= ZI_WINDOW: its source is in the buffer) */
            ZI_COPY_MATCH(uint16_t, dst, d, len); /* (RECENT_SLACK covers the overrun) */
            tok[ntok++] = d << 16 | len;
            run = NULL;
        }
        op += len;
    }
    if (keep) {
        p->ntok = ntok, p->nlit = nlit, p->recent_base = base;
    }
    sh->bitpos = 8 * b.next - b.avail;
    sh->outpos = op;
    if (e) sh->err_code = e;
    else if (keep && p->no_memory) sh->err_code = ZI_E_TOO_BIG;
}

static void block_tokens(zi_shared *sh, const uint8_t *in, uint8_t *out, part_out *p) {
    if (p) block_tokens_of(sh, in, out, p, 1);
    else block_tokens_of(sh, in, out, NULL, 0);
}

/* ------------------------------------------------------------------------------------------------ the split */
#define START_UNKNOWN 0xfffffffeu /* (ZI_NO_BIT: searched, none found) */

typedef struct split_job {
    const uint8_t *in;
    uint32_t nbytes, size, np;
    uint8_t *out;
    zg_deflate_check_kind kind;
    _Atomic uint32_t found[ZI_MAX_PARTS]; /* part k's start once searched (find_start), else START_UNKNOWN */
    uint32_t start[ZI_MAX_PARTS];         /* the same after the decode phase (zi_parts_chain's) */
    int status[ZI_MAX_PARTS];
    uint32_t got[ZI_MAX_PARTS], end[ZI_MAX_PARTS]; /* elements decoded, the stop it ended at (np - 1 - k: none) */
    part_out part[ZI_MAX_PARTS];
    uint32_t chain[ZI_MAX_PARTS], off[ZI_MAX_PARTS], nchain;
    uint32_t sum[ZI_MAX_PARTS]; /* each chain member's checksum */
    uint64_t decode_ns[ZI_MAX_PARTS];
    atomic_int bad;             /* replay: a match reaching before the output (a damaged stream) */
} split_job;

static _Thread_local void *tl_sh;

/* Where part k of np (1 <= k <= np) begins its search: part 0 takes PART0_SHARE shares of the stream's bits, the others
 * one each, as part 0 writes its bytes straight away (no tokens, no replay): on a label chunk its decode took 0.62 of
 * a later part's and its checksum 0.52 of a later part's replay (2-core machine, 8 parts). */
#define PART0_SHARE 1.5
static uint32_t part_from(uint32_t nbits, uint32_t k, uint32_t np) {
    return k >= np ? nbits : (uint32_t)((double)nbits * ((double)k - 1 + PART0_SHARE) / ((double)np - 1 + PART0_SHARE));
}

/* Part k > 0's start: the first block header in its range (find_first), searched by whichever thread needs it first
 * (its own part's, or the part before it on reaching the range) and kept; two threads searching at once find the
 * same. Searching in the decode phase rather than in a phase of its own lets part 0 start at once, and a part start
 * as soon as its own search is done (a phase of searches waited for the slowest: 0.5-0.6 ms of a label chunk's
 * 3-4 ms split at 12 parts on the H100 machine's cores). */
static uint32_t find_start(split_job *j, uint32_t k) {
    uint32_t at = atomic_load_explicit(&j->found[k], memory_order_acquire);
    if (at != START_UNKNOWN) return at;
    const uint32_t nbits = j->nbytes * 8;
    zi_find_scratch w;
    at = find_first(j->in, j->nbytes, part_from(nbits, k, j->np), part_from(nbits, k + 1, j->np), &w);
    atomic_store_explicit(&j->found[k], at, memory_order_release);
    return at;
}

/* Before each block of part k: whether a later part starts here (sh->stopped, sh->end_part: zi_part_stop's
 * outcome). Only the parts whose ranges begin at or before this bit can (a part starts in its range), so a part
 * needs the next part's start only once it has decoded its own range. */
static int later_part_starts(split_job *j, uint32_t k, zi_shared *sh) {
    const uint32_t nbits = j->nbytes * 8;
    for (uint32_t m = k + 1; m < j->np && part_from(nbits, m, j->np) <= sh->bitpos; m++)
        if (find_start(j, m) == sh->bitpos) {
            sh->stopped = 1;
            sh->end_part = m - k - 1;
            return 1;
        }
    return 0;
}

/* ------------------------------------------------------------------------------------------------ decode */
/* zi_decode in serial mode with the host's steps: part k from spec->start, block by block, to a later part's start
 * (later_part_starts) or the final block; part 0 (p NULL) writes its bytes into out, a later part its tokens into
 * *p. Afterwards zi_verdict(sh) and sh->outpos - sh->out0 elements decoded. */
static void part_decode(split_job *j, uint32_t k, zi_shared *sh, part_out *p, const zi_spec *spec) {
    const uint8_t *in = j->in;
    uint8_t *out = j->out;
    const uint32_t nbytes = j->nbytes;
    sh->bitpos = spec->start;
    sh->nbits = nbytes * 8;
    sh->wide = spec->wide;
    sh->out0 = spec->wide ? ZI_WINDOW : 0;
    sh->outpos = sh->out0;
    sh->cap = spec->cap;
    sh->block_final = 0;
    sh->nstops = spec->nstops; /* (its stops are later_part_starts') */
    sh->stopped = 0;
    sh->end_part = spec->nstops;
    sh->serial = 1;
    sh->swin_lo = sh->outpos;
    sh->err_code = sh->out0 > spec->cap ? ZI_E_TOO_BIG : 0;
    if (p) {
        for (uint32_t i = 0; i < ZI_WINDOW; i++) p->recent[i] = (uint16_t)(255 + ZI_WINDOW - i); /* the marks */
        p->recent_base = 0;
    }
    while (!sh->err_code) {
        if (sh->nstops && later_part_starts(j, k, sh)) break;
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

static zgpu_status decode_part(split_job *j, uint32_t k) {
    j->status[k] = ZI_OK;
    j->got[k] = 0;
    j->end[k] = j->np - 1 - k;
    const uint32_t start = k ? find_start(j, k) : 0;
    if (start == ZI_NO_BIT) return ZGPU_OK; /* nothing to decode: the part before decodes over it */
    zi_shared *sh = zg_tls_get(&tl_sh, sizeof *sh, free);
    if (!sh) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    part_out *p = k ? &j->part[k] : NULL;
    /* a part without memory for its tokens fails: the chain breaks and the stream is decoded on one thread, which
     * needs none (a hostile stream whose wrong guesses decode far must not fail a read the one-thread decode can do) */
    if (p && !(p->recent = malloc(RECENT_CAP * sizeof(uint16_t)))) {
        j->status[k] = ZI_E_TOO_BIG;
        return ZGPU_OK;
    }
    /* room for the part's share up front (a literal-heavy part's buffers doubled from small were copied about twice
     * over): its share of the output, but no more literals than its share of the stream has bits, nor tokens than a
     * quarter of them; without the room (no memory) they grow as needed */
    if (p) {
        const size_t out_share = j->size / j->np, bits_share = (size_t)j->nbytes * 8 / j->np;
        const size_t lits = out_share < bits_share ? out_share : bits_share, toks = lits / 4;
        if (!part_grow(p, toks + 1024, lits + 4096)) p->no_memory = 0;
    }
    /* a part's elements: its marks and at most the whole output (a wrong guess decodes garbage up to there) */
    const zi_spec sp = {.start = start, .nstops = j->np - 1 - k, .wide = k > 0, .cap = k ? ZI_WINDOW + j->size : j->size};
    part_decode(j, k, sh, p, &sp); /* (out of memory: ZI_E_TOO_BIG) */
    j->status[k] = zi_verdict(sh);
    j->got[k] = sh->outpos - sh->out0;
    j->end[k] = sh->end_part;
    return ZGPU_OK;
}

static zgpu_status decode_task(void *arg, size_t index) {
    split_job *j = arg;
    const uint64_t t0 = now_ns();
    const zgpu_status st = decode_part(j, (uint32_t)index);
    j->decode_ns[index] = now_ns() - t0;
    return st;
}

static uint32_t tail_of(uint32_t got) { return got < ZI_WINDOW ? 0 : got - ZI_WINDOW; }

/* Chain member q > 0's last elements (from tail_of) into bytes at out[off + tail_of(got)...], every byte before the
 * part final; 0, or 1 for a mark naming a byte before the output (a damaged stream). An element is a byte (v < 256)
 * or a mark for the byte d = v - 255 before the part: out[off + 255 - v]; without a branch on which (a label tail's
 * elements are bytes and marks at random: half of them marks), and a mark out of range read as byte 0 and told.
 * (Resolved in chain order, each mark one load. All tails at once, each mark followed back through the raw tails
 * before, took longer at 12 parts: a label tail's marks name marks, part after part.) */
static int resolve_tail(const split_job *j, uint32_t q) {
    static const uint8_t byte_of[256] = {
#define B4(x) x, x + 1, x + 2, x + 3
#define B16(x) B4(x), B4(x + 4), B4(x + 8), B4(x + 12)
#define B64(x) B16(x), B16(x + 16), B16(x + 32), B16(x + 48)
        B64(0), B64(64), B64(128), B64(192)
#undef B64
#undef B16
#undef B4
    };
    const uint32_t k = j->chain[q], got = j->got[k], off = j->off[q], t0 = tail_of(got), lim = off + 255;
    const part_out *p = &j->part[k];
    const uint16_t *e = p->recent + (ZI_WINDOW + t0 - p->recent_base); /* element i: recent[ZI_WINDOW + i - base] */
    const uint8_t *before = j->out + off + 255;                          /* before[-v]: the byte mark v names */
    uint8_t *o = j->out + off + t0;
    uint32_t bad = 0;
    for (uint32_t i = 0; i < got - t0; i++) {
        const uint32_t v = e[i], w = v <= lim ? v : 0;
        bad |= v > lim;
        const uintptr_t lit = (uintptr_t)(byte_of + (w & 255)), back = (uintptr_t)before - w, m = -(uintptr_t)(w < 256);
        o[i] = *(const uint8_t *)((lit & m) | (back & ~m)); /* (a mask, not a ternary: GCC made that a branch) */
    }
    return bad != 0;
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
    uint64_t t[4];
    t[0] = now_ns();
    for (uint32_t k = 0; k < j->np; k++) atomic_init(&j->found[k], START_UNKNOWN);
    if ((*st = zg_pool_run(par->pool, j->np, decode_task, j)) != ZGPU_OK) return 1; /* (searches too: find_start) */
    t[1] = now_ns();
    for (uint32_t k = 1; k < j->np; k++) j->start[k] = find_start(j, k); /* (every part searched its own) */
    atomic_fetch_add(&st_parts, j->np);
    uint64_t most = 0, all = 0;
    for (uint32_t k = 0; k < j->np; k++) most = j->decode_ns[k] > most ? j->decode_ns[k] : most, all += j->decode_ns[k];
    atomic_fetch_add(&st_part_max_ns, most);
    atomic_fetch_add(&st_part_mean_ns, all / j->np);
    if (zi_parts_chain(j->status, j->got, j->end, j->start, j->np, j->size, j->chain, j->off, &j->nchain)) return 1;
    for (uint32_t q = 1; q < j->nchain; q++) /* the tails, in order: the windows later parts read */
        if (resolve_tail(j, q)) return 1;
    t[2] = now_ns();
    if ((*st = zg_pool_run(par->pool, j->nchain, replay_task, j)) != ZGPU_OK || atomic_load(&j->bad)) return 1;
    t[3] = now_ns();
    for (int i = 0; i < 3; i++) atomic_fetch_add(&st_phase_ns[i], t[i + 1] - t[i]);
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
