/* Where a host read's time goes, unit by unit (read_trace.h). */
#include "host/read_trace.h"

#include <stdio.h>
#include <stdlib.h>

int zg_read_trace_start(zg_read_trace *t, size_t cap, double t0) {
    t->u = calloc(cap ? cap : 1, sizeof *t->u);
    t->cap = t->u ? cap : 0;
    atomic_store(&t->n, 0);
    t->t0 = t0;
    return t->u != NULL;
}

void zg_read_trace_unit(zg_read_trace *t, const zg_unit_trace *u) {
    const size_t k = atomic_fetch_add(&t->n, 1);
    if (k < t->cap) t->u[k] = *u;
}

static int by_start(const void *x, const void *y) {
    const zg_unit_trace *a = x, *b = y;
    return (a->start > b->start) - (a->start < b->start);
}

void zg_read_trace_finish(zg_read_trace *t, const char *path, int threads, double total_s) {
    if (!t->u) return;
    const size_t n = atomic_load(&t->n), kept = n < t->cap ? n : t->cap;
    qsort(t->u, kept, sizeof *t->u, by_start);
    double first = 0, last = 0;
    for (size_t i = 0; i < kept; i++) {
        const zg_unit_trace *u = &t->u[i];
        if (i == 0 || u->start < first) first = u->start;
        if (u->end > last) last = u->end;
        fprintf(stderr,
                "zgpu trace: host read unit '%s' inner %u, thread %d: start %.3f, read %.3f, decode %.3f, end %.3f ms; "
                "%d ways, %zu runs, to byte %zu of %zu, %zu stored bytes\n",
                u->key ? u->key : "?", u->inner, u->thread, u->start * 1e3, (u->io - u->start) * 1e3,
                (u->end - u->io) * 1e3, u->end * 1e3, u->ways, u->runs, u->hi, u->size, u->stored);
    }
    fprintf(stderr,
            "zgpu trace: host read '%s': %zu units (%zu not shown) on %d threads in %.3f ms; first start %.3f, last end "
            "%.3f ms\n",
            path ? path : "?", n, n - kept, threads, total_s * 1e3, first * 1e3, last * 1e3);
    free(t->u);
    t->u = NULL;
}
