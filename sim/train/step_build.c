/*
 * sim/train/step_build.c: setting up a simulated training iteration (programs
 * from compute.c's operation lists, rank placement, which replicas'
 * communication to repeat) and reading its results.  step.c runs it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step_state.h"

void pp__prog_push(program *pr, item it) {
    PP_VEC_RESERVE(pr->it, pr->cap, pr->n + 1, 32);
    pr->it[pr->n++] = it;
}

static const char *label(step *S, const char *fmt, long a, const char *b) {
    S->labels = pp_xrealloc(S->labels, (S->n_labels + 1) * sizeof *S->labels);
    char *l = S->labels[S->n_labels++];
    snprintf(l, sizeof S->labels[0], fmt, a, b);
    return l;
}

/* Appends ops[from..] to pr, merging runs of compute into one segment
 * named after the label made next (labels are resolved once all are
 * made: the array moves).  Each item carries the host's time to issue
 * its kernels; an op the host synchronises before starts an item. */
static void emit(const step *S, program *pr, const pp__oplist *l, size_t from) {
    for (size_t i = from; i < l->n; i++) {
        const pp__op *o = &l->v[i];
        double h = pp__op_host_kernels(l, i, S->par->graphs) * S->host_k;
        bool sync = o->sync && !S->prof.sw.moe_sync_free;
        item it;
        memset(&it, 0, sizeof it);
        it.label = (const char *)(uintptr_t)(S->n_labels + 1);
        if (o->kind == PP__OP_GEMM || o->kind == PP__OP_MEM) {
            if (!sync && pr->n && pr->it[pr->n - 1].kind == IT_COMPUTE) {
                pr->it[pr->n - 1].t += o->time_s;
                pr->it[pr->n - 1].h += h;
                continue;
            }
            it.kind = IT_COMPUTE;
            it.t = o->time_s;
        } else if (o->kind == PP__OP_COMM) {
            it.kind = IT_COLL;
            it.coll = (uint8_t)o->coll;
            it.grp = o->group;
            it.t = o->overlap_s;
            it.x = o->bytes;
        } else {
            it.kind = IT_MARK;
            it.x = o->params;
            it.grp = o->group;
            h = 0;
        }
        it.sync = sync;
        it.h = h;
        pp__prog_push(pr, it);
    }
}

/* Compute seconds of ops [from, l->n): what a transfer can hide under. */
static double ops_compute_s(const pp__oplist *l, size_t from) {
    double t = 0;
    for (size_t i = from; i < l->n; i++)
        if (l->v[i].kind == PP__OP_GEMM || l->v[i].kind == PP__OP_MEM)
            t += l->v[i].time_s;
    return t;
}

/* An offloaded layer's activations move between the GPU and host memory
 * on their own stream while the next layer computes (Transformer
 * Engine's CPU offload handler waits for a layer's copy at the end of the
 * next layer's forward, and prefetches it during the backward of the
 * layer after it): the stage waits for what the transfer takes beyond
 * that layer's compute, here the offloaded layer's own (the next one has
 * its shape).  Not simulated as flows: the host link carries nothing else
 * of the step. */
static void offload_wait(step *S, program *pr, double layer_s, const char *what,
                         int64_t layer) {
    double t = S->off_Bps > 0 ? S->off_bytes / S->off_Bps - layer_s : 0;
    if (!(t > 0)) return;
    pp__prog_push(pr,
                  (item){.kind = IT_OFFL,
                         .label = (const char *)(uintptr_t)(S->n_labels + 1),
                         .t = t});
    label(S, "layer %ld %s", (long)layer, what);
}

static double generic_compute_s(step *S) {
    if (S->cfg->compute_time_s > 0) return S->cfg->compute_time_s / S->nmb;
    /* Derived: the micro-batch's FLOPs at the profile's best GEMM rate
     * (a generic model has no shapes to do better with). */
    pp_flops f;
    if (pp_flops_count(S->m, S->par->mbs, S->par->recompute, &f, NULL))
        return 0;
    return f.total / pp_profile_gemm_rate(&S->prof);
}

void pp__step_build(step *S) {
    S->fwd = pp_xcalloc((size_t)S->V, sizeof *S->fwd);
    S->bwd = pp_xcalloc((size_t)S->V, sizeof *S->bwd);
    if (S->m->arch == PP_ARCH_GENERIC) {
        double t = generic_compute_s(S);
        label(S, "forward", 0, "");
        label(S, "backward", 0, "");
        pp__prog_push(&S->fwd[0], (item){.kind = IT_COMPUTE,
                                         .label = (const char *)(uintptr_t)1,
                                         .t = t / 3});
        double params = S->m->params;
        for (int k = 0; k < GENERIC_PARTS; k++) {
            pp__prog_push(&S->bwd[0],
                          (item){.kind = IT_COMPUTE,
                                 .label = (const char *)(uintptr_t)2,
                                 .t = 2 * t / 3 / GENERIC_PARTS});
            pp__prog_push(&S->bwd[0],
                          (item){.kind = IT_MARK, .x = params / GENERIC_PARTS});
        }
    } else {
        pp__shape sh = {S->m, S->par, &S->prof, 0};
        pp__oplist l = {0};
        int64_t first_layer = 0; /* of chunk v, in model order */
        int mtp_kind = pp__mtp_layer_kind(S->m);
        for (int32_t v = 0; v < S->V; v++) {
            program *f = &S->fwd[v], *b = &S->bwd[v];
            /* Chunk v belongs to stage v mod pp: its share of the
             * stage's layers, or what layout= gives it. */
            int64_t Lv = pp_parallel_chunk_layers(S->par, S->m, v);
            l.n = 0;
            /* ZeRO-3 as the stack implements it: each layer's weights
             * (and the embedding's, the head's) gathered before use,
             * forward and backward (zero3.c). */
            item zg = {.kind = IT_ZG};
            double zl = pp__layer_params_gpu(&sh);
            if (S->z3_layer && v == 0)
                zg.x = pp__embed_params_gpu(&sh), pp__prog_push(f, zg);
            if (v == 0) {
                pp__ops_embed_fwd(&sh, &l);
                emit(S, f, &l, 0);
                label(S, "embedding", 0, "");
            }
            for (int64_t i = 0; i < Lv; i++) {
                size_t from = l.n;
                if (S->z3_layer) zg.x = zl, pp__prog_push(f, zg);
                sh.kind = pp_model_layer_is_moe(S->m, first_layer + i) ? 2 : 1;
                pp__ops_layer_fwd(&sh, &l);
                emit(S, f, &l, from);
                label(S, "layer %ld %s", (long)(first_layer + i), "fwd");
                if (first_layer + i < S->par->offload)
                    offload_wait(S, f, ops_compute_s(&l, from),
                                 "activation offload", first_layer + i);
            }
            /* Multi-token prediction: after the last layer, each module
             * of the last layer's kind (pp_model.mtp_layers). */
            for (int64_t k = 0; v == S->V - 1 && k < S->m->mtp_layers; k++) {
                size_t from = l.n;
                sh.kind = mtp_kind;
                if (S->z3_layer)
                    zg.x = pp__layer_params_gpu(&sh) + pp__mtp_params_gpu(&sh),
                    pp__prog_push(f, zg);
                pp__ops_mtp_module(&sh, &l, false, false);
                emit(S, f, &l, from);
                label(S, "mtp %ld fwd", (long)k, "");
            }
            if (v == S->V - 1) {
                size_t from = l.n;
                if (S->z3_layer)
                    zg.x = pp__head_params_gpu(&sh), pp__prog_push(f, zg);
                pp__ops_head_fwd(&sh, &l);
                emit(S, f, &l, from);
                label(S, "logits and loss", 0, "");
            }
            l.n = 0;
            if (v == S->V - 1) {
                if (S->z3_layer)
                    zg.x = pp__head_params_gpu(&sh), pp__prog_push(b, zg);
                pp__ops_head_bwd(&sh, &l);
                emit(S, b, &l, 0);
                label(S, "logits and loss bwd", 0, "");
            }
            for (int64_t k = v == S->V - 1 ? S->m->mtp_layers - 1 : -1; k >= 0;
                 k--) {
                size_t from = l.n;
                sh.kind = mtp_kind;
                if (S->z3_layer)
                    zg.x = pp__layer_params_gpu(&sh) + pp__mtp_params_gpu(&sh),
                    pp__prog_push(b, zg);
                pp__ops_mtp_module(&sh, &l, true, k == 0);
                emit(S, b, &l, from);
                label(S, "mtp %ld bwd", (long)k, "");
            }
            for (int64_t i = Lv - 1; i >= 0; i--) {
                size_t from = l.n;
                if (S->z3_layer) zg.x = zl, pp__prog_push(b, zg);
                sh.kind = pp_model_layer_is_moe(S->m, first_layer + i) ? 2 : 1;
                pp__ops_layer_bwd(&sh, &l);
                if (first_layer + i < S->par->offload)
                    offload_wait(S, b, ops_compute_s(&l, from),
                                 "activation reload", first_layer + i);
                emit(S, b, &l, from);
                label(S, "layer %ld %s", (long)(first_layer + i), "bwd");
            }
            if (v == 0) {
                size_t from = l.n;
                if (S->z3_layer)
                    zg.x = pp__embed_params_gpu(&sh), pp__prog_push(b, zg);
                pp__ops_embed_bwd(&sh, &l);
                emit(S, b, &l, from);
                label(S, "embedding bwd", 0, "");
            }
            first_layer += Lv;
        }
        pp__oplist_fini(&l);
    }
    /* Resolve label indices into strings now that the array stays put. */
    for (int32_t v = 0; v < S->V; v++) {
        program *pr[2] = {&S->fwd[v], &S->bwd[v]};
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < pr[k]->n; i++) {
                uintptr_t x = (uintptr_t)pr[k]->it[i].label;
                pr[k]->it[i].label = x ? S->labels[x - 1] : "";
            }
    }
}

/* Parameters a stage holds, from the MARKs of its programs. */
double pp__step_stage_params(step *S, int32_t p) {
    double sum = 0;
    for (int32_t v = p; v < S->V; v += S->pp)
        for (size_t i = 0; i < S->bwd[v].n; i++)
            if (S->bwd[v].it[i].kind == IT_MARK) sum += S->bwd[v].it[i].x;
    return sum;
}

/* ------------------------------------------------------------------------
 * Which replicas repeat a group's communication (see the top).
 * ---------------------------------------------------------------------- */
static int32_t node_of(step *S, int32_t dev) {
    size_t n;
    return pp_cluster_devices(S->c, &n)[dev].node;
}

/* The group of replica d: TP ranks of stages a and b (a == b: one). */
void pp__step_mirrors(step *S, int32_t a, int32_t b, int32_t **out,
                      int32_t *n_out) {
    int32_t node0 = node_of(S, D(S, 0, a, 0));
    bool local = true;
    for (int32_t t = 0; t < S->tp; t++)
        if (node_of(S, D(S, t, a, 0)) != node0 ||
            node_of(S, D(S, t, b, 0)) != node0)
            local = false;
    int32_t *r = pp_xmalloc((size_t)S->dp * sizeof *r), n = 0;
    r[n++] = 0;
    for (int32_t d = 1; d < S->dp; d++) {
        bool near = !local;
        for (int32_t t = 0; t < S->tp && !near; t++)
            near = node_of(S, D(S, t, a, d)) == node0 ||
                   node_of(S, D(S, t, b, d)) == node0;
        if (near) r[n++] = d;
    }
    *out = r;
    *n_out = n;
}

/* ------------------------------------------------------------------------
 * Set-up and results.
 * ---------------------------------------------------------------------- */
void pp_step_config_init(pp_step_config *c) {
    memset(c, 0, sizeof *c);
    c->fidelity = PP_FIDELITY_FLOW;
    c->schedule = PP_SCHED_1F1B;
    c->placement[0] = 't';
    c->placement[1] = 'p';
    c->placement[2] = 'd';
    c->optimizer = PP_OPT_ADAM_MIXED;
    c->check_memory = true;
    c->p2p_sync = true;
    c->p2p_scatter = true;
    c->dp_algo = PP_ALGO_RING;
    c->tp_algo = PP_ALGO_RING;
    c->gran = PP_GRAN_STREAM;
    c->grad_bytes = PP_GRAD_SYNC_BYTES;
}

void pp_step_config_stack(pp_step_config *c, const pp_stack *s) {
    c->p2p_sync = s->p2p_sync;
    c->p2p_scatter = s->p2p_scatter;
    c->dp_overlap = s->dp_overlap;
    c->bucket_bytes = s->bucket_bytes;
    c->grad_bytes = s->grad_reduce_bytes;
}

void pp_step_result_fini(pp_step_result *r) {
    if (!r) return;
    free(r->stages);
    r->stages = NULL;
    r->n_stages = 0;
}

static void step_free(step *S) {
    pp__step_pairs_free(S);
    if (S->fwd)
        for (int32_t v = 0; v < S->V; v++) {
            free(S->fwd[v].it);
            free(S->bwd[v].it);
        }
    free(S->fwd);
    free(S->bwd);
    free(S->labels);
    free(S->vparams);
    free(S->veparams);
    if (S->st)
        for (int32_t p = 0; p < S->pp; p++) {
            free(S->st[p].tasks);
            free(S->st[p].last_bwd);
            for (int q = 0; q < DPQ__COUNT; q++) free(S->st[p].dq[q].q);
            free(S->st[p].zpend);
        }
    free(S->st);
    if (S->tpm)
        for (int32_t p = 0; p < S->pp; p++) free(S->tpm[p]);
    if (S->ppm)
        for (int32_t p = 0; p < S->pp; p++) free(S->ppm[p]);
    free(S->tpm);
    free(S->ppm);
    free(S->n_tpm);
    free(S->n_ppm);
    free(S->msgs);
    free(S->dev);
    free(S->grp);
    pp_sim_free(S->sim);
}

/* Checks the layout against the model, the cluster and the memory. */
static int check(const pp_step_config *cfg, pp_memory *mem, pp_error *e) {
    const pp_model *m = cfg->model;
    const pp_parallel *p = cfg->par;
    const pp_cluster_info *info = pp_cluster_info_get(cfg->cluster);
    int rc = pp_parallel_validate(p, m, e);
    if (rc) return rc;
    int64_t n = pp_parallel_gpus(p);
    if (n > info->gpus)
        return pp_error_set(e, PP_EINPUT,
                            "--parallel: %s = %lld GPUs, but "
                            "cluster %s has %d",
                            p->cp > 1 ? "tp x cp x pp x dp" : "tp x pp x dp",
                            (long long)n, info->name, (int)info->gpus);
    for (int i = 0; i < 3; i++)
        if (!strchr("tpd", cfg->placement[i]) || !cfg->placement[i] ||
            cfg->placement[(i + 1) % 3] == cfg->placement[i])
            return pp_error_set(e, PP_EINVAL,
                                "simulate: placement is not a permutation "
                                "of tp, pp, dp");
    pp_schedule sk = cfg->schedule_set ? cfg->schedule
                     : p->vp > 1       ? PP_SCHED_INTERLEAVED
                                       : PP_SCHED_1F1B;
    if (sk == PP_SCHED_GPIPE && p->vp > 1)
        return pp_error_set(e, PP_EINPUT,
                            "--schedule gpipe runs one model chunk per GPU: "
                            "vp must be 1, got vp=%lld",
                            (long long)p->vp);
    /* The combined schedule waits for both inputs of a pair and sends
     * both outputs at its end: with sends waited on, or inputs gathered
     * over TP on receipt, the pair would need more states than a stage
     * has. */
    if (p->a2a_overlap && sk == PP_SCHED_GPIPE)
        return pp_error_set(e, PP_EINPUT,
                            "--parallel: a2a_overlap: needs the 1f1b or "
                            "interleaved schedule, got gpipe");
    if (p->a2a_overlap &&
        (cfg->p2p_sync || (cfg->p2p_scatter && p->tp > 1 && !p->sp)))
        return pp_error_set(e, PP_EINPUT,
                            "--parallel: a2a_overlap: podplan simulates it "
                            "with asynchronous whole-tensor pipeline sends "
                            "(--p2p async, --p2p-scatter-gather off, as "
                            "Megatron-core sends)");
    /* FP8 attention's times are published for head dim 128 on Blackwell
     * (the profiles' attention.fp8_*_time_ratio); cuDNN's FP8 kernels
     * take head dims up to 128. */
    if (p->fp8_attn && m->arch != PP_ARCH_TRANSFORMER)
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: fp8_attn=on: model %s is generic "
                            "(no attention layers)",
                            m->name);
    double hd = p->fp8_attn ? pp_model_core_head_dim(m) : 0;
    if (p->fp8_attn && !pp_profile_fp8_attn(cfg->profile))
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: fp8_attn=on: profile %s has no FP8 "
                            "attention times (attention.fp8_fwd_time_ratio, "
                            "fp8_bwd_time_ratio: published for B200, GB200 "
                            "and GB300)",
                            cfg->profile->name);
    if (p->fp8_attn && (p->fp8_recipe == PP_FP8_BLOCKWISE || hd > 128))
        return pp_error_set(e, PP_EUSAGE, "--parallel: fp8_attn=on: %s",
                            hd > 128 ? "cuDNN's FP8 attention takes head "
                                       "dims up to 128"
                                     : "not with the blockwise FP8 recipe "
                                       "(Transformer Engine has no FP8 "
                                       "attention for block scaling)");
    if ((rc = pp_optimizer_check(cfg->optimizer, p, e)) ||
        (rc = pp_memory_per_gpu(m, p, cfg->optimizer, mem, e)))
        return rc;
    double hbm = info->gpu ? info->gpu->hbm_bytes : 0;
    if (cfg->check_memory && hbm > 0 && mem->total > hbm) {
        char a[48], b[48], c[48], d[48], f[48], spec[256];
        bool at_step = pp_memory_peak_at_step(mem);
        return pp_error_set(
            e, PP_EINFEASIBLE,
            "%s with %s does not fit in memory: %s per GPU (model states "
            "%s, %s %s) but the %s has %s: %s short",
            m->name, pp_parallel_format(p, spec, sizeof spec),
            pp_unit_format(mem->total, PP_Q_BYTES, 4, a, sizeof a),
            pp_unit_format(mem->model_states, PP_Q_BYTES, 4, b, sizeof b),
            at_step ? "then the optimizer step's fp32 gradients"
                    : "activations",
            pp_unit_format(at_step ? mem->step_grads
                                   : mem->activations + mem->buffers,
                           PP_Q_BYTES, 4, c, sizeof c),
            info->gpu->name, pp_unit_format(hbm, PP_Q_BYTES, 4, d, sizeof d),
            pp_unit_format(mem->total - hbm, PP_Q_BYTES, 4, f, sizeof f));
    }
    /* Offloaded activations land in the server's host memory, one share
     * per GPU. */
    double host = mem->offloaded * info->gpus_per_node;
    if (cfg->check_memory && host > 0 && info->host_memory_bytes > 0 &&
        host > info->host_memory_bytes) {
        char a[48], b[48];
        return pp_error_set(
            e, PP_EINFEASIBLE,
            "%s: offload=%lld puts %s of activations in host memory per "
            "server (%d GPUs), but a server of %s has %s",
            m->name, (long long)p->offload,
            pp_unit_format(host, PP_Q_BYTES, 4, a, sizeof a),
            (int)info->gpus_per_node, info->name,
            pp_unit_format(info->host_memory_bytes, PP_Q_BYTES, 4, b,
                           sizeof b));
    }
    return 0;
}

static int setup(step *S, const pp_step_config *cfg, pp_error *e) {
    const pp_parallel *p = cfg->par;
    const pp_cluster_info *info = pp_cluster_info_get(cfg->cluster);
    int rc;
    S->cfg = cfg;
    S->m = cfg->model;
    S->par = p;
    S->c = cfg->cluster;
    if (cfg->profile)
        S->prof = *cfg->profile;
    else if ((rc = pp_profile_load(NULL, info->gpu, &S->prof, e)))
        return rc;
    /* The overlapped all-to-all's kernels take the stack's SMs for its
     * dispatcher; what that costs the compute beside them is the
     * profile's (pp_profile_a2a_beside). */
    S->beside = p->a2a_overlap ? pp_profile_a2a_beside(&S->prof, p) : 1;
    for (int c = 0; c < DPQ__COUNT + 2; c++)
        S->beside_dp[c] =
            pp_profile_beside_nccl(&S->prof, c * S->prof.sw.dp_sms);
    S->tp = (int32_t)p->tp;
    S->pp = (int32_t)p->pp;
    S->cp = p->cp > 1 ? (int32_t)p->cp : 1;
    S->cp_a2a =
        p->cp_comm == PP_CPCOMM_A2A_P2P ? (int32_t)pp_parallel_cp_a2a(p) : 1;
    S->dp = (int32_t)p->dp * S->cp;
    S->vp = (int32_t)p->vp;
    S->V = S->pp * S->vp;
    S->nmb = (int32_t)(p->gbs / (p->mbs * p->dp));

    int64_t n = pp_parallel_gpus(p), gpn = info->gpus_per_node;
    S->dev = pp_xmalloc((size_t)n * sizeof *S->dev);
    /* CP ranks sit next to the TP ranks (Megatron-core orders ranks
     * tp-cp-ep-dp-pp): the placement's "t" is the tp x cp block, TP rank
     * innermost. */
    for (int32_t d = 0; d < S->dp; d++)
        for (int32_t q = 0; q < S->pp; q++)
            for (int32_t t = 0; t < S->tp; t++) {
                int64_t r = pp_placement_rank3(
                    p->tp * S->cp, p->pp, p->dp, cfg->placement,
                    (int64_t)(d % S->cp) * p->tp + t, q, d / S->cp);
                D(S, t, q, d) = pp_cluster_gpu(S->c, (int32_t)(r / gpn),
                                               (int32_t)(r % gpn));
            }
    /* Scratch for a DP, CP or EP group (an EP group can span TP ranks:
     * at most tp x cp x dp), twice: DeepEP's sub-groups (step_group.c)
     * are built beside their EP group. */
    S->grp = pp_xmalloc(2 * (size_t)(S->dp * S->tp > 2 ? S->dp * S->tp : 2) *
                        sizeof *S->grp);

    S->z3_layer = p->zero >= 3 && S->dp > 1 && S->prof.sw.zero_max >= 3 &&
                  S->m->arch == PP_ARCH_TRANSFORMER;
    S->pag = p->zero >= 1 && p->zero < 3 && S->dp > 1 &&
             S->prof.sw.param_gather_overlap;
    S->host_k = S->prof.sw.host_kernel_s;
    if (S->off_bytes > 0) S->off_Bps = pp_cluster_host_Bps(S->c, D(S, 0, 0, 0));
    pp__step_build(S);
    S->vparams = pp_xcalloc((size_t)S->V, sizeof *S->vparams);
    S->veparams = pp_xcalloc((size_t)S->V, sizeof *S->veparams);
    for (int32_t v = 0; v < S->V; v++)
        for (size_t i = 0; i < S->bwd[v].n; i++) {
            const item *it = &S->bwd[v].it[i];
            if (it->kind != IT_MARK) continue;
            S->vparams[v] += it->x;
            if (it->grp == PP__GRP_EP) S->veparams[v] += it->x;
        }
    /* Expert data parallelism (step_group.c): ep x etp expert slices,
     * each held by tp cp dp / (ep etp) ranks. */
    S->n_edp = (int32_t)((p->ep > 1 ? p->ep : 1) * pp_parallel_etp(p));
    S->edp = S->dp * S->tp / S->n_edp;
    if (S->m->arch == PP_ARCH_TRANSFORMER) {
        /* A CP rank holds and sends s / cp of the sequence. */
        S->act_bytes = pp_activation_bytes(S->m, p->mbs) / S->cp;
        /* With sp the tensor between stages is already split over tp;
         * without it each rank sends 1/tp and the receiver gathers, unless
         * every rank sends its whole copy (Megatron-core: tp x traffic). */
        S->gather = S->tp > 1 && !p->sp && cfg->p2p_scatter;
        S->p2p_bytes = S->tp > 1 && (p->sp || cfg->p2p_scatter)
                           ? S->act_bytes / S->tp
                           : S->act_bytes;
        /* The embedding group: a tied output layer's table, or the copy
         * the last stage keeps for multi-token prediction. */
        S->emb_sync =
            S->pp > 1 && (S->m->tied_embeddings || S->m->mtp_layers > 0);
        S->emb_bytes = cfg->grad_bytes * (double)S->m->vocab *
                       (double)S->m->hidden / S->tp;
    }
    /* ZeRO-2 and 3 keep only their shard of the gradients, so every
     * micro-batch's are reduce-scattered after its backward (DeepSpeed's
     * stage_1_and_2.py and stage3.py; its maintainers in deepspeed#2252:
     * "gradient reduction is required after every backward because of
     * gradient partitioning"), not once per iteration. */
    S->mb_reduce = p->zero >= 2 && S->dp > 1;
    S->tpm = pp_xcalloc((size_t)S->pp, sizeof *S->tpm);
    S->ppm = pp_xcalloc((size_t)S->pp, sizeof *S->ppm);
    S->n_tpm = pp_xcalloc((size_t)S->pp, sizeof *S->n_tpm);
    S->n_ppm = pp_xcalloc((size_t)S->pp, sizeof *S->n_ppm);
    for (int32_t q = 0; q < S->pp; q++) {
        pp__step_mirrors(S, q, q, &S->tpm[q], &S->n_tpm[q]);
        pp__step_mirrors(S, q, (q + 1) % S->pp, &S->ppm[q], &S->n_ppm[q]);
    }
    pp_schedule sk = cfg->schedule_set ? cfg->schedule
                     : p->vp > 1       ? PP_SCHED_INTERLEAVED
                                       : PP_SCHED_1F1B;
    S->st = pp_xcalloc((size_t)S->pp, sizeof *S->st);
    for (int32_t q = 0; q < S->pp; q++) {
        stage *st = &S->st[q];
        st->p = q;
        st->n_tasks = 2 * S->nmb * S->vp;
        st->tasks = pp_xmalloc((size_t)st->n_tasks * sizeof *st->tasks);
        if ((rc = pp__schedule_tasks(sk, S->pp, q, S->vp, S->nmb,
                                     p->a2a_overlap, st->tasks, e)))
            return rc;
        st->last_bwd = pp_xcalloc((size_t)S->vp, sizeof *st->last_bwd);
        for (int32_t i = 0; i < st->n_tasks; i++)
            if (st->tasks[i].bwd) st->last_bwd[st->tasks[i].chunk] = i;
        st->params = pp__step_stage_params(S, q);
        for (int32_t v = q; v < S->V; v += S->pp) st->eparams += S->veparams[v];
        /* The distributed optimizer shards the experts over their own
         * group (models/moe.c, pp__moe_shard). */
        st->opt_params = p->zero >= 1 ? (st->params - st->eparams) / S->dp +
                                            st->eparams / S->edp
                                      : st->params;
        st->state = ST_IDLE;
    }
    size_t nm = 2 * (size_t)S->V * (size_t)S->nmb;
    S->msgs = pp_xmalloc(nm * sizeof *S->msgs);
    for (size_t i = 0; i < nm; i++) S->msgs[i] = (msg){0, -1, 0, 0};
    if ((rc = pp_sim_new(S->c, cfg->fidelity, cfg->seed, &S->sim, e)))
        return rc;
    S->eng = pp_sim_engine(S->sim);
    if (cfg->trace && (rc = pp_sim_trace(S->sim, cfg->trace, e))) return rc;
    return 0;
}

int pp_step_simulate(const pp_step_config *cfg, pp_step_result *out,
                     pp_error *e) {
    if (!cfg || !cfg->model || !cfg->par || !cfg->cluster || !out)
        return pp_error_set(e, PP_EINVAL, "simulate: incomplete config");
    pp_memory mem;
    int rc = check(cfg, &mem, e);
    if (rc) return rc;
    pp_step_config c = *cfg;
    if (!(c.bucket_bytes > 0)) c.bucket_bytes = PP_STEP_BUCKET_BYTES;
    if (!(c.grad_bytes > 0)) c.grad_bytes = PP_GRAD_SYNC_BYTES;
    if (!c.schedule_set)
        c.schedule = cfg->par->vp > 1 ? PP_SCHED_INTERLEAVED : PP_SCHED_1F1B;

    step *S = pp_xcalloc(1, sizeof *S);
    /* An offloaded layer's activations: one layer, one micro-batch. */
    if (cfg->par->offload > 0) S->off_bytes = mem.activations_per_layer;
    rc = setup(S, &c, e);
    if (!rc) {
        pp__step_start(S);
        pp_engine_run(S->eng, INFINITY);
        if (S->failed) {
            rc = S->failed;
            if (e) pp_error_set(e, rc, "simulate: %s", S->err.msg);
        }
    }
    for (int32_t q = 0; !rc && q < S->pp; q++)
        if (S->st[q].state != ST_DONE)
            rc = pp_error_set(e, PP_EINTERNAL,
                              "simulate: stage %d stopped in state \"%s\" "
                              "at task %d of %d (t = %g s)",
                              q, pp__step_state_names[S->st[q].state],
                              S->st[q].cur, S->st[q].n_tasks,
                              pp_sim_now(S->sim));
    if (rc) {
        step_free(S);
        free(S);
        return rc;
    }

    pp_step_result r;
    memset(&r, 0, sizeof r);
    double T = 0;
    for (int32_t q = 0; q < S->pp; q++)
        if (S->st[q].t_done > T) T = S->st[q].t_done;
    r.iteration_time_s = T;
    r.n_stages = (size_t)S->pp;
    r.stages = pp_xcalloc(r.n_stages, sizeof *r.stages);
    for (int32_t q = 0; q < S->pp; q++) {
        pp_breakdown *b = &S->st[q].bd;
        b->bubble_s += T - S->st[q].t_done;
        r.stages[q] = *b;
        r.total.compute_s += b->compute_s / S->pp;
        r.total.tp_comm_s += b->tp_comm_s / S->pp;
        r.total.pp_comm_s += b->pp_comm_s / S->pp;
        r.total.dp_comm_exposed_s += b->dp_comm_exposed_s / S->pp;
        r.total.bubble_s += b->bubble_s / S->pp;
        r.total.other_s += b->other_s / S->pp;
        r.total.host_s += b->host_s / S->pp;
        r.total.ep_comm_s += b->ep_comm_s / S->pp;
        r.total.cp_comm_s += b->cp_comm_s / S->pp;
    }
    pp_flops f;
    if ((rc = pp_flops_count(S->m, cfg->par->gbs, cfg->par->recompute, &f,
                             e)) == 0) {
        f.total += pp_flops_recompute_mods(S->m, cfg->par->gbs,
                                           cfg->par->recompute_mods);
        r.gpus = pp_parallel_gpus(cfg->par);
        r.flops_iter = f.total;
        r.model_flops_iter = f.model;
        r.tflops_per_gpu = f.total / ((double)r.gpus * T) / 1e12;
        r.mfu = f.model / ((double)r.gpus * T * S->prof.peak_flops);
        r.memory = mem;
        const pp_gpu_spec *g = pp_cluster_info_get(S->c)->gpu;
        r.gpu_memory_bytes = g ? g->hbm_bytes : 0;
        r.schedule = c.schedule;
        r.events = pp_engine_events(S->eng);
        r.transfers = S->transfers;
        r.collectives = S->collectives;
        if (pp_sim_net(S->sim))
            pp_flownet_stats_get(pp_sim_net(S->sim), &r.net);
    }
    step_free(S);
    free(S);
    if (rc) {
        pp_step_result_fini(&r);
        return rc;
    }
    *out = r;
    return 0;
}
