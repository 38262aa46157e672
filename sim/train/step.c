/*
 * sim/train/step.c: one training iteration under TP x PP x DP as a task graph on
 * the event engine.
 *
 * What runs.  Every pipeline stage of one data-parallel replica is an
 * actor that works through its tasks (the forward or backward pass of one
 * micro-batch through one model chunk) in the order of the schedule
 * (schedule.c).  A task is a program: compute segments (the kernels of
 * compute.c between two collectives, timed by the roofline) and TP
 * collectives, run as real collectives over the stage's TP group.  A
 * forward task's output is sent to the next virtual stage and a backward
 * task's input gradient to the previous one, as real transfers (one per TP
 * rank, each 1/tp of the tensor, Megatron-LM's scatter/gather; the
 * receiver all-gathers it over NVLink, Narayanan et al. 2021 sec. 4.1;
 * with p2p_scatter off each rank sends the whole tensor, as Megatron-core
 * does without sequence parallelism).
 * After its last backward a stage synchronises its gradients over DP (one
 * collective per TP rank, over that rank's DP group: AllReduce, or ZeRO's
 * ReduceScatter and, after the optimizer, AllGather; an MoE model's routed
 * experts over their expert data-parallel groups, on a second
 * communicator, as Megatron-core's expert buffers), bucketed and, with
 * dp_overlap, started during the last micro-batch's backward as each
 * bucket fills.  ZeRO-2 and 3 shard the gradients, so they reduce-scatter
 * after every backward instead, and the next task waits for it.  Then the
 * tied word embedding's gradient is all-reduced between the first and
 * last stage, every stage waits for the others (the gradient-norm
 * AllReduce over the model-parallel group is a barrier) and runs the
 * optimizer step.
 *
 * Symmetry.  All DP replicas run the same compute, so only replica 0's
 * compute is simulated.  Communication is not symmetric when it contends,
 * so every transfer another replica makes that can share a link with
 * replica 0's is simulated too: a collective or send whose group of
 * replica 0 stays inside one server is repeated for the replicas with
 * GPUs on that server, one that crosses servers for every replica; the
 * DP and embedding groups, which span the replicas, are all simulated.  A
 * step waits for its copies on all replicas: the slowest replica sets the
 * pace, as it does for the whole iteration through the DP AllReduce.
 *
 * Host.  A GPU runs only what its host has issued.  Each item carries the
 * host's time to issue its kernels (kernels x the stack's
 * host.kernel_issue; a graphed scope one launch), and each stage a host
 * clock: the host issues items back to back, running ahead of the GPU
 * while it can; a compute item cannot end before the host has issued its
 * last kernel (the wait is host_s); at a synchronisation (a dropless MoE
 * layer's dispatch) the host first waits for the GPU to get there.
 *
 * Accounting.  A stage is always in one state, and the time it spends in
 * each goes to one part of pp_breakdown, so the parts add up to the
 * iteration time for every stage.  Waiting for a pipeline input counts as
 * bubble until the producer started sending it and as pp_comm after.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_run.h"
#include "step_state.h"

/* ------------------------------------------------------------------------
 * The actors.
 * ---------------------------------------------------------------------- */
static void stage_run(step *S, stage *st);
static void on_sim(pp_sim *sim, void *ctx, uint64_t arg);
static void on_event(pp_engine *eng, void *ctx, uint64_t arg);

/* Host lag below this is not worth an event. */
#define HOST_EPS_S 1e-9

static void fail(step *S, int rc) {
    if (!S->failed) S->failed = rc ? rc : PP_EINTERNAL;
}

static double now_s(step *S) {
    return pp_sim_now(S->sim);
}

/* Leaves the current state, charging its time, and enters `state`. */
static void enter(step *S, stage *st, int state) {
    double now = now_s(S), dt = now - st->t_state;
    pp_breakdown *b = &st->bd;
    switch (st->state) {
    case ST_COMPUTE: b->compute_s += dt; break;
    case ST_TP: b->tp_comm_s += dt; break;
    case ST_SEND:
    case ST_GATHER: b->pp_comm_s += dt; break;
    case ST_DP:
    case ST_DPMB:
    case ST_ZAG: b->dp_comm_exposed_s += dt; break;
    case ST_EMB:
    case ST_OPT: b->other_s += dt; break;
    case ST_EP: b->ep_comm_s += dt; break;
    case ST_CP: b->cp_comm_s += dt; break;
    case ST_HOST: b->host_s += dt; break;
    case ST_OFFLOAD: b->other_s += dt; break;
    case ST_WAIT: {
        double ts = S->msgs[st->wait_msg].t_send;
        double split = ts < st->t_state ? st->t_state : ts > now ? now : ts;
        b->bubble_s += split - st->t_state;
        b->pp_comm_s += now - split;
        break;
    }
    default: b->bubble_s += dt; break;
    }
    st->state = state;
    st->t_state = now;
}

static int coll(step *S, pp_coll_op op, pp_coll_algo algo, double bytes,
                const int32_t *g, size_t n, int channels, uint64_t arg) {
    pp_coll_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.op = op;
    sp.algo = algo;
    sp.bytes = bytes;
    sp.gpus = g;
    sp.n_gpus = n;
    sp.server = -1;
    sp.channels = channels;
    sp.gran = S->cfg->gran;
    sp.fits = S->prof.net; /* a fitted profile's network, if any */
    sp.n_fits = S->prof.n_net;
    int rc = pp_sim_collective_start(S->sim, &sp, on_sim, S, arg, &S->err);
    if (rc) {
        pp_error_prefix(&S->err, "%s of %zu GPUs", pp_coll_op_name(op), n);
        fail(S, rc);
    }
    S->collectives++;
    return rc;
}

/* A collective on the DP channels (zero3.c's gathers). */
int pp__step_dp_coll(step *S, pp_coll_op op, double bytes, const int32_t *g,
                     size_t n, uint64_t arg) {
    return coll(S, op, S->cfg->dp_algo, bytes, g, n, S->cfg->dp_channels, arg);
}

void pp__step_resume(step *S, stage *st) {
    enter(S, st, ST_IDLE);
    stage_run(S, st);
}

static void tp_coll(step *S, stage *st, pp_coll_op op, double bytes,
                    uint64_t arg, int32_t extra) {
    int32_t p = st->p;
    st->pending = S->n_tpm[p] + extra;
    for (int32_t i = 0; i < S->n_tpm[p] && !S->failed; i++)
        coll(S, op, S->cfg->tp_algo, bytes, &D(S, 0, p, S->tpm[p][i]),
             (size_t)S->tp, 1, arg);
}

static int32_t msg_index(step *S, int dir, int32_t v, int32_t mb) {
    return (dir * S->V + v) * S->nmb + mb;
}

static void arrive(step *S, int32_t idx) {
    msg *m = &S->msgs[idx];
    m->t_arr = now_s(S);
    int32_t v = (idx / S->nmb) % S->V;
    stage *st = &S->st[v % S->pp];
    if (st->state == ST_WAIT && st->wait_msg == idx) {
        enter(S, st, ST_IDLE);
        stage_run(S, st);
    }
}

/* Sends the output of the task that just ended on stage st. */
static void send_output(step *S, stage *st, const pp__task *t) {
    int32_t v = t->chunk * S->pp + st->p;
    int dir = t->bwd;
    int32_t vd = dir ? v - 1 : v + 1;
    int32_t idx = msg_index(S, dir, vd, t->mb);
    int32_t pd = vd % S->pp, link = dir ? pd : st->p;
    msg *m = &S->msgs[idx];
    m->t_send = now_s(S);
    m->src = st->p;
    m->pending = S->n_ppm[link] * S->tp;
    for (int32_t i = 0; i < S->n_ppm[link] && !S->failed; i++) {
        int32_t d = S->ppm[link][i];
        for (int32_t k = 0; k < S->tp && !S->failed; k++) {
            int rc =
                pp_sim_send(S->sim, D(S, k, st->p, d), D(S, k, pd, d),
                            S->p2p_bytes, on_sim, S, ARG(K_FLOW, idx), &S->err);
            if (rc) fail(S, rc);
            S->transfers++;
        }
    }
    if (S->cfg->p2p_sync) {
        st->send_msg = idx;
        enter(S, st, ST_SEND);
    }
}

static void flows_arrived(step *S, int32_t idx) {
    msg *m = &S->msgs[idx];
    stage *src = &S->st[m->src];
    if (src->state == ST_SEND && src->send_msg == idx) {
        enter(S, src, ST_IDLE);
        stage_run(S, src);
    }
    if (!S->failed) arrive(S, idx);
}

/* The receiver all-gathers the 1/tp pieces over its TP group (NVLink) as
 * part of its receive, before the task that needs them (Megatron-LM
 * 2021's _communicate gathers inside the receive call). */
static void gather_input(step *S, stage *st) {
    int32_t p = st->p;
    enter(S, st, ST_GATHER);
    st->pending = S->n_tpm[p];
    for (int32_t i = 0; i < S->n_tpm[p] && !S->failed; i++)
        coll(S, PP_COLL_ALLGATHER, S->cfg->tp_algo, S->act_bytes,
             &D(S, 0, p, S->tpm[p][i]), (size_t)S->tp, 1, ARG(K_GATHER, p));
}

/* ZeRO-3 keeps 1/dp of the weights: before each pass of a chunk the
 * weights are all-gathered over DP (Rajbhandari et al. 2020, sec. 5.3:
 * 1.5x the data-parallel volume; prefetching is not modelled, so the
 * gather is exposed). */
static void zero3_gather(step *S, stage *st, int32_t v) {
    enter(S, st, ST_ZAG);
    st->pending = S->tp;
    for (int32_t t = 0; t < S->tp && !S->failed; t++) {
        for (int32_t d = 0; d < S->dp; d++) S->grp[d] = D(S, t, st->p, d);
        coll(S, PP_COLL_ALLGATHER, S->cfg->dp_algo,
             S->vparams[v] * PP_PARAM_GATHER_BYTES, S->grp, (size_t)S->dp,
             S->cfg->dp_channels, ARG(K_Z3, st->p));
    }
}

/* Whether gradients of queue q are synchronised at all: a DP (or expert
 * DP) group of one has nothing to reduce. */
static bool dp_live(const step *S, int q) {
    return q == DPQ_EXPERT ? S->edp > 1 : S->dp > 1;
}

/* Starts `op` of `bytes` on every group of stage p's queue q (the TP
 * ranks' DP groups, or the expert groups), on the DP channels; returns
 * the collectives started. */
static int32_t dp_colls(step *S, int32_t p, int q, pp_coll_op op, double bytes,
                        uint64_t arg) {
    if (!dp_live(S, q) || !(bytes > 0)) return 0;
    int32_t groups = q == DPQ_EXPERT ? S->n_edp : S->tp, started = 0;
    for (int32_t j = 0; j < groups && !S->failed; j++) {
        size_t n = pp__step_dp_group(S, p, q, j, S->grp);
        coll(S, op, S->cfg->dp_algo, bytes, S->grp, n, S->cfg->dp_channels,
             arg);
        started++;
    }
    return started;
}

/* ZeRO's all-gather of `params` updated parameters of stage st, the
 * `experts` among them over their own groups; returns the collectives
 * started. */
static int32_t gather_params(step *S, stage *st, double params, double experts,
                             uint64_t arg) {
    double b[DPQ__COUNT] = {params - experts, experts};
    int32_t n = 0;
    for (int q = 0; q < DPQ__COUNT && !S->failed; q++)
        n += dp_colls(S, st->p, q, PP_COLL_ALLGATHER,
                      b[q] * PP_PARAM_GATHER_BYTES, arg);
    return n;
}

static void pag_arrived(step *S, stage *st);

/* Megatron-core's overlap_param_gather: the distributed optimizer's
 * all-gather of the updated parameters is not waited for after the
 * step; the next forward's pre-hooks wait for each bucket as they reach
 * it.  In steady state that is this iteration's start: the gathers go
 * out chunk by chunk in forward order (in order on each communicator:
 * the dense parameters' and the experts') and a chunk's forward waits for
 * its own.  Chunk granularity: Megatron waits
 * per bucket, so within a chunk the forward could start earlier (with
 * vp 1 the whole gather is exposed here, as without overlap). */
static void pag_issue(step *S, stage *st) {
    int32_t v = st->pag_ready * S->pp + st->p;
    st->pag_pending =
        gather_params(S, st, S->vparams[v], S->veparams[v], ARG(K_PAG, st->p));
    if (st->pag_pending == 0)
        pag_arrived(S, st);
    else
        pp__step_comm_changed(S, st);
}

/* ---- DP synchronisation --------------------------------------------- */
static void after_dp(step *S, stage *st);

static void dp_push(dp_queue *dq, double bytes) {
    if (!(bytes > 0)) return;
    PP_VEC_RESERVE(dq->q, dq->qcap, dq->qt + 1, 16);
    dq->q[dq->qt++] = bytes;
}

/* Whether a queue of st has a bucket in flight or waiting. */
static bool dp_busy(const stage *st) {
    for (int q = 0; q < DPQ__COUNT; q++)
        if (st->dq[q].pending > 0 || st->dq[q].qh < st->dq[q].qt) return true;
    return false;
}

/* The time factor of st's compute now: beside its own all-to-all
 * (a2a_overlap: S->beside) and beside the NCCL kernels of its DP
 * collectives in flight (a gradient bucket on each queue's communicator,
 * a parameter gather: S->beside_dp). */
static double comp_factor(const step *S, const stage *st) {
    int comms = st->pag_pending > 0;
    for (int q = 0; q < DPQ__COUNT; q++) comms += st->dq[q].pending > 0;
    return (st->ep_async > 0 ? S->beside : 1) * S->beside_dp[comms];
}

/* Starts queue q's next bucket if none runs: NCCL runs the collectives of
 * one communicator in order.  When both queues are empty the stage goes
 * on. */
static void dp_next(step *S, stage *st, int q) {
    dp_queue *dq = &st->dq[q];
    if (dq->pending > 0 || S->failed) return;
    if (dq->qh == dq->qt) {
        if (dp_busy(st)) return;
        if (st->tasks_done && st->state == ST_DP) {
            after_dp(S, st);
        } else if (st->state == ST_DPMB) {
            enter(S, st, ST_IDLE);
            stage_run(S, st);
        }
        return;
    }
    double bytes = dq->q[dq->qh++];
    pp_coll_op op =
        S->par->zero >= 1 ? PP_COLL_REDUCESCATTER : PP_COLL_ALLREDUCE;
    dq->pending = dp_colls(S, st->p, q, op, bytes,
                           ARG(q == DPQ_EXPERT ? K_EDP : K_DP, st->p));
    pp__step_comm_changed(S, st);
}

static void grads_ready(step *S, stage *st, double params, int q) {
    if (!dp_live(S, q)) return;
    dp_queue *dq = &st->dq[q];
    dq->pend += params * S->cfg->grad_bytes;
    if (S->cfg->dp_overlap && dq->pend >= S->cfg->bucket_bytes) {
        dp_push(dq, dq->pend);
        dq->pend = 0;
        dp_next(S, st, q);
    }
}

/* A chunk's parameters are gathered: the next chunk's go out, and a
 * stage waiting for them runs on. */
static void pag_arrived(step *S, stage *st) {
    if (++st->pag_ready < S->vp) pag_issue(S, st);
    if (st->state == ST_ZAG) {
        enter(S, st, ST_IDLE);
        stage_run(S, st);
    }
}

static void flush_grads(step *S, stage *st) {
    for (int q = 0; q < DPQ__COUNT; q++) {
        dp_push(&st->dq[q], st->dq[q].pend);
        st->dq[q].pend = 0;
    }
    for (int q = 0; q < DPQ__COUNT && !S->failed; q++) dp_next(S, st, q);
}

static void barrier(step *S, stage *st) {
    enter(S, st, ST_BARRIER);
    if (++S->barrier < S->pp) return;
    /* Everyone is here: the optimizer steps. */
    for (int32_t p = 0; p < S->pp; p++) {
        stage *x = &S->st[p];
        enter(S, x, ST_OPT);
        double t =
            pp_optimizer_time_s(&S->prof, S->cfg->optimizer, x->opt_params);
        if (pp__sim_tracing(S->sim))
            for (int32_t k = 0; k < S->tp; k++)
                pp__sim_trace_span(S->sim, D(S, k, p, 0), "optimizer", now_s(S),
                                   now_s(S) + t);
        pp_engine_after(S->eng, t, on_event, S, ARG(K_OPT, p));
    }
}

/* The tied word embedding's gradient (or the MTP block's copy of the
 * table): first and last stage, every TP rank and replica (Megatron-LM's
 * embedding group). */
static void after_dp(step *S, stage *st) {
    if (!S->emb_sync || (st->p != 0 && st->p != S->pp - 1)) {
        barrier(S, st);
        return;
    }
    enter(S, st, ST_BARRIER);
    if (++S->emb_ready < 2) return;
    enter(S, &S->st[0], ST_EMB);
    enter(S, &S->st[S->pp - 1], ST_EMB);
    S->emb_pending = S->tp * S->dp;
    for (int32_t d = 0; d < S->dp && !S->failed; d++)
        for (int32_t t = 0; t < S->tp && !S->failed; t++) {
            int32_t g[2] = {D(S, t, 0, d), D(S, t, S->pp - 1, d)};
            coll(S, PP_COLL_ALLREDUCE, S->cfg->dp_algo, S->emb_bytes, g, 2, 0,
                 ARG(K_EMB, 0));
        }
}

static void tasks_done(step *S, stage *st) {
    st->tasks_done = true;
    enter(S, st, ST_DP);
    flush_grads(S, st);
}

/* ---- The task loop ---------------------------------------------------- */
static void trace_task(step *S, stage *st, const pp__task *t) {
    char name[64];
    if (S->vp > 1)
        snprintf(name, sizeof name, "%s %d (chunk %d)", t->bwd ? "bwd" : "fwd",
                 t->mb, t->chunk);
    else
        snprintf(name, sizeof name, "%s %d", t->bwd ? "bwd" : "fwd", t->mb);
    for (int32_t k = 0; k < S->tp; k++)
        pp__sim_trace_span(S->sim, D(S, k, st->p, 0), name, st->t_task0,
                           now_s(S));
}

static void task_end(step *S, stage *st) {
    const pp__task *t = &st->tasks[st->cur];
    int32_t v = t->chunk * S->pp + st->p;
    if (pp__sim_tracing(S->sim)) trace_task(S, st, t);
    st->prog = NULL;
    st->cur++;
    /* ZeRO >= 2 reduces every backward's gradients and, like DeepSpeed's
     * epilogue (it synchronises the device after the last bucket), lets
     * the next task start only when they are reduced.  The last task's
     * go with the end of the iteration (tasks_done). */
    bool reduce = t->bwd && S->mb_reduce && st->cur < st->n_tasks;
    if (reduce || (st->final_bwd && S->cfg->dp_overlap)) flush_grads(S, st);
    /* A stack that overlaps ZeRO's communication (zero.overlap: its own
     * stream, FSDP2, DeepSpeed's overlap_comm) does not hold the next
     * task for the reduction. */
    st->dp_wait = reduce && !S->prof.zero3_overlap;
    bool out = t->bwd ? v > 0 : v < S->V - 1;
    if (out) send_output(S, st, t);
}

void pp__step_overlap_end(step *S, stage *st, int exposed) {
    if (--st->pending == 0) {
        enter(S, st, ST_IDLE);
        stage_run(S, st);
    } else {
        enter(S, st, exposed);
    }
}

static void tp_overlap_done(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    step *S = ctx;
    if (!S->failed) pp__step_overlap_end(S, &S->st[ARG_I(arg)], ST_TP);
}

static void stage_run(step *S, stage *st) {
    while (!S->failed) {
        if (st->state == ST_SEND || st->state == ST_WAIT ||
            st->state == ST_GATHER || st->state == ST_ZAG ||
            st->state == ST_DPMB)
            return;
        if (!st->prog) {
            if (st->cur == st->n_tasks) {
                tasks_done(S, st);
                return;
            }
            if (st->dp_wait) {
                st->dp_wait = false;
                if (dp_busy(st)) {
                    enter(S, st, ST_DPMB);
                    return;
                }
            }
            const pp__task *t = &st->tasks[st->cur];
            int32_t v = t->chunk * S->pp + st->p;
            if (S->pag && !t->bwd && t->chunk >= st->pag_ready) {
                enter(S, st, ST_ZAG); /* K_PAG resumes it */
                return;
            }
            bool need = t->bwd ? v < S->V - 1 : v > 0;
            if (need && !st->gathered) {
                int32_t idx = msg_index(S, t->bwd, v, t->mb);
                if (!(S->msgs[idx].t_arr >= 0)) {
                    st->wait_msg = idx;
                    enter(S, st, ST_WAIT);
                    return;
                }
                if (S->gather) {
                    gather_input(S, st);
                    return;
                }
            }
            /* a2a_overlap: a paired forward also waits for its
             * backward's gradient (not gathered: step_build.c). */
            const pp__task *u = t->pair ? t + 1 : NULL;
            int32_t vb = u ? u->chunk * S->pp + st->p : 0;
            if (u && vb < S->V - 1) {
                int32_t idx = msg_index(S, 1, vb, u->mb);
                if (!(S->msgs[idx].t_arr >= 0)) {
                    st->wait_msg = idx;
                    enter(S, st, ST_WAIT);
                    return;
                }
            }
            st->gathered = false;
            if (S->par->zero >= 3 && S->dp > 1 && !S->z3_layer &&
                !st->zgathered) {
                zero3_gather(S, st, v);
                return;
            }
            st->zgathered = false;
            st->in_pair = u != NULL;
            st->prog = u        ? pp__step_pair_program(S, v, vb)
                       : t->bwd ? &S->bwd[v]
                                : &S->fwd[v];
            st->ip = 0;
            st->final_bwd = u ? st->cur + 1 == st->last_bwd[u->chunk]
                              : t->bwd && st->cur == st->last_bwd[t->chunk];
            st->t_task0 = now_s(S);
            if (S->z3_layer) pp__z3_task_start(S, st);
        }
        if (st->ip == st->prog->n) {
            if (st->in_pair) {
                /* The forward's end, then the backward's: only the
                 * backward's is a chunk's last. */
                bool fb = st->final_bwd;
                st->final_bwd = false;
                st->in_pair = false;
                task_end(S, st);
                st->final_bwd = fb;
            }
            task_end(S, st);
            continue;
        }
        const item *it = &st->prog->it[st->ip++];
        if (it->kind == IT_COMPUTE || it->kind == IT_COLL ||
            it->kind == IT_ASTART) {
            /* The host issues the item's kernels after the ones before
             * (or, at a synchronisation, once the GPU has got here). */
            if (it->sync && st->host_t < now_s(S)) st->host_t = now_s(S);
            st->host_t += it->h;
        }
        if (it->kind == IT_ASTART) {
            pp__step_ep_async(S, st, it);
            continue;
        }
        if (it->kind == IT_AWAIT) {
            if (st->ep_async > 0) {
                st->ep_waiting = true;
                enter(S, st, ST_EP);
                return;
            }
            continue;
        }
        if (it->kind == IT_ZG) {
            if (pp__z3_item(S, st)) return;
            continue;
        }
        if (it->kind == IT_MARK) {
            if (st->final_bwd || S->mb_reduce)
                grads_ready(S, st, it->x,
                            it->grp == PP__GRP_EP ? DPQ_EXPERT : DPQ_DENSE);
            continue;
        }
        if (it->kind == IT_COMPUTE || it->kind == IT_OFFL) {
            /* An offload wait passes like compute, charged to its own
             * state.  Compute shares the GPU with the stage's
             * communication kernels (its own all-to-all under
             * a2a_overlap, its DP collectives): slower while they run
             * (comp_factor; re-timed by pp__step_comm_changed). */
            double t = it->t;
            enter(S, st, it->kind == IT_OFFL ? ST_OFFLOAD : ST_COMPUTE);
            st->comp_on = it->kind == IT_COMPUTE;
            if (st->comp_on) {
                st->comp_alone = t;
                st->comp_t0 = now_s(S);
                st->comp_fac = comp_factor(S, st);
                t *= st->comp_fac;
            }
            if (pp__sim_tracing(S->sim))
                for (int32_t k = 0; k < S->tp; k++)
                    pp__sim_trace_span(S->sim, D(S, k, st->p, 0), it->label,
                                       now_s(S), now_s(S) + t);
            st->comp_timer =
                pp_engine_after(S->eng, t, on_event, S, ARG(K_COMPUTE, st->p));
            return;
        }
        if (it->grp != PP__GRP_TP) {
            pp__step_group_coll(S, st, it);
            return;
        }
        if (it->t > 0) {
            /* Overlapped with its GEMM (compute.c's tp_overlap): the
             * GEMM computes meanwhile; what the collective takes beyond
             * it is TP communication (tp_overlap_done). */
            enter(S, st, ST_COMPUTE);
            if (pp__sim_tracing(S->sim))
                for (int32_t k = 0; k < S->tp; k++)
                    pp__sim_trace_span(S->sim, D(S, k, st->p, 0), it->label,
                                       now_s(S), now_s(S) + it->t);
            pp_engine_after(S->eng, it->t, tp_overlap_done, S,
                            ARG(K_TP, st->p));
        } else {
            enter(S, st, ST_TP);
        }
        tp_coll(S, st, (pp_coll_op)it->coll, it->x, ARG(K_TP, st->p),
                it->t > 0);
        return;
    }
}

void pp__step_comm_changed(step *S, stage *st) {
    if (!st->comp_on) return;
    double f = comp_factor(S, st);
    if (f == st->comp_fac) return;
    double now = now_s(S);
    double left = st->comp_alone - (now - st->comp_t0) / st->comp_fac;
    if (left < 0) left = 0;
    st->comp_alone = left;
    st->comp_t0 = now;
    st->comp_fac = f;
    if (pp_engine_cancel(S->eng, st->comp_timer))
        st->comp_timer = pp_engine_after(S->eng, left * f, on_event, S,
                                         ARG(K_COMPUTE, st->p));
}

void pp__step_enter(step *S, stage *st, int state) {
    enter(S, st, state);
}

void pp__step_run(step *S, stage *st) {
    stage_run(S, st);
}

int pp__step_coll(step *S, pp_coll_op op, pp_coll_algo algo, double bytes,
                  const int32_t *g, size_t n, int channels, uint64_t arg) {
    return coll(S, op, algo, bytes, g, n, channels, arg);
}

static void stage_done(step *S, stage *st) {
    enter(S, st, ST_DONE);
    st->t_done = now_s(S);
}

static void on_event(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    step *S = ctx;
    if (S->failed) return;
    stage *st = &S->st[ARG_I(arg)];
    switch (ARG_K(arg)) {
    case K_COMPUTE:
        st->comp_on = false;
        /* The GPU has run what it was given; if the host has not issued
         * the item's last kernel yet, it waits for it. */
        if (st->host_t > now_s(S) + HOST_EPS_S) {
            enter(S, st, ST_HOST);
            pp_engine_after(S->eng, st->host_t - now_s(S), on_event, S,
                            ARG(K_HOST, st->p));
            break;
        }
        enter(S, st, ST_IDLE);
        stage_run(S, st);
        break;
    case K_HOST:
        enter(S, st, ST_IDLE);
        stage_run(S, st);
        break;
    case K_OPT:
        st->pending = 0;
        if (S->par->zero >= 1 && S->par->zero < 3 && !S->pag) {
            /* ZeRO: gather the updated parameters (16 bits), the experts'
             * over their own group. */
            st->pending = gather_params(S, st, st->params, st->eparams,
                                        ARG(K_ZAG, st->p));
        }
        if (st->pending > 0)
            enter(S, st, ST_ZAG);
        else
            stage_done(S, st);
        break;
    default: fail(S, PP_EINTERNAL);
    }
}

static void on_sim(pp_sim *sim, void *ctx, uint64_t arg) {
    (void)sim;
    step *S = ctx;
    if (S->failed) return;
    int64_t i = ARG_I(arg);
    switch (ARG_K(arg)) {
    case K_GRP:
    case K_TP: {
        stage *st = &S->st[i];
        if (--st->pending == 0) {
            enter(S, st, ST_IDLE);
            stage_run(S, st);
        }
        break;
    }
    case K_FLOW:
        if (--S->msgs[i].pending == 0) flows_arrived(S, (int32_t)i);
        break;
    case K_EPA: pp__step_ep_async_done(S, &S->st[i]); break;
    case K_GATHER: {
        stage *st = &S->st[i];
        if (--st->pending == 0) {
            st->gathered = true;
            enter(S, st, ST_IDLE);
            stage_run(S, st);
        }
        break;
    }
    case K_DP:
    case K_EDP: {
        stage *st = &S->st[i];
        int q = ARG_K(arg) == K_EDP ? DPQ_EXPERT : DPQ_DENSE;
        if (--st->dq[q].pending == 0) {
            dp_next(S, st, q);
            pp__step_comm_changed(S, st);
        }
        break;
    }
    case K_EMB:
        if (--S->emb_pending == 0) {
            barrier(S, &S->st[0]);
            barrier(S, &S->st[S->pp - 1]);
        }
        break;
    case K_Z3: {
        stage *st = &S->st[i];
        if (--st->pending == 0) {
            st->zgathered = true;
            enter(S, st, ST_IDLE);
            stage_run(S, st);
        }
        break;
    }
    case K_Z3L: pp__z3_done(S, i); break;
    case K_ZAG: {
        stage *st = &S->st[i];
        if (--st->pending == 0) stage_done(S, st);
        break;
    }
    case K_PAG: {
        stage *st = &S->st[i];
        if (--st->pag_pending == 0) {
            pag_arrived(S, st);
            pp__step_comm_changed(S, st);
        }
        break;
    }
    default: fail(S, PP_EINTERNAL);
    }
}

void pp__step_start(step *S) {
    if (S->pag)
        for (int32_t q = 0; q < S->pp && !S->failed; q++) pag_issue(S, &S->st[q]);
    for (int32_t q = 0; q < S->pp && !S->failed; q++) stage_run(S, &S->st[q]);
}

const char *const pp__step_state_names[] = {
    "idle",    "compute",        "tp",          "waiting for input",
    "sending", "gathering",      "dp sync",     "dp reduce (micro-batch)",
    "barrier", "embedding sync", "optimizer",   "zero allgather",
    "done",    "ep alltoall",    "cp exchange", "host",
    "offload"};
