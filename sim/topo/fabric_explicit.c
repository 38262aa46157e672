/*
 * sim/topo/fabric_explicit.c: `fabric: {kind: explicit}`, a list of switches and
 * a list of cables for fabrics no generator describes.  Endpoints are
 * device names ("n0.hca3", "leaf2"); a dangling one is a located error.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_int.h"

static int read_switch_item(pp_cluster *c, fab *f, pp_node *it,
                            const char *path, int32_t *per_level,
                            const pp_switch_spec **spec_out, pp_error *e) {
    const char *name;
    int level = 0;
    int64_t pod = -1, rail = -1;
    const void *spec = NULL;
    pp_node *nn;
    char p[256];
    int rc;

    static const char *const keys[] = {"name", "level", "type",
                                       "pod",  "rail",  NULL};
    if ((rc = pp_node_expect(it, path, PP_NODE_MAP, e)) < 0 ||
        (rc = pp__map_keys(it, path, keys, e)) < 0 ||
        (rc = pp_map_string(it, path, "name", PP_REQUIRED, &name, e)) < 0 ||
        (rc = pp_map_enum(it, path, "level", PP_REQUIRED, pp__fabric_levels,
                          &level, e)) < 0)
        return rc;
    rc = pp__cat_lookup(c, PP_CAT_SWITCH, it, path, "type",
                        f->sw ? PP_OPTIONAL : PP_REQUIRED, &spec, NULL, e);
    if (rc < 0) return rc;
    if (rc == 1) spec = f->sw;
    if ((rc = pp_map_int(it, path, "pod", PP_OPTIONAL, 0, MAX_SWITCHES, &pod,
                         e)) < 0 ||
        (rc = pp_map_int(it, path, "rail", PP_OPTIONAL, 0, 1 << 20, &rail, e)) <
            0 ||
        (rc = pp_map_done(it, path, e)) < 0)
        return rc;
    nn = pp_map_get(it, "name");
    pp_path(p, sizeof p, path, "name");
    /* Node devices are "nN.xxx": a switch name with a dot could shadow
     * one, and names longer than our buffers help nobody. */
    if (strchr(name, '.') || strlen(name) >= PP_NAME_MAX ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_-") != strlen(name))
        return pp_error_at(e, PP_EINPUT, nn, p,
                           "expected a name of letters, digits, '-' and '_' "
                           "(at most %d), got \"%s\"",
                           PP_NAME_MAX - 1, name);
    int32_t other = pp_cluster_find(c, name);
    if (other >= 0)
        return pp_error_at(e, PP_EINPUT, nn, p, "\"%s\" is already a %s", name,
                           c->devs[other].node >= 0
                               ? "device of a node"
                               : "switch (names must be unique)");
    pp_dev_kind kind = (pp_dev_kind)(PP_DEV_LEAF + level);
    int32_t id = pp__cluster_add_device(c, kind, -1, per_level[level]++, name);
    c->devs[id].pod = (int32_t)pod;
    c->devs[id].rail = (int32_t)rail;
    const pp_switch_spec *s = spec;
    if (c->switch_radix[kind] == 0) c->switch_radix[kind] = s->radix;
    *spec_out = s;
    return 0;
}

static int resolve_end(pp_cluster *c, pp_node *it, const char *path,
                       const char *key, pp_node *switches, int32_t *out,
                       pp_error *e) {
    const char *name;
    char p[256];
    int rc = pp_map_string(it, path, key, PP_REQUIRED, &name, e);
    if (rc) return rc;
    pp_node *n = pp_map_get(it, key);
    pp_path(p, sizeof p, path, key);
    int32_t id = pp_cluster_find(c, name);
    if (id < 0) {
        /* Suggest the nearest switch name (node devices follow a pattern
         * the message spells out instead). */
        const char *near = NULL;
        int best = 3;
        for (size_t i = 0; i < switches->n; i++) {
            pp_node *sn = pp_map_get(switches->items[i], "name");
            if (!sn || sn->kind != PP_NODE_SCALAR) continue;
            int d = pp_edit_distance(name, sn->scalar, 2);
            if (d < best) {
                best = d;
                near = sn->scalar;
            }
        }
        if (near)
            return pp_error_at(e, PP_EINPUT, n, p,
                               "unknown endpoint \"%s\" (did you mean "
                               "\"%s\"?)",
                               name, near);
        return pp_error_at(e, PP_EINPUT, n, p,
                           "unknown endpoint \"%s\" (expected a switch of "
                           "fabric.switches or an HCA nN.hcaK with N < %d "
                           "and K < %d)",
                           name, c->info.nodes, c->info.hcas_per_node);
    }
    pp_dev_kind k = c->devs[id].kind;
    if (k != PP_DEV_HCA && !pp__fabric_is_switch(k))
        return pp_error_at(e, PP_EINPUT, n, p,
                           "\"%s\" is a %s; cables join HCAs and fabric "
                           "switches",
                           name, pp_dev_kind_name(k));
    *out = id;
    return 0;
}

static int read_link_item(pp_cluster *c, fab *f, pp_node *it, const char *path,
                          pp_node *switches, const pp_switch_spec *const *swi,
                          int32_t sw_base, pp_error *e) {
    int32_t a, b;
    int64_t count = 1;
    const void *spec = NULL;
    double bw = 0, lat = 0;
    int rc, has_bw, has_lat;

    static const char *const keys[] = {"a",         "b",       "link", "count",
                                       "bandwidth", "latency", NULL};
    if ((rc = pp_node_expect(it, path, PP_NODE_MAP, e)) < 0 ||
        (rc = pp__map_keys(it, path, keys, e)) < 0 ||
        (rc = resolve_end(c, it, path, "a", switches, &a, e)) < 0 ||
        (rc = resolve_end(c, it, path, "b", switches, &b, e)) < 0)
        return rc;
    rc = pp__cat_lookup(c, PP_CAT_LINK, it, path, "link", PP_OPTIONAL, &spec,
                        NULL, e);
    if (rc < 0) return rc;
    const pp_link_spec *ls = rc == 0 ? spec : f->link;
    if ((rc = pp_map_int(it, path, "count", PP_OPTIONAL, 1, 1024, &count, e)) <
        0)
        return rc;
    if ((has_bw = pp_map_quantity(it, path, "bandwidth", PP_OPTIONAL,
                                  PP_Q_BANDWIDTH, NULL, false, &bw, e)) < 0)
        return has_bw;
    if ((has_lat = pp_map_quantity(it, path, "latency", PP_OPTIONAL, PP_Q_TIME,
                                   NULL, true, &lat, e)) < 0)
        return has_lat;
    if ((rc = pp_map_done(it, path, e)) < 0) return rc;

    pp_dev_kind ka = c->devs[a].kind, kb = c->devs[b].kind;
    if (a == b || (ka == PP_DEV_HCA && kb == PP_DEV_HCA))
        return pp_error_at(e, PP_EINPUT, pp_map_get(it, "b"), path,
                           a == b ? "a cable needs two different ends"
                                  : "a cable needs a switch at one end");
    /* A cable runs at the slowest of its type, the HCA and the switch
     * ports at its ends, unless given a bandwidth. */
    const pp_switch_spec *sa =
        pp__fabric_is_switch(ka) ? swi[a - sw_base] : NULL;
    const pp_switch_spec *sb =
        pp__fabric_is_switch(kb) ? swi[b - sw_base] : NULL;
    if (has_bw != 0) {
        bw = ls->bw_Bps;
        if (ka == PP_DEV_HCA || kb == PP_DEV_HCA)
            bw = fmin(bw, c->info.nic_Bps);
        bw = fmin(bw,
                  fmin(pp__fabric_port_Bps(c, sa), pp__fabric_port_Bps(c, sb)));
    }
    if (has_lat != 0) lat = ls->lat_s;
    pp_link_kind kind =
        ka == PP_DEV_HCA || kb == PP_DEV_HCA ? PP_LINK_HOST : PP_LINK_FABRIC;
    for (int64_t i = 0; i < count; i++)
        pp__fabric_cable(c, a, b, kind, bw, lat, sa ? sa->lat_s : 0,
                         sb ? sb->lat_s : 0);
    return 0;
}

int pp__fabric_explicit(pp_cluster *c, fab *f, pp_error *e) {
    pp_node *sws, *links;
    int32_t per_level[3] = {0, 0, 0};
    char ip[256];
    const pp_switch_spec **swi = NULL; /* type of each, pp_device has none */
    int rc;

    if ((rc = pp_map_node(f->map, "fabric", "switches", PP_REQUIRED,
                          PP_NODE_SEQ, &sws, e)) < 0 ||
        (rc = pp_map_node(f->map, "fabric", "links", PP_REQUIRED, PP_NODE_SEQ,
                          &links, e)) < 0)
        return rc;
    if (sws->n == 0)
        return pp_error_at(e, PP_EINPUT, sws, "fabric.switches",
                           "expected at least one switch");
    if (sws->n > MAX_SWITCHES)
        return pp_error_at(e, PP_EINPUT, sws, "fabric.switches",
                           "more than %d switches", MAX_SWITCHES);
    int32_t sw_base = (int32_t)c->n_devs;
    swi = pp_xcalloc(sws->n, sizeof *swi);
    for (size_t i = 0; i < sws->n; i++) {
        pp_path_index(ip, sizeof ip, "fabric.switches", i);
        if ((rc = read_switch_item(c, f, sws->items[i], ip, per_level, &swi[i],
                                   e)) < 0)
            goto out;
    }
    for (size_t i = 0; i < links->n; i++) {
        pp_path_index(ip, sizeof ip, "fabric.links", i);
        if ((rc = read_link_item(c, f, links->items[i], ip, sws, swi, sw_base,
                                 e)) < 0)
            goto out;
    }
    f->n_leaves = per_level[0];
    f->n_spines = per_level[1];
    f->n_cores = per_level[2];
    rc = 0;
out:
    free(swi);
    return rc;
}
