/* One device read (dev_run_read, behind zg_cuda_read_request in async.c): plan, chain analysis and decoder choice,
 * tasks, then the waves.
 *
 * The device executor: a selection read straight into device memory as one batch per wave.
 *
 *   plan (zg_plan_build + zg_plan_resolve: byte ranges, shard indexes)
 *   -> waves bounded by device_memory_budget (plan/waves.h), up to ZG_MAX_SETS in flight (a ring of buffer
 *      sets, each with its own stream); for each wave:
 *      A  host pool: pread every range into pinned staging (or cuFile into device memory), parse/validate
 *         frames (gpucodec: the *_check.h headers, blosc_parse.h); chunks without a GPU decoder decode on the host
 *      B  layout: device pointers of every stream, descriptors written behind the data in the same buffer
 *      C  stream: ONE host-to-device copy; one batch per GPU decoder (gpucodec/gpu_decoder.h); our kernels (raw
 *         copies, unshuffle, crc32c, byte swap, delta); one scatter kernel into the caller's strided output (fill for missing)
 *      D  after the next wave's I/O: per-chunk statuses and sizes checked -> ZGPU_ERR_CORRUPT_DATA naming
 *         the array, chunk key and codec.
 * The chain must look like [transpose*] [delta(int)] bytes [shuffle|crc32c]* [compressor] [crc32c]* for
 * the GPU path (sharded arrays: the inner chain), as its codecs' GPU entries say (codec.h: zg_gpu_stage; read
 * once per chain by route.c); anything else decodes on the host (CPU fallback). */
#include "cache/chunk_cache.h"
#include "device/job.h"
#include "host/host_read.h"
#include "route/route.h"

/* ------------------------------------------------------------------------------------------------
 * The read driver
 * ---------------------------------------------------------------------------------------------- */
static void free_tasks(job *j) {
    for (size_t i = 0; i < j->n_t; i++) {
        dev_cache_drop(j->st, j->t[i].dentry); /* (filled by a wave whose checks did not run or pass) */
        free(j->t[i].streams);
        dev_plan_drop(&j->t[i]);
    }
    free(j->t);
    j->t = NULL;
}

/* The caches looked up for every unit before anything is resolved or fetched (as host reads do): the device cache
 * (when the read may use it: j->dcache), then the context's host cache for the units the first did not hold.
 * dhits[i] / hits[i] held, or dgens[i] / gens[i] the generation a miss saw. */
static zgpu_status cache_lookup(job *j, zg_plan *plan, zgpu_read_stats *stats) {
    const size_t n = plan->n_tasks ? plan->n_tasks : 1;
    j->hits = calloc(n, sizeof *j->hits);
    j->gens = calloc(n, sizeof *j->gens);
    j->dhits = calloc(n, sizeof *j->dhits);
    j->dgens = calloc(n, sizeof *j->dgens);
    j->n_hits = plan->n_tasks;
    if (!j->hits || !j->gens || !j->dhits || !j->dgens)
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for %zu chunks", plan->n_tasks);
    const size_t size = (size_t)j->pp.chunk_nbytes;
    int dev_misses = 0, misses = 0;
    if (j->dcache)
        zg_plan_cache_lookup(plan, j->dcache, j->a->store->id, size, j->dhits, j->dgens, &stats->device_cache_hits,
                             &dev_misses);
    if (j->cache)
        zg_plan_cache_lookup(plan, j->cache, j->a->store->id, size, j->hits, j->gens, &stats->cache_hits, &misses);
    stats->cache_hits += stats->device_cache_hits;
    stats->cache_misses = j->cache ? misses : dev_misses;
    return ZGPU_OK;
}

/* The destinations' strides (n * ndim, resolved) and their scatter groups (regions with equal strides share a
 * scatter launch): into j, allocated (freed by free_regions). */
static zgpu_status regions_of(job *j, const zg_dev_request *rq) {
    const size_t n = rq->n, nd = (size_t)j->a->meta.ndim;
    int64_t *strides = NULL;
    ZG_FORWARD(zg_resolve_region_strides(j->a, j->x.out_itemsize, n, rq->counts, rq->strides, &strides));
    uint32_t *group = malloc((n ? n : 1) * sizeof *group);
    j->groups = calloc(n ? n : 1, sizeof *j->groups);
    j->strides = strides;
    j->group_of = group;
    if (!group || !j->groups) return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for %zu regions", n);
    j->n_regions = n;
    j->outs = (uint8_t *const *)rq->outs;
    j->n_groups = 0;
    for (size_t r = 0; r < n; r++) {
        group[r] = (uint32_t)j->n_groups;
        for (size_t q = 0; q < r; q++)
            if (!memcmp(strides + q * nd, strides + r * nd, nd * sizeof *strides)) {
                group[r] = group[q];
                break;
            }
        if (group[r] == j->n_groups) j->n_groups++;
    }
    if (n) {
        j->out = j->outs[0];
        memcpy(j->out_strides, strides, nd * sizeof *strides);
    }
    return ZGPU_OK;
}

/* What regions_of and cache_lookup allocated (every return of a read after regions_of comes here). */
static void free_regions(job *j) {
    free((void *)j->strides);
    free(j->group_of);
    free(j->groups);
    for (size_t i = 0; j->hits && i < j->n_hits; i++) zg_chunk_cache_release(j->cache, j->hits[i]);
    for (size_t i = 0; j->dhits && i < j->n_hits; i++) zg_chunk_cache_release(j->dcache, j->dhits[i]);
    free(j->hits);
    free(j->gens);
    free(j->dhits);
    free(j->dgens);
    j->hits = j->dhits = NULL;
    j->gens = j->dgens = NULL;
}

/* The cost model's view of the read (route/route.h). resolved: the plan knows which chunks are there and their
 * sizes; else (a remote store, before its fetch) every chunk counts and the ratio is the array's last read's. */
static zg_route_pick pick_route(const job *j, const zg_plan *plan, const zg_dev_request *rq, int resolved) {
    zg_route_read r;
    memset(&r, 0, sizeof r);
    switch (j->pp.comp) {
    case ZG_GPU_FORMAT_NONE: r.codec = ZG_RC_NONE; break;
    case ZG_GPU_FORMAT_GZIP:
    case ZG_GPU_FORMAT_ZLIB: r.codec = ZG_RC_DEFLATE; break;
    case ZG_GPU_FORMAT_BLOSC: r.codec = ZG_RC_LZ4; break;
    default: r.codec = ZG_RC_ZSTD; break;
    }
    r.gpu_decodes = j->gpu_decode;
    r.cache_on = j->cache != NULL && !j->dcache; /* (both on: each route fills a cache) */
    r.threads = zg_pool_size(j->a->ctx->pool);
    r.chunk_bytes = (double)j->pp.chunk_nbytes;
    r.host_dest = rq->host_dest;
    /* the host route decodes a chunk needed in part only in part (host/host_read.c, zg_host_partial_kind): of a
     * blosc chunk the blocks each box needs, of a zstd frame its start up to the last byte its boxes need (block by
     * block straight into the chunk: what it skips is saved). Both are counted: left to the learning, the zstd
     * prefix of a plane read (1/64 of each chunk) ran 8x faster than predicted, and the factor that taught the
     * host route then sent batches of 8 field crops to the host at 271 crops/s against 1,052 on the device (H200). */
    const zg_chain *chain = j->a->shard ? zg_sharding_inner_chain(j->a->shard) : j->a->chain;
    const int partial = !j->cache && r.chunk_bytes > 0 ? zg_host_partial_kind(j->tune, chain) : ZG_PARTIAL_NONE;
    int64_t cs[ZGPU_MAX_DIMS];
    if (partial != ZG_PARTIAL_NONE) zg_c_strides(plan->ndim, plan->chunk, j->a->meta.dtype.size, cs);
    double part = 0, split = 0;
    size_t units = 0;
    uint64_t stored = 0; /* (of the chunks decoded: n_decoded) */
    size_t n_decoded = 0;
    for (size_t i = 0; i < plan->n_tasks; i++) {
        const zg_chunk_task *t = &plan->tasks[i];
        units += t->unit_n && !t->decoded_elsewhere;
        if (t->unit_n && !t->decoded_elsewhere && (!resolved || t->state == ZG_TASK_PRESENT)) {
            n_decoded++;
            stored += t->nbytes;
        }
    }
    if (resolved && stored) {
        r.ratio = r.chunk_bytes * (double)n_decoded / (double)stored;
    } else {
        zgpu_read_stats last;
        last.struct_size = sizeof last;
        zgpu_array_last_read_stats(j->a, &last);
        const int decoded = last.gpu_decoded + last.cpu_decoded;
        if (last.stored_bytes && decoded) r.ratio = r.chunk_bytes * decoded / (double)last.stored_bytes;
    }
    /* a read of fewer chunks than threads lends each chunk its share of them (host/host_read.c): blosc cuts its boxes
     * into pieces (host/host_read.h), zstd, gzip and zlib split a stream (split_decode), or zstd decodes only a
     * frame's rows the boxes need where its matches are long (labels: zg_chain_decode_runs) */
    const size_t share_of = units && units < (size_t)r.threads ? (size_t)r.threads / units : 1;
    const int split_on = j->tune->split_decode != ZGPU_SWITCH_OFF;
    const int spans = partial == ZG_PARTIAL_SPANS;
    const size_t want = spans ? share_of : 1;
    for (size_t i = 0; i < plan->n_tasks; i++) {
        const zg_chunk_task *t = &plan->tasks[i];
        if (t->unit_n && t->decoded_elsewhere) { /* (a copy out of a cache, not a decode) */
            if (j->dhits && j->dhits[i]) r.dev_cached++;
            else r.cached++;
        }
        if (!t->unit_n || t->decoded_elsewhere || (resolved && t->state != ZG_TASK_PRESENT)) continue;
        r.chunks++;
        double share = 0;
        size_t pieces = 0;
        for (uint32_t k = 0; spans && k < t->unit_n; k++) {
            size_t lo, hi;
            zg_plan_unit_range(plan, t + k, 1, j->a->meta.dtype.size, cs, &lo, &hi);
            share += (double)(hi - lo) / r.chunk_bytes;
            size_t p = hi > lo ? (hi - lo) / ZG_HOST_PIECE_MIN_BYTES : 0;
            if (p > want) p = want;
            if (p > t[k].count[0]) p = (size_t)t[k].count[0];
            pieces += p ? p : 1;
        }
        if (partial == ZG_PARTIAL_PREFIX) { /* the frame from its start to the unit's last byte, or its boxes' rows */
            size_t lo, hi;
            zg_plan_unit_range(plan, t, t->unit_n, j->a->meta.dtype.size, cs, &lo, &hi);
            const uint64_t bytes = zg_plan_unit_bytes(plan, t, t->unit_n, j->a->meta.dtype.size);
            share = zg_chain_runs_cost(chain, r.ratio, bytes, lo, hi, split_on ? (int)share_of : 1) / r.chunk_bytes;
        }
        part += partial != ZG_PARTIAL_NONE && share < 1 ? share : 1;
        split += spans && share < 1 && pieces > 1 ? (double)pieces : 1;
    }
    if (r.chunks) {
        r.host_part = part / (double)r.chunks;
        r.host_split = split / (double)r.chunks;
    }
    /* zstd frames and gzip / zlib streams of a read of fewer chunks than threads decode split over the idle ones */
    if (!spans && r.chunks && share_of > 1 && split_on)
        r.host_split = zg_chain_split_speedup(chain, r.ratio, (int)share_of);
    for (size_t k = 0; k < rq->n; k++) {
        double b = (double)j->a->meta.dtype.size;
        for (int d = 0; d < plan->ndim; d++) b *= (double)rq->counts[k * (size_t)plan->ndim + (size_t)d];
        r.box_bytes += b;
    }
    const zg_route_pick p = dev_route_decide(j->a->ctx, &r);
    if (j->tune->trace)
        fprintf(stderr, "zgpu route: '%s' %zu chunks (%zu cached, %.2f decoded on the host in %.1f pieces), ratio %.1f: "
                        "host %.3f ms, "
                        "device %.3f ms -> %s%s\n",
                j->a->path, r.chunks, r.cached + r.dev_cached, r.host_part, r.host_split, r.ratio, p.t_host * 1e3, p.t_device * 1e3,
                p.route == ZGPU_ROUTE_HOST ? "host" : "device",
                p.explored ? " (exploring)" : r.host_dest ? " (into host memory)" : "");
    return p;
}

/* What a read that the model routed took, for the model's memory (and the trace). */
static void learn_route(zgpu_array *a, const zg_route_pick *p, const zgpu_tuning *tune, double seconds) {
    dev_route_learn(a->ctx, p, seconds);
    if (tune->trace)
        fprintf(stderr, "zgpu route: '%s' took %.3f ms on the %s route (predicted %.3f ms before what was learnt)\n",
                a->path, seconds * 1e3, p->route == ZGPU_ROUTE_HOST ? "host" : "device", p->predicted * 1e3);
}

void zg_cuda_host_read_learn(zgpu_array *a, const zg_host_lesson *lesson, double seconds) {
    if (lesson->valid) learn_route(a, &lesson->pick, &a->ctx->tuning, seconds);
}

/* A host read's device read that leaves it to the host threads (rq->host_dest): nothing done but the plan; the pick,
 * if any, is the lesson for the host read to teach. */
static zgpu_status decline(job *j, zg_plan *plan, const zg_dev_request *rq, const zg_route_pick *pick, double t_pick,
                           int hand_over) {
    zg_plan *given = hand_over && pick ? malloc(sizeof *given) : NULL; /* (the host read's, as in dev_host_route) */
    if (given) *given = *plan;
    else zg_plan_free(plan);
    free_regions(j);
    *rq->declined = 1;
    if (pick) *rq->lesson = (zg_host_lesson){1, *pick, t_pick, given};
    return ZGPU_OK;
}

/* order_user: order our stream after the caller's and the caller's after ours (the async path instead
 * synchronised the caller's stream up front and gates it with a host function). */
static zgpu_status dev_read_once(zgpu_array *a, const zg_dev_request *rq, void *user_stream, int order_user) {
    zgpu_read_stats stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    const double t_begin = zg_now();
    struct zg_device_state *st;
    ZG_FORWARD(dev_get_state(a->ctx, &st));
    /* (a read that grows a staging buffer teaches the route model nothing: dev_buffer_growths) */
    const unsigned long grown = dev_buffer_growths();
    job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.tune = &a->ctx->tuning;
    j.st = st;
    ZG_FORWARD(zg_read_xform(a, rq->opts, &j.x));
    zgpu_status rs = regions_of(&j, rq);
    zg_plan plan;
    if (rs == ZGPU_OK) rs = zg_plan_build_regions(a, rq->n, rq->starts, rq->counts, &plan);
    if (rs != ZGPU_OK) {
        free_regions(&j);
        return rs;
    }
    j.chain = a->shard ? zg_sharding_inner_chain(a->shard) : a->chain;
    dev_pipe analysed;
    j.pp = *dev_chain_pipe(j.chain, &analysed); /* (analysed on the chain's first device read) */
    const int deflate = j.pp.comp == ZG_GPU_FORMAT_GZIP || j.pp.comp == ZG_GPU_FORMAT_ZLIB;
    const zgpu_decoder_choice ddec = j.tune->deflate_decoder;
    if (j.pp.gpu && deflate && ddec == ZGPU_DECODER_HOST)
        dev_not_gpu(&j.pp, "codec '%s': DEFLATE decodes on the host (tuning deflate_decoder = host)", j.pp.comp_name);
    if (j.pp.gpu && j.pp.comp == ZG_GPU_FORMAT_ZSTD && j.tune->zstd_decoder == ZGPU_DECODER_HOST)
        dev_not_gpu(&j.pp, "codec '%s': zstd decodes on the host (tuning zstd_decoder = host)", j.pp.comp_name);
    if (j.pp.gpu && deflate && ddec == ZGPU_DECODER_NVCOMP && !a->ctx->opts.gpu_trust_input)
        dev_not_gpu(&j.pp, "codec '%s': nvCOMP's DEFLATE decoder needs gpu_trust_input (it assumes valid input)",
                j.pp.comp_name);
    /* the decoders' alignments (nvCOMP's from nvCOMP, if it loads and gives them all; else none of its decoders
     * runs), then the read's decoders */
    j.nvc_ok = zg_gpu_nvcomp_loaded();
    j.decs = zg_gpu_decoders(&j.n_decs);
    for (size_t d = 0; d < j.n_decs; d++) {
        j.in_align[d] = j.out_align[d] = 1;
        const zg_gpu_decoder *dd = j.decs[d];
        if (dd->alignments && (!dd->needs_nvcomp || j.nvc_ok) && dd->alignments(&j.in_align[d], &j.out_align[d]) &&
            dd->needs_nvcomp)
            j.nvc_ok = 0;
    }
    dev_pick_decoders(&j);
    j.gpu_decode = a->ctx->opts.gpu_decode && j.pp.gpu &&
                   (j.pp.comp == ZG_GPU_FORMAT_NONE || j.pp.comp == ZG_GPU_FORMAT_BLOSC ||
                    (j.dec_main && (!j.dec_main->needs_nvcomp || j.nvc_ok)));
    /* the route: GPU decode, or the host read plus one copy (route/route.h); on a remote store chosen before its
     * bytes are fetched (from the array's last read), else once the plan knows the chunks' sizes */
    const int remote = a->store->vt->remote;
    zgpu_route route = a->ctx->opts.gds_mode == ZGPU_GDS_ON ? ZGPU_ROUTE_DEVICE : j.tune->read_route;
    if (rq->host_dest) route = j.tune->host_read_route;
    if (!j.x.identity && !dev_convert_on_device()) route = ZGPU_ROUTE_HOST; /* (no NVRTC: the host converts) */
    if (rq->host_dest && (route == ZGPU_ROUTE_HOST || !j.gpu_decode)) /* (the host read decodes on the host too) */
        return decline(&j, &plan, rq, NULL, 0, 0);
    /* chunks the caches hold are neither resolved nor fetched: the device cache's scattered from there, the host
     * cache's copied to the device as host-decoded (chunk_cache_dev.c) */
    j.cache = a->ctx->cache;
    j.dcache = j.gpu_decode ? st->dcache : NULL;
    if ((j.cache || j.dcache) && route != ZGPU_ROUTE_HOST && (rs = cache_lookup(&j, &plan, &stats)) != ZGPU_OK) {
        zg_plan_free(&plan);
        free_regions(&j);
        return rs;
    }
    /* (the lesson of an automatic pick is learnt from local reads only: a remote read's time is mostly its fetch) */
    zg_route_pick picked;
    memset(&picked, 0, sizeof picked);
    int learn = 0;
    if (route == ZGPU_ROUTE_AUTO && remote) route = (picked = pick_route(&j, &plan, rq, 0)).route;
    /* a remote sharded array: inner chunks fetched wave by wave into staging (unsharded chunks come whole now:
     * their sizes lay out the waves) */
    const int remote_waves = remote && a->shard;
    zgpu_status s = ZGPU_OK;
    const int resolved = route != ZGPU_ROUTE_HOST;
    if (resolved)
        s = remote ? zg_plan_resolve_remote(a, &plan, ZG_FETCH_SIZES) : zg_plan_resolve(a, &plan);
    stats.plan_s = zg_now() - t_begin;
    double t_pick = 0; /* the pick's own time: the process's first one measures the model (seconds), which no
                        * route's lesson may include (it had sent OCT crops to the host at 5x the device's time) */
    if (s == ZGPU_OK && route == ZGPU_ROUTE_AUTO) {
        t_pick = zg_now();
        picked = pick_route(&j, &plan, rq, 1);
        t_pick = zg_now() - t_pick;
        route = picked.route;
        /* (a read served partly from a cache teaches nothing of the decode the model's factors correct) */
        learn = stats.cache_hits == 0;
    }
    /* an automatic pick of a sharded array's host route hands the host read the plan: its shard indexes are read
     * (a plan resolved here, on a local store, with no cache lookups: zg_host_read_regions_planned) */
    const int hand_over = s == ZGPU_OK && resolved && a->shard && !remote && !j.cache && !j.dcache;
    if (s == ZGPU_OK && route == ZGPU_ROUTE_HOST && rq->host_dest) /* (its lesson: once the host has read it) */
        return decline(&j, &plan, rq, learn ? &picked : NULL, t_pick, hand_over);
    if (s != ZGPU_OK || route == ZGPU_ROUTE_HOST) {
        zg_plan *given = hand_over ? &plan : NULL; /* (its arrays are the host read's to free) */
        if (!hand_over) zg_plan_free(&plan);
        free_regions(&j);
        if (s != ZGPU_OK) return s;
        memset(&stats, 0, sizeof stats); /* (the host route counts its own cache hits) */
        stats.struct_size = sizeof stats;
        s = dev_host_route(a, st, rq, &j.x, user_stream, order_user, &stats, given);
        if (s == ZGPU_OK) zg_array_set_stats(a, &stats);
        if (s == ZGPU_OK && learn && dev_buffer_growths() == grown) /* (timed after the pick) */
            learn_route(a, &picked, j.tune, stats.total_s);
        return s;
    }
    j.plan = &plan;
    j.remote_waves = remote_waves;
    /* GDS: AUTO uses it only when no frame needs checking on the host; ON always (or fails) */
    const char *why = "";
    zgpu_gds_mode gm = a->ctx->opts.gds_mode;
    if (gm == ZGPU_GDS_ON) {
        /* cuFile opens files by path: it cannot resolve keys beneath the store's root */
        if (a->ctx->opts.confine_to_store || a->store->vt->remote) {
            zg_plan_free(&plan);
            free_regions(&j);
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, ZG_ARRAY_WHERE_FMT ": GPUDirect Storage (gds_mode ON) cannot "
                            "be used %s: cuFile opens local files by path", a->path,
                            a->store->vt->remote ? "with a remote store" : "with confine_to_store");
        }
        if (!zg_gds_usable(1, &why)) {
            zg_plan_free(&plan);
            free_regions(&j);
            return zg_error(ZGPU_ERR_CUDA, ZG_ARRAY_WHERE_FMT ": GPUDirect Storage required (ZGPU_GDS_ON) but not usable: %s",
                            a->path, why);
        }
        j.use_gds = 1;
    } else if (gm == ZGPU_GDS_AUTO) {
        const int gds_loaded = zg_gds_loaded();
        j.use_gds = j.gpu_decode && j.pp.comp == ZG_GPU_FORMAT_NONE && j.pp.n_outer_crc == 0 &&
                    !a->ctx->opts.confine_to_store && !a->store->vt->remote && zg_gds_usable(0, &why);
        /* the process's first look at cuFile opens its driver inside this read: no lesson for the route model (it
         * had sent every later read of uncompressed TIFF tiles to the host route, at half the device's speed) */
        if (!gds_loaded && zg_gds_loaded()) learn = 0;
    }
    j.n_t = plan.n_tasks;
    j.t = calloc(j.n_t ? j.n_t : 1, sizeof *j.t);
    if (!j.t) {
        zg_plan_free(&plan);
        free_regions(&j);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for %zu chunk tasks", plan.n_tasks);
    }
    for (size_t i = 0; i < j.n_t; i++) {
        const zg_chunk_task *pt = &plan.tasks[i];
        dtask *t = &j.t[i];
        t->plan_i = i;
        t->nbytes = pt->nbytes;
        t->kind = pt->state != ZG_TASK_PRESENT ? T_MISSING : (j.gpu_decode ? T_GPU : T_CPU);
        if (!pt->unit_n) { /* another box's copy of the chunk before it */
            t->kind = T_DUP;
            t->lead = i > 0 && j.t[i - 1].kind == T_DUP ? j.t[i - 1].lead : i - 1;
        } else if (pt->decoded_elsewhere && j.dhits[i]) { /* the device cache's: scattered from its entry */
            t->kind = T_DCACHED;
            t->dhit = j.dhits[i];
            t->nbytes = 0;
        } else if (pt->decoded_elsewhere) { /* the host cache's: copied in the wave's host phase */
            t->kind = T_CPU;
            t->hit = j.hits[i];
            t->nbytes = 0;
            /* once on the device it goes into the device cache too, where its layout (C order) is the device
             * route's (no transpose): the next read scatters it from there instead of copying it again */
            t->dput = j.dcache && j.pp.src_c_order;
            t->dgen = j.dgens[i];
        } else if (j.gens) {
            t->gen = j.gens[i];
            t->dput = j.dcache && t->kind == T_GPU;
            t->dgen = j.dgens[i];
        }
        if (dev_task_reads(t)) stats.stored_bytes += pt->nbytes;
    }
    /* a driver that loads can still refuse the store's files (their file system): try one first; AUTO then
     * stages through host memory, ON fails saying why */
    if (j.use_gds) {
        const zg_chunk_task *probe = NULL;
        for (size_t i = 0; i < j.n_t && !probe; i++)
            if (dev_task_reads(&j.t[i])) probe = &plan.tasks[j.t[i].plan_i];
        if (probe) {
            char path[ZG_PATH_MAX];
            zgpu_status g = zg_store_fs_path(a->store, plan.objects[probe->object].key, path);
            if (g == ZGPU_OK) g = zg_gds_check_file(path);
            if (g != ZGPU_OK && gm == ZGPU_GDS_ON) {
                zg_error_prefix(ZG_ARRAY_WHERE_FMT ": GPUDirect Storage required (ZGPU_GDS_ON) but not usable: ", a->path);
                free_tasks(&j);
                zg_plan_free(&plan);
                free_regions(&j);
                return g;
            }
            if (g != ZGPU_OK) j.use_gds = 0;
        }
    }
    const double t_tasks = zg_now();
    pthread_mutex_lock(&st->lock);
    const double t_locked = zg_now();
    cudaError_t ce = cudaSetDevice(st->device);
    if (ce == cudaSuccess) dev_cache_reap(st);
    /* order our stream after the caller's earlier work */
    if (ce == cudaSuccess && order_user) ce = cudaEventRecord(st->ev[1], (cudaStream_t)user_stream);
    if (ce == cudaSuccess && order_user) ce = cudaStreamWaitEvent(st->stream, st->ev[1], 0);
    if (ce == cudaSuccess && rq->after) ce = cudaStreamWaitEvent(st->stream, (cudaEvent_t)rq->after, 0);
    if (ce != cudaSuccess) s = zg_error(ZGPU_ERR_CUDA, "CUDA error ordering after the caller's stream: %s", cudaGetErrorString(ce));
    if (s == ZGPU_OK) s = dev_reserve_plans(st, j.n_t);
    const double t_waves = zg_now();
    if (s == ZGPU_OK) s = dev_run_waves(&j, &stats);
    const double t_waited = zg_now();
    if (s == ZGPU_OK) {
        /* later work on the caller's stream comes after ours */
        ce = cudaEventRecord(st->ev[2], st->stream);
        if (ce == cudaSuccess && order_user) ce = cudaStreamWaitEvent((cudaStream_t)user_stream, st->ev[2], 0);
        if (ce == cudaSuccess) ce = cudaStreamSynchronize(st->stream);
        if (ce != cudaSuccess) s = zg_error(ZGPU_ERR_CUDA, "CUDA error finishing the read: %s", cudaGetErrorString(ce));
    }
    dev_trim_plans(st);
    pthread_mutex_unlock(&st->lock);
    if (j.tune->trace) /* where a small read's fixed cost goes (microseconds) */
        fprintf(stderr, "zgpu trace: device read %.1f us: plan %.1f, tasks %.1f, lock %.1f, ordering %.1f, waves %.1f, "
                "finish %.1f\n", (zg_now() - t_begin) * 1e6, stats.plan_s * 1e6, (t_tasks - t_begin - stats.plan_s) * 1e6,
                (t_locked - t_tasks) * 1e6, (t_waves - t_locked) * 1e6, (t_waited - t_waves) * 1e6,
                (zg_now() - t_waited) * 1e6);
    if (s == ZGPU_OK) {
        stats.total_s = zg_now() - t_begin;
        for (size_t r = 0; r < rq->n; r++) {
            uint64_t bytes = a->meta.dtype.size;
            for (int d = 0; d < plan.ndim; d++) bytes *= rq->counts[r * (size_t)plan.ndim + (size_t)d];
            stats.decoded_bytes += bytes;
        }
        stats.route = ZGPU_ROUTE_DEVICE;
        if (dev_buffer_growths() != grown) learn = 0;
        if (learn && rq->host_dest) *rq->lesson = (zg_host_lesson){1, picked, t_pick, NULL}; /* (after the copy back) */
        else if (learn) learn_route(a, &picked, j.tune, stats.total_s - t_pick);
        stats.gds_used = j.use_gds;
        for (size_t i = 0; i < j.n_t; i++) {
            if (j.t[i].kind == T_GPU) stats.gpu_decoded++;
            /* (T_DCACHED: counted in device_cache_hits) */
            else if (j.t[i].kind == T_CPU && !j.t[i].hit) stats.cpu_decoded++;
            stats.chunks += j.t[i].kind != T_DUP;
        }
        zg_array_set_stats(a, &stats);
    }
    free_tasks(&j);
    zg_plan_free(&plan);
    free_regions(&j);
    return s;
}

/* A read that failed because a shard was replaced meanwhile (a remote one on the server, a local one read by
 * reopening it) runs once more, from a fresh index (plan/plan.h zg_plan_shard_changes). */
zgpu_status dev_run_read(zgpu_array *a, const zg_dev_request *rq, void *user_stream, int order_user) {
    const unsigned changes = zg_plan_shard_changes(a);
    zgpu_status st = dev_read_once(a, rq, user_stream, order_user);
    if (st != ZGPU_OK && zg_plan_shard_changes(a) != changes) st = dev_read_once(a, rq, user_stream, order_user);
    return st;
}
