/*
 * fabric_int.h: private to the fabric readers (fabric.c: the section and
 * its generators; fabric_explicit.c: switch and cable lists).
 */
#ifndef PODPLAN_FABRIC_INT_H
#define PODPLAN_FABRIC_INT_H

#include "sim_int.h"

#define MAX_SWITCHES 1000000

/* What the `fabric:` section says, as the generators read it. */
typedef struct fab {
    pp_node *map;
    int kind, wiring;
    const pp_switch_spec *sw;
    pp_node *sw_node, *radix_node;
    const pp_link_spec *link;
    int64_t radix;
    double ratio, spine_ratio;
    double bw, lat, sw_lat; /* cable bandwidth, cable and switch latency */
    int32_t n_leaves, n_spines, n_cores;
} fab;

/* "leaf", "spine", "core", NULL: the levels in YAML. */
extern const char *const pp__fabric_levels[];

/* One cable: two directed links.  A hop into a fabric switch also pays
 * the switch's port-to-port latency (lat_a entering a, lat_b entering b),
 * so a path's latency is the sum of its links', each switch counted once. */
void pp__fabric_cable(pp_cluster *c, int32_t a, int32_t b, pp_link_kind kind,
                      double bw, double lat, double lat_a, double lat_b);
/* The port speed of a switch type, INFINITY when the catalogue has none. */
double pp__fabric_port_Bps(const pp_cluster *c, const pp_switch_spec *s);
bool pp__fabric_is_switch(pp_dev_kind k);
/* The explicit form: fabric.switches and fabric.links. */
int pp__fabric_explicit(pp_cluster *c, fab *f, pp_error *e);

#endif
