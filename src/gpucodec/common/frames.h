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

/** gzip member (RFC 1952) -> its deflate payload [*off, *off + *len). Checks the trailer's ISIZE and the
 *  payload (zg_deflate_check). `expected`: the decoded size, SIZE_MAX if unknown. */
zgpu_status zg_gzip_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len);
/** zlib stream (RFC 1950) -> its deflate payload, checked with zg_deflate_check. */
zgpu_status zg_zlib_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len);
/** Raw deflate (RFC 1951) checked without decoding it: stored blocks are walked (LEN/NLEN, sizes); for the
 *  first Huffman block the code descriptions must form prefix codes a decoder accepts (dynamic blocks), and
 *  up to a fixed number of symbols are walked (valid symbols, distances within the output so far, output
 *  not past `expected`). A stream that ends within the walk must decode to exactly `expected` bytes. Past the
 *  walk a damaged stream goes unnoticed: only decoding finds it. */
zgpu_status zg_deflate_check(const uint8_t *p, size_t n, size_t expected);
/** numcodecs LZ4: u32le decoded size, then one LZ4 block; the block is walked (zg_lz4_block_check). */
zgpu_status zg_lz4nc_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len);
/** Walks an LZ4 block's sequences without decoding: literals inside the input, match offsets inside the
 *  output produced so far, total output exactly `expected`. */
zgpu_status zg_lz4_block_check(const uint8_t *p, size_t n, size_t expected);
/** The text of a ZG_LZ4_E_* code (lz4_rules.h). */
const char *zg_lz4_error_text(int e);
/** One zstd frame filling exactly n bytes: header fields, block headers, no dictionary, frame content size
 *  (when present) equal to `expected`. Inside each compressed block: the literals section (type, sizes within
 *  the block and the block maximum, Huffman tree description, stream jump table and end marks; treeless
 *  literals only after a Huffman table) and the sequences section header (count, compression modes with
 *  reserved bits clear, RLE symbols in range, FSE table descriptions parsed to their end with accuracy logs
 *  LL <= 9, OF <= 8, ML <= 9; Repeat only after a previous table; a non-empty bitstream with its end mark).
 *  The blocks' decoded sizes (exact for raw/RLE, bounded for compressed blocks) must allow `expected`. A
 *  stream damaged inside its entropy-coded bitstreams passes: only decoding finds that. */
zgpu_status zg_zstd_check(const uint8_t *p, size_t n, size_t expected);

#endif
