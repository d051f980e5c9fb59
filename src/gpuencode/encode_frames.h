/* The stored formats zgpu's GPU encoder writes, and the bytes it puts around a compressor's raw output to make
 * them: the rules shared by the framing and checksum kernels (encode_kernels.cu), the host side
 * (gpu_encode_gpu.c) and the CPU tests (tests/unit/test_encode_frames.c), which check every byte here against
 * zlib, libdeflate, LZ4 and zstd without a GPU. Header-only: every function is static inline (and
 * __host__ __device__ under nvcc).
 *
 *   zstd   nvCOMP's output as it is: one whole zstd frame (magic 28 b5 2f fd) whose header holds the content size
 *          (nvCOMP 6.0.0.12 on an H100: descriptor 0x40 for a 64 KiB chunk, no checksum), so readers that need
 *          it, numcodecs before 0.16.2 among them, read it too.
 *   gzip   RFC 1952: 1f 8b 08 00 | MTIME 0 | XFL | OS ff, raw DEFLATE, CRC32 LE, ISIZE LE. The header is the one
 *          libdeflate writes (zgpu's host gzip encoder), so a chunk's header is the same whichever side encoded
 *          it; numcodecs (Python's GzipFile) differs only in MTIME (the time) and XFL at levels 0 and 8, fields
 *          that no reader checks.
 *   zlib   RFC 1950: 78 FLG, raw DEFLATE, Adler-32 BE. FLG's FLEVEL is set from the level as zlib sets it
 *          (numcodecs' Zlib is zlib; libdeflate, zgpu's host encoder, differs at level 7 alone), its FCHECK makes
 *          the pair a multiple of 31.
 *   lz4    numcodecs' LZ4: the uncompressed size as 4 bytes LE, then one LZ4 block.
 *
 * Where a chunk lies in its output slot: the compressor writes the raw stream at raw_offset, the header's length
 * rounded up to the compressor's output alignment; the header goes just before it, so the stored chunk is the
 * contiguous bytes [raw_offset - header, raw_offset + raw + trailer) of the slot, ready for one copy. */
#ifndef ZG_ENCODE_FRAMES_H
#define ZG_ENCODE_FRAMES_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpucodec/common/checksum_combine.h"

#ifdef __CUDACC__
#define ZG_GE_FN static __host__ __device__ inline
#else
#define ZG_GE_FN static inline
#endif

/** The stored formats (numcodecs / Zarr v3 names: zstd, gzip, zlib, lz4). */
typedef enum zg_ge_format { ZG_GE_ZSTD = 0, ZG_GE_GZIP, ZG_GE_ZLIB, ZG_GE_LZ4, ZG_GE_N } zg_ge_format;

ZG_GE_FN unsigned zg_ge_header_bytes(int f) {
    return f == ZG_GE_GZIP ? 10u : f == ZG_GE_ZLIB ? 2u : f == ZG_GE_LZ4 ? 4u : 0u;
}
ZG_GE_FN unsigned zg_ge_trailer_bytes(int f) { return f == ZG_GE_GZIP ? 8u : f == ZG_GE_ZLIB ? 4u : 0u; }
/** Which checksum of the uncompressed bytes the trailer holds (checksum_combine.h's ZG_CHECK_*). */
ZG_GE_FN int zg_ge_check_kind(int f) {
    return f == ZG_GE_GZIP ? ZG_CHECK_CRC32 : f == ZG_GE_ZLIB ? ZG_CHECK_ADLER32 : ZG_CHECK_NONE;
}

/** Where the raw stream starts in a slot whose address is a multiple of out_align (a power of two). */
ZG_GE_FN size_t zg_ge_raw_offset(int f, size_t out_align) {
    const size_t h = zg_ge_header_bytes(f);
    return (h + out_align - 1) / out_align * out_align;
}

/* A level as zlib reads it: below 0 is its default, 6. */
ZG_GE_FN int zg_ge_zlib_level(int level) { return level < 0 ? 6 : level; }

/** nvCOMP's Deflate algorithm (nvcomp/deflate.h) for a gzip or zlib level. nvCOMP 6's algorithms: 0 entropy
 *  coding only (Huffman, no matches), 1 high throughput and a low ratio (nvCOMP's default), 2 medium (beats zlib
 *  level 1's ratio), 3 the same as 2 for now, 4 slower (beats zlib level 6's ratio), 5 the slowest, the best ratio.
 *  Measured (test_gpu_encode, H100, 2052 chunks of 64 KiB, mixed data; libdeflate on one core 0.15 GB/s, ratio
 *  2.78 at level 1 and 0.07 GB/s, 2.86 at 6): 1: 8.5 GB/s, ratio 2.34; 2: 5.0 GB/s, 2.78; 4: 0.41 GB/s, 2.88;
 *  5: 0.32 GB/s, 2.91. So 2 serves levels 1..7 (zlib level 1's ratio or better, and within 3% of level 6's at
 *  12 times 4's speed), 5 levels 8 and 9, and 0 level 0 (zlib's 0 stores; entropy coding is the nearest nvCOMP
 *  has). Provisional until measured on the benchmark volumes (issue 24). */
ZG_GE_FN int zg_ge_deflate_algorithm(int level) {
    level = zg_ge_zlib_level(level);
    return level == 0 ? 0 : level <= 7 ? 2 : 5;
}

/** gzip's XFL as libdeflate sets it: 4 (fastest) below level 2, 2 (slowest) from level 8, else 0. */
ZG_GE_FN uint8_t zg_ge_gzip_xfl(int level) {
    level = zg_ge_zlib_level(level);
    return level < 2 ? 4 : level >= 8 ? 2 : 0;
}

/** zlib's FLG byte after CMF 0x78 (DEFLATE, 32 KiB window): FLEVEL 0 below level 2, 1 below 6, 2 at 6, else 3
 *  (zlib's deflate.c; libdeflate writes 2 at level 7 too), no dictionary, and FCHECK so that
 *  (CMF * 256 + FLG) % 31 == 0. */
ZG_GE_FN uint8_t zg_ge_zlib_flg(int level) {
    level = zg_ge_zlib_level(level);
    const unsigned flevel = level < 2 ? 0u : level < 6 ? 1u : level == 6 ? 2u : 3u;
    const unsigned flg = flevel << 6;
    return (uint8_t)(flg + (31u - (0x78u * 256u + flg) % 31u) % 31u);
}

/** Writes format f's header for a chunk of in_bytes uncompressed bytes at p (zg_ge_header_bytes(f) bytes). */
ZG_GE_FN void zg_ge_write_header(int f, int level, uint64_t in_bytes, uint8_t *p) {
    if (f == ZG_GE_GZIP) {
        p[0] = 0x1f, p[1] = 0x8b, p[2] = 8, p[3] = 0;     /* magic, DEFLATE, no flags */
        p[4] = p[5] = p[6] = p[7] = 0;                    /* MTIME 0: none (reproducible chunks) */
        p[8] = zg_ge_gzip_xfl(level), p[9] = 0xff;        /* OS unknown, as libdeflate and CPython write */
    } else if (f == ZG_GE_ZLIB) {
        p[0] = 0x78, p[1] = zg_ge_zlib_flg(level);
    } else if (f == ZG_GE_LZ4) {
        for (int k = 0; k < 4; k++) p[k] = (uint8_t)(in_bytes >> (8 * k)); /* numcodecs' int32 size, LE */
    }
}

/** Writes format f's trailer at p (zg_ge_trailer_bytes(f) bytes): gzip CRC32 and ISIZE (in_bytes mod 2^32),
 *  both little-endian; zlib Adler-32 big-endian. `check` is the checksum zg_ge_check_kind names. */
ZG_GE_FN void zg_ge_write_trailer(int f, uint32_t check, uint64_t in_bytes, uint8_t *p) {
    if (f == ZG_GE_GZIP) {
        for (int k = 0; k < 4; k++) p[k] = (uint8_t)(check >> (8 * k));
        for (int k = 0; k < 4; k++) p[4 + k] = (uint8_t)(in_bytes >> (8 * k));
    } else if (f == ZG_GE_ZLIB) {
        for (int k = 0; k < 4; k++) p[k] = (uint8_t)(check >> (24 - 8 * k));
    }
}

/** The raw stream of an empty chunk, which the encoder writes itself rather than hand nvCOMP a chunk of 0
 *  bytes: DEFLATE's one final fixed-Huffman block holding only end-of-block (03 00); the LZ4 block of one token
 *  with no literals (00); the zstd frame libzstd writes for no input (single segment, content size 0, one empty
 *  last raw block). Framed, they are byte for byte numcodecs' encodings of an empty buffer (gzip's but for MTIME
 *  and XFL), which numcodecs 0.16 itself refuses to decode in zstd and LZ4: its limit, not the stream's. Copies the
 *  stream to p (at most ZG_GE_EMPTY_MAX bytes) and returns its length. */
#define ZG_GE_EMPTY_MAX 9u
ZG_GE_FN unsigned zg_ge_write_empty_raw(int f, uint8_t *p) {
    if (f == ZG_GE_GZIP || f == ZG_GE_ZLIB) {
        p[0] = 0x03, p[1] = 0x00;
        return 2;
    }
    if (f == ZG_GE_LZ4) {
        p[0] = 0;
        return 1;
    }
    const uint8_t z[9] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0x01, 0x00, 0x00};
    for (int k = 0; k < 9; k++) p[k] = z[k];
    return 9;
}

/* ---- checksums of the uncompressed chunks, by segments ----
 * A chunk is cut into segments of ZG_GE_SEG_BYTES (the last one shorter); one thread block takes a segment, each
 * of its ZG_GE_SEG_THREADS threads a range of ZG_GE_SEG_RANGE bytes of it, so that a batch of few large chunks
 * still fills the GPU. A segment's CRC32 is the XOR of its threads' raw registers, each shifted past the bytes
 * after its range (checksum_combine.h), then finished; a chunk's checksum folds its segments' in order
 * (zg_crc_combine, zg_adler_combine). */
#define ZG_GE_SEG_BYTES 65536u
#define ZG_GE_SEG_THREADS 256u
#define ZG_GE_SEG_RANGE (ZG_GE_SEG_BYTES / ZG_GE_SEG_THREADS)

ZG_GE_FN uint64_t zg_ge_segments(uint64_t n) { return (n + ZG_GE_SEG_BYTES - 1) / ZG_GE_SEG_BYTES; }

/** Thread t's range [*b, *e) of a segment of len bytes (empty past the end). */
ZG_GE_FN void zg_ge_thread_range(uint32_t len, unsigned t, uint32_t *b, uint32_t *e) {
    const uint32_t lo = t * ZG_GE_SEG_RANGE, hi = lo + ZG_GE_SEG_RANGE;
    *b = lo < len ? lo : len;
    *e = hi < len ? hi : len;
}

/** x^(8 * bytes after thread t's range of a whole segment) mod P: its shift as one multiplication. */
ZG_GE_FN uint32_t zg_ge_thread_shift(unsigned t, const uint32_t *pow, uint32_t poly) {
    return zg_crc_shift(0x80000000u /* 1 */, (uint64_t)(ZG_GE_SEG_THREADS - 1 - t) * ZG_GE_SEG_RANGE, pow, poly);
}

/* 8 bytes at p as two little-endian words; p is 8-byte aligned. */
ZG_GE_FN void zg_ge_load8(const uint8_t *p, uint32_t *lo, uint32_t *hi) {
#ifdef __CUDA_ARCH__
    const uint2 w = __ldg((const uint2 *)p);
    *lo = w.x, *hi = w.y;
#else
    *lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    *hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
#endif
}

/** Raw CRC register (from 0) over p[b, e): bytes up to 8-byte alignment, 8-byte words (slicing-by-8 tables,
 *  zg_crc_tables8_init), the tail. */
ZG_GE_FN uint32_t zg_ge_crc_raw(const uint32_t *tab, const uint8_t *p, uint32_t b, uint32_t e) {
    uint32_t r = 0, i = b;
    while (i < e && ((uintptr_t)(p + i) & 7)) r = tab[(r ^ p[i++]) & 0xff] ^ (r >> 8);
    for (; e - i >= 8; i += 8) {
        uint32_t lo, hi;
        zg_ge_load8(p + i, &lo, &hi);
        r = zg_crc_raw_word8(tab, r, lo, hi);
    }
    while (i < e) r = tab[(r ^ p[i++]) & 0xff] ^ (r >> 8);
    return r;
}

/** Adler-32 local sums over p[b, e) (zg_adler_range's a_r, b_r), 8-byte words where aligned. The range is at most
 *  ZG_GE_SEG_RANGE (256) bytes, far below ZG_ADLER_NMAX, so one reduction at the end suffices. */
ZG_GE_FN void zg_ge_adler_raw(const uint8_t *p, uint32_t b, uint32_t e, uint32_t *pa, uint32_t *pb) {
    uint32_t a = 0, s = 0, i = b;
    while (i < e && ((uintptr_t)(p + i) & 7)) a += p[i++], s += a;
    for (; e - i >= 8; i += 8) {
        uint32_t w[2];
        zg_ge_load8(p + i, &w[0], &w[1]);
        for (int k = 0; k < 8; k++) a += (w[k >> 2] >> (8 * (k & 3))) & 0xff, s += a;
    }
    while (i < e) a += p[i++], s += a;
    *pa = a % ZG_ADLER_MOD;
    *pb = s % ZG_ADLER_MOD;
}

/** Thread t's term of a segment's CRC (to be XORed over the threads, then zg_crc_finish(x, len)). shift_t is
 *  zg_ge_thread_shift(t), used when the segment is whole. */
ZG_GE_FN uint32_t zg_ge_crc_term(const uint32_t *tab, const uint32_t *pow, uint32_t shift_t, const uint8_t *p,
                                 uint32_t len, unsigned t) {
    uint32_t b, e;
    zg_ge_thread_range(len, t, &b, &e);
    if (b >= e) return 0;
    const uint32_t raw = zg_ge_crc_raw(tab, p, b, e);
    return len == ZG_GE_SEG_BYTES ? zg_gf2_mulmod(raw, shift_t, ZG_CRC32_POLY)
                                  : zg_crc_shift(raw, len - e, pow, ZG_CRC32_POLY);
}

/** Thread t's terms of a segment's Adler-32 (summed over the threads, then zg_adler_finish(a, b, len)). */
ZG_GE_FN void zg_ge_adler_terms(const uint8_t *p, uint32_t len, unsigned t, uint32_t *ta, uint32_t *tb) {
    uint32_t b, e, ar, br;
    zg_ge_thread_range(len, t, &b, &e);
    *ta = *tb = 0;
    if (b >= e) return;
    zg_ge_adler_raw(p, b, e, &ar, &br);
    *ta = ar;
    *tb = zg_adler_b_term(ar, br, len - e);
}

/** A chunk's checksum from its segments' (seg[0..n_segs), every one ZG_GE_SEG_BYTES but the last); the
 *  checksum of no bytes (CRC32 0, Adler-32 1) when it has none. */
ZG_GE_FN uint32_t zg_ge_fold(int kind, const uint32_t *seg, uint32_t n_segs, uint64_t in_bytes, const uint32_t *pow) {
    uint32_t v = kind == ZG_CHECK_ADLER32 ? 1u : 0u;
    for (uint32_t k = 0; k < n_segs; k++) {
        const uint64_t left = in_bytes - (uint64_t)k * ZG_GE_SEG_BYTES;
        const uint64_t len = left < ZG_GE_SEG_BYTES ? left : ZG_GE_SEG_BYTES;
        v = k == 0 ? seg[0]
            : kind == ZG_CHECK_ADLER32 ? zg_adler_combine(v, seg[k], len)
                                       : zg_crc_combine(v, seg[k], len, pow, ZG_CRC32_POLY);
    }
    return v;
}

#endif
