/*
 * podplan/net.h: the event engine, the flow network (max-min sharing) and
 * a simulation that routes transfers over a cluster (podplan_sim_net).
 * Depends on topo, hw, models and common.
 */
#ifndef PODPLAN_NET_H
#define PODPLAN_NET_H

#include "podplan/common.h"
#include "podplan/models.h"
#include "podplan/forward.h"
#include "podplan/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The event engine (sim/net/engine.c).  Simulated time is a double in
 * seconds: transfer times are ratios of bytes to rates, and integer
 * nanoseconds would round a 1 us hop by up to 0.1%, more than the 1e-9 at
 * which the flow and analytic fidelities must agree.  Events at equal
 * times run in the order they were scheduled (a sequence number breaks
 * ties), so a run is deterministic.
 * ---------------------------------------------------------------------- */
typedef uint64_t pp_timer; /* 0 is never a valid timer */
typedef void (*pp_event_fn)(pp_engine *eng, void *ctx, uint64_t arg);

pp_engine *pp_engine_new(void);
void pp_engine_free(pp_engine *eng); /* NULL is a no-op */
double pp_engine_now(const pp_engine *eng);
/* Schedules fn(eng, ctx, arg) at absolute time t (>= now) or after a
 * delay.  Returns a handle for pp_engine_cancel. */
pp_timer pp_engine_at(pp_engine *eng, double t, pp_event_fn fn, void *ctx,
                      uint64_t arg);
pp_timer pp_engine_after(pp_engine *eng, double delay, pp_event_fn fn,
                         void *ctx, uint64_t arg);
/* Cancels a pending event; false when it already ran or was cancelled. */
bool pp_engine_cancel(pp_engine *eng, pp_timer t);
/* Runs events until none is left or the next is later than `until`
 * (INFINITY for all).  Returns the number of events run. */
uint64_t pp_engine_run(pp_engine *eng, double until);
uint64_t pp_engine_events(const pp_engine *eng); /* run so far */
size_t pp_engine_pending(const pp_engine *eng);

/* ------------------------------------------------------------------------
 * The flow network (sim/net/flow.c): transfers as flows on paths of directed
 * links, sharing each link's capacity by max-min fairness (progressive
 * filling).  When a flow starts or ends only the flows coupled to it
 * through shared links (its connected component in the flow-link graph)
 * are re-solved; bytes left are kept lazily (bytes at the last update and
 * the rate since), completions sit in a heap whose top is the one engine
 * event the network keeps armed.  SimGrid's LMM solver and its lazy update
 * are the reference design.
 * ---------------------------------------------------------------------- */
typedef int32_t pp_flow_id;
/* Called when a flow's last byte arrives (t = now). */
typedef void (*pp_flow_done_fn)(pp_flownet *net, pp_flow_id id, void *ctx,
                                uint64_t arg);

/* capacity_Bps[i] is link i's capacity; copied.  The engine is borrowed
 * and must outlive the network. */
pp_flownet *pp_flownet_new(pp_engine *eng, const double *capacity_Bps,
                           size_t n_links);
void pp_flownet_free(pp_flownet *net);
/* Starts a flow of `bytes` over `path` (link ids, copied) after `lat_s`
 * of latency; done(net, id, ctx, arg) runs on completion.  A flow of zero
 * bytes or an empty path completes after the latency alone.  Returns the
 * flow id (>= 0) or PP_EINVAL (a link id out of range, negative bytes). */
pp_flow_id pp_flow_start(pp_flownet *net, const int32_t *path, size_t n,
                         double bytes, double lat_s, pp_flow_done_fn done,
                         void *ctx, uint64_t arg);
/* The current rate of an active flow (bytes/s); 0 while it waits for its
 * latency, -1 once finished. */
double pp_flow_rate(const pp_flownet *net, pp_flow_id id);
/* Bytes carried by each link so far (for utilisation); n_links long. */
const double *pp_flownet_link_bytes(pp_flownet *net);

typedef struct pp_flownet_stats {
    uint64_t flows_started, flows_done;
    uint64_t updates;       /* re-solves (one per start/end batch) */
    uint64_t full_solves;   /* updates that fell back to every flow */
    uint64_t flows_touched; /* sum over updates of flows re-solved */
    uint64_t active_sum;    /* sum over updates of flows active then */
    size_t max_active;
} pp_flownet_stats;
void pp_flownet_stats_get(const pp_flownet *net, pp_flownet_stats *out);

/* The reference solver: max-min fair rates by progressive filling for
 * flows given as paths in CSR form (flow f uses links
 * links[off[f]] .. links[off[f+1]-1]).  rates is n_flows long.  Used by
 * the tests against the incremental solver, and by analyses. */
int pp_maxmin_solve(size_t n_links, const double *capacity_Bps, size_t n_flows,
                    const int32_t *off, const int32_t *links, double *rates,
                    pp_error *e);

/* ------------------------------------------------------------------------
 * A simulation (sim/net/sim.c): a cluster, an engine, a router and, at flow
 * fidelity, a flow network.  Transfers are routed and either share links
 * by max-min (flow) or take latency + bytes / bottleneck each, with no
 * contention (analytic).  Both agree exactly where nothing contends.
 * ---------------------------------------------------------------------- */

typedef void (*pp_sim_done_fn)(pp_sim *s, void *ctx, uint64_t arg);

int pp_sim_new(const pp_cluster *c, pp_fidelity f, uint64_t seed, pp_sim **out,
               pp_error *e);
void pp_sim_free(pp_sim *s);
pp_engine *pp_sim_engine(pp_sim *s);
pp_flownet *pp_sim_net(pp_sim *s); /* NULL at analytic fidelity */
const pp_cluster *pp_sim_cluster(const pp_sim *s);
double pp_sim_now(const pp_sim *s);
/* Starts a transfer of `bytes` from device src to dst now; done runs at
 * its completion.  A transfer to itself completes at once (next event). */
int pp_sim_send(pp_sim *s, int32_t src, int32_t dst, double bytes,
                pp_sim_done_fn done, void *ctx, uint64_t arg, pp_error *e);
/* Bytes carried per link so far (flow fidelity; analytic counts too). */
const double *pp_sim_link_bytes(pp_sim *s, size_t *n);
/* Writes a Chrome/Perfetto trace of everything simulated from now on:
 * one track per GPU and per link.  The sim keeps fp until pp_sim_free,
 * which writes the closing bracket. */
int pp_sim_trace(pp_sim *s, FILE *fp, pp_error *e);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_NET_H */
