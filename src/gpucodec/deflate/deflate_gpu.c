/* zgpu's DEFLATE decoder (inflate_kernels.cu, rules in inflate_rules.h) behind the GPU decoder contract
 * (gpu_decoder.h): gzip's and zlib's payloads and blosc's zlib streams, every rule checked on the device. */
#include <stdio.h>
#include <string.h>
#include "common/status.h"
#include "codec/codec.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/deflate/inflate_gpu.h"
#include "gpucodec/deflate/inflate_rules.h"

typedef struct zi_wave {
    uint64_t max_out; /* the largest output of a stream of the wave */
    int mixed;        /* some stream does not decode in serial mode */
    size_t parts;     /* parts each stream is split into */
    uint64_t o_scr;
} zi_wave;
_Static_assert(sizeof(zi_wave) <= ZG_GPU_WAVE_STATE, "DEFLATE's wave state");

/* Streams and outputs of 256 MiB or more decode on the host. */
static int zi_check(void *plan, const uint8_t *p, size_t n, size_t out, size_t at) {
    (void)plan, (void)p, (void)at;
    return n > ZI_MAX_BYTES || out > ZI_MAX_BYTES;
}

/* (a whole chunk counts with its framing: a stream serial by it is serial by its DEFLATE bytes too) */
static void zi_count(zg_gpu_wave *w, uint64_t in_bytes, uint64_t out_bytes) {
    zi_wave *z = (zi_wave *)w->state;
    if (out_bytes > z->max_out) z->max_out = out_bytes;
    z->mixed |= !zg_inflate_serial_wanted(in_bytes, out_bytes);
}

/* The streams of a small wave split into parts, whose buffers take the room the wave leaves in its set's share
 * of the budget: every stream decodes in serial mode -> a launch of serial-mode blocks. */
static void zi_reserve_device(zg_gpu_wave *w, uint64_t *pos) {
    zi_wave *z = (zi_wave *)w->state;
    const int serial = !z->mixed;
    z->parts = zg_inflate_parts(w->n, z->max_out, w->room, serial, w->tune->inflate_parts);
    z->o_scr = zg_gpu_take(pos, zg_inflate_scratch_bytes(w->n, z->max_out, z->parts));
    if (w->trace && w->n)
        fprintf(stderr, "zgpu trace: wave of %zu chunks: %zu DEFLATE streams in %zu parts each (room %.0f MB)\n",
                w->n_tasks, w->n, z->parts, w->room / 1e6);
}

static zgpu_status zi_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    const zi_wave *z = (const zi_wave *)w->state;
    const cudaError_t e = zg_inflate_launch((const void *const *)b->in, b->in_bytes, b->out, b->out_cap, b->actual,
                                            b->status, b->n, z->max_out, z->parts, !z->mixed, w->D + z->o_scr,
                                            w->tune->profile, b->stream);
    return zg_gpu_cuda(e, "DEFLATE decoder kernel");
}

static void inflate_text(int status, int prechecked, char *buf, size_t n) {
    (void)prechecked;
    snprintf(buf, n, "GPU DEFLATE decoding failed: %s", zi_error_text(status));
}

/* Which DEFLATE decoder (gzip, zlib, blosc's zlib) a stream gets (zgpu_tuning's deflate_decoder). auto (default)
 * and zgpu: inflate_kernels.cu, a thread block per stream (or part of one) decoding windows of it in parallel, or
 * in serial mode for streams compressing 8:1 or better, every rule checked on the device (H100, whole reads: label
 * volume 33:1 in serial mode 48 GB/s, host threads 19.4; image and field volumes 1.1-1.3:1, GPU 14.1 / 14.4, host
 * 2.3 / 1.9). host: host threads (libdeflate). nvcomp: nvCOMP's, which assumes valid input, so only with
 * gpu_trust_input (otherwise host threads decode).
 * Waves: its decode is the longer stage, so the first wave's I/O (before any decode) is what a smaller wave saves.
 * H100, four waves against three (zgpu bench --repeat 5, two rounds): oct gzip 15.4-15.5 -> 15.7-15.8 GB/s, field
 * gzip 14.1-14.2 -> 14.7. One wave only for reads compressing 8:1 or better, whose streams decode in serial mode
 * (a chain of tokens a stream: a split lengthens it); full-mode streams share their SMs' throughput, so a split
 * costs little and hides the first wave's I/O (H100, a 3-band 8-bit TIFF of 256 Deflate tiles at 5:1: one wave
 * 12.5 ms, two (what the driver's 128 MiB minimum wave gives it) 11.7, three 11.4, four 11.3; H200, with parts for
 * its 157 KB tiles (inflate_parts.h), 22.5 GB/s in two waves, 23.4 in three or four): so waves of 32 MiB or more. */
/* Turing (sm_75) has 64 KiB of shared memory a block, less than a window block needs: no launch there. */
static int zi_usable(char *why, size_t n) { return zg_inflate_device_check(why, n) == cudaSuccess; }

const zg_gpu_decoder zg_gpu_inflate = {
    .name = "DEFLATE",
    .stream = ZG_GPU_STREAM_DEFLATE,
    .choice = ZGPU_DECODER_ZGPU,
    .containers = 1u << ZG_GPU_FORMAT_GZIP | 1u << ZG_GPU_FORMAT_ZLIB | 1u << ZG_GPU_FORMAT_BLOSC,
    .waves = 4,
    .one_wave_ratio = ZI_SERIAL_RATIO,
    .min_wave_mib = 32,
    .usable = zi_usable,
    .check = zi_check,
    .count = zi_count,
    .reserve_device = zi_reserve_device,
    .launch = zi_launch,
    .error_text = inflate_text,
};
