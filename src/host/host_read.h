/* The host executor's read: one plan for n boxes, decoded on the context's pool into host memory. */
#ifndef ZG_HOST_READ_H
#define ZG_HOST_READ_H
#include "api/array.h"
#include "codec/codec.h"
#include "host/read_progress.h"

/** Reads n boxes (starts / counts: n * ndim values) into outs[i] with byte strides out_strides + i * ndim
 *  (NULL: every destination C-contiguous, of the destination's elements); a chunk several boxes need is fetched
 *  and decoded once; opts (NULL: none) may convert the values (convert/convert.h). Sets the array's read
 *  statistics. The public zgpu_array_read, zgpu_array_read_ex and zgpu_array_read_regions come here (api/read_regions.c)
 *  unless the GPU decodes them (device/host_dest.c); so does the host route of a device read, with a progress
 *  (NULL: none) that it tells each box's rows along axis 0 as they are written (a read that runs again after a
 *  replaced shard tells them again). */
/** A read of fewer chunks than threads on a chain that reads spans (blosc) splits each box along axis 0 into
 *  pieces of at least this many bytes of the chunk, about threads / chunks of them, read and decoded side by side
 *  (the route model counts them: src/device/read.c). */
#define ZG_HOST_PIECE_MIN_BYTES ((size_t)512 << 10)

/** How a host read decodes a chunk it needs only in part (tuning partial_decode, for the chunks' chain: the inner
 *  chain of a sharded array): ZG_PARTIAL_NONE whole; ZG_PARTIAL_SPANS only the blocks its boxes need, read and
 *  decoded apart (blosc: the cost is what the boxes take); ZG_PARTIAL_PREFIX from the start up to the last byte
 *  its boxes need (zstd: the cost is that prefix). The route model (src/device/read.c) counts the same. */
enum { ZG_PARTIAL_NONE = 0, ZG_PARTIAL_SPANS = 1, ZG_PARTIAL_PREFIX = 2 };
int zg_host_partial_kind(const zgpu_tuning *tune, const zg_chain *chain);

zgpu_status zg_host_read_regions(zgpu_array *a, size_t n, const uint64_t *starts, const uint64_t *counts,
                                 void *const *outs, const int64_t *out_strides, const zgpu_read_options *opts,
                                 zg_read_progress *progress);
/** zg_host_read_regions of a sharded array on a local store without a chunk cache, its boxes' plan already built
 *  (zg_plan_build_regions) and resolved (zg_plan_resolve: shard indexes read, shards kept open), as a device read's
 *  route pick leaves it: the read takes the plan over and frees it (a read that meets a replaced shard plans
 *  afresh). The host route of an automatic pick read every index twice otherwise. */
struct zg_plan;
zgpu_status zg_host_read_regions_planned(zgpu_array *a, struct zg_plan *plan, size_t n, const uint64_t *starts,
                                         const uint64_t *counts, void *const *outs, const int64_t *out_strides,
                                         const zgpu_read_options *opts, zg_read_progress *progress);

#endif
