/* Device state: the context's CUDA streams, events and buffer sets (pinned staging and device buffers, grown
 * in stream order and reused across reads), the kept zstd plans, and the probe.
 *
 * fork(): CUDA does not survive it. A child of a process that initialised CUDA has the parent's context, streams
 * and memory in name only: every CUDA call there fails (cudaErrorInitializationError) or worse. So zgpu remembers
 * which process made its first CUDA call, and in any other process (a forked child, e.g. a DataLoader worker)
 * refuses device reads before calling CUDA at all, saying why, and never frees the parent's state with CUDA
 * calls. A child whose parent never used CUDA through zgpu initialises it on its first device read, as any
 * process does (nothing else of zgpu calls CUDA: not loading, contexts, or host reads). */
/* unistd.h for getpid(); its pipe() would clash with job.h's `pipe` type, so it is declared under another name */
#define pipe zg_unistd_pipe
#include <unistd.h>
#undef pipe

#include "device/job.h"

/* The process that made zgpu's first CUDA call (0: none yet, or only probes that found no device). */
static atomic_int cuda_pid;

static zgpu_status forked_error(int owner) {
    return zg_error(ZGPU_ERR_CUDA,
                    "CUDA was initialised before fork() (by process %d, this one's ancestor): a forked child cannot "
                    "use it for device reads. Start worker processes with the 'spawn' or 'forkserver' start method "
                    "(multiprocessing.set_start_method, or DataLoader(multiprocessing_context=...)), or keep the "
                    "parent free of CUDA until its workers are started (zgpu itself touches CUDA only on device reads)",
                    owner);
}

/* ZGPU_OK, or the refusal above when another process (an ancestor) initialised CUDA through zgpu. */
static zgpu_status check_not_forked(void) {
    int owner = atomic_load(&cuda_pid);
    if (owner && owner != (int)getpid()) return forked_error(owner);
    return ZGPU_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Probe
 * ---------------------------------------------------------------------------------------------- */
zgpu_status zg_cuda_probe(void) {
    ZG_FORWARD(check_not_forked());
    const int me = (int)getpid();
    int none = 0;
    /* marked before the call: a fork while it runs must already see this process as CUDA's */
    const int marked = atomic_compare_exchange_strong(&cuda_pid, &none, me);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) return ZGPU_OK;
    if (marked) { /* no device: nothing a child could inherit */
        int mine = me;
        atomic_compare_exchange_strong(&cuda_pid, &mine, 0);
    }
    if (e == cudaErrorInitializationError) /* what CUDA answers in a child of a process that used it */
        return zg_error(ZGPU_ERR_CUDA,
                        "CUDA initialisation failed (%s): the usual cause is that a parent process initialised CUDA "
                        "(through zgpu, PyTorch, CuPy, ...) before fork(); start worker processes with the 'spawn' or "
                        "'forkserver' start method, or keep the parent free of CUDA until they are started",
                        cudaGetErrorString(e));
    if (e != cudaSuccess) return zg_error(ZGPU_ERR_NO_GPU, "no CUDA device: %s", cudaGetErrorString(e));
    return zg_error(ZGPU_ERR_NO_GPU, "no CUDA device: %s", cudaGetErrorString(cudaErrorNoDevice));
}

/* For the Python package (ctypes; in no header, CUDA builds only): the probe, run before the package allocates
 * device memory itself (cudaMalloc through ctypes, CuPy, PyTorch), so that a forked child gets the refusal above
 * rather than CUDA's bare "initialization error", and a parent is marked as CUDA's before its first CUDA call. */
ZGPU_API zgpu_status zg_cuda_claim(void) { return zg_cuda_probe(); }

/* ------------------------------------------------------------------------------------------------
 * Device scope: the caller's current context, saved and put back around a public call
 * ---------------------------------------------------------------------------------------------- */
/* The driver's cuCtxGetCurrent / cuCtxSetCurrent, reached through the runtime (zgpu links no libcuda): the
 * runtime can set a device but not say whether a thread had one, nor go back to "none". */
typedef int (*ctx_get_fn)(void **ctx);
typedef int (*ctx_set_fn)(void *ctx);
static ctx_get_fn ctx_get;
static ctx_set_fn ctx_set;
static pthread_once_t ctx_fns_once = PTHREAD_ONCE_INIT;

static void load_ctx_fns(void) {
    void *g = NULL, *s = NULL;
    enum cudaDriverEntryPointQueryResult qg, qs;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &g, 12000, cudaEnableDefault, &qg) == cudaSuccess &&
        cudaGetDriverEntryPointByVersion("cuCtxSetCurrent", &s, 12000, cudaEnableDefault, &qs) == cudaSuccess &&
        qg == cudaDriverEntryPointSuccess && qs == cudaDriverEntryPointSuccess) {
        ctx_get = (ctx_get_fn)g;
        ctx_set = (ctx_set_fn)s;
    }
}

zgpu_status zg_device_scope_enter(int device, zg_device_scope *sc) {
    sc->saved = NULL;
    sc->restore = 0;
    pthread_once(&ctx_fns_once, load_ctx_fns);
    int cur = -1;
    if (ctx_get) {
        if (ctx_get(&sc->saved) != 0) sc->saved = NULL;
        /* already on `device`: nothing to set or put back (the common case, a read's fixed cost) */
        if (sc->saved && cudaGetDevice(&cur) == cudaSuccess && cur == device) return ZGPU_OK;
        sc->restore = 1;
    } else if (cudaGetDevice(&cur) == cudaSuccess) {
        if (cur == device) return ZGPU_OK;
        sc->saved = (void *)(intptr_t)(cur + 1); /* (no driver entry points: the runtime's device, put back) */
        sc->restore = 2;
    }
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) {
        zg_device_scope_leave(sc);
        return zg_error(ZGPU_ERR_CUDA, "cudaSetDevice(%d): %s", device, cudaGetErrorString(e));
    }
    return ZGPU_OK;
}

void zg_device_scope_leave(zg_device_scope *sc) {
    if (sc->restore == 1) ctx_set(sc->saved);
    else if (sc->restore == 2) cudaSetDevice((int)(intptr_t)sc->saved - 1);
    sc->restore = 0;
}

/* ------------------------------------------------------------------------------------------------
 * Device state: stream, events and buffers reused across reads
 * ---------------------------------------------------------------------------------------------- */

static void free_pinned(struct zg_device_state *st, void *p) {
    if (!p) return;
    void **r = realloc(st->retired, (st->n_retired + 1) * sizeof *r);
    if (r) {
        st->retired = r;
        st->retired[st->n_retired++] = p;
    }
}

void zg_device_state_free(struct zg_device_state *st) {
    if (!st) return;
    /* The state of an ancestor (this is a forked child freeing a context it inherited) is left as it is, leaked:
     * its streams, events and memory belong to a CUDA context this process does not have (CUDA calls fail here,
     * or worse), its lock may be held by a thread that is not here, and a read of the parent's may have been
     * midway through growing its host arrays at the fork, so even those are not safe to free. */
    if (atomic_load(&cuda_pid) != (int)getpid()) return;
    zg_device_scope sc; /* (a context freed on any thread: that thread's device stays as it was) */
    (void)zg_device_scope_enter(st->device, &sc); /* (failing: the calls below fail as they did before) */
    cudaStreamSynchronize(st->stream);
    cudaStreamSynchronize(st->copy);
    for (int k = 0; k < ZG_MAX_SETS; k++) {
        bufset *b = &st->set[k];
        if (b->stream) cudaStreamSynchronize(b->stream);
        if (b->aux) cudaStreamSynchronize(b->aux);
        if (b->h) cudaFreeHost(b->h);
        if (b->d) cudaFree(b->d);
        if (b->d_temp) cudaFree(b->d_temp);
        cudaEventDestroy(b->done);
        for (int i = 0; i < 4; i++) cudaEventDestroy(b->ev[i]);
        if (b->stream) cudaStreamDestroy(b->stream);
        if (b->aux) cudaStreamDestroy(b->aux);
        cudaEventDestroy(b->fork);
        cudaEventDestroy(b->join);
    }
    for (int k = 0; k < ZG_WD_SETS; k++) {
        if (st->wbuf[k].d) cudaFree(st->wbuf[k].d);
        if (st->wbuf[k].h) cudaFreeHost(st->wbuf[k].h);
    }
    if (st->hbuf.stream) cudaStreamSynchronize(st->hbuf.stream);
    if (st->hbuf.d) cudaFree(st->hbuf.d);
    if (st->hbuf.h) cudaFreeHost(st->hbuf.h);
    for (int i = 0; i < 2; i++)
        if (st->hbuf.ev[i]) cudaEventDestroy(st->hbuf.ev[i]);
    if (st->hbuf.stream) cudaStreamDestroy(st->hbuf.stream);
    for (size_t i = 0; i < st->n_retired; i++) cudaFreeHost(st->retired[i]);
    free(st->retired);
    for (size_t i = 0; i < st->n_plans; i++) zg_zd_plan_free(&st->plans[i]);
    free(st->plans);
    dev_cache_free(st); /* (frees on st->stream: then synchronised once more) */
    cudaStreamSynchronize(st->stream);
    for (int i = 0; i < 3; i++) cudaEventDestroy(st->ev[i]);
    cudaStreamDestroy(st->stream);
    cudaStreamDestroy(st->copy);
    pthread_mutex_destroy(&st->lock);
    pthread_mutex_destroy(&st->wlock);
    pthread_mutex_destroy(&st->hlock);
    free(st);
    zg_device_scope_leave(&sc);
}

zgpu_status dev_get_state(zgpu_context *ctx, struct zg_device_state **out) {
    *out = NULL;
    /* before the context's lock too: in a forked child a thread of the parent may have held it at the fork */
    ZG_FORWARD(check_not_forked());
    int none = 0; /* (zg_cuda_probe has marked this process already, unless a caller went around it) */
    atomic_compare_exchange_strong(&cuda_pid, &none, (int)getpid());
    pthread_mutex_lock(&ctx->device_lock);
    zgpu_status s = ZGPU_OK;
    if (!ctx->device) {
        struct zg_device_state *st = calloc(1, sizeof *st);
        if (!st) s = zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for the device state");
        cudaError_t e = cudaSuccess;
        if (st) {
            st->device = ctx->opts.device;
            e = cudaSetDevice(st->device);
            if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking);
            if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&st->copy, cudaStreamNonBlocking);
            for (int k = 0; k < ZG_MAX_SETS && e == cudaSuccess; k++) {
                e = cudaStreamCreateWithFlags(&st->set[k].stream, cudaStreamNonBlocking);
                if (e == cudaSuccess) e = cudaEventCreateWithFlags(&st->set[k].done, cudaEventDisableTiming);
                for (int i = 0; i < 4 && e == cudaSuccess; i++) e = cudaEventCreate(&st->set[k].ev[i]);
                if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&st->set[k].aux, cudaStreamNonBlocking);
                if (e == cudaSuccess) e = cudaEventCreateWithFlags(&st->set[k].fork, cudaEventDisableTiming);
                if (e == cudaSuccess) e = cudaEventCreateWithFlags(&st->set[k].join, cudaEventDisableTiming);
            }
            /* ev[0] (the fork) times: stage intervals are measured from it */
            for (int i = 0; i < 3 && e == cudaSuccess; i++) e = cudaEventCreateWithFlags(&st->ev[i], i ? cudaEventDisableTiming : 0);
            size_t free_b = 0, total_b = 0;
            if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, &total_b);
            st->auto_budget = total_b / 8;
            if (st->auto_budget < ((size_t)256 << 20)) st->auto_budget = (size_t)256 << 20;
            if (st->auto_budget > ((size_t)16 << 30)) st->auto_budget = (size_t)16 << 30;
            if (e != cudaSuccess) {
                s = zg_error(ZGPU_ERR_CUDA, "CUDA device %d: %s", st->device, cudaGetErrorString(e));
                free(st);
                st = NULL;
            } else if ((s = dev_cache_init(st, ctx->opts.device_cache_bytes)) != ZGPU_OK) {
                pthread_mutex_init(&st->lock, NULL);
                pthread_mutex_init(&st->wlock, NULL);
                pthread_mutex_init(&st->hlock, NULL);
                zg_device_state_free(st); /* (its streams and events made above) */
                st = NULL;
            } else {
                pthread_mutex_init(&st->lock, NULL);
                pthread_mutex_init(&st->wlock, NULL);
                pthread_mutex_init(&st->hlock, NULL);
                ctx->device = st;
            }
        }
    }
    *out = ctx->device;
    pthread_mutex_unlock(&ctx->device_lock);
    return s;
}

static atomic_ulong growths; /* (dev_buffer_growths) */

unsigned long dev_buffer_growths(void) { return atomic_load(&growths); }

/* Grows a device buffer in stream order on `s` (no device-wide synchronisation), keeping its first `keep`
 * bytes. */
zgpu_status dev_ensure_device(cudaStream_t s, uint8_t **p, size_t *cap, size_t need, size_t keep) {
    if (need <= *cap) return ZGPU_OK;
    atomic_fetch_add(&growths, 1);
    size_t n = need + need / 4;
    uint8_t *q = NULL;
    cudaError_t e = cudaMallocAsync((void **)&q, n, s);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return zg_error(ZGPU_ERR_NO_MEMORY, "cannot allocate %zu bytes of device memory: %s", n, cudaGetErrorString(e));
    }
    if (keep && *p) CU(cudaMemcpyAsync(q, *p, keep, cudaMemcpyDeviceToDevice, s), "device buffer copy");
    if (*p) CU(cudaFreeAsync(*p, s), "cudaFreeAsync");
    *p = q;
    *cap = n;
    return ZGPU_OK;
}

zgpu_status dev_grow_pinned(struct zg_device_state *st, uint8_t **p, size_t *cap, size_t need) {
    if (need <= *cap) return ZGPU_OK;
    atomic_fetch_add(&growths, 1);
    uint8_t *q = NULL;
    cudaError_t e = cudaHostAlloc((void **)&q, need, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return zg_error(ZGPU_ERR_NO_MEMORY, "cannot allocate %zu bytes of pinned host memory: %s", need,
                        cudaGetErrorString(e));
    }
    free_pinned(st, *p);
    *p = q;
    *cap = need;
    return ZGPU_OK;
}

zgpu_status dev_ensure_pinned(struct zg_device_state *st, bufset *b, size_t need, size_t keep) {
    if (need <= b->h_cap) return ZGPU_OK;
    uint8_t *old = b->h; /* (retired by the growth, not freed: still readable) */
    ZG_FORWARD(dev_grow_pinned(st, &b->h, &b->h_cap, need + need / 4));
    if (keep && old) memcpy(b->h, old, keep);
    return ZGPU_OK;
}


/* Room for n tasks' plans (under the state's lock, before a read's tasks are parsed). */
zgpu_status dev_reserve_plans(struct zg_device_state *st, size_t n) {
    if (n <= st->n_plans) return ZGPU_OK;
    zg_zd_plan *p = realloc(st->plans, n * sizeof *p);
    ZG_RETURN_IF(!p, ZGPU_ERR_NO_MEMORY, "out of host memory for %zu chunks' zstd plans", n);
    for (size_t i = st->n_plans; i < n; i++) zg_zd_plan_init(&p[i]);
    st->plans = p;
    st->n_plans = n;
    return ZGPU_OK;
}

/* After a read: the plans' arrays beyond PLANS_KEPT_BYTES in all are freed. */
void dev_trim_plans(struct zg_device_state *st) {
    size_t kept = 0;
    for (size_t i = 0; i < st->n_plans; i++) {
        kept += zg_zd_plan_bytes(&st->plans[i]);
        if (kept > PLANS_KEPT_BYTES) zg_zd_plan_free(&st->plans[i]);
    }
}

