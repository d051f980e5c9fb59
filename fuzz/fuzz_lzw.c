/* Fuzz target for TIFF's LZW decoder (codec/tiff_lzw.h). Input layout:
 *   bytes 0-1: the decode limit (little-endian, 0-65535 bytes)
 *   byte 2:    bit 0: the limit is the exact size the chunk must decode to
 *   rest:      the stream (new- or old-style, as its first bytes say)
 * A crash or sanitizer report is a bug; any status is fine. A decode never passes its limit, and what decodes
 * must survive encode + decode unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/tiff_lzw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    const size_t limit = (size_t)data[0] | (size_t)data[1] << 8;
    const size_t exact = (data[2] & 1) ? limit : SIZE_MAX;
    zg_buf out = ZG_BUF_INIT, enc = ZG_BUF_INIT, back = ZG_BUF_INIT;
    if (zg_tiff_lzw_decode(data + 3, size - 3, &out, exact, limit) == ZGPU_OK) {
        if (out.size > limit || (exact != SIZE_MAX && out.size != exact)) abort();
        for (int old = 0; old <= 1; old++) {
            enc.size = 0;
            if (zg_tiff_lzw_encode(out.data, out.size, &enc, old) != ZGPU_OK) abort();
            if (zg_tiff_lzw_decode(enc.data, enc.size, &back, out.size, out.size) != ZGPU_OK) abort();
            if (back.size != out.size || (out.size && memcmp(back.data, out.data, out.size))) abort();
        }
    }
    zg_buf_free(&out);
    zg_buf_free(&enc);
    zg_buf_free(&back);
    return 0;
}
