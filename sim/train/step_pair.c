/*
 * sim/train/step_pair.c: Megatron-core's combined 1F1B schedule
 * (a2a_overlap=on, --overlap-moe-expert-parallel-comm): a forward and a
 * backward of two micro-batches run as one program, their layers
 * interleaved so that each one's expert-parallel all-to-alls go on a
 * communication stream while the other computes.
 *
 * Source: megatron/core/models/common/model_chunk_schedule_plan.py,
 * TransformerLayerSchedulePlan.run.  For a forward layer f and a
 * backward layer b it issues
 *
 *   comm:  combine_bwd(b) | dispatch(f) | dispatch_bwd(b) | combine(f)
 *   comp:  attn(f)        | mlp_bwd(b)  | mlp(f)          | attn_bwd(b)
 *
 * each column waiting for the one before it.  Here a program's items are
 * cut at its all-to-alls; the backward's first cut (the head and what
 * precedes its first all-to-all) runs alone, then, alternately, the
 * backward's next all-to-all starts and the forward's next cut computes,
 * and the forward's next all-to-all starts and the backward's next cut
 * computes, each column ending when both its sides have; the forward's
 * last cut (its head) runs alone.  A chunk without MoE layers has no
 * cuts: as a forward its whole pass computes beside the backward's first
 * all-to-all, as a backward beside the forward's first (the others of
 * the forward then wait as without the overlap).  What a cut holds
 * besides compute (a TP collective, CP's exchange, a gradient mark) runs
 * in it in order, as it does on the compute stream.
 */
#include <stdlib.h>

#include "step_state.h"

static bool is_a2a(const item *it) {
    return it->kind == IT_COLL && it->grp == PP__GRP_EP;
}

/* The end of the cut that starts at `from`: the next all-to-all. */
static size_t cut_end(const program *p, size_t from) {
    while (from < p->n && !is_a2a(&p->it[from])) from++;
    return from;
}

static void push_cut(program *out, const program *p, size_t a, size_t b) {
    for (size_t i = a; i < b; i++) pp__prog_push(out, p->it[i]);
}

/* The all-to-all at p->it[i] started without a wait. */
static void push_start(program *out, const program *p, size_t i) {
    item it = p->it[i];
    it.kind = IT_ASTART;
    pp__prog_push(out, it);
}

static void build(program *out, const program *f, const program *b) {
    item wait = {.kind = IT_AWAIT};
    size_t i = 0, j = cut_end(b, 0);
    if (j == b->n) {
        /* A backward without all-to-alls (no MoE layer in its chunk):
         * it computes beside the forward's first one. */
        size_t fe = cut_end(f, 0);
        bool started = fe < f->n;
        push_cut(out, f, 0, fe);
        if (started) push_start(out, f, fe++);
        push_cut(out, b, 0, b->n);
        if (started) pp__prog_push(out, wait);
        push_cut(out, f, fe, f->n);
        return;
    }
    push_cut(out, b, 0, j);
    while (i < f->n || j < b->n) {
        size_t fe = cut_end(f, i);
        bool started = j < b->n;
        if (started) push_start(out, b, j++);
        push_cut(out, f, i, fe);
        if (started) pp__prog_push(out, wait);
        i = fe;
        size_t be = cut_end(b, j);
        started = i < f->n;
        if (started) push_start(out, f, i++);
        push_cut(out, b, j, be);
        if (started) pp__prog_push(out, wait);
        j = be;
    }
}

const program *pp__step_pair_program(step *S, int32_t vf, int32_t vb) {
    size_t V = (size_t)S->V;
    if (!S->pairs) S->pairs = pp_xcalloc(V * V, sizeof *S->pairs);
    program **p = &S->pairs[(size_t)vf * V + (size_t)vb];
    if (!*p) {
        *p = pp_xcalloc(1, sizeof **p);
        build(*p, &S->fwd[vf], &S->bwd[vb]);
    }
    return *p;
}

void pp__step_pairs_free(step *S) {
    if (!S->pairs) return;
    for (size_t k = 0; k < (size_t)S->V * (size_t)S->V; k++)
        if (S->pairs[k]) {
            free(S->pairs[k]->it);
            free(S->pairs[k]);
        }
    free(S->pairs);
    S->pairs = NULL;
}
