/* A zstd frame decoded in order through two alternating buffers, keeping only the runs (see zstd_window.h).
 * libzstd's buffer-less decode takes its output block by block wherever the caller puts it: a block written
 * somewhere else than after the one before makes everything decoded into the previous segment its "external
 * dictionary" and the new place its prefix, and every match's offset is checked against the two (a match reaching
 * further is an error, never a read of other memory). So with two buffers A and B, blocks fill A; once A cannot take
 * another whole block they fill B, matches reaching back into A; then A again, reaching into B; the bytes a match may
 * read are always intact. The two buffers lie apart (WINDOW_GAP): were A to end where B starts, libzstd would take
 * B for A's continuation and let matches reach into A while it is being written again. */
#include "codec/zstd_window.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* the buffer-less decode (exported by libzstd 1.4 and later) */
#include <zstd.h>

#include "common/status.h"
#include "common/tls.h"

static atomic_ullong st_frames, st_declined;

zg_zstd_window_stats zg_zstd_window_stats_get(void) {
    return (zg_zstd_window_stats){atomic_load(&st_frames), atomic_load(&st_declined)};
}

typedef struct window_tls {
    uint8_t *buf;
    size_t cap;
} window_tls;

static _Thread_local void *tl_window;

#define WINDOW_GAP 64 /* bytes between the two buffers (never contiguous) */

static void window_tls_free(void *p) {
    window_tls *t = p;
    free(t->buf);
    free(t);
}

/* Copies the runs' bytes that block [op, op + r) holds (at blk) to their places; *ri: the first run not yet whole. */
static void copy_runs(const uint8_t *blk, uint64_t op, uint64_t r, uint8_t *out, const zg_byte_run *runs,
                      size_t n_runs, size_t *ri) {
    const uint64_t end = op + r;
    while (*ri < n_runs && runs[*ri].off < end) {
        const zg_byte_run *u = &runs[*ri];
        const uint64_t a = u->off > op ? u->off : op, u_end = u->off + u->len, b = u_end < end ? u_end : end;
        if (b > a) memcpy((u->dst ? u->dst : out + u->off) + (a - u->off), blk + (a - op), (size_t)(b - a));
        if (u_end > end) return;
        ++*ri;
    }
}

static zgpu_status declined_here(int *declined) {
    *declined = 2;
    atomic_fetch_add(&st_declined, 1);
    return ZGPU_OK;
}

zgpu_status zg_zstd_decode_windowed(struct ZSTD_DCtx_s *d, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                    const zg_byte_run *runs, size_t n_runs, size_t segment, int *declined) {
    *declined = 1;
    if (!n_runs || n < 5 || segment < 2 * (size_t)ZSTD_BLOCKSIZE_MAX) return ZGPU_OK;
    /* one plain frame recording its size (the layouts zstd_decode_range decodes in order) */
    static const uint8_t magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    if (memcmp(in, magic, 4) || ZSTD_findFrameCompressedSize(in, n) != n || ZSTD_getFrameContentSize(in, n) != size)
        return ZGPU_OK;
    const int checksum = (in[4] & 0x04) != 0; /* (Frame_Header_Descriptor bit 2: decoded to its end, verified) */
    const uint64_t hi = checksum ? size : runs[n_runs - 1].off + runs[n_runs - 1].len;
    if (hi > size) return ZGPU_OK;
    window_tls *t = zg_tls_get(&tl_window, sizeof(window_tls), window_tls_free);
    ZG_RETURN_IF(!t, ZGPU_ERR_NO_MEMORY, "zstd: out of memory for a windowed decode");
    if (t->cap < 2 * segment + WINDOW_GAP) {
        uint8_t *b = malloc(2 * segment + WINDOW_GAP);
        ZG_RETURN_IF(!b, ZGPU_ERR_NO_MEMORY, "zstd: out of memory for a windowed decode (%zu bytes)", 2 * segment);
        free(t->buf);
        t->buf = b;
        t->cap = 2 * segment + WINDOW_GAP;
    }
    uint8_t *const a = t->buf, *const b = t->buf + segment + WINDOW_GAP;
    if (ZSTD_isError(ZSTD_decompressBegin(d))) return declined_here(declined);
    size_t ip = 0, pos = 0, ri = 0;
    uint64_t op = 0;
    uint8_t *seg = a;
    for (;;) {
        const size_t need = ZSTD_nextSrcSizeToDecompress(d);
        if (need == 0 || (op >= hi && !checksum)) break;
        if (need > n - ip) return declined_here(declined);
        if (segment - pos < (size_t)ZSTD_BLOCKSIZE_MAX) { /* the other buffer: this one becomes the history */
            seg = seg == a ? b : a;
            pos = 0;
        }
        const size_t r = ZSTD_decompressContinue(d, seg + pos, segment - pos, in + ip, need);
        if (ZSTD_isError(r) || r > size - op) return declined_here(declined);
        ip += need;
        if (r) copy_runs(seg + pos, op, r, out, runs, n_runs, &ri);
        op += r;
        pos += r;
    }
    if (op < hi || (checksum && (op != size || ZSTD_nextSrcSizeToDecompress(d) != 0))) return declined_here(declined);
    atomic_fetch_add(&st_frames, 1);
    *declined = 0;
    return ZGPU_OK;
}
