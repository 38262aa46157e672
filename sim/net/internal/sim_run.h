/*
 * sim_run.h: internal to sim/, exported by podplan_sim_net to the layers
 * above it (sim/coll/, sim/train/) through their include path
 * (sim/net/internal/), never to other layers: what the collectives
 * (sim/coll/collective.c) and the training step (sim/train/step.c) need
 * from a simulation beyond net.h.  Keep it small: anything a CLI command
 * needs belongs in net.h.
 */
#ifndef PODPLAN_SIM_RUN_H
#define PODPLAN_SIM_RUN_H

#include "podplan/net.h"

/* ------------------------------------------------------------------------
 * For sim/coll/collective.c and sim/train/step.c.
 * ---------------------------------------------------------------------- */

/* pp_sim_send with an explicit ECMP key.  pp_sim_send uses key 0, so all
 * transfers between one pair of devices take one fabric path (pairs still
 * spread: the hash includes the endpoints), as InfiniBand's static routing
 * by destination does and as one RoCE queue pair does; the router then
 * caches one path per pair.  A collective that opens several connections
 * per pair (NCCL channels, several QPs) passes the channel as the key so
 * they spread over the equal-cost paths like distinct flows.  Keys equal
 * mod PP__ROUTE_CLASSES share a path. */
int pp__sim_send_key(pp_sim *s, int32_t src, int32_t dst, double bytes,
                     uint64_t flow_key, pp_sim_done_fn done, void *ctx,
                     uint64_t arg, pp_error *e);

/* pp__sim_send_key relayed through device `via` (NCCL's PXN: a GPU sends
 * over NVLink to the GPU of its server on the destination's rail, whose
 * NIC sends it on): one flow over both legs, each routed by flow_key.
 * via < 0 (or an endpoint) sends directly. */
int pp__sim_send_via(pp_sim *s, int32_t src, int32_t via, int32_t dst,
                     double bytes, uint64_t flow_key, pp_sim_done_fn done,
                     void *ctx, uint64_t arg, pp_error *e);

/* The router the sim routes with (borrowed; for closed forms that need a
 * path's latency and bottleneck without sending anything). */
pp_router *pp__sim_router(pp_sim *s);

/* Adds a span [t0, t1] (seconds) named `name` (copied) to device dev's own
 * track of the trace: compute, the optimizer, a pipeline stage.  The
 * caller keeps the spans of one device nested or disjoint (Chrome and
 * Perfetto draw overlapping slices of one track wrongly); transfers go on
 * separate "send" tracks, so they never clash with these.  No-op when the
 * sim is not tracing. */
void pp__sim_trace_span(pp_sim *s, int32_t gpu_dev, const char *name, double t0,
                        double t1);
/* The same for communication (a collective on this device): on the
 * device's "comm" tracks, as many as spans overlap (a DP bucket under the
 * backward's TP collectives), so the compute track shows what the device
 * computes and the gaps are its waits. */
void pp__sim_trace_comm(pp_sim *s, int32_t gpu_dev, const char *name, double t0,
                        double t1);
bool pp__sim_tracing(const pp_sim *s);

#endif
