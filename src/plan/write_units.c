/* The host's part of a device write (write_units.h). */
#include "plan/write_units.h"

#include <stdio.h>
#include <string.h>

#include "codec/crc32c.h"
#include "codec/sharding.h"
#include "common/status.h"
#include "plan/plan.h"

void zg_wu_host_only(zg_wu_encoder *e, const char *fmt, const char *name) {
    e->gpu = 0;
    snprintf(e->why, sizeof e->why, fmt, name);
}

/* ------------------------------------------------------------------------------------------------ chain */

static void analyse_chain(const zg_chain *ch, zg_wu_encoder *e) {
    memset(e, 0, sizeof *e);
    e->gpu = 1;
    int n_tr = ch->n_a2a; /* array->array codecs: transposes, then at most a delta (encode order) */
    if (n_tr) {
        const zg_gpu_stage g = zg_codec_gpu_stage(ch->a2a[n_tr - 1]);
        if (g.kind == ZG_GPU_STAGE_POST && g.post == ZG_GPU_POST_DELTA) e->delta = g.param, n_tr--;
    }
    if (n_tr) { /* the transposes: the gather writes the chunk in their order (as reads fold them into the scatter:
                 * route.c), which the delta then takes as its flat order */
        const int nd = ch->a2b->decoded.ndim;
        int64_t cur[ZGPU_MAX_DIMS], dec[ZGPU_MAX_DIMS];
        zg_c_strides(nd, ch->a2b->decoded.shape, ch->a2b->decoded.dtype.size, cur);
        for (int a = n_tr - 1; a >= 0; a--) {
            const zg_gpu_stage g = zg_codec_gpu_stage(ch->a2a[a]);
            if (g.kind != ZG_GPU_STAGE_TRANSPOSE)
                return zg_wu_host_only(e, "array->array codec '%s'", ch->a2a[a]->vt->name);
            for (int i = 0; i < nd; i++) dec[g.order[i]] = cur[i];
            memcpy(cur, dec, sizeof(int64_t) * (size_t)nd);
        }
        e->transposed = 1;
        memcpy(e->strides, cur, sizeof(int64_t) * (size_t)nd);
    }
    const zg_gpu_stage a2b = zg_codec_gpu_stage(ch->a2b);
    if (a2b.kind == ZG_GPU_STAGE_POST && a2b.post == ZG_GPU_POST_BYTESWAP) e->swap = a2b.param;
    else if (a2b.kind != ZG_GPU_STAGE_IDENTITY) return zg_wu_host_only(e, "array->bytes codec '%s'", ch->a2b->vt->name);
    /* no compressor: the chunks are their stored form (byte-swapped where the `bytes` codec says): the host's
     * `bytes` codec copies them out of the one copy per wave, which is all the GPU would do */
    if (ch->n_b2b == 0) return zg_wu_host_only(e, "%s", "no compressor (the chunks copied once a wave)");
    /* a crc32c after the compressor: the stored chunk's CRC, which the host computes in the pool's threads as it
     * writes (SSE4.2: faster than a GPU kernel's round trip) */
    int first = 0; /* a shuffle filter before the compressor */
    if (ch->n_b2b >= 2) {
        const zg_gpu_stage g = zg_codec_gpu_stage(ch->b2b[0]);
        if (g.kind == ZG_GPU_STAGE_POST && g.post == ZG_GPU_POST_SHUFFLE) e->shuffle = g.param, first = 1;
    }
    if (ch->n_b2b == first + 2 && ch->b2b[first + 1]->vt == &zg_codec_crc32c) e->crc32c = 1;
    else if (ch->n_b2b > first + 1)
        return zg_wu_host_only(e, "bytes->bytes codec '%s' before the compressor", ch->b2b[first]->vt->name);
    const zg_gpu_stage c = zg_codec_gpu_stage(ch->b2b[first]);
    const char *name = ch->b2b[first]->vt->name;
    if (c.kind != ZG_GPU_STAGE_COMPRESSOR) return zg_wu_host_only(e, "codec '%s' (no GPU encoder)", name);
    if (c.no_encode) return zg_wu_host_only(e, "%s", c.no_encode);
    switch (c.format) {
    case ZG_GPU_FORMAT_ZSTD: e->format = ZG_GE_ZSTD; break;
    case ZG_GPU_FORMAT_GZIP: e->format = ZG_GE_GZIP; break;
    case ZG_GPU_FORMAT_ZLIB: e->format = ZG_GE_ZLIB; break;
    case ZG_GPU_FORMAT_LZ4_NUMCODECS: e->format = ZG_GE_LZ4; break;
    case ZG_GPU_FORMAT_BLOSC:
        e->blosc = 1;
        e->bp.clevel = c.level;
        e->bp.compressor = c.blosc.compressor;
        e->bp.shuffle = c.blosc.shuffle;
        e->bp.typesize = (size_t)c.blosc.typesize;
        e->bp.blocksize = (size_t)c.blosc.blocksize;
        break;
    default: return zg_wu_host_only(e, "codec '%s' (no GPU encoder)", name);
    }
    e->level = c.level;
}

void zg_wu_analyse(const zg_chain *ch, zg_wu_encoder *e) {
    if (ch->n_a2a == 0 && ch->n_b2b == 0 && zg_is_sharding(ch->a2b)) {
        analyse_chain(zg_sharding_inner_chain(ch->a2b), e);
        if (e->gpu && (e->transposed || e->delta || e->shuffle))
            zg_wu_host_only(e, "%s",
                            "a transpose, delta or shuffle (inner chunks are split out in C order, unfiltered)");
        if (e->gpu) e->shard = ch->a2b;
        else {
            char why[sizeof e->why];
            snprintf(why, sizeof why, "%s", e->why);
            snprintf(e->why, sizeof e->why, "sharding_indexed, inner chunks: %s", why);
        }
        return;
    }
    analyse_chain(ch, e);
}

/* ------------------------------------------------------------------------------------------------ shards */

int64_t zg_wu_inner_offset(const zg_codec *shard, int ndim, const int64_t *strides, uint64_t k) {
    const uint64_t *cps = zg_sharding_chunks_per_shard(shard), *inner = zg_sharding_inner_shape(shard);
    int64_t at = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        at += (int64_t)((k % cps[d]) * inner[d]) * strides[d];
        k /= cps[d];
    }
    return at;
}

/* ------------------------------------------------------------------------------------------------ layout */

/* Each object's stored bytes in turn; an object that is the fill value everywhere is deleted (nothing packed); a
 * shard's inner chunks that are leave its index empty, and its index goes before or after them. */
zgpu_status zg_wu_pack_plan(zg_wu_pack *p, size_t *failed) {
    const size_t crc = p->crc32c ? 4 : 0, inb = p->shard ? (size_t)zg_sharding_index_nbytes(p->shard) : 0;
    const int at_end = p->shard ? zg_sharding_index_at_end(p->shard) : 1;
    zg_buf index = ZG_BUF_INIT;
    zgpu_status st = ZGPU_OK;
    p->off[0] = 0;
    for (size_t i = 0; i < p->n && st == ZGPU_OK; i++) {
        uint64_t rel = p->shard && !at_end ? inb : 0;
        for (size_t k = 0; k < p->upo; k++) {
            const size_t u = i * p->upo + k;
            p->uoff[u] = SIZE_MAX;
            if (!p->differs[i]) continue;
            if (p->shard && !p->udiffers[u]) {
                p->pairs[2 * k] = p->pairs[2 * k + 1] = ZG_SHARD_EMPTY;
                continue;
            }
            p->uoff[u] = p->off[i] + rel;
            if (p->shard) p->pairs[2 * k] = rel, p->pairs[2 * k + 1] = p->sizes[u] + crc;
            rel += p->sizes[u] + crc;
        }
        if (p->shard && p->differs[i]) {
            p->ipos[i] = p->off[i] + (at_end ? rel : 0);
            if (at_end) rel += inb;
            index.size = 0;
            st = zg_sharding_encode_index(p->shard, p->pairs, &index);
            if (st == ZGPU_OK && index.size != inb)
                st = zg_error(ZGPU_ERR_INTERNAL, "sharding_indexed: encoded index has %zu bytes, expected %zu",
                              index.size, inb);
            if (st == ZGPU_OK) memcpy(p->index + i * inb, index.data, inb);
            else *failed = i;
        }
        p->off[i + 1] = p->off[i] + (p->differs[i] ? rel : 0);
    }
    zg_buf_free(&index);
    return st;
}

void zg_wu_finish_object(const zg_wu_pack *p, size_t i, uint8_t *data) {
    if (!p->differs[i]) return;
    if (p->shard) {
        const size_t inb = (size_t)zg_sharding_index_nbytes(p->shard);
        memcpy(data + p->ipos[i], p->index + i * inb, inb);
    }
    for (size_t k = 0; p->crc32c && k < p->upo; k++) { /* each stored unit's CRC32C, little-endian, after it */
        const size_t u = i * p->upo + k;
        if (p->uoff[u] == SIZE_MAX) continue;
        uint8_t *q = data + p->uoff[u];
        const uint32_t c = zg_crc32c(0, q, p->sizes[u]);
        for (int b = 0; b < 4; b++) q[p->sizes[u] + (size_t)b] = (uint8_t)(c >> (8 * b));
    }
}
