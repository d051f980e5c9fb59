/* Checks on the strings of metadata documents that name things (data types, codecs, encodings, ids) and
 * on every string inside codec configurations. The JSON layer keeps a string's length, so a "\u0000" in a
 * document stays visible here; the rest of zgpu compares names as C strings, which would stop at it. */
#ifndef ZG_META_NAMES_H
#define ZG_META_NAMES_H
#include <stddef.h>
#include "zgpu.h"
#include "common/json.h"

/** Writes s[0..len) quoted for a message, control bytes as \uXXXX, at most about 64 characters
 *  (then "..."). buf: at least 96 bytes. Returns buf. */
const char *zg_meta_quote(const char *s, size_t len, char *buf, size_t bufsize);
/** 1 if the string value holds a NUL or another control character (U+0000..U+001F, U+007F). */
int zg_meta_has_control(const zj_value *v);
/** v must be a string without NUL or control characters: else ZGPU_ERR_BAD_METADATA
 *  "<field> \"<value>\" contains a control character (...)". A v that is not a string passes (the caller
 *  reports the type). */
zgpu_status zg_meta_check_name(const zj_value *v, const char *field);
/** Every string value inside v (a codec list, a codec object, a numcodecs object) must be free of NUL:
 *  ZGPU_ERR_BAD_METADATA naming field and the member's path otherwise. */
zgpu_status zg_meta_check_no_nul(const zj_value *v, const char *field);

#endif
