/* Phase B and C of one wave: descriptors written behind the staged data, ONE host-to-device copy, then the
 * decoders' launches, the post stages and the scatter on the wave's stream. */
#include "cache/chunk_cache.h"
#include "device/job.h"
#include "jit/nvrtc_lib.h"
#include "jit/scatter_gpu.h"

/* The driver's view of a wave's chunks for its decoders (gpu_decoder.h: zg_gpu_wave). */
static const void *wave_plan_of(const void *ctx, size_t i) {
    const job *j = ctx;
    const dtask *t = &j->t[j->first + i];
    return t->kind == T_GPU ? t->zp : NULL;
}
static uint64_t wave_staged_at(const void *ctx, size_t i) {
    const job *j = ctx;
    return j->t[j->first + i].h_off;
}
static int wave_map_rows(const void *ctx, void *rows) { return dev_zstd_rows((const job *)ctx, (zg_zd_rows *)rows); }

/* Device temp memory for a decoder (nvCOMP's), kept with the buffer set and grown in stream order. */
/* One scatter launch: the plain kernel, or for a converting read (zgpu_read_options) the kernel built for its
 * conversion (src/jit/), the conversion fused into the scatter. */
static zgpu_status scatter(const job *j, const zg_k_scatter_params *p, const zg_k_scatter *items, const uint64_t *counts,
                           size_t n, uint64_t max_rows, cudaStream_t s) {
    if (!n) return ZGPU_OK;
    if (!j->x.identity) return zg_jit_scatter_launch(&j->x, p, items, counts, n, max_rows, s);
    cudaError_t e = zg_k_scatter_launch(p, items, counts, n, max_rows, s);
    return e == cudaSuccess ? ZGPU_OK : zg_error(ZGPU_ERR_CUDA, "CUDA error in the scatter kernel: %s",
                                                 cudaGetErrorString(e));
}

static zgpu_status wave_temp(void *ctx, size_t bytes, void **p) {
    bufset *b = ctx;
    ZG_FORWARD(dev_ensure_device(b->stream, &b->d_temp, &b->d_temp_cap, bytes, 0));
    *p = b->d_temp;
    return ZGPU_OK;
}

/* Builds and launches one wave's device work. The pinned buffer already holds stored bytes and CPU-decoded
 * chunks (up to L->pos); descriptors go behind them, then ONE host-to-device copy, then the launches. */
zgpu_status dev_launch_wave(job *j, bufset *b, layout *L, wave_check *wc) {
    struct zg_device_state *st = j->st;
    const dev_pipe *pp = &j->pp;
    const int nd = j->plan->ndim;
    const size_t first = j->first, count = j->count;
    const size_t itemsize = j->a->meta.dtype.size;
    cudaStream_t s = b->stream;
    const uint64_t data_end = L->pos;
    double tl[5] = {0}; /* trace: when the host began, then finished the descriptors, the scatter list, the order */
    tl[0] = j->trace ? zg_now() : 0;
    const size_t n_dec = j->n_decs;
    size_t n_fmt[ZG_GPU_MAX_DECODERS] = {0}, n_copy = 0, n_gpu = 0, n_refs = 0, n_unsh = 0;
    size_t n_chk = 0; /* checksums of decoded bytes the check kernel verifies (route.c: the ones no decoder does) */
    for (size_t d = 0; d < n_dec; d++) { /* each decoder's view of the wave */
        zg_gpu_wave *w = &j->dw[d];
        memset(w->state, 0, sizeof w->state);
        w->n = w->base = 0;
        w->container = pp->comp;
        w->n_tasks = count;
        w->room = j->parts_room;
        w->tune = j->tune;
        w->trace = j->trace;
        w->pool = j->a->ctx->pool;
        w->plan_of = wave_plan_of;
        w->staged_at = wave_staged_at;
        w->map_rows = wave_map_rows;
        w->ctx = j;
        w->H = w->D = NULL;
        w->rows_mappable = 0;
    }
    for (size_t i = first; i < first + count; i++) {
        const dtask *t = &j->t[i];
        if (t->kind != T_GPU) continue;
        n_gpu++;
        const zg_gpu_decoder *dec = j->decs[t->dec];
        if (pp->comp == ZG_GPU_FORMAT_BLOSC) {
            for (size_t k = 0; k < t->n_streams; k++) {
                const zg_blosc_stream *bs = &t->streams[k];
                if (bs->raw || t->bh.memcpyed) {
                    n_copy++;
                } else {
                    n_fmt[t->dec]++;
                    n_chk += bs->check_kind != ZG_CHECK_NONE;
                    if (dec->count) dec->count(&j->dw[t->dec], bs->src_len, bs->dst_len);
                }
            }
            if (zg_blosc_gpu_shuffled(&t->bh)) n_unsh++;
        } else if (pp->comp != ZG_GPU_FORMAT_NONE) {
            n_fmt[t->dec]++;
            n_chk += t->check_kind != ZG_CHECK_NONE;
            /* (the stored chunk, framing included) */
            if (dec->count) dec->count(&j->dw[t->dec], t->nbytes, pp->comp_out);
        }
    }
    size_t fmt_base[ZG_GPU_MAX_DECODERS];
    for (size_t d = 0; d < n_dec; d++) {
        fmt_base[d] = n_refs;
        j->dw[d].base = n_refs;
        j->dw[d].n = n_fmt[d];
        n_refs += n_fmt[d];
    }
    const size_t n_crc = (size_t)pp->n_post * n_gpu; /* upper bound */
    /* descriptor layout: host offsets == device offsets */
    const uint64_t o_in = take(L, 8 * n_refs), o_inb = take(L, 8 * n_refs), o_cap = take(L, 8 * n_refs);
    const uint64_t o_out = take(L, 8 * n_refs);
    const uint64_t o_copy = take(L, sizeof(zg_k_copy) * n_copy);
    const uint64_t o_unsh = take(L, sizeof(zg_k_unshuffle) * n_unsh);
    uint64_t o_post[ZG_MAX_CODECS + 2];
    for (int q = 0; q < pp->n_post; q++) o_post[q] = take(L, sizeof(zg_k_unshuffle) * n_gpu);
    const uint64_t o_sc = take(L, sizeof(zg_k_scatter) * count), o_sc2 = take(L, sizeof(zg_k_scatter) * count);
    const uint64_t o_cnt = take(L, 8 * (uint64_t)(nd ? nd : 1) * count);
    const uint64_t o_cnt2 = take(L, 8 * (uint64_t)(nd ? nd : 1) * count);
    const uint64_t o_fill = take(L, itemsize);
    const uint64_t o_chkd = take(L, sizeof(zg_k_check) * n_chk);
    /* the decoders' descriptors (copied to the device with the rest) */
    j->zstd_mappable = 0;
    for (size_t d = 0; d < n_dec; d++) {
        if (j->decs[d]->reserve_host) j->decs[d]->reserve_host(&j->dw[d], &L->pos);
        j->zstd_mappable |= j->dw[d].rows_mappable;
    }
    const uint64_t o_safe = take(L, ZG_GPU_SAFE_BYTES); /* a valid empty LZ4 block, standing in for invalid ones */
    const uint64_t o_status = take(L, 4 * n_refs), o_act = take(L, 8 * n_refs), o_crc = take(L, 4 * (n_crc ? n_crc : 1));
    const uint64_t o_pre = take(L, 4 * (n_refs ? n_refs : 1));
    const uint64_t o_chk = take(L, 4 * (n_chk ? n_chk : 1));
    const uint64_t res_begin = o_status, res_end = L->pos;
    const uint64_t host_end = L->pos;
    /* the decoders' device-only scratch */
    for (size_t d = 0; d < n_dec; d++)
        if (j->decs[d]->reserve_device) j->decs[d]->reserve_device(&j->dw[d], &L->pos);
    /* scratch slots: device only; a chunk that decodes straight into the output needs none (or only A) */
    const uint64_t slot = pp->chunk_nbytes > pp->comp_out ? pp->chunk_nbytes : pp->comp_out;
    for (size_t i = first; i < first + count; i++) {
        dtask *t = &j->t[i];
        if (t->kind != T_GPU) continue;
        t->direct = dev_direct_target(j, t, 0, &t->mapped, &t->zplace);
        int blosc_direct = t->direct && pp->comp == ZG_GPU_FORMAT_BLOSC;
        t->a_off = pp->comp == ZG_GPU_FORMAT_NONE && !pp->needs_b ? t->h_off : (t->direct && !blosc_direct) ? 0 : take(L, slot);
        t->b_off = pp->needs_b && !t->direct ? take(L, slot) : t->a_off;
    }
    ZG_FORWARD(dev_ensure_pinned(st, b, host_end, data_end));
    /* the staged bytes below data_end may be on the device already (copied segment by segment during I/O) */
    ZG_FORWARD(dev_ensure_device(st->copy, &b->d, &b->d_cap, L->pos, j->h2d_done));
    uint8_t *H = b->h, *D = b->d;

    wc->refs = malloc((n_refs ? n_refs : 1) * sizeof *wc->refs);
    wc->crc_task = malloc((n_crc ? n_crc : 1) * sizeof *wc->crc_task);
    wc->chk_task = malloc((n_chk ? n_chk : 1) * sizeof *wc->chk_task);
    wc->chk_off = o_chk;
    wc->n_chk = 0;
    ZG_RETURN_IF(!wc->refs || !wc->crc_task || !wc->chk_task, ZGPU_ERR_NO_MEMORY, "out of host memory for descriptors");
    wc->n_refs = n_refs;
    wc->status_off = o_status;
    wc->pre_off = o_pre;
    wc->actual_off = o_act;
    wc->crc_off = o_crc;
    wc->n_crc = 0;

    for (size_t d = 0; d < n_dec; d++) {
        j->dw[d].H = H;
        j->dw[d].D = D;
    }

    /* compressor stage */
    size_t fill_k[ZG_GPU_MAX_DECODERS] = {0}, kc = 0, ku = 0;
    uint64_t max_copy = 0, max_un = 0;
    zg_k_copy *copies = (zg_k_copy *)(H + o_copy);
    zg_k_unshuffle *unsh = (zg_k_unshuffle *)(H + o_unsh);
    uint64_t *cur = malloc((count ? count : 1) * sizeof *cur), *size = malloc((count ? count : 1) * sizeof *size);
    if (!cur || !size) {
        free(cur);
        free(size);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for descriptors");
    }
    for (size_t d = 0; d < n_dec; d++) { /* the decoders' descriptors (zstd's: on the pool) */
        zgpu_status es = j->decs[d]->emit ? j->decs[d]->emit(&j->dw[d]) : ZGPU_OK;
        if (es != ZGPU_OK) {
            free(cur);
            free(size);
            return es;
        }
    }
    for (size_t i = first; i < first + count; i++) {
        dtask *t = &j->t[i];
        if (t->kind != T_GPU) continue;
        uint8_t *src = D + t->h_off, *dstA = D + t->a_off;
        cur[i - first] = t->a_off;
        size[i - first] = pp->comp_out;
        const int di = t->dec;
        const zg_gpu_decoder *dec = j->decs[di];
        if (pp->comp == ZG_GPU_FORMAT_BLOSC) {
            for (size_t k = 0; k < t->n_streams; k++) {
                const zg_blosc_stream *bs = &t->streams[k];
                if (bs->raw || t->bh.memcpyed) {
                    copies[kc++] = (zg_k_copy){src + bs->src_off, dstA + bs->dst_off, bs->dst_len};
                    if (bs->dst_len > max_copy) max_copy = bs->dst_len;
                    continue;
                }
                size_t r = fill_k[di]++;
                ((const void **)(H + o_in))[fmt_base[di] + r] = src + bs->src_off;
                ((uint64_t *)(H + o_inb))[fmt_base[di] + r] = bs->src_len;
                ((uint64_t *)(H + o_cap))[fmt_base[di] + r] = bs->dst_len;
                ((void **)(H + o_out))[fmt_base[di] + r] = dstA + bs->dst_off;
                wc->refs[fmt_base[di] + r] = (stream_ref){(uint32_t)i, di, bs->dst_len};
                if (dec->put) dec->put(&j->dw[di], i - first, r, dstA + bs->dst_off, 0, 0, NULL);
                if (bs->check_kind != ZG_CHECK_NONE) { /* zlib's Adler-32 (nvCOMP's zstd: XXH64), over the stream's bytes */
                    ((zg_k_check *)(H + o_chkd))[wc->n_chk] =
                        (zg_k_check){dstA + bs->dst_off, bs->dst_len, bs->check, bs->check_kind};
                    wc->chk_task[wc->n_chk++] = (struct chk_ref){(uint32_t)i, bs->check_kind};
                }
            }
            if (zg_blosc_gpu_shuffled(&t->bh)) {
                uint8_t *unsh_out = t->direct ? t->direct : D + t->b_off;
                unsh[ku++] = zg_blosc_gpu_unshuffle(&t->bh, dstA, unsh_out, t->mapped);
                if (t->bh.nbytes > max_un) max_un = t->bh.nbytes;
                cur[i - first] = t->b_off;
            }
        } else if (pp->comp == ZG_GPU_FORMAT_NONE) {
            if (t->a_off != t->h_off) {
                copies[kc++] = (zg_k_copy){src, dstA, pp->comp_out};
                if (pp->comp_out > max_copy) max_copy = pp->comp_out;
            }
        } else {
            if (t->direct) dstA = t->direct;
            size_t r = fill_k[di]++;
            ((const void **)(H + o_in))[fmt_base[di] + r] = src + t->body_off;
            ((uint64_t *)(H + o_inb))[fmt_base[di] + r] = t->body_len;
            ((uint64_t *)(H + o_cap))[fmt_base[di] + r] = pp->comp_out;
            ((void **)(H + o_out))[fmt_base[di] + r] = dstA;
            wc->refs[fmt_base[di] + r] = (stream_ref){(uint32_t)i, di, pp->comp_out};
            if (dec->put) dec->put(&j->dw[di], i - first, r, dstA, 1, t->mapped, t->zplace);
            if (t->check_kind != ZG_CHECK_NONE) { /* (over flat bytes: a chunk whose rows its decoder places, zgpu's
                                                   * zstd mapped, has its checksum verified by that decoder) */
                ((zg_k_check *)(H + o_chkd))[wc->n_chk] = (zg_k_check){dstA, pp->comp_out, t->check, t->check_kind};
                wc->chk_task[wc->n_chk++] = (struct chk_ref){(uint32_t)i, t->check_kind};
            }
        }
    }
    /* post stages: descriptors per stage, tracking where each chunk's data is */
    size_t n_items[ZG_MAX_CODECS + 2] = {0};
    uint64_t max_item[ZG_MAX_CODECS + 2] = {0};
    for (int q = 0; q < pp->n_post; q++) {
        for (size_t i = first; i < first + count; i++) {
            dtask *t = &j->t[i];
            if (t->kind != T_GPU) continue;
            uint64_t c = cur[i - first], n = size[i - first];
            if (n > max_item[q]) max_item[q] = n;
            if (pp->post[q].kind == ZG_GPU_POST_SHUFFLE) {
                uint64_t other = c == t->a_off ? t->b_off : t->a_off;
                ((zg_k_unshuffle *)(H + o_post[q]))[n_items[q]++] =
                    (zg_k_unshuffle){D + c, D + other, n, (uint32_t)pp->post[q].param, (uint32_t)(n ? n : 1), 1u, 2u, 0u};
                cur[i - first] = other;
            } else if (pp->post[q].kind == ZG_GPU_POST_ROW_FLOAT) {
                uint64_t other = c == t->a_off ? t->b_off : t->a_off;
                ((zg_k_copy *)(H + o_post[q]))[n_items[q]++] = (zg_k_copy){D + c, D + other, n};
                cur[i - first] = other;
            } else {
                ((zg_k_buf *)(H + o_post[q]))[n_items[q]++] = (zg_k_buf){D + c, n};
                if (pp->post[q].kind == ZG_GPU_POST_CRC32C) {
                    wc->crc_task[wc->n_crc++] = (uint32_t)i;
                    size[i - first] = n >= 4 ? n - 4 : 0;
                }
            }
        }
    }
    /* chunks going into the device cache: a new entry each, filled after the post stages (chunk_cache_dev.c) */
    for (size_t i = first; i < first + count; i++) {
        dtask *t = &j->t[i];
        if (t->dentry || (!dev_task_caches(t) && !dev_task_promotes(t))) continue;
        t->dsrc_off = dev_task_caches(t) ? cur[i - first] : t->cpu_off;
        t->dentry = dev_cache_alloc((size_t)pp->chunk_nbytes, s);
    }
    if (j->trace) tl[1] = zg_now();
    /* scatter: GPU-decoded chunks (strides with transposes folded in) and the others (C order, or fill) */
    zg_k_scatter *scg = (zg_k_scatter *)(H + o_sc), *scc = (zg_k_scatter *)(H + o_sc2);
    uint64_t *cntg = (uint64_t *)(H + o_cnt), *cntc = (uint64_t *)(H + o_cnt2);
    size_t ng = 0, ncc = 0;
    int64_t cpu_strides[ZGPU_MAX_DIMS];
    zg_c_strides(nd, j->plan->chunk, itemsize, cpu_strides);
    /* per scatter group (the regions with equal strides; one for a read of one box): its items [g0, g1) in each
     * list and their most rows */
    scatter_group *grp = j->groups;
    for (size_t g = 0; g < j->n_groups; g++) {
        grp[g].g0 = ng;
        grp[g].c0 = ncc;
        grp[g].rows_g = grp[g].rows_c = 1;
        for (size_t i = first; i < first + count; i++) {
            const dtask *t = &j->t[i];
            const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
            if (j->group_of[pt->region] != g) continue;
            if (t->direct || t->zplace) continue; /* in place already, or by the zstd decoder */
            /* another box's copy scatters from its leader's decoded chunk (the leader is in this wave) */
            const dtask *src_t = t->kind == T_DUP ? &j->t[t->lead] : t;
            const size_t src_i = t->kind == T_DUP ? t->lead : i;
            uint8_t *dst = dev_box_dst(j, pt);
            const uint8_t *src = NULL;
            const int64_t *dst_strides = j->strides + pt->region * (size_t)nd;
            uint64_t rows, row_len;
            int outer;
            uint64_t *cdst;
            if (src_t->kind == T_GPU || src_t->kind == T_DCACHED) {
                src = src_t->kind == T_GPU ? D + cur[src_i - first] : src_t->dhit->data;
                for (int d = 0; d < nd; d++) src += (int64_t)pt->in_chunk[d] * pp->src_strides[d];
                cdst = cntg + ng * (size_t)nd;
                scg[ng++] = (zg_k_scatter){src, dst};
                rows = zg_k_scatter_rows(nd, pp->src_strides, dst_strides, (int)itemsize, pt->count, 1, &row_len,
                                         &outer);
                if (rows > grp[g].rows_g) grp[g].rows_g = rows;
            } else {
                if (src_t->kind == T_CPU) {
                    src = D + src_t->cpu_off;
                    for (int d = 0; d < nd; d++) src += (int64_t)pt->in_chunk[d] * cpu_strides[d];
                }
                cdst = cntc + ncc * (size_t)nd;
                scc[ncc++] = (zg_k_scatter){src, dst};
                rows = zg_k_scatter_rows(nd, cpu_strides, dst_strides, (int)itemsize, pt->count, src != NULL,
                                         &row_len, &outer);
                if (rows > grp[g].rows_c) grp[g].rows_c = rows;
            }
            for (int d = 0; d < nd; d++) cdst[d] = pt->count[d];
        }
        grp[g].g1 = ng;
        grp[g].c1 = ncc;
    }
    free(cur);
    free(size);
    if (j->trace) tl[2] = zg_now();
    for (size_t d = 0; d < n_dec; d++) /* (zstd: its block order) */
        if (j->decs[d]->seal) ZG_FORWARD(j->decs[d]->seal(&j->dw[d]));
    memset(H + res_begin, 0, res_end - res_begin);
    memset(H + o_safe, 0, ZG_GPU_SAFE_BYTES);
    memcpy(H + o_fill, j->a->meta.fill_value, itemsize);
    if (j->trace) tl[3] = zg_now();

    /* the rest of the host-to-device copy (what is below h2d_done is there already), on the copy stream; the
     * decode stream waits for it. A wave of nothing but scatters from the device cache and fills (nothing staged,
     * nothing decoded) has its scatter read its few descriptors straight from the pinned buffer (mapped: one
     * address space), with no copy and no wait on the copy stream: 5-8 us of a small read's fixed cost. */
    const int host_desc = data_end == 0 && n_gpu == 0; /* (no GPU task: no streams, copies or unshuffles) */
    uint8_t *const X = host_desc ? H : D; /* where the scatter reads its descriptors */
    const uint64_t h2d_from = j->h2d_done;
    if (host_desc) {
        CU(cudaEventRecord(b->ev[0], s), "cudaEventRecord");
        CU(cudaEventRecord(b->ev[1], s), "cudaEventRecord");
    } else {
        CU(cudaEventRecord(b->ev[0], st->copy), "cudaEventRecord");
        if (host_end > h2d_from)
            CU(cudaMemcpyAsync(D + h2d_from, H + h2d_from, host_end - h2d_from, cudaMemcpyHostToDevice, st->copy),
               "H2D copy");
        CU(cudaEventRecord(b->ev[1], st->copy), "cudaEventRecord");
        CU(cudaStreamWaitEvent(s, b->ev[1], 0), "cudaStreamWaitEvent");
    }
    /* decode: one batch per decoder (registry order), raw copies, unshuffle, post stages */
    for (size_t d = 0; d < n_dec; d++) {
        if (!n_fmt[d]) continue;
        const size_t k = fmt_base[d];
        const zg_gpu_batch bt = {n_fmt[d], (const void **)(D + o_in) + k, (size_t *)(D + o_inb) + k,
                                 (const size_t *)(D + o_cap) + k, (void *const *)(D + o_out) + k,
                                 (size_t *)(D + o_act) + k, (int *)(D + o_status) + k, (int *)(D + o_pre) + k,
                                 (const uint64_t *)(H + o_cap) + k, D + o_safe, s, b->aux, b->fork, b->join,
                                 wave_temp, b};
        ZG_FORWARD(j->decs[d]->launch(&j->dw[d], &bt));
    }
    CU(zg_k_check_launch((const zg_k_check *)(D + o_chkd), wc->n_chk, (int *)(D + o_chk), s), "checksum kernel");
    CU(zg_k_copy_launch((const zg_k_copy *)(D + o_copy), kc, max_copy, s), "copy kernel");
    zg_k_row_map map; /* for chunks whose unshuffle places their rows in the output */
    memset(&map, 0, sizeof map);
    map.ndim = nd;
    for (int d = 0; d < nd; d++) {
        map.chunk[d] = (uint32_t)j->plan->chunk[d];
        map.out_strides[d] = j->out_strides[d];
    }
    CU(zg_k_unshuffle_launch((const zg_k_unshuffle *)(D + o_unsh), ku, max_un, &map, s), "unshuffle kernel");
    size_t crc_base = 0;
    for (int q = 0; q < pp->n_post; q++) {
        const void *items = D + o_post[q];
        switch (pp->post[q].kind) {
        case ZG_GPU_POST_SHUFFLE:
            CU(zg_k_unshuffle_launch((const zg_k_unshuffle *)items, n_items[q], max_item[q], NULL, s), "shuffle kernel");
            break;
        case ZG_GPU_POST_CRC32C:
            CU(zg_k_crc32c_launch((const zg_k_buf *)items, n_items[q], (int *)(D + o_crc) + crc_base, s), "crc32c kernel");
            crc_base += n_items[q];
            break;
        case ZG_GPU_POST_BYTESWAP:
            CU(zg_k_byteswap_launch((const zg_k_buf *)items, n_items[q], max_item[q], pp->post[q].param, s), "byteswap kernel");
            break;
        case ZG_GPU_POST_DELTA:
            CU(zg_k_delta_launch((const zg_k_buf *)items, n_items[q], pp->post[q].param, s), "delta kernel");
            break;
        case ZG_GPU_POST_ROW_DELTA:
            CU(zg_k_row_delta_launch((const zg_k_buf *)items, n_items[q], max_item[q], pp->post[q].param,
                                     (uint32_t)pp->post[q].row, (uint32_t)pp->post[q].stride, s),
               "horizontal predictor kernel");
            break;
        case ZG_GPU_POST_ROW_FLOAT:
            CU(zg_k_row_float_launch((const zg_k_copy *)items, n_items[q], max_item[q], pp->post[q].param,
                                     (uint32_t)pp->post[q].row, (uint32_t)pp->post[q].stride, s),
               "floating-point predictor kernel");
            break;
        }
    }
    for (size_t i = first; i < first + count; i++) {
        const dtask *t = &j->t[i];
        if (t->dentry) /* (set above, for this wave's tasks only) */
            CU(cudaMemcpyAsync(t->dentry, D + t->dsrc_off, (size_t)pp->chunk_nbytes, cudaMemcpyDeviceToDevice, s),
               "copy into the device chunk cache");
    }
    CU(cudaEventRecord(b->ev[2], s), "cudaEventRecord");
    zg_k_scatter_params sp;
    memset(&sp, 0, sizeof sp);
    sp.ndim = nd;
    sp.itemsize = (int)itemsize;
    sp.d_fill = X + o_fill;
    zgpu_status scatter_st = ZGPU_OK;
    for (size_t g = 0; g < j->n_groups && scatter_st == ZGPU_OK; g++) {
        const scatter_group *q = &grp[g];
        size_t r0 = 0; /* the group's first region: its strides are the group's */
        while (j->group_of[r0] != g) r0++;
        memcpy(sp.dst_strides, j->strides + r0 * (size_t)nd, sizeof(int64_t) * (size_t)nd);
        memcpy(sp.src_strides, pp->src_strides, sizeof(int64_t) * (size_t)nd);
        scatter_st = scatter(j, &sp, (const zg_k_scatter *)(X + o_sc) + q->g0,
                             (const uint64_t *)(X + o_cnt) + q->g0 * (size_t)nd, q->g1 - q->g0, q->rows_g, s);
        memcpy(sp.src_strides, cpu_strides, sizeof(int64_t) * (size_t)nd);
        if (scatter_st == ZGPU_OK)
            scatter_st = scatter(j, &sp, (const zg_k_scatter *)(X + o_sc2) + q->c0,
                                 (const uint64_t *)(X + o_cnt2) + q->c0 * (size_t)nd, q->c1 - q->c0, q->rows_c, s);
    }
    ZG_FORWARD(scatter_st);
    CU(cudaEventRecord(b->ev[3], s), "cudaEventRecord");
    /* the statuses back, unless the wave has none to check (its checks then read the zeros written above) */
    if (res_end > res_begin && (n_refs || wc->n_crc || wc->n_chk))
        CU(cudaMemcpyAsync(H + res_begin, D + res_begin, res_end - res_begin, cudaMemcpyDeviceToHost, s), "D2H statuses");
    CU(cudaEventRecord(b->done, s), "cudaEventRecord");
    b->in_use = 1;
    wc->active = 1;
    wc->first = first;
    wc->count = count;
    if (j->trace) {
        tl[4] = zg_now();
        fprintf(stderr, "zgpu trace: wave queued in %.2f ms: descriptors %.2f, scatter list %.2f, zstd block order %.2f, "
                "copies and kernels %.2f\n", (tl[4] - tl[0]) * 1e3, (tl[1] - tl[0]) * 1e3, (tl[2] - tl[1]) * 1e3,
                (tl[3] - tl[2]) * 1e3, (tl[4] - tl[3]) * 1e3);
    }
    return ZGPU_OK;
}

int dev_convert_on_device(void) { return zg_nvrtc_available(NULL); }
