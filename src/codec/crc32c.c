/* crc32c codec (Zarr v3): appends the CRC32C of the data as 4 little-endian bytes; decode verifies and
 * strips it. The CRC uses the SSE4.2 crc32 instruction when available (chosen once, cached behind a
 * function pointer), else a slicing-by-8 table. */
#include "codec/crc32c.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "common/endian.h"
#include "common/status.h"

#define CRC32C_POLY 0x82F63B78u

/* ---- slicing-by-8 fallback ---- */
static uint32_t crc_table[8][256];

static void crc_table_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1u)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}


static uint32_t crc32c_sw(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n && ((uintptr_t)p & 7)) { crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF]; n--; }
    while (n >= 8) {
        uint64_t w = zg_le64(p) ^ crc;
        crc = crc_table[7][w & 0xFF] ^ crc_table[6][(w >> 8) & 0xFF] ^ crc_table[5][(w >> 16) & 0xFF] ^
              crc_table[4][(w >> 24) & 0xFF] ^ crc_table[3][(w >> 32) & 0xFF] ^ crc_table[2][(w >> 40) & 0xFF] ^
              crc_table[1][(w >> 48) & 0xFF] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF];
    return ~crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define ZG_HAVE_SSE42_PATH 1
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) { c = _mm_crc32_u8((uint32_t)c, *p++); n--; }
    /* Three independent streams would hide the instruction's latency; one stream already runs at several
     * GB/s, far above the chunk codecs around it. */
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const uint8_t *, size_t);
static crc_fn crc_impl;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* Runs once per process: builds the table and picks the implementation. */
static void crc_init(void) {
    crc_table_init();
    crc_impl = crc32c_sw;
#ifdef ZG_HAVE_SSE42_PATH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) crc_impl = crc32c_hw;
#endif
}

uint32_t zg_crc32c_portable(uint32_t crc, const void *p, size_t n) {
    pthread_once(&crc_once, crc_init);
    return crc32c_sw(crc, (const uint8_t *)p, n);
}

uint32_t zg_crc32c(uint32_t crc, const void *p, size_t n) {
    pthread_once(&crc_once, crc_init);
    return crc_impl(crc, (const uint8_t *)p, n);
}

/* ---- the codec ---- */
static zgpu_status crc_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA,
                 "crc32c: configuration must be an object");
    /* crc32c has no configuration; zarr-python ignores whatever it holds, zgpu refuses members it cannot honour */
    static const char *const keys[] = {NULL};
    ZG_FORWARD(zg_config_only(config, "crc32c", NULL, keys));
    zg_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "crc32c: out of memory");
    c->vt = &zg_codec_crc32c;
    c->decoded = *decoded;
    c->encoded = *decoded;
    *out = c;
    return ZGPU_OK;
}

static void crc_destroy(zg_codec *c) { free(c); }

static zj_value *crc_to_json(const zg_codec *c) { return zg_codec_json("crc32c", NULL); }

static zgpu_status crc_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    ZG_RETURN_IF(n < 4, ZGPU_ERR_CORRUPT_DATA, "crc32c: input of %zu bytes is shorter than the 4-byte checksum", n);
    size_t len = n - 4;
    ZG_RETURN_IF(want.exact != SIZE_MAX && want.exact != len, ZGPU_ERR_CORRUPT_DATA,
                 "crc32c: %zu data bytes, expected %zu", len, want.exact);
    ZG_RETURN_IF(len > want.limit, ZGPU_ERR_CORRUPT_DATA,
                 "crc32c: data decodes to more than the %zu bytes this chunk can hold", want.limit);
    uint32_t stored = (uint32_t)in[len] | (uint32_t)in[len + 1] << 8 | (uint32_t)in[len + 2] << 16 |
                      (uint32_t)in[len + 3] << 24;
    uint32_t actual = zg_crc32c(0, in, len);
    ZG_RETURN_IF(stored != actual, ZGPU_ERR_CORRUPT_DATA,
                 "crc32c: checksum mismatch (stored 0x%08X, computed 0x%08X over %zu bytes)", stored, actual, len);
    ZG_FORWARD(zg_buf_reserve(out, len));
    if (len) memcpy(out->data, in, len);
    out->size = len;
    return ZGPU_OK;
}

/* The data and its 4-byte checksum. */
static size_t crc_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c, (void)exact;
    return zg_size_add(decoded, 4);
}

static zgpu_status crc_encode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out) {
    ZG_FORWARD(zg_buf_reserve(out, n + 4));
    if (n) memcpy(out->data, in, n);
    uint32_t v = zg_crc32c(0, in, n);
    uint8_t *t = out->data + n;
    t[0] = (uint8_t)v;
    t[1] = (uint8_t)(v >> 8);
    t[2] = (uint8_t)(v >> 16);
    t[3] = (uint8_t)(v >> 24);
    out->size = n + 4;
    return ZGPU_OK;
}

/* GPU: verified and stripped by a kernel (outermost ones on the host, before the compressor). */
static void crc_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    out->kind = ZG_GPU_STAGE_POST;
    out->post = ZG_GPU_POST_CRC32C;
}

const zg_codec_vtable zg_codec_crc32c = {
    .name = "crc32c",
    .kind = ZG_BYTES_TO_BYTES,
    .create = crc_create,
    .destroy = crc_destroy,
    .to_json = crc_to_json,
    .to_json_v2 = NULL,
    .decode_bytes = crc_decode,
    .encode_bytes = crc_encode,
    .encoded_size = crc_encoded_size,
    .gpu_stage = crc_gpu_stage,
};
