/*
 * models/moe.c: mixture-of-experts layers: which layers have experts, and
 * their parameters (total, active, and the routed-expert part that expert
 * parallelism splits).
 *
 * Sources: Shazeer et al. 2017 (sparsely gated MoE, top-k routing);
 * Fedus et al. 2022 (Switch Transformer: capacity factor, expert
 * parallelism); Jiang et al. 2024 (Mixtral of Experts: 8 experts, top 2,
 * SwiGLU experts, 46.7B total / 12.9B active); DeepSeek-AI 2024,
 * "DeepSeek-V3 Technical Report" (1 shared + 256 routed experts, top 8,
 * the first 3 layers dense; HF modeling_deepseek.py: layer i is MoE when
 * i >= first_k_dense_replace and i % moe_layer_freq == 0).
 *
 * An expert is an FFN of expert_ffn_hidden (SwiGLU: gate, up, down, as in
 * both models above); the router is one h x experts matrix without bias.
 */
#include <math.h>

#include "models_int.h"

bool pp_model_is_moe(const pp_model *m) {
    return m->arch == PP_ARCH_TRANSFORMER && m->experts > 0;
}

bool pp_model_layer_is_moe(const pp_model *m, int64_t layer) {
    if (!pp_model_is_moe(m) || layer < m->first_dense_layers) return false;
    int64_t f = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
    return layer % f == 0;
}

int64_t pp_model_moe_layers(const pp_model *m) {
    int64_t n = 0;
    for (int64_t i = 0; i < m->layers && pp_model_is_moe(m); i++)
        n += pp_model_layer_is_moe(m, i);
    return n;
}

double pp__mlp_params(const pp_model *m, double f) {
    double h = (double)m->hidden;
    bool llama = m->ffn == PP_FFN_SWIGLU;
    double p = llama ? 3.0 * h * f : 2.0 * h * f;
    if (m->bias) p += (llama ? 2.0 * f : f) + h;
    return p;
}

double pp__expert_params_at(const pp_model *m, int64_t layer) {
    if (!pp_model_layer_is_moe(m, layer)) return 0;
    return (double)m->experts * pp__mlp_params(m, (double)m->expert_ffn_hidden);
}

/* The dense layer with its FFN replaced by the router, the shared experts
 * and `n_routed` routed experts. */
static double moe_layer(const pp_model *m, double n_routed) {
    double fe = (double)m->expert_ffn_hidden;
    return pp__layer_params(m) - pp__mlp_params(m, (double)m->ffn_hidden) +
           (double)m->hidden * (double)m->experts +
           ((double)m->shared_experts + n_routed) * pp__mlp_params(m, fe);
}

double pp__layer_params_at(const pp_model *m, int64_t layer) {
    if (!pp_model_layer_is_moe(m, layer)) return pp__layer_params(m);
    return moe_layer(m, (double)m->experts);
}

double pp__layers_params(const pp_model *m, int64_t from, int64_t n) {
    if (!pp_model_is_moe(m)) return (double)n * pp__layer_params(m);
    double p = 0;
    for (int64_t i = from; i < from + n; i++) p += pp__layer_params_at(m, i);
    return p;
}

double pp_model_active_params(const pp_model *m) {
    double total = pp_model_params(m);
    if (!pp_model_is_moe(m)) return total;
    double idle = (double)(m->experts - m->top_k) *
                  pp__mlp_params(m, (double)m->expert_ffn_hidden);
    return total - (double)pp_model_moe_layers(m) * idle;
}

/* ------------------------------------------------------------------------
 * Context and expert parallelism: Megatron-core's rules
 * (megatron/training/arguments.py, validate_args; core/parallel_state.py,
 * initialize_model_parallel, which orders ranks tp-cp-ep-dp-pp and builds
 * the expert groups from the tp x cp x dp ranks of a stage as
 * etp-ep-edp).
 * ---------------------------------------------------------------------- */
/* C(n - j, k) / C(n, k): none of k draws without replacement from n
 * lands among j marked items. */
static double miss(double n, double j, double k) {
    if (n - j < k) return 0;
    double p = 1;
    for (double i = 0; i < k; i++) p *= (n - j - i) / (n - i);
    return p;
}

/* A token draws its top_k experts from the population of its groups,
 * N = group_top_k x (experts / expert_groups); a slice is hit unless all
 * k land elsewhere.  A slice inside one group is in the population with
 * probability M/G (all b of its experts); a slice holding r whole groups
 * holds i of the chosen M with the hypergeometric probability, i.e. i q
 * experts of the population. */
pp_moe_local pp_moe_local_experts(const pp_model *m, const pp_parallel *p) {
    double cp = p->cp > 1 ? (double)p->cp : 1.0;
    double ep = p->ep > 1 ? (double)p->ep : 1.0;
    double cf = m->capacity_factor > 0 ? m->capacity_factor : 1.0;
    double etp = (double)pp_parallel_etp(p);
    pp_moe_local x;
    x.tokens = (double)m->seq / cp * (double)p->mbs / (double)p->tp;
    x.groups = (double)m->experts / ep;
    if (!(x.groups >= 1.0)) x.groups = 1.0;
    x.routed = x.tokens * (double)m->top_k * cf * etp;
    x.rows = x.routed / x.groups;
    x.width = (double)m->expert_ffn_hidden / etp;
    return x;
}

double pp_model_moe_spread(const pp_model *m, int64_t bins) {
    double E = (double)m->experts, k = (double)m->top_k;
    double G = m->expert_groups > 0 ? (double)m->expert_groups : 1;
    double M = m->group_top_k > 0 ? (double)m->group_top_k : 1;
    double b = E / (double)bins, q = E / G;
    if (fmod(q, b) != 0 && fmod(b, q) != 0) G = M = 1, q = E;
    double N = M * q;
    if (b <= q) return (double)bins * (M / G) * (1.0 - miss(N, b, k));
    double r = b / q, hit = 0;
    /* lgamma keeps C(G, M) finite for any group count */
    double lc = lgamma(G + 1) - lgamma(M + 1) - lgamma(G - M + 1);
    for (double i = fmax(0, M - (G - r)); i <= fmin(r, M); i++) {
        double lp = lgamma(r + 1) - lgamma(i + 1) - lgamma(r - i + 1) +
                    lgamma(G - r + 1) - lgamma(M - i + 1) -
                    lgamma(G - r - M + i + 1) - lc;
        hit += exp(lp) * (1.0 - miss(N, i * q, k));
    }
    return (double)bins * hit;
}

/* A TP rank's query heads and K/V heads (K/V heads fewer than tp are
 * replicated: one each). */
static void tp_rank_heads(const pp_parallel *p, const pp_model *m, int64_t *hq,
                          int64_t *hkv) {
    int64_t kv = m->kv_heads > 0 ? m->kv_heads : m->heads;
    *hq = m->heads / p->tp;
    *hkv = kv >= p->tp ? kv / p->tp : 1;
}

int64_t pp_parallel_cp_a2a(const pp_parallel *p) {
    if (p->cp <= 1) return 1;
    return p->cp_comm == PP_CPCOMM_A2A       ? p->cp
           : p->cp_comm == PP_CPCOMM_A2A_P2P ? (p->cp_a2a > 1 ? p->cp_a2a : 1)
                                             : 1;
}

int64_t pp_parallel_cp_ring(const pp_parallel *p) {
    if (p->cp <= 1) return 1;
    return p->cp_comm == PP_CPCOMM_P2P       ? p->cp
           : p->cp_comm == PP_CPCOMM_A2A_P2P ? p->cp / pp_parallel_cp_a2a(p)
                                             : 1;
}

/* Whether layout p runs the ring on a model with sliding windows, which
 * Transformer Engine's ring does not do. */
static bool ring_meets_window(const pp_parallel *p, const pp_model *m) {
    return pp_parallel_cp_ring(p) > 1 && pp_model_window_share(m) > 0;
}

bool pp_parallel_cp_comm_ok(const pp_parallel *p, const pp_model *m) {
    if (p->cp <= 1 || p->cp_comm == PP_CPCOMM_ALL_GATHER) return true;
    if (ring_meets_window(p, m)) return false;
    int64_t hq, hkv, a = pp_parallel_cp_a2a(p);
    tp_rank_heads(p, m, &hq, &hkv);
    return hq % a == 0 && hkv % a == 0;
}

/* cp_a2a's own rules: only with a2a+p2p, which needs it, a divisor of cp
 * strictly between 1 and cp (Megatron-core's hierarchical sizes multiply
 * to cp; at 1 or cp one level is empty: p2p or a2a). */
static int cp_levels_check(const pp_parallel *p, const char *pre, pp_error *e) {
    bool h = p->cp > 1 && p->cp_comm == PP_CPCOMM_A2A_P2P;
    if (p->cp_a2a > 0 && !h)
        return pp_error_set(
            e, PP_EINPUT,
            "%scp_a2a: the all-to-all level of "
            "cp_comm=a2a+p2p (with cp > 1), not of %s",
            pre,
            p->cp > 1 ? pp_registry_name(&pp_reg_cp_comm, (int)p->cp_comm)
                      : "a layout without cp");
    if (!h) return 0;
    if (p->cp_a2a == 0)
        return pp_error_set(e, PP_EINPUT,
                            "%scp_comm: a2a+p2p needs cp_a2a=N, the ranks of "
                            "its all-to-all level (Megatron-core's "
                            "--hierarchical-context-parallel-sizes N cp/N)",
                            pre);
    if (p->cp_a2a <= 1 || p->cp_a2a >= p->cp || p->cp % p->cp_a2a != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%scp_a2a: expected a divisor of cp (%lld) "
                            "between 1 and cp, exclusive, got %lld",
                            pre, (long long)p->cp, (long long)p->cp_a2a);
    return 0;
}

int pp__parallel_validate_cp_ep(const pp_parallel *p, const pp_model *m,
                                const char *pre, pp_error *e) {
    int64_t etp = pp_parallel_etp(p);
    int64_t cp = p->cp > 1 ? p->cp : 1, ep = p->ep > 1 ? p->ep : 1;
    /* Causal load balancing splits the sequence into 2 cp chunks, rank i
     * holding chunks i and 2cp - 1 - i (Megatron-core's
     * get_batch_on_this_cp_rank). */
    if (cp > 1 && m->seq % (2 * cp) != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%scp: seq (%lld) of model %s is not divisible "
                            "by 2 * cp (%lld)",
                            pre, (long long)m->seq, m->name,
                            (long long)(2 * cp));
    int rc = cp_levels_check(p, pre, e);
    if (rc < 0) return rc;
    if (!pp_parallel_cp_comm_ok(p, m)) {
        const char *how = pp_registry_name(&pp_reg_cp_comm, (int)p->cp_comm);
        if (ring_meets_window(p, m))
            return pp_error_set(e, PP_EINPUT,
                                "%scp_comm: model %s has sliding-window "
                                "layers, which Transformer Engine's ring "
                                "(%s%s) does not run; all_gather or a2a",
                                pre, m->name, how,
                                p->cp_comm == PP_CPCOMM_P2P ? ", the default"
                                                            : "");
        int64_t hq, hkv;
        tp_rank_heads(p, m, &hq, &hkv);
        return pp_error_set(e, PP_EINPUT,
                            "%scp_comm: %s splits each TP rank's heads "
                            "over %s (%lld): model %s has %lld query and "
                            "%lld K/V heads per TP rank (tp %lld); "
                            "p2p or all_gather split the sequence",
                            pre, how,
                            p->cp_comm == PP_CPCOMM_A2A ? "cp" : "cp_a2a",
                            (long long)pp_parallel_cp_a2a(p), m->name,
                            (long long)hq, (long long)hkv, (long long)p->tp);
    }
    if (!pp_model_is_moe(m)) {
        if (ep > 1 || p->etp > 0)
            return pp_error_set(e, PP_EINPUT,
                                "%s%s: model %s has no experts (expert "
                                "parallelism needs an MoE model)",
                                pre, ep > 1 ? "ep" : "etp", m->name);
        if (p->graphs & (PP_GRAPH_MOE_ROUTER | PP_GRAPH_MOE))
            return pp_error_set(
                e, PP_EINPUT, "%sgraphs: %s: model %s has no experts", pre,
                p->graphs & PP_GRAPH_MOE ? "moe" : "moe_router", m->name);
        if (p->rank_capacity > 0)
            return pp_error_set(e, PP_EINPUT,
                                "%srank_capacity: model %s has no experts", pre,
                                m->name);
        return 0;
    }
    /* A dropless MoE layer's token counts reach the host every forward
     * (the dispatch's split sizes), which a graph of the whole iteration
     * cannot replay.  With a capacity factor podplan pads every expert's
     * input to its capacity (drop-and-pad): the shapes are static and
     * Megatron-core captures the MoE layers too ("when
     * --moe-expert-capacity-factor and --moe-pad-expert-input-to-capacity
     * are not set, the resulting dynamic shapes make MoE layers
     * uncapturable": megatron/core/transformer/moe/README.md); so does a
     * rank capacity, dropless ("expert dispatch shapes become static
     * (pre-sized via --moe-expert-rank-capacity-factor), which allows
     * full-iteration CUDA graphs to be used on MoE models as well":
     * Megatron-LM's CUDA graph documentation). */
    if (p->graphs & (PP_GRAPH_FULL | PP_GRAPH_MOE) &&
        !(m->capacity_factor > 0) && !(p->rank_capacity > 0))
        return pp_error_set(e, PP_EINPUT,
                            "%sgraphs: %s: model %s routes dropless (its "
                            "token counts reach the host each forward); "
                            "graph scopes attn, moe_router, moe_preprocess "
                            "instead, or a capacity_factor (drop-and-pad), "
                            "or dispatcher=hybridep with rank_capacity",
                            pre, p->graphs & PP_GRAPH_FULL ? "full" : "moe",
                            m->name);
    /* The combined 1F1B schedule runs the MoE sublayer in pieces around
     * its all-to-alls (Megatron-core's fine_grained_callables.py asserts
     * "Supported CUDA graph scope with EP overlap: attn, moe_router,
     * moe_preprocess, mlp"). */
    if (p->graphs & PP_GRAPH_MOE && p->a2a_overlap)
        return pp_error_set(e, PP_EINPUT,
                            "%sgraphs: moe: not with a2a_overlap=on (the "
                            "overlapped schedule splits the MoE sublayer "
                            "around its all-to-alls); moe_router and "
                            "moe_preprocess instead",
                            pre);
    /* Megatron-core sizes HybridEP's (and NCCL-EP's) buffers by it; the
     * per-expert capacity is another mechanism, and podplan prices one
     * or the other. */
    if (p->rank_capacity > 0 && !p->hybridep)
        return pp_error_set(e, PP_EINPUT,
                            "%srank_capacity: needs dispatcher=hybridep "
                            "(Megatron-core sizes HybridEP's buffers by it)",
                            pre);
    if (p->rank_capacity > 0 && m->capacity_factor > 0)
        return pp_error_set(e, PP_EINPUT,
                            "%srank_capacity: not with model %s's "
                            "capacity_factor (drop-and-pad already fixes "
                            "the shapes)",
                            pre, m->name);
    if (m->experts % ep != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%sep: %lld does not divide the %lld experts "
                            "of model %s",
                            pre, (long long)ep, (long long)m->experts, m->name);
    if (m->expert_ffn_hidden % etp != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%setp: %lld does not divide expert_ffn_hidden "
                            "(%lld) of model %s",
                            pre, (long long)etp,
                            (long long)m->expert_ffn_hidden, m->name);
    /* The expert groups tile the tp x cp x dp ranks of a stage. */
    int64_t dense = p->tp * cp * p->dp;
    if (dense % (etp * ep) != 0)
        return pp_error_set(e, PP_EINPUT,
                            "%sep: etp x ep (%lld x %lld) does not divide "
                            "tp x cp x dp (%lld)",
                            pre, (long long)etp, (long long)ep,
                            (long long)dense);
    /* Megatron-core: "When using MoE with tensor parallelism, sequence
     * parallelism must be used" (validate_args). */
    if (p->tp > 1 && !p->sp)
        return pp_error_set(e, PP_EINPUT,
                            "%ssp: an MoE model with tp > 1 needs sequence "
                            "parallelism (sp=on), as Megatron-core requires",
                            pre);
    return 0;
}

/* ------------------------------------------------------------------------
 * Memory (models/memory.c calls these).
 * ---------------------------------------------------------------------- */
double pp__stage_params_moe(const pp_model *m, const pp_parallel *p,
                            int64_t stage, double *experts) {
    /* The stage's layers chunk by chunk: with vp > 1 they are not one
     * run of the model (chunk c holds virtual stage c pp + stage), and
     * which of them are dense (DeepSeek-V3's first three) depends on it. */
    double all = 0, routed = 0, nl = 0;
    int64_t chunks = p->pp > 1 ? p->vp : 1;
    for (int64_t c = 0; c < chunks; c++) {
        int64_t v = c * p->pp + stage;
        int64_t first = p->pp > 1 ? pp_parallel_chunk_first(p, m, v) : 0;
        int64_t n = p->pp > 1 ? pp_parallel_chunk_layers(p, m, v) : m->layers;
        all += pp__layers_params(m, first, n);
        nl += (double)n;
        for (int64_t i = first; i < first + n; i++)
            routed += pp__expert_params_at(m, i);
    }
    double ends = 0;
    if (p->pp <= 1)
        ends = pp_model_params(m) - pp__layers_params(m, 0, m->layers);
    else if (stage == 0 || stage == p->pp - 1)
        ends = pp__embedding_params(m);
    /* The MTP modules (their experts split as any layer's) and, with a
     * pipeline, the last stage's copy of the word table for them. */
    if (m->mtp_layers && stage == (p->pp > 1 ? p->pp - 1 : 0)) {
        double mr, mall = pp__mtp_params(m, &mr);
        all += mall;
        routed += mr;
        nl += (double)m->mtp_layers;
        if (p->pp > 1) ends += (double)m->vocab * (double)m->hidden;
    }
    double ep = p->ep > 1 ? (double)p->ep : 1.0;
    double mine = routed / (ep * (double)pp_parallel_etp(p));
    if (experts) *experts = mine;
    return (all - routed + ends) / (double)p->tp + mine +
           pp__attn_replicated_extra(m, nl, (double)p->tp);
}

double pp__moe_shard(const pp_model *m, const pp_parallel *p, int64_t stage) {
    double cp = p->cp > 1 ? (double)p->cp : 1.0;
    if (!pp_model_is_moe(m)) return cp;
    double routed, all = pp__stage_params_moe(m, p, stage, &routed);
    if (!(all > 0)) return cp;
    /* Expert data parallelism: tp cp dp / (etp ep) ranks hold the same
     * experts; over dp that is the factor below. */
    double ep = p->ep > 1 ? (double)p->ep : 1.0;
    double edp_over_dp = (double)p->tp * cp / ((double)pp_parallel_etp(p) * ep);
    /* One divisor for the sum: all / (dense / cp + routed / edp_over_dp). */
    return all / ((all - routed) / cp + routed / edp_over_dp);
}

/* Korthikanti et al. 2022's 34 s b h per layer has 19 in the MLP (4h
 * wide): 4 for its input norm and dropout, 15 that scale with the FFN's
 * width and with the tokens going through it.  An MoE layer sends each
 * token through top_k routed and the shared experts of expert_ffn_hidden
 * (padded to capacity_factor when set), so those 15 scale by
 * (top_k (cf) + shared) fe / (4h); the dispatched copies of the input
 * (top_k s b h, twice: dispatch and combine buffers) are added.  Averaged
 * over the model's layers.  With full recompute only the layer inputs are
 * kept between passes, which MoE does not change (p->recompute FULL: 1). */
double pp__moe_glu_clamp_saved(const pp_model *m) {
    if (!(m->glu_clamp > 0)) return 0;
    double cf = m->capacity_factor > 0 ? m->capacity_factor : 1.0;
    return 4.0 * (double)m->top_k * cf * (double)m->expert_ffn_hidden /
           (double)m->hidden;
}

double pp__moe_act_factor(const pp_model *m, const pp_parallel *p) {
    if (!pp_model_is_moe(m)) return 1.0;
    if (p && p->recompute == PP_RECOMPUTE_FULL) return 1.0;
    double h = (double)m->hidden, fe = (double)m->expert_ffn_hidden;
    double cf = m->capacity_factor > 0 ? m->capacity_factor : 1.0;
    double k = (double)m->top_k * cf + (double)m->shared_experts;
    double moe =
        34.0 - 15.0 + 15.0 * k * fe / (4.0 * h) + 2.0 * (double)m->top_k * cf;
    /* glu_clamp: the activation keeps the clamped, concatenated copy of
     * fc1's output it computed from (2 fe 16-bit elements a routed row). */
    moe += pp__moe_glu_clamp_saved(m);
    double frac = (double)pp_model_moe_layers(m) / (double)m->layers;
    return 1.0 + frac * (moe / 34.0 - 1.0);
}
