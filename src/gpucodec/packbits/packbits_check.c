/* TIFF PackBits streams on the host (see packbits_check.h). Pure C, no CUDA: built and unit-tested everywhere. */
#include "gpucodec/packbits/packbits_check.h"

#include "common/status.h"
#include "gpucodec/packbits/packbits_rules.h"

const char *zg_packbits_error_text(int e) {
    switch (e) {
    case ZG_PB_E_TRUNC: return "a run is cut off by the stream's end";
    case ZG_PB_E_TOO_LONG: return "decodes to more bytes than expected";
    case ZG_PB_E_SHORT: return "the stream ends before the expected size";
    case ZG_PB_E_TOO_LARGE: return "stream or output of 2 GiB or more";
    default: return "valid";
    }
}

int zg_packbits_gpu_check(const uint8_t *p, size_t n, size_t expected) {
    (void)p;
    return n >= 0x80000000u || expected >= 0x80000000u;
}

zgpu_status zg_packbits_decode_ref(const uint8_t *p, size_t n, uint8_t *out, size_t expected) {
    size_t ip, op;
    const int e = zg_pb_walk(p, n, expected, out, &ip, &op);
    ZG_RETURN_IF(e, ZGPU_ERR_CORRUPT_DATA, "packbits: %s (input byte %zu of %zu, output byte %zu of %zu)",
                 zg_packbits_error_text(e), ip, n, op, expected);
    return ZGPU_OK;
}
