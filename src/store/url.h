/* Where a path points: a local directory, an HTTP(S) URL or an S3 bucket and prefix. Every place that takes a
 * path (C API, CLI, Python) goes through zg_location_parse, so a URL never becomes a local path: a string with
 * a scheme ("name://") is a URL, and a scheme zgpu does not read is ZGPU_ERR_UNSUPPORTED. */
#ifndef ZG_URL_H
#define ZG_URL_H
#include <stddef.h>
#include "zgpu.h"

typedef enum zg_location_kind { ZG_LOC_FILE = 0, ZG_LOC_HTTP, ZG_LOC_S3 } zg_location_kind;

typedef struct zg_location {
    zg_location_kind kind;
    char *path;    /* FILE: the local path (file:// URLs percent-decoded); else NULL */
    char *base;    /* HTTP: "scheme://authority/path" without a trailing '/', query and fragment refused */
    char *bucket;  /* S3: the bucket name */
    char *prefix;  /* S3: the key prefix without leading or trailing '/', "" for the bucket's root */
} zg_location;

/** Parses `text`. Errors (ZGPU_ERR_UNSUPPORTED for other schemes, ZGPU_ERR_INVALID_ARGUMENT for a malformed
 *  URL: no host, bad percent-escape, a bucket name S3 does not allow, '?' or '#', "." or ".." segments) name the
 *  text. */
zgpu_status zg_location_parse(const char *text, zg_location *out);
void zg_location_free(zg_location *l);
/** 1 when `text` has a URL scheme ("[a-zA-Z][a-zA-Z0-9+.-]*://"), whatever the scheme. */
int zg_is_url(const char *text);
/** 1 when `text` names a local directory (no scheme, or file://). */
int zg_is_local(const char *text);
/** A copy of `text` to keep as a node's path: a file:// URL becomes its local path (staging and recovery work on
 *  paths), anything else stays as given. malloc'd; NULL when out of memory or for a malformed file:// URL (the
 *  store's open then reports it). */
char *zg_location_canonical(const char *text);
/** Percent-decodes in place; -1 for a malformed escape or an encoded NUL. */
int zg_percent_decode(char *s);

#endif
