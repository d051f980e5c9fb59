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

/** Whether the current device runs this decoder: cudaSuccess; cudaErrorNotSupported where its thread blocks need
 *  more shared memory than the device lets a block have (Turing, sm_75: a block needs 67 KB, a Turing block gets
 *  64 KiB), with the reason in why (then decode DEFLATE on the host: every launch below returns that error without
 *  launching anything); or the CUDA error met asking the device. why: NULL, or why_len bytes. */
cudaError_t zg_inflate_device_check(char *why, size_t why_len);
/** Parts each stream of a batch of n streams (outputs of at most max_out bytes) is split into: enough that the
 *  decode fills the GPU, as many as `room` bytes hold the buffers of (1: none). forced > 0 (zgpu_tuning's
 *  inflate_parts) asks for that many. */
size_t zg_inflate_parts(size_t n, size_t max_out, size_t room, int serial, int forced);
/** Whether a stream of in_bytes decoding to out_bytes decodes in serial mode (inflate_rules.h): a batch of only
 *  such streams can be launched with `serial` set, which fits twice as many of its parts on an SM. */
int zg_inflate_serial_wanted(uint64_t in_bytes, uint64_t out_bytes);
/** Device scratch bytes for such a batch in that many parts. */
size_t zg_inflate_scratch_bytes(size_t n, size_t max_out, size_t parts);
/** Decodes stream i (in[i], in_bytes[i] bytes) into out[i], which it must fill exactly (out_bytes[i], at most
 *  max_out); status[i] gets 0 or a ZI_E_* code (zi_error_text names it), actual[i] the bytes written. Streams
 *  and outputs must be under ZI_MAX_BYTES (larger ones get ZI_E_TOO_BIG). serial: the caller found that every
 *  stream zg_inflate_serial_wanted; split streams then decode their parts in serial-mode blocks (which decode any
 *  stream in serial mode), and parts comes from zg_inflate_parts with the same flag. Launched on stream s;
 *  scratch as zg_inflate_scratch_bytes(n, max_out, parts). timed (zgpu_tuning's profile): each kernel's time on
 *  stderr, waiting for each. */
cudaError_t zg_inflate_launch(const void *const *in, const size_t *in_bytes, void *const *out, const size_t *out_bytes,
                              size_t *actual, int *status, size_t n, size_t max_out, size_t parts, int serial,
                              void *scratch, int timed, cudaStream_t s);
/** The same, adding to profile[0, ZI_PHASES) the clock cycles thread 0 of each block spent in each phase, to
 *  profile[ZI_PHASES] the windows and to profile[ZI_PHASES + 1] the pointer-jumping rounds (device memory, or NULL). */
cudaError_t zg_inflate_launch_profiled(const void *const *in, const size_t *in_bytes, void *const *out,
                                       const size_t *out_bytes, size_t *actual, int *status, size_t n, size_t max_out,
                                       size_t parts, int serial, void *scratch, unsigned long long *profile,
                                       int timed, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
