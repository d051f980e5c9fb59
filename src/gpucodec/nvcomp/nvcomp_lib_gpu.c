/* nvCOMP adapter (see nvcomp_lib.h). The few declarations used are written here to match nvCOMP 6's
 * headers (nvcomp/{zstd,deflate,lz4,snappy,shared_types}.h), so no nvCOMP header is needed to build. */
#include "gpucodec/nvcomp/nvcomp_lib.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/env.h"
#include "common/status.h"

/* Every nvCOMP 6 decompression-options struct is 64 bytes, passed by value; zeros select the defaults
 * (backend DEFAULT, data type char, no bitshuffle). One layout-compatible struct serves all formats. */
typedef struct zg_nvc_opts {
    int backend;
    int sort_before_hw_decompress;
    int data_type;
    int bitshuffle_mode;
    char reserved[48];
} zg_nvc_opts;
_Static_assert(sizeof(zg_nvc_opts) == 64, "nvCOMP 6 options are 64 bytes");

typedef struct zg_nvc_align {
    size_t input, output, temp;
} zg_nvc_align;

typedef int (*fn_align)(zg_nvc_opts, zg_nvc_align *);
typedef int (*fn_temp)(size_t, size_t, zg_nvc_opts, size_t *, size_t, cudaStream_t);
typedef int (*fn_decomp)(const void *const *, const size_t *, const size_t *, size_t *, size_t, void *const,
                         size_t, void *const *, zg_nvc_opts, int *, cudaStream_t);

static const char *const format_names[ZG_NVC_N] = {"Zstd", "Deflate", "LZ4", "Snappy"};

static struct {
    pthread_once_t once;
    void *lib;
    char why[PATH_MAX + 512];
    char path[PATH_MAX];
    fn_align align[ZG_NVC_N];
    fn_temp temp[ZG_NVC_N];
    fn_decomp decomp[ZG_NVC_N];
} nvc = {PTHREAD_ONCE_INIT, NULL, "", "", {0}, {0}, {0}};

static void *try_open(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) snprintf(nvc.path, sizeof nvc.path, "%s", path);
    return h;
}

static void *try_dir(const char *dir) {
    char p[PATH_MAX];
    if (!dir || !*dir) return NULL;
    snprintf(p, sizeof p, "%s/libnvcomp.so.6", dir);
    return try_open(p);
}

static void dir_of(const char *file, char *out, size_t n) {
    snprintf(out, n, "%s", file);
    char *slash = strrchr(out, '/');
    if (slash) *slash = 0;
    else out[0] = 0;
}

static void load(void) {
    const char *env = zg_env_nvcomp_lib();
    char dir[PATH_MAX];
    void *h = NULL;
    if (env && *env) {
        h = try_open(env);
        if (!h) h = try_dir(env);
        if (!h) {
            snprintf(nvc.why, sizeof nvc.why, "ZGPU_NVCOMP_LIB=%s could not be loaded: %s", env, dlerror());
            return;
        }
    }
    Dl_info info;
    if (!h && dladdr((void *)&load, &info) && info.dli_fname) {
        dir_of(info.dli_fname, dir, sizeof dir);
        h = try_dir(dir);
    }
    if (!h) {
        ssize_t k = readlink("/proc/self/exe", dir, sizeof dir - 1);
        if (k > 0) {
            dir[k] = 0;
            char d2[PATH_MAX];
            dir_of(dir, d2, sizeof d2);
            h = try_dir(d2);
        }
    }
#ifdef ZGPU_NVCOMP_CONFIGURED_DIR
    if (!h) h = try_dir(ZGPU_NVCOMP_CONFIGURED_DIR);
#endif
    if (!h) h = try_open("libnvcomp.so.6");
    if (!h) {
        snprintf(nvc.why, sizeof nvc.why, "libnvcomp.so.6 not found (set ZGPU_NVCOMP_LIB): %s", dlerror());
        return;
    }
    char name[128];
    for (int f = 0; f < ZG_NVC_N; f++) {
        snprintf(name, sizeof name, "nvcompBatched%sDecompressGetRequiredAlignments", format_names[f]);
        *(void **)&nvc.align[f] = dlsym(h, name);
        snprintf(name, sizeof name, "nvcompBatched%sDecompressGetTempSize", format_names[f]);
        *(void **)&nvc.temp[f] = dlsym(h, name);
        snprintf(name, sizeof name, "nvcompBatched%sDecompressAsync", format_names[f]);
        *(void **)&nvc.decomp[f] = dlsym(h, name);
        if (!nvc.align[f] || !nvc.temp[f] || !nvc.decomp[f]) {
            snprintf(nvc.why, sizeof nvc.why, "%s lacks %s (nvCOMP 6 is required)", nvc.path, name);
            dlclose(h);
            return;
        }
    }
    nvc.lib = h;
}

int zg_nvc_available(const char **why) {
    pthread_once(&nvc.once, load);
    if (why) *why = nvc.lib ? "" : nvc.why;
    return nvc.lib != NULL;
}

const char *zg_nvc_format_name(zg_nvc_format f) { return f < ZG_NVC_N ? format_names[f] : "?"; }

const char *zg_nvc_status_text(int s) {
    switch (s) {
    case 0: return "success";
    case 10: return "invalid value";
    case 11: return "not supported";
    case 12: return "cannot decompress";
    case 13: return "bad checksum";
    case 15: return "output buffer too small";
    case 16: return "wrong header length";
    case 17: return "misaligned buffer";
    case 18: return "chunk too large";
    case 20: return "wrong input length";
    case 1000: return "CUDA error";
    default: return "nvCOMP error";
    }
}

zgpu_status zg_nvc_alignments(zg_nvc_format f, size_t *in, size_t *out, size_t *temp) {
    ZG_RETURN_IF(!zg_nvc_available(NULL), ZGPU_ERR_UNSUPPORTED, "nvCOMP: %s", nvc.why);
    zg_nvc_opts o;
    memset(&o, 0, sizeof o);
    zg_nvc_align a = {1, 1, 1};
    int s = nvc.align[f](o, &a);
    ZG_RETURN_IF(s != 0, ZGPU_ERR_CUDA, "nvCOMP %s alignment query failed: %s (%d)", format_names[f],
                 zg_nvc_status_text(s), s);
    *in = a.input ? a.input : 1;
    *out = a.output ? a.output : 1;
    *temp = a.temp ? a.temp : 1;
    return ZGPU_OK;
}

zgpu_status zg_nvc_temp_size(zg_nvc_format f, size_t n_chunks, size_t max_out, size_t total_out, size_t *temp) {
    ZG_RETURN_IF(!zg_nvc_available(NULL), ZGPU_ERR_UNSUPPORTED, "nvCOMP: %s", nvc.why);
    zg_nvc_opts o;
    memset(&o, 0, sizeof o);
    *temp = 0;
    int s = nvc.temp[f](n_chunks, max_out, o, temp, total_out, 0);
    ZG_RETURN_IF(s != 0, ZGPU_ERR_CUDA, "nvCOMP %s temp size query (%zu chunks, largest %zu bytes) failed: %s (%d)",
                 format_names[f], n_chunks, max_out, zg_nvc_status_text(s), s);
    return ZGPU_OK;
}

zgpu_status zg_nvc_decompress(zg_nvc_format f, const void *const *d_in, const size_t *d_in_bytes,
                              const size_t *d_out_cap, size_t *d_out_actual, size_t n, void *d_temp,
                              size_t temp_bytes, void *const *d_out, int *d_status, cudaStream_t stream) {
    ZG_RETURN_IF(!zg_nvc_available(NULL), ZGPU_ERR_UNSUPPORTED, "nvCOMP: %s", nvc.why);
    zg_nvc_opts o;
    memset(&o, 0, sizeof o);
    int s = nvc.decomp[f](d_in, d_in_bytes, d_out_cap, d_out_actual, n, d_temp, temp_bytes, d_out, o, d_status,
                          stream);
    ZG_RETURN_IF(s != 0, ZGPU_ERR_CUDA, "nvCOMP %s batched decompression of %zu chunks failed to launch: %s (%d)",
                 format_names[f], n, zg_nvc_status_text(s), s);
    return ZGPU_OK;
}
