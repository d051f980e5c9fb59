/* Kernels a device write runs over its gathered chunks before encoding them (see chunk_kernels.h). */
#include "gpuencode/chunk_kernels.h"

#include <stdint.h>

namespace {

// differs[c] = 1 when chunk c holds a byte unlike the fill value repeated (zeroed by the launcher first). 16 bytes a
// step where the element size divides 16 and the chunk is aligned (the fill value then repeats within a uint4).
__global__ void fill_check_kernel(const uint8_t *const *chunks, uint64_t nbytes, const uint8_t *fill, int itemsize,
                                  int *differs) {
    const uint8_t *p = chunks[blockIdx.y];
    int *flag = &differs[blockIdx.y];
    const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, step = (uint64_t)gridDim.x * blockDim.x;
    const bool wide = 16 % itemsize == 0 && ((uintptr_t)p & 15) == 0;
    if (wide) {
        uint8_t pat[16];
        for (int k = 0; k < 16; k++) pat[k] = fill[k % itemsize];
        uint4 want;
        memcpy(&want, pat, 16);
        const uint4 *v = reinterpret_cast<const uint4 *>(p);
        const uint64_t nv = nbytes / 16;
        bool bad = false;
        for (uint64_t i = tid; i < nv && !bad; i += step) {
            const uint4 x = v[i];
            bad = x.x != want.x || x.y != want.y || x.z != want.z || x.w != want.w;
        }
        for (uint64_t i = nv * 16 + tid; i < nbytes && !bad; i += step) bad = p[i] != fill[i % itemsize];
        if (bad) *flag = 1;
        return;
    }
    bool bad = false;
    for (uint64_t i = tid; i < nbytes && !bad; i += step) bad = p[i] != fill[i % itemsize];
    if (bad) *flag = 1;
}

}  // namespace

extern "C" cudaError_t zg_ge_fill_check_launch(const uint8_t *const *d_chunks, size_t n, uint64_t nbytes,
                                               const uint8_t *d_fill, int itemsize, int *d_differs, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (itemsize <= 0 || n > 65535) return cudaErrorInvalidValue;
    cudaError_t e = cudaMemsetAsync(d_differs, 0, n * sizeof(int), s);
    if (e != cudaSuccess || nbytes == 0) return e;
    const uint64_t per_block = 256 * 16 * 8; // about 8 uint4 a thread
    uint64_t bx = (nbytes + per_block - 1) / per_block;
    if (bx > 1024) bx = 1024;
    fill_check_kernel<<<dim3((unsigned)bx, (unsigned)n), 256, 0, s>>>(d_chunks, nbytes, d_fill, itemsize, d_differs);
    return cudaGetLastError();
}
