/* The one place that knows nvCOMP (6.x batched C API). libnvcomp.so.6 is loaded with dlopen on first use:
 * zgpu builds and runs without it (compressed chunks then decode on the CPU path). Search order:
 * $ZGPU_NVCOMP_LIB (a file or a directory), the directory of libzgpu / of the executable, the directory
 * found at configure time, then the loader's default search path. */
#ifndef ZG_NVCOMP_LIB_H
#define ZG_NVCOMP_LIB_H
#include <stddef.h>
#include <cuda_runtime.h>
#include "zgpu.h"

typedef enum zg_nvc_format { ZG_NVC_ZSTD = 0, ZG_NVC_DEFLATE, ZG_NVC_LZ4, ZG_NVC_SNAPPY, ZG_NVC_N } zg_nvc_format;

/** 1 if nvCOMP is loaded (loads it on the first call; thread-safe). 0 otherwise; why (if not NULL) then
 *  holds the reason. */
int zg_nvc_available(const char **why);
const char *zg_nvc_format_name(zg_nvc_format f);
/** Minimum alignments of input, output and temp buffers. */
zgpu_status zg_nvc_alignments(zg_nvc_format f, size_t *in, size_t *out, size_t *temp);
zgpu_status zg_nvc_temp_size(zg_nvc_format f, size_t n_chunks, size_t max_out, size_t total_out, size_t *temp);
/** One batched launch. All arrays are device memory of n entries; statuses are nvCOMP status codes
 *  (0 = success) written per chunk; actual sizes are written per chunk. */
zgpu_status zg_nvc_decompress(zg_nvc_format f, const void *const *d_in, const size_t *d_in_bytes,
                              const size_t *d_out_cap, size_t *d_out_actual, size_t n, void *d_temp,
                              size_t temp_bytes, void *const *d_out, int *d_status, cudaStream_t stream);
/** Text for a per-chunk nvCOMP status. */
const char *zg_nvc_status_text(int status);

/* ---- batched compression (Zstd, Deflate and LZ4; Snappy is not offered: ZGPU_ERR_UNSUPPORTED) ----
 * `algorithm` is nvCOMP's Deflate algorithm, 0..5 (nvcomp/deflate.h: 0 entropy coding only, 1 high throughput
 * (nvCOMP's default), 2 medium, 3 = 2 for now, 4 beats zlib level 6's ratio, 5 the best ratio; the encoder's
 * choice: gpuencode/encode_frames.h); the other formats have no level in nvCOMP 6 and ignore it. Every function
 * answers ZGPU_ERR_UNSUPPORTED, naming where libnvcomp.so.6 was looked for, when nvCOMP is missing or lacks the
 * compression entry points. */
/** The largest chunk one compression takes (bytes). Zstd: 16 MiB (CompressAsync's documented limit, below the
 *  header's constant); Deflate: 2 GiB, the header's constant (CompressAsync's own note says 64 KiB, but 16 MiB
 *  chunks compress and decode: test_gpu_encode); LZ4: 16 MiB. */
size_t zg_nvc_compress_max_chunk(zg_nvc_format f);
/** Minimum alignments of the compressor's input chunks, output buffers and temp buffer. */
zgpu_status zg_nvc_compress_alignments(zg_nvc_format f, int algorithm, size_t *in, size_t *out, size_t *temp);
/** The output buffer each chunk of at most max_chunk bytes needs (nvCOMP's bound, bytes). */
zgpu_status zg_nvc_compress_max_output(zg_nvc_format f, int algorithm, size_t max_chunk, size_t *max_out);
/** Temp bytes for n chunks of at most max_chunk bytes, total_bytes together (a host-side answer). */
zgpu_status zg_nvc_compress_temp_size(zg_nvc_format f, int algorithm, size_t n, size_t max_chunk, size_t total_bytes,
                                      size_t *temp);
/** One batched launch on `stream`. d_in, d_in_bytes, d_out: device arrays of n entries; d_out_bytes gets each
 *  chunk's compressed size, d_status nvCOMP's status per chunk (0 = success; may be NULL). */
zgpu_status zg_nvc_compress(zg_nvc_format f, int algorithm, const void *const *d_in, const size_t *d_in_bytes,
                            size_t max_chunk, size_t n, void *d_temp, size_t temp_bytes, void *const *d_out,
                            size_t *d_out_bytes, int *d_status, cudaStream_t stream);

#endif
