/*
 * route_int.h: internal to sim/, exported by podplan_sim_topo to
 * podplan_sim_net (sim/net/sim.c) through its include path
 * (sim/topo/internal/): what a simulation needs from the router beyond
 * topo.h.
 */
#ifndef PODPLAN_ROUTE_INT_H
#define PODPLAN_ROUTE_INT_H

#include "podplan/topo.h"

/* ------------------------------------------------------------------------
 * sim/topo/route.c, for sim/net/sim.c.
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

#endif
