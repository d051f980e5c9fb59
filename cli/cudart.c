/* The CUDA runtime, loaded with dlopen so that the zgpu command has no link dependency on CUDA. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

#define CUDA_MEMCPY_DEVICE_TO_HOST 2
#define CUDA_STREAM_NON_BLOCKING 1 /* cudaStreamNonBlocking: no implicit order with the legacy default stream */

int cli_parse_device(const char *text, int *device) {
    if (!strcmp(text, "cpu") || !strcmp(text, "host")) {
        *device = -1;
        return 0;
    }
    if (!strcmp(text, "cuda") || !strcmp(text, "gpu")) {
        *device = 0;
        return 0;
    }
    int64_t v;
    if (!strncmp(text, "cuda:", 5) && cli_parse_i64(text + 5, strlen(text + 5), &v) == 0 && v >= 0 && v < 1024) {
        *device = (int)v;
        return 0;
    }
    return cli_err("--device '%s': expected cuda:N, cuda or cpu", text);
}

static int cuda_fail(cli_cuda *cu, const char *what, int code) {
    const char *s = cu->error_string ? cu->error_string(code) : "unknown error";
    return cli_err("%s failed: %s (cudaError %d)", what, s ? s : "unknown error", code);
}

int cli_cuda_load(cli_cuda *cu, int device) {
    memset(cu, 0, sizeof *cu);
    if (!zgpu_gpu_available()) {
        const char *why = zgpu_last_error();
        return cli_err("no GPU: %s", why && *why ? why : "this build of zgpu has no usable CUDA device");
    }
    static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !cu->lib; i++) cu->lib = dlopen(names[i], RTLD_NOW);
    if (!cu->lib) {
        const char *e = dlerror();
        return cli_err("no GPU: cannot load the CUDA runtime (libcudart.so): %s", e ? e : "not found");
    }
    /* POSIX guarantees that a data pointer from dlsym converts to a function pointer. */
#define CLI_SYM(field, name)                                                                     \
    do {                                                                                         \
        void *sym_ = dlsym(cu->lib, name);                                                       \
        if (!sym_) {                                                                             \
            dlclose(cu->lib);                                                                    \
            cu->lib = NULL;                                                                      \
            return cli_err("no GPU: the CUDA runtime lacks %s", name);                           \
        }                                                                                        \
        memcpy(&cu->field, &sym_, sizeof sym_);                                                  \
    } while (0)
    CLI_SYM(set_device, "cudaSetDevice");
    CLI_SYM(malloc_, "cudaMalloc");
    CLI_SYM(free_, "cudaFree");
    CLI_SYM(memcpy_, "cudaMemcpy");
    CLI_SYM(memset_, "cudaMemset");
    CLI_SYM(synchronize, "cudaDeviceSynchronize");
    CLI_SYM(error_string, "cudaGetErrorString");
    CLI_SYM(host_alloc, "cudaMallocHost");
    CLI_SYM(host_free, "cudaFreeHost");
    CLI_SYM(mem_get_info, "cudaMemGetInfo");
    CLI_SYM(stream_create, "cudaStreamCreateWithFlags");
    CLI_SYM(stream_destroy, "cudaStreamDestroy");
#undef CLI_SYM
    int rc = cu->set_device(device);
    if (rc != 0) {
        char msg[512];
        cuda_fail(cu, "cudaSetDevice", rc);
        snprintf(msg, sizeof msg, "%s", cli_errmsg());
        cli_cuda_unload(cu);
        return cli_err("no GPU: device %d: %s", device, msg);
    }
    return 0;
}

int cli_cuda_alloc(cli_cuda *cu, void **p, size_t n) {
    *p = NULL;
    int rc = cu->malloc_(p, n ? n : 1);
    if (rc != 0) {
        *p = NULL;
        return cuda_fail(cu, "cudaMalloc", rc);
    }
    return 0;
}

int cli_cuda_host_alloc(cli_cuda *cu, void **p, size_t n) {
    *p = NULL;
    int rc = cu->host_alloc(p, n ? n : 1);
    if (rc != 0) {
        *p = NULL;
        return cuda_fail(cu, "cudaMallocHost", rc);
    }
    return 0;
}

int cli_cuda_free_memory(cli_cuda *cu, uint64_t *free_bytes) {
    size_t f = 0, total = 0;
    int rc = cu->mem_get_info(&f, &total);
    if (rc != 0) return cuda_fail(cu, "cudaMemGetInfo", rc);
    *free_bytes = f;
    return 0;
}

int cli_cuda_stream(cli_cuda *cu, void **stream) {
    *stream = NULL;
    int rc = cu->stream_create(stream, CUDA_STREAM_NON_BLOCKING);
    if (rc != 0) {
        *stream = NULL;
        return cuda_fail(cu, "cudaStreamCreateWithFlags", rc);
    }
    return 0;
}

int cli_cuda_to_host(cli_cuda *cu, void *host, const void *device, size_t n) {
    if (!n) return 0;
    int rc = cu->memcpy_(host, device, n, CUDA_MEMCPY_DEVICE_TO_HOST);
    return rc ? cuda_fail(cu, "cudaMemcpy (device to host)", rc) : 0;
}

void cli_cuda_unload(cli_cuda *cu) {
    /* The runtime is left loaded: unloading it while its context lives can crash at exit. */
    cu->lib = NULL;
}
