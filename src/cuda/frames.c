/* Host-side frame checks before GPU decompression (see frames.h). */
#include "cuda/frames.h"

#include "util/status.h"

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

zgpu_status zg_gzip_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len) {
    ZG_RETURN_IF(n < 18, ZGPU_ERR_CORRUPT_DATA, "gzip: %zu bytes is shorter than a gzip member", n);
    ZG_RETURN_IF(p[0] != 0x1f || p[1] != 0x8b, ZGPU_ERR_CORRUPT_DATA, "gzip: bad magic %02x %02x", p[0], p[1]);
    ZG_RETURN_IF(p[2] != 8, ZGPU_ERR_CORRUPT_DATA, "gzip: compression method %u (expected 8, deflate)", p[2]);
    uint8_t flg = p[3];
    ZG_RETURN_IF(flg & 0xe0, ZGPU_ERR_CORRUPT_DATA, "gzip: reserved flag bits set (0x%02x)", flg);
    size_t pos = 10;
    if (flg & 0x04) { /* FEXTRA */
        ZG_RETURN_IF(pos + 2 > n, ZGPU_ERR_CORRUPT_DATA, "gzip: truncated extra field");
        size_t xlen = (size_t)p[pos] | (size_t)p[pos + 1] << 8;
        pos += 2 + xlen;
    }
    for (int bit = 0x08; bit <= 0x10; bit <<= 1) { /* FNAME, FCOMMENT: zero-terminated */
        if (!(flg & bit)) continue;
        while (pos < n && p[pos]) pos++;
        pos++;
    }
    if (flg & 0x02) pos += 2; /* FHCRC */
    ZG_RETURN_IF(pos + 8 > n, ZGPU_ERR_CORRUPT_DATA, "gzip: header of %zu bytes leaves no room for data", pos);
    uint32_t isize = rd32(p + n - 4);
    ZG_RETURN_IF(expected != SIZE_MAX && isize != (uint32_t)expected, ZGPU_ERR_CORRUPT_DATA,
                 "gzip: trailer says %u decoded bytes, expected %zu", isize, expected);
    *off = pos;
    *len = n - 8 - pos;
    return ZGPU_OK;
}

zgpu_status zg_zlib_locate(const uint8_t *p, size_t n, size_t *off, size_t *len) {
    ZG_RETURN_IF(n < 7, ZGPU_ERR_CORRUPT_DATA, "zlib: %zu bytes is shorter than a zlib stream", n);
    ZG_RETURN_IF((p[0] & 0x0f) != 8 || (p[0] >> 4) > 7, ZGPU_ERR_CORRUPT_DATA, "zlib: bad CMF byte 0x%02x", p[0]);
    ZG_RETURN_IF(((unsigned)p[0] * 256 + p[1]) % 31 != 0, ZGPU_ERR_CORRUPT_DATA, "zlib: header check bits wrong");
    ZG_RETURN_IF(p[1] & 0x20, ZGPU_ERR_UNSUPPORTED, "zlib: preset dictionary");
    *off = 2;
    *len = n - 6;
    return ZGPU_OK;
}

zgpu_status zg_lz4_block_check(const uint8_t *p, size_t n, size_t expected) {
    size_t ip = 0, op = 0;
    ZG_RETURN_IF(n == 0, ZGPU_ERR_CORRUPT_DATA, "lz4: empty block");
    for (;;) {
        ZG_RETURN_IF(ip >= n, ZGPU_ERR_CORRUPT_DATA, "lz4: block ends inside a sequence");
        unsigned token = p[ip++];
        size_t lit = token >> 4;
        if (lit == 15) {
            unsigned b;
            do {
                ZG_RETURN_IF(ip >= n, ZGPU_ERR_CORRUPT_DATA, "lz4: literal length runs past the end");
                b = p[ip++];
                lit += b;
            } while (b == 255);
        }
        ZG_RETURN_IF(lit > n - ip, ZGPU_ERR_CORRUPT_DATA, "lz4: %zu literals at %zu run past the block end", lit, ip);
        ip += lit;
        op += lit;
        ZG_RETURN_IF(op > expected, ZGPU_ERR_CORRUPT_DATA, "lz4: decodes to more than %zu bytes", expected);
        if (ip == n) break; /* the last sequence holds literals only */
        ZG_RETURN_IF(n - ip < 2, ZGPU_ERR_CORRUPT_DATA, "lz4: truncated match offset");
        size_t offset = (size_t)p[ip] | (size_t)p[ip + 1] << 8;
        ip += 2;
        ZG_RETURN_IF(offset == 0 || offset > op, ZGPU_ERR_CORRUPT_DATA,
                     "lz4: match offset %zu at output position %zu", offset, op);
        size_t ml = token & 15;
        if (ml == 15) {
            unsigned b;
            do {
                ZG_RETURN_IF(ip >= n, ZGPU_ERR_CORRUPT_DATA, "lz4: match length runs past the end");
                b = p[ip++];
                ml += b;
            } while (b == 255);
        }
        op += ml + 4;
        ZG_RETURN_IF(op > expected, ZGPU_ERR_CORRUPT_DATA, "lz4: decodes to more than %zu bytes", expected);
    }
    ZG_RETURN_IF(op != expected, ZGPU_ERR_CORRUPT_DATA, "lz4: decodes to %zu bytes, expected %zu", op, expected);
    return ZGPU_OK;
}

zgpu_status zg_lz4nc_locate(const uint8_t *p, size_t n, size_t expected, size_t *off, size_t *len) {
    ZG_RETURN_IF(n < 5, ZGPU_ERR_CORRUPT_DATA, "lz4: %zu bytes is too short for the size prefix and a block", n);
    uint32_t sz = rd32(p);
    ZG_RETURN_IF(expected != SIZE_MAX && sz != expected, ZGPU_ERR_CORRUPT_DATA,
                 "lz4: size prefix says %u bytes, expected %zu", sz, expected);
    ZG_FORWARD(zg_lz4_block_check(p + 4, n - 4, sz));
    *off = 4;
    *len = n - 4;
    return ZGPU_OK;
}

zgpu_status zg_zstd_check(const uint8_t *p, size_t n, size_t expected) {
    ZG_RETURN_IF(n < 6, ZGPU_ERR_CORRUPT_DATA, "zstd: %zu bytes is shorter than a frame", n);
    uint32_t magic = rd32(p);
    if ((magic & 0xfffffff0u) == 0x184d2a50u) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: skippable frame");
    ZG_RETURN_IF(magic != 0xfd2fb528u, ZGPU_ERR_CORRUPT_DATA, "zstd: bad magic 0x%08x", magic);
    uint8_t fhd = p[4];
    ZG_RETURN_IF(fhd & 0x08, ZGPU_ERR_CORRUPT_DATA, "zstd: reserved frame header bit set");
    int fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, checksum = (fhd >> 2) & 1, did_flag = fhd & 3;
    static const int did_size[4] = {0, 1, 2, 4};
    int fcs_size = fcs_flag == 0 ? single : (fcs_flag == 1 ? 2 : (fcs_flag == 2 ? 4 : 8));
    size_t pos = 5 + (single ? 0 : 1);
    ZG_RETURN_IF(pos + did_size[did_flag] + fcs_size > n, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated frame header");
    uint64_t did = 0;
    for (int i = 0; i < did_size[did_flag]; i++) did |= (uint64_t)p[pos + i] << (8 * i);
    pos += did_size[did_flag];
    if (did) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: frame needs dictionary %llu", (unsigned long long)did);
    if (fcs_size) {
        uint64_t fcs = 0;
        for (int i = 0; i < fcs_size; i++) fcs |= (uint64_t)p[pos + i] << (8 * i);
        if (fcs_size == 2) fcs += 256;
        pos += fcs_size;
        ZG_RETURN_IF(expected != SIZE_MAX && fcs != expected, ZGPU_ERR_CORRUPT_DATA,
                     "zstd: frame content size %llu, expected %zu", (unsigned long long)fcs, expected);
    }
    for (;;) {
        ZG_RETURN_IF(pos + 3 > n, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated block header at %zu", pos);
        uint32_t bh = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8 | (uint32_t)p[pos + 2] << 16;
        pos += 3;
        int last = bh & 1, type = (bh >> 1) & 3;
        size_t bsize = bh >> 3;
        ZG_RETURN_IF(type == 3, ZGPU_ERR_CORRUPT_DATA, "zstd: reserved block type");
        ZG_RETURN_IF(bsize > (128u << 10), ZGPU_ERR_CORRUPT_DATA, "zstd: block of %zu bytes exceeds 128 KiB", bsize);
        size_t stored = type == 1 ? 1 : bsize;
        ZG_RETURN_IF(stored > n - pos, ZGPU_ERR_CORRUPT_DATA, "zstd: block of %zu bytes runs past the end", stored);
        pos += stored;
        if (last) break;
    }
    if (checksum) {
        ZG_RETURN_IF(n - pos < 4, ZGPU_ERR_CORRUPT_DATA, "zstd: truncated content checksum");
        pos += 4;
    }
    if (pos != n) return zg_error(ZGPU_ERR_UNSUPPORTED, "zstd: %zu bytes follow the first frame", n - pos);
    return ZGPU_OK;
}
