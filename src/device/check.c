/* Phase D: once a wave's stream has passed its `done` event, its per-chunk statuses and sizes are checked;
 * a failure is ZGPU_ERR_CORRUPT_DATA naming the array, the chunk key and the codec. */
#include "device/job.h"

const char *dev_task_key(const job *j, const dtask *t, char *buf, size_t n) {
    const zg_chunk_task *pt = &j->plan->tasks[t->plan_i];
    const zg_plan_object *ob = &j->plan->objects[pt->object];
    if (j->a->shard && zg_sharding_fixed_index(j->a->shard, NULL)) { /* a TIFF tile: "page P, tile T" */
        char what[200];
        zg_sharding_describe_inner(j->a->shard, ob->key, pt->inner, what, sizeof what);
        snprintf(buf, n, "%s' %s '", ob->key, what);
    } else if (j->a->shard) snprintf(buf, n, "%s' inner chunk %u '", ob->key, pt->inner);
    else snprintf(buf, n, "%s", ob->key);
    return buf;
}

zgpu_status dev_task_error(const job *j, const dtask *t, const char *codec, zgpu_status s) {
    char key[300];
    zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s', codec '%s': ", j->a->path, dev_task_key(j, t, key, sizeof key),
                    codec);
    return s;
}


zgpu_status dev_check_wave(job *j, bufset *b, wave_check *wc, zgpu_read_stats *stats) {
    if (!wc->active) return ZGPU_OK;
    wc->active = 0;
    CU(cudaEventSynchronize(b->done), "waiting for a wave");
    float at[4]; /* the wave's stage events, in ms since the fork */
    int timed = 1;
    for (int i = 0; i < 4 && timed; i++) timed = cudaEventElapsedTime(&at[i], j->st->ev[0], b->ev[i]) == cudaSuccess;
    if (timed && j->trace)
        fprintf(stderr, "zgpu trace: wave %zu  read done %.2f  queued %.2f  | h2d %.2f-%.2f  decode -%.2f  scatter -%.2f ms\n",
                wc->wave, wc->host_read, wc->host_launch, at[0], at[1], at[2], at[3]);
    if (timed) {
        zg_span_add(&j->span[0], at[0], at[1], &stats->h2d_s);
        zg_span_add(&j->span[1], at[1], at[2], &stats->decode_s);
        zg_span_add(&j->span[2], at[2], at[3], &stats->scatter_s);
    }
    b->in_use = 0;
    const int *status = (const int *)(b->h + wc->status_off), *pre = (const int *)(b->h + wc->pre_off);
    const uint64_t *actual = (const uint64_t *)(b->h + wc->actual_off);
    zgpu_status s = ZGPU_OK;
    char text[256]; /* a decoder's message for a stream's status (gpu_decoder.h: error_text) */
    for (size_t r = 0; r < wc->n_refs && s == ZGPU_OK; r++) /* prechecks first (nvCOMP's LZ4: checked on the GPU) */
        if (pre[r]) {
            j->decs[wc->refs[r].dec]->error_text(pre[r], 1, text, sizeof text);
            s = dev_task_error(j, &j->t[wc->refs[r].task], j->pp.comp_name,
                               zg_error(ZGPU_ERR_CORRUPT_DATA, "%s", text));
        }
    for (size_t r = 0; r < wc->n_refs && s == ZGPU_OK; r++) {
        const stream_ref *ref = &wc->refs[r];
        const dtask *t = &j->t[ref->task];
        const zg_gpu_decoder *dec = j->decs[ref->dec];
        if (status[r] != 0) {
            dec->error_text(status[r], 0, text, sizeof text);
            s = dev_task_error(j, t, j->pp.comp_name, zg_error(ZGPU_ERR_CORRUPT_DATA, "%s", text));
        } else if (actual[r] != ref->expect) {
            s = dev_task_error(j, t, j->pp.comp_name,
                           zg_error(ZGPU_ERR_CORRUPT_DATA, "GPU %s decompression produced %llu bytes, expected %llu",
                                    dec->name, (unsigned long long)actual[r], (unsigned long long)ref->expect));
        }
    }
    const int *crc = (const int *)(b->h + wc->crc_off);
    for (size_t r = 0; r < wc->n_crc && s == ZGPU_OK; r++)
        if (crc[r]) s = dev_task_error(j, &j->t[wc->crc_task[r]], "crc32c",
                                   zg_error(ZGPU_ERR_CORRUPT_DATA, "checksum mismatch (verified on the GPU)"));
    const int *chk = (const int *)(b->h + wc->chk_off);
    for (size_t r = 0; r < wc->n_chk && s == ZGPU_OK; r++)
        if (chk[r]) {
            const int kind = wc->chk_task[r].kind;
            const char *what = j->pp.comp != ZG_GPU_FORMAT_BLOSC ? "" : kind == ZG_CHECK_ADLER32 ? " of a zlib stream" : " of a zstd stream";
            s = dev_task_error(j, &j->t[wc->chk_task[r].task], j->pp.comp_name,
                               zg_error(ZGPU_ERR_CORRUPT_DATA, "%s checksum%s does not match the decoded data (checked on the GPU)",
                                        zg_gpu_check_name(kind), what));
        }
    if (s == ZGPU_OK && j->dcache) dev_cache_commit(j, wc); /* (checked: the device cache may keep them) */
    free(wc->refs);
    wc->refs = NULL;
    free(wc->crc_task);
    wc->crc_task = NULL;
    free(wc->chk_task);
    wc->chk_task = NULL;
    return s;
}

