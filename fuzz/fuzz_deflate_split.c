/* Fuzz target for the host DEFLATE decode that spreads one stream over threads (src/codec/deflate_split.c): parts
 * found at guessed block headers, decoded into tokens, chained, their tails resolved and their tokens replayed.
 * Input: u8 mode (bits 0-1: 2, 3, 5 or 12 ways; bit 2: Adler-32, else CRC32; bit 3: the checksum of libdeflate's
 * decode, else the input's next u32), u32le decoded size (modulo 4 MiB + 1), u16le bytes a part at least (modulo
 * 64 KiB, 256 or more), [u32le checksum], then one raw DEFLATE stream. A crash or sanitizer report is a bug, and so
 * is a split decode that is not declined where libdeflate fails or yields other bytes (abort). The corpus holds label,
 * image and text streams of many blocks; their mutations find damaged ones and wrong guesses. */
#include <libdeflate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/deflate_split.h"
#include "host/pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SIZE ((size_t)4 << 20)

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t *out, *ref;
    static zg_pool *pool;
    static struct libdeflate_decompressor *d;
    if (size < 8) return 0;
    if (!out && !(out = malloc(MAX_SIZE))) return 0;
    if (!ref && !(ref = malloc(MAX_SIZE))) return 0;
    if (!pool && zg_pool_create(4, &pool) != ZGPU_OK) return 0;
    if (!d && !(d = libdeflate_alloc_decompressor())) return 0;
    static const int ways_of[4] = {2, 3, 5, 12};
    const int mode = data[0], ways = ways_of[mode & 3];
    const zg_deflate_check_kind kind = (mode & 4) ? ZG_DEFLATE_ADLER32 : ZG_DEFLATE_CRC32;
    const size_t expected = le32(data + 1) % (MAX_SIZE + 1);
    size_t part_min = (size_t)(data[5] | data[6] << 8);
    if (part_min < 256) part_min = 256;
    size_t at = 7;
    uint32_t check = 0;
    if (!(mode & 8)) {
        if (size < at + 4) return 0;
        check = le32(data + at);
        at += 4;
    }
    const uint8_t *stream = data + at;
    const size_t n = size - at;
    if (!expected || !n) return 0;
    size_t used = 0, got = 0;
    const int ref_ok = libdeflate_deflate_decompress_ex(d, stream, n, ref, expected, &used, &got) == LIBDEFLATE_SUCCESS &&
                       used == n && got == expected;
    const uint32_t sum = kind == ZG_DEFLATE_CRC32 ? libdeflate_crc32(0, ref, ref_ok ? expected : 0)
                                                  : libdeflate_adler32(1, ref, ref_ok ? expected : 0);
    if (mode & 8) check = sum;
    zg_decode_par par = {pool, ways};
    int declined = 1;
    if (zg_deflate_decode_split(stream, n, out, expected, kind, check, &par, part_min, 0, &declined) != ZGPU_OK)
        return 0;
    if (!declined && (!ref_ok || check != sum || memcmp(out, ref, expected) != 0)) abort();
    return 0;
}
