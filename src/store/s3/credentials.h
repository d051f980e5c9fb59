/* Where S3 credentials and the region come from, in the AWS CLI's order: explicit options, then the
 * environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION /
 * AWS_DEFAULT_REGION, AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, AWS_ENDPOINT_URL(_S3)) and a pod's web
 * identity (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE), then the shared files (~/.aws/credentials and
 * ~/.aws/config, profile sections "[name]" and "[profile name]"), then the role's temporary credentials (a
 * container's endpoint, EC2's instance profile). The role sources: role_credentials.h. None found:
 * anonymous (unsigned requests, for public buckets). The environment is read through common/env.c. */
#ifndef ZG_S3_CREDENTIALS_H
#define ZG_S3_CREDENTIALS_H
#include <time.h>

#include "store/s3/role_credentials.h"
#include "zgpu.h"

typedef struct zg_s3_config {
    char access_key_id[256];
    char secret_access_key[256];
    char session_token[4096];
    char region[64];          /* "" -> us-east-1 */
    char endpoint[1024];      /* "" = AWS (https://s3.<region>.amazonaws.com), else e.g. "http://127.0.0.1:9000" */
    char profile[128];        /* the profile used, for messages */
    int anonymous;            /* 1: no credentials found (or asked for): requests are not signed */
    int path_style;           /* 1: http(s)://endpoint/bucket/key; 0: http(s)://bucket.endpoint/key */
    char source[128];         /* where the credentials came from ("environment", "~/.aws/credentials [dev]",
                               * "options", "instance profile 'role' (...)", "anonymous") — for messages; never the
                               * secret */
    int role_source;          /* a zg_s3_role_source: the keys are a role's temporary ones (role_credentials.h),
                               * fetched again before `expiration`; 0: configured keys */
    time_t expiration;        /* of a role's keys; 0: none */
} zg_s3_config;

/* What the caller chose (zgpu_remote_options); NULL / 0 fields = not chosen. */
typedef struct zg_s3_choice {
    const char *profile;
    const char *region;
    const char *endpoint;
    const char *access_key_id, *secret_access_key, *session_token;
    int anonymous;            /* 1: force unsigned requests */
    int addressing;           /* 0 = auto (virtual host on AWS, path style on a custom endpoint), 1 = path, 2 = virtual */
} zg_s3_choice;

/** Resolves the configuration (choice may be NULL: nothing chosen). Keys: choice->anonymous; the choice's key
 *  pair; AWS_NO_SIGN_REQUEST=true (anonymous); then the environment's pair and the chosen profile's pair in the
 *  files (credentials file before config file), the profile's first when choice->profile names it (as the AWS
 *  CLI's --profile), else the environment's first (a pod's web identity right after the environment's pair); then
 *  a role's temporary keys (a container's endpoint, EC2's instance profile); none: anonymous. Region: choice, AWS_REGION,
 *  AWS_DEFAULT_REGION, files, "us-east-1". Endpoint: choice, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, files (a
 *  nested "s3 =\n  endpoint_url = ..." before the profile's endpoint_url); trailing '/' removed. path_style:
 *  choice->addressing, else the files' "s3 =\n  addressing_style = path|virtual", else 1 exactly when an
 *  endpoint is set. Errors: ZGPU_ERR_BAD_METADATA naming the file and line of a malformed shared file (or the
 *  file and profile giving one key of the pair without the other); ZGPU_ERR_NOT_FOUND for a profile asked for
 *  (option, AWS_PROFILE or AWS_DEFAULT_PROFILE) that no file defines; ZGPU_ERR_INVALID_ARGUMENT for one key of
 *  a pair without the other in the options or the environment, a value too long for its field, a bad region
 *  or addressing; ZGPU_ERR_UNSUPPORTED for a profile whose only credentials come through a source zgpu does not
 *  implement (role_arn, credential_process, SSO, web identity); ZGPU_ERR_IO for a shared file that exists but
 *  cannot be read. On error *out is zeroed. */
zgpu_status zg_s3_config_resolve(const zg_s3_choice *choice, zg_s3_config *out);
/** A role's temporary keys (of role source rs) into c: its key pair, token, source, and when to fetch them again. The
 *  resolve's and the store's refresh (s3.c) alike. */
void zg_s3_config_take_role_keys(zg_s3_config *c, zg_s3_role_source rs, const zg_s3_role_credentials *rc);
/** Parses one INI-style shared file's profile into *out (fields found are set, others left); *found = 1 when
 *  the profile's section exists. is_config = 1 for ~/.aws/config ("[profile name]" except "[default]"). A file
 *  that does not exist is no error (*found = 0). Comment lines start with '#' or ';' (also inline, after a
 *  space); keys are case-insensitive. */
zgpu_status zg_s3_read_profile_file(const char *path, const char *profile, int is_config, zg_s3_config *out,
                                    int *found);

#endif
