/* A small JSON DOM: parse, query, build, write.
 * Extension over RFC 8259 (needed for Zarr): bare NaN, Infinity and -Infinity are numbers, as Python's json
 * module reads and writes them. Object members keep their document order; duplicate keys: last wins on lookup.
 * Integers keep full 64-bit precision; a larger integer literal keeps its text too (`digits`), so it is written back
 * exactly, as Python's json round-trips it. */
#ifndef ZG_JSON_H
#define ZG_JSON_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

typedef enum zj_type { ZJ_NULL, ZJ_BOOL, ZJ_NUMBER, ZJ_STRING, ZJ_ARRAY, ZJ_OBJECT } zj_type;

typedef struct zj_value zj_value;
struct zj_value {
    zj_type type;
    int boolean;            /* ZJ_BOOL */
    /* ZJ_NUMBER: */
    double num;             /* always set (nearest double; NaN/Inf for the bare words) */
    int is_int;             /* the text was an integer literal that fits int64 or uint64 */
    int is_negative;        /* integer < 0: value in i64; else value in u64 (and i64 if it fits) */
    int64_t i64;
    uint64_t u64;
    char *digits;           /* an integer literal beyond 64 bits, as written (is_int 0, num its nearest double) */
    /* ZJ_STRING: UTF-8, NUL-terminated, len excludes the NUL (may contain \u0000 as a byte) */
    char *str;
    size_t len;
    /* ZJ_ARRAY and ZJ_OBJECT: n items; keys only for objects */
    size_t n, cap;
    zj_value **items;
    char **keys;
};

/** Parses text[0..len). On failure returns ZGPU_ERR_BAD_METADATA with a message "JSON: <what> at line L column C"
 *  prefixed by `what` (e.g. "zarr.json") if non-NULL. Nesting deeper than 512 is an error. */
zgpu_status zj_parse(const char *text, size_t len, const char *what, zj_value **out);
void zj_free(zj_value *v);
zj_value *zj_clone(const zj_value *v);           /* NULL on allocation failure */
int zj_equal(const zj_value *a, const zj_value *b); /* deep equality (NaN == NaN here) */

/* Queries: NULL / 0 when the type does not match. */
zj_value *zj_get(const zj_value *obj, const char *key); /* member or NULL */
zj_value *zj_at(const zj_value *arr, size_t i);         /* item or NULL */
const char *zj_string(const zj_value *v);               /* string value or NULL */
int zj_is_uint(const zj_value *v, uint64_t *out);       /* integer >= 0 */
int zj_is_int(const zj_value *v, int64_t *out);         /* integer fitting int64 */

/* Builders: return NULL on allocation failure (and free nothing). */
zj_value *zj_new_null(void);
zj_value *zj_new_bool(int b);
zj_value *zj_new_double(double d);
zj_value *zj_new_int(int64_t i);
zj_value *zj_new_uint(uint64_t u);
zj_value *zj_new_string(const char *s);
zj_value *zj_new_string_len(const char *s, size_t len);
zj_value *zj_new_array(void);
zj_value *zj_new_object(void);
zj_value *zj_new_uint_list(size_t n, const uint64_t *v); /* [v[0], ...]; NULL on allocation failure */
/* Takes ownership of item/val (frees it on failure). Return ZGPU_OK or ZGPU_ERR_NO_MEMORY. */
zgpu_status zj_append(zj_value *arr, zj_value *item);
zgpu_status zj_set(zj_value *obj, const char *key, zj_value *val); /* replaces an existing key in place */
int zj_remove(zj_value *obj, const char *key);                     /* 1 if removed */

/** Serialises. indent = 0: compact (", " and ": " separators, like Python's json.dumps); indent > 0:
 *  pretty with that many spaces. Non-finite numbers are written as bare NaN/Infinity/-Infinity.
 *  Doubles use the shortest text that round-trips; integers are exact. Returns a malloc'd string or NULL. */
char *zj_write(const zj_value *v, int indent);

#endif
