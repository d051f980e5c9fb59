/* Batched compression on the GPU of chunks that are in device memory, into the stored formats zgpu reads and
 * writes (zstd, gzip, zlib, numcodecs' lz4: encode_frames.h): zgpu's encoders or nvCOMP's (loaded at run time,
 * nvcomp_lib.h) compress, zgpu's kernels compute gzip's CRC32 / zlib's Adler-32 and write headers and trailers, so
 * that each stored chunk ends up contiguous in its device slot, ready for one copy to the host. CUDA-only; C
 * interface.
 *
 * Use: zg_gpu_encode_layout_for (sizes, alignments, scratch), then zg_gpu_encode_batch on a stream; after the
 * stream, copy the sizes and statuses back and check them with zg_gpu_encode_check. Chunk i's stored bytes are
 * then out[i] + layout.frame_offset, out_bytes[i] of them. Where a call answers ZGPU_ERR_UNSUPPORTED (nvCOMP
 * missing, a chunk over nvCOMP's limit) or a chunk's status is not 0, the caller encodes on the host instead.
 *
 * gzip and zlib chunks are compressed in pieces of 64 KiB, in parallel, and the pieces joined into the chunk's one
 * DEFLATE stream (deflate_pieces.h): nvCOMP's Deflate gives a chunk one thread block, and took ~1 s a GiB of 8 MiB
 * chunks (H200; 3.3 GB/s in pieces). They have no chunk size limit; nvCOMP's LZ4 has 16 MiB.
 *
 * zstd goes to zgpu's own encoder (zstd_encode.h; zstd_encode_gpu.h: no nvCOMP needed, no chunk limit but
 * ZG_ZE_MAX_CHUNK) unless opts asks for nvCOMP's; LZ4 batches of chunks up to 128 KiB (blosc's streams) to zgpu's
 * LZ4 encoder (lz4_encode_gpu.h), larger ones to nvCOMP's; gzip and zlib pieces are each the shorter of nvCOMP's
 * and zgpu's fixed-Huffman block (deflate_fixed.h).
 *
 * Levels: gzip and zlib take zlib's 0..9 (below 0: 6), mapped onto nvCOMP's Deflate algorithms by
 * zg_ge_deflate_algorithm (encode_frames.h) and written into the header as a zlib encoder would (zlib's FLEVEL,
 * gzip's XFL). zgpu's zstd encoder has one strategy, and nvCOMP 6 no level for zstd or LZ4: theirs are ignored.
 *
 * Thread safety: the functions keep no state of their own (nvCOMP is loaded once, thread-safely); concurrent
 * batches need their own scratch. */
#ifndef ZG_GPU_ENCODE_H
#define ZG_GPU_ENCODE_H
#include <stddef.h>
#include <cuda_runtime.h>

#include "gpuencode/encode_frames.h"
#include "gpuencode/zstd_encode.h"
#include "zgpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How a batch of one format and level lies in memory (zg_gpu_encode_layout_for). */
typedef struct zg_gpu_encode_layout {
    size_t max_chunk_bytes; /* the largest chunk the format's GPU compressor takes */
    size_t in_align;        /* each input chunk's device address must be a multiple of this */
    size_t out_align;       /* and each output slot's */
    size_t frame_offset;    /* a chunk's stored bytes start this many bytes into its slot */
    size_t slot_bytes;      /* each output slot holds this many bytes (for the batch's largest chunk) */
    size_t scratch_bytes;   /* the device scratch a batch needs (256-byte aligned) */
    size_t temp_bytes;      /* of which nvCOMP's temp */
} zg_gpu_encode_layout;

/** A batch's options (NULL: the defaults). */
typedef struct zg_gpu_encode_opts {
    int zstd_nvcomp;   /* zstd: 1 compresses with nvCOMP; 0 (default) with zgpu's own encoder (zstd_encode.h) */
    zg_ze_hints hints; /* zstd with zgpu's encoder: the array's strides in bytes as match offsets; zeros: none */
} zg_gpu_encode_opts;

/** "zstd", "gzip", "zlib", "lz4". */
const char *zg_gpu_encode_format_name(zg_ge_format f);

/** The layout of a batch of n chunks of `format` at `level` with options opts (NULL: the defaults), the largest
 *  max_in_bytes, total_in_bytes together (a batch with fewer, smaller chunks fits it; give a batch the opts of its
 *  layout). ZGPU_ERR_UNSUPPORTED if nvCOMP (or its compressor) is needed and missing, the
 *  message saying where it was looked for, or if max_in_bytes is over the compressor's limit;
 *  ZGPU_ERR_INVALID_ARGUMENT for an unknown format or a gzip/zlib level above 9. */
zgpu_status zg_gpu_encode_layout_for(zg_ge_format format, int level, const zg_gpu_encode_opts *opts, size_t n,
                                     size_t max_in_bytes,
                                     size_t total_in_bytes, zg_gpu_encode_layout *out);

/** Compresses n chunks on `stream`, asynchronously: chunk i, in_bytes[i] bytes at device address in[i], goes to
 *  the slot at device address out[i] (slot_bytes each, at least the layout's). `in`, `in_bytes` and `out` are host
 *  arrays (checked here before anything is launched; they may be freed on return); d_out_bytes and d_status are
 *  device arrays of n entries that get each chunk's stored size and status (0, or nvCOMP's status:
 *  zg_gpu_encode_check). d_scratch: scratch_bytes of device memory, at least the layout's, 256-byte aligned,
 *  not used by anything else until the stream has run the batch. Errors (nothing launched):
 *  ZGPU_ERR_UNSUPPORTED naming a chunk over the compressor's limit, or nvCOMP missing;
 *  ZGPU_ERR_INVALID_ARGUMENT naming a misaligned or NULL pointer or a slot or scratch too small; ZGPU_ERR_NO_MEMORY;
 *  ZGPU_ERR_CUDA where a launch or copy fails (work may then be queued). */
zgpu_status zg_gpu_encode_batch(zg_ge_format format, int level, const zg_gpu_encode_opts *opts,
                                const void *const *in, const size_t *in_bytes, size_t n, void *const *out, size_t slot_bytes, size_t *d_out_bytes, int *d_status,
                                void *d_scratch, size_t scratch_bytes, cudaStream_t stream);

/** After the batch: ZGPU_OK if every status (a host copy of d_status) is 0; else ZGPU_ERR_CUDA naming the first
 *  chunk that failed, nvCOMP's status and how many failed. */
zgpu_status zg_gpu_encode_check(zg_ge_format format, const int *status, size_t n);

#ifdef __cplusplus
}
#endif
#endif
