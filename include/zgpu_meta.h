/*
 * zgpu — building and converting Zarr metadata documents.
 *
 * The rules for data type names, NumPy typestrings, fill values, codec specs, default chunk shapes and whole
 * zarr.json / .zarray documents live here once; the zgpu command and the Python package call these functions
 * rather than keeping copies. The conventions of zgpu.h apply: functions return a zgpu_status and set
 * zgpu_last_error() on failure; strings returned through `char **` are owned by the caller (zgpu_free()).
 * JSON results are compact, with Python's json.dumps separators (", " and ": ").
 */
#ifndef ZGPU_META_H
#define ZGPU_META_H

#include "zgpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------
 * Data types
 * ---------------------------------------------------------------------------------------------- */
/** Zarr v3 data type name ("uint16", "complex64", "r24") -> *dtype and *itemsize (bytes per element).
 *  ZGPU_ERR_UNSUPPORTED for a name zgpu does not know. */
ZGPU_API zgpu_status zgpu_dtype_from_name(const char *name, zgpu_dtype *dtype, size_t *itemsize);
/** The Zarr v3 name of a data type, into buf (at least 16 bytes). itemsize matters for ZGPU_RAW only
 *  (rN with N = 8 * itemsize); for the other types it must be 0 or their size. */
ZGPU_API zgpu_status zgpu_dtype_name(zgpu_dtype dtype, size_t itemsize, char *buf, size_t bufsize);
/** A NumPy typestring ("<u2", ">f8", "|b1", "=i4", "|V3") -> *dtype, *itemsize and *big_endian (1 for '>'
 *  and for '=' on a big-endian host; 0 otherwise). Any pointer but typestr may be NULL.
 *  ZGPU_ERR_UNSUPPORTED for types zgpu does not read (strings, datetimes, objects...). */
ZGPU_API zgpu_status zgpu_dtype_from_typestr(const char *typestr, zgpu_dtype *dtype, size_t *itemsize,
                                             int *big_endian);
/** The NumPy typestring of a data type, into buf (at least 16 bytes). byte_order: '<', '>' or '=' (this
 *  host's order); 1-byte and raw types always get '|'. itemsize as for zgpu_dtype_name. */
ZGPU_API zgpu_status zgpu_dtype_typestr(zgpu_dtype dtype, size_t itemsize, char byte_order, char *buf,
                                        size_t bufsize);

/* ------------------------------------------------------------------------------------------------
 * Fill values: the JSON each format writes (zarr-python's forms)
 * ---------------------------------------------------------------------------------------------- */
/** Fill value given as text, as the zgpu command's --fill-value takes it: integers (range-checked),
 *  decimal floats, nan / inf / -inf / Infinity (any case), complex "RE" or "RE,IM", bool true / false / 1 / 0,
 *  raw types one byte value for every byte or exactly itemsize comma-separated byte values.
 *  *json: e.g. 5, "NaN", ["Infinity", 0], true, [1, 2, 3] (v3 raw) or "AQID" (v2 raw, base64).
 *  ZGPU_ERR_INVALID_ARGUMENT (naming the text and the type) when the text does not fit the type. */
ZGPU_API zgpu_status zgpu_fill_json_from_text(const char *text, zgpu_dtype dtype, size_t itemsize, int zarr_format,
                                              char **json);
/** Fill value given as itemsize native-endian bytes. bytes = NULL: the default fill value of the format
 *  (v2: null; v3: zero). NaNs other than the canonical quiet NaN are written as "0x..." bit patterns (v3). */
ZGPU_API zgpu_status zgpu_fill_json_from_bytes(const void *bytes, zgpu_dtype dtype, size_t itemsize,
                                               int zarr_format, char **json);

/* ------------------------------------------------------------------------------------------------
 * Codec specs: `none`, `zstd[:LEVEL[:checksum|nochecksum]]`, `gzip[:LEVEL]`, `zlib[:LEVEL]`, `bz2[:LEVEL]`,
 * `lz4[:ACCELERATION]`, `blosc[:CNAME[:CLEVEL[:SHUFFLE]]]`, each optionally followed by `+crc32c` (v3 only);
 * `crc32c` alone means `none+crc32c`. Names are case-insensitive. Defaults: zstd level 0, gzip 5, zlib 1,
 * bz2 1, lz4 1, blosc zstd:5 with bitshuffle for 1-byte types and byte shuffle otherwise.
 * ---------------------------------------------------------------------------------------------- */
/** The codecs a spec stands for, made and written by the same codec implementations that open arrays.
 *  zarr_format 3: the JSON list of the bytes->bytes codecs that follow the `bytes` codec ([] for none);
 *  zarr_format 2: the .zarray "compressor" value (null or a numcodecs object; ZGPU_ERR_UNSUPPORTED for
 *  +crc32c, which has no v2 form). Bad specs: ZGPU_ERR_INVALID_ARGUMENT naming the field that is wrong. */
ZGPU_API zgpu_status zgpu_codec_spec_json(const char *spec, zgpu_dtype dtype, size_t itemsize, int zarr_format,
                                          char **json);
/** Rewrites the numcodecs.zstd / numcodecs.gzip / numcodecs.blosc entries of a v3 codec list (how v2
 *  compressors appear in zgpu_array_codecs_json) as the standard v3 zstd / gzip / blosc codecs; other entries
 *  are kept as they are. itemsize: the array's (blosc's typesize and automatic shuffle). */
ZGPU_API zgpu_status zgpu_codecs_v2_to_v3(const char *codecs_json, size_t itemsize, char **json);
/** The v2 "compressor" value for a v3 codec list of bytes + at most one bytes->bytes codec with a numcodecs
 *  form (null when there is none). ZGPU_ERR_UNSUPPORTED, naming the codecs, when the chain has no v2 form. */
ZGPU_API zgpu_status zgpu_codecs_v3_to_v2(const char *codecs_json, char **json);

/* ------------------------------------------------------------------------------------------------
 * Chunk shapes and whole documents
 * ---------------------------------------------------------------------------------------------- */
/** Default chunk shape for chunks of about target_bytes (0 = 4 MiB, the zgpu command's): the whole array when
 *  under 4 * target_bytes, else axes halved in turn (slowest first, as zarr-python's guess does) until a chunk is
 *  at most target_bytes. within (may be NULL): a shard shape every chunk extent must divide (the chunk is then
 *  always shrunk to at most target_bytes). Zero extents count as 1. */
ZGPU_API void zgpu_default_chunks(int ndim, const uint64_t *shape, size_t itemsize, const uint64_t *within,
                                  uint64_t target_bytes, uint64_t *chunks);

/** What a metadata document is built from. Zero-initialise, set struct_size, then the members you need;
 *  JSON members are text, NULL = the default. */
typedef struct zgpu_array_spec {
    size_t struct_size;           /* sizeof(zgpu_array_spec) */
    int zarr_format;              /* 2 or 3 (0 = 3) */
    int ndim;                     /* 0..ZGPU_MAX_DIMS */
    const uint64_t *shape;        /* ndim extents (may be NULL when ndim is 0) */
    const uint64_t *chunks;       /* read/write chunk (the inner chunk when sharded); NULL = zgpu_default_chunks */
    const uint64_t *shards;       /* v3 only: shard shape (multiples of chunks); NULL = not sharded */
    zgpu_dtype dtype;
    size_t itemsize;              /* ZGPU_RAW: bytes per element; others: 0 or their size */
    int big_endian;               /* stored byte order of multi-byte types: 0 little, 1 big */
    const char *codec_spec;       /* a codec spec (above); NULL = "none". Ignored where the members below say */
    const char *codecs;           /* v3: JSON list, the codec chain of one (inner) chunk (see zgpu_metadata_build);
                                   * replaces codec_spec */
    const char *v2_compressor;    /* v2: JSON "compressor" value; replaces codec_spec */
    const char *v2_filters;       /* v2: JSON "filters" value (null or a list of numcodecs objects) */
    const char *fill_value;       /* JSON; NULL = v2 null / v3 zero */
    const char *attributes;       /* JSON object */
    const char *dimension_names;  /* v3: JSON list of ndim strings or nulls */
    const char *chunk_key_encoding; /* v3: JSON object; NULL = default with separator `separator` */
    char separator;               /* '/' or '.'; 0 = the format's default ('/' v3, '.' v2) */
    char order;                   /* v2: 'C' or 'F'; 0 = 'C' */
    const char *data_type;        /* JSON; NULL = dtype and itemsize. The data type as the format writes it, for the
                                   * types that no (dtype, itemsize) pair names: v3 the "data_type" value (e.g.
                                   * {"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor":
                                   * 1}}), v2 the "dtype" value (a structured field list too, e.g.
                                   * [["a", "<i4"], ["b", "<f8", [2]]], or "string" / "variable_length_bytes":
                                   * "|O" with the vlen-utf8 / vlen-bytes filter first); or in either format a
                                   * NumPy typestring (e.g.
                                   * "<M8[ns]", "=m8[10s]"), whose byte order replaces big_endian. Replaces
                                   * dtype and itemsize. */
} zgpu_array_spec;

/**
 * Builds the zarr.json (v3) or the .zarray plus "attributes" (v2) text that zgpu_array_create takes.
 * v3 codecs: `codecs` if given, each entry a codec object or a codec spec string; every bytes->bytes codec in it
 * is made and written by its implementation (so {"name": "blosc"} gets its typesize and defaults, and a bad
 * configuration fails here); a list without an array->bytes codec gets `bytes` (with the spec's byte order)
 * inserted after its array->array codecs. Otherwise `bytes` followed by codec_spec's codecs. When sharded, the
 * chain is the sharding codec's inner chain (index: bytes little + crc32c, at the end).
 * Errors: ZGPU_ERR_INVALID_ARGUMENT naming the member that is wrong (shards not multiples of chunks, sharding
 * or dimension names with v2, malformed JSON, unknown data type...).
 */
ZGPU_API zgpu_status zgpu_metadata_build(const zgpu_array_spec *spec, char **json);

/** Flag of zgpu_metadata_convert: the converted document must address the chunks already stored under the
 *  original (an in-place migration, as zarr-python's `migrate`): v2 -> v3 uses chunk_key_encoding "v2", and a v3
 *  "default" encoding (keys "c/...") has no v2 form. Without it the document is for a new array whose chunks are
 *  written afresh: each format's own key style with the same separator ("default" in v3). */
#define ZGPU_CONVERT_KEEP_CHUNK_KEYS 1u

/**
 * Converts a whole array metadata document to zarr_format 2 or 3: a v3 zarr.json to a v2 .zarray with its
 * "attributes" member (the form zgpu_array_create and zgpu_array_metadata_json use), or the reverse. The input is
 * parsed and validated as opening the array would (a creation document with defaults left out is accepted too);
 * converting to its own format gives the document as zgpu writes it. *out: compact JSON (zgpu_free).
 *
 *  - shape, chunks, attributes: as they are.
 *  - data type: v2 typestring with the byte order of the v3 `bytes` codec's "endian" ("<u2", ">f8", "|b1", "|V3").
 *  - fill value: each format's JSON form (v2 null becomes the type's zero in v3, which has no null).
 *  - codecs: v2 order F is the v3 `transpose` to reversed axes first; v2 filters that work on elements (delta,
 *    fixedscaleoffset, astype, quantize, bitround, packbits) come before `bytes`, the other filters and the
 *    compressor after it, as "numcodecs.<id>" codecs, except that the zstd, gzip and blosc compressors become the
 *    standard v3 codecs. v3 -> v2 is the inverse: the last bytes->bytes codec is the compressor, the ones before
 *    it filters.
 *  - chunk keys: v2 dimension_separator <-> the v3 encoding's separator (see ZGPU_CONVERT_KEEP_CHUNK_KEYS).
 *
 * Documents zgpu writes come back unchanged from a v3 -> v2 -> v3 round trip. What v2 cannot express fails with
 * ZGPU_ERR_UNSUPPORTED naming it, rather than being dropped: sharding, a transpose other than the identity or the
 * reversed axes (or after other array->array codecs), crc32c and other codecs without a numcodecs form, an
 * array->bytes codec other than `bytes`, and dimension_names unless all are null. Storage transformers and
 * members marked "must_understand": false are dropped (readers may ignore them). ZGPU_ERR_BAD_METADATA (or
 * UNSUPPORTED) when the input is not a valid array document, ZGPU_ERR_INVALID_ARGUMENT for bad arguments.
 */
ZGPU_API zgpu_status zgpu_metadata_convert(const char *json, int to_zarr_format, unsigned flags, char **out);

/* ------------------------------------------------------------------------------------------------
 * Facts about this build, for bindings
 * ---------------------------------------------------------------------------------------------- */
/** ZGPU_MAX_DIMS of the library. */
ZGPU_API int zgpu_max_dims(void);
/** sizeof of a public struct by its C name ("zgpu_context_options", "zgpu_read_stats", "zgpu_array_spec",
 *  "zgpu_tuning"); 0 for unknown names. Lets bindings check their mirrors. */
ZGPU_API size_t zgpu_struct_size(const char *struct_name);
/** offsetof of a member of one of those structs; -1 if the struct or member is unknown. */
ZGPU_API long zgpu_struct_offset(const char *struct_name, const char *member);

#ifdef __cplusplus
}
#endif
#endif /* ZGPU_META_H */
