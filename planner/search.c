/*
 * planner/search.c: enumerate -> prune (memory) -> estimate -> simulate
 * the best K -> rank.
 *
 * Every layout the rules allow (space.c) is sized with the models layer's
 * memory per GPU (pp_memory_per_gpu, the first pipeline stage) against the
 * GPU's HBM less the reserve, scored by the closed-form estimator
 * (estimate.c) and kept.  The best K by the estimated objective are then
 * simulated (pp_step_simulate, flow fidelity by default) and the ranking
 * puts them first, by their simulated objective.
 */
#include "planner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *const reject_names[] = {
#define PP__XX(id, name, why) name,
    PP_PLAN_REJECT_MAP(PP__XX)
#undef PP__XX
};
static const char *const reject_whys[] = {
#define PP__XX(id, name, why) why,
    PP_PLAN_REJECT_MAP(PP__XX)
#undef PP__XX
};

const char *pp_plan_reject_name(pp_plan_reject r) {
    return (unsigned)r < PP_PLAN_REJECT__COUNT ? reject_names[r] : "?";
}

const char *pp_plan_reject_why(pp_plan_reject r) {
    return (unsigned)r < PP_PLAN_REJECT__COUNT ? reject_whys[r] : "?";
}

/* The two placements a plan can use (pp_plan_estimator_placement). */
const char *pp__placement_name(const char order[3]) {
    return order[1] == 'd' ? "tp,dp,pp" : "tp,pp,dp";
}

const char *pp__objective_name(pp_plan_objective o) {
    switch (o) {
    case PP_PLAN_OBJ_TRAIN: return "time to train";
    case PP_PLAN_OBJ_COST: return "cost";
    default: return "iteration time";
    }
}

void pp_plan_options_init(pp_plan_options *o) {
    memset(o, 0, sizeof *o);
    o->top = 10;
    o->show = -1;
    o->fidelity = PP_FIDELITY_FLOW;
    o->a2a_budget = PP_PLAN_A2A_BUDGET;
    o->memory_reserve = 0.10;
    o->objective = PP_PLAN_OBJ_TIME;
    o->optimizer = PP_OPT_ADAM_MIXED;
    o->target = PP_PLAN_TARGET_ANY;
    /* Zero: both placements are searched. */
    memset(o->placement, 0, sizeof o->placement);
    pp_plan_filter_init(&o->filter);
}

/* ------------------------------------------------------------------------
 * The walk's visitor: memory, then the estimator.
 * ---------------------------------------------------------------------- */
typedef struct visit {
    pp_plan *plan;
    pp_plan_estimator *est;
    const pp_model *m;
    double limit; /* bytes usable per GPU */
    /* The closest layout that did not fit. */
    bool have_closest;
    pp_parallel closest;
    bool closest_overlap;
    double closest_total;
    /* Memory-only walks (suggestions) stop at the first fit. */
    bool memory_only;
    bool found;
    pp_parallel fit;
} visit;

static int visit_fn(void *ctx, const pp_parallel *p, bool overlap,
                    pp_error *e) {
    visit *v = ctx;
    pp_plan *plan = v->plan;
    pp_memory mem;
    int rc = pp_memory_per_gpu(v->m, p, plan->opt.optimizer, &mem, e);
    if (rc < 0) return rc;
    /* The placements differ only when both PP and DP are above 1 (with
     * either at 1 the two orders number the ranks alike): one candidate
     * per placement then, one otherwise.  Memory is the same under both. */
    int nvar = p->pp > 1 && p->dp > 1 ? plan->n_placements : 1;
    if (mem.total > v->limit) {
        if (!v->memory_only)
            plan->st.rejected[PP_PLAN_REJECT_MEMORY] += (uint64_t)nvar;
        if (!v->have_closest || mem.total < v->closest_total) {
            v->have_closest = true;
            v->closest = *p;
            v->closest_overlap = overlap;
            v->closest_total = mem.total;
        }
        return 0;
    }
    if (v->memory_only) {
        v->found = true;
        v->fit = *p;
        return 1;
    }
    if (p->recompute_mods && !plan->opt.filter.fixed[PP_PLAN_DIM_RECOMPUTE]) {
        /* A searched module set only where every set with one module
         * fewer runs out of memory: a module recomputes, so the smaller
         * set that fits is faster (and as cheap) under every objective. */
        for (unsigned b = 1; b <= p->recompute_mods; b <<= 1) {
            if (!(p->recompute_mods & b)) continue;
            pp_parallel q = *p;
            pp_memory mq;
            q.recompute_mods = (uint8_t)(p->recompute_mods & ~b);
            if ((rc = pp_memory_per_gpu(v->m, &q, plan->opt.optimizer, &mq,
                                        e)) < 0)
                return rc;
            if (mq.total <= v->limit) {
                plan->st.rejected[PP_PLAN_REJECT_RECOMPUTE] += (uint64_t)nvar;
                return 0;
            }
        }
    }
    for (int k = 0; k < nvar; k++) {
        if (plan->n == plan->cap) {
            plan->cap = plan->cap ? 2 * plan->cap : 1024;
            plan->cand =
                pp_xrealloc(plan->cand, plan->cap * sizeof *plan->cand);
        }
        pp_plan_candidate *c = &plan->cand[plan->n];
        memset(c, 0, sizeof *c);
        c->par = *p;
        c->dp_overlap = overlap;
        memcpy(c->placement, plan->placements[k], 3);
        c->gpus = pp_parallel_gpus(p);
        c->memory = mem;
        c->memory_limit_bytes = v->limit;
        /* Setting the order is a copy; the estimator's layer-cost cache
         * does not depend on it. */
        if ((rc = pp_plan_estimator_placement(v->est, c->placement, e)) < 0 ||
            (rc = pp__plan_estimate(v->est, p, overlap, &c->est_time_s, &c->est,
                                    &c->a2a_transfers, e)) < 0)
            return rc;
        plan->n++;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Metrics and ranking.
 * ---------------------------------------------------------------------- */
typedef struct flops_cache {
    double hw[3], model[3];
} flops_cache;

static void metrics(const pp_plan *plan, const flops_cache *fc,
                    pp_plan_candidate *c) {
    const pp_plan_options *o = &plan->opt;
    double T = c->simulated ? c->sim_time_s : c->est_time_s;
    double n = (double)c->gpus;
    c->iteration_time_s = T;
    c->breakdown = c->simulated ? c->sim : c->est;
    double hw = fc->hw[c->par.recompute] +
                pp_flops_recompute_mods(&plan->model, c->par.gbs,
                                        c->par.recompute_mods);
    c->tflops_per_gpu = hw / (n * T) / 1e12;
    c->mfu = plan->peak_flops > 0
                 ? fc->model[c->par.recompute] / (n * T * plan->peak_flops)
                 : NAN;
    double seq = plan->model.seq > 0 ? (double)plan->model.seq : 1.0;
    double iters = o->tokens > 0 ? o->tokens / ((double)c->par.gbs * seq) : NAN;
    c->training_days = o->tokens > 0 ? iters * T / 86400.0 : NAN;
    c->cost_usd = NAN;
    if (plan->has_prices) {
        double per_iter = plan->prices.usd_per_gpu_hour * n * T / 3600.0;
        c->cost_usd = o->tokens > 0 ? per_iter * iters : per_iter;
    }
    switch (o->objective) {
    case PP_PLAN_OBJ_TRAIN: c->score = c->training_days; break;
    case PP_PLAN_OBJ_COST: c->score = c->cost_usd; break;
    default: c->score = T; break;
    }
    /* Late layouts after every punctual one, the least late first: no
     * score of a punctual layout (seconds, days or dollars) comes near
     * 1e30. */
    if (o->deadline_days > 0 && c->training_days > o->deadline_days)
        c->score = 1e30 * (1 + c->training_days);
}

/* A total order on layouts, so that ties rank the same way every run. */
static int cmp_layout(const pp_plan_candidate *a, const pp_plan_candidate *b) {
    const pp_parallel *x = &a->par, *y = &b->par;
#define CMP(f)                                                                 \
    if (x->f != y->f) return x->f < y->f ? -1 : 1
    CMP(tp);
    CMP(pp);
    CMP(dp);
    CMP(mbs);
    CMP(vp);
    CMP(sp);
    CMP(recompute);
    CMP(zero);
    CMP(dtype);
    CMP(first);
    CMP(last);
    CMP(cp);
    CMP(cp_comm);
    CMP(cp_a2a);
    CMP(ep);
    CMP(etp);
    CMP(recompute_mods);
    CMP(a2a_overlap);
    CMP(offload);
#undef CMP
    if (a->dp_overlap != b->dp_overlap)
        return (int)a->dp_overlap - (int)b->dp_overlap;
    /* tp,pp,dp before tp,dp,pp */
    return (a->placement[1] == 'd') - (b->placement[1] == 'd');
}

static int cmp_rank(const void *pa, const void *pb) {
    const pp_plan_candidate *a = pa, *b = pb;
    if (a->simulated != b->simulated) return a->simulated ? -1 : 1;
    if (a->score != b->score) return a->score < b->score ? -1 : 1;
    return cmp_layout(a, b);
}

/* Ranks by the estimator only (simulated flags are all false then). */
static int cmp_est(const void *pa, const void *pb) {
    const pp_plan_candidate *a = pa, *b = pb;
    if (a->score != b->score) return a->score < b->score ? -1 : 1;
    return cmp_layout(a, b);
}

/* ------------------------------------------------------------------------
 * No feasible layout: what came closest and what would make it fit.
 * ---------------------------------------------------------------------- */
static void suggest_variants(const visit *v, const pp_model *m,
                             pp_optimizer opt, pp_plan_target target, char *buf,
                             size_t len) {
    /* Apply the memory savers one after another, cheapest first, and say
     * which combination is the first to fit. */
    pp_parallel p = v->closest;
    char done[160] = "";
    for (int step = 0; step < 5; step++) {
        char what[48] = "";
        /* Offloading excludes recomputation (Megatron-core). */
        if (step == 0 && p.recompute != PP_RECOMPUTE_FULL && !p.offload) {
            p.recompute = PP_RECOMPUTE_FULL;
            p.recompute_mods = 0;
            snprintf(what, sizeof what, "full recomputation");
        } else if (step == 1 && p.tp > 1 && !p.sp &&
                   target != PP_PLAN_TARGET_DEEPSPEED) {
            p.sp = true;
            snprintf(what, sizeof what, "sequence parallelism");
        } else if (step == 2 && p.mbs > 1) {
            p.mbs = 1;
            snprintf(what, sizeof what, "micro-batch 1");
        } else if (step >= 3 && p.dp > 1) {
            int z = step == 3 ? 1 : 3;
            if (target != PP_PLAN_TARGET_ANY && z > 1) continue;
            if (p.zero >= z) continue;
            p.zero = z;
            snprintf(what, sizeof what, "ZeRO-%d", z);
        } else {
            continue;
        }
        size_t u = strlen(done);
        snprintf(done + u, sizeof done - u, "%s%s", u ? " + " : "", what);
        pp_memory mem;
        if (pp_memory_per_gpu(m, &p, opt, &mem, NULL) == 0 &&
            mem.total <= v->limit) {
            snprintf(
                buf, len, "; with %s it would fit (%s)", done,
                pp_unit_format(mem.total, PP_Q_BYTES, 4, (char[48]){0}, 48));
            return;
        }
    }
    if (done[0])
        snprintf(buf, len, "; even with %s it does not fit", done);
    else
        buf[0] = '\0';
}

static int infeasible(pp_plan *plan, visit *v, const pp__space *sp,
                      pp_error *e) {
    const pp_plan_stats *st = &plan->st;
    char counts[512] = "";
    for (int r = 0; r < PP_PLAN_REJECT__COUNT; r++) {
        if (!st->rejected[r]) continue;
        size_t u = strlen(counts);
        snprintf(counts + u, sizeof counts - u, "%s%s %llu", u ? ", " : "",
                 reject_names[r], (unsigned long long)st->rejected[r]);
    }
    if (!v->have_closest)
        return pp_error_set(e, PP_EINFEASIBLE,
                            "no layout satisfies the rules for %s on %s%lld "
                            "GPUs with global batch %lld (rejected: %s)",
                            plan->model.name, sp->gpus ? "" : "up to ",
                            (long long)(sp->gpus ? sp->gpus : sp->cluster_gpus),
                            (long long)sp->gbs, counts[0] ? counts : "none");
    char spec[PP_SPEC_MAX], need[48], have[48], short_[48], hbm[48], fix[256];
    pp_parallel_format(&v->closest, spec, sizeof spec);
    pp_unit_format(v->closest_total, PP_Q_BYTES, 4, need, sizeof need);
    pp_unit_format(v->limit, PP_Q_BYTES, 4, have, sizeof have);
    pp_unit_format(v->closest_total - v->limit, PP_Q_BYTES, 4, short_,
                   sizeof short_);
    pp_unit_format(plan->gpu.hbm_bytes, PP_Q_BYTES, 4, hbm, sizeof hbm);
    suggest_variants(v, &plan->model, plan->opt.optimizer, sp->target, fix,
                     sizeof fix);

    /* The fewest GPUs on this cluster with a layout that fits, same batch
     * and pins, in whole servers as one would buy them: doubling, then
     * bisection (memory per GPU falls as GPUs are added, give or take
     * divisibility, so this finds the smallest count or one close to it). */
    char more[320] = "";
    visit mv = *v;
    mv.memory_only = true;
    pp__space s2 = *sp;
    s2.rejected = NULL;
    int64_t gpn = sp->gpus_per_node, maxk = sp->cluster_gpus / gpn;
    int64_t k0 = (sp->gpus > 0 ? sp->gpus : 0) / gpn; /* known not to fit */
    int64_t lo = k0, hi = -1;
    pp_parallel fit;
    for (int64_t k = k0 > 0 ? 2 * k0 : 1;;) {
        if (k > maxk) k = maxk;
        if (k <= lo) break;
        s2.gpus = k * gpn;
        mv.found = false;
        if (pp__space_walk(&s2, visit_fn, &mv, NULL) < 0) break;
        if (mv.found) {
            hi = k;
            fit = mv.fit;
            break;
        }
        lo = k;
        if (k == maxk) break;
        k *= 2;
    }
    while (hi > 0 && hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        s2.gpus = mid * gpn;
        mv.found = false;
        if (pp__space_walk(&s2, visit_fn, &mv, NULL) < 0) break;
        if (mv.found) {
            hi = mid;
            fit = mv.fit;
        } else
            lo = mid;
    }
    if (hi > 0) {
        char fspec[256]; /* a searched layout: no layout= */
        pp_parallel_format(&fit, fspec, sizeof fspec);
        snprintf(more, sizeof more,
                 "; it fits on %lld GPUs of this cluster (e.g. %s)",
                 (long long)(hi * gpn), fspec);
    } else if (sp->gpus < sp->cluster_gpus) {
        snprintf(more, sizeof more,
                 "; no GPU count up to the cluster's %lld fits: it needs "
                 "GPUs with more memory or a larger cluster",
                 (long long)sp->cluster_gpus);
    }
    return pp_error_set(e, PP_EINFEASIBLE,
                        "no feasible layout for %s on %lld GPUs: the closest, "
                        "%s, needs %s per GPU against %s usable (%s HBM less "
                        "%g%% reserve): %s short%s%s (rejected: %s)",
                        plan->model.name,
                        (long long)(sp->gpus ? sp->gpus : sp->cluster_gpus),
                        spec, need, have, hbm, plan->opt.memory_reserve * 100.0,
                        short_, fix, more, counts);
}

/* ------------------------------------------------------------------------
 * The search.
 * ---------------------------------------------------------------------- */
static int check_options(const pp_model *m, const pp_cluster_info *info,
                         const pp_plan_options *o, int64_t *gbs, pp_error *e) {
    if (o->gpus < 0)
        return pp_error_set(e, PP_EUSAGE,
                            "--gpus: expected a positive "
                            "integer, got %lld",
                            (long long)o->gpus);
    if (o->gpus > info->gpus)
        return pp_error_set(e, PP_EUSAGE,
                            "--gpus: %lld is more than the %d GPUs of "
                            "cluster %s",
                            (long long)o->gpus, info->gpus, info->name);
    if (o->gbs < 0)
        return pp_error_set(e, PP_EUSAGE,
                            "--global-batch: expected a "
                            "positive integer, got %lld",
                            (long long)o->gbs);
    if (o->top < 0)
        return pp_error_set(e, PP_EUSAGE,
                            "--top: expected 0 or more, got "
                            "%d",
                            o->top);
    if (!(o->a2a_budget >= 0 && isfinite(o->a2a_budget)))
        return pp_error_set(e, PP_EUSAGE,
                            "--a2a-budget: expected 0 (no limit) or a "
                            "positive number of transfers, got %g",
                            o->a2a_budget);
    if (!(o->memory_reserve >= 0 && o->memory_reserve < 1))
        return pp_error_set(e, PP_EUSAGE,
                            "--memory-reserve: expected a "
                            "fraction in [0, 1), got %g",
                            o->memory_reserve);
    if (o->objective == PP_PLAN_OBJ_TRAIN && !(o->tokens > 0))
        return pp_error_set(e, PP_EUSAGE, "--objective train needs --tokens");
    if (o->objective == PP_PLAN_OBJ_COST && !o->prices)
        return pp_error_set(e, PP_EUSAGE,
                            "--objective cost needs the cluster's prices");
    const pp_plan_filter *f = &o->filter;
    int64_t b = o->gbs;
    if (f->fixed[PP_PLAN_DIM_GBS]) {
        if (b && b != f->value[PP_PLAN_DIM_GBS])
            return pp_error_set(e, PP_EUSAGE,
                                "--fix gbs=%lld contradicts --global-batch "
                                "%lld",
                                (long long)f->value[PP_PLAN_DIM_GBS],
                                (long long)b);
        b = f->value[PP_PLAN_DIM_GBS];
    }
    if (!b) b = o->gpus ? o->gpus : info->gpus;
    if (m->arch == PP_ARCH_TRANSFORMER && (m->layers < 1 || m->heads < 1))
        return pp_error_set(e, PP_EINPUT, "model %s has no layers or heads",
                            m->name);
    *gbs = b;
    return 0;
}

/* The rank orders to search: the pinned one, or both.  DeepSpeed's
 * pipeline engine lays ranks out model (TP) innermost, then data, then
 * pipe (PipeModelDataParallelTopology), and NeMo 2.0's MegatronStrategy
 * has no argument for another order than Megatron-core's default
 * (tp-cp-ep-dp-pp; nemo/lightning/pytorch/strategies/megatron_strategy.py
 * takes none): those targets get tp,dp,pp only. */
static int placements_of(const pp_plan_options *o, pp_plan *plan, pp_error *e) {
    bool fixed_tdp = o->target == PP_PLAN_TARGET_DEEPSPEED ||
                     o->target == PP_PLAN_TARGET_NEMO2;
    if (o->placement[0]) {
        if (o->placement[0] != 't' ||
            !((o->placement[1] == 'p' && o->placement[2] == 'd') ||
              (o->placement[1] == 'd' && o->placement[2] == 'p')))
            return pp_error_set(e, PP_EUSAGE,
                                "--placement: expected tp,pp,dp or tp,dp,pp");
        if (fixed_tdp && o->placement[1] != 'd')
            return pp_error_set(e, PP_EUSAGE,
                                "--placement %s: %s places ranks tp,dp,pp",
                                pp__placement_name(o->placement),
                                o->target == PP_PLAN_TARGET_DEEPSPEED
                                    ? "DeepSpeed's pipeline engine"
                                    : "NeMo 2.0's MegatronStrategy");
        memcpy(plan->placements[0], o->placement, 3);
        plan->n_placements = 1;
    } else if (fixed_tdp) {
        memcpy(plan->placements[0], "tdp", 3);
        plan->n_placements = 1;
    } else {
        memcpy(plan->placements[0], "tpd", 3);
        memcpy(plan->placements[1], "tdp", 3);
        plan->n_placements = 2;
    }
    return 0;
}

int pp_plan_search(const pp_model *m, const pp_cluster *c,
                   const pp_plan_options *o, pp_plan **out, pp_error *e) {
    const pp_cluster_info *info = pp_cluster_info_get(c);
    pp_plan_estimator *est = NULL;
    pp_plan *plan = NULL;
    int64_t gbs = 0;
    int rc;

    if ((rc = pp_model_validate(m, e)) < 0) return rc;
    if ((rc = check_options(m, info, o, &gbs, e)) < 0) return rc;

    plan = pp_xcalloc(1, sizeof *plan);
    plan->model = *m;
    snprintf(plan->cluster_name, sizeof plan->cluster_name, "%s", info->name);
    plan->gpu = *info->gpu;
    plan->gpus_per_node = info->gpus_per_node;
    plan->cluster_gpus = info->gpus;
    plan->opt = *o;
    if ((rc = placements_of(o, plan, e)) < 0) goto fail;
    if (plan->opt.show < 0) plan->opt.show = o->top > 10 ? o->top : 10;
    if (o->prices) {
        plan->prices = *o->prices;
        plan->has_prices = true;
    }
    plan->opt.prices = plan->has_prices ? &plan->prices : NULL;
    if (o->profile)
        plan->profile = *o->profile;
    else if ((rc = pp_profile_load(NULL, info->gpu, &plan->profile, e)) < 0)
        goto fail;
    plan->opt.profile = &plan->profile;
    if ((rc = pp_stack_optimizer_check(&plan->profile.sw, o->optimizer, e)) < 0)
        goto fail;
    if (o->optimizer == PP_OPT_ADAM_BF16_MOMENTS && plan->gpu.fp16_only) {
        rc = pp_error_set(e, PP_EUSAGE,
                          "--optimizer %s: needs bf16 weights, and %s "
                          "trains in fp16",
                          pp_optimizer_name(o->optimizer), plan->gpu.name);
        goto fail;
    }
    plan->peak_flops = plan->profile.peak_flops > 0
                           ? plan->profile.peak_flops
                           : info->gpu->peak_flops[PP_DTYPE_BF16];
    plan->st.gbs = gbs;

    pp__space sp = {
        .m = m,
        .gpus_per_node = info->gpus_per_node,
        .cluster_gpus = info->gpus,
        .gpus = o->gpus,
        .gbs = gbs,
        .cross_node_tp = o->allow_cross_node_tp,
        .uneven = o->uneven,
        .target = o->target,
        .filter = &plan->opt.filter,
        .rejected = plan->st.rejected,
        .flash = plan->profile.flash_attention,
        .deepep = plan->profile.sw.moe_deepep,
        .hybridep = plan->profile.sw.moe_hybridep,
        .permute_unfused = plan->profile.sw.moe_permute_unfused,
        .a2a = plan->profile.sw.moe_a2a_overlap,
        /* A stack whose recipe needs MXFP8 tensor cores trains in FP8
         * only on a GPU with them, unless another recipe is pinned. */
        .fp8 = plan->profile.fp8 && plan->profile.fp8_peak_flops > 0 &&
               (plan->profile.sw.fp8_recipe != PP_FP8_MXFP8 ||
                plan->profile.mxfp8 || plan->opt.filter.fixed[PP_PLAN_DIM_FP8]),
        .fp4 = plan->profile.sw.fp4 && plan->profile.fp4_peak_flops > 0,
        .fp8_recipe = plan->profile.sw.fp8_recipe,
        .mxfp8 = plan->profile.mxfp8,
        .fp8_attn = pp_profile_fp8_attn(&plan->profile),
        .fp8_any_layout = plan->profile.fp8_any_layout,
        .recompute_mask =
            plan->profile.stack_default ? 0 : plan->profile.sw.recompute,
        .stack = plan->profile.stack,
        /* Megatron-core's precision-aware optimizer lives in its
         * distributed optimizer (pp_optimizer_check). */
        .zero_min = o->optimizer == PP_OPT_ADAM_BF16_MOMENTS ? 1 : 0,
        .zero_max = plan->profile.stack_default || !plan->profile.stack[0]
                        ? -1
                        : plan->profile.sw.zero_max,
    };
    pp__space_recompute_menu(&sp);
    if ((rc = pp__space_check_pins(&sp, e)) < 0) goto fail;
    if ((rc = pp_plan_estimator_new(m, c, &plan->profile, &est, e)) < 0 ||
        (rc = pp_plan_estimator_placement(est, plan->placements[0], e)) < 0 ||
        (rc = pp_plan_estimator_optimizer(est, plan->opt.optimizer, e)) < 0)
        goto fail;

    /* Enumerate, prune and estimate. */
    double t0 = now_s();
    visit v = {.plan = plan,
               .est = est,
               .m = m,
               .limit = info->gpu->hbm_bytes * (1.0 - o->memory_reserve)};
    if ((rc = pp__space_walk(&sp, visit_fn, &v, e)) < 0) goto fail;
    plan->st.feasible = plan->n;
    plan->st.considered = plan->n;
    for (int r = 0; r < PP_PLAN_REJECT__COUNT; r++)
        plan->st.considered += plan->st.rejected[r];
    if (plan->n == 0) {
        rc = infeasible(plan, &v, &sp, e);
        goto fail;
    }

    flops_cache fc;
    for (int r = PP_RECOMPUTE_NONE; r <= PP_RECOMPUTE_FULL; r++) {
        pp_flops f;
        if ((rc = pp_flops_count(m, gbs, (pp_recompute)r, &f, e)) < 0)
            goto fail;
        fc.hw[r] = f.total;
        fc.model[r] = f.model;
    }
    for (size_t i = 0; i < plan->n; i++) metrics(plan, &fc, &plan->cand[i]);
    qsort(plan->cand, plan->n, sizeof *plan->cand, cmp_est);
    plan->st.search_s = now_s() - t0;

    /* Simulate the best K by the estimate (simulate.c).  A layout the
     * simulator finds too large is dropped and the next one takes its
     * place; any other failure leaves the layout ranked by its estimate
     * and is reported. */
    t0 = now_s();
    pp__plan_simulate(plan, m, c, o->top, o->jobs);
    for (size_t k = 0; k < plan->n; k++)
        if (plan->cand[k].simulated) metrics(plan, &fc, &plan->cand[k]);
    plan->st.simulate_s = now_s() - t0;
    qsort(plan->cand, plan->n, sizeof *plan->cand, cmp_rank);
    if (plan->n == 0) { /* every one the simulator tried was too large */
        rc = pp_error_set(e, PP_EINFEASIBLE,
                          "no feasible layout: the simulator found every "
                          "candidate too large for %s of HBM",
                          pp_unit_format(plan->gpu.hbm_bytes, PP_Q_BYTES, 4,
                                         (char[48]){0}, 48));
        goto fail;
    }
    plan->st.gpus_min = plan->st.gpus_max = plan->cand[0].gpus;
    for (size_t k = 0; k < plan->n; k++) {
        if (plan->cand[k].gpus < plan->st.gpus_min)
            plan->st.gpus_min = plan->cand[k].gpus;
        if (plan->cand[k].gpus > plan->st.gpus_max)
            plan->st.gpus_max = plan->cand[k].gpus;
    }
    pp_plan_estimator_free(est);
    *out = plan;
    return 0;

fail:
    pp_plan_estimator_free(est);
    pp_plan_free(plan);
    return rc;
}

void pp_plan_free(pp_plan *p) {
    if (!p) return;
    free(p->cand);
    free(p);
}

size_t pp_plan_count(const pp_plan *p) {
    return p->n;
}

const pp_plan_candidate *pp_plan_get(const pp_plan *p, size_t i) {
    return i < p->n ? &p->cand[i] : NULL;
}

const pp_plan_stats *pp_plan_stats_get(const pp_plan *p) {
    return &p->st;
}
const pp_plan_options *pp_plan_options_get(const pp_plan *p) {
    return &p->opt;
}
const pp_model *pp_plan_model(const pp_plan *p) {
    return &p->model;
}
const char *pp_plan_cluster_name(const pp_plan *p) {
    return p->cluster_name;
}

long pp_plan_find(const pp_plan *p, const pp_parallel *par, bool overlap) {
    for (size_t i = 0; i < p->n; i++) {
        const pp_parallel *q = &p->cand[i].par;
        if (q->tp == par->tp && q->pp == par->pp && q->dp == par->dp &&
            q->mbs == par->mbs && q->gbs == par->gbs && q->vp == par->vp &&
            q->sp == par->sp && q->recompute == par->recompute &&
            q->zero == par->zero && q->dtype == par->dtype &&
            q->first == par->first && q->last == par->last &&
            p->cand[i].dp_overlap == overlap)
            return (long)i;
    }
    return -1;
}
