/* Merging of nearby ranges of one object into one request (client.h: zg_http_merge_ranges). */
#include <stdlib.h>

#include "store/http/client.h"

typedef struct span_ix {
    uint64_t off, end;
    size_t i;
} span_ix;

static int span_cmp(const void *a, const void *b) {
    const span_ix *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

size_t zg_http_merge_ranges(size_t n, const uint64_t *offset, const uint64_t *length, uint64_t max_gap,
                            uint64_t max_span, uint64_t alone_min, uint32_t *groups, uint64_t *group_off,
                            uint64_t *group_len) {
    if (n == 0) return 0;
    span_ix *s = malloc(n * sizeof *s);
    if (!s) { /* no memory to sort: one group a range is still right, only slower */
        for (size_t i = 0; i < n; i++) {
            groups[i] = (uint32_t)i;
            group_off[i] = offset[i];
            group_len[i] = length[i];
        }
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        s[i].off = offset[i];
        s[i].end = length[i] > UINT64_MAX - offset[i] ? UINT64_MAX : offset[i] + length[i];
        s[i].i = i;
    }
    qsort(s, n, sizeof *s, span_cmp);
    size_t g = 0;
    uint64_t start = s[0].off, end = s[0].end;
    int alone = s[0].end - s[0].off >= alone_min; /* the group is one long range, kept to itself */
    groups[s[0].i] = 0;
    for (size_t k = 1; k < n; k++) {
        uint64_t new_end = s[k].end > end ? s[k].end : end;
        const int long_range = s[k].end - s[k].off >= alone_min;
        /* overlapping ranges (off < end) have no gap, and share their bytes whatever their lengths */
        int join = s[k].off < end ||
                   (!alone && !long_range && s[k].off - end <= max_gap && new_end - start <= max_span);
        if (join) {
            end = new_end;
        } else {
            alone = long_range;
            group_off[g] = start;
            group_len[g] = end - start;
            g++;
            start = s[k].off;
            end = s[k].end;
        }
        groups[s[k].i] = (uint32_t)g;
    }
    group_off[g] = start;
    group_len[g] = end - start;
    free(s);
    return g + 1;
}
