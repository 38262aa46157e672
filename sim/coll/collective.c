/*
 * collective.c: collectives as the point-to-point transfers a real
 * implementation sends, run on a simulation (pp_sim_send), so they see
 * whatever the simulation's fidelity sees: contention on shared links at
 * `flow`, the alpha-beta cost of every transfer alone at `analytic`.
 *
 * This file holds the public entry points and the phase machine; the
 * schedules (rings, trees, ...) are in collective_sched.c.  A collective
 * is a program of phases (collective_int.h): the transfers of phase p are
 * started together, the phase ends when all have arrived (plus their
 * tails), then its post delay (the reduction of what arrived) runs, then
 * phase p+1 is generated and started.
 *
 * Reported figures follow nccl-tests (doc/PERFORMANCE.md in
 * github.com/NVIDIA/nccl-tests): S is the buffer size nccl-tests prints
 * (for AllGather the gathered output, for ReduceScatter the input),
 * algbw = S / t, and busbw = algbw x a factor per operation that makes
 * busbw comparable with the bandwidth of the hardware: 2(n-1)/n for
 * AllReduce (each rank sends and receives 2(n-1)/n S on a ring),
 * (n-1)/n for AllGather, ReduceScatter and AlltoAll, 1 for Broadcast and
 * SendRecv.  The factor belongs to the operation, not the algorithm:
 * nccl-tests prints the same busbw formula whether NCCL ran Ring, Tree or
 * CollNet, so an in-network (SHARP) AllReduce, which moves only S each way
 * per GPU, reports a busbw up to twice the link rate, as NVIDIA's SHARP
 * figures do.
 */
#include "collective_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_run.h"

/* Trace span names: static, so the trace may borrow them. */
#define SPAN_ROW(op)                                                           \
    {                                                                          \
        op " ring", op " tree", op " hier", op " naive", op " ps",             \
            op " sharp", op " rd", op " nccl"                                 \
    }
static const char *const span_names[PP_COLL__COUNT][PP_ALGO__COUNT] = {
    SPAN_ROW("allreduce"), SPAN_ROW("allgather"), SPAN_ROW("reducescatter"),
    SPAN_ROW("broadcast"), SPAN_ROW("alltoall"),  SPAN_ROW("sendrecv")};

/* ------------------------------------------------------------------------
 * Helpers for the schedules.
 * ---------------------------------------------------------------------- */
static void add(pp__coll *k, int32_t src, int32_t via, int32_t dst,
                double bytes, double tail_s) {
    PP_VEC_RESERVE(k->x, k->cap_x, k->nx + 1, 64);
    k->x[k->nx++] = (pp__xfer){src, dst, via, k->key, bytes, tail_s};
}

void pp__coll_add(pp__coll *k, int32_t src, int32_t dst, double bytes,
                  double tail_s) {
    add(k, src, -1, dst, bytes, tail_s);
}

void pp__coll_add_via(pp__coll *k, int32_t src, int32_t via, int32_t dst,
                      double bytes) {
    add(k, src, via, dst, bytes, 0);
}

/* Latency of the path the simulation takes between two endpoints (every
 * equal-cost path, and every NVSwitch way, has the same latency). */
int pp__coll_lat(pp__coll *k, int32_t src, int32_t dst, double *lat_s,
                 pp_error *e) {
    const int32_t *path;
    size_t np;
    double bneck;
    return pp_route(pp__sim_router(k->s), k->dev[src], k->dev[dst], k->key,
                    &path, &np, lat_s, &bneck, e);
}

/* ------------------------------------------------------------------------
 * The phase machine.
 * ---------------------------------------------------------------------- */
static void coll_free(pp__coll *k) {
    if (!k) return;
    free(k->dev);
    free(k->off);
    free(k->mem);
    free(k->ring);
    free(k->parent);
    free(k->depth);
    free(k->height);
    free(k->acc);
    free(k->srv_of);
    free(k->rail_of);
    free(k->relay);
    free(k->x);
    free(k->end);
    free(k);
}

static void on_finish(pp_engine *eng, void *ctx, uint64_t arg);

static void finish(pp__coll *k) {
    double now = pp_sim_now(k->s);
    /* A fitted network is a floor at flow fidelity (coll_fit.c): the
     * collective cannot beat what the measured machine did alone. */
    if (k->t_fit > 0 && !k->failed && !k->fit_held) {
        k->fit_held = true;
        double rest = k->t0 + k->t_fit - now;
        if (rest > 0) {
            for (size_t i = 0; i < k->n; i++) k->end[i] = k->t0 + k->t_fit;
            pp_engine_after(pp_sim_engine(k->s), rest, on_finish, k, 0);
            return;
        }
    }
    if (pp__sim_tracing(k->s)) {
        /* Each rank is busy until its last transfer or reduction; a
         * parameter server until the end. */
        size_t nd;
        const pp_device *devs = pp_cluster_devices(k->c, &nd);
        for (size_t i = 0; i < k->n_dev; i++)
            if (i < k->n || devs[k->dev[i]].kind == PP_DEV_GPU)
                pp__sim_trace_comm(k->s, k->dev[i], k->name, k->t0,
                                   i < k->n ? k->end[i] : now);
    }
    if (k->sink) {
        k->sink->finished = true;
        k->sink->t_end = now;
        k->sink->transfers = k->transfers;
        k->sink->relayed = k->relayed;
        k->sink->gran = k->gran;
        k->sink->channels = k->C > 0 ? k->C : 1;
        k->sink->fit = k->fit;
        k->sink->fit_s = k->fit ? k->t_fit : 0;
        k->sink->nccl = k->nccl;
    }
    /* A collective that failed while starting was reported to its caller
     * then; it only drained its transfers since and does not call back. */
    if (!k->silent && k->done) k->done(k->s, k->ctx, k->arg);
    coll_free(k);
}

static void on_finish(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    (void)arg;
    finish(ctx);
}

/* Records the first error (for pp_sim_collective) and stops the program:
 * what is in flight drains, then the collective finishes. */
static void fail(pp__coll *k, int rc, const pp_error *e) {
    if (!k->failed && k->sink) {
        k->sink->rc = rc;
        if (e) k->sink->err = *e;
    }
    k->failed = true;
}

/* Marks the ranks of the phase just ended as busy until now. */
static void mark_phase(pp__coll *k) {
    double now = pp_sim_now(k->s);
    for (size_t i = 0; i < k->nx; i++) {
        if ((size_t)k->x[i].src < k->n) k->end[k->x[i].src] = now;
        if ((size_t)k->x[i].dst < k->n) k->end[k->x[i].dst] = now;
    }
}

static void on_arrive(pp_sim *s, void *ctx, uint64_t arg);
static void on_tail(pp_engine *eng, void *ctx, uint64_t arg);
static void on_post(pp_engine *eng, void *ctx, uint64_t arg);

/* Generates and starts phases until one has something in flight or a
 * post delay to wait for, and finishes the collective after the last.
 * Returns 0 or the error of a phase that could not start; then what is
 * already in flight drains and the collective finishes, except that a
 * collective failing inside pp_sim_collective_start is freed (or left to
 * drain silently) because its caller gets the error instead of done. */
static int launch(pp__coll *k, pp_error *e) {
    int rc = 0;
    while (k->phase < k->n_phases && !k->failed) {
        k->nx = 0;
        k->post_s = 0;
        k->key = 0;
        rc = k->gen(k, k->phase, e);
        if (rc) break;
        if (k->nx == 0) {
            if (k->post_s > 0) {
                pp_engine_after(pp_sim_engine(k->s), k->post_s, on_post, k, 0);
                return 0;
            }
            k->phase++;
            continue;
        }
        k->pending = k->nx;
        for (size_t i = 0; i < k->nx; i++) {
            const pp__xfer *x = &k->x[i];
            rc = pp__sim_send_via(k->s, k->dev[x->src], x->via,
                                  k->dev[x->dst], x->bytes, x->key, on_arrive,
                                  k, i, e);
            if (rc) {
                pp_error_prefix(e, "%s, phase %lld", k->name,
                                (long long)k->phase);
                k->pending -= k->nx - i;
                break;
            }
            k->transfers++;
            if (x->via >= 0) k->relayed++;
        }
        if (rc) break;
        return 0; /* in flight */
    }
    if (rc) {
        fail(k, rc, e);
        if (k->in_start) {
            k->silent = true;
            if (k->pending == 0) coll_free(k);
            return rc;
        }
        if (k->pending > 0) return rc;
    }
    if (k->in_start) /* never call back inside the caller's own call */
        pp_engine_after(pp_sim_engine(k->s), 0, on_finish, k, 0);
    else
        finish(k);
    return rc;
}

static void relaunch(pp__coll *k) {
    pp_error e = PP_ERROR_INIT;
    launch(k, &e); /* an error is kept in the sink by fail() */
}

static void phase_done(pp__coll *k) {
    mark_phase(k);
    if (k->failed) {
        finish(k);
        return;
    }
    if (k->post_s > 0) {
        pp_engine_after(pp_sim_engine(k->s), k->post_s, on_post, k, 0);
        return;
    }
    k->phase++;
    relaunch(k);
}

static void arrived(pp__coll *k) {
    if (--k->pending == 0) phase_done(k);
}

static void on_arrive(pp_sim *s, void *ctx, uint64_t arg) {
    (void)s;
    pp__coll *k = ctx;
    double tail = k->x[arg].tail_s;
    if (tail > 0 && !k->failed)
        pp_engine_after(pp_sim_engine(k->s), tail, on_tail, k, arg);
    else
        arrived(k);
}

static void on_tail(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    (void)arg;
    arrived(ctx);
}

static void on_post(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    (void)arg;
    pp__coll *k = ctx;
    mark_phase(k);
    k->phase++;
    relaunch(k);
}

/* ------------------------------------------------------------------------
 * Starting one.
 * ---------------------------------------------------------------------- */

/* Groups up to this size are checked for duplicates pairwise. */
#define SMALL_GROUP 64

/* Whether device d is among the first n ranks of g. */
/* Summing two inputs into one output reads two bytes and writes one for
 * every byte reduced, so a kernel bound by memory bandwidth sums at about
 * HBM/3 (the same argument as STREAM's "add"). */
double pp_coll_reduce_Bps(const pp_gpu_spec *gpu) {
    return gpu && gpu->hbm_Bps > 0 ? gpu->hbm_Bps / 3.0 : INFINITY;
}

static bool in_group(const int32_t *g, size_t n, int32_t d) {
    for (size_t j = 0; j < n; j++)
        if (g[j] == d) return true;
    return false;
}

/* The fitted network's collective at analytic fidelity: one wait. */
static int gen_fit(pp__coll *k, int64_t phase, pp_error *e) {
    (void)phase;
    (void)e;
    k->post_s = k->t_fit;
    for (size_t i = 0; i < k->n; i++) k->end[i] = k->t0 + k->t_fit;
    return 0;
}

/* algo nccl: NCCL's tuning model (nccl.c) times the call.  At analytic
 * fidelity that is the collective: one wait.  At flow fidelity a Ring or
 * Tree choice also sends its transfers (contending with the rest) and
 * the model's time is a floor, as for a fitted profile; NVLS and CollNet
 * have no transfer schedule here and stay a wait. */
static int plan_nccl(pp__coll *k, const pp_coll_spec *spec, pp_error *e) {
    int rc = pp_coll_nccl_choose(k->c, spec->gpus, spec->n_gpus, k->op, k->S,
                                 spec->nccl_collnet, &k->nccl, e);
    if (rc) return rc;
    k->t_fit = k->nccl.time_s;
    bool ring = !strcmp(k->nccl.algo, "Ring"),
         tree = !strcmp(k->nccl.algo, "Tree");
    if (pp_sim_net(k->s) && (ring || tree)) {
        k->algo = ring ? PP_ALGO_RING : PP_ALGO_TREE;
        rc = pp__coll_plan(k, e);
        k->algo = PP_ALGO_NCCL;
        return rc;
    }
    /* NCCL's steady-state closed form, on its own channels. */
    k->gran = PP_GRAN_STREAM;
    k->C = k->nccl.channels;
    k->gen = gen_fit;
    k->n_phases = 1;
    return 0;
}

/* Checks the spec against the cluster and builds the endpoint table. */
static int coll_new(pp_sim *s, const pp_coll_spec *spec, pp__coll **out,
                    pp_error *e) {
    if (!spec || (unsigned)spec->op >= PP_COLL__COUNT)
        return pp_error_set(e, PP_EINVAL, "collective: unknown operation");
    if ((unsigned)spec->algo >= PP_ALGO__COUNT)
        return pp_error_set(e, PP_EINVAL, "collective: unknown algorithm");
    if (!(spec->bytes >= 0) || !isfinite(spec->bytes))
        return pp_error_set(e, PP_EINVAL,
                            "collective: bytes must be a finite size >= 0");
    if (!spec->gpus || spec->n_gpus < 1 || spec->n_gpus > INT32_MAX / 4)
        return pp_error_set(e, PP_EINVAL, "collective: empty group");
    bool ps = spec->algo == PP_ALGO_PS;
    if (spec->n_gpus < 2 && !ps)
        return pp_error_set(e, PP_EINVAL,
                            "collective: %s needs at least 2 GPUs, got %zu",
                            pp_coll_op_name(spec->op), spec->n_gpus);
    if (spec->channels < 0 || spec->channels > 1024)
        return pp_error_set(e, PP_EINVAL,
                            "collective: channels must be 0..1024, got %d",
                            spec->channels);
    if (spec->root < 0 || (size_t)spec->root >= spec->n_gpus)
        return pp_error_set(e, PP_EINVAL,
                            "collective: root rank %d is not in 0..%zu",
                            (int)spec->root, spec->n_gpus - 1);
    if (spec->reduce_Bps < 0 || isnan(spec->reduce_Bps))
        return pp_error_set(e, PP_EINVAL,
                            "collective: reduce rate must be >= 0");

    const pp_cluster *c = pp_sim_cluster(s);
    size_t n_devs;
    const pp_device *devs = pp_cluster_devices(c, &n_devs);
    /* Duplicates: a small group (a TP group, most DP groups) compares
     * with the ranks before it; only a large one pays for a table of every
     * device (zeroing it per collective cost more than the check). */
    bool small = spec->n_gpus <= SMALL_GROUP;
    unsigned char *seen = small ? NULL : pp_xcalloc(n_devs ? n_devs : 1, 1);
    int rc = 0;
    for (size_t i = 0; i < spec->n_gpus && !rc; i++) {
        int32_t d = spec->gpus[i];
        if (d < 0 || (size_t)d >= n_devs || devs[d].kind != PP_DEV_GPU)
            rc = pp_error_set(e, PP_EINVAL,
                              "collective: rank %zu: device %d is not a GPU "
                              "of %s",
                              i, (int)d, pp_cluster_info_get(c)->name);
        else if (small ? in_group(spec->gpus, i, d) : seen[d]++)
            rc = pp_error_set(e, PP_EINVAL,
                              "collective: %s appears twice in the group",
                              devs[d].name);
    }
    if (!rc && ps) {
        int32_t d = spec->server;
        if (d < 0 || (size_t)d >= n_devs)
            rc = pp_error_set(e, PP_EINVAL,
                              "collective: ps: server device %d does not "
                              "exist",
                              (int)d);
        else if (small ? in_group(spec->gpus, spec->n_gpus, d) : seen[d])
            rc = pp_error_set(e, PP_EINVAL,
                              "collective: ps: the server %s is also a "
                              "worker",
                              devs[d].name);
    }
    free(seen);
    if (rc) return rc;

    pp__coll *k = pp_xcalloc(1, sizeof *k);
    k->s = s;
    k->c = c;
    k->op = spec->op;
    k->algo = spec->algo;
    k->gran = spec->gran;
    k->S = spec->bytes;
    k->n = spec->n_gpus;
    k->root = spec->root;
    k->name = span_names[spec->op][spec->algo];
    const pp_gpu_spec *g = pp_cluster_info_get(c)->gpu;
    k->reduce_Bps =
        spec->reduce_Bps > 0 ? spec->reduce_Bps : pp_coll_reduce_Bps(g);
    k->n_dev = k->n + (ps ? 1 : 0);
    k->dev = pp_xmalloc(k->n_dev * sizeof *k->dev);
    memcpy(k->dev, spec->gpus, k->n * sizeof *k->dev);
    if (ps) k->dev[k->n] = spec->server;
    k->end = pp_xcalloc(k->n, sizeof *k->end);
    k->C = spec->channels;
    k->no_pxn = spec->no_pxn;

    rc = pp__coll_group(k, e);
    if (!rc && k->algo == PP_ALGO_NCCL) rc = plan_nccl(k, spec, e);
    else if (!rc) rc = pp__coll_plan(k, e);
    if (rc) {
        coll_free(k);
        return rc;
    }
    if (spec->fits && spec->n_fits) {
        const pp_net_fit *f = pp_coll_fit_find(
            spec->fits, spec->n_fits, pp_coll_op_name(k->op),
            pp_coll_algo_name(k->algo),
            k->m > 1 ? PP_NET_SCOPE_INTER : PP_NET_SCOPE_INTRA,
            (int64_t)k->n);
        double t = f ? pp_coll_fit_time_s(f, (int64_t)k->n, k->S) : 0;
        if (t > 0 && isfinite(t)) {
            k->t_fit = t;
            k->fit = f;
            /* Analytic: the fit is the collective's time, nothing sent. */
            if (!pp_sim_net(s)) {
                k->gen = gen_fit;
                k->n_phases = 1;
            }
        }
    }
    *out = k;
    return 0;
}

static int coll_start(pp_sim *s, const pp_coll_spec *spec, pp_sim_done_fn done,
                      void *ctx, uint64_t arg, pp__coll_sink *sink,
                      pp_error *e) {
    pp__coll *k = NULL;
    int rc = coll_new(s, spec, &k, e);
    if (rc) return rc;
    k->done = done;
    k->ctx = ctx;
    k->arg = arg;
    k->sink = sink;
    k->t0 = pp_sim_now(s);
    for (size_t i = 0; i < k->n; i++) k->end[i] = k->t0;
    k->in_start = true;
    rc = launch(k, e); /* on error k may be gone */
    if (rc) return rc;
    k->in_start = false;
    return 0;
}

int pp_sim_collective_start(pp_sim *s, const pp_coll_spec *spec,
                            pp_sim_done_fn done, void *ctx, uint64_t arg,
                            pp_error *e) {
    return coll_start(s, spec, done, ctx, arg, NULL, e);
}

int pp_sim_collective(pp_sim *s, const pp_coll_spec *spec, pp_coll_result *out,
                      pp_error *e) {
    pp_engine *eng = pp_sim_engine(s);
    size_t nl = 0;
    const double *lb = pp_sim_link_bytes(s, &nl);
    double *before = pp_xmalloc((nl ? nl : 1) * sizeof *before);
    if (nl) memcpy(before, lb, nl * sizeof *before);
    uint64_t ev0 = pp_engine_events(eng);
    double t0 = pp_sim_now(s);

    pp__coll_sink sink;
    memset(&sink, 0, sizeof sink);
    int rc = coll_start(s, spec, NULL, NULL, 0, &sink, e);
    if (rc) {
        /* Drain whatever the failed start had already sent. */
        pp_engine_run(eng, INFINITY);
        free(before);
        return rc;
    }
    pp_engine_run(eng, INFINITY);
    if (!sink.finished) {
        free(before);
        return pp_error_set(e, PP_EINTERNAL,
                            "collective: the engine ran dry before the "
                            "collective finished");
    }
    if (sink.rc) {
        free(before);
        if (e) *e = sink.err;
        return sink.rc;
    }

    pp_coll_result r;
    memset(&r, 0, sizeof r);
    r.time_s = sink.t_end - t0;
    r.algbw_Bps = r.time_s > 0 ? spec->bytes / r.time_s : INFINITY;
    r.busbw_Bps = r.algbw_Bps * pp_coll_busbw_factor(spec->op, spec->n_gpus);
    if (spec->bytes == 0) r.algbw_Bps = r.busbw_Bps = 0;
    r.transfers = sink.transfers;
    r.relayed = sink.relayed;
    r.gran = sink.gran;
    r.channels = sink.channels;
    r.fit = sink.fit;
    r.fit_s = sink.fit_s;
    r.nccl = sink.nccl;
    r.events = pp_engine_events(eng) - ev0;
    r.busiest_link = -1;
    lb = pp_sim_link_bytes(s, &nl);
    for (size_t l = 0; l < nl; l++) {
        double b = lb[l] - before[l];
        if (b > r.busiest_bytes) {
            r.busiest_bytes = b;
            r.busiest_link = (int32_t)l;
        }
    }
    free(before);
    *out = r;
    return 0;
}
