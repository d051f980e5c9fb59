/* cuFile loader (see cufile.h). The few cuFile declarations used are written here from the cuFile API
 * (cufile.h of CUDA 12/13): CUfileError_t {int err; int cu_err;} returned by value; handles are opaque. */
#include "device/shim/cufile.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/env.h"
#include "common/status.h"

typedef struct { int err; int cu_err; } cufile_error;
typedef void *cufile_handle;
typedef struct {
    int type; /* CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1 */
    union { int fd; void *handle; } handle;
    const void *fs_ops;
} cufile_descr;

static struct {
    pthread_once_t once;
    int ok, compat;
    char why[256];
    cufile_error (*driver_open)(void);
    cufile_error (*handle_register)(cufile_handle *, cufile_descr *);
    void (*handle_deregister)(cufile_handle);
    ssize_t (*read)(cufile_handle, void *, size_t, off_t, off_t);
} gds = {PTHREAD_ONCE_INIT, 0, 0, "", 0, 0, 0, 0};

static atomic_int loaded; /* load() has run (whatever it found) */

static void load_once(void);
static void load(void) {
    load_once();
    atomic_store(&loaded, 1);
}

int zg_gds_loaded(void) { return atomic_load(&loaded); }

static void load_once(void) {
    void *h = dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(gds.why, sizeof gds.why, "libcufile.so.0 not loadable: %s", dlerror());
        return;
    }
    *(void **)&gds.driver_open = dlsym(h, "cuFileDriverOpen");
    *(void **)&gds.handle_register = dlsym(h, "cuFileHandleRegister");
    *(void **)&gds.handle_deregister = dlsym(h, "cuFileHandleDeregister");
    *(void **)&gds.read = dlsym(h, "cuFileRead");
    if (!gds.driver_open || !gds.handle_register || !gds.handle_deregister || !gds.read) {
        snprintf(gds.why, sizeof gds.why, "libcufile.so.0 lacks the cuFile read API");
        return;
    }
    cufile_error e = gds.driver_open();
    if (e.err != 0) {
        snprintf(gds.why, sizeof gds.why, "cuFileDriverOpen failed (cuFile error %d, CUDA error %d)", e.err, e.cu_err);
        return;
    }
    /* Without the nvidia-fs kernel driver every cuFile read is a compatibility-mode (bounce buffer) read;
     * CUFILE_FORCE_COMPAT_MODE forces that mode explicitly. */
    gds.compat = access("/proc/driver/nvidia-fs/version", R_OK) != 0 || zg_env_cufile_force_compat();
    if (gds.compat) snprintf(gds.why, sizeof gds.why, "cuFile is in compatibility mode (no nvidia-fs driver)");
    gds.ok = 1;
}

int zg_gds_usable(int allow_compat, const char **why) {
    pthread_once(&gds.once, load);
    int usable = gds.ok && (allow_compat || !gds.compat);
    if (why) *why = usable ? "" : gds.why;
    return usable;
}

/* Names of the cuFile errors a registration or read can end in (CUfileOpError: 5000 + n). */
static const char *cufile_error_name(int err) {
    switch (err) {
    case 5007: return "platform not supported";
    case 5008: return "I/O not supported";
    case 5009: return "device not supported";
    case 5010: return "nvidia-fs driver error";
    case 5011: return "CUDA driver error";
    case 5018: return "file type not supported";
    case 5019: return "file open flags not supported";
    case 5020: return "O_DIRECT not set on the file";
    case 5022: return "invalid argument";
    case 5025: return "permission denied";
    case 5027: return "file handle not registered (cuFile refused the file)";
    case 5030: return "cuFile internal error";
    default: return "cuFile error";
    }
}

/* Opens and registers `path` with cuFile; on failure closes what it opened and says why. */
static zgpu_status open_registered(const char *path, int *fd_out, cufile_handle *fh) {
    ZG_RETURN_IF(!zg_gds_usable(1, NULL), ZGPU_ERR_CUDA, "GDS: %s", gds.why);
    /* non-blocking, then fstat: a FIFO or device swapped in after planning must not block or be read */
    int fd = open(path, O_RDONLY | O_DIRECT | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* no O_DIRECT: cuFile's compatibility mode */
    ZG_RETURN_IF(fd < 0, ZGPU_ERR_IO, "GDS: cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return zg_error(ZGPU_ERR_IO, "GDS: cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return zg_error(ZGPU_ERR_IO, "GDS: '%s' is not a regular file", path);
    }
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); /* cuFile sees the flags it always saw */
    cufile_descr d;
    memset(&d, 0, sizeof d);
    d.type = 1;
    d.handle.fd = fd;
    *fh = NULL;
    cufile_error e = gds.handle_register(fh, &d);
    if (e.err != 0) {
        close(fd);
        return zg_error(ZGPU_ERR_CUDA, "GDS: cuFileHandleRegister('%s') failed: %s (cuFile error %d)", path,
                        cufile_error_name(e.err), e.err);
    }
    *fd_out = fd;
    return ZGPU_OK;
}

zgpu_status zg_gds_check_file(const char *path) {
    int fd = -1;
    cufile_handle fh;
    ZG_FORWARD(open_registered(path, &fd, &fh));
    gds.handle_deregister(fh);
    close(fd);
    return ZGPU_OK;
}

zgpu_status zg_gds_read(const char *path, uint64_t offset, uint64_t len, void *dptr) {
    int fd = -1;
    cufile_handle fh;
    ZG_FORWARD(open_registered(path, &fd, &fh));
    zgpu_status st = ZGPU_OK;
    uint64_t done = 0;
    while (done < len) {
        ssize_t k = gds.read(fh, dptr, (size_t)(len - done), (off_t)(offset + done), (off_t)done);
        if (k <= 0) {
            st = zg_error(k == 0 ? ZGPU_ERR_CORRUPT_DATA : ZGPU_ERR_IO,
                          "GDS: cuFileRead('%s', %llu bytes at %llu) returned %zd", path,
                          (unsigned long long)(len - done), (unsigned long long)(offset + done), k);
            break;
        }
        done += (uint64_t)k;
    }
    gds.handle_deregister(fh);
    close(fd);
    return st;
}
