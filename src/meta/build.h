/* Internal side of include/zgpu_meta.h: the pieces the document builder and the codec-spec code share. */
#ifndef ZG_META_BUILD_H
#define ZG_META_BUILD_H
#include <stddef.h>
#include "zgpu_meta.h"
#include "meta/dtype.h"
#include "common/json.h"

/** The zg_dtype of a public (dtype, itemsize) pair; itemsize matters for ZGPU_RAW only (others: 0 or their
 *  size). 0 if there is no such type. */
int zg_dtype_for(zgpu_dtype dtype, size_t itemsize, zg_dtype *out);
/** A codec spec as JSON: v3 a list of bytes->bytes codecs, v2 the compressor value (null or an object). */
zgpu_status zg_codec_spec_to_json(const char *spec, const zg_dtype *dt, int zarr_format, zj_value **out);
/** A v3 codec object rewritten by its implementation when it is a known bytes->bytes codec (defaults filled in,
 *  configuration validated); any other codec is copied as it is. */
zgpu_status zg_codec_normalize(const zj_value *codec, const zg_dtype *dt, zj_value **out);
/** Rewrites, in the v3 codec list `list`, the numcodecs.zstd / numcodecs.gzip / numcodecs.blosc entries (how v2
 *  compressors appear in the synthesised chain) as the standard v3 codecs; others stay. itemsize: the array's. */
zgpu_status zg_codecs_standardize(zj_value *list, size_t itemsize);
/** The v2 (numcodecs) object of a registered bytes->bytes v3 codec that has one, made by its implementation for
 *  elements of dt; ZGPU_ERR_UNSUPPORTED naming the codec otherwise. */
zgpu_status zg_codec_to_v2(const zj_value *codec, const zg_dtype *dt, zj_value **out);
/** obj[key] = val, taking val; a NULL val (a failed allocation) or a failed set is ZGPU_ERR_NO_MEMORY. */
zgpu_status zg_json_put(zj_value *obj, const char *key, zj_value *val);
/** Appends item (taken) to arr; a NULL item or a failed append is ZGPU_ERR_NO_MEMORY. */
zgpu_status zg_json_put_append(zj_value *arr, zj_value *item);
/** The kind of a registered codec: 0 array->array, 1 array->bytes, 2 bytes->bytes, -1 unknown name. */
int zg_codec_kind_of(const char *name);

#endif
