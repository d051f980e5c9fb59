// What zgpu's warp-per-block encoders share (lz4_encode_kernels.cu, deflate_fixed_kernels.cu): a warp's exclusive
// sum, and how many warps to launch on the current device. CUDA C++, device and host.
#ifndef ZG_ENCODE_WARP_CUH
#define ZG_ENCODE_WARP_CUH
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

// The sum of v over the lanes below this one; *total the warp's.
__device__ inline uint32_t zg_ew_exclusive_sum(uint32_t v, uint32_t *total) {
    uint32_t incl = v;
    for (unsigned d = 1; d < 32; d <<= 1) {
        const uint32_t t = __shfl_up_sync(0xffffffffu, incl, d);
        if ((threadIdx.x & 31) >= d) incl += t;
    }
    *total = __shfl_sync(0xffffffffu, incl, 31);
    return incl - v;
}

// per_sm warps for each multiprocessor of the current device (*out; 0 where the device cannot be asked).
inline cudaError_t zg_ew_warps(unsigned per_sm, size_t *out) {
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    *out = e == cudaSuccess ? (size_t)sms * per_sm : 0;
    return e;
}

#endif
