/* Phase B and C of one wave: descriptors written behind the staged data, ONE host-to-device copy, then the
 * decoders' launches, the post stages and the scatter on the wave's stream. */
#include "device/job.h"

/* zgpu's zstd decoder: each task's planned frames into the wave's descriptors, on the pool (a label volume's
 * sharded read: 8192 blocks, 5.5 MB of descriptors, 0.4 ms on one thread). While the next wave's reads hold the
 * pool (run_waves), the launching thread does them alone, beside those reads (a field wave: 0.5-0.6 ms). */
typedef struct {
    const job *j;
    const zg_zd_bases *at; /* per task of the wave: where its descriptors go */
    zg_zd_block *blocks;
    zg_zd_frame *frames;
    zg_zd_huf_desc *hufs;
    zg_zd_fse_desc *fses;
} zd_emit;

static zgpu_status zd_emit_task(void *arg, size_t i) {
    const zd_emit *e = arg;
    const dtask *t = &e->j->t[e->j->first + i];
    if (t->kind == T_GPU && t->zp) zg_zd_plan_emit(t->zp, &e->at[i], e->blocks, e->frames, e->hufs, e->fses);
    return ZGPU_OK;
}

/* Builds and launches one wave's device work. The pinned buffer already holds stored bytes and CPU-decoded
 * chunks (up to L->pos); descriptors go behind them, then ONE host-to-device copy, then the launches. */
zgpu_status dev_launch_wave(job *j, bufset *b, layout *L, wave_check *wc) {
    struct zg_device_state *st = j->st;
    const pipe *pp = &j->pp;
    const int nd = j->plan->ndim;
    const size_t first = j->first, count = j->count;
    const size_t itemsize = j->a->meta.dtype.size;
    cudaStream_t s = b->stream;
    const uint64_t data_end = L->pos;
    double tl[5] = {0}; /* ZGPU_TRACE: when the host began, then finished the descriptors, the scatter list, the order */
    tl[0] = j->trace ? zg_now() : 0;
    size_t n_fmt[N_FMT] = {0}, n_copy = 0, n_gpu = 0, n_refs = 0, n_unsh = 0;
    uint64_t inflate_max_out = 0; /* the largest output of a stream zgpu's DEFLATE decoder takes */
    int inflate_serial = 1;       /* every such stream decodes in serial mode: a launch of serial-mode blocks */
    for (size_t i = first; i < first + count; i++) {
        const dtask *t = &j->t[i];
        if (t->kind != T_GPU) continue;
        n_gpu++;
        if (pp->comp == ZG_GPU_FORMAT_BLOSC) {
            int fmt = dev_task_fmt(j, t);
            for (size_t k = 0; k < t->n_streams; k++) {
                if (t->streams[k].raw || t->bh.memcpyed) {
                    n_copy++;
                } else {
                    n_fmt[fmt]++;
                    if (fmt == FMT_INFLATE) {
                        const zg_blosc_stream *bs = &t->streams[k];
                        if (bs->dst_len > inflate_max_out) inflate_max_out = bs->dst_len;
                        inflate_serial &= zg_inflate_serial_wanted(bs->src_len, bs->dst_len);
                    }
                }
            }
            if (!t->bh.memcpyed && t->bh.shuffle != ZG_BLOSC_NOSHUFFLE) n_unsh++;
        } else if (pp->comp != ZG_GPU_FORMAT_NONE) {
            const int fmt = dev_task_fmt(j, t);
            if (fmt < 0) continue; /* (no GPU format: never a GPU task) */
            n_fmt[fmt]++;
            /* (the stored chunk, framing included: a stream serial by it is serial by its DEFLATE bytes too) */
            if (fmt == FMT_INFLATE) inflate_serial &= zg_inflate_serial_wanted(t->nbytes, pp->comp_out);
        }
    }
    if (pp->comp != ZG_GPU_FORMAT_BLOSC && n_fmt[FMT_INFLATE]) inflate_max_out = pp->comp_out;
    /* zgpu's zstd decoder: totals of the wave's planned frames */
    size_t zb_n = 0, zf_n = 0, zh_n = 0, zs_n = 0;
    uint64_t zlit_n = 0, zseq_n = 0;
    for (size_t i = first; i < first + count; i++) {
        const zg_zd_plan *zp = j->t[i].kind == T_GPU ? j->t[i].zp : NULL;
        if (!zp) continue;
        zb_n += zp->n_blocks;
        zf_n += zp->n_frames;
        zh_n += zp->n_hufs;
        zs_n += zp->n_fses;
        zlit_n += zp->lit_bytes;
        zseq_n += zp->n_seq;
    }
    size_t fmt_base[N_FMT];
    for (int f = 0; f < N_FMT; f++) {
        fmt_base[f] = n_refs;
        n_refs += n_fmt[f];
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
    const int with_chk = pp->comp == ZG_GPU_FORMAT_GZIP || pp->comp == ZG_GPU_FORMAT_ZLIB;
    const uint64_t o_chkd = take(L, sizeof(zg_k_check) * (with_chk ? n_gpu : 0));
    const uint64_t o_zb = take(L, sizeof(zg_zd_block) * zb_n), o_zf = take(L, sizeof(zg_zd_frame) * zf_n);
    const uint64_t o_zh = take(L, sizeof(zg_zd_huf_desc) * zh_n), o_zs = take(L, sizeof(zg_zd_fse_desc) * zs_n);
    const uint64_t o_zord = take(L, sizeof(uint32_t) * zb_n);
    zg_zd_rows zrows;
    memset(&zrows, 0, sizeof zrows);
    j->zstd_mappable = zb_n && pp->comp == ZG_GPU_FORMAT_ZSTD ? dev_zstd_rows(j, &zrows) : 0;
    const uint64_t o_safe = take(L, 16); /* a valid empty LZ4 block, standing in for invalid ones */
    const uint64_t o_status = take(L, 4 * n_refs), o_act = take(L, 8 * n_refs), o_crc = take(L, 4 * (n_crc ? n_crc : 1));
    const uint64_t o_lz4 = take(L, 4 * (n_refs ? n_refs : 1));
    const uint64_t o_chk = take(L, 4 * (n_gpu ? n_gpu : 1));
    const uint64_t res_begin = o_status, res_end = L->pos;
    const uint64_t host_end = L->pos;
    const uint64_t o_zlit = take(L, zlit_n), o_zseq = take(L, sizeof(zg_zd_seq) * zseq_n);
    const uint64_t o_zscr = take(L, zg_zd_scratch_bytes((uint32_t)zb_n));
    /* zgpu's DEFLATE decoder splits the streams of a small wave into parts, whose buffers take the room the
     * wave leaves in its set's share of the budget */
    const size_t inflate_parts =
        zg_inflate_parts(n_fmt[FMT_INFLATE], inflate_max_out, j->parts_room, inflate_serial, j->tune->inflate_parts);
    const uint64_t o_iscr = take(L, zg_inflate_scratch_bytes(n_fmt[FMT_INFLATE], inflate_max_out, inflate_parts));
    if (j->trace && n_fmt[FMT_INFLATE])
        fprintf(stderr, "zgpu trace: wave of %zu chunks: %zu DEFLATE streams in %zu parts each (room %.0f MB)\n", count,
                n_fmt[FMT_INFLATE], inflate_parts, j->parts_room / 1e6);
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
    wc->chk_task = malloc((n_gpu ? n_gpu : 1) * sizeof *wc->chk_task);
    wc->chk_off = o_chk;
    wc->n_chk = 0;
    ZG_RETURN_IF(!wc->refs || !wc->crc_task || !wc->chk_task, ZGPU_ERR_NO_MEMORY, "out of host memory for descriptors");
    wc->n_refs = n_refs;
    wc->status_off = o_status;
    wc->lz4_off = o_lz4;
    wc->actual_off = o_act;
    wc->crc_off = o_crc;
    wc->n_crc = 0;

    /* compressor stage */
    size_t fill_k[N_FMT] = {0}, kc = 0, ku = 0;
    zg_zd_bases zat = {0, (uint64_t)(uintptr_t)(D + o_zlit), (uint64_t)(uintptr_t)(D + o_zseq), 0, 0, 0, 0};
    zg_zd_frame *zframes = (zg_zd_frame *)(H + o_zf);
    uint64_t max_copy = 0, max_un = 0;
    zg_k_copy *copies = (zg_k_copy *)(H + o_copy);
    zg_k_unshuffle *unsh = (zg_k_unshuffle *)(H + o_unsh);
    uint64_t *cur = malloc((count ? count : 1) * sizeof *cur), *size = malloc((count ? count : 1) * sizeof *size);
    zg_zd_bases *zbase = zf_n ? malloc(count * sizeof *zbase) : NULL;
    if (!cur || !size || (zf_n && !zbase)) {
        free(cur);
        free(size);
        free(zbase);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for descriptors");
    }
    if (zf_n) { /* where each task's zstd descriptors go, then all of them written at once */
        for (size_t i = first; i < first + count; i++) {
            const dtask *t = &j->t[i];
            zbase[i - first] = zat;
            if (t->kind != T_GPU || !t->zp) continue;
            zbase[i - first].src = (uint64_t)(uintptr_t)(D + t->h_off);
            zat.lit += t->zp->lit_bytes;
            zat.seq += t->zp->n_seq * sizeof(zg_zd_seq);
            zat.block += (uint32_t)t->zp->n_blocks;
            zat.frame += (uint32_t)t->zp->n_frames;
            zat.huf += (uint32_t)t->zp->n_hufs;
            zat.fse += (uint32_t)t->zp->n_fses;
        }
        zd_emit e = {j, zbase, (zg_zd_block *)(H + o_zb), zframes, (zg_zd_huf_desc *)(H + o_zh),
                     (zg_zd_fse_desc *)(H + o_zs)};
        zgpu_status es = zg_pool_run(j->a->ctx->pool, count, zd_emit_task, &e);
        if (es != ZGPU_OK) {
            free(cur);
            free(size);
            free(zbase);
            return es;
        }
    }
    for (size_t i = first; i < first + count; i++) {
        dtask *t = &j->t[i];
        if (t->kind != T_GPU) continue;
        uint8_t *src = D + t->h_off, *dstA = D + t->a_off;
        cur[i - first] = t->a_off;
        size[i - first] = pp->comp_out;
        uint32_t zframe = zbase ? zbase[i - first].frame : 0; /* the task's next zstd frame (in its streams' order) */
        if (pp->comp == ZG_GPU_FORMAT_BLOSC) {
            int fmt = dev_task_fmt(j, t);
            for (size_t k = 0; k < t->n_streams; k++) {
                const zg_blosc_stream *bs = &t->streams[k];
                if (bs->raw || t->bh.memcpyed) {
                    copies[kc++] = (zg_k_copy){src + bs->src_off, dstA + bs->dst_off, bs->dst_len};
                    if (bs->dst_len > max_copy) max_copy = bs->dst_len;
                    continue;
                }
                size_t r = fill_k[fmt]++;
                ((const void **)(H + o_in))[fmt_base[fmt] + r] = src + bs->src_off;
                ((uint64_t *)(H + o_inb))[fmt_base[fmt] + r] = bs->src_len;
                ((uint64_t *)(H + o_cap))[fmt_base[fmt] + r] = bs->dst_len;
                ((void **)(H + o_out))[fmt_base[fmt] + r] = dstA + bs->dst_off;
                wc->refs[fmt_base[fmt] + r] = (stream_ref){(uint32_t)i, fmt, bs->dst_len};
                if (t->zp) {
                    zframes[zframe].dst = (uint64_t)(uintptr_t)(dstA + bs->dst_off);
                    zframes[zframe++].status_index = (uint32_t)(fmt_base[fmt] + r);
                }
            }
            if (!t->bh.memcpyed && t->bh.shuffle != ZG_BLOSC_NOSHUFFLE) {
                uint8_t *unsh_out = t->direct ? t->direct : D + t->b_off;
                unsh[ku++] = (zg_k_unshuffle){dstA, unsh_out, t->bh.nbytes, t->bh.typesize, t->bh.blocksize,
                                              t->bh.shuffle == ZG_BLOSC_SHUFFLE ? 1u : 2u, t->bh.version,
                                              (uint32_t)t->mapped};
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
            int fmt = dev_task_fmt(j, t);
            size_t r = fill_k[fmt]++;
            ((const void **)(H + o_in))[fmt_base[fmt] + r] = src + t->body_off;
            ((uint64_t *)(H + o_inb))[fmt_base[fmt] + r] = t->body_len;
            ((uint64_t *)(H + o_cap))[fmt_base[fmt] + r] = pp->comp_out;
            ((void **)(H + o_out))[fmt_base[fmt] + r] = dstA;
            wc->refs[fmt_base[fmt] + r] = (stream_ref){(uint32_t)i, fmt, pp->comp_out};
            if (t->zp) {
                zframes[zframe].dst = (uint64_t)(uintptr_t)dstA;
                zframes[zframe].status_index = (uint32_t)(fmt_base[fmt] + r);
                zframes[zframe].mapped = t->mapped ? ZG_ZD_MAPPED : t->zplace ? ZG_ZD_MAPPED_AFTER : ZG_ZD_FLAT;
                zframes[zframe].place = (uint64_t)(uintptr_t)t->zplace;
            }
            if (with_chk) {
                ((zg_k_check *)(H + o_chkd))[wc->n_chk] =
                    (zg_k_check){dstA, pp->comp_out, t->check, pp->comp == ZG_GPU_FORMAT_GZIP ? 1 : 2};
                wc->chk_task[wc->n_chk++] = (uint32_t)i;
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
            } else {
                ((zg_k_buf *)(H + o_post[q]))[n_items[q]++] = (zg_k_buf){D + c, n};
                if (pp->post[q].kind == ZG_GPU_POST_CRC32C) {
                    wc->crc_task[wc->n_crc++] = (uint32_t)i;
                    size[i - first] = n >= 4 ? n - 4 : 0;
                }
            }
        }
    }
    if (j->trace) tl[1] = zg_now();
    /* scatter: GPU-decoded chunks (strides with transposes folded in) and the others (C order, or fill) */
    zg_k_scatter *scg = (zg_k_scatter *)(H + o_sc), *scc = (zg_k_scatter *)(H + o_sc2);
    uint64_t *cntg = (uint64_t *)(H + o_cnt), *cntc = (uint64_t *)(H + o_cnt2);
    size_t ng = 0, ncc = 0;
    int64_t cpu_strides[ZGPU_MAX_DIMS];
    zg_c_strides(nd, j->plan->chunk, itemsize, cpu_strides);
    uint64_t max_rows_g = 1, max_rows_c = 1;
    for (size_t i = first; i < first + count; i++) {
        const dtask *t = &j->t[i];
        const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
        uint8_t *dst = dev_box_dst(j, pt);
        const uint8_t *src = NULL;
        uint64_t rows = 1;
        for (int d = 0; d < nd - 1; d++) rows *= pt->count[d];
        uint64_t *cdst;
        if (t->direct || t->zplace) continue; /* in place already, or by the zstd decoder */
        if (t->kind == T_GPU) {
            src = D + cur[i - first];
            for (int d = 0; d < nd; d++) src += (int64_t)pt->in_chunk[d] * pp->src_strides[d];
            cdst = cntg + ng * (size_t)nd;
            scg[ng++] = (zg_k_scatter){src, dst};
            if (rows > max_rows_g) max_rows_g = rows;
        } else {
            if (t->kind == T_CPU) {
                src = D + t->cpu_off;
                for (int d = 0; d < nd; d++) src += (int64_t)pt->in_chunk[d] * cpu_strides[d];
            }
            cdst = cntc + ncc * (size_t)nd;
            scc[ncc++] = (zg_k_scatter){src, dst};
            if (rows > max_rows_c) max_rows_c = rows;
        }
        for (int d = 0; d < nd; d++) cdst[d] = pt->count[d];
    }
    free(cur);
    free(size);
    free(zbase);
    if (j->trace) tl[2] = zg_now();
    if (zb_n && zg_zd_ticket_order(zframes, zf_n, (uint32_t *)(H + o_zord)) != ZGPU_OK)
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for the zstd decoder's block order");
    memset(H + res_begin, 0, res_end - res_begin);
    memset(H + o_safe, 0, 16);
    memcpy(H + o_fill, j->a->meta.fill_value, itemsize);
    if (j->trace) tl[3] = zg_now();

    /* the rest of the host-to-device copy (what is below h2d_done is there already), on the copy stream; the
     * decode stream waits for it */
    const uint64_t h2d_from = j->h2d_done;
    CU(cudaEventRecord(b->ev[0], st->copy), "cudaEventRecord");
    if (host_end > h2d_from)
        CU(cudaMemcpyAsync(D + h2d_from, H + h2d_from, host_end - h2d_from, cudaMemcpyHostToDevice, st->copy),
           "H2D copy");
    CU(cudaEventRecord(b->ev[1], st->copy), "cudaEventRecord");
    CU(cudaStreamWaitEvent(s, b->ev[1], 0), "cudaStreamWaitEvent");
    /* decode: one nvCOMP batch per format, raw copies, unshuffle, post stages */
    if (n_fmt[FMT_OWN]) {
        const zg_zd_batch zb = {(const zg_zd_block *)(D + o_zb), (const zg_zd_frame *)(D + o_zf),
                                (const zg_zd_huf_desc *)(D + o_zh), (const zg_zd_fse_desc *)(D + o_zs),
                                (uint32_t)zb_n, (uint32_t)zf_n, (zg_zd_bres *)(D + o_zscr),
                                (uint32_t *)(D + o_zscr + sizeof(zg_zd_bres) * zb_n), (int *)(D + o_status),
                                (size_t *)(D + o_act), (const uint32_t *)(D + o_zord), b->aux, b->fork, b->join,
                                zrows, j->tune->zstd_huf_probe, j->tune->profile};
        CU(zg_zd_decode(&zb, s), "zstd decoder kernels");
    }
    if (n_fmt[FMT_INFLATE]) {
        const size_t k = fmt_base[FMT_INFLATE];
        CU(zg_inflate_launch((const void *const *)(D + o_in) + k, (const size_t *)(D + o_inb) + k,
                             (void *const *)(D + o_out) + k, (const size_t *)(D + o_cap) + k, (size_t *)(D + o_act) + k,
                             (int *)(D + o_status) + k, n_fmt[FMT_INFLATE], inflate_max_out, inflate_parts, inflate_serial,
                             D + o_iscr, j->tune->profile, s),
           "DEFLATE decoder kernel");
    }
    if (n_fmt[FMT_LZ4]) {
        const size_t k = fmt_base[FMT_LZ4];
        CU(zg_k_lz4_decode_launch((const void *const *)(D + o_in) + k, (const size_t *)(D + o_inb) + k,
                                  (void *const *)(D + o_out) + k, (const size_t *)(D + o_cap) + k,
                                  (size_t *)(D + o_act) + k, (int *)(D + o_status) + k, n_fmt[FMT_LZ4], s),
           "LZ4 decoder kernel");
    }
    for (int f = 0; f < ZG_NVC_N; f++) {
        if (!n_fmt[f]) continue;
        uint64_t maxo = 0, tot = 0;
        for (size_t r = 0; r < n_fmt[f]; r++) {
            uint64_t c = ((uint64_t *)(H + o_cap))[fmt_base[f] + r];
            if (c > maxo) maxo = c;
            tot += c;
        }
        if (f == ZG_NVC_LZ4 && pp->comp == ZG_GPU_FORMAT_BLOSC)
            CU(zg_k_lz4_check_launch((const void **)(D + o_in + 8 * fmt_base[f]), (size_t *)(D + o_inb + 8 * fmt_base[f]),
                                     (const size_t *)(D + o_cap + 8 * fmt_base[f]), n_fmt[f],
                                     (int *)(D + o_lz4) + fmt_base[f], D + o_safe, 1, s),
               "LZ4 check kernel");
        size_t temp = 0;
        ZG_FORWARD(zg_nvc_temp_size((zg_nvc_format)f, n_fmt[f], (size_t)maxo, (size_t)tot, &temp));
        ZG_FORWARD(dev_ensure_device(s, &b->d_temp, &b->d_temp_cap, temp ? temp : 1, 0));
        ZG_FORWARD(zg_nvc_decompress((zg_nvc_format)f, (const void *const *)(D + o_in + 8 * fmt_base[f]),
                                     (const size_t *)(D + o_inb + 8 * fmt_base[f]),
                                     (const size_t *)(D + o_cap + 8 * fmt_base[f]),
                                     (size_t *)(D + o_act + 8 * fmt_base[f]), n_fmt[f], b->d_temp, temp,
                                     (void *const *)(D + o_out + 8 * fmt_base[f]),
                                     (int *)(D + o_status + 4 * fmt_base[f]), s));
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
        }
    }
    CU(cudaEventRecord(b->ev[2], s), "cudaEventRecord");
    zg_k_scatter_params sp;
    memset(&sp, 0, sizeof sp);
    sp.ndim = nd;
    sp.itemsize = (int)itemsize;
    memcpy(sp.dst_strides, j->out_strides, sizeof(int64_t) * (size_t)nd);
    sp.d_fill = D + o_fill;
    memcpy(sp.src_strides, pp->src_strides, sizeof(int64_t) * (size_t)nd);
    CU(zg_k_scatter_launch(&sp, (const zg_k_scatter *)(D + o_sc), (const uint64_t *)(D + o_cnt), ng, max_rows_g, s),
       "scatter kernel");
    memcpy(sp.src_strides, cpu_strides, sizeof(int64_t) * (size_t)nd);
    CU(zg_k_scatter_launch(&sp, (const zg_k_scatter *)(D + o_sc2), (const uint64_t *)(D + o_cnt2), ncc, max_rows_c, s),
       "scatter kernel");
    CU(cudaEventRecord(b->ev[3], s), "cudaEventRecord");
    if (res_end > res_begin)
        CU(cudaMemcpyAsync(H + res_begin, D + res_begin, res_end - res_begin, cudaMemcpyDeviceToHost, s), "D2H statuses");
    CU(cudaEventRecord(b->done, s), "cudaEventRecord");
    b->in_use = 1;
    wc->active = 1;
    if (j->trace) {
        tl[4] = zg_now();
        fprintf(stderr, "zgpu trace: wave queued in %.2f ms: descriptors %.2f, scatter list %.2f, zstd block order %.2f, "
                "copies and kernels %.2f\n", (tl[4] - tl[0]) * 1e3, (tl[1] - tl[0]) * 1e3, (tl[2] - tl[1]) * 1e3,
                (tl[3] - tl[2]) * 1e3, (tl[4] - tl[3]) * 1e3);
    }
    return ZGPU_OK;
}
