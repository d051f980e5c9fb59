/* A host read's rows as they become final (read_progress.h). */
#include "host/read_progress.h"

void zg_progress_reset(zg_read_progress *p) {
    for (size_t s = 0; s < p->n_slabs; s++) atomic_store(&p->pending[s], 0);
    p->reports = 0;
    atomic_store(&p->reports_left, 0);
    atomic_fetch_add(&p->attempt, 1);
}

/* The slabs rows [z0, z1) of box `box` fall in: [*s0, *s1]. 0 for none (an empty range). */
static int slabs_of(const zg_read_progress *p, uint32_t box, uint64_t z0, uint64_t z1, size_t *s0, size_t *s1) {
    const size_t base = p->row_base[box], rows = p->row_base[box + 1] - base;
    if (z1 > rows) z1 = rows;
    if (z0 >= z1) return 0;
    *s0 = p->slab_of_row[base + z0];
    *s1 = p->slab_of_row[base + z1 - 1];
    return 1;
}

void zg_progress_expect(zg_read_progress *p, uint32_t box, uint64_t z0, uint64_t z1) {
    size_t s0, s1;
    if (!slabs_of(p, box, z0, z1, &s0, &s1)) return;
    p->reports++;
    atomic_fetch_add(&p->reports_left, 1);
    for (size_t s = s0; s <= s1; s++) atomic_fetch_add(&p->pending[s], 1);
}

void zg_progress_report(zg_read_progress *p, uint32_t box, uint64_t z0, uint64_t z1) {
    size_t s0, s1;
    if (!slabs_of(p, box, z0, z1, &s0, &s1)) return;
    atomic_fetch_sub(&p->reports_left, 1);
    for (size_t s = s0; s <= s1; s++)
        if (atomic_fetch_sub(&p->pending[s], 1) == 1) p->slab_done(p->user, s);
}
