/* Wave splitting of device reads (CPU only, runs in CI). */
#include <stdlib.h>

#include "plan/waves.h"
#include "test.h"

/* A partition into non-empty waves in order, each within limit; greedy: each wave but the last would have
 * gone over limit with the next task. */
static void check_partition(size_t n, const uint64_t *cost, uint64_t limit, const zg_wave *w, size_t nw, int greedy) {
    size_t next = 0;
    for (size_t k = 0; k < nw; k++) {
        uint64_t sum = 0;
        CHECK(w[k].first == next && w[k].count > 0);
        for (size_t i = w[k].first; i < w[k].first + w[k].count; i++) sum += cost[i];
        CHECK_EQ_U64(sum, w[k].bytes);
        CHECK(sum <= limit);
        if (greedy && k + 1 < nw) CHECK(sum + cost[w[k].first + w[k].count] > limit);
        next = w[k].first + w[k].count;
    }
    CHECK_EQ_U64(next, n);
}

int main(void) {
    zg_wave *w;
    size_t nw;
    /* pipelined reads: about n balanced waves, none but the last short of total / n */
    {
        enum { MiB = 1 << 20 };
        uint64_t c[128];
        for (int i = 0; i < 128; i++) c[i] = 8 * MiB + 512;
        const uint64_t lim = zg_pipeline_limit(128, c, 3, 128 * (uint64_t)MiB, (uint64_t)4 << 30);
        CHECK_OK(zg_waves_split(128, c, lim, &w, &nw));
        CHECK_EQ_U64(nw, 3);
        CHECK_EQ_U64(w[0].count, 43);
        CHECK_EQ_U64(w[1].count, 43);
        CHECK_EQ_U64(w[2].count, 42);
        free(w);
        /* the budget's limit wins when smaller */
        CHECK_EQ_U64(zg_pipeline_limit(128, c, 3, 128 * (uint64_t)MiB, 100 * (uint64_t)MiB), 100 * (uint64_t)MiB);
        /* a small read stays whole: waves of at least min_wave */
        CHECK_EQ_U64(zg_pipeline_limit(4, c, 3, 128 * (uint64_t)MiB, (uint64_t)4 << 30), 128 * (uint64_t)MiB);
        /* one wave wanted: the limit as it was */
        CHECK_EQ_U64(zg_pipeline_limit(128, c, 1, 128 * (uint64_t)MiB, 777), 777);
        /* uneven tasks: still at most n waves */
        for (int i = 0; i < 128; i++) c[i] = (uint64_t)(1 + (i * 7919) % 13) * MiB;
        CHECK_OK(zg_waves_split(128, c, zg_pipeline_limit(128, c, 3, MiB, (uint64_t)4 << 30), &w, &nw));
        CHECK(nw <= 3);
        free(w);
    }
    /* shaped waves: 128 equal tasks in 4:4:3:1 -> 43, 42, 32, 11 (boundaries at 1/3, 2/3, 11/12 of the total,
     * each rounded to the nearer task); a limit under a share splits that share greedily; never an empty wave */
    {
        uint64_t c[128];
        for (int i = 0; i < 128; i++) c[i] = 1000;
        const unsigned shape[4] = {4, 4, 3, 1};
        CHECK_OK(zg_waves_split_shaped(128, c, shape, 4, (uint64_t)1 << 40, &w, &nw));
        CHECK_EQ_U64(nw, 4);
        CHECK_EQ_U64(w[0].first, 0);
        CHECK_EQ_U64(w[0].count, 43);
        CHECK_EQ_U64(w[1].count, 42);
        CHECK_EQ_U64(w[2].count, 32);
        CHECK_EQ_U64(w[3].count, 11);
        CHECK_EQ_U64(w[3].first, 117);
        CHECK_EQ_U64(w[3].bytes, 11000);
        free(w);
        CHECK_OK(zg_waves_split_shaped(128, c, shape, 4, 30000, &w, &nw)); /* 43 -> 30 + 13, 42 -> 17 + ... */
        check_partition(128, c, 30000, w, nw, 0);
        CHECK_EQ_U64(w[0].count, 30);
        CHECK_EQ_U64(w[1].count, 13);
        CHECK_EQ_U64(w[nw - 1].count, 11);
        free(w);
        const unsigned tiny[3] = {1, 1, 1}; /* more shares than tasks: one task each, the rest in the last */
        CHECK_OK(zg_waves_split_shaped(2, c, tiny, 3, (uint64_t)1 << 40, &w, &nw));
        CHECK_EQ_U64(nw, 2);
        CHECK_EQ_U64(w[0].count, 1);
        CHECK_EQ_U64(w[1].count, 1);
        free(w);
        CHECK_STATUS(zg_waves_split_shaped(128, c, shape, 4, 999, &w, &nw), ZGPU_ERR_NO_MEMORY);
    }
    /* waves in flight: more than two only while that many of the largest fit in the budget together */
    {
        const zg_wave three[3] = {{0, 43, 350}, {43, 43, 350}, {86, 42, 342}};
        CHECK_EQ_U64(zg_sets_in_flight(three, 3, 4096, 4), 3); /* a pipelined read that fits: no wave waits */
        CHECK_EQ_U64(zg_sets_in_flight(three, 3, 1049, 4), 2); /* 3 x 350 > 1049 */
        CHECK_EQ_U64(zg_sets_in_flight(three, 3, 1050, 4), 3);
        CHECK_EQ_U64(zg_sets_in_flight(three, 3, 4096, 2), 2); /* max_sets */
        CHECK_EQ_U64(zg_sets_in_flight(three, 1, 4096, 4), 2); /* never under two */
        const zg_wave many[6] = {{0, 1, 100}, {1, 1, 100}, {2, 1, 250}, {3, 1, 100}, {4, 1, 100}, {5, 1, 100}};
        CHECK_EQ_U64(zg_sets_in_flight(many, 6, 1000, 4), 4); /* 4 x 250 */
        CHECK_EQ_U64(zg_sets_in_flight(many, 6, 999, 4), 3);  /* the largest wave counts, not the first */
        /* memory-bound waves (each half the budget, zg_wave_limit): two */
        const zg_wave half[4] = {{0, 8, 500}, {8, 8, 500}, {16, 8, 500}, {24, 8, 480}};
        CHECK_EQ_U64(zg_sets_in_flight(half, 4, 1000, 4), 2);
    }
    /* stage times over overlapping waves: the union of their intervals */
    {
        double t = 0;
        zg_span sp = {0, 0, 0};
        zg_span_add(&sp, 0, 10, &t);
        zg_span_add(&sp, 5, 20, &t);  /* overlaps: [0, 20) */
        zg_span_add(&sp, 30, 35, &t); /* later: closes [0, 20) */
        zg_span_add(&sp, 32, 33, &t); /* inside */
        zg_span_close(&sp, &t);
        CHECK(t > 0.02499 && t < 0.02501);
        t = 0;
        sp = (zg_span){0, 0, 0};
        zg_span_add(&sp, 10, 20, &t);
        zg_span_add(&sp, 0, 5, &t);   /* wholly before: counts alone */
        zg_span_add(&sp, 8, 12, &t);  /* starts before the open run, overlaps it: [8, 20) */
        zg_span_close(&sp, &t);
        CHECK(t > 0.01699 && t < 0.01701);
        zg_span_close(&sp, &t); /* closing twice adds nothing */
        CHECK(t > 0.01699 && t < 0.01701);
    }
    /* all in one wave */
    uint64_t c1[4] = {10, 20, 30, 40};
    CHECK_OK(zg_waves_split(4, c1, 100, &w, &nw));
    CHECK_EQ_U64(nw, 1);
    CHECK(w[0].first == 0 && w[0].count == 4 && w[0].bytes == 100);
    free(w);
    /* exact boundaries */
    CHECK_OK(zg_waves_split(4, c1, 50, &w, &nw));
    CHECK_EQ_U64(nw, 3); /* {10,20} {30} {40} */
    CHECK(w[0].count == 2 && w[1].first == 2 && w[1].count == 1 && w[2].first == 3);
    check_partition(4, c1, 50, w, nw, 1);
    free(w);
    /* one task too large for any wave */
    CHECK_STATUS(zg_waves_split(4, c1, 39, &w, &nw), ZGPU_ERR_NO_MEMORY);
    CHECK(w == NULL && nw == 0);
    /* empty */
    CHECK_OK(zg_waves_split(0, c1, 10, &w, &nw));
    CHECK(nw == 0);
    /* many tasks, random costs: partition properties, and growth of the wave array */
    size_t n = 10000;
    uint64_t *c = malloc(n * sizeof *c);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        c[i] = 1 + (x >> 8) % 1000;
    }
    CHECK_OK(zg_waves_split(n, c, 1000, &w, &nw));
    CHECK(nw > 100);
    check_partition(n, c, 1000, w, nw, 1);
    free(w);
    free(c);
    /* budget -> per-wave limit */
    CHECK_EQ_U64(zg_wave_limit(0), (uint64_t)1 << 29);
    CHECK_EQ_U64(zg_wave_limit(1000), 500);
    CHECK_EQ_U64(zg_align_up(17, 16), 32);
    CHECK_EQ_U64(zg_align_up(32, 16), 32);
    TEST_MAIN_END();
}
