/* Device writes that fail part way (zgpu_array_write_device and zgpu_array_write_device_async): an array written
 * once with known data (a constant a chunk), then a write whose objects are in part refused by the filesystem must
 * return an error naming the array, leave every stored object either old or new (compared chunk by chunk on a host
 * read), leave no temporary (.zgpu-tmp-) a reader could see, and let the next write succeed. Faults:
 *  - fsize: a full disk, as RLIMIT_FSIZE (SIGXFSZ ignored) makes it: writes of a file past 2 KiB fail with EFBIG. The
 *    new data has chunks of fill value (deleted: no size), constants (a few hundred bytes compressed) and noise
 *    (KiBs): some objects are replaced, some are not;
 *  - rodir: objects whose directory refuses writes: chmod 0555 of the directories of the chunks with z index 1 (v3;
 *    v2: the array's directory). Root ignores permissions (the GPU machines run tests as root), so there the same
 *    objects are made unwritable another way: each moved aside and a non-empty directory put in its place (a rename
 *    onto it fails), restored after the write.
 * For zstd, gzip, blosc, sharded zstd and uncompressed arrays, writes of the whole array and of a box not aligned to
 * chunks, synchronous and asynchronous (the failure reported through the event). Then the async API itself: errors
 * at the call with nothing started, ordering after the caller's stream, two writes in flight on one array, an event
 * freed before it completes. Then the whole writes' faults again in waves of one object each (several waves' writes
 * in flight when one fails). Skips (77) without a GPU. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "zgpu.h"

#ifndef ZGPU_HAVE_CUDA
TEST_MAIN_WITHOUT_CUDA()
#else
#include <cuda_runtime.h>

#include "codec_cases.h"

#define NZ 40
#define NY 50
#define NX 60
#define CZ 16
#define CY 20
#define CX 24
#define NEL ((size_t)NZ * NY * NX)
#define FSIZE_LIMIT 2048

static const uint64_t shape[3] = {NZ, NY, NX};
static const uint64_t zero[3] = {0, 0, 0};
/* the unaligned box: every chunk but the middle one covered in part */
static const uint64_t rstart[3] = {3, 7, 5}, rcount[3] = {30, 38, 50};
static char tmpdir[256];
static uint32_t rng = 777;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

static const struct {
    const char *name;
    char type; /* H uint16, f float32, d float64 */
} picks[] = {{"v3_zstd_u16", 'H'},
             {"v3_gzip_f64", 'd'},
             {"v3_blosc_lz4_shuffle_u16", 'H'},
             {"v3_sharded_zstd_u16", 'H'},
             {"v2_raw_f32", 'f'}};

enum { FSIZE, RODIR };

static void set_val(uint8_t *p, char t, double v) {
    if (t == 'H') {
        const uint16_t u = (uint16_t)v;
        memcpy(p, &u, 2);
    } else if (t == 'f') {
        const float f = (float)v;
        memcpy(p, &f, 4);
    } else {
        memcpy(p, &v, 8);
    }
}

static int chunk_of(size_t z, size_t y, size_t x) { return (int)(((z / CZ) * 3 + y / CY) * 3 + x / CX); }

/* old: 100 + the chunk's index everywhere in it; new: by chunk index mod 3 the fill value, 7777 or noise */
static void make_old(uint8_t *p, char t, size_t isz) {
    for (size_t i = 0; i < NEL; i++) set_val(p + i * isz, t, 100 + chunk_of(i / (NY * NX), (i / NX) % NY, i % NX));
}

static void make_new(uint8_t *p, char t, size_t isz, const uint8_t *fill) {
    for (size_t i = 0; i < NEL; i++) {
        const int k = chunk_of(i / (NY * NX), (i / NX) % NY, i % NX) % 3;
        if (k == 0) memcpy(p + i * isz, fill, isz);
        else if (k == 1) set_val(p + i * isz, t, 7777);
        else set_val(p + i * isz, t, t == 'H' ? (double)(rnd() & 0xffff) : (double)rnd() / 7.0);
    }
}

/* the box [s, s + c) of the C-ordered array a, C-ordered, into out (or from `in` into a when in is not NULL) */
static void box_copy(uint8_t *a, size_t isz, const uint64_t *s, const uint64_t *c, uint8_t *out, const uint8_t *in) {
    for (uint64_t i = 0; i < c[0]; i++)
        for (uint64_t j = 0; j < c[1]; j++) {
            uint8_t *row = a + (((s[0] + i) * NY + (s[1] + j)) * NX + s[2]) * isz;
            const size_t off = ((i * c[1] + j) * c[2]) * isz, n = c[2] * isz;
            if (in) memcpy(row, in + off, n);
            else memcpy(out + off, row, n);
        }
}

/* 1 if the chunk (cz, cy, cx) of got equals that of want, in every element inside the array */
static int chunk_equal(const uint8_t *got, const uint8_t *want, size_t isz, int cz, int cy, int cx) {
    for (size_t z = (size_t)cz * CZ; z < (size_t)(cz + 1) * CZ && z < NZ; z++)
        for (size_t y = (size_t)cy * CY; y < (size_t)(cy + 1) * CY && y < NY; y++) {
            const size_t x0 = (size_t)cx * CX, x1 = x0 + CX < NX ? x0 + CX : NX, at = ((z * NY + y) * NX + x0) * isz;
            if (memcmp(got + at, want + at, (x1 - x0) * isz) != 0) return 0;
        }
    return 1;
}

static uint8_t *to_device(const void *p, size_t n) {
    void *d = NULL;
    if (cudaMalloc(&d, n ? n : 1) != cudaSuccess) return NULL;
    if (cudaMemcpy(d, p, n, cudaMemcpyHostToDevice) != cudaSuccess) {
        cudaFree(d);
        return NULL;
    }
    return (uint8_t *)d;
}

/* ---------------------------------------------------------------------------------------------- leftovers */
static int n_tmp;
static char first_tmp[512];
static int see_tmp(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag;
    if (strstr(path + ftw->base, ".zgpu-tmp-")) {
        if (!n_tmp++) snprintf(first_tmp, sizeof first_tmp, "%s", path);
    }
    return 0;
}
static int temporaries(const char *dir) {
    n_tmp = 0;
    nftw(dir, see_tmp, 16, FTW_PHYS);
    return n_tmp;
}

/* ---------------------------------------------------------------------------------------------- faults */
static struct rlimit saved_fsize;

/* the stored object of chunk (1, y, x) */
static void object_path(char *out, size_t n, const char *arr, int v3, int y, int x) {
    if (v3) snprintf(out, n, "%s/c/1/%d/%d", arr, y, x);
    else snprintf(out, n, "%s/1.%d.%d", arr, y, x);
}

static int fault_on(int fault, const char *arr, int v3) {
    fflush(stdout);
    fflush(stderr);
    if (fault == FSIZE) {
        if (getrlimit(RLIMIT_FSIZE, &saved_fsize) != 0) return -1;
        struct rlimit r = saved_fsize;
        r.rlim_cur = FSIZE_LIMIT;
        return setrlimit(RLIMIT_FSIZE, &r);
    }
    char p[600], q[600];
    if (geteuid() != 0) {
        for (int y = 0; y < 3 && v3; y++) {
            snprintf(p, sizeof p, "%s/c/1/%d", arr, y);
            if (chmod(p, 0555) != 0) return -1;
        }
        return v3 ? 0 : chmod(arr, 0555);
    }
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++) {
            object_path(p, sizeof p, arr, v3, y, x);
            snprintf(q, sizeof q, "%s/aside_%d_%d", tmpdir, y, x);
            if (rename(p, q) != 0 || mkdir(p, 0755) != 0) return -1;
            snprintf(q, sizeof q, "%s/blocker", p);
            FILE *f = fopen(q, "w");
            if (!f) return -1;
            fputs("x", f);
            fclose(f);
        }
    return 0;
}

static int fault_off(int fault, const char *arr, int v3) {
    if (fault == FSIZE) return setrlimit(RLIMIT_FSIZE, &saved_fsize);
    char p[600], q[600];
    int bad = 0;
    if (geteuid() != 0) {
        for (int y = 0; y < 3 && v3; y++) {
            snprintf(p, sizeof p, "%s/c/1/%d", arr, y);
            bad |= chmod(p, 0755);
        }
        return v3 ? bad : chmod(arr, 0755);
    }
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++) {
            object_path(p, sizeof p, arr, v3, y, x);
            snprintf(q, sizeof q, "%s/blocker", p);
            bad |= unlink(q) | rmdir(p);
            snprintf(q, sizeof q, "%s/aside_%d_%d", tmpdir, y, x);
            bad |= rename(q, p);
        }
    return bad;
}

/* ---------------------------------------------------------------------------------------------- writes */
/* A device write, synchronous or through an event; msg: zgpu_last_error() after it. */
static zgpu_status write_dev(zgpu_array *a, const uint64_t *s, const uint64_t *c, const void *d, int async, char *msg,
                             size_t msg_n) {
    zgpu_status st;
    if (!async) {
        st = zgpu_array_write_device(a, s, c, d, NULL, NULL);
    } else {
        zgpu_event *ev = NULL;
        st = zgpu_array_write_device_async(a, s, c, d, NULL, NULL, &ev);
        if (st == ZGPU_OK) st = zgpu_event_wait(ev);
        snprintf(msg, msg_n, "%s", zgpu_last_error());
        zgpu_event_free(ev);
        return st;
    }
    snprintf(msg, msg_n, "%s", zgpu_last_error());
    return st;
}

typedef struct stats {
    int runs, n_new, n_old;
} stats;

static void scenario(zgpu_context *ctx, const tcase *c, char type, int fault, int partial, int async, stats *sum) {
    char arr[512], msg[2048];
    const int v3 = strstr(c->meta, "\"zarr_format\": 3") != NULL;
    const int blocked_dir = fault == RODIR && geteuid() != 0 && !v3; /* the whole array directory read-only */
    snprintf(arr, sizeof arr, "%s/%s_%s_%s_%s", tmpdir, c->name, fault == FSIZE ? "fsize" : "rodir",
             partial ? "box" : "whole", async ? "async" : "sync");
    const char *what = arr + strlen(tmpdir) + 1;
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, arr, c->meta, 1, &a));
    if (!a) return;
    const size_t isz = zgpu_array_itemsize(a), nb = NEL * isz;
    uint8_t *old = malloc(nb), *fresh = malloc(nb), *want = malloc(nb), *got = malloc(nb), *box = malloc(nb);
    make_old(old, type, isz);
    make_new(fresh, type, isz, zgpu_array_fill_value(a));
    /* the old array, written whole and then its box rewritten with the same values (each path of the write, the
     * merge's read of partly covered chunks included, has run once before any fault: nothing the GPU path first
     * does, such as caching a compiled kernel, meets the fault) */
    uint8_t *d_old = to_device(old, nb);
    CHECK_MSG(d_old != NULL, "%s: cudaMalloc", what);
    zgpu_status st = zgpu_array_write_device(a, zero, shape, d_old, NULL, NULL);
    CHECK_MSG(st == ZGPU_OK, "%s: old data -> %s: %s", what, zgpu_status_name(st), zgpu_last_error());
    box_copy(old, isz, rstart, rcount, box, NULL);
    uint8_t *d_box = to_device(box, nb);
    st = zgpu_array_write_device(a, rstart, rcount, d_box, NULL, NULL);
    CHECK_MSG(st == ZGPU_OK, "%s: old box -> %s: %s", what, zgpu_status_name(st), zgpu_last_error());
    cudaFree(d_box);
    /* the new values: the whole array, or the old one with the box replaced */
    const uint64_t *ws = partial ? rstart : zero, *wc = partial ? rcount : shape;
    memcpy(want, partial ? old : fresh, nb);
    if (partial) {
        box_copy(fresh, isz, rstart, rcount, box, NULL);
        box_copy(want, isz, rstart, rcount, NULL, box);
    }
    uint8_t *d_new = to_device(partial ? box : fresh, nb);
    CHECK_MSG(d_new != NULL, "%s: cudaMalloc", what);

    /* the faulty write (nothing printed while a file size limit is on: stdout may be a file) */
    const int on = fault_on(fault, arr, v3);
    st = on == 0 ? write_dev(a, ws, wc, d_new, async, msg, sizeof msg) : ZGPU_ERR_INTERNAL;
    const int off = fault_off(fault, arr, v3);
    CHECK_MSG(on == 0 && off == 0, "%s: could not set up or undo the fault: %s", what, strerror(errno));
    CHECK_MSG(st != ZGPU_OK, "%s: the write did not fail", what);
    CHECK_MSG(strstr(msg, what) != NULL, "%s: the error does not name the array: %s", what, msg);
    if (fault == FSIZE) CHECK_MSG(strstr(msg, "File too large") != NULL, "%s: not EFBIG: %s", what, msg);

    /* every object old or new */
    CHECK_OK(zgpu_array_read(a, zero, shape, got, NULL));
    int n_new = 0, n_old = 0;
    for (int cz = 0; cz < 3; cz++)
        for (int cy = 0; cy < 3; cy++)
            for (int cx = 0; cx < 3; cx++) {
                const int is_new = chunk_equal(got, want, isz, cz, cy, cx), is_old = chunk_equal(got, old, isz, cz, cy, cx);
                CHECK_MSG(is_new || is_old, "%s: chunk (%d, %d, %d) is neither old nor new", what, cz, cy, cx);
                n_new += is_new && !is_old;
                n_old += is_old;
                /* objects that cannot have been replaced: noise chunks of a whole write (KiBs past the limit),
                 * the objects the directory fault blocks */
                const int k = (cz * 3 + cy) * 3 + cx;
                if (fault == FSIZE && !partial && k % 3 == 2 && cz < 2 && cy < 2 && cx < 2)
                    CHECK_MSG(is_old, "%s: chunk (%d, %d, %d) of noise was written past the size limit", what, cz, cy, cx);
                if (fault == RODIR && (cz == 1 || blocked_dir))
                    CHECK_MSG(is_old, "%s: chunk (%d, %d, %d) was replaced in a directory that refuses it", what, cz,
                              cy, cx);
            }
    CHECK_MSG(n_old > 0, "%s: no object stayed old", what);
    CHECK_MSG(temporaries(arr) == 0, "%s: %d temporaries left, e.g. %s", what, n_tmp, first_tmp);

    /* the same write again, the fault gone */
    char msg2[2048];
    st = write_dev(a, ws, wc, d_new, async, msg2, sizeof msg2);
    CHECK_MSG(st == ZGPU_OK, "%s: the write after the fault -> %s: %s", what, zgpu_status_name(st), msg2);
    CHECK_OK(zgpu_array_read(a, zero, shape, got, NULL));
    CHECK_MSG(memcmp(got, want, nb) == 0, "%s: the write after the fault reads back wrong", what);
    CHECK_MSG(temporaries(arr) == 0, "%s: %d temporaries left after the second write", what, n_tmp);

    const char *tail = strrchr(msg, ':');
    printf("%-44s %2d new, %2d old; error ...%s; rewritten\n", what, n_new, n_old, tail ? tail : msg);
    sum->runs++;
    sum->n_new += n_new;
    sum->n_old += n_old;
    cudaFree(d_old);
    cudaFree(d_new);
    free(old);
    free(fresh);
    free(want);
    free(got);
    free(box);
    zgpu_array_close(a);
}

/* ---------------------------------------------------------------------------------------------- the async API */
static void CUDART_CB slow_host_fn(void *arg) {
    (void)arg;
    usleep(100 * 1000);
}

static void async_api(zgpu_context *ctx) {
    const tcase *c = NULL;
    for (size_t i = 0; i < N_CASES; i++)
        if (!strcmp(cases[i].name, "v3_zstd_u16")) c = &cases[i];
    char arr[512];
    snprintf(arr, sizeof arr, "%s/async_api", tmpdir);
    zgpu_array *a = NULL;
    CHECK_OK(zgpu_array_create(ctx, arr, c->meta, 1, &a));
    if (!a) return;
    const size_t isz = 2, nb = NEL * isz;
    uint8_t *old = malloc(nb), *fresh = malloc(nb), *want = malloc(nb), *got = malloc(nb), *box = malloc(nb);
    make_old(old, 'H', isz);
    make_new(fresh, 'H', isz, zgpu_array_fill_value(a));
    uint8_t *d = to_device(old, nb);

    /* errors at the call: nothing started, *event NULL */
    zgpu_event *ev = (zgpu_event *)&ev;
    const uint64_t far[3] = {39, 0, 0}, two[3] = {2, 1, 1};
    const int64_t zs[3] = {0, 2, 2};
    CHECK_STATUS(zgpu_array_write_device_async(a, zero, shape, d, NULL, NULL, NULL), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(zgpu_array_write_device_async(a, far, two, d, NULL, NULL, &ev), ZGPU_ERR_OUT_OF_RANGE);
    CHECK(ev == NULL);
    CHECK(strstr(zgpu_last_error(), "async_api") != NULL);
    ev = (zgpu_event *)&ev;
    CHECK_STATUS(zgpu_array_write_device_async(a, zero, two, d, zs, NULL, &ev), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(ev == NULL);
    CHECK_STATUS(zgpu_array_write_device_async(a, zero, shape, NULL, NULL, NULL, &ev), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(zgpu_array_write_device_async(NULL, zero, shape, d, NULL, NULL, &ev), ZGPU_ERR_INVALID_ARGUMENT);

    /* a whole write, then ordering: device_in filled on the caller's stream after a 100 ms host function, and the
     * write queued right behind it must see the new values, not the old ones left in the buffer */
    CHECK_OK(zgpu_array_write_device(a, zero, shape, d, NULL, NULL));
    cudaStream_t s = NULL;
    CUOK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    uint8_t *pinned = NULL;
    CUOK(cudaHostAlloc((void **)&pinned, nb, cudaHostAllocDefault));
    memcpy(pinned, fresh, nb);
    CUOK(cudaLaunchHostFunc(s, slow_host_fn, NULL));
    CUOK(cudaMemcpyAsync(d, pinned, nb, cudaMemcpyHostToDevice, s));
    ev = NULL;
    CHECK_OK(zgpu_array_write_device_async(a, zero, shape, d, NULL, s, &ev));
    CHECK(zgpu_event_query(ev) == 0); /* (the host function still sleeps) */
    CHECK_OK(zgpu_event_wait(ev));
    CHECK(zgpu_event_query(ev) == 1);
    CHECK_OK(zgpu_event_wait(ev)); /* again: the same status */
    zgpu_event_free(ev);
    CHECK_OK(zgpu_array_read(a, zero, shape, got, NULL));
    CHECK_MSG(memcmp(got, fresh, nb) == 0, "async write after work on the caller's stream reads back wrong");

    /* two writes in flight on one array, boxes sharing chunks (z 16..31 in both), from F-ordered buffers */
    memcpy(want, fresh, nb);
    const uint64_t s1[3] = {0, 3, 1}, c1[3] = {20, 40, 50}, s2[3] = {20, 5, 9}, c2[3] = {20, 45, 51};
    uint8_t *dev_box[2] = {NULL, NULL};
    zgpu_event *evs[2] = {NULL, NULL};
    for (int w = 0; w < 2; w++) {
        const uint64_t *bs = w ? s2 : s1, *bc = w ? c2 : c1;
        uint8_t *bf = malloc(nb);
        for (uint64_t i = 0; i < bc[0]; i++)
            for (uint64_t j = 0; j < bc[1]; j++)
                for (uint64_t k = 0; k < bc[2]; k++) {
                    const uint16_t v = (uint16_t)(1000 * (w + 1) + ((i + j + k) & 255));
                    memcpy(box + ((i * bc[1] + j) * bc[2] + k) * 2, &v, 2);
                    memcpy(bf + ((k * bc[1] + j) * bc[0] + i) * 2, &v, 2);
                }
        box_copy(want, isz, bs, bc, NULL, box);
        dev_box[w] = to_device(bf, bc[0] * bc[1] * bc[2] * 2);
        const int64_t fs[3] = {2, (int64_t)(2 * bc[0]), (int64_t)(2 * bc[0] * bc[1])};
        CHECK_OK(zgpu_array_write_device_async(a, bs, bc, dev_box[w], fs, NULL, &evs[w]));
        free(bf);
    }
    CHECK_OK(zgpu_event_wait(evs[1]));
    CHECK_OK(zgpu_event_wait(evs[0]));
    zgpu_event_free(evs[0]);
    zgpu_event_free(evs[1]);
    CHECK_OK(zgpu_array_read(a, zero, shape, got, NULL));
    CHECK_MSG(memcmp(got, want, nb) == 0, "two async writes in flight on one array read back wrong");

    /* an event freed before it completes: the free waits for the write */
    ev = NULL;
    CHECK_OK(zgpu_array_write_device_async(a, zero, shape, d, NULL, NULL, &ev));
    zgpu_event_free(ev);
    CHECK_OK(zgpu_array_read(a, zero, shape, got, NULL));
    CHECK_MSG(memcmp(got, fresh, nb) == 0, "an async write whose event was freed at once reads back wrong");
    /* an empty box: an event that completes with success */
    const uint64_t none[3] = {0, 0, 0};
    ev = NULL;
    CHECK_OK(zgpu_array_write_device_async(a, zero, none, d, NULL, NULL, &ev));
    CHECK_OK(zgpu_event_wait(ev));
    zgpu_event_free(ev);
    printf("%-44s errors at the call, ordering after the caller's stream, two in flight, early free\n",
           "async API");

    cudaFree(dev_box[0]);
    cudaFree(dev_box[1]);
    cudaFreeHost(pinned);
    cudaStreamDestroy(s);
    cudaFree(d);
    free(old);
    free(fresh);
    free(want);
    free(got);
    free(box);
    zgpu_array_close(a);
}

int main(void) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)zt_pass, (void)zt_fail;
        TEST_SKIP("no GPU");
    }
    signal(SIGXFSZ, SIG_IGN); /* a write past RLIMIT_FSIZE fails with EFBIG instead of killing the process */
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zgpu_test_gpu_write_faults_%d", (int)getpid());
    mkdir(tmpdir, 0755);
    zgpu_context *ctx = NULL;
    CHECK_OK(zgpu_context_create(NULL, &ctx));
    if (!ctx) TEST_MAIN_END();
    printf("directory fault: %s\n", geteuid() == 0 ? "objects replaced by directories (running as root)"
                                                    : "chmod 0555");
    stats sum = {0, 0, 0};
    for (size_t p = 0; p < sizeof picks / sizeof picks[0]; p++) {
        const tcase *c = NULL;
        for (size_t i = 0; i < N_CASES; i++)
            if (!strcmp(cases[i].name, picks[p].name)) c = &cases[i];
        CHECK_MSG(c != NULL, "no case %s in codec_cases.h", picks[p].name);
        if (!c) continue;
        for (int fault = FSIZE; fault <= RODIR; fault++)
            for (int partial = 0; partial < 2; partial++)
                for (int async = 0; async < 2; async++) scenario(ctx, c, picks[p].type, fault, partial, async, &sum);
    }
    printf("%d failed writes: %d objects new, %d old, none mixed\n", sum.runs, sum.n_new, sum.n_old);
    async_api(ctx);
    zgpu_context_free(ctx);
    /* whole writes again in waves of one object each (tuning write_wave_bytes 1, 8 threads): the failure meets
     * the writes of several waves in flight on the four buffer sets */
    zgpu_status made;
    ctx = zt_context_waves_of_one(&made);
    CHECK_OK(made);
    stats waves = {0, 0, 0};
    for (size_t p = 0; ctx && p < sizeof picks / sizeof picks[0]; p++)
        for (size_t i = 0; i < N_CASES; i++)
            if (!strcmp(cases[i].name, picks[p].name))
                for (int fault = FSIZE; fault <= RODIR; fault++)
                    for (int async = 0; async < 2; async++)
                        scenario(ctx, &cases[i], picks[p].type, fault, 0, async, &waves);
    printf("in waves of one object: %d failed writes: %d objects new, %d old, none mixed\n", waves.runs, waves.n_new,
           waves.n_old);
    CHECK(waves.n_new > 0 && waves.n_old > 0);
    zgpu_context_free(ctx);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", tmpdir, tmpdir);
    if (system(cmd) != 0) printf("could not remove %s\n", tmpdir);
    TEST_MAIN_END();
}
#endif
