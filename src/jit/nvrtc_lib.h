/* NVRTC, CUDA's run-time compiler, loaded with dlopen on first use (libnvrtc.so.13, else .12): zgpu builds and
 * runs without it (kernels that need it then report why). Plain C, in every build: compiling needs no GPU. */
#ifndef ZG_NVRTC_LIB_H
#define ZG_NVRTC_LIB_H
#include <stddef.h>
#include <stdint.h>
#include "zgpu.h"

/** A compiled program: machine code for one GPU architecture (cubin), or PTX that the driver compiles when it
 *  loads it (for a GPU newer than NVRTC knows). */
typedef struct zg_jit_image {
    uint8_t *code;       /* cubin bytes, or PTX text with its NUL */
    size_t code_size;
    int is_ptx;
    char *names;         /* the lowered (mangled) names of the name expressions, each with its NUL, in order */
    size_t names_size;
    size_t n_names;
    char target[16];     /* what it was built for: "sm_90", or "compute_120" for PTX */
} zg_jit_image;

/** 1 if NVRTC is loaded (loads it on the first call; thread-safe); else 0 and *why (if not NULL) says why. */
int zg_nvrtc_available(const char **why);
/** NVRTC's version, "13.0"; "none" when it is not loaded. Static. */
const char *zg_nvrtc_version(void);

/** Compiles CUDA C++ `source` for `arch` ("sm_90": the compute capability of the GPU) with zgpu's options
 *  (IEEE arithmetic: --fmad=false, no flush to zero, exact division): a cubin when NVRTC knows the architecture,
 *  else PTX of the newest one it knows (the driver finishes it). name_expressions (n_names of them, may be 0)
 *  are kernels named the C++ way (templates): their lowered names come back in out->names. `what` names the
 *  program in errors. ZGPU_ERR_UNSUPPORTED without NVRTC; ZGPU_ERR_INTERNAL with NVRTC's log when the source does
 *  not compile. *out is the caller's: zg_jit_image_free. */
zgpu_status zg_jit_compile(const char *source, const char *const *name_expressions, size_t n_names,
                           const char *arch, const char *what, zg_jit_image *out);
void zg_jit_image_free(zg_jit_image *img);

#endif
