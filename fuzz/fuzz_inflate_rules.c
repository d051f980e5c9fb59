/* Fuzz target for zgpu's GPU DEFLATE decoder rules (src/gpucodec/deflate/inflate_rules.h), run on the CPU as the unit test
 * runs them (the lanes of a thread block one after another). Input: u32le decoded size (taken modulo 256 KiB + 1),
 * then a raw DEFLATE stream. The verdict is whether the stream decodes to exactly that size with no bytes left
 * over. A crash or sanitizer report is a bug (abort), and so is a verdict other than zlib's and libdeflate's where
 * those two agree, or other bytes than theirs. Where they disagree either verdict is allowed: libdeflate decodes
 * some streams zlib rejects (literal/length symbols 286-287 in use, found by this target; incomplete codes). */
#include <libdeflate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gpucodec/deflate/inflate_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* zlib's verdict on the raw stream in[0, n): exactly `expected` bytes into out, then the end, nothing after. */
static int zlib_verdict(const uint8_t *in, size_t n, uint8_t *out, size_t expected) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK) abort();
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)expected;
    const int r = inflate(&z, Z_FINISH);
    const int ok = r == Z_STREAM_END && z.avail_in == 0 && z.total_out == expected;
    inflateEnd(&z);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static zi_shared *sh;
    static void *scratch;
    static struct libdeflate_decompressor *ref;
    if (!sh) {
        sh = (zi_shared *)malloc(sizeof *sh);
        scratch = malloc(ZI_SCRATCH);
        ref = libdeflate_alloc_decompressor();
        if (!sh || !scratch || !ref) abort();
    }
    if (size < 4) return 0;
    const size_t expected = ((size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24) %
                            ((256u << 10) + 1);
    const uint8_t *in = data + 4;
    const size_t n = size - 4;
    uint8_t *ours = (uint8_t *)malloc(expected + 1), *theirs = (uint8_t *)malloc(expected + 1);
    uint8_t *zl = (uint8_t *)malloc(expected + 1);
    if (!ours || !theirs || !zl) abort();
    int status = -1;
    size_t actual = 0;
    zi_stream(sh, in, (uint32_t)n, ours, (uint32_t)expected, scratch, &status, &actual);
    size_t in_used = 0, out_n = 0;
    const enum libdeflate_result r = libdeflate_deflate_decompress_ex(ref, in, n, theirs, expected, &in_used, &out_n);
    const int ok_ld = r == LIBDEFLATE_SUCCESS && in_used == n && out_n == expected;
    const int ok_z = zlib_verdict(in, n, zl, expected);
    if (actual > expected) abort();
    if (ok_ld == ok_z && (status == ZI_OK) != ok_z) abort();
    if (status == ZI_OK && !ok_ld && !ok_z) abort();
    if (status == ZI_OK && ok_z && memcmp(ours, zl, expected) != 0) abort();
    if (status == ZI_OK && ok_ld && memcmp(ours, theirs, expected) != 0) abort();
    free(ours);
    free(theirs);
    free(zl);
    return 0;
}
