/* GPU batch encoder (gpu_encode.h): checks the batch on the host, copies its descriptors to the device in one
 * copy, then queues the checksum kernel, nvCOMP's compressor and the framing kernel on the caller's stream. */
#include "gpuencode/gpu_encode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "gpucodec/nvcomp/nvcomp_lib.h"
#include "gpuencode/deflate_fixed_kernels.h"
#include "gpuencode/deflate_pieces.h"
#include "gpuencode/encode_kernels.h"
#include "gpuencode/lz4_encode_gpu.h"
#include "gpuencode/zstd_encode_gpu.h"
#include "plan/waves.h"

static const char *const format_names[ZG_GE_N] = {"zstd", "gzip", "zlib", "lz4"};

const char *zg_gpu_encode_format_name(zg_ge_format f) { return (unsigned)f < ZG_GE_N ? format_names[f] : "?"; }

static zg_nvc_format nvc_format(zg_ge_format f) {
    return f == ZG_GE_ZSTD ? ZG_NVC_ZSTD : f == ZG_GE_LZ4 ? ZG_NVC_LZ4 : ZG_NVC_DEFLATE;
}

/* gzip and zlib: chunks compressed in pieces and joined (deflate_pieces.h): nvCOMP's Deflate takes a chunk a
 * thread block, 0.28 GB/s on chunks of 8 MiB against 4.2 GB/s on chunks of 128 KiB (H200). */
static int pieced(zg_ge_format f) { return f == ZG_GE_GZIP || f == ZG_GE_ZLIB; }

/* nvCOMP's inputs of a batch of n chunks, total bytes together: its chunks, or (pieced formats) their pieces. */
static size_t nvc_items_bound(zg_ge_format f, size_t n, size_t total) {
    return pieced(f) ? total / ZG_DP_PIECE_BYTES + n : n;
}
static size_t nvc_item_max(zg_ge_format f, size_t max_in) {
    return pieced(f) && max_in > ZG_DP_PIECE_BYTES ? ZG_DP_PIECE_BYTES : max_in;
}

/* The scratch's parts, in order (each 256-byte aligned); the descriptors (nvCOMP's input and output arrays,
 * the chunks and segments) lie together from `desc` to `desc_end`, so that one copy takes them to the device. */
typedef struct scratch_map {
    size_t temp, desc, nvc_in, nvc_in_bytes, nvc_out, chunks, segs, pieces, df_in, desc_end, nvc_out_bytes,
        nvc_status, check, walk, raw_bytes, raw_status, piece_slots, df_warps, end;
    size_t n_df_warps; /* warps of the fixed-Huffman pieces (deflate_fixed_kernels.h) */
} scratch_map;

/* n chunks, n_nvc items for nvCOMP (pieced formats: n_pieces pieces, each a slot of piece_slot bytes). */
static scratch_map map_scratch(size_t temp_bytes, size_t n, size_t n_segs, size_t n_nvc, size_t n_pieces,
                               size_t piece_slot) {
    scratch_map m;
    size_t at = 0;
#define PART(field, bytes) (m.field = at, at = zg_align_up(at + (bytes), 256))
    PART(temp, temp_bytes);
    m.desc = at;
    PART(nvc_in, n_nvc * sizeof(void *));
    PART(nvc_in_bytes, n_nvc * sizeof(size_t));
    PART(nvc_out, n_nvc * sizeof(void *));
    PART(chunks, n * sizeof(zg_ge_chunk));
    PART(segs, n_segs * sizeof(zg_ge_seg));
    PART(pieces, n_pieces * sizeof(zg_ge_piece));
    PART(df_in, n_pieces * sizeof(zg_df_piece_in));
    m.desc_end = at;
    PART(nvc_out_bytes, n_nvc * sizeof(size_t));
    PART(nvc_status, n_nvc * sizeof(int));
    PART(check, n_segs * sizeof(uint32_t));
    PART(walk, n_pieces * 3 * sizeof(uint64_t));
    PART(raw_bytes, (n_pieces ? n : 0) * sizeof(size_t));
    PART(raw_status, (n_pieces ? n : 0) * sizeof(int));
    PART(piece_slots, n_pieces * piece_slot);
    m.n_df_warps = 0;
    if (n_pieces && zg_df_resident_warps(&m.n_df_warps) != cudaSuccess) {
        cudaGetLastError();
        m.n_df_warps = 512;
    }
    if (m.n_df_warps > n_pieces) m.n_df_warps = n_pieces;
    PART(df_warps, m.n_df_warps * zg_df_warp_scratch_bytes());
#undef PART
    m.end = at;
    return m;
}

/* Segments a batch may have: every whole 64 KiB of the total, and one part-filled segment a chunk. */
static size_t segments_bound(size_t n, size_t total) { return total / ZG_GE_SEG_BYTES + n; }

/* The scratch map of a batch of n chunks of format f, the largest max_in, total bytes together. */
static scratch_map batch_map(zg_ge_format f, size_t temp_bytes, size_t n, size_t total, size_t piece_slot) {
    const size_t items = nvc_items_bound(f, n, total);
    return map_scratch(temp_bytes, n, segments_bound(n, total), items, pieced(f) ? items : 0, piece_slot);
}


static zgpu_status check_format(zg_ge_format f, int level) {
    ZG_RETURN_IF((unsigned)f >= ZG_GE_N, ZGPU_ERR_INVALID_ARGUMENT, "GPU encode: unknown format %d", (int)f);
    ZG_RETURN_IF((f == ZG_GE_GZIP || f == ZG_GE_ZLIB) && level > 9, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU %s encode: level %d is above 9", format_names[f], level);
    return ZGPU_OK;
}

/* Each slot: the raw stream at raw_offset, nvCOMP's bound for the largest chunk (pieced formats: its pieces'
 * bounds and joins; or the empty stream), trailer. *piece_slot: the scratch slot of a piece (pieced formats). */
static zgpu_status slot_size(zg_ge_format f, int alg, size_t max_in, size_t out_align, size_t *raw_cap,
                             size_t *slot, size_t *piece_slot) {
    size_t bound = 0;
    *piece_slot = 0;
    if (max_in) ZG_FORWARD(zg_nvc_compress_max_output(nvc_format(f), alg, nvc_item_max(f, max_in), &bound));
    if (max_in && pieced(f)) {
        *piece_slot = zg_align_up(bound, out_align > 8 ? out_align : 8);
        bound = zg_dp_pieces(max_in) * (bound + ZG_DP_JOIN_BYTES);
    }
    *raw_cap = bound;
    if (bound < ZG_GE_EMPTY_MAX) bound = ZG_GE_EMPTY_MAX;
    *slot = zg_ge_raw_offset(f, out_align) + bound + zg_ge_trailer_bytes(f);
    return ZGPU_OK;
}

/* The layout, raw_cap: the room each slot has for a raw stream, and piece_slot (pieced formats). */
static zgpu_status plan_layout(zg_ge_format format, int level, size_t n, size_t max_in_bytes, size_t total_in_bytes,
                               zg_gpu_encode_layout *out, size_t *raw_cap, size_t *piece_slot) {
    ZG_FORWARD(check_format(format, level));
    memset(out, 0, sizeof *out);
    const zg_nvc_format nf = nvc_format(format);
    const int alg = zg_ge_deflate_algorithm(level);
    size_t in_a, out_a, temp_a;
    ZG_FORWARD(zg_nvc_compress_alignments(nf, alg, &in_a, &out_a, &temp_a));
    out->max_chunk_bytes = pieced(format) ? (size_t)UINT32_MAX * ZG_DP_PIECE_BYTES : zg_nvc_compress_max_chunk(nf);
    ZG_RETURN_IF(max_in_bytes > out->max_chunk_bytes, ZGPU_ERR_UNSUPPORTED,
                 "GPU %s encode: chunks of %zu bytes are over nvCOMP %s's limit of %zu bytes a chunk (encode them "
                 "on the host)",
                 format_names[format], max_in_bytes, zg_nvc_format_name(nf), out->max_chunk_bytes);
    ZG_RETURN_IF(temp_a > 256, ZGPU_ERR_UNSUPPORTED, "GPU %s encode: nvCOMP asks for temp aligned to %zu bytes",
                 format_names[format], temp_a);
    out->in_align = in_a;
    out->out_align = out_a;
    out->frame_offset = zg_ge_raw_offset(format, out_a) - zg_ge_header_bytes(format);
    ZG_FORWARD(slot_size(format, alg, max_in_bytes, out_a, raw_cap, &out->slot_bytes, piece_slot));
    if (n && max_in_bytes)
        ZG_FORWARD(zg_nvc_compress_temp_size(nf, alg, nvc_items_bound(format, n, total_in_bytes),
                                             nvc_item_max(format, max_in_bytes), total_in_bytes, &out->temp_bytes));
    out->scratch_bytes = batch_map(format, out->temp_bytes, n, total_in_bytes, *piece_slot).end;
    return ZGPU_OK;
}

/* zstd through zgpu's own encoder (zstd_encode_gpu.h), unless opts asks for nvCOMP's. */
static int own_zstd(zg_ge_format f, const zg_gpu_encode_opts *opts) {
    return f == ZG_GE_ZSTD && !(opts && opts->zstd_nvcomp);
}

zgpu_status zg_gpu_encode_layout_for(zg_ge_format format, int level, const zg_gpu_encode_opts *opts, size_t n,
                                     size_t max_in_bytes, size_t total_in_bytes, zg_gpu_encode_layout *out) {
    if (own_zstd(format, opts)) return zg_ze_gpu_layout(n, max_in_bytes, total_in_bytes, out);
    if (format == ZG_GE_LZ4 && zg_lz_gpu_takes(max_in_bytes)) return zg_lz_gpu_layout(n, max_in_bytes, out);
    size_t raw_cap = 0, piece_slot = 0;
    return plan_layout(format, level, n, max_in_bytes, total_in_bytes, out, &raw_cap, &piece_slot);
}

/* The host side of a batch: nvCOMP's arrays, the chunks, segments and pieces, laid out as in the scratch from
 * m.desc; d: the scratch's device address (pieced formats: nvCOMP writes each piece into its scratch slot). */
static void build_descriptors(zg_ge_format f, const scratch_map *m, uint8_t *host, uint8_t *d, const void *const *in,
                              const size_t *in_bytes, size_t n, void *const *out, size_t raw_offset, size_t raw_cap,
                              size_t piece_slot, size_t *n_nvc, size_t *n_segs, size_t *n_pieces) {
    const void **nvc_in = (const void **)(host + m->nvc_in - m->desc);
    size_t *nvc_in_bytes = (size_t *)(host + m->nvc_in_bytes - m->desc);
    void **nvc_out = (void **)(host + m->nvc_out - m->desc);
    zg_ge_chunk *chunks = (zg_ge_chunk *)(host + m->chunks - m->desc);
    zg_ge_seg *segs = (zg_ge_seg *)(host + m->segs - m->desc);
    zg_ge_piece *pieces = (zg_ge_piece *)(host + m->pieces - m->desc);
    zg_df_piece_in *df_in = (zg_df_piece_in *)(host + m->df_in - m->desc);
    const int checked = zg_ge_check_kind(f) != ZG_CHECK_NONE, in_pieces = pieced(f);
    size_t k = 0, s = 0, ne = 0;
    for (size_t i = 0; i < n; i++) {
        zg_ge_chunk *c = &chunks[i];
        memset(c, 0, sizeof *c);
        c->slot = (uint8_t *)out[i];
        c->in_bytes = in_bytes[i];
        c->raw_cap = raw_cap;
        c->first_seg = (uint32_t)s;
        c->nvc = -1;
        if (in_bytes[i] == 0) continue; /* framed around the empty stream (nvCOMP is not asked about 0 bytes) */
        c->nvc = (int64_t)(in_pieces ? ne : k);
        ne++;
        if (in_pieces) { /* its pieces, each into its scratch slot */
            c->first_piece = (uint32_t)k;
            for (size_t at = 0; at < in_bytes[i]; at += ZG_DP_PIECE_BYTES, k++) {
                const size_t left = in_bytes[i] - at;
                uint8_t *slot = d + m->piece_slots + k * piece_slot;
                nvc_in[k] = (const uint8_t *)in[i] + at;
                nvc_in_bytes[k] = left < ZG_DP_PIECE_BYTES ? left : ZG_DP_PIECE_BYTES;
                nvc_out[k] = slot;
                pieces[k] = (zg_ge_piece){slot, (uint32_t)i, left <= ZG_DP_PIECE_BYTES};
                df_in[k] = (zg_df_piece_in){(const uint8_t *)in[i], (uint32_t)at, (uint32_t)nvc_in_bytes[k]};
            }
            c->n_pieces = (uint32_t)(k - c->first_piece);
        } else {
            nvc_in[k] = in[i];
            nvc_in_bytes[k] = in_bytes[i];
            nvc_out[k] = (uint8_t *)out[i] + raw_offset;
            k++;
        }
        if (!checked) continue;
        for (size_t at = 0; at < in_bytes[i]; at += ZG_GE_SEG_BYTES, s++) {
            const size_t left = in_bytes[i] - at;
            segs[s].p = (const uint8_t *)in[i] + at;
            segs[s].len = (uint32_t)(left < ZG_GE_SEG_BYTES ? left : ZG_GE_SEG_BYTES);
            segs[s].pad_ = 0;
        }
        c->n_segs = (uint32_t)(s - c->first_seg);
    }
    *n_nvc = k;
    *n_segs = s;
    *n_pieces = in_pieces ? k : 0;
}

#define CUDA_TRY(call, what)                                                                                        \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        ZG_RETURN_IF(e_ != cudaSuccess, ZGPU_ERR_CUDA, "GPU %s encode of %zu chunks: %s failed: %s",              \
                     format_names[format], n, what, cudaGetErrorString(e_));                                       \
    } while (0)

zgpu_status zg_gpu_encode_batch(zg_ge_format format, int level, const zg_gpu_encode_opts *opts,
                                const void *const *in, const size_t *in_bytes, size_t n, void *const *out,
                                size_t slot_bytes, size_t *d_out_bytes, int *d_status, void *d_scratch,
                                size_t scratch_bytes, cudaStream_t stream) {
    ZG_FORWARD(check_format(format, level));
    if (own_zstd(format, opts))
        return zg_ze_gpu_batch(opts ? &opts->hints : NULL, in, in_bytes, n, out, slot_bytes, d_out_bytes, d_status,
                               d_scratch, scratch_bytes, stream);
    if (n == 0) return ZGPU_OK;
    if (format == ZG_GE_LZ4) { /* zgpu's encoder where the layout chose it: every chunk within its limit */
        size_t max_in = 0;
        for (size_t i = 0; i < n; i++) max_in = in_bytes[i] > max_in ? in_bytes[i] : max_in;
        zg_gpu_encode_layout own;
        if (zg_lz_gpu_takes(max_in) && zg_lz_gpu_layout(n, max_in, &own) == ZGPU_OK && scratch_bytes >= own.scratch_bytes)
            return zg_lz_gpu_batch(opts ? &opts->hints : NULL, in, in_bytes, n, out, slot_bytes, d_out_bytes, d_status,
                                   d_scratch, scratch_bytes, stream);
    }
    ZG_RETURN_IF(!in || !in_bytes || !out || !d_out_bytes || !d_status || !d_scratch, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU %s encode: NULL array", format_names[format]);
    ZG_RETURN_IF((uintptr_t)d_scratch % 256, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU %s encode: scratch at %p is not 256-byte aligned", format_names[format], d_scratch);
    const size_t limit = pieced(format) ? (size_t)UINT32_MAX * ZG_DP_PIECE_BYTES : zg_nvc_compress_max_chunk(nvc_format(format));
    size_t max_in = 0, total = 0, non_empty = 0;
    for (size_t i = 0; i < n; i++) {
        ZG_RETURN_IF(in_bytes[i] > limit, ZGPU_ERR_UNSUPPORTED,
                     "GPU %s encode: chunk %zu of %zu bytes is over nvCOMP's limit of %zu bytes a chunk (encode it "
                     "on the host)",
                     format_names[format], i, in_bytes[i], limit);
        if (in_bytes[i] > max_in) max_in = in_bytes[i];
        total += in_bytes[i];
        non_empty += in_bytes[i] != 0;
    }
    zg_gpu_encode_layout lay;
    size_t raw_cap = 0, piece_slot = 0;
    ZG_FORWARD(plan_layout(format, level, non_empty, max_in, total, &lay, &raw_cap, &piece_slot));
    for (size_t i = 0; i < n; i++) {
        ZG_RETURN_IF(in_bytes[i] && (!in[i] || (uintptr_t)in[i] % lay.in_align), ZGPU_ERR_INVALID_ARGUMENT,
                     "GPU %s encode: chunk %zu's input %p is NULL or not aligned to %zu bytes", format_names[format],
                     i, in[i], lay.in_align);
        ZG_RETURN_IF(!out[i] || (uintptr_t)out[i] % lay.out_align, ZGPU_ERR_INVALID_ARGUMENT,
                     "GPU %s encode: chunk %zu's output slot %p is NULL or not aligned to %zu bytes",
                     format_names[format], i, out[i], lay.out_align);
    }
    ZG_RETURN_IF(slot_bytes < lay.slot_bytes, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU %s encode: output slots of %zu bytes are too small for chunks of %zu bytes (%zu needed)",
                 format_names[format], slot_bytes, max_in, lay.slot_bytes);
    /* the map for n chunks (the layout's was for the non-empty ones) */
    const scratch_map m = batch_map(format, lay.temp_bytes, n, total, piece_slot);
    ZG_RETURN_IF(scratch_bytes < m.end, ZGPU_ERR_INVALID_ARGUMENT,
                 "GPU %s encode: scratch of %zu bytes is too small for this batch (%zu needed)", format_names[format],
                 scratch_bytes, m.end);

    const zg_nvc_format nf = nvc_format(format);
    const int alg = zg_ge_deflate_algorithm(level);
    const size_t raw_offset = zg_ge_raw_offset(format, lay.out_align);
    uint8_t *host = malloc(m.desc_end - m.desc);
    ZG_RETURN_IF(!host, ZGPU_ERR_NO_MEMORY, "GPU %s encode: out of host memory for %zu chunk descriptors",
                 format_names[format], n);
    size_t n_nvc, n_segs, n_pieces;
    uint8_t *d = (uint8_t *)d_scratch;
    build_descriptors(format, &m, host, d, in, in_bytes, n, out, raw_offset, raw_cap, piece_slot, &n_nvc, &n_segs,
                      &n_pieces);
    /* (from pageable memory: cudaMemcpyAsync stages it before returning, so `host` may go now) */
    cudaError_t ce = cudaMemcpyAsync(d + m.desc, host, m.desc_end - m.desc, cudaMemcpyHostToDevice, stream);
    free(host);
    CUDA_TRY(ce, "the descriptor copy");
    const int kind = zg_ge_check_kind(format);
    if (kind != ZG_CHECK_NONE)
        CUDA_TRY(zg_ge_checksum_launch(kind, (const zg_ge_seg *)(d + m.segs), n_segs, (uint32_t *)(d + m.check),
                                       stream),
                 "the checksum kernel");
    if (n_nvc)
        ZG_FORWARD(zg_nvc_compress(nf, alg, (const void *const *)(d + m.nvc_in), (const size_t *)(d + m.nvc_in_bytes),
                                   nvc_item_max(format, max_in), n_nvc, d + m.temp, lay.temp_bytes,
                                   (void *const *)(d + m.nvc_out), (size_t *)(d + m.nvc_out_bytes),
                                   (int *)(d + m.nvc_status), stream));
    /* pieced formats: the pieces joined into each chunk's stream, whose size and status the framing then reads */
    const size_t *raw_bytes = (const size_t *)(d + m.nvc_out_bytes);
    const int *raw_status = (const int *)(d + m.nvc_status);
    if (pieced(format) && level != 0) { /* each piece the shorter of nvCOMP's and zgpu's fixed-Huffman block */
        const zg_ze_hints none = {{0, 0, 0}};
        CUDA_TRY(zg_df_pieces_launch((const zg_df_piece_in *)(d + m.df_in), n_pieces, opts ? opts->hints : none,
                                     (const zg_ge_piece *)(d + m.pieces), (size_t *)(d + m.nvc_out_bytes),
                                     (int *)(d + m.nvc_status), piece_slot, d + m.df_warps, m.n_df_warps, stream),
                 "the fixed-Huffman pieces");
    }
    if (pieced(format)) {
        CUDA_TRY(zg_ge_join_launch((const zg_ge_chunk *)(d + m.chunks), n, (const zg_ge_piece *)(d + m.pieces),
                                   n_pieces, (const size_t *)(d + m.nvc_out_bytes), (const int *)(d + m.nvc_status),
                                   (uint64_t *)(d + m.walk), raw_offset, (size_t *)(d + m.raw_bytes),
                                   (int *)(d + m.raw_status), stream),
                 "the join kernels");
        raw_bytes = (const size_t *)(d + m.raw_bytes);
        raw_status = (const int *)(d + m.raw_status);
    }
    CUDA_TRY(zg_ge_frame_launch(format, level, raw_offset, (const zg_ge_chunk *)(d + m.chunks), n, raw_bytes, raw_status,
                                kind != ZG_CHECK_NONE ? (const uint32_t *)(d + m.check) : NULL, d_out_bytes, d_status,
                                stream),
             "the framing kernel");
    return ZGPU_OK;
}

zgpu_status zg_gpu_encode_check(zg_ge_format format, const int *status, size_t n) {
    size_t bad = 0, first = 0;
    for (size_t i = n; i-- > 0;)
        if (status[i] != 0) bad++, first = i;
    ZG_RETURN_IF(bad, ZGPU_ERR_CUDA, "GPU %s encode: chunk %zu failed: %s (nvCOMP status %d); %zu of %zu chunks failed",
                 zg_gpu_encode_format_name(format), first, zg_nvc_status_text(status[first]), status[first], bad, n);
    return ZGPU_OK;
}
