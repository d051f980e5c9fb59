#include "common/tls.h"

#include <pthread.h>
#include <stdlib.h>

/* One pthread key for all of zgpu: its value is this thread's list of objects, destroyed at thread exit. */
typedef struct tls_entry {
    void *obj;
    void (*destroy)(void *);
    struct tls_entry *next;
} tls_entry;

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void destroy_all(void *head) {
    for (tls_entry *e = head, *next; e; e = next) {
        next = e->next;
        e->destroy(e->obj);
        free(e);
    }
}

static void key_init(void) { (void)pthread_key_create(&tls_key, destroy_all); }

void *zg_tls_get(void **slot, size_t size, void (*destroy)(void *)) {
    if (*slot) return *slot;
    pthread_once(&tls_once, key_init);
    tls_entry *e = malloc(sizeof *e);
    void *obj = calloc(1, size);
    if (!e || !obj) {
        free(e);
        free(obj);
        return NULL;
    }
    e->obj = obj;
    e->destroy = destroy;
    e->next = pthread_getspecific(tls_key); /* this thread's earlier objects */
    if (pthread_setspecific(tls_key, e) != 0) {
        free(e);
        free(obj);
        return NULL;
    }
    *slot = obj;
    return obj;
}
