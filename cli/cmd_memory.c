/*
 * cmd_memory.c: `podplan memory`, memory per GPU of a parallel layout.
 */
#include "cli_int.h"
#include "podplan/hw.h"
#include "podplan/planner.h"

#include <math.h>
#include <stdio.h>

static const pp_cli_opt opts[] = {
    {"model", 'm', "M", "model: YAML file, zoo name or inline spec (required)",
     false, NULL, 0, NULL},
    {"parallel", 'p', "SPEC",
     "tp=8,pp=8,dp=16,mbs=1,gbs=1536[,vp=,sp=,recompute=none|selective|full|"
     "MODULE+... (core_attn,layernorm,moe_act,mlp,moe,shared_experts,"
     "mla_up_proj),"
     "zero=,first=,last=,"
     "dtype=bf16|fp16|fp8,fp8=delayed|tensorwise|mxfp8|blockwise,"
     "attn=flash|standard,cp=,cp_comm=p2p|all_gather|a2a|a2a+p2p,cp_a2a=,"
     "ep=,etp=,"
     "dispatcher=alltoall|deepep|hybridep,permute=fused|unfused,"
     "a2a_overlap=on|off,rank_capacity=X (HybridEP's per-rank buffers: "
     "sync-free),"
     "graphs=none|attn+moe_router+...|attn+moe|full,offload=N (layers whose "
     "activations go to host memory; pp 1),layout=Et|(tt|)*30L] "
     "(required)",
     false, NULL, 0, NULL},
    {"optimizer", 0, "OPT", "optimizer (default: adam-mixed):", false,
     &pp_reg_optimizer, 0, NULL},
    {"gpu", 0, "NAME",
     "a GPU of the catalogue (podplan list gpus): its HBM to check the fit "
     "against, and what it keeps of FP8 weights",
     false, NULL, 0, NULL},
    {"gpu-memory", 0, "SIZE",
     "HBM per GPU to check the fit against, e.g. 80GB (default: --gpu's)",
     false, NULL, 0, NULL},
    {"stack", 0, "NAME",
     "software stack, for attn=auto and dtype=fp8 (default: "
     "megatron-lm-2021: no GPU is named here)",
     false, NULL, 0, NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

typedef struct result {
    pp_model m;
    pp_parallel p;
    int optimizer;
    pp_memory mem;
    double hbm; /* 0 when not given */
    char gpu[PP_NAME_MAX]; /* --gpu, or "" */
    pp_stack stack;
    bool stack_default;
} result;

/* The share of HBM plan keeps free by default (--memory-reserve). */
static double plan_reserve(void) {
    pp_plan_options o;
    pp_plan_options_init(&o);
    return o.memory_reserve;
}

static void print_table(FILE *fp, const void *ctx) {
    const result *r = ctx;
    const pp_memory *x = &r->mem;
    char spec[PP_SPEC_MAX];
    fprintf(fp, "model        %s (%s parameters)\n", r->m.name,
            pp_fmtq(pp_model_params(&r->m), PP_Q_COUNT));
    fprintf(fp, "parallel     %s\n",
            pp_parallel_format(&r->p, spec, sizeof spec));
    fprintf(fp, "optimizer    %s\n",
            pp_optimizer_name((pp_optimizer)r->optimizer));
    if (r->gpu[0])
        fprintf(fp, "gpu          %s (FP8 weights: %s)\n", r->gpu,
                r->p.fp8_transpose ? "a copy and its transpose"
                                   : "one copy for delayed and tensorwise");
    fprintf(fp, "stack        %s%s (attention %s)\n\n", r->stack.name,
            r->stack_default ? " (default; --stack to change)" : "",
            r->p.flash ? "flash" : "standard");
    if (r->p.pp > 1)
        fprintf(fp, "per GPU (pipeline stage %lld of %lld, the most loaded)\n",
                (long long)x->stage, (long long)r->p.pp);
    else
        fprintf(fp, "per GPU\n");
    fprintf(fp, "  %-26s %12s\n", "parameters held",
            pp_fmtq(x->params_per_gpu, PP_Q_COUNT));
    fprintf(fp, "  %-26s %12s\n", "weights", pp_fmtq(x->weights, PP_Q_BYTES));
    fprintf(fp, "  %-26s %12s\n", "gradients", pp_fmtq(x->grads, PP_Q_BYTES));
    fprintf(fp, "  %-26s %12s\n", "optimizer states",
            pp_fmtq(x->optimizer, PP_Q_BYTES));
    fprintf(fp, "  %-26s %12s\n", "model states",
            pp_fmtq(x->model_states, PP_Q_BYTES));
    fprintf(fp, "  %-26s %12s  (%g micro-batches in flight)\n", "activations",
            pp_fmtq(x->activations, PP_Q_BYTES), x->inflight);
    if (x->offloaded > 0)
        fprintf(fp,
                "  %-26s %12s  (offload=%lld: in host memory, not in the "
                "total)\n",
                "offloaded activations", pp_fmtq(x->offloaded, PP_Q_BYTES),
                (long long)r->p.offload);
    fprintf(fp, "  %-26s %12s\n", "buffers", pp_fmtq(x->buffers, PP_Q_BYTES));
    if (x->step_grads > 0)
        fprintf(fp, "  %-26s %12s  (at the optimizer step, %s)\n",
                "fp32 gradients for step", pp_fmtq(x->step_grads, PP_Q_BYTES),
                pp_memory_peak_at_step(x)
                    ? "more than activations + buffers: counted"
                    : "in place of activations + buffers");
    fprintf(fp, "  %-26s %12s\n", "total", pp_fmtq(x->total, PP_Q_BYTES));
    if (r->hbm > 0) {
        if (x->total <= r->hbm)
            fprintf(fp, "\nfits in %s with %s to spare\n",
                    pp_fmtq(r->hbm, PP_Q_BYTES),
                    pp_fmtq(r->hbm - x->total, PP_Q_BYTES));
        else
            fprintf(fp, "\ndoes NOT fit in %s: %s short\n",
                    pp_fmtq(r->hbm, PP_Q_BYTES),
                    pp_fmtq(x->total - r->hbm, PP_Q_BYTES));
        /* What plan would allow: the same figure less its reserve, so
         * that a layout this says fits is not a surprise there. */
        double res = plan_reserve(), lim = r->hbm * (1.0 - res);
        double d = lim - x->total;
        fprintf(fp,
                "plan keeps %g%% free (--memory-reserve): %s usable, %s %s\n",
                100.0 * res, pp_fmtq(lim, PP_Q_BYTES),
                pp_fmtq(fabs(d), PP_Q_BYTES), d >= 0 ? "to spare" : "short");
    }
}

static json_t *to_json(const result *r) {
    const pp_memory *x = &r->mem;
    char spec[PP_SPEC_MAX];
    json_t *o = json_object(), *b = json_object();
    json_object_set_new(o, "model", json_string(r->m.name));
    json_object_set_new(
        o, "parallel",
        json_string(pp_parallel_format(&r->p, spec, sizeof spec)));
    json_object_set_new(
        o, "optimizer",
        json_string(pp_optimizer_name((pp_optimizer)r->optimizer)));
    json_object_set_new(o, "stack", json_string(r->stack.name));
    json_object_set_new(o, "flash_attention", json_boolean(r->p.flash));
    json_object_set_new(o, "memory_per_gpu_bytes", pp_json_num(x->total));
    json_object_set_new(o, "params_per_gpu", pp_json_num(x->params_per_gpu));
    json_object_set_new(b, "weights_bytes", pp_json_num(x->weights));
    json_object_set_new(b, "gradients_bytes", pp_json_num(x->grads));
    json_object_set_new(b, "optimizer_bytes", pp_json_num(x->optimizer));
    json_object_set_new(b, "model_states_bytes", pp_json_num(x->model_states));
    json_object_set_new(b, "activations_bytes", pp_json_num(x->activations));
    json_object_set_new(b, "buffers_bytes", pp_json_num(x->buffers));
    if (x->offloaded > 0)
        json_object_set_new(b, "offloaded_activations_bytes",
                            pp_json_num(x->offloaded));
    json_object_set_new(b, "step_grads_bytes", pp_json_num(x->step_grads));
    json_object_set_new(o, "memory", b);
    json_object_set_new(o, "microbatches_in_flight", pp_json_num(x->inflight));
    json_object_set_new(o, "pipeline_stage", json_integer(x->stage));
    json_object_set_new(o, "gpu",
                        r->gpu[0] ? json_string(r->gpu) : json_null());
    if (r->hbm > 0) {
        json_object_set_new(o, "gpu_memory_bytes", pp_json_num(r->hbm));
        json_object_set_new(o, "fits", json_boolean(x->total <= r->hbm));
        json_object_set_new(o, "headroom_bytes",
                            pp_json_num(r->hbm - x->total));
        json_object_set_new(o, "planner_limit_bytes",
                            pp_json_num(r->hbm * (1.0 - plan_reserve())));
    }
    return o;
}

static int load_stack(const pp_args *a, result *r, pp_error *e) {
    const char *name = pp_args_get(a, "stack");
    r->stack_default = name == NULL;
    int rc =
        pp_stack_load(name ? name : pp_stack_default_name(NULL), &r->stack, e);
    if (rc < 0) return rc;
    pp_stack_resolve_spec(&r->stack, &r->p);
    if (r->p.dtype == PP_PREC_FP8 && !r->stack.fp8)
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: dtype=fp8: stack %s does not train "
                            "in FP8 (fp8.supported)",
                            r->stack.name);
    if (r->p.dtype == PP_PREC_FP4 && !r->stack.fp4)
        return pp_error_set(e, PP_EUSAGE,
                            "--parallel: dtype=fp4: stack %s does not train "
                            "in NVFP4 (fp4.supported)",
                            r->stack.name);
    return 0;
}

/* --gpu: the catalogue GPU's HBM (unless --gpu-memory) and whether its
 * FP8 GEMMs take any layout (pp_parallel.fp8_transpose). */
static int load_gpu(const pp_args *a, result *r, pp_error *e) {
    const char *name = pp_args_get(a, "gpu");
    pp_gpu_spec g;
    int rc;
    if (!name) return 0;
    if ((rc = pp_cli_catalog_gpu(name, &g, e)) < 0) return rc;
    snprintf(r->gpu, sizeof r->gpu, "%s", g.name);
    if (!(r->hbm > 0)) r->hbm = g.hbm_bytes;
    r->p.fp8_transpose = !g.fp8_any_layout;
    return 0;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    result r = {0};
    const char *spec, *pspec;
    int fmt = PP_FMT_TABLE;

    pp_parallel_init(&r.p);
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "model", &spec, &e) ||
        pp_args_need(&a, "parallel", &pspec, &e) ||
        pp_args_choice(&a, "optimizer", &r.optimizer, &e) ||
        pp_args_quantity(&a, "gpu-memory", PP_Q_BYTES, NULL, &r.hbm, &e) ||
        pp_args_enum(&a, "format", pp_format_names, &fmt, &e) ||
        pp_cli_load_parallel(&a, &r.p, NULL, &e) ||
        pp_cli_load_model(&a, false, &r.m, &e) || load_stack(&a, &r, &e) ||
        load_gpu(&a, &r, &e) || pp_parallel_validate(&r.p, &r.m, &e) ||
        pp_optimizer_check((pp_optimizer)r.optimizer, &r.p, &e) ||
        /* A stack asked for must offer the optimizer; the default one
         * (no --stack) is only the layout's defaults here. */
        (!r.stack_default &&
         pp_stack_optimizer_check(&r.stack, (pp_optimizer)r.optimizer, &e)) ||
        pp_memory_per_gpu(&r.m, &r.p, (pp_optimizer)r.optimizer, &r.mem, &e))
        return pp_cli_fail(cmd->name, &e);
    return pp_cli_emit(&a, fmt, to_json(&r), print_table, &r);
}

const pp_cli_cmd pp_cmd_memory = {
    "memory",
    "memory per GPU of a parallel layout: model states, activations, buffers",
    "memory --model M --parallel SPEC [--optimizer OPT] "
    "[--gpu NAME] [--gpu-memory SIZE] [--stack NAME] [--format table|json] "
    "[-o FILE]",
    "Model states (weights, gradients, optimizer) are sharded by ZeRO over "
    "dp;\n"
    "the optimizer step also copies the 16-bit gradients to fp32 "
    "(Megatron-LM:\n"
    "20 bytes per parameter in all), while activations are freed, so the\n"
    "total is model states plus the larger of the two;\n"
    "activations follow Korthikanti et al. 2022 (TP, sequence parallelism,\n"
    "selective/full recomputation) for the micro-batches in flight under\n"
    "1F1B (and interleaving).  The figures are those of the most loaded\n"
    "pipeline stage (counted from 0): usually the first, but the last holds\n"
    "the logits and, with an uneven split (first=, last=), a stage between\n"
    "may hold the most layers.  dtype=fp8 counts the FP8 weight copies\n"
    "Transformer Engine keeps: a copy and its transpose where FP8 GEMMs\n"
    "take only the TN layout (Hopper, and without --gpu), the copy alone\n"
    "for delayed and tensorwise scaling on a --gpu whose FP8 GEMMs take any\n"
    "(Blackwell).  A GPU's memory is what the device reports (nvidia-smi's\n"
    "memory.total); with one (--gpu or --gpu-memory) the fit is also given\n"
    "against what plan allows, that less plan's default --memory-reserve.",
    opts,
    run,
};
