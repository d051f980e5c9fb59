/* The process's file descriptors as zgpu's stores use them. Descriptors held for one operation ("brief") and
 * those kept across operations (open shards, a confined store's root, writers' lock files) are counted
 * process-wide, so that an open that finds the process out of descriptors (EMFILE/ENFILE) can wait for one of
 * zgpu's to be released and retry, and stores keep fewer files open from then on: reads degrade instead of
 * failing while zgpu itself holds descriptors. */
#ifndef ZG_FD_BUDGET_H
#define ZG_FD_BUDGET_H
#include <sys/types.h>
#include "zgpu.h"

/** Once per process, before any other call: `evict` closes one idle kept descriptor (1 if it found one); the
 *  budget calls it while waiting. Also resets the counts in forked children (only the forking thread lives). */
void zg_fd_budget_init(int (*evict)(void));

/** 1 for the errno values of "out of descriptors". */
int zg_fd_out_of(int e);

/* Brief descriptors: counted before the open (zg_fd_took, undone by zg_fd_untake when it fails), so a thread
 * out of descriptors sees every one another thread is opening or holds. */
void zg_fd_took(void);
void zg_fd_untake(void);
/** openat() counted as brief; -1 with errno as openat's. */
int zg_fd_openat(int dir, const char *name, int flags, mode_t mode);
/** A brief descriptor closed by the caller (e.g. through closedir). */
void zg_fd_forget(void);
/** Closes a brief descriptor. */
void zg_fd_close(int fd);

/* Kept descriptors. */
/** A brief descriptor of this thread becomes a kept one. */
void zg_fd_keep(void);
/** A descriptor opened uncounted and kept from now on. */
void zg_fd_kept_add(void);
/** A kept descriptor closed by the caller (evicted). Does not wake waiters: call zg_fd_wake after. */
void zg_fd_kept_dropped(void);
/** Closes a kept descriptor. */
void zg_fd_close_kept(int fd);
int zg_fd_kept_count(void);
/** How many files a store may keep open: a quarter of the descriptor limit; for 10 s after a shortage, half
 *  of what was kept when it struck. */
int zg_fd_kept_cap(void);
/** A kept descriptor is being read (not evictable) / no longer. */
void zg_fd_busy_begin(void);
void zg_fd_busy_end(void);

/* Waiting. */
void zg_fd_wake(void);
/** 1 while a thread waits for a descriptor. */
int zg_fd_waiting(void);
typedef struct zg_fd_waiter {
    unsigned gen;   /* the release generation when the open last failed */
    int idle_ms;    /* time spent waiting with nothing of zgpu's to wait for */
} zg_fd_waiter;
zg_fd_waiter zg_fd_waiter_start(void);
/** After an open failed for want of descriptors: 1 = try again (one was released, or a kept one evicted);
 *  0 = give up (see fd_budget.c). errno is preserved. */
int zg_fd_wait(zg_fd_waiter *w);
/** The error for an open that gave up: names the path, what zgpu holds, and how to raise the limit. */
zgpu_status zg_fd_no_fds_error(const char *path);

#endif
