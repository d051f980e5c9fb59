/* Unit tests for S3 credential, region, endpoint and addressing resolution (src/store/s3/credentials.c): the
 * order options > environment > shared files > anonymous, profiles (options, AWS_PROFILE, AWS_DEFAULT_PROFILE,
 * "[profile x]" in the config file), the shared files' syntax (comments, whitespace, CRLF, nested "s3 ="
 * blocks), the errors (a profile asked for and missing, half a key pair, malformed lines naming file and line,
 * unsupported credential sources), and that `source` never carries a secret. Each test writes its files under
 * a fresh temporary HOME and sets the AWS_* variables itself. */
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "common/status.h"
#include "store/s3/credentials.h"
#include "store/s3/role_credentials.h"

static char g_root[256];
static char g_home[512];
static int g_case;

static const char *const VARS[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                                   "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
                                   "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ENDPOINT_URL",
                                   "AWS_ENDPOINT_URL_S3", "AWS_NO_SIGN_REQUEST", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                   "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                                   "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_SERVICE_ENDPOINT"};

/* A fresh, empty HOME (with .aws/) and no AWS_* variable set but AWS_EC2_METADATA_DISABLED (no keys: anonymous,
 * whatever machine this runs on; the role's credentials are tests/remote/test_s3_role_credentials.py's). */
static void fresh(void) {
    for (size_t i = 0; i < sizeof VARS / sizeof *VARS; i++) unsetenv(VARS[i]);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    snprintf(g_home, sizeof g_home, "%s/home%d", g_root, ++g_case);
    mkdir(g_home, 0700);
    char aws[600];
    snprintf(aws, sizeof aws, "%s/.aws", g_home);
    mkdir(aws, 0700);
    setenv("HOME", g_home, 1);
}

/* Writes text to HOME-relative rel; returns the full path (static buffer, one at a time per call site). */
static const char *write_file(const char *rel, const char *text, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", g_home, rel);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    fputs(text, f);
    fclose(f);
    return path;
}

static void home_credentials(const char *text) {
    char p[700];
    write_file(".aws/credentials", text, p, sizeof p);
}
static void home_config(const char *text) {
    char p[700];
    write_file(".aws/config", text, p, sizeof p);
}

static zg_s3_choice no_choice(void) {
    zg_s3_choice c;
    memset(&c, 0, sizeof c);
    return c;
}

static void test_nothing_configured(void) {
    fresh();
    zg_s3_config cfg;
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK(cfg.anonymous == 1);
    CHECK_STR(cfg.source, "anonymous");
    CHECK_STR(cfg.profile, "default");
    CHECK_STR(cfg.region, "us-east-1");
    CHECK_STR(cfg.endpoint, "");
    CHECK(cfg.path_style == 0);
    CHECK_STR(cfg.access_key_id, "");
    /* No HOME at all: still anonymous, no file read. */
    unsetenv("HOME");
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK(cfg.anonymous == 1);
    /* ... but a profile asked for then has nowhere to be. */
    setenv("AWS_PROFILE", "dev", 1);
    CHECK_STATUS(zg_s3_config_resolve(NULL, &cfg), ZGPU_ERR_NOT_FOUND);
    CHECK(strstr(zgpu_last_error(), "AWS profile 'dev'") != NULL);
}

static void test_environment(void) {
    fresh();
    setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    setenv("AWS_SESSION_TOKEN", "envtoken", 1);
    setenv("AWS_DEFAULT_REGION", "eu-west-1", 1);
    zg_s3_config cfg;
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK(cfg.anonymous == 0);
    CHECK_STR(cfg.access_key_id, "AKIAENV");
    CHECK_STR(cfg.secret_access_key, "envsecret");
    CHECK_STR(cfg.session_token, "envtoken");
    CHECK_STR(cfg.source, "environment");
    CHECK_STR(cfg.region, "eu-west-1");
    setenv("AWS_REGION", "ap-south-1", 1); /* AWS_REGION before AWS_DEFAULT_REGION */
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.region, "ap-south-1");
    /* An empty variable is an unset one. */
    setenv("AWS_SESSION_TOKEN", "", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.session_token, "");

    /* Half a pair names what is missing. */
    unsetenv("AWS_SECRET_ACCESS_KEY");
    CHECK_STATUS(zg_s3_config_resolve(NULL, &cfg), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "AWS_SECRET_ACCESS_KEY is not") != NULL);
    unsetenv("AWS_ACCESS_KEY_ID");
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    CHECK_STATUS(zg_s3_config_resolve(NULL, &cfg), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "AWS_ACCESS_KEY_ID is not") != NULL);
    CHECK(strstr(zgpu_last_error(), "envsecret") == NULL);
    /* A token alone is ignored (as the AWS CLI does): anonymous. */
    unsetenv("AWS_SECRET_ACCESS_KEY");
    setenv("AWS_SESSION_TOKEN", "lonely", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK(cfg.anonymous == 1);
    CHECK_STR(cfg.session_token, "");
}

static void test_options(void) {
    fresh();
    setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    setenv("AWS_SESSION_TOKEN", "envtoken", 1);
    home_credentials("[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = filesecret\n");
    zg_s3_choice c = no_choice();
    c.access_key_id = "AKIAOPT";
    c.secret_access_key = "optsecret";
    zg_s3_config cfg;
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIAOPT");
    CHECK_STR(cfg.secret_access_key, "optsecret");
    CHECK_STR(cfg.session_token, ""); /* the environment's token is not mixed with the options' keys */
    CHECK_STR(cfg.source, "options");
    c.session_token = "opttoken";
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.session_token, "opttoken");

    /* Half a pair, or a token alone, in the options. */
    c.secret_access_key = NULL;
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "access_key_id given without secret_access_key") != NULL);
    c.access_key_id = NULL;
    c.secret_access_key = "optsecret";
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "secret_access_key given without access_key_id") != NULL);
    CHECK(strstr(zgpu_last_error(), "optsecret") == NULL);
    c.secret_access_key = NULL;
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "session_token given without") != NULL);
    /* Empty strings are "not chosen". */
    c = no_choice();
    c.access_key_id = "";
    c.secret_access_key = "";
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.source, "environment");

    /* Addressing out of range; a value too long for its field. */
    c = no_choice();
    c.addressing = 3;
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_INVALID_ARGUMENT);
    c = no_choice();
    char longkey[300];
    memset(longkey, 'K', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    c.access_key_id = longkey;
    c.secret_access_key = "s";
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK_STR(cfg.access_key_id, ""); /* zeroed on error */
}

static void test_anonymous(void) {
    fresh();
    home_credentials("[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = filesecret\n");
    setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    zg_s3_choice c = no_choice();
    c.anonymous = 1;
    c.access_key_id = "AKIAOPT";
    c.secret_access_key = "optsecret";
    zg_s3_config cfg;
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK(cfg.anonymous == 1);
    CHECK_STR(cfg.access_key_id, "");
    CHECK_STR(cfg.source, "anonymous");

    setenv("AWS_NO_SIGN_REQUEST", "true", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK(cfg.anonymous == 1);
    CHECK_STR(cfg.access_key_id, "");
    setenv("AWS_NO_SIGN_REQUEST", "TRUE", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK(cfg.anonymous == 1);
    /* Keys in the options are more explicit than the variable. */
    c.anonymous = 0;
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK(cfg.anonymous == 0);
    CHECK_STR(cfg.access_key_id, "AKIAOPT");
    setenv("AWS_NO_SIGN_REQUEST", "false", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK(cfg.anonymous == 0);
    CHECK_STR(cfg.source, "environment");
}

static void test_shared_files(void) {
    fresh();
    home_credentials("# a comment\n"
                     "; another comment\n"
                     "\n"
                     "[default]\n"
                     "aws_access_key_id = AKIADEFAULT\n"
                     "aws_secret_access_key = default/secret+key\n"
                     "\n"
                     "  [ dev ]   # trailing comment\n"
                     "  AWS_Access_Key_Id=AKIADEV   \n"
                     "\taws_secret_access_key\t=\tdevsecret ; inline comment\n"
                     "aws_session_token = devtoken==\n");
    home_config("[default]\n"
                "region = eu-north-1\n"
                "[profile dev]\n"
                "region = us-west-2\n"
                "s3 =\n"
                "    addressing_style = path\n"
                "    some_other_setting = 1\n"
                "output = json\n"
                "[dev]\n" /* not a profile in the config file: ignored */
                "region = nowhere-1\n"
                "[sso-session corp]\n"
                "sso_region = us-east-1\n");
    zg_s3_config cfg;
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK(cfg.anonymous == 0);
    CHECK_STR(cfg.access_key_id, "AKIADEFAULT");
    CHECK_STR(cfg.secret_access_key, "default/secret+key");
    CHECK_STR(cfg.session_token, "");
    CHECK_STR(cfg.source, "~/.aws/credentials [default]");
    CHECK_STR(cfg.region, "eu-north-1");
    CHECK(cfg.path_style == 0);

    setenv("AWS_PROFILE", "dev", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.profile, "dev");
    CHECK_STR(cfg.access_key_id, "AKIADEV");
    CHECK_STR(cfg.secret_access_key, "devsecret");
    CHECK_STR(cfg.session_token, "devtoken==");
    CHECK_STR(cfg.source, "~/.aws/credentials [dev]");
    CHECK_STR(cfg.region, "us-west-2");
    CHECK(cfg.path_style == 1); /* s3 addressing_style = path, on AWS */
    CHECK(strstr(cfg.source, "devsecret") == NULL);

    /* The options' profile beats AWS_PROFILE; AWS_DEFAULT_PROFILE is the last resort. */
    zg_s3_choice c = no_choice();
    c.profile = "default";
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIADEFAULT");
    unsetenv("AWS_PROFILE");
    setenv("AWS_DEFAULT_PROFILE", "dev", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIADEV");

    /* CRLF line endings read the same. */
    fresh();
    home_credentials("[default]\r\naws_access_key_id = AKIACRLF\r\naws_secret_access_key = crlfsecret\r\n");
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIACRLF");
    CHECK_STR(cfg.secret_access_key, "crlfsecret");
}

static void test_file_locations(void) {
    fresh();
    char cred[700], conf[700];
    write_file("elsewhere-credentials", "[ci]\naws_access_key_id = AKIACI\naws_secret_access_key = cisecret\n", cred,
               sizeof cred);
    write_file("elsewhere-config", "[profile ci]\nregion = sa-east-1\nendpoint_url = http://127.0.0.1:9000/\n", conf,
               sizeof conf);
    home_credentials("[ci]\naws_access_key_id = AKIAHOME\naws_secret_access_key = homesecret\n");
    setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
    setenv("AWS_CONFIG_FILE", conf, 1);
    zg_s3_choice c = no_choice();
    c.profile = "ci";
    zg_s3_config cfg;
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIACI");
    CHECK_STR(cfg.region, "sa-east-1");
    CHECK_STR(cfg.endpoint, "http://127.0.0.1:9000"); /* trailing '/' dropped */
    CHECK(cfg.path_style == 1);                       /* auto: path style on a custom endpoint */
    char want[800];
    snprintf(want, sizeof want, "~/elsewhere-credentials [ci]");
    CHECK_STR(cfg.source, want);
    /* "~/" in the variable is HOME. */
    setenv("AWS_SHARED_CREDENTIALS_FILE", "~/elsewhere-credentials", 1);
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIACI");

    /* A profile asked for that neither file defines: NOT_FOUND naming both files. */
    c.profile = "prod";
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_NOT_FOUND);
    CHECK(strstr(zgpu_last_error(), "AWS profile 'prod'") != NULL);
    CHECK(strstr(zgpu_last_error(), "elsewhere-credentials") != NULL);
    CHECK(strstr(zgpu_last_error(), "elsewhere-config") != NULL);
    /* The same through AWS_PROFILE. */
    c.profile = NULL;
    setenv("AWS_PROFILE", "prod", 1);
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_NOT_FOUND);
    CHECK(strstr(zgpu_last_error(), "AWS_PROFILE") != NULL);
    /* The implicit "default" missing is fine. */
    unsetenv("AWS_PROFILE");
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK(cfg.anonymous == 1);
    CHECK_STR(cfg.profile, "default");
    /* A profile only in the config file counts as defined; "[ci]" in the config file is no profile. */
    write_file("elsewhere-config", "[profile conf-only]\nregion = eu-west-3\n[ci2]\nregion = x\n", conf, sizeof conf);
    c.profile = "conf-only";
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.region, "eu-west-3");
    CHECK(cfg.anonymous == 1);
    c.profile = "ci2";
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_NOT_FOUND);
    /* A path that is a directory is an error, not a silently empty file. */
    setenv("AWS_CONFIG_FILE", g_home, 1);
    c.profile = NULL;
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_IO);
}

static void test_key_order(void) {
    fresh();
    home_credentials("[default]\naws_access_key_id = AKIACRED\naws_secret_access_key = credsecret\n"
                     "[dev]\naws_access_key_id = AKIADEVCRED\naws_secret_access_key = devcredsecret\n");
    home_config("[default]\naws_access_key_id = AKIACONF\naws_secret_access_key = confsecret\n"
                "[profile confkeys]\naws_access_key_id = AKIACONFONLY\naws_secret_access_key = s\n"
                "aws_session_token = conftoken\n");
    zg_s3_config cfg;
    /* The credentials file's pair before the config file's. */
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIACRED");
    /* Keys in the config file alone are used (with their token). */
    setenv("AWS_PROFILE", "confkeys", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIACONFONLY");
    CHECK_STR(cfg.session_token, "conftoken");
    CHECK_STR(cfg.source, "~/.aws/config [confkeys]");
    /* The environment's keys before a profile named by AWS_PROFILE ... */
    setenv("AWS_PROFILE", "dev", 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIAENV");
    /* ... but a profile named in the options is as explicit as keys: its keys first. */
    zg_s3_choice c = no_choice();
    c.profile = "dev";
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIADEVCRED");
    /* A profile in the options without keys of its own falls back to the environment's. */
    home_config("[profile keyless]\nregion = eu-west-2\n");
    c.profile = "keyless";
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.access_key_id, "AKIAENV");
    CHECK_STR(cfg.region, "eu-west-2");
}

static void test_region_endpoint_precedence(void) {
    fresh();
    home_config("[default]\n"
                "region = eu-central-1\n"
                "endpoint_url = https://profile.example\n"
                "s3 =\n"
                "  endpoint_url = https://s3.profile.example\n"
                "[profile plain]\n"
                "endpoint_url = https://plain.example\n"
                "[profile virt]\n"
                "endpoint_url = https://virt.example\n"
                "s3 =\n"
                "  addressing_style = virtual\n");
    zg_s3_config cfg;
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.region, "eu-central-1");
    CHECK_STR(cfg.endpoint, "https://s3.profile.example"); /* s3's own endpoint_url before the profile's */
    CHECK(cfg.path_style == 1);
    setenv("AWS_DEFAULT_REGION", "us-west-1", 1);
    setenv("AWS_ENDPOINT_URL", "http://env.example:9000", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.region, "us-west-1");
    CHECK_STR(cfg.endpoint, "http://env.example:9000");
    setenv("AWS_REGION", "us-west-2", 1);
    setenv("AWS_ENDPOINT_URL_S3", "http://s3env.example:9000", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK_STR(cfg.region, "us-west-2");
    CHECK_STR(cfg.endpoint, "http://s3env.example:9000");
    zg_s3_choice c = no_choice();
    c.region = "ca-central-1";
    c.endpoint = "http://opt.example:9000";
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.region, "ca-central-1");
    CHECK_STR(cfg.endpoint, "http://opt.example:9000");
    CHECK(cfg.path_style == 1);
    c.addressing = 2; /* virtual host asked for, even on a custom endpoint */
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK(cfg.path_style == 0);
    c.addressing = 1;
    c.endpoint = NULL;
    for (size_t i = 0; i < sizeof VARS / sizeof *VARS; i++)
        if (strstr(VARS[i], "ENDPOINT")) unsetenv(VARS[i]);
    home_config("[default]\n");
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.endpoint, "");
    CHECK(cfg.path_style == 1); /* path style asked for on AWS */

    /* The profile's endpoint_url; s3 addressing_style = virtual beats auto on a custom endpoint. */
    home_config("[profile plain]\nendpoint_url = https://plain.example\n"
                "[profile virt]\nendpoint_url = https://virt.example\ns3 =\n  addressing_style = virtual\n");
    c = no_choice();
    c.profile = "plain";
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.endpoint, "https://plain.example");
    CHECK(cfg.path_style == 1);
    c.profile = "virt";
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.endpoint, "https://virt.example");
    CHECK(cfg.path_style == 0);

    /* A region that is not a region name. */
    c = no_choice();
    c.region = "us east 1";
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "region option") != NULL);
}

/* Each malformed file must fail with BAD_METADATA naming the file and the line. */
static void expect_malformed(const char *credentials, const char *config, const char *want) {
    fresh();
    if (credentials) home_credentials(credentials);
    if (config) home_config(config);
    zg_s3_config cfg;
    CHECK_STATUS(zg_s3_config_resolve(NULL, &cfg), ZGPU_ERR_BAD_METADATA);
    CHECK_MSG(strstr(zgpu_last_error(), want) != NULL, "message '%s' lacks '%s'", zgpu_last_error(), want);
    CHECK_MSG(strstr(zgpu_last_error(), credentials ? "/.aws/credentials" : "/.aws/config") != NULL,
              "message '%s' names no file", zgpu_last_error());
}

static void test_malformed(void) {
    expect_malformed("[default]\naws_access_key_id = A\njust some words\n", NULL, "line 3");
    expect_malformed("aws_access_key_id = A\n[default]\n", NULL, "line 1: 'name = value' before any [section]");
    expect_malformed("[default\naws_access_key_id = A\n", NULL, "line 1: a section header without ']'");
    expect_malformed("[]\n", NULL, "line 1: an empty section name");
    expect_malformed("[a] b\n", NULL, "line 1: text after the section header");
    expect_malformed("[default]\n= value\n", NULL, "line 2");
    expect_malformed(NULL, "[default]\ns3 =\n  addressing_style = sideways\n", "line 3");
    expect_malformed(NULL, "[default]\ns3 =\n  not a pair\n", "line 3");
    /* Half a key pair in a file names the file, the profile and what is missing. */
    expect_malformed("[default]\naws_access_key_id = AKIAHALF\n", NULL, "aws_access_key_id without aws_secret_access_key");
    expect_malformed(NULL, "[default]\naws_secret_access_key = s\n", "aws_secret_access_key without aws_access_key_id");
    /* A value too long for its field. */
    char big[400];
    snprintf(big, sizeof big, "[default]\nregion = %0300d\n", 0);
    expect_malformed(NULL, big, "line 2: the value of 'region' is too long");
    /* Malformed lines in another profile's section count too. */
    fresh();
    home_credentials("[default]\naws_access_key_id = A\naws_secret_access_key = B\n[other]\nbroken\n");
    zg_s3_config cfg;
    CHECK_STATUS(zg_s3_config_resolve(NULL, &cfg), ZGPU_ERR_BAD_METADATA);
    CHECK(strstr(zgpu_last_error(), "line 5") != NULL);
    /* A NUL byte in a line. */
    fresh();
    char p[700];
    write_file(".aws/credentials", "[default]\n", p, sizeof p);
    FILE *f = fopen(p, "ab");
    fwrite("x\0y = 1\n", 1, 8, f);
    fclose(f);
    CHECK_STATUS(zg_s3_config_resolve(NULL, &cfg), ZGPU_ERR_BAD_METADATA);
    CHECK(strstr(zgpu_last_error(), "line 2: a NUL byte") != NULL);
}

static void test_unsupported_sources(void) {
    fresh();
    home_config("[profile role]\nrole_arn = arn:aws:iam::123456789012:role/x\nsource_profile = default\n"
                "[profile sso]\nsso_session = corp\nregion = us-east-2\n");
    zg_s3_choice c = no_choice();
    c.profile = "role";
    zg_s3_config cfg;
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_UNSUPPORTED);
    CHECK(strstr(zgpu_last_error(), "role_arn") != NULL);
    CHECK(strstr(zgpu_last_error(), "export-credentials --profile role") != NULL);
    c.profile = "sso";
    CHECK_STATUS(zg_s3_config_resolve(&c, &cfg), ZGPU_ERR_UNSUPPORTED);
    CHECK(strstr(zgpu_last_error(), "sso_session") != NULL);
    /* Keys from elsewhere make the profile's own source irrelevant. */
    setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK_STR(cfg.source, "environment");
    CHECK_STR(cfg.region, "us-east-2");
    /* Anonymous asked for: no error either. */
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    c.anonymous = 1;
    CHECK_OK(zg_s3_config_resolve(&c, &cfg));
    CHECK(cfg.anonymous == 1);
}

static void test_read_profile_file(void) {
    fresh();
    char p[700];
    write_file("one", "[profile x]\nregion = eu-south-1\nendpoint_url = http://a\ns3 =\n  endpoint_url = http://b\n"
                      "  addressing_style = path\n[x]\naws_access_key_id = NOTINCONFIG\n",
               p, sizeof p);
    zg_s3_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.access_key_id, sizeof cfg.access_key_id, "KEEP");
    int found = -1;
    CHECK_OK(zg_s3_read_profile_file(p, "x", 1, &cfg, &found));
    CHECK(found == 1);
    CHECK_STR(cfg.region, "eu-south-1");
    CHECK_STR(cfg.endpoint, "http://b");
    CHECK(cfg.path_style == 1);
    CHECK_STR(cfg.access_key_id, "KEEP"); /* "[x]" in a config file is no profile; fields not found are left */
    /* Read as a credentials file, "[x]" is the profile and "[profile x]" is not. */
    memset(&cfg, 0, sizeof cfg);
    CHECK_OK(zg_s3_read_profile_file(p, "x", 0, &cfg, &found));
    CHECK(found == 1);
    CHECK_STR(cfg.access_key_id, "NOTINCONFIG");
    CHECK_STR(cfg.region, "");
    CHECK_OK(zg_s3_read_profile_file(p, "y", 0, &cfg, &found));
    CHECK(found == 0);
    /* A missing file is no error. */
    snprintf(p, sizeof p, "%s/does-not-exist", g_home);
    CHECK_OK(zg_s3_read_profile_file(p, "x", 0, &cfg, &found));
    CHECK(found == 0);
    CHECK_STATUS(zg_s3_read_profile_file(NULL, "x", 0, &cfg, &found), ZGPU_ERR_INVALID_ARGUMENT);
    /* The old name aws_security_token is the session token. */
    write_file("two", "[default]\naws_access_key_id=A\naws_secret_access_key=B\naws_security_token=OLD\n", p, sizeof p);
    memset(&cfg, 0, sizeof cfg);
    CHECK_OK(zg_s3_read_profile_file(p, "default", 0, &cfg, &found));
    CHECK_STR(cfg.session_token, "OLD");
}

/* A role's credentials: the answer's JSON parsed (with its expiry, or none), malformed answers named; a container
 * endpoint that is not loopback, https or the container agent's refused before anything is sent; a named container
 * endpoint that does not answer an error naming it; an instance metadata service that does not answer: anonymous.
 * The fetches themselves, refresh included, against local servers: tests/remote/test_s3_role_credentials.py. */
static void test_role_credentials(void) {
    zg_s3_role_credentials rc;
    const char *doc = "{\"Code\": \"Success\", \"Type\": \"AWS-HMAC\", \"AccessKeyId\": \"ASIAROLE\", "
                      "\"SecretAccessKey\": \"rolesecret\", \"Token\": \"roletoken\", "
                      "\"Expiration\": \"2026-11-28T16:30:05Z\"}";
    CHECK_OK(zg_s3_role_credentials_parse(doc, strlen(doc), "here", &rc));
    CHECK_STR(rc.access_key_id, "ASIAROLE");
    CHECK_STR(rc.secret_access_key, "rolesecret");
    CHECK_STR(rc.session_token, "roletoken");
    CHECK_EQ_U64((uint64_t)rc.expiration, 1795883405ull); /* date -u -d 2026-11-28T16:30:05Z +%s */
    const char *ecs = "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\",\"Token\":\"T\","
                      "\"Expiration\":\"2026-11-28T16:30:05.123+00:00\"}";
    CHECK_OK(zg_s3_role_credentials_parse(ecs, strlen(ecs), "here", &rc));
    CHECK_EQ_U64((uint64_t)rc.expiration, 1795883405ull);
    const char *forever = "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\"}";
    CHECK_OK(zg_s3_role_credentials_parse(forever, strlen(forever), "here", &rc));
    CHECK(rc.expiration == 0 && rc.session_token[0] == '\0');
    const char *bad[] = {"not json", "{\"AccessKeyId\":\"A\"}", "{\"Code\":\"Failure\",\"AccessKeyId\":\"A\","
                         "\"SecretAccessKey\":\"S\"}", "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
                         "\"Expiration\":\"tomorrow\"}", "{\"AccessKeyId\":\"\",\"SecretAccessKey\":\"S\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(zg_s3_role_credentials_parse(bad[i], strlen(bad[i]), "the test's answer", &rc) != ZGPU_OK);
        CHECK(strstr(zgpu_last_error(), "the test's answer") != NULL);
        CHECK(rc.access_key_id[0] == '\0');
    }

    fresh();
    zg_s3_config cfg;
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds", 1);
    CHECK_STATUS(zg_s3_config_resolve(NULL, &cfg), ZGPU_ERR_INVALID_ARGUMENT);
    CHECK(strstr(zgpu_last_error(), "example.com") != NULL);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/creds", 1); /* (nothing listens on port 1) */
    CHECK(zg_s3_config_resolve(NULL, &cfg) != ZGPU_OK);
    CHECK(strstr(zgpu_last_error(), "http://127.0.0.1:1/creds") != NULL);
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    /* the switch read as the SDKs and AWS_NO_SIGN_REQUEST read theirs: "true" in any case, nothing else */
    const char *const yes[] = {"true", "TRUE", "True"}, *const no[] = {"1", "yes", "false", " true"};
    for (size_t i = 0; i < 3; i++) {
        setenv("AWS_EC2_METADATA_DISABLED", yes[i], 1);
        CHECK_MSG(zg_s3_role_source_of_environment() == ZG_S3_ROLE_NONE, "AWS_EC2_METADATA_DISABLED=%s", yes[i]);
    }
    for (size_t i = 0; i < 4; i++) {
        setenv("AWS_EC2_METADATA_DISABLED", no[i], 1);
        CHECK_MSG(zg_s3_role_source_of_environment() == ZG_S3_ROLE_INSTANCE, "AWS_EC2_METADATA_DISABLED=%s", no[i]);
    }
    unsetenv("AWS_EC2_METADATA_DISABLED");
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1", 1);
    CHECK_OK(zg_s3_config_resolve(NULL, &cfg));
    CHECK(cfg.anonymous == 1 && cfg.role_source == 0);
    CHECK_STR(cfg.source, "anonymous");
}

int main(void) {
    snprintf(g_root, sizeof g_root, "/tmp/zgpu-test-s3-credentials-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 1; }
    test_nothing_configured();
    test_environment();
    test_options();
    test_anonymous();
    test_shared_files();
    test_file_locations();
    test_key_order();
    test_region_endpoint_precedence();
    test_malformed();
    test_unsupported_sources();
    test_read_profile_file();
    test_role_credentials();
    zt_remove_dir(g_root);
    TEST_MAIN_END();
}
