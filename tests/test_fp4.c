/*
 * tests/test_fp4.c: NVFP4 training (SPEC dtype=fp4, Transformer Engine's
 * NVFP4BlockScaling): the SPEC, the catalogue's FP4 rates and who may
 * train in it, the GEMM time and the casts' kernels and bytes
 * (sim/train/compute.c), the weights' copies and the saved inputs in
 * memory (models/memory.c), and the planner's pin and launch formats.
 */
#include "models_util.h"

#include <jansson.h>
#include <unistd.h>

#include "cli_run.h"
#include "layer_util.h"
#include "podplan/sim.h"

/* dtype=fp4 reads back as written; an FP8 recipe is not one of it. */
static void test_spec(void **state) {
    (void)state;
    char buf[PP_SPEC_MAX];
    pp_parallel p = layout("tp=2,dtype=fp4");
    assert_int_equal(p.dtype, PP_PREC_FP4);
    pp_parallel_format(&p, buf, sizeof buf);
    assert_contains(buf, ",dtype=fp4");
    assert_int_equal(layout(buf).dtype, PP_PREC_FP4);
    expect_parallel_error("dtype=fp4,fp8=mxfp8", "but dtype is fp4");
}

/* Blackwell's dense FP4 rates (B300's and GB300's Ultra tensor cores
 * three times their FP8, B200's and GB200's twice); none on Hopper.  An
 * NVFP4 GEMM at the estimated asymptote: the MXFP8 one over the FP4
 * peak, twice or three times as fast as MXFP8 for a large GEMM, and the
 * 16-bit time where there is no FP4. */
static void test_gemm(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_catalog *cat;
    if (pp_catalog_load(NULL, &cat, &e)) fail_msg("%s", e.msg);
    const struct {
        const char *gpu;
        double fp4, ratio;
    } want[] = {{"b200", 9000e12, 2.0},
                {"gb200", 10000e12, 2.0},
                {"b300", 13125e12, 13125.0 / 4500.0},
                {"gb300", 15000e12, 3.0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const pp_gpu_spec *gpu = pp_catalog_gpu(cat, want[i].gpu);
        assert_non_null(gpu);
        assert_true(gpu->peak_flops[PP_DTYPE_FP4] == want[i].fp4);
        pp_gpu_profile g;
        if (pp_profile_load(NULL, gpu, &g, &e)) fail_msg("%s", e.msg);
        assert_true(g.fp4_peak_flops == want[i].fp4);
        assert_true(g.nvfp4_gemm_efficiency == g.mxfp8_gemm_efficiency);
        double n = 16384, t4 = pp_gemm_time_nvfp4_s(&g, 1, n, n, n),
               t8 = pp_gemm_time_mxfp8_s(&g, 1, n, n, n);
        double r = t8 / t4;
        print_message("%s: 16k GEMM MXFP8 %.3f ms, NVFP4 %.3f ms (x%.2f)\n",
                      want[i].gpu, t8 * 1e3, t4 * 1e3, r);
        assert_true(r > 0.97 * want[i].ratio && r <= want[i].ratio * 1.0001);
    }
    const pp_gpu_spec *h = pp_catalog_gpu(cat, "h100-sxm5");
    assert_non_null(h);
    assert_true(h->peak_flops[PP_DTYPE_FP4] == 0);
    pp_gpu_profile g;
    if (pp_profile_load(NULL, h, &g, &e)) fail_msg("%s", e.msg);
    assert_true(pp_gemm_time_nvfp4_s(&g, 1, 8192, 8192, 8192) ==
                pp_gemm_time_s(&g, 1, 8192, 8192, 8192));
    pp_catalog_free(cat);
}

/* One Llama 3 8B layer on a B200 under nemo-2025, per format
 * (layer_util.h). */
static void layer(const char *fmt, double *kernels, double *fwd_s) {
    char s[128];
    snprintf(s, sizeof s, "tp=1,pp=1,dp=8,mbs=1,gbs=8,%s", fmt);
    layer_costs c =
        layer_costs_get("b200", "nemo-2025", "llama3-8b", s, PP_FP8_AUTO);
    *kernels = c.kernels;
    *fwd_s = c.fwd_s;
}

/* Each GEMM input's NVFP4 cast is three kernels where MXFP8's is one (an
 * amax pass, a row-wise and a Hadamard column-wise quantize): a dense
 * layer's four inputs forward and four gradients backward, 16 kernels
 * more.  The layer runs faster all the same. */
static void test_layer(void **state) {
    (void)state;
    double k4, k8, kb, f4, f8, fb;
    layer("dtype=fp4", &k4, &f4);
    layer("dtype=fp8,fp8=mxfp8", &k8, &f8);
    layer("dtype=bf16", &kb, &fb);
    print_message("llama3-8b layer on B200: kernels bf16 %.0f, mxfp8 %.0f, "
                  "nvfp4 %.0f; forward %.3f, %.3f, %.3f ms\n",
                  kb, k8, k4, fb * 1e3, f8 * 1e3, f4 * 1e3);
    assert_true(fabs((k4 - k8) - 16.0) < 1e-9);
    assert_true(f4 < f8 && f8 < fb);
}

/* Two NVFP4 copies of each weight (half a byte and a scale per 16 each:
 * 1.125 bytes a parameter) and the GEMM inputs kept for the backward at
 * 0.5625 bytes an element: the 16-bit activations less 1.4375 / 1 times
 * what FP8's one byte saves. */
static void test_memory(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_model m = load("llama3-70b");
    const char *base = "tp=4,pp=4,dp=4,mbs=1,gbs=64,sp=on,zero=1,"
                       "recompute=none,dtype=";
    pp_memory r[3];
    const char *fmt[] = {"bf16", "fp8", "fp4"};
    for (int i = 0; i < 3; i++) {
        char s[128];
        snprintf(s, sizeof s, "%s%s", base, fmt[i]);
        pp_parallel p = layout(s);
        p.fp8_transpose = false; /* Blackwell: one FP8 copy */
        if (pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &r[i], &e))
            fail_msg("%s", e.msg);
    }
    double per = r[0].params_per_gpu;
    assert_true(fabs(r[2].weights - r[0].weights - 1.125 * per) <
                1e-9 * r[0].weights);
    assert_true(fabs(r[1].weights - r[0].weights - per) < 1e-9 * r[0].weights);
    double s8 = r[0].activations_per_layer - r[1].activations_per_layer;
    double s4 = r[0].activations_per_layer - r[2].activations_per_layer;
    assert_true(s8 > 0);
    assert_true(fabs(s4 / s8 - 1.4375) < 1e-9);
}

#define SIM                                                                    \
    "simulate --model llama3-8b --cluster %s --set node.count=1 --parallel "   \
    "tp=1,pp=1,dp=8,mbs=2,gbs=64,zero=1,%s --stack %s --format json"

/* A Llama 3 8B step on a DGX B200: NVFP4 faster than MXFP8, neither
 * with the 16-bit times; refused on Hopper and by a stack without it. */
static void test_simulate(void **state) {
    (void)state;
    json_t *a =
        cli_json_ok(SIM, "dgx-b200-ndr", "dtype=fp8,fp8=mxfp8", "nemo-2025");
    json_t *b = cli_json_ok(SIM, "dgx-b200-ndr", "dtype=fp4", "nemo-2025");
    double ta = cli_num(a, "iteration_time_s"),
           tb = cli_num(b, "iteration_time_s");
    print_message("llama3-8b on a DGX B200: MXFP8 %.3f s, NVFP4 %.3f s\n", ta,
                  tb);
    assert_true(tb < ta);
    assert_true(cli_num(b, "memory_per_gpu_bytes") <
                cli_num(a, "memory_per_gpu_bytes"));
    assert_null(json_object_get(b, "fp8_recipe"));
    json_decref(a);
    json_decref(b);
    cli_expect(2, "dtype=fp4: the GPU of profile h100 has no FP4 tensor cores",
               SIM, "dgx-h100-ndr", "dtype=fp4", "nemo-2025");
    cli_expect(2,
               "dtype=fp4: stack megatron-core-2024 does not train in NVFP4 "
               "(topologies/stacks/megatron-core-2024.yaml, fp4.supported",
               SIM, "dgx-b200-ndr", "dtype=fp4", "megatron-core-2024");
    cli_expect(2, "dtype=fp4: stack megatron-lm-2021 does not train in NVFP4",
               "memory --model llama3-8b --parallel tp=1,dp=8,dtype=fp4");
}

#define PLAN                                                                   \
    "plan --model llama3-8b --cluster %s --set node.count=1 --gpus 8 "         \
    "--global-batch 64 --stack %s --top 1 %s"

/* NVFP4 is pinned, never chosen: with the pin every candidate is, and
 * the launch lines ask for it by Megatron-core's names; NeMo 2.0 and
 * DeepSpeed cannot, nor can a GPU or stack without it. */
static void test_plan(void **state) {
    (void)state;
    json_t *j = cli_json_ok(PLAN, "dgx-b200-ndr", "nemo-2025", "--format json");
    assert_true(cli_candidates_all(j, "dtype=fp4", 0) > 0);
    json_decref(j);
    j = cli_json_ok(PLAN, "dgx-b200-ndr", "nemo-2025",
                    "--fix dtype=fp4 --format json");
    assert_true(cli_candidates_all(j, "dtype=fp4", 1) > 0);
    json_decref(j);
    cli_expect(
        0, "  transformer_engine: true\n  fp4: e2m1\n  fp4_recipe: nvfp4\n",
        PLAN, "dgx-b200-ndr", "nemo-2025", "--fix dtype=fp4 --format nemo");
    const char *yaml = "/tmp/podplan-test-fp4-stack.yaml";
    FILE *f = fopen(yaml, "w");
    assert_non_null(f);
    fputs("name: fp4\nframework: Megatron-LM\nversion: core 0.16\n"
          "launch: [megatron]\nfp4:\n  supported: true\n",
          f);
    fclose(f);
    cli_expect(0, "--fp4-format e2m1 --fp4-recipe nvfp4", PLAN, "dgx-b200-ndr",
               yaml, "--fix dtype=fp4 --format megatron");
    remove(yaml);
    const char *bad[][3] = {
        {"dgx-b200-ndr", "--fix dtype=fp4 --format nemo2",
         "--fix dtype=fp4: NeMo 2.0's MegatronMixedPrecision has no NVFP4"},
        {"dgx-b200-ndr", "--exclude dtype=fp4",
         "dtype: fp4 is not searched (pin it with --fix)"},
        {"dgx-b200-ndr", "--fix dtype=fp4,fp8=mxfp8",
         "--fix dtype=fp4: an FP8 recipe is pinned too"},
        {"dgx-b200-ndr", "--fix dtype=fp16",
         "dtype: expected bf16, fp8 or fp4, got \"fp16\""},
        {"dgx-h100-ndr", "--fix dtype=fp4",
         "--fix dtype=fp4: the stack or the GPU does not train in NVFP4"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        cli_expect(2, bad[k][2], PLAN, bad[k][0], "nemo-2025", bad[k][1]);
    /* bf16 alone when pinned: FP8 is searched otherwise. */
    j = cli_json_ok(PLAN, "dgx-b200-ndr", "nemo-2025",
                    "--fix dtype=bf16 --format json");
    cli_candidates_all(j, "dtype=", 0);
    json_decref(j);
}

/* A what-if study's variants train with the study's stack when it names
 * one: NVFP4 runs on its B200 variant under nemo-2025 and is infeasible on
 * the H100 one; without the stack each GPU's default (Megatron-core
 * 2024) has no NVFP4. */
static json_t *study(bool stack) {
    char path[] = "/tmp/podplan-fp4-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp,
            "name: fp4\nmodel: llama3-8b\ncluster: dgx-h100-ndr\n%s"
            "tokens: 1e9\nglobal_batch: 64\nset:\n  node.count: 1\n"
            "bundles:\n"
            "  b200: {gpu: b200, server: dgx-b200, nic: ndr, switch: qm9700}\n"
            "  h100: {gpu: h100-sxm5, server: dgx-h100, nic: ndr, "
            "switch: qm9700}\n"
            "vary:\n  bundle: [b200, h100]\nlayout:\n"
            "  parallel: tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,dtype=fp4\n",
            stack ? "stack: nemo-2025\n" : "");
    fclose(fp);
    json_t *j = cli_json_ok("whatif --study %s --format json", path);
    unlink(path);
    return j;
}

static const char *variant(json_t *j, size_t i, const char *key) {
    json_t *v = json_array_get(json_object_get(j, "variants"), i);
    assert_non_null(v);
    const char *s = json_string_value(json_object_get(v, key));
    assert_non_null(s);
    return s;
}

static void test_whatif(void **state) {
    (void)state;
    json_t *j = study(true);
    assert_string_equal(json_string_value(json_object_get(j, "stack")),
                        "nemo-2025");
    assert_string_equal(variant(j, 0, "status"), "ok");
    assert_contains(variant(j, 0, "parallel"), "dtype=fp4");
    assert_string_equal(variant(j, 1, "status"), "infeasible");
    assert_contains(variant(j, 1, "error"),
                    "dtype=fp4 on h100-sxm5: the GPU has no FP4 tensor cores");
    json_decref(j);
    j = study(false);
    assert_string_equal(variant(j, 0, "status"), "infeasible");
    assert_contains(variant(j, 0, "error"),
                    "dtype=fp4 on b200: the stack does not train in NVFP4");
    json_decref(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),     cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_layer),    cmocka_unit_test(test_memory),
        cmocka_unit_test(test_simulate), cmocka_unit_test(test_plan),
        cmocka_unit_test(test_whatif),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
