/* The decoded-chunk cache (chunk_cache.h): one mutex per cache over two hash tables and an LRU list.
 *
 * Each entry is one allocation: its header, its name "<store_id>/<key>", then its bytes. It is linked in
 *  - the LRU list (most recently used at the head; eviction takes the tail),
 *  - the table of (name, inner), for lookups,
 *  - the table of name alone, whose chain of a bucket holds every inner chunk of an object: invalidating an
 *    object walks that chain, not the whole cache.
 * All three lists are doubly linked, so unlinking an entry is O(1). Both tables have as many buckets as a
 * power of two, doubled when entries outnumber them (in a put, never in a get).
 *
 * A hit hands out the entry itself with its reference count raised; eviction and invalidation unlink it at
 * once (its bytes no longer count), and the last release frees it. So a reader copying from an entry never
 * races a free, and no lookup allocates.
 *
 * Generations: why puts of stale bytes cannot happen, with bounded state.
 * A reader's get misses, it fetches and decodes, then puts. A writer may replace the object in between; the
 * writer invalidates after its new object is in place, so a reader that fetched the old bytes must have had its
 * get before that invalidation. Each invalidation therefore bumps a generation that the put compares with the
 * one its get saw. Per-object counters would have to outlive the entries (a miss has no entry to hold one), so
 * they would grow with every object ever written. Instead:
 *  - `slot[h % N_SLOTS]`: a fixed table of counters indexed by the hash of the object's name, bumped by
 *    invalidate_object; two objects sharing a slot only cost each other a refused put (a lost insertion, never
 *    a stale one);
 *  - `epoch`: bumped by every prefix invalidation (an array replaced or deleted: rare), which thereby refuses
 *    every put in flight in this cache, whatever the object; enumerating the objects under a prefix that have
 *    no entry is impossible without per-object state.
 * An object's generation is epoch + slot: both only grow, so the sum changes exactly when either does. Both are
 * read and compared under the cache's mutex, as is every insertion, so an invalidation is ordered either
 * before a get (which then sees its bump) or after a put (which it then removes).
 * A single global counter would be bounded too, but then every chunk written anywhere would refuse every read's
 * put in the process: steady writes to one array would keep another array's reads from ever filling the cache.
 *
 * Every cache is also in a process-wide list, for the writers' *_all invalidations (a write through one context
 * must reach the caches of the others) and for fork: the list's lock and then every cache's are taken before a
 * fork and released after it in the parent; in the child, where the threads that held entries or waited on a
 * lock do not exist, they are initialised afresh (their entries stay consistent: no thread was inside). */
#include "cache/chunk_cache.h"

#include "common/buf.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define N_SLOTS 4096
#define ALIGN 16 /* of an entry's bytes: decoded chunks are read as any type */

typedef struct entry {
    zg_cache_ref ref; /* first: a zg_cache_ref * is its entry */
    struct entry *lru_prev, *lru_next;
    struct entry *h_prev, *h_next; /* chain of tab[hash & mask] */
    struct entry *o_prev, *o_next; /* chain of otab[ohash & mask] */
    uint64_t hash;                 /* of (name, inner) */
    uint64_t ohash;                /* of name */
    size_t cost;
    size_t name_len;
    uint32_t inner;
    int refs;   /* holders: the cache (while linked) counts none; each unreleased hit one */
    int linked; /* in the tables and the LRU list */
    int external; /* ref.data is the owner's (zg_chunk_cache_create_external), given back through its release */
    char name[];
} entry;

struct zg_chunk_cache {
    pthread_mutex_t mu;
    size_t capacity, bytes, entries;
    entry *head, *tail; /* LRU: head most recent */
    entry **tab, **otab;
    size_t mask; /* buckets - 1 */
    uint64_t epoch;
    uint64_t slot[N_SLOTS];
    zg_chunk_cache_stats st;
    zg_cache_release_fn release_bytes; /* external caches: gives an entry's bytes back (never under mu) */
    void *release_ctx;
    struct zg_chunk_cache *reg_prev, *reg_next; /* the process's list */
};

/* ---- the process's caches ---- */

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static zg_chunk_cache *reg_head;
static atomic_int reg_count; /* lets writers skip the lock when no cache exists */
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) {
    pthread_mutex_lock(&reg_mu);
    for (zg_chunk_cache *c = reg_head; c; c = c->reg_next) pthread_mutex_lock(&c->mu);
}
static void fork_parent(void) {
    for (zg_chunk_cache *c = reg_head; c; c = c->reg_next) pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&reg_mu);
}
/* the child has only the forking thread: a fresh lock is one nobody holds or waits for */
static void fork_child(void) {
    for (zg_chunk_cache *c = reg_head; c; c = c->reg_next) pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&reg_mu, NULL);
}
static void reg_init(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

/* ---- names and hashes ---- */

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}
static uint64_t mix(uint64_t x) { /* splitmix64's finaliser: every bit of x reaches the low bits */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
/* Hash of "<store_id>/<prefix-or-key>" without building it. */
static uint64_t name_hash(const char *store_id, size_t ls, const char *key, size_t lk) {
    uint64_t h = fnv(1469598103934665603ull, store_id, ls);
    h = fnv(h, "/", 1);
    return mix(fnv(h, key, lk));
}
static uint64_t entry_hash(uint64_t ohash, uint32_t inner) {
    return mix(ohash ^ ((uint64_t)inner * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull));
}
static int name_is(const entry *e, const char *store_id, size_t ls, const char *key, size_t lk) {
    return e->name_len == ls + 1 + lk && !memcmp(e->name, store_id, ls) && e->name[ls] == '/' &&
           !memcmp(e->name + ls + 1, key, lk);
}
static size_t data_offset(size_t name_len) {
    size_t o = sizeof(entry) + name_len + 1;
    return (o + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

size_t zg_chunk_cache_entry_cost(const char *store_id, const char *key, size_t n) {
    return data_offset((store_id ? strlen(store_id) : 0) + 1 + (key ? strlen(key) : 0)) + n;
}

/* ---- lists (under c->mu) ---- */

static void lru_unlink(zg_chunk_cache *c, entry *e) {
    if (e->lru_prev) e->lru_prev->lru_next = e->lru_next;
    else c->head = e->lru_next;
    if (e->lru_next) e->lru_next->lru_prev = e->lru_prev;
    else c->tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}
static void lru_push_front(zg_chunk_cache *c, entry *e) {
    e->lru_prev = NULL;
    e->lru_next = c->head;
    if (c->head) c->head->lru_prev = e;
    else c->tail = e;
    c->head = e;
}
static void tab_link(entry **tab, size_t mask, entry *e) {
    entry **b = &tab[e->hash & mask];
    e->h_prev = NULL;
    e->h_next = *b;
    if (*b) (*b)->h_prev = e;
    *b = e;
}
static void otab_link(entry **otab, size_t mask, entry *e) {
    entry **b = &otab[e->ohash & mask];
    e->o_prev = NULL;
    e->o_next = *b;
    if (*b) (*b)->o_prev = e;
    *b = e;
}

/* Takes e out of the cache. Returns 1 when the caller must free it (no reader holds it); else the last
 * release frees it. */
static int unlink_entry(zg_chunk_cache *c, entry *e) {
    lru_unlink(c, e);
    if (e->h_prev) e->h_prev->h_next = e->h_next;
    else c->tab[e->hash & c->mask] = e->h_next;
    if (e->h_next) e->h_next->h_prev = e->h_prev;
    if (e->o_prev) e->o_prev->o_next = e->o_next;
    else c->otab[e->ohash & c->mask] = e->o_next;
    if (e->o_next) e->o_next->o_prev = e->o_prev;
    e->linked = 0;
    c->bytes -= e->cost;
    c->entries--;
    return e->refs == 0;
}

/* Entries to free once the lock is dropped, chained through lru_next. */
static void defer_free(entry **list, entry *e) {
    e->lru_next = *list;
    *list = e;
}
/* An entry and, in an external cache, its bytes: never under c->mu (the owner's release may take locks). */
static void free_entry(zg_chunk_cache *c, entry *e) {
    if (e->external && c->release_bytes) c->release_bytes(c->release_ctx, (void *)e->ref.data, e->ref.size);
    free(e);
}
static void free_list(zg_chunk_cache *c, entry *list) {
    while (list) {
        entry *n = list->lru_next;
        free_entry(c, list);
        list = n;
    }
}

static entry *find(const zg_chunk_cache *c, uint64_t hash, const char *store_id, size_t ls, const char *key,
                   size_t lk, uint32_t inner) {
    for (entry *e = c->tab[hash & c->mask]; e; e = e->h_next)
        if (e->hash == hash && e->inner == inner && name_is(e, store_id, ls, key, lk)) return e;
    return NULL;
}

/* The linked entry of e's name and inner chunk, if any. */
static entry *find_named(const zg_chunk_cache *c, const entry *e) {
    for (entry *o = c->tab[e->hash & c->mask]; o; o = o->h_next)
        if (o != e && o->hash == e->hash && o->inner == e->inner && o->name_len == e->name_len &&
            !memcmp(o->name, e->name, e->name_len))
            return o;
    return NULL;
}

/* Doubles both tables (best effort: out of memory, the chains just grow longer). */
static void grow(zg_chunk_cache *c) {
    size_t nb = (c->mask + 1) * 2;
    entry **tab = calloc(nb, sizeof *tab), **otab = calloc(nb, sizeof *otab);
    if (!tab || !otab) {
        free(tab);
        free(otab);
        return;
    }
    for (entry *e = c->head; e; e = e->lru_next) {
        tab_link(tab, nb - 1, e);
        otab_link(otab, nb - 1, e);
    }
    free(c->tab);
    free(c->otab);
    c->tab = tab;
    c->otab = otab;
    c->mask = nb - 1;
}

static uint64_t generation(const zg_chunk_cache *c, uint64_t ohash) { return c->epoch + c->slot[ohash % N_SLOTS]; }

/* ---- the API ---- */

zg_chunk_cache *zg_chunk_cache_create(size_t capacity_bytes) {
    if (!capacity_bytes) return NULL;
    pthread_once(&reg_once, reg_init);
    zg_chunk_cache *c = calloc(1, sizeof *c);
    const size_t nb = 64;
    if (c) {
        c->tab = calloc(nb, sizeof *c->tab);
        c->otab = calloc(nb, sizeof *c->otab);
    }
    if (!c || !c->tab || !c->otab) {
        if (c) {
            free(c->tab);
            free(c->otab);
        }
        free(c);
        return NULL;
    }
    c->mask = nb - 1;
    c->capacity = capacity_bytes;
    c->st.capacity = capacity_bytes;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_lock(&reg_mu);
    c->reg_next = reg_head;
    if (reg_head) reg_head->reg_prev = c;
    reg_head = c;
    atomic_fetch_add(&reg_count, 1);
    pthread_mutex_unlock(&reg_mu);
    return c;
}

zg_chunk_cache *zg_chunk_cache_create_external(size_t capacity_bytes, zg_cache_release_fn release, void *ctx) {
    if (!release) return NULL;
    zg_chunk_cache *c = zg_chunk_cache_create(capacity_bytes);
    if (c) {
        c->release_bytes = release;
        c->release_ctx = ctx;
    }
    return c;
}

void zg_chunk_cache_free(zg_chunk_cache *c) {
    if (!c) return;
    pthread_mutex_lock(&reg_mu);
    if (c->reg_prev) c->reg_prev->reg_next = c->reg_next;
    else reg_head = c->reg_next;
    if (c->reg_next) c->reg_next->reg_prev = c->reg_prev;
    atomic_fetch_sub(&reg_count, 1);
    pthread_mutex_unlock(&reg_mu);
    for (entry *e = c->head, *n; e; e = n) {
        n = e->lru_next;
        free_entry(c, e);
    }
    free(c->tab);
    free(c->otab);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

zg_cache_ref *zg_chunk_cache_get_sized(zg_chunk_cache *c, const char *store_id, const char *key, uint32_t inner,
                                       size_t size, uint64_t *gen_out) {
    if (gen_out) *gen_out = 0;
    if (!c || !store_id || !key) return NULL;
    size_t ls = strlen(store_id), lk = strlen(key);
    uint64_t oh = name_hash(store_id, ls, key, lk), h = entry_hash(oh, inner);
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, h, store_id, ls, key, lk, inner);
    if (e && size != ZG_CACHE_ANY_SIZE && e->ref.size != size) e = NULL; /* decoded under other metadata */
    if (e) {
        e->refs++;
        if (c->head != e) {
            lru_unlink(c, e);
            lru_push_front(c, e);
        }
        c->st.hits++;
    } else {
        c->st.misses++;
        if (gen_out) *gen_out = generation(c, oh);
    }
    pthread_mutex_unlock(&c->mu);
    return e ? &e->ref : NULL;
}

zg_cache_ref *zg_chunk_cache_get(zg_chunk_cache *c, const char *store_id, const char *key, uint32_t inner,
                                 uint64_t *gen_out) {
    return zg_chunk_cache_get_sized(c, store_id, key, inner, ZG_CACHE_ANY_SIZE, gen_out);
}

void zg_chunk_cache_release(zg_chunk_cache *c, zg_cache_ref *ref) {
    if (!c || !ref) return;
    entry *e = (entry *)ref;
    pthread_mutex_lock(&c->mu);
    int last = --e->refs == 0 && !e->linked;
    pthread_mutex_unlock(&c->mu);
    if (last) free_entry(c, e);
}

uint64_t zg_chunk_cache_generation(zg_chunk_cache *c, const char *store_id, const char *key) {
    if (!c || !store_id || !key) return 0;
    uint64_t oh = name_hash(store_id, strlen(store_id), key, strlen(key));
    pthread_mutex_lock(&c->mu);
    uint64_t g = generation(c, oh);
    pthread_mutex_unlock(&c->mu);
    return g;
}

/* A new entry's header and name for (store_id, key, inner) with `data_bytes` of its own bytes behind them (0 for an
 * external entry); NULL when out of memory. *off: where its own bytes begin. */
static entry *make_entry(const char *store_id, size_t ls, const char *key, size_t lk, uint32_t inner,
                         size_t data_bytes, size_t *off) {
    const size_t name_len = ls + 1 + lk;
    *off = data_offset(name_len);
    entry *e = zg_alloc_big(*off + data_bytes);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    memcpy(e->name, store_id, ls);
    e->name[ls] = '/';
    memcpy(e->name + ls + 1, key, lk);
    e->name[name_len] = '\0';
    e->ohash = name_hash(store_id, ls, key, lk);
    e->hash = entry_hash(e->ohash, inner);
    e->name_len = name_len;
    e->inner = inner;
    return e;
}

/* Links e (cost e->cost, bytes ref.size) unless its generation moved or an entry of the same size is there: 1 if
 * kept (or one of the same size was there), else 0 (e then freed, its bytes released). */
static int insert(zg_chunk_cache *c, entry *e, uint64_t gen) {
    entry *dead = NULL, *old = NULL;
    int kept = 1;
    const size_t n = e->ref.size;
    pthread_mutex_lock(&c->mu);
    if (generation(c, e->ohash) != gen) {
        c->st.refused_stale++;
        kept = 0;
        defer_free(&dead, e);
    } else if ((old = find_named(c, e)) && old->ref.size == n) {
        defer_free(&dead, e); /* another reader put it first: the same generation's bytes */
    } else {
        if (old && unlink_entry(c, old)) defer_free(&dead, old); /* of another size: the newer reader's stays */
        while (c->tail && c->bytes + e->cost > c->capacity) {
            entry *v = c->tail;
            c->st.evictions++;
            if (unlink_entry(c, v)) defer_free(&dead, v);
        }
        if (c->entries + 1 > c->mask + 1) grow(c);
        tab_link(c->tab, c->mask, e);
        otab_link(c->otab, c->mask, e);
        lru_push_front(c, e);
        e->linked = 1;
        c->bytes += e->cost;
        c->entries++;
        c->st.inserts++;
    }
    pthread_mutex_unlock(&c->mu);
    free_list(c, dead);
    return kept;
}

/* Whether an entry of cost `cost` may go in (a quarter of the capacity at most); counts the refusal. */
static int fits(zg_chunk_cache *c, size_t cost, size_t n) {
    if (cost <= c->capacity / 4 && cost >= n) return 1;
    pthread_mutex_lock(&c->mu);
    c->st.refused_large++;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int zg_chunk_cache_put(zg_chunk_cache *c, const char *store_id, const char *key, uint32_t inner, uint64_t gen,
                       const void *data, size_t n) {
    if (!c || c->release_bytes || !store_id || !key || (!data && n)) return 0;
    const size_t ls = strlen(store_id), lk = strlen(key);
    if (!fits(c, data_offset(ls + 1 + lk) + n, n)) return 0;
    /* made and filled before the lock: copying a chunk must not hold up the other readers */
    size_t off;
    entry *e = make_entry(store_id, ls, key, lk, inner, n, &off);
    if (!e) return 0;
    if (n) memcpy((uint8_t *)e + off, data, n);
    e->ref.data = (uint8_t *)e + off;
    e->ref.size = n;
    e->cost = off + n;
    return insert(c, e, gen);
}

int zg_chunk_cache_put_external(zg_chunk_cache *c, const char *store_id, const char *key, uint32_t inner,
                                uint64_t gen, void *data, size_t n) {
    if (!c || !data) return 0;
    if (!c->release_bytes || !store_id || !key) {
        if (c->release_bytes) c->release_bytes(c->release_ctx, data, n);
        return 0;
    }
    const size_t ls = strlen(store_id), lk = strlen(key);
    size_t off;
    entry *e = fits(c, data_offset(ls + 1 + lk) + n, n) ? make_entry(store_id, ls, key, lk, inner, 0, &off) : NULL;
    if (!e) {
        c->release_bytes(c->release_ctx, data, n);
        return 0;
    }
    e->external = 1;
    e->ref.data = data;
    e->ref.size = n;
    e->cost = off + n;
    return insert(c, e, gen);
}

/* Under c->mu: the entries of one object out, its slot bumped. */
static void invalidate_object_locked(zg_chunk_cache *c, const char *store_id, size_t ls, const char *key,
                                     size_t lk, uint64_t oh, entry **dead) {
    c->slot[oh % N_SLOTS]++;
    for (entry *e = c->otab[oh & c->mask], *n; e; e = n) {
        n = e->o_next;
        if (e->ohash != oh || !name_is(e, store_id, ls, key, lk)) continue;
        c->st.invalidations++;
        if (unlink_entry(c, e)) defer_free(dead, e);
    }
}

/* Under c->mu: everything named "<store_id>/<prefix>" or below it out, the epoch bumped. NULL store_id: all. */
static void invalidate_prefix_locked(zg_chunk_cache *c, const char *store_id, const char *prefix, entry **dead) {
    c->epoch++;
    size_t ls = store_id ? strlen(store_id) : 0, lp = prefix ? strlen(prefix) : 0;
    while (lp && prefix[lp - 1] == '/') lp--; /* "a/" is "a" */
    for (entry *e = c->head, *n; e; e = n) {
        n = e->lru_next;
        int under = 1;
        if (store_id) {
            /* the entry's name starts with store_id, then "/" — and then, with a prefix, prefix and "/" or its end */
            under = e->name_len > ls && !memcmp(e->name, store_id, ls) && e->name[ls] == '/';
            if (under && lp)
                under = e->name_len >= ls + 1 + lp && !memcmp(e->name + ls + 1, prefix, lp) &&
                        (e->name[ls + 1 + lp] == '/' || e->name[ls + 1 + lp] == '\0');
        }
        if (!under) continue;
        c->st.invalidations++;
        if (unlink_entry(c, e)) defer_free(dead, e);
    }
}

void zg_chunk_cache_invalidate_object(zg_chunk_cache *c, const char *store_id, const char *key) {
    if (!c) return;
    if (!store_id || !key) {
        zg_chunk_cache_invalidate_prefix(c, NULL, NULL);
        return;
    }
    size_t ls = strlen(store_id), lk = strlen(key);
    uint64_t oh = name_hash(store_id, ls, key, lk);
    entry *dead = NULL;
    pthread_mutex_lock(&c->mu);
    invalidate_object_locked(c, store_id, ls, key, lk, oh, &dead);
    pthread_mutex_unlock(&c->mu);
    free_list(c, dead);
}

void zg_chunk_cache_invalidate_prefix(zg_chunk_cache *c, const char *store_id, const char *prefix) {
    if (!c) return;
    entry *dead = NULL;
    pthread_mutex_lock(&c->mu);
    invalidate_prefix_locked(c, store_id, prefix, &dead);
    pthread_mutex_unlock(&c->mu);
    free_list(c, dead);
}

int zg_chunk_cache_active(void) { return atomic_load(&reg_count) > 0; }

void zg_chunk_cache_invalidate_object_all(const char *store_id, const char *key) {
    if (atomic_load(&reg_count) == 0) return;
    pthread_mutex_lock(&reg_mu);
    for (zg_chunk_cache *c = reg_head; c; c = c->reg_next) zg_chunk_cache_invalidate_object(c, store_id, key);
    pthread_mutex_unlock(&reg_mu);
}

void zg_chunk_cache_invalidate_prefix_all(const char *store_id, const char *prefix) {
    if (atomic_load(&reg_count) == 0) return;
    pthread_mutex_lock(&reg_mu);
    for (zg_chunk_cache *c = reg_head; c; c = c->reg_next) zg_chunk_cache_invalidate_prefix(c, store_id, prefix);
    pthread_mutex_unlock(&reg_mu);
}

void zg_chunk_cache_get_stats(zg_chunk_cache *c, zg_chunk_cache_stats *out) {
    memset(out, 0, sizeof *out);
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    out->bytes = c->bytes;
    out->entries = c->entries;
    pthread_mutex_unlock(&c->mu);
}
