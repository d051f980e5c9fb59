/* zgpu's LZ4 decoder (lz4_kernels.cu, rules in lz4_rules.h) behind the GPU decoder contract (gpu_decoder.h):
 * blosc's LZ4 streams, a parser and a copier warp a stream, checking as they go. */
#include <stdio.h>
#include "common/status.h"
#include "codec/codec.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/lz4/lz4_check.h"
#include "gpucodec/lz4/lz4_kernels.h"

static zgpu_status lz_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    (void)w;
    const cudaError_t e = zg_k_lz4_decode_launch((const void *const *)b->in, b->in_bytes, b->out, b->out_cap,
                                                 b->actual, b->status, b->n, b->stream);
    return zg_gpu_cuda(e, "LZ4 decoder kernel");
}

static void lz_error_text(int status, int prechecked, char *buf, size_t n) {
    snprintf(buf, n, "LZ4 stream invalid: %s (%s on the GPU)", zg_lz4_error_text(status),
             prechecked ? "checked" : "decoding");
}

/* Which decoder blosc's LZ4 streams get (zgpu_tuning's lz4_decoder). auto: zgpu's (lz4_kernels.cu), a parser and
 * a copier warp a stream, checking as they go; nvcomp: the check kernel, then nvCOMP's batch (two walks of every
 * stream, each waiting on the longest one). numcodecs' LZ4 chunks (a whole chunk one stream) go to nvCOMP. */
const zg_gpu_decoder zg_gpu_lz4 = {
    .name = "LZ4",
    .stream = ZG_GPU_STREAM_LZ4,
    .choice = ZGPU_DECODER_ZGPU,
    .containers = 1u << ZG_GPU_FORMAT_BLOSC,
    .launch = lz_launch,
    .error_text = lz_error_text,
};
