/* Host-side checks of LZ4 blocks (numcodecs framing, blosc streams) before they go to a GPU decoder, which must never see a stream it
 * could misread: each function finds the payload the GPU decompressor takes and checks everything that can be
 * checked without decompressing. ZGPU_ERR_CORRUPT_DATA: the frame is malformed or its sizes disagree with
 * `expected`; ZGPU_ERR_UNSUPPORTED: valid, but not something the GPU path takes (e.g. several zstd frames) —
 * the caller decodes that chunk on the CPU. Pure C, no CUDA. */
#ifndef ZG_LZ4_CHECK_H
#define ZG_LZ4_CHECK_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

/** numcodecs LZ4: u32le decoded size, then one LZ4 block; the block is walked (zg_lz4_block_check). */
zgpu_status zg_lz4nc_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len);
/** Walks an LZ4 block's sequences without decoding: literals inside the input, match offsets inside the
 *  output produced so far, total output exactly `expected`. */
zgpu_status zg_lz4_block_check(const uint8_t *p, size_t n, size_t expected);
/** The text of a ZG_LZ4_E_* code (lz4_rules.h). */
const char *zg_lz4_error_text(int e);

#endif
