/* Fuzz target for zgpu's GPU encoders, run on the CPU through their references (the GPU writes the same bytes:
 * test_gpu_encode): zstd frames (src/gpuencode/zstd_encode.h), LZ4 blocks (lz4_encode.h) and fixed-Huffman DEFLATE
 * pieces (deflate_fixed.h). Input layout:
 *   byte 0:    which encoder (% 3)
 *   bytes 1-3: the match hints: byte 1 % 16 (an element size), byte 2 * 4 (a row), byte 3 * 1024 (a plane); 0: none
 *   rest:      the data (at most 256 KiB are used; LZ4 at most 128 KiB, DEFLATE the first 64 KiB piece)
 * Every output must decode to the data with the field's library (libzstd, liblz4, zlib) and stay within its bound;
 * anything else aborts. */
#include <lz4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "gpuencode/deflate_fixed.h"
#include "gpuencode/deflate_pieces.h"
#include "gpuencode/lz4_encode.h"
#include "gpuencode/zstd_encode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DATA ((size_t)256 << 10)

static zg_ze_ref_scratch scratch;
static uint8_t out[MAX_DATA + MAX_DATA / 64 + 4096], back[MAX_DATA + 64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    static int ready;
    if (!ready) zg_ze_tables_build(&scratch.tables), ready = 1;
    const int which = data[0] % 3;
    const zg_ze_hints hints = {{(uint32_t)(data[1] % 16), (uint32_t)data[2] * 4, (uint32_t)data[3] * 1024}};
    const uint8_t *in = data + 4;
    size_t n = size - 4;
    if (n > MAX_DATA) n = MAX_DATA;
    if (which == 0) {
        const size_t m = zg_ze_frame_ref(in, n, &hints, out, &scratch);
        if (m > ZG_ZE_FRAME_HEADER_MAX + 3 * (n / ZG_ZE_BLOCK_BYTES + 2) + n) abort();
        if (ZSTD_getFrameContentSize(out, m) != n) abort();
        const size_t got = ZSTD_decompress(back, sizeof back, out, m);
        if (ZSTD_isError(got) || got != n || memcmp(back, in, n) != 0) abort();
    } else if (which == 1) {
        if (n > ZG_LZ_MAX_INPUT) n = ZG_LZ_MAX_INPUT;
        const zg_ze_hints h = zg_lz_hints(hints);
        const uint32_t m = zg_lz_block_ref(in, (uint32_t)n, &h, out, scratch.seqs, scratch.table);
        if (m > zg_lz_bound((uint32_t)n)) abort();
        const int got = LZ4_decompress_safe((const char *)out, (char *)back, (int)m, (int)sizeof back);
        if (got != (int)n || memcmp(back, in, n) != 0) abort();
    } else {
        if (n > ZG_DP_PIECE_BYTES) n = ZG_DP_PIECE_BYTES;
        const zg_ze_hints h = zg_df_hints(hints);
        const uint32_t m = zg_df_piece_ref(in, 0, (uint32_t)n, &h, out, scratch.seqs, scratch.table);
        if (m == 0 || m > zg_df_bound((uint32_t)n)) abort();
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, -15) != Z_OK) abort();
        z.next_in = out, z.avail_in = m, z.next_out = back, z.avail_out = (uInt)n + 64;
        const int r = inflate(&z, Z_FINISH);
        const int ok = r == Z_STREAM_END && z.avail_in == 0 && z.total_out == n && memcmp(back, in, n) == 0;
        inflateEnd(&z);
        if (!ok) abort();
    }
    return 0;
}
