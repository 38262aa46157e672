/*
 * sim_int.h: private to sim/topo/ (podplan_sim_topo).  The inside of a
 * cluster, shared by the loader (cluster.c, fabric.c, node.c), the graph
 * builder (graph.c), the analyses (topo_*.c) and the router (route.c).
 */
#ifndef PODPLAN_SIM_INT_H
#define PODPLAN_SIM_INT_H

#include "podplan/topo.h"

#include <igraph.h>

/* One PCIe endpoint of the server template (a GPU or an HCA): where it
 * hangs and how many lanes it asked for and got.  Every server of a
 * cluster is built from the same template. */
typedef struct pp_pcie_slot {
    pp_dev_kind kind;     /* PP_DEV_GPU or PP_DEV_HCA */
    int32_t local;        /* GPU or HCA index within the server */
    int32_t socket;       /* CPU socket it is attached under */
    int32_t pcie_switch;  /* local PCIe switch index, -1 = socket root port */
    int32_t lanes_wanted; /* x16 normally */
    int32_t lanes_got;    /* after the socket's lane budget */
} pp_pcie_slot;

typedef struct pp_pcie_layout {
    int32_t gen; /* 3, 4, 5 */
    int32_t sockets;
    int32_t lanes_per_socket;    /* lanes a socket gives its devices */
    int32_t switches;            /* PCIe switches per server */
    int32_t switch_socket[64];   /* socket of each PCIe switch */
    int32_t switch_uplink_lanes; /* switch -> socket width */
    double lane_Bps;             /* per lane, per direction, for gen */
    pp_pcie_slot *slots;         /* GPUs then HCAs */
    size_t n_slots;
} pp_pcie_layout;

struct pp_cluster {
    pp_cluster_info info;
    pp_catalog *owned_cat; /* loaded by us when the caller gave none */
    const pp_catalog *cat;
    char *source; /* the file it came from */

    pp_device *devs;
    size_t n_devs, cap_devs;
    pp_link *links; /* both directions; links[i].reverse pairs */
    size_t n_links, cap_links;
    int32_t *out_off; /* CSR: out_off[d] .. out_off[d+1] */
    int32_t *out_ids; /* link ids */

    int32_t *gpu_ids; /* [node * gpus_per_node + local] -> device */
    int32_t *hca_ids; /* [node * hcas_per_node + local] -> device */
    int32_t *gpu_hca; /* [gpu device] -> nearest HCA device, or -1;
                                indexed by device id, n_devs long */
    char **names;     /* owned device names, n_devs long */

    pp_pcie_layout pcie;  /* the server template's PCIe tree */
    char intra[32];       /* "nvswitch", "nvlink-mesh", ... */
    char fabric_kind[32]; /* "single-switch", "leaf-spine", ... */
    char wiring[16];      /* "rail" or "tor" */
    int32_t switch_radix[PP_DEV__COUNT]; /* ports per switch, by level */

    igraph_t graph; /* vertex i = device i, edge j = link j */
    bool has_graph;

    /* Added by the loader (cluster.c, graph.c); private to them. */
    struct pp__name_block *name_blocks; /* arena that holds names[] */
    int32_t *name_slots;     /* open-addressing hash: device id + 1, 0 empty */
    size_t name_cap;         /* slots in name_slots, a power of two */
    int32_t pods;            /* fat-tree pods; 0 for other fabrics */
    int32_t leaves_per_rail; /* rail wiring: leaves serving one rail (per
                                pod in a fat-tree); 0 otherwise */
};

/* Adds a device or a pair of links (both directions); return ids. */
int32_t pp__cluster_add_device(pp_cluster *c, pp_dev_kind kind, int32_t node,
                               int32_t local, const char *name);
int32_t pp__cluster_add_link(pp_cluster *c, int32_t a, int32_t b,
                             pp_link_kind kind, double bw_Bps, double lat_s,
                             int32_t lanes);
/* Reads the `node:` section and adds every server's devices and links
 * (node.c); reads the `fabric:` section (NULL when absent) and adds the
 * network (fabric.c).  Errors are located; the cluster is left partly
 * built and the caller frees it. */
int pp__node_build(pp_cluster *c, pp_node *node, pp_error *e);
int pp__fabric_build(pp_cluster *c, pp_node *fabric, pp_error *e);
/* Reads map[key] as a catalogue name of `kind` and looks it up; an unknown
 * name is a located error with "did you mean".  Returns 0, 1 when absent
 * and PP_OPTIONAL, or PP_EINPUT.  *out is a pp_gpu_spec, pp_link_spec,
 * pp_switch_spec or pp_server_spec; *where (may be NULL) the name's node. */
int pp__cat_lookup(const pp_cluster *c, pp_cat_kind kind, pp_node *map,
                   const char *path, const char *key, int flags,
                   const void **out, pp_node **where, pp_error *e);

/* Asks for every key of `keys` (NULL-terminated) and then reports the
 * first key of map that is none of them, with "did you mean": called
 * before reading a section, so a misspelt required key reads "unknown key
 * (did you mean ...)" rather than "missing". */
int pp__map_keys(pp_node *map, const char *path, const char *const *keys,
                 pp_error *e);

/* Builds out_off/out_ids and the igraph copy once all links are added. */
int pp__cluster_finish(pp_cluster *c, pp_error *e);

/* igraph's default error handler aborts: install ours once (idempotent)
 * and translate its codes. */
void pp__igraph_init(void);
int pp__igraph_error(int igraph_code, const char *what, pp_error *e);

#endif
