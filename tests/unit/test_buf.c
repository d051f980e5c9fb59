/* Heap buffers (common/buf.h): growth keeps the contents, a fixed buffer refuses to grow, and buffers of megabytes are
 * advised for transparent huge pages: the kernel's own record of a mapping's advice (the "hg" flag of its VmFlags in
 * /proc/self/smaps) says whether the hint was given, whether or not huge pages were free to back it. CPU only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "test.h"

/* 1: the mapping holding address p carries the huge-page advice; 0: it does not; -1: no smaps to tell (not Linux). */
static int advised_huge(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0, found = 0;
    const uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a >= lo && a < hi;
        } else if (in && !strncmp(line, "VmFlags:", 8)) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

static void growth_and_fixed(void) {
    zg_buf b = ZG_BUF_INIT;
    CHECK_OK(zg_buf_append(&b, "abc", 3));
    CHECK_OK(zg_buf_reserve(&b, 1000));
    CHECK(b.cap >= 1000 && b.size == 3 && !memcmp(b.data, "abc", 3));
    zg_buf_free(&b);
    CHECK(b.data == NULL && b.cap == 0);
    uint8_t mem[8];
    zg_buf w = zg_buf_wrap(mem, sizeof mem);
    CHECK_OK(zg_buf_append(&w, "12345678", 8));
    CHECK(zg_buf_append(&w, "9", 1) == ZGPU_ERR_CORRUPT_DATA);
    CHECK(w.data == mem);
}

static void huge_pages(void) {
    const size_t MiB = (size_t)1 << 20;
    /* a big allocation: 2 MiB-aligned, advised, and usable to its end */
    uint8_t *big = zg_alloc_big(8 * MiB);
    CHECK(big != NULL);
    if (!big) return;
    CHECK_EQ_U64((uintptr_t)big % (2 * MiB), 0);
    memset(big, 0x5a, 8 * MiB);
    CHECK(big[8 * MiB - 1] == 0x5a);
    const int have_smaps = advised_huge(big) >= 0;
    if (have_smaps) CHECK_MSG(advised_huge(big) == 1, "an 8 MiB zg_alloc_big buffer is not advised for huge pages");
    else printf("skipped: no /proc/self/smaps to read the advice from\n");
    free(big);
    /* below ZG_HUGE_MIN: a plain allocation, not advised */
    uint8_t *small = zg_alloc_big(ZG_HUGE_MIN - 4096);
    CHECK(small != NULL);
    if (small && have_smaps) CHECK_MSG(advised_huge(small) == 0, "a buffer under ZG_HUGE_MIN was advised");
    free(small);
    /* a heap buffer that grows past ZG_HUGE_MIN: its aligned part advised, its contents kept */
    zg_buf b = ZG_BUF_INIT;
    CHECK_OK(zg_buf_append(&b, "head", 4));
    CHECK_OK(zg_buf_reserve(&b, 16 * MiB));
    CHECK(!memcmp(b.data, "head", 4));
    const uintptr_t inner = ((uintptr_t)b.data + 2 * MiB - 1) & ~(uintptr_t)(2 * MiB - 1);
    if (have_smaps) CHECK_MSG(advised_huge((const void *)(inner + MiB)) == 1, "a 16 MiB zg_buf is not advised");
    zg_buf_free(&b);
    /* nothing to advise: NULL or a tiny range, no crash */
    zg_hugepage_hint(NULL, 64 * MiB);
    char tiny[16];
    zg_hugepage_hint(tiny, sizeof tiny);
}

int main(void) {
    growth_and_fixed();
    huge_pages();
    TEST_MAIN_END();
}
