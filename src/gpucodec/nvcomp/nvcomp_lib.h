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

#endif
