/*
 * tests/test_window.c: sliding-window attention (model keys window and
 * window_skip): the keys and their refusals, the share of windowed
 * layers, the FLOP count's attention core and the FlashAttention kernels'
 * time, and the gpt-oss-120b zoo model that needs them.
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

#include "podplan/sim.h"
#include "podplan/train.h"

#define BASE                                                                   \
    "layers=36,hidden=2880,heads=64,kv_heads=8,kv_channels=64,seq=4096,"       \
    "vocab=201088,ffn_hidden=2880,ffn=swiglu"

static pp_model load(const char *spec) {
    pp_error e = PP_ERROR_INIT;
    pp_model m;
    if (pp_model_load(spec, &m, &e)) fail_msg("%s: %s", spec, e.msg);
    return m;
}

/* The keys, inline and in YAML, and what is refused. */
static void test_keys(void **state) {
    (void)state;
    pp_model m = load(BASE ",window=128,window_skip=2");
    assert_int_equal(m.window, 128);
    assert_int_equal(m.window_skip, 2);
    assert_true(fabs(pp_model_window_share(&m) - 0.5) < 1e-12);
    m = load(BASE ",window=128");
    assert_true(pp_model_window_share(&m) == 1.0);
    m = load(BASE);
    assert_true(pp_model_window_share(&m) == 0.0);
    /* Every third layer full: 36 - 12 of 36 windowed. */
    m = load(BASE ",window=512,window_skip=3");
    assert_true(fabs(pp_model_window_share(&m) - 24.0 / 36.0) < 1e-12);

    m = load("gpt-oss-120b");
    assert_int_equal(m.window, 128);
    assert_int_equal(m.window_skip, 2);
    /* The checkpoint's 116,829,156,672 parameters (Megatron-Bridge's
     * export of it), less the 6,912 podplan does not count: the
     * attention sinks (64 a layer) and the routers' biases (128). */
    assert_true(pp_model_params(&m) == 116829156672.0 - 36 * (64 + 128));

    struct {
        const char *spec, *want;
    } bad[] = {
        {BASE ",window=128,window_skip=1", "window_skip: expected 0"},
        {BASE ",window_skip=2", "window_skip: needs a window"},
        {BASE ",window=-4", "window: expected a non-negative integer"},
        {BASE ",window=wide", "window: expected a non-negative integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_error e = PP_ERROR_INIT;
        pp_model x;
        int rc = pp_model_load(bad[i].spec, &x, &e);
        assert_int_equal(rc, PP_EINPUT);
        if (!strstr(e.msg, bad[i].want))
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].spec, e.msg,
                     bad[i].want);
    }

    /* YAML: located at the key. */
    char path[] = "/tmp/podplan-window-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("name: w\nlayers: 4\nhidden: 256\nheads: 4\nseq: 1024\n"
          "vocab: 1000\nwindow: 64\nwindow_skip: 1\n",
          fp);
    fclose(fp);
    pp_error e = PP_ERROR_INIT;
    pp_model x;
    assert_int_equal(pp_model_load(path, &x, &e), PP_EINPUT);
    unlink(path);
    assert_non_null(strstr(e.msg, ":8:14: window_skip: expected 0"));
}

/* The counted FLOPs: a windowed layer's query meets `window` keys, not
 * s, so GPT-OSS's attention core is (128 + 4096) / 2 / 4096 of the
 * unwindowed one; the GEMMs do not change. */
static void test_flops(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_model w = load(BASE ",window=128,window_skip=2"), f = load(BASE);
    pp_flops a, b;
    assert_int_equal(pp_flops_count(&w, 8, PP_RECOMPUTE_NONE, &a, &e), 0);
    assert_int_equal(pp_flops_count(&f, 8, PP_RECOMPUTE_NONE, &b, &e), 0);
    assert_true(fabs(a.attn / b.attn - (128.0 + 4096.0) / 2 / 4096) < 1e-9);
    assert_true(a.dense == b.dense && a.logit == b.logit);
    /* A window as long as the sequence is no window. */
    pp_model l = load(BASE ",window=4096");
    assert_int_equal(pp_flops_count(&l, 8, PP_RECOMPUTE_NONE, &a, &e), 0);
    assert_true(a.attn == b.attn);
}

/* The FlashAttention kernels skip the blocks outside the window: one
 * layer's forward and backward get cheaper with the window, by less
 * than the FLOPs would at the full kernel's rate (a small kernel runs at
 * a lower rate), and a window as long as the sequence changes nothing. */
static void test_kernels(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_catalog *cat;
    pp_gpu_profile g;
    assert_int_equal(pp_catalog_load(NULL, &cat, &e), 0);
    if (pp_profile_load_stack(NULL, pp_catalog_gpu(cat, "h100-sxm5"),
                              "nemo-2025", &g, NULL, &e))
        fail_msg("%s", e.msg);
    pp_catalog_free(cat);
    pp_parallel p;
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("tp=1,pp=1,dp=8,mbs=1,gbs=8", &p, &e),
                     0);
    pp_stack_resolve(&g, &p);
    assert_true(p.flash);
    const char *specs[] = {BASE, BASE ",window=128,window_skip=2",
                           BASE ",window=128", BASE ",window=4096"};
    pp_layer_cost lc[4];
    for (int i = 0; i < 4; i++) {
        pp_model m = load(specs[i]);
        if (pp_layer_cost_get(&g, &m, &p, &lc[i], &e)) fail_msg("%s", e.msg);
    }
    print_message("layer fwd: full %.3f ms, alternate %.3f, all windowed "
                  "%.3f\n",
                  1e3 * lc[0].fwd_s, 1e3 * lc[1].fwd_s, 1e3 * lc[2].fwd_s);
    assert_true(lc[2].fwd_s < lc[1].fwd_s && lc[1].fwd_s < lc[0].fwd_s);
    assert_true(lc[2].bwd_s < lc[1].bwd_s && lc[1].bwd_s < lc[0].bwd_s);
    assert_true(lc[3].fwd_s == lc[0].fwd_s && lc[3].bwd_s == lc[0].bwd_s);
    /* Each FLOP saved saves less time than a FLOP of the full kernel
     * takes (causal: 2 s^2 d per head): the windowed kernels are smaller,
     * so slower per FLOP.  (Against the whole layer's time per FLOP this
     * would not hold: head dim 64's attention runs below the GEMMs'
     * rate.) */
    double dt = lc[0].fwd_s - lc[2].fwd_s;
    double df = lc[0].fwd_flops - lc[2].fwd_flops;
    double fa = 2.0 * 64 * 4096.0 * 4096.0 * 64;
    double ta = fa / (g.peak_flops * pp_flash_efficiency(&g, false, fa, 64)) /
                g.framework_efficiency;
    assert_true(df > 0 && dt > 0);
    assert_true(dt / df < ta / fa);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_flops),
        cmocka_unit_test(test_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
