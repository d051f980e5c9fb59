#include "host/scratch.h"

#include <stdlib.h>

#include "common/tls.h"

static _Thread_local void *tl_scratch;

static void scratch_destroy(void *p) {
    zg_thread_scratch *s = p;
    zg_scratch_free(&s->codec);
    zg_buf_free(&s->io);
    zg_buf_free(&s->chunk);
    zg_buf_free(&s->runs);
    free(s);
}

zg_thread_scratch *zg_thread_scratch_get(void) {
    return zg_tls_get(&tl_scratch, sizeof(zg_thread_scratch), scratch_destroy);
}
