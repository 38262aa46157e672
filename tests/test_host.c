/*
 * tests/test_host.c: the host's kernel issue in a simulated iteration
 * (stack host.kernel_issue and host.moe_sync; sim/train/step.c's host
 * clock, the estimator's host term): a step is never faster than its
 * host issues the kernels, the host costs nothing when not modelled, and
 * a dropless MoE layer's synchronisation keeps the host from running
 * ahead; CUDA graphs (graphs=) leave the host one launch per graph, and
 * the launch formats carry them; plan's JSON carries the host's part.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli_run.h"
#include "podplan/planner.h"
#include "podplan/sim.h"

typedef struct run {
    pp_cluster *c;
    pp_model m;
    pp_parallel p;
    pp_gpu_profile g;
    pp_step_config cfg;
    pp_step_result r;
} run;

/* An H100 layout under Megatron-core 2024 with the host's time per kernel
 * set to k (sync_free: the MoE dispatch does not hold the host) and the
 * model's capacity factor set to cf when positive (drop-and-pad). */
static void run_sim_cf(run *x, const char *model, double cf, int nodes,
                       const char *spec, double k, bool sync_free) {
    pp_error e = PP_ERROR_INIT;
    char set[32];
    snprintf(set, sizeof set, "node.count=%d", nodes);
    const char *sets[] = {set};
    memset(x, 0, sizeof *x);
    if (pp_cluster_load("dgx-h100-ndr", sets, 1, NULL, &x->c, &e) ||
        pp_model_load(model, &x->m, &e) ||
        pp_profile_load(NULL, pp_cluster_info_get(x->c)->gpu, &x->g, &e))
        fail_msg("%s", e.msg);
    if (cf > 0) x->m.capacity_factor = cf;
    pp_parallel_init(&x->p);
    if (pp_parallel_parse(spec, &x->p, &e) ||
        pp_parallel_validate(&x->p, &x->m, &e))
        fail_msg("%s", e.msg);
    x->g.sw.host_kernel_s = k;
    x->g.sw.moe_sync_free = sync_free;
    pp_stack_resolve(&x->g, &x->p);
    pp_step_config_init(&x->cfg);
    pp_step_config_stack(&x->cfg, &x->g.sw);
    x->cfg.model = &x->m;
    x->cfg.par = &x->p;
    x->cfg.cluster = x->c;
    x->cfg.profile = &x->g;
    x->cfg.fidelity = PP_FIDELITY_ANALYTIC;
    if (pp_step_simulate(&x->cfg, &x->r, &e)) fail_msg("%s", e.msg);
    /* Every stage's parts add up to the iteration, host included. */
    for (size_t i = 0; i < x->r.n_stages; i++) {
        const pp_breakdown *b = &x->r.stages[i];
        double sum = b->compute_s + b->tp_comm_s + b->pp_comm_s +
                     b->dp_comm_exposed_s + b->bubble_s + b->other_s +
                     b->ep_comm_s + b->cp_comm_s + b->host_s;
        if (!(fabs(sum - x->r.iteration_time_s) <=
              1e-9 * x->r.iteration_time_s))
            fail_msg("stage %zu: parts %.12g, iteration %.12g", i, sum,
                     x->r.iteration_time_s);
    }
}

static void run_sim(run *x, const char *model, int nodes, const char *spec,
                    double k, bool sync_free) {
    run_sim_cf(x, model, 0, nodes, spec, k, sync_free);
}

static void run_fini(run *x) {
    pp_step_result_fini(&x->r);
    pp_cluster_free(x->c);
}

#define DENSE "megatron-1.7b"
#define DENSE_SPEC "tp=8,pp=1,dp=1,mbs=1,gbs=4"

/* Not modelled (0 per kernel): no stage waits for the host, with or
 * without the MoE synchronisation, and the iteration is the same. */
static void test_host_off(void **state) {
    (void)state;
    run a, b;
    run_sim(&a, "qwen3-30b-a3b", 2, "tp=1,pp=2,dp=8,ep=8,mbs=1,gbs=64,zero=1",
            0, false);
    run_sim(&b, "qwen3-30b-a3b", 2, "tp=1,pp=2,dp=8,ep=8,mbs=1,gbs=64,zero=1",
            0, true);
    for (size_t i = 0; i < a.r.n_stages; i++)
        assert_true(a.r.stages[i].host_s == 0);
    assert_true(a.r.iteration_time_s == b.r.iteration_time_s);
    run_fini(&a);
    run_fini(&b);
}

/* A host far slower than the GPU (1 ms per kernel): the iteration takes
 * at least the host's time for every layer's kernels of every
 * micro-batch; the kernels themselves take as long as before; the
 * estimator adds the same bound. */
static void test_host_bound(void **state) {
    (void)state;
    run fast, slow;
    run_sim(&fast, DENSE, 1, DENSE_SPEC, 0, false);
    run_sim(&slow, DENSE, 1, DENSE_SPEC, 1e-3, false);
    pp_layer_cost lc;
    pp_error e = PP_ERROR_INIT;
    if (pp_layer_cost_get(&slow.g, &slow.m, &slow.p, &lc, &e))
        fail_msg("%s", e.msg);
    double nmb = 4, host = nmb * (double)slow.m.layers * lc.host_s;
    assert_true(lc.host_s > 20e-3); /* tens of kernels per layer */
    printf("  %s %s: %.4f s without the host, %.4f s at 1 ms per kernel "
           "(layers' kernels alone %.4f s)\n",
           DENSE, DENSE_SPEC, fast.r.iteration_time_s, slow.r.iteration_time_s,
           host);
    assert_true(slow.r.iteration_time_s >= host);
    assert_true(slow.r.total.host_s > 0.9 * (host - fast.r.iteration_time_s));
    /* The same kernels (their times summed in another order). */
    assert_true(fabs(slow.r.total.compute_s - fast.r.total.compute_s) <=
                1e-9 * fast.r.total.compute_s);

    pp_plan_estimator *x;
    if (pp_plan_estimator_new(&slow.m, slow.c, &slow.g, &x, &e))
        fail_msg("%s", e.msg);
    double t;
    pp_breakdown b;
    if (pp_plan_estimate(x, &slow.p, true, &t, &b, &e)) fail_msg("%s", e.msg);
    assert_true(t >= host && b.host_s > 0);
    pp_plan_estimator_free(x);
    run_fini(&fast);
    run_fini(&slow);
}

/* Dropless MoE: the host waits for the GPU before each layer's dispatch,
 * so it cannot issue ahead while a pipeline stage waits for its input.
 * At 50 us per kernel (the host a little faster than the GPU) the
 * synchronised iteration is slower and its stages wait for the host
 * where the sync-free one's hardly do. */
static void test_moe_sync(void **state) {
    (void)state;
    const char *spec = "tp=1,pp=2,dp=8,ep=8,mbs=1,gbs=64,zero=1";
    run s, f;
    run_sim(&s, "qwen3-30b-a3b", 2, spec, 50e-6, false);
    run_sim(&f, "qwen3-30b-a3b", 2, spec, 50e-6, true);
    printf("  qwen3-30b-a3b %s: %.4f s synchronised (host %.4f s), %.4f s "
           "sync-free (host %.4f s)\n",
           spec, s.r.iteration_time_s, s.r.total.host_s, f.r.iteration_time_s,
           f.r.total.host_s);
    assert_true(s.r.iteration_time_s > 1.05 * f.r.iteration_time_s);
    assert_true(s.r.total.host_s > 0.05 * s.r.iteration_time_s);
    assert_true(f.r.total.host_s < 0.01 * f.r.iteration_time_s);
    run_fini(&s);
    run_fini(&f);
}

/* Drop-and-pad (a capacity factor) needs no synchronisation: every
 * split is the capacity (Megatron-core's alltoall dispatcher keeps its
 * sync point at no_sync when it pads).  At capacity factor 1 balanced
 * routing pads nothing, so the kernels are the dropless layer's, and the
 * step runs as the sync-free one; and its MoE layers can be captured
 * with the rest of the iteration (graphs=full), which leaves the host
 * next to nothing to wait for. */
static void test_moe_pad(void **state) {
    (void)state;
    const char *spec = "tp=1,pp=2,dp=8,ep=8,mbs=1,gbs=64,zero=1";
    run s, f, d, g;
    run_sim(&s, "qwen3-30b-a3b", 2, spec, 50e-6, false);
    run_sim(&f, "qwen3-30b-a3b", 2, spec, 50e-6, true);
    run_sim_cf(&d, "qwen3-30b-a3b", 1.0, 2, spec, 50e-6, false);
    char gspec[96];
    snprintf(gspec, sizeof gspec, "%s,graphs=full", spec);
    run_sim_cf(&g, "qwen3-30b-a3b", 1.0, 2, gspec, 50e-6, false);
    printf("  qwen3-30b-a3b %s: %.4f s dropless, %.4f s drop-and-pad at "
           "capacity 1 (host %.4f s), %.4f s with graphs=full (host %.4f "
           "s)\n",
           spec, s.r.iteration_time_s, d.r.iteration_time_s, d.r.total.host_s,
           g.r.iteration_time_s, g.r.total.host_s);
    assert_true(d.r.total.compute_s == f.r.total.compute_s);
    assert_true(d.r.iteration_time_s == f.r.iteration_time_s);
    assert_true(s.r.iteration_time_s > 1.05 * d.r.iteration_time_s);
    assert_true(g.r.total.host_s < 0.2 * d.r.total.host_s + 1e-6);
    assert_true(g.r.iteration_time_s < d.r.iteration_time_s);
    /* HybridEP with a rank capacity (dispatcher=hybridep,rank_capacity):
     * sync-free as well, the step of a stack whose dispatch never holds
     * the host, where HybridEP without it waits. */
    char hspec[128], rspec[160];
    snprintf(hspec, sizeof hspec, "%s,dispatcher=hybridep", spec);
    snprintf(rspec, sizeof rspec, "%s,rank_capacity=1.5", hspec);
    run hs, hf, hr;
    run_sim(&hs, "qwen3-30b-a3b", 2, hspec, 50e-6, false);
    run_sim(&hf, "qwen3-30b-a3b", 2, hspec, 50e-6, true);
    run_sim(&hr, "qwen3-30b-a3b", 2, rspec, 50e-6, false);
    printf("  with HybridEP: %.4f s waiting for the counts, %.4f s with a "
           "rank capacity\n",
           hs.r.iteration_time_s, hr.r.iteration_time_s);
    assert_true(hr.r.iteration_time_s == hf.r.iteration_time_s);
    assert_true(hs.r.iteration_time_s > 1.05 * hr.r.iteration_time_s);
    run_fini(&hs);
    run_fini(&hf);
    run_fini(&hr);
    run_fini(&s);
    run_fini(&f);
    run_fini(&d);
    run_fini(&g);
}

/* graphs= reads back as written; what Megatron-core refuses is refused
 * with what was expected. */
static void test_graphs_spec(void **state) {
    (void)state;
    pp_parallel p;
    pp_error e = PP_ERROR_INIT;
    char buf[PP_SPEC_MAX];
    pp_parallel_init(&p);
    assert_int_equal(
        pp_parallel_parse("tp=1,graphs=moe_router+attn+moe_preprocess", &p, &e),
        0);
    assert_int_equal(p.graphs, PP_GRAPH_ATTN | PP_GRAPH_MOE_ROUTER |
                                   PP_GRAPH_MOE_PREPROCESS);
    assert_non_null(strstr(pp_parallel_format(&p, buf, sizeof buf),
                           ",graphs=attn+moe_router+moe_preprocess"));
    assert_int_equal(pp_parallel_parse("graphs=none", &p, &e), 0);
    assert_int_equal(p.graphs, 0);
    assert_null(strstr(pp_parallel_format(&p, buf, sizeof buf), "graphs"));
    const char *bad[][2] = {
        {"graphs=attn+attn", "each once"},
        {"graphs=attn+bogus", "expected none or scopes"},
        {"graphs=", "expected none or scopes"},
        {"graphs=full+attn", "full captures the whole iteration"},
        {"graphs=moe_preprocess", "moe_preprocess needs moe_router"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_error_clear(&e);
        pp_parallel_init(&p);
        int rc = pp_parallel_parse(bad[i][0], &p, &e);
        if (rc != PP_EINPUT || !strstr(e.msg, "--parallel: graphs: ") ||
            !strstr(e.msg, bad[i][1]))
            fail_msg("%s: rc %d, \"%s\"", bad[i][0], rc, e.msg);
    }
    /* Against the model: a router needs experts, and a dropless MoE
     * model's token counts keep a whole-iteration graph out. */
    pp_error_clear(&e);
    pp_model dense, moe;
    if (pp_model_load(DENSE, &dense, &e) ||
        pp_model_load("qwen3-30b-a3b", &moe, &e))
        fail_msg("%s", e.msg);
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("tp=8,graphs=moe_router", &p, &e), 0);
    if (pp_parallel_validate(&p, &dense, &e) != PP_EINPUT ||
        !strstr(e.msg, "graphs: moe_router"))
        fail_msg("moe_router on a dense model: \"%s\"", e.msg);
    pp_error_clear(&e);
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("ep=1,graphs=full", &p, &e), 0);
    if (pp_parallel_validate(&p, &moe, &e) != PP_EINPUT ||
        !strstr(e.msg, "graphs: full") || !strstr(e.msg, "capacity_factor"))
        fail_msg("full on an MoE model: \"%s\"", e.msg);
    pp_error_clear(&e);
    assert_int_equal(pp_parallel_validate(&p, &dense, &e), 0);
    moe.capacity_factor = 1.25; /* drop-and-pad: static shapes */
    assert_int_equal(pp_parallel_validate(&p, &moe, &e), 0);
}

/* Graphed scopes cost the host one launch each: with attention, router
 * and preprocessing graphed a host-bound MoE step waits less for its
 * host (the same kernels); a whole-iteration graph leaves a dense step
 * nearly nothing to wait for even at 1 ms per kernel. */
static void test_graphs_host(void **state) {
    (void)state;
    const char *spec = "tp=1,pp=2,dp=8,ep=8,mbs=1,gbs=64,zero=1";
    char gspec[128];
    snprintf(gspec, sizeof gspec, "%s,graphs=attn+moe_router+moe_preprocess",
             spec);
    run a, b;
    run_sim(&a, "qwen3-30b-a3b", 2, spec, 100e-6, false);
    run_sim(&b, "qwen3-30b-a3b", 2, gspec, 100e-6, false);
    printf("  qwen3-30b-a3b at 100 us per kernel: host %.4f s eager, %.4f s "
           "with attention, router and preprocessing graphed\n",
           a.r.total.host_s, b.r.total.host_s);
    assert_true(b.r.total.host_s < 0.9 * a.r.total.host_s);
    assert_true(b.r.iteration_time_s < a.r.iteration_time_s);
    assert_true(fabs(b.r.total.compute_s - a.r.total.compute_s) <=
                1e-9 * a.r.total.compute_s);
    run_fini(&a);
    run_fini(&b);

    run c, d;
    run_sim(&c, DENSE, 1, DENSE_SPEC, 1e-3, false);
    run_sim(&d, DENSE, 1, DENSE_SPEC ",graphs=full", 1e-3, false);
    assert_true(c.r.total.host_s > 1.0);
    assert_true(d.r.total.host_s < 0.05 * c.r.total.host_s);
    run_fini(&c);
    run_fini(&d);
}

/* The launch formats carry a pinned graphs= as Megatron-core and NeMo
 * name it. */
static void test_graphs_launch(void **state) {
    (void)state;
    const char *base =
        "plan --model qwen3-30b-a3b --cluster dgx-b200-ndr --set "
        "node.count=1 --gpus 8 --global-batch 512 --top 0 --fix "
        "tp=1,pp=1,ep=8,mbs=1,graphs=attn+moe_router+moe_preprocess --format";
    const char *want[][2] = {
        {"megatron", "--cuda-graph-impl transformer_engine \\\n"
                     "    --cuda-graph-scope attn moe_router moe_preprocess"},
        {"nemo", "cuda_graph_impl: transformer_engine\n"
                 "  cuda_graph_scope: [attn, moe_router, moe_preprocess]"},
        {"nemo2", "cuda_graph_impl=\"transformer_engine\",\n"
                  "    cuda_graph_scope=[\"attn\", \"moe_router\", "
                  "\"moe_preprocess\"]"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cli_result r;
        cli_runf(&r, "%s %s", base, want[i][0]);
        if (r.status != 0)
            fail_msg("%s: exit %d: %s", want[i][0], r.status, r.err);
        if (!strstr(r.out, want[i][1]))
            fail_msg("%s lacks \"%s\"", want[i][0], want[i][1]);
        assert_non_null(strstr(r.out, "graphs=attn+moe_router+moe_preprocess"));
        cli_result_free(&r);
    }
    cli_result r;
    cli_runf(&r, "plan --model megatron-1.7b --cluster dgx-h100-ndr --gpus 8 "
                 "--global-batch 8 --top 0 --fix tp=8,graphs=full --format "
                 "megatron");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--cuda-graph-impl local \\\n"
                                  "    --cuda-graph-scope full_iteration"));
    cli_result_free(&r);
    /* An MoE model with a capacity factor: drop-and-pad, whole-iteration
     * graphs allowed, and the padding podplan simulates asked for. */
    const char *cf = "layers=4,hidden=1024,heads=8,seq=2048,vocab=32000,"
                     "ffn=swiglu,ffn_hidden=2816,experts=8,top_k=2,"
                     "expert_ffn_hidden=2816,capacity_factor=1.25";
    const char *cfwant[][2] = {
        {"megatron", "--moe-expert-capacity-factor 1.25 \\\n"
                     "    --moe-pad-expert-input-to-capacity"},
        {"megatron", "--cuda-graph-scope full_iteration"},
        {"nemo", "moe_expert_capacity_factor: 1.25\n"
                 "  moe_pad_expert_input_to_capacity: true"},
    };
    for (size_t i = 0; i < sizeof cfwant / sizeof cfwant[0]; i++) {
        cli_runf(&r,
                 "plan --model %s --cluster dgx-h100-ndr --gpus 8 "
                 "--global-batch 64 --top 0 --fix tp=1,pp=1,ep=8,mbs=1,"
                 "graphs=full --format %s",
                 cf, cfwant[i][0]);
        if (r.status != 0)
            fail_msg("%s: exit %d: %s", cfwant[i][0], r.status, r.err);
        if (!strstr(r.out, cfwant[i][1]))
            fail_msg("%s lacks \"%s\"", cfwant[i][0], cfwant[i][1]);
        cli_result_free(&r);
    }
    cli_runf(&r, "plan --model megatron-1.7b --cluster dgx-h100-ndr --gpus 8 "
                 "--global-batch 8 --exclude graphs=attn");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--exclude: graphs: not searched"));
    cli_result_free(&r);
}

/* plan's JSON carries the parts simulate's has (EP comm, host), so each
 * candidate's parts add up to its time, and the host makes the planner
 * prefer the micro-batch NVIDIA's GB200 preset runs for Qwen3-30B-A3B. */
static void test_plan_parts(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model qwen3-30b-a3b --cluster dgx-b200-ndr --set "
                 "node.count=1 --gpus 8 --global-batch 512 --stack nemo-2025 "
                 "--top 0 --format json");
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    json_t *cs = json_object_get(j, "candidates");
    assert_true(json_array_size(cs) >= 5);
    for (size_t i = 0; i < 5; i++) {
        json_t *c = json_array_get(cs, i), *b = json_object_get(c, "breakdown");
        double sum = 0,
               t = json_number_value(json_object_get(c, "iteration_time_s"));
        const char *k;
        json_t *v;
        json_object_foreach(b, k, v) sum += json_number_value(v);
        assert_non_null(json_object_get(b, "host_s"));
        assert_non_null(json_object_get(b, "ep_comm_s"));
        if (!(fabs(sum - t) <= 1e-9 * t))
            fail_msg("candidate %zu: parts %.12g, time %.12g", i, sum, t);
    }
    const char *best =
        json_string_value(json_object_get(json_array_get(cs, 0), "parallel"));
    assert_non_null(strstr(best, "mbs=4"));
    json_decref(j);
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_off),
        cmocka_unit_test(test_host_bound),
        cmocka_unit_test(test_moe_sync),
        cmocka_unit_test(test_moe_pad),
        cmocka_unit_test(test_graphs_spec),
        cmocka_unit_test(test_graphs_host),
        cmocka_unit_test(test_graphs_launch),
        cmocka_unit_test(test_plan_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
