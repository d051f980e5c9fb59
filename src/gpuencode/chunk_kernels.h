/* Kernels over the decoded chunks a device write gathers (src/device/write_device.c), before they are encoded. */
#ifndef ZG_CHUNK_KERNELS_H
#define ZG_CHUNK_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/** d_differs[i] = 0 where chunk i (nbytes at device address d_chunks[i], a device array of n pointers) is the fill
 *  value (itemsize bytes at d_fill) repeated — the chunk is then deleted rather than written, as host writes do —
 *  and 1 where it is not. */
cudaError_t zg_ge_fill_check_launch(const uint8_t *const *d_chunks, size_t n, uint64_t nbytes, const uint8_t *d_fill,
                                    int itemsize, int *d_differs, cudaStream_t s);

/** One chunk of a filter's batch: read at src, written at dst (out of place; they must not overlap). */
typedef struct zg_ge_pair {
    const uint8_t *src;
    uint8_t *dst;
} zg_ge_pair;

/** numcodecs' delta (encode) of n integer chunks of nbytes (items of itemsize 1, 2, 4 or 8 bytes): dst[0] = src[0],
 *  dst[i] = src[i] - src[i - 1], wrapping. d_pairs: a device array. cudaErrorInvalidValue for another item size
 *  or nbytes not a multiple of it. */
cudaError_t zg_ge_delta_launch(const zg_ge_pair *d_pairs, size_t n, uint64_t nbytes, int itemsize, cudaStream_t s);

/** numcodecs' shuffle (encode) of n chunks of nbytes, a multiple of elementsize: byte j of item i goes to
 *  dst[j * (nbytes / elementsize) + i]. */
cudaError_t zg_ge_shuffle_launch(const zg_ge_pair *d_pairs, size_t n, uint64_t nbytes, int elementsize,
                                 cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
