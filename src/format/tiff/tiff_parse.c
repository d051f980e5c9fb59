/* The TIFF / BigTIFF parser (tiff.h). TIFF 6.0 for the structure and the baseline tags, the BigTIFF design
 * (version 43, 8-byte offsets and counts, 20-byte entries), Adobe's tech notes for tiles, SubIFDs and predictor 3,
 * GeoTIFF 1.1 for the geo tags. Every offset and count is checked against the file before it is followed. */
#include "format/tiff/tiff.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/status.h"

enum {
    T_NEW_SUBFILE = 254, T_WIDTH = 256, T_HEIGHT = 257, T_BITS = 258, T_COMPRESSION = 259, T_PHOTOMETRIC = 262,
    T_STRIP_OFFSETS = 273, T_SAMPLES = 277, T_ROWS_PER_STRIP = 278, T_STRIP_COUNTS = 279, T_PLANAR = 284,
    T_PREDICTOR = 317, T_TILE_WIDTH = 322, T_TILE_LENGTH = 323, T_TILE_OFFSETS = 324, T_TILE_COUNTS = 325,
    T_SUBIFDS = 330, T_SAMPLE_FORMAT = 339, T_JPEG_TABLES = 347, T_YCBCR_SUBSAMPLING = 530, T_IMAGE_DEPTH = 32997,
    T_PIXEL_SCALE = 33550, T_TIEPOINT = 33922, T_TRANSFORM = 34264, T_GEOKEYS = 34735, T_GEO_DOUBLES = 34736,
    T_GEO_ASCII = 34737, T_GDAL_NODATA = 42113
};

/* Bytes of each field type (TIFF 6.0 types 1-12, 13 IFD; BigTIFF 16 LONG8, 17 SLONG8, 18 IFD8); 0: unknown */
static unsigned type_size(unsigned t) {
    static const unsigned sz[19] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8, 8, 8};
    return t < 19 ? sz[t] : 0;
}

typedef struct entry {
    uint16_t tag, type;
    uint64_t count;
    uint8_t inline_bytes[8];
    uint64_t offset; /* where the values are (their inline bytes sit in the IFD itself) */
    int is_inline;
} entry;

typedef struct parser {
    zg_tiff_read_fn read;
    void *user;
    uint64_t size;
    const char *name;
    int be, big;
    char where[96]; /* "page 3" / "page 0, SubIFD 1": for messages */
    uint64_t total_chunks; /* over every page: bounds what the tile tables of a file may allocate */
} parser;

static uint64_t ld(const parser *p, const uint8_t *b, unsigned n) {
    uint64_t v = 0;
    if (p->be) for (unsigned i = 0; i < n; i++) v = v << 8 | b[i];
    else for (unsigned i = n; i-- > 0;) v = v << 8 | b[i];
    return v;
}

static zgpu_status read_at(parser *p, uint64_t off, uint64_t n, uint8_t *out, const char *what) {
    ZG_RETURN_IF(off > p->size || n > p->size - off, ZGPU_ERR_CORRUPT_DATA,
                 "TIFF file '%s', %s: %s (%llu bytes at offset %llu) lies past the end of the %llu-byte file", p->name,
                 p->where, what, (unsigned long long)n, (unsigned long long)off, (unsigned long long)p->size);
    zgpu_status st = p->read(p->user, off, n, out);
    if (st != ZGPU_OK) zg_error_prefix("TIFF file '%s', %s, reading %s: ", p->name, p->where, what);
    return st;
}

int zg_tiff_magic(const uint8_t *h, size_t n) {
    if (n < 4) return 0;
    return (h[0] == 'I' && h[1] == 'I' && (h[2] == 42 || h[2] == 43) && h[3] == 0) ||
           (h[0] == 'M' && h[1] == 'M' && h[2] == 0 && (h[3] == 42 || h[3] == 43));
}

/* The values of an entry as unsigned integers (integer types only; signed ones must not be negative). */
static zgpu_status values_u64(parser *p, const entry *e, uint64_t max_count, uint64_t **out, const char *what) {
    *out = NULL;
    const unsigned ts = type_size(e->type);
    ZG_RETURN_IF(!(e->type == 1 || e->type == 3 || e->type == 4 || e->type == 13 || e->type == 16 || e->type == 18 ||
                   e->type == 8 || e->type == 9 || e->type == 17 || e->type == 7),
                 ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: tag %s (%u) has type %u, not an integer type", p->name,
                 p->where, what, e->tag, e->type);
    ZG_RETURN_IF(e->count > max_count, ZGPU_ERR_CORRUPT_DATA,
                 "TIFF file '%s', %s: tag %s (%u) has %llu values, more than the %llu it can have", p->name, p->where,
                 what, e->tag, (unsigned long long)e->count, (unsigned long long)max_count);
    const uint64_t nbytes = e->count * ts;
    uint8_t *raw = malloc(nbytes ? (size_t)nbytes : 1);
    uint64_t *v = malloc(e->count ? (size_t)e->count * sizeof *v : 1);
    if (!raw || !v) {
        free(raw);
        free(v);
        return zg_error(ZGPU_ERR_NO_MEMORY, "TIFF file '%s', %s: out of memory for tag %s", p->name, p->where, what);
    }
    zgpu_status st = ZGPU_OK;
    if (e->is_inline) memcpy(raw, e->inline_bytes, (size_t)nbytes);
    else st = read_at(p, e->offset, nbytes, raw, what);
    for (uint64_t i = 0; st == ZGPU_OK && i < e->count; i++) {
        uint64_t x = ld(p, raw + i * ts, ts);
        int negative = (e->type == 8 && (x & 0x8000)) || (e->type == 9 && (x & 0x80000000u)) ||
                       (e->type == 17 && (x >> 63));
        if (negative)
            st = zg_error(ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: tag %s (%u) holds a negative value", p->name,
                          p->where, what, e->tag);
        v[i] = x;
    }
    free(raw);
    if (st != ZGPU_OK) {
        free(v);
        return st;
    }
    *out = v;
    return ZGPU_OK;
}

static zgpu_status value_u64(parser *p, const entry *e, uint64_t *out, const char *what) {
    ZG_RETURN_IF(e->count < 1, ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: tag %s (%u) has no value", p->name,
                 p->where, what, e->tag);
    entry one = *e;
    one.count = 1; /* the first value (a per-sample tag repeated: checked by the caller where it matters) */
    uint64_t *v;
    ZG_FORWARD(values_u64(p, &one, 1, &v, what));
    *out = v[0];
    free(v);
    return ZGPU_OK;
}

/* Values of a DOUBLE (or FLOAT / integer) tag. */
static zgpu_status values_double(parser *p, const entry *e, uint64_t max_count, double **out, const char *what) {
    *out = NULL;
    if (e->type != 11 && e->type != 12) {
        uint64_t *u;
        ZG_FORWARD(values_u64(p, e, max_count, &u, what));
        double *d = malloc(e->count ? (size_t)e->count * sizeof *d : 1);
        if (!d) {
            free(u);
            return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        }
        for (uint64_t i = 0; i < e->count; i++) d[i] = (double)u[i];
        free(u);
        *out = d;
        return ZGPU_OK;
    }
    ZG_RETURN_IF(e->count > max_count, ZGPU_ERR_CORRUPT_DATA,
                 "TIFF file '%s', %s: tag %s (%u) has %llu values, more than the %llu it can have", p->name, p->where,
                 what, e->tag, (unsigned long long)e->count, (unsigned long long)max_count);
    const unsigned ts = type_size(e->type);
    uint8_t *raw = malloc(e->count ? (size_t)(e->count * ts) : 1);
    double *d = malloc(e->count ? (size_t)e->count * sizeof *d : 1);
    if (!raw || !d) {
        free(raw);
        free(d);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    zgpu_status st = ZGPU_OK;
    if (e->is_inline) memcpy(raw, e->inline_bytes, (size_t)(e->count * ts));
    else st = read_at(p, e->offset, e->count * ts, raw, what);
    for (uint64_t i = 0; st == ZGPU_OK && i < e->count; i++) {
        uint64_t bits = ld(p, raw + i * ts, ts);
        if (ts == 8) memcpy(&d[i], &bits, 8);
        else {
            uint32_t b32 = (uint32_t)bits;
            float f;
            memcpy(&f, &b32, 4);
            d[i] = f;
        }
    }
    free(raw);
    if (st != ZGPU_OK) {
        free(d);
        return st;
    }
    *out = d;
    return ZGPU_OK;
}

/* Raw bytes of a BYTE / UNDEFINED / ASCII tag (ASCII: NUL-terminated, cut at its first NUL). */
static zgpu_status values_bytes(parser *p, const entry *e, uint64_t max_count, uint8_t **out, size_t *n,
                                const char *what) {
    *out = NULL;
    ZG_RETURN_IF(type_size(e->type) != 1, ZGPU_ERR_CORRUPT_DATA,
                 "TIFF file '%s', %s: tag %s (%u) has type %u, not bytes or text", p->name, p->where, what, e->tag,
                 e->type);
    ZG_RETURN_IF(e->count > max_count, ZGPU_ERR_CORRUPT_DATA,
                 "TIFF file '%s', %s: tag %s (%u) has %llu bytes, more than the %llu it can have", p->name, p->where,
                 what, e->tag, (unsigned long long)e->count, (unsigned long long)max_count);
    uint8_t *b = malloc((size_t)e->count + 1);
    ZG_RETURN_IF(!b, ZGPU_ERR_NO_MEMORY, "out of memory");
    zgpu_status st = ZGPU_OK;
    if (e->is_inline) memcpy(b, e->inline_bytes, (size_t)e->count);
    else st = read_at(p, e->offset, e->count, b, what);
    if (st != ZGPU_OK) {
        free(b);
        return st;
    }
    b[e->count] = 0;
    *out = b;
    *n = (size_t)e->count;
    return ZGPU_OK;
}

/* Reads the IFD at `off`: its entries (sorted or not) and the offset of the next one. */
static zgpu_status read_ifd(parser *p, uint64_t off, entry **out, size_t *n_out, uint64_t *next) {
    *out = NULL;
    *n_out = 0;
    const unsigned head = p->big ? 8 : 2, esz = p->big ? 20 : 12, nsz = p->big ? 8 : 4;
    ZG_RETURN_IF(off < (p->big ? 16u : 8u) || (off & 1), ZGPU_ERR_CORRUPT_DATA,
                 "TIFF file '%s', %s: IFD offset %llu is %s", p->name, p->where, (unsigned long long)off,
                 (off & 1) ? "odd (IFDs start on a word boundary)" : "inside the header");
    uint8_t hb[8];
    ZG_FORWARD(read_at(p, off, head, hb, "the IFD's entry count"));
    const uint64_t count = ld(p, hb, head);
    ZG_RETURN_IF(count == 0 || count > ZG_TIFF_MAX_ENTRIES, ZGPU_ERR_CORRUPT_DATA,
                 "TIFF file '%s', %s: IFD at offset %llu has %llu entries (1 to %d allowed)", p->name, p->where,
                 (unsigned long long)off, (unsigned long long)count, ZG_TIFF_MAX_ENTRIES);
    const uint64_t body = count * esz + nsz;
    uint8_t *raw = malloc((size_t)body);
    entry *es = calloc((size_t)count, sizeof *es);
    if (!raw || !es) {
        free(raw);
        free(es);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    zgpu_status st = read_at(p, off + head, body, raw, "the IFD");
    for (uint64_t i = 0; st == ZGPU_OK && i < count; i++) {
        const uint8_t *r = raw + i * esz;
        entry *e = &es[i];
        e->tag = (uint16_t)ld(p, r, 2);
        e->type = (uint16_t)ld(p, r + 2, 2);
        e->count = ld(p, r + 4, p->big ? 8 : 4);
        const uint8_t *vf = r + (p->big ? 12 : 8);
        const unsigned ts = type_size(e->type), room = p->big ? 8 : 4;
        if (!ts) continue; /* an unknown type: skipped, as TIFF readers must ("ignore fields of unknown types") */
        if (e->count > p->size / ts + 8) {
            /* more values than the file has bytes: only a lie can say so (zero-byte types are not counted) */
            if (e->tag == T_TILE_OFFSETS || e->tag == T_TILE_COUNTS || e->tag == T_STRIP_OFFSETS ||
                e->tag == T_STRIP_COUNTS || e->tag == T_WIDTH || e->tag == T_HEIGHT)
                st = zg_error(ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: tag %u claims %llu values, more than the "
                              "%llu-byte file holds", p->name, p->where, e->tag, (unsigned long long)e->count,
                              (unsigned long long)p->size);
            e->type = 0; /* else skipped */
            continue;
        }
        if (e->count * ts <= room) {
            e->is_inline = 1;
            memcpy(e->inline_bytes, vf, room);
        } else {
            e->offset = ld(p, vf, room);
        }
    }
    if (st == ZGPU_OK) *next = ld(p, raw + count * esz, nsz);
    free(raw);
    if (st != ZGPU_OK) {
        free(es);
        return st;
    }
    *out = es;
    *n_out = (size_t)count;
    return ZGPU_OK;
}

static const entry *find(const entry *es, size_t n, uint16_t tag) {
    for (size_t i = 0; i < n; i++)
        if (es[i].tag == tag && es[i].type) return &es[i];
    return NULL;
}

/* A tag that must be there, as one integer. */
static zgpu_status need_u64(parser *p, const entry *es, size_t n, uint16_t tag, const char *what, uint64_t *out) {
    const entry *e = find(es, n, tag);
    ZG_RETURN_IF(!e, ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: required tag %s (%u) is missing", p->name, p->where,
                 what, tag);
    return value_u64(p, e, out, what);
}
static zgpu_status opt_u64(parser *p, const entry *es, size_t n, uint16_t tag, const char *what, uint64_t def,
                           uint64_t *out) {
    const entry *e = find(es, n, tag);
    *out = def;
    return e ? value_u64(p, e, out, what) : ZGPU_OK;
}

/* A per-sample tag (BitsPerSample, SampleFormat): every sample the same; absent -> def. */
static zgpu_status per_sample(parser *p, const entry *es, size_t n, uint16_t tag, const char *what, uint64_t samples,
                              uint64_t def, uint32_t *out) {
    const entry *e = find(es, n, tag);
    *out = (uint32_t)def;
    if (!e) return ZGPU_OK;
    uint64_t *v;
    ZG_FORWARD(values_u64(p, e, 65535, &v, what));
    zgpu_status st = ZGPU_OK;
    if (e->count == 0) st = zg_error(ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: %s has no value", p->name, p->where, what);
    for (uint64_t i = 1; st == ZGPU_OK && i < e->count && i < samples; i++)
        if (v[i] != v[0])
            st = zg_error(ZGPU_ERR_UNSUPPORTED, "TIFF file '%s', %s: samples of different %s (%llu and %llu) are not "
                          "supported", p->name, p->where, what, (unsigned long long)v[0], (unsigned long long)v[i]);
    if (st == ZGPU_OK) {
        if (v[0] > 65535) st = zg_error(ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: %s %llu", p->name, p->where,
                                        what, (unsigned long long)v[0]);
        else *out = (uint32_t)v[0];
    }
    free(v);
    return st;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

const char *zg_tiff_compression_name(uint32_t c) {
    switch (c) {
    case 1: return "none";
    case 5: return "LZW";
    case 6: return "old-style JPEG";
    case 7: return "JPEG";
    case 8: return "Deflate";
    case 32946: return "Deflate (PKZIP)";
    case 32773: return "PackBits";
    case 34925: return "LZMA";
    case 50000: return "Zstd";
    case 50001: return "WebP";
    case 34887: return "LERC";
    default: return "unknown";
    }
}

const char *zg_tiff_dtype_name(const zg_tiff_page *pg) {
    static const char *const u[] = {"uint8", "uint16", "uint32", "uint64"}, *const s[] = {"int8", "int16", "int32", "int64"},
                             *const f[] = {NULL, "float16", "float32", "float64"};
    int k = pg->bits == 8 ? 0 : pg->bits == 16 ? 1 : pg->bits == 32 ? 2 : pg->bits == 64 ? 3 : -1;
    if (k < 0) return NULL;
    if (pg->sample_format == 1) return u[k];
    if (pg->sample_format == 2) return s[k];
    if (pg->sample_format == 3) return f[k];
    return NULL;
}

/* The page from its IFD: everything checked that later code relies on. */
static zgpu_status page_from_ifd(parser *p, const entry *es, size_t n, zg_tiff_page *pg) {
    uint64_t v;
    ZG_FORWARD(opt_u64(p, es, n, T_NEW_SUBFILE, "NewSubfileType", 0, &v));
    pg->subfile_type = (uint32_t)v;
    ZG_FORWARD(need_u64(p, es, n, T_WIDTH, "ImageWidth", &pg->width));
    ZG_FORWARD(need_u64(p, es, n, T_HEIGHT, "ImageLength", &pg->height));
    ZG_RETURN_IF(pg->width == 0 || pg->height == 0 || pg->width > UINT32_MAX || pg->height > UINT32_MAX,
                 ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: image of %llu x %llu pixels", p->name, p->where,
                 (unsigned long long)pg->width, (unsigned long long)pg->height);
    ZG_FORWARD(opt_u64(p, es, n, T_SAMPLES, "SamplesPerPixel", 1, &v));
    ZG_RETURN_IF(v == 0 || v > 1024, ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: SamplesPerPixel %llu", p->name,
                 p->where, (unsigned long long)v);
    pg->samples = (uint32_t)v;
    ZG_FORWARD(per_sample(p, es, n, T_BITS, "BitsPerSample", pg->samples, 1, &pg->bits));
    ZG_FORWARD(per_sample(p, es, n, T_SAMPLE_FORMAT, "SampleFormat", pg->samples, 1, &pg->sample_format));
    ZG_FORWARD(opt_u64(p, es, n, T_COMPRESSION, "Compression", 1, &v));
    pg->compression = (uint32_t)v;
    ZG_FORWARD(opt_u64(p, es, n, T_PHOTOMETRIC, "PhotometricInterpretation", 1, &v));
    pg->photometric = (uint32_t)v;
    ZG_FORWARD(opt_u64(p, es, n, T_PLANAR, "PlanarConfiguration", 1, &v));
    ZG_RETURN_IF(v != 1 && v != 2, ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: PlanarConfiguration %llu (1 or 2)",
                 p->name, p->where, (unsigned long long)v);
    pg->planar = pg->samples > 1 ? (uint32_t)v : 1;
    ZG_FORWARD(opt_u64(p, es, n, T_PREDICTOR, "Predictor", 1, &v));
    pg->predictor = (uint32_t)v;
    ZG_FORWARD(opt_u64(p, es, n, T_IMAGE_DEPTH, "ImageDepth", 1, &v));
    ZG_RETURN_IF(v != 1, ZGPU_ERR_UNSUPPORTED, "TIFF file '%s', %s: volumetric tiles (ImageDepth %llu) are not supported",
                 p->name, p->where, (unsigned long long)v);

    /* what zgpu reads: the data type and codec */
    ZG_RETURN_IF(!zg_tiff_dtype_name(pg), ZGPU_ERR_UNSUPPORTED,
                 "TIFF file '%s', %s: samples of %u bits with SampleFormat %u are not supported (8, 16, 32 or 64-bit "
                 "integers, 16, 32 or 64-bit floats)", p->name, p->where, pg->bits, pg->sample_format);
    switch (pg->compression) {
    case 1: case 5: case 8: case 32946: case 32773: case 34925: case 50000: break;
    case 7:
        ZG_RETURN_IF(pg->bits != 8, ZGPU_ERR_UNSUPPORTED, "TIFF file '%s', %s: %u-bit JPEG is not supported", p->name,
                     p->where, pg->bits);
        break;
    default:
        return zg_error(ZGPU_ERR_UNSUPPORTED, "TIFF file '%s', %s: Compression %u (%s) is not supported", p->name,
                        p->where, pg->compression, zg_tiff_compression_name(pg->compression));
    }
    ZG_RETURN_IF(pg->predictor < 1 || pg->predictor > 3, ZGPU_ERR_UNSUPPORTED,
                 "TIFF file '%s', %s: Predictor %u is not supported (1, 2 or 3)", p->name, p->where, pg->predictor);
    if (pg->compression == 1 || pg->compression == 7) pg->predictor = 1; /* libtiff applies none there */
    ZG_RETURN_IF(pg->predictor == 3 && pg->sample_format != 3, ZGPU_ERR_CORRUPT_DATA,
                 "TIFF file '%s', %s: Predictor 3 (floating point) on %s samples", p->name, p->where,
                 zg_tiff_dtype_name(pg));
    if (pg->photometric == 6 && pg->compression != 7) {
        uint64_t *ss = NULL;
        const entry *e = find(es, n, T_YCBCR_SUBSAMPLING);
        if (e) ZG_FORWARD(values_u64(p, e, 2, &ss, "YCbCrSubSampling"));
        int sub = ss && e->count == 2 && (ss[0] != 1 || ss[1] != 1);
        if (!e) sub = 1; /* the default is 2 x 2 */
        free(ss);
        ZG_RETURN_IF(sub, ZGPU_ERR_UNSUPPORTED, "TIFF file '%s', %s: subsampled YCbCr without JPEG is not supported",
                     p->name, p->where);
    }

    /* layout */
    const entry *to = find(es, n, T_TILE_OFFSETS), *tc = find(es, n, T_TILE_COUNTS);
    const entry *so = find(es, n, T_STRIP_OFFSETS), *sc = find(es, n, T_STRIP_COUNTS);
    pg->planes = pg->planar == 2 ? pg->samples : 1;
    const entry *oe, *ce;
    if (to || tc || find(es, n, T_TILE_WIDTH)) {
        pg->tiled = 1;
        ZG_FORWARD(need_u64(p, es, n, T_TILE_WIDTH, "TileWidth", &pg->tile_width));
        ZG_FORWARD(need_u64(p, es, n, T_TILE_LENGTH, "TileLength", &pg->tile_height));
        ZG_RETURN_IF(pg->tile_width == 0 || pg->tile_height == 0 || pg->tile_width > 65536 || pg->tile_height > 65536,
                     ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: tiles of %llu x %llu pixels", p->name, p->where,
                     (unsigned long long)pg->tile_width, (unsigned long long)pg->tile_height);
        oe = to;
        ce = tc;
        ZG_RETURN_IF(!oe || !ce, ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: a tiled image without %s", p->name,
                     p->where, !oe ? "TileOffsets" : "TileByteCounts");
    } else {
        pg->tiled = 0;
        uint64_t rps;
        ZG_FORWARD(opt_u64(p, es, n, T_ROWS_PER_STRIP, "RowsPerStrip", UINT32_MAX, &rps));
        ZG_RETURN_IF(rps == 0, ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: RowsPerStrip 0", p->name, p->where);
        pg->tile_width = pg->width;
        pg->tile_height = rps < pg->height ? rps : pg->height;
        oe = so;
        ce = sc;
        ZG_RETURN_IF(!oe || !ce, ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: a stripped image without %s", p->name,
                     p->where, !oe ? "StripOffsets" : "StripByteCounts");
    }
    pg->tiles_across = ceil_div(pg->width, pg->tile_width);
    pg->tiles_down = ceil_div(pg->height, pg->tile_height);
    const uint64_t chunk_samples = pg->tile_width * pg->tile_height * (pg->planar == 2 ? 1 : pg->samples);
    ZG_RETURN_IF(chunk_samples > ZG_TIFF_MAX_CHUNK_BYTES / (pg->bits / 8), ZGPU_ERR_UNSUPPORTED,
                 "TIFF file '%s', %s: a %s of %llu x %llu pixels holds more than %llu bytes", p->name, p->where,
                 pg->tiled ? "tile" : "strip", (unsigned long long)pg->tile_width, (unsigned long long)pg->tile_height,
                 (unsigned long long)ZG_TIFF_MAX_CHUNK_BYTES);
    ZG_RETURN_IF(pg->tiles_across * pg->tiles_down > ZG_TIFF_MAX_CHUNKS / pg->planes, ZGPU_ERR_UNSUPPORTED,
                 "TIFF file '%s', %s: more than %llu %s", p->name, p->where, (unsigned long long)ZG_TIFF_MAX_CHUNKS,
                 pg->tiled ? "tiles" : "strips");
    pg->n_chunks = pg->tiles_across * pg->tiles_down * pg->planes;
    p->total_chunks += pg->n_chunks;
    ZG_RETURN_IF(p->total_chunks > 4 * ZG_TIFF_MAX_CHUNKS, ZGPU_ERR_UNSUPPORTED,
                 "TIFF file '%s', %s: more than %llu tiles and strips in all pages", p->name, p->where,
                 (unsigned long long)(4 * ZG_TIFF_MAX_CHUNKS));
    ZG_RETURN_IF(oe->count != pg->n_chunks || ce->count != pg->n_chunks, ZGPU_ERR_CORRUPT_DATA,
                 "TIFF file '%s', %s: %llu %s offsets and %llu byte counts where the layout (%llu x %llu%s) has %llu",
                 p->name, p->where, (unsigned long long)oe->count, pg->tiled ? "tile" : "strip",
                 (unsigned long long)ce->count, (unsigned long long)pg->tiles_down, (unsigned long long)pg->tiles_across,
                 pg->planes > 1 ? " per plane" : "", (unsigned long long)pg->n_chunks);
    ZG_FORWARD(values_u64(p, oe, pg->n_chunks, &pg->offsets, pg->tiled ? "TileOffsets" : "StripOffsets"));
    ZG_FORWARD(values_u64(p, ce, pg->n_chunks, &pg->counts, pg->tiled ? "TileByteCounts" : "StripByteCounts"));
    for (uint64_t i = 0; i < pg->n_chunks; i++) {
        const uint64_t o = pg->offsets[i], c = pg->counts[i];
        if (c == 0) continue; /* sparse: reads as the fill value */
        ZG_RETURN_IF(o > p->size || c > p->size - o, ZGPU_ERR_CORRUPT_DATA,
                     "TIFF file '%s', %s, %s %llu: %llu bytes at offset %llu lie past the end of the %llu-byte file",
                     p->name, p->where, pg->tiled ? "tile" : "strip", (unsigned long long)i, (unsigned long long)c,
                     (unsigned long long)o, (unsigned long long)p->size);
    }

    /* JPEG tables, SubIFDs, geo tags, GDAL's nodata */
    const entry *e;
    if (pg->compression == 7 && (e = find(es, n, T_JPEG_TABLES)))
        ZG_FORWARD(values_bytes(p, e, 1 << 20, &pg->jpeg_tables, &pg->jpeg_tables_n, "JPEGTables"));
    if ((e = find(es, n, T_SUBIFDS))) {
        ZG_FORWARD(values_u64(p, e, ZG_TIFF_MAX_SUBIFDS, &pg->subifd_offsets, "SubIFDs"));
        pg->n_subifds = e->count;
    }
    if ((e = find(es, n, T_TIEPOINT))) {
        ZG_FORWARD(values_double(p, e, 6 * 65536, &pg->tiepoints, "ModelTiepoint"));
        pg->n_tiepoints = (size_t)e->count / 6;
    }
    if ((e = find(es, n, T_PIXEL_SCALE))) {
        double *d;
        ZG_FORWARD(values_double(p, e, 3, &d, "ModelPixelScale"));
        if (e->count == 3) {
            memcpy(pg->pixel_scale, d, sizeof pg->pixel_scale);
            pg->has_pixel_scale = 1;
        }
        free(d);
    }
    if ((e = find(es, n, T_TRANSFORM))) {
        double *d;
        ZG_FORWARD(values_double(p, e, 16, &d, "ModelTransformation"));
        if (e->count == 16) {
            memcpy(pg->transform, d, sizeof pg->transform);
            pg->has_transform = 1;
        }
        free(d);
    }
    if ((e = find(es, n, T_GEOKEYS))) {
        uint64_t *k;
        ZG_FORWARD(values_u64(p, e, 4 * 4096, &k, "GeoKeyDirectory"));
        pg->geokeys = malloc((size_t)e->count * sizeof *pg->geokeys + 1);
        if (!pg->geokeys) {
            free(k);
            return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        }
        for (uint64_t i = 0; i < e->count; i++) pg->geokeys[i] = (uint16_t)k[i];
        pg->n_geokeys = (size_t)e->count;
        free(k);
    }
    if ((e = find(es, n, T_GEO_DOUBLES))) {
        ZG_FORWARD(values_double(p, e, 65536, &pg->geo_doubles, "GeoDoubleParams"));
        pg->n_geo_doubles = (size_t)e->count;
    }
    size_t len;
    if ((e = find(es, n, T_GEO_ASCII)) && e->type == 2)
        ZG_FORWARD(values_bytes(p, e, 65536, (uint8_t **)&pg->geo_ascii, &len, "GeoAsciiParams"));
    if ((e = find(es, n, T_GDAL_NODATA)) && e->type == 2)
        ZG_FORWARD(values_bytes(p, e, 256, (uint8_t **)&pg->nodata, &len, "GDAL_NODATA"));
    return ZGPU_OK;
}

static void page_free(zg_tiff_page *pg) {
    free(pg->offsets);
    free(pg->counts);
    free(pg->jpeg_tables);
    free(pg->subifd_offsets);
    free(pg->tiepoints);
    free(pg->geokeys);
    free(pg->geo_doubles);
    free(pg->geo_ascii);
    free(pg->nodata);
}

void zg_tiff_free(zg_tiff_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_pages; i++) page_free(&f->pages[i]);
    free(f->pages);
    free(f->name);
    memset(f, 0, sizeof *f);
}

/* IFD offsets seen (loop detection): an open-addressing set. */
typedef struct seen_set {
    uint64_t *slots; /* offset + 1; 0 free */
    size_t cap;
} seen_set;

static int seen_add(seen_set *s, uint64_t off) {
    size_t h = (size_t)((off * 0x9E3779B97F4A7C15ull) >> 20) & (s->cap - 1);
    while (s->slots[h]) {
        if (s->slots[h] == off + 1) return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->slots[h] = off + 1;
    return 1;
}

/* Keeps the set at most half full for `count` members. 0 when out of memory. */
static int seen_room(seen_set *s, size_t count) {
    if (2 * count < s->cap) return 1;
    seen_set bigger = {calloc(s->cap * 2, sizeof(uint64_t)), s->cap * 2};
    if (!bigger.slots) return 0;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i]) seen_add(&bigger, s->slots[i] - 1);
    free(s->slots);
    *s = bigger;
    return 1;
}

static zgpu_status add_page(parser *p, zg_tiff_file *f, size_t *cap, uint64_t off, int index, int subifd,
                            uint64_t *next) {
    entry *es;
    size_t n;
    ZG_FORWARD(read_ifd(p, off, &es, &n, next));
    if (f->n_pages == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        zg_tiff_page *np = realloc(f->pages, nc * sizeof *np);
        if (!np) {
            free(es);
            return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
        }
        f->pages = np;
        *cap = nc;
    }
    zg_tiff_page *pg = &f->pages[f->n_pages++];
    memset(pg, 0, sizeof *pg);
    pg->ifd_offset = off;
    pg->index = index;
    pg->subifd = subifd;
    zgpu_status st = page_from_ifd(p, es, n, pg);
    free(es);
    return st;
}

zgpu_status zg_tiff_parse(zg_tiff_read_fn read, void *user, uint64_t size, const char *name, zg_tiff_file *out) {
    memset(out, 0, sizeof *out);
    parser p = {read, user, size, name, 0, 0, "header", 0};
    uint8_t h[16];
    ZG_RETURN_IF(size < 8, ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s': %llu bytes are too few for a header", name,
                 (unsigned long long)size);
    ZG_FORWARD(read_at(&p, 0, size < 16 ? 8 : 16, h, "the header"));
    ZG_RETURN_IF(!zg_tiff_magic(h, 8), ZGPU_ERR_CORRUPT_DATA, "'%s' is not a TIFF file (no II*/MM* header)", name);
    p.be = h[0] == 'M';
    p.big = ld(&p, h + 2, 2) == 43;
    uint64_t first;
    if (p.big) {
        ZG_RETURN_IF(size < 16 || ld(&p, h + 4, 2) != 8 || ld(&p, h + 6, 2) != 0, ZGPU_ERR_CORRUPT_DATA,
                     "TIFF file '%s': a BigTIFF header whose offset size is not 8", name);
        first = ld(&p, h + 8, 8);
    } else {
        first = ld(&p, h + 4, 4);
    }
    ZG_RETURN_IF(first == 0, ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s' holds no image (its first IFD offset is 0)", name);
    out->name = strdup(name);
    out->size = size;
    out->big_endian = p.be;
    out->bigtiff = p.big;
    seen_set seen = {calloc(4096, sizeof(uint64_t)), 4096};
    if (!out->name || !seen.slots) {
        free(seen.slots);
        zg_tiff_free(out);
        return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
    }
    zgpu_status st = ZGPU_OK;
    size_t cap = 0;
    uint64_t off = first;
    int index = 0;
    while (off && st == ZGPU_OK) {
        snprintf(p.where, sizeof p.where, "page %d", index);
        if (index >= ZG_TIFF_MAX_PAGES) {
            st = zg_error(ZGPU_ERR_UNSUPPORTED, "TIFF file '%s': more than %d pages", name, ZG_TIFF_MAX_PAGES);
            break;
        }
        if (!seen_room(&seen, (size_t)index + 1)) {
            st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
            break;
        }
        if (!seen_add(&seen, off)) {
            st = zg_error(ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: the IFD chain loops back to offset %llu", name,
                          p.where, (unsigned long long)off);
            break;
        }
        uint64_t next = 0;
        st = add_page(&p, out, &cap, off, index, -1, &next);
        off = next;
        index++;
    }
    out->n_main = out->n_pages;
    /* every page's SubIFDs (one level: SubIFDs of SubIFDs are not followed) */
    for (size_t i = 0; st == ZGPU_OK && i < out->n_main; i++) {
        for (uint64_t k = 0; st == ZGPU_OK && k < out->pages[i].n_subifds; k++) {
            uint64_t so = out->pages[i].subifd_offsets[k], next;
            snprintf(p.where, sizeof p.where, "page %zu, SubIFD %llu", i, (unsigned long long)k);
            if (!seen_room(&seen, out->n_pages + 1))
                st = zg_error(ZGPU_ERR_NO_MEMORY, "out of memory");
            else if (!seen_add(&seen, so))
                st = zg_error(ZGPU_ERR_CORRUPT_DATA, "TIFF file '%s', %s: offset %llu is an IFD already read", name,
                              p.where, (unsigned long long)so);
            else st = add_page(&p, out, &cap, so, (int)i, (int)k, &next);
        }
    }
    free(seen.slots);
    if (st != ZGPU_OK) zg_tiff_free(out);
    return st;
}
