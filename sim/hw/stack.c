/*
 * sim/hw/stack.c: software-stack profiles (topologies/stacks/NAME.yaml).
 *
 * A GPU profile says what the hardware does with a kernel's FLOPs and
 * bytes; a stack says what the training framework of a given era runs:
 * whether it fuses the gradient accumulation into the wgrad GEMM, how a
 * pipeline stage sends, whether the DP reduction overlaps the backward
 * and in what buckets, FlashAttention, FP8, how far ZeRO-3 prefetches,
 * and how much of the kernels' roofline its training loop sustains.  The
 * simulator and the planner read the applied figures from the profile
 * struct (pp_stack_apply), so the layers below did not change shape.
 * Lives in sim/hw so that calibrate/, which links podplan_sim_hw alone,
 * loads profiles with their stacks.
 */
#include <stdio.h>
#include <string.h>

#include "podplan/hw.h"

const char *const pp_stack_names[] = {"megatron-lm-2021",
                                      "megatron-core-2024",
                                      "nemo-2024",
                                      "nemo-2025",
                                      "nemo-mlperf-2024",
                                      "deepspeed-zero-2021",
                                      "deepspeed-2024",
                                      "pytorch-fsdp2",
                                      NULL};

/* Hopper and newer families train with the 2024 stacks; what came
 * before with Megatron-LM 2021's (the stack the shipped A100 figures and
 * the Megatron-LM 2021 validation table were calibrated with). */
const char *pp_stack_default_name(const pp_gpu_spec *gpu) {
    static const char *const newer[] = {"h100",  "h200",  "h800", "h20",
                                        "gh200", "b100",  "b200", "gb200",
                                        "b300",  "gb300", NULL};
    if (gpu)
        for (int i = 0; newer[i]; i++)
            if (strncmp(gpu->name, newer[i], strlen(newer[i])) == 0)
                return "megatron-core-2024";
    return "megatron-lm-2021";
}

/* Every field has a value in every shipped file; these are the values a
 * file may leave out: Megatron-LM 2021's (the simulator's historical
 * defaults, pp_step_config_init). */
static void stack_defaults(pp_stack *s) {
    memset(s, 0, sizeof *s);
    s->efficiency = 1.0;
    s->grad_accum_bytes = 0;
    s->p2p_sync = true;
    s->p2p_scatter = true;
    s->dp_overlap = false;
    s->bucket_bytes = 40e6;
    s->grad_reduce_bytes = 2.0;
    s->recompute = 7u;
    s->recompute_default = PP_RECOMPUTE_FULL;
    s->fp8_cast_bytes = 3.0;
    s->fp8_recipe = PP_FP8_DELAYED;
    s->zero_max = 1;
    s->zero3_prefetch = 0;
    s->coll_efficiency = 1.0;
    s->dp_sms = 32;
}

static int read_bool(pp_node *map, const char *path, const char *key, bool *out,
                     pp_error *e) {
    int rc = pp_map_bool(map, path, key, PP_OPTIONAL, out, e);
    return rc < 0 ? rc : 0;
}

static int sec_of(pp_node *root, const char *key, pp_node **out, pp_error *e) {
    int rc = pp_map_node(root, "", key, PP_OPTIONAL, PP_NODE_MAP, out, e);
    if (rc < 0) return rc;
    if (rc > 0) *out = NULL;
    return 0;
}

static int read_dtype_bytes(pp_node *sec, const char *path, const char *key,
                            double *out, pp_error *e) {
    static const char *const names[] = {"bf16", "fp16", "fp32", NULL};
    int v;
    int rc = pp_map_enum(sec, path, key, PP_OPTIONAL, names, &v, e);
    if (rc != 0) return rc < 0 ? rc : 0;
    *out = v == 2 ? 4.0 : 2.0;
    return 0;
}

static int read_launch(pp_node *root, pp_stack *s, pp_error *e) {
    pp_node *seq;
    int rc = pp_map_node(root, "", "launch", PP_OPTIONAL, PP_NODE_SEQ, &seq, e);
    if (rc != 0) return rc < 0 ? rc : 0;
    if (seq->n > PP_STACK_LAUNCH)
        return pp_error_at(e, PP_EINPUT, seq, "launch",
                           "expected at most %d launch formats, got %zu",
                           PP_STACK_LAUNCH, seq->n);
    for (size_t i = 0; i < seq->n; i++) {
        pp_node *it = seq->items[i];
        if (it->kind != PP_NODE_SCALAR ||
            (strcmp(it->scalar, "megatron") && strcmp(it->scalar, "nemo") &&
             strcmp(it->scalar, "nemo2") && strcmp(it->scalar, "deepspeed") &&
             strcmp(it->scalar, "fsdp")))
            return pp_error_at(e, PP_EINPUT, it, "launch",
                               "expected megatron, nemo, nemo2, deepspeed or "
                               "fsdp");
        snprintf(s->launch[i], sizeof s->launch[i], "%s", it->scalar);
    }
    s->n_launch = seq->n;
    return 0;
}

static int read_recompute(pp_node *root, pp_stack *s, pp_error *e) {
    pp_node *seq;
    int rc =
        pp_map_node(root, "", "recompute", PP_OPTIONAL, PP_NODE_SEQ, &seq, e);
    if (rc != 0) return rc < 0 ? rc : 0;
    uint32_t bits = 0;
    for (size_t i = 0; i < seq->n; i++) {
        pp_node *it = seq->items[i];
        int v = it->kind == PP_NODE_SCALAR
                    ? pp_registry_find(&pp_reg_recompute, it->scalar)
                    : -1;
        /* Or a Megatron-core recompute module beyond core_attn (which
         * is selective). */
        pp_recompute r;
        uint8_t mods;
        if (v < 0 && it->kind == PP_NODE_SCALAR &&
            strcmp(it->scalar, "core_attn") != 0 && !strchr(it->scalar, '+') &&
            pp_recompute_parse(it->scalar, &r, &mods, NULL) == 0 && mods) {
            bits |= (uint32_t)mods << PP_STACK_RECOMP_MOD;
            continue;
        }
        if (v < 0)
            return pp_error_at(e, PP_EINPUT, it, "recompute",
                               "expected full, selective, none or a "
                               "module (layernorm, moe_act, mlp, moe, "
                               "shared_experts, mla_up_proj)");
        bits |= 1u << v;
    }
    if (!(bits & ((1u << PP_STACK_RECOMP_MOD) - 1)))
        return pp_error_at(e, PP_EINPUT, seq, "recompute",
                           "expected at least one of full, selective, none");
    s->recompute = bits;
    return 0;
}

/* What the stack does when the launch names no recomputation: Megatron-
 * LM 2021's scripts passed --checkpoint-activations (full), Megatron-core
 * leaves recompute_granularity None.  Must be one the stack offers. */
static int read_recompute_default(pp_node *root, pp_stack *s, pp_error *e) {
    const char *const names[] = {
        pp_recompute_name(PP_RECOMPUTE_NONE),
        pp_recompute_name(PP_RECOMPUTE_SELECTIVE),
        pp_recompute_name(PP_RECOMPUTE_FULL), NULL};
    int v;
    int rc = pp_map_enum(root, "", "recompute_default", PP_OPTIONAL, names,
                         &v, e);
    if (rc != 0) return rc < 0 ? rc : 0;
    pp_recompute r = (pp_recompute)(PP_RECOMPUTE_NONE + v);
    if (!(s->recompute & (1u << r)))
        return pp_error_at(e, PP_EINPUT, pp_map_get(root, "recompute_default"),
                           "recompute_default",
                           "expected one of the modes listed in recompute");
    s->recompute_default = r;
    return 0;
}

/* moe.dispatcher's names, in PP_MOE_* order. */
static const char *const moe_dispatchers[] = {"alltoall", "deepep", "hybridep",
                                              NULL};

/* moe.overlap_sms: {alltoall: N, deepep: N, hybridep: N}, each optional. */
static int read_overlap_sms(pp_node *moe, pp_stack *s, pp_error *e) {
    static const char *path = "moe.overlap_sms";
    pp_node *m;
    int rc =
        pp_map_node(moe, "moe", "overlap_sms", PP_OPTIONAL, PP_NODE_MAP, &m, e);
    if (rc != 0) return rc < 0 ? rc : 0;
    for (int d = 0; d < PP_MOE_DISPATCHERS; d++)
        if ((rc = pp_map_number(m, path, moe_dispatchers[d], PP_OPTIONAL, 0,
                                100000, &s->moe_overlap_sms[d], e)) < 0)
            return rc;
    return pp_map_done(m, path, e);
}

static int stack_read(pp_node *root, pp_stack *s, pp_error *e) {
    pp_node *sec;
    const char *str;
    int64_t iv;
    int rc;

    if ((rc = pp_node_expect(root, "", PP_NODE_MAP, e)) < 0) return rc;
    if ((rc = pp_map_string(root, "", "name", PP_OPTIONAL, &str, e)) < 0)
        return rc;
    if (rc == 0) snprintf(s->name, sizeof s->name, "%s", str);
    if ((rc = pp_map_string(root, "", "framework", PP_OPTIONAL, &str, e)) < 0)
        return rc;
    if (rc == 0) snprintf(s->framework, sizeof s->framework, "%s", str);
    /* informative, any text */
    if ((rc = pp_map_string(root, "", "version", PP_OPTIONAL, &str, e)) < 0)
        return rc;
    if ((rc = read_launch(root, s, e)) < 0) return rc;

    if ((rc = sec_of(root, "training_loop", &sec, e)) < 0) return rc;
    if (sec &&
        ((rc = pp_map_number(sec, "training_loop", "efficiency", PP_OPTIONAL,
                             1e-3, 1, &s->efficiency, e)) < 0 ||
         (rc = pp_map_done(sec, "training_loop", e)) < 0))
        return rc;

    if ((rc = sec_of(root, "grad_accum", &sec, e)) < 0) return rc;
    if (sec) {
        bool fused = false;
        if ((rc = read_bool(sec, "grad_accum", "fused", &fused, e)) < 0 ||
            (rc = pp_map_number(sec, "grad_accum", "bytes", PP_OPTIONAL, 0, 64,
                                &s->grad_accum_bytes, e)) < 0 ||
            (rc = pp_map_done(sec, "grad_accum", e)) < 0)
            return rc;
        if (fused) s->grad_accum_bytes = 0;
    }

    if ((rc = sec_of(root, "pipeline", &sec, e)) < 0) return rc;
    if (sec &&
        ((rc = read_bool(sec, "pipeline", "sync", &s->p2p_sync, e)) < 0 ||
         (rc = read_bool(sec, "pipeline", "scatter_gather", &s->p2p_scatter,
                         e)) < 0 ||
         (rc = pp_map_done(sec, "pipeline", e)) < 0))
        return rc;

    if ((rc = sec_of(root, "data_parallel", &sec, e)) < 0) return rc;
    if (sec && ((rc = read_bool(sec, "data_parallel", "overlap_grad_reduce",
                                &s->dp_overlap, e)) < 0 ||
                (rc = read_bool(sec, "data_parallel", "overlap_param_gather",
                                &s->param_gather_overlap, e)) < 0 ||
                (rc = pp_map_quantity(sec, "data_parallel", "bucket",
                                      PP_OPTIONAL, PP_Q_BYTES, NULL, false,
                                      &s->bucket_bytes, e)) < 0 ||
                (rc = read_dtype_bytes(sec, "data_parallel", "reduce_dtype",
                                       &s->grad_reduce_bytes, e)) < 0 ||
                (rc = pp_map_done(sec, "data_parallel", e)) < 0))
        return rc;
    if (!(s->bucket_bytes > 0))
        return pp_error_at(e, PP_EINPUT, pp_map_get(root, "data_parallel"),
                           "data_parallel.bucket", "expected a positive size");

    if ((rc = sec_of(root, "tensor_parallel", &sec, e)) < 0) return rc;
    if (sec && ((rc = read_bool(sec, "tensor_parallel", "overlap_comm",
                                &s->tp_overlap, e)) < 0 ||
                (rc = read_bool(sec, "tensor_parallel", "async_backward",
                                &s->tp_async_bwd, e)) < 0 ||
                (rc = pp_map_done(sec, "tensor_parallel", e)) < 0))
        return rc;

    if ((rc = read_recompute(root, s, e)) < 0 ||
        (rc = read_recompute_default(root, s, e)) < 0)
        return rc;

    if ((rc = sec_of(root, "attention", &sec, e)) < 0) return rc;
    if (sec && ((rc = read_bool(sec, "attention", "flash", &s->flash_attention,
                                e)) < 0 ||
                (rc = pp_map_done(sec, "attention", e)) < 0))
        return rc;

    if ((rc = sec_of(root, "fp8", &sec, e)) < 0) return rc;
    if (sec) {
        /* The recipes by name, auto left out: a stack's is a choice. */
        int r = (int)s->fp8_recipe - 1;
        if ((rc = read_bool(sec, "fp8", "supported", &s->fp8, e)) < 0 ||
            (rc = pp_map_number(sec, "fp8", "cast_bytes", PP_OPTIONAL, 0, 64,
                                &s->fp8_cast_bytes, e)) < 0 ||
            (rc = pp_map_enum(sec, "fp8", "recipe", PP_OPTIONAL,
                              pp_reg_fp8.names + 1, &r, e)) < 0 ||
            (rc = pp_map_done(sec, "fp8", e)) < 0)
            return rc;
        s->fp8_recipe = (pp_fp8)(r + 1);
    }

    if ((rc = sec_of(root, "fp4", &sec, e)) < 0) return rc;
    if (sec && ((rc = read_bool(sec, "fp4", "supported", &s->fp4, e)) < 0 ||
                (rc = pp_map_done(sec, "fp4", e)) < 0))
        return rc;

    if ((rc = sec_of(root, "zero", &sec, e)) < 0) return rc;
    if (sec) {
        if ((rc = pp_map_int(sec, "zero", "max_stage", PP_OPTIONAL, 0, 3, &iv,
                             e)) < 0)
            return rc;
        if (rc == 0) s->zero_max = (int)iv;
        if ((rc = pp_map_int(sec, "zero", "prefetch_layers", PP_OPTIONAL, 0, 64,
                             &iv, e)) < 0)
            return rc;
        if (rc == 0) s->zero3_prefetch = (int)iv;
        if ((rc = read_bool(sec, "zero", "overlap", &s->zero3_overlap, e)) <
                0 ||
            (rc = pp_map_done(sec, "zero", e)) < 0)
            return rc;
    }

    if ((rc = sec_of(root, "collectives", &sec, e)) < 0) return rc;
    if (sec &&
        ((rc = pp_map_number(sec, "collectives", "efficiency", PP_OPTIONAL,
                             1e-3, 1, &s->coll_efficiency, e)) < 0 ||
         (rc = pp_map_number(sec, "collectives", "dp_sms", PP_OPTIONAL, 0, 1024,
                             &s->dp_sms, e)) < 0 ||
         (rc = pp_map_done(sec, "collectives", e)) < 0))
        return rc;

    if ((rc = sec_of(root, "loss", &sec, e)) < 0) return rc;
    if (sec && ((rc = read_bool(sec, "loss", "fused", &s->loss_fused, e)) < 0 ||
                (rc = pp_map_done(sec, "loss", e)) < 0))
        return rc;

    if ((rc = sec_of(root, "optimizer", &sec, e)) < 0) return rc;
    if (sec && ((rc = read_bool(sec, "optimizer", "precision_aware",
                                &s->precision_aware_opt, e)) < 0 ||
                (rc = pp_map_done(sec, "optimizer", e)) < 0))
        return rc;

    if ((rc = sec_of(root, "host", &sec, e)) < 0) return rc;
    if (sec) {
        bool sync = !s->moe_sync_free;
        s->host_op_s = -1;
        if ((rc = pp_map_quantity(sec, "host", "kernel_issue", PP_OPTIONAL,
                                  PP_Q_TIME, NULL, true, &s->host_kernel_s,
                                  e)) < 0 ||
            (rc = pp_map_quantity(sec, "host", "op_issue", PP_OPTIONAL,
                                  PP_Q_TIME, NULL, true, &s->host_op_s, e)) <
                0 ||
            (rc = pp_map_bool(sec, "host", "moe_sync", PP_OPTIONAL, &sync, e)) <
                0 ||
            (rc = pp_map_done(sec, "host", e)) < 0)
            return rc;
        s->moe_sync_free = !sync;
        if (!(s->host_kernel_s < 1e-2))
            return pp_error_at(e, PP_EINPUT, pp_map_get(sec, "kernel_issue"),
                               "host.kernel_issue",
                               "expected at most 10ms per kernel");
        if (!(s->host_op_s < 1e-2))
            return pp_error_at(e, PP_EINPUT, pp_map_get(sec, "op_issue"),
                               "host.op_issue",
                               "expected at most 10ms per operation");
        if (s->host_op_s < 0) s->host_op_s = s->host_kernel_s;
    }

    if ((rc = sec_of(root, "moe", &sec, e)) < 0) return rc;
    if (sec) {
        int d = s->moe_hybridep ? PP_MOE_HYBRIDEP
                 : s->moe_deepep  ? PP_MOE_DEEPEP
                                  : PP_MOE_ALLTOALL;
        bool fused = !s->moe_permute_unfused;
        if ((rc = pp_map_enum(sec, "moe", "dispatcher", PP_OPTIONAL,
                              moe_dispatchers, &d, e)) < 0 ||
            (rc = pp_map_bool(sec, "moe", "permute_fusion", PP_OPTIONAL, &fused,
                              e)) < 0 ||
            (rc = pp_map_bool(sec, "moe", "a2a_overlap", PP_OPTIONAL,
                              &s->moe_a2a_overlap, e)) < 0 ||
            (rc = pp_map_bool(sec, "moe", "quick_geglu_sync", PP_OPTIONAL,
                              &s->moe_quick_geglu_sync, e)) < 0 ||
            (rc = read_overlap_sms(sec, s, e)) < 0 ||
            (rc = pp_map_done(sec, "moe", e)) < 0)
            return rc;
        s->moe_deepep = d != PP_MOE_ALLTOALL;
        s->moe_hybridep = d == PP_MOE_HYBRIDEP;
        s->moe_permute_unfused = !fused;
    }
    return pp_map_done(root, "", e);
}

int pp_stack_load(const char *spec, pp_stack *out, pp_error *e) {
    char path[1024];
    pp_stack s;
    int rc;
    if (!spec || !spec[0])
        return pp_error_set(e, PP_EUSAGE, "--stack: expected a stack name");
    if ((rc = pp_data_find("topologies/stacks", spec, path, sizeof path, e)) <
        0)
        return rc;
    stack_defaults(&s);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(s.name, sizeof s.name, "%.*s", (int)strcspn(base, "."), base);
    pp_doc *doc;
    if ((rc = pp_doc_load_file(path, &doc, e)) < 0) return rc;
    rc = stack_read(pp_doc_root(doc), &s, e);
    pp_doc_free(doc);
    if (rc < 0) return rc;
    snprintf(s.source, sizeof s.source, "%.255s", path);
    *out = s;
    return 0;
}

void pp_stack_apply(const pp_stack *s, pp_gpu_profile *g, bool is_default) {
    snprintf(g->stack, sizeof g->stack, "%s", s->name);
    g->stack_default = is_default;
    if (!g->legacy_framework) {
        g->grad_accum_bytes = s->grad_accum_bytes;
        g->framework_efficiency = s->efficiency;
    }
    g->flash_attention = s->flash_attention;
    g->fp8 = s->fp8;
    g->fp8_cast_bytes = s->fp8_cast_bytes;
    g->zero3_prefetch = s->zero3_prefetch;
    g->zero3_overlap = s->zero3_overlap;
    g->sw = *s;
}

void pp_stack_resolve_spec(const pp_stack *s, pp_parallel *p) {
    if (p->attn == PP_ATTN_AUTO) p->flash = s->flash_attention;
    /* Offloaded activations replace recomputation (Megatron-core refuses
     * the two together): the stack's default gives way. */
    if (!p->recompute_set)
        p->recompute =
            p->offload > 0 ? PP_RECOMPUTE_NONE : s->recompute_default;
    if (p->dispatch == PP_DISPATCH_AUTO) {
        p->deepep = s->moe_deepep;
        p->hybridep = s->moe_hybridep;
    }
    if (p->permute == PP_PERMUTE_AUTO)
        p->permute_unfused = s->moe_permute_unfused;
    if (p->fp8 == PP_FP8_AUTO) p->fp8_recipe = s->fp8_recipe;
}

unsigned pp_stack_fp8_check(const pp_stack *s, const pp_gpu_profile *g,
                            const pp_parallel *p) {
    if (p->dtype == PP_PREC_FP4)
        return (s->fp4 ? 0u : PP_FP8_NO_STACK) |
               (g->fp4_peak_flops > 0 ? 0u : PP_FP8_NO_GPU);
    if (p->dtype != PP_PREC_FP8) return 0;
    return (s->fp8 ? 0u : PP_FP8_NO_STACK) |
           (g->fp8_peak_flops > 0 ? 0u : PP_FP8_NO_GPU) |
           (p->fp8_recipe == PP_FP8_MXFP8 && !g->mxfp8 ? PP_FP8_NO_MXFP8 : 0u);
}

int pp_stack_optimizer_check(const pp_stack *s, pp_optimizer o, pp_error *e) {
    if (o != PP_OPT_ADAM_BF16_MOMENTS || s->precision_aware_opt) return 0;
    return pp_error_set(e, PP_EUSAGE,
                        "--optimizer %s: stack %s does not offer Megatron-"
                        "core's precision-aware optimizer "
                        "(topologies/stacks/%s.yaml, optimizer."
                        "precision_aware; --stack nemo-2025 does)",
                        pp_optimizer_name(o), s->name, s->name);
}

void pp_stack_resolve(const pp_gpu_profile *g, pp_parallel *p) {
    pp_stack_resolve_spec(&g->sw, p);
    p->fp8_transpose = !g->fp8_any_layout;
}

int pp_profile_load_stack(const char *spec, const pp_gpu_spec *gpu,
                          const char *stack, pp_gpu_profile *out, pp_stack *st,
                          pp_error *e) {
    pp_gpu_profile g;
    pp_stack s;
    int rc;
    if ((rc = pp_profile_load(spec, gpu, &g, e)) < 0) return rc;
    if ((rc = pp_stack_load(stack ? stack : pp_stack_default_name(gpu), &s,
                            e)) < 0)
        return rc;
    pp_stack_apply(&s, &g, stack == NULL);
    *out = g;
    if (st) *st = s;
    return 0;
}
