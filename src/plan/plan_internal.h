/* What plan.c and fetch_remote.c share, private to src/plan/. */
#ifndef ZG_PLAN_INTERNAL_H
#define ZG_PLAN_INTERNAL_H
#include "plan/plan.h"

static inline uint64_t zg_ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/** A shard's tasks from its decoded index (offsets and lengths of its n_inner inner chunks). */
void zg_plan_apply_index(zg_plan *plan, zg_plan_object *ob, const uint64_t *offsets, const uint64_t *lengths);
/** The byte ranges of a shard's tasks from its index (raw, index_n bytes) and its size; offsets: scratch of
 *  2 * n_inner, holding the decoded index afterwards (offsets, then lengths). Errors name the array and shard. */
zgpu_status zg_plan_tasks_from_index(zgpu_array *a, zg_plan *plan, zg_plan_object *ob, const uint8_t *raw,
                                     uint64_t *offsets);
/** plan->stored_bytes: the stored bytes of the tasks the read decodes (present, leading their unit, not decoded
 *  elsewhere). */
void zg_plan_sum_stored(zg_plan *plan);

#endif
