/* zgpu's TIFF PackBits decoder (packbits_kernels.cu, rules in packbits_rules.h) behind the GPU decoder contract
 * (gpu_decoder.h): a TIFF tile or strip compressed with PackBits is one stream, a warp's, checked as it goes. */
#include <stdio.h>
#include "common/status.h"
#include "codec/codec.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/packbits/packbits_check.h"
#include "gpucodec/packbits/packbits_kernels.h"

static int pb_check(void *plan, const uint8_t *p, size_t n, size_t out, size_t at) {
    (void)plan, (void)at;
    return zg_packbits_gpu_check(p, n, out);
}

static zgpu_status pb_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    (void)w;
    const cudaError_t e = zg_k_packbits_decode_launch((const void *const *)b->in, b->in_bytes, b->out, b->out_cap,
                                                      b->actual, b->status, b->n, b->stream);
    return zg_gpu_cuda(e, "PackBits decoder kernel");
}

static void pb_error_text(int status, int prechecked, char *buf, size_t n) {
    (void)prechecked;
    snprintf(buf, n, "GPU PackBits decoding failed: %s", zg_packbits_error_text(status));
}

const zg_gpu_decoder zg_gpu_packbits = {
    .name = "PackBits",
    .stream = ZG_GPU_STREAM_PACKBITS,
    .choice = ZGPU_DECODER_ZGPU,
    .containers = 1u << ZG_GPU_FORMAT_PACKBITS,
    .check = pb_check,
    .launch = pb_launch,
    .error_text = pb_error_text,
};
