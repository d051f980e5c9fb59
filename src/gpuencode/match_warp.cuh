// The matching zgpu's warp-per-block encoders share (zstd_encode_kernels.cu, lz4_encode_kernels.cu,
// deflate_fixed_kernels.cu): a lane matches a segment (zstd_encode.h's zg_ze_match_segment), a match that ends a
// segment runs on into the next (zg_ze_extend), and the warp joins the lanes' sequences into one list: the list
// zg_ze_match_block_ref gives the CPU references, sequence for sequence. CUDA C++, device code.
#ifndef ZG_MATCH_WARP_CUH
#define ZG_MATCH_WARP_CUH
#include <stdint.h>

#include "gpuencode/zstd_encode.h"

/* zg_ze_join's state between the segments, and the move lane 0 asks of the warp (in shared memory) */
struct zg_mw_join_state {
    uint32_t k, carry, chain;
    uint32_t from, to, count;
};

/* zg_ze_join by the warp, the same list: lane 0 walks each segment's sequences up to the first it keeps (those a
 * chain from the previous segment covers are dropped or cut, as zg_ze_join does; every later one is kept as it is),
 * then the warp moves the segment's other sequences into place, 32 at a time (in place: a sequence's new index never
 * exceeds its old one, and segments go in order). Lane 0 alone walking every sequence had been most of the kernel's
 * time. */
__device__ inline uint32_t zg_mw_join(zg_ze_seq *seqs, const zg_ze_lane *lanes, uint32_t n_lanes, uint32_t *tail_out,
                                      unsigned lane, zg_mw_join_state *js) {
    if (lane == 0) js->k = js->carry = js->chain = 0;
    __syncwarp();
    for (uint32_t l = 0; l < n_lanes; l++) {
        if (lane == 0) {
            const zg_ze_lane *ln = &lanes[l];
            const zg_ze_seq *s = seqs + (size_t)l * ZG_ZE_SEG_SEQS;
            uint32_t k = js->k, carry = js->carry, chain = js->chain, covered = 0;
            js->count = 0;
            if (chain && carry == 0 && chain == ln->ext_off && ln->ext) {
                seqs[k - 1].len += ln->ext;
                covered = ln->ext;
            }
            if (covered != ln->len) {
                uint32_t pos = 0, i = 0;
                while (i < ln->n) {
                    zg_ze_seq q = s[i++];
                    if (!zg_ze_uncover(&q, &pos, covered, &carry)) continue;
                    seqs[k++] = q;
                    break; /* the rest of the segment's sequences are kept as they are */
                }
                js->from = l * ZG_ZE_SEG_SEQS + i;
                js->to = k;
                js->count = ln->n - i;
                const uint32_t last_off = js->count ? s[ln->n - 1].off : k ? seqs[k - 1].off : 0;
                k += js->count;
                const uint32_t span = ln->len - ln->tail; /* the bytes its sequences cover */
                carry += ln->len - (span > covered ? span : covered);
                chain = carry == 0 && k ? last_off : 0;
            }
            js->k = k, js->carry = carry, js->chain = chain;
        }
        __syncwarp();
        const uint32_t from = js->from, to = js->to, count = js->count;
        if (count && from != to)
            for (uint32_t b = 0; b < count; b += 32) {
                const bool has = b + lane < count;
                zg_ze_seq v = {0, 0, 0};
                if (has) v = seqs[from + b + lane];
                __syncwarp();
                if (has) seqs[to + b + lane] = v;
                __syncwarp();
            }
        __syncwarp();
    }
    *tail_out = js->carry;
    return js->k;
}

/* The warp's sequences of c[at, at + n) in segments of seg bytes, n_lanes = ceil(n / seg) <= 32 of them: lane l
 * matches segment l with `table` (its own ZG_ZE_HASH_ENTRIES entries; lanes past the last segment only help join)
 * into seqs + l * ZG_ZE_SEG_SEQS; the joined list then starts at seqs. lanes, js: the warp's, in shared memory.
 * Returns the number of sequences, *tail the literals after the last (every lane gets both). */
__device__ inline uint32_t zg_mw_match(const uint8_t *c, uint32_t at, uint32_t n, uint32_t seg,
                                       const zg_ze_hints *hints, uint16_t *table, zg_ze_seq *seqs, zg_ze_lane *lanes,
                                       zg_mw_join_state *js, uint32_t *tail) {
    const unsigned lane = threadIdx.x & 31;
    const uint32_t nl = (n + seg - 1) / seg;
    const bool mine = lane < nl;
    const uint32_t sb = mine ? lane * seg : n, se = mine ? (sb + seg < n ? sb + seg : n) : n;
    if (mine) {
        uint32_t t = 0;
        lanes[lane].n = zg_ze_match_segment(c, at + sb, at + se, hints, table, seqs + (size_t)lane * ZG_ZE_SEG_SEQS, &t);
        lanes[lane].tail = t;
        lanes[lane].len = se - sb;
    }
    __syncwarp();
    uint32_t ext_off = 0, ext = 0;
    if (mine && lane) {
        ext_off = zg_ze_lane_end_off(&lanes[lane - 1], seqs + (size_t)(lane - 1) * ZG_ZE_SEG_SEQS);
        ext = zg_ze_extend(c, at + sb, at + se, ext_off);
    }
    __syncwarp();
    if (mine) lanes[lane].ext_off = ext_off, lanes[lane].ext = ext;
    __syncwarp();
    return zg_mw_join(seqs, lanes, nl, tail, lane, js);
}

#endif
