/*
 * sim/net/sim.c: a simulation: a cluster, an event engine, a router and, at flow
 * fidelity, a flow network.
 *
 * A transfer is routed and then either
 *   flow:     started as a flow on its path (pp_flow_start with the path's
 *             latency), sharing links by max-min with every other flow; or
 *   analytic: finished by one engine timer at (now + latency) + bytes /
 *             bottleneck, with no contention at all.
 * The analytic time is computed with the same operations in the same order
 * as the flow network's (it joins at now + latency, then takes bytes / rate
 * with rate the path's narrowest capacity when alone), so the two agree to
 * the last bit for a transfer nothing contends with.  Analytic counts
 * bytes per link too, when the transfer starts.
 *
 * Two GPUs of a server with NV >= 2 NVSwitch chips: the transfer is split
 * into NV equal sub-transfers, one through each chip (sim/topo/route.c
 * and route_int.h say why), and completes when the last is done.
 *
 * Transfers live in a pool with a free list (their index is the event
 * argument), so a run of millions of transfers does not call malloc per
 * transfer; the pool only grows to the most transfers in flight at once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "route_int.h"
#include "sim_run.h"
#include "trace_int.h"

#define MAX_WAYS 64 /* NVSwitch chips per server (node.c caps at 64) */

typedef struct xfer {
    pp_sim_done_fn done;
    void *ctx;
    uint64_t arg;
    uint64_t key; /* ECMP key, to find the path again when tracing */
    double t0, bytes;
    int32_t src, dst;
    int32_t via;       /* relay device (pp__sim_send_via), -1 none */
    int32_t ways;      /* sub-transfers (NVSwitch chips), 1 normally */
    int32_t left;      /* sub-transfers not yet done */
    int32_t lane;      /* trace: send lane of src, -1 when not tracing */
    int32_t next_free; /* free list link, -1 at its end */
} xfer;

struct pp_sim {
    const pp_cluster *c;
    pp_fidelity fid;
    pp_engine *eng;
    pp_router *router;
    pp_flownet *net;    /* flow fidelity only */
    double *link_bytes; /* analytic fidelity only */
    size_t n_links;
    size_t n_devs;

    xfer *pool;
    size_t n_pool, cap_pool;
    int32_t free_head;

    int32_t *via_path; /* scratch: a relayed transfer's two legs */
    size_t cap_via_path;

    pp__trace *trace; /* NULL unless tracing */
};

int pp_sim_new(const pp_cluster *c, pp_fidelity f, uint64_t seed, pp_sim **out,
               pp_error *e) {
    if (!c || !out) return pp_error_set(e, PP_EINVAL, "pp_sim_new: no cluster");
    if (f != PP_FIDELITY_ANALYTIC && f != PP_FIDELITY_FLOW)
        return pp_error_set(e, PP_EINVAL, "pp_sim_new: unknown fidelity %d",
                            (int)f);
    pp_sim *s = pp_xcalloc(1, sizeof *s);
    s->c = c;
    s->fid = f;
    s->free_head = -1;
    size_t n_links;
    const pp_link *links = pp_cluster_links(c, &n_links);
    s->n_links = n_links;
    (void)pp_cluster_devices(c, &s->n_devs);
    int rc = pp_router_new(c, seed, &s->router, e);
    if (rc) {
        free(s);
        return rc;
    }
    s->eng = pp_engine_new();
    if (f == PP_FIDELITY_FLOW) {
        double *cap = pp_xmalloc((n_links ? n_links : 1) * sizeof *cap);
        for (size_t l = 0; l < n_links; l++) cap[l] = links[l].bw_Bps;
        s->net = pp_flownet_new(s->eng, cap, n_links);
        free(cap);
    } else {
        s->link_bytes =
            pp_xcalloc(n_links ? n_links : 1, sizeof *s->link_bytes);
    }
    *out = s;
    return 0;
}

void pp_sim_free(pp_sim *s) {
    if (!s) return;
    pp__trace_free(s->trace);
    pp_flownet_free(s->net); /* before the engine it cancels events on */
    pp_engine_free(s->eng);
    pp_router_free(s->router);
    free(s->link_bytes);
    free(s->pool);
    free(s->via_path);
    free(s);
}

pp_engine *pp_sim_engine(pp_sim *s) {
    return s->eng;
}
pp_flownet *pp_sim_net(pp_sim *s) {
    return s->net;
}
const pp_cluster *pp_sim_cluster(const pp_sim *s) {
    return s->c;
}
double pp_sim_now(const pp_sim *s) {
    return pp_engine_now(s->eng);
}
pp_router *pp__sim_router(pp_sim *s) {
    return s->router;
}
bool pp__sim_tracing(const pp_sim *s) {
    return s->trace != NULL;
}

const double *pp_sim_link_bytes(pp_sim *s, size_t *n) {
    if (n) *n = s->n_links;
    return s->net ? pp_flownet_link_bytes(s->net) : s->link_bytes;
}

int pp_sim_trace(pp_sim *s, FILE *fp, pp_error *e) {
    if (!fp) return pp_error_set(e, PP_EINVAL, "pp_sim_trace: no file");
    if (s->trace)
        return pp_error_set(e, PP_EINVAL, "pp_sim_trace: already tracing");
    s->trace = pp__trace_new(s->c, fp);
    return 0;
}

void pp__sim_trace_span(pp_sim *s, int32_t gpu_dev, const char *name, double t0,
                        double t1) {
    if (s->trace && gpu_dev >= 0 && (size_t)gpu_dev < s->n_devs)
        pp__trace_span(s->trace, gpu_dev, name, t0, t1);
}

void pp__sim_trace_comm(pp_sim *s, int32_t gpu_dev, const char *name, double t0,
                        double t1) {
    if (s->trace && gpu_dev >= 0 && (size_t)gpu_dev < s->n_devs)
        pp__trace_comm(s->trace, gpu_dev, name, t0, t1);
}

/* ---- the pool ----------------------------------------------------------- */

static int32_t xfer_new(pp_sim *s) {
    if (s->free_head >= 0) {
        int32_t i = s->free_head;
        s->free_head = s->pool[i].next_free;
        return i;
    }
    PP_VEC_RESERVE(s->pool, s->cap_pool, s->n_pool + 1, 256);
    return (int32_t)s->n_pool++;
}

static void xfer_release(pp_sim *s, int32_t i) {
    s->pool[i].next_free = s->free_head;
    s->free_head = i;
}

/* The path of sub-transfer k of x (from the router's cache). */
static int xfer_path(pp_sim *s, const xfer *x, int32_t k, const int32_t **path,
                     size_t *n, double *lat, double *bw, pp_error *e) {
    if (x->ways > 1)
        return pp__route_way(s->router, x->src, x->dst, k, path, n, lat, bw, e);
    return pp_route(s->router, x->src, x->dst, x->key, path, n, lat, bw, e);
}

/* Trace bookkeeping when sub-transfer k of x is done. */
static void trace_part_done(pp_sim *s, const xfer *x, int32_t k) {
    const int32_t *path;
    size_t n;
    double lat, bw, now = pp_engine_now(s->eng);
    if (x->via >= 0) { /* its two legs, as pp__sim_send_via routed them */
        if (pp_route(s->router, x->src, x->via, x->key, &path, &n, &lat, &bw,
                     NULL) == 0)
            pp__trace_links_end(s->trace, path, n, x->bytes, now);
        if (pp_route(s->router, x->via, x->dst, x->key, &path, &n, &lat, &bw,
                     NULL) == 0)
            pp__trace_links_end(s->trace, path, n, x->bytes, now);
        return;
    }
    if (x->src != x->dst && xfer_path(s, x, k, &path, &n, &lat, &bw, NULL) == 0)
        pp__trace_links_end(s->trace, path, n, x->bytes / x->ways, now);
}

static void finish(pp_sim *s, int32_t i) {
    xfer *x = &s->pool[i];
    pp_sim_done_fn done = x->done;
    void *ctx = x->ctx;
    uint64_t arg = x->arg;
    if (s->trace) {
        if (s->fid == PP_FIDELITY_ANALYTIC)
            for (int32_t k = 0; k < x->ways; k++) trace_part_done(s, x, k);
        pp__trace_send_end(s->trace, x->src, x->lane, x->dst, x->bytes, x->t0,
                           pp_engine_now(s->eng));
    }
    xfer_release(s, i);
    /* Last: done may send again, growing (moving) the pool. */
    if (done) done(s, ctx, arg);
}

static void on_timer(pp_engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    finish(ctx, (int32_t)arg);
}

/* A flow's arg is (transfer << 8 | way). */
static void on_flow_done(pp_flownet *net, pp_flow_id id, void *ctx,
                         uint64_t arg) {
    (void)net;
    (void)id;
    pp_sim *s = ctx;
    int32_t i = (int32_t)(arg >> 8);
    if (s->trace) trace_part_done(s, &s->pool[i], (int32_t)(arg & 0xff));
    if (--s->pool[i].left == 0) finish(s, i);
}

/* Routes a transfer and starts its flows: directly (over every NVSwitch
 * way when the pair has several), or relayed through `via` (>= 0): one
 * flow over both legs, each on flow_key's path (the relay's proxy keeps
 * the channel's connection), pipelined through the relay's memory, so at
 * the slower leg's rate after both latencies. */
static int send(pp_sim *s, int32_t src, int32_t via, int32_t dst, double bytes,
                uint64_t flow_key, pp_sim_done_fn done, void *ctx,
                uint64_t arg, pp_error *e) {
    if (src < 0 || dst < 0 || (size_t)src >= s->n_devs ||
        (size_t)dst >= s->n_devs)
        return pp_error_set(e, PP_EINVAL,
                            "pp_sim_send: device %d or %d out of range (%zu "
                            "devices)",
                            src, dst, s->n_devs);
    if (via >= 0 && (size_t)via >= s->n_devs)
        return pp_error_set(e, PP_EINVAL,
                            "pp_sim_send: relay device %d out of range (%zu "
                            "devices)",
                            via, s->n_devs);
    if (!(bytes >= 0) || !isfinite(bytes))
        return pp_error_set(e, PP_EINVAL,
                            "pp_sim_send: bytes must be finite and >= 0, "
                            "got %g",
                            bytes);
    double now = pp_engine_now(s->eng);
    const int32_t *path[MAX_WAYS];
    size_t n[MAX_WAYS];
    double lat[MAX_WAYS], bw[MAX_WAYS];
    int32_t ways = 1;

    /* Route every part first, so a failure leaves nothing started. */
    if (via >= 0) {
        const int32_t *p2;
        size_t n2;
        double lat2, bw2;
        int rc = pp_route(s->router, src, via, flow_key, &path[0], &n[0],
                          &lat[0], &bw[0], e);
        if (rc ||
            (rc = pp_route(s->router, via, dst, flow_key, &p2, &n2, &lat2,
                           &bw2, e)))
            return rc;
        PP_VEC_RESERVE(s->via_path, s->cap_via_path, n[0] + n2, 64);
        if (n[0]) memcpy(s->via_path, path[0], n[0] * sizeof *path[0]);
        if (n2) memcpy(s->via_path + n[0], p2, n2 * sizeof *p2);
        path[0] = s->via_path;
        n[0] += n2;
        lat[0] += lat2;
        if (bw2 < bw[0]) bw[0] = bw2;
    } else if (src != dst) {
        ways = pp__route_ways(s->router, src, dst);
        if (ways > MAX_WAYS) ways = MAX_WAYS;
        for (int32_t k = 0; k < ways; k++) {
            int rc = ways > 1 ? pp__route_way(s->router, src, dst, k, &path[k],
                                              &n[k], &lat[k], &bw[k], e)
                              : pp_route(s->router, src, dst, flow_key,
                                         &path[k], &n[k], &lat[k], &bw[k], e);
            if (rc) return rc;
        }
    }

    int32_t i = xfer_new(s);
    xfer *x = &s->pool[i];
    *x = (xfer){done, ctx, arg, flow_key, now, bytes,
                src,  dst, via, ways,     ways, -1,  -1};
    if (s->trace) x->lane = pp__trace_send_begin(s->trace, src, now);
    if (src == dst) {
        /* At once, but from the engine: done never runs inside send. */
        pp_engine_at(s->eng, now, on_timer, s, (uint64_t)i);
        return 0;
    }
    double part = bytes / ways, t_end = now;
    for (int32_t k = 0; k < ways; k++) {
        if (s->trace) pp__trace_links_begin(s->trace, path[k], n[k], now);
        if (s->fid == PP_FIDELITY_FLOW) {
            pp_flow_id id =
                pp_flow_start(s->net, path[k], n[k], part, lat[k], on_flow_done,
                              s, (uint64_t)i << 8 | (uint64_t)k);
            if (id < 0) /* routes are valid link ids: cannot happen */
                return pp_error_set(e, PP_EINTERNAL,
                                    "pp_flow_start refused a route (%d)",
                                    (int)id);
        } else {
            /* (now + latency) + bytes / rate: the flow network's order. */
            double t = (now + lat[k]) + (part > 0 ? part / bw[k] : 0);
            if (t > t_end) t_end = t;
            for (size_t h = 0; h < n[k]; h++) s->link_bytes[path[k][h]] += part;
        }
    }
    if (s->fid == PP_FIDELITY_ANALYTIC)
        pp_engine_at(s->eng, t_end, on_timer, s, (uint64_t)i);
    return 0;
}

int pp__sim_send_key(pp_sim *s, int32_t src, int32_t dst, double bytes,
                     uint64_t flow_key, pp_sim_done_fn done, void *ctx,
                     uint64_t arg, pp_error *e) {
    return send(s, src, -1, dst, bytes, flow_key, done, ctx, arg, e);
}

int pp__sim_send_via(pp_sim *s, int32_t src, int32_t via, int32_t dst,
                     double bytes, uint64_t flow_key, pp_sim_done_fn done,
                     void *ctx, uint64_t arg, pp_error *e) {
    if (via < 0 || via == src || via == dst || src == dst) via = -1;
    return send(s, src, via, dst, bytes, flow_key, done, ctx, arg, e);
}

int pp_sim_send(pp_sim *s, int32_t src, int32_t dst, double bytes,
                pp_sim_done_fn done, void *ctx, uint64_t arg, pp_error *e) {
    /* Key 0: one path per pair (sim_run.h says why). */
    return pp__sim_send_key(s, src, dst, bytes, 0, done, ctx, arg, e);
}
