/* Fuzz target for the compression codecs (gzip, numcodecs.zlib, zstd, numcodecs.bz2, numcodecs.lz4, blosc,
 * numcodecs.blosc). Input layout:
 *   byte 0: codec = byte % 7; if byte >= 128 the payload is also encoded and decoded back (must round-trip)
 *   byte 1: fixed output capacity = (byte >> 1) * 64 when < 128, else ((byte >> 1) - 63) * 8192 bytes;
 *           bit 0 set: that capacity is also passed as the expected size
 *   rest:   the payload, decoded into a growable buffer (size unknown) and into the fixed buffer.
 * Codecs that decode ranges (zstd, blosc) also decode a range of a chunk of the fixed capacity (the range drawn from
 * the payload's length): nothing written outside the chunk, the same bytes as the whole decode where both succeed,
 * and (blosc) the same again when every stored byte outside the head and span stored_span names is overwritten.
 * Any crash, sanitizer report or inconsistency between the decodes (abort) is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "common/json.h"

extern const zg_codec_vtable zg_codec_gzip, zg_codec_zlib, zg_codec_zstd, zg_codec_bz2, zg_codec_lz4, zg_codec_blosc,
    zg_codec_numcodecs_blosc;

typedef struct fz_case {
    const zg_codec_vtable *vt;
    const char *config; /* cheap encoder settings for the round-trip mode */
} fz_case;

static const fz_case cases[7] = {
    {&zg_codec_gzip, "{\"level\": 1}"},
    {&zg_codec_zlib, "{\"level\": 1}"},
    {&zg_codec_zstd, "{\"level\": 1, \"checksum\": true}"},
    {&zg_codec_bz2, "{\"level\": 1}"},
    {&zg_codec_lz4, "{\"acceleration\": 1}"},
    {&zg_codec_blosc, "{\"typesize\": 4, \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\"}"},
    {&zg_codec_numcodecs_blosc, "{\"cname\": \"zstd\", \"clevel\": 1, \"shuffle\": -1}"},
};

static zg_codec *make_codec(const fz_case *fc) {
    zj_value *conf = NULL;
    if (zj_parse(fc->config, strlen(fc->config), "fuzz", &conf) != ZGPU_OK) abort();
    zg_repr r;
    memset(&r, 0, sizeof r);
    r.ndim = 1;
    r.shape[0] = 1;
    r.dtype.id = ZGPU_INT32;
    r.dtype.size = 4;
    zg_codec *c = NULL;
    zgpu_status s = fc->vt->create(conf, &r, &c);
    zj_free(conf);
    if (s != ZGPU_OK) abort(); /* fixed, valid configurations */
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const fz_case *fc = &cases[data[0] % 7];
    int round_trip = data[0] >= 128;
    size_t sel = data[1] >> 1;
    size_t cap = sel < 64 ? sel * 64 : (sel - 63) * 8192;
    size_t fixed_expected = (data[1] & 1) ? cap : SIZE_MAX;
    const uint8_t *in = data + 2;
    size_t n = size - 2;
    zg_codec *c = make_codec(fc);

    /* Growable, size unknown. bzip2 can expand a few KB into gigabytes (RLE before the BWT), and with no
     * size known the codec must grow as data arrives: keep that case to short inputs so a fuzzer's
     * memory limit measures the codec, not the bomb. */
    zg_buf grow = ZG_BUF_INIT;
    int tried = fc->vt != &zg_codec_bz2 || n <= 64;
    zgpu_status sg = tried ? c->vt->decode_bytes(c, in, n, &grow, ZG_OUT_ANY) : ZGPU_ERR_CORRUPT_DATA;

    /* Fixed caller memory, with a guard zone that must stay untouched. */
    uint8_t *mem = malloc(cap + 64);
    if (!mem) abort();
    memset(mem, 0xA5, cap + 64);
    zg_buf fixed = zg_buf_wrap(mem, cap);
    zgpu_status sf = c->vt->decode_bytes(c, in, n, &fixed, (data[1] & 1) ? zg_out_exact(cap) : ZG_OUT_ANY);
    for (size_t i = cap; i < cap + 64; i++)
        if (mem[i] != 0xA5) abort(); /* wrote past the fixed buffer */
    if (sf == ZGPU_OK && (fixed.size > cap || (fixed_expected != SIZE_MAX && fixed.size != fixed_expected))) abort();
    if (sg == ZGPU_OK && sf == ZGPU_OK &&
        (grow.size != fixed.size || (fixed.size && memcmp(grow.data, mem, fixed.size) != 0)))
        abort(); /* two decodes of the same input disagree */
    /* What decodes fine into a growable buffer and fits must decode into fixed memory too. */
    if (sg == ZGPU_OK && sf != ZGPU_OK && grow.size <= cap && (fixed_expected == SIZE_MAX || grow.size == cap))
        abort();
    if (sg == ZGPU_ERR_INTERNAL || sf == ZGPU_ERR_INTERNAL) abort();

    /* Growable, only a limit (what a chain passes behind a filter or a shard): never more than the limit,
     * the same bytes as the unlimited decode, and whatever fits the limit decodes. Bounded, so bz2 too. */
    zg_buf lim = ZG_BUF_INIT;
    zgpu_status sl = c->vt->decode_bytes(c, in, n, &lim, zg_out_upto(cap));
    if (sl == ZGPU_OK && lim.size > cap) abort();
    if (sl == ZGPU_OK && sg == ZGPU_OK && (lim.size != grow.size || (lim.size && memcmp(lim.data, grow.data, lim.size))))
        abort();
    if (sg == ZGPU_OK && sl != ZGPU_OK && grow.size <= cap) abort();
    if (sl == ZGPU_ERR_INTERNAL) abort();
    zg_buf_free(&lim);

    /* a range [lo, hi) of a chunk of `cap` bytes */
    if (c->vt->decode_bytes_range && cap > 0) {
        const size_t lo = (n * 7919u) % cap, hi = lo + 1 + (n * 104729u) % (cap - lo);
        uint8_t *part = malloc(cap + 64);
        if (!part) abort();
        memset(part, 0xA5, cap + 64);
        zgpu_status sr = c->vt->decode_bytes_range(c, in, n, part, cap, lo, hi);
        for (size_t i = cap; i < cap + 64; i++)
            if (part[i] != 0xA5) abort(); /* wrote past the chunk */
        if (sr == ZGPU_ERR_INTERNAL) abort();
        zg_buf whole = ZG_BUF_INIT;
        zgpu_status sw = c->vt->decode_bytes(c, in, n, &whole, zg_out_exact(cap));
        if (sr == ZGPU_OK && sw == ZGPU_OK && memcmp(part + lo, whole.data + lo, hi - lo)) abort();
        /* only the head and the span stored_span names are read */
        size_t need = 0;
        uint64_t off = 0, end = 0;
        if (c->vt->stored_span && sr == ZGPU_OK &&
            c->vt->stored_span(c, in, n, n, cap, lo, hi, &need, &off, &end) && need <= n) {
            if (off > end || end > n) abort();
            uint8_t *masked = malloc(n ? n : 1);
            if (!masked) abort();
            memset(masked, 0xEE, n);
            memcpy(masked, in, need);
            memcpy(masked + off, in + off, (size_t)(end - off));
            uint8_t *again = malloc(cap);
            if (!again) abort();
            if (c->vt->decode_bytes_range(c, masked, n, again, cap, lo, hi) != ZGPU_OK ||
                memcmp(again + lo, part + lo, hi - lo))
                abort(); /* the decode read bytes outside what stored_span named */
            free(again);
            free(masked);
        }
        zg_buf_free(&whole);
        free(part);
    }

    if (round_trip) {
        zg_buf enc = ZG_BUF_INIT, dec = ZG_BUF_INIT;
        if (c->vt->encode_bytes(c, in, n, &enc) != ZGPU_OK) abort();
        if (c->vt->decode_bytes(c, enc.data, enc.size, &dec, zg_out_exact(n)) != ZGPU_OK) abort();
        if (dec.size != n || (n && memcmp(dec.data, in, n) != 0)) abort();
        zg_buf_free(&enc);
        zg_buf_free(&dec);
    }
    free(mem);
    zg_buf_free(&grow);
    c->vt->destroy(c);
    return 0;
}
