/* Fuzz target for the host zstd decoders that spread one frame over threads or decode part of it
 * (src/codec/zstd_split.c): the sparse decode of byte runs (zg_zstd_decode_sparse) and the block-parallel split
 * (zg_zstd_decode_split, forced). Input: u8 mode (bit 0: four threads, else one; bit 1: also the split; bit 2: the
 * frame read in part, as a local chunk is, through a buffer poisoned where nothing was read; bit 3: each run
 * written at a dst of its own, in another buffer), u32le decoded size (modulo 16 MiB + 1), u32le seed of the runs
 * (up to 64 ascending runs of up to 4 KiB, the last ones near the end, where a sparse decode pays), then one zstd
 * frame. A crash or sanitizer report is a bug, and so is a
 * decode libzstd agrees with yielding other bytes than libzstd's (abort). The corpus holds label frames (long
 * matches: the sparse decode's data) and OCT-like ones (literals: the lazy decode's), and their mutations find the
 * damaged ones. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "codec/zstd_split.h"
#include "fuzz_mem.h"
#include "host/pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SIZE ((size_t)16 << 20)
#define MAX_RUNS 64

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t *out, *ref, *buf, *dbuf;
    static zg_pool *pool;
    if (size < 9) return 0;
    if (!out && !(out = malloc(MAX_SIZE + 1))) return 0;
    if (!ref && !(ref = malloc(MAX_SIZE + 1))) return 0;
    if (!buf && !(buf = malloc(MAX_SIZE + 1))) return 0;
    if (!dbuf && !(dbuf = malloc(MAX_SIZE + 1))) return 0;
    if (!pool && zg_pool_create(4, &pool) != ZGPU_OK) return 0;
    const int mode = data[0];
    const size_t expected = le32(data + 1) % (MAX_SIZE + 1);
    uint64_t seed = (uint64_t)le32(data + 5) * 0x9E3779B97F4A7C15ull + 1;
    const uint8_t *frame = data + 9;
    const size_t n = size - 9;
    if (!expected) return 0;
    /* ascending runs, from a random start to the end: a crop's rows near a frame's end */
    zg_byte_run runs[MAX_RUNS];
    size_t m = 0;
    const size_t count = 1 + next(&seed) % MAX_RUNS;
    uint64_t at = expected - expected / (1 + next(&seed) % 8);
    for (size_t i = 0; i < count && at < expected; i++) {
        const uint64_t len = 1 + next(&seed) % 4096;
        runs[m++] = (zg_byte_run){at, at + len <= expected ? len : expected - at, NULL};
        at += len + next(&seed) % 8192;
    }
    /* with mode 8, each run written at a dst of its own (a read's destination: another buffer) */
    const int at_dst = (mode & 8) != 0;
    for (size_t r = 0; at_dst && r < m; r++) runs[r].dst = dbuf + runs[r].off;
    const size_t ref_n = ZSTD_decompress(ref, expected, frame, n);
    const int ref_ok = !ZSTD_isError(ref_n) && ref_n == expected;
    zg_decode_par par = {pool, 4};
    int declined = 1;
    fuzz_mem src = {frame, n}; /* (a frame read in part: its bytes copied from the input as the decode asks) */
    zg_part_input part = {buf, fuzz_mem_read, &src};
    const int in_part = (mode & 4) && n <= MAX_SIZE;
    if (in_part) memset(buf, 0xA5, n);
    if (m && zg_zstd_decode_sparse(in_part ? buf : frame, n, out, expected, runs, m, (mode & 1) ? &par : NULL,
                                   in_part ? &part : NULL, &declined) == ZGPU_OK &&
        !declined && ref_ok)
        for (size_t r = 0; r < m; r++)
            if (memcmp((at_dst ? dbuf : out) + runs[r].off, ref + runs[r].off, runs[r].len) != 0) abort();
    if ((mode & 2) && m) {
        const size_t hi = (size_t)(runs[m - 1].off + runs[m - 1].len);
        if (zg_zstd_decode_split(frame, n, out, expected, hi, &par, 0, &declined) == ZGPU_OK && !declined && ref_ok &&
            memcmp(out, ref, hi) != 0)
            abort();
    }
    return 0;
}
