/* blosc codec (c-blosc 1.x format), in its two spellings:
 *   zg_codec_blosc            Zarr v3 "blosc": {"typesize", "cname", "clevel", "shuffle": "noshuffle"|..., "blocksize"}
 *   zg_codec_numcodecs_blosc  "numcodecs.blosc" / v2 id "blosc": {"cname", "clevel", "shuffle": -1..2, "blocksize"}
 * Both parse either shuffle spelling and share one implementation; only to_json differs.
 * Decode never depends on the configuration (the 16-byte blosc header says everything): the header is
 * validated against the input and the expected size first, then blosc_decompress_ctx (thread-safe, no
 * global state, one internal thread: our executor already runs one chunk per core) writes straight into
 * the destination. */
#include <blosc.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "common/status.h"
#include "gpucodec/blosc/blosc_parse.h"
#include "gpuencode/blosc_frame.h"

extern const zg_codec_vtable zg_codec_blosc;
extern const zg_codec_vtable zg_codec_numcodecs_blosc;

/* Largest header-declared size we allocate for when the caller gives no limit (direct callers only: a chain
 * always passes the chunk's size or bound). */
#define BLOSC_TRUST_MAX ((size_t)1 << 30)

typedef struct blosc_codec {
    zg_codec base;
    char cname[16];
    int clevel;
    int shuffle_cfg; /* as configured: -1 (numcodecs AUTOSHUFFLE), 0, 1, 2 */
    int shuffle;     /* resolved: BLOSC_NOSHUFFLE / BLOSC_SHUFFLE / BLOSC_BITSHUFFLE */
    int typesize;
    int64_t blocksize;
} blosc_codec;

static const char *const shuffle_names[3] = {"noshuffle", "shuffle", "bitshuffle"};
static const char *const known_cnames[] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};

/* blosc_list_compressors builds a static string without a lock: call it once. */
static char available[256];
static pthread_once_t available_once = PTHREAD_ONCE_INIT;
static void available_init(void) {
    const char *s = blosc_list_compressors();
    snprintf(available, sizeof available, ",%s,", s ? s : "");
}
static int cname_available(const char *name) {
    pthread_once(&available_once, available_init);
    char pat[24];
    snprintf(pat, sizeof pat, ",%s,", name);
    return strstr(available, pat) != NULL;
}

/* ---- config ---- */
static zgpu_status zb_parse(const zg_codec_vtable *vt, const zj_value *config, const zg_repr *decoded,
                               zg_codec **out) {
    const char *cn = vt->name;
    int v3 = vt == &zg_codec_blosc;
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "%s: configuration must be an object", cn);
    int dtype_size = decoded && decoded->dtype.size > 0 ? (int)decoded->dtype.size : 1;
    /* the members of zarr-python's BloscCodec and of numcodecs' Blosc (whose get_config leaves typesize out) */
    static const char *const keys[] = {"typesize", "cname", "clevel", "shuffle", "blocksize", NULL};
    ZG_FORWARD(zg_config_only(config, cn, v3 ? NULL : "blosc", keys));

    const char *cname;
    ZG_FORWARD(zg_config_str(config, cn, "cname", v3 ? "zstd" : "lz4", &cname));
    int known = 0;
    for (size_t i = 0; i < sizeof known_cnames / sizeof *known_cnames; i++) known |= strcmp(cname, known_cnames[i]) == 0;
    ZG_RETURN_IF(!known, ZGPU_ERR_BAD_METADATA,
                 "codec '%s': unknown cname \"%s\" (expected blosclz, lz4, lz4hc, snappy, zlib or zstd)", cn, cname);
    ZG_RETURN_IF(!cname_available(cname), ZGPU_ERR_UNSUPPORTED,
                 "codec '%s': cname \"%s\" is not built into this c-blosc (it has %s)", cn, cname,
                 blosc_list_compressors());

    int64_t clevel, typesize, blocksize;
    ZG_FORWARD(zg_config_int(config, cn, "clevel", 5, 0, 9, &clevel));
    /* typesize null: the item size (zarr-python's tunable typesize; numcodecs takes the buffer's) */
    ZG_FORWARD(zg_config_int_or_null(config, cn, "typesize", dtype_size, 1, INT_MAX, &typesize));
    ZG_FORWARD(zg_config_int(config, cn, "blocksize", 0, 0, BLOSC_MAX_BLOCKSIZE, &blocksize));

    /* shuffle: a name (v3) or a numcodecs integer; absent -> the writers' defaults (zarr-python: bitshuffle for
     * 1-byte items, else shuffle; numcodecs: shuffle). null only in v3, where it is zarr-python's tunable
     * shuffle (numcodecs keeps a None shuffle until it fails to encode with it). */
    int shuffle_cfg;
    const zj_value *sv = config ? zj_get(config, "shuffle") : NULL;
    if (!sv || (v3 && sv->type == ZJ_NULL)) {
        shuffle_cfg = v3 ? (typesize == 1 ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE) : BLOSC_SHUFFLE;
    } else if (sv->type == ZJ_STRING) {
        shuffle_cfg = -2;
        for (int i = 0; i < 3; i++)
            if (strcmp(sv->str, shuffle_names[i]) == 0) shuffle_cfg = i;
        ZG_RETURN_IF(shuffle_cfg == -2, ZGPU_ERR_BAD_METADATA,
                     "codec '%s': unknown shuffle \"%s\" (expected noshuffle, shuffle or bitshuffle)", cn, sv->str);
    } else {
        int64_t s;
        ZG_FORWARD(zg_config_int(config, cn, "shuffle", 1, -1, 2, &s));
        shuffle_cfg = (int)s;
    }
    blosc_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "%s: out of memory", cn);
    c->base.vt = vt;
    if (decoded) c->base.decoded = c->base.encoded = *decoded;
    snprintf(c->cname, sizeof c->cname, "%s", cname);
    c->clevel = (int)clevel;
    c->shuffle_cfg = shuffle_cfg;
    /* numcodecs AUTOSHUFFLE: bit-shuffle single bytes, byte-shuffle wider items. */
    c->shuffle = shuffle_cfg >= 0 ? shuffle_cfg : (typesize == 1 ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE);
    c->typesize = (int)typesize;
    c->blocksize = blocksize;
    *out = &c->base;
    return ZGPU_OK;
}

static zgpu_status zb_create_v3(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    return zb_parse(&zg_codec_blosc, config, decoded, out);
}
static zgpu_status zb_create_nc(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    return zb_parse(&zg_codec_numcodecs_blosc, config, decoded, out);
}

static void zb_destroy(zg_codec *c) { free(c); }

/* form: 0 = v3 {"typesize",...,"shuffle": name}, 1 = numcodecs configuration, 2 = v2 object with "id". */
static zj_value *zb_conf(const blosc_codec *c, int form) {
    zj_value *o = zj_new_object();
    if (!o) return NULL;
    int shuffle = form == 0 ? c->shuffle : c->shuffle_cfg;
    int ok = (form != 2 || zj_set(o, "id", zj_new_string("blosc")) == ZGPU_OK) &&
             (form != 0 || zj_set(o, "typesize", zj_new_int(c->typesize)) == ZGPU_OK) &&
             zj_set(o, "cname", zj_new_string(c->cname)) == ZGPU_OK &&
             zj_set(o, "clevel", zj_new_int(c->clevel)) == ZGPU_OK &&
             zj_set(o, "shuffle", form == 0 ? zj_new_string(shuffle_names[shuffle]) : zj_new_int(shuffle)) == ZGPU_OK &&
             zj_set(o, "blocksize", zj_new_int(c->blocksize)) == ZGPU_OK;
    if (!ok) {
        zj_free(o);
        return NULL;
    }
    return o;
}

static zj_value *zb_to_json(const zg_codec *cc) {
    const blosc_codec *c = (const blosc_codec *)cc;
    int v3 = cc->vt == &zg_codec_blosc;
    zj_value *conf = zb_conf(c, v3 ? 0 : 1);
    return conf ? zg_codec_json(cc->vt->name, conf) : NULL;
}

static zj_value *zb_to_json_v2(const zg_codec *c) { return zb_conf((const blosc_codec *)c, 2); }

/* ---- decode ---- */
static zgpu_status zb_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    const size_t expected = want.exact;
    ZG_RETURN_IF(n < BLOSC_MIN_HEADER_LENGTH, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: input of %zu bytes is shorter than the %d-byte header", n, BLOSC_MIN_HEADER_LENGTH);
    size_t nbytes = 0, cbytes = 0, blocksize = 0;
    blosc_cbuffer_sizes(in, &nbytes, &cbytes, &blocksize);
    ZG_RETURN_IF(cbytes == 0, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: unsupported header (format version %u, or not blosc data)", in[0]);
    ZG_RETURN_IF(cbytes != n, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: header says %zu compressed bytes but the chunk has %zu", cbytes, n);
    ZG_RETURN_IF(blosc_cbuffer_validate(in, n, &nbytes) != 0, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: invalid header (decoded size %zu, block size %zu, %zu compressed bytes)", nbytes, blocksize,
                 n);
    ZG_RETURN_IF(expected != SIZE_MAX && nbytes != expected, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: header size %zu does not match the expected %zu bytes", nbytes, expected);
    ZG_RETURN_IF(nbytes > want.limit, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: data decodes to more than the %zu bytes this chunk can hold (header size %zu)", want.limit,
                 nbytes);
    ZG_RETURN_IF(out->fixed && nbytes > out->cap, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: header size %zu is larger than the %zu-byte output buffer", nbytes, out->cap);
    ZG_RETURN_IF(want.limit == SIZE_MAX && !out->fixed && nbytes > BLOSC_TRUST_MAX, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: header claims %zu decoded bytes, more than the 1 GiB accepted without a known chunk size",
                 nbytes);
    out->size = 0;
    if (nbytes == 0) return ZGPU_OK;
    ZG_FORWARD(zg_buf_reserve(out, nbytes));
    int r = blosc_decompress_ctx(in, out->data, nbytes, 1);
    if (r <= 0 || (size_t)r != nbytes) {
        const char *lib = blosc_cbuffer_complib(in);
        return zg_error(ZGPU_ERR_CORRUPT_DATA, "blosc: corrupt data (internal codec %s, error %d, %zu of %zu bytes)",
                        lib ? lib : "unknown", r, r > 0 ? (size_t)r : 0, nbytes);
    }
    out->size = nbytes;
    return ZGPU_OK;
}

/* Part of a chunk: only the blocks that hold bytes [lo, hi) are decompressed (blosc_getitem). The header and the
 * streams of those blocks are checked first (zg_blosc_parse_header: the checks c-blosc makes before it decodes;
 * zg_blosc_check_blocks: each stream inside its block's stored span), so getitem reads only the header, the block
 * starts and the span zb_stored_span names: a reader may leave the rest of the chunk on disk. */
static zgpu_status zb_decode_range(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size, size_t lo,
                                   size_t hi) {
    zg_blosc_header h;
    ZG_FORWARD(zg_blosc_parse_header(in, n, size, &h));
    if (lo >= hi) return ZGPU_OK;
    if (h.memcpyed) { /* stored as is after the header (parse_header checked n == nbytes + 16) */
        memcpy(out + lo, in + ZG_BLOSC_HEADER + lo, hi - lo);
        return ZGPU_OK;
    }
    const size_t ts = h.typesize;
    if (size % ts) { /* getitem counts whole items: a chunk of a partial item decodes whole */
        zg_buf whole = zg_buf_wrap(out, size);
        return zb_decode(c, in, n, &whole, zg_out_exact(size));
    }
    uint32_t b0, b1;
    zg_blosc_blocks_of(&h, lo, hi, &b0, &b1);
    ZG_FORWARD(zg_blosc_check_blocks(in, n, &h, b0, b1));
    const size_t first = lo / ts, items = (hi + ts - 1) / ts - first;
    int r = blosc_getitem(in, (int)first, (int)items, out + first * ts);
    if (r < 0 || (size_t)r != items * ts) {
        const char *lib = blosc_cbuffer_complib(in);
        return zg_error(ZGPU_ERR_CORRUPT_DATA, "blosc: corrupt data (internal codec %s, error %d decoding bytes %zu-%zu)",
                        lib ? lib : "unknown", r, first * ts, (first + items) * ts);
    }
    return ZGPU_OK;
}

static int zb_stored_span(const zg_codec *c, const uint8_t *head, size_t head_n, size_t n, size_t size, size_t lo,
                          size_t hi, size_t *head_need, uint64_t *off, uint64_t *end) {
    (void)c;
    *head_need = ZG_BLOSC_HEADER;
    if (head_n < ZG_BLOSC_HEADER) return n >= ZG_BLOSC_HEADER;
    zg_blosc_header h;
    if (zg_blosc_parse_header(head, n, size, &h) != ZGPU_OK || lo >= hi || size % h.typesize) return 0;
    if (h.memcpyed) {
        *off = ZG_BLOSC_HEADER + lo;
        *end = ZG_BLOSC_HEADER + hi;
        return 1;
    }
    *head_need = ZG_BLOSC_HEADER + 4 * (size_t)h.nblocks; /* the block starts (parse_header: within n) */
    if (head_n < *head_need) return 1;
    uint32_t b0, b1;
    zg_blosc_blocks_of(&h, lo, hi, &b0, &b1);
    zg_blosc_blocks_span(head, n, &h, b0, b1, off, end);
    return 1;
}

/* blosc never writes more than the data plus its header (incompressible data is stored as is). */
static size_t zb_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    return zg_size_add(decoded, BLOSC_MAX_OVERHEAD);
}

/* ---- encode ---- */
static zgpu_status zb_encode(const zg_codec *cc, const uint8_t *in, size_t n, zg_buf *out) {
    const blosc_codec *c = (const blosc_codec *)cc;
    ZG_RETURN_IF(n > BLOSC_MAX_BUFFERSIZE, ZGPU_ERR_UNSUPPORTED, "blosc: chunk of %zu bytes exceeds blosc's limit of %d",
                 n, BLOSC_MAX_BUFFERSIZE);
    size_t cap = n + BLOSC_MAX_OVERHEAD;
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, cap));
    static const uint8_t empty = 0;
    int r = blosc_compress_ctx(c->clevel, c->shuffle, (size_t)c->typesize, n, n ? in : &empty, out->data, cap,
                               c->cname, (size_t)c->blocksize, 1);
    ZG_RETURN_IF(r <= 0, ZGPU_ERR_INTERNAL, "blosc: compression of %zu bytes with %s failed (%d)", n, c->cname, r);
    out->size = (size_t)r;
    return ZGPU_OK;
}

/* GPU: Blosc1 framing; its inner streams go to the GPU decoders of their compressor and its shuffled blocks
 * decode to one buffer and unshuffle into another (what each chunk uses is read from its header). */
static void zb_gpu_stage(const zg_codec *cc, zg_gpu_stage *out) {
    const blosc_codec *c = (const blosc_codec *)cc;
    out->kind = ZG_GPU_STAGE_COMPRESSOR;
    out->format = ZG_GPU_FORMAT_BLOSC;
    out->out_of_place = 1;
    /* the encoder: what zb_encode hands blosc_compress_ctx */
    out->level = c->clevel;
    out->blosc.compressor = zg_blosc_compressor_code(c->cname);
    out->blosc.shuffle = c->shuffle;
    out->blosc.typesize = c->typesize;
    out->blosc.blocksize = c->blocksize;
}

const zg_codec_vtable zg_codec_blosc = {
    .name = "blosc",
    .kind = ZG_BYTES_TO_BYTES,
    .create = zb_create_v3,
    .destroy = zb_destroy,
    .to_json = zb_to_json,
    .to_json_v2 = zb_to_json_v2,
    .decode_bytes = zb_decode,
    .decode_bytes_range = zb_decode_range,
    .stored_span = zb_stored_span,
    .encode_bytes = zb_encode,
    .encoded_size = zb_encoded_size,
    .gpu_stage = zb_gpu_stage,
};

const zg_codec_vtable zg_codec_numcodecs_blosc = {
    .name = "numcodecs.blosc",
    .kind = ZG_BYTES_TO_BYTES,
    .create = zb_create_nc,
    .destroy = zb_destroy,
    .to_json = zb_to_json,
    .to_json_v2 = zb_to_json_v2,
    .decode_bytes = zb_decode,
    .decode_bytes_range = zb_decode_range,
    .stored_span = zb_stored_span,
    .encode_bytes = zb_encode,
    .encoded_size = zb_encoded_size,
    .gpu_stage = zb_gpu_stage,
};
