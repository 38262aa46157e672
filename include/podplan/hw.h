/*
 * podplan/hw.h: the hardware catalogue (GPU, link, switch and server types
 * from topologies/hardware.yaml) and GPU profiles with the roofline times
 * of single operations.  The bottom of sim/ (podplan_sim_hw): it depends
 * on models (for PP_NAME_MAX) and common alone, so that calibrate/ can read
 * and write profiles without linking the topology or the simulator.
 */
#ifndef PODPLAN_HW_H
#define PODPLAN_HW_H

#include "podplan/common.h"
#include "podplan/models.h" /* PP_NAME_MAX */
#include "podplan/forward.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The hardware catalogue (topologies/hardware.yaml, sim/hw/catalog.c):
 * plain read-only data.
 * ---------------------------------------------------------------------- */
typedef enum {
    PP_DTYPE_FP64,
    PP_DTYPE_FP64_TC,
    PP_DTYPE_FP32,
    PP_DTYPE_TF32,
    PP_DTYPE_BF16, /* also fp16 */
    PP_DTYPE_FP8,
    PP_DTYPE_INT8,
    PP_DTYPE_FP4, /* NVFP4 (Blackwell): E2M1, an E4M3 scale per 16 */
    PP_DTYPE__COUNT
} pp_dtype;

typedef struct pp_gpu_spec {
    char name[PP_NAME_MAX];             /* "a100-sxm4-80gb" */
    double peak_flops[PP_DTYPE__COUNT]; /* dense FLOP/s; 0 = unsupported */
    bool fp16_only;                     /* the 16-bit rate is fp16's: no bf16
                                        (P100, V100) */
    bool mxfp8; /* tensor cores scale FP8 per 32-element block (Blackwell) */
    /* FP8 GEMMs take any operand layout (sm_100), not only TN (Hopper):
     * Transformer Engine then keeps no transposed FP8 copy of a weight
     * scaled per tensor (catalogue fp8_any_layout). */
    bool fp8_any_layout;
    double hbm_bytes, hbm_Bps;
    int nvlink_gen;           /* 0 = none */
    double nvlink_Bps;        /* per GPU, per direction */
    int pcie_gen, pcie_lanes; /* host interface */
    /* NVLink-C2C to a Grace CPU (catalogue c2c), per direction; 0: the
     * host is reached over PCIe only.  Activation offloading's rate. */
    double c2c_Bps;
    int sms;                  /* streaming multiprocessors */
    double tdp_w;
    double price_usd; /* estimate; price_year says when */
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
    char name[PP_NAME_MAX]; /* "hdr", "pcie4-x16", "100gbe", "nvlink3" */
    pp_link_class cls;
    double bw_Bps;          /* per direction */
    double lat_s;           /* default per-hop latency */
    double cable_price_usd; /* network links: a cable/transceiver pair */
    double hca_price_usd;   /* network links: one adapter */
    double hca_power_w;
    int price_year;
} pp_link_spec;

typedef struct pp_switch_spec {
    char name[PP_NAME_MAX]; /* "qm8700" */
    int radix;              /* ports */
    char port[PP_NAME_MAX]; /* link spec name of its ports */
    double lat_s;           /* port-to-port latency */
    double price_usd, power_w;
    int price_year;
} pp_switch_spec;

typedef struct pp_server_spec {
    char name[PP_NAME_MAX];    /* "dgx-a100" */
    double price_usd, power_w; /* without GPUs and HCAs where marked */
    int price_year;
    bool includes_gpus; /* price and power include the GPUs */
    bool includes_hcas; /* ... and the network adapters */
    char gpu[PP_NAME_MAX]; /* the GPU type the price includes, or "": a
                              cluster that puts another GPU in it pays
                              that GPU's price instead */
} pp_server_spec;

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
typedef enum {
    PP_CAT_GPU,
    PP_CAT_LINK,
    PP_CAT_SWITCH,
    PP_CAT_SERVER
} pp_cat_kind;
const char *pp_catalog_suggest(const pp_catalog *c, pp_cat_kind kind,
                               const char *name);
/* Every likely meant name, quoted and joined ("\"a100-pcie-40gb\", ... or
 * \"a100-sxm4-80gb\""), per pp_suggest: case-insensitive, then by prefix,
 * then by spelling.  Returns how many matched; buf is "" when none. */
int pp_catalog_suggest_list(const pp_catalog *c, pp_cat_kind kind,
                            const char *name, char *buf, size_t len);
/* The entries of a kind, in file order, for listings: a pp_gpu_spec,
 * pp_link_spec, pp_switch_spec or pp_server_spec (borrowed), or NULL when
 * i is out of range. */
size_t pp_catalog_count(const pp_catalog *c, pp_cat_kind kind);
const void *pp_catalog_entry(const pp_catalog *c, pp_cat_kind kind, size_t i);

/* ------------------------------------------------------------------------
 * GPU profiles (sim/hw/profile.c): what turns an operation's FLOPs and
 * bytes into time, read by the training step and written by calibrate/.
 * ---------------------------------------------------------------------- */

/* ------------------------------------------------------------------------
 * Software stacks (topologies/stacks/<name>.yaml, sim/hw/stack.c): what a
 * training framework of a given era does, separate from the GPU.  Plain
 * data; topologies/stacks/README.md documents each field and every file
 * gives the source of each value.
 * ---------------------------------------------------------------------- */
#define PP_STACK_LAUNCH 4

/* Where a stack's recompute bits for modules start (pp_stack.recompute). */
#define PP_STACK_RECOMP_MOD 8

/* The stack's MoE dispatchers (moe.dispatcher), the order of
 * pp_stack.moe_overlap_sms's entries. */
enum {
    PP_MOE_ALLTOALL,
    PP_MOE_DEEPEP,
    PP_MOE_HYBRIDEP,
    PP_MOE_DISPATCHERS
};

typedef struct pp_stack {
    char name[PP_NAME_MAX];           /* "megatron-lm-2021" */
    char source[256];                 /* the file */
    char framework[PP_NAME_MAX];      /* informative: "Megatron-LM" */
    char launch[PP_STACK_LAUNCH][16]; /* plan --format names it runs */
    size_t n_launch;
    double efficiency;         /* training loop: fraction of roofline */
    double grad_accum_bytes;   /* per parameter per micro-batch, 0 fused */
    bool p2p_sync;             /* a stage waits for its pipeline sends */
    bool p2p_scatter;          /* TP ranks send 1/tp, receiver gathers */
    bool tp_overlap;           /* TP collectives under the adjacent GEMM
                                  (Transformer Engine userbuffers) */
    bool tp_async_bwd;         /* a column-parallel linear's backward
                                  collectives under its own GEMMs */
    bool dp_overlap;           /* grad reduce during the backward */
    bool param_gather_overlap; /* ZeRO-1/2 param all-gather during the
                                  next forward (step.c, by chunk) */
    double bucket_bytes;       /* DP bucket */
    double grad_reduce_bytes;  /* bytes per gradient element reduced */
    uint32_t recompute;        /* bit r: pp_recompute r offered; bit
                                  PP_STACK_RECOMP_MOD + i: recompute
                                  module bit i (PP_RECOMP_*) */
    pp_recompute recompute_default; /* what it does unless told */
    bool flash_attention;      /* uses FlashAttention */
    bool fp8;                  /* can train with FP8 GEMMs */
    bool fp4;                  /* ... and NVFP4 ones (fp4.supported) */
    double fp8_cast_bytes;     /* HBM bytes per FP8 GEMM input element */
    pp_fp8 fp8_recipe;         /* dtype=fp8's scaling unless fp8= says */
    int zero_max;              /* highest ZeRO/FSDP stage it implements */
    int zero3_prefetch;        /* layers all-gathered ahead (ZeRO-3) */
    bool zero3_overlap;        /* ZeRO-3 gathers run beside compute */
    double dp_sms; /* SMs a DP collective's NCCL kernel holds while it
                      runs (collectives.dp_sms; 32 by default: NCCL's
                      ring channels on 8-NIC servers) */
    double coll_efficiency;    /* collectives' busbw over the fabric model
                                 (recorded; 1 = as simulated) */
    bool moe_deepep; /* MoE dispatch deduplicated per server (DeepEP) */
    bool moe_hybridep; /* ... by HybridEP's kernels (moe_deepep too) */
    /* MoE tokens permuted by PyTorch ops, not Transformer Engine's fused
     * kernels (stack moe.permute_fusion: false) */
    bool moe_permute_unfused;
    /* Offers Megatron-core's overlap of the MoE all-to-alls (SPEC
     * a2a_overlap=on; moe.a2a_overlap): core 0.14 and later. */
    bool moe_a2a_overlap;
    /* SMs the all-to-all's kernels take while they overlap compute
     * (moe.overlap_sms: alltoall, deepep, hybridep; 0: none), which slows
     * the compute beside them (pp_profile_a2a_beside). */
    double moe_overlap_sms[PP_MOE_DISPATCHERS];
    /* A quick-GeGLU expert activation (model glu_act: quick_gelu) makes
     * its offset a GPU tensor on every call, a blocking host-to-device
     * copy: the host waits for the GPU there (moe.quick_geglu_sync). */
    bool moe_quick_geglu_sync;
    /* Host CPU time the training loop spends per kernel it launches
     * (Python, the framework's dispatch, the launch itself; stack
     * host.kernel_issue): a step cannot run faster than its host issues
     * the kernels.  0: not modelled. */
    double host_kernel_s;
    /* Host CPU time per eager framework operation that podplan counts one
     * for one (stack host.op_issue: a Python-level loop of elementwise
     * ops), where host_kernel_s carries a factor for the kernels it does
     * not count; default host_kernel_s. */
    double host_op_s;
    /* The dropless MoE dispatch does not hold the host (host.moe_sync:
     * false, a sync-free dispatcher); default: once per layer forward. */
    bool moe_sync_free;
    /* The output layer's cross-entropy in Megatron-core's fused form
     * (loss.fused: cross_entropy_loss_fusion), not the unfused steps. */
    bool loss_fused;
    /* Offers Megatron-core's precision-aware optimizer (optimizer.
     * precision_aware): --optimizer adam-bf16-moments. */
    bool precision_aware_opt;
} pp_stack;

/* A GPU profile (topologies/profiles/<gpu>.yaml, documented there): what
 * turns an operation's FLOPs and bytes into time.  Plain data. */
#define PP_PROFILE_TILES 8
#define PP_PROFILE_BESIDE 8
/* One point of a compute-beside-communication table: time factor at
 * `sms` SMs held. */
typedef struct pp_beside_pt {
    double sms, time;
} pp_beside_pt;

typedef struct pp_gemm_tile {
    int32_t m, n;      /* output tile of one thread block (CTA) */
    double efficiency; /* relative to the best tile, 0 < x <= 1 */
} pp_gemm_tile;

/* One fitted alpha-beta of a profile's `network:` section, as `podplan
 * calibrate fit` writes it (calibrate/README.md): t(S) = alpha + S/beta
 * for collective `op` with algorithm `algo` on `ranks` ranks (0: any) at
 * a scope, with an optional small-message line below `knee`.  beta is
 * per collective as nccl-tests' algbw sees it.  sim/coll uses it
 * (pp_coll_fit_find); calibrate validates it. */
#define PP_PROFILE_NET_FITS 64

typedef enum {
    PP_NET_SCOPE_ANY,   /* unknown: matches either */
    PP_NET_SCOPE_INTRA, /* the group inside one server */
    PP_NET_SCOPE_INTER  /* the group spans servers */
} pp_net_scope;

typedef struct pp_net_fit {
    char link[16]; /* nvlink|nvswitch|pcie|infiniband|roce|ethernet|unknown */
    char op[24];   /* a collective (vocab.h) or perftest's write_bw, ... */
    char algo[16]; /* ring|tree|...|auto (what NCCL chose) */
    pp_net_scope scope;
    int64_t ranks; /* 0 = any */
    double alpha_s, beta_Bps;
    double alpha_se, beta_se;                   /* 0 = not given */
    double knee_bytes, alpha_lo_s, beta_lo_Bps; /* knee 0 = none */
    int line;                                   /* in the profile */
} pp_net_fit;

typedef struct pp_gpu_profile {
    char name[PP_NAME_MAX]; /* the profile's name ("a100") */
    char source[256];       /* the file it came from, or "builtin" */
    char calibrated[160];   /* "<date>, <source>" from its provenance:
                                when fitted to measurements (podplan
                                calibrate), "" when hand-set */
    double peak_flops;      /* dense bf16/fp16 tensor FLOP/s */
    double hbm_Bps;         /* device memory bandwidth */
    int32_t sms;            /* streaming multiprocessors (waves) */
    double gemm_efficiency; /* a large GEMM's best rate / peak, the
                                asymptote of the curve below */
    double gemm_k_half;     /* k at which the main loop's efficiency
                                halves: k / (k + k_half) */
    pp_gemm_tile tiles[PP_PROFILE_TILES];
    size_t n_tiles;
    double mem_efficiency;       /* memory-bound kernels: achieved / HBM peak */
    double scatter_add_Bps;      /* rows added by an atomic scatter-add
                                (index_add_, scatter_add_ with repeated
                                targets, bf16): bytes of rows per second
                                (profile memory.scatter_add_bw) */
    double launch_s;             /* per kernel, added to every operation */
    /* Compute beside communication kernels that take SMs (profile
     * compute_beside_comm): the compute's time over its time alone when
     * `sms` SMs are taken, measured points in increasing sms, linear
     * between them and from (0, 1), the last held beyond; none: no
     * slowdown is modelled (pp_profile_beside_comm). */
    pp_beside_pt beside_comm[PP_PROFILE_BESIDE];
    size_t n_beside_comm;
    /* Compute issued as the frameworks issue it (no SM target) while a
     * NCCL collective's kernel holds `sms` SMs beside it (profile
     * compute_beside_nccl): the same kind of table, measured on a GPU of
     * beside_nccl_on SMs and read at the same share of this GPU's
     * (pp_profile_beside_nccl). */
    pp_beside_pt beside_nccl[PP_PROFILE_BESIDE];
    size_t n_beside_nccl;
    double beside_nccl_on;
    double grad_accum_bytes;     /* per parameter per micro-batch: adding a
                                weight gradient into the main_grad buffer
                                (0 when fused into the GEMM) */
    /* Tensor-core kernels (GEMMs, attention): the share of the rates
     * above the GPU holds under sustained full load, over H100's share,
     * which the stacks' training-loop efficiencies carry (profile
     * sustained; 0: 1).  The GEMM and attention figures are burst or
     * relative-to-H100 rates, so a GPU whose power cap takes more of its
     * clock in a training step than H100's does runs slower by this. */
    double sustained;
    double framework_efficiency; /* the fraction of the kernels' roofline
                                speed a real training loop sustains
                                (clocks under load, launch and sync gaps);
                                1 = none lost */
    /* FP8 GEMMs (dtype=fp8): the catalogue's dense FP8 rate (0: none),
     * the large-GEMM asymptote over it and its k_half (profile
     * gemm.fp8_efficiency, gemm.fp8_k_half): eff x k / (k + k_half), no
     * tile or wave factor (see sim/hw/profile.c) unless fp8_waves
     * (gemm.fp8_waves: the 16-bit GEMMs' tiles and waves apply to the
     * low-precision ones too, as on Blackwell). */
    double fp8_peak_flops;
    bool mxfp8; /* the GPU runs MXFP8 GEMMs (catalogue mxfp8) */
    bool fp8_any_layout; /* catalogue fp8_any_layout (pp_gpu_spec) */
    double fp8_gemm_efficiency;
    /* fp8=mxfp8's GEMMs: their asymptote (gemm.mxfp8_efficiency; 0: the
     * per-tensor one), same k_half. */
    double mxfp8_gemm_efficiency;
    double fp8_k_half;
    bool fp8_waves;
    /* NVFP4 GEMMs (dtype=fp4): the catalogue's dense FP4 rate (0: none)
     * and their asymptote (gemm.nvfp4_efficiency; 0: the MXFP8 one), with
     * fp8_k_half. */
    double fp4_peak_flops;
    double nvfp4_gemm_efficiency;
    /* FlashAttention kernels: FLOP rate over peak, forward and backward
     * (profile attention.flash_fwd/bwd_efficiency), reached by a kernel
     * of F FLOPs as efficiency x F / (F + flops_half) (attention.
     * flash_fwd/bwd_flops_half; 0: every kernel at the efficiency). */
    double flash_fwd_efficiency, flash_bwd_efficiency;
    double flash_fwd_flops_half, flash_bwd_flops_half;
    /* The same four for kernels of head dim 64 and of head dim 192
     * (attention.head_dim_64, .head_dim_192; an efficiency of 0: none).
     * With either, the figures above are head dim 128's; between 64 and
     * 128, and between 128 and 192, each of the four is interpolated;
     * beyond 64 or 192 the end's hold (and without an end, the figures
     * above). */
    double flash_d64_fwd_efficiency, flash_d64_bwd_efficiency;
    double flash_d64_fwd_flops_half, flash_d64_bwd_flops_half;
    double flash_d192_fwd_efficiency, flash_d192_bwd_efficiency;
    double flash_d192_fwd_flops_half, flash_d192_bwd_flops_half;
    /* FP8 attention (fp8_attn=on): its kernel's time over the 16-bit
     * one's, forward and backward (attention.fp8_fwd_time_ratio,
     * fp8_bwd_time_ratio; 0: no FP8 attention figure, refused). */
    double attn_fp8_fwd_ratio, attn_fp8_bwd_ratio;
    /* The software stack applied to this profile (pp_stack_apply; the
     * two framework fields above are the stack's unless the profile file
     * still has a framework: section, which then wins). */
    char stack[PP_NAME_MAX]; /* the stack's name, "" before apply */
    bool stack_default;      /* chosen by the GPU, not --stack */
    bool legacy_framework;   /* the file has framework: (deprecated) */
    bool flash_attention;    /* the stack uses FlashAttention */
    bool fp8;                /* the stack can train in FP8 */
    double fp8_cast_bytes;   /* per FP8 GEMM input element: cast and
                                      amax (stack), HBM bytes */
    int zero3_prefetch;      /* ZeRO-3: layers gathered ahead */
    bool zero3_overlap;      /* ZeRO-3 gathers beside compute */
    pp_stack sw;             /* the whole stack, as applied */
    /* The planner's closed-form estimator only (the simulator sees the
     * contention these stand for); fitted to the simulator at flow
     * fidelity, documented in topologies/profiles/a100.yaml. */
    double p2p_share_rail;       /* a pipeline send's share of its GPU's
                                    NIC bandwidth, rail-aligned */
    double p2p_share_cross_rail; /* the same, crossing rails (spines) */
    double overlap_p2p_penalty;  /* of the DP time hidden under the
                                    backward, the part that comes back as
                                    slower pipeline sends */
    /* A fitted profile's `network:` (none in the shipped ones). */
    pp_net_fit net[PP_PROFILE_NET_FITS];
    size_t n_net;
} pp_gpu_profile;

/* The builtin stack names, in NAMES.md order, NULL-terminated. */
extern const char *const pp_stack_names[];
/* The stack a GPU runs when no --stack is given: megatron-lm-2021 for
 * A100 and older (the shipped A100 results are Megatron-LM 2021's),
 * megatron-core-2024 for Hopper and newer.  gpu may be NULL. */
const char *pp_stack_default_name(const pp_gpu_spec *gpu);
/* Loads a stack: a YAML path or a name in topologies/stacks/.  Errors
 * are located (file:line:col: field: ...).  On failure *out is
 * untouched. */
int pp_stack_load(const char *spec, pp_stack *out, pp_error *e);
/* Makes the stack's software figures the profile's effective ones (a
 * profile whose file still has framework: keeps those two values). */
void pp_stack_apply(const pp_stack *s, pp_gpu_profile *g, bool is_default);
/* Resolves what a layout left to its stack (attn=auto, no recompute=)
 * to stack s's choices; pp_stack_resolve does it for a profile's applied
 * stack. */
void pp_stack_resolve_spec(const pp_stack *s, pp_parallel *p);
void pp_stack_resolve(const pp_gpu_profile *g, pp_parallel *p);

/* What keeps a resolved dtype=fp8 (or fp4) layout from training on this
 * GPU under this stack, as PP_FP8_NO_* bits (0: it runs, or it is 16-bit).
 * The callers word the refusal and choose which to name first: the CLI
 * exits 2, a what-if variant is infeasible. */
enum {
    PP_FP8_NO_STACK = 1, /* the stack does not train in FP8 (fp4: NVFP4) */
    PP_FP8_NO_GPU = 2,   /* the GPU has no FP8 (FP4) rate in the catalogue */
    PP_FP8_NO_MXFP8 = 4  /* fp8=mxfp8 on a GPU without MXFP8 tensor cores */
};
unsigned pp_stack_fp8_check(const pp_stack *s, const pp_gpu_profile *g,
                            const pp_parallel *p);
/* Whether stack s offers optimizer o (adam-bf16-moments: optimizer.
 * precision_aware); PP_EUSAGE, naming the stack's file, when not.  What
 * the layout needs for it is pp_optimizer_check's. */
int pp_stack_optimizer_check(const pp_stack *s, pp_optimizer o, pp_error *e);

/* Loads a profile.  `spec` is a YAML path or a name in
 * topologies/profiles/; NULL means the profile shipped for `gpu` (the
 * file named after the GPU, else after its family, "a100-sxm4-80gb" ->
 * "a100"), falling back to builtin defaults when none is shipped.  gpu
 * (may be NULL with a spec) fills what the file leaves out: peak, HBM
 * bandwidth, SMs.  Errors are located (file:line:col: gemm.tiles[2].m:
 * ...).  On failure *out is untouched. */
int pp_profile_load(const char *spec, const pp_gpu_spec *gpu,
                    pp_gpu_profile *out, pp_error *e);
/* pp_profile_load, then the named stack (NULL: the GPU's default) applied
 * and, when st is not NULL, the stack returned there too. */
int pp_profile_load_stack(const char *spec, const pp_gpu_spec *gpu,
                          const char *stack, pp_gpu_profile *out, pp_stack *st,
                          pp_error *e);
/* A GEMM's time with FP8 operands (fp8 true) or 16-bit ones. */
double pp_gemm_time_prec_s(const pp_gpu_profile *g, bool fp8, double batch,
                           double m, double n, double k);
/* An NVFP4 GEMM (dtype=fp4) at the FP4 rate (gemm.nvfp4_efficiency):
 * operands of half a byte and an E4M3 scale per 16 (0.5625 bytes per
 * element), output 2.  The 16-bit time on a GPU without FP4. */
double pp_gemm_time_nvfp4_s(const pp_gpu_profile *g, double batch, double m,
                            double n, double k);
/* The same with MXFP8's block-scaled operands (gemm.mxfp8_efficiency). */
double pp_gemm_time_mxfp8_s(const pp_gpu_profile *g, double batch, double m,
                            double n, double k);
/* A grouped GEMM's operands. */
typedef enum pp_gemm_ops {
    PP_GEMM_OPS_16,    /* bf16/fp16 */
    PP_GEMM_OPS_FP8,   /* FP8, per-tensor scales */
    PP_GEMM_OPS_MXFP8, /* FP8, MXFP8 block scales */
    PP_GEMM_OPS_NVFP4  /* FP4 (E2M1), NVFP4 block scales */
} pp_gemm_ops;
/* `groups` GEMMs of m x n x k issued as one grouped call, as Transformer
 * Engine's GroupedLinear issues an MoE layer's local experts (one cuBLAS
 * call per group over its compute streams): their tiles share the GPU's
 * waves as a batch of `groups` would, and each group pays its own
 * launch.  `exec gemm --streams` measures it (calibrate/examples/
 * {h100,h200}/grouped; `calibrate validate` reads the bf16 groups
 * within 9-10% mean). */
double pp_gemm_grouped_time_s(const pp_gpu_profile *g, pp_gemm_ops ops,
                              double groups, double m, double n, double k);

/* Roofline times of single operations (seconds), launch overhead
 * included.  A (batched) GEMM C[m x n] = A[m x k] B[k x n], `batch`
 * independent ones, 2-byte elements. */
double pp_gemm_efficiency(const pp_gpu_profile *g, double batch, double m,
                          double n, double k);
double pp_gemm_time_s(const pp_gpu_profile *g, double batch, double m, double n,
                      double k);
/* A FlashAttention kernel's FLOP rate over peak: the forward's (bwd
 * false) or the backward's, for a kernel of `flops` FLOPs (causal FLOPs,
 * as sim/train counts them) over heads of `head_dim`. */
double pp_flash_efficiency(const pp_gpu_profile *g, bool bwd, double flops,
                           double head_dim);
/* The HBM bytes such a GEMM moves: A, B and C once each. */
double pp_gemm_bytes(double batch, double m, double n, double k);
/* A memory-bound kernel moving `bytes` to and from HBM. */
double pp_memop_time_s(const pp_gpu_profile *g, double bytes);
/* An atomic scatter-add of `bytes` of rows into fewer targets (PyTorch's
 * index_add_ / scatter_add_: an unfused MoE unpermute, or the backward
 * of an unfused permute), at the profile's scatter_add_bw. */
double pp_scatter_add_time_s(const pp_gpu_profile *g, double bytes);
/* The time factor of compute running while communication kernels hold
 * `sms` of the GPU's SMs (profile compute_beside_comm; 1 without it or
 * at sms <= 0). */
double pp_profile_beside_comm(const pp_gpu_profile *g, double sms);
/* The time factor of compute beside a NCCL collective whose kernel holds
 * `sms` SMs (profile compute_beside_nccl, read at the share of the SMs it
 * was measured on; 1 without it or at sms <= 0). */
double pp_profile_beside_nccl(const pp_gpu_profile *g, double sms);
/* That factor for compute beside an overlapped MoE all-to-all
 * (a2a_overlap): the SMs the applied stack's moe.overlap_sms gives the
 * resolved dispatcher of layout p (NCCL's, DeepEP's or HybridEP's
 * kernels), priced by compute_beside_nccl, or compute_beside_comm where
 * the profile has no compute_beside_nccl. */
double pp_profile_a2a_beside(const pp_gpu_profile *g, const pp_parallel *p);
/* The profile's sustained share (1 when unset). */
static inline double pp_profile_sustained(const pp_gpu_profile *g) {
    return g->sustained > 0 ? g->sustained : 1.0;
}
/* A tensor-core kernel's FLOP rate in a training step: a peak (bf16, FP8
 * or FP4) times the kernel's efficiency, at the sustained share. */
static inline double pp_profile_tensor_rate(const pp_gpu_profile *g,
                                            double peak, double eff) {
    return peak * eff * pp_profile_sustained(g);
}
/* A generic model's compute rate: the best 16-bit GEMM rate (the
 * simulator and the planner's estimate both take it). */
static inline double pp_profile_gemm_rate(const pp_gpu_profile *g) {
    return pp_profile_tensor_rate(g, g->peak_flops, g->gemm_efficiency);
}
/* Whether the profile times FP8 attention (fp8_attn=on): both of its
 * attention.fp8_*_time_ratio figures. */
static inline bool pp_profile_fp8_attn(const pp_gpu_profile *g) {
    return g->attn_fp8_fwd_ratio > 0 && g->attn_fp8_bwd_ratio > 0;
}

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_HW_H */
