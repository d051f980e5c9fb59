/* zgpu's zstd decoder behind the GPU decoder contract (gpu_decoder.h): the host plans each frame
 * (zstd_plan.h), the wave's plans become one batch of block, frame and table descriptors, and zg_zd_decode
 * (zstd_gpu.h) launches its kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/status.h"
#include "codec/codec.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/zstd/zstd_gpu.h"
#include "gpucodec/zstd/zstd_plan.h"
#include "host/pool.h"

typedef struct zs_wave {
    size_t zb_n, zf_n, zh_n, zs_n; /* totals of the wave's planned frames */
    uint64_t zlit_n, zseq_n;
    uint64_t o_zb, o_zf, o_zh, o_zs, o_zord, o_zlit, o_zseq, o_zscr;
    zg_zd_rows rows;
    zg_zd_bases *zbase;           /* per chunk of the wave: where its descriptors go */
    size_t cur_task;              /* put: the chunk whose streams are being put, */
    uint32_t cur_frame;           /* and its next frame (in its streams' order) */
} zs_wave;
_Static_assert(sizeof(zs_wave) <= ZG_GPU_WAVE_STATE, "zstd's wave state");

static int zs_check(void *plan, const uint8_t *p, size_t n, size_t out, size_t at) {
    return !plan || zg_zd_plan_frame((zg_zd_plan *)plan, p, n, out, at) != ZGPU_OK;
}

static void zs_reserve_host(zg_gpu_wave *w, uint64_t *pos) {
    zs_wave *z = (zs_wave *)w->state;
    for (size_t i = 0; i < w->n_tasks; i++) {
        const zg_zd_plan *zp = w->plan_of(w->ctx, i);
        if (!zp) continue;
        z->zb_n += zp->n_blocks;
        z->zf_n += zp->n_frames;
        z->zh_n += zp->n_hufs;
        z->zs_n += zp->n_fses;
        z->zlit_n += zp->lit_bytes;
        z->zseq_n += zp->n_seq;
    }
    z->o_zb = zg_gpu_take(pos, sizeof(zg_zd_block) * z->zb_n);
    z->o_zf = zg_gpu_take(pos, sizeof(zg_zd_frame) * z->zf_n);
    z->o_zh = zg_gpu_take(pos, sizeof(zg_zd_huf_desc) * z->zh_n);
    z->o_zs = zg_gpu_take(pos, sizeof(zg_zd_fse_desc) * z->zs_n);
    z->o_zord = zg_gpu_take(pos, sizeof(uint32_t) * z->zb_n);
    memset(&z->rows, 0, sizeof z->rows);
    w->rows_mappable = z->zb_n && w->container == ZG_GPU_FORMAT_ZSTD ? w->map_rows(w->ctx, &z->rows) : 0;
}

static void zs_reserve_device(zg_gpu_wave *w, uint64_t *pos) {
    zs_wave *z = (zs_wave *)w->state;
    z->o_zlit = zg_gpu_take(pos, z->zlit_n);
    z->o_zseq = zg_gpu_take(pos, sizeof(zg_zd_seq) * z->zseq_n);
    z->o_zscr = zg_gpu_take(pos, zg_zd_scratch_bytes((uint32_t)z->zb_n));
}

/* Each chunk's planned frames into the wave's descriptors, on the pool (a label volume's sharded read: 8192
 * blocks, 5.5 MB of descriptors, 0.4 ms on one thread). While the next wave's reads hold the pool (run_waves),
 * the launching thread does them alone, beside those reads (a field wave: 0.5-0.6 ms). */
typedef struct {
    const zg_gpu_wave *w;
    const zg_zd_bases *at; /* per chunk of the wave: where its descriptors go */
    zg_zd_block *blocks;
    zg_zd_frame *frames;
    zg_zd_huf_desc *hufs;
    zg_zd_fse_desc *fses;
} zd_emit;

static zgpu_status zd_emit_task(void *arg, size_t i) {
    const zd_emit *e = arg;
    const zg_zd_plan *zp = e->w->plan_of(e->w->ctx, i);
    if (zp) zg_zd_plan_emit(zp, &e->at[i], e->blocks, e->frames, e->hufs, e->fses);
    return ZGPU_OK;
}

static zgpu_status zs_emit(zg_gpu_wave *w) {
    zs_wave *z = (zs_wave *)w->state;
    z->cur_task = SIZE_MAX;
    if (!z->zf_n) return ZGPU_OK;
    z->zbase = malloc(w->n_tasks * sizeof *z->zbase);
    ZG_RETURN_IF(!z->zbase, ZGPU_ERR_NO_MEMORY, "out of host memory for descriptors");
    /* where each chunk's zstd descriptors go, then all of them written at once */
    zg_zd_bases zat = {0, (uint64_t)(uintptr_t)(w->D + z->o_zlit), (uint64_t)(uintptr_t)(w->D + z->o_zseq), 0, 0, 0, 0};
    for (size_t i = 0; i < w->n_tasks; i++) {
        const zg_zd_plan *zp = w->plan_of(w->ctx, i);
        z->zbase[i] = zat;
        if (!zp) continue;
        z->zbase[i].src = (uint64_t)(uintptr_t)(w->D + w->staged_at(w->ctx, i));
        zat.lit += zp->lit_bytes;
        zat.seq += zp->n_seq * sizeof(zg_zd_seq);
        zat.block += (uint32_t)zp->n_blocks;
        zat.frame += (uint32_t)zp->n_frames;
        zat.huf += (uint32_t)zp->n_hufs;
        zat.fse += (uint32_t)zp->n_fses;
    }
    zd_emit e = {w, z->zbase, (zg_zd_block *)(w->H + z->o_zb), (zg_zd_frame *)(w->H + z->o_zf),
                 (zg_zd_huf_desc *)(w->H + z->o_zh), (zg_zd_fse_desc *)(w->H + z->o_zs)};
    zgpu_status es = zg_pool_run(w->pool, w->n_tasks, zd_emit_task, &e);
    if (es != ZGPU_OK) {
        free(z->zbase);
        z->zbase = NULL;
    }
    return es;
}

static void zs_put(zg_gpu_wave *w, size_t task, size_t slot, uint8_t *dst, int whole, int mapped, uint8_t *place) {
    zs_wave *z = (zs_wave *)w->state;
    if (task != z->cur_task) {
        z->cur_task = task;
        z->cur_frame = z->zbase ? z->zbase[task].frame : 0;
    }
    zg_zd_frame *f = (zg_zd_frame *)(w->H + z->o_zf) + z->cur_frame++;
    f->dst = (uint64_t)(uintptr_t)dst;
    f->status_index = (uint32_t)slot; /* (the batch's status and actual arrays start at the decoder's base) */
    if (whole) {
        f->mapped = mapped ? ZG_ZD_MAPPED : place ? ZG_ZD_MAPPED_AFTER : ZG_ZD_FLAT;
        f->place = (uint64_t)(uintptr_t)place;
    }
}

static zgpu_status zs_seal(zg_gpu_wave *w) {
    zs_wave *z = (zs_wave *)w->state;
    free(z->zbase);
    z->zbase = NULL;
    const zg_zd_frame *frames = (const zg_zd_frame *)(w->H + z->o_zf);
    if (z->zb_n && zg_zd_ticket_order(frames, z->zf_n, (uint32_t *)(w->H + z->o_zord)) != ZGPU_OK)
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of host memory for the zstd decoder's block order");
    return ZGPU_OK;
}

static zgpu_status zs_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    const zs_wave *z = (const zs_wave *)w->state;
    uint8_t *D = w->D;
    const zg_zd_batch zb = {(const zg_zd_block *)(D + z->o_zb), (const zg_zd_frame *)(D + z->o_zf),
                            (const zg_zd_huf_desc *)(D + z->o_zh), (const zg_zd_fse_desc *)(D + z->o_zs),
                            (uint32_t)z->zb_n, (uint32_t)z->zf_n, (zg_zd_bres *)(D + z->o_zscr),
                            (uint32_t *)(D + z->o_zscr + sizeof(zg_zd_bres) * z->zb_n), b->status, b->actual,
                            (const uint32_t *)(D + z->o_zord), b->aux, b->fork, b->join, z->rows,
                            w->tune->zstd_huf_probe, w->tune->profile};
    const cudaError_t e = zg_zd_decode(&zb, b->stream);
    return zg_gpu_cuda(e, "zstd decoder kernels");
}

static void zs_error_text(int status, int prechecked, char *buf, size_t n) {
    (void)prechecked;
    snprintf(buf, n, "GPU zstd decoding failed: %s", zg_zd_error_text(status));
}

/* Which zstd decoder a frame gets (zgpu_tuning's zstd_decoder). auto: zgpu's. It decodes every 128 KiB zstd block
 * as a unit, so a chunk's latency is that of a block, not of a whole frame decoded by one thread block as in
 * nvCOMP; it was as fast as nvCOMP's or faster on all three benchmark volumes (docs/benchmarks.md). nvcomp:
 * nvCOMP's. Either way a frame the host check rejects decodes on the host, whose codec names the fault. */
const zg_gpu_decoder zg_gpu_zstd = {
    .name = "zstd",
    .stream = ZG_GPU_STREAM_ZSTD,
    .choice = ZGPU_DECODER_ZGPU,
    .containers = 1u << ZG_GPU_FORMAT_ZSTD | 1u << ZG_GPU_FORMAT_BLOSC,
    .plans = 1,
    .verifies = 1u << ZG_CHECK_XXH64, /* (K4, zstd_kernels.cu) */
    .check = zs_check,
    .reserve_host = zs_reserve_host,
    .reserve_device = zs_reserve_device,
    .emit = zs_emit,
    .put = zs_put,
    .seal = zs_seal,
    .launch = zs_launch,
    .error_text = zs_error_text,
};
