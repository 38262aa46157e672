/*
 * podplan/topo.h: clusters, their analysis and routing (podplan_sim_topo).
 *
 * A cluster is loaded from YAML (a generator such as leaf-spine or
 * fat-tree, or an explicit list of switches and links), expanded into a
 * device graph (GPUs, NVSwitches, PCIe switches, CPU sockets, HCAs,
 * leaf/spine/core switches; one directed link per direction with its
 * bandwidth and latency), and exported as compact arrays that the
 * simulator walks in its hot loop.  igraph holds the same graph for the
 * analyses (connectivity, max-flow bisection, paths) and for GraphML
 * export; it stays private to sim/topo/.  Depends on hw, models and
 * common.
 */
#ifndef PODPLAN_TOPO_H
#define PODPLAN_TOPO_H

#include "podplan/common.h"
#include "podplan/models.h"
#include "podplan/forward.h"
#include "podplan/hw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The device graph (read-only views; the cluster owns everything).
 * ---------------------------------------------------------------------- */
typedef enum {
    PP_DEV_GPU,
    PP_DEV_NVSWITCH,
    PP_DEV_PCIE_SWITCH,
    PP_DEV_CPU,
    PP_DEV_HCA,
    PP_DEV_LEAF,
    PP_DEV_SPINE,
    PP_DEV_CORE,
    PP_DEV__COUNT
} pp_dev_kind;

typedef enum {
    PP_LINK_NVLINK, /* GPU <-> NVSwitch, or GPU <-> GPU in a mesh */
    PP_LINK_PCIE,   /* GPU/HCA <-> PCIe switch <-> CPU */
    PP_LINK_SOCKET, /* CPU <-> CPU */
    PP_LINK_HOST,   /* HCA <-> leaf (or ToR) */
    PP_LINK_FABRIC, /* switch <-> switch */
    PP_LINK__COUNT
} pp_link_kind;

typedef struct pp_device {
    pp_dev_kind kind;
    int32_t node;     /* server index; -1 for fabric switches */
    int32_t local;    /* index within its server or its level */
    int32_t pod;      /* fat-tree pod; -1 when none */
    int32_t rail;     /* HCA: rail (= local index); leaf: rail it serves
                        under rail-optimised wiring; -1 otherwise */
    const char *name; /* "n3.gpu5", "n3.hca5", "n3.pcie1", "n3.cpu0",
                        "n3.nvs0", "leaf4", "spine1", "core0" */
} pp_device;

typedef struct pp_link {
    int32_t src, dst; /* device ids */
    int32_t reverse;  /* the link of the opposite direction */
    pp_link_kind kind;
    double bw_Bps; /* capacity of this direction */
    double lat_s;  /* latency of this hop */
    int32_t lanes; /* PCIe: negotiated width (x16, x8); 0 otherwise */
} pp_link;

/* Summary of a cluster (plain data, read-only). */
typedef struct pp_cluster_info {
    char name[PP_NAME_MAX];
    int32_t nodes, gpus_per_node, hcas_per_node;
    int32_t gpus, hcas;              /* totals */
    const pp_gpu_spec *gpu;          /* the GPU type */
    const pp_link_spec *nic;         /* the HCA type (NULL if none) */
    double nic_Bps;                  /* per HCA, per direction */
    double host_memory_bytes;        /* per node */
    int32_t switches[PP_DEV__COUNT]; /* count per kind */
    double stated_oversubscription;  /* from the YAML (1 = 1:1) */
    /* Catalogue entries the file named, for prices; NULL when it named
     * none (an explicit fabric may name no default switch). */
    const pp_server_spec *server;        /* node.server */
    const pp_switch_spec *fabric_switch; /* fabric.switch */
    const pp_link_spec *fabric_link;     /* fabric.link, else the NIC's */
} pp_cluster_info;

/* Loads a cluster from `spec` (a YAML path or a name in topologies/),
 * applying overrides `sets` ("node.nics.count=4", the dotted paths a study
 * file uses) before reading, and builds its graph.  cat may be NULL (the
 * shipped catalogue is loaded and owned by the cluster).  Errors: PP_EINPUT
 * with file:line:col (an override's errors name "--set"), PP_ENOENT. */
int pp_cluster_load(const char *spec, const char *const *sets, size_t n_sets,
                    const pp_catalog *cat, pp_cluster **out, pp_error *e);
void pp_cluster_free(pp_cluster *c);

const pp_cluster_info *pp_cluster_info_get(const pp_cluster *c);
const pp_catalog *pp_cluster_catalog(const pp_cluster *c);
/* Devices and links, as arrays indexed by id. */
const pp_device *pp_cluster_devices(const pp_cluster *c, size_t *n);
const pp_link *pp_cluster_links(const pp_cluster *c, size_t *n);
/* Outgoing links of a device (CSR): ids into the links array. */
const int32_t *pp_cluster_out(const pp_cluster *c, int32_t dev, size_t *n);
/* Device id of GPU `local` of server `node`, of an HCA; -1 when absent. */
int32_t pp_cluster_gpu(const pp_cluster *c, int32_t node, int32_t local);
int32_t pp_cluster_hca(const pp_cluster *c, int32_t node, int32_t local);
/* The HCA nearest a GPU (same PCIe switch, else same socket); -1 none. */
int32_t pp_cluster_gpu_hca(const pp_cluster *c, int32_t gpu_dev);
/* The rate, per direction, at which a GPU reaches host memory:
 * NVLink-C2C where the catalogue gives one (Grace), else its PCIe link,
 * or its PCIe switch's uplink to the CPU shared by the GPUs under that
 * switch, the slower (a DGX H100 switch holds two GPUs, which copy
 * together); 0 when it reaches none. */
double pp_cluster_host_Bps(const pp_cluster *c, int32_t gpu_dev);
/* Device id by name, -1 when absent (for traffic files). */
int32_t pp_cluster_find(const pp_cluster *c, const char *name);
const char *pp_dev_kind_name(pp_dev_kind k);
const char *pp_link_kind_name(pp_link_kind k);

/* ------------------------------------------------------------------------
 * Analysis (`podplan topo`).
 * ---------------------------------------------------------------------- */
typedef enum { PP_SEV_INFO, PP_SEV_WARNING, PP_SEV_ERROR } pp_severity;

typedef struct pp_problem {
    pp_severity severity;
    char where[128]; /* a device, link or YAML field */
    char message[512];
} pp_problem;

/* Checks the built cluster: disconnected GPUs, switches with more links
 * than ports, rails without a leaf, PCIe lane budgets, PCIe switches whose
 * uplink is narrower than what hangs off them, GPU-HCA pairs across
 * sockets.  *out is a malloc'ed array the caller frees. */
int pp_topo_check(const pp_cluster *c, pp_problem **out, size_t *n,
                  pp_error *e);

typedef struct pp_topo_stats {
    int32_t nodes, gpus, hcas;
    int32_t switches[PP_DEV__COUNT]; /* leaf, spine, core (others 0) */
    int32_t switches_total;
    int32_t cables[PP_LINK__COUNT]; /* physical (bidirectional) links */
    int32_t cables_total;           /* network cables: HOST + FABRIC */
    int32_t ports_used[PP_DEV__COUNT];
    double injection_Bps;     /* per GPU: its share of the HCAs */
    double bisection_Bps;     /* min max-flow over adversarial halves */
    char bisection_split[64]; /* which split gave the minimum */
    double oversubscription[PP_DEV__COUNT]; /* leaf, spine: down / up */
    bool non_blocking;
} pp_topo_stats;

int pp_topo_stats_compute(const pp_cluster *c, pp_topo_stats *out, pp_error *e);

/* Graphviz DOT of the fabric; hosts collapsed unless expand. */
int pp_topo_dot(const pp_cluster *c, bool expand, FILE *fp, pp_error *e);
/* The full device graph as GraphML (igraph's writer) or JSON. */
typedef enum { PP_EXPORT_GRAPHML, PP_EXPORT_JSON } pp_export_format;
int pp_topo_export(const pp_cluster *c, pp_export_format fmt, FILE *fp,
                   pp_error *e);

/* ------------------------------------------------------------------------
 * Routing (sim/topo/route.c): paths between devices of a cluster as link ids.
 * Inside a server over NVLink/NVSwitch (or PCIe and the socket link when
 * there is no NVLink); GPU -> PCIe -> HCA for GPUDirect RDMA; across
 * servers HCA -> leaf -> (spine -> (core -> spine ->)) leaf -> HCA with
 * ECMP over equal-cost uplinks chosen by a seedable hash of the flow.
 * Paths are cached.
 * ---------------------------------------------------------------------- */

int pp_router_new(const pp_cluster *c, uint64_t seed, pp_router **out,
                  pp_error *e);
void pp_router_free(pp_router *r);
/* The path from src to dst (device ids): link ids in *path (borrowed,
 * valid until the router is freed), its total latency, and its narrowest
 * link's capacity.  flow_key selects among equal-cost paths (same key,
 * same path).  For GPU endpoints on different servers the HCA nearest
 * each GPU is used.  PP_EINVAL when there is no path. */
int pp_route(pp_router *r, int32_t src, int32_t dst, uint64_t flow_key,
             const int32_t **path, size_t *n, double *lat_s,
             double *bottleneck_Bps, pp_error *e);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_TOPO_H */
