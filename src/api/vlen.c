/* Reads and writes of variable-length arrays (data types string and variable_length_bytes): a box's elements as
 * offsets + bytes (include/zgpu.h, zgpu_array_read_vlen / zgpu_array_write_vlen). The fixed-element executors
 * never see these arrays (plan.c refuses them); this module walks the box's chunks one at a time, each through the
 * chain's bytes->bytes stages and the vlen codec's item table (codec/vlen.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api/array.h"
#include "cache/chunk_cache.h"
#include "codec/vlen.h"
#include "common/status.h"

/* A box and the chunks it touches. */
typedef struct vlen_box {
    int nd;
    uint64_t start[ZGPU_MAX_DIMS], count[ZGPU_MAX_DIMS];
    uint64_t box_stride[ZGPU_MAX_DIMS];   /* elements, C order */
    uint64_t chunk_stride[ZGPU_MAX_DIMS]; /* elements, C order */
    uint64_t chunk_elems;                 /* elements of one (whole) chunk */
    uint64_t n;                           /* elements of the box */
    uint64_t clo[ZGPU_MAX_DIMS], chi[ZGPU_MAX_DIMS]; /* the chunk grid range */
} vlen_box;

/* One stored chunk, decoded to its item table: item i is data[offs[i], +lens[i]), or the fill value when the chunk
 * is missing (found 0). */
typedef struct vlen_chunk {
    zg_buf io;
    zg_scratch sc;
    const uint8_t *data;
    uint64_t *offs;
    uint32_t *lens;
    int found;
} vlen_chunk;

static void chunk_free(vlen_chunk *c) {
    zg_buf_free(&c->io);
    zg_scratch_free(&c->sc);
    free(c->offs);
    free(c->lens);
}

static zgpu_status box_init(const zgpu_array *a, const uint64_t *start, const uint64_t *count, const char *fn,
                            vlen_box *b) {
    const zg_array_meta *m = &a->meta;
    if (!zg_dtype_is_vlen(&m->dtype))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, ZG_ARRAY_WHERE_FMT ": %s: data type %s has fixed-size elements "
                        "(use zgpu_array_read / zgpu_array_write)", a->path, fn, m->dtype.name);
    if (a->sharding)
        return zg_error(ZGPU_ERR_UNSUPPORTED, ZG_ARRAY_WHERE_FMT ": %s: sharded %s arrays are not supported yet",
                        a->path, fn, m->dtype.name);
    if (m->ndim > 0 && (!start || !count))
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, ZG_ARRAY_WHERE_FMT ": %s: start and count are required", a->path, fn);
    memset(b, 0, sizeof *b);
    b->nd = m->ndim;
    b->n = 1;
    b->chunk_elems = 1;
    for (int d = 0; d < b->nd; d++) {
        if (start[d] > m->shape[d] || count[d] > m->shape[d] - start[d])
            return zg_error(ZGPU_ERR_OUT_OF_RANGE, ZG_ARRAY_WHERE_FMT ": selection [%" PRIu64 ", %" PRIu64
                            ") on axis %d is outside the shape %" PRIu64, a->path, start[d], start[d] + count[d], d,
                            m->shape[d]);
        b->start[d] = start[d];
        b->count[d] = count[d];
        /* (the metadata parser made sure a chunk's and the array's element counts fit 64 bits) */
        b->n *= count[d];
        b->chunk_elems *= m->chunk_shape[d];
        b->clo[d] = start[d] / m->chunk_shape[d];
        b->chi[d] = count[d] ? (start[d] + count[d] - 1) / m->chunk_shape[d] + 1 : b->clo[d];
    }
    for (int d = b->nd - 1; d >= 0; d--) {
        b->box_stride[d] = d == b->nd - 1 ? 1 : b->box_stride[d + 1] * b->count[d + 1];
        b->chunk_stride[d] = d == b->nd - 1 ? 1 : b->chunk_stride[d + 1] * m->chunk_shape[d + 1];
    }
    if (b->chunk_elems > SIZE_MAX / sizeof(uint64_t) || b->n > SIZE_MAX / sizeof(uint64_t) - 1)
        return zg_error(ZGPU_ERR_NO_MEMORY, ZG_ARRAY_WHERE_FMT ": %s: too many elements", a->path, fn);
    return ZGPU_OK;
}

/* Fetches and decodes the chunk at key into c (missing: c->found = 0). Errors name the array and chunk. */
static zgpu_status chunk_load(zgpu_array *a, const char *key, const vlen_box *b, vlen_chunk *c) {
    zg_store *s = a->store;
    c->io.size = 0;
    c->found = 0;
    zgpu_status st = s->vt->get(s, key, &c->io, &c->found);
    if (st == ZGPU_OK && c->found) {
        const uint8_t *ser = NULL;
        size_t ser_n = 0;
        st = zg_chain_decode_serialized(a->chain, c->io.data, c->io.size, &ser, &ser_n, &c->sc);
        if (st == ZGPU_OK && !c->offs) {
            c->offs = malloc((size_t)(b->chunk_elems ? b->chunk_elems : 1) * sizeof *c->offs);
            c->lens = malloc((size_t)(b->chunk_elems ? b->chunk_elems : 1) * sizeof *c->lens);
            if (!c->offs || !c->lens) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for %" PRIu64 " items",
                                                    b->chunk_elems);
        }
        if (st == ZGPU_OK) st = zg_vlen_parse(a->chain->a2b, ser, ser_n, b->chunk_elems, c->offs, c->lens);
        c->data = ser;
    }
    if (st != ZGPU_OK) zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", a->path, key);
    return st;
}

/* Chunk g's part of the box: [lo, hi) per axis, in array coordinates. 0 when empty. */
static int chunk_part(const zgpu_array *a, const vlen_box *b, const uint64_t *g, uint64_t *lo, uint64_t *hi) {
    for (int d = 0; d < b->nd; d++) {
        uint64_t c0 = g[d] * a->meta.chunk_shape[d], c1 = c0 + a->meta.chunk_shape[d];
        lo[d] = b->start[d] > c0 ? b->start[d] : c0;
        hi[d] = b->start[d] + b->count[d] < c1 ? b->start[d] + b->count[d] : c1;
        if (lo[d] >= hi[d]) return 0;
    }
    return 1;
}

/* Odometer over [lo, hi); 0 when done. */
static int next_index(int nd, uint64_t *x, const uint64_t *lo, const uint64_t *hi) {
    for (int d = nd - 1; d >= 0; d--) {
        if (++x[d] < hi[d]) return 1;
        x[d] = lo[d];
    }
    return 0;
}

/* Calls visit(ctx, box index, chunk item index) for every element of the box in chunk g. */
#define FOR_EACH_ELEMENT(a, b, g, box_i, item_i, body)                                         \
    do {                                                                                        \
        uint64_t lo_[ZGPU_MAX_DIMS], hi_[ZGPU_MAX_DIMS], x_[ZGPU_MAX_DIMS];                     \
        if (chunk_part(a, b, g, lo_, hi_)) {                                                    \
            memcpy(x_, lo_, sizeof x_);                                                         \
            do {                                                                                \
                uint64_t box_i = 0, item_i = 0;                                                 \
                for (int d_ = 0; d_ < (b)->nd; d_++) {                                          \
                    box_i += (x_[d_] - (b)->start[d_]) * (b)->box_stride[d_];                   \
                    item_i += (x_[d_] - (g)[d_] * (a)->meta.chunk_shape[d_]) * (b)->chunk_stride[d_]; \
                }                                                                               \
                body                                                                            \
            } while (next_index((b)->nd, x_, lo_, hi_));                                        \
        }                                                                                       \
    } while (0)

ZGPU_API zgpu_status zgpu_array_read_vlen(zgpu_array *a, const uint64_t *start, const uint64_t *count,
                                          uint64_t **offsets, void **data, size_t *data_size) {
    if (!a || !offsets || !data || !data_size)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_read_vlen: array, offsets, data and data_size are required");
    *offsets = NULL;
    *data = NULL;
    *data_size = 0;
    vlen_box b;
    ZG_FORWARD(box_init(a, start, count, "zgpu_array_read_vlen", &b));
    /* gathered in chunk order, then put in the box's C order */
    uint64_t *goff = malloc((size_t)(b.n ? b.n : 1) * sizeof *goff), *offs = malloc((size_t)(b.n + 1) * sizeof *offs);
    uint32_t *glen = malloc((size_t)(b.n ? b.n : 1) * sizeof *glen);
    zg_buf gather = ZG_BUF_INIT;
    vlen_chunk c;
    memset(&c, 0, sizeof c);
    zgpu_status st = goff && offs && glen ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    uint64_t g[ZGPU_MAX_DIMS];
    memcpy(g, b.clo, sizeof g);
    const zg_array_meta *m = &a->meta;
    for (int more = b.n > 0; st == ZGPU_OK && more; more = next_index(b.nd, g, b.clo, b.chi)) {
        char key[1024];
        zg_meta_chunk_key(m, g, key, sizeof key);
        st = chunk_load(a, key, &b, &c);
        FOR_EACH_ELEMENT(a, &b, g, bi, ii, {
            if (st != ZGPU_OK) break;
            const uint8_t *p = c.found ? c.data + c.offs[ii] : m->vlen_fill;
            uint32_t len = c.found ? c.lens[ii] : (uint32_t)m->vlen_fill_len;
            goff[bi] = gather.size;
            glen[bi] = len;
            if (len) st = zg_buf_append(&gather, p, len);
        });
    }
    uint8_t *out = NULL;
    if (st == ZGPU_OK) {
        offs[0] = 0;
        for (uint64_t i = 0; i < b.n; i++) offs[i + 1] = offs[i] + glen[i];
        out = malloc(gather.size ? gather.size : 1);
        if (!out) st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory for %zu bytes", gather.size);
        for (uint64_t i = 0; st == ZGPU_OK && i < b.n; i++)
            if (glen[i]) memcpy(out + offs[i], gather.data + goff[i], glen[i]);
    }
    chunk_free(&c);
    zg_buf_free(&gather);
    free(goff);
    free(glen);
    if (st != ZGPU_OK) {
        free(offs);
        free(out);
        return st;
    }
    *offsets = offs;
    *data = out;
    *data_size = (size_t)offs[b.n];
    return ZGPU_OK;
}

/* Whether the box covers every in-bounds element of chunk g (no old value to merge). */
static int covers_chunk(const zgpu_array *a, const vlen_box *b, const uint64_t *g) {
    for (int d = 0; d < b->nd; d++) {
        uint64_t c0 = g[d] * a->meta.chunk_shape[d], inb = a->meta.shape[d] - c0;
        if (inb > a->meta.chunk_shape[d]) inb = a->meta.chunk_shape[d];
        if (b->start[d] > c0 || b->start[d] + b->count[d] < c0 + inb) return 0;
    }
    return 1;
}

/* Chunk g: its old items (or the fill value), the box's elements over them, then encoded and stored, or deleted
 * when every item equals the fill value. Under the store's write lock of the chunk, as the fixed-size writes. */
static zgpu_status write_chunk(zgpu_array *a, const vlen_box *b, const uint64_t *g, const uint64_t *offsets,
                               const uint8_t *data, vlen_chunk *c, const uint8_t **ptrs, uint32_t *lens, zg_buf *ser,
                               zg_buf *enc) {
    const zg_array_meta *m = &a->meta;
    zg_store *s = a->store;
    char key[1024];
    zg_meta_chunk_key(m, g, key, sizeof key);
    zg_store_lock lk;
    ZG_FORWARD(s->vt->lock(s, key, &lk));
    zgpu_status st = ZGPU_OK;
    c->found = 0;
    if (!covers_chunk(a, b, g)) {
        st = chunk_load(a, key, b, c);
        if (st != ZGPU_OK) zg_error_prefix("(reading it to merge a partial write) ");
    }
    if (st == ZGPU_OK) {
        for (uint64_t i = 0; i < b->chunk_elems; i++) {
            ptrs[i] = c->found ? c->data + c->offs[i] : m->vlen_fill;
            lens[i] = c->found ? c->lens[i] : (uint32_t)m->vlen_fill_len;
        }
        FOR_EACH_ELEMENT(a, b, g, bi, ii, {
            ptrs[ii] = data + offsets[bi];
            lens[ii] = (uint32_t)(offsets[bi + 1] - offsets[bi]);
        });
        int all_fill = 1;
        for (uint64_t i = 0; all_fill && i < b->chunk_elems; i++)
            all_fill = lens[i] == m->vlen_fill_len && (!lens[i] || !memcmp(ptrs[i], m->vlen_fill, lens[i]));
        if (all_fill) {
            st = s->vt->erase(s, key);
        } else {
            ser->size = 0;
            st = zg_vlen_encode(a->chain->a2b, b->chunk_elems, ptrs, lens, ser);
            if (st == ZGPU_OK) st = zg_chain_encode_serialized(a->chain, ser->data, ser->size, enc, &c->sc);
            if (st == ZGPU_OK) st = s->vt->set(s, key, enc->data, enc->size);
        }
        zg_chunk_cache_invalidate_object_all(s->id, key);
    }
    s->vt->unlock(s, &lk);
    if (st != ZGPU_OK && !strstr(zg_error_message(), key))
        zg_error_prefix(ZG_ARRAY_WHERE_FMT ", chunk '%s': ", a->path, key);
    return st;
}

ZGPU_API zgpu_status zgpu_array_write_vlen(zgpu_array *a, const uint64_t *start, const uint64_t *count,
                                           const uint64_t *offsets, const void *data) {
    if (!a || !offsets)
        return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_write_vlen: array and offsets are required");
    ZG_FORWARD(zg_array_check_writable(a, "zgpu_array_write_vlen"));
    vlen_box b;
    ZG_FORWARD(box_init(a, start, count, "zgpu_array_write_vlen", &b));
    const uint8_t *bytes = data;
    for (uint64_t i = 0; i < b.n; i++) {
        if (offsets[i + 1] < offsets[i] || offsets[i + 1] - offsets[i] > UINT32_MAX)
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, ZG_ARRAY_WHERE_FMT ": zgpu_array_write_vlen: offsets[%" PRIu64
                            "..%" PRIu64 "] do not give an element of 0 to 2^32 - 1 bytes", a->path, i, i + 1);
        if (offsets[i + 1] > offsets[i] && !bytes)
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, "zgpu_array_write_vlen: data is NULL");
        if (a->meta.dtype.kind == ZG_KIND_STRING && !zg_utf8_valid(bytes + offsets[i], offsets[i + 1] - offsets[i]))
            return zg_error(ZGPU_ERR_INVALID_ARGUMENT, ZG_ARRAY_WHERE_FMT ": zgpu_array_write_vlen: element %" PRIu64
                            " of the box is not valid UTF-8", a->path, i);
    }
    if (b.n == 0) return ZGPU_OK;
    const uint8_t **ptrs = malloc((size_t)b.chunk_elems * sizeof *ptrs);
    uint32_t *lens = malloc((size_t)b.chunk_elems * sizeof *lens);
    zg_buf ser = ZG_BUF_INIT, enc = ZG_BUF_INIT;
    vlen_chunk c;
    memset(&c, 0, sizeof c);
    zgpu_status st = ptrs && lens ? ZGPU_OK : zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    uint64_t g[ZGPU_MAX_DIMS];
    memcpy(g, b.clo, sizeof g);
    for (int more = 1; st == ZGPU_OK && more; more = next_index(b.nd, g, b.clo, b.chi))
        st = write_chunk(a, &b, g, offsets, bytes, &c, ptrs, lens, &ser, &enc);
    chunk_free(&c);
    zg_buf_free(&ser);
    zg_buf_free(&enc);
    free(ptrs);
    free(lens);
    return st;
}

ZGPU_API const void *zgpu_array_vlen_fill_value(const zgpu_array *a, size_t *nbytes) {
    if (nbytes) *nbytes = a && zg_dtype_is_vlen(&a->meta.dtype) ? a->meta.vlen_fill_len : 0;
    return a && a->meta.vlen_fill ? a->meta.vlen_fill : (const void *)"";
}
