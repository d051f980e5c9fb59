/* tiff_lzw codec: TIFF's LZW (Compression = 5), bytes -> bytes, no configuration. The stream rules are in
 * tiff_lzw.h. Every code is checked against the table as it is read, and every string against the room left,
 * so a corrupt stream ends in an error naming the codec and where in the stream it went wrong. */
#include "codec/tiff_lzw.h"
#include <stdlib.h>
#include <string.h>
#include "codec/codec.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_tiff_lzw;

enum { LZW_CLEAR = 256, LZW_EOI = 257, LZW_FIRST = 258, LZW_TABLE = 4096, LZW_MAX_WIDTH = 12 };

int zg_tiff_lzw_is_old_style(const uint8_t *in, size_t n) { return n >= 2 && in[0] == 0 && (in[1] & 1); }

/* The width of the next code once `next` codes are in use: new-style widens one code early (libtiff's TIFF 6
 * writer), old-style when the next code no longer fits. */
static unsigned code_width(unsigned next, int old_style) {
    unsigned early = old_style ? 0 : 1;
    if (next + early >= 2048) return 12;
    if (next + early >= 1024) return 11;
    if (next + early >= 512) return 10;
    return 9;
}

typedef struct lzw_entry {
    uint16_t prefix; /* the code of the string without its last byte (entries >= LZW_FIRST) */
    uint16_t length; /* bytes in the string */
    uint8_t last;    /* its last byte */
    uint8_t first;   /* its first byte */
} lzw_entry;

zgpu_status zg_tiff_lzw_decode(const uint8_t *in, size_t n, zg_buf *out, size_t exact, size_t limit) {
    if (out->fixed && out->cap < limit) limit = out->cap;
    const int old_style = zg_tiff_lzw_is_old_style(in, n);
    lzw_entry *table = malloc(LZW_TABLE * sizeof *table);
    ZG_RETURN_IF(!table, ZGPU_ERR_NO_MEMORY, "tiff_lzw: out of memory for the code table");
    for (unsigned i = 0; i < 256; i++) table[i] = (lzw_entry){0, 1, (uint8_t)i, (uint8_t)i};

    zgpu_status st = ZGPU_OK;
    size_t have = 0; /* bytes decoded */
    out->size = 0;
    /* Grow the output as it fills, never past the limit: a small stream that claims a large tile allocates
     * only what it decodes to. */
    size_t room = out->fixed ? out->cap : 0;
    uint64_t bits = 0; /* bit buffer */
    unsigned nbits = 0;
    size_t pos = 0, codes = 0;
    unsigned next = LZW_FIRST, width = 9;
    int prev = -1;
    for (;;) {
        while (nbits < width && pos < n) {
            if (old_style) bits |= (uint64_t)in[pos++] << nbits;
            else bits = bits << 8 | in[pos++];
            nbits += 8;
        }
        if (nbits < width) break; /* the end of the input without EOI: libtiff stops there too */
        unsigned code;
        if (old_style) {
            code = (unsigned)(bits & ((1u << width) - 1));
            bits >>= width;
        } else {
            code = (unsigned)(bits >> (nbits - width)) & ((1u << width) - 1);
        }
        nbits -= width;
        if (!old_style) bits &= (nbits ? ((uint64_t)1 << nbits) - 1 : 0);
        codes++;
        if (code == LZW_EOI) break;
        if (code == LZW_CLEAR) {
            next = LZW_FIRST;
            width = 9;
            prev = -1;
            continue;
        }
        if (have == limit) {
            /* The whole chunk is out: what follows is padding, as libtiff reads it; but where only a bound is
             * known, more data means more than the chunk can hold. */
            if (exact == SIZE_MAX) {
                st = zg_error(ZGPU_ERR_CORRUPT_DATA,
                              "tiff_lzw: data decodes to more than the %zu bytes this chunk can hold", limit);
                goto done;
            }
            break;
        }
        unsigned len;
        uint8_t first;
        if (code < next) {
            if (prev < 0 && code >= 256) {
                st = zg_error(ZGPU_ERR_CORRUPT_DATA,
                              "tiff_lzw: code %u (%u bits) at code %zu follows a ClearCode but is no single byte",
                              code, width, codes);
                goto done;
            }
            len = table[code].length;
            first = table[code].first;
        } else if (code == next && prev >= 0) {
            len = table[prev].length + 1u; /* the KwKwK case: the previous string and its own first byte */
            first = table[prev].first;
        } else {
            st = zg_error(ZGPU_ERR_CORRUPT_DATA,
                          "tiff_lzw: code %u at code %zu (byte %zu) is not in the table (next free code %u)", code,
                          codes, pos, next);
            goto done;
        }
        if (len > limit - have) {
            st = zg_error(ZGPU_ERR_CORRUPT_DATA, "tiff_lzw: data decodes to more than the %zu bytes this chunk can hold",
                          limit);
            goto done;
        }
        if (have + len > room) {
            size_t want = room < 4096 ? 4096 : room * 2;
            if (want > limit) want = limit;
            if (want < have + len) want = have + len;
            if ((st = zg_buf_reserve(out, want)) != ZGPU_OK) goto done;
            room = out->cap < limit ? out->cap : limit;
        }
        uint8_t *dst = out->data + have;
        if (code == next) {
            /* previous string, then its first byte */
            unsigned c = (unsigned)prev;
            dst[len - 1] = first;
            for (unsigned k = len - 1; k-- > 0;) {
                dst[k] = table[c].last;
                c = table[c].prefix;
            }
        } else {
            unsigned c = code;
            for (unsigned k = len; k-- > 0;) {
                dst[k] = table[c].last;
                c = table[c].prefix;
            }
        }
        have += len;
        if (prev >= 0 && next < LZW_TABLE) {
            /* A full table takes no more strings until the next ClearCode (a writer that clears late still
             * decodes; codes past 4095 cannot be written in 12 bits). */
            uint32_t plen = table[prev].length + 1u;
            if (plen > UINT16_MAX) plen = UINT16_MAX; /* unreachable: a string grows by one byte per code */
            table[next] = (lzw_entry){(uint16_t)prev, (uint16_t)plen, first, table[prev].first};
            next++;
        }
        unsigned w = code_width(next, old_style);
        width = w > LZW_MAX_WIDTH ? LZW_MAX_WIDTH : w;
        prev = (int)code;
    }
    out->size = have;
    if (exact != SIZE_MAX && have != exact)
        st = zg_error(ZGPU_ERR_CORRUPT_DATA, "tiff_lzw: data decodes to %zu bytes, expected %zu%s", have, exact,
                      have < exact ? " (a truncated stream)" : "");
done:
    free(table);
    return st;
}

/* ---- encoder: a hash of (prefix code, byte) -> code ---- */
typedef struct lzw_writer {
    zg_buf *out;
    uint64_t bits;
    unsigned nbits;
    unsigned decoder_next; /* the decoder's next free code, which sets the width it reads with */
    int after_clear;       /* the decoder makes no string from the first code after a ClearCode */
    int old_style;
} lzw_writer;

static zgpu_status put_code(lzw_writer *w, unsigned code) {
    unsigned width = code_width(w->decoder_next, w->old_style);
    if (w->old_style) w->bits |= (uint64_t)code << w->nbits;
    else w->bits = w->bits << width | code;
    w->nbits += width;
    while (w->nbits >= 8) {
        uint8_t byte;
        if (w->old_style) {
            byte = (uint8_t)w->bits;
            w->bits >>= 8;
        } else {
            byte = (uint8_t)(w->bits >> (w->nbits - 8));
        }
        w->nbits -= 8;
        ZG_FORWARD(zg_buf_append(w->out, &byte, 1));
    }
    if (code == LZW_CLEAR) {
        w->decoder_next = LZW_FIRST;
        w->after_clear = 1;
    } else if (code != LZW_EOI) {
        if (!w->after_clear && w->decoder_next < LZW_TABLE) w->decoder_next++;
        w->after_clear = 0;
    }
    return ZGPU_OK;
}

static zgpu_status flush_bits(lzw_writer *w) {
    if (!w->nbits) return ZGPU_OK;
    uint8_t byte = w->old_style ? (uint8_t)w->bits : (uint8_t)(w->bits << (8 - w->nbits));
    w->nbits = 0;
    return zg_buf_append(w->out, &byte, 1);
}

#define HASH_SLOTS 8192 /* a power of two, twice the table */

zgpu_status zg_tiff_lzw_encode(const uint8_t *in, size_t n, zg_buf *out, int old_style) {
    uint32_t *keys = malloc(HASH_SLOTS * sizeof *keys); /* (prefix << 8 | byte) + 1; 0 = free */
    uint16_t *vals = malloc(HASH_SLOTS * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return zg_error(ZGPU_ERR_NO_MEMORY, "tiff_lzw: out of memory for the encoder's table");
    }
    memset(keys, 0, HASH_SLOTS * sizeof *keys);
    lzw_writer w = {out, 0, 0, LZW_FIRST, 1, old_style};
    zgpu_status st = put_code(&w, LZW_CLEAR);
    unsigned next = LZW_FIRST;
    if (n && st == ZGPU_OK) {
        unsigned cur = in[0];
        for (size_t i = 1; i < n && st == ZGPU_OK; i++) {
            uint32_t key = (cur << 8 | in[i]) + 1;
            uint32_t h = (key * 2654435761u) >> 19 & (HASH_SLOTS - 1);
            while (keys[h] && keys[h] != key) h = (h + 1) & (HASH_SLOTS - 1);
            if (keys[h]) {
                cur = vals[h];
                continue;
            }
            st = put_code(&w, cur);
            /* Clear two codes before the table is full, as libtiff does, so no code needs 13 bits. */
            if (next < LZW_TABLE - 2) {
                keys[h] = key;
                vals[h] = (uint16_t)next++;
            } else if (st == ZGPU_OK) {
                st = put_code(&w, LZW_CLEAR);
                memset(keys, 0, HASH_SLOTS * sizeof *keys);
                next = LZW_FIRST;
            }
            cur = in[i];
        }
        if (st == ZGPU_OK) st = put_code(&w, cur);
    }
    if (st == ZGPU_OK) st = put_code(&w, LZW_EOI);
    if (st == ZGPU_OK) st = flush_bits(&w);
    free(keys);
    free(vals);
    return st;
}

size_t zg_tiff_lzw_bound(size_t n) {
    /* 12 bits a byte at worst, a ClearCode every 3838 codes, the first ClearCode, EOI and a partial byte */
    if (n > (SIZE_MAX - 64) / 2) return SIZE_MAX;
    size_t codes = n + n / 3838 + 3;
    return codes + codes / 2 + 2;
}

/* ---- the codec ---- */
static zgpu_status lzw_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "tiff_lzw: configuration must be an object");
    static const char *const keys[] = {NULL};
    ZG_FORWARD(zg_config_only(config, "tiff_lzw", NULL, keys));
    zg_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "tiff_lzw: out of memory");
    c->vt = &zg_codec_tiff_lzw;
    if (decoded) c->decoded = c->encoded = *decoded;
    *out = c;
    return ZGPU_OK;
}

static void lzw_destroy(zg_codec *c) { free(c); }

static zj_value *lzw_to_json(const zg_codec *c) {
    (void)c;
    return zg_codec_json("tiff_lzw", NULL);
}

static zgpu_status lzw_decode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    (void)c;
    return zg_tiff_lzw_decode(in, n, out, want.exact, zg_out_limit(want, out));
}

static zgpu_status lzw_encode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out) {
    (void)c;
    out->size = 0;
    return zg_tiff_lzw_encode(in, n, out, 0);
}

static size_t lzw_encoded_size(const zg_codec *c, size_t decoded, int *exact) {
    (void)c;
    *exact = 0;
    return zg_tiff_lzw_bound(decoded);
}

/* On the GPU: zgpu's LZW decoder (src/gpucodec/lzw/), which takes new-style streams (old-style ones decode on the
 * host) and checks them by the same rules as it decodes. */
static void lzw_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    (void)c;
    out->kind = ZG_GPU_STAGE_COMPRESSOR;
    out->format = ZG_GPU_FORMAT_TIFF_LZW;
}

const zg_codec_vtable zg_codec_tiff_lzw = {
    .name = "tiff_lzw",
    .kind = ZG_BYTES_TO_BYTES,
    .create = lzw_create,
    .destroy = lzw_destroy,
    .to_json = lzw_to_json,
    .decode_bytes = lzw_decode,
    .encode_bytes = lzw_encode,
    .encoded_size = lzw_encoded_size,
    .gpu_stage = lzw_gpu_stage,
};
