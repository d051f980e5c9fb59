/* S3 credentials, region, endpoint and addressing style, resolved in the AWS CLI's order (explicit options, the
 * environment, the shared credentials and config files, else anonymous), and the INI-style reader of those
 * shared files. The environment is read only through zg_env_remote (common/env.c). Secrets never appear in a
 * message or in `source`. */
#include "store/s3/credentials.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/env.h"
#include "common/status.h"

/* What one shared file says about one profile. */
typedef struct profile_data {
    char akid[256], secret[256], token[4096], region[64], endpoint[1024], s3_endpoint[1024];
    int has_akid, has_secret, has_token, has_region, has_endpoint, has_s3_endpoint;
    int addressing;        /* -1 not given; else as zg_s3_choice.addressing */
    char unsupported[40];  /* the first credential source zgpu cannot use (role_arn, sso_session, ...) or "" */
} profile_data;

static void profile_data_init(profile_data *d) {
    memset(d, 0, sizeof *d);
    d->addressing = -1;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
    return s;
}

/* An inline comment: '#' or ';' after whitespace (none of the values read here, keys and tokens included,
 * contains a space, so this never cuts a value). */
static void cut_inline_comment(char *v) {
    for (char *p = v; *p; p++)
        if ((*p == '#' || *p == ';') && p > v && (p[-1] == ' ' || p[-1] == '\t')) { *p = '\0'; break; }
}

static zgpu_status set_field(char *dst, size_t cap, int *has, const char *value, const char *path, int line,
                             const char *key) {
    size_t n = strlen(value);
    ZG_RETURN_IF(n >= cap, ZGPU_ERR_BAD_METADATA,
                 "AWS shared file '%s' line %d: the value of '%s' is too long (%zu bytes, at most %zu)", path, line,
                 key, n, cap - 1);
    memcpy(dst, value, n + 1);
    *has = 1;
    return ZGPU_OK;
}

static zgpu_status set_profile_key(profile_data *d, const char *key, const char *value, const char *path,
                                   int line) {
    if (strcmp(key, "aws_access_key_id") == 0)
        return set_field(d->akid, sizeof d->akid, &d->has_akid, value, path, line, key);
    if (strcmp(key, "aws_secret_access_key") == 0)
        return set_field(d->secret, sizeof d->secret, &d->has_secret, value, path, line, key);
    /* aws_security_token: the old name boto and the AWS CLI still read */
    if (strcmp(key, "aws_session_token") == 0 || strcmp(key, "aws_security_token") == 0)
        return set_field(d->token, sizeof d->token, &d->has_token, value, path, line, key);
    if (strcmp(key, "region") == 0) return set_field(d->region, sizeof d->region, &d->has_region, value, path, line, key);
    if (strcmp(key, "endpoint_url") == 0)
        return set_field(d->endpoint, sizeof d->endpoint, &d->has_endpoint, value, path, line, key);
    static const char *const unsupported[] = {"role_arn", "credential_process", "sso_session", "sso_start_url",
                                              "web_identity_token_file", "credential_source"};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
        if (strcmp(key, unsupported[i]) == 0 && !d->unsupported[0])
            snprintf(d->unsupported, sizeof d->unsupported, "%s", key);
    return ZGPU_OK;
}

/* A key of a nested block ("s3 =" followed by indented "name = value" lines). */
static zgpu_status set_nested_key(profile_data *d, const char *block, const char *key, const char *value,
                                  const char *path, int line) {
    if (strcmp(block, "s3") != 0) return ZGPU_OK;
    if (strcmp(key, "addressing_style") == 0) {
        if (strcmp(value, "auto") == 0) d->addressing = 0;
        else if (strcmp(value, "path") == 0) d->addressing = 1;
        else if (strcmp(value, "virtual") == 0) d->addressing = 2;
        else
            return zg_error(ZGPU_ERR_BAD_METADATA,
                            "AWS shared file '%s' line %d: s3 addressing_style '%.64s' is not auto, path or virtual",
                            path, line, value);
        return ZGPU_OK;
    }
    if (strcmp(key, "endpoint_url") == 0)
        return set_field(d->s3_endpoint, sizeof d->s3_endpoint, &d->has_s3_endpoint, value, path, line, "s3 endpoint_url");
    return ZGPU_OK;
}

/* Splits "name = value" (name lower-cased, both trimmed, an inline comment cut). 0 if the line has no '='. */
static int split_key_value(char *content, char **key, char **value) {
    char *eq = strchr(content, '=');
    if (!eq) return 0;
    *eq = '\0';
    *key = trim(content);
    for (char *k = *key; *k; k++) *k = (char)tolower((unsigned char)*k);
    cut_inline_comment(eq + 1);
    *value = trim(eq + 1);
    return 1;
}

/* Parses one shared file; *exists = 0 (and OK) when there is no such file. */
static zgpu_status parse_file(const char *path, const char *profile, int is_config, profile_data *d, int *found,
                              int *exists) {
    *found = 0;
    *exists = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT || errno == ENOTDIR) return ZGPU_OK;
        return zg_error(ZGPU_ERR_IO, "cannot open AWS shared file '%s': %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return zg_error(ZGPU_ERR_IO, "AWS shared file '%s' is not a regular file", path);
    }
    *exists = 1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, in_section = 0, in_target = 0;
    char block[64] = "";  /* the nested block open ("s3"), or "" */
    zgpu_status st = ZGPU_OK;
    while (st == ZGPU_OK && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (memchr(line, '\0', (size_t)len)) {
            st = zg_error(ZGPU_ERR_BAD_METADATA, "AWS shared file '%s' line %d: a NUL byte", path, lineno);
            break;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        int indented = line[0] == ' ' || line[0] == '\t';
        char *content = trim(line);
        if (!*content || *content == '#' || *content == ';') continue;
        char *key, *value;
        if (indented && block[0]) { /* an entry of the nested block */
            if (!split_key_value(content, &key, &value) || !*key) {
                st = zg_error(ZGPU_ERR_BAD_METADATA, "AWS shared file '%s' line %d: expected 'name = value' in '%s'",
                              path, lineno, block);
                break;
            }
            if (in_target) st = set_nested_key(d, block, key, value, path, lineno);
            continue;
        }
        block[0] = '\0';
        if (*content == '[') {
            char *close = strchr(content, ']');
            if (!close) {
                st = zg_error(ZGPU_ERR_BAD_METADATA, "AWS shared file '%s' line %d: a section header without ']'",
                              path, lineno);
                break;
            }
            *close = '\0';
            char *rest = trim(close + 1);
            if (*rest && *rest != '#' && *rest != ';') {
                st = zg_error(ZGPU_ERR_BAD_METADATA, "AWS shared file '%s' line %d: text after the section header",
                              path, lineno);
                break;
            }
            char *name = trim(content + 1);
            if (!*name) {
                st = zg_error(ZGPU_ERR_BAD_METADATA, "AWS shared file '%s' line %d: an empty section name", path, lineno);
                break;
            }
            /* The config file names profiles "[profile NAME]" (and "[default]"); its other sections
             * ("[sso-session x]", "[services x]", ...) are no profiles. The credentials file uses "[NAME]". */
            const char *pname = name;
            if (is_config) {
                if (strncmp(name, "profile", 7) == 0 && (name[7] == ' ' || name[7] == '\t')) pname = trim(name + 8);
                else if (strcmp(name, "default") != 0) pname = NULL;
            }
            in_section = 1;
            in_target = pname && strcmp(pname, profile) == 0;
            if (in_target) *found = 1;
            continue;
        }
        if (!split_key_value(content, &key, &value) || !*key) {
            st = zg_error(ZGPU_ERR_BAD_METADATA, "AWS shared file '%s' line %d: expected '[section]' or 'name = value'",
                          path, lineno);
            break;
        }
        if (!in_section) {
            st = zg_error(ZGPU_ERR_BAD_METADATA, "AWS shared file '%s' line %d: 'name = value' before any [section]",
                          path, lineno);
            break;
        }
        if (!*value) { /* "s3 =": the indented lines after it are its entries */
            snprintf(block, sizeof block, "%s", key);
            continue;
        }
        if (in_target) st = set_profile_key(d, key, value, path, lineno);
    }
    free(line);
    if (st == ZGPU_OK && ferror(f)) st = zg_error(ZGPU_ERR_IO, "cannot read AWS shared file '%s'", path);
    fclose(f);
    return st;
}

static void copy_str(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src); }

zgpu_status zg_s3_read_profile_file(const char *path, const char *profile, int is_config, zg_s3_config *out,
                                    int *found) {
    ZG_RETURN_IF(!path || !profile || !out || !found, ZGPU_ERR_INVALID_ARGUMENT,
                 "zg_s3_read_profile_file: NULL argument");
    profile_data *d = malloc(sizeof *d);
    if (!d) return zg_error(ZGPU_ERR_NO_MEMORY, "out of memory reading '%s'", path);
    profile_data_init(d);
    int exists;
    zgpu_status st = parse_file(path, profile, is_config, d, found, &exists);
    if (st == ZGPU_OK) {
        /* The field sizes of profile_data are those of zg_s3_config: nothing is cut. */
        if (d->has_akid) copy_str(out->access_key_id, sizeof out->access_key_id, d->akid);
        if (d->has_secret) copy_str(out->secret_access_key, sizeof out->secret_access_key, d->secret);
        if (d->has_token) copy_str(out->session_token, sizeof out->session_token, d->token);
        if (d->has_region) copy_str(out->region, sizeof out->region, d->region);
        if (d->has_endpoint) copy_str(out->endpoint, sizeof out->endpoint, d->endpoint);
        if (d->has_s3_endpoint) copy_str(out->endpoint, sizeof out->endpoint, d->s3_endpoint);
        if (d->addressing == 1 || d->addressing == 2) out->path_style = d->addressing == 1;
    }
    explicit_bzero(d, sizeof *d); /* secrets do not linger in freed memory */
    free(d);
    return st;
}

/* ---- resolution ---- */

/* Copies an option or variable into a config field; too long is an error naming where it came from. */
static zgpu_status put(char *dst, size_t cap, const char *value, const char *what) {
    size_t n = strlen(value);
    ZG_RETURN_IF(n >= cap, ZGPU_ERR_INVALID_ARGUMENT, "S3: %s is too long (%zu bytes, at most %zu)", what, n, cap - 1);
    memcpy(dst, value, n + 1);
    return ZGPU_OK;
}

static const char *nonempty(const char *s) { return s && *s ? s : NULL; }

/* A shared file's path: the variable's value (with a leading "~/" expanded), else ~/.aws/<name>; "" if there is
 * no HOME to find it in. */
static zgpu_status shared_path(const char *var, const char *name, char *out, size_t cap) {
    const char *v = zg_env_remote(var), *home = zg_env_remote("HOME");
    int n;
    out[0] = '\0';
    if (v && strncmp(v, "~/", 2) == 0 && home) n = snprintf(out, cap, "%s/%s", home, v + 2);
    else if (v) n = snprintf(out, cap, "%s", v);
    else if (home) n = snprintf(out, cap, "%s/.aws/%s", home, name);
    else return ZGPU_OK;
    ZG_RETURN_IF(n < 0 || (size_t)n >= cap, ZGPU_ERR_INVALID_ARGUMENT, "S3: the path of the AWS %s file is too long",
                 name);
    return ZGPU_OK;
}

/* "~/.aws/credentials [dev]" for messages: the path under HOME abbreviated. */
static void describe_source(char *dst, size_t cap, const char *path, const char *profile) {
    const char *home = zg_env_remote("HOME");
    size_t hn = home ? strlen(home) : 0;
    if (hn && strncmp(path, home, hn) == 0 && path[hn] == '/') snprintf(dst, cap, "~%s [%s]", path + hn, profile);
    else snprintf(dst, cap, "%s [%s]", path, profile);
}

static int region_name_ok(const char *r) {
    for (; *r; r++)
        if (!(isalnum((unsigned char)*r) || *r == '-')) return 0;
    return 1;
}

/* Takes the key pair (and token) of one shared file's profile; 0 if it has none. A file giving one of the two
 * keys without the other is malformed. */
static zgpu_status take_file_keys(const profile_data *d, const char *path, const char *profile, zg_s3_config *out,
                                  int *taken) {
    *taken = 0;
    if (!d->has_akid && !d->has_secret) return ZGPU_OK;
    ZG_RETURN_IF(!d->has_akid || !d->has_secret, ZGPU_ERR_BAD_METADATA,
                 "AWS shared file '%s', profile '%s': %s without %s", path, profile,
                 d->has_akid ? "aws_access_key_id" : "aws_secret_access_key",
                 d->has_akid ? "aws_secret_access_key" : "aws_access_key_id");
    copy_str(out->access_key_id, sizeof out->access_key_id, d->akid);
    copy_str(out->secret_access_key, sizeof out->secret_access_key, d->secret);
    copy_str(out->session_token, sizeof out->session_token, d->has_token ? d->token : "");
    describe_source(out->source, sizeof out->source, path, profile);
    *taken = 1;
    return ZGPU_OK;
}

static zgpu_status take_env_keys(zg_s3_config *out, int *taken) {
    const char *akid = zg_env_remote("AWS_ACCESS_KEY_ID"), *secret = zg_env_remote("AWS_SECRET_ACCESS_KEY");
    *taken = 0;
    if (!akid && !secret) return ZGPU_OK;
    ZG_RETURN_IF(!akid || !secret, ZGPU_ERR_INVALID_ARGUMENT, "S3: %s is set but %s is not",
                 akid ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                 akid ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    const char *token = zg_env_remote("AWS_SESSION_TOKEN");
    ZG_FORWARD(put(out->access_key_id, sizeof out->access_key_id, akid, "AWS_ACCESS_KEY_ID"));
    ZG_FORWARD(put(out->secret_access_key, sizeof out->secret_access_key, secret, "AWS_SECRET_ACCESS_KEY"));
    ZG_FORWARD(put(out->session_token, sizeof out->session_token, token ? token : "", "AWS_SESSION_TOKEN"));
    copy_str(out->source, sizeof out->source, "environment");
    *taken = 1;
    return ZGPU_OK;
}

void zg_s3_config_take_role_keys(zg_s3_config *c, zg_s3_role_source rs, const zg_s3_role_credentials *rc) {
    copy_str(c->access_key_id, sizeof c->access_key_id, rc->access_key_id);
    copy_str(c->secret_access_key, sizeof c->secret_access_key, rc->secret_access_key);
    copy_str(c->session_token, sizeof c->session_token, rc->session_token);
    copy_str(c->source, sizeof c->source, rc->source);
    c->role_source = (int)rs;
    c->expiration = rc->expiration;
}

/* A role's temporary keys (role_credentials.h). A container endpoint or web identity named but failing is an error;
 * an instance metadata service that gives none (not on EC2, no role, something else answering there) leaves
 * *taken 0: anonymous, as the AWS CLI's. */
static zgpu_status take_role_keys(zg_s3_role_source rs, zg_s3_config *out, int *taken) {
    *taken = 0;
    if (rs == ZG_S3_ROLE_NONE) return ZGPU_OK;
    zg_s3_role_credentials rc;
    const zgpu_status st = zg_s3_role_credentials_get(rs, ZG_S3_ROLE_MIN_VALID_S, &rc);
    if (st != ZGPU_OK) return rs == ZG_S3_ROLE_INSTANCE ? ZGPU_OK : st;
    zg_s3_config_take_role_keys(out, rs, &rc);
    explicit_bzero(&rc, sizeof rc);
    *taken = 1;
    return ZGPU_OK;
}

typedef struct shared {
    char cred_path[1024], config_path[1024];
    profile_data cred, config;
    int cred_exists, config_exists, found;
} shared;

static zgpu_status resolve_keys(const zg_s3_choice *c, shared *sh, zg_s3_config *out) {
    if (c->anonymous) {
        out->anonymous = 1;
        copy_str(out->source, sizeof out->source, "anonymous");
        return ZGPU_OK;
    }
    const char *akid = nonempty(c->access_key_id), *secret = nonempty(c->secret_access_key),
               *token = nonempty(c->session_token);
    if (akid || secret || token) {
        ZG_RETURN_IF(!akid || !secret, ZGPU_ERR_INVALID_ARGUMENT, "S3 options: %s given without %s",
                     akid ? "access_key_id" : secret ? "secret_access_key" : "session_token",
                     akid ? "secret_access_key" : secret ? "access_key_id" : "access_key_id and secret_access_key");
        ZG_FORWARD(put(out->access_key_id, sizeof out->access_key_id, akid, "the access_key_id option"));
        ZG_FORWARD(put(out->secret_access_key, sizeof out->secret_access_key, secret, "the secret_access_key option"));
        ZG_FORWARD(put(out->session_token, sizeof out->session_token, token ? token : "", "the session_token option"));
        copy_str(out->source, sizeof out->source, "options");
        return ZGPU_OK;
    }
    if (zg_env_remote_true("AWS_NO_SIGN_REQUEST")) {
        out->anonymous = 1;
        copy_str(out->source, sizeof out->source, "anonymous");
        return ZGPU_OK;
    }
    /* A profile named in the options is as explicit as keys (the AWS CLI's --profile): its keys come before the
     * environment's. Otherwise the environment's keys come first. Within the files, the credentials file's
     * pair wins over the config file's. */
    int taken = 0, profile_first = nonempty(c->profile) != NULL;
    for (int pass = 0; pass < 2 && !taken; pass++) {
        if ((pass == 0) != profile_first) {
            ZG_FORWARD(take_env_keys(out, &taken));
            /* a pod's web identity comes right after the environment's keys, as in the AWS CLI */
            if (!taken && zg_s3_web_identity_configured())
                ZG_FORWARD(take_role_keys(ZG_S3_ROLE_WEB_IDENTITY, out, &taken));
        } else {
            ZG_FORWARD(take_file_keys(&sh->cred, sh->cred_path, out->profile, out, &taken));
            if (!taken) ZG_FORWARD(take_file_keys(&sh->config, sh->config_path, out->profile, out, &taken));
        }
    }
    if (taken) return ZGPU_OK;
    const char *unsupported = sh->cred.unsupported[0] ? sh->cred.unsupported : sh->config.unsupported;
    ZG_RETURN_IF(*unsupported, ZGPU_ERR_UNSUPPORTED,
                 "AWS profile '%s' gets its credentials through %s, which zgpu does not support; export them "
                 "instead (e.g. eval \"$(aws configure export-credentials --profile %s --format env)\")",
                 out->profile, unsupported, out->profile);
    /* No key pair configured: the role's temporary credentials (a container's endpoint, EC2's instance profile). */
    ZG_FORWARD(take_role_keys(zg_s3_role_source_of_environment(), out, &taken));
    if (taken) return ZGPU_OK;
    out->anonymous = 1;
    copy_str(out->source, sizeof out->source, "anonymous");
    return ZGPU_OK;
}

static zgpu_status resolve(const zg_s3_choice *c, shared *sh, zg_s3_config *out) {
    ZG_RETURN_IF(c->addressing < 0 || c->addressing > 2, ZGPU_ERR_INVALID_ARGUMENT,
                 "S3 options: addressing %d is not 0 (auto), 1 (path) or 2 (virtual host)", c->addressing);

    /* The profile: options, AWS_PROFILE, AWS_DEFAULT_PROFILE (the older name), else "default". Only the implicit
     * "default" may be missing from the files. */
    const char *profile = nonempty(c->profile), *profile_from = "option";
    if (!profile && (profile = zg_env_remote("AWS_PROFILE"))) profile_from = "AWS_PROFILE";
    if (!profile && (profile = zg_env_remote("AWS_DEFAULT_PROFILE"))) profile_from = "AWS_DEFAULT_PROFILE";
    int explicit_profile = profile != NULL;
    if (!profile) profile = "default";
    ZG_FORWARD(put(out->profile, sizeof out->profile, profile, "the profile name"));

    ZG_FORWARD(shared_path("AWS_SHARED_CREDENTIALS_FILE", "credentials", sh->cred_path, sizeof sh->cred_path));
    ZG_FORWARD(shared_path("AWS_CONFIG_FILE", "config", sh->config_path, sizeof sh->config_path));
    int found = 0;
    if (sh->config_path[0])
        ZG_FORWARD(parse_file(sh->config_path, profile, 1, &sh->config, &found, &sh->config_exists));
    sh->found |= found;
    if (sh->cred_path[0]) ZG_FORWARD(parse_file(sh->cred_path, profile, 0, &sh->cred, &found, &sh->cred_exists));
    sh->found |= found;
    if (explicit_profile && !sh->found) {
        char where[2200] = "";
        if (sh->cred_exists) snprintf(where, sizeof where, "'%s'", sh->cred_path);
        if (sh->config_exists)
            snprintf(where + strlen(where), sizeof where - strlen(where), "%s'%s'", where[0] ? " or " : "",
                     sh->config_path);
        return zg_error(ZGPU_ERR_NOT_FOUND, "AWS profile '%s' (%s) not found in %s", profile, profile_from,
                        where[0] ? where : "any shared file (there is neither ~/.aws/credentials nor ~/.aws/config)");
    }

    ZG_FORWARD(resolve_keys(c, sh, out));

    /* Region: options, AWS_REGION, AWS_DEFAULT_REGION, the config file, the credentials file, us-east-1. */
    const char *region = nonempty(c->region), *region_from = "the region option";
    if (!region && (region = zg_env_remote("AWS_REGION"))) region_from = "AWS_REGION";
    if (!region && (region = zg_env_remote("AWS_DEFAULT_REGION"))) region_from = "AWS_DEFAULT_REGION";
    if (!region && sh->config.has_region) region = sh->config.region, region_from = sh->config_path;
    if (!region && sh->cred.has_region) region = sh->cred.region, region_from = sh->cred_path;
    if (!region || !*region) region = "us-east-1", region_from = "the default";
    ZG_FORWARD(put(out->region, sizeof out->region, region, "the region"));
    ZG_RETURN_IF(!region_name_ok(out->region), ZGPU_ERR_INVALID_ARGUMENT,
                 "S3: region '%s' (from %s) is not a region name (letters, digits and '-')", out->region, region_from);

    /* Endpoint: options, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then the files (s3's own endpoint_url before the
     * profile's). "" = AWS itself. */
    const char *endpoint = nonempty(c->endpoint);
    if (!endpoint) endpoint = zg_env_remote("AWS_ENDPOINT_URL_S3");
    if (!endpoint) endpoint = zg_env_remote("AWS_ENDPOINT_URL");
    const profile_data *files[2] = {&sh->config, &sh->cred};
    for (int i = 0; i < 2 && !endpoint; i++) {
        if (files[i]->has_s3_endpoint) endpoint = files[i]->s3_endpoint;
        else if (files[i]->has_endpoint) endpoint = files[i]->endpoint;
    }
    ZG_FORWARD(put(out->endpoint, sizeof out->endpoint, endpoint ? endpoint : "", "the endpoint URL"));
    size_t en = strlen(out->endpoint);
    while (en && out->endpoint[en - 1] == '/') out->endpoint[--en] = '\0'; /* "http://h:9000/" = "http://h:9000" */

    /* Addressing: options, the files' s3 addressing_style, else auto: path style on a custom endpoint (MinIO,
     * Ceph, moto rarely serve bucket subdomains), virtual host on AWS. */
    int addressing = c->addressing;
    for (int i = 0; i < 2 && addressing == 0; i++)
        if (files[i]->addressing > 0) addressing = files[i]->addressing;
    out->path_style = addressing == 1 ? 1 : addressing == 2 ? 0 : out->endpoint[0] != '\0';
    return ZGPU_OK;
}

zgpu_status zg_s3_config_resolve(const zg_s3_choice *choice, zg_s3_config *out) {
    ZG_RETURN_IF(!out, ZGPU_ERR_INVALID_ARGUMENT, "zg_s3_config_resolve: NULL output");
    static const zg_s3_choice none;
    memset(out, 0, sizeof *out);
    shared *sh = calloc(1, sizeof *sh);
    if (!sh) return zg_error(ZGPU_ERR_NO_MEMORY, "S3: out of memory resolving credentials");
    profile_data_init(&sh->cred);
    profile_data_init(&sh->config);
    zgpu_status st = resolve(choice ? choice : &none, sh, out);
    explicit_bzero(sh, sizeof *sh);
    free(sh);
    if (st != ZGPU_OK) {
        explicit_bzero(out, sizeof *out);
    }
    return st;
}
