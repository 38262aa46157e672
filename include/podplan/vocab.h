/*
 * podplan/vocab.h: the named choices every layer shares, one registry each.
 *
 * Collective operations and algorithms, network fidelity, pipeline
 * schedules, activation recomputation and optimizers are each one X-macro
 * list of {ENUM, "name", "help"}: the enum, the names the CLI accepts, the
 * text of its --help and its "did you mean" all come from that list, so a
 * new choice is one line.  Rank placement and the nccl-tests bus-bandwidth
 * factors live here too: exec/ measures the collectives sim/ simulates and
 * must name and report them identically without depending on sim.
 *
 * Part of the models layer (podplan_models); depends on common only.
 */
#ifndef PODPLAN_VOCAB_H
#define PODPLAN_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "podplan/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The lists.  X(ENUM_SUFFIX, "name", "one-line help")
 * ---------------------------------------------------------------------- */
#define PP_COLL_OP_MAP(X)                                                      \
    X(ALLREDUCE, "allreduce",                                                  \
      "every rank ends with the reduction of all buffers")                     \
    X(ALLGATHER, "allgather", "every rank ends with every rank's buffer")      \
    X(REDUCESCATTER, "reducescatter",                                          \
      "every rank ends with its slice of the reduction")                       \
    X(BROADCAST, "broadcast", "the root's buffer is copied to every rank")     \
    X(ALLTOALL, "alltoall", "rank i sends its j-th slice to rank j")           \
    X(SENDRECV, "sendrecv",                                                    \
      "each rank sends to the next and receives from the previous")

#define PP_COLL_ALGO_MAP(X)                                                    \
    X(RING, "ring", "rings (reduce-scatter then all-gather), one per channel") \
    X(TREE, "tree", "double binary tree")                                      \
    X(HIER, "hier",                                                            \
      "intra-node reduce-scatter, inter-node ring per rail, intra-node "       \
      "all-gather")                                                            \
    X(NAIVE, "naive", "gather to a root, reduce, broadcast")                   \
    X(PS, "ps", "parameter server: push to and pull from a server")            \
    X(SHARP, "sharp", "in-network reduction at the switches (SHARP)")          \
    X(RD, "rd",                                                                \
      "recursive doubling (Rabenseifner for large buffers): latency-optimal")  \
    X(NCCL, "nccl",                                                            \
      "NCCL's choice of ring/tree/NVLS and protocol, its tuning model")

#define PP_FIDELITY_MAP(X)                                                     \
    X(ANALYTIC, "analytic",                                                    \
      "closed forms per transfer, no contention (microseconds)")               \
    X(FLOW, "flow", "every transfer a flow; links shared max-min fairly")

#define PP_SCHED_MAP(X)                                                        \
    X(GPIPE, "gpipe", "all forwards, then all backwards (GPipe)")              \
    X(1F1B, "1f1b", "one forward, one backward (PipeDream-Flush)")             \
    X(INTERLEAVED, "interleaved", "1F1B over vp model chunks per GPU")

#define PP_RECOMPUTE_MAP(X)                                                    \
    X(NONE, "none", "store every activation")                                  \
    X(SELECTIVE, "selective", "recompute the attention core only")             \
    X(FULL, "full", "store layer inputs, recompute each layer's forward")

#define PP_OPT_MAP(X)                                                          \
    X(ADAM_MIXED, "adam-mixed",                                                \
      "bf16/fp16 weights 2 + grads 2, fp32 master 4 + m 4 + v 4 B/param")      \
    X(ADAM_FP32, "adam-fp32", "fp32 weights 4 + grads 4 + m 4 + v 4 B/param")  \
    X(ADAM_BF16_MOMENTS, "adam-bf16-moments",                                  \
      "Megatron-core's precision-aware Adam: bf16 weights 2 + grads 2, fp32 "  \
      "master as a 16-bit remainder 2 + bf16 m 2 + v 2 B/param")

/* The training number format of a layout's GEMMs (SPEC dtype=): the
 * 16-bit formats of mixed precision, FP8 GEMMs with 16-bit master copies
 * (NVIDIA Transformer Engine, Micikevicius et al. 2022), or NVFP4 GEMMs
 * (Transformer Engine's NVFP4BlockScaling recipe; NVIDIA, "Pretraining
 * Large Language Models with NVFP4", 2025). */
#define PP_PREC_MAP(X)                                                         \
    X(BF16, "bf16", "bf16 mixed precision (the default)")                      \
    X(FP16, "fp16", "fp16 mixed precision with loss scaling")                  \
    X(FP8, "fp8", "FP8 GEMMs (Transformer Engine), bf16 elsewhere")            \
    X(FP4, "fp4",                                                              \
      "NVFP4 GEMMs (Transformer Engine's NVFP4 recipe, Blackwell), bf16 "      \
      "elsewhere")

/* The attention kernels (SPEC attn=): auto is the stack's choice. */
#define PP_ATTN_MAP(X)                                                         \
    X(AUTO, "auto", "what the software stack uses (--stack)")                  \
    X(FLASH, "flash", "FlashAttention: fused, no s^2 scores in HBM")           \
    X(STANDARD, "standard", "batched GEMMs + softmax, s^2 scores stored")

/* The MoE token dispatcher (SPEC dispatcher=): auto is the stack's. */
#define PP_DISPATCH_MAP(X)                                                     \
    X(AUTO, "auto", "what the software stack uses (--stack)")                  \
    X(ALLTOALL, "alltoall",                                                    \
      "all-to-all of one copy per (token, expert): Megatron-core's default")   \
    X(DEEPEP, "deepep",                                                        \
      "one copy per (token, node) between servers, fanned out over NVLink")    \
    X(HYBRIDEP, "hybridep",                                                    \
      "NVIDIA's HybridEP (flex backend): DeepEP's routing, its own kernels")

/* The MoE token permutation (SPEC permute=): auto is the stack's. */
#define PP_PERMUTE_MAP(X)                                                      \
    X(AUTO, "auto", "what the software stack uses (--stack)")                  \
    X(FUSED, "fused",                                                          \
      "Transformer Engine's fused permute kernels (--moe-permute-fusion)")     \
    X(UNFUSED, "unfused",                                                      \
      "PyTorch index_select and atomic scatter-adds (Megatron's default)")

/* How context parallelism exchanges the sequence's K/V (SPEC cp_comm=,
 * Megatron-core's --cp-comm-type names and Transformer Engine's three
 * context-parallel attention functions; a2a+p2p is the ring's with
 * Ulysses' all-to-all inside it). */
#define PP_CPCOMM_MAP(X)                                                       \
    X(P2P, "p2p",                                                              \
      "K/V passed round a ring, each step beside attention (the default)")     \
    X(ALL_GATHER, "all_gather",                                                \
      "K/V all-gathered before attention, exposed (Llama 3's)")                \
    X(A2A, "a2a",                                                              \
      "all-to-all of Q/K/V to split heads, not sequence (DeepSpeed-Ulysses)")  \
    X(A2A_P2P, "a2a+p2p",                                                      \
      "all-to-all over cp_a2a ranks, then the ring over the rest "             \
      "(hierarchical)")

/* How dtype=fp8 scales its tensors (SPEC fp8=, Megatron-core's
 * --fp8-recipe names): auto is the stack's (fp8.recipe). */
#define PP_FP8_MAP(X)                                                          \
    X(AUTO, "auto", "what the software stack uses (--stack)")                  \
    X(DELAYED, "delayed",                                                      \
      "per-tensor scales from past steps' amax (Transformer Engine's first)")  \
    X(TENSORWISE, "tensorwise",                                                \
      "per-tensor scales from the tensor's own amax (NVIDIA's FP8-CS)")        \
    X(MXFP8, "mxfp8",                                                          \
      "a scale per 32 elements, in the tensor cores (Blackwell; FP8-MX)")      \
    X(BLOCKWISE, "blockwise",                                                  \
      "1x128 activation and 128x128 weight blocks (DeepSeek-V3's)")

#define PP__ENUM_ITEM(prefix, e) prefix##e,
#define PP__COLL_E(e, n, h) PP__ENUM_ITEM(PP_COLL_, e)
#define PP__ALGO_E(e, n, h) PP__ENUM_ITEM(PP_ALGO_, e)
#define PP__FID_E(e, n, h) PP__ENUM_ITEM(PP_FIDELITY_, e)
#define PP__SCHED_E(e, n, h) PP__ENUM_ITEM(PP_SCHED_, e)
#define PP__RECOMP_E(e, n, h) PP__ENUM_ITEM(PP_RECOMPUTE_, e)
#define PP__OPT_E(e, n, h) PP__ENUM_ITEM(PP_OPT_, e)
#define PP__PREC_E(e, n, h) PP__ENUM_ITEM(PP_PREC_, e)
#define PP__ATTN_E(e, n, h) PP__ENUM_ITEM(PP_ATTN_, e)
#define PP__DISPATCH_E(e, n, h) PP__ENUM_ITEM(PP_DISPATCH_, e)
#define PP__PERMUTE_E(e, n, h) PP__ENUM_ITEM(PP_PERMUTE_, e)
#define PP__FP8_E(e, n, h) PP__ENUM_ITEM(PP_FP8_, e)
#define PP__CPCOMM_E(e, n, h) PP__ENUM_ITEM(PP_CPCOMM_, e)

typedef enum { PP_COLL_OP_MAP(PP__COLL_E) PP_COLL__COUNT } pp_coll_op;
typedef enum { PP_COLL_ALGO_MAP(PP__ALGO_E) PP_ALGO__COUNT } pp_coll_algo;
typedef enum { PP_FIDELITY_MAP(PP__FID_E) PP_FIDELITY__COUNT } pp_fidelity;
typedef enum { PP_SCHED_MAP(PP__SCHED_E) PP_SCHED__COUNT } pp_schedule;
typedef enum {
    PP_RECOMPUTE_MAP(PP__RECOMP_E) PP_RECOMPUTE__COUNT
} pp_recompute;
typedef enum { PP_OPT_MAP(PP__OPT_E) PP_OPT__COUNT } pp_optimizer;
typedef enum { PP_PREC_MAP(PP__PREC_E) PP_PREC__COUNT } pp_prec;
typedef enum { PP_ATTN_MAP(PP__ATTN_E) PP_ATTN__COUNT } pp_attn;
typedef enum {
    PP_DISPATCH_MAP(PP__DISPATCH_E) PP_DISPATCH__COUNT
} pp_dispatch;
typedef enum { PP_PERMUTE_MAP(PP__PERMUTE_E) PP_PERMUTE__COUNT } pp_permute;
typedef enum { PP_FP8_MAP(PP__FP8_E) PP_FP8__COUNT } pp_fp8;
typedef enum { PP_CPCOMM_MAP(PP__CPCOMM_E) PP_CPCOMM__COUNT } pp_cp_comm;

/* ------------------------------------------------------------------------
 * Registries: read-only views of the lists above.
 * ---------------------------------------------------------------------- */
typedef struct pp_choice {
    const char *name; /* as typed on the command line and in YAML */
    const char *help; /* one line, for --help and `podplan list` */
} pp_choice;

typedef struct pp_registry {
    const char *what;       /* "collective op", for messages */
    const pp_choice *items; /* n of them, in enum order */
    int n;
    const char *const *names; /* the names, NULL-terminated */
} pp_registry;

extern const pp_registry pp_reg_coll_op;
extern const pp_registry pp_reg_coll_algo;
extern const pp_registry pp_reg_fidelity;
extern const pp_registry pp_reg_schedule;
extern const pp_registry pp_reg_recompute;
extern const pp_registry pp_reg_optimizer;
extern const pp_registry pp_reg_prec;
extern const pp_registry pp_reg_attn;
extern const pp_registry pp_reg_dispatch;
extern const pp_registry pp_reg_permute;
extern const pp_registry pp_reg_fp8;
extern const pp_registry pp_reg_cp_comm;

/* The name of value v, or "?" when out of range. */
const char *pp_registry_name(const pp_registry *r, int v);
/* The value named `name` exactly, or -1. */
int pp_registry_find(const pp_registry *r, const char *name);
/* Parses `name` into *out.  On failure returns PP_EUSAGE with
 * "<field>: expected one of a|b|c, got "x" (did you mean "y"?)" (field
 * defaults to r->what) and leaves *out untouched. */
int pp_registry_parse(const pp_registry *r, const char *field, const char *name,
                      int *out, pp_error *e);
/* Writes "a|b|c" into buf (cut to len - 1); returns buf. */
char *pp_registry_choices(const pp_registry *r, char *buf, size_t len);

/* Short names kept for the callers that predate the registries. */
const char *pp_coll_op_name(pp_coll_op op);
const char *pp_coll_algo_name(pp_coll_algo a);
const char *pp_fidelity_name(pp_fidelity f);
const char *pp_schedule_name(pp_schedule s);
const char *pp_recompute_name(pp_recompute r);
const char *pp_optimizer_name(pp_optimizer o);

/* ------------------------------------------------------------------------
 * nccl-tests' reporting (doc/PERFORMANCE.md in github.com/NVIDIA/nccl-tests):
 * S is the buffer size it prints (AllGather: the gathered output;
 * ReduceScatter: the input), algbw = S / t, busbw = algbw x a factor of
 * the operation: 2(n-1)/n for AllReduce, (n-1)/n for AllGather,
 * ReduceScatter and AlltoAll, 1 for Broadcast and SendRecv.  The factor
 * belongs to the operation, not the algorithm.  0 when n is 0.
 * ---------------------------------------------------------------------- */
double pp_coll_busbw_factor(pp_coll_op op, size_t n);

/* ------------------------------------------------------------------------
 * Rank placement: the order in which TP, PP and DP are laid over the
 * cluster's GPUs (numbered node by node), innermost first.  Megatron-LM's
 * layout per the brief is "tp,pp,dp": TP inside a node, then PP, then DP.
 * ---------------------------------------------------------------------- */
/* Parses "tp,pp,dp" (any permutation; blanks after commas allowed) into
 * order[0..2] = 't', 'p', 'd'.  PP_EUSAGE on anything else; order is
 * untouched on failure. */
int pp_placement_parse(const char *text, char order[3], pp_error *e);
/* The GPU (cluster rank, node-major) of TP rank t, stage p, replica d
 * under degrees tp, pp, dp. */
int64_t pp_placement_rank3(int64_t tp, int64_t pp, int64_t dp,
                           const char order[3], int64_t t, int64_t p,
                           int64_t d);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_VOCAB_H */
