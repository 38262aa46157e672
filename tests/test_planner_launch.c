/*
 * test_planner_launch.c: `podplan plan`'s launch formats.  GPT-3 175B on
 * titan (fits in memory, every flag of the launch line a Megatron-LM
 * argument), LLaMA-style models (no biases, SwiGLU, GQA, RoPE, RMSNorm)
 * in Megatron-LM's, NeMo 1.x's and NeMo 2.0's words, fp16 on GPUs without
 * bf16, DeepSpeed's ds_config (only keys DeepSpeed reads; what it cannot
 * say on stderr) and the limits each format puts on the search, uneven
 * pipeline splits.
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

#include "cli_run.h"
#include "plan_util.h"
#include "podplan/planner.h"

static void test_gpt3_titan(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 2 --format json --no-timing");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    json_t *j = cli_json(&r);
    json_t *c0 = json_array_get(json_object_get(j, "candidates"), 0);
    assert_non_null(c0);
    /* The chosen layout fits in memory: HBM less the 10% reserve. */
    double mem = num(c0, "memory_per_gpu_bytes");
    assert_true(mem > 0 && mem <= 0.9 * num(j, "gpu_memory_bytes"));
    assert_true(num(c0, "memory_headroom_bytes") >= 0);
    assert_true(json_is_true(json_object_get(c0, "simulated")));
    assert_true(num(c0, "iteration_time_s") > 0);
    assert_true(num(c0, "tflops_per_gpu") > 50 &&
                num(c0, "tflops_per_gpu") < 312);
    assert_true(num(c0, "mfu") > 0 && num(c0, "mfu") < 1);
    json_t *b = json_object_get(c0, "breakdown");
    double sum = num(b, "compute_s") + num(b, "tp_comm_s") +
                 num(b, "pp_comm_s") + num(b, "dp_comm_exposed_s") +
                 num(b, "bubble_s") + num(b, "other_s");
    assert_true(fabs(sum - num(c0, "iteration_time_s")) <=
                1e-6 * num(c0, "iteration_time_s"));
    assert_true(json_is_null(json_object_get(c0, "training_days")));
    pp_parallel p;
    pp_parallel_init(&p);
    pp_error e = PP_ERROR_INIT;
    const char *spec = json_string_value(json_object_get(c0, "parallel"));
    assert_int_equal(pp_parallel_parse(spec, &p, &e), 0);
    assert_int_equal(p.tp * p.pp * p.dp, 1024);
    assert_int_equal(p.gbs, 1536);
    assert_true(json_array_size(json_object_get(j, "evaluated")) ==
                (size_t)num(json_object_get(j, "search"), "feasible"));
    assert_true(num(json_object_get(j, "rejected"), "memory") > 0);
    assert_null(json_object_get(json_object_get(j, "search"), "search_time_s"));
    json_decref(j);
    cli_result_free(&r);

    /* The launch line: every flag a Megatron-LM argument, the layout's
     * values, ZeRO limited to the distributed optimizer. */
    cli_runf(&r,
             "plan --model gpt3-175b --cluster titan --gpus 1024 "
             "--global-batch 1536 --top 2 --format megatron --tokens 300e9");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    char v[64];
    int64_t tp = atoll(
        megatron_value(r.out, "--tensor-model-parallel-size", v, sizeof v));
    int64_t pp = atoll(
        megatron_value(r.out, "--pipeline-model-parallel-size", v, sizeof v));
    int64_t mbs =
        atoll(megatron_value(r.out, "--micro-batch-size", v, sizeof v));
    assert_true(tp >= 1 && pp >= 1 && mbs >= 1);
    assert_true(1024 % (tp * pp) == 0);
    assert_true(1536 % (mbs * (1024 / (tp * pp))) == 0);
    assert_string_equal(
        megatron_value(r.out, "--global-batch-size", v, sizeof v), "1536");
    assert_string_equal(megatron_value(r.out, "--num-layers", v, sizeof v),
                        "96");
    assert_string_equal(megatron_value(r.out, "--hidden-size", v, sizeof v),
                        "12288");
    assert_string_equal(
        megatron_value(r.out, "--num-attention-heads", v, sizeof v), "96");
    assert_string_equal(megatron_value(r.out, "--seq-length", v, sizeof v),
                        "2048");
    assert_string_equal(megatron_value(r.out, "--ffn-hidden-size", v, sizeof v),
                        "49152");
    assert_non_null(
        megatron_value(r.out, "--max-position-embeddings", v, sizeof v));
    assert_non_null(megatron_value(r.out, "--train-iters", v, sizeof v));
    assert_int_equal(atoll(v), (long long)ceil(300e9 / (1536.0 * 2048)));
    assert_null(megatron_value(r.out, "--swiglu", NULL, 0));
    assert_non_null(strstr(r.out, "torchrun --nnodes="));
    cli_result_free(&r);

    /* GQA and SwiGLU shape flags. */
    cli_runf(&r, "plan --model llama2-70b --cluster titan --gpus 64 "
                 "--global-batch 64 --top 0 --format megatron");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(megatron_value(r.out, "--group-query-attention", NULL, 0));
    assert_string_equal(
        megatron_value(r.out, "--num-query-groups", v, sizeof v), "8");
    assert_non_null(megatron_value(r.out, "--swiglu", NULL, 0));
    assert_non_null(megatron_value(
        r.out, "--untie-embeddings-and-output-weights", NULL, 0));
    cli_result_free(&r);
}

/* DeepSpeed's pipeline engine runs ZeRO 0 and 1 only: with --format
 * deepspeed a pipelined layout never has stage 2 or 3, and with megatron
 * no layout has ZeRO above 1. */
static void test_targets(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0 --format deepspeed --fix pp=8");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    json_t *d = cli_json(&r);
    assert_true(num(json_object_get(d, "zero_optimization"), "stage") <= 1);
    assert_int_equal((int64_t)num(json_object_get(d, "pipeline"), "stages"), 8);
    int64_t mbs = (int64_t)num(d, "train_micro_batch_size_per_gpu");
    int64_t gas = (int64_t)num(d, "gradient_accumulation_steps");
    /* With pipelining TP is the model code's: stderr says which. */
    assert_null(json_object_get(d, "tensor_parallel"));
    const char *tps = strstr(r.err, "tensor parallelism ");
    assert_non_null(tps);
    int64_t tp = atoll(tps + strlen("tensor parallelism "));
    assert_true(tp >= 1 && tp <= 8);
    assert_int_equal(mbs * gas * (1024 / (tp * 8)), 1536);
    json_decref(d);
    cli_result_free(&r);

    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0 --format megatron --fix zero=3");
    assert_int_equal(r.status, 2);
    cli_result_free(&r);
}

/* Uneven pipeline splits.  A LLaMA-3-8B-like shape (128,256-entry
 * vocabulary, h 4096): its logit layer costs about 2.4 layers, so at
 * pp = 4 the last stage is the slowest of an even split, and --uneven must
 * find a lighter one; the launch formats must say so in Megatron-LM's and
 * NeMo's words, and DeepSpeed (whose split lives in the model code) must
 * not be offered one. */
#define BIG_VOCAB "layers=32,hidden=4096,heads=32,seq=4096,vocab=128256"
static void test_uneven(void **state) {
    (void)state;
    cli_result r;
    char v[64];
    const char *base = "plan --model " BIG_VOCAB " --cluster selene-like "
                       "--gpus 64 --global-batch 256 --fix tp=2,pp=4,vp=1 "
                       "--top 0";
    cli_runf(&r, "%s --format json --no-timing", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    json_t *d = cli_json(&r);
    json_t *c0 = json_array_get(json_object_get(d, "candidates"), 0);
    const char *even = json_string_value(json_object_get(c0, "parallel"));
    assert_null(strstr(even, "first="));
    double t_even = num(c0, "iteration_time_s");
    cli_result u;
    cli_runf(&u, "%s --uneven --format json --no-timing", base);
    if (u.status) fail_msg("exit %d: %s", u.status, u.err);
    json_t *du = cli_json(&u);
    json_t *u0 = json_array_get(json_object_get(du, "candidates"), 0);
    const char *best = json_string_value(json_object_get(u0, "parallel"));
    assert_non_null(strstr(best, ",last="));
    assert_true(num(u0, "iteration_time_s") < 0.97 * t_even);
    /* Splits the stages cannot share evenly are counted, not offered. */
    assert_true(num(json_object_get(du, "rejected"), "split") > 0);
    json_decref(du);
    json_decref(d);
    cli_result_free(&u);
    cli_result_free(&r);

    /* Pinned without --uneven: honoured, and in the launch line. */
    cli_runf(&r, "%s --fix first=7,last=7 --format megatron", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_string_equal(megatron_value(r.out,
                                       "--decoder-first-pipeline-num-layers", v,
                                       sizeof v),
                        "7");
    assert_string_equal(megatron_value(r.out,
                                       "--decoder-last-pipeline-num-layers", v,
                                       sizeof v),
                        "7");
    cli_result_free(&r);
    /* With interleaving the chunks are given per rank. */
    cli_runf(&r, "plan --model " BIG_VOCAB " --cluster selene-like --gpus 64 "
                 "--global-batch 256 --fix tp=2,pp=4,vp=2,first=6,last=6 "
                 "--top 0 --format megatron");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_string_equal(megatron_value(r.out,
                                       "--num-virtual-stages-per-pipeline-rank",
                                       v, sizeof v),
                        "2");
    assert_null(megatron_value(r.out, "--num-layers-per-virtual-pipeline-stage",
                               v, sizeof v));
    cli_result_free(&r);
    cli_runf(&r, "%s --fix first=7,last=7 --format nemo", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "num_layers_in_first_pipeline_stage: 7\n"));
    assert_non_null(strstr(r.out, "num_layers_in_last_pipeline_stage: 7\n"));
    cli_result_free(&r);
    /* DeepSpeed cannot express it: nothing is left to offer. */
    cli_runf(&r, "%s --fix first=7,last=7 --format deepspeed", base);
    assert_int_equal(r.status, 1);
    cli_result_free(&r);
    /* A pinned split the stages cannot share: nothing feasible, and bad
     * values are usage errors. */
    cli_runf(&r, "%s --fix first=7,last=8", base);
    assert_int_equal(r.status, 1);
    cli_result_free(&r);
    cli_runf(&r, "%s --fix first=x", base);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "first: expected a number of layers"));
    cli_result_free(&r);
}

/* --uneven also tries Megatron-core's split that counts the embedding and
 * the loss as a layer each (--account-for-embedding/loss-in-pipeline-
 * split, as NVIDIA runs Llama 3.1 405B at pp 8 x vp 8).  30 layers + 2 =
 * 32 units over pp 4 x vp 2, 4 each: no first/last split of 30 layers
 * divides by vp 2, so that is the only split, and the launch formats
 * carry it as a pipeline layout. */
#define ODD_LAYERS "layers=30,hidden=4096,heads=32,seq=4096,vocab=128256"

/* The SPEC of the best candidate of `plan ARGS --format json` (a copy;
 * the caller frees it). */
static char *best_spec(const char *args) {
    cli_result r;
    cli_runf(&r, "%s --format json", args);
    if (r.status) fail_msg("%s: exit %d: %s", args, r.status, r.err);
    json_t *d = cli_json(&r);
    json_t *c0 = json_array_get(json_object_get(d, "candidates"), 0);
    const char *p = json_string_value(json_object_get(c0, "parallel"));
    if (!p) fail_msg("%s: no candidate", args);
    char *best = strdup(p);
    json_decref(d);
    cli_result_free(&r);
    return best;
}

static void test_uneven_layout(void **state) {
    (void)state;
    cli_result r;
    char v[64];
    const char *base = "plan --model " ODD_LAYERS " --cluster selene-like "
                       "--gpus 64 --global-batch 256 --fix tp=2,pp=4,vp=2 "
                       "--top 0";
    /* Without --uneven the pins cannot be met: a usage error. */
    cli_runf(&r, "%s --format json --no-timing", base);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--fix pp=4: does not divide the 30 layers"));
    cli_result_free(&r);
    char args[512];
    snprintf(args, sizeof args, "%s --uneven --no-timing", base);
    char *best = best_spec(args);
    assert_non_null(strstr(best, ",vp=2,"));
    assert_non_null(strstr(best, ",layout=Ettt|(tttt|)*6tttL"));
    free(best);

    cli_runf(&r, "%s --uneven --format megatron", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_string_equal(
        megatron_value(r.out, "--pipeline-model-parallel-layout", v, sizeof v),
        "'Ettt|(tttt|)*6tttL'");
    assert_null(megatron_value(r.out, "--num-virtual-stages-per-pipeline-rank",
                               v, sizeof v));
    cli_result_free(&r);
    cli_runf(&r, "%s --uneven --format nemo", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "  pipeline_model_parallel_layout: "
                                  "\"Ettt|(tttt|)*6tttL\"\n"));
    assert_non_null(strstr(r.out, "virtual_pipeline_model_parallel_size: 2\n"));
    cli_result_free(&r);
    cli_runf(&r, "%s --uneven --format nemo2", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "    pipeline_model_parallel_layout="
                                  "\"Ettt|(tttt|)*6tttL\",\n"));
    cli_result_free(&r);
    /* DeepSpeed's pipeline engine has no uneven split in either form:
     * at vp 1 (DeepSpeed's only) nothing is left to offer. */
    cli_runf(&r, "plan --model " ODD_LAYERS " --cluster selene-like --gpus 64 "
                 "--global-batch 256 --fix tp=2,pp=4,vp=1 --top 0 --uneven "
                 "--format deepspeed");
    assert_int_equal(r.status, 1);
    cli_result_free(&r);
}

/* An MoE model needs sp at tp > 1 (models/moe.c), which the planner sets
 * after the split: the split alone is checked first (it was the whole
 * SPEC, sp still off, and every uneven or accounted split of an MoE model
 * at tp > 1 was refused).  Qwen3-235B-A22B as NVIDIA's H100 preset runs
 * it: 94 layers, tp 2, pp 8 x vp 4, embedding and loss as layers. */
#define QWEN235 "plan --model qwen3-235b-a22b --cluster dgx-h100-ndr " \
                "--set node.count=32 --gpus 256 --global-batch 2048 "     \
                "--stack nemo-2025 --top 0 --uneven --no-timing"
static void test_uneven_moe_tp(void **state) {
    (void)state;
    char *best = best_spec(QWEN235 " --fix tp=2,pp=8,vp=4");
    assert_non_null(strstr(best, "tp=2,pp=8,"));
    assert_non_null(strstr(best, ",sp=on,"));
    assert_non_null(strstr(best, ",layout=Ett|(ttt|)*30ttL"));
    free(best);
    /* The first= / last= form (vp 1: 11 + 6 x 12 + 11). */
    best = best_spec(QWEN235 " --fix tp=2,pp=8,vp=1,first=11,last=11");
    assert_non_null(strstr(best, ",sp=on,"));
    assert_non_null(strstr(best, ",first=11,last=11"));
    free(best);
}

/* A model with multi-token prediction: --uneven also counts its MTP
 * layers as units, the split NVIDIA's DeepSeek-V3 recipes write out
 * (61 layers + E + L + m = 64 units, 2 per virtual stage at pp 8 x vp 4:
 * Et|(tt|)*30mL); the plain accounting (63 units) cannot split there. */
static void test_uneven_mtp(void **state) {
    (void)state;
    cli_result r;
#define DSV3 "plan --model deepseek-v3 --cluster dgx-h100-ndr "              \
             "--set node.count=128 --gpus 1024 --global-batch 8192 "        \
             "--stack nemo-2025 --top 0 --uneven --no-timing"
    const char *base = DSV3;
    char *best = best_spec(DSV3 " --fix tp=2,pp=8,vp=4");
    assert_non_null(strstr(best, ",layout=Et|(tt|)*30mL"));
    free(best);
    /* 5 divides none of 61, 63 and 64: a usage error naming all three. */
    cli_runf(&r, "%s --fix pp=5", base);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--fix pp=5: does not divide the 61 layers "
                                  "of deepseek-v3 nor those + 2 or + 2 + "
                                  "mtp_layers"));
    cli_result_free(&r);
}

/* ---- DeepSpeed: only keys DeepSpeed reads ---------------------------------- */

/* The keys DeepSpeed's config reads, "parent.child" for nested ones.
 * Top level: deepspeed/runtime/constants.py (TRAIN_BATCH_SIZE,
 * TRAIN_MICRO_BATCH_SIZE_PER_GPU, GRADIENT_ACCUMULATION_STEPS,
 * STEPS_PER_PRINT, GRADIENT_CLIPPING, WALL_CLOCK_BREAKDOWN, FP16, BF16,
 * ...) and runtime/config.py (zero_optimization, activation_checkpointing,
 * pipeline, tensor_parallel).  fp16/bf16: constants.py FP16_* / BFLOAT16_*.
 * zero_optimization: runtime/zero/config.py (DeepSpeedZeroConfig).
 * activation_checkpointing: runtime/activation_checkpointing/config.py.
 * pipeline: runtime/config.py get_pipeline_config's defaults.
 * tensor_parallel: runtime/tensor_parallel/config.py (TPTrainingConfig,
 * DeepSpeed >= 0.16.4). */
static const char *const deepspeed_keys[] = {
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "steps_per_print",
    "gradient_clipping",
    "prescale_gradients",
    "gradient_predivide_factor",
    "wall_clock_breakdown",
    "memory_breakdown",
    "dump_state",
    "zero_allow_untested_optimizer",
    "communication_data_type",
    "optimizer",
    "scheduler",
    "fp16",
    "fp16.enabled",
    "fp16.auto_cast",
    "fp16.loss_scale",
    "fp16.initial_scale_power",
    "fp16.loss_scale_window",
    "fp16.hysteresis",
    "fp16.consecutive_hysteresis",
    "fp16.min_loss_scale",
    "bf16",
    "bf16.enabled",
    "bf16.immediate_grad_update",
    "zero_optimization",
    "zero_optimization.stage",
    "zero_optimization.contiguous_gradients",
    "zero_optimization.reduce_scatter",
    "zero_optimization.reduce_bucket_size",
    "zero_optimization.allgather_partitions",
    "zero_optimization.allgather_bucket_size",
    "zero_optimization.overlap_comm",
    "zero_optimization.offload_param",
    "zero_optimization.offload_optimizer",
    "zero_optimization.sub_group_size",
    "zero_optimization.round_robin_gradients",
    "activation_checkpointing",
    "activation_checkpointing.partition_activations",
    "activation_checkpointing.contiguous_memory_optimization",
    "activation_checkpointing.cpu_checkpointing",
    "activation_checkpointing.number_checkpoints",
    "activation_checkpointing.synchronize_checkpoint_boundary",
    "activation_checkpointing.profile",
    "pipeline",
    "pipeline.stages",
    "pipeline.partition",
    "pipeline.seed_layers",
    "pipeline.activation_checkpoint_interval",
    "pipeline.pipe_partitioned",
    "pipeline.grad_partitioned",
    "tensor_parallel",
    "tensor_parallel.autotp_size",
    NULL};

static void check_deepspeed_keys(json_t *o, const char *parent) {
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        char path[256];
        snprintf(path, sizeof path, "%s%s%s", parent, parent[0] ? "." : "", k);
        bool known = false;
        for (int i = 0; deepspeed_keys[i] && !known; i++)
            known = strcmp(deepspeed_keys[i], path) == 0;
        if (!known) fail_msg("%s is not a key DeepSpeed reads", path);
        if (json_is_object(v)) check_deepspeed_keys(v, path);
    }
}

/* Runs `plan ... --format deepspeed`, checks every key, and returns the
 * layout it assumed (stderr's first line) in *par. */
static json_t *deepspeed_plan(const char *args, cli_result *r,
                              pp_parallel *par) {
    cli_runf(r, "plan %s --top 0 --no-timing --format deepspeed", args);
    if (r->status) fail_msg("exit %d: %s", r->status, r->err);
    json_t *d = cli_json(r);
    check_deepspeed_keys(d, "");
    /* "podplan plan: assumed: M on C: tp=...,zero=Z[ with ...], ..." */
    const char *sp = strstr(r->err, ": tp=");
    assert_non_null(sp);
    char spec[256];
    snprintf(spec, sizeof spec, "%.*s", (int)strcspn(sp + 2, " "), sp + 2);
    if (spec[strlen(spec) - 1] == ',') spec[strlen(spec) - 1] = '\0';
    pp_error e = PP_ERROR_INIT;
    pp_parallel_init(par);
    if (pp_parallel_parse(spec, par, &e)) fail_msg("%s: %s", spec, e.msg);
    assert_non_null(strstr(r->err, "ranks tp,dp,pp"));
    return d;
}

static void test_deepspeed(void **state) {
    (void)state;
    cli_result r;
    pp_parallel p;
    /* GPT-3 on titan: pipelined; what the engine cannot run is not
     * offered: no interleaving, no sequence parallelism, no selective
     * recomputation. */
    json_t *d = deepspeed_plan("--model gpt3-175b --cluster titan --gpus 1024 "
                               "--global-batch 1536",
                               &r, &p);
    assert_int_equal(p.vp, 1);
    assert_false(p.sp);
    assert_int_not_equal(p.recompute, PP_RECOMPUTE_SELECTIVE);
    assert_true(p.pp > 1);
    assert_int_equal((int64_t)num(json_object_get(d, "pipeline"), "stages"),
                     p.pp);
    assert_int_equal((int64_t)num(json_object_get(d, "pipeline"),
                                  "activation_checkpoint_interval"),
                     p.recompute == PP_RECOMPUTE_FULL);
    assert_int_equal((int64_t)num(d, "train_micro_batch_size_per_gpu") *
                         (int64_t)num(d, "gradient_accumulation_steps") * p.dp,
                     1536);
    assert_true(
        json_is_true(json_object_get(json_object_get(d, "bf16"), "enabled")));
    assert_null(json_object_get(d, "fp16"));
    assert_int_equal(r.out[0], '{'); /* the JSON alone on stdout */
    json_decref(d);
    cli_result_free(&r);

    /* Full recomputation pinned: DeepSpeed's activation_checkpointing. */
    d = deepspeed_plan("--model gpt3-175b --cluster titan --gpus 1024 "
                       "--global-batch 1536 --fix pp=8,recompute=full",
                       &r, &p);
    assert_int_equal(p.recompute, PP_RECOMPUTE_FULL);
    assert_non_null(json_object_get(d, "activation_checkpointing"));
    assert_int_equal((int64_t)num(json_object_get(d, "pipeline"),
                                  "activation_checkpoint_interval"),
                     1);
    json_decref(d);
    cli_result_free(&r);

    /* No pipelining: AutoTP carries the TP degree, ZeRO 2 and 3 allowed. */
    d = deepspeed_plan("--model megatron-1.7b --cluster selene-like --gpus 16 "
                       "--global-batch 256 --fix pp=1,tp=2,zero=3",
                       &r, &p);
    assert_null(json_object_get(d, "pipeline"));
    assert_int_equal(
        (int64_t)num(json_object_get(d, "tensor_parallel"), "autotp_size"), 2);
    assert_int_equal(
        (int64_t)num(json_object_get(d, "zero_optimization"), "stage"), 3);
    json_decref(d);
    cli_result_free(&r);

    /* A V100 cluster: fp16 with loss scaling, and stderr says why. */
    d = deepspeed_plan("--model megatron-1.7b --cluster ethernet-10g "
                       "--gpus 16 --global-batch 256",
                       &r, &p);
    assert_true(
        json_is_true(json_object_get(json_object_get(d, "fp16"), "enabled")));
    assert_null(json_object_get(d, "bf16"));
    assert_non_null(strstr(r.err, "has no bf16"));
    json_decref(d);
    cli_result_free(&r);

    /* Pins the engine cannot run are usage errors, nothing on stdout. */
    static const char *const bad[] = {"--fix vp=2", "--fix sp=on",
                                      "--fix recompute=selective",
                                      "--placement tp,pp,dp"};
    for (size_t i = 0; i < 4; i++) {
        cli_runf(&r,
                 "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0 --format deepspeed %s",
                 bad[i]);
        if (r.status != 2) fail_msg("%s: exit %d", bad[i], r.status);
        assert_string_equal(r.out, "");
        cli_result_free(&r);
    }
}

/* ---- LLaMA-style models and GPUs without bf16 ------------------------------ */

static void test_llama_flags(void **state) {
    (void)state;
    cli_result r;
    char v[64];
    /* LLaMA-2 70B: SwiGLU, GQA, RoPE, RMSNorm, no biases, untied. */
    const char *base = "plan --model llama2-70b --cluster titan --gpus 64 "
                       "--global-batch 64 --top 0";
    cli_runf(&r, "%s --format megatron", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(megatron_value(r.out, "--disable-bias-linear", NULL, 0));
    assert_non_null(megatron_value(r.out, "--swiglu", NULL, 0));
    assert_string_equal(megatron_value(r.out, "--normalization", v, sizeof v),
                        "RMSNorm");
    assert_string_equal(
        megatron_value(r.out, "--position-embedding-type", v, sizeof v),
        "rope");
    assert_non_null(megatron_value(r.out, "--group-query-attention", NULL, 0));
    assert_string_equal(
        megatron_value(r.out, "--num-query-groups", v, sizeof v), "8");
    assert_non_null(megatron_value(
        r.out, "--untie-embeddings-and-output-weights", NULL, 0));
    assert_non_null(megatron_value(r.out, "--bf16", NULL, 0)); /* A100 */
    assert_null(megatron_value(r.out, "--fp16", NULL, 0));
    cli_result_free(&r);
    cli_runf(&r, "%s --format nemo", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "\n  bias: false\n"));
    assert_non_null(strstr(r.out, "\n  num_query_groups: 8\n"));
    assert_non_null(strstr(r.out, "\n  activation: fast-swiglu\n"));
    cli_result_free(&r);

    /* GPT-3 keeps its biases and MHA. */
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0 --format megatron");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_null(megatron_value(r.out, "--disable-bias-linear", NULL, 0));
    assert_null(megatron_value(r.out, "--group-query-attention", NULL, 0));
    assert_null(megatron_value(r.out, "--normalization", NULL, 0));
    cli_result_free(&r);

    /* The model's bias key: SwiGLU defaults to none, and says otherwise. */
    pp_model a, b;
    load_model("layers=4,hidden=256,heads=8,seq=128,vocab=1000,ffn=swiglu", &a);
    load_model("layers=4,hidden=256,heads=8,seq=128,vocab=1000,ffn=swiglu,"
               "bias=true",
               &b);
    assert_false(a.bias);
    assert_true(b.bias);
    /* QKV 3h + output h + gate and up 2f + down h, per layer. */
    double per_layer = 3 * 256 + 256 + 2 * 1024 + 256;
    assert_true(
        fabs(pp_model_params(&b) - pp_model_params(&a) - 4 * per_layer) < 0.5);
    cli_runf(&r, "plan --model layers=4,hidden=256,heads=8,seq=128,"
                 "vocab=1000,ffn=swiglu,bias=true --cluster selene-like "
                 "--gpus 8 --global-batch 8 --top 0 --format megatron");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_null(megatron_value(r.out, "--disable-bias-linear", NULL, 0));
    cli_result_free(&r);

    /* V100s have no bf16: fp16 in every launch format. */
    base = "plan --model megatron-1.7b --cluster ethernet-10g --gpus 16 "
           "--global-batch 256 --top 0";
    cli_runf(&r, "%s --format megatron", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(megatron_value(r.out, "--fp16", NULL, 0));
    assert_null(megatron_value(r.out, "--bf16", NULL, 0));
    cli_result_free(&r);
    cli_runf(&r, "%s --format nemo", base);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "precision: 16-mixed\n"));
    cli_result_free(&r);
    cli_runf(&r, "%s --format nemo2", base);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "precision=\"16-mixed\""));
    assert_non_null(strstr(r.out, "fp16=True"));
    assert_null(strstr(r.out, "bf16"));
    cli_result_free(&r);
}

/* Nemotron's squared-ReLU MLP: Megatron-LM's --squared-relu with rotary
 * positions and LayerNorm (no --normalization, no --swiglu), no biases,
 * untied; NeMo's activation key; NeMo 2.0's activation function, which
 * the script imports. */
static void test_squared_relu_flags(void **state) {
    (void)state;
    cli_result r;
    char v[64];
    const char *base = "plan --model nemotron4-15b --cluster dgx-h100-ndr "
                       "--gpus 32 --global-batch 64 --top 0";
    cli_runf(&r, "%s --format megatron", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(megatron_value(r.out, "--squared-relu", NULL, 0));
    assert_null(megatron_value(r.out, "--swiglu", NULL, 0));
    assert_null(megatron_value(r.out, "--normalization", NULL, 0));
    assert_string_equal(
        megatron_value(r.out, "--position-embedding-type", v, sizeof v),
        "rope");
    assert_non_null(megatron_value(r.out, "--disable-bias-linear", NULL, 0));
    assert_non_null(megatron_value(
        r.out, "--untie-embeddings-and-output-weights", NULL, 0));
    cli_result_free(&r);
    cli_runf(&r, "%s --format nemo", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(
        r.out, "\n  activation: squared-relu\n  position_embedding_type: "
               "rope\n  bias: false\n"));
    cli_result_free(&r);
    cli_runf(&r, "%s --format nemo2", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "\nfrom nemo.collections.llm.fn.activation "
                                  "import squared_relu\n"));
    assert_non_null(strstr(r.out, "\n    activation_func=squared_relu,\n"
                                  "    position_embedding_type=\"rope\",\n"));
    assert_null(strstr(r.out, "gated_linear_unit"));
    cli_result_free(&r);
}

/* ---- NeMo 2.0 --------------------------------------------------------------- */

/* The integer after `key` in s, or -1. */
static long long after(const char *s, const char *key) {
    const char *p = strstr(s, key);
    return p ? atoll(p + strlen(key)) : -1;
}

static void test_nemo2(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 1 --tokens 300e9 --format nemo2");
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    /* The layout in the header, its values in the script. */
    const char *l = strstr(r.out, "# layout: ");
    assert_non_null(l);
    char spec[256];
    l += 10;
    size_t n = strcspn(l, " \n");
    snprintf(spec, sizeof spec, "%.*s", (int)n, l);
    if (spec[strlen(spec) - 1] == ',') spec[strlen(spec) - 1] = '\0';
    pp_parallel p;
    pp_parallel_init(&p);
    pp_error e = PP_ERROR_INIT;
    if (pp_parallel_parse(spec, &p, &e)) fail_msg("%s: %s", spec, e.msg);
    assert_non_null(strstr(r.out, "ranks tp,dp,pp"));
    assert_int_equal(after(r.out, "tensor_model_parallel_size="), p.tp);
    assert_int_equal(after(r.out, "pipeline_model_parallel_size="), p.pp);
    if (p.vp > 1)
        assert_int_equal(after(r.out, "virtual_pipeline_model_parallel_size="),
                         p.vp);
    else
        assert_non_null(
            strstr(r.out, "virtual_pipeline_model_parallel_size=None"));
    assert_non_null(strstr(r.out, p.sp ? "sequence_parallel=True"
                                       : "sequence_parallel=False"));
    assert_non_null(strstr(r.out, "context_parallel_size=1,"));
    assert_int_equal(after(r.out, "micro_batch_size="), p.mbs);
    assert_int_equal(after(r.out, "global_batch_size="), 1536);
    assert_int_equal(after(r.out, "num_layers="), 96);
    assert_int_equal(after(r.out, "max_steps="),
                     (long long)ceil(300e9 / (1536.0 * 2048)));
    static const char *const rc[] = {"recompute_granularity=None",
                                     "recompute_granularity=\"selective\"",
                                     "recompute_granularity=\"full\""};
    assert_non_null(strstr(r.out, rc[p.recompute]));
    assert_non_null(strstr(r.out, "add_bias_linear=True"));
    assert_non_null(strstr(r.out, "nl.MegatronStrategy("));
    assert_non_null(strstr(r.out, "llm.pretrain("));
    /* Python can parse it, where there is a Python. */
    if (system("command -v python3 >/dev/null 2>&1") == 0) {
        char path[] = "/tmp/podplan-nemo2-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, r.out, strlen(r.out)),
                         (ssize_t)strlen(r.out));
        close(fd);
        char cmd[256];
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import ast,sys; "
                 "ast.parse(open(sys.argv[1]).read())' %s",
                 path);
        int st = system(cmd);
        unlink(path);
        assert_int_equal(st, 0);
    }
    cli_result_free(&r);
    /* NeMo 1.x is unchanged beside it. */
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0 --format nemo");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\nmodel:\n"));
    assert_non_null(strstr(r.out, "  tensor_model_parallel_size: "));
    cli_result_free(&r);
    /* NeMo 2.0 has Megatron-core's order only. */
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0 --format nemo2 --placement "
                 "tp,pp,dp");
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt3_titan),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_uneven),
        cmocka_unit_test(test_uneven_layout),
        cmocka_unit_test(test_uneven_moe_tp),
        cmocka_unit_test(test_uneven_mtp),
        cmocka_unit_test(test_deepspeed),
        cmocka_unit_test(test_llama_flags),
        cmocka_unit_test(test_nemo2),
        cmocka_unit_test(test_squared_relu_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
