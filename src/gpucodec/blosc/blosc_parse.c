/* Blosc1 chunk parsing for the device decoder (see blosc_parse.h). */
#include "gpucodec/blosc/blosc_parse.h"

#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "common/status.h"
#include "gpucodec/common/checksum_combine.h"
#include "gpucodec/deflate/deflate_check.h"

#define BLOSC_MIN_BUFFERSIZE 128 /* c-blosc: blocks shorter than this per element are never split */
#define BLOSC_MAX_SPLITS 16
/* c-blosc 1.x (blosc.h): the format version it reads, every inner compressor's format version, and its limits */
#define BLOSC_FORMAT_VERSION 2
#define BLOSC_COMP_FORMAT_VERSION 1
#define BLOSC_MAX_BUFFER (0x7fffffffu - ZG_BLOSC_HEADER)
#define BLOSC_MAX_BLOCK ((0x7fffffffu - 255u * 4u) / 3u)

const char *zg_blosc_compname(int compformat) {
    switch (compformat) {
    case ZG_BLOSC_BLOSCLZ: return "blosclz";
    case ZG_BLOSC_LZ4: return "lz4";
    case ZG_BLOSC_SNAPPY: return "snappy";
    case ZG_BLOSC_ZLIB: return "zlib";
    case ZG_BLOSC_ZSTD: return "zstd";
    default: return "unknown";
    }
}

zgpu_status zg_blosc_parse_header(const uint8_t *src, size_t n, size_t expected, zg_blosc_header *h) {
    memset(h, 0, sizeof *h);
    ZG_RETURN_IF(n < ZG_BLOSC_HEADER, ZGPU_ERR_CORRUPT_DATA, "blosc: chunk of %zu bytes is shorter than the 16-byte header", n);
    h->version = src[0];
    h->versionlz = src[1];
    h->flags = src[2];
    h->typesize = src[3];
    h->nbytes = zg_le32(src + 4);
    h->blocksize = zg_le32(src + 8);
    h->cbytes = zg_le32(src + 12);
    /* in c-blosc's order (blosc_cbuffer_validate, then blosc_decompress_ctx's header checks) */
    ZG_RETURN_IF(h->version != BLOSC_FORMAT_VERSION, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: header version %u (c-blosc 1.x reads version %d; blosc2 frames are not blosc1 chunks)",
                 h->version, BLOSC_FORMAT_VERSION);
    ZG_RETURN_IF(h->cbytes != n, ZGPU_ERR_CORRUPT_DATA, "blosc: header says %u compressed bytes but the chunk has %zu",
                 h->cbytes, n);
    ZG_RETURN_IF(h->nbytes > BLOSC_MAX_BUFFER, ZGPU_ERR_CORRUPT_DATA, "blosc: header says %u decoded bytes, more than blosc's limit",
                 h->nbytes);
    ZG_RETURN_IF(expected != SIZE_MAX && h->nbytes != expected, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: header says %u decoded bytes, expected %zu", h->nbytes, expected);
    ZG_RETURN_IF(h->typesize == 0, ZGPU_ERR_CORRUPT_DATA, "blosc: typesize 0 in header");
    ZG_RETURN_IF(h->flags & 0x08, ZGPU_ERR_CORRUPT_DATA, "blosc: reserved flag bit 3 set (0x%02x)", h->flags);
    h->compformat = (h->flags >> 5) & 7;
    h->memcpyed = (h->flags & 0x02) != 0;
    h->dont_split = (h->flags & 0x10) != 0;
    if ((h->flags & 0x01) && h->typesize > 1) h->shuffle = ZG_BLOSC_SHUFFLE;
    else if (h->flags & 0x04) h->shuffle = ZG_BLOSC_BITSHUFFLE;
    else h->shuffle = ZG_BLOSC_NOSHUFFLE;
    if (h->nbytes == 0) { /* (c-blosc returns at once: nothing else is read) */
        h->nblocks = 0;
        return ZGPU_OK;
    }
    /* c-blosc decodes into nbytes: a larger block does not fit there (it is never clamped on decode) */
    ZG_RETURN_IF(h->blocksize == 0 || h->blocksize > h->nbytes || h->blocksize > BLOSC_MAX_BLOCK, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: blocksize %u with %u decoded bytes", h->blocksize, h->nbytes);
    h->nblocks = h->nbytes / h->blocksize;
    h->leftover = h->nbytes % h->blocksize;
    if (h->leftover) h->nblocks++;
    if (h->memcpyed) {
        ZG_RETURN_IF((uint64_t)h->nbytes + ZG_BLOSC_HEADER != h->cbytes, ZGPU_ERR_CORRUPT_DATA,
                     "blosc: uncompressed chunk of %u bytes stored in %u bytes", h->nbytes, h->cbytes);
        return ZGPU_OK;
    }
    ZG_RETURN_IF(h->compformat > ZG_BLOSC_ZSTD, ZGPU_ERR_CORRUPT_DATA, "blosc: unknown compressor code %d",
                 h->compformat);
    ZG_RETURN_IF(h->versionlz != BLOSC_COMP_FORMAT_VERSION, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: %s format version %u (expected %d)", zg_blosc_compname(h->compformat), h->versionlz,
                 BLOSC_COMP_FORMAT_VERSION);
    ZG_RETURN_IF((uint64_t)ZG_BLOSC_HEADER + 4ull * h->nblocks > h->cbytes, ZGPU_ERR_CORRUPT_DATA,
                 "blosc: %u block starts do not fit in %u bytes", h->nblocks, h->cbytes);
    return ZGPU_OK;
}

static uint32_t n_splits(const zg_blosc_header *h, int leftover_block) {
    if (!h->dont_split && h->typesize <= BLOSC_MAX_SPLITS && h->blocksize / h->typesize >= BLOSC_MIN_BUFFERSIZE &&
        !leftover_block)
        return h->typesize;
    return 1;
}

size_t zg_blosc_max_streams(const zg_blosc_header *h) {
    if (h->nbytes == 0) return 0;
    if (h->memcpyed) return 1;
    return (size_t)h->nblocks * n_splits(h, 0);
}

zgpu_status zg_blosc_streams(const uint8_t *src, size_t n, const zg_blosc_header *h, zg_blosc_stream *out,
                             size_t cap, size_t *count) {
    *count = 0;
    if (h->nbytes == 0) return ZGPU_OK;
    if (n > h->cbytes) n = h->cbytes;
    if (h->memcpyed) {
        ZG_RETURN_IF(cap < 1, ZGPU_ERR_INTERNAL, "blosc: stream array too small");
        out[0] = (zg_blosc_stream){ZG_BLOSC_HEADER, h->nbytes, 0, h->nbytes, 1, ZG_CHECK_NONE, 0};
        *count = 1;
        return ZGPU_OK;
    }
    const uint64_t data_start = ZG_BLOSC_HEADER + 4ull * h->nblocks;
    size_t k = 0;
    for (uint32_t b = 0; b < h->nblocks; b++) {
        int last_short = (b == h->nblocks - 1) && h->leftover;
        uint32_t bsize = last_short ? h->leftover : h->blocksize;
        uint32_t ns = n_splits(h, last_short);
        uint32_t neblock = bsize / ns;
        uint64_t pos = zg_le32(src + ZG_BLOSC_HEADER + 4ull * b);
        ZG_RETURN_IF(pos < data_start || pos >= n, ZGPU_ERR_CORRUPT_DATA,
                     "blosc: block %u starts at %llu, outside the data area [%llu, %zu)", b,
                     (unsigned long long)pos, (unsigned long long)data_start, n);
        for (uint32_t s = 0; s < ns; s++) {
            ZG_RETURN_IF(pos + 4 > n, ZGPU_ERR_CORRUPT_DATA, "blosc: block %u stream %u header past the end", b, s);
            uint32_t cs = zg_le32(src + pos);
            pos += 4;
            ZG_RETURN_IF(cs == 0 || pos + cs > n, ZGPU_ERR_CORRUPT_DATA,
                         "blosc: block %u stream %u of %u bytes does not fit in the chunk", b, s, cs);
            ZG_RETURN_IF(k >= cap, ZGPU_ERR_INTERNAL, "blosc: stream array too small");
            out[k] = (zg_blosc_stream){(uint32_t)pos, cs, (uint32_t)((uint64_t)b * h->blocksize + (uint64_t)s * neblock),
                                       neblock, cs == neblock, ZG_CHECK_NONE, 0};
            k++;
            pos += cs;
        }
    }
    *count = k;
    return ZGPU_OK;
}

void zg_blosc_blocks_of(const zg_blosc_header *h, size_t lo, size_t hi, uint32_t *b0, uint32_t *b1) {
    *b0 = (uint32_t)(lo / h->blocksize);
    *b1 = (uint32_t)((hi - 1) / h->blocksize);
    if (*b1 >= h->nblocks) *b1 = h->nblocks - 1;
}

/* The least block start above `start` (or n): where the block starting at `start` must end. */
static uint64_t next_start(const uint8_t *src, size_t n, const zg_blosc_header *h, uint64_t start) {
    uint64_t end = n;
    for (uint32_t j = 0; j < h->nblocks; j++) {
        uint64_t s = zg_le32(src + ZG_BLOSC_HEADER + 4ull * j);
        if (s > start && s < end) end = s;
    }
    return end;
}

void zg_blosc_blocks_span(const uint8_t *src, size_t n, const zg_blosc_header *h, uint32_t b0, uint32_t b1,
                          uint64_t *off, uint64_t *end) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t b = b0; b <= b1; b++) {
        uint64_t s = zg_le32(src + ZG_BLOSC_HEADER + 4ull * b);
        if (s < lo) lo = s;
        if (s > hi) hi = s;
    }
    *off = lo > n ? n : lo;
    *end = hi >= n ? n : next_start(src, n, h, hi);
}

static int cmp_u32(const void *a, const void *b) {
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

zgpu_status zg_blosc_check_blocks(const uint8_t *src, size_t n, const zg_blosc_header *h, uint32_t b0, uint32_t b1) {
    if (!h->nblocks || b0 > b1 || b0 >= h->nblocks) return ZGPU_OK;
    if (b1 >= h->nblocks) b1 = h->nblocks - 1;
    const uint64_t data_start = ZG_BLOSC_HEADER + 4ull * h->nblocks;
    /* where each block must end: the next start above its own, found in the sorted starts (c-blosc's threads store
     * blocks in the order they finish, so starts need not grow with the block index; a linear search per block
     * would make a chunk of many blocks quadratic) */
    uint32_t *sorted = malloc((size_t)h->nblocks * sizeof *sorted);
    ZG_RETURN_IF(!sorted, ZGPU_ERR_NO_MEMORY, "blosc: out of memory sorting %u block starts", h->nblocks);
    for (uint32_t j = 0; j < h->nblocks; j++) sorted[j] = zg_le32(src + ZG_BLOSC_HEADER + 4ull * j);
    qsort(sorted, h->nblocks, sizeof *sorted, cmp_u32);
    zgpu_status st = ZGPU_OK;
    for (uint32_t b = b0; st == ZGPU_OK && b <= b1; b++) {
        const int last_short = (b == h->nblocks - 1) && h->leftover;
        const uint32_t ns = n_splits(h, last_short);
        uint64_t pos = zg_le32(src + ZG_BLOSC_HEADER + 4ull * b);
        if (pos < data_start || pos >= n) {
            st = zg_error(ZGPU_ERR_CORRUPT_DATA, "blosc: block %u starts at %llu, outside the data area [%llu, %zu)", b,
                          (unsigned long long)pos, (unsigned long long)data_start, n);
            break;
        }
        size_t lo = 0, hi = h->nblocks; /* the first sorted start above pos */
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] <= pos) lo = mid + 1;
            else hi = mid;
        }
        const uint64_t end = lo < h->nblocks && sorted[lo] < n ? sorted[lo] : n;
        for (uint32_t s = 0; st == ZGPU_OK && s < ns; s++) {
            if (pos + 4 > end) {
                st = zg_error(ZGPU_ERR_CORRUPT_DATA, "blosc: block %u stream %u header past the block's end", b, s);
                break;
            }
            const uint32_t cs = zg_le32(src + pos);
            pos += 4;
            if (cs == 0 || pos + cs > end)
                st = zg_error(ZGPU_ERR_CORRUPT_DATA,
                              "blosc: block %u stream %u of %u bytes runs past the block's end (byte %llu)", b, s, cs,
                              (unsigned long long)end);
            pos += cs;
        }
    }
    free(sorted);
    return st;
}

zgpu_status zg_blosc_stream_payload(const zg_blosc_header *h, const uint8_t *chunk, zg_blosc_stream *s) {
    s->check_kind = ZG_CHECK_NONE;
    s->check = 0;
    if (s->raw) return ZGPU_OK;
    const uint8_t *p = chunk + s->src_off;
    const size_t n = s->src_len;
    if (h->compformat == ZG_BLOSC_ZLIB) { /* c-blosc's inner zlib (uncompress) verifies the Adler-32: so must the GPU */
        size_t zo, zl;
        ZG_FORWARD(zg_zlib_locate(p, n, s->dst_len, &zo, &zl));
        s->check = zg_be32(p + n - 4);
        s->check_kind = ZG_CHECK_ADLER32;
        s->src_off += (uint32_t)zo;
        s->src_len = (uint32_t)zl;
    } else if (h->compformat == ZG_BLOSC_ZSTD && n >= 9 && zg_le32(p) == 0xfd2fb528u && (p[4] & 0x04)) {
        /* (a frame with its checksum ends in it: the zstd decoders' checks take only a frame filling the stream) */
        s->check = zg_le32(p + n - 4);
        s->check_kind = ZG_CHECK_XXH64;
    }
    return ZGPU_OK;
}

void zg_unshuffle_bytes_ref(size_t ts, size_t n, const uint8_t *src, uint8_t *dst) {
    size_t ne = ts ? n / ts : 0;
    for (size_t j = 0; j < ts; j++)
        for (size_t i = 0; i < ne; i++) dst[i * ts + j] = src[j * ne + i];
    memcpy(dst + ne * ts, src + ne * ts, n - ne * ts);
}

void zg_bitunshuffle_ref(size_t ts, size_t nelem, const uint8_t *src, uint8_t *dst) {
    /* src is (ts*8 bit-rows) x (nelem/8 bytes): row (byte j, bit k), byte g holds bit k of byte j of the
     * elements 8g..8g+7, element 8g+b in bit b. */
    size_t rowbytes = nelem / 8;
    memset(dst, 0, ts * nelem);
    for (size_t j = 0; j < ts; j++)
        for (size_t k = 0; k < 8; k++) {
            const uint8_t *row = src + (j * 8 + k) * rowbytes;
            for (size_t e = 0; e < nelem; e++)
                dst[e * ts + j] |= (uint8_t)(((row[e / 8] >> (e % 8)) & 1u) << k);
        }
}

void zg_blosc_unshuffle_ref(const zg_blosc_header *h, const uint8_t *src, uint8_t *dst) {
    if (h->memcpyed || h->shuffle == ZG_BLOSC_NOSHUFFLE) {
        memcpy(dst, src, h->nbytes);
        return;
    }
    for (uint32_t b = 0; b < h->nblocks; b++) {
        size_t off = (size_t)b * h->blocksize;
        size_t bsize = (b == h->nblocks - 1 && h->leftover) ? h->leftover : h->blocksize;
        if (h->shuffle == ZG_BLOSC_SHUFFLE) {
            zg_unshuffle_bytes_ref(h->typesize, bsize, src + off, dst + off);
            continue;
        }
        /* bitshuffle: format version 2 skips blocks whose element count is not a multiple of 8; later
         * versions unshuffle the largest multiple of 8 and copy the rest. */
        size_t ne = bsize / h->typesize;
        size_t done = 0;
        if (h->version <= 2) {
            if (ne % 8 == 0) {
                zg_bitunshuffle_ref(h->typesize, ne, src + off, dst + off);
                done = ne * h->typesize;
            }
        } else {
            ne -= ne % 8;
            zg_bitunshuffle_ref(h->typesize, ne, src + off, dst + off);
            done = ne * h->typesize;
        }
        memcpy(dst + off + done, src + off + done, bsize - done);
    }
}
