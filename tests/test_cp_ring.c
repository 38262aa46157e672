/*
 * tests/test_cp_ring.c: context parallelism's ring as Transformer
 * Engine's AttnFuncWithCPAndKVP2P runs it (16-bit, sbhd): the K/V pack
 * before the ring, the outputs' corrections after it, the backward's
 * K/V copy and the dQ and dK/dV sums, their bytes and kernels; the
 * backward's attention as cp kernels of 1/cp of the work each (one
 * stream), the forward's as one; and nothing of it without CP.
 */
#include "models_util.h"

#include "oplist_util.h"

static void build(layer_lists *x, const char *spec) {
    x->m = load("llama3-70b");
    layer_lists_build(x, "b200", "nemo-2025", spec);
}

/* The ring op `ring` of l between `before` and `after`, adjacent: their
 * indices in i[0..2]. */
static void ring_ops(const pp_op_table *l, const char *before, const char *ring,
                     const char *after, long i[3]) {
    i[0] = op_at(l, before);
    i[1] = op_at(l, ring);
    i[2] = op_at(l, after);
    assert_true(i[0] >= 0 && i[1] == i[0] + 1 && i[2] == i[1] + 1);
}

static bool near(double a, double b) {
    return fabs(a - b) <= 1e-9 * fabs(b);
}

/* One fused attention kernel of f FLOPs on g, as the simulator prices
 * it (the loop efficiency and a launch included). */
static double flash_s(const pp_gpu_profile *g, double f, bool bwd) {
    double eff = pp_flash_efficiency(g, bwd, f, 128);
    double lf = g->framework_efficiency > 0 ? g->framework_efficiency : 1;
    return f / pp_profile_tensor_rate(g, g->peak_flops, eff) / lf + g->launch_s;
}

/* Llama 3 70B, sequence 8192, TP 4 (sequence parallel), CP 4: a rank
 * holds 2,048 tokens; 64 / 4 query heads and 8 / 4 K/V heads of 128.
 * K/V are 2 x 2 x 2048 x 256 = 2 MiB, the output 2 x 2048 x 2048 = 8 MiB;
 * the mean rank's sums take 2 + 2.25 x 3 = 8.75 passes of them. */
static void test_ring_ops(void **state) {
    (void)state;
    layer_lists x;
    build(&x, "tp=4,pp=1,cp=4,dp=1,mbs=1,gbs=1,sp=on,dtype=bf16");
    double kv = 2.0 * 2 * 2048 * 256, out = 2.0 * 2048 * 2048;

    long f3[3];
    ring_ops(&x.fw, "cp kv pack", "cp ring attention", "cp out correction", f3);
    long pack = f3[0], ring = f3[1], corr = f3[2];
    assert_true(near(x.fw.v[pack].bytes, 2 * kv));
    assert_true(near(x.fw.v[corr].bytes, 8.75 * out));
    assert_true(x.fw.v[corr].kernels == 8);
    assert_true(near(x.fw.v[corr].time_s, pp_memop_time_s(&x.g, 8.75 * out)));
    /* Forward: one kernel of the rank's causal share, f = 4 a s_q d s/2,
     * and the collective's own kernel. */
    double f = 4.0 * 16 * 2048 * 128 * 8192 * 0.5;
    assert_true(near(x.fw.v[ring].flops, f));
    assert_true(x.fw.v[ring].kernels == 2);
    assert_true(near(x.fw.v[ring].overlap_s, flash_s(&x.g, f, false)));

    long b3[3];
    ring_ops(&x.bw, "cp kv copy", "cp ring attention bwd", "cp dkv accumulate",
             b3);
    long copy = b3[0], bring = b3[1], dkv = b3[2];
    assert_true(near(x.bw.v[copy].bytes, 2 * kv));
    assert_true(near(x.bw.v[dkv].bytes, 8.75 * kv));
    assert_true(x.bw.v[dkv].kernels == 4);
    /* Backward: four kernels of a quarter each, then the dQ sums (four
     * kernels) while dK/dV travel; the collective's own. */
    double fb = 2.5 * f;
    double want =
        4 * flash_s(&x.g, fb / 4, true) + pp_memop_time_s(&x.g, 8.75 * out);
    assert_true(near(x.bw.v[bring].overlap_s, want));
    assert_true(x.bw.v[bring].kernels == 4 + 4 + 1);
    /* The split costs: more than one kernel of all the work. */
    assert_true(4 * flash_s(&x.g, fb / 4, true) > flash_s(&x.g, fb, true));
    layer_lists_done(&x);
}

/* Without CP the attention is one kernel each way and the ring's ops are
 * absent. */
static void test_no_cp(void **state) {
    (void)state;
    layer_lists x;
    build(&x, "tp=4,pp=1,dp=1,mbs=1,gbs=1,sp=on,dtype=bf16");
    const char *gone[] = {
        "cp kv pack", "cp ring attention",     "cp out correction",
        "cp kv copy", "cp ring attention bwd", "cp dkv accumulate"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++) {
        assert_int_equal(op_at(&x.fw, gone[i]), -1);
        assert_int_equal(op_at(&x.bw, gone[i]), -1);
    }
    long b = op_at(&x.bw, "flash attn bwd");
    assert_true(b >= 0);
    assert_true(x.bw.v[b].kernels == 1);
    double f = 2.5 * 4.0 * 16 * 8192 * 128 * 8192 * 0.5;
    assert_true(near(x.bw.v[b].time_s, flash_s(&x.g, f, true)));
    layer_lists_done(&x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_ops),
        cmocka_unit_test(test_no_cp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
