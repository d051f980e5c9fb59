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

// numcodecs' delta of an integer chunk (out of place): out[0] = in[0], out[i] = in[i] - in[i-1], wrapping in T.
template <typename T>
__global__ void delta_kernel(const zg_ge_pair *pairs, uint64_t count) {
    const zg_ge_pair pr = pairs[blockIdx.y];
    const T *in = reinterpret_cast<const T *>(pr.src);
    T *out = reinterpret_cast<T *>(pr.dst);
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (uint64_t)gridDim.x * blockDim.x)
        out[i] = i ? (T)(in[i] - in[i - 1]) : in[0];
}

// numcodecs' shuffle (out of place): byte j of item i to out[j * count + i], count = nbytes / es items.
__global__ void shuffle_kernel(const zg_ge_pair *pairs, uint64_t nbytes, unsigned es) {
    const zg_ge_pair pr = pairs[blockIdx.y];
    const uint64_t count = nbytes / es;
    for (uint64_t o = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; o < nbytes; o += (uint64_t)gridDim.x * blockDim.x)
        pr.dst[o] = pr.src[(o % count) * es + o / count];
}

unsigned blocks_for(uint64_t items) {
    const uint64_t b = (items + 256 * 8 - 1) / (256 * 8);
    return (unsigned)(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

}  // namespace

// A grid's y dimension holds at most 65535 chunks: a batch of n launches in groups, launch(first, count) each.
namespace {
template <typename Launch>
cudaError_t in_groups(size_t n, Launch launch) {
    constexpr size_t kMaxY = 65535;
    for (size_t at = 0; at < n; at += kMaxY) {
        launch(at, (unsigned)(n - at < kMaxY ? n - at : kMaxY));
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
}  // namespace

extern "C" cudaError_t zg_ge_fill_check_launch(const uint8_t *const *d_chunks, size_t n, uint64_t nbytes,
                                               const uint8_t *d_fill, int itemsize, int *d_differs, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (itemsize <= 0) return cudaErrorInvalidValue;
    cudaError_t e = cudaMemsetAsync(d_differs, 0, n * sizeof(int), s);
    if (e != cudaSuccess || nbytes == 0) return e;
    const uint64_t per_block = 256 * 16 * 8; // about 8 uint4 a thread
    uint64_t bx = (nbytes + per_block - 1) / per_block;
    if (bx > 1024) bx = 1024;
    return in_groups(n, [&](size_t at, unsigned g) {
        fill_check_kernel<<<dim3((unsigned)bx, g), 256, 0, s>>>(d_chunks + at, nbytes, d_fill, itemsize, d_differs + at);
    });
}

extern "C" cudaError_t zg_ge_delta_launch(const zg_ge_pair *d_pairs, size_t n, uint64_t nbytes, int itemsize,
                                          cudaStream_t s) {
    if (n == 0 || nbytes == 0) return cudaSuccess;
    if ((itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8) || nbytes % (uint64_t)itemsize)
        return cudaErrorInvalidValue;
    const uint64_t count = nbytes / (uint64_t)itemsize;
    return in_groups(n, [&](size_t at, unsigned g) {
        const dim3 grid(blocks_for(count), g);
        switch (itemsize) {
        case 1: delta_kernel<uint8_t><<<grid, 256, 0, s>>>(d_pairs + at, count); break;
        case 2: delta_kernel<uint16_t><<<grid, 256, 0, s>>>(d_pairs + at, count); break;
        case 4: delta_kernel<uint32_t><<<grid, 256, 0, s>>>(d_pairs + at, count); break;
        default: delta_kernel<uint64_t><<<grid, 256, 0, s>>>(d_pairs + at, count); break;
        }
    });
}

extern "C" cudaError_t zg_ge_shuffle_launch(const zg_ge_pair *d_pairs, size_t n, uint64_t nbytes, int elementsize,
                                            cudaStream_t s) {
    if (n == 0 || nbytes == 0) return cudaSuccess;
    if (elementsize <= 0 || nbytes % (uint64_t)elementsize) return cudaErrorInvalidValue;
    return in_groups(n, [&](size_t at, unsigned g) {
        shuffle_kernel<<<dim3(blocks_for(nbytes), g), 256, 0, s>>>(d_pairs + at, nbytes, (unsigned)elementsize);
    });
}
