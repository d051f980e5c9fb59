/* Every kernel's launch configuration (src/gpucodec/common/launch_config.h) for the published limits of every
 * architecture the library is built for, without a GPU: blocks within the device's limits (threads, registers,
 * shared memory), at least one block an SM, grids within the device's, and on an H100 (sm_90, 132 SMs) exactly
 * the values the kernels were tuned with. Limits: CUDA C++ Programming Guide, "Technical Specifications per
 * Compute Capability"; SM counts of one product each. */
#include "gpucodec/common/launch_config.h"
#include "gpucodec/deflate/inflate_rules.h"
#include "test.h"

typedef struct arch {
    const char *name, *gpu;
    zg_gpu_limits L;
} arch;

/* smem in KiB; reserved: the system's shared memory per block (none on Turing) */
static arch make(const char *name, const char *gpu, int major, int minor, int sms, int threads_sm, int blocks_sm,
                 uint32_t smem_sm_k, uint32_t optin_k, uint32_t reserved) {
    arch a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.gpu = gpu;
    a.L.cc_major = major;
    a.L.cc_minor = minor;
    a.L.sm_count = sms;
    a.L.warp_size = 32;
    a.L.max_threads_per_block = 1024;
    a.L.max_threads_per_sm = threads_sm;
    a.L.max_blocks_per_sm = blocks_sm;
    a.L.regs_per_sm = a.L.regs_per_block = 65536;
    a.L.smem_per_block = 48u << 10;
    a.L.smem_per_block_optin = optin_k << 10;
    a.L.smem_per_sm = smem_sm_k << 10;
    a.L.smem_reserved_per_block = reserved;
    a.L.max_grid_x = 0x7fffffffu;
    a.L.max_grid_y = 65535;
    return a;
}

#define N_ARCHS 9
static arch archs[N_ARCHS];
static void setup(void) {
    int i = 0;
    archs[i++] = make("sm_75", "T4", 7, 5, 40, 1024, 16, 64, 64, 0);
    archs[i++] = make("sm_80", "A100", 8, 0, 108, 2048, 32, 164, 163, 1024);
    archs[i++] = make("sm_86", "RTX 3090", 8, 6, 82, 1536, 16, 100, 99, 1024);
    archs[i++] = make("sm_89", "L4", 8, 9, 58, 1536, 24, 100, 99, 1024);
    archs[i++] = make("sm_89", "RTX 4090", 8, 9, 128, 1536, 24, 100, 99, 1024);
    archs[i++] = make("sm_90", "H100", 9, 0, 132, 2048, 32, 228, 227, 1024);
    archs[i++] = make("sm_100", "B200", 10, 0, 148, 2048, 32, 228, 227, 1024);
    archs[i++] = make("sm_120", "RTX 5090", 12, 0, 170, 1536, 32, 128, 99, 1024);
    archs[i++] = make("sm_120", "RTX PRO 6000", 12, 0, 188, 1536, 32, 128, 99, 1024);
}

/* A launch of a block of kernel k's shape: valid dims and the block runs on the device. */
static void check_launch(const arch *a, const char *what, const zg_lc_dims *d, uint32_t regs, uint32_t static_smem) {
    CHECK_MSG(zg_lc_dims_ok(&a->L, d), "%s %s: grid %u x %u, %u threads", a->name, what, d->grid_x, d->grid_y,
              d->threads);
    CHECK_MSG(d->threads % 32 == 0 && d->threads <= 1024, "%s %s: %u threads", a->name, what, d->threads);
    const zg_lc_kernel k = {d->threads, regs, static_smem, d->smem};
    char why[200] = "";
    CHECK_MSG(zg_lc_fits(&a->L, &k, why, sizeof why), "%s %s: %s", a->name, what, why);
    CHECK_MSG(zg_lc_blocks_per_sm(&a->L, &k) >= 1, "%s %s: no block fits an SM", a->name, what);
}

/* The stage kernels: 256 threads (no launch bounds: up to 255 registers), the checksums 1024 (at most 64). */
static void test_post(const arch *a) {
    static const struct {
        size_t n;
        uint64_t max;
    } cases[] = {{1, 0}, {1, 1}, {7, 4096}, {64, 16u << 20}, {100000, 1ull << 30}, {1u << 20, 1ull << 40}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t n = cases[c].n;
        const uint64_t m = cases[c].max;
        zg_lc_dims d = zg_lc_copy(&a->L, n, m);
        check_launch(a, "copy", &d, 255, 0);
        d = zg_lc_unshuffle(&a->L, n, m);
        check_launch(a, "unshuffle", &d, 255, 0);
        for (int unit = 2; unit <= 16; unit *= 2) {
            d = zg_lc_byteswap(&a->L, n, m, unit);
            check_launch(a, "byteswap", &d, 255, 0);
        }
        d = zg_lc_delta(&a->L, n);
        check_launch(a, "delta", &d, 255, ZG_LC_DELTA_SMEM);
        d = zg_lc_checksum(&a->L, n);
        check_launch(a, "checksum", &d, 64, ZG_LC_CHECK_SMEM);
        d = zg_lc_scatter(&a->L, n, m > 0xffffffffu ? 0xffffffffu : m);
        check_launch(a, "scatter", &d, 255, 0);
        d = zg_lc_lz4_check(&a->L, n);
        check_launch(a, "lz4 check", &d, 255, 0);
        d = zg_lc_lz4_decode(&a->L, n);
        check_launch(a, "lz4 decode", &d, 255, ZG_LC_LZ4_DECODE_SMEM);
        d = zg_lc_lzw_decode(&a->L, n);
        check_launch(a, "lzw decode", &d, 255, ZG_LC_LZW_DECODE_SMEM);
        d = zg_lc_lzw_bounds(&a->L, n);
        check_launch(a, "lzw bounds", &d, 128, 0); /* (512 threads: launch bounds cap a thread at 128) */
        d = zg_lc_lzw_lengths(&a->L, n);
        check_launch(a, "lzw lengths", &d, 255, ZG_LC_LZW_LENGTHS_SMEM);
        d = zg_lc_packbits_decode(&a->L, n);
        check_launch(a, "packbits decode", &d, 255, ZG_LC_PACKBITS_SMEM);
        d = zg_lc_rows(&a->L, n, m > 0xffffffffu ? 0xffffffffu : m);
        check_launch(a, "predictor rows", &d, 255, 0);
    }
}

static void test_zstd(const arch *a) {
    static const uint32_t cases[][2] = {{1, 1}, {64, 1}, {2816, 22}, {100000, 512}, {1u << 22, 1u << 16}};
    zg_lc_kernel k[6];
    zg_lc_zstd_kernels(k);
    static const char *const names[6] = {"K1", "K1h", "K2", "K3a", "K3b", "K4"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        zg_lc_zstd z;
        char why[200] = "";
        CHECK_MSG(zg_lc_zstd_config(&a->L, cases[c][0], cases[c][1], &z, why, sizeof why) == 0, "%s zstd: %s",
                  a->name, why);
        const zg_lc_dims *d[6] = {&z.k1, &z.k1h, &z.k2, &z.k3a, &z.k3b, &z.k4};
        for (int i = 0; i < 6; i++) check_launch(a, names[i], d[i], k[i].regs, k[i].static_smem);
        /* a thread block per zstd block (K3b's tickets count on it), a thread per frame */
        CHECK_EQ_U64(z.k1.grid_x, cases[c][0]);
        CHECK_EQ_U64(z.k3b.grid_x, cases[c][0]);
        CHECK_EQ_U64((uint64_t)z.k2.grid_x * z.k2.threads >= cases[c][1], 1);
    }
    /* K3a's __launch_bounds__(32, 16): 16 blocks an SM fit every architecture */
    CHECK_MSG(zg_lc_blocks_per_sm(&a->L, &k[3]) >= 16, "%s K3a: %d blocks an SM", a->name,
              zg_lc_blocks_per_sm(&a->L, &k[3]));
}

/* The DEFLATE decoder's two block shapes: ZI_NL threads with a zi_shared, ZI_SERIAL_NL with ZI_SERIAL_SHARED, both
 * with the parts kernel's static shared memory, at the registers of __launch_bounds__(ZI_NL, ZI_BLOCKS_PER_SM). */
static zg_lc_kernel inflate_full(void) {
    const uint32_t regs = 65536u / (ZI_NL * ZI_BLOCKS_PER_SM) / 8u * 8u; /* (80) */
    const zg_lc_kernel k = {ZI_NL, regs, ZI_PARTS_KERNEL_SHARED, (uint32_t)sizeof(zi_shared)};
    return k;
}
static zg_lc_kernel inflate_serial(void) {
    zg_lc_kernel k = inflate_full();
    k.threads = ZI_SERIAL_NL;
    k.dynamic_smem = (uint32_t)ZI_SERIAL_SHARED;
    return k;
}

static void test_inflate(const arch *a) {
    const zg_lc_kernel full = inflate_full(), serial = inflate_serial();
    const zg_lc_inflate_dev d = zg_lc_inflate_device(&a->L, &full, &serial, 0, 0);
    printf("  %-6s %-12s %3d SMs: DEFLATE %s", a->name, a->gpu, a->L.sm_count, d.ok ? "runs" : "host");
    if (d.ok) printf(", %d blocks an SM, %d serial-mode", d.per_sm, d.per_sm_serial);
    printf("\n");
    if (a->L.smem_per_block_optin < full.static_smem + full.dynamic_smem) { /* Turing: 64 KiB a block */
        CHECK_MSG(!d.ok && strstr(d.why, "shared memory") != NULL, "%s: %s", a->name, d.why);
        return;
    }
    CHECK_MSG(d.ok, "%s: %s", a->name, d.why);
    CHECK(d.per_sm >= 1 && d.per_sm_serial >= d.per_sm);
    CHECK(d.per_sm <= ZI_BLOCKS_PER_SM);
    CHECK((uint64_t)d.per_sm * (full.static_smem + full.dynamic_smem + a->L.smem_reserved_per_block) <=
          a->L.smem_per_sm);
    CHECK((uint64_t)d.per_sm_serial * (serial.static_smem + serial.dynamic_smem + a->L.smem_reserved_per_block) <=
          a->L.smem_per_sm);
    static const size_t ns[] = {1, 3, 22, 64, 512, 100000};
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        const size_t n = ns[c];
        for (int s = 0; s < 2; s++) {
            const size_t P = zg_lc_inflate_parts(&d, n, s, 0, ZI_MAX_PARTS);
            CHECK(P >= 1 && P <= ZI_MAX_PARTS);
            const size_t g = zg_lc_inflate_grid(&d, n * P), sg = zg_lc_inflate_serial_grid(&d, n * P);
            const zg_lc_dims whole = {(uint32_t)g, 1, ZI_NL, (uint32_t)sizeof(zi_shared)};
            const zg_lc_dims ser = {(uint32_t)sg, 1, ZI_SERIAL_NL, (uint32_t)ZI_SERIAL_SHARED};
            const zg_lc_dims resolve = {(uint32_t)(n * P), zg_lc_inflate_slices(&d, n * P), 256, 0};
            check_launch(a, "inflate", &whole, full.regs, full.static_smem);
            check_launch(a, "inflate serial", &ser, serial.regs, serial.static_smem);
            check_launch(a, "inflate resolve", &resolve, 255, 0);
            CHECK(g <= (size_t)d.sms * d.per_sm * 2 && sg <= (size_t)d.sms * d.per_sm_serial);
        }
        CHECK_EQ_U64(zg_lc_inflate_parts(&d, n, 0, 5, ZI_MAX_PARTS), 5); /* forced */
    }
}

/* An H100 (sm_90, 132 SMs): the values the kernels were tuned with. */
static void test_h100_values(void) {
    const arch *h = &archs[5];
    const zg_gpu_limits f = zg_gpu_limits_h100();
    CHECK(f.sm_count == h->L.sm_count && f.max_threads_per_sm == h->L.max_threads_per_sm &&
          f.smem_per_sm == h->L.smem_per_sm && f.smem_per_block_optin == h->L.smem_per_block_optin);
    const zg_lc_kernel full = inflate_full(), serial = inflate_serial();
    const zg_lc_inflate_dev d = zg_lc_inflate_device(&h->L, &full, &serial, 0, 0);
    CHECK_EQ_U64(d.ok, 1);
    CHECK_EQ_U64(d.sms, 132);
    CHECK_EQ_U64(d.per_sm, 3); /* three 67 KB blocks an SM (ZI_BLOCKS_PER_SM) */
    /* the LZW decoder: segments for a wave of 256 streams (512 x 512 tiles of an 8192^2 image), a warp a stream for
     * 1024 (256 x 256) */
    CHECK_EQ_U64(zg_lc_lzw_segmented(&f, 256), 1);
    CHECK_EQ_U64(zg_lc_lzw_segmented(&f, 527), 1);
    CHECK_EQ_U64(zg_lc_lzw_segmented(&f, 528), 0);
    CHECK_EQ_U64(zg_lc_lzw_segmented(&f, 1024), 0);
    CHECK_EQ_U64(d.per_sm_serial, 6); /* twice as many in serial mode */
    CHECK_EQ_U64(zg_lc_inflate_grid(&d, 100000), 792);
    CHECK_EQ_U64(zg_lc_inflate_grid(&d, 300), 300);
    CHECK_EQ_U64(zg_lc_inflate_grid(NULL, 100000), 264);
    CHECK_EQ_U64(zg_lc_inflate_parts(&d, 22, 0, 0, ZI_MAX_PARTS), 12); /* 396 / 22 = 18, at most 12 */
    CHECK_EQ_U64(zg_lc_inflate_parts(&d, 50, 0, 0, ZI_MAX_PARTS), 7);
    CHECK_EQ_U64(zg_lc_inflate_parts(&d, 64, 1, 0, ZI_MAX_PARTS), 12);
    CHECK_EQ_U64(zg_lc_inflate_parts(&d, 100, 1, 0, ZI_MAX_PARTS), 7);
    CHECK_EQ_U64(zg_lc_inflate_parts(&d, 500, 0, 0, ZI_MAX_PARTS), 1);
    CHECK_EQ_U64(zg_lc_inflate_parts(NULL, 22, 0, 0, ZI_MAX_PARTS), 1);
    CHECK_EQ_U64(zg_lc_inflate_serial_grid(&d, 10000), 792);
    CHECK_EQ_U64(zg_lc_inflate_slices(&d, 264), 5);
    CHECK_EQ_U64(zg_lc_inflate_slices(&d, 1), 1057);
    /* the occupancy calculator's counts, when the launch code has them, are used as they are */
    const zg_lc_inflate_dev api = zg_lc_inflate_device(&h->L, &full, &serial, 2, 5);
    CHECK(api.per_sm == 2 && api.per_sm_serial == 5);
    /* the scatter: 2 x 132 x 64 warps wanted; a label volume's 512 chunks of 4096 rows: 16 rows a warp */
    zg_lc_dims s = zg_lc_scatter(&h->L, 512, 4096);
    CHECK_EQ_U64(s.grid_x, 32);
    CHECK_EQ_U64(s.grid_y, 512);
    s = zg_lc_scatter(&h->L, 64, 4096); /* 262144 rows / 16896 warps: 15 a warp */
    CHECK_EQ_U64(s.grid_x, (4096 + 8 * 15 - 1) / (8 * 15));
    s = zg_lc_scatter(&h->L, 1, 100); /* a row a warp */
    CHECK_EQ_U64(s.grid_x, 13);
    /* the stage kernels' fixed shapes */
    zg_lc_dims c = zg_lc_copy(&h->L, 70000, 1u << 20);
    CHECK(c.grid_x == 64 && c.grid_y == 65535 && c.threads == 256);
    c = zg_lc_unshuffle(&h->L, 3, 1ull << 40);
    CHECK(c.grid_x == 65535 && c.grid_y == 3);
    c = zg_lc_byteswap(&h->L, 2, 4096, 4);
    CHECK(c.grid_x == 1 && c.grid_y == 2);
    c = zg_lc_checksum(&h->L, 100);
    CHECK(c.grid_x == 100 && c.threads == 1024);
    c = zg_lc_lz4_decode(&h->L, 5);
    CHECK(c.grid_x == 3 && c.threads == 128);
    c = zg_lc_lz4_check(&h->L, 5);
    CHECK(c.grid_x == 2 && c.threads == 128);
    zg_lc_zstd z;
    CHECK(zg_lc_zstd_config(&h->L, 2816, 22, &z, NULL, 0) == 0);
    CHECK(z.k1.threads == 32 && z.k1h.threads == 32 && z.k3a.threads == 32 && z.k3b.threads == 32);
    CHECK(z.k2.grid_x == 1 && z.k2.threads == 128 && z.k4.grid_x == 1 && z.k4.threads == 128);
}

/* What does not fit is refused with a reason, never launched. */
static void test_refusals(void) {
    const arch *t4 = &archs[0];
    const zg_lc_kernel big = {256, 32, 0, 70000};
    char why[200] = "";
    CHECK(!zg_lc_fits(&t4->L, &big, why, sizeof why) && strstr(why, "shared memory"));
    const zg_lc_kernel wide = {2048, 32, 0, 0};
    CHECK(!zg_lc_fits(&t4->L, &wide, why, sizeof why) && strstr(why, "threads"));
    const zg_lc_kernel heavy = {1024, 255, 0, 0};
    CHECK(!zg_lc_fits(&t4->L, &heavy, why, sizeof why) && strstr(why, "registers"));
    zg_gpu_limits small = t4->L;
    small.max_grid_x = 1000;
    zg_lc_zstd z;
    CHECK(zg_lc_zstd_config(&small, 5000, 10, &z, why, sizeof why) != 0 && strstr(why, "blocks"));
}

int main(void) {
    setup();
    printf("the DEFLATE decoder by architecture (zi_shared %zu bytes, serial mode %zu):\n", sizeof(zi_shared),
           (size_t)ZI_SERIAL_SHARED);
    for (int i = 0; i < N_ARCHS; i++) {
        test_post(&archs[i]);
        test_zstd(&archs[i]);
        test_inflate(&archs[i]);
    }
    test_h100_values();
    test_refusals();
    TEST_MAIN_END();
}
