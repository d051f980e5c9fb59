/* A codec chain bound to one chunk representation: decode a stored chunk into a C-order native buffer,
 * and encode one back. Messages name the codec that failed; the caller adds the array and chunk. */
#ifndef ZG_CHAIN_H
#define ZG_CHAIN_H
#include "codec/codec.h"

typedef struct zg_chain {
    int n_a2a;
    zg_codec *a2a[ZG_MAX_CODECS];
    zg_codec *a2b;
    int n_b2b;
    zg_codec *b2b[ZG_MAX_CODECS];
    zg_repr repr;  /* the decoded chunk */
    /* The device driver's analysis of this chain (src/device/route.c), made on its first device read and kept
     * (plain heap memory, freed with the chain; set once, atomically). */
    void *device_route;
} zg_chain;

/* Per-thread scratch reused across chunks (owned heap buffers). */
typedef struct zg_scratch {
    zg_buf a, b, c;
} zg_scratch;
void zg_scratch_free(zg_scratch *s);

/** Builds a chain from a v3 codec list. `repr` is copied (its fill_value pointer must outlive the chain). */
zgpu_status zg_chain_create(const zj_value *codecs, const zg_repr *repr, zg_chain **out);
void zg_chain_free(zg_chain *ch);
zj_value *zg_chain_to_json(const zg_chain *ch);
/** 1 when decode is one bytes->bytes pipeline ending in a native-endian `bytes` codec (no array->array
 *  stage): the last stage can then write straight into the destination. */
int zg_chain_is_plain(const zg_chain *ch);
/** Decodes n stored bytes into out (nbytes of repr, C order, native endian). */
zgpu_status zg_chain_decode(const zg_chain *ch, const uint8_t *in, size_t n, uint8_t *out, zg_scratch *s);
/** Encodes a chunk (nbytes of repr) into out (out->size set). */
zgpu_status zg_chain_encode(const zg_chain *ch, const uint8_t *chunk, zg_buf *out, zg_scratch *s);

#endif
