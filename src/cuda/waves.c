/* Wave splitting (see waves.h). */
#include "cuda/waves.h"

#include <stdlib.h>

#include "util/status.h"

uint64_t zg_wave_limit(size_t budget) {
    if (budget == 0) budget = (size_t)1 << 30;
    return (uint64_t)budget / 2;
}

zgpu_status zg_waves_split(size_t n, const uint64_t *cost, uint64_t limit, zg_wave **waves, size_t *n_waves) {
    *waves = NULL;
    *n_waves = 0;
    if (n == 0) return ZGPU_OK;
    for (size_t i = 0; i < n; i++)
        ZG_RETURN_IF(cost[i] > limit, ZGPU_ERR_NO_MEMORY,
                     "device memory budget too small: chunk %zu needs %llu bytes of staging and scratch, a wave "
                     "may use %llu (half of device_memory_budget)",
                     i, (unsigned long long)cost[i], (unsigned long long)limit);
    size_t cap = 8, k = 0;
    zg_wave *w = malloc(cap * sizeof *w);
    ZG_RETURN_IF(!w, ZGPU_ERR_NO_MEMORY, "out of host memory for %zu waves", cap);
    w[0] = (zg_wave){0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        if (w[k].count > 0 && w[k].bytes + cost[i] > limit) {
            if (k + 1 == cap) {
                zg_wave *nw = realloc(w, 2 * cap * sizeof *w);
                if (!nw) {
                    free(w);
                    return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for %zu waves", 2 * cap);
                }
                w = nw;
                cap *= 2;
            }
            k++;
            w[k] = (zg_wave){i, 0, 0};
        }
        w[k].count++;
        w[k].bytes += cost[i];
    }
    *waves = w;
    *n_waves = k + 1;
    return ZGPU_OK;
}
