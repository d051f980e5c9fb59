/* Where a host read's time goes, unit by unit (tuning `trace`, ZGPU_TRACE=1): each unit's thread, start, fetch and
 * decode times, the threads its decode was lent and how much of its chunk it decoded, printed on stderr after the
 * read, in order of start. A read of a few chunks waits for its slowest unit: this shows which one, and whether it
 * started late, read long or decoded long. */
#ifndef ZG_READ_TRACE_H
#define ZG_READ_TRACE_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zg_unit_trace {
    const char *key;          /* the stored object's key (valid while the read's plan is) */
    uint32_t inner;           /* its inner chunk (sharded), else 0 */
    int thread;               /* the pool thread's kernel id */
    double start, io, end;    /* seconds since the read began: the unit's start, its bytes in, its decode placed */
    int ways;                 /* threads its decode was lent */
    size_t runs, hi, size;    /* byte runs decoded alone (0: a range or the whole chunk); decoded up to byte hi of size */
    size_t stored;            /* stored bytes it read */
} zg_unit_trace;

typedef struct zg_read_trace {
    zg_unit_trace *u;         /* NULL: not tracing */
    size_t cap;
    atomic_size_t n;          /* units recorded (those past cap counted, not kept) */
    double t0;                /* the read's start (zg_now) */
} zg_read_trace;

/** Starts tracing a read begun at t0, keeping up to `cap` units; 0 without memory (the read runs untraced). */
int zg_read_trace_start(zg_read_trace *t, size_t cap, double t0);
/** Records one unit (any thread). */
void zg_read_trace_unit(zg_read_trace *t, const zg_unit_trace *u);
/** Prints the read's units on stderr (by start) and a summary line, and frees the trace. */
void zg_read_trace_finish(zg_read_trace *t, const char *path, int threads, double total_s);

#endif
