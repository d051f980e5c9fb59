/* The TIFF LZW rules of the GPU decoder (src/gpucodec/lzw/lzw_rules.h) and PackBits' (packbits_rules.h), without a
 * GPU: the code widths and where each code of a segment starts; the reference decoder against the test encoder
 * (every width switch, ClearCodes anywhere, a table that fills without one, KwKwK, no EOI, padding) and against
 * the host codec (src/codec/tiff_lzw.c: its encoder's streams, and the same verdict on damaged streams); and a CPU
 * model of the GPU kernel's walk, in batches of 32 and of 64 codes as lzw_kernels.cu takes them, which must give the
 * same bytes and verdicts, and one of its segmented path (bounds, lengths, segments in any order from the sums of
 * the lengths before them), which must give the same status and bytes. PackBits: the reference decoder against the host codec on valid and damaged streams.
 * Under the sanitizers (make test-asan) a sample of the valid and damaged streams runs (sampling.h). */
#include "codec/codec.h"
#include "codec/tiff_lzw.h"
#include "common/buf.h"
#include "gpucodec/lzw/lzw_check.h"
#include "gpucodec/lzw/lzw_rules.h"
#include "gpucodec/packbits/packbits_check.h"
#include "gpucodec/packbits/packbits_rules.h"
#include "sampling.h"
#include "test.h"
#include "tiff_gpu_cases.h"

extern const zg_codec_vtable zg_codec_packbits;

/* ---- a CPU model of lzw_kernels.cu's decode_stream: the same batches (of B codes), ballots and order of checks */
enum { MB = 64 };
static uint16_t m_code[ZG_LZW_SEG_CODES], m_len[ZG_LZW_SEG_CODES];
static uint8_t m_first[ZG_LZW_SEG_CODES];

static int first_set(const int *v, unsigned from, unsigned none, unsigned B) {
    for (unsigned l = from; l < B; l++)
        if (v[l]) return (int)l;
    return (int)none;
}

/* From bit seg0 with op0 bytes before it; one_segment: OK at the segment's ClearCode (the segmented path). */
static int model_decode_from(const uint8_t *p, size_t n, uint8_t *out, size_t expected, size_t *op_out, unsigned B,
                             uint64_t seg0, uint32_t op0, int one_segment) {
    uint64_t seg = seg0;
    uint32_t k0 = 0, op = op0;
    for (;;) {
        *op_out = op;
        if (op == expected) return ZG_LZW_OK;
        uint32_t c[MB], len[MB], first[MB], end[MB], mine[MB];
        uint64_t bit[MB];
        unsigned w[MB];
        int have[MB], special[MB], active[MB], bad[MB], done[MB], src[MB];
        for (unsigned l = 0; l < B; l++) {
            const uint32_t k = k0 + l;
            w[l] = zg_lzw_width(k);
            bit[l] = seg + zg_lzw_bit_at(k);
            c[l] = 0;
            have[l] = zg_lzw_read(p, n, bit[l], w[l], &c[l]);
            special[l] = !have[l] || c[l] == ZG_LZW_CLEAR || c[l] == ZG_LZW_EOI;
        }
        const unsigned nb = (unsigned)first_set(special, 0, B, B);
        for (unsigned l = 0; l < B; l++) {
            active[l] = l < nb;
            bad[l] = active[l] && !zg_lzw_code_ok(c[l], k0 + l);
            len[l] = 1;
            first[l] = c[l] & 0xff;
            done[l] = !active[l] || bad[l] || c[l] < 256;
            src[l] = (int)l;
            if (!done[l]) {
                const uint32_t m = c[l] - ZG_LZW_FIRST;
                if (m < k0) {
                    len[l] = m_len[m] + 1u;
                    first[l] = m_first[m];
                    done[l] = 1;
                } else {
                    src[l] = (int)(m - k0);
                    CHECK(src[l] < (int)l);
                }
            }
        }
        for (;;) { /* rounds of shuffles: every lane reads its source's values of the round before */
            int any = 0;
            uint32_t sl[MB], sf[MB];
            int sd[MB];
            for (unsigned l = 0; l < B; l++) sl[l] = len[src[l]], sf[l] = first[src[l]], sd[l] = done[src[l]];
            for (unsigned l = 0; l < B; l++) any |= !done[l];
            if (!any) break;
            for (unsigned l = 0; l < B; l++)
                if (!done[l] && sd[l]) len[l] = sl[l] + 1, first[l] = sf[l], done[l] = 1;
        }
        uint32_t run = 0;
        for (unsigned l = 0; l < B; l++) mine[l] = active[l] ? len[l] : 0, run += mine[l], end[l] = run;
        int fv[MB], tv[MB];
        for (unsigned l = 0; l < B; l++) {
            fv[l] = active[l] && (uint64_t)op + end[l] - mine[l] >= expected;
            tv[l] = active[l] && (uint64_t)op + end[l] > expected;
        }
        const unsigned f = (unsigned)first_set(fv, 0, nb, B), b = (unsigned)first_set(bad, 0, B, B),
                       t = (unsigned)first_set(tv, 0, B, B);
        if (b < f || t < f) return b <= t ? ZG_LZW_E_CODE : ZG_LZW_E_TOO_LONG;
        for (unsigned l = 0; l < f; l++) {
            const uint32_t k = k0 + l;
            if (k < ZG_LZW_SEG_CODES) m_code[k] = (uint16_t)c[l], m_len[k] = (uint16_t)len[l], m_first[k] = (uint8_t)first[l];
        }
        for (unsigned l = 0; l < f; l++) {
            uint32_t at = op + end[l] - 1, cur = c[l];
            while (cur >= ZG_LZW_FIRST) {
                const uint32_t m = cur - ZG_LZW_FIRST;
                CHECK(at < expected);
                out[at--] = m_first[m + 1];
                cur = m_code[m];
            }
            out[at] = (uint8_t)cur;
        }
        op += f ? end[f - 1] : 0;
        k0 += f;
        if (f < nb || nb == B) continue;
        *op_out = op;
        if (!have[nb]) return op == expected ? ZG_LZW_OK : ZG_LZW_E_TRUNC;
        if (c[nb] == ZG_LZW_EOI) return op == expected ? ZG_LZW_OK : ZG_LZW_E_SHORT;
        if (one_segment) return ZG_LZW_OK;
        seg = bit[nb] + w[nb];
        k0 = 0;
    }
}

static int model_decode(const uint8_t *p, size_t n, uint8_t *out, size_t expected, size_t *op_out, unsigned B) {
    return model_decode_from(p, n, out, expected, op_out, B, 0, 0, 0);
}

/* ---- a CPU model of the segmented path (lzw_kernels.cu's bounds, lengths and segments kernels; lzw_rules.h) */
static uint16_t s_len[ZG_LZW_SEG_CODES];

/* The bounds pass: each segment's first bit and codes before its special code; the open last slot. */
static uint32_t model_bounds(const uint8_t *p, size_t n, size_t expected, zg_lzw_seg *D, uint32_t slots) {
    uint32_t ns = 0;
    uint64_t seg = 0;
    for (;;) {
        if (expected == 0 || ns + 1 == slots) {
            D[ns++] = (zg_lzw_seg){seg, 0, 0, ZG_LZW_SEG_FINAL, 0};
            return ns;
        }
        uint32_t k = 0, c = 0;
        for (;; k++) {
            c = 0;
            if (!zg_lzw_read(p, n, seg + zg_lzw_bit_at(k), zg_lzw_width(k), &c) || c == ZG_LZW_CLEAR || c == ZG_LZW_EOI)
                break;
        }
        const uint64_t sbit = seg + zg_lzw_bit_at(k);
        const unsigned sw = zg_lzw_width(k);
        const uint32_t kind = sbit + sw <= 8 * (uint64_t)n && c == ZG_LZW_CLEAR ? 0u : (uint32_t)ZG_LZW_SEG_FINAL;
        D[ns++] = (zg_lzw_seg){seg, k, 0, kind, 0};
        if (kind) return ns;
        seg = sbit + sw;
    }
}

/* The lengths pass, in batches of 32 as the kernel: the bytes of the codes before a bad one, stopping once the
 * expected size is reached. */
static void model_lengths(const uint8_t *p, size_t n, size_t expected, zg_lzw_seg *d) {
    if (d->kind & ZG_LZW_SEG_FINAL) return;
    uint64_t total = 0;
    int bad = 0;
    for (uint32_t k0 = 0; k0 < d->codes && total < expected && !bad; k0 += 32) {
        uint32_t len[32];
        for (uint32_t l = 0; l < 32 && k0 + l < d->codes && !bad; l++) { /* (in order: a chain's source first) */
            const uint32_t k = k0 + l;
            uint32_t c = 0;
            CHECK(zg_lzw_read(p, n, d->bit + zg_lzw_bit_at(k), zg_lzw_width(k), &c));
            if (!zg_lzw_code_ok(c, k)) {
                bad = 1;
                break;
            }
            len[l] = c < 256u ? 1u : (c - ZG_LZW_FIRST < k0 ? s_len[c - ZG_LZW_FIRST] : len[c - ZG_LZW_FIRST - k0]) + 1u;
            if (k < ZG_LZW_SEG_CODES) s_len[k] = (uint16_t)len[l];
            total += len[l];
        }
    }
    d->len = (uint32_t)(total < expected ? total : expected);
    d->kind |= bad ? (uint32_t)ZG_LZW_SEG_BAD : 0u;
}

/* The whole path with `slots` slots: segments in an arbitrary order (last to first, as warps may run), each from
 * the sum of the lengths before it; only the deciding one sets the status. */
static int model_segmented(const uint8_t *p, size_t n, uint8_t *out, size_t expected, size_t *op_out, uint32_t slots) {
    zg_lzw_seg *D = malloc(slots * sizeof *D);
    const uint32_t ns = model_bounds(p, n, expected, D, slots);
    for (uint32_t j = 0; j < ns; j++) model_lengths(p, n, expected, &D[j]);
    int status = -1, deciders = 0;
    for (uint32_t jj = ns; jj-- > 0;) {
        uint64_t at = 0;
        int earlier = 0;
        for (uint32_t t = 0; t < jj && !earlier; t++) {
            earlier = zg_lzw_seg_decides(D[t].kind, at, D[t].len, expected);
            at += D[t].len;
        }
        if (earlier) continue;
        const int decides = zg_lzw_seg_decides(D[jj].kind, at, D[jj].len, expected);
        size_t op;
        const int e = model_decode_from(p, n, out, expected, &op, 64, D[jj].bit, (uint32_t)at, !decides);
        if (decides) status = e, *op_out = op, deciders++;
        else CHECK_MSG(e == 0 && op == at + D[jj].len, "a segment that does not decide: %d, %zu bytes", e, op);
    }
    CHECK_MSG(deciders == 1, "%d segments decide the stream", deciders);
    free(D);
    return status;
}

/* ---- one stream through every decoder: the reference, the kernel's model and the host codec ---- */
static uint16_t r_code[ZG_LZW_SEG_CODES], r_len[ZG_LZW_SEG_CODES];
static uint8_t r_first[ZG_LZW_SEG_CODES];

/* Decodes s[0, n) to `expected` bytes every way; want: what it must decode to (NULL: only that all agree).
 * Returns the reference's status. */
static int all_agree(const char *what, const uint8_t *s, size_t n, size_t expected, const uint8_t *want) {
    uint8_t *a = malloc(expected + 1), *b = malloc(expected + 1);
    memset(a, 0xa5, expected + 1);
    memset(b, 0x5a, expected + 1);
    uint64_t bit;
    size_t op, mop;
    const int e = zg_lzw_walk_with(s, n, expected, a, &bit, &op, r_code, r_len, r_first);
    const int me = model_decode(s, n, b, expected, &mop, 64);
    CHECK_MSG(a[expected] == 0xa5 && b[expected] == 0x5a, "%s: wrote past the output", what);
    CHECK_MSG((e == 0) == (me == 0), "%s: reference %s, GPU model %s", what, zg_lzw_error_text(e), zg_lzw_error_text(me));
    {
        uint8_t *b32 = malloc(expected + 1);
        size_t op32;
        const int me32 = model_decode(s, n, b32, expected, &op32, 32); /* (batches of 32: the same) */
        CHECK_MSG(me32 == me && (me || memcmp(b32, b, expected) == 0), "%s: batches of 32 and 64 differ", what);
        free(b32);
    }
    { /* the segmented path: slots by size, and few (the open last slot decodes the rest serially) */
        const uint32_t slots[] = {(uint32_t)zg_lzw_seg_slots(n), 1, 2, 3};
        uint8_t *bs = malloc(expected + 1);
        for (size_t si = 0; si < sizeof slots / sizeof *slots; si++) {
            memset(bs, 0x3c, expected + 1);
            size_t sop;
            const int se = model_segmented(s, n, bs, expected, &sop, slots[si]);
            CHECK_MSG(bs[expected] == 0x3c, "%s: segmented, wrote past the output", what);
            CHECK_MSG(se == me && (me || (sop == mop && memcmp(bs, b, expected) == 0)),
                      "%s: segmented with %u slots: %s, batches %s", what, slots[si], zg_lzw_error_text(se),
                      zg_lzw_error_text(me));
        }
        free(bs);
    }
    zg_buf h = ZG_BUF_INIT;
    const zgpu_status hs = zg_tiff_lzw_decode(s, n, &h, expected, expected);
    CHECK_MSG((e == 0) == (hs == ZGPU_OK), "%s: reference %s, host codec %s", what, zg_lzw_error_text(e),
              hs ? zgpu_last_error() : "valid");
    if (!e) {
        CHECK_MSG(op == expected && memcmp(a, b, expected) == 0, "%s: the GPU model's bytes differ", what);
        CHECK_MSG(hs == ZGPU_OK && h.size == expected && (expected == 0 || memcmp(a, h.data, expected) == 0),
                  "%s: the host codec's bytes differ", what); /* (an empty tile: no buffer to compare) */
    }
    if (want) CHECK_MSG(!e && memcmp(a, want, expected) == 0, "%s: %s", what, e ? zg_lzw_error_text(e) : "bytes differ");
    zg_buf_free(&h);
    free(a);
    free(b);
    return e;
}

static void test_widths(void) {
    CHECK_EQ_U64(zg_lzw_width(0), 9);
    CHECK_EQ_U64(zg_lzw_width(253), 9);
    CHECK_EQ_U64(zg_lzw_width(254), 10);
    CHECK_EQ_U64(zg_lzw_width(765), 10);
    CHECK_EQ_U64(zg_lzw_width(766), 11);
    CHECK_EQ_U64(zg_lzw_width(1789), 11);
    CHECK_EQ_U64(zg_lzw_width(1790), 12);
    CHECK_EQ_U64(zg_lzw_width(100000), 12);
    for (uint32_t k = 0; k < 6000; k++) {
        CHECK_MSG(zg_lzw_bit_at(k + 1) - zg_lzw_bit_at(k) == zg_lzw_width(k), "bit_at(%u)", k);
        /* the largest code k may be (the entry it makes itself) fits its width */
        if (k + ZG_LZW_FIRST - 1 <= ZG_LZW_MAX_ENTRY)
            CHECK_MSG(k + ZG_LZW_FIRST - 1 < (1u << zg_lzw_width(k)), "width(%u)", k);
    }
    /* the next free code at each switch, as libtiff: 511, 1023, 2047 (code k >= 1 makes entry 257 + k) */
    CHECK_EQ_U64(257 + 254, 511);
    CHECK_EQ_U64(257 + 766, 1023);
    CHECK_EQ_U64(257 + 1790, 2047);
}

static void test_valid(void) {
    static const size_t sizes[] = {1, 2, 3, 31, 32, 33, 255, 4096, 65536, 131072, 300001};
    static const zt_lzw_opts opts[] = {
        {0, 0, 0, 0, 0},   {0, 1, 0, 0, 0},    {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}, {0, 0, 0, 0, 7},
        {1, 0, 0, 0, 0},   {2, 0, 0, 0, 0},    {31, 0, 0, 0, 0}, {32, 0, 0, 0, 0}, {33, 0, 0, 0, 0},
        {253, 0, 0, 0, 0}, {254, 0, 0, 0, 0},  {255, 0, 0, 0, 0}, {766, 0, 0, 0, 0}, {1790, 0, 0, 0, 0},
        {1791, 0, 0, 0, 0}, {3000, 1, 0, 1, 3},
    };
    char what[160];
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        const size_t n = sizes[si];
        uint8_t *d = malloc(n), *s = malloc(zt_lzw_bound(n, 8));
        for (int kind = 0; kind < ZT_KINDS; kind++) {
            zt_fill(d, n, kind, si + 3, 256, 1);
            for (size_t oi = 0; oi < sizeof opts / sizeof *opts; oi++) {
                if (n > 70000 && oi % 3) continue; /* (a sample of the options on the largest) */
                if (!zt_take()) continue;
                const size_t sn = zt_lzw_encode(d, n, &opts[oi], s, zt_lzw_bound(n, 8));
                snprintf(what, sizeof what, "%s %zu bytes, options %zu", zt_kind_name[kind], n, oi);
                all_agree(what, s, sn, n, d);
            }
            /* the host codec's encoder (libtiff's choices) */
            zg_buf h = ZG_BUF_INIT;
            CHECK_OK(zg_tiff_lzw_encode(d, n, &h, 0));
            snprintf(what, sizeof what, "%s %zu bytes, host encoder", zt_kind_name[kind], n);
            all_agree(what, h.data, h.size, n, d);
            zg_buf_free(&h);
        }
        free(d);
        free(s);
    }
    /* the empty stream, ClearCode then EOI, decodes to nothing */
    static const uint8_t empty[] = {0x80, 0x00, 0x40}; /* 256, 257 in 9 bits */
    CHECK_EQ_U64(all_agree("empty", empty, sizeof empty, 0, NULL), 0);
    CHECK(zg_lzw_decode_ref(empty, sizeof empty, NULL, 0) == ZGPU_OK);
}

/* A stream of the given codes, each at its width (the caller counts the segment's codes in k). */
static size_t codes_stream(const uint32_t *codes, size_t nc, uint8_t *out) {
    zt_bits b = {out, 64, 0, 0, 0};
    uint32_t k = 0;
    for (size_t i = 0; i < nc; i++) {
        zt_put(&b, codes[i], zg_lzw_width(k));
        k = codes[i] == ZG_LZW_CLEAR ? 0 : k + 1;
    }
    if (b.nacc) zt_put(&b, 0, 8 - b.nacc);
    return b.n;
}

static void test_faults(void) {
    uint8_t s[64];
    size_t n;
    /* KwKwK: 'a', then 258 = "aa" (the entry it makes), then 259 = "aaa" */
    static const uint32_t kwk[] = {256, 'a', 258, 259, 257};
    n = codes_stream(kwk, 5, s);
    CHECK_EQ_U64(all_agree("KwKwK", s, n, 6, (const uint8_t *)"aaaaaa"), 0);
    static const uint32_t ahead[] = {256, 'a', 259, 257}; /* 259 is not made yet */
    n = codes_stream(ahead, 4, s);
    CHECK_EQ_U64(all_agree("code ahead", s, n, 4, NULL), ZG_LZW_E_CODE);
    static const uint32_t first_entry[] = {256, 258, 257}; /* the first code after a ClearCode is an entry */
    n = codes_stream(first_entry, 3, s);
    CHECK_EQ_U64(all_agree("entry first", s, n, 2, NULL), ZG_LZW_E_CODE);
    static const uint32_t early_eoi[] = {256, 'a', 'b', 257};
    n = codes_stream(early_eoi, 4, s);
    CHECK_EQ_U64(all_agree("early EOI", s, n, 3, NULL), ZG_LZW_E_SHORT);
    static const uint32_t no_eoi[] = {256, 'a', 'b', 'c'};
    n = codes_stream(no_eoi, 4, s);
    CHECK_EQ_U64(all_agree("no EOI, full", s, n, 3, (const uint8_t *)"abc"), 0);
    CHECK_EQ_U64(all_agree("no EOI, short", s, n, 5, NULL), ZG_LZW_E_TRUNC);
    static const uint32_t straddle[] = {256, 'a', 'b', 258, 257}; /* "ab" passes a 3-byte output */
    n = codes_stream(straddle, 5, s);
    CHECK_EQ_U64(all_agree("straddles the end", s, n, 3, NULL), ZG_LZW_E_TOO_LONG);
    static const uint32_t padded[] = {256, 'a', 'b', 500, 9, 258, 257}; /* after the output is full: padding */
    n = codes_stream(padded, 7, s);
    CHECK_EQ_U64(all_agree("padding after the output", s, n, 2, (const uint8_t *)"ab"), 0);
    static const uint32_t clears[] = {256, 256, 'x', 256, 256, 'y', 259, 257}; /* ClearCodes in a row */
    n = codes_stream(clears, 8, s);
    CHECK_EQ_U64(all_agree("ClearCodes in a row", s, n, 4, NULL), ZG_LZW_E_CODE); /* 259: not made yet */
    static const uint32_t clears2[] = {256, 256, 'x', 256, 256, 'y', 'z', 258, 257}; /* 258 = "yz" */
    n = codes_stream(clears2, 9, s);
    CHECK_EQ_U64(all_agree("ClearCodes in a row", s, n, 5, (const uint8_t *)"xyzyz"), 0);
    /* old-style streams and sizes past the GPU's positions go to the host */
    static const uint8_t old[] = {0x00, 0x01, 0x02};
    CHECK(zg_lzw_gpu_check(old, sizeof old, 10) != 0);
    CHECK(zg_lzw_decode_ref(old, sizeof old, NULL, 10) == ZGPU_ERR_UNSUPPORTED);
    CHECK(zg_lzw_gpu_check(s, n, (size_t)1 << 31) != 0);
    CHECK(zg_lzw_gpu_check(s, n, 4) == 0);
    CHECK(zg_lzw_decode_ref(s, n, NULL, 6) == ZGPU_ERR_CORRUPT_DATA);

    /* damaged streams: cut, bits flipped, bytes replaced, sizes that lie; all decoders agree, nothing is written
     * past the output */
    const size_t dn = 20000;
    uint8_t *d = malloc(dn), *z = malloc(zt_lzw_bound(dn, 0)), *bad = malloc(zt_lzw_bound(dn, 0));
    uint64_t seed = 7;
    char what[120];
    for (int kind = 0; kind < ZT_KINDS; kind++) {
        zt_fill(d, dn, kind, 11, 100, 1);
        const zt_lzw_opts o = {kind == ZT_RANDOM ? 0 : 500, 0, 0, 0, 0};
        const size_t zn = zt_lzw_encode(d, dn, &o, z, zt_lzw_bound(dn, 0));
        for (int trial = 0; trial < 150; trial++) {
            size_t bn = zn, want = dn;
            memcpy(bad, z, zn);
            switch (trial % 5) {
            case 0: bn = (size_t)(zt_rng(&seed) % zn); break;
            case 1: bad[zt_rng(&seed) % zn] ^= (uint8_t)(1u << (zt_rng(&seed) & 7)); break;
            case 2:
                for (int j = 0; j < 4; j++) bad[zt_rng(&seed) % zn] = (uint8_t)zt_rng(&seed);
                break;
            case 3: want = dn + 1 + zt_rng(&seed) % 100; break;
            default: want = zt_rng(&seed) % dn; break;
            }
            if (!zt_take()) continue; /* (the damage drawn either way: a sample's cases are a whole run's) */
            snprintf(what, sizeof what, "%s damaged %d", zt_kind_name[kind], trial);
            all_agree(what, bad, bn, want, NULL);
        }
    }
    free(d);
    free(z);
    free(bad);
}

/* PackBits: the reference decoder against the host codec. */
static int pb_agree(const char *what, const uint8_t *s, size_t n, size_t expected, const uint8_t *want) {
    uint8_t *a = malloc(expected + 1);
    memset(a, 0xa5, expected + 1);
    size_t ip, op;
    const int e = zg_pb_walk(s, n, expected, a, &ip, &op);
    CHECK_MSG(a[expected] == 0xa5, "%s: wrote past the output", what);
    zg_codec *c = NULL;
    CHECK_OK(zg_codec_packbits.create(NULL, NULL, &c));
    zg_buf h = ZG_BUF_INIT;
    const zgpu_status hs = zg_codec_packbits.decode_bytes(c, s, n, &h, zg_out_exact(expected));
    CHECK_MSG((e == 0) == (hs == ZGPU_OK), "%s: reference %s, host codec %s", what, zg_packbits_error_text(e),
              hs ? zgpu_last_error() : "valid");
    if (!e && hs == ZGPU_OK) CHECK_MSG(h.size == expected && memcmp(a, h.data, expected) == 0, "%s: bytes differ", what);
    if (want) CHECK_MSG(!e && memcmp(a, want, expected) == 0, "%s: %s", what, zg_packbits_error_text(e));
    zg_buf_free(&h);
    zg_codec_packbits.destroy(c);
    free(a);
    return e;
}

static void test_packbits(void) {
    const size_t n = 50000;
    uint8_t *d = malloc(n), *s = malloc(2 * n + 1000), *bad = malloc(2 * n + 1000);
    uint64_t seed = 5;
    char what[120];
    for (int kind = 0; kind < ZT_KINDS; kind++) {
        zt_fill(d, n, kind, 9, 128, 0);
        for (unsigned noop = 0; noop < 3; noop++) {
            const size_t sn = zt_packbits_encode(d, n, s, noop);
            snprintf(what, sizeof what, "packbits %s noop %u", zt_kind_name[kind], noop);
            CHECK_EQ_U64(pb_agree(what, s, sn, n, d), 0);
            for (int trial = 0; trial < 60; trial++) {
                size_t bn = sn, want = n;
                memcpy(bad, s, sn);
                switch (trial % 4) {
                case 0: bn = (size_t)(zt_rng(&seed) % sn); break;
                case 1: bad[zt_rng(&seed) % sn] = (uint8_t)zt_rng(&seed); break;
                case 2: want = n + 1 + zt_rng(&seed) % 300; break;
                default: want = zt_rng(&seed) % n; break;
                }
                if (!zt_take()) continue;
                snprintf(what, sizeof what, "packbits %s damaged %d", zt_kind_name[kind], trial);
                pb_agree(what, bad, bn, want, NULL);
            }
        }
    }
    static const uint8_t cut_run[] = {0xfe}; /* a run without its byte */
    CHECK_EQ_U64(pb_agree("cut run", cut_run, 1, 3, NULL), ZG_PB_E_TRUNC);
    static const uint8_t cut_copy[] = {0x03, 'a', 'b'};
    CHECK_EQ_U64(pb_agree("cut copy", cut_copy, 3, 4, NULL), ZG_PB_E_TRUNC);
    static const uint8_t trailing[] = {0x01, 'a', 'b', 0xff, 'c'}; /* the output is full after "ab" */
    CHECK_EQ_U64(pb_agree("trailing bytes", trailing, 5, 2, (const uint8_t *)"ab"), 0);
    static const uint8_t one[] = {0x00, 'a'};
    CHECK_EQ_U64(pb_agree("short", one, 2, 2, NULL), ZG_PB_E_SHORT);
    free(d);
    free(s);
    free(bad);
}

/* The test predictors are each other's inverses (the GPU test compares the kernels with them). */
static void test_predictor_refs(void) {
    const size_t n = 4 * 3 * 40 * 8;
    uint8_t *a = malloc(n), *b = malloc(n), *c = malloc(n);
    uint64_t seed = 3;
    for (size_t i = 0; i < n; i++) a[i] = (uint8_t)zt_rng(&seed);
    static const unsigned sizes[] = {1, 2, 4, 8};
    for (int si = 0; si < 4; si++) {
        const unsigned es = sizes[si];
        memcpy(b, a, n);
        zt_pred2(b, n, es, 40 * 3, 3, 0);
        zt_pred2(b, n, es, 40 * 3, 3, 1);
        CHECK_MSG(memcmp(a, b, n) == 0, "predictor 2, %u bytes", es);
        if (es == 1) continue;
        zt_pred3(a, b, n, es, 40 * 3, 3, 0);
        zt_pred3(b, c, n, es, 40 * 3, 3, 1);
        CHECK_MSG(memcmp(a, c, n) == 0, "predictor 3, %u bytes", es);
    }
    free(a);
    free(b);
    free(c);
}

int main(void) {
    zt_sample_init();
    test_widths();
    test_valid();
    test_faults();
    test_packbits();
    test_predictor_refs();
    zt_sample_report();
    TEST_MAIN_END();
}
