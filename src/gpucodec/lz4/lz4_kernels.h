/* zgpu's LZ4 kernels (lz4_kernels.cu): its decoder for blosc's LZ4 streams, and the check run before nvCOMP's
 * decoder. Batched over a wave; every array is device memory. C interface. */
#ifndef ZG_LZ4_KERNELS_H
#define ZG_LZ4_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LZ4 blocks about to go to nvCOMP (which assumes valid input), as nvCOMP's batch arrays: a warp walks block
 * i (d_in[i], d_in_bytes[i] bytes, to decode to d_out_bytes[i]) by lz4_rules.h; an invalid one gets its
 * ZG_LZ4_E_* code in d_status[i] and is swapped for `safe` (safe_bytes bytes, a valid block of fewer bytes than
 * any expected size), so nvCOMP never reads it. */
cudaError_t zg_k_lz4_check_launch(const void **d_in, size_t *d_in_bytes, const size_t *d_out_bytes, size_t n,
                                  int *d_status, const void *safe, size_t safe_bytes, cudaStream_t s);

/* zgpu's LZ4 decoder: block i (d_in[i], d_in_bytes[i] bytes) decoded into d_out[i], which must receive exactly
 * d_out_bytes[i] bytes, two warps a block, checked as it goes by lz4_rules.h's rules: d_status[i] = 0 and
 * d_actual[i] = the bytes written, or a ZG_LZ4_E_* code (nothing is written out of bounds). */
cudaError_t zg_k_lz4_decode_launch(const void *const *d_in, const size_t *d_in_bytes, void *const *d_out,
                                   const size_t *d_out_bytes, size_t *d_actual, int *d_status, size_t n,
                                   cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
