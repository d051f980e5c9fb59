/* Host-side checks of zstd frames before they go to a GPU decoder, which must never see a stream it
 * could misread: each function finds the payload the GPU decompressor takes and checks everything that can be
 * checked without decompressing. ZGPU_ERR_CORRUPT_DATA: the frame is malformed or its sizes disagree with
 * `expected`; ZGPU_ERR_UNSUPPORTED: valid, but not something the GPU path takes (e.g. several zstd frames) —
 * the caller decodes that chunk on the CPU. Pure C, no CUDA. */
#ifndef ZG_ZSTD_CHECK_H
#define ZG_ZSTD_CHECK_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

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
