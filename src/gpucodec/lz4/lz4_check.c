/* Host-side checks of LZ4 blocks and numcodecs' LZ4 framing before a GPU LZ4 decoder takes them (see
 * lz4_check.h). Pure C, no CUDA: built and unit-tested everywhere. */
#include "gpucodec/lz4/lz4_check.h"

#include "common/endian.h"
#include "common/status.h"
#include "gpucodec/lz4/lz4_rules.h"

const char *zg_lz4_error_text(int e) {
    switch (e) {
    case ZG_LZ4_E_EMPTY: return "empty block";
    case ZG_LZ4_E_SEQ_END: return "block ends inside a sequence";
    case ZG_LZ4_E_LIT_LEN: return "literal length runs past the end";
    case ZG_LZ4_E_LIT_PAST: return "literals run past the block end";
    case ZG_LZ4_E_TOO_LONG: return "decodes to more bytes than expected";
    case ZG_LZ4_E_OFF_TRUNC: return "truncated match offset";
    case ZG_LZ4_E_OFFSET: return "match offset 0 or before the output's start";
    case ZG_LZ4_E_MATCH_LEN: return "match length runs past the end";
    case ZG_LZ4_E_SIZE: return "decodes to fewer bytes than expected";
    default: return "valid";
    }
}

zgpu_status zg_lz4_block_check(const uint8_t *p, size_t n, size_t expected) {
    size_t ip, op;
    const int e = zg_lz4_walk(p, n, expected, NULL, &ip, &op);
    ZG_RETURN_IF(e, ZGPU_ERR_CORRUPT_DATA, "lz4: %s (input byte %zu of %zu, output byte %zu of %zu)",
                 zg_lz4_error_text(e), ip, n, op, expected);
    return ZGPU_OK;
}

zgpu_status zg_lz4nc_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len) {
    ZG_RETURN_IF(n < 5, ZGPU_ERR_CORRUPT_DATA, "lz4: %zu bytes is too short for the size prefix and a block", n);
    uint32_t sz = zg_le32(p);
    ZG_RETURN_IF(expected != SIZE_MAX && sz != expected, ZGPU_ERR_CORRUPT_DATA,
                 "lz4: size prefix says %u bytes, expected %zu", sz, expected);
    ZG_FORWARD(zg_lz4_block_check(p + 4, n - 4, sz));
    *off = 4;
    *len = n - 4;
    return ZGPU_OK;
}
