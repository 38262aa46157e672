/*
 * tests/test_graphs_moe.c: graphs=moe, Megatron-core's CUDA graph of an
 * MoE layer's whole MLP sublayer (its norm, router, dispatch, experts
 * and combine); with attn, its per-layer graph of the whole layer.  The
 * SPEC and Megatron-core's rules for it (not with moe_router or
 * moe_preprocess, which it holds; static shapes only; not with the
 * overlapped all-to-all's schedule), the host's one launch per graph,
 * and the same GPU work as eager.
 */
#include "models_util.h"

#include "oplist_util.h"

/* The host launches an op list issues under `graphs` (pp_op_row's
 * host_kernels, pp__op_host_kernels). */
static double host_launches(const pp_op_table *t) {
    double n = 0;
    for (size_t i = 0; i < t->n; i++) n += t->v[i].host_kernels;
    return n;
}

static void test_moe_spec(void **state) {
    (void)state;
    pp_parallel p;
    pp_error e = PP_ERROR_INIT;
    char buf[PP_SPEC_MAX];
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("dp=8,ep=8,graphs=moe+attn", &p, &e), 0);
    assert_int_equal(p.graphs, PP_GRAPH_ATTN | PP_GRAPH_MOE);
    assert_non_null(
        strstr(pp_parallel_format(&p, buf, sizeof buf), ",graphs=attn+moe"));
    static const char *const bad[][2] = {
        {"graphs=moe+moe_router", "moe captures the whole MoE sublayer"},
        {"graphs=moe+moe_router+moe_preprocess",
         "not with moe_router or moe_preprocess"},
        {"graphs=full+moe", "full captures the whole iteration"},
        {"graphs=moe+moe", "each once"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_error_clear(&e);
        pp_parallel_init(&p);
        int rc = pp_parallel_parse(bad[i][0], &p, &e);
        if (rc != PP_EINPUT || !strstr(e.msg, bad[i][1]))
            fail_msg("%s: rc %d, \"%s\"", bad[i][0], rc, e.msg);
    }
}

/* Against the model and the layout: experts needed, static shapes (a
 * capacity factor, or HybridEP's rank capacity), and not the combined
 * 1F1B schedule of a2a_overlap=on. */
static void test_moe_validate(void **state) {
    (void)state;
    pp_model dense = load("llama3-8b"), moe = load("qwen3-30b-a3b");
    static const struct {
        const char *spec, *msg;
        double cf;
        bool dense;
    } bad[] = {
        {"tp=1,graphs=moe", "graphs: moe: model llama3-8b has no experts", 0,
         true},
        {"dp=8,ep=8,graphs=attn+moe",
         "graphs: moe: model qwen3-30b-a3b routes "
         "dropless",
         0, false},
        {"dp=8,ep=8,graphs=attn+moe,a2a_overlap=on", "not with a2a_overlap=on",
         1.0, false},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_error e = PP_ERROR_INIT;
        pp_parallel p;
        pp_parallel_init(&p);
        assert_int_equal(pp_parallel_parse(bad[i].spec, &p, &e), 0);
        moe.capacity_factor = bad[i].cf;
        int rc = pp_parallel_validate(&p, bad[i].dense ? &dense : &moe, &e);
        if (rc != PP_EINPUT || !strstr(e.msg, bad[i].msg))
            fail_msg("%s: rc %d, \"%s\"", bad[i].spec, rc, e.msg);
    }
    static const char *const good[] = {
        "dp=8,ep=8,graphs=attn+moe",
        "dp=8,ep=8,graphs=moe",
    };
    moe.capacity_factor = 1.0;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        pp_error e = PP_ERROR_INIT;
        pp_parallel p;
        pp_parallel_init(&p);
        assert_int_equal(pp_parallel_parse(good[i], &p, &e), 0);
        if (pp_parallel_validate(&p, &moe, &e))
            fail_msg("%s: \"%s\"", good[i], e.msg);
    }
    /* Dropless with HybridEP's rank capacity: static too. */
    moe.capacity_factor = 0;
    pp_error e = PP_ERROR_INIT;
    pp_parallel p;
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("dp=8,ep=8,dispatcher=hybridep,"
                                       "rank_capacity=1.5,graphs=attn+moe",
                                       &p, &e),
                     0);
    if (pp_parallel_validate(&p, &moe, &e)) fail_msg("%s", e.msg);
}

/* Qwen3-30B-A3B at capacity 1 on a B200 under NeMo 2025: with attention
 * and the MoE sublayer graphed the host launches two graphs a layer and
 * pass (the attention's and the MoE sublayer's), whatever the kernels
 * inside; the router's and preprocessing's scopes leave the dispatch,
 * experts and combine eager.  The GPU work is the same. */
static void test_moe_host(void **state) {
    (void)state;
    const char *base = "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,zero=1,dtype=fp8";
    static const char *const g[] = {"", ",graphs=attn+moe",
                                    ",graphs=attn+moe_router+moe_preprocess"};
    layer_lists x[3];
    for (int i = 0; i < 3; i++) {
        char spec[160];
        snprintf(spec, sizeof spec, "%s%s", base, g[i]);
        x[i].m = load("qwen3-30b-a3b");
        x[i].m.capacity_factor = 1.0;
        layer_lists_build(&x[i], "b200", "nemo-2025", spec);
    }
    assert_rel(host_launches(&x[1].fw), 2, 1e-12);
    assert_rel(host_launches(&x[1].bw), 2, 1e-12);
    double eager = host_launches(&x[0].fw), part = host_launches(&x[2].fw);
    assert_true(part < eager && part > 2 + 10);
    for (int i = 1; i < 3; i++) {
        assert_int_equal(x[i].fw.n, x[0].fw.n);
        assert_int_equal(x[i].bw.n, x[0].bw.n);
        for (size_t k = 0; k < x[0].fw.n; k++)
            assert_true(x[i].fw.v[k].time_s == x[0].fw.v[k].time_s);
    }
    for (int i = 0; i < 3; i++) layer_lists_done(&x[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_spec),
        cmocka_unit_test(test_moe_validate),
        cmocka_unit_test(test_moe_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
