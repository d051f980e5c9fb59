/* Standard padded base64 (RFC 4648 section 4): the one encoder and decoder behind zarr's base64 fill values and
 * TIFF's JPEGTables in codec configurations. */
#ifndef ZG_BASE64_H
#define ZG_BASE64_H

#include <stddef.h>
#include <stdint.h>

/** The text of p[0, n), NUL-terminated (malloc'd); NULL when out of memory. */
char *zg_base64_encode(const uint8_t *p, size_t n);
/** Decodes padded text s[0, len) ('=' only in the last group's last two places) into at most cap bytes of out:
 *  1 with *n the bytes written, or 0 for text that is not base64 or decodes to more than cap bytes. */
int zg_base64_decode(const char *s, size_t len, uint8_t *out, size_t cap, size_t *n);

#endif
