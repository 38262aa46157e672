/*
 * plan_util.h: helpers shared by the planner's test files
 * (test_planner*.c): JSON numbers, loading, and the Megatron-LM launch
 * line parser with its list of argument names.
 */
#ifndef PODPLAN_TESTS_PLAN_UTIL_H
#define PODPLAN_TESTS_PLAN_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "podplan/planner.h"

/* The number at o[key]; fails the test when it is missing. */
double num(json_t *o, const char *key);
pp_cluster *load_cluster(const char *name);
void load_model(const char *spec, pp_model *m);

/* Whether `name` ("--swiglu") is a Megatron-LM argument. */
bool megatron_arg(const char *name);
/* Parses the Megatron-LM part of a launch script (after pretrain_gpt.py):
 * every flag must be a Megatron-LM argument (else the test fails);
 * returns the value of `want` ("" for a flag without value, NULL when
 * absent). */
const char *megatron_value(const char *script, const char *want, char *buf,
                           size_t len);

#endif
