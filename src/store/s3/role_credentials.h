/* Temporary S3 credentials of the machine's or the container's role, where no key pair is configured: a GPU instance
 * on EC2 reads its bucket through its instance profile, a task on ECS or a pod on EKS through its container
 * credentials endpoint. Sources, in the AWS CLI's order:
 *   container  AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (below http://169.254.170.2) or _FULL_URI, with the
 *              AWS_CONTAINER_AUTHORIZATION_TOKEN (or the contents of _TOKEN_FILE) as its Authorization header;
 *   instance   EC2's instance metadata service, IMDSv2: a session token (PUT /latest/api/token), the role's name
 *              (GET /latest/meta-data/iam/security-credentials/), its credentials (GET .../<role>); at
 *              AWS_EC2_METADATA_SERVICE_ENDPOINT (default http://169.254.169.254), never where
 *              AWS_EC2_METADATA_DISABLED=true. One attempt with a 1 s timeout, as botocore: a machine that is not
 *              on EC2 answers nothing, and its reads go unsigned (public buckets) after that second.
 * Each answers JSON {AccessKeyId, SecretAccessKey, Token, Expiration}; the store fetches again before Expiration
 * (s3.c). And a pod's web identity (EKS's IAM roles for service accounts): the token in AWS_WEB_IDENTITY_TOKEN_FILE
 * exchanged for AWS_ROLE_ARN's credentials by STS AssumeRoleWithWebIdentity (unsigned; AWS_ENDPOINT_URL_STS, else
 * the region's STS), taken before the shared files. The environment is read through common/env.c. */
#ifndef ZG_S3_ROLE_CREDENTIALS_H
#define ZG_S3_ROLE_CREDENTIALS_H
#include <time.h>

#include "zgpu.h"

/* Credentials with fewer seconds than this left are fetched again (botocore's mandatory refresh: EC2 and ECS hand out
 * new ones well before). */
#define ZG_S3_ROLE_MIN_VALID_S 600

typedef enum zg_s3_role_source {
    ZG_S3_ROLE_NONE = 0,
    ZG_S3_ROLE_CONTAINER,
    ZG_S3_ROLE_INSTANCE,
    ZG_S3_ROLE_WEB_IDENTITY /* EKS's IAM roles for service accounts: STS AssumeRoleWithWebIdentity */
} zg_s3_role_source;

typedef struct zg_s3_role_credentials {
    char access_key_id[256];
    char secret_access_key[256];
    char session_token[4096];
    time_t expiration; /* 0: none given */
    char source[128];  /* "container credentials (http://...)", "instance profile 'role' (http://...)" */
} zg_s3_role_credentials;

/** Whether AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE are both set (a pod's role through STS; the AWS CLI takes it
 *  right after the environment's keys, before the shared files). */
int zg_s3_web_identity_configured(void);
/** The source the environment names, or the instance metadata service unless disabled; NONE when neither. */
zg_s3_role_source zg_s3_role_source_of_environment(void);

/** Fetches the credentials of `source`. ZGPU_ERR_NOT_FOUND when the source does not answer (no metadata service
 *  here: the caller goes anonymous); ZGPU_ERR_IO / ZGPU_ERR_BAD_METADATA, naming the URL, for an answer that is an
 *  error or not the credentials' JSON. On error *out is zeroed. */
zgpu_status zg_s3_role_credentials_fetch(zg_s3_role_source source, zg_s3_role_credentials *out);

/** The process's credentials of `source`, fetched once and shared by every store: again only when fewer than
 *  min_valid_s seconds of them are left (a refresh that fails leaves them in use until they expire). An instance
 *  metadata service that gave none is not asked again in this process (per endpoint: another
 *  AWS_EC2_METADATA_SERVICE_ENDPOINT is asked). Errors as zg_s3_role_credentials_fetch. */
zgpu_status zg_s3_role_credentials_get(zg_s3_role_source source, int min_valid_s, zg_s3_role_credentials *out);

/** Parses the credentials' JSON (tests and the fetch). `where` names the source in messages. */
zgpu_status zg_s3_role_credentials_parse(const char *json, size_t n, const char *where, zg_s3_role_credentials *out);

#endif
