/* zgpu's DEFLATE decoder (RFC 1951): the data it works on and every decoding step, shared by the CUDA kernel
 * (inflate_kernels.cu) and the CPU unit test (tests/unit/test_inflate_decode.c), which runs the very same
 * steps with the lanes of a thread block emulated one after another, so that every rule runs in CI without
 * a GPU. Header-only: static inline, __host__ __device__ under nvcc. C and C++ compatible.
 *
 * Why our own decoder: a DEFLATE stream is one long bit sequence whose symbol boundaries are known only by
 * decoding from the start, so nvCOMP (and every CPU library) decodes a chunk with one thread; a batch of
 * 40-130 chunks of 8-16 MiB then ran at 0.7-1.4 GB/s on an H100. Here a thread block of ZI_NL lanes decodes
 * ONE stream, a window of ZI_NL * ZI_SEG_BITS bits at a time:
 *   pass 1  lane i decodes from bit W0 + i*ZI_SEG_BITS, a guess at a symbol boundary, to the first boundary at
 *           or past the next lane's start, marking every boundary of its path in a bitmap of its segment.
 *           Huffman codes resynchronize: a decode started at a wrong bit soon lands on a true boundary, after
 *           which it is the true decode (measured: within 128 symbols, under 1024 bits, on the benchmark
 *           volumes). An invalid code or an end of block on the way is noted, and the lane decodes on;
 *   sync    lane i then decodes on into lane i+1's segment until it lands on one of lane i+1's marks: from there
 *           lane i+1's path is the true one (no meeting there: on into lane i+2's segment, up to ZI_ABSORB
 *           lanes on, the lanes passed through holding nothing). Lane 0 starts at a true boundary, so every
 *           lane of an unbroken chain of such meetings holds true symbols; where a chain breaks, at the first
 *           event on the true path (a real end of block or error) or where the output would grow too large,
 *           the window ends and the next starts where the last true lane stopped. The chain is followed by
 *           pointer doubling and the lanes' offsets come from a parallel scan;
 *   prefix  each true lane recounts its path up to where its true range begins (the output bytes and matches
 *           of its range are its counts at the end minus these);
 *   pass 2  each lane decodes its true range again: literals to the output; for every match byte, the byte it
 *           copies;
 *   matches pointer jumping in rounds takes each match byte to a final byte (a literal, or a byte of an earlier
 *           window), and all are copied at once. A window decoding to more than ZI_JUMP_BYTES, allowed only
 *           where matches are long (zeros, runs of one label), instead lists its matches and copies them in
 *           order with one warp, a run of adjacent matches with one distance as one periodic fill.
 * Highly compressible streams (output ZI_SERIAL_RATIO times the input or more) decode in serial mode instead:
 * the windows' work grows with the output, and most of it goes to matches (a label volume: 256K tokens a 16 MiB
 * chunk, 91% matches), while one thread decoding the tokens in order does a token's work per token. Warp 0
 * decodes a Huffman block's tokens in order (every lane the same) and hands them in batches to warp 1, which
 * writes the literals and copies the matches (see "serial mode"). A batch of only such streams runs blocks of
 * those two warps alone, with only the state serial mode uses (ZI_SERIAL_SHARED), twice as many an SM;
 * a stream's time then goes with its tokens, so it is split into parts by its stored bytes (32 KiB a part at
 * least), each decoded in serial mode.
 * Block headers (stored / fixed / dynamic Huffman) are read by one lane; the decode tables are built by all
 * lanes. Every check of a sequential decoder is made on the true path (codes, lengths, distances,
 * sizes), so a corrupt stream ends in an error code, never in a read or write out of bounds. */
#ifndef ZG_INFLATE_RULES_H
#define ZG_INFLATE_RULES_H

/* The rules in six parts, each including the one before (every part under 600 lines): */
#include "gpucodec/deflate/inflate_base.h"    /* qualifiers, the block's shape, error codes, bit reader */
#include "gpucodec/deflate/inflate_huffman.h" /* decode tables, tokens, block headers, output elements */
#include "gpucodec/deflate/inflate_windows.h" /* zi_shared; the phases of a window (pass 1 ... matches) */
#include "gpucodec/deflate/inflate_serial.h"  /* serial mode: parser and copier warps */
#include "gpucodec/deflate/inflate_driver.h"  /* one stream or part, phase by phase; the verdict */
#include "gpucodec/deflate/inflate_parts.h"   /* streams split into parts: find, chain, resolve */

#endif
