// zgpu's LZ4 decoder for blosc's streams, and the check kernel run before nvCOMP's LZ4 decoder (see
// lz4_kernels.h). The rules of the format are lz4_rules.h's, shared with the host checks.
#include "gpucodec/lz4/lz4_kernels.h"

#include "gpucodec/common/copier.cuh"
#include "gpucodec/common/gpu_limits.h"
#include "gpucodec/lz4/lz4_rules.h"

#include <stdint.h>

constexpr unsigned kLz4Warps = ZG_LC_LZ4_CHECK_WARPS;
__global__ void __launch_bounds__(32 * kLz4Warps) lz4_check_kernel(const void **in, size_t *in_bytes,
                                                                   const size_t *out_bytes, size_t n, int *status,
                                                                   const void *safe, size_t safe_bytes) {
    const unsigned w = threadIdx.x / 32;
    for (size_t i = blockIdx.x * (size_t)kLz4Warps + w; i < n; i += (size_t)gridDim.x * kLz4Warps) {
        size_t ip, op;
        const int e = zg_lz4_walk((const uint8_t *)in[i], in_bytes[i], out_bytes[i], NULL, &ip, &op);
        __syncwarp();
        if (e && (threadIdx.x & 31) == 0) {
            status[i] = e;
            in[i] = safe;
            in_bytes[i] = safe_bytes;
        }
    }
}

extern "C" cudaError_t zg_k_lz4_check_launch(const void **in, size_t *in_bytes, const size_t *out_bytes, size_t n,
                                             int *status, const void *safe, size_t safe_bytes, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    zg_gpu_limits L;
    (void)zg_gpu_limits_current(&L);
    const zg_lc_dims d = zg_lc_lz4_check(&L, n);
    lz4_check_kernel<<<d.grid_x, d.threads, 0, s>>>(in, in_bytes, out_bytes, n, status, safe, safe_bytes);
    return cudaGetLastError();
}

/* zgpu's LZ4 decoder for blosc's streams. What bounds a wave is its longest stream's chain of dependent steps
 * (a wave of the field volume: 1408 streams of 256 KiB, up to ~10K sequences each; under 1.4 warps a scheduler,
 * each issuing every 5.5 cycles), so two warps share a stream, passing batches of sequences through shared
 * memory (two batches in flight, counters for hand-over):
 *   parser  steps through up to kLz4Batch sequences (zg_lz4_next: every check of the format; the lanes read
 *           the same bytes through the read-only cache, the next lines prefetched) until the batch decodes to
 *           kLz4Span bytes, and hands it over (or the stream's end: its status and size);
 *   copier  writes all of the batch's literal bytes at once, lane l every 32nd (in cache: the parse read the
 *           lines around them), then its matches in order, each warp-wide (a match may copy the one before),
 *           from a window of the output's last kLz4Win bytes in shared memory where the source is still there,
 *           else from global memory; a period under 32 bytes (runs) is held in registers and handed out by
 *           shuffles.
 * One walk checks and decodes, replacing the check kernel plus nvCOMP's batch (H100, ncu, a wave of 21 field
 * chunks: 5 + 6.5 ms), which walked every stream twice. Two streams a block. */
constexpr unsigned kLz4Pairs = ZG_LC_LZ4_PAIRS, kLz4Batch = 32, kLz4Span = 1024, kLz4Win = 4096;

/* One batch handed from parser to copier. */
struct Lz4Batch {
    zg_lz4_seq seq[kLz4Batch];
    uint32_t pre[kLz4Batch + 1]; /* the batch's literal bytes before sequence j */
    uint32_t nb, end, bend;      /* sequences; 1: the stream's last batch; the output's size after it */
    int status;                  /* (end) the stream's ZG_LZ4_E_* */
};
struct Lz4Pair {
    Lz4Batch batch[2];
    uint8_t win[kLz4Win];
    unsigned produced, consumed; /* batches handed over / done, counted over all the pair's streams */
};

__device__ static void lz4_parse_stream(Lz4Pair *P, unsigned *batch_no, const uint8_t *p, size_t in_bytes,
                                        size_t out_bytes, unsigned lane) {
    zg_lz4_size n, expected, ip = 0, op = 0;
    int e = zg_lz4_begin(in_bytes, out_bytes, &n, &expected);
    bool end = e != ZG_LZ4_OK;
    do {
        const unsigned b = (*batch_no)++;
        Lz4Batch *B = &P->batch[b & 1];
        zg_wait_until(&P->consumed, b - 1); /* batch b - 2, which used this buffer, is done */
        __syncwarp();
        const zg_lz4_size ahead = ip + 128 * (lane + 1);
        if (!end && lane < 8 && ahead < n) asm volatile("prefetch.global.L1 [%0];" ::"l"(p + ahead));
        const zg_lz4_size op0 = op;
        uint32_t nb = 0, lits = 0;
        while (!end && nb < kLz4Batch && op - op0 < kLz4Span) {
            zg_lz4_seq q;
            e = zg_lz4_next(p, n, expected, &ip, &op, &q);
            if (e) {
                end = true;
                nb = 0; /* (nothing of a bad stream is copied) */
                lits = 0;
                break;
            }
            if (lane == 0) {
                B->seq[nb] = q;
                B->pre[nb] = lits;
            }
            lits += q.lit;
            nb++;
            end = !q.ml; /* the last sequence */
        }
        if (end && !e && op != expected) e = ZG_LZ4_E_SIZE;
        if (lane == 0) {
            B->pre[nb] = lits;
            B->nb = nb;
            B->end = end;
            B->bend = (uint32_t)op;
            B->status = e;
            zg_publish(&P->produced, b + 1);
        }
        __syncwarp();
    } while (!end);
}

/* Returns when the stream's last batch is copied; its status and size in *status, *actual. */
__device__ static void lz4_copy_stream(Lz4Pair *P, unsigned *batch_no, const uint8_t *p, uint8_t *o, int *status,
                                       size_t *actual, unsigned lane) {
    uint8_t *win = P->win;
    for (;;) {
        const unsigned b = (*batch_no)++;
        const Lz4Batch *B = &P->batch[b & 1];
        zg_wait_until(&P->produced, b + 1);
        __syncwarp();
        const uint32_t nb = B->nb, lits = B->pre[nb], bend = B->bend, end = B->end;
        /* literals: byte t of the batch's is byte t - pre[j] of sequence j's */
        uint32_t j = 0;
        for (uint32_t t0 = 0; t0 < lits; t0 += 32) {
            const uint32_t t = t0 + lane;
            if (t < lits) {
                while (t >= B->pre[j + 1]) j++;
                const uint32_t d = t - B->pre[j], x = B->seq[j].op + d;
                const uint8_t v = __ldg(p + B->seq[j].lit_ip + d);
                o[x] = v;
                win[x % kLz4Win] = v;
            }
            __syncwarp(); /* a window slot written twice (x and x + kLz4Win): the later byte lands last */
        }
        /* matches, in order (zg_put_match: which bytes the window still holds) */
        for (uint32_t k = 0; k < nb; k++) {
            const zg_lz4_seq q = B->seq[k];
            if (!q.ml) continue;
            __syncwarp(); /* every byte written before it is visible */
            zg_put_match<kLz4Win>(o, win, q.op + q.lit, q.offset, q.ml, bend, 0, lane);
        }
        __syncwarp();
        if (end && lane == 0) {
            *status = B->status;
            *actual = B->status ? 0 : bend;
        }
        __syncwarp(); /* (every lane has read the batch) */
        if (lane == 0) zg_publish(&P->consumed, b + 1);
        __syncwarp();
        if (end) return;
    }
}

__global__ void __launch_bounds__(64 * kLz4Pairs) lz4_decode_kernel(const void *const *in, const size_t *in_bytes,
                                                                    void *const *out, const size_t *out_bytes,
                                                                    size_t *actual, int *status, size_t n) {
    __shared__ Lz4Pair pairs[kLz4Pairs];
#ifdef __CUDA_ARCH__ /* (zg_lz4_size is 32 bits on the device only) */
    static_assert(sizeof(pairs) == ZG_LC_LZ4_DECODE_SMEM, "launch_config.h: the LZ4 decoder's shared memory");
#endif
    const unsigned w = threadIdx.x / 32, lane = threadIdx.x & 31, k = w / 2;
    Lz4Pair *P = &pairs[k];
    if (lane == 0 && !(w & 1)) P->produced = P->consumed = 0;
    __syncthreads();
    unsigned batch_no = 0; /* both warps count the same batches */
    for (size_t i = blockIdx.x * (size_t)kLz4Pairs + k; i < n; i += (size_t)gridDim.x * kLz4Pairs) {
        const uint8_t *p = (const uint8_t *)in[i];
        if (w & 1) lz4_copy_stream(P, &batch_no, p, (uint8_t *)out[i], &status[i], &actual[i], lane);
        else lz4_parse_stream(P, &batch_no, p, in_bytes[i], out_bytes[i], lane);
    }
}

extern "C" cudaError_t zg_k_lz4_decode_launch(const void *const *in, const size_t *in_bytes, void *const *out,
                                              const size_t *out_bytes, size_t *actual, int *status, size_t n,
                                              cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    zg_gpu_limits L;
    (void)zg_gpu_limits_current(&L);
    const zg_lc_dims d = zg_lc_lz4_decode(&L, n);
    lz4_decode_kernel<<<d.grid_x, d.threads, 0, s>>>(in, in_bytes, out, out_bytes, actual, status, n);
    return cudaGetLastError();
}
