/* zgpu's TIFF LZW decoder (lzw_kernels.cu): batched over a wave; every array is device memory. C interface. */
#ifndef ZG_LZW_KERNELS_H
#define ZG_LZW_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stream i (d_in[i], d_in_bytes[i] bytes) decoded into d_out[i], which must receive exactly d_out_bytes[i] bytes,
 * a warp a stream, checked as it goes by lzw_rules.h's rules: d_status[i] = 0 and d_actual[i] = the bytes
 * written, or a ZG_LZW_E_* code and 0 (nothing is written outside d_out[i][0, d_out_bytes[i])). */
cudaError_t zg_k_lzw_decode_launch(const void *const *d_in, const size_t *d_in_bytes, void *const *d_out,
                                   const size_t *d_out_bytes, size_t *d_actual, int *d_status, size_t n,
                                   cudaStream_t s);

/* The same, each stream cut at its ClearCodes into segments decoded side by side (lzw_rules.h, "the segmented
 * decode"): for waves of fewer streams than keep the GPU busy. slots: segment descriptors a stream
 * (zg_lzw_seg_slots of the largest stream); scratch: zg_lzw_seg_scratch_bytes(n, slots) device bytes. */
cudaError_t zg_k_lzw_decode_seg_launch(const void *const *d_in, const size_t *d_in_bytes, void *const *d_out,
                                       const size_t *d_out_bytes, size_t *d_actual, int *d_status, size_t n,
                                       size_t slots, void *d_scratch, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
