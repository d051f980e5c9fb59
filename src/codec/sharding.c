/* sharding_indexed codec (Zarr v3): see codec/sharding.h. A shard is the concatenation of encoded inner
 * chunks plus an index of (offset, nbytes) uint64 pairs over the inner-chunk grid (C order), encoded with
 * the index codecs and placed at the start or the end of the shard. Offsets are absolute within the shard
 * (with the index at the start they already count the index bytes). Empty inner chunks: both values
 * 2^64-1; they decode to the fill value. */
#include "codec/sharding.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codec/bytes.h"
#include "codec/crc32c.h"
#include "common/status.h"

#define MAX_INNER_CHUNKS ((uint64_t)1 << 28) /* keeps the index (16 bytes per inner chunk) allocatable */

typedef struct shard_codec {
    zg_codec base;
    int ndim;
    uint64_t inner[ZGPU_MAX_DIMS]; /* inner chunk shape */
    uint64_t cps[ZGPU_MAX_DIMS];   /* inner chunks per shard, per axis */
    uint64_t n_inner;
    zg_chain *inner_chain;
    zg_chain *index_chain;
    uint64_t index_nbytes;
    int at_end;
    /* A fixed index (zg_sharding_set_fixed_index): offsets then lengths, n_inner each, or NULL */
    uint64_t *fixed;
    uint64_t fixed_size;
    zg_shard_describe_fn describe;
    void *describe_user;
    void (*free_user)(void *);
} shard_codec;

static const uint8_t index_fill[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

int zg_is_sharding(const zg_codec *c) { return c && c->vt == &zg_codec_sharding; }
const uint64_t *zg_sharding_inner_shape(const zg_codec *c) { return ((const shard_codec *)c)->inner; }
const uint64_t *zg_sharding_chunks_per_shard(const zg_codec *c) { return ((const shard_codec *)c)->cps; }
uint64_t zg_sharding_n_inner(const zg_codec *c) { return ((const shard_codec *)c)->n_inner; }
const zg_chain *zg_sharding_inner_chain(const zg_codec *c) { return ((const shard_codec *)c)->inner_chain; }
uint64_t zg_sharding_index_nbytes(const zg_codec *c) { return ((const shard_codec *)c)->index_nbytes; }
int zg_sharding_index_at_end(const zg_codec *c) { return ((const shard_codec *)c)->at_end; }

static void shard_destroy(zg_codec *c) {
    shard_codec *s = (shard_codec *)c;
    if (!s) return;
    zg_chain_free(s->inner_chain);
    zg_chain_free(s->index_chain);
    free(s->fixed);
    if (s->free_user) s->free_user(s->describe_user);
    free(s);
}

void zg_sharding_set_fixed_index(zg_codec *c, uint64_t *offsets_lengths, uint64_t object_size,
                                 zg_shard_describe_fn describe, void *user, void (*free_user)(void *)) {
    shard_codec *s = (shard_codec *)c;
    free(s->fixed);
    if (s->free_user) s->free_user(s->describe_user);
    s->fixed = offsets_lengths;
    s->fixed_size = object_size;
    s->index_nbytes = 0;
    s->describe = describe;
    s->describe_user = user;
    s->free_user = free_user;
}

int zg_sharding_fixed_index(const zg_codec *c, uint64_t *object_size) {
    const shard_codec *s = (const shard_codec *)c;
    if (s->fixed && object_size) *object_size = s->fixed_size;
    return s->fixed != NULL;
}

void zg_sharding_fixed_stored(const zg_codec *c, uint64_t *n_present, uint64_t *n_bytes) {
    const shard_codec *s = (const shard_codec *)c;
    *n_present = *n_bytes = 0;
    for (uint64_t i = 0; s->fixed && i < s->n_inner; i++) {
        const uint64_t len = s->fixed[s->n_inner + i];
        if (len == ZG_SHARD_EMPTY) continue;
        *n_present += 1;
        *n_bytes += len;
    }
}

void zg_sharding_describe_inner(const zg_codec *c, const char *key, uint64_t inner, char *buf, size_t n) {
    const shard_codec *s = (const shard_codec *)c;
    if (s && s->describe) s->describe(s->describe_user, inner, buf, n);
    else snprintf(buf, n, "shard '%s', inner chunk %llu", key, (unsigned long long)inner);
}

/* The default index codecs zarr-python writes: [bytes little, crc32c]. */
static zj_value *default_index_codecs(void) {
    static const char text[] = "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}]";
    zj_value *v = NULL;
    return zj_parse(text, sizeof text - 1, "sharding index_codecs", &v) == ZGPU_OK ? v : NULL;
}

/* Encodes an index (n_inner x 2 native uint64) into out (size set). */
static zgpu_status encode_index(const shard_codec *s, const uint64_t *pairs, zg_buf *out);
zgpu_status zg_sharding_encode_index(const zg_codec *c, const uint64_t *pairs, zg_buf *out) {
    return encode_index((const shard_codec *)c, pairs, out);
}
static zgpu_status encode_index(const shard_codec *s, const uint64_t *pairs, zg_buf *out) {
    zg_scratch scr = ZG_SCRATCH_INIT;
    out->size = 0;
    zgpu_status st = zg_chain_encode(s->index_chain, (const uint8_t *)pairs, out, &scr);
    zg_scratch_free(&scr);
    if (st != ZGPU_OK) zg_error_prefix("sharding_indexed: index: ");
    return st;
}

static zgpu_status shard_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(!config || config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA,
                 "sharding_indexed: a configuration object is required");
    static const char *const keys[] = {"chunk_shape", "codecs", "index_codecs", "index_location", NULL};
    ZG_FORWARD(zg_config_only(config, "sharding_indexed", NULL, keys));
    const int nd = decoded->ndim;
    ZG_RETURN_IF(nd + 1 > ZGPU_MAX_DIMS, ZGPU_ERR_UNSUPPORTED,
                 "sharding_indexed: %d dimensions leave no room for the index's extra axis", nd);
    const zj_value *cs = zj_get(config, "chunk_shape");
    ZG_RETURN_IF(!cs || cs->type != ZJ_ARRAY || cs->n != (size_t)nd, ZGPU_ERR_BAD_METADATA,
                 "sharding_indexed: \"chunk_shape\" must be a list of %d positive integers", nd);
    shard_codec *s = calloc(1, sizeof *s);
    ZG_RETURN_IF(!s, ZGPU_ERR_NO_MEMORY, "sharding_indexed: out of memory");
    s->base.vt = &zg_codec_sharding;
    s->base.decoded = *decoded;
    s->base.encoded = *decoded;
    s->ndim = nd;
    zgpu_status st = ZGPU_OK;
    uint64_t n_inner = 1;
    for (int i = 0; i < nd && st == ZGPU_OK; i++) {
        uint64_t v;
        if (!zj_is_uint(zj_at(cs, (size_t)i), &v) || v == 0)
            st = zg_error(ZGPU_ERR_BAD_METADATA, "sharding_indexed: \"chunk_shape\"[%d] must be a positive integer", i);
        else if (decoded->shape[i] % v != 0)
            st = zg_error(ZGPU_ERR_BAD_METADATA,
                          "sharding_indexed: shard shape %llu on axis %d is not divisible by the inner chunk shape %llu",
                          (unsigned long long)decoded->shape[i], i, (unsigned long long)v);
        else {
            s->inner[i] = v;
            s->cps[i] = decoded->shape[i] / v;
            if (s->cps[i] != 0 && n_inner > MAX_INNER_CHUNKS / s->cps[i])
                st = zg_error(ZGPU_ERR_UNSUPPORTED, "sharding_indexed: more than %llu inner chunks per shard",
                              (unsigned long long)MAX_INNER_CHUNKS);
            else n_inner *= s->cps[i];
        }
    }
    s->n_inner = n_inner;
    const char *loc = NULL;
    if (st == ZGPU_OK) st = zg_config_str(config, "sharding_indexed", "index_location", "end", &loc);
    if (st == ZGPU_OK) {
        if (strcmp(loc, "end") == 0) s->at_end = 1;
        else if (strcmp(loc, "start") == 0) s->at_end = 0;
        else st = zg_error(ZGPU_ERR_BAD_METADATA,
                           "sharding_indexed: \"index_location\" must be \"start\" or \"end\", found \"%s\"", loc);
    }
    /* inner chain: the inner chunk, same dtype and fill value */
    if (st == ZGPU_OK) {
        const zj_value *codecs = zj_get(config, "codecs");
        if (!codecs || codecs->type != ZJ_ARRAY)
            st = zg_error(ZGPU_ERR_BAD_METADATA, "sharding_indexed: \"codecs\" must be a list");
        else {
            zg_repr inner = *decoded;
            for (int i = 0; i < nd; i++) inner.shape[i] = s->inner[i];
            st = zg_chain_create(codecs, &inner, &s->inner_chain);
            if (st != ZGPU_OK) zg_error_prefix("sharding_indexed: codecs: ");
        }
    }
    /* index chain: shape [cps..., 2], uint64, fill 2^64-1 */
    if (st == ZGPU_OK) {
        const zj_value *ic = zj_get(config, "index_codecs");
        zj_value *owned = NULL;
        if (!ic) ic = owned = default_index_codecs();
        zg_repr ir;
        memset(&ir, 0, sizeof ir);
        ir.ndim = nd + 1;
        for (int i = 0; i < nd; i++) ir.shape[i] = s->cps[i];
        ir.shape[nd] = 2;
        if (!ic) st = zg_error(ZGPU_ERR_NO_MEMORY, "sharding_indexed: out of memory");
        else if (ic->type != ZJ_ARRAY) st = zg_error(ZGPU_ERR_BAD_METADATA, "sharding_indexed: \"index_codecs\" must be a list");
        else if (!zg_dtype_from_name("uint64", &ir.dtype)) st = zg_error(ZGPU_ERR_INTERNAL, "sharding_indexed: no uint64 type");
        else {
            ir.fill_value = index_fill;
            st = zg_chain_create(ic, &ir, &s->index_chain);
            if (st != ZGPU_OK) zg_error_prefix("sharding_indexed: index_codecs: ");
        }
        zj_free(owned);
    }
    /* The index must have one size whatever its values: only size-preserving array->array codecs, the
     * bytes codec and crc32c (4 bytes each) may encode it. Its size is then known without encoding, so
     * hostile metadata cannot make create allocate a huge dummy index. */
    if (st == ZGPU_OK) {
        const zg_chain *ic = s->index_chain;
        for (int k = 0; k < ic->n_a2a && st == ZGPU_OK; k++)
            if (zg_repr_nbytes(&ic->a2a[k]->encoded) != zg_repr_nbytes(&ic->a2a[k]->decoded))
                st = zg_error(ZGPU_ERR_UNSUPPORTED, "sharding_indexed: index_codecs: '%s' changes the index size",
                              ic->a2a[k]->vt->name);
        if (st == ZGPU_OK && ic->a2b->vt != &zg_codec_bytes)
            st = zg_error(ZGPU_ERR_UNSUPPORTED, "sharding_indexed: index_codecs: the index must be serialised by "
                          "\"bytes\", found '%s'", ic->a2b->vt->name);
        for (int k = 0; k < ic->n_b2b && st == ZGPU_OK; k++)
            if (ic->b2b[k]->vt != &zg_codec_crc32c)
                st = zg_error(ZGPU_ERR_UNSUPPORTED,
                              "sharding_indexed: index_codecs: '%s' makes the index size vary; only crc32c may follow "
                              "the array->bytes codec", ic->b2b[k]->vt->name);
        s->index_nbytes = s->n_inner * 16 + 4 * (uint64_t)ic->n_b2b;
    }
    /* Self-check on small indexes: encoding an all-empty index gives exactly that size. */
    if (st == ZGPU_OK && s->n_inner <= 4096) {
        uint64_t *dummy = malloc((size_t)s->n_inner * 16 + 1);
        zg_buf enc = ZG_BUF_INIT;
        if (!dummy) st = zg_error(ZGPU_ERR_NO_MEMORY, "sharding_indexed: out of memory for the index");
        else {
            memset(dummy, 0xff, (size_t)s->n_inner * 16);
            st = encode_index(s, dummy, &enc);
            if (st == ZGPU_OK && enc.size != s->index_nbytes)
                st = zg_error(ZGPU_ERR_INTERNAL, "sharding_indexed: encoded index has %zu bytes, expected %llu",
                              enc.size, (unsigned long long)s->index_nbytes);
        }
        free(dummy);
        zg_buf_free(&enc);
    }
    if (st != ZGPU_OK) {
        shard_destroy(&s->base);
        return st;
    }
    *out = &s->base;
    return ZGPU_OK;
}

void zg_sharding_set_decode_cap(zg_codec *c, size_t bytes) {
    shard_codec *s = (shard_codec *)c;
    zg_chain_set_decode_cap(s->inner_chain, bytes);
    zg_chain_set_decode_cap(s->index_chain, bytes);
}

/* A shard holds its index and at most one encoded inner chunk per grid cell (empty ones are left out), so it
 * is never larger than the index plus n_inner times the inner chain's bound; never exact. */
static size_t shard_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    const shard_codec *s = (const shard_codec *)c;
    (void)decoded;
    *exact = 0;
    int inner_exact;
    size_t inner = zg_chain_encoded_size(s->inner_chain, &inner_exact);
    if (inner == SIZE_MAX || (s->n_inner && inner > (SIZE_MAX - 1) / s->n_inner)) return SIZE_MAX;
    return zg_size_add((size_t)s->n_inner * inner, (size_t)s->index_nbytes);
}

static zj_value *shard_to_json(const zg_codec *c) {
    const shard_codec *s = (const shard_codec *)c;
    zj_value *conf = zj_new_object(), *cs = zj_new_array();
    if (!conf || !cs) goto fail;
    for (int i = 0; i < s->ndim; i++)
        if (zj_append(cs, zj_new_uint(s->inner[i])) != ZGPU_OK) goto fail;
    if (zj_set(conf, "chunk_shape", cs) != ZGPU_OK) { cs = NULL; goto fail; }
    cs = NULL;
    zj_value *codecs = zg_chain_to_json(s->inner_chain);
    if (!codecs || zj_set(conf, "codecs", codecs) != ZGPU_OK) goto fail;
    zj_value *ic = zg_chain_to_json(s->index_chain);
    if (!ic || zj_set(conf, "index_codecs", ic) != ZGPU_OK) goto fail;
    if (zj_set(conf, "index_location", zj_new_string(s->at_end ? "end" : "start")) != ZGPU_OK) goto fail;
    return zg_codec_json("sharding_indexed", conf);
fail:
    zj_free(conf);
    zj_free(cs);
    return NULL;
}

zgpu_status zg_sharding_decode_index(const zg_codec *c, const uint8_t *index, size_t n, uint64_t shard_size,
                                     uint64_t *offsets, uint64_t *lengths) {
    const shard_codec *s = (const shard_codec *)c;
    ZG_RETURN_IF(!zg_is_sharding(c), ZGPU_ERR_INTERNAL, "sharding_indexed: not a sharding codec");
    if (s->fixed) {
        /* known before the read: checked against the object as it is now (a file cut short since it was opened) */
        for (uint64_t i = 0; i < s->n_inner; i++) {
            const uint64_t off = s->fixed[i], len = s->fixed[s->n_inner + i];
            if (off != ZG_SHARD_EMPTY && (off > shard_size || len > shard_size - off)) {
                char what[160];
                zg_sharding_describe_inner(c, "", i, what, sizeof what);
                return zg_error(ZGPU_ERR_CORRUPT_DATA, "%s: its %llu bytes at offset %llu lie past the end of the "
                                "%llu-byte file", what, (unsigned long long)len, (unsigned long long)off,
                                (unsigned long long)shard_size);
            }
            offsets[i] = off;
            lengths[i] = len;
        }
        return ZGPU_OK;
    }
    ZG_RETURN_IF(n != s->index_nbytes, ZGPU_ERR_CORRUPT_DATA, "sharding_indexed: shard index has %zu bytes, expected %llu",
                 n, (unsigned long long)s->index_nbytes);
    uint64_t *pairs = malloc((size_t)s->n_inner * 16 + 1);
    ZG_RETURN_IF(!pairs, ZGPU_ERR_NO_MEMORY, "sharding_indexed: out of memory for the index");
    zg_scratch scr = ZG_SCRATCH_INIT;
    zgpu_status st = zg_chain_decode(s->index_chain, index, n, (uint8_t *)pairs, &scr);
    zg_scratch_free(&scr);
    if (st != ZGPU_OK) {
        free(pairs);
        zg_error_prefix("sharding_indexed: shard index: ");
        return st;
    }
    for (uint64_t i = 0; i < s->n_inner; i++) {
        uint64_t off = pairs[2 * i], len = pairs[2 * i + 1];
        if (off == ZG_SHARD_EMPTY && len == ZG_SHARD_EMPTY) {
            offsets[i] = lengths[i] = ZG_SHARD_EMPTY;
            continue;
        }
        if (off > shard_size || len > shard_size - off) {
            free(pairs);
            return zg_error(ZGPU_ERR_CORRUPT_DATA,
                            "sharding_indexed: shard index entry %llu (offset %llu, nbytes %llu) lies outside the shard of %llu bytes",
                            (unsigned long long)i, (unsigned long long)off, (unsigned long long)len,
                            (unsigned long long)shard_size);
        }
        offsets[i] = off;
        lengths[i] = len;
    }
    free(pairs);
    return ZGPU_OK;
}

/* Copies inner chunk `i` between a contiguous chunk buffer and its box in the shard buffer (to_shard: src is
 * the chunk, dst the shard; else the reverse): rows of inner[nd-1] elements, odometer over the other axes. */
static void box_copy(const shard_codec *s, uint64_t i, const uint8_t *src, uint8_t *dst, int to_shard) {
    const int nd = s->ndim;
    const size_t es = s->base.decoded.dtype.size;
    const uint64_t *shape = s->base.decoded.shape;
    if (nd == 0) {
        memcpy(dst, src, es);
        return;
    }
    /* origin: grid coordinates of chunk i times the inner shape; and C strides of the shard */
    uint64_t stride[ZGPU_MAX_DIMS], origin = 0, rem = i;
    uint64_t st = 1;
    for (int k = nd - 1; k >= 0; k--) { stride[k] = st; st *= shape[k]; }
    for (int k = nd - 1; k >= 0; k--) {
        uint64_t g = rem % s->cps[k];
        rem /= s->cps[k];
        origin += g * s->inner[k] * stride[k];
    }
    const size_t row = (size_t)s->inner[nd - 1] * es;
    uint64_t n_rows = 1;
    for (int k = 0; k < nd - 1; k++) n_rows *= s->inner[k];
    uint64_t idx[ZGPU_MAX_DIMS] = {0};
    uint64_t pos = origin;
    for (uint64_t r = 0; r < n_rows; r++) {
        if (to_shard) memcpy(dst + pos * es, src + r * row, row);
        else memcpy(dst + r * row, src + pos * es, row);
        for (int k = nd - 2; k >= 0; k--) {
            pos += stride[k];
            if (++idx[k] < s->inner[k]) break;
            pos -= stride[k] * s->inner[k];
            idx[k] = 0;
        }
    }
}

/* Fills n elements with the fill value (zeros when the repr has none). */
static void fill_elems(uint8_t *dst, uint64_t n, const uint8_t *fill, size_t es) {
    size_t total = (size_t)n * es;
    int zero = 1;
    if (fill)
        for (size_t k = 0; k < es; k++) if (fill[k]) { zero = 0; break; }
    if (zero) { memset(dst, 0, total); return; }
    if (total == 0) return;
    memcpy(dst, fill, es);
    for (size_t done = es; done < total;) { /* doubling copies */
        size_t m = done < total - done ? done : total - done;
        memcpy(dst + done, dst, m);
        done += m;
    }
}

/* 1 if the inner chunks are whole contiguous slabs of the shard (inner[k] == shape[k] for k >= 1). */
static int inner_contiguous(const shard_codec *s) {
    for (int k = 1; k < s->ndim; k++) if (s->inner[k] != s->base.decoded.shape[k]) return 0;
    return 1;
}

static zgpu_status shard_decode(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out) {
    const shard_codec *s = (const shard_codec *)c;
    const zg_repr *ir = &s->inner_chain->repr;
    const size_t es = c->decoded.dtype.size;
    const uint64_t inner_count = zg_repr_count(ir);
    const size_t inner_nbytes = (size_t)inner_count * es;
    ZG_RETURN_IF(n < s->index_nbytes, ZGPU_ERR_CORRUPT_DATA,
                 "sharding_indexed: shard of %zu bytes is shorter than its %llu-byte index", n,
                 (unsigned long long)s->index_nbytes);
    const uint8_t *index = s->at_end ? in + (n - s->index_nbytes) : in;
    uint64_t *offs = malloc((size_t)s->n_inner * 2 * sizeof(uint64_t) + 1);
    ZG_RETURN_IF(!offs, ZGPU_ERR_NO_MEMORY, "sharding_indexed: out of memory");
    uint64_t *lens = offs + s->n_inner;
    zgpu_status st = zg_sharding_decode_index(c, index, (size_t)s->index_nbytes, n, offs, lens);
    const int contiguous = inner_contiguous(s);
    uint8_t *tmp = NULL;
    zg_scratch scr = ZG_SCRATCH_INIT;
    if (st == ZGPU_OK && !contiguous && !(tmp = malloc(inner_nbytes ? inner_nbytes : 1)))
        st = zg_error(ZGPU_ERR_NO_MEMORY, "sharding_indexed: out of memory");
    for (uint64_t i = 0; i < s->n_inner && st == ZGPU_OK; i++) {
        /* contiguous inner chunks decode straight into their place in the shard */
        uint8_t *dst = contiguous ? out + (size_t)i * inner_nbytes : tmp;
        if (offs[i] == ZG_SHARD_EMPTY) {
            fill_elems(dst, inner_count, ir->fill_value, es);
        } else {
            st = zg_chain_decode(s->inner_chain, in + offs[i], (size_t)lens[i], dst, &scr);
            if (st != ZGPU_OK) {
                zg_error_prefix("sharding_indexed: inner chunk %llu: ", (unsigned long long)i);
                break;
            }
        }
        if (!contiguous) box_copy(s, i, tmp, out, 1);
    }
    zg_scratch_free(&scr);
    free(tmp);
    free(offs);
    return st;
}

static int equals_fill(const uint8_t *p, uint64_t count, const uint8_t *fill, size_t es) {
    if (!fill) {
        for (size_t k = 0; k < (size_t)count * es; k++) if (p[k]) return 0;
        return 1;
    }
    if (count == 0) return 1;
    if (memcmp(p, fill, es) != 0) return 0;
    /* p[0] == fill: the rest equals fill iff the buffer equals itself shifted by one element */
    return memcmp(p, p + es, (size_t)(count - 1) * es) == 0;
}

static zgpu_status shard_encode(const zg_codec *c, const uint8_t *in, zg_buf *out) {
    const shard_codec *s = (const shard_codec *)c;
    const zg_repr *ir = &s->inner_chain->repr;
    const size_t es = c->decoded.dtype.size;
    const uint64_t inner_count = zg_repr_count(ir);
    const size_t inner_nbytes = (size_t)inner_count * es;
    const int contiguous = inner_contiguous(s);
    uint64_t *pairs = malloc((size_t)s->n_inner * 16 + 1);
    uint8_t *tmp = contiguous ? NULL : malloc(inner_nbytes ? inner_nbytes : 1);
    zg_buf data = ZG_BUF_INIT, enc = ZG_BUF_INIT, idx = ZG_BUF_INIT;
    zg_scratch scr = ZG_SCRATCH_INIT;
    zgpu_status st = ZGPU_OK;
    if (!pairs || (!contiguous && !tmp)) st = zg_error(ZGPU_ERR_NO_MEMORY, "sharding_indexed: out of memory");
    for (uint64_t i = 0; i < s->n_inner && st == ZGPU_OK; i++) {
        const uint8_t *chunk = in + (size_t)i * inner_nbytes;
        if (!contiguous) {
            box_copy(s, i, in, tmp, 0);
            chunk = tmp;
        }
        if (equals_fill(chunk, inner_count, ir->fill_value, es)) {
            pairs[2 * i] = pairs[2 * i + 1] = ZG_SHARD_EMPTY;
            continue;
        }
        enc.size = 0;
        st = zg_chain_encode(s->inner_chain, chunk, &enc, &scr);
        if (st != ZGPU_OK) {
            zg_error_prefix("sharding_indexed: inner chunk %llu: ", (unsigned long long)i);
            break;
        }
        pairs[2 * i] = data.size;
        pairs[2 * i + 1] = enc.size;
        st = zg_buf_append(&data, enc.data, enc.size);
    }
    if (st == ZGPU_OK && !s->at_end)
        for (uint64_t i = 0; i < s->n_inner; i++)
            if (pairs[2 * i] != ZG_SHARD_EMPTY) pairs[2 * i] += s->index_nbytes;
    if (st == ZGPU_OK) st = encode_index(s, pairs, &idx);
    if (st == ZGPU_OK && idx.size != s->index_nbytes)
        st = zg_error(ZGPU_ERR_INTERNAL, "sharding_indexed: encoded index has %zu bytes, expected %llu", idx.size,
                      (unsigned long long)s->index_nbytes);
    if (st == ZGPU_OK) {
        const zg_buf *first = s->at_end ? &data : &idx, *second = s->at_end ? &idx : &data;
        st = zg_buf_reserve(out, out->size + data.size + idx.size);
        if (st == ZGPU_OK && first->size) st = zg_buf_append(out, first->data, first->size);
        if (st == ZGPU_OK && second->size) st = zg_buf_append(out, second->data, second->size);
    }
    zg_scratch_free(&scr);
    zg_buf_free(&data);
    zg_buf_free(&enc);
    zg_buf_free(&idx);
    free(tmp);
    free(pairs);
    return st;
}

const zg_codec_vtable zg_codec_sharding = {
    .name = "sharding_indexed",
    .kind = ZG_ARRAY_TO_BYTES,
    .create = shard_create,
    .destroy = shard_destroy,
    .to_json = shard_to_json,
    .to_json_v2 = NULL,
    .decode_to_array = shard_decode,
    .encode_from_array = shard_encode,
    .encoded_size = shard_encoded_size,
};
