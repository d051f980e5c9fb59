// zgpu's batched CUDA kernels of the stages around a decoder (see post_kernels.h). Every kernel maps blockIdx.y
// (strided by gridDim.y) to a chunk and blockIdx.x/threadIdx.x to positions inside it, so one launch covers a
// whole wave.
#include "gpucodec/post/post_kernels.h"

#include "gpucodec/common/checksum_combine.h"
#include "gpucodec/common/gpu_limits.h"

#include <stdint.h>
#include <string.h>

#include <type_traits>

namespace {

// Grids and blocks come from launch_config.h (pure functions of the device's limits, tested without a GPU).
constexpr int kThreads = ZG_LC_POST_THREADS;

// The current device's limits (an H100's when it cannot be asked, as the kernels assumed before).
zg_gpu_limits limits() {
    zg_gpu_limits L;
    (void)zg_gpu_limits_current(&L);
    return L;
}
dim3 grid_of(const zg_lc_dims &d) { return dim3(d.grid_x, d.grid_y); }

// ---------------------------------------------------------------- copy
__global__ void copy_kernel(const zg_k_copy *items, size_t n_items) {
    for (size_t c = blockIdx.y; c < n_items; c += gridDim.y) {
        const zg_k_copy it = items[c];
        const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
        const uint64_t t0 = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
        if ((((uintptr_t)it.src | (uintptr_t)it.dst) & 15) == 0) {
            const uint64_t nv = it.n / 16;
            const uint4 *s = (const uint4 *)it.src;
            uint4 *d = (uint4 *)it.dst;
            for (uint64_t i = t0; i < nv; i += stride) d[i] = s[i];
            for (uint64_t i = nv * 16 + t0; i < it.n; i += stride) it.dst[i] = it.src[i];
        } else {
            for (uint64_t i = t0; i < it.n; i += stride) it.dst[i] = it.src[i];
        }
    }
}

// ---------------------------------------------------------------- unshuffle
// Byte unshuffle of one block: element i, byte j comes from src[j * ne + i].
// Elements 4q..4q+3 of a byte-shuffled block of 2- or 4-byte elements (nq = elements / 4 per byte plane, planes
// 4-byte aligned): one 4-byte load per plane, a byte transpose, one 8- or 16-byte store.
// The quad goes to `to` (aligned to 4 * ts bytes).
__device__ __forceinline__ void unshuffle_quad_to(const uint32_t *s32, uint32_t nq, uint64_t q, uint32_t ts,
                                                  uint8_t *to) {
    const uint32_t a = s32[q], b = s32[nq + q];
    if (ts == 2) {
        *(uint2 *)to = make_uint2(__byte_perm(a, b, 0x5140), __byte_perm(a, b, 0x7362));
    } else {
        const uint32_t c = s32[2 * nq + q], d = s32[3 * nq + q];
        const uint32_t ab0 = __byte_perm(a, b, 0x5140), ab1 = __byte_perm(a, b, 0x7362);
        const uint32_t cd0 = __byte_perm(c, d, 0x5140), cd1 = __byte_perm(c, d, 0x7362);
        *(uint4 *)to = make_uint4(__byte_perm(ab0, cd0, 0x5410), __byte_perm(ab0, cd0, 0x7632),
                                  __byte_perm(ab1, cd1, 0x5410), __byte_perm(ab1, cd1, 0x7632));
    }
}
__device__ __forceinline__ void unshuffle_quad(const uint32_t *s32, uint8_t *dst, uint32_t nq, uint64_t q, uint32_t ts) {
    unshuffle_quad_to(s32, nq, q, ts, dst + 4 * ts * q);
}

// Output address of chunk element e (the first of a quad, so the whole quad lies in its row) under the map.
__device__ __forceinline__ uint8_t *mapped_at(const zg_k_row_map &m, uint8_t *base, uint32_t e, uint32_t ts) {
    const uint32_t rlen = m.chunk[m.ndim - 1];
    uint32_t row = e / rlen;
    uint8_t *p = base + (uint64_t)(e - row * rlen) * ts;
    for (int d = m.ndim - 2; d >= 0; d--) {
        const uint32_t k = row % m.chunk[d];
        row /= m.chunk[d];
        p += (int64_t)k * m.out_strides[d];
    }
    return p;
}

// Whether a block of bsize bytes at src/dst can take unshuffle_quad.
__device__ __forceinline__ bool quad_ok(const uint8_t *src, const uint8_t *dst, uint64_t bsize, uint32_t ts) {
    return (ts == 2 || ts == 4) && bsize % (4 * ts) == 0 && ((uintptr_t)src & 3) == 0 &&
           ((uintptr_t)dst & (4 * ts - 1)) == 0;
}

__device__ void unshuffle_block(const uint8_t *src, uint8_t *dst, uint32_t bsize, uint32_t ts, uint64_t t0,
                                uint64_t stride) {
    const uint32_t ne = bsize / ts;
    uint64_t first = 0; /* elements before it are done 4 at a time */
    if (quad_ok(src, dst, bsize, ts)) {
        for (uint64_t q = t0; q < ne / 4; q += stride) unshuffle_quad((const uint32_t *)src, dst, ne / 4, q, ts);
        first = ne;
    }
    for (uint64_t i = first + t0; i < ne; i += stride) {
        uint8_t *d = dst + i * ts;
        if (ts == 2 && ((uintptr_t)d & 1) == 0) {
            *(uint16_t *)d = (uint16_t)(src[i] | (uint16_t)src[ne + i] << 8);
        } else if (ts == 4 && ((uintptr_t)d & 3) == 0) {
            *(uint32_t *)d = (uint32_t)src[i] | (uint32_t)src[ne + i] << 8 | (uint32_t)src[2 * ne + i] << 16 |
                             (uint32_t)src[3 * ne + i] << 24;
        } else if (ts == 8 && ((uintptr_t)d & 7) == 0) {
            uint64_t v = 0;
#pragma unroll
            for (int j = 0; j < 8; j++) v |= (uint64_t)src[(uint64_t)j * ne + i] << (8 * j);
            *(uint64_t *)d = v;
        } else {
            for (uint32_t j = 0; j < ts; j++) d[j] = src[(uint64_t)j * ne + i];
        }
    }
    for (uint64_t q = (uint64_t)ne * ts + t0; q < bsize; q += stride) dst[q] = src[q];
}

// Bit unshuffle of ne elements (ne % 8 == 0): row (byte j, bit k) of ne/8 bytes holds bit k of byte j of every
// element, element 8g+b in bit b of byte g. One thread per (g, j): 8 row bytes -> 8x8 bit transpose.
__device__ void bitunshuffle_block(const uint8_t *src, uint8_t *dst, uint32_t ne, uint32_t ts, uint64_t t0,
                                   uint64_t stride) {
    const uint32_t rowbytes = ne / 8;
    const uint64_t work = (uint64_t)rowbytes * ts;
    for (uint64_t w = t0; w < work; w += stride) {
        const uint32_t g = (uint32_t)(w % rowbytes), j = (uint32_t)(w / rowbytes);
        uint8_t out[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const uint8_t r = src[((uint64_t)j * 8 + k) * rowbytes + g];
#pragma unroll
            for (int b = 0; b < 8; b++) out[b] |= (uint8_t)(((r >> b) & 1u) << k);
        }
#pragma unroll
        for (int b = 0; b < 8; b++) dst[((uint64_t)g * 8 + b) * ts + j] = out[b];
    }
}

__global__ void unshuffle_kernel(const zg_k_unshuffle *items, size_t n_items, zg_k_row_map map) {
    for (size_t c = blockIdx.y; c < n_items; c += gridDim.y) {
        const zg_k_unshuffle it = items[c];
        const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
        const uint64_t t0 = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
        if (it.nbytes == 0 || it.blocksize == 0 || it.typesize == 0) continue;
        if (it.mapped) { /* full blocks of quads (the caller checked), each quad to its place in the output */
            const uint32_t nq = it.blocksize / (4 * it.typesize);
            const uint64_t total = it.nbytes / (4 * it.typesize);
            for (uint64_t q = t0; q < total; q += stride) {
                const uint64_t b = q / nq;
                unshuffle_quad_to((const uint32_t *)(it.src + b * it.blocksize), nq, q - b * nq, it.typesize,
                                  mapped_at(map, it.dst, (uint32_t)(4 * q), it.typesize));
            }
            continue;
        }
        uint64_t nblocks = (it.nbytes + it.blocksize - 1) / it.blocksize, b0 = 0;
        if (it.mode == 1 && it.nbytes >= it.blocksize && quad_ok(it.src, it.dst, it.blocksize, it.typesize)) {
            /* the full blocks as one range of quads, so that every thread has work (a loop over blocks inside
             * each thread left most threads idle) */
            const uint64_t nfull = it.nbytes / it.blocksize;
            const uint32_t nq = it.blocksize / (4 * it.typesize);
            for (uint64_t q = t0; q < nfull * nq; q += stride) {
                const uint64_t b = q / nq;
                unshuffle_quad((const uint32_t *)(it.src + b * it.blocksize), it.dst + b * it.blocksize, nq, q - b * nq,
                               it.typesize);
            }
            b0 = nfull;
        }
        for (uint64_t b = b0; b < nblocks; b++) {
            const uint64_t off = b * it.blocksize;
            const uint32_t bsize = (uint32_t)(it.nbytes - off < it.blocksize ? it.nbytes - off : it.blocksize);
            const uint8_t *s = it.src + off;
            uint8_t *d = it.dst + off;
            if (it.mode == 1) {
                if (it.typesize > 1) unshuffle_block(s, d, bsize, it.typesize, t0, stride);
                else for (uint64_t q = t0; q < bsize; q += stride) d[q] = s[q];
                continue;
            }
            uint32_t ne = bsize / it.typesize;
            uint64_t done = 0;
            if (it.version <= 2) {
                if (ne % 8 == 0) {
                    bitunshuffle_block(s, d, ne, it.typesize, t0, stride);
                    done = (uint64_t)ne * it.typesize;
                }
            } else {
                ne -= ne % 8;
                bitunshuffle_block(s, d, ne, it.typesize, t0, stride);
                done = (uint64_t)ne * it.typesize;
            }
            for (uint64_t q = done + t0; q < bsize; q += stride) d[q] = s[q];
        }
    }
}

// ---------------------------------------------------------------- byteswap
template <int U>
__global__ void byteswap_kernel(const zg_k_buf *items, size_t n_items) {
    for (size_t c = blockIdx.y; c < n_items; c += gridDim.y) {
        const zg_k_buf it = items[c];
        const uint64_t nw = it.n / U;
        for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nw; i += (uint64_t)gridDim.x * blockDim.x) {
            uint8_t *w = it.p + i * U;
            uint8_t tmp[U];
#pragma unroll
            for (int k = 0; k < U; k++) tmp[k] = w[k];
#pragma unroll
            for (int k = 0; k < U; k++) w[k] = tmp[U - 1 - k];
        }
    }
}

// ---------------------------------------------------------------- delta (prefix sum with wrap-around)
// One block per chunk: tiles of kThreads * kPer elements; each thread sums its kPer elements, a block scan of
// the per-thread sums gives the offsets, the running carry moves from tile to tile.
constexpr int kPer = 8;
template <typename T>
__global__ void delta_kernel(const zg_k_buf *items, size_t n_items) {
    __shared__ T sums[kThreads];
    __shared__ T carry_s;
    static_assert(sizeof(sums) + sizeof(carry_s) <= ZG_LC_DELTA_SMEM, "launch_config.h: delta's shared memory");
    for (size_t c = blockIdx.x; c < n_items; c += gridDim.x) {
        const zg_k_buf it = items[c];
        T *v = (T *)it.p;
        const uint64_t n = it.n / sizeof(T);
        if (threadIdx.x == 0) carry_s = 0;
        __syncthreads();
        for (uint64_t base = 0; base < n; base += (uint64_t)kThreads * kPer) {
            T local[kPer];
            T acc = 0;
            const uint64_t first = base + (uint64_t)threadIdx.x * kPer;
#pragma unroll
            for (int k = 0; k < kPer; k++) {
                local[k] = first + k < n ? v[first + k] : (T)0;
                acc = (T)(acc + local[k]);
                local[k] = acc;
            }
            sums[threadIdx.x] = acc;
            __syncthreads();
            for (int off = 1; off < kThreads; off <<= 1) {  // Hillis-Steele inclusive scan
                T add = threadIdx.x >= (unsigned)off ? sums[threadIdx.x - off] : (T)0;
                __syncthreads();
                sums[threadIdx.x] = (T)(sums[threadIdx.x] + add);
                __syncthreads();
            }
            const T prefix = (T)(carry_s + (threadIdx.x ? sums[threadIdx.x - 1] : (T)0));
#pragma unroll
            for (int k = 0; k < kPer; k++)
                if (first + k < n) v[first + k] = (T)(local[k] + prefix);
            __syncthreads();
            if (threadIdx.x == 0) carry_s = (T)(carry_s + sums[kThreads - 1]);
            __syncthreads();
        }
    }
}

// ---------------------------------------------------------------- TIFF predictors (2: horizontal, 3: floating point)
// A warp a row. The differences run over every s-th element of a row (s: samples a pixel), so the sums of a row
// are s interleaved prefix sums: for s <= 32 the warp takes C = s * (32 / s) elements at a time (whole pixels, so
// lane l always holds sample l % s), scans them with shuffles by s, 2s, 4s, ... (lanes s apart hold the same
// sample) and carries each sample's last sum to the next C; for wider pixels lane l sums samples l, l + 32, ...
// along the row. Four steps' loads are issued together.
constexpr unsigned kRowFull = 0xffffffffu;
template <typename T, typename A>
__device__ void row_prefix(T *x, uint32_t R, uint32_t s, unsigned lane) {
    if (s <= 32) {
        const uint32_t C = s * (32 / s), col = lane % s;
        A carry = 0;
        for (uint32_t base = 0; base < R; base += 4 * C) {
            A v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const uint32_t e = base + u * C + lane;
                v[u] = lane < C && e < R ? (A)x[e] : (A)0;
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                for (uint32_t d = s; d < C; d <<= 1) {
                    const A t = __shfl_up_sync(kRowFull, v[u], d);
                    if (lane >= d) v[u] = (A)(v[u] + t);
                }
                v[u] = (A)(v[u] + carry);
                carry = __shfl_sync(kRowFull, v[u], C - s + col);
                const uint32_t e = base + u * C + lane;
                if (lane < C && e < R) x[e] = (T)v[u];
            }
        }
    } else {
        for (uint32_t c = lane; c < s; c += 32) {
            A acc = 0;
            for (uint32_t e = c; e < R; e += s) {
                acc = (A)(acc + x[e]);
                x[e] = (T)acc;
            }
        }
    }
}

// Pixels of S <= 4 samples: a lane sums E consecutive elements of the row (16 bytes a sample, whole uint4s and
// whole pixels, so its element k is sample k % S) on its own, then one shuffle scan of its S totals over the warp
// gives each lane what comes before it. A step covers 32 * E elements (an RGB 512-pixel row of bytes: one) with
// 5 * S shuffles, where row_prefix's steps of C elements took 4-5 shuffles each (an 8192x8192 RGB image's 256
// tiles: 0.52 ms, H100).
template <typename T, int S>
__device__ void row_prefix_wide(T *x, uint32_t R, unsigned lane) {
    typedef typename std::conditional<sizeof(T) == 8, unsigned long long, uint32_t>::type A;
    constexpr int LB = S == 1 ? 32 : 16 * S; // bytes a lane a step
    constexpr int E = LB / (int)sizeof(T), NW = LB / 4;
    const bool aligned = ((uintptr_t)x & 15) == 0;
    A carry[S];
#pragma unroll
    for (int c = 0; c < S; c++) carry[c] = 0;
    for (uint32_t base = 0; base < R; base += 32u * E) {
        const uint32_t first = base + lane * E;
        const bool whole = aligned && first + E <= R;
        T v[E];
        if (whole) {
            uint32_t w[NW];
#pragma unroll
            for (int q = 0; q < NW / 4; q++) {
                const uint4 t = reinterpret_cast<const uint4 *>(x + first)[q];
                w[4 * q] = t.x, w[4 * q + 1] = t.y, w[4 * q + 2] = t.z, w[4 * q + 3] = t.w;
            }
#pragma unroll
            for (int k = 0; k < E; k++) {
                if (sizeof(T) == 8) v[k] = (T)((unsigned long long)w[2 * k] | (unsigned long long)w[2 * k + 1] << 32);
                else v[k] = (T)(w[k * sizeof(T) / 4] >> (8 * ((k * sizeof(T)) % 4)));
            }
        } else {
#pragma unroll
            for (int k = 0; k < E; k++) v[k] = first + k < R ? x[first + k] : (T)0;
        }
#pragma unroll
        for (int k = S; k < E; k++) v[k] = (T)(v[k] + v[k - S]);
        A incl[S], before[S];
#pragma unroll
        for (int c = 0; c < S; c++) incl[c] = (A)v[E - S + c];
#pragma unroll
        for (int d = 1; d < 32; d <<= 1)
#pragma unroll
            for (int c = 0; c < S; c++) {
                const A t = __shfl_up_sync(kRowFull, incl[c], d);
                if (lane >= (unsigned)d) incl[c] = (A)(incl[c] + t);
            }
#pragma unroll
        for (int c = 0; c < S; c++) {
            before[c] = (A)(carry[c] + incl[c] - (A)v[E - S + c]);
            carry[c] = (A)(carry[c] + __shfl_sync(kRowFull, incl[c], 31));
        }
#pragma unroll
        for (int k = 0; k < E; k++) v[k] = (T)(v[k] + before[k % S]);
        if (whole) {
            uint32_t w[NW];
#pragma unroll
            for (int q = 0; q < NW; q++) w[q] = 0;
#pragma unroll
            for (int k = 0; k < E; k++) {
                if (sizeof(T) == 8) {
                    w[2 * k] = (uint32_t)(unsigned long long)v[k];
                    w[2 * k + 1] = (uint32_t)((unsigned long long)v[k] >> 32);
                } else {
                    w[k * sizeof(T) / 4] |= (uint32_t)v[k] << (8 * ((k * sizeof(T)) % 4));
                }
            }
#pragma unroll
            for (int q = 0; q < NW / 4; q++)
                reinterpret_cast<uint4 *>(x + first)[q] = make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
        } else {
#pragma unroll
            for (int k = 0; k < E; k++)
                if (first + k < R) x[first + k] = v[k];
        }
    }
}

template <typename T>
__global__ void row_delta_kernel(const zg_k_buf *items, size_t n_items, uint32_t row, uint32_t s) {
    typedef typename std::conditional<sizeof(T) == 8, unsigned long long, uint32_t>::type A;
    const unsigned lane = threadIdx.x & 31, warps = blockDim.x / 32;
    const uint64_t row_bytes = (uint64_t)row * sizeof(T);
    for (size_t c = blockIdx.y; c < n_items; c += gridDim.y) {
        const zg_k_buf it = items[c];
        const uint64_t rows = (it.n + row_bytes - 1) / row_bytes;
        for (uint64_t r = (uint64_t)blockIdx.x * warps + threadIdx.x / 32; r < rows; r += (uint64_t)gridDim.x * warps) {
            const uint64_t at = r * row_bytes, len = it.n - at < row_bytes ? it.n - at : row_bytes;
            T *x = (T *)(it.p + at);
            const uint32_t R = (uint32_t)(len / sizeof(T));
            switch (s) {
            case 1: row_prefix_wide<T, 1>(x, R, lane); break;
            case 2: row_prefix_wide<T, 2>(x, R, lane); break;
            case 3: row_prefix_wide<T, 3>(x, R, lane); break;
            case 4: row_prefix_wide<T, 4>(x, R, lane); break;
            default: row_prefix<T, A>(x, R, s, lane); break;
            }
        }
    }
}

// Predictor 3: each row's bytes summed in place in src (the byte differences run over every s-th byte), then
// element w's byte b (native, little-endian order) gathered from byte plane B - 1 - b of the row into dst. Bytes
// of a last row that make no whole element are copied.
template <typename W>
__global__ void row_float_kernel(const zg_k_copy *items, size_t n_items, uint32_t row, uint32_t s) {
    constexpr uint32_t B = sizeof(W);
    const unsigned lane = threadIdx.x & 31, warps = blockDim.x / 32;
    const uint64_t row_bytes = (uint64_t)row * B;
    for (size_t c = blockIdx.y; c < n_items; c += gridDim.y) {
        const zg_k_copy it = items[c];
        const uint64_t rows = (it.n + row_bytes - 1) / row_bytes;
        for (uint64_t r = (uint64_t)blockIdx.x * warps + threadIdx.x / 32; r < rows; r += (uint64_t)gridDim.x * warps) {
            const uint64_t at = r * row_bytes;
            const uint32_t len = (uint32_t)(it.n - at < row_bytes ? it.n - at : row_bytes), wc = len / B;
            uint8_t *src = (uint8_t *)it.src + at, *dst = it.dst + at;
            row_prefix<uint8_t, uint32_t>(src, len, s, lane);
            __syncwarp(); // (every lane's sums are visible to the gather)
            const bool aligned = ((uintptr_t)dst & (B - 1)) == 0;
            for (uint32_t w = lane; w < wc; w += 32) {
                W v = 0;
#pragma unroll
                for (uint32_t b = 0; b < B; b++) v |= (W)src[(uint64_t)(B - 1 - b) * wc + w] << (8 * b);
                if (aligned) {
                    ((W *)dst)[w] = v;
                } else {
#pragma unroll
                    for (uint32_t b = 0; b < B; b++) dst[(uint64_t)w * B + b] = (uint8_t)(v >> (8 * b));
                }
            }
            for (uint32_t t = wc * B + lane; t < len; t += 32) dst[t] = src[t];
        }
    }
}

// ---------------------------------------------------------------- checksums (crc32c codec, gzip CRC32, zlib Adler-32)
// One block per chunk (blocks stride over chunks). Each thread takes one contiguous range of the chunk
// (checksum_combine.h explains the math): a CRC range yields raw(range) shifted over the bytes after it, an
// Adler range yields its (a, b) terms; the block reduces the terms (XOR / sum) and thread 0 compares.
// Slicing-by-8 tables are built in shared memory by each block; the 64 shift powers come from the host.
constexpr int kCkThreads = ZG_LC_CHECK_THREADS;
constexpr uint64_t kCkMinRange = 256;  // below this a range costs more to combine than to compute

struct CkPows {
    uint32_t pow[ZG_CRC_POW_N];
};

// Thread t's range [begin, end) of an n-byte buffer; ranges are multiples of 16 bytes except the last.
// (Host-callable, like the range functions below, so that they can be exercised off the GPU.)
__host__ __device__ void ck_range(uint64_t n, unsigned nthreads, unsigned t, uint64_t *begin, uint64_t *end) {
    uint64_t len = (n + nthreads - 1) / nthreads;
    len = (len + 15) & ~(uint64_t)15;
    if (len < kCkMinRange) len = kCkMinRange;
    const uint64_t b = (uint64_t)t * len;
    *begin = b < n ? b : n;
    *end = n - *begin < len ? n : *begin + len;
}

// Shared-memory setup: slicing-by-8 tables for `poly` and the host's powers.
__device__ void ck_setup(uint32_t *tab, uint32_t *pow, const CkPows &pw, uint32_t poly) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) tab[i] = zg_crc_table0_entry((uint32_t)i, poly);
    for (int i = threadIdx.x; i < ZG_CRC_POW_N; i += blockDim.x) pow[i] = pw.pow[i];
    __syncthreads();
    for (int e = threadIdx.x; e < 7 * 256; e += blockDim.x) {  // table k from table 0 applied k times
        const int k = 1 + e / 256, i = e % 256;
        uint32_t c = tab[i];
        for (int r = 0; r < k; r++) c = (c >> 8) ^ tab[c & 0xff];
        tab[k * 256 + i] = c;
    }
    __syncthreads();
}

__host__ __device__ inline uint2 ck_load8(const uint8_t *p) {  // p is 8-byte aligned
#ifdef __CUDA_ARCH__
    return __ldg((const uint2 *)p);
#else
    uint2 w;
    memcpy(&w, p, 8);
    return w;
#endif
}

// Raw CRC register (from 0) over p[i, end): bytes up to 8-byte alignment, then 8-byte words, then the tail.
__host__ __device__ uint32_t ck_crc_range(const uint32_t *tab, const uint8_t *p, uint64_t i, uint64_t end) {
    uint32_t r = 0;
    while (i < end && ((uintptr_t)(p + i) & 7)) r = tab[(r ^ p[i++]) & 0xff] ^ (r >> 8);
    for (; end - i >= 8 && i < end; i += 8) {
        const uint2 w = ck_load8(p + i);
        r = zg_crc_raw_word8(tab, r, w.x, w.y);
    }
    while (i < end) r = tab[(r ^ p[i++]) & 0xff] ^ (r >> 8);
    return r;
}

// Adler-32 local sums over p[i, end), reduced mod 65521 at least every ZG_ADLER_NMAX bytes.
__host__ __device__ void ck_adler_range(const uint8_t *p, uint64_t i, uint64_t end, uint32_t *pa, uint32_t *pb) {
    uint32_t a = 0, b = 0;
    while (i < end) {
        const uint64_t stop = end - i < ZG_ADLER_NMAX ? end : i + ZG_ADLER_NMAX;
        while (i < stop && ((uintptr_t)(p + i) & 7)) {
            a += p[i++];
            b += a;
        }
        for (; stop - i >= 8 && i < stop; i += 8) {
            const uint2 w = ck_load8(p + i);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                a += (w.x >> (8 * k)) & 0xff;
                b += a;
            }
#pragma unroll
            for (int k = 0; k < 4; k++) {
                a += (w.y >> (8 * k)) & 0xff;
                b += a;
            }
        }
        while (i < stop) {
            a += p[i++];
            b += a;
        }
        a %= ZG_ADLER_MOD;
        b %= ZG_ADLER_MOD;
    }
    *pa = a;
    *pb = b;
}

// Block-wide XOR / sum; the result is valid in thread 0. `sh` holds 32 words; the leading barrier makes it
// safe to call these back to back.
__device__ uint32_t block_xor(uint32_t v, uint32_t *sh) {
    for (int o = 16; o > 0; o >>= 1) v ^= __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0;
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x + 31) / 32 ? sh[threadIdx.x] : 0u;
        for (int o = 16; o > 0; o >>= 1) v ^= __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}
// Sum over the block of values below 65521 (1024 of them stay below 2^26).
__device__ uint32_t block_sum(uint32_t v, uint32_t *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0;
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x + 31) / 32 ? sh[threadIdx.x] : 0u;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

// CRC of p[0, n) for the block's tables; valid in thread 0.
__device__ uint32_t block_crc(const uint32_t *tab, const uint32_t *pow, uint32_t poly, const uint8_t *p, uint64_t n,
                              uint32_t *sh) {
    uint64_t b, e;
    ck_range(n, blockDim.x, threadIdx.x, &b, &e);
    uint32_t term = 0;
    if (b < e) term = zg_crc_shift(ck_crc_range(tab, p, b, e), n - e, pow, poly);
    const uint32_t lin = block_xor(term, sh);
    return threadIdx.x == 0 ? zg_crc_finish(lin, n, pow, poly) : 0u;
}

// Adler-32 of p[0, n); valid in thread 0.
__device__ uint32_t block_adler(const uint8_t *p, uint64_t n, uint32_t *sh) {
    uint64_t b, e;
    ck_range(n, blockDim.x, threadIdx.x, &b, &e);
    uint32_t ta = 0, tb = 0;
    if (b < e) {
        uint32_t ar, br;
        ck_adler_range(p, b, e, &ar, &br);
        ta = ar;
        tb = zg_adler_b_term(ar, br, n - e);
    }
    const uint32_t sa = block_sum(ta, sh) % ZG_ADLER_MOD;
    const uint32_t sb = block_sum(tb, sh) % ZG_ADLER_MOD;
    return threadIdx.x == 0 ? zg_adler_finish(sa, sb, n) : 0u;
}

__global__ void __launch_bounds__(kCkThreads) crc32c_kernel(const zg_k_buf *items, size_t n_items, int *status,
                                                           CkPows pw) {
    __shared__ uint32_t tab[8 * 256];
    __shared__ uint32_t pow[ZG_CRC_POW_N];
    __shared__ uint32_t sh[32];
    static_assert(sizeof(tab) + sizeof(pow) + sizeof(sh) == ZG_LC_CHECK_SMEM, "launch_config.h: checksum tables");
    ck_setup(tab, pow, pw, ZG_CRC32C_POLY);
    for (size_t c = blockIdx.x; c < n_items; c += gridDim.x) {
        const zg_k_buf it = items[c];
        if (it.n < 4) {
            if (threadIdx.x == 0) status[c] = 1;
            continue;  // uniform over the block: no barrier is skipped by part of it
        }
        const uint64_t m = it.n - 4;
        const uint32_t crc = block_crc(tab, pow, ZG_CRC32C_POLY, it.p, m, sh);
        if (threadIdx.x == 0) {
            const uint32_t want = (uint32_t)it.p[m] | (uint32_t)it.p[m + 1] << 8 | (uint32_t)it.p[m + 2] << 16 |
                                  (uint32_t)it.p[m + 3] << 24;
            if (crc != want) status[c] = 1;
        }
    }
}

// XXH64 of p[0, n) (the low 32 bits, as a zstd frame keeps them): its four accumulators are independent, so four
// threads run one each over the whole stripes and thread 0 merges them and hashes the tail; valid in thread 0.
// `sh` (32 words) carries the lanes; the leading barrier makes it safe to call after the reductions above.
// Not inlined: inlined, it made check_kernel's CRC32 path spill (32 registers and a stack frame, against 43 and
// none; field_f32 gzip read 2% slower on an H200), for a checksum only nvCOMP's zstd frames need.
__device__ __noinline__ uint32_t block_xxh64_low(const uint8_t *p, uint64_t n, uint32_t *sh) {
    __syncthreads();
    if (threadIdx.x < 4) {
        const uint64_t v = zg_xxh64_lane(p, n, (int)threadIdx.x);
        sh[2 * threadIdx.x] = (uint32_t)v;
        sh[2 * threadIdx.x + 1] = (uint32_t)(v >> 32);
    }
    __syncthreads();
    uint32_t r = 0;
    if (threadIdx.x == 0) {
        uint64_t v[4];
        for (int k = 0; k < 4; k++) v[k] = (uint64_t)sh[2 * k] | (uint64_t)sh[2 * k + 1] << 32;
        r = (uint32_t)zg_xxh64_finish(v, p, n);
    }
    return r;
}

// gzip CRC32 (kind 1) / zlib Adler-32 (kind 2) / XXH64 (kind 3) of decoded bytes; any other kind is flagged.
// (An item's kind is the same for the whole block, so every thread takes the same branch and barrier.)
__global__ void __launch_bounds__(kCkThreads) check_kernel(const zg_k_check *items, size_t n_items, int *status,
                                                          CkPows pw) {
    __shared__ uint32_t tab[8 * 256];
    __shared__ uint32_t pow[ZG_CRC_POW_N];
    __shared__ uint32_t sh[32];
    static_assert(sizeof(tab) + sizeof(pow) + sizeof(sh) == ZG_LC_CHECK_SMEM, "launch_config.h: checksum tables");
    ck_setup(tab, pow, pw, ZG_CRC32_POLY);
    for (size_t c = blockIdx.x; c < n_items; c += gridDim.x) {
        const zg_k_check it = items[c];
        uint32_t v;
        if (it.kind == 1) v = block_crc(tab, pow, ZG_CRC32_POLY, it.p, it.n, sh);
        else if (it.kind == 2) v = block_adler(it.p, it.n, sh);
        else if (it.kind == 3) v = block_xxh64_low(it.p, it.n, sh);
        else v = ~it.expected;
        if (threadIdx.x == 0 && v != it.expected) status[c] = 1;
    }
}

const CkPows &ck_pows(uint32_t poly) {
    static const CkPows crc32 = [] { CkPows p; zg_crc_pow_init(p.pow, ZG_CRC32_POLY); return p; }();
    static const CkPows crc32c = [] { CkPows p; zg_crc_pow_init(p.pow, ZG_CRC32C_POLY); return p; }();
    return poly == ZG_CRC32_POLY ? crc32 : crc32c;
}

// ---------------------------------------------------------------- scatter / fill
struct ScatterArgs {
    zg_k_scatter_params p;
};

__device__ __forceinline__ void copy_elem(uint8_t *d, const uint8_t *s, int size) {
    switch (size) {
    case 1: *d = *s; return;
    case 2: if ((((uintptr_t)d | (uintptr_t)s) & 1) == 0) { *(uint16_t *)d = *(const uint16_t *)s; return; } break;
    case 4: if ((((uintptr_t)d | (uintptr_t)s) & 3) == 0) { *(uint32_t *)d = *(const uint32_t *)s; return; } break;
    case 8: if ((((uintptr_t)d | (uintptr_t)s) & 7) == 0) { *(uint64_t *)d = *(const uint64_t *)s; return; } break;
    case 16: if ((((uintptr_t)d | (uintptr_t)s) & 15) == 0) { *(uint4 *)d = *(const uint4 *)s; return; } break;
    default: break;
    }
    for (int k = 0; k < size; k++) d[k] = s[k];
}

// A warp per output row (the innermost axis of a chunk's overlap); rows are numbered over the outer axes.
__global__ void scatter_kernel(ScatterArgs a, const zg_k_scatter *items, const uint64_t *counts, size_t n_items) {
    const zg_k_scatter_params &p = a.p;
    const int nd = p.ndim;
    const int lane = threadIdx.x & 31;
    const uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const uint64_t n_warps = ((uint64_t)gridDim.x * blockDim.x) >> 5;
    const int isz = p.itemsize;
    for (size_t c = blockIdx.y; c < n_items; c += gridDim.y) {
        const zg_k_scatter it = items[c];
        const uint64_t *cnt = counts + c * (size_t)nd;
        const int64_t ss = nd > 0 ? p.src_strides[nd - 1] : isz, ds = nd > 0 ? p.dst_strides[nd - 1] : isz;
        // A warp a row, where a row is the innermost axes that lie alike on both sides (one run of elements in the
        // chunk and in the output): an RGB image's samples alone, a row of three bytes, left 29 of 32 lanes idle
        // (8192x8192x3 bytes: 16.6 ms, against 14.6 for decoding its Deflate tiles; H100)
        uint64_t rowlen;
        int last;
        const uint64_t rows = zg_k_scatter_rows(nd, p.src_strides, p.dst_strides, isz, cnt, it.src != NULL, &rowlen,
                                                &last);
        if (rows == 0) continue;
        for (uint64_t r = warp; r < rows; r += n_warps) {
            // row index -> offsets over axes [0, last)
            int64_t so = 0, dof = 0;
            uint64_t rem = r;
            for (int d = last - 1; d >= 0; d--) {
                const uint64_t i = rem % cnt[d];
                rem /= cnt[d];
                so += (int64_t)i * p.src_strides[d];
                dof += (int64_t)i * p.dst_strides[d];
            }
            uint8_t *drow = it.dst + dof;
            if (!it.src) {
                for (uint64_t e = lane; e < rowlen; e += 32) copy_elem(drow + (int64_t)e * ds, p.d_fill, isz);
                continue;
            }
            const uint8_t *srow = it.src + so;
            if (ss == isz && ds == isz) {  // contiguous on both sides: widest aligned vector copy
                const uint64_t nb = rowlen * (uint64_t)isz;
                const uintptr_t mis = (uintptr_t)srow | (uintptr_t)drow;
                if ((mis & 15) == 0) {
                    for (uint64_t q = (uint64_t)lane * 16; q + 16 <= nb; q += 32 * 16)
                        *(uint4 *)(drow + q) = *(const uint4 *)(srow + q);
                    for (uint64_t q = (nb & ~(uint64_t)15) + lane; q < nb; q += 32) drow[q] = srow[q];
                } else if ((mis & 3) == 0) {
                    for (uint64_t q = (uint64_t)lane * 4; q + 4 <= nb; q += 32 * 4)
                        *(uint32_t *)(drow + q) = *(const uint32_t *)(srow + q);
                    for (uint64_t q = (nb & ~(uint64_t)3) + lane; q < nb; q += 32) drow[q] = srow[q];
                } else {
                    for (uint64_t q = lane; q < nb; q += 32) drow[q] = srow[q];
                }
            } else {
                for (uint64_t e = lane; e < rowlen; e += 32)
                    copy_elem(drow + (int64_t)e * ds, srow + (int64_t)e * ss, isz);
            }
        }
    }
}

}  // namespace

extern "C" cudaError_t zg_k_copy_launch(const zg_k_copy *items, size_t n, uint64_t max_n, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    const zg_gpu_limits L = limits();
    const zg_lc_dims d = zg_lc_copy(&L, n, max_n);
    copy_kernel<<<grid_of(d), d.threads, 0, s>>>(items, n);
    return cudaGetLastError();
}

extern "C" cudaError_t zg_k_unshuffle_launch(const zg_k_unshuffle *items, size_t n, uint64_t max_nbytes,
                                             const zg_k_row_map *map, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    zg_k_row_map m;
    memset(&m, 0, sizeof m);
    if (map) m = *map;
    const zg_gpu_limits L = limits();
    const zg_lc_dims d = zg_lc_unshuffle(&L, n, max_nbytes);
    unshuffle_kernel<<<grid_of(d), d.threads, 0, s>>>(items, n, m);
    return cudaGetLastError();
}

extern "C" cudaError_t zg_k_byteswap_launch(const zg_k_buf *items, size_t n, uint64_t max_n, int unit,
                                            cudaStream_t s) {
    if (n == 0 || unit <= 1) return cudaSuccess;
    const zg_gpu_limits L = limits();
    const zg_lc_dims d = zg_lc_byteswap(&L, n, max_n, unit);
    const dim3 grid = grid_of(d);
    switch (unit) {
    case 2: byteswap_kernel<2><<<grid, d.threads, 0, s>>>(items, n); break;
    case 4: byteswap_kernel<4><<<grid, d.threads, 0, s>>>(items, n); break;
    case 8: byteswap_kernel<8><<<grid, d.threads, 0, s>>>(items, n); break;
    case 16: byteswap_kernel<16><<<grid, d.threads, 0, s>>>(items, n); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t zg_k_delta_launch(const zg_k_buf *items, size_t n, int elemsize, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    const zg_gpu_limits L = limits();
    const zg_lc_dims d = zg_lc_delta(&L, n);
    const dim3 g = grid_of(d);
    switch (elemsize) {
    case 1: delta_kernel<uint8_t><<<g, d.threads, 0, s>>>(items, n); break;
    case 2: delta_kernel<uint16_t><<<g, d.threads, 0, s>>>(items, n); break;
    case 4: delta_kernel<uint32_t><<<g, d.threads, 0, s>>>(items, n); break;
    case 8: delta_kernel<unsigned long long><<<g, d.threads, 0, s>>>(items, n); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t zg_k_row_delta_launch(const zg_k_buf *items, size_t n, uint64_t max_n, int elemsize,
                                              uint32_t row, uint32_t stride, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (row == 0 || stride == 0) return cudaErrorInvalidValue;
    const zg_gpu_limits L = limits();
    const uint64_t row_bytes = (uint64_t)row * (uint64_t)(elemsize > 0 ? elemsize : 1);
    const zg_lc_dims d = zg_lc_rows(&L, n, (max_n + row_bytes - 1) / row_bytes);
    const dim3 g = grid_of(d);
    switch (elemsize) {
    case 1: row_delta_kernel<uint8_t><<<g, d.threads, 0, s>>>(items, n, row, stride); break;
    case 2: row_delta_kernel<uint16_t><<<g, d.threads, 0, s>>>(items, n, row, stride); break;
    case 4: row_delta_kernel<uint32_t><<<g, d.threads, 0, s>>>(items, n, row, stride); break;
    case 8: row_delta_kernel<unsigned long long><<<g, d.threads, 0, s>>>(items, n, row, stride); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t zg_k_row_float_launch(const zg_k_copy *items, size_t n, uint64_t max_n, int elemsize,
                                              uint32_t row, uint32_t stride, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (row == 0 || stride == 0) return cudaErrorInvalidValue;
    const zg_gpu_limits L = limits();
    const uint64_t row_bytes = (uint64_t)row * (uint64_t)(elemsize > 0 ? elemsize : 1);
    const zg_lc_dims d = zg_lc_rows(&L, n, (max_n + row_bytes - 1) / row_bytes);
    const dim3 g = grid_of(d);
    switch (elemsize) {
    case 2: row_float_kernel<uint16_t><<<g, d.threads, 0, s>>>(items, n, row, stride); break;
    case 4: row_float_kernel<uint32_t><<<g, d.threads, 0, s>>>(items, n, row, stride); break;
    case 8: row_float_kernel<unsigned long long><<<g, d.threads, 0, s>>>(items, n, row, stride); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t zg_k_crc32c_launch(const zg_k_buf *items, size_t n, int *status, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    const zg_gpu_limits L = limits();
    const zg_lc_dims d = zg_lc_checksum(&L, n);
    crc32c_kernel<<<grid_of(d), d.threads, 0, s>>>(items, n, status, ck_pows(ZG_CRC32C_POLY));
    return cudaGetLastError();
}

extern "C" cudaError_t zg_k_check_launch(const zg_k_check *items, size_t n, int *status, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    const zg_gpu_limits L = limits();
    const zg_lc_dims d = zg_lc_checksum(&L, n);
    check_kernel<<<grid_of(d), d.threads, 0, s>>>(items, n, status, ck_pows(ZG_CRC32_POLY));
    return cudaGetLastError();
}


extern "C" cudaError_t zg_k_scatter_launch(const zg_k_scatter_params *p, const zg_k_scatter *items,
                                           const uint64_t *counts, size_t n, uint64_t max_rows, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (p->ndim < 0 || p->ndim > ZG_K_MAX_DIMS) return cudaErrorInvalidValue;
    ScatterArgs a;
    a.p = *p;
    // Up to 16 rows a warp, while the grid still holds twice the warps the GPU runs at once (zg_lc_scatter).
    const zg_gpu_limits L = limits();
    const zg_lc_dims d = zg_lc_scatter(&L, n, max_rows);
    scatter_kernel<<<grid_of(d), d.threads, 0, s>>>(a, items, counts, n);
    return cudaGetLastError();
}
