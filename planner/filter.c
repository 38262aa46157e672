/*
 * planner/filter.c: the pins and exclusions of a search (plan --fix and
 * --exclude): the dimensions' names, each value's syntax and what is
 * refused before any layout is generated (a dimension that is not
 * searched cannot be excluded).  planner/space.c walks the space they
 * narrow.
 */
#include "planner_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Pins and exclusions.
 * ---------------------------------------------------------------------- */
static const char *const dim_names[PP_PLAN_DIM__COUNT + 1] = {
    "tp",          "pp",
    "dp",          "mbs",
    "gbs",         "vp",
    "sp",          "recompute",
    "zero",        "overlap",
    "first",       "last",
    "cp",          "ep",
    "etp",         "dispatcher",
    "permute",     "graphs",
    "fp8",         "offload",
    "a2a_overlap", "rank_capacity",
    "dtype",       "fp8_attn",
    "cp_comm",     "cp_a2a",
    NULL};

const char *pp_plan_dim_name(pp_plan_dim d) {
    return (unsigned)d < PP_PLAN_DIM__COUNT ? dim_names[d] : "?";
}

void pp_plan_filter_init(pp_plan_filter *f) {
    memset(f, 0, sizeof *f);
}

bool pp_plan_filter_allows(const pp_plan_filter *f, pp_plan_dim d, int64_t v) {
    if (!f) return true;
    if (f->fixed[d] && f->value[d] != v) return false;
    for (int i = 0; i < f->n_exclude[d]; i++)
        if (f->exclude[d][i] == v) return false;
    return true;
}

typedef struct filter_ctx {
    pp_plan_filter *f;
    bool exclude;
    const char *what;
} filter_ctx;

static int on_off(const char *v, int64_t *out) {
    if (strcmp(v, "on") == 0 || strcmp(v, "true") == 0)
        *out = 1;
    else if (strcmp(v, "off") == 0 || strcmp(v, "false") == 0)
        *out = 0;
    else
        return -1;
    return 0;
}

/* The dimensions a search never varies (pinned only), and what holds
 * when they are not pinned; NULL for the searched ones. */
static const char *pinned_only(pp_plan_dim d) {
    switch (d) {
    case PP_PLAN_DIM_GRAPHS: return "none unless pinned with --fix graphs=...";
    case PP_PLAN_DIM_FP8:
        return "the stack's recipe unless pinned with --fix fp8=...";
    case PP_PLAN_DIM_OFFLOAD: return "none unless pinned with --fix offload=N";
    case PP_PLAN_DIM_RANK_CAPACITY:
        return "none unless pinned with --fix rank_capacity=X";
    case PP_PLAN_DIM_FP8_ATTN:
        return "off unless pinned with --fix fp8_attn=on";
    default: return NULL;
    }
}

/* A SPEC value parser's PP_EINPUT as a usage error of the option's key. */
static int as_usage(pp_error *e, const char *what, const char *key) {
    pp_error_prefix(e, "%s: %s", what, key);
    if (e) e->code = PP_EUSAGE;
    return PP_EUSAGE;
}

static int filter_value(void *ctx, int k, const char *val, pp_error *e) {
    filter_ctx *c = ctx;
    pp_plan_dim d = (pp_plan_dim)k;
    int64_t v;
    const char *only = pinned_only(d);
    if (c->exclude && only)
        return pp_error_set(e, PP_EUSAGE, "%s: %s: not searched (%s)", c->what,
                            dim_names[d], only);
    switch (d) {
    case PP_PLAN_DIM_SP:
    case PP_PLAN_DIM_OVERLAP:
    case PP_PLAN_DIM_A2A:
    case PP_PLAN_DIM_FP8_ATTN:
        if (on_off(val, &v))
            return pp_error_set(e, PP_EUSAGE,
                                "%s: %s: expected on or off, got \"%.100s\"",
                                c->what, dim_names[d], val);
        break;
    case PP_PLAN_DIM_RECOMPUTE: {
        /* The value is the base with its modules above it (space.c's
         * walk_inner compares the same encoding). */
        pp_recompute r;
        uint8_t mods;
        if (pp_recompute_parse(val, &r, &mods, e) < 0)
            return as_usage(e, c->what, "recompute");
        v = pp__recompute_pin(r, mods);
        break;
    }
    case PP_PLAN_DIM_FIRST:
    case PP_PLAN_DIM_LAST:
        if (pp_parse_i64(val, 0, 1000000000, &v))
            return pp_error_set(e, PP_EUSAGE,
                                "%s: %s: expected a number of layers (0 for "
                                "an even share), got \"%.100s\"",
                                c->what, dim_names[d], val);
        break;
    case PP_PLAN_DIM_DISPATCHER:
    case PP_PLAN_DIM_PERMUTE: {
        /* Two-valued, named as in the SPEC (auto is no pin); HybridEP, a
         * third dispatcher, is pinned, not searched. */
        const char *a = d == PP_PLAN_DIM_DISPATCHER ? "alltoall" : "fused";
        const char *b = d == PP_PLAN_DIM_DISPATCHER ? "deepep" : "unfused";
        if (strcmp(val, a) == 0)
            v = 0;
        else if (strcmp(val, b) == 0)
            v = 1;
        else if (d == PP_PLAN_DIM_DISPATCHER && strcmp(val, "hybridep") == 0) {
            if (c->exclude)
                return pp_error_set(e, PP_EUSAGE,
                                    "%s: dispatcher: hybridep is not "
                                    "searched (pin it with --fix)",
                                    c->what);
            v = 2;
        } else
            return pp_error_set(
                e, PP_EUSAGE,
                "%s: %s: expected %s or %s%s, "
                "got \"%.100s\"",
                c->what, dim_names[d], a, b,
                d == PP_PLAN_DIM_DISPATCHER ? " (or hybridep)" : "", val);
        break;
    }
    case PP_PLAN_DIM_RANK_CAPACITY: {
        double x;
        if (pp_parse_f64(val, 1, 64, &x) < 0)
            return pp_error_set(e, PP_EUSAGE,
                                "%s: rank_capacity: expected 1 to 64, got "
                                "\"%.100s\"",
                                c->what, val);
        v = (int64_t)(x * 1000 + 0.5);
        break;
    }
    case PP_PLAN_DIM_GRAPHS: {
        uint8_t g;
        if (pp_graphs_parse(val, &g, e) < 0)
            return as_usage(e, c->what, "graphs");
        v = g;
        break;
    }
    case PP_PLAN_DIM_DTYPE: {
        /* NVFP4 changes training's numerics (NVIDIA keeps layers in BF16
         * for it in some recipes): asked for, never chosen. */
        int r = pp_registry_find(&pp_reg_prec, val);
        if (r != PP_PREC_BF16 && r != PP_PREC_FP8 && r != PP_PREC_FP4)
            return pp_error_set(e, PP_EUSAGE,
                                "%s: dtype: expected bf16, fp8 or fp4, got "
                                "\"%.100s\"",
                                c->what, val);
        if (r == PP_PREC_FP4 && c->exclude)
            return pp_error_set(e, PP_EUSAGE,
                                "%s: dtype: fp4 is not searched (pin it with "
                                "--fix)",
                                c->what);
        v = r;
        break;
    }
    case PP_PLAN_DIM_FP8: {
        int r;
        r = pp_registry_find(&pp_reg_fp8, val);
        if (r <= PP_FP8_AUTO)
            return pp_error_set(e, PP_EUSAGE,
                                "%s: fp8: expected delayed, tensorwise, mxfp8 "
                                "or blockwise, got \"%.100s\"",
                                c->what, val);
        v = r;
        break;
    }
    case PP_PLAN_DIM_CP_COMM: {
        int r;
        if (pp_registry_parse(&pp_reg_cp_comm, "cp_comm", val, &r, e) < 0) {
            pp_error_prefix(e, "%s", c->what);
            return PP_EUSAGE;
        }
        v = r;
        break;
    }
    case PP_PLAN_DIM_OFFLOAD:
        if (pp_parse_i64(val, 0, 1000000, &v))
            return pp_error_set(e, PP_EUSAGE,
                                "%s: offload: expected a number of layers, "
                                "got \"%.100s\"",
                                c->what, val);
        break;
    case PP_PLAN_DIM_ZERO:
        if (pp_parse_i64(val, 0, 3, &v))
            return pp_error_set(e, PP_EUSAGE,
                                "%s: zero: expected 0..3, got \"%.100s\"",
                                c->what, val);
        break;
    default:
        if (pp_parse_i64(val, 1, 1000000000, &v))
            return pp_error_set(e, PP_EUSAGE,
                                "%s: %s: expected a positive integer, got "
                                "\"%.100s\"",
                                c->what, dim_names[d], val);
        break;
    }
    pp_plan_filter *f = c->f;
    if (c->exclude) {
        if (f->n_exclude[d] == PP_PLAN_MAX_EXCLUDE)
            return pp_error_set(e, PP_EUSAGE, "%s: %s: too many exclusions",
                                c->what, dim_names[d]);
        f->exclude[d][f->n_exclude[d]++] = v;
        if (d == PP_PLAN_DIM_DISPATCHER || d == PP_PLAN_DIM_PERMUTE) {
            bool seen[2] = {false, false};
            for (int i = 0; i < f->n_exclude[d]; i++)
                seen[f->exclude[d][i] != 0] = true;
            if (seen[0] && seen[1])
                return pp_error_set(e, PP_EUSAGE,
                                    "%s: %s: both choices excluded", c->what,
                                    dim_names[d]);
        }
    } else {
        if (f->fixed[d] && f->value[d] != v)
            return pp_error_set(e, PP_EUSAGE,
                                "%s: %s is pinned twice, to different "
                                "values",
                                c->what, dim_names[d]);
        f->fixed[d] = true;
        f->value[d] = v;
    }
    return 0;
}

/* The dimensions' names, comma-separated. */
static const char *key_list(void) {
    static char buf[256];
    size_t n = 0;
    buf[0] = '\0';
    for (int d = 0; dim_names[d] && n < sizeof buf; d++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", d ? ", " : "",
                              dim_names[d]);
    return buf;
}

int pp_plan_filter_add(pp_plan_filter *f, const char *spec, bool exclude,
                       const char *what, pp_error *e) {
    pp_plan_filter copy = *f;
    filter_ctx c = {&copy, exclude, what};
    if (!spec || !*spec)
        return pp_error_set(e, PP_EUSAGE,
                            "%s: expected key=value, e.g. tp=8 (keys: %s)",
                            what, key_list());
    int rc = pp_kv_parse(spec, what, dim_names, filter_value, &c, NULL, e);
    if (rc < 0) {
        /* pp_kv_parse reports syntax as PP_EINPUT: on the command line it
         * is a usage error (exit 2 either way). */
        if (e) e->code = PP_EUSAGE;
        return PP_EUSAGE;
    }
    *f = copy;
    return 0;
}
