/* Device reads from any thread into any GPU (issue 21): a public device read makes its context's device current and
 * puts the caller's back. A thread that never used CUDA has no current context after a device read (device route,
 * host route, async); one whose current device is another GPU keeps it; and a context on device 1 reads correctly
 * from a thread on device 0 (its pool threads copy on device 1's streams). GPU only: skipped (77) without one; the
 * two-GPU cases print a skip line with one GPU. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"
#include "zgpu_experimental.h"

#ifdef ZGPU_HAVE_CUDA
#include <cuda_runtime.h>

static char tmpdir[256];
#define NZ 48
#define NY 64
#define NX 80
#define N_ELEMS (NZ * NY * NX)
static const char *META =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [48, 64, 80], \"data_type\": \"uint32\", "
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [16, 32, 40]}}, "
    "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
    "\"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
    "{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}]}";
static uint32_t *expect;

/* The driver's current context of the calling thread (libcuda: what the runtime cannot say). */
static int (*cu_ctx_get_current)(void **);

static void *current_context(void) {
    void *c = NULL;
    if (cu_ctx_get_current(&c) != 0) c = (void *)1;
    return c;
}

typedef struct read_job {
    zgpu_array *a;
    uint32_t *dst;  /* device memory */
    int mode;       /* 0 sync, 1 async */
    int set_device; /* >= 0: the thread makes this device current first */
    void *before, *after;
    int device_after;
    zgpu_status status;
} read_job;

static void *read_thread(void *arg) {
    read_job *r = arg;
    if (r->set_device >= 0) cudaSetDevice(r->set_device);
    r->before = current_context();
    const uint64_t start[3] = {0, 0, 0}, count[3] = {NZ, NY, NX};
    if (r->mode == 0) {
        r->status = zgpu_array_read_device(r->a, start, count, r->dst, NULL, NULL);
    } else {
        zgpu_event *ev = NULL;
        r->status = zgpu_array_read_device_async(r->a, start, count, r->dst, NULL, NULL, &ev);
        if (r->status == ZGPU_OK) r->status = zgpu_event_wait(ev);
        zgpu_event_free(ev);
    }
    r->after = current_context();
    r->device_after = -1;
    if (r->set_device >= 0) cudaGetDevice(&r->device_after);
    return NULL;
}

static void check_read(zgpu_array *a, int device, int mode, int set_device, const char *what) {
    uint32_t *dst = NULL;
    CUOK(cudaSetDevice(device));
    CUOK(cudaMalloc((void **)&dst, N_ELEMS * sizeof *dst));
    CUOK(cudaMemset(dst, 0xff, N_ELEMS * sizeof *dst));
    CUOK(cudaDeviceSynchronize());
    read_job r = {a, dst, mode, set_device, NULL, NULL, -1, ZGPU_OK};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, read_thread, &r) == 0);
    pthread_join(th, NULL);
    CHECK_MSG(r.status == ZGPU_OK, "%s: %s", what, zgpu_last_error());
    if (set_device < 0) {
        CHECK_MSG(r.before == NULL && r.after == NULL, "%s: a thread without CUDA has context %p after the read",
                  what, r.after);
    } else {
        CHECK_MSG(r.after == r.before && r.device_after == set_device,
                  "%s: the thread's device was %d, is %d after the read", what, set_device, r.device_after);
    }
    uint32_t *got = malloc(N_ELEMS * sizeof *got);
    CUOK(cudaMemcpy(got, dst, N_ELEMS * sizeof *got, cudaMemcpyDeviceToHost));
    CHECK_MSG(got && memcmp(got, expect, N_ELEMS * sizeof *got) == 0, "%s: wrong data", what);
    free(got);
    cudaFree(dst);
}

static zgpu_context *context_on(int device, zgpu_route route) {
    zgpu_tuning t;
    zgpu_tuning_init(&t);
    t.read_route = route;
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.tuning = &t;
    o.device = device;
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    return ctx;
}

static void cases(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/a.zarr", tmpdir);
    expect = malloc(N_ELEMS * sizeof *expect);
    for (size_t i = 0; i < N_ELEMS; i++) expect[i] = (uint32_t)((i / 97) * 2654435761u % 1000);
    zgpu_context *w = context_on(0, ZGPU_ROUTE_AUTO);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(w, path, META, 1, &a));
    const uint64_t start[3] = {0, 0, 0}, count[3] = {NZ, NY, NX};
    CHECK_OK(zgpu_array_write(a, start, count, expect, NULL));
    zgpu_array_close(a);
    int n = 0;
    cudaGetDeviceCount(&n);
    const zgpu_route routes[2] = {ZGPU_ROUTE_DEVICE, ZGPU_ROUTE_HOST};
    for (int dev = 0; dev < (n > 1 ? 2 : 1); dev++) {
        for (int ri = 0; ri < 2; ri++) {
            zgpu_context *ctx = context_on(dev, routes[ri]);
            zgpu_array *r = NULL;
            CHECK_OK(zgpu_array_open(ctx, path, &r));
            char what[100];
            for (int mode = 0; r && mode < 2; mode++) {
                snprintf(what, sizeof what, "device %d, %s route, %s, fresh thread", dev, ri ? "host" : "device",
                         mode ? "async" : "sync");
                check_read(r, dev, mode, -1, what);
                if (n > 1) { /* a thread on the other GPU keeps it */
                    snprintf(what, sizeof what, "device %d, %s route, %s, thread on device %d", dev,
                             ri ? "host" : "device", mode ? "async" : "sync", 1 - dev);
                    check_read(r, dev, mode, 1 - dev, what);
                }
            }
            zgpu_array_close(r);
            zgpu_context_free(ctx);
        }
    }
    if (n < 2) printf("skipped: the two-GPU cases (this machine has one GPU)\n");
    zgpu_context_free(w);
    free(expect);
}
#endif

int main(void) {
    const int gpu = zgpu_gpu_available();
    char why[512];
    snprintf(why, sizeof why, "%s", gpu ? "" : zgpu_last_error());
#ifdef ZGPU_HAVE_CUDA
    if (gpu) {
        void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
        cu_ctx_get_current = cuda ? (int (*)(void **))dlsym(cuda, "cuCtxGetCurrent") : NULL;
        if (!cu_ctx_get_current) TEST_SKIP("no GPU (libcuda.so.1 has no cuCtxGetCurrent)");
        snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_device_scope_%d", (int)getpid());
        mkdir(tmpdir, 0755);
        cases();
        zt_remove_dir(tmpdir);
    }
#endif
    TEST_MAIN_END_GPU(gpu, why);
}
