/* NVRTC adapter (nvrtc_lib.h). The few declarations used are written here to match nvrtc.h (CUDA 12 and 13),
 * so no CUDA header is needed to build. */
#include "jit/nvrtc_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

typedef int nvrtc_result; /* nvrtcResult: 0 = NVRTC_SUCCESS */
typedef struct nvrtc_program_s *nvrtc_program;

static struct {
    pthread_once_t once;
    void *lib;
    char why[512];
    char version[32];
    int archs[64];
    int n_archs;
    const char *(*error_string)(nvrtc_result);
    nvrtc_result (*version_fn)(int *, int *);
    nvrtc_result (*num_archs)(int *);
    nvrtc_result (*get_archs)(int *);
    nvrtc_result (*create)(nvrtc_program *, const char *, const char *, int, const char *const *,
                           const char *const *);
    nvrtc_result (*destroy)(nvrtc_program *);
    nvrtc_result (*compile)(nvrtc_program, int, const char *const *);
    nvrtc_result (*cubin_size)(nvrtc_program, size_t *);
    nvrtc_result (*cubin)(nvrtc_program, char *);
    nvrtc_result (*ptx_size)(nvrtc_program, size_t *);
    nvrtc_result (*ptx)(nvrtc_program, char *);
    nvrtc_result (*log_size)(nvrtc_program, size_t *);
    nvrtc_result (*log)(nvrtc_program, char *);
    nvrtc_result (*add_name)(nvrtc_program, const char *);
    nvrtc_result (*lowered_name)(nvrtc_program, const char *, const char **);
} nv = {.once = PTHREAD_ONCE_INIT, .version = "none"};

/* The loader's search path first (LD_LIBRARY_PATH, ldconfig, a wheel's copy already loaded by soname), then
 * where the CUDA toolkit installs it. */
static const char *const candidates[] = {
    "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
};

static void load(void) {
    void *h = NULL;
    char first_error[256] = "";
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !h; i++) {
        h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (!h && !first_error[0]) snprintf(first_error, sizeof first_error, "%s", dlerror());
    }
    if (!h) {
        snprintf(nv.why, sizeof nv.why, "NVRTC (libnvrtc.so.13 or .12, CUDA's run-time compiler) not found: %s",
                 first_error);
        return;
    }
#define SYM(field, name)                                                                                        \
    do {                                                                                                        \
        *(void **)&nv.field = dlsym(h, name);                                                                   \
        if (!nv.field) {                                                                                        \
            snprintf(nv.why, sizeof nv.why, "NVRTC lacks %s", name);                                            \
            dlclose(h);                                                                                         \
            return;                                                                                             \
        }                                                                                                       \
    } while (0)
    SYM(error_string, "nvrtcGetErrorString");
    SYM(version_fn, "nvrtcVersion");
    SYM(num_archs, "nvrtcGetNumSupportedArchs");
    SYM(get_archs, "nvrtcGetSupportedArchs");
    SYM(create, "nvrtcCreateProgram");
    SYM(destroy, "nvrtcDestroyProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(cubin_size, "nvrtcGetCUBINSize");
    SYM(cubin, "nvrtcGetCUBIN");
    SYM(ptx_size, "nvrtcGetPTXSize");
    SYM(ptx, "nvrtcGetPTX");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(add_name, "nvrtcAddNameExpression");
    SYM(lowered_name, "nvrtcGetLoweredName");
#undef SYM
    int major = 0, minor = 0, n = 0;
    if (nv.version_fn(&major, &minor) != 0 || nv.num_archs(&n) != 0 || n <= 0 || n > 64 ||
        nv.get_archs(nv.archs) != 0) {
        snprintf(nv.why, sizeof nv.why, "NVRTC did not report its version or architectures");
        dlclose(h);
        return;
    }
    nv.n_archs = n;
    snprintf(nv.version, sizeof nv.version, "%d.%d", major, minor);
    nv.lib = h;
}

int zg_nvrtc_available(const char **why) {
    pthread_once(&nv.once, load);
    if (why) *why = nv.lib ? "" : nv.why;
    return nv.lib != NULL;
}

const char *zg_nvrtc_version(void) {
    pthread_once(&nv.once, load);
    return nv.version;
}

void zg_jit_image_free(zg_jit_image *img) {
    if (!img) return;
    free(img->code);
    free(img->names);
    memset(img, 0, sizeof *img);
}

/* The target for a GPU of compute capability cc (e.g. 90): its own cubin when NVRTC knows it, else PTX of the
 * newest architecture NVRTC knows below it. 0 when NVRTC knows none at or below it. */
static int pick_target(int cc, int *is_ptx) {
    int best = 0;
    for (int i = 0; i < nv.n_archs; i++) {
        if (nv.archs[i] == cc) {
            *is_ptx = 0;
            return cc;
        }
        if (nv.archs[i] < cc && nv.archs[i] > best) best = nv.archs[i];
    }
    *is_ptx = 1;
    return best;
}

static zgpu_status fail(nvrtc_program *prog, zgpu_status st, const char *what, const char *step, nvrtc_result r) {
    zg_error(st, "NVRTC %s of %s failed: %s", step, what, nv.error_string(r));
    if (prog && *prog) nv.destroy(prog);
    return st;
}

zgpu_status zg_jit_compile(const char *source, const char *const *name_expressions, size_t n_names,
                           const char *arch, const char *what, zg_jit_image *out) {
    memset(out, 0, sizeof *out);
    const char *why;
    ZG_RETURN_IF(!zg_nvrtc_available(&why), ZGPU_ERR_UNSUPPORTED, "%s", why);
    int cc = 0;
    ZG_RETURN_IF(!arch || sscanf(arch, "sm_%d", &cc) != 1 || cc <= 0, ZGPU_ERR_INVALID_ARGUMENT,
                 "JIT %s: architecture \"%s\" is not sm_<compute capability>", what, arch ? arch : "(null)");
    int is_ptx = 0;
    const int target = pick_target(cc, &is_ptx);
    ZG_RETURN_IF(!target, ZGPU_ERR_UNSUPPORTED, "JIT %s: NVRTC %s cannot compile for %s", what, nv.version, arch);
    char arch_opt[48];
    snprintf(out->target, sizeof out->target, "%s_%d", is_ptx ? "compute" : "sm", target);
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", out->target);
    /* IEEE float arithmetic, as the host computes it (convert_ops.h): no fused multiply-add, denormals kept */
    const char *opts[] = {arch_opt, "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
                          "--std=c++17"};

    nvrtc_program prog = NULL;
    nvrtc_result r = nv.create(&prog, source, what, 0, NULL, NULL);
    if (r != 0) return fail(NULL, ZGPU_ERR_INTERNAL, what, "program creation", r);
    for (size_t i = 0; i < n_names; i++)
        if ((r = nv.add_name(prog, name_expressions[i])) != 0) return fail(&prog, ZGPU_ERR_INTERNAL, what, "name", r);
    r = nv.compile(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    if (r != 0) {
        size_t n = 0;
        char *log = NULL;
        if (nv.log_size(prog, &n) == 0 && n > 0 && (log = malloc(n + 1)) != NULL && nv.log(prog, log) == 0)
            log[n] = 0;
        zg_error(ZGPU_ERR_INTERNAL, "NVRTC %s could not compile %s for %s: %s; log: %s", nv.version, what,
                 out->target, nv.error_string(r), log ? log : "(none)");
        free(log);
        nv.destroy(&prog);
        return ZGPU_ERR_INTERNAL;
    }
    size_t n = 0;
    r = is_ptx ? nv.ptx_size(prog, &n) : nv.cubin_size(prog, &n);
    if (r != 0 || n == 0) return fail(&prog, ZGPU_ERR_INTERNAL, what, "output size", r);
    out->code = malloc(n);
    if (!out->code) {
        nv.destroy(&prog);
        return zg_error(ZGPU_ERR_NO_MEMORY, "JIT %s: out of memory", what);
    }
    r = is_ptx ? nv.ptx(prog, (char *)out->code) : nv.cubin(prog, (char *)out->code);
    if (r != 0) {
        zg_jit_image_free(out);
        return fail(&prog, ZGPU_ERR_INTERNAL, what, "output", r);
    }
    out->code_size = n;
    out->is_ptx = is_ptx;
    /* lowered names, one after another */
    size_t total = 0;
    const char **lowered = n_names ? calloc(n_names, sizeof *lowered) : NULL;
    if (n_names && !lowered) {
        zg_jit_image_free(out);
        nv.destroy(&prog);
        return zg_error(ZGPU_ERR_NO_MEMORY, "JIT %s: out of memory", what);
    }
    for (size_t i = 0; i < n_names; i++) {
        if ((r = nv.lowered_name(prog, name_expressions[i], &lowered[i])) != 0) {
            free(lowered);
            zg_jit_image_free(out);
            return fail(&prog, ZGPU_ERR_INTERNAL, what, "lowered name", r);
        }
        total += strlen(lowered[i]) + 1;
    }
    if (n_names) {
        out->names = malloc(total);
        if (out->names) {
            size_t at = 0;
            for (size_t i = 0; i < n_names; i++) {
                const size_t l = strlen(lowered[i]) + 1;
                memcpy(out->names + at, lowered[i], l);
                at += l;
            }
            out->names_size = total;
            out->n_names = n_names;
        }
    }
    free(lowered);
    nv.destroy(&prog); /* (the lowered names live in the program: copied above) */
    if (n_names && !out->names) {
        zg_jit_image_free(out);
        return zg_error(ZGPU_ERR_NO_MEMORY, "JIT %s: out of memory", what);
    }
    return ZGPU_OK;
}
