/* Host-side checks of compressed frames before they go to a GPU decoder, which must never see a stream it
 * could misread: each function finds the payload the GPU decompressor takes (raw deflate for gzip/zlib, an
 * LZ4 block for numcodecs.lz4, the zstd frame itself) and checks everything that can be checked without
 * decompressing. ZGPU_ERR_CORRUPT_DATA: the frame is malformed or its sizes disagree with `expected`;
 * ZGPU_ERR_UNSUPPORTED: valid, but not something the GPU path takes (e.g. several zstd frames) — the caller
 * decodes that chunk on the CPU. Pure C, no CUDA. */
#ifndef ZG_FRAMES_H
#define ZG_FRAMES_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

/** gzip member (RFC 1952) -> its deflate payload [*off, *off + *len). Checks the trailer's ISIZE. */
zgpu_status zg_gzip_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len);
/** zlib stream (RFC 1950) -> its deflate payload. */
zgpu_status zg_zlib_locate(const uint8_t *p, size_t n, size_t *off, size_t *len);
/** numcodecs LZ4: u32le decoded size, then one LZ4 block; the block is walked (zg_lz4_block_check). */
zgpu_status zg_lz4nc_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len);
/** Walks an LZ4 block's sequences without decoding: literals inside the input, match offsets inside the
 *  output produced so far, total output exactly `expected`. */
zgpu_status zg_lz4_block_check(const uint8_t *p, size_t n, size_t expected);
/** One zstd frame filling exactly n bytes: header fields, block headers, no dictionary, frame content size
 *  (when present) equal to `expected`. */
zgpu_status zg_zstd_check(const uint8_t *p, size_t n, size_t expected);

#endif
