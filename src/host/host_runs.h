/* The byte runs of a chunk that a unit's boxes need (its rows), for a codec that decodes only those
 * (codec/codec.h, decode_bytes_runs: zstd's sparse decodes). */
#ifndef ZG_HOST_RUNS_H
#define ZG_HOST_RUNS_H
#include "codec/codec.h"
#include "common/buf.h"
#include "plan/plan.h"

/* A unit's rows decode as runs up to ZG_RUNS_MAX of them and of ZG_RUN_MIN_AVG bytes on average; rows shorter than
 * ZG_RUN_WIDEN bytes (a box that ends a few elements into the chunk) are widened to that many within their row of
 * the chunk: a lookup costs about the same for a few bytes or a few hundred, and such a box decoded the chunk's
 * whole prefix in order before (H200: 4 ms of a 16 MiB label chunk, where its widened rows take a few tenths). */
#define ZG_RUNS_MAX 65536
#define ZG_RUN_MIN_AVG 64
#define ZG_RUN_WIDEN 256

/** runs[seg[k], seg[k + 1]) for k < n_seg, each ascending by offset, merged into one ascending list (pairwise, in
 *  log2(n_seg) passes): in runs or in tmp (as many entries), whichever is returned; seg is overwritten. */
zg_byte_run *zg_host_merge_runs(zg_byte_run *runs, zg_byte_run *tmp, size_t *seg, size_t n_seg);

/** Where a read's boxes go: outs[region] holds box `region`, with byte strides strides + region * ndim. */
typedef struct zg_runs_dest {
    void *const *outs;
    const int64_t *strides;
} zg_runs_dest;

/** The byte runs of a chunk (the plan's chunk shape, C-order byte strides cs) that the boxes of tasks t[0, n) need,
 *  ascending, overlaps merged: *out (in buf), *n_runs. With dest (NULL: none), where every box's rows lie
 *  contiguous in its destination as in the chunk (no conversion is the caller's to judge), no two boxes' rows
 *  overlap and none was widened, each run's dst is where its bytes go and *direct = 1: a decode writing the runs is
 *  the whole of the read of this unit (no copy out of the chunk after it). Else every dst is NULL, *direct = 0.
 *  Returns 0 where the runs are too many or too short for a decode of runs to pay (a column of a chunk: a run an
 *  element); the prefix then decodes. */
int zg_host_unit_runs(const zg_plan *plan, const zg_chunk_task *t, uint32_t n, const int64_t *cs,
                      const zg_runs_dest *dest, zg_buf *buf, const zg_byte_run **out, size_t *n_runs, int *direct);

#endif
