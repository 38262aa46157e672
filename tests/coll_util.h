/*
 * coll_util.h: helpers shared by the simulated-collective tests
 * (test_coll_fit.c, test_nccl_model.c): load a shipped cluster, and run
 * one collective on its first n GPUs (node-major) at a fidelity.
 */
#ifndef PODPLAN_TESTS_COLL_UTIL_H
#define PODPLAN_TESTS_COLL_UTIL_H

#include <stddef.h>

#include "podplan/sim.h"

/* The shipped cluster `name`; fails the test when it does not load. */
pp_cluster *coll_load_cluster(const char *name);
/* One collective of `bytes` over GPUs 0..n-1; g, when not NULL, lends
 * its fitted network entries (profile `network:`).  Fails the test on
 * an error. */
pp_coll_result coll_run(const pp_cluster *c, pp_fidelity f, pp_coll_op op,
                        pp_coll_algo algo, double bytes, size_t n,
                        const pp_gpu_profile *g);

#endif
