/* Unit tests for the S3 XML scanner (src/store/s3/xml.c): ListObjectsV2 pages shaped like the AWS documentation's
 * examples (objects, common prefixes, a truncated page with its token, an empty listing), keys with entities and
 * numeric references, InitiateMultipartUpload and error bodies, every malformation the scanner must refuse, every
 * truncation of a valid document (each in an exactly sized heap copy, so a read past the end shows under ASan),
 * deterministic mutations of it, and the CompleteMultipartUpload body. */
#include "test.h"
#include "common/status.h"
#include "store/s3/xml.h"

/* Parses text from an exactly sized heap copy without a terminating NUL. */
static zgpu_status parse_list_n(const char *text, size_t n, zg_s3_list_page *page) {
    char *copy = malloc(n ? n : 1);
    memcpy(copy, text, n);
    zgpu_status st = zg_s3_parse_list(copy, n, page);
    free(copy);
    return st;
}
static zgpu_status parse_list(const char *text, zg_s3_list_page *page) {
    return parse_list_n(text, strlen(text), page);
}

/* The shape of the ListObjectsV2 examples in the Amazon S3 API reference. */
static const char LISTING[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "  <Name>example-bucket</Name>\n"
    "  <Prefix>data/</Prefix>\n"
    "  <KeyCount>4</KeyCount>\n"
    "  <MaxKeys>1000</MaxKeys>\n"
    "  <Delimiter>/</Delimiter>\n"
    "  <IsTruncated>false</IsTruncated>\n"
    "  <Contents>\n"
    "    <Key>data/zarr.json</Key>\n"
    "    <LastModified>2011-02-26T01:56:20.000Z</LastModified>\n"
    "    <ETag>&quot;bf1d737a4d46a19f3bced6905cc8b902&quot;</ETag>\n"
    "    <Size>142863</Size>\n"
    "    <Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>"
    "<DisplayName>mtd@amazon.com</DisplayName></Owner>\n"
    "    <StorageClass>STANDARD</StorageClass>\n"
    "  </Contents>\n"
    "  <Contents>\n"
    "    <Key>data/a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;</Key>\n"
    "    <LastModified>2011-02-26T01:56:20.000Z</LastModified>\n"
    "    <Size>0</Size>\n"
    "    <StorageClass>STANDARD</StorageClass>\n"
    "  </Contents>\n"
    "  <Contents><Key>data/caf&#233;&#x2603;&#X1F600;&#9;x</Key><Size>18446744073709551615</Size></Contents>\n"
    "  <Contents><Key><![CDATA[data/raw <cdata> & stuff]]></Key><Size> 7 </Size></Contents>\n"
    "  <CommonPrefixes>\n"
    "    <Prefix>data/c/</Prefix>\n"
    "  </CommonPrefixes>\n"
    "  <CommonPrefixes><Prefix>data/&#x26;more/</Prefix></CommonPrefixes>\n"
    "  <!-- a comment -->\n"
    "</ListBucketResult>\n";

static void test_listing(void) {
    zg_s3_list_page p;
    CHECK_OK(parse_list(LISTING, &p));
    CHECK_EQ_U64(p.n_objects, 4);
    if (p.n_objects == 4) {
        CHECK_STR(p.objects[0].key, "data/zarr.json");
        CHECK_EQ_U64(p.objects[0].size, 142863);
        CHECK_STR(p.objects[1].key, "data/a & b <c> \"d\" 'e'");
        CHECK_EQ_U64(p.objects[1].size, 0);
        CHECK_STR(p.objects[2].key, "data/caf\xc3\xa9\xe2\x98\x83\xf0\x9f\x98\x80\tx");
        CHECK_EQ_U64(p.objects[2].size, UINT64_MAX);
        CHECK_STR(p.objects[3].key, "data/raw <cdata> & stuff");
        CHECK_EQ_U64(p.objects[3].size, 7);
    }
    CHECK_EQ_U64(p.n_prefixes, 2);
    if (p.n_prefixes == 2) {
        CHECK_STR(p.prefixes[0], "data/c/");
        CHECK_STR(p.prefixes[1], "data/&more/");
    }
    CHECK(p.truncated == 0);
    CHECK(p.continuation == NULL);
    zg_s3_list_page_free(&p);
    CHECK(p.objects == NULL && p.n_objects == 0 && p.prefixes == NULL);
    zg_s3_list_page_free(&p); /* twice is fine */
}

static void test_truncated_page(void) {
    static const char doc[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n"
        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\r\n"
        "  <Name>bucket</Name>\r\n"
        "  <Prefix/>\r\n"
        "  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>\r\n"
        "  <KeyCount>1000</KeyCount>\r\n"
        "  <MaxKeys>1000</MaxKeys>\r\n"
        "  <IsTruncated>true</IsTruncated>\r\n"
        "  <Contents>\r\n"
        "    <Key>happyface.jpg</Key>\r\n"
        "    <LastModified>2014-11-21T19:40:05.000Z</LastModified>\r\n"
        "    <ETag>\"70ee1738b6b21e2c8a43f3a5ab0eee71\"</ETag>\r\n"
        "    <Size>11</Size>\r\n"
        "    <StorageClass>STANDARD</StorageClass>\r\n"
        "  </Contents>\r\n"
        "</ListBucketResult>";
    zg_s3_list_page p;
    CHECK_OK(parse_list(doc, &p));
    CHECK(p.truncated == 1);
    CHECK_STR(p.continuation, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    CHECK_EQ_U64(p.n_objects, 1);
    if (p.n_objects) CHECK_STR(p.objects[0].key, "happyface.jpg");
    zg_s3_list_page_free(&p);

    /* Truncated without a token is no page to continue from. */
    CHECK_STATUS(parse_list("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", &p),
                 ZGPU_ERR_IO);
    CHECK(strstr(zgpu_last_error(), "NextContinuationToken") != NULL);
}

static void test_empty_listing(void) {
    zg_s3_list_page p;
    CHECK_OK(parse_list("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"
                        "<Prefix>nothing/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>"
                        "<IsTruncated>false</IsTruncated></ListBucketResult>",
                        &p));
    CHECK(p.n_objects == 0 && p.n_prefixes == 0 && p.truncated == 0 && p.continuation == NULL);
    zg_s3_list_page_free(&p);
    /* The root alone, self-closed, a byte order mark, a namespace prefix. */
    CHECK_OK(parse_list("<ListBucketResult/>", &p));
    zg_s3_list_page_free(&p);
    CHECK_OK(parse_list("\xEF\xBB\xBF<s3:ListBucketResult xmlns:s3='x'><s3:Contents><s3:Key>k</s3:Key>"
                        "<s3:Size>5</s3:Size></s3:Contents></s3:ListBucketResult>",
                        &p));
    CHECK_EQ_U64(p.n_objects, 1);
    if (p.n_objects) CHECK_STR(p.objects[0].key, "k");
    zg_s3_list_page_free(&p);
    /* An empty key and <Size/>-less Contents: size 0. Attributes with '>' and '/' in quotes. */
    CHECK_OK(parse_list("<ListBucketResult a=\"x>y/\" b='/>'><Contents><Key></Key></Contents>"
                        "<Contents><Key a='1'/></Contents></ListBucketResult>",
                        &p));
    CHECK_EQ_U64(p.n_objects, 2);
    if (p.n_objects == 2) {
        CHECK_STR(p.objects[0].key, "");
        CHECK_STR(p.objects[1].key, "");
        CHECK_EQ_U64(p.objects[0].size, 0);
    }
    zg_s3_list_page_free(&p);
}

static void test_many_objects(void) {
    /* Growth of the arrays: 1000 objects and 300 prefixes. */
    size_t cap = 200000, len = 0;
    char *doc = malloc(cap);
    len += (size_t)snprintf(doc + len, cap - len, "<ListBucketResult>");
    for (int i = 0; i < 1000; i++)
        len += (size_t)snprintf(doc + len, cap - len, "<Contents><Key>k/%d</Key><Size>%d</Size></Contents>", i, i * 3);
    for (int i = 0; i < 300; i++)
        len += (size_t)snprintf(doc + len, cap - len, "<CommonPrefixes><Prefix>p%d/</Prefix></CommonPrefixes>", i);
    len += (size_t)snprintf(doc + len, cap - len, "</ListBucketResult>");
    zg_s3_list_page p;
    CHECK_OK(parse_list_n(doc, len, &p));
    CHECK_EQ_U64(p.n_objects, 1000);
    CHECK_EQ_U64(p.n_prefixes, 300);
    int bad = 0;
    for (size_t i = 0; i < p.n_objects; i++) {
        char want[32];
        snprintf(want, sizeof want, "k/%zu", i);
        bad += strcmp(p.objects[i].key, want) != 0 || p.objects[i].size != i * 3;
    }
    for (size_t i = 0; i < p.n_prefixes; i++) {
        char want[32];
        snprintf(want, sizeof want, "p%zu/", i);
        bad += strcmp(p.prefixes[i], want) != 0;
    }
    CHECK(bad == 0);
    zg_s3_list_page_free(&p);
    free(doc);
}

static void expect_bad_list(const char *doc, const char *why) {
    zg_s3_list_page p;
    memset(&p, 0xAB, sizeof p); /* the parser must reset it */
    zgpu_status st = parse_list(doc, &p);
    CHECK_MSG(st == ZGPU_ERR_IO, "%s: got %s for %s", why, zgpu_status_name(st), doc);
    CHECK_MSG(p.objects == NULL && p.n_objects == 0 && p.prefixes == NULL && p.continuation == NULL,
              "%s: page not empty after an error", why);
    CHECK_MSG(strstr(zgpu_last_error(), why) != NULL, "message '%s' lacks '%s'", zgpu_last_error(), why);
    zg_s3_list_page_free(&p);
}

static void test_malformed(void) {
    expect_bad_list("", "no root element");
    expect_bad_list("   \n", "no root element");
    expect_bad_list("not xml at all", "text outside the root element");
    expect_bad_list("<html><body>502 Bad Gateway</body></html>", "root element is not <ListBucketResult>");
    expect_bad_list("<ListBucketResult>", "truncated");
    expect_bad_list("<ListBucketResult><Contents><Key>a</Key>", "truncated");
    expect_bad_list("<ListBucketResult><Contents><Key>a</Contents></ListBucketResult>", "does not match");
    expect_bad_list("<ListBucketResult></Contents>", "does not match");
    expect_bad_list("<ListBucketResult></ListBucketResult><ListBucketResult/>", "a second root element");
    expect_bad_list("<ListBucketResult></ListBucketResult>junk", "text outside the root element");
    expect_bad_list("<ListBucketResult><Contents><Key>a &b</Key></Contents></ListBucketResult>", "'&' without a ';'");
    expect_bad_list("<ListBucketResult><Contents><Key>a &nbsp; b</Key></Contents></ListBucketResult>",
                    "an entity other than");
    expect_bad_list("<ListBucketResult><Contents><Key>&#0;</Key></Contents></ListBucketResult>", "does not allow");
    expect_bad_list("<ListBucketResult><Contents><Key>&#xD800;</Key></Contents></ListBucketResult>", "does not allow");
    expect_bad_list("<ListBucketResult><Contents><Key>&#x110000;</Key></Contents></ListBucketResult>",
                    "beyond U+10FFFF");
    expect_bad_list("<ListBucketResult><Contents><Key>&#99999999999;</Key></Contents></ListBucketResult>",
                    "'&' without a ';'");
    expect_bad_list("<ListBucketResult><Contents><Key>&#x;</Key></Contents></ListBucketResult>", "without digits");
    expect_bad_list("<ListBucketResult><Contents><Key>&#12a;</Key></Contents></ListBucketResult>", "bad digit");
    expect_bad_list("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", "without a <Key>");
    expect_bad_list("<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
                    "not a decimal number");
    expect_bad_list("<ListBucketResult><Contents><Key>a</Key><Size>1e3</Size></Contents></ListBucketResult>",
                    "not a decimal number");
    expect_bad_list("<ListBucketResult><Contents><Key>a</Key><Size></Size></Contents></ListBucketResult>",
                    "an empty <Size>");
    expect_bad_list("<ListBucketResult><Contents><Key>a</Key><Size>18446744073709551616</Size></Contents>"
                    "</ListBucketResult>",
                    "beyond 2^64 - 1");
    expect_bad_list("<ListBucketResult><Contents><Key>a<b/></Key></Contents></ListBucketResult>", "child elements");
    expect_bad_list("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>", "neither true nor false");
    expect_bad_list("<!DOCTYPE x [<!ENTITY e \"boom\">]><ListBucketResult/>", "DTD");
    expect_bad_list("<ListBucketResult><!-- open comment </ListBucketResult>", "comment not closed");
    expect_bad_list("<ListBucketResult><Key><![CDATA[abc</Key></ListBucketResult>", "CDATA section not closed");
    expect_bad_list("<ListBucketResult><Contents <Key>a</Key></Contents></ListBucketResult>", "'<' inside a tag");
    expect_bad_list("<ListBucketResult a=\"unclosed></ListBucketResult>", "ends inside a tag");
    expect_bad_list("<ListBucketResult><></ListBucketResult>", "a tag without a name");
    expect_bad_list("<ListBucketResult></ListBucketResult junk>", "junk in a closing tag");
    expect_bad_list("<?xml version=\"1.0\"", "not closed by '?>'");
    expect_bad_list("<", "ends inside a tag");
    expect_bad_list("</", "ends inside a tag");

    /* Nested too deep. */
    char deep[1200] = "<ListBucketResult>";
    for (int i = 0; i < 40; i++) strcat(deep, "<a>");
    expect_bad_list(deep, "nested too deep");

    /* A NUL byte inside the document (the length says where it ends, not a NUL). */
    static const char with_nul[] = "<ListBucketResult><Contents><Key>a\0b</Key></Contents></ListBucketResult>";
    zg_s3_list_page p;
    CHECK_STATUS(parse_list_n(with_nul, sizeof with_nul - 1, &p), ZGPU_ERR_IO);
    CHECK(strstr(zgpu_last_error(), "NUL") != NULL);
    CHECK_STATUS(zg_s3_parse_list(NULL, 5, &p), ZGPU_ERR_IO);
    CHECK_STATUS(zg_s3_parse_list(LISTING, 10, NULL), ZGPU_ERR_INVALID_ARGUMENT);

    /* An S3 error body where a listing was expected: S3's code and message in ours. */
    static const char err[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code>"
                              "<Message>The specified bucket does not exist</Message>"
                              "<BucketName>nope</BucketName><RequestId>4442587FB7D0A2F9</RequestId></Error>";
    CHECK_STATUS(parse_list(err, &p), ZGPU_ERR_IO);
    CHECK(strstr(zgpu_last_error(), "NoSuchBucket: The specified bucket does not exist") != NULL);
}

/* Every prefix of a valid document is an error (until its root closes), read from an exactly sized copy. */
static void test_every_truncation(void) {
    size_t n = strlen(LISTING);
    const char *end = strstr(LISTING, "</ListBucketResult>");
    size_t complete = (size_t)(end - LISTING) + strlen("</ListBucketResult>");
    int wrong = 0;
    for (size_t len = 0; len <= n; len++) {
        zg_s3_list_page p;
        zgpu_status st = parse_list_n(LISTING, len, &p);
        if ((st == ZGPU_OK) != (len >= complete)) {
            wrong++;
            fprintf(stderr, "prefix of %zu bytes: %s\n", len, zgpu_status_name(st));
        }
        if (st == ZGPU_OK) CHECK_EQ_U64(p.n_objects, 4);
        zg_s3_list_page_free(&p);
    }
    CHECK(wrong == 0);
}

/* Deterministic mutations (bytes replaced by XML's special characters, bytes deleted): never a crash; a
 * success is a consistent page. Under ASan this is a small fuzz run. */
static void test_mutations(void) {
    static const char specials[] = "<>&;/\"'=!?[]#x\0 ";
    size_t n = strlen(LISTING);
    char *buf = malloc(n);
    uint32_t rng = 12345;
    int ok = 0;
    for (int round = 0; round < 4000; round++) {
        memcpy(buf, LISTING, n);
        size_t len = n;
        int edits = 1 + round % 4;
        for (int e = 0; e < edits; e++) {
            rng = rng * 1103515245u + 12345u;
            size_t at = (rng >> 8) % len;
            if (rng & 1) {
                buf[at] = specials[(rng >> 20) % (sizeof specials - 1)];
            } else {
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
            }
        }
        char *exact = malloc(len);
        memcpy(exact, buf, len);
        zg_s3_list_page p;
        if (zg_s3_parse_list(exact, len, &p) == ZGPU_OK) {
            ok++;
            for (size_t i = 0; i < p.n_objects; i++) CHECK(p.objects[i].key != NULL);
            CHECK(!p.truncated || p.continuation);
        }
        zg_s3_list_page_free(&p);
        char code[32], msg[64];
        zg_s3_parse_error(exact, len, code, sizeof code, msg, sizeof msg);
        free(exact);
    }
    CHECK(ok > 0); /* some mutations (inside text) still parse */
    free(buf);
}

static void test_upload_id(void) {
    static const char doc[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                              "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
                              "  <Bucket>example-bucket</Bucket>\n"
                              "  <Key>example-object</Key>\n"
                              "  <UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>\n"
                              "</InitiateMultipartUploadResult>";
    char id[128];
    CHECK_OK(zg_s3_parse_upload_id(doc, sizeof doc - 1, id, sizeof id));
    CHECK_STR(id, "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
    /* Too small an output: an error, never a cut id. */
    char small[16];
    CHECK_STATUS(zg_s3_parse_upload_id(doc, sizeof doc - 1, small, sizeof small), ZGPU_ERR_IO);
    CHECK_STR(small, "");
    CHECK_STATUS(zg_s3_parse_upload_id(doc, sizeof doc - 1, NULL, 0), ZGPU_ERR_INVALID_ARGUMENT);
    static const char none[] = "<InitiateMultipartUploadResult><Bucket>b</Bucket></InitiateMultipartUploadResult>";
    CHECK_STATUS(zg_s3_parse_upload_id(none, sizeof none - 1, id, sizeof id), ZGPU_ERR_IO);
    CHECK(strstr(zgpu_last_error(), "no <UploadId>") != NULL);
    static const char empty[] = "<InitiateMultipartUploadResult><UploadId/></InitiateMultipartUploadResult>";
    CHECK_STATUS(zg_s3_parse_upload_id(empty, sizeof empty - 1, id, sizeof id), ZGPU_ERR_IO);
    CHECK_STATUS(zg_s3_parse_upload_id(doc, 60, id, sizeof id), ZGPU_ERR_IO); /* truncated */
    static const char err[] = "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";
    CHECK_STATUS(zg_s3_parse_upload_id(err, sizeof err - 1, id, sizeof id), ZGPU_ERR_IO);
    CHECK(strstr(zgpu_last_error(), "AccessDenied: Access Denied") != NULL);
}

static void test_error_body(void) {
    static const char doc[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                              "<Error>\n"
                              "  <Code>NoSuchKey</Code>\n"
                              "  <Message>The resource you requested does not exist &amp; never did</Message>\n"
                              "  <Resource>/mybucket/myfoto.jpg</Resource>\n"
                              "  <RequestId>4442587FB7D0A2F9</RequestId>\n"
                              "</Error>";
    char code[64], msg[256];
    zg_error(ZGPU_ERR_IO, "the request failed"); /* parsing the body keeps the caller's message */
    zg_s3_parse_error(doc, sizeof doc - 1, code, sizeof code, msg, sizeof msg);
    CHECK_STR(code, "NoSuchKey");
    CHECK_STR(msg, "The resource you requested does not exist & never did");
    CHECK_STR(zgpu_last_error(), "the request failed");
    /* Small buffers cut the text (at a character boundary), never overflow. */
    char c4[4], m8[8];
    zg_s3_parse_error(doc, sizeof doc - 1, c4, sizeof c4, m8, sizeof m8);
    CHECK_STR(c4, "NoS");
    CHECK_STR(m8, "The res");
    static const char utf8[] = "<Error><Code>X</Code><Message>ab\xc3\xa9</Message></Error>";
    zg_s3_parse_error(utf8, sizeof utf8 - 1, code, sizeof code, m8, 4);
    CHECK_STR(m8, "ab"); /* not half of the é */
    zg_s3_parse_error(doc, sizeof doc - 1, NULL, 0, msg, sizeof msg);
    CHECK_STR(msg, "The resource you requested does not exist & never did");
    /* Not XML, not an Error, empty: empty strings. */
    zg_s3_parse_error("<html>Bad Gateway</html>", 24, code, sizeof code, msg, sizeof msg);
    CHECK_STR(code, "");
    CHECK_STR(msg, "");
    zg_s3_parse_error("", 0, code, sizeof code, msg, sizeof msg);
    CHECK_STR(code, "");
    zg_s3_parse_error(NULL, 0, code, sizeof code, msg, sizeof msg);
    CHECK_STR(code, "");
    zg_s3_parse_error("<ListBucketResult><Code>X</Code></ListBucketResult>", 51, code, sizeof code, msg, sizeof msg);
    CHECK_STR(code, "");
    /* A cut-off body still gives the code it completed. */
    zg_s3_parse_error(doc, 80, code, sizeof code, msg, sizeof msg);
    CHECK_STR(code, "NoSuchKey");
    CHECK_STR(msg, "");
}

static void test_complete_body(void) {
    const char *etags[3] = {"\"a54357aff0632cce46d942af68356b38\"", "\"0c78aef83f66abc1fa1e8477f296d394\"",
                            "\"odd<&>\""};
    char *body = zg_s3_complete_body(3, etags);
    CHECK_STR(body, "<CompleteMultipartUpload>"
                    "<Part><PartNumber>1</PartNumber><ETag>\"a54357aff0632cce46d942af68356b38\"</ETag></Part>"
                    "<Part><PartNumber>2</PartNumber><ETag>\"0c78aef83f66abc1fa1e8477f296d394\"</ETag></Part>"
                    "<Part><PartNumber>3</PartNumber><ETag>\"odd&lt;&amp;&gt;\"</ETag></Part>"
                    "</CompleteMultipartUpload>");
    free(body);
    body = zg_s3_complete_body(0, NULL);
    CHECK_STR(body, "<CompleteMultipartUpload></CompleteMultipartUpload>");
    free(body);
    const char *with_null[2] = {"\"x\"", NULL};
    CHECK(zg_s3_complete_body(2, with_null) == NULL);
    CHECK(zg_s3_complete_body(1, NULL) == NULL);
    /* 10000 parts (S3's maximum): part numbers count up. */
    const char **many = malloc(10000 * sizeof *many);
    for (int i = 0; i < 10000; i++) many[i] = "\"e\"";
    body = zg_s3_complete_body(10000, many);
    CHECK(body && strstr(body, "<Part><PartNumber>10000</PartNumber><ETag>\"e\"</ETag></Part></CompleteMultipartUpload>"));
    free(body);
    free(many);
}

/* STS AssumeRoleWithWebIdentity: the credentials three levels down (with a namespace and an entity), an error
 * response's Code and Message quoted, no credentials named, every cut of a good response an error or complete. */
static void test_sts_credentials(void) {
    const char *ok = "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                     "<AssumeRoleWithWebIdentityResult><SubjectFromWebIdentityToken>system:sa</SubjectFromWebIdentityToken>"
                     "<Credentials>\n  <SessionToken>FwoG&amp;token==</SessionToken>"
                     "<SecretAccessKey>wJalr/secret</SecretAccessKey><Expiration>2026-11-28T16:30:05Z</Expiration>"
                     "<AccessKeyId>ASIASTS</AccessKeyId></Credentials></AssumeRoleWithWebIdentityResult>"
                     "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>";
    zg_sts_credentials c;
    CHECK_OK(zg_s3_parse_sts_credentials(ok, strlen(ok), &c));
    CHECK_STR(c.access_key_id, "ASIASTS");
    CHECK_STR(c.secret_access_key, "wJalr/secret");
    CHECK_STR(c.session_token, "FwoG&token==");
    CHECK_STR(c.expiration, "2026-11-28T16:30:05Z");
    const char *err = "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type>"
                      "<Code>InvalidIdentityToken</Code><Message>Incorrect token audience</Message></Error>"
                      "<RequestId>r</RequestId></ErrorResponse>";
    CHECK_STATUS(zg_s3_parse_sts_credentials(err, strlen(err), &c), ZGPU_ERR_IO);
    CHECK(strstr(zgpu_last_error(), "InvalidIdentityToken: Incorrect token audience") != NULL);
    CHECK(c.access_key_id[0] == '\0');
    const char *none = "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult/></AssumeRoleWithWebIdentityResponse>";
    CHECK_STATUS(zg_s3_parse_sts_credentials(none, strlen(none), &c), ZGPU_ERR_IO);
    CHECK(strstr(zgpu_last_error(), "no <Credentials>") != NULL);
    for (size_t cut = 0; cut < strlen(ok); cut++) {
        zgpu_status st = zg_s3_parse_sts_credentials(ok, cut, &c);
        CHECK(st != ZGPU_OK || (strcmp(c.access_key_id, "ASIASTS") == 0 && strcmp(c.secret_access_key, "wJalr/secret") == 0));
    }
}

int main(void) {
    test_listing();
    test_truncated_page();
    test_empty_listing();
    test_many_objects();
    test_malformed();
    test_every_truncation();
    test_mutations();
    test_upload_id();
    test_error_body();
    test_complete_body();
    test_sts_credentials();
    TEST_MAIN_END();
}
