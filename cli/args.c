/*
 * args.c: option parsing and --help for the subcommands.
 */
#include "cli_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const pp_format_names[] = {"table", "json", NULL};

static int find_opt(const pp_cli_cmd *cmd, const char *name, size_t len) {
    for (int i = 0; cmd->opts[i].name; i++)
        if (strlen(cmd->opts[i].name) == len &&
            strncmp(cmd->opts[i].name, name, len) == 0)
            return i;
    return -1;
}

static int find_short(const pp_cli_cmd *cmd, char c) {
    for (int i = 0; cmd->opts[i].name; i++)
        if (cmd->opts[i].short_name == c) return i;
    return -1;
}

static const char *suggest(const pp_cli_cmd *cmd, const char *name) {
    const char *best = NULL;
    int best_d = 3;
    for (int i = 0; cmd->opts[i].name; i++) {
        int d = pp_edit_distance(name, cmd->opts[i].name, 2);
        if (d < best_d) {
            best_d = d;
            best = cmd->opts[i].name;
        }
    }
    return best;
}

void pp_cli_help(const pp_cli_cmd *cmd, FILE *fp) {
    fprintf(fp, "usage: podplan %s\n\n%s\n\noptions:\n", cmd->usage,
            cmd->summary);
    for (int i = 0; cmd->opts[i].name; i++) {
        const pp_cli_opt *o = &cmd->opts[i];
        char lhs[64];
        if (o->short_name)
            snprintf(lhs, sizeof lhs, "-%c, --%s%s%s", o->short_name, o->name,
                     o->arg ? " " : "", o->arg ? o->arg : "");
        else
            snprintf(lhs, sizeof lhs, "    --%s%s%s", o->name,
                     o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(fp, "  %-28s %s\n", lhs, o->help);
        if (o->choices) {
            /* The registry's own names and help, so a new choice shows up
             * here without touching the CLI. */
            for (int v = 0; v < o->choices->n; v++) {
                bool no = o->unsupported & (UINT32_C(1) << v);
                fprintf(fp, "  %-30s %-14s %s%s\n", "",
                        o->choices->items[v].name, o->choices->items[v].help,
                        no ? " (not simulated)" : "");
            }
        }
    }
    fprintf(fp, "  %-28s %s\n", "-h, --help", "show this help and exit");
    if (cmd->details) fprintf(fp, "\n%s\n", cmd->details);
}

int pp_cli_parse(const pp_cli_cmd *cmd, int argc, char **argv, pp_args *a,
                 pp_error *e) {
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    bool only_positional = false;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (only_positional || s[0] != '-' || s[1] == '\0') {
            if (a->n_positional == PP_CLI_MAX_POSITIONAL)
                return pp_error_set(e, PP_EUSAGE,
                                    "too many arguments (at most %d)",
                                    PP_CLI_MAX_POSITIONAL);
            a->positional[a->n_positional++] = argv[i];
            continue;
        }
        if (strcmp(s, "--") == 0) {
            only_positional = true;
            continue;
        }
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            pp_cli_help(cmd, stdout);
            return 1;
        }
        int idx;
        const char *val = NULL;
        if (s[1] == '-') {
            const char *name = s + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            idx = find_opt(cmd, name, len);
            if (idx < 0) {
                char nm[64];
                snprintf(nm, sizeof nm, "%.*s", (int)(len < 63 ? len : 63),
                         name);
                const char *best = suggest(cmd, nm);
                if (best)
                    return pp_error_set(e, PP_EUSAGE,
                                        "unknown option --%s (did you mean "
                                        "--%s?); see `podplan %s --help`",
                                        nm, best, cmd->name);
                return pp_error_set(e, PP_EUSAGE,
                                    "unknown option --%s; see `podplan %s "
                                    "--help`",
                                    nm, cmd->name);
            }
            if (eq) val = eq + 1;
        } else {
            /* -b 8 or, as getopt takes it, -b8 */
            idx = find_short(cmd, s[1]);
            if (idx >= 0 && s[2] != '\0') {
                if (cmd->opts[idx].arg)
                    val = s + 2;
                else
                    idx = -1;
            }
            if (idx < 0)
                return pp_error_set(e, PP_EUSAGE,
                                    "unknown option %s; see `podplan %s "
                                    "--help`",
                                    s, cmd->name);
        }
        const pp_cli_opt *o = &cmd->opts[idx];
        if (o->arg && !val) {
            if (i + 1 >= argc)
                return pp_error_set(e, PP_EUSAGE, "--%s needs a value (%s)",
                                    o->name, o->arg);
            val = argv[++i];
        } else if (!o->arg && val) {
            return pp_error_set(e, PP_EUSAGE, "--%s takes no value", o->name);
        }
        if (a->count[idx] && !o->repeat)
            return pp_error_set(e, PP_EUSAGE, "--%s given twice", o->name);
        a->count[idx]++;
        a->value[idx] = val ? val : "";
        if (o->repeat) {
            if (a->n_multi == (int)(sizeof a->multi / sizeof a->multi[0]))
                return pp_error_set(e, PP_EUSAGE, "--%s given too often",
                                    o->name);
            a->multi[a->n_multi].opt = idx;
            a->multi[a->n_multi++].value = a->value[idx];
        }
    }
    return 0;
}

static int opt_index(const pp_args *a, const char *name) {
    int i = find_opt(a->cmd, name, strlen(name));
    if (i < 0) { /* a programming error: the table lacks the option */
        fprintf(stderr, "podplan: internal: no option --%s\n", name);
        abort();
    }
    return i;
}

const char *pp_args_get(const pp_args *a, const char *name) {
    return a->value[opt_index(a, name)];
}

bool pp_args_flag(const pp_args *a, const char *name) {
    return a->count[opt_index(a, name)] > 0;
}

size_t pp_args_all(const pp_args *a, const char *name, const char **out,
                   size_t max) {
    int idx = opt_index(a, name);
    size_t n = 0;
    for (int i = 0; i < a->n_multi && n < max; i++)
        if (a->multi[i].opt == idx) out[n++] = a->multi[i].value;
    return n;
}

int pp_args_need(const pp_args *a, const char *name, const char **out,
                 pp_error *e) {
    const char *v = pp_args_get(a, name);
    if (!v)
        return pp_error_set(e, PP_EUSAGE,
                            "--%s is required; see `podplan %s --help`", name,
                            a->cmd->name);
    *out = v;
    return 0;
}

int pp_args_int(const pp_args *a, const char *name, int64_t min, int64_t max,
                int64_t *out, pp_error *e) {
    const char *v = pp_args_get(a, name);
    if (!v) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno == ERANGE || x < min || x > max) {
        if (min == 1 && max == INT64_MAX)
            return pp_error_set(e, PP_EUSAGE,
                                "--%s: expected a positive integer, got "
                                "\"%s\"",
                                name, v);
        return pp_error_set(e, PP_EUSAGE,
                            "--%s: expected an integer in %lld..%lld, got "
                            "\"%s\"",
                            name, (long long)min, (long long)max, v);
    }
    *out = x;
    return 0;
}

int pp_args_quantity(const pp_args *a, const char *name, pp_qkind kind,
                     const char *default_unit, double *out, pp_error *e) {
    const char *v = pp_args_get(a, name);
    if (!v) return 0;
    char why[256] = "";
    double x;
    if (pp_unit_parse(v, kind, default_unit, &x, why, sizeof why))
        return pp_error_set(e, PP_EUSAGE, "--%s: %s%s\"%s\"", name,
                            why[0] ? why : "bad value",
                            strstr(why, "got ") ? " in " : ", got ", v);
    if (!(x > 0))
        return pp_error_set(e, PP_EUSAGE,
                            "--%s: expected a positive %s, got "
                            "\"%s\"",
                            name, pp_qkind_name(kind) + 2, v);
    *out = x;
    return 0;
}

int pp_args_enum(const pp_args *a, const char *name, const char *const *names,
                 int *out, pp_error *e) {
    const char *v = pp_args_get(a, name);
    if (!v) return 0;
    const char *near;
    int i = pp_name_find(v, names, &near);
    if (i >= 0) {
        *out = i;
        return 0;
    }
    char list[256] = "", what[80];
    for (int k = 0; names[k]; k++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", k ? "|" : "",
                 names[k]);
    }
    snprintf(what, sizeof what, "--%s", name);
    return pp_name_error(e, PP_EUSAGE, what, list, v, near);
}

int pp_args_choice(const pp_args *a, const char *name, int *out, pp_error *e) {
    int idx = opt_index(a, name);
    const pp_cli_opt *o = &a->cmd->opts[idx];
    const char *v = a->value[idx];
    if (!v) return 0;
    if (!o->choices) { /* a programming error: the table lacks it */
        fprintf(stderr, "podplan: internal: --%s has no registry\n", name);
        abort();
    }
    char field[72];
    snprintf(field, sizeof field, "--%s", name);
    int x;
    int rc = pp_registry_parse(o->choices, field, v, &x, e);
    if (rc) return rc;
    if (o->unsupported & (UINT32_C(1) << x)) {
        /* What is left, from the registry, so it cannot drift. */
        char ok[256] = "";
        for (int k = 0; k < o->choices->n; k++) {
            if (o->unsupported & (UINT32_C(1) << k)) continue;
            size_t used = strlen(ok);
            snprintf(ok + used, sizeof ok - used, "%s%s", used ? "|" : "",
                     o->choices->items[k].name);
        }
        return pp_error_set(
            e, PP_EUSAGE, "--%s %s: %s; choose one of %s", name, v,
            o->unsupported_why ? o->unsupported_why : "not supported here", ok);
    }
    *out = x;
    return 0;
}
