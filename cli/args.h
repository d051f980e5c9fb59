/* Option scanning for the zgpu subcommands. */
#ifndef ZGPU_CLI_ARGS_H
#define ZGPU_CLI_ARGS_H
#include "cli.h"

#define CLI_MAX_OPTS 24
#define CLI_MAX_POSITIONAL 8

typedef struct cli_opt_def {
    const char *name; /* long name without "--"; the table ends with a NULL name */
    char short_name;  /* 0 if none */
    int takes_value;
} cli_opt_def;

typedef struct cli_args {
    const char *value[CLI_MAX_OPTS]; /* indexed like the definitions */
    int set[CLI_MAX_OPTS];
    const char *pos[CLI_MAX_POSITIONAL];
    int npos;
    int help;
} cli_args;

/** Scans argv[0..argc) (the words after the subcommand). "--" ends options. 0 ok, -1 usage error. */
int cli_args_parse(int argc, char **argv, const cli_opt_def *defs, cli_args *out);

/* ---- shared by the subcommands (main.c) ---- */
/** Prints "zgpu: error: <zgpu_last_error()>" (or the status name) and returns 1. */
int cli_fail_status(zgpu_status s);
/** Prints "zgpu: error: <cli_errmsg()>" and returns 1. */
int cli_fail(void);
/** Prints "zgpu: error: <cli_errmsg()>" and a pointer to `zgpu CMD --help`; returns 2. */
int cli_usage_error(const char *cmd);
/** Checks --threads text (NULL = default): 0 ok (*n, if given, the count), -1 with a message (a usage error:
 *  call it before doing any work). */
int cli_check_threads(const char *threads, int *n);
/** Creates the context from --threads text (NULL = default; checked first) and a device ordinal (-1 = none).
 *  0 ok; -1 with a message: a runtime failure (e.g. threads that cannot start) once the text was checked. */
int cli_make_context(const char *threads, int device, zgpu_context **ctx);
/** Rows per slab along axis 0: a multiple of `grid0` (the write-object extent), about `budget` bytes. */
uint64_t cli_slab_rows(int ndim, const uint64_t *shape, uint64_t grid0, size_t itemsize, uint64_t budget);

/* ---- progress of a copy (progress.c): a line redrawn on a terminal (stderr), and a summary ---- */
typedef struct cli_progress {
    int quiet, tty, drawn;
    uint64_t objects_total, objects_done, bytes_total, bytes_done;
    const char *what; /* "chunks" or "shards" */
    double t0, last;
} cli_progress;
/** Starts the clock. quiet: nothing is printed; else the line is drawn only when stderr is a terminal. */
void cli_progress_start(cli_progress *p, int quiet, uint64_t objects, uint64_t bytes, const char *what);
/** Draws the line at 0 (on a terminal). */
void cli_progress_begin_line(cli_progress *p);
/** Totals done so far; redraws the line at most four times a second. */
void cli_progress_update(cli_progress *p, uint64_t objects_done, uint64_t bytes_done);
/** Erases the line (before an error message). */
void cli_progress_clear(cli_progress *p);
/** Erases the line and prints "zgpu: copied N chunks, B in S s (R/s)" unless quiet. */
void cli_progress_finish(cli_progress *p);

int cli_cmd_read(int argc, char **argv);
int cli_cmd_write(int argc, char **argv);
int cli_cmd_cp(int argc, char **argv);

#endif
