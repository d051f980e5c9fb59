/* Fuzz target: sharding_indexed index decoding and full-shard decoding for fixed small configurations.
 * Input: byte 0 picks the configuration (mod 3), the rest is the shard. Every outcome must be a status;
 * crashes, leaks, out-of-bounds accesses and hangs are the bugs this looks for. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "codec/chain.h"
#include "codec/sharding.h"
#include "common/json.h"

static const char *const configs[3] = {
    /* (4, 6) uint16 shard of (2, 3) chunks, plain inner chunks, index at the end */
    "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], \"codecs\": [{\"name\": \"bytes\", "
    "\"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
    "{\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]",
    /* same shard, inner transpose + big-endian + crc32c, index at the start */
    "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], \"codecs\": [{\"name\": "
    "\"transpose\", \"configuration\": {\"order\": [1, 0]}}, {\"name\": \"bytes\", \"configuration\": {\"endian\": "
    "\"big\"}}, {\"name\": \"crc32c\"}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
    "\"little\"}}], \"index_location\": \"start\"}}]",
    /* nested: (4, 6) of (2, 6) inner shards of (2, 3) chunks; no checksum on the outer index */
    "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 6], \"codecs\": [{\"name\": "
    "\"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], \"codecs\": [{\"name\": \"bytes\", "
    "\"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
    "{\"endian\": \"little\"}}]}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
    "\"little\"}}]}}]",
};

static zg_chain *chains[3];
static const uint16_t fill = 7;

static zg_chain *get_chain(int k) {
    if (chains[k]) return chains[k];
    zj_value *cv = NULL;
    if (zj_parse(configs[k], strlen(configs[k]), "fuzz codecs", &cv) != ZGPU_OK) abort();
    zg_repr r;
    memset(&r, 0, sizeof r);
    if (!zg_dtype_from_name("uint16", &r.dtype)) abort();
    r.ndim = 2;
    r.shape[0] = 4;
    r.shape[1] = 6;
    r.fill_value = (const uint8_t *)&fill;
    if (zg_chain_create(cv, &r, &chains[k]) != ZGPU_OK) abort(); /* the configurations are valid */
    zj_free(cv);
    return chains[k];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    zg_chain *ch = get_chain(data[0] % 3);
    const uint8_t *shard = data + 1;
    size_t n = size - 1;
    /* copy to an exact-size heap block so ASan sees any read past the shard */
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) return 0;
    if (n) memcpy(copy, shard, n);

    const zg_codec *sc = ch->a2b;
    uint64_t inb = zg_sharding_index_nbytes(sc), ni = zg_sharding_n_inner(sc);
    uint64_t off[16], len[16];
    if (ni <= 16) {
        if (n >= inb) {
            const uint8_t *idx = zg_sharding_index_at_end(sc) ? copy + (n - inb) : copy;
            if (zg_sharding_decode_index(sc, idx, (size_t)inb, n, off, len) == ZGPU_OK) {
                for (uint64_t i = 0; i < ni; i++)
                    if (off[i] != ZG_SHARD_EMPTY && (off[i] > n || len[i] > n - off[i])) abort(); /* contract */
            }
        }
        /* a wrong index size must be refused, never read */
        (void)zg_sharding_decode_index(sc, copy, n < inb ? n : (size_t)inb - 1, n, off, len);
    }
    uint16_t out[24];
    zg_scratch s = ZG_SCRATCH_INIT;
    (void)zg_chain_decode(ch, copy, n, (uint8_t *)out, &s);
    zg_scratch_free(&s);
    free(copy);
    return 0;
}
