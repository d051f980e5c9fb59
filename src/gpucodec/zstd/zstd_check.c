/* Host-side check of a zstd frame before a GPU zstd decoder takes it (see zstd_check.h): zgpu's planner run
 * without a plan. Pure C, no CUDA. */
#include "gpucodec/zstd/zstd_check.h"

#include "gpucodec/zstd/zstd_plan.h"

zgpu_status zg_zstd_check(const uint8_t *p, size_t n, size_t expected) { return zg_zd_plan_frame(NULL, p, n, expected, 0); }
