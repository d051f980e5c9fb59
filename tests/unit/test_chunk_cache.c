/* The decoded-chunk cache (src/cache/chunk_cache.h): hits return the bytes put; eviction in LRU order with exact
 * byte accounting; the capacity/4 rule; invalidation of an object's inner chunks and of prefixes; the stale-put
 * race (a get, then a write's invalidation, then the put of the old bytes: refused); references that outlive
 * eviction (run under ASan); 8 threads reading, writing and invalidating at once, every hit checked against
 * what was written; a fork while other threads use the cache. Then through the public API: two handles of one
 * array share one store id, and writes, resizes, overwrites and staged commits through one handle (or another
 * context) invalidate what the other's reads would have cached. CPU only. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/array.h"
#include "cache/chunk_cache.h"
#include "test.h"

/* Is (store, key, inner) cached with exactly these bytes? (A lookup: moves it to the recent end.) */
static int holds(zg_chunk_cache *c, const char *store, const char *key, uint32_t inner, const void *want,
                 size_t n) {
    zg_cache_ref *r = zg_chunk_cache_get(c, store, key, inner, NULL);
    int ok = r && r->size == n && (!n || !memcmp(r->data, want, n));
    zg_chunk_cache_release(c, r);
    return ok;
}
static int present(zg_chunk_cache *c, const char *store, const char *key, uint32_t inner) {
    zg_cache_ref *r = zg_chunk_cache_get(c, store, key, inner, NULL);
    zg_chunk_cache_release(c, r);
    return r != NULL;
}
static int put_new(zg_chunk_cache *c, const char *store, const char *key, uint32_t inner, const void *d, size_t n) {
    uint64_t gen = 0;
    zg_cache_ref *r = zg_chunk_cache_get(c, store, key, inner, &gen);
    if (r) {
        zg_chunk_cache_release(c, r);
        return -1;
    }
    return zg_chunk_cache_put(c, store, key, inner, gen, d, n);
}
static zg_chunk_cache_stats stats(zg_chunk_cache *c) {
    zg_chunk_cache_stats s;
    zg_chunk_cache_get_stats(c, &s);
    return s;
}

static void test_off(void) {
    CHECK(zg_chunk_cache_create(0) == NULL);
    uint64_t gen = 7;
    CHECK(zg_chunk_cache_get(NULL, "s", "k", 0, &gen) == NULL);
    CHECK_EQ_U64(gen, 0);
    CHECK(zg_chunk_cache_put(NULL, "s", "k", 0, 0, "x", 1) == 0);
    zg_chunk_cache_release(NULL, NULL);
    zg_chunk_cache_invalidate_object(NULL, "s", "k");
    zg_chunk_cache_invalidate_prefix(NULL, "s", "");
    zg_chunk_cache_free(NULL);
    CHECK_EQ_U64(stats(NULL).entries, 0);
}

static void test_hit(void) {
    zg_chunk_cache *c = zg_chunk_cache_create(1 << 20);
    CHECK(c != NULL);
    uint8_t d[1000];
    for (int i = 0; i < 1000; i++) d[i] = (uint8_t)(i * 7 + 3);
    uint64_t gen = 99;
    CHECK(zg_chunk_cache_get(c, "/data/a.zarr", "c/0/1", 0, &gen) == NULL);
    CHECK(zg_chunk_cache_put(c, "/data/a.zarr", "c/0/1", 0, gen, d, sizeof d) == 1);
    zg_cache_ref *r = zg_chunk_cache_get(c, "/data/a.zarr", "c/0/1", 0, NULL);
    CHECK(r && r->size == sizeof d && !memcmp(r->data, d, sizeof d));
    CHECK(r && ((uintptr_t)r->data & 15) == 0); /* aligned for any element type */
    zg_chunk_cache_release(c, r);
    /* other inner index, other key, other store, a store/key split elsewhere: misses */
    CHECK(!present(c, "/data/a.zarr", "c/0/1", 1));
    CHECK(!present(c, "/data/a.zarr", "c/0/2", 0));
    CHECK(!present(c, "/data/b.zarr", "c/0/1", 0));
    CHECK(!present(c, "/data/a.zarr/c", "0/2", 0));
    /* one object named from a parent store (a group's) is the same object */
    CHECK(holds(c, "/data", "a.zarr/c/0/1", 0, d, sizeof d));
    /* a second put of the same key keeps the first (same generation: same bytes) */
    CHECK(put_new(c, "/data/a.zarr", "c/0/1", 0, d, 10) == -1);
    zg_chunk_cache_stats s = stats(c);
    CHECK_EQ_U64(s.hits, 3);
    CHECK_EQ_U64(s.misses, 5);
    CHECK_EQ_U64(s.inserts, 1);
    CHECK_EQ_U64(s.entries, 1);
    CHECK_EQ_U64(s.bytes, zg_chunk_cache_entry_cost("/data/a.zarr", "c/0/1", sizeof d));
    CHECK(s.bytes > sizeof d && s.bytes < sizeof d + 256);
    /* a reader whose metadata decodes the chunk to another size: a miss, and its put replaces the entry */
    uint8_t other[300];
    memset(other, 0x42, sizeof other);
    CHECK(zg_chunk_cache_get_sized(c, "/data/a.zarr", "c/0/1", 0, sizeof other, &gen) == NULL);
    r = zg_chunk_cache_get_sized(c, "/data/a.zarr", "c/0/1", 0, sizeof d, NULL);
    CHECK(r && r->size == sizeof d);
    zg_chunk_cache_release(c, r);
    CHECK(zg_chunk_cache_put(c, "/data/a.zarr", "c/0/1", 0, gen, other, sizeof other) == 1);
    CHECK(zg_chunk_cache_get_sized(c, "/data/a.zarr", "c/0/1", 0, sizeof d, NULL) == NULL);
    CHECK(holds(c, "/data/a.zarr", "c/0/1", 0, other, sizeof other));
    s = stats(c);
    CHECK_EQ_U64(s.entries, 1);
    CHECK_EQ_U64(s.bytes, zg_chunk_cache_entry_cost("/data/a.zarr", "c/0/1", sizeof other));
    /* an empty chunk is an entry too */
    CHECK(put_new(c, "s", "empty", 0, NULL, 0) == 1);
    CHECK(holds(c, "s", "empty", 0, NULL, 0));
    zg_chunk_cache_free(c);
}

/* Eight entries of one cost in a cache of exactly eight; two touched; one of double cost evicts the two least
 * recently used. */
static void test_lru(void) {
    const size_t n = 200;
    size_t cost = zg_chunk_cache_entry_cost("st", "k0", n);
    zg_chunk_cache *c = zg_chunk_cache_create(8 * cost);
    uint8_t d[8][200], big[1000];
    char key[16];
    for (int k = 0; k < 8; k++) {
        memset(d[k], 'a' + k, n);
        snprintf(key, sizeof key, "k%d", k);
        CHECK(put_new(c, "st", key, 0, d[k], n) == 1);
    }
    zg_chunk_cache_stats s = stats(c);
    CHECK_EQ_U64(s.bytes, 8 * cost);
    CHECK_EQ_U64(s.entries, 8);
    CHECK_EQ_U64(s.evictions, 0);
    /* touch k0 and k1: k2, k3 become the least recently used */
    CHECK(holds(c, "st", "k0", 0, d[0], n));
    CHECK(holds(c, "st", "k1", 0, d[1], n));
    size_t nb = 2 * cost - zg_chunk_cache_entry_cost("st", "kb", 0);
    memset(big, 'z', sizeof big);
    CHECK_EQ_U64(zg_chunk_cache_entry_cost("st", "kb", nb), 2 * cost);
    CHECK(put_new(c, "st", "kb", 0, big, nb) == 1);
    s = stats(c);
    CHECK_EQ_U64(s.evictions, 2);
    CHECK_EQ_U64(s.bytes, 8 * cost);
    CHECK_EQ_U64(s.entries, 7);
    CHECK(!present(c, "st", "k2", 0));
    CHECK(!present(c, "st", "k3", 0));
    for (int k = 0; k < 8; k++) {
        if (k == 2 || k == 3) continue;
        snprintf(key, sizeof key, "k%d", k);
        CHECK_MSG(holds(c, "st", key, 0, d[k], n), "k%d", k);
    }
    CHECK(holds(c, "st", "kb", 0, big, nb));
    /* now the order is k0 k1 k4 .. k7 kb: one more entry of one cost evicts k0 alone */
    CHECK(put_new(c, "st", "k8", 0, d[0], n) == 1);
    CHECK(!present(c, "st", "k0", 0));
    CHECK(present(c, "st", "k1", 0));
    CHECK_EQ_U64(stats(c).evictions, 3);
    CHECK_EQ_U64(stats(c).bytes, 8 * cost);
    zg_chunk_cache_free(c);
}

/* An entry may cost a quarter of the capacity, not a byte more. */
static void test_quarter(void) {
    const size_t cap = 40000;
    zg_chunk_cache *c = zg_chunk_cache_create(cap);
    size_t n = cap / 4 - zg_chunk_cache_entry_cost("s", "k", 0);
    uint8_t *d = calloc(1, cap);
    CHECK(put_new(c, "s", "big", 0, d, n + 1) == 0);
    CHECK_EQ_U64(stats(c).refused_large, 1);
    CHECK(put_new(c, "s", "k", 0, d, n) == 1);
    CHECK(put_new(c, "s", "whole", 0, d, cap) == 0);
    CHECK(put_new(c, "s", "huge", 0, d, SIZE_MAX - 8) == 0); /* cost overflows: refused, not wrapped */
    zg_chunk_cache_stats s = stats(c);
    CHECK_EQ_U64(s.refused_large, 3);
    CHECK_EQ_U64(s.entries, 1);
    CHECK_EQ_U64(s.bytes, cap / 4);
    /* four such entries fit, a fifth evicts one */
    char key[8];
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "%c", 'a' + i);
        CHECK(put_new(c, "s", key, 0, d, n) == 1);
    }
    CHECK_EQ_U64(stats(c).entries, 4);
    CHECK_EQ_U64(stats(c).evictions, 1);
    free(d);
    zg_chunk_cache_free(c);
}

static void test_invalidate(void) {
    zg_chunk_cache *c = zg_chunk_cache_create(1 << 20);
    uint8_t d[64];
    for (uint32_t i = 0; i < 10; i++) {
        memset(d, (int)i, sizeof d);
        CHECK(put_new(c, "S", "shard/0", i, d, sizeof d) == 1);
    }
    CHECK(put_new(c, "S", "shard/1", 0, d, sizeof d) == 1);
    CHECK(put_new(c, "T", "shard/0", 3, d, sizeof d) == 1);
    CHECK(put_new(c, "S", "shard/0x", 0, d, sizeof d) == 1);
    CHECK_EQ_U64(stats(c).entries, 13);
    zg_chunk_cache_invalidate_object(c, "S", "shard/0");
    zg_chunk_cache_stats s = stats(c);
    CHECK_EQ_U64(s.invalidations, 10);
    CHECK_EQ_U64(s.entries, 3);
    CHECK_EQ_U64(s.bytes, zg_chunk_cache_entry_cost("S", "shard/1", sizeof d) +
                              zg_chunk_cache_entry_cost("T", "shard/0", sizeof d) +
                              zg_chunk_cache_entry_cost("S", "shard/0x", sizeof d));
    for (uint32_t i = 0; i < 10; i++) CHECK(!present(c, "S", "shard/0", i));
    CHECK(present(c, "S", "shard/1", 0));
    CHECK(present(c, "T", "shard/0", 3));
    CHECK(present(c, "S", "shard/0x", 0));
    /* many inner chunks of one object (past a table growth), invalidated together */
    for (uint32_t i = 0; i < 3000; i++) CHECK(put_new(c, "S", "shard/2", i, &i, sizeof i) == 1);
    CHECK_EQ_U64(stats(c).entries, 3003);
    for (uint32_t i = 0; i < 3000; i += 97) CHECK(holds(c, "S", "shard/2", i, &i, sizeof i));
    zg_chunk_cache_invalidate_object(c, "S", "shard/2");
    CHECK_EQ_U64(stats(c).entries, 3);
    zg_chunk_cache_free(c);
}

static void test_prefix(void) {
    zg_chunk_cache *c = zg_chunk_cache_create(1 << 20);
    const char *keys[][2] = {{"/g", "a/c/0"}, {"/g", "a/c/1"}, {"/g", "a"},   {"/g", "ab/c/0"},
                             {"/g/a", "c/2"}, {"/g2", "a/c/0"}, {"/gx", "y"}, {"/g/ab", "c/1"}};
    const int n = 8;
    for (int i = 0; i < n; i++) CHECK(put_new(c, keys[i][0], keys[i][1], 0, "v", 1) == 1);
    zg_chunk_cache_invalidate_prefix(c, "/g", "a/"); /* "/g/a" and below, not "/g/ab" */
    const int after_a[] = {0, 0, 0, 1, 0, 1, 1, 1};
    for (int i = 0; i < n; i++)
        CHECK_MSG(present(c, keys[i][0], keys[i][1], 0) == after_a[i], "%s/%s", keys[i][0], keys[i][1]);
    zg_chunk_cache_invalidate_prefix(c, "/g/ab", ""); /* a store's whole contents, named by a parent or not */
    CHECK(!present(c, "/g", "ab/c/0", 0));
    CHECK(!present(c, "/g/ab", "c/1", 0));
    CHECK(present(c, "/g2", "a/c/0", 0));
    CHECK(present(c, "/gx", "y", 0));
    zg_chunk_cache_invalidate_prefix(c, "/g", "");
    CHECK(present(c, "/g2", "a/c/0", 0));
    CHECK_EQ_U64(stats(c).entries, 2);
    zg_chunk_cache_invalidate_prefix(c, NULL, NULL); /* no name: everything */
    CHECK_EQ_U64(stats(c).entries, 0);
    CHECK_EQ_U64(stats(c).bytes, 0);
    zg_chunk_cache_free(c);
}

/* The race the generations close: get misses, a write lands and invalidates, then the reader puts the old
 * bytes it decoded. */
static void test_stale_put(void) {
    zg_chunk_cache *c = zg_chunk_cache_create(1 << 20);
    uint64_t g0 = 0, g1 = 0, g2 = 0;
    CHECK(zg_chunk_cache_get(c, "S", "c/0", 0, &g0) == NULL);
    zg_chunk_cache_invalidate_object(c, "S", "c/0"); /* the write's new object is in place */
    CHECK(zg_chunk_cache_put(c, "S", "c/0", 0, g0, "old", 3) == 0);
    CHECK_EQ_U64(stats(c).refused_stale, 1);
    CHECK(!present(c, "S", "c/0", 0));
    /* a read begun after the write: kept */
    CHECK(zg_chunk_cache_get(c, "S", "c/0", 0, &g1) == NULL);
    CHECK(g1 != g0);
    CHECK(zg_chunk_cache_put(c, "S", "c/0", 0, g1, "new", 3) == 1);
    CHECK(holds(c, "S", "c/0", 0, "new", 3));
    /* the same through an object invalidated via the whole process's caches */
    CHECK(zg_chunk_cache_get(c, "S", "c/1", 0, &g2) == NULL);
    zg_chunk_cache_invalidate_object_all("S", "c/1");
    CHECK(zg_chunk_cache_put(c, "S", "c/1", 0, g2, "old", 3) == 0);
    /* another object's write leaves this read's put alone (unless they share a generation slot) */
    CHECK(zg_chunk_cache_get(c, "S", "c/2", 0, &g2) == NULL);
    for (int k = 0; k < 100; k++) {
        char other[16];
        snprintf(other, sizeof other, "c/x%d", k);
        uint64_t before = zg_chunk_cache_generation(c, "S", "c/2");
        zg_chunk_cache_invalidate_object(c, "S", other);
        if (zg_chunk_cache_generation(c, "S", "c/2") == before) break;
        g2 = zg_chunk_cache_generation(c, "S", "c/2"); /* shared slot: a new read */
    }
    CHECK(zg_chunk_cache_put(c, "S", "c/2", 0, g2, "two", 3) == 1);
    /* a prefix invalidation anywhere refuses every put in flight in the cache */
    CHECK(zg_chunk_cache_get(c, "S", "c/3", 0, &g2) == NULL);
    zg_chunk_cache_invalidate_prefix(c, "OTHER", "");
    CHECK(zg_chunk_cache_put(c, "S", "c/3", 0, g2, "three", 5) == 0);
    CHECK(holds(c, "S", "c/2", 0, "two", 3)); /* and drops only what is below it */
    CHECK(holds(c, "S", "c/0", 0, "new", 3));
    CHECK_EQ_U64(stats(c).refused_stale, 3);
    zg_chunk_cache_free(c);
}

/* A held entry survives its eviction and its invalidation; the last release frees it (ASan: no leak, no use
 * after free). */
static void test_refs(void) {
    size_t cost = zg_chunk_cache_entry_cost("S", "k0", 1000);
    zg_chunk_cache *c = zg_chunk_cache_create(4 * cost);
    uint8_t d[1000];
    for (int i = 0; i < 1000; i++) d[i] = (uint8_t)(i ^ 0x5a);
    CHECK(put_new(c, "S", "held", 0, d, sizeof d) == 1);
    zg_cache_ref *a = zg_chunk_cache_get(c, "S", "held", 0, NULL);
    zg_cache_ref *b = zg_chunk_cache_get(c, "S", "held", 0, NULL);
    CHECK(a && a == b);
    char key[16];
    for (int k = 0; k < 6; k++) { /* evicts "held" */
        snprintf(key, sizeof key, "k%d", k);
        CHECK(put_new(c, "S", key, 0, d, sizeof d) == 1);
    }
    CHECK(!present(c, "S", "held", 0));
    CHECK(stats(c).bytes <= 4 * cost);
    CHECK(a && a->size == sizeof d && !memcmp(a->data, d, sizeof d));
    zg_chunk_cache_release(c, a);
    CHECK(b && !memcmp(b->data, d, sizeof d));
    zg_chunk_cache_release(c, b);
    /* held across an invalidation, then across the cache's other traffic */
    zg_cache_ref *r = zg_chunk_cache_get(c, "S", "k5", 0, NULL);
    CHECK(r != NULL);
    zg_chunk_cache_invalidate_prefix(c, "S", "");
    CHECK(put_new(c, "S", "k5", 0, "new", 3) == 1);
    CHECK(r && r->size == sizeof d && !memcmp(r->data, d, sizeof d));
    CHECK(holds(c, "S", "k5", 0, "new", 3));
    zg_chunk_cache_release(c, r);
    zg_chunk_cache_free(c);
}

/* ---- an external cache (device memory in zgpu; malloc'd blocks here): every block released exactly once ---- */

typedef struct owner {
    int released;        /* blocks given back */
    size_t released_bytes;
    void *last;
} owner;
static void give_back(void *ctx, void *data, size_t n) {
    owner *o = ctx;
    o->released++;
    o->released_bytes += n;
    o->last = data;
    free(data);
}
static void *block(size_t n, int tag) {
    uint8_t *p = malloc(n);
    for (size_t i = 0; p && i < n; i++) p[i] = (uint8_t)(tag * 7 + i);
    return p;
}

static void test_external(void) {
    owner o = {0, 0, NULL};
    CHECK(zg_chunk_cache_create_external(0, give_back, &o) == NULL);
    CHECK(zg_chunk_cache_create_external(1000, NULL, NULL) == NULL);
    const size_t n = 500, cost = zg_chunk_cache_entry_cost("D", "k0", n);
    zg_chunk_cache *c = zg_chunk_cache_create_external(4 * cost, give_back, &o);
    CHECK(c != NULL);
    /* a plain put is refused (its bytes would be the cache's own, which an external cache does not free) */
    CHECK(zg_chunk_cache_put(c, "D", "k0", 0, 0, "xyz", 3) == 0);
    /* kept: the hit hands out the owner's pointer itself, not a copy */
    void *b0 = block(n, 0);
    uint64_t gen = 0;
    CHECK(zg_chunk_cache_get(c, "D", "k0", 0, &gen) == NULL);
    CHECK(zg_chunk_cache_put_external(c, "D", "k0", 0, gen, b0, n) == 1);
    zg_cache_ref *r = zg_chunk_cache_get_sized(c, "D", "k0", 0, n, NULL);
    CHECK(r && r->data == b0 && r->size == n);
    CHECK_EQ_U64(o.released, 0);
    /* held across its eviction: released by the last release, not before */
    for (int k = 1; k <= 4; k++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", k);
        CHECK(zg_chunk_cache_put_external(c, "D", key, 0, zg_chunk_cache_generation(c, "D", key), block(n, k), n) == 1);
    }
    CHECK(!present(c, "D", "k0", 0));
    CHECK_EQ_U64(o.released, 0);
    CHECK(r && ((const uint8_t *)r->data)[3] == 3);
    zg_chunk_cache_release(c, r);
    CHECK_EQ_U64(o.released, 1);
    CHECK(o.last == b0);
    CHECK(stats(c).bytes == 4 * cost && stats(c).entries == 4);
    /* refused puts give the bytes back at once: stale, too large, or already there at that size */
    uint64_t g1 = zg_chunk_cache_generation(c, "D", "new");
    zg_chunk_cache_invalidate_object(c, "D", "new");
    void *stale = block(n, 9);
    CHECK(zg_chunk_cache_put_external(c, "D", "new", 0, g1, stale, n) == 0);
    CHECK_EQ_U64(o.released, 2);
    CHECK(o.last == stale);
    void *big = block(4 * cost, 1);
    CHECK(zg_chunk_cache_put_external(c, "D", "big", 0, zg_chunk_cache_generation(c, "D", "big"), big, 4 * cost) == 0);
    CHECK_EQ_U64(o.released, 3);
    CHECK(o.last == big);
    void *again = block(n, 4);
    CHECK(zg_chunk_cache_put_external(c, "D", "k4", 0, zg_chunk_cache_generation(c, "D", "k4"), again, n) == 1);
    CHECK_EQ_U64(o.released, 4);
    CHECK(o.last == again);
    CHECK(stats(c).refused_stale == 1 && stats(c).refused_large == 1);
    /* a writer's invalidation (through the process's list) releases what no reader holds */
    zg_chunk_cache_invalidate_object_all("D", "k1");
    CHECK_EQ_U64(o.released, 5);
    CHECK(!present(c, "D", "k1", 0));
    /* the rest go with the cache */
    zg_chunk_cache_free(c);
    CHECK_EQ_U64(o.released, 8);
    CHECK_EQ_U64(o.released_bytes, 7 * n + 4 * cost);
    /* a plain cache will not take an external block (and leaves it to its owner) */
    zg_chunk_cache *plain = zg_chunk_cache_create(4 * cost);
    void *mine = block(n, 5);
    CHECK(zg_chunk_cache_put_external(plain, "D", "k", 0, 0, mine, n) == 0);
    CHECK_EQ_U64(o.released, 8);
    free(mine);
    zg_chunk_cache_free(plain);
}

/* ---- eight threads at once ---- */

enum { N_STORES = 2, N_OBJ = 48, N_INNER = 4, N_THREADS = 8 };
static const char *stores[N_STORES] = {"/stress/one", "/stress/two"};
static atomic_ulong version[N_STORES][N_OBJ]; /* what a fetch of the object would read now */
static atomic_ulong done[N_STORES][N_OBJ];    /* the newest version whose invalidation has finished */
static atomic_int stop;

typedef struct stress_arg {
    zg_chunk_cache *c;
    unsigned seed;
    long gets, hits, bad, writes;
} stress_arg;

/* A chunk's bytes: who it is, the version it was read at, and a pattern of both; size varies by key. */
typedef struct chunk_head {
    uint32_t store, obj, inner, pad;
    uint64_t version;
} chunk_head;
static size_t chunk_size(int s, int o, int i) {
    return sizeof(chunk_head) + 64 + (size_t)((s * 131 + o * 31 + i * 7) % 900);
}
static uint8_t pattern(const chunk_head *h, size_t k) {
    return (uint8_t)(h->obj * 13 + h->inner * 5 + h->version * 3 + k);
}

static void raise_done(atomic_ulong *d, unsigned long v) {
    unsigned long cur = atomic_load(d);
    while (cur < v && !atomic_compare_exchange_weak(d, &cur, v)) {}
}

static void *stress_main(void *p) {
    stress_arg *t = p;
    uint8_t buf[sizeof(chunk_head) + 1024];
    char key[32];
    while (!atomic_load(&stop)) {
        unsigned r = rand_r(&t->seed);
        int s = (int)(r % N_STORES), o = (int)((r / 2) % N_OBJ), i = (int)((r / 97) % N_INNER);
        int op = (int)((r >> 20) % 1000);
        snprintf(key, sizeof key, "c/%d", o);
        if (op < 60) { /* a writer: the new object in place, then the invalidation (host_write.c's order) */
            unsigned long v = atomic_fetch_add(&version[s][o], 1) + 1;
            zg_chunk_cache_invalidate_object(t->c, stores[s], key);
            raise_done(&done[s][o], v);
            t->writes++;
        } else if (op < 62) { /* an array replaced: every object of the store */
            unsigned long v[N_OBJ];
            for (int k = 0; k < N_OBJ; k++) v[k] = atomic_fetch_add(&version[s][k], 1) + 1;
            zg_chunk_cache_invalidate_prefix(t->c, stores[s], "");
            for (int k = 0; k < N_OBJ; k++) raise_done(&done[s][k], v[k]);
            t->writes++;
        } else { /* a reader */
            unsigned long floor = atomic_load(&done[s][o]);
            uint64_t gen = 0;
            zg_cache_ref *ref = zg_chunk_cache_get(t->c, stores[s], key, (uint32_t)i, &gen);
            t->gets++;
            if (ref) {
                t->hits++;
                chunk_head h;
                int ok = ref->size == chunk_size(s, o, i) && ref->size >= sizeof h;
                if (ok) {
                    memcpy(&h, ref->data, sizeof h);
                    ok = h.store == (uint32_t)s && h.obj == (uint32_t)o && h.inner == (uint32_t)i && h.version >= floor;
                    for (size_t k = sizeof h; ok && k < ref->size; k++) ok = ref->data[k] == pattern(&h, k);
                }
                if (!ok) t->bad++;
                zg_chunk_cache_release(t->c, ref);
            } else {
                chunk_head h = {(uint32_t)s, (uint32_t)o, (uint32_t)i, 0, atomic_load(&version[s][o])}; /* "fetch" */
                size_t n = chunk_size(s, o, i);
                memcpy(buf, &h, sizeof h);
                for (size_t k = sizeof h; k < n; k++) buf[k] = pattern(&h, k);
                zg_chunk_cache_put(t->c, stores[s], key, (uint32_t)i, gen, buf, n);
            }
        }
    }
    return NULL;
}

static void test_threads(void) {
    zg_chunk_cache *c = zg_chunk_cache_create(96 << 10); /* about a third of the keys' bytes: evictions too */
    stress_arg a[N_THREADS];
    pthread_t th[N_THREADS];
    atomic_store(&stop, 0);
    for (int k = 0; k < N_THREADS; k++) {
        a[k] = (stress_arg){c, 1234u + 77u * (unsigned)k, 0, 0, 0, 0};
        CHECK(pthread_create(&th[k], NULL, stress_main, &a[k]) == 0);
    }
    struct timespec half = {0, 500 * 1000 * 1000};
    nanosleep(&half, NULL);
    atomic_store(&stop, 1);
    long gets = 0, hits = 0, bad = 0, writes = 0;
    for (int k = 0; k < N_THREADS; k++) {
        pthread_join(th[k], NULL);
        gets += a[k].gets, hits += a[k].hits, bad += a[k].bad, writes += a[k].writes;
    }
    zg_chunk_cache_stats s = stats(c);
    printf("threads: %ld gets, %ld hits, %ld writes, %" PRIu64 " evictions, %" PRIu64 " stale puts refused\n", gets,
           hits, writes, s.evictions, s.refused_stale);
    CHECK_MSG(bad == 0, "%ld of %ld hits held bytes other than the last written for their key", bad, hits);
    CHECK_EQ_U64(s.hits + s.misses, (uint64_t)gets);
    CHECK_EQ_U64(s.hits, (uint64_t)hits);
    CHECK(hits > 100 && s.evictions > 0 && writes > 10); /* (a sanitizer build runs a few thousand gets) */
    CHECK(s.bytes <= s.capacity);
    /* what stays is the newest version of each key */
    long stale = 0;
    for (int st = 0; st < N_STORES; st++)
        for (int o = 0; o < N_OBJ; o++)
            for (int i = 0; i < N_INNER; i++) {
                char key[32];
                snprintf(key, sizeof key, "c/%d", o);
                zg_cache_ref *r = zg_chunk_cache_get(c, stores[st], key, (uint32_t)i, NULL);
                chunk_head h;
                if (r) {
                    memcpy(&h, r->data, sizeof h);
                    stale += h.version != atomic_load(&version[st][o]);
                }
                zg_chunk_cache_release(c, r);
            }
    CHECK_MSG(stale == 0, "%ld entries older than their object", stale);
    zg_chunk_cache_free(c);
}

/* ---- fork while other threads hold the cache's lock now and then ---- */

static void *busy_main(void *p) {
    zg_chunk_cache *c = p;
    uint8_t d[256] = {1};
    char key[16];
    for (unsigned k = 0; !atomic_load(&stop); k++) {
        snprintf(key, sizeof key, "k%u", k % 64);
        put_new(c, "F", key, 0, d, sizeof d);
        zg_chunk_cache_invalidate_object_all("F", key);
    }
    return NULL;
}

static void test_fork(void) {
    zg_chunk_cache *c = zg_chunk_cache_create(64 << 10);
    pthread_t th[2];
    atomic_store(&stop, 0);
    for (int k = 0; k < 2; k++) CHECK(pthread_create(&th[k], NULL, busy_main, c) == 0);
    int children_ok = 1;
    for (int round = 0; round < 20; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10); /* a deadlock kills the child */
            int ok = put_new(c, "child", "x", 0, "abc", 3) == 1 && holds(c, "child", "x", 0, "abc", 3);
            zg_chunk_cache_invalidate_prefix_all("child", "");
            ok = ok && !present(c, "child", "x", 0);
            zg_chunk_cache *mine = zg_chunk_cache_create(4096);
            ok = ok && mine && put_new(mine, "m", "k", 0, "z", 1) == 1;
            zg_chunk_cache_free(mine);
            _exit(ok ? 0 : 1);
        }
        int status = 0;
        children_ok &= pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK_MSG(children_ok, "a forked child deadlocked or failed on the cache");
    atomic_store(&stop, 1);
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    zg_chunk_cache_free(c);
}

/* ---- through the public API ---- */

static const char *META =
    "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[8,8],\"data_type\":\"int32\",\"chunk_grid\":"
    "{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[4,8]}},\"chunk_key_encoding\":{\"name\":"
    "\"default\",\"configuration\":{\"separator\":\"/\"}},\"fill_value\":0,\"codecs\":[{\"name\":\"bytes\","
    "\"configuration\":{\"endian\":\"little\"}}]}";

static zgpu_context *ctx_with_cache(size_t bytes) {
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 2;
    o.cache_bytes = bytes;
    zgpu_context *c = NULL;
    return zgpu_context_create(&o, &c) == ZGPU_OK ? c : NULL;
}

/* What a read through `a` would do after decoding chunk `key`: a put with the generation its lookup saw. */
static int read_into_cache(zgpu_array *a, const char *key) {
    return put_new(a->ctx->cache, a->store->id, key, 0, "decoded", 7) == 1;
}
static int cached(zgpu_array *a, const char *key) { return present(a->ctx->cache, a->store->id, key, 0); }

static void test_api(const char *dir) {
    char path[512], alias[600], link[600];
    snprintf(path, sizeof path, "%s/a.zarr", dir);
    snprintf(alias, sizeof alias, "%s/.//a.zarr/", dir);
    snprintf(link, sizeof link, "%s/link.zarr", dir);
    zgpu_context *off = ctx_with_cache(0), *ctx = ctx_with_cache(1 << 20), *other = ctx_with_cache(1 << 20);
    CHECK(off && ctx && other);
    if (!off || !ctx || !other) return;
    CHECK(off->cache == NULL && ctx->cache != NULL);
    zgpu_array *w = NULL, *r = NULL, *r2 = NULL, *r3 = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, META, 0, &w));
    if (!w) return;
    int32_t data[64];
    for (int i = 0; i < 64; i++) data[i] = i + 1;
    uint64_t start[2] = {0, 0}, count[2] = {8, 8};
    CHECK_OK(zgpu_array_write(w, start, count, data, NULL));
    CHECK(symlink(path, link) == 0);
    CHECK_OK(zgpu_array_open(ctx, path, &r));
    CHECK_OK(zgpu_array_open(ctx, alias, &r2));
    CHECK_OK(zgpu_array_open(other, link, &r3));
    if (!r || !r2 || !r3) return;
    /* one store id for every handle of the location, however it is spelled */
    CHECK_STR(r->store->id, w->store->id);
    CHECK_STR(r2->store->id, w->store->id);
    CHECK_STR(r3->store->id, w->store->id);
    CHECK(w->store->id[0] == '/');

    /* a write of one chunk through another handle drops it, and only it */
    CHECK(read_into_cache(r, "c/0/0") && read_into_cache(r, "c/1/0") && read_into_cache(r3, "c/0/0"));
    CHECK(cached(r2, "c/0/0"));
    uint64_t s1[2] = {0, 0}, c1[2] = {1, 1};
    CHECK_OK(zgpu_array_write(w, s1, c1, data, NULL));
    CHECK(!cached(r, "c/0/0"));
    CHECK(!cached(r3, "c/0/0")); /* another context's cache too */
    CHECK(cached(r, "c/1/0"));
    /* a read that looked up before the write and decoded the old bytes: its put is refused */
    uint64_t gen = 0;
    CHECK(zg_chunk_cache_get(ctx->cache, r->store->id, "c/0/0", 0, &gen) == NULL);
    CHECK_OK(zgpu_array_write(w, s1, c1, data, NULL));
    CHECK(zg_chunk_cache_put(ctx->cache, r->store->id, "c/0/0", 0, gen, "old", 3) == 0);
    /* a chunk written to the fill value everywhere is deleted: dropped too */
    CHECK(read_into_cache(r, "c/0/0"));
    int32_t zeros[32] = {0};
    uint64_t c4[2] = {4, 8};
    CHECK_OK(zgpu_array_write(w, start, c4, zeros, NULL));
    CHECK(!cached(r, "c/0/0"));

    /* a resize that deletes a chunk drops it */
    CHECK(read_into_cache(r, "c/0/0"));
    uint64_t smaller[2] = {4, 8};
    CHECK_OK(zgpu_array_resize(w, smaller));
    CHECK(!cached(r, "c/1/0"));
    CHECK(cached(r, "c/0/0")); /* kept: still inside */

    /* an overwrite (a new tree swapped in) drops everything below the path */
    CHECK(read_into_cache(r3, "c/0/0"));
    zgpu_array *w2 = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, META, ZGPU_CREATE_OVERWRITE, &w2));
    CHECK(!cached(r, "c/0/0"));
    CHECK(!cached(r3, "c/0/0"));
    zgpu_array_close(w2);
    w2 = NULL;

    /* a staged create: nothing dropped until the commit, everything below the path after it */
    CHECK(read_into_cache(r, "c/0/0"));
    CHECK_OK(zgpu_array_create(ctx, path, META, ZGPU_CREATE_STAGED | ZGPU_CREATE_OVERWRITE, &w2));
    if (w2) {
        CHECK(strcmp(w2->store->id, r->store->id) != 0); /* it writes into its stage */
        CHECK_OK(zgpu_array_write(w2, start, c4, data, NULL));
        CHECK(cached(r, "c/0/0"));
        CHECK(read_into_cache(w2, "c/0/0")); /* the staged handle's own reads */
        CHECK_OK(zgpu_array_commit(w2));
        CHECK(!cached(r, "c/0/0"));
        CHECK_STR(w2->store->id, r->store->id);
        zgpu_array_close(w2);
    }
    CHECK_EQ_U64(stats(ctx->cache).entries, 0); /* the stage's entries went with it */

    /* a staged create discarded (closed without a commit): its entries go, the path's stay */
    CHECK(read_into_cache(r, "c/0/0"));
    w2 = NULL;
    CHECK_OK(zgpu_array_create(ctx, path, META, ZGPU_CREATE_STAGED | ZGPU_CREATE_OVERWRITE, &w2));
    if (w2) CHECK(read_into_cache(w2, "c/0/0"));
    zgpu_array_close(w2);
    CHECK(cached(r, "c/0/0"));
    CHECK_EQ_U64(stats(ctx->cache).entries, 1);

    /* a group created over the array's path (replacing it) drops it */
    zgpu_group *g = NULL;
    CHECK_OK(zgpu_group_create(ctx, path, 3, NULL, 1, &g));
    zgpu_group_close(g);
    CHECK(!cached(r, "c/0/0"));

    /* an array created where one was deleted outside zgpu: nothing of the old one stands */
    char path2[600];
    snprintf(path2, sizeof path2, "%s/b.zarr", dir);
    zgpu_array *b = NULL;
    CHECK_OK(zgpu_array_create(ctx, path2, META, 0, &b));
    if (b) {
        CHECK_OK(zgpu_array_write(b, start, count, data, NULL));
        CHECK(read_into_cache(b, "c/0/0"));
        zgpu_array_close(b);
        b = NULL;
    }
    CHECK(zt_remove_dir(path2) == 0);
    CHECK_OK(zgpu_array_create(ctx, path2, META, 0, &b));
    if (b) CHECK(!cached(b, "c/0/0"));
    zgpu_array_close(b);

    zgpu_array_close(w);
    zgpu_array_close(r);
    zgpu_array_close(r2);
    zgpu_array_close(r3);
    zgpu_context_free(off);
    zgpu_context_free(ctx);
    zgpu_context_free(other);
}

/* Remote stores' ids: the base URL; for S3 the endpoint, bucket and prefix (not the bucket alone). */
static void test_remote_ids(void) {
    zgpu_context *ctx = ctx_with_cache(0);
    zg_store *s = NULL;
    CHECK_OK(zg_store_open(ctx, "http://127.0.0.1:9/base/a.zarr/", &s));
    if (s) CHECK_STR(s->id, "http://127.0.0.1:9/base/a.zarr");
    zg_store_free(s);
    zgpu_context_free(ctx);
    zgpu_remote_options ro;
    zgpu_remote_options_init(&ro);
    ro.s3_endpoint = "http://127.0.0.1:9";
    ro.s3_anonymous = 1;
    ro.s3_region = "us-east-1";
    zgpu_context_options o;
    zgpu_context_options_init(&o);
    o.num_threads = 1;
    o.remote = &ro;
    ctx = NULL;
    CHECK_OK(zgpu_context_create(&o, &ctx));
    s = NULL;
    if (ctx) CHECK_OK(zg_store_open(ctx, "s3://bucket/group/a.zarr", &s));
    if (s) CHECK_STR(s->id, "http://127.0.0.1:9/bucket/group/a.zarr");
    zg_store_free(s);
    zgpu_context_free(ctx);
}

int main(void) {
    test_off();
    test_hit();
    test_lru();
    test_quarter();
    test_invalidate();
    test_prefix();
    test_stale_put();
    test_refs();
    test_external();
    test_threads();
    test_fork();
    char dir[] = "/tmp/zgpu_cache_XXXXXX";
    if (!mkdtemp(dir)) return 2;
    test_api(dir);
    test_remote_ids();
    zt_remove_dir(dir);
    TEST_MAIN_END();
}
