/* zgpu's DEFLATE decoder, part 4 of 6 (see inflate_rules.h): serial mode, a Huffman block's tokens decoded in
 * order by a parser warp and written by a copier warp, for highly compressible streams. */
#ifndef ZG_INFLATE_SERIAL_H
#define ZG_INFLATE_SERIAL_H
#include "gpucodec/deflate/inflate_windows.h"
#ifndef __CUDA_ARCH__
#include <string.h>
#endif

/* ------------------------------------------------------------------------------------------------ serial mode */
/* A stream of nbytes decoding to cap bytes or more is decoded in serial mode (see inflate_rules.h). */
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

#ifndef __CUDA_ARCH__
/* The host's match copy (ZI_COPY_MATCH), shared by the CPU unit test's copier below and codec/deflate_split.c's token
 * loop. zi_period_word: a period of db = 1, 2, 4 or 8 bytes at p as the 8-byte pattern it repeats into. */
static inline uint64_t zi_period_word(const void *p, uint32_t db) {
    uint8_t b1;
    uint16_t b2;
    uint32_t b4;
    uint64_t b8;
    switch (db) {
    case 1: memcpy(&b1, p, 1); return b1 * 0x0101010101010101ull;
    case 2: memcpy(&b2, p, 2); return b2 * 0x0001000100010001ull;
    case 4: memcpy(&b4, p, 4); return b4 | (uint64_t)b4 << 32;
    default: memcpy(&b8, p, 8); return b8;
    }
}

/* A match of len elements at distance d into dst (T: bytes or 16-bit elements), 16 bytes a step from bytes already
 * final, up to 16 bytes past its end written over (the caller leaves room: later tokens write them again). A period
 * shorter than 16 bytes is first spread to 16 bytes or more (a multiple of it): where it divides 16 (a label's 4
 * bytes: half the matches of a label chunk) the 8-byte pattern it repeats into is stored over the match, else it is
 * copied element by element from the period itself. */
#define ZI_COPY_MATCH(T, dst, d, len)                                                                              \
    do {                                                                                                           \
        enum { V_ = 16 / sizeof(T) };                                                                              \
        uint32_t w_ = 0, back_ = (d);                                                                              \
        if ((d) < V_) {                                                                                            \
            const uint32_t db_ = (d) * (uint32_t)sizeof(T);                                                        \
            if (!(db_ & (db_ - 1))) { /* stores of the pattern alone: no load waits on a store */                  \
                const uint64_t pat_ = zi_period_word((dst) - (d), db_);                                            \
                for (; w_ < (len); w_ += V_) {                                                                     \
                    memcpy((dst) + w_, &pat_, 8);                                                                  \
                    memcpy((dst) + w_ + V_ / 2, &pat_, 8);                                                         \
                }                                                                                                  \
            } else {                                                                                               \
                back_ = (V_ + (d) - 1) / (d) * (d);                                                                \
                const T *period_ = (dst) - (d);                                                                    \
                for (uint32_t r_ = 0; w_ < back_ && w_ < (len); w_++, r_ = r_ + 1 == (d) ? 0 : r_ + 1)             \
                    (dst)[w_] = period_[r_];                                                                       \
            }                                                                                                      \
        }                                                                                                          \
        for (; w_ < (len); w_ += V_) memcpy((dst) + w_, (dst) + w_ - back_, 16);                                   \
    } while (0)

/* The host's copier (the CPU unit test, test_inflate_decode): a batch's literals and matches in order, into
 * out[0, cap) (elements of T); the last 16 bytes before cap take the element-by-element way. zi_serial_fill checked
 * every token (no distance before the output's start, no element past cap). */
#define ZI_HOST_COPY(T, name)                                                                                      \
    static inline void name(T *out, uint32_t cap, const zi_sbatch *B) {                                            \
        for (uint32_t k = 0; k < B->n; k++) {                                                                      \
            const uint32_t t = B->tok[k], d = t >> 16, x = B->pos[k];                                              \
            T *dst = out + x;                                                                                      \
            if (!d) {                                                                                              \
                *dst = (T)(t & 0xffu);                                                                             \
                continue;                                                                                          \
            }                                                                                                      \
            const uint32_t len = t & 0xffffu;                                                                      \
            if (cap - x >= len + 16 / sizeof(T)) ZI_COPY_MATCH(T, dst, d, len);                                    \
            else for (uint32_t i = 0; i < len; i++) dst[i] = dst[(ptrdiff_t)i - d];                                \
        }                                                                                                          \
    }
ZI_HOST_COPY(uint8_t, zi_host_copy8)
ZI_HOST_COPY(uint16_t, zi_host_copy16)
#undef ZI_HOST_COPY
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
        if (sh->wide) zi_host_copy16((uint16_t *)out, sh->cap, B);
        else zi_host_copy8((uint8_t *)out, sh->cap, B);
    }
    sh->bitpos = b.pos;
    sh->outpos = op;
    if (err) sh->err_code = err;
#endif
}

#endif
