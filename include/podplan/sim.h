/*
 * podplan/sim.h: the whole simulator, for callers that want all of it
 * (planner/, cli/, tests/, bench/).  An umbrella only: each concern has
 * its own header and static library, dependencies pointing down:
 *
 *   train.h  podplan_sim_train  layer cost, the training step
 *   coll.h   podplan_sim_coll   collectives
 *   net.h    podplan_sim_net    event engine, flow network, simulation
 *   topo.h   podplan_sim_topo   clusters, analysis, routing (igraph)
 *   hw.h     podplan_sim_hw     hardware catalogue, GPU profiles
 *
 * Code inside sim/ includes the header of its own concern, never this.
 */
#ifndef PODPLAN_SIM_H
#define PODPLAN_SIM_H

#include "podplan/forward.h"
#include "podplan/hw.h"
#include "podplan/topo.h"
#include "podplan/net.h"
#include "podplan/coll.h"
#include "podplan/train.h"
#include "podplan/traffic.h"

#endif /* PODPLAN_SIM_H */
