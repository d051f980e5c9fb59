/* zgpu's DEFLATE decoder: the kernel. Every step is in inflate_rules.h (shared with the CPU unit test); here a
 * thread block of ZI_NL threads takes streams blockIdx.x, blockIdx.x + gridDim.x, ... */
#include "cuda/inflate_gpu.h"
#include "cuda/inflate_rules.h"

__global__ void __launch_bounds__(ZI_NL) zg_inflate_kernel(const void *const *in, const size_t *in_bytes,
                                                           void *const *out, const size_t *out_bytes, size_t *actual,
                                                           int *status, size_t n, zi_match *scratch,
                                                           unsigned long long *profile) {
    __shared__ zi_shared sh;
    zi_match *ml = scratch + (size_t)blockIdx.x * ZI_MCAP;
    for (size_t i = blockIdx.x; i < n; i += gridDim.x) {
        const size_t nb = in_bytes[i], cap = out_bytes[i];
        if (nb > ZI_MAX_BYTES || cap > ZI_MAX_BYTES) {
            if (threadIdx.x == 0) {
                status[i] = ZI_E_TOO_BIG;
                actual[i] = 0;
            }
            continue;
        }
        zi_stream(&sh, (const uint8_t *)in[i], (uint32_t)nb, (uint8_t *)out[i], (uint32_t)cap, ml, &status[i],
                  &actual[i]);
        if (profile && threadIdx.x == 0) {
            for (int k = 0; k < ZI_PHASES; k++) atomicAdd(&profile[k], (unsigned long long)sh.tick[k]);
            atomicAdd(&profile[ZI_PHASES], (unsigned long long)sh.stat_windows);
            atomicAdd(&profile[ZI_PHASES + 1], (unsigned long long)sh.stat_sweeps);
        }
        __syncthreads(); /* the next stream's first phase rewrites the shared state */
    }
}

static int sm_count(void) {
    static int n = 0;
    if (!n) {
        int dev = 0, v = 0;
        if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess)
            n = v;
        else
            n = 132;
    }
    return n;
}

extern "C" size_t zg_inflate_grid(size_t n) {
    const size_t most = (size_t)sm_count() * 4; /* resident blocks: ~45 KB of shared memory each */
    return n < most ? n : most;
}

extern "C" size_t zg_inflate_scratch_bytes(size_t n) { return zg_inflate_grid(n) * ZI_MCAP * sizeof(zi_match); }

extern "C" cudaError_t zg_inflate_launch(const void *const *in, const size_t *in_bytes, void *const *out,
                                         const size_t *out_bytes, size_t *actual, int *status, size_t n, void *scratch,
                                         cudaStream_t s) {
    return zg_inflate_launch_profiled(in, in_bytes, out, out_bytes, actual, status, n, scratch, NULL, s);
}

extern "C" cudaError_t zg_inflate_launch_profiled(const void *const *in, const size_t *in_bytes, void *const *out,
                                                  const size_t *out_bytes, size_t *actual, int *status, size_t n,
                                                  void *scratch, unsigned long long *profile, cudaStream_t s) {
    if (!n) return cudaSuccess;
    zg_inflate_kernel<<<(unsigned)zg_inflate_grid(n), ZI_NL, 0, s>>>(in, in_bytes, out, out_bytes, actual, status, n,
                                                                      (zi_match *)scratch, profile);
    return cudaGetLastError();
}
