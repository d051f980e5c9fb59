/* zgpu's GPU DEFLATE decoder (src/gpucodec/deflate/inflate_rules.h), run on the CPU: the kernel's phases with the lanes of
 * a thread block emulated one after another. Streams from zlib (every level and strategy, small and large
 * blocks) and libdeflate, on data like the benchmark volumes (noisy 16-bit images, label runs, floats) and
 * text; damaged streams must give the error libdeflate gives (same verdict, never a wild access: ASan). Each
 * stream decodes in the mode its ratio picks (windows, or serial mode from 8:1), then again forced into serial
 * mode and into windows: the same bytes and verdicts. Under the sanitizers (make test-asan) a sample of the cases
 * runs (sampling.h: ZGPU_TEST_SAMPLE); the Release build's ctest and make test-long run them all. */
#include "gpucodec/deflate/inflate_rules.h"
#include "inflate_cases.h"
#include "sampling.h"
#include "test.h"

static zi_shared *SH;
static zi_find_scratch FS;
static void *ML;
static size_t windows, short_windows, rounds, serial_runs, serial_parts; /* serial_parts: parts k > 0 */
static int force_serial = -1; /* -1: the decoder's choice (zi_stream); 0 / 1: windows / serial mode for every stream */

static int run_decoder(const uint8_t *c, size_t cn, uint8_t *out, size_t cap, size_t *actual) {
    int status = -1;
    *actual = 0;
    if (force_serial < 0) {
        zi_stream(SH, c, (uint32_t)cn, out, (uint32_t)cap, ML, &status, actual);
    } else {
        zi_spec spec;
        memset(&spec, 0, sizeof spec);
        spec.cap = (uint32_t)cap;
        spec.serial = (uint32_t)force_serial;
        zi_decode(SH, c, (uint32_t)cn, out, ML, &spec);
        status = zi_verdict(SH);
        *actual = SH->outpos;
    }
    serial_runs += SH->serial;
    windows += SH->stat_windows;
    short_windows += SH->stat_short;
    rounds += SH->stat_rounds;
    return status;
}

static void check_one(const sample *s, const uint8_t *c, size_t cn, const char *how) {
    uint8_t *out = malloc(s->n + 1);
    size_t actual;
    int st = run_decoder(c, cn, out, s->n, &actual);
    CHECK_MSG(st == ZI_OK, "%s %s: %s", s->name, how, zi_error_text(st));
    CHECK_MSG(st != ZI_OK || (actual == s->n && memcmp(out, s->p, s->n) == 0), "%s %s: output differs", s->name, how);
    free(out);
}

/* Every level and strategy of zlib, small blocks (memLevel 1) and large ones, and libdeflate's levels. */
static void test_valid_streams(void) {
    const int kinds[] = {0, 1, 2, 3, 4, 5};
    const char *names[] = {"u16-image", "labels", "text", "random", "floats", "zeros"};
    const size_t sizes[] = {0, 1, 300, 70000, 256u << 10};
    for (int ki = 0; ki < 6; ki++) {
        for (int si = 0; si < 5; si++) {
            sample s = make(names[ki], sizes[si], kinds[ki]);
            const int levels[] = {0, 1, 6, 9};
            const int strategies[] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
            for (int l = 0; l < 4; l++)
                for (int st = 0; st < 5; st++) {
                    /* 256 KiB (many blocks and windows): the default, fixed codes and Huffman only (keeps CI short) */
                    if (sizes[si] >= (256u << 10) && (l != 2 || st == 1 || st == 3)) continue;
                    for (int mem = 1; mem <= 9; mem += 8) {
                        if (!zt_take()) continue;
                        size_t cn;
                        uint8_t *c = zlib_raw(&s, levels[l], strategies[st], mem, &cn);
                        CHECK(c != NULL);
                        if (!c) continue;
                        char how[80];
                        snprintf(how, sizeof how, "n=%zu zlib level %d strategy %d mem %d", s.n, levels[l],
                                 strategies[st], mem);
                        check_one(&s, c, cn, how);
                        free(c);
                    }
                }
            const int dl[] = {1, 6, 12};
            for (int l = 0; l < 3; l++) {
                if (!zt_take()) continue;
                size_t cn;
                uint8_t *c = libdeflate_raw(&s, dl[l], &cn);
                char how[80];
                snprintf(how, sizeof how, "n=%zu libdeflate level %d", s.n, dl[l]);
                check_one(&s, c, cn, how);
                free(c);
            }
            free(s.p);
        }
    }
}

static void test_damaged_streams(void) {
    const int kinds[] = {0, 1, 2, 4};
    size_t agree = 0, ours_err = 0;
    for (int ki = 0; ki < 4; ki++) {
        sample s = make("damaged", 60000, kinds[ki]);
        for (int variant = 0; variant < 3; variant++) {
            size_t cn;
            uint8_t *c = variant == 2 ? libdeflate_raw(&s, 9, &cn) : zlib_raw(&s, variant ? 9 : 1, Z_DEFAULT_STRATEGY, 8, &cn);
            uint8_t *d = malloc(cn + 64), *o1 = malloc(s.n + 1), *o2 = malloc(s.n + 1);
            for (int trial = 0; trial < 36; trial++) {
                const size_t dn = damage(c, cn, d, trial); /* (always: the damage draws from rnd) */
                if (!zt_take()) continue;
                size_t actual;
                const int st = run_decoder(d, dn, o1, s.n, &actual);
                const int ok = reference_decode(d, dn, o2, s.n);
                CHECK_MSG((st == ZI_OK) == ok, "kind %d variant %d trial %d: ours %s, libdeflate %s", kinds[ki], variant,
                          trial, zi_error_text(st), ok ? "fine" : "an error");
                if (st == ZI_OK && ok) CHECK(memcmp(o1, o2, s.n) == 0);
                agree += (st == ZI_OK) == ok;
                ours_err += st != ZI_OK;
                CHECK(actual <= s.n);
            }
            free(d);
            free(o1);
            free(o2);
            free(c);
        }
        free(s.p);
    }
    printf("damaged streams: %zu verdicts as libdeflate's, %zu errors\n", agree, ours_err);
    CHECK(zt_enough(ours_err, 300)); /* the trials do damage most streams */
}

/* Bits LSB first (header fields); Huffman codes go most significant bit first (put_code). */
static void put_bits(uint8_t *b, uint32_t *pos, uint32_t v, int n) {
    for (int q = 0; q < n; q++, (*pos)++) b[*pos >> 3] |= (uint8_t)(((v >> q) & 1) << (*pos & 7));
}
static void put_code(uint8_t *b, uint32_t *pos, uint32_t code, int n) {
    for (int q = n - 1; q >= 0; q--, (*pos)++) b[*pos >> 3] |= (uint8_t)(((code >> q) & 1) << (*pos & 7));
}

/* A final fixed-code block: an optional literal (fixed code 0x30 + byte, 8 bits), a match of length 3 (symbol
 * 257: 7 bits 0000001) with distance code dist_code (5 bits), end of block (7 zero bits). Returns its bytes. */
static size_t fixed_block(uint8_t *b, int literal, uint32_t dist_code) {
    uint32_t pos = 0;
    memset(b, 0, 8);
    put_bits(b, &pos, 1 | 1 << 1, 3); /* BFINAL, BTYPE 1 */
    if (literal >= 0) put_code(b, &pos, 0x30 + (uint32_t)literal, 8);
    put_code(b, &pos, 1, 7);
    put_code(b, &pos, dist_code, 5);
    put_code(b, &pos, 0, 7);
    return (pos + 7) / 8;
}

/* Hand-made streams: each named error. */
static void test_named_errors(void) {
    uint8_t out[64];
    size_t actual;
    const uint8_t btype3[] = {0x07, 0x00};
    CHECK_EQ_U64(run_decoder(btype3, 2, out, 4, &actual), ZI_E_BTYPE);
    const uint8_t stored_bad[] = {0x01, 0x04, 0x00, 0xfb, 0xfe, 'a', 'b', 'c', 'd'}; /* NLEN wrong */
    CHECK_EQ_U64(run_decoder(stored_bad, sizeof stored_bad, out, 4, &actual), ZI_E_STORED);
    const uint8_t stored_ok[] = {0x01, 0x04, 0x00, 0xfb, 0xff, 'a', 'b', 'c', 'd'};
    CHECK_EQ_U64(run_decoder(stored_ok, sizeof stored_ok, out, 4, &actual), ZI_OK);
    CHECK(memcmp(out, "abcd", 4) == 0);
    CHECK_EQ_U64(run_decoder(stored_ok, sizeof stored_ok, out, 3, &actual), ZI_E_OVERFLOW);
    CHECK_EQ_U64(run_decoder(stored_ok, sizeof stored_ok, out, 5, &actual), ZI_E_SIZE);
    CHECK_EQ_U64(run_decoder(stored_ok, sizeof stored_ok - 1, out, 4, &actual), ZI_E_TRUNC);
    const uint8_t stored_more[] = {0x01, 0x04, 0x00, 0xfb, 0xff, 'a', 'b', 'c', 'd', 0};
    CHECK_EQ_U64(run_decoder(stored_more, sizeof stored_more, out, 4, &actual), ZI_E_TRAILING);
    /* zlib's fixed-code block */
    sample s = make("x", 40, 2);
    size_t cn;
    uint8_t *c = zlib_raw(&s, 6, Z_FIXED, 8, &cn);
    CHECK_EQ_U64(run_decoder(c, cn, out, 40, &actual), ZI_OK);
    CHECK(memcmp(out, s.p, 40) == 0);
    free(c);
    free(s.p);
    /* fixed-code blocks: a match of distance 1 with no byte before it; the same after a literal; distance
     * symbol 30, which has no meaning */
    uint8_t b[8];
    CHECK_EQ_U64(run_decoder(b, fixed_block(b, -1, 0), out, 3, &actual), ZI_E_DIST);
    CHECK_EQ_U64(run_decoder(b, fixed_block(b, 'a', 0), out, 4, &actual), ZI_OK);
    CHECK(memcmp(out, "aaaa", 4) == 0);
    CHECK_EQ_U64(run_decoder(b, fixed_block(b, 'a', 30), out, 4, &actual), ZI_E_SYMBOL);
    /* dynamic header with HCLEN lengths all zero: no code-length code */
    memset(b, 0, sizeof b);
    uint32_t pos = 0;
    put_bits(b, &pos, 1 | 2 << 1, 3); /* BFINAL, BTYPE 2 */
    put_bits(b, &pos, 0, 5 + 5 + 4);  /* HLIT, HDIST, HCLEN */
    put_bits(b, &pos, 0, 12);         /* four code-length code lengths of 0 */
    CHECK_EQ_U64(run_decoder(b, (pos + 7) / 8 + 2, out, 4, &actual), ZI_E_HEADER);
}

/* Many streams decoded back to back reuse the shared state: nothing may leak from one to the next. */
static void test_reuse(void) {
    sample a = make("a", 300000, 2), b = make("b", 300000, 1);
    size_t an, bn;
    uint8_t *ac = zlib_raw(&a, 6, Z_DEFAULT_STRATEGY, 8, &an), *bc = zlib_raw(&b, 6, Z_DEFAULT_STRATEGY, 8, &bn);
    for (int r = 0; r < 3; r++) {
        check_one(&a, ac, an, "reuse a");
        check_one(&b, bc, bn, "reuse b");
    }
    free(ac);
    free(bc);
    free(a.p);
    free(b.p);
}

/* ------------------------------------------------------------------------------------------------ parts */
/* The parts flow of inflate_kernels.cu on the CPU: find each part's start, decode every part (part 0 into out,
 * the others into 16-bit buffers), chain them, resolve the marks in chain order; a stream the chain rejects is
 * decoded again whole. force_start (k, bit): replaces part k's found start (a wrong guess), k = 0: none. */
typedef struct parts_result {
    uint32_t np, nfound, nchain, redone; /* parts, those with a start (part 0 and the finder's), in the chain */
} parts_result;

static int run_parts(const uint8_t *c, size_t cn, uint8_t *out, size_t cap, uint32_t P, uint32_t min_bytes,
                     uint32_t force_k, uint32_t force_bit, parts_result *r) {
    const uint32_t np = zi_stream_parts((uint32_t)cn, P, min_bytes), nbits = (uint32_t)cn * 8;
    uint32_t start[ZI_MAX_PARTS] = {0};
    for (uint32_t k = 1; k < np; k++) {
        const uint32_t from = zi_part_from(nbits, k, np), to = zi_part_from(nbits, k + 1, np);
        start[k] = zi_find_first(c, (uint32_t)cn, from, to, &FS);
    }
    if (force_k && force_k < np) start[force_k] = force_bit;
    const uint32_t slot = zi_part_slot((uint32_t)cap, np);
    uint16_t *slots = malloc(sizeof(uint16_t) * slot * (np > 1 ? np - 1 : 1)), *wide[ZI_MAX_PARTS] = {0};
    int status[ZI_MAX_PARTS];
    uint32_t size[ZI_MAX_PARTS], end[ZI_MAX_PARTS];
    for (uint32_t k = 0; k < np; k++) {
        status[k] = ZI_OK;
        size[k] = 0;
        end[k] = np - 1 - k;
        if (k && start[k] == ZI_NO_BIT) continue;
        zi_spec sp = zi_part_spec(start, k, np, k ? slot * zi_part_slots(start, k, np) : (uint32_t)cap);
        sp.serial = force_serial >= 0 ? (uint32_t)force_serial : (uint32_t)zi_serial_wanted((uint32_t)cn, (uint32_t)cap);
        sp.seg = zi_seg_wanted((uint32_t)cn, (uint32_t)cap);
        wide[k] = k ? slots + (size_t)slot * (k - 1) : NULL;
        zi_decode(SH, c, (uint32_t)cn, k ? (void *)wide[k] : (void *)out, ML, &sp);
        serial_parts += k && SH->serial;
        status[k] = zi_verdict(SH);
        size[k] = SH->outpos - SH->out0;
        end[k] = SH->end_part;
    }
    uint32_t chain[ZI_MAX_PARTS], off[ZI_MAX_PARTS], nchain = 0;
    int redo = zi_parts_chain(status, size, end, start, np, (uint32_t)cap, chain, off, &nchain);
    /* as the kernels: the tails (last ZI_WINDOW elements) in chain order, then the rest, last part first (any
     * order must do: what they read is final) */
    for (uint32_t q = 1; q < nchain && !redo; q++) {
        const uint32_t sz = size[chain[q]], tail = sz < ZI_WINDOW ? 0 : sz - ZI_WINDOW;
        for (uint32_t i = tail; i < sz && !redo; i++) redo = zi_part_resolve(out, off[q], wide[chain[q]], i);
    }
    for (uint32_t q = nchain; q-- > 1 && !redo;) {
        const uint32_t sz = size[chain[q]], tail = sz < ZI_WINDOW ? 0 : sz - ZI_WINDOW;
        for (uint32_t i = tail; i-- > 0 && !redo;) redo = zi_part_resolve(out, off[q], wide[chain[q]], i);
    }
    free(slots);
    r->np = np;
    r->nfound = 1;
    for (uint32_t k = 1; k < np; k++) r->nfound += start[k] != ZI_NO_BIT;
    r->nchain = redo ? 0 : nchain;
    r->redone = (uint32_t)redo;
    if (!redo) return ZI_OK;
    size_t actual;
    return run_decoder(c, cn, out, cap, &actual);
}

/* Streams of many blocks split into 2, 3 and 8 parts: the same bytes as the whole decode; the finder's guesses
 * are right on zlib's and libdeflate's streams (every part in the chain); a wrong guess is passed over. */
static void test_parts(void) {
    const int kinds[] = {0, 1, 4, 2};
    const char *names[] = {"u16-image", "labels", "floats", "text"};
    size_t chained = 0, found = 0, parts = 0, redone = 0;
    for (int ki = 0; ki < 4; ki++) {
        sample s = make(names[ki], 1u << 20, kinds[ki]);
        for (int variant = 0; variant < 3; variant++) {
            size_t cn;
            uint8_t *c = variant == 2 ? libdeflate_raw(&s, 6, &cn) : zlib_raw(&s, 6, Z_DEFAULT_STRATEGY, variant ? 9 : 1, &cn);
            uint8_t *out = malloc(s.n + 1);
            const uint32_t Ps[] = {2, 3, 8};
            for (int pi = 0; pi < 3; pi++) {
                if (!zt_take()) continue;
                parts_result r;
                memset(out, 0xa5, s.n);
                const int st = run_parts(c, cn, out, s.n, Ps[pi], 1024, 0, 0, &r);
                CHECK_MSG(st == ZI_OK && memcmp(out, s.p, s.n) == 0, "%s variant %d, %u parts: %s%s", s.name, variant,
                          Ps[pi], zi_error_text(st), st == ZI_OK ? ", output differs" : "");
                chained += r.nchain;
                found += r.nfound;
                parts += r.np;
                redone += r.redone;
                /* a wrong guess (one bit past part 1's start): part 0 decodes through, nothing else changes */
                memset(out, 0xa5, s.n);
                const int st2 = run_parts(c, cn, out, s.n, Ps[pi], 1024, 1, zi_part_from((uint32_t)cn * 8, 1, r.np) + 1, &r);
                CHECK_MSG(st2 == ZI_OK && memcmp(out, s.p, s.n) == 0, "%s variant %d, %u parts, wrong guess: %s",
                          s.name, variant, Ps[pi], zi_error_text(st2));
            }
            free(out);
            free(c);
        }
        free(s.p);
    }
    printf("parts: %zu, %zu with a start (the others' slices hold no block start), %zu of them in their stream's "
           "chain, %zu streams decoded again whole; %zu later parts in serial mode so far\n", parts, found, chained,
           redone, serial_parts);
    CHECK(redone == 0);
    CHECK(chained == found); /* every guess of the finder was a block start */
    if (!zt_sampled()) { /* (counts over every stream: a sample holds a few of the 36) */
        CHECK(parts > 100);
        CHECK(found * 10 >= parts * 8);
    }
}

/* Damaged streams split into parts give the verdict of the whole decode (the chain sends them to a redo or
 * decodes them the same way). */
static void test_parts_damaged(void) {
    sample s = make("damaged", 200000, 0);
    size_t cn;
    uint8_t *c = zlib_raw(&s, 6, Z_DEFAULT_STRATEGY, 1, &cn);
    uint8_t *d = malloc(cn + 64), *o1 = malloc(s.n + 1), *o2 = malloc(s.n + 1);
    size_t errors = 0;
    for (int trial = 0; trial < 36; trial++) {
        const size_t dn = damage(c, cn, d, trial);
        if (!zt_take()) continue;
        size_t actual;
        parts_result r;
        const int whole = run_decoder(d, dn, o1, s.n, &actual);
        const int st = run_parts(d, dn, o2, s.n, 4, 1024, 0, 0, &r);
        CHECK_MSG(st == whole, "trial %d: parts %s, whole %s", trial, zi_error_text(st), zi_error_text(whole));
        if (st == ZI_OK && whole == ZI_OK) CHECK(memcmp(o1, o2, s.n) == 0);
        errors += st != ZI_OK;
    }
    if (!zt_sampled()) CHECK(errors > 10); /* (of the 36 trials: a sample holds a few) */
    free(d);
    free(o1);
    free(o2);
    free(c);
    free(s.p);
}

/* zi_header_quick32's checks one position at a time, read field by field (what its bit-sliced steps compute). */
static int quick_reference(const uint8_t *in, uint32_t nbytes, uint32_t c) {
    if (c + 17 > nbytes * 8) return 0;
    zi_br b;
    zi_br_init(&b, in, nbytes, c);
    const uint32_t h = zi_get(&b, 17);
    if (((h >> 1) & 3) != 2 || ((h >> 3) & 31) > 29 || ((h >> 8) & 31) > 29) return 0;
    uint32_t kraft = 0;
    for (uint32_t i = 0; i < 4 + (h >> 13); i++) {
        const uint32_t l = zi_get(&b, 3);
        kraft += l ? 128u >> l : 0;
    }
    return kraft == 128;
}

/* Bit positions scanned as one case (sampling.h): 4 KiB of input. */
#define SPAN 32768u

/* The finder on random bytes: a header passing every check is rare (a wrong guess costs a part's time). */
static void test_finder_random(void) {
    /* the bit-sliced quick checks agree with the reference at every position, up to the end of the input, on
     * random bytes and on bytes with mostly zero bits (more positions get far into the code-length code) */
    for (int biased = 0; biased < 2; biased++) {
        const uint32_t n = (1u << 18) + 3;
        uint8_t *b = malloc(n);
        for (uint32_t i = 0; i < n; i++) b[i] = (uint8_t)(biased ? rnd() & rnd() & rnd() : rnd());
        uint32_t differ = 0, pass = 0;
        for (uint32_t c0 = 0; c0 < n * 8 + 64; c0 += SPAN) {
            if (!zt_take()) continue;
            for (uint32_t c = c0; c < c0 + SPAN && c < n * 8 + 64; c++) {
                const int r = quick_reference(b, n, c);
                pass += (uint32_t)r;
                differ += (uint32_t)(r != zi_header_quick(b, n, c));
            }
        }
        CHECK_EQ_U64(differ, 0);
        CHECK(zt_enough(pass, 100));
        free(b);
    }
    const uint32_t n = 4u << 20;
    uint8_t *b = malloc(n);
    for (uint32_t i = 0; i < n; i++) b[i] = (uint8_t)rnd();
    uint32_t hits = 0, quick = 0, scanned = 0;
    for (uint32_t c0 = 0; c0 + 4096 < n * 8; c0 += SPAN) {
        if (!zt_take()) continue;
        for (uint32_t c = c0; c < c0 + SPAN && c + 4096 < n * 8; c++, scanned++) {
            const int q = zi_header_quick(b, n, c);
            quick += (uint32_t)q;
            if (q) hits += (uint32_t)zi_header_at(b, n, c, &FS);
        }
    }
    printf("finder: %u of %u random bit positions pass the quick checks, %u every check\n", quick, scanned, hits);
    CHECK(hits <= 4);
    CHECK(zt_enough(quick, 1000) && (uint64_t)quick * 20 <= scanned);
    /* the quick checks are necessary: every header of a real stream passes them */
    sample s = make("floats", 1u << 20, 4);
    size_t cn;
    uint8_t *c = zlib_raw(&s, 6, Z_DEFAULT_STRATEGY, 1, &cn);
    uint32_t full = 0, missed = 0;
    for (uint32_t x0 = 0; x0 < (uint32_t)cn * 8; x0 += SPAN) {
        if (!zt_take()) continue;
        for (uint32_t x = x0; x < x0 + SPAN && x < (uint32_t)cn * 8; x++)
            if (zi_header_at(c, (uint32_t)cn, x, &FS)) {
                full++;
                missed += !zi_header_quick(c, (uint32_t)cn, x);
            }
    }
    CHECK(zt_enough(full, 10));
    CHECK_EQ_U64(missed, 0);
    /* a round's word masks keep exactly [from, to): the rounds find the first full hit at or after from */
    for (int t = 0; t < 40; t++) {
        const uint32_t from = rnd() % ((uint32_t)cn * 8), to = t % 4 ? (uint32_t)cn * 8 : from + 1 + rnd() % 40000;
        if (!zt_take()) continue;
        uint32_t want = ZI_NO_BIT;
        for (uint32_t x = from; x < to && x < (uint32_t)cn * 8 && want == ZI_NO_BIT; x++)
            if (zi_header_at(c, (uint32_t)cn, x, &FS)) want = x;
        CHECK_EQ_U64(zi_find_first(c, (uint32_t)cn, from, to, &FS), want);
    }
    /* a round with more candidates than its list: 8192 words that each start with a header passing the quick
     * checks (dynamic, 257 / 1 codes, 4 code-length codes of 2 bits) whose first code length is a repeat of
     * nothing, then the stream: the rounds that overflow resume after their list, and find the stream's start */
    const uint32_t R = 8192, fake = 1u << 2 | 1u << 18 | 1u << 21 | 1u << 24 | 1u << 27 | 1u << 30;
    uint8_t *dense = malloc(R * 4 + cn);
    for (uint32_t r = 0; r < R; r++)
        for (uint32_t k = 0; k < 4; k++) dense[4 * r + k] = (uint8_t)(fake >> (8 * k));
    memcpy(dense + R * 4, c, cn);
    const uint32_t dn = R * 4 + (uint32_t)cn;
    uint32_t listed = 0, want = ZI_NO_BIT;
    for (uint32_t x = 0; x < ZI_FIND_ROUND; x++) listed += (uint32_t)zi_header_quick(dense, dn, x);
    for (uint32_t x = 0; x < dn * 8 && want == ZI_NO_BIT; x++)
        if (zi_header_at(dense, dn, x, &FS)) want = x;
    CHECK(listed > 2 * ZI_FIND_CAND);
    CHECK(want >= R * 32 && want != ZI_NO_BIT);
    CHECK_EQ_U64(zi_find_first(dense, dn, 5, dn * 8, &FS), want);
    free(dense);
    free(c);
    free(s.p);
    free(b);
}

int main(void) {
    zt_sample_init();
    SH = malloc(sizeof *SH);
    ML = malloc(ZI_SCRATCH);
    test_named_errors();
    test_valid_streams();
    printf("valid streams: %zu windows, %zu ended before their last lane (chain break or full match list), %zu "
           "pointer-jumping rounds, %zu streams in serial mode\n", windows, short_windows, rounds, serial_runs);
    CHECK(rounds > (zt_sampled() ? 0 : windows / 4)); /* pointer jumping ran (a share of the windows: of all streams) */
    CHECK(zt_enough(windows, 1000));
    CHECK(zt_enough(serial_runs, 100)); /* labels and zeros compress beyond ZI_SERIAL_RATIO */
    test_damaged_streams();
    test_reuse();
    test_parts();
    test_parts_damaged();
    /* the same streams with every one in serial mode, then every one in windows: the same outputs and verdicts */
    for (force_serial = 1; force_serial >= 0; force_serial--) {
        const size_t before = serial_runs;
        test_named_errors();
        test_valid_streams();
        test_damaged_streams();
        test_parts();
        test_parts_damaged();
        printf("forced %s mode: %zu streams in serial mode\n", force_serial ? "serial" : "windows", serial_runs - before);
        CHECK(force_serial ? zt_enough(serial_runs - before, 1000) : serial_runs == before);
        CHECK(zt_enough(serial_parts, 100)); /* (the forced serial pass decoded every later part in serial mode) */
    }
    force_serial = -1;
    test_finder_random();
    free(SH);
    free(ML);
    zt_sample_report();
    TEST_MAIN_END();
}
