/* zgpu's DEFLATE decoder on the GPU (kernels in inflate_kernels.cu, rules in inflate_rules.h): a batch of raw
 * DEFLATE streams, a thread block per stream or, in small batches, per part of a stream. Every array is device
 * memory. */
#ifndef ZG_INFLATE_GPU_H
#define ZG_INFLATE_GPU_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Thread blocks a batch of n streams runs on (each holds ZI_SCRATCH bytes of scratch: 544 KiB). */
size_t zg_inflate_grid(size_t n);
/** Device scratch bytes for a batch of n streams decoding to at most max_out bytes each. A batch of fewer
 *  streams than the GPU holds decode blocks splits each stream into parts, whose 16-bit buffers this includes. */
size_t zg_inflate_scratch_bytes(size_t n, size_t max_out);
/** An upper bound of the scratch one stream of out_bytes adds to a batch's, whatever the batch (for budgets). */
size_t zg_inflate_stream_scratch_bound(size_t out_bytes);
/** Decodes stream i (in[i], in_bytes[i] bytes) into out[i], which it must fill exactly (out_bytes[i], at most
 *  max_out); status[i] gets 0 or a ZI_E_* code (zi_error_text names it), actual[i] the bytes written. Streams
 *  and outputs must be under ZI_MAX_BYTES (larger ones get ZI_E_TOO_BIG). Launched on stream s. ZGPU_INFLATE_PARTS=n
 *  sets the parts of every stream (1: none). */
cudaError_t zg_inflate_launch(const void *const *in, const size_t *in_bytes, void *const *out, const size_t *out_bytes,
                              size_t *actual, int *status, size_t n, size_t max_out, void *scratch, cudaStream_t s);
/** The same, adding to profile[0, ZI_PHASES) the clock cycles thread 0 of each block spent in each phase, to
 *  profile[ZI_PHASES] the windows and to profile[ZI_PHASES + 1] the pointer-jumping rounds (device memory, or NULL). */
cudaError_t zg_inflate_launch_profiled(const void *const *in, const size_t *in_bytes, void *const *out,
                                       const size_t *out_bytes, size_t *actual, int *status, size_t n, size_t max_out,
                                       void *scratch, unsigned long long *profile, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
