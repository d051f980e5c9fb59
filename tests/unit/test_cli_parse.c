/* Unit tests of the zgpu command's parsers: regions, .npy headers and input conversion (byte order, Fortran
 * order), option scanning, slab sizing. Codec specs, metadata documents and fill values are the library's:
 * test_meta_build.c. */
#include <math.h>
#include <unistd.h>
#include "test.h"

#include "../../cli/util.c"
#include "../../cli/region.c"
#include "../../cli/dtype.c"
#include "../../cli/npy.c"
#include "../../cli/args.c"
#include "../../cli/cudart.c"

/* ---- regions ---- */
typedef struct region_case {
    const char *spec;
    int ok;
    uint64_t start[4], count[4];
} region_case;

static void test_regions(void) {
    const uint64_t shape[4] = {10, 20, 30, 40};
    static const region_case cases[] = {
        {NULL, 1, {0, 0, 0, 0}, {10, 20, 30, 40}},
        {"", 1, {0, 0, 0, 0}, {10, 20, 30, 40}},
        {"0:10,5:,:,3", 1, {0, 5, 0, 3}, {10, 15, 30, 1}},
        {"2:5", 1, {2, 0, 0, 0}, {3, 20, 30, 40}},
        {"-3:", 1, {7, 0, 0, 0}, {3, 20, 30, 40}},
        {":-1", 1, {0, 0, 0, 0}, {9, 20, 30, 40}},
        {"-1", 1, {9, 0, 0, 0}, {1, 20, 30, 40}},
        {"-10,-20", 1, {0, 0, 0, 0}, {1, 1, 30, 40}},
        {"3:3", 1, {3, 0, 0, 0}, {0, 20, 30, 40}},
        {" 1 : 4 , -5 : -2 ", 1, {1, 15, 0, 0}, {3, 3, 30, 40}},
        {":,:,:,39", 1, {0, 0, 0, 39}, {10, 20, 30, 1}},
        {"-10:10", 1, {0, 0, 0, 0}, {10, 20, 30, 40}},
        {"10:", 1, {10, 0, 0, 0}, {0, 20, 30, 40}},
        {"-11", 0, {0}, {0}},
        {"10", 0, {0}, {0}},
        {"0:11", 0, {0}, {0}},
        {"11:", 0, {0}, {0}},
        {"-11:", 0, {0}, {0}},
        {"5:3", 0, {0}, {0}},
        {"-2:-5", 0, {0}, {0}},
        {"1:2:3", 0, {0}, {0}},
        {"::2", 0, {0}, {0}},
        {"a", 0, {0}, {0}},
        {"1,,2", 0, {0}, {0}},
        {"1,", 0, {0}, {0}},
        {"0x1", 0, {0}, {0}},
        {"1.5", 0, {0}, {0}},
        {"0,0,0,0,0", 0, {0}, {0}},
        {"99999999999999999999", 0, {0}, {0}},
        {"-9223372036854775808", 0, {0}, {0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const region_case *c = &cases[i];
        uint64_t start[4], count[4];
        int rc = cli_parse_region(c->spec, 4, shape, start, count);
        CHECK_MSG((rc == 0) == c->ok, "region '%s': rc %d (%s)", c->spec ? c->spec : "(null)", rc, cli_errmsg());
        if (rc == 0 && c->ok)
            for (int k = 0; k < 4; k++) {
                CHECK_MSG(start[k] == c->start[k] && count[k] == c->count[k], "region '%s' axis %d: %llu+%llu",
                          c->spec ? c->spec : "(null)", k, (unsigned long long)start[k], (unsigned long long)count[k]);
            }
    }
    /* error messages name the axis and the problem */
    uint64_t s[4], n[4];
    CHECK(cli_parse_region("0,25", 4, shape, s, n) == -1);
    CHECK(strstr(cli_errmsg(), "axis 1") && strstr(cli_errmsg(), "out of range"));
    CHECK(cli_parse_region("1:2:3", 4, shape, s, n) == -1 && strstr(cli_errmsg(), "steps"));
    /* 0-d arrays take only the empty selection */
    CHECK(cli_parse_region("", 0, shape, s, n) == 0);
    CHECK(cli_parse_region("0", 0, shape, s, n) == -1);
    /* zero-length axis: ':' and '0:0' fine, an index is not */
    const uint64_t zshape[1] = {0};
    CHECK(cli_parse_region(":", 1, zshape, s, n) == 0 && n[0] == 0);
    CHECK(cli_parse_region("0:0", 1, zshape, s, n) == 0 && n[0] == 0);
    CHECK(cli_parse_region("0", 1, zshape, s, n) == -1);
    CHECK(cli_parse_region("-1", 1, zshape, s, n) == -1);
}

/* ---- slabs (default chunks: test_meta_build.c) ---- */
static void test_slabs(void) {
    /* slabs: whole rows of objects, about the budget */
    const uint64_t shape[2] = {1000, 1000};
    CHECK_EQ_U64(cli_slab_rows(2, shape, 64, 4, 256u << 20), 1000);
    CHECK_EQ_U64(cli_slab_rows(2, shape, 64, 4, 1u << 20), 256); /* 64 rows = 256000 B; 4 objects fit */
    CHECK_EQ_U64(cli_slab_rows(2, shape, 64, 4, 1000), 64);      /* one object row even over budget */
    CHECK_EQ_U64(cli_slab_rows(0, shape, 1, 4, 1000), 1);
}

/* ---- .npy ---- */
static void test_npy_headers(void) {
    /* exact bytes as numpy.save writes them */
    static const char want[] = "\x93NUMPY\x01\x00v\x00{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }";
    const uint64_t shape34[2] = {3, 4};
    cli_sb sb = {0};
    CHECK(cli_npy_format_header(ZGPU_UINT16, 2, 2, shape34, &sb) == 0);
    CHECK_EQ_U64(sb.n, 128);
    CHECK(sb.p && memcmp(sb.p, want, sizeof want - 1) == 0 && sb.p[127] == '\n' && sb.p[126] == ' ');
    cli_sb_free(&sb);

    static const struct { zgpu_dtype dt; size_t size; const char *descr; } types[] = {
        {ZGPU_BOOL, 1, "|b1"},   {ZGPU_INT8, 1, "|i1"},    {ZGPU_INT16, 2, "<i2"},     {ZGPU_INT32, 4, "<i4"},
        {ZGPU_INT64, 8, "<i8"},  {ZGPU_UINT8, 1, "|u1"},   {ZGPU_UINT16, 2, "<u2"},    {ZGPU_UINT32, 4, "<u4"},
        {ZGPU_UINT64, 8, "<u8"}, {ZGPU_FLOAT16, 2, "<f2"}, {ZGPU_FLOAT32, 4, "<f4"},   {ZGPU_FLOAT64, 8, "<f8"},
        {ZGPU_COMPLEX64, 8, "<c8"}, {ZGPU_COMPLEX128, 16, "<c16"}, {ZGPU_RAW, 3, "|V3"}, {ZGPU_RAW, 1000, "|V1000"},
    };
    const uint64_t shapes[4][3] = {{0}, {5}, {2, 3}, {7, 0, 9}};
    const int ndims[4] = {0, 1, 2, 3};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char d[32];
        CHECK_OK(zgpu_dtype_typestr(types[t].dt, types[t].size, '=', d, sizeof d));
        CHECK_STR(d, types[t].descr);
        for (int s = 0; s < 4; s++) {
            cli_sb h = {0};
            CHECK(cli_npy_format_header(types[t].dt, types[t].size, ndims[s], shapes[s], &h) == 0);
            cli_npy_header ph;
            int rc = cli_npy_parse_header((const unsigned char *)h.p, h.n, &ph);
            CHECK_MSG(rc == 0, "%s ndim %d: %s", types[t].descr, ndims[s], cli_errmsg());
            CHECK(ph.dtype == types[t].dt && ph.itemsize == types[t].size && ph.ndim == ndims[s] &&
                  !ph.fortran_order && !ph.nonnative && ph.data_offset == h.n && h.n % 64 == 0 && ph.major == 1);
            CHECK_STR(ph.descr, types[t].descr);
            for (int k = 0; k < ndims[s]; k++) CHECK(ph.shape[k] == shapes[s][k]);
            /* every shorter prefix is "truncated", never a crash */
            CHECK(cli_npy_parse_header((const unsigned char *)h.p, h.n - 1, &ph) == -1);
            cli_sb_free(&h);
        }
    }
    /* headers numpy may write, or other writers: version 2.0, big-endian, Fortran, odd spacing, 'L' */
    static const char v2[] = "\x93NUMPY\x02\x00\x35\x00\x00\x00{\"descr\":\">f8\",\"shape\":(2,3L,),\"fortran_order\":True}\n";
    cli_npy_header ph;
    CHECK(cli_npy_parse_header((const unsigned char *)v2, sizeof v2 - 1, &ph) == 0);
    CHECK(ph.major == 2 && ph.dtype == ZGPU_FLOAT64 && ph.nonnative == cli_host_little_endian() && ph.fortran_order &&
          ph.ndim == 2 && ph.shape[0] == 2 && ph.shape[1] == 3 && ph.data_offset == 12 + 0x35);
    /* rejected headers */
    static const char *const bad[] = {
        "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<U4', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': 'O', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<i4', 'fortran_order': 0, 'shape': (2,), }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': [2], }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (-2,), }",
        "{'descr': '<i4', 'fortran_order': False}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
        "{'descr': '|i4', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<i3', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (2,)",
        "['descr']",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char buf[512];
        size_t n = strlen(bad[i]);
        memcpy(buf, "\x93NUMPY\x01\x00", 8);
        buf[8] = (unsigned char)n;
        buf[9] = 0;
        memcpy(buf + 10, bad[i], n);
        CHECK_MSG(cli_npy_parse_header(buf, 10 + n, &ph) == -1, "bad header %zu accepted", i);
    }
    CHECK(cli_npy_parse_header((const unsigned char *)"\x93NUMPX\x01\x00\x00\x00", 10, &ph) == -1);
    CHECK(cli_npy_parse_header((const unsigned char *)"\x93NUMPY\x04\x00\x00\x00", 10, &ph) == -1);
}

/* Writes a .npy with a hand-made header and raw data bytes; returns the path (static buffer). */
static const char *write_temp_npy(const char *descr, int fortran, const char *shape, const void *data, size_t n) {
    static char path[64];
    strcpy(path, "/tmp/zgpu_test_cli_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    char dict[200];
    int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr,
                      fortran ? "True" : "False", shape);
    size_t total = (10 + (size_t)dl + 1 + 63) / 64 * 64;
    unsigned char head[256];
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (unsigned char)(total - 10);
    head[9] = 0;
    memcpy(head + 10, dict, (size_t)dl);
    memset(head + 10 + dl, ' ', total - 10 - (size_t)dl);
    head[total - 1] = '\n';
    FILE *f = fdopen(fd, "wb");
    fwrite(head, 1, total, f);
    fwrite(data, 1, n, f);
    fclose(f);
    return path;
}

static void test_npy_conversion(void) {
    /* (2, 3) big-endian uint16 in Fortran order: v[i][j] = 100 i + j + 1 stored column by column. */
    const unsigned char be_f[] = {0, 1, 0, 101, 0, 2, 0, 102, 0, 3, 0, 103};
    const char *p = write_temp_npy(">u2", 1, "(2, 3)", be_f, sizeof be_f);
    CHECK(p != NULL);
    cli_npy_header h;
    void *data = NULL;
    CHECK_MSG(cli_npy_load(p, &h, &data) == 0, "%s", cli_errmsg());
    if (data) {
        const uint16_t want[6] = {1, 2, 3, 101, 102, 103};
        CHECK(memcmp(data, want, sizeof want) == 0);
        CHECK(h.dtype == ZGPU_UINT16 && h.ndim == 2 && !h.fortran_order && !h.nonnative);
    }
    free(data);
    unlink(p);

    /* big-endian complex64 swaps each 4-byte half: (1.0, -2.0) */
    const unsigned char be_c8[] = {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0};
    p = write_temp_npy(">c8", 0, "(1,)", be_c8, sizeof be_c8);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) {
        float c[2];
        memcpy(c, data, 8);
        CHECK(c[0] == 1.0f && c[1] == -2.0f);
    }
    free(data);
    unlink(p);

    /* big-endian float16 1.5 and -inf, 0-d big-endian float64 */
    const unsigned char be_f2[] = {0x3e, 0x00, 0xfc, 0x00};
    p = write_temp_npy(">f2", 0, "(2,)", be_f2, sizeof be_f2);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) {
        uint16_t v[2];
        memcpy(v, data, 4);
        CHECK(v[0] == 0x3e00 && v[1] == 0xfc00);
    }
    free(data);
    unlink(p);
    const unsigned char be_f8[] = {0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18};
    p = write_temp_npy(">f8", 0, "()", be_f8, sizeof be_f8);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) {
        double v;
        memcpy(&v, data, 8);
        CHECK(v == 3.141592653589793);
        CHECK(h.ndim == 0);
    }
    free(data);
    unlink(p);

    /* raw |V3 in Fortran order (2, 2): bytes are never swapped, elements move whole */
    const unsigned char v3f[] = {'a', 'a', 'a', 'c', 'c', 'c', 'b', 'b', 'b', 'd', 'd', 'd'};
    p = write_temp_npy("|V3", 1, "(2, 2)", v3f, sizeof v3f);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) CHECK(memcmp(data, "aaabbbcccddd", 12) == 0);
    free(data);
    unlink(p);

    /* 3-D Fortran little-endian int64 against a reference transposition */
    int64_t f3[2 * 3 * 4], want3[2 * 3 * 4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                int64_t v = (int64_t)i * 10000000000LL + j * 100 + k;
                f3[i + 2 * j + 6 * k] = v;
                want3[(i * 3 + j) * 4 + k] = v;
            }
    p = write_temp_npy("<i8", 1, "(2, 3, 4)", f3, sizeof f3);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == 0);
    if (data) CHECK(memcmp(data, want3, sizeof want3) == 0);
    free(data);
    unlink(p);

    /* a file shorter than its header says is an error */
    p = write_temp_npy("<i8", 0, "(100,)", f3, sizeof f3);
    data = NULL;
    CHECK(cli_npy_load(p, &h, &data) == -1 && data == NULL);
    CHECK(strstr(cli_errmsg(), "header says") != NULL);
    unlink(p);

    /* block reads convert byte order too */
    p = write_temp_npy(">u4", 0, "(3,)", (const unsigned char[]){0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}, 12);
    FILE *f = fopen(p, "rb");
    CHECK(f && cli_npy_read_header(f, p, &h) == 0);
    uint32_t two[2] = {0};
    CHECK(f && cli_npy_read_block(f, p, &h, 4, two, 8) == 0);
    CHECK(two[0] == 256 && two[1] == 65536);
    if (f) fclose(f);
    unlink(p);

    /* save then load: every byte comes back */
    uint16_t vals[6] = {1, 2, 3, 65535, 0, 7};
    const uint64_t shp[2] = {2, 3};
    char path[64];
    strcpy(path, "/tmp/zgpu_test_cli_saveXXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    CHECK(cli_npy_save(path, ZGPU_UINT16, 2, 2, shp, vals) == 0);
    data = NULL;
    CHECK(cli_npy_load(path, &h, &data) == 0);
    if (data) CHECK(memcmp(data, vals, sizeof vals) == 0 && h.ndim == 2 && h.shape[0] == 2 && h.shape[1] == 3);
    free(data);
    unlink(path);
    CHECK(cli_npy_save("/dev/null", ZGPU_UINT16, 2, 2, shp, vals) == 0);
    CHECK(cli_npy_save("/nonexistent-dir/x.npy", ZGPU_UINT16, 2, 2, shp, vals) == -1);

    /* swapping helpers */
    unsigned char b16[16];
    for (int i = 0; i < 16; i++) b16[i] = (unsigned char)i;
    cli_byteswap(b16, 16, 16);
    CHECK(b16[0] == 15 && b16[15] == 0 && b16[7] == 8);
    cli_byteswap(b16, 16, 4);
    CHECK(b16[0] == 12 && b16[3] == 15 && b16[4] == 8);
    CHECK(cli_dtype_swap_unit(ZGPU_COMPLEX128, 16) == 8 && cli_dtype_swap_unit(ZGPU_RAW, 5) == 1);
}

static void test_descr_parse(void) {
    zgpu_dtype dt;
    size_t sz;
    int nn;
    CHECK(cli_dtype_from_descr("<u2", &dt, &sz, &nn) == 0 && dt == ZGPU_UINT16 && sz == 2 && nn == !cli_host_little_endian());
    CHECK(cli_dtype_from_descr(">i8", &dt, &sz, &nn) == 0 && dt == ZGPU_INT64 && nn == cli_host_little_endian());
    CHECK(cli_dtype_from_descr("|u1", &dt, &sz, &nn) == 0 && dt == ZGPU_UINT8 && nn == 0);
    CHECK(cli_dtype_from_descr(">u1", &dt, &sz, &nn) == 0 && dt == ZGPU_UINT8 && nn == 0);
    CHECK(cli_dtype_from_descr("=f4", &dt, &sz, &nn) == 0 && dt == ZGPU_FLOAT32 && nn == 0);
    CHECK(cli_dtype_from_descr("|V7", &dt, &sz, &nn) == 0 && dt == ZGPU_RAW && sz == 7);
    CHECK(cli_dtype_from_descr("<c16", &dt, &sz, &nn) == 0 && dt == ZGPU_COMPLEX128);
    CHECK(cli_dtype_from_descr("|b1", &dt, &sz, &nn) == 0 && dt == ZGPU_BOOL);
    CHECK(cli_dtype_from_descr("<M8[ns]", &dt, &sz, &nn) == -1);
    CHECK(cli_dtype_from_descr("<f3", &dt, &sz, &nn) == -1);
    CHECK(cli_dtype_from_descr("u2", &dt, &sz, &nn) == -1);
    CHECK(cli_dtype_from_descr("|V0", &dt, &sz, &nn) == -1);
    CHECK(cli_dtype_from_descr("<", &dt, &sz, &nn) == -1);
    CHECK(cli_dtype_from_descr("|u2", &dt, &sz, &nn) == -1 && strstr(cli_errmsg(), "|u2"));
    CHECK(cli_dtype_from_descr("<U3", &dt, &sz, &nn) == -1 && strstr(cli_errmsg(), "unicode"));
}

/* ---- JSON (the library's DOM and writer), options, devices ---- */
static void test_json_and_args(void) {
    const char *doc = "{ \"a\" : [1, {\"b\": \"x\\\"y\"}, NaN], \"c\" : -Infinity, \"dimension_names\": null, \"e\":{} }";
    zj_value *v = NULL;
    CHECK(cli_json_parse(doc, "doc", &v) == 0 && v);
    /* members and items as `zgpu info` and `zgpu cp` pick them out */
    char *t = cli_json_text(zj_get(v, "c"));
    CHECK_STR(t, "-Infinity");
    free(t);
    CHECK(zj_get(v, "zz") == NULL && cli_json_text(zj_get(v, "zz")) == NULL);
    CHECK(cli_json_text(zj_get(v, "dimension_names")) == NULL); /* null reads as absent */
    CHECK_STR(zj_string(zj_get(zj_at(zj_get(v, "a"), 1), "b")), "x\"y");
    t = cli_json_text(zj_at(zj_get(v, "a"), 2));
    CHECK_STR(t, "NaN");
    free(t);
    CHECK(zj_at(zj_get(v, "a"), 3) == NULL);
    t = cli_json_text(zj_get(v, "a"));
    CHECK_STR(t, "[1, {\"b\": \"x\\\"y\"}, NaN]");
    free(t);
    t = cli_json_tight(v);
    CHECK_STR(t, "{\"a\":[1,{\"b\":\"x\\\"y\"},NaN],\"c\":-Infinity,\"dimension_names\":null,\"e\":{}}");
    free(t);
    zj_free(v);
    /* malformed text: -1 with the library's message */
    CHECK(cli_json_parse("{\"a\": [1, 2}", "doc", &v) == -1 && v == NULL && strstr(cli_errmsg(), "doc"));
    CHECK(cli_json_parse("\"unterminated", "doc", &v) == -1);
    CHECK(cli_json_parse(NULL, "doc", &v) == -1);
    char deep[2000];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    CHECK(cli_json_parse(deep, "deep", &v) == -1);
    /* tight output keeps blanks inside strings and escapes keys as the writer does */
    CHECK(cli_json_parse("{ \"a b\" : [ 1 ,\n 2 ] , \"c\\\" d\": \" \", \"\\u0041\\n\": [] }", "doc", &v) == 0);
    t = cli_json_tight(v);
    CHECK_STR(t, "{\"a b\":[1,2],\"c\\\" d\":\" \",\"A\\n\":[]}");
    free(t);
    zj_free(v);

    static const cli_opt_def defs[] = {{"output", 'o', 1}, {"region", 0, 1}, {"overwrite", 0, 0}, {NULL, 0, 0}};
    cli_args ar;
    char *argv1[] = {"a", "-o", "x.npy", "--region=-5:", "--overwrite", "--", "--b"};
    CHECK(cli_args_parse(7, argv1, defs, &ar) == 0);
    CHECK(ar.npos == 2 && !strcmp(ar.pos[0], "a") && !strcmp(ar.pos[1], "--b"));
    CHECK_STR(ar.value[0], "x.npy");
    CHECK_STR(ar.value[1], "-5:");
    CHECK(ar.set[2] == 1 && !ar.help);
    char *argv2[] = {"--region", "-1"};
    CHECK(cli_args_parse(2, argv2, defs, &ar) == 0 && !strcmp(ar.value[1], "-1"));
    char *argv3[] = {"--nope"};
    CHECK(cli_args_parse(1, argv3, defs, &ar) == -1 && strstr(cli_errmsg(), "--nope"));
    char *argv4[] = {"--region"};
    CHECK(cli_args_parse(1, argv4, defs, &ar) == -1);
    char *argv5[] = {"--overwrite=1"};
    CHECK(cli_args_parse(1, argv5, defs, &ar) == -1);
    char *argv6[] = {"x", "--help"};
    CHECK(cli_args_parse(2, argv6, defs, &ar) == 0 && ar.help);

    uint64_t l[3];
    CHECK(cli_parse_u64_list("64,32,1", 3, l, "--chunks") == 0 && l[0] == 64 && l[1] == 32 && l[2] == 1);
    CHECK(cli_parse_u64_list("64,32", 3, l, "--chunks") == -1);
    CHECK(cli_parse_u64_list("64,32,1,1", 3, l, "--chunks") == -1);
    CHECK(cli_parse_u64_list("64,0,1", 3, l, "--chunks") == -1);
    CHECK(cli_parse_u64_list("64,-1,1", 3, l, "--chunks") == -1);

    int dev;
    CHECK(cli_parse_device("cuda:3", &dev) == 0 && dev == 3);
    CHECK(cli_parse_device("cuda", &dev) == 0 && dev == 0);
    CHECK(cli_parse_device("cpu", &dev) == 0 && dev == -1);
    CHECK(cli_parse_device("cuda:-1", &dev) == -1);
    CHECK(cli_parse_device("gpu0", &dev) == -1);
}

int main(void) {
    test_regions();
    test_slabs();
    test_npy_headers();
    test_npy_conversion();
    test_descr_parse();
    test_json_and_args();
    TEST_MAIN_END();
}
