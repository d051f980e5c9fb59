/* Blosc on the GPU path: a framing, not a decoder. blosc_parse.h splits a chunk into streams; here each compressed
 * stream gets its kind (the GPU decoder that takes it is the read's pick for that kind, gpu_decoder.h) and is
 * unwrapped to what that decoder reads (blosc_parse.h); raw streams become copies and a shuffled chunk one unshuffle
 * (post_kernels.h). CUDA-only. */
#ifndef ZG_BLOSC_GPU_H
#define ZG_BLOSC_GPU_H
#include <stdint.h>
#include "gpucodec/blosc/blosc_parse.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/post/post_kernels.h"

/** The kind of blosc's compressed streams (its header's compformat); ZG_GPU_STREAM_NONE: no GPU decoder. */
zg_gpu_stream zg_blosc_gpu_stream(const zg_blosc_header *h);
/* (a stream as its decoder reads it, with its checksum: zg_blosc_stream_payload, blosc_parse.h) */
/** Whether the chunk's blocks are unshuffled after their decode (else decoded bytes are final). */
int zg_blosc_gpu_shuffled(const zg_blosc_header *h);
/** The unshuffle of a chunk whose shuffled blocks decoded at `in`, into `out` (mapped: into the output's rows). */
zg_k_unshuffle zg_blosc_gpu_unshuffle(const zg_blosc_header *h, uint8_t *in, uint8_t *out, int mapped);

#endif
