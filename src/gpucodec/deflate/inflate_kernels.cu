/* zgpu's DEFLATE decoder: the kernels. Every step is in inflate_rules.h (shared with the CPU unit test).
 * A batch with as many streams as the GPU holds thread blocks runs one kernel, a thread block per stream. A
 * smaller batch splits each stream into parts ("parts" in inflate_rules.h): find and decode the parts (one
 * kernel), chain, resolve, then decode whole the streams whose chain failed (none, on valid zlib / libdeflate
 * streams). */
#include "gpucodec/deflate/inflate_gpu.h"
#include "gpucodec/common/gpu_limits.h"
#include "gpucodec/deflate/inflate_rules.h"
#include "plan/waves.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Scratch of a batch of n streams split into P parts (P > 1), behind the blocks' own ZI_SCRATCH each. */
typedef struct parts_layout {
    uint32_t *start, *size, *end, *off, *redo; /* [n * P] (start, size, end, chain offset; status below), [n] */
    uint32_t *done;  /* [n * P]: the finder has written start (zeroed before each launch, with the queue after it) */
    uint32_t *queue; /* the next job of the decode kernel */
    int *status;
    uint16_t *wide; /* n regions of (P - 1) slots of zi_part_slot(max_out, P) elements */
    size_t region;  /* elements a stream's region holds */
} parts_layout;

static size_t parts_region(size_t max_out, size_t P) {
    return (P - 1) * (size_t)zi_part_slot((uint32_t)(max_out < ZI_MAX_BYTES ? max_out : ZI_MAX_BYTES), (uint32_t)P);
}

static size_t parts_bytes(size_t n, size_t P, size_t max_out, parts_layout *L, uint8_t *base) {
    size_t at = 0;
    const size_t info = zg_align_up(n * P * sizeof(uint32_t), 256);
    if (L) {
        L->start = (uint32_t *)(base + at);
        L->size = (uint32_t *)(base + at + info);
        L->end = (uint32_t *)(base + at + 2 * info);
        L->status = (int *)(base + at + 3 * info);
        L->off = (uint32_t *)(base + at + 4 * info);
        L->done = (uint32_t *)(base + at + 5 * info);
        L->queue = L->done + n * P;
        L->redo = (uint32_t *)(base + at + 6 * info + 256);
    }
    at += 6 * info + 256 + zg_align_up(n * sizeof(uint32_t), 256);
    const size_t region = parts_region(max_out, P);
    if (L) {
        L->wide = (uint16_t *)(base + at);
        L->region = region;
    }
    return at + n * region * sizeof(uint16_t);
}

/* Parts stream i gets (1 where it is too large for the decoder: the whole decode reports that). A serial-mode
 * stream's work goes with its tokens, hence its stored bits: a part per ZI_SERIAL_PART_MIN_BYTES; a dense one's
 * (inflate_parts.h) a part per ZI_PART_MIN_BYTES_DENSE. */
static __device__ uint32_t stream_parts(size_t nb, size_t cap, uint32_t P) {
    if (nb > ZI_MAX_BYTES || cap > ZI_MAX_BYTES) return 1;
    const int serial = zi_serial_wanted((uint32_t)nb, (uint32_t)cap);
    const int dense = (uint64_t)cap >= (uint64_t)ZI_NARROW_RATIO * nb;
    return zi_stream_parts((uint32_t)nb, P, serial ? ZI_SERIAL_PART_MIN_BYTES : dense ? ZI_PART_MIN_BYTES_DENSE
                                                                                      : ZI_PART_MIN_BYTES);
}

/* Part k > 0's 16-bit buffer in stream i's region (its slots: zi_part_slot of the stream's output over its np parts;
 * only streams of 2 or more parts, whose outputs are under ZI_MAX_BYTES, have any). */
static __device__ uint16_t *part_buffer(const parts_layout &L, size_t i, uint32_t k, size_t cap, uint32_t np) {
    return L.wide + i * L.region + (size_t)zi_part_slot((uint32_t)cap, np) * (k - 1);
}

/* A decode's clock cycles per phase, windows and pointer-jumping rounds into profile (lane 0; NULL: none). */
static __device__ void add_profile(unsigned long long *profile, const zi_shared &sh) {
    if (!profile) return;
    for (int q = 0; q < ZI_PHASES; q++) atomicAdd(&profile[q], (unsigned long long)sh.tick[q]);
    atomicAdd(&profile[ZI_PHASES], (unsigned long long)sh.stat_windows);
    atomicAdd(&profile[ZI_PHASES + 1], (unsigned long long)sh.stat_rounds);
}

__global__ void __launch_bounds__(ZI_NL, ZI_BLOCKS_PER_SM)
    zg_inflate_kernel(const void *const *in, const size_t *in_bytes, void *const *out, const size_t *out_bytes,
                      size_t *actual, int *status, size_t n, const uint32_t *redo, uint8_t *scratch,
                      unsigned long long *profile) {
    extern __shared__ __align__(16) unsigned char zi_smem[]; /* dynamic: over 48 KB with more lanes */
    zi_shared &sh = *reinterpret_cast<zi_shared *>(zi_smem);
    uint8_t *mine = scratch + (size_t)blockIdx.x * ZI_SCRATCH;
    for (size_t i = blockIdx.x; i < n; i += gridDim.x) {
        if (redo && !redo[i]) continue; /* (uniform: the whole block skips) */
        const size_t nb = in_bytes[i], cap = out_bytes[i];
        if (nb > ZI_MAX_BYTES || cap > ZI_MAX_BYTES) {
            if (threadIdx.x == 0) {
                status[i] = ZI_E_TOO_BIG;
                actual[i] = 0;
            }
            continue;
        }
        zi_stream(&sh, (const uint8_t *)in[i], (uint32_t)nb, (uint8_t *)out[i], (uint32_t)cap, mine, &status[i],
                  &actual[i]);
        if (threadIdx.x == 0) add_profile(profile, sh);
        __syncthreads(); /* the next stream's first phase rewrites the shared state */
    }
}

/* The finder's profile counters (ZGPU_INFLATE_TIMES=1): rounds, candidates listed, clock cycles of lane 0 in each
 * step, and of each lane in its own checks (sum, longest). */
enum { FIND_ROUNDS, FIND_LISTED, FIND_MASKS, FIND_LIST, FIND_CHECK, FIND_LANE_CHECKS, FIND_LANE_MAX, FIND_COUNTERS };

/* One round of the finder (inflate_rules.h, "parts") by the whole block; returns where the next starts, or
 * ZI_NO_BIT when the search is over (*best: the block start found, or ZI_NO_BIT). prof: NULL, or the counters. */
__device__ uint32_t find_round(const uint8_t *in, uint32_t nbytes, uint32_t from, uint32_t to, uint32_t *best,
                               uint32_t *list, uint32_t *warp_sum, uint32_t *overflow, zi_find_scratch *slot,
                               uint32_t nslots, unsigned long long *prof) {
    const uint32_t lane = threadIdx.x, base = from & ~31u;
    const long long t0 = prof ? clock64() : 0;
    uint32_t m[ZI_FIND_STEP];
    const uint32_t n = zi_find_masks(in, nbytes, base, from, to, lane, *best, m);
    uint32_t incl = n; /* the lanes' counts, scanned in lane order: each lane's first slot */
    for (uint32_t d = 1; d < 32; d <<= 1) {
        const uint32_t v = __shfl_up_sync(0xffffffffu, incl, d);
        if ((lane & 31) >= d) incl += v;
    }
    if ((lane & 31) == 31) warp_sum[lane >> 5] = incl;
    if (lane == 0) *overflow = ZI_NO_BIT;
    __syncthreads();
    uint32_t at = incl - n, total = 0;
    for (uint32_t w = 0; w < ZI_NL / 32; w++) {
        if (w < lane >> 5) at += warp_sum[w];
        total += warp_sum[w];
    }
    const long long t1 = prof ? clock64() : 0;
    zi_find_list(base, lane, m, at, list, overflow);
    __syncthreads();
    const long long t2 = prof ? clock64() : 0;
    if (lane < nslots) zi_find_check(in, nbytes, list, total < ZI_FIND_CAND ? total : ZI_FIND_CAND, lane, nslots, best,
                                     slot + lane);
    if (prof && lane < total && lane < nslots) { /* a lane's own checks: their sum and the longest */
        const unsigned long long t = (unsigned long long)(clock64() - t2);
        atomicAdd(&prof[FIND_LANE_CHECKS], t);
        atomicMax(&prof[FIND_LANE_MAX], t);
    }
    __syncthreads();
    if (prof && lane == 0) {
        const long long t3 = clock64();
        atomicAdd(&prof[FIND_ROUNDS], 1ull);
        atomicAdd(&prof[FIND_LISTED], (unsigned long long)(total < ZI_FIND_CAND ? total : ZI_FIND_CAND));
        atomicAdd(&prof[FIND_MASKS], (unsigned long long)(t1 - t0));
        atomicAdd(&prof[FIND_LIST], (unsigned long long)(t2 - t1));
        atomicAdd(&prof[FIND_CHECK], (unsigned long long)(t3 - t2));
    }
    const uint32_t next = zi_find_next(base, *best, *overflow, to);
    __syncthreads(); /* all have read *best and *overflow before the next round writes them */
    return next;
}

/* Which jobs a launch of the parts kernel takes: all (find, then decode), the finder's only, or the decode jobs
 * only, in serial mode for every stream, by blocks of ZI_SERIAL_NL threads with ZI_SERIAL_SHARED bytes of shared
 * memory (the finder's jobs, which need ZI_NL threads, taken by a launch before). */
enum { ZI_JOBS_ALL = 0, ZI_JOBS_FIND, ZI_JOBS_SERIAL };

/* find and decode, one kernel: thread blocks take jobs from a queue, first the finder's (job j: part 1 + j % (P - 1)
 * of stream j / (P - 1)), then the parts' (job nfind + w: part w % P of stream w / P: part 0 into the output, the
 * others into their slots). A part waits until its stream's starts are found: those jobs were all taken before
 * any part's, by blocks that run them to the end, so the wait ends. (Finding in a kernel of its own left SMs idle
 * between the two kernels whenever another wave's decode held the GPU.) */
__global__ void __launch_bounds__(ZI_NL, ZI_BLOCKS_PER_SM)
    zg_inflate_parts_kernel(const void *const *in, const size_t *in_bytes, void *const *out, const size_t *out_bytes,
                            size_t n, uint32_t P, parts_layout L, uint8_t *scratch, unsigned long long *profile,
                            int jobs) {
    extern __shared__ __align__(16) unsigned char zi_smem[];
    zi_shared &sh = *reinterpret_cast<zi_shared *>(zi_smem);
    __shared__ uint32_t job, best, starts[ZI_MAX_PARTS];
    __shared__ uint32_t flist[ZI_FIND_CAND], fwarp[ZI_NL / 32], fover; /* the finder's round (find_round) */
    static_assert(sizeof(job) + sizeof(best) + sizeof(starts) + sizeof(flist) + sizeof(fwarp) + sizeof(fover) ==
                      ZI_PARTS_KERNEL_SHARED, "inflate_parts.h: the parts kernel's shared memory");
    /* a find job leaves sh unused: its full checks take their scratch from the same shared memory, a slot a lane */
    zi_find_scratch *fslot = reinterpret_cast<zi_find_scratch *>(zi_smem);
    constexpr uint32_t nslots = sizeof(zi_shared) / sizeof(zi_find_scratch) < ZI_NL
                                    ? (uint32_t)(sizeof(zi_shared) / sizeof(zi_find_scratch)) : ZI_NL;
    /* (serial-mode blocks, ZI_SERIAL_NL threads with ZI_SERIAL_SHARED bytes, take no scratch: more of them run
     * than the scratch has regions, and serial mode uses none) */
    const int serial_blocks = jobs == ZI_JOBS_SERIAL;
    uint8_t *mine = scratch + (serial_blocks ? 0 : (size_t)blockIdx.x * ZI_SCRATCH);
    const size_t nfind = n * (P - 1), first = serial_blocks ? nfind : 0;
    const size_t njobs = jobs == ZI_JOBS_FIND ? nfind : nfind + n * P;
    for (;;) {
        if (threadIdx.x == 0) job = (uint32_t)first + atomicAdd(L.queue, 1u);
        __syncthreads();
        const size_t j = job;
        if (j >= njobs) break;
        if (j < nfind) { /* the first block header from k / np of the stream on, in the part's slice */
            const size_t i = j / (P - 1), nb = in_bytes[i];
            const uint32_t k = 1 + (uint32_t)(j % (P - 1)), np = stream_parts(nb, out_bytes[i], P);
            if (threadIdx.x == 0) best = ZI_NO_BIT;
            __syncthreads();
            if (k < np) {
                const uint32_t nbits = (uint32_t)nb * 8, to = zi_part_from(nbits, k + 1, np);
                for (uint32_t from = zi_part_from(nbits, k, np); from != ZI_NO_BIT;)
                    from = find_round((const uint8_t *)in[i], (uint32_t)nb, from, to, &best, flist, fwarp, &fover,
                                      fslot, nslots, jobs == ZI_JOBS_FIND ? profile : NULL);
            }
            if (threadIdx.x == 0) {
                L.start[i * P + k] = best;
                __threadfence();
                atomicExch(&L.done[i * P + k], 1u);
            }
            __syncthreads();
            continue;
        }
        const size_t w = j - nfind, i = w / P;
        const uint32_t k = (uint32_t)(w % P);
        const size_t nb = in_bytes[i], cap = out_bytes[i];
        const uint32_t np = stream_parts(nb, cap, P);
        if (threadIdx.x == 0) { /* the stream's starts, once found (read past the L1: other SMs wrote them) */
            starts[0] = 0;
            for (uint32_t q = 1; q < np && k < np; q++) {
                while (atomicAdd(&L.done[i * P + q], 0u) == 0) __nanosleep(500);
                __threadfence();
                starts[q] = __ldcg(&L.start[i * P + q]);
            }
        }
        __syncthreads();
        if (k >= np || (k && starts[k] == ZI_NO_BIT)) { /* no part here */
            if (threadIdx.x == 0 && k < np) {
                L.status[w] = ZI_OK;
                L.size[w] = 0;
                L.end[w] = np - 1 - k;
            }
            __syncthreads();
            continue;
        }
        const uint32_t cap32 = cap > ZI_MAX_BYTES ? ZI_MAX_BYTES + 1u : (uint32_t)cap, slot = zi_part_slot(cap32, np);
        zi_spec spec = zi_part_spec(starts, k, np, k ? slot * zi_part_slots(starts, k, np) : cap32);
        spec.serial = serial_blocks || zi_serial_wanted((uint32_t)nb, cap32); /* (a stream too big fails before) */
        spec.seg = zi_seg_wanted((uint32_t)nb, cap32);
        void *dst = k ? (void *)part_buffer(L, i, k, cap32, np) : out[i];
        zi_decode(&sh, (const uint8_t *)in[i], nb > ZI_MAX_BYTES ? ZI_MAX_BYTES + 1u : (uint32_t)nb, dst, mine, &spec);
        if (threadIdx.x == 0) {
            L.status[w] = zi_verdict(&sh);
            L.size[w] = sh.outpos - sh.out0;
            L.end[w] = sh.end_part;
            add_profile(profile, sh);
        }
        __syncthreads();
    }
}

/* chain: block i takes stream i: its chain of parts (L.off: each part's output offset, ZI_NO_BIT for parts out of
 * it), then the last ZI_WINDOW elements of each part in chain order (what the other elements' marks read). A
 * stream of one part is done; a chain that fails marks the stream for a redo. */
__global__ void __launch_bounds__(ZI_NL) zg_inflate_chain_kernel(void *const *out, const size_t *in_bytes,
                                                                 const size_t *out_bytes, size_t *actual, int *status,
                                                                 size_t n, uint32_t P, parts_layout L) {
    __shared__ uint32_t chain[ZI_MAX_PARTS], off[ZI_MAX_PARTS], nchain;
    __shared__ int redo;
    const size_t i = blockIdx.x;
    if (i >= n) return;
    const size_t cap = out_bytes[i];
    const uint32_t np = stream_parts(in_bytes[i], cap, P);
    const size_t w0 = i * P;
    if (threadIdx.x == 0) {
        redo = 0;
        nchain = 0;
        if (np == 1) { /* the whole decode: its verdict stands */
            status[i] = L.status[w0];
            actual[i] = L.size[w0];
        } else {
            uint32_t nc = 0;
            redo = zi_parts_chain(L.status + w0, L.size + w0, L.end + w0, L.start + w0, np, (uint32_t)cap, chain, off, &nc);
            if (!redo) nchain = nc;
        }
        for (uint32_t k = 0; k < P; k++) L.off[w0 + k] = ZI_NO_BIT;
        for (uint32_t q = 1; q < nchain; q++) L.off[w0 + chain[q]] = off[q];
    }
    __syncthreads();
    uint8_t *o = (uint8_t *)out[i];
    for (uint32_t q = 1; q < nchain && !redo; q++) {
        const uint32_t k = chain[q], sz = L.size[w0 + k], tail = sz < ZI_WINDOW ? 0 : sz - ZI_WINDOW;
        const uint16_t *part = part_buffer(L, i, k, cap, np);
        int bad = 0;
        for (uint32_t x = tail + threadIdx.x; x < sz; x += blockDim.x) bad |= zi_part_resolve(o, off[q], part, x);
        if (bad) redo = 1;
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        L.redo[i] = (uint32_t)redo;
        if (!redo && np > 1) {
            status[i] = ZI_OK;
            actual[i] = cap;
        }
    }
}

/* resolve: the other elements of every chained part at once, grid (stream * P + part, slices of the part). */
__global__ void zg_inflate_resolve_kernel(void *const *out, const size_t *in_bytes, const size_t *out_bytes, size_t n,
                                          uint32_t P, parts_layout L) {
    const size_t w = blockIdx.x, i = w / P;
    const uint32_t k = (uint32_t)(w % P);
    if (i >= n || k == 0 || L.redo[i] || L.off[w] == ZI_NO_BIT) return;
    const size_t cap = out_bytes[i];
    const uint32_t np = stream_parts(in_bytes[i], cap, P);
    const uint32_t sz = L.size[w], body = sz < ZI_WINDOW ? 0 : sz - ZI_WINDOW, off = L.off[w];
    const uint16_t *part = part_buffer(L, i, k, cap, np);
    uint8_t *o = (uint8_t *)out[i];
    int bad = 0;
    for (uint32_t x = blockIdx.y * blockDim.x + threadIdx.x; x < body; x += gridDim.y * blockDim.x)
        bad |= zi_part_resolve(o, off, part, x);
    if (bad) L.redo[i] = 1; /* (read by the redo launch after this kernel) */
}

/* Per device: SMs and decode blocks one SM holds (launch_config.h), with the shared memory attribute set. The
 * blocks' shapes are compiled in (ZI_NL threads with a zi_shared each, 65 KB); a device whose blocks cannot have
 * that much shared memory (Turing, sm_75: 64 KiB) does not run the decoder: cudaErrorNotSupported, and *out
 * says why. */
static cudaError_t device_info(zg_lc_inflate_dev *out) {
    static zg_lc_inflate_dev cache[64];
    static cudaError_t verdict[64];
    static int ready[64];
    static pthread_mutex_t asking = PTHREAD_MUTEX_INITIALIZER;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    const int slot = dev & 63;
    if (__atomic_load_n(&ready[slot], __ATOMIC_ACQUIRE)) {
        *out = cache[slot];
        return verdict[slot];
    }
    pthread_mutex_lock(&asking);
    zg_lc_inflate_dev *d = &cache[slot];
    if (!ready[slot]) {
        zg_gpu_limits L;
        cudaFuncAttributes whole, parts;
        if ((e = zg_gpu_limits_current(&L)) == cudaSuccess &&
            (e = cudaFuncGetAttributes(&whole, zg_inflate_kernel)) == cudaSuccess &&
            (e = cudaFuncGetAttributes(&parts, zg_inflate_parts_kernel)) == cudaSuccess) {
            const int smem = (int)sizeof(zi_shared);
            const uint32_t regs = (uint32_t)(whole.numRegs > parts.numRegs ? whole.numRegs : parts.numRegs);
            const size_t stat = whole.sharedSizeBytes > parts.sharedSizeBytes ? whole.sharedSizeBytes
                                                                              : parts.sharedSizeBytes;
            const zg_lc_kernel full = {ZI_NL, regs, (uint32_t)stat, (uint32_t)smem};
            const zg_lc_kernel serial = {ZI_SERIAL_NL, (uint32_t)parts.numRegs, (uint32_t)parts.sharedSizeBytes,
                                         (uint32_t)ZI_SERIAL_SHARED};
            *d = zg_lc_inflate_device(&L, &full, &serial, 0, 0);
            int per_sm = 0, per_sm_serial = 0;
            const cudaFuncAttribute dyn = cudaFuncAttributeMaxDynamicSharedMemorySize;
            if (!d->ok) {
                verdict[slot] = cudaErrorNotSupported;
                __atomic_store_n(&ready[slot], 1, __ATOMIC_RELEASE);
            } else if ((e = cudaFuncSetAttribute(zg_inflate_kernel, dyn, smem)) == cudaSuccess &&
                       (e = cudaFuncSetAttribute(zg_inflate_parts_kernel, dyn, smem)) == cudaSuccess &&
                       (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, zg_inflate_parts_kernel, ZI_NL,
                                                                          smem)) == cudaSuccess &&
                       (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_serial, zg_inflate_parts_kernel,
                                                                          ZI_SERIAL_NL, ZI_SERIAL_SHARED)) ==
                           cudaSuccess) {
                /* CUDA's occupancy calculator knows the compiled kernels (as before): its counts, at least 1 */
                *d = zg_lc_inflate_device(&L, &full, &serial, per_sm < 1 ? 1 : per_sm,
                                          per_sm_serial < 1 ? 1 : per_sm_serial);
                verdict[slot] = cudaSuccess;
                __atomic_store_n(&ready[slot], 1, __ATOMIC_RELEASE);
            }
        }
    }
    const int done = ready[slot];
    if (done) {
        *out = *d;
        e = verdict[slot];
    }
    pthread_mutex_unlock(&asking);
    return e;
}

/* Blocks of a launch over `items` jobs (zg_lc_inflate_grid: 264 when the device cannot be asked). */
static size_t grid_for(size_t items) {
    zg_lc_inflate_dev d;
    const cudaError_t e = device_info(&d);
    return zg_lc_inflate_grid(e == cudaSuccess || e == cudaErrorNotSupported ? &d : NULL, items);
}

extern "C" cudaError_t zg_inflate_device_check(char *why, size_t why_len) {
    zg_lc_inflate_dev d;
    const cudaError_t e = device_info(&d);
    if (why && why_len) {
        if (e == cudaErrorNotSupported) snprintf(why, why_len, "%s", d.why);
        else if (e != cudaSuccess) snprintf(why, why_len, "CUDA error asking the device: %s", cudaGetErrorString(e));
        else why[0] = 0;
    }
    return e;
}

/* Enough parts that the decode blocks fill the GPU (`forced` > 0 sets it, 1 = off), as many as the room holds
 * the 16-bit buffers of. */
extern "C" size_t zg_inflate_parts(size_t n, size_t max_out, size_t room, int serial, int forced) {
    zg_lc_inflate_dev d;
    const int known = n && forced <= 0 && device_info(&d) == cudaSuccess;
    size_t P = zg_lc_inflate_parts(known ? &d : NULL, n, serial, forced, ZI_MAX_PARTS);
    while (P > 1 && parts_bytes(n, P, max_out, NULL, NULL) > room) P--;
    return P ? P : 1;
}

static size_t block_scratch(size_t n, size_t P) { return zg_align_up(grid_for(n * P) * ZI_SCRATCH, 256); }

extern "C" size_t zg_inflate_scratch_bytes(size_t n, size_t max_out, size_t parts) {
    return block_scratch(n, parts) + (parts > 1 ? parts_bytes(n, parts, max_out, NULL, NULL) : 0);
}

extern "C" int zg_inflate_serial_wanted(uint64_t in_bytes, uint64_t out_bytes) {
    return in_bytes <= ZI_MAX_BYTES && out_bytes <= ZI_MAX_BYTES && zi_serial_wanted((uint32_t)in_bytes, (uint32_t)out_bytes);
}

extern "C" cudaError_t zg_inflate_launch(const void *const *in, const size_t *in_bytes, void *const *out,
                                         const size_t *out_bytes, size_t *actual, int *status, size_t n, size_t max_out,
                                         size_t parts, int serial, void *scratch, int timed, cudaStream_t s) {
    return zg_inflate_launch_profiled(in, in_bytes, out, out_bytes, actual, status, n, max_out, parts, serial, scratch,
                                      NULL, timed, s);
}

extern "C" cudaError_t zg_inflate_launch_profiled(const void *const *in, const size_t *in_bytes, void *const *out,
                                                  const size_t *out_bytes, size_t *actual, int *status, size_t n,
                                                  size_t max_out, size_t parts, int serial, void *scratch,
                                                  unsigned long long *profile, int timed, cudaStream_t s) {
    if (!n) return cudaSuccess;
    zg_lc_inflate_dev d;
    cudaError_t e = device_info(&d); /* cudaErrorNotSupported: the decoder's blocks do not fit this GPU */
    if (e != cudaSuccess) return e;
    const size_t P = parts > 1 ? (parts < ZI_MAX_PARTS ? parts : ZI_MAX_PARTS) : 1, smem = sizeof(zi_shared);
    uint8_t *blocks = (uint8_t *)scratch;
    if (P == 1) {
        zg_inflate_kernel<<<(unsigned)grid_for(n), ZI_NL, smem, s>>>(in, in_bytes, out, out_bytes, actual, status, n,
                                                                     NULL, blocks, profile);
        return cudaGetLastError();
    }
    parts_layout L;
    parts_bytes(n, P, max_out, &L, blocks + block_scratch(n, P));
    /* timed (zgpu_tuning.profile): each kernel's time, the finder's alone first, and what the parts found, on
     * stderr (waits for each: for measuring only) */
    cudaEvent_t ev[6];
    for (int q = 0; q < 6 && timed; q++) cudaEventCreate(&ev[q]);
    unsigned long long *fprof = NULL; /* the finder alone: its rounds, candidates and clock cycles per step */
    if (timed) {
        if (cudaMalloc(&fprof, FIND_COUNTERS * sizeof *fprof) != cudaSuccess) fprof = NULL;
        if (fprof) cudaMemsetAsync(fprof, 0, FIND_COUNTERS * sizeof *fprof, s);
        cudaEventRecord(ev[5], s);
        cudaMemsetAsync(L.done, 0, (n * P + 1) * sizeof(uint32_t), s);
        zg_inflate_parts_kernel<<<(unsigned)grid_for(n * P), ZI_NL, smem, s>>>(in, in_bytes, out, out_bytes, n,
                                                                                (uint32_t)P, L, blocks, fprof,
                                                                                ZI_JOBS_FIND);
        cudaEventRecord(ev[0], s);
    }
    e = cudaMemsetAsync(L.done, 0, (n * P + 1) * sizeof(uint32_t), s);
    if (e != cudaSuccess) return e;
    if (serial) { /* the finder's jobs in full blocks, then every part in serial-mode blocks, twice as many an SM */
        zg_inflate_parts_kernel<<<(unsigned)grid_for(n * (P - 1)), ZI_NL, smem, s>>>(in, in_bytes, out, out_bytes, n,
                                                                                  (uint32_t)P, L, blocks, NULL,
                                                                                  ZI_JOBS_FIND);
        if ((e = cudaMemsetAsync(L.queue, 0, sizeof(uint32_t), s)) != cudaSuccess) return e;
        zg_inflate_parts_kernel<<<(unsigned)zg_lc_inflate_serial_grid(&d, n * P), ZI_SERIAL_NL, ZI_SERIAL_SHARED, s>>>(
            in, in_bytes, out, out_bytes, n, (uint32_t)P, L, blocks, profile, ZI_JOBS_SERIAL);
    } else {
        zg_inflate_parts_kernel<<<(unsigned)grid_for(n * P), ZI_NL, smem, s>>>(in, in_bytes, out, out_bytes, n,
                                                                                (uint32_t)P, L, blocks, profile,
                                                                                ZI_JOBS_ALL);
    }
    if (timed) cudaEventRecord(ev[1], s);
    zg_inflate_chain_kernel<<<(unsigned)n, ZI_NL, 0, s>>>(out, in_bytes, out_bytes, actual, status, n, (uint32_t)P, L);
    if (timed) cudaEventRecord(ev[2], s);
    const unsigned slices = zg_lc_inflate_slices(&d, n * P); /* blocks enough to keep loads in flight */
    zg_inflate_resolve_kernel<<<dim3((unsigned)(n * P), slices), 256, 0, s>>>(out, in_bytes, out_bytes, n, (uint32_t)P, L);
    if (timed) cudaEventRecord(ev[3], s);
    zg_inflate_kernel<<<(unsigned)grid_for(n), ZI_NL, smem, s>>>(in, in_bytes, out, out_bytes, actual, status, n,
                                                                 L.redo, blocks, profile);
    if (timed) {
        cudaEventRecord(ev[4], s);
        cudaEventSynchronize(ev[4]);
        float ms[5];
        cudaEventElapsedTime(&ms[4], ev[5], ev[0]);
        for (int q = 0; q < 4; q++) cudaEventElapsedTime(&ms[q], ev[q], ev[q + 1]);
        const size_t np = n * P;
        uint32_t *h = (uint32_t *)malloc((2 * np + n) * sizeof(uint32_t)); /* start, off, redo */
        size_t found = 0, chained = 0, redone = 0;
        if (h && cudaMemcpy(h, L.start, np * 4, cudaMemcpyDeviceToHost) == cudaSuccess &&
            cudaMemcpy(h + np, L.off, np * 4, cudaMemcpyDeviceToHost) == cudaSuccess &&
            cudaMemcpy(h + 2 * np, L.redo, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess) {
            for (size_t i = 0; i < n; i++) {
                redone += h[2 * np + i] != 0;
                for (size_t k = 1; k < P; k++) {
                    found += h[i * P + k] != ZI_NO_BIT;
                    chained += h[np + i * P + k] != ZI_NO_BIT;
                }
            }
        }
        free(h);
        fprintf(stderr, "zgpu inflate: %zu streams x %zu parts: finder alone %.2f | find+parts %.2f  chain %.2f  resolve %.2f  "
                "redo %.2f ms; %zu of %zu later parts found, %zu chained, %zu streams redone\n",
                n, P, ms[4], ms[0], ms[1], ms[2], ms[3], found, n * (P - 1), chained, redone);
        unsigned long long f[FIND_COUNTERS];
        if (fprof && cudaMemcpy(f, fprof, sizeof f, cudaMemcpyDeviceToHost) == cudaSuccess && f[FIND_ROUNDS]) {
            const double r = (double)f[FIND_ROUNDS], k = 1e3 * r; /* kcycles a round */
            fprintf(stderr, "zgpu inflate: finder: %llu rounds, %.1f candidates a round; kcycles a round: masks %.1f, "
                    "list %.1f, check %.1f (a lane's checks: %.1f on average, at most %.1f)\n", f[FIND_ROUNDS],
                    (double)f[FIND_LISTED] / r, (double)f[FIND_MASKS] / k, (double)f[FIND_LIST] / k,
                    (double)f[FIND_CHECK] / k,
                    (double)f[FIND_LANE_CHECKS] / 1e3 / (double)(f[FIND_LISTED] ? f[FIND_LISTED] : 1),
                    (double)f[FIND_LANE_MAX] / 1e3);
        }
        if (fprof) cudaFree(fprof);
        for (int q = 0; q < 6; q++) cudaEventDestroy(ev[q]);
    }
    return cudaGetLastError();
}
