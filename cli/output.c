/* The .npy file `zgpu read` writes, slab by slab (slab.h): a temporary beside the destination written at offsets
 * and renamed over it at the end, so that the destination never holds half a file; or a stream (stdout, a device,
 * a FIFO) written in order; or nothing for /dev/null. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "slab.h"

#define GATHER_IOV 1024 /* IOV_MAX on Linux */

/* The temporary of the file being written, removed if a signal ends the process. */
static char *volatile g_tmp;

static void on_signal(int sig) {
    char *t = g_tmp;
    if (t) unlink(t); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void watch_signals(char *tmp) {
    g_tmp = tmp;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* Writes every byte of iov[0..n) at off (positional) or at the stream's position; short writes continue. */
static int write_iov(cli_out *o, struct iovec *iov, int n, uint64_t off) {
    while (n > 0) {
        ssize_t w = o->kind == CLI_OUT_FILE ? pwritev(o->fd, iov, n, (off_t)off) : writev(o->fd, iov, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return cli_err("%s: write failed: %s", o->path, strerror(errno));
        }
        if (w == 0) return cli_err("%s: write failed: no progress", o->path);
        off += (uint64_t)w;
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

int cli_out_open(cli_out *o, const char *path, zgpu_dtype dt, size_t itemsize, int ndim, const uint64_t *shape) {
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->path = path;
    struct stat st, nul;
    const int exists = stat(path, &st) == 0;
    if (exists && S_ISCHR(st.st_mode) && stat("/dev/null", &nul) == 0 && S_ISCHR(nul.st_mode) &&
        st.st_rdev == nul.st_rdev) {
        o->kind = CLI_OUT_NULL;
        return 0;
    }
    if (!strcmp(path, "-")) {
        o->kind = CLI_OUT_STREAM;
        o->fd = STDOUT_FILENO;
    } else if ((exists && !S_ISREG(st.st_mode)) || !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6)) {
        /* a device, FIFO or socket, or /dev/stdout and the like (whose "file" may be a pipe, or a file the shell
         * holds open): written in place, in order */
        o->kind = CLI_OUT_STREAM;
        o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (o->fd < 0) return cli_err("%s: cannot create: %s", path, strerror(errno));
    } else {
        o->kind = CLI_OUT_FILE;
        /* a link is followed: its target is replaced, as writing through it would have */
        char *target = NULL;
        struct stat lst;
        if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) target = realpath(path, NULL);
        char *d = strdup(target ? target : path);
        free(target);
        const char *slash = d ? strrchr(d, '/') : NULL;
        const int dlen = slash ? (int)(slash - d) + 1 : 0;
        const size_t n = d ? strlen(d) + 32 : 0;
        o->tmp = d ? malloc(n) : NULL;
        if (!o->tmp) {
            free(d);
            return cli_err("out of memory");
        }
        o->path = d; /* owned from here: cli_out_finish / cli_out_abort free it */
        snprintf(o->tmp, n, "%.*s.%s.zgpu-part-XXXXXX", dlen, d, d + dlen);
        o->fd = mkstemp(o->tmp);
        if (o->fd < 0) {
            int e = errno;
            cli_err("%s: cannot create: %s", path, strerror(e));
            free(o->tmp);
            free(d);
            o->tmp = NULL;
            o->path = path;
            return -1;
        }
        watch_signals(o->tmp);
        /* the mode a new file would get (mkstemp makes 0600), or the replaced file's */
        mode_t mask = umask(0);
        umask(mask);
        fchmod(o->fd, exists ? (st.st_mode & 07777) : (0666 & ~mask));
    }
    cli_sb head = {0};
    if (cli_npy_format_header(dt, itemsize, ndim, shape, &head) != 0) {
        cli_sb_free(&head);
        cli_out_abort(o);
        return -1;
    }
    struct iovec iov = {head.p, head.n};
    o->data_offset = head.n;
    int rc = write_iov(o, &iov, 1, 0);
    cli_sb_free(&head);
    if (rc) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", cli_errmsg());
        cli_out_abort(o);
        return cli_err("%s", msg);
    }
    return 0;
}

/* Segments of the file gathered into one write while they follow each other. */
typedef struct gather {
    cli_out *o;
    struct iovec iov[GATHER_IOV];
    int n;
    uint64_t off, len; /* the run's place in the data and its length */
} gather;

static int flush(gather *g) {
    if (!g->n) return 0;
    cli_out *o = g->o;
    if (o->kind == CLI_OUT_STREAM && g->off != o->pos)
        return cli_err("%s: internal error: a stream written out of order", o->path);
    int rc = write_iov(o, g->iov, g->n, o->data_offset + g->off);
    o->pos = g->off + g->len;
    g->n = 0;
    g->len = 0;
    return rc;
}

static int add(gather *g, uint64_t off, const unsigned char *p, size_t len) {
    if (g->n && off == g->off + g->len) {
        struct iovec *last = &g->iov[g->n - 1];
        if ((const unsigned char *)last->iov_base + last->iov_len == p) {
            last->iov_len += len;
            g->len += len;
            return 0;
        }
        if (g->n < GATHER_IOV) {
            g->iov[g->n++] = (struct iovec){(void *)p, len};
            g->len += len;
            return 0;
        }
    }
    if (flush(g)) return -1;
    g->off = off;
    g->iov[g->n++] = (struct iovec){(void *)p, len};
    g->len = len;
    return 0;
}

int cli_out_write_slab(cli_out *o, const cli_blocks *b, const uint64_t *sel_start, const uint64_t *sel_count) {
    if (o->kind == CLI_OUT_NULL || b->n == 0) return 0;
    static _Thread_local gather g; /* 16 KiB: not on the stack */
    g.o = o;
    g.n = 0;
    g.off = g.len = 0;
    const int nd = b->ndim;
    const size_t is = b->itemsize;
    if (nd == 0) {
        if (add(&g, 0, b->outs[0], is)) return -1;
        return flush(&g);
    }
    /* Lines along the last axis, in the file's order: each line takes one segment from every box along it. */
    uint64_t stride[ZGPU_MAX_DIMS], c[ZGPU_MAX_DIMS];
    stride[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--) stride[d] = stride[d + 1] * sel_count[d + 1];
    for (int d = 0; d < nd - 1; d++) c[d] = b->lo[d];
    const uint64_t nl = b->nb[nd - 1];
    const size_t snd = (size_t)nd;
    for (;;) {
        uint64_t e = b->lo[nd - 1] - sel_start[nd - 1], bi = 0;
        for (int d = 0; d < nd - 1; d++) {
            e += (c[d] - sel_start[d]) * stride[d];
            bi = bi * b->nb[d] + (c[d] / b->chunk[d] - b->lo[d] / b->chunk[d]);
        }
        const size_t first = (size_t)(bi * nl);
        uint64_t line = 0; /* the line's index inside its boxes (they share their extents on these axes) */
        for (int d = 0; d < nd - 1; d++)
            line = line * b->counts[first * snd + (size_t)d] + (c[d] - b->starts[first * snd + (size_t)d]);
        for (uint64_t jl = 0; jl < nl; jl++) {
            const size_t box = first + (size_t)jl;
            const uint64_t el = b->counts[box * snd + snd - 1];
            const unsigned char *p = (const unsigned char *)b->outs[box] + line * el * is;
            if (add(&g, e * is, p, (size_t)(el * is))) return -1;
            e += el;
        }
        int d = nd - 2;
        for (; d >= 0; d--) {
            if (++c[d] < b->hi[d]) break;
            c[d] = b->lo[d];
        }
        if (d < 0) break;
    }
    return flush(&g);
}

int cli_out_finish(cli_out *o) {
    int rc = 0;
    if (o->kind == CLI_OUT_FILE) {
        if (close(o->fd) != 0) rc = cli_err("%s: write failed: %s", o->path, strerror(errno));
        o->fd = -1;
        if (!rc && rename(o->tmp, o->path) != 0) rc = cli_err("%s: cannot rename into place: %s", o->path, strerror(errno));
        if (rc) unlink(o->tmp);
        g_tmp = NULL;
        free(o->tmp);
        free((char *)o->path);
        o->tmp = NULL;
    } else if (o->kind == CLI_OUT_STREAM && o->fd != STDOUT_FILENO && o->fd >= 0) {
        if (close(o->fd) != 0) rc = cli_err("%s: write failed: %s", o->path, strerror(errno));
        o->fd = -1;
    }
    return rc;
}

void cli_out_abort(cli_out *o) {
    if (o->kind == CLI_OUT_FILE && o->tmp) {
        if (o->fd >= 0) close(o->fd);
        unlink(o->tmp);
        g_tmp = NULL;
        free(o->tmp);
        free((char *)o->path);
        o->tmp = NULL;
    } else if (o->kind == CLI_OUT_STREAM && o->fd != STDOUT_FILENO && o->fd >= 0) {
        close(o->fd);
    }
    o->fd = -1;
}
