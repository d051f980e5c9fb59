/* Splitting a batched device read into waves that each fit a memory budget. Pure C, no CUDA.
 * Tasks keep their order; a wave is a contiguous run of tasks. Each task costs `cost[i]` bytes (staging
 * plus scratch, already aligned). A wave holds as many tasks as fit in `limit`; a task larger than `limit`
 * alone is an error (the budget is too small to decode that chunk at all). */
#ifndef ZG_WAVES_H
#define ZG_WAVES_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

typedef struct zg_wave {
    size_t first, count;  /* tasks [first, first + count) */
    uint64_t bytes;       /* sum of their costs */
} zg_wave;

/** Splits n tasks into waves (greedy, in order). *waves is malloc'd (free()); *n_waves >= 1 when n > 0.
 *  ZGPU_ERR_NO_MEMORY when one task alone exceeds limit (message names the task and both sizes). */
zgpu_status zg_waves_split(size_t n, const uint64_t *cost, uint64_t limit, zg_wave **waves, size_t *n_waves);
/** Splits n tasks into waves whose sizes follow `share` (relative weights, in order): wave k ends where the
 *  waves up to it hold about share[0..k] / sum(share) of the total cost, never over `limit` (a wave over it
 *  splits greedily) and never empty. A decreasing shape ends a pipelined read with a small wave, whose decode
 *  is the read's tail after its last I/O. Errors as zg_waves_split. */
zgpu_status zg_waves_split_shaped(size_t n, const uint64_t *cost, const unsigned *share, size_t n_share, uint64_t limit,
                                  zg_wave **waves, size_t *n_waves);
/** Rounds x up to a multiple of a (a power of two). */
static inline uint64_t zg_align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/** The per-wave limit of a pipelined read, from the plain `limit`: about n_waves waves (with limit total / n
 *  plus the largest task, the greedy split makes at most n waves, and none but the last falls short of
 *  total / n), each at least min_wave, never more than `limit`. */
uint64_t zg_pipeline_limit(size_t n, const uint64_t *cost, int n_waves, uint64_t min_wave, uint64_t limit);

/** The union of one stage's time intervals over overlapping waves (ms from a common origin), added to
 *  *total_s in seconds. Intervals come roughly in start order: one that overlaps the open run merges with it,
 *  one wholly before it counts alone, a later one closes it. */
typedef struct zg_span {
    float s, e;
    int open;
} zg_span;
void zg_span_add(zg_span *sp, float s, float e, double *total_s);
void zg_span_close(zg_span *sp, double *total_s);

/** The largest wave's bytes. */
uint64_t zg_waves_largest(const zg_wave *waves, size_t n_waves);

/** How many waves a read keeps in flight (each on its own buffer set and stream): 2, or more (up to max_sets
 *  and n_waves) while that many of its largest wave fit in the budget together. With only two, the host
 *  waits for wave w - 2's decode before it reads wave w; a read split into waves for overlap alone (all of it
 *  fits) then reads straight through. */
size_t zg_sets_in_flight(const zg_wave *waves, size_t n_waves, uint64_t budget, size_t max_sets);

/** The per-wave limit for a context budget: two waves are in flight at once (double buffering), so each
 *  gets half; 0 means the default of 1 GiB. */
uint64_t zg_wave_limit(size_t device_memory_budget);

#endif
