/* The device executor: a selection read straight into device memory as one batch per wave.
 *
 *   plan (zg_plan_build + zg_plan_resolve: byte ranges, shard indexes)
 *   -> waves bounded by device_memory_budget (plan/waves.h), up to ZG_MAX_SETS in flight (a ring of buffer
 *      sets, each with its own stream); for each wave:
 *      A  host pool: pread every range into pinned staging (or cuFile into device memory), parse/validate
 *         frames (gpucodec/common/frames.h, gpucodec/blosc/blosc_parse.h); chunks without a GPU decoder decode on the host
 *      B  layout: device pointers of every stream, descriptors written behind the data in the same buffer
 *      C  stream: ONE host-to-device copy; one nvCOMP batch per format; our kernels (raw copies, unshuffle,
 *         crc32c, byte swap, delta); one scatter kernel into the caller's strided output (fill for missing)
 *      D  after the next wave's I/O: per-chunk statuses and sizes checked -> ZGPU_ERR_CORRUPT_DATA naming
 *         the array, chunk key and codec.
 * The chain must look like [transpose*] [delta(int)] bytes [shuffle|crc32c]* [compressor] [crc32c]* for
 * the GPU path (sharded arrays: the inner chain); anything else decodes on the host (CPU fallback). */
#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/crc32c.h"
#include "codec/sharding.h"
#include "gpucodec/blosc/blosc_parse.h"
#include "device/shim/cufile.h"
#include "device/device.h"
#include "gpucodec/common/frames.h"
#include "gpucodec/deflate/inflate_gpu.h"
#include "gpucodec/deflate/inflate_rules.h"
#include "gpucodec/lz4/lz4_kernels.h"
#include "gpucodec/post/post_kernels.h"
#include "device/shim/nvcomp_adapter.h"
#include "plan/waves.h"
#include "gpucodec/zstd/zstd_gpu.h"
#include "gpucodec/zstd/zstd_plan.h"
#include "host/scratch.h"
#include "plan/plan.h"
#include "common/endian.h"
#include "common/status.h"

#define ALIGN 256 /* every staged object and scratch slot starts on this boundary */
/* Buffer sets, each with its own stream: up to this many waves are in flight at once. Two are enough when
 * waves are as large as memory allows (the host waits for wave w - 2 before reusing its buffers); a read
 * split for overlap into waves of which more fit in the budget uses more, so that the host never waits for a
 * decode before reading the next wave: with two sets the third wave's I/O waited for the first's decode. */
#define ZG_MAX_SETS 4

#define CU(call, what)                                                                                     \
    do {                                                                                                   \
        cudaError_t zg_cu_e_ = (call);                                                                     \
        if (zg_cu_e_ != cudaSuccess)                                                                       \
            return zg_error(ZGPU_ERR_CUDA, "CUDA error in %s: %s", what, cudaGetErrorString(zg_cu_e_));    \
    } while (0)

/* ------------------------------------------------------------------------------------------------
 * Probe
 * ---------------------------------------------------------------------------------------------- */
zgpu_status zg_cuda_probe(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return zg_error(ZGPU_ERR_NO_GPU, "no CUDA device: %s", cudaGetErrorString(e));
    if (n == 0) return zg_error(ZGPU_ERR_NO_GPU, "no CUDA device: %s", cudaGetErrorString(cudaErrorNoDevice));
    return ZGPU_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Device state: stream, events and buffers reused across reads
 * ---------------------------------------------------------------------------------------------- */
typedef struct bufset {
    uint8_t *h;      /* pinned staging: [stored bytes | CPU-decoded chunks | descriptors | status readback] */
    size_t h_cap;
    uint8_t *d;      /* device: the same layout, then scratch slots */
    size_t d_cap;
    uint8_t *d_temp; /* nvCOMP temp */
    size_t d_temp_cap;
    /* A wave's decode runs on its set's stream, so the decode of one wave can overlap the next one's: a
     * chunk's decode is latency-bound (a chain of dependent steps) and leaves most of the GPU idle. */
    cudaStream_t stream;
    cudaEvent_t ev[4]; /* H2D start, H2D end (decode start), decode end, scatter end */
    cudaEvent_t done; /* recorded after the wave's last use of both */
    /* a second stream for decoder kernels that may run side by side (zstd: Huffman literals beside the
     * sequences), forked from and joined to `stream` by the two events */
    cudaStream_t aux;
    cudaEvent_t fork, join;
    int in_use;
} bufset;

struct zg_device_state {
    int device;
    cudaStream_t stream;  /* the read's stream: the waves' streams fork from it and join it again */
    cudaStream_t copy;    /* host-to-device copies of staged bytes, overlapping the I/O and earlier waves' decode */
    pthread_mutex_t lock; /* one read at a time uses the buffers */
    bufset set[ZG_MAX_SETS]; /* a ring: wave w uses set w % n_sets (run_waves picks n_sets per read) */
    void **retired;       /* pinned buffers outgrown (freed with the state: freeing pinned memory can sync) */
    size_t n_retired;
    cudaEvent_t ev[3]; /* fork, ordering after the caller's stream, ordering the caller's stream after ours */
    size_t auto_budget; /* device_memory_budget 0: an eighth of the device's memory, 256 MiB .. 16 GiB */
    /* zgpu's zstd decoder: task i of a read plans its frames into plans[i], whose arrays stay for the next read
     * (up to PLANS_KEPT_BYTES of them): planning a label volume's 2 MiB inner chunk into fresh arrays took
     * 2.5 us of a thread here, 4-11 us on the GPU machine's 16 (first touches of new pages), into kept ones
     * 0.5 us; freeing them after each read took 0.2-0.3 ms of the reading thread */
    zg_zd_plan *plans;
    size_t n_plans;
};
#define PLANS_KEPT_BYTES ((size_t)64 << 20)

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
    cudaSetDevice(st->device);
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
    for (size_t i = 0; i < st->n_retired; i++) cudaFreeHost(st->retired[i]);
    free(st->retired);
    for (size_t i = 0; i < st->n_plans; i++) zg_zd_plan_free(&st->plans[i]);
    free(st->plans);
    for (int i = 0; i < 3; i++) cudaEventDestroy(st->ev[i]);
    cudaStreamDestroy(st->stream);
    cudaStreamDestroy(st->copy);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static zgpu_status get_state(zgpu_context *ctx, struct zg_device_state **out) {
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
            } else {
                pthread_mutex_init(&st->lock, NULL);
                ctx->device = st;
            }
        }
    }
    *out = ctx->device;
    pthread_mutex_unlock(&ctx->device_lock);
    return s;
}

/* Grows a device buffer in stream order on `s` (no device-wide synchronisation), keeping its first `keep`
 * bytes. */
static zgpu_status ensure_device(cudaStream_t s, uint8_t **p, size_t *cap, size_t need, size_t keep) {
    if (need <= *cap) return ZGPU_OK;
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

static zgpu_status ensure_pinned(struct zg_device_state *st, bufset *b, size_t need, size_t keep) {
    if (need <= b->h_cap) return ZGPU_OK;
    size_t n = need + need / 4;
    uint8_t *p = NULL;
    cudaError_t e = cudaHostAlloc((void **)&p, n, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return zg_error(ZGPU_ERR_NO_MEMORY, "cannot allocate %zu bytes of pinned host memory: %s", n, cudaGetErrorString(e));
    }
    if (keep && b->h) memcpy(p, b->h, keep);
    free_pinned(st, b->h);
    b->h = p;
    b->h_cap = n;
    return ZGPU_OK;
}

/* ------------------------------------------------------------------------------------------------
 * Chain analysis
 * ---------------------------------------------------------------------------------------------- */
enum { COMP_NONE = 0, COMP_ZSTD, COMP_GZIP, COMP_ZLIB, COMP_LZ4, COMP_BLOSC };

/* Decoder "formats" of a wave: nvCOMP's (zg_nvc_format), then zgpu's own zstd, DEFLATE and LZ4 decoders. */
#define FMT_OWN ZG_NVC_N
#define FMT_INFLATE (ZG_NVC_N + 1)
#define FMT_LZ4 (ZG_NVC_N + 2)
#define N_FMT (ZG_NVC_N + 3)

/* Which zstd decoder a frame gets (ZGPU_ZSTD_DECODER=auto|zgpu|nvcomp). auto: zgpu's. It decodes every
 * 128 KiB zstd block as a unit, so a chunk's latency is that of a block, not of a whole frame decoded by one
 * thread block as in nvCOMP; it was as fast as nvCOMP's or faster on all three benchmark volumes
 * (docs/benchmarks.md). nvcomp: nvCOMP's. Either way a frame the host check rejects decodes on the host,
 * whose codec names the fault. */
enum { ZSTD_OWN = 0, ZSTD_NVCOMP };
/* Which DEFLATE decoder (gzip, zlib, blosc's zlib) a stream gets (ZGPU_DEFLATE_DECODER=auto|zgpu|nvcomp|host).
 * auto (default) and zgpu: inflate_kernels.cu, a thread block per stream (or part of one) decoding windows of
 * it in parallel, or in serial mode for streams compressing 8:1 or better, every rule checked on the device
 * (H100, whole reads: label volume 33:1 in serial mode 48 GB/s, host threads 19.4; image and field volumes
 * 1.1-1.3:1, GPU 14.1 / 14.4, host 2.3 / 1.9). host: host threads (libdeflate). nvcomp: nvCOMP's, which assumes
 * valid input, so only with gpu_trust_input (otherwise host threads decode). */
enum { DEFLATE_OWN = 0, DEFLATE_NVCOMP, DEFLATE_HOST };
/* Which decoder blosc's LZ4 streams get (ZGPU_LZ4_DECODER=auto|zgpu|nvcomp). auto: zgpu's (kernels.cu), a parser
 * and a copier warp a stream, checking as they go; nvcomp: the check kernel, then nvCOMP's batch (two walks of
 * every stream, each waiting on the longest one). numcodecs' LZ4 chunks (a whole chunk one stream) go to nvCOMP. */
enum { LZ4_OWN = 0, LZ4_NVCOMP };
enum { POST_CRC32C = 1, POST_SHUFFLE, POST_BYTESWAP, POST_DELTA };

typedef struct pipe {
    int gpu;                  /* the chain decodes on the GPU */
    char why[160];            /* if not, why */
    int n_outer_crc;          /* crc32c stages verified and stripped on the host */
    int comp;                 /* COMP_* */
    const char *comp_name;    /* codec name for messages */
    uint64_t comp_out;        /* bytes the compressor stage must produce */
    int n_post;
    struct { int kind, param; } post[ZG_MAX_CODECS + 2]; /* device stages after the compressor, in order */
    int needs_b;              /* some stage works out of place */
    int64_t src_strides[ZGPU_MAX_DIMS]; /* decoded chunk buffer strides (transposes folded in) */
    uint64_t chunk_nbytes;
} pipe;

static int is_int_dtype(zgpu_dtype id) { return id >= ZGPU_INT8 && id <= ZGPU_UINT64; }

static int config_int(const zg_codec *c, const char *key, int64_t *v) {
    if (!c->vt->to_json) return 0;
    zj_value *j = c->vt->to_json(c);
    int ok = 0;
    if (j) {
        zj_value *conf = zj_get(j, "configuration");
        ok = conf && zj_is_int(zj_get(conf, key), v);
        zj_free(j);
    }
    return ok;
}

static int config_is(const zg_codec *c, const char *key, const char *val) {
    if (!c->vt->to_json) return 0;
    zj_value *j = c->vt->to_json(c);
    int ok = 0;
    if (j) {
        const char *s = zj_string(zj_get(zj_get(j, "configuration"), key));
        ok = s && strcmp(s, val) == 0;
        zj_free(j);
    }
    return ok;
}

static int transpose_order(const zg_codec *c, int nd, int *order) {
    if (!c->vt->to_json) return 0;
    zj_value *j = c->vt->to_json(c);
    int ok = j != NULL;
    zj_value *arr = j ? zj_get(zj_get(j, "configuration"), "order") : NULL;
    for (int i = 0; ok && i < nd; i++) {
        int64_t v;
        ok = arr && zj_is_int(zj_at(arr, (size_t)i), &v) && v >= 0 && v < nd;
        if (ok) order[i] = (int)v;
    }
    zj_free(j);
    return ok;
}

static void not_gpu(pipe *p, const char *fmt, const char *name) {
    p->gpu = 0;
    snprintf(p->why, sizeof p->why, fmt, name);
}

static void analyse_chain(const zg_chain *ch, pipe *p) {
    memset(p, 0, sizeof *p);
    p->gpu = 1;
    p->chunk_nbytes = zg_repr_nbytes(&ch->repr);
    int nd = ch->repr.ndim;
    /* bytes->bytes, decode order: last first */
    int k = ch->n_b2b - 1;
    while (k >= 0 && strcmp(ch->b2b[k]->vt->name, "crc32c") == 0) {
        p->n_outer_crc++;
        k--;
    }
    if (k >= 0) {
        const char *n = ch->b2b[k]->vt->name;
        int comp = !strcmp(n, "zstd") ? COMP_ZSTD : !strcmp(n, "gzip") ? COMP_GZIP
                 : !strcmp(n, "numcodecs.zlib") ? COMP_ZLIB : !strcmp(n, "numcodecs.lz4") ? COMP_LZ4
                 : (!strcmp(n, "blosc") || !strcmp(n, "numcodecs.blosc")) ? COMP_BLOSC : COMP_NONE;
        if (comp != COMP_NONE) {
            p->comp = comp;
            p->comp_name = n;
            if (comp == COMP_BLOSC) p->needs_b = 1; /* shuffled blocks decode to A, unshuffle to B */
            k--;
        }
    }
    uint64_t size = p->chunk_nbytes;
    int n_crc_inner = 0;
    for (; k >= 0; k--) { /* device stages between the compressor and the array->bytes codec */
        const zg_codec *c = ch->b2b[k];
        const char *n = c->vt->name;
        int64_t es;
        if (!strcmp(n, "crc32c")) {
            p->post[p->n_post].kind = POST_CRC32C;
            p->post[p->n_post++].param = 0;
            n_crc_inner++;
        } else if (!strcmp(n, "numcodecs.shuffle") && config_int(c, "elementsize", &es) && es > 0 && es < 65536) {
            p->post[p->n_post].kind = POST_SHUFFLE;
            p->post[p->n_post++].param = (int)es;
            p->needs_b = 1;
        } else {
            return not_gpu(p, "codec '%s' has no GPU decoder at this position", n);
        }
    }
    p->comp_out = size + 4ull * (uint64_t)n_crc_inner;
    /* array->bytes */
    if (!ch->a2b || strcmp(ch->a2b->vt->name, "bytes") != 0)
        return not_gpu(p, "array->bytes codec '%s' has no GPU decoder", ch->a2b ? ch->a2b->vt->name : "?");
    zg_repr enc = ch->a2b->decoded; /* the array the bytes codec serialises */
    uint32_t unit = zg_dtype_swap_unit(&enc.dtype);
    if (unit > 1 && config_is(ch->a2b, "endian", "big")) {
        if (unit != 2 && unit != 4 && unit != 8 && unit != 16) return not_gpu(p, "%s: byte swap unit", "bytes");
        p->post[p->n_post].kind = POST_BYTESWAP;
        p->post[p->n_post++].param = (int)unit;
    }
    /* array->array, decode order: last first; transposes must come last and fold into the scatter */
    int64_t cur[ZGPU_MAX_DIMS];
    zg_c_strides(enc.ndim, enc.shape, enc.dtype.size, cur);
    int seen_transpose = 0;
    for (int a = ch->n_a2a - 1; a >= 0; a--) {
        const zg_codec *c = ch->a2a[a];
        const char *n = c->vt->name;
        if (!strcmp(n, "transpose")) {
            int order[ZGPU_MAX_DIMS];
            if (!transpose_order(c, nd, order)) return not_gpu(p, "codec '%s': cannot read its order", n);
            int64_t dec[ZGPU_MAX_DIMS];
            for (int i = 0; i < nd; i++) dec[order[i]] = cur[i];
            memcpy(cur, dec, sizeof(int64_t) * (size_t)nd);
            seen_transpose = 1;
        } else if (!strcmp(n, "numcodecs.delta") && !seen_transpose && c->decoded.dtype.id == c->encoded.dtype.id &&
                   is_int_dtype(c->decoded.dtype.id)) {
            p->post[p->n_post].kind = POST_DELTA;
            p->post[p->n_post++].param = (int)c->decoded.dtype.size;
        } else {
            return not_gpu(p, "codec '%s' has no GPU decoder (or not in this position/configuration)", n);
        }
    }
    memcpy(p->src_strides, cur, sizeof(int64_t) * (size_t)nd);
}

/* ------------------------------------------------------------------------------------------------
 * One read
 * ---------------------------------------------------------------------------------------------- */
enum { T_MISSING = 0, T_GPU, T_CPU };

typedef struct dtask {
    size_t plan_i;
    int kind;
    uint64_t h_off, nbytes;   /* stored bytes in staging */
    uint64_t cpu_off;         /* CPU-decoded chunk in staging (T_CPU) */
    uint64_t a_off, b_off;    /* device scratch slots (T_GPU) */
    uint8_t *direct;          /* T_GPU decoding straight into the caller's output (no scratch, no scatter) */
    int mapped;               /* direct, rows placed by blosc's unshuffle (rows_mappable) or by zgpu's zstd
                               * decoder (zstd_place: ZG_ZD_MAPPED) */
    uint8_t *zplace;          /* T_GPU decoded to scratch, whose blocks zgpu's zstd decoder copies into their rows
                               * here (zstd_place: ZG_ZD_MAPPED_AFTER; no scatter) */
    /* parse results */
    uint64_t body_off, body_len; /* the compressor's input (after host crc strip and header strip) */
    uint32_t check;              /* gzip CRC32 / zlib Adler-32 of the decoded payload */
    zg_blosc_header bh;
    zg_blosc_stream *streams;  /* blosc */
    size_t n_streams;
    zg_zd_plan *zp;            /* zstd frames (the chunk, or blosc's inner streams) for zgpu's own decoder: NULL,
                                * or the device state's plan of this task (see zg_device_state.plans) */
} dtask;

typedef struct stream_ref { /* a GPU decompression stream, for status checks */
    uint32_t task;
    int fmt; /* status: FMT_OWN a ZG_ZD_E_* code, FMT_INFLATE a ZI_E_*, FMT_LZ4 a ZG_LZ4_E_*, else nvCOMP's */
    uint64_t expect;
} stream_ref;

typedef struct job {
    zgpu_array *a;
    struct zg_device_state *st;
    const zg_plan *plan;
    const zg_chain *chain;
    pipe pp;
    int gpu_decode, use_gds, host_parse;
    int zstd_mode;    /* ZSTD_OWN / ZSTD_NVCOMP */
    int deflate_mode; /* DEFLATE_OWN / DEFLATE_NVCOMP / DEFLATE_HOST */
    int lz4_mode;     /* LZ4_OWN / LZ4_NVCOMP: blosc's LZ4 streams */
    int zstd_mappable; /* zstd frames of the wave can be mapped (zstd_rows) */
    uint64_t parts_room; /* device bytes the wave being launched leaves in its set's share of the budget */
    zg_span span[3]; /* h2d, decode, scatter over the waves (stats: the time each stage was under way) */
    const zgpu_tuning *tune; /* the context's */
    int trace;       /* tuning's trace: each wave's timeline to stderr (ms since the fork) */
    double t_fork;   /* host clock at the fork event */
    double io_end;   /* host clock when the last wave's reads were done (run_waves' I/O time) */
    uint64_t h2d_done;  /* the wave being launched: staged bytes below this offset are copied (or queued) already */
    dtask *t;
    size_t n_t;
    int64_t out_strides[ZGPU_MAX_DIMS];
    uint8_t *out;
    /* the wave being launched */
    bufset *bs;
    size_t first, count;
    size_t in_align[N_FMT], out_align[N_FMT];
    int nvc_ok;
} job;

typedef struct segment {
    uint64_t begin, end;
    atomic_int left; /* chunks still being read or parsed */
} segment;

/* A growing layout inside the pinned/device buffer pair. */
typedef struct layout {
    uint64_t pos;
} layout;

/* One wave's reads and host work before its launch. The next wave's reads may run on the pool while the main
 * thread finishes and launches this one (run_waves), so all they touch is here or in their own tasks. */
typedef struct wave_io {
    job *j;
    size_t w, first, count; /* wave w: tasks [first, first + count) */
    bufset *bs;
    layout L;               /* its staging: stored bytes up to r1_end, then CPU-decoded chunks */
    uint64_t r1_end, dev_need;
    uint64_t h2d_done;      /* staged bytes below this offset are copied (or queued) already */
    /* staged bytes go to the device in segments as soon as every chunk of a segment is read and parsed */
    struct segment *seg;
    uint32_t *task_seg;     /* per task of the wave */
    struct read_piece *pieces; /* phase A's reads (see READ_PIECE) */
    size_t n_pieces;
    struct task_pieces *task_pieces; /* per task of the wave */
    zg_pool_job *reading;   /* phase A on the pool, started and not yet finished */
    double t0;              /* when its reads began */
    atomic_uint_fast64_t io_ns, cpu_ns, parse_ns; /* thread time reading, decoding on the host, parsing */
} wave_io;

static const char *task_key(const job *j, const dtask *t, char *buf, size_t n) {
    const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
    const zg_plan_object *ob = &j->plan->objects[pt->object];
    if (j->a->shard) snprintf(buf, n, "%s' inner chunk %u '", ob->key, pt->inner);
    else snprintf(buf, n, "%s", ob->key);
    return buf;
}

static zgpu_status task_error(const job *j, const dtask *t, const char *codec, zgpu_status s) {
    char key[300];
    zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s', codec '%s': ", j->a->path, task_key(j, t, key, sizeof key),
                    codec);
    return s;
}

static int nvc_format(const job *j, int comp, const zg_blosc_header *bh) {
    /* DEFLATE_HOST: -1, so that blosc's zlib streams decode on host threads too */
    const int deflate = j->deflate_mode == DEFLATE_OWN ? FMT_INFLATE : j->deflate_mode == DEFLATE_NVCOMP ? ZG_NVC_DEFLATE : -1;
    if (comp == COMP_ZSTD) return ZG_NVC_ZSTD;
    if (comp == COMP_GZIP || comp == COMP_ZLIB) return deflate;
    if (comp == COMP_LZ4) return ZG_NVC_LZ4;
    if (comp == COMP_BLOSC && bh) {
        switch (bh->compformat) {
        case ZG_BLOSC_LZ4: return j->lz4_mode == LZ4_OWN ? FMT_LZ4 : ZG_NVC_LZ4;
        case ZG_BLOSC_ZSTD: return ZG_NVC_ZSTD;
        case ZG_BLOSC_ZLIB: return deflate;
        case ZG_BLOSC_SNAPPY: return ZG_NVC_SNAPPY;
        default: return -1;
        }
    }
    return -1;
}

static const char *fmt_name(int fmt) {
    return fmt == FMT_OWN       ? "zstd"
           : fmt == FMT_INFLATE ? "DEFLATE"
           : fmt == FMT_LZ4     ? "LZ4"
                                : zg_nvc_format_name((zg_nvc_format)fmt);
}

/* zgpu's zstd decoder (rather than nvCOMP's)? */
static int use_own_zstd(const job *j) { return j->zstd_mode != ZSTD_NVCOMP; }

/* The decoder format of a GPU task's compressed streams (blosc: its inner compressor). */
static int task_fmt(const job *j, const dtask *t) {
    if (t->zp) return FMT_OWN;
    return nvc_format(j, j->pp.comp, j->pp.comp == COMP_BLOSC ? &t->bh : NULL);
}

/* The task's zstd plan: the device state's, emptied (its arrays kept from earlier reads). */
static zg_zd_plan *plan_new(job *j, dtask *t) {
    zg_zd_plan *pl = &j->st->plans[t - j->t];
    zg_zd_plan_reset(pl);
    return pl;
}

static void plan_drop(dtask *t) { t->zp = NULL; /* (its arrays stay with the device state) */ }

/* Room for n tasks' plans (under the state's lock, before a read's tasks are parsed). */
static zgpu_status reserve_plans(struct zg_device_state *st, size_t n) {
    if (n <= st->n_plans) return ZGPU_OK;
    zg_zd_plan *p = realloc(st->plans, n * sizeof *p);
    ZG_RETURN_IF(!p, ZGPU_ERR_NO_MEMORY, "out of host memory for %zu chunks' zstd plans", n);
    for (size_t i = st->n_plans; i < n; i++) zg_zd_plan_init(&p[i]);
    st->plans = p;
    st->n_plans = n;
    return ZGPU_OK;
}

/* After a read: the plans' arrays beyond PLANS_KEPT_BYTES in all are freed. */
static void trim_plans(struct zg_device_state *st) {
    size_t kept = 0;
    for (size_t i = 0; i < st->n_plans; i++) {
        kept += zg_zd_plan_bytes(&st->plans[i]);
        if (kept > PLANS_KEPT_BYTES) zg_zd_plan_free(&st->plans[i]);
    }
}

/* Host parse of a GPU task's stored bytes: 0 = fine for the GPU, else decode it on the CPU. */
static int parse_task(job *j, dtask *t, uint8_t *p) {
    const pipe *pp = &j->pp;
    uint64_t n = t->nbytes;
    for (int c = 0; c < pp->n_outer_crc; c++) {
        if (n < 4) return 1;
        uint32_t want = zg_le32(p + n - 4);
        if (zg_crc32c(0, p, (size_t)n - 4) != want) return 1; /* the CPU path reports the mismatch */
        n -= 4;
    }
    size_t off = 0, len = (size_t)n;
    switch (pp->comp) {
    case COMP_NONE:
        if (n != pp->comp_out) return 1;
        break;
    case COMP_ZSTD:
        if (use_own_zstd(j)) {
            if (!(t->zp = plan_new(j, t)) || zg_zd_plan_frame(t->zp, p, (size_t)n, (size_t)pp->comp_out, 0) != ZGPU_OK)
                return 1;
        } else if (zg_zstd_check(p, (size_t)n, (size_t)pp->comp_out) != ZGPU_OK) {
            return 1;
        }
        break;
    case COMP_GZIP:
        if (zg_gzip_locate(p, (size_t)n, (size_t)pp->comp_out, &off, &len) != ZGPU_OK) return 1;
        t->check = zg_le32(p + n - 8);
        break;
    case COMP_ZLIB:
        if (zg_zlib_locate(p, (size_t)n, (size_t)pp->comp_out, &off, &len) != ZGPU_OK) return 1;
        t->check = (uint32_t)p[n - 4] << 24 | (uint32_t)p[n - 3] << 16 | (uint32_t)p[n - 2] << 8 | (uint32_t)p[n - 1];
        break;
    case COMP_LZ4:
        if (zg_lz4nc_locate(p, (size_t)n, (size_t)pp->comp_out, &off, &len) != ZGPU_OK) return 1;
        break;
    case COMP_BLOSC: {
        if (zg_blosc_parse_header(p, (size_t)n, (size_t)pp->comp_out, &t->bh) != ZGPU_OK) return 1;
        size_t cap = zg_blosc_max_streams(&t->bh);
        int fmt = t->bh.memcpyed ? 0 : nvc_format(j, COMP_BLOSC, &t->bh);
        const int own = !t->bh.memcpyed && fmt == ZG_NVC_ZSTD && use_own_zstd(j);
        if (fmt < 0 || (!t->bh.memcpyed && !j->nvc_ok && !own && fmt < ZG_NVC_N)) return 1;
        if (own && !(t->zp = plan_new(j, t))) return 1;
        if (own) fmt = FMT_OWN;
        t->streams = malloc((cap ? cap : 1) * sizeof *t->streams);
        if (!t->streams) return 1;
        if (zg_blosc_streams(p, (size_t)n, &t->bh, t->streams, cap, &t->n_streams) != ZGPU_OK) return 1;
        for (size_t s = 0; s < t->n_streams; s++) {
            zg_blosc_stream *bs = &t->streams[s];
            if (bs->raw) continue;
            if (bs->dst_off % j->out_align[fmt]) return 1; /* nvCOMP cannot write there */
            /* LZ4 streams are walked on the GPU before nvCOMP decodes them (launch_wave): on the host that walk
             * took as long as reading the bytes */
            if (own && zg_zd_plan_frame(t->zp, p + bs->src_off, bs->src_len, bs->dst_len, bs->src_off) != ZGPU_OK)
                return 1;
            if (!own && t->bh.compformat == ZG_BLOSC_ZSTD &&
                zg_zstd_check(p + bs->src_off, bs->src_len, bs->dst_len) != ZGPU_OK)
                return 1;
            if (t->bh.compformat == ZG_BLOSC_ZLIB) {
                size_t zo, zl;
                if (zg_zlib_locate(p + bs->src_off, bs->src_len, bs->dst_len, &zo, &zl) != ZGPU_OK) return 1;
                bs->src_off += (uint32_t)zo;
                bs->src_len = (uint32_t)zl;
            }
            if ((t->h_off + bs->src_off) % j->in_align[fmt]) return 1;
        }
        break;
    }
    }
    if (pp->comp != COMP_NONE && pp->comp != COMP_BLOSC) {
        int fmt = task_fmt(j, t);
        if (!j->nvc_ok && fmt < ZG_NVC_N) return 1;
        if (fmt == FMT_INFLATE && (len > ZI_MAX_BYTES || pp->comp_out > ZI_MAX_BYTES)) return 1;
        /* nvCOMP wants its input aligned (deflate: 4 or 8 bytes) but gzip/zlib/lz4 headers are 10/2/4 bytes:
         * move the object forward inside its slot (which has ALIGN bytes of slack) to align the payload */
        uint64_t mis = (t->h_off + off) % j->in_align[fmt];
        if (mis) {
            uint64_t shift = j->in_align[fmt] - mis;
            if (shift >= ALIGN) return 1;
            memmove((uint8_t *)p + shift, p, (size_t)t->nbytes);
            t->h_off += shift;
        }
    }
    t->body_off = off;
    t->body_len = len;
    return 0;
}

static zgpu_status cpu_decode(wave_io *io, dtask *t) {
    const job *j = io->j;
    double t0 = zg_now();
    zg_thread_scratch *ts = zg_thread_scratch_get();
    if (!ts) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for thread scratch");
    zgpu_status s = zg_chain_decode(j->chain, io->bs->h + t->h_off, (size_t)t->nbytes, io->bs->h + t->cpu_off, &ts->codec);
    atomic_fetch_add(&io->cpu_ns, (uint64_t)((zg_now() - t0) * 1e9));
    if (s != ZGPU_OK) {
        char key[300];
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", j->a->path, task_key(j, t, key, sizeof key));
    }
    return s;
}

/* Task i of the wave is staged: the last of its segment queues the segment's copy to the device. */
static zgpu_status segment_done(wave_io *io, size_t i) {
    segment *g = &io->seg[io->task_seg[i]];
    if (atomic_fetch_sub(&g->left, 1) == 1 &&
        cudaMemcpyAsync(io->bs->d + g->begin, io->bs->h + g->begin, g->end - g->begin, cudaMemcpyHostToDevice,
                        io->j->st->copy) != cudaSuccess)
        return zg_error(ZGPU_ERR_CUDA, "CUDA error copying staged chunks to the device: %s",
                        cudaGetErrorString(cudaGetLastError()));
    return ZGPU_OK;
}

/* Host parse of a GPU task; one the GPU must not take decodes on the CPU instead. */
static void parse_or_fallback(job *j, dtask *t, bufset *b) {
    if (t->kind == T_GPU && parse_task(j, t, b->h + t->h_off)) {
        free(t->streams);
        t->streams = NULL;
        t->n_streams = 0;
        plan_drop(t);
        t->kind = T_CPU;
    }
}

/* Phase A reads a wave's stored bytes in pieces of at most READ_PIECE bytes, handed out in order: a field
 * volume's wave is 21 chunks of 13 MB, which 16 threads read whole in two rounds, the second with 5 of them
 * busy (the wave's I/O took 1.3-1.45x the page cache's rate); in pieces every thread reads until the end. */
#define READ_PIECE ((uint64_t)2 << 20)

enum { FILE_NONE = 0, FILE_OPENING, FILE_OPEN, FILE_BY_KEY, FILE_FAILED };

/* A task read in several pieces: its object open from the first piece to the last (one version of it for
 * all pieces even if a writer replaces it meanwhile), or read whole by key if it cannot stay open. */
typedef struct task_pieces {
    atomic_int file_state; /* FILE_* */
    uint32_t n;            /* pieces */
    atomic_uint left;      /* pieces not read yet */
    zg_store_file *file;   /* FILE_OPEN: closed by the piece that finishes the task (or after a failed wave) */
} task_pieces;

typedef struct read_piece {
    uint32_t task;  /* in the wave */
    uint32_t index; /* of the task's pieces */
} read_piece;

static uint32_t task_piece_count(const job *j, const dtask *t) {
    const zg_plan_object *ob = &j->plan->objects[j->plan->tasks[t->plan_i].object];
    if (t->kind == T_MISSING) return 0;
    /* GDS registers a file per read; a store that cannot keep an object open would mix versions of it */
    if (j->use_gds || t->nbytes <= READ_PIECE || (!ob->file && !j->a->store->vt->open_file)) return 1;
    return (uint32_t)((t->nbytes + READ_PIECE - 1) / READ_PIECE);
}

/* The wave's pieces, in task order. */
static zgpu_status make_pieces(wave_io *io) {
    const job *j = io->j;
    io->task_pieces = calloc(io->count ? io->count : 1, sizeof *io->task_pieces);
    ZG_RETURN_IF(!io->task_pieces, ZGPU_ERR_NO_MEMORY, "out of host memory for a wave's reads");
    size_t n = 0;
    for (size_t i = 0; i < io->count; i++) {
        task_pieces *tp = &io->task_pieces[i];
        tp->n = task_piece_count(j, &j->t[io->first + i]);
        atomic_init(&tp->file_state, FILE_NONE);
        atomic_init(&tp->left, tp->n);
        n += tp->n;
    }
    io->pieces = malloc((n ? n : 1) * sizeof *io->pieces);
    ZG_RETURN_IF(!io->pieces, ZGPU_ERR_NO_MEMORY, "out of host memory for a wave's reads");
    io->n_pieces = 0;
    for (size_t i = 0; i < io->count; i++)
        for (uint32_t p = 0; p < io->task_pieces[i].n; p++) io->pieces[io->n_pieces++] = (read_piece){(uint32_t)i, p};
    return ZGPU_OK;
}

/* After the wave's reads (also a failed one): files its failed tasks left open are closed. */
static void free_pieces(wave_io *io) {
    for (size_t i = 0; io->task_pieces && i < io->count; i++)
        if (io->task_pieces[i].file) io->j->a->store->vt->close_file(io->task_pieces[i].file);
    free(io->pieces);
    free(io->task_pieces);
    io->pieces = NULL;
    io->task_pieces = NULL;
    io->n_pieces = 0;
}

/* The task's object for its pieces: the plan's open shard, or opened by the first piece to get here (the
 * others wait for it, a few microseconds). *f = NULL (FILE_BY_KEY): out of file descriptors, the task is read
 * whole by key. */
static zgpu_status piece_file(job *j, task_pieces *tp, const zg_plan_object *ob, zg_store_file **f) {
    *f = ob->file;
    if (ob->file) return ZGPU_OK;
    int expect = FILE_NONE;
    if (atomic_compare_exchange_strong(&tp->file_state, &expect, FILE_OPENING)) {
        zg_store *s = j->a->store;
        uint64_t size = 0;
        int found = 0;
        zgpu_status e = s->vt->open_file(s, ob->key, &tp->file, &size, &found);
        if (e == ZGPU_OK && !found) e = zg_error(ZGPU_ERR_IO, "the object vanished during the read");
        if (e == ZGPU_OK && size != ob->size)
            e = zg_error(ZGPU_ERR_IO, "the object changed during the read (%llu bytes, then %llu)",
                         (unsigned long long)ob->size, (unsigned long long)size);
        /* the task's other pieces in hand give up (the pool hands out no more after the failure) */
        if (e != ZGPU_OK) {
            atomic_store(&tp->file_state, FILE_FAILED);
            return e;
        }
        atomic_store(&tp->file_state, tp->file ? FILE_OPEN : FILE_BY_KEY);
    }
    int st;
    while ((st = atomic_load(&tp->file_state)) == FILE_OPENING) sched_yield();
    if (st == FILE_FAILED) return zg_error(ZGPU_ERR_IO, "the object could not be opened (see the error of the piece that opened it)");
    *f = tp->file;
    return ZGPU_OK;
}

/* Phase A, one piece of a task's bytes: read it (into pinned staging, or by GDS onto the device). The piece
 * that finishes the task also parses it (without GDS) and, once its whole segment is staged, queues the
 * segment's copy to the device. */
static zgpu_status phase_a_piece(void *arg, size_t p) {
    wave_io *io = arg;
    job *j = io->j;
    const read_piece pc = io->pieces[p];
    dtask *t = &j->t[io->first + pc.task];
    task_pieces *tp = &io->task_pieces[pc.task];
    const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
    const zg_plan_object *ob = &j->plan->objects[pt->object];
    double t0 = zg_now();
    zg_store *s = j->a->store;
    zgpu_status e = ZGPU_OK;
    if (j->use_gds) {
        char path[ZG_PATH_MAX];
        e = zg_store_fs_path(s, ob->key, path);
        if (e == ZGPU_OK) e = zg_gds_read(path, pt->offset, t->nbytes, io->bs->d + t->h_off);
    } else {
        zg_store_file *f = NULL;
        if (tp->n > 1) e = piece_file(j, tp, ob, &f);
        if (e == ZGPU_OK && f) { /* one piece */
            const uint64_t at = (uint64_t)pc.index * READ_PIECE;
            const uint64_t n = t->nbytes - at < READ_PIECE ? t->nbytes - at : READ_PIECE;
            e = s->vt->read_file(f, pt->offset + at, n, io->bs->h + t->h_off + at);
        } else if (e == ZGPU_OK && pc.index == 0) { /* the whole task: one piece, or read by key */
            int found = 0;
            e = zg_plan_read(s, ob, pt->offset, t->nbytes, io->bs->h + t->h_off, &found);
            if (e == ZGPU_OK && !found) e = zg_error(ZGPU_ERR_IO, "the object vanished during the read");
        }
    }
    if (e != ZGPU_OK) return task_error(j, t, "(read)", e);
    const double t1 = zg_now();
    atomic_fetch_add(&io->io_ns, (uint64_t)((t1 - t0) * 1e9));
    if (atomic_fetch_sub(&tp->left, 1) != 1) return ZGPU_OK;
    if (tp->file) { /* every piece is read (the others' reads come before their decrements) */
        s->vt->close_file(tp->file);
        tp->file = NULL;
    }
    if (!io->seg) return ZGPU_OK;
    if (j->gpu_decode) {
        parse_or_fallback(j, t, io->bs);
        atomic_fetch_add(&io->parse_ns, (uint64_t)((zg_now() - t1) * 1e9));
    }
    return segment_done(io, pc.task);
}

static zgpu_status phase_parse_task(void *arg, size_t i) {
    wave_io *io = arg;
    parse_or_fallback(io->j, &io->j->t[io->first + i], io->bs);
    return ZGPU_OK;
}

static zgpu_status phase_cpu_task(void *arg, size_t i) {
    wave_io *io = arg;
    dtask *t = &io->j->t[io->first + i];
    if (t->kind != T_CPU) return ZGPU_OK;
    ZG_FORWARD(cpu_decode(io, t));
    return io->seg ? segment_done(io, i) : ZGPU_OK;
}
static uint64_t take(layout *l, uint64_t n) {
    uint64_t at = zg_align_up(l->pos, ALIGN);
    l->pos = at + n;
    return at;
}

/* Per wave, what phase D must check once the stream reaches the wave's `done` event. */
typedef struct wave_check {
    size_t n_refs;
    stream_ref *refs;
    uint64_t status_off, actual_off, crc_off; /* in the pinned buffer */
    size_t n_crc;
    uint32_t *crc_task;
    uint64_t lz4_off; /* per stream ref: ZG_LZ4_E_* of the GPU walk of blosc's LZ4 streams (0: fine) */
    uint64_t chk_off; /* gzip/zlib checksum flags, one per GPU chunk of the wave */
    size_t n_chk;
    uint32_t *chk_task;
    int active;
    float ms_h2d, ms_decode, ms_scatter;
    size_t wave;                 /* its index, for the trace */
    double host_read, host_launch; /* ms since the fork: its I/O done, its work queued */
} wave_check;

static zgpu_status check_wave(job *j, bufset *b, wave_check *wc, zgpu_read_stats *stats) {
    if (!wc->active) return ZGPU_OK;
    wc->active = 0;
    CU(cudaEventSynchronize(b->done), "waiting for a wave");
    float at[4]; /* the wave's stage events, in ms since the fork */
    int timed = 1;
    for (int i = 0; i < 4 && timed; i++) timed = cudaEventElapsedTime(&at[i], j->st->ev[0], b->ev[i]) == cudaSuccess;
    if (timed && j->trace)
        fprintf(stderr, "zgpu trace: wave %zu  read done %.2f  queued %.2f  | h2d %.2f-%.2f  decode -%.2f  scatter -%.2f ms\n",
                wc->wave, wc->host_read, wc->host_launch, at[0], at[1], at[2], at[3]);
    if (timed) {
        zg_span_add(&j->span[0], at[0], at[1], &stats->h2d_s);
        zg_span_add(&j->span[1], at[1], at[2], &stats->decode_s);
        zg_span_add(&j->span[2], at[2], at[3], &stats->scatter_s);
    }
    b->in_use = 0;
    const int *status = (const int *)(b->h + wc->status_off), *lz4 = (const int *)(b->h + wc->lz4_off);
    const uint64_t *actual = (const uint64_t *)(b->h + wc->actual_off);
    zgpu_status s = ZGPU_OK;
    for (size_t r = 0; r < wc->n_refs && s == ZGPU_OK; r++)
        if (lz4[r]) s = task_error(j, &j->t[wc->refs[r].task], j->pp.comp_name,
                                   zg_error(ZGPU_ERR_CORRUPT_DATA, "LZ4 stream invalid: %s (checked on the GPU)",
                                            zg_lz4_error_text(lz4[r])));
    for (size_t r = 0; r < wc->n_refs && s == ZGPU_OK; r++) {
        const stream_ref *ref = &wc->refs[r];
        const dtask *t = &j->t[ref->task];
        if (status[r] != 0 && ref->fmt == FMT_OWN)
            s = task_error(j, t, j->pp.comp_name,
                           zg_error(ZGPU_ERR_CORRUPT_DATA, "GPU zstd decoding failed: %s", zg_zd_error_text(status[r])));
        else if (status[r] != 0 && ref->fmt == FMT_INFLATE)
            s = task_error(j, t, j->pp.comp_name,
                           zg_error(ZGPU_ERR_CORRUPT_DATA, "GPU DEFLATE decoding failed: %s", zi_error_text(status[r])));
        else if (status[r] != 0 && ref->fmt == FMT_LZ4)
            s = task_error(j, t, j->pp.comp_name,
                           zg_error(ZGPU_ERR_CORRUPT_DATA, "LZ4 stream invalid: %s (decoding on the GPU)",
                                    zg_lz4_error_text(status[r])));
        else if (status[r] != 0)
            s = task_error(j, t, j->pp.comp_name,
                           zg_error(ZGPU_ERR_CORRUPT_DATA, "GPU %s decompression failed: %s (nvCOMP status %d)",
                                    zg_nvc_format_name((zg_nvc_format)ref->fmt), zg_nvc_status_text(status[r]), status[r]));
        else if (actual[r] != ref->expect)
            s = task_error(j, t, j->pp.comp_name,
                           zg_error(ZGPU_ERR_CORRUPT_DATA, "GPU %s decompression produced %llu bytes, expected %llu",
                                    fmt_name(ref->fmt), (unsigned long long)actual[r],
                                    (unsigned long long)ref->expect));
    }
    const int *crc = (const int *)(b->h + wc->crc_off);
    for (size_t r = 0; r < wc->n_crc && s == ZGPU_OK; r++)
        if (crc[r]) s = task_error(j, &j->t[wc->crc_task[r]], "crc32c",
                                   zg_error(ZGPU_ERR_CORRUPT_DATA, "checksum mismatch (verified on the GPU)"));
    const int *chk = (const int *)(b->h + wc->chk_off);
    for (size_t r = 0; r < wc->n_chk && s == ZGPU_OK; r++)
        if (chk[r]) s = task_error(j, &j->t[wc->chk_task[r]], j->pp.comp_name,
                                   zg_error(ZGPU_ERR_CORRUPT_DATA, "%s checksum of the decoded data does not match (checked on the GPU)",
                                            j->pp.comp == COMP_GZIP ? "CRC32" : "Adler-32"));
    free(wc->refs);
    wc->refs = NULL;
    free(wc->crc_task);
    wc->crc_task = NULL;
    free(wc->chk_task);
    wc->chk_task = NULL;
    return s;
}

/* The caller's output address of a task's first selected element. */
static uint8_t *box_dst(const job *j, const zg_chunk_task *pt) {
    uint8_t *dst = j->out;
    for (int d = 0; d < j->plan->ndim; d++) dst += (int64_t)pt->in_box[d] * j->out_strides[d];
    return dst;
}

/* Whether the unshuffle of a byte-shuffled blosc chunk, wholly selected at dst but not contiguous in the output
 * (a block of a larger array), can place its rows there itself (zg_k_row_map): its elements are the array's, of
 * 2 or 4 bytes, every blosc block is full and holds whole quads, rows are contiguous in the output and start on
 * multiples of 4 elements. */
static int rows_mappable(const job *j, const dtask *t, const uint8_t *dst) {
    const zg_blosc_header *h = &t->bh;
    const int nd = j->plan->ndim;
    const uint64_t ts = j->a->meta.dtype.size, quad = 4 * ts;
    if (h->shuffle != ZG_BLOSC_SHUFFLE || h->typesize != ts || (ts != 2 && ts != 4) || nd < 1 || nd > ZG_K_MAX_DIMS)
        return 0;
    if (h->nbytes != j->pp.chunk_nbytes || h->blocksize == 0 || h->nbytes % h->blocksize || h->blocksize % quad ||
        j->pp.chunk_nbytes / ts > UINT32_MAX || j->plan->chunk[nd - 1] % 4 || j->out_strides[nd - 1] != (int64_t)ts)
        return 0;
    /* rows start on multiples of a quad (two's complement: negative strides too) */
    for (int d = 0; d < nd - 1; d++)
        if (j->plan->chunk[d] > 1 && (uint64_t)j->out_strides[d] % quad) return 0;
    return (uintptr_t)dst % quad == 0;
}

/* The read's output rows as zgpu's zstd decoder can place them (zg_zd_rows): a power of two of at least 16
 * bytes, contiguous, each starting on 16 bytes, with at most two dimensions above them (extents of 1 left out),
 * the nearer of power-of-two extent, and every offset within a chunk below 2^31. Returns 1 and fills *r, or
 * returns 0. (The chunk side, a whole chunk in C order without a post stage, is direct_target's.) */
static int zstd_rows(const job *j, zg_zd_rows *r) {
    const pipe *pp = &j->pp;
    const int nd = j->plan->ndim;
    const uint64_t ts = j->a->meta.dtype.size, *ch = j->plan->chunk;
    memset(r, 0, sizeof *r);
    if (nd < 1) return 0;
    if (j->tune->zstd_rows == ZGPU_SWITCH_OFF) return 0; /* scratch and scatter instead (for measuring the difference) */
    const uint64_t row = ch[nd - 1] * ts;
    if (row < 16 || (row & (row - 1)) || j->out_strides[nd - 1] != (int64_t)ts) return 0;
    if (pp->chunk_nbytes > ZG_ZD_MAX_FRAME) return 0;
    int outer[2], n_outer = 0; /* the dimensions above the rows, nearest first */
    uint64_t span = row;       /* the farthest byte of a chunk from its first, plus one: 32-bit offsets */
    for (int d = nd - 2; d >= 0; d--) {
        if (ch[d] == 1) continue;
        if (n_outer == 2 || (uint64_t)j->out_strides[d] % 16) return 0; /* (negative strides too) */
        const uint64_t st = (uint64_t)(j->out_strides[d] < 0 ? -j->out_strides[d] : j->out_strides[d]);
        if (st >= (1ull << 31) || (span += (ch[d] - 1) * st) >= (1ull << 31)) return 0;
        outer[n_outer++] = d;
    }
    while ((1ull << r->row_shift) < row) r->row_shift++;
    if (n_outer == 2) {
        if (ch[outer[0]] & (ch[outer[0]] - 1)) return 0;
        while ((1ull << r->mid_shift) < ch[outer[0]]) r->mid_shift++;
        r->mid_stride = (int32_t)j->out_strides[outer[0]];
        r->top_stride = (int32_t)j->out_strides[outer[1]];
    } else {
        r->mid_shift = 31; /* every row index is below 2^31 */
        r->mid_stride = n_outer ? (int32_t)j->out_strides[outer[0]] : 0;
    }
    return 1;
}

/* Where zgpu's zstd decoder puts a chunk wholly selected at dst but not contiguous in the output, when the read's
 * rows allow it (zstd_rows), dst is on 16 bytes and the chunk was planned as one frame: ZG_ZD_MAPPED (straight
 * into its rows) for frames compressed less than 8:1 without a content checksum (K4 reads a frame flat); else
 * ZG_ZD_MAPPED_AFTER (decoded flat to scratch, each block copied into its rows once final). ZG_ZD_FLAT: neither
 * (scratch, then the scatter). Mapping costs every output address a few instructions, which low-ratio frames
 * (oct and field volumes, 1.3-2:1: literals and short matches) do not notice; a label volume's frames (1000:1)
 * are chains of long match copies bound by their instructions' latency, which took 65% longer mapped (K3b 2.7 ->
 * 4.4 ms on its sharded read; 303M -> 545M instructions, ncu). */
static int zstd_place(const job *j, const dtask *t, const uint8_t *dst) {
    if (!j->zstd_mappable || !t->zp || t->zp->n_frames != 1 || (uintptr_t)dst % 16) return ZG_ZD_FLAT;
    if (t->zp->frames[0].has_checksum || t->nbytes * 8 < j->pp.chunk_nbytes) return ZG_ZD_MAPPED_AFTER;
    return ZG_ZD_MAPPED;
}

/* Where a GPU-decoded chunk can land directly: it is wholly selected, its last decode stage writes the final
 * bytes (no post stage, no transpose), and it is C-contiguous in the output with the output pointer meeting the
 * decoder's alignment, or (*mapped = 1) it is a blosc chunk whose unshuffle places its rows (rows_mappable) or a
 * zstd chunk whose decoder does (zstd_place: ZG_ZD_MAPPED).
 * Returns the destination, or NULL to decode into scratch and scatter; or NULL with *zplace set: a zstd chunk
 * decoded to scratch whose blocks the decoder copies into their rows at *zplace (ZG_ZD_MAPPED_AFTER, no
 * scatter). assume_shuffled: blosc chunks count as shuffled (before their header is parsed), and only the
 * contiguous case is considered. */
static uint8_t *direct_target(const job *j, const dtask *t, int assume_shuffled, int *mapped, uint8_t **zplace) {
    const pipe *pp = &j->pp;
    const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
    const int nd = j->plan->ndim;
    *mapped = 0;
    *zplace = NULL;
    if (!pt->covers_chunk || pp->n_post != 0 || pp->comp == COMP_NONE) return NULL;
    if (pp->comp == COMP_BLOSC && !assume_shuffled && (t->bh.memcpyed || t->bh.shuffle == ZG_BLOSC_NOSHUFFLE))
        return NULL;
    int64_t c[ZGPU_MAX_DIMS];
    zg_c_strides(nd, j->plan->chunk, j->a->meta.dtype.size, c);
    int contiguous = 1;
    for (int d = 0; d < nd; d++) {
        if (j->plan->chunk[d] <= 1) continue;
        if (pp->src_strides[d] != c[d]) return NULL;
        if (j->out_strides[d] != c[d]) contiguous = 0;
    }
    uint8_t *dst = box_dst(j, pt);
    if (!contiguous) {
        if (assume_shuffled) return NULL;
        const int zstd = pp->comp == COMP_ZSTD ? zstd_place(j, t, dst) : ZG_ZD_FLAT;
        if (zstd == ZG_ZD_MAPPED_AFTER) *zplace = dst;
        if (zstd != ZG_ZD_MAPPED && !(pp->comp == COMP_BLOSC && rows_mappable(j, t, dst))) return NULL;
        *mapped = 1;
        return dst;
    }
    if (pp->comp != COMP_BLOSC) {
        size_t align = j->out_align[task_fmt(j, t)];
        if (align > 1 && (uintptr_t)dst % align != 0) return NULL;
    }
    return dst;
}

/* zgpu's zstd decoder: each task's planned frames into the wave's descriptors, on the pool (a label volume's
 * sharded read: 8192 blocks, 5.5 MB of descriptors, 0.4 ms on one thread). While the next wave's reads hold the
 * pool (run_waves), the launching thread does them alone, beside those reads (a field wave: 0.5-0.6 ms). */
typedef struct {
    const job *j;
    const zg_zd_bases *at; /* per task of the wave: where its descriptors go */
    zg_zd_block *blocks;
    zg_zd_frame *frames;
    zg_zd_huf_desc *hufs;
    zg_zd_fse_desc *fses;
} zd_emit;

static zgpu_status zd_emit_task(void *arg, size_t i) {
    const zd_emit *e = arg;
    const dtask *t = &e->j->t[e->j->first + i];
    if (t->kind == T_GPU && t->zp) zg_zd_plan_emit(t->zp, &e->at[i], e->blocks, e->frames, e->hufs, e->fses);
    return ZGPU_OK;
}

/* Builds and launches one wave's device work. The pinned buffer already holds stored bytes and CPU-decoded
 * chunks (up to L->pos); descriptors go behind them, then ONE host-to-device copy, then the launches. */
static zgpu_status launch_wave(job *j, bufset *b, layout *L, wave_check *wc) {
    struct zg_device_state *st = j->st;
    const pipe *pp = &j->pp;
    const int nd = j->plan->ndim;
    const size_t first = j->first, count = j->count;
    const size_t itemsize = j->a->meta.dtype.size;
    cudaStream_t s = b->stream;
    const uint64_t data_end = L->pos;
    double tl[5] = {0}; /* ZGPU_TRACE: when the host began, then finished the descriptors, the scatter list, the order */
    tl[0] = j->trace ? zg_now() : 0;
    size_t n_fmt[N_FMT] = {0}, n_copy = 0, n_gpu = 0, n_refs = 0, n_unsh = 0;
    uint64_t inflate_max_out = 0; /* the largest output of a stream zgpu's DEFLATE decoder takes */
    int inflate_serial = 1;       /* every such stream decodes in serial mode: a launch of serial-mode blocks */
    for (size_t i = first; i < first + count; i++) {
        const dtask *t = &j->t[i];
        if (t->kind != T_GPU) continue;
        n_gpu++;
        if (pp->comp == COMP_BLOSC) {
            int fmt = task_fmt(j, t);
            for (size_t k = 0; k < t->n_streams; k++) {
                if (t->streams[k].raw || t->bh.memcpyed) {
                    n_copy++;
                } else {
                    n_fmt[fmt]++;
                    if (fmt == FMT_INFLATE) {
                        const zg_blosc_stream *bs = &t->streams[k];
                        if (bs->dst_len > inflate_max_out) inflate_max_out = bs->dst_len;
                        inflate_serial &= zg_inflate_serial_wanted(bs->src_len, bs->dst_len);
                    }
                }
            }
            if (!t->bh.memcpyed && t->bh.shuffle != ZG_BLOSC_NOSHUFFLE) n_unsh++;
        } else if (pp->comp != COMP_NONE) {
            const int fmt = task_fmt(j, t);
            if (fmt < 0) continue; /* (no GPU format: never a GPU task) */
            n_fmt[fmt]++;
            /* (the stored chunk, framing included: a stream serial by it is serial by its DEFLATE bytes too) */
            if (fmt == FMT_INFLATE) inflate_serial &= zg_inflate_serial_wanted(t->nbytes, pp->comp_out);
        }
    }
    if (pp->comp != COMP_BLOSC && n_fmt[FMT_INFLATE]) inflate_max_out = pp->comp_out;
    /* zgpu's zstd decoder: totals of the wave's planned frames */
    size_t zb_n = 0, zf_n = 0, zh_n = 0, zs_n = 0;
    uint64_t zlit_n = 0, zseq_n = 0;
    for (size_t i = first; i < first + count; i++) {
        const zg_zd_plan *zp = j->t[i].kind == T_GPU ? j->t[i].zp : NULL;
        if (!zp) continue;
        zb_n += zp->n_blocks;
        zf_n += zp->n_frames;
        zh_n += zp->n_hufs;
        zs_n += zp->n_fses;
        zlit_n += zp->lit_bytes;
        zseq_n += zp->n_seq;
    }
    size_t fmt_base[N_FMT];
    for (int f = 0; f < N_FMT; f++) {
        fmt_base[f] = n_refs;
        n_refs += n_fmt[f];
    }
    const size_t n_crc = (size_t)pp->n_post * n_gpu; /* upper bound */
    /* descriptor layout: host offsets == device offsets */
    const uint64_t o_in = take(L, 8 * n_refs), o_inb = take(L, 8 * n_refs), o_cap = take(L, 8 * n_refs);
    const uint64_t o_out = take(L, 8 * n_refs);
    const uint64_t o_copy = take(L, sizeof(zg_k_copy) * n_copy);
    const uint64_t o_unsh = take(L, sizeof(zg_k_unshuffle) * n_unsh);
    uint64_t o_post[ZG_MAX_CODECS + 2];
    for (int q = 0; q < pp->n_post; q++) o_post[q] = take(L, sizeof(zg_k_unshuffle) * n_gpu);
    const uint64_t o_sc = take(L, sizeof(zg_k_scatter) * count), o_sc2 = take(L, sizeof(zg_k_scatter) * count);
    const uint64_t o_cnt = take(L, 8 * (uint64_t)(nd ? nd : 1) * count);
    const uint64_t o_cnt2 = take(L, 8 * (uint64_t)(nd ? nd : 1) * count);
    const uint64_t o_fill = take(L, itemsize);
    const int with_chk = pp->comp == COMP_GZIP || pp->comp == COMP_ZLIB;
    const uint64_t o_chkd = take(L, sizeof(zg_k_check) * (with_chk ? n_gpu : 0));
    const uint64_t o_zb = take(L, sizeof(zg_zd_block) * zb_n), o_zf = take(L, sizeof(zg_zd_frame) * zf_n);
    const uint64_t o_zh = take(L, sizeof(zg_zd_huf_desc) * zh_n), o_zs = take(L, sizeof(zg_zd_fse_desc) * zs_n);
    const uint64_t o_zord = take(L, sizeof(uint32_t) * zb_n);
    zg_zd_rows zrows;
    memset(&zrows, 0, sizeof zrows);
    j->zstd_mappable = zb_n && pp->comp == COMP_ZSTD ? zstd_rows(j, &zrows) : 0;
    const uint64_t o_safe = take(L, 16); /* a valid empty LZ4 block, standing in for invalid ones */
    const uint64_t o_status = take(L, 4 * n_refs), o_act = take(L, 8 * n_refs), o_crc = take(L, 4 * (n_crc ? n_crc : 1));
    const uint64_t o_lz4 = take(L, 4 * (n_refs ? n_refs : 1));
    const uint64_t o_chk = take(L, 4 * (n_gpu ? n_gpu : 1));
    const uint64_t res_begin = o_status, res_end = L->pos;
    const uint64_t host_end = L->pos;
    const uint64_t o_zlit = take(L, zlit_n), o_zseq = take(L, sizeof(zg_zd_seq) * zseq_n);
    const uint64_t o_zscr = take(L, zg_zd_scratch_bytes((uint32_t)zb_n));
    /* zgpu's DEFLATE decoder splits the streams of a small wave into parts, whose buffers take the room the
     * wave leaves in its set's share of the budget */
    const size_t inflate_parts =
        zg_inflate_parts(n_fmt[FMT_INFLATE], inflate_max_out, j->parts_room, inflate_serial, j->tune->inflate_parts);
    const uint64_t o_iscr = take(L, zg_inflate_scratch_bytes(n_fmt[FMT_INFLATE], inflate_max_out, inflate_parts));
    if (j->trace && n_fmt[FMT_INFLATE])
        fprintf(stderr, "zgpu trace: wave of %zu chunks: %zu DEFLATE streams in %zu parts each (room %.0f MB)\n", count,
                n_fmt[FMT_INFLATE], inflate_parts, j->parts_room / 1e6);
    /* scratch slots: device only; a chunk that decodes straight into the output needs none (or only A) */
    const uint64_t slot = pp->chunk_nbytes > pp->comp_out ? pp->chunk_nbytes : pp->comp_out;
    for (size_t i = first; i < first + count; i++) {
        dtask *t = &j->t[i];
        if (t->kind != T_GPU) continue;
        t->direct = direct_target(j, t, 0, &t->mapped, &t->zplace);
        int blosc_direct = t->direct && pp->comp == COMP_BLOSC;
        t->a_off = pp->comp == COMP_NONE && !pp->needs_b ? t->h_off : (t->direct && !blosc_direct) ? 0 : take(L, slot);
        t->b_off = pp->needs_b && !t->direct ? take(L, slot) : t->a_off;
    }
    ZG_FORWARD(ensure_pinned(st, b, host_end, data_end));
    /* the staged bytes below data_end may be on the device already (copied segment by segment during I/O) */
    ZG_FORWARD(ensure_device(st->copy, &b->d, &b->d_cap, L->pos, j->h2d_done));
    uint8_t *H = b->h, *D = b->d;

    wc->refs = malloc((n_refs ? n_refs : 1) * sizeof *wc->refs);
    wc->crc_task = malloc((n_crc ? n_crc : 1) * sizeof *wc->crc_task);
    wc->chk_task = malloc((n_gpu ? n_gpu : 1) * sizeof *wc->chk_task);
    wc->chk_off = o_chk;
    wc->n_chk = 0;
    ZG_RETURN_IF(!wc->refs || !wc->crc_task || !wc->chk_task, ZGPU_ERR_NO_MEMORY, "out of host memory for descriptors");
    wc->n_refs = n_refs;
    wc->status_off = o_status;
    wc->lz4_off = o_lz4;
    wc->actual_off = o_act;
    wc->crc_off = o_crc;
    wc->n_crc = 0;

    /* compressor stage */
    size_t fill_k[N_FMT] = {0}, kc = 0, ku = 0;
    zg_zd_bases zat = {0, (uint64_t)(uintptr_t)(D + o_zlit), (uint64_t)(uintptr_t)(D + o_zseq), 0, 0, 0, 0};
    zg_zd_frame *zframes = (zg_zd_frame *)(H + o_zf);
    uint64_t max_copy = 0, max_un = 0;
    zg_k_copy *copies = (zg_k_copy *)(H + o_copy);
    zg_k_unshuffle *unsh = (zg_k_unshuffle *)(H + o_unsh);
    uint64_t *cur = malloc((count ? count : 1) * sizeof *cur), *size = malloc((count ? count : 1) * sizeof *size);
    zg_zd_bases *zbase = zf_n ? malloc(count * sizeof *zbase) : NULL;
    if (!cur || !size || (zf_n && !zbase)) {
        free(cur);
        free(size);
        free(zbase);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for descriptors");
    }
    if (zf_n) { /* where each task's zstd descriptors go, then all of them written at once */
        for (size_t i = first; i < first + count; i++) {
            const dtask *t = &j->t[i];
            zbase[i - first] = zat;
            if (t->kind != T_GPU || !t->zp) continue;
            zbase[i - first].src = (uint64_t)(uintptr_t)(D + t->h_off);
            zat.lit += t->zp->lit_bytes;
            zat.seq += t->zp->n_seq * sizeof(zg_zd_seq);
            zat.block += (uint32_t)t->zp->n_blocks;
            zat.frame += (uint32_t)t->zp->n_frames;
            zat.huf += (uint32_t)t->zp->n_hufs;
            zat.fse += (uint32_t)t->zp->n_fses;
        }
        zd_emit e = {j, zbase, (zg_zd_block *)(H + o_zb), zframes, (zg_zd_huf_desc *)(H + o_zh),
                     (zg_zd_fse_desc *)(H + o_zs)};
        zgpu_status es = zg_pool_run(j->a->ctx->pool, count, zd_emit_task, &e);
        if (es != ZGPU_OK) {
            free(cur);
            free(size);
            free(zbase);
            return es;
        }
    }
    for (size_t i = first; i < first + count; i++) {
        dtask *t = &j->t[i];
        if (t->kind != T_GPU) continue;
        uint8_t *src = D + t->h_off, *dstA = D + t->a_off;
        cur[i - first] = t->a_off;
        size[i - first] = pp->comp_out;
        uint32_t zframe = zbase ? zbase[i - first].frame : 0; /* the task's next zstd frame (in its streams' order) */
        if (pp->comp == COMP_BLOSC) {
            int fmt = task_fmt(j, t);
            for (size_t k = 0; k < t->n_streams; k++) {
                const zg_blosc_stream *bs = &t->streams[k];
                if (bs->raw || t->bh.memcpyed) {
                    copies[kc++] = (zg_k_copy){src + bs->src_off, dstA + bs->dst_off, bs->dst_len};
                    if (bs->dst_len > max_copy) max_copy = bs->dst_len;
                    continue;
                }
                size_t r = fill_k[fmt]++;
                ((const void **)(H + o_in))[fmt_base[fmt] + r] = src + bs->src_off;
                ((uint64_t *)(H + o_inb))[fmt_base[fmt] + r] = bs->src_len;
                ((uint64_t *)(H + o_cap))[fmt_base[fmt] + r] = bs->dst_len;
                ((void **)(H + o_out))[fmt_base[fmt] + r] = dstA + bs->dst_off;
                wc->refs[fmt_base[fmt] + r] = (stream_ref){(uint32_t)i, fmt, bs->dst_len};
                if (t->zp) {
                    zframes[zframe].dst = (uint64_t)(uintptr_t)(dstA + bs->dst_off);
                    zframes[zframe++].status_index = (uint32_t)(fmt_base[fmt] + r);
                }
            }
            if (!t->bh.memcpyed && t->bh.shuffle != ZG_BLOSC_NOSHUFFLE) {
                uint8_t *unsh_out = t->direct ? t->direct : D + t->b_off;
                unsh[ku++] = (zg_k_unshuffle){dstA, unsh_out, t->bh.nbytes, t->bh.typesize, t->bh.blocksize,
                                              t->bh.shuffle == ZG_BLOSC_SHUFFLE ? 1u : 2u, t->bh.version,
                                              (uint32_t)t->mapped};
                if (t->bh.nbytes > max_un) max_un = t->bh.nbytes;
                cur[i - first] = t->b_off;
            }
        } else if (pp->comp == COMP_NONE) {
            if (t->a_off != t->h_off) {
                copies[kc++] = (zg_k_copy){src, dstA, pp->comp_out};
                if (pp->comp_out > max_copy) max_copy = pp->comp_out;
            }
        } else {
            if (t->direct) dstA = t->direct;
            int fmt = task_fmt(j, t);
            size_t r = fill_k[fmt]++;
            ((const void **)(H + o_in))[fmt_base[fmt] + r] = src + t->body_off;
            ((uint64_t *)(H + o_inb))[fmt_base[fmt] + r] = t->body_len;
            ((uint64_t *)(H + o_cap))[fmt_base[fmt] + r] = pp->comp_out;
            ((void **)(H + o_out))[fmt_base[fmt] + r] = dstA;
            wc->refs[fmt_base[fmt] + r] = (stream_ref){(uint32_t)i, fmt, pp->comp_out};
            if (t->zp) {
                zframes[zframe].dst = (uint64_t)(uintptr_t)dstA;
                zframes[zframe].status_index = (uint32_t)(fmt_base[fmt] + r);
                zframes[zframe].mapped = t->mapped ? ZG_ZD_MAPPED : t->zplace ? ZG_ZD_MAPPED_AFTER : ZG_ZD_FLAT;
                zframes[zframe].place = (uint64_t)(uintptr_t)t->zplace;
            }
            if (with_chk) {
                ((zg_k_check *)(H + o_chkd))[wc->n_chk] =
                    (zg_k_check){dstA, pp->comp_out, t->check, pp->comp == COMP_GZIP ? 1 : 2};
                wc->chk_task[wc->n_chk++] = (uint32_t)i;
            }
        }
    }
    /* post stages: descriptors per stage, tracking where each chunk's data is */
    size_t n_items[ZG_MAX_CODECS + 2] = {0};
    uint64_t max_item[ZG_MAX_CODECS + 2] = {0};
    for (int q = 0; q < pp->n_post; q++) {
        for (size_t i = first; i < first + count; i++) {
            dtask *t = &j->t[i];
            if (t->kind != T_GPU) continue;
            uint64_t c = cur[i - first], n = size[i - first];
            if (n > max_item[q]) max_item[q] = n;
            if (pp->post[q].kind == POST_SHUFFLE) {
                uint64_t other = c == t->a_off ? t->b_off : t->a_off;
                ((zg_k_unshuffle *)(H + o_post[q]))[n_items[q]++] =
                    (zg_k_unshuffle){D + c, D + other, n, (uint32_t)pp->post[q].param, (uint32_t)(n ? n : 1), 1u, 2u, 0u};
                cur[i - first] = other;
            } else {
                ((zg_k_buf *)(H + o_post[q]))[n_items[q]++] = (zg_k_buf){D + c, n};
                if (pp->post[q].kind == POST_CRC32C) {
                    wc->crc_task[wc->n_crc++] = (uint32_t)i;
                    size[i - first] = n >= 4 ? n - 4 : 0;
                }
            }
        }
    }
    if (j->trace) tl[1] = zg_now();
    /* scatter: GPU-decoded chunks (strides with transposes folded in) and the others (C order, or fill) */
    zg_k_scatter *scg = (zg_k_scatter *)(H + o_sc), *scc = (zg_k_scatter *)(H + o_sc2);
    uint64_t *cntg = (uint64_t *)(H + o_cnt), *cntc = (uint64_t *)(H + o_cnt2);
    size_t ng = 0, ncc = 0;
    int64_t cpu_strides[ZGPU_MAX_DIMS];
    zg_c_strides(nd, j->plan->chunk, itemsize, cpu_strides);
    uint64_t max_rows_g = 1, max_rows_c = 1;
    for (size_t i = first; i < first + count; i++) {
        const dtask *t = &j->t[i];
        const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
        uint8_t *dst = box_dst(j, pt);
        const uint8_t *src = NULL;
        uint64_t rows = 1;
        for (int d = 0; d < nd - 1; d++) rows *= pt->count[d];
        uint64_t *cdst;
        if (t->direct || t->zplace) continue; /* in place already, or by the zstd decoder */
        if (t->kind == T_GPU) {
            src = D + cur[i - first];
            for (int d = 0; d < nd; d++) src += (int64_t)pt->in_chunk[d] * pp->src_strides[d];
            cdst = cntg + ng * (size_t)nd;
            scg[ng++] = (zg_k_scatter){src, dst};
            if (rows > max_rows_g) max_rows_g = rows;
        } else {
            if (t->kind == T_CPU) {
                src = D + t->cpu_off;
                for (int d = 0; d < nd; d++) src += (int64_t)pt->in_chunk[d] * cpu_strides[d];
            }
            cdst = cntc + ncc * (size_t)nd;
            scc[ncc++] = (zg_k_scatter){src, dst};
            if (rows > max_rows_c) max_rows_c = rows;
        }
        for (int d = 0; d < nd; d++) cdst[d] = pt->count[d];
    }
    free(cur);
    free(size);
    free(zbase);
    if (j->trace) tl[2] = zg_now();
    if (zb_n && zg_zd_ticket_order(zframes, zf_n, (uint32_t *)(H + o_zord)) != ZGPU_OK)
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for the zstd decoder's block order");
    memset(H + res_begin, 0, res_end - res_begin);
    memset(H + o_safe, 0, 16);
    memcpy(H + o_fill, j->a->meta.fill_value, itemsize);
    if (j->trace) tl[3] = zg_now();

    /* the rest of the host-to-device copy (what is below h2d_done is there already), on the copy stream; the
     * decode stream waits for it */
    const uint64_t h2d_from = j->h2d_done;
    CU(cudaEventRecord(b->ev[0], st->copy), "cudaEventRecord");
    if (host_end > h2d_from)
        CU(cudaMemcpyAsync(D + h2d_from, H + h2d_from, host_end - h2d_from, cudaMemcpyHostToDevice, st->copy),
           "H2D copy");
    CU(cudaEventRecord(b->ev[1], st->copy), "cudaEventRecord");
    CU(cudaStreamWaitEvent(s, b->ev[1], 0), "cudaStreamWaitEvent");
    /* decode: one nvCOMP batch per format, raw copies, unshuffle, post stages */
    if (n_fmt[FMT_OWN]) {
        const zg_zd_batch zb = {(const zg_zd_block *)(D + o_zb), (const zg_zd_frame *)(D + o_zf),
                                (const zg_zd_huf_desc *)(D + o_zh), (const zg_zd_fse_desc *)(D + o_zs),
                                (uint32_t)zb_n, (uint32_t)zf_n, (zg_zd_bres *)(D + o_zscr),
                                (uint32_t *)(D + o_zscr + sizeof(zg_zd_bres) * zb_n), (int *)(D + o_status),
                                (size_t *)(D + o_act), (const uint32_t *)(D + o_zord), b->aux, b->fork, b->join,
                                zrows, j->tune->zstd_huf_probe, j->tune->profile};
        CU(zg_zd_decode(&zb, s), "zstd decoder kernels");
    }
    if (n_fmt[FMT_INFLATE]) {
        const size_t k = fmt_base[FMT_INFLATE];
        CU(zg_inflate_launch((const void *const *)(D + o_in) + k, (const size_t *)(D + o_inb) + k,
                             (void *const *)(D + o_out) + k, (const size_t *)(D + o_cap) + k, (size_t *)(D + o_act) + k,
                             (int *)(D + o_status) + k, n_fmt[FMT_INFLATE], inflate_max_out, inflate_parts, inflate_serial,
                             D + o_iscr, j->tune->profile, s),
           "DEFLATE decoder kernel");
    }
    if (n_fmt[FMT_LZ4]) {
        const size_t k = fmt_base[FMT_LZ4];
        CU(zg_k_lz4_decode_launch((const void *const *)(D + o_in) + k, (const size_t *)(D + o_inb) + k,
                                  (void *const *)(D + o_out) + k, (const size_t *)(D + o_cap) + k,
                                  (size_t *)(D + o_act) + k, (int *)(D + o_status) + k, n_fmt[FMT_LZ4], s),
           "LZ4 decoder kernel");
    }
    for (int f = 0; f < ZG_NVC_N; f++) {
        if (!n_fmt[f]) continue;
        uint64_t maxo = 0, tot = 0;
        for (size_t r = 0; r < n_fmt[f]; r++) {
            uint64_t c = ((uint64_t *)(H + o_cap))[fmt_base[f] + r];
            if (c > maxo) maxo = c;
            tot += c;
        }
        if (f == ZG_NVC_LZ4 && pp->comp == COMP_BLOSC)
            CU(zg_k_lz4_check_launch((const void **)(D + o_in + 8 * fmt_base[f]), (size_t *)(D + o_inb + 8 * fmt_base[f]),
                                     (const size_t *)(D + o_cap + 8 * fmt_base[f]), n_fmt[f],
                                     (int *)(D + o_lz4) + fmt_base[f], D + o_safe, 1, s),
               "LZ4 check kernel");
        size_t temp = 0;
        ZG_FORWARD(zg_nvc_temp_size((zg_nvc_format)f, n_fmt[f], (size_t)maxo, (size_t)tot, &temp));
        ZG_FORWARD(ensure_device(s, &b->d_temp, &b->d_temp_cap, temp ? temp : 1, 0));
        ZG_FORWARD(zg_nvc_decompress((zg_nvc_format)f, (const void *const *)(D + o_in + 8 * fmt_base[f]),
                                     (const size_t *)(D + o_inb + 8 * fmt_base[f]),
                                     (const size_t *)(D + o_cap + 8 * fmt_base[f]),
                                     (size_t *)(D + o_act + 8 * fmt_base[f]), n_fmt[f], b->d_temp, temp,
                                     (void *const *)(D + o_out + 8 * fmt_base[f]),
                                     (int *)(D + o_status + 4 * fmt_base[f]), s));
    }
    CU(zg_k_check_launch((const zg_k_check *)(D + o_chkd), wc->n_chk, (int *)(D + o_chk), s), "checksum kernel");
    CU(zg_k_copy_launch((const zg_k_copy *)(D + o_copy), kc, max_copy, s), "copy kernel");
    zg_k_row_map map; /* for chunks whose unshuffle places their rows in the output */
    memset(&map, 0, sizeof map);
    map.ndim = nd;
    for (int d = 0; d < nd; d++) {
        map.chunk[d] = (uint32_t)j->plan->chunk[d];
        map.out_strides[d] = j->out_strides[d];
    }
    CU(zg_k_unshuffle_launch((const zg_k_unshuffle *)(D + o_unsh), ku, max_un, &map, s), "unshuffle kernel");
    size_t crc_base = 0;
    for (int q = 0; q < pp->n_post; q++) {
        const void *items = D + o_post[q];
        switch (pp->post[q].kind) {
        case POST_SHUFFLE:
            CU(zg_k_unshuffle_launch((const zg_k_unshuffle *)items, n_items[q], max_item[q], NULL, s), "shuffle kernel");
            break;
        case POST_CRC32C:
            CU(zg_k_crc32c_launch((const zg_k_buf *)items, n_items[q], (int *)(D + o_crc) + crc_base, s), "crc32c kernel");
            crc_base += n_items[q];
            break;
        case POST_BYTESWAP:
            CU(zg_k_byteswap_launch((const zg_k_buf *)items, n_items[q], max_item[q], pp->post[q].param, s), "byteswap kernel");
            break;
        case POST_DELTA:
            CU(zg_k_delta_launch((const zg_k_buf *)items, n_items[q], pp->post[q].param, s), "delta kernel");
            break;
        }
    }
    CU(cudaEventRecord(b->ev[2], s), "cudaEventRecord");
    zg_k_scatter_params sp;
    memset(&sp, 0, sizeof sp);
    sp.ndim = nd;
    sp.itemsize = (int)itemsize;
    memcpy(sp.dst_strides, j->out_strides, sizeof(int64_t) * (size_t)nd);
    sp.d_fill = D + o_fill;
    memcpy(sp.src_strides, pp->src_strides, sizeof(int64_t) * (size_t)nd);
    CU(zg_k_scatter_launch(&sp, (const zg_k_scatter *)(D + o_sc), (const uint64_t *)(D + o_cnt), ng, max_rows_g, s),
       "scatter kernel");
    memcpy(sp.src_strides, cpu_strides, sizeof(int64_t) * (size_t)nd);
    CU(zg_k_scatter_launch(&sp, (const zg_k_scatter *)(D + o_sc2), (const uint64_t *)(D + o_cnt2), ncc, max_rows_c, s),
       "scatter kernel");
    CU(cudaEventRecord(b->ev[3], s), "cudaEventRecord");
    if (res_end > res_begin)
        CU(cudaMemcpyAsync(H + res_begin, D + res_begin, res_end - res_begin, cudaMemcpyDeviceToHost, s), "D2H statuses");
    CU(cudaEventRecord(b->done, s), "cudaEventRecord");
    b->in_use = 1;
    wc->active = 1;
    if (j->trace) {
        tl[4] = zg_now();
        fprintf(stderr, "zgpu trace: wave queued in %.2f ms: descriptors %.2f, scatter list %.2f, zstd block order %.2f, "
                "copies and kernels %.2f\n", (tl[4] - tl[0]) * 1e3, (tl[1] - tl[0]) * 1e3, (tl[2] - tl[1]) * 1e3,
                (tl[3] - tl[2]) * 1e3, (tl[4] - tl[3]) * 1e3);
    }
    return ZGPU_OK;
}

/* ------------------------------------------------------------------------------------------------
 * The read driver
 * ---------------------------------------------------------------------------------------------- */
static void free_tasks(job *j) {
    for (size_t i = 0; i < j->n_t; i++) {
        free(j->t[i].streams);
        plan_drop(&j->t[i]);
    }
    free(j->t);
    j->t = NULL;
}

/* Cuts a region of the wave's staging into up to 32 segments at chunk boundaries: the stored bytes
 * [0, end) (cpu = 0), or the host-decoded chunks of CPU tasks up to `end` (cpu = 1). The last segment's copy
 * is what the wave's decode waits for after its last read (8 segments of a 280 MB field wave: 1.4 ms). */
static zgpu_status make_segments(wave_io *io, uint64_t end, int cpu) {
    enum { MAX_SEG = 32 };
    segment *seg = io->seg = calloc(MAX_SEG, sizeof *io->seg);
    io->task_seg = calloc(io->count ? io->count : 1, sizeof *io->task_seg);
    ZG_RETURN_IF(!io->seg || !io->task_seg, ZGPU_ERR_NO_MEMORY, "out of host memory for copy segments");
    const uint64_t target = end / MAX_SEG + 1;
    size_t n = 0;
    int left = 0;
    for (size_t i = io->first; i < io->first + io->count; i++) {
        const dtask *t = &io->j->t[i];
        if (cpu ? t->kind != T_CPU : t->kind == T_MISSING) continue;
        const uint64_t at = cpu ? t->cpu_off : t->h_off;
        if (left && at - seg[n].begin >= target && n + 1 < MAX_SEG) {
            seg[n].end = at;
            atomic_init(&seg[n].left, left);
            seg[++n].begin = at;
            left = 0;
        }
        if (!left) seg[n].begin = at;
        io->task_seg[i - io->first] = (uint32_t)n;
        left++;
    }
    seg[n].end = end;
    atomic_init(&seg[n].left, left);
    return ZGPU_OK;
}

static void free_segments(wave_io *io) {
    free(io->seg);
    free(io->task_seg);
    io->seg = NULL;
    io->task_seg = NULL;
}

/* Wave sizing: a selection whose chunks all decode fast per chunk (zgpu's zstd decoder, blosc's small blocks,
 * uncompressed, host-decoded) or whose decoder splits the chunks of a small wave (zgpu's DEFLATE decoder: a
 * wave of fewer chunks splits each into more parts) is read in about PIPELINE_WAVES waves (the DEFLATE decoder:
 * PIPELINE_WAVES_DEFLATE) of at least PIPELINE_MIN_WAVE bytes, so that the decode of one wave overlaps the I/O
 * of the next. nvCOMP decodes a whole zstd / DEFLATE / LZ4 chunk in one thread block: the time per wave is that
 * of one chunk whatever the wave's size, so such reads keep the fewest waves the memory budget allows. So do
 * selections that compress better than 4:1: their I/O is short next to their decode, which a split would only
 * lengthen (a wave's decode time has a floor, its longest chain of dependent steps). ZGPU_PIPELINE_WAVES=n sets
 * the count for every read, with no minimum wave size (1: off, for measuring the decode stage alone; n > 1 also
 * lets tests pipeline small arrays). Returns the wave count to aim at. */
/* Five: a wave's reads cost little more than its share since the next wave's overlap them (run_waves), and the
 * last wave's decode, the read's tail after its I/O, shrinks with it. H100, zgpu bench --repeat 9, four rounds
 * each (ms, 3 -> 5 waves): field blosc-lz4 19.9-21.6 -> 18.8-20.2, field zstd 26.7-29.4 -> 25.3-28.5, oct zstd
 * 31.6-34.1 -> 30.4-32.2, oct blosc-lz4 24.9-29.3 -> 21.8-23.1, field sharded-zstd 26.2-29.3 -> 25.1-27.9. */
#define PIPELINE_WAVES 5
/* zgpu's DEFLATE decoder: its decode is the longer stage, so the first wave's I/O (before any decode) is what a
 * smaller wave saves. H100, four waves against three (zgpu bench --repeat 5, two rounds): oct gzip 15.4-15.5 ->
 * 15.7-15.8 GB/s, field gzip 14.1-14.2 -> 14.7 */
#define PIPELINE_WAVES_DEFLATE 4
#define PIPELINE_MIN_WAVE ((uint64_t)128 << 20)
static int forced_waves(const job *j) { return j->tune->pipeline_waves; /* 0: zgpu's choice */ }

/* The chunks the read finds decode to more than 4 times their stored bytes. */
static int compresses_over_4(const job *j) {
    uint64_t stored = 0, decoded = 0;
    for (size_t i = 0; i < j->n_t; i++)
        if (j->t[i].kind != T_MISSING) {
            stored += j->t[i].nbytes;
            decoded += j->pp.chunk_nbytes;
        }
    return 4 * stored < decoded;
}

static int pipeline_waves(const job *j) {
    if (forced_waves(j)) return forced_waves(j);
    if (j->gpu_decode) {
        switch (j->pp.comp) {
        case COMP_ZSTD:
            if (!use_own_zstd(j)) return 1;
            break;
        case COMP_GZIP:
        case COMP_ZLIB:
            if (j->deflate_mode != DEFLATE_OWN) return 1;
            return compresses_over_4(j) ? 1 : PIPELINE_WAVES_DEFLATE;
        case COMP_LZ4: return 1;
        default: break;
        }
    }
    return compresses_over_4(j) ? 1 : PIPELINE_WAVES;
}

/* The buffer set's last wave is finished (or there is none): check_wave would not wait. */
static int set_free(bufset *b, const wave_check *wc) {
    if (!wc->active) return 1;
    const cudaError_t e = cudaEventQuery(b->done);
    if (e == cudaErrorNotReady) return 0;
    return 1; /* done, or an error check_wave reports */
}

/* After a wave (also a failed one): its reads finished, its pieces and segments freed. */
static void wave_io_free(wave_io *io) {
    if (io->reading) zg_pool_finish(io->j->a->ctx->pool, io->reading);
    io->reading = NULL;
    free_pieces(io);
    free_segments(io);
}

/* Wave w's start: its buffer set's last wave finished and checked, its stored bytes laid out in the staging,
 * then its reads (phase A) queued on the pool. */
static zgpu_status wave_start(job *j, wave_io *io, const zg_wave *wv, size_t w, bufset *b, wave_check *wc,
                              zgpu_read_stats *stats) {
    struct zg_device_state *st = j->st;
    ZG_FORWARD(check_wave(j, b, wc, stats));
    io->j = j;
    io->w = w;
    io->bs = b;
    io->first = wv->first;
    io->count = wv->count;
    io->L.pos = 0;
    for (size_t i = io->first; i < io->first + io->count; i++)
        if (j->t[i].kind != T_MISSING)
            j->t[i].h_off = take(&io->L, j->t[i].nbytes + (j->t[i].kind == T_GPU ? ALIGN : 0));
    io->r1_end = io->L.pos;
    ZG_FORWARD(ensure_pinned(st, b, io->r1_end ? io->r1_end : 1, 0));
    /* device room for the whole wave now (the cost model's estimate), so that staged bytes can go there
     * during the I/O; launch_wave grows it if the estimate was short */
    io->dev_need = wv->bytes > io->r1_end ? wv->bytes : io->r1_end;
    ZG_FORWARD(ensure_device(st->copy, &b->d, &b->d_cap, io->dev_need ? io->dev_need : 1, 0));
    if (j->use_gds && cudaStreamSynchronize(st->copy) != cudaSuccess)
        return zg_error(ZGPU_ERR_CUDA, "stream synchronisation failed");
    io->h2d_done = 0;
    if (!j->use_gds && j->gpu_decode) ZG_FORWARD(make_segments(io, io->r1_end, 0));
    atomic_store(&io->io_ns, 0);
    atomic_store(&io->parse_ns, 0);
    atomic_store(&io->cpu_ns, 0);
    io->t0 = zg_now();
    ZG_FORWARD(make_pieces(io));
    return zg_pool_start(j->a->ctx->pool, io->n_pieces, phase_a_piece, io, &io->reading);
}

/* Waits for wave io->w's reads (this thread working on them too), then checks GDS-read frames on the host. */
static zgpu_status wave_finish_reads(job *j, wave_io *io, wave_check *wc, zgpu_read_stats *stats) {
    struct zg_device_state *st = j->st;
    bufset *b = io->bs;
    zgpu_status s = zg_pool_finish(j->a->ctx->pool, io->reading);
    io->reading = NULL;
    free_pieces(io);
    const double now = zg_now();
    stats->io_s += now - (io->t0 > j->io_end ? io->t0 : j->io_end); /* (waves' reads may overlap: counted once) */
    j->io_end = now;
    if (j->trace)
        fprintf(stderr, "zgpu trace: wave %zu read in %.2f ms: threads' time reading %.2f ms, parsing %.2f ms\n", io->w,
                (now - io->t0) * 1e3, (double)atomic_load(&io->io_ns) / 1e6, (double)atomic_load(&io->parse_ns) / 1e6);
    wc->wave = io->w;
    wc->host_read = (now - j->t_fork) * 1e3;
    if (s == ZGPU_OK && j->use_gds && j->host_parse && io->r1_end) {
        /* frames must be checked on the host: bring the stored bytes back once */
        if (cudaMemcpyAsync(b->h, b->d, io->r1_end, cudaMemcpyDeviceToHost, st->stream) != cudaSuccess ||
            cudaStreamSynchronize(st->stream) != cudaSuccess)
            s = zg_error(ZGPU_ERR_CUDA, "copying GDS-read bytes back for frame checks failed");
    }
    if (s == ZGPU_OK && j->gpu_decode && j->use_gds) s = zg_pool_run(j->a->ctx->pool, io->count, phase_parse_task, io);
    /* the stored bytes are on the device (queued segments, or GDS with nothing changed on the host), or not
     * needed there (the host decodes everything) */
    if (s == ZGPU_OK && (io->seg || !j->gpu_decode || (j->use_gds && !j->host_parse))) io->h2d_done = io->r1_end;
    free_segments(io);
    return s;
}

static int wave_has_cpu_tasks(const job *j, const wave_io *io) {
    for (size_t i = io->first; i < io->first + io->count; i++)
        if (j->t[i].kind == T_CPU) return 1;
    return 0;
}

/* Wave io->w after its reads: the chunks the GPU does not take decoded on the host, then the wave launched. */
static zgpu_status wave_launch(job *j, wave_io *io, wave_check *wc, zgpu_read_stats *stats, uint64_t set_room) {
    struct zg_device_state *st = j->st;
    bufset *b = io->bs;
    layout L = io->L;
    for (size_t i = io->first; i < io->first + io->count; i++)
        if (j->t[i].kind == T_CPU) j->t[i].cpu_off = take(&L, j->pp.chunk_nbytes);
    zgpu_status s = ensure_pinned(st, b, L.pos ? L.pos : 1, io->r1_end);
    /* host-decoded chunks go to the device in segments too, as they are done */
    const uint64_t cpu_end = L.pos;
    if (s == ZGPU_OK && cpu_end > io->r1_end) {
        s = ensure_device(st->copy, &b->d, &b->d_cap, cpu_end, io->h2d_done);
        if (s == ZGPU_OK) s = make_segments(io, cpu_end, 1);
    }
    if (s == ZGPU_OK) {
        double t_cpu = zg_now(); /* host decode of CPU-fallback chunks counts as decode time */
        s = zg_pool_run(j->a->ctx->pool, io->count, phase_cpu_task, io);
        stats->decode_s += zg_now() - t_cpu;
    }
    if (s == ZGPU_OK && io->seg) io->h2d_done = cpu_end;
    free_segments(io);
    if (s != ZGPU_OK) return s;
    j->bs = b;
    j->first = io->first;
    j->count = io->count;
    j->h2d_done = io->h2d_done;
    j->parts_room = set_room > io->dev_need ? set_room - io->dev_need : 0;
    s = launch_wave(j, b, &L, wc);
    wc->host_launch = (zg_now() - j->t_fork) * 1e3;
    return s;
}

static zgpu_status run_waves(job *j, zgpu_read_stats *stats) {
    struct zg_device_state *st = j->st;
    const pipe *pp = &j->pp;
    const uint64_t slot = zg_align_up(pp->chunk_nbytes > pp->comp_out ? pp->chunk_nbytes : pp->comp_out, ALIGN);
    uint64_t *cost = malloc((j->n_t ? j->n_t : 1) * sizeof *cost);
    ZG_RETURN_IF(!cost, ZGPU_ERR_NO_MEMORY, "out of host memory planning waves");
    for (size_t i = 0; i < j->n_t; i++) {
        const dtask *t = &j->t[i];
        cost[i] = 64; /* descriptors */
        /* a chunk that decodes straight into the output needs no scratch slot; blosc one slot (its shuffled
         * blocks), assuming the chunk is shuffled (launch_wave grows the buffer if not) */
        int mapped;
        uint8_t *zplace;
        const int direct = t->kind == T_GPU && direct_target(j, t, 1, &mapped, &zplace) != NULL;
        const uint64_t slots = direct ? (pp->comp == COMP_BLOSC ? 1 : 0) : (pp->needs_b ? 2 : 1);
        if (t->kind == T_GPU) cost[i] += zg_align_up(t->nbytes, ALIGN) + ALIGN + slots * slot;
        /* zstd's literal buffer (known only after parsing): at most the chunk, and at most 8 literals per stored
         * byte (Huffman codes are at least one bit) */
        if (t->kind == T_GPU && (pp->comp == COMP_ZSTD || pp->comp == COMP_BLOSC) &&
            use_own_zstd(j))
            cost[i] += slot < 8 * t->nbytes ? slot : 8 * t->nbytes;
        else if (t->kind == T_CPU) cost[i] += zg_align_up(t->nbytes, ALIGN) + slot;
    }
    zg_wave *waves = NULL;
    size_t nw = 0;
    const size_t budget = j->a->ctx->opts.device_memory_budget ? j->a->ctx->opts.device_memory_budget : st->auto_budget;
    uint64_t limit = zg_wave_limit(budget);
    /* a few waves, so that the decode of one overlaps the I/O of the next (on another stream) */
    const unsigned *shape = j->tune->wave_shape; /* the waves' relative sizes, for measuring shapes (none: equal) */
    const size_t n_shape = (size_t)j->tune->n_wave_shape;
    zgpu_status s;
    if (n_shape) {
        s = zg_waves_split_shaped(j->n_t, cost, shape, n_shape, limit, &waves, &nw);
    } else {
        limit = zg_pipeline_limit(j->n_t, cost, pipeline_waves(j), forced_waves(j) ? 0 : PIPELINE_MIN_WAVE, limit);
        s = zg_waves_split(j->n_t, cost, limit, &waves, &nw);
    }
    free(cost);
    if (s != ZGPU_OK) return zg_error_prefix(ZG_ARRAY_WHERE_FMT ": ", j->a->path), s;
    stats->waves = (int)nw;
    /* tuning's wave_sets (2..ZG_MAX_SETS) caps the waves in flight, for measuring what the ring buys */
    const int sets_cap = j->tune->wave_sets >= 2 && j->tune->wave_sets <= ZG_MAX_SETS ? j->tune->wave_sets : ZG_MAX_SETS;
    const size_t n_sets = zg_sets_in_flight(waves, nw, budget, (size_t)sets_cap);
    wave_check wc[ZG_MAX_SETS];
    memset(wc, 0, sizeof wc);
    const int host_parse = pp->comp != COMP_NONE || pp->n_outer_crc > 0 || !j->gpu_decode;
    j->host_parse = host_parse;
    /* fork: both sets' streams start after what the read's stream waits for (the caller's earlier work) */
    if (cudaEventRecord(st->ev[0], st->stream) != cudaSuccess)
        s = zg_error(ZGPU_ERR_CUDA, "CUDA error starting the read's streams");
    j->t_fork = zg_now();
    j->trace = j->tune->trace;
    if (j->trace)
        fprintf(stderr, "zgpu trace: %zu waves on %zu buffer sets, largest %llu bytes, budget %zu\n", nw, n_sets,
                (unsigned long long)zg_waves_largest(waves, nw), budget);
    for (int k = 0; k < ZG_MAX_SETS && s == ZGPU_OK; k++)
        if (cudaStreamWaitEvent(st->set[k].stream, st->ev[0], 0) != cudaSuccess)
            s = zg_error(ZGPU_ERR_CUDA, "CUDA error starting the read's streams");
    /* Wave w's reads, then its host work and launch. When wave w + 1's buffer set is free at once (its last wave
     * decoded: three sets or more), wave w + 1's reads are queued on the pool before waiting for wave w's, so
     * that the pool's threads go on to them as wave w's run out (rather than idling while the last pieces and
     * frame checks of wave w finish) and read on while the main thread launches wave w. tuning's wave_overlap OFF
     * turns this off (for measuring it). */
    const int overlap = j->gpu_decode && !j->use_gds && j->tune->wave_overlap != ZGPU_SWITCH_OFF;
    wave_io io[2];
    memset(io, 0, sizeof io);
    j->io_end = 0;
    if (s == ZGPU_OK && nw) s = wave_start(j, &io[0], &waves[0], 0, &st->set[0], &wc[0], stats);
    for (size_t w = 0; w < nw && s == ZGPU_OK; w++) {
        wave_io *cur = &io[w & 1], *next = &io[(w + 1) & 1];
        const size_t k = w % n_sets, k1 = (w + 1) % n_sets;
        int early = 0;
        if (overlap && w + 1 < nw && set_free(&st->set[k1], &wc[k1])) {
            s = wave_start(j, next, &waves[w + 1], w + 1, &st->set[k1], &wc[k1], stats);
            early = 1;
        }
        if (s == ZGPU_OK && cur->reading) s = wave_finish_reads(j, cur, &wc[k], stats);
        /* host-decoded chunks get the pool to themselves (queued behind wave w + 1's reads, only this thread
         * would work on them until those had run out) */
        if (s == ZGPU_OK && early && next->reading && wave_has_cpu_tasks(j, cur))
            s = wave_finish_reads(j, next, &wc[k1], stats);
        if (s == ZGPU_OK) s = wave_launch(j, cur, &wc[k], stats, budget / n_sets);
        if (s == ZGPU_OK && !early && w + 1 < nw) s = wave_start(j, next, &waves[w + 1], w + 1, &st->set[k1], &wc[k1], stats);
    }
    for (int i = 0; i < 2; i++) wave_io_free(&io[i]); /* after an error: reads still under way finish first */
    for (size_t w = nw > n_sets ? nw - n_sets : 0; w < nw; w++) { /* the waves still in flight, in order */
        const size_t k = w % n_sets;
        zgpu_status s2 = check_wave(j, &st->set[k], &wc[k], stats);
        if (s == ZGPU_OK) s = s2;
    }
    zg_span_close(&j->span[0], &stats->h2d_s);
    zg_span_close(&j->span[1], &stats->decode_s);
    zg_span_close(&j->span[2], &stats->scatter_s);
    for (int k = 0; k < ZG_MAX_SETS; k++) {
        zgpu_status s2 = check_wave(j, &st->set[k], &wc[k], stats); /* after an error: waves still active */
        if (s == ZGPU_OK) s = s2;
        free(wc[k].refs);
        free(wc[k].crc_task);
        free(wc[k].chk_task);
        /* join: the read's stream continues after both sets' work */
        if (cudaEventRecord(st->set[k].done, st->set[k].stream) != cudaSuccess ||
            cudaStreamWaitEvent(st->stream, st->set[k].done, 0) != cudaSuccess)
            if (s == ZGPU_OK) s = zg_error(ZGPU_ERR_CUDA, "CUDA error joining the read's streams");
    }
    if (s != ZGPU_OK) { /* nothing may still write into the caller's buffer or read the staging */
        cudaStreamSynchronize(st->copy);
        for (int k = 0; k < ZG_MAX_SETS; k++) cudaStreamSynchronize(st->set[k].stream);
        cudaStreamSynchronize(st->stream);
    }
    free(waves);
    return s;
}

/* order_user: order our stream after the caller's and the caller's after ours (the async path instead
 * synchronised the caller's stream up front and gates it with a host function). */
static zgpu_status run_read(zgpu_array *a, const uint64_t *start, const uint64_t *count, void *device_out,
                            const int64_t *out_strides, void *user_stream, int order_user) {
    zgpu_read_stats stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    const double t_begin = zg_now();
    struct zg_device_state *st;
    ZG_FORWARD(get_state(a->ctx, &st));
    job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.tune = &a->ctx->tuning;
    j.st = st;
    j.out = device_out;
    ZG_FORWARD(zg_resolve_strides(a, count, out_strides, j.out_strides));
    zg_plan plan;
    ZG_FORWARD(zg_plan_build(a, start, count, &plan));
    zgpu_status s = zg_plan_resolve(a, &plan);
    stats.plan_s = zg_now() - t_begin;
    if (s != ZGPU_OK) {
        zg_plan_free(&plan);
        return s;
    }
    j.plan = &plan;
    j.chain = a->shard ? zg_sharding_inner_chain(a->shard) : a->chain;
    analyse_chain(j.chain, &j.pp);
    const zgpu_decoder_choice ddec = j.tune->deflate_decoder;
    const int deflate = j.pp.comp == COMP_GZIP || j.pp.comp == COMP_ZLIB;
    j.deflate_mode = ddec == ZGPU_DECODER_NVCOMP ? DEFLATE_NVCOMP : ddec == ZGPU_DECODER_HOST ? DEFLATE_HOST : DEFLATE_OWN;
    if (j.pp.gpu && deflate && j.deflate_mode == DEFLATE_HOST)
        not_gpu(&j.pp, "codec '%s': DEFLATE decodes on the host (tuning deflate_decoder = host)", j.pp.comp_name);
    if (j.pp.gpu && j.pp.comp == COMP_ZSTD && j.tune->zstd_decoder == ZGPU_DECODER_HOST)
        not_gpu(&j.pp, "codec '%s': zstd decodes on the host (tuning zstd_decoder = host)", j.pp.comp_name);
    if (j.pp.gpu && deflate && j.deflate_mode == DEFLATE_NVCOMP && !a->ctx->opts.gpu_trust_input)
        not_gpu(&j.pp, "codec '%s': nvCOMP's DEFLATE decoder needs gpu_trust_input (it assumes valid input)",
                j.pp.comp_name);
    j.nvc_ok = zg_nvc_available(NULL);
    for (int f = 0; f < ZG_NVC_N; f++) {
        size_t tmp;
        j.in_align[f] = j.out_align[f] = 1;
        if (j.nvc_ok && zg_nvc_alignments((zg_nvc_format)f, &j.in_align[f], &j.out_align[f], &tmp) != ZGPU_OK) j.nvc_ok = 0;
    }
    j.in_align[FMT_OWN] = j.out_align[FMT_OWN] = 1;
    j.in_align[FMT_INFLATE] = j.out_align[FMT_INFLATE] = 1;
    j.in_align[FMT_LZ4] = j.out_align[FMT_LZ4] = 1;
    j.lz4_mode = j.tune->lz4_decoder == ZGPU_DECODER_NVCOMP && j.nvc_ok ? LZ4_NVCOMP : LZ4_OWN;
    j.zstd_mode = j.tune->zstd_decoder == ZGPU_DECODER_NVCOMP && j.nvc_ok ? ZSTD_NVCOMP : ZSTD_OWN;
    j.gpu_decode = a->ctx->opts.gpu_decode && j.pp.gpu &&
                   (j.pp.comp == COMP_NONE || j.nvc_ok || j.pp.comp == COMP_ZSTD || j.pp.comp == COMP_BLOSC ||
                    (deflate && j.deflate_mode == DEFLATE_OWN));
    /* GDS: AUTO uses it only when no frame needs checking on the host; ON always (or fails) */
    const char *why = "";
    zgpu_gds_mode gm = a->ctx->opts.gds_mode;
    if (gm == ZGPU_GDS_ON) {
        if (!zg_gds_usable(1, &why)) {
            zg_plan_free(&plan);
            return zg_error(ZGPU_ERR_CUDA, ZG_ARRAY_WHERE_FMT ": GPUDirect Storage required (ZGPU_GDS_ON) but not usable: %s",
                            a->path, why);
        }
        j.use_gds = 1;
    } else if (gm == ZGPU_GDS_AUTO) {
        j.use_gds = j.gpu_decode && j.pp.comp == COMP_NONE && j.pp.n_outer_crc == 0 && zg_gds_usable(0, &why);
    }
    j.n_t = plan.n_tasks;
    j.t = calloc(j.n_t ? j.n_t : 1, sizeof *j.t);
    if (!j.t) {
        zg_plan_free(&plan);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for %zu chunk tasks", plan.n_tasks);
    }
    for (size_t i = 0; i < j.n_t; i++) {
        const zg_chunk_task *pt = &plan.tasks[i];
        dtask *t = &j.t[i];
        t->plan_i = i;
        t->nbytes = pt->nbytes;
        t->kind = pt->state != ZG_TASK_PRESENT ? T_MISSING : (j.gpu_decode ? T_GPU : T_CPU);
        if (t->kind != T_MISSING) stats.stored_bytes += pt->nbytes;
    }
    /* a driver that loads can still refuse the store's files (their file system): try one first; AUTO then
     * stages through host memory, ON fails saying why */
    if (j.use_gds) {
        const zg_chunk_task *probe = NULL;
        for (size_t i = 0; i < j.n_t && !probe; i++)
            if (j.t[i].kind != T_MISSING) probe = &plan.tasks[j.t[i].plan_i];
        if (probe) {
            char path[ZG_PATH_MAX];
            zgpu_status g = zg_store_fs_path(a->store, plan.objects[probe->object].key, path);
            if (g == ZGPU_OK) g = zg_gds_check_file(path);
            if (g != ZGPU_OK && gm == ZGPU_GDS_ON) {
                zg_error_prefix(ZG_ARRAY_WHERE_FMT ": GPUDirect Storage required (ZGPU_GDS_ON) but not usable: ", a->path);
                free_tasks(&j);
                zg_plan_free(&plan);
                return g;
            }
            if (g != ZGPU_OK) j.use_gds = 0;
        }
    }
    pthread_mutex_lock(&st->lock);
    cudaError_t ce = cudaSetDevice(st->device);
    /* order our stream after the caller's earlier work */
    if (ce == cudaSuccess && order_user) ce = cudaEventRecord(st->ev[1], (cudaStream_t)user_stream);
    if (ce == cudaSuccess && order_user) ce = cudaStreamWaitEvent(st->stream, st->ev[1], 0);
    if (ce != cudaSuccess) s = zg_error(ZGPU_ERR_CUDA, "CUDA error ordering after the caller's stream: %s", cudaGetErrorString(ce));
    if (s == ZGPU_OK) s = reserve_plans(st, j.n_t);
    if (s == ZGPU_OK) s = run_waves(&j, &stats);
    if (s == ZGPU_OK) {
        /* later work on the caller's stream comes after ours */
        ce = cudaEventRecord(st->ev[2], st->stream);
        if (ce == cudaSuccess && order_user) ce = cudaStreamWaitEvent((cudaStream_t)user_stream, st->ev[2], 0);
        if (ce == cudaSuccess) ce = cudaStreamSynchronize(st->stream);
        if (ce != cudaSuccess) s = zg_error(ZGPU_ERR_CUDA, "CUDA error finishing the read: %s", cudaGetErrorString(ce));
    }
    trim_plans(st);
    pthread_mutex_unlock(&st->lock);
    if (s == ZGPU_OK) {
        stats.total_s = zg_now() - t_begin;
        stats.decoded_bytes = a->meta.dtype.size;
        for (int d = 0; d < plan.ndim; d++) stats.decoded_bytes *= count[d];
        stats.chunks = (int)plan.n_tasks;
        stats.gds_used = j.use_gds;
        for (size_t i = 0; i < j.n_t; i++) {
            if (j.t[i].kind == T_GPU) stats.gpu_decoded++;
            else if (j.t[i].kind == T_CPU) stats.cpu_decoded++;
        }
        zg_array_set_stats(a, &stats);
    }
    free_tasks(&j);
    zg_plan_free(&plan);
    return s;
}

zgpu_status zg_cuda_read(zgpu_array *a, const uint64_t *start, const uint64_t *count, void *device_out,
                         const int64_t *out_strides, void *stream) {
    return run_read(a, start, count, device_out, out_strides, stream, 1);
}

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
    uint64_t start[ZGPU_MAX_DIMS], count[ZGPU_MAX_DIMS];
    int64_t strides[ZGPU_MAX_DIMS];
    int has_strides;
    void *out, *stream;
};

static void *async_main(void *arg) {
    struct zgpu_event *ev = arg;
    zgpu_status s = run_read(ev->a, ev->start, ev->count, ev->out, ev->has_strides ? ev->strides : NULL, NULL, 0);
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

zgpu_status zg_cuda_read_async(zgpu_array *a, const uint64_t *start, const uint64_t *count, void *device_out,
                               const int64_t *out_strides, void *stream, struct zgpu_event **event) {
    struct zgpu_event *ev = calloc(1, sizeof *ev);
    ZG_RETURN_IF(!ev, ZGPU_ERR_NO_MEMORY, "out of host memory for an event");
    int nd = a->meta.ndim;
    for (int d = 0; d < nd; d++) {
        ev->start[d] = start[d];
        ev->count[d] = count[d];
        if (out_strides) ev->strides[d] = out_strides[d];
    }
    ev->has_strides = out_strides != NULL;
    ev->a = a;
    ev->out = device_out;
    ev->stream = stream;
    pthread_mutex_init(&ev->mu, NULL);
    pthread_cond_init(&ev->cv, NULL);
    /* Work queued on `stream` before this call must finish before the read writes: wait for it here
     * (the read itself runs on zgpu's own stream). */
    cudaError_t ce = cudaStreamSynchronize((cudaStream_t)stream);
    if (ce == cudaSuccess) ce = cudaLaunchHostFunc((cudaStream_t)stream, stream_gate, ev);
    if (ce != cudaSuccess) {
        pthread_cond_destroy(&ev->cv);
        pthread_mutex_destroy(&ev->mu);
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
    /* the stream's host function may still be about to return: wait for the stream to pass it */
    cudaStreamSynchronize((cudaStream_t)ev->stream);
    pthread_cond_destroy(&ev->cv);
    pthread_mutex_destroy(&ev->mu);
    free(ev);
}
