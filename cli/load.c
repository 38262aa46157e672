/*
 * load.c: --model, --cluster (+ --set) and --profile, one loader each for
 * every command, and the notes that say which default a command chose.
 *
 * The names are resolved by pp_data_find (common/files.c), which offers
 * "did you mean" among the shipped files; broken files are reported by the
 * loaders with file:line:col.  Going through one function per input keeps
 * the commands from drifting apart in what they accept and say.
 */
#include "cli_int.h"

#include "podplan/sim.h"

#include <stdarg.h>
#include <string.h>

#define PP_CLI_MAX_SETS 64

/* Whether the command's table has the option (--set is not everywhere). */
static bool has_opt(const pp_args *a, const char *name) {
    for (int i = 0; a->cmd->opts[i].name; i++)
        if (strcmp(a->cmd->opts[i].name, name) == 0) return true;
    return false;
}

int pp_cli_load_model(const pp_args *a, bool optional, pp_model *m,
                      pp_error *e) {
    const char *spec = pp_args_get(a, "model");
    if (!spec) {
        if (optional) return 1;
        return pp_args_need(a, "model", &spec, e);
    }
    return pp_model_load(spec, m, e);
}

int pp_cli_load_cluster(const pp_args *a, pp_cluster **c, pp_error *e) {
    const char *spec, *sets[PP_CLI_MAX_SETS];
    size_t n_sets = 0;
    int rc = pp_args_need(a, "cluster", &spec, e);
    if (rc) return rc;
    /* The parser keeps at most 64 repeated values in all, so none is
     * lost here. */
    if (has_opt(a, "set"))
        n_sets = pp_args_all(a, "set", sets, PP_CLI_MAX_SETS);
    return pp_cluster_load(spec, sets, n_sets, NULL, c, e);
}

int pp_cli_load_profile(const pp_args *a, const pp_gpu_spec *gpu,
                        bool required, pp_gpu_profile *p, pp_error *e) {
    const char *spec = has_opt(a, "profile") ? pp_args_get(a, "profile")
                                             : NULL;
    if (!spec && !required) return 1;
    return pp_profile_load(spec, gpu, p, e);
}

void pp_cli_note(const pp_args *a, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "podplan %s: ", a->cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
