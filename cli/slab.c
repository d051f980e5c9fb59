/* Slabs of a selection, their layout in a buffer, and the memory model that sizes them (slab.h). */
#include <stdlib.h>
#include <string.h>
#include "slab.h"

static uint64_t mul_sat(uint64_t a, uint64_t b) { return a && b > UINT64_MAX / a ? UINT64_MAX : a * b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ---- slabs ---- */
void cli_slabs_plan(cli_slabs *s, int ndim, const uint64_t *start, const uint64_t *count, size_t itemsize,
                    const uint64_t *grid, uint64_t budget, int contiguous) {
    memset(s, 0, sizeof *s);
    s->ndim = ndim;
    s->itemsize = itemsize;
    s->k = -1;
    int empty = 0;
    for (int d = 0; d < ndim; d++) {
        s->start[d] = start[d];
        s->count[d] = count[d];
        empty |= count[d] == 0;
    }
    if (budget == 0) budget = 1;
    if (empty) return;
    if (ndim == 0) {
        s->n = 1;
        s->max_bytes = itemsize;
        return;
    }
    /* inner[k]: bytes of one index on axes 0..k with the axes after k whole */
    uint64_t inner[ZGPU_MAX_DIMS];
    inner[ndim - 1] = itemsize;
    for (int d = ndim - 2; d >= 0; d--) inner[d] = mul_sat(inner[d + 1], count[d + 1]);
    uint64_t outer = 1; /* the largest piece on the axes before k, multiplied */
    for (int k = 0; k < ndim; k++) {
        const uint64_t g = grid[k] ? grid[k] : 1;
        if (contiguous) {
            if (inner[k] <= budget || k == ndim - 1) {
                uint64_t m = budget / inner[k];
                if (m == 0) m = 1;
                if (m >= g) m = m / g * g; /* whole grid rows where they fit: no chunk read twice */
                s->k = k;
                s->step[k] = m;
                break;
            }
            s->step[k] = 1;
        } else {
            const uint64_t unit = mul_sat(mul_sat(outer, min_u64(g, count[k])), inner[k]);
            if (unit <= budget || k == ndim - 1) {
                const uint64_t row = mul_sat(mul_sat(outer, g), inner[k]);
                uint64_t m = row ? budget / row : 1;
                if (m == 0) m = 1;
                s->k = k;
                s->step[k] = mul_sat(m, g);
                break;
            }
            s->step[k] = g;
            outer = mul_sat(outer, min_u64(g, count[k]));
        }
    }
    s->n = 1;
    s->max_bytes = inner[s->k];
    for (int d = 0; d <= s->k; d++) {
        const uint64_t st = s->step[d], b = start[d] / st;
        s->pieces[d] = (start[d] + count[d] - 1) / st - b + 1;
        s->n = mul_sat(s->n, s->pieces[d]);
        s->max_bytes = mul_sat(s->max_bytes, min_u64(st, count[d]));
    }
}

void cli_slabs_get(const cli_slabs *s, uint64_t i, uint64_t *start, uint64_t *count) {
    for (int d = 0; d < s->ndim; d++) {
        start[d] = s->start[d];
        count[d] = s->count[d];
    }
    for (int d = s->k; d >= 0; d--) { /* axis k varies fastest */
        const uint64_t j = i % s->pieces[d], st = s->step[d];
        i /= s->pieces[d];
        const uint64_t b = s->start[d] / st, end = s->start[d] + s->count[d];
        const uint64_t lo = (b + j) * st > s->start[d] ? (b + j) * st : s->start[d];
        const uint64_t hi = min_u64(end, (b + j + 1) * st);
        start[d] = lo;
        count[d] = hi - lo;
    }
}

/* ---- the blocked layout ---- */
uint64_t cli_blocks_max(const cli_slabs *s, const uint64_t *chunk) {
    uint64_t n = 1;
    for (int d = 0; d < s->ndim; d++) {
        const uint64_t ext = d <= s->k ? min_u64(s->step[d], s->count[d]) : s->count[d];
        const uint64_t c = chunk[d] ? chunk[d] : 1;
        n = mul_sat(n, min_u64(ext, (ext + c - 1) / c + 1)); /* a range of ext meets at most this many chunks */
    }
    return n;
}

void cli_blocks_layout(cli_blocks *b, const cli_slabs *s, const uint64_t *chunk, const uint64_t *start,
                       const uint64_t *count, void *buf) {
    const int nd = s->ndim;
    b->ndim = nd;
    b->itemsize = s->itemsize;
    b->n = 1;
    uint64_t first[ZGPU_MAX_DIMS], idx[ZGPU_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        b->lo[d] = start[d];
        b->hi[d] = start[d] + count[d];
        b->chunk[d] = chunk[d] ? chunk[d] : 1;
        first[d] = b->lo[d] / b->chunk[d];
        b->nb[d] = count[d] ? (b->hi[d] - 1) / b->chunk[d] - first[d] + 1 : 0;
        b->n *= b->nb[d];
        idx[d] = 0;
    }
    unsigned char *p = buf;
    for (size_t i = 0; i < b->n; i++) {
        uint64_t bytes = s->itemsize;
        for (int d = 0; d < nd; d++) {
            const uint64_t c0 = (first[d] + idx[d]) * b->chunk[d];
            const uint64_t lo = c0 > b->lo[d] ? c0 : b->lo[d], hi = min_u64(b->hi[d], c0 + b->chunk[d]);
            b->starts[i * (size_t)nd + (size_t)d] = lo;
            b->counts[i * (size_t)nd + (size_t)d] = hi - lo;
            bytes *= hi - lo;
        }
        b->outs[i] = p;
        p += bytes;
        for (int d = nd - 1; d >= 0; d--) { /* next box in C order */
            if (++idx[d] < b->nb[d]) break;
            idx[d] = 0;
        }
    }
}

void cli_blocks_single(cli_blocks *b, const cli_slabs *s, const uint64_t *start, const uint64_t *count, void *buf) {
    const int nd = s->ndim;
    b->ndim = nd;
    b->itemsize = s->itemsize;
    b->n = 1;
    for (int d = 0; d < nd; d++) {
        b->lo[d] = start[d];
        b->hi[d] = start[d] + count[d];
        b->chunk[d] = UINT64_MAX; /* one "chunk" holding the slab: every coordinate in box 0 */
        b->nb[d] = 1;
        b->starts[d] = start[d];
        b->counts[d] = count[d];
    }
    b->outs[0] = buf;
}

/* ---- the memory model ---- */
int cli_codec_stages(zgpu_array *a) {
    char *json = NULL;
    zj_value *v = NULL;
    int stages = 1;
    if (zgpu_array_codecs_json(a, &json) == ZGPU_OK && zj_parse(json, strlen(json), "codecs", &v) == ZGPU_OK) {
        const zj_value *list = v;
        const char *name0 = zj_string(zj_get(zj_at(list, 0), "name"));
        if (name0 && !strcmp(name0, "sharding_indexed"))
            list = zj_get(zj_get(zj_at(list, 0), "configuration"), "codecs");
        int n = 0;
        for (size_t i = 0; list && list->type == ZJ_ARRAY && i < list->n; i++) {
            const char *name = zj_string(zj_get(list->items[i], "name"));
            if (!name || strcmp(name, "bytes") != 0) n++; /* bytes is the array->bytes step itself */
        }
        stages = n > 1 ? n : 1;
    }
    zj_free(v);
    zgpu_free(json);
    return stages;
}

uint64_t cli_decode_scratch(zgpu_array *a, int in_place) {
    uint64_t chunk[ZGPU_MAX_DIMS], d = zgpu_array_itemsize(a);
    zgpu_array_chunk_shape(a, chunk);
    for (int i = 0; i < zgpu_array_ndim(a); i++) d = mul_sat(d, chunk[i]);
    return mul_sat(d, (uint64_t)cli_codec_stages(a) + (in_place ? 0 : 1));
}

uint64_t cli_encode_scratch(uint64_t object_bytes, uint64_t chunk_bytes, int stages, int sharded) {
    return mul_sat(object_bytes, sharded ? 3 : 2) + mul_sat(chunk_bytes, (uint64_t)(stages > 0 ? stages : 1));
}

int cli_fit_threads(const cli_fit *f, int t_max, cli_slabs *out) {
    if (t_max < 1) t_max = 1;
    if (f->fixed_budget) { /* the slab size asked for (tests, experiments): no capping */
        f->plan(f->user, f->fixed_budget, out);
        return t_max;
    }
    const uint64_t copies = (uint64_t)(f->copies > 0 ? f->copies : 1), task = f->task_bytes ? f->task_bytes : 1;
    int best_t = 1;
    uint64_t best_eff = 0;
    int have = 0;
    for (int t = t_max; t >= 1; t--) {
        const uint64_t scratch = mul_sat((uint64_t)t, f->scratch);
        uint64_t budget = scratch < CLI_MEM_BUDGET ? (CLI_MEM_BUDGET - scratch) / copies : 0;
        if (budget > CLI_SLAB_MAX) budget = CLI_SLAB_MAX;
        cli_slabs s;
        f->plan(f->user, budget ? budget : 1, &s);
        const uint64_t mem = scratch + mul_sat(copies, s.max_bytes);
        if (mem > CLI_MEM_BUDGET && t > 1) continue; /* does not fit: fewer threads */
        uint64_t tasks = s.max_bytes / task;
        tasks = mul_sat(tasks ? tasks : 1, (uint64_t)(f->in_flight > 0 ? f->in_flight : 1));
        const uint64_t eff = tasks < (uint64_t)t ? tasks : (uint64_t)t;
        if (!have || eff > best_eff) { /* a tie goes to more threads: the count asked for where all fit */
            best_eff = eff;
            best_t = t;
            *out = s;
            have = 1;
        }
    }
    return best_t;
}
