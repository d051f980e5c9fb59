/* A host read's rows as they become final. The host route of a device read (device/host_route.c) decodes into pinned
 * staging and copies it to the device: copied only after the whole read, the copy (2 MiB of a label crop: 80-90 us
 * on the H200 after 16 threads wrote it) came on top of the decode. With a progress the host read reports each box's
 * rows along axis 0 as they are written, and the caller copies each slab of its staging the moment its last row is
 * in, while the rest decodes. */
#ifndef ZG_READ_PROGRESS_H
#define ZG_READ_PROGRESS_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zg_read_progress {
    /* the caller's: the boxes' rows along axis 0, box after box (a box of a 0-d array: one row), cut into slabs of
     * consecutive rows; slab_done(user, s) is called once slab s is final, on the thread that wrote its last row */
    const size_t *row_base;      /* per box: its first row's index (rows of box r: [row_base[r], row_base[r + 1])) */
    const uint32_t *slab_of_row; /* per row: its slab (non-decreasing) */
    size_t n_slabs;
    void (*slab_done)(void *user, size_t slab);
    void *user;
    /* the host read's: per slab, the reports of its rows still to come (set by zg_progress_expect); and its attempts
     * (a read that meets a replaced shard runs again: the caller copies a slab again in each attempt that writes it) */
    atomic_uint *pending;
    atomic_uint attempt;
    /* the reports the read expects, and those still to come (a caller may hold back what finishes at the end) */
    size_t reports;
    atomic_size_t reports_left;
} zg_read_progress;

/** Before a host read's tasks run (every count back to 0 and the attempt counted first: zg_progress_reset): that
 *  rows [z0, z1) of box `box` will be reported once, together (z1 > z0). */
void zg_progress_reset(zg_read_progress *p);
void zg_progress_expect(zg_read_progress *p, uint32_t box, uint64_t z0, uint64_t z1);
/** Rows [z0, z1) of box `box` are written: every slab they finish is handed to slab_done. */
void zg_progress_report(zg_read_progress *p, uint32_t box, uint64_t z0, uint64_t z1);

#endif
