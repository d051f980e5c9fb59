/* nvCOMP adapter (see nvcomp_lib.h). The few declarations used are written here to match nvCOMP 6's
 * headers (nvcomp/{zstd,deflate,lz4,snappy,shared_types}.h, nvidia-libnvcomp-cu13 6.0.0.12), so no nvCOMP header is
 * needed to build. */
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

/* nvCOMP 6's compression options, also 64 bytes by value: Deflate's {int algorithm; reserved}, LZ4's
 * {nvcompType_t data_type; nvcompBitshuffleMode_t bitshuffle_mode; reserved} (0, 0: bytes, no bitshuffle) and
 * Zstd's {reserved} (nvCOMP 6 has no Zstd level). `first` is Deflate's algorithm; every other byte stays 0. */
typedef struct zg_nvc_copts {
    int first;
    int second;
    char reserved[56];
} zg_nvc_copts;
_Static_assert(sizeof(zg_nvc_copts) == 64, "nvCOMP 6 compression options are 64 bytes");

#define ZG_NVC_COMPRESSORS 3 /* Zstd, Deflate, LZ4: the first formats of zg_nvc_format */
typedef int (*fn_calign)(zg_nvc_copts, zg_nvc_align *);
typedef int (*fn_ctemp)(size_t, size_t, zg_nvc_copts, size_t *, size_t, cudaStream_t);
typedef int (*fn_cmax)(size_t, zg_nvc_copts, size_t *);
typedef int (*fn_comp)(const void *const *, const size_t *, size_t, size_t, void *, size_t, void *const *, size_t *,
                       zg_nvc_copts, int *, cudaStream_t);

static const char *const format_names[ZG_NVC_N] = {"Zstd", "Deflate", "LZ4", "Snappy"};

static struct {
    pthread_once_t once;
    void *lib;
    char why[PATH_MAX + 512];
    char path[PATH_MAX];
    fn_align align[ZG_NVC_N];
    fn_temp temp[ZG_NVC_N];
    fn_decomp decomp[ZG_NVC_N];
    char why_compress[512]; /* empty when the compressors below were all found */
    fn_calign calign[ZG_NVC_COMPRESSORS];
    fn_ctemp ctemp[ZG_NVC_COMPRESSORS];
    fn_cmax cmax[ZG_NVC_COMPRESSORS];
    fn_comp comp[ZG_NVC_COMPRESSORS];
} nvc = {PTHREAD_ONCE_INIT, NULL, "", "", {0}, {0}, {0}, "", {0}, {0}, {0}, {0}};

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
        /* (the places tried, in order, so that a missing library is found without reading the source) */
        snprintf(nvc.why, sizeof nvc.why,
                 "libnvcomp.so.6 not found (looked beside libzgpu, beside the executable,%s%s and on the loader's "
                 "path; set ZGPU_NVCOMP_LIB to the file or its directory): %s",
#ifdef ZGPU_NVCOMP_CONFIGURED_DIR
                 " in ", ZGPU_NVCOMP_CONFIGURED_DIR,
#else
                 "", "",
#endif
                 dlerror());
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
    /* Compressors: optional (reads need none of them); the first one missing is named in why_compress. */
    for (int f = 0; f < ZG_NVC_COMPRESSORS && !nvc.why_compress[0]; f++) {
        static const char *const what[4] = {"GetRequiredAlignments", "GetTempSize", "GetMaxOutputChunkSize", "Async"};
        void **slot[4] = {(void **)&nvc.calign[f], (void **)&nvc.ctemp[f], (void **)&nvc.cmax[f],
                          (void **)&nvc.comp[f]};
        for (int k = 0; k < 4; k++) {
            snprintf(name, sizeof name, "nvcompBatched%sCompress%s", format_names[f], what[k]);
            *slot[k] = dlsym(h, name);
            if (!*slot[k]) {
                snprintf(nvc.why_compress, sizeof nvc.why_compress, "%s lacks %s", nvc.path, name);
                break;
            }
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
    case 19: return "cannot compress";
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

/* ---------------------------------------------------------------- compression */

size_t zg_nvc_compress_max_chunk(zg_nvc_format f) {
    switch (f) {
    case ZG_NVC_ZSTD: return (size_t)1 << 24;    /* nvcompBatchedZstdCompressAsync: "must not exceed 16 MB" */
    case ZG_NVC_DEFLATE: return (size_t)1 << 31; /* nvcompDeflateCompressionMaxAllowedChunkSize */
    case ZG_NVC_LZ4: return (size_t)1 << 24;     /* nvcompLZ4CompressionMaxAllowedChunkSize */
    default: return 0;
    }
}

/* nvCOMP loaded with this format's compressor, or ZGPU_ERR_UNSUPPORTED saying why not. */
static zgpu_status compressor(zg_nvc_format f) {
    ZG_RETURN_IF(!zg_nvc_available(NULL), ZGPU_ERR_UNSUPPORTED, "nvCOMP: %s", nvc.why);
    ZG_RETURN_IF((int)f < 0 || f >= ZG_NVC_COMPRESSORS, ZGPU_ERR_UNSUPPORTED,
                 "nvCOMP compression of %s is not offered (Zstd, Deflate and LZ4 are)", zg_nvc_format_name(f));
    ZG_RETURN_IF(nvc.why_compress[0], ZGPU_ERR_UNSUPPORTED, "nvCOMP compression: %s (nvCOMP 6 is required)",
                 nvc.why_compress);
    return ZGPU_OK;
}

static zg_nvc_copts compress_opts(zg_nvc_format f, int algorithm) {
    zg_nvc_copts o;
    memset(&o, 0, sizeof o);
    if (f == ZG_NVC_DEFLATE) o.first = algorithm;
    return o;
}

zgpu_status zg_nvc_compress_alignments(zg_nvc_format f, int algorithm, size_t *in, size_t *out, size_t *temp) {
    ZG_FORWARD(compressor(f));
    zg_nvc_align a = {1, 1, 1};
    int s = nvc.calign[f](compress_opts(f, algorithm), &a);
    ZG_RETURN_IF(s != 0, ZGPU_ERR_CUDA, "nvCOMP %s compression alignment query failed: %s (%d)", format_names[f],
                 zg_nvc_status_text(s), s);
    *in = a.input ? a.input : 1;
    *out = a.output ? a.output : 1;
    *temp = a.temp ? a.temp : 1;
    return ZGPU_OK;
}

zgpu_status zg_nvc_compress_max_output(zg_nvc_format f, int algorithm, size_t max_chunk, size_t *max_out) {
    ZG_FORWARD(compressor(f));
    *max_out = 0;
    int s = nvc.cmax[f](max_chunk, compress_opts(f, algorithm), max_out);
    ZG_RETURN_IF(s != 0, ZGPU_ERR_CUDA, "nvCOMP %s: no output bound for chunks of %zu bytes: %s (%d)", format_names[f],
                 max_chunk, zg_nvc_status_text(s), s);
    return ZGPU_OK;
}

zgpu_status zg_nvc_compress_temp_size(zg_nvc_format f, int algorithm, size_t n, size_t max_chunk, size_t total_bytes,
                                      size_t *temp) {
    ZG_FORWARD(compressor(f));
    *temp = 0;
    int s = nvc.ctemp[f](n, max_chunk, compress_opts(f, algorithm), temp, total_bytes, 0);
    ZG_RETURN_IF(s != 0, ZGPU_ERR_CUDA,
                 "nvCOMP %s compression temp size query (%zu chunks, largest %zu bytes) failed: %s (%d)",
                 format_names[f], n, max_chunk, zg_nvc_status_text(s), s);
    return ZGPU_OK;
}

zgpu_status zg_nvc_compress(zg_nvc_format f, int algorithm, const void *const *d_in, const size_t *d_in_bytes,
                            size_t max_chunk, size_t n, void *d_temp, size_t temp_bytes, void *const *d_out,
                            size_t *d_out_bytes, int *d_status, cudaStream_t stream) {
    ZG_FORWARD(compressor(f));
    int s = nvc.comp[f](d_in, d_in_bytes, max_chunk, n, d_temp, temp_bytes, d_out, d_out_bytes,
                        compress_opts(f, algorithm), d_status, stream);
    ZG_RETURN_IF(s != 0, ZGPU_ERR_CUDA, "nvCOMP %s batched compression of %zu chunks failed to launch: %s (%d)",
                 format_names[f], n, zg_nvc_status_text(s), s);
    return ZGPU_OK;
}
