/*
 * planner/launch_nemo.c: the NeMo launch formats (launch.c has the others
 * and the helpers they share).
 *
 *   nemo       the trainer and model parallelism keys of a NeMo (1.x,
 *              megatron_gpt_config.yaml) config
 *   nemo2      a NeMo 2.0 Python script (nemo.collections.llm with
 *              nemo.lightning's MegatronStrategy; NeMo-Run can wrap it)
 *
 * Both name Megatron-core's TransformerConfig fields, each in its own
 * syntax (pp__kv_style).
 */
#include "planner_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const pp__kv_style pp__nemo_yaml = {
    .ind = "  ", .eq = ": ", .end = "", .yes = "true", .no = "false", .qt = ""};
const pp__kv_style pp__nemo_py = {.ind = "    ",
                                  .eq = "=",
                                  .end = ",",
                                  .yes = "True",
                                  .no = "False",
                                  .qt = "\"",
                                  .py = true};

/* One TransformerConfig field in the style's syntax: a value printed as
 * it stands, or a string within the style's quotes. */
void pp__kv_field(FILE *fp, const pp__kv_style *st, const char *key,
                  const char *fmt, ...) {
    va_list ap;
    fprintf(fp, "%s%s%s", st->ind, key, st->eq);
    va_start(ap, fmt);
    vfprintf(fp, fmt, ap);
    va_end(ap);
    fprintf(fp, "%s\n", st->end);
}

void pp__kv_flag(FILE *fp, const pp__kv_style *st, const char *key, bool b) {
    pp__kv_field(fp, st, key, "%s", b ? st->yes : st->no);
}

void pp__kv_text(FILE *fp, const pp__kv_style *st, const char *key,
                 const char *v) {
    pp__kv_field(fp, st, key, "%s%s%s", st->qt, v, st->qt);
}

/* Multi-head latent attention's MLATransformerConfig fields, one per
 * line. */
static void mla_fields(FILE *fp, const pp_model *m, const pp__kv_style *st) {
    pp__kv_flag(fp, st, "multi_latent_attention", true);
    pp__kv_flag(fp, st, "qk_layernorm", true);
    const struct {
        const char *key;
        int64_t v;
    } f[] = {{"q_lora_rank", m->q_lora_rank},
             {"kv_lora_rank", m->kv_lora_rank},
             {"qk_head_dim", m->qk_nope_head_dim},
             {"qk_pos_emb_head_dim", m->qk_rope_head_dim},
             {"v_head_dim", m->v_head_dim}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v) pp__kv_field(fp, st, f[i].key, "%lld", (long long)f[i].v);
}

/* TransformerConfig's fields for the model's attention and GLU variants
 * (the window, GPT-OSS's sinks, its GLU's clamp and offset); the window
 * is a list in YAML, a tuple in Python. */
static void variant_fields(FILE *fp, const pp_model *m,
                           const pp__kv_style *st) {
    if (m->window > 0)
        pp__kv_field(fp, st, "window_size", "%s%lld, 0%s", st->py ? "(" : "[",
                     (long long)m->window, st->py ? ")" : "]");
    if (m->window_skip > 1)
        pp__kv_field(fp, st, "window_attn_skip_freq", "%lld",
                     (long long)m->window_skip);
    if (m->softmax != PP_SOFTMAX_VANILLA)
        pp__kv_text(fp, st, "softmax_type", pp_softmax_name(m->softmax));
    if (m->glu_clamp > 0)
        pp__kv_field(fp, st, "activation_func_clamp_value", "%g", m->glu_clamp);
    if (m->glu_offset != 0)
        pp__kv_field(fp, st, "glu_linear_offset", "%g", m->glu_offset);
}

/* An uneven pipeline split: Megatron-core's layout string (quoted in
 * both syntaxes) or its first and last stages' layer counts. */
static void split_fields(FILE *fp, const pp_parallel *q,
                         const pp__kv_style *st) {
    if (q->layout.stages > 0) {
        char l[PP_SPEC_MAX];
        pp__kv_field(fp, st, "pipeline_model_parallel_layout", "\"%s\"",
                     pp_layout_format(&q->layout, l, sizeof l));
    }
    if (q->first)
        pp__kv_field(fp, st, "num_layers_in_first_pipeline_stage", "%lld",
                     (long long)q->first);
    if (q->last)
        pp__kv_field(fp, st, "num_layers_in_last_pipeline_stage", "%lld",
                     (long long)q->last);
}

/* Context parallelism's exchange other than the ring (cp_comm_type) and
 * hierarchical CP's two levels, a list in either syntax. */
static void cp_fields(FILE *fp, const pp_parallel *q, const pp__kv_style *st) {
    if (pp__cp_comm_type(q))
        pp__kv_text(fp, st, "cp_comm_type", pp__cp_comm_type(q));
    if (pp__cp_levels(q))
        pp__kv_field(fp, st, "hierarchical_context_parallel_sizes",
                     "[%lld, %lld]", (long long)pp_parallel_cp_a2a(q),
                     (long long)pp_parallel_cp_ring(q));
}

/* CUDA graphs (Megatron-core's implementation and scope list) and
 * activation offloading, as TransformerConfig's fields. */
static void graph_fields(FILE *fp, const pp_parallel *q,
                         const pp__kv_style *st) {
    if (q->graphs) {
        char gs[128];
        pp__kv_text(fp, st, "cuda_graph_impl", pp__graph_impl(q));
        pp__kv_field(fp, st, "cuda_graph_scope", "[%s]",
                     pp__graph_scope_list(q, ", ", st->qt, gs, sizeof gs));
    }
    if (q->offload > 0) {
        pp__kv_flag(fp, st, "cpu_offloading", true);
        pp__kv_field(fp, st, "cpu_offloading_num_layers", "%lld",
                     (long long)q->offload);
    }
}

/* ------------------------------------------------------------------------
 * NeMo.
 * ---------------------------------------------------------------------- */
int pp__write_nemo(const pp_plan *p, FILE *fp, pp_error *e) {
    const pp_plan_candidate *c = &p->cand[0];
    const pp_parallel *q = &c->par;
    const pp_model *m = &p->model;
    if (m->arch != PP_ARCH_TRANSFORMER)
        return pp_error_set(e, PP_EUSAGE,
                            "--format nemo: model %s is generic (no "
                            "transformer shape)",
                            m->name);
    /* NeMo 1's mcore_distributed_optim builds Megatron-core's
     * OptimizerConfig from lr, weight decay, betas, clipping and the two
     * overlaps only (ModelPT.setup_megatron_optimization): no key of this
     * file asks for the precision-aware optimizer. */
    if (p->opt.optimizer == PP_OPT_ADAM_BF16_MOMENTS)
        return pp_error_set(e, PP_EUSAGE,
                            "--format nemo: --optimizer %s: NeMo 1's "
                            "optimizer options cannot ask for Megatron-"
                            "core's precision-aware optimizer; use --format "
                            "nemo2 or megatron",
                            pp_optimizer_name(p->opt.optimizer));
    /* megatron_gpt_config.yaml's activation names a fixed list, without
     * the quick-GeGLU; the function itself is no YAML value. */
    if (m->glu_quick)
        return pp_error_set(e, PP_EUSAGE,
                            "--format nemo: model %s: NeMo 1's activation "
                            "key has no quick-GeGLU (glu_act: quick_gelu); "
                            "use --format nemo2 or megatron",
                            m->name);
    int64_t nodes, per;
    pp__nodes_of(p, c->gpus, &nodes, &per);
    pp__launch_header(p, PP_PLAN_FMT_NEMO, fp, "#");
    fputs("# The trainer and model parallelism keys of a NeMo GPT config "
          "(megatron_gpt_config.yaml).\n",
          fp);
    fprintf(fp,
            "trainer:\n  devices: %lld\n  num_nodes: %lld\n"
            "  precision: %s\n",
            (long long)per, (long long)nodes,
            pp__use_fp16(p) ? "16-mixed" : "bf16-mixed");
    int64_t it = pp__train_iters(p);
    if (it > 0) fprintf(fp, "  max_steps: %lld\n", (long long)it);
    fprintf(fp, "model:\n");
    fprintf(fp, "  micro_batch_size: %lld\n", (long long)q->mbs);
    fprintf(fp, "  global_batch_size: %lld\n", (long long)q->gbs);
    fprintf(fp, "  tensor_model_parallel_size: %lld\n", (long long)q->tp);
    fprintf(fp, "  pipeline_model_parallel_size: %lld\n", (long long)q->pp);
    if (q->vp > 1)
        fprintf(fp, "  virtual_pipeline_model_parallel_size: %lld\n",
                (long long)q->vp);
    else
        fprintf(fp, "  virtual_pipeline_model_parallel_size: null\n");
    /* Megatron-core TransformerConfig's names for the uneven split. */
    split_fields(fp, q, &pp__nemo_yaml);
    /* NeMo passes this to Megatron-core's initialize_model_parallel
     * (TP, PP, DP rank order instead of TP, DP, PP). */
    if (q->pp > 1 && q->dp > 1)
        fprintf(fp, "  use_tp_pp_dp_mapping: %s\n",
                c->placement[1] == 'p' ? "true" : "false");
    fprintf(fp, "  sequence_parallel: %s\n",
            q->sp && q->tp > 1 ? "true" : "false");
    /* megatron_gpt_config.yaml's Transformer Engine FP8 keys; another
     * recipe than delayed by Megatron-core's TransformerConfig field,
     * which NeMo fills from the model section's keys of the same name. */
    if (q->dtype == PP_PREC_FP8 && pp__fp8_delayed(q))
        fprintf(fp, "  transformer_engine: true\n  fp8: true\n"
                    "  fp8_hybrid: true\n  fp8_amax_history_len: 1024\n"
                    "  fp8_amax_compute_algo: max\n");
    else if (q->dtype == PP_PREC_FP8)
        fprintf(fp,
                "  transformer_engine: true\n  fp8: true\n"
                "  fp8_hybrid: true\n  fp8_recipe: %s\n",
                pp__fp8_recipe(q));
    else if (q->dtype == PP_PREC_FP4)
        fprintf(fp, "  transformer_engine: true\n  fp4: e2m1\n"
                    "  fp4_recipe: nvfp4\n");
    /* TransformerConfig's field of the same name, by the rule above. */
    if (q->fp8_attn) fputs("  fp8_dot_product_attention: true\n", fp);
    if (q->cp > 1)
        fprintf(fp, "  context_parallel_size: %lld\n", (long long)q->cp);
    cp_fields(fp, q, &pp__nemo_yaml);
    pp__nemo_moe(p, fp, &pp__nemo_yaml);
    graph_fields(fp, q, &pp__nemo_yaml);
    fprintf(fp, "  encoder_seq_length: %lld\n", (long long)m->seq);
    fprintf(fp, "  max_position_embeddings: %lld\n", (long long)m->seq);
    fprintf(fp, "  num_layers: %lld\n", (long long)m->layers);
    if (m->mtp_layers)
        fprintf(fp, "  mtp_num_layers: %lld\n", (long long)m->mtp_layers);
    fprintf(fp, "  hidden_size: %lld\n", (long long)m->hidden);
    fprintf(fp, "  ffn_hidden_size: %lld\n", (long long)pp__ffn_of(m));
    fprintf(fp, "  num_attention_heads: %lld\n", (long long)m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads)
        fprintf(fp, "  num_query_groups: %lld\n", (long long)m->kv_heads);
    if (m->kv_channels)
        fprintf(fp, "  kv_channels: %lld\n", (long long)m->kv_channels);
    if (pp_model_is_mla(m)) mla_fields(fp, m, &pp__nemo_yaml);
    if (m->ffn == PP_FFN_SWIGLU)
        fprintf(fp, "  activation: fast-swiglu\n"
                    "  position_embedding_type: rope\n"
                    "  normalization: rmsnorm\n");
    /* TransformerConfig's fields, copied from the model section by the
     * rule the recompute_modules key below relies on. */
    variant_fields(fp, m, &pp__nemo_yaml);
    pp__nemo_rope_fields(m, fp, &pp__nemo_yaml);
    /* Nemotron's NeMo configs say activation: squared-relu (and
     * normalization: layernorm1p, a cost-free variant left to the user,
     * as above). */
    if (m->ffn == PP_FFN_SQRELU)
        fprintf(fp, "  activation: squared-relu\n"
                    "  position_embedding_type: rope\n");
    /* megatron_gpt_config.yaml's "bias: True  # Whether to use bias
     * terms in all weight matrices". */
    fprintf(fp, "  bias: %s\n", m->bias ? "true" : "false");
    fprintf(fp, "  share_embeddings_and_output_weights: %s\n",
            m->tied_embeddings ? "true" : "false");
    if (q->recompute == PP_RECOMPUTE_FULL) {
        fprintf(fp, "  activations_checkpoint_granularity: full\n"
                    "  activations_checkpoint_method: uniform\n"
                    "  activations_checkpoint_num_layers: 1\n");
    } else if (q->recompute == PP_RECOMPUTE_SELECTIVE || q->recompute_mods) {
        fprintf(fp, "  activations_checkpoint_granularity: selective\n"
                    "  activations_checkpoint_method: null\n");
        /* NeMo copies the model keys that name TransformerConfig fields
         * into it: Megatron-core's module list. */
        if (q->recompute_mods) {
            char rl[96];
            fprintf(fp, "  recompute_modules: [%s]\n",
                    pp_recompute_list(q->recompute, q->recompute_mods, ", ", "",
                                      rl, sizeof rl));
        }
    } else {
        fprintf(fp, "  activations_checkpoint_granularity: null\n"
                    "  activations_checkpoint_method: null\n");
    }
    fprintf(fp, "  optim:\n    name: %s\n",
            q->zero >= 1 ? "distributed_fused_adam" : "fused_adam");
    if (q->zero >= 1)
        fprintf(fp, "    overlap_grad_sync: %s\n",
                c->dp_overlap ? "true" : "false");
    return 0;
}

/* ------------------------------------------------------------------------
 * NeMo 2.0.
 *
 * Names from NeMo 2.0's sources and docs: nl.MegatronStrategy's arguments
 * (nemo/lightning/pytorch/strategies/megatron_strategy.py: tensor_model_
 * parallel_size, pipeline_model_parallel_size, virtual_pipeline_model_
 * parallel_size, context_parallel_size, sequence_parallel, pipeline_dtype,
 * ddp; "Migrate Parallelism Configurations from NeMo 1.0 to NeMo 2.0" in
 * the NeMo Framework user guide), llm.GPTConfig's fields (nemo/collections/
 * llm/gpt/model/base.py: seq_length, share_embeddings_and_output_weights,
 * position_embedding_type; the rest are Megatron-core TransformerConfig's:
 * num_query_groups, gated_linear_unit, add_bias_linear, normalization,
 * recompute_granularity/method/num_layers, num_layers_in_first/last_
 * pipeline_stage), llm.MockDataModule(seq_length, micro_batch_size,
 * global_batch_size), nl.MegatronMixedPrecision(precision=...), Megatron-
 * core's DistributedDataParallelConfig and OptimizerConfig.
 * ---------------------------------------------------------------------- */
static const char *py_bool(bool b) {
    return b ? "True" : "False";
}

int pp__write_nemo2(const pp_plan *p, FILE *fp, pp_error *e) {
    const pp_plan_candidate *c = &p->cand[0];
    const pp_parallel *q = &c->par;
    const pp_model *m = &p->model;
    /* The precision-aware optimizer runs in the distributed one. */
    bool pao = p->opt.optimizer == PP_OPT_ADAM_BF16_MOMENTS;
    if (m->arch != PP_ARCH_TRANSFORMER)
        return pp_error_set(e, PP_EUSAGE,
                            "--format nemo2: model %s is generic (no "
                            "transformer shape)",
                            m->name);
    /* NeMo 2.0's nl.MegatronMixedPrecision takes fp8 settings only. */
    if (q->dtype == PP_PREC_FP4)
        return pp_error_set(e, PP_EUSAGE,
                            "--format nemo2: dtype=fp4: NeMo 2.0's "
                            "MegatronMixedPrecision has no NVFP4 setting; "
                            "use --format nemo or megatron");
    int64_t nodes, per;
    pp__nodes_of(p, c->gpus, &nodes, &per);
    bool fp16 = pp__use_fp16(p);
    pp__launch_header(p, PP_PLAN_FMT_NEMO2, fp, "#");
    fputs("# A NeMo 2.0 pretraining script (nemo.collections.llm); run it "
          "with torchrun or wrap\n# it in a NeMo-Run recipe.  Replace "
          "MockDataModule by your data module and set the\n# learning rate "
          "and schedule.  Ranks: Megatron-core's default order (tp,dp,pp).\n",
          fp);
    fputs("import torch\n"
          "from megatron.core.distributed import "
          "DistributedDataParallelConfig\n"
          "from megatron.core.optimizer import OptimizerConfig\n"
          "from nemo import lightning as nl\n"
          "from nemo.collections import llm\n",
          fp);
    if (m->ffn == PP_FFN_SQRELU)
        fputs("from nemo.collections.llm.fn.activation import squared_relu\n",
              fp);
    if (m->glu_quick)
        fputs("from megatron.core.fusions.fused_bias_geglu import quick_gelu\n",
              fp);
    fputc('\n', fp);

    /* MLA's fields are MLATransformerConfig's, which NeMo 2.0's
     * DeepSeekConfig (a GPTConfig) carries. */
    fputs(pp_model_is_mla(m) ? "config = llm.DeepSeekConfig(\n"
                             : "config = llm.GPTConfig(\n",
          fp);
    fprintf(fp, "    num_layers=%lld,\n", (long long)m->layers);
    if (m->mtp_layers)
        fprintf(fp, "    mtp_num_layers=%lld,\n", (long long)m->mtp_layers);
    fprintf(fp, "    hidden_size=%lld,\n", (long long)m->hidden);
    fprintf(fp, "    ffn_hidden_size=%lld,\n", (long long)pp__ffn_of(m));
    fprintf(fp, "    num_attention_heads=%lld,\n", (long long)m->heads);
    fprintf(fp, "    num_query_groups=%lld,\n", (long long)m->kv_heads);
    if (m->kv_channels)
        fprintf(fp, "    kv_channels=%lld,\n", (long long)m->kv_channels);
    if (pp_model_is_mla(m)) mla_fields(fp, m, &pp__nemo_py);
    fprintf(fp, "    seq_length=%lld,\n", (long long)m->seq);
    if (m->ffn == PP_FFN_SWIGLU)
        fprintf(fp,
                "    gated_linear_unit=True,\n"
                "    activation_func=%s,\n"
                "    normalization=\"RMSNorm\",\n"
                "    position_embedding_type=\"rope\",\n",
                m->glu_quick ? "quick_gelu" : "torch.nn.functional.silu");
    variant_fields(fp, m, &pp__nemo_py);
    pp__nemo_rope_fields(m, fp, &pp__nemo_py);
    /* NeMo 2.0's NemotronConfig takes its activation from
     * nemo.collections.llm.fn.activation (imported above). */
    if (m->ffn == PP_FFN_SQRELU)
        fputs("    activation_func=squared_relu,\n"
              "    position_embedding_type=\"rope\",\n",
              fp);
    fprintf(fp, "    add_bias_linear=%s,\n", py_bool(m->bias));
    fprintf(fp, "    share_embeddings_and_output_weights=%s,\n",
            py_bool(m->tied_embeddings));
    split_fields(fp, q, &pp__nemo_py);
    if (q->recompute == PP_RECOMPUTE_FULL) {
        fputs("    recompute_granularity=\"full\",\n"
              "    recompute_method=\"uniform\",\n"
              "    recompute_num_layers=1,\n",
              fp);
    } else if (q->recompute == PP_RECOMPUTE_SELECTIVE || q->recompute_mods) {
        fputs("    recompute_granularity=\"selective\",\n", fp);
        if (q->recompute_mods) {
            char rl[96];
            fprintf(fp, "    recompute_modules=[%s],\n",
                    pp_recompute_list(q->recompute, q->recompute_mods, ", ",
                                      "\"", rl, sizeof rl));
        }
    } else {
        fputs("    recompute_granularity=None,\n", fp);
    }
    graph_fields(fp, q, &pp__nemo_py);
    pp__nemo_moe(p, fp, &pp__nemo_py);
    cp_fields(fp, q, &pp__nemo_py);
    fputs(")\n\n", fp);

    fputs("strategy = nl.MegatronStrategy(\n", fp);
    fprintf(fp, "    tensor_model_parallel_size=%lld,\n", (long long)q->tp);
    fprintf(fp, "    pipeline_model_parallel_size=%lld,\n", (long long)q->pp);
    if (q->vp > 1)
        fprintf(fp, "    virtual_pipeline_model_parallel_size=%lld,\n",
                (long long)q->vp);
    else
        fputs("    virtual_pipeline_model_parallel_size=None,\n", fp);
    fprintf(fp, "    context_parallel_size=%lld,\n",
            (long long)(q->cp > 1 ? q->cp : 1));
    if (pp_model_is_moe(m))
        fprintf(fp,
                "    expert_model_parallel_size=%lld,\n"
                "    expert_tensor_parallel_size=%lld,\n",
                (long long)q->ep, (long long)pp_parallel_etp(q));
    fprintf(fp, "    sequence_parallel=%s,\n", py_bool(q->sp && q->tp > 1));
    if (q->pp > 1)
        fprintf(fp, "    pipeline_dtype=torch.%s,\n",
                fp16 ? "float16" : "bfloat16");
    fprintf(fp,
            "    ddp=DistributedDataParallelConfig(\n"
            "        check_for_nan_in_grad=True,\n"
            "        use_distributed_optimizer=%s,\n"
            "        overlap_grad_reduce=%s,\n"
            "    ),\n)\n\n",
            py_bool(q->zero >= 1 || pao), py_bool(c->dp_overlap));

    /* MegatronMixedPrecision's FP8 arguments (fp8_recipe besides
     * delayed scaling, as NeMo's performance recipes set it). */
    char mp[192] = "";
    if (q->dtype == PP_PREC_FP8 && pp__fp8_delayed(q))
        snprintf(mp, sizeof mp,
                 ", fp8=\"hybrid\", fp8_amax_history_len=1024, "
                 "fp8_amax_compute_algo=\"max\"");
    else if (q->dtype == PP_PREC_FP8)
        snprintf(mp, sizeof mp, ", fp8=\"hybrid\", fp8_recipe=\"%s\"",
                 pp__fp8_recipe(q));
    /* MegatronMixedPrecision's fp8_dot_product_attention argument. */
    if (q->fp8_attn)
        snprintf(mp + strlen(mp), sizeof mp - strlen(mp),
                 ", fp8_dot_product_attention=True");
    fputs("trainer = nl.Trainer(\n", fp);
    fprintf(fp, "    devices=%lld,\n    num_nodes=%lld,\n", (long long)per,
            (long long)nodes);
    int64_t it = pp__train_iters(p);
    if (it > 0) fprintf(fp, "    max_steps=%lld,\n", (long long)it);
    fprintf(fp,
            "    accelerator=\"gpu\",\n"
            "    strategy=strategy,\n"
            "    plugins=nl.MegatronMixedPrecision(precision=\"%s\"%s),\n"
            ")\n\n",
            fp16 ? "16-mixed" : "bf16-mixed", mp);

    fprintf(fp,
            "data = llm.MockDataModule(\n"
            "    seq_length=%lld,\n"
            "    micro_batch_size=%lld,\n"
            "    global_batch_size=%lld,\n"
            ")\n\n",
            (long long)m->seq, (long long)q->mbs, (long long)q->gbs);

    fprintf(fp,
            "optim = nl.MegatronOptimizerModule(\n"
            "    config=OptimizerConfig(\n"
            "        optimizer=\"adam\",\n"
            "        lr=3e-4,  # yours\n"
            "        %s=True,\n"
            "        use_distributed_optimizer=%s,\n"
            "%s"
            "    ),\n)\n\n",
            fp16 ? "fp16" : "bf16", py_bool(q->zero >= 1 || pao),
            pao ? "        use_precision_aware_optimizer=True,\n"
                  "        exp_avg_dtype=torch.bfloat16,\n"
                  "        exp_avg_sq_dtype=torch.bfloat16,\n"
                : "");
    fputs("if __name__ == \"__main__\":\n"
          "    llm.pretrain(llm.GPTModel(config), data, trainer, "
          "optim=optim)\n",
          fp);
    return 0;
}
