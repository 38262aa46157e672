/*
 * plan_util.h: helpers shared by the planner's test files
 * (test_planner*.c, test_stack.c, test_layout.c): JSON numbers, loading,
 * the Megatron-LM launch line parser with its list of argument names, and
 * a simulated iteration beside the planner's estimate of it.
 */
#ifndef PODPLAN_TESTS_PLAN_UTIL_H
#define PODPLAN_TESTS_PLAN_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "podplan/planner.h"
#include "podplan/sim.h"

/* The number at o[key]; fails the test when it is missing. */
double num(json_t *o, const char *key);
pp_cluster *load_cluster(const char *name);
/* The same with one --set PATH=VALUE. */
pp_cluster *load_cluster_set(const char *name, const char *set);
/* A GPU's profile from the catalogue under a stack (NULL: its default). */
pp_gpu_profile load_gpu_profile(const char *gpu, const char *stack);
void load_model(const char *spec, pp_model *m);

/* Whether `name` ("--swiglu") is a Megatron-LM argument. */
bool megatron_arg(const char *name);
/* Parses the Megatron-LM part of a launch script (after pretrain_gpt.py):
 * every flag must be a Megatron-LM argument (else the test fails);
 * returns the value of `want` ("" for a flag without value, NULL when
 * absent). */
const char *megatron_value(const char *script, const char *want, char *buf,
                           size_t len);

/* Simulates cfg (its model, layout, cluster and profile set by the caller)
 * and returns the iteration time, the breakdown in *bd when not NULL;
 * *est gets the planner's estimate of the same layout (without DP
 * overlap).  Fails the test on any error. */
double sim_and_estimate(const pp_step_config *cfg, double *est,
                        pp_breakdown *bd);

#endif
