/* TIFF LZW (TIFF 6.0 section 13, Compression = 5): the stream functions behind the "tiff_lzw" codec, also used by
 * the unit tests and the fuzzer.
 *
 * The stream: codes of 9 to 12 bits, packed most significant bit first; ClearCode 256 resets the table, EOI 257
 * ends the stream, new strings are numbered from 258. The code width grows one step early, as libtiff writes:
 * to 10 bits once the next free code is 511, 11 at 1023, 12 at 2047. Streams written by libtiff before TIFF 6
 * ("old-style", recognised as libtiff recognises them: a first byte 0 and the low bit of the second set) pack
 * codes least significant bit first and widen when the next free code reaches 512 / 1024 / 2048; both decode. */
#ifndef ZG_TIFF_LZW_H
#define ZG_TIFF_LZW_H
#include <stddef.h>
#include <stdint.h>
#include "common/buf.h"
#include "zgpu.h"

/** 1 when the stream is old-style (pre-TIFF 6, LSB-first) LZW. */
int zg_tiff_lzw_is_old_style(const uint8_t *in, size_t n);
/** Decodes n stored bytes into out (out->size set). Decoding stops at EOI, at the end of the input (libtiff reads
 *  a stream without EOI to its end), or once `limit` bytes are out; a string that would pass `limit` fails
 *  (ZGPU_ERR_CORRUPT_DATA, as does any code that is neither in the table nor the next one to be made). When
 *  `exact` is not SIZE_MAX, fewer than `exact` bytes is an error too. Allocates at most `limit` bytes. */
zgpu_status zg_tiff_lzw_decode(const uint8_t *in, size_t n, zg_buf *out, size_t exact, size_t limit);
/** Encodes n bytes as libtiff does (ClearCode first, a ClearCode before the table fills, EOI last); old_style
 *  writes the pre-TIFF 6 variant (for tests). Appends to out. */
zgpu_status zg_tiff_lzw_encode(const uint8_t *in, size_t n, zg_buf *out, int old_style);
/** The most bytes an encode of `n` bytes can take (each byte one 12-bit code, plus ClearCodes and EOI). */
size_t zg_tiff_lzw_bound(size_t n);

#endif
