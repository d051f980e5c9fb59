/* The codec model of Zarr v3, which v2 arrays are mapped onto (see meta/metadata.h):
 *   array->array (transpose, delta, fixedscaleoffset), array->bytes (bytes, sharding_indexed),
 *   bytes->bytes (blosc, gzip, zstd, crc32c, zlib, bz2, lz4, shuffle).
 * Each codec file defines one const zg_codec_vtable and registers it in codec/registry.c. */
#ifndef ZG_CODEC_H
#define ZG_CODEC_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "zgpu.h"
#include "meta/dtype.h"
#include "common/buf.h"
#include "common/json.h"

#define ZG_MAX_CODECS 16

typedef enum zg_codec_kind { ZG_ARRAY_TO_ARRAY, ZG_ARRAY_TO_BYTES, ZG_BYTES_TO_BYTES } zg_codec_kind;

/* An in-memory chunk as it flows between codecs: C-contiguous, native-endian elements. */
typedef struct zg_repr {
    int ndim;
    uint64_t shape[ZGPU_MAX_DIMS];
    zg_dtype dtype;
    const uint8_t *fill_value; /* dtype.size bytes; owned by whoever owns the chain */
} zg_repr;

static inline uint64_t zg_repr_count(const zg_repr *r) {
    uint64_t n = 1;
    for (int i = 0; i < r->ndim; i++) n *= r->shape[i];
    return n;
}
static inline uint64_t zg_repr_nbytes(const zg_repr *r) { return zg_repr_count(r) * r->dtype.size; }

typedef struct zg_codec zg_codec;

struct zg_pool;
/* Threads a decode may spread one chunk over (a host read of fewer chunks than threads): jobs of up to `ways`
 * indices on `pool`, started from one of the pool's own tasks (the pool nests: the calling thread works on its
 * job too). */
typedef struct zg_decode_par {
    struct zg_pool *pool;
    int ways;
} zg_decode_par;

/* A stored chunk of a local file read in part (decode_bytes_runs): buf[0, n) holds nothing until fetch(ctx, off,
 * len) has filled buf[off, off + len) from the file. A codec that can say which stored bytes its runs need reads
 * those (zstd: each block's headers and sequences, then the literals of the blocks the runs read); one that cannot
 * fetches all of it first. */
typedef struct zg_part_input {
    uint8_t *buf;
    zgpu_status (*fetch)(void *ctx, uint64_t off, uint64_t len, uint8_t *dst);
    void *ctx;
} zg_part_input;

/* Bytes [off, off + len) of a decoded chunk: one of the rows of a box a read needs (decode_bytes_runs), written at
 * dst (the row's place in the read's destination) or, where dst is NULL, at the same offset of the decoded chunk. */
typedef struct zg_byte_run {
    uint64_t off, len;
    uint8_t *dst;
} zg_byte_run;

/** Runs with a dst copied there from a chunk decoded in order (out: its bytes [0, the last run's end)). */
static inline void zg_runs_copy_out(const uint8_t *out, const zg_byte_run *runs, size_t n_runs) {
    for (size_t r = 0; r < n_runs; r++)
        if (runs[r].dst) memcpy(runs[r].dst, out + runs[r].off, (size_t)runs[r].len);
}

/* What a bytes->bytes decode must produce. The chain derives both from the chunk's shape and the codecs
 * before it (see zg_codec_vtable.encoded_size), so no decode grows past what the chunk can hold
 * (decompression bombs):
 *   exact  the exact decoded size, or SIZE_MAX when only a limit is known;
 *   limit  the most the decode may produce (== exact when exact is known): a compressor's bound, or the
 *          context's cap where no bound is known. SIZE_MAX: no limit (direct callers only; a chain always
 *          passes one).
 * A codec stops as soon as its output would pass the limit (ZGPU_ERR_CORRUPT_DATA, "<codec>: data decodes
 * to more than the N bytes this chunk can hold") and allocates at most the limit. */
typedef struct zg_out_size {
    size_t exact;
    size_t limit;
} zg_out_size;

static inline zg_out_size zg_out_exact(size_t n) { return (zg_out_size){n, n}; }
static inline zg_out_size zg_out_upto(size_t limit) { return (zg_out_size){SIZE_MAX, limit}; }
/* No size known and no limit (tests, fuzzers; a chain never passes this). */
#define ZG_OUT_ANY ((zg_out_size){SIZE_MAX, SIZE_MAX})

/* ---- The optional GPU entry: what a codec is on the device path, with parameters parsed at create ----
 * The device driver (src/device/route.c) reads the entries of an array's chain once and builds its pipe from
 * them; it never looks at codec names or configurations. A codec without an entry (or whose entry says
 * ZG_GPU_STAGE_NONE for its configuration) has no GPU path: its chains decode on host threads. */
typedef enum zg_gpu_stage_kind {
    ZG_GPU_STAGE_NONE = 0,   /* no GPU path in this configuration (`why` may say why) */
    ZG_GPU_STAGE_IDENTITY,   /* array->bytes codec that leaves the bytes as they are */
    ZG_GPU_STAGE_COMPRESSOR, /* bytes->bytes: decoded by the GPU decoders of `format` (src/gpucodec/registry_gpu.c) */
    ZG_GPU_STAGE_POST,       /* one batched kernel over the decoded bytes: `post` with `param` */
    ZG_GPU_STAGE_TRANSPOSE,  /* array->array permutation `order`, folded into the scatter's strides */
} zg_gpu_stage_kind;

/* Stored formats of compressors, each taken by one or more GPU decoders. */
typedef enum zg_gpu_format {
    ZG_GPU_FORMAT_NONE = 0,
    ZG_GPU_FORMAT_ZSTD,          /* one zstd frame */
    ZG_GPU_FORMAT_GZIP,          /* a gzip member: DEFLATE with a CRC32 */
    ZG_GPU_FORMAT_ZLIB,          /* a zlib stream: DEFLATE with an Adler-32 */
    ZG_GPU_FORMAT_LZ4_NUMCODECS, /* numcodecs' LZ4: a u32le size, then one LZ4 block */
    ZG_GPU_FORMAT_BLOSC,         /* a Blosc1 chunk: streams of its inner compressor, then its unshuffle */
    ZG_GPU_FORMAT_TIFF_LZW,      /* a TIFF tile or strip compressed with LZW (MSB-first, libtiff's "new style") */
    ZG_GPU_FORMAT_PACKBITS,      /* a TIFF tile or strip compressed with PackBits */
    ZG_GPU_FORMAT_N
} zg_gpu_format;

/* Post stages, each one of src/gpucodec/post's kernels. */
typedef enum zg_gpu_post {
    ZG_GPU_POST_CRC32C = 1, /* verify and strip a trailing CRC32C (outermost ones are checked on the host) */
    ZG_GPU_POST_SHUFFLE,    /* byte unshuffle; param: element size */
    ZG_GPU_POST_BYTESWAP,   /* reverse the bytes of each word; param: word size 2, 4, 8 or 16 */
    ZG_GPU_POST_DELTA,      /* integer prefix sum (wrapping); param: element size */
    ZG_GPU_POST_ROW_DELTA,  /* in each row of `row` elements of `param` (1, 2, 4, 8) bytes, a wrapping prefix sum
                             * of every `stride`-th element (TIFF's horizontal predictor, 2) */
    ZG_GPU_POST_ROW_FLOAT,  /* in each row of `row` elements of `param` (2, 4, 8) bytes, a byte prefix sum of every
                             * `stride`-th byte, then the row's byte planes (most significant first) gathered into
                             * elements in native order (TIFF's floating-point predictor, 3); out of place */
} zg_gpu_post;

typedef struct zg_gpu_stage {
    zg_gpu_stage_kind kind;
    zg_gpu_format format;         /* COMPRESSOR */
    int out_of_place;             /* COMPRESSOR: its decode needs a second buffer (blosc: blocks, then unshuffle) */
    zg_gpu_post post;             /* POST */
    int param;                    /* POST */
    int row, stride;              /* POST ROW_*: elements a row (a tile's or strip's width times its samples), and
                                   * the distance of the differences in elements (samples a pixel) */
    int order[ZGPU_MAX_DIMS];     /* TRANSPOSE: encoded axis i is decoded axis order[i] */
    const char *why;              /* NONE: why not, or NULL */
    int level;                    /* COMPRESSOR: the configured level, for the GPU encoder (src/device/write_device.c) */
    struct {                      /* COMPRESSOR blosc: its resolved configuration, for the GPU encoder */
        int compressor;           /* c-blosc's compressor code (gpuencode/blosc_frame.h's zg_blosc_compressor) */
        int shuffle;              /* 0 none, 1 byte, 2 bit */
        int typesize;
        int64_t blocksize;        /* 0: c-blosc's choice */
    } blosc;
    const char *no_encode;        /* COMPRESSOR: why the GPU encoder cannot write this configuration, or NULL */
} zg_gpu_stage;

typedef struct zg_codec_vtable {
    const char *name;      /* the Zarr v3 name written to metadata, e.g. "zstd", "numcodecs.zlib" */
    zg_codec_kind kind;
    /* Parses `config` (the "configuration" object; NULL when absent; v2 filter/compressor objects arrive as
     * "numcodecs.<id>" configurations, the object without its "id"), refuses members it does not know
     * (zg_config_only), checks it against `decoded` (the representation on
     * the array side of this codec; for bytes->bytes codecs the repr at the array->bytes boundary, which
     * gives e.g. blosc its default typesize) and returns a codec whose base.decoded/base.encoded are set.
     * Errors (bad config) are ZGPU_ERR_BAD_METADATA; valid but unimplemented options ZGPU_ERR_UNSUPPORTED. */
    zgpu_status (*create)(const zj_value *config, const zg_repr *decoded, zg_codec **out);
    void (*destroy)(zg_codec *c);
    /* {"name": ..., "configuration": {...}} as zarr-python writes it for v3; NULL on allocation failure. */
    zj_value *(*to_json)(const zg_codec *c);
    /* For v2 metadata: the numcodecs object {"id": ..., ...}; NULL if this codec has no v2 form. */
    zj_value *(*to_json_v2)(const zg_codec *c);

    /* bytes->bytes. decode: `want` says the exact decoded size when the caller knows it, else the most the
     * output may hold (zg_out_size); a codec whose format records the size checks it against both before it
     * allocates, and every codec fails as soon as its output would pass the limit. Output goes to out
     * (out->size set); out may be fixed caller memory (then never exceed out->cap). */
    zgpu_status (*decode_bytes)(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want);
    /* Optional, bytes->bytes: decodes only what bytes [lo, hi) of the decoded data need (a read that needs part
     * of a chunk), into out, which holds `size` bytes (the exact decoded size: the chain knows it). On success
     * out[lo, hi) hold the decoded bytes and the rest of out is unspecified. The input is checked as decode_bytes
     * checks it, as far as it is read; a format whose checksum covers the whole output (a zstd content
     * checksum) is decoded whole, so a read never skips a checksum the data carries. */
    zgpu_status (*decode_bytes_range)(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                      size_t lo, size_t hi);
    /* Optional, with decode_bytes_range: the stored bytes that decoding [lo, hi) of a `size`-byte chunk reads, so
     * that a reader leaves the rest on disk. `head` holds the first head_n of the chunk's n stored bytes. Returns
     * 1 and sets *head_need: with *head_need > head_n, read that many bytes from the start and ask again; else
     * decode_bytes_range reads only the first *head_need bytes and [*off, *end), and the rest of its input may be
     * anything. Returns 0 when the whole chunk is needed (or the head is not what the codec can read: the decode
     * then says what is wrong). */
    int (*stored_span)(const zg_codec *c, const uint8_t *head, size_t head_n, size_t n, size_t size, size_t lo,
                       size_t hi, size_t *head_need, uint64_t *off, uint64_t *end);
    /* Optional, with decode_bytes_range: the same decode (the whole of it when [lo, hi) is [0, size)) with the
     * work of the one chunk spread over par->ways threads where the data allows; else on this thread. */
    zgpu_status (*decode_bytes_split)(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                      size_t lo, size_t hi, const zg_decode_par *par);
    /* Optional, with decode_bytes_range: only the byte runs `runs` (ascending, within [0, size)) of the decoded data,
     * each written at its dst or its place in out (which holds `size` bytes; the rest unspecified), where the format
     * can produce them without what lies between (zstd frames of long matches or of literals: codec/zstd_split.h);
     * else as decode_bytes_split (par given) or decode_bytes_range from the first run's start to the last one's end
     * into out, then the runs with a dst copied there (zg_runs_copy_out). Checked as those. With `part`
     * (in == part->buf), the stored bytes are read as the decode needs them (zg_part_input). */
    zgpu_status (*decode_bytes_runs)(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out, size_t size,
                                     const zg_byte_run *runs, size_t n_runs, const zg_decode_par *par,
                                     const zg_part_input *part);
    /* With decode_bytes_runs: what decoding runs of `bytes` bytes in all, the first starting at byte lo and the last
     * ending at byte hi, of a chunk of `size` bytes compressed `ratio`:1 is expected to cost with `ways` threads, in
     * bytes of an in-order decode of the same frame on one thread (hi where the runs would be decoded in order); for
     * the route model. */
    double (*runs_cost)(const zg_codec *c, size_t size, double ratio, uint64_t bytes, uint64_t lo, uint64_t hi,
                        int ways);
    /* With decode_bytes_split: how much faster than one thread it is expected to decode a chunk of `decoded` bytes
     * compressed `ratio`:1 with `ways` threads (1: it would decode on one thread); for the route model. */
    double (*split_speedup)(const zg_codec *c, size_t decoded, double ratio, int ways);
    zgpu_status (*encode_bytes)(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out);
    /* Optional, bytes->bytes and array->bytes: the size of the encoded form of `decoded` bytes (for
     * array->bytes, `decoded` is nbytes of c->decoded). Leaves *exact alone when the encoded size is a function
     * of the decoded size (shuffle: the same; crc32c: + 4; bytes), sets it to 0 when the result is only an upper
     * bound (compressors: the library's bound or the format's worst case). `decoded` itself may be a bound
     * (then *exact is already 0), so the result must be monotone in it. SIZE_MAX: no bound (or overflow).
     * A codec without the entry has no bound: stages it feeds are limited by the context's cap. */
    size_t (*encoded_size)(const zg_codec *c, size_t decoded, int *exact);

    /* array->array: in holds nbytes(encoded), out nbytes(decoded) (and vice versa for encode). No aliasing. */
    zgpu_status (*decode_array)(const zg_codec *c, const uint8_t *in, uint8_t *out);
    zgpu_status (*encode_array)(const zg_codec *c, const uint8_t *in, uint8_t *out);

    /* array->bytes: decode n stored bytes into nbytes(decoded) at out; encode appends to out. */
    zgpu_status (*decode_to_array)(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out);
    zgpu_status (*encode_from_array)(const zg_codec *c, const uint8_t *in, zg_buf *out);

    /* Optional: what the codec is on the GPU path (see zg_gpu_stage), from its parsed configuration; no
     * allocation, no JSON. NULL: no GPU path. */
    void (*gpu_stage)(const zg_codec *c, zg_gpu_stage *out);
} zg_codec_vtable;

/* Every codec struct starts with this. */
struct zg_codec {
    const zg_codec_vtable *vt;
    zg_repr decoded; /* array side */
    zg_repr encoded; /* storage side (for bytes->bytes and array->bytes: same as decoded) */
};

/** The codec's GPU entry (kind ZG_GPU_STAGE_NONE where it has none). */
static inline zg_gpu_stage zg_codec_gpu_stage(const zg_codec *c) {
    zg_gpu_stage g;
    memset(&g, 0, sizeof g); /* ZG_GPU_STAGE_NONE */
    if (c && c->vt->gpu_stage) c->vt->gpu_stage(c, &g);
    return g;
}
/** Finds a codec by v3 name ("zstd", "numcodecs.zlib", ...; v2 metadata is mapped onto these names). NULL if unknown. */
const zg_codec_vtable *zg_codec_find(const char *name);

/* Helpers shared by codec implementations. */
/** The most a decode into `out` may write: want's exact size or limit, and never past fixed memory. */
static inline size_t zg_out_limit(zg_out_size want, const zg_buf *out) {
    size_t limit = want.exact != SIZE_MAX ? want.exact : want.limit;
    return out->fixed && out->cap < limit ? out->cap : limit;
}
/** a + b, or SIZE_MAX on overflow (for encoded_size). */
static inline size_t zg_size_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
/** Refuses every member of `config` not named in `allowed` (a NULL-terminated list): ZGPU_ERR_BAD_METADATA
 *  "codec '<codec>': unknown configuration member \"<key>\" (known: ...)". zarr-python and numcodecs pass a
 *  configuration to the codec's constructor as keyword arguments, so they refuse unknown members too; a member
 *  skipped here could be an option (of a newer writer) that changes what the stored bytes mean. `nc_id`: the
 *  numcodecs id of the codec, or NULL; where given, an "id" member equal to it is allowed (numcodecs objects
 *  carry it; zarr-python accepts it in a "numcodecs.*" configuration) and any other "id" is refused. A NULL or
 *  non-object config passes (the caller reports its type). Call it first in every create. */
zgpu_status zg_config_only(const zj_value *config, const char *codec, const char *nc_id, const char *const allowed[]);
/** Reads an integer member (absent -> def; null or anything but an integer or a bool in [lo, hi] ->
 *  BAD_METADATA; true/false read as 1/0, as Python's bools are ints). */
zgpu_status zg_config_int(const zj_value *config, const char *codec, const char *key, int64_t def, int64_t lo,
                          int64_t hi, int64_t *out);
/** zg_config_int for members where zarr-python or numcodecs read null as "the default" (null -> def). */
zgpu_status zg_config_int_or_null(const zj_value *config, const char *codec, const char *key, int64_t def,
                                  int64_t lo, int64_t hi, int64_t *out);
/** Reads a string member (absent -> def, may be NULL; null or a non-string -> BAD_METADATA). */
zgpu_status zg_config_str(const zj_value *config, const char *codec, const char *key, const char *def,
                          const char **out);
/** zg_config_str, with null read as absent (-> def). */
zgpu_status zg_config_str_or_null(const zj_value *config, const char *codec, const char *key, const char *def,
                                  const char **out);
/** A numcodecs typestring member naming an integer or float type ("<i4", ">f8"; absent, or null where null_ok,
 *  -> def). Only the type is kept: values are native in memory and the chain's bytes codec applies the stored
 *  byte order (the v2 metadata parser checks that filters use the array's byte order). */
zgpu_status zg_config_numeric_typestr(const zj_value *config, const char *codec, const char *key, const zg_dtype *def,
                                      int null_ok, zg_dtype *out);
/** {"name": name, "configuration": conf} (takes conf; conf NULL -> no configuration member). */
zj_value *zg_codec_json(const char *name, zj_value *conf);

#endif
