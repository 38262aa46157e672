/*
 * models/models_int.h: helpers shared by the files of the models layer.
 * Private: other layers use include/podplan/models.h only.
 */
#ifndef PODPLAN_MODELS_INT_H
#define PODPLAN_MODELS_INT_H

#include "podplan/models.h"

/* Sizes above this are surely typos; bounding them keeps every product of
 * two of them (h*h, s*h, V*h) exact in a double. */
#define PP_MODEL_DIM_MAX 1000000000LL

/* model.c: the names of the enum keys (NULL-ended, in their enums'
 * order), a model's defaults before any key is read, the fields derived
 * from others once all are (kv_heads = heads, ffn_hidden = 4h, for fields
 * still 0), and the checks every loader runs, unlocated messages starting
 * with prefix.  model_inline.c: an inline spec parsed through them. */
extern const char *const pp__ffn_names[];
extern const char *const pp__glu_names[];
extern const char *const pp__softmax_names[];
extern const char *const pp__rope_scaling_names[];
void pp__model_defaults(pp_model *m);
void pp__model_derive(pp_model *m);
int pp__model_check(const pp_model *m, const char *prefix, pp_error *e);
int pp__model_parse_inline(const char *spec, pp_model *out, pp_error *e);

/* Parameters of one transformer layer (attention, MLP, norms, biases).
 * The counting conventions are in model.c, next to pp_model_params. */
double pp__layer_params(const pp_model *m);
/* What `layers` layers' replicated attention weights (MLA's down
 * projections and latent norms) add per GPU to a count divided by tp. */
double pp__attn_replicated_extra(const pp_model *m, double layers, double tp);

/* Parameters of the input embedding: the word table V*h, plus the learned
 * position table s*h for GPT-style (GeLU) models; LLaMA-style (SwiGLU)
 * models use rotary positions and have no table. */
double pp__embedding_params(const pp_model *m);

/* Multi-token prediction (pp_model.mtp_layers), all modules: each one
 * layer of the last layer's kind, the 2h x h projection and two norms;
 * the routed experts among them in *experts when not NULL.  Without the
 * copy of the word table the last stage keeps for them (pp > 1). */
double pp__mtp_params(const pp_model *m, double *experts);

/* Parameters held by one GPU of a pipeline stage: its layers and, on the
 * first and last stage, the embedding (or output layer), split over tp;
 * pp__stage_params is the most any stage holds.  With pp == 1 the stage
 * holds everything: pp_model_params / tp.  Generic models cannot be
 * split: params. */
double pp__stage_params(const pp_model *m, const pp_parallel *p);
double pp__stage_params_of(const pp_model *m, const pp_parallel *p,
                           int64_t stage);

/* models/moe.c.  The FFN of width f (SwiGLU: 3 matrices, GeLU: 2, with
 * biases when m->bias); layer `layer`'s parameters (an MoE layer: router,
 * shared and all routed experts); the routed experts' alone (0 for a
 * dense layer): what expert parallelism splits; the sum over layers
 * from..from+n-1. */
double pp__mlp_params(const pp_model *m, double f);
double pp__layer_params_at(const pp_model *m, int64_t layer);
double pp__expert_params_at(const pp_model *m, int64_t layer);
double pp__layers_params(const pp_model *m, int64_t from, int64_t n);
/* models/moe.c: pp_parallel_validate's rules for cp, ep and etp. */
int pp__parallel_validate_cp_ep(const pp_parallel *p, const pp_model *m,
                                const char *pre, pp_error *e);
/* models/moe.c, for memory.c.  An MoE model's parameters on one GPU of
 * stage `stage` (the dense part / tp, the routed experts / (ep etp), the
 * embedding or output layer at the ends / tp); the routed part alone in
 * *experts when not NULL.  pp__moe_shard: what ZeRO's divisor over dp is
 * multiplied by (cp for dense parameters; for the experts their own
 * data-parallel group instead of dp), as one weighted factor.
 * pp__moe_act_factor: an MoE model's stored activations against a dense
 * one's of the same shape (p NULL: without recompute). */
double pp__stage_params_moe(const pp_model *m, const pp_parallel *p,
                            int64_t stage, double *experts);
double pp__moe_shard(const pp_model *m, const pp_parallel *p, int64_t stage);
double pp__moe_act_factor(const pp_model *m, const pp_parallel *p);
/* The copy of fc1's output a glu_clamp activation keeps, per layer, in
 * units of s b h bytes (0 without glu_clamp). */
double pp__moe_glu_clamp_saved(const pp_model *m);

/* Degrees and batch sizes above this are typos; bounding them keeps
 * products such as mbs * dp * pp far from int64 overflow (parallel.c,
 * validate.c). */
#define PP_PARALLEL_MAX 1000000000LL

#endif /* PODPLAN_MODELS_INT_H */
