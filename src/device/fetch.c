/* Phase A: a wave's stored bytes read in pieces on the pool, into pinned staging (or by GDS onto the
 * device), parsed for the GPU as each task completes, and copied to the device in segments as they fill;
 * chunks the GPU does not take decode on the host. */
#include "cache/chunk_cache.h"
#include "device/job.h"

static zgpu_status cpu_decode(wave_io *io, dtask *t) {
    const job *j = io->j;
    double t0 = zg_now();
    uint8_t *out = io->bs->h + t->cpu_off;
    const size_t n = (size_t)zg_repr_nbytes(&j->chain->repr);
    if (t->hit) { /* the cache's copy */
        memcpy(out, t->hit->data, n);
        atomic_fetch_add(&io->cpu_ns, (uint64_t)((zg_now() - t0) * 1e9));
        return ZGPU_OK;
    }
    zg_thread_scratch *ts = zg_thread_scratch_get();
    if (!ts) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for thread scratch");
    zgpu_status s = zg_chain_decode(j->chain, io->bs->h + t->h_off, (size_t)t->nbytes, out, &ts->codec);
    atomic_fetch_add(&io->cpu_ns, (uint64_t)((zg_now() - t0) * 1e9));
    if (s != ZGPU_OK) {
        char key[300];
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", j->a->path, dev_task_key(j, t, key, sizeof key));
    } else if (j->cache) {
        const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
        zg_chunk_cache_put(j->cache, j->a->store->id, j->plan->objects[pt->object].key, pt->inner, t->gen, out, n);
    }
    return s;
}

/* Phase A runs on pool threads, whose current device is CUDA's default, not necessarily the read's: each task makes
 * the read's device current before its CUDA calls (segment copies on the read's stream, GDS reads into its memory). */
static zgpu_status on_read_device(const job *j) {
    int cur = -1;
    cudaError_t e = cudaGetDevice(&cur);
    if (e == cudaSuccess && cur != j->st->device) e = cudaSetDevice(j->st->device);
    if (e != cudaSuccess)
        return zg_error(ZGPU_ERR_CUDA, "a read thread could not make device %d current: %s", j->st->device,
                        cudaGetErrorString(e));
    return ZGPU_OK;
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
void dev_parse_or_fallback(job *j, dtask *t, bufset *b) {
    if (t->kind == T_GPU && dev_parse_task(j, t, b->h + t->h_off)) {
        free(t->streams);
        t->streams = NULL;
        t->n_streams = 0;
        dev_plan_drop(t);
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
    if (!dev_task_reads(t)) return 0;
    /* GDS registers a file per read; a store that cannot keep an object open would mix versions of it */
    if (j->use_gds || t->nbytes <= READ_PIECE || (!ob->file && !j->a->store->vt->open_file)) return 1;
    return (uint32_t)((t->nbytes + READ_PIECE - 1) / READ_PIECE);
}

/* The wave's pieces, in task order. */
zgpu_status dev_make_pieces(wave_io *io) {
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
void dev_free_pieces(wave_io *io) {
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
zgpu_status dev_phase_a_piece(void *arg, size_t p) {
    wave_io *io = arg;
    job *j = io->j;
    const read_piece pc = io->pieces[p];
    dtask *t = &j->t[io->first + pc.task];
    task_pieces *tp = &io->task_pieces[pc.task];
    const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
    const zg_plan_object *ob = &j->plan->objects[pt->object];
    double t0 = zg_now();
    zg_store *s = j->a->store;
    zgpu_status e = on_read_device(j);
    if (e == ZGPU_OK && j->use_gds) {
        char path[ZG_PATH_MAX];
        e = zg_store_fs_path(s, ob->key, path);
        if (e == ZGPU_OK) e = zg_gds_read(path, pt->offset, t->nbytes, io->bs->d + t->h_off);
    } else if (e == ZGPU_OK) {
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
    if (e != ZGPU_OK) return dev_task_error(j, t, "(read)", e);
    const double t1 = zg_now();
    atomic_fetch_add(&io->io_ns, (uint64_t)((t1 - t0) * 1e9));
    if (atomic_fetch_sub(&tp->left, 1) != 1) return ZGPU_OK;
    if (tp->file) { /* every piece is read (the others' reads come before their decrements) */
        s->vt->close_file(tp->file);
        tp->file = NULL;
    }
    if (!io->seg) return ZGPU_OK;
    if (j->gpu_decode) {
        dev_parse_or_fallback(j, t, io->bs);
        atomic_fetch_add(&io->parse_ns, (uint64_t)((zg_now() - t1) * 1e9));
    }
    return segment_done(io, pc.task);
}

/* Phase A on a remote store (j->remote_waves): the wave's inner chunks in one batch of requests, straight into
 * pinned staging, while the GPU decodes the wave before; then each task's parse and segment copy, as the last
 * piece of a task does. One pool task: the batch keeps its requests in flight by itself. */
zgpu_status dev_phase_a_remote(void *arg, size_t unused) {
    (void)unused;
    wave_io *io = arg;
    job *j = io->j;
    size_t *tk = malloc((io->count ? io->count : 1) * sizeof *tk);
    uint8_t **outs = malloc((io->count ? io->count : 1) * sizeof *outs);
    zgpu_status e = tk && outs ? on_read_device(j) : zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for a wave's requests");
    size_t n = 0;
    for (size_t i = 0; e == ZGPU_OK && i < io->count; i++) {
        const dtask *t = &j->t[io->first + i];
        if (!dev_task_reads(t)) continue;
        tk[n] = t->plan_i;
        outs[n++] = io->bs->h + t->h_off;
    }
    const double t0 = zg_now();
    if (e == ZGPU_OK) e = zg_plan_fetch_tasks(j->a, j->plan, tk, outs, n);
    free(tk);
    free(outs);
    if (e != ZGPU_OK) return e;
    const double t1 = zg_now();
    atomic_fetch_add(&io->io_ns, (uint64_t)((t1 - t0) * 1e9));
    for (size_t i = 0; io->seg && i < io->count; i++) {
        dtask *t = &j->t[io->first + i];
        if (!dev_task_reads(t)) continue;
        if (j->gpu_decode) dev_parse_or_fallback(j, t, io->bs);
        ZG_FORWARD(segment_done(io, i));
    }
    atomic_fetch_add(&io->parse_ns, (uint64_t)((zg_now() - t1) * 1e9));
    return ZGPU_OK;
}

zgpu_status dev_phase_parse_task(void *arg, size_t i) {
    wave_io *io = arg;
    dev_parse_or_fallback(io->j, &io->j->t[io->first + i], io->bs);
    return ZGPU_OK;
}

zgpu_status dev_phase_cpu_task(void *arg, size_t i) {
    wave_io *io = arg;
    dtask *t = &io->j->t[io->first + i];
    if (t->kind != T_CPU) return ZGPU_OK;
    ZG_FORWARD(cpu_decode(io, t));
    return io->seg ? segment_done(io, i) : ZGPU_OK;
}

/* Cuts a region of the wave's staging into up to 32 segments at chunk boundaries: the stored bytes
 * [0, end) (cpu = 0), or the host-decoded chunks of CPU tasks up to `end` (cpu = 1). The last segment's copy
 * is what the wave's decode waits for after its last read (8 segments of a 280 MB field wave: 1.4 ms). */
zgpu_status dev_make_segments(wave_io *io, uint64_t end, int cpu) {
    enum { MAX_SEG = 32 };
    segment *seg = io->seg = calloc(MAX_SEG, sizeof *io->seg);
    io->task_seg = calloc(io->count ? io->count : 1, sizeof *io->task_seg);
    ZG_RETURN_IF(!io->seg || !io->task_seg, ZGPU_ERR_NO_MEMORY, "out of host memory for copy segments");
    const uint64_t target = end / MAX_SEG + 1;
    size_t n = 0;
    int left = 0;
    for (size_t i = io->first; i < io->first + io->count; i++) {
        const dtask *t = &io->j->t[i];
        if (cpu ? t->kind != T_CPU : !dev_task_reads(t)) continue;
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

void dev_free_segments(wave_io *io) {
    free(io->seg);
    free(io->task_seg);
    io->seg = NULL;
    io->task_seg = NULL;
}
