/* Codec chain: array->array* then array->bytes then bytes->bytes*, as Zarr v3 orders them. */
#include "codec/chain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/bytes.h"
#include "codec/sharding.h"
#include "common/status.h"

void zg_scratch_free(zg_scratch *s) {
    zg_buf_free(&s->a);
    zg_buf_free(&s->b);
    zg_buf_free(&s->c);
}

static void destroy_codec(zg_codec *c) {
    if (c) c->vt->destroy(c);
}

void zg_chain_free(zg_chain *ch) {
    if (!ch) return;
    for (int i = 0; i < ch->n_a2a; i++) destroy_codec(ch->a2a[i]);
    destroy_codec(ch->a2b);
    for (int i = 0; i < ch->n_b2b; i++) destroy_codec(ch->b2b[i]);
    free(ch->device_route);
    free(ch);
}

static int is_must_understand_false(const zj_value *entry) {
    const zj_value *mu = zj_get(entry, "must_understand");
    return mu && mu->type == ZJ_BOOL && !mu->boolean;
}

static size_t size_walk(const zg_chain *ch, size_t *sizes, unsigned char *exacts, int *exact);

zgpu_status zg_chain_create(const zj_value *codecs, const zg_repr *repr, zg_chain **out) {
    *out = NULL;
    if (!codecs || codecs->type != ZJ_ARRAY || codecs->n == 0)
        return zg_error(ZGPU_ERR_BAD_METADATA, "codecs must be a non-empty list");
    zg_chain *ch = calloc(1, sizeof *ch);
    if (!ch) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    ch->repr = *repr;
    zg_repr cur = *repr;
    zgpu_status st = ZGPU_OK;
    for (size_t i = 0; i < codecs->n && st == ZGPU_OK; i++) {
        const zj_value *entry = codecs->items[i];
        const char *name = NULL;
        if (entry->type == ZJ_STRING) name = entry->str; /* a bare name is shorthand for no configuration */
        else if (entry->type == ZJ_OBJECT) name = zj_string(zj_get(entry, "name"));
        if (!name) { st = zg_error(ZGPU_ERR_BAD_METADATA, "codecs[%zu] has no \"name\"", i); break; }
        const zg_codec_vtable *vt = zg_codec_find(name);
        if (!vt) {
            if (entry->type == ZJ_OBJECT && is_must_understand_false(entry)) continue;
            st = zg_error(ZGPU_ERR_UNSUPPORTED, "codec '%s' is not supported", name);
            break;
        }
        const zj_value *config = entry->type == ZJ_OBJECT ? zj_get(entry, "configuration") : NULL;
        if (config && config->type != ZJ_OBJECT) {
            st = zg_error(ZGPU_ERR_BAD_METADATA, "codec '%s': configuration must be an object", name);
            break;
        }
        int order_ok = (vt->kind == ZG_ARRAY_TO_ARRAY && !ch->a2b) || (vt->kind == ZG_ARRAY_TO_BYTES && !ch->a2b) ||
                       (vt->kind == ZG_BYTES_TO_BYTES && ch->a2b);
        if (!order_ok) {
            st = zg_error(ZGPU_ERR_BAD_METADATA,
                          "codec '%s' is out of order: codecs must be array->array*, one array->bytes, bytes->bytes*", name);
            break;
        }
        int *count = vt->kind == ZG_ARRAY_TO_ARRAY ? &ch->n_a2a : &ch->n_b2b;
        if (vt->kind != ZG_ARRAY_TO_BYTES && *count == ZG_MAX_CODECS) {
            st = zg_error(ZGPU_ERR_UNSUPPORTED, "more than %d codecs of one kind", ZG_MAX_CODECS);
            break;
        }
        zg_codec *c = NULL;
        st = vt->create(config, &cur, &c);
        if (st != ZGPU_OK) {
            const char *msg = zg_error_message(), *own = strstr(msg, "': ");
            if (!strstr(msg, name)) {
                if (strncmp(msg, "codec '", 7) == 0 && own) {
                    /* the codec named itself ("codec 'zstd': ..." for "numcodecs.zstd"): name it as the document does */
                    char rest[ZG_ERRMSG_MAX];
                    snprintf(rest, sizeof rest, "%s", own + 3);
                    zg_error(st, "codec '%s': %s", name, rest);
                } else {
                    zg_error_prefix("codec '%s': ", name);
                }
            }
            break;
        }
        if (vt->kind == ZG_ARRAY_TO_ARRAY) {
            ch->a2a[ch->n_a2a++] = c;
            cur = c->encoded;
        } else if (vt->kind == ZG_ARRAY_TO_BYTES) {
            ch->a2b = c;
        } else {
            ch->b2b[ch->n_b2b++] = c;
        }
    }
    if (st == ZGPU_OK && !ch->a2b)
        st = zg_error(ZGPU_ERR_BAD_METADATA, "codecs have no array->bytes codec (such as \"bytes\")");
    if (st != ZGPU_OK) {
        zg_chain_free(ch);
        return st;
    }
    zg_chain_update_sizes(ch);
    *out = ch;
    return ZGPU_OK;
}

/* Walks from the array->bytes codec outward: what each bytes->bytes codec decodes to is what the codec before
 * it encodes to. Records it per stage when `sizes` is given; returns the stored chunk's size. */
static size_t size_walk(const zg_chain *ch, size_t *sizes, unsigned char *exacts, int *exact) {
    const zg_codec *a2b = ch->a2b;
    *exact = 1;
    size_t size = SIZE_MAX;
    uint64_t nbytes = zg_repr_nbytes(&a2b->decoded);
    if (a2b->vt->encoded_size && nbytes < SIZE_MAX) size = a2b->vt->encoded_size(a2b, (size_t)nbytes, exact);
    for (int k = 0; k < ch->n_b2b; k++) {
        if (size == SIZE_MAX) *exact = 0;
        if (sizes) {
            sizes[k] = size;
            exacts[k] = (unsigned char)(*exact != 0);
        }
        const zg_codec *c = ch->b2b[k];
        size = size != SIZE_MAX && c->vt->encoded_size ? c->vt->encoded_size(c, size, exact) : SIZE_MAX;
    }
    if (size == SIZE_MAX) *exact = 0;
    return size;
}

size_t zg_chain_encoded_size(const zg_chain *ch, int *exact) { return size_walk(ch, NULL, NULL, exact); }

void zg_chain_update_sizes(zg_chain *ch) {
    int exact;
    (void)size_walk(ch, ch->b2b_size, ch->b2b_exact, &exact);
}

void zg_chain_set_decode_cap(zg_chain *ch, size_t bytes) {
    ch->decode_cap = bytes;
    if (zg_is_sharding(ch->a2b)) zg_sharding_set_decode_cap(ch->a2b, bytes);
}

size_t zg_chain_decode_cap(const zg_chain *ch) {
    if (ch->decode_cap) return ch->decode_cap;
    if (zg_dtype_is_vlen(&ch->repr.dtype)) {
        /* no size follows from the shape: 4 KiB an element, at least 64 MiB */
        uint64_t n = zg_repr_count(&ch->repr), cap = n > UINT64_MAX >> 12 ? UINT64_MAX : n << 12;
        if (cap < ((uint64_t)64 << 20)) cap = (uint64_t)64 << 20;
        return cap > SIZE_MAX ? SIZE_MAX : (size_t)cap;
    }
    uint64_t nbytes = zg_repr_nbytes(&ch->repr);
    uint64_t cap = nbytes > UINT64_MAX / 4 ? UINT64_MAX : 4 * nbytes;
    if (cap < ((uint64_t)1 << 20)) cap = (uint64_t)1 << 20;
    return cap > SIZE_MAX ? SIZE_MAX : (size_t)cap;
}

zj_value *zg_chain_to_json(const zg_chain *ch) {
    zj_value *list = zj_new_array();
    if (!list) return NULL;
    const zg_codec *all[2 * ZG_MAX_CODECS + 1];
    int n = 0;
    for (int i = 0; i < ch->n_a2a; i++) all[n++] = ch->a2a[i];
    all[n++] = ch->a2b;
    for (int i = 0; i < ch->n_b2b; i++) all[n++] = ch->b2b[i];
    for (int i = 0; i < n; i++) {
        zj_value *j = all[i]->vt->to_json(all[i]);
        if (!j || zj_append(list, j) != ZGPU_OK) {
            zj_free(list);
            return NULL;
        }
    }
    return list;
}

int zg_chain_is_plain(const zg_chain *ch) {
    return ch->n_a2a == 0 && ch->a2b->vt == &zg_codec_bytes && zg_bytes_is_native(ch->a2b);
}

static zgpu_status codec_failed(const zg_codec *c, zgpu_status st) {
    zg_error_prefix("codec '%s': ", c->vt->name);
    return st;
}

/* Bytes->bytes stage k of the chain: in -> dst, bounded by what it must produce (the exact size, else its bound,
 * else the cap). */
static zgpu_status b2b_decode(const zg_chain *ch, int k, const uint8_t *in, size_t n, zg_buf *dst,
                              const zg_decode_par *par) {
    const zg_codec *c = ch->b2b[k];
    /* an exact size known: the codec may spread the chunk over the threads the read lends it */
    if (par && par->ways > 1 && c->vt->decode_bytes_split && ch->b2b_exact[k] && ch->b2b_size[k] != SIZE_MAX &&
        (!dst->fixed || dst->cap >= ch->b2b_size[k])) {
        const size_t size = ch->b2b_size[k];
        dst->size = 0;
        if (!dst->fixed) ZG_FORWARD(zg_buf_reserve(dst, size));
        zgpu_status st = c->vt->decode_bytes_split(c, in, n, dst->data, size, 0, size, par);
        if (st != ZGPU_OK) return codec_failed(c, st);
        dst->size = size;
        return ZGPU_OK;
    }
    zg_out_size want = ch->b2b_exact[k]             ? zg_out_exact(ch->b2b_size[k])
                       : ch->b2b_size[k] != SIZE_MAX ? zg_out_upto(ch->b2b_size[k])
                                                     : zg_out_upto(zg_chain_decode_cap(ch));
    dst->size = 0;
    zgpu_status st = c->vt->decode_bytes(c, in, n, dst, want);
    return st == ZGPU_OK ? ZGPU_OK : codec_failed(c, st);
}

zgpu_status zg_chain_decode(const zg_chain *ch, const uint8_t *in, size_t n, uint8_t *out, zg_scratch *s) {
    const size_t nbytes = (size_t)zg_repr_nbytes(&ch->repr);
    const int plain = zg_chain_is_plain(ch);
    const uint8_t *cur = in;
    size_t cur_n = n;
    zg_buf *bufs[2] = {&s->a, &s->b};
    int next = 0;

    /* bytes->bytes, last codec first (b2b_decode). The stage next to a plain `bytes` codec decodes straight into
     * out. */
    for (int k = ch->n_b2b - 1; k >= 0; k--) {
        zg_buf direct = zg_buf_wrap(out, nbytes);
        zg_buf *dst = (k == 0 && plain) ? &direct : bufs[next];
        ZG_FORWARD(b2b_decode(ch, k, cur, cur_n, dst, s->par));
        cur = dst->data;
        cur_n = dst->size;
        if (dst != &direct) next ^= 1;
    }
    if (plain && ch->n_b2b > 0) {
        if (cur_n != nbytes)
            return zg_error(ZGPU_ERR_CORRUPT_DATA, "codec 'bytes': decoded %zu bytes, the chunk has %zu", cur_n, nbytes);
        return ZGPU_OK;
    }

    /* array->bytes into out, or into scratch when array->array codecs follow */
    uint8_t *arr = out;
    if (ch->n_a2a > 0) {
        size_t need = (size_t)zg_repr_nbytes(&ch->a2b->decoded);
        ZG_FORWARD(zg_buf_reserve(&s->c, need));
        arr = s->c.data;
    }
    zgpu_status st = ch->a2b->vt->decode_to_array(ch->a2b, cur, cur_n, arr);
    if (st != ZGPU_OK) return codec_failed(ch->a2b, st);

    /* array->array, last first; alternate between scratch c and a, the last writing to out */
    zg_buf *ring[2] = {&s->c, &s->a};
    int at = 0;
    for (int k = ch->n_a2a - 1; k >= 0; k--) {
        const zg_codec *c = ch->a2a[k];
        uint8_t *dst = out;
        if (k > 0) {
            ZG_FORWARD(zg_buf_reserve(ring[at ^ 1], (size_t)zg_repr_nbytes(&c->decoded)));
            dst = ring[at ^ 1]->data;
        }
        st = c->vt->decode_array(c, arr, dst);
        if (st != ZGPU_OK) return codec_failed(c, st);
        arr = dst;
        at ^= 1;
    }
    return ZGPU_OK;
}

int zg_chain_stores_raw(const zg_chain *ch) {
    return ch->n_b2b == 0 && ch->n_a2a == 0 && ch->a2b->vt == &zg_codec_bytes; /* (either byte order) */
}

int zg_chain_decodes_ranges(const zg_chain *ch) {
    return zg_chain_stores_raw(ch) ||
           (zg_chain_is_plain(ch) && ch->n_b2b > 0 && ch->b2b[0]->vt->decode_bytes_range && ch->b2b_exact[0] &&
            ch->b2b_size[0] == (size_t)zg_repr_nbytes(&ch->repr));
}

double zg_chain_split_speedup(const zg_chain *ch, double ratio, int ways) {
    double best = 1;
    for (int k = 0; ways > 1 && k < ch->n_b2b; k++) {
        const zg_codec *c = ch->b2b[k];
        if (!c->vt->decode_bytes_split || !c->vt->split_speedup || !ch->b2b_exact[k] || ch->b2b_size[k] == SIZE_MAX)
            continue;
        const double s = c->vt->split_speedup(c, ch->b2b_size[k], ratio, ways);
        if (s > best) best = s;
    }
    return best;
}

int zg_chain_reads_spans(const zg_chain *ch) {
    return zg_chain_stores_raw(ch) || (ch->n_b2b == 1 && zg_chain_decodes_ranges(ch) && ch->b2b[0]->vt->stored_span);
}

int zg_chain_stored_span(const zg_chain *ch, const uint8_t *head, size_t head_n, size_t n, size_t lo, size_t hi,
                         size_t *head_need, uint64_t *off, uint64_t *end) {
    const size_t nbytes = (size_t)zg_repr_nbytes(&ch->repr);
    if (!zg_chain_reads_spans(ch) || lo >= hi || hi > nbytes || (lo == 0 && hi == nbytes))
        return 0;
    if (zg_chain_stores_raw(ch)) { /* (a chunk of another size is read whole: its decode says what is wrong) */
        if (n != nbytes) return 0;
        *head_need = 0;
        *off = lo;
        *end = hi;
        return 1;
    }
    return ch->b2b[0]->vt->stored_span(ch->b2b[0], head, head_n, n, nbytes, lo, hi, head_need, off, end);
}

zgpu_status zg_chain_decode_range(const zg_chain *ch, const uint8_t *in, size_t n, uint8_t *out, size_t lo, size_t hi,
                                  zg_scratch *s) {
    const size_t nbytes = (size_t)zg_repr_nbytes(&ch->repr);
    if (!zg_chain_decodes_ranges(ch) || lo >= hi || hi > nbytes || (lo == 0 && hi == nbytes))
        return zg_chain_decode(ch, in, n, out, s);
    /* (a chunk of another size, or a range not on whole elements: decoded whole, which names a wrong size) */
    if (zg_chain_stores_raw(ch)) {
        if (n == nbytes && zg_bytes_decode_range(ch->a2b, in, out, lo, hi)) return ZGPU_OK;
        return zg_chain_decode(ch, in, n, out, s);
    }
    /* the outer stages whole (a checksum, a second compressor: rare), the last one only as far as [lo, hi) needs */
    const uint8_t *cur = in;
    size_t cur_n = n;
    zg_buf *bufs[2] = {&s->a, &s->b};
    int next = 0;
    for (int k = ch->n_b2b - 1; k >= 1; k--) {
        zg_buf *dst = bufs[next];
        ZG_FORWARD(b2b_decode(ch, k, cur, cur_n, dst, s->par));
        cur = dst->data;
        cur_n = dst->size;
        next ^= 1;
    }
    const zg_codec *last = ch->b2b[0];
    zgpu_status st = s->par && s->par->ways > 1 && last->vt->decode_bytes_split
                         ? last->vt->decode_bytes_split(last, cur, cur_n, out, nbytes, lo, hi, s->par)
                         : last->vt->decode_bytes_range(last, cur, cur_n, out, nbytes, lo, hi);
    return st == ZGPU_OK ? ZGPU_OK : codec_failed(last, st);
}

int zg_chain_decodes_runs(const zg_chain *ch) {
    return zg_chain_decodes_ranges(ch) && ch->n_b2b == 1 && ch->b2b[0]->vt->decode_bytes_runs;
}

zgpu_status zg_chain_decode_runs(const zg_chain *ch, const uint8_t *in, size_t n, uint8_t *out, const zg_byte_run *runs,
                                 size_t n_runs, const zg_part_input *part, zg_scratch *s) {
    const size_t nbytes = (size_t)zg_repr_nbytes(&ch->repr);
    if (!n_runs) return ZGPU_OK;
    const size_t lo = (size_t)runs[0].off, hi = (size_t)(runs[n_runs - 1].off + runs[n_runs - 1].len);
    if (!zg_chain_decodes_runs(ch) || hi > nbytes || hi <= lo) {
        if (part) ZG_FORWARD(part->fetch(part->ctx, 0, n, part->buf));
        ZG_FORWARD(zg_chain_decode_range(ch, in, n, out, lo, hi, s));
        zg_runs_copy_out(out, runs, n_runs);
        return ZGPU_OK;
    }
    const zg_codec *last = ch->b2b[0];
    zgpu_status st = last->vt->decode_bytes_runs(last, in, n, out, nbytes, runs, n_runs, s->par, part);
    return st == ZGPU_OK ? ZGPU_OK : codec_failed(last, st);
}

double zg_chain_runs_cost(const zg_chain *ch, double ratio, uint64_t bytes, uint64_t lo, uint64_t hi, int ways) {
    const zg_codec *c = zg_chain_decodes_runs(ch) ? ch->b2b[0] : NULL;
    if (!c || !c->vt->runs_cost) return (double)hi;
    return c->vt->runs_cost(c, (size_t)zg_repr_nbytes(&ch->repr), ratio, bytes, lo, hi, ways);
}

zgpu_status zg_chain_decode_serialized(const zg_chain *ch, const uint8_t *in, size_t n, const uint8_t **out,
                                       size_t *out_n, zg_scratch *s) {
    const uint8_t *cur = in;
    size_t cur_n = n;
    zg_buf *bufs[2] = {&s->a, &s->b};
    int next = 0;
    for (int k = ch->n_b2b - 1; k >= 0; k--) {
        ZG_FORWARD(b2b_decode(ch, k, cur, cur_n, bufs[next], NULL));
        cur = bufs[next]->data;
        cur_n = bufs[next]->size;
        next ^= 1;
    }
    *out = cur;
    *out_n = cur_n;
    return ZGPU_OK;
}

zgpu_status zg_chain_encode_serialized(const zg_chain *ch, const uint8_t *in, size_t n, zg_buf *out, zg_scratch *s) {
    const uint8_t *cur = in;
    size_t cur_n = n;
    zg_buf *bufs[2] = {&s->a, &s->b};
    int next = 0;
    out->size = 0;
    if (ch->n_b2b == 0) return zg_buf_append(out, in, n);
    for (int k = 0; k < ch->n_b2b; k++) {
        const zg_codec *c = ch->b2b[k];
        zg_buf *dst = k == ch->n_b2b - 1 ? out : bufs[next]; /* never the buffer it reads: that is bufs[next ^ 1] */
        dst->size = 0;
        zgpu_status st = c->vt->encode_bytes(c, cur, cur_n, dst);
        if (st != ZGPU_OK) return codec_failed(c, st);
        cur = dst->data;
        cur_n = dst->size;
        next ^= 1;
    }
    return ZGPU_OK;
}

zgpu_status zg_chain_encode(const zg_chain *ch, const uint8_t *chunk, zg_buf *out, zg_scratch *s) {
    const uint8_t *cur = chunk;
    zg_buf *ring[2] = {&s->a, &s->b};
    int at = 0;
    for (int k = 0; k < ch->n_a2a; k++) {
        const zg_codec *c = ch->a2a[k];
        ZG_FORWARD(zg_buf_reserve(ring[at], (size_t)zg_repr_nbytes(&c->encoded)));
        zgpu_status st = c->vt->encode_array(c, cur, ring[at]->data);
        if (st != ZGPU_OK) return codec_failed(c, st);
        cur = ring[at]->data;
        at ^= 1;
    }
    /* The last stage writes into out; earlier ones into scratch c / (a|b). */
    zg_buf *stage_out = ch->n_b2b == 0 ? out : &s->c;
    stage_out->size = 0;
    zgpu_status st = ch->a2b->vt->encode_from_array(ch->a2b, cur, stage_out);
    if (st != ZGPU_OK) return codec_failed(ch->a2b, st);
    zg_buf *prev = stage_out;
    zg_buf *alt[2] = {&s->c, ring[at]};
    int which = 1;
    for (int k = 0; k < ch->n_b2b; k++) {
        const zg_codec *c = ch->b2b[k];
        zg_buf *dst = k == ch->n_b2b - 1 ? out : alt[which];
        if (dst == prev) dst = alt[which ^ 1];
        dst->size = 0;
        st = c->vt->encode_bytes(c, prev->data, prev->size, dst);
        if (st != ZGPU_OK) return codec_failed(c, st);
        prev = dst;
        which ^= 1;
    }
    return ZGPU_OK;
}
