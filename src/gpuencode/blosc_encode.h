/* Batched Blosc1 compression on the GPU of chunks that are in device memory (issue 24): every chunk of a batch the
 * same size and codec configuration, each written as a complete c-blosc 1.x chunk (blosc_frame.h: its plan, shuffle
 * and layout, byte for byte what zg_blosc_frame_build writes around the same streams) into its device slot, ready
 * for one copy to the host. Same contract as gpu_encode.h's batch encoder, so that a caller's code path is the
 * same: zg_gpu_blosc_encode_layout_for (sizes, alignments, scratch), then zg_gpu_blosc_encode_batch on a stream;
 * after the stream, copy the sizes and statuses back (zg_gpu_blosc_encode_check). Chunk i is then out[i]
 * (frame_offset 0), out_bytes[i] bytes. CUDA-only; C interface.
 *
 * On the stream, with no host synchronisation: a shuffle kernel (byte or bit shuffle per block, as c-blosc's)
 * into the scratch; one nvCOMP batch over every stream of every chunk (through gpu_encode.h's encoder, which gives
 * each stream its format: a zstd frame as ZSTD_compress writes one, zlib's format as compress2 writes it, a raw
 * LZ4 block after numcodecs' 4-byte size, which is skipped); a framing kernel a chunk that stores raw each stream
 * that failed or did not shrink and makes the chunk a plain copy (flag 0x02) where it would pass nbytes + 16; a
 * copy kernel that fills the chunks.
 *
 * Compressors: lz4 and lz4hc (nvCOMP's LZ4, whose output is a valid LZ4 block, so lz4hc's chunks are lz4hc's
 * format but lz4's ratio), zstd (nvCOMP 6 has no levels: clevel only shapes the blocks), zlib (clevel mapped onto
 * nvCOMP's Deflate algorithms as gpu_encode.h maps zlib's levels). blosclz and snappy: ZGPU_ERR_UNSUPPORTED
 * (nvCOMP has no BloscLZ, and zgpu loads no Snappy compressor), as is a missing nvCOMP or a stream over nvCOMP's
 * limit (16 MiB for zstd and LZ4: a configured blocksize can pass it) — the caller then encodes on the host. A
 * plan that compresses nothing (clevel 0, chunks under 128 bytes) is a plain copy, which needs no compressor:
 * every compressor is then accepted, and nvCOMP is not asked for.
 *
 * Thread safety: no state of its own (nvCOMP is loaded once, thread-safely); concurrent batches need their own
 * scratch. */
#ifndef ZG_BLOSC_ENCODE_H
#define ZG_BLOSC_ENCODE_H
#include <stddef.h>
#include <cuda_runtime.h>

#include "gpuencode/blosc_frame.h"
#include "gpuencode/gpu_encode.h"
#include "zgpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The layout of a batch of n chunks, each params->nbytes bytes, compressed as params says: out->in_align (each
 *  input chunk's device address a multiple of it: nvCOMP's input alignment where unshuffled streams are
 *  compressed in place, else 1), out_align 1, frame_offset 0, slot_bytes nbytes + 16 (c-blosc's bound),
 *  max_chunk_bytes (c-blosc's limit, 2^31 - 17), scratch_bytes (256-byte aligned) and temp_bytes (nvCOMP's part).
 *  Errors: ZGPU_ERR_INVALID_ARGUMENT (NULL, or a parameter zg_blosc_frame_plan_for refuses, named);
 *  ZGPU_ERR_UNSUPPORTED saying why (blosclz, snappy, nvCOMP missing, a stream over nvCOMP's limit, nbytes over
 *  c-blosc's limit). */
zgpu_status zg_gpu_blosc_encode_layout_for(const zg_blosc_frame_params *params, size_t n, zg_gpu_encode_layout *out);

/** Compresses n chunks on `stream`, asynchronously: chunk i (params->nbytes bytes at device address in[i]) becomes
 *  a complete Blosc1 chunk at device address out[i] (slots of slot_bytes, at least the layout's; frame_offset 0),
 *  its size in d_out_bytes[i], d_status[i] 0 (nonzero: the chunk failed; none does today: a stream nvCOMP fails is
 *  stored raw). `in` and `out` are host arrays of n device addresses (checked before anything is launched; they may
 *  be freed on return), d_out_bytes and d_status device arrays of n entries; d_scratch: scratch_bytes of device
 *  memory (at least the layout's for n chunks), 256-byte aligned, used by nothing else until the stream has run
 *  the batch. Errors (nothing launched unless ZGPU_ERR_CUDA): as zg_gpu_blosc_encode_layout_for's;
 *  ZGPU_ERR_INVALID_ARGUMENT naming a NULL or misaligned pointer, a slot or scratch too small;
 *  ZGPU_ERR_NO_MEMORY; ZGPU_ERR_CUDA where a launch or copy fails (work may then be queued). */
zgpu_status zg_gpu_blosc_encode_batch(const zg_blosc_frame_params *params, const void *const *in, size_t n,
                                      void *const *out, size_t slot_bytes, size_t *d_out_bytes, int *d_status,
                                      void *d_scratch, size_t scratch_bytes, cudaStream_t stream);

/** zg_gpu_blosc_encode_batch with offsets worth trying in the streams (zstd_encode.h's hints: the array's element,
 *  row and plane strides as the streams lay them out; NULL: none), for zgpu's zstd and LZ4 encoders. */
zgpu_status zg_gpu_blosc_encode_batch_hinted(const zg_blosc_frame_params *params, const uint32_t *hints,
                                             const void *const *in, size_t n, void *const *out, size_t slot_bytes,
                                             size_t *d_out_bytes, int *d_status, void *d_scratch,
                                             size_t scratch_bytes, cudaStream_t stream);

/** After the batch: ZGPU_OK if every status (a host copy of d_status) is 0; else ZGPU_ERR_CUDA naming the first
 *  chunk that failed and how many did. */
zgpu_status zg_gpu_blosc_encode_check(const int *status, size_t n);

/** Where a batch leaves its intermediate results in the scratch, for tests and tracing: the shuffled chunks (chunk
 *  c's stream j at shuffled + c * chunk_pitch + j * stream_pitch; none where `direct`: no block is shuffled and
 *  the streams are compressed where they lie in the input) and stream g = c * nstreams + j's compression (its
 *  stored size, compressor format included, in the size_t array at comp_bytes, nvCOMP's status in the int array at
 *  comp_status, its bytes at slots + g * slot_pitch + slot_offset, `skip` bytes of which come before the Blosc
 *  stream). Offsets from the scratch's start; nstreams 0 for a plan that compresses nothing. */
typedef struct zg_gpu_blosc_scratch {
    size_t nstreams;
    int direct;
    size_t shuffled, chunk_pitch, stream_pitch;
    size_t slots, slot_pitch, slot_offset, skip;
    size_t comp_bytes, comp_status;
} zg_gpu_blosc_scratch;

/** The scratch map of a batch of n chunks (errors as zg_gpu_blosc_encode_layout_for's). */
zgpu_status zg_gpu_blosc_encode_scratch_map(const zg_blosc_frame_params *params, size_t n, zg_gpu_blosc_scratch *out);

#ifdef __cplusplus
}
#endif
#endif
