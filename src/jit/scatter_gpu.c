/* The converting scatter's launch side (scatter_gpu.h): the kernel for a (device, configuration) is loaded once
 * with the runtime's library API (cudaLibraryLoadData + cudaLibraryGetKernel, CUDA 12+: no libcuda to link) and
 * kept in a small table; every launch after that is a lookup and cudaLaunchKernel with zg_k_scatter_launch's
 * grid. */
#include "jit/scatter_gpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/status.h"
#include "gpucodec/common/gpu_limits.h"
#include "jit/jit_cache.h"
#include "jit/scatter_source.h"

/* the kernel's first parameter is this struct by value, declared field by field in the generated source */
_Static_assert(sizeof(zg_k_scatter_params) == 8 + 16 * ZG_K_MAX_DIMS + 8, "scatter_source.c's zg_k_scatter_params");
_Static_assert(sizeof(zg_k_scatter) == 16, "scatter_source.c's zg_k_scatter");
_Static_assert(ZG_K_MAX_DIMS == ZGPU_MAX_DIMS, "scatter_source.c sizes the strides with ZGPU_MAX_DIMS");

typedef struct loaded {
    int device;
    zg_jit_scatter_cfg cfg;
    cudaLibrary_t lib;
    cudaKernel_t kernel;
} loaded;

static struct {
    pthread_mutex_t mu;
    loaded *v;
    size_t n, cap;
} T = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* A forked child has no CUDA state of its parent: it loads its own kernels (the table is left to leak). */
static void after_fork_child(void) {
    pthread_mutex_init(&T.mu, NULL);
    T.v = NULL;
    T.n = T.cap = 0;
}
static void register_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

static int same_cfg(const zg_jit_scatter_cfg *a, const zg_jit_scatter_cfg *b) {
    return a->in_dtype == b->in_dtype && a->out_dtype == b->out_dtype && a->compute64 == b->compute64 &&
           a->clamp == b->clamp && a->contiguous == b->contiguous;
}

static const loaded *find(int device, const zg_jit_scatter_cfg *c) {
    for (size_t i = 0; i < T.n; i++)
        if (T.v[i].device == device && same_cfg(&T.v[i].cfg, c)) return &T.v[i];
    return NULL;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static zg_jit_scatter_cfg cfg_for(const zg_xform *x, int contiguous) {
    zg_jit_scatter_cfg c = zg_jit_scatter_cfg_of(x, (int64_t)x->in_itemsize, (int64_t)x->out_itemsize);
    c.contiguous = contiguous;
    return c;
}

/* The kernel for c on the current device: the table, else the cache (memory, disk, NVRTC) and a load. */
static zgpu_status get_kernel(const zg_jit_scatter_cfg *c, cudaKernel_t *out) {
    pthread_once(&fork_once, register_fork);
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    ZG_RETURN_IF(e != cudaSuccess, ZGPU_ERR_CUDA, "converting scatter: cudaGetDevice: %s", cudaGetErrorString(e));
    pthread_mutex_lock(&T.mu);
    const loaded *l = find(dev, c);
    if (l) *out = l->kernel;
    pthread_mutex_unlock(&T.mu);
    if (l) return ZGPU_OK;

    char what[256];
    zg_jit_scatter_what(c, what, sizeof what);
    zg_gpu_limits lim;
    e = zg_gpu_limits_current(&lim);
    ZG_RETURN_IF(e != cudaSuccess, ZGPU_ERR_CUDA, "JIT kernel (%s): device %d's properties: %s", what, dev,
                 cudaGetErrorString(e));
    int driver = 0;
    e = cudaDriverGetVersion(&driver);
    ZG_RETURN_IF(e != cudaSuccess, ZGPU_ERR_CUDA, "JIT kernel (%s): cudaDriverGetVersion: %s", what,
                 cudaGetErrorString(e));
    char arch[16], drv[16];
    snprintf(arch, sizeof arch, "sm_%d%d", lim.cc_major, lim.cc_minor);
    snprintf(drv, sizeof drv, "%d", driver);
    char *source = zg_jit_scatter_source(c);
    ZG_RETURN_IF(!source, ZGPU_ERR_NO_MEMORY, "JIT kernel (%s): no source (out of memory?)", what);
    const zg_jit_image *img = NULL;
    zgpu_status st = zg_jit_cache_get(what, source, NULL, 0, arch, drv, &img);
    free(source);
    if (st != ZGPU_OK) {
        zg_error_prefix("converting scatter on device %d (%s): ", dev, arch);
        return st;
    }

    const double t0 = now_s();
    cudaLibrary_t lib = NULL;
    cudaKernel_t kernel = NULL;
    e = cudaLibraryLoadData(&lib, img->code, NULL, NULL, 0, NULL, NULL, 0);
    if (e == cudaSuccess) {
        e = cudaLibraryGetKernel(&kernel, lib, ZG_JIT_SCATTER_KERNEL);
        if (e != cudaSuccess) (void)cudaLibraryUnload(lib);
    }
    zg_jit_stats_add_module_load(now_s() - t0);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return zg_error(ZGPU_ERR_CUDA, "JIT kernel (%s, %s %s) does not load on device %d (%s): %s", what,
                        img->is_ptx ? "PTX" : "cubin", img->target, dev, arch, cudaGetErrorString(e));
    }

    pthread_mutex_lock(&T.mu);
    if ((l = find(dev, c)) != NULL) { /* another thread loaded it meanwhile */
        *out = l->kernel;
        pthread_mutex_unlock(&T.mu);
        (void)cudaLibraryUnload(lib);
        return ZGPU_OK;
    }
    if (T.n == T.cap) {
        const size_t cap = T.cap ? 2 * T.cap : 16;
        loaded *v = realloc(T.v, cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&T.mu);
            (void)cudaLibraryUnload(lib);
            return zg_error(ZGPU_ERR_NO_MEMORY, "JIT kernel (%s): out of memory", what);
        }
        T.v = v;
        T.cap = cap;
    }
    T.v[T.n++] = (loaded){dev, *c, lib, kernel};
    pthread_mutex_unlock(&T.mu);
    *out = kernel;
    return ZGPU_OK;
}

void zg_jit_scatter_forget(void) {
    pthread_mutex_lock(&T.mu);
    for (size_t i = 0; i < T.n; i++) (void)cudaLibraryUnload(T.v[i].lib);
    T.n = 0;
    pthread_mutex_unlock(&T.mu);
}

zgpu_status zg_jit_scatter_prepare(const zg_xform *x, int contiguous) {
    if (x->identity) return ZGPU_OK;
    const zg_jit_scatter_cfg c = cfg_for(x, contiguous);
    cudaKernel_t k;
    return get_kernel(&c, &k);
}

zgpu_status zg_jit_scatter_launch(const zg_xform *x, const zg_k_scatter_params *p, const zg_k_scatter *d_items,
                                  const uint64_t *d_counts, size_t n, uint64_t max_rows, cudaStream_t s) {
    if (n == 0) return ZGPU_OK;
    cudaError_t e;
    if (x->identity) {
        e = zg_k_scatter_launch(p, d_items, d_counts, n, max_rows, s);
        ZG_RETURN_IF(e != cudaSuccess, ZGPU_ERR_CUDA, "scatter launch: %s", cudaGetErrorString(e));
        return ZGPU_OK;
    }
    const int nd = p->ndim;
    ZG_RETURN_IF(nd < 0 || nd > ZG_K_MAX_DIMS || p->itemsize != (int)x->in_itemsize, ZGPU_ERR_INTERNAL,
                 "converting scatter: %d dimensions, items of %d bytes for %s input", nd, p->itemsize,
                 zg_convert_dtype_name(x->in_dtype));
    const int contiguous = nd == 0 || (p->src_strides[nd - 1] == (int64_t)x->in_itemsize &&
                                       p->dst_strides[nd - 1] == (int64_t)x->out_itemsize);
    const zg_jit_scatter_cfg c = cfg_for(x, contiguous);
    cudaKernel_t kernel;
    ZG_FORWARD(get_kernel(&c, &kernel));

    zg_gpu_limits lim;
    (void)zg_gpu_limits_current(&lim); /* (an H100's limits when it cannot ask: get_kernel would have failed) */
    const zg_lc_dims d = zg_lc_scatter(&lim, n, max_rows);
    zg_k_scatter_params params = *p;
    unsigned long long n_items = n;
    float f[4] = {x->scale32, x->offset32, x->clamp_min32, x->clamp_max32};
    double g[4] = {x->scale, x->offset, x->clamp_min, x->clamp_max};
    void *args[8] = {&params, (void *)&d_items, (void *)&d_counts, &n_items};
    for (int i = 0; i < 4; i++) args[4 + i] = x->compute64 ? (void *)&g[i] : (void *)&f[i];
    const dim3 grid = {d.grid_x, d.grid_y, 1}, block = {d.threads, 1, 1};
    e = cudaLaunchKernel((const void *)kernel, grid, block, args, 0, s);
    if (e != cudaSuccess) {
        char what[256];
        (void)cudaGetLastError();
        return zg_error(ZGPU_ERR_CUDA, "JIT kernel (%s) launch of %zu items: %s", zg_jit_scatter_what(&c, what,
                        sizeof what), n, cudaGetErrorString(e));
    }
    return ZGPU_OK;
}
