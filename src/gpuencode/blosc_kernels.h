/* The GPU Blosc1 encoder's kernels (blosc_kernels.cu), launched by blosc_encode_gpu.c: the shuffle before the
 * streams are compressed, the framing that sizes each chunk from the compressed streams, and the copy that fills
 * it. Every chunk of a batch has the same plan (blosc_frame.h), passed by value in zg_bk_geom; every pointer is
 * device memory. C interface. */
#ifndef ZG_BLOSC_KERNELS_H
#define ZG_BLOSC_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of a chunk's pieces one thread block copies (zg_bk_copy_launch). */
#define ZG_BK_TILE 16384u

/* The batch's plan and where its intermediate results lie. Streams are numbered as zg_blosc_frame_span numbers
 * them; stream j of chunk c is stream g = c * nstreams + j of the batch. */
typedef struct zg_bk_geom {
    uint32_t nbytes, blocksize, nblocks, leftover, splits, nstreams, typesize; /* the plan's */
    int32_t shuffle;                                                          /* the plan's: 0, 1, 2 */
    uint8_t version, versionlz, flags, plain_copy;                            /* the plan's */
    uint32_t stream_len;   /* blocksize / splits: a whole block's stream */
    int32_t direct;        /* 1: no block is shuffled, so raw streams are read from the input chunk itself */
    uint64_t stream_pitch; /* shuffled buffer: stream j of a chunk at j * stream_pitch (a multiple of the
                            * compressor's input alignment) */
    uint64_t chunk_pitch;  /* and chunk c at c * chunk_pitch */
    uint64_t slot_pitch;   /* compressed stream g at slots + g * slot_pitch + slot_offset */
    uint64_t slot_offset;
    uint32_t skip;         /* bytes the compressor's format puts before the Blosc stream (numcodecs' lz4 size) */
    uint32_t npieces;      /* the copy's pieces a chunk: its streams, or ZG_BK_TILE parts of a plain-copy plan */
    uint32_t tiles;        /* tiles of ZG_BK_TILE bytes in the largest piece */
} zg_bk_geom;

/* Where stream g ends up (written by the frame kernel, read by the copy). */
typedef struct zg_bk_stream {
    uint32_t pos;    /* offset of its int32 size in the chunk */
    uint32_t stored; /* bytes stored after the size; bit 31: stored raw (from the shuffled bytes) */
} zg_bk_stream;

/* Shuffles chunk c (d_in[c], nbytes) block by block into d_shuf + c * chunk_pitch, each stream at its own
 * stream_pitch, exactly as zg_blosc_frame_shuffle lays the chunk out. */
cudaError_t zg_bk_shuffle_launch(const zg_bk_geom *g, const uint8_t *const *d_in, size_t n, uint8_t *d_shuf,
                                 cudaStream_t s);

/* A thread block a chunk: from each stream's compressed size (d_comp_bytes, the compressor's format's size with
 * `skip` bytes before the stream; d_comp_status nonzero: it failed) decides raw or compressed as
 * zg_blosc_frame_build does, places the streams (d_streams), decides a plain copy (d_plain[c]), writes the 16-byte
 * header of d_out[c], d_out_bytes[c] and d_status[c] (0). */
cudaError_t zg_bk_frame_launch(const zg_bk_geom *g, uint8_t *const *d_out, size_t n, const size_t *d_comp_bytes,
                               const int *d_comp_status, zg_bk_stream *d_streams, int *d_plain, size_t *d_out_bytes,
                               int *d_status, cudaStream_t s);

/* Fills each chunk after its header: block starts, each stream's size and bytes (compressed from the slots, raw
 * from the shuffled buffer or, direct, the input), or the input as it is for a plain copy. */
cudaError_t zg_bk_copy_launch(const zg_bk_geom *g, const uint8_t *const *d_in, uint8_t *const *d_out, size_t n,
                              const uint8_t *d_shuf, const uint8_t *d_slots, const zg_bk_stream *d_streams,
                              const int *d_plain, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
