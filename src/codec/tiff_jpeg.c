/* tiff_jpeg codec: TIFF's JPEG compression (Compression = 7, TIFF Technical Note 2), bytes -> bytes, decode only,
 * through libjpeg-turbo. Each tile or strip is a JPEG datastream, usually abbreviated: its quantisation and
 * Huffman tables come from the page's JPEGTables tag (347), read into the decompressor first.
 * Configuration:
 *   "tables"       the JPEGTables bytes, base64 (absent: the streams carry their own tables)
 *   "samples_per_pixel"  components of each stream: 1 (the chunk's last axis is the row), or the length of the
 *                  chunk's last axis (rows of width x components)
 *   "photometric"  the page's PhotometricInterpretation: 6 (YCbCr) decodes to RGB as libtiff's RGB colour mode,
 *                  tifffile and GDAL do; any other value keeps the components as stored
 * The decoded chunk holds rows of width x components 8-bit samples: the stream's width and components must match
 * it and its height may be at most the chunk's (a short last strip: the chain pads it). libjpeg's errors and
 * warnings come back through setjmp as this codec's errors, never as an exit. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include "codec/codec.h"
#include "common/base64.h"
#include "common/status.h"

extern const zg_codec_vtable zg_codec_tiff_jpeg;

typedef struct jpeg_codec {
    zg_codec base;
    uint8_t *tables;
    size_t tables_n;
    char *tables_b64; /* as configured, for to_json */
    int photometric;
    uint64_t width, components, height; /* of the chunk: its last axis (components), the one before (width) */
} jpeg_codec;

/* Padded standard base64 -> bytes (malloc'd); 0 on bad text. */
static int b64_decode(const char *s, size_t len, uint8_t **out, size_t *out_n) {
    const size_t cap = len / 4 * 3;
    uint8_t *o = malloc(cap + 1);
    if (!o) return 0;
    if (!zg_base64_decode(s, len, o, cap, out_n)) {
        free(o);
        return 0;
    }
    *out = o;
    return 1;
}

static zgpu_status jpeg_create(const zj_value *config, const zg_repr *decoded, zg_codec **out) {
    ZG_RETURN_IF(config && config->type != ZJ_OBJECT, ZGPU_ERR_BAD_METADATA, "tiff_jpeg: configuration must be an object");
    static const char *const keys[] = {"tables", "photometric", "samples_per_pixel", NULL};
    ZG_FORWARD(zg_config_only(config, "tiff_jpeg", NULL, keys));
    const char *tables = NULL;
    int64_t photometric;
    ZG_FORWARD(zg_config_str(config, "tiff_jpeg", "tables", NULL, &tables));
    ZG_FORWARD(zg_config_int(config, "tiff_jpeg", "photometric", 1, 0, 65535, &photometric));
    int64_t spp;
    ZG_FORWARD(zg_config_int(config, "tiff_jpeg", "samples_per_pixel", 1, 1, 4, &spp));
    ZG_RETURN_IF(!decoded || decoded->dtype.size != 1 || decoded->ndim < 1, ZGPU_ERR_UNSUPPORTED,
                 "tiff_jpeg: decodes 8-bit samples, not %s", decoded ? decoded->dtype.name : "an unknown chunk");
    ZG_RETURN_IF(spp > 1 && (decoded->ndim < 2 || decoded->shape[decoded->ndim - 1] != (uint64_t)spp),
                 ZGPU_ERR_BAD_METADATA, "tiff_jpeg: the chunk's last axis is not the %lld samples of a pixel",
                 (long long)spp);
    jpeg_codec *c = calloc(1, sizeof *c);
    ZG_RETURN_IF(!c, ZGPU_ERR_NO_MEMORY, "tiff_jpeg: out of memory");
    c->base.vt = &zg_codec_tiff_jpeg;
    c->base.decoded = c->base.encoded = *decoded;
    c->photometric = (int)photometric;
    c->components = (uint64_t)spp;
    c->width = decoded->shape[decoded->ndim - (spp > 1 ? 2 : 1)];
    c->height = (c->width && c->components) ? zg_repr_count(decoded) / (c->width * c->components) : 0;
    if (tables) {
        if (!b64_decode(tables, strlen(tables), &c->tables, &c->tables_n) || !(c->tables_b64 = strdup(tables))) {
            free(c->tables);
            free(c);
            return zg_error(ZGPU_ERR_BAD_METADATA, "tiff_jpeg: \"tables\" is not base64");
        }
    }
    *out = &c->base;
    return ZGPU_OK;
}

static void tj_destroy(zg_codec *cc) {
    jpeg_codec *c = (jpeg_codec *)cc;
    if (!c) return;
    free(c->tables);
    free(c->tables_b64);
    free(c);
}

static zj_value *jpeg_to_json(const zg_codec *cc) {
    const jpeg_codec *c = (const jpeg_codec *)cc;
    zj_value *conf = zj_new_object();
    if (!conf) return NULL;
    if ((c->tables_b64 && zj_set(conf, "tables", zj_new_string(c->tables_b64)) != ZGPU_OK) ||
        zj_set(conf, "photometric", zj_new_int(c->photometric)) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    if (zj_set(conf, "samples_per_pixel", zj_new_uint(c->components)) != ZGPU_OK) {
        zj_free(conf);
        return NULL;
    }
    return zg_codec_json("tiff_jpeg", conf);
}

typedef struct jpeg_err {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char text[JMSG_LENGTH_MAX];
} jpeg_err;

static void on_error(j_common_ptr cinfo) {
    jpeg_err *e = (jpeg_err *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, e->text);
    longjmp(e->jump, 1);
}

/* Corrupt-data warnings (libjpeg fills in what it could not decode) fail the chunk: never silently wrong data. */
static void on_message(j_common_ptr cinfo, int level) {
    if (level < 0) on_error(cinfo);
}

typedef struct jpeg_job {
    struct jpeg_decompress_struct d;
    jpeg_err err;
    uint8_t *out;
    size_t have;
} jpeg_job;

static zgpu_status decode_into(const jpeg_codec *c, jpeg_job *job, const uint8_t *in, size_t n, size_t limit) {
    struct jpeg_decompress_struct *d = &job->d;
    if (c->tables_n) {
        jpeg_mem_src(d, c->tables, (unsigned long)c->tables_n);
        ZG_RETURN_IF(jpeg_read_header(d, FALSE) != JPEG_HEADER_TABLES_ONLY, ZGPU_ERR_CORRUPT_DATA,
                     "tiff_jpeg: JPEGTables holds no tables-only datastream");
    }
    jpeg_mem_src(d, in, (unsigned long)n);
    ZG_RETURN_IF(jpeg_read_header(d, TRUE) != JPEG_HEADER_OK, ZGPU_ERR_CORRUPT_DATA, "tiff_jpeg: no image in the stream");
    ZG_RETURN_IF(d->data_precision != 8, ZGPU_ERR_UNSUPPORTED,
                 "tiff_jpeg: %d-bit JPEG is not supported (8-bit samples only)", d->data_precision);
    if (c->photometric == 6 && d->num_components == 3) {
        d->jpeg_color_space = JCS_YCbCr;
        d->out_color_space = JCS_RGB;
    } else if (d->num_components != 1) {
        d->jpeg_color_space = JCS_UNKNOWN; /* the components as stored (RGB, CMYK, separated) */
        d->out_color_space = JCS_UNKNOWN;
    }
    jpeg_start_decompress(d);
    ZG_RETURN_IF(d->output_width != c->width || (uint64_t)d->output_components != c->components ||
                     d->output_height > c->height,
                 ZGPU_ERR_CORRUPT_DATA,
                 "tiff_jpeg: the stream is %ux%u with %d components; the chunk holds %llu rows of %llu x %llu",
                 d->output_width, d->output_height, d->output_components, (unsigned long long)c->height,
                 (unsigned long long)c->width, (unsigned long long)c->components);
    const size_t row = (size_t)d->output_width * (size_t)d->output_components;
    ZG_RETURN_IF((size_t)d->output_height * row > limit, ZGPU_ERR_CORRUPT_DATA,
                 "tiff_jpeg: data decodes to more than the %zu bytes this chunk can hold", limit);
    while (d->output_scanline < d->output_height) {
        JSAMPROW r = job->out + (size_t)d->output_scanline * row;
        ZG_RETURN_IF(jpeg_read_scanlines(d, &r, 1) != 1, ZGPU_ERR_CORRUPT_DATA, "tiff_jpeg: truncated stream");
    }
    job->have = (size_t)d->output_height * row;
    jpeg_finish_decompress(d);
    return ZGPU_OK;
}

static zgpu_status jpeg_decode(const zg_codec *cc, const uint8_t *in, size_t n, zg_buf *out, zg_out_size want) {
    const jpeg_codec *c = (const jpeg_codec *)cc;
    const size_t chunk = (size_t)zg_repr_nbytes(&cc->decoded);
    size_t limit = zg_out_limit(want, out);
    if (limit > chunk) limit = chunk;
    out->size = 0;
    ZG_FORWARD(zg_buf_reserve(out, limit ? limit : 1));
    jpeg_job *job = calloc(1, sizeof *job);
    ZG_RETURN_IF(!job, ZGPU_ERR_NO_MEMORY, "tiff_jpeg: out of memory");
    job->out = out->data;
    job->d.err = jpeg_std_error(&job->err.mgr);
    job->err.mgr.error_exit = on_error;
    job->err.mgr.emit_message = on_message;
    zgpu_status st;
    if (setjmp(job->err.jump)) {
        st = zg_error(ZGPU_ERR_CORRUPT_DATA, "tiff_jpeg: %s", job->err.text);
    } else {
        jpeg_create_decompress(&job->d);
        st = decode_into(c, job, in, n, limit);
    }
    jpeg_destroy_decompress(&job->d);
    size_t have = job->have;
    free(job);
    ZG_FORWARD(st);
    out->size = have;
    ZG_RETURN_IF(want.exact != SIZE_MAX && have != want.exact, ZGPU_ERR_CORRUPT_DATA,
                 "tiff_jpeg: data decodes to %zu bytes, expected %zu", have, want.exact);
    return ZGPU_OK;
}

static zgpu_status jpeg_encode(const zg_codec *c, const uint8_t *in, size_t n, zg_buf *out) {
    (void)c, (void)in, (void)n, (void)out;
    return zg_error(ZGPU_ERR_UNSUPPORTED, "tiff_jpeg: decode only (JPEG is lossy; zgpu writes no TIFF)");
}

const zg_codec_vtable zg_codec_tiff_jpeg = {
    .name = "tiff_jpeg",
    .kind = ZG_BYTES_TO_BYTES,
    .create = jpeg_create,
    .destroy = tj_destroy,
    .to_json = jpeg_to_json,
    .decode_bytes = jpeg_decode,
    .encode_bytes = jpeg_encode,
};
