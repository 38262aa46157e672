/*
 * tests/test_cp_comm.c: context parallelism's other two exchanges
 * (cp_comm=, Transformer Engine's AttnFuncWithCPAndKVAllGather and
 * AttnFuncWithCPAndQKVOA2A): their collectives exposed, in order, at
 * their sizes; the attention's FLOPs what the ring gives; the heads a2a
 * needs; the SPEC, the layer cost the estimator reads, their memory,
 * the simulated step, plan's search over the three, and the launch
 * flag.
 */
#include "models_util.h"

#include "cli_run.h"
#include "oplist_util.h"

/* Llama 3 70B, sequence 8192, TP 4, CP 4, on a B200 (as test_cp_ring.c):
 * a rank holds 2,048 tokens, 16 query heads and 2 K/V heads of 128. */
#define SPEC "tp=4,pp=1,cp=4,dp=1,mbs=1,gbs=1,sp=on,dtype=bf16"

static const double KV = 2.0 * 2 * 2048 * 256; /* this rank's K and V */
static const double Q = 2.0 * 2048 * 2048;     /* its Q, its output */

static void build(layer_lists *x, const char *comm) {
    char spec[128];
    snprintf(spec, sizeof spec, "%s,cp_comm=%s", SPEC, comm);
    x->m = load("llama3-70b");
    layer_lists_build(x, "b200", "nemo-2025", spec);
}

static bool near(double a, double b) {
    return fabs(a - b) <= 1e-9 * fabs(b);
}

/* The CP collective of l named `name`: exposed (nothing overlaps it),
 * of `op` and `bytes`; its index. */
static long exposed(const pp_op_table *l, const char *name, const char *op,
                    double bytes) {
    long i = op_at(l, name);
    assert_true(i >= 0);
    assert_string_equal(l->v[i].kind, "collective");
    assert_string_equal(l->v[i].group, "cp");
    assert_string_equal(l->v[i].coll, op);
    assert_true(l->v[i].overlap_s == 0);
    assert_true(near(l->v[i].bytes, bytes));
    return i;
}

static const char *const ring_ops[] = {
    "cp kv pack", "cp ring attention",     "cp out correction",
    "cp kv copy", "cp ring attention bwd", "cp dkv accumulate"};

static void no_ring(const layer_lists *x) {
    for (size_t i = 0; i < sizeof ring_ops / sizeof *ring_ops; i++) {
        assert_int_equal(op_at(&x->fw, ring_ops[i]), -1);
        assert_int_equal(op_at(&x->bw, ring_ops[i]), -1);
    }
}

/* The causal share of one rank, forward: 4 a s_q d s / 2. */
static const double F = 4.0 * 16 * 2048 * 128 * 8192 * 0.5;

static void test_all_gather(void **state) {
    (void)state;
    layer_lists x;
    build(&x, "all_gather");
    no_ring(&x);
    /* Forward: gather cp x the rank's K/V, then the kernels, then the
     * two chunks' outputs copied into one. */
    long ag = exposed(&x.fw, "cp kv all-gather", "allgather", 4 * KV);
    long at = op_at(&x.fw, "flash attn");
    long cp = op_at(&x.fw, "cp out copy");
    assert_true(ag < at && at < cp);
    assert_true(op_at(&x.fw, "cp kv reorder") == ag + 1);
    assert_true(near(x.fw.v[ag + 1].bytes, 2 * 4 * KV));
    assert_true(near(x.fw.v[at].flops, F));
    assert_true(x.fw.v[at].kernels == 2);
    assert_true(near(x.fw.v[cp].bytes, 2 * Q));
    /* Backward: gathered again, one kernel time of all the work (two
     * chunks on two streams, not the ring's four in a row), the K/V
     * gradients summed, reordered and reduce-scattered. */
    long bg = exposed(&x.bw, "cp kv all-gather", "allgather", 4 * KV);
    long bt = op_at(&x.bw, "flash attn bwd");
    long rs = exposed(&x.bw, "cp dkv reduce-scatter", "reducescatter", 4 * KV);
    assert_true(bg < bt && bt < rs);
    assert_int_equal(rs, op_at(&x.bw, "cp dkv reorder") + 1);
    assert_int_equal(rs, op_at(&x.bw, "cp dkv sum") + 2);
    assert_true(near(x.bw.v[bt].flops, 2.5 * F));
    layer_lists ring;
    build(&ring, "p2p");
    long rb = op_at(&ring.bw, "cp ring attention bwd");
    assert_true(x.bw.v[bt].time_s < ring.bw.v[rb].overlap_s);
    layer_lists_done(&ring);
    layer_lists_done(&x);
}

static void test_a2a(void **state) {
    (void)state;
    layer_lists x;
    build(&x, "a2a");
    no_ring(&x);
    /* Forward: Q, K and V traded for 1/cp of the heads over the whole
     * sequence, the output traded back. */
    long in = exposed(&x.fw, "cp a2a qkv", "alltoall", Q + KV);
    long at = op_at(&x.fw, "flash attn");
    long out = exposed(&x.fw, "cp a2a out", "alltoall", Q);
    assert_true(in < at && at < out);
    assert_true(near(x.fw.v[at].flops, F));
    assert_true(x.fw.v[at].kernels == 1);
    /* Backward: dO in, dQ, dK, dV out. */
    long din = exposed(&x.bw, "cp a2a dout", "alltoall", Q);
    long bt = op_at(&x.bw, "flash attn bwd");
    long dout = exposed(&x.bw, "cp a2a dqkv", "alltoall", Q + KV);
    assert_true(din < bt && bt < dout);
    assert_true(near(x.bw.v[bt].flops, 2.5 * F));
    layer_lists_done(&x);
}

/* cp_comm=a2a+p2p with cp_a2a 2 of cp 4: the all-to-alls of a2a over
 * the inner level (its own group, the rank's Q/K/V and output, as a2a's),
 * the ring over the outer two ranks around the attention (K/V of the
 * same bytes a step, 2 ranks: half p2p's exchange; two kernels
 * backward, not four), the same FLOPs. */
static void test_hierarchical(void **state) {
    (void)state;
    layer_lists x, ring;
    build(&x, "a2a+p2p,cp_a2a=2");
    build(&ring, "p2p");
    const char *inner[4] = {"cp a2a qkv", "cp a2a out", "cp a2a dout",
                            "cp a2a dqkv"};
    const double bytes[4] = {Q + KV, Q, Q, Q + KV};
    for (int k = 0; k < 4; k++) {
        const pp_op_table *l = k < 2 ? &x.fw : &x.bw;
        long i = op_at(l, inner[k]);
        assert_true(i >= 0);
        assert_string_equal(l->v[i].group, "cp_a2a");
        assert_string_equal(l->v[i].coll, "alltoall");
        assert_true(l->v[i].overlap_s == 0);
        assert_true(near(l->v[i].bytes, bytes[k]));
    }
    long f = op_at(&x.fw, "cp ring attention"),
         rf = op_at(&ring.fw, "cp ring attention");
    assert_true(op_at(&x.fw, "cp a2a qkv") < f &&
                f < op_at(&x.fw, "cp a2a out"));
    assert_string_equal(x.fw.v[f].group, "cp");
    assert_true(near(x.fw.v[f].bytes, 2 * KV));
    assert_true(near(ring.fw.v[rf].bytes, 4 * KV));
    assert_true(near(x.fw.v[f].flops, F));
    long b = op_at(&x.bw, "cp ring attention bwd");
    assert_true(near(x.bw.v[b].bytes, 2 * 2 * KV));
    assert_true(near(x.bw.v[b].flops, 2.5 * F));
    /* The ring's own kernels backward: a flash kernel and a dQ sum a
     * step, 2 steps, and the collective's. */
    assert_true(x.bw.v[b].kernels == 2 + 2 + 1);
    /* The ring's sums over its own 2 ranks: 2 + 2.25 passes. */
    long c = op_at(&x.fw, "cp out correction");
    assert_true(near(x.fw.v[c].bytes, 4.25 * Q));
    layer_lists_done(&ring);
    layer_lists_done(&x);
}

/* SPEC parsed and valid for m. */
static pp_parallel valid(const pp_model *m, const char *spec) {
    pp_parallel p = layout(spec);
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_parallel_validate(&p, m, &e), 0);
    return p;
}

/* a2a needs cp to divide each TP rank's query and K/V heads: Llama 3 70B
 * at TP 4 has 16 and 2. */
static void test_a2a_heads(void **state) {
    (void)state;
    pp_model m = load("llama3-70b");
    expect_invalid(&m, SPEC ",cp_comm=a2a",
                   "cp_comm: a2a splits each TP rank's heads over cp (4): "
                   "model llama3-70b has 16 query and 2 K/V heads per TP "
                   "rank (tp 4)");
    pp_parallel p = valid(&m, "tp=4,pp=1,cp=2,dp=1,mbs=1,gbs=1,cp_comm=a2a");
    assert_true(pp_parallel_cp_comm_ok(&p, &m));
    p.cp = 4;
    assert_false(pp_parallel_cp_comm_ok(&p, &m));
    p.cp_comm = PP_CPCOMM_ALL_GATHER;
    assert_true(pp_parallel_cp_comm_ok(&p, &m));
    /* a2a+p2p: its inner level splits the heads, cp_a2a its own key. */
    valid(&m, SPEC ",cp_comm=a2a+p2p,cp_a2a=2");
    expect_invalid(&m,
                   "tp=4,pp=1,cp=8,dp=1,mbs=1,gbs=1,cp_comm=a2a+p2p,"
                   "cp_a2a=4",
                   "cp_comm: a2a+p2p splits each TP rank's heads over "
                   "cp_a2a (4): model llama3-70b has 16 query and 2 K/V "
                   "heads per TP rank (tp 4)");
    expect_invalid(&m, SPEC ",cp_comm=a2a+p2p",
                   "cp_comm: a2a+p2p needs cp_a2a=N, the ranks of its "
                   "all-to-all level (Megatron-core's "
                   "--hierarchical-context-parallel-sizes N cp/N)");
    expect_invalid(&m, SPEC ",cp_comm=a2a+p2p,cp_a2a=4",
                   "cp_a2a: expected a divisor of cp (4) between 1 and cp, "
                   "exclusive, got 4");
    expect_invalid(&m, SPEC ",cp_a2a=2",
                   "cp_a2a: the all-to-all level of cp_comm=a2a+p2p (with "
                   "cp > 1), not of p2p");
}

/* Transformer Engine's ring does not run sliding windows: simulate
 * refuses the pair, plan all-gathers such a model's K/V unless pinned. */
static void test_window(void **state) {
    (void)state;
    const char *w = "name=w,layers=4,hidden=1024,heads=16,kv_heads=8,"
                    "ffn_hidden=4096,seq=16384,window=128,window_skip=2,"
                    "vocab=32000";
    pp_model m;
    load_model(w, &m);
    expect_invalid(&m, "tp=1,pp=1,cp=2,dp=1,mbs=1,gbs=1",
                   "cp_comm: model w has sliding-window layers, which "
                   "Transformer Engine's ring (p2p, the default) does not "
                   "run; all_gather or a2a");
    valid(&m, "tp=1,pp=1,cp=2,dp=1,mbs=1,gbs=1,cp_comm=a2a");
    json_t *plan = cli_json_ok("plan --model %s --cluster dgx-h100-ndr "
                               "--gpus 8 --global-batch 8 --fix cp=2 "
                               "--top 3 --format json --no-timing",
                               w);
    /* Not the ring: all_gather or a2a, as ranked. */
    assert_true(cli_candidates_all(plan, "cp_comm=", 1) > 0);
    json_decref(plan);
    plan = cli_json_ok("plan --model %s --cluster dgx-h100-ndr --gpus 8 "
                       "--global-batch 8 --fix cp=2,cp_comm=a2a --top 3 "
                       "--format json --no-timing",
                       w);
    assert_true(cli_candidates_all(plan, "cp_comm=a2a", 1) > 0);
    json_decref(plan);
}

/* The SPEC says cp_comm only when it is not the ring, and reads back. */
static void test_spec(void **state) {
    (void)state;
    char buf[PP_SPEC_MAX];
    pp_parallel p = layout(SPEC ",cp_comm=all_gather");
    assert_int_equal(p.cp_comm, PP_CPCOMM_ALL_GATHER);
    pp_parallel_format(&p, buf, sizeof buf);
    assert_contains(buf, ",cp_comm=all_gather");
    pp_parallel q = layout(buf);
    assert_int_equal(q.cp_comm, PP_CPCOMM_ALL_GATHER);
    p = layout(SPEC ",cp_comm=a2a+p2p,cp_a2a=2");
    pp_parallel_format(&p, buf, sizeof buf);
    assert_contains(buf, ",cp_comm=a2a+p2p,cp_a2a=2");
    q = layout(buf);
    assert_int_equal(q.cp_a2a, 2);
    assert_int_equal(pp_parallel_cp_a2a(&q), 2);
    assert_int_equal(pp_parallel_cp_ring(&q), 2);
    p = layout(SPEC ",cp_comm=p2p");
    assert_int_equal(pp_parallel_cp_a2a(&p), 1);
    assert_int_equal(pp_parallel_cp_ring(&p), 4);
    pp_parallel_format(&p, buf, sizeof buf);
    assert_null(strstr(buf, "cp_comm"));
    expect_parallel_error(
        SPEC ",cp_comm=ring",
        "cp_comm: expected one of p2p|all_gather|a2a|a2a+p2p, "
        "got \"ring\"");
}

/* What the planner's estimator reads: the same bytes, none of them under
 * compute, where the ring hides its exchange under the attention. */
static void test_layer_cost(void **state) {
    (void)state;
    pp_model m = load("llama3-70b");
    pp_gpu_profile g = load_gpu_profile("b200", "nemo-2025");
    pp_layer_cost c[2];
    const char *comm[2] = {"p2p", "all_gather"};
    for (int i = 0; i < 2; i++) {
        char spec[128];
        snprintf(spec, sizeof spec, "%s,cp_comm=%s", SPEC, comm[i]);
        pp_parallel p = layout(spec);
        pp_stack_resolve(&g, &p);
        pp_error e = PP_ERROR_INIT;
        assert_int_equal(pp_layer_cost_get(&g, &m, &p, &c[i], &e), 0);
    }
    assert_true(c[0].cp_fwd_overlap_s > 0 && c[0].cp_bwd_overlap_s > 0);
    assert_true(c[1].cp_fwd_overlap_s == 0 && c[1].cp_bwd_overlap_s == 0);
    assert_true(near(c[1].cp_fwd_bytes, c[0].cp_fwd_bytes));
    assert_true(near(c[1].cp_bwd_bytes, c[0].cp_bwd_bytes));
}

/* Memory: the exchange's buffers for one layer beyond the ring's, with
 * 16 query and 8 K/V heads of 128 a TP rank (tp 2, cp 8).  all_gather:
 * K, V, dK and dV over the whole sequence, 65,536 tokens of 1,024
 * channels each at 2 bytes; a2a: Q, K, V, O and their gradients at the
 * rank's own 8,192 tokens (2,048 channels for Q and O), and a2a+p2p the
 * same. */
static void test_memory(void **state) {
    (void)state;
    pp_model m;
    load_model("name=l64k,layers=2,hidden=4096,heads=32,kv_heads=16,"
               "ffn_hidden=14336,ffn=swiglu,seq=65536,vocab=32000",
               &m);
    double buf[4];
    const char *comm[4] = {"p2p", "all_gather", "a2a", "a2a+p2p,cp_a2a=4"};
    for (int i = 0; i < 4; i++) {
        char spec[128];
        snprintf(spec, sizeof spec,
                 "tp=2,pp=1,cp=8,dp=1,mbs=1,gbs=1,sp=on,cp_comm=%s", comm[i]);
        pp_parallel p = layout(spec);
        pp_memory r;
        pp_error e = PP_ERROR_INIT;
        assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &r, &e),
                         0);
        buf[i] = r.buffers;
    }
    assert_true(near(buf[1] - buf[0], 4.0 * 65536 * 1024 * 2));
    assert_true(near(buf[2] - buf[0], 2.0 * 8192 * (2 * 2048 + 2 * 1024) * 2));
    assert_true(near(buf[3], buf[2])); /* a2a's, over its inner level */
}

/* Simulated, the CP group over two servers (16 query and 8 K/V heads a
 * TP rank): all_gather waits for exchanges the ring hides, a2a for
 * smaller ones, a2a+p2p the least. */
static void test_simulated(void **state) {
    (void)state;
    const char *base =
        "simulate --model name=l64k,layers=2,hidden=4096,heads=32,"
        "kv_heads=16,ffn_hidden=14336,ffn=swiglu,seq=65536,vocab=32000,"
        "bias=false --cluster dgx-h100-ndr --set node.count=2 --parallel "
        "tp=2,cp=8,dp=1,mbs=1,gbs=1";
    double cp_s[4];
    const char *comm[4] = {"p2p", "all_gather", "a2a", "a2a+p2p,cp_a2a=4"};
    for (int i = 0; i < 4; i++) {
        json_t *o = cli_json_ok("%s,cp_comm=%s --memory-check off "
                                "--format json",
                                base, comm[i]);
        cli_assert_parts(o);
        cp_s[i] = cli_num(json_object_get(o, "breakdown"), "cp_comm_s");
        json_decref(o);
    }
    assert_true(cp_s[1] > cp_s[0]);
    assert_true(cp_s[2] > 0 && cp_s[2] < cp_s[1]);
    /* The all-to-all inside each server (tp 2 x 4), the ring of two over
     * the network: less exposed than either. */
    assert_true(cp_s[3] > 0 && cp_s[3] < cp_s[0] && cp_s[3] < cp_s[2]);
}

/* plan searches the exchange: each way Transformer Engine runs for the
 * layout, each estimated on its own (the estimator's cost cache keys on
 * cp_comm: a layout's all_gather twin is not its ring's figure), and
 * --exclude drops one.  16 query and 8 K/V heads a TP rank, so cp 8
 * splits them for a2a. */
static void test_plan_search(void **state) {
    (void)state;
#define L64K                                                                   \
    "plan --model name=l64k,layers=8,hidden=4096,heads=32,kv_heads=16,"        \
    "ffn_hidden=14336,ffn=swiglu,seq=65536,vocab=32000,bias=false "            \
    "--cluster dgx-h100-ndr --global-batch 16 --fix tp=2,cp=8 --top 0 "        \
    "--show 1000 --format json --no-timing"
    const char *base = L64K " --gpus 16";
    json_t *plan = cli_json_ok("%s", base), *cs, *c;
    cs = json_object_get(plan, "candidates");
    size_t i, n[4] = {0, 0, 0, 0};
    json_t *by_spec = json_object();
    json_array_foreach(cs, i, c) {
        const char *par = json_string_value(json_object_get(c, "parallel"));
        int k = strstr(par, "cp_comm=all_gather") ? 1
                : strstr(par, "cp_comm=a2a+p2p")  ? 3
                : strstr(par, "cp_comm=a2a")      ? 2
                                                  : 0;
        n[k]++;
        /* The same layout with the ring: the est must differ. */
        char ring[PP_SPEC_MAX];
        snprintf(ring, sizeof ring, "%s", par);
        char *at = strstr(ring, ",cp_comm=");
        if (at) *at = '\0';
        char key[PP_SPEC_MAX + 16];
        snprintf(key, sizeof key, "%s|%s|%d", ring,
                 json_string_value(json_object_get(c, "placement")),
                 json_is_true(json_object_get(c, "dp_overlap")));
        double est = cli_num(c, "estimated_time_s");
        json_t *seen = json_object_get(by_spec, key);
        if (seen) {
            assert_true(json_real_value(seen) != est);
        } else {
            json_object_set_new(by_spec, key, json_real(est));
        }
    }
    assert_true(n[0] > 0 && n[1] > 0 && n[2] > 0 && n[3] > 0);
    json_decref(by_spec);
    json_decref(plan);
    plan = cli_json_ok("%s --exclude cp_comm=p2p", base);
    assert_true(cli_candidates_all(plan, "cp_comm=", 1) > 0);
    json_decref(plan);
    /* The level pins the exchange. */
    plan = cli_json_ok("%s --fix cp_a2a=2", base);
    assert_true(cli_candidates_all(plan, "cp_comm=a2a+p2p,cp_a2a=2", 1) > 0);
    json_decref(plan);
    cli_expect(2,
               "--fix cp_a2a=8: expected a divisor of cp (8) between 1 "
               "and cp, exclusive",
               "%s --fix cp_a2a=8", base);
    cli_expect(2,
               "--fix cp_a2a=2: the all-to-all level of "
               "cp_comm=a2a+p2p, not of cp_comm=a2a",
               "%s --fix cp_comm=a2a,cp_a2a=2", base);
    /* tp x pp x cp x dp: the pinned four are the GPU count. */
    cli_expect(0, "cp_comm=a2a", L64K " --gpus 32 --fix pp=1,dp=2,cp_comm=a2a");
    cli_expect(2, "--fix: tp x pp x cp x dp = 16, not the 32 GPUs of --gpus",
               L64K " --gpus 32 --fix pp=1,dp=1");
#undef L64K
}

/* Megatron-LM's flag, Transformer Engine's value. */
#define L64K_PLAN                                                              \
    "plan --model name=l64k,layers=8,hidden=4096,heads=32,kv_heads=8,"         \
    "ffn_hidden=14336,ffn=swiglu,seq=65536,vocab=32000,bias=false "            \
    "--cluster dgx-h100-ndr --gpus 16 --global-batch 16 "
static void test_launch(void **state) {
    (void)state;
    cli_result r;
    char v[64];
    cli_runf(&r, L64K_PLAN "--fix cp=8,cp_comm=all_gather --format megatron");
    assert_int_equal(r.status, 0);
    assert_string_equal(megatron_value(r.out, "--cp-comm-type", v, sizeof v),
                        "all_gather");
    cli_result_free(&r);
    /* a2a+p2p's levels, the all-to-all's first. */
    cli_runf(&r, L64K_PLAN "--fix cp=8,cp_a2a=4 --format megatron");
    assert_int_equal(r.status, 0);
    assert_string_equal(megatron_value(r.out, "--cp-comm-type", v, sizeof v),
                        "a2a+p2p");
    assert_contains(r.out, "--hierarchical-context-parallel-sizes 4 2 ");
    cli_result_free(&r);
    cli_expect(0, "  hierarchical_context_parallel_sizes: [4, 2]\n",
               L64K_PLAN "--fix cp=8,cp_a2a=4 --format nemo");
#undef L64K_PLAN
    cli_expect(2,
               "--fix: cp_comm: expected one of p2p|all_gather|a2a|a2a+p2p, "
               "got \"ring\"",
               "plan --model llama3-8b --cluster dgx-h100-ndr --gpus 16 "
               "--global-batch 16 --fix cp_comm=ring");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_gather),   cmocka_unit_test(test_a2a),
        cmocka_unit_test(test_hierarchical), cmocka_unit_test(test_a2a_heads),
        cmocka_unit_test(test_window),       cmocka_unit_test(test_spec),
        cmocka_unit_test(test_layer_cost),   cmocka_unit_test(test_memory),
        cmocka_unit_test(test_simulated),    cmocka_unit_test(test_plan_search),
        cmocka_unit_test(test_launch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
