/* nVIDIA nvCOMP's batched decoders (zstd, DEFLATE, LZ4, Snappy; loaded at run time by the adapter in
 * nvcomp_lib.h) behind the GPU decoder contract (gpu_decoder.h). nvCOMP assumes valid input:
 * zstd frames are checked on the host first (zg_zstd_check), LZ4 blocks on the GPU (zg_k_lz4_check_launch, which
 * swaps an invalid block for a valid empty one), Snappy streams walked on the host (zg_snappy_walk), DEFLATE only
 * with gpu_trust_input (device/read.c). nvCOMP
 * decodes a whole chunk in one thread block: the time per wave is that of one chunk whatever the wave's size, so
 * reads of its stored formats keep the fewest waves the memory budget allows (waves = 1). */
#include <stdio.h>
#include "common/status.h"
#include "codec/codec.h"
#include "gpucodec/nvcomp/nvcomp_lib.h"
#include "gpucodec/gpu_decoder.h"
#include "gpucodec/lz4/lz4_check.h"
#include "gpucodec/lz4/lz4_kernels.h"
#include "gpucodec/nvcomp/snappy_check.h"
#include "gpucodec/zstd/zstd_check.h"

static int nvc_zstd_check(void *plan, const uint8_t *p, size_t n, size_t out, size_t at) {
    (void)plan, (void)at;
    return zg_zstd_check(p, n, out) != ZGPU_OK;
}
/* (blosc's snappy streams: walked whole, as libsnappy would decode them; rare enough for the reading threads) */
static int nvc_snappy_check(void *plan, const uint8_t *p, size_t n, size_t out, size_t at) {
    (void)plan, (void)at;
    return zg_snappy_walk(p, n, out, NULL) != ZGPU_OK;
}

static zgpu_status nvc_launch(zg_nvc_format f, const zg_gpu_batch *b) {
    uint64_t maxo = 0, tot = 0;
    for (size_t r = 0; r < b->n; r++) {
        const uint64_t c = b->h_out_cap[r];
        if (c > maxo) maxo = c;
        tot += c;
    }
    size_t temp = 0;
    void *d_temp = NULL;
    ZG_FORWARD(zg_nvc_temp_size(f, b->n, (size_t)maxo, (size_t)tot, &temp));
    ZG_FORWARD(b->temp(b->temp_ctx, temp ? temp : 1, &d_temp));
    return zg_nvc_decompress(f, (const void *const *)b->in, b->in_bytes, b->out_cap, b->actual, b->n, d_temp, temp,
                             b->out, b->status, b->stream);
}

static int nvc_align(zg_nvc_format f, size_t *in, size_t *out) {
    size_t temp;
    return zg_nvc_alignments(f, in, out, &temp) != ZGPU_OK;
}

static void nvc_error_text(zg_nvc_format f, int status, char *buf, size_t n) {
    snprintf(buf, n, "GPU %s decompression failed: %s (nvCOMP status %d)", zg_nvc_format_name(f),
             zg_nvc_status_text(status), status);
}

#define NVC_FORMAT(f, tag)                                                                                         \
    static int tag##_align(size_t *in, size_t *out) { return nvc_align(f, in, out); }                               \
    static void tag##_error_text(int status, int prechecked, char *buf, size_t n) {                                \
        (void)prechecked;                                                                                          \
        nvc_error_text(f, status, buf, n);                                                                         \
    }
NVC_FORMAT(ZG_NVC_ZSTD, zstd)
NVC_FORMAT(ZG_NVC_DEFLATE, deflate)
NVC_FORMAT(ZG_NVC_LZ4, lz4)
NVC_FORMAT(ZG_NVC_SNAPPY, snappy)

static zgpu_status zstd_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    (void)w;
    return nvc_launch(ZG_NVC_ZSTD, b);
}
static zgpu_status deflate_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    (void)w;
    return nvc_launch(ZG_NVC_DEFLATE, b);
}
static zgpu_status snappy_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    (void)w;
    return nvc_launch(ZG_NVC_SNAPPY, b);
}

/* blosc's LZ4 streams are walked on the GPU before nvCOMP decodes them: on the host that walk took as long as
 * reading the bytes. (numcodecs' LZ4 payload was walked on the host by zg_lz4nc_locate.) */
static zgpu_status lz4_launch(zg_gpu_wave *w, const zg_gpu_batch *b) {
    if (w->container == ZG_GPU_FORMAT_BLOSC) {
        const cudaError_t e = zg_k_lz4_check_launch(b->in, b->in_bytes, b->out_cap, b->n, b->precheck, b->safe, 1,
                                                    b->stream);
        ZG_FORWARD(zg_gpu_cuda(e, "LZ4 check kernel"));
    }
    return nvc_launch(ZG_NVC_LZ4, b);
}

static void lz4_prechecked_text(int status, int prechecked, char *buf, size_t n) {
    if (prechecked) snprintf(buf, n, "LZ4 stream invalid: %s (checked on the GPU)", zg_lz4_error_text(status));
    else lz4_error_text(status, 0, buf, n);
}

#define NVC_DECODER(f, kind, conts, tag, chk, text)                                                            \
    {.name = f, .stream = kind, .choice = ZGPU_DECODER_NVCOMP, .containers = conts, .needs_nvcomp = 1, .waves = 1,   \
     .alignments = tag##_align, .check = chk, .launch = tag##_launch, .error_text = text}
#define BLOSC_TOO (1u << ZG_GPU_FORMAT_BLOSC)
/* (names: nvCOMP's, as its messages spell them) */
const zg_gpu_decoder zg_gpu_nvc_zstd =
    NVC_DECODER("Zstd", ZG_GPU_STREAM_ZSTD, 1u << ZG_GPU_FORMAT_ZSTD | BLOSC_TOO, zstd, nvc_zstd_check,
                zstd_error_text);
const zg_gpu_decoder zg_gpu_nvc_deflate =
    NVC_DECODER("Deflate", ZG_GPU_STREAM_DEFLATE, 1u << ZG_GPU_FORMAT_GZIP | 1u << ZG_GPU_FORMAT_ZLIB | BLOSC_TOO,
                deflate, NULL, deflate_error_text);
const zg_gpu_decoder zg_gpu_nvc_lz4 =
    NVC_DECODER("LZ4", ZG_GPU_STREAM_LZ4, 1u << ZG_GPU_FORMAT_LZ4_NUMCODECS | BLOSC_TOO, lz4, NULL,
                lz4_prechecked_text);
const zg_gpu_decoder zg_gpu_nvc_snappy =
    NVC_DECODER("Snappy", ZG_GPU_STREAM_SNAPPY, BLOSC_TOO, snappy, nvc_snappy_check, snappy_error_text);
