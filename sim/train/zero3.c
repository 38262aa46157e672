/*
 * sim/train/zero3.c: ZeRO-3 / FSDP as the stacks that implement it run it
 * (DeepSpeed's stage3.py, PyTorch FSDP2's fully_shard; Zhao et al. 2023,
 * "PyTorch FSDP", sec. 3-4).
 *
 * Each GPU keeps 1/dp of every layer's weights.  Before a layer runs, in
 * the forward and again in the backward (the weights were freed after
 * the forward: reshard_after_forward; a recomputation runs inside that
 * backward gather), its full weights are all-gathered over the DP group,
 * one collective per TP rank on the real network, so they contend with
 * the pipeline's sends and the gradient reduce-scatters.  A stack that
 * overlaps (zero.overlap: its own CUDA stream) issues the gathers of the
 * next `zero.prefetch_layers` layers while the current one computes; one
 * that does not waits for each gather where it is needed.  The first
 * layer of every pass waits: nothing prefetches across micro-batches.
 * The gradients are reduce-scattered in the stack's DP buckets after
 * every backward (step.c, mb_reduce); a stack that overlaps lets the next
 * task start before they finish.
 *
 * A stack whose zero.max_stage is below 3 has no such implementation:
 * zero=3 there keeps the older model of one exposed gather of a chunk's
 * weights per pass (step.c, zero3_gather), so layouts that simulated
 * before stacks existed give the same figures.
 */
#include <stdlib.h>
#include <string.h>

#include "step_state.h"

/* The gather items of a program, in order: an index per IT_ZG. */
static int32_t count_zg(const program *pr) {
    int32_t n = 0;
    for (size_t i = 0; i < pr->n; i++)
        if (pr->it[i].kind == IT_ZG) n++;
    return n;
}

/* The bytes of gather j of the running program. */
static double zg_bytes(const stage *st, int32_t j) {
    int32_t k = 0;
    for (size_t i = 0; i < st->prog->n; i++)
        if (st->prog->it[i].kind == IT_ZG && k++ == j)
            return st->prog->it[i].x * PP_PARAM_GATHER_BYTES;
    return 0;
}

static void issue(step *S, stage *st, int32_t j) {
    st->zpend[j] = S->tp;
    double bytes = zg_bytes(st, j);
    for (int32_t t = 0; t < S->tp && !S->failed; t++) {
        for (int32_t d = 0; d < S->dp; d++) S->grp[d] = D(S, t, st->p, d);
        pp__step_dp_coll(S, PP_COLL_ALLGATHER, bytes, S->grp, (size_t)S->dp,
                      ARG(K_Z3L, (uint64_t)j << 24 | (uint64_t)st->p));
    }
    st->zissued = j + 1;
}

void pp__z3_task_start(step *S, stage *st) {
    st->zn = count_zg(st->prog);
    st->zissued = 0;
    st->znext = 0;
    if (st->zn > st->zcap) {
        st->zpend = pp_xrealloc(st->zpend, (size_t)st->zn * sizeof *st->zpend);
        st->zcap = st->zn;
    }
    for (int32_t j = 0; j < st->zn; j++) st->zpend[j] = -1; /* not issued */
    /* With overlap, the first gather and the prefetched ones go out at
     * once. */
    if (S->prof.zero3_overlap)
        for (int32_t j = 0; j <= S->prof.zero3_prefetch && j < st->zn; j++)
            issue(S, st, j);
}

int pp__z3_item(step *S, stage *st) {
    int32_t j = st->znext++;
    if (S->prof.zero3_overlap) {
        int32_t ahead = j + S->prof.zero3_prefetch;
        while (st->zissued <= ahead && st->zissued < st->zn && !S->failed)
            issue(S, st, st->zissued);
    }
    if (st->zpend[j] < 0) issue(S, st, j); /* on the compute stream */
    if (st->zpend[j] == 0) return 0;
    st->zwait = j;
    pp__step_enter(S, st, ST_ZAG);
    return 1;
}

void pp__z3_done(step *S, int64_t arg_i) {
    int32_t p = (int32_t)(arg_i & 0xffffff), j = (int32_t)(arg_i >> 24);
    stage *st = &S->st[p];
    if (--st->zpend[j] == 0 && st->state == ST_ZAG && st->zwait == j) {
        st->zwait = -1;
        pp__step_resume(S, st);
    }
}
