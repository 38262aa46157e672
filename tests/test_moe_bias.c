/*
 * tests/test_moe_bias.c: the routed experts' fc2 biases of a model with
 * bias: true, as Megatron-core's TEGroupedMLP adds them outside the
 * grouped GEMM (experts.py, _apply_bias: a Python loop over the local
 * experts): where the simulator puts them in a layer's forward and
 * backward, the HBM bytes they move, the eager operations the host
 * issues for them (at the stack's host.op_issue), and that a model
 * without biases has none.
 */
#include "models_util.h"

#include "oplist_util.h"

/* gpt-oss-120b on an H100 under `stack` and `spec`, its biases on or
 * off. */
static void build(layer_lists *x, const char *stack, const char *spec,
                  bool bias) {
    x->m = load("gpt-oss-120b");
    x->m.bias = bias;
    layer_lists_build(x, "h100-sxm5", stack, spec);
}

/* EP 8 on one sequence of 4,096: 16 local experts, 4,096 x 4 routed rows
 * of 2,880.  Forward, right after fc2: 12 bytes a row element and two
 * operations an expert plus the cat; backward, before fc2's gradients
 * (and before moe_act's recompute, which fc2's backward triggers): 16
 * bytes, five an expert plus two.  Under nemo-2025 each operation costs
 * the host 27.9 us, kernel_issue 46.8 us: the op counts 27.9 / 46.8 kernels
 * per operation. */
static void test_bias_ops(void **state) {
    (void)state;
    layer_lists x;
    build(&x, "nemo-2025",
          "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,recompute=layernorm+moe_act", true);
    double rows = 4096.0 * 4, h = 2880, per = 27.9 / 46.8;
    long f = op_at(&x.fw, "experts fc2 bias");
    assert_true(f > 0);
    assert_string_equal(x.fw.v[f - 1].name, "experts fc2");
    assert_string_equal(x.fw.v[f].kind, "memory");
    assert_true(fabs(x.fw.v[f].bytes - 12 * rows * h) <= 1e-6);
    assert_true(fabs(x.fw.v[f].kernels - 33 * per) <= 1e-9);
    assert_true(x.fw.v[f].time_s > 0);

    long b = op_at(&x.bw, "experts fc2 bias bwd");
    long r = op_at(&x.bw, "experts act recompute");
    long d = op_at(&x.bw, "experts fc2 dgrad");
    assert_true(b >= 0 && r > b && d > r);
    assert_true(fabs(x.bw.v[b].bytes - 16 * rows * h) <= 1e-6);
    assert_true(fabs(x.bw.v[b].kernels - 82 * per) <= 1e-9);
    layer_lists_done(&x);

    /* EP 64: two local experts, the same rows. */
    build(&x, "nemo-2025", "tp=1,pp=1,dp=64,ep=64,mbs=1,gbs=64", true);
    f = op_at(&x.fw, "experts fc2 bias");
    b = op_at(&x.bw, "experts fc2 bias bwd");
    assert_true(f > 0 && b >= 0);
    assert_true(fabs(x.fw.v[f].bytes - 12 * rows * h) <= 1e-6);
    assert_true(fabs(x.fw.v[f].kernels - 5 * per) <= 1e-9);
    assert_true(fabs(x.bw.v[b].kernels - 12 * per) <= 1e-9);
    layer_lists_done(&x);
}

/* Without a host model the count is the operations themselves; without
 * biases there is nothing to add. */
static void test_bias_off(void **state) {
    (void)state;
    layer_lists x;
    build(&x, "megatron-lm-2021", "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8", true);
    assert_true(x.g.sw.host_kernel_s == 0);
    long f = op_at(&x.fw, "experts fc2 bias");
    assert_true(f > 0);
    assert_true(x.fw.v[f].kernels == 33);
    layer_lists_done(&x);

    build(&x, "nemo-2025", "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8", false);
    assert_int_equal(op_at(&x.fw, "experts fc2 bias"), -1);
    assert_int_equal(op_at(&x.bw, "experts fc2 bias bwd"), -1);
    layer_lists_done(&x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bias_ops),
        cmocka_unit_test(test_bias_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
