/* Async device writes (zgpu_array_write_device_async): the arguments are checked on the caller's thread, then
 * zg_device_write runs on a background thread behind a zgpu_event (async.c's, through zg_event_start).
 *
 * Ordering: an event recorded on the caller's stream at the call, which the write's own stream waits for, orders the
 * write after the work already queued there (the work that produced device_in) without blocking the caller. The
 * write runs on a stream of its own, non-blocking: the caller's stream may be the legacy default stream, which the
 * caller keeps using meanwhile, and a per-thread default stream names another stream on the background thread.
 * Later work on the caller's stream is not ordered after the write (the caller waits for the event before changing
 * device_in): no host function blocks the caller's stream, so nothing the write does (allocations that synchronise
 * the device, the read of a partly covered chunk) can wait on work queued behind such a gate. */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "api/array.h"
#include "common/status.h"
#include "device/device.h"
#include "plan/plan.h"

typedef struct wa_job {
    zgpu_array *a;
    int device;
    uint64_t start[ZGPU_MAX_DIMS], count[ZGPU_MAX_DIMS];
    int64_t strides[ZGPU_MAX_DIMS];
    int strided; /* the caller gave strides (else C-contiguous) */
    const void *d_in;
    cudaStream_t stream; /* the write's own (destroyed when it ends) */
    cudaEvent_t after;   /* recorded on the caller's stream at the call */
} wa_job;

/* The stream and event, on the job's device (the calling thread's current one when `scoped` is 0). */
static void drop_cuda(wa_job *j, int scoped) {
    if (!j->stream && !j->after) return;
    zg_device_scope sc;
    const int in = scoped && zg_device_scope_enter(j->device, &sc) == ZGPU_OK;
    if (j->stream) cudaStreamDestroy(j->stream); /* (work still queued completes first: CUDA defers the destroy) */
    if (j->after) cudaEventDestroy(j->after);
    j->stream = NULL;
    j->after = NULL;
    if (in) zg_device_scope_leave(&sc);
}

static zgpu_status run(void *arg) {
    wa_job *j = arg;
    zg_device_scope sc; /* a new thread: no context current until the array's device is made so */
    zgpu_status s = zg_device_scope_enter(j->device, &sc);
    if (s != ZGPU_OK) {
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ": async device write: ", j->a->path);
        return s;
    }
    s = zg_device_write(j->a, j->start, j->count, j->d_in, j->strided ? j->strides : NULL, j->stream);
    /* zg_device_write synchronises the stream on every path that queued work; this covers the others (its own
     * argument checks) so that the event never completes before the stream's wait for `after` is done */
    cudaStreamSynchronize(j->stream);
    drop_cuda(j, 0);
    zg_device_scope_leave(&sc);
    return s;
}

static void release(void *arg) {
    wa_job *j = arg;
    drop_cuda(j, 1); /* (only where the thread could not make the device current) */
    free(j);
}

static zgpu_status check_box(const zgpu_array *a, const uint64_t *start, const uint64_t *count) {
    for (int d = 0; d < a->meta.ndim; d++)
        if (start[d] > a->meta.shape[d] || count[d] > a->meta.shape[d] - start[d])
            return zg_error(ZGPU_ERR_OUT_OF_RANGE,
                            ZG_ARRAY_WHERE_FMT ": selection [%llu, %llu) on axis %d is outside the shape %llu", a->path,
                            (unsigned long long)start[d], (unsigned long long)(start[d] + count[d]), d,
                            (unsigned long long)a->meta.shape[d]);
    return ZGPU_OK;
}

zgpu_status zg_device_write_async(zgpu_array *a, const uint64_t *start, const uint64_t *count, const void *d_in,
                                  const int64_t *in_strides, void *stream, struct zgpu_event **event) {
    /* everything that can be known now fails now, with nothing started */
    const int nd = a->meta.ndim;
    ZG_RETURN_IF(!d_in || (nd > 0 && (!start || !count)), ZGPU_ERR_INVALID_ARGUMENT,
                 ZG_ARRAY_WHERE_FMT ": zgpu_array_write_device_async: start, count and device_in are required",
                 a->path);
    ZG_FORWARD(zg_array_check_writable(a, "zgpu_array_write_device_async"));
    ZG_FORWARD(check_box(a, start, count));
    int64_t resolved[ZGPU_MAX_DIMS];
    ZG_FORWARD(zg_resolve_strides(a, count, in_strides, resolved));

    wa_job *j = calloc(1, sizeof *j);
    ZG_RETURN_IF(!j, ZGPU_ERR_NO_MEMORY, ZG_ARRAY_WHERE_FMT ": out of host memory for an async device write",
                 a->path);
    j->a = a;
    j->device = a->ctx->opts.device;
    j->d_in = d_in;
    if (nd > 0) {
        memcpy(j->start, start, (size_t)nd * sizeof *start);
        memcpy(j->count, count, (size_t)nd * sizeof *count);
    }
    if (in_strides) memcpy(j->strides, resolved, (size_t)nd * sizeof *resolved);
    j->strided = in_strides != NULL;
    cudaError_t ce = cudaStreamCreateWithFlags(&j->stream, cudaStreamNonBlocking);
    if (ce == cudaSuccess) ce = cudaEventCreateWithFlags(&j->after, cudaEventDisableTiming);
    if (ce == cudaSuccess) ce = cudaEventRecord(j->after, (cudaStream_t)stream);
    if (ce == cudaSuccess) ce = cudaStreamWaitEvent(j->stream, j->after, 0);
    zgpu_status s = ZGPU_OK;
    if (ce != cudaSuccess)
        s = zg_error(ZGPU_ERR_CUDA, ZG_ARRAY_WHERE_FMT ": CUDA error starting an async device write: %s", a->path,
                     cudaGetErrorString(ce));
    if (s == ZGPU_OK) s = zg_event_start(a, run, release, j, event);
    if (s != ZGPU_OK) {
        drop_cuda(j, 0);
        free(j);
    }
    return s;
}
