/* zgpu's TIFF LZW decoder (lzw_kernels.cu, rules in lzw_rules.h) behind the GPU decoder contract (gpu_decoder.h):
 * a TIFF tile or strip compressed with LZW is one stream, decoded by a warp 32 codes at a time and checked as it
 * goes. */
#include <stdio.h>
#include "common/status.h"
#include "codec/codec.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/lzw/lzw_check.h"
#include "gpucodec/lzw/lzw_kernels.h"

static int lzw_check(void *plan, const uint8_t *p, size_t n, size_t out, size_t at) {
    (void)plan, (void)at;
    return zg_lzw_gpu_check(p, n, out); /* (old-style LZW: the host's codec) */
}

static zgpu_status lzw_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    (void)w;
    const cudaError_t e = zg_k_lzw_decode_launch((const void *const *)b->in, b->in_bytes, b->out, b->out_cap,
                                                 b->actual, b->status, b->n, b->stream);
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
    .launch = lzw_launch,
    .error_text = lzw_error_text,
};
