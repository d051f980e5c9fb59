/* zgpu's zstd encoder, entropy coding (included by zstd_encode.h, which defines ZG_ZE_FN, the block constants and
 * zg_ze_seq): the forward bit writer, FSE tables, the sequences section, and the literals section (Huffman code
 * lengths and tables, their description, the streams). */
#ifndef ZG_ZSTD_ENCODE_ENTROPY_H
#define ZG_ZSTD_ENCODE_ENTROPY_H

/* ---- bit writer (forward; zstd's streams are read backwards from their last byte's marker bit) ---- */

typedef struct zg_ze_bits {
    uint8_t *p;
    uint32_t at, cap; /* bytes written, room */
    uint64_t acc;
    uint32_t n; /* bits in acc, < 32 between calls */
    int over;   /* ran out of room: the output is garbage and must not be used */
} zg_ze_bits;

ZG_ZE_FN void zg_ze_bits_init(zg_ze_bits *b, uint8_t *p, uint32_t cap) {
    b->p = p, b->at = 0, b->cap = cap, b->acc = 0, b->n = 0, b->over = 0;
}

/* Appends the low n <= 32 bits of v. */
ZG_ZE_FN void zg_ze_bits_put(zg_ze_bits *b, uint32_t v, uint32_t n) {
    b->acc |= (uint64_t)(n == 32 ? v : (v & ((1u << n) - 1))) << b->n;
    b->n += n;
    if (b->n >= 32) {
        if (b->at + 4 > b->cap) {
            b->over = 1;
        } else {
            for (int k = 0; k < 4; k++) b->p[b->at + k] = (uint8_t)(b->acc >> (8 * k));
            b->at += 4;
        }
        b->acc >>= 32;
        b->n -= 32;
    }
}

/* The end marker (a 1 bit), the last byte written; the stream's size in bytes, 0 if it did not fit. */
ZG_ZE_FN uint32_t zg_ze_bits_close(zg_ze_bits *b) {
    zg_ze_bits_put(b, 1, 1);
    while (b->n > 0) {
        if (b->at >= b->cap) return 0;
        b->p[b->at++] = (uint8_t)b->acc;
        b->acc >>= 8;
        b->n = b->n > 8 ? b->n - 8 : 0;
    }
    return b->over ? 0 : b->at;
}

ZG_ZE_FN uint32_t zg_ze_highbit(uint32_t v) { /* v > 0 */
    uint32_t r = 0;
    while (v >>= 1) r++;
    return r;
}

/* ---- FSE encoding tables (the decoder's symbol spread, RFC 8878 4.1.1) ---- */

#define ZG_ZE_FSE_MAX_LOG 9u
#define ZG_ZE_FSE_MAX_SYMS 53u

typedef struct zg_ze_fse {
    uint16_t state[1u << ZG_ZE_FSE_MAX_LOG]; /* next states, by symbol then spread position */
    int32_t find[ZG_ZE_FSE_MAX_SYMS];        /* where a symbol's states start in `state`, less its count */
    uint32_t nb[ZG_ZE_FSE_MAX_SYMS];         /* (bits out << 16) - smallest state that takes them */
    uint32_t log;
    uint32_t cumul[ZG_ZE_FSE_MAX_SYMS + 1]; /* scratch of the build */
    uint8_t spread[1u << ZG_ZE_FSE_MAX_LOG];
} zg_ze_fse;

/* Builds the table of a normalised distribution norm[0, nsym) (-1: a "less than 1" symbol, one cell at the end of
 * the table, as the decoder places it) summing to 1 << log. */
ZG_ZE_FN void zg_ze_fse_build(zg_ze_fse *t, const int16_t *norm, uint32_t nsym, uint32_t log) {
    const uint32_t size = 1u << log, mask = size - 1, step = (size >> 1) + (size >> 3) + 3;
    uint8_t *spread = t->spread;
    uint32_t *cumul = t->cumul;
    uint32_t high = size - 1;
    t->log = log;
    cumul[0] = 0;
    for (uint32_t s = 0; s < nsym; s++) {
        if (norm[s] == -1) {
            cumul[s + 1] = cumul[s] + 1;
            spread[high--] = (uint8_t)s;
        } else {
            cumul[s + 1] = cumul[s] + (uint32_t)norm[s];
        }
    }
    uint32_t pos = 0;
    for (uint32_t s = 0; s < nsym; s++)
        for (int k = 0; k < norm[s]; k++) {
            spread[pos] = (uint8_t)s;
            do pos = (pos + step) & mask;
            while (pos > high);
        }
    for (uint32_t u = 0; u < size; u++) t->state[cumul[spread[u]]++] = (uint16_t)(size + u);
    int32_t total = 0;
    for (uint32_t s = 0; s < nsym; s++) {
        const int c = norm[s];
        if (c == 0) {
            t->nb[s] = ((log + 1) << 16) - size;
            t->find[s] = 0;
        } else if (c == -1 || c == 1) {
            t->nb[s] = (log << 16) - size;
            t->find[s] = total - 1;
            total++;
        } else {
            const uint32_t out = log - zg_ze_highbit((uint32_t)c - 1);
            t->nb[s] = (out << 16) - ((uint32_t)c << out);
            t->find[s] = total - c;
            total += c;
        }
    }
}

ZG_ZE_FN uint32_t zg_ze_fse_init(const zg_ze_fse *t, uint32_t sym) {
    const uint32_t out = (t->nb[sym] + (1u << 15)) >> 16;
    const uint32_t v = (out << 16) - t->nb[sym];
    return t->state[(v >> out) + t->find[sym]];
}

ZG_ZE_FN uint32_t zg_ze_fse_put(const zg_ze_fse *t, zg_ze_bits *b, uint32_t state, uint32_t sym) {
    const uint32_t out = (state + t->nb[sym]) >> 16;
    zg_ze_bits_put(b, state, out);
    return t->state[(state >> out) + t->find[sym]];
}

/* Normalises counts c[0, n) of total to a sum of 1 << log, every present symbol at least 1. */
ZG_ZE_FN void zg_ze_normalise(const uint32_t *c, uint32_t n, uint32_t total, uint32_t log, int16_t *norm) {
    const int32_t size = 1 << log;
    int32_t sum = 0, big = 0;
    for (uint32_t s = 0; s < n; s++) {
        int32_t v = c[s] ? (int32_t)(((uint64_t)c[s] * (uint64_t)size + total / 2) / total) : 0;
        if (c[s] && v < 1) v = 1;
        norm[s] = (int16_t)v;
        sum += v;
        if (v > norm[big]) big = (int32_t)s;
    }
    while (sum > size) /* take from the largest that can spare one */
        for (uint32_t s = 0; s < n && sum > size; s++)
            if (norm[s] > 1 && norm[s] >= norm[big] / 2) norm[s]--, sum--;
    norm[big] = (int16_t)(norm[big] + (size - sum));
}

/* Writes a normalised distribution as RFC 8878 4.1.1 describes (FSE_Table_Description); its size, 0 past cap. */
ZG_ZE_FN uint32_t zg_ze_ncount(uint8_t *dst, uint32_t cap, const int16_t *norm, uint32_t n, uint32_t log) {
    zg_ze_bits b;
    zg_ze_bits_init(&b, dst, cap);
    zg_ze_bits_put(&b, log - 5, 4);
    int32_t remaining = (1 << log) + 1, threshold = 1 << log;
    uint32_t nbits = log + 1, s = 0;
    int prev0 = 0;
    while (remaining > 1 && s < n) {
        if (prev0) {
            uint32_t start = s;
            while (s < n && !norm[s]) s++;
            while (s >= start + 3) {
                start += 3;
                zg_ze_bits_put(&b, 3, 2);
            }
            zg_ze_bits_put(&b, s - start, 2);
        }
        int32_t count = norm[s++];
        const int32_t max = (2 * threshold - 1) - remaining;
        remaining -= count < 0 ? -count : count;
        count++;
        if (count >= threshold) count += max;
        zg_ze_bits_put(&b, (uint32_t)count, nbits - (count < max));
        prev0 = count == 1;
        while (remaining < threshold) nbits--, threshold >>= 1;
    }
    /* flush to whole bytes (no end marker: the description ends where its symbols do) */
    while (b.n > 0) {
        if (b.at >= b.cap) return 0;
        b.p[b.at++] = (uint8_t)b.acc;
        b.acc >>= 8;
        b.n = b.n > 8 ? b.n - 8 : 0;
    }
    return b.over ? 0 : b.at;
}

/* ---- sequences section ---- */

/* RFC 8878 3.1.1.3.2.2: the predefined distributions of literal lengths, offsets and match lengths. */
#define ZG_ZE_PREDEF_LL                                                                                           \
    {4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1}
#define ZG_ZE_PREDEF_OF                                                                                           \
    {1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1}
#define ZG_ZE_PREDEF_ML                                                                                           \
    {1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,                             \
     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1}

/* The three tables a sequences section is coded with (built once: zg_ze_tables_build). */
typedef struct zg_ze_tables {
    zg_ze_fse ll, of, ml;
} zg_ze_tables;

ZG_ZE_FN void zg_ze_tables_build(zg_ze_tables *t) {
    const int16_t ll[36] = ZG_ZE_PREDEF_LL, of[29] = ZG_ZE_PREDEF_OF, ml[53] = ZG_ZE_PREDEF_ML;
    zg_ze_fse_build(&t->ll, ll, 36, 6);
    zg_ze_fse_build(&t->of, of, 29, 5);
    zg_ze_fse_build(&t->ml, ml, 53, 6);
}

/* Literal length code (RFC 8878 3.1.1.3.2.1.1) and its extra bits. */
ZG_ZE_FN uint32_t zg_ze_ll_code(uint32_t ll, uint32_t *base, uint32_t *bits) {
    if (ll < 16) return *base = ll, *bits = 0, ll;
    if (ll >= 64) {
        const uint32_t c = zg_ze_highbit(ll) + 19;
        return *base = 1u << (c - 19), *bits = c - 19, c;
    }
    /* codes 16..24: bases 16 18 20 22 24 28 32 40 48 */
    const uint8_t b[9] = {16, 18, 20, 22, 24, 28, 32, 40, 48}, e[9] = {1, 1, 1, 1, 2, 2, 3, 3, 4};
    uint32_t k = 8;
    while (b[k] > ll) k--;
    return *base = b[k], *bits = e[k], 16 + k;
}

/* Match length code (3.1.1.3.2.1.1; ml >= 3). */
ZG_ZE_FN uint32_t zg_ze_ml_code(uint32_t ml, uint32_t *base, uint32_t *bits) {
    const uint32_t m = ml - 3;
    if (m < 32) return *base = ml, *bits = 0, m;
    if (m >= 128) {
        const uint32_t c = zg_ze_highbit(m) + 36;
        return *base = (1u << (c - 36)) + 3, *bits = c - 36, c;
    }
    /* codes 32..42: bases (less 3) 32 34 36 38 40 44 48 56 64 80 96 */
    const uint8_t b[11] = {32, 34, 36, 38, 40, 44, 48, 56, 64, 80, 96}, e[11] = {1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5};
    uint32_t k = 10;
    while (b[k] > m) k--;
    return *base = b[k] + 3u, *bits = e[k], 32 + k;
}

/* The offset value a sequence is sent with: 1 (repeat the last offset) where it has literals and the block's
 * previous sequence had the same offset, else offset + 3. Both only look inside the block: blocks stay
 * independent (with no literals, 1 would mean the second repeat offset, which could come from another block). */
ZG_ZE_FN uint32_t zg_ze_offset_value(const zg_ze_seq *seqs, uint32_t i) {
    return i > 0 && seqs[i].lit > 0 && seqs[i].off == seqs[i - 1].off ? 1 : seqs[i].off + 3;
}

/* The codes of sequence i: literal length, offset, match length. */
ZG_ZE_FN void zg_ze_seq_codes(const zg_ze_seq *seqs, uint32_t i, uint32_t code[3]) {
    uint32_t base, bits;
    code[0] = zg_ze_ll_code(seqs[i].lit, &base, &bits);
    code[1] = zg_ze_highbit(zg_ze_offset_value(seqs, i));
    code[2] = zg_ze_ml_code(seqs[i].len, &base, &bits);
}

/* How one code stream of a sequences section is coded: predefined (0), RLE (1) or a table of its own (2). */
typedef struct zg_ze_seq_mode {
    uint32_t mode, rle_sym;
    const zg_ze_fse *t; /* mode 0 and 2 */
} zg_ze_seq_mode;

/* Bits to send count[0, n) with a distribution norm of 2^log (negative: -1 symbols, one cell), in 1/16 bits:
 * count * (log - log2 norm), log2 to 1/16 from the top 4 bits below the highest. */
ZG_ZE_FN uint64_t zg_ze_cost16(const uint32_t *count, const int16_t *norm, uint32_t n, uint32_t log) {
    uint64_t c = 0;
    for (uint32_t s = 0; s < n; s++) {
        if (!count[s]) continue;
        if (norm[s] == 0) return UINT64_MAX;
        const uint32_t v = norm[s] < 0 ? 1 : (uint32_t)norm[s], hb = zg_ze_highbit(v);
        const uint32_t frac = hb >= 4 ? (v >> (hb - 4)) & 15 : (v << (4 - hb)) & 15;
        c += (uint64_t)count[s] * (log * 16 - (hb * 16 + frac));
    }
    return c;
}

/* Picks the coding of one code stream (count[0, n) of codes over nseq sequences; the predefined table `pre` of
 * distribution pre_norm, 2^pre_log): RLE for one code, else its own table where that is shorter than the predefined
 * one, its description included. A table of its own is built into `own` and its description written at dst
 * (*desc_bytes; 0 for the others). */
ZG_ZE_FN zg_ze_seq_mode zg_ze_pick_mode(const uint32_t *count, uint32_t n, uint32_t nseq, const zg_ze_fse *pre,
                                        const int16_t *pre_norm, uint32_t max_log, zg_ze_fse *own, uint8_t *dst,
                                        uint32_t cap, uint32_t *desc_bytes) {
    zg_ze_seq_mode m = {0, 0, pre};
    *desc_bytes = 0;
    uint32_t used = 0, last = 0;
    for (uint32_t s = 0; s < n; s++)
        if (count[s]) used++, last = s;
    if (used == 1 && nseq > 2) {
        if (cap < 1) return m;
        dst[0] = (uint8_t)last;
        *desc_bytes = 1;
        m.mode = 1, m.rle_sym = last, m.t = 0;
        return m;
    }
    if (nseq < 16) return m;
    uint32_t log = zg_ze_highbit(nseq) + 1;
    if (log > max_log) log = max_log;
    while ((1u << log) < 2 * used && log < max_log) log++;
    if (log < 5) log = 5;
    int16_t norm[ZG_ZE_FSE_MAX_SYMS];
    zg_ze_normalise(count, last + 1, nseq, log, norm);
    const uint32_t db = zg_ze_ncount(dst, cap, norm, last + 1, log);
    if (!db) return m;
    const uint64_t own_cost = zg_ze_cost16(count, norm, last + 1, log) + (uint64_t)db * 8 * 16;
    const uint64_t pre_cost = zg_ze_cost16(count, pre_norm, n, pre->log);
    if (own_cost >= pre_cost) return m;
    zg_ze_fse_build(own, norm, last + 1, log);
    *desc_bytes = db;
    m.mode = 2, m.t = own;
    return m;
}

ZG_ZE_FN uint32_t zg_ze_state_init(const zg_ze_seq_mode *m, uint32_t sym) {
    return m->mode == 1 ? 0 : zg_ze_fse_init(m->t, sym);
}
ZG_ZE_FN uint32_t zg_ze_state_put(const zg_ze_seq_mode *m, zg_ze_bits *b, uint32_t state, uint32_t sym) {
    return m->mode == 1 ? 0 : zg_ze_fse_put(m->t, b, state, sym);
}
ZG_ZE_FN void zg_ze_state_flush(const zg_ze_seq_mode *m, zg_ze_bits *b, uint32_t state) {
    if (m->mode != 1) zg_ze_bits_put(b, state, m->t->log);
}

/* Writes the sequences section of seqs[0, n) into dst; its size, 0 if it needs more than cap. Offsets are sent
 * as zg_ze_offset_value says; offsets below 2^28 - 3 (the predefined table's codes). `own`: three tables of
 * scratch (literal lengths, offsets, match lengths) for the codes that get their own. */
ZG_ZE_FN uint32_t zg_ze_sequences(uint8_t *dst, uint32_t cap, const zg_ze_seq *seqs, uint32_t n,
                                  const zg_ze_tables *t, zg_ze_fse *own) {
    uint32_t h = 0;
    if (cap < 8) return 0;
    if (n < 128) {
        dst[h++] = (uint8_t)n;
    } else if (n < 0x7f00) {
        dst[h++] = (uint8_t)((n >> 8) + 0x80);
        dst[h++] = (uint8_t)n;
    } else {
        dst[h++] = 0xff;
        dst[h++] = (uint8_t)(n - 0x7f00);
        dst[h++] = (uint8_t)((n - 0x7f00) >> 8);
    }
    if (n == 0) return h;
    /* the codes' histograms, then each stream's mode: LL, OF, ML in the section's order */
    uint32_t cll[36] = {0}, cof[32] = {0}, cml[53] = {0}, code[3];
    for (uint32_t i = 0; i < n; i++) {
        zg_ze_seq_codes(seqs, i, code);
        cll[code[0]]++, cof[code[1]]++, cml[code[2]]++;
    }
    const int16_t pll[36] = ZG_ZE_PREDEF_LL, pof[29] = ZG_ZE_PREDEF_OF, pml[53] = ZG_ZE_PREDEF_ML;
    for (uint32_t k = 29; k < 32; k++)
        if (cof[k]) return 0; /* offsets past the predefined table (never: windows are at most 2^27) */
    const uint32_t modes_at = h++;
    uint32_t db;
    const zg_ze_seq_mode mll = zg_ze_pick_mode(cll, 36, n, &t->ll, pll, 9, &own[0], dst + h, cap - h, &db);
    h += db;
    const zg_ze_seq_mode mof = zg_ze_pick_mode(cof, 29, n, &t->of, pof, 8, &own[1], dst + h, cap - h, &db);
    h += db;
    const zg_ze_seq_mode mml = zg_ze_pick_mode(cml, 53, n, &t->ml, pml, 9, &own[2], dst + h, cap - h, &db);
    h += db;
    if (h >= cap) return 0;
    dst[modes_at] = (uint8_t)(mll.mode << 6 | mof.mode << 4 | mml.mode << 2);
    zg_ze_bits b;
    zg_ze_bits_init(&b, dst + h, cap - h);
    uint32_t llb, llx, mlb, mlx;
    const zg_ze_seq *s = &seqs[n - 1];
    uint32_t llc = zg_ze_ll_code(s->lit, &llb, &llx), mlc = zg_ze_ml_code(s->len, &mlb, &mlx);
    uint32_t ov = zg_ze_offset_value(seqs, n - 1), ofc = zg_ze_highbit(ov);
    uint32_t sll = zg_ze_state_init(&mll, llc), sof = zg_ze_state_init(&mof, ofc), sml = zg_ze_state_init(&mml, mlc);
    zg_ze_bits_put(&b, s->lit - llb, llx);
    zg_ze_bits_put(&b, s->len - mlb, mlx);
    zg_ze_bits_put(&b, ov - (1u << ofc), ofc);
    for (uint32_t i = n - 1; i-- > 0;) {
        s = &seqs[i];
        llc = zg_ze_ll_code(s->lit, &llb, &llx);
        mlc = zg_ze_ml_code(s->len, &mlb, &mlx);
        ov = zg_ze_offset_value(seqs, i);
        ofc = zg_ze_highbit(ov);
        sof = zg_ze_state_put(&mof, &b, sof, ofc);
        sml = zg_ze_state_put(&mml, &b, sml, mlc);
        sll = zg_ze_state_put(&mll, &b, sll, llc);
        zg_ze_bits_put(&b, s->lit - llb, llx);
        zg_ze_bits_put(&b, s->len - mlb, mlx);
        zg_ze_bits_put(&b, ov - (1u << ofc), ofc);
        if (b.over) return 0;
    }
    zg_ze_state_flush(&mml, &b, sml);
    zg_ze_state_flush(&mof, &b, sof);
    zg_ze_state_flush(&mll, &b, sll);
    const uint32_t bytes = zg_ze_bits_close(&b);
    return bytes ? h + bytes : 0;
}

/* ---- literals section ---- */

/* A block's Huffman code and the scratch that builds it (about 3.5 KiB). */
typedef struct zg_ze_huf {
    uint32_t count[256];
    uint16_t code[256];
    uint8_t len[256];
    uint32_t sorted[256]; /* (count << 8) | symbol, ascending; then code lengths in that order */
    uint32_t syms[256];   /* scratch: symbols in sorted order */
    uint8_t w[256];       /* scratch: weights */
    uint8_t tmp[130];     /* scratch: an FSE-compressed description */
    uint32_t n_used, max_sym, max_bits;
    uint8_t desc[130]; /* the tree description (header byte first) */
    uint32_t desc_bytes, head_bytes; /* the description's size; the section header's */
    uint32_t stream_bytes[4];
} zg_ze_huf;

/* Code lengths for the n symbols of h->sorted (ascending counts; n >= 2), limited to ZG_ZE_HUF_MAX_BITS bits, with
 * the code complete (Kraft sum exactly 1: zstd's decoder deduces the last weight from it), into h->len. */
ZG_ZE_FN void zg_ze_huf_lengths(zg_ze_huf *h, uint32_t n) {
    uint32_t *A = h->sorted, *syms = h->syms;
    for (uint32_t i = 0; i < n; i++) syms[i] = A[i] & 0xff, A[i] >>= 8;
    /* minimum-redundancy code lengths in place (Moffat and Katajainen, 1995) */
    uint32_t root = 0, leaf = 2, next;
    A[0] += A[1];
    for (next = 1; next < n - 1; next++) {
        if (leaf >= n || A[root] < A[leaf]) {
            A[next] = A[root];
            A[root++] = next;
        } else {
            A[next] = A[leaf++];
        }
        if (leaf >= n || (root < next && A[root] < A[leaf])) {
            A[next] += A[root];
            A[root++] = next;
        } else {
            A[next] += A[leaf++];
        }
    }
    A[n - 2] = 0;
    for (int i = (int)n - 3; i >= 0; i--) A[i] = A[A[i]] + 1;
    {
        int avbl = 1, used = 0, dpth = 0, r = (int)n - 2, nx = (int)n - 1;
        while (avbl > 0) {
            while (r >= 0 && (int)A[r] == dpth) used++, r--;
            while (avbl > used) A[nx--] = (uint32_t)dpth, avbl--;
            avbl = 2 * used;
            dpth++;
            used = 0;
        }
    }
    /* A[i]: the length of syms[i] (longest first). Limit, then make the code complete again. */
    const uint32_t L = ZG_ZE_HUF_MAX_BITS, full = 1u << L;
    uint32_t kraft = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (A[i] > L) A[i] = L;
        kraft += full >> A[i];
    }
    for (uint32_t i = 0; kraft > full; i = (i + 1) % n) /* lengthen the rarest codes below L */
        if (A[i] < L) kraft -= full >> (A[i] + 1), A[i]++;
    while (kraft < full) /* shorten the commonest codes the slack allows */
        for (int i = (int)n - 1; i >= 0 && kraft < full; i--)
            if (A[i] > 1 && kraft + (full >> A[i]) <= full) kraft += full >> A[i], A[i]--;
    for (uint32_t s = 0; s < 256; s++) h->len[s] = 0;
    h->max_bits = 0;
    for (uint32_t i = 0; i < n; i++) {
        h->len[syms[i]] = (uint8_t)A[i];
        if (A[i] > h->max_bits) h->max_bits = A[i];
    }
}

/* Canonical codes as zstd assigns them: longest codes first, in symbol order within a length. */
ZG_ZE_FN void zg_ze_huf_codes(zg_ze_huf *h) {
    uint32_t code = 0;
    for (uint32_t l = h->max_bits; l >= 1; l--) {
        for (uint32_t s = 0; s <= h->max_sym; s++)
            if (h->len[s] == l) h->code[s] = (uint16_t)code++;
        code >>= 1;
    }
}

/* The tree description of h's code: weights of symbols 0 .. max_sym - 1 (the last one's is implied), FSE-compressed
 * (header byte < 128) or direct, 4 bits each (only for up to 128 weights), whichever is shorter. 0 if neither. */
ZG_ZE_FN uint32_t zg_ze_huf_describe(zg_ze_huf *h, zg_ze_fse *scratch) {
    uint8_t *w = h->w;
    const uint32_t nw = h->max_sym;
    uint32_t wc[13] = {0}, max_w = 0;
    for (uint32_t s = 0; s < nw; s++) {
        w[s] = (uint8_t)(h->len[s] ? h->max_bits + 1 - h->len[s] : 0);
        wc[w[s]]++;
        if (w[s] > max_w) max_w = w[s];
    }
    uint32_t best = 0;
    if (nw <= 128) {
        h->desc[0] = (uint8_t)(127 + nw);
        for (uint32_t i = 0; i < nw; i += 2)
            h->desc[1 + i / 2] = (uint8_t)((w[i] << 4) | (i + 1 < nw ? w[i + 1] : 0));
        best = 1 + (nw + 1) / 2;
    }
    uint32_t distinct = 0;
    for (uint32_t k = 0; k <= max_w; k++) distinct += wc[k] != 0;
    if (distinct >= 2) { /* FSE: the description, then the weights with two interleaved states */
        uint8_t *tmp = h->tmp;
        int16_t norm[13];
        const uint32_t log = 6;
        zg_ze_normalise(wc, max_w + 1, nw, log, norm);
        uint32_t at = zg_ze_ncount(tmp + 1, 127, norm, max_w + 1, log);
        if (at) {
            zg_ze_fse_build(scratch, norm, max_w + 1, log);
            zg_ze_bits b;
            zg_ze_bits_init(&b, tmp + 1 + at, 127 - at);
            uint32_t i = nw, s1, s2;
            if (nw & 1) {
                s1 = zg_ze_fse_init(scratch, w[--i]);
                s2 = zg_ze_fse_init(scratch, w[--i]);
                s1 = zg_ze_fse_put(scratch, &b, s1, w[--i]);
            } else {
                s2 = zg_ze_fse_init(scratch, w[--i]);
                s1 = zg_ze_fse_init(scratch, w[--i]);
            }
            while (i > 0) {
                s2 = zg_ze_fse_put(scratch, &b, s2, w[--i]);
                s1 = zg_ze_fse_put(scratch, &b, s1, w[--i]);
            }
            zg_ze_bits_put(&b, s2, log);
            zg_ze_bits_put(&b, s1, log);
            const uint32_t bytes = zg_ze_bits_close(&b);
            if (bytes && at + bytes < 128 && (!best || 1 + at + bytes < best)) {
                tmp[0] = (uint8_t)(at + bytes);
                for (uint32_t k = 0; k < 1 + at + bytes; k++) h->desc[k] = tmp[k];
                best = 1 + at + bytes;
            }
        }
    }
    return h->desc_bytes = best;
}

/* Size format of a compressed literals header for n literals, c bytes: its header bytes (3, 4, 5). */
ZG_ZE_FN uint32_t zg_ze_lit_header_bytes(uint32_t n, uint32_t c) {
    const uint32_t m = n > c ? n : c;
    return m < 1024 ? 3 : m < 16384 ? 4 : 5;
}

/* Huffman literals in three steps (the GPU runs the middle one on all lanes): zg_ze_huf_build makes the code and
 * its description, the caller sums each stream's code lengths into h->stream_bytes (zg_ze_huf_stream_range says
 * which literals each stream takes), zg_ze_huf_finish sizes the section. */

/* Streams a literals section of n literals has, and the literals [*b0, *b1) stream st takes. */
ZG_ZE_FN uint32_t zg_ze_huf_streams(uint32_t n) { return n <= 1023 ? 1 : 4; }
ZG_ZE_FN void zg_ze_huf_stream_range(uint32_t n, uint32_t st, uint32_t *b0, uint32_t *b1) {
    const uint32_t q = (n + 3) / 4;
    const int one = zg_ze_huf_streams(n) == 1;
    *b0 = one ? 0 : st * q;
    *b1 = one || st == 3 ? n : (st + 1) * q;
}

/* The code for the n literals whose histogram is in h->count, and its description; 0 where Huffman coding cannot
 * pay (one symbol, too few literals, an estimate not below `beat`, a description that does not fit), else 1. */
ZG_ZE_FN int zg_ze_huf_build(zg_ze_huf *h, uint32_t n, zg_ze_fse *scratch, uint32_t beat) {
    if (n < 64) return 0;
    uint32_t k = 0;
    h->max_sym = 0;
    for (uint32_t s = 0; s < 256; s++)
        if (h->count[s]) h->sorted[k++] = (h->count[s] << 8) | s, h->max_sym = s;
    h->n_used = k;
    if (k < 2) return 0;
    for (uint32_t i = 1; i < k; i++) { /* insertion sort, ascending */
        const uint32_t v = h->sorted[i];
        uint32_t j = i;
        while (j > 0 && h->sorted[j - 1] > v) h->sorted[j] = h->sorted[j - 1], j--;
        h->sorted[j] = v;
    }
    zg_ze_huf_lengths(h, k);
    uint64_t bits = 0;
    for (uint32_t s = 0; s <= h->max_sym; s++) bits += (uint64_t)h->count[s] * h->len[s];
    if (bits / 8 + 16 >= beat) return 0; /* cannot win: skip the description */
    zg_ze_huf_codes(h);
    return zg_ze_huf_describe(h, scratch) != 0;
}

/* With h->stream_bytes[st] = (the stream's code bits) / 8 + 1 (its end marker included): the section's size,
 * header included, or 0 where it does not fit its header's fields or is not below `beat`. */
ZG_ZE_FN uint32_t zg_ze_huf_finish(zg_ze_huf *h, uint32_t n, uint32_t beat) {
    const uint32_t streams = zg_ze_huf_streams(n);
    uint32_t body = h->desc_bytes + (streams == 4 ? 6 : 0);
    for (uint32_t st = 0; st < streams; st++) body += h->stream_bytes[st];
    if (streams == 4 && (h->stream_bytes[0] > 0xffff || h->stream_bytes[1] > 0xffff || h->stream_bytes[2] > 0xffff))
        return 0;
    if (streams == 1 && body > 1023) return 0;
    h->head_bytes = zg_ze_lit_header_bytes(n, body);
    const uint32_t total = h->head_bytes + body;
    return total < beat ? total : 0;
}

/* All three steps on one thread: the section's size or 0 (see zg_ze_huf_build and zg_ze_huf_finish). */
ZG_ZE_FN uint32_t zg_ze_huf_plan(zg_ze_huf *h, const uint8_t *lits, uint32_t n, zg_ze_fse *scratch, uint32_t beat) {
    if (!zg_ze_huf_build(h, n, scratch, beat)) return 0;
    for (uint32_t st = 0; st < zg_ze_huf_streams(n); st++) {
        uint32_t b0, b1;
        zg_ze_huf_stream_range(n, st, &b0, &b1);
        uint64_t sb = 0;
        for (uint32_t i = b0; i < b1; i++) sb += h->len[lits[i]];
        h->stream_bytes[st] = (uint32_t)(sb / 8 + 1);
    }
    return zg_ze_huf_finish(h, n, beat);
}

/* Huffman stream st of lits[0, n) (planned by zg_ze_huf_plan) into dst, h->stream_bytes[st] bytes exactly. */
ZG_ZE_FN void zg_ze_huf_stream(const zg_ze_huf *h, const uint8_t *lits, uint32_t n, uint32_t st, uint8_t *dst) {
    uint32_t b0, b1;
    zg_ze_huf_stream_range(n, st, &b0, &b1);
    zg_ze_bits b;
    zg_ze_bits_init(&b, dst, h->stream_bytes[st]);
    for (uint32_t i = b1; i-- > b0;) zg_ze_bits_put(&b, h->code[lits[i]], h->len[lits[i]]);
    zg_ze_bits_close(&b);
}

/* The literals section's header and tree description (and jump table) before the streams; returns where the first
 * stream goes. `total` is zg_ze_huf_plan's answer. */
ZG_ZE_FN uint32_t zg_ze_huf_head(const zg_ze_huf *h, uint32_t n, uint32_t total, uint8_t *dst) {
    const uint32_t hb = h->head_bytes, body = total - hb;
    const uint32_t streams = zg_ze_huf_streams(n);
    uint64_t v = 2u; /* Compressed_Literals_Block */
    if (hb == 3)
        v |= (uint64_t)(streams == 4) << 2 | (uint64_t)n << 4 | (uint64_t)body << 14;
    else if (hb == 4)
        v |= 2u << 2 | (uint64_t)n << 4 | (uint64_t)body << 18;
    else
        v |= 3u << 2 | (uint64_t)n << 4 | (uint64_t)body << 22;
    for (uint32_t k = 0; k < hb; k++) dst[k] = (uint8_t)(v >> (8 * k));
    uint32_t at = hb;
    for (uint32_t k = 0; k < h->desc_bytes; k++) dst[at++] = h->desc[k];
    if (streams == 4)
        for (uint32_t st = 0; st < 3; st++) {
            dst[at++] = (uint8_t)h->stream_bytes[st];
            dst[at++] = (uint8_t)(h->stream_bytes[st] >> 8);
        }
    return at;
}

/* Raw (type 0) or RLE (type 1) literals header for n literals; its size. */
ZG_ZE_FN uint32_t zg_ze_lit_plain_header(uint32_t type, uint32_t n, uint8_t *dst) {
    if (n < 32) return dst[0] = (uint8_t)(type | n << 3), 1;
    if (n < 4096) {
        const uint32_t v = type | 1u << 2 | n << 4;
        return dst[0] = (uint8_t)v, dst[1] = (uint8_t)(v >> 8), 2;
    }
    const uint32_t v = type | 3u << 2 | n << 4;
    return dst[0] = (uint8_t)v, dst[1] = (uint8_t)(v >> 8), dst[2] = (uint8_t)(v >> 16), 3;
}

#endif
