/* Consolidated metadata kept current (api/consolidated.c). */
#ifndef ZG_API_CONSOLIDATED_H
#define ZG_API_CONSOLIDATED_H
#include "zgpu.h"

/* What happened to the node at a location: its metadata rewritten in place (attributes, shape), or a new node
 * there (created, or replacing what was there with everything below it). */
enum { ZG_NODE_WRITTEN = 0, ZG_NODE_REPLACED = 1 };

/** After zgpu changed the node at `path` (canonical): its entries (read back from its store) go into the
 *  consolidated metadata of every group above it that has some, up to the first node above that is not a group
 *  of its format; a replaced node's old entries below it are dropped. A v2 group's own entries in its own
 *  .zmetadata too. An error says the node was written and which group's copy could not be updated. */
zgpu_status zg_consolidated_changed(zgpu_context *ctx, const char *path, int how);

/** Writes the group's consolidated metadata from what is stored below it now (the store must list). */
zgpu_status zg_consolidate_group(zgpu_group *g);

#endif
