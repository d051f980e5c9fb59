/* zgpu's zstd encoder (RFC 8878), written for the GPU: a chunk is one frame, its 128 KiB blocks are compressed
 * independently and in parallel, and the frame is the blocks put end to end (zstd_encode_kernels.cu). nvCOMP's zstd
 * compressor, which this replaces on the write path, gave ~5 GB/s and capped highly redundant data near 131:1 (labels:
 * libzstd 1464:1).
 *
 * What makes blocks independent: a block's first sequence sends its offset as a real one (offset + 3), later ones
 * repeat only the offset of the sequence before them in the same block (never a repeat code whose meaning comes from
 * another block); no "treeless" literals or "repeat" FSE tables: each block carries its own Huffman table, and its
 * sequences use the predefined, an RLE or their own FSE distributions. Matches may reach back into earlier blocks:
 * the bytes are all there.
 *
 * Within a block, each of ZG_ZE_LANES lanes finds matches in its own segment of ZG_ZE_SEG_BYTES with a greedy
 * matcher: the last match's offset and the array's strides (zg_ze_hints) are tried at every position, else a hash
 * table of ZG_ZE_HASH_ENTRIES positions a lane, primed with the bytes just before the segment. Then the lanes'
 * sequences are joined: a match that ends a segment runs on into the next as far as the bytes allow, and the
 * sequences it covers there are dropped, so a long run costs one sequence a block, not one a segment. zgpu's LZ4
 * (lz4_encode.h) and fixed-Huffman DEFLATE (deflate_fixed.h) encoders use the same matches.
 *
 * Literals: Huffman-coded (code lengths up to 11 bits, the table's weights written directly or FSE-compressed, one
 * stream up to 1023 literals, else four), raw, or RLE, whichever is smallest. A block that does not shrink is stored
 * raw; a block of one repeated byte as an RLE block.
 *
 * Header-only (static inline, __host__ __device__ under nvcc), so that tests/unit/test_zstd_encode.c encodes on the
 * host what the kernel encodes on the GPU and checks every frame with libzstd. This header holds the constants, the
 * block and the frame; zstd_encode_entropy.h the bit writer, FSE and the sequences and literals sections;
 * zstd_encode_match.h the matcher, the join and the literals' gathering (both included here, never alone). No allocation: every table lives in
 * the caller's structs. Positions are 32-bit: a chunk is at most ZG_ZE_MAX_CHUNK bytes. */
#ifndef ZG_ZSTD_ENCODE_H
#define ZG_ZSTD_ENCODE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define ZG_ZE_FN static __host__ __device__ inline
#else
#define ZG_ZE_FN static inline
#endif

#define ZG_ZE_BLOCK_BYTES (128u << 10) /* a block's input (the last of a chunk shorter) */
#define ZG_ZE_LANES 32u                /* segments a block */
#define ZG_ZE_SEG_BYTES (ZG_ZE_BLOCK_BYTES / ZG_ZE_LANES)
#define ZG_ZE_SEG_SEQS 512u /* the most sequences a segment gives (8 bytes each on average; the rest: literals) */
#define ZG_ZE_BLOCK_SEQS (ZG_ZE_LANES * ZG_ZE_SEG_SEQS)
#define ZG_ZE_MIN_MATCH 4u
#define ZG_ZE_PRIME_BYTES 64u /* bytes before a segment its lane's table starts with */
#define ZG_ZE_HASH_LOG 8u
#define ZG_ZE_HASH_ENTRIES (1u << ZG_ZE_HASH_LOG)
#define ZG_ZE_SKIP_LOG 7u /* after 2^k bytes without a match the matcher steps 2 bytes, after 2 * 2^k 3, ... */
#define ZG_ZE_MAX_CHUNK 0x7fff0000u
#define ZG_ZE_FRAME_HEADER_MAX 14u /* magic 4, descriptor 1, window 1, content size 8 */
/* A block's output: its 3-byte header and at most ZG_ZE_BLOCK_BYTES (a larger one is stored raw instead). */
#define ZG_ZE_BLOCK_OUT (ZG_ZE_BLOCK_BYTES + 3u)
#define ZG_ZE_HUF_MAX_BITS 11u

/* One sequence: lit literals, then a match of len bytes `off` bytes back (off >= 1, sent as off + 3). */
typedef struct zg_ze_seq {
    uint32_t lit, len, off;
} zg_ze_seq;

/* the two halves of a block's encoding: entropy coding, then matching */
#include "gpuencode/zstd_encode_entropy.h"
#include "gpuencode/zstd_encode_match.h"

/* ---- block and frame ---- */

/* The frame header of a chunk of n bytes: its window (zg_ze_window_log: no offset reaches further back), content
 * size. */
ZG_ZE_FN uint32_t zg_ze_frame_header(uint64_t n, uint32_t window_log, uint8_t *dst) {
    const uint32_t fcs = n < 256 ? 2 : n < 65536 + 256 ? 1 : n <= 0xffffffffu ? 2 : 3;
    const uint32_t bytes = fcs == 1 ? 2 : fcs == 2 ? 4 : 8;
    const uint64_t v = fcs == 1 ? n - 256 : n;
    dst[0] = 0x28, dst[1] = 0xb5, dst[2] = 0x2f, dst[3] = 0xfd;
    dst[4] = (uint8_t)(fcs << 6); /* not single segment: a window descriptor follows */
    dst[5] = (uint8_t)((window_log - 10) << 3);
    for (uint32_t k = 0; k < bytes; k++) dst[6 + k] = (uint8_t)(v >> (8 * k));
    return 6 + bytes;
}

ZG_ZE_FN void zg_ze_block_header(uint8_t *dst, uint32_t last, uint32_t type, uint32_t size) {
    const uint32_t v = last | type << 1 | size << 3;
    dst[0] = (uint8_t)v, dst[1] = (uint8_t)(v >> 8), dst[2] = (uint8_t)(v >> 16);
}

/* Finishes a block of n input bytes at in: its body (literals section at dst + 3 .. of lit_bytes, then the
 * sequences) was written by the caller, body_bytes in all, or 0 if it did not fit. Chooses raw or compressed, writes
 * the header (and the raw copy); returns the block's size. */
ZG_ZE_FN uint32_t zg_ze_block_finish(uint8_t *dst, const uint8_t *in, uint32_t n, uint32_t body_bytes, uint32_t last) {
    if (body_bytes == 0 || body_bytes >= n) {
        zg_ze_block_header(dst, last, 0, n);
        for (uint32_t k = 0; k < n; k++) dst[3 + k] = in[k];
        return 3 + n;
    }
    zg_ze_block_header(dst, last, 2, body_bytes);
    return 3 + body_bytes;
}

/* Encodes one block on one thread (the CPU reference of the kernel's warp): input c[b, b + n) of a chunk c, the
 * block output (at most ZG_ZE_BLOCK_OUT bytes) to dst. `seqs`: ZG_ZE_BLOCK_SEQS of scratch, lits: n bytes,
 * table: ZG_ZE_HASH_ENTRIES. Returns the block's size. */
ZG_ZE_FN uint32_t zg_ze_block_ref(const uint8_t *c, uint32_t b, uint32_t n, uint32_t last,
                                  const zg_ze_hints *hints, uint8_t *dst, zg_ze_seq *seqs, uint8_t *lits, uint16_t *table, zg_ze_huf *h, zg_ze_fse *fse,
                                  const zg_ze_tables *t) {
    const uint8_t *in = c + b;
    uint32_t same = 1;
    for (uint32_t k = 1; k < n && same; k++) same = in[k] == in[0];
    if (same && n > 0) {
        zg_ze_block_header(dst, last, 1, n);
        dst[3] = in[0];
        return 4;
    }
    uint32_t trailing;
    const uint32_t nseq = zg_ze_match_block_ref(c, b, n, ZG_ZE_SEG_BYTES, hints, table, seqs, &trailing);
    const uint32_t nl = zg_ze_gather_literals(in, seqs, nseq, trailing, lits);
    /* literals: Huffman if it beats raw */
    uint8_t *body = dst + 3;
    const uint32_t cap = n; /* a body of n bytes or more is stored raw */
    uint8_t plain[3];
    const uint32_t raw_total = zg_ze_lit_plain_header(0, nl, plain) + nl;
    for (uint32_t s = 0; s < 256; s++) h->count[s] = 0;
    for (uint32_t k = 0; k < nl; k++) h->count[lits[k]]++;
    uint32_t lit_bytes;
    if (nl > 0 && h->count[lits[0]] == nl) {
        lit_bytes = zg_ze_lit_plain_header(1, nl, body);
        body[lit_bytes++] = lits[0];
    } else {
        const uint32_t huf = zg_ze_huf_plan(h, lits, nl, fse, raw_total < cap ? raw_total : cap);
        if (huf && huf < cap) {
            uint32_t at = zg_ze_huf_head(h, nl, huf, body);
            for (uint32_t st = 0; st < zg_ze_huf_streams(nl); st++) {
                zg_ze_huf_stream(h, lits, nl, st, body + at);
                at += h->stream_bytes[st];
            }
            lit_bytes = at;
        } else if (raw_total < cap) {
            lit_bytes = zg_ze_lit_plain_header(0, nl, body);
            for (uint32_t k = 0; k < nl; k++) body[lit_bytes + k] = lits[k];
            lit_bytes += nl;
        } else {
            return zg_ze_block_finish(dst, in, n, 0, last);
        }
    }
    const uint32_t sq = lit_bytes < cap ? zg_ze_sequences(body + lit_bytes, cap - lit_bytes, seqs, nseq, t, fse + 1) : 0;
    return zg_ze_block_finish(dst, in, n, sq ? lit_bytes + sq : 0, last);
}

/* The CPU reference of a whole frame (tests): the scratch it needs, then the frame of in[0, n) into dst (at most
 * ZG_ZE_FRAME_HEADER_MAX + 3 * (blocks + 1) + n bytes); returns its size. The GPU writes the same bytes. */
typedef struct zg_ze_ref_scratch {
    zg_ze_seq seqs[ZG_ZE_BLOCK_SEQS];
    uint8_t lits[ZG_ZE_BLOCK_BYTES];
    uint16_t table[ZG_ZE_HASH_ENTRIES];
    zg_ze_huf huf;
    zg_ze_fse fse[4];
    zg_ze_tables tables; /* zg_ze_tables_build, once */
} zg_ze_ref_scratch;

ZG_ZE_FN size_t zg_ze_frame_ref(const uint8_t *in, size_t n, const zg_ze_hints *hints, uint8_t *dst,
                                zg_ze_ref_scratch *s) {
    const zg_ze_hints h = zg_ze_hints_clean(*hints);
    size_t at = zg_ze_frame_header(n, zg_ze_window_log(&h), dst);
    if (n == 0) {
        zg_ze_block_header(dst + at, 1, 0, 0);
        return at + 3;
    }
    for (size_t b = 0; b < n; b += ZG_ZE_BLOCK_BYTES) {
        const uint32_t len = (uint32_t)(n - b < ZG_ZE_BLOCK_BYTES ? n - b : ZG_ZE_BLOCK_BYTES);
        at += zg_ze_block_ref(in, (uint32_t)b, len, b + len == n, &h, dst + at, s->seqs, s->lits, s->table, &s->huf,
                              s->fse, &s->tables);
    }
    return at;
}

#endif
