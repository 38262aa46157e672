/*
 * test_planner.c: the planner (planner/) through the library and through
 * `podplan plan`: the search space and its rules checked against a brute
 * force, pins and exclusions, usage errors, the infeasible case, the
 * estimator against the simulator, GPT-3 175B on titan (fits in memory,
 * Megatron-LM flags), the launch formats, determinism.
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
#include "podplan/planner.h"

static double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) fail_msg("key %s missing or not a number", key);
    return json_number_value(v);
}

static pp_cluster *load_cluster(const char *name) {
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    if (pp_cluster_load(name, NULL, 0, NULL, &c, &e))
        fail_msg("loading %s: %s", name, e.msg);
    return c;
}

static void load_model(const char *spec, pp_model *m) {
    pp_error e = PP_ERROR_INIT;
    if (pp_model_load(spec, m, &e)) fail_msg("loading %s: %s", spec, e.msg);
}

/* ---- the space against a brute force ------------------------------------ */

static bool divides(int64_t a, int64_t b) { return b % a == 0; }

/* Every layout of the rules, enumerated the slow way, sized with
 * pp_memory_per_gpu: returns how many fit and how many do not. */
static void brute_force(const pp_model *m, int64_t gpus, int64_t gbs,
                        int64_t gpn, double limit, uint64_t *fit,
                        uint64_t *nofit) {
    *fit = *nofit = 0;
    for (int64_t tp = 1; tp <= gpn; tp++) {
        if (!divides(tp, gpn) || !divides(tp, m->heads)
            || !divides(tp, m->kv_heads))
            continue;
        for (int64_t pp = 1; pp <= m->layers; pp++) {
            if (!divides(pp, m->layers) || !divides(tp * pp, gpus)) continue;
            int64_t dp = gpus / (tp * pp);
            if (!divides(dp, gbs)) continue;
            for (int64_t mbs = 1; mbs <= gbs / dp; mbs++) {
                if (!divides(mbs, gbs / dp)) continue;
                int64_t nmb = gbs / dp / mbs;
                for (int64_t vp = 1; vp <= m->layers; vp++) {
                    if (vp > 1 && (pp <= 2 || !divides(pp * vp, m->layers)
                                   || nmb % pp))
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
                                                          &mem, NULL), 0);
                                    if (mem.total <= limit) (*fit)++;
                                    else (*nofit)++;
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
    double limit = 80e9 * 0.9;
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
        double sum_b = k->est.compute_s + k->est.tp_comm_s + k->est.pp_comm_s
                       + k->est.dp_comm_exposed_s + k->est.bubble_s
                       + k->est.other_s;
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
    assert_int_equal(pp_plan_filter_add(&o.filter, "tp=8,pp=8", false,
                                        "--fix", &e), 0);
    assert_int_equal(pp_plan_filter_add(&o.filter, "recompute=none", true,
                                        "--exclude", &e), 0);
    assert_int_equal(pp_plan_filter_add(&o.filter, "overlap=on", true,
                                        "--exclude", &e), 0);
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
    assert_true(pp_plan_stats_get(plan)->rejected[PP_PLAN_REJECT_EXCLUDED]
                > 0);
    pp_plan_free(plan);

    /* Pins no layout can meet are usage errors. */
    static const char *const bad[] = {"tp=7", "tp=16", "pp=5", "mbs=5",
                                      "vp=5", "zero=1,dp=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_plan_options_init(&o);
        o.gpus = 1024;
        o.gbs = 1536;
        o.top = 0;
        pp_error_clear(&e);
        assert_int_equal(pp_plan_filter_add(&o.filter, bad[i], false,
                                            "--fix", &e), 0);
        plan = NULL;
        int rc = pp_plan_search(&m, c, &o, &plan, &e);
        if (rc != PP_EUSAGE) fail_msg("--fix %s: got %d (%s)", bad[i], rc, e.msg);
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
    static const char *const bad[] = {"tp=x", "tp=0", "sp=maybe",
                                      "recompute=some", "zero=4", "tp",
                                      "overlap=1x", ""};
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
    pp_error e = PP_ERROR_INIT;
    pp_plan_filter_add(&o.filter, "tp=8", false, "--fix", &e);
    pp_plan *plan = NULL;
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    const pp_plan_stats *st = pp_plan_stats_get(plan);
    if (st->sim_error[0]) fail_msg("simulation failed: %s", st->sim_error);
    assert_int_equal(st->simulated, 3);
    for (size_t i = 0; i < 3; i++) {
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
    assert_false(pp_plan_get(plan, 3)->simulated);
    pp_plan_free(plan);
    pp_cluster_free(c);
}

/* ---- prices and the cost objective ---------------------------------------- */

static void test_cost(void **state) {
    (void)state;
    pp_cluster *c = load_cluster("titan");
    pp_plan_prices pr;
    pp_error e = PP_ERROR_INIT;
    if (pp_plan_prices_get(c, 4, 0.10, 1.3, &pr, &e))
        fail_msg("%s", e.msg);
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
        double want_c = pr.usd_per_gpu_hour * (double)k->gpus
                        * k->iteration_time_s / 3600 * iters;
        assert_true(fabs(k->cost_usd - want_c) <= 1e-9 * want_c);
        assert_true(fabs(k->training_days
                         - iters * k->iteration_time_s / 86400)
                    <= 1e-9 * k->training_days);
        if (i) assert_true(pp_plan_get(plan, i - 1)->cost_usd <= k->cost_usd);
    }
    pp_plan_free(plan);
    /* Without prices the cost objective is a usage error. */
    o.prices = NULL;
    assert_int_equal(pp_plan_search(&m, c, &o, &plan, &e), PP_EUSAGE);
    pp_cluster_free(c);
}

/* ---- the CLI ---------------------------------------------------------------- */

/* Argument names of Megatron-LM (megatron/training/arguments.py,
 * NVIDIA/Megatron-LM main, 2025: _add_network_size_args,
 * _add_training_args, _add_distributed_args, _add_mixed_precision_args,
 * _add_data_args), the ones a launch line for a GPT layout may need. */
static const char *const megatron_args[] = {
    "--num-layers", "--encoder-num-layers", "--decoder-num-layers",
    "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--kv-channels", "--group-query-attention", "--num-query-groups",
    "--max-position-embeddings", "--position-embedding-type",
    "--use-rotary-position-embeddings", "--rotary-base", "--rotary-percent",
    "--make-vocab-size-divisible-by", "--normalization", "--norm-epsilon",
    "--swiglu", "--squared-relu", "--openai-gelu",
    "--untie-embeddings-and-output-weights", "--seq-length",
    "--micro-batch-size", "--global-batch-size", "--rampup-batch-size",
    "--recompute-activations", "--recompute-granularity",
    "--recompute-method", "--recompute-num-layers", "--recompute-modules",
    "--distribute-saved-activations", "--train-iters", "--train-samples",
    "--sequence-parallel", "--tensor-model-parallel-size",
    "--pipeline-model-parallel-size", "--num-layers-per-virtual-pipeline-stage",
    "--num-virtual-stages-per-pipeline-rank", "--use-distributed-optimizer",
    "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
    "--overlap-grad-reduce", "--overlap-param-gather", "--ddp-bucket-size",
    "--context-parallel-size", "--distributed-backend", "--bf16", "--fp16",
    "--disable-bias-linear", "--use-flash-attn", "--optimizer", "--lr",
    "--data-path", "--vocab-file", "--merge-file", "--tokenizer-type",
    /* _add_distributed_args: rank order tp-cp-ep-pp-dp instead of the
     * default tp-cp-ep-dp-pp */
    "--use-tp-pp-dp-mapping",
    NULL};

static bool megatron_arg(const char *name) {
    for (int i = 0; megatron_args[i]; i++)
        if (strcmp(name, megatron_args[i]) == 0) return true;
    return false;
}

/* Parses the Megatron-LM part of a launch script (after pretrain_gpt.py):
 * every flag must be a Megatron-LM argument; returns the value of `want`
 * (or "" for a flag without value, NULL when absent). */
static const char *megatron_value(const char *script, const char *want,
                                  char *buf, size_t len) {
    const char *p = strstr(script, "pretrain_gpt.py");
    assert_non_null(p);
    p += strlen("pretrain_gpt.py");
    const char *found = NULL;
    char tok[256], prev[256] = "";
    while (*p) {
        while (*p == ' ' || *p == '\\' || *p == '\n') p++;
        size_t n = strcspn(p, " \\\n");
        if (!n) break;
        snprintf(tok, sizeof tok, "%.*s", (int)n, p);
        p += n;
        if (strncmp(tok, "--", 2) == 0) {
            if (!megatron_arg(tok))
                fail_msg("%s is not a Megatron-LM argument", tok);
            if (strcmp(tok, want) == 0) {
                found = "";
                if (buf) buf[0] = '\0';
            }
        } else if (strcmp(tok, "\"$@\"") != 0 && strcmp(prev, want) == 0
                   && buf) {
            snprintf(buf, len, "%.*s", (int)len - 1, tok);
            found = buf;
        }
        snprintf(prev, sizeof prev, "%s", tok);
    }
    return found;
}

static void test_gpt3_titan(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 2 --format json --no-timing");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    json_t *c0 = json_array_get(json_object_get(j, "candidates"), 0);
    assert_non_null(c0);
    /* The chosen layout fits in memory: HBM less the 10% reserve. */
    double mem = num(c0, "memory_per_gpu_bytes");
    assert_true(mem > 0 && mem <= 0.9 * num(j, "gpu_memory_bytes"));
    assert_true(num(c0, "memory_headroom_bytes") >= 0);
    assert_true(json_is_true(json_object_get(c0, "simulated")));
    assert_true(num(c0, "iteration_time_s") > 0);
    assert_true(num(c0, "tflops_per_gpu") > 50 && num(c0, "tflops_per_gpu") < 312);
    assert_true(num(c0, "mfu") > 0 && num(c0, "mfu") < 1);
    json_t *b = json_object_get(c0, "breakdown");
    double sum = num(b, "compute_s") + num(b, "tp_comm_s") + num(b, "pp_comm_s")
                 + num(b, "dp_comm_exposed_s") + num(b, "bubble_s")
                 + num(b, "other_s");
    assert_true(fabs(sum - num(c0, "iteration_time_s"))
                <= 1e-6 * num(c0, "iteration_time_s"));
    assert_true(json_is_null(json_object_get(c0, "training_days")));
    pp_parallel p;
    pp_parallel_init(&p);
    pp_error e = PP_ERROR_INIT;
    const char *spec = json_string_value(json_object_get(c0, "parallel"));
    assert_int_equal(pp_parallel_parse(spec, &p, &e), 0);
    assert_int_equal(p.tp * p.pp * p.dp, 1024);
    assert_int_equal(p.gbs, 1536);
    assert_true(json_array_size(json_object_get(j, "evaluated"))
                == (size_t)num(json_object_get(j, "search"), "feasible"));
    assert_true(num(json_object_get(j, "rejected"), "memory") > 0);
    assert_null(json_object_get(json_object_get(j, "search"),
                                "search_time_s"));
    json_decref(j);
    cli_result_free(&r);

    /* The launch line: every flag a Megatron-LM argument, the layout's
     * values, ZeRO limited to the distributed optimizer. */
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 2 --format megatron --tokens 300e9");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    char v[64];
    int64_t tp = atoll(megatron_value(r.out, "--tensor-model-parallel-size",
                                      v, sizeof v));
    int64_t pp = atoll(megatron_value(r.out, "--pipeline-model-parallel-size",
                                      v, sizeof v));
    int64_t mbs = atoll(megatron_value(r.out, "--micro-batch-size", v,
                                       sizeof v));
    assert_true(tp >= 1 && pp >= 1 && mbs >= 1);
    assert_true(1024 % (tp * pp) == 0);
    assert_true(1536 % (mbs * (1024 / (tp * pp))) == 0);
    assert_string_equal(megatron_value(r.out, "--global-batch-size", v,
                                       sizeof v), "1536");
    assert_string_equal(megatron_value(r.out, "--num-layers", v, sizeof v),
                        "96");
    assert_string_equal(megatron_value(r.out, "--hidden-size", v, sizeof v),
                        "12288");
    assert_string_equal(megatron_value(r.out, "--num-attention-heads", v,
                                       sizeof v), "96");
    assert_string_equal(megatron_value(r.out, "--seq-length", v, sizeof v),
                        "2048");
    assert_string_equal(megatron_value(r.out, "--ffn-hidden-size", v,
                                       sizeof v), "49152");
    assert_non_null(megatron_value(r.out, "--max-position-embeddings", v,
                                   sizeof v));
    assert_non_null(megatron_value(r.out, "--train-iters", v, sizeof v));
    assert_int_equal(atoll(v), (long long)ceil(300e9 / (1536.0 * 2048)));
    assert_null(megatron_value(r.out, "--swiglu", NULL, 0));
    assert_non_null(strstr(r.out, "torchrun --nnodes="));
    cli_result_free(&r);

    /* GQA and SwiGLU shape flags. */
    cli_runf(&r, "plan --model llama2-70b --cluster titan --gpus 64 "
                 "--global-batch 64 --top 0 --format megatron");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(megatron_value(r.out, "--group-query-attention", NULL, 0));
    assert_string_equal(megatron_value(r.out, "--num-query-groups", v,
                                       sizeof v), "8");
    assert_non_null(megatron_value(r.out, "--swiglu", NULL, 0));
    assert_non_null(megatron_value(r.out, "--untie-embeddings-and-output-weights",
                                   NULL, 0));
    cli_result_free(&r);
}

static void test_usage_errors(void **state) {
    (void)state;
    static const char *const cmds[] = {
        "--gpus 0", "--gpus abc", "--gpus 99999", "--gpus -8",
        "--global-batch 0", "--global-batch x", "--fix tp=abc", "--fix foo=1",
        "--fix tp=7", "--fix tp=8 --fix tp=4", "--fix gbs=512 --global-batch 256",
        "--exclude zero=9", "--top -1", "--memory-reserve 150%",
        "--objective speed", "--objective train", "--format csv",
        "--placement pp,tp,dp", "--placement tp,pp", "--placement dp,pp,tp",
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
    cli_runf(&r, "plan --model megatron-1t --cluster selene-like --gpus 8 "
                 "-o %s", out);
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
    static const char *const fmts[] = {"table", "json", "yaml", "megatron",
                                       "nemo", "deepspeed"};
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
        cli_runf(&a, "plan --model megatron-3.6b --cluster selene-like "
                     "--gpus 64 --global-batch 512 --top 4 --no-timing "
                     "--format json --jobs %d", jobs);
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
    assert_true(fabs(atof(pp_map_get(y0, "iteration_time_s")->scalar)
                     - num(c0, "iteration_time_s"))
                <= 1e-9 * num(c0, "iteration_time_s"));
    pp_doc_free(doc);

    /* NeMo: the layout's parallelism keys. */
    pp_parallel p;
    pp_parallel_init(&p);
    pp_parallel_parse(json_string_value(json_object_get(c0, "parallel")), &p,
                      &e);
    if (pp_doc_load_string("nemo.yaml", nemo, strlen(nemo), &doc, &e))
        fail_msg("%s", e.msg);
    root = pp_doc_root(doc);
    pp_node *tr = pp_map_get(root, "trainer"), *md = pp_map_get(root, "model");
    assert_int_equal(atoll(pp_map_get(tr, "devices")->scalar)
                         * atoll(pp_map_get(tr, "num_nodes")->scalar),
                     64);
    assert_int_equal(atoll(pp_map_get(md, "tensor_model_parallel_size")->scalar),
                     p.tp);
    assert_int_equal(atoll(pp_map_get(md, "pipeline_model_parallel_size")->scalar),
                     p.pp);
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

/* The rank placement: simulated as asked, reported, and asked of the
 * launcher.  GPT-3 175B at TP 8 x PP 16 x DP 8 on titan: tp,pp,dp puts a
 * pipeline's stages on 16 adjacent servers, tp,dp,pp puts them 8 servers
 * apart, where their sends share spine links. */
static void test_placement(void **state) {
    (void)state;
    const char *base = "plan --model gpt3-175b --cluster titan --gpus 1024 "
                       "--global-batch 1536 --top 1 --no-timing "
                       "--fix tp=8,pp=16,mbs=1,vp=1,sp=off,recompute=full,"
                       "zero=1,overlap=off";
    const char *order[2] = {"tp,pp,dp", "tp,dp,pp"};
    double t[2];
    for (int k = 0; k < 2; k++) {
        cli_result r;
        cli_runf(&r, "%s --placement %s --format json", base, order[k]);
        if (r.status) fail_msg("exit %d: %s", r.status, r.err);
        json_t *j = cli_json(&r);
        assert_string_equal(json_string_value(json_object_get(j, "placement")),
                            order[k]);
        json_t *c0 = json_array_get(json_object_get(j, "candidates"), 0);
        assert_true(json_is_true(json_object_get(c0, "simulated")));
        t[k] = num(c0, "iteration_time_s");
        /* podplan simulate with that placement gives the same time. */
        cli_result s;
        cli_runf(&s, "simulate --model gpt3-175b --cluster titan --parallel "
                     "%s --placement %s --format json",
                 json_string_value(json_object_get(c0, "parallel")),
                 order[k]);
        if (s.status) fail_msg("simulate: exit %d: %s", s.status, s.err);
        json_t *js = cli_json(&s);
        assert_true(num(js, "iteration_time_s") == t[k]);
        json_decref(js);
        cli_result_free(&s);
        json_decref(j);
        cli_result_free(&r);

        /* Megatron-LM is asked for TP, PP, DP only when that is the plan;
         * NeMo gets the key either way. */
        cli_runf(&r, "%s --placement %s --format megatron", base, order[k]);
        if (r.status) fail_msg("exit %d: %s", r.status, r.err);
        const char *flag = megatron_value(r.out, "--use-tp-pp-dp-mapping",
                                          NULL, 0);
        if (k == 0) assert_non_null(flag);
        else assert_null(flag);
        assert_non_null(strstr(r.out, order[k]));
        cli_result_free(&r);
        cli_runf(&r, "%s --placement %s --format nemo", base, order[k]);
        if (r.status) fail_msg("exit %d: %s", r.status, r.err);
        assert_non_null(strstr(r.out, k == 0 ? "use_tp_pp_dp_mapping: true"
                                             : "use_tp_pp_dp_mapping: false"));
        cli_result_free(&r);
    }
    assert_true(t[0] != t[1]);

    /* The default is tp,pp,dp; DeepSpeed's is tp,dp,pp, and a layout
     * without PP or DP does not need the flag. */
    cli_result r;
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "ranks tp,pp,dp"));
    cli_result_free(&r);
    cli_runf(&r, "plan --model megatron-1.7b --cluster selene-like --gpus 32 "
                 "--global-batch 512 --top 0 --fix pp=1 --format megatron");
    assert_int_equal(r.status, 0);
    assert_null(megatron_value(r.out, "--use-tp-pp-dp-mapping", NULL, 0));
    cli_result_free(&r);
}

/* DeepSpeed's pipeline engine runs ZeRO 0 and 1 only: with --format
 * deepspeed a pipelined layout never has stage 2 or 3, and with megatron
 * no layout has ZeRO above 1. */
static void test_targets(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0 --format deepspeed --fix pp=8");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    json_t *d = cli_json(&r);
    assert_true(num(json_object_get(d, "zero_optimization"), "stage") <= 1);
    assert_int_equal((int64_t)num(json_object_get(d, "pipeline"), "stages"), 8);
    int64_t mbs = (int64_t)num(d, "train_micro_batch_size_per_gpu");
    int64_t gas = (int64_t)num(d, "gradient_accumulation_steps");
    int64_t tp = (int64_t)num(json_object_get(d, "tensor_parallel"),
                              "autotp_size");
    assert_int_equal(mbs * gas * (1024 / (tp * 8)), 1536);
    json_decref(d);
    cli_result_free(&r);

    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0 --format megatron --fix zero=3");
    assert_int_equal(r.status, 2);
    cli_result_free(&r);
}

/* Uneven pipeline splits.  A LLaMA-3-8B-like shape (128,256-entry
 * vocabulary, h 4096): its logit layer costs about 2.4 layers, so at
 * pp = 4 the last stage is the slowest of an even split, and --uneven must
 * find a lighter one; the launch formats must say so in Megatron-LM's and
 * NeMo's words, and DeepSpeed (whose split lives in the model code) must
 * not be offered one. */
#define BIG_VOCAB "layers=32,hidden=4096,heads=32,seq=4096,vocab=128256"
static void test_uneven(void **state) {
    (void)state;
    cli_result r;
    char v[64];
    const char *base = "plan --model " BIG_VOCAB " --cluster selene-like "
                       "--gpus 64 --global-batch 256 --fix tp=2,pp=4,vp=1 "
                       "--top 0";
    cli_runf(&r, "%s --format json --no-timing", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    json_t *d = cli_json(&r);
    json_t *c0 = json_array_get(json_object_get(d, "candidates"), 0);
    const char *even = json_string_value(json_object_get(c0, "parallel"));
    assert_null(strstr(even, "first="));
    double t_even = num(c0, "iteration_time_s");
    cli_result u;
    cli_runf(&u, "%s --uneven --format json --no-timing", base);
    if (u.status) fail_msg("exit %d: %s", u.status, u.err);
    json_t *du = cli_json(&u);
    json_t *u0 = json_array_get(json_object_get(du, "candidates"), 0);
    const char *best = json_string_value(json_object_get(u0, "parallel"));
    assert_non_null(strstr(best, ",last="));
    assert_true(num(u0, "iteration_time_s") < 0.97 * t_even);
    /* Splits the stages cannot share evenly are counted, not offered. */
    assert_true(num(json_object_get(du, "rejected"), "split") > 0);
    json_decref(du);
    json_decref(d);
    cli_result_free(&u);
    cli_result_free(&r);

    /* Pinned without --uneven: honoured, and in the launch line. */
    cli_runf(&r, "%s --fix first=7,last=7 --format megatron", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_string_equal(megatron_value(r.out,
                                       "--decoder-first-pipeline-num-layers",
                                       v, sizeof v), "7");
    assert_string_equal(megatron_value(r.out,
                                       "--decoder-last-pipeline-num-layers",
                                       v, sizeof v), "7");
    cli_result_free(&r);
    /* With interleaving the chunks are given per rank. */
    cli_runf(&r, "plan --model " BIG_VOCAB " --cluster selene-like --gpus 64 "
                 "--global-batch 256 --fix tp=2,pp=4,vp=2,first=6,last=6 "
                 "--top 0 --format megatron");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_string_equal(megatron_value(r.out,
                                       "--num-virtual-stages-per-pipeline-rank",
                                       v, sizeof v), "2");
    assert_null(megatron_value(r.out, "--num-layers-per-virtual-pipeline-stage",
                               v, sizeof v));
    cli_result_free(&r);
    cli_runf(&r, "%s --fix first=7,last=7 --format nemo", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "num_layers_in_first_pipeline_stage: 7\n"));
    assert_non_null(strstr(r.out, "num_layers_in_last_pipeline_stage: 7\n"));
    cli_result_free(&r);
    /* DeepSpeed cannot express it: nothing is left to offer. */
    cli_runf(&r, "%s --fix first=7,last=7 --format deepspeed", base);
    assert_int_equal(r.status, 1);
    cli_result_free(&r);
    /* A pinned split the stages cannot share: nothing feasible, and bad
     * values are usage errors. */
    cli_runf(&r, "%s --fix first=7,last=8", base);
    assert_int_equal(r.status, 1);
    cli_result_free(&r);
    cli_runf(&r, "%s --fix first=x", base);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "first: expected a number of layers"));
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
        cmocka_unit_test(test_gpt3_titan),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_infeasible_cli),
        cmocka_unit_test(test_determinism_and_formats),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_uneven),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
