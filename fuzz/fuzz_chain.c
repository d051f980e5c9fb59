/* Fuzz target for whole codec chains, so every decoder — the array->array and array->bytes codecs and the
 * filters too (transpose, delta, fixedscaleoffset, bytes big-endian, shuffle, crc32c, sharding) — sees
 * arbitrary stored bytes through zg_chain_decode, as a read would hand them over. Input layout:
 *   byte 0: which chain (byte % N_CHAINS)
 *   rest:   the stored chunk
 * The decoded chunk is 6 x 10 elements of the chain's data type. A crash or sanitizer report is a bug; any
 * status is fine. When a chunk decodes, encoding it again must decode to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/chain.h"
#include "meta/dtype.h"
#include "common/json.h"

typedef struct fz_chain {
    const char *dtype;
    const char *codecs;
} fz_chain;

#define BYTES_LE "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define BYTES_BE "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}"

static const fz_chain chains[] = {
    {"int32", "[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, " BYTES_BE ", {\"name\": \"crc32c\"}]"},
    {"int16", "[{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"<i2\"}}, " BYTES_LE
              ", {\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 2}}]"},
    {"float64", "[{\"name\": \"numcodecs.fixedscaleoffset\", \"configuration\": {\"offset\": 1.5, \"scale\": 10, "
                "\"dtype\": \"<f8\", \"astype\": \"<i2\"}}, " BYTES_LE "]"},
    {"uint16", "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [3, 5], \"codecs\": [" BYTES_LE
               ", {\"name\": \"zstd\", \"configuration\": {\"level\": 1}}], \"index_codecs\": [" BYTES_LE
               ", {\"name\": \"crc32c\"}], \"index_location\": \"start\"}}]"},
    {"uint8", "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 5], \"codecs\": "
              "[{\"name\": \"bytes\"}], \"index_codecs\": [" BYTES_LE "]}}]"},
    {"complex64", "[" BYTES_BE ", {\"name\": \"gzip\", \"configuration\": {\"level\": 1}}]"},
    {"float32", "[" BYTES_LE ", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 1, "
                "\"shuffle\": \"bitshuffle\", \"typesize\": 4}}]"},
    {"int64", "[" BYTES_LE ", {\"name\": \"numcodecs.lz4\"}, {\"name\": \"crc32c\"}]"},
};
#define N_CHAINS (sizeof chains / sizeof chains[0])

static zg_chain *built[N_CHAINS];

static zg_chain *chain_for(size_t i) {
    if (built[i]) return built[i];
    static uint8_t fill[16];
    zg_repr r;
    memset(&r, 0, sizeof r);
    r.ndim = 2;
    r.shape[0] = 6;
    r.shape[1] = 10;
    if (!zg_dtype_from_name(chains[i].dtype, &r.dtype)) abort();
    r.fill_value = fill;
    zj_value *codecs = NULL;
    if (zj_parse(chains[i].codecs, strlen(chains[i].codecs), "fuzz", &codecs) != ZGPU_OK) abort();
    if (zg_chain_create(codecs, &r, &built[i]) != ZGPU_OK) abort();
    zj_free(codecs);
    return built[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    zg_chain *ch = chain_for(data[0] % N_CHAINS);
    size_t nbytes = (size_t)zg_repr_nbytes(&ch->repr);
    uint8_t *out = malloc(nbytes), *again = malloc(nbytes);
    zg_scratch s;
    memset(&s, 0, sizeof s);
    zg_buf enc = ZG_BUF_INIT;
    if (zg_chain_decode(ch, data + 1, size - 1, out, &s) == ZGPU_OK) {
        /* what decodes must survive a round trip (lossy fixedscaleoffset: its own output is a fixed point) */
        if (zg_chain_encode(ch, out, &enc, &s) != ZGPU_OK) abort();
        if (zg_chain_decode(ch, enc.data, enc.size, again, &s) != ZGPU_OK) abort();
        if (data[0] % N_CHAINS != 2 && memcmp(out, again, nbytes) != 0) abort();
    }
    zg_buf_free(&enc);
    zg_scratch_free(&s);
    free(out);
    free(again);
    return 0;
}
