/* What every store shares: freeing, listings, and batched reads for stores without their own. */
#include <stdlib.h>

#include "store/store.h"
#include "common/status.h"

void zg_store_free(zg_store *s) {
    if (!s) return;
    char *id = s->id;
    s->vt->destroy(s);
    free(id);
}

void zg_list_free(zg_list_entry *entries, size_t n) {
    for (size_t i = 0; i < n; i++) free(entries[i].name);
    free(entries);
}

zgpu_status zg_store_get_batch(zg_store *s, zg_store_get *reqs, size_t n) {
    if (s->vt->get_many) return s->vt->get_many(s, reqs, n);
    for (size_t i = 0; i < n; i++) {
        zg_store_get *g = &reqs[i];
        g->object_size = ZG_STORE_WHOLE;
        zgpu_status st;
        if (g->upto && g->length != ZG_STORE_WHOLE) { /* (a head read: as much as there is) */
            uint64_t size = 0;
            st = s->vt->size(s, g->key, &size, &g->found);
            if (st == ZGPU_OK && g->found) {
                g->object_size = size;
                st = s->vt->get_range(s, g->key, 0, size < g->length ? size : g->length, 0, g->out, &g->found);
            }
        } else {
            st = g->length == ZG_STORE_WHOLE
                     ? s->vt->get(s, g->key, g->buf, &g->found)
                     : s->vt->get_range(s, g->key, g->offset, g->length, g->from_end, g->out, &g->found);
        }
        g->status = st;
        if (st == ZGPU_OK && g->found && g->length == ZG_STORE_WHOLE) g->object_size = g->buf->size;
        if (g->on_done) g->on_done(g);
        if (st != ZGPU_OK) return st;
    }
    return ZGPU_OK;
}
