/*
 * models/validate.c: the rules a parallel layout keeps on a model
 * (pp_parallel_validate): degrees, batch divisibility, and where
 * Megatron-core allows activation offloading, the all-to-all overlap and
 * recompute modules (megatron/core/transformer/transformer_config.py,
 * megatron/training/arguments.py).  models/parallel.c parses and formats
 * the layout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models_int.h"

/* Activation offloading where Megatron-core's TransformerConfig allows it
 * (cpu_offloading): fewer layers than the model has, pp 1, no
 * recomputation (a recompute= left unset gives way, pp_stack_resolve_spec),
 * no CUDA graphs. */
static int offload_check(const pp_parallel *p, const pp_model *m,
                         const char *pre, pp_error *e) {
    if (p->offload == 0) return 0;
    if (p->offload < 0)
        return pp_error_set(e, PP_EINPUT,
                            "%soffload: expected a number of layers, got %lld",
                            pre, (long long)p->offload);
    if (m->arch != PP_ARCH_TRANSFORMER)
        return pp_error_set(e, PP_EINPUT,
                            "%soffload: model %s is generic (no layers to "
                            "offload)",
                            pre, m->name);
    if (p->offload >= m->layers)
        return pp_error_set(e, PP_EINPUT,
                            "%soffload: %lld layers, but model %s has %lld "
                            "(Megatron-core offloads fewer than all: "
                            "cpu_offloading_num_layers < num_layers)",
                            pre, (long long)p->offload, m->name,
                            (long long)m->layers);
    if (p->pp > 1)
        return pp_error_set(e, PP_EINPUT,
                            "%soffload: needs pp=1, got pp=%lld (Megatron-core "
                            "has no pipeline parallelism with CPU offloading)",
                            pre, (long long)p->pp);
    if (p->recompute_set &&
        (p->recompute != PP_RECOMPUTE_NONE || p->recompute_mods)) {
        char rc[64];
        return pp_error_set(e, PP_EINPUT,
                            "%soffload: needs recompute=none, got recompute=%s "
                            "(Megatron-core does not offload with activation "
                            "recomputation)",
                            pre,
                            pp_recompute_format(p->recompute, p->recompute_mods,
                                                rc, sizeof rc));
    }
    if (p->graphs)
        return pp_error_set(e, PP_EINPUT,
                            "%soffload: needs graphs=none (Megatron-core does "
                            "not offload under CUDA graphs)",
                            pre);
    return 0;
}

/* Megatron-core's overlap of the expert-parallel all-to-alls
 * (--overlap-moe-expert-parallel-comm: the combined 1F1B schedule runs
 * one micro-batch's forward beside another's backward, layer by layer,
 * each one's dispatch and combine under the other's compute) where
 * TransformerConfig allows it: expert parallelism, interleaving when
 * there is a pipeline, no full recomputation, no "moe" module
 * recomputed (it re-runs the dispatch).  A whole-iteration CUDA graph
 * captures the combined schedule as it runs (Megatron-Bridge's MoE
 * performance recipes set overlap_moe_expert_parallel_comm with
 * cuda_graph_impl full_iteration: qwen/common.py,
 * _enable_hybridep_full_iteration_mxfp8).  ZeRO-3 and offloading are
 * not simulated with it. */
static int a2a_check(const pp_parallel *p, const pp_model *m, const char *pre,
                     pp_error *e) {
    if (!p->a2a_overlap) return 0;
    if (!pp_model_is_moe(m) || p->ep <= 1)
        return pp_error_set(e, PP_EINPUT,
                            "%sa2a_overlap: needs expert parallelism (ep > 1 "
                            "on a model with experts), got ep=%lld on %s",
                            pre, (long long)p->ep, m->name);
    if (p->pp > 1 && p->vp <= 1)
        return pp_error_set(e, PP_EINPUT,
                            "%sa2a_overlap: with pp=%lld needs vp > 1 "
                            "(Megatron-core: the combined schedule runs on "
                            "the interleaved one)",
                            pre, (long long)p->pp);
    if (p->recompute_set && p->recompute == PP_RECOMPUTE_FULL)
        return pp_error_set(e, PP_EINPUT,
                            "%sa2a_overlap: not with recompute=full "
                            "(Megatron-core refuses the two together)",
                            pre);
    if (p->recompute_mods & PP_RECOMP_MOE)
        return pp_error_set(e, PP_EINPUT,
                            "%sa2a_overlap: not with the moe recompute "
                            "module (it runs the dispatch again; Megatron-"
                            "core refuses the two together)",
                            pre);
    if (p->zero >= 3 || p->offload > 0)
        return pp_error_set(e, PP_EINPUT,
                            "%sa2a_overlap: podplan does not simulate it "
                            "with %s",
                            pre, p->zero >= 3 ? "zero=3" : "offload=");
    return 0;
}

/* Recompute modules where Megatron-core has them: with selective
 * granularity (not full), on a transformer's layers, the MoE modules on a
 * model with MoE layers (shared_experts with shared experts), mlp where
 * some layer is dense, mla_up_proj on MLA, moe not beside the parts it
 * recomputes anyway. */
int pp_recompute_check(const pp_model *m, pp_recompute rc, uint8_t r,
                       pp_error *e) {
    if (!r) return 0;
    if (rc == PP_RECOMPUTE_FULL)
        return pp_error_set(e, PP_EINPUT,
                            "recompute: modules are selective "
                            "recomputation; full recomputes every module");
    if (m->arch != PP_ARCH_TRANSFORMER)
        return pp_error_set(e, PP_EINPUT,
                            "recompute: model %s is generic (no layers "
                            "whose modules to recompute)",
                            m->name);
    const char *moe = r & PP_RECOMP_MOE_ACT  ? "moe_act"
                      : r & PP_RECOMP_MOE    ? "moe"
                      : r & PP_RECOMP_SHARED ? "shared_experts"
                                             : NULL;
    if (moe && !pp_model_is_moe(m))
        return pp_error_set(e, PP_EINPUT,
                            "recompute: %s needs MoE layers, but model %s "
                            "has no experts",
                            moe, m->name);
    if (r & PP_RECOMP_SHARED && m->shared_experts == 0)
        return pp_error_set(e, PP_EINPUT,
                            "recompute: shared_experts needs shared experts, "
                            "but model %s has none",
                            m->name);
    if (r & PP_RECOMP_MLP && pp_model_moe_layers(m) == m->layers)
        return pp_error_set(e, PP_EINPUT,
                            "recompute: mlp recomputes a dense layer's MLP, "
                            "but every layer of %s is MoE (moe recomputes "
                            "an MoE block)",
                            m->name);
    if (r & PP_RECOMP_MLA_UP && !pp_model_is_mla(m))
        return pp_error_set(e, PP_EINPUT,
                            "recompute: mla_up_proj recomputes multi-head "
                            "latent attention's up projections, but model "
                            "%s has no kv_lora_rank",
                            m->name);
    /* The MoE block's recomputation runs its activation and its shared
     * experts again too. */
    if (r & PP_RECOMP_MOE && r & (PP_RECOMP_MOE_ACT | PP_RECOMP_SHARED))
        return pp_error_set(e, PP_EINPUT,
                            "recompute: moe recomputes the whole MoE block, "
                            "%s with it",
                            r & PP_RECOMP_MOE_ACT ? "moe_act"
                                                  : "shared_experts");
    return 0;
}

int pp_parallel_validate(const pp_parallel *p, const pp_model *m, pp_error *e) {
    const char *pre = "--parallel: ";
    struct {
        const char *key;
        int64_t v;
    } deg[] = {{"tp", p->tp},
               {"pp", p->pp},
               {"dp", p->dp},
               {"mbs", p->mbs},
               {"gbs", p->gbs},
               {"vp", p->vp},
               /* 0 (a struct filled by hand) means 1 */
               {"cp", p->cp > 0 ? p->cp : 1},
               {"ep", p->ep > 0 ? p->ep : 1},
               {"etp", pp_parallel_etp(p)}};
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++)
        if (deg[i].v < 1 || deg[i].v > PP_PARALLEL_MAX)
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: expected a positive integer at most "
                                "%lld, got %lld",
                                pre, deg[i].key, PP_PARALLEL_MAX,
                                (long long)deg[i].v);
    if (p->first < 0 || p->last < 0 || p->first > PP_PARALLEL_MAX ||
        p->last > PP_PARALLEL_MAX)
        return pp_error_set(
            e, PP_EINPUT,
            "%s%s: expected a number of layers (0 for an "
            "even share), got %lld",
            pre, p->first < 0 || p->first > PP_PARALLEL_MAX ? "first" : "last",
            (long long)(p->first < 0 || p->first > PP_PARALLEL_MAX ? p->first
                                                                   : p->last));
    if (p->zero < 0 || p->zero > 3)
        return pp_error_set(e, PP_EINPUT, "%szero: expected 0..3, got %d", pre,
                            p->zero);
    if (offload_check(p, m, pre, e) < 0) return PP_EINPUT;
    if (a2a_check(p, m, pre, e) < 0) return PP_EINPUT;
    if (pp_recompute_check(m, p->recompute, p->recompute_mods, e) < 0) {
        pp_error_prefix(e, "--parallel");
        return PP_EINPUT;
    }

    /* The global batch is split into micro-batches of mbs on each of the dp
     * replicas (Megatron-LM: global_batch_size % (micro_batch_size *
     * data_parallel_size) == 0). */
    if (p->gbs % (p->mbs * p->dp) != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%sgbs: %lld is not divisible by mbs * dp "
                            "(%lld * %lld = %lld)",
                            pre, (long long)p->gbs, (long long)p->mbs,
                            (long long)p->dp, (long long)(p->mbs * p->dp));

    if (m->arch == PP_ARCH_GENERIC) {
        /* A generic model has no layer shape to split: data parallel only. */
        if (p->cp > 1 || p->ep > 1 || p->etp > 1)
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: model %s is generic (no layer shape): "
                                "only data parallelism applies",
                                pre,
                                p->cp > 1   ? "cp"
                                : p->ep > 1 ? "ep"
                                            : "etp",
                                m->name);
        if (p->tp > 1 || p->pp > 1 || p->vp > 1 || pp_parallel_uneven(p))
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: model %s is generic (no layer shape): "
                                "only data parallelism applies, tp, pp and "
                                "vp must be 1",
                                pre,
                                p->tp > 1   ? "tp"
                                : p->pp > 1 ? "pp"
                                : p->vp > 1 ? "vp"
                                : p->first  ? "first"
                                : p->last   ? "last"
                                            : "layout",
                                m->name);
        return 0;
    }

    /* Megatron splits attention heads over tp (Shoeybi et al. 2019, sec.
     * 3): num_attention_heads % tensor_model_parallel_size == 0, and with
     * GQA the K/V heads too (num_query_groups % tp == 0). */
    if (m->heads % p->tp != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%stp: %lld does not divide heads (%lld) of "
                            "model %s",
                            pre, (long long)p->tp, (long long)m->heads,
                            m->name);
    if (m->kv_heads % p->tp != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%stp: %lld does not divide kv_heads (%lld) of "
                            "model %s",
                            pre, (long long)p->tp, (long long)m->kv_heads,
                            m->name);
    bool uneven = pp_parallel_uneven(p);
    int rc = pp_parallel_validate_split(p, m, e);
    if (rc < 0) return rc;
    /* Otherwise every stage holds the same number of layers. */
    if (!uneven && m->layers % p->pp != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%spp: %lld does not divide layers (%lld) of "
                            "model %s",
                            pre, (long long)p->pp, (long long)m->layers,
                            m->name);
    if (p->vp > 1) {
        /* Interleaved 1F1B (Narayanan et al. 2021, sec. 2.2.2): each GPU
         * holds vp chunks of layers/(pp*vp) layers, and the schedule runs
         * micro-batches in groups of pp. */
        if (p->pp < 2)
            return pp_error_set(e, PP_EINPUT,
                                "%svp: %lld needs pipeline parallelism (pp > "
                                "1), got pp=%lld",
                                pre, (long long)p->vp, (long long)p->pp);
        if (!uneven && m->layers % (p->pp * p->vp) != 0)
            return pp_error_set(e, PP_EINPUT,
                                "%svp: layers (%lld) of model %s are not "
                                "divisible by pp * vp (%lld * %lld)",
                                pre, (long long)m->layers, m->name,
                                (long long)p->pp, (long long)p->vp);
        int64_t nmb = p->gbs / (p->mbs * p->dp);
        if (nmb % p->pp != 0)
            return pp_error_set(e, PP_EINPUT,
                                "%svp: the interleaved schedule needs the "
                                "number of micro-batches (gbs / (mbs * dp) "
                                "= %lld) to be a multiple of pp (%lld)",
                                pre, (long long)nmb, (long long)p->pp);
    }
    /* sp with tp == 1 and zero > 0 with dp == 1 are allowed: they have no
     * effect (Megatron-LM turns sequence parallelism off when tp == 1). */
    return pp__parallel_validate_cp_ep(p, m, pre, e);
}
