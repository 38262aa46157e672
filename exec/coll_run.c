/*
 * coll_run.c: `podplan exec collective`'s sweep on one rank.
 *
 * Per size, as nccl-tests does: fill the inputs with values that are a
 * function of (rank, index) -- small integers, so every sum is exact in
 * fp32, bf16 and fp16 and any order of reduction gives the expected bits
 * -- run once and count the elements that differ (outside the timed
 * loop), then warm up and time `iters` runs, out-of-place then in-place.
 * Every rank times each iteration; rank 0 gathers the times, reports the
 * mean over ranks of the loop time as nccl-tests does, and for the JSON
 * the median, p99 and coefficient of variation of the per-iteration time
 * (the slowest rank's) and which rank was the slowest.
 */
#include "exec_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Between the buffers of the arena: 68 KiB, 17 pages (see its use). */
#define STRIDE_PAD (17 * 4096)

_Static_assert((int)PP_EXEC_DT_BF16 == (int)PP_XDT_BF16 &&
                   (int)PP_EXEC_DT_FP16 == (int)PP_XDT_FP16 &&
                   (int)PP_EXEC_RED_MIN == (int)PP_XOP_MIN,
               "exec.h and devmem.h enums must agree");

static const char *const dt_names[] = {"float", "bfloat16", "half"};
static const char *const red_names[] = {"sum", "max", "min"};

const char *pp_exec_dtype_name(pp_exec_dtype t) {
    return (unsigned)t < 3 ? dt_names[t] : "?";
}
const char *pp_exec_redop_name(pp_exec_redop op) {
    return (unsigned)op < 3 ? red_names[op] : "?";
}
size_t pp_exec_dtype_size(pp_exec_dtype t) {
    return pp_xdtype_size((pp_xdtype)t);
}

void pp_exec_coll_opts_init(pp_exec_coll_opts *o) {
    memset(o, 0, sizeof *o);
    o->op = PP_COLL_ALLREDUCE;
    o->algo = -1;
    o->min_bytes = o->max_bytes = 32 << 20;
    o->step_factor = 2;
    o->iters = 20;
    o->warmup = 5;
    o->check = true;
    o->transport = "tcp";
    o->channels = 2;
    o->timeout_s = 30;
    o->rd_max_bytes = PP_EXEC_RD_MAX_BYTES;
    o->agg_iters = 1;
    o->average = 1;
}

void pp_exec_coll_result_free(pp_exec_coll_result *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_rows; i++)
        for (int s = 0; s < 2; s++) free(r->rows[i].side[s].slowest);
    for (int i = 0; r->rank_host && i < r->nranks; i++) free(r->rank_host[i]);
    free(r->rank_host);
    free(r->rank_pid);
    free(r->rank_dev);
    free(r->rows);
    free(r);
}

/* ---- data --------------------------------------------------------------- */

/* Rank r's input element i: an integer in -8..8. */
static float value(int r, size_t i) {
    return (float)((int)(((i % 17) * 7 + (size_t)r * 13) % 17) - 8);
}

static void put(pp_xdtype t, void *buf, size_t i, float v) {
    if (t == PP_XDT_FP32)
        ((float *)buf)[i] = v;
    else if (t == PP_XDT_BF16)
        ((uint16_t *)buf)[i] = pp__f32_to_bf16(v);
    else
        ((uint16_t *)buf)[i] = pp__f32_to_fp16(v);
}

static bool same(pp_xdtype t, const void *buf, size_t i, float v) {
    if (t == PP_XDT_FP32) return memcmp((const float *)buf + i, &v, 4) == 0;
    uint16_t want = t == PP_XDT_BF16 ? pp__f32_to_bf16(v) : pp__f32_to_fp16(v);
    return ((const uint16_t *)buf)[i] == want;
}

/* Writes rank r's input for element indices [0, n) at buf[at + i]. */
static void fill(pp_xdtype t, void *buf, size_t at, size_t n, int r) {
    for (size_t i = 0; i < n; i++) put(t, buf, at + i, value(r, i));
}

static float reduce_ranks(pp_exec_redop op, int n, size_t i) {
    float a = value(0, i);
    for (int r = 1; r < n; r++) {
        float b = value(r, i);
        a = op == PP_EXEC_RED_SUM   ? a + b
            : op == PP_EXEC_RED_MAX ? fmaxf(a, b)
                                    : fminf(a, b);
    }
    return a;
}

/* The state of a run on this rank. */
typedef struct run {
    const pp_exec_coll_opts *o;
    pp__comm c;
    int n, r;
    char *send, *recv, *scratch;
    size_t cap;        /* bytes of each buffer */
    size_t total, per; /* elements: the whole buffer, and per rank
                                  block for allgather/reducescatter/alltoall */
    pp_coll_algo algo;
    const char *impl;  /* the row's impl (exec.h) */
    bool rabenseifner; /* impl_name's "rabenseifner", kept out of the loop */
    char *arena;       /* send, recv, scratch, rd scratch: one region */
    /* --device cuda: the buffer on the GPU, and reduction scratch
     * (--reduce-on cuda); whether the arena is page-locked */
    void *d_in, *d_a, *d_b;
    bool pinned;
} run;

static bool blocked(pp_coll_op op) {
    return op == PP_COLL_ALLGATHER || op == PP_COLL_REDUCESCATTER ||
           op == PP_COLL_ALLTOALL;
}

/* The input of this rank for one run, in place or not. */
static void fill_inputs(run *u, bool inplace) {
    pp_xdtype t = u->c.dtype;
    pp_coll_op op = u->o->op;
    char *in = inplace ? u->recv : u->send;
    memset(u->recv, 0, u->total * u->c.esize);
    if (op == PP_COLL_ALLGATHER) {
        /* rank r's block: its values 0..per-1, at block r when in place */
        fill(t, in, inplace ? (size_t)u->r * u->per : 0, u->per, u->r);
    } else if (op == PP_COLL_BROADCAST) {
        if (u->r == u->o->root) fill(t, in, 0, u->total, u->r);
    } else {
        fill(t, in, 0, u->total, u->r);
    }
}

/* Elements of the output that are not what the op must produce. */
static int64_t count_wrong(const run *u, bool inplace) {
    pp_xdtype t = u->c.dtype;
    const char *out = u->recv;
    int n = u->n, r = u->r;
    int64_t bad = 0;
    switch (u->o->op) {
    case PP_COLL_ALLREDUCE:
        for (size_t i = 0; i < u->total; i++)
            bad += !same(t, out, i, reduce_ranks(u->o->redop, n, i));
        break;
    case PP_COLL_REDUCESCATTER: {
        size_t at = inplace ? (size_t)r * u->per : 0;
        for (size_t i = 0; i < u->per; i++)
            bad += !same(t, out, at + i,
                         reduce_ranks(u->o->redop, n, (size_t)r * u->per + i));
        break;
    }
    case PP_COLL_ALLGATHER:
        for (int k = 0; k < n; k++)
            for (size_t i = 0; i < u->per; i++)
                bad += !same(t, out, (size_t)k * u->per + i, value(k, i));
        break;
    case PP_COLL_BROADCAST:
        for (size_t i = 0; i < u->total; i++)
            bad += !same(t, out, i, value(u->o->root, i));
        break;
    case PP_COLL_ALLTOALL:
        for (int k = 0; k < n; k++)
            for (size_t i = 0; i < u->per; i++)
                bad += !same(t, out, (size_t)k * u->per + i,
                             value(k, (size_t)r * u->per + i));
        break;
    case PP_COLL_SENDRECV:
        for (size_t i = 0; i < u->total; i++)
            bad += !same(t, out, i, value((r + n - 1) % n, i));
        break;
    default: break;
    }
    return bad;
}

/* ---- one run ------------------------------------------------------------ */

static int cpu_reduce(void *ctx, void *dst, const void *a, const void *b,
                      size_t count, pp_error *e) {
    run *u = ctx;
    if (dst == a)
        pp__reduce_cpu(u->c.dtype, (pp_xredop)u->o->redop, dst, b, count);
    else
        pp__reduce_cpu3(u->c.dtype, (pp_xredop)u->o->redop, dst, a, b, count);
    return 0;
}

/* --device cuda --reduce-on cuda: the collective works on host copies of
 * the GPU buffer (run_timed), and each reduction of two staged slices
 * runs on the GPU, copied there and back.  Three copies per slice: on a
 * lent H100 a 2-rank allreduce of 256 MiB (tcp loopback) ran at 1.15 GB/s
 * busbw this way and 1.64 with the CPU's reduction, hence not the
 * default. */
static int cuda_reduce(void *ctx, void *dst, const void *a, const void *b,
                       size_t count, pp_error *e) {
    run *u = ctx;
    size_t len = count * u->c.esize;
    int rc;
    if ((rc = pp_cuda_h2d(u->d_a, a, len, e)) ||
        (rc = pp_cuda_h2d(u->d_b, b, len, e)) ||
        (rc = pp_cuda_reduce(u->c.dtype, (pp_xredop)u->o->redop, u->d_a, u->d_b,
                             count, e)) ||
        (rc = pp_cuda_d2h(dst, u->d_a, len, e)))
        return rc;
    return 0;
}

static int run_once(run *u, bool inplace, pp_error *e) {
    pp__comm *c = &u->c;
    size_t es = c->esize, per = u->per * es, total = u->total * es;
    switch (u->o->op) {
    case PP_COLL_ALLREDUCE:
        /* The ring reads the input where it is (NCCL's out of place); the
         * others work on a copy. */
        if (u->algo == PP_ALGO_RING)
            return pp__coll_allreduce_ring(c, u->recv, inplace ? NULL : u->send,
                                           u->total, e);
        if (!inplace) memcpy(u->recv, u->send, total);
        return u->rabenseifner
                   ? pp__coll_allreduce_rabenseifner(c, u->recv, u->total, e)
                   : pp__coll_allreduce_rd(c, u->recv, u->total, e);
    case PP_COLL_REDUCESCATTER: {
        int rc;
        rc = pp__coll_reducescatter_ring(c, u->recv, inplace ? NULL : u->send,
                                         u->per, e);
        /* out of place, NCCL's output is the start of recvbuff */
        if (!rc && !inplace && u->r)
            memmove(u->recv, u->recv + (size_t)u->r * per, per);
        return rc;
    }
    case PP_COLL_ALLGATHER:
        if (!inplace) memcpy(u->recv + (size_t)u->r * per, u->send, per);
        return pp__coll_allgather_ring(c, u->recv, u->per, e);
    case PP_COLL_BROADCAST:
        if (!inplace && u->r == u->o->root) memcpy(u->recv, u->send, total);
        return pp__coll_broadcast_chain(c, u->recv, u->total, u->o->root, e);
    case PP_COLL_ALLTOALL:
    case PP_COLL_SENDRECV: {
        /* not in place by nature: in place works from a copy */
        const char *in = u->send;
        if (inplace) {
            memcpy(u->scratch, u->recv, total);
            in = u->scratch;
        }
        return u->o->op == PP_COLL_ALLTOALL
                   ? pp__coll_alltoall_pairwise(c, in, u->recv, u->per, e)
                   : pp__coll_sendrecv_ring(c, in, u->recv, u->total, e);
    }
    default:
        return pp_error_set(e, PP_EUSAGE, "exec: %s is not implemented",
                            pp_coll_op_name(u->o->op));
    }
}

/* With --device cuda the buffers live on the GPU: copy in, run, copy out
 * (through the pinned arena: pp_exec_coll_run registers it). */
static int run_timed(run *u, bool inplace, pp_error *e) {
    int rc;
    size_t len = u->total * u->c.esize;
    char *host = inplace ? u->recv : u->send;
    if (u->o->on_device && (rc = pp_cuda_d2h(host, u->d_in, len, e))) return rc;
    if ((rc = run_once(u, inplace, e))) return rc;
    if (u->o->on_device && (rc = pp_cuda_h2d(u->d_in, u->recv, len, e)))
        return rc;
    return 0;
}

/* ---- statistics ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void pp__coll_stats(pp_exec_coll_side *sd, const double *all, int n, int iters,
                    double bytes, double factor, int average) {
    double *worst = pp_xcalloc((size_t)iters, sizeof *worst), comb = 0;
    sd->slowest = pp_xcalloc((size_t)iters, sizeof *sd->slowest);
    for (int r = 0; r < n; r++) {
        double sum = 0;
        for (int i = 0; i < iters; i++) {
            double t = all[(size_t)r * (size_t)iters + (size_t)i];
            sum += t;
            if (t > worst[i]) {
                worst[i] = t;
                sd->slowest[i] = r;
            }
        }
        double m = sum / iters;
        if (average == 0)
            comb = r == 0 ? m : comb;
        else if (average == 2)
            comb = r == 0 || m < comb ? m : comb;
        else if (average == 3)
            comb = m > comb ? m : comb;
        else
            comb += m / n;
    }
    sd->time_s = comb;
    sd->algbw_Bps = sd->time_s > 0 ? bytes / sd->time_s : 0;
    sd->busbw_Bps = sd->algbw_Bps * factor;
    double m = 0, v = 0;
    for (int i = 0; i < iters; i++) m += worst[i];
    m /= iters;
    for (int i = 0; i < iters; i++) v += (worst[i] - m) * (worst[i] - m);
    sd->cv = m > 0 && iters > 1 ? sqrt(v / (iters - 1)) / m : 0;
    qsort(worst, (size_t)iters, sizeof *worst, cmp_double);
    sd->median_s = iters % 2 ? worst[iters / 2]
                             : 0.5 * (worst[iters / 2 - 1] + worst[iters / 2]);
    size_t k = (size_t)ceil(0.99 * iters);
    sd->p99_s = worst[k ? k - 1 : 0];
    free(worst);
}

/* ---- the sweep ---------------------------------------------------------- */

static void parse_fault(pp__comm *c) {
    const char *f = getenv("PODPLAN_EXEC_FAULT");
    char mode[16] = "";
    c->fault_mode = 0;
    if (f &&
        sscanf(f, "rank=%d,step=%d,mode=%15s", &c->fault_rank, &c->fault_step,
               mode) == 3 &&
        c->fault_step >= 1) {
        c->fault_step--; /* steps are numbered from 1 in messages */
        c->fault_mode = strcmp(mode, "stop") == 0      ? 's'
                        : strcmp(mode, "kill") == 0    ? 'k'
                        : strcmp(mode, "corrupt") == 0 ? 'c'
                                                       : 'x';
    }
}

static int check_opts(const pp_exec_world *w, const pp_exec_coll_opts *o,
                      const pp_xport_ops **ops, pp_error *e) {
    if ((unsigned)o->op >= PP_COLL__COUNT)
        return pp_error_set(e, PP_EUSAGE, "bad collective op");
    if (o->algo != -1 && o->algo != PP_ALGO_RING && o->algo != PP_ALGO_RD)
        return pp_error_set(e, PP_EUSAGE,
                            "--algo: exec runs ring, rd or auto, "
                            "not %s",
                            pp_coll_algo_name(o->algo));
    if (o->algo == PP_ALGO_RD && o->op != PP_COLL_ALLREDUCE)
        return pp_error_set(
            e, PP_EUSAGE,
            "--algo rd: recursive doubling is an "
            "allreduce algorithm; %s uses ring (or --algo auto)",
            pp_coll_op_name(o->op));
    if (o->root < 0 || o->root >= w->nranks)
        return pp_error_set(e, PP_EUSAGE, "--root %d: not a rank of 0..%d",
                            o->root, w->nranks - 1);
    if (o->iters < 1 || o->warmup < 0 || o->channels < 1 || o->channels > 64 ||
        o->min_bytes > o->max_bytes || o->timeout_s <= 0 || o->agg_iters < 1 ||
        o->average < 0 || o->average > 3)
        return pp_error_set(e, PP_EUSAGE,
                            "bad iterations, channels, sizes, "
                            "timeout, agg iterations or average mode");
    if (strcmp(o->transport, "tcp") == 0) {
        *ops = &pp_xport_tcp;
    } else if (strcmp(o->transport, "verbs") == 0) {
#ifdef PODPLAN_HAVE_VERBS
        *ops = &pp_xport_verbs;
#else
        return pp_error_set(e, PP_ENODEV,
                            "--transport verbs: podplan was "
                            "built without libibverbs");
#endif
    } else {
        return pp_error_set(e, PP_EUSAGE,
                            "--transport: expected tcp|verbs, got "
                            "\"%s\"",
                            o->transport);
    }
    if (o->reduce_on_device && !o->on_device)
        return pp_error_set(e, PP_EUSAGE,
                            "--reduce-on cuda needs --device cuda");
    if (o->on_device) {
        char why[256];
        if (!pp_cuda_available(why, sizeof why))
            return pp_error_set(e, PP_ENODEV,
                                "--device cuda: no usable GPU (%s)", why);
    }
    return 0;
}

/* The next size of the sweep, nccl-tests' rule; 0 grows to one element
 * per rank so a factor sweep from 0 moves. */
static size_t next_size(const pp_exec_coll_opts *o, size_t s, size_t unit) {
    if (o->step_bytes) return s + o->step_bytes;
    size_t nx = (size_t)((double)s * o->step_factor);
    if (nx <= s) nx = s ? s + 1 : unit;
    return nx;
}

/* Which implementation runs a size: for allreduce under rd, whole-buffer
 * recursive doubling up to rd_max bytes and Rabenseifner above (its
 * bandwidth term is 2(p-1)/p of the buffer instead of log2(p) buffers). */
static const char *impl_name(pp_coll_op op, pp_coll_algo algo, size_t bytes,
                             size_t rd_max) {
    switch (op) {
    case PP_COLL_ALLREDUCE:
        if (algo == PP_ALGO_RING) return "ring";
        return bytes > rd_max ? "rabenseifner" : "rd";
    case PP_COLL_BROADCAST: return "chain";
    case PP_COLL_ALLTOALL: return "pairwise";
    default: return "ring";
    }
}

static int sweep(run *u, pp__boot *b, pp_exec_coll_result *res, pp_error *e) {
    const pp_exec_coll_opts *o = u->o;
    size_t es = u->c.esize, unit = es * (blocked(o->op) ? (size_t)u->n : 1);
    double factor = pp_coll_busbw_factor(o->op, (size_t)u->n);
    double *mine = pp_xcalloc((size_t)o->iters, sizeof *mine);
    double *all = u->r == 0
                      ? pp_xcalloc((size_t)u->n * (size_t)o->iters, sizeof *all)
                      : NULL;
    int64_t *wrong_all = pp_xcalloc((size_t)u->n, sizeof *wrong_all);
    int rc = 0;
    size_t cap_rows = 0;
    for (size_t s = o->min_bytes; s <= o->max_bytes && !rc;
         s = next_size(o, s, unit)) {
        size_t nel = s / es;
        u->per = blocked(o->op) ? nel / (size_t)u->n : nel;
        u->total = blocked(o->op) ? u->per * (size_t)u->n : nel;
        size_t bytes = u->total * es;
        u->algo = o->op == PP_COLL_ALLREDUCE &&
                          (o->algo == PP_ALGO_RD ||
                           (o->algo == -1 && bytes <= o->rd_max_bytes))
                      ? PP_ALGO_RD
                      : PP_ALGO_RING;
        u->impl = impl_name(o->op, u->algo, bytes, o->rd_max_bytes);
        u->rabenseifner = o->op == PP_COLL_ALLREDUCE && u->algo == PP_ALGO_RD &&
                          bytes > o->rd_max_bytes;
        pp_exec_coll_row row;
        memset(&row, 0, sizeof row);
        row.bytes = bytes;
        row.count = u->per; /* nccl-tests: per rank for the blocked ops */
        row.root = o->op == PP_COLL_BROADCAST ? o->root : -1;
        row.algo = u->algo;
        row.impl = u->impl;
        for (int side = 0; side < 2 && !rc; side++) {
            bool inplace = side == 1;
            int64_t wrong = -1, total_wrong = 0;
            if (o->check) {
                fill_inputs(u, inplace);
                if (o->on_device)
                    rc = pp_cuda_h2d(u->d_in, inplace ? u->recv : u->send,
                                     bytes, e);
                if (!rc) rc = run_timed(u, inplace, e);
                if (rc) break;
                /* mode=corrupt: this rank's first element is off by one,
                 * so the tests see the check fail */
                if (u->c.fault_mode == 'c' && u->r == u->c.fault_rank &&
                    u->total)
                    put(u->c.dtype, u->recv, 0, 1000.0f);
                wrong = count_wrong(u, inplace);
            }
            fill_inputs(u, inplace);
            if ((rc = pp__boot_barrier(b, e))) break;
            for (int i = 0; i < o->warmup + o->iters && !rc; i++) {
                /* a timed iteration runs agg_iters collectives back to
                 * back (nccl-tests' -m) and counts the time per one */
                int agg = i >= o->warmup ? o->agg_iters : 1;
                double t0 = pp_exec_now();
                for (int k = 0; k < agg && !rc; k++)
                    rc = run_timed(u, inplace, e);
                if (i >= o->warmup)
                    mine[i - o->warmup] = (pp_exec_now() - t0) / agg;
            }
            if (rc) break;
            if ((rc = pp__boot_gather(b, mine, (size_t)o->iters * sizeof *mine,
                                      all, e)) ||
                (rc = pp__boot_gather(b, &wrong, sizeof wrong, wrong_all, e)))
                break;
            if (u->r != 0) continue;
            for (int r = 0; r < u->n; r++) total_wrong += wrong_all[r];
            pp__coll_stats(&row.side[side], all, u->n, o->iters, (double)bytes,
                           factor, o->average);
            row.side[side].wrong = o->check ? total_wrong : -1;
        }
        if (rc) {
            for (int side = 0; side < 2; side++) free(row.side[side].slowest);
            break;
        }
        if (u->r == 0) {
            PP_VEC_RESERVE(res->rows, cap_rows, res->n_rows + 1, 16);
            res->rows[res->n_rows++] = row;
        }
        if (o->step_bytes == 0 && o->step_factor <= 1 && s == o->max_bytes)
            break;
    }
    free(mine);
    free(all);
    free(wrong_all);
    return rc;
}

/* Busy-polling pays only when each rank of the host has a core of its own
 * (an unknown count is taken to: one rank per GPU on a server). */
static bool spin_ok(const pp_exec_world *w) {
    return w->local_size <= 0 || w->local_size <= pp__cpus_allowed(NULL);
}

int pp_exec_coll_run(const pp_exec_world *w, const pp_exec_coll_opts *o,
                     pp_exec_coll_result **out, pp_error *e) {
    const pp_xport_ops *ops = NULL;
    int rc = check_opts(w, o, &ops, e);
    if (rc) return rc;
    run u;
    memset(&u, 0, sizeof u);
    u.o = o;
    u.n = w->nranks;
    u.r = w->rank;
    pp__comm *c = &u.c;
    c->ops = ops;
    c->rank = w->rank;
    c->nranks = w->nranks;
    c->channels = o->channels;
    c->timeout_s = o->timeout_s;
    c->dtype = (pp_xdtype)o->dtype;
    c->esize = pp_xdtype_size(c->dtype);
    c->slice_bytes = o->slice_bytes ? o->slice_bytes : 512 << 10;
    c->slice_bytes -= c->slice_bytes % c->esize;
    if (c->slice_bytes < c->esize) c->slice_bytes = c->esize;
    c->red = (pp__reducer){o->reduce_on_device ? cuda_reduce : cpu_reduce, &u};
    c->what = "setup";
    parse_fault(c);

    pp__boot *b = NULL;
    pp_xport *x = NULL;
    pp_exec_coll_result *res = NULL;
    char ip[64], *blob = NULL, *blobs = NULL;
    size_t blen = 0, *lens = NULL;
    const char **addrs = NULL;
    int *peers = NULL;
    if ((rc = pp__boot_open(w, o->timeout_s, &b, ip, e))) goto out;
    pp_xport_opts xo = {.rank = w->rank,
                        .nranks = w->nranks,
                        .channels = o->channels,
                        .timeout_s = o->timeout_s,
                        .device = strcmp(ops->name, "tcp") == 0 ? ip : NULL,
                        .ib_port = 1,
                        .gid_index = -1,
                        .spin = spin_ok(w)};
    size_t bmax = pp_xport_addr_max(ops, &xo);
    if ((rc = pp__boot_set_blob_max(b, bmax, e))) goto out;
    blob = pp_xcalloc(1, bmax);
    if ((rc = ops->create(&xo, &x, blob, &blen, e))) goto out;
    c->x = x;
    blobs = pp_xmalloc((size_t)u.n * bmax);
    lens = pp_xcalloc((size_t)u.n, sizeof *lens);
    addrs = pp_xcalloc((size_t)u.n, sizeof *addrs);
    peers = pp_xcalloc((size_t)u.n, sizeof *peers);
    if ((rc = pp__boot_allgather(b, blob, blen, blobs, lens, e))) goto out;
    size_t np = 0;
    for (int r = 0; r < u.n; r++) {
        addrs[r] = blobs + (size_t)r * bmax;
        if (r != u.r) peers[np++] = r;
    }
    /* Every pair connects: rd and alltoall need it, and --algo auto
     * switches between rd and the ring within one sweep. */
    if ((rc = ops->connect(x, peers, np, addrs, lens, e))) goto out;

    /* Buffers for the largest size; sized by the user, so checked. */
    size_t unit = c->esize * (size_t)u.n;
    u.cap = o->max_bytes / unit * unit + unit;
    c->tmp_bytes = (size_t)o->channels * PP__SLOTS * c->slice_bytes;
    /* One region for everything a transfer touches, registered once (a
     * verbs transport pins it). */
    int nbuf = o->op == PP_COLL_ALLREDUCE ? 4 : 3;
    if (u.cap > SIZE_MAX / 8) u.cap = SIZE_MAX / 8;
    /* The buffers sit a stride apart that is not a multiple of a large
     * power of two: at cap-multiples (256 MiB apart on huge pages) the
     * same offsets of send, receive and scratch land in the same cache
     * sets, and a 1 MiB allreduce in a sweep up to 256 MiB took 1.4x
     * the time it takes alone. */
    size_t stride = u.cap + STRIDE_PAD;
    u.arena = malloc((size_t)nbuf * stride);
    c->tmp = malloc(c->tmp_bytes);
    if (!u.arena || !c->tmp) {
        rc = pp_error_set(e, PP_ENOMEM,
                          "rank %d: cannot allocate %d buffers of "
                          "%zu bytes (--maxbytes)",
                          u.r, nbuf, u.cap);
        goto out;
    }
    u.send = u.arena;
    u.recv = u.arena + stride;
    u.scratch = u.arena + 2 * stride;
    c->rd_tmp = nbuf == 4 ? u.arena + 3 * stride : NULL;
    if (o->on_device) {
        /* The arena is page-locked so the staging copies run at the
         * link's rate: pageable ones go through the driver's own bounce
         * buffer. */
        size_t dcap = u.cap > c->slice_bytes ? u.cap : c->slice_bytes;
        if ((rc = pp_cuda_set_device(w->local_rank, e)) ||
            (rc = pp_cuda_malloc(&u.d_in, u.cap, e)) ||
            (rc = pp_cuda_host_register(u.arena, (size_t)nbuf * stride, e)))
            goto out;
        u.pinned = true;
        if (o->reduce_on_device && ((rc = pp_cuda_malloc(&u.d_a, dcap, e)) ||
                                    (rc = pp_cuda_malloc(&u.d_b, dcap, e))))
            goto out;
    }
    if ((rc = ops->reg(x, u.arena, (size_t)nbuf * stride, false, &c->mr_buf,
                       e)) ||
        (rc = ops->reg(x, c->tmp, c->tmp_bytes, false, &c->mr_tmp, e)))
        goto out;

    /* Who is where, for the report. */
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    int pid = (int)getpid();
    char *hosts = u.r == 0 ? pp_xcalloc((size_t)u.n, sizeof host) : NULL;
    int *pids = u.r == 0 ? pp_xcalloc((size_t)u.n, sizeof *pids) : NULL;
    /* Which GPU each rank landed on: local ranks beyond the GPU count
     * share GPUs (pp_cuda_set_device), and the table says so. */
    int dev = -1,
        *devs = u.r == 0 ? pp_xcalloc((size_t)u.n, sizeof *devs) : NULL;
    if (o->on_device) {
        pp_error ignore = PP_ERROR_INIT;
        if (pp_cuda_get_device(&dev, &ignore)) dev = -1;
    }
    rc = pp__boot_gather(b, host, sizeof host, hosts, e);
    if (!rc) rc = pp__boot_gather(b, &pid, sizeof pid, pids, e);
    if (!rc) rc = pp__boot_gather(b, &dev, sizeof dev, devs, e);
    if (u.r == 0) {
        res = pp_xcalloc(1, sizeof *res);
        res->opts = *o;
        res->nranks = u.n;
        res->launcher = w->launcher;
        res->bootstrap = w->use_mpi ? "mpi" : "rendezvous";
        res->rank_host = pp_xcalloc((size_t)u.n, sizeof *res->rank_host);
        res->rank_pid = pids;
        res->rank_dev = devs;
        for (int r = 0; r < u.n; r++) {
            res->rank_host[r] = pp_xstrdup(hosts + (size_t)r * sizeof host);
            bool seen = false;
            for (int q = 0; q < r; q++)
                seen |= strcmp(res->rank_host[q], res->rank_host[r]) == 0;
            res->nhosts += !seen;
        }
        free(hosts);
    }
    if (!rc) rc = sweep(&u, b, res, e);
    if (!rc && res) {
        double sum = 0;
        res->wrong_total = o->check ? 0 : -1;
        for (size_t i = 0; i < res->n_rows; i++) {
            sum += res->rows[i].side[0].busbw_Bps;
            for (int s = 0; s < 2 && o->check; s++)
                res->wrong_total += res->rows[i].side[s].wrong;
        }
        res->avg_busbw_Bps = res->n_rows ? sum / (double)res->n_rows : 0;
        if (res->wrong_total > 0)
            rc = pp_error_set(e, PP_EFAIL, "%lld wrong value%s (see #wrong)",
                              (long long)res->wrong_total,
                              res->wrong_total == 1 ? "" : "s");
    }
    /* A last barrier so no rank closes its sockets while another still
     * reads: a clean run ends without "connection closed" anywhere. */
    if (!rc || rc == PP_EFAIL) {
        pp_error tmp = PP_ERROR_INIT;
        int brc = pp__boot_barrier(b, &tmp);
        if (brc && !rc) {
            rc = brc;
            pp_error_set(e, brc, "%s", tmp.msg);
        }
    }
out:
    if (c->mr_buf) ops->dereg(x, c->mr_buf);
    if (c->mr_tmp) ops->dereg(x, c->mr_tmp);
    if (ops && x) ops->destroy(x);
    pp__boot_close(b);
    pp_cuda_free(u.d_in);
    pp_cuda_free(u.d_a);
    pp_cuda_free(u.d_b);
    if (u.pinned) pp_cuda_host_unregister(u.arena);
    free(u.arena);
    free(c->tmp);
    free(blobs);
    free(blob);
    free(lens);
    free(addrs);
    free(peers);
    if (rc && rc != PP_EFAIL) {
        pp_exec_coll_result_free(res);
        res = NULL;
    }
    *out = res;
    return rc;
}
