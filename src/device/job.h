/* The device executor's private header: what its phase files share (the read's job, its tasks, buffer sets,
 * a wave's I/O and checks). CUDA-only; plain C over the CUDA runtime.
 *
 *   state.c  device state, streams, events, buffer sets, pinned/device pools, probe
 *   route.c  chain analysis (which decoders, which post stages); host parse of a task for the GPU
 *   fetch.c  phase A: pieces, pread into pinned staging or GDS, segments copied as they complete, host decode
 *   place.c  where a chunk's decode lands: direct targets, mapped rows, scratch and scatter
 *   launch.c one wave's descriptors, its host-to-device copy and its launches
 *   check.c  per-chunk statuses -> errors naming the array, chunk and codec
 *   waves.c  waves, the ring of buffer sets, overlap of one wave's reads with the last one's launch
 *   read.c   one read (dev_run_read)
 *   async.c  zgpu_event and async reads (and the jobs async writes run on it)
 *   host_route.c  a device read's host route;  host_dest.c  a host read decoded on the GPU (device read + copy back)
 * Writes from device memory use the device state (its kept write buffers, wlock) but not the rest:
 *   write_device.c  one write (zg_device_write; its host-side plan: plan/write_units.h)
 *   write_async.c   zgpu_array_write_device_async */
#ifndef ZG_DEVICE_JOB_H
#define ZG_DEVICE_JOB_H
#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/chain.h"
#include "codec/crc32c.h"
#include "codec/sharding.h"
#include "convert/convert.h"
#include "common/endian.h"
#include "common/status.h"
#include "device/device.h"
#include "device/shim/cufile.h"
#include "gpucodec/blosc/blosc_gpu.h"
#include "gpucodec/blosc/blosc_parse.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/post/post_kernels.h"
#include "gpucodec/zstd/zstd_gpu.h"
#include "gpucodec/zstd/zstd_plan.h"
#include "host/scratch.h"
#include "plan/plan.h"
#include "plan/waves.h"

#define ALIGN ZG_GPU_ALIGN /* every staged object and scratch slot starts on this boundary */
/* Buffer sets, each with its own stream: up to this many waves are in flight at once. Two are enough when
 * waves are as large as memory allows (the host waits for wave w - 2 before reusing its buffers); a read
 * split for overlap into waves of which more fit in the budget uses more, so that the host never waits for a
 * decode before reading the next wave: with two sets the third wave's I/O waited for the first's decode. */
#define ZG_MAX_SETS 4
/* Device writes' buffer sets at most: more than two where a wave holds few objects (shards), so that the writes of
 * several waves run on the pool at once (write_device.c) */
#define ZG_WD_SETS 4

#define CU(call, what)                                                                                     \
    do {                                                                                                   \
        cudaError_t zg_cu_e_ = (call);                                                                     \
        if (zg_cu_e_ != cudaSuccess)                                                                       \
            return zg_error(ZGPU_ERR_CUDA, "CUDA error in %s: %s", what, cudaGetErrorString(zg_cu_e_));    \
    } while (0)


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
    bufset set[ZG_MAX_SETS]; /* a ring: wave w uses set w % n_sets (dev_run_waves picks n_sets per read) */
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
    /* the device chunk cache (zgpu_context_options.device_cache_bytes; chunk_cache_dev.c): NULL when off; its
     * dropped entries' device memory waits in `dead` (guarded by dead_lock: writers drop entries from any
     * thread) for the next read to free in stream order */
    struct zg_chunk_cache *dcache;
    pthread_mutex_t dead_lock;
    void **dead;
    size_t n_dead, cap_dead;
    /* device writes (write_device.c): up to ZG_WD_SETS buffer sets kept from one write to the next, each a device
     * block and a pinned block, grown as writes need them (allocating ~1 GB of device and pinned memory cost a
     * 128 MB write more than its encode); wlock: one write at a time uses them (a write's reads of the chunks it
     * merges take `lock`, so a write holds wlock alone) */
    pthread_mutex_t wlock;
    struct { uint8_t *d, *h; size_t d_cap, h_cap; } wbuf[ZG_WD_SETS];
    /* host reads decoded on the GPU (host_dest.c): their device scratch (kept up to 256 MiB; a larger read's is
     * freed after it), two pinned halves for the copy back, the copy's stream and events, and the largest such read
     * so far; hlock: one such read at a time (it takes `lock` inside, as any device read) */
    pthread_mutex_t hlock;
    struct { uint8_t *d, *h; size_t d_cap, h_cap, peak; cudaStream_t stream; cudaEvent_t ev[2]; } hbuf;
};
#define PLANS_KEPT_BYTES ((size_t)64 << 20)



/* The GPU decoders (gpucodec/gpu_decoder.h: the contract; gpucodec/registry_gpu.c: the list) are picked per read
 * for each kind of stream (zg_gpu_pick, by the tuning) and take a wave's streams in registry order. */

typedef struct dev_pipe {
    int gpu;                  /* the chain decodes on the GPU */
    char why[160];            /* if not, why */
    int n_outer_crc;          /* crc32c stages verified and stripped on the host */
    int comp;                 /* zg_gpu_format of the compressor (codec.h) */
    const char *comp_name;    /* codec name for messages */
    uint64_t comp_out;        /* bytes the compressor stage must produce */
    int n_post;
    struct { int kind, param, row, stride; } post[ZG_MAX_CODECS + 2]; /* device stages after the compressor, in
                                                                       * order: zg_gpu_post and its parameters */
    int needs_b;              /* some stage works out of place */
    int64_t src_strides[ZGPU_MAX_DIMS]; /* decoded chunk buffer strides (transposes folded in) */
    int src_c_order;          /* those strides are C order on every axis longer than 1 (no transpose moves data) */
    uint64_t chunk_nbytes;
} dev_pipe;


/* ------------------------------------------------------------------------------------------------
 * One read
 * ---------------------------------------------------------------------------------------------- */
/* T_DUP: a chunk another task of the read (its unit's leader, dtask.lead) decodes, placed in another box of a
 * multi-region read: no I/O or decode of its own, only a scatter from the leader's decoded chunk.
 * T_DCACHED: a chunk the device chunk cache holds (dtask.dhit): no I/O or decode, scattered from its entry. */
enum { T_MISSING = 0, T_GPU, T_CPU, T_DUP, T_DCACHED };

typedef struct dtask {
    size_t plan_i;
    int kind;
    size_t lead;              /* T_DUP: the task (index in job.t) that decodes its chunk */
    struct zg_cache_ref *hit; /* T_CPU whose decoded chunk the context's cache holds: copied, not read or decoded */
    uint64_t gen;             /* a cache miss: the generation its lookup saw, for the put after a host decode */
    struct zg_cache_ref *dhit; /* T_DCACHED: the device cache's entry it holds (released with the job) */
    int dput;                 /* a device cache miss: once decoded on the GPU (or, a host cache hit, once copied to
                               * the device), the chunk is copied into a new entry */
    uint64_t dgen;            /* ... with the generation its lookup saw */
    uint64_t dsrc_off;        /* ... from D + dsrc_off (the chunk after its last decode stage) */
    void *dentry;             /* that entry's device memory, filled by the wave and put once its checks pass (still
                               * set when the read fails: given back with the tasks) */
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
    uint32_t check;              /* the checksum of the decoded payload the stored chunk carries (gzip CRC32, zlib
                                  * Adler-32, zstd XXH64), of kind check_kind (ZG_CHECK_*), verified on the GPU
                                  * unless its decoder does that itself (check_kind is then ZG_CHECK_NONE) */
    int check_kind;
    zg_blosc_header bh;
    zg_blosc_stream *streams;  /* blosc */
    size_t n_streams;
    zg_zd_plan *zp;            /* the host plan of a decoder that plans (zgpu's zstd decoder: the chunk's frames, or
                                * blosc's inner streams): NULL, or the device state's plan of this task (see
                                * zg_device_state.plans) */
    int dec;                   /* its streams' decoder (index in zg_gpu_decoders), once parsed for the GPU */
} dtask;

typedef struct stream_ref { /* a GPU decompression stream, for status checks */
    uint32_t task;
    int dec; /* its decoder (index in zg_gpu_decoders), whose error_text reads its status */
    uint64_t expect;
} stream_ref;

/* A wave's scatter items of one group of regions (equal strides): [g0, g1) in the GPU-decoded list, [c0, c1) in
 * the host-decoded / fill list, and each list's most rows of an item. */
typedef struct scatter_group {
    size_t g0, g1, c0, c1;
    uint64_t rows_g, rows_c;
} scatter_group;

typedef struct job {
    zgpu_array *a;
    struct zg_device_state *st;
    const zg_plan *plan;
    const zg_chain *chain;
    dev_pipe pp;
    int gpu_decode, use_gds, host_parse;
    int remote_waves;                  /* the plan left inner chunks on a remote store: each wave's phase A fetches
                                        * them in one batch (dev_phase_a_remote) */
    /* the read's decoders: of the stored format's stream (NULL: none, or blosc), and of blosc's streams by kind
     * (NULL: host threads); the stored format's wrapping (NULL: none, or blosc) */
    const zg_gpu_decoder *dec_main, *dec_kind[ZG_GPU_STREAM_N];
    const zg_gpu_container *container;
    const zg_gpu_decoder *const *decs; /* the registry */
    size_t n_decs;
    int plans_scratch; /* a decoder that plans (zstd) may take the read's streams: its literal buffer (waves.c) */
    int zstd_mappable; /* zstd frames of the wave can be mapped (dev_zstd_rows) */
    uint64_t parts_room; /* device bytes the wave being launched leaves in its set's share of the budget */
    zg_span span[3]; /* h2d, decode, scatter over the waves (stats: the time each stage was under way) */
    const zgpu_tuning *tune; /* the context's */
    int trace;       /* tuning's trace: each wave's timeline to stderr (ms since the fork) */
    double t_fork;   /* host clock at the fork event */
    double io_end;   /* host clock when the last wave's reads were done (dev_run_waves' I/O time) */
    uint64_t h2d_done;  /* the wave being launched: staged bytes below this offset are copied (or queued) already */
    dtask *t;
    size_t n_t;
    /* the boxes' destinations (one box but for zgpu_array_read_regions_device): region r goes to outs[r] with
     * byte strides strides + r * ndim; scatters are grouped by equal strides (group_of, n_groups). Chunks decode
     * straight into a destination (dev_direct_target, dev_zstd_rows) only in a read of one box: out and
     * out_strides are its */
    size_t n_regions;
    uint8_t *const *outs;
    const int64_t *strides;
    uint32_t *group_of;  /* per region: its scatter group (regions with equal strides) */
    size_t n_groups;
    scatter_group *groups; /* n_groups, refilled by each wave's launch */
    struct zg_chunk_cache *cache; /* the context's decoded-chunk cache, or NULL */
    zg_xform x;                   /* what the destinations get (zgpu_read_options; x.identity: the stored values) */
    struct zg_cache_ref **hits;   /* per plan task: the cache's hit it holds (released with the job), or NULL */
    uint64_t *gens;               /* per plan task: the generation its miss saw */
    size_t n_hits;
    struct zg_chunk_cache *dcache; /* the device chunk cache when this read may use it (device route, GPU decode) */
    struct zg_cache_ref **dhits;  /* per plan task: the device cache's hit it holds, or NULL */
    uint64_t *dgens;
    int64_t out_strides[ZGPU_MAX_DIMS];
    uint8_t *out;
    /* the wave being launched */
    bufset *bs;
    size_t first, count;
    size_t in_align[ZG_GPU_MAX_DECODERS], out_align[ZG_GPU_MAX_DECODERS];
    int nvc_ok;
    zg_gpu_wave dw[ZG_GPU_MAX_DECODERS]; /* each decoder's view of the wave being launched */
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
 * thread finishes and launches this one (dev_run_waves), so all they touch is here or in their own tasks. */
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


static inline uint64_t take(layout *l, uint64_t n) {
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
    uint64_t pre_off; /* per stream ref: a decoder's precheck code (nvCOMP's LZ4: the GPU walk of blosc's LZ4
                       * streams; 0: fine) */
    uint64_t chk_off; /* checksum flags (zg_k_check): one per checksum a GPU chunk of the wave carries (gzip,
                       * zlib, zstd: one; blosc: one per zlib stream, or zstd stream with a checksum) */
    size_t n_chk;
    struct chk_ref { uint32_t task; int kind; } *chk_task;
    int active;
    size_t first, count;  /* the wave's tasks: their device cache entries are put once the checks pass */
    float ms_h2d, ms_decode, ms_scatter;
    size_t wave;                 /* its index, for the trace */
    double host_read, host_launch; /* ms since the fork: its I/O done, its work queued */
} wave_check;


/* ---- state.c: device state, streams, events, buffer sets, pinned/device pools, probe ---- */
zgpu_status dev_get_state(zgpu_context *ctx, struct zg_device_state **out);
/** Grows a device buffer in stream order on `s`, keeping its first `keep` bytes. */
zgpu_status dev_ensure_device(cudaStream_t s, uint8_t **p, size_t *cap, size_t need, size_t keep);
/** How many times this process's device reads have grown a pinned or device buffer (dev_ensure_device,
 *  dev_grow_pinned): a read during which it changed paid for allocations (cudaHostAlloc of 16 MiB: several ms) that
 *  say nothing of its route's speed, so the route model learns nothing from it. */
unsigned long dev_buffer_growths(void);
zgpu_status dev_ensure_pinned(struct zg_device_state *st, bufset *b, size_t need, size_t keep);
/** Grows a pinned buffer to `need` bytes (its contents dropped; the old one freed with the state). */
zgpu_status dev_grow_pinned(struct zg_device_state *st, uint8_t **p, size_t *cap, size_t need);
zgpu_status dev_reserve_plans(struct zg_device_state *st, size_t n);
void dev_trim_plans(struct zg_device_state *st);

/* ---- route.c: chain analysis; which chunks the GPU takes ---- */
void dev_not_gpu(dev_pipe *p, const char *fmt, const char *name);
const dev_pipe *dev_chain_pipe(const zg_chain *ch, dev_pipe *tmp);
void dev_pick_decoders(job *j);
void dev_plan_drop(dtask *t);
int dev_parse_task(job *j, dtask *t, uint8_t *p);

/* ---- fetch.c: phase A (pieces, pread / GDS, segments, host fallback decode) ---- */
void dev_parse_or_fallback(job *j, dtask *t, bufset *b);
zgpu_status dev_make_pieces(wave_io *io);
void dev_free_pieces(wave_io *io);
zgpu_status dev_phase_a_piece(void *arg, size_t p);
zgpu_status dev_phase_a_remote(void *arg, size_t unused);
zgpu_status dev_phase_parse_task(void *arg, size_t i);
zgpu_status dev_phase_cpu_task(void *arg, size_t i);
zgpu_status dev_make_segments(wave_io *io, uint64_t end, int cpu);
void dev_free_segments(wave_io *io);

/* ---- place.c: layout of a chunk's decode in the output ---- */
uint8_t *dev_box_dst(const job *j, const zg_chunk_task *pt);
int dev_zstd_rows(const job *j, zg_zd_rows *r);
uint8_t *dev_direct_target(const job *j, const dtask *t, int assume_shuffled, int *mapped, uint8_t **zplace);

/* ---- launch.c, check.c, waves.c, read.c ---- */
zgpu_status dev_launch_wave(job *j, bufset *b, layout *L, wave_check *wc);
const char *dev_task_key(const job *j, const dtask *t, char *buf, size_t n);
zgpu_status dev_task_error(const job *j, const dtask *t, const char *codec, zgpu_status s);
zgpu_status dev_check_wave(job *j, bufset *b, wave_check *wc, zgpu_read_stats *stats);
zgpu_status dev_run_waves(job *j, zgpu_read_stats *stats);
zgpu_status dev_run_read(zgpu_array *a, const zg_dev_request *rq, void *user_stream, int order_user);

/* ---- chunk_cache_dev.c: the device chunk cache ---- */
zgpu_status dev_cache_init(struct zg_device_state *st, size_t capacity);
void dev_cache_free(struct zg_device_state *st);
/** Frees (in stream order on the state's stream) the device memory of entries the cache dropped; under the
 *  state's lock, its device current. */
void dev_cache_reap(struct zg_device_state *st);
/** Device memory for a new entry of n bytes, in stream order on s; NULL when there is none (the chunk is then not
 *  cached: not an error). */
void *dev_cache_alloc(size_t n, cudaStream_t s);
/** Gives an entry's memory back (to be freed by the next dev_cache_reap). */
void dev_cache_drop(struct zg_device_state *st, void *p);
/** The wave's checked chunks (tasks [wc->first, +count) with an entry) put into the device cache. */
void dev_cache_commit(job *j, const wave_check *wc);

/* ---- host_route.c, calibrate.c: the host route and the route model ---- */
/** The boxes of a read packed one after another, each C-contiguous: off[r] is box r's first byte (off[n] the total),
 *  boxes of `counts` elements of itemsize bytes; 1 when every non-empty box's destination (byte `strides`) is
 *  C-contiguous too (host_route.c). */
int dev_pack_boxes(int nd, size_t n, const uint64_t *counts, size_t itemsize, const int64_t *strides, size_t *off);
/** The host route of a device read: the host executor into pinned memory, copied to the device in slabs of rows as
 *  they are written (host/read_progress.h; route/route.h); x is the read's conversion (the destinations' element
 *  size). plan: NULL, or the boxes' plan of a sharded array on a local store, resolved, no cache lookups made (an
 *  automatic pick's), taken over (zg_host_read_regions_planned). */
zgpu_status dev_host_route(zgpu_array *a, struct zg_device_state *st, const zg_dev_request *rq, const zg_xform *x,
                           void *user_stream, int order_user, zgpu_read_stats *stats, zg_plan *plan);
struct zg_route_read;
struct zg_route_pick;
/** The route for a read (route/route.h) from the model of the context's GPU (loaded from zgpu's cache directory,
 *  or measured once and saved) and what this process's reads taught it; and the lesson of a read that took it. */
struct zg_route_pick dev_route_decide(zgpu_context *ctx, const struct zg_route_read *r);
void dev_route_learn(zgpu_context *ctx, const struct zg_route_pick *p, double seconds);

/** 1 when converting reads can run their conversion in the device's scatter (the JIT kernels, src/jit/); else
 *  such reads take the host route, which converts on the host before the copy. */
int dev_convert_on_device(void);

/* A task that reads stored bytes (a GPU or host decode): not a missing chunk, not another box's copy. */
static inline int dev_task_reads(const dtask *t) { return (t->kind == T_GPU || t->kind == T_CPU) && !t->hit; }
/* A task whose GPU-decoded chunk goes into the device cache: it decodes into scratch (not into the output). */
static inline int dev_task_caches(const dtask *t) { return t->kind == T_GPU && t->dput; }
/* A host cache hit that goes into the device cache once staged on the device (from its C-order copy there). */
static inline int dev_task_promotes(const dtask *t) { return t->kind == T_CPU && t->hit && t->dput; }

#endif
