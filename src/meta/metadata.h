/* Array and group metadata of both formats, normalised into one struct.
 * v2 arrays get a synthesised v3-style codec list, so the rest of zgpu handles one model:
 *   [transpose (order F)] + array->array filters + bytes{endian} + bytes->bytes filters + compressor. */
#ifndef ZG_METADATA_H
#define ZG_METADATA_H
#include <stdint.h>
#include "zgpu.h"
#include "meta/dtype.h"
#include "common/json.h"

typedef struct zg_array_meta {
    int zarr_format;                       /* 2 or 3 */
    int ndim;                              /* 0 allowed (a scalar array: one chunk of one element) */
    uint64_t shape[ZGPU_MAX_DIMS];
    uint64_t chunk_shape[ZGPU_MAX_DIMS];   /* the regular grid's chunk shape (= shard shape when sharded) */
    zg_dtype dtype;
    uint8_t *fill_value;                   /* dtype.size bytes, native-endian, never NULL */
    int fill_is_null;                      /* v2 "fill_value": null */
    uint8_t *vlen_fill;                    /* vlen kinds: the fill value's bytes (UTF-8 or raw), malloc'd; else NULL */
    size_t vlen_fill_len;
    int key_v2;                            /* chunk keys: 0 = "c" + sep + coords (v3 default), 1 = coords only (v2 style) */
    char separator;                        /* '/' or '.' */
    zj_value *codecs;                      /* v3 codec list: [{"name":..., "configuration":{...}}, ...] */
    zj_value *attributes;                  /* JSON object, never NULL */
    char *dimension_names[ZGPU_MAX_DIMS];  /* NULL where absent/null */
    zj_value *doc;                         /* the document as read (zarr.json or .zarray), for rewriting */
    char *single_key;                      /* malloc'd, or NULL: the key of every chunk, one object holding them all
                                            * (a TIFF file: src/format/tiff/), whatever their coordinates */
} zg_array_meta;

/** Parses a v3 zarr.json of an array. Validates: node_type, shape vs chunk grid, data type, fill value,
 *  chunk key encoding, codecs present, unknown fields: must_understand=false ignored, else ZGPU_ERR_UNSUPPORTED.
 *  `where` names the array in messages. */
zgpu_status zg_meta_parse_v3(const char *text, size_t len, const char *where, zg_array_meta *out);
/** Parses a v2 .zarray, plus .zattrs text (may be NULL). */
zgpu_status zg_meta_parse_v2(const char *zarray, size_t len, const char *zattrs, size_t attrs_len,
                             const char *where, zg_array_meta *out);
/** Parses a creation document (v3 zarr.json or v2 .zarray with optional "attributes"; format from
 *  "zarr_format", default 3), filling what a user may leave out: v3 node_type "array", chunk_key_encoding
 *  default with "/", codecs [bytes little], fill_value 0 (false), attributes {}; v2 order "C", filters null,
 *  compressor null, fill_value 0, dimension_separator ".". Then validates as the parsers do. */
zgpu_status zg_meta_parse_create(const char *text, const char *where, zg_array_meta *out);
/** Serialises the metadata document: zarr.json for v3 (attributes inside) or .zarray for v2
 *  (attributes go to zg_meta_attrs_json). Shape and attributes reflect the struct. malloc'd, or NULL. */
char *zg_meta_to_json(const zg_array_meta *m);
/** The same document as a JSON value (caller frees with zj_free), or NULL when out of memory. m->doc may be NULL:
 *  then v2 writes the dtype with little-endian order, order "C", no filters and no compressor. */
zj_value *zg_meta_to_value(const zg_array_meta *m);
/** Whether a numcodecs filter id works on array elements (delta, fixedscaleoffset, astype, quantize, bitround,
 *  packbits): such v2 filters come before the bytes codec in the synthesised chain, all others after it. */
int zg_meta_v2_array_filter(const char *id);
/** .zattrs text (v2) — the attributes object, pretty-printed. */
char *zg_meta_attrs_json(const zg_array_meta *m);
/** Chunk key for grid coordinates, e.g. "c/0/1/2", "0.1.2", "c" for ndim 0 (v3) / "0" (v2); single_key when set. */
void zg_meta_chunk_key(const zg_array_meta *m, const uint64_t *coords, char *buf, size_t bufsize);
void zg_meta_free(zg_array_meta *m);

/* Groups */
typedef struct zg_group_meta {
    int zarr_format;
    zj_value *attributes; /* object, never NULL */
    zj_value *doc;        /* zarr.json or .zgroup as read */
} zg_group_meta;
zgpu_status zg_group_meta_parse_v3(const char *text, size_t len, const char *where, zg_group_meta *out);
zgpu_status zg_group_meta_parse_v2(const char *zgroup, size_t len, const char *zattrs, size_t attrs_len,
                                   const char *where, zg_group_meta *out);
/** Fresh group metadata (attributes may be NULL = {}). */
zgpu_status zg_group_meta_new(int zarr_format, const char *attributes_json, zg_group_meta *out);
/** zarr.json (v3) or .zgroup (v2) text. */
char *zg_group_meta_to_json(const zg_group_meta *g);
void zg_group_meta_free(zg_group_meta *g);

#endif
