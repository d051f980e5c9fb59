/* Routing: the chain's analysis into the device pipe (compressor, post stages, transposes folded into the
 * scatter), the decoder format of each task, and the host parse that sends a task to the GPU or to the host. */
#include "device/job.h"

/* ------------------------------------------------------------------------------------------------
 * Chain analysis
 * ---------------------------------------------------------------------------------------------- */

void dev_not_gpu(pipe *p, const char *fmt, const char *name) {
    p->gpu = 0;
    snprintf(p->why, sizeof p->why, fmt, name);
}

static zg_gpu_stage stage_of(const zg_codec *c) {
    zg_gpu_stage g;
    memset(&g, 0, sizeof g);
    if (c && c->vt->gpu_stage) c->vt->gpu_stage(c, &g);
    return g;
}

static void add_post(pipe *p, const zg_gpu_stage *g) {
    p->post[p->n_post].kind = (int)g->post;
    p->post[p->n_post++].param = g->param;
    if (g->post == ZG_GPU_POST_SHUFFLE) p->needs_b = 1; /* the unshuffle works out of place */
}

/* The chain as the device pipe, from its codecs' GPU entries (codec.h: zg_gpu_stage). The chain must look like
 * [transpose*] [post*] a2b [post*] [compressor] [crc32c]* in encode order; anything else decodes on the host. */
static void analyse(const zg_chain *ch, pipe *p) {
    memset(p, 0, sizeof *p);
    p->gpu = 1;
    p->chunk_nbytes = zg_repr_nbytes(&ch->repr);
    int nd = ch->repr.ndim;
    /* bytes->bytes, decode order: last first; trailing crc32c stages are verified and stripped on the host */
    int k = ch->n_b2b - 1;
    zg_gpu_stage g;
    while (k >= 0 && (g = stage_of(ch->b2b[k])).kind == ZG_GPU_STAGE_POST && g.post == ZG_GPU_POST_CRC32C) {
        p->n_outer_crc++;
        k--;
    }
    if (k >= 0 && (g = stage_of(ch->b2b[k])).kind == ZG_GPU_STAGE_COMPRESSOR) {
        p->comp = (int)g.format;
        p->comp_name = ch->b2b[k]->vt->name;
        if (g.out_of_place) p->needs_b = 1; /* blosc: shuffled blocks decode to A, unshuffle to B */
        k--;
    }
    uint64_t size = p->chunk_nbytes;
    int n_crc_inner = 0;
    for (; k >= 0; k--) { /* device stages between the compressor and the array->bytes codec */
        g = stage_of(ch->b2b[k]);
        if (g.kind != ZG_GPU_STAGE_POST)
            return dev_not_gpu(p, "codec '%s' has no GPU decoder at this position", ch->b2b[k]->vt->name);
        add_post(p, &g);
        if (g.post == ZG_GPU_POST_CRC32C) n_crc_inner++;
    }
    p->comp_out = size + 4ull * (uint64_t)n_crc_inner;
    /* array->bytes */
    g = stage_of(ch->a2b);
    if (g.kind == ZG_GPU_STAGE_NONE && g.why) return dev_not_gpu(p, "%s", g.why);
    if (g.kind != ZG_GPU_STAGE_IDENTITY && g.kind != ZG_GPU_STAGE_POST)
        return dev_not_gpu(p, "array->bytes codec '%s' has no GPU decoder", ch->a2b ? ch->a2b->vt->name : "?");
    if (g.kind == ZG_GPU_STAGE_POST) add_post(p, &g);
    const zg_repr enc = ch->a2b->decoded; /* the array the bytes codec serialises */
    /* array->array, decode order: last first; transposes must come last and fold into the scatter */
    int64_t cur[ZGPU_MAX_DIMS];
    zg_c_strides(enc.ndim, enc.shape, enc.dtype.size, cur);
    int seen_transpose = 0;
    for (int a = ch->n_a2a - 1; a >= 0; a--) {
        g = stage_of(ch->a2a[a]);
        if (g.kind == ZG_GPU_STAGE_TRANSPOSE) {
            int64_t dec[ZGPU_MAX_DIMS];
            for (int i = 0; i < nd; i++) dec[g.order[i]] = cur[i];
            memcpy(cur, dec, sizeof(int64_t) * (size_t)nd);
            seen_transpose = 1;
        } else if (g.kind == ZG_GPU_STAGE_POST && !seen_transpose) {
            add_post(p, &g);
        } else {
            return dev_not_gpu(p, "codec '%s' has no GPU decoder (or not in this position/configuration)",
                               ch->a2a[a]->vt->name);
        }
    }
    memcpy(p->src_strides, cur, sizeof(int64_t) * (size_t)nd);
}

/* The chain's pipe: analysed on its first device read and kept with the chain (chain.h: device_route); a
 * read that races another's first one analyses too and keeps the winner's. Out of memory: analysed into *tmp. */
const pipe *dev_chain_pipe(const zg_chain *ch, pipe *tmp) {
    zg_chain *c = (zg_chain *)ch; /* the cache is the chain's one mutable member */
    pipe *kept = __atomic_load_n((pipe **)&c->device_route, __ATOMIC_ACQUIRE);
    if (kept) return kept;
    pipe *p = malloc(sizeof *p);
    analyse(ch, p ? p : tmp);
    if (!p) return tmp;
    void *expected = NULL;
    if (__atomic_compare_exchange_n(&c->device_route, &expected, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return p;
    free(p);
    return expected;
}

int dev_nvc_format(const job *j, int comp, const zg_blosc_header *bh) {
    /* DEFLATE_HOST: -1, so that blosc's zlib streams decode on host threads too */
    const int deflate = j->deflate_mode == DEFLATE_OWN ? FMT_INFLATE : j->deflate_mode == DEFLATE_NVCOMP ? ZG_NVC_DEFLATE : -1;
    if (comp == ZG_GPU_FORMAT_ZSTD) return ZG_NVC_ZSTD;
    if (comp == ZG_GPU_FORMAT_GZIP || comp == ZG_GPU_FORMAT_ZLIB) return deflate;
    if (comp == ZG_GPU_FORMAT_LZ4_NUMCODECS) return ZG_NVC_LZ4;
    if (comp == ZG_GPU_FORMAT_BLOSC && bh) {
        switch (bh->compformat) {
        case ZG_BLOSC_LZ4: return j->lz4_mode == LZ4_OWN ? FMT_LZ4 : ZG_NVC_LZ4;
        case ZG_BLOSC_ZSTD: return ZG_NVC_ZSTD;
        case ZG_BLOSC_ZLIB: return deflate;
        case ZG_BLOSC_SNAPPY: return ZG_NVC_SNAPPY;
        default: return -1;
        }
    }
    return -1;
}

const char *dev_fmt_name(int fmt) {
    return fmt == FMT_OWN       ? "zstd"
           : fmt == FMT_INFLATE ? "DEFLATE"
           : fmt == FMT_LZ4     ? "LZ4"
                                : zg_nvc_format_name((zg_nvc_format)fmt);
}

/* zgpu's zstd decoder (rather than nvCOMP's)? */
int dev_use_own_zstd(const job *j) { return j->zstd_mode != ZSTD_NVCOMP; }

/* The decoder format of a GPU task's compressed streams (blosc: its inner compressor). */
int dev_task_fmt(const job *j, const dtask *t) {
    if (t->zp) return FMT_OWN;
    return dev_nvc_format(j, j->pp.comp, j->pp.comp == ZG_GPU_FORMAT_BLOSC ? &t->bh : NULL);
}

/* The task's zstd plan: the device state's, emptied (its arrays kept from earlier reads). */
static zg_zd_plan *plan_new(job *j, dtask *t) {
    zg_zd_plan *pl = &j->st->plans[t - j->t];
    zg_zd_plan_reset(pl);
    return pl;
}

void dev_plan_drop(dtask *t) { t->zp = NULL; /* (its arrays stay with the device state) */ }


/* Host parse of a GPU task's stored bytes: 0 = fine for the GPU, else decode it on the CPU. */
int dev_parse_task(job *j, dtask *t, uint8_t *p) {
    const pipe *pp = &j->pp;
    uint64_t n = t->nbytes;
    for (int c = 0; c < pp->n_outer_crc; c++) {
        if (n < 4) return 1;
        uint32_t want = zg_le32(p + n - 4);
        if (zg_crc32c(0, p, (size_t)n - 4) != want) return 1; /* the CPU path reports the mismatch */
        n -= 4;
    }
    size_t off = 0, len = (size_t)n;
    switch (pp->comp) {
    case ZG_GPU_FORMAT_NONE:
        if (n != pp->comp_out) return 1;
        break;
    case ZG_GPU_FORMAT_ZSTD:
        if (dev_use_own_zstd(j)) {
            if (!(t->zp = plan_new(j, t)) || zg_zd_plan_frame(t->zp, p, (size_t)n, (size_t)pp->comp_out, 0) != ZGPU_OK)
                return 1;
        } else if (zg_zstd_check(p, (size_t)n, (size_t)pp->comp_out) != ZGPU_OK) {
            return 1;
        }
        break;
    case ZG_GPU_FORMAT_GZIP:
        if (zg_gzip_locate(p, (size_t)n, (size_t)pp->comp_out, &off, &len) != ZGPU_OK) return 1;
        t->check = zg_le32(p + n - 8);
        break;
    case ZG_GPU_FORMAT_ZLIB:
        if (zg_zlib_locate(p, (size_t)n, (size_t)pp->comp_out, &off, &len) != ZGPU_OK) return 1;
        t->check = (uint32_t)p[n - 4] << 24 | (uint32_t)p[n - 3] << 16 | (uint32_t)p[n - 2] << 8 | (uint32_t)p[n - 1];
        break;
    case ZG_GPU_FORMAT_LZ4_NUMCODECS:
        if (zg_lz4nc_locate(p, (size_t)n, (size_t)pp->comp_out, &off, &len) != ZGPU_OK) return 1;
        break;
    case ZG_GPU_FORMAT_BLOSC: {
        if (zg_blosc_parse_header(p, (size_t)n, (size_t)pp->comp_out, &t->bh) != ZGPU_OK) return 1;
        size_t cap = zg_blosc_max_streams(&t->bh);
        int fmt = t->bh.memcpyed ? 0 : dev_nvc_format(j, ZG_GPU_FORMAT_BLOSC, &t->bh);
        const int own = !t->bh.memcpyed && fmt == ZG_NVC_ZSTD && dev_use_own_zstd(j);
        if (fmt < 0 || (!t->bh.memcpyed && !j->nvc_ok && !own && fmt < ZG_NVC_N)) return 1;
        if (own && !(t->zp = plan_new(j, t))) return 1;
        if (own) fmt = FMT_OWN;
        t->streams = malloc((cap ? cap : 1) * sizeof *t->streams);
        if (!t->streams) return 1;
        if (zg_blosc_streams(p, (size_t)n, &t->bh, t->streams, cap, &t->n_streams) != ZGPU_OK) return 1;
        for (size_t s = 0; s < t->n_streams; s++) {
            zg_blosc_stream *bs = &t->streams[s];
            if (bs->raw) continue;
            if (bs->dst_off % j->out_align[fmt]) return 1; /* nvCOMP cannot write there */
            /* LZ4 streams are walked on the GPU before nvCOMP decodes them (dev_launch_wave): on the host that walk
             * took as long as reading the bytes */
            if (own && zg_zd_plan_frame(t->zp, p + bs->src_off, bs->src_len, bs->dst_len, bs->src_off) != ZGPU_OK)
                return 1;
            if (!own && t->bh.compformat == ZG_BLOSC_ZSTD &&
                zg_zstd_check(p + bs->src_off, bs->src_len, bs->dst_len) != ZGPU_OK)
                return 1;
            if (t->bh.compformat == ZG_BLOSC_ZLIB) {
                size_t zo, zl;
                if (zg_zlib_locate(p + bs->src_off, bs->src_len, bs->dst_len, &zo, &zl) != ZGPU_OK) return 1;
                bs->src_off += (uint32_t)zo;
                bs->src_len = (uint32_t)zl;
            }
            if ((t->h_off + bs->src_off) % j->in_align[fmt]) return 1;
        }
        break;
    }
    }
    if (pp->comp != ZG_GPU_FORMAT_NONE && pp->comp != ZG_GPU_FORMAT_BLOSC) {
        int fmt = dev_task_fmt(j, t);
        if (!j->nvc_ok && fmt < ZG_NVC_N) return 1;
        if (fmt == FMT_INFLATE && (len > ZI_MAX_BYTES || pp->comp_out > ZI_MAX_BYTES)) return 1;
        /* nvCOMP wants its input aligned (deflate: 4 or 8 bytes) but gzip/zlib/lz4 headers are 10/2/4 bytes:
         * move the object forward inside its slot (which has ALIGN bytes of slack) to align the payload */
        uint64_t mis = (t->h_off + off) % j->in_align[fmt];
        if (mis) {
            uint64_t shift = j->in_align[fmt] - mis;
            if (shift >= ALIGN) return 1;
            memmove((uint8_t *)p + shift, p, (size_t)t->nbytes);
            t->h_off += shift;
        }
    }
    t->body_off = off;
    t->body_len = len;
    return 0;
}
