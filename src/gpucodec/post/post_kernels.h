/* zgpu's own CUDA kernels, each one batched launch over all chunks of a wave. Descriptor arrays live in
 * device memory; "max_*" arguments size the grid. Launch errors are returned as cudaError_t; data errors
 * (bad checksums) go to per-chunk status words. C interface, implemented in kernels.cu. */
#ifndef ZG_KERNELS_H
#define ZG_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include "zgpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZG_K_MAX_DIMS ZGPU_MAX_DIMS /* one limit: the public one */

/* Plain copy of n bytes (blosc raw streams, memcpy'd chunks). */
typedef struct zg_k_copy {
    const uint8_t *src;
    uint8_t *dst;
    uint64_t n;
} zg_k_copy;
cudaError_t zg_k_copy_launch(const zg_k_copy *d_items, size_t n_items, uint64_t max_n, cudaStream_t s);

/* Undo a shuffle filter, src -> dst (no aliasing), chunk by chunk in blocks of `blocksize` bytes (the last
 * block may be shorter). mode 1: byte shuffle (numcodecs.shuffle: blocksize = nbytes; blosc: its blocks);
 * mode 2: bitshuffle with blosc's rules (format `version`). */
typedef struct zg_k_unshuffle {
    const uint8_t *src;
    uint8_t *dst;
    uint64_t nbytes;
    uint32_t typesize, blocksize;
    uint32_t mode, version;
    uint32_t mapped; /* 1: dst is the output address of the chunk's first element, rows placed by the launch's map */
} zg_k_unshuffle;
/* Where a C-order chunk's rows go in the output, for items with `mapped` set (byte shuffle of 2- or 4-byte
 * elements only, every block full, the chunk wholly selected): element e of the chunk, at chunk coordinates k,
 * goes to dst + sum(k[d] * out_strides[d]). The caller guarantees that rows (chunk[ndim - 1] elements, a multiple
 * of 4) are contiguous in the output (out_strides[ndim - 1] = typesize) and that every row starts on a multiple
 * of 4 * typesize bytes. Saves the scatter pass over the decoded chunk (0.8 ms a GB on an H100). */
typedef struct zg_k_row_map {
    int ndim;
    uint32_t chunk[ZG_K_MAX_DIMS];
    int64_t out_strides[ZG_K_MAX_DIMS];
} zg_k_row_map;
cudaError_t zg_k_unshuffle_launch(const zg_k_unshuffle *d_items, size_t n_items, uint64_t max_nbytes,
                                  const zg_k_row_map *map, cudaStream_t s);

/* In-place buffer of n bytes. */
typedef struct zg_k_buf {
    uint8_t *p;
    uint64_t n;
} zg_k_buf;
/* Reverses the byte order of every `unit`-byte word (2, 4, 8 or 16). */
cudaError_t zg_k_byteswap_launch(const zg_k_buf *d_items, size_t n_items, uint64_t max_n, int unit, cudaStream_t s);
/* numcodecs.delta decode: inclusive prefix sum with wrap-around over integers of `elemsize` bytes. */
cudaError_t zg_k_delta_launch(const zg_k_buf *d_items, size_t n_items, int elemsize, cudaStream_t s);
/* TIFF's predictors, undone row by row (a warp a row): every item is chunk of rows of `row` elements of
 * `elemsize` bytes (the last row may be shorter), whose differences run over every `stride`-th element (samples
 * a pixel). Horizontal (predictor 2): in place, a wrapping prefix sum of integers of 1, 2, 4 or 8 bytes.
 * Floating point (predictor 3): src -> dst, each row's bytes summed with the same stride (in src), then its byte
 * planes (the elements' most significant bytes first) gathered into elements of 2, 4 or 8 bytes in native order.
 * max_n: the largest item's bytes. cudaErrorInvalidValue for other sizes, or a zero row or stride. */
cudaError_t zg_k_row_delta_launch(const zg_k_buf *d_items, size_t n_items, uint64_t max_n, int elemsize, uint32_t row,
                                  uint32_t stride, cudaStream_t s);
cudaError_t zg_k_row_float_launch(const zg_k_copy *d_items, size_t n_items, uint64_t max_n, int elemsize,
                                  uint32_t row, uint32_t stride, cudaStream_t s);
/* crc32c codec: checks the CRC32C of p[0, n-4) against the little-endian value in p[n-4, n); d_status[i]
 * is set to 1 on a mismatch (and left alone otherwise). */
cudaError_t zg_k_crc32c_launch(const zg_k_buf *d_items, size_t n_items, int *d_status, cudaStream_t s);

/* Checksums that formats carry of their decoded bytes (checksum_combine.h: ZG_CHECK_*): kind 1 = gzip CRC32
 * (IEEE), kind 2 = zlib Adler-32 (zlib chunks, blosc's zlib streams), kind 3 = the low 32 bits of XXH64 (a zstd
 * frame's content checksum, for decoders that do not verify it themselves); d_status[i] is set to 1 when the
 * checksum of p[0, n) differs from `expected`. One block an item: the items of a wave go in one launch. */
typedef struct zg_k_check {
    const uint8_t *p;
    uint64_t n;
    uint32_t expected;
    int kind;
} zg_k_check;
cudaError_t zg_k_check_launch(const zg_k_check *d_items, size_t n_items, int *d_status, cudaStream_t s);

/* Scatter of decoded chunks into the output box. Shared by all chunks of a launch: ndim, itemsize, the
 * byte strides of a decoded chunk buffer (transposes are folded in here) and of the output. Per chunk:
 * src (NULL: write the fill value), dst (the first output element), and ndim counts at
 * d_counts[i * ndim ...]. */
typedef struct zg_k_scatter_params {
    int ndim;
    int itemsize;
    int64_t src_strides[ZG_K_MAX_DIMS];
    int64_t dst_strides[ZG_K_MAX_DIMS];
    const uint8_t *d_fill; /* itemsize bytes in device memory */
} zg_k_scatter_params;
typedef struct zg_k_scatter {
    const uint8_t *src;
    uint8_t *dst;
} zg_k_scatter;
/* max_rows: the most rows of an item, a row being what zg_k_scatter_rows counts (the grid's size: rows of the
 * innermost axis alone gave an RGB image's 256 tiles 512 times the blocks with work, 1.19 ms of empty blocks). */
cudaError_t zg_k_scatter_launch(const zg_k_scatter_params *p, const zg_k_scatter *d_items,
                                const uint64_t *d_counts, size_t n_items, uint64_t max_rows, cudaStream_t s);

#ifdef __CUDACC__
#define ZG_K_HOST_DEVICE __host__ __device__
#else
#define ZG_K_HOST_DEVICE
#endif
/* The rows the scatter (plain and converting) copies of an item of counts cnt: a row is the innermost axes that
 * lie alike on both sides, one run of elements in the chunk and in the output (has_src 0, a fill: in the output
 * alone); *row_len gets its elements and *outer the axes before it. Strides are bytes. */
static inline ZG_K_HOST_DEVICE uint64_t zg_k_scatter_rows(int nd, const int64_t *src_strides,
                                                          const int64_t *dst_strides, int itemsize,
                                                          const uint64_t *cnt, int has_src, uint64_t *row_len,
                                                          int *outer) {
    const int64_t ss = nd > 0 ? src_strides[nd - 1] : itemsize, ds = nd > 0 ? dst_strides[nd - 1] : itemsize;
    int last = nd - 1;
    uint64_t len = nd > 0 ? cnt[nd - 1] : 1;
    while (last > 0 && (!has_src || src_strides[last - 1] == (int64_t)len * ss) &&
           dst_strides[last - 1] == (int64_t)len * ds) {
        len *= cnt[last - 1];
        last--;
    }
    uint64_t rows = 1;
    for (int d = 0; d < last; d++) rows *= cnt[d];
    *row_len = len;
    *outer = last < 0 ? 0 : last;
    return len ? rows : 0;
}


#ifdef __cplusplus
}
#endif
#endif
