/* The slab pipeline (slab.h): reader threads fill buffers with slabs, taken in order and shared part by part; the
 * calling thread writes them out in order. With several slabs in flight the decoders stay busy across the end of
 * a slab (its last parts decode while the next slab's begin), and the writer overlaps both. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "slab.h"

typedef struct slot_state {
    uint64_t slab, parts, claimed, done;
    int busy; /* holds a slab (being read, or read and waiting to be written) */
} slot_state;

typedef struct pipe_state {
    const cli_slabs *s;
    const cli_pipe_ops *ops;
    int n_slots;
    slot_state *slot;
    int cur;       /* the slot whose parts are being handed out, -1 when none */
    uint64_t next; /* the next slab to begin */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    char err[1024]; /* the first failure's message */
} pipe_state;

static void fail(pipe_state *p) { /* under the lock: keeps the first message */
    if (!p->stop) snprintf(p->err, sizeof p->err, "%s", *cli_errmsg() ? cli_errmsg() : "a slab failed");
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
}

/* Under the lock: a part to read (*slot, *part), waiting for a free buffer when a slab must begin; 0 when there
 * is nothing left (or the pipeline stopped). Slabs begin in order, so the lowest slab not yet written always has a
 * buffer or gets the next one freed. */
static int take_part(pipe_state *p, int *slot, uint64_t *part) {
    for (;;) {
        if (p->stop) return 0;
        if (p->cur >= 0 && p->slot[p->cur].claimed < p->slot[p->cur].parts) {
            *slot = p->cur;
            *part = p->slot[p->cur].claimed++;
            return 1;
        }
        if (p->next >= p->s->n) return 0;
        int b = -1;
        for (int k = 0; k < p->n_slots && b < 0; k++)
            if (!p->slot[k].busy) b = k;
        if (b < 0) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        uint64_t start[ZGPU_MAX_DIMS], count[ZGPU_MAX_DIMS];
        cli_slabs_get(p->s, p->next, start, count);
        const uint64_t parts = p->ops->begin(p->ops->user, b, p->next, start, count);
        if (parts == 0) {
            fail(p);
            return 0;
        }
        p->slot[b] = (slot_state){.slab = p->next++, .parts = parts, .busy = 1};
        p->cur = b;
    }
}

typedef struct reader_arg {
    pipe_state *p;
    int id;
} reader_arg;

static void *reader_main(void *arg) {
    reader_arg *ra = arg;
    pipe_state *p = ra->p;
    int b;
    uint64_t j;
    pthread_mutex_lock(&p->mu);
    while (take_part(p, &b, &j)) {
        pthread_mutex_unlock(&p->mu);
        const int rc = p->ops->read(p->ops->user, ra->id, b, j);
        pthread_mutex_lock(&p->mu);
        if (rc) {
            fail(p);
            break;
        }
        if (++p->slot[b].done == p->slot[b].parts) pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Everything on this thread: one buffer, one reader. */
static int run_inline(const cli_slabs *s, const cli_pipe_ops *ops) {
    uint64_t start[ZGPU_MAX_DIMS], count[ZGPU_MAX_DIMS];
    for (uint64_t i = 0; i < s->n; i++) {
        cli_slabs_get(s, i, start, count);
        const uint64_t parts = ops->begin(ops->user, 0, i, start, count);
        if (parts == 0) return -1;
        for (uint64_t j = 0; j < parts; j++)
            if (ops->read(ops->user, 0, 0, j)) return -1;
        if (ops->write && ops->write(ops->user, 0)) return -1;
    }
    return 0;
}

int cli_pipe_run(const cli_slabs *s, int n_readers, int n_buffers, const cli_pipe_ops *ops) {
    if (s->n == 0) return 0;
    if (n_readers < 1) n_readers = 1;
    if (n_buffers < 1) n_buffers = 1;
    if (n_readers == 1 && n_buffers == 1) return run_inline(s, ops);
    pipe_state p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.ops = ops;
    p.n_slots = n_buffers;
    p.cur = -1;
    p.slot = calloc((size_t)n_buffers, sizeof *p.slot);
    pthread_t *th = calloc((size_t)n_readers, sizeof *th);
    reader_arg *ra = calloc((size_t)n_readers, sizeof *ra);
    if (!p.slot || !th || !ra) {
        free(p.slot); free(th); free(ra);
        return cli_err("out of memory");
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    int started = 0;
    for (; started < n_readers; started++) {
        ra[started] = (reader_arg){&p, started};
        if (pthread_create(&th[started], NULL, reader_main, &ra[started]) != 0) break;
    }
    pthread_mutex_lock(&p.mu);
    if (started == 0) {
        cli_err("cannot start a reader thread");
        fail(&p);
    }
    for (uint64_t w = 0; w < s->n && !p.stop; w++) {
        int b = -1;
        for (;;) { /* slab w, once all its parts are in */
            for (int k = 0; k < n_buffers && b < 0; k++)
                if (p.slot[k].busy && p.slot[k].slab == w && p.slot[k].done == p.slot[k].parts) b = k;
            if (b >= 0 || p.stop) break;
            pthread_cond_wait(&p.cv, &p.mu);
        }
        if (b < 0) break;
        pthread_mutex_unlock(&p.mu);
        const int rc = ops->write ? ops->write(ops->user, b) : 0;
        pthread_mutex_lock(&p.mu);
        if (rc) {
            fail(&p);
            break;
        }
        p.slot[b].busy = 0;
        pthread_cond_broadcast(&p.cv);
    }
    p.stop = 1; /* readers waiting for a buffer end; one inside a read ends after it */
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    const int rc = p.err[0] ? cli_err("%s", p.err) : 0;
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    free(p.slot); free(th); free(ra);
    return rc;
}
