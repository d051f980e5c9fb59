/* Progress of `zgpu cp`: one line on a terminal, redrawn at most four times a second, and a summary line. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "args.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* "1.23 GB": decimal units, three significant digits. */
static void human_bytes(double b, char *out, size_t n) {
    static const char *unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (b >= 1000 && u < 5) {
        b /= 1000;
        u++;
    }
    if (u) snprintf(out, n, "%.*f %s", b < 10 ? 2 : b < 100 ? 1 : 0, b, unit[u]);
    else snprintf(out, n, "%.0f B", b);
}

void cli_progress_start(cli_progress *p, int quiet, uint64_t objects, uint64_t bytes, const char *what) {
    memset(p, 0, sizeof *p);
    p->quiet = quiet;
    p->tty = !quiet && isatty(fileno(stderr));
    p->objects_total = objects;
    p->bytes_total = bytes;
    p->what = what;
    p->t0 = p->last = now_s();
}

static void draw(cli_progress *p);

void cli_progress_begin_line(cli_progress *p) {
    if (p->tty) draw(p); /* at once: a first slab can take seconds */
}

static void draw(cli_progress *p) {
    double el = now_s() - p->t0;
    char done[32], total[32], rate[32], eta[32] = "-";
    human_bytes((double)p->bytes_done, done, sizeof done);
    human_bytes((double)p->bytes_total, total, sizeof total);
    double r = el > 0 ? (double)p->bytes_done / el : 0;
    human_bytes(r, rate, sizeof rate);
    if (r > 0 && p->bytes_done < p->bytes_total) {
        double left = (double)(p->bytes_total - p->bytes_done) / r;
        snprintf(eta, sizeof eta, "%d:%02d", (int)(left / 60), (int)left % 60);
    }
    /* \r and erase-to-end: the line is rewritten in place */
    fprintf(stderr, "\r\033[Kcp: %llu/%llu %s, %s/%s, %s/s, ETA %s", (unsigned long long)p->objects_done,
            (unsigned long long)p->objects_total, p->what, done, total, rate, eta);
    fflush(stderr);
    p->drawn = 1;
}

void cli_progress_update(cli_progress *p, uint64_t objects_done, uint64_t bytes_done) {
    p->objects_done = objects_done;
    p->bytes_done = bytes_done;
    if (!p->tty) return;
    double t = now_s();
    if (t - p->last < 0.25 && p->drawn) return;
    p->last = t;
    draw(p);
}

void cli_progress_clear(cli_progress *p) {
    if (p->drawn) fputs("\r\033[K", stderr);
    p->drawn = 0;
}

void cli_progress_finish(cli_progress *p) {
    cli_progress_clear(p);
    if (p->quiet) return;
    double el = now_s() - p->t0;
    char bytes[32], rate[32];
    human_bytes((double)p->bytes_total, bytes, sizeof bytes);
    human_bytes(el > 0 ? (double)p->bytes_total / el : 0, rate, sizeof rate);
    fprintf(stderr, "zgpu: copied %llu %s, %s in %.2f s (%s/s)\n", (unsigned long long)p->objects_total, p->what,
            bytes, el, rate);
}
