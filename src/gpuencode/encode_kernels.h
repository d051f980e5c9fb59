/* The GPU encoder's own kernels (encode_kernels.cu): checksums of the uncompressed chunks, and the framing that
 * turns nvCOMP's raw output into stored chunks (encode_frames.h). Batched; every array is device memory. C
 * interface. */
#ifndef ZG_ENCODE_KERNELS_H
#define ZG_ENCODE_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One segment of an uncompressed chunk (encode_frames.h: ZG_GE_SEG_BYTES, the last one of a chunk shorter). */
typedef struct zg_ge_seg {
    const uint8_t *p;
    uint32_t len;
    uint32_t pad_;
} zg_ge_seg;

/* One chunk of a batch, as the framing kernel reads it. */
typedef struct zg_ge_chunk {
    uint8_t *slot;      /* its output slot; the raw stream is at slot + raw_offset */
    uint64_t in_bytes;  /* uncompressed size */
    uint64_t raw_cap;   /* room for the raw stream (nvCOMP's bound) */
    uint32_t first_seg; /* its segments' checksums: check[first_seg .. first_seg + n_segs) */
    uint32_t n_segs;
    int64_t nvc;        /* its index in nvCOMP's arrays (DEFLATE formats: in the joined streams' sizes and
                         * statuses); -1: empty, framed around encode_frames.h's empty stream */
    uint32_t first_piece; /* DEFLATE formats: its pieces (deflate_pieces.h), pieces[first_piece, + n_pieces) */
    uint32_t n_pieces;
} zg_ge_chunk;

/* One piece of a DEFLATE chunk, compressed alone by nvCOMP (its stream at `out`, nvCOMP's index the piece's), then
 * joined into its chunk's stream (deflate_pieces.h). */
typedef struct zg_ge_piece {
    const uint8_t *out;
    uint32_t chunk; /* its chunk's index in the batch */
    uint32_t last;  /* 1: its chunk's last piece */
} zg_ge_piece;

/* CRC32 (kind ZG_CHECK_CRC32) or Adler-32 (ZG_CHECK_ADLER32) of each segment into d_check[i]; a block a segment. */
cudaError_t zg_ge_checksum_launch(int kind, const zg_ge_seg *d_segs, size_t n, uint32_t *d_check, cudaStream_t s);

/* Frames every chunk of a batch of `format` (zg_ge_format): header before and trailer after its raw stream, whose
 * size and status nvCOMP left in d_nvc_bytes / d_nvc_status (an empty chunk's stream is written here). Chunk i's
 * stored bytes then start at slot + raw_offset - header: d_out_bytes[i] gets their number, d_status[i] 0, or
 * nvCOMP's status (d_out_bytes[i] = 0) where it failed; 15 (output buffer too small) if a raw size exceeds
 * raw_cap. d_check: the segments' checksums (NULL for formats without one). */
cudaError_t zg_ge_frame_launch(int format, int level, size_t raw_offset, const zg_ge_chunk *d_chunks, size_t n,
                               const size_t *d_nvc_bytes, const int *d_nvc_status, const uint32_t *d_check,
                               size_t *d_out_bytes, int *d_status, cudaStream_t s);

/* The DEFLATE formats' join (deflate_pieces.h): walks each of the n_pieces streams nvCOMP wrote (its size and
 * status in d_nvc_bytes / d_nvc_status), places them in their chunk's stream, and copies them there joined: chunk
 * i's stream at its slot + raw_offset, its size and status in d_raw_bytes / d_raw_status at index chunks[i].nvc
 * (where the framing kernel reads them); a piece nvCOMP failed keeps nvCOMP's status, one that does not walk gets
 * 100 + the walk's answer, a joined stream past raw_cap 15. d_walk: 3 words of scratch a piece. */
cudaError_t zg_ge_join_launch(const zg_ge_chunk *d_chunks, size_t n, const zg_ge_piece *d_pieces, size_t n_pieces,
                              const size_t *d_nvc_bytes, const int *d_nvc_status, uint64_t *d_walk,
                              size_t raw_offset, size_t *d_raw_bytes, int *d_raw_status, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
