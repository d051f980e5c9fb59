/* The current device's limits (gpu_limits.h), asked once per device: a launch must not pay for attribute
 * queries, and the values never change while the process runs. */
#include "gpucodec/common/gpu_limits.h"

#include <pthread.h>
#include <stdatomic.h>

#define ZG_LIMITS_DEVICES 64

static zg_gpu_limits cache[ZG_LIMITS_DEVICES];
static atomic_int ready[ZG_LIMITS_DEVICES]; /* 1 once cache[dev] is written (release / acquire) */
static pthread_mutex_t asking = PTHREAD_MUTEX_INITIALIZER; /* one writer of the cache */

static cudaError_t ask(int dev, zg_gpu_limits *L) {
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, dev);
    if (e != cudaSuccess) return e;
    int optin = 0, reserved = 0;
    if ((e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) != cudaSuccess) return e;
    if ((e = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev)) != cudaSuccess) return e;
    L->cc_major = p.major;
    L->cc_minor = p.minor;
    L->sm_count = p.multiProcessorCount;
    L->warp_size = p.warpSize;
    L->max_threads_per_block = p.maxThreadsPerBlock;
    L->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    L->max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
    L->regs_per_sm = p.regsPerMultiprocessor;
    L->regs_per_block = p.regsPerBlock;
    L->smem_per_block = (uint32_t)p.sharedMemPerBlock;
    L->smem_per_block_optin = (uint32_t)optin;
    L->smem_per_sm = (uint32_t)p.sharedMemPerMultiprocessor;
    L->smem_reserved_per_block = (uint32_t)reserved;
    L->max_grid_x = (uint32_t)p.maxGridSize[0];
    L->max_grid_y = (uint32_t)p.maxGridSize[1];
    return cudaSuccess;
}

cudaError_t zg_gpu_limits_current(zg_gpu_limits *out) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess && dev >= 0 && dev < ZG_LIMITS_DEVICES) {
        if (atomic_load_explicit(&ready[dev], memory_order_acquire)) {
            *out = cache[dev];
            return cudaSuccess;
        }
        pthread_mutex_lock(&asking);
        if (!atomic_load_explicit(&ready[dev], memory_order_relaxed)) {
            e = ask(dev, &cache[dev]);
            if (e == cudaSuccess) atomic_store_explicit(&ready[dev], 1, memory_order_release);
        }
        if (e == cudaSuccess) *out = cache[dev];
        pthread_mutex_unlock(&asking);
        if (e == cudaSuccess) return cudaSuccess;
    } else if (e == cudaSuccess) {
        zg_gpu_limits L;
        if ((e = ask(dev, &L)) == cudaSuccess) { /* (a device number beyond the cache: asked each time) */
            *out = L;
            return cudaSuccess;
        }
    }
    (void)cudaGetLastError(); /* not the caller's launch error */
    *out = zg_gpu_limits_h100();
    return e;
}
