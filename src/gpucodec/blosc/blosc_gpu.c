/* Blosc's framing on the GPU path (blosc_gpu.h). */
#include "gpucodec/blosc/blosc_gpu.h"

zg_gpu_stream zg_blosc_gpu_stream(const zg_blosc_header *h) {
    switch (h->compformat) {
    case ZG_BLOSC_LZ4: return ZG_GPU_STREAM_LZ4;
    case ZG_BLOSC_ZSTD: return ZG_GPU_STREAM_ZSTD;
    case ZG_BLOSC_ZLIB: return ZG_GPU_STREAM_DEFLATE;
    case ZG_BLOSC_SNAPPY: return ZG_GPU_STREAM_SNAPPY;
    default: return ZG_GPU_STREAM_NONE;
    }
}

int zg_blosc_gpu_shuffled(const zg_blosc_header *h) { return !h->memcpyed && h->shuffle != ZG_BLOSC_NOSHUFFLE; }

zg_k_unshuffle zg_blosc_gpu_unshuffle(const zg_blosc_header *h, uint8_t *in, uint8_t *out, int mapped) {
    return (zg_k_unshuffle){in, out, h->nbytes, h->typesize, h->blocksize, h->shuffle == ZG_BLOSC_SHUFFLE ? 1u : 2u,
                            h->version, (uint32_t)mapped};
}
