/* vlen-utf8 and vlen-bytes (codec/vlen.h): numcodecs' variable-length format as a Zarr v3 array->bytes codec. */
#include "codec/vlen.h"

#include <stdlib.h>
#include <string.h>

#include "common/status.h"

typedef struct vlen_codec {
    zg_codec base;
    int utf8; /* vlen-utf8: elements must be UTF-8 */
} vlen_codec;

extern const zg_codec_vtable zg_codec_vlen_utf8, zg_codec_vlen_bytes;

static const char *codec_name(const zg_codec *c) { return c->vt->name; }

static zgpu_status vlen_create(const zj_value *config, const zg_repr *decoded, zg_codec **out, int utf8) {
    const char *name = utf8 ? "vlen-utf8" : "vlen-bytes";
    static const char *const none[] = {NULL};
    ZG_FORWARD(zg_config_only(config, name, name, none));
    zg_dtype_kind want = utf8 ? ZG_KIND_STRING : ZG_KIND_BYTES;
    /* zarr-python pairs "string" with vlen-utf8 and variable_length_bytes with vlen-bytes */
    ZG_RETURN_IF(decoded->dtype.kind != want, ZGPU_ERR_BAD_METADATA, "%s: the data type is %s, not %s", name,
                 decoded->dtype.name, utf8 ? "string" : "variable_length_bytes");
    vlen_codec *v = calloc(1, sizeof *v);
    ZG_RETURN_IF(!v, ZGPU_ERR_NO_MEMORY, "%s: out of memory", name);
    v->base.vt = utf8 ? &zg_codec_vlen_utf8 : &zg_codec_vlen_bytes;
    v->base.decoded = *decoded;
    v->base.encoded = *decoded;
    v->utf8 = utf8;
    *out = &v->base;
    return ZGPU_OK;
}

static zgpu_status utf8_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    return vlen_create(config, decoded, out, 1);
}
static zgpu_status bytes_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    return vlen_create(config, decoded, out, 0);
}

static void vlen_destroy(zg_codec *c) { free(c); }

/* As zarr-python writes them: an empty configuration. */
static zj_value *vlen_to_json(const zg_codec *c) {
    zj_value *conf = zj_new_object();
    return conf ? zg_codec_json(codec_name(c), conf) : NULL;
}

static zj_value *vlen_to_json_v2(const zg_codec *c) {
    zj_value *o = zj_new_object();
    if (o && zj_set(o, "id", zj_new_string(codec_name(c))) != ZGPU_OK) {
        zj_free(o);
        return NULL;
    }
    return o;
}

int zg_is_vlen_codec(const zg_codec *c) { return c && (c->vt == &zg_codec_vlen_utf8 || c->vt == &zg_codec_vlen_bytes); }

static uint32_t load_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

zgpu_status zg_vlen_parse(const zg_codec *c, const uint8_t *in, size_t n, uint64_t count, uint64_t *offs,
                          uint32_t *lens) {
    const char *name = codec_name(c);
    const int utf8 = ((const vlen_codec *)c)->utf8;
    ZG_RETURN_IF(n < 4, ZGPU_ERR_CORRUPT_DATA, "%s: chunk of %zu bytes is too short for its item count", name, n);
    uint32_t stored = load_u32le(in);
    ZG_RETURN_IF(stored != count, ZGPU_ERR_CORRUPT_DATA, "%s: chunk says it holds %u items, its shape holds %llu",
                 name, stored, (unsigned long long)count);
    size_t at = 4;
    for (uint64_t i = 0; i < count; i++) {
        ZG_RETURN_IF(n - at < 4, ZGPU_ERR_CORRUPT_DATA,
                     "%s: chunk ends (after %zu bytes) before the length of item %llu", name, n,
                     (unsigned long long)i);
        uint32_t len = load_u32le(in + at);
        at += 4;
        ZG_RETURN_IF(len > n - at, ZGPU_ERR_CORRUPT_DATA,
                     "%s: item %llu says it has %u bytes, the chunk has %zu left", name, (unsigned long long)i, len,
                     n - at);
        ZG_RETURN_IF(utf8 && !zg_utf8_valid(in + at, len), ZGPU_ERR_CORRUPT_DATA, "%s: item %llu is not valid UTF-8",
                     name, (unsigned long long)i);
        offs[i] = at;
        lens[i] = len;
        at += len;
    }
    ZG_RETURN_IF(at != n, ZGPU_ERR_CORRUPT_DATA, "%s: %zu bytes follow the last of the chunk's %llu items", name,
                 n - at, (unsigned long long)count);
    return ZGPU_OK;
}

static void store_u32le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

zgpu_status zg_vlen_encode(const zg_codec *c, uint64_t count, const uint8_t *const *ptrs, const uint32_t *lens,
                           zg_buf *out) {
    const char *name = codec_name(c);
    const int utf8 = ((const vlen_codec *)c)->utf8;
    ZG_RETURN_IF(count > UINT32_MAX, ZGPU_ERR_UNSUPPORTED, "%s: a chunk of %llu items is more than the format's "
                 "u32 count holds", name, (unsigned long long)count);
    size_t total = 4;
    for (uint64_t i = 0; i < count; i++) {
        ZG_RETURN_IF(utf8 && !zg_utf8_valid(ptrs[i], lens[i]), ZGPU_ERR_INVALID_ARGUMENT,
                     "%s: item %llu is not valid UTF-8", name, (unsigned long long)i);
        ZG_RETURN_IF(total > SIZE_MAX - 4 - lens[i], ZGPU_ERR_NO_MEMORY, "%s: chunk too large", name);
        total += 4 + (size_t)lens[i];
    }
    ZG_RETURN_IF(total > SIZE_MAX - out->size, ZGPU_ERR_NO_MEMORY, "%s: chunk too large", name);
    ZG_FORWARD(zg_buf_reserve(out, out->size + total));
    uint8_t *p = out->data + out->size;
    store_u32le(p, (uint32_t)count);
    p += 4;
    for (uint64_t i = 0; i < count; i++) {
        store_u32le(p, lens[i]);
        if (lens[i]) memcpy(p + 4, ptrs[i], lens[i]);
        p += 4 + lens[i];
    }
    out->size += total;
    return ZGPU_OK;
}

/* The fixed-element entry points: a vlen chunk has no array of fixed-size elements to decode into. */
static zgpu_status vlen_no_array(const zg_codec *c) {
    return zg_error(ZGPU_ERR_UNSUPPORTED, "%s: variable-length elements have no fixed-size form (read and write "
                    "them with zgpu_array_read_vlen / zgpu_array_write_vlen)", codec_name(c));
}
static zgpu_status vlen_decode(const zg_codec *c, const uint8_t *in, size_t n, uint8_t *out) {
    (void)in, (void)n, (void)out;
    return vlen_no_array(c);
}
static zgpu_status vlen_encode(const zg_codec *c, const uint8_t *in, zg_buf *out) {
    (void)in, (void)out;
    return vlen_no_array(c);
}

static void vlen_gpu_stage(const zg_codec *c, zg_gpu_stage *out) {
    (void)c;
    out->kind = ZG_GPU_STAGE_NONE;
    out->why = "variable-length elements cannot live in a strided device array";
}

const zg_codec_vtable zg_codec_vlen_utf8 = {
    .name = "vlen-utf8",
    .kind = ZG_ARRAY_TO_BYTES,
    .create = utf8_create,
    .destroy = vlen_destroy,
    .to_json = vlen_to_json,
    .to_json_v2 = vlen_to_json_v2,
    .decode_to_array = vlen_decode,
    .encode_from_array = vlen_encode,
    .gpu_stage = vlen_gpu_stage,
};

const zg_codec_vtable zg_codec_vlen_bytes = {
    .name = "vlen-bytes",
    .kind = ZG_ARRAY_TO_BYTES,
    .create = bytes_create,
    .destroy = vlen_destroy,
    .to_json = vlen_to_json,
    .to_json_v2 = vlen_to_json_v2,
    .decode_to_array = vlen_decode,
    .encode_from_array = vlen_encode,
    .gpu_stage = vlen_gpu_stage,
};
