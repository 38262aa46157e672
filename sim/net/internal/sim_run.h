/*
 * sim_run.h: private to sim/.  What the collectives (collective.c) and the
 * training step need from a simulation beyond sim.h, and the seam between
 * sim.c, route.c and trace.c.  Keep it small: anything a CLI command needs
 * belongs in sim.h.
 */
#ifndef PODPLAN_SIM_RUN_H
#define PODPLAN_SIM_RUN_H

#include "podplan/sim.h"

/* ------------------------------------------------------------------------
 * For collective.c and step.c.
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

/* The router the sim routes with (borrowed; for closed forms that need a
 * path's latency and bottleneck without sending anything). */
pp_router *pp__sim_router(pp_sim *s);

/* Adds a span [t0, t1] (seconds) named `name` (copied) to device dev's own
 * track of the trace: compute, the optimizer, a pipeline stage.  The
 * caller keeps the spans of one device nested or disjoint (Chrome and
 * Perfetto draw overlapping slices of one track wrongly); transfers go on
 * separate "send" tracks, so they never clash with these.  No-op when the
 * sim is not tracing. */
void pp__sim_trace_span(pp_sim *s, int32_t gpu_dev, const char *name,
                        double t0, double t1);
/* The same for communication (a collective on this device): on the
 * device's "comm" tracks, as many as spans overlap (a DP bucket under the
 * backward's TP collectives), so the compute track shows what the device
 * computes and the gaps are its waits. */
void pp__sim_trace_comm(pp_sim *s, int32_t gpu_dev, const char *name,
                        double t0, double t1);
bool pp__sim_tracing(const pp_sim *s);

/* ------------------------------------------------------------------------
 * route.c, for sim.c.
 * ---------------------------------------------------------------------- */

/* flow_key is reduced mod this many ECMP classes: the path cache holds at
 * most this many paths per (src, dst) pair. */
#define PP__ROUTE_CLASSES 64u

/* A server may have several NVSwitch chips (DGX-A100 has 6), each GPU
 * joined to each by 1/NV of its NVLink bandwidth; a GPU-to-GPU transfer
 * then moves over all of them at once.  pp_route returns one path (through
 * the chip the flow key picks), so pp_sim_send splits such a transfer into
 * `ways` equal sub-transfers, path k through chip k.  pp__route_ways is NV
 * for two GPUs of one server joined by NV >= 2 NVSwitches and 1 for every
 * other pair; pp__route_way(k) gives path k (k < ways; for ways == 1 it is
 * pp_route's path with key 0).  Same ownership as pp_route. */
int32_t pp__route_ways(pp_router *r, int32_t src, int32_t dst);
int pp__route_way(pp_router *r, int32_t src, int32_t dst, int32_t k,
                  const int32_t **path, size_t *n, double *lat_s,
                  double *bottleneck_Bps, pp_error *e);

/* ------------------------------------------------------------------------
 * trace.c, for sim.c: a Chrome/Perfetto trace written as the simulation
 * runs.  Process 1 "GPUs": per device a track for pp__sim_trace_span and
 * "send" tracks for its transfers (one per concurrent transfer: lane k is
 * the k-th that was busy when a transfer started).  Process 2 "links": per
 * link one track of busy periods (from the first transfer on it starting
 * to the last ending), with the bytes and transfers each carried.
 * ---------------------------------------------------------------------- */
typedef struct pp__trace pp__trace;

/* Writes the opening of the JSON to fp (borrowed; the caller closes it
 * after pp__trace_free). */
pp__trace *pp__trace_new(const pp_cluster *c, FILE *fp);
/* Writes the closing bracket.  Busy periods still open are dropped: they
 * belong to transfers that never finished. */
void pp__trace_free(pp__trace *t);
/* A transfer from src starts: returns its send lane. */
int32_t pp__trace_send_begin(pp__trace *t, int32_t src, double now);
/* ... and ends: one complete event on src's lane. */
void pp__trace_send_end(pp__trace *t, int32_t src, int32_t lane,
                        int32_t dst, double bytes, double t0, double t1);
/* A (sub-)transfer holds the links of path from now on ... */
void pp__trace_links_begin(pp__trace *t, const int32_t *path, size_t n,
                           double now);
/* ... until now, having moved `bytes` over each. */
void pp__trace_links_end(pp__trace *t, const int32_t *path, size_t n,
                         double bytes, double now);
void pp__trace_span(pp__trace *t, int32_t dev, const char *name, double t0,
                    double t1);
void pp__trace_comm(pp__trace *t, int32_t dev, const char *name, double t0,
                    double t1);

#endif
