/* Fuzz target: the GPU LZW decoder's rules (src/gpucodec/lzw/lzw_rules.h, whose reference walk the kernel's CPU
 * model in test_lzw_check.c matches) against the host codec (codec/tiff_lzw.h). Input layout:
 *   bytes 0-1: the size the stream must decode to (little-endian, 0-65535 bytes)
 *   rest:      the stream
 * Both must give the same verdict and, when valid, the same bytes: a stream the host reads must read the same on
 * the GPU, and one it rejects must fail there too. Old-style streams are the host's alone. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/tiff_lzw.h"
#include "gpucodec/lzw/lzw_rules.h"

static uint16_t seg_code[ZG_LZW_SEG_CODES], seg_len[ZG_LZW_SEG_CODES];
static uint8_t seg_first[ZG_LZW_SEG_CODES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const size_t expected = (size_t)data[0] | (size_t)data[1] << 8;
    const uint8_t *p = data + 2;
    const size_t n = size - 2;
    if (zg_lzw_old_style(p, n)) return 0;
    uint8_t *out = malloc(expected + 1);
    uint64_t bit;
    size_t op;
    const int e = zg_lzw_walk_with(p, n, expected, out, &bit, &op, seg_code, seg_len, seg_first);
    zg_buf host = ZG_BUF_INIT;
    const zgpu_status hs = zg_tiff_lzw_decode(p, n, &host, expected, expected);
    if ((e == ZG_LZW_OK) != (hs == ZGPU_OK)) abort();
    if (!e && (host.size != expected || (expected && memcmp(out, host.data, expected)))) abort();
    zg_buf_free(&host);
    free(out);
    return 0;
}
