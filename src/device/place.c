/* Placement: where a GPU-decoded chunk lands. Straight into the caller's output (contiguous, or rows placed
 * by blosc's unshuffle or zgpu's zstd decoder), or into scratch followed by the scatter kernel. */
#include "device/job.h"

/* The caller's output address of a task's first selected element (in its region's destination). */
uint8_t *dev_box_dst(const job *j, const zg_chunk_task *pt) {
    const int nd = j->plan->ndim;
    const int64_t *s = j->strides + (size_t)pt->region * (size_t)nd;
    uint8_t *dst = j->outs[pt->region];
    for (int d = 0; d < nd; d++) dst += (int64_t)pt->in_box[d] * s[d];
    return dst;
}

/* Whether the unshuffle of a byte-shuffled blosc chunk, wholly selected at dst but not contiguous in the output
 * (a block of a larger array), can place its rows there itself (zg_k_row_map): its elements are the array's, of
 * 2 or 4 bytes, every blosc block is full and holds whole quads, rows are contiguous in the output and start on
 * multiples of 4 elements. */
static int rows_mappable(const job *j, const dtask *t, const uint8_t *dst) {
    const zg_blosc_header *h = &t->bh;
    const int nd = j->plan->ndim;
    const uint64_t ts = j->a->meta.dtype.size, quad = 4 * ts;
    if (h->shuffle != ZG_BLOSC_SHUFFLE || h->typesize != ts || (ts != 2 && ts != 4) || nd < 1 || nd > ZG_K_MAX_DIMS)
        return 0;
    if (h->nbytes != j->pp.chunk_nbytes || h->blocksize == 0 || h->nbytes % h->blocksize || h->blocksize % quad ||
        j->pp.chunk_nbytes / ts > UINT32_MAX || j->plan->chunk[nd - 1] % 4 || j->out_strides[nd - 1] != (int64_t)ts)
        return 0;
    /* rows start on multiples of a quad (two's complement: negative strides too) */
    for (int d = 0; d < nd - 1; d++)
        if (j->plan->chunk[d] > 1 && (uint64_t)j->out_strides[d] % quad) return 0;
    return (uintptr_t)dst % quad == 0;
}

/* The read's output rows as zgpu's zstd decoder can place them (zg_zd_rows): a power of two of at least 16
 * bytes, contiguous, each starting on 16 bytes, with at most two dimensions above them (extents of 1 left out),
 * the nearer of power-of-two extent, and every offset within a chunk below 2^31. Returns 1 and fills *r, or
 * returns 0. (The chunk side, a whole chunk in C order without a post stage, is dev_direct_target's.) */
int dev_zstd_rows(const job *j, zg_zd_rows *r) {
    const dev_pipe *pp = &j->pp;
    const int nd = j->plan->ndim;
    const uint64_t ts = j->a->meta.dtype.size, *ch = j->plan->chunk;
    memset(r, 0, sizeof *r);
    /* (several boxes, or a conversion: every chunk through scratch and the scatter) */
    if (nd < 1 || j->n_regions != 1 || !j->x.identity) return 0;
    if (j->tune->zstd_rows == ZGPU_SWITCH_OFF) return 0; /* scratch and scatter instead (for measuring the difference) */
    const uint64_t row = ch[nd - 1] * ts;
    if (row < 16 || (row & (row - 1)) || j->out_strides[nd - 1] != (int64_t)ts) return 0;
    if (pp->chunk_nbytes > ZG_ZD_MAX_FRAME) return 0;
    int outer[2], n_outer = 0; /* the dimensions above the rows, nearest first */
    uint64_t span = row;       /* the farthest byte of a chunk from its first, plus one: 32-bit offsets */
    for (int d = nd - 2; d >= 0; d--) {
        if (ch[d] == 1) continue;
        if (n_outer == 2 || (uint64_t)j->out_strides[d] % 16) return 0; /* (negative strides too) */
        const uint64_t st = (uint64_t)(j->out_strides[d] < 0 ? -j->out_strides[d] : j->out_strides[d]);
        if (st >= (1ull << 31) || (span += (ch[d] - 1) * st) >= (1ull << 31)) return 0;
        outer[n_outer++] = d;
    }
    while ((1ull << r->row_shift) < row) r->row_shift++;
    if (n_outer == 2) {
        if (ch[outer[0]] & (ch[outer[0]] - 1)) return 0;
        while ((1ull << r->mid_shift) < ch[outer[0]]) r->mid_shift++;
        r->mid_stride = (int32_t)j->out_strides[outer[0]];
        r->top_stride = (int32_t)j->out_strides[outer[1]];
    } else {
        r->mid_shift = 31; /* every row index is below 2^31 */
        r->mid_stride = n_outer ? (int32_t)j->out_strides[outer[0]] : 0;
    }
    return 1;
}

/* Where zgpu's zstd decoder puts a chunk wholly selected at dst but not contiguous in the output, when the read's
 * rows allow it (dev_zstd_rows), dst is on 16 bytes and the chunk was planned as one frame: ZG_ZD_MAPPED (straight
 * into its rows) for frames compressed less than 8:1 without a content checksum (K4 reads a frame flat); else
 * ZG_ZD_MAPPED_AFTER (decoded flat to scratch, each block copied into its rows once final). ZG_ZD_FLAT: neither
 * (scratch, then the scatter). Mapping costs every output address a few instructions, which low-ratio frames
 * (oct and field volumes, 1.3-2:1: literals and short matches) do not notice; a label volume's frames (1000:1)
 * are chains of long match copies bound by their instructions' latency, which took 65% longer mapped (K3b 2.7 ->
 * 4.4 ms on its sharded read; 303M -> 545M instructions, ncu). */
static int zstd_place(const job *j, const dtask *t, const uint8_t *dst) {
    if (!j->zstd_mappable || !t->zp || t->zp->n_frames != 1 || (uintptr_t)dst % 16) return ZG_ZD_FLAT;
    if (t->zp->frames[0].has_checksum || t->nbytes * 8 < j->pp.chunk_nbytes) return ZG_ZD_MAPPED_AFTER;
    return ZG_ZD_MAPPED;
}

/* Where a GPU-decoded chunk can land directly: it is wholly selected, its last decode stage writes the final
 * bytes (no post stage, no transpose), and it is C-contiguous in the output with the output pointer meeting the
 * decoder's alignment, or (*mapped = 1) it is a blosc chunk whose unshuffle places its rows (rows_mappable) or a
 * zstd chunk whose decoder does (zstd_place: ZG_ZD_MAPPED).
 * Returns the destination, or NULL to decode into scratch and scatter; or NULL with *zplace set: a zstd chunk
 * decoded to scratch whose blocks the decoder copies into their rows at *zplace (ZG_ZD_MAPPED_AFTER, no
 * scatter). assume_shuffled: blosc chunks count as shuffled (before their header is parsed), and only the
 * contiguous case is considered. A chunk going into the device cache never lands directly. */
uint8_t *dev_direct_target(const job *j, const dtask *t, int assume_shuffled, int *mapped, uint8_t **zplace) {
    const dev_pipe *pp = &j->pp;
    const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
    const int nd = j->plan->ndim;
    *mapped = 0;
    *zplace = NULL;
    if (dev_task_caches(t)) return NULL; /* (into scratch, whence the device cache's copy is made) */
    /* several boxes: scratch and the scatter, which also places the chunk's copies in other boxes */
    if (j->n_regions != 1 || pt->unit_n != 1 || !j->x.identity) return NULL; /* (a conversion too) */
    if (!pt->covers_chunk || pp->n_post != 0 || pp->comp == ZG_GPU_FORMAT_NONE) return NULL;
    if (pp->comp == ZG_GPU_FORMAT_BLOSC && !assume_shuffled && (t->bh.memcpyed || t->bh.shuffle == ZG_BLOSC_NOSHUFFLE))
        return NULL;
    if (!pp->src_c_order) return NULL;
    int64_t c[ZGPU_MAX_DIMS];
    zg_c_strides(nd, j->plan->chunk, j->a->meta.dtype.size, c);
    int contiguous = 1;
    for (int d = 0; d < nd; d++)
        if (j->plan->chunk[d] > 1 && j->out_strides[d] != c[d]) contiguous = 0;
    uint8_t *dst = dev_box_dst(j, pt);
    if (!contiguous) {
        if (assume_shuffled) return NULL;
        const int zstd = pp->comp == ZG_GPU_FORMAT_ZSTD ? zstd_place(j, t, dst) : ZG_ZD_FLAT;
        if (zstd == ZG_ZD_MAPPED_AFTER) *zplace = dst;
        if (zstd != ZG_ZD_MAPPED && !(pp->comp == ZG_GPU_FORMAT_BLOSC && rows_mappable(j, t, dst))) return NULL;
        *mapped = 1;
        return dst;
    }
    if (pp->comp != ZG_GPU_FORMAT_BLOSC && j->dec_main) {
        size_t align = j->out_align[zg_gpu_decoder_index(j->dec_main)];
        if (align > 1 && (uintptr_t)dst % align != 0) return NULL;
    }
    return dst;
}
