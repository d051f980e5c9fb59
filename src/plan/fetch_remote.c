/* A plan's bytes from a remote store (plan.h: zg_plan_resolve_remote, zg_plan_fetch_objects, zg_plan_fetch_tasks):
 * every needed byte fetched in batches of requests. Shard indexes (kept decoded in the context's shard index cache,
 * tied to their shard's ETag), unsharded chunks whole or head first and then the span a crop needs, shards whole or
 * their needed inner chunks; each object reported as its requests end, so that decoding starts while the batch is
 * in flight. */
#include "plan/plan.h"
#include "plan/plan_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/chunk_cache.h"
#include "codec/chain.h"
#include "codec/sharding.h"
#include "common/status.h"

static zgpu_status add_span(zg_plan_object *ob, uint64_t offset, uint64_t length, const uint8_t *data) {
    zg_plan_span *sp = realloc(ob->spans, (ob->n_spans + 1) * sizeof *sp);
    if (!sp) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    ob->spans = sp;
    sp[ob->n_spans++] = (zg_plan_span){offset, length, data};
    return ZGPU_OK;
}


/* ---- the shard index cache (zgpu_context.shard_indexes): a remote shard's decoded index, kept with the shard's
 * size and strong ETag. Reads that take an index from it send that ETag as If-Match with every inner-chunk
 * request: a shard replaced on the server since fails them with 412 (zg_store_get.changed), which drops the
 * entry (and the shard's decoded chunks) and makes the read run again (zg_plan_shard_changes). zgpu's own writes
 * drop entries as they drop decoded chunks (zg_chunk_cache_invalidate_object_all). */
typedef struct index_head {
    uint64_t size;
    char etag[ZG_STORE_ETAG_MAX];
} index_head;

static int strong_etag(const char *etag) { return etag && etag[0] && strncmp(etag, "W/", 2) != 0; }

static size_t index_entry_bytes(const zgpu_array *a) {
    return sizeof(index_head) + (size_t)(2 * zg_sharding_n_inner(a->shard)) * sizeof(uint64_t);
}

/* A cached index: the shard's size, ETag and tasks. 0 on a miss (*gen: the shard's generation, for the put). */
static int index_from_cache(zgpu_array *a, zg_plan *plan, zg_plan_object *ob, uint64_t *gen) {
    zg_chunk_cache *c = a->ctx->shard_indexes;
    zg_cache_ref *ref = zg_chunk_cache_get_sized(c, a->store->id, ob->key, 0, index_entry_bytes(a), gen);
    if (!ref) return 0;
    index_head h;
    memcpy(&h, ref->data, sizeof h);
    h.etag[ZG_STORE_ETAG_MAX - 1] = 0;
    const uint64_t n_inner = zg_sharding_n_inner(a->shard);
    char *etag = strdup(h.etag);
    uint64_t *decoded = malloc(ref->size - sizeof h); /* (copied out: an entry's bytes need not be aligned) */
    const int ok = etag && decoded;
    if (ok) {
        memcpy(decoded, ref->data + sizeof h, ref->size - sizeof h);
        ob->found = 1;
        ob->size = h.size;
        ob->etag = etag;
        zg_plan_apply_index(plan, ob, decoded, decoded + n_inner);
    } else {
        free(etag);
    }
    free(decoded);
    zg_chunk_cache_release(c, ref);
    return ok;
}

/* Keeps a shard's decoded index (offsets then lengths) with its size and ETag: only a strong ETag, which If-Match
 * can check (a weak one never matches a range request's). */
static void index_to_cache(zgpu_array *a, const zg_plan_object *ob, const uint64_t *decoded, uint64_t gen) {
    zg_chunk_cache *c = a->ctx->shard_indexes;
    if (!c || !strong_etag(ob->etag)) return;
    const size_t n = index_entry_bytes(a);
    uint8_t *e = malloc(n);
    if (!e) return;
    index_head h;
    memset(&h, 0, sizeof h);
    h.size = ob->size;
    snprintf(h.etag, sizeof h.etag, "%s", ob->etag);
    memcpy(e, &h, sizeof h);
    memcpy(e + sizeof h, decoded, n - sizeof h);
    zg_chunk_cache_put(c, a->store->id, ob->key, 0, gen, e, n);
    free(e);
}

/* A read found a shard replaced on the server (412 to an If-Match request): its cached index and decoded
 * chunks go, and the read's error says so; zg_plan_shard_changes tells the caller to read again. */
static zgpu_status shard_changed(zgpu_array *a, const zg_store_get *g, size_t n) {
    const char *key = NULL;
    for (size_t i = 0; i < n; i++)
        if (g[i].changed) {
            key = g[i].key;
            zg_chunk_cache_invalidate_object_all(a->store->id, g[i].key);
        }
    if (!key) return ZGPU_OK;
    atomic_fetch_add(&a->shard_changes, 1u);
    const char *what = a->shard ? "shard" : "chunk"; /* (a chunk fetched in part: its head, then its span) */
    return zg_error(ZGPU_ERR_IO, ZG_ARRAY_WHERE_FMT ", %s '%s': the %s was replaced on the server while it was "
                    "being read (HTTP 412 to If-Match)", a->path, what, key, what);
}

/* What a batch of fetch_whole / fetch_inner reads, finished read by read (fetched_one) as each arrives. */
typedef struct fetch_batch {
    zgpu_array *a;
    zg_plan *plan;
    zg_store_get *g;
    size_t *of;              /* the object of each read */
    const size_t *task_of;   /* NULL, or the task of each read that brings one inner chunk (else SIZE_MAX) */
    size_t o0;
    atomic_size_t *pending;  /* per object of [o0, o1): its reads not finished yet */
    const zg_plan_fetch_hooks *hooks; /* (or NULL) */
    pthread_mutex_t mu;      /* guards err */
    zgpu_status st;          /* the first failure of a read's own processing */
    char err[ZG_ERRMSG_MAX];
} fetch_batch;

static void whole_object_fetched(zg_plan *plan, zg_plan_object *ob, int found);
static void part_object_fetched(zg_plan *plan, zg_plan_object *ob);
static void note_stored_size(zgpu_array *a, uint64_t size);
static zgpu_status whole_shard_fetched(zgpu_array *a, zg_plan *plan, zg_plan_object *ob, int found);

/* One read of the batch has its result: an unsharded object (or a shard fetched whole) is set up from it; when
 * the last read of its object ends, the object is ready (zg_plan_fetch_hooks), with the status of its reads; a read
 * of one inner chunk tells its task first. */
static void fetched_one(zg_store_get *g) {
    fetch_batch *b = g->user;
    const size_t o = b->of[g - b->g];
    zg_plan_object *ob = &b->plan->objects[o];
    zgpu_status st = g->status;
    if (st == ZGPU_OK && g->length == ZG_STORE_WHOLE) {
        if (b->a->shard) st = whole_shard_fetched(b->a, b->plan, ob, g->found);
        else whole_object_fetched(b->plan, ob, g->found);
        if (!b->a->shard && g->found) note_stored_size(b->a, ob->size);
    } else if (st == ZGPU_OK && !b->a->shard) { /* the span of a chunk fetched in part (its version's: If-Match) */
        if (ob->raw_span && g->found && g->object_size != ZG_STORE_WHOLE && g->object_size != ob->size)
            st = zg_error(ZGPU_ERR_CORRUPT_DATA, ZG_ARRAY_WHERE_FMT ", chunk '%s', codec 'bytes': the chunk has %llu "
                          "bytes, expected %llu", b->a->path, ob->key, (unsigned long long)g->object_size,
                          (unsigned long long)ob->size);
        else if (ob->raw_span && !g->found) whole_object_fetched(b->plan, ob, 0);
        else part_object_fetched(b->plan, ob);
    } else if (st == ZGPU_OK && !g->found) {
        st = zg_error(ZGPU_ERR_IO, ZG_ARRAY_WHERE_FMT ": shard '%s' vanished while reading its inner chunks",
                      b->a->path, ob->key);
    }
    if (st != ZGPU_OK && g->status == ZGPU_OK) { /* the read was fine, what it brought was not: keep the message */
        pthread_mutex_lock(&b->mu);
        if (b->st == ZGPU_OK) {
            b->st = st;
            zg_error_save(b->err);
        }
        pthread_mutex_unlock(&b->mu);
    }
    if (st != ZGPU_OK) ob->fetch_failed = 1;
    const zg_plan_fetch_hooks *h = b->hooks;
    if (h && h->task_ready && b->task_of && b->task_of[g - b->g] != SIZE_MAX)
        h->task_ready(h->user, b->task_of[g - b->g], st == ZGPU_OK);
    if (atomic_fetch_sub(&b->pending[o - b->o0], 1) == 1 && h && h->object_ready)
        h->object_ready(h->user, o, !ob->fetch_failed);
}

/* Runs a batch of n reads (of[i]: the object of read i; task_of, NULL or the task of a read of one inner chunk)
 * over objects [o0, o1); objects with no read are ready at once. Returns the first failure: a read's, or its
 * processing's. */
static zgpu_status run_fetch(zgpu_array *a, zg_plan *plan, zg_store_get *g, size_t *of, const size_t *task_of,
                             size_t n, size_t o0, size_t o1, const zg_plan_fetch_hooks *hooks) {
    fetch_batch b;
    memset(&b, 0, sizeof b);
    b.a = a;
    b.plan = plan;
    b.g = g;
    b.of = of;
    b.task_of = task_of;
    b.o0 = o0;
    b.hooks = hooks;
    b.pending = calloc(o1 - o0 ? o1 - o0 : 1, sizeof(atomic_size_t));
    if (!b.pending) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&b.mu, NULL);
    for (size_t i = 0; i < n; i++) atomic_fetch_add(&b.pending[of[i] - o0], 1);
    for (size_t o = o0; o < o1; o++)
        if (atomic_load(&b.pending[o - o0]) == 0 && hooks && hooks->object_ready)
            hooks->object_ready(hooks->user, o, 1);
    for (size_t i = 0; i < n; i++) {
        g[i].on_done = fetched_one;
        g[i].user = &b;
    }
    zgpu_status st = zg_store_get_batch(a->store, g, n);
    if (st != ZGPU_OK) {
        if (shard_changed(a, g, n) == ZGPU_OK) zg_error_prefix(ZG_ARRAY_WHERE_FMT ": ", a->path);
        else st = ZGPU_ERR_IO;
    } else if (b.st != ZGPU_OK) {
        st = b.st;
        zg_error_restore(b.err);
    }
    pthread_mutex_destroy(&b.mu);
    free(b.pending);
    return st;
}

/* An unsharded object fetched whole (into ob->fetched): its size, its tasks, all of it one span. */
static void whole_object_fetched(zg_plan *plan, zg_plan_object *ob, int found) {
    zg_chunk_task *tasks = plan->tasks + ob->first_task;
    ob->found = found;
    ob->size = found ? ob->fetched.size : 0;
    ob->fetched_bytes = ob->size;
    if (found && add_span(ob, 0, ob->size, ob->fetched.data) != ZGPU_OK) ob->fetch_failed = 1;
    for (size_t k = 0; k < ob->n_tasks; k++) {
        tasks[k].state = found ? ZG_TASK_PRESENT : ZG_TASK_MISSING;
        tasks[k].offset = 0;
        tasks[k].nbytes = ob->size;
    }
}

/* An unsharded object fetched in part (fetch_heads): ob->fetched has its ob->size bytes' room, of which its head and
 * the span its tasks need are in place. Its tasks see all of it; their partial decodes read only those. */
static void part_object_fetched(zg_plan *plan, zg_plan_object *ob) {
    zg_chunk_task *tasks = plan->tasks + ob->first_task;
    ob->found = 1;
    if (add_span(ob, 0, ob->size, ob->fetched.data) != ZGPU_OK) ob->fetch_failed = 1;
    for (size_t k = 0; k < ob->n_tasks; k++) {
        tasks[k].state = ZG_TASK_PRESENT;
        tasks[k].offset = 0;
        tasks[k].nbytes = ob->size;
    }
}

/* ---- chunks needed in part, fetched in part: their heads, then the spans their boxes need ----
 * A crop of a blosc chunk needs the blocks its rows fall in, about half of a 64x256x256 chunk for a 32x128x128
 * crop: the header and block starts come first (a head read: its size is unknown), then, of the version the head
 * came from (If-Match on its strong ETag), the blocks between the first and the last the boxes need. Two round
 * trips for half the bytes, so only for chunks of at least PART_MIN_CHUNK decoded bytes needed at most PART_MAX
 * of them, and only where the bytes it saves take longer to receive than the second round trip waits
 * (zg_plan_part_fetch_pays: on loopback always; on a link with tens of milliseconds to a first byte, such as
 * S3's, only for chunks of many megabytes). */
#define PART_MIN_CHUNK ((size_t)1 << 20)
#define PART_MAX 0.75
#define LINK_RATE_GUESS 100e6 /* bytes/s of one answer before any was measured: an object store's, not loopback's */

int zg_plan_part_fetch_pays(double saved_bytes, double wait_s, double bytes_per_s) {
    const double rate = bytes_per_s > 0 ? bytes_per_s : LINK_RATE_GUESS;
    return saved_bytes / rate > (wait_s > 0 ? wait_s : 0);
}

/* A chunk's stored size as this array's fetches have found them (a moving average; a whole fetch's size, or the
 * size a head's answer told), or 0 before any. */
static double stored_chunk_size(zgpu_array *a) {
    const uint64_t b = atomic_load(&a->stored_chunk_bits);
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static void note_stored_size(zgpu_array *a, uint64_t size) {
    const double old = stored_chunk_size(a), now = old > 0 ? old + ((double)size - old) / 4 : (double)size;
    uint64_t b;
    memcpy(&b, &now, sizeof b);
    atomic_store(&a->stored_chunk_bits, b); /* (two fetches storing at once lose one sample: an average spares it) */
}

/* The stored bytes a chunk fetched in part would not fetch: the share of its decoded bytes its boxes leave out, of
 * its stored size as fetches found it (its decoded size before any). */
static double part_saving(zgpu_array *a, size_t nbytes, size_t lo, size_t hi) {
    const double stored = stored_chunk_size(a);
    return (stored > 0 ? stored : (double)nbytes) * (double)(nbytes - (hi - lo)) / (double)nbytes;
}

/* The decoded bytes [lo, hi) of the object that its tasks need, where fetching part of it is worth it. */
static int wants_part(const zgpu_array *a, const zg_plan *plan, const zg_plan_object *ob, const zg_chain *chain,
                      size_t *lo, size_t *hi) {
    const size_t nbytes = (size_t)zg_repr_nbytes(&chain->repr);
    const int raw = zg_chain_stores_raw(chain); /* (one request either way: any saving pays) */
    if (a->shard || !ob->n_tasks || (!raw && nbytes < PART_MIN_CHUNK) || !zg_chain_reads_spans(chain)) return 0;
    int64_t cs[ZGPU_MAX_DIMS];
    zg_c_strides(plan->ndim, plan->chunk, a->meta.dtype.size, cs);
    zg_plan_unit_range(plan, plan->tasks + ob->first_task, (uint32_t)ob->n_tasks, a->meta.dtype.size, cs, lo, hi);
    return *hi > *lo && (raw ? *hi - *lo < nbytes : (double)(*hi - *lo) <= PART_MAX * (double)nbytes);
}

/* Uncompressed chunks needed in part (zg_chain_stores_raw): the span their tasks need is known without a head, so
 * each is one range request, in the batch of the whole objects; the size the answer tells (Content-Range's) must be
 * the chunk's (fetched_one), else the read fails naming the chunk, as its whole read would. */
static zgpu_status fetch_raw_spans(zgpu_array *a, zg_plan *plan, const size_t *of, size_t n, const zg_chain *chain,
                                   zg_store_get *g, size_t *of_g, size_t *n_g) {
    const size_t nbytes = (size_t)zg_repr_nbytes(&chain->repr);
    for (size_t i = 0; i < n; i++) {
        zg_plan_object *ob = &plan->objects[of[i]];
        size_t lo = 0, hi = 0;
        wants_part(a, plan, ob, chain, &lo, &hi);
        ZG_FORWARD(zg_buf_reserve(&ob->fetched, nbytes));
        ob->fetched.size = nbytes;
        ob->size = nbytes;
        ob->raw_span = 1;
        ob->fetched_bytes = hi - lo;
        g[*n_g] = (zg_store_get){.key = ob->key, .offset = lo, .length = hi - lo, .out = ob->fetched.data + lo};
        of_g[(*n_g)++] = of[i];
    }
    return ZGPU_OK;
}

/* The head a blosc-like chain wants before it can name a span: a 16-byte header and a 4-byte start per block, for
 * blocks as small as 4 KiB (a chain wanting more gets the rest of the object). */
static size_t head_guess(const zg_chain *chain) {
    return 16 + 4 * (((size_t)zg_repr_nbytes(&chain->repr) + 4095) / 4096);
}

/* Objects of[0, n) (unsharded, each wants_part): their heads in one batch; then for each, its second read into
 * *second (the span, or the rest of it, of the head's version; the whole object where the server named no strong
 * version), or none where the head held all it needs (the object set up already). */
static zgpu_status fetch_heads(zgpu_array *a, zg_plan *plan, const size_t *of, size_t n, const zg_chain *chain,
                               zg_store_get *second, size_t *of_second, size_t *n_second) {
    const size_t H = head_guess(chain);
    zg_store_get *g = calloc(n, sizeof *g);
    char *etags = calloc(n, ZG_STORE_ETAG_MAX);
    uint8_t *heads = malloc(n * H);
    zgpu_status st = g && etags && heads ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for chunk heads");
    for (size_t i = 0; st == ZGPU_OK && i < n; i++)
        g[i] = (zg_store_get){.key = plan->objects[of[i]].key, .offset = 0, .length = H, .upto = 1,
                              .out = heads + i * H, .etag = etags + i * ZG_STORE_ETAG_MAX};
    if (st == ZGPU_OK) st = zg_store_get_batch(a->store, g, n);
    for (size_t i = 0; st == ZGPU_OK && i < n; i++) {
        zg_plan_object *ob = &plan->objects[of[i]];
        if (!g[i].found) {
            whole_object_fetched(plan, ob, 0);
            continue;
        }
        const uint64_t size = g[i].object_size;
        if (size == ZG_STORE_WHOLE || size > SIZE_MAX / 2) { /* (no size told: the whole object, as for any) */
            second[*n_second] = (zg_store_get){.key = ob->key, .length = ZG_STORE_WHOLE, .buf = &ob->fetched};
            of_second[(*n_second)++] = of[i];
            continue;
        }
        int exact = 1;
        const size_t bound = zg_chain_encoded_size(chain, &exact); /* (SIZE_MAX: none) */
        if (size > bound) { /* a server's claim no chunk of this chain can make: nothing reserved for it */
            st = zg_error(ZGPU_ERR_CORRUPT_DATA, "chunk '%s', codec '%s': the server says it holds %llu bytes, more "
                          "than the codec writes for a chunk (%zu)", ob->key,
                          chain->n_b2b ? chain->b2b[0]->vt->name : chain->a2b->vt->name,
                          (unsigned long long)size, bound);
            break;
        }
        note_stored_size(a, size);
        const size_t got = size < H ? (size_t)size : H;
        if ((st = zg_buf_reserve(&ob->fetched, got < size ? (size_t)size : got)) != ZGPU_OK) break;
        memcpy(ob->fetched.data, heads + i * H, got);
        ob->fetched.size = (size_t)size;
        if (got == size) { /* all of it came */
            whole_object_fetched(plan, ob, 1);
            continue;
        }
        size_t lo = 0, hi = 0, need = 0;
        uint64_t off = 0, end = size;
        wants_part(a, plan, ob, chain, &lo, &hi);
        if (!zg_chain_stored_span(chain, ob->fetched.data, got, (size_t)size, lo, hi, &need, &off, &end) ||
            need > got || end > size || off > end) {
            off = 0; /* the codec wants more than the head names: the rest of it */
            end = size;
        }
        ob->size = size;
        ob->fetched_bytes = got + (end > got ? end - (off > got ? off : got) : 0);
        if (end <= got) { /* the head held the span */
            part_object_fetched(plan, ob);
            continue;
        }
        const uint64_t from = off > got ? off : got;
        const char *etag = g[i].etag;
        if (etag[0] && strncmp(etag, "W/", 2) != 0) {
            if (!(ob->etag = strdup(etag))) {
                st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
                break;
            }
            second[*n_second] = (zg_store_get){.key = ob->key, .offset = from, .length = end - from,
                                               .out = ob->fetched.data + from, .if_match = ob->etag};
        } else { /* no version to hold the server to: the whole object in one answer */
            ob->fetched.size = 0;
            second[*n_second] = (zg_store_get){.key = ob->key, .length = ZG_STORE_WHOLE, .buf = &ob->fetched};
        }
        of_second[(*n_second)++] = of[i];
    }
    if (st != ZGPU_OK) zg_error_prefix(ZG_ARRAY_WHERE_FMT ", reading chunk heads: ", a->path);
    free(g);
    free(etags);
    free(heads);
    return st;
}

/* Unsharded: objects [o0, o1) in one batch, whole (an object's size comes with it), or where `part` names the chain
 * and an object is needed only in part (wants_part), its head first and then its span. */
static zgpu_status fetch_whole(zgpu_array *a, zg_plan *plan, size_t o0, size_t o1, const zg_chain *part,
                               const zg_plan_fetch_hooks *hooks) {
    const size_t n = o1 - o0;
    zg_store_get *g = calloc(n ? n : 1, sizeof *g);
    size_t *of = calloc(n ? n : 1, sizeof *of);
    size_t *parts = calloc(n ? n : 1, sizeof *parts);
    zgpu_status st = g && of && parts ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    size_t ng = 0, np = 0;
    /* the chunks needed in part go head first if what they save, received one after another at one answer's
     * rate, outlasts the second round trip's wait for a first byte (the window's heads and spans each go in one
     * batch: one wait each, whatever the number of chunks) */
    double saved = 0;
    for (size_t i = 0; part && st == ZGPU_OK && i < n; i++) {
        zg_plan_object *ob = &plan->objects[o0 + i];
        size_t lo, hi;
        if (!ob->decoded_elsewhere && wants_part(a, plan, ob, part, &lo, &hi)) {
            parts[np++] = o0 + i;
            saved += part_saving(a, (size_t)zg_repr_nbytes(&part->repr), lo, hi);
        }
    }
    double wait_s = -1, rate = 0; /* the link, as the store's answers have shown it */
    const int raw = part && zg_chain_stores_raw(part);
    if (np && !raw && a->store->vt->link) a->store->vt->link(a->store, &wait_s, &rate);
    if (np && !raw && !zg_plan_part_fetch_pays(saved, wait_s, rate)) np = 0;
    for (size_t i = 0, k = 0; st == ZGPU_OK && i < n; i++) {
        zg_plan_object *ob = &plan->objects[o0 + i];
        if (ob->decoded_elsewhere) continue; /* (ready at once: run_fetch) */
        if (k < np && parts[k] == o0 + i) {
            k++;
            continue;
        }
        g[ng] = (zg_store_get){.key = ob->key, .length = ZG_STORE_WHOLE, .buf = &ob->fetched};
        of[ng++] = o0 + i;
    }
    if (st == ZGPU_OK && np && raw) st = fetch_raw_spans(a, plan, parts, np, part, g, of, &ng);
    else if (st == ZGPU_OK && np) st = fetch_heads(a, plan, parts, np, part, g, of, &ng);
    if (st == ZGPU_OK) st = run_fetch(a, plan, g, of, NULL, ng, o0, o1, hooks);
    free(g);
    free(of);
    free(parts);
    return st;
}

/* A shard whose every inner chunk the read needs is fetched whole, index and all, in one request: the index
 * first and then its chunks would be two round trips for the same bytes. */
static int fetch_shard_whole(const zgpu_array *a, const zg_plan *plan, const zg_plan_object *ob) {
    const zg_array_meta *m = &a->meta;
    uint64_t in_bounds = 1; /* the shard's inner chunks inside the array's shape (an edge shard has fewer) */
    for (int d = 0; d < m->ndim; d++) {
        const uint64_t start = ob->coords[d] * m->chunk_shape[d], inner = a->read_chunk[d];
        const uint64_t left = m->shape[d] - start < m->chunk_shape[d] ? m->shape[d] - start : m->chunk_shape[d];
        in_bounds *= zg_ceil_div(left, inner);
    }
    uint64_t units = 0; /* distinct inner chunks (a chunk that several regions need is one unit) */
    for (size_t k = 0; k < ob->n_tasks; k++) {
        const zg_chunk_task *t = &plan->tasks[ob->first_task + k];
        if (t->decoded_elsewhere) return 0; /* (only what is not decoded yet is fetched) */
        units += t->unit_n != 0;
    }
    return units == in_bounds;
}


/* A shard fetched whole (into ob->fetched): its tasks from the index inside it, and all of it one span. */
static zgpu_status whole_shard_fetched(zgpu_array *a, zg_plan *plan, zg_plan_object *ob, int found) {
    zg_chunk_task *tasks = plan->tasks + ob->first_task;
    ob->found = found;
    if (!found) {
        for (size_t k = 0; k < ob->n_tasks; k++) tasks[k].state = ZG_TASK_MISSING;
        return ZGPU_OK;
    }
    const uint64_t index_n = zg_sharding_index_nbytes(a->shard);
    ob->size = ob->fetched.size;
    if (ob->size < index_n)
        return zg_error(ZGPU_ERR_CORRUPT_DATA, ZG_ARRAY_WHERE_FMT ", shard '%s', codec 'sharding_indexed': the shard "
                        "has %llu bytes, less than its %llu-byte index", a->path, ob->key,
                        (unsigned long long)ob->size, (unsigned long long)index_n);
    uint64_t *offsets = malloc((size_t)(2 * zg_sharding_n_inner(a->shard)) * sizeof(uint64_t) + 1);
    if (!offsets) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for a shard index");
    const uint8_t *raw = ob->fetched.data + (zg_sharding_index_at_end(a->shard) ? ob->size - index_n : 0);
    zgpu_status st = zg_plan_tasks_from_index(a, plan, ob, raw, offsets);
    free(offsets);
    return st == ZGPU_OK ? add_span(ob, 0, ob->size, ob->fetched.data) : st;
}

/* What fetch_indexes does with a shard the read needs whole. */
enum whole_shard {
    WHOLE_LATER, /* nothing now: fetch_inner fetches it whole (the host path's windows) */
    WHOLE_NOW,   /* fetched whole in the index batch: one request for its index and chunks */
    WHOLE_INDEX  /* its index only, as for any shard: the device path fetches its chunks wave by wave in ranges,
                  * several requests in flight and the next wave's fetch beside this one's decode (one request
                  * for a whole 50 MB shard received at one connection's rate, 2 GB/s on loopback, before any
                  * wave could start) */
};

/* Sharded: every needed shard's index in one batch (a suffix range when it ends the shard: the response also
 * tells the shard's size), setting the tasks' byte ranges; shards needed whole as `whole` says. */
static zgpu_status fetch_indexes(zgpu_array *a, zg_plan *plan, enum whole_shard whole) {
    const size_t no = plan->n_objects;
    uint64_t fixed_size;
    if (zg_sharding_fixed_index(a->shard, &fixed_size)) {
        /* the index came with the array (a TIFF page's tile table): nothing to fetch, and never the whole object,
         * which holds the file's other pages too */
        uint64_t *offsets = malloc((size_t)(2 * zg_sharding_n_inner(a->shard)) * sizeof(uint64_t) + 1);
        if (!offsets) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for a tile index");
        zgpu_status st = ZGPU_OK;
        for (size_t i = 0; st == ZGPU_OK && i < no; i++) {
            zg_plan_object *ob = &plan->objects[i];
            if (ob->decoded_elsewhere) continue;
            ob->found = 1;
            ob->size = fixed_size;
            st = zg_plan_tasks_from_index(a, plan, ob, NULL, offsets);
        }
        free(offsets);
        return st;
    }
    const uint64_t index_n = zg_sharding_index_nbytes(a->shard), n_inner = zg_sharding_n_inner(a->shard);
    const int at_end = zg_sharding_index_at_end(a->shard);
    zg_store_get *g = calloc(no ? no : 1, sizeof *g);
    size_t *of = calloc(no ? no : 1, sizeof *of); /* object of each get */
    uint8_t *raw = malloc(no && index_n ? (size_t)(no * index_n) : 1);
    uint64_t *offsets = malloc((size_t)(2 * n_inner) * sizeof(uint64_t) + 1);
    uint64_t *gens = calloc(no ? no : 1, sizeof *gens);              /* cache generations of the misses */
    char *etags = calloc(no ? no : 1, ZG_STORE_ETAG_MAX);            /* the index answers' ETags */
    zgpu_status st = g && of && raw && offsets && gens && etags
                         ? ZGPU_OK
                         : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for shard indexes");
    size_t ng = 0;
    for (size_t i = 0; st == ZGPU_OK && i < no; i++) {
        zg_plan_object *ob = &plan->objects[i];
        if (ob->decoded_elsewhere) continue;
        if (whole != WHOLE_INDEX && fetch_shard_whole(a, plan, ob)) {
            if (whole == WHOLE_NOW) g[ng] = (zg_store_get){.key = ob->key, .length = ZG_STORE_WHOLE, .buf = &ob->fetched};
            else continue;
        } else {
            if (a->ctx->shard_indexes && index_from_cache(a, plan, ob, &gens[i])) continue;
            g[ng] = (zg_store_get){.key = ob->key, .offset = 0, .length = index_n, .from_end = at_end,
                                   .out = raw + i * index_n, .etag = etags + i * ZG_STORE_ETAG_MAX};
        }
        of[ng++] = i;
    }
    if (st == ZGPU_OK) st = zg_store_get_batch(a->store, g, ng);
    if (st != ZGPU_OK) zg_error_prefix(ZG_ARRAY_WHERE_FMT ", reading shard indexes: ", a->path);
    for (size_t k = 0; st == ZGPU_OK && k < ng; k++) {
        zg_plan_object *ob = &plan->objects[of[k]];
        zg_chunk_task *tasks = plan->tasks + ob->first_task;
        if (g[k].length == ZG_STORE_WHOLE) {
            st = whole_shard_fetched(a, plan, ob, g[k].found);
            continue;
        }
        ob->found = g[k].found;
        if (!ob->found) {
            for (size_t t = 0; t < ob->n_tasks; t++) tasks[t].state = ZG_TASK_MISSING;
            continue;
        }
        int found = 1;
        ob->size = g[k].object_size;
        if (ob->size == ZG_STORE_WHOLE) st = a->store->vt->size(a->store, ob->key, &ob->size, &found);
        if (st == ZGPU_OK && !found) st = zg_error(ZGPU_ERR_IO, "the shard vanished while reading it");
        if (st == ZGPU_OK) st = zg_plan_tasks_from_index(a, plan, ob, raw + of[k] * index_n, offsets);
        /* the version the index came from: its inner chunks are asked for with If-Match, and the index kept */
        if (st == ZGPU_OK && strong_etag(g[k].etag) && !(ob->etag = strdup(g[k].etag)))
            st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        if (st == ZGPU_OK) index_to_cache(a, ob, offsets, gens[of[k]]);
    }
    free(gens);
    free(etags);
    free(raw);
    free(offsets);
    free(of);
    free(g);
    return st;
}

/* Sharded, indexes read: the present inner chunks of shards [o0, o1), each shard's into one block of its own, and
 * the shards needed whole (not fetched yet) whole, all in one batch (nearby ranges merged by the store). */
static zgpu_status fetch_inner(zgpu_array *a, zg_plan *plan, size_t o0, size_t o1,
                               const zg_plan_fetch_hooks *hooks) {
    size_t n_get = 0;
    for (size_t o = o0; o < o1; o++) n_get += plan->objects[o].n_tasks;
    zg_store_get *g = calloc(n_get ? n_get : 1, sizeof *g);
    size_t *of = calloc(n_get ? n_get : 1, sizeof *of), *task_of = malloc((n_get ? n_get : 1) * sizeof *task_of);
    zgpu_status st = g && of && task_of ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    n_get = 0;
    for (size_t o = o0; o < o1 && st == ZGPU_OK; o++) {
        zg_plan_object *ob = &plan->objects[o];
        zg_chunk_task *tasks = plan->tasks + ob->first_task;
        if (ob->n_spans || ob->decoded_elsewhere) continue; /* fetched whole already, or not needed */
        if (fetch_shard_whole(a, plan, ob)) {
            of[n_get] = o;
            task_of[n_get] = SIZE_MAX;
            g[n_get++] = (zg_store_get){.key = ob->key, .length = ZG_STORE_WHOLE, .buf = &ob->fetched};
            continue;
        }
        uint64_t total = 0;
        for (size_t k = 0; k < ob->n_tasks; k++)
            if (tasks[k].state == ZG_TASK_PRESENT && tasks[k].unit_n && !tasks[k].decoded_elsewhere)
                total += tasks[k].nbytes;
        if (!total) continue;
        st = zg_buf_reserve(&ob->fetched, (size_t)total);
        if (st != ZGPU_OK) {
            zg_error_prefix(ZG_ARRAY_WHERE_FMT ", shard '%s': %llu bytes of inner chunks: ", a->path, ob->key,
                            (unsigned long long)total);
            break;
        }
        uint64_t at = 0;
        for (size_t k = 0; k < ob->n_tasks && st == ZGPU_OK; k++) {
            zg_chunk_task *t = &tasks[k];
            /* (another box's copy: its leader's bytes; or decoded already) */
            if (t->state != ZG_TASK_PRESENT || !t->unit_n || t->decoded_elsewhere) continue;
            uint8_t *dst = ob->fetched.data + at;
            of[n_get] = o;
            task_of[n_get] = ob->first_task + k;
            g[n_get++] = (zg_store_get){.key = ob->key, .offset = t->offset, .length = t->nbytes, .out = dst,
                                        .if_match = ob->etag};
            st = add_span(ob, t->offset, t->nbytes, dst);
            at += t->nbytes;
        }
        ob->fetched.size = (size_t)total;
    }
    if (st == ZGPU_OK) st = run_fetch(a, plan, g, of, task_of, n_get, o0, o1, hooks);
    free(g);
    free(of);
    free(task_of);
    return st;
}

zgpu_status zg_plan_fetch_objects(zgpu_array *a, zg_plan *plan, size_t o0, size_t o1, const zg_chain *part,
                                  const zg_plan_fetch_hooks *hooks) {
    return a->shard ? fetch_inner(a, plan, o0, o1, hooks) : fetch_whole(a, plan, o0, o1, part, hooks);
}

void zg_plan_release_objects(zg_plan *plan, size_t o0, size_t o1) {
    for (size_t o = o0; o < o1; o++) {
        zg_plan_object *ob = &plan->objects[o];
        free(ob->spans);
        ob->spans = NULL;
        ob->n_spans = 0;
        zg_buf_free(&ob->fetched);
    }
}

zgpu_status zg_plan_fetch_tasks(zgpu_array *a, const zg_plan *plan, const size_t *tasks, uint8_t *const *outs,
                                size_t n) {
    zg_store_get *g = calloc(n ? n : 1, sizeof *g);
    if (!g) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        const zg_chunk_task *t = &plan->tasks[tasks[i]];
        const zg_plan_object *ob = &plan->objects[t->object];
        const uint8_t *mem = zg_plan_bytes(ob, t->offset, t->nbytes); /* a shard fetched whole */
        if (mem) memcpy(outs[i], mem, (size_t)t->nbytes);
        else
            g[ng++] = (zg_store_get){.key = ob->key, .offset = t->offset, .length = t->nbytes, .out = outs[i],
                                     .if_match = ob->etag};
    }
    zgpu_status st = zg_store_get_batch(a->store, g, ng);
    if (st != ZGPU_OK && shard_changed(a, g, ng) != ZGPU_OK) {
        free(g);
        return ZGPU_ERR_IO;
    }
    for (size_t i = 0; st == ZGPU_OK && i < ng; i++)
        if (!g[i].found) st = zg_error(ZGPU_ERR_IO, "shard '%s' vanished while reading its inner chunks", g[i].key);
    if (st != ZGPU_OK) zg_error_prefix(ZG_ARRAY_WHERE_FMT ": ", a->path);
    free(g);
    return st;
}


zgpu_status zg_plan_resolve_remote(zgpu_array *a, zg_plan *plan, zg_remote_fetch fetch) {
    plan->store = a->store;
    if (a->shard)
        ZG_FORWARD(fetch_indexes(a, plan, fetch == ZG_FETCH_ALL    ? WHOLE_NOW
                                          : fetch == ZG_FETCH_SIZES ? WHOLE_INDEX
                                                                    : WHOLE_LATER));
    if (fetch == ZG_FETCH_ALL || (fetch == ZG_FETCH_SIZES && !a->shard))
        ZG_FORWARD(zg_plan_fetch_objects(a, plan, 0, plan->n_objects, NULL, NULL));
    zg_plan_sum_stored(plan);
    return ZGPU_OK;
}
