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
 * i and et.
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

static void cp_ring(step *S, stage *st, const item *it) {
    int32_t p = st->p, cp = S->cp, dp = S->dp / cp;
    int32_t *g = S->grp;
    st->pending = dp * S->tp + 1;
    pp__step_enter(S, st, ST_COMPUTE);
    if (pp__sim_tracing(S->sim))
        for (int32_t k = 0; k < S->tp; k++)
            pp__sim_trace_span(S->sim, D(S, k, p, 0), it->label,
                               pp_sim_now(S->sim), pp_sim_now(S->sim) + it->t);
    pp_engine_after(S->eng, it->t, group_done_compute, S, ARG(K_GRP, p));
    /* Ring attention passes K/V to the next CP rank, cp - 1 times: a ring
     * all-gather's traffic, one channel. */
    for (int32_t d = 0; d < dp && !S->failed; d++)
        for (int32_t t = 0; t < S->tp && !S->failed; t++) {
            for (int32_t c = 0; c < cp; c++) g[c] = D(S, t, p, d * cp + c);
            pp__step_coll(S, (pp_coll_op)it->coll, PP_ALGO_RING, it->x, g,
                          (size_t)cp, 1, ARG(K_GRP, p));
        }
}

static void ep_alltoall(step *S, stage *st, const item *it) {
    int32_t p = st->p, tp = S->tp;
    int32_t ep = S->par->ep > 1 ? (int32_t)S->par->ep : 1;
    int32_t etp = (int32_t)pp_parallel_etp(S->par);
    int32_t ranks = S->dp * tp, groups = ranks / (ep * etp);
    int32_t *g = S->grp;
    pp__step_enter(S, st, ST_EP);
    st->pending = groups * etp;
    for (int32_t i = 0; i < groups && !S->failed; i++)
        for (int32_t et = 0; et < etp && !S->failed; et++) {
            for (int32_t e = 0; e < ep; e++) {
                int32_t u = (i * ep + e) * etp + et;
                g[e] = D(S, u % tp, p, u / tp);
            }
            pp__step_coll(S, PP_COLL_ALLTOALL, PP_ALGO_RING, it->x, g,
                          (size_t)ep, 1, ARG(K_GRP, p));
        }
}

void pp__step_group_coll(step *S, stage *st, const item *it) {
    if (it->grp == PP__GRP_CP)
        cp_ring(S, st, it);
    else
        ep_alltoall(S, st, it);
}
