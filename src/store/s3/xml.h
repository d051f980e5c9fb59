/* The few S3 XML responses zgpu reads: ListObjectsV2, InitiateMultipartUpload, error bodies, and STS's
 * AssumeRoleWithWebIdentity (a pod's role on EKS). A small
 * tolerant scanner (no DTDs, no entities beyond the five predefined and numeric ones), not a general XML
 * parser: S3's responses are flat and machine-written. */
#ifndef ZG_S3_XML_H
#define ZG_S3_XML_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

typedef struct zg_s3_object {
    char *key;                /* full key, decoded */
    uint64_t size;
} zg_s3_object;

typedef struct zg_s3_list_page {
    zg_s3_object *objects;    /* <Contents> */
    size_t n_objects;
    char **prefixes;          /* <CommonPrefixes><Prefix> */
    size_t n_prefixes;
    int truncated;            /* <IsTruncated>true */
    char *continuation;       /* <NextContinuationToken> or NULL */
} zg_s3_list_page;

/** Parses a ListObjectsV2 response. ZGPU_ERR_IO with a message for a body that is not one (an S3 <Error> body's
 *  Code and Message are quoted in it; so is <IsTruncated>true without a token); *out is empty after an error. */
zgpu_status zg_s3_parse_list(const char *xml, size_t n, zg_s3_list_page *out);
void zg_s3_list_page_free(zg_s3_list_page *p);
/** <UploadId> of an InitiateMultipartUpload response into out (cap bytes). */
zgpu_status zg_s3_parse_upload_id(const char *xml, size_t n, char *out, size_t cap);
/** <Code> and <Message> of an S3 error body (empty strings when absent or not XML; what a cut-off body completed
 *  is kept; text longer than a buffer is cut). Either buffer may be NULL with cap 0. Leaves this thread's error
 *  message as it was. */
void zg_s3_parse_error(const char *xml, size_t n, char *code, size_t code_cap, char *message, size_t msg_cap);
/* The credentials of an STS AssumeRoleWithWebIdentity response (<Credentials>). */
typedef struct zg_sts_credentials {
    char access_key_id[256];
    char secret_access_key[256];
    char session_token[4096];
    char expiration[64]; /* as sent, "2026-11-28T16:30:05Z" */
} zg_sts_credentials;

/** Parses an AssumeRoleWithWebIdentity response. ZGPU_ERR_IO naming what is missing (an error body's Code and
 *  Message quoted) or malformed; *out zeroed then. */
zgpu_status zg_s3_parse_sts_credentials(const char *xml, size_t n, zg_sts_credentials *out);
/** The CompleteMultipartUpload request body for parts 1..n with their ETags (quotes kept as given, & < >
 *  escaped). malloc'd; NULL when an ETag is NULL or memory runs out. */
char *zg_s3_complete_body(size_t n, const char *const *etags);

#endif
