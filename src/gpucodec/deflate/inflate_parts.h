/* zgpu's DEFLATE decoder, part 6 of 6 (see inflate_rules.h): a stream split into parts decoded by their own
 * thread blocks: finding block headers, chaining the parts, resolving their marks. */
#ifndef ZG_INFLATE_PARTS_H
#define ZG_INFLATE_PARTS_H
#include "gpucodec/deflate/inflate_driver.h"

/* ------------------------------------------------------------------------------------------------ parts */
/* One thread block decodes a stream at 100-200 MB/s (its windows follow one another), so a batch of fewer
 * streams than the GPU has thread blocks leaves SMs idle, and a stream's decode time is the read's floor. A
 * stream is therefore split into parts, each decoded by its own thread block:
 *   find    part k > 0 of P starts at the first bit at or after k/P of the stream where a dynamic Huffman
 *           block header is valid by every rule and both of its codes are complete (zi_header_at): a
 *           guess. None there: the part is empty;
 *   decode  part 0 decodes into the output from bit 0, every other part from its guess into a buffer of 16-bit
 *           elements (ZI_WINDOW marks for the bytes before it that it cannot know, then bytes or marks); each
 *           stops at the first block that starts where a later part's guess is, else goes on to the final
 *           block;
 *   chain   part 0 is true; a part it stopped at starts at a true block boundary, so is true too, and so on to
 *           the part that decoded the final block (zi_parts_chain). A wrong guess is passed over by the part
 *           before, which decodes on (in the worst case part 0 decodes everything, as without parts). Parts in
 *           the chain have known output offsets; a part's marks take bytes of the ZI_WINDOW before it
 *           (zi_part_resolve), which may be marks of the part before: so first the last ZI_WINDOW elements of
 *           each part, in chain order, then every other element at once (any order: what they read is final);
 *   redo    a stream whose chain has an error, overflows a part's buffer or misses the expected size is decoded
 *           again whole, which gives the exact error of a whole-stream decode.
 * Nothing a guess leads to is trusted: only a part's own decode of the true bits ever reaches the output. */
#define ZI_NO_BIT 0xffffffffu
#ifndef ZI_PART_MIN_BYTES
#define ZI_PART_MIN_BYTES (256u << 10) /* a stream gets a part per this many stored bytes, at most */
#endif
/* the same for streams compressing ZI_NARROW_RATIO:1 or better (not in serial mode): their decode takes longer a
 * stored byte, and a part's guess, decode into 16-bit elements and marks cost less next to it. H200, whole reads
 * of 8192x8192 TIFFs (GB/s, a part per 256 / 96 / 48 / 32 KiB): the 3-band 8-bit image's 512x512 tiles (157 KB at
 * 5:1) 19.2 / 19.4 / 20.3 / 22.4; but a uint16 image's (310 KB at 1.7:1) 12.0-12.4 / 9.3 / 12.1-12.3 / 11.9-12.3 and
 * a float32 image's (485 KB at 2.2:1) 13.0 / 11.2 / 9.7 / 9.7 */
#ifndef ZI_PART_MIN_BYTES_DENSE
#define ZI_PART_MIN_BYTES_DENSE (32u << 10)
#endif
/* the same in serial mode, whose parser's time goes with the stored bits (a label volume's chunk: 16 MiB from
 * 314 KB stored, in zlib blocks of ~20 KB) */
#define ZI_SERIAL_PART_MIN_BYTES (32u << 10)

/* Parts a stream of nbytes stored bytes gets of a batch's P: one per min_bytes at most (ZI_PART_MIN_BYTES; the
 * unit test splits small streams). */
ZI_FN uint32_t zi_stream_parts(uint32_t nbytes, uint32_t P, uint32_t min_bytes) {
    const uint32_t most = nbytes / min_bytes;
    return P < most ? P : most ? most : 1;
}

/* Where part k of P of a stream of nbits bits begins its search, and where the search ends (the next part's). */
ZI_FN uint32_t zi_part_from(uint32_t nbits, uint32_t k, uint32_t P) { return (uint32_t)((uint64_t)nbits * k / P); }

/* The necessary part of zi_header_at's checks that needs no memory but 16 bytes of input, in registers, at the 32
 * positions c0 .. c0 + 31 (c0 a multiple of 32) at once: bit b of the result for c0 + b. Bit-sliced: a 32-bit
 * word holds one bit of each position, so that every step serves all 32 (the same steps for each, no branches):
 * block type 2, at most 286 / 30 codes, and a complete code-length code (the sum of 2^(7-l) over its lengths l,
 * added plane by plane, exactly 128). About 1 position in 1100 of random bits passes. (The finder tests every bit
 * position: per position, the code-length sum took ~300 Kcycles a round of 128 Kbit on the GPU, lanes waiting on
 * each other's loops; zi_header_at alone, whose reader and arrays the compiler keeps in local memory, took far
 * longer.) */
ZI_FN uint32_t zi_header_quick32(const uint8_t *in, uint32_t nbytes, uint32_t c0) {
    const uint32_t nbits = nbytes * 8;
    if (c0 + 17 > nbits) return 0;
    const uint32_t at = c0 >> 3;
    const uint64_t lo = (uint64_t)zi_load32(in, nbytes, at) | (uint64_t)zi_load32(in, nbytes, at + 4) << 32;
    const uint64_t hi = (uint64_t)zi_load32(in, nbytes, at + 8) | (uint64_t)zi_load32(in, nbytes, at + 12) << 32;
    /* bit s of each of the 32 positions (s < 96) */
#define ZI_LANES(s) ((uint32_t)((s) == 0 ? lo : (s) < 64 ? (lo >> (s)) | (hi << (64 - (s))) : hi >> ((s) - 64)))
    uint32_t m = ~ZI_LANES(1) & ZI_LANES(2);                           /* BTYPE 2 */
    m &= ~(ZI_LANES(4) & ZI_LANES(5) & ZI_LANES(6) & ZI_LANES(7));    /* HLIT <= 29 */
    m &= ~(ZI_LANES(9) & ZI_LANES(10) & ZI_LANES(11) & ZI_LANES(12)); /* HDIST <= 29 */
    const uint32_t room = nbits - 17 - c0; /* the last position whose 17 header bits are in the input */
    if (room < 31) m &= (2u << room) - 1;
    if (!m) return 0;
    const uint32_t h0 = ZI_LANES(13), h1 = ZI_LANES(14), h2 = ZI_LANES(15), h3 = ZI_LANES(16); /* HCLEN */
    uint32_t sum[8] = {0, 0, 0, 0, 0, 0, 0, 0}, over = 0, active = ~0u;
    for (uint32_t i = 0; i < 19; i++) {
        if (i >= 4) { /* length i is sent where i < HCLEN + 4: no longer from HCLEN = i - 4 down */
            const uint32_t k = i - 4;
            active &= ~((k & 1 ? h0 : ~h0) & (k & 2 ? h1 : ~h1) & (k & 4 ? h2 : ~h2) & (k & 8 ? h3 : ~h3));
        }
        const uint32_t p = 17 + 3 * i;
        const uint32_t l0 = ZI_LANES(p) & active, l1 = ZI_LANES(p + 1) & active, l2 = ZI_LANES(p + 2) & active;
        /* 2^(7-l) as one bit in plane 7 - l: planes 6 (l = 1) .. 0 (l = 7) */
        const uint32_t t00 = ~l2 & ~l1, t01 = ~l2 & l1, t10 = l2 & ~l1, t11 = l2 & l1;
        const uint32_t add[7] = {t11 & l0, t11 & ~l0, t10 & l0, t10 & ~l0, t01 & l0, t01 & ~l0, t00 & l0};
        uint32_t carry = 0;
        for (uint32_t q = 0; q < 8; q++) { /* add[q] and carry never both set: no carry starts below add's bit */
            const uint32_t in_q = (q < 7 ? add[q] : 0) | carry;
            carry = sum[q] & in_q;
            sum[q] ^= in_q;
        }
        over |= carry;
    }
#undef ZI_LANES
    return m & ~over & sum[7] & ~(sum[0] | sum[1] | sum[2] | sum[3] | sum[4] | sum[5] | sum[6]);
}

/* zi_header_quick32 at one position. */
ZI_FN int zi_header_quick(const uint8_t *in, uint32_t nbytes, uint32_t c) {
    return (int)(zi_header_quick32(in, nbytes, c & ~31u) >> (c & 31) & 1);
}

/* zi_header_rest's arrays (shared memory on the GPU: a slot per lane). They stay under 1 KiB: a kernel needing more
 * stack than CUDA's default reservation makes every launch resize it, waiting for the device. */
typedef struct zi_find_scratch {
    uint8_t cl[19], pt[128];
    uint16_t codes[19];
    uint32_t count[2][16], first[16];
} zi_find_scratch;

/* zi_header_at's checks after the quick ones (the finder's candidates passed those already). */
ZI_FN int zi_header_rest(const uint8_t *in, uint32_t nbytes, uint32_t c, zi_find_scratch *w) {
    const uint32_t nbits = nbytes * 8;
    zi_br b;
    zi_br_init(&b, in, nbytes, c + 3);
    uint32_t nlit, ndist;
    if (zi_dynamic_head(&b, nbits, w->cl, w->codes, &nlit, &ndist)) return 0;
    for (uint32_t i = 0; i < 128; i++) w->pt[i] = 0;
    for (uint32_t s = 0; s < 19; s++)
        if (w->cl[s])
            for (uint32_t i = w->codes[s]; i < 128; i += 1u << w->cl[s]) w->pt[i] = zi_cl_byte(s, w->cl[s]);
    if (zi_length_counts(&b, nbits, w->pt, nlit, nlit + ndist, w->count)) return 0;
    if (zi_code_first(w->count[0], w->first) || zi_code_first(w->count[1], w->first)) return 0;
    int32_t left = 1; /* complete literal/length code (zlib and libdeflate always send one) */
    for (uint32_t l = 1; l < 16; l++) left = left * 2 - (int32_t)w->count[0][l];
    return left == 0;
}

/* Whether a dynamic Huffman block header passes every check at bit c: block type 2, at most 286 / 30 codes,
 * a complete code-length code, code lengths that decode exactly, an end-of-block code, a complete
 * literal/length code and a valid distance code. Random bits pass about once in 10^7 positions or rarer; on
 * compressed data 1 position in 1250 gets past the code-length code. */
ZI_FN int zi_header_at(const uint8_t *in, uint32_t nbytes, uint32_t c, zi_find_scratch *w) {
    return zi_header_quick(in, nbytes, c) && zi_header_rest(in, nbytes, c, w);
}

/* The finder, in rounds of ZI_FIND_ROUND bits from base (a multiple of 32), by a block of ZI_NL lanes:
 *   masks  lane `lane` tests its ZI_FIND_STEP consecutive words of 32 positions (zi_find_masks), keeping those in
 *          [from, to) below *best;
 *   list   the lanes' counts, scanned in lane order (the driver's), give each lane the slots of its candidates in
 *          a list in position order (zi_find_list); a candidate past ZI_FIND_CAND slots sets *overflow;
 *   check  the listed candidates get the full check, one lane each, in parallel (zi_find_check), the smallest
 *          hit into *best.
 * Then: a hit below the overflow is the first block start at or after from; an overflow without one resumes at
 * the overflow (the list held the ZI_FIND_CAND candidates before it: every round moves on); else the next round.
 * (Checking each warp's candidates one after another on lane 0 made the finder take ~12 ms on the benchmark's
 * libdeflate streams, whose blocks are far apart: up to 2 Mbit from a part's first bit to a block start.) */
#define ZI_FIND_STEP 16                            /* consecutive words a lane tests in a round */
#define ZI_FIND_ROUND (ZI_NL * ZI_FIND_STEP * 32u) /* bits a round covers */
#define ZI_FIND_CAND 512 /* candidates a round checks (compressed data: ~1 in 1250 positions, ~100 a round) */
/* The parts kernel's static shared memory (beside its zi_shared): its job, the best start, the stream's part
 * starts, and a finder round's list, warp sums and overflow (the launch configuration counts it in). */
#define ZI_PARTS_KERNEL_SHARED ((2u + ZI_MAX_PARTS + ZI_FIND_CAND + ZI_NL / 32u + 1u) * 4u)

ZI_FN uint32_t zi_find_masks(const uint8_t *in, uint32_t nbytes, uint32_t base, uint32_t from, uint32_t to,
                             uint32_t lane, uint32_t best, uint32_t m[ZI_FIND_STEP]) {
    uint32_t n = 0;
    if (best < to) to = best;
    for (uint32_t j = 0; j < ZI_FIND_STEP; j++) {
        const uint32_t c0 = base + 32 * (lane * ZI_FIND_STEP + j);
        uint32_t w = c0 < to ? zi_header_quick32(in, nbytes, c0) : 0;
        if (c0 < from) w = from - c0 < 32 ? w & (~0u << (from - c0)) : 0;
        if (to - c0 < 32) w &= (1u << (to - c0)) - 1;
        m[j] = w;
#ifdef __CUDA_ARCH__
        n += (uint32_t)__popc(w);
#else
        n += (uint32_t)__builtin_popcount(w);
#endif
    }
    return n;
}

ZI_FN void zi_find_list(uint32_t base, uint32_t lane, const uint32_t m[ZI_FIND_STEP], uint32_t at, uint32_t *list,
                        uint32_t *overflow) {
    for (uint32_t j = 0; j < ZI_FIND_STEP; j++) {
        const uint32_t c0 = base + 32 * (lane * ZI_FIND_STEP + j);
        for (uint32_t w = m[j]; w; w &= w - 1) {
#ifdef __CUDA_ARCH__
            const uint32_t c = c0 + (uint32_t)__ffs((int)w) - 1;
#else
            const uint32_t c = c0 + (uint32_t)__builtin_ctz(w);
#endif
            if (at >= ZI_FIND_CAND) {
                ZI_ATOMIC_MIN(overflow, c);
                return;
            }
            list[at++] = c;
        }
    }
}

ZI_FN void zi_find_check(const uint8_t *in, uint32_t nbytes, const uint32_t *list, uint32_t n, uint32_t lane,
                         uint32_t lanes, uint32_t *best, zi_find_scratch *w) {
    for (uint32_t i = lane; i < n; i += lanes)
        if (list[i] < *(volatile uint32_t *)best && zi_header_rest(in, nbytes, list[i], w))
            ZI_ATOMIC_MIN(best, list[i]);
}

/* After a round from `base`: where the next starts, or ZI_NO_BIT when the search is over (*best holds its end). */
ZI_FN uint32_t zi_find_next(uint32_t base, uint32_t best, uint32_t overflow, uint32_t to) {
    const uint32_t next = overflow != ZI_NO_BIT && best > overflow ? overflow : best != ZI_NO_BIT ? ZI_NO_BIT
                                                                                  : base + ZI_FIND_ROUND;
    return next < to ? next : ZI_NO_BIT;
}

#ifndef __CUDA_ARCH__
/* The finder as a block runs it, its lanes one after another (the CPU tests): the first position in [from, to)
 * passing zi_header_at, or ZI_NO_BIT. */
static inline uint32_t zi_find_first(const uint8_t *in, uint32_t nbytes, uint32_t from, uint32_t to,
                                     zi_find_scratch *w) {
    static uint32_t m[ZI_NL][ZI_FIND_STEP], count[ZI_NL], list[ZI_FIND_CAND];
    uint32_t best = ZI_NO_BIT;
    while (from != ZI_NO_BIT && from < to) {
        const uint32_t base = from & ~31u;
        uint32_t overflow = ZI_NO_BIT, at = 0;
        for (uint32_t lane = 0; lane < ZI_NL; lane++)
            count[lane] = zi_find_masks(in, nbytes, base, from, to, lane, best, m[lane]);
        for (uint32_t lane = 0; lane < ZI_NL; lane++) {
            zi_find_list(base, lane, m[lane], at, list, &overflow);
            at += count[lane];
        }
        zi_find_check(in, nbytes, list, at < ZI_FIND_CAND ? at : ZI_FIND_CAND, 0, 1, &best, w);
        from = zi_find_next(base, best, overflow, to);
    }
    return best;
}
#endif

/* A part's decode spec: part k (its start from the finder, ZI_NO_BIT where it found none) of np, stopping at
 * the later parts' starts. */
ZI_FN zi_spec zi_part_spec(const uint32_t *start, uint32_t k, uint32_t np, uint32_t cap) {
    zi_spec sp;
    sp.start = k ? start[k] : 0;
    sp.nstops = np - 1 - k;
    for (uint32_t m = 0; m < sp.nstops; m++) sp.stops[m] = start[k + 1 + m];
    sp.wide = k > 0;
    sp.cap = cap;
    sp.serial = 0; /* (the caller sets it and seg: zi_serial_wanted and zi_seg_wanted of the whole stream) */
    sp.seg = 0;
    return sp;
}

/* Part k > 0's 16-bit buffer: its own slot of the stream's np - 1 slots (slot k - 1) and those of the empty parts
 * right after it, which it decodes on over. Returns how many slots. A slot holds ZI_WINDOW marks and 1.5 times
 * the stream's output over np (zi_part_slot): room for a part whose bits decode to more than their share. */
ZI_FN uint32_t zi_part_slots(const uint32_t *start, uint32_t k, uint32_t np) {
    uint32_t j = k + 1;
    while (j < np && start[j] == ZI_NO_BIT) j++;
    return j - k;
}

ZI_FN uint32_t zi_part_slot(uint32_t out_bytes, uint32_t np) {
    const uint32_t share = (uint32_t)(((uint64_t)out_bytes + np - 1) / np), room = share + share / 2;
    return ZI_WINDOW + (room < out_bytes ? room : out_bytes);
}

/* The chain of a stream's parts (results of zi_decode: status, elements written, the stop index it ended at,
 * np = nothing met), their output offsets; 0, or 1 where the stream must be decoded again whole. */
ZI_FN int zi_parts_chain(const int *status, const uint32_t *size, const uint32_t *end, const uint32_t *start,
                         uint32_t np, uint32_t out_bytes, uint32_t *chain, uint32_t *off, uint32_t *nchain) {
    uint32_t j = 0, o = 0, n = 0;
    for (;;) {
        if (status[j] != ZI_OK || (j && start[j] == ZI_NO_BIT) || size[j] > out_bytes - o) return 1;
        chain[n] = j;
        off[n++] = o;
        o += size[j];
        const uint32_t next = j + 1 + end[j]; /* end[j] == np - 1 - j: the final block */
        if (next >= np) break;
        j = next;
    }
    *nchain = n;
    return o != out_bytes;
}

/* Part output element i (a 16-bit value) of a part whose first byte is out[off]: the byte, or the earlier byte
 * its mark names (in the ZI_WINDOW before the part: final by then, see "parts"). 0, or 1 for a mark reaching
 * before the stream's output (then the stream is decoded again, which names the error). */
ZI_FN int zi_part_resolve(uint8_t *out, uint32_t off, const uint16_t *part, uint32_t i) {
    const uint32_t v = part[ZI_WINDOW + i];
    if (v < 256) {
        out[off + i] = (uint8_t)v;
        return 0;
    }
    const uint32_t d = v - 255;
    if (d > off) return 1;
    out[off + i] = out[off - d];
    return 0;
}

#endif
