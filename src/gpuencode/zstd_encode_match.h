/* zgpu's zstd encoder, matching (included by zstd_encode.h, which defines ZG_ZE_FN, the block constants and
 * zg_ze_seq): a lane's greedy matcher over its segment (the stride hints, the hash table), the join of the lanes'
 * sequences, and a block's literals gathered from the joined list. zgpu's LZ4 and fixed-Huffman DEFLATE encoders use
 * the same matches. */
#ifndef ZG_ZSTD_ENCODE_MATCH_H
#define ZG_ZSTD_ENCODE_MATCH_H

/* ---- matching ---- */

/* 4 bytes at p, little-endian. On the GPU one or two aligned words through the read-only cache (the second holds
 * p[3]; its other bytes may lie past the input but inside its 4-byte-granular allocation), not four byte loads:
 * the matcher's lanes are bound by these loads. */
ZG_ZE_FN uint32_t zg_ze_read32(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    const uintptr_t a = (uintptr_t)p;
    const uint32_t *w = (const uint32_t *)(a & ~(uintptr_t)3), sh = (uint32_t)(a & 3) * 8;
    const uint32_t lo = __ldg(w);
    return sh ? __funnelshift_r(lo, __ldg(w + 1), sh) : lo;
#else
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
#endif
}

/* How many bytes from a equal those from b (b < a), up to a + n: 4 at a time, then one by one. */
ZG_ZE_FN uint32_t zg_ze_common(const uint8_t *a, const uint8_t *b, uint32_t n) {
    uint32_t k = 0;
    while (k + 4 <= n) {
        const uint32_t x = zg_ze_read32(a + k) ^ zg_ze_read32(b + k);
        if (x) {
#ifdef __CUDA_ARCH__
            return k + (uint32_t)(__ffs((int)x) - 1) / 8;
#else
            return k + (uint32_t)__builtin_ctz(x) / 8;
#endif
        }
        k += 4;
    }
    while (k < n && a[k] == b[k]) k++;
    return k;
}
ZG_ZE_FN uint32_t zg_ze_hash(uint32_t v) { return (v * 2654435761u) >> (32 - ZG_ZE_HASH_LOG); }

/* Offsets worth trying at every position besides the hash table's: the strides of the array the chunk holds (its
 * element, row and plane sizes in bytes), whose repeats a table of one segment's positions cannot see (a labels
 * volume's planes repeat 256 KiB apart). 0: none. Only hints: a wrong one costs a compare. */
#define ZG_ZE_HINTS 3u
typedef struct zg_ze_hints {
    uint32_t off[ZG_ZE_HINTS];
} zg_ze_hints;

/* The window a frame declares: 128 KiB (the hash table's offsets and the block size) or the largest hint. */
ZG_ZE_FN uint32_t zg_ze_window_log(const zg_ze_hints *h) {
    uint32_t log = 17;
    for (uint32_t k = 0; k < ZG_ZE_HINTS; k++)
        while (h->off[k] > (1u << log)) log++;
    return log;
}

/* Hints that a frame can use: none above 2^27 (a window decoders take by default), nor repeated. */
ZG_ZE_FN zg_ze_hints zg_ze_hints_clean(zg_ze_hints h) {
    for (uint32_t k = 0; k < ZG_ZE_HINTS; k++) {
        if (h.off[k] > (1u << 27)) h.off[k] = 0;
        for (uint32_t j = 0; j < k; j++)
            if (h.off[j] == h.off[k]) h.off[k] = 0;
    }
    return h;
}

/* Greedy matches of segment [b, e) of chunk c, matches ending by e, starting no earlier than b, sources anywhere
 * from the chunk's start. Candidates at each position: the last match's offset and the hints (the longest match of
 * these wins), else the hash table's (it knows the segment and the ZG_ZE_PRIME_BYTES before it). Sequences go to
 * out (at most ZG_ZE_SEG_SEQS); returns their count, *tail the literals after the last one. `table`:
 * ZG_ZE_HASH_ENTRIES entries of scratch; positions are kept relative to b - ZG_ZE_PRIME_BYTES. */
ZG_ZE_FN uint32_t zg_ze_match_segment(const uint8_t *c, uint32_t b, uint32_t e, const zg_ze_hints *hints,
                                      uint16_t *table, zg_ze_seq *out, uint32_t *tail) {
    const uint32_t base = b >= ZG_ZE_PRIME_BYTES ? b - ZG_ZE_PRIME_BYTES : 0;
    for (uint32_t k = 0; k < ZG_ZE_HASH_ENTRIES; k++) table[k] = 0xffff;
    for (uint32_t p = base; p < b && p + 4 <= e; p++) table[zg_ze_hash(zg_ze_read32(c + p))] = (uint16_t)(p - base);
    uint32_t ip = b, anchor = b, ns = 0, rep = 0;
    while (ip + ZG_ZE_MIN_MATCH <= e && ns < ZG_ZE_SEG_SEQS) {
        const uint32_t v = zg_ze_read32(c + ip), hk = zg_ze_hash(v);
        uint32_t best_len = 0, best_off = 0;
        for (uint32_t k = 0; k <= ZG_ZE_HINTS; k++) {
            const uint32_t o = k == ZG_ZE_HINTS ? rep : hints->off[k];
            if (o == 0 || o > ip || (k == ZG_ZE_HINTS && o == best_off) || zg_ze_read32(c + ip - o) != v) continue;
            const uint32_t len = 4 + zg_ze_common(c + ip + 4, c + ip + 4 - o, e - ip - 4);
            if (len > best_len) best_len = len, best_off = o;
        }
        const uint32_t cand = table[hk] == 0xffff ? UINT32_MAX : base + table[hk];
        table[hk] = (uint16_t)(ip - base);
        if (!best_len && cand != UINT32_MAX && zg_ze_read32(c + cand) == v) {
            best_off = ip - cand;
            best_len = 4 + zg_ze_common(c + ip + 4, c + cand + 4, e - ip - 4);
        }
        if (!best_len) {
            ip += 1 + ((ip - anchor) >> ZG_ZE_SKIP_LOG);
            continue;
        }
        uint32_t m = ip;
        while (m > anchor && m > best_off && c[m - 1] == c[m - 1 - best_off]) m--, best_len++;
        out[ns].lit = m - anchor;
        out[ns].len = best_len;
        out[ns].off = rep = best_off;
        ns++;
        ip = m + best_len;
        anchor = ip;
        if (ip - 2 >= b && ip + 2 <= e) table[zg_ze_hash(zg_ze_read32(c + ip - 2))] = (uint16_t)(ip - 2 - base);
    }
    *tail = e - anchor;
    return ns;
}

/* How far a match `off` bytes back runs from b, up to e (0 without an offset). */
ZG_ZE_FN uint32_t zg_ze_extend(const uint8_t *c, uint32_t b, uint32_t e, uint32_t off) {
    if (off == 0 || off > b) return 0;
    return zg_ze_common(c + b, c + b - off, e - b);
}

/* What a segment's lane leaves for the join. */
typedef struct zg_ze_lane {
    uint32_t n;    /* sequences (at seqs + lane * ZG_ZE_SEG_SEQS) */
    uint32_t tail; /* literals after them */
    uint32_t len;  /* the segment's bytes */
    uint32_t ext_off, ext; /* the previous lane's last match, if it ends this segment's start: its offset and how
                            * far it runs on into this segment (zg_ze_extend) */
} zg_ze_lane;

/* The offset the next lane extends: this lane's last match's if it ends the segment, else 0. */
ZG_ZE_FN uint32_t zg_ze_lane_end_off(const zg_ze_lane *ln, const zg_ze_seq *seqs_of_lane) {
    return ln->n && ln->tail == 0 ? seqs_of_lane[ln->n - 1].off : 0;
}

/* zg_ze_join's rule for one of a segment's sequences q, which starts at *pos of the segment (moved past it), against
 * the segment's first `covered` bytes, which the previous segment's match took: a sequence wholly inside them goes; one
 * they cut loses its literals and the covered part of its match, its rest becoming literals (joining *carry, the
 * literals pending) where under 3 bytes are left; one whose literals they cut keeps the rest of them. The literals
 * pending go before a sequence kept. 1: keep *q; 0: nothing to keep. */
ZG_ZE_FN int zg_ze_uncover(zg_ze_seq *q, uint32_t *pos, uint32_t covered, uint32_t *carry) {
    const uint32_t start = *pos, ms = start + q->lit, me = ms + q->len;
    *pos = me;
    if (me <= covered) return 0;
    if (ms < covered) {
        if (me - covered < 3) {
            *carry += me - covered;
            return 0;
        }
        q->lit = 0;
        q->len = me - covered;
    } else if (start < covered) {
        q->lit = ms - covered;
    }
    q->lit += *carry;
    *carry = 0;
    return 1;
}

/* Joins the lanes' sequences into one list at seqs, in place. A match that ends a segment runs on into the next as
 * far as the bytes allow (lane.ext): the next lane's sequences it covers are dropped, one it covers in part is cut
 * (and becomes literals where less than 3 bytes are left), so a long run costs one sequence, not one a segment.
 * Returns the number of sequences; *tail_out the literals after the last (every byte of the block is in exactly one
 * literal run or match). */
ZG_ZE_FN uint32_t zg_ze_join(zg_ze_seq *seqs, const zg_ze_lane *lanes, uint32_t n_lanes, uint32_t *tail_out) {
    uint32_t k = 0, carry = 0, chain = 0; /* chain: seqs[k - 1]'s offset where its match ends at this boundary */
    for (uint32_t l = 0; l < n_lanes; l++) {
        const zg_ze_lane *ln = &lanes[l];
        const zg_ze_seq *s = seqs + (size_t)l * ZG_ZE_SEG_SEQS;
        uint32_t covered = 0;
        if (chain && carry == 0 && chain == ln->ext_off && ln->ext) {
            seqs[k - 1].len += ln->ext;
            covered = ln->ext;
        }
        if (covered == ln->len) continue; /* the chain runs on through this segment */
        uint32_t pos = 0;
        for (uint32_t i = 0; i < ln->n; i++) {
            zg_ze_seq q = s[i];
            if (zg_ze_uncover(&q, &pos, covered, &carry)) seqs[k++] = q;
        }
        carry += ln->len - (pos > covered ? pos : covered);
        chain = carry == 0 && k ? seqs[k - 1].off : 0;
    }
    *tail_out = carry;
    return k;
}

/* The warp of the kernels, one lane after another (the CPU references): block c[b, b + n) cut in segments of seg bytes,
 * each matched, the matches that end a segment extended into the next, all joined into seqs (zg_ze_join). Returns
 * the number of sequences, *tail the literals after the last. */
ZG_ZE_FN uint32_t zg_ze_match_block_ref(const uint8_t *c, uint32_t b, uint32_t n, uint32_t seg,
                                        const zg_ze_hints *hints, uint16_t *table, zg_ze_seq *seqs, uint32_t *tail) {
    zg_ze_lane lanes[ZG_ZE_LANES];
    const uint32_t nl = (n + seg - 1) / seg;
    for (uint32_t l = 0; l < nl; l++) {
        const uint32_t sb = l * seg, se = sb + seg < n ? sb + seg : n;
        lanes[l].len = se - sb;
        lanes[l].n = zg_ze_match_segment(c, b + sb, b + se, hints, table, seqs + (size_t)l * ZG_ZE_SEG_SEQS,
                                         &lanes[l].tail);
    }
    for (uint32_t l = 0; l < nl; l++) {
        lanes[l].ext_off = l ? zg_ze_lane_end_off(&lanes[l - 1], seqs + (size_t)(l - 1) * ZG_ZE_SEG_SEQS) : 0;
        lanes[l].ext = zg_ze_extend(c, b + l * seg, b + l * seg + lanes[l].len, lanes[l].ext_off);
    }
    return zg_ze_join(seqs, lanes, nl, tail);
}

/* Copies the literals of the joined list seqs[0, n) of block `in` into lits; their number. */
ZG_ZE_FN uint32_t zg_ze_gather_literals(const uint8_t *in, const zg_ze_seq *seqs, uint32_t n, uint32_t tail,
                                        uint8_t *lits) {
    uint32_t pos = 0, nl = 0;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < seqs[i].lit; k++) lits[nl++] = in[pos + k];
        pos += seqs[i].lit + seqs[i].len;
    }
    for (uint32_t k = 0; k < tail; k++) lits[nl++] = in[pos + k];
    return nl;
}

#endif
