/*
 * tests/test_hybridep.c: NVIDIA's HybridEP dispatcher (dispatcher=
 * hybridep, Megatron-core's flex backend) and its per-rank expert
 * capacity (rank_capacity=X, --moe-expert-rank-capacity-factor): the SPEC
 * keys and the rules on them, HybridEP routed as DeepEP with its own SMs,
 * the sync-free dispatch the capacity gives and the whole-iteration graph
 * it allows, the planner's pins and the launch formats.
 */
#include "models_util.h"

#include <jansson.h>

#include "cli_run.h"
#include "podplan/hw.h"

/* The keys read back as written; HybridEP routes as DeepEP; a capacity
 * below one balanced share, or not a number, is refused. */
static void test_spec(void **state) {
    (void)state;
    char buf[512];
    pp_parallel p = layout("tp=1,dp=8,ep=8,dispatcher=hybridep,"
                           "rank_capacity=1.5");
    assert_true(p.hybridep && p.deepep);
    assert_true(p.rank_capacity == 1.5);
    pp_parallel_format(&p, buf, sizeof buf);
    assert_contains(buf, ",dispatcher=hybridep");
    assert_contains(buf, ",rank_capacity=1.5");
    p = layout("dispatcher=deepep,rank_capacity=0");
    assert_true(p.deepep && !p.hybridep && p.rank_capacity == 0);
    assert_null(strstr(pp_parallel_format(&p, buf, sizeof buf), "rank_"));
    const char *bad[] = {"rank_capacity=0.5", "rank_capacity=-1",
                         "rank_capacity=wide", "rank_capacity=65",
                         "rank_capacity="};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_parallel_error(bad[i], "--parallel: rank_capacity: expected "
                                      "0 (none) or 1 to 64");
}

/* Megatron-core sizes HybridEP's buffers by the capacity: it needs that
 * dispatcher and experts, and is not the per-expert capacity; with it
 * (not without) the MoE layers can be captured with the iteration. */
static void test_rules(void **state) {
    (void)state;
    pp_model q = load("qwen3-30b-a3b"), l = load("llama3-8b");
    pp_error e = PP_ERROR_INIT;
    pp_parallel ok = layout("tp=1,dp=8,ep=8,mbs=1,gbs=64,dispatcher=hybridep,"
                            "rank_capacity=1.5,graphs=full");
    assert_int_equal(pp_parallel_validate(&ok, &q, &e), 0);
    expect_invalid(&q,
                   "tp=1,dp=8,ep=8,mbs=1,gbs=64,dispatcher=deepep,"
                   "rank_capacity=2",
                   "rank_capacity: needs dispatcher=hybridep");
    expect_invalid(&l,
                   "tp=1,dp=8,mbs=1,gbs=64,dispatcher=hybridep,"
                   "rank_capacity=2",
                   "rank_capacity: model llama3-8b has no experts");
    expect_invalid(&q,
                   "tp=1,dp=8,ep=8,mbs=1,gbs=64,dispatcher=hybridep,"
                   "graphs=full",
                   "dispatcher=hybridep with rank_capacity");
    q.capacity_factor = 1.25;
    expect_invalid(&q,
                   "tp=1,dp=8,ep=8,mbs=1,gbs=64,dispatcher=hybridep,"
                   "rank_capacity=1.5",
                   "capacity_factor");
}

static double part(json_t *sim, const char *key) {
    return cli_num(json_object_get(sim, "breakdown"), key);
}

#define SIM                                                                    \
    "simulate --model qwen3-30b-a3b --cluster dgx-h100-ndr --set "             \
    "node.count=2 --stack nemo-2025 --placement tp,dp,pp --parallel "          \
    "tp=1,pp=1,dp=16,ep=16,etp=1,mbs=1,gbs=64,zero=1,%s --format json"

/* HybridEP moves DeepEP's bytes: the same iteration without the overlap.
 * Beside an overlapped dispatch its 32 SMs (nemo-2025's
 * moe.overlap_sms.hybridep) slow the compute more than DeepEP's 20. */
static void test_simulate(void **state) {
    (void)state;
    json_t *d = cli_json_ok(SIM, "dispatcher=deepep");
    json_t *h = cli_json_ok(SIM, "dispatcher=hybridep");
    assert_true(cli_num(d, "iteration_time_s") ==
                cli_num(h, "iteration_time_s"));
    assert_true(part(d, "ep_comm_s") == part(h, "ep_comm_s"));
    json_t *dov = cli_json_ok(SIM, "dispatcher=deepep,a2a_overlap=on");
    json_t *hov = cli_json_ok(SIM, "dispatcher=hybridep,a2a_overlap=on");
    printf("  compute beside the overlapped dispatch: DeepEP %.4f s, "
           "HybridEP %.4f s\n",
           part(dov, "compute_s"), part(hov, "compute_s"));
    assert_true(part(hov, "compute_s") > part(dov, "compute_s"));
    cli_assert_parts(hov);
    json_decref(d);
    json_decref(h);
    json_decref(dov);
    json_decref(hov);

    pp_catalog *cat;
    pp_error e = PP_ERROR_INIT;
    pp_gpu_profile g;
    if (pp_catalog_load(NULL, &cat, &e) ||
        pp_profile_load_stack(NULL, pp_catalog_gpu(cat, "h100-sxm5"),
                              "nemo-2025", &g, NULL, &e))
        fail_msg("%s", e.msg);
    pp_parallel p;
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("dispatcher=hybridep", &p, &e), 0);
    assert_true(pp_profile_a2a_beside(&g, &p) ==
                pp_profile_beside_nccl(&g, 32));
    assert_int_equal(pp_parallel_parse("dispatcher=deepep", &p, &e), 0);
    assert_true(pp_profile_a2a_beside(&g, &p) ==
                pp_profile_beside_nccl(&g, 20));
    /* Busy SMs cost more than idle ones (h100.yaml). */
    assert_true(pp_profile_a2a_beside(&g, &p) >
                pp_profile_beside_comm(&g, 20) + 0.1);
    /* Without compute_beside_nccl, compute_beside_comm's lower bound. */
    g.n_beside_nccl = 0;
    assert_true(pp_profile_a2a_beside(&g, &p) ==
                pp_profile_beside_comm(&g, 20));
    pp_catalog_free(cat);
}

/* One DGX B200 at micro-batch 1, where the host paces Qwen3-30B-A3B's
 * step (README, "The host"). */
#define HOSTSIM                                                                \
    "simulate --model qwen3-30b-a3b --cluster dgx-b200-ndr --set "             \
    "node.count=1 --stack nemo-2025 --parallel tp=1,pp=1,dp=8,ep=8,mbs=1,"     \
    "gbs=64,zero=1,%s --format json"

/* The capacity frees the host from the counts (the same kernels, no
 * wait before each dispatch), and lets the whole iteration be one graph,
 * which leaves the host nothing to wait for. */
static void test_sync_free(void **state) {
    (void)state;
    json_t *h = cli_json_ok(HOSTSIM, "dispatcher=hybridep");
    json_t *r = cli_json_ok(HOSTSIM, "dispatcher=hybridep,rank_capacity=1.5");
    json_t *g = cli_json_ok(
        HOSTSIM, "dispatcher=hybridep,rank_capacity=1.5,graphs=full");
    printf("  HybridEP: %.4f s (host %.4f s); with a rank capacity %.4f s "
           "(host %.4f s); and graphs=full %.4f s (host %.4f s)\n",
           cli_num(h, "iteration_time_s"), part(h, "host_s"),
           cli_num(r, "iteration_time_s"), part(r, "host_s"),
           cli_num(g, "iteration_time_s"), part(g, "host_s"));
    /* Host-bound either way here; test_host's test_moe_pad shows the
     * wait it saves where the GPU nearly keeps up. */
    assert_true(part(r, "compute_s") == part(h, "compute_s"));
    assert_true(part(r, "host_s") < part(h, "host_s"));
    assert_true(cli_num(r, "iteration_time_s") <
                cli_num(h, "iteration_time_s"));
    assert_true(part(g, "host_s") < 1e-3 * cli_num(g, "iteration_time_s"));
    assert_non_null(strstr(json_string_value(json_object_get(g, "parallel")),
                           "rank_capacity=1.5"));
    json_decref(h);
    json_decref(r);
    json_decref(g);
}

/* plan pins HybridEP and the capacity (not searched: no exclusion), and
 * the launch formats ask for the dispatcher, its SMs, the capacity and
 * the paged stash; a pin no layout can meet is refused before the
 * search. */
static void test_plan(void **state) {
    (void)state;
    const char *cmd =
        "plan --model qwen3-30b-a3b --cluster dgx-h100-ndr --set node.count=2 "
        "--gpus 16 --global-batch 256 --stack %s --fix tp=1,pp=1,ep=16,%s "
        "--top 1 --format %s";
    const char *pin = "dispatcher=hybridep,rank_capacity=1.5,graphs=full";
    cli_expect(0,
               "  moe_token_dispatcher_type: flex\n"
               "  moe_flex_dispatcher_backend: hybridep\n"
               "  moe_hybridep_num_sms: 32\n",
               cmd, "nemo-2025", pin, "nemo");
    cli_expect(0,
               "  moe_expert_rank_capacity_factor: 1.5\n"
               "  moe_paged_stash: true\n"
               "  use_transformer_engine_op_fuser: true\n",
               cmd, "nemo-2025", pin, "nemo");
    /* Megatron-LM's flags, through a stack that launches it. */
    const char *yaml = "/tmp/podplan-test-hybridep-stack.yaml";
    FILE *f = fopen(yaml, "w");
    assert_non_null(f);
    fputs("name: hep\nframework: Megatron-LM\nversion: core 0.16\n"
          "launch: [megatron]\nmoe:\n  overlap_sms: {hybridep: 24}\n",
          f);
    fclose(f);
    cli_expect(0,
               "--moe-token-dispatcher-type flex \\\n"
               "    --moe-flex-dispatcher-backend hybridep \\\n"
               "    --moe-hybridep-num-sms 24 \\\n",
               cmd, yaml, pin, "megatron");
    cli_expect(0,
               "--moe-expert-rank-capacity-factor 1.5 \\\n"
               "    --moe-paged-stash \\\n"
               "    --use-transformer-engine-op-fuser \\\n",
               cmd, yaml, pin, "megatron");
    remove(yaml);
    cli_expect(2, "--fix rank_capacity=1.5: needs dispatcher=hybridep", cmd,
               "nemo-2025", "rank_capacity=1.5", "nemo");
    cli_expect(2, "rank_capacity: expected 1 to 64", cmd, "nemo-2025",
               "dispatcher=hybridep,rank_capacity=0.5", "nemo");
    cli_expect(2, "dispatcher: hybridep is not searched",
               "plan --model qwen3-30b-a3b --cluster dgx-h100-ndr --set "
               "node.count=2 --gpus 16 --global-batch 256 --exclude "
               "dispatcher=hybridep");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),     cmocka_unit_test(test_rules),
        cmocka_unit_test(test_simulate), cmocka_unit_test(test_sync_free),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
