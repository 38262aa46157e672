/*
 * sim/train/step_group.c: the collectives of context and expert
 * parallelism in a simulated iteration (step.c runs the rest).
 *
 * Ranks.  A stage's tp x cp x dp GPUs are numbered as Megatron-core
 * numbers them (parallel_state.py: tp innermost, then cp, then dp):
 * u = (d cp + c) tp + t, i.e. u = d' tp + t for the simulation's replica
 * d' = d cp + c (step_state.h).  A CP group is the cp ranks with the same
 * t and d; the expert groups tile the same ranks as etp-ep-edp
 * (u = (i ep + e) etp + et): an EP group is the ep ranks with the same
 * i and et, an expert data-parallel group (the experts' gradients) the
 * edp ranks with the same e and et.
 *
 * Unlike TP collectives, which step.c repeats only for the replicas that
 * can contend with replica 0's, every group of the stage runs here: an
 * all-to-all over ep ranks spread over several servers contends with all
 * the others on the fabric, and that contention is the point.  The stage
 * waits for the slowest group, as the next layer's all-to-all would.
 */
#include "sim_run.h"
#include "step_state.h"

static void group_done_compute(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    step *S = ctx;
    /* The overlapped attention is done; whatever is left of the exchange
     * is exposed. */
    if (!S->failed) pp__step_overlap_end(S, &S->st[ARG_I(arg)], ST_CP);
}

/* A CP collective on every CP group of stage st: the whole CP group, or
 * under cp_comm=a2a+p2p one of Megatron-core's hierarchical levels
 * (parallel_state.py, create_hierarchical_parallel_groups): the first,
 * cp_a2a consecutive CP ranks, runs the all-to-alls (PP__GRP_CPA); the
 * second, the ranks cp_a2a apart, the ring (PP__GRP_CP). */
static void cp_ring(step *S, stage *st, const item *it) {
    int32_t p = st->p, cp = S->cp, dp = S->dp / cp, a = S->cp_a2a;
    bool inner = it->grp == PP__GRP_CPA;
    int32_t n = inner ? a : cp / a, stride = inner ? 1 : a, groups = cp / n;
    int32_t *g = S->grp;
    st->pending = dp * S->tp * groups + 1;
    pp__step_enter(S, st, ST_COMPUTE);
    if (pp__sim_tracing(S->sim))
        for (int32_t k = 0; k < S->tp; k++)
            pp__sim_trace_span(S->sim, D(S, k, p, 0), it->label,
                               pp_sim_now(S->sim), pp_sim_now(S->sim) + it->t);
    pp_engine_after(S->eng, it->t, group_done_compute, S, ARG(K_GRP, p));
    /* Ring attention passes K/V to the next rank of the ring, n - 1
     * times: a ring all-gather's traffic, one channel (the exposed
     * exchanges run theirs likewise). */
    for (int32_t d = 0; d < dp && !S->failed; d++)
        for (int32_t t = 0; t < S->tp && !S->failed; t++)
            for (int32_t j = 0; j < groups && !S->failed; j++) {
                int32_t base = d * cp + (inner ? j * n : j);
                for (int32_t c = 0; c < n; c++)
                    g[c] = D(S, t, p, base + c * stride);
                pp__step_coll(S, (pp_coll_op)it->coll, PP_ALGO_RING, it->x, g,
                              (size_t)n, 1, ARG(K_GRP, p));
            }
}

/* Servers an EP group spans when its members fill them in order, the same
 * number on each (DeepEP's layout); 0 otherwise. */
static int32_t group_servers(const step *S, const int32_t *g, int32_t ep) {
    const pp_device *dv = pp_cluster_devices(S->c, NULL);
    int32_t per = 1;
    while (per < ep && dv[g[per]].node == dv[g[0]].node) per++;
    if (per == ep) return 1;
    if (ep % per) return 0;
    for (int32_t e = 1; e < ep; e++) {
        bool same = dv[g[e]].node == dv[g[e - 1]].node;
        if (same != (e % per != 0)) return 0;
    }
    return ep / per;
}

/* DeepEP's dispatch (and combine, reversed) for one EP group over m
 * servers of n = ep/m members: a token crosses the network once per
 * other server holding one of its experts, to the member with its own
 * local index, which forwards it over NVLink to the members holding its
 * experts.  Each member sends c D_node (m-1)/m bytes to its peers of the
 * same index (one all-to-all per index) and c D_rank (n-1)/n to the
 * others of its server (one per server), all at once, c being one
 * token copy's bytes and D the routing spread (pp_model_moe_spread)
 * over servers and over ranks.  With m = 1 only the second part runs:
 * DeepEP's intranode kernels send a token once to each rank holding one
 * of its experts (get_dispatch_layout's is_token_in_rank), not once per
 * expert.  Returns the collectives started. */
static int32_t deepep(step *S, int32_t *g, int32_t ep, int32_t m,
                      double bytes, uint64_t arg) {
    const pp_model *mo = S->m;
    int32_t n = ep / m, started = 0;
    int32_t *sub = g + ep; /* S->grp has room for two groups */
    double c = bytes / (double)mo->top_k;
    double net = c * pp_model_moe_spread(mo, m);
    double nvl = c * pp_model_moe_spread(mo, ep);
    for (int32_t l = 0; l < n && m > 1 && !S->failed; l++) {
        for (int32_t s = 0; s < m; s++) sub[s] = g[s * n + l];
        pp__step_coll(S, PP_COLL_ALLTOALL, PP_ALGO_RING, net, sub, (size_t)m,
                      1, arg);
        started++;
    }
    for (int32_t s = 0; s < m && n > 1 && !S->failed; s++) {
        pp__step_coll(S, PP_COLL_ALLTOALL, PP_ALGO_RING, nvl, g + s * n,
                      (size_t)n, 1, arg);
        started++;
    }
    return started;
}

/* Starts the all-to-all of `bytes` per rank on every EP group of stage
 * st, each collective ending with on_sim(arg); returns how many. */
static int32_t ep_start(step *S, stage *st, double bytes, uint64_t arg) {
    int32_t p = st->p, tp = S->tp, started = 0;
    int32_t ep = S->par->ep > 1 ? (int32_t)S->par->ep : 1;
    int32_t etp = (int32_t)pp_parallel_etp(S->par);
    int32_t ranks = S->dp * tp, groups = ranks / (ep * etp);
    int32_t *g = S->grp;
    for (int32_t i = 0; i < groups && !S->failed; i++)
        for (int32_t et = 0; et < etp && !S->failed; et++) {
            for (int32_t e = 0; e < ep; e++) {
                int32_t u = (i * ep + e) * etp + et;
                g[e] = D(S, u % tp, p, u / tp);
            }
            int32_t m = S->par->deepep ? group_servers(S, g, ep) : 0;
            if (m >= 1) {
                started += deepep(S, g, ep, m, bytes, arg);
            } else {
                started++;
                pp__step_coll(S, PP_COLL_ALLTOALL, PP_ALGO_RING, bytes, g,
                              (size_t)ep, 1, arg);
            }
        }
    return started;
}

static void ep_alltoall(step *S, stage *st, const item *it) {
    pp__step_enter(S, st, ST_EP);
    /* Counted up as they start, plus one so that none can finish the
     * stage's wait before all are out. */
    st->pending = 1;
    st->pending += ep_start(S, st, it->x, ARG(K_GRP, st->p));
    if (--st->pending == 0 && !S->failed) { /* all done already */
        pp__step_enter(S, st, ST_IDLE);
        pp__step_run(S, st);
    }
}

void pp__step_ep_async(step *S, stage *st, const item *it) {
    st->ep_async = 1;
    st->ep_async += ep_start(S, st, it->x, ARG(K_EPA, st->p));
    if (!S->failed) pp__step_ep_async_done(S, st);
}

void pp__step_ep_async_done(step *S, stage *st) {
    if (--st->ep_async > 0) return;
    pp__step_comm_changed(S, st);
    if (!st->ep_waiting) return;
    st->ep_waiting = false;
    pp__step_enter(S, st, ST_IDLE);
    pp__step_run(S, st);
}

size_t pp__step_dp_group(const step *S, int32_t p, int q, int32_t j,
                         int32_t *g) {
    if (q == DPQ_DENSE) {
        for (int32_t d = 0; d < S->dp; d++) g[d] = D(S, j, p, d);
        return (size_t)S->dp;
    }
    /* The etp-ep-edp tiling above: slice (e, et) is held by the ranks
     * u = (i ep + e) etp + et, one per i. */
    int32_t etp = (int32_t)pp_parallel_etp(S->par), ep = S->n_edp / etp;
    int32_t e = j / etp, et = j % etp;
    for (int32_t i = 0; i < S->edp; i++) {
        int32_t u = (i * ep + e) * etp + et;
        g[i] = D(S, u % S->tp, p, u / S->tp);
    }
    return (size_t)S->edp;
}

void pp__step_group_coll(step *S, stage *st, const item *it) {
    if (it->grp == PP__GRP_CP || it->grp == PP__GRP_CPA)
        cp_ring(S, st, it);
    else
        ep_alltoall(S, st, it);
}
