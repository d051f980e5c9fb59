/* Host-side walk of a raw Snappy stream (blosc's snappy streams) before nVIDIA's Snappy decoder, which assumes
 * valid input, takes it. Pure C, no CUDA. */
#ifndef ZG_SNAPPY_CHECK_H
#define ZG_SNAPPY_CHECK_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

/** Walks raw Snappy p[0, n) that must decode to exactly `expected` bytes, as libsnappy's decoder checks it: the
 *  preamble's length equal to `expected`, every literal inside the stream, every copy's offset nonzero and within
 *  the output so far, no element past `expected`, the input consumed by whole elements and the output exactly
 *  `expected`. out: NULL to check only, or where to decode. ZGPU_OK or ZGPU_ERR_CORRUPT_DATA naming the fault. */
zgpu_status zg_snappy_walk(const uint8_t *p, size_t n, size_t expected, uint8_t *out);

#endif
