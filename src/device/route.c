/* Routing: the chain's analysis into the device pipe (compressor, post stages, transposes folded into the
 * scatter), the read's GPU decoders, and the host parse that sends a task to the GPU or to the host. */
#include "device/job.h"

/* ------------------------------------------------------------------------------------------------
 * Chain analysis
 * ---------------------------------------------------------------------------------------------- */

void dev_not_gpu(dev_pipe *p, const char *fmt, const char *name) {
    p->gpu = 0;
    snprintf(p->why, sizeof p->why, fmt, name);
}

static void add_post(dev_pipe *p, const zg_gpu_stage *g) {
    p->post[p->n_post].kind = (int)g->post;
    p->post[p->n_post].row = g->row;
    p->post[p->n_post].stride = g->stride;
    p->post[p->n_post++].param = g->param;
    /* the unshuffle and the floating-point predictor's gather work out of place */
    if (g->post == ZG_GPU_POST_SHUFFLE || g->post == ZG_GPU_POST_ROW_FLOAT) p->needs_b = 1;
}

/* The chain as the device pipe, from its codecs' GPU entries (codec.h: zg_gpu_stage). The chain must look like
 * [transpose*] [post*] a2b [post*] [compressor] [crc32c]* in encode order; anything else decodes on the host. */
static void analyse(const zg_chain *ch, dev_pipe *p) {
    memset(p, 0, sizeof *p);
    p->gpu = 1;
    p->chunk_nbytes = zg_repr_nbytes(&ch->repr);
    int nd = ch->repr.ndim;
    /* bytes->bytes, decode order: last first; trailing crc32c stages are verified and stripped on the host */
    int k = ch->n_b2b - 1;
    zg_gpu_stage g;
    while (k >= 0 && (g = zg_codec_gpu_stage(ch->b2b[k])).kind == ZG_GPU_STAGE_POST && g.post == ZG_GPU_POST_CRC32C) {
        p->n_outer_crc++;
        k--;
    }
    if (k >= 0 && (g = zg_codec_gpu_stage(ch->b2b[k])).kind == ZG_GPU_STAGE_COMPRESSOR) {
        p->comp = (int)g.format;
        p->comp_name = ch->b2b[k]->vt->name;
        if (g.out_of_place) p->needs_b = 1; /* blosc: shuffled blocks decode to A, unshuffle to B */
        k--;
    }
    uint64_t size = p->chunk_nbytes;
    int n_crc_inner = 0;
    for (; k >= 0; k--) { /* device stages between the compressor and the array->bytes codec */
        g = zg_codec_gpu_stage(ch->b2b[k]);
        if (g.kind != ZG_GPU_STAGE_POST)
            return dev_not_gpu(p, "codec '%s' has no GPU decoder at this position", ch->b2b[k]->vt->name);
        add_post(p, &g);
        if (g.post == ZG_GPU_POST_CRC32C) n_crc_inner++;
    }
    p->comp_out = size + 4ull * (uint64_t)n_crc_inner;
    /* array->bytes */
    g = zg_codec_gpu_stage(ch->a2b);
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
        g = zg_codec_gpu_stage(ch->a2a[a]);
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
    int64_t c[ZGPU_MAX_DIMS];
    zg_c_strides(nd, ch->repr.shape, ch->repr.dtype.size, c);
    p->src_c_order = 1;
    for (int d = 0; d < nd; d++) p->src_c_order &= ch->repr.shape[d] <= 1 || cur[d] == c[d];
}

/* The chain's pipe: analysed on its first device read and kept with the chain (chain.h: device_route); a
 * read that races another's first one analyses too and keeps the winner's. Out of memory: analysed into *tmp. */
const dev_pipe *dev_chain_pipe(const zg_chain *ch, dev_pipe *tmp) {
    zg_chain *c = (zg_chain *)ch; /* the cache is the chain's one mutable member */
    dev_pipe *kept = __atomic_load_n((dev_pipe **)&c->device_route, __ATOMIC_ACQUIRE);
    if (kept) return kept;
    dev_pipe *p = malloc(sizeof *p);
    analyse(ch, p ? p : tmp);
    if (!p) return tmp;
    void *expected = NULL;
    if (__atomic_compare_exchange_n(&c->device_route, &expected, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return p;
    free(p);
    return expected;
}

/* The read's decoders (once per read, after nvCOMP's alignments set nvc_ok): the stored format's stream's, and
 * blosc's streams' by kind; each picked by the tuning's choice for its kind (registry_gpu.c: zg_gpu_pick). */
void dev_pick_decoders(job *j) {
    const int comp = j->pp.comp;
    j->container = zg_gpu_container_of(comp);
    j->dec_main = j->container ? zg_gpu_pick(j->tune, comp, j->container->stream, j->nvc_ok) : NULL;
    char why[120];
    if (j->dec_main && j->dec_main->usable && !j->dec_main->usable(why, sizeof why)) { /* this device cannot */
        if (j->pp.gpu) {
            j->pp.gpu = 0;
            snprintf(j->pp.why, sizeof j->pp.why, "codec '%s': GPU %s decoder: %s", j->pp.comp_name,
                     j->dec_main->name, why);
        }
        j->dec_main = NULL;
    }
    j->plans_scratch = j->dec_main && j->dec_main->plans;
    for (int k = 0; k < ZG_GPU_STREAM_N; k++) {
        const zg_gpu_decoder *d =
            comp == ZG_GPU_FORMAT_BLOSC ? zg_gpu_pick(j->tune, comp, (zg_gpu_stream)k, j->nvc_ok) : NULL;
        if (d && d->usable && !d->usable(why, sizeof why)) d = NULL; /* (its streams' chunks decode on the host) */
        j->dec_kind[k] = d;
        if (d && d->plans) j->plans_scratch = 1;
    }
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
    const dev_pipe *pp = &j->pp;
    uint64_t n = t->nbytes;
    for (int c = 0; c < pp->n_outer_crc; c++) {
        if (n < 4) return 1;
        uint32_t want = zg_le32(p + n - 4);
        if (zg_crc32c(0, p, (size_t)n - 4) != want) return 1; /* the CPU path reports the mismatch */
        n -= 4;
    }
    size_t off = 0, len = (size_t)n;
    if (pp->comp == ZG_GPU_FORMAT_NONE) {
        if (n != pp->comp_out) return 1;
    } else if (pp->comp == ZG_GPU_FORMAT_BLOSC) {
        if (zg_blosc_parse_header(p, (size_t)n, (size_t)pp->comp_out, &t->bh) != ZGPU_OK) return 1;
        size_t cap = zg_blosc_max_streams(&t->bh);
        const zg_gpu_stream kind = t->bh.memcpyed ? ZG_GPU_STREAM_NONE : zg_blosc_gpu_stream(&t->bh);
        const zg_gpu_decoder *d = kind == ZG_GPU_STREAM_NONE ? NULL : j->dec_kind[kind];
        if (!t->bh.memcpyed && (!d || (d->needs_nvcomp && !j->nvc_ok))) return 1;
        if (d && d->plans && !(t->zp = plan_new(j, t))) return 1;
        const int di = d ? (int)zg_gpu_decoder_index(d) : 0;
        t->dec = di;
        t->streams = malloc((cap ? cap : 1) * sizeof *t->streams);
        if (!t->streams) return 1;
        if (zg_blosc_streams(p, (size_t)n, &t->bh, t->streams, cap, &t->n_streams) != ZGPU_OK) return 1;
        for (size_t s = 0; s < t->n_streams; s++) {
            zg_blosc_stream *bs = &t->streams[s];
            if (bs->raw) continue; /* (all of a memcpyed chunk's) */
            if (bs->dst_off % j->out_align[di]) return 1; /* nvCOMP cannot write there */
            /* (LZ4 streams are walked on the GPU before nvCOMP decodes them (nvcomp_gpu.c): on the host that walk
             * took as long as reading the bytes) */
            if (zg_blosc_stream_payload(&t->bh, p, bs) != ZGPU_OK) return 1;
            if (d->verifies & (1u << bs->check_kind)) bs->check_kind = ZG_CHECK_NONE; /* (its decoder checks it) */
            if (d->check && d->check(t->zp, p + bs->src_off, bs->src_len, bs->dst_len, bs->src_off)) return 1;
            if ((t->h_off + bs->src_off) % j->in_align[di]) return 1;
        }
    } else {
        const zg_gpu_decoder *d = j->dec_main;
        uint32_t check = 0;
        int kind = ZG_CHECK_NONE;
        if (!d || j->container->locate(p, (size_t)n, (size_t)pp->comp_out, &off, &len, &check, &kind)) return 1;
        t->check = check;
        t->check_kind = d->verifies & (1u << kind) ? ZG_CHECK_NONE : kind; /* (else its decoder checks it) */
        if (d->plans && !(t->zp = plan_new(j, t))) return 1;
        if (d->check && d->check(t->zp, p + off, len, (size_t)pp->comp_out, 0)) return 1;
        if (d->needs_nvcomp && !j->nvc_ok) return 1;
        const int di = (int)zg_gpu_decoder_index(d);
        t->dec = di;
        /* nvCOMP wants its input aligned (deflate: 4 or 8 bytes) but gzip/zlib/lz4 headers are 10/2/4 bytes:
         * move the object forward inside its slot (which has ALIGN bytes of slack) to align the payload */
        uint64_t mis = (t->h_off + off) % j->in_align[di];
        if (mis) {
            uint64_t shift = j->in_align[di] - mis;
            if (shift >= ALIGN) return 1;
            memmove((uint8_t *)p + shift, p, (size_t)t->nbytes);
            t->h_off += shift;
        }
    }
    t->body_off = off;
    t->body_len = len;
    return 0;
}
