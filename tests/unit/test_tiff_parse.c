/* The TIFF parser (src/format/tiff/) on hand-built files: classic and BigTIFF in both byte orders, tiles and
 * strips, then hostile ones — IFD loops, offsets past the end, counts that do not match the layout, absurd
 * sizes, unsupported sample formats and codecs — each a clean error naming the file and page, and thousands of
 * random mutations of a valid file that must never crash (ASan). */
#include "test.h"
#include "common/status.h"
#include "format/tiff/tiff.h"

typedef struct tag {
    uint16_t tag, type;
    uint32_t count;
    uint64_t v[64]; /* values (count <= 64) */
} tag;

typedef struct file {
    uint8_t b[8192];
    size_t n;
    int be, big;
} file;

static void put(file *f, size_t at, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; i++) f->b[at + i] = (uint8_t)(f->be ? v >> (8 * (n - 1 - i)) : v >> (8 * i));
}
static unsigned tsize(uint16_t t) { return t == 3 ? 2 : t == 4 ? 4 : t == 16 ? 8 : t == 12 ? 8 : 1; }

/* A header, then one IFD at `ifd` with the tags (sorted by the caller), out-of-line values after it, then `data`
 * bytes of image data; next: the next-IFD offset written. Returns the IFD's end. */
static size_t write_ifd(file *f, size_t ifd, const tag *t, int n, uint64_t next) {
    const unsigned head = f->big ? 8 : 2, esz = f->big ? 20 : 12, nsz = f->big ? 8 : 4, room = f->big ? 8 : 4;
    put(f, ifd, (uint64_t)n, head);
    size_t extra = ifd + head + (size_t)n * esz + nsz;
    for (int i = 0; i < n; i++) {
        size_t e = ifd + head + (size_t)i * esz;
        put(f, e, t[i].tag, 2);
        put(f, e + 2, t[i].type, 2);
        put(f, e + 4, t[i].count, f->big ? 8 : 4);
        size_t vf = e + (f->big ? 12 : 8);
        unsigned ts = tsize(t[i].type);
        size_t at = vf;
        if ((size_t)t[i].count * ts > room) {
            extra = (extra + 1) & ~(size_t)1;
            put(f, vf, extra, room);
            at = extra;
            extra += (size_t)t[i].count * ts;
        }
        for (uint32_t k = 0; k < t[i].count; k++) put(f, at + k * ts, t[i].v[k], ts);
    }
    put(f, ifd + head + (size_t)n * esz, next, nsz);
    if (extra > f->n) f->n = extra;
    return extra;
}

static void header(file *f, int be, int big, uint64_t first) {
    memset(f, 0, sizeof *f);
    f->be = be;
    f->big = big;
    f->b[0] = f->b[1] = be ? 'M' : 'I';
    put(f, 2, big ? 43 : 42, 2);
    if (big) {
        put(f, 4, 8, 2);
        put(f, 6, 0, 2);
        put(f, 8, first, 8);
        f->n = 16;
    } else {
        put(f, 4, first, 4);
        f->n = 8;
    }
}

static zgpu_status read_mem(void *user, uint64_t off, uint64_t n, uint8_t *out) {
    const file *f = user;
    if (off > f->n || n > f->n - off) return zg_error(ZGPU_ERR_INTERNAL, "test reader: range past the end");
    memcpy(out, f->b + off, (size_t)n);
    return ZGPU_OK;
}

static zgpu_status parse(file *f, zg_tiff_file *out) { return zg_tiff_parse(read_mem, f, f->n, "hand.tif", out); }

/* A 40 x 30 uint16 image in 16 x 16 tiles (3 x 2 of them), data at 4000. */
static int tiled(tag *t, uint32_t offsets_n) {
    int n = 0;
    t[n++] = (tag){256, 3, 1, {40}};
    t[n++] = (tag){257, 3, 1, {30}};
    t[n++] = (tag){258, 3, 1, {16}};
    t[n++] = (tag){259, 3, 1, {5}};
    t[n++] = (tag){322, 3, 1, {16}};
    t[n++] = (tag){323, 3, 1, {16}};
    tag o = {324, 4, offsets_n, {0}}, c = {325, 4, offsets_n, {0}};
    for (uint32_t k = 0; k < offsets_n; k++) {
        o.v[k] = 4000 + 100 * k;
        c.v[k] = 100;
    }
    t[n++] = o;
    t[n++] = c;
    return n;
}

static void test_valid(void) {
    for (int be = 0; be <= 1; be++)
        for (int big = 0; big <= 1; big++) {
            file f;
            header(&f, be, big, 16);
            tag t[16];
            int n = tiled(t, 6);
            write_ifd(&f, 16, t, n, 0);
            f.n = 4600;
            zg_tiff_file tf;
            CHECK_OK(parse(&f, &tf));
            if (tf.n_pages != 1) { CHECK(0); continue; }
            const zg_tiff_page *p = &tf.pages[0];
            CHECK_EQ_U64(p->width, 40);
            CHECK_EQ_U64(p->height, 30);
            CHECK_EQ_U64(p->tiles_across, 3);
            CHECK_EQ_U64(p->tiles_down, 2);
            CHECK_EQ_U64(p->n_chunks, 6);
            CHECK_EQ_U64(p->offsets[5], 4500);
            CHECK(p->tiled && p->compression == 5 && tf.big_endian == be && tf.bigtiff == big);
            CHECK_STR(zg_tiff_dtype_name(p), "uint16");
            zg_tiff_free(&tf);
        }
    /* strips: RowsPerStrip 7 over 30 rows -> 5 strips, the last of 2 rows */
    file f;
    header(&f, 0, 0, 8);
    tag t[12];
    int n = 0;
    t[n++] = (tag){256, 3, 1, {10}};
    t[n++] = (tag){257, 3, 1, {30}};
    t[n++] = (tag){258, 3, 1, {8}};
    t[n++] = (tag){273, 4, 5, {1000, 1100, 1200, 1300, 1400}};
    t[n++] = (tag){278, 3, 1, {7}};
    t[n++] = (tag){279, 4, 5, {70, 70, 70, 70, 20}};
    write_ifd(&f, 8, t, n, 0);
    f.n = 1500;
    zg_tiff_file tf;
    CHECK_OK(parse(&f, &tf));
    if (tf.n_pages == 1) {
        CHECK(!tf.pages[0].tiled);
        CHECK_EQ_U64(tf.pages[0].tile_height, 7);
        CHECK_EQ_U64(tf.pages[0].tiles_down, 5);
    }
    zg_tiff_free(&tf);
}

/* A file that must fail with `want`, its message holding `needle`. */
static void expect_fail(file *f, zgpu_status want, const char *needle) {
    zg_tiff_file tf;
    CHECK_STATUS(parse(f, &tf), want);
    CHECK_MSG(strstr(zgpu_last_error(), needle) != NULL, "message \"%s\" lacks \"%s\"", zgpu_last_error(), needle);
    CHECK_MSG(strstr(zgpu_last_error(), "hand.tif") != NULL, "message \"%s\" does not name the file", zgpu_last_error());
}

static void test_hostile(void) {
    file f;
    tag t[16];
    int n;
    /* an IFD whose next IFD is itself */
    header(&f, 0, 0, 8);
    n = tiled(t, 6);
    write_ifd(&f, 8, t, n, 8);
    f.n = 4600;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "loops");
    /* a loop over two IFDs */
    header(&f, 1, 1, 16);
    n = tiled(t, 6);
    write_ifd(&f, 16, t, n, 2000);
    write_ifd(&f, 2000, t, n, 16);
    f.n = 4600;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "page 2: the IFD chain loops back to offset 16");
    /* the first IFD past the end, odd, inside the header */
    header(&f, 0, 0, 9000);
    f.n = 100;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "past the end");
    header(&f, 0, 0, 9);
    f.n = 100;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "odd");
    header(&f, 0, 0, 4);
    f.n = 100;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "header");
    header(&f, 0, 0, 0);
    f.n = 100;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "no image");
    /* no entries; more entries than allowed */
    header(&f, 0, 0, 8);
    f.n = 100;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "entries");
    put(&f, 8, 60000, 2);
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "entries");
    /* tile tables that do not match the layout */
    header(&f, 0, 0, 8);
    n = tiled(t, 5);
    write_ifd(&f, 8, t, n, 0);
    f.n = 4600;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "the layout");
    /* a tile past the end of the file: named */
    header(&f, 0, 0, 8);
    n = tiled(t, 6);
    write_ifd(&f, 8, t, n, 0);
    f.n = 4550;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "tile 5");
    /* absurd sizes */
    header(&f, 0, 0, 8);
    n = tiled(t, 6);
    t[0] = (tag){256, 4, 1, {0}};
    write_ifd(&f, 8, t, n, 0);
    f.n = 4600;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "0 x 30");
    header(&f, 0, 0, 8);
    n = tiled(t, 6);
    t[4] = (tag){322, 4, 1, {1u << 30}};
    write_ifd(&f, 8, t, n, 0);
    f.n = 4600;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "tiles of");
    /* a count claiming more values than the file has bytes */
    header(&f, 0, 0, 8);
    n = tiled(t, 6);
    write_ifd(&f, 8, t, n, 0);
    f.n = 4600;
    put(&f, 8 + 2 + 12 * 6 + 4, 0x7FFFFFFF, 4); /* TileOffsets' count */
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "claims");
    /* valid TIFF that zgpu does not read: named */
    header(&f, 0, 0, 8);
    n = tiled(t, 6);
    t[2] = (tag){258, 3, 1, {12}};
    write_ifd(&f, 8, t, n, 0);
    f.n = 4600;
    expect_fail(&f, ZGPU_ERR_UNSUPPORTED, "12 bits");
    header(&f, 0, 0, 8);
    n = tiled(t, 6);
    t[3] = (tag){259, 3, 1, {34712}};
    write_ifd(&f, 8, t, n, 0);
    f.n = 4600;
    expect_fail(&f, ZGPU_ERR_UNSUPPORTED, "Compression 34712");
    header(&f, 0, 0, 8);
    n = tiled(t, 6);
    t[n++] = (tag){317, 3, 1, {3}}; /* predictor 3 on integers */
    write_ifd(&f, 8, t, n, 0);
    f.n = 4600;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "Predictor 3");
    /* a SubIFD that is the page itself */
    header(&f, 0, 0, 8);
    n = tiled(t, 6);
    t[n++] = (tag){330, 4, 1, {8}};
    write_ifd(&f, 8, t, n, 0);
    f.n = 4600;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "SubIFD 0");
    /* not a TIFF, too short */
    header(&f, 0, 0, 8);
    f.b[2] = 41;
    f.n = 100;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "not a TIFF");
    f.n = 5;
    expect_fail(&f, ZGPU_ERR_CORRUPT_DATA, "too few");
}

/* Random damage to valid files: an error or a parse, never a crash or a read out of bounds. */
static void test_mutations(void) {
    uint64_t s = 0x1234567;
    int parsed = 0, failed = 0;
    for (int round = 0; round < 4000; round++) {
        file f;
        tag t[16];
        const int be = round & 1, big = (round >> 1) & 1;
        header(&f, be, big, 16);
        int n = tiled(t, 6);
        t[n++] = (tag){330, 4, 1, {16}};
        write_ifd(&f, 16, t, n, round % 3 ? 0 : 16);
        f.n = 4600;
        const int flips = 1 + round % 8;
        for (int k = 0; k < flips; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(s >> 33) % 600;
            f.b[at] ^= (uint8_t)(s >> 20);
        }
        zg_tiff_file tf;
        if (parse(&f, &tf) == ZGPU_OK) {
            parsed++;
            for (size_t i = 0; i < tf.n_pages; i++)
                for (uint64_t k = 0; k < tf.pages[i].n_chunks; k++)
                    if (tf.pages[i].counts[k] && tf.pages[i].offsets[k] + tf.pages[i].counts[k] > f.n) failed++;
            zg_tiff_free(&tf);
        }
    }
    CHECK_MSG(failed == 0, "%d tiles past the end of their file were accepted", failed);
    CHECK(parsed > 0);
}

int main(void) {
    test_valid();
    test_hostile();
    test_mutations();
    TEST_MAIN_END();
}
