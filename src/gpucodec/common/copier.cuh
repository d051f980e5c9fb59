/* Device helpers of zgpu's LZ-style decoders that split a stream between a parser warp and a copier warp (the
 * LZ4 decoder in kernels.cu, the DEFLATE decoder's serial mode in inflate_rules.h): the hand-over of batches
 * through shared memory, and the copier's match copy out of a window of the output kept in shared memory.
 * CUDA C++ only. */
#ifndef ZG_COPIER_CUH
#define ZG_COPIER_CUH
#include <stdint.h>

/* The hand-over counters: a release store after a batch is written (or read), an acquire load before it is
 * read (or rewritten). (compute-sanitizer's racecheck, which knows barriers only, reports these as hazards.) */
__device__ static inline void zg_publish(unsigned *counter, unsigned v) {
    asm volatile("st.release.cta.u32 [%0], %1;" ::"l"(counter), "r"(v) : "memory");
}
__device__ static inline void zg_wait_until(const unsigned *counter, unsigned at_least) {
    for (;;) {
        unsigned v;
        asm volatile("ld.acquire.cta.u32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
        if ((int)(v - at_least) >= 0) return;
        __nanosleep(32);
    }
}

/* Match out[m, m + len) := the elements (bytes, or DEFLATE's 16-bit part elements) `offset` back, element k from
 * m - offset + k % offset (written before the match), by the 32 lanes of a warp; every output element also goes
 * to win[x % W]. The batch being copied writes only below bend, its end, so an element x the copier wrote is
 * still at win[x % W] if x >= bend - W (no later write can have landed on its slot); elements below lo were
 * written by others than the copier, so they are read from out. A period under 32 elements (a run) is held in
 * registers and handed out by shuffles. */
template <uint32_t W, typename T, typename WT>
__device__ static inline void zg_put_match(T *out, WT *win, uint32_t m, uint32_t offset, uint32_t len, uint32_t bend,
                                           uint32_t lo, unsigned lane) {
    const uint32_t src = m - offset, step = offset >= 32 ? 32 : 32 % offset;
    uint32_t r = lane < offset ? lane : lane % offset; /* k % offset as k steps by 32 */
    const bool in_win = src + W >= bend && src >= lo;
    if (offset < 32 && len > 64) { /* a run: lane r holds the period's byte r */
        const T v = in_win ? (T)win[(src + r) % W] : out[src + r];
        for (uint32_t base = 0; base < len; base += 32) {
            const T b = (T)__shfl_sync(0xffffffffu, (uint32_t)v, r);
            const uint32_t k = base + lane;
            if (k < len) {
                out[m + k] = b;
                win[(m + k) % W] = b;
            }
            r += step;
            if (r >= offset) r -= offset;
        }
    } else {
        for (uint32_t k = lane; k < len; k += 32) { /* (k and k + W fall to one lane: the last write wins) */
            const T b = in_win ? (T)win[(src + r) % W] : out[src + r];
            out[m + k] = b;
            win[(m + k) % W] = b;
            r += step;
            if (r >= offset) r -= offset;
        }
    }
}
#endif
