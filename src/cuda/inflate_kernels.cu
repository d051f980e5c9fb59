/* zgpu's DEFLATE decoder: the kernel. Every step is in inflate_rules.h (shared with the CPU unit test); here a
 * thread block of ZI_NL threads takes streams blockIdx.x, blockIdx.x + gridDim.x, ... */
#include "cuda/inflate_gpu.h"
#include "cuda/inflate_rules.h"

__global__ void __launch_bounds__(ZI_NL, 1) zg_inflate_kernel(const void *const *in, const size_t *in_bytes,
                                                           void *const *out, const size_t *out_bytes, size_t *actual,
                                                           int *status, size_t n, uint8_t *scratch,
                                                           unsigned long long *profile) {
    extern __shared__ __align__(16) unsigned char zi_smem[]; /* dynamic: over 48 KB with more lanes */
    zi_shared &sh = *reinterpret_cast<zi_shared *>(zi_smem);
    uint8_t *mine = scratch + (size_t)blockIdx.x * ZI_SCRATCH;
    for (size_t i = blockIdx.x; i < n; i += gridDim.x) {
        const size_t nb = in_bytes[i], cap = out_bytes[i];
        if (nb > ZI_MAX_BYTES || cap > ZI_MAX_BYTES) {
            if (threadIdx.x == 0) {
                status[i] = ZI_E_TOO_BIG;
                actual[i] = 0;
            }
            continue;
        }
        zi_stream(&sh, (const uint8_t *)in[i], (uint32_t)nb, (uint8_t *)out[i], (uint32_t)cap, mine, &status[i],
                  &actual[i]);
        if (profile && threadIdx.x == 0) {
            for (int k = 0; k < ZI_PHASES; k++) atomicAdd(&profile[k], (unsigned long long)sh.tick[k]);
            atomicAdd(&profile[ZI_PHASES], (unsigned long long)sh.stat_windows);
            atomicAdd(&profile[ZI_PHASES + 1], (unsigned long long)sh.stat_rounds);
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
    const size_t most = (size_t)sm_count() * 2; /* blocks take turns at streams: bounds the scratch */
    return n < most ? n : most;
}

extern "C" size_t zg_inflate_scratch_bytes(size_t n) { return zg_inflate_grid(n) * ZI_SCRATCH; }

extern "C" cudaError_t zg_inflate_launch(const void *const *in, const size_t *in_bytes, void *const *out,
                                         const size_t *out_bytes, size_t *actual, int *status, size_t n, void *scratch,
                                         cudaStream_t s) {
    return zg_inflate_launch_profiled(in, in_bytes, out, out_bytes, actual, status, n, scratch, NULL, s);
}

extern "C" cudaError_t zg_inflate_launch_profiled(const void *const *in, const size_t *in_bytes, void *const *out,
                                                  const size_t *out_bytes, size_t *actual, int *status, size_t n,
                                                  void *scratch, unsigned long long *profile, cudaStream_t s) {
    if (!n) return cudaSuccess;
    static int attr_set = 0;
    if (!attr_set) {
        const cudaError_t e = cudaFuncSetAttribute(zg_inflate_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   (int)sizeof(zi_shared));
        if (e != cudaSuccess) return e;
        attr_set = 1;
    }
    zg_inflate_kernel<<<(unsigned)zg_inflate_grid(n), ZI_NL, sizeof(zi_shared), s>>>(in, in_bytes, out, out_bytes, actual, status, n,
                                                                      (uint8_t *)scratch, profile);
    return cudaGetLastError();
}
