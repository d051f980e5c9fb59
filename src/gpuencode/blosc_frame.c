/* Blosc1 chunks around streams compressed elsewhere (see blosc_frame.h). The rules are c-blosc 1.21's
 * (blosc/blosc.c: compute_blocksize, split_block, write_compression_header, blosc_c, blosc_compress_context;
 * blosc/shuffle.c), restated here so that this file needs neither c-blosc nor a compressor. */
#include "gpuencode/blosc_frame.h"

#include <string.h>

#include "common/status.h"

#define BF_HEADER 16
#define BF_FORMAT_VERSION 2      /* c-blosc 1.x's BLOSC_VERSION_FORMAT */
#define BF_COMP_VERSION 1        /* every inner compressor's format version */
#define BF_MIN_BUFFERSIZE 128    /* smaller chunks are stored as plain copies; split streams are at least this */
#define BF_MAX_SPLITS 16         /* wider items are never split */
#define BF_L1 (32 * 1024)        /* the block size compute_blocksize starts from */
#define BF_MAX_TYPESIZE 255
#define BF_MAX_BUFFERSIZE (INT32_MAX - BF_HEADER)
#define BF_MAX_BLOCKSIZE ((INT32_MAX - BF_MAX_TYPESIZE * 4) / 3)

static const char *const cnames[ZG_BLOSC_COMP_N] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};
/* the header's compressor format of each code: lz4hc writes lz4 streams */
static const uint8_t comp_format[ZG_BLOSC_COMP_N] = {0, 1, 1, 2, 3, 4};

int zg_blosc_compressor_code(const char *cname) {
    if (!cname) return -1;
    for (int c = 0; c < ZG_BLOSC_COMP_N; c++)
        if (strcmp(cname, cnames[c]) == 0) return c;
    return -1;
}

int zg_blosc_frame_zstd_level(int clevel, int zstd_max_level) {
    /* (c-blosc then maps a level of 8 to the maximum less 2, which 2 * clevel - 1 never is) */
    return clevel < 9 ? 2 * clevel - 1 : zstd_max_level;
}

/* Compressors meant for large blocks (lz4hc, zlib, zstd) get blocks twice as large. */
static int high_ratio(int comp) {
    return comp == ZG_BLOSC_COMP_LZ4HC || comp == ZG_BLOSC_COMP_ZLIB || comp == ZG_BLOSC_COMP_ZSTD;
}

/* Whether blocks are compressed as typesize streams (split mode BLOSC_FORWARD_COMPAT_SPLIT, c-blosc's default:
 * every compressor but zstd, which came with the split flag, for items of at most 16 bytes and 128 a stream). */
static int splits_blocks(int comp, int32_t typesize, int32_t blocksize) {
    return comp != ZG_BLOSC_COMP_ZSTD && typesize <= BF_MAX_SPLITS && blocksize / typesize >= BF_MIN_BUFFERSIZE;
}

static int32_t block_size(int comp, int clevel, int32_t typesize, int32_t nbytes, int32_t forced) {
    if (nbytes < typesize) return 1;
    int32_t bs = nbytes;
    if (forced) {
        bs = forced < BF_MIN_BUFFERSIZE ? BF_MIN_BUFFERSIZE : forced > BF_MAX_BLOCKSIZE ? BF_MAX_BLOCKSIZE : forced;
    } else if (nbytes >= BF_L1) {
        /* L1-sized blocks scaled with the level: a quarter at 0 up to 8 times at 9 (16 for high-ratio codecs) */
        static const int32_t times4[10] = {1, 2, 4, 8, 16, 16, 32, 32, 32, 32};
        bs = BF_L1 * (high_ratio(comp) ? 2 : 1) * times4[clevel] / 4;
        if (clevel == 9 && high_ratio(comp)) bs *= 2;
    }
    if (clevel > 0 && splits_blocks(comp, typesize, bs)) {
        /* split streams of at most 256 KiB, blocks of 64 KiB to 1 MiB */
        if (bs > (1 << 18)) bs = 1 << 18;
        bs *= typesize;
        if (bs < (1 << 16)) bs = 1 << 16;
        if (bs > (1 << 20)) bs = 1 << 20;
    }
    if (bs > nbytes) bs = nbytes;
    if (bs > typesize) bs = bs / typesize * typesize; /* whole items */
    return bs;
}

zgpu_status zg_blosc_frame_plan_for(const zg_blosc_frame_params *params, zg_blosc_frame_plan *plan) {
    ZG_RETURN_IF(!params || !plan, ZGPU_ERR_INVALID_ARGUMENT, "blosc frame: NULL parameters or plan");
    const zg_blosc_frame_params *q = params;
    memset(plan, 0, sizeof *plan);
    ZG_RETURN_IF(q->typesize == 0, ZGPU_ERR_INVALID_ARGUMENT, "blosc frame: typesize 0");
    ZG_RETURN_IF(q->clevel < 0 || q->clevel > 9, ZGPU_ERR_INVALID_ARGUMENT, "blosc frame: clevel %d (expected 0..9)",
                 q->clevel);
    ZG_RETURN_IF(q->compressor < 0 || q->compressor >= ZG_BLOSC_COMP_N, ZGPU_ERR_INVALID_ARGUMENT,
                 "blosc frame: unknown compressor code %d", q->compressor);
    ZG_RETURN_IF(q->shuffle < 0 || q->shuffle > 2, ZGPU_ERR_INVALID_ARGUMENT,
                 "blosc frame: shuffle %d (expected 0 none, 1 byte, 2 bit)", q->shuffle);
    ZG_RETURN_IF(q->blocksize > INT32_MAX, ZGPU_ERR_INVALID_ARGUMENT,
                 "blosc frame: blocksize %zu is over 2^31 - 1", q->blocksize);
    ZG_RETURN_IF(q->nbytes > BF_MAX_BUFFERSIZE, ZGPU_ERR_UNSUPPORTED,
                 "blosc frame: chunk of %zu bytes exceeds blosc's limit of %d", q->nbytes, BF_MAX_BUFFERSIZE);

    const int32_t ts = q->typesize > BF_MAX_TYPESIZE ? 1 : (int32_t)q->typesize;
    const int32_t nbytes = (int32_t)q->nbytes;
    const int32_t bs = block_size(q->compressor, q->clevel, ts, nbytes, (int32_t)q->blocksize);
    const int split = splits_blocks(q->compressor, ts, bs);
    plan->nbytes = (uint32_t)nbytes;
    plan->blocksize = (uint32_t)bs;
    plan->nblocks = (uint32_t)(nbytes / bs);
    plan->leftover = (uint32_t)(nbytes % bs);
    if (plan->leftover) plan->nblocks++;
    plan->splits = split ? (uint32_t)ts : 1;
    plan->typesize = (uint32_t)ts;
    plan->version = BF_FORMAT_VERSION;
    plan->versionlz = BF_COMP_VERSION;
    /* the flags are written whatever the chunk becomes: a plain copy keeps its shuffle, split and compressor bits */
    plan->flags = (uint8_t)((q->shuffle == 1 ? 0x01 : 0) | (q->shuffle == 2 ? 0x04 : 0) | (split ? 0 : 0x10) |
                            comp_format[q->compressor] << 5);
    plan->plain_copy = q->clevel == 0 || nbytes < BF_MIN_BUFFERSIZE;
    plan->clevel = q->clevel;
    plan->compressor = q->compressor;
    plan->shuffle = q->shuffle;
    if (!plan->plain_copy)
        plan->nstreams = plan->leftover ? (plan->nblocks - 1) * plan->splits + 1 : plan->nblocks * plan->splits;
    return ZGPU_OK;
}

/* ---- shuffle ---- */

/* Transposes the 8x8 bit matrix whose row r is byte r of x (bit c its column c): afterwards byte r holds bit r of
 * every original byte, byte c's bit in bit c. Three rounds of swapping off-diagonal blocks (Hacker's Delight 7-3). */
static uint64_t transpose8x8(uint64_t x) {
    uint64_t t;
    t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull, x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull, x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull, x ^= t ^ (t << 28);
    return x;
}

static void byte_shuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) {
    const size_t ne = n / ts;
    for (size_t i = 0; i < ne; i++)
        for (size_t j = 0; j < ts; j++) dst[j * ne + i] = src[i * ts + j];
    memcpy(dst + ne * ts, src + ne * ts, n - ne * ts);
}

/* The bitshuffle library's bit transpose of a block of ne items (ne a multiple of 8): bit-row 8j + k holds bit k
 * of byte j of every item, item e in bit e % 8 of the row's byte e / 8. */
static void bit_shuffle(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) {
    const size_t ne = n / ts, row = ne / 8;
    for (size_t j = 0; j < ts; j++)
        for (size_t g = 0; g < row; g++) {
            uint64_t x = 0;
            for (size_t b = 0; b < 8; b++) x |= (uint64_t)src[(8 * g + b) * ts + j] << (8 * b);
            x = transpose8x8(x);
            for (size_t k = 0; k < 8; k++) dst[(8 * j + k) * row + g] = (uint8_t)(x >> (8 * k));
        }
    memcpy(dst + ne * ts, src + ne * ts, n - ne * ts);
}

void zg_blosc_frame_shuffle(const zg_blosc_frame_plan *p, const uint8_t *src, uint8_t *dst) {
    for (uint32_t b = 0; b < p->nblocks; b++) {
        const size_t off = (size_t)b * p->blocksize;
        const size_t bsize = p->leftover && b == p->nblocks - 1 ? p->leftover : p->blocksize;
        switch (zg_blosc_frame_block_shuffle(p, b)) {
        case 1: byte_shuffle(p->typesize, bsize, src + off, dst + off); break;
        case 2: bit_shuffle(p->typesize, bsize, src + off, dst + off); break;
        default: memcpy(dst + off, src + off, bsize);
        }
    }
}

/* ---- the chunk ---- */

static void put_le32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* Whether a stream is stored raw: marked so, or its compressed size is none or not below its length (c-blosc
 * stores such a stream raw, and its readers take a stream as long as its split for raw bytes). */
static int stored_raw(const zg_blosc_frame_stream *s, uint32_t len) { return s->raw || s->size == 0 || s->size >= len; }

zgpu_status zg_blosc_frame_build(const zg_blosc_frame_plan *plan, const uint8_t *src, const uint8_t *shuffled,
                                 const zg_blosc_frame_stream *streams, size_t n, uint8_t *out, size_t cap,
                                 size_t *written, int *plain_copy) {
    ZG_RETURN_IF(!plan || !written, ZGPU_ERR_INVALID_ARGUMENT, "blosc frame: NULL plan or size");
    *written = 0;
    if (plain_copy) *plain_copy = 0;
    ZG_RETURN_IF(n != plan->nstreams, ZGPU_ERR_INVALID_ARGUMENT, "blosc frame: %zu streams given, the plan has %u", n,
                 plan->nstreams);
    ZG_RETURN_IF(n && !streams, ZGPU_ERR_INVALID_ARGUMENT, "blosc frame: NULL streams");
    const uint64_t limit = (uint64_t)plan->nbytes + BF_HEADER; /* c-blosc's and numcodecs' output bound */
    uint64_t total = BF_HEADER + 4ull * plan->nblocks;
    int plain = plan->plain_copy;
    for (uint32_t i = 0; i < n && !plain; i++) {
        uint32_t off, len;
        zg_blosc_frame_span(plan, i, &off, &len);
        const zg_blosc_frame_stream *s = &streams[i];
        ZG_RETURN_IF(!stored_raw(s, len) && !s->data, ZGPU_ERR_INVALID_ARGUMENT,
                     "blosc frame: stream %u: %zu compressed bytes at NULL", i, s->size);
        total += 4 + (stored_raw(s, len) ? len : s->size);
        plain = total > limit; /* c-blosc gives up as soon as it passes: the chunk is then a plain copy */
    }
    const size_t size = plain ? (size_t)limit : (size_t)total;
    *written = size;
    if (plain_copy) *plain_copy = plain;
    if (!out) return ZGPU_OK;
    ZG_RETURN_IF(cap < size, ZGPU_ERR_INVALID_ARGUMENT, "blosc frame: output of %zu bytes; the chunk needs %zu", cap,
                 size);
    ZG_RETURN_IF(plain && plan->nbytes && !src, ZGPU_ERR_INVALID_ARGUMENT,
                 "blosc frame: the chunk is a plain copy, and its bytes (src) are NULL");

    out[0] = plan->version;
    out[1] = plan->versionlz;
    out[2] = (uint8_t)(plan->flags | (plain ? 0x02 : 0));
    out[3] = (uint8_t)plan->typesize;
    put_le32(out + 4, plan->nbytes);
    put_le32(out + 8, plan->blocksize);
    put_le32(out + 12, (uint32_t)size);
    if (plain) {
        if (plan->nbytes) memcpy(out + BF_HEADER, src, plan->nbytes);
        return ZGPU_OK;
    }
    size_t pos = BF_HEADER + 4 * (size_t)plan->nblocks;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t off, len;
        zg_blosc_frame_span(plan, i, &off, &len);
        if (off % plan->blocksize == 0) put_le32(out + BF_HEADER + 4 * (size_t)(off / plan->blocksize), (uint32_t)pos);
        const zg_blosc_frame_stream *s = &streams[i];
        const uint8_t *bytes = s->data;
        uint32_t stored = (uint32_t)s->size;
        if (stored_raw(s, len)) {
            bytes = s->raw && s->data ? s->data : shuffled ? shuffled + off : NULL;
            stored = len;
            ZG_RETURN_IF(!bytes, ZGPU_ERR_INVALID_ARGUMENT,
                         "blosc frame: stream %u is stored raw, and the shuffled chunk is NULL", i);
        }
        put_le32(out + pos, stored);
        memcpy(out + pos + 4, bytes, stored);
        pos += 4 + (size_t)stored;
    }
    return ZGPU_OK;
}
