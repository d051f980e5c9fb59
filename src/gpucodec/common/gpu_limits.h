/* The current device's limits for the launch configurations (launch_config.h), asked once per device and kept
 * (gpu_limits_gpu.c). CUDA-only; C interface. */
#ifndef ZG_GPU_LIMITS_H
#define ZG_GPU_LIMITS_H
#include <cuda_runtime.h>
#include "gpucodec/common/launch_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Fills *out with the limits of the calling thread's current device (cudaGetDevice), read from the device on
 *  the first call for it; returns the CUDA error met asking (then *out is zg_gpu_limits_h100(), what the kernels
 *  assumed before, and the error is cleared from the thread's last-error state). Thread-safe. */
cudaError_t zg_gpu_limits_current(zg_gpu_limits *out);

#ifdef __cplusplus
}
#endif
#endif
