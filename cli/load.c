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
#include <stdlib.h>
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

int pp_cli_catalog_gpu(const char *name, pp_gpu_spec *out, pp_error *e) {
    pp_catalog *cat = NULL;
    int rc = pp_catalog_load(NULL, &cat, e);
    if (rc < 0) return rc;
    const pp_gpu_spec *g = pp_catalog_gpu(cat, name);
    if (g) {
        *out = *g;
    } else {
        const char *s = pp_catalog_suggest(cat, PP_CAT_GPU, name);
        rc = pp_error_set(
            e, PP_EUSAGE, "--gpu: no GPU \"%s\" in the catalogue%s%s%s", name,
            s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "");
    }
    pp_catalog_free(cat);
    return rc;
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

/* A profile file that still has framework: (calibrate fit wrote it) keeps
 * its two values over the stack's; said once, on stderr. */
static void legacy_note(const pp_args *a, const pp_gpu_profile *p) {
    if (p->legacy_framework)
        pp_cli_note(a,
                    "profile %s: framework: is deprecated (it belongs to a "
                    "software stack now, topologies/stacks/); its "
                    "grad_accum_bytes %g and efficiency %g are used instead "
                    "of stack %s's",
                    p->source, p->grad_accum_bytes, p->framework_efficiency,
                    p->stack);
}

int pp_cli_load_profile(const pp_args *a, const pp_gpu_spec *gpu, bool required,
                        pp_gpu_profile *p, pp_error *e) {
    const char *spec = has_opt(a, "profile") ? pp_args_get(a, "profile") : NULL;
    const char *stack = has_opt(a, "stack") ? pp_args_get(a, "stack") : NULL;
    if (!spec && !stack && !required) return 1;
    return pp_cli_load_profile_stack(a, gpu, stack, p, NULL, e);
}

int pp_cli_load_profile_stack(const pp_args *a, const pp_gpu_spec *gpu,
                              const char *stack, pp_gpu_profile *p,
                              pp_stack *st, pp_error *e) {
    const char *spec = has_opt(a, "profile") ? pp_args_get(a, "profile") : NULL;
    if (!stack && has_opt(a, "stack")) stack = pp_args_get(a, "stack");
    int rc = pp_profile_load_stack(spec, gpu, stack, p, st, e);
    if (rc == 0) legacy_note(a, p);
    return rc;
}

int pp_cli_check_stack(const pp_stack *st, const pp_gpu_profile *g,
                       const pp_parallel *p, pp_error *e) {
    unsigned no = pp_stack_fp8_check(st, g, p);
    if (p->dtype == PP_PREC_FP4 && (no & PP_FP8_NO_STACK))
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: dtype=fp4: stack %s does not train "
                            "in NVFP4 (topologies/stacks/%s.yaml, "
                            "fp4.supported; --stack nemo-2025 does)",
                            st->name, st->name);
    if (p->dtype == PP_PREC_FP4 && (no & PP_FP8_NO_GPU))
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: dtype=fp4: the GPU of profile %s has "
                            "no FP4 tensor cores (no fp4 peak in the "
                            "catalogue; Blackwell's have them)",
                            g->name);
    if (no & PP_FP8_NO_STACK)
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: dtype=fp8: stack %s does not train "
                            "in FP8 (topologies/stacks/%s.yaml, fp8.supported)",
                            st->name, st->name);
    if (no & PP_FP8_NO_GPU)
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: dtype=fp8: the GPU of profile %s has "
                            "no FP8 tensor cores (no fp8 peak in the "
                            "catalogue)",
                            g->name);
    if (no & PP_FP8_NO_MXFP8)
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: fp8=mxfp8%s: the GPU of profile %s "
                            "has no MXFP8 tensor cores (catalogue mxfp8; "
                            "Blackwell's have them): use tensorwise, delayed "
                            "or blockwise",
                            p->fp8 == PP_FP8_AUTO ? " (stack fp8.recipe)" : "",
                            g->name);
    if (p->a2a_overlap && !st->moe_a2a_overlap)
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: a2a_overlap=on: stack %s does not "
                            "offer it (topologies/stacks/%s.yaml, "
                            "moe.a2a_overlap; Megatron-core 0.14 and later "
                            "do: --stack nemo-2025)",
                            st->name, st->name);
    /* The stack a GPU gets by default does not narrow the layouts that
     * ran before stacks existed (ZeRO-2/3 on A100 with Megatron-LM
     * 2021's defaults); a stack that was asked for does. */
    if (g->stack_default) return 0;
    if (p->zero > st->zero_max)
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: zero=%d: stack %s implements ZeRO "
                            "stages up to %d (zero.max_stage)",
                            p->zero, st->name, st->zero_max);
    uint32_t mods = (uint32_t)p->recompute_mods << PP_STACK_RECOMP_MOD;
    if (!(st->recompute & (1u << p->recompute)) ||
        (st->recompute & mods) != mods) {
        char rc[64];
        return pp_error_set(
            e, PP_EUSAGE,
            "--parallel: recompute=%s: stack %s does not "
            "offer it (recompute:)",
            pp_recompute_format(p->recompute, p->recompute_mods, rc, sizeof rc),
            st->name);
    }
    return 0;
}

const char *pp_cli_stack_label(const pp_gpu_profile *p, char *buf, size_t len) {
    if (p->stack_default)
        snprintf(buf, len, "%s (the GPU's default; --stack to change)",
                 p->stack);
    else
        snprintf(buf, len, "%s", p->stack);
    return buf;
}

/* Whether item (blanks around it allowed) is "key=..." */
static bool item_is(const char *item, size_t len, const char *key) {
    size_t k = strlen(key);
    while (len && (*item == ' ' || *item == '\t')) item++, len--;
    if (len <= k || strncmp(item, key, k) != 0) return false;
    for (size_t i = k; i < len; i++)
        if (item[i] != ' ' && item[i] != '\t') return item[i] == '=';
    return false;
}

int pp_cli_load_parallel(const pp_args *a, pp_parallel *p, int *overlap,
                         pp_error *e) {
    const char *spec;
    int rc = pp_args_need(a, "parallel", &spec, e);
    if (rc) return rc;
    /* overlap= is the planner's dimension, not a pp_parallel field: taken
     * out here, the rest goes to the models layer as it is. */
    size_t n = strlen(spec);
    char *rest = pp_xmalloc(n + 2); /* every item gets a comma back */
    rest[0] = '\0';
    int ov = -1;
    bool has_gbs = false;
    for (const char *s = spec; rc == 0;) {
        const char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        if (item_is(s, len, "overlap")) {
            const char *v = (const char *)memchr(s, '=', len) + 1;
            size_t vl = len - (size_t)(v - s);
            while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
            while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
            if (ov >= 0)
                rc = pp_error_set(e, PP_EUSAGE,
                                  "--parallel: overlap: given twice");
            else if ((vl == 2 && strncmp(v, "on", 2) == 0) ||
                     (vl == 4 && strncmp(v, "true", 4) == 0))
                ov = 1;
            else if ((vl == 3 && strncmp(v, "off", 3) == 0) ||
                     (vl == 5 && strncmp(v, "false", 5) == 0))
                ov = 0;
            else
                rc = pp_error_set(e, PP_EUSAGE,
                                  "--parallel: overlap: expected on or off, "
                                  "got \"%.*s\"",
                                  (int)vl, v);
        } else {
            if (item_is(s, len, "gbs")) has_gbs = true;
            size_t used = strlen(rest);
            memcpy(rest + used, s, len);
            rest[used + len] = ',';
            rest[used + len + 1] = '\0';
        }
        if (!c) break;
        s = c + 1;
    }
    size_t used = strlen(rest);
    if (used) rest[used - 1] = '\0'; /* the last comma */
    if (rc == 0) rc = pp_parallel_parse(rest, p, e);
    free(rest);
    if (rc) return rc;
    if (overlap) *overlap = ov;
    if (!has_gbs)
        pp_cli_note(a,
                    "--parallel has no gbs=; using gbs=%lld (mbs x dp = "
                    "%lld x %lld)",
                    (long long)p->gbs, (long long)p->mbs, (long long)p->dp);
    return 0;
}

void pp_cli_note(const pp_args *a, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "podplan %s: ", a->cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
