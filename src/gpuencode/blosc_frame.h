/* Blosc1 chunks (c-blosc 1.x, format version 2) built around block streams compressed elsewhere — on the GPU, as
 * one batch over every chunk of a write (issue 24). Plain C, host side, no CUDA; the shuffle here is the
 * specification of the GPU's.
 *
 * Use: zg_blosc_frame_plan_for cuts a chunk into blocks and each block into streams exactly as c-blosc 1.21's
 * blosc_compress_ctx would (its block size, its split into typesize streams, its header flags). The encoder
 * shuffles each block as zg_blosc_frame_shuffle does, compresses stream i — bytes zg_blosc_frame_span(plan, i) of
 * the shuffled chunk — with the plan's compressor, and hands the streams to zg_blosc_frame_build, which writes the
 * chunk: header, block starts, then each stream's int32 size and bytes, a stream that did not shrink stored raw;
 * where the whole would pass nbytes + 16 bytes (c-blosc's and numcodecs' output bound), the chunk becomes a plain
 * copy (flag 0x02), as c-blosc's does. Streams from the calls c-blosc makes (LZ4_compress_fast at acceleration
 * 10 - clevel; LZ4_compress_HC and zlib's compress2 at clevel; ZSTD_compress at zg_blosc_frame_zstd_level) give
 * c-blosc's chunk byte for byte (tests/unit/test_blosc_frame.c) — for zstd only with the room c-blosc gives each
 * stream (its length, less near the chunk's bound), as zstd's output depends on its room. Streams
 * from other compressors (nvCOMP's) give other bytes, a chunk every Blosc1 reader decodes all the same.
 *
 * Split mode: c-blosc's default, BLOSC_FORWARD_COMPAT_SPLIT (a process that changes it with blosc_set_splitmode
 * or BLOSC_SPLITMODE writes other splits; readers follow the header's flag either way).
 *
 * Thread safety: no state; every function may run on any thread. */
#ifndef ZG_BLOSC_FRAME_H
#define ZG_BLOSC_FRAME_H
#include <stddef.h>
#include <stdint.h>

#include "zgpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** c-blosc's compressor codes (blosc.h's BLOSC_BLOSCLZ .. BLOSC_ZSTD): a cname's number. Not the compressor
 *  format in the header's top 3 bits, where lz4 and lz4hc share 1. */
typedef enum zg_blosc_compressor {
    ZG_BLOSC_COMP_BLOSCLZ = 0,
    ZG_BLOSC_COMP_LZ4 = 1,
    ZG_BLOSC_COMP_LZ4HC = 2,
    ZG_BLOSC_COMP_SNAPPY = 3,
    ZG_BLOSC_COMP_ZLIB = 4,
    ZG_BLOSC_COMP_ZSTD = 5,
    ZG_BLOSC_COMP_N
} zg_blosc_compressor;

/** The code of a cname ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"); -1 for another name or NULL. */
int zg_blosc_compressor_code(const char *cname);
/** The level c-blosc passes ZSTD_compress for a clevel of 1..9: 2 * clevel - 1, and zstd's maximum at 9
 *  (zstd_max_level: ZSTD_maxCLevel(), passed in so that this file needs no libzstd). */
int zg_blosc_frame_zstd_level(int clevel, int zstd_max_level);

/** What a chunk is compressed with; the codec's configuration (numcodecs' shuffle -1 resolved by the caller). */
typedef struct zg_blosc_frame_params {
    size_t nbytes;    /* the chunk's size, at most 2^31 - 17 (c-blosc's limit) */
    size_t typesize;  /* item size, at least 1; above 255 taken as 1, as c-blosc does */
    int clevel;       /* 0..9; 0 stores the chunk as a plain copy */
    int compressor;   /* zg_blosc_compressor */
    int shuffle;      /* 0 none, 1 byte shuffle, 2 bit shuffle */
    size_t blocksize; /* 0: c-blosc's choice; else the configured one, which c-blosc clamps to [128, its maximum]
                       * and, for a split compressor, enlarges (zg_blosc_frame_plan_for); at most 2^31 - 1 */
} zg_blosc_frame_params;

/** How a chunk is cut: the header c-blosc writes and where each stream lies in the shuffled chunk. */
typedef struct zg_blosc_frame_plan {
    uint32_t nbytes;
    uint32_t blocksize;
    uint32_t nblocks;
    uint32_t leftover;  /* bytes of the last block where it is short, else 0 */
    uint32_t splits;    /* streams of each whole block: typesize where c-blosc splits blocks, else 1 (a short last
                         * block is always one stream) */
    uint32_t nstreams;  /* streams to compress; 0 for a plain copy */
    uint32_t typesize;  /* as written in the header, 1..255 */
    uint8_t version;    /* header byte 0: format version 2 */
    uint8_t versionlz;  /* header byte 1: the compressor's format version, 1 */
    uint8_t flags;      /* header byte 2 of a compressed chunk: shuffle bits, 0x10 (blocks not split), the
                         * compressor format in bits 5-7; a plain copy adds 0x02 */
    uint8_t plain_copy; /* 1: the chunk is a plain copy whatever its streams would give (clevel 0, or under 128
                         * bytes, where c-blosc compresses nothing); nstreams is then 0 */
    int clevel;
    int compressor;     /* zg_blosc_compressor */
    int shuffle;        /* as asked: 0, 1, 2 (what each block gets: zg_blosc_frame_block_shuffle) */
} zg_blosc_frame_plan;

/** The plan of a chunk. Errors: ZGPU_ERR_INVALID_ARGUMENT naming the parameter (typesize 0, clevel outside 0..9,
 *  an unknown compressor or shuffle, a blocksize over 2^31 - 1); ZGPU_ERR_UNSUPPORTED for nbytes over c-blosc's
 *  limit. */
zgpu_status zg_blosc_frame_plan_for(const zg_blosc_frame_params *params, zg_blosc_frame_plan *plan);

/** Stream i of the plan (i < nstreams): `length` bytes from `offset` of the shuffled chunk. Block b's streams are
 *  b * splits .. b * splits + splits - 1 (the short last block's one stream last), split s of a block the s-th
 *  blocksize / splits of its bytes: with byte shuffle, byte s of each of its items. */
static inline void zg_blosc_frame_span(const zg_blosc_frame_plan *p, uint32_t i, uint32_t *offset, uint32_t *length) {
    const uint32_t b = i / p->splits, s = i % p->splits;
    if (p->leftover && b == p->nblocks - 1) { /* the short last block's one stream, after all whole blocks' */
        *offset = b * p->blocksize;
        *length = p->leftover;
        return;
    }
    const uint32_t len = p->blocksize / p->splits;
    *offset = b * p->blocksize + s * len;
    *length = len;
}

/** The shuffle c-blosc applies to block b (0 none, 1 byte, 2 bit): byte shuffle needs typesize > 1; bit shuffle a
 *  block of at least one item whose item count is a multiple of 8 (c-blosc copies other blocks as they are). */
static inline int zg_blosc_frame_block_shuffle(const zg_blosc_frame_plan *p, uint32_t b) {
    const uint32_t bsize = p->leftover && b == p->nblocks - 1 ? p->leftover : p->blocksize;
    if (p->shuffle == 1) return p->typesize > 1 ? 1 : 0;
    if (p->shuffle == 2) return bsize >= p->typesize && (bsize / p->typesize) % 8 == 0 ? 2 : 0;
    return 0;
}

/** Shuffles the chunk src (nbytes) into dst block by block, as c-blosc does before compressing: byte shuffle puts
 *  byte j of every item of a block in its j-th row; bit shuffle (the bitshuffle library's layout) bit k of byte j
 *  in row 8j + k; bytes past the block's last whole item (and whole blocks zg_blosc_frame_block_shuffle leaves)
 *  are copied. dst must not overlap src. */
void zg_blosc_frame_shuffle(const zg_blosc_frame_plan *p, const uint8_t *src, uint8_t *dst);

/** One compressed stream handed to zg_blosc_frame_build. */
typedef struct zg_blosc_frame_stream {
    const uint8_t *data; /* compressed: `size` bytes of the compressor's output; raw: the stream's shuffled bytes
                          * (its length of them), or NULL to take them from `shuffled` */
    size_t size;         /* compressed size; 0, or the stream's length or more, stores it raw, as c-blosc does a
                          * stream that does not shrink (its bytes then come from `shuffled`) */
    int raw;             /* 1: store the stream uncompressed (the compressor failed or was not run) */
} zg_blosc_frame_stream;

/** The largest chunk zg_blosc_frame_build writes for nbytes: nbytes + 16 (a plain copy). */
static inline size_t zg_blosc_frame_bound(size_t nbytes) { return nbytes + 16; }

/** Writes the Blosc1 chunk of the plan's n streams (n == plan->nstreams) into out (cap bytes): *written gets its
 *  size, *plain_copy (where not NULL) 1 if it is a plain copy (the plan's, or because the framed streams would
 *  pass nbytes + 16 bytes). src: the chunk as given, read only for a plain copy; shuffled: the chunk after
 *  zg_blosc_frame_shuffle (where no block is shuffled, src itself), read only for raw streams without data of
 *  their own. out NULL: nothing is read but the streams' sizes, so a caller learns the size and form first, and
 *  with them which of src and shuffled the write will read. Errors: ZGPU_ERR_INVALID_ARGUMENT (n not the plan's
 *  stream count, a compressed stream with NULL data, src or shuffled NULL where they are read, cap too small:
 *  *written then says the size needed). */
zgpu_status zg_blosc_frame_build(const zg_blosc_frame_plan *plan, const uint8_t *src, const uint8_t *shuffled,
                                 const zg_blosc_frame_stream *streams, size_t n, uint8_t *out, size_t cap,
                                 size_t *written, int *plain_copy);

#ifdef __cplusplus
}
#endif
#endif
