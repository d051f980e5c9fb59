/* zgpu's TIFF LZW decoder (lzw_kernels.cu, rules in lzw_rules.h) behind the GPU decoder contract (gpu_decoder.h):
 * a TIFF tile or strip compressed with LZW is one stream, checked as it decodes. A wave of fewer streams than keep
 * the GPU busy cuts each at its ClearCodes into segments decoded side by side (a warp a segment; descriptors in
 * the wave's device scratch); a wave of many streams, or one whose scratch does not fit its room, decodes a warp
 * a stream. */
#include <stdio.h>
#include "common/status.h"
#include "codec/codec.h"
#include "gpucodec/common/gpu_limits.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/lzw/lzw_check.h"
#include "gpucodec/lzw/lzw_kernels.h"

/* Which path a wave takes: -1 by its streams (zg_lc_lzw_segmented), 0 a warp a stream, 1 segments (builds that
 * compare the two end to end). */
#ifndef ZG_LZW_SEGMENTS
#define ZG_LZW_SEGMENTS -1
#endif

typedef struct lzw_wave {
    uint64_t max_in; /* the wave's largest stream */
    uint64_t o_scr;  /* its scratch in the wave's device buffer */
    size_t slots;    /* segment slots a stream; 0: a warp a stream */
} lzw_wave;
_Static_assert(sizeof(lzw_wave) <= ZG_GPU_WAVE_STATE, "lzw_wave: the wave's state");

static int lzw_check(void *plan, const uint8_t *p, size_t n, size_t out, size_t at) {
    (void)plan, (void)at;
    return zg_lzw_gpu_check(p, n, out); /* (old-style LZW: the host's codec) */
}

static void lzw_count(zg_gpu_wave *w, uint64_t in_bytes, uint64_t out_bytes) {
    (void)out_bytes;
    lzw_wave *z = (lzw_wave *)w->state;
    if (in_bytes > z->max_in) z->max_in = in_bytes;
}

static void lzw_reserve_device(zg_gpu_wave *w, uint64_t *pos) {
    lzw_wave *z = (lzw_wave *)w->state;
    z->slots = 0;
    zg_gpu_limits L;
    (void)zg_gpu_limits_current(&L); /* (an H100's where the device cannot be asked) */
    const int segments = ZG_LZW_SEGMENTS < 0 ? zg_lc_lzw_segmented(&L, w->n) : ZG_LZW_SEGMENTS != 0;
    if (!w->n || !segments) return;
    const size_t slots = zg_lzw_seg_slots(z->max_in), bytes = zg_lzw_seg_scratch_bytes(w->n, slots);
    if (bytes > w->room) return; /* (within the budget: a warp a stream needs none) */
    z->slots = slots;
    z->o_scr = zg_gpu_take(pos, bytes);
    if (w->trace)
        fprintf(stderr, "zgpu trace: wave of %zu chunks: %zu LZW streams in segments (%zu slots each)\n", w->n_tasks,
                w->n, slots);
}

static zgpu_status lzw_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    const lzw_wave *z = (const lzw_wave *)w->state;
    const cudaError_t e =
        z->slots ? zg_k_lzw_decode_seg_launch((const void *const *)b->in, b->in_bytes, b->out, b->out_cap, b->actual,
                                              b->status, b->n, z->slots, w->D + z->o_scr, b->stream)
                 : zg_k_lzw_decode_launch((const void *const *)b->in, b->in_bytes, b->out, b->out_cap, b->actual,
                                          b->status, b->n, b->stream);
    return zg_gpu_cuda(e, "LZW decoder kernel");
}

static void lzw_error_text(int status, int prechecked, char *buf, size_t n) {
    (void)prechecked;
    snprintf(buf, n, "GPU LZW decoding failed: %s", zg_lzw_error_text(status));
}

const zg_gpu_decoder zg_gpu_lzw = {
    .name = "LZW",
    .stream = ZG_GPU_STREAM_LZW,
    .choice = ZGPU_DECODER_ZGPU,
    .containers = 1u << ZG_GPU_FORMAT_TIFF_LZW,
    .check = lzw_check,
    .count = lzw_count,
    .reserve_device = lzw_reserve_device,
    .launch = lzw_launch,
    .error_text = lzw_error_text,
};
