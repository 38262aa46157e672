/*
 * trace_int.h: private to sim/net/ (sim.c and trace.c): the Chrome/Perfetto
 * trace writer behind pp_sim_trace.
 */
#ifndef PODPLAN_TRACE_INT_H
#define PODPLAN_TRACE_INT_H

#include "podplan/net.h"

/* ------------------------------------------------------------------------
 * sim/net/trace.c, for sim/net/sim.c: a Chrome/Perfetto trace written as
 * the simulation runs.  Process 1 "GPUs": per device a track for pp__sim_trace_span and
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
void pp__trace_send_end(pp__trace *t, int32_t src, int32_t lane, int32_t dst,
                        double bytes, double t0, double t1);
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
