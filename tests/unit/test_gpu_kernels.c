/* zgpu's CUDA kernels against CPU references: unshuffle (byte and bit, blosc block rules), byte swap,
 * delta, crc32c / CRC32 / Adler-32 checks (lengths up to 8 MiB + 13, with a speed check), batched copy,
 * scatter/fill with strided, negative-stride and transposed layouts, the LZ4 decoder (liblz4's blocks and
 * corrupted ones against the same walk on the host); the launch configurations for this device's limits.
 * Skips (77) without a GPU or without CUDA support. */
#include "test.h"
#include "zgpu.h"

#ifndef ZGPU_HAVE_CUDA
TEST_MAIN_WITHOUT_CUDA()
#else
#include <cuda_runtime.h>
#include <time.h>
#include <lz4.h>
#include <lz4hc.h>
#include <zlib.h>

#include "codec/crc32c.h"
#include "gpucodec/blosc/blosc_parse.h"
#include "gpucodec/common/gpu_limits.h"
#include "gpucodec/deflate/inflate_gpu.h"
#include "gpucodec/deflate/inflate_rules.h"
#include "gpucodec/lz4/lz4_kernels.h"
#include "gpucodec/post/post_kernels.h"
#include "gpucodec/lz4/lz4_rules.h"
#include "gpucodec/zstd/zstd_rules.h"

static uint32_t rng = 12345;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}
static void fill_rand(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rnd();
}

static void *dup_to_dev(const void *h, size_t n) {
    void *d = NULL;
    CUOK(cudaMalloc(&d, n ? n : 1));
    if (n) CUOK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    return d;
}

static void test_unshuffle(void) {
    /* several chunks in one launch: blosc byte and bit shuffle with leftover blocks, numcodecs shuffle */
    enum { N = 6 };
    const uint32_t nbytes[N] = {10000, 4096, 777, 65536, 1000 * 3, 8 * 1000 + 5};
    const uint32_t ts[N] = {4, 2, 1, 8, 3, 8};
    const uint32_t bsz[N] = {1024, 4096, 777, 6000, 3000, 512};
    const uint32_t mode[N] = {1, 2, 1, 2, 1, 2};
    zg_k_unshuffle items[N];
    uint8_t *hsrc[N], *dsrc[N], *ddst[N];
    uint64_t maxn = 0;
    for (int c = 0; c < N; c++) {
        hsrc[c] = malloc(nbytes[c]);
        fill_rand(hsrc[c], nbytes[c]);
        dsrc[c] = dup_to_dev(hsrc[c], nbytes[c]);
        CUOK(cudaMalloc((void **)&ddst[c], nbytes[c]));
        CUOK(cudaMemset(ddst[c], 0xa5, nbytes[c]));
        items[c] = (zg_k_unshuffle){dsrc[c], ddst[c], nbytes[c], ts[c], bsz[c], mode[c], 2, 0};
        if (nbytes[c] > maxn) maxn = nbytes[c];
    }
    zg_k_unshuffle *ditems = dup_to_dev(items, sizeof items);
    CUOK(zg_k_unshuffle_launch(ditems, N, maxn, NULL, 0));
    CUOK(cudaDeviceSynchronize());
    for (int c = 0; c < N; c++) {
        zg_blosc_header h;
        memset(&h, 0, sizeof h);
        h.version = 2;
        h.typesize = (uint8_t)ts[c];
        h.nbytes = nbytes[c];
        h.blocksize = bsz[c];
        h.nblocks = (nbytes[c] + bsz[c] - 1) / bsz[c];
        h.leftover = nbytes[c] % bsz[c];
        h.shuffle = mode[c] == 1 ? (ts[c] > 1 ? ZG_BLOSC_SHUFFLE : ZG_BLOSC_NOSHUFFLE) : ZG_BLOSC_BITSHUFFLE;
        uint8_t *want = malloc(nbytes[c]), *got = malloc(nbytes[c]);
        zg_blosc_unshuffle_ref(&h, hsrc[c], want);
        CUOK(cudaMemcpy(got, ddst[c], nbytes[c], cudaMemcpyDeviceToHost));
        CHECK_MSG(memcmp(want, got, nbytes[c]) == 0, "unshuffle chunk %d (ts %u mode %u)", c, ts[c], mode[c]);
        free(want);
        free(got);
        free(hsrc[c]);
        cudaFree(dsrc[c]);
        cudaFree(ddst[c]);
    }
    cudaFree(ditems);
}

/* Byte unshuffle straight into the output (mapped items): two C-order chunks of 6 x 5 x 8 elements (2- and
 * 4-byte, blosc blocks of 80 / 160 bytes) placed at different corners of a 9 x 13 x 20 output, whose rows are
 * not contiguous between chunk rows; every other output byte must stay untouched. One chunk with a negative
 * middle stride (rows of plane k in reverse order). */
static void test_unshuffle_mapped(void) {
    for (int ts = 2; ts <= 4; ts += 2) {
        const uint32_t ch[3] = {6, 5, 8}, out_shape[3] = {9, 13, 20};
        const uint32_t ne = ch[0] * ch[1] * ch[2], nbytes = ne * (uint32_t)ts, bsize = 40 * (uint32_t)ts;
        const size_t out_n = (size_t)out_shape[0] * out_shape[1] * out_shape[2] * (size_t)ts;
        zg_k_row_map map;
        memset(&map, 0, sizeof map);
        map.ndim = 3;
        for (int d = 0; d < 3; d++) map.chunk[d] = ch[d];
        map.out_strides[0] = (int64_t)out_shape[1] * out_shape[2] * ts;
        map.out_strides[1] = (int64_t)out_shape[2] * ts;
        map.out_strides[2] = ts;
        uint8_t *hsrc = malloc(nbytes), *plain = malloc(nbytes), *want = malloc(out_n), *got = malloc(out_n);
        fill_rand(hsrc, nbytes);
        zg_blosc_header h;
        memset(&h, 0, sizeof h);
        h.version = 2;
        h.typesize = (uint8_t)ts;
        h.nbytes = nbytes;
        h.blocksize = bsize;
        h.nblocks = nbytes / bsize;
        h.shuffle = ZG_BLOSC_SHUFFLE;
        zg_blosc_unshuffle_ref(&h, hsrc, plain);
        memset(want, 0xa5, out_n);
        const uint32_t corner[2][3] = {{0, 0, 4}, {3, 8, 12}}; /* element coordinates of each chunk's origin */
        uint8_t *dsrc = dup_to_dev(hsrc, nbytes), *dout = NULL;
        CUOK(cudaMalloc((void **)&dout, out_n));
        CUOK(cudaMemset(dout, 0xa5, out_n));
        zg_k_unshuffle items[2];
        for (int c = 0; c < 2; c++) {
            const size_t base = ((size_t)corner[c][0] * out_shape[1] + corner[c][1]) * out_shape[2] + corner[c][2];
            items[c] = (zg_k_unshuffle){dsrc, dout + base * (size_t)ts, nbytes, (uint32_t)ts, bsize, 1, 2, 1};
            for (uint32_t e = 0; e < ne; e++) {
                const uint32_t x = e % ch[2], y = e / ch[2] % ch[1], z = e / ch[2] / ch[1];
                const size_t o = ((size_t)(corner[c][0] + z) * out_shape[1] + corner[c][1] + y) * out_shape[2] +
                                 corner[c][2] + x;
                memcpy(want + o * (size_t)ts, plain + (size_t)e * (size_t)ts, (size_t)ts);
            }
        }
        zg_k_unshuffle *ditems = dup_to_dev(items, sizeof items);
        CUOK(zg_k_unshuffle_launch(ditems, 2, nbytes, &map, 0));
        CUOK(cudaDeviceSynchronize());
        CUOK(cudaMemcpy(got, dout, out_n, cudaMemcpyDeviceToHost));
        CHECK_MSG(memcmp(want, got, out_n) == 0, "mapped unshuffle (ts %d): output differs", ts);
        /* negative middle stride: the chunk's rows of each plane in reverse order */
        map.out_strides[1] = -map.out_strides[1];
        memset(want, 0xa5, out_n);
        CUOK(cudaMemset(dout, 0xa5, out_n));
        const size_t base = ((size_t)2 * out_shape[1] + 12) * out_shape[2] + 8; /* row y at 12 - y */
        items[0] = (zg_k_unshuffle){dsrc, dout + base * (size_t)ts, nbytes, (uint32_t)ts, bsize, 1, 2, 1};
        for (uint32_t e = 0; e < ne; e++) {
            const uint32_t x = e % ch[2], y = e / ch[2] % ch[1], z = e / ch[2] / ch[1];
            const size_t o = ((size_t)(2 + z) * out_shape[1] + 12 - y) * out_shape[2] + 8 + x;
            memcpy(want + o * (size_t)ts, plain + (size_t)e * (size_t)ts, (size_t)ts);
        }
        CUOK(cudaMemcpy(ditems, items, sizeof items[0], cudaMemcpyHostToDevice));
        CUOK(zg_k_unshuffle_launch(ditems, 1, nbytes, &map, 0));
        CUOK(cudaDeviceSynchronize());
        CUOK(cudaMemcpy(got, dout, out_n, cudaMemcpyDeviceToHost));
        CHECK_MSG(memcmp(want, got, out_n) == 0, "mapped unshuffle (ts %d, negative stride): output differs", ts);
        cudaFree(ditems);
        cudaFree(dsrc);
        cudaFree(dout);
        free(hsrc);
        free(plain);
        free(want);
        free(got);
    }
}

static void test_inplace(void) {
    /* byte swap of 2/4/8-byte words and delta decode of 1/2/4/8-byte integers, 3 chunks each */
    const size_t sizes[3] = {8 * 1000, 8 * 70001, 8 * 3};
    for (int unit = 1; unit <= 8; unit *= 2) {
        zg_k_buf items[3];
        uint8_t *h[3], *d[3];
        for (int c = 0; c < 3; c++) {
            h[c] = malloc(sizes[c]);
            fill_rand(h[c], sizes[c]);
            d[c] = dup_to_dev(h[c], sizes[c]);
            items[c] = (zg_k_buf){d[c], sizes[c]};
        }
        zg_k_buf *di = dup_to_dev(items, sizeof items);
        if (unit > 1) {
            CUOK(zg_k_byteswap_launch(di, 3, sizes[1], unit, 0));
            CUOK(cudaDeviceSynchronize());
            for (int c = 0; c < 3; c++) {
                uint8_t *got = malloc(sizes[c]);
                CUOK(cudaMemcpy(got, d[c], sizes[c], cudaMemcpyDeviceToHost));
                int ok = 1;
                for (size_t w = 0; w < sizes[c] / (size_t)unit && ok; w++)
                    for (int k = 0; k < unit; k++)
                        if (got[w * unit + k] != h[c][w * unit + unit - 1 - k]) ok = 0;
                CHECK_MSG(ok, "byteswap unit %d chunk %d", unit, c);
                CUOK(cudaMemcpy(d[c], h[c], sizes[c], cudaMemcpyHostToDevice));
                free(got);
            }
        }
        CUOK(zg_k_delta_launch(di, 3, unit, 0));
        CUOK(cudaDeviceSynchronize());
        for (int c = 0; c < 3; c++) {
            uint8_t *got = malloc(sizes[c]);
            CUOK(cudaMemcpy(got, d[c], sizes[c], cudaMemcpyDeviceToHost));
            uint64_t acc = 0;
            int ok = 1;
            for (size_t e = 0; e < sizes[c] / (size_t)unit && ok; e++) {
                uint64_t v = 0, g = 0;
                memcpy(&v, h[c] + e * unit, (size_t)unit);
                memcpy(&g, got + e * unit, (size_t)unit);
                acc += v;
                uint64_t mask = unit == 8 ? ~0ull : ((1ull << (8 * unit)) - 1);
                if ((acc & mask) != g) ok = 0;
            }
            CHECK_MSG(ok, "delta elemsize %d chunk %d", unit, c);
            free(got);
            free(h[c]);
            cudaFree(d[c]);
        }
        cudaFree(di);
    }
}

static void test_crc_and_copy(void) {
    enum { N = 4 };
    const size_t n[N] = {4, 100, 100000, 5};
    zg_k_buf items[N];
    uint8_t *d[N];
    for (int c = 0; c < N; c++) {
        uint8_t *h = malloc(n[c]);
        fill_rand(h, n[c]);
        uint32_t crc = zg_crc32c(0, h, n[c] - 4);
        if (c == 2) crc ^= 1; /* one corrupt chunk */
        h[n[c] - 4] = (uint8_t)crc;
        h[n[c] - 3] = (uint8_t)(crc >> 8);
        h[n[c] - 2] = (uint8_t)(crc >> 16);
        h[n[c] - 1] = (uint8_t)(crc >> 24);
        d[c] = dup_to_dev(h, n[c]);
        items[c] = (zg_k_buf){d[c], n[c]};
        free(h);
    }
    zg_k_buf *di = dup_to_dev(items, sizeof items);
    int *dst;
    CUOK(cudaMalloc((void **)&dst, N * sizeof(int)));
    CUOK(cudaMemset(dst, 0, N * sizeof(int)));
    CUOK(zg_k_crc32c_launch(di, N, dst, 0));
    int st[N];
    CUOK(cudaMemcpy(st, dst, sizeof st, cudaMemcpyDeviceToHost));
    CHECK(st[0] == 0 && st[1] == 0 && st[2] == 1 && st[3] == 0);
    /* batched copy with odd alignments */
    uint8_t *hs = malloc(300000), *got = malloc(300000);
    fill_rand(hs, 300000);
    uint8_t *ds = dup_to_dev(hs, 300000), *dd;
    CUOK(cudaMalloc((void **)&dd, 300000));
    CUOK(cudaMemset(dd, 0, 300000));
    zg_k_copy cp[3] = {{ds, dd, 100000}, {ds + 100001, dd + 100003, 99990}, {ds + 200000, dd + 200000, 7}};
    zg_k_copy *dcp = dup_to_dev(cp, sizeof cp);
    CUOK(zg_k_copy_launch(dcp, 3, 100000, 0));
    CUOK(cudaMemcpy(got, dd, 300000, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got, hs, 100000) == 0 && memcmp(got + 100003, hs + 100001, 99990) == 0 &&
          memcmp(got + 200000, hs + 200000, 7) == 0 && got[100000] == 0);
    for (int c = 0; c < N; c++) cudaFree(d[c]);
    cudaFree(di); cudaFree(dst); cudaFree(ds); cudaFree(dd); cudaFree(dcp);
    free(hs); free(got);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_checksums(void) {
    /* gzip CRC32, zlib Adler-32, zstd's XXH64 (zg_k_check_launch) and the crc32c codec (zg_k_crc32c_launch) in one launch
     * each over buffers of many lengths (ranges of the parallel split: empty, shorter than one range, not a
     * multiple of 16, exactly/around 4 KiB, 1 MiB, 8 MiB + 13) at several alignments, against zlib and
     * zg_crc32c on the CPU. Every third item expects a wrong value and must be flagged. */
    const size_t lens[] = {0, 1, 3, 4095, 4096, 4097, 255, 256, 257, 5552, 5553, 1u << 20, (8u << 20) + 13};
    enum { NL = sizeof lens / sizeof lens[0], NA = 3, NI = NL * NA };
    const size_t aligns[NA] = {0, 1, 7};
    zg_k_check items[NI * 3];
    zg_k_buf citems[NI];
    int want[NI * 3], cwant[NI];
    uint8_t *d[NI];
    size_t k = 0;
    for (size_t li = 0; li < NL; li++)
        for (size_t ai = 0; ai < NA; ai++, k++) {
            const size_t n = lens[li], al = aligns[ai];
            uint8_t *h = malloc(n + 4 + al);
            fill_rand(h, n + 4 + al);
            if (li == NL - 2 && ai == 0) memset(h, 0xff, n + 4 + al); /* large sums: the Adler-32 reductions */
            const uint8_t *data = h + al;
            uint32_t crc = (uint32_t)crc32(0, data, (uInt)n), ad = (uint32_t)adler32(1, data, (uInt)n);
            uint32_t cc = zg_crc32c(0, data, n), xx = (uint32_t)zd_xxh64(data, n);
            int wrong = (int)(k % 3 == 1), cwrong = (int)(k % 3 == 2);
            /* the crc32c buffer is data + 4 trailing bytes holding the (possibly wrong) checksum */
            uint32_t cstore = cwrong ? cc ^ (1u << (k % 32)) : cc;
            h[al + n] = (uint8_t)cstore;
            h[al + n + 1] = (uint8_t)(cstore >> 8);
            h[al + n + 2] = (uint8_t)(cstore >> 16);
            h[al + n + 3] = (uint8_t)(cstore >> 24);
            d[k] = dup_to_dev(h, n + 4 + al);
            items[3 * k] = (zg_k_check){d[k] + al, n, wrong ? crc ^ 0x80000000u : crc, 1};
            items[3 * k + 1] = (zg_k_check){d[k] + al, n, wrong ? (ad == 1 ? 2u : ad - 1) : ad, 2};
            items[3 * k + 2] = (zg_k_check){d[k] + al, n, wrong ? xx ^ 0x00010000u : xx, 3};
            want[3 * k] = want[3 * k + 1] = want[3 * k + 2] = wrong;
            citems[k] = (zg_k_buf){d[k] + al, n + 4};
            cwant[k] = cwrong;
            free(h);
        }
    zg_k_check *di = dup_to_dev(items, sizeof items);
    zg_k_buf *dci = dup_to_dev(citems, sizeof citems);
    int *dst, *dcst, st[NI * 3], cst[NI];
    CUOK(cudaMalloc((void **)&dst, sizeof st));
    CUOK(cudaMalloc((void **)&dcst, sizeof cst));
    CUOK(cudaMemset(dst, 0, sizeof st));
    CUOK(cudaMemset(dcst, 0, sizeof cst));
    CUOK(zg_k_check_launch(di, NI * 3, dst, 0));
    CUOK(zg_k_crc32c_launch(dci, NI, dcst, 0));
    CUOK(cudaDeviceSynchronize());
    CUOK(cudaMemcpy(st, dst, sizeof st, cudaMemcpyDeviceToHost));
    CUOK(cudaMemcpy(cst, dcst, sizeof cst, cudaMemcpyDeviceToHost));
    for (size_t q = 0; q < NI * 3; q++)
        CHECK_MSG(st[q] == want[q], "checksum item %zu (kind %d, %zu bytes, align %zu): flag %d, want %d", q,
                  items[q].kind, (size_t)items[q].n, aligns[(q / 3) % NA], st[q], want[q]);
    for (size_t q = 0; q < NI; q++)
        CHECK_MSG(cst[q] == cwant[q], "crc32c item %zu (%zu bytes, align %zu): flag %d, want %d", q,
                  (size_t)citems[q].n, aligns[q % NA], cst[q], cwant[q]);
    /* unknown kind is flagged; buffers shorter than 4 bytes fail the crc32c codec */
    zg_k_check odd = {d[0], 0, 0, 9};
    zg_k_buf shorts[2] = {{d[3], 3}, {d[3], 0}};
    zg_k_check *dodd = dup_to_dev(&odd, sizeof odd);
    zg_k_buf *dshort = dup_to_dev(shorts, sizeof shorts);
    CUOK(cudaMemset(dst, 0, sizeof st));
    CUOK(zg_k_check_launch(dodd, 1, dst, 0));
    CUOK(zg_k_crc32c_launch(dshort, 2, dst + 1, 0));
    CUOK(cudaMemcpy(st, dst, 3 * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(st[0] == 1 && st[1] == 1 && st[2] == 1);
    cudaFree(dodd);
    cudaFree(dshort);
    for (size_t q = 0; q < NI; q++) cudaFree(d[q]);
    cudaFree(di);
    cudaFree(dci);
    cudaFree(dcst);

    /* large chunks: 16 of 8 MiB (the case that took ~1 s with one thread per chunk) */
    enum { NB = 16 };
    const size_t big = 8u << 20;
    uint8_t *h = malloc(big), *dbig;
    fill_rand(h, big);
    uint32_t crc = (uint32_t)crc32(0, h, (uInt)big), ad = (uint32_t)adler32(1, h, (uInt)big);
    CUOK(cudaMalloc((void **)&dbig, big * NB));
    for (int c = 0; c < NB; c++) CUOK(cudaMemcpy(dbig + (size_t)c * big, h, big, cudaMemcpyHostToDevice));
    zg_k_check bi[NB * 2];
    zg_k_buf bc[NB];
    for (int c = 0; c < NB; c++) {
        bi[2 * c] = (zg_k_check){dbig + (size_t)c * big, big, crc, 1};
        bi[2 * c + 1] = (zg_k_check){dbig + (size_t)c * big, big, ad, 2};
        bc[c] = (zg_k_buf){dbig + (size_t)c * big, big}; /* the last 4 bytes are random: all must be flagged */
    }
    zg_k_check *dbi = dup_to_dev(bi, sizeof bi);
    zg_k_buf *dbc = dup_to_dev(bc, sizeof bc);
    int bst[NB * 3];
    CUOK(cudaMemset(dst, 0, sizeof st));
    CUOK(zg_k_check_launch(dbi, NB * 2, dst, 0)); /* warm-up */
    CUOK(cudaDeviceSynchronize());
    double t0 = now_s();
    CUOK(zg_k_check_launch(dbi, NB * 2, dst, 0));
    CUOK(cudaDeviceSynchronize());
    double t1 = now_s();
    CUOK(zg_k_crc32c_launch(dbc, NB, dst + NB * 2, 0));
    CUOK(cudaDeviceSynchronize());
    double t2 = now_s();
    CUOK(cudaMemcpy(bst, dst, sizeof bst, cudaMemcpyDeviceToHost));
    int ok = 1;
    for (int q = 0; q < NB * 2; q++) ok &= bst[q] == 0;
    for (int q = NB * 2; q < NB * 3; q++) ok &= bst[q] == 1;
    CHECK_MSG(ok, "16 x 8 MiB checksums: wrong flags");
    /* timing is reported, not asserted: speed targets live in bench/ */
    printf("checksums of 16 x 8 MiB: CRC32 + Adler-32 %.2f ms, CRC32C %.2f ms\n", (t1 - t0) * 1e3, (t2 - t1) * 1e3);
    free(h);
    cudaFree(dbig);
    cudaFree(dbi);
    cudaFree(dbc);
    cudaFree(dst);
}

/* CPU reference of one scatter item */
static void scatter_ref(int nd, size_t isz, const uint64_t *cnt, uint8_t *dst, const int64_t *ds, const uint8_t *src,
                        const int64_t *ss, const uint8_t *fill) {
    uint64_t idx[ZGPU_MAX_DIMS] = {0}, total = 1;
    for (int d = 0; d < nd; d++) total *= cnt[d];
    for (uint64_t e = 0; e < total; e++) {
        int64_t so = 0, dof = 0;
        for (int d = 0; d < nd; d++) { so += (int64_t)idx[d] * ss[d]; dof += (int64_t)idx[d] * ds[d]; }
        memcpy(dst + dof, src ? src + so : fill, isz);
        for (int d = nd - 1; d >= 0; d--) { if (++idx[d] < cnt[d]) break; idx[d] = 0; }
    }
}

static void test_scatter(void) {
    /* output box 13 x 17 x W of itemsize isz; chunks 5 x 6 x 7 stored C order (or transposed);
     * output strides: C order, F order, and C order with axis 1 reversed (negative stride). W = 7: the chunks' last
     * two axes lie alike in the output (C order), which the kernel copies as one row (an RGB image's samples) */
    const uint64_t ch[3] = {5, 6, 7}, widths[2] = {19, 7};
    const size_t isizes[4] = {1, 2, 4, 8};
    for (int wi = 0; wi < 2; wi++)
    for (int li = 0; li < 4; li++) for (int layout = 0; layout < 3; layout++) for (int tr = 0; tr < 2; tr++) {
        const uint64_t box[3] = {13, 17, widths[wi]}, W = box[2];
        size_t isz = isizes[li];
        size_t out_n = box[0] * box[1] * box[2] * isz;
        int64_t ds[3];
        if (layout == 0) { ds[2] = (int64_t)isz; ds[1] = ds[2] * (int64_t)W; ds[0] = ds[1] * 17; }
        else if (layout == 1) { ds[0] = (int64_t)isz; ds[1] = ds[0] * 13; ds[2] = ds[1] * 17; }
        else { ds[2] = (int64_t)isz; ds[1] = -(int64_t)isz * (int64_t)W; ds[0] = (int64_t)isz * (int64_t)W * 17; }
        int64_t base = layout == 2 ? (int64_t)isz * (int64_t)W * 16 : 0;
        /* chunk strides: C order, or a transposed buffer (axes stored as 2,0,1) */
        int64_t ss[3];
        if (!tr) { ss[2] = (int64_t)isz; ss[1] = ss[2] * 7; ss[0] = ss[1] * 6; }
        else { ss[1] = (int64_t)isz; ss[0] = ss[1] * 6; ss[2] = ss[0] * 5; }
        size_t chunk_n = 5 * 6 * 7 * isz;
        uint64_t nc[3];
        for (int d = 0; d < 3; d++) nc[d] = (box[d] + ch[d] - 1) / ch[d];
        size_t nchunks = (size_t)(nc[0] * nc[1] * nc[2]);
        uint8_t *hchunks = malloc(nchunks * chunk_n), *want = malloc(out_n), *got = malloc(out_n);
        fill_rand(hchunks, nchunks * chunk_n);
        uint8_t *dchunks = dup_to_dev(hchunks, nchunks * chunk_n), *dout;
        CUOK(cudaMalloc((void **)&dout, out_n));
        memset(want, 0x5a, out_n);
        CUOK(cudaMemset(dout, 0x5a, out_n));
        uint8_t fill[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        uint8_t *dfill = dup_to_dev(fill, 8);
        zg_k_scatter items[27];
        uint64_t cnt[27 * 3], max_rows = 0;
        size_t k = 0;
        for (uint64_t a = 0; a < nc[0]; a++) for (uint64_t b = 0; b < nc[1]; b++) for (uint64_t c = 0; c < nc[2]; c++, k++) {
            uint64_t o[3] = {a * 5, b * 6, c * 7};
            for (int d = 0; d < 3; d++) {
                uint64_t end = o[d] + ch[d] < box[d] ? o[d] + ch[d] : box[d];
                cnt[k * 3 + d] = end - o[d];
            }
            /* select from chunk element (1,0,2) onwards where it fits: exercises in-chunk offsets */
            uint64_t in0 = a == 0 ? 1 : 0;
            if (in0 && cnt[k * 3] > 1) cnt[k * 3] -= 1; else in0 = 0;
            uint8_t *dst = dout + base;
            int64_t doff = base;
            for (int d = 0; d < 3; d++) doff += (int64_t)(o[d] + (d == 0 ? in0 : 0)) * ds[d];
            dst = dout + doff;
            const uint8_t *src = (k % 5 == 3) ? NULL : dchunks + k * chunk_n + (int64_t)in0 * ss[0];
            items[k] = (zg_k_scatter){src, dst};
            scatter_ref(3, isz, cnt + k * 3, want + doff, ds, src ? hchunks + k * chunk_n + (int64_t)in0 * ss[0] : NULL, ss, fill);
            uint64_t rows = cnt[k * 3] * cnt[k * 3 + 1];
            if (rows > max_rows) max_rows = rows;
        }
        zg_k_scatter_params p;
        memset(&p, 0, sizeof p);
        p.ndim = 3;
        p.itemsize = (int)isz;
        memcpy(p.src_strides, ss, sizeof ss);
        memcpy(p.dst_strides, ds, sizeof ds);
        p.d_fill = dfill;
        zg_k_scatter *di = dup_to_dev(items, sizeof items);
        uint64_t *dc = dup_to_dev(cnt, sizeof cnt);
        CUOK(zg_k_scatter_launch(&p, di, dc, k, max_rows, 0));
        CUOK(cudaMemcpy(got, dout, out_n, cudaMemcpyDeviceToHost));
        CHECK_MSG(memcmp(got, want, out_n) == 0, "scatter width %llu itemsize %zu layout %d transposed %d",
                  (unsigned long long)W, isz, layout, tr);
        cudaFree(di); cudaFree(dc); cudaFree(dchunks); cudaFree(dout); cudaFree(dfill);
        free(hchunks); free(want); free(got);
    }
}

/* The LZ4 decoder kernel on one batch: blocks from liblz4 (fast and HC) of noisy ramps, one-byte runs (matches
 * longer than the shared window), repeats 10-60 KB back (offsets past it), incompressible bytes (literal runs
 * longer than the ring), a one-literal block, and corrupted variants of some of them (bytes flipped, cut
 * short). Each block's status, size and bytes must equal those of the same walk run on the host, and the guard
 * bytes after each output buffer stay untouched. */
static void test_lz4_decode(void) {
    enum { N = 150000, MUT = 300, GUARD = 64 };
    uint8_t *src[5];
    for (int k = 0; k < 5; k++) src[k] = malloc(N);
    for (size_t i = 0; i < N; i++) {
        const uint32_t r = rnd();
        src[0][i] = (uint8_t)(i / 7 + (r & 3));
        src[1][i] = (uint8_t)((i / 20000) * 3 + (i % 50000 == 0 ? r : 0));
        src[3][i] = (uint8_t)r;
    }
    for (size_t i = 0; i < N; i++) /* blocks of 10-60 KB repeated with a few changes */
        src[2][i] = i < 60000 ? (uint8_t)rnd()
                              : (uint8_t)(src[2][i - 10000 - (i / 7919 % 6) * 10000] ^ (rnd() % 97 == 0));
    for (size_t i = 0; i < N; i++) /* periods of 3 bytes, 2000 long: overlapping matches inside the window */
        src[4][i] = (i / 2000) % 2 ? (uint8_t)("abc"[i % 3]) : (uint8_t)rnd();
    const int cap = LZ4_compressBound(N);
    enum { NB = 2 * 5 + 1 + MUT };
    uint8_t *blk[NB];
    size_t blen[NB], want[NB];
    int nb = 0;
    for (int k = 0; k < 5; k++)
        for (int hc = 0; hc < 2; hc++) {
            blk[nb] = calloc((size_t)cap + 16, 1); /* (16 bytes of slack: see below) */
            const int cn = hc ? LZ4_compress_HC((const char *)src[k], (char *)blk[nb], N, cap, 9)
                              : LZ4_compress_default((const char *)src[k], (char *)blk[nb], N, cap);
            CHECK(cn > 0);
            blen[nb] = (size_t)cn;
            want[nb++] = N;
        }
    blk[nb] = calloc(2 + 16, 1);
    blk[nb][0] = 0x10;
    blk[nb][1] = 'z';
    blen[nb] = 2;
    want[nb++] = 1;
    for (int m = 0; m < MUT; m++) { /* corrupted copies of the fast blocks of sources 0-2 */
        const int from = 2 * (m % 3);
        blk[nb] = calloc(blen[from] + 16, 1);
        memcpy(blk[nb], blk[from], blen[from]);
        blen[nb] = blen[from];
        const size_t at = rnd() % blen[from];
        if (m % 4 == 3) blen[nb] = at + 1;
        else blk[nb][at] ^= (uint8_t)(1 + rnd() % 255);
        want[nb++] = N;
    }
    /* device batch: inputs, and outputs of exactly the expected size followed by guard bytes */
    const void **din = malloc(nb * sizeof *din);
    void **dout = malloc(nb * sizeof *dout);
    for (int i = 0; i < nb; i++) {
        din[i] = dup_to_dev(blk[i], blen[i] + 16); /* (the ring's copies may read 15 bytes past a block) */
        CUOK(cudaMalloc(&dout[i], want[i] + GUARD));
        CUOK(cudaMemset(dout[i], 0xa5, want[i] + GUARD));
    }
    void *d_in = dup_to_dev(din, nb * sizeof *din), *d_out = dup_to_dev(dout, nb * sizeof *dout);
    void *d_inb = dup_to_dev(blen, nb * sizeof *blen), *d_want = dup_to_dev(want, nb * sizeof *want);
    size_t *d_act;
    int *d_st;
    CUOK(cudaMalloc((void **)&d_act, nb * sizeof *d_act));
    CUOK(cudaMalloc((void **)&d_st, nb * sizeof *d_st));
    CUOK(zg_k_lz4_decode_launch((const void *const *)d_in, (const size_t *)d_inb, (void *const *)d_out,
                                (const size_t *)d_want, d_act, d_st, (size_t)nb, 0));
    CUOK(cudaDeviceSynchronize());
    size_t act[NB];
    int st[NB];
    CUOK(cudaMemcpy(act, d_act, sizeof act, cudaMemcpyDeviceToHost));
    CUOK(cudaMemcpy(st, d_st, sizeof st, cudaMemcpyDeviceToHost));
    uint8_t *got = malloc(N + GUARD), *ref = malloc(N);
    int valid = 0, rejected = 0;
    for (int i = 0; i < nb; i++) {
        CUOK(cudaMemcpy(got, dout[i], want[i] + GUARD, cudaMemcpyDeviceToHost));
        size_t ip, op;
        const int e = zg_lz4_walk(blk[i], blen[i], want[i], ref, &ip, &op);
        CHECK_MSG(st[i] == e, "LZ4 block %d: GPU status %d, host walk %d", i, st[i], e);
        if (i < 10) CHECK_MSG(e == 0 && memcmp(ref, src[i / 2], N) == 0, "LZ4 block %d: liblz4's block", i);
        if (!e) {
            valid++;
            CHECK_MSG(act[i] == want[i] && memcmp(got, ref, want[i]) == 0, "LZ4 block %d: GPU bytes differ", i);
        } else {
            rejected++;
        }
        int guard_ok = 1;
        for (int g = 0; g < GUARD; g++) guard_ok &= got[want[i] + g] == 0xa5;
        CHECK_MSG(guard_ok, "LZ4 block %d: written past its output", i);
    }
    CHECK(valid >= 11 && rejected > MUT / 5);
    printf("LZ4 decoder: %d blocks, %d decoded as on the host, %d rejected with the host's error\n", nb, valid,
           rejected);
    for (int i = 0; i < nb; i++) {
        cudaFree((void *)din[i]);
        cudaFree(dout[i]);
        free(blk[i]);
    }
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_inb);
    cudaFree(d_want);
    cudaFree(d_act);
    cudaFree(d_st);
    free(din);
    free(dout);
    free(got);
    free(ref);
    for (int k = 0; k < 5; k++) free(src[k]);
}

/* This device's limits as the launch code reads them, every launch configuration valid for them, and the DEFLATE
 * decoder's verdict; on an H100 (sm_90, 132 SMs) the occupancy the decoder was tuned with (3 blocks an SM, 6 in
 * serial mode), seen through the parts it picks. */
static void test_launch_limits(void) {
    zg_gpu_limits L;
    CHECK(zg_gpu_limits_current(&L) == cudaSuccess);
    int dev = 0;
    struct cudaDeviceProp p;
    CUOK(cudaGetDevice(&dev));
    CUOK(cudaGetDeviceProperties(&p, dev));
    CHECK(L.sm_count == p.multiProcessorCount && L.cc_major == p.major && L.cc_minor == p.minor);
    CHECK(L.max_threads_per_sm == p.maxThreadsPerMultiProcessor && L.smem_per_sm == p.sharedMemPerMultiprocessor);
    CHECK(L.smem_per_block_optin >= L.smem_per_block && L.max_grid_y >= 65535 && L.warp_size == 32);
    printf("  device sm_%d%d, %d SMs, %d threads an SM, %u / %u / %u bytes of shared memory a block / opt-in / SM\n",
           L.cc_major, L.cc_minor, L.sm_count, L.max_threads_per_sm, L.smem_per_block, L.smem_per_block_optin,
           L.smem_per_sm);
    zg_lc_dims d[3] = {zg_lc_scatter(&L, 512, 4096), zg_lc_copy(&L, 100000, 1u << 24), zg_lc_lz4_decode(&L, 1000)};
    for (int i = 0; i < 3; i++) CHECK(zg_lc_dims_ok(&L, &d[i]));
    zg_lc_zstd z;
    char why[256] = "";
    CHECK_MSG(zg_lc_zstd_config(&L, 2816, 22, &z, why, sizeof why) == 0, "%s", why);
    const cudaError_t e = zg_inflate_device_check(why, sizeof why);
    if (L.smem_per_block_optin >= sizeof(zi_shared) + ZI_PARTS_KERNEL_SHARED) {
        CHECK_MSG(e == cudaSuccess, "%s", why);
    } else {
        CHECK(e == cudaErrorNotSupported && strstr(why, "shared memory") != NULL);
        printf("  DEFLATE decoder: %s\n", why);
    }
    if (L.cc_major == 9 && L.cc_minor == 0 && L.sm_count == 132) {
        CHECK_EQ_U64(zg_inflate_parts(50, 8u << 20, SIZE_MAX, 0, 0), 7);  /* 132 x 3 / 50 */
        CHECK_EQ_U64(zg_inflate_parts(100, 1u << 20, SIZE_MAX, 1, 0), 7); /* 132 x 6 / 100 */
        CHECK_EQ_U64(zg_inflate_parts(22, 8u << 20, SIZE_MAX, 0, 0), 12);
    }
}

int main(void) {
    if (!zgpu_gpu_available()) {
        printf("skipped: no GPU (%s)\n", zgpu_last_error());
        return 77;
    }
    test_unshuffle();
    test_unshuffle_mapped();
    test_inplace();
    test_crc_and_copy();
    test_checksums();
    test_scatter();
    test_lz4_decode();
    test_launch_limits();
    TEST_MAIN_END();
}
#endif
