/* A zstd frame's blocks, the pieces the split and sparse decodes (zstd_split.c) take from outside their scheduling:
 * one block's Huffman literals (zgpu's four-stream decoder, or libzstd through a wrapped literal section), and the
 * walk of a frame's block headers for a frame read in part. */
#ifndef ZG_ZSTD_BLOCKS_H
#define ZG_ZSTD_BLOCKS_H
#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"
#include "gpucodec/zstd/zstd_plan.h"

/** A block's four Huffman streams (blk: its description; at: the first stream) decoded with table t of `log` bits
 *  into dst, side by side; the streams' ends and exact lengths checked as zd_huf_stream checks them. 0, or a
 *  ZG_ZD_E_* code. */
int zg_zstd_huf_four(const uint16_t *t, uint32_t log, const zg_zd_block *blk, const uint8_t *at, uint8_t *dst);

/** Block b of plan pl (a frame in `in`) has its Huffman literals decoded by libzstd into dst (blk->lit_n bytes).
 *  0 when done, -1 where libzstd finds them damaged, 1 where the section does not wrap (then huf_four decodes it). */
int zg_zstd_huf_libzstd(const zg_zd_plan *pl, const uint8_t *in, uint32_t b, uint8_t *dst);

/** For a frame read in part (part->buf of n bytes, nothing read yet): reads its frame header and each block's
 *  header, literals header, table description, jump table and sequences. 0, or 1 where the frame is not one to read
 *  so (the caller reads it whole). */
int zg_zstd_part_heads(const zg_part_input *part, size_t n);

#endif
