/* Selection box ∩ chunk grid -> tasks; shard index resolution on local stores; strided box copies. What remote
 * stores fetch for a plan, and when, is fetch_remote.c. */
#include "plan/plan.h"
#include "plan/plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/chunk_cache.h"
#include "codec/sharding.h"
#include "convert/convert.h"
#include "common/status.h"
#include "common/tls.h"

/* ---- task arrays ----
 * A task holds ZGPU_MAX_DIMS coordinates four times (1 KiB), so a batch's task array is large (64 patches of the
 * sharded label volume, 576 tasks: 600 KiB). Taken fresh from the system for every read, its page faults cost more
 * than the plan's work (a plan of 64 patches 777 us on the 2-core machine, most of it in the kernel): each thread
 * keeps the two largest arrays it freed, of up to TASKS_SPARE_MAX bytes each, for its next plans. */
#define TASKS_SPARE_MAX ((size_t)1 << 20) /* (a thread keeps at most 2 MiB: a batch of 64 patches takes 0.6) */

typedef struct tasks_head {
    size_t cap; /* tasks the array holds */
    size_t pad; /* (the tasks stay 16-byte aligned) */
} tasks_head;

typedef struct tasks_spare {
    tasks_head *block[2]; /* NULL: none kept (a batch's plan holds two: its boxes' tasks and the merged ones) */
} tasks_spare;

static _Thread_local void *tl_spare;

static void spare_free(void *p) {
    tasks_spare *sp = p;
    free(sp->block[0]);
    free(sp->block[1]);
    free(sp);
}

/* n tasks (n >= 1), zeroed where `zero`; NULL when out of memory. */
static zg_chunk_task *tasks_alloc(size_t n, int zero) {
    if (n > (SIZE_MAX - sizeof(tasks_head)) / sizeof(zg_chunk_task)) return NULL;
    tasks_spare *sp = zg_tls_get(&tl_spare, sizeof *sp, spare_free);
    tasks_head *h = NULL;
    for (int i = 0; sp && i < 2 && !h; i++) {
        tasks_head *b = sp->block[i];
        if (b && b->cap >= n && n >= b->cap / 2) { /* (not a batch's array for one box's tasks) */
            h = b;
            sp->block[i] = NULL;
        }
    }
    if (h) {
        if (zero) memset(h + 1, 0, n * sizeof(zg_chunk_task));
    } else {
        h = zero ? calloc(1, sizeof *h + n * sizeof(zg_chunk_task)) : malloc(sizeof *h + n * sizeof(zg_chunk_task));
        if (!h) return NULL;
        h->cap = n;
    }
    return (zg_chunk_task *)(h + 1);
}

static void tasks_release(zg_chunk_task *tasks) {
    if (!tasks) return;
    tasks_head *h = (tasks_head *)tasks - 1;
    tasks_spare *sp = h->cap * sizeof *tasks <= TASKS_SPARE_MAX ? zg_tls_get(&tl_spare, sizeof *sp, spare_free) : NULL;
    if (sp) { /* the two largest kept */
        const int i = !sp->block[0] ? 0 : !sp->block[1] ? 1 : sp->block[0]->cap < sp->block[1]->cap ? 0 : 1;
        if (!sp->block[i] || sp->block[i]->cap < h->cap) {
            free(sp->block[i]);
            sp->block[i] = h;
            return;
        }
    }
    free(h);
}

void zg_plan_free(zg_plan *plan) {
    for (size_t i = 0; i < plan->n_objects; i++) {
        free(plan->objects[i].key);
        free(plan->objects[i].etag);
        free(plan->objects[i].spans);
        zg_buf_free(&plan->objects[i].fetched);
        if (plan->objects[i].file) plan->store->vt->close_file(plan->objects[i].file);
    }
    free(plan->objects);
    tasks_release(plan->tasks);
    memset(plan, 0, sizeof *plan);
}

/* Each object's decoded_elsewhere from its units'. */
static void mark_objects(zg_plan *plan) {
    for (size_t o = 0; o < plan->n_objects; o++) {
        zg_plan_object *ob = &plan->objects[o];
        int all = ob->n_tasks > 0;
        for (size_t k = 0; k < ob->n_tasks && all; k++) {
            const zg_chunk_task *t = &plan->tasks[ob->first_task + k];
            all = !t->unit_n || t->decoded_elsewhere;
        }
        ob->decoded_elsewhere = all;
    }
}

void zg_plan_cache_lookup(zg_plan *plan, struct zg_chunk_cache *c, const char *store_id, size_t size,
                          struct zg_cache_ref **hits, uint64_t *gens, int *n_hits, int *n_misses) {
    for (size_t i = 0; i < plan->n_tasks; i++) {
        zg_chunk_task *t = &plan->tasks[i];
        if (!t->unit_n || t->decoded_elsewhere) continue; /* (a hit in a cache looked up before) */
        hits[i] = zg_chunk_cache_get_sized(c, store_id, plan->objects[t->object].key, t->inner, size, &gens[i]);
        t->decoded_elsewhere = hits[i] != NULL;
        if (hits[i]) ++*n_hits;
        else ++*n_misses;
    }
    mark_objects(plan);
}

/* Odometer increment over [lo, hi) per axis; returns 0 when done. */
static int next_coords(int ndim, uint64_t *c, const uint64_t *lo, const uint64_t *hi) {
    for (int d = ndim - 1; d >= 0; d--) {
        if (++c[d] < hi[d]) return 1;
        c[d] = lo[d];
    }
    return 0;
}

static zgpu_status check_box(const zgpu_array *a, const uint64_t *start, const uint64_t *count) {
    const zg_array_meta *m = &a->meta;
    for (int d = 0; d < m->ndim; d++) {
        if (start[d] > m->shape[d] || count[d] > m->shape[d] - start[d])
            return zg_error(ZGPU_ERR_OUT_OF_RANGE,
                            ZG_ARRAY_WHERE_FMT ": selection [%llu, %llu) on axis %d is outside the shape %llu", a->path,
                            (unsigned long long)start[d], (unsigned long long)(start[d] + count[d]), d,
                            (unsigned long long)m->shape[d]);
    }
    return ZGPU_OK;
}

/* Every read and write of fixed-size elements, host or device, is planned here: the one place to refuse variable-
 * length ones, which have no strided form (api/vlen.c reads and writes them). */
static zgpu_status check_fixed_size(const zgpu_array *a) {
    if (!zg_dtype_is_vlen(&a->meta.dtype)) return ZGPU_OK;
    return zg_error(ZGPU_ERR_UNSUPPORTED,
                    ZG_ARRAY_WHERE_FMT ": data type %s has variable-length elements, which cannot live in a strided "
                    "host or device array: read and write them with zgpu_array_read_vlen / zgpu_array_write_vlen",
                    a->path, a->meta.dtype.name);
}

/* The store key of the object at grid coordinates c, malloc'd (NULL without memory). */
static char *chunk_key(const zg_array_meta *m, const uint64_t *c) {
    char key[1024];
    zg_meta_chunk_key(m, c, key, sizeof key);
    return strdup(key);
}

/* The tasks a box can have at most: the read chunks it meets. */
static uint64_t box_tasks_max(const zgpu_array *a, const uint64_t *start, const uint64_t *count, const uint64_t *unit) {
    uint64_t n = 1;
    for (int d = 0; d < a->meta.ndim; d++) {
        if (count[d] == 0) return 0;
        const uint64_t k = zg_ceil_div(start[d] + count[d], unit[d]) - start[d] / unit[d];
        if (k && n > UINT64_MAX / k) return UINT64_MAX;
        n *= k;
    }
    return n;
}

/* zg_plan_build_units, the objects' keys left NULL where !keys (a box of a batch: the merged plan names only its
 * distinct objects, and formatting every box's keys was most of a batch's plan: 64 patches, 256 keys for 16).
 * tasks_at: room for the box's tasks (box_tasks_max), not the plan's (a batch's boxes' tasks in one array); NULL:
 * allocated for the plan. */
static zgpu_status build_units(const zgpu_array *a, const uint64_t *start, const uint64_t *count, int whole_objects,
                               int keys, zg_chunk_task *tasks_at, zg_plan *plan) {
    memset(plan, 0, sizeof *plan);
    ZG_FORWARD(check_fixed_size(a));
    ZG_FORWARD(check_box(a, start, count));
    const zg_array_meta *m = &a->meta;
    const int nd = m->ndim;
    plan->ndim = nd;
    plan->n_regions = 1;
    const uint64_t *unit = whole_objects ? m->chunk_shape : a->read_chunk;
    uint64_t per_obj[ZGPU_MAX_DIMS]; /* read chunks per object along each axis */
    uint64_t olo[ZGPU_MAX_DIMS], ohi[ZGPU_MAX_DIMS];
    uint64_t n_obj = 1;
    for (int d = 0; d < nd; d++) {
        plan->start[d] = start[d];
        plan->count[d] = count[d];
        plan->chunk[d] = unit[d];
        per_obj[d] = m->chunk_shape[d] / unit[d];
        if (count[d] == 0) return ZGPU_OK; /* empty selection: nothing to do */
        olo[d] = start[d] / m->chunk_shape[d];
        ohi[d] = zg_ceil_div(start[d] + count[d], m->chunk_shape[d]);
        n_obj *= ohi[d] - olo[d];
    }
    const uint64_t n_task_max = box_tasks_max(a, start, count, unit);
    if (n_obj > SIZE_MAX / sizeof(zg_plan_object) || n_task_max > SIZE_MAX / sizeof(zg_chunk_task))
        return zg_error(ZGPU_ERR_NO_MEMORY, ZG_ARRAY_WHERE_FMT ": selection touches too many chunks", a->path);
    plan->objects = calloc((size_t)n_obj, sizeof *plan->objects);
    plan->tasks = tasks_at ? tasks_at : tasks_alloc((size_t)n_task_max, 1);
    if (!plan->objects || !plan->tasks) {
        if (tasks_at) plan->tasks = NULL; /* (the caller's) */
        zg_plan_free(plan);
        return zg_error(ZGPU_ERR_NO_MEMORY, ZG_ARRAY_WHERE_FMT ": out of memory planning %llu chunks", a->path,
                        (unsigned long long)n_task_max);
    }
    uint64_t oc[ZGPU_MAX_DIMS];
    memcpy(oc, olo, sizeof(uint64_t) * (size_t)nd);
    do {
        zg_plan_object *ob = &plan->objects[plan->n_objects];
        memcpy(ob->coords, oc, sizeof(uint64_t) * (size_t)nd);
        if (keys && !(ob->key = chunk_key(m, oc))) {
            zg_plan_free(plan);
            return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        }
        ob->first_task = plan->n_tasks;
        /* read chunks of this object that meet the box */
        uint64_t clo[ZGPU_MAX_DIMS], chi[ZGPU_MAX_DIMS], cc[ZGPU_MAX_DIMS];
        for (int d = 0; d < nd; d++) {
            uint64_t first = oc[d] * per_obj[d], last = first + per_obj[d];
            uint64_t blo = start[d] / unit[d], bhi = zg_ceil_div(start[d] + count[d], unit[d]);
            clo[d] = first > blo ? first : blo;
            chi[d] = last < bhi ? last : bhi;
            cc[d] = clo[d];
        }
        do {
            zg_chunk_task *t = &plan->tasks[plan->n_tasks++];
            if (tasks_at) memset(t, 0, sizeof *t);
            t->object = (uint32_t)plan->n_objects;
            uint64_t inner = 0;
            t->covers_chunk = 1;
            for (int d = 0; d < nd; d++) {
                uint64_t c0 = cc[d] * unit[d], c1 = c0 + unit[d];
                uint64_t s0 = start[d] > c0 ? start[d] : c0;
                uint64_t s1 = start[d] + count[d] < c1 ? start[d] + count[d] : c1;
                t->coords[d] = cc[d];
                t->in_chunk[d] = s0 - c0;
                t->in_box[d] = s0 - start[d];
                t->count[d] = s1 - s0;
                if (t->count[d] != unit[d]) t->covers_chunk = 0;
                inner = inner * per_obj[d] + (cc[d] - oc[d] * per_obj[d]);
            }
            t->inner = (uint32_t)inner;
            t->unit_n = 1;
        } while (next_coords(nd, cc, clo, chi));
        ob->n_tasks = plan->n_tasks - ob->first_task;
        plan->n_objects++;
    } while (next_coords(nd, oc, olo, ohi));
    return ZGPU_OK;
}

zgpu_status zg_plan_build_units(const zgpu_array *a, const uint64_t *start, const uint64_t *count, int whole_objects,
                                zg_plan *plan) {
    return build_units(a, start, count, whole_objects, 1, NULL, plan);
}

zgpu_status zg_plan_build(const zgpu_array *a, const uint64_t *start, const uint64_t *count, zg_plan *plan) {
    return build_units(a, start, count, 0, 1, NULL, plan);
}

/* A task of one box's plan while the boxes are merged. */
typedef struct region_task {
    const zg_plan *part;
    const zg_chunk_task *t;
    uint32_t region;
    int ndim;
} region_task;

static int same_object_coords(const region_task *a, const region_task *b) {
    return !memcmp(a->part->objects[a->t->object].coords, b->part->objects[b->t->object].coords,
                   sizeof(uint64_t) * (size_t)a->ndim);
}

/* Object grid coordinates, then inner chunk, then region: a stored object's tasks adjacent, a chunk's too. */
static int region_task_cmp(const void *x, const void *y) {
    const region_task *a = x, *b = y;
    const uint64_t *ca = a->part->objects[a->t->object].coords, *cb = b->part->objects[b->t->object].coords;
    for (int d = 0; d < a->ndim; d++)
        if (ca[d] != cb[d]) return ca[d] < cb[d] ? -1 : 1;
    if (a->t->inner != b->t->inner) return a->t->inner < b->t->inner ? -1 : 1;
    return (a->region > b->region) - (a->region < b->region);
}

zgpu_status zg_plan_build_regions(const zgpu_array *a, size_t n, const uint64_t *starts, const uint64_t *counts,
                                  zg_plan *plan) {
    memset(plan, 0, sizeof *plan);
    const int nd = a->meta.ndim;
    ZG_FORWARD(check_fixed_size(a));
    if (n == 1) return zg_plan_build(a, starts, counts, plan);
    plan->ndim = nd;
    plan->n_regions = n;
    if (n == 0) return ZGPU_OK;
    if (n > UINT32_MAX) return zg_error(ZGPU_ERR_INVALID_ARGUMENT, ZG_ARRAY_WHERE_FMT ": %zu regions", a->path, n);
    for (int d = 0; d < nd; d++) {
        plan->start[d] = starts[d];
        plan->count[d] = counts[d];
        plan->chunk[d] = a->read_chunk[d];
    }
    /* the boxes' tasks in one array (a fresh one for each box cost page faults: tasks_alloc) */
    uint64_t room = 0;
    for (size_t r = 0; r < n; r++) {
        const uint64_t *b0 = nd ? starts + r * (size_t)nd : starts, *bn = nd ? counts + r * (size_t)nd : counts;
        zgpu_status bs = check_box(a, b0, bn);
        if (bs != ZGPU_OK) {
            zg_error_prefix("region %zu: ", r);
            return bs;
        }
        const uint64_t k = box_tasks_max(a, b0, bn, a->read_chunk);
        room = k > UINT64_MAX - room ? UINT64_MAX : room + k;
    }
    if (room > SIZE_MAX / sizeof(zg_chunk_task))
        return zg_error(ZGPU_ERR_NO_MEMORY, ZG_ARRAY_WHERE_FMT ": %zu selections touch too many chunks", a->path, n);
    zg_plan *parts = calloc(n, sizeof *parts);
    zg_chunk_task *box_tasks = parts ? tasks_alloc(room ? (size_t)room : 1, 0) : NULL;
    if (!parts || !box_tasks) {
        free(parts);
        tasks_release(box_tasks);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory planning %zu regions", n);
    }
    zgpu_status st = ZGPU_OK;
    size_t total = 0;
    for (size_t r = 0; r < n && st == ZGPU_OK; r++) {
        st = build_units(a, nd ? starts + r * (size_t)nd : starts, nd ? counts + r * (size_t)nd : counts, 0, 0,
                         box_tasks + total, &parts[r]);
        if (st != ZGPU_OK) zg_error_prefix("region %zu: ", r);
        else total += parts[r].n_tasks;
    }
    region_task *rt = st == ZGPU_OK ? malloc((total ? total : 1) * sizeof *rt) : NULL;
    if (st == ZGPU_OK && !rt) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory planning %zu regions", n);
    size_t n_objects = 0; /* (distinct: the tasks sorted) */
    if (st == ZGPU_OK) {
        size_t k = 0;
        for (size_t r = 0; r < n; r++)
            for (size_t i = 0; i < parts[r].n_tasks; i++)
                rt[k++] = (region_task){&parts[r], &parts[r].tasks[i], (uint32_t)r, nd};
        qsort(rt, total, sizeof *rt, region_task_cmp);
        for (k = 0; k < total; k++) n_objects += k == 0 || !same_object_coords(&rt[k], &rt[k - 1]);
    }
    /* (every task is copied whole below: the array needs no zeroing) */
    if (st == ZGPU_OK && (!(plan->tasks = tasks_alloc(total ? total : 1, 0)) ||
                          !(plan->objects = calloc(n_objects ? n_objects : 1, sizeof *plan->objects))))
        st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory planning %zu regions", n);
    zg_chunk_task *leader = NULL;
    for (size_t k = 0; st == ZGPU_OK && k < total; k++) {
        const zg_plan_object *po = &rt[k].part->objects[rt[k].t->object];
        const int same_object = k > 0 && same_object_coords(&rt[k], &rt[k - 1]);
        if (!same_object) {
            zg_plan_object *ob = &plan->objects[plan->n_objects++];
            memcpy(ob->coords, po->coords, sizeof ob->coords);
            ob->first_task = plan->n_tasks;
            if (!(ob->key = chunk_key(&a->meta, po->coords))) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        }
        zg_plan_object *ob = &plan->objects[plan->n_objects - 1];
        zg_chunk_task *t = &plan->tasks[plan->n_tasks++];
        *t = *rt[k].t;
        t->object = (uint32_t)(plan->n_objects - 1);
        t->region = rt[k].region;
        if (same_object && leader && leader->inner == t->inner) {
            t->unit_n = 0;
            leader->unit_n++;
        } else {
            t->unit_n = 1;
            leader = t;
        }
        ob->n_tasks++;
    }
    for (size_t r = 0; r < n; r++) {
        parts[r].tasks = NULL; /* (in box_tasks) */
        zg_plan_free(&parts[r]);
    }
    free(parts);
    tasks_release(box_tasks);
    free(rt);
    if (st != ZGPU_OK) zg_plan_free(plan);
    return st;
}

typedef struct {
    zgpu_array *a;
    zg_plan *plan;
} resolve_job;

static zgpu_status resolve_object(void *arg, size_t i) {
    resolve_job *job = arg;
    zgpu_array *a = job->a;
    zg_plan *plan = job->plan;
    zg_plan_object *ob = &plan->objects[i];
    zg_chunk_task *tasks = plan->tasks + ob->first_task;
    zg_store *s = a->store;
    int found = 0;
    uint64_t size = 0;
    if (ob->decoded_elsewhere) return ZGPU_OK; /* (the executor has every chunk of it decoded) */
    /* a shard stays open for its inner chunks: one lookup, and one version of it for its index and its chunks even
     * if a writer replaces it meanwhile (a lone inner chunk too: by key, its bytes came from whatever file held the
     * key by then, at the offsets of the index read before). Past the store's share of the process's descriptors
     * (zg_fd_kept_cap) a shard is kept without one: its ranges reopen it, checked to be the same file. */
    if (a->shard && s->vt->open_file)
        ZG_FORWARD(s->vt->open_file(s, ob->key, &ob->file, &size, &found));
    else
        ZG_FORWARD(s->vt->size(s, ob->key, &size, &found));
    ob->found = found;
    ob->size = size;
    if (!found) {
        for (size_t k = 0; k < ob->n_tasks; k++) tasks[k].state = ZG_TASK_MISSING;
        return ZGPU_OK;
    }
    if (!a->shard) {
        for (size_t k = 0; k < ob->n_tasks; k++) {
            tasks[k].state = ZG_TASK_PRESENT;
            tasks[k].offset = 0;
            tasks[k].nbytes = size;
        }
        return ZGPU_OK;
    }
    uint64_t index_n = zg_sharding_index_nbytes(a->shard);
    uint64_t n_inner = zg_sharding_n_inner(a->shard);
    if (size < index_n)
        return zg_error(ZGPU_ERR_CORRUPT_DATA, ZG_ARRAY_WHERE_FMT ", shard '%s', codec 'sharding_indexed': "
                        "the shard has %llu bytes, less than its %llu-byte index", a->path, ob->key,
                        (unsigned long long)size, (unsigned long long)index_n);
    uint64_t *offsets = malloc((size_t)(2 * n_inner) * sizeof(uint64_t));
    uint8_t *raw = malloc(index_n ? (size_t)index_n : 1);
    if (!offsets || !raw) {
        free(offsets);
        free(raw);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory reading a shard index");
    }
    uint64_t at = zg_sharding_index_at_end(a->shard) ? size - index_n : 0;
    zgpu_status st = ZGPU_OK;
    if (index_n) { /* (none to read where the index is fixed: a TIFF page's) */
        st = zg_plan_read(s, ob, at, index_n, raw, &found);
        if (st == ZGPU_OK && !found) st = zg_error(ZGPU_ERR_IO, "shard vanished while reading");
    }
    if (st == ZGPU_OK) st = zg_plan_tasks_from_index(a, plan, ob, raw, offsets);
    else zg_error_prefix(ZG_ARRAY_WHERE_FMT ", shard '%s': ", a->path, ob->key);
    free(offsets);
    free(raw);
    return st;
}

void zg_plan_unit_range(const zg_plan *plan, const zg_chunk_task *t, uint32_t n, size_t itemsize,
                        const int64_t *chunk_strides, size_t *lo, size_t *hi) {
    size_t a = SIZE_MAX, b = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t first = 0, last = 0;
        int empty = 0;
        for (int d = 0; d < plan->ndim; d++) {
            empty |= t[k].count[d] == 0;
            first += t[k].in_chunk[d] * (uint64_t)chunk_strides[d];
            last += (t[k].in_chunk[d] + t[k].count[d] - 1) * (uint64_t)chunk_strides[d];
        }
        if (empty) continue;
        if (first < a) a = (size_t)first;
        if (last + itemsize > b) b = (size_t)last + itemsize;
    }
    *lo = a == SIZE_MAX ? 0 : a;
    *hi = b;
}

uint64_t zg_plan_unit_bytes(const zg_plan *plan, const zg_chunk_task *t, uint32_t n, size_t itemsize) {
    uint64_t bytes = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t b = itemsize;
        for (int d = 0; d < plan->ndim; d++) b *= t[k].count[d];
        bytes += b;
    }
    return bytes;
}

const uint8_t *zg_plan_bytes(const zg_plan_object *ob, uint64_t offset, uint64_t length) {
    for (size_t i = 0; i < ob->n_spans; i++) {
        const zg_plan_span *sp = &ob->spans[i];
        if (offset >= sp->offset && length <= sp->length && offset - sp->offset <= sp->length - length)
            return sp->data + (offset - sp->offset);
    }
    return NULL;
}

zgpu_status zg_plan_read(zg_store *s, const zg_plan_object *ob, uint64_t offset, uint64_t length, uint8_t *out,
                         int *found) {
    const uint8_t *mem = zg_plan_bytes(ob, offset, length);
    if (mem) {
        memcpy(out, mem, (size_t)length);
        *found = 1;
        return ZGPU_OK;
    }
    if (!ob->file) return s->vt->get_range(s, ob->key, offset, length, 0, out, found);
    *found = 1;
    return s->vt->read_file(ob->file, offset, length, out);
}

/* A shard's tasks from its decoded index (offsets and lengths of its n_inner inner chunks). */
void zg_plan_apply_index(zg_plan *plan, zg_plan_object *ob, const uint64_t *offsets, const uint64_t *lengths) {
    zg_chunk_task *tasks = plan->tasks + ob->first_task;
    for (size_t k = 0; k < ob->n_tasks; k++) {
        zg_chunk_task *t = &tasks[k];
        if (offsets[t->inner] == ZG_SHARD_EMPTY && lengths[t->inner] == ZG_SHARD_EMPTY) {
            t->state = ZG_TASK_MISSING;
        } else {
            t->state = ZG_TASK_PRESENT;
            t->offset = offsets[t->inner];
            t->nbytes = lengths[t->inner];
        }
    }
}

/* The byte ranges of a shard's tasks from its index (raw, index_n bytes) and its size; offsets: scratch of
 * 2 * n_inner, holding the decoded index afterwards (offsets, then lengths). */
zgpu_status zg_plan_tasks_from_index(zgpu_array *a, zg_plan *plan, zg_plan_object *ob, const uint8_t *raw,
                                     uint64_t *offsets) {
    const uint64_t index_n = zg_sharding_index_nbytes(a->shard), n_inner = zg_sharding_n_inner(a->shard);
    uint64_t *lengths = offsets + n_inner;
    zgpu_status st = zg_sharding_decode_index(a->shard, raw, (size_t)index_n, ob->size, offsets, lengths);
    if (st == ZGPU_OK) zg_plan_apply_index(plan, ob, offsets, lengths);
    else if (zg_sharding_fixed_index(a->shard, NULL)) zg_error_prefix(ZG_ARRAY_WHERE_FMT ", ", a->path);
    else zg_error_prefix(ZG_ARRAY_WHERE_FMT ", shard '%s': ", a->path, ob->key);
    return st;
}

void zg_plan_sum_stored(zg_plan *plan) {
    plan->stored_bytes = 0;
    for (size_t i = 0; i < plan->n_tasks; i++)
        if (plan->tasks[i].state == ZG_TASK_PRESENT && plan->tasks[i].unit_n && !plan->tasks[i].decoded_elsewhere)
            plan->stored_bytes += plan->tasks[i].nbytes;
}

unsigned zg_plan_shard_changes(const zgpu_array *a) {
    zgpu_array *m = (zgpu_array *)a; /* (the counters change under a const view: atomics) */
    return atomic_load(&m->shard_changes) + atomic_load(&m->store->replaced);
}

/* Objects resolved on the calling thread: opening a shard and reading its index costs about 3 us (H200 machine:
 * open, fstat, pread and close 1.5-2.4 us), handing them to the pool's threads 40 (their wake-ups: the label
 * volume's four shards, a batch of 8 or 64 patches, 12-13 us on one thread, 43-52 on the pool of 16). */
#define RESOLVE_HERE_MAX 12

zgpu_status zg_plan_resolve(zgpu_array *a, zg_plan *plan) {
    if (a->store->vt->remote) return zg_plan_resolve_remote(a, plan, ZG_FETCH_ALL);
    plan->store = a->store;
    resolve_job job = {a, plan};
    if (plan->n_objects <= RESOLVE_HERE_MAX) {
        for (size_t i = 0; i < plan->n_objects; i++) ZG_FORWARD(resolve_object(&job, i));
    } else {
        ZG_FORWARD(zg_pool_run(a->ctx->pool, plan->n_objects, resolve_object, &job));
    }
    zg_plan_sum_stored(plan);
    return ZGPU_OK;
}

/* ---------------- strided copies ---------------- */

/* Validates the caller's layout: strides given or C-contiguous. */
zgpu_status zg_resolve_strides(const zgpu_array *a, const uint64_t *count, const int64_t *given, int64_t *strides) {
    return zg_resolve_strides_item(a, a->meta.dtype.size, count, given, strides);
}

zgpu_status zg_resolve_region_strides(const zgpu_array *a, size_t itemsize, size_t n, const uint64_t *counts,
                                      const int64_t *given, int64_t **out) {
    const size_t nd = (size_t)a->meta.ndim;
    *out = malloc((n * nd != 0 ? n * nd : 1) * sizeof(int64_t));
    if (!*out) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for %zu regions", n);
    for (size_t r = 0; r < n; r++) {
        /* (a 0-d array's read may pass no counts: NULL plus 0 is undefined in C) */
        zgpu_status st = zg_resolve_strides_item(a, itemsize, nd ? counts + r * nd : counts,
                                                 given && nd ? given + r * nd : given, *out + r * nd);
        if (st != ZGPU_OK) {
            if (n > 1) zg_error_prefix("region %zu: ", r);
            free(*out);
            *out = NULL;
            return st;
        }
    }
    return ZGPU_OK;
}

zgpu_status zg_read_xform(const zgpu_array *a, const zgpu_read_options *opts, zg_xform *x) {
    char where[1100];
    snprintf(where, sizeof where, ZG_ARRAY_WHERE_FMT, a->path);
    return zg_xform_make(opts, a->meta.dtype.id, a->meta.dtype.size, where, x);
}

zgpu_status zg_resolve_strides_item(const zgpu_array *a, size_t itemsize, const uint64_t *count, const int64_t *given,
                                    int64_t *strides) {
    const int nd = a->meta.ndim;
    if (!given) {
        zg_c_strides(nd, count, itemsize, strides);
        return ZGPU_OK;
    }
    for (int d = 0; d < nd; d++) {
        if (count[d] > 1 && given[d] == 0)
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, ZG_ARRAY_WHERE_FMT ": stride 0 on axis %d would overlap elements",
                            a->path, d);
        strides[d] = given[d];
    }
    return ZGPU_OK;
}

void zg_c_strides(int ndim, const uint64_t *shape, size_t itemsize, int64_t *strides) {
    int64_t s = (int64_t)itemsize;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= (int64_t)shape[d];
    }
}

/* Number of trailing axes that form one contiguous run in both layouts, and that run's byte length. */
static int contiguous_tail(int ndim, const uint64_t *count, size_t itemsize, const int64_t *a, const int64_t *b,
                           size_t *run) {
    int64_t expect = (int64_t)itemsize;
    int k = ndim;
    while (k > 0) {
        int d = k - 1;
        if (count[d] != 1 && (a[d] != expect || (b && b[d] != expect))) break;
        expect *= (int64_t)count[d];
        k--;
    }
    *run = (size_t)expect;
    return k; /* axes [k, ndim) are merged */
}

static inline void copy_elem(uint8_t *d, const uint8_t *s, size_t n) {
    switch (n) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    case 16: memcpy(d, s, 16); break;
    default: memcpy(d, s, n);
    }
}

void zg_copy_box(int ndim, const uint64_t *count, size_t itemsize, uint8_t *dst, const int64_t *dst_strides,
                 const uint8_t *src, const int64_t *src_strides) {
    for (int d = 0; d < ndim; d++)
        if (count[d] == 0) return;
    size_t run;
    int k = contiguous_tail(ndim, count, itemsize, dst_strides, src_strides, &run);
    if (k == 0) {
        memcpy(dst, src, run);
        return;
    }
    /* outer odometer over axes [0, k-1); innermost axis k-1 looped directly */
    int inner = k - 1;
    uint64_t idx[ZGPU_MAX_DIMS] = {0};
    const int64_t ds = dst_strides[inner], ss = src_strides[inner];
    const uint64_t n_inner = count[inner];
    for (;;) {
        uint8_t *dp = dst;
        const uint8_t *sp = src;
        for (int d = 0; d < inner; d++) {
            dp += (int64_t)idx[d] * dst_strides[d];
            sp += (int64_t)idx[d] * src_strides[d];
        }
        if (run == itemsize) {
            for (uint64_t i = 0; i < n_inner; i++, dp += ds, sp += ss) copy_elem(dp, sp, itemsize);
        } else {
            for (uint64_t i = 0; i < n_inner; i++, dp += ds, sp += ss) memcpy(dp, sp, run);
        }
        int d = inner - 1;
        while (d >= 0 && ++idx[d] == count[d]) idx[d--] = 0;
        if (d < 0) break;
    }
}

static void fill_run(uint8_t *dst, size_t run, size_t itemsize, const uint8_t *value) {
    int uniform = 1;
    for (size_t i = 1; i < itemsize; i++) uniform &= value[i] == value[0];
    if (uniform) {
        memset(dst, value[0], run);
        return;
    }
    memcpy(dst, value, itemsize);
    size_t done = itemsize;
    while (done < run) {
        size_t n = done < run - done ? done : run - done;
        memcpy(dst + done, dst, n);
        done += n;
    }
}

void zg_plan_chunk_in_array(const zg_plan *plan, const uint64_t *shape, const zg_chunk_task *t, uint64_t *origin,
                            uint64_t *extent) {
    for (int d = 0; d < plan->ndim; d++) {
        origin[d] = t->coords[d] * plan->chunk[d];
        extent[d] = shape[d] - origin[d] < plan->chunk[d] ? shape[d] - origin[d] : plan->chunk[d];
    }
}

int zg_plan_covers_in_array(const zg_plan *plan, const uint64_t *shape, const zg_chunk_task *t) {
    uint64_t origin[ZGPU_MAX_DIMS], extent[ZGPU_MAX_DIMS];
    zg_plan_chunk_in_array(plan, shape, t, origin, extent);
    for (int d = 0; d < plan->ndim; d++)
        if (t->in_chunk[d] != 0 || t->count[d] != extent[d]) return 0;
    return 1;
}

void zg_fill_box(int ndim, const uint64_t *count, size_t itemsize, uint8_t *dst, const int64_t *dst_strides,
                 const uint8_t *value) {
    for (int d = 0; d < ndim; d++)
        if (count[d] == 0) return;
    size_t run;
    int k = contiguous_tail(ndim, count, itemsize, dst_strides, NULL, &run);
    if (k == 0) {
        fill_run(dst, run, itemsize, value);
        return;
    }
    int inner = k - 1;
    uint64_t idx[ZGPU_MAX_DIMS] = {0};
    const int64_t ds = dst_strides[inner];
    for (;;) {
        uint8_t *dp = dst;
        for (int d = 0; d < inner; d++) dp += (int64_t)idx[d] * dst_strides[d];
        for (uint64_t i = 0; i < count[inner]; i++, dp += ds) fill_run(dp, run, itemsize, value);
        int d = inner - 1;
        while (d >= 0 && ++idx[d] == count[d]) idx[d--] = 0;
        if (d < 0) break;
    }
}
