/* zgpu's DEFLATE decoder (RFC 1951): the data it works on and every decoding step, shared by the CUDA kernel
 * (inflate_kernels.cu) and the CPU unit test (tests/unit/test_inflate_decode.c), which runs the very same
 * steps with the lanes of a thread block emulated one after another, so that every rule runs in CI without
 * a GPU. Header-only: static inline, __host__ __device__ under nvcc. C and C++ compatible.
 *
 * Why our own decoder: a DEFLATE stream is one long bit sequence whose symbol boundaries are known only by
 * decoding from the start, so nvCOMP (and every CPU library) decodes a chunk with one thread; a batch of
 * 40-130 chunks of 8-16 MiB then ran at 0.7-1.4 GB/s on an H100. Here a thread block of ZI_NL lanes decodes
 * ONE stream, a window of ZI_NL * ZI_SEG_BITS bits at a time:
 *   pass 1  lane i decodes from bit W0 + i*ZI_SEG_BITS, a guess at a symbol boundary, to the first boundary at
 *           or past the next lane's start, marking every boundary of its path in a bitmap of its segment.
 *           Huffman codes resynchronize: a decode started at a wrong bit soon lands on a true boundary, after
 *           which it is the true decode (measured: within 128 symbols, under 1024 bits, on the benchmark
 *           volumes). An invalid code or an end of block on the way is noted, and the lane decodes on;
 *   sync    lane i then decodes on into lane i+1's segment until it lands on one of lane i+1's marks: from there
 *           lane i+1's path is the true one (no meeting there: on into lane i+2's segment, up to ZI_ABSORB
 *           lanes on, the lanes passed through holding nothing). Lane 0 starts at a true boundary, so every
 *           lane of an unbroken chain of such meetings holds true symbols; where a chain breaks, at the first
 *           event on the true path (a real end of block or error) or where the output would grow too large,
 *           the window ends and the next starts where the last true lane stopped. The chain is followed by
 *           pointer doubling and the lanes' offsets come from a parallel scan;
 *   prefix  each true lane recounts its path up to where its true range begins (the output bytes and matches
 *           of its range are its counts at the end minus these);
 *   pass 2  each lane decodes its true range again: literals to the output; for every match byte, the byte it
 *           copies;
 *   matches pointer jumping in rounds takes each match byte to a final byte (a literal, or a byte of an earlier
 *           window), and all are copied at once. A window decoding to more than ZI_JUMP_BYTES, allowed only
 *           where matches are long (zeros, runs of one label), instead lists its matches and copies them in
 *           order with one warp, a run of adjacent matches with one distance as one periodic fill.
 * Highly compressible streams (output ZI_SERIAL_RATIO times the input or more) decode in serial mode instead:
 * the windows' work grows with the output, and most of it goes to matches (a label volume: 256K tokens a 16 MiB
 * chunk, 91% matches), while one thread decoding the tokens in order does a token's work per token. Warp 0
 * decodes a Huffman block's tokens in order (every lane the same) and hands them in batches to warp 1, which
 * writes the literals and copies the matches (see "serial mode"). A batch of only such streams runs blocks of
 * those two warps alone, with only the state serial mode uses (ZI_SERIAL_SHARED), twice as many an SM;
 * a stream's time then goes with its tokens, so it is split into parts by its stored bytes (32 KiB a part at
 * least), each decoded in serial mode.
 * Block headers (stored / fixed / dynamic Huffman) are read by one lane; the decode tables are built by all
 * lanes. Every check of a sequential decoder is made on the true path (codes, lengths, distances,
 * sizes), so a corrupt stream ends in an error code, never in a read or write out of bounds. */
#ifndef ZG_INFLATE_RULES_H
#define ZG_INFLATE_RULES_H
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ZI_FN static __host__ __device__ inline
#define ZI_HOT static __host__ __device__ __forceinline__ /* serial mode's token loop: its reader in registers */
#else
#define ZI_FN static inline
#define ZI_HOT static inline
#endif
#ifdef __CUDA_ARCH__
#define ZI_ATOMIC_MIN(p, v) atomicMin((p), (v))
#define ZI_ATOMIC_MAX(p, v) atomicMax((p), (v))
#else
#define ZI_ATOMIC_MIN(p, v) (*(p) = *(p) < (v) ? *(p) : (v))
#define ZI_ATOMIC_MAX(p, v) (*(p) = *(p) > (v) ? *(p) : (v))
#endif

/* Adds v to *p (shared memory on the GPU) and returns the value before. */
ZI_FN uint32_t zi_fetch_add(uint32_t *p, uint32_t v) {
#ifdef __CUDA_ARCH__
    return atomicAdd(p, v);
#else
    const uint32_t old = *p;
    *p = old + v;
    return old;
#endif
}

/* The block's shape. H100, test_gpu_inflate's 64 x 8 MiB batches (noisy 16-bit image, zlib / floats, libdeflate),
 * GB/s: 512 lanes x 256 bits, one block an SM: 12.2 / 7.6; 256 x 512, two: 14.3 / 10.1; 256 x 256, two: 15.8 /
 * 13.6 (two blocks hide each other's barriers and shared-memory waits; highly compressible labels, which read
 * on host threads by default, 9.3 -> 6.8). 512 lanes cannot run two blocks an SM: 125 KiB of shared memory.
 * Three blocks of 256 x 256 an SM (zi_shared 85 -> 67 KB, registers capped at 80, no spills), 64 real chunks
 * (ZGPU_INFLATE_SAMPLE): oct 14.5 -> 16.4, field 14.8 -> 16.7 GB/s; the waits of one chain of dependent steps a
 * lane are what more blocks hide. */
#ifndef ZI_NL
#define ZI_NL 256        /* lanes (threads) per stream */
#endif
#ifndef ZI_SEG_BITS
#define ZI_SEG_BITS 256  /* bits each lane starts apart */
#endif
#ifndef ZI_BLOCKS_PER_SM
#define ZI_BLOCKS_PER_SM 3 /* decode blocks an SM should hold at once (__launch_bounds__: caps the registers;
                           * zi_shared must fit that many too) */
#endif
#define ZI_ABSORB 8      /* successors a lane may pass through when it cannot meet the next one's path (labels: 2 -> 8 cut their windows 838 -> 240 a chunk) */
#define ZI_MCAP 4096     /* matches a list window may hold (zi_scan_cut ends it before; a first lane alone,
                          * ZI_SEG_BITS * (1 + ZI_ABSORB) + 48 bits, holds under 2400) */
#define ZI_LROOT 10      /* literal/length table: 2^10 first-level entries, then subtables */
#define ZI_LCAP 2560     /* >= 1024 + the subtables of any valid code (288 symbols, codes <= 15 bits) */
#define ZI_DROOT 8
#define ZI_DCAP 768      /* >= 256 + the subtables of any valid distance code (32 symbols) */
#ifndef ZI_MAX_PARTS
/* parts a stream may be split into (see "parts"; H100, field gzip read in 3 waves of 22 chunks: 8 -> 12 parts
 * 12.4 -> 13.9 GB/s; 16 forced: slower, oct 6 GB/s, not looked into) */
#define ZI_MAX_PARTS 12
#endif
#define ZI_SERIAL_RATIO 8u /* streams decoding to this many times their size or more: serial mode */
#ifndef ZI_SB
#define ZI_SB 32
#endif           /* serial mode: tokens a batch */
#ifndef ZI_SSPAN
#define ZI_SSPAN 1024
#endif      /* serial mode: a batch ends once it decodes to this many bytes (plus its last token) */
#ifndef ZI_SWIN
#define ZI_SWIN 4096
#endif       /* serial mode: the copier's window of the output's last bytes (shared memory) */
#define ZI_MAX_BYTES 0x0fffffffu /* streams and outputs under 256 MiB: bit positions (+ a window) fit 32 bits */

/* Per-stream error codes (0 = fine); zi_error_text() names them. */
enum {
    ZI_OK = 0,
    ZI_E_BTYPE,      /* reserved block type 3 */
    ZI_E_STORED,     /* stored block length does not match its complement */
    ZI_E_HEADER,     /* dynamic block header: invalid code-length code or code-length sequence */
    ZI_E_CODE,       /* a Huffman code is over-subscribed or incomplete */
    ZI_E_NO_EOB,     /* the literal/length code has no end-of-block symbol */
    ZI_E_SYMBOL,     /* a literal/length or distance code with no meaning (unused, 286-287, 30-31) */
    ZI_E_DIST,       /* a match reaches back before the start of the output */
    ZI_E_OVERFLOW,   /* the stream decodes to more bytes than expected */
    ZI_E_TRUNC,      /* the stream ends inside a block */
    ZI_E_SIZE,       /* the final block ends before the expected size is reached */
    ZI_E_TRAILING,   /* bytes follow the final block */
    ZI_E_TOO_BIG     /* stream or output larger than the decoder handles (ZI_MAX_BYTES) */
};

ZI_FN const char *zi_error_text(int e) {
    switch (e) {
    case ZI_E_BTYPE: return "reserved block type 3";
    case ZI_E_STORED: return "stored block length does not match its complement";
    case ZI_E_HEADER: return "invalid dynamic block header (code-length code or code lengths)";
    case ZI_E_CODE: return "over-subscribed or incomplete Huffman code";
    case ZI_E_NO_EOB: return "literal/length code without an end-of-block symbol";
    case ZI_E_SYMBOL: return "invalid literal/length or distance symbol";
    case ZI_E_DIST: return "match distance reaches before the start of the output";
    case ZI_E_OVERFLOW: return "decodes to more bytes than expected";
    case ZI_E_TRUNC: return "stream ends inside a block";
    case ZI_E_SIZE: return "decodes to fewer bytes than expected";
    case ZI_E_TRAILING: return "data after the final block";
    case ZI_E_TOO_BIG: return "stream too large for the GPU decoder";
    default: return "valid";
    }
}

/* ------------------------------------------------------------------------------------------------ bits */
/* LSB-first reader: buf holds the stream's bits [pos, pos + avail); bytes past the end read as zero (callers
 * compare pos with the stream's bit count). */
typedef struct zi_br {
    const uint8_t *p;
    uint32_t n;     /* bytes */
    uint32_t next;  /* next byte to load */
    uint32_t pos;   /* bit position of buf's bit 0 */
    uint32_t avail; /* valid bits in buf */
    uint64_t buf;
} zi_br;

ZI_FN uint32_t zi_load32(const uint8_t *p, uint32_t n, uint32_t at) {
    if (at + 4 <= n) {
#ifdef __CUDA_ARCH__
        const uintptr_t a = (uintptr_t)(p + at);
        const uint32_t *w = (const uint32_t *)(a & ~(uintptr_t)3);
        const uint32_t sh = (uint32_t)(a & 3) * 8;
        return sh ? __funnelshift_r(w[0], w[1], sh) : w[0]; /* w[1] holds a byte below p + n when sh > 0 */
#else
        return (uint32_t)p[at] | (uint32_t)p[at + 1] << 8 | (uint32_t)p[at + 2] << 16 | (uint32_t)p[at + 3] << 24;
#endif
    }
    uint32_t v = 0;
    for (uint32_t i = 0; i < 4; i++)
        if (at + i < n) v |= (uint32_t)p[at + i] << (8 * i);
    return v;
}

ZI_FN void zi_refill(zi_br *b) { /* afterwards avail >= 32 */
    if (b->avail < 32) {
        b->buf |= (uint64_t)zi_load32(b->p, b->n, b->next) << b->avail;
        b->next += 4;
        b->avail += 32;
    }
}

ZI_FN void zi_br_init(zi_br *b, const uint8_t *p, uint32_t n, uint32_t bitpos) {
    b->p = p;
    b->n = n;
    b->next = bitpos >> 3;
    b->avail = 0;
    b->buf = 0;
    zi_refill(b);
    b->buf >>= bitpos & 7;
    b->avail -= bitpos & 7;
    b->pos = bitpos;
}

ZI_FN uint32_t zi_bits(zi_br *b, uint32_t k) { /* k <= 32, after a refill */
    const uint32_t v = (uint32_t)(b->buf & ((1ull << k) - 1));
    b->buf >>= k;
    b->avail -= k;
    b->pos += k;
    return v;
}

ZI_FN uint32_t zi_get(zi_br *b, uint32_t k) { /* k <= 25: refills first */
    zi_refill(b);
    return zi_bits(b, k);
}

/* ------------------------------------------------------------------------------------------------ tables */
/* A decode table entry: bits 0-3 code length (whole code, subtable part included), 4-6 kind, 8-11 extra bits
 * (subtable pointers: the subtable's index bits), 16-31 value (literal byte, length / distance base,
 * subtable offset). */
enum { ZI_LIT = 0, ZI_LEN = 1, ZI_EOB = 2, ZI_SUB = 3, ZI_BAD = 4, ZI_DISTK = 5 };
#define ZI_ENTRY(len, kind, extra, value) \
    ((uint32_t)(len) | (uint32_t)(kind) << 4 | (uint32_t)(extra) << 8 | (uint32_t)(value) << 16)
#define ZI_E_LEN(e) ((e) & 15u)
#define ZI_E_KIND(e) (((e) >> 4) & 7u)
#define ZI_E_EXTRA(e) (((e) >> 8) & 15u)
#define ZI_E_VAL(e) ((e) >> 16)

/* The meaning of symbol s of a literal/length (dist = 0) or distance (dist = 1) code, for an entry. */
ZI_FN uint32_t zi_symbol_entry(int dist, uint32_t s, uint32_t len) {
    if (dist) {
        if (s >= 30) return ZI_ENTRY(len, ZI_BAD, 0, 0);
        if (s < 4) return ZI_ENTRY(len, ZI_DISTK, 0, s + 1);
        const uint32_t x = s / 2 - 1;
        return ZI_ENTRY(len, ZI_DISTK, x, ((2u + (s & 1)) << x) + 1);
    }
    if (s < 256) return ZI_ENTRY(len, ZI_LIT, 0, s);
    if (s == 256) return ZI_ENTRY(len, ZI_EOB, 0, 0);
    if (s >= 286) return ZI_ENTRY(len, ZI_BAD, 0, 0);
    if (s == 285) return ZI_ENTRY(len, ZI_LEN, 0, 258);
    const uint32_t i = s - 257;
    if (i < 8) return ZI_ENTRY(len, ZI_LEN, 0, 3 + i);
    const uint32_t x = (i - 4) / 4;
    return ZI_ENTRY(len, ZI_LEN, x, ((4u + (i & 3)) << x) + 3);
}

/* One code's table: its lengths, each symbol's bit-reversed canonical code (codes[]), the table whose first
 * level zi_table_clear sets to ZI_BAD and zi_tables_sub_* (below) fill with subtable pointers; fill (every lane,
 * symbols lane, lane + nl, ...) then writes each symbol's entries. The lengths are checked (zi_code_first) the
 * way zlib and libdeflate do: no over-subscribed code; an incomplete code only as a single 1-bit code; an empty
 * code is allowed. */
typedef struct zi_code {
    const uint8_t *lens;
    uint16_t *codes;
    uint32_t *tab;
    uint32_t n, root, cap;
    int dist;
} zi_code;

ZI_FN void zi_table_clear(const zi_code *c, uint32_t lane, uint32_t nl) {
    for (uint32_t i = lane; i < (1u << c->root); i += nl) c->tab[i] = ZI_ENTRY(0, ZI_BAD, 0, 0);
}

/* A code's first canonical code of each length from its count of each (count[0] ignored), checked. */
ZI_FN int zi_code_first(const uint32_t *count, uint32_t *first) {
    int32_t left = 1;
    uint32_t max = 0;
    for (uint32_t l = 1; l < 16; l++) {
        left = left * 2 - (int32_t)count[l];
        if (left < 0) return ZI_E_CODE;
        if (count[l]) max = l;
    }
    if (left > 0 && max != 0 && !(max == 1 && count[1] == 1)) return ZI_E_CODE;
    first[1] = 0;
    for (uint32_t l = 1; l < 15; l++) first[l + 1] = (first[l] + count[l]) << 1;
    return ZI_OK;
}

ZI_FN uint32_t zi_reverse(uint32_t code, uint32_t l) {
#ifdef __CUDA_ARCH__
    return __brev(code) >> (32 - l);
#else
    uint32_t rev = 0;
    for (uint32_t k = 0; k < l; k++) rev |= ((code >> k) & 1u) << (l - 1 - k);
    return rev;
#endif
}

ZI_FN void zi_table_fill(const zi_code *c, uint32_t lane, uint32_t nl) {
    const uint32_t mask = (1u << c->root) - 1;
    for (uint32_t s = lane; s < c->n; s += nl) {
        const uint32_t l = c->lens[s];
        if (!l) continue;
        const uint32_t rev = c->codes[s], e = zi_symbol_entry(c->dist, s, l);
        if (l <= c->root) {
            for (uint32_t i = rev; i <= mask; i += 1u << l) c->tab[i] = e;
        } else {
            const uint32_t sub = c->tab[rev & mask], size = 1u << ZI_E_EXTRA(sub);
            for (uint32_t i = rev >> c->root; i < size; i += 1u << (l - c->root)) c->tab[ZI_E_VAL(sub) + i] = e;
        }
    }
}

ZI_FN uint32_t zi_lookup(const uint32_t *tab, uint32_t root, uint64_t buf) {
    uint32_t e = tab[buf & ((1u << root) - 1)];
    if (ZI_E_KIND(e) == ZI_SUB) e = tab[ZI_E_VAL(e) + ((uint32_t)(buf >> root) & ((1u << ZI_E_EXTRA(e)) - 1))];
    return e;
}

/* ------------------------------------------------------------------------------------------------ tokens */
enum { ZI_T_LIT = 0, ZI_T_MATCH = 1, ZI_T_EOB = 2 };

/* The token at b->pos: a literal (*a = byte), a match (*a = length, *d = distance) or the end of block;
 * negative: -ZI_E_SYMBOL. The caller compares b->pos with the stream's bit count. */
ZI_FN int zi_token(zi_br *b, const uint32_t *lt, const uint32_t *dt, uint32_t *a, uint32_t *d) {
    zi_refill(b);
    uint32_t e = zi_lookup(lt, ZI_LROOT, b->buf);
    const uint32_t k = ZI_E_KIND(e);
    if (k == ZI_LIT) {
        zi_bits(b, ZI_E_LEN(e));
        *a = ZI_E_VAL(e);
        return ZI_T_LIT;
    }
    if (k == ZI_EOB) {
        zi_bits(b, ZI_E_LEN(e));
        return ZI_T_EOB;
    }
    if (k != ZI_LEN) return -ZI_E_SYMBOL;
    zi_bits(b, ZI_E_LEN(e));
    *a = ZI_E_VAL(e) + zi_bits(b, ZI_E_EXTRA(e));
    zi_refill(b);
    e = zi_lookup(dt, ZI_DROOT, b->buf);
    if (ZI_E_KIND(e) != ZI_DISTK) return -ZI_E_SYMBOL;
    zi_bits(b, ZI_E_LEN(e));
    *d = ZI_E_VAL(e) + zi_bits(b, ZI_E_EXTRA(e));
    return ZI_T_MATCH;
}

/* ------------------------------------------------------------------------------------------------ headers */
/* A dynamic block's header (RFC 1951 3.2.7), in steps (zi_block_header and the driver run them):
 *   head    one lane: HLIT, HDIST, HCLEN and the code-length code's lengths (cl), its canonical codes;
 *   table   lane per entry of the code-length table pt (128 entries: which of the 19 symbols it decodes);
 *   lengths one lane: the literal/length and distance code lengths, as sent, into tmp (320 bytes);
 *   split   every lane: tmp into lens[0, 288) and lens[288, 320).
 * One lane building the table and copying the lengths took a third of the header's time. */
ZI_FN int zi_dynamic_head(zi_br *b, uint32_t nbits, uint8_t *cl, uint16_t *codes, uint32_t *nlit, uint32_t *ndist) {
    const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    *nlit = 257 + zi_get(b, 5);
    *ndist = 1 + zi_get(b, 5);
    const uint32_t ncl = 4 + zi_get(b, 4);
    for (uint32_t i = 0; i < 19; i++) cl[i] = 0;
    for (uint32_t i = 0; i < ncl; i++) cl[order[i]] = (uint8_t)zi_get(b, 3);
    if (b->pos > nbits) return ZI_E_TRUNC;
    uint32_t count[16] = {0}, next[16];
    for (uint32_t s = 0; s < 19; s++) count[cl[s]]++;
    if (zi_code_first(count, next) != ZI_OK) return ZI_E_HEADER;
    for (uint32_t s = 0; s < 19; s++)
        if (cl[s]) codes[s] = (uint16_t)zi_reverse(next[cl[s]]++, cl[s]);
    return ZI_OK;
}

/* A code-length table entry: a byte, symbol << 3 | code length (0: no code matches). Bytes keep the finder's
 * copy small ("parts"). */
ZI_FN uint8_t zi_cl_byte(uint32_t s, uint32_t len) { return (uint8_t)(s << 3 | len); }

/* Entry i of the code-length table: the symbol whose reversed code is i's low bits (a valid code has at most
 * one). */
ZI_FN uint8_t zi_cl_entry(const uint8_t *cl, const uint16_t *codes, uint32_t i) {
    for (uint32_t s = 0; s < 19; s++)
        if (cl[s] && (i & ((1u << cl[s]) - 1)) == codes[s]) return zi_cl_byte(s, cl[s]);
    return 0;
}

/* One symbol of the code-length code at b, as a run of rep lengths of value v: a length (rep 1), 16 (the previous
 * length, prev, 3-6 times), 17 or 18 (zeros). ZI_E_HEADER for no code, or a repeat with no previous length (first). */
ZI_FN int zi_cl_run(zi_br *b, const uint8_t *pt, int first, uint32_t prev, uint32_t *v, uint32_t *rep) {
    zi_refill(b);
    const uint32_t e = pt[b->buf & 127];
    if (!(e & 7)) return ZI_E_HEADER;
    zi_bits(b, e & 7);
    const uint32_t s = e >> 3;
    *v = s;
    *rep = 1;
    if (s == 16) {
        if (first) return ZI_E_HEADER;
        *v = prev;
        *rep = 3 + zi_bits(b, 2);
    } else if (s == 17) {
        *v = 0;
        *rep = 3 + zi_bits(b, 3);
    } else if (s == 18) {
        *v = 0;
        *rep = 11 + zi_bits(b, 7);
    }
    return ZI_OK;
}

/* The code lengths as sent, into tmp[0, total). */
ZI_FN int zi_dynamic_lengths(zi_br *b, uint32_t nbits, const uint8_t *pt, uint8_t *tmp, uint32_t total) {
    uint32_t i = 0;
    while (i < total) {
        uint32_t v, rep;
        if (zi_cl_run(b, pt, i == 0, i ? tmp[i - 1] : 0, &v, &rep) || i + rep > total) return ZI_E_HEADER;
        while (rep--) tmp[i++] = (uint8_t)v;
    }
    if (b->pos > nbits) return ZI_E_TRUNC;
    if (tmp[256] == 0) return ZI_E_NO_EOB; /* (nlit >= 257) */
    return ZI_OK;
}

/* The finder's version of zi_dynamic_lengths (the same verdict, 0 or not): how many literal/length and distance
 * lengths of each value, count[0] / count[1], without writing the lengths, a run as one step, and stopping at
 * the first length that over-subscribes either code (which the tables would reject): random bits decode to a
 * few hundred lengths otherwise, and do over-subscribe within dozens. */
ZI_FN int zi_length_counts(zi_br *b, uint32_t nbits, const uint8_t *pt, uint32_t nlit, uint32_t total,
                           uint32_t count[2][16]) {
    uint32_t i = 0, prev = 0, eob = 0, kraft[2] = {0, 0}; /* kraft: in units of 2^-15 */
    for (uint32_t l = 0; l < 16; l++) count[0][l] = count[1][l] = 0;
    while (i < total) {
        uint32_t v, rep;
        if (zi_cl_run(b, pt, i == 0, prev, &v, &rep) || i + rep > total) return ZI_E_HEADER;
        const uint32_t lit = i < nlit ? (nlit - i < rep ? nlit - i : rep) : 0; /* of the run, literal/length lengths */
        if (i <= 256 && 256 < i + rep) eob = v;
        count[0][v] += lit;
        count[1][v] += rep - lit;
        if (v && ((kraft[0] += lit * (32768u >> v)) > 32768u || (kraft[1] += (rep - lit) * (32768u >> v)) > 32768u))
            return ZI_E_CODE;
        prev = v;
        i += rep;
    }
    if (b->pos > nbits) return ZI_E_TRUNC;
    return eob ? ZI_OK : ZI_E_NO_EOB;
}

ZI_FN void zi_fixed_lengths(uint8_t *lens) {
    for (uint32_t s = 0; s < 288; s++) lens[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
    for (uint32_t s = 0; s < 32; s++) lens[288 + s] = 5;
}

/* ------------------------------------------------------------------------------------------------ output */
/* Output elements: bytes, or, for a part of a stream decoded before the bytes ahead of it are known (see "parts"
 * below), 16-bit values: a byte (below 256), or the mark 255 + d of "the byte d before the part's first", d in
 * [1, ZI_WINDOW]. Such a part's output starts with ZI_WINDOW marks (d = ZI_WINDOW .. 1), so that its matches
 * copy them like any earlier byte and every match byte ends up a byte or a mark. */
#define ZI_WINDOW 32768u
ZI_FN void zi_put(void *out, uint32_t wide, uint32_t i, uint32_t v) {
    if (wide) ((uint16_t *)out)[i] = (uint16_t)v;
    else ((uint8_t *)out)[i] = (uint8_t)v;
}

ZI_FN uint32_t zi_at(const void *out, uint32_t wide, uint32_t i) {
    return wide ? ((const uint16_t *)out)[i] : ((const uint8_t *)out)[i];
}

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
    const uint32_t s0 = sh->bitpos + lane * ZI_SEG_BITS, s1 = s0 + ZI_SEG_BITS;
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
    uint32_t nx = lane + 1, s1 = sh->bitpos + nx * ZI_SEG_BITS;
    uint32_t limit = sh->mark_end[nx]; /* the successor's marks end here (the successor is changing its p) */
    uint32_t out = sh->out[lane], m = sh->m[lane], stat = ZI_S_RUN;
    sh->xpos[0][lane] = sh->p[lane]; /* pass 1 stopped at the first boundary in the successor's segment */
    sh->xout[0][lane] = out;
    sh->xm[0][lane] = m;
    zi_br b;
    zi_br_init(&b, in, (sh->nbits + 7) >> 3, sh->p[lane]);
    for (;;) {
        const uint32_t at = b.pos;
        if (at - s1 >= ZI_SEG_BITS) { /* past the successor's segment: on to the next, a few times */
            if (nx + 1 == ZI_NL || nx - lane == ZI_ABSORB) {
                stat = ZI_S_STOP;
                break;
            }
            nx++;
            s1 += ZI_SEG_BITS;
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
        const uint32_t s0 = sh->bitpos + lane * ZI_SEG_BITS;
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

/* ------------------------------------------------------------------------------------------------ serial mode */
/* A stream of nbytes decoding to cap bytes or more is decoded in serial mode (see the top). */
ZI_FN int zi_serial_wanted(uint32_t nbytes, uint32_t cap) { return (uint64_t)cap >= (uint64_t)ZI_SERIAL_RATIO * nbytes; }

/* The next batch of a Huffman block's tokens, from reader *br at output position *op, into B: up to ZI_SB
 * tokens, ending once the batch covers ZI_SSPAN bytes, at the end of block, or at an error (*err, the tokens
 * before it kept: the stream fails anyway). Returns 1 when the block is done. The checks of a sequential decoder:
 * no bits past the stream, valid symbols, no distance before the output's start, no output past cap. The reader
 * and position live in registers meanwhile (H100: about 700 clock cycles a token all the same, a chain of
 * dependent, branchy steps). On the GPU every lane of the parser warp runs this and stores the same values. */
ZI_HOT int zi_serial_fill(const zi_shared *sh, zi_br *br, uint32_t *op_io, zi_sbatch *B, uint32_t *err) {
    const uint32_t *lt = sh->lt, *dt = sh->dt;
    const uint32_t cap = sh->cap, nbits = sh->nbits, op0 = *op_io, lim = op0 + ZI_SSPAN;
    zi_br b = *br; /* (b.pos is left behind meanwhile: it is 8 * b.next - b.avail) */
    uint32_t op = op0, n = 0, e = 0;
    int done = 0;
    while (n < ZI_SB && op < lim) {
        zi_refill(&b);
        const uint32_t x = zi_lookup(lt, ZI_LROOT, b.buf), kind = ZI_E_KIND(x);
        b.buf >>= ZI_E_LEN(x);
        b.avail -= ZI_E_LEN(x);
        uint32_t tok = ZI_E_VAL(x), len = 1; /* a literal */
        if (kind == ZI_LEN) { /* at most 15 + 5 bits taken since the refill: 12 or more left */
            const uint32_t xb = ZI_E_EXTRA(x), a = ZI_E_VAL(x) + ((uint32_t)b.buf & ((1u << xb) - 1));
            b.buf >>= xb;
            b.avail -= xb;
            zi_refill(&b);
            const uint32_t y = zi_lookup(dt, ZI_DROOT, b.buf);
            b.buf >>= ZI_E_LEN(y); /* then at most 13 extra bits of the 17 or more left */
            b.avail -= ZI_E_LEN(y);
            const uint32_t yb = ZI_E_EXTRA(y), d = ZI_E_VAL(y) + ((uint32_t)b.buf & ((1u << yb) - 1));
            b.buf >>= yb;
            b.avail -= yb;
            tok = d << 16 | a;
            len = a;
            if (ZI_E_KIND(y) != ZI_DISTK) e = ZI_E_SYMBOL;
            else if (d > op) e = ZI_E_DIST;
        } else if (kind == ZI_EOB) {
            done = 1;
        } else if (kind != ZI_LIT) {
            e = ZI_E_SYMBOL;
        }
        if (b.next > b.n && 8 * b.next - b.avail > nbits) e = ZI_E_TRUNC; /* bits past the stream (read as zeros) */
        else if (!e && !done && len > cap - op) e = ZI_E_OVERFLOW; /* (op <= cap always) */
        if (e || done) break;
        B->pos[n] = op;
        B->tok[n] = tok;
        n++;
        op += len;
    }
    done |= e != 0;
    B->n = n;
    B->end = (uint32_t)done;
    B->bend = op;
    b.pos = 8 * b.next - b.avail;
    *br = b;
    *op_io = op;
    if (e) *err = e;
    return done;
}

#ifdef __CUDACC__
#include "gpucodec/common/copier.cuh"
/* Warp 0: the block's tokens in order, a batch at a time (every lane decodes the same tokens, from the same
 * bytes and table entries, and stores the same values: no divergence), into the buffer of the batch before last
 * once the copier is done with it. Leaves the block's end position, output size and error in sh. */
__device__ static void zi_serial_parser(zi_shared *sh, const uint8_t *in, uint32_t lane) {
    zi_br b;
    zi_br_init(&b, in, sh->nbits >> 3, sh->bitpos);
    uint32_t op = sh->outpos, err = 0;
    for (unsigned bn = 0;; bn++) {
        zi_sbatch *B = &sh->sb[bn & 1];
        zg_wait_until(&sh->s_cons, bn - 1); /* batch bn - 2, which used this buffer, is copied */
        __syncwarp();
        const int done = zi_serial_fill(sh, &b, &op, B, &err);
        if (lane == 0) zg_publish(&sh->s_prod, bn + 1);
        __syncwarp();
        if (done) break;
    }
    if (lane == 0) {
        sh->bitpos = b.pos;
        sh->outpos = op;
        if (err) sh->err_code = err;
    }
}

/* Warp 1: each batch's literals at once (a lane a token), then its matches in order, warp-wide (a match may copy
 * the one before), from the window where it still holds the source (zg_put_match). A batch spans under ZI_SWIN
 * elements, so none of its elements share a window slot. T: bytes, or a part's 16-bit elements. */
template <typename T> __device__ static void zi_serial_copier(zi_shared *sh, T *out, uint32_t lane) {
    for (unsigned bn = 0;; bn++) {
        const zi_sbatch *B = &sh->sb[bn & 1];
        zg_wait_until(&sh->s_prod, bn + 1);
        __syncwarp();
        const uint32_t n = B->n, bend = B->bend, end = B->end;
        if (lane < n && !(B->tok[lane] >> 16)) {
            const uint32_t x = B->pos[lane];
            const T v = (T)(B->tok[lane] & 0xffu);
            out[x] = v;
            sh->swin[x % ZI_SWIN] = v;
        }
        for (uint32_t k = 0; k < n; k++) {
            const uint32_t t = B->tok[k];
            if (!(t >> 16)) continue;
            __syncwarp(); /* every element written before it is visible */
            zg_put_match<ZI_SWIN>(out, sh->swin, B->pos[k], t >> 16, t & 0xffffu, bend, sh->swin_lo, lane);
        }
        __syncwarp(); /* (every lane has read the batch) */
        if (lane == 0) zg_publish(&sh->s_cons, bn + 1);
        __syncwarp();
        if (end) return;
    }
}
#endif

/* A Huffman block in serial mode (its tables built), from sh->bitpos at sh->outpos; afterwards both are past the
 * block, or sh->err_code is set. Output elements as zi_put (bytes, or a part's 16-bit elements). On the GPU warps
 * 0 and 1 run it and the others wait; on the host the same batches are decoded, then copied element by element. */
ZI_FN void zi_serial_block(zi_shared *sh, const uint8_t *in, void *out) {
#ifdef __CUDA_ARCH__
    if (threadIdx.x < 32) zi_serial_parser(sh, in, threadIdx.x);
    else if (threadIdx.x < 64 && sh->wide) zi_serial_copier(sh, (uint16_t *)out, threadIdx.x - 32);
    else if (threadIdx.x < 64) zi_serial_copier(sh, (uint8_t *)out, threadIdx.x - 32);
    __syncthreads();
#else
    zi_br b;
    zi_br_init(&b, in, sh->nbits >> 3, sh->bitpos);
    uint32_t op = sh->outpos, err = 0;
    for (int done = 0; !done;) {
        zi_sbatch *B = &sh->sb[0];
        done = zi_serial_fill(sh, &b, &op, B, &err);
        for (uint32_t k = 0; k < B->n; k++) {
            const uint32_t t = B->tok[k], x = B->pos[k], d = t >> 16;
            if (!d) zi_put(out, sh->wide, x, t & 0xffu);
            for (uint32_t i = 0; d && i < (t & 0xffffu); i++) zi_put(out, sh->wide, x + i, zi_at(out, sh->wide, x + i - d));
        }
    }
    sh->bitpos = b.pos;
    sh->outpos = op;
    if (err) sh->err_code = err;
#endif
}

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
    uint32_t stops[ZI_MAX_PARTS];
} zi_spec;

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
    zi_decode(sh, in, nbytes, out, scratch, &spec);
    ZI_ONE(*status = zi_verdict(sh); *actual = sh->outpos);
}

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
#define ZI_PART_MIN_BYTES (256u << 10) /* a stream gets a part per this many stored bytes, at most */
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
    sp.serial = 0; /* (the caller sets it: zi_serial_wanted of the whole stream) */
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
