/*
 * podplan/sim.h: the hardware catalogue, clusters and their analysis.
 *
 * A cluster is loaded from YAML (a generator such as leaf-spine or
 * fat-tree, or an explicit list of switches and links), expanded into a
 * device graph (GPUs, NVSwitches, PCIe switches, CPU sockets, HCAs,
 * leaf/spine/core switches; one directed link per direction with its
 * bandwidth and latency), and exported as compact arrays that the
 * simulator walks in its hot loop.  igraph holds the same graph for the
 * analyses (connectivity, max-flow bisection, paths) and for GraphML
 * export; it stays private to sim/.  Depends on models and common.
 */
#ifndef PODPLAN_SIM_H
#define PODPLAN_SIM_H

#include "podplan/common.h"
#include "podplan/models.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The hardware catalogue (topologies/hardware.yaml): plain read-only data.
 * ---------------------------------------------------------------------- */
typedef enum {
    PP_DTYPE_FP64,
    PP_DTYPE_FP64_TC,
    PP_DTYPE_FP32,
    PP_DTYPE_TF32,
    PP_DTYPE_BF16, /* also fp16 */
    PP_DTYPE_FP8,
    PP_DTYPE_INT8,
    PP_DTYPE__COUNT
} pp_dtype;

typedef struct pp_gpu_spec {
    char name[PP_NAME_MAX];          /* "a100-sxm4-80gb" */
    double peak_flops[PP_DTYPE__COUNT]; /* dense FLOP/s; 0 = unsupported */
    bool fp16_only;                  /* the 16-bit rate is fp16's: no bf16
                                        (P100, V100) */
    double hbm_bytes, hbm_Bps;
    int nvlink_gen;                  /* 0 = none */
    double nvlink_Bps;               /* per GPU, per direction */
    int pcie_gen, pcie_lanes;        /* host interface */
    int sms;                         /* streaming multiprocessors */
    double tdp_w;
    double price_usd;                /* estimate; price_year says when */
    int price_year;
} pp_gpu_spec;

typedef enum {
    PP_LCLASS_PCIE,
    PP_LCLASS_NVLINK,
    PP_LCLASS_INFINIBAND,
    PP_LCLASS_ETHERNET,
    PP_LCLASS_CPU /* socket-to-socket (UPI, xGMI) */
} pp_link_class;

typedef struct pp_link_spec {
    char name[PP_NAME_MAX];   /* "hdr", "pcie4-x16", "100gbe", "nvlink3" */
    pp_link_class cls;
    double bw_Bps;            /* per direction */
    double lat_s;             /* default per-hop latency */
    double cable_price_usd;   /* network links: a cable/transceiver pair */
    double hca_price_usd;     /* network links: one adapter */
    double hca_power_w;
    int price_year;
} pp_link_spec;

typedef struct pp_switch_spec {
    char name[PP_NAME_MAX];   /* "qm8700" */
    int radix;                /* ports */
    char port[PP_NAME_MAX];   /* link spec name of its ports */
    double lat_s;             /* port-to-port latency */
    double price_usd, power_w;
    int price_year;
} pp_switch_spec;

typedef struct pp_server_spec {
    char name[PP_NAME_MAX];   /* "dgx-a100" */
    double price_usd, power_w;/* without GPUs and HCAs where marked */
    int price_year;
    bool includes_gpus;       /* price and power include the GPUs */
    bool includes_hcas;       /* ... and the network adapters */
} pp_server_spec;

typedef struct pp_catalog pp_catalog;

/* Loads a catalogue; path NULL means the shipped topologies/hardware.yaml.
 * Errors are located (file:line:col: gpus.a100.hbm: ...). */
int pp_catalog_load(const char *path, pp_catalog **out, pp_error *e);
void pp_catalog_free(pp_catalog *c);
/* Lookups by name; NULL when absent.  pp_catalog_suggest gives the
 * nearest name of that kind for "did you mean". */
const pp_gpu_spec *pp_catalog_gpu(const pp_catalog *c, const char *name);
const pp_link_spec *pp_catalog_link(const pp_catalog *c, const char *name);
const pp_switch_spec *pp_catalog_switch(const pp_catalog *c, const char *name);
const pp_server_spec *pp_catalog_server(const pp_catalog *c, const char *name);
typedef enum { PP_CAT_GPU, PP_CAT_LINK, PP_CAT_SWITCH, PP_CAT_SERVER } pp_cat_kind;
const char *pp_catalog_suggest(const pp_catalog *c, pp_cat_kind kind,
                               const char *name);

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
    PP_LINK_NVLINK,  /* GPU <-> NVSwitch, or GPU <-> GPU in a mesh */
    PP_LINK_PCIE,    /* GPU/HCA <-> PCIe switch <-> CPU */
    PP_LINK_SOCKET,  /* CPU <-> CPU */
    PP_LINK_HOST,    /* HCA <-> leaf (or ToR) */
    PP_LINK_FABRIC,  /* switch <-> switch */
    PP_LINK__COUNT
} pp_link_kind;

typedef struct pp_device {
    pp_dev_kind kind;
    int32_t node;    /* server index; -1 for fabric switches */
    int32_t local;   /* index within its server or its level */
    int32_t pod;     /* fat-tree pod; -1 when none */
    int32_t rail;    /* HCA: rail (= local index); leaf: rail it serves
                        under rail-optimised wiring; -1 otherwise */
    const char *name;/* "n3.gpu5", "n3.hca5", "n3.pcie1", "n3.cpu0",
                        "n3.nvs0", "leaf4", "spine1", "core0" */
} pp_device;

typedef struct pp_link {
    int32_t src, dst;   /* device ids */
    int32_t reverse;    /* the link of the opposite direction */
    pp_link_kind kind;
    double bw_Bps;      /* capacity of this direction */
    double lat_s;       /* latency of this hop */
    int32_t lanes;      /* PCIe: negotiated width (x16, x8); 0 otherwise */
} pp_link;

/* Summary of a cluster (plain data, read-only). */
typedef struct pp_cluster_info {
    char name[PP_NAME_MAX];
    int32_t nodes, gpus_per_node, hcas_per_node;
    int32_t gpus, hcas;                 /* totals */
    const pp_gpu_spec *gpu;             /* the GPU type */
    const pp_link_spec *nic;            /* the HCA type (NULL if none) */
    double nic_Bps;                     /* per HCA, per direction */
    double host_memory_bytes;           /* per node */
    int32_t switches[PP_DEV__COUNT];    /* count per kind */
    double stated_oversubscription;     /* from the YAML (1 = 1:1) */
    /* Catalogue entries the file named, for prices; NULL when it named
     * none (an explicit fabric may name no default switch). */
    const pp_server_spec *server;       /* node.server */
    const pp_switch_spec *fabric_switch;/* fabric.switch */
    const pp_link_spec *fabric_link;    /* fabric.link, else the NIC's */
} pp_cluster_info;

typedef struct pp_cluster pp_cluster;

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
    char where[128];   /* a device, link or YAML field */
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
    int32_t cables[PP_LINK__COUNT];  /* physical (bidirectional) links */
    int32_t cables_total;            /* network cables: HOST + FABRIC */
    int32_t ports_used[PP_DEV__COUNT];
    double injection_Bps;            /* per GPU: its share of the HCAs */
    double bisection_Bps;            /* min max-flow over adversarial halves */
    char bisection_split[64];        /* which split gave the minimum */
    double oversubscription[PP_DEV__COUNT]; /* leaf, spine: down / up */
    bool non_blocking;
} pp_topo_stats;

int pp_topo_stats_compute(const pp_cluster *c, pp_topo_stats *out,
                          pp_error *e);

/* Graphviz DOT of the fabric; hosts collapsed unless expand. */
int pp_topo_dot(const pp_cluster *c, bool expand, FILE *fp, pp_error *e);
/* The full device graph as GraphML (igraph's writer) or JSON. */
typedef enum { PP_EXPORT_GRAPHML, PP_EXPORT_JSON } pp_export_format;
int pp_topo_export(const pp_cluster *c, pp_export_format fmt, FILE *fp,
                   pp_error *e);


/* ------------------------------------------------------------------------
 * The event engine (sim/engine.c).  Simulated time is a double in
 * seconds: transfer times are ratios of bytes to rates, and integer
 * nanoseconds would round a 1 us hop by up to 0.1%, more than the 1e-9 at
 * which the flow and analytic fidelities must agree.  Events at equal
 * times run in the order they were scheduled (a sequence number breaks
 * ties), so a run is deterministic.
 * ---------------------------------------------------------------------- */
typedef struct pp_engine pp_engine;
typedef uint64_t pp_timer; /* 0 is never a valid timer */
typedef void (*pp_event_fn)(pp_engine *eng, void *ctx, uint64_t arg);

pp_engine *pp_engine_new(void);
void pp_engine_free(pp_engine *eng);            /* NULL is a no-op */
double pp_engine_now(const pp_engine *eng);
/* Schedules fn(eng, ctx, arg) at absolute time t (>= now) or after a
 * delay.  Returns a handle for pp_engine_cancel. */
pp_timer pp_engine_at(pp_engine *eng, double t, pp_event_fn fn, void *ctx,
                      uint64_t arg);
pp_timer pp_engine_after(pp_engine *eng, double delay, pp_event_fn fn,
                         void *ctx, uint64_t arg);
/* Cancels a pending event; false when it already ran or was cancelled. */
bool pp_engine_cancel(pp_engine *eng, pp_timer t);
/* Runs events until none is left or the next is later than `until`
 * (INFINITY for all).  Returns the number of events run. */
uint64_t pp_engine_run(pp_engine *eng, double until);
uint64_t pp_engine_events(const pp_engine *eng); /* run so far */
size_t pp_engine_pending(const pp_engine *eng);

/* ------------------------------------------------------------------------
 * The flow network (sim/flow.c): transfers as flows on paths of directed
 * links, sharing each link's capacity by max-min fairness (progressive
 * filling).  When a flow starts or ends only the flows coupled to it
 * through shared links (its connected component in the flow-link graph)
 * are re-solved; bytes left are kept lazily (bytes at the last update and
 * the rate since), completions sit in a heap whose top is the one engine
 * event the network keeps armed.  SimGrid's LMM solver and its lazy update
 * are the reference design.
 * ---------------------------------------------------------------------- */
typedef struct pp_flownet pp_flownet;
typedef int32_t pp_flow_id;
/* Called when a flow's last byte arrives (t = now). */
typedef void (*pp_flow_done_fn)(pp_flownet *net, pp_flow_id id, void *ctx,
                                uint64_t arg);

/* capacity_Bps[i] is link i's capacity; copied.  The engine is borrowed
 * and must outlive the network. */
pp_flownet *pp_flownet_new(pp_engine *eng, const double *capacity_Bps,
                           size_t n_links);
void pp_flownet_free(pp_flownet *net);
/* Starts a flow of `bytes` over `path` (link ids, copied) after `lat_s`
 * of latency; done(net, id, ctx, arg) runs on completion.  A flow of zero
 * bytes or an empty path completes after the latency alone.  Returns the
 * flow id (>= 0) or PP_EINVAL (a link id out of range, negative bytes). */
pp_flow_id pp_flow_start(pp_flownet *net, const int32_t *path, size_t n,
                         double bytes, double lat_s, pp_flow_done_fn done,
                         void *ctx, uint64_t arg);
/* The current rate of an active flow (bytes/s); 0 while it waits for its
 * latency, -1 once finished. */
double pp_flow_rate(const pp_flownet *net, pp_flow_id id);
/* Bytes carried by each link so far (for utilisation); n_links long. */
const double *pp_flownet_link_bytes(pp_flownet *net);

typedef struct pp_flownet_stats {
    uint64_t flows_started, flows_done;
    uint64_t updates;        /* re-solves (one per start/end batch) */
    uint64_t full_solves;    /* updates that fell back to every flow */
    uint64_t flows_touched;  /* sum over updates of flows re-solved */
    uint64_t active_sum;     /* sum over updates of flows active then */
    size_t max_active;
} pp_flownet_stats;
void pp_flownet_stats_get(const pp_flownet *net, pp_flownet_stats *out);

/* The reference solver: max-min fair rates by progressive filling for
 * flows given as paths in CSR form (flow f uses links
 * links[off[f]] .. links[off[f+1]-1]).  rates is n_flows long.  Used by
 * the tests against the incremental solver, and by analyses. */
int pp_maxmin_solve(size_t n_links, const double *capacity_Bps,
                    size_t n_flows, const int32_t *off, const int32_t *links,
                    double *rates, pp_error *e);

/* ------------------------------------------------------------------------
 * Routing (sim/route.c): paths between devices of a cluster as link ids.
 * Inside a server over NVLink/NVSwitch (or PCIe and the socket link when
 * there is no NVLink); GPU -> PCIe -> HCA for GPUDirect RDMA; across
 * servers HCA -> leaf -> (spine -> (core -> spine ->)) leaf -> HCA with
 * ECMP over equal-cost uplinks chosen by a seedable hash of the flow.
 * Paths are cached.
 * ---------------------------------------------------------------------- */
typedef struct pp_router pp_router;

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

/* ------------------------------------------------------------------------
 * A simulation (sim/sim.c): a cluster, an engine, a router and, at flow
 * fidelity, a flow network.  Transfers are routed and either share links
 * by max-min (flow) or take latency + bytes / bottleneck each, with no
 * contention (analytic).  Both agree exactly where nothing contends.
 * ---------------------------------------------------------------------- */

typedef struct pp_sim pp_sim;
typedef void (*pp_sim_done_fn)(pp_sim *s, void *ctx, uint64_t arg);

int pp_sim_new(const pp_cluster *c, pp_fidelity f, uint64_t seed,
               pp_sim **out, pp_error *e);
void pp_sim_free(pp_sim *s);
pp_engine *pp_sim_engine(pp_sim *s);
pp_flownet *pp_sim_net(pp_sim *s);      /* NULL at analytic fidelity */
const pp_cluster *pp_sim_cluster(const pp_sim *s);
double pp_sim_now(const pp_sim *s);
/* Starts a transfer of `bytes` from device src to dst now; done runs at
 * its completion.  A transfer to itself completes at once (next event). */
int pp_sim_send(pp_sim *s, int32_t src, int32_t dst, double bytes,
                pp_sim_done_fn done, void *ctx, uint64_t arg, pp_error *e);
/* Bytes carried per link so far (flow fidelity; analytic counts too). */
const double *pp_sim_link_bytes(pp_sim *s, size_t *n);
/* Writes a Chrome/Perfetto trace of everything simulated from now on:
 * one track per GPU and per link.  The sim keeps fp until pp_sim_free,
 * which writes the closing bracket. */
int pp_sim_trace(pp_sim *s, FILE *fp, pp_error *e);

/* ------------------------------------------------------------------------
 * Collectives (sim/collective.c), generating the transfers a real
 * implementation would.  busbw uses nccl-tests' factors: 2(n-1)/n for
 * AllReduce, (n-1)/n for AllGather, ReduceScatter and AlltoAll, 1 for
 * Broadcast and SendRecv.
 * ---------------------------------------------------------------------- */

typedef enum {
    PP_GRAN_AUTO,   /* step for small groups, stream above a threshold */
    PP_GRAN_STEP,   /* every ring step its own set of flows: exact */
    PP_GRAN_STREAM  /* NCCL's pipelined steady state */
} pp_granularity;

typedef struct pp_coll_spec {
    pp_coll_op op;
    pp_coll_algo algo;
    double bytes;          /* S: the buffer size per GPU (nccl-tests) */
    const int32_t *gpus;   /* device ids of the group, in rank order */
    size_t n_gpus;
    int32_t root;          /* rank of the root (broadcast, naive) */
    int32_t server;        /* PS: device id of the server's endpoint */
    int channels;          /* ring channels; 0 = one per NIC of a node */
    pp_granularity gran;
    double reduce_Bps;     /* summing rate; 0 = the GPU's HBM bandwidth/3 */
} pp_coll_spec;

typedef struct pp_coll_result {
    double time_s;
    double algbw_Bps;      /* S / time */
    double busbw_Bps;      /* algbw x the nccl-tests factor */
    uint64_t transfers;    /* point-to-point transfers generated */
    uint64_t events;       /* engine events run */
    int32_t busiest_link;  /* the link that carried the most bytes */
    double busiest_bytes;
    pp_granularity gran;   /* what ran: PP_GRAN_STEP or PP_GRAN_STREAM */
    int channels;          /* channels that ran (ring family; else 1) */
} pp_coll_result;

/* Starts a collective now; done runs when the last rank finishes. */
int pp_sim_collective_start(pp_sim *s, const pp_coll_spec *spec,
                            pp_sim_done_fn done, void *ctx, uint64_t arg,
                            pp_error *e);
/* Runs one collective to completion from now and reports it. */
int pp_sim_collective(pp_sim *s, const pp_coll_spec *spec,
                      pp_coll_result *out, pp_error *e);


/* ------------------------------------------------------------------------
 * Training iteration (sim/compute.c, sim/schedule.c, sim/step.c,
 * sim/step_build.c): one
 * iteration of a model under TP x PP x DP on a cluster, as a task graph on
 * the event engine.  Compute is a roofline per operation, timed with a GPU
 * profile; communication is real: TP collectives inside each TP group,
 * pipeline sends and DP gradient synchronisation, all on the simulation
 * (flows that share links contend at `flow` fidelity).
 * ---------------------------------------------------------------------- */

/* A GPU profile (topologies/profiles/<gpu>.yaml, documented there): what
 * turns an operation's FLOPs and bytes into time.  Plain data. */
#define PP_PROFILE_TILES 8

typedef struct pp_gemm_tile {
    int32_t m, n;        /* output tile of one thread block (CTA) */
    double efficiency;   /* relative to the best tile, 0 < x <= 1 */
} pp_gemm_tile;

typedef struct pp_gpu_profile {
    char name[PP_NAME_MAX];  /* the profile's name ("a100") */
    char source[256];        /* the file it came from, or "builtin" */
    double peak_flops;       /* dense bf16/fp16 tensor FLOP/s */
    double hbm_Bps;          /* device memory bandwidth */
    int32_t sms;             /* streaming multiprocessors (waves) */
    double gemm_efficiency;  /* a large GEMM's best rate / peak, the
                                asymptote of the curve below */
    double gemm_k_half;      /* k at which the main loop's efficiency
                                halves: k / (k + k_half) */
    pp_gemm_tile tiles[PP_PROFILE_TILES];
    size_t n_tiles;
    double mem_efficiency;   /* memory-bound kernels: achieved / HBM peak */
    double launch_s;         /* per kernel, added to every operation */
    double grad_accum_bytes; /* per parameter per micro-batch: adding a
                                weight gradient into the main_grad buffer
                                (0 when fused into the GEMM) */
    double framework_efficiency; /* the fraction of the kernels' roofline
                                speed a real training loop sustains
                                (clocks under load, launch and sync gaps);
                                1 = none lost */
} pp_gpu_profile;

/* Loads a profile.  `spec` is a YAML path or a name in
 * topologies/profiles/; NULL means the profile shipped for `gpu` (the
 * file named after the GPU, else after its family, "a100-sxm4-80gb" ->
 * "a100"), falling back to builtin defaults when none is shipped.  gpu
 * (may be NULL with a spec) fills what the file leaves out: peak, HBM
 * bandwidth, SMs.  Errors are located (file:line:col: gemm.tiles[2].m:
 * ...).  On failure *out is untouched. */
int pp_profile_load(const char *spec, const pp_gpu_spec *gpu,
                    pp_gpu_profile *out, pp_error *e);

/* Roofline times of single operations (seconds), launch overhead
 * included.  A (batched) GEMM C[m x n] = A[m x k] B[k x n], `batch`
 * independent ones, 2-byte elements. */
double pp_gemm_efficiency(const pp_gpu_profile *g, double batch, double m,
                          double n, double k);
double pp_gemm_time_s(const pp_gpu_profile *g, double batch, double m,
                      double n, double k);
/* A memory-bound kernel moving `bytes` to and from HBM. */
double pp_memop_time_s(const pp_gpu_profile *g, double bytes);

/* One transformer layer on one GPU for one micro-batch, after the TP
 * split (sequence parallelism, GQA, SwiGLU as the layout and model say):
 * the time and FLOPs of each pass, and the TP collectives each holds. */
typedef struct pp_layer_cost {
    double fwd_s, bwd_s, recompute_s;     /* compute only, no comm */
    double fwd_flops, bwd_flops, recompute_flops;
    double gemm_s;                        /* of fwd_s: GEMMs and bmms */
    int32_t fwd_colls, bwd_colls, recompute_colls;
    double coll_bytes;                    /* each collective's buffer */
    double params;                        /* parameters on this GPU */
} pp_layer_cost;

/* Fills *out for model m (a transformer; PP_EINVAL for a generic model)
 * under layout p with profile g.  recompute_* is what p->recompute adds
 * to the backward pass (the whole forward for full, the attention core
 * for selective).  On failure *out is untouched. */
int pp_layer_cost_get(const pp_gpu_profile *g, const pp_model *m,
                      const pp_parallel *p, pp_layer_cost *out, pp_error *e);



typedef struct pp_step_config {
    const pp_model *model;        /* borrowed */
    const pp_parallel *par;       /* borrowed */
    const pp_cluster *cluster;    /* borrowed */
    const pp_gpu_profile *profile;/* borrowed; NULL: the shipped one */
    pp_fidelity fidelity;         /* default flow */
    pp_schedule schedule;         /* default: interleaved when vp > 1,
                                     else 1F1B */
    bool schedule_set;            /* false: choose as above */
    char placement[3];            /* default 't','p','d' */
    bool dp_overlap;              /* DP buckets during the last backward
                                     (default false: Megatron-LM 2021
                                     reduces after the pipeline flush) */
    double bucket_bytes;          /* DP bucket size (default 40 MB with
                                     overlap; one bucket without) */
    double compute_time_s;        /* generic models: compute per
                                     iteration per GPU; 0 = derived from
                                     flops_per_sample */
    double grad_bytes;            /* bytes per gradient in the DP
                                     synchronisation: 2 (fp16/bf16,
                                     default) or 4 (fp32: Megatron-LM
                                     with bf16 reduces in fp32) */
    pp_optimizer optimizer;       /* default adam-mixed */
    bool check_memory;            /* default true */
    bool p2p_sync;                /* a stage waits for its own pipeline
                                     sends to arrive (default true:
                                     Megatron-LM 2021 synchronises after
                                     batch_isend_irecv) */
    bool p2p_scatter;             /* without sp, each TP rank sends 1/tp of
                                     a pipeline tensor and the receiver
                                     all-gathers it over its TP group
                                     (default true: Megatron-LM 2021's
                                     --scatter-gather-tensors-in-pipeline);
                                     false: every TP rank sends the whole
                                     tensor (Megatron-core's p2p) */
    pp_coll_algo dp_algo, tp_algo;/* default ring */
    pp_granularity gran;          /* of every collective (default
                                     stream: NCCL's pipelined steady
                                     state, a few flows per collective) */
    int dp_channels;              /* rings of a DP collective; 0 = the
                                     collective's default (one per NIC) */
    FILE *trace;                  /* Perfetto trace to write, or NULL */
    uint64_t seed;                /* ECMP hashing */
} pp_step_config;

void pp_step_config_init(pp_step_config *c);

/* Where a stage's time went; the six parts add up to the iteration time
 * (for one stage of one replica: all replicas are alike). */
typedef struct pp_breakdown {
    double compute_s;          /* running kernels */
    double tp_comm_s;          /* blocked in TP collectives */
    double pp_comm_s;          /* waiting for a pipeline transfer in flight */
    double dp_comm_exposed_s;  /* DP synchronisation not hidden */
    double bubble_s;           /* waiting for a stage that is still busy */
    double other_s;            /* optimizer step, embedding grad sync */
} pp_breakdown;

typedef struct pp_step_result {
    double iteration_time_s;
    double flops_iter;         /* F_iter with recomputation (hardware) */
    double model_flops_iter;   /* without recomputation (MFU) */
    double tflops_per_gpu;     /* F_iter / (n x iteration_time), in
                                  TFLOP/s as the Megatron-LM table */
    double mfu;                /* model FLOPs / (n x time x peak) */
    int64_t gpus;
    pp_memory memory;          /* per GPU, the most loaded stage */
    double gpu_memory_bytes;   /* HBM of the cluster's GPU */
    pp_schedule schedule;
    pp_breakdown total;        /* the mean over stages */
    pp_breakdown *stages;      /* pp of them; owned (pp_step_result_fini) */
    size_t n_stages;
    /* Work done by the simulator. */
    uint64_t events, transfers, collectives;
    pp_flownet_stats net;      /* zero at analytic fidelity */
} pp_step_result;

/* Simulates one iteration.  Checks the layout against the model and the
 * cluster (n = tp pp dp GPUs must exist; PP_EINPUT otherwise) and, with
 * check_memory, the memory per GPU against the GPU's HBM: a layout that
 * does not fit fails with PP_EINFEASIBLE and a message that gives the
 * memory needed, the HBM and the shortfall.  On success *out holds the
 * result; free it with pp_step_result_fini.  On failure *out is
 * untouched. */
int pp_step_simulate(const pp_step_config *cfg, pp_step_result *out,
                     pp_error *e);
void pp_step_result_fini(pp_step_result *r);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_SIM_H */
