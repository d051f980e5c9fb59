/* How zgpu's kernels are launched on a given GPU: every launch's grid, block and shared memory as a pure function
 * of the device's limits (zg_gpu_limits), in plain C (launch_config.c) so that tests/unit/test_launch_config.c
 * runs them for the published limits of every architecture the library is built for, without a GPU. The launch
 * code fills zg_gpu_limits from the device once (zg_gpu_limits_current, gpu_limits_gpu.c) and calls these.
 *
 * The kernels were tuned on an H100 (sm_90, 132 SMs); the values chosen there are exactly those used before this
 * file existed. What depends on the device: the DEFLATE decoder's blocks an SM and the parts it splits streams
 * into, its grids, and the scatter's rows a warp (from the SM count and threads an SM). A block that cannot fit
 * a device (its shared memory above the device's opt-in limit) is never launched: the configuration functions
 * say so and the decoder reports cudaErrorNotSupported, which the host turns into a host decode. */
#ifndef ZG_LAUNCH_CONFIG_H
#define ZG_LAUNCH_CONFIG_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A device's limits, as cudaGetDeviceProperties / cudaDeviceGetAttribute report them. */
typedef struct zg_gpu_limits {
    int cc_major, cc_minor; /* compute capability */
    int sm_count;
    int warp_size;
    int max_threads_per_block, max_threads_per_sm, max_blocks_per_sm;
    int regs_per_sm, regs_per_block;
    uint32_t smem_per_block;          /* shared memory a block gets without opting in (48 KiB) */
    uint32_t smem_per_block_optin;    /* the most a block may opt in to (cudaFuncAttributeMaxDynamicSharedMemorySize) */
    uint32_t smem_per_sm;             /* an SM's shared memory */
    uint32_t smem_reserved_per_block; /* taken by the system from an SM's shared memory per block (1 KiB, 0 on sm_75) */
    uint32_t max_grid_x, max_grid_y;
} zg_gpu_limits;

/* The limits assumed when the device cannot be asked (an H100's), which is what the code assumed before. */
zg_gpu_limits zg_gpu_limits_h100(void);

/* A kernel's block: threads, registers a thread (the compiled kernel's, or its __launch_bounds__ cap), static
 * and dynamic shared memory. */
typedef struct zg_lc_kernel {
    uint32_t threads, regs, static_smem, dynamic_smem;
} zg_lc_kernel;

/* One launch: grid, threads a block, dynamic shared memory. */
typedef struct zg_lc_dims {
    uint32_t grid_x, grid_y, threads, smem;
} zg_lc_dims;

/** 1 when a block of k can run on the device (threads, registers and shared memory within a block's limits and
 *  one such block within an SM's); else 0, with the reason in why (NULL: none). */
int zg_lc_fits(const zg_gpu_limits *L, const zg_lc_kernel *k, char *why, size_t why_len);
/** Blocks of k one SM holds at once, by the CUDA occupancy rules (threads, blocks, registers in units of 256 a
 *  warp, shared memory with the per-block reserve, in 128-byte units); 0 when none fits. */
int zg_lc_blocks_per_sm(const zg_gpu_limits *L, const zg_lc_kernel *k);
/** Whether dims is a valid launch of k's shape on the device (grid within limits, at least one block). */
int zg_lc_dims_ok(const zg_gpu_limits *L, const zg_lc_dims *d);

/* ---------------------------------------------------------------- stage kernels (post_kernels.cu) */
#define ZG_LC_POST_THREADS 256u   /* copy, unshuffle, byteswap, delta, scatter */
#define ZG_LC_CHECK_THREADS 1024u /* crc32c and gzip / zlib checksums */
#define ZG_LC_GRID_MAX 65535u     /* grid_x and grid_y of these launches (the kernels loop over the rest) */
/* static shared memory: the checksum kernels' tables (8 x 256 words, 64 powers, 32 partial sums); delta's
 * per-thread sums and carry of its widest type (8 bytes) */
#define ZG_LC_CHECK_SMEM (8u * 256u * 4u + 64u * 4u + 32u * 4u)
#define ZG_LC_DELTA_SMEM (ZG_LC_POST_THREADS * 8u + 8u)

/** Blocks along a chunk for `work` units at `per_block` a block: at least 1, at most ZG_LC_GRID_MAX. */
uint32_t zg_lc_grid_x(uint64_t work, uint64_t per_block);
/** Blocks across the chunks of a launch: a row each, at most ZG_LC_GRID_MAX. */
uint32_t zg_lc_grid_y(size_t n_items);
zg_lc_dims zg_lc_copy(const zg_gpu_limits *L, size_t n_items, uint64_t max_n);
zg_lc_dims zg_lc_unshuffle(const zg_gpu_limits *L, size_t n_items, uint64_t max_nbytes);
zg_lc_dims zg_lc_byteswap(const zg_gpu_limits *L, size_t n_items, uint64_t max_n, int unit);
zg_lc_dims zg_lc_delta(const zg_gpu_limits *L, size_t n_items);
zg_lc_dims zg_lc_checksum(const zg_gpu_limits *L, size_t n_items); /* crc32c and gzip / zlib checks */
/** The scatter: up to 16 rows a warp while the grid still holds twice the warps the GPU runs at once. */
zg_lc_dims zg_lc_scatter(const zg_gpu_limits *L, size_t n_items, uint64_t max_rows);

/* ---------------------------------------------------------------- LZ4 (lz4_kernels.cu) */
#define ZG_LC_LZ4_CHECK_WARPS 4u
#define ZG_LC_LZ4_PAIRS 2u /* parser + copier warp pairs a decode block */
/* static shared memory of a decode block: per pair two batches of 32 sequences (5 words each), 33 prefix words
 * and 4 words, a 4 KiB window and two counters */
#define ZG_LC_LZ4_DECODE_SMEM (ZG_LC_LZ4_PAIRS * (2u * (32u * 5u * 4u + 33u * 4u + 4u * 4u) + 4096u + 8u))
zg_lc_dims zg_lc_lz4_check(const zg_gpu_limits *L, size_t n);
zg_lc_dims zg_lc_lz4_decode(const zg_gpu_limits *L, size_t n);

/* ---------------------------------------------------------------- TIFF LZW and PackBits (lzw/, packbits/) */
#define ZG_LC_LZW_WARPS 2u /* a warp a stream */
/* static shared memory of an LZW block: per warp its segment's codes, lengths (2 bytes each) and first bytes */
#define ZG_LC_LZW_DECODE_SMEM (ZG_LC_LZW_WARPS * 3840u * 5u)
#define ZG_LC_PACKBITS_WARPS 4u /* a warp a stream */
/* static shared memory of a PackBits block: per warp a batch of 32 runs (source, output start, kind) */
#define ZG_LC_PACKBITS_SMEM (ZG_LC_PACKBITS_WARPS * (33u * 4u + 32u * 4u + 32u * 4u))
zg_lc_dims zg_lc_lzw_decode(const zg_gpu_limits *L, size_t n);
/* The segmented LZW decode's passes: boundaries (a block a stream) and lengths (a warp a segment slot, whose
 * dictionary lengths, 2 bytes a code, are in shared memory); the decode itself is zg_lc_lzw_decode over slots.
 * zg_lc_lzw_segmented: whether a wave of n LZW streams takes that path (fewer streams than keep a warp a stream
 * busy: H100, 1024 streams of 128 KiB decode faster a warp a stream, 256 of 512 KiB as segments). */
#define ZG_LC_LZW_SCAN_WARPS 16u
#define ZG_LC_LZW_LENGTHS_WARPS 4u
#define ZG_LC_LZW_LENGTHS_SMEM (ZG_LC_LZW_LENGTHS_WARPS * 3840u * 2u)
zg_lc_dims zg_lc_lzw_bounds(const zg_gpu_limits *L, size_t n);
zg_lc_dims zg_lc_lzw_lengths(const zg_gpu_limits *L, size_t n_slots);
int zg_lc_lzw_segmented(const zg_gpu_limits *L, size_t n);
zg_lc_dims zg_lc_packbits_decode(const zg_gpu_limits *L, size_t n);
/* The TIFF predictors (post_kernels.cu): a warp a row, 8 rows a block, every row of the chunks of a launch. */
zg_lc_dims zg_lc_rows(const zg_gpu_limits *L, size_t n_items, uint64_t max_rows);

/* ---------------------------------------------------------------- zstd (zstd_kernels.cu) */
#define ZG_LC_ZD_HUF_THREADS 32u  /* K1h: 4 streams x 8 runs */
#define ZG_LC_ZD_FRAME_THREADS 128u /* K2, K4: a thread a frame */
/* static shared memory: K1's FSE tables (512 + 512 + 256 cells of 4 bytes, 3 x 64 scratch halves); K1h's
 * decoding table (2^11 halves), symbol starts (256 halves) and its lanes' rings (32 x 8 x 16 bytes); K3b's ticket
 * and the starts of the frame's last 1024 blocks before it (with 3 words), and its window of 4 KiB of output */
#define ZG_LC_ZD_K1_SMEM ((512u + 512u + 256u) * 4u + 3u * 64u * 2u)
#define ZG_LC_ZD_K1H_SMEM ((1u << 11) * 2u + 256u * 2u + ZG_LC_ZD_HUF_THREADS * 8u * 16u)
#define ZG_LC_ZD_K3B_SMEM (4u + (3u + 1024u) * 4u + 4096u)
typedef struct zg_lc_zstd {
    zg_lc_dims k1, k1h, k2, k3a, k3b, k4;
} zg_lc_zstd;
/** The zstd decoder's six launches for n_blocks blocks of n_frames frames: 0, or -1 (with why) when a grid or a
 *  block cannot fit the device. */
int zg_lc_zstd_config(const zg_gpu_limits *L, uint32_t n_blocks, uint32_t n_frames, zg_lc_zstd *out, char *why,
                      size_t why_len);
/** The zstd kernels' blocks (K1, K1h, K2, K3a, K3b, K4, in that order) with their __launch_bounds__ register caps,
 *  for the occupancy checks. */
void zg_lc_zstd_kernels(zg_lc_kernel k[6]);

/* ---------------------------------------------------------------- DEFLATE (inflate_kernels.cu) */
/* The decoder's blocks on one device: whether its full blocks fit (else it does not run there), the SMs, and
 * the blocks of each kind an SM holds. */
typedef struct zg_lc_inflate_dev {
    int ok;
    int sms, per_sm, per_sm_serial; /* per_sm_serial: serial-mode blocks of the parts kernel */
    char why[200];                  /* when !ok */
} zg_lc_inflate_dev;
/** From the device's limits and the two block shapes the decoder launches with its dynamic shared memory: full
 *  (ZI_NL threads, sizeof(zi_shared), the larger static shared memory of its two kernels) and serial (ZI_SERIAL_NL
 *  threads, ZI_SERIAL_SHARED). per_sm / per_sm_serial: what CUDA's occupancy calculator said for the compiled
 *  kernels (the launch code asks it, as before), or <= 0 for zg_lc_blocks_per_sm's count (the tests); at least
 *  1 either way. */
zg_lc_inflate_dev zg_lc_inflate_device(const zg_gpu_limits *L, const zg_lc_kernel *full, const zg_lc_kernel *serial,
                                       int per_sm, int per_sm_serial);
/** Blocks of a launch over `items` jobs: at most twice what the GPU holds at once (bounds the per-block scratch);
 *  264 (an H100's) when the device is unknown (d NULL). */
size_t zg_lc_inflate_grid(const zg_lc_inflate_dev *d, size_t items);
/** Parts for n streams before the scratch room is counted: forced > 0 sets it; else enough that the decode blocks
 *  (serial-mode ones when serial) fill the GPU; at most max_parts, at least 1. */
size_t zg_lc_inflate_parts(const zg_lc_inflate_dev *d, size_t n, int serial, int forced, size_t max_parts);
/** The serial-mode launch over nj part jobs: as many blocks as the GPU holds at once, at most nj. */
size_t zg_lc_inflate_serial_grid(const zg_lc_inflate_dev *d, size_t nj);
/** The resolve kernel's slices a part (grid y): enough blocks to keep loads in flight, 8 an SM. */
uint32_t zg_lc_inflate_slices(const zg_lc_inflate_dev *d, size_t n_parts_total);

#ifdef __cplusplus
}
#endif
#endif
