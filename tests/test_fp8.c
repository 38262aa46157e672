/*
 * tests/test_fp8.c: FP8 recipes (SPEC fp8=, stack fp8.recipe): the SPEC
 * key and its refusals, the stacks' defaults, what each recipe's casts
 * cost (kernels for the host, bytes for the GPU: sim/train/compute.c),
 * MXFP8 only on GPUs whose tensor cores have it, and the recipe in the
 * planner's pins and launch formats.
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

#include <jansson.h>

#include "cli_run.h"
#include "layer_util.h"
#include "podplan/sim.h"

/* The recipe round trip, the defaults and the refusals of the SPEC. */
static void test_spec(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_parallel p;
    char buf[PP_SPEC_MAX];

    pp_parallel_init(&p);
    assert_int_equal(p.fp8, PP_FP8_AUTO);
    assert_int_equal(p.fp8_recipe, PP_FP8_DELAYED);
    assert_int_equal(pp_parallel_parse("tp=2,dtype=fp8,fp8=tensorwise", &p, &e),
                     0);
    assert_int_equal(p.fp8, PP_FP8_TENSORWISE);
    assert_int_equal(p.fp8_recipe, PP_FP8_TENSORWISE);
    pp_parallel_format(&p, buf, sizeof buf);
    assert_non_null(strstr(buf, ",dtype=fp8,fp8=tensorwise"));
    pp_parallel q;
    pp_parallel_init(&q);
    assert_int_equal(pp_parallel_parse(buf, &q, &e), 0);
    assert_int_equal(q.fp8_recipe, PP_FP8_TENSORWISE);

    /* auto leaves the SPEC as it was; the stack then decides. */
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("dtype=fp8,fp8=auto", &p, &e), 0);
    pp_parallel_format(&p, buf, sizeof buf);
    assert_null(strstr(buf, "fp8="));
    pp_stack s;
    assert_int_equal(pp_stack_load("nemo-2025", &s, &e), 0);
    assert_int_equal(s.fp8_recipe, PP_FP8_TENSORWISE);
    pp_stack_resolve_spec(&s, &p);
    assert_int_equal(p.fp8_recipe, PP_FP8_TENSORWISE);
    assert_int_equal(pp_stack_load("megatron-core-2024", &s, &e), 0);
    pp_stack_resolve_spec(&s, &p);
    assert_int_equal(p.fp8_recipe, PP_FP8_DELAYED);
    /* A given recipe wins over the stack's. */
    assert_int_equal(pp_parallel_parse("fp8=mxfp8", &p, &e), 0);
    pp_stack_resolve_spec(&s, &p);
    assert_int_equal(p.fp8_recipe, PP_FP8_MXFP8);

    /* Refusals: a recipe without FP8 GEMMs, a name not a recipe. */
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("tp=2,fp8=tensorwise", &p, &e),
                     PP_EINPUT);
    assert_non_null(strstr(e.msg, "fp8: tensorwise is a recipe for "
                                  "dtype=fp8, but dtype is bf16"));
    assert_int_equal(p.tp, 1); /* nothing of a bad SPEC is kept */
    e = (pp_error)PP_ERROR_INIT;
    assert_int_equal(pp_parallel_parse("dtype=fp8,fp8=per-tensor", &p, &e),
                     PP_EINPUT);
    assert_non_null(strstr(e.msg, "fp8"));
    assert_non_null(strstr(e.msg, "tensorwise"));
}

/* Kernels and forward time of one Qwen3-30B-A3B layer, 16 experts on
 * the GPU (ep 8), under recipe r (layer_util.h). */
static void layer(pp_fp8 r, double *kernels, double *fwd_s) {
    layer_costs c =
        layer_costs_get("b200", "nemo-2025", "qwen3-30b-a3b",
                        "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,dtype=fp8", r);
    *kernels = c.kernels;
    *fwd_s = c.fwd_s;
}

static void test_cast_costs(void **state) {
    (void)state;
    double kd, km, kb, kt, fd, fm, fb, ft;
    layer(PP_FP8_DELAYED, &kd, &fd);
    layer(PP_FP8_MXFP8, &km, &fm);
    layer(PP_FP8_BLOCKWISE, &kb, &fb);
    layer(PP_FP8_TENSORWISE, &kt, &ft);
    print_message("kernels per layer: delayed %.0f, mxfp8 %.0f, blockwise "
                  "%.0f, tensorwise %.0f\n",
                  kd, km, kb, kt);
    /* Delayed scaling casts an expert input's 16 pieces in one fused
     * kernel, MXFP8 and blockwise one each: 15 more per grouped cast. */
    assert_true(km > kd);
    double per = (km - kd) / 15.0;
    assert_true(fabs(per - round(per)) < 1e-9 && per >= 2);
    assert_true(fabs(kb - km) < 1e-9);
    /* Current scaling: an amax and a scale kernel besides each cast. */
    assert_true(kt - km >= 2 * 16 * per);
    /* Its amax pass reads each input again; blockwise moves the same
     * bytes as delayed (the block scales left out) at the same GEMM rate;
     * MXFP8's GEMMs run at the B200 profile's gemm.mxfp8_efficiency,
     * below the per-tensor one. */
    assert_true(ft > fd);
    assert_true(fabs(fb - fd) <= 1e-12 * fd);
    assert_true(fm > fd);
}

/* MXFP8 runs on Blackwell's tensor cores only; simulate says which
 * recipe a plain dtype=fp8 took from the stack. */
static void test_gpus(void **state) {
    (void)state;
    const char *spec = "--parallel tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,"
                       "dtype=fp8,fp8=mxfp8 --stack nemo-2025";
    cli_result r;
    cli_runf(&r,
             "simulate --model megatron-1.7b --cluster dgx-h100-ndr --set "
             "node.count=1 %s",
             spec);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "fp8=mxfp8: the GPU of profile h100 has no "
                                  "MXFP8 tensor cores"));
    assert_string_equal(r.out, "");
    cli_result_free(&r);
    cli_runf(&r,
             "simulate --model megatron-1.7b --cluster dgx-b200-ndr --set "
             "node.count=1 %s --format json",
             spec);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "fp8_recipe")),
                        "mxfp8");
    json_decref(j);
    cli_result_free(&r);
    cli_runf(&r, "simulate --model megatron-1.7b --cluster dgx-h100-ndr --set "
                 "node.count=1 --parallel tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,"
                 "dtype=fp8 --stack nemo-2025");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "stack        nemo-2025 (FP8 recipe "
                                  "tensorwise)\n"));
    cli_result_free(&r);
}

/* A pinned recipe makes every candidate FP8 with it and reaches the
 * launch formats by Megatron-core's and NeMo's names; delayed scaling
 * keeps the flags of releases before --fp8-recipe. */
static void test_plan(void **state) {
    (void)state;
    const char *base = "plan --model megatron-1.7b --cluster dgx-h100-ndr "
                       "--gpus 8 --global-batch 64 --stack nemo-2025 --top 0";
    /* Megatron-LM's format runs under Megatron-core's stack. */
    const char *mc = "plan --model megatron-1.7b --cluster dgx-h100-ndr "
                     "--gpus 8 --global-batch 64 --stack megatron-core-2024 "
                     "--top 0";
    const char *want[][4] = {
        {mc, "tensorwise", "megatron",
         "--fp8-format hybrid --fp8-recipe "
         "tensorwise"},
        {base, "tensorwise", "nemo",
         "  fp8_hybrid: true\n  fp8_recipe: tensorwise\n"},
        {base, "blockwise", "nemo2",
         "fp8=\"hybrid\", fp8_recipe=\"blockwise\")"},
        {mc, "delayed", "megatron",
         "--fp8-format hybrid "
         "--fp8-amax-history-len 1024"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cli_result r;
        cli_runf(&r, "%s --fix fp8=%s --format %s", want[i][0], want[i][1],
                 want[i][2]);
        if (r.status != 0)
            fail_msg("%s: exit %d: %s", want[i][2], r.status, r.err);
        if (!strstr(r.out, want[i][3]))
            fail_msg("%s %s lacks \"%s\"", want[i][1], want[i][2], want[i][3]);
        if (strcmp(want[i][1], "delayed") == 0)
            assert_null(strstr(r.out, "--fp8-recipe"));
        cli_result_free(&r);
    }
    cli_result r;
    cli_runf(&r, "%s --fix fp8=tensorwise --format json", base);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    assert_true(cli_candidates_all(j, "dtype=fp8,fp8=tensorwise", 1) > 0);
    json_decref(j);
    cli_result_free(&r);

    const char *bad[][2] = {
        {"--fix fp8=mxfp8", "--fix fp8=mxfp8: the GPU has no MXFP8"},
        {"--fix fp8=auto", "fp8: expected delayed, tensorwise, mxfp8"},
        {"--exclude fp8=delayed", "fp8: not searched"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_runf(&r, "%s %s", base, bad[i][0]);
        assert_int_equal(r.status, 2);
        if (!strstr(r.err, bad[i][1]))
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i][0], r.err, bad[i][1]);
        cli_result_free(&r);
    }
    cli_runf(&r, "plan --model megatron-1.7b --cluster dgx-h100-ndr --gpus 8 "
                 "--global-batch 64 --stack megatron-lm-2021 --fix "
                 "fp8=tensorwise");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "does not train in FP8"));
    cli_result_free(&r);
}

/* A what-if study's fixed FP8 layout is infeasible on a variant whose
 * GPU cannot run it (no FP8, no MXFP8), not priced as 16-bit. */
static void test_whatif(void **state) {
    (void)state;
    char path[] = "/tmp/podplan-fp8-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("name: mx\nmodel: megatron-1.7b\ncluster: dgx-h100-ndr\n"
          "tokens: 1e9\nglobal_batch: 64\nset:\n  node.count: 1\n"
          "bundles:\n"
          "  h100: {gpu: h100-sxm5, server: dgx-h100, nic: ndr, "
          "switch: qm9700}\n"
          "  b200: {gpu: b200, server: dgx-b200, nic: ndr, switch: qm9700}\n"
          "  a100: {gpu: a100-sxm4-80gb, server: dgx-a100, nic: hdr, "
          "switch: qm8700}\n"
          "vary:\n  bundle: [h100, b200, a100]\nlayout:\n"
          "  parallel: tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,dtype=fp8,"
          "fp8=mxfp8\n",
          fp);
    fclose(fp);
    cli_result r;
    cli_runf(&r, "whatif --study %s --format json", path);
    unlink(path);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r), *vs = json_object_get(j, "variants");
    assert_int_equal(json_array_size(vs), 3);
    const char *want[][2] = {
        {"infeasible", "fp8=mxfp8: the GPU has no MXFP8 tensor cores"},
        {"ok", NULL},
        {"infeasible", "the GPU has no FP8 tensor cores"},
    };
    for (size_t i = 0; i < 3; i++) {
        json_t *v = json_array_get(vs, i);
        assert_string_equal(json_string_value(json_object_get(v, "status")),
                            want[i][0]);
        if (want[i][1]) {
            const char *err = json_string_value(json_object_get(v, "error"));
            assert_non_null(err);
            if (!strstr(err, want[i][1]))
                fail_msg("variant %zu: \"%s\"", i, err);
        }
    }
    json_decref(j);
    cli_result_free(&r);
}

/* Transformer Engine's FP8 copies of the weights (models/memory.c): a
 * weight scaled per tensor keeps its transpose too where FP8 GEMMs take
 * only the TN layout (Hopper), not where they take any (Blackwell, the
 * catalogue's fp8_any_layout); MXFP8 keeps a row-wise and a column-wise
 * copy anywhere.  One byte per parameter between them; the simulator
 * resolves it from the GPU (pp_stack_resolve). */
static double sim_memory(const char *cluster, const char *recipe) {
    json_t *j = cli_json_ok(
        "simulate --model megatron-1.7b --cluster %s --set node.count=1 "
        "--parallel tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,dtype=fp8,fp8=%s "
        "--stack nemo-2025 --format json",
        cluster, recipe);
    double b = cli_num(j, "memory_per_gpu_bytes");
    json_decref(j);
    return b;
}

static void test_weight_copies(void **state) {
    (void)state;
    pp_model m;
    pp_parallel p;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_model_load("megatron-1.7b", &m, &e), 0);
    pp_parallel_init(&p);
    assert_int_equal(pp_parallel_parse("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,"
                                       "dtype=fp8",
                                       &p, &e),
                     0);
    assert_true(p.fp8_transpose); /* until a GPU says otherwise */
    pp_memory tn, any, mx;
    p.fp8_recipe = PP_FP8_TENSORWISE;
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &tn, &e), 0);
    p.fp8_transpose = false;
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &any, &e), 0);
    p.fp8_recipe = PP_FP8_MXFP8;
    assert_int_equal(pp_memory_per_gpu(&m, &p, PP_OPT_ADAM_MIXED, &mx, &e), 0);
    double P = tn.params_per_gpu;
    assert_true(P > 1e9);
    assert_true(fabs(tn.weights - any.weights - P) <= 1e-6 * P);
    assert_true(mx.weights == tn.weights);
    assert_true(fabs(tn.total - any.total - P) <= 1e-6 * P);
    /* Through the simulator: DGX H100 against DGX B200. */
    double h = sim_memory("dgx-h100-ndr", "tensorwise"),
           b = sim_memory("dgx-b200-ndr", "tensorwise"),
           bm = sim_memory("dgx-b200-ndr", "mxfp8");
    assert_true(fabs(h - b - P) <= 1e-6 * P);
    assert_true(bm == h);
    /* memory --gpu resolves it as simulate does; without it, Hopper's. */
    double mm[3];
    const char *gpu[3] = {"", " --gpu h100-sxm5", " --gpu b200"};
    for (int i = 0; i < 3; i++) {
        json_t *j = cli_json_ok(
            "memory --model megatron-1.7b --parallel tp=1,pp=1,dp=8,mbs=1,"
            "gbs=64,zero=1,dtype=fp8,fp8=tensorwise --stack nemo-2025 "
            "--format json%s",
            gpu[i]);
        mm[i] = cli_num(j, "memory_per_gpu_bytes");
        json_decref(j);
    }
    assert_true(mm[0] == mm[1]);
    assert_true(fabs(mm[1] - mm[2] - P) <= 1e-6 * P);
    cli_expect(2, "did you mean \"b200\"",
               "memory --model megatron-1.7b --parallel tp=1 --gpu b20");
}

/* One Llama 3 8B layer on a B200 in MXFP8 under nemo-2025, with or
 * without fp8_attn=on. */
static void attn_layer(bool on, double *kernels, double *fwd_s, double *bwd_s) {
    layer_costs c = layer_costs_get(
        "b200", "nemo-2025", "llama3-8b",
        on ? "tp=1,dp=8,mbs=1,gbs=8,dtype=fp8,fp8=mxfp8,fp8_attn=on"
           : "tp=1,dp=8,mbs=1,gbs=8,dtype=fp8,fp8=mxfp8",
        PP_FP8_AUTO);
    *kernels = c.kernels;
    *fwd_s = c.fwd_s;
    *bwd_s = c.bwd_s;
}

/* fp8_attn=on (Transformer Engine's FP8 dot-product attention): the SPEC
 * and its refusals, the Blackwell profiles' published FP8 / BF16 kernel
 * time ratios (none on Hopper), the casts around the kernel (Q, K, V in
 * and O out forward, dO in and dQ, dK, dV out backward: 8 kernels with
 * MXFP8) and a faster layer step; refused where no figure or kernel
 * exists. */
static void test_fp8_attn(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_parallel p;
    char buf[PP_SPEC_MAX];
    pp_parallel_init(&p);
    assert_int_equal(
        pp_parallel_parse("dtype=fp8,fp8=mxfp8,fp8_attn=on", &p, &e), 0);
    assert_true(p.fp8_attn);
    assert_non_null(
        strstr(pp_parallel_format(&p, buf, sizeof buf), ",fp8_attn=on"));
    const char *bad[] = {"fp8_attn=on", "dtype=fp4,fp8_attn=on",
                         "dtype=fp8,fp8=blockwise,fp8_attn=on",
                         "dtype=fp8,attn=standard,fp8_attn=on"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e = (pp_error)PP_ERROR_INIT;
        pp_parallel_init(&p);
        assert_int_equal(pp_parallel_parse(bad[i], &p, &e), PP_EINPUT);
        assert_non_null(strstr(e.msg, "fp8_attn: FP8 attention needs"));
    }

    pp_catalog *cat;
    if (pp_catalog_load(NULL, &cat, &e)) fail_msg("%s", e.msg);
    const struct {
        const char *gpu;
        double fwd, bwd;
    } want[] = {{"b200", 0.907, 0.811},
                {"gb200", 0.830, 0.959},
                {"gb300", 0.834, 0.771},
                {"b300", 0.834, 0.771},
                {"h100-sxm5", 0, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        pp_gpu_profile g;
        if (pp_profile_load(NULL, pp_catalog_gpu(cat, want[i].gpu), &g, &e))
            fail_msg("%s", e.msg);
        assert_true(g.attn_fp8_fwd_ratio == want[i].fwd);
        assert_true(g.attn_fp8_bwd_ratio == want[i].bwd);
    }
    pp_catalog_free(cat);

    double k0, k1, f0, f1, b0, b1;
    attn_layer(false, &k0, &f0, &b0);
    attn_layer(true, &k1, &f1, &b1);
    print_message("llama3-8b layer, B200 MXFP8: forward %.3f -> %.3f ms, "
                  "backward %.3f -> %.3f ms, kernels %.0f -> %.0f\n",
                  f0 * 1e3, f1 * 1e3, b0 * 1e3, b1 * 1e3, k0, k1);
    assert_true(fabs((k1 - k0) - 8.0) < 1e-9);
    /* On B200 the forward kernel gains 9%, about what casting Q, K, V and
     * bringing O back costs; the backward's 19% carries the layer. */
    assert_true(b1 < b0 && f1 + b1 < f0 + b0);

    cli_expect(2, "fp8_attn=on: profile h100 has no FP8 attention times",
               "simulate --model llama3-8b --cluster dgx-h100-ndr --set "
               "node.count=1 --parallel tp=1,dp=8,mbs=1,gbs=8,zero=1,"
               "dtype=fp8,fp8_attn=on --stack nemo-2025");
    cli_expect(2,
               "fp8_attn=on: cuDNN's FP8 attention takes head dims up to "
               "128",
               "simulate --model deepseek-v3 --cluster dgx-b200-ndr --set "
               "node.count=1 --parallel tp=1,pp=1,dp=8,ep=8,etp=1,mbs=1,"
               "gbs=8,zero=1,dtype=fp8,fp8=mxfp8,fp8_attn=on --stack "
               "nemo-2025");
}

/* plan --fix fp8_attn=on: pinned, never searched; every candidate is
 * FP8 with it, and the launch lines ask for it by Megatron-core's
 * (--fp8-dot-product-attention), NeMo's model key and NeMo 2.0's
 * MegatronMixedPrecision argument of the same name; refused before any
 * candidate where simulate would refuse them all. */
#define ATTN_PLAN                                                              \
    "plan --model %s --cluster %s --set node.count=1 --gpus 8 "                \
    "--global-batch 64 --stack %s --top 2 %s"

static void test_fp8_attn_plan(void **state) {
    (void)state;
    json_t *j = cli_json_ok(ATTN_PLAN, "llama3-8b", "dgx-b200-ndr", "nemo-2025",
                            "--format json");
    assert_true(cli_candidates_all(j, "fp8_attn", 0) > 0);
    json_decref(j);
    j = cli_json_ok(ATTN_PLAN, "llama3-8b", "dgx-b200-ndr", "nemo-2025",
                    "--fix fp8_attn=on --format json");
    assert_true(cli_candidates_all(j, "dtype=fp8", 1) > 0);
    cli_candidates_all(j, ",fp8_attn=on", 1);
    json_decref(j);
    cli_expect(0,
               "  fp8_recipe: tensorwise\n  fp8_dot_product_attention: true\n",
               ATTN_PLAN, "llama3-8b", "dgx-b200-ndr", "nemo-2025",
               "--fix fp8_attn=on --format nemo");
    cli_expect(0, "fp8_recipe=\"tensorwise\", fp8_dot_product_attention=True)",
               ATTN_PLAN, "llama3-8b", "dgx-b200-ndr", "nemo-2025",
               "--fix fp8_attn=on --format nemo2");
    cli_expect(0,
               "--fp8-amax-compute-algo max \\\n"
               "    --fp8-dot-product-attention \\\n",
               ATTN_PLAN, "llama3-8b", "dgx-b200-ndr", "megatron-core-2024",
               "--fix fp8_attn=on --format megatron");
    const char *bad[][4] = {
        {"llama3-8b", "dgx-h100-ndr", "--fix fp8_attn=on",
         "--fix fp8_attn=on: needs a profile with FP8 attention times"},
        {"llama3-8b", "dgx-b200-ndr", "--fix fp8_attn=on,dtype=bf16",
         "--fix fp8_attn=on: needs dtype=fp8"},
        {"llama3-8b", "dgx-b200-ndr", "--fix fp8_attn=on,fp8=blockwise",
         "--fix fp8_attn=on: needs a recipe other than blockwise"},
        {"deepseek-v3", "dgx-b200-ndr", "--fix fp8_attn=on",
         "--fix fp8_attn=on: needs head dims up to 128"},
        {"resnet50", "dgx-b200-ndr", "--fix fp8_attn=on",
         "--fix fp8_attn=on: needs a transformer model"},
        {"llama3-8b", "dgx-b200-ndr", "--exclude fp8_attn=on",
         "fp8_attn: not searched (off unless pinned with --fix "
         "fp8_attn=on)"},
        {"llama3-8b", "dgx-b200-ndr", "--fix fp8_attn=yes",
         "fp8_attn: expected on or off, got \"yes\""},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        cli_expect(2, bad[k][3], ATTN_PLAN, bad[k][0], bad[k][1], "nemo-2025",
                   bad[k][2]);
    /* Without a Megatron-core format there is no setting to ask for: a
     * DeepSpeed stack that trained in FP8 with flash attention. */
    const char *yaml = "/tmp/podplan-test-fp8-attn-stack.yaml";
    FILE *f = fopen(yaml, "w");
    assert_non_null(f);
    fputs("name: dsfp8\nframework: DeepSpeed\nversion: test\n"
          "launch: [deepspeed]\nfp8:\n  supported: true\n"
          "attention:\n  flash: true\n",
          f);
    fclose(f);
    cli_expect(2, "--fix fp8_attn=on: needs a Megatron-core launch format",
               ATTN_PLAN, "llama3-8b", "dgx-b200-ndr", yaml,
               "--fix fp8_attn=on --format deepspeed");
    remove(yaml);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),     cmocka_unit_test(test_cast_costs),
        cmocka_unit_test(test_gpus),     cmocka_unit_test(test_plan),
        cmocka_unit_test(test_whatif),   cmocka_unit_test(test_weight_copies),
        cmocka_unit_test(test_fp8_attn), cmocka_unit_test(test_fp8_attn_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
