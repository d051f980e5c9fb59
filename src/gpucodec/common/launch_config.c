/* Launch configurations of zgpu's kernels from a device's limits (see launch_config.h). Plain C, no CUDA: built
 * everywhere, so that the unit test runs every architecture's limits on machines without a GPU. */
#include "gpucodec/common/launch_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void say(char *why, size_t why_len, const char *fmt, ...) {
    if (!why || !why_len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
}

zg_gpu_limits zg_gpu_limits_h100(void) {
    zg_gpu_limits L;
    memset(&L, 0, sizeof L);
    L.cc_major = 9;
    L.sm_count = 132;
    L.warp_size = 32;
    L.max_threads_per_block = 1024;
    L.max_threads_per_sm = 2048;
    L.max_blocks_per_sm = 32;
    L.regs_per_sm = L.regs_per_block = 65536;
    L.smem_per_block = 48u << 10;
    L.smem_per_block_optin = 227u << 10;
    L.smem_per_sm = 228u << 10;
    L.smem_reserved_per_block = 1024;
    L.max_grid_x = 0x7fffffffu;
    L.max_grid_y = 65535;
    return L;
}

/* Registers a warp is given: a thread's registers times the warp, in units of 256. */
static uint64_t warp_regs(const zg_gpu_limits *L, uint32_t regs) {
    const uint64_t r = (uint64_t)regs * (uint64_t)(L->warp_size > 0 ? L->warp_size : 32);
    return (r + 255) / 256 * 256;
}

static uint32_t warps_of(const zg_gpu_limits *L, uint32_t threads) {
    const uint32_t w = (uint32_t)(L->warp_size > 0 ? L->warp_size : 32);
    return (threads + w - 1) / w;
}

/* Shared memory a block takes from its SM: its own, rounded to 128 bytes, plus the system's reserve. */
static uint64_t block_smem(const zg_gpu_limits *L, const zg_lc_kernel *k) {
    const uint64_t s = (uint64_t)k->static_smem + k->dynamic_smem;
    return (s + 127) / 128 * 128 + L->smem_reserved_per_block;
}

int zg_lc_fits(const zg_gpu_limits *L, const zg_lc_kernel *k, char *why, size_t why_len) {
    const uint64_t smem = (uint64_t)k->static_smem + k->dynamic_smem;
    if (k->threads == 0 || k->threads > (uint32_t)L->max_threads_per_block) {
        say(why, why_len, "a block of %u threads (the device allows %d)", k->threads, L->max_threads_per_block);
        return 0;
    }
    if (warp_regs(L, k->regs) * warps_of(L, k->threads) > (uint64_t)L->regs_per_block) {
        say(why, why_len, "a block of %u threads at %u registers each (the device gives a block %d)", k->threads,
            k->regs, L->regs_per_block);
        return 0;
    }
    /* static shared memory always fits the default 48 KiB (the compiler checks); more needs the opt-in */
    const uint64_t most = k->dynamic_smem ? L->smem_per_block_optin : L->smem_per_block;
    if (smem > most) {
        say(why, why_len, "a block needs %llu bytes of shared memory, the device gives at most %u (sm_%d%d)",
            (unsigned long long)smem, (unsigned)most, L->cc_major, L->cc_minor);
        return 0;
    }
    if (zg_lc_blocks_per_sm(L, k) < 1) {
        say(why, why_len, "a block of %u threads and %llu bytes of shared memory does not fit one SM (sm_%d%d)",
            k->threads, (unsigned long long)smem, L->cc_major, L->cc_minor);
        return 0;
    }
    return 1;
}

int zg_lc_blocks_per_sm(const zg_gpu_limits *L, const zg_lc_kernel *k) {
    if (k->threads == 0) return 0;
    const uint32_t warps = warps_of(L, k->threads), warp = (uint32_t)(L->warp_size > 0 ? L->warp_size : 32);
    uint64_t n = (uint64_t)L->max_blocks_per_sm;
    const uint64_t by_threads = (uint64_t)L->max_threads_per_sm / ((uint64_t)warps * warp);
    if (by_threads < n) n = by_threads;
    if (k->regs) {
        const uint64_t by_regs = (uint64_t)L->regs_per_sm / warp_regs(L, k->regs) / warps;
        if (by_regs < n) n = by_regs;
    }
    const uint64_t smem = block_smem(L, k); /* (0: none, and no reserve on sm_75) */
    if (smem && L->smem_per_sm / smem < n) n = L->smem_per_sm / smem;
    return (int)n;
}

int zg_lc_dims_ok(const zg_gpu_limits *L, const zg_lc_dims *d) {
    return d->grid_x >= 1 && d->grid_y >= 1 && d->grid_x <= L->max_grid_x && d->grid_y <= L->max_grid_y &&
           d->threads >= 1 && d->threads <= (uint32_t)L->max_threads_per_block && d->smem <= L->smem_per_block_optin;
}

/* ---------------------------------------------------------------- stage kernels */
uint32_t zg_lc_grid_x(uint64_t work, uint64_t per_block) {
    uint64_t g = (work + per_block - 1) / per_block;
    if (g < 1) g = 1;
    if (g > ZG_LC_GRID_MAX) g = ZG_LC_GRID_MAX;
    return (uint32_t)g;
}

uint32_t zg_lc_grid_y(size_t n_items) {
    return (uint32_t)(n_items < ZG_LC_GRID_MAX ? (n_items ? n_items : 1) : ZG_LC_GRID_MAX);
}

static zg_lc_dims dims(uint32_t gx, uint32_t gy, uint32_t threads) {
    zg_lc_dims d = {gx, gy, threads, 0};
    return d;
}

zg_lc_dims zg_lc_copy(const zg_gpu_limits *L, size_t n_items, uint64_t max_n) {
    (void)L;
    return dims(zg_lc_grid_x(max_n, (uint64_t)ZG_LC_POST_THREADS * 16 * 4), zg_lc_grid_y(n_items), ZG_LC_POST_THREADS);
}

zg_lc_dims zg_lc_unshuffle(const zg_gpu_limits *L, size_t n_items, uint64_t max_nbytes) {
    (void)L;
    return dims(zg_lc_grid_x(max_nbytes, (uint64_t)ZG_LC_POST_THREADS * 8), zg_lc_grid_y(n_items), ZG_LC_POST_THREADS);
}

zg_lc_dims zg_lc_byteswap(const zg_gpu_limits *L, size_t n_items, uint64_t max_n, int unit) {
    (void)L;
    const uint64_t words = unit > 0 ? max_n / (unsigned)unit : max_n;
    return dims(zg_lc_grid_x(words, (uint64_t)ZG_LC_POST_THREADS * 4), zg_lc_grid_y(n_items), ZG_LC_POST_THREADS);
}

/* A block a chunk (the chunks beyond the grid by the same blocks in turn). */
static uint32_t grid_of_items(size_t n_items) {
    return (uint32_t)(n_items < ZG_LC_GRID_MAX ? (n_items ? n_items : 1) : ZG_LC_GRID_MAX);
}

/* n items, per_block of them a block of `threads` threads. */
static zg_lc_dims items_in_blocks(size_t n, size_t per_block, uint32_t threads) {
    return dims(grid_of_items((n + per_block - 1) / per_block), 1, threads);
}

zg_lc_dims zg_lc_delta(const zg_gpu_limits *L, size_t n_items) {
    (void)L;
    return dims(grid_of_items(n_items), 1, ZG_LC_POST_THREADS);
}

zg_lc_dims zg_lc_checksum(const zg_gpu_limits *L, size_t n_items) {
    (void)L;
    return dims(grid_of_items(n_items), 1, ZG_LC_CHECK_THREADS);
}

zg_lc_dims zg_lc_scatter(const zg_gpu_limits *L, size_t n_items, uint64_t max_rows) {
    /* A block a few rows long spends more time starting than copying (H100, a label volume's 512 inner chunks of
     * 4096 rows of 512 bytes: a row a warp 1.12 ms, 4: 0.87, 16: 0.84, 64: 0.84). */
    const uint64_t warps_at_once = (uint64_t)L->sm_count * (uint64_t)L->max_threads_per_sm / 32;
    const uint64_t warps_wanted = 2 * (warps_at_once ? warps_at_once : 1), rows_total = max_rows * (uint64_t)n_items;
    uint64_t per_warp = rows_total / warps_wanted;
    per_warp = per_warp < 1 ? 1 : per_warp > 16 ? 16 : per_warp;
    return dims(zg_lc_grid_x(max_rows, ZG_LC_POST_THREADS / 32 * per_warp), zg_lc_grid_y(n_items), ZG_LC_POST_THREADS);
}

/* ---------------------------------------------------------------- LZ4 */
zg_lc_dims zg_lc_lz4_check(const zg_gpu_limits *L, size_t n) {
    (void)L;
    return items_in_blocks(n, ZG_LC_LZ4_CHECK_WARPS, 32 * ZG_LC_LZ4_CHECK_WARPS);
}

zg_lc_dims zg_lc_lz4_decode(const zg_gpu_limits *L, size_t n) {
    (void)L;
    return items_in_blocks(n, ZG_LC_LZ4_PAIRS, 64 * ZG_LC_LZ4_PAIRS);
}

/* ---------------------------------------------------------------- TIFF LZW, PackBits, predictors */
zg_lc_dims zg_lc_lzw_decode(const zg_gpu_limits *L, size_t n) {
    (void)L;
    return items_in_blocks(n, ZG_LC_LZW_WARPS, 32 * ZG_LC_LZW_WARPS);
}

zg_lc_dims zg_lc_lzw_bounds(const zg_gpu_limits *L, size_t n) {
    (void)L;
    return dims(grid_of_items(n), 1, 32 * ZG_LC_LZW_SCAN_WARPS);
}

zg_lc_dims zg_lc_lzw_lengths(const zg_gpu_limits *L, size_t n_slots) {
    (void)L;
    return items_in_blocks(n_slots, ZG_LC_LZW_LENGTHS_WARPS, 32 * ZG_LC_LZW_LENGTHS_WARPS);
}

int zg_lc_lzw_segmented(const zg_gpu_limits *L, size_t n) {
    return n < 4u * (size_t)(L->sm_count > 0 ? L->sm_count : 1);
}

zg_lc_dims zg_lc_packbits_decode(const zg_gpu_limits *L, size_t n) {
    (void)L;
    return items_in_blocks(n, ZG_LC_PACKBITS_WARPS, 32 * ZG_LC_PACKBITS_WARPS);
}

zg_lc_dims zg_lc_rows(const zg_gpu_limits *L, size_t n_items, uint64_t max_rows) {
    (void)L;
    return dims(zg_lc_grid_x(max_rows, ZG_LC_POST_THREADS / 32), zg_lc_grid_y(n_items), ZG_LC_POST_THREADS);
}

/* ---------------------------------------------------------------- zstd */
void zg_lc_zstd_kernels(zg_lc_kernel k[6]) {
    /* registers: the most each may use (255 a thread; K3a's __launch_bounds__(32, 16) caps it at 128) */
    const zg_lc_kernel ks[6] = {
        {32, 255, ZG_LC_ZD_K1_SMEM, 0},                  /* K1: sequences */
        {ZG_LC_ZD_HUF_THREADS, 255, ZG_LC_ZD_K1H_SMEM, 0}, /* K1h: Huffman literals */
        {ZG_LC_ZD_FRAME_THREADS, 255, 0, 0},             /* K2: links */
        {32, 128, 0, 0},                                 /* K3a: __launch_bounds__(32, 16) */
        {32, 255, ZG_LC_ZD_K3B_SMEM, 0},                 /* K3b: matches */
        {ZG_LC_ZD_FRAME_THREADS, 255, 0, 0},             /* K4: checksums */
    };
    memcpy(k, ks, sizeof ks);
}

int zg_lc_zstd_config(const zg_gpu_limits *L, uint32_t n_blocks, uint32_t n_frames, zg_lc_zstd *out, char *why,
                      size_t why_len) {
    zg_lc_kernel k[6];
    zg_lc_zstd_kernels(k);
    static const char *const names[6] = {"K1", "K1h", "K2", "K3a", "K3b", "K4"};
    for (int i = 0; i < 6; i++) {
        if (!zg_lc_fits(L, &k[i], why, why_len)) {
            char inner[128];
            snprintf(inner, sizeof inner, "%s", why ? why : "");
            say(why, why_len, "zstd decoder %s: %s", names[i], inner);
            return -1;
        }
    }
    /* a thread block per zstd block in K1, K1h, K3a and K3b, a thread per frame in K2 and K4 */
    const uint32_t fgrid = (n_frames + ZG_LC_ZD_FRAME_THREADS - 1) / ZG_LC_ZD_FRAME_THREADS;
    if (n_blocks > L->max_grid_x || fgrid > L->max_grid_x) {
        say(why, why_len, "zstd decoder: %u blocks in one launch (the device allows %u)", n_blocks, L->max_grid_x);
        return -1;
    }
    out->k1 = dims(n_blocks, 1, 32);
    out->k1h = dims(n_blocks, 1, ZG_LC_ZD_HUF_THREADS);
    out->k2 = dims(fgrid, 1, ZG_LC_ZD_FRAME_THREADS);
    out->k3a = dims(n_blocks, 1, 32);
    out->k3b = dims(n_blocks, 1, 32);
    out->k4 = dims(fgrid, 1, ZG_LC_ZD_FRAME_THREADS);
    return 0;
}

/* ---------------------------------------------------------------- DEFLATE */
zg_lc_inflate_dev zg_lc_inflate_device(const zg_gpu_limits *L, const zg_lc_kernel *full, const zg_lc_kernel *serial,
                                       int per_sm, int per_sm_serial) {
    zg_lc_inflate_dev d;
    memset(&d, 0, sizeof d);
    d.sms = L->sm_count > 0 ? L->sm_count : 1;
    char why[128] = "";
    if (!zg_lc_fits(L, full, why, sizeof why) || !zg_lc_fits(L, serial, why, sizeof why)) {
        snprintf(d.why, sizeof d.why, "zgpu's DEFLATE decoder does not fit this GPU: %s", why);
        d.per_sm = d.per_sm_serial = 1;
        return d;
    }
    d.ok = 1;
    d.per_sm = per_sm > 0 ? per_sm : zg_lc_blocks_per_sm(L, full);
    d.per_sm_serial = per_sm_serial > 0 ? per_sm_serial : zg_lc_blocks_per_sm(L, serial);
    if (d.per_sm < 1) d.per_sm = 1;
    if (d.per_sm_serial < 1) d.per_sm_serial = 1;
    return d;
}

size_t zg_lc_inflate_grid(const zg_lc_inflate_dev *d, size_t items) {
    const size_t most = d ? (size_t)d->sms * (size_t)d->per_sm * 2 : 264;
    return items < most ? items : most;
}

size_t zg_lc_inflate_parts(const zg_lc_inflate_dev *d, size_t n, int serial, int forced, size_t max_parts) {
    size_t P = 1;
    if (forced > 0) P = (size_t)forced;
    else if (n && d) P = (size_t)d->sms * (size_t)(serial ? d->per_sm_serial : d->per_sm) / n;
    if (P > max_parts) P = max_parts;
    return P ? P : 1;
}

size_t zg_lc_inflate_serial_grid(const zg_lc_inflate_dev *d, size_t nj) {
    const size_t most = (size_t)d->sms * (size_t)d->per_sm_serial;
    return nj < most ? nj : most;
}

uint32_t zg_lc_inflate_slices(const zg_lc_inflate_dev *d, size_t n_parts_total) {
    const size_t s = (size_t)d->sms * 8 / (n_parts_total ? n_parts_total : 1) + 1;
    return (uint32_t)(s < ZG_LC_GRID_MAX ? s : ZG_LC_GRID_MAX);
}
