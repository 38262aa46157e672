/*
 * planner/space.c: the search space and its rules.
 *
 * The rules are Megatron-LM's (megatron/training/arguments.py,
 * validate_args, and Narayanan et al. 2021): TP splits the attention heads
 * (and the K/V heads of GQA), PP splits the layers evenly, DP = GPUs /
 * (TP x PP) replicas each take gbs / dp sequences in micro-batches of
 * mbs, interleaving needs layers divisible by PP x vp, a number of
 * micro-batches divisible by PP and (Megatron-LM 2021, "pipeline-model-
 * parallel size should be greater than 2 with interleaved schedule") PP >
 * 2.  Sequence parallelism only means something with TP > 1, ZeRO and DP
 * overlap only with DP > 1: those combinations are not generated at all
 * (they would be the same layout twice), so they are not rejections.
 */
#include "planner_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Divisors.
 * ---------------------------------------------------------------------- */
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

size_t pp__divisors(int64_t n, int64_t *out, size_t max) {
    size_t k = 0;
    if (n < 1) return 0;
    for (int64_t d = 1; d * d <= n; d++) {
        if (n % d) continue;
        if (k < max) out[k++] = d;
        if (d != n / d && k < max) out[k++] = n / d;
    }
    qsort(out, k, sizeof *out, cmp_i64);
    return k;
}

/* ------------------------------------------------------------------------
 * The walk.
 * ---------------------------------------------------------------------- */
#define MAXDIV 2048

static inline void reject(const pp__space *s, pp_plan_reject r) {
    if (s->rejected) s->rejected[r]++;
}

/* Checks a value against the pins and exclusions; counts a rejection. */
static bool allowed(const pp__space *s, pp_plan_dim d, int64_t v) {
    const pp_plan_filter *f = s->filter;
    if (!f) return true;
    if (f->fixed[d] && f->value[d] != v) {
        reject(s, PP_PLAN_REJECT_PINNED);
        return false;
    }
    for (int i = 0; i < f->n_exclude[d]; i++)
        if (f->exclude[d][i] == v) {
            reject(s, PP_PLAN_REJECT_EXCLUDED);
            return false;
        }
    return true;
}

/* The MoE dispatcher and permutation: the stack's, unless pinned or its
 * choice excluded; a pinned choice is written into the SPEC so that the
 * layout reads back the same.  CUDA graphs likewise, when pinned. */
static bool two_way(const pp__space *s, pp_plan_dim d, bool dflt) {
    const pp_plan_filter *f = s->filter;
    if (!f) return dflt;
    if (f->fixed[d]) return f->value[d] != 0;
    for (int i = 0; i < f->n_exclude[d]; i++)
        if ((f->exclude[d][i] != 0) == dflt) return !dflt;
    return dflt;
}

static void pinned_choices(const pp__space *s, pp_parallel *p) {
    const pp_plan_filter *f = s->filter;
    /* CUDA graphs: not searched (their memory is not modelled); pinned,
     * every candidate has them. */
    if (f && f->fixed[PP_PLAN_DIM_GRAPHS])
        p->graphs = (uint8_t)f->value[PP_PLAN_DIM_GRAPHS];
    /* Activation offloading likewise: pinned, every candidate offloads
     * (walk_inner keeps those Megatron-core allows: pp 1, no
     * recomputation). */
    if (f && f->fixed[PP_PLAN_DIM_OFFLOAD])
        p->offload = f->value[PP_PLAN_DIM_OFFLOAD];
    /* The all-to-all overlap, when pinned (walk_inner keeps the layouts
     * Megatron-core allows it on; unpinned, it searches it). */
    if (f && f->fixed[PP_PLAN_DIM_A2A])
        p->a2a_overlap = f->value[PP_PLAN_DIM_A2A] != 0;
    /* How CP exchanges K/V, when pinned (walk_cp_comm keeps the layouts
     * Transformer Engine runs it on; unpinned, it searches it). */
    if (f && f->fixed[PP_PLAN_DIM_CP_COMM])
        p->cp_comm = (pp_cp_comm)f->value[PP_PLAN_DIM_CP_COMM];
    else if (f && f->fixed[PP_PLAN_DIM_CP_A2A])
        p->cp_comm = PP_CPCOMM_A2A_P2P; /* its level pins it */
    p->deepep = two_way(s, PP_PLAN_DIM_DISPATCHER, s->deepep);
    p->permute_unfused = two_way(s, PP_PLAN_DIM_PERMUTE, s->permute_unfused);
    if (f && (f->fixed[PP_PLAN_DIM_DISPATCHER] || p->deepep != s->deepep))
        p->dispatch = p->deepep ? PP_DISPATCH_DEEPEP : PP_DISPATCH_ALLTOALL;
    /* The search's two ways are alltoall and DeepEP's routing; HybridEP,
     * pinned, routes as DeepEP; a stack's stays only on its own side. */
    p->hybridep = p->dispatch == PP_DISPATCH_AUTO && p->deepep && s->hybridep;
    if (f && f->fixed[PP_PLAN_DIM_DISPATCHER] &&
        f->value[PP_PLAN_DIM_DISPATCHER] == 2) {
        p->dispatch = PP_DISPATCH_HYBRIDEP;
        p->hybridep = true;
    }
    if (f && f->fixed[PP_PLAN_DIM_RANK_CAPACITY])
        p->rank_capacity = (double)f->value[PP_PLAN_DIM_RANK_CAPACITY] / 1000;
    if (f && (f->fixed[PP_PLAN_DIM_PERMUTE] ||
              p->permute_unfused != s->permute_unfused))
        p->permute = p->permute_unfused ? PP_PERMUTE_UNFUSED : PP_PERMUTE_FUSED;
}

static bool target_allows(pp_plan_target t, const pp_parallel *p) {
    switch (t) {
    case PP_PLAN_TARGET_MEGATRON:
    case PP_PLAN_TARGET_NEMO:
    case PP_PLAN_TARGET_NEMO2:
        /* Megatron-LM's --use-distributed-optimizer shards the optimizer
         * states over DP: ZeRO-1.  Stages 2 and 3 have no flag. */
        return p->zero <= 1;
    case PP_PLAN_TARGET_DEEPSPEED:
        /* DeepSpeed's pipeline engine supports ZeRO stage 0 and 1 only;
         * its stage split lives in the model code (PipelineModule's
         * partition_method), not in ds_config.  It runs one schedule
         * (TrainSchedule, 1F1B without interleaving), has no sequence
         * parallelism, and checkpoints whole layers or nothing
         * (deepspeed.checkpointing: no Megatron-style selective
         * recomputation).  vp is checked in walk_batch already. */
        return (p->pp == 1 || p->zero <= 1) && !pp_parallel_uneven(p) &&
               p->vp == 1 && !p->sp && p->recompute != PP_RECOMPUTE_SELECTIVE &&
               !p->recompute_mods && p->cp <= 1 &&
               p->ep <= 1 &&    /* neither in its pipeline engine */
               p->offload == 0; /* its config has no Megatron-core offload */
    default: return true;
    }
}

/* The innermost dimensions: zero, the number format, overlap. */
static int walk_zero(const pp__space *s, pp_parallel *p, pp__space_fn fn,
                     void *ctx, pp_error *e) {
    int rc;
    for (int z = 0; z <= (p->dp > 1 ? 3 : 0); z++) {
        if (!allowed(s, PP_PLAN_DIM_ZERO, z)) continue;
        if (s->zero_max >= 0 && z > s->zero_max) continue;
        if (p->dp > 1 && z < s->zero_min) continue;
        if (p->a2a_overlap && z >= 3) continue; /* not simulated */
        p->zero = z;
        if (!target_allows(s->target, p)) {
            reject(s, PP_PLAN_REJECT_TARGET);
            continue;
        }
        /* The number formats: bf16, FP8 where the stack and the GPU have
         * it (a pinned recipe or FP8 attention asks for FP8 alone), NVFP4
         * only when pinned (--fix dtype=fp4), then alone. */
        bool apin = s->filter && s->filter->fixed[PP_PLAN_DIM_FP8_ATTN] &&
                    s->filter->value[PP_PLAN_DIM_FP8_ATTN];
        bool rpin = apin || (s->filter && s->filter->fixed[PP_PLAN_DIM_FP8]);
        bool fp4 = s->filter && s->filter->fixed[PP_PLAN_DIM_DTYPE] &&
                   s->filter->value[PP_PLAN_DIM_DTYPE] == PP_PREC_FP4;
        static const pp_prec forms[] = {PP_PREC_BF16, PP_PREC_FP8, PP_PREC_FP4};
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
            pp_prec dt = forms[f];
            bool off = dt == PP_PREC_FP4   ? !fp4 || !s->fp4
                       : dt == PP_PREC_FP8 ? fp4 || !s->fp8
                                           : fp4 || rpin;
            if (off || !allowed(s, PP_PLAN_DIM_DTYPE, dt)) continue;
            p->dtype = dt;
            p->fp8 = dt == PP_PREC_FP8 && s->filter &&
                             s->filter->fixed[PP_PLAN_DIM_FP8]
                         ? (pp_fp8)s->filter->value[PP_PLAN_DIM_FP8]
                         : PP_FP8_AUTO;
            p->fp8_attn = apin && dt == PP_PREC_FP8;
            p->fp8_recipe = p->fp8 != PP_FP8_AUTO ? p->fp8 : s->fp8_recipe;
            p->fp8_transpose = !s->fp8_any_layout;
            for (int ov = 0; ov <= (p->dp > 1 ? 1 : 0); ov++) {
                if (!allowed(s, PP_PLAN_DIM_OVERLAP, ov)) continue;
                if ((rc = fn(ctx, p, ov != 0, e)) != 0) return rc;
            }
        }
    }
    return 0;
}

/* The recompute modules a candidate may carry (PP_RECOMP_* sets, 0 none
 * first): the pinned ones alone; else, where the stack was asked for and
 * offers them, for an MoE model the sets NVIDIA's MoE presets and
 * Megatron Bridge's guide start from (the norms, the experts'
 * activation, both, the MoE block), for a dense one the norms, the MLP
 * and both, and under MLA its up projections with them: between
 * recomputing nothing and the whole layer, what a
 * layout that almost fits needs.  A set costs the walk a memory check
 * where a set with one module fewer fits (visit_fn rejects it, cheaply),
 * an estimate only where none does. */
void pp__space_recompute_menu(pp__space *s) {
    const pp_plan_filter *f = s->filter;
    uint8_t *menu = s->recompute_menu;
    if (f && f->fixed[PP_PLAN_DIM_RECOMPUTE]) {
        menu[0] = pp__pin_mods(f->value[PP_PLAN_DIM_RECOMPUTE]);
        s->n_recompute_menu = 1;
        return;
    }
    /* Under MLA (pp_recompute_check drops these elsewhere) also its up
     * projections, alone and beside the norms (DeepSeek-V3's own choice,
     * report sec. 3.2.3) and the experts' activation. */
    enum {
        UP = PP_RECOMP_MLA_UP,
        LN = PP_RECOMP_LAYERNORM,
        ACT = PP_RECOMP_MOE_ACT
    };
    static const uint8_t moe[] = {
        LN, ACT,     LN | ACT,      PP_RECOMP_MOE, /* MLA: */
        UP, UP | LN, UP | LN | ACT, 0};
    static const uint8_t dense[] = {LN, PP_RECOMP_MLP, LN | PP_RECOMP_MLP,
                                    UP, UP | LN,       0};
    const uint8_t *sets = pp_model_is_moe(s->m) ? moe : dense;
    uint8_t offered = (uint8_t)(s->recompute_mask >> PP_STACK_RECOMP_MOD);
    size_t n = 0;
    menu[n++] = 0;
    for (size_t i = 0; sets[i]; i++)
        if ((sets[i] & offered) == sets[i] &&
            pp_recompute_check(s->m, PP_RECOMPUTE_NONE, sets[i], NULL) == 0)
            menu[n++] = sets[i];
    s->n_recompute_menu = n;
}

/* sp and recompute (its modules too), then walk_zero. */
static int walk_sp(const pp__space *s, pp_parallel *p, pp__space_fn fn,
                   void *ctx, pp_error *e) {
    int rc;
    /* The all-to-all overlap needs EP, and interleaving with a pipeline
     * (models/validate.c, a2a_check). */
    if (p->a2a_overlap && (p->ep <= 1 || (p->pp > 1 && p->vp <= 1))) return 0;
    for (int sp = 0; sp <= (p->tp > 1 ? 1 : 0); sp++) {
        if (!allowed(s, PP_PLAN_DIM_SP, sp)) continue;
        /* MoE with tp > 1 needs sp (models/moe.c): not generated. */
        if (!sp && p->tp > 1 && pp_model_is_moe(s->m)) continue;
        p->sp = sp;
        for (size_t k = 0; k < s->n_recompute_menu; k++) {
            uint8_t mods = s->recompute_menu[k];
            p->recompute_mods = mods;
            for (int r = PP_RECOMPUTE_NONE; r <= PP_RECOMPUTE_FULL; r++) {
                if (mods && r == PP_RECOMPUTE_FULL) continue;
                if (!allowed(s, PP_PLAN_DIM_RECOMPUTE,
                             pp__recompute_pin((pp_recompute)r, mods)))
                    continue;
                if (s->recompute_mask && !(s->recompute_mask & (1u << r)))
                    continue;
                if (p->offload > 0 && (r != PP_RECOMPUTE_NONE || mods))
                    continue;
                if (p->a2a_overlap &&
                    (r == PP_RECOMPUTE_FULL || mods & PP_RECOMP_MOE))
                    continue;
                p->recompute = (pp_recompute)r;
                if ((rc = walk_zero(s, p, fn, ctx, e)) != 0) return rc;
            }
        }
    }
    p->recompute_mods = 0;
    return 0;
}

/* The MoE all-to-all overlap (models/validate.c, a2a_check), then
 * walk_sp: pinned, every candidate has the pinned value; else, where the
 * stack offers it (moe.a2a_overlap: nemo-2025) and Megatron-core allows
 * it (EP, a pipeline only with interleaving, no offloading, no full
 * CUDA graph), both ways, ranked like any other choice. */
static int walk_inner(const pp__space *s, pp_parallel *p, pp__space_fn fn,
                      void *ctx, pp_error *e) {
    if (p->offload > 0 && p->pp > 1) return 0; /* no offload with pp */
    if (s->filter && s->filter->fixed[PP_PLAN_DIM_A2A])
        return walk_sp(s, p, fn, ctx, e);
    bool can = s->a2a && pp_model_is_moe(s->m) && p->ep > 1 &&
               (p->pp == 1 || p->vp > 1) && p->offload == 0;
    int rc = 0;
    for (int a = 0; a <= (can ? 1 : 0) && rc == 0; a++) {
        if (!allowed(s, PP_PLAN_DIM_A2A, a)) continue;
        p->a2a_overlap = a != 0;
        rc = walk_sp(s, p, fn, ctx, e);
    }
    p->a2a_overlap = false;
    return rc;
}

/* Expert parallelism for an MoE model (planner/space_moe.c), then the
 * inner dimensions. */
static int walk_experts(const pp__space *s, pp_parallel *p, pp__space_fn fn,
                        void *ctx, pp_error *e) {
    if (!pp_model_is_moe(s->m)) return walk_inner(s, p, fn, ctx, e);
    int64_t eps[MAXDIV], etps[2];
    size_t n_ep = pp__space_ep_degrees(s, p, eps, MAXDIV);
    size_t n_etp = pp__space_etp_degrees(s, p, etps);
    int rc;
    for (size_t i = 0; i < n_ep; i++)
        for (size_t j = 0; j < n_etp; j++) {
            int64_t etp = etps[j] ? etps[j] : p->tp;
            if ((p->tp * p->cp * p->dp) % (etp * eps[i]) != 0) {
                reject(s, PP_PLAN_REJECT_GPUS);
                continue;
            }
            p->ep = eps[i];
            p->etp = etps[j];
            if ((rc = walk_inner(s, p, fn, ctx, e)) != 0) return rc;
        }
    p->ep = 1;
    p->etp = 0;
    return 0;
}

/* Whether the exchange is pinned (--fix cp_comm, or cp_a2a, which pins
 * a2a+p2p). */
static bool cp_pinned(const pp__space *s) {
    const pp_plan_filter *f = s->filter;
    return f && (f->fixed[PP_PLAN_DIM_CP_COMM] || f->fixed[PP_PLAN_DIM_CP_A2A]);
}

/* Layout p's exchange, then walk_experts, where Transformer Engine runs
 * it for the model (pp_parallel_cp_comm_ok: a2a and a2a+p2p's all-to-all
 * need their ranks to divide each TP rank's heads, the ring refuses
 * sliding windows); a pinned one it does not run is a rejection, a
 * searched one is just not a candidate. */
static int walk_exchange(const pp__space *s, pp_parallel *p, pp__space_fn fn,
                         void *ctx, pp_error *e) {
    if (pp_parallel_cp_comm_ok(p, s->m)) return walk_experts(s, p, fn, ctx, e);
    if (cp_pinned(s)) reject(s, PP_PLAN_REJECT_PINNED);
    return 0;
}

/* a2a+p2p at each all-to-all level: the divisors of cp strictly between
 * 1 and cp (pinned: that one); the other exchanges once. */
static int walk_cp_levels(const pp__space *s, pp_parallel *p, pp__space_fn fn,
                          void *ctx, pp_error *e) {
    p->cp_a2a = 0;
    if (p->cp <= 1 || p->cp_comm != PP_CPCOMM_A2A_P2P)
        return walk_exchange(s, p, fn, ctx, e);
    int rc = 0;
    for (int64_t a = 2; a < p->cp && rc == 0; a++) {
        if (p->cp % a != 0 || !allowed(s, PP_PLAN_DIM_CP_A2A, a)) continue;
        p->cp_a2a = a;
        rc = walk_exchange(s, p, fn, ctx, e);
    }
    p->cp_a2a = 0;
    return rc;
}

/* How a CP layout's ranks exchange K/V, then walk_cp_levels: pinned, the
 * pinned way; else each of them, ranked like any other choice: the ring
 * hides its exchange behind the attention, all_gather exposes the same
 * bytes in fewer, larger kernels, a2a moves each rank's Q, K, V and
 * output once whatever cp, and a2a+p2p keeps the all-to-all on near
 * ranks and rings the rest; which wins depends on the layout
 * (sim/train/attn.c). */
static int walk_cp_comm(const pp__space *s, pp_parallel *p, pp__space_fn fn,
                        void *ctx, pp_error *e) {
    if (p->cp <= 1 && s->filter && s->filter->fixed[PP_PLAN_DIM_CP_A2A]) {
        reject(s, PP_PLAN_REJECT_PINNED); /* a level of no CP */
        return 0;
    }
    if (p->cp <= 1 || cp_pinned(s)) return walk_cp_levels(s, p, fn, ctx, e);
    int rc = 0;
    for (int c = 0; c < PP_CPCOMM__COUNT && rc == 0; c++) {
        if (!allowed(s, PP_PLAN_DIM_CP_COMM, c)) continue;
        p->cp_comm = (pp_cp_comm)c;
        rc = walk_cp_levels(s, p, fn, ctx, e);
    }
    p->cp_comm = PP_CPCOMM_P2P;
    return rc;
}

/* The units --uneven splits evenly over the pp x vp virtual stages
 * (accounted_layout): the layers with the embedding and the loss as one
 * each (Megatron-core's accounting), and for a model with multi-token
 * prediction the same with its MTP layers counted too.  Returns how many
 * counts (1 or 2) it wrote to units[]. */
static int unit_counts(const pp_model *m, int64_t units[2]) {
    units[0] = m->layers + 2;
    if (m->mtp_layers <= 0) return 1;
    units[1] = units[0] + m->mtp_layers;
    return 2;
}

/* Whether some unit count of m is divisible by n. */
bool pp__units_divide(const pp_model *m, int64_t n) {
    int64_t units[2];
    int k = unit_counts(m, units);
    for (int i = 0; i < k; i++)
        if (units[i] % n == 0) return true;
    return false;
}

/* Megatron-core's --account-for-embedding-in-pipeline-split and
 * --account-for-loss-in-pipeline-split: the embedding and the loss count
 * as a layer each, and the layers + 2 units split evenly over the pp x vp
 * virtual stages, so the first and the last hold one layer fewer (what
 * NVIDIA's Llama 3.1 405B recipes run at pp 8 x vp 8: 126 layers, 128
 * units); Megatron-core then puts the MTP block beside the loss, outside
 * the accounting.  Variant 1 (a model with MTP) counts the MTP layers as
 * units too, so the last virtual stage gives up one layer for each: the
 * split NVIDIA's DeepSeek-V3 recipes write out as a layout (Et|(tt|)*30mL
 * at pp 8 x vp 4, 64 units).  As a pipeline layout (layout=); false when
 * the units do not split evenly or leave the last stage too few layers. */
static bool accounted_layout(const pp_model *m, const pp_parallel *p,
                             int variant, pp_layout *l) {
    int64_t units[2];
    if (variant >= unit_counts(m, units)) return false;
    int64_t V = p->pp * p->vp;
    if (V < 2 || units[variant] % V != 0) return false;
    int32_t u = (int32_t)(units[variant] / V);
    int32_t last = u - 1 - (variant ? (int32_t)m->mtp_layers : 0);
    if (last < 0) return false;
    memset(l, 0, sizeof *l);
    l->stages = (int32_t)V;
    l->run[l->nrun++] = (pp_layout_run){1, u - 1};
    if (V > 2) l->run[l->nrun++] = (pp_layout_run){(int32_t)V - 2, u};
    l->run[l->nrun++] = (pp_layout_run){1, last};
    l->mtp = (int32_t)m->mtp_layers;
    return true;
}

/* The pipeline split for a given (tp, pp, dp, mbs, vp): the even one, and
 * with --uneven the first and last stages one or two chunks (vp layers
 * each) lighter or heavier, where the stages between can share the rest
 * evenly (Megatron-core's rule), and the split that counts the embedding
 * and the loss as layers (accounted_layout).  Pins of first= or last= are
 * tried whatever --uneven says, and alone. */
static int walk_split(const pp__space *s, pp_parallel *p, pp__space_fn fn,
                      void *ctx, pp_error *e) {
    const pp_plan_filter *f = s->filter;
    int64_t vals[2][5];
    int n[2];
    const pp_plan_dim dim[2] = {PP_PLAN_DIM_FIRST, PP_PLAN_DIM_LAST};
    bool split = p->pp > 1 && s->m->arch == PP_ARCH_TRANSFORMER;
    for (int k = 0; k < 2; k++) {
        n[k] = 1;
        vals[k][0] = 0;
        if (f && f->fixed[dim[k]]) {
            vals[k][0] = f->value[dim[k]];
        } else if (split && s->uneven) {
            int64_t even = s->m->layers / p->pp;
            const int64_t d[4] = {-2, -1, 1, 2};
            for (int i = 0; i < 4; i++)
                if (even + d[i] * p->vp > 0)
                    vals[k][n[k]++] = even + d[i] * p->vp;
        }
    }
    int rc;
    for (int i = 0; i < n[0]; i++) {
        for (int j = 0; j < n[1]; j++) {
            int64_t first = vals[0][i], last = vals[1][j];
            if (!allowed(s, PP_PLAN_DIM_FIRST, first)) continue;
            if (!allowed(s, PP_PLAN_DIM_LAST, last)) continue;
            p->first = first;
            p->last = last;
            if ((first || last) && pp_parallel_validate_split(p, s->m, NULL)) {
                reject(s, PP_PLAN_REJECT_SPLIT);
                continue;
            }
            /* The even split, where --uneven brought in a pp or vp that
             * only the layers + 2 units divide. */
            if (!first && !last && split &&
                s->m->layers % (p->pp * p->vp) != 0) {
                reject(s, PP_PLAN_REJECT_SPLIT);
                continue;
            }
            if ((rc = walk_cp_comm(s, p, fn, ctx, e)) != 0) return rc;
        }
    }
    p->first = p->last = 0;
    bool pinned =
        f && (f->fixed[PP_PLAN_DIM_FIRST] || f->fixed[PP_PLAN_DIM_LAST]);
    for (int variant = 0; split && s->uneven && !pinned && variant < 2;
         variant++) {
        if (!accounted_layout(s->m, p, variant, &p->layout)) continue;
        /* With vp 1 it is first = u - 1 and last = u - 1 (less the MTP
         * layers in variant 1): tried above when both were among the
         * first/last values. */
        int32_t lf = p->layout.run[0].layers,
                ll = p->layout.run[p->layout.nrun - 1].layers;
        bool df = false, dl = false;
        for (int i = 1; p->vp == 1 && i < n[0]; i++)
            df = df || (vals[0][i] == lf && lf > 0);
        for (int j = 1; p->vp == 1 && j < n[1]; j++)
            dl = dl || (vals[1][j] == ll && ll > 0);
        rc = 0;
        if (df && dl)
            ; /* already walked */
        else if (pp_parallel_validate_split(p, s->m, NULL))
            reject(s, PP_PLAN_REJECT_SPLIT);
        else
            rc = walk_cp_comm(s, p, fn, ctx, e);
        memset(&p->layout, 0, sizeof p->layout);
        if (rc != 0) return rc;
    }
    return 0;
}

/* The union of the ascending lists a[0..na) and b[0..nb) into a (room for
 * cap), ascending, without repeats.  Returns its length. */
static size_t merge_sorted(int64_t *a, size_t na, const int64_t *b, size_t nb,
                           size_t cap) {
    int64_t out[MAXDIV];
    size_t i = 0, j = 0, n = 0;
    while ((i < na || j < nb) && n < cap) {
        int64_t x = j >= nb || (i < na && a[i] <= b[j]) ? a[i] : b[j];
        if (i < na && a[i] == x) i++;
        if (j < nb && b[j] == x) j++;
        out[n++] = x;
    }
    memcpy(a, out, n * sizeof *a);
    return n;
}

/* mbs and vp for a given (tp, pp, dp). */
static int walk_batch(const pp__space *s, pp_parallel *p, pp__space_fn fn,
                      void *ctx, pp_error *e) {
    /* 1344 is the most divisors any number below 1e9 has. */
    int64_t mbs_list[MAXDIV], vp_list[MAXDIV];
    int64_t local = s->gbs / p->dp;
    size_t n_mbs = pp__divisors(local, mbs_list, MAXDIV);
    size_t n_vp = 1;
    vp_list[0] = 1;
    if (p->pp > 1 && s->m->arch == PP_ARCH_TRANSFORMER) {
        n_vp = pp__divisors(s->m->layers / p->pp, vp_list, MAXDIV);
        /* --uneven: also the vp that split the units evenly
         * (accounted_layout), in ascending order with the others. */
        int64_t units[2];
        int nu = s->uneven ? unit_counts(s->m, units) : 0;
        for (int k = 0; k < nu; k++) {
            int64_t more[MAXDIV];
            if (units[k] % p->pp != 0) continue;
            size_t n_more = pp__divisors(units[k] / p->pp, more, MAXDIV);
            n_vp = merge_sorted(vp_list, n_vp, more, n_more, MAXDIV);
        }
    }
    int rc;
    for (size_t i = 0; i < n_mbs; i++) {
        int64_t mbs = mbs_list[i];
        if (!allowed(s, PP_PLAN_DIM_MBS, mbs)) continue;
        p->mbs = mbs;
        int64_t nmb = local / mbs;
        for (size_t j = 0; j < n_vp; j++) {
            int64_t vp = vp_list[j];
            if (!allowed(s, PP_PLAN_DIM_VP, vp)) continue;
            if (vp > 1 && p->pp <= 2) {
                reject(s, PP_PLAN_REJECT_VP_PP);
                continue;
            }
            if (vp > 1 && nmb % p->pp != 0) {
                reject(s, PP_PLAN_REJECT_VP_MICROBATCHES);
                continue;
            }
            if (vp > 1 && s->target == PP_PLAN_TARGET_DEEPSPEED) {
                /* No interleaved schedule in DeepSpeed: rejected here,
                 * once per (mbs, vp), not once per inner layout. */
                reject(s, PP_PLAN_REJECT_TARGET);
                continue;
            }
            p->vp = vp;
            if ((rc = walk_split(s, p, fn, ctx, e)) != 0) return rc;
        }
    }
    return 0;
}

int pp__space_walk(const pp__space *s, pp__space_fn fn, void *ctx,
                   pp_error *e) {
    const pp_model *m = s->m;
    bool generic = m->arch != PP_ARCH_TRANSFORMER;
    int64_t limit = s->gpus > 0 ? s->gpus : s->cluster_gpus;
    int64_t *tps = pp_xmalloc(3 * MAXDIV * sizeof *tps);
    int64_t *pps = tps + MAXDIV, *dps = tps + 2 * MAXDIV;
    size_t n_tp = 1, n_pp = 1, n_dp;
    int rc = 0;

    tps[0] = pps[0] = 1;
    if (!generic) {
        n_tp = pp__divisors(m->heads, tps, MAXDIV);
        n_pp = pp__divisors(m->layers, pps, MAXDIV);
        /* --uneven: also the pp that split the units evenly (the
         * embedding and the loss, and MTP, counted as layers,
         * accounted_layout). */
        int64_t units[2];
        int nu = s->uneven ? unit_counts(m, units) : 0;
        for (int k = 0; k < nu; k++) {
            int64_t more[MAXDIV];
            size_t n_more = pp__divisors(units[k], more, MAXDIV);
            n_pp = merge_sorted(pps, n_pp, more, n_more, MAXDIV);
        }
    }
    n_dp = pp__divisors(s->gbs, dps, MAXDIV);
    int64_t cps[16];
    size_t n_cp = pp__space_cp_degrees(s, cps, 16);

    for (size_t i = 0; i < n_tp && rc == 0; i++) {
        int64_t tp = tps[i];
        if (tp > limit) break; /* no layout of this count has it */
        if (!allowed(s, PP_PLAN_DIM_TP, tp)) continue;
        if (!generic && m->kv_heads % tp != 0) {
            reject(s, PP_PLAN_REJECT_TP_KV_HEADS);
            continue;
        }
        if (!s->cross_node_tp &&
            (tp > s->gpus_per_node || s->gpus_per_node % tp != 0)) {
            reject(s, PP_PLAN_REJECT_TP_CROSS_NODE);
            continue;
        }
        for (size_t j = 0; j < n_pp && rc == 0; j++) {
            int64_t pp = pps[j];
            if (!allowed(s, PP_PLAN_DIM_PP, pp)) continue;
            for (size_t c = 0; c < n_cp && rc == 0; c++) {
                int64_t cp = cps[c];
                int64_t tpp = tp * pp * cp;
                if (s->gpus > 0) {
                    if (s->gpus % tpp != 0) {
                        reject(s, PP_PLAN_REJECT_GPUS);
                        continue;
                    }
                    int64_t dp = s->gpus / tpp;
                    if (!allowed(s, PP_PLAN_DIM_DP, dp)) continue;
                    if (s->gbs % dp != 0) {
                        reject(s, PP_PLAN_REJECT_BATCH);
                        continue;
                    }
                    pp_parallel p;
                    pp_parallel_init(&p);
                    p.tp = tp, p.pp = pp, p.dp = dp, p.gbs = s->gbs, p.cp = cp;
                    p.flash = s->flash;
                    pinned_choices(s, &p);
                    rc = walk_batch(s, &p, fn, ctx, e);
                    continue;
                }
                if (tpp > s->cluster_gpus) {
                    reject(s, PP_PLAN_REJECT_CLUSTER);
                    continue;
                }
                /* Every GPU count the batch suits: dp divides gbs. */
                for (size_t k = 0; k < n_dp && rc == 0; k++) {
                    int64_t dp = dps[k];
                    if (tpp * dp > s->cluster_gpus) {
                        reject(s, PP_PLAN_REJECT_CLUSTER);
                        break;
                    }
                    if (!allowed(s, PP_PLAN_DIM_DP, dp)) continue;
                    pp_parallel p;
                    pp_parallel_init(&p);
                    p.tp = tp, p.pp = pp, p.dp = dp, p.gbs = s->gbs, p.cp = cp;
                    p.flash = s->flash;
                    pinned_choices(s, &p);
                    rc = walk_batch(s, &p, fn, ctx, e);
                }
            }
        }
    }
    free(tps);
    return rc;
}
