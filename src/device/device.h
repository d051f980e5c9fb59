/* The device executor's entry points, as seen from the rest of zgpu (plain C, no CUDA headers). Device
 * state lives in ctx->device: created on the first device read under ctx->device_lock, freed by
 * zgpu_context_free through zg_device_state_free. Without CUDA, src/api/device_api.c provides stubs. */
#ifndef ZG_CUDA_DEVICE_H
#define ZG_CUDA_DEVICE_H
#include <stdint.h>
#include "route/route.h"
#include "zgpu.h"

struct zg_device_state;
struct zgpu_event;
struct zg_plan;

/* What an automatic route pick of a host read decoded on the GPU (or declined) leaves to be learnt once the read's
 * whole time is known, the copy back or the host read included (valid 0: nothing to learn: a forced route, a remote
 * store, a read served partly from a cache). */
typedef struct zg_host_lesson {
    int valid;
    zg_route_pick pick;
    double t_pick; /* seconds the pick itself took (the process's first one measures the model): left out */
    struct zg_plan *plan; /* NULL, or (a sharded array on a local store, no cache) the boxes' plan, resolved: the host
                           * read takes it over (zg_host_read_regions_planned) and the caller frees the struct */
} zg_host_lesson;

/* The boxes of one device read and their destinations: n = 1 for zgpu_array_read_device, n for
 * zgpu_array_read_regions_device (one plan: a chunk several boxes need is fetched and decoded once). */
typedef struct zg_dev_request {
    size_t n;
    const uint64_t *starts, *counts; /* n * ndim */
    void *const *outs;               /* n device pointers */
    const int64_t *strides;          /* n * ndim byte strides, or NULL: each destination C-contiguous */
    void *after;                     /* a cudaEvent_t the read's work waits for (the caller's stream at an async
                                      * read's start), or NULL */
    const zgpu_read_options *opts;   /* NULL: the stored values; else converted (convert/convert.h) */
    /* a host read decoded on the GPU (host_dest.c): outs are device scratch whose bytes go back to host memory.
     * The route is tuning.host_read_route's, the model counts the copy back, and where the host route wins (or the
     * chain has no GPU decoder, or a conversion needs the host) the read does nothing and sets *declined: the
     * caller reads on the host instead */
    int host_dest;
    int *declined;
    zg_host_lesson *lesson; /* host_dest: the pick to learn from, set by the read */
} zg_dev_request;

/** Frees the state (waits for reads in flight). Accepts NULL. */
void zg_device_state_free(struct zg_device_state *st);

#ifdef ZGPU_HAVE_CUDA
/** ZGPU_OK if a CUDA device is usable; else ZGPU_ERR_NO_GPU "no CUDA device: <cuda error string>". */
zgpu_status zg_cuda_probe(void);
/** A request of any number of boxes: synchronous (event NULL: returns when the data is in place and `stream` is
 *  ordered after it) or asynchronous (the request is copied; *event completes when the data is in place). */
/* A device write (write_device.c), with the array's device current. */
zgpu_status zg_device_write(zgpu_array *a, const uint64_t *start, const uint64_t *count, const void *d_in,
                            const int64_t *in_strides, void *stream);
zgpu_status zg_cuda_read_request(zgpu_array *a, const zg_dev_request *rq, void *stream, struct zgpu_event **event);
/** A host read decoded on the GPU where zgpu_tuning.host_read_route and the route model say so (host_dest.c):
 *  *taken 1 and the read's status, or *taken 0 and ZGPU_OK when the host should read it (no GPU started, a
 *  strided destination, more than the device memory budget, the model's pick, a forked child). */
zgpu_status zg_cuda_host_read(zgpu_array *a, size_t n, const uint64_t *starts, const uint64_t *counts,
                              void *const *outs, const int64_t *out_strides, const zgpu_read_options *opts, int *taken,
                              zg_host_lesson *lesson);
/** A host read's lesson: its route (the host executor's read, or the device read and the copy back) took `seconds`,
 *  which the model learns as device reads teach theirs. Nothing when lesson->valid is 0. */
void zg_cuda_host_read_learn(zgpu_array *a, const zg_host_lesson *lesson, double seconds);
/** Slabs the host route of device reads has planned since the process started (tests; device/host_route.c), those
 *  copied as the host read reported them written, and those copied after it (the read's last quarter, in one copy
 *  per run of them; a read copied whole plans none). */
void dev_host_route_slabs(unsigned long *planned, unsigned long *reported, unsigned long *after);
/* An async device write (write_async.c), with the array's device current: arguments checked, then the write runs
 * on a background thread after the work on `stream` so far; *event completes when it is done. */
zgpu_status zg_device_write_async(zgpu_array *a, const uint64_t *start, const uint64_t *count, const void *d_in,
                                  const int64_t *in_strides, void *stream, struct zgpu_event **event);
/* An event whose thread runs run(arg) (its status and message the event's); release(arg) when the event is freed.
 * On failure nothing was started and the caller keeps arg. */
zgpu_status zg_event_start(zgpu_array *a, zgpu_status (*run)(void *), void (*release)(void *), void *arg,
                           struct zgpu_event **event);
/* The calling thread's CUDA context, saved by zg_device_scope_enter (which makes `device` current) and put back by
 * zg_device_scope_leave: a public device call leaves the caller's current device (or none) as it found it, so a
 * thread may read into several GPUs in turn, and one that never used CUDA gets no context made current. */
typedef struct zg_device_scope {
    void *saved;  /* restore 1: the CUcontext current at entry (NULL: none); 2: the runtime's device + 1 */
    int restore;  /* 0: nothing to put back (the device was current already); 1 or 2: as `saved` says */
} zg_device_scope;
zgpu_status zg_device_scope_enter(int device, zg_device_scope *sc);
void zg_device_scope_leave(zg_device_scope *sc);
zgpu_status zg_cuda_event_wait(struct zgpu_event *ev);
int zg_cuda_event_query(struct zgpu_event *ev);
void zg_cuda_event_free(struct zgpu_event *ev);
#endif

#endif
