/* The byte runs of a chunk a read's boxes need (host/host_runs.c): merged in order, widened where short, and sent
 * straight to the boxes' destinations where nothing stands in the way. */
#include <stdlib.h>
#include <string.h>

#include "host/host_runs.h"
#include "test.h"

static uint32_t rng = 91;
static uint32_t rnd(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

static int byte_run_cmp(const void *x, const void *y) {
    const zg_byte_run *a = x, *b = y;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* zg_host_merge_runs (a unit's boxes' rows merged in order) against qsort: 1 to 64 ascending segments of random
 * lengths (some empty), offsets with repeats across segments. */
static void merge_runs(void) {
    enum { MAX = 4096 };
    zg_byte_run *a = malloc(2 * MAX * sizeof *a), *ref = malloc(MAX * sizeof *ref);
    size_t seg[65];
    for (int round = 0; round < 200; round++) {
        const size_t n_seg = 1 + (size_t)round % 64;
        size_t m = 0;
        for (size_t k = 0; k < n_seg; k++) {
            seg[k] = m;
            const size_t len = rnd() % 5 == 0 ? 0 : rnd() % (MAX / 64);
            uint64_t off = rnd() % 1000;
            for (size_t i = 0; i < len; i++, m++) {
                off += rnd() % 3; /* (equal offsets within and across segments) */
                a[m] = (zg_byte_run){off, 1 + (uint64_t)rnd() % 9, NULL};
            }
        }
        seg[n_seg] = m;
        memcpy(ref, a, m * sizeof *a);
        qsort(ref, m, sizeof *ref, byte_run_cmp);
        const zg_byte_run *got = zg_host_merge_runs(a, a + MAX, seg, n_seg);
        int bad = 0;
        for (size_t i = 0; i < m && !bad; i++) bad = got[i].off != ref[i].off;
        for (size_t i = 1; i < m && !bad; i++) bad = got[i].off < got[i - 1].off;
        CHECK_MSG(!bad, "merge of %zu segments, %zu runs: not in order", n_seg, m);
    }
    free(a);
    free(ref);
}

/* A chunk of 4 x 16 x 128 uint32 (C-order byte strides 8192, 512, 4) and boxes in it. */
static const int64_t CS[3] = {8192, 512, 4};

static zg_plan chunk_plan(void) {
    zg_plan p;
    memset(&p, 0, sizeof p);
    p.ndim = 3;
    p.chunk[0] = 4;
    p.chunk[1] = 16;
    p.chunk[2] = 128;
    return p;
}

static zg_chunk_task box(uint32_t region, uint64_t z, uint64_t y, uint64_t x, uint64_t nz, uint64_t ny, uint64_t nx) {
    zg_chunk_task t;
    memset(&t, 0, sizeof t);
    t.region = region;
    t.in_chunk[0] = z;
    t.in_chunk[1] = y;
    t.in_chunk[2] = x;
    t.count[0] = nz;
    t.count[1] = ny;
    t.count[2] = nx;
    return t;
}

static void unit_runs(void) {
    const zg_plan p = chunk_plan();
    zg_buf buf = ZG_BUF_INIT;
    const zg_byte_run *r = NULL;
    size_t n = 0;
    int direct = -1;
    static uint8_t out0[2 * 3 * 100 * 4], out1[2 * 3 * 100 * 4];
    void *outs[2] = {out0, out1};
    /* two C-contiguous destinations of 2 x 3 x 100 (rows of 400 bytes) */
    const int64_t strides[6] = {1200, 400, 4, 1200, 400, 4};
    const zg_runs_dest dest = {outs, strides};

    /* one box: its six rows, each straight to its row of the destination */
    zg_chunk_task t[2] = {box(0, 1, 2, 5, 2, 3, 100)};
    CHECK(zg_host_unit_runs(&p, t, 1, CS, &dest, &buf, &r, &n, &direct) == 1);
    CHECK_EQ_U64(n, 6);
    CHECK(direct == 1);
    for (size_t i = 0; i < n && i < 6; i++) {
        const size_t z = i / 3, y = i % 3;
        CHECK_EQ_U64(r[i].off, (1 + z) * 8192 + (2 + y) * 512 + 5 * 4);
        CHECK_EQ_U64(r[i].len, 400);
        CHECK(r[i].dst == out0 + z * 1200 + y * 400);
    }
    /* no destination given (a converting read): the same runs, none with a dst */
    CHECK(zg_host_unit_runs(&p, t, 1, CS, NULL, &buf, &r, &n, &direct) == 1);
    CHECK(n == 6 && direct == 0 && r[0].dst == NULL && r[5].dst == NULL);
    /* a destination whose rows are strided (every other element): the chunk's bytes are placed instead */
    const int64_t strided[6] = {2400, 800, 8, 1200, 400, 4};
    const zg_runs_dest sdest = {outs, strided};
    CHECK(zg_host_unit_runs(&p, t, 1, CS, &sdest, &buf, &r, &n, &direct) == 1);
    CHECK(n == 6 && direct == 0 && r[0].dst == NULL);

    /* a thin box (3 elements, 12 bytes a row) near the row's end: each row widened to 256 bytes that still hold it,
     * inside the chunk's row of 512 */
    t[0] = box(0, 0, 0, 120, 1, 4, 3);
    CHECK(zg_host_unit_runs(&p, t, 1, CS, &dest, &buf, &r, &n, &direct) == 1);
    CHECK(n == 4 && direct == 0);
    for (size_t i = 0; i < n && i < 4; i++) {
        CHECK_EQ_U64(r[i].off, i * 512 + 256);
        CHECK_EQ_U64(r[i].len, 256);
        CHECK(r[i].dst == NULL);
    }
    t[0] = box(0, 0, 0, 2, 1, 1, 3); /* (near the row's start: from the box on) */
    CHECK(zg_host_unit_runs(&p, t, 1, CS, &dest, &buf, &r, &n, &direct) == 1);
    CHECK(n == 1 && r[0].off == 8 && r[0].len == 256);

    /* boxes spanning whole rows: a run a plane; whole planes: one run */
    t[0] = box(0, 1, 0, 0, 2, 16, 128);
    CHECK(zg_host_unit_runs(&p, t, 1, CS, NULL, &buf, &r, &n, &direct) == 1);
    CHECK(n == 1 && r[0].off == 8192 && r[0].len == 16384);

    /* two boxes that touch in the chunk (x 5..104 and 105..204 of the same rows would, but 128 columns: y instead)
     * and go to two destinations: kept apart, each straight to its own */
    t[0] = box(0, 0, 0, 5, 2, 3, 100);
    t[1] = box(1, 0, 3, 5, 2, 3, 100);
    CHECK(zg_host_unit_runs(&p, t, 2, CS, &dest, &buf, &r, &n, &direct) == 1);
    CHECK_EQ_U64(n, 12);
    CHECK(direct == 1);
    int order = 1;
    for (size_t i = 1; i < n; i++) order &= r[i].off > r[i - 1].off;
    CHECK(order);
    CHECK(r[3].off == 3 * 512 + 20 && r[3].dst == out1); /* (plane 0: box 0's rows 0-2, then box 1's 3-5) */
    CHECK(r[6].off == 8192 + 20 && r[6].dst == out0 + 1200);

    /* two boxes side by side along a row (x 0..63 and 64..127): their touching runs kept apart (two destinations) */
    t[0] = box(0, 0, 0, 0, 1, 2, 64);
    t[1] = box(1, 0, 0, 64, 1, 2, 64);
    CHECK(zg_host_unit_runs(&p, t, 2, CS, &dest, &buf, &r, &n, &direct) == 1);
    CHECK(n == 4 && direct == 1);
    CHECK(r[0].off == 0 && r[0].len == 256 && r[0].dst == out0);
    CHECK(r[1].off == 256 && r[1].len == 256 && r[1].dst == out1);
    /* the same without destinations: one run a row (two, touching, joined: both rows whole, so one run) */
    CHECK(zg_host_unit_runs(&p, t, 2, CS, NULL, &buf, &r, &n, &direct) == 1);
    CHECK(n == 1 && r[0].off == 0 && r[0].len == 1024);

    /* boxes sharing bytes: one copy of the chunk serves both, the overlaps merged */
    t[0] = box(0, 0, 0, 5, 2, 3, 100);
    t[1] = box(1, 0, 1, 20, 2, 3, 100);
    CHECK(zg_host_unit_runs(&p, t, 2, CS, &dest, &buf, &r, &n, &direct) == 1);
    CHECK(direct == 0);
    CHECK_EQ_U64(n, 8); /* (per plane: row 0 of box 0, rows 1-2 of both merged, row 3 of box 1) */
    CHECK(r[1].off == 512 + 20 && r[1].len == 460 && r[1].dst == NULL);

    /* boxes whose rows would be too many, or a column of the chunk: no runs (the prefix decodes) */
    const zg_plan big = {.ndim = 2, .chunk = {100000, 4}};
    const int64_t bcs[2] = {16, 4};
    t[0] = box(0, 0, 0, 0, 0, 0, 0);
    t[0].count[0] = 70000;
    t[0].count[1] = 2;
    CHECK(zg_host_unit_runs(&big, t, 1, bcs, NULL, &buf, &r, &n, &direct) == 0);
    zg_buf_free(&buf);
}

int main(void) {
    merge_runs();
    unit_runs();
    TEST_MAIN_END();
}
