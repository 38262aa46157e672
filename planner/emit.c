/*
 * planner/emit.c: the plan as a table, JSON or YAML.
 *
 * JSON and YAML are written from one tree (pp__plan_json), so they hold
 * the same keys: DESIGN.md's (iteration_time_s, tflops_per_gpu, mfu,
 * memory_per_gpu_bytes, breakdown{...}, training_days) for each of the
 * `candidates` (ranked best first, the best `show` of them in full), every
 * evaluated layout's estimate under `evaluated`, the rejections by reason
 * and the search's figures.  The launch formats are in launch.c.
 */
#include "planner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const pp_plan_format_names[] = {
    "table", "json", "yaml", "megatron", "nemo", "deepspeed", "nemo2", NULL};

pp_plan_target pp_plan_format_target(pp_plan_format f) {
    switch (f) {
    case PP_PLAN_FMT_MEGATRON: return PP_PLAN_TARGET_MEGATRON;
    case PP_PLAN_FMT_NEMO: return PP_PLAN_TARGET_NEMO;
    case PP_PLAN_FMT_DEEPSPEED: return PP_PLAN_TARGET_DEEPSPEED;
    case PP_PLAN_FMT_NEMO2: return PP_PLAN_TARGET_NEMO2;
    default: return PP_PLAN_TARGET_ANY;
    }
}

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static const char *fidelity_name(pp_fidelity f) {
    return f == PP_FIDELITY_ANALYTIC ? "analytic" : "flow";
}

static const char *objective_key(pp_plan_objective o) {
    switch (o) {
    case PP_PLAN_OBJ_TRAIN: return "training_time";
    case PP_PLAN_OBJ_COST: return "cost";
    default: return "iteration_time";
    }
}

/* The parts simulate's JSON has: ep_comm_s and cp_comm_s for a layout
 * with ep or cp > 1, host_s under a stack that models the host. */
static json_t *breakdown_json(const pp_plan *p, const pp_plan_candidate *c,
                              const pp_breakdown *b) {
    json_t *o = json_object();
    json_object_set_new(o, "compute_s", num(b->compute_s));
    json_object_set_new(o, "tp_comm_s", num(b->tp_comm_s));
    json_object_set_new(o, "pp_comm_s", num(b->pp_comm_s));
    json_object_set_new(o, "dp_comm_exposed_s", num(b->dp_comm_exposed_s));
    json_object_set_new(o, "bubble_s", num(b->bubble_s));
    json_object_set_new(o, "other_s", num(b->other_s));
    if (c->par.ep > 1 || c->par.cp > 1) {
        json_object_set_new(o, "ep_comm_s", num(b->ep_comm_s));
        json_object_set_new(o, "cp_comm_s", num(b->cp_comm_s));
    }
    if (p->profile.sw.host_kernel_s > 0)
        json_object_set_new(o, "host_s", num(b->host_s));
    return o;
}

/* ------------------------------------------------------------------------
 * Why a candidate loses to the first.
 * ---------------------------------------------------------------------- */
const char *pp__plan_why(const pp_plan *p, size_t i, char *buf, size_t len) {
    const pp_plan_candidate *a = &p->cand[0], *c = &p->cand[i];
    const pp_breakdown *x = &a->breakdown, *y = &c->breakdown;
    struct {
        const char *name;
        double d;
    } parts[9] = {
        {"compute", y->compute_s - x->compute_s},
        {"TP comm", y->tp_comm_s - x->tp_comm_s},
        {"PP comm", y->pp_comm_s - x->pp_comm_s},
        {"exposed DP comm", y->dp_comm_exposed_s - x->dp_comm_exposed_s},
        {"bubble", y->bubble_s - x->bubble_s},
        {"optimizer/other", y->other_s - x->other_s},
        {"EP comm", y->ep_comm_s - x->ep_comm_s},
        {"CP comm", y->cp_comm_s - x->cp_comm_s},
        {"host", y->host_s - x->host_s}};
    /* Largest penalties first (a stable selection: equal values keep the
     * order above). */
    int order[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    for (int k = 1; k < 9; k++)
        for (int j = k; j > 0 && parts[order[j]].d > parts[order[j - 1]].d;
             j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    buf[0] = '\0';
    size_t u = 0;
    double T = a->iteration_time_s;
    int shown = 0;
    /* Another rank order moves the same traffic over other links: say so
     * first, the parts below are where it shows. */
    if (memcmp(c->placement, a->placement, 3) != 0)
        u += (size_t)snprintf(buf, len,
                              "ranks %s: ", pp__placement_name(c->placement));
    if (c->gpus != a->gpus) {
        /* Different GPU counts: the parts of one iteration do not compare;
         * what does is the count and the time (the cost is their
         * product). */
        u += (size_t)snprintf(buf + u, len - u,
                              "%lld GPUs vs %lld, %.4g s vs %.4g s per "
                              "iteration",
                              (long long)c->gpus, (long long)a->gpus,
                              c->iteration_time_s, T);
        shown = 3;
    }
    for (int k = 0; k < 9 && shown < 3 && u < len; k++) {
        const char *nm = parts[order[k]].name;
        double d = parts[order[k]].d;
        if (!(d > 0.005 * T)) break; /* below half a percent: noise */
        u += (size_t)snprintf(buf + u, len - u, "%s%s +%.3g s",
                              shown ? ", " : "", nm, d);
        shown++;
    }
    if (!shown && u < len)
        u += (size_t)snprintf(buf + u, len - u, "%s",
                              c->simulated != a->simulated
                                  ? "not simulated"
                                  : "within noise of #1");
    double head = c->memory_limit_bytes - c->memory.total;
    if (u < len && head < 0.05 * c->memory_limit_bytes)
        snprintf(buf + u, len - u, "; tight memory (%s headroom)",
                 pp_unit_format(head, PP_Q_BYTES, 3, (char[48]){0}, 48));
    return buf;
}

/* ------------------------------------------------------------------------
 * The JSON tree.
 * ---------------------------------------------------------------------- */
static json_t *candidate_json(const pp_plan *p, size_t i) {
    const pp_plan_candidate *c = &p->cand[i];
    char spec[PP_SPEC_MAX], why[256];
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer((json_int_t)i + 1));
    json_object_set_new(
        o, "parallel",
        json_string(pp_parallel_format(&c->par, spec, sizeof spec)));
    json_object_set_new(o, "dp_overlap", json_boolean(c->dp_overlap));
    json_object_set_new(o, "placement",
                        json_string(pp__placement_name(c->placement)));
    json_object_set_new(o, "gpus", json_integer(c->gpus));
    json_object_set_new(o, "simulated", json_boolean(c->simulated));
    json_object_set_new(o, "iteration_time_s", num(c->iteration_time_s));
    json_object_set_new(o, "estimated_time_s", num(c->est_time_s));
    json_object_set_new(o, "simulated_time_s",
                        c->simulated ? num(c->sim_time_s) : json_null());
    json_object_set_new(o, "a2a_transfers", num(c->a2a_transfers));
    json_object_set_new(o, "tflops_per_gpu", num(c->tflops_per_gpu));
    json_object_set_new(o, "mfu", num(c->mfu));
    json_object_set_new(o, "memory_per_gpu_bytes", num(c->memory.total));
    json_object_set_new(o, "memory_headroom_bytes",
                        num(c->memory_limit_bytes - c->memory.total));
    json_object_set_new(o, "breakdown", breakdown_json(p, c, &c->breakdown));
    json_object_set_new(o, "estimated_breakdown",
                        breakdown_json(p, c, &c->est));
    json_object_set_new(o, "training_days", num(c->training_days));
    json_object_set_new(o, "cost_usd", num(c->cost_usd));
    json_object_set_new(o, "score", num(c->score));
    json_object_set_new(o, "vs_best", num(c->score / p->cand[0].score));
    json_object_set_new(o, "why",
                        i ? json_string(pp__plan_why(p, i, why, sizeof why))
                          : json_null());
    return o;
}

json_t *pp__plan_json(const pp_plan *p, bool timing) {
    const pp_plan_options *o = &p->opt;
    const pp_plan_stats *st = &p->st;
    json_t *root = json_object();
    json_object_set_new(root, "model", json_string(p->model.name));
    json_object_set_new(root, "cluster", json_string(p->cluster_name));
    json_object_set_new(root, "gpu", json_string(p->gpu.name));
    json_object_set_new(root, "gpus",
                        o->gpus ? json_integer(o->gpus) : json_null());
    json_object_set_new(root, "global_batch", json_integer(st->gbs));
    json_object_set_new(root, "objective",
                        json_string(objective_key(o->objective)));
    json_object_set_new(root, "fidelity",
                        json_string(fidelity_name(o->fidelity)));
    /* The best candidate's order (the one the launch formats use), and
     * the orders searched. */
    json_object_set_new(root, "placement",
                        json_string(pp__placement_name(p->cand[0].placement)));
    json_t *pls = json_array();
    for (int k = 0; k < p->n_placements; k++)
        json_array_append_new(
            pls, json_string(pp__placement_name(p->placements[k])));
    json_object_set_new(root, "placements_searched", pls);
    json_object_set_new(root, "stack", json_string(p->profile.stack));
    json_object_set_new(root, "optimizer",
                        json_string(pp_optimizer_name(p->opt.optimizer)));
    json_object_set_new(root, "profile", json_string(p->profile.name));
    json_object_set_new(root, "profile_calibrated",
                        json_boolean(p->profile.calibrated[0] != '\0'));
    json_object_set_new(root, "top", json_integer(o->top));
    json_object_set_new(root, "a2a_budget",
                        o->a2a_budget > 0 ? num(o->a2a_budget) : json_null());
    json_object_set_new(root, "memory_reserve", num(o->memory_reserve));
    json_object_set_new(root, "gpu_memory_bytes", num(p->gpu.hbm_bytes));
    json_object_set_new(root, "tokens",
                        o->tokens > 0 ? num(o->tokens) : json_null());
    json_object_set_new(root, "usd_per_gpu_hour",
                        p->has_prices ? num(p->prices.usd_per_gpu_hour)
                                      : json_null());

    json_t *s = json_object();
    json_object_set_new(s, "considered",
                        json_integer((json_int_t)st->considered));
    json_object_set_new(s, "feasible", json_integer((json_int_t)st->feasible));
    json_object_set_new(s, "simulated",
                        json_integer((json_int_t)st->simulated));
    json_object_set_new(s, "over_budget",
                        json_integer((json_int_t)st->over_budget));
    json_object_set_new(s, "gpus_min", json_integer(st->gpus_min));
    json_object_set_new(s, "gpus_max", json_integer(st->gpus_max));
    if (timing) {
        json_object_set_new(s, "search_time_s", num(st->search_s));
        json_object_set_new(s, "simulate_time_s", num(st->simulate_s));
        json_object_set_new(s, "candidates_per_s",
                            num(st->search_s > 0
                                    ? (double)st->considered / st->search_s
                                    : NAN));
    }
    json_object_set_new(s, "simulation_error",
                        st->sim_error[0] ? json_string(st->sim_error)
                                         : json_null());
    json_object_set_new(root, "search", s);

    json_t *rej = json_object();
    for (int r = 0; r < PP_PLAN_REJECT__COUNT; r++)
        json_object_set_new(rej, pp_plan_reject_name((pp_plan_reject)r),
                            json_integer((json_int_t)st->rejected[r]));
    json_object_set_new(root, "rejected", rej);

    json_t *cands = json_array();
    size_t show = (size_t)(o->show > 0 ? o->show : 10);
    for (size_t i = 0; i < p->n && i < show; i++)
        json_array_append_new(cands, candidate_json(p, i));
    json_object_set_new(root, "candidates", cands);

    /* Every layout the estimator scored, in rank order, compactly. */
    json_t *ev = json_array();
    char spec[PP_SPEC_MAX];
    for (size_t i = 0; i < p->n; i++) {
        const pp_plan_candidate *c = &p->cand[i];
        json_t *e = json_object();
        json_object_set_new(
            e, "parallel",
            json_string(pp_parallel_format(&c->par, spec, sizeof spec)));
        json_object_set_new(e, "dp_overlap", json_boolean(c->dp_overlap));
        json_object_set_new(e, "placement",
                            json_string(pp__placement_name(c->placement)));
        json_object_set_new(e, "estimated_time_s", num(c->est_time_s));
        if (c->simulated)
            json_object_set_new(e, "simulated_time_s", num(c->sim_time_s));
        json_object_set_new(e, "memory_per_gpu_bytes", num(c->memory.total));
        json_array_append_new(ev, e);
    }
    json_object_set_new(root, "evaluated", ev);
    return root;
}

/* ------------------------------------------------------------------------
 * YAML from the same tree: block style, strings double-quoted (JSON's
 * escapes are YAML's), reals always with a '.' or an exponent with one so
 * YAML 1.1 readers do not take them for strings.
 * ---------------------------------------------------------------------- */
static void yaml_real(FILE *fp, double v) {
    char b[64];
    snprintf(b, sizeof b, "%.12g", v);
    if (!strpbrk(b, ".ni")) { /* no '.', not inf/nan */
        char *ex = strchr(b, 'e');
        if (ex) {
            char tail[32];
            snprintf(tail, sizeof tail, "%s", ex);
            snprintf(ex, sizeof b - (size_t)(ex - b), ".0%s", tail);
        } else {
            strcat(b, ".0");
        }
    }
    fputs(b, fp);
}

static void yaml_scalar(FILE *fp, json_t *v) {
    switch (json_typeof(v)) {
    case JSON_STRING: {
        char *s = json_dumps(v, JSON_ENCODE_ANY);
        fputs(s ? s : "\"\"", fp);
        free(s);
        break;
    }
    case JSON_INTEGER:
        fprintf(fp, "%lld", (long long)json_integer_value(v));
        break;
    case JSON_REAL: yaml_real(fp, json_real_value(v)); break;
    case JSON_TRUE: fputs("true", fp); break;
    case JSON_FALSE: fputs("false", fp); break;
    default: fputs("null", fp); break;
    }
}

static bool is_container(json_t *v) {
    return (json_is_object(v) && json_object_size(v) > 0) ||
           (json_is_array(v) && json_array_size(v) > 0);
}

static void yaml_value(FILE *fp, json_t *v, int indent);

static void yaml_object(FILE *fp, json_t *o, int indent, bool first_inline) {
    const char *k;
    json_t *v;
    bool first = true;
    json_object_foreach(o, k, v) {
        if (!(first && first_inline)) fprintf(fp, "%*s", indent, "");
        first = false;
        fprintf(fp, "%s:", k);
        if (is_container(v)) {
            fputc('\n', fp);
            yaml_value(fp, v, indent + 2);
        } else {
            fputc(' ', fp);
            if (json_is_object(v))
                fputs("{}", fp);
            else if (json_is_array(v))
                fputs("[]", fp);
            else
                yaml_scalar(fp, v);
            fputc('\n', fp);
        }
    }
}

static void yaml_value(FILE *fp, json_t *v, int indent) {
    if (json_is_object(v)) {
        yaml_object(fp, v, indent, false);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            fprintf(fp, "%*s- ", indent, "");
            if (json_is_object(x) && json_object_size(x) > 0)
                yaml_object(fp, x, indent + 2, true);
            else if (is_container(x)) {
                fputc('\n', fp);
                yaml_value(fp, x, indent + 2);
            } else {
                yaml_scalar(fp, x);
                fputc('\n', fp);
            }
        }
    }
}

/* ------------------------------------------------------------------------
 * The table.
 * ---------------------------------------------------------------------- */
static void short_layout(const pp_plan *p, const pp_plan_candidate *c, char *b,
                         size_t len) {
    static const char *const rc[] = {"none", "sel", "full"};
    /* Recompute modules as attn, ln, act, mlp, moe, shr (shared experts)
     * and up (MLA's up projections) joined by '+'. */
    char mods[40] = "";
    if (c->par.recompute_mods) {
        static const char *const ab[] = {"ln",  "act", "mlp",
                                         "moe", "shr", "up"};
        size_t k = 0;
        if (c->par.recompute == PP_RECOMPUTE_SELECTIVE)
            k += (size_t)snprintf(mods, sizeof mods, "attn");
        for (int i = 0; i < 6; i++)
            if (c->par.recompute_mods & (1u << i) && k < sizeof mods)
                k += (size_t)snprintf(mods + k, sizeof mods - k, "%s%s",
                                      k ? "+" : "", ab[i]);
    }
    int n = snprintf(b, len, "tp%lld pp%lld dp%lld mb%lld vp%lld %s %s z%d %s",
                     (long long)c->par.tp, (long long)c->par.pp,
                     (long long)c->par.dp, (long long)c->par.mbs,
                     (long long)c->par.vp, c->par.sp ? "sp" : "--",
                     mods[0] ? mods : rc[c->par.recompute], c->par.zero,
                     c->dp_overlap ? "ov" : "--");
    if (c->par.dtype == PP_PREC_FP8 && n >= 0 && (size_t)n < len)
        n += snprintf(b + n, len - (size_t)n, " fp8");
    if (c->par.dtype == PP_PREC_FP4 && n >= 0 && (size_t)n < len)
        n += snprintf(b + n, len - (size_t)n, " fp4");
    if (c->par.offload > 0 && n >= 0 && (size_t)n < len)
        n += snprintf(b + n, len - (size_t)n, " off%lld",
                      (long long)c->par.offload);
    if (c->par.a2a_overlap && n >= 0 && (size_t)n < len)
        n += snprintf(b + n, len - (size_t)n, " a2a");
    /* An uneven split as layers on the first/a middle/the last stage. */
    if (pp_parallel_uneven(&c->par) && n >= 0 && (size_t)n < len) {
        const pp_parallel *q = &c->par;
        int64_t mid =
            q->pp > 2 ? pp_parallel_stage_layers(q, &p->model, 1) : -1;
        if (mid >= 0)
            snprintf(
                b + n, len - (size_t)n, " %lld/%lld/%lld",
                (long long)pp_parallel_stage_layers(q, &p->model, 0),
                (long long)mid,
                (long long)pp_parallel_stage_layers(q, &p->model, q->pp - 1));
        else
            snprintf(b + n, len - (size_t)n, " %lld/%lld",
                     (long long)pp_parallel_stage_layers(q, &p->model, 0),
                     (long long)pp_parallel_stage_layers(q, &p->model, 1));
    }
    /* Context and expert parallelism where set; CP's exchange when it is
     * not the ring (ag: all-gather, a2a: all-to-all, AxR: a2a+p2p's
     * levels, Megatron-core's hierarchical sizes). */
    size_t k = strlen(b);
    if (c->par.cp > 1 && k < len) {
        const pp_parallel *q = &c->par;
        k += (size_t)snprintf(b + k, len - k, " cp%lld", (long long)q->cp);
        if (q->cp_comm == PP_CPCOMM_A2A_P2P && k < len)
            k += (size_t)snprintf(b + k, len - k, "(%lldx%lld)",
                                  (long long)pp_parallel_cp_a2a(q),
                                  (long long)pp_parallel_cp_ring(q));
        else if (q->cp_comm != PP_CPCOMM_P2P && k < len)
            k += (size_t)snprintf(b + k, len - k, "(%s)",
                                  q->cp_comm == PP_CPCOMM_A2A ? "a2a" : "ag");
    }
    if (c->par.ep > 1 && k < len)
        k += (size_t)snprintf(b + k, len - k, " ep%lld", (long long)c->par.ep);
    if (c->par.etp > 0 && k < len)
        snprintf(b + k, len - k, " etp%lld", (long long)c->par.etp);
}

static void write_table(const pp_plan *p, bool timing, FILE *fp) {
    const pp_plan_options *o = &p->opt;
    const pp_plan_stats *st = &p->st;
    char b1[48], b2[48];
    fprintf(fp, "podplan plan: %s on %s (%s), ", p->model.name, p->cluster_name,
            p->gpu.name);
    if (o->gpus)
        fprintf(fp, "%lld GPUs", (long long)o->gpus);
    else
        fprintf(fp, "%lld to %lld GPUs of %d", (long long)st->gpus_min,
                (long long)st->gpus_max, p->cluster_gpus);
    fprintf(fp, ", global batch %lld\n", (long long)st->gbs);
    char note[256];
    fprintf(fp, "profile: %s\n", pp__plan_profile_note(p, note, sizeof note));
    fprintf(fp, "stack: %s%s\n", p->profile.stack,
            p->profile.stack_default ? " (the GPU's default; --stack to change)"
                                     : "");
    /* Said only when asked for, as simulate does. */
    if (p->opt.optimizer != PP_OPT_ADAM_MIXED)
        fprintf(fp, "optimizer: %s\n", pp_optimizer_name(p->opt.optimizer));
    fprintf(fp, "objective: %s", pp__objective_name(o->objective));
    if (o->objective == PP_PLAN_OBJ_COST && p->has_prices)
        fprintf(fp, " ($%.3g per GPU-hour%s)", p->prices.usd_per_gpu_hour,
                o->tokens > 0 ? ", per trained model" : ", per iteration");
    fprintf(fp, "; memory limit %s per GPU (%s less %g%%); ranks %s%s\n",
            pp_unit_format(p->gpu.hbm_bytes * (1 - o->memory_reserve),
                           PP_Q_BYTES, 4, b1, sizeof b1),
            pp_unit_format(p->gpu.hbm_bytes, PP_Q_BYTES, 4, b2, sizeof b2),
            o->memory_reserve * 100,
            p->n_placements > 1 ? "tp,pp,dp and tp,dp,pp searched"
                                : pp__placement_name(p->placements[0]),
            p->n_placements > 1 ? " (the ranks column)" : "");
    fprintf(fp, "layouts: %llu considered, %llu feasible",
            (unsigned long long)st->considered,
            (unsigned long long)st->feasible);
    if (timing)
        fprintf(fp, " (search %.3f s, %.0f per second)", st->search_s,
                st->search_s > 0 ? (double)st->considered / st->search_s : 0);
    fputc('\n', fp);
    fprintf(fp, "rejected:");
    bool any = false;
    for (int r = 0; r < PP_PLAN_REJECT__COUNT; r++)
        if (st->rejected[r]) {
            fprintf(fp, "%s %s %llu", any ? "," : "",
                    pp_plan_reject_name((pp_plan_reject)r),
                    (unsigned long long)st->rejected[r]);
            any = true;
        }
    fprintf(fp, "%s\n", any ? "" : " none");
    if (o->top > 0) {
        if (p->n_placements > 1)
            fprintf(fp,
                    "simulated: the best %d of ranks tp,pp,dp and the "
                    "best %d of tp,dp,pp by the estimate, at %s fidelity, "
                    "%llu succeeded",
                    o->top, (o->top + 1) / 2, fidelity_name(o->fidelity),
                    (unsigned long long)st->simulated);
        else
            fprintf(fp,
                    "simulated: the best %d by the estimate at %s "
                    "fidelity, %llu succeeded",
                    o->top, fidelity_name(o->fidelity),
                    (unsigned long long)st->simulated);
        if (timing) fprintf(fp, " (%.2f s)", st->simulate_s);
        fputc('\n', fp);
        if (st->over_budget) {
            /* The budget as it is usually written: 5e7, 1.5e8. */
            int x = (int)floor(log10(o->a2a_budget));
            fprintf(fp,
                    "not simulated: %llu layout%s above them whose "
                    "all-to-alls start over %.3ge%d transfers per iteration "
                    "(--a2a-budget), ranked by the estimate\n",
                    (unsigned long long)st->over_budget,
                    st->over_budget == 1 ? "" : "s",
                    o->a2a_budget / pow(10.0, x), x);
        }
        if (st->sim_error[0])
            fprintf(fp,
                    "warning: simulation failed, ranked by the estimate: "
                    "%s\n",
                    st->sim_error);
    } else {
        fprintf(fp, "ranked by the closed-form estimate alone (--top 0)\n");
    }

    bool days = o->tokens > 0, cost = p->has_prices;
    size_t show = (size_t)(o->show > 0 ? o->show : 10);
    int w = 36; /* wider only when an uneven split is listed */
    for (size_t i = 0; i < p->n && i < show; i++) {
        char lay[96];
        short_layout(p, &p->cand[i], lay, sizeof lay);
        if ((int)strlen(lay) > w) w = (int)strlen(lay);
    }
    fprintf(fp, "\n %3s  %-*s %-8s %9s %8s %7s %6s %9s %8s %7s %7s %7s %7s %7s",
            "#", w, "layout", "ranks", "iter s", "est s", "TFLOP/s", "MFU",
            "memory", "compute", "TP", "PP", "DP exp", "bubble", "other");
    if (days) fprintf(fp, " %8s", "days");
    if (cost) fprintf(fp, " %10s", "cost $");
    fputc('\n', fp);
    for (size_t i = 0; i < p->n && i < show; i++) {
        const pp_plan_candidate *c = &p->cand[i];
        const pp_breakdown *b = &c->breakdown;
        char lay[96], mem[48];
        short_layout(p, c, lay, sizeof lay);
        fprintf(fp,
                " %3zu  %-*s %-8s %8.4g%s %8.4g %7.1f %5.1f%% %9s %8.3g "
                "%7.3g %7.3g %7.3g %7.3g %7.3g",
                i + 1, w, lay, pp__placement_name(c->placement),
                c->iteration_time_s, c->simulated ? " " : "*", c->est_time_s,
                c->tflops_per_gpu, 100 * c->mfu,
                pp_unit_format(c->memory.total, PP_Q_BYTES, 3, mem, sizeof mem),
                b->compute_s, b->tp_comm_s, b->pp_comm_s, b->dp_comm_exposed_s,
                b->bubble_s, b->other_s);
        if (days) fprintf(fp, " %8.3g", c->training_days);
        if (cost) fprintf(fp, " %10.4g", c->cost_usd);
        fputc('\n', fp);
    }
    fprintf(fp, "\n(* estimated, not simulated; times in seconds per "
                "iteration; layout: tp pp dp, micro-batch, interleaving, "
                "sp, recompute, ZeRO stage, DP overlap[, layers on the first/"
                "a middle/the last stage when uneven]; ranks: the rank order, "
                "innermost first)\n");
    if (p->n > 1) {
        fprintf(fp, "\nwhy each loses to #1:\n");
        for (size_t i = 1; i < p->n && i < show; i++) {
            char why[256];
            fprintf(fp, " %3zu  %+.1f%%: %s\n", i + 1,
                    100.0 * (p->cand[i].score / p->cand[0].score - 1.0),
                    pp__plan_why(p, i, why, sizeof why));
        }
    }
    char spec[PP_SPEC_MAX];
    const pp_plan_candidate *best = &p->cand[0];
    fprintf(fp, "\nbest: %s%s, ranks %s\n",
            pp_parallel_format(&best->par, spec, sizeof spec),
            best->dp_overlap ? " with DP overlap" : "",
            pp__placement_name(best->placement));
    fprintf(
        fp, "      %s per GPU of %s usable",
        pp_unit_format(best->memory.total, PP_Q_BYTES, 4, b1, sizeof b1),
        pp_unit_format(best->memory_limit_bytes, PP_Q_BYTES, 4, b2, sizeof b2));
    if (days)
        fprintf(fp, "; %.1f days for %.3g tokens", best->training_days,
                o->tokens);
    if (cost) fprintf(fp, "; $%.4g", best->cost_usd);
    fputc('\n', fp);
}

/* ------------------------------------------------------------------------
 * Dispatch.
 * ---------------------------------------------------------------------- */
int pp_plan_write(const pp_plan *p, pp_plan_format f, bool timing, FILE *fp,
                  pp_error *e) {
    if (p->n == 0)
        return pp_error_set(e, PP_EINFEASIBLE, "the plan has no candidate");
    switch (f) {
    case PP_PLAN_FMT_TABLE: write_table(p, timing, fp); return 0;
    case PP_PLAN_FMT_JSON:
    case PP_PLAN_FMT_YAML: {
        json_t *j = pp__plan_json(p, timing);
        if (f == PP_PLAN_FMT_JSON) {
            /* The CLI's settings (cli/output.c): insertion order and a
             * fixed precision make the output byte-identical across runs. */
            char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                        JSON_REAL_PRECISION(12));
            if (!s) {
                json_decref(j);
                return pp_error_set(e, PP_EINTERNAL, "cannot encode JSON");
            }
            fputs(s, fp);
            fputc('\n', fp);
            free(s);
        } else {
            fprintf(fp, "# podplan plan: %s on %s\n", p->model.name,
                    p->cluster_name);
            yaml_value(fp, j, 0);
        }
        json_decref(j);
        return 0;
    }
    case PP_PLAN_FMT_MEGATRON: return pp__write_megatron(p, fp, e);
    case PP_PLAN_FMT_NEMO: return pp__write_nemo(p, fp, e);
    case PP_PLAN_FMT_DEEPSPEED: return pp__write_deepspeed(p, fp, e);
    case PP_PLAN_FMT_NEMO2: return pp__write_nemo2(p, fp, e);
    default:
        return pp_error_set(e, PP_EINVAL, "unknown plan format %d", (int)f);
    }
}

const char *pp__plan_profile_note(const pp_plan *p, char *buf, size_t len) {
    if (p->profile.calibrated[0])
        snprintf(buf, len, "%s (calibrated: %s)", p->profile.name,
                 p->profile.calibrated);
    else
        snprintf(buf, len, "%s (uncalibrated: published figures)",
                 p->profile.name);
    return buf;
}
