/* GPUDirect Storage through libcufile.so.0, loaded with dlopen at run time (no build dependency).
 * zg_gds_usable() says whether reads may go straight from files into device memory. */
#ifndef ZG_CUFILE_H
#define ZG_CUFILE_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

/** 1 if libcufile loads and its driver opens, and (unless `allow_compat`) GDS is not in compatibility mode
 *  (the nvidia-fs driver is present and compatibility mode is not forced). why: the reason when 0. */
int zg_gds_usable(int allow_compat, const char **why);
/** 1 once zg_gds_usable (or any cuFile call) has loaded libcufile and opened its driver, or failed to: the first
 *  call pays for it (cuFileDriverOpen: a tenth of a second and more), later ones not. */
int zg_gds_loaded(void);
/** Whether cuFile takes the file `path` (opens it and registers it with cuFile, then lets it go): a loaded,
 *  open driver can still refuse a file whose file system it does not support. The error says why. */
zgpu_status zg_gds_check_file(const char *path);
/** Reads `len` bytes at `offset` of the file `path` into device memory `dptr` (cuFileRead). */
zgpu_status zg_gds_read(const char *path, uint64_t offset, uint64_t len, void *dptr);

#endif
