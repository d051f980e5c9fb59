/* Fuzz target for the block-parallel zstd decoder's rules: the host planner (src/gpucodec/zstd/zstd_plan.c) and the
 * per-block steps (src/gpucodec/zstd/zstd_rules.h) run on the CPU as the GPU kernels run them
 * (tests/unit/zstd_cpu_ref.h). Input: u32le decoded size (taken modulo 1 MiB + 1), then a zstd frame.
 * A crash or sanitizer report is a bug, and so is decoding a frame to bytes other than libzstd's when both
 * accept it (abort). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "../tests/unit/zstd_cpu_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    const size_t expected = ((size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24) %
                            ((1u << 20) + 1);
    const uint8_t *frame = data + 4;
    const size_t n = size - 4;
    zg_zd_plan pl;
    zg_zd_plan_init(&pl);
    if (zg_zd_plan_frame(&pl, frame, n, expected, 0) == ZGPU_OK) {
        uint8_t *ours = (uint8_t *)malloc(expected + 1), *ref = (uint8_t *)malloc(expected + 1);
        int err = -1;
        zc_cpu_run(&pl, frame, &ours, &err);
        size_t rn = ZSTD_decompress(ref, expected, frame, n);
        if (err == 0 && !ZSTD_isError(rn) && (rn != expected || memcmp(ours, ref, expected) != 0)) abort();
        free(ours);
        free(ref);
    }
    zg_zd_plan_free(&pl);
    return 0;
}
