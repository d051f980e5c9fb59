/* zgpu's DEFLATE decoder, part 5 of 6 (see inflate_rules.h): the driver, the phases of one stream (or one part
 * of it) in order, from block headers and tables to the windows or serial mode, and the verdict. */
#ifndef ZG_INFLATE_DRIVER_H
#define ZG_INFLATE_DRIVER_H
#include "gpucodec/deflate/inflate_serial.h"

/* ------------------------------------------------------------------------------------------------ driver */
/* The phases of one stream. On the GPU every thread of the block runs zi_stream with its own lane; ZI_ALL
 * runs a statement on every lane then waits for all, ZI_ONE on lane 0, ZI_WARP on the lanes of warp 0 (only
 * warp 0 runs the match copier). On the host (the unit test) the same macros run the lanes one after
 * another. Control flow between phases reads only uniform fields, which only ZI_ONE writes; on the GPU it
 * waits before lane 0 writes too, so that every lane has read them (a loop condition, say) by then. */
#ifdef __CUDA_ARCH__
#define ZI_ALL(...) do { { const uint32_t lane = threadIdx.x; (void)lane; __VA_ARGS__; } __syncthreads(); } while (0)
/* ZI_ALL for the phases serial-mode blocks run too: a block of fewer threads (ZI_SERIAL_NL) runs the lanes in
 * turns (the windows' phases, which serial-mode blocks never run, keep one lane a thread) */
#define ZI_EACH(...) do { for (uint32_t lane = threadIdx.x; lane < ZI_NL; lane += blockDim.x) { __VA_ARGS__; } __syncthreads(); } while (0)
#define ZI_ONE(...) do { __syncthreads(); if (threadIdx.x == 0) { __VA_ARGS__; } __syncthreads(); } while (0)
#define ZI_WARP(...) do { { const uint32_t wl = threadIdx.x & 31; (void)wl; __VA_ARGS__; } __syncwarp(); } while (0)
#define ZI_TICK(k)                                                                                           \
    do {                                                                                                     \
        if (threadIdx.x == 0) {                                                                              \
            const long long zi_now = clock64();                                                              \
            sh->tick[k] += zi_now - sh->tick_last;                                                           \
            sh->tick_last = zi_now;                                                                          \
        }                                                                                                    \
    } while (0)
#else
#define ZI_TICK(k) do { } while (0)
#define ZI_ALL(...) do { for (uint32_t lane = 0; lane < ZI_NL; lane++) { __VA_ARGS__; } } while (0)
#define ZI_EACH ZI_ALL
#define ZI_ONE(...) do { __VA_ARGS__; } while (0)
#define ZI_WARP(...) do { for (uint32_t wl = 0; wl < 32; wl++) { __VA_ARGS__; } } while (0)
#endif

/* Pointer jumping (windows decoding to at most ZI_JUMP_BYTES): src[x] of a match byte names the byte it copies
 * (+1), which may itself be a match byte of this window. Each round, every byte whose source is such a byte
 * takes that byte's source instead, so a chain of any depth is resolved in about log2(depth) rounds (the
 * lanes update src in place: every value read is still a byte further up the same chain). Then every match
 * byte copies from a final byte: a literal of this window or a byte of an earlier one. Low-ratio volumes
 * hold thousands of short matches a window, in chains: one warp copying them in order took 500 cycles a
 * match. */
ZI_FN void zi_jump_clear(zi_shared *sh, uint32_t *src, uint32_t lane) {
    for (uint32_t x = lane; x < sh->wout; x += ZI_NL) src[x] = 0;
}

ZI_FN void zi_jump_round(zi_shared *sh, uint32_t *src, uint32_t lane) {
    const uint32_t o0 = sh->outpos, n = sh->wout;
    uint32_t moved = 0;
    for (uint32_t x0 = lane; x0 < n; x0 += 4 * ZI_NL) { /* four bytes a step: their loads overlap */
        uint32_t v[4], w[4];
        for (int k = 0; k < 4; k++) {
            const uint32_t x = x0 + (uint32_t)k * ZI_NL;
            v[k] = x < n ? src[x] : 0;
        }
        for (int k = 0; k < 4; k++) /* 0: a literal; below o0: copies an earlier window's byte */
            w[k] = v[k] != 0 && v[k] - 1 >= o0 ? src[v[k] - 1 - o0] : 0;
        for (int k = 0; k < 4; k++)
            if (w[k]) { /* else it copies a literal */
                src[x0 + (uint32_t)k * ZI_NL] = w[k];
                moved = 1;
            }
    }
    if (moved) sh->jumped = 1;
}

ZI_FN void zi_jump_copy(zi_shared *sh, void *out, const uint32_t *src, uint32_t lane) {
    const uint32_t o0 = sh->outpos, n = sh->wout, wide = sh->wide;
    for (uint32_t x = lane; x < n; x += ZI_NL) {
        const uint32_t v = src[x];
        if (v) zi_put(out, wide, o0 + x, zi_at(out, wide, v - 1));
    }
}

/* Warp 0: the matches of a window too large for pointer jumping, in order. Adjacent matches with one distance
 * are one periodic run (label volumes: thousands of 258-byte matches at one distance); the warp fences (its
 * barrier orders its lanes' memory accesses) after each run, as a run may read the last. */
ZI_FN void zi_matches(zi_shared *sh, void *out, const zi_match *ml) {
    const uint32_t n = sh->nmatch;
    uint32_t i = 0;
    while (i < n) {
        const uint32_t lo = i, hi = n - i < ZI_STAGE ? n : i + ZI_STAGE;
        ZI_WARP(for (uint32_t k = lo + wl; k < hi; k += 32) sh->stage[k - lo] = ml[k]);
        while (i < hi) {
            const zi_match m0 = sh->stage[i - lo];
            uint32_t end = m0.pos + m0.len;
            for (i++; i < hi && sh->stage[i - lo].pos == end && sh->stage[i - lo].dist == m0.dist; i++)
                end += sh->stage[i - lo].len;
            ZI_WARP(zi_copy_run(out, sh->wide, m0.pos, end - m0.pos, m0.dist, wl));
        }
    }
}

/* The header's bytes into sh->hdr (every lane; bytes past the stream read as zero, as the bit reader's do). */
ZI_FN void zi_header_stage(zi_shared *sh, const uint8_t *in, uint32_t lane) {
    const uint32_t nbytes = (sh->nbits + 7) >> 3, byte0 = sh->bitpos >> 3;
    for (uint32_t k = lane; k < ZI_HDR_BYTES; k += ZI_NL) sh->hdr[k] = byte0 + k < nbytes ? in[byte0 + k] : 0;
}

/* Block header at sh->bitpos (lane 0, from sh->hdr): stored blocks get their length checked, Huffman blocks
 * their code lengths in sh->lens. The reader's positions are relative to the header's first byte. */
ZI_FN void zi_block_header(zi_shared *sh, const uint8_t *in) {
    zi_br b;
    const uint32_t nbytes = (sh->nbits + 7) >> 3, byte0 = sh->bitpos >> 3, base = byte0 * 8;
    const uint32_t nbits = sh->nbits - base; /* bitpos < nbits: a block starts before the stream's end */
    zi_br_init(&b, sh->hdr, nbytes - byte0 < ZI_HDR_BYTES ? nbytes - byte0 : ZI_HDR_BYTES, sh->bitpos & 7);
    sh->block_final = zi_get(&b, 1);
    sh->btype = zi_get(&b, 2);
    if (sh->bitpos >= sh->nbits || b.pos > nbits) {
        sh->err_code = ZI_E_TRUNC;
    } else if (sh->btype == 3) {
        sh->err_code = ZI_E_BTYPE;
    } else if (sh->btype == 0) {
        const uint32_t at = byte0 + ((b.pos + 7) >> 3);
        if (nbytes - at < 4 || at > nbytes) {
            sh->err_code = ZI_E_TRUNC;
            return;
        }
        const uint32_t len = in[at] | (uint32_t)in[at + 1] << 8, nlen = in[at + 2] | (uint32_t)in[at + 3] << 8;
        if (len != (~nlen & 0xffffu)) sh->err_code = ZI_E_STORED;
        else if (len > nbytes - at - 4) sh->err_code = ZI_E_TRUNC;
        else if (len > sh->cap - sh->outpos) sh->err_code = ZI_E_OVERFLOW;
        sh->stored_len = len;
        sh->next = (at + 4) * 8; /* the stored bytes start here */
    } else if (sh->btype == 1) {
        zi_fixed_lengths(sh->lens);
        sh->bitpos = base + b.pos;
    } else { /* the code-length code here; zi_header_table, zi_header_lengths and zi_header_split go on */
        const int e = zi_dynamic_head(&b, nbits, sh->cl, sh->codes, &sh->nlit, &sh->ndist);
        if (e) sh->err_code = (uint32_t)e;
        sh->hdr_pos = b.pos;
        sh->hdr_n = b.n;
    }
}

ZI_FN void zi_header_table(zi_shared *sh, uint32_t lane) {
    for (uint32_t i = lane; i < 128; i += ZI_NL) sh->pt[i] = zi_cl_entry(sh->cl, sh->codes, i);
}

ZI_FN void zi_header_lengths(zi_shared *sh) {
    zi_br b;
    const uint32_t base = (sh->bitpos >> 3) * 8;
    zi_br_init(&b, sh->hdr, sh->hdr_n, sh->hdr_pos);
    const int e = zi_dynamic_lengths(&b, sh->nbits - base, sh->pt, sh->hdr_lens, sh->nlit + sh->ndist);
    if (e) sh->err_code = (uint32_t)e;
    sh->bitpos = base + b.pos;
}

ZI_FN void zi_header_split(zi_shared *sh, uint32_t lane) {
    for (uint32_t s = lane; s < 320; s += ZI_NL)
        sh->lens[s] = s < 288 ? (s < sh->nlit ? sh->hdr_lens[s] : 0)
                              : (s - 288 < sh->ndist ? sh->hdr_lens[sh->nlit + s - 288] : 0);
}

/* A block's two tables (literal/length: lens[0, 288), distance: lens[288, 320)), built by all lanes:
 * clear  first levels to ZI_BAD, counts of each length to 0;
 * count  lane per symbol: its length counted (shared atomics), its rank among the symbols of its table with
 *        its length and a lower number (codes[] holds it meanwhile);
 * first  one lane: each length's first canonical code, the codes checked;
 * codes  lane per symbol: reversed code = that of its length's first + its rank;
 * sub    lane per symbol: subtables (codes longer than the root), sizes then places (zi_tables_sub_*);
 * fill   every symbol's entries. One lane doing all of it took a fifth of the time on low-ratio data. */
#define ZI_TABLES(sh, lc, dc)                                                                                 \
    const zi_code lc = {(sh)->lens, (sh)->codes, (sh)->lt, 288, ZI_LROOT, ZI_LCAP, 0};                      \
    const zi_code dc = {(sh)->lens + 288, (sh)->codes + 288, (sh)->dt, 32, ZI_DROOT, ZI_DCAP, 1}

ZI_FN void zi_tables_clear(zi_shared *sh, uint32_t lane) {
    ZI_TABLES(sh, lc, dc);
    zi_table_clear(&lc, lane, ZI_NL);
    zi_table_clear(&dc, lane, ZI_NL);
    if (lane < 32) sh->lcount[lane >> 4][lane & 15] = 0;
    for (uint32_t i = lane; i < 1280; i += ZI_NL) {
        sh->sub_bits[i] = 0;
        sh->sub_owner[i] = 0xffffffffu;
    }
    if (lane == 0) {
        sh->sub_at[0] = 1u << ZI_LROOT;
        sh->sub_at[1] = 1u << ZI_DROOT;
        sh->sub_err = 0;
    }
}

ZI_FN void zi_tables_count(zi_shared *sh, uint32_t lane) {
    for (uint32_t s = lane; s < 320; s += ZI_NL) {
        const uint32_t l = sh->lens[s], t = s >= 288, lo = t ? 288 : 0;
        if (!l) continue;
        uint32_t r = 0;
        for (uint32_t k = lo; k < s; k++) r += sh->lens[k] == l;
        sh->codes[s] = (uint16_t)r;
        zi_fetch_add(&sh->lcount[t][l], 1u);
    }
}

ZI_FN void zi_tables_first(zi_shared *sh) {
    const int e = zi_code_first(sh->lcount[0], sh->lfirst[0]);
    sh->err_code = (uint32_t)(e ? e : zi_code_first(sh->lcount[1], sh->lfirst[1]));
}

ZI_FN void zi_tables_codes(zi_shared *sh, uint32_t lane) {
    for (uint32_t s = lane; s < 320; s += ZI_NL) {
        const uint32_t l = sh->lens[s];
        if (l) sh->codes[s] = (uint16_t)zi_reverse(sh->lfirst[s >= 288][l] + sh->codes[s], l);
    }
}

/* Subtables (codes longer than the root) in two steps over the lanes, a symbol each (one lane walking every
 * symbol twice took as long as the rest of the table build on low-ratio data, whose rare literals have long
 * codes). sizes: each prefix's subtable needs the index bits of its longest code, its lowest symbol owns it;
 * place: the owner takes room after the first level (in any order: subtables only need to be disjoint), points
 * the prefix's entry at it and clears it. The room suffices for any code zi_code_first accepted; sub_err
 * guards it all the same. */
ZI_FN void zi_tables_sub_sizes(zi_shared *sh, uint32_t lane) {
    for (uint32_t s = lane; s < 320; s += ZI_NL) {
        const uint32_t t = s >= 288, root = t ? ZI_DROOT : ZI_LROOT, l = sh->lens[s];
        if (l <= root) continue;
        const uint32_t at = (t ? 1024 : 0) + (sh->codes[s] & ((1u << root) - 1));
        ZI_ATOMIC_MAX(&sh->sub_bits[at], l - root);
        ZI_ATOMIC_MIN(&sh->sub_owner[at], s);
    }
}

ZI_FN void zi_tables_sub_place(zi_shared *sh, uint32_t lane) {
    for (uint32_t s = lane; s < 320; s += ZI_NL) {
        const uint32_t t = s >= 288, root = t ? ZI_DROOT : ZI_LROOT, l = sh->lens[s];
        if (l <= root) continue;
        const uint32_t prefix = sh->codes[s] & ((1u << root) - 1), at = (t ? 1024 : 0) + prefix;
        if (sh->sub_owner[at] != s) continue;
        const uint32_t bits = sh->sub_bits[at], size = 1u << bits, cap = t ? ZI_DCAP : ZI_LCAP;
        const uint32_t off = zi_fetch_add(&sh->sub_at[t], size);
        if (off + size > cap) {
            sh->sub_err = ZI_E_CODE;
            continue;
        }
        uint32_t *tab = t ? sh->dt : sh->lt;
        tab[prefix] = ZI_ENTRY(root, ZI_SUB, bits, off);
        for (uint32_t i = 0; i < size; i++) tab[off + i] = ZI_ENTRY(0, ZI_BAD, 0, 0);
    }
}

ZI_FN void zi_tables_fill(zi_shared *sh, uint32_t lane) {
    ZI_TABLES(sh, lc, dc);
    zi_table_fill(&lc, lane, ZI_NL);
    zi_table_fill(&dc, lane, ZI_NL);
}

/* The verdict on a decode: a part that stopped where a later one starts is fine as far as it went; a whole
 * stream (narrow, no stops) must fill its output exactly; whatever reached the final block must end there. */
ZI_FN int zi_verdict(const zi_shared *sh) {
    uint32_t e = sh->err_code;
    if (!e && sh->stopped) return ZI_OK;
    if (!e && !sh->wide && !sh->nstops && sh->outpos != sh->cap) e = ZI_E_SIZE;
    if (!e && (sh->bitpos + 7) >> 3 != (sh->nbits + 7) >> 3) e = ZI_E_TRAILING;
    return (int)e;
}

/* Before each block of a part: does a later part start here? */
ZI_FN void zi_part_stop(zi_shared *sh) {
    for (uint32_t m = 0; m < sh->nstops; m++)
        if (sh->bitpos == sh->stops[m]) {
            sh->stopped = 1;
            sh->end_part = m;
            return;
        }
}

/* What to decode: from bit `start` (a block header), to the first block that starts at one of stops[0, nstops)
 * (then sh->stopped, sh->end_part = its index), else to the final block; into cap elements of out, 16-bit
 * ones (wide) after ZI_WINDOW marks. A whole stream: start 0, no stops, bytes. */
typedef struct zi_spec {
    uint32_t start, nstops, wide, cap;
    uint32_t serial; /* serial mode (zi_serial_wanted of the whole stream, for each of its parts) */
    uint32_t seg;    /* bits each lane starts apart (zi_seg_wanted of the whole stream; 0: ZI_SEG_BITS) */
    uint32_t stops[ZI_MAX_PARTS];
} zi_spec;

/* Bits each lane of a window starts apart, for a stream of nbytes decoding to cap bytes. A window's matches
 * resolve by pointer jumping over its output, in rounds that grow with how far its copies chain, so a window
 * that decodes to much (a well-compressing stream) is better narrower: half the bits a lane from 3:1 on (H100,
 * a 3-band 8-bit TIFF's 256 Deflate tiles at 5:1, whole reads, two rounds: 11.3 / 11.2 -> 10.7 / 10.6 ms);
 * low-ratio streams would pay the windows' fixed costs twice as often: none narrower there. */
#define ZI_NARROW_RATIO 3u
ZI_FN uint32_t zi_seg_wanted(uint32_t nbytes, uint32_t cap) {
    return (uint64_t)cap >= (uint64_t)ZI_NARROW_RATIO * nbytes ? ZI_SEG_BITS / 2 : ZI_SEG_BITS;
}

/* Decodes the raw DEFLATE stream in[0, nbytes) as spec says; scratch: ZI_SCRATCH bytes (a match list and the
 * pointer-jumping sources). Afterwards zi_verdict() and sh->outpos - sh->out0 elements written. */
#define ZI_SCRATCH (ZI_MCAP * sizeof(zi_match) + ZI_JUMP_BYTES * sizeof(uint32_t))
ZI_FN void zi_decode(zi_shared *sh, const uint8_t *in, uint32_t nbytes, void *out, void *scratch, const zi_spec *spec) {
    zi_match *ml = (zi_match *)scratch;
    uint32_t *src = (uint32_t *)(ml + ZI_MCAP);
    ZI_ONE(sh->bitpos = spec->start; sh->nbits = nbytes * 8; sh->wide = spec->wide;
           sh->out0 = spec->wide ? ZI_WINDOW : 0; sh->outpos = sh->out0; sh->cap = spec->cap; sh->block_final = 0;
           sh->nstops = spec->nstops; for (uint32_t m = 0; m < spec->nstops; m++) sh->stops[m] = spec->stops[m];
           sh->stopped = 0; sh->end_part = spec->nstops; sh->serial = spec->serial; sh->swin_lo = sh->outpos;
           sh->seg = spec->seg >= 32 && spec->seg < ZI_SEG_BITS ? spec->seg & ~31u : ZI_SEG_BITS;
           sh->stat_windows = 0; sh->stat_short = 0; sh->stat_rounds = 0;
           for (int k = 0; k < ZI_PHASES; k++) sh->tick[k] = 0; ZI_TICK(0); sh->tick[0] = 0;
           sh->err_code = nbytes > ZI_MAX_BYTES || spec->cap > ZI_MAX_BYTES || sh->out0 > spec->cap ? ZI_E_TOO_BIG : 0);
    if (sh->wide && !sh->err_code) ZI_EACH(for (uint32_t k = lane; k < ZI_WINDOW; k += ZI_NL) zi_put(out, 1, k, 255 + ZI_WINDOW - k));
    while (!sh->err_code) {
        if (sh->nstops) {
            ZI_ONE(zi_part_stop(sh));
            if (sh->stopped) break;
        }
        ZI_EACH(zi_header_stage(sh, in, lane));
        ZI_ONE(zi_block_header(sh, in));
        if (!sh->err_code && sh->btype == 2) {
            ZI_EACH(zi_header_table(sh, lane));
            ZI_ONE(zi_header_lengths(sh));
            if (!sh->err_code) ZI_EACH(zi_header_split(sh, lane));
        }
        ZI_TICK(0);
        if (sh->err_code) break;
        if (sh->btype == 0) {
            const uint32_t from = sh->next >> 3, len = sh->stored_len, o = sh->outpos;
            ZI_EACH(for (uint32_t k = lane; k < len; k += ZI_NL) zi_put(out, sh->wide, o + k, in[from + k]));
            ZI_ONE(sh->outpos += len; sh->bitpos = sh->next + len * 8; sh->swin_lo = sh->outpos);
            ZI_TICK(0);
        } else {
            ZI_EACH(zi_tables_clear(sh, lane));
            ZI_EACH(zi_tables_count(sh, lane));
            ZI_ONE(zi_tables_first(sh));
            if (sh->err_code) break;
            ZI_EACH(zi_tables_codes(sh, lane));
            ZI_EACH(zi_tables_sub_sizes(sh, lane));
            ZI_EACH(zi_tables_sub_place(sh, lane));
            if (sh->sub_err) {
                ZI_ONE(sh->err_code = sh->sub_err);
                break;
            }
            ZI_EACH(zi_tables_fill(sh, lane));
            ZI_TICK(1);
            if (sh->serial) {
                ZI_ONE(sh->s_prod = 0; sh->s_cons = 0);
                zi_serial_block(sh, in, out);
                ZI_TICK(7);
                if (sh->err_code) break;
            } else for (;;) {
                ZI_ALL(zi_pass1(sh, in, lane));
                ZI_TICK(2);
                ZI_ALL(zi_pass1_sync(sh, in, lane));
                ZI_TICK(3);
                ZI_ALL(zi_chain_init(sh, lane));
                for (uint32_t r = 0; (1u << r) < ZI_NL; r++) ZI_ALL(zi_chain_round(sh, lane, r));
                ZI_ALL(zi_chain_ranges(sh, lane));
                ZI_ALL(zi_chain_end(sh, lane));
                ZI_ONE(zi_chain_result(sh));
                if (sh->wres == ZI_W_ERR) break;
                ZI_ALL(zi_prefix(sh, in, lane));
                ZI_ALL(zi_scan_init(sh, lane));
                uint32_t rounds = 0;
                for (; (1u << rounds) < ZI_NL; rounds++) ZI_ALL(zi_scan_round(sh, lane, rounds));
                ZI_ALL(zi_scan_cut(sh, lane, rounds));
                ZI_ONE(zi_resolve(sh); sh->err2 = 0; sh->jump = sh->nmatch && sh->wout <= ZI_JUMP_BYTES);
                if (sh->wres == ZI_W_ERR) break;
                ZI_TICK(4);
                if (sh->jump) ZI_ALL(zi_jump_clear(sh, src, lane));
                ZI_ALL(zi_pass2(sh, in, out, ml, src, lane));
                ZI_TICK(5);
                if (sh->err2) break;
                if (sh->jump) {
                    do {
                        ZI_ONE(sh->jumped = 0; sh->stat_rounds++);
                        ZI_ALL(zi_jump_round(sh, src, lane));
                    } while (sh->jumped);
                    ZI_ALL(zi_jump_copy(sh, out, src, lane));
                }
                ZI_TICK(6);
                if (sh->nmatch && !sh->jump) {
#ifdef __CUDA_ARCH__
                    if (threadIdx.x < 32) zi_matches(sh, out, ml);
                    __syncthreads();
#else
                    zi_matches(sh, out, ml);
#endif
                }
                ZI_TICK(7);
                ZI_ONE(sh->outpos += sh->wout; sh->bitpos = sh->next);
                if (sh->wres == ZI_W_EOB) break;
            }
            if (!sh->serial && (sh->wres == ZI_W_ERR || sh->err2)) {
                ZI_ONE(if (!sh->err_code) sh->err_code = sh->err2); /* (a window error set err_code already) */
                break;
            }
        }
        if (sh->block_final) break;
    }
}

/* A whole stream into out[0, cap), which it must fill exactly. *status: ZI_OK or ZI_E_*; *actual: bytes written. */
ZI_FN void zi_stream(zi_shared *sh, const uint8_t *in, uint32_t nbytes, uint8_t *out, uint32_t cap, void *scratch,
                     int *status, size_t *actual) {
    zi_spec spec;
    spec.start = 0;
    spec.nstops = 0;
    spec.wide = 0;
    spec.cap = cap;
    spec.serial = zi_serial_wanted(nbytes, cap);
    spec.seg = zi_seg_wanted(nbytes, cap);
    zi_decode(sh, in, nbytes, out, scratch, &spec);
    ZI_ONE(*status = zi_verdict(sh); *actual = sh->outpos);
}

#endif
