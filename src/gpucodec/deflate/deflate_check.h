/* Host-side checks of gzip members, zlib streams and raw DEFLATE before they go to a GPU decoder, which must never see a stream it
 * could misread: each function finds the payload the GPU decompressor takes and checks everything that can be
 * checked without decompressing. ZGPU_ERR_CORRUPT_DATA: the frame is malformed or its sizes disagree with
 * `expected`; ZGPU_ERR_UNSUPPORTED: valid, but not something the GPU path takes (e.g. several zstd frames) —
 * the caller decodes that chunk on the CPU. Pure C, no CUDA. */
#ifndef ZG_DEFLATE_CHECK_H
#define ZG_DEFLATE_CHECK_H
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

#endif
