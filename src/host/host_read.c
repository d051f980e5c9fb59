/* Host executor for reads: every planned chunk is fetched, decoded and placed by one pool task, straight
 * into the caller's buffer when the chunk is contiguous there. A read of several boxes (zgpu_array_read_regions)
 * is one plan: a chunk that several boxes need is decoded once, by its unit's leader, and placed in each. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache/chunk_cache.h"
#include "codec/sharding.h"
#include "convert/convert.h"
#include "host/host_read.h"
#include "host/host_runs.h"
#include "host/read_progress.h"
#include "host/read_trace.h"
#include "host/scratch.h"
#include "plan/plan.h"
#include "common/status.h"

typedef struct read_job {
    zgpu_array *a;
    const zg_plan *plan;
    const zg_chain *chain;      /* decodes one read chunk */
    void *const *outs;          /* per region: its destination */
    const int64_t *strides;     /* per region: ndim byte strides of its destination */
    int64_t chunk_strides[ZGPU_MAX_DIMS];
    size_t task_base;           /* a window of a remote read: its first task (pool index 0) */
    atomic_uint_fast64_t io_ns, decode_ns, stored;
    /* the context's decoded-chunk cache (NULL: off): per plan task, a leader's hit (decoded_elsewhere) or the
     * generation its miss saw, for the put after its decode */
    zg_chunk_cache *cache;
    zg_cache_ref **hits;
    uint64_t *gens;
    zg_xform x;                 /* what the destinations get (zgpu_read_options): x.identity, the stored values */
    int partial;                /* how chunks needed in part decode: ZG_PARTIAL_* (zg_host_partial_kind) */
    zg_decode_par par;          /* the pool; ways: the threads a unit of average work may use (unit_par) */
    double work_total;          /* every unit's decode work (unit_work), summed */
    uint32_t *order;            /* a local read of more units than threads: the leaders, largest work first (NULL:
                                 * plan order), n_order of them */
    size_t n_order;
    int runs;                   /* the chain decodes a chunk's rows alone (zg_chain_decodes_runs; partial PREFIX) */
    double ratio;               /* the chunks' compression ratio as the array's last read found it (0: unknown) */
    zg_read_progress *progress; /* told each box's rows as they are written (NULL: nobody asks) */
    zg_read_trace trace;        /* tuning trace: each unit's times (trace.u NULL: off) */
} read_job;

static uint64_t ns_since(double t0) { return (uint64_t)((zg_now() - t0) * 1e9); }

static const int64_t *region_strides(const read_job *j, const zg_chunk_task *t) {
    return j->strides + (size_t)t->region * (size_t)j->plan->ndim;
}

/* The destination address of a task's first element. */
static uint8_t *task_dst(const read_job *j, const zg_chunk_task *t) {
    uint8_t *dst = j->outs[t->region];
    const int64_t *s = region_strides(j, t);
    for (int d = 0; d < j->plan->ndim; d++) dst += (int64_t)t->in_box[d] * s[d];
    return dst;
}

/* Whether a whole chunk lands as one C-contiguous block of the task's destination (as it is decoded: no
 * conversion). */
static int chunk_is_contiguous(const read_job *j, const zg_chunk_task *t) {
    if (!j->x.identity) return 0;
    const int64_t *s = region_strides(j, t);
    for (int d = 0; d < j->plan->ndim; d++)
        if (j->plan->chunk[d] > 1 && s[d] != j->chunk_strides[d]) return 0;
    return 1;
}

/* Every task of the unit led by t (t and the tasks after it) gets the fill value. */
static void fill_unit(const read_job *j, const zg_chunk_task *t) {
    for (uint32_t k = 0; k < t->unit_n; k++)
        if (j->x.identity)
            zg_fill_box(j->plan->ndim, t[k].count, j->a->meta.dtype.size, task_dst(j, &t[k]), region_strides(j, &t[k]),
                        j->a->meta.fill_value);
        else
            zg_convert_fill(j->plan->ndim, t[k].count, &j->x, task_dst(j, &t[k]), region_strides(j, &t[k]),
                            j->a->meta.fill_value);
}

/* The rows along axis 0 of every box of the unit led by t, expected (before the read runs) or reported as written. */
static void unit_rows(const read_job *j, const zg_chunk_task *t, int expect) {
    for (uint32_t k = 0; k < t->unit_n; k++) {
        const uint64_t z0 = j->plan->ndim ? t[k].in_box[0] : 0, z1 = j->plan->ndim ? z0 + t[k].count[0] : 1;
        if (expect) zg_progress_expect(j->progress, t[k].region, z0, z1);
        else zg_progress_report(j->progress, t[k].region, z0, z1);
    }
}

/* A decoded chunk (C order) into the destination of task u, converted if the read asks. */
static void place(const read_job *j, const zg_chunk_task *u, const uint8_t *chunk) {
    const int nd = j->plan->ndim;
    const uint8_t *src = chunk;
    for (int d = 0; d < nd; d++) src += (int64_t)u->in_chunk[d] * j->chunk_strides[d];
    if (j->x.identity)
        zg_copy_box(nd, u->count, j->a->meta.dtype.size, task_dst(j, u), region_strides(j, u), src, j->chunk_strides);
    else
        zg_convert_box(nd, u->count, &j->x, task_dst(j, u), region_strides(j, u), src, j->chunk_strides);
}

/* A large box placed by several threads, in slabs along axis 0: a unit whose decode was lent threads would copy its
 * boxes alone after (2 MiB of a label crop's chunk: a fifth of the read on 16 threads). */
#define PLACE_SPLIT_MIN ((uint64_t)1 << 20)
typedef struct place_job {
    const read_job *j;
    const zg_chunk_task *u;
    const uint8_t *chunk;
    uint64_t slabs;
} place_job;

static zgpu_status place_slab_task(void *arg, size_t i) {
    const place_job *p = arg;
    zg_chunk_task slab = *p->u;
    const uint64_t rows = p->u->count[0], z0 = rows * i / p->slabs, z1 = rows * (i + 1) / p->slabs;
    slab.in_chunk[0] += z0;
    slab.in_box[0] += z0;
    slab.count[0] = z1 - z0;
    if (z1 > z0) place(p->j, &slab, p->chunk);
    return ZGPU_OK;
}

/* place(), by par's threads (ways > 1) where the box is large enough to pay. */
static void place_par(const read_job *j, const zg_chunk_task *u, const uint8_t *chunk, const zg_decode_par *par) {
    const uint64_t bytes = zg_plan_unit_bytes(j->plan, u, 1, j->a->meta.dtype.size);
    uint64_t slabs = par->ways > 1 && par->pool ? bytes / (PLACE_SPLIT_MIN / 2) : 1;
    if (slabs > (uint64_t)par->ways) slabs = (uint64_t)par->ways;
    if (slabs > u->count[0]) slabs = u->count[0];
    if (slabs < 2 || bytes < PLACE_SPLIT_MIN) {
        place(j, u, chunk);
        return;
    }
    place_job p = {j, u, chunk, slabs};
    (void)zg_pool_run(par->pool, (size_t)slabs, place_slab_task, &p); /* (the tasks cannot fail) */
}

/* The stored bytes of a chunk the read needs only [lo, hi) of, where the chain can say which of them that takes
 * (zg_chain_stored_span: blosc's header, block starts and the blocks holding the range; an uncompressed chunk's
 * [lo, hi) itself): those are read into a buffer of the chunk's stored size and the rest stays on disk (a patch of
 * a 64x256x256 blosc chunk reads 2 of its 64 blocks). Local stores only: the chunk is the leader's object, or its
 * t->nbytes at t->offset of it (an inner chunk of a shard, read through the shard's open file). *have = 1: io holds
 * the chunk's n stored bytes (those the range needs, or all); *have = 0 and *found = 1: nothing read, the caller
 * reads the whole chunk; *found = 0: the chunk is absent. */
typedef struct part_reader {
    zg_store *s;
    const zg_plan_object *ob;
    zg_store_file *f; /* the object open for this chunk (ob->file for shards) */
    uint64_t base;
} part_reader;

static zgpu_status part_read(const part_reader *r, uint64_t off, uint64_t len, uint8_t *out) {
    if (!len) return ZGPU_OK;
    if (r->f) return r->s->vt->read_file(r->f, r->base + off, len, out);
    int found = 0;
    ZG_FORWARD(r->s->vt->get_range(r->s, r->ob->key, r->base + off, len, 0, out, &found));
    return found ? ZGPU_OK : zg_error(ZGPU_ERR_IO, "'%s' vanished while it was read", r->ob->key);
}

/* The chunk of t opened for reads of parts: *n its stored size. r->f stays NULL (with *found = 1) where it is not
 * kept open (then it is read whole); *found = 0: absent. part_close closes what this opened. */
static zgpu_status part_open(const read_job *j, const zg_chunk_task *t, part_reader *r, uint64_t *n, int *found) {
    zg_store *s = j->a->store;
    const zg_plan_object *ob = &j->plan->objects[t->object];
    *r = (part_reader){s, ob, ob->file, 0};
    *n = 0;
    *found = 1;
    if (t->state == ZG_TASK_PRESENT) { /* an inner chunk at t->offset of a shard */
        r->base = t->offset;
        *n = t->nbytes;
        return ZGPU_OK;
    }
    r->f = NULL; /* a chunk object: opened once, so every range is of the same version of it */
    if (!s->vt->open_file) return ZGPU_OK;
    return s->vt->open_file(s, ob->key, &r->f, n, found);
}

static void part_close(part_reader *r) {
    if (r->f && r->f != r->ob->file) r->s->vt->close_file(r->f);
    r->f = NULL;
}

static zgpu_status read_part(const read_job *j, const zg_chunk_task *t, zg_buf *io, size_t lo, size_t hi, int *found,
                             size_t *read_n, int *have) {
    part_reader r;
    uint64_t n = 0;
    int ranged = 0;
    *have = 0;
    ZG_FORWARD(part_open(j, t, &r, &n, found));
    if (!*found || !r.f) return ZGPU_OK; /* absent: the fill value; not kept open: read whole */
    zgpu_status st = ZGPU_OK;
    /* (a chain that stores the chunk as it is names its span without a head; one that names no span, zstd's prefix,
     * is read whole in one read) */
    size_t head_n = 0, total = 0,
           need = zg_chain_stores_raw(j->chain) ? 0 : !zg_chain_reads_spans(j->chain) || n < 4096 ? (size_t)n : 4096;
    uint64_t off = 0, end = 0;
    if (n > SIZE_MAX / 2 || (st = zg_buf_reserve(io, (size_t)n)) != ZGPU_OK) goto done;
    for (int round = 0; round < 3; round++) { /* the head (a guess, then what the codec asks for), then the span */
        if (need > n) need = (size_t)n;
        if (need > head_n) {
            if ((st = part_read(&r, head_n, need - head_n, io->data + head_n)) != ZGPU_OK) goto done;
            total += need - head_n;
            head_n = need;
        }
        if (head_n == n || !zg_chain_stored_span(j->chain, io->data, head_n, (size_t)n, lo, hi, &need, &off, &end))
            break;
        if (need > head_n) continue;
        if (end > n || off > end) break;
        if (end > head_n) { /* (what the head already holds is not read again) */
            const uint64_t from = off > head_n ? off : head_n;
            if ((st = part_read(&r, from, end - from, io->data + from)) != ZGPU_OK) goto done;
            total += (size_t)(end - from);
        }
        ranged = 1;
        break;
    }
    if (!ranged && head_n < n) { /* the chain wants it all: read the rest */
        if ((st = part_read(&r, head_n, n - head_n, io->data + head_n)) != ZGPU_OK) goto done;
        total += (size_t)n - head_n;
    }
    *have = 1;
    io->size = (size_t)n;
    *read_n = total;
done:
    part_close(&r);
    return st;
}

/* A chunk read in part as its decode asks (zg_part_input): the reader, and the bytes read (from the pool's threads).
 * Below ZG_PART_READ_MIN stored bytes a chunk is read whole (one read costs less than a block's several). */
#define ZG_PART_READ_MIN ((uint64_t)256 << 10)
typedef struct part_fetcher {
    const part_reader *r;
    atomic_ullong bytes;
} part_fetcher;

static zgpu_status part_fetch(void *ctx, uint64_t off, uint64_t len, uint8_t *dst) {
    part_fetcher *f = ctx;
    atomic_fetch_add(&f->bytes, len);
    return part_read(f->r, off, len, dst);
}

static zgpu_status chunk_failed(const read_job *j, const zg_chunk_task *t, zgpu_status st) {
    const zg_plan_object *ob = &j->plan->objects[t->object];
    if (j->a->shard) {
        char what[300];
        zg_sharding_describe_inner(j->a->shard, ob->key, t->inner, what, sizeof what);
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ", %s: ", j->a->path, what);
    }
    else zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", j->a->path, ob->key);
    return st;
}

/* A unit's decode work, in bytes of the chunk: from its start up to the last byte its boxes need where a chunk
 * needed in part decodes from its start, or what decoding only the boxes' rows costs where the chain does that
 * (zg_chain_runs_cost at the chunk's compression ratio: a label chunk's crop of three boxes costs several times a
 * corner of one, whose prefixes are alike), else the whole chunk. */
static double unit_work(const read_job *j, const zg_chunk_task *t) {
    const double chunk = (double)zg_repr_nbytes(&j->chain->repr);
    if (j->partial != ZG_PARTIAL_PREFIX || (t->unit_n == 1 && t->covers_chunk)) return chunk;
    size_t lo, hi;
    zg_plan_unit_range(j->plan, t, t->unit_n, j->a->meta.dtype.size, j->chunk_strides, &lo, &hi);
    const double ratio = t->state == ZG_TASK_PRESENT && t->nbytes ? chunk / (double)t->nbytes : j->ratio;
    if (!j->runs || !(ratio > 0)) return (double)hi;
    const uint64_t bytes = zg_plan_unit_bytes(j->plan, t, t->unit_n, j->a->meta.dtype.size);
    const double c = zg_chain_runs_cost(j->chain, ratio, bytes, lo, hi, 1);
    return c < (double)hi ? c : (double)hi;
}

/* The threads a unit's decode may use (zstd, gzip, zlib split a frame or stream over them; zstd's sparse decodes
 * their runs): its share of the read's work on the pool's threads. A read of fewer chunks than threads lends each
 * about threads / chunks, a read of many chunks one each; a large unit among small ones (a crop's chunk with two
 * or three boxes among chunks with a corner of one) more than the others, so that it does not finish last alone. */
static zg_decode_par unit_par(const read_job *j, const zg_chunk_task *t) {
    zg_decode_par p = j->par;
    if (p.ways > 1 || !(j->work_total > 0)) return p;
    const int threads = zg_pool_size(p.pool);
    const double share = unit_work(j, t) * threads / j->work_total;
    p.ways = share >= 2 ? (int)(share < threads ? share : threads) : 1;
    return p;
}

/* Fetches and decodes the chunk of unit leader t for its tasks t[first, first + n) and places them: the whole
 * chunk, or with `partial` only the part they need (zg_chain_decode_range), reading on a local store only the
 * stored bytes that takes where the codec says which they are (blosc). A chunk the plan holds in memory (fetched
 * from a remote store) counts as stored bytes read once, by the call with `first_of_unit`. */
static zgpu_status fetch_decode(read_job *j, const zg_chunk_task *t, size_t ti, zg_thread_scratch *ts, uint32_t first,
                                uint32_t n, int partial, int first_of_unit) {
    const zg_plan *plan = j->plan;
    const zg_plan_object *ob = &plan->objects[t->object];
    zg_store *s = j->a->store;
    double t0 = zg_now();
    const double t_start = t0;
    int found = 1; /* (until a read says the chunk is absent) */
    zgpu_status st = ZGPU_OK;
    const int direct = n == 1 && t->unit_n == 1 && t->covers_chunk && chunk_is_contiguous(j, t);
    size_t lo = 0, hi = 0;
    if (partial) zg_plan_unit_range(plan, t + first, n, j->a->meta.dtype.size, j->chunk_strides, &lo, &hi);
    /* the stored bytes: already in memory (fetched from a remote store by the plan), the part a range needs, a
     * range inside a shard, or the whole object */
    const uint8_t *enc = t->state == ZG_TASK_PRESENT ? zg_plan_bytes(ob, t->offset, t->nbytes) : NULL;
    size_t enc_n = (size_t)t->nbytes, read_n = (size_t)t->nbytes;
    if (enc && !j->a->shard) read_n = first_of_unit ? (size_t)ob->fetched_bytes : 0; /* (a chunk fetched whole or in part) */
    else if (enc && !first_of_unit) read_n = 0;
    int have = 0;
    /* a frame decoded from its start (zstd): only the rows the boxes need where its matches let that pay; a large
     * local chunk read as that decode asks (a plane of an OCT inner chunk: the blocks it reads) */
    size_t n_runs = 0;
    const zg_byte_run *run_list = NULL;
    int runs_direct = 0; /* (the runs go straight to their boxes' destinations: nothing to place after) */
    const zg_runs_dest dest = {j->outs, j->strides};
    const int runs = partial && j->runs &&
                     zg_host_unit_runs(j->plan, t + first, n, j->chunk_strides, j->x.identity ? &dest : NULL,
                                       &ts->runs, &run_list, &n_runs, &runs_direct);
    part_reader pr = {0};
    part_fetcher pf = {&pr, 0};
    zg_part_input part_in = {NULL, part_fetch, &pf};
    if (!enc && runs && !s->vt->remote) {
        uint64_t pn = 0;
        st = part_open(j, t, &pr, &pn, &found);
        if (st == ZGPU_OK && found && pr.f && pn <= SIZE_MAX / 2 &&
            (st = zg_buf_reserve(&ts->io, (size_t)pn)) == ZGPU_OK) {
            ts->io.size = (size_t)pn;
            enc = ts->io.data;
            enc_n = (size_t)pn;
            if (pn >= ZG_PART_READ_MIN) {
                part_in.buf = ts->io.data;
                read_n = 0; /* (counted as the decode reads) */
            } else { /* a small chunk: whole, from the file just opened (not opened again) */
                st = part_read(&pr, 0, pn, ts->io.data);
                read_n = (size_t)pn;
                part_close(&pr);
            }
        } else {
            part_close(&pr);
        }
        if (st != ZGPU_OK) return chunk_failed(j, t, st);
    }
    if (!enc && found) {
        if (partial && !s->vt->remote) st = read_part(j, t, &ts->io, lo, hi, &found, &read_n, &have);
        if (st == ZGPU_OK && !have && found) {
            if (t->state == ZG_TASK_PRESENT) {
                st = zg_buf_reserve(&ts->io, (size_t)t->nbytes);
                if (st == ZGPU_OK) st = zg_plan_read(s, ob, t->offset, t->nbytes, ts->io.data, &found);
                ts->io.size = (size_t)t->nbytes;
            } else {
                ts->io.size = 0;
                st = s->vt->get(s, ob->key, &ts->io, &found);
            }
            read_n = ts->io.size;
        }
        if (st != ZGPU_OK) return chunk_failed(j, t, st);
        enc = ts->io.data;
        enc_n = ts->io.size;
    }
    atomic_fetch_add(&j->io_ns, ns_since(t0));
    if (!found) {
        fill_unit(j, t);
        return ZGPU_OK;
    }
    atomic_fetch_add(&j->stored, read_n);

    t0 = zg_now();
    const double t_io = t0;
    uint8_t *target = task_dst(j, t);
    if (!direct) {
        st = zg_buf_reserve(&ts->chunk, (size_t)zg_repr_nbytes(&j->chain->repr));
        if (st != ZGPU_OK) {
            part_close(&pr);
            return st;
        }
        target = ts->chunk.data;
    }
    const zg_decode_par par = first == 0 && n == t->unit_n ? unit_par(j, t) : j->par;
    ts->codec.par = par.ways > 1 ? &par : NULL;
    if (runs)
        st = zg_chain_decode_runs(j->chain, enc, enc_n, target, run_list, n_runs,
                                  part_in.buf ? &part_in : NULL, &ts->codec);
    else
        st = partial ? zg_chain_decode_range(j->chain, enc, enc_n, target, lo, hi, &ts->codec)
                     : zg_chain_decode(j->chain, enc, enc_n, target, &ts->codec);
    ts->codec.par = NULL;
    if (part_in.buf) {
        part_close(&pr);
        atomic_fetch_add(&j->stored, atomic_load(&pf.bytes));
    }
    if (st != ZGPU_OK) return chunk_failed(j, t, st);
    /* (a chunk decoded in place is one C-contiguous block of the output: kept from there) */
    if (j->cache)
        zg_chunk_cache_put(j->cache, j->a->store->id, ob->key, t->inner, j->gens[ti], target,
                           (size_t)zg_repr_nbytes(&j->chain->repr));
    const int placed = direct || (runs && runs_direct);
    for (uint32_t k = first; !placed && k < first + n; k++) place_par(j, &t[k], target, &par);
    atomic_fetch_add(&j->decode_ns, ns_since(t0));
    if (j->trace.u) {
        const size_t size = (size_t)zg_repr_nbytes(&j->chain->repr);
        const zg_unit_trace u = {ob->key, t->inner, (int)syscall(SYS_gettid), t_start - j->trace.t0, t_io - j->trace.t0,
                                 zg_now() - j->trace.t0, par.ways, runs ? n_runs : 0, partial ? hi : size, size,
                                 read_n + (part_in.buf ? (size_t)atomic_load(&pf.bytes) : 0)};
        zg_read_trace_unit(&j->trace, &u);
    }
    return ZGPU_OK;
}

/* The unit led by task ti (t) fetched, decoded and placed in every box it lands in. */
static zgpu_status read_unit(read_job *j, const zg_chunk_task *t, size_t ti) {
    if (t->decoded_elsewhere) { /* a hit of the chunk cache: placed from there */
        for (uint32_t k = 0; k < t->unit_n; k++) place(j, &t[k], j->hits[ti]->data);
        return ZGPU_OK;
    }
    if (t->state == ZG_TASK_MISSING) {
        fill_unit(j, t);
        return ZGPU_OK;
    }
    zg_thread_scratch *ts = zg_thread_scratch_get();
    if (!ts) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for thread scratch");
    const int direct = t->unit_n == 1 && t->covers_chunk && chunk_is_contiguous(j, t);
    /* a chunk needed in part decodes only that part (tuning partial_decode); the cache keeps whole chunks */
    const int partial = !direct && !j->cache && j->partial != ZG_PARTIAL_NONE;
    /* where a partial read costs what it reads and decodes (blosc blocks), the boxes of a unit go one by one: two
     * patches far apart in one chunk read their own blocks, not everything between them (a zstd frame decodes from
     * its start: once, as far as the last box needs) */
    if (partial && t->unit_n > 1 && j->partial == ZG_PARTIAL_SPANS) {
        for (uint32_t k = 0; k < t->unit_n; k++) ZG_FORWARD(fetch_decode(j, t, ti, ts, k, 1, 1, k == 0));
        return ZGPU_OK;
    }
    return fetch_decode(j, t, ti, ts, 0, t->unit_n, partial, 1);
}

static zgpu_status read_task(void *arg, size_t i) {
    read_job *j = arg;
    const zg_chunk_task *t = &j->plan->tasks[j->task_base + i];
    if (!t->unit_n) return ZGPU_OK; /* placed by its unit's leader */
    const zgpu_status st = read_unit(j, t, j->task_base + i);
    if (st == ZGPU_OK && j->progress) unit_rows(j, t, 0);
    return st;
}

/* read_task of the i-th unit in j->order. */
static zgpu_status ordered_read_task(void *arg, size_t i) {
    read_job *j = arg;
    return read_task(j, j->order[i]);
}

/* ---- pieces: a read of fewer chunks than threads, on a chain that reads spans (blosc), splits its boxes ----
 * A crop of three or four chunks keeps three or four of sixteen threads busy, each decoding half of a chunk's blocks
 * on its own. Each box is cut along axis 0 (its rows of planes are disjoint byte ranges of the chunk) into pieces of
 * at least ZG_HOST_PIECE_MIN_BYTES of the chunk, about threads / chunks of them; each piece reads (on a remote store:
 * takes from the fetched chunk) and decodes its own blocks (a block a cut falls in is decoded by both pieces) and
 * places its part of the box. */

typedef struct read_piece {
    size_t task;    /* the unit's leader in the plan */
    uint32_t k;     /* its box (task leader + k); z1 == 0: the whole unit, as read_task */
    uint64_t z0, z1; /* rows of that box along axis 0 */
} read_piece;

typedef struct piece_job {
    read_job *j;
    const read_piece *pieces;
} piece_job;

static zgpu_status piece_task(void *arg, size_t i) {
    piece_job *pj = arg;
    read_job *j = pj->j;
    const read_piece *pc = &pj->pieces[i];
    if (!pc->z1) return read_task(j, pc->task);
    const zg_chunk_task *t = &j->plan->tasks[pc->task];
    /* the leader's chunk (object, stored range, state), the box's place in it and in its destination */
    zg_chunk_task part = *t;
    const zg_chunk_task *box = &t[pc->k];
    memcpy(part.in_chunk, box->in_chunk, sizeof part.in_chunk);
    memcpy(part.in_box, box->in_box, sizeof part.in_box);
    memcpy(part.count, box->count, sizeof part.count);
    part.region = box->region;
    part.in_chunk[0] += pc->z0;
    part.in_box[0] += pc->z0;
    part.count[0] = pc->z1 - pc->z0;
    part.unit_n = 1;
    part.covers_chunk = 0;
    zgpu_status st = ZGPU_OK;
    if (part.state == ZG_TASK_MISSING) { /* (a remote chunk found absent by its fetch) */
        fill_unit(j, &part);
    } else {
        zg_thread_scratch *ts = zg_thread_scratch_get();
        if (!ts) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for thread scratch");
        st = fetch_decode(j, &part, pc->task, ts, 0, 1, 1, pc->k == 0 && pc->z0 == 0);
    }
    if (st == ZGPU_OK && j->progress) unit_rows(j, &part, 0);
    return st;
}

/* Before the read's tasks run: every report its progress will get, from each piece (NULL: each unit). */
static void expect_rows(read_job *j, const read_piece *pieces, size_t n_pieces) {
    if (!j->progress) return;
    zg_progress_reset(j->progress);
    const zg_plan *plan = j->plan;
    for (size_t i = 0; i < (pieces ? n_pieces : plan->n_tasks); i++) {
        const zg_chunk_task *t = &plan->tasks[pieces ? pieces[i].task : i];
        if (!pieces || !pieces[i].z1) {
            if (t->unit_n) unit_rows(j, t, 1);
            continue;
        }
        const zg_chunk_task *box = &t[pieces[i].k];
        const uint64_t z0 = plan->ndim ? box->in_box[0] : 0;
        zg_progress_expect(j->progress, box->region, z0 + pieces[i].z0, z0 + pieces[i].z1);
    }
}

/* The pieces of a read, or NULL (*n = 0) where splitting gains nothing: no partial reads, the cache on (it keeps
 * whole chunks), one box a chunk and as many chunks as threads, none of them much more than its share. A remote
 * read's chunks may not be fetched yet (no state, no size): every box is cut by its place in the chunk, and a piece
 * of an absent chunk fills its part.
 * With fewer chunks than threads each box is cut into about threads / chunks pieces. With as many or more, the pool
 * balances what it is given: a unit's boxes (which read their blocks apart anyway) become pieces of their own, and a
 * box of more than about half a thread's share is cut to that size. Before, a unit was one task whatever its boxes:
 * 64 blosc patches over 16 chunks gave each thread one chunk's 9 to 25 boxes, and 8 crops over 18 chunks left two
 * threads a second chunk each while the others waited. */
static read_piece *split_pieces(const read_job *j, int threads, size_t *n) {
    const zg_plan *plan = j->plan;
    *n = 0;
    if (threads < 2 || plan->ndim < 1 || j->cache || j->partial != ZG_PARTIAL_SPANS) return NULL;
    size_t units = 0, many_boxes = 0;
    uint64_t total = 0, largest = 0;
    for (size_t i = 0; i < plan->n_tasks; i++) {
        const zg_chunk_task *t = &plan->tasks[i];
        units += t->unit_n != 0;
        many_boxes += t->unit_n > 1;
        for (uint32_t k = 0; k < t->unit_n; k++) {
            size_t lo, hi;
            zg_plan_unit_range(plan, t + k, 1, j->a->meta.dtype.size, j->chunk_strides, &lo, &hi);
            total += hi - lo;
            if (hi - lo > largest) largest = hi - lo;
        }
    }
    if (!units) return NULL;
    const int few = units < (size_t)threads;
    /* (few chunks: threads / units pieces of at least ZG_HOST_PIECE_MIN_BYTES; many: pieces of about half a
     * thread's share, no smaller) */
    const size_t want = few ? (size_t)threads / units : SIZE_MAX;
    uint64_t piece_bytes = ZG_HOST_PIECE_MIN_BYTES;
    if (!few && total / (2 * (uint64_t)threads) > piece_bytes) piece_bytes = total / (2 * (uint64_t)threads);
    if (!few && !many_boxes && largest < piece_bytes + piece_bytes / 2) return NULL; /* (the plan's tasks as is) */
    /* two passes: the pieces counted, then listed (a batch of many boxes lists no more than it uses) */
    read_piece *pieces = NULL;
    size_t m = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && !(pieces = malloc((m + 1) * sizeof *pieces))) return NULL; /* (read_task: units whole) */
        m = 0;
        for (size_t i = 0; i < plan->n_tasks; i++) {
            const zg_chunk_task *t = &plan->tasks[i];
            if (!t->unit_n) continue;
            if (t->decoded_elsewhere || t->state == ZG_TASK_MISSING || (t->unit_n == 1 && t->covers_chunk)) {
                if (pieces) pieces[m] = (read_piece){i, 0, 0, 0};
                m++;
                continue;
            }
            for (uint32_t k = 0; k < t->unit_n; k++) {
                const zg_chunk_task *box = &t[k];
                size_t lo, hi;
                zg_plan_unit_range(plan, box, 1, j->a->meta.dtype.size, j->chunk_strides, &lo, &hi);
                const uint64_t rows = box->count[0];
                uint64_t p = hi > lo ? (hi - lo + (few ? 0 : piece_bytes / 2)) / piece_bytes : 0;
                if (p > want) p = want;
                if (p > rows) p = rows;
                if (p < 1) p = 1;
                for (uint64_t q = 0; q < p && rows; q++, m++)
                    if (pieces) pieces[m] = (read_piece){i, k, rows * q / p, rows * (q + 1) / p};
            }
        }
    }
    *n = m;
    return pieces;
}

/* A remote read's window: whole objects from o0 on, up to about window_bytes (zgpu_remote_options) of decoded
 * chunks, at least one object: a window's stored bytes are fetched (many requests in flight) while the window
 * before decodes, and the fetched bytes in memory stay bounded. */
static size_t window_end(const read_job *j, size_t o0) {
    const zg_plan *plan = j->plan;
    const uint64_t per_task = zg_repr_nbytes(&j->chain->repr);
    const uint64_t WINDOW_BYTES = zg_remote_window_bytes(j->a->ctx);
    uint64_t bytes = 0;
    size_t o = o0;
    while (o < plan->n_objects && (o == o0 || bytes + plan->objects[o].n_tasks * per_task <= WINDOW_BYTES))
        bytes += plan->objects[o++].n_tasks * per_task;
    return o;
}

/* The chain a remote read's chunks needed in part may be fetched in part for (zg_plan_fetch_objects): where its
 * tasks decode those in part (read_task's `partial`: blocks of blosc), else NULL. */
static const zg_chain *part_chain(const read_job *j) {
    return j->partial == ZG_PARTIAL_SPANS && !j->cache ? j->chain : NULL;
}

/* A remote read on a pool with no worker threads (one thread, or a forked child): window by window, fetch then
 * decode. */
static zgpu_status read_remote_serial(read_job *j, zg_plan *plan, double *fetch_s) {
    zgpu_array *a = j->a;
    zgpu_status st = ZGPU_OK;
    expect_rows(j, NULL, 0);
    for (size_t w0 = 0; st == ZGPU_OK && w0 < plan->n_objects;) {
        const size_t w1 = window_end(j, w0);
        const double t0 = zg_now();
        st = zg_plan_fetch_objects(a, plan, w0, w1, part_chain(j), NULL);
        *fetch_s += zg_now() - t0;
        const zg_plan_object *first = &plan->objects[w0], *last = &plan->objects[w1 - 1];
        j->task_base = first->first_task;
        if (st == ZGPU_OK)
            st = zg_pool_run(a->ctx->pool, last->first_task + last->n_tasks - first->first_task, read_task, j);
        zg_plan_release_objects(plan, w0, w1);
        w0 = w1;
    }
    return st;
}

/* A remote read with the pool's threads decoding each chunk as soon as it has arrived, while this thread fetches:
 * a window's requests are in flight together, the next window's start when they end, and window k + 2 waits for
 * window k's decode (whose bytes are then freed), so at most two windows of stored bytes are held. A shard's inner
 * chunks decode one by one as their ranges come (a crop of 8 of them waited for the last before). */
typedef struct overlap {
    read_job *j;
    const read_piece *pieces; /* the pool's tasks: these pieces (split_pieces), or NULL: the plan's tasks */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int *state;        /* per object: 0 not fetched yet, 1 fetched, 2 its fetch failed */
    atomic_int *task_state;   /* per task: the same for an inner chunk fetched alone (0 until then, or never) */
    size_t *window_of;        /* per object: its window */
    atomic_size_t *undecoded; /* per window: pool tasks not finished */
    atomic_int stop;          /* a fetch or a decode failed: nobody waits any more */
} overlap;

static void wake_all(overlap *v) {
    pthread_mutex_lock(&v->mu);
    pthread_cond_broadcast(&v->cv);
    pthread_mutex_unlock(&v->mu);
}

static void object_fetched(void *user, size_t object, int ok) {
    overlap *v = user;
    atomic_store(&v->state[object], ok ? 1 : 2);
    wake_all(v);
}

static void task_fetched(void *user, size_t task, int ok) {
    overlap *v = user;
    atomic_store(&v->task_state[task], ok ? 1 : 2);
    wake_all(v);
}

/* Whether task ti's bytes are in: 0 not yet, 1 in, 2 their fetch failed. */
static int task_fetch_state(const overlap *v, size_t ti, size_t o) {
    const int t = atomic_load(&v->task_state[ti]);
    return t ? t : atomic_load(&v->state[o]);
}

static zgpu_status overlap_task(void *arg, size_t i) {
    overlap *v = arg;
    const size_t ti = v->pieces ? v->pieces[i].task : i, o = v->j->plan->tasks[ti].object;
    if (task_fetch_state(v, ti, o) == 0) {
        pthread_mutex_lock(&v->mu);
        while (task_fetch_state(v, ti, o) == 0 && !atomic_load(&v->stop)) pthread_cond_wait(&v->cv, &v->mu);
        pthread_mutex_unlock(&v->mu);
    }
    piece_job pj = {v->j, v->pieces};
    zgpu_status st = task_fetch_state(v, ti, o) == 1
                         ? (v->pieces ? piece_task(&pj, i) : read_task(v->j, i))
                         : zg_error(ZGPU_ERR_IO, "chunk '%s' was not fetched (see the read's error)",
                                    v->j->plan->objects[o].key);
    if (st != ZGPU_OK) atomic_store(&v->stop, 1);
    if (atomic_fetch_sub(&v->undecoded[v->window_of[o]], 1) == 1 || st != ZGPU_OK) wake_all(v);
    return st;
}

static zgpu_status read_remote(read_job *j, zg_plan *plan, double *fetch_s) {
    zgpu_array *a = j->a;
    if (zg_pool_size(a->ctx->pool) < 2) return read_remote_serial(j, plan, fetch_s);
    const size_t no = plan->n_objects;
    size_t *bounds = malloc((no + 2) * sizeof *bounds); /* window k: objects [bounds[k], bounds[k + 1]) */
    /* a crop of a few blosc chunks: each fetched chunk decoded in pieces by several threads, as a local read's */
    size_t n_pieces = 0;
    read_piece *pieces = split_pieces(j, zg_pool_size(a->ctx->pool), &n_pieces);
    const size_t nt = plan->n_tasks;
    overlap v = {j, pieces, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, calloc(no ? no : 1, sizeof(atomic_int)),
                 calloc(nt ? nt : 1, sizeof(atomic_int)), calloc(no ? no : 1, sizeof(size_t)),
                 calloc(no + 1, sizeof(atomic_size_t)), 0};
    if (!bounds || !v.state || !v.task_state || !v.window_of || !v.undecoded) {
        free(bounds); free(v.state); free(v.task_state); free(v.window_of); free(v.undecoded); free(pieces);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for a remote read of %zu chunks", no);
    }
    size_t nw = 0;
    bounds[0] = 0;
    while (bounds[nw] < no) {
        bounds[nw + 1] = window_end(j, bounds[nw]);
        for (size_t o = bounds[nw]; o < bounds[nw + 1]; o++) {
            v.window_of[o] = nw;
            if (!pieces) atomic_fetch_add(&v.undecoded[nw], plan->objects[o].n_tasks);
        }
        nw++;
    }
    for (size_t p = 0; p < n_pieces; p++) atomic_fetch_add(&v.undecoded[v.window_of[plan->tasks[pieces[p].task].object]], 1);
    j->task_base = 0;
    expect_rows(j, pieces, n_pieces);
    zg_pool_job *job = NULL;
    zgpu_status st = zg_pool_start(a->ctx->pool, pieces ? n_pieces : plan->n_tasks, overlap_task, &v, &job);
    zgpu_status fs = ZGPU_OK;
    char fetch_err[ZG_ERRMSG_MAX];
    size_t released = 0;
    for (size_t w = 0; st == ZGPU_OK && w < nw && !atomic_load(&v.stop); w++) {
        if (w >= 2) { /* window w - 2 decoded before window w is fetched: its bytes go */
            pthread_mutex_lock(&v.mu);
            while (atomic_load(&v.undecoded[w - 2]) && !atomic_load(&v.stop)) pthread_cond_wait(&v.cv, &v.mu);
            pthread_mutex_unlock(&v.mu);
            if (atomic_load(&v.stop)) break;
            zg_plan_release_objects(plan, bounds[w - 2], bounds[w - 1]);
            released = w - 1;
        }
        const double t0 = zg_now();
        const zg_plan_fetch_hooks hooks = {object_fetched, task_fetched, &v};
        fs = zg_plan_fetch_objects(a, plan, bounds[w], bounds[w + 1], part_chain(j), &hooks);
        *fetch_s += zg_now() - t0;
        if (fs != ZGPU_OK) {
            zg_error_save(fetch_err);
            atomic_store(&v.stop, 1);
        }
    }
    /* what was never fetched (a failure stopped the fetching) fails its tasks: none may wait for it */
    for (size_t o = 0; o < no; o++) {
        int pending = 0;
        atomic_compare_exchange_strong(&v.state[o], &pending, 2);
    }
    wake_all(&v);
    if (job) {
        zgpu_status ps = zg_pool_finish(a->ctx->pool, job);
        if (st == ZGPU_OK) st = ps;
    }
    zg_plan_release_objects(plan, released < nw ? bounds[released] : no, no);
    if (fs != ZGPU_OK) { /* the fetch's own error says more than the tasks it left without bytes */
        zg_error_restore(fetch_err);
        st = fs;
    }
    free(bounds); free(v.state); free(v.task_state); free(v.window_of); free(v.undecoded); free(pieces);
    return st;
}

/* Every unit's chunk looked up in the context's cache before anything is resolved or fetched (zg_plan_cache_lookup). */
static zgpu_status cache_lookup(read_job *j, zg_plan *plan, zgpu_read_stats *stats) {
    j->hits = calloc(plan->n_tasks ? plan->n_tasks : 1, sizeof *j->hits);
    j->gens = calloc(plan->n_tasks ? plan->n_tasks : 1, sizeof *j->gens);
    if (!j->hits || !j->gens) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for %zu chunks", plan->n_tasks);
    const zgpu_array *a = j->a;
    const size_t size = (size_t)zg_repr_nbytes(&(a->shard ? zg_sharding_inner_chain(a->shard) : a->chain)->repr);
    zg_plan_cache_lookup(plan, j->cache, a->store->id, size, j->hits, j->gens, &stats->cache_hits, &stats->cache_misses);
    return ZGPU_OK;
}

static void cache_release(read_job *j, const zg_plan *plan) {
    for (size_t i = 0; j->hits && i < plan->n_tasks; i++) zg_chunk_cache_release(j->cache, j->hits[i]);
    free(j->hits);
    free(j->gens);
}

typedef struct unit_rank {
    double work;
    uint32_t task;
} unit_rank;

static int rank_cmp(const void *x, const void *y) {
    const unit_rank *a = x, *b = y;
    if (a->work != b->work) return a->work > b->work ? -1 : 1;
    return a->task < b->task ? -1 : a->task > b->task; /* (a stable order: plan order among equals) */
}

/* A read lends each chunk's decode its share of the threads (zstd frames decode block-parallel: codec/zstd_split.h;
 * gzip and zlib streams in parts: codec/deflate_split.h); blosc chunks are cut into pieces instead (split_pieces).
 * Sets j->par (the threads each unit may use by their number: threads / units) and j->work_total (unit_par). */
static void decode_par(read_job *j, zg_pool *pool, const zgpu_tuning *tune) {
    const zg_plan *plan = j->plan;
    const int threads = tune->split_decode == ZGPU_SWITCH_OFF ? 1 : zg_pool_size(pool);
    size_t units = 0;
    j->work_total = 0;
    j->runs = j->partial == ZG_PARTIAL_PREFIX && zg_chain_decodes_runs(j->chain);
    j->ratio = 0;
    if (j->runs && threads > 1) {
        zgpu_read_stats last;
        last.struct_size = sizeof last;
        zgpu_array_last_read_stats(j->a, &last);
        const int decoded = last.gpu_decoded + last.cpu_decoded; /* (as the route model takes it: device/read.c) */
        if (last.stored_bytes && decoded)
            j->ratio = (double)zg_repr_nbytes(&j->chain->repr) * decoded / (double)last.stored_bytes;
    }
    const int rank_units = threads > 1 && !j->a->store->vt->remote && plan->n_tasks > (size_t)threads &&
                           plan->n_tasks <= UINT32_MAX; /* (a remote read runs its windows in plan order) */
    unit_rank *rank = rank_units ? malloc(plan->n_tasks * sizeof *rank) : NULL;
    size_t ranked = 0;
    for (size_t i = 0; i < plan->n_tasks; i++) {
        const zg_chunk_task *t = &plan->tasks[i];
        if (!t->unit_n || t->decoded_elsewhere || t->state == ZG_TASK_MISSING) continue;
        units++;
        if (threads < 2) continue;
        const double w = unit_work(j, t);
        j->work_total += w;
        if (rank) rank[ranked++] = (unit_rank){w, (uint32_t)i};
    }
    j->par = (zg_decode_par){pool, units ? (int)((size_t)threads / units) : 1};
    if (threads < 2) j->work_total = 0;
    /* more units than threads: the largest first, so that the read does not wait for a large unit a thread took
     * up last (a batch of 8 label patches: 52 units of 260 KiB to 1.3 MiB of a frame's prefix each); the rest
     * (cache hits, missing chunks: no decode) after them */
    if (rank && ranked > (size_t)threads && (j->order = malloc(plan->n_tasks * sizeof *j->order))) {
        qsort(rank, ranked, sizeof *rank, rank_cmp);
        size_t k = 0;
        for (; k < ranked; k++) j->order[k] = rank[k].task;
        for (size_t i = 0; i < plan->n_tasks; i++) {
            const zg_chunk_task *t = &plan->tasks[i];
            if (t->unit_n && (t->decoded_elsewhere || t->state == ZG_TASK_MISSING)) j->order[k++] = (uint32_t)i;
        }
        j->n_order = k;
    }
    free(rank);
}

int zg_host_partial_kind(const zgpu_tuning *tune, const zg_chain *chain) {
    if (tune->partial_decode == ZGPU_SWITCH_OFF) return ZG_PARTIAL_NONE;
    if (zg_chain_reads_spans(chain)) return ZG_PARTIAL_SPANS;
    /* (zstd: since it decodes block by block straight into the chunk, what it skips is saved, 1.2-2x on a crop or
     * patch of the benchmark volumes on the 2-core machine; before, zstd's streaming copy ate the saving) */
    return zg_chain_decodes_ranges(chain) ? ZG_PARTIAL_PREFIX : ZG_PARTIAL_NONE;
}

/* given: the boxes' plan, built and resolved (zg_host_read_regions_planned), taken over; NULL: planned here */
static zgpu_status host_read_once(zgpu_array *a, zg_plan *given, size_t n, const uint64_t *starts,
                                  const uint64_t *counts, void *const *outs, const int64_t *out_strides,
                                  const zgpu_read_options *opts, zg_read_progress *progress) {
    zgpu_read_stats stats;
    memset(&stats, 0, sizeof stats);
    double t_begin = zg_now();
    read_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.outs = outs;
    j.progress = progress;
    int64_t *strides = NULL;
    zgpu_status st = zg_read_xform(a, opts, &j.x);
    if (st == ZGPU_OK) st = zg_resolve_region_strides(a, j.x.out_itemsize, n, counts, out_strides, &strides);
    if (st != ZGPU_OK) {
        if (given) zg_plan_free(given);
        return st;
    }
    j.strides = strides;
    zg_plan plan;
    if (given) plan = *given;
    else st = zg_plan_build_regions(a, n, starts, counts, &plan);
    if (st != ZGPU_OK) {
        free(strides);
        return st;
    }
    const int remote = a->store->vt->remote;
    if (a->ctx->tuning.trace) zg_read_trace_start(&j.trace, 1024, t_begin);
    j.cache = a->ctx->cache;
    if (j.cache) st = cache_lookup(&j, &plan, &stats);
    /* shard indexes (a remote store fetches the tasks' bytes window by window, read_remote) */
    if (st == ZGPU_OK && remote) st = zg_plan_resolve_remote(a, &plan, ZG_FETCH_NONE);
    else if (st == ZGPU_OK && a->shard && !given) st = zg_plan_resolve(a, &plan);
    stats.plan_s = zg_now() - t_begin;
    j.plan = &plan;
    j.chain = a->shard ? zg_sharding_inner_chain(a->shard) : a->chain;
    j.partial = zg_host_partial_kind(&a->ctx->tuning, j.chain);
    zg_c_strides(plan.ndim, plan.chunk, a->meta.dtype.size, j.chunk_strides);
    decode_par(&j, a->ctx->pool, &a->ctx->tuning);
    if (st == ZGPU_OK && remote) st = read_remote(&j, &plan, &stats.io_s);
    else if (st == ZGPU_OK) {
        size_t n_pieces = 0;
        read_piece *pieces = split_pieces(&j, zg_pool_size(a->ctx->pool), &n_pieces);
        expect_rows(&j, pieces, n_pieces);
        if (pieces) {
            piece_job pj = {&j, pieces};
            st = zg_pool_run(a->ctx->pool, n_pieces, piece_task, &pj);
            free(pieces);
        } else if (j.order) {
            st = zg_pool_run(a->ctx->pool, j.n_order, ordered_read_task, &j);
        } else {
            st = zg_pool_run(a->ctx->pool, plan.n_tasks, read_task, &j);
        }
    }
    if (st == ZGPU_OK) {
        int threads = zg_pool_size(a->ctx->pool);
        stats.total_s = zg_now() - t_begin;
        stats.io_s += (double)atomic_load(&j.io_ns) * 1e-9 / threads;
        stats.decode_s = (double)atomic_load(&j.decode_ns) * 1e-9 / threads;
        stats.stored_bytes = atomic_load(&j.stored);
        for (size_t r = 0; r < n; r++) {
            uint64_t b = a->meta.dtype.size;
            for (int d = 0; d < plan.ndim; d++) b *= counts[r * (size_t)plan.ndim + (size_t)d];
            stats.decoded_bytes += b;
        }
        for (size_t i = 0; i < plan.n_tasks; i++) stats.chunks += plan.tasks[i].unit_n != 0;
        stats.waves = 1;
        stats.cpu_decoded = stats.chunks - stats.cache_hits;
        zg_array_set_stats(a, &stats);
    }
    zg_read_trace_finish(&j.trace, a->path, zg_pool_size(a->ctx->pool), zg_now() - t_begin);
    cache_release(&j, &plan);
    zg_plan_free(&plan);
    free(strides);
    free(j.order);
    return st;
}

/* A read that failed because a shard was replaced meanwhile (a remote one on the server, a local one read by
 * reopening it) runs once more, from a fresh index (plan/plan.h zg_plan_shard_changes). */
zgpu_status zg_host_read_regions(zgpu_array *a, size_t n, const uint64_t *starts, const uint64_t *counts,
                                 void *const *outs, const int64_t *out_strides, const zgpu_read_options *opts,
                                 zg_read_progress *progress) {
    const unsigned changes = zg_plan_shard_changes(a);
    zgpu_status st = host_read_once(a, NULL, n, starts, counts, outs, out_strides, opts, progress);
    if (st != ZGPU_OK && zg_plan_shard_changes(a) != changes)
        st = host_read_once(a, NULL, n, starts, counts, outs, out_strides, opts, progress);
    return st;
}

zgpu_status zg_host_read_regions_planned(zgpu_array *a, zg_plan *plan, size_t n, const uint64_t *starts,
                                         const uint64_t *counts, void *const *outs, const int64_t *out_strides,
                                         const zgpu_read_options *opts, zg_read_progress *progress) {
    if (!a->shard || a->store->vt->remote || a->ctx->cache) { /* (not what the plan was made for: plan afresh) */
        zg_plan_free(plan);
        return zg_host_read_regions(a, n, starts, counts, outs, out_strides, opts, progress);
    }
    const unsigned changes = zg_plan_shard_changes(a);
    zgpu_status st = host_read_once(a, plan, n, starts, counts, outs, out_strides, opts, progress);
    if (st != ZGPU_OK && zg_plan_shard_changes(a) != changes)
        st = host_read_once(a, NULL, n, starts, counts, outs, out_strides, opts, progress);
    return st;
}
