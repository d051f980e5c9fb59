/* zgpu's DEFLATE decoder, part 3 of 6 (see inflate_rules.h): a thread block's shared state (zi_shared) and the
 * phases of one window of a Huffman block: pass 1, sync, chain, prefix, resolve, pass 2, match copies. */
#ifndef ZG_INFLATE_WINDOWS_H
#define ZG_INFLATE_WINDOWS_H
#include "gpucodec/deflate/inflate_huffman.h"

/* ------------------------------------------------------------------------------------------------ the block */
/* A match waiting to be copied: out[pos, pos + len) from distance dist back. */
typedef struct zi_match {
    uint32_t pos;
    uint16_t len, dist;
} zi_match;

#define ZI_STAGE 256

enum { ZI_S_RUN = 0, ZI_S_SYNC, ZI_S_STOP, ZI_S_EOB, ZI_S_ERR };
enum { ZI_W_CONT = 0, ZI_W_EOB, ZI_W_ERR };
#define ZI_EV 2                     /* events (an end of block, an invalid code) a lane notes and decodes past */
#define ZI_XCAP 4 /* segments a lane's path enters on its way to a meeting whose start it records (see zi_chain_ranges) */
#define ZI_BMW (ZI_SEG_BITS / 32)   /* bitmap words per lane */
#define ZI_PHASES 8 /* profiled phases: header, tables, pass 1, sync, resolve, pass 2, jumps, in order (serial mode) */
/* Windows decoding to at most this resolve their matches by pointer jumping; larger ones (see zi_resolve) copy
 * a list of matches in order. Label volumes compress 30:1 and libdeflate writes blocks of 100s of KB. */
#define ZI_JUMP_BYTES 131072
/* A block header is parsed by one lane from a copy in shared memory that all lanes load at once (from global
 * memory, one lane took a round trip per 32 bits: a fifth of the time on low-ratio data, whose blocks are
 * ~14 KB). The longest header: 3 + 14 + 19 * 3 bits, then at most 286 + 30 code lengths of at most 7 bits
 * each (a repeat code covers 3 or more lengths in at most 14 bits): 2286 bits, 286 bytes; the bit reader
 * loads up to 8 bytes ahead; a stored block's LEN and NLEN end by byte 5. */
#define ZI_HDR_BYTES 320

/* Serial mode: a batch of tokens handed from the parser warp to the copier warp. */
typedef struct zi_sbatch {
    uint32_t pos[ZI_SB]; /* token k's first output byte */
    uint32_t tok[ZI_SB]; /* a match: distance << 16 | length; a literal: its byte (distance 0) */
    uint32_t n, end;     /* tokens; 1: the block's last batch (its end of block, or an error) */
    uint32_t bend;       /* the output's size after the batch */
} zi_sbatch;

/* The state one thread block keeps for its stream (shared memory on the GPU). Per-lane arrays are indexed
 * [..][lane] so that the lanes of a warp touch different banks. */
typedef struct zi_shared {
    uint32_t lt[ZI_LCAP], dt[ZI_DCAP];
    uint8_t pt[128]; /* the code-length code's table (zi_cl_entry) */
    uint8_t lens[320]; /* literal/length lengths, then distance lengths from 288 */
    uint8_t hdr[ZI_HDR_BYTES], hdr_lens[320]; /* the block header's bytes; its code lengths as sent */
    uint8_t cl[19];                           /* the code-length code's lengths */
    uint32_t hdr_pos, hdr_n, nlit, ndist;     /* dynamic header: reader position in hdr, hdr's valid bytes */
    uint32_t lcount[2][16], lfirst[2][16]; /* per table: codes of each length, first code of each length */
    uint32_t sub_at[2], sub_err; /* subtables: the next free entry of each table, a layout error */
    uint16_t codes[320];
    /* uniform state, written by one lane between barriers */
    uint32_t bitpos, nbits, outpos, cap, nvalid, wout, nmatch, next, block_final, btype, err_code, err2;
    uint32_t stored_len, jump, jumped;
    /* a part (zi_decode): 16-bit output, its first element; the later parts' starts, the one it stopped at */
    uint32_t wide, out0, nstops, stops[ZI_MAX_PARTS], stopped, end_part;
    uint32_t stat_windows, stat_short, stat_rounds; /* windows, those cut short, pointer-jumping rounds */
    long long tick_last, tick[ZI_PHASES]; /* profile (GPU): clock cycles lane 0 spent in each phase */
    int wres;
    uint32_t serial;          /* serial mode (zi_spec) */
    uint32_t seg;             /* bits each lane starts apart, <= ZI_SEG_BITS (zi_spec) */
    zi_sbatch sb[2];          /* serial mode: the two batches in flight between parser and copier */
    unsigned s_prod, s_cons;  /* serial mode: batches of the block handed over / copied */
    uint32_t swin_lo;         /* serial mode: the window holds no element below (the marks, stored blocks) */
    /* The tables' build and serial mode's window never live at the same time as the windows' state (a block's
     * windows start after its tables are built and leave nothing behind for the next block), so they share
     * memory: 67 instead of 85 KB, three blocks an SM instead of two. */
    union {
        struct {
            /* subtable layout, per first-level entry of both tables (literal/length 0..1023, distance
             * 1024..1279): the index bits its subtable needs, the lowest symbol whose code has its prefix (which
             * allocates it) */
            uint32_t sub_bits[1280], sub_owner[1280];
            uint16_t swin[ZI_SWIN];   /* serial mode: the copier's window, element x at x % ZI_SWIN */
            /* ---- a launch in serial mode gives a block only the state up to here (ZI_SERIAL_SHARED bytes),
             * so that more blocks fit an SM */
        };
        struct { /* ---- windows only */
            uint32_t bm[ZI_BMW][ZI_NL]; /* pass 1: the symbol boundaries of each lane's path in its own segment */
            /* events on a lane's own path (bit, output bytes and matches before it, kind: 0 = end of block, else
             * the ZI_E_* code; eob: the bit after the end-of-block code); a decode started at a wrong bit meets
             * invalid codes and false ends of block, so the lane notes them and goes on, and the chain decides
             * which is real */
            uint32_t ev_pos[ZI_EV][ZI_NL], ev_out[ZI_EV][ZI_NL], ev_m[ZI_EV][ZI_NL], ev_eob[ZI_EV][ZI_NL];
            uint8_t ev_kind[ZI_EV][ZI_NL], nev[ZI_NL], stat[ZI_NL], err[ZI_NL];
            uint32_t mark_end[ZI_NL]; /* pass 1: a lane's marks cover [its start, mark_end) (read while p changes) */
            uint16_t syncto[ZI_NL]; /* the lane a lane's path met (the next, or one further when it passed through) */
            uint32_t p[ZI_NL], out[ZI_NL], m[ZI_NL]; /* where each lane stopped, counts along its path from its start */
            uint32_t eob_end[ZI_NL];                 /* after an end of block met on the way to the successor */
            /* sync: where a lane's path entered the segment of lane + 1 + j (its first boundary there) and its
             * counts at that point, for the pieces of zi_chain_ranges */
            uint32_t xpos[ZI_XCAP][ZI_NL], xout[ZI_XCAP][ZI_NL], xm[ZI_XCAP][ZI_NL];
            uint16_t piece_owner[ZI_NL];      /* a lane passed through that decodes a piece of its owner's range */
            uint8_t piece_j[ZI_NL], npiece[ZI_NL]; /* the piece's index; a member's count of pieces given away */
            /* resolve: each true lane's bit range, the event ending it (ZI_EV: none, ZI_EV + 1: a lane passed
             * through), its output offset and first match */
            uint32_t from[ZI_NL], to[ZI_NL], obase[ZI_NL], mbase[ZI_NL], lane_out[ZI_NL], lane_m[ZI_NL];
            uint8_t end_ev[ZI_NL], member[ZI_NL];
            uint16_t met[2][ZI_NL];                    /* chain: pointer doubling over the lanes met */
            uint32_t inc_o[2][ZI_NL], inc_m[2][ZI_NL]; /* scan: output bytes and matches up to each lane */
            uint32_t first_end, cut;
            zi_match stage[ZI_STAGE]; /* the match copier's look at the list */
        };
    };
} zi_shared;
/* The state a block in serial mode uses (the rest is the windows' own). */
#define ZI_SERIAL_SHARED (offsetof(zi_shared, swin) + ZI_SWIN * sizeof(uint16_t))
/* Threads a block decoding in serial mode runs: the parser warp and the copier warp. */
#define ZI_SERIAL_NL 64

/* A lane's walk along its own path from its segment start s0: every token, past events (an invalid code
 * restarts the decode one bit later; an end of block goes on after its code), until bit `until`. mark: set
 * the boundaries in the lane's bitmap and note events (pass 1); else only count (the prefix recount, which
 * retraces the same path). Returns 0, or 1 when the lane must stop at b->pos (events full, or past the end). */
ZI_FN int zi_walk(zi_shared *sh, zi_br *b, uint32_t lane, uint32_t s0, uint32_t until, int mark, uint32_t *out,
                  uint32_t *m) {
    uint32_t nev = 0;
    while (b->pos < until) {
        const uint32_t at = b->pos;
        if (mark) sh->bm[(at - s0) >> 5][lane] |= 1u << ((at - s0) & 31);
        uint32_t a, d;
        const int t = zi_token(b, sh->lt, sh->dt, &a, &d);
        const int past = b->pos > sh->nbits;
        if (t == ZI_T_LIT && !past) {
            *out += 1;
        } else if (t == ZI_T_MATCH && !past) {
            *out += a;
            *m += 1;
        } else {
            const uint32_t after = b->pos;
            if (mark) {
                if (nev == ZI_EV) {
                    zi_br_init(b, b->p, b->n, at);
                    return 1;
                }
                sh->ev_pos[nev][lane] = at;
                sh->ev_out[nev][lane] = *out;
                sh->ev_m[nev][lane] = *m;
                sh->ev_eob[nev][lane] = after;
                sh->ev_kind[nev][lane] = (uint8_t)(past ? ZI_E_TRUNC : t == ZI_T_EOB ? 0 : -t);
                sh->nev[lane] = (uint8_t)++nev;
            }
            if (past) {
                zi_br_init(b, b->p, b->n, at);
                return 1;
            }
            if (t != ZI_T_EOB) zi_br_init(b, b->p, b->n, at + 1);
        }
    }
    return 0;
}

/* Pass 1: lane `lane` decodes its segment from its start guess; then (zi_pass1_sync) meets its successor. */
ZI_FN void zi_pass1(zi_shared *sh, const uint8_t *in, uint32_t lane) {
    const uint32_t s0 = sh->bitpos + lane * sh->seg, s1 = s0 + sh->seg;
    for (uint32_t w = 0; w < ZI_BMW; w++) sh->bm[w][lane] = 0;
    sh->nev[lane] = 0;
    uint32_t out = 0, m = 0, stat = ZI_S_RUN;
    zi_br b;
    zi_br_init(&b, in, (sh->nbits + 7) >> 3, s0 < sh->nbits ? s0 : sh->nbits);
    if (s0 >= sh->nbits) { /* lane 0: the stream ended inside a block; others: the chain breaks here */
        stat = lane ? ZI_S_STOP : ZI_S_ERR;
        sh->err[lane] = ZI_E_TRUNC;
    } else if (zi_walk(sh, &b, lane, s0, s1, 1, &out, &m)) {
        stat = ZI_S_STOP;
    }
    sh->stat[lane] = (uint8_t)stat;
    sh->mark_end[lane] = stat == ZI_S_RUN ? s1 : b.pos + 1; /* a stopped lane marked its last boundary too */
    sh->p[lane] = b.pos;
    sh->out[lane] = out;
    sh->m[lane] = m;
}

/* Lane `lane` decodes on from where it left its segment until it lands on a boundary of its successor's path
 * (from there the two paths are one), or meets an end of block or an invalid code (real if this lane's path
 * is), or runs out of the successor's segment, when it goes on into the next lane's (up to ZI_ABSORB of them;
 * past that the chain breaks). */
ZI_FN void zi_pass1_sync(zi_shared *sh, const uint8_t *in, uint32_t lane) {
    if (sh->stat[lane] != ZI_S_RUN) return;
    if (lane + 1 == ZI_NL) {
        sh->stat[lane] = ZI_S_STOP;
        return;
    }
    uint32_t nx = lane + 1, s1 = sh->bitpos + nx * sh->seg;
    uint32_t limit = sh->mark_end[nx]; /* the successor's marks end here (the successor is changing its p) */
    uint32_t out = sh->out[lane], m = sh->m[lane], stat = ZI_S_RUN;
    sh->xpos[0][lane] = sh->p[lane]; /* pass 1 stopped at the first boundary in the successor's segment */
    sh->xout[0][lane] = out;
    sh->xm[0][lane] = m;
    zi_br b;
    zi_br_init(&b, in, (sh->nbits + 7) >> 3, sh->p[lane]);
    for (;;) {
        const uint32_t at = b.pos;
        if (at - s1 >= sh->seg) { /* past the successor's segment: on to the next, a few times */
            if (nx + 1 == ZI_NL || nx - lane == ZI_ABSORB) {
                stat = ZI_S_STOP;
                break;
            }
            nx++;
            s1 += sh->seg;
            limit = sh->mark_end[nx];
            if (nx - lane - 1 < ZI_XCAP) { /* at: the path's first boundary in segment nx */
                sh->xpos[nx - lane - 1][lane] = at;
                sh->xout[nx - lane - 1][lane] = out;
                sh->xm[nx - lane - 1][lane] = m;
            }
            continue;
        }
        if (at < limit && ((sh->bm[(at - s1) >> 5][nx] >> ((at - s1) & 31)) & 1u)) {
            stat = ZI_S_SYNC;
            break;
        }
        uint32_t a, d;
        const int t = zi_token(&b, sh->lt, sh->dt, &a, &d);
        if (t < 0 || b.pos > sh->nbits) {
            stat = ZI_S_ERR;
            sh->err[lane] = (uint8_t)(t < 0 ? -t : ZI_E_TRUNC);
            b.pos = at;
            break;
        }
        if (t == ZI_T_EOB) {
            stat = ZI_S_EOB;
            sh->eob_end[lane] = b.pos;
            b.pos = at;
            break;
        }
        out += t == ZI_T_LIT ? 1 : a;
        m += t == ZI_T_MATCH;
    }
    sh->syncto[lane] = (uint16_t)nx;
    sh->stat[lane] = (uint8_t)stat;
    sh->p[lane] = b.pos;
    sh->out[lane] = out;
    sh->m[lane] = m;
}

/* The chain of meetings from lane 0, in parallel (one lane walking 512 lanes took a third of the time):
 *   members  lane 0, the lane it met, the lane that one met, ...: pointer doubling over `met` (the lane a lane's
 *            path met, none where it did not), double-buffered, log2(ZI_NL) rounds;
 *   ranges   each member tells the lane it met where its true range starts, and marks the lanes it passed
 *            through empty; each member then finds the first event on its true range;
 *   end      the first member that does not go on (a real event, no meeting) ends the window. */
#define ZI_NONE 0xffffu
ZI_FN void zi_chain_init(zi_shared *sh, uint32_t lane) {
    sh->member[lane] = lane == 0;
    sh->npiece[lane] = 0;
    sh->met[0][lane] = sh->stat[lane] == ZI_S_SYNC ? sh->syncto[lane] : (uint16_t)ZI_NONE;
    if (lane == 0) {
        sh->from[0] = sh->bitpos;
        sh->first_end = ZI_NL;
        sh->cut = ZI_NL;
    }
}

/* Round r: a member marks the lane 2^r meetings ahead; every lane's pointer doubles. */
ZI_FN void zi_chain_round(zi_shared *sh, uint32_t lane, uint32_t r) {
    const uint16_t *cur = sh->met[r & 1];
    const uint32_t t = cur[lane];
    if (sh->member[lane] && t != ZI_NONE) sh->member[t] = 1;
    sh->met[(r + 1) & 1][lane] = (uint16_t)(t == ZI_NONE ? ZI_NONE : cur[t]);
}

/* A member whose path passed through lanes before it met one gives each of them (up to ZI_XCAP) a piece of its
 * range to decode in pass 2: from where its path entered that lane's segment to where it entered the next
 * one's (the last piece: to the meeting). Pass 2 takes as long as its longest range: ranges spanning several
 * segments (a tenth of the lanes on noisy 16-bit images) made it three times the mean. Lanes past the pieces
 * hold nothing. */
ZI_FN void zi_chain_ranges(zi_shared *sh, uint32_t lane) {
    if (!sh->member[lane] || sh->stat[lane] != ZI_S_SYNC) return;
    const uint32_t q = sh->p[lane], met = sh->syncto[lane];
    sh->from[met] = q;
    const uint32_t pieces = met - lane - 1 < ZI_XCAP ? met - lane - 1 : ZI_XCAP;
    sh->npiece[lane] = (uint8_t)pieces;
    for (uint32_t k = lane + 1; k < met; k++) {
        const uint32_t j = k - lane - 1;
        if (j < pieces) {
            sh->from[k] = sh->xpos[j][lane];
            sh->to[k] = j + 1 < pieces ? sh->xpos[j + 1][lane] : q;
            sh->piece_owner[k] = (uint16_t)lane;
            sh->piece_j[k] = (uint8_t)j;
            sh->end_ev[k] = ZI_EV + 2;
        } else {
            sh->from[k] = sh->to[k] = q;
            sh->end_ev[k] = ZI_EV + 1;
        }
    }
}

ZI_FN void zi_chain_end(zi_shared *sh, uint32_t lane) {
    if (!sh->member[lane]) return;
    const uint32_t q = sh->from[lane];
    uint32_t e = 0;
    while (e < sh->nev[lane] && sh->ev_pos[e][lane] < q) e++;
    const int ends = e < sh->nev[lane] || sh->stat[lane] != ZI_S_SYNC; /* the first event on a true path is real */
    sh->end_ev[lane] = (uint8_t)(e < sh->nev[lane] ? e : ZI_EV);
    /* (events lie in pass 1's part of the path, before any piece given away) */
    sh->to[lane] = e < sh->nev[lane] ? sh->ev_pos[e][lane] : sh->npiece[lane] ? sh->xpos[0][lane] : sh->p[lane];
    if (ends) ZI_ATOMIC_MIN(&sh->first_end, lane);
}

/* One lane: how the window ends, at the chain's last member. */
ZI_FN void zi_chain_result(zi_shared *sh) {
    const uint32_t i = sh->first_end; /* the chain's last member always ends: i < ZI_NL */
    const uint32_t e = sh->end_ev[i];
    sh->nvalid = i + 1;
    sh->wres = ZI_W_CONT;
    if (e < ZI_EV) {
        if (sh->ev_kind[e][i]) {
            sh->wres = ZI_W_ERR;
            sh->err_code = sh->ev_kind[e][i];
        } else {
            sh->wres = ZI_W_EOB;
            sh->next = sh->ev_eob[e][i];
        }
    } else if (sh->stat[i] == ZI_S_ERR) {
        sh->wres = ZI_W_ERR;
        sh->err_code = sh->err[i];
    } else if (sh->stat[i] == ZI_S_EOB) {
        sh->wres = ZI_W_EOB;
        sh->next = sh->eob_end[i];
    } else {
        sh->next = sh->p[i]; /* ZI_S_STOP: a true boundary where the chain broke */
    }
}

/* Each true lane after the first retraces its path from its segment start to where its true range begins,
 * counting: its range's counts are those at its end minus these (left in lane_out / lane_m). */
ZI_FN void zi_prefix(zi_shared *sh, const uint8_t *in, uint32_t lane) {
    uint32_t out = 0, m = 0;
    if (lane > 0 && lane < sh->nvalid && sh->end_ev[lane] <= ZI_EV) {
        const uint32_t s0 = sh->bitpos + lane * sh->seg;
        zi_br b;
        zi_br_init(&b, in, (sh->nbits + 7) >> 3, s0);
        zi_walk(sh, &b, lane, s0, sh->from[lane], 0, &out, &m);
    }
    /* the range's counts: those at its end (an event, where it gave the rest away as pieces, or where the lane
     * stopped) minus those before it; a piece's: its owner's counts at its two ends */
    const uint32_t e = sh->end_ev[lane];
    const int in_chain = lane < sh->nvalid && e <= ZI_EV;
    if (in_chain) {
        const int given = e == ZI_EV && sh->npiece[lane];
        sh->lane_out[lane] = (e < ZI_EV ? sh->ev_out[e][lane] : given ? sh->xout[0][lane] : sh->out[lane]) - out;
        sh->lane_m[lane] = (e < ZI_EV ? sh->ev_m[e][lane] : given ? sh->xm[0][lane] : sh->m[lane]) - m;
    } else if (lane < sh->nvalid && e == ZI_EV + 2) {
        const uint32_t o = sh->piece_owner[lane], j = sh->piece_j[lane], last = j + 1 == sh->npiece[o];
        sh->lane_out[lane] = (last ? sh->out[o] : sh->xout[j + 1][o]) - sh->xout[j][o];
        sh->lane_m[lane] = (last ? sh->m[o] : sh->xm[j + 1][o]) - sh->xm[j][o];
    } else {
        sh->lane_out[lane] = 0;
        sh->lane_m[lane] = 0;
    }
}

/* Output offsets and match indices of the true lanes (their counts: lane_out / lane_m after zi_prefix): an
 * inclusive scan in log2(ZI_NL) double-buffered rounds. A window decoding to more than ZI_JUMP_BYTES copies its
 * list of matches in order, which pays per match (a run of adjacent matches with one distance is one copy):
 * worth it only where matches average over ZI_LIST_MIN_BYTES (zeros, the label runs of zlib's blocks);
 * otherwise the window ends early, at the first lane past that size (libdeflate's label blocks: 211K matches
 * in order took 380 ms a chunk). The first lane alone holds at most ZI_MCAP matches. */
#define ZI_LIST_MIN_BYTES 1024
ZI_FN void zi_scan_init(zi_shared *sh, uint32_t lane) {
    const int in = lane < sh->nvalid;
    sh->inc_o[0][lane] = in ? sh->lane_out[lane] : 0;
    sh->inc_m[0][lane] = in ? sh->lane_m[lane] : 0;
}

ZI_FN void zi_scan_round(zi_shared *sh, uint32_t lane, uint32_t r) {
    const uint32_t d = 1u << r, a = r & 1, b = a ^ 1;
    sh->inc_o[b][lane] = sh->inc_o[a][lane] + (lane >= d ? sh->inc_o[a][lane - d] : 0);
    sh->inc_m[b][lane] = sh->inc_m[a][lane] + (lane >= d ? sh->inc_m[a][lane - d] : 0);
}

ZI_FN void zi_scan_cut(zi_shared *sh, uint32_t lane, uint32_t rounds) {
    const uint32_t f = rounds & 1, no = sh->inc_o[f][lane], nm = sh->inc_m[f][lane];
    sh->obase[lane] = no - (lane < sh->nvalid ? sh->lane_out[lane] : 0);
    sh->mbase[lane] = nm - (lane < sh->nvalid ? sh->lane_m[lane] : 0);
    if (lane > 0 && lane < sh->nvalid && no > ZI_JUMP_BYTES && (nm > ZI_MCAP || (uint64_t)nm * ZI_LIST_MIN_BYTES > no))
        ZI_ATOMIC_MIN(&sh->cut, lane);
}

/* One lane: the window's size and match count, ending it early at the cut. */
ZI_FN void zi_resolve(zi_shared *sh) {
    sh->stat_windows++;
    if (sh->cut < sh->nvalid) { /* the window ends where this lane starts */
        sh->nvalid = sh->cut;
        sh->wres = ZI_W_CONT;
        sh->next = sh->from[sh->cut];
    }
    const uint32_t last = sh->nvalid - 1;
    const uint32_t o = sh->obase[last] + sh->lane_out[last], m = sh->mbase[last] + sh->lane_m[last];
    sh->stat_short += sh->wres == ZI_W_CONT && sh->nvalid < ZI_NL;
    if ((uint64_t)sh->outpos + o > sh->cap) {
        sh->wres = ZI_W_ERR;
        sh->err_code = ZI_E_OVERFLOW;
        return;
    }
    sh->wout = o;
    sh->nmatch = m;
}

/* Lane `lane` of the true chain decodes its range again: literals to out, matches to the list, or (jump mode)
 * for every match byte x at window offset x - outpos, src[x - outpos] = x - dist + 1 (0 stays: a literal). A
 * distance past the output's start sets err2. */
ZI_FN void zi_pass2(zi_shared *sh, const uint8_t *in, void *out, zi_match *ml, uint32_t *src, uint32_t lane) {
    if (lane >= sh->nvalid) return;
    const uint32_t wide = sh->wide;
    zi_br b;
    zi_br_init(&b, in, (sh->nbits + 7) >> 3, sh->from[lane]);
    uint32_t o = sh->outpos + sh->obase[lane], mi = sh->mbase[lane];
    const uint32_t end = sh->to[lane];
    while (b.pos < end) {
        uint32_t a, d;
        const int t = zi_token(&b, sh->lt, sh->dt, &a, &d);
        if (t == ZI_T_LIT) {
            zi_put(out, wide, o++, a);
        } else if (t == ZI_T_MATCH) {
            if (d > o) {
                sh->err2 = ZI_E_DIST;
                return;
            }
            if (sh->jump) {
                uint32_t *x = src + (o - sh->outpos); /* (jump: the window decodes to <= ZI_JUMP_BYTES) */
                for (uint32_t k = 0; k < a; k++) x[k] = o + k - d + 1;
            } else if (mi < ZI_MCAP) { /* (a list window holds at most ZI_MCAP: see zi_scan_cut) */
                ml[mi].pos = o;
                ml[mi].len = (uint16_t)a;
                ml[mi].dist = (uint16_t)d;
                mi++;
            } else {
                sh->err2 = ZI_E_TOO_BIG; /* cannot happen (ZI_MCAP is above the bound): never drop a match */
                return;
            }
            o += a;
        } else {
            sh->err2 = ZI_E_SYMBOL; /* pass 1 decoded the same bits: cannot happen */
            return;
        }
    }
}

/* Bytes [pos, pos + len) := the bytes dist back, where the source may overlap the destination (period dist):
 * byte k copies from pos - dist + k % dist, a source written before the run starts. Lane wl of 32. */
ZI_FN void zi_copy_run(void *out, uint32_t wide, uint32_t pos, uint32_t len, uint32_t dist, uint32_t wl) {
    const uint32_t src = pos - dist;
    if (dist >= len) {
        for (uint32_t k = wl; k < len; k += 32) zi_put(out, wide, pos + k, zi_at(out, wide, src + k));
        return;
    }
    const uint32_t step = 32 % dist;
    uint32_t r = wl < dist ? wl : wl % dist;
    for (uint32_t k = wl; k < len; k += 32) {
        zi_put(out, wide, pos + k, zi_at(out, wide, src + r));
        r += step;
        if (r >= dist) r -= dist;
    }
}

#endif
