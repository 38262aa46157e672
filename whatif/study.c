/*
 * whatif/study.c: reads a study file (studies/README.md has the schema)
 * and numbers its variants.
 *
 * Every check that needs only the file is made here, so that a broken
 * study exits before the first variant runs: unknown keys, empty lists,
 * zip lists of unequal length, values with the wrong unit, bundles that
 * are not defined.  What needs the cluster (a --set path the cluster does
 * not have, a GPU name the catalogue lacks) is found when a variant
 * builds it, and run.c points that error at the study's line too.
 */
#include "whatif_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Keys of `vary:` that are study fields rather than cluster paths. */
static const struct {
    const char *name;
    wi_key_kind kind;
} special_keys[] = {
    {"bundle", WI_KEY_BUNDLE},     {"model", WI_KEY_MODEL},
    {"tokens", WI_KEY_TOKENS},     {"global_batch", WI_KEY_GBS},
    {"parallel", WI_KEY_PARALLEL}, {"spares", WI_KEY_SPARES},
};

int pp__wi_money(const pp_node *n, const char *path, bool allow_zero,
                 double *out, pp_error *e) {
    if (n->kind != PP_NODE_SCALAR)
        return pp_error_at(e, PP_EINPUT, n, path,
                           "expected an amount of dollars such as 400000 or "
                           "$1.2M");
    const char *s = n->scalar;
    char buf[64];
    size_t k = 0;
    if (*s == '$') s++;
    /* Thousands separators are dropped; anything else must parse. */
    for (; *s && k + 1 < sizeof buf; s++)
        if (*s != ',' && *s != '_') buf[k++] = *s;
    buf[k] = '\0';
    char *end;
    double x = strtod(buf, &end);
    double mult = 1;
    if (end != buf && *end && end[1] == '\0') {
        switch (*end) {
        case 'k': case 'K': mult = 1e3; end++; break;
        case 'M': mult = 1e6; end++; break;
        case 'B': mult = 1e9; end++; break;
        default: break;
        }
    }
    if (end == buf || *end || !isfinite(x) || x < 0 || (!allow_zero && x == 0))
        return pp_error_at(e, PP_EINPUT, n, path,
                           "expected %samount of dollars such as 400000, "
                           "$400,000 or $1.2M, got \"%s\"",
                           allow_zero ? "an " : "a positive ", n->scalar);
    *out = x * mult;
    return 0;
}

/* Watts: "700W", "500kW", "2.5MW". */
static int read_power(const pp_node *n, const char *path, double *out,
                      pp_error *e) {
    char *end;
    double x = n->kind == PP_NODE_SCALAR ? strtod(n->scalar, &end) : NAN;
    double mult = 0;
    if (n->kind == PP_NODE_SCALAR && end != n->scalar) {
        if (strcmp(end, "W") == 0) mult = 1;
        else if (strcmp(end, "kW") == 0) mult = 1e3;
        else if (strcmp(end, "MW") == 0) mult = 1e6;
        else if (strcmp(end, "GW") == 0) mult = 1e9;
    }
    if (!(mult > 0) || !(x > 0) || !isfinite(x))
        return pp_error_at(e, PP_EINPUT, n, path,
                           "expected a power such as 700W, 500kW or 2MW, got "
                           "\"%s\"",
                           n->kind == PP_NODE_SCALAR ? n->scalar : "");
    *out = x * mult;
    return 0;
}

/* A scalar value of a vary/zip list, checked for its unit where the key
 * is a study field. */
static int check_value(const wi_key *k, const pp_node *v, const char *path,
                       pp_error *e) {
    if (v->kind != PP_NODE_SCALAR)
        return pp_error_at(e, PP_EINPUT, v, path,
                           "expected a scalar value (a list item of `vary:` "
                           "is one value)");
    double d;
    int64_t i;
    switch (k->kind) {
    case WI_KEY_TOKENS:
        return pp_node_quantity(v, path, PP_Q_COUNT, NULL, false, &d, e);
    case WI_KEY_GBS:
        return pp_node_int(v, path, 1, INT64_MAX, &i, e);
    case WI_KEY_SPARES:
        return pp_node_int(v, path, 0, 1000000, &i, e);
    default: return 0;
    }
}

static wi_key_kind key_kind(const char *path) {
    for (size_t i = 0; i < sizeof special_keys / sizeof *special_keys; i++)
        if (strcmp(path, special_keys[i].name) == 0)
            return special_keys[i].kind;
    return WI_KEY_CLUSTER;
}

/* One key with its list: fills k; *n_values gets the list's length. */
static int read_key(pp_node *key, pp_node *list, const char *prefix, wi_key *k,
                    size_t *n_values, pp_error *e) {
    char path[256];
    pp_path(path, sizeof path, prefix, key->scalar);
    k->path = key->scalar;
    k->kind = key_kind(key->scalar);
    k->key_node = key;
    int rc = pp_node_expect(list, path, PP_NODE_SEQ, e);
    if (rc < 0) return rc;
    if (list->n == 0)
        return pp_error_at(e, PP_EINPUT, list, path,
                           "empty list: give at least one value");
    k->values = list->items;
    *n_values = list->n;
    for (size_t j = 0; j < list->n; j++) {
        char ip[280];
        pp_path_index(ip, sizeof ip, path, j);
        if ((rc = check_value(k, list->items[j], ip, e)) < 0) return rc;
    }
    return 0;
}

static int read_axes(pp_whatif_study *s, pp_node *root, pp_error *e) {
    pp_node *vary = NULL, *zip = NULL;
    int rc = pp_map_node(root, "", "vary", PP_OPTIONAL, PP_NODE_MAP, &vary, e);
    if (rc < 0) return rc;
    rc = pp_map_node(root, "", "zip", PP_OPTIONAL, PP_NODE_SEQ, &zip, e);
    if (rc < 0) return rc;
    size_t n = (vary ? vary->n : 0) + (zip ? zip->n : 0);
    if (n > 64)
        return pp_error_at(e, PP_EINPUT, vary ? vary : zip, "vary",
                           "more than 64 axes (vary keys and zip groups)");
    s->axes = pp_xcalloc(n ? n : 1, sizeof *s->axes);
    s->n_variants = 1;
    for (size_t i = 0; vary && i < vary->n; i++) {
        wi_axis *a = &s->axes[s->n_axes++];
        a->keys = pp_xcalloc(1, sizeof *a->keys);
        a->n_keys = 1;
        if ((rc = read_key(vary->keys[i], vary->items[i], "vary", a->keys,
                           &a->n_values, e)) < 0)
            return rc;
    }
    for (size_t g = 0; zip && g < zip->n; g++) {
        char gp[64];
        pp_path_index(gp, sizeof gp, "zip", g);
        pp_node *m = zip->items[g];
        if ((rc = pp_node_expect(m, gp, PP_NODE_MAP, e)) < 0) return rc;
        if (m->n == 0)
            return pp_error_at(e, PP_EINPUT, m, gp,
                               "empty group: give keys with their lists");
        wi_axis *a = &s->axes[s->n_axes++];
        a->keys = pp_xcalloc(m->n, sizeof *a->keys);
        for (size_t i = 0; i < m->n; i++) {
            size_t nv;
            if ((rc = read_key(m->keys[i], m->items[i], gp, &a->keys[i], &nv,
                               e)) < 0)
                return rc;
            a->n_keys++;
            if (i == 0) {
                a->n_values = nv;
            } else if (nv != a->n_values) {
                char kp[256];
                pp_path(kp, sizeof kp, gp, m->keys[i]->scalar);
                return pp_error_at(e, PP_EINPUT, m->items[i], kp,
                                   "zip lists change together and must have "
                                   "the same length: %zu values here, %zu "
                                   "for %s",
                                   nv, a->n_values, m->keys[0]->scalar);
            }
        }
    }
    /* A key in two axes would make variants that contradict themselves. */
    for (size_t i = 0; i < s->n_axes; i++)
        for (size_t k = 0; k < s->axes[i].n_keys; k++)
            for (size_t j = 0; j <= i; j++)
                for (size_t l = 0; l < (j == i ? k : s->axes[j].n_keys); l++)
                    if (strcmp(s->axes[i].keys[k].path,
                               s->axes[j].keys[l].path) == 0)
                        return pp_error_at(
                            e, PP_EINPUT, s->axes[i].keys[k].key_node,
                            s->axes[i].keys[k].path,
                            "varied twice (also at line %d)",
                            s->axes[j].keys[l].key_node->line);
    for (size_t i = 0; i < s->n_axes; i++) {
        if (s->n_variants > 100000 / s->axes[i].n_values)
            return pp_error_at(e, PP_EINPUT, s->axes[i].keys[0].key_node,
                               s->axes[i].keys[0].path,
                               "more than 100,000 variants in all");
        s->n_variants *= s->axes[i].n_values;
    }
    return 0;
}

/* bundles: {NAME: {gpu, server, nic, switch, link, gpus_per_node,
 * nics_per_node, price: {server, gpu, hca, switch, cable}}} */
static int read_bundles(pp_whatif_study *s, pp_node *root, pp_error *e) {
    static const char *const fields[][2] = {
        {"gpu", "node.gpus.type"},        {"server", "node.server"},
        {"nic", "node.nics.type"},        {"switch", "fabric.switch"},
        {"link", "fabric.link"},          {"gpus_per_node", "node.gpus.count"},
        {"nics_per_node", "node.nics.count"},
    };
    pp_node *b = NULL;
    int rc = pp_map_node(root, "", "bundles", PP_OPTIONAL, PP_NODE_MAP, &b, e);
    if (rc < 0 || !b) return rc < 0 ? rc : 0;
    s->bundles = pp_xcalloc(b->n ? b->n : 1, sizeof *s->bundles);
    for (size_t i = 0; i < b->n; i++) {
        char path[256];
        pp_path(path, sizeof path, "bundles", b->keys[i]->scalar);
        wi_bundle *w = &s->bundles[s->n_bundles++];
        w->name = b->keys[i]->scalar;
        w->node = b->items[i];
        w->price = (pp_whatif_unit_prices){NAN, NAN, NAN, NAN, NAN};
        if ((rc = pp_node_expect(w->node, path, PP_NODE_MAP, e)) < 0)
            return rc;
        for (size_t f = 0; f < sizeof fields / sizeof *fields; f++) {
            pp_node *v = NULL;
            if ((rc = pp_map_node(w->node, path, fields[f][0], PP_OPTIONAL,
                                  PP_NODE_SCALAR, &v, e)) < 0)
                return rc;
            if (!v) continue;
            size_t len = strlen(fields[f][1]) + strlen(v->scalar) + 2;
            char *set = pp_xmalloc(len);
            snprintf(set, len, "%s=%s", fields[f][1], v->scalar);
            w->sets[w->n_sets] = set;
            w->set_nodes[w->n_sets++] = v;
        }
        pp_node *pr = NULL;
        if ((rc = pp_map_node(w->node, path, "price", PP_OPTIONAL, PP_NODE_MAP,
                              &pr, e)) < 0)
            return rc;
        if (pr) {
            static const char *const what[] = {"server", "gpu", "hca",
                                               "switch", "cable"};
            double *dst[] = {&w->price.server_usd, &w->price.gpu_usd,
                             &w->price.hca_usd, &w->price.switch_usd,
                             &w->price.cable_usd};
            char pp[280];
            pp_path(pp, sizeof pp, path, "price");
            for (int k = 0; k < 5; k++) {
                pp_node *v = pp_map_get(pr, what[k]);
                char kp[300];
                if (v && (rc = pp__wi_money(v, pp_path(kp, sizeof kp, pp,
                                                       what[k]),
                                            true, dst[k], e)) < 0)
                    return rc;
            }
            if ((rc = pp_map_done(pr, pp, e)) < 0) return rc;
        }
        if ((rc = pp_map_done(w->node, path, e)) < 0) return rc;
    }
    return 0;
}

/* Every `bundle` value names a bundle. */
static int check_bundle_refs(const pp_whatif_study *s, pp_error *e) {
    for (size_t i = 0; i < s->n_axes; i++)
        for (size_t k = 0; k < s->axes[i].n_keys; k++) {
            const wi_key *key = &s->axes[i].keys[k];
            if (key->kind != WI_KEY_BUNDLE) continue;
            for (size_t j = 0; j < s->axes[i].n_values; j++) {
                const pp_node *v = key->values[j];
                bool found = false;
                for (size_t b = 0; b < s->n_bundles; b++)
                    found |= strcmp(s->bundles[b].name, v->scalar) == 0;
                if (!found)
                    return pp_error_at(e, PP_EINPUT, v, "bundle",
                                       "no bundle named \"%s\" under "
                                       "bundles:",
                                       v->scalar);
            }
        }
    return 0;
}

static int read_prices(pp_whatif_study *s, pp_node *root, pp_error *e) {
    pp_whatif_prices *p = &s->prices;
    p->amortization_years = 4;
    p->usd_per_kwh = 0.10;
    p->pue = 1.3;
    pp_node *m = NULL;
    int rc = pp_map_node(root, "", "prices", PP_OPTIONAL, PP_NODE_MAP, &m, e);
    if (rc < 0 || !m) return rc < 0 ? rc : 0;
    pp_node *v;
    if ((rc = pp_map_number(m, "prices", "amortization_years", PP_OPTIONAL,
                            0.01, 100, &p->amortization_years, e)) < 0 ||
        (rc = pp_map_number(m, "prices", "pue", PP_OPTIONAL, 1, 10, &p->pue,
                            e)) < 0)
        return rc;
    if ((v = pp_map_get(m, "usd_per_kwh")) &&
        (rc = pp__wi_money(v, "prices.usd_per_kwh", true, &p->usd_per_kwh,
                           e)) < 0)
        return rc;
    if ((v = pp_map_get(m, "rent_usd_per_gpu_hour")) &&
        (rc = pp__wi_money(v, "prices.rent_usd_per_gpu_hour", true,
                           &p->rent_usd_per_gpu_hour, e)) < 0)
        return rc;
    static const char *const sections[] = {"servers", "gpus", "hcas",
                                           "switches", "cables"};
    size_t cap = 0;
    for (int k = 0; k < 5; k++) {
        pp_node *sec = NULL;
        if ((rc = pp_map_node(m, "prices", sections[k], PP_OPTIONAL,
                              PP_NODE_MAP, &sec, e)) < 0)
            return rc;
        for (size_t i = 0; sec && i < sec->n; i++) {
            char path[256], sp[64];
            snprintf(sp, sizeof sp, "prices.%s", sections[k]);
            pp_path(path, sizeof path, sp, sec->keys[i]->scalar);
            s->named = pp_vec_grow(s->named, &cap, s->n_named + 1,
                                   sizeof *s->named, 8);
            wi_named_price *np = &s->named[s->n_named++];
            np->what = k;
            np->name = sec->keys[i]->scalar;
            pp_map_get(sec, np->name);
            if ((rc = pp__wi_money(sec->items[i], path, true, &np->usd, e)) <
                0)
                return rc;
        }
    }
    return pp_map_done(m, "prices", e);
}

static int read_failures(pp_whatif_study *s, pp_node *root, pp_error *e) {
    pp_whatif_failures *f = &s->failures;
    pp_whatif_failures_default(f);
    pp_node *m = NULL;
    int rc = pp_map_node(root, "", "failures", PP_OPTIONAL, PP_NODE_MAP, &m, e);
    if (rc < 0 || !m) return rc < 0 ? rc : 0;
    const char *P = "failures";
    int64_t spares = 0;
    if ((rc = pp_map_bool(m, P, "enabled", PP_OPTIONAL, &f->enabled, e)) < 0 ||
        (rc = pp_map_int(m, P, "spares", PP_OPTIONAL, 0, 1000000, &spares,
                         e)) < 0 ||
        (rc = pp_map_quantity(m, P, "restart", PP_OPTIONAL, PP_Q_TIME, NULL,
                              false, &f->restart_s, e)) < 0 ||
        (rc = pp_map_quantity(m, P, "repair", PP_OPTIONAL, PP_Q_TIME, NULL,
                              true, &f->repair_s, e)) < 0 ||
        (rc = pp_map_quantity(m, P, "checkpoint_bw", PP_OPTIONAL,
                              PP_Q_BANDWIDTH, NULL, false,
                              &f->checkpoint_bw_Bps, e)) < 0 ||
        (rc = pp_map_quantity(m, P, "checkpoint_bw_per_node", PP_OPTIONAL,
                              PP_Q_BANDWIDTH, NULL, false,
                              &f->checkpoint_node_Bps, e)) < 0 ||
        (rc = pp_map_number(m, P, "checkpoint_bytes_per_param", PP_OPTIONAL,
                            0.1, 64, &f->checkpoint_bytes_per_param, e)) < 0)
        return rc;
    s->prices.spare_nodes = (double)spares;
    /* Rates as "MTBF per component": hours between failures of one. */
    pp_node *r = NULL;
    if ((rc = pp_map_node(m, P, "mtbf", PP_OPTIONAL, PP_NODE_MAP, &r, e)) < 0)
        return rc;
    if (r) {
        static const char *const keys[] = {"gpu", "hbm", "nic", "switch",
                                           "host", "software"};
        double *dst[] = {&f->gpu_per_h,    &f->hbm_per_h,  &f->nic_per_h,
                         &f->switch_per_h, &f->host_per_h, &f->software_per_h};
        for (int k = 0; k < 6; k++) {
            double t;
            int q = pp_map_quantity(r, "failures.mtbf", keys[k], PP_OPTIONAL,
                                    PP_Q_TIME, NULL, false, &t, e);
            if (q < 0) return q;
            if (q == 0) *dst[k] = 3600.0 / t;
        }
        if ((rc = pp_map_done(r, "failures.mtbf", e)) < 0) return rc;
    }
    return pp_map_done(m, P, e);
}

static int read_layout(pp_whatif_study *s, pp_node *root, pp_error *e) {
    s->p2p_scatter = true;
    s->dp_overlap = -1;
    s->fidelity = PP_FIDELITY_FLOW;
    s->top = 1;
    s->a2a_budget = PP_PLAN_A2A_BUDGET;
    pp_node *m = NULL;
    int rc = pp_map_node(root, "", "layout", PP_OPTIONAL, PP_NODE_MAP, &m, e);
    if (rc < 0) return rc;
    if (m) {
        const char *P = "layout";
        bool ov = false;
        if ((rc = pp_map_string(m, P, "parallel", PP_REQUIRED, &s->parallel,
                                e)) < 0 ||
            (rc = pp_map_bool(m, P, "p2p_scatter_gather", PP_OPTIONAL,
                              &s->p2p_scatter, e)) < 0 ||
            (rc = pp_map_quantity(m, P, "compute_time", PP_OPTIONAL, PP_Q_TIME,
                                  NULL, false, &s->compute_time_s, e)) < 0)
            return rc;
        if ((rc = pp_map_bool(m, P, "dp_overlap", PP_OPTIONAL, &ov, e)) < 0)
            return rc;
        if (rc == 0) s->dp_overlap = ov;
        s->parallel_node = pp_map_get(m, "parallel");
        if ((rc = pp_map_done(m, P, e)) < 0) return rc;
    }
    pp_node *pl = NULL;
    if ((rc = pp_map_node(root, "", "planner", PP_OPTIONAL, PP_NODE_MAP, &pl,
                          e)) < 0)
        return rc;
    if (pl) {
        int64_t top = s->top;
        if ((rc = pp_map_int(pl, "planner", "top", PP_OPTIONAL, 0, 1000, &top,
                             e)) < 0 ||
            (rc = pp_map_int(pl, "planner", "gpus", PP_OPTIONAL, 1, INT64_MAX,
                             &s->gpus, e)) < 0 ||
            (rc = pp_map_number(pl, "planner", "a2a_budget", PP_OPTIONAL, 0,
                                1e18, &s->a2a_budget, e)) < 0)
            return rc;
        s->top = (int)top;
        const char *fid = NULL;
        if ((rc = pp_map_string(pl, "planner", "fidelity", PP_OPTIONAL, &fid,
                                e)) < 0)
            return rc;
        if (fid) {
            int v;
            pp_error why = PP_ERROR_INIT;
            if (pp_registry_parse(&pp_reg_fidelity, "planner.fidelity", fid,
                                  &v, &why) < 0)
                return pp_error_at(e, PP_EINPUT, pp_map_get(pl, "fidelity"),
                                   NULL, "%s", why.msg);
            s->fidelity = (pp_fidelity)v;
        }
        if ((rc = pp_map_done(pl, "planner", e)) < 0) return rc;
    }
    return 0;
}

static int read_constraints(pp_whatif_study *s, pp_node *root, pp_error *e) {
    pp_node *m = NULL;
    int rc = pp_map_node(root, "", "constraints", PP_OPTIONAL, PP_NODE_MAP, &m,
                         e);
    if (rc < 0 || !m) return rc < 0 ? rc : 0;
    pp_node *v;
    if ((rc = pp_map_quantity(m, "constraints", "deadline", PP_OPTIONAL,
                              PP_Q_TIME, NULL, false, &s->deadline_s, e)) < 0)
        return rc;
    if ((v = pp_map_get(m, "budget")) &&
        (rc = pp__wi_money(v, "constraints.budget", false, &s->budget_usd,
                           e)) < 0)
        return rc;
    if ((v = pp_map_get(m, "power")) &&
        (rc = read_power(v, "constraints.power", &s->power_cap_w, e)) < 0)
        return rc;
    return pp_map_done(m, "constraints", e);
}

static int read_study(pp_whatif_study *s, pp_error *e) {
    pp_node *root = pp_doc_root(s->doc);
    int rc = pp_node_expect(root, "", PP_NODE_MAP, e);
    if (rc < 0) return rc;
    if ((rc = pp_map_string(root, "", "name", PP_REQUIRED, &s->name, e)) < 0 ||
        (rc = pp_map_string(root, "", "description", PP_OPTIONAL,
                            &s->description, e)) < 0 ||
        (rc = pp_map_string(root, "", "model", PP_REQUIRED, &s->model, e)) <
            0 ||
        (rc = pp_map_string(root, "", "cluster", PP_REQUIRED, &s->cluster,
                            e)) < 0 ||
        (rc = pp_map_string(root, "", "stack", PP_OPTIONAL, &s->stack, e)) <
            0 ||
        (rc = pp_map_quantity(root, "", "tokens", PP_REQUIRED, PP_Q_COUNT,
                              NULL, false, &s->tokens, e)) < 0 ||
        (rc = pp_map_int(root, "", "global_batch", PP_OPTIONAL, 1, INT64_MAX,
                         &s->gbs, e)) < 0 ||
        (rc = pp_map_quantity(root, "", "tokens_per_batch", PP_OPTIONAL,
                              PP_Q_COUNT, NULL, false, &s->tokens_per_batch,
                              e)) < 0)
        return rc;
    /* The stack every variant trains with: one podplan has (a name in
     * topologies/stacks/ or a file beside the study), said here at its
     * line rather than by the first variant. */
    if (s->stack) {
        pp_stack st;
        pp_error why = PP_ERROR_INIT;
        char buf[1024];
        if (pp_stack_load(pp__whatif_beside(s, s->stack, buf, sizeof buf), &st,
                          &why) < 0)
            return pp_error_at(e, PP_EINPUT, pp_map_get(root, "stack"), "stack",
                               "%s", why.msg);
    }
    if ((s->gbs > 0) == (s->tokens_per_batch > 0))
        return pp_error_at(e, PP_EINPUT, root, "global_batch",
                           "give global_batch (sequences) or "
                           "tokens_per_batch, one of them");
    pp_node *sets = NULL;
    if ((rc = pp_map_node(root, "", "set", PP_OPTIONAL, PP_NODE_MAP, &sets,
                          e)) < 0)
        return rc;
    if (sets) {
        s->sets = pp_xcalloc(sets->n ? sets->n : 1, sizeof *s->sets);
        s->set_nodes = pp_xcalloc(sets->n ? sets->n : 1, sizeof *s->set_nodes);
        for (size_t i = 0; i < sets->n; i++) {
            char path[256];
            pp_path(path, sizeof path, "set", sets->keys[i]->scalar);
            if ((rc = pp_node_expect(sets->items[i], path, PP_NODE_SCALAR,
                                     e)) < 0)
                return rc;
            size_t len =
                strlen(sets->keys[i]->scalar) + strlen(sets->items[i]->scalar) +
                2;
            char *a = pp_xmalloc(len);
            snprintf(a, len, "%s=%s", sets->keys[i]->scalar,
                     sets->items[i]->scalar);
            s->sets[s->n_sets] = a;
            s->set_nodes[s->n_sets++] = sets->items[i];
        }
    }
    if ((rc = read_layout(s, root, e)) < 0 ||
        (rc = read_bundles(s, root, e)) < 0 || (rc = read_axes(s, root, e)) < 0 ||
        (rc = check_bundle_refs(s, e)) < 0 ||
        (rc = read_prices(s, root, e)) < 0 ||
        (rc = read_failures(s, root, e)) < 0 ||
        (rc = read_constraints(s, root, e)) < 0)
        return rc;
    return pp_map_done(root, "", e);
}

int pp_whatif_study_load(const char *path, pp_whatif_study **out,
                         pp_error *e) {
    pp_whatif_study *s = pp_xcalloc(1, sizeof *s);
    int rc = pp_doc_load_file(path, &s->doc, e);
    if (rc == 0) {
        s->path = pp_xstrdup(path);
        rc = read_study(s, e);
    }
    if (rc < 0) {
        pp_whatif_study_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void pp_whatif_study_free(pp_whatif_study *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_axes; i++) free(s->axes[i].keys);
    free(s->axes);
    for (size_t i = 0; i < s->n_bundles; i++)
        for (size_t k = 0; k < s->bundles[i].n_sets; k++)
            free((char *)s->bundles[i].sets[k]);
    free(s->bundles);
    for (size_t i = 0; i < s->n_sets; i++) free((char *)s->sets[i]);
    free(s->sets);
    free(s->set_nodes);
    free(s->named);
    free(s->path);
    pp_doc_free(s->doc);
    free(s);
}

size_t pp_whatif_variant_count(const pp_whatif_study *s) {
    return s->n_variants;
}

const char *pp_whatif_study_name(const pp_whatif_study *s) { return s->name; }
