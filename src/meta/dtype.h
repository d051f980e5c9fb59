/* Data types and fill values, for both Zarr formats. */
#ifndef ZG_DTYPE_H
#define ZG_DTYPE_H
#include <stdint.h>
#include "zgpu.h"
#include "common/json.h"

typedef struct zg_dtype {
    zgpu_dtype id;
    uint32_t size;  /* bytes per element (ZGPU_RAW: N/8) */
    char name[16];  /* Zarr v3 name: "bool", "int8".."uint64", "float16".."float64", "complex64", "complex128", "rN" */
} zg_dtype;

/** v3 "data_type" value (a string; an object with must_understand=false is not a data type: error). */
zgpu_status zg_dtype_from_v3(const zj_value *v, zg_dtype *out);
/** v2 NumPy typestring ("<u2", ">f8", "|b1", "<c16", "|u1", "|V3" -> raw r24). *big_endian: 1 for '>' (0 for '|'). */
zgpu_status zg_dtype_from_v2(const char *typestr, zg_dtype *out, int *big_endian);
/** v2 typestring for dt with the given byte order ("|" for 1-byte types and raw). buf: at least 16 bytes. */
const char *zg_dtype_to_v2(const zg_dtype *dt, int big_endian, char *buf);
/** Lookup by v3 name; 0 if unknown. */
int zg_dtype_from_name(const char *name, zg_dtype *out);
/** Size in bytes of one scalar component that byte-swapping works on (complex64 -> 4, raw -> 1, bool -> 1). */
uint32_t zg_dtype_swap_unit(const zg_dtype *dt);

/** Parses a fill value from JSON into dt->size native-endian bytes at out.
 *  v3: numbers, "NaN", "Infinity", "-Infinity", "0x..." hex bit patterns for floats, [re, im] pairs for
 *  complex (each part any float form), true/false for bool, arrays of byte values for raw.
 *  v2: numbers, bare NaN/Infinity, the strings "NaN"/"Infinity"/"-Infinity", null (-> zeros; *is_null = 1),
 *  base64 strings for raw types; bool true/false. */
zgpu_status zg_fill_from_json(const zj_value *v, const zg_dtype *dt, int zarr_format, uint8_t *out, int *is_null);
/** Inverse: the JSON that zarr-python would write for this fill value in the given format. */
zj_value *zg_fill_to_json(const uint8_t *fill, const zg_dtype *dt, int zarr_format);

/** IEEE half <-> float conversions (exact for all finite halves; round-to-nearest-even on narrowing). */
float zg_half_to_float(uint16_t h);
uint16_t zg_float_to_half(float f);
/** double -> half rounded once (through float it would round twice: 1 + 2^-11 + 2^-40 would become 1.0). */
uint16_t zg_double_to_half(double d);

#endif
