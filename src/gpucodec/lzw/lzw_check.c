/* TIFF LZW streams on the host (see lzw_check.h). Pure C, no CUDA: built and unit-tested everywhere. */
#include "gpucodec/lzw/lzw_check.h"

#include <stdlib.h>
#include "common/status.h"
#include "gpucodec/lzw/lzw_rules.h"

const char *zg_lzw_error_text(int e) {
    switch (e) {
    case ZG_LZW_E_CODE: return "a code refers to a dictionary entry not yet made";
    case ZG_LZW_E_TOO_LONG: return "decodes to more bytes than expected";
    case ZG_LZW_E_SHORT: return "EndOfInformation before the expected size";
    case ZG_LZW_E_TRUNC: return "the stream ends before the expected size";
    case ZG_LZW_E_TOO_LARGE: return "stream or output of 2 GiB or more";
    default: return "valid";
    }
}

int zg_lzw_gpu_check(const uint8_t *p, size_t n, size_t expected) {
    return zg_lzw_old_style(p, n) || n >= 0x80000000u || expected >= 0x80000000u;
}

zgpu_status zg_lzw_decode_ref(const uint8_t *p, size_t n, uint8_t *out, size_t expected) {
    ZG_RETURN_IF(zg_lzw_old_style(p, n), ZGPU_ERR_UNSUPPORTED, "lzw: old-style (LSB-first) LZW");
    /* (the dictionary's arrays: 19 KiB, off the stack of the pool's threads) */
    uint8_t *a = malloc(ZG_LZW_SEG_CODES * 5u);
    ZG_RETURN_IF(!a, ZGPU_ERR_NO_MEMORY, "lzw: out of memory for the dictionary");
    uint64_t bit;
    size_t op;
    const int e = zg_lzw_walk_with(p, n, expected, out, &bit, &op, (uint16_t *)a, (uint16_t *)(a + 2 * ZG_LZW_SEG_CODES),
                                   a + 4 * ZG_LZW_SEG_CODES);
    free(a);
    ZG_RETURN_IF(e, ZGPU_ERR_CORRUPT_DATA, "lzw: %s (input bit %llu of %zu bytes, output byte %zu of %zu)",
                 zg_lzw_error_text(e), (unsigned long long)bit, n, op, expected);
    return ZGPU_OK;
}

size_t zg_lzw_seg_slots(uint64_t max_in) {
    const uint64_t s = max_in / 2048u + 2u;
    return (size_t)(s < 512u ? s : 512u);
}

size_t zg_lzw_seg_scratch_bytes(size_t n, size_t slots) {
    return n * slots * sizeof(zg_lzw_seg) + n * sizeof(uint32_t);
}
