/*
 * planner/launch.c: the best layout as something one can launch.
 *
 *   megatron   a torchrun command line for Megatron-LM's pretrain_gpt.py,
 *              flag names as in megatron/training/arguments.py
 *   nemo,      NeMo 1.x's YAML keys and a NeMo 2.0 script (launch_nemo.c)
 *   nemo2
 *   deepspeed  a ds_config JSON (batch, ZeRO stage, bf16/fp16, activation
 *              checkpointing, pipeline stages; AutoTP size without
 *              pipelining)
 *
 * Each starts with what podplan assumed, as comments where the format has
 * them; DeepSpeed's JSON has none (and some DeepSpeed versions reject
 * unknown keys), so its assumptions are pp_plan_write_assumptions' lines,
 * which the CLI prints on stderr.  Data, tokenizer and learning-rate
 * settings are the user's.
 */
#include "planner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* CUDA graphs as Megatron-core names them: Transformer Engine's per-layer
 * graphs or the whole iteration's (--cuda-graph-impl), and the scopes
 * (--cuda-graph-scope: graphs= names them so, full is full_iteration),
 * each quoted with q and separated by sep, into buf. */
const char *pp__graph_impl(const pp_parallel *q) {
    return q->graphs & PP_GRAPH_FULL ? "local" : "transformer_engine";
}

/* The FP8 recipe as Megatron-core's --fp8-recipe names it (the SPEC's
 * names are its), and whether it is delayed scaling, the one recipe of
 * releases before the flag. */
const char *pp__fp8_recipe(const pp_parallel *q) {
    return pp_registry_name(&pp_reg_fp8, (int)q->fp8_recipe);
}

/* How CP exchanges K/V as Megatron-core's --cp-comm-type and
 * TransformerConfig.cp_comm_type name it (Transformer Engine's values,
 * the SPEC's names); NULL for the ring, the default, and without CP. */
const char *pp__cp_comm_type(const pp_parallel *q) {
    return q->cp > 1 && q->cp_comm != PP_CPCOMM_P2P
               ? pp_registry_name(&pp_reg_cp_comm, (int)q->cp_comm)
               : NULL;
}

/* Whether a2a+p2p's two levels are written: Megatron-core's
 * --hierarchical-context-parallel-sizes (TransformerConfig's
 * hierarchical_context_parallel_sizes), the all-to-all level first
 * ("every two adjacent gpus forms the first level of cp groups" for
 * 2 4), their product cp. */
bool pp__cp_levels(const pp_parallel *q) {
    return q->cp > 1 && q->cp_comm == PP_CPCOMM_A2A_P2P;
}

bool pp__fp8_delayed(const pp_parallel *q) {
    return q->fp8_recipe == PP_FP8_DELAYED || q->fp8_recipe == PP_FP8_AUTO;
}

char *pp__graph_scope_list(const pp_parallel *q, const char *sep,
                           const char *qu, char *buf, size_t len) {
    if (q->graphs & PP_GRAPH_FULL) {
        snprintf(buf, len, "%sfull_iteration%s", qu, qu);
        return buf;
    }
    return pp_graphs_list(q->graphs, sep, qu, buf, len);
}

/* The comment block every launch format starts with (cmt its comment
 * mark): the plan, the layout, the stack, the figures, the profile, and
 * what format f cannot say about the model's positions. */
void pp__launch_header(const pp_plan *p, pp_plan_format f, FILE *fp,
                       const char *cmt) {
    const pp_plan_candidate *c = &p->cand[0];
    char spec[PP_SPEC_MAX], b1[48], b2[48];
    fprintf(fp, "%s podplan plan: %s on %s, %lld GPUs, global batch %lld\n",
            cmt, p->model.name, p->cluster_name, (long long)c->gpus,
            (long long)c->par.gbs);
    fprintf(fp, "%s layout: %s%s, ranks %s\n", cmt,
            pp_parallel_format(&c->par, spec, sizeof spec),
            c->dp_overlap ? " with DP overlap" : "",
            pp__placement_name(c->placement));
    fprintf(fp, "%s software stack: %s (topologies/stacks/)\n", cmt,
            p->profile.stack);
    fprintf(
        fp,
        "%s iteration %.4g s (%s), %.1f TFLOP/s per GPU, MFU %.1f%%, "
        "%s of %s per GPU\n",
        cmt, c->iteration_time_s,
        c->simulated ? (p->opt.fidelity == PP_FIDELITY_FLOW
                            ? "simulated at flow fidelity"
                            : "simulated at analytic fidelity")
                     : "closed-form estimate",
        c->tflops_per_gpu, 100 * c->mfu,
        pp_unit_format(c->memory.total, PP_Q_BYTES, 4, b1, sizeof b1),
        pp_unit_format(c->memory_limit_bytes, PP_Q_BYTES, 4, b2, sizeof b2));
    char note[256];
    fprintf(fp, "%s GPU profile %s\n", cmt,
            pp__plan_profile_note(p, note, sizeof note));
    pp__rope_note(&p->model, f, fp, cmt);
}

int64_t pp__train_iters(const pp_plan *p) {
    const pp_plan_options *o = &p->opt;
    if (!(o->tokens > 0) || p->model.seq <= 0) return 0;
    return (int64_t)ceil(o->tokens /
                         ((double)p->st.gbs * (double)p->model.seq));
}

/* Servers and processes per server for torchrun / NeMo's trainer. */
void pp__nodes_of(const pp_plan *p, int64_t gpus, int64_t *nodes,
                  int64_t *per) {
    int64_t gpn = p->gpus_per_node;
    if (gpus <= gpn) {
        *nodes = 1;
        *per = gpus;
        return;
    }
    *per = gpn;
    *nodes = (gpus + gpn - 1) / gpn;
}

/* GPUs without bf16 (P100, V100: the catalogue's fp16_only) train in
 * fp16 with loss scaling; the 16-bit rate the plan used is the same. */
bool pp__use_fp16(const pp_plan *p) {
    return p->gpu.fp16_only;
}

int64_t pp__ffn_of(const pp_model *m) {
    return m->ffn_hidden > 0 ? m->ffn_hidden : 4 * m->hidden;
}

/* ------------------------------------------------------------------------
 * Megatron-LM.
 * ---------------------------------------------------------------------- */
int pp__write_megatron(const pp_plan *p, FILE *fp, pp_error *e) {
    const pp_plan_candidate *c = &p->cand[0];
    const pp_parallel *q = &c->par;
    const pp_model *m = &p->model;
    if (m->arch != PP_ARCH_TRANSFORMER)
        return pp_error_set(e, PP_EUSAGE,
                            "--format megatron: model %s is generic (no "
                            "transformer shape for pretrain_gpt.py)",
                            m->name);
    if (q->zero > 1)
        return pp_error_set(e, PP_EINTERNAL,
                            "--format megatron: ZeRO-%d has no Megatron-LM "
                            "flag",
                            q->zero);
    int64_t nodes, per;
    pp__nodes_of(p, c->gpus, &nodes, &per);
    fputs("#!/bin/sh\n", fp);
    pp__launch_header(p, PP_PLAN_FMT_MEGATRON, fp, "#");
    fprintf(fp,
            "# Run on each of the %lld servers with NODE_RANK and "
            "MASTER_ADDR set; add data,\n# tokenizer and optimizer arguments "
            "after the script's own (\"$@\").\n",
            (long long)nodes);
    fprintf(fp,
            "torchrun --nnodes=%lld --nproc-per-node=%lld "
            "--node-rank=\"${NODE_RANK:-0}\" \\\n"
            "    --master-addr=\"${MASTER_ADDR:-localhost}\" "
            "--master-port=\"${MASTER_PORT:-6000}\" \\\n"
            "    pretrain_gpt.py \\\n",
            (long long)nodes, (long long)per);
#define ARG(...) pp__megatron_arg(fp, __VA_ARGS__)
    ARG("--tensor-model-parallel-size %lld", (long long)q->tp);
    ARG("--pipeline-model-parallel-size %lld", (long long)q->pp);
    if (q->layout.stages > 0) {
        /* Megatron-core's pipeline layout; it sets vp itself (arguments.py
         * derives virtual_pipeline_model_parallel_size from it). */
        char l[PP_SPEC_MAX];
        ARG("--pipeline-model-parallel-layout '%s'",
            pp_layout_format(&q->layout, l, sizeof l));
    } else if (q->first || q->last) {
        /* Megatron-core's uneven split; with it the chunks are given by
         * their count per rank, not their size (a stage size varies). */
        if (q->first)
            ARG("--decoder-first-pipeline-num-layers %lld",
                (long long)q->first);
        if (q->last)
            ARG("--decoder-last-pipeline-num-layers %lld", (long long)q->last);
        if (q->vp > 1)
            ARG("--num-virtual-stages-per-pipeline-rank %lld",
                (long long)q->vp);
    } else if (q->vp > 1) {
        ARG("--num-layers-per-virtual-pipeline-stage %lld",
            (long long)(m->layers / (q->pp * q->vp)));
    }
    /* Megatron-LM numbers ranks TP, then DP, then PP (its default order
     * tp-cp-ep-dp-pp); the flag makes it TP, PP, DP.  The two differ only
     * with both PP and DP, and then the simulated order is asked for. */
    if (q->pp > 1 && q->dp > 1 && c->placement[1] == 'p')
        ARG("--use-tp-pp-dp-mapping");
    ARG("--micro-batch-size %lld", (long long)q->mbs);
    ARG("--global-batch-size %lld", (long long)q->gbs);
    if (q->sp && q->tp > 1) ARG("--sequence-parallel");
    if (q->cp > 1) ARG("--context-parallel-size %lld", (long long)q->cp);
    if (pp__cp_comm_type(q)) ARG("--cp-comm-type %s", pp__cp_comm_type(q));
    if (pp__cp_levels(q))
        ARG("--hierarchical-context-parallel-sizes %lld %lld",
            (long long)pp_parallel_cp_a2a(q),
            (long long)pp_parallel_cp_ring(q));
    pp__megatron_moe(p, fp);
    if (q->recompute == PP_RECOMPUTE_FULL) {
        /* Every layer's input kept, the layer recomputed: Korthikanti et
         * al.'s "full" (uniform, one layer per unit). */
        ARG("--recompute-granularity full");
        ARG("--recompute-method uniform");
        ARG("--recompute-num-layers 1");
    } else if (q->recompute == PP_RECOMPUTE_SELECTIVE || q->recompute_mods) {
        /* Megatron-core's default module list is core_attn alone. */
        ARG("--recompute-granularity selective");
        if (q->recompute_mods) {
            char rl[96];
            ARG("--recompute-modules %s",
                pp_recompute_list(q->recompute, q->recompute_mods, " ", "", rl,
                                  sizeof rl));
        }
    }
    if (q->graphs) {
        char gs[128];
        ARG("--cuda-graph-impl %s", pp__graph_impl(q));
        ARG("--cuda-graph-scope %s",
            pp__graph_scope_list(q, " ", "", gs, sizeof gs));
    }
    if (q->offload > 0) {
        ARG("--cpu-offloading");
        ARG("--cpu-offloading-num-layers %lld", (long long)q->offload);
    }
    /* Megatron-core's precision-aware optimizer (models/memory.c,
     * adam-bf16-moments) lives in its distributed optimizer, which dp 1
     * (zero 0) runs too. */
    bool pao = p->opt.optimizer == PP_OPT_ADAM_BF16_MOMENTS;
    if (q->zero == 1 || (pao && q->zero == 0))
        ARG("--use-distributed-optimizer");
    if (pao)
        ARG("--use-precision-aware-optimizer --exp-avg-dtype bf16 "
            "--exp-avg-sq-dtype bf16");
    if (c->dp_overlap) ARG("--overlap-grad-reduce");
    ARG("--num-layers %lld", (long long)m->layers);
    if (m->mtp_layers) ARG("--mtp-num-layers %lld", (long long)m->mtp_layers);
    ARG("--hidden-size %lld", (long long)m->hidden);
    ARG("--ffn-hidden-size %lld", (long long)pp__ffn_of(m));
    ARG("--num-attention-heads %lld", (long long)m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads) {
        ARG("--group-query-attention");
        ARG("--num-query-groups %lld", (long long)m->kv_heads);
    }
    if (m->kv_channels) ARG("--kv-channels %lld", (long long)m->kv_channels);
    /* Megatron-LM's window is (left, right) tokens: a causal one looks
     * back only. */
    if (m->window > 0) ARG("--window-size %lld,0", (long long)m->window);
    if (m->window_skip > 1)
        ARG("--window-attn-skip-freq %lld", (long long)m->window_skip);
    if (m->softmax != PP_SOFTMAX_VANILLA)
        ARG("--softmax-type %s", pp_softmax_name(m->softmax));
    if (pp_model_is_mla(m)) {
        /* --qk-layernorm gives MLA's latents their RMSNorms. */
        ARG("--multi-latent-attention");
        ARG("--qk-layernorm");
        if (m->q_lora_rank)
            ARG("--q-lora-rank %lld", (long long)m->q_lora_rank);
        ARG("--kv-lora-rank %lld", (long long)m->kv_lora_rank);
        ARG("--qk-head-dim %lld", (long long)m->qk_nope_head_dim);
        ARG("--qk-pos-emb-head-dim %lld", (long long)m->qk_rope_head_dim);
        ARG("--v-head-dim %lld", (long long)m->v_head_dim);
    }
    ARG("--seq-length %lld", (long long)m->seq);
    ARG("--max-position-embeddings %lld", (long long)m->seq);
    if (m->ffn == PP_FFN_SWIGLU) {
        /* The simulator's SwiGLU models are LLaMA-like: rotary positions
         * (no position table) and RMSNorm.  --quick-geglu is the other
         * gated activation Megatron-LM names (its arguments refuse it
         * beside --swiglu). */
        ARG("%s", m->glu_quick ? "--quick-geglu" : "--swiglu");
        ARG("--position-embedding-type rope");
        ARG("--normalization RMSNorm");
        if (m->glu_clamp > 0)
            ARG("--activation-func-clamp-value %g", m->glu_clamp);
        if (m->glu_offset != 0) ARG("--glu-linear-offset %g", m->glu_offset);
    } else if (m->ffn == PP_FFN_SQRELU) {
        /* Nemotron-like: squared ReLU (Megatron-LM's --squared-relu),
         * rotary positions, LayerNorm (Nemotron's zero-centred gain,
         * --apply-layernorm-1p, and its rotary percent cost nothing and
         * are not in podplan's model: add them for Nemotron itself). */
        ARG("--squared-relu");
        ARG("--position-embedding-type rope");
    }
    pp__megatron_rope_args(m, fp);
    /* LLaMA-style models have no biases (add_bias_linear=False). */
    if (!m->bias) ARG("--disable-bias-linear");
    if (!m->tied_embeddings) ARG("--untie-embeddings-and-output-weights");
    if (pp__use_fp16(p))
        ARG("--fp16"); /* dynamic loss scaling by default */
    else
        ARG("--bf16");
    /* Transformer Engine FP8 (Megatron-LM's --fp8-format; NVIDIA's
     * recipes use hybrid: e4m3 forward, e5m2 gradients).  Delayed
     * scaling over 1024 steps of amax history is what Megatron-core did
     * before --fp8-recipe (core 0.13) and still its default, so it gets
     * no recipe flag and runs on older releases too. */
    if (q->dtype == PP_PREC_FP8 && pp__fp8_delayed(q))
        ARG("--fp8-format hybrid --fp8-amax-history-len 1024 "
            "--fp8-amax-compute-algo max");
    else if (q->dtype == PP_PREC_FP8)
        ARG("--fp8-format hybrid --fp8-recipe %s", pp__fp8_recipe(q));
    /* Transformer Engine's FP8 attention (megatron/training/arguments.py,
     * TransformerConfig.fp8_dot_product_attention). */
    if (q->fp8_attn) ARG("--fp8-dot-product-attention");
    /* NVFP4: Megatron-LM's --fp4-format (e2m1, its one choice) and
     * --fp4-recipe (nvfp4, its one recipe; megatron/training/
     * arguments.py). */
    if (q->dtype == PP_PREC_FP4) ARG("--fp4-format e2m1 --fp4-recipe nvfp4");
    int64_t it = pp__train_iters(p);
    if (it > 0) ARG("--train-iters %lld", (long long)it);
#undef ARG
    fputs("    \"$@\"\n", fp);
    return 0;
}

/* ------------------------------------------------------------------------
 * DeepSpeed.
 *
 * Only keys DeepSpeed's config reads (deepspeed/runtime/constants.py,
 * config.py get_pipeline_config, zero/config.py, activation_checkpointing/
 * config.py, tensor_parallel/config.py): some versions reject unknown
 * keys, so what podplan assumed goes to pp_plan_write_assumptions.
 * ---------------------------------------------------------------------- */
int pp__write_deepspeed(const pp_plan *p, FILE *fp, pp_error *e) {
    const pp_plan_candidate *c = &p->cand[0];
    const pp_parallel *q = &c->par;
    if (q->dtype == PP_PREC_FP4)
        return pp_error_set(e, PP_EUSAGE,
                            "--format deepspeed: dtype=fp4: DeepSpeed does "
                            "not train in NVFP4");
    json_t *o = json_object(), *z = json_object();
    int64_t nmb = q->gbs / (q->mbs * q->dp);
    /* DeepSpeed checks train_batch_size = micro x accumulation x DP. */
    json_object_set_new(o, "train_batch_size", json_integer(q->gbs));
    json_object_set_new(o, "train_micro_batch_size_per_gpu",
                        json_integer(q->mbs));
    json_object_set_new(o, "gradient_accumulation_steps", json_integer(nmb));
    json_t *prec = json_object();
    json_object_set_new(prec, "enabled", json_true());
    if (pp__use_fp16(p)) {
        /* loss_scale 0: dynamic loss scaling. */
        json_object_set_new(prec, "loss_scale", json_integer(0));
        json_object_set_new(o, "fp16", prec);
    } else {
        json_object_set_new(o, "bf16", prec);
    }
    json_object_set_new(z, "stage", json_integer(q->zero));
    json_object_set_new(z, "overlap_comm", json_boolean(c->dp_overlap));
    json_object_set_new(z, "contiguous_gradients", json_true());
    json_object_set_new(z, "reduce_bucket_size", json_integer(40000000));
    json_object_set_new(o, "zero_optimization", z);
    if (q->recompute == PP_RECOMPUTE_FULL) {
        /* deepspeed.checkpointing's settings: the checkpoints themselves
         * are where the model code calls checkpoint() (every layer here);
         * no partitioning or offload, which the plan did not assume. */
        json_t *ac = json_object();
        json_object_set_new(ac, "partition_activations", json_false());
        json_object_set_new(ac, "cpu_checkpointing", json_false());
        json_object_set_new(ac, "contiguous_memory_optimization", json_false());
        json_object_set_new(ac, "synchronize_checkpoint_boundary",
                            json_false());
        json_object_set_new(ac, "profile", json_false());
        json_object_set_new(o, "activation_checkpointing", ac);
    }
    if (q->pp > 1) {
        json_t *pl = json_object();
        json_object_set_new(pl, "stages", json_integer(q->pp));
        json_object_set_new(pl, "activation_checkpoint_interval",
                            json_integer(q->recompute == PP_RECOMPUTE_FULL));
        json_object_set_new(o, "pipeline", pl);
    }
    if (q->tp > 1 && q->pp == 1) {
        /* AutoTP (DeepSpeed >= 0.16.4) shards a plain model; with the
         * pipeline engine TP is the model code's (assumptions say so). */
        json_t *tp = json_object();
        json_object_set_new(tp, "autotp_size", json_integer(q->tp));
        json_object_set_new(o, "tensor_parallel", tp);
    }
    json_object_set_new(o, "gradient_clipping", json_real(1.0));
    json_object_set_new(o, "steps_per_print", json_integer(10));
    json_object_set_new(o, "wall_clock_breakdown", json_false());
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                JSON_REAL_PRECISION(12));
    json_decref(o);
    if (!s) return pp_error_set(e, PP_EINTERNAL, "cannot encode JSON");
    fputs(s, fp);
    fputc('\n', fp);
    free(s);
    return 0;
}

int pp_plan_write_assumptions(const pp_plan *p, pp_plan_format f,
                              const char *prefix, FILE *fp) {
    if (f != PP_PLAN_FMT_DEEPSPEED || p->n == 0) return 0;
    const pp_plan_candidate *c = &p->cand[0];
    const pp_parallel *q = &c->par;
    const pp_model *m = &p->model;
    char spec[PP_SPEC_MAX];
    int n = 0;
#define LINE(...)                                                              \
    do {                                                                       \
        fputs(prefix, fp);                                                     \
        fprintf(fp, __VA_ARGS__);                                              \
        fputc('\n', fp);                                                       \
        n++;                                                                   \
    } while (0)
    char note[256];
    LINE("%s on %s: %s%s, %.4g s per iteration (%s)", m->name, p->cluster_name,
         pp_parallel_format(q, spec, sizeof spec),
         c->dp_overlap ? " with DP overlap" : "", c->iteration_time_s,
         c->simulated ? "simulated" : "estimated");
    LINE("GPU profile %s", pp__plan_profile_note(p, note, sizeof note));
    LINE("software stack %s", p->profile.stack);
    LINE("ranks tp,dp,pp: DeepSpeed's PipeModelDataParallelTopology "
         "(model innermost, pipe outermost)");
    if (q->pp > 1 && m->arch == PP_ARCH_TRANSFORMER)
        LINE("the model is a PipelineModule(num_stages=%lld, "
             "partition_method=\"uniform\": %lld layers a stage, "
             "activation_checkpoint_interval=%d); schedule 1F1B "
             "(TrainSchedule), no interleaving",
             (long long)q->pp, (long long)(m->layers / q->pp),
             q->recompute == PP_RECOMPUTE_FULL);
    if (q->tp > 1)
        LINE(q->pp > 1 ? "tensor parallelism %lld is the model code's "
                         "(Megatron-DeepSpeed: --tensor-model-parallel-size "
                         "%lld, passed to deepspeed.initialize as mpu); "
                         "ds_config has no key for it with pipelining"
                       : "tensor parallelism %lld by AutoTP "
                         "(tensor_parallel.autotp_size %lld, DeepSpeed >= "
                         "0.16.4)",
             (long long)q->tp, (long long)q->tp);
    LINE("no sequence parallelism; activation checkpointing: %s",
         q->recompute == PP_RECOMPUTE_FULL
             ? "every layer (the model calls deepspeed.checkpointing."
               "checkpoint per layer)"
             : "none");
    if (pp__use_fp16(p))
        LINE("fp16 with dynamic loss scaling: %s has no bf16", p->gpu.name);
#undef LINE
    return n;
}
