#include "exec/scratch.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static _Thread_local zg_thread_scratch *tl_scratch;

static void scratch_destroy(void *p) {
    zg_thread_scratch *s = p;
    zg_scratch_free(&s->codec);
    zg_buf_free(&s->io);
    zg_buf_free(&s->chunk);
    free(s);
}

static void scratch_key_init(void) { pthread_key_create(&scratch_key, scratch_destroy); }

zg_thread_scratch *zg_thread_scratch_get(void) {
    if (tl_scratch) return tl_scratch;
    pthread_once(&scratch_once, scratch_key_init);
    zg_thread_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (pthread_setspecific(scratch_key, s) != 0) {
        free(s);
        return NULL;
    }
    tl_scratch = s;
    return s;
}
