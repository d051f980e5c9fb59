/* The byte runs of a chunk that a unit's boxes need (see host_runs.h). */
#include "host/host_runs.h"

#include <stdlib.h>

/* The axis a box's rows run along: its last, or the first of the last axes it spans whole (those rows are one run). */
static int run_axis(const uint64_t *chunk, const uint64_t *count, int nd) {
    int last = nd - 1;
    while (last > 0 && count[last] == chunk[last]) last--;
    return last;
}

/* Up to this many boxes' runs (each box's in order) are merged pairwise, in log2(boxes) passes; more are sorted.
 * (glibc's qsort, a merge sort from runs of one, took 7% of a batch of 8 label crops on one thread.) */
#define MERGE_BOXES_MAX 64

zg_byte_run *zg_host_merge_runs(zg_byte_run *runs, zg_byte_run *tmp, size_t *seg, size_t n_seg) {
    while (n_seg > 1) {
        size_t w = 0;
        for (size_t k = 0; k < n_seg; k += 2) {
            const size_t a0 = seg[k], a1 = seg[k + 1], b1 = k + 1 < n_seg ? seg[k + 2] : a1;
            size_t a = a0, b = a1, o = a0;
            while (a < a1 && b < b1) tmp[o++] = runs[b].off < runs[a].off ? runs[b++] : runs[a++];
            while (a < a1) tmp[o++] = runs[a++];
            while (b < b1) tmp[o++] = runs[b++];
            seg[w++] = a0;
        }
        seg[w] = seg[n_seg];
        n_seg = w;
        zg_byte_run *swap = runs;
        runs = tmp;
        tmp = swap;
    }
    return runs;
}

static int run_cmp(const void *x, const void *y) {
    const zg_byte_run *a = x, *b = y;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* One box's rows as runs: their length (widened to ZG_RUN_WIDEN within the chunk's row), the first one's offset
 * (*off) and whether they may go straight to the box's destination (*direct: each row contiguous there). */
typedef struct box_rows {
    int last;          /* the run axis */
    uint64_t rows, len, off;
    int direct;
} box_rows;

static box_rows rows_of(const zg_plan *plan, const zg_chunk_task *b, const int64_t *cs, const int64_t *ds) {
    const int nd = plan->ndim;
    box_rows r = {run_axis(plan->chunk, b->count, nd), 1, 0, 0, ds != NULL};
    for (int d = 0; d < r.last; d++) r.rows *= b->count[d];
    for (int d = 0; d < nd; d++) r.off += b->in_chunk[d] * (uint64_t)cs[d];
    r.len = b->count[r.last] * (uint64_t)cs[r.last];
    const uint64_t row = plan->chunk[r.last] * (uint64_t)cs[r.last], at = b->in_chunk[r.last] * (uint64_t)cs[r.last];
    if (r.len < ZG_RUN_WIDEN && row > r.len) {
        const uint64_t w = row < ZG_RUN_WIDEN ? row : ZG_RUN_WIDEN, start = at < row - w ? at : row - w;
        r.off -= at - start;
        r.len = w;
        r.direct = 0; /* (the widened bytes are no part of the box) */
    }
    for (int d = r.last; d < nd && r.direct; d++)
        if (b->count[d] > 1 && ds[d] != cs[d]) r.direct = 0;
    return r;
}

int zg_host_unit_runs(const zg_plan *plan, const zg_chunk_task *t, uint32_t n, const int64_t *cs,
                      const zg_runs_dest *dest, zg_buf *buf, const zg_byte_run **out, size_t *n_runs, int *direct) {
    const int nd = plan->ndim;
    size_t total = 0;
    uint64_t bytes = 0;
    *direct = dest != NULL;
    if (nd < 1) return 0;
    for (uint32_t k = 0; k < n; k++) { /* count first */
        for (int d = 0; d < nd; d++)
            if (!t[k].count[d]) return 0; /* (an empty box: the plan makes none; its rows would not end) */
        const box_rows r = rows_of(plan, &t[k], cs, dest ? dest->strides + (size_t)t[k].region * (size_t)nd : NULL);
        if (r.rows > ZG_RUNS_MAX) return 0;
        total += (size_t)r.rows;
        bytes += r.rows * r.len;
        *direct &= r.direct;
    }
    if (!total || total > ZG_RUNS_MAX || bytes < (uint64_t)total * ZG_RUN_MIN_AVG) return 0;
    const int merge = n > 1 && n <= MERGE_BOXES_MAX; /* (the boxes' runs merged, each in order; more: sorted) */
    if (zg_buf_reserve(buf, (merge ? 2 : 1) * total * sizeof(zg_byte_run)) != ZGPU_OK) return 0;
    zg_byte_run *runs = (zg_byte_run *)buf->data;
    size_t m = 0, seg[MERGE_BOXES_MAX + 1];
    for (uint32_t k = 0; k < n; k++) {
        const zg_chunk_task *b = &t[k];
        const int64_t *ds = *direct ? dest->strides + (size_t)b->region * (size_t)nd : NULL;
        const box_rows r = rows_of(plan, b, cs, ds);
        uint8_t *d = NULL;
        if (ds) {
            d = (uint8_t *)dest->outs[b->region];
            for (int a = 0; a < nd; a++) d += (int64_t)b->in_box[a] * ds[a];
        }
        if (merge) seg[k] = m;
        uint64_t idx[ZGPU_MAX_DIMS] = {0}, off = r.off;
        for (;;) { /* (an odometer over the axes before the run axis) */
            runs[m++] = (zg_byte_run){off, r.len, d};
            int a = r.last - 1;
            while (a >= 0 && ++idx[a] == b->count[a]) {
                off -= (b->count[a] - 1) * (uint64_t)cs[a];
                if (d) d -= (int64_t)(b->count[a] - 1) * ds[a];
                idx[a--] = 0;
            }
            if (a < 0) break;
            off += (uint64_t)cs[a];
            if (d) d += ds[a];
        }
    }
    if (n > 1) { /* boxes of several regions: in order, overlaps merged */
        if (merge) {
            seg[n] = m;
            runs = zg_host_merge_runs(runs, runs + total, seg, n);
        } else {
            qsort(runs, m, sizeof *runs, run_cmp);
        }
        for (size_t r = 1; r < m && *direct; r++) /* two boxes share bytes: the chunk's copy serves both */
            if (runs[r].off < runs[r - 1].off + runs[r - 1].len) *direct = 0;
        if (!*direct)
            for (size_t r = 0; r < m; r++) runs[r].dst = NULL;
        size_t w = 0;
        for (size_t r = 1; r < m; r++) {
            const uint64_t w_end = runs[w].off + runs[w].len;
            const uint8_t *w_next = runs[w].dst ? runs[w].dst + runs[w].len : NULL; /* (touching: one run where
                                                                                     * their bytes go on alike) */
            if (runs[r].off < w_end || (runs[r].off == w_end && runs[r].dst == w_next)) {
                const uint64_t end = runs[r].off + runs[r].len;
                if (end > w_end) runs[w].len = end - runs[w].off;
            } else runs[++w] = runs[r];
        }
        m = w + 1;
    }
    *out = runs;
    *n_runs = m;
    return 1;
}
