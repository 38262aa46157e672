/*
 * test_planner.c: the planner (planner/) through the library and through
 * `podplan plan`: the search space and its rules checked against a brute
 * force, pins and exclusions, usage errors, the infeasible case, the
 * estimator against the simulator, prices, determinism and the structured
 * formats.  The launch formats are test_planner_launch.c's, the rank
 * placement test_planner_placement.c's.
 *
 * The simulations here are few and small (--top 0..3): the Megatron-LM
 * table is test_plan_megatron.c's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "plan_util.h"
#include "podplan/planner.h"

/* ---- the space against a brute force ------------------------------------ */

static bool divides(int64_t a, int64_t b) {
    return b % a == 0;
}

/* Every layout of the rules, enumerated the slow way, sized with
 * pp_memory_per_gpu: returns how many fit and how many do not, each
 * layout with PP and DP counted once per rank order. */
static void brute_force(const pp_model *m, int64_t gpus, int64_t gbs,
                        int64_t gpn, double limit, uint64_t *fit,
                        uint64_t *nofit) {
    *fit = *nofit = 0;
    for (int64_t tp = 1; tp <= gpn; tp++) {
        if (!divides(tp, gpn) || !divides(tp, m->heads) ||
            !divides(tp, m->kv_heads))
            continue;
        for (int64_t pp = 1; pp <= m->layers; pp++) {
            if (!divides(pp, m->layers) || !divides(tp * pp, gpus)) continue;
            int64_t dp = gpus / (tp * pp);
            if (!divides(dp, gbs)) continue;
            for (int64_t mbs = 1; mbs <= gbs / dp; mbs++) {
                if (!divides(mbs, gbs / dp)) continue;
                int64_t nmb = gbs / dp / mbs;
                for (int64_t vp = 1; vp <= m->layers; vp++) {
                    if (vp > 1 &&
                        (pp <= 2 || !divides(pp * vp, m->layers) || nmb % pp))
                        continue;
                    for (int sp = 0; sp <= (tp > 1); sp++)
                        for (int r = 0; r < 3; r++)
                            for (int z = 0; z <= (dp > 1 ? 3 : 0); z++)
                                for (int ov = 0; ov <= (dp > 1); ov++) {
                                    pp_parallel p;
                                    pp_parallel_init(&p);
                                    p.tp = tp, p.pp = pp, p.dp = dp;
                                    p.mbs = mbs, p.gbs = gbs, p.vp = vp;
                                    p.sp = sp, p.recompute = (pp_recompute)r;
                                    p.zero = z;
                                    pp_memory mem;
                                    assert_int_equal(
                                        pp_memory_per_gpu(m, &p,
                                                          PP_OPT_ADAM_MIXED,
                                                          &mem, NULL),
                                        0);
                                    /* Both rank orders are searched:
                                     * they differ with PP and DP. */
                                    uint64_t nv = pp > 1 && dp > 1 ? 2 : 1;
                                    if (mem.total <= limit)
                                        *fit += nv;
                                    else
                                        *nofit += nv;
                                }
                }
            }
        }
    }
}

static void test_space_complete(void **state) {
    (void)state;
    pp_model m;
    load_model("megatron-18.4b", &m);
    pp_cluster *c = load_cluster("selene-like");
    pp_plan_options o;
    pp_plan_options_init(&o);
    o.gpus = 256;
    o.gbs = 1024;
    o.top = 0;
    pp_plan *plan = NULL;
    pp_error e = PP_ERROR_INIT;
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    const pp_plan_stats *st = pp_plan_stats_get(plan);
    /* The A100 80GB's 81,920 MiB (hardware.yaml) less the planner's
     * default 10% reserve. */
    double limit = 81920.0 * 1048576.0 * 0.9;
    uint64_t fit, nofit;
    brute_force(&m, 256, 1024, 8, limit, &fit, &nofit);
    assert_int_equal(st->feasible, fit);
    assert_int_equal(pp_plan_count(plan), fit);
    assert_int_equal(st->rejected[PP_PLAN_REJECT_MEMORY], nofit);
    uint64_t sum = st->feasible;
    for (int r = 0; r < PP_PLAN_REJECT__COUNT; r++) sum += st->rejected[r];
    assert_int_equal(sum, st->considered);
    assert_true(st->rejected[PP_PLAN_REJECT_VP_PP] > 0);
    assert_true(st->rejected[PP_PLAN_REJECT_VP_MICROBATCHES] > 0);
    /* Every candidate obeys the rules, fits, and the ranking ascends. */
    for (size_t i = 0; i < pp_plan_count(plan); i++) {
        const pp_plan_candidate *k = pp_plan_get(plan, i);
        const pp_parallel *p = &k->par;
        assert_int_equal(p->tp * p->pp * p->dp, 256);
        assert_int_equal(k->gpus, 256);
        assert_true(divides(p->mbs * p->dp, 1024));
        assert_true(!p->sp || p->tp > 1);
        assert_true(p->zero == 0 || p->dp > 1);
        assert_true(!k->dp_overlap || p->dp > 1);
        assert_true(p->vp == 1 || p->pp > 2);
        assert_true(k->memory.total <= limit);
        assert_false(k->simulated);
        assert_true(isfinite(k->est_time_s) && k->est_time_s > 0);
        if (i) assert_true(pp_plan_get(plan, i - 1)->score <= k->score);
        double sum_b = k->est.compute_s + k->est.tp_comm_s + k->est.pp_comm_s +
                       k->est.dp_comm_exposed_s + k->est.bubble_s +
                       k->est.other_s;
        assert_true(fabs(sum_b - k->est_time_s) <= 1e-9 * k->est_time_s);
    }
    pp_plan_free(plan);

    /* Every GPU count up to the cluster's that suits the batch. */
    pp_plan_options_init(&o);
    o.gbs = 64;
    o.top = 0;
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    st = pp_plan_stats_get(plan);
    assert_true(st->gpus_min < st->gpus_max);
    for (size_t i = 0; i < pp_plan_count(plan); i++) {
        const pp_plan_candidate *k = pp_plan_get(plan, i);
        assert_true(k->gpus <= 4480);
        assert_true(divides(k->par.dp, 64));
    }
    pp_plan_free(plan);
    pp_cluster_free(c);
}

/* ---- pins and exclusions ------------------------------------------------- */

static void test_pins(void **state) {
    (void)state;
    pp_model m;
    load_model("gpt3-175b", &m);
    pp_cluster *c = load_cluster("titan");
    pp_plan_options o;
    pp_plan_options_init(&o);
    o.gpus = 1024;
    o.gbs = 1536;
    o.top = 0;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(
        pp_plan_filter_add(&o.filter, "tp=8,pp=8", false, "--fix", &e), 0);
    assert_int_equal(
        pp_plan_filter_add(&o.filter, "recompute=none", true, "--exclude", &e),
        0);
    assert_int_equal(
        pp_plan_filter_add(&o.filter, "overlap=on", true, "--exclude", &e), 0);
    pp_plan *plan = NULL;
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    assert_true(pp_plan_count(plan) > 0);
    for (size_t i = 0; i < pp_plan_count(plan); i++) {
        const pp_plan_candidate *k = pp_plan_get(plan, i);
        assert_int_equal(k->par.tp, 8);
        assert_int_equal(k->par.pp, 8);
        assert_int_equal(k->par.dp, 16);
        assert_true(k->par.recompute != PP_RECOMPUTE_NONE);
        assert_false(k->dp_overlap);
    }
    assert_true(pp_plan_stats_get(plan)->rejected[PP_PLAN_REJECT_PINNED] > 0);
    assert_true(pp_plan_stats_get(plan)->rejected[PP_PLAN_REJECT_EXCLUDED] > 0);
    pp_plan_free(plan);

    /* Pins no layout can meet are usage errors. */
    static const char *const bad[] = {"tp=7",  "tp=16", "pp=5",
                                      "mbs=5", "vp=5",  "zero=1,dp=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_plan_options_init(&o);
        o.gpus = 1024;
        o.gbs = 1536;
        o.top = 0;
        pp_error_clear(&e);
        assert_int_equal(
            pp_plan_filter_add(&o.filter, bad[i], false, "--fix", &e), 0);
        plan = NULL;
        int rc = pp_plan_search(&m, c, &o, &plan, &e);
        if (rc != PP_EUSAGE)
            fail_msg("--fix %s: got %d (%s)", bad[i], rc, e.msg);
        assert_null(plan);
        assert_non_null(strstr(e.msg, "--fix"));
    }
    pp_error_clear(&e);
    pp_plan_options_init(&o);
    o.top = 0;
    o.gpus = 1024;
    o.gbs = 1536;
    pp_plan_filter_add(&o.filter, "tp=16", false, "--fix", &e);
    assert_int_equal(pp_plan_search(&m, c, &o, &plan, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "--allow-cross-node-tp"));
    pp_error_clear(&e);
    o.allow_cross_node_tp = true;
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    assert_int_equal(pp_plan_get(plan, 0)->par.tp, 16);
    pp_plan_free(plan);
    pp_cluster_free(c);
}

static void test_filter_errors(void **state) {
    (void)state;
    pp_plan_filter f;
    pp_plan_filter_init(&f);
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_plan_filter_add(&f, "pt=8", false, "--fix", &e),
                     PP_EUSAGE);
    assert_non_null(strstr(e.msg, "did you mean"));
    static const char *const bad[] = {
        "tp=x", "tp=0",       "sp=maybe",        "recompute=some", "zero=4",
        "tp",   "overlap=1x", "dispatcher=nccl", "permute=auto",   ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_error_clear(&e);
        if (pp_plan_filter_add(&f, bad[i], false, "--fix", &e) != PP_EUSAGE)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_non_null(strstr(e.msg, "--fix"));
    }
    pp_error_clear(&e);
    assert_int_equal(pp_plan_filter_add(&f, "tp=8", false, "--fix", &e), 0);
    assert_int_equal(pp_plan_filter_add(&f, "tp=8", false, "--fix", &e), 0);
    assert_int_equal(pp_plan_filter_add(&f, "tp=4", false, "--fix", &e),
                     PP_EUSAGE);
    assert_true(pp_plan_filter_allows(&f, PP_PLAN_DIM_TP, 8));
    assert_false(pp_plan_filter_allows(&f, PP_PLAN_DIM_TP, 4));
    assert_true(pp_plan_filter_allows(&f, PP_PLAN_DIM_PP, 3));
    /* The two-valued MoE choices: named as in the SPEC; excluding both
     * leaves nothing. */
    pp_error_clear(&e);
    assert_int_equal(
        pp_plan_filter_add(&f, "dispatcher=deepep", false, "--fix", &e), 0);
    assert_true(pp_plan_filter_allows(&f, PP_PLAN_DIM_DISPATCHER, 1));
    assert_false(pp_plan_filter_allows(&f, PP_PLAN_DIM_DISPATCHER, 0));
    assert_int_equal(
        pp_plan_filter_add(&f, "permute=fused", true, "--exclude", &e), 0);
    assert_int_equal(
        pp_plan_filter_add(&f, "permute=unfused", true, "--exclude", &e),
        PP_EUSAGE);
    assert_non_null(strstr(e.msg, "permute: both choices excluded"));
}

/* ---- no feasible layout -------------------------------------------------- */

static void test_infeasible(void **state) {
    (void)state;
    pp_model m;
    load_model("megatron-1t", &m);
    pp_cluster *c = load_cluster("selene-like");
    pp_plan_options o;
    pp_plan_options_init(&o);
    o.gpus = 8;
    o.top = 0;
    pp_plan *plan = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_plan_search(&m, c, &o, &plan, &e), PP_EINFEASIBLE);
    assert_null(plan);
    assert_non_null(strstr(e.msg, "closest"));
    assert_non_null(strstr(e.msg, "short"));
    assert_non_null(strstr(e.msg, "it fits on"));
    assert_non_null(strstr(e.msg, "memory"));
    pp_cluster_free(c);
}

/* ---- the estimator against the simulator -------------------------------- */

/* pp_plan_options.progress: its calls, in order. */
typedef struct progress_log {
    size_t calls, last, total;
    bool ordered, tp8;
} progress_log;

static void log_progress(void *ctx, size_t done, size_t total,
                         const pp_parallel *par) {
    progress_log *g = ctx;
    g->ordered = g->ordered && done == g->last + 1 && total == g->total;
    g->tp8 = g->tp8 && par && par->tp == 8;
    g->last = done;
    g->calls++;
}

static void test_estimator_vs_simulator(void **state) {
    (void)state;
    pp_model m;
    load_model("gpt3-175b", &m);
    pp_cluster *c = load_cluster("titan");
    pp_plan_options o;
    pp_plan_options_init(&o);
    o.gpus = 1024;
    o.gbs = 1536;
    o.top = 3;
    o.jobs = 2;
    progress_log g = {0, 0, 5, true, true};
    o.progress = log_progress;
    o.progress_ctx = &g;
    pp_error e = PP_ERROR_INIT;
    pp_plan_filter_add(&o.filter, "tp=8", false, "--fix", &e);
    pp_plan *plan = NULL;
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    const pp_plan_stats *st = pp_plan_stats_get(plan);
    if (st->sim_error[0]) fail_msg("simulation failed: %s", st->sim_error);
    /* K = 3 of tp,pp,dp and ceil(3/2) = 2 of tp,dp,pp. */
    assert_int_equal(st->simulated, 5);
    /* The progress report: once per simulation, counting up to the five
     * planned, one call at a time (two threads), with the layouts. */
    assert_int_equal(g.calls, 5);
    assert_int_equal(g.last, 5);
    assert_true(g.ordered);
    assert_true(g.tp8);
    for (size_t i = 0; i < 5; i++) {
        const pp_plan_candidate *k = pp_plan_get(plan, i);
        assert_true(k->simulated);
        assert_true(k->iteration_time_s == k->sim_time_s);
        /* The closed form follows the simulator's models; at flow fidelity
         * contention makes the simulation slower: a few percent here. */
        double r = k->est_time_s / k->sim_time_s;
        if (!(r > 0.9 && r < 1.05))
            fail_msg("estimate %.3f s vs simulated %.3f s", k->est_time_s,
                     k->sim_time_s);
        if (i) assert_true(pp_plan_get(plan, i - 1)->score <= k->score);
    }
    /* The rest keep their estimate and rank after the simulated ones. */
    assert_false(pp_plan_get(plan, 5)->simulated);
    pp_plan_free(plan);
    pp_cluster_free(c);
}

/* An MoE layer's expert-TP collectives (etp > 1: the dispatched tokens
 * gathered and reduce-scattered over the expert-TP group) and MLA's
 * latent gathers are TP collectives of their own size, which the
 * estimate prices at their mean size (planner/estimate.c).  Before, it
 * left them out: 5% and 11% fast on these two layouts, 31% on
 * DeepSeek-V3 at tp 4, EP 2 (against an analytic simulation), which it
 * then ranked first on 2,048 H800.  Mixtral 8x7B on four DGX H100: the
 * estimate follows the simulation within 5%. */
static void test_estimator_expert_tp(void **state) {
    (void)state;
    static const char *const fix[] = {"tp=2,ep=8,etp=2", "tp=4,ep=4,etp=4"};
    for (size_t i = 0; i < 2; i++) {
        json_t *p = cli_json_ok(
            "plan --model mixtral-8x7b --cluster dgx-h100-ndr --set "
            "node.count=4 --gpus 32 --global-batch 256 --fix "
            "%s,pp=1,mbs=1,zero=1,overlap=on,recompute=selective,sp=on "
            "--top 1 --format json",
            fix[i]);
        json_t *k = json_array_get(json_object_get(p, "candidates"), 0);
        double est = cli_num(k, "estimated_time_s");
        double sim = cli_num(k, "simulated_time_s");
        print_message("%s: estimated %.3f s, simulated %.3f s\n", fix[i], est,
                      sim);
        assert_true(fabs(est / sim - 1.0) <= 0.05);
        json_decref(p);
    }
}

/* ---- prices and the cost objective ---------------------------------------- */

static void test_cost(void **state) {
    (void)state;
    pp_cluster *c = load_cluster("titan");
    pp_plan_prices pr;
    pp_error e = PP_ERROR_INIT;
    if (pp_plan_prices_get(c, 4, 0.10, 1.3, &pr, &e)) fail_msg("%s", e.msg);
    assert_true(pr.complete);
    /* 130 servers at $70,000 + 8 GPUs + 8 HCAs, 82 switches, 2,080 cables. */
    double gpu = pp_cluster_info_get(c)->gpu->price_usd;
    double want = 130 * (70000 + 8 * gpu + 8 * 1500) + 82 * 25000 + 2080 * 600;
    assert_true(fabs(pr.capex_usd - want) <= 1e-9 * want);
    assert_true(pr.usd_per_gpu_hour > 0);
    double per_h = pr.capex_usd / (4 * 8760) + pr.power_w / 1000 * 1.3 * 0.10;
    assert_true(fabs(pr.usd_per_gpu_hour * 1040 - per_h) <= 1e-9 * per_h);

    pp_model m;
    load_model("megatron-1.7b", &m);
    pp_plan_options o;
    pp_plan_options_init(&o);
    o.gbs = 512;
    o.top = 0;
    o.objective = PP_PLAN_OBJ_COST;
    o.prices = &pr;
    o.tokens = 300e9;
    pp_plan *plan = NULL;
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    for (size_t i = 0; i < pp_plan_count(plan); i++) {
        const pp_plan_candidate *k = pp_plan_get(plan, i);
        double iters = 300e9 / (512.0 * 2048.0);
        double want_c = pr.usd_per_gpu_hour * (double)k->gpus *
                        k->iteration_time_s / 3600 * iters;
        assert_true(fabs(k->cost_usd - want_c) <= 1e-9 * want_c);
        assert_true(
            fabs(k->training_days - iters * k->iteration_time_s / 86400) <=
            1e-9 * k->training_days);
        if (i) assert_true(pp_plan_get(plan, i - 1)->cost_usd <= k->cost_usd);
    }
    pp_plan_free(plan);
    /* Without prices the cost objective is a usage error. */
    o.prices = NULL;
    assert_int_equal(pp_plan_search(&m, c, &o, &plan, &e), PP_EUSAGE);
    pp_cluster_free(c);
}

/* ---- the CLI ---------------------------------------------------------------- */

static void test_usage_errors(void **state) {
    (void)state;
    static const char *const cmds[] = {
        "--gpus 0",
        "--gpus abc",
        "--gpus 99999",
        "--gpus -8",
        "--global-batch 0",
        "--global-batch x",
        "--fix tp=abc",
        "--fix foo=1",
        "--fix tp=7",
        "--fix tp=8 --fix tp=4",
        "--fix gbs=512 --global-batch 256",
        "--exclude zero=9",
        "--top -1",
        "--memory-reserve 150%",
        "--objective speed",
        "--objective train",
        "--format csv",
        "--placement pp,tp,dp",
        "--placement tp,pp",
        "--placement dp,pp,tp",
        "--placement tp,pp,dp --format deepspeed",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cli_result r;
        cli_runf(&r, "plan --model gpt3-175b --cluster titan --top 0 %s",
                 cmds[i]);
        if (r.status != 2)
            fail_msg("%s: exit %d, want 2 (%s)", cmds[i], r.status, r.err);
        assert_string_equal(r.out, "");
        assert_non_null(strstr(r.err, "podplan plan: "));
        cli_result_free(&r);
    }
}

static void test_infeasible_cli(void **state) {
    (void)state;
    cli_result r;
    char out[] = "/tmp/podplan-plan-XXXXXX";
    int fd = mkstemp(out);
    close(fd);
    unlink(out);
    cli_runf(&r,
             "plan --model megatron-1t --cluster selene-like --gpus 8 "
             "-o %s",
             out);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "no feasible layout"));
    assert_non_null(strstr(r.err, "closest"));
    assert_non_null(strstr(r.err, "short"));
    assert_int_equal(access(out, F_OK), -1); /* no file left behind */
    cli_result_free(&r);

    /* No layout at all: 1,000 = 8 x 125 GPUs, and 125 divides no layer
     * count of GPT-3 with a DP that divides 1536. */
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1000 "
                 "--global-batch 1536 --top 0");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "no layout satisfies the rules"));
    assert_non_null(strstr(r.err, "gpus"));
    cli_result_free(&r);
}

static void test_determinism_and_formats(void **state) {
    (void)state;
    const char *base = "plan --model megatron-3.6b --cluster selene-like "
                       "--gpus 64 --global-batch 512 --top 1 --no-timing";
    static const char *const fmts[] = {"table",    "json", "yaml",
                                       "megatron", "nemo", "deepspeed"};
    char *json = NULL, *yaml = NULL, *nemo = NULL, *ds = NULL;
    for (size_t i = 0; i < 6; i++) {
        cli_result a, b;
        cli_runf(&a, "%s --format %s", base, fmts[i]);
        cli_runf(&b, "%s --format %s", base, fmts[i]);
        if (a.status) fail_msg("%s: exit %d: %s", fmts[i], a.status, a.err);
        assert_int_equal(b.status, 0);
        assert_string_equal(a.out, b.out);
        if (i == 1) json = strdup(a.out);
        if (i == 2) yaml = strdup(a.out);
        if (i == 4) nemo = strdup(a.out);
        if (i == 5) ds = strdup(a.out);
        cli_result_free(&a);
        cli_result_free(&b);
    }
    /* The same with the simulations one at a time or four at once. */
    char *one = NULL;
    for (int jobs = 1; jobs <= 4; jobs += 3) {
        cli_result a;
        cli_runf(&a,
                 "plan --model megatron-3.6b --cluster selene-like "
                 "--gpus 64 --global-batch 512 --top 4 --no-timing "
                 "--format json --jobs %d",
                 jobs);
        assert_int_equal(a.status, 0);
        if (jobs == 1)
            one = strdup(a.out);
        else
            assert_string_equal(a.out, one);
        cli_result_free(&a);
    }
    free(one);

    /* -o writes the same bytes. */
    char out[] = "/tmp/podplan-plan-XXXXXX";
    int fd = mkstemp(out);
    close(fd);
    cli_result r;
    cli_runf(&r, "%s --format json -o %s", base, out);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    FILE *fp = fopen(out, "rb");
    assert_non_null(fp);
    char *buf = calloc(1, strlen(json) + 16);
    size_t got = fread(buf, 1, strlen(json) + 8, fp);
    fclose(fp);
    unlink(out);
    assert_int_equal(got, strlen(json));
    assert_memory_equal(buf, json, got);
    free(buf);
    cli_result_free(&r);

    /* YAML holds what JSON holds. */
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    assert_non_null(j);
    json_t *c0 = json_array_get(json_object_get(j, "candidates"), 0);
    pp_doc *doc;
    pp_error e = PP_ERROR_INIT;
    if (pp_doc_load_string("plan.yaml", yaml, strlen(yaml), &doc, &e))
        fail_msg("%s", e.msg);
    pp_node *root = pp_doc_root(doc);
    pp_node *cands = pp_map_get(root, "candidates");
    assert_non_null(cands);
    assert_int_equal(cands->kind, PP_NODE_SEQ);
    pp_node *y0 = cands->items[0];
    assert_string_equal(pp_map_get(y0, "parallel")->scalar,
                        json_string_value(json_object_get(c0, "parallel")));
    assert_true(fabs(atof(pp_map_get(y0, "iteration_time_s")->scalar) -
                     num(c0, "iteration_time_s")) <=
                1e-9 * num(c0, "iteration_time_s"));
    pp_doc_free(doc);

    /* NeMo: the layout's parallelism keys, of the best layout under the
     * stack the nemo format runs (nemo-2024, stated in its header). */
    assert_non_null(strstr(nemo, "software stack: nemo-2024"));
    cli_result ns;
    cli_runf(&ns, "%s --format json --stack nemo-2024", base);
    assert_int_equal(ns.status, 0);
    json_t *nj = json_loads(ns.out, 0, &je);
    assert_non_null(nj);
    assert_string_equal(json_string_value(json_object_get(nj, "stack")),
                        "nemo-2024");
    pp_parallel p;
    pp_parallel_init(&p);
    pp_parallel_parse(
        json_string_value(json_object_get(
            json_array_get(json_object_get(nj, "candidates"), 0), "parallel")),
        &p, &e);
    json_decref(nj);
    cli_result_free(&ns);
    if (pp_doc_load_string("nemo.yaml", nemo, strlen(nemo), &doc, &e))
        fail_msg("%s", e.msg);
    root = pp_doc_root(doc);
    pp_node *tr = pp_map_get(root, "trainer"), *md = pp_map_get(root, "model");
    assert_int_equal(atoll(pp_map_get(tr, "devices")->scalar) *
                         atoll(pp_map_get(tr, "num_nodes")->scalar),
                     64);
    assert_int_equal(
        atoll(pp_map_get(md, "tensor_model_parallel_size")->scalar), p.tp);
    assert_int_equal(
        atoll(pp_map_get(md, "pipeline_model_parallel_size")->scalar), p.pp);
    assert_int_equal(atoll(pp_map_get(md, "micro_batch_size")->scalar), p.mbs);
    assert_int_equal(atoll(pp_map_get(md, "global_batch_size")->scalar), 512);
    assert_int_equal(atoll(pp_map_get(md, "num_layers")->scalar), 30);
    pp_doc_free(doc);

    /* DeepSpeed: DeepSpeed's batch identity. */
    json_t *d = json_loads(ds, 0, &je);
    assert_non_null(d);
    json_t *z = json_object_get(d, "zero_optimization");
    int64_t stage = (int64_t)num(z, "stage");
    assert_true(stage >= 0 && stage <= 3);
    int64_t dp_ds = 64 / (p.tp * p.pp);
    (void)dp_ds;
    assert_true(num(d, "train_batch_size") == 512);
    json_decref(d);
    json_decref(j);
    free(json);
    free(yaml);
    free(nemo);
    free(ds);

    /* The table says why each loses to the first. */
    cli_runf(&r, "plan --model megatron-3.6b --cluster selene-like --gpus 64 "
                 "--global-batch 512 --top 0");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "why each loses to #1"));
    assert_non_null(strstr(r.out, "best: tp="));
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space_complete),
        cmocka_unit_test(test_pins),
        cmocka_unit_test(test_filter_errors),
        cmocka_unit_test(test_infeasible),
        cmocka_unit_test(test_estimator_vs_simulator),
        cmocka_unit_test(test_cost),
        cmocka_unit_test(test_estimator_expert_tp),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_infeasible_cli),
        cmocka_unit_test(test_determinism_and_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
