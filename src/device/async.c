/* Async reads and zgpu_event (which async writes, write_async.c, share through zg_event_start). */
#include "device/job.h"

/* ------------------------------------------------------------------------------------------------
 * Async reads: a background thread runs the read; the caller's stream waits for it through a host
 * function, so later work on that stream is ordered after the data is in place.
 * ---------------------------------------------------------------------------------------------- */
struct zgpu_event {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, joined;
    zgpu_status status;
    char msg[ZG_ERRMSG_MAX];
    zgpu_array *a;
    zg_dev_request rq;  /* the caller's, copied: its arrays point into `copy` */
    void *copy;
    void *stream;
    cudaEvent_t after;  /* recorded on the caller's stream at the start: the read's work waits for it (so nothing
                         * here waits for the caller's earlier work on the host) */
    zgpu_read_options opts; /* the caller's, copied (rq.opts points here) */
    /* not a read (zg_event_start): the thread runs run(arg); release(arg) once the event is freed */
    zgpu_status (*run)(void *);
    void (*release)(void *);
    void *arg;
};

static void *async_main(void *arg) {
    struct zgpu_event *ev = arg;
    zgpu_status s = ev->run ? ev->run(ev->arg) : dev_run_read(ev->a, &ev->rq, NULL, 0);
    pthread_mutex_lock(&ev->mu);
    ev->status = s;
    if (s != ZGPU_OK) zg_error_save(ev->msg);
    ev->done = 1;
    pthread_cond_broadcast(&ev->cv);
    pthread_mutex_unlock(&ev->mu);
    return NULL;
}

static void CUDART_CB stream_gate(void *arg) {
    struct zgpu_event *ev = arg;
    pthread_mutex_lock(&ev->mu);
    while (!ev->done) pthread_cond_wait(&ev->cv, &ev->mu);
    pthread_mutex_unlock(&ev->mu);
}

/* The request copied into one block (the caller's arrays need not outlive the call). */
static zgpu_status copy_request(struct zgpu_event *ev, const zg_dev_request *rq, int nd) {
    const size_t n = rq->n, box = n * (size_t)nd * sizeof(uint64_t);
    uint8_t *p = ev->copy = malloc(2 * box + n * sizeof(void *) + (rq->strides ? box : 0) + 1);
    ZG_RETURN_IF(!p, ZGPU_ERR_NO_MEMORY, "out of host memory for an async read of %zu regions", n);
    ev->rq.n = n;
    ev->rq.starts = memcpy(p, rq->starts, box);
    ev->rq.counts = memcpy(p + box, rq->counts, box);
    ev->rq.outs = memcpy(p + 2 * box, rq->outs, n * sizeof(void *));
    ev->rq.strides = rq->strides ? memcpy(p + 2 * box + n * sizeof(void *), rq->strides, box) : NULL;
    ev->rq.after = NULL;
    ev->rq.opts = NULL;
    if (rq->opts) { /* (as much of it as both know: zgpu_read_options grows at its end) */
        const size_t k = rq->opts->struct_size < sizeof ev->opts ? rq->opts->struct_size : sizeof ev->opts;
        memcpy(&ev->opts, rq->opts, k);
        ev->rq.opts = &ev->opts;
    }
    return ZGPU_OK;
}


zgpu_status zg_cuda_read_request(zgpu_array *a, const zg_dev_request *rq, void *stream, struct zgpu_event **event) {
    if (!event) return dev_run_read(a, rq, stream, 1);
    struct zgpu_event *ev = calloc(1, sizeof *ev);
    ZG_RETURN_IF(!ev, ZGPU_ERR_NO_MEMORY, "out of host memory for an event");
    if (copy_request(ev, rq, a->meta.ndim) != ZGPU_OK) {
        free(ev);
        return ZGPU_ERR_NO_MEMORY;
    }
    ev->a = a;
    ev->stream = stream;
    pthread_mutex_init(&ev->mu, NULL);
    pthread_cond_init(&ev->cv, NULL);
    /* Work queued on `stream` before this call must finish before the read writes: an event recorded on it now,
     * which the read's stream waits for on the device (the read runs on zgpu's own stream); then later work on
     * `stream` waits for the read through a host function. */
    cudaError_t ce = cudaEventCreateWithFlags(&ev->after, cudaEventDisableTiming);
    if (ce == cudaSuccess) ce = cudaEventRecord(ev->after, (cudaStream_t)stream);
    if (ce == cudaSuccess) ev->rq.after = ev->after;
    if (ce == cudaSuccess) ce = cudaLaunchHostFunc((cudaStream_t)stream, stream_gate, ev);
    if (ce != cudaSuccess) {
        if (ev->after) cudaEventDestroy(ev->after);
        pthread_cond_destroy(&ev->cv);
        pthread_mutex_destroy(&ev->mu);
        free(ev->copy);
        free(ev);
        return zg_error(ZGPU_ERR_CUDA, "CUDA error starting an async read: %s", cudaGetErrorString(ce));
    }
    if (pthread_create(&ev->thread, NULL, async_main, ev) != 0) {
        pthread_mutex_lock(&ev->mu);
        ev->done = 1;
        ev->joined = 1;
        ev->status = ZGPU_ERR_INTERNAL;
        snprintf(ev->msg, sizeof ev->msg, "could not start the async read thread");
        pthread_cond_broadcast(&ev->cv);
        pthread_mutex_unlock(&ev->mu);
    }
    *event = ev;
    return ZGPU_OK;
}

zgpu_status zg_event_start(zgpu_array *a, zgpu_status (*run)(void *), void (*release)(void *), void *arg,
                           struct zgpu_event **event) {
    struct zgpu_event *ev = calloc(1, sizeof *ev);
    ZG_RETURN_IF(!ev, ZGPU_ERR_NO_MEMORY, ZG_ARRAY_WHERE_FMT ": out of host memory for an event", a->path);
    ev->a = a;
    ev->run = run;
    ev->release = release;
    ev->arg = arg;
    pthread_mutex_init(&ev->mu, NULL);
    pthread_cond_init(&ev->cv, NULL);
    const int e = pthread_create(&ev->thread, NULL, async_main, ev);
    if (e != 0) { /* nothing started: the caller still owns arg */
        pthread_cond_destroy(&ev->cv);
        pthread_mutex_destroy(&ev->mu);
        free(ev);
        return zg_error(ZGPU_ERR_INTERNAL, ZG_ARRAY_WHERE_FMT ": could not start a background thread: %s", a->path,
                        strerror(e));
    }
    *event = ev;
    return ZGPU_OK;
}

zgpu_status zg_cuda_event_wait(struct zgpu_event *ev) {
    pthread_mutex_lock(&ev->mu);
    while (!ev->done) pthread_cond_wait(&ev->cv, &ev->mu);
    int join = !ev->joined;
    ev->joined = 1;
    pthread_mutex_unlock(&ev->mu);
    if (join) pthread_join(ev->thread, NULL);
    if (ev->status != ZGPU_OK) zg_error_restore(ev->msg);
    return ev->status;
}

int zg_cuda_event_query(struct zgpu_event *ev) {
    pthread_mutex_lock(&ev->mu);
    int d = ev->done;
    pthread_mutex_unlock(&ev->mu);
    return d;
}

void zg_cuda_event_free(struct zgpu_event *ev) {
    zg_cuda_event_wait(ev);
    if (ev->run) { /* no host function on the caller's stream to wait for */
        if (ev->release) ev->release(ev->arg);
        pthread_cond_destroy(&ev->cv);
        pthread_mutex_destroy(&ev->mu);
        free(ev);
        return;
    }
    zg_device_scope sc; /* (the caller's stream and the event are the read's device's; the caller's stays current) */
    const int scoped = zg_device_scope_enter(ev->a->ctx->opts.device, &sc) == ZGPU_OK;
    /* the stream's host function may still be about to return: wait for the stream to pass it */
    cudaStreamSynchronize((cudaStream_t)ev->stream);
    if (ev->after) cudaEventDestroy(ev->after);
    if (scoped) zg_device_scope_leave(&sc);
    pthread_cond_destroy(&ev->cv);
    pthread_mutex_destroy(&ev->mu);
    free(ev->copy);
    free(ev);
}
