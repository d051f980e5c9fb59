/* zstd codec (Zarr v3 "zstd", numcodecs "zstd"). Decode walks the frame headers first (cheap) to learn
 * the content size; when the output size is known (the exact size, sizes every frame records within the
 * limit, fixed caller memory, or else the limit itself) one ZSTD_decompressDCtx call decodes every frame
 * straight into the destination and fails past it, so neither a lying header nor a bomb makes us allocate
 * more than the chunk can hold. Only a caller that gives no limit at all gets the streaming decode. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* the buffer-less decode of zstd_decode_range (exported by libzstd 1.4 and later) */
#include <zstd.h>
#include <zstd_errors.h>

#include "codec/codec.h"
#include "codec/zstd_split.h"
#include "codec/zstd_window.h"
#include "common/status.h"
#include "common/tls.h"

extern const zg_codec_vtable zg_codec_zstd;

typedef struct zstd_codec {
    zg_codec base;
    int level;
    int checksum;
    /* The window segment this array's frames decode through (zstd_window.h): the smallest at first, the next after
     * a frame's matches reached past one, 0 once they reached past the largest (then decoded in order). */
    atomic_size_t window_segment;
} zstd_codec;

/* Largest header-declared size we trust for an up-front allocation when the caller gives no limit (direct
 * callers only: a chain always passes the chunk's size or bound). */
#define ZSTD_TRUST_MAX ((unsigned long long)1 << 30)

/* ---- per-thread contexts: no allocation per chunk ---- */
typedef struct zs_tls {
    ZSTD_DCtx *d;
    ZSTD_CCtx *c;
} zs_tls;

static _Thread_local void *tl_zs;

static void zs_tls_free(void *p) {
    zs_tls *t = p;
    ZSTD_freeDCtx(t->d);
    ZSTD_freeCCtx(t->c);
    free(t);
}

static zs_tls *zs_get_tls(void) { return zg_tls_get(&tl_zs, sizeof(zs_tls), zs_tls_free); }

/* ---- config ---- */
static zgpu_status zstd_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "zstd: configuration must be an object");
    static const char *const keys[] = {"level", "checksum", NULL};
    ZG_FORWARD(zg_config_only(config, "zstd", "zstd", keys));
    int64_t level;
    ZG_FORWARD(zg_config_int(config, "zstd", "level", 0, ZSTD_minCLevel(), ZSTD_maxCLevel(), &level));
    int checksum = 0;
    const zj_value *ck = config ? zj_get(config, "checksum") : NULL;
    if (ck && ck->type != ZJ_NULL) { /* null: numcodecs' Zstd(checksum=None), no checksum */
        ZG_RETURN_IF(ck->type != ZJ_BOOL, ZGPU_ERR_BAD_METADATA, "codec 'zstd': configuration \"checksum\" must be true or false");
        checksum = ck->boolean;
    }
    zstd_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "zstd: out of memory");
    c->base.vt = &zg_codec_zstd;
    if (decoded) c->base.decoded = c->base.encoded = *decoded;
    c->level = (int)level;
    c->checksum = checksum;
    atomic_init(&c->window_segment, ZG_ZSTD_WINDOW_SEGMENT_MIN);
    *out = &c->base;
    return ZGPU_OK;
}

static void zstd_destroy(zg_codec *c) { free(c); }

static zj_value *zstd_conf(const zstd_codec *c, int with_id) {
    zj_value *o = zj_new_object();
    if (!o) return NULL;
    if ((with_id && zj_set(o, "id", zj_new_string("zstd")) != ZGPU_OK) ||
        zj_set(o, "level", zj_new_int(c->level)) != ZGPU_OK ||
        zj_set(o, "checksum", zj_new_bool(c->checksum)) != ZGPU_OK) {
        zj_free(o);
        return NULL;
    }
    return o;
}

static zj_value *zstd_to_json(const zg_codec *c) {
    zj_value *conf = zstd_conf((const zstd_codec *)c, 0);
    return conf ? zg_codec_json("zstd", conf) : NULL;
}

static zj_value *zstd_to_json_v2(const zg_codec *c) { return zstd_conf((const zstd_codec *)c, 1); }

/* ---- decode ---- */

/* Walks the frames: *total = sum of declared content sizes, *all_known = 0 if any frame omits it. */
static zgpu_status zs_scan(const uint8_t *in, size_t n, unsigned long long *total, int *all_known) {
    size_t pos = 0;
    *total = 0;
    *all_known = 1;
    for (int frame = 0; pos < n; frame++) {
        size_t fsz = ZSTD_findFrameCompressedSize(in + pos, n - pos);
        ZG_RETURN_IF(ZSTD_isError(fsz), ZGPU_ERR_CORRUPT_DATA, "zstd: frame %d at byte %zu: %s", frame, pos,
                     ZSTD_getErrorName(fsz));
        unsigned long long cs = ZSTD_getFrameContentSize(in + pos, fsz);
        ZG_RETURN_IF(cs == ZSTD_CONTENTSIZE_ERROR, ZGPU_ERR_CORRUPT_DATA, "zstd: frame %d at byte %zu: bad frame header",
                     frame, pos);
        if (cs == ZSTD_CONTENTSIZE_UNKNOWN) *all_known = 0;
        else if (cs > ~0ULL - *total) *total = ~0ULL;
        else *total += cs;
        pos += fsz;
    }
    return ZGPU_OK;
}

/* Streaming decode for an output with no limit at all (direct callers only): grows out as data arrives. */
static zgpu_status zs_stream(ZSTD_DCtx *d, const uint8_t *in, size_t n, zg_buf *out, size_t first) {
    ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
    ZSTD_inBuffer ib = {in, n, 0};
    size_t want = first < 4096 ? 4096 : first;
    for (;;) {
        if (out->size == out->cap) {
            size_t grow = out->cap < want ? want : out->cap; /* double */
            ZG_RETURN_IF(grow > SIZE_MAX - out->size, ZGPU_ERR_NO_MEMORY, "zstd: output size overflow");
            ZG_FORWARD(zg_buf_reserve(out, out->size + grow));
        }
        ZSTD_outBuffer ob = {out->data, out->cap, out->size};
        size_t ret = ZSTD_decompressStream(d, &ob, &ib);
        ZG_RETURN_IF(ZSTD_isError(ret), ZGPU_ERR_CORRUPT_DATA, "zstd: %s (after %zu of %zu input bytes)",
                     ZSTD_getErrorName(ret), ib.pos, n);
        out->size = ob.pos;
        if (ib.pos == ib.size) {
            if (ret == 0) return ZGPU_OK;                /* last frame complete and flushed */
            ZG_RETURN_IF(ob.pos < ob.size, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated frame (input ends mid-frame)");
        }
    }
}

static zgpu_status zstd_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    ZG_RETURN_IF(n == 0, ZGPU_ERR_CORRUPT_DATA, "zstd: empty input (no frame)");
    const size_t expected = want.exact;
    unsigned long long total;
    int all_known;
    ZG_FORWARD(zs_scan(in, n, &total, &all_known));
    if (all_known && expected != SIZE_MAX && total != expected)
        return zg_error(ZGPU_ERR_CORRUPT_DATA, "zstd: frame content size %llu does not match the expected %zu bytes",
                        total, expected);
    if (all_known && want.limit != SIZE_MAX && total > want.limit)
        return zg_error(ZGPU_ERR_CORRUPT_DATA,
                        "zstd: data decodes to more than the %zu bytes this chunk can hold (frame content size %llu)",
                        want.limit, total);
    if (all_known && out->fixed && total > out->cap)
        return zg_error(ZGPU_ERR_CORRUPT_DATA, "zstd: frame content size %llu is larger than the %zu-byte output buffer",
                        total, out->cap);
    zs_tls *t = zs_get_tls();
    if (t && !t->d) t->d = ZSTD_createDCtx();
    ZG_RETURN_IF(!t || !t->d, ZGPU_ERR_NO_MEMORY, "zstd: out of memory allocating a decompression context");
    out->size = 0;

    /* One call straight into the destination: the exact size or fixed memory; else the frames' recorded sizes
     * (checked against the limit above; zstd verifies them while decoding); else the limit itself (sizes not
     * recorded: a one-shot decode needs no window buffer, which a frame may declare up to 128 MiB). */
    size_t limit = zg_out_limit(want, out);
    size_t room;
    if (expected != SIZE_MAX || out->fixed) room = limit;
    else if (all_known && (limit != SIZE_MAX || total <= ZSTD_TRUST_MAX)) room = (size_t)total;
    else if (limit != SIZE_MAX) room = limit;
    else /* no limit (direct callers only): stream, growing only as data arrives */
        return zs_stream(t->d, in, n, out, n < SIZE_MAX / 4 ? 4 * n : n);

    if (!out->fixed && room > 0) ZG_FORWARD(zg_buf_reserve(out, room));
    uint8_t dummy;
    size_t r = ZSTD_decompressDCtx(t->d, room ? out->data : &dummy, room, in, n);
    if (ZSTD_isError(r)) {
        if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
            return zg_error(ZGPU_ERR_CORRUPT_DATA, "zstd: data decodes to more than the %zu bytes this chunk can hold",
                            room);
        return zg_error(ZGPU_ERR_CORRUPT_DATA, "zstd: %s", ZSTD_getErrorName(r));
    }
    out->size = r;
    ZG_RETURN_IF(expected != SIZE_MAX && r != expected, ZGPU_ERR_CORRUPT_DATA,
                 "zstd: decoded %zu bytes, expected %zu", r, expected);
    return ZGPU_OK;
}

/* Part of a chunk: a zstd frame decodes in order, so the frame is decoded up to byte hi and no further (the rest
 * is never touched). Whole when the data has a content checksum (it covers the whole output) or several frames. */
static zgpu_status zstd_decode_range(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                     size_t lo, size_t hi) {
    zg_buf whole = zg_buf_wrap(out, size);
    ZG_RETURN_IF(n == 0, ZGPU_ERR_CORRUPT_DATA, "zstd: empty input (no frame)");
    size_t fsz = ZSTD_findFrameCompressedSize(in, n);
    ZG_RETURN_IF(ZSTD_isError(fsz), ZGPU_ERR_CORRUPT_DATA, "zstd: frame 0 at byte 0: %s", ZSTD_getErrorName(fsz));
    /* Frame_Header_Descriptor (the byte after the magic number): bit 2 is the content checksum flag */
    static const uint8_t magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    const int plain_frame = n > 4 && !memcmp(in, magic, 4); /* (not a skippable frame) */
    if (fsz != n || !plain_frame || (in[4] & 0x04)) return zstd_decode(c, in, n, &whole, zg_out_exact(size));
    unsigned long long cs = ZSTD_getFrameContentSize(in, n);
    ZG_RETURN_IF(cs == ZSTD_CONTENTSIZE_ERROR, ZGPU_ERR_CORRUPT_DATA, "zstd: frame 0 at byte 0: bad frame header");
    /* (a frame that does not record its size may declare a window far larger than the chunk: decoded whole, in
     * one call that needs no window buffer) */
    if (cs == ZSTD_CONTENTSIZE_UNKNOWN) return zstd_decode(c, in, n, &whole, zg_out_exact(size));
    ZG_RETURN_IF(cs != size, ZGPU_ERR_CORRUPT_DATA, "zstd: frame content size %llu does not match the expected %zu bytes",
                 cs, size);
    if (lo >= hi) return ZGPU_OK; /* (a frame decodes from its start: lo only says whether anything is needed) */
    zs_tls *t = zs_get_tls();
    if (t && !t->d) t->d = ZSTD_createDCtx();
    ZG_RETURN_IF(!t || !t->d, ZGPU_ERR_NO_MEMORY, "zstd: out of memory allocating a decompression context");
    /* Block by block straight into out (zstd's buffer-less API: each block's matches read the output before it),
     * stopping at the first block that ends at or past hi. The streaming API decodes into its own window buffer
     * and copies out, which cost what stopping short saved on a label chunk (2-core machine, half a 16 MiB label
     * chunk: streaming 3.0-4.0 ms, this 1.6-2.1, the whole chunk 5.1). */
    size_t r = ZSTD_decompressBegin(t->d);
    ZG_RETURN_IF(ZSTD_isError(r), ZGPU_ERR_INTERNAL, "zstd: %s", ZSTD_getErrorName(r));
    size_t ip = 0, op = 0;
    for (;;) {
        const size_t need = ZSTD_nextSrcSizeToDecompress(t->d);
        if (need == 0) break; /* the frame's end */
        if (op >= hi) return ZGPU_OK;
        ZG_RETURN_IF(need > n - ip, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated frame (input ends mid-frame)");
        r = ZSTD_decompressContinue(t->d, out + op, size - op, in + ip, need);
        if (ZSTD_isError(r)) {
            if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
                return zg_error(ZGPU_ERR_CORRUPT_DATA, "zstd: data decodes to more than the %zu bytes this chunk can hold",
                                size);
            return zg_error(ZGPU_ERR_CORRUPT_DATA, "zstd: %s (after %zu of %zu input bytes)", ZSTD_getErrorName(r), ip, n);
        }
        ip += need;
        op += r;
    }
    ZG_RETURN_IF(op != size, ZGPU_ERR_CORRUPT_DATA, "zstd: decoded %zu bytes, expected %zu", op, size);
    return ZGPU_OK;
}

static double zstd_split_speedup(const zg_codec *c, size_t decoded, double ratio, int ways) {
    (void)c;
    if (decoded < ZG_ZSTD_SPLIT_MIN) return 1;
    const double s = zg_zstd_split_speedup(ratio, ways);
    return s >= ZG_ZSTD_SPLIT_GAIN_MIN ? s : 1;
}

/* Part or all of a chunk with several threads (zstd_split.c) where the frame allows; else on this thread. */
static zgpu_status zstd_decode_split(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                    size_t lo, size_t hi, const zg_decode_par *par) {
    if (lo < hi && n && zstd_split_speedup(c, size, (double)size / (double)n, par ? par->ways : 1) > 1) {
        int declined = 1;
        ZG_FORWARD(zg_zstd_decode_split(in, n, out, size, hi, par, ZG_ZSTD_SPLIT_GAIN_MIN, &declined));
        if (!declined) return ZGPU_OK;
    }
    if (lo == 0 && hi == size) {
        zg_buf whole = zg_buf_wrap(out, size);
        return zstd_decode(c, in, n, &whole, zg_out_exact(size));
    }
    return zstd_decode_range(c, in, n, out, size, lo, hi);
}

/* Only the runs a read needs where the frame's matches are long or it is literals (zstd_split.h: label, OCT and field
 * chunks); else its prefix, through the window (zstd_window.h) unless a split is expected to gain, the runs copied out
 * as it goes (a frame read in part read whole first). */
static zgpu_status zstd_decode_runs(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                    const zg_byte_run *runs, size_t n_runs, const zg_decode_par *par,
                                    const zg_part_input *part) {
    if (!n_runs) return ZGPU_OK;
    int declined = 1;
    ZG_FORWARD(zg_zstd_decode_sparse(in, n, out, size, runs, n_runs, par, part, &declined));
    if (!declined) return ZGPU_OK;
    if (part) ZG_FORWARD(part->fetch(part->ctx, 0, n, part->buf));
    const size_t lo = (size_t)runs[0].off, hi = (size_t)(runs[n_runs - 1].off + runs[n_runs - 1].len);
    const int split = par && par->ways > 1 && n && zstd_split_speedup(c, size, (double)size / (double)n, par->ways) > 1;
    atomic_size_t *segment = &((zstd_codec *)c)->window_segment;
    size_t seg_now = atomic_load(segment);
    if (!split && hi >= ZG_ZSTD_WINDOW_MIN && seg_now) {
        zs_tls *t = zs_get_tls();
        if (t && !t->d) t->d = ZSTD_createDCtx();
        ZG_RETURN_IF(!t || !t->d, ZGPU_ERR_NO_MEMORY, "zstd: out of memory allocating a decompression context");
        ZG_FORWARD(zg_zstd_decode_windowed(t->d, in, n, out, size, runs, n_runs, seg_now, &declined));
        if (!declined) return ZGPU_OK;
    }
    ZG_FORWARD(split ? zstd_decode_split(c, in, n, out, size, lo, hi, par)
                     : zstd_decode_range(c, in, n, out, size, lo, hi));
    zg_runs_copy_out(out, runs, n_runs);
    /* decoded in order where libzstd refused the window: the frame's matches reach further back (it is sound) */
    if (declined == 2)
        atomic_compare_exchange_strong(segment, &seg_now,
                                       seg_now < ZG_ZSTD_WINDOW_SEGMENT_MAX ? seg_now * 4 : (size_t)0);
    return ZGPU_OK;
}

static double zstd_runs_cost(const zg_codec *c, size_t size, double ratio, uint64_t bytes, uint64_t lo, uint64_t hi,
                             int ways) {
    (void)c;
    return zg_zstd_sparse_cost(size, ratio, bytes, lo, hi, ways);
}

/* The library's bound of one frame (header and checksum included). */
static size_t zstd_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    size_t b = ZSTD_compressBound(decoded);
    return ZSTD_isError(b) ? SIZE_MAX : b;
}

/* ---- encode ---- */
static zgpu_status zstd_encode(const zg_codec *cc, const uint8_t *in, size_t n, zg_buf *out) {
    const zstd_codec *c = (const zstd_codec *)cc;
    zs_tls *t = zs_get_tls();
    if (t && !t->c) t->c = ZSTD_createCCtx();
    ZG_RETURN_IF(!t || !t->c, ZGPU_ERR_NO_MEMORY, "zstd: out of memory allocating a compression context");
    ZSTD_CCtx *cx = t->c;
    ZSTD_CCtx_reset(cx, ZSTD_reset_session_and_parameters);
    size_t e = ZSTD_CCtx_setParameter(cx, ZSTD_c_compressionLevel, c->level);
    if (!ZSTD_isError(e)) e = ZSTD_CCtx_setParameter(cx, ZSTD_c_checksumFlag, c->checksum);
    if (!ZSTD_isError(e)) e = ZSTD_CCtx_setParameter(cx, ZSTD_c_contentSizeFlag, 1);
    ZG_RETURN_IF(ZSTD_isError(e), ZGPU_ERR_INTERNAL, "zstd: setting level %d: %s", c->level, ZSTD_getErrorName(e));
    size_t bound = ZSTD_compressBound(n);
    ZG_RETURN_IF(ZSTD_isError(bound), ZGPU_ERR_UNSUPPORTED, "zstd: input of %zu bytes is too large", n);
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, bound));
    static const uint8_t empty = 0;
    size_t m = ZSTD_compress2(cx, out->data, bound, n ? in : &empty, n);
    ZG_RETURN_IF(ZSTD_isError(m), ZGPU_ERR_INTERNAL, "zstd: compression failed: %s", ZSTD_getErrorName(m));
    out->size = m;
    return ZGPU_OK;
}

/* GPU: one zstd frame a chunk, for zgpu's or nvCOMP's zstd decoder. */
static void zstd_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    const zstd_codec *z = (const zstd_codec *)c;
    out->kind = ZG_GPU_STAGE_COMPRESSOR;
    out->format = ZG_GPU_FORMAT_ZSTD;
    out->level = z->level;
    if (z->checksum) out->no_encode = "zstd: a content checksum (nvCOMP's frames carry none)";
}

const zg_codec_vtable zg_codec_zstd = {
    .name = "zstd",
    .kind = ZG_BYTES_TO_BYTES,
    .create = zstd_create,
    .destroy = zstd_destroy,
    .to_json = zstd_to_json,
    .to_json_v2 = zstd_to_json_v2,
    .decode_bytes = zstd_decode,
    .decode_bytes_range = zstd_decode_range,
    .decode_bytes_split = zstd_decode_split,
    .decode_bytes_runs = zstd_decode_runs,
    .runs_cost = zstd_runs_cost,
    .split_speedup = zstd_split_speedup,
    .encode_bytes = zstd_encode,
    .encoded_size = zstd_encoded_size,
    .gpu_stage = zstd_gpu_stage,
};
