/* Fuzz target for the variable-length codecs (vlen-utf8, vlen-bytes: codec/vlen.h), alone and behind a gzip stage, as
 * a read of a string or bytes array hands a stored chunk over. Input layout:
 *   byte 0: the set-up (byte % N_SETUPS): codec, and whether a gzip stage follows it
 *   byte 1: the chunk's element count (0-255)
 *   rest:   the stored chunk
 * A crash or sanitizer report is a bug; any status is fine. A chunk that parses must be exactly what encoding its
 * elements gives back (the format has one encoding), and through the gzip stage it must survive encode + decode. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/chain.h"
#include "codec/vlen.h"
#include "common/json.h"
#include "meta/dtype.h"

typedef struct fz_setup {
    const char *dtype, *codecs;
} fz_setup;

static const fz_setup setups[] = {
    {"\"string\"", "[{\"name\": \"vlen-utf8\", \"configuration\": {}}]"},
    {"\"variable_length_bytes\"", "[{\"name\": \"vlen-bytes\", \"configuration\": {}}]"},
    {"\"string\"", "[{\"name\": \"vlen-utf8\", \"configuration\": {}}, {\"name\": \"gzip\", \"configuration\": "
                   "{\"level\": 1}}]"},
};
#define N_SETUPS (sizeof setups / sizeof setups[0])

/* Chains by set-up and count (the chunk's shape is the count). */
static zg_chain *built[N_SETUPS][256];

static zg_chain *chain_for(size_t i, unsigned count) {
    if (built[i][count]) return built[i][count];
    zg_repr r;
    memset(&r, 0, sizeof r);
    r.ndim = 1;
    r.shape[0] = count;
    zj_value *dt = NULL, *codecs = NULL;
    if (zj_parse(setups[i].dtype, strlen(setups[i].dtype), "fuzz", &dt) != ZGPU_OK) abort();
    if (zg_dtype_from_v3(dt, &r.dtype) != ZGPU_OK) abort();
    if (zj_parse(setups[i].codecs, strlen(setups[i].codecs), "fuzz", &codecs) != ZGPU_OK) abort();
    if (zg_chain_create(codecs, &r, &built[i][count]) != ZGPU_OK) abort();
    zj_free(dt);
    zj_free(codecs);
    return built[i][count];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const size_t which = data[0] % N_SETUPS;
    const unsigned count = data[1];
    zg_chain *ch = chain_for(which, count);
    zg_scratch s;
    memset(&s, 0, sizeof s);
    zg_buf enc = ZG_BUF_INIT, back = ZG_BUF_INIT;
    const uint8_t *ser = NULL;
    size_t ser_n = 0;
    uint64_t offs[256];
    uint32_t lens[256];
    if (zg_chain_decode_serialized(ch, data + 2, size - 2, &ser, &ser_n, &s) == ZGPU_OK &&
        zg_vlen_parse(ch->a2b, ser, ser_n, count, offs, lens) == ZGPU_OK) {
        const uint8_t *ptrs[256];
        for (unsigned i = 0; i < count; i++) {
            if (offs[i] + lens[i] > ser_n) abort(); /* parse promised every element inside the chunk */
            ptrs[i] = ser + offs[i];
        }
        if (zg_vlen_encode(ch->a2b, count, ptrs, lens, &enc) != ZGPU_OK) abort();
        if (enc.size != ser_n || memcmp(enc.data, ser, ser_n) != 0) abort();
        /* and through the bytes->bytes stages: encoded, decoded again, the same serialized chunk */
        if (zg_chain_encode_serialized(ch, enc.data, enc.size, &back, &s) != ZGPU_OK) abort();
        const uint8_t *again = NULL;
        size_t again_n = 0;
        if (zg_chain_decode_serialized(ch, back.data, back.size, &again, &again_n, &s) != ZGPU_OK) abort();
        if (again_n != enc.size || memcmp(again, enc.data, again_n) != 0) abort();
    }
    zg_buf_free(&enc);
    zg_buf_free(&back);
    zg_scratch_free(&s);
    return 0;
}
