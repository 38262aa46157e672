/*
 * planner/space_pins.c: pins no layout can meet (plan --fix), refused as
 * usage errors before the search walks the space (space.c).
 */
#include "planner_int.h"

#include <stdio.h>

/* Whether --uneven's split that counts the embedding and the loss (and
 * MTP) as layers can cut the model into n equal parts (accounted_layout). */
static bool units_split(const pp__space *s, int64_t n) {
    return s->uneven && pp__units_divide(s->m, n);
}

/* A pinned recompute value as --fix wrote it ("full", "layernorm+mlp"). */
static const char *pin_recompute_text(int64_t v, char *buf, size_t len) {
    return pp_recompute_format(pp__pin_recompute(v), pp__pin_mods(v), buf, len);
}

int pp__space_check_pins(const pp__space *s, pp_error *e) {
    const pp_plan_filter *f = s->filter;
    const pp_model *m = s->m;
    bool generic = m->arch != PP_ARCH_TRANSFORMER;
    int64_t limit = s->gpus > 0 ? s->gpus : s->cluster_gpus;
    if (!f) return 0;
    const bool *x = f->fixed;
    const int64_t *v = f->value;

    if (x[PP_PLAN_DIM_TP]) {
        int64_t tp = v[PP_PLAN_DIM_TP];
        if (generic && tp > 1)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix tp=%lld: model %s is generic (no layer "
                                "shape): data parallelism only",
                                (long long)tp, m->name);
        if (!generic && m->heads % tp != 0)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix tp=%lld: does not divide the %lld "
                                "attention heads of %s",
                                (long long)tp, (long long)m->heads, m->name);
        if (!generic && m->kv_heads % tp != 0)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix tp=%lld: does not divide the %lld K/V "
                                "heads of %s",
                                (long long)tp, (long long)m->kv_heads, m->name);
        if (!s->cross_node_tp &&
            (tp > s->gpus_per_node || s->gpus_per_node % tp != 0))
            return pp_error_set(e, PP_EUSAGE,
                                "--fix tp=%lld: a TP group would span servers "
                                "of %lld GPUs; add --allow-cross-node-tp",
                                (long long)tp, (long long)s->gpus_per_node);
        if (tp > limit)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix tp=%lld: more than the %lld GPUs "
                                "available",
                                (long long)tp, (long long)limit);
    }
    if (x[PP_PLAN_DIM_PP]) {
        int64_t pp = v[PP_PLAN_DIM_PP];
        if (generic && pp > 1)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix pp=%lld: model %s is generic (no layer "
                                "shape): data parallelism only",
                                (long long)pp, m->name);
        if (!generic && m->layers % pp != 0 && !units_split(s, pp))
            return pp_error_set(e, PP_EUSAGE,
                                "--fix pp=%lld: does not divide the %lld "
                                "layers of %s%s",
                                (long long)pp, (long long)m->layers, m->name,
                                !s->uneven ? ""
                                : m->mtp_layers
                                    ? " nor those + 2 or + 2 + mtp_layers "
                                      "(embedding, loss and MTP as layers)"
                                    : " nor those + 2 (embedding and loss "
                                      "as layers)");
        if (pp > limit)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix pp=%lld: more than the %lld GPUs "
                                "available",
                                (long long)pp, (long long)limit);
    }
    if (x[PP_PLAN_DIM_VP] && v[PP_PLAN_DIM_VP] > 1) {
        int64_t vp = v[PP_PLAN_DIM_VP];
        if (generic || (m->layers % vp != 0 && !units_split(s, vp)))
            return pp_error_set(e, PP_EUSAGE,
                                "--fix vp=%lld: the layers of %s cannot be "
                                "split into %lld chunks per GPU",
                                (long long)vp, m->name, (long long)vp);
        if (x[PP_PLAN_DIM_PP]) {
            int64_t pp = v[PP_PLAN_DIM_PP];
            if (pp <= 2)
                return pp_error_set(e, PP_EUSAGE,
                                    "--fix vp=%lld: interleaving needs pp > 2 "
                                    "(pinned pp=%lld)",
                                    (long long)vp, (long long)pp);
            if (m->layers % (pp * vp) != 0 && !units_split(s, pp * vp))
                return pp_error_set(e, PP_EUSAGE,
                                    "--fix vp=%lld: the %lld layers of %s are "
                                    "not divisible by pp x vp = %lld",
                                    (long long)vp, (long long)m->layers,
                                    m->name, (long long)(pp * vp));
        }
    }
    if (x[PP_PLAN_DIM_DP]) {
        int64_t dp = v[PP_PLAN_DIM_DP];
        if (s->gbs % dp != 0)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix dp=%lld: does not divide the global "
                                "batch %lld",
                                (long long)dp, (long long)s->gbs);
        if (dp > limit || (s->gpus > 0 && s->gpus % dp != 0))
            return pp_error_set(e, PP_EUSAGE,
                                "--fix dp=%lld: does not divide the %lld "
                                "GPUs",
                                (long long)dp, (long long)limit);
    }
    if (x[PP_PLAN_DIM_OFFLOAD] && v[PP_PLAN_DIM_OFFLOAD] > 0) {
        const char *why =
            v[PP_PLAN_DIM_OFFLOAD] >= s->m->layers ? "fewer layers than the "
                                                     "model has"
            : x[PP_PLAN_DIM_PP] && v[PP_PLAN_DIM_PP] > 1 ? "pp=1"
            : x[PP_PLAN_DIM_RECOMPUTE] &&
                    v[PP_PLAN_DIM_RECOMPUTE] != PP_RECOMPUTE_NONE
                ? "recompute=none"
            : x[PP_PLAN_DIM_GRAPHS] && v[PP_PLAN_DIM_GRAPHS] ? "graphs=none"
            : s->m->arch != PP_ARCH_TRANSFORMER ? "a transformer model"
                                                : NULL;
        if (why)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix offload=%lld: needs %s (Megatron-core's "
                                "CPU offloading rules)",
                                (long long)v[PP_PLAN_DIM_OFFLOAD], why);
    }
    if (x[PP_PLAN_DIM_A2A] && v[PP_PLAN_DIM_A2A]) {
        const char *why =
            !pp_model_is_moe(s->m) ? "a model with experts"
            : !s->a2a              ? "a stack that offers it "
                                     "(moe.a2a_overlap: --stack nemo-2025)"
            : x[PP_PLAN_DIM_EP] && v[PP_PLAN_DIM_EP] <= 1      ? "ep > 1"
            : x[PP_PLAN_DIM_ZERO] && v[PP_PLAN_DIM_ZERO] >= 3  ? "zero below 3"
            : x[PP_PLAN_DIM_OFFLOAD] && v[PP_PLAN_DIM_OFFLOAD] ? "no offload"
                                                               : NULL;
        if (why)
            return pp_error_set(e, PP_EUSAGE, "--fix a2a_overlap=on: needs %s",
                                why);
    }
    /* HybridEP pinned, or the stack's left alone. */
    bool hybridep = x[PP_PLAN_DIM_DISPATCHER] ? v[PP_PLAN_DIM_DISPATCHER] == 2
                                              : s->hybridep;
    if (x[PP_PLAN_DIM_RANK_CAPACITY]) {
        const char *why = !pp_model_is_moe(s->m) ? "a model with experts"
                          : !hybridep            ? "dispatcher=hybridep"
                          : s->m->capacity_factor > 0
                              ? "a dropless model (no capacity_factor)"
                              : NULL;
        if (why)
            return pp_error_set(
                e, PP_EUSAGE, "--fix rank_capacity=%g: needs %s",
                (double)v[PP_PLAN_DIM_RANK_CAPACITY] / 1000, why);
    }
    if (x[PP_PLAN_DIM_DISPATCHER] && v[PP_PLAN_DIM_DISPATCHER] == 2 &&
        !pp_model_is_moe(s->m))
        return pp_error_set(e, PP_EUSAGE,
                            "--fix dispatcher=hybridep: needs a model with "
                            "experts");
    if (x[PP_PLAN_DIM_DTYPE]) {
        pp_prec dt = (pp_prec)v[PP_PLAN_DIM_DTYPE];
        const char *why =
            dt == PP_PREC_FP4 && !s->fp4
                ? "the stack or the GPU does not train "
                  "in NVFP4 (stack fp4.supported, a "
                  "catalogue fp4 peak)"
            : dt == PP_PREC_FP8 && !s->fp8
                ? "the stack or the GPU does not train in FP8"
            : dt != PP_PREC_FP8 && x[PP_PLAN_DIM_FP8]
                ? "an FP8 recipe is pinned too (--fix fp8=)"
            : dt == PP_PREC_FP4 && s->target == PP_PLAN_TARGET_NEMO2
                ? "NeMo 2.0's MegatronMixedPrecision has no NVFP4 setting "
                  "(--format nemo or megatron)"
            : dt == PP_PREC_FP4 && s->target == PP_PLAN_TARGET_DEEPSPEED
                ? "DeepSpeed does not train in NVFP4"
                : NULL;
        if (why)
            return pp_error_set(e, PP_EUSAGE, "--fix dtype=%s: %s",
                                pp_registry_name(&pp_reg_prec, (int)dt), why);
    }
    /* cp_a2a is a2a+p2p's all-to-all level: it pins that exchange, and a
     * pinned cp must split into it and a ring (models/moe.c). */
    if (x[PP_PLAN_DIM_CP_A2A]) {
        int64_t a = v[PP_PLAN_DIM_CP_A2A];
        if (x[PP_PLAN_DIM_CP_COMM] &&
            v[PP_PLAN_DIM_CP_COMM] != PP_CPCOMM_A2A_P2P)
            return pp_error_set(
                e, PP_EUSAGE,
                "--fix cp_a2a=%lld: the all-to-all level of cp_comm=a2a+p2p, "
                "not of cp_comm=%s",
                (long long)a,
                pp_registry_name(&pp_reg_cp_comm, (int)v[PP_PLAN_DIM_CP_COMM]));
        if (x[PP_PLAN_DIM_CP] &&
            (a < 2 || a >= v[PP_PLAN_DIM_CP] || v[PP_PLAN_DIM_CP] % a != 0))
            return pp_error_set(e, PP_EUSAGE,
                                "--fix cp_a2a=%lld: expected a divisor of cp "
                                "(%lld) between 1 and cp, exclusive",
                                (long long)a, (long long)v[PP_PLAN_DIM_CP]);
    }
    if (x[PP_PLAN_DIM_FP8_ATTN] && v[PP_PLAN_DIM_FP8_ATTN]) {
        /* What simulate refuses for fp8_attn=on (sim/train/step_build.c,
         * models/parallel.c), said once here instead of per candidate. */
        double hd = generic ? 0 : pp_model_core_head_dim(m);
        pp_fp8 r =
            x[PP_PLAN_DIM_FP8] ? (pp_fp8)v[PP_PLAN_DIM_FP8] : s->fp8_recipe;
        const char *why =
            generic   ? "a transformer model (no attention layers here)"
            : !s->fp8 ? "a stack and a GPU that train in FP8"
            : x[PP_PLAN_DIM_DTYPE] && v[PP_PLAN_DIM_DTYPE] != PP_PREC_FP8
                ? "dtype=fp8"
            : r == PP_FP8_BLOCKWISE
                ? "a recipe other than blockwise (Transformer Engine has "
                  "no FP8 attention for block scaling)"
            : !s->flash ? "flash attention (the stack's attention is the "
                          "standard one)"
            : !s->fp8_attn
                ? "a profile with FP8 attention times "
                  "(attention.fp8_fwd_time_ratio, fp8_bwd_time_ratio: "
                  "published for B200, GB200 and GB300)"
            : hd > 128 ? "head dims up to 128 (cuDNN's FP8 attention)"
            : s->target == PP_PLAN_TARGET_DEEPSPEED
                ? "a Megatron-core launch format (DeepSpeed has no FP8 "
                  "attention setting)"
                : NULL;
        if (why)
            return pp_error_set(e, PP_EUSAGE, "--fix fp8_attn=on: needs %s",
                                why);
    }
    if (x[PP_PLAN_DIM_FP8] && !s->fp8)
        return pp_error_set(
            e, PP_EUSAGE,
            "--fix fp8=%s: the stack or the GPU does not "
            "train in FP8",
            pp_registry_name(&pp_reg_fp8, (int)v[PP_PLAN_DIM_FP8]));
    if (x[PP_PLAN_DIM_FP8] && v[PP_PLAN_DIM_FP8] == PP_FP8_MXFP8 && !s->mxfp8)
        return pp_error_set(e, PP_EUSAGE,
                            "--fix fp8=mxfp8: the GPU has no MXFP8 tensor "
                            "cores (catalogue mxfp8; Blackwell's have them)");
    if (x[PP_PLAN_DIM_MBS] && s->gbs % v[PP_PLAN_DIM_MBS] != 0)
        return pp_error_set(e, PP_EUSAGE,
                            "--fix mbs=%lld: does not divide the global batch "
                            "%lld",
                            (long long)v[PP_PLAN_DIM_MBS], (long long)s->gbs);
    if (x[PP_PLAN_DIM_SP] && v[PP_PLAN_DIM_SP] &&
        ((x[PP_PLAN_DIM_TP] && v[PP_PLAN_DIM_TP] == 1) || generic))
        return pp_error_set(e, PP_EUSAGE,
                            "--fix sp=on: sequence parallelism needs tp > 1");
    if (s->target == PP_PLAN_TARGET_DEEPSPEED) {
        if (x[PP_PLAN_DIM_VP] && v[PP_PLAN_DIM_VP] > 1)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix vp=%lld: DeepSpeed's pipeline engine "
                                "has no interleaved schedule",
                                (long long)v[PP_PLAN_DIM_VP]);
        if (x[PP_PLAN_DIM_SP] && v[PP_PLAN_DIM_SP])
            return pp_error_set(e, PP_EUSAGE,
                                "--fix sp=on: DeepSpeed's pipeline engine has "
                                "no sequence parallelism");
        if (x[PP_PLAN_DIM_RECOMPUTE] &&
            v[PP_PLAN_DIM_RECOMPUTE] != PP_RECOMPUTE_NONE &&
            v[PP_PLAN_DIM_RECOMPUTE] != PP_RECOMPUTE_FULL) {
            char rc[64];
            return pp_error_set(
                e, PP_EUSAGE,
                "--fix recompute=%s: DeepSpeed checkpoints whole layers "
                "(full) or none",
                pin_recompute_text(v[PP_PLAN_DIM_RECOMPUTE], rc, sizeof rc));
        }
    }
    if (x[PP_PLAN_DIM_RECOMPUTE] && pp__pin_mods(v[PP_PLAN_DIM_RECOMPUTE]) &&
        pp_recompute_check(s->m, pp__pin_recompute(v[PP_PLAN_DIM_RECOMPUTE]),
                           pp__pin_mods(v[PP_PLAN_DIM_RECOMPUTE]), e)) {
        /* As pp_parallel_validate would refuse every candidate, once. */
        pp_error_prefix(e, "--fix");
        if (e) e->code = PP_EUSAGE;
        return PP_EUSAGE;
    }
    /* Pinned modules the stack does not run (simulate's
     * pp_cli_check_stack refuses them the same way). */
    uint32_t pmods = x[PP_PLAN_DIM_RECOMPUTE]
                         ? (uint32_t)pp__pin_mods(v[PP_PLAN_DIM_RECOMPUTE])
                               << PP_STACK_RECOMP_MOD
                         : 0;
    if (pmods && s->recompute_mask && (s->recompute_mask & pmods) != pmods) {
        char rc[64];
        return pp_error_set(
            e, PP_EUSAGE,
            "--fix recompute=%s: stack %s does not run these modules (its "
            "recompute: lists what it runs; nemo-2025 runs Megatron-core's)",
            pin_recompute_text(v[PP_PLAN_DIM_RECOMPUTE], rc, sizeof rc),
            s->stack ? s->stack : "?");
    }
    if (x[PP_PLAN_DIM_ZERO] && v[PP_PLAN_DIM_ZERO] > 1 &&
        (s->target == PP_PLAN_TARGET_MEGATRON ||
         s->target == PP_PLAN_TARGET_NEMO || s->target == PP_PLAN_TARGET_NEMO2))
        return pp_error_set(e, PP_EUSAGE,
                            "--fix zero=%lld: Megatron-LM and NeMo shard the "
                            "optimizer only (ZeRO-1); use --format deepspeed "
                            "or json",
                            (long long)v[PP_PLAN_DIM_ZERO]);
    if (x[PP_PLAN_DIM_DP] && v[PP_PLAN_DIM_DP] == 1) {
        if (x[PP_PLAN_DIM_ZERO] && v[PP_PLAN_DIM_ZERO] > 0)
            return pp_error_set(e, PP_EUSAGE,
                                "--fix zero=%lld: ZeRO needs dp > 1",
                                (long long)v[PP_PLAN_DIM_ZERO]);
        if (x[PP_PLAN_DIM_OVERLAP] && v[PP_PLAN_DIM_OVERLAP])
            return pp_error_set(e, PP_EUSAGE,
                                "--fix overlap=on: DP overlap needs dp > 1");
    }
    /* The GPUs are tp x pp x cp x dp: with cp pinned too the product is
     * the count; without, cp is what remains, so the three divide it. */
    if (x[PP_PLAN_DIM_TP] && x[PP_PLAN_DIM_PP] && x[PP_PLAN_DIM_DP] &&
        s->gpus > 0) {
        int64_t n = v[PP_PLAN_DIM_TP] * v[PP_PLAN_DIM_PP] * v[PP_PLAN_DIM_DP];
        bool cp = x[PP_PLAN_DIM_CP];
        if (cp ? n * v[PP_PLAN_DIM_CP] != s->gpus : s->gpus % n != 0)
            return pp_error_set(
                e, PP_EUSAGE,
                "--fix: tp x pp x %s = %lld, %s the %lld GPUs of --gpus",
                cp ? "cp x dp" : "dp",
                (long long)(cp ? n * v[PP_PLAN_DIM_CP] : n),
                cp ? "not" : "does not divide", (long long)s->gpus);
    }
    return 0;
}
