/*
 * tests/test_mla.c: multi-head latent attention (DeepSeek-V2 sec. 2.1,
 * Megatron-core's MLASelfAttention) and recompute=mla_up_proj.  Its
 * weights against DeepSeek-V3's checkpoint, its keys' bad values (inline
 * and located in YAML), its FLOPs written out, the simulator's kernels
 * per GPU under TP with sequence parallelism, what the recompute frees
 * and runs again, and the launch lines.
 */
#include "models_util.h"

#include <unistd.h>

#include "cli_run.h"
#include "plan_util.h"
#include "podplan/hw.h"
#include "step_int.h"

/* DeepSeek-V3's attention, as its config.json gives it. */
#define DS_H 7168.0
#define DS_A 128.0
#define DS_QR 1536.0
#define DS_KVR 512.0
#define DS_ROPE 64.0
#define DS_NOPE 128.0
#define DS_V 128.0

/* The checkpoint's tensors a layer: q_a_proj, q_a_layernorm, q_b_proj,
 * kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj. */
static void test_mla_params(void **state) {
    (void)state;
    pp_model m = load("deepseek-v3");
    assert_true(pp_model_is_mla(&m));
    assert_int_equal(m.head_dim, 160); /* (192 + 128) / 2, derived */
    assert_int_equal(m.kv_heads, 128);
    pp_attn_shape at;
    pp_model_attn_shape(&m, &at);
    double qk = DS_NOPE + DS_ROPE;
    assert_true(at.q == DS_A * qk && at.k == DS_A * qk);
    assert_true(at.v == DS_A * DS_V && at.o == DS_A * DS_V);
    assert_true(at.split + at.replicated == 187107328.0);
    assert_true(at.replicated ==
                DS_H * (DS_QR + DS_KVR + DS_ROPE) + DS_QR + DS_KVR);
    assert_true(at.up == DS_QR * DS_A * qk + DS_KVR * DS_A * (DS_NOPE + DS_V));
    /* The whole model: the released checkpoint's 671,026,419,200
     * weights without its MTP module, less the routers' 58 x 256
     * expert-bias terms podplan does not count. */
    assert_true(pp_model_params(&m) == 671026419200.0 - 58.0 * 256.0);

    /* Without a Q latent (q_lora_rank 0, as DeepSeek-V2-Lite), Q comes
     * straight from h. */
    pp_model lite = load("layers=2,hidden=2048,heads=16,seq=4096,vocab=1000,"
                         "ffn=swiglu,ffn_hidden=4096,kv_lora_rank=512,"
                         "qk_nope_head_dim=128,qk_rope_head_dim=64,"
                         "v_head_dim=128");
    pp_model_attn_shape(&lite, &at);
    assert_true(at.q_rank == 0);
    assert_true(at.matrices == 2048.0 * 16 * 192 + 2048.0 * (512 + 64) +
                                   512.0 * 16 * 256 + 16.0 * 128 * 2048);
    assert_true(at.replicated == 2048.0 * (512 + 64) + 512);
}

#define BASE "layers=2,hidden=1024,heads=8,seq=512,vocab=1000,"

static void test_mla_keys(void **state) {
    (void)state;
    expect_model_error(BASE "q_lora_rank=64",
                       "q_lora_rank: is a multi-head latent attention key, "
                       "but the model has no kv_lora_rank");
    expect_model_error(BASE "kv_lora_rank=64,qk_rope_head_dim=32,"
                            "v_head_dim=64",
                       "qk_nope_head_dim: missing: multi-head latent "
                       "attention (kv_lora_rank 64) needs");
    expect_model_error(BASE "kv_lora_rank=64,qk_nope_head_dim=64,"
                            "qk_rope_head_dim=32,v_head_dim=64,kv_heads=2",
                       "kv_heads: multi-head latent attention projects a K "
                       "and a V per head: expected heads (8), got 2");
    expect_model_error(BASE "kv_lora_rank=64,qk_nope_head_dim=64,"
                            "qk_rope_head_dim=32,v_head_dim=64,"
                            "kv_channels=64",
                       "kv_channels: not used with multi-head latent");
    expect_model_error(BASE "kv_lora_rank=0", "kv_lora_rank: expected a "
                                              "positive integer");
    expect_model_error(BASE "q_lora_rank=-1", "q_lora_rank: expected a "
                                              "non-negative integer");

    /* In a file, the key is located. */
    char path[] = "/tmp/podplan-mla-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *yaml = "layers: 2\nhidden: 1024\nheads: 8\nseq: 512\n"
                       "vocab: 1000\nkv_lora_rank: 64\nqk_nope_head_dim: 64\n"
                       "qk_rope_head_dim: 32\nv_head_dim: 64\nkv_heads: 4\n";
    assert_true(write(fd, yaml, strlen(yaml)) == (ssize_t)strlen(yaml));
    close(fd);
    pp_model m;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_model_load(path, &m, &e), PP_EINPUT);
    assert_contains(e.msg, ":10:11: kv_heads: multi-head latent attention");
    unlink(path);
}

/* Per token and layer forward, 2 FLOPs per weight of the projections
 * (DeepSeek-V3: q down, q up, kv down, kv up, out); mla_up_proj runs the
 * two up projections again, in every layer and the MTP module's. */
static void test_mla_flops(void **state) {
    (void)state;
    pp_model m = load("deepseek-v3"), gqa = m;
    pp_flops f;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_flops_count(&m, 1, PP_RECOMPUTE_NONE, &f, &e), 0);
    /* The same model with the 128 x 56 heads podplan used to stand in:
     * only the attention's projections differ. */
    gqa.kv_lora_rank = gqa.q_lora_rank = 0;
    gqa.qk_nope_head_dim = gqa.qk_rope_head_dim = gqa.v_head_dim = 0;
    pp_flops g;
    assert_int_equal(pp_flops_count(&gqa, 1, PP_RECOMPUTE_NONE, &g, &e), 0);
    double s = 4096, l = 62; /* 61 layers and the MTP module's */
    double mla = 187107328.0 - DS_QR - DS_KVR, mha = 4 * DS_H * DS_H;
    assert_rel(f.dense - g.dense, 6 * s * l * (mla - mha), 1e-9);
    assert_true(f.attn == g.attn); /* the core: head_dim 160 either way */
    double up = DS_QR * DS_A * 192 + DS_KVR * DS_A * 256;
    assert_rel(pp_flops_recompute_mods(&m, 1, PP_RECOMP_MLA_UP), s * l * 2 * up,
               1e-12);
    assert_true(pp_flops_recompute_mods(&gqa, 1, PP_RECOMP_MLA_UP) == 0);
}

/* The H100 profile under megatron-core-2024, whose TP collectives are
 * not folded into their GEMMs (the kernels below are read one by one). */
static pp_gpu_profile h100(void) {
    return load_gpu_profile("h100-sxm5", "megatron-core-2024");
}

/* The FLOPs of the ops named `prefix`... of list l, and whether any. */
static double op_flops(const pp__oplist *l, const char *prefix, int *n) {
    double f = 0;
    *n = 0;
    for (size_t i = 0; i < l->n; i++)
        if (strncmp(l->v[i].name, prefix, strlen(prefix)) == 0) {
            f += l->v[i].flops;
            (*n)++;
        }
    return f;
}

/* TP 2 with sequence parallelism, one sequence: the down projections on
 * this GPU's 2,048 tokens whole, the up projections on all 4,096 over
 * half the heads, the latents all-gathered between them; backward, the
 * weight and input gradients of each; mla_up_proj adds the up
 * projections' forward before the core's backward. */
static void test_mla_ops(void **state) {
    (void)state;
    pp_gpu_profile g = h100();
    pp_model m = load("deepseek-v3");
    pp_parallel p = layout("tp=2,pp=1,dp=4,ep=8,mbs=1,gbs=8,sp=on,"
                           "recompute=none");
    pp_stack_resolve(&g, &p);
    pp__shape sh = {&m, &p, &g, 2};
    pp__oplist fw = {0}, bw = {0};
    pp__ops_layer_fwd(&sh, &fw);
    double tok = 4096, tn = tok / 2;
    int n;
    assert_rel(op_flops(&fw, "q down", &n), 2 * tn * DS_H * DS_QR, 1e-12);
    assert_int_equal(n, 1);
    assert_rel(op_flops(&fw, "kv down", &n), 2 * tn * DS_H * (DS_KVR + DS_ROPE),
               1e-12);
    assert_rel(op_flops(&fw, "q up", &n), 2 * tok * DS_QR * DS_A * 192 / 2,
               1e-12);
    assert_rel(op_flops(&fw, "kv up", &n), 2 * tok * DS_KVR * DS_A * 256 / 2,
               1e-12);
    assert_rel(op_flops(&fw, "attn proj", &n), 2 * tok * DS_A * DS_V / 2 * DS_H,
               1e-12);
    assert_int_equal((int)op_flops(&fw, "qkv", &n), 0);
    assert_int_equal(n, 0);
    /* The latents cross TP, not the layer's input. */
    bool latent = false;
    for (size_t i = 0; i < fw.n; i++)
        if (fw.v[i].kind == PP__OP_COMM && fw.v[i].coll == PP_COLL_ALLGATHER &&
            fw.v[i].bytes == 2 * tok * (DS_QR + DS_KVR + DS_ROPE))
            latent = true;
    assert_true(latent);

    pp__ops_layer_bwd(&sh, &bw);
    assert_rel(op_flops(&bw, "q down", &n), 2 * 2 * tn * DS_H * DS_QR, 1e-12);
    assert_int_equal(n, 2); /* dgrad, wgrad */
    assert_rel(op_flops(&bw, "kv up", &n), 2 * 2 * tok * DS_KVR * DS_A * 128,
               1e-12);
    assert_int_equal(n, 2);
    pp__oplist_fini(&bw);

    /* mla_up_proj: the two up projections' forward once more. */
    p.recompute_mods = PP_RECOMP_MLA_UP;
    pp__oplist br = {0};
    pp__ops_layer_bwd(&sh, &br);
    double fq = op_flops(&br, "q up", &n);
    assert_int_equal(n, 3);
    assert_rel(fq, 3 * 2 * tok * DS_QR * DS_A * 96, 1e-12);
    /* ... before the core's backward. */
    size_t up = SIZE_MAX, core = SIZE_MAX;
    for (size_t i = 0; i < br.n; i++) {
        if (strcmp(br.v[i].name, "kv up") == 0 && up == SIZE_MAX) up = i;
        if (strcmp(br.v[i].name, "flash attn bwd") == 0) core = i;
    }
    assert_true(up < core && core < br.n);
    pp__oplist_fini(&br);
    pp__oplist_fini(&fw);
}

/* mla_up_proj frees Q, K and V: 2 bytes each of 192 + 192 + 128 per
 * head and token, split over tp. */
static void test_mla_memory(void **state) {
    (void)state;
    pp_model m = load("deepseek-v3");
    pp_parallel a = layout("tp=2,pp=1,dp=8,ep=8,mbs=1,gbs=64,sp=on,"
                           "recompute=none"),
                b = layout("tp=2,pp=1,dp=8,ep=8,mbs=1,gbs=64,sp=on,"
                           "recompute=mla_up_proj");
    pp_memory ma, mb;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_memory_per_gpu(&m, &a, PP_OPT_ADAM_MIXED, &ma, &e), 0);
    assert_int_equal(pp_memory_per_gpu(&m, &b, PP_OPT_ADAM_MIXED, &mb, &e), 0);
    assert_rel(ma.activations_per_layer - mb.activations_per_layer,
               2.0 * DS_A * (192 + 192 + 128) * 4096 / 2, 1e-9);
}

/* A dense layer's weights on a TP-2 GPU: the split projections and MLP
 * halved, the down projections and latent norms whole, the two norms. */
static void test_mla_layer_params(void **state) {
    (void)state;
    pp_gpu_profile g = h100();
    pp_model m = load("deepseek-v3");
    pp_parallel p = layout("tp=2,dp=4,ep=8,mbs=1,gbs=8,sp=on");
    pp_attn_shape at;
    pp_model_attn_shape(&m, &at);
    pp__shape dense = {&m, &p, &g, 1};
    assert_rel(pp__layer_params_gpu(&dense),
               (at.split + 3 * DS_H * 18432) / 2 + at.replicated + 4 * DS_H,
               1e-12);
}

/* A small MLA model, inline: a plan on one server is quick. */
#define SMALL                                                                  \
    "layers=4,hidden=2048,heads=16,seq=4096,vocab=32000,ffn=swiglu,"           \
    "ffn_hidden=8192,q_lora_rank=512,kv_lora_rank=256,qk_nope_head_dim=128,"   \
    "qk_rope_head_dim=64,v_head_dim=128"
#define ONE_SERVER                                                             \
    "--cluster dgx-h100-ndr --set node.count=1 --gpus 8 --global-batch 64 "    \
    "--top 0"

/* plan's launch lines for SMALL on one server, with `args`, hold every
 * one of `needles`. */
static void plan_has(const char *args, const char *const *needles) {
    cli_result r;
    cli_runf(&r, "plan --model " SMALL " " ONE_SERVER " %s", args);
    assert_int_equal(r.status, 0);
    for (size_t i = 0; needles[i]; i++) assert_contains(r.out, needles[i]);
    cli_result_free(&r);
}

/* Megatron-LM's arguments, NeMo's YAML keys and NeMo 2.0's
 * DeepSeekConfig (MLATransformerConfig's fields; GPTConfig has none). */
static void test_mla_launch(void **state) {
    (void)state;
    static const char *const megatron[] = {
        "--multi-latent-attention \\\n    --qk-layernorm",
        "--q-lora-rank 512",
        "--kv-lora-rank 256",
        "--qk-head-dim 128",
        "--qk-pos-emb-head-dim 64",
        "--v-head-dim 128",
        NULL};
    plan_has("--format megatron", megatron);
    static const char *const nemo[] = {
        "  multi_latent_attention: true\n", "  kv_lora_rank: 256\n",
        "  recompute_modules: [mla_up_proj]\n", NULL};
    plan_has("--stack nemo-2025 --fix recompute=mla_up_proj --format nemo",
             nemo);
    static const char *const nemo2[] = {"config = llm.DeepSeekConfig(\n",
                                        "    q_lora_rank=512,\n",
                                        "    qk_pos_emb_head_dim=64,\n", NULL};
    plan_has("--stack nemo-2025 --format nemo2", nemo2);
    /* A stack without the module refuses it. */
    cli_expect(2, "mla_up_proj",
               "plan --model " SMALL " " ONE_SERVER
               " --stack megatron-core-2024 --fix recompute=mla_up_proj");
}

/* exec's GEMM list: the four projections in place of QKV. */
static void test_mla_gemms(void **state) {
    (void)state;
    pp_model m = load("deepseek-v3");
    pp_parallel p = layout("tp=2,dp=4,ep=8,mbs=1,gbs=8,sp=on");
    pp_gemm_shape g[PP_LAYER_GEMMS_MAX];
    size_t n = 0;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_layer_gemms(&m, &p, g, PP_LAYER_GEMMS_MAX, &n, &e), 0);
    assert_int_equal(n, 12);
    assert_string_equal(g[0].name, "q down");
    assert_true(g[0].m == 2048 && g[0].n == 1536 && g[0].k == 7168);
    assert_string_equal(g[3].name, "kv up");
    assert_true(g[3].m == 4096 && g[3].n == 128 * 256 / 2 && g[3].k == 512);
    assert_string_equal(g[4].name, "attn scores");
    assert_true(g[4].k == 160);
    /* Then the MoE block: one shared expert of 2048 split over tp 2, and
     * 32 local experts; expert TP defaults to tp (2): each expert half as
     * wide, 2048 x 8 x 2 / 32 = 1024 rows. */
    assert_string_equal(g[8].name, "shared fc1");
    assert_true(g[8].m == 4096 && g[8].n == 2048 && g[8].k == 7168);
    assert_string_equal(g[10].name, "experts fc1");
    assert_true(g[10].grouped && g[10].batch == 32 && g[10].m == 1024 &&
                g[10].n == 2048);
    assert_int_equal(pp_layer_gemms(&m, &p, g, 8, &n, &e), PP_ERANGE);
}

/* The op of list l named exactly `name`, or NULL. */
static const pp__op *op_named(const pp__oplist *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name)) return &l->v[i];
    return NULL;
}

/* exec's lists (forward, backward) against the simulator's ops for one
 * layer: every listed GEMM is an op of the same name whose price is that
 * shape's, orientation included (bf16; the grouped price for grouped
 * shapes).  flash false: the unfused core, whose batched GEMMs are ops
 * too; with FlashAttention the core is one kernel and is skipped. */
static void gemms_match_sim(const char *model, const char *spec, bool flash,
                            size_t want) {
    pp_model m = load(model);
    pp_parallel p = layout(spec);
    pp_gpu_profile gp = h100();
    /* A GEMM a TP collective runs beside is folded into that collective's
     * op (async_backward): keep every GEMM its own op here. */
    gp.sw.tp_async_bwd = false;
    pp_gemm_shape g[PP_LAYER_GEMMS_MAX + PP_LAYER_GEMMS_BWD_MAX];
    size_t nf = 0, nb = 0, found = 0;
    pp_error e = PP_ERROR_INIT;
    p.recompute = PP_RECOMPUTE_NONE;
    pp_stack_resolve(&gp, &p);
    p.flash = flash;
    if (pp_layer_gemms(&m, &p, g, PP_LAYER_GEMMS_MAX, &nf, &e) ||
        pp_layer_gemms_bwd(&m, &p, g + nf, PP_LAYER_GEMMS_BWD_MAX, &nb, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(nb, 2 * nf);
    pp__shape sh = {&m, &p, &gp, 0}; /* an MoE layer if it has experts */
    pp__oplist fw = {0}, bw = {0};
    pp__ops_layer_fwd(&sh, &fw);
    pp__ops_layer_bwd(&sh, &bw);
    for (size_t i = 0; i < nf + nb; i++) {
        const pp_gemm_shape *x = &g[i];
        const pp__op *o = op_named(i < nf ? &fw : &bw, x->name);
        if (!o) {
            if (!flash) fail_msg("%s: no op %s", model, x->name);
            /* Only FlashAttention's core is not an op. */
            assert_true(flash && !strncmp(x->name, "attn s", 6) +
                                     !strncmp(x->name, "attn v", 6));
            continue;
        }
        found++;
        double t =
            x->grouped || x->batch == 1
                ? pp_gemm_grouped_time_s(&gp, PP_GEMM_OPS_16, (double)x->batch,
                                         x->m, x->n, x->k)
                : pp_gemm_time_s(&gp, x->batch, x->m, x->n, x->k);
        assert_rel(o->flops, 2.0 * x->batch * x->m * x->n * x->k, 1e-12);
        assert_rel(o->time_s, t, 1e-12);
    }
    assert_int_equal(found, want);
    pp__oplist_fini(&fw);
    pp__oplist_fini(&bw);
}

static void test_gemms_match_sim(void **state) {
    (void)state;
    /* MLA and MoE with a shared expert: 12 forward, 24 backward, the
     * core's 2 + 4 skipped. */
    gemms_match_sim("deepseek-v3", "tp=2,dp=4,ep=8,mbs=1,gbs=8,sp=on", true,
                    30);
    /* Dense GQA with the unfused core: all 18. */
    gemms_match_sim("llama3-8b", "tp=2,dp=4,mbs=1,gbs=8,sp=on", false, 18);
    /* Fine-grained MoE without shared experts: 7 + 14, 6 skipped. */
    gemms_match_sim("qwen3-30b-a3b", "tp=1,dp=8,ep=8,mbs=1,gbs=8", true, 15);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mla_params),
        cmocka_unit_test(test_mla_keys),
        cmocka_unit_test(test_mla_flops),
        cmocka_unit_test(test_mla_ops),
        cmocka_unit_test(test_mla_memory),
        cmocka_unit_test(test_mla_layer_params),
        cmocka_unit_test(test_mla_launch),
        cmocka_unit_test(test_mla_gemms),
        cmocka_unit_test(test_gemms_match_sim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
