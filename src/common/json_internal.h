/* What json.c, json_parse.c and json_write.c share inside the JSON module (common/json.h is its interface). */
#ifndef ZG_JSON_INTERNAL_H
#define ZG_JSON_INTERNAL_H

#include <stddef.h>

#include "common/json.h"

/* A value of type t, empty; NULL on allocation failure. */
zj_value *zj_alloc(zj_type t);
/* Room for one more item (and key, for objects) in an array or object: 0 on allocation failure. */
int zj_grow(zj_value *c);
/* The index of `key` in an object (the last one, should it repeat), or -1. */
ptrdiff_t zj_find(const zj_value *obj, const char *key);
/* strtod in the "C" locale, whatever LC_NUMERIC the host application set. */
double zj_strtod(const char *s);

static inline int zj_is_digit(char c) { return c >= '0' && c <= '9'; }

#endif
