/* Command-line option scanning shared by the subcommands. */
#include <string.h>
#include "args.h"

int cli_args_parse(int argc, char **argv, const cli_opt_def *defs, cli_args *out) {
    memset(out, 0, sizeof *out);
    int only_positional = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_positional || a[0] != '-' || a[1] == '\0') {
            if (out->npos >= CLI_MAX_POSITIONAL) return cli_err("too many arguments ('%s')", a);
            out->pos[out->npos++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_positional = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            out->help = 1;
            continue;
        }
        /* --name, --name=value, -x, -x value */
        const char *eq = NULL;
        size_t nlen;
        int is_long = a[1] == '-';
        if (is_long) {
            eq = strchr(a + 2, '=');
            nlen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        } else {
            if (a[2] != '\0') return cli_err("unknown option '%s'", a);
            nlen = 1;
        }
        int found = -1;
        for (int k = 0; defs[k].name; k++) {
            if (is_long ? (strlen(defs[k].name) == nlen && !strncmp(defs[k].name, a + 2, nlen))
                        : (defs[k].short_name && defs[k].short_name == a[1])) {
                found = k;
                break;
            }
        }
        if (found < 0) return cli_err("unknown option '%s'", a);
        if (found >= CLI_MAX_OPTS) return cli_err("internal: too many options");
        if (defs[found].takes_value) {
            if (eq) out->value[found] = eq + 1;
            else if (i + 1 < argc) out->value[found] = argv[++i];
            else return cli_err("option '%s' needs a value", a);
        } else if (eq) {
            return cli_err("option '--%s' takes no value", defs[found].name);
        }
        out->set[found] = 1;
    }
    return 0;
}

uint64_t cli_slab_rows(int ndim, const uint64_t *shape, uint64_t grid0, size_t itemsize, uint64_t budget) {
    if (ndim == 0) return 1;
    uint64_t row = itemsize;
    for (int i = 1; i < ndim; i++) row = shape[i] && row > UINT64_MAX / shape[i] ? UINT64_MAX : row * shape[i];
    if (grid0 == 0) grid0 = 1;
    uint64_t per_obj = row > UINT64_MAX / grid0 ? UINT64_MAX : row * grid0;
    uint64_t objs = per_obj ? budget / per_obj : 1;
    if (objs == 0) objs = 1; /* one object row even when it exceeds the budget: objects are written whole */
    uint64_t rows = objs > UINT64_MAX / grid0 ? UINT64_MAX : objs * grid0;
    return rows < shape[0] ? rows : (shape[0] ? shape[0] : 1);
}
