/* GPU Blosc1 batch encoder (blosc_encode.h): plans the batch on the host (every chunk shares one plan, so the
 * streams' addresses are known here), then queues the shuffle kernel, gpu_encode.h's encoder over every stream,
 * and the framing and copy kernels (blosc_kernels.h) on the caller's stream. */
#include "gpuencode/blosc_encode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "gpuencode/blosc_kernels.h"
#include "plan/waves.h"

#define BE_HEADER 16
#define BE_MAX_CHUNK ((size_t)INT32_MAX - BE_HEADER) /* c-blosc's limit on a chunk */

static const char *const cnames[ZG_BLOSC_COMP_N] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};

static const char *cname(int c) { return c >= 0 && c < ZG_BLOSC_COMP_N ? cnames[c] : "?"; }

/* A batch as planned: the chunks' plan, the streams' compression and where everything lies in the scratch (offsets
 * from its start, each part 256-byte aligned). */
typedef struct prep {
    zg_blosc_frame_plan p;
    uint32_t hints[3]; /* offsets worth trying in the streams (zg_gpu_blosc_encode_batch_hinted) */
    zg_ge_format fmt;
    int level;
    size_t n, nstreams, total_streams;  /* total_streams = n * nstreams */
    size_t max_len;                     /* the longest stream */
    zg_gpu_encode_layout inner;         /* gpu_encode.h's layout for the streams (nstreams > 0) */
    zg_bk_geom geom;
    size_t inner_at, desc, shuf, slots, comp_bytes, comp_status, streams, plain, end;
} prep;

/* The format gpu_encode.h gives each stream: the one c-blosc's compressor writes, or UNSUPPORTED saying why. */
static zgpu_status stream_format(int comp, zg_ge_format *f, size_t *skip) {
    *skip = 0;
    switch (comp) {
    case ZG_BLOSC_COMP_LZ4:
    case ZG_BLOSC_COMP_LZ4HC: *f = ZG_GE_LZ4, *skip = 4; return ZGPU_OK; /* numcodecs' size, then the LZ4 block */
    case ZG_BLOSC_COMP_ZLIB: *f = ZG_GE_ZLIB; return ZGPU_OK;
    case ZG_BLOSC_COMP_ZSTD: *f = ZG_GE_ZSTD; return ZGPU_OK;
    case ZG_BLOSC_COMP_BLOSCLZ:
        return zg_error(ZGPU_ERR_UNSUPPORTED, "GPU blosc encode: blosclz has no GPU compressor (nvCOMP has none); "
                                              "encode on the host");
    default:
        return zg_error(ZGPU_ERR_UNSUPPORTED, "GPU blosc encode: %s has no GPU compressor (zgpu loads no nvCOMP "
                                              "Snappy compressor); encode on the host",
                        cname(comp));
    }
}

static zgpu_status prepare(const zg_blosc_frame_params *params, size_t n, prep *b) {
    ZG_RETURN_IF(!params, ZGPU_ERR_INVALID_ARGUMENT, "GPU blosc encode: NULL parameters");
    memset(b, 0, sizeof *b);
    ZG_FORWARD(zg_blosc_frame_plan_for(params, &b->p));
    const zg_blosc_frame_plan *p = &b->p;
    b->n = n;
    b->nstreams = p->nstreams;
    b->total_streams = n * p->nstreams;
    zg_bk_geom *g = &b->geom;
    g->nbytes = p->nbytes, g->blocksize = p->blocksize, g->nblocks = p->nblocks, g->leftover = p->leftover;
    g->splits = p->splits, g->nstreams = p->nstreams, g->typesize = p->typesize, g->shuffle = p->shuffle;
    g->version = p->version, g->versionlz = p->versionlz, g->flags = p->flags, g->plain_copy = p->plain_copy;
    g->stream_len = p->blocksize / p->splits;
    size_t at = 0;
#define PART(field, bytes) (b->field = at, at = zg_align_up(at + (bytes), 256))
    if (p->nstreams) {
        size_t skip;
        ZG_FORWARD(stream_format(p->compressor, &b->fmt, &skip));
        b->level = p->clevel;
        const uint32_t whole = p->nblocks - (p->leftover ? 1 : 0); /* blocks of full size */
        b->max_len = whole ? g->stream_len : 0;
        if (p->leftover > b->max_len) b->max_len = p->leftover;
        zgpu_status st = zg_gpu_encode_layout_for(b->fmt, b->level, NULL, b->total_streams, b->max_len,
                                                  n * (size_t)p->nbytes, &b->inner);
        if (st != ZGPU_OK) {
            zg_error_prefix("GPU blosc encode (%s, streams of up to %zu bytes): ", cname(p->compressor), b->max_len);
            return st;
        }
        const size_t ia = b->inner.in_align;
        /* no block shuffled, every stream where nvCOMP can read it: compress the input in place */
        g->direct = zg_blosc_frame_block_shuffle(p, 0) == 0 && zg_blosc_frame_block_shuffle(p, p->nblocks - 1) == 0 &&
                    p->blocksize % ia == 0 && g->stream_len % ia == 0;
        const size_t last_len = p->leftover ? p->leftover : g->stream_len;
        g->stream_pitch = zg_align_up(g->stream_len, ia > 16 ? ia : 16);
        g->chunk_pitch = zg_align_up((p->nstreams - 1) * g->stream_pitch + last_len, 256);
        const size_t oa = b->inner.out_align > 16 ? b->inner.out_align : 16;
        g->slot_pitch = zg_align_up(b->inner.slot_bytes, oa);
        g->slot_offset = b->inner.frame_offset + skip;
        g->skip = (uint32_t)skip;
        g->npieces = p->nstreams;
        g->tiles = (uint32_t)((b->max_len + ZG_BK_TILE - 1) / ZG_BK_TILE);
        PART(inner_at, b->inner.scratch_bytes);
    } else {
        g->npieces = (uint32_t)((p->nbytes + ZG_BK_TILE - 1) / ZG_BK_TILE);
        g->tiles = 1;
    }
    PART(desc, 2 * n * sizeof(void *));
    PART(shuf, p->nstreams && !g->direct ? n * g->chunk_pitch : 0);
    PART(slots, b->total_streams * g->slot_pitch);
    PART(comp_bytes, b->total_streams * sizeof(size_t));
    PART(comp_status, b->total_streams * sizeof(int));
    PART(streams, b->total_streams * sizeof(zg_bk_stream));
    PART(plain, n * sizeof(int));
#undef PART
    b->end = at;
    return ZGPU_OK;
}

zgpu_status zg_gpu_blosc_encode_layout_for(const zg_blosc_frame_params *params, size_t n, zg_gpu_encode_layout *out) {
    ZG_RETURN_IF(!out, ZGPU_ERR_INVALID_ARGUMENT, "GPU blosc encode: NULL layout");
    memset(out, 0, sizeof *out);
    prep b;
    ZG_FORWARD(prepare(params, n, &b));
    out->max_chunk_bytes = BE_MAX_CHUNK;
    out->in_align = b.nstreams && b.geom.direct ? b.inner.in_align : 1;
    out->out_align = 1;
    out->frame_offset = 0;
    out->slot_bytes = zg_blosc_frame_bound(b.p.nbytes);
    out->scratch_bytes = b.end;
    out->temp_bytes = b.inner.temp_bytes;
    return ZGPU_OK;
}

zgpu_status zg_gpu_blosc_encode_scratch_map(const zg_blosc_frame_params *params, size_t n, zg_gpu_blosc_scratch *out) {
    ZG_RETURN_IF(!out, ZGPU_ERR_INVALID_ARGUMENT, "GPU blosc encode: NULL scratch map");
    memset(out, 0, sizeof *out);
    prep b;
    ZG_FORWARD(prepare(params, n, &b));
    out->nstreams = b.nstreams;
    out->direct = b.geom.direct;
    out->shuffled = b.shuf;
    out->chunk_pitch = b.geom.chunk_pitch;
    out->stream_pitch = b.geom.stream_pitch;
    out->slots = b.slots;
    out->slot_pitch = b.geom.slot_pitch;
    out->slot_offset = b.inner.frame_offset;
    out->skip = b.geom.skip;
    out->comp_bytes = b.comp_bytes;
    out->comp_status = b.comp_status;
    return ZGPU_OK;
}

#define CUDA_TRY(call, what)                                                                                        \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        ZG_RETURN_IF(e_ != cudaSuccess, ZGPU_ERR_CUDA, "GPU blosc encode (%s) of %zu chunks: %s failed: %s",      \
                     cname(b.p.compressor), n, what, cudaGetErrorString(e_));                                      \
    } while (0)

/* Queues gpu_encode.h's batch over every stream of every chunk: stream j of chunk c read from the shuffled buffer
 * (or, direct, from the input), written to slot c * nstreams + j. */
static zgpu_status compress_streams(const prep *b, const void *const *in, uint8_t *d, cudaStream_t stream) {
    const zg_bk_geom *g = &b->geom;
    const size_t total = b->total_streams;
    const void **s_in = malloc(total * sizeof *s_in);
    size_t *s_bytes = malloc(total * sizeof *s_bytes);
    void **s_out = malloc(total * sizeof *s_out);
    zgpu_status st = ZGPU_OK;
    if (!s_in || !s_bytes || !s_out) {
        st = zg_error(ZGPU_ERR_NO_MEMORY, "GPU blosc encode: out of host memory for %zu stream descriptors", total);
    } else {
        for (size_t c = 0; c < b->n; c++)
            for (uint32_t j = 0; j < b->nstreams; j++) {
                const size_t k = c * b->nstreams + j;
                uint32_t off, len;
                zg_blosc_frame_span(&b->p, j, &off, &len);
                s_in[k] = g->direct ? (const uint8_t *)in[c] + off
                                    : d + b->shuf + c * g->chunk_pitch + (size_t)j * g->stream_pitch;
                s_bytes[k] = len;
                s_out[k] = d + b->slots + k * g->slot_pitch;
            }
        zg_gpu_encode_opts opts = {0, {{0, 0, 0}}};
        memcpy(opts.hints.off, b->hints, sizeof opts.hints.off);
        st = zg_gpu_encode_batch(b->fmt, b->level, &opts, s_in, s_bytes, total, s_out, g->slot_pitch,
                                 (size_t *)(d + b->comp_bytes), (int *)(d + b->comp_status), d + b->inner_at,
                                 b->inner.scratch_bytes, stream);
        if (st != ZGPU_OK)
            zg_error_prefix("GPU blosc encode (%s, %zu chunks of %u bytes, %zu streams): ", cname(b->p.compressor),
                            b->n, b->p.nbytes, total);
    }
    free(s_in), free(s_bytes), free(s_out);
    return st;
}

zgpu_status zg_gpu_blosc_encode_batch(const zg_blosc_frame_params *params, const void *const *in, size_t n,
                                      void *const *out, size_t slot_bytes, size_t *d_out_bytes, int *d_status,
                                      void *d_scratch, size_t scratch_bytes, cudaStream_t stream) {
    return zg_gpu_blosc_encode_batch_hinted(params, NULL, in, n, out, slot_bytes, d_out_bytes, d_status, d_scratch,
                                            scratch_bytes, stream);
}

zgpu_status zg_gpu_blosc_encode_batch_hinted(const zg_blosc_frame_params *params, const uint32_t *hints,
                                             const void *const *in, size_t n, void *const *out, size_t slot_bytes,
                                             size_t *d_out_bytes, int *d_status, void *d_scratch,
                                             size_t scratch_bytes, cudaStream_t stream) {
    prep b;
    ZG_FORWARD(prepare(params, n, &b));
    if (hints) memcpy(b.hints, hints, sizeof b.hints);
    if (n == 0) return ZGPU_OK;
    const char *comp = cname(b.p.compressor);
    ZG_RETURN_IF(!in || !out || !d_out_bytes || !d_status || !d_scratch, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU blosc encode (%s): NULL array", comp);
    ZG_RETURN_IF((uintptr_t)d_scratch % 256, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU blosc encode (%s): scratch at %p is not 256-byte aligned", comp, d_scratch);
    ZG_RETURN_IF(scratch_bytes < b.end, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU blosc encode (%s): scratch of %zu bytes is too small for %zu chunks of %u bytes (%zu needed)",
                 comp, scratch_bytes, n, b.p.nbytes, b.end);
    const size_t need_slot = zg_blosc_frame_bound(b.p.nbytes);
    ZG_RETURN_IF(slot_bytes < need_slot, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU blosc encode (%s): output slots of %zu bytes are too small for chunks of %u bytes (%zu needed)",
                 comp, slot_bytes, b.p.nbytes, need_slot);
    const size_t in_align = b.nstreams && b.geom.direct ? b.inner.in_align : 1;
    for (size_t i = 0; i < n; i++) {
        ZG_RETURN_IF(b.p.nbytes && (!in[i] || (uintptr_t)in[i] % in_align), ZGPU_ERR_INVALID_ARGUMENT,
                     "GPU blosc encode (%s): chunk %zu's input %p is NULL or not aligned to %zu bytes", comp, i,
                     in[i], in_align);
        ZG_RETURN_IF(!out[i], ZGPU_ERR_INVALID_ARGUMENT, "GPU blosc encode (%s): chunk %zu's output slot is NULL",
                     comp, i);
    }

    uint8_t *d = (uint8_t *)d_scratch;
    const uint8_t **desc = malloc(2 * n * sizeof *desc);
    ZG_RETURN_IF(!desc, ZGPU_ERR_NO_MEMORY, "GPU blosc encode (%s): out of host memory for %zu chunk descriptors",
                 comp, n);
    for (size_t i = 0; i < n; i++) desc[i] = in[i], desc[n + i] = out[i];
    /* (from pageable memory: cudaMemcpyAsync stages it before returning, so `desc` may go now) */
    cudaError_t ce = cudaMemcpyAsync(d + b.desc, desc, 2 * n * sizeof *desc, cudaMemcpyHostToDevice, stream);
    free(desc);
    CUDA_TRY(ce, "the descriptor copy");
    const uint8_t *const *d_in = (const uint8_t *const *)(d + b.desc);
    uint8_t *const *d_outs = (uint8_t *const *)(d + b.desc + n * sizeof(void *));
    if (b.nstreams) {
        if (!b.geom.direct) CUDA_TRY(zg_bk_shuffle_launch(&b.geom, d_in, n, d + b.shuf, stream), "the shuffle kernel");
        ZG_FORWARD(compress_streams(&b, in, d, stream));
    }
    CUDA_TRY(zg_bk_frame_launch(&b.geom, d_outs, n, (const size_t *)(d + b.comp_bytes),
                                (const int *)(d + b.comp_status), (zg_bk_stream *)(d + b.streams), (int *)(d + b.plain),
                                d_out_bytes, d_status, stream),
             "the framing kernel");
    CUDA_TRY(zg_bk_copy_launch(&b.geom, d_in, d_outs, n, d + b.shuf, d + b.slots, (const zg_bk_stream *)(d + b.streams),
                               (const int *)(d + b.plain), stream),
             "the copy kernel");
    return ZGPU_OK;
}

zgpu_status zg_gpu_blosc_encode_check(const int *status, size_t n) {
    size_t bad = 0, first = 0;
    for (size_t i = n; i-- > 0;)
        if (status[i] != 0) bad++, first = i;
    ZG_RETURN_IF(bad, ZGPU_ERR_CUDA, "GPU blosc encode: chunk %zu failed (status %d); %zu of %zu chunks failed", first,
                 status[first], bad, n);
    return ZGPU_OK;
}
