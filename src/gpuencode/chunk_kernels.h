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
 *  and 1 where it is not. n at most 65535. */
cudaError_t zg_ge_fill_check_launch(const uint8_t *const *d_chunks, size_t n, uint64_t nbytes, const uint8_t *d_fill,
                                    int itemsize, int *d_differs, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
