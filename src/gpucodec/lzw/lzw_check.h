/* TIFF LZW streams before and beside zgpu's GPU decoder (lzw_rules.h): whether the GPU may take a stream, the text
 * of its status codes, and the reference decoder the CPU tests compare the GPU's bytes with. Pure C, no CUDA. */
#ifndef ZG_LZW_CHECK_H
#define ZG_LZW_CHECK_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

/** 0 when the GPU decoder may take stream p[0, n) decoding to `expected` bytes: not old-style LZW, and both sizes
 *  within its 32-bit positions; else nonzero (the chunk decodes on the host, whose codec names any fault). The
 *  stream itself is checked as the GPU decodes it. */
int zg_lzw_gpu_check(const uint8_t *p, size_t n, size_t expected);
/** Decodes p[0, n) into out, which must receive exactly `expected` bytes (out NULL: check only), by the rules of
 *  lzw_rules.h. ZGPU_ERR_CORRUPT_DATA naming the fault and where, ZGPU_ERR_UNSUPPORTED for old-style LZW. */
zgpu_status zg_lzw_decode_ref(const uint8_t *p, size_t n, uint8_t *out, size_t expected);
/** The text of a ZG_LZW_E_* code. */
const char *zg_lzw_error_text(int e);

/** The segmented decoder's slots (segment descriptors) a stream, for streams of at most max_in bytes: TIFF writers
 *  clear the table every ~3,800 codes (over 4 KiB of stream), so a slot per 2 KiB leaves room; at most 512 (a
 *  stream with more segments decodes its rest serially). */
size_t zg_lzw_seg_slots(uint64_t max_in);
/** Device scratch bytes of the segmented decoder for n streams of `slots` slots. */
size_t zg_lzw_seg_scratch_bytes(size_t n, size_t slots);

#endif
