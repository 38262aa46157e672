/*
 * whatif_int.h: the what-if layer's private parts (podplan_whatif).
 */
#ifndef PODPLAN_WHATIF_INT_H
#define PODPLAN_WHATIF_INT_H

#include "podplan/whatif.h"

#include <math.h>

/* Names a study may give in `vary:`/`zip:` that are not cluster paths. */
typedef enum {
    WI_KEY_CLUSTER, /* a --set path */
    WI_KEY_BUNDLE,
    WI_KEY_MODEL,
    WI_KEY_TOKENS,
    WI_KEY_GBS,
    WI_KEY_PARALLEL,
    WI_KEY_SPARES
} wi_key_kind;

/* One key of an axis and its values (borrowed nodes of the document). */
typedef struct wi_key {
    const char *path;
    wi_key_kind kind;
    pp_node *key_node;
    pp_node **values; /* the axis's n_values */
} wi_key;

/* A `vary:` key (one key) or a `zip:` group (keys that change together). */
typedef struct wi_axis {
    wi_key *keys;
    size_t n_keys, n_values;
} wi_axis;

/* A named hardware bundle: the cluster fields it sets and its prices. */
typedef struct wi_bundle {
    const char *name;
    pp_node *node;
    const char *sets[8];
    pp_node *set_nodes[8];
    size_t n_sets;
    pp_whatif_unit_prices price; /* NAN: the study's or catalogue's */
} wi_bundle;

/* Named unit prices of the study's prices: section. */
typedef struct wi_named_price {
    int what; /* 0 server, 1 gpu, 2 hca, 3 switch, 4 cable */
    const char *name;
    double usd;
} wi_named_price;

struct pp_whatif_study {
    pp_doc *doc;
    char *path;
    const char *name, *description;
    const char *model, *cluster, *stack;
    double tokens;
    int64_t gbs;             /* 0: from tokens_per_batch */
    double tokens_per_batch; /* 0: gbs given */
    const char **sets;       /* the study's base `set:` overrides */
    pp_node **set_nodes;
    size_t n_sets;
    /* A fixed layout (parallel != NULL) or the planner's best. */
    const char *parallel;
    const pp_node *parallel_node;
    bool p2p_scatter;
    int dp_overlap; /* -1 the simulator's default */
    double compute_time_s;
    pp_fidelity fidelity;
    int top;
    double a2a_budget; /* planner.a2a_budget (pp_plan_options) */
    int64_t gpus;
    wi_axis *axes;
    size_t n_axes, n_variants;
    wi_bundle *bundles;
    size_t n_bundles;
    pp_whatif_prices prices;
    wi_named_price *named;
    size_t n_named;
    pp_whatif_failures failures;
    double deadline_s, budget_usd, power_cap_w; /* 0: none */
};

/* A name relative to the study's folder when that file exists there
 * (studies name their own inputs), else as given (a shipped name). */
const char *pp__whatif_beside(const pp_whatif_study *s, const char *name,
                              char *buf, size_t len);

/* Money: 400000, "$400,000", "$4.95M", "1.2k"; > 0 unless allow_zero. */
int pp__wi_money(const pp_node *n, const char *path, bool allow_zero,
                 double *out, pp_error *e);

#endif
