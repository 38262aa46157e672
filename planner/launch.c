/*
 * planner/launch.c: the best layout as something one can launch.
 *
 *   megatron   a torchrun command line for Megatron-LM's pretrain_gpt.py,
 *              flag names as in megatron/training/arguments.py
 *   nemo       the trainer and model parallelism keys of a NeMo (1.x,
 *              megatron_gpt_config.yaml) config
 *   deepspeed  a ds_config JSON (batch, ZeRO stage, bf16, activation
 *              checkpointing; pipeline stages and AutoTP size where > 1)
 *
 * Each starts with what podplan assumed, as comments where the format has
 * them.  Data, tokenizer and learning-rate settings are the user's.
 */
#include "planner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void header(const pp_plan *p, FILE *fp, const char *cmt) {
    const pp_plan_candidate *c = &p->cand[0];
    char spec[256], b1[48], b2[48];
    fprintf(fp, "%s podplan plan: %s on %s, %lld GPUs, global batch %lld\n",
            cmt, p->model.name, p->cluster_name, (long long)c->gpus,
            (long long)c->par.gbs);
    fprintf(fp, "%s layout: %s%s, ranks %s\n", cmt,
            pp_parallel_format(&c->par, spec, sizeof spec),
            c->dp_overlap ? " with DP overlap" : "",
            pp__placement_name(p->opt.placement));
    fprintf(fp, "%s iteration %.4g s (%s), %.1f TFLOP/s per GPU, MFU %.1f%%, "
            "%s of %s per GPU\n",
            cmt, c->iteration_time_s,
            c->simulated ? (p->opt.fidelity == PP_FIDELITY_FLOW
                                ? "simulated at flow fidelity"
                                : "simulated at analytic fidelity")
                         : "closed-form estimate",
            c->tflops_per_gpu, 100 * c->mfu,
            pp_unit_format(c->memory.total, PP_Q_BYTES, 4, b1, sizeof b1),
            pp_unit_format(c->memory_limit_bytes, PP_Q_BYTES, 4, b2,
                           sizeof b2));
}

static int64_t train_iters(const pp_plan *p) {
    const pp_plan_options *o = &p->opt;
    if (!(o->tokens > 0) || p->model.seq <= 0) return 0;
    return (int64_t)ceil(o->tokens
                         / ((double)p->st.gbs * (double)p->model.seq));
}

/* Servers and processes per server for torchrun / NeMo's trainer. */
static void nodes_of(const pp_plan *p, int64_t gpus, int64_t *nodes,
                     int64_t *per) {
    int64_t gpn = p->gpus_per_node;
    if (gpus <= gpn) { *nodes = 1; *per = gpus; return; }
    *per = gpn;
    *nodes = (gpus + gpn - 1) / gpn;
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
                            "flag", q->zero);
    int64_t nodes, per;
    nodes_of(p, c->gpus, &nodes, &per);
    fputs("#!/bin/sh\n", fp);
    header(p, fp, "#");
    fprintf(fp, "# Run on each of the %lld servers with NODE_RANK and "
            "MASTER_ADDR set; add data,\n# tokenizer and optimizer arguments "
            "after the script's own (\"$@\").\n", (long long)nodes);
    fprintf(fp, "torchrun --nnodes=%lld --nproc-per-node=%lld "
            "--node-rank=\"${NODE_RANK:-0}\" \\\n"
            "    --master-addr=\"${MASTER_ADDR:-localhost}\" "
            "--master-port=\"${MASTER_PORT:-6000}\" \\\n"
            "    pretrain_gpt.py \\\n",
            (long long)nodes, (long long)per);
#define ARG(...) do { fputs("    ", fp); fprintf(fp, __VA_ARGS__); \
                      fputs(" \\\n", fp); } while (0)
    ARG("--tensor-model-parallel-size %lld", (long long)q->tp);
    ARG("--pipeline-model-parallel-size %lld", (long long)q->pp);
    if (q->first || q->last) {
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
    if (q->pp > 1 && q->dp > 1 && p->opt.placement[1] == 'p')
        ARG("--use-tp-pp-dp-mapping");
    ARG("--micro-batch-size %lld", (long long)q->mbs);
    ARG("--global-batch-size %lld", (long long)q->gbs);
    if (q->sp && q->tp > 1) ARG("--sequence-parallel");
    if (q->recompute == PP_RECOMPUTE_FULL) {
        /* Every layer's input kept, the layer recomputed: Korthikanti et
         * al.'s "full" (uniform, one layer per unit). */
        ARG("--recompute-granularity full");
        ARG("--recompute-method uniform");
        ARG("--recompute-num-layers 1");
    } else if (q->recompute == PP_RECOMPUTE_SELECTIVE) {
        ARG("--recompute-granularity selective");
    }
    if (q->zero == 1) ARG("--use-distributed-optimizer");
    if (c->dp_overlap) ARG("--overlap-grad-reduce");
    ARG("--num-layers %lld", (long long)m->layers);
    ARG("--hidden-size %lld", (long long)m->hidden);
    ARG("--ffn-hidden-size %lld",
        (long long)(m->ffn_hidden > 0 ? m->ffn_hidden : 4 * m->hidden));
    ARG("--num-attention-heads %lld", (long long)m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads) {
        ARG("--group-query-attention");
        ARG("--num-query-groups %lld", (long long)m->kv_heads);
    }
    ARG("--seq-length %lld", (long long)m->seq);
    ARG("--max-position-embeddings %lld", (long long)m->seq);
    if (m->ffn == PP_FFN_SWIGLU) {
        /* The simulator's SwiGLU models are LLaMA-like: rotary positions
         * (no position table) and RMSNorm. */
        ARG("--swiglu");
        ARG("--position-embedding-type rope");
        ARG("--normalization RMSNorm");
    }
    if (!m->tied_embeddings) ARG("--untie-embeddings-and-output-weights");
    ARG("--bf16");
    int64_t it = train_iters(p);
    if (it > 0) ARG("--train-iters %lld", (long long)it);
#undef ARG
    fputs("    \"$@\"\n", fp);
    return 0;
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
                            "transformer shape)", m->name);
    int64_t nodes, per;
    nodes_of(p, c->gpus, &nodes, &per);
    header(p, fp, "#");
    fputs("# The trainer and model parallelism keys of a NeMo GPT config "
          "(megatron_gpt_config.yaml).\n", fp);
    fprintf(fp, "trainer:\n  devices: %lld\n  num_nodes: %lld\n"
            "  precision: bf16-mixed\n", (long long)per, (long long)nodes);
    int64_t it = train_iters(p);
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
    if (q->first)
        fprintf(fp, "  num_layers_in_first_pipeline_stage: %lld\n",
                (long long)q->first);
    if (q->last)
        fprintf(fp, "  num_layers_in_last_pipeline_stage: %lld\n",
                (long long)q->last);
    /* NeMo passes this to Megatron-core's initialize_model_parallel
     * (TP, PP, DP rank order instead of TP, DP, PP). */
    if (q->pp > 1 && q->dp > 1)
        fprintf(fp, "  use_tp_pp_dp_mapping: %s\n",
                p->opt.placement[1] == 'p' ? "true" : "false");
    fprintf(fp, "  sequence_parallel: %s\n",
            q->sp && q->tp > 1 ? "true" : "false");
    fprintf(fp, "  encoder_seq_length: %lld\n", (long long)m->seq);
    fprintf(fp, "  max_position_embeddings: %lld\n", (long long)m->seq);
    fprintf(fp, "  num_layers: %lld\n", (long long)m->layers);
    fprintf(fp, "  hidden_size: %lld\n", (long long)m->hidden);
    fprintf(fp, "  ffn_hidden_size: %lld\n",
            (long long)(m->ffn_hidden > 0 ? m->ffn_hidden : 4 * m->hidden));
    fprintf(fp, "  num_attention_heads: %lld\n", (long long)m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads)
        fprintf(fp, "  num_query_groups: %lld\n", (long long)m->kv_heads);
    if (m->ffn == PP_FFN_SWIGLU)
        fprintf(fp, "  activation: fast-swiglu\n"
                    "  position_embedding_type: rope\n"
                    "  normalization: rmsnorm\n");
    fprintf(fp, "  share_embeddings_and_output_weights: %s\n",
            m->tied_embeddings ? "true" : "false");
    switch (q->recompute) {
    case PP_RECOMPUTE_FULL:
        fprintf(fp, "  activations_checkpoint_granularity: full\n"
                    "  activations_checkpoint_method: uniform\n"
                    "  activations_checkpoint_num_layers: 1\n");
        break;
    case PP_RECOMPUTE_SELECTIVE:
        fprintf(fp, "  activations_checkpoint_granularity: selective\n"
                    "  activations_checkpoint_method: null\n");
        break;
    default:
        fprintf(fp, "  activations_checkpoint_granularity: null\n"
                    "  activations_checkpoint_method: null\n");
        break;
    }
    fprintf(fp, "  optim:\n    name: %s\n",
            q->zero >= 1 ? "distributed_fused_adam" : "fused_adam");
    if (q->zero >= 1)
        fprintf(fp, "    overlap_grad_sync: %s\n",
                c->dp_overlap ? "true" : "false");
    return 0;
}

/* ------------------------------------------------------------------------
 * DeepSpeed.
 * ---------------------------------------------------------------------- */
int pp__write_deepspeed(const pp_plan *p, FILE *fp, pp_error *e) {
    const pp_plan_candidate *c = &p->cand[0];
    const pp_parallel *q = &c->par;
    json_t *o = json_object(), *z = json_object();
    int64_t nmb = q->gbs / (q->mbs * q->dp);
    /* DeepSpeed checks train_batch_size = micro x accumulation x DP. */
    json_object_set_new(o, "train_batch_size", json_integer(q->gbs));
    json_object_set_new(o, "train_micro_batch_size_per_gpu",
                        json_integer(q->mbs));
    json_object_set_new(o, "gradient_accumulation_steps", json_integer(nmb));
    json_t *bf = json_object();
    json_object_set_new(bf, "enabled", json_true());
    json_object_set_new(o, "bf16", bf);
    json_object_set_new(z, "stage", json_integer(q->zero));
    json_object_set_new(z, "overlap_comm", json_boolean(c->dp_overlap));
    json_object_set_new(z, "contiguous_gradients", json_true());
    json_object_set_new(z, "reduce_bucket_size", json_integer(40000000));
    json_object_set_new(o, "zero_optimization", z);
    if (q->recompute != PP_RECOMPUTE_NONE) {
        json_t *ac = json_object();
        json_object_set_new(ac, "partition_activations",
                            json_boolean(q->sp && q->tp > 1));
        json_object_set_new(ac, "contiguous_memory_optimization",
                            json_false());
        json_object_set_new(o, "activation_checkpointing", ac);
    }
    if (q->pp > 1) {
        json_t *pl = json_object();
        json_object_set_new(pl, "stages", json_integer(q->pp));
        json_object_set_new(o, "pipeline", pl);
    }
    if (q->tp > 1) {
        json_t *tp = json_object();
        json_object_set_new(tp, "autotp_size", json_integer(q->tp));
        json_object_set_new(o, "tensor_parallel", tp);
    }
    json_object_set_new(o, "gradient_clipping", json_real(1.0));
    json_object_set_new(o, "steps_per_print", json_integer(10));
    json_object_set_new(o, "wall_clock_breakdown", json_false());
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER
                                | JSON_REAL_PRECISION(12));
    json_decref(o);
    if (!s) return pp_error_set(e, PP_EINTERNAL, "cannot encode JSON");
    fputs(s, fp);
    fputc('\n', fp);
    free(s);
    return 0;
}
