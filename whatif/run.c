/*
 * whatif/run.c: one variant of a study, from its overrides to its time,
 * cost and goodput; then the study-wide figures (ratios, constraints, the
 * Pareto front).
 *
 * A variant is a mixed-radix number over the axes, the last axis
 * changing fastest, so variant i is the same on every MPI rank.
 */
#include "whatif_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SETS 64

typedef struct variant {
    const char *sets[MAX_SETS];
    const pp_node *set_nodes[MAX_SETS];
    size_t n_sets;
    const char *model;
    double tokens;
    int64_t gbs;
    const char *parallel;
    const pp_node *parallel_node; /* where it was written, for errors */
    double spares;
    const wi_bundle *bundle;
    char owned[MAX_SETS][160]; /* "path=value" of the cluster keys */
} variant;

static const wi_bundle *find_bundle(const pp_whatif_study *s,
                                    const char *name) {
    for (size_t b = 0; b < s->n_bundles; b++)
        if (strcmp(s->bundles[b].name, name) == 0) return &s->bundles[b];
    return NULL;
}

static int add_set(variant *v, const char *set, const pp_node *n,
                   pp_error *e) {
    if (v->n_sets == MAX_SETS)
        return pp_error_at(e, PP_EINPUT, n, NULL,
                           "more than %d cluster overrides in one variant",
                           MAX_SETS);
    v->sets[v->n_sets] = set;
    v->set_nodes[v->n_sets++] = n;
    return 0;
}

/* Decodes variant i into v and its label. */
static int decode(const pp_whatif_study *s, size_t i, variant *v, char *label,
                  size_t llen, pp_error *e) {
    memset(v, 0, sizeof *v);
    v->model = s->model;
    v->tokens = s->tokens;
    v->gbs = s->gbs;
    v->parallel = s->parallel;
    v->parallel_node = s->parallel_node;
    v->spares = s->prices.spare_nodes;
    int rc;
    for (size_t k = 0; k < s->n_sets; k++)
        if ((rc = add_set(v, s->sets[k], s->set_nodes[k], e)) < 0) return rc;
    size_t idx[64] = {0}, rest = i, used = 0;
    for (size_t a = s->n_axes; a-- > 0;) {
        idx[a < 64 ? a : 63] = rest % s->axes[a].n_values;
        rest /= s->axes[a].n_values;
    }
    label[0] = '\0';
    for (size_t a = 0; a < s->n_axes && a < 64; a++) {
        const wi_axis *ax = &s->axes[a];
        for (size_t k = 0; k < ax->n_keys; k++) {
            const wi_key *key = &ax->keys[k];
            const pp_node *val = key->values[idx[a]];
            const char *x = val->scalar;
            size_t u = strlen(label);
            snprintf(label + u, llen - u, "%s%s=%s", u ? ", " : "", key->path,
                     x);
            switch (key->kind) {
            case WI_KEY_CLUSTER:
                if (used == MAX_SETS)
                    return pp_error_at(e, PP_EINPUT, val, key->path,
                                       "too many overrides");
                snprintf(v->owned[used], sizeof v->owned[used], "%s=%s",
                         key->path, x);
                if ((rc = add_set(v, v->owned[used], val, e)) < 0) return rc;
                used++;
                break;
            case WI_KEY_BUNDLE:
                v->bundle = find_bundle(s, x);
                for (size_t b = 0; v->bundle && b < v->bundle->n_sets; b++)
                    if ((rc = add_set(v, v->bundle->sets[b],
                                      v->bundle->set_nodes[b], e)) < 0)
                        return rc;
                break;
            case WI_KEY_MODEL: v->model = x; break;
            case WI_KEY_TOKENS:
                pp_node_quantity(val, key->path, PP_Q_COUNT, NULL, false,
                                 &v->tokens, NULL);
                break;
            case WI_KEY_GBS:
                pp_node_int(val, key->path, 1, INT64_MAX, &v->gbs, NULL);
                break;
            case WI_KEY_PARALLEL:
                v->parallel = x;
                v->parallel_node = val;
                break;
            case WI_KEY_SPARES: {
                int64_t sp = 0;
                pp_node_int(val, key->path, 0, 1000000, &sp, NULL);
                v->spares = (double)sp;
                break;
            }
            }
        }
    }
    if (!label[0]) snprintf(label, llen, "base");
    return 0;
}

const char *pp__whatif_beside(const pp_whatif_study *s, const char *name,
                              char *buf, size_t len) {
    if (name[0] == '/' || !strchr(name, '/')) return name;
    const char *slash = strrchr(s->path, '/');
    if (!slash) return name;
    snprintf(buf, len, "%.*s/%s", (int)(slash - s->path), s->path, name);
    return access(buf, R_OK) == 0 ? buf : name;
}

/* A cluster error about override K ("--set:K:C: path: what") is the
 * study's: point it at the value's line. */
static int locate_set_error(const variant *v, int rc, pp_error *e) {
    int k, col, used = 0;
    if (strncmp(e->msg, "--set:", 6) != 0 ||
        sscanf(e->msg, "--set:%d:%d: %n", &k, &col, &used) < 2 || used == 0 ||
        k < 1 || (size_t)k > v->n_sets)
        return rc;
    char rest[PP_ERROR_MSG_MAX];
    snprintf(rest, sizeof rest, "%s", e->msg + used);
    const pp_node *n = v->set_nodes[k - 1];
    pp_error_clear(e);
    return pp_error_at(e, PP_EINPUT, n, NULL, "%s (override %s)", rest,
                       v->sets[k - 1]);
}

/* The study's and the bundle's unit prices for this cluster's parts. */
static void unit_prices(const pp_whatif_study *s, const variant *v,
                        const pp_cluster_info *info,
                        pp_whatif_unit_prices *u) {
    *u = (pp_whatif_unit_prices){NAN, NAN, NAN, NAN, NAN};
    const pp_link_spec *cl = info->fabric_link ? info->fabric_link : info->nic;
    const char *names[5] = {info->server ? info->server->name : NULL,
                            info->gpu->name, info->nic ? info->nic->name : NULL,
                            info->fabric_switch ? info->fabric_switch->name
                                                : NULL,
                            cl ? cl->name : NULL};
    double *dst[5] = {&u->server_usd, &u->gpu_usd, &u->hca_usd, &u->switch_usd,
                      &u->cable_usd};
    for (size_t i = 0; i < s->n_named; i++) {
        const wi_named_price *np = &s->named[i];
        if (names[np->what] && strcmp(names[np->what], np->name) == 0)
            *dst[np->what] = np->usd;
    }
    if (v->bundle) {
        const pp_whatif_unit_prices *b = &v->bundle->price;
        const double src[5] = {b->server_usd, b->gpu_usd, b->hca_usd,
                               b->switch_usd, b->cable_usd};
        for (int k = 0; k < 5; k++)
            if (!isnan(src[k])) *dst[k] = src[k];
    }
}

/* The SPEC without the keys at their defaults (pp_parallel_init): it
 * still pastes into --parallel unchanged, and fits a table column. */
static void format_spec(const pp_parallel *par, char *buf, size_t len) {
    char full[PP_SPEC_MAX];
    pp_parallel_format(par, full, sizeof full);
    static const char *const defaults[] = {",vp=1", ",sp=off",
                                           ",recompute=full", ",zero=0"};
    for (size_t d = 0; d < sizeof defaults / sizeof *defaults; d++) {
        char *p = strstr(full, defaults[d]);
        size_t k = strlen(defaults[d]);
        if (p && (p[k] == ',' || p[k] == '\0'))
            memmove(p, p + k, strlen(p + k) + 1);
    }
    snprintf(buf, len, "%.159s", full);
}

/* The fixed layout: one simulation. */
static int run_fixed(const pp_whatif_study *s, variant *v,
                     const pp_model *m, const pp_cluster *c,
                     pp_whatif_result *r, pp_error *e) {
    char spec[PP_SPEC_MAX];
    bool has_gbs = strstr(v->parallel, "gbs") != NULL;
    snprintf(spec, sizeof spec, "%s", v->parallel);
    if (!has_gbs)
        snprintf(spec, sizeof spec, "%s,gbs=%lld", v->parallel,
                 (long long)v->gbs);
    pp_parallel par;
    pp_parallel_init(&par);
    int rc = pp_parallel_parse(spec, &par, e);
    if (rc < 0) {
        pp_error why = *e;
        pp_error_clear(e);
        return pp_error_at(e, PP_EINPUT, v->parallel_node, NULL, "%s",
                           why.msg);
    }
    v->gbs = par.gbs; /* the layout's batch sets the iterations */
    /* The study's stack (every variant trains with it), or, as `podplan
     * simulate` without --stack, the GPU's default one: it decides what
     * the SPEC leaves open (attention kernels, recomputation) and the DP
     * overlap, buckets and pipeline sends, so without one an H100 variant
     * trains as Megatron-core 2024 does, an A100 one as Megatron-LM
     * 2021. */
    const pp_cluster_info *info = pp_cluster_info_get(c);
    pp_gpu_profile prof;
    pp_stack stk;
    char sbuf[1024];
    const char *sn =
        s->stack ? pp__whatif_beside(s, s->stack, sbuf, sizeof sbuf) : NULL;
    if ((rc = pp_profile_load_stack(NULL, info->gpu, sn, &prof, &stk, e)) < 0)
        return rc;
    pp_stack_resolve(&prof, &par);
    /* An FP8 layout on a variant whose GPU or stack cannot run it does
     * not train there: an infeasible variant, as a layout that does not
     * fit, not a silently 16-bit one. */
    unsigned no = pp_stack_fp8_check(&stk, &prof, &par);
    bool fp4 = par.dtype == PP_PREC_FP4;
    const char *no_fp8 =
        no & PP_FP8_NO_GPU     ? fp4 ? "the GPU has no FP4 tensor cores"
                                     : "the GPU has no FP8 tensor cores"
        : no & PP_FP8_NO_STACK ? fp4 ? "the stack does not train in NVFP4"
                                     : "the stack does not train in FP8"
        : no & PP_FP8_NO_MXFP8 ? "fp8=mxfp8: the GPU has no MXFP8 tensor cores"
                               : NULL;
    if (no_fp8) {
        r->status = 1;
        snprintf(r->error, sizeof r->error, "dtype=%s on %s: %s",
                 fp4 ? "fp4" : "fp8", info->gpu ? info->gpu->name : "?",
                 no_fp8);
        return 0;
    }
    pp_step_config cfg;
    pp_step_config_init(&cfg);
    pp_step_config_stack(&cfg, &stk);
    cfg.profile = &prof;
    cfg.model = m;
    cfg.par = &par;
    cfg.cluster = c;
    cfg.p2p_scatter = s->p2p_scatter;
    cfg.compute_time_s = s->compute_time_s;
    cfg.fidelity = s->fidelity;
    if (s->dp_overlap >= 0) cfg.dp_overlap = s->dp_overlap;
    pp_step_result res;
    rc = pp_step_simulate(&cfg, &res, e);
    if (rc == PP_EINFEASIBLE) {
        r->status = 1;
        snprintf(r->error, sizeof r->error, "%.500s", e->msg);
        pp_error_clear(e);
        return 0;
    }
    if (rc == PP_EINPUT && v->parallel_node) {
        /* The layout does not suit this model or cluster: the study's
         * line that gave it is where to look. */
        pp_error why = *e;
        pp_error_clear(e);
        return pp_error_at(e, PP_EINPUT, v->parallel_node, NULL, "%s",
                           why.msg);
    }
    if (rc < 0) return rc;
    r->iteration_time_s = res.iteration_time_s;
    r->tflops_per_gpu = res.tflops_per_gpu;
    r->mfu = res.mfu;
    r->gpus = res.gpus;
    format_spec(&par, r->parallel, sizeof r->parallel);
    pp_step_result_fini(&res);
    return 0;
}

/* The planner's best layout. */
static int run_planner(const pp_whatif_study *s, const variant *v,
                       const pp_model *m, const pp_cluster *c,
                       pp_whatif_result *r, pp_error *e) {
    const pp_cluster_info *info = pp_cluster_info_get(c);
    pp_plan_options o;
    pp_plan_options_init(&o);
    o.gpus = s->gpus > 0 ? s->gpus : info->gpus;
    if (o.gpus > info->gpus) o.gpus = info->gpus;
    o.gbs = v->gbs;
    o.top = s->top;
    o.a2a_budget = s->a2a_budget;
    o.show = 1;
    o.fidelity = s->fidelity;
    o.tokens = v->tokens;
    o.jobs = 1; /* one core per rank: MPI spreads the variants instead */
    /* The study's stack, if it names one; else the planner's own choice
     * (the GPU's profile and default stack). */
    pp_gpu_profile prof;
    char sbuf[1024];
    int rc;
    if (s->stack) {
        if ((rc = pp_profile_load_stack(
                 NULL, info->gpu,
                 pp__whatif_beside(s, s->stack, sbuf, sizeof sbuf), &prof, NULL,
                 e)) < 0)
            return rc;
        o.profile = &prof;
    }
    pp_plan *plan = NULL;
    rc = pp_plan_search(m, c, &o, &plan, e);
    if (rc == PP_EINFEASIBLE) {
        r->status = 1;
        snprintf(r->error, sizeof r->error, "%.500s", e->msg);
        pp_error_clear(e);
        return 0;
    }
    if (rc < 0) return rc;
    const pp_plan_candidate *best = pp_plan_get(plan, 0);
    r->iteration_time_s = best->iteration_time_s;
    r->tflops_per_gpu = best->tflops_per_gpu;
    r->mfu = best->mfu;
    r->gpus = best->gpus;
    format_spec(&best->par, r->parallel, sizeof r->parallel);
    size_t u = strlen(r->parallel);
    snprintf(r->parallel + u, sizeof r->parallel - u, "%s%s",
             best->dp_overlap ? ",overlap=on" : "",
             best->simulated ? "" : " (est.)");
    pp_plan_free(plan);
    return 0;
}

int pp_whatif_run(const pp_whatif_study *s, size_t i, pp_whatif_result *r,
                  pp_error *e) {
    variant *v = pp_xcalloc(1, sizeof *v);
    pp_cluster *c = NULL;
    pp_model m;
    char buf[1024], mbuf[1024];
    memset(r, 0, sizeof *r);
    r->index = (int32_t)i;
    int rc = decode(s, i, v, r->label, sizeof r->label, e);
    if (rc < 0) goto out;
    rc = pp_cluster_load(pp__whatif_beside(s, s->cluster, buf, sizeof buf),
                         v->sets, v->n_sets, NULL, &c, e);
    if (rc < 0) {
        rc = locate_set_error(v, rc, e);
        goto out;
    }
    if ((rc = pp_model_load(pp__whatif_beside(s, v->model, mbuf, sizeof mbuf),
                            &m, e)) < 0)
        goto out;
    const pp_cluster_info *info = pp_cluster_info_get(c);
    r->cluster_gpus = info->gpus;
    if (s->tokens_per_batch > 0) {
        double seq = m.seq > 0 ? (double)m.seq : 1;
        v->gbs = (int64_t)llround(s->tokens_per_batch / seq);
        if (v->gbs < 1) v->gbs = 1;
    }
    rc = v->parallel ? run_fixed(s, v, &m, c, r, e)
                     : run_planner(s, v, &m, c, r, e);
    if (rc < 0 || r->status) goto out;

    double seq = m.seq > 0 ? (double)m.seq : 1;
    double iters = v->tokens / ((double)v->gbs * seq);
    double ideal_s = iters * r->iteration_time_s;
    double gpn = info->gpus_per_node;
    double nodes_used = ceil((double)r->gpus / gpn);
    double sw = info->switches[PP_DEV_LEAF] + info->switches[PP_DEV_SPINE] +
                info->switches[PP_DEV_CORE];
    pp_whatif_goodput_compute(&s->failures, ideal_s, nodes_used, gpn,
                              info->hcas_per_node, sw, pp_model_params(&m),
                              v->spares, &r->fail);
    r->ideal_days = ideal_s / 86400;
    r->expected_days = r->fail.expected_s / 86400;
    pp_whatif_prices p = s->prices;
    p.spare_nodes = v->spares;
    pp_whatif_unit_prices u;
    unit_prices(s, v, info, &u);
    if ((rc = pp_whatif_cost_compute(c, &p, &u, r->fail.expected_s / 3600,
                                     &r->cost, e)) < 0)
        goto out;
    r->tokens_per_usd =
        r->cost.total_usd > 0 ? v->tokens / r->cost.total_usd : NAN;
out:
    if (rc < 0 && e && !strstr(e->msg, r->label) && r->label[0]) {
        /* Which variant, for errors that are not located in the study. */
        if (strncmp(e->msg, s->path, strlen(s->path)) != 0)
            pp_error_prefix(e, "%s: variant %zu (%s)", s->path, i + 1,
                            r->label);
    }
    pp_cluster_free(c);
    free(v);
    return rc;
}

void pp_whatif_finish(const pp_whatif_study *s, pp_whatif_result *r,
                      size_t n) {
    double t0 = n > 0 && r[0].status == 0 ? r[0].iteration_time_s : NAN;
    double d0 = n > 0 && r[0].status == 0 ? r[0].ideal_days : NAN;
    for (size_t i = 0; i < n; i++) {
        pp_whatif_result *x = &r[i];
        x->ratio = x->status == 0 ? x->iteration_time_s / t0 : NAN;
        x->speedup = x->status == 0 ? d0 / x->ideal_days : NAN;
        x->meets_deadline = x->status == 0 &&
                            (!(s->deadline_s > 0) ||
                             x->fail.expected_s <= s->deadline_s);
        x->within_budget = x->status == 0 && (!(s->budget_usd > 0) ||
                                              x->cost.capex_usd <=
                                                  s->budget_usd);
        x->within_power = x->status == 0 && (!(s->power_cap_w > 0) ||
                                             x->cost.facility_w <=
                                                 s->power_cap_w);
        x->pareto = false;
    }
    /* Pareto front over (expected time, cost per model): no other
     * admissible variant is at least as good in both and better in one. */
    for (size_t i = 0; i < n; i++) {
        pp_whatif_result *x = &r[i];
        if (!(x->meets_deadline && x->within_budget && x->within_power))
            continue;
        bool dominated = false;
        for (size_t j = 0; j < n && !dominated; j++) {
            const pp_whatif_result *y = &r[j];
            if (j == i ||
                !(y->meets_deadline && y->within_budget && y->within_power))
                continue;
            double xt = x->fail.expected_s, yt = y->fail.expected_s;
            double xc = x->cost.total_usd, yc = y->cost.total_usd;
            if (yt <= xt && yc <= xc && (yt < xt || yc < xc)) dominated = true;
            /* Identical points: the first one stands for both. */
            if (yt == xt && yc == xc && j < i) dominated = true;
        }
        x->pareto = !dominated;
    }
}
