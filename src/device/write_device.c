/* Writes from device memory (zgpu_array_write_device; docs/gpu-writes.md). A write is planned as host writes are
 * (one task per stored object) and run in waves of objects on two or more buffer sets (kept in the device state),
 * so that the GPU's compression of wave w overlaps the host's file writes of wave w - 1, and where waves hold few
 * objects (shards), the writes of several waves run at once (run_waves):
 *   old     an object the write covers only in part is written alone, first, under the store's write lock for
 *           it from the read of its stored value (on the device, into its chunk buffer: zgpu_array_read_device,
 *           missing chunks read as the fill value) to its replacement, as host writes hold it; objects the write
 *           covers start as the fill value and are locked only around their replacement (a thread holds one
 *           object's lock at a time: the filesystem store's rule);
 *   gather  the written box into the chunk buffers, strided, in one launch (the scatter kernel, the other way), in
 *           the order of the chain's transposes (their strides folded in, as reads do);
 *   check   which chunks are the fill value everywhere: those are deleted, not written, as host writes do;
 *   split   sharded arrays: each shard's buffer cut into its inner chunks (units of their own, C order), which
 *           are checked for the fill value too (left out of the index);
 *   filter  numcodecs' delta (integers) and shuffle as kernels, out of place (chunk buffers and units in turn);
 *   encode  on the GPU where the chain (a shard's: its inner chain) is a `bytes` codec (its byte swap a kernel)
 *           and at most one compressor the GPU encoders write (zstd, gzip, zlib, numcodecs' lz4:
 *           gpuencode/gpu_encode.h; blosc with lz4, lz4hc, zstd or zlib inside: gpuencode/blosc_encode.h): all of
 *           the wave's units in one batch; the stored chunks (a shard's inner chunks, its index encoded on the host
 *           put in place after the copy) packed and copied to pinned memory in one copy, on a stream of its own
 *           (the next wave's gather and encode run beside it). Any other chain
 *           (other array->array codecs and filters, bz2, blosclz, a zstd checksum, ...) and any wave the GPU
 *           encoder refuses: the chunks (gathered again in C order where the GPU's were transposed or filtered)
 *           copied to the host in one copy and encoded on the pool's threads; a crc32c after the compressor is
 *           computed by the pool's threads;
 *   write   the pool's threads put each object (temporary name, then rename, in the store) or delete it, drop it
 *           from every cache and unlock it.
 * A write that fails part way leaves each object either old or new, never mixed (each is replaced whole). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/array.h"
#include "cache/chunk_cache.h"
#include "codec/chain.h"
#include "codec/sharding.h"
#include "common/status.h"
#include "device/device.h"
#include "device/job.h" /* the device state (its kept write buffers) */
#include "gpucodec/post/post_kernels.h"
#include "gpuencode/blosc_encode.h"
#include "gpuencode/chunk_kernels.h"
#include "gpuencode/gpu_encode.h"
#include "host/scratch.h"
#include "plan/plan.h"
#include "plan/waves.h"
#include "plan/write_units.h"

#include <cuda_runtime.h>

#undef CU /* job.h's; this file's names the array */
#define WD_ALIGN 256
/* Decoded bytes of chunks a wave gathers (unless tuning.write_wave_bytes says): a sixth of the device memory budget
 * (two sets of waves, each with its encoded slots and packed copy beside it: about 3x a wave on the device, 2x in
 * pinned memory; more sets only where they fit: wave_sets), between these bounds: larger waves give the GPU encoder
 * more chunks at once, smaller ones overlap more of the host's writes and hold less pinned memory. */
#define WD_WAVE_MIN ((uint64_t)64 << 20)
#define WD_WAVE_MAX ((uint64_t)256 << 20)

/* ------------------------------------------------------------------------------------------------ buffers */

struct wd_job;
struct wd_set;
/* The pool's argument for a wave's object writes */
typedef struct wd_host {
    struct wd_job *j;
    struct wd_set *b;
} wd_host;

/* One buffer set: a wave's device and pinned memory, sized for `cap` objects. The GPU encodes units: the objects'
 * chunks, or (sharded arrays) their inner chunks, upo a shard, each unit u of object u / upo. */
typedef struct wd_set {
    size_t cap;
    uint8_t *d_chunks;      /* cap chunk buffers of `cs` bytes */
    uint8_t *d_units;       /* sharded: cap * upo inner chunks of `ucs` bytes, each in C order; filters (delta,
                             * shuffle): their out-of-place output, in turn with d_chunks */
    uint8_t *d_cur;         /* where the wave's units are: d_chunks or d_units (unit_ptr) */
    uint8_t *d_slots;       /* GPU encoder: cap * upo output slots of `slot` bytes */
    uint8_t *d_packed;      /* the stored chunks, packed for one copy */
    uint8_t *d_scratch;     /* GPU encoder's scratch */
    uint8_t *d_desc;        /* descriptors: scatter items, counts, chunk pointers, copy items */
    uint8_t *d_fill;        /* the fill value (itemsize bytes) */
    size_t *d_sizes;        /* [cap * upo] units' stored sizes and statuses; [cap] objects' fill flags (0: the fill
                             * value everywhere); sharded: [cap * upo] inner chunks' fill flags */
    int *d_status, *d_differs, *d_udiffers;
    uint8_t *h_data;        /* pinned: the packed stored chunks, or (host encoding) the decoded chunks */
    size_t *h_sizes;
    int *h_status, *h_differs, *h_udiffers;
    uint8_t *h_index;       /* sharded: [cap] encoded indexes, put into h_data at ipos before the objects go (pack) */
    size_t *ipos;
    size_t *uoff;           /* [cap * upo] each stored unit's place in h_data (SIZE_MAX: not stored) */
    zg_wu_pack pack;        /* the wave's stored layout (GPU encoding) */
    cudaEvent_t ev_sizes;   /* the units' sizes, statuses and flags are on the host */
    cudaEvent_t ev_done;    /* the wave's stored chunks (or decoded chunks) are in h_data */
    cudaEvent_t ev_packed;  /* its stored chunks are packed (the copy stream waits for it) */
    uint8_t *h_desc;        /* pinned staging of the descriptors */
    /* the wave it holds */
    const size_t *idx;      /* [n]: the plan's tasks (one an object) it holds */
    size_t n;
    int alone;              /* an object covered in part, locked from its old value's read to its replacement */
    int on_host;            /* 1: its chunks encode on the host */
    size_t *off;            /* [n + 1]: packed offsets (GPU encoding) */
    zg_store_lock *locks;   /* [cap] */
    int *locked;            /* [cap] */
    zg_store_lock_set held; /* remote stores: the wave's locks */
    int held_many;
    zg_buf *enc;            /* host encoding: [cap] encoded chunks */
    /* its objects' writes, handed to the pool (write_start) and waited for before the set is used again
     * (write_end) */
    wd_host host;
    zg_pool_job *job;
    int writing;
} wd_set;

/* Where each kind of descriptor lies in a set's descriptor area (the same in its pinned and device copies), each
 * its own so that none is rewritten while an earlier copy of another may be in flight: scatter items and their
 * counts (gather, fills), chunk pointers (fill check), sharded: the units' scatter items and counts (shard to inner
 * chunks) and pointers (their fill check); copy items (pack), buffers (byte swap). */
typedef struct wd_desc {
    size_t items, counts, ptrs, uitems, ucounts, uptrs, copies, bufs, pairs, end;
} wd_desc;

/* cap objects of upo units (sharded: 1, a shard of one inner chunk, or more) */
static wd_desc desc_layout(size_t cap, size_t upo, int sharded, int nd) {
    wd_desc d;
    size_t at = 0;
    const size_t nu = cap * upo;
#define PART(field, bytes) (d.field = at, at = zg_align_up(at + (bytes), 64))
    PART(items, cap * sizeof(zg_k_scatter));
    PART(counts, cap * (size_t)nd * sizeof(uint64_t));
    PART(ptrs, cap * sizeof(uint8_t *));
    PART(uitems, sharded ? nu * sizeof(zg_k_scatter) : 0);
    PART(ucounts, sharded ? nu * (size_t)nd * sizeof(uint64_t) : 0);
    PART(uptrs, sharded ? nu * sizeof(uint8_t *) : 0);
    PART(copies, nu * sizeof(zg_k_copy));
    PART(bufs, nu * sizeof(zg_k_buf));
    PART(pairs, 2 * nu * sizeof(zg_ge_pair)); /* the delta's, then the shuffle's */
#undef PART
    d.end = at;
    return d;
}

typedef struct wd_job {
    zgpu_array *a;
    zg_plan plan;
    const uint8_t *d_in;
    int64_t in_strides[ZGPU_MAX_DIMS];
    int64_t chunk_strides[ZGPU_MAX_DIMS]; /* of the chunk buffers: C order, or the chain's transposed order */
    int64_t c_strides[ZGPU_MAX_DIMS];     /* C order (the host encoders') */
    uint64_t chunk_shape[ZGPU_MAX_DIMS];
    size_t chunk_nbytes, cs, itemsize;
    cudaStream_t stream;
    cudaStream_t copy; /* the stored chunks' copies to the host, so that wave w's encode runs beside wave w - 1's */
    zg_wu_encoder enc;
    zg_gpu_encode_opts eopts; /* zstd: nvCOMP or zgpu's encoder, the units' strides as hints */
    uint32_t blosc_hints[3];  /* the hints as blosc's streams lay the bytes out */
    zg_gpu_encode_layout L;
    size_t slot;            /* slot stride */
    /* units (the GPU encoder's chunks): the objects' chunks, or a sharded array's inner chunks */
    const zg_codec *shard;  /* the sharding codec, or NULL */
    size_t upo;             /* units an object: 1, or inner chunks a shard */
    size_t unit_nbytes, ucs; /* a unit's bytes, and its buffer's stride */
    uint64_t inner_shape[ZGPU_MAX_DIMS];
    int64_t inner_strides[ZGPU_MAX_DIMS];
    size_t index_nbytes;
    struct zg_device_state *st; /* its kept buffers (under st->wlock) */
    wd_set set[ZG_WD_SETS];
    int n_sets;             /* sets the waves take in turn */
    wd_desc desc;           /* of sets of per_wave objects */
    size_t *order;          /* the plan's tasks: those covered in part first (n_partial), then the others */
    size_t n_partial;
} wd_job;

#define CU(call, what)                                                                                            \
    do {                                                                                                          \
        cudaError_t e_ = (call);                                                                                  \
        if (e_ != cudaSuccess)                                                                                    \
            return zg_error(ZGPU_ERR_CUDA, ZG_ARRAY_WHERE_FMT ": device write: %s: %s", j->a->path, what,        \
                            cudaGetErrorString(e_));                                                              \
    } while (0)

/* The wave's queued work, finished. */
static zgpu_status wait_stream(wd_job *j) {
    CU(cudaStreamSynchronize(j->stream), "cudaStreamSynchronize");
    return ZGPU_OK;
}

/* A set's buffers, carved from the device state's kept blocks for set k (grown to this write's need): device
 * [chunks | units | descriptors | sizes, statuses, flags | fill value | GPU encoder: slots | packed | scratch],
 * pinned [sizes, statuses, flags | descriptors | staging]. */
static zgpu_status set_alloc(wd_job *j, int k, size_t cap) {
    wd_set *b = &j->set[k];
    b->cap = cap;
    const int gpu = j->enc.gpu;
    const size_t nu = cap * j->upo, sharded = j->shard != NULL;
    const size_t flags_bytes = nu * sizeof(size_t) + (nu + cap + nu) * sizeof(int);
    const size_t packed = gpu ? nu * (j->slot + 4) + cap * j->index_nbytes : 0;
    size_t d_at[8], d_end = 0, h_at[3], h_end = 0;
#define PART(at, end, i, bytes) (at[i] = end, end = zg_align_up(end + (bytes), WD_ALIGN))
    PART(d_at, d_end, 0, cap * j->cs);
    PART(d_at, d_end, 1, j->desc.end);
    PART(d_at, d_end, 2, flags_bytes);
    PART(d_at, d_end, 3, j->itemsize);
    PART(d_at, d_end, 4, gpu ? nu * j->slot : 0);
    PART(d_at, d_end, 5, packed);
    PART(d_at, d_end, 6, gpu ? j->L.scratch_bytes : 0);
    const int units = gpu && (sharded || j->enc.delta || j->enc.shuffle);
    PART(d_at, d_end, 7, units ? nu * j->ucs : 0);
    size_t h_bytes = cap * j->cs;
    if (packed > h_bytes) h_bytes = packed;
    PART(h_at, h_end, 0, flags_bytes);
    PART(h_at, h_end, 1, j->desc.end);
    PART(h_at, h_end, 2, h_bytes);
#undef PART
    struct zg_device_state *st = j->st;
    ZG_FORWARD(dev_ensure_device(j->stream, &st->wbuf[k].d, &st->wbuf[k].d_cap, d_end, 0));
    ZG_FORWARD(dev_grow_pinned(st, &st->wbuf[k].h, &st->wbuf[k].h_cap, h_end));
    uint8_t *d = st->wbuf[k].d, *h = st->wbuf[k].h;
    b->d_chunks = d + d_at[0];
    b->d_desc = d + d_at[1];
    b->d_sizes = (size_t *)(d + d_at[2]);
    b->d_status = (int *)(b->d_sizes + nu);
    b->d_differs = b->d_status + nu;
    b->d_udiffers = b->d_differs + cap;
    b->d_fill = d + d_at[3];
    b->d_slots = gpu ? d + d_at[4] : NULL;
    b->d_packed = gpu ? d + d_at[5] : NULL;
    b->d_scratch = gpu ? d + d_at[6] : NULL;
    b->d_units = units ? d + d_at[7] : NULL;
    b->h_sizes = (size_t *)(h + h_at[0]);
    b->h_status = (int *)(b->h_sizes + nu);
    b->h_differs = b->h_status + nu;
    b->h_udiffers = b->h_differs + cap;
    b->h_desc = h + h_at[1];
    b->h_data = h + h_at[2];
    b->off = calloc(cap + 1, sizeof *b->off);
    b->ipos = calloc(cap, sizeof *b->ipos);
    b->uoff = calloc(nu, sizeof *b->uoff);
    b->h_index = malloc(cap * j->index_nbytes + 1);
    b->locks = calloc(cap, sizeof *b->locks);
    b->locked = calloc(cap, sizeof *b->locked);
    b->enc = calloc(cap, sizeof *b->enc);
    ZG_RETURN_IF(!b->off || !b->ipos || !b->uoff || !b->h_index || !b->locks || !b->locked || !b->enc, ZGPU_ERR_NO_MEMORY,
                 "out of host memory for a device write");
    CU(cudaEventCreateWithFlags(&b->ev_sizes, cudaEventDisableTiming), "cudaEventCreate");
    CU(cudaEventCreateWithFlags(&b->ev_done, cudaEventDisableTiming), "cudaEventCreate");
    CU(cudaEventCreateWithFlags(&b->ev_packed, cudaEventDisableTiming), "cudaEventCreate");
    /* the fill value, in stream order before the set's first kernel (from pageable memory: staged at once) */
    CU(cudaMemcpyAsync(b->d_fill, j->a->meta.fill_value, j->itemsize, cudaMemcpyHostToDevice, j->stream),
       "fill value to the device");
    return ZGPU_OK;
}

/* The set's host arrays (its device and pinned memory stay with the device state for the next write). */
static void set_free(wd_set *b) {
    if (b->enc)
        for (size_t i = 0; i < b->cap; i++) zg_buf_free(&b->enc[i]);
    free(b->enc);
    free(b->off);
    free(b->ipos);
    free(b->uoff);
    free(b->h_index);
    if (b->ev_sizes) cudaEventDestroy(b->ev_sizes);
    if (b->ev_done) cudaEventDestroy(b->ev_done);
    if (b->ev_packed) cudaEventDestroy(b->ev_packed);
    free(b->locks);
    free(b->locked);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------------------------------------ locks */

static const char *key_of(const wd_job *j, size_t task) { return j->plan.objects[j->plan.tasks[task].object].key; }

/* The wave's write locks, on the calling thread (which unlocks them): one batch on remote stores; elsewhere only a
 * wave of one object (a thread holds one object's lock at a time). */
static zgpu_status lock_wave(wd_job *j, wd_set *b) {
    zg_store *s = j->a->store;
    if (s->vt->lock_many) {
        const char **keys = malloc(b->n * sizeof *keys);
        ZG_RETURN_IF(!keys, ZGPU_ERR_NO_MEMORY, "out of host memory for a device write");
        for (size_t i = 0; i < b->n; i++) keys[i] = key_of(j, b->idx[i]);
        zgpu_status st = s->vt->lock_many(s, keys, b->n, &b->held);
        free(keys);
        b->held_many = st == ZGPU_OK;
        return st;
    }
    ZG_RETURN_IF(b->n != 1, ZGPU_ERR_INTERNAL, "device write: locks of %zu objects taken on one thread", b->n);
    ZG_FORWARD(s->vt->lock(s, key_of(j, b->idx[0]), &b->locks[0]));
    b->locked[0] = 1;
    return ZGPU_OK;
}

static void unlock_wave(wd_job *j, wd_set *b) {
    zg_store *s = j->a->store;
    if (b->held_many) s->vt->unlock_many(s, &b->held);
    b->held_many = 0;
    for (size_t i = 0; i < b->cap; i++)
        if (b->locked[i]) {
            s->vt->unlock(s, &b->locks[i]);
            b->locked[i] = 0;
        }
}

/* ------------------------------------------------------------------------------------------------ GPU side */

/* Whether the write covers every element of task t's chunk that lies in the array (no old value to merge). */
static int covers_object(const wd_job *j, const zg_chunk_task *t) {
    return zg_plan_covers_in_array(&j->plan, j->a->meta.shape, t);
}

/* The scatter kernel's parameters for copies between src and dst strides (items with no source: the fill value). */
static zg_k_scatter_params scatter_params(const wd_job *j, const wd_set *b, const int64_t *src_strides,
                                          const int64_t *dst_strides) {
    zg_k_scatter_params sp;
    memset(&sp, 0, sizeof sp);
    sp.ndim = j->plan.ndim;
    sp.itemsize = (int)j->itemsize;
    sp.d_fill = b->d_fill;
    memcpy(sp.src_strides, src_strides, sizeof sp.src_strides);
    memcpy(sp.dst_strides, dst_strides, sizeof sp.dst_strides);
    return sp;
}

/* The wave's chunk buffers: the fill value where the write does not cover the whole chunk, then the stored value of
 * objects it covers in part, then the written box. Queued on the stream (the old values' reads wait for it). */
static zgpu_status gather(wd_job *j, wd_set *b) {
    const int nd = j->plan.ndim;
    zg_k_scatter *items = (zg_k_scatter *)(b->h_desc + j->desc.items);
    uint64_t *counts = (uint64_t *)(b->h_desc + j->desc.counts);
    zg_k_scatter *d_items = (zg_k_scatter *)(b->d_desc + j->desc.items);
    uint64_t *d_counts = (uint64_t *)(b->d_desc + j->desc.counts);
    const size_t scatter_desc = j->desc.ptrs; /* the items and counts */
    zg_k_scatter_params sp = scatter_params(j, b, j->chunk_strides, j->chunk_strides);
    /* fills: the whole chunk of each object not covered whole */
    size_t nf = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (j->plan.tasks[b->idx[i]].covers_chunk) continue;
        items[nf] = (zg_k_scatter){NULL, b->d_chunks + i * j->cs};
        memcpy(counts + nf * (size_t)nd, j->chunk_shape, (size_t)nd * sizeof(uint64_t));
        nf++;
    }
    uint64_t row_len, rows;
    int outer;
    if (nf) {
        CU(cudaMemcpyAsync(b->d_desc, b->h_desc, scatter_desc, cudaMemcpyHostToDevice, j->stream), "descriptors to the device");
        rows = zg_k_scatter_rows(nd, sp.src_strides, sp.dst_strides, sp.itemsize, j->chunk_shape, 0, &row_len, &outer);
        CU(zg_k_scatter_launch(&sp, d_items, d_counts, nf, rows, j->stream), "fill kernel");
    }
    /* the stored values of objects covered in part (a read of the chunk's part inside the array) */
    for (size_t i = 0; i < b->n; i++) {
        const zg_chunk_task *t = &j->plan.tasks[b->idx[i]];
        if (covers_object(j, t)) continue;
        uint64_t origin[ZGPU_MAX_DIMS], inb[ZGPU_MAX_DIMS];
        zg_plan_chunk_in_array(&j->plan, j->a->meta.shape, t, origin, inb);
        zgpu_status st = zgpu_array_read_device(j->a, origin, inb, b->d_chunks + i * j->cs, j->chunk_strides, j->stream);
        if (st != ZGPU_OK) {
            zg_error_prefix("(reading chunk '%s' to merge a partial device write) ", key_of(j, b->idx[i]));
            return st;
        }
    }
    /* the written box (the descriptors again: the fills' copy may still be in flight) */
    if (nf) ZG_FORWARD(wait_stream(j));
    uint64_t most = 1;
    for (size_t i = 0; i < b->n; i++) {
        const zg_chunk_task *t = &j->plan.tasks[b->idx[i]];
        const uint8_t *src = j->d_in;
        uint8_t *dst = b->d_chunks + i * j->cs;
        for (int d = 0; d < nd; d++) {
            src += (int64_t)t->in_box[d] * j->in_strides[d];
            dst += (int64_t)t->in_chunk[d] * j->chunk_strides[d];
        }
        items[i] = (zg_k_scatter){src, dst};
        memcpy(counts + i * (size_t)nd, t->count, (size_t)nd * sizeof(uint64_t));
        rows = zg_k_scatter_rows(nd, j->in_strides, j->chunk_strides, sp.itemsize, t->count, 1, &row_len, &outer);
        if (rows > most) most = rows;
    }
    memcpy(sp.src_strides, j->in_strides, sizeof sp.src_strides);
    CU(cudaMemcpyAsync(b->d_desc, b->h_desc, scatter_desc, cudaMemcpyHostToDevice, j->stream), "descriptors to the device");
    CU(zg_k_scatter_launch(&sp, d_items, d_counts, b->n, most, j->stream), "gather kernel");
    return ZGPU_OK;
}

/* Unit u of the wave: the chunk, or (sharded) the inner chunk, the GPU encodes. */
static uint8_t *unit_ptr(const wd_job *j, const wd_set *b, size_t u) { return b->d_cur + u * j->ucs; }

/* A filter over the wave's units, out of place (into the other of d_chunks and d_units, which then holds them):
 * numcodecs' delta (item size param) or shuffle (element size param). Descriptor area `pairs`, half k. */
static zgpu_status filter_units(wd_job *j, wd_set *b, int shuffle, int param) {
    const size_t nu = b->n * j->upo, at = j->desc.pairs + (shuffle ? nu * sizeof(zg_ge_pair) : 0);
    uint8_t *to = b->d_cur == b->d_chunks ? b->d_units : b->d_chunks;
    zg_ge_pair *pairs = (zg_ge_pair *)(b->h_desc + at);
    for (size_t u = 0; u < nu; u++) pairs[u] = (zg_ge_pair){unit_ptr(j, b, u), to + u * j->ucs};
    CU(cudaMemcpyAsync(b->d_desc + at, pairs, nu * sizeof *pairs, cudaMemcpyHostToDevice, j->stream),
       "descriptors to the device");
    const zg_ge_pair *d_pairs = (const zg_ge_pair *)(b->d_desc + at);
    if (shuffle) CU(zg_ge_shuffle_launch(d_pairs, nu, j->unit_nbytes, param, j->stream), "shuffle kernel");
    else CU(zg_ge_delta_launch(d_pairs, nu, j->unit_nbytes, param, j->stream), "delta kernel");
    b->d_cur = to;
    return ZGPU_OK;
}

/* Sharded: each shard's inner chunks copied out of its buffer (C order over the shard) into units of their own
 * (C order over the inner chunk), one launch; then which of them are the fill value everywhere (d_udiffers: the
 * index leaves those out, as the host's sharding codec does). */
static zgpu_status split_shards(wd_job *j, wd_set *b) {
    const int nd = j->plan.ndim;
    const size_t nu = b->n * j->upo;
    zg_k_scatter *items = (zg_k_scatter *)(b->h_desc + j->desc.uitems);
    uint64_t *counts = (uint64_t *)(b->h_desc + j->desc.ucounts);
    b->d_cur = b->d_units;
    for (size_t u = 0; u < nu; u++) {
        const uint8_t *src =
            b->d_chunks + (u / j->upo) * j->cs + zg_wu_inner_offset(j->shard, nd, j->chunk_strides, u % j->upo);
        items[u] = (zg_k_scatter){src, unit_ptr(j, b, u)};
        memcpy(counts + u * (size_t)nd, j->inner_shape, (size_t)nd * sizeof(uint64_t));
    }
    const size_t n_desc = j->desc.uptrs - j->desc.uitems; /* the items and counts */
    CU(cudaMemcpyAsync(b->d_desc + j->desc.uitems, b->h_desc + j->desc.uitems, n_desc, cudaMemcpyHostToDevice,
                       j->stream),
       "descriptors to the device");
    const zg_k_scatter_params sp = scatter_params(j, b, j->chunk_strides, j->inner_strides);
    uint64_t row_len;
    int outer;
    const uint64_t rows = zg_k_scatter_rows(nd, sp.src_strides, sp.dst_strides, sp.itemsize, j->inner_shape, 1,
                                            &row_len, &outer);
    CU(zg_k_scatter_launch(&sp, (const zg_k_scatter *)(b->d_desc + j->desc.uitems),
                           (const uint64_t *)(b->d_desc + j->desc.ucounts), nu, rows, j->stream),
       "shard split kernel");
    const uint8_t **ptrs = (const uint8_t **)(b->h_desc + j->desc.uptrs);
    for (size_t u = 0; u < nu; u++) ptrs[u] = unit_ptr(j, b, u);
    CU(cudaMemcpyAsync(b->d_desc + j->desc.uptrs, ptrs, nu * sizeof *ptrs, cudaMemcpyHostToDevice, j->stream),
       "descriptors to the device");
    CU(zg_ge_fill_check_launch((const uint8_t *const *)(b->d_desc + j->desc.uptrs), nu, j->unit_nbytes, b->d_fill,
                               (int)j->itemsize, b->d_udiffers, j->stream),
       "fill check kernel (inner chunks)");
    return ZGPU_OK;
}

/* Device pointers of the wave's chunks (descriptor area 3) and the fill check into d_differs. */
static zgpu_status check_fill(wd_job *j, wd_set *b) {
    const size_t at = j->desc.ptrs;
    const uint8_t **ptrs = (const uint8_t **)(b->h_desc + at);
    for (size_t i = 0; i < b->n; i++) ptrs[i] = b->d_chunks + i * j->cs;
    CU(cudaMemcpyAsync(b->d_desc + at, ptrs, b->n * sizeof *ptrs, cudaMemcpyHostToDevice, j->stream), "descriptors to the device");
    CU(zg_ge_fill_check_launch((const uint8_t *const *)(b->d_desc + at), b->n, j->chunk_nbytes, b->d_fill,
                               (int)j->itemsize, b->d_differs, j->stream),
       "fill check kernel");
    return ZGPU_OK;
}

/* The `bytes` codec's byte swap, in place over the wave's units (descriptor area `bufs`). */
static zgpu_status swap_units(wd_job *j, wd_set *b) {
    const size_t at = j->desc.bufs, nu = b->n * j->upo;
    zg_k_buf *bufs = (zg_k_buf *)(b->h_desc + at);
    for (size_t u = 0; u < nu; u++) bufs[u] = (zg_k_buf){unit_ptr(j, b, u), j->unit_nbytes};
    CU(cudaMemcpyAsync(b->d_desc + at, bufs, nu * sizeof *bufs, cudaMemcpyHostToDevice, j->stream), "descriptors to the device");
    CU(zg_k_byteswap_launch((const zg_k_buf *)(b->d_desc + at), nu, j->unit_nbytes, j->enc.swap, j->stream),
       "byte swap kernel");
    return ZGPU_OK;
}

/* The decoded chunks to pinned memory in one copy, for the host's encoders. */
static zgpu_status to_host_raw(wd_job *j, wd_set *b) {
    b->on_host = 1;
    CU(cudaMemcpyAsync(b->h_data, b->d_chunks, b->n * j->cs, cudaMemcpyDeviceToHost, j->stream), "chunks to the host");
    CU(cudaMemcpyAsync(b->h_differs, b->d_differs, b->n * sizeof(int), cudaMemcpyDeviceToHost, j->stream),
       "fill flags to the host");
    return ZGPU_OK;
}

/* GPU encoding of the wave, its stored chunks packed (after the sizes come back) and copied to pinned memory.
 * *refused: the encoder refused the wave (a chunk failed): the caller encodes it on the host instead. */
static zgpu_status encode_launch(wd_job *j, wd_set *b) {
    const size_t nu = b->n * j->upo;
    b->d_cur = b->d_chunks;
    if (j->shard) ZG_FORWARD(split_shards(j, b)); /* (units in d_units from here) */
    if (j->enc.delta) ZG_FORWARD(filter_units(j, b, 0, j->enc.delta));
    if (j->enc.swap) ZG_FORWARD(swap_units(j, b));
    if (j->enc.shuffle) ZG_FORWARD(filter_units(j, b, 1, j->enc.shuffle));
    const void **in = malloc(nu * sizeof *in);
    size_t *in_bytes = malloc(nu * sizeof *in_bytes);
    void **out = malloc(nu * sizeof *out);
    zgpu_status st = ZGPU_OK;
    if (!in || !in_bytes || !out) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for a device write");
    for (size_t u = 0; st == ZGPU_OK && u < nu; u++) {
        in[u] = unit_ptr(j, b, u);
        in_bytes[u] = j->unit_nbytes;
        out[u] = b->d_slots + u * j->slot;
    }
    if (st == ZGPU_OK && j->enc.blosc)
        st = zg_gpu_blosc_encode_batch_hinted(&j->enc.bp, j->blosc_hints, in, nu, out, j->slot, b->d_sizes,
                                              b->d_status, b->d_scratch, j->L.scratch_bytes, j->stream);
    else if (st == ZGPU_OK)
        st = zg_gpu_encode_batch(j->enc.format, j->enc.level, &j->eopts, in, in_bytes, nu, out, j->slot, b->d_sizes,
                                 b->d_status, b->d_scratch, j->L.scratch_bytes, j->stream);
    free(in);
    free(in_bytes);
    free(out);
    if (st != ZGPU_OK) {
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ": device write: ", j->a->path);
        return st;
    }
    /* sizes, statuses and both fill flags: one area, one copy */
    const size_t flags_bytes = (size_t)((uint8_t *)(b->d_udiffers + (j->shard ? nu : 0)) - (uint8_t *)b->d_sizes);
    CU(cudaMemcpyAsync(b->h_sizes, b->d_sizes, flags_bytes, cudaMemcpyDeviceToHost, j->stream), "sizes to the host");
    CU(cudaEventRecord(b->ev_sizes, j->stream), "cudaEventRecord");
    return ZGPU_OK;
}

/* After the wave's encode: its statuses checked (*refused: a unit failed, the caller encodes the wave on the host),
 * its stored chunks packed and copied to pinned memory. */
static zgpu_status encode_finish(wd_job *j, wd_set *b, int *refused) {
    *refused = 0;
    const size_t nu = b->n * j->upo;
    zgpu_status st = ZGPU_OK;
    CU(cudaEventSynchronize(b->ev_sizes), "cudaEventSynchronize");
    for (size_t u = 0; u < nu; u++)
        if (b->h_status[u]) {
            *refused = 1;
            return ZGPU_OK;
        }
    /* the layout (plan/write_units.h: indexes encoded, room for crc32c), then the pack: a unit's stored bytes start
     * frame_offset into its slot */
    zg_wu_pack *pk = &b->pack;
    *pk = (zg_wu_pack){.n = b->n, .upo = j->upo, .sizes = b->h_sizes, .differs = b->h_differs,
                       .udiffers = j->shard ? b->h_udiffers : NULL, .crc32c = j->enc.crc32c, .shard = j->shard,
                       .off = b->off, .uoff = b->uoff, .ipos = b->ipos, .index = b->h_index, .pairs = NULL};
    if (j->shard && !(pk->pairs = malloc(2 * j->upo * sizeof *pk->pairs)))
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for a device write");
    size_t failed = 0;
    st = zg_wu_pack_plan(pk, &failed);
    free(pk->pairs);
    pk->pairs = NULL;
    if (st != ZGPU_OK) {
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ", shard '%s': ", j->a->path, key_of(j, b->idx[failed]));
        return st;
    }
    const size_t at = j->desc.copies;
    zg_k_copy *cp = (zg_k_copy *)(b->h_desc + at);
    uint64_t most = 0;
    size_t n_cp = 0;
    for (size_t u = 0; u < nu; u++) {
        if (b->uoff[u] == SIZE_MAX) continue;
        cp[n_cp++] = (zg_k_copy){b->d_slots + u * j->slot + j->L.frame_offset, b->d_packed + b->uoff[u], b->h_sizes[u]};
        if (b->h_sizes[u] > most) most = b->h_sizes[u];
    }
    if (n_cp) {
        CU(cudaMemcpyAsync(b->d_desc + at, cp, n_cp * sizeof *cp, cudaMemcpyHostToDevice, j->stream),
           "descriptors to the device");
        CU(zg_k_copy_launch((const zg_k_copy *)(b->d_desc + at), n_cp, most, j->stream), "pack kernel");
    }
    /* the copy on its own stream, after the pack: the next wave's gather and encode need not wait for it */
    CU(cudaEventRecord(b->ev_packed, j->stream), "cudaEventRecord");
    CU(cudaStreamWaitEvent(j->copy, b->ev_packed, 0), "cudaStreamWaitEvent");
    CU(cudaMemcpyAsync(b->h_data, b->d_packed, b->off[b->n] ? b->off[b->n] : 1, cudaMemcpyDeviceToHost, j->copy),
       "encoded chunks to the host");
    return ZGPU_OK;
}

/* A wave's GPU work, queued (and partly waited for: the old values' reads, the encoder's sizes). */
/* A wave's GPU work up to its encode, queued (the old values' reads of objects covered in part wait for it). */
static zgpu_status launch_wave(wd_job *j, wd_set *b) {
    b->on_host = !j->enc.gpu;
    if (b->alone) ZG_FORWARD(lock_wave(j, b));
    ZG_FORWARD(gather(j, b));
    ZG_FORWARD(check_fill(j, b));
    if (b->on_host) ZG_FORWARD(to_host_raw(j, b));
    else ZG_FORWARD(encode_launch(j, b));
    return ZGPU_OK;
}

/* The rest, once the encode's sizes are back: the pack and the copy to pinned memory (or, refused, the decoded
 * chunks to the host's encoders); ev_done follows it. */
static zgpu_status finish_wave(wd_job *j, wd_set *b) {
    int refused = 0;
    if (!b->on_host) ZG_FORWARD(encode_finish(j, b, &refused));
    if (refused) { /* the decoded chunks to the host encoders: gathered again in C order where the chain transposes,
                    * else swapped back (a shard's own buffer was not) */
        if (j->enc.transposed || j->enc.delta || j->enc.shuffle) { /* the chunk buffers hold neither any more */
            memcpy(j->chunk_strides, j->c_strides, sizeof j->c_strides);
            const zgpu_status st = gather(j, b);
            memcpy(j->chunk_strides, j->enc.transposed ? j->enc.strides : j->c_strides, sizeof j->c_strides);
            ZG_FORWARD(st);
        } else if (j->enc.swap && !j->shard) {
            ZG_FORWARD(swap_units(j, b));
        }
        ZG_FORWARD(to_host_raw(j, b));
    }
    CU(cudaEventRecord(b->ev_done, b->on_host ? j->stream : j->copy), "cudaEventRecord");
    return ZGPU_OK;
}

/* The wave's data is on the host. */
static zgpu_status wait_done(wd_job *j, wd_set *b) {
    CU(cudaEventSynchronize(b->ev_done), "cudaEventSynchronize");
    return ZGPU_OK;
}

/* ------------------------------------------------------------------------------------------------ host side */

static zgpu_status put_object(void *arg, size_t i) {
    wd_host *h = arg;
    wd_job *j = h->j;
    wd_set *b = h->b;
    zg_store *s = j->a->store;
    const char *key = key_of(j, b->idx[i]);
    zgpu_status st = ZGPU_OK;
    const int erase = !b->h_differs[i];
    const uint8_t *data = NULL;
    size_t n = 0;
    if (!erase && b->on_host) {
        zg_thread_scratch *ts = zg_thread_scratch_get();
        if (!ts) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for thread scratch");
        b->enc[i].size = 0;
        st = zg_chain_encode(j->a->chain, b->h_data + i * j->cs, &b->enc[i], &ts->codec);
        data = b->enc[i].data;
        n = b->enc[i].size;
    } else if (!erase) {
        data = b->h_data + b->off[i];
        n = b->off[i + 1] - b->off[i];
        zg_wu_finish_object(&b->pack, i, b->h_data); /* its index, its crc32c's, the copy being done */
    }
    if (st == ZGPU_OK && !s->vt->set_many && !b->alone) {
        st = s->vt->lock(s, key, &b->locks[i]);
        b->locked[i] = st == ZGPU_OK;
    }
    if (st == ZGPU_OK && !s->vt->set_many) {
        st = erase ? s->vt->erase(s, key) : s->vt->set(s, key, data, n);
        zg_chunk_cache_invalidate_object_all(s->id, key);
        if (b->locked[i]) {
            s->vt->unlock(s, &b->locks[i]);
            b->locked[i] = 0;
        }
    }
    if (st != ZGPU_OK) zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", j->a->path, key);
    return st;
}

/* The wave's objects handed to the pool to write (or delete; remote stores: to encode where the host encodes),
 * not waited for: write_end. A wave of one object covered in part is written by write_end, on the thread that
 * holds its lock. */
static zgpu_status write_start(wd_job *j, wd_set *b) {
    b->host = (wd_host){j, b};
    b->job = NULL;
    zgpu_status st = b->alone ? ZGPU_OK : zg_pool_start(j->a->ctx->pool, b->n, put_object, &b->host, &b->job);
    b->writing = st == ZGPU_OK;
    return st;
}

/* The wave's writes finished (remote stores: then put as one batch), its locks released. */
static zgpu_status write_end(wd_job *j, wd_set *b) {
    zg_store *s = j->a->store;
    zgpu_status st = ZGPU_OK;
    if (!b->writing) {
        unlock_wave(j, b);
        return ZGPU_OK;
    }
    b->writing = 0;
    st = b->alone ? put_object(&b->host, 0) : b->job ? zg_pool_finish(j->a->ctx->pool, b->job) : ZGPU_OK;
    b->job = NULL;
    if (st == ZGPU_OK && s->vt->set_many && !b->held_many) st = lock_wave(j, b);
    if (st == ZGPU_OK && s->vt->set_many) {
        zg_store_put *p = calloc(b->n, sizeof *p);
        if (!p) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for a device write");
        for (size_t i = 0; p && i < b->n; i++) {
            const int erase = !b->h_differs[i];
            p[i] = (zg_store_put){.key = key_of(j, b->idx[i]), .erase = erase};
            if (!erase && b->on_host) p[i].data = b->enc[i].data, p[i].n = b->enc[i].size;
            else if (!erase) p[i].data = b->h_data + b->off[i], p[i].n = b->off[i + 1] - b->off[i];
        }
        if (p) {
            st = s->vt->set_many(s, p, b->n);
            for (size_t i = 0; i < b->n; i++) zg_chunk_cache_invalidate_object_all(s->id, p[i].key);
            if (st != ZGPU_OK && !strstr(zg_error_message(), j->a->path))
                zg_error_prefix(ZG_ARRAY_WHERE_FMT ": ", j->a->path);
        }
        free(p);
    }
    unlock_wave(j, b);
    return st;
}

/* The wave written, waited for. */
static zgpu_status write_wave(wd_job *j, wd_set *b) {
    const zgpu_status st = write_start(j, b);
    const zgpu_status s2 = write_end(j, b);
    return st != ZGPU_OK ? st : s2;
}

/* ------------------------------------------------------------------------------------------------ the write */

/* Milliseconds of a monotonic clock (the trace's step times). */
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* zgpu's zstd encoder tries the units' strides (element, row, plane: the three smallest) as match offsets. */
static void unit_hints(const wd_job *j, zg_ze_hints *h) {
    const int nd = j->plan.ndim;
    const int64_t *st = j->shard ? j->inner_strides : j->enc.gpu && j->enc.transposed ? j->enc.strides
                                                                                        : j->chunk_strides;
    memset(h, 0, sizeof *h);
    for (unsigned k = 0; k < ZG_ZE_HINTS; k++) { /* the k-th smallest distinct stride below the unit's size */
        uint64_t best = 0;
        for (int d = 0; d < nd; d++) {
            const uint64_t v = (uint64_t)st[d];
            if (v == 0 || v >= j->unit_nbytes || (k && v <= h->off[k - 1]) || (best && v >= best)) continue;
            best = v;
        }
        if (!best || best > UINT32_MAX) break;
        h->off[k] = (uint32_t)best;
    }
}

static zgpu_status prepare(wd_job *j, size_t per_wave) {
    zgpu_array *a = j->a;
    zg_wu_analyse(a->chain, &j->enc);
    j->shard = j->enc.shard;
    j->upo = 1;
    j->unit_nbytes = j->chunk_nbytes;
    const int nd = j->plan.ndim;
    if (j->shard) { /* units: the inner chunks, each in C order */
        j->upo = (size_t)zg_sharding_n_inner(j->shard);
        memcpy(j->inner_shape, zg_sharding_inner_shape(j->shard), (size_t)nd * sizeof(uint64_t));
        zg_c_strides(nd, j->inner_shape, j->itemsize, j->inner_strides);
        j->unit_nbytes = (size_t)zg_repr_nbytes(&zg_sharding_inner_chain(j->shard)->repr);
        j->index_nbytes = (size_t)zg_sharding_index_nbytes(j->shard);
    }
    if (j->enc.gpu && j->enc.shuffle && j->unit_nbytes % (size_t)j->enc.shuffle)
        zg_wu_host_only(&j->enc, "%s", "a shuffle of chunks that are not a whole number of its elements");
    const zgpu_decoder_choice zenc = a->ctx->tuning.zstd_encoder;
    if (j->enc.gpu && !j->enc.blosc && j->enc.format == ZG_GE_ZSTD && zenc == ZGPU_DECODER_HOST)
        zg_wu_host_only(&j->enc, "%s", "zstd: tuning zstd_encoder = host");
    j->eopts.zstd_nvcomp = zenc == ZGPU_DECODER_NVCOMP;
    unit_hints(j, &j->eopts.hints);
    /* blosc's streams: byte planes of shuffled blocks hold an element a byte (the strides over the item size); a
     * bit shuffle leaves no byte strides */
    const uint32_t item = j->eopts.hints.off[0] ? j->eopts.hints.off[0] : 1;
    for (int k = 0; k < 3; k++)
        j->blosc_hints[k] = j->enc.bp.shuffle == 2 ? 0
                            : j->enc.bp.shuffle == 1 ? j->eopts.hints.off[k] / item
                                                     : j->eopts.hints.off[k];
    if (j->enc.gpu) {
        const size_t nu = per_wave * j->upo;
        j->enc.bp.nbytes = j->unit_nbytes;
        const zgpu_status st = j->enc.blosc ? zg_gpu_blosc_encode_layout_for(&j->enc.bp, nu, &j->L)
                                            : zg_gpu_encode_layout_for(j->enc.format, j->enc.level, &j->eopts, nu,
                                                                       j->unit_nbytes, nu * j->unit_nbytes, &j->L);
        if (st == ZGPU_ERR_UNSUPPORTED) { /* nvCOMP missing, a chunk over its limit, blosclz: the host encodes */
            j->enc.gpu = 0;
            snprintf(j->enc.why, sizeof j->enc.why, "%s", zg_error_message());
            zg_error_restore("");
        } else if (st != ZGPU_OK) {
            return st;
        }
    }
    if (!j->enc.gpu) { /* the host encodes whole objects: no units */
        j->shard = NULL;
        j->upo = 1;
        j->unit_nbytes = j->chunk_nbytes;
        j->index_nbytes = 0;
    }
    memcpy(j->c_strides, j->chunk_strides, sizeof j->c_strides);
    if (j->enc.gpu && j->enc.transposed) memcpy(j->chunk_strides, j->enc.strides, sizeof(int64_t) * (size_t)nd);
    size_t ia = WD_ALIGN;
    if (j->enc.gpu && j->L.in_align > ia) ia = j->L.in_align;
    j->cs = zg_align_up(j->chunk_nbytes ? j->chunk_nbytes : 1, ia);
    j->ucs = j->shard ? zg_align_up(j->unit_nbytes ? j->unit_nbytes : 1, ia) : j->cs;
    if (j->enc.gpu) {
        const size_t oa = j->L.out_align > WD_ALIGN ? j->L.out_align : WD_ALIGN;
        j->slot = zg_align_up(j->L.slot_bytes, oa);
    }
    j->desc = desc_layout(per_wave, j->upo, j->shard != NULL, nd);
    if (a->ctx->tuning.trace)
        fprintf(stderr, "zgpu trace: device write of %zu chunks in waves of %zu: %s%s%s%s%s\n", j->plan.n_tasks,
                per_wave, j->enc.gpu ? "GPU encoder " : "host encoders (",
                j->enc.gpu ? (j->enc.blosc ? "blosc" : zg_gpu_encode_format_name(j->enc.format)) : j->enc.why,
                j->enc.gpu && !j->enc.blosc && j->enc.format == ZG_GE_ZSTD
                    ? (j->eopts.zstd_nvcomp ? " (nvCOMP)" : " (zgpu's encoder)")
                    : "",
                j->shard ? " (sharded: inner chunks)" : j->enc.gpu && j->enc.transposed ? " (transposed)" : "",
                j->enc.gpu ? "" : ")");
    for (int k = 0; k < j->n_sets; k++) ZG_FORWARD(set_alloc(j, k, per_wave));
    return ZGPU_OK;
}

/* The objects covered in part, one at a time (each alone in its wave), then waves of per_wave objects on n_sets
 * buffer sets in turn: wave w's GPU work up to its encode is queued, then wave w - 1's writes handed to the pool
 * (once its copy is on the host) while the GPU encodes, then wave w packed and copied back (its copy queued before
 * wave w + 1's work). A set's writes are waited for only when a later wave needs the set, so that with more than
 * two sets the writes of several waves run at once. */
static zgpu_status run_waves(wd_job *j, size_t per_wave) {
    const size_t n = j->plan.n_tasks;
    wd_set *prev = NULL;
    zgpu_status st = ZGPU_OK;
    for (size_t p = 0; p < j->n_partial && st == ZGPU_OK; p++) {
        wd_set *b = &j->set[0];
        b->idx = j->order + p;
        b->n = 1;
        b->alone = 1;
        st = launch_wave(j, b);
        if (st == ZGPU_OK) st = finish_wave(j, b);
        if (st == ZGPU_OK) st = wait_done(j, b);
        if (st == ZGPU_OK) st = write_wave(j, b);
        unlock_wave(j, b);
        b->alone = 0;
    }
    const int trace = j->a->ctx->tuning.trace;
    for (size_t first = j->n_partial, w = 0; first < n && st == ZGPU_OK; first += per_wave, w++) {
        wd_set *b = &j->set[w % (size_t)j->n_sets];
        const double t0 = trace ? now_ms() : 0;
        st = write_end(j, b); /* the writes of the wave that had the set */
        if (st != ZGPU_OK) break;
        b->idx = j->order + first;
        b->n = n - first < per_wave ? n - first : per_wave;
        const double t1 = trace ? now_ms() : 0;
        st = launch_wave(j, b);
        const double t2 = trace ? now_ms() : 0;
        if (prev) {
            zgpu_status s2 = wait_done(j, prev);
            if (s2 == ZGPU_OK) s2 = write_start(j, prev);
            if (st == ZGPU_OK) st = s2;
            prev = NULL;
        }
        const double t3 = trace ? now_ms() : 0;
        if (st == ZGPU_OK) st = finish_wave(j, b);
        if (trace) /* host time of each step; finish waits for the wave's encode */
            fprintf(stderr, "zgpu trace: device write wave %zu (%zu objects, set %zu): its set's earlier writes "
                    "%.2f ms, launch %.2f ms, previous wave's copy %.2f ms, finish (encode, pack, copy) %.2f ms\n",
                    w, b->n, w % (size_t)j->n_sets, t1 - t0, t2 - t1, t3 - t2, now_ms() - t3);
        if (st != ZGPU_OK) break;
        prev = b;
    }
    const double t4 = trace ? now_ms() : 0;
    if (prev && st == ZGPU_OK) st = wait_done(j, prev);
    if (prev && st == ZGPU_OK) st = write_start(j, prev);
    /* every set's writes waited for (also after a failure: the pool's jobs use the sets' memory); the first failure
     * is the one reported, its message kept */
    char first[ZG_ERRMSG_MAX];
    if (st != ZGPU_OK) zg_error_save(first);
    for (int k = 0; k < j->n_sets; k++) {
        const zgpu_status s2 = write_end(j, &j->set[k]);
        if (st == ZGPU_OK && s2 != ZGPU_OK) zg_error_save(first);
        if (st == ZGPU_OK) st = s2;
    }
    if (st != ZGPU_OK) zg_error_restore(first);
    if (trace && prev) fprintf(stderr, "zgpu trace: device write: last waves' writes %.2f ms\n", now_ms() - t4);
    return st;
}

/* Buffer sets: two (wave w's encode beside wave w - 1's writes), more where a wave holds fewer objects than the
 * pool has threads (shards: a thread writes each), so that the writes of several waves run at once, while the
 * sets fit the budget (about three waves of device memory a set) and tuning.wave_sets; at most one a wave. */
static int wave_sets(const wd_job *j, size_t per_wave, size_t budget) {
    const size_t waves = (j->plan.n_tasks - j->n_partial + per_wave - 1) / per_wave;
    const size_t threads = (size_t)zg_pool_size(j->a->ctx->pool), wave_bytes = per_wave * j->chunk_nbytes;
    const size_t most = j->a->ctx->tuning.wave_sets ? (size_t)j->a->ctx->tuning.wave_sets : ZG_WD_SETS;
    size_t n = 2;
    while (n < most && n * per_wave < threads && n < waves && (n + 1) * 3 * wave_bytes <= budget) n++;
    if (n > waves) n = waves ? waves : 1;
    return (int)n;
}

zgpu_status zg_device_write(zgpu_array *a, const uint64_t *start, const uint64_t *count, const void *d_in,
                            const int64_t *in_strides, void *stream) {
    ZG_RETURN_IF(!a || !d_in || (a->meta.ndim > 0 && (!start || !count)), ZGPU_ERR_INVALID_ARGUMENT,
                 "zgpu_array_write_device: array, start, count and the device buffer are required");
    ZG_FORWARD(zg_array_check_writable(a, "zgpu_array_write_device"));
    wd_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.d_in = d_in;
    j.stream = (cudaStream_t)stream;
    j.itemsize = a->meta.dtype.size;
    ZG_FORWARD(zg_resolve_strides(a, count, in_strides, j.in_strides));
    ZG_FORWARD(zg_plan_build_units(a, start, count, 1, &j.plan));
    const int nd = j.plan.ndim;
    for (int d = 0; d < nd; d++) j.chunk_shape[d] = j.plan.chunk[d];
    zg_c_strides(nd, j.plan.chunk, j.itemsize, j.chunk_strides);
    j.chunk_nbytes = (size_t)zg_repr_nbytes(&a->chain->repr);
    zgpu_status st = ZGPU_OK;
    j.order = malloc((j.plan.n_tasks ? j.plan.n_tasks : 1) * sizeof *j.order);
    if (!j.order) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for a device write");
    for (size_t i = 0; j.order && i < j.plan.n_tasks; i++)
        if (!covers_object(&j, &j.plan.tasks[i])) j.order[j.n_partial++] = i;
    for (size_t i = 0, k = j.n_partial; j.order && i < j.plan.n_tasks; i++)
        if (covers_object(&j, &j.plan.tasks[i])) j.order[k++] = i;
    if (st == ZGPU_OK && j.plan.n_tasks) st = dev_get_state(a->ctx, &j.st);
    if (j.st) pthread_mutex_lock(&j.st->wlock);
    if (st == ZGPU_OK && j.plan.n_tasks) {
        const size_t budget = a->ctx->opts.device_memory_budget ? a->ctx->opts.device_memory_budget : j.st->auto_budget;
        uint64_t wave_bytes = a->ctx->tuning.write_wave_bytes;
        if (!wave_bytes) {
            wave_bytes = budget / 6;
            if (wave_bytes < WD_WAVE_MIN) wave_bytes = WD_WAVE_MIN;
            if (wave_bytes > WD_WAVE_MAX) wave_bytes = WD_WAVE_MAX;
        }
        size_t per_wave = (size_t)(wave_bytes / (j.chunk_nbytes ? j.chunk_nbytes : 1));
        if (per_wave < 1) per_wave = 1;
        if (per_wave > 4096) per_wave = 4096;
        if (per_wave > j.plan.n_tasks) per_wave = j.plan.n_tasks;
        j.n_sets = wave_sets(&j, per_wave, budget);
        if (cudaStreamCreateWithFlags(&j.copy, cudaStreamNonBlocking) != cudaSuccess)
            st = zg_error(ZGPU_ERR_CUDA, ZG_ARRAY_WHERE_FMT ": device write: cudaStreamCreate failed", a->path);
        if (st == ZGPU_OK) st = prepare(&j, per_wave);
        if (st == ZGPU_OK) st = run_waves(&j, per_wave);
        /* nothing queued may outlive the buffers */
        cudaStreamSynchronize(j.stream);
        if (j.copy) {
            cudaStreamSynchronize(j.copy);
            cudaStreamDestroy(j.copy);
        }
    }
    for (int k = 0; k < ZG_WD_SETS; k++) set_free(&j.set[k]);
    if (j.st) pthread_mutex_unlock(&j.st->wlock);
    free(j.order);
    zg_plan_free(&j.plan);
    return st;
}
