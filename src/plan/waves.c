/* Wave splitting (see waves.h). */
#include "plan/waves.h"

#include <stdlib.h>

#include "common/status.h"

uint64_t zg_wave_limit(size_t budget) {
    if (budget == 0) budget = (size_t)1 << 30;
    return (uint64_t)budget / 2;
}

uint64_t zg_waves_largest(const zg_wave *waves, size_t n_waves) {
    uint64_t top = 0;
    for (size_t w = 0; w < n_waves; w++)
        if (waves[w].bytes > top) top = waves[w].bytes;
    return top;
}

size_t zg_sets_in_flight(const zg_wave *waves, size_t n_waves, uint64_t budget, size_t max_sets) {
    const uint64_t top = zg_waves_largest(waves, n_waves);
    size_t n = 2;
    while (n < max_sets && n < n_waves && (uint64_t)(n + 1) * top <= budget) n++;
    return n;
}

zgpu_status zg_waves_split_shaped(size_t n, const uint64_t *cost, const unsigned *share, size_t n_share, uint64_t limit,
                                  zg_wave **waves, size_t *n_waves) {
    *waves = NULL;
    *n_waves = 0;
    if (n == 0) return ZGPU_OK;
    uint64_t total = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        ZG_RETURN_IF(cost[i] > limit, ZGPU_ERR_NO_MEMORY,
                     "device memory budget too small: chunk %zu needs %llu bytes of staging and scratch, a wave "
                     "may use %llu (half of device_memory_budget)",
                     i, (unsigned long long)cost[i], (unsigned long long)limit);
        total += cost[i];
    }
    for (size_t k = 0; k < n_share; k++) sum += share[k];
    zg_wave *w = malloc(n * sizeof *w); /* at most one wave a task */
    ZG_RETURN_IF(!w, ZGPU_ERR_NO_MEMORY, "out of host memory for %zu waves", n);
    size_t k = 0, shape = 0;
    uint64_t done = 0, cum = n_share && sum ? share[0] : 0;
    w[0] = (zg_wave){0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        /* the shape's boundary: where the waves so far should end (as a fraction of the total, exact) */
        const int past_share = shape + 1 < n_share &&
                               (double)(done + w[k].bytes + cost[i] / 2) * (double)sum > (double)cum * (double)total;
        if (w[k].count > 0 && (w[k].bytes + cost[i] > limit || past_share)) {
            done += w[k].bytes;
            if (past_share) cum += share[++shape];
            w[++k] = (zg_wave){i, 0, 0};
        }
        w[k].count++;
        w[k].bytes += cost[i];
    }
    *waves = w;
    *n_waves = k + 1;
    return ZGPU_OK;
}

zgpu_status zg_waves_split(size_t n, const uint64_t *cost, uint64_t limit, zg_wave **waves, size_t *n_waves) {
    return zg_waves_split_shaped(n, cost, NULL, 0, limit, waves, n_waves); /* no shape: greedy */
}

uint64_t zg_pipeline_limit(size_t n, const uint64_t *cost, int n_waves, uint64_t min_wave, uint64_t limit) {
    if (n_waves <= 1) return limit;
    uint64_t total = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        total += cost[i];
        if (cost[i] > top) top = cost[i];
    }
    uint64_t want = (total + (uint64_t)n_waves - 1) / (uint64_t)n_waves + top;
    if (want < min_wave) want = min_wave;
    return want < limit ? want : limit;
}

void zg_span_add(zg_span *sp, float s, float e, double *total_s) {
    if (e < s) e = s;
    if (sp->open && s <= sp->e && e >= sp->s) { /* overlaps: merge */
        if (s < sp->s) sp->s = s;
        if (e > sp->e) sp->e = e;
    } else if (sp->open && e < sp->s) { /* wholly before the open run */
        *total_s += (e - s) * 1e-3;
    } else {
        if (sp->open) *total_s += (sp->e - sp->s) * 1e-3;
        *sp = (zg_span){s, e, 1};
    }
}

void zg_span_close(zg_span *sp, double *total_s) {
    if (sp->open) *total_s += (sp->e - sp->s) * 1e-3;
    sp->open = 0;
}
