/* Waves: a read split by the device memory budget (and for overlap) into waves on a ring of buffer sets;
 * wave w + 1's reads overlap wave w's launch and earlier waves' decode. */
#include "device/job.h"


/* Wave sizing: a selection whose chunks all decode fast per chunk (zgpu's zstd decoder, blosc's small blocks,
 * uncompressed, host-decoded) or whose decoder splits the chunks of a small wave (zgpu's DEFLATE decoder: a
 * wave of fewer chunks splits each into more parts) is read in about PIPELINE_WAVES waves (the DEFLATE decoder:
 * 4, its entry's `waves`) of at least PIPELINE_MIN_WAVE bytes, so that the decode of one wave overlaps the I/O
 * of the next. nvCOMP decodes a whole zstd / DEFLATE / LZ4 chunk in one thread block: the time per wave is that
 * of one chunk whatever the wave's size, so such reads (waves = 1) keep the fewest waves the memory budget
 * allows. So do selections that compress better than 4:1 (the decoder's one_wave_ratio where it sets one): their
 * I/O is short next to their decode, which a split would only lengthen (a wave's decode time has a floor, its
 * longest chain of dependent steps). Tuning's
 * pipeline_waves = n sets
 * the count for every read, with no minimum wave size (1: off, for measuring the decode stage alone; n > 1 also
 * lets tests pipeline small arrays). Returns the wave count to aim at. */
/* Five: a wave's reads cost little more than its share since the next wave's overlap them (dev_run_waves), and the
 * last wave's decode, the read's tail after its I/O, shrinks with it. H100, zgpu bench --repeat 9, four rounds
 * each (ms, 3 -> 5 waves): field blosc-lz4 19.9-21.6 -> 18.8-20.2, field zstd 26.7-29.4 -> 25.3-28.5, oct zstd
 * 31.6-34.1 -> 30.4-32.2, oct blosc-lz4 24.9-29.3 -> 21.8-23.1, field sharded-zstd 26.2-29.3 -> 25.1-27.9. */
#define PIPELINE_WAVES 5
#define PIPELINE_MIN_WAVE ((uint64_t)128 << 20)
static int forced_waves(const job *j) { return j->tune->pipeline_waves; /* 0: zgpu's choice */ }
/* The smallest wave of a pipelined read: the stored format's decoder's (gpu_decoder.h: min_wave_mib), else
 * PIPELINE_MIN_WAVE; none when the tuning forces the count. */
static uint64_t min_wave(const job *j) {
    if (forced_waves(j)) return 0;
    const zg_gpu_decoder *d = j->gpu_decode ? j->dec_main : NULL;
    return d && d->min_wave_mib ? (uint64_t)d->min_wave_mib << 20 : PIPELINE_MIN_WAVE;
}

/* The chunks the read finds decode to more than `ratio` times their stored bytes. */
static int compresses_over(const job *j, int ratio) {
    uint64_t stored = 0, decoded = 0;
    for (size_t i = 0; i < j->n_t; i++)
        if (dev_task_reads(&j->t[i])) {
            stored += j->t[i].nbytes;
            decoded += j->pp.chunk_nbytes;
        }
    return (uint64_t)ratio * stored < decoded;
}

static int pipeline_waves(const job *j) {
    if (forced_waves(j)) return forced_waves(j);
    /* the stored format's decoder may ask for its own count (gpu_decoder.h: waves): 1, or n unless the read
     * compresses better than its one_wave_ratio (else 4) to one (zgpu's DEFLATE decoder: 4 waves, 8:1; deflate_gpu.c
     * says why) */
    const zg_gpu_decoder *d = j->gpu_decode ? j->dec_main : NULL;
    const int ratio = d && d->one_wave_ratio > 0 ? d->one_wave_ratio : 4;
    if (d && d->waves == 1) return 1;
    if (d && d->waves > 1) return compresses_over(j, ratio) ? 1 : d->waves;
    return compresses_over(j, ratio) ? 1 : PIPELINE_WAVES;
}

/* The buffer set's last wave is finished (or there is none): dev_check_wave would not wait. */
static int set_free(bufset *b, const wave_check *wc) {
    if (!wc->active) return 1;
    const cudaError_t e = cudaEventQuery(b->done);
    if (e == cudaErrorNotReady) return 0;
    return 1; /* done, or an error dev_check_wave reports */
}

/* After a wave (also a failed one): its reads finished, its pieces and segments freed. */
static void wave_io_free(wave_io *io) {
    if (io->reading) zg_pool_finish(io->j->a->ctx->pool, io->reading);
    io->reading = NULL;
    dev_free_pieces(io);
    dev_free_segments(io);
}

/* Wave w's start: its buffer set's last wave finished and checked, its stored bytes laid out in the staging,
 * then its reads (phase A) queued on the pool. */
static zgpu_status wave_start(job *j, wave_io *io, const zg_wave *wv, size_t w, bufset *b, wave_check *wc,
                              zgpu_read_stats *stats) {
    struct zg_device_state *st = j->st;
    ZG_FORWARD(dev_check_wave(j, b, wc, stats));
    io->j = j;
    io->w = w;
    io->bs = b;
    io->first = wv->first;
    io->count = wv->count;
    io->L.pos = 0;
    for (size_t i = io->first; i < io->first + io->count; i++)
        if (dev_task_reads(&j->t[i]))
            j->t[i].h_off = take(&io->L, j->t[i].nbytes + (j->t[i].kind == T_GPU ? ALIGN : 0));
    io->r1_end = io->L.pos;
    ZG_FORWARD(dev_ensure_pinned(st, b, io->r1_end ? io->r1_end : 1, 0));
    /* device room for the whole wave now (the cost model's estimate), so that staged bytes can go there
     * during the I/O; dev_launch_wave grows it if the estimate was short */
    io->dev_need = wv->bytes > io->r1_end ? wv->bytes : io->r1_end;
    ZG_FORWARD(dev_ensure_device(st->copy, &b->d, &b->d_cap, io->dev_need ? io->dev_need : 1, 0));
    if (j->use_gds && cudaStreamSynchronize(st->copy) != cudaSuccess)
        return zg_error(ZGPU_ERR_CUDA, "stream synchronisation failed");
    io->h2d_done = 0;
    if (!j->use_gds && j->gpu_decode) ZG_FORWARD(dev_make_segments(io, io->r1_end, 0));
    atomic_store(&io->io_ns, 0);
    atomic_store(&io->parse_ns, 0);
    atomic_store(&io->cpu_ns, 0);
    io->t0 = zg_now();
    if (j->remote_waves) return zg_pool_start(j->a->ctx->pool, 1, dev_phase_a_remote, io, &io->reading);
    ZG_FORWARD(dev_make_pieces(io));
    return zg_pool_start(j->a->ctx->pool, io->n_pieces, dev_phase_a_piece, io, &io->reading);
}

/* Waits for wave io->w's reads (this thread working on them too), then checks GDS-read frames on the host. */
static zgpu_status wave_finish_reads(job *j, wave_io *io, wave_check *wc, zgpu_read_stats *stats) {
    struct zg_device_state *st = j->st;
    bufset *b = io->bs;
    zgpu_status s = zg_pool_finish(j->a->ctx->pool, io->reading);
    io->reading = NULL;
    dev_free_pieces(io);
    const double now = zg_now();
    stats->io_s += now - (io->t0 > j->io_end ? io->t0 : j->io_end); /* (waves' reads may overlap: counted once) */
    j->io_end = now;
    if (j->trace)
        fprintf(stderr, "zgpu trace: wave %zu read in %.2f ms: threads' time reading %.2f ms, parsing %.2f ms\n", io->w,
                (now - io->t0) * 1e3, (double)atomic_load(&io->io_ns) / 1e6, (double)atomic_load(&io->parse_ns) / 1e6);
    wc->wave = io->w;
    wc->host_read = (now - j->t_fork) * 1e3;
    if (s == ZGPU_OK && j->use_gds && j->host_parse && io->r1_end) {
        /* frames must be checked on the host: bring the stored bytes back once */
        if (cudaMemcpyAsync(b->h, b->d, io->r1_end, cudaMemcpyDeviceToHost, st->stream) != cudaSuccess ||
            cudaStreamSynchronize(st->stream) != cudaSuccess)
            s = zg_error(ZGPU_ERR_CUDA, "copying GDS-read bytes back for frame checks failed");
    }
    if (s == ZGPU_OK && j->gpu_decode && j->use_gds) s = zg_pool_run(j->a->ctx->pool, io->count, dev_phase_parse_task, io);
    /* the stored bytes are on the device (queued segments, or GDS with nothing changed on the host), or not
     * needed there (the host decodes everything) */
    if (s == ZGPU_OK && (io->seg || !j->gpu_decode || (j->use_gds && !j->host_parse))) io->h2d_done = io->r1_end;
    dev_free_segments(io);
    return s;
}

static int wave_has_cpu_tasks(const job *j, const wave_io *io) {
    for (size_t i = io->first; i < io->first + io->count; i++)
        if (j->t[i].kind == T_CPU) return 1;
    return 0;
}

/* Wave io->w after its reads: the chunks the GPU does not take decoded on the host, then the wave launched. */
static zgpu_status wave_launch(job *j, wave_io *io, wave_check *wc, zgpu_read_stats *stats, uint64_t set_room) {
    struct zg_device_state *st = j->st;
    bufset *b = io->bs;
    layout L = io->L;
    for (size_t i = io->first; i < io->first + io->count; i++)
        if (j->t[i].kind == T_CPU) j->t[i].cpu_off = take(&L, j->pp.chunk_nbytes);
    zgpu_status s = dev_ensure_pinned(st, b, L.pos ? L.pos : 1, io->r1_end);
    /* host-decoded chunks go to the device in segments too, as they are done */
    const uint64_t cpu_end = L.pos;
    if (s == ZGPU_OK && cpu_end > io->r1_end) {
        s = dev_ensure_device(st->copy, &b->d, &b->d_cap, cpu_end, io->h2d_done);
        if (s == ZGPU_OK) s = dev_make_segments(io, cpu_end, 1);
    }
    if (s == ZGPU_OK) {
        double t_cpu = zg_now(); /* host decode of CPU-fallback chunks counts as decode time */
        s = zg_pool_run(j->a->ctx->pool, io->count, dev_phase_cpu_task, io);
        stats->decode_s += zg_now() - t_cpu;
    }
    if (s == ZGPU_OK && io->seg) io->h2d_done = cpu_end;
    dev_free_segments(io);
    if (s != ZGPU_OK) return s;
    j->bs = b;
    j->first = io->first;
    j->count = io->count;
    j->h2d_done = io->h2d_done;
    j->parts_room = set_room > io->dev_need ? set_room - io->dev_need : 0;
    s = dev_launch_wave(j, b, &L, wc);
    wc->host_launch = (zg_now() - j->t_fork) * 1e3;
    return s;
}

zgpu_status dev_run_waves(job *j, zgpu_read_stats *stats) {
    struct zg_device_state *st = j->st;
    const dev_pipe *pp = &j->pp;
    const uint64_t slot = zg_align_up(pp->chunk_nbytes > pp->comp_out ? pp->chunk_nbytes : pp->comp_out, ALIGN);
    uint64_t *cost = malloc((j->n_t ? j->n_t : 1) * sizeof *cost);
    ZG_RETURN_IF(!cost, ZGPU_ERR_NO_MEMORY, "out of host memory planning waves");
    for (size_t i = 0; i < j->n_t; i++) {
        const dtask *t = &j->t[i];
        cost[i] = 64; /* descriptors */
        /* a chunk that decodes straight into the output needs no scratch slot; blosc one slot (its shuffled
         * blocks), assuming the chunk is shuffled (dev_launch_wave grows the buffer if not) */
        int mapped;
        uint8_t *zplace;
        const int direct = t->kind == T_GPU && dev_direct_target(j, t, 1, &mapped, &zplace) != NULL;
        const uint64_t slots = direct ? (pp->comp == ZG_GPU_FORMAT_BLOSC ? 1 : 0) : (pp->needs_b ? 2 : 1);
        if (t->kind == T_GPU) cost[i] += zg_align_up(t->nbytes, ALIGN) + ALIGN + slots * slot;
        /* a planning decoder's literal buffer (zgpu's zstd decoder; known only after parsing): at most the chunk,
         * and at most 8 literals per stored byte (Huffman codes are at least one bit) */
        if (t->kind == T_GPU && j->plans_scratch)
            cost[i] += slot < 8 * t->nbytes ? slot : 8 * t->nbytes;
        else if (t->kind == T_CPU) cost[i] += zg_align_up(t->nbytes, ALIGN) + slot;
    }
    zg_wave *waves = NULL;
    size_t nw = 0;
    const size_t budget = j->a->ctx->opts.device_memory_budget ? j->a->ctx->opts.device_memory_budget : st->auto_budget;
    uint64_t limit = zg_wave_limit(budget);
    /* a few waves, so that the decode of one overlaps the I/O of the next (on another stream) */
    const unsigned *shape = j->tune->wave_shape; /* the waves' relative sizes, for measuring shapes (none: equal) */
    const size_t n_shape = (size_t)j->tune->n_wave_shape;
    zgpu_status s;
    if (n_shape) {
        s = zg_waves_split_shaped(j->n_t, cost, shape, n_shape, limit, &waves, &nw);
    } else {
        limit = zg_pipeline_limit(j->n_t, cost, pipeline_waves(j), min_wave(j), limit);
        s = zg_waves_split(j->n_t, cost, limit, &waves, &nw);
    }
    if (s != ZGPU_OK) {
        free(cost);
        return zg_error_prefix(ZG_ARRAY_WHERE_FMT ": ", j->a->path), s;
    }
    /* another box's copy of a chunk (T_DUP) scatters from its leader's decode: it stays in the leader's wave */
    size_t kept = 0;
    for (size_t w = 0; w < nw; w++) {
        while (kept && waves[w].count && j->t[waves[w].first].kind == T_DUP) {
            waves[kept - 1].count++;
            waves[kept - 1].bytes += cost[waves[w].first];
            waves[w].bytes -= cost[waves[w].first];
            waves[w].first++;
            waves[w].count--;
        }
        if (waves[w].count) waves[kept++] = waves[w];
    }
    nw = kept;
    free(cost);
    stats->waves = (int)nw;
    /* tuning's wave_sets (2..ZG_MAX_SETS, checked by the context; 0: all) caps the waves in flight, for measuring
     * what the ring buys */
    const int sets_cap = j->tune->wave_sets ? j->tune->wave_sets : ZG_MAX_SETS;
    const size_t n_sets = zg_sets_in_flight(waves, nw, budget, (size_t)sets_cap);
    wave_check wc[ZG_MAX_SETS];
    memset(wc, 0, sizeof wc);
    const int host_parse = pp->comp != ZG_GPU_FORMAT_NONE || pp->n_outer_crc > 0 || !j->gpu_decode;
    j->host_parse = host_parse;
    /* fork: both sets' streams start after what the read's stream waits for (the caller's earlier work) */
    if (cudaEventRecord(st->ev[0], st->stream) != cudaSuccess)
        s = zg_error(ZGPU_ERR_CUDA, "CUDA error starting the read's streams");
    j->t_fork = zg_now();
    j->trace = j->tune->trace;
    if (j->trace)
        fprintf(stderr, "zgpu trace: %zu waves on %zu buffer sets, largest %llu bytes, budget %zu\n", nw, n_sets,
                (unsigned long long)zg_waves_largest(waves, nw), budget);
    /* only the sets this read's waves use fork and join: a set left out has no work of this read, and what an
     * earlier read left on it was joined and synchronised with that read (each pair costs the small reads 2-3 us) */
    const size_t used = nw < n_sets ? nw : n_sets;
    for (size_t k = 0; k < used && s == ZGPU_OK; k++)
        if (cudaStreamWaitEvent(st->set[k].stream, st->ev[0], 0) != cudaSuccess)
            s = zg_error(ZGPU_ERR_CUDA, "CUDA error starting the read's streams");
    /* Wave w's reads, then its host work and launch. When wave w + 1's buffer set is free at once (its last wave
     * decoded: three sets or more), wave w + 1's reads are queued on the pool before waiting for wave w's, so
     * that the pool's threads go on to them as wave w's run out (rather than idling while the last pieces and
     * frame checks of wave w finish) and read on while the main thread launches wave w. tuning's wave_overlap OFF
     * turns this off (for measuring it). */
    const int overlap = j->gpu_decode && !j->use_gds && j->tune->wave_overlap != ZGPU_SWITCH_OFF;
    wave_io io[2];
    memset(io, 0, sizeof io);
    j->io_end = 0;
    if (s == ZGPU_OK && nw) s = wave_start(j, &io[0], &waves[0], 0, &st->set[0], &wc[0], stats);
    for (size_t w = 0; w < nw && s == ZGPU_OK; w++) {
        wave_io *cur = &io[w & 1], *next = &io[(w + 1) & 1];
        const size_t k = w % n_sets, k1 = (w + 1) % n_sets;
        int early = 0;
        if (overlap && w + 1 < nw && set_free(&st->set[k1], &wc[k1])) {
            s = wave_start(j, next, &waves[w + 1], w + 1, &st->set[k1], &wc[k1], stats);
            early = 1;
        }
        if (s == ZGPU_OK && cur->reading) s = wave_finish_reads(j, cur, &wc[k], stats);
        /* host-decoded chunks get the pool to themselves (queued behind wave w + 1's reads, only this thread
         * would work on them until those had run out) */
        if (s == ZGPU_OK && early && next->reading && wave_has_cpu_tasks(j, cur))
            s = wave_finish_reads(j, next, &wc[k1], stats);
        if (s == ZGPU_OK) s = wave_launch(j, cur, &wc[k], stats, budget / n_sets);
        if (s == ZGPU_OK && !early && w + 1 < nw) s = wave_start(j, next, &waves[w + 1], w + 1, &st->set[k1], &wc[k1], stats);
    }
    for (int i = 0; i < 2; i++) wave_io_free(&io[i]); /* after an error: reads still under way finish first */
    for (size_t w = nw > n_sets ? nw - n_sets : 0; w < nw; w++) { /* the waves still in flight, in order */
        const size_t k = w % n_sets;
        zgpu_status s2 = dev_check_wave(j, &st->set[k], &wc[k], stats);
        if (s == ZGPU_OK) s = s2;
    }
    zg_span_close(&j->span[0], &stats->h2d_s);
    zg_span_close(&j->span[1], &stats->decode_s);
    zg_span_close(&j->span[2], &stats->scatter_s);
    for (int k = 0; k < ZG_MAX_SETS; k++) {
        zgpu_status s2 = dev_check_wave(j, &st->set[k], &wc[k], stats); /* after an error: waves still active */
        if (s == ZGPU_OK) s = s2;
        free(wc[k].refs);
        free(wc[k].crc_task);
        free(wc[k].chk_task);
        /* join: the read's stream continues after its sets' work */
        if ((size_t)k < used && (cudaEventRecord(st->set[k].done, st->set[k].stream) != cudaSuccess ||
                                 cudaStreamWaitEvent(st->stream, st->set[k].done, 0) != cudaSuccess))
            if (s == ZGPU_OK) s = zg_error(ZGPU_ERR_CUDA, "CUDA error joining the read's streams");
    }
    if (s != ZGPU_OK) { /* nothing may still write into the caller's buffer or read the staging */
        cudaStreamSynchronize(st->copy);
        for (int k = 0; k < ZG_MAX_SETS; k++) cudaStreamSynchronize(st->set[k].stream);
        cudaStreamSynchronize(st->stream);
    }
    free(waves);
    return s;
}
