/*
 * cmd_simulate.c: `podplan simulate`, one training iteration of a model
 * under a TP x PP x DP layout on a cluster (sim/train/step.c).
 */
#include "cli_int.h"
#include "podplan/planner.h"
#include "podplan/sim.h"

#include <math.h>
#include <string.h>

static const pp_cli_opt opts[] = {
    {"model", 'm', "M", "model: YAML file, zoo name or inline spec (required)",
     false, NULL, 0, NULL},
    {"cluster", 'c', "C",
     "cluster: YAML file or name in topologies/ (required)", false, NULL, 0,
     NULL},
    {"parallel", 'p', "SPEC",
     "tp=8,pp=8,dp=16,mbs=1,gbs=1536[,vp=,sp=,recompute=none|selective|full|"
     "MODULE+... (core_attn,layernorm,moe_act,mlp,moe,shared_experts,"
     "mla_up_proj),"
     "zero=,first=,last=,"
     "dtype=bf16|fp16|fp8|fp4,fp8=delayed|tensorwise|mxfp8|blockwise,"
     "fp8_attn=on (FP8 attention, Blackwell),"
     "attn=flash|standard,cp=,cp_comm=p2p|all_gather|a2a|a2a+p2p,cp_a2a=,"
     "ep=,etp=,"
     "dispatcher=alltoall|deepep|hybridep,permute=fused|unfused,"
     "a2a_overlap=on|off,rank_capacity=X (HybridEP's per-rank buffers: "
     "sync-free),"
     "graphs=none|attn+moe_router+...|attn+moe|full,offload=N (layers whose "
     "activations go to host memory; pp 1),layout=Et|(tt|)*30L] "
     "(required)",
     false, NULL, 0, NULL},
    {"fidelity", 0, "F", "network model (default: flow):", false,
     &pp_reg_fidelity, 0, NULL},
    {"schedule", 0, "S",
     "pipeline schedule (default: interleaved when vp > 1, else 1f1b):", false,
     &pp_reg_schedule, 0, NULL},
    {"placement", 0, "ORDER", "rank order, innermost first (default: tp,pp,dp)",
     false, NULL, 0, NULL},
    {"dp-overlap", 0, "on|off",
     "start DP buckets during the last backward (default: the stack's)", false,
     NULL, 0, NULL},
    {"tp-overlap", 0, "on|off",
     "TP collectives of sp=on layouts under the adjacent GEMM (Transformer "
     "Engine's userbuffers, TP_COMM_OVERLAP) or exposed (default: the "
     "stack's; off under dtype=fp4, which userbuffers do not take)",
     false, NULL, 0, NULL},
    {"bucket", 0, "SIZE",
     "DP bucket size with --dp-overlap on (default: the stack's)", false, NULL,
     0, NULL},
    {"grad-dtype", 0, "T",
     "bf16|fp16|fp32: gradients in the DP sync (default: the stack's; "
     "Megatron-core reduces in fp32 when training in bf16)",
     false, NULL, 0, NULL},
    {"optimizer", 0, "OPT",
     "optimizer, for the memory of model states and the step's time "
     "(default: adam-mixed):",
     false, &pp_reg_optimizer, 0, NULL},
    {"memory-check", 0, "on|off",
     "off: simulate a layout even where the memory model says it does not "
     "fit (the memory line still says by how much; default: on)",
     false, NULL, 0, NULL},
    {"p2p", 0, "sync|async",
     "a stage waits for its pipeline sends (sync, Megatron-LM 2021) or not "
     "(default: the stack's)",
     false, NULL, 0, NULL},
    {"p2p-scatter-gather", 0, "on|off",
     "without sp, each TP rank sends 1/tp of a pipeline tensor and the "
     "receiver all-gathers it (on, Megatron-LM 2021) or every rank sends it "
     "whole (off, Megatron-core) (default: the stack's)",
     false, NULL, 0, NULL},
    {"profile", 0, "FILE",
     "GPU profile (default: topologies/profiles/ for the cluster's GPU)", false,
     NULL, 0, NULL},
    {"stack", 0, "NAME",
     "software stack (podplan list stacks) or a YAML file (default: "
     "megatron-lm-2021 for A100 and older, megatron-core-2024 for H100 and "
     "newer); sets the defaults of the six options above and attn=",
     false, NULL, 0, NULL},
    {"compute-time", 0, "TIME",
     "generic models: compute per iteration per GPU, e.g. 0.4s (default: from "
     "flops_per_sample)",
     false, NULL, 0, NULL},
    {"tokens", 0, "T", "training tokens, e.g. 300e9: adds training_days", false,
     NULL, 0, NULL},
    {"set", 0, "PATH=VALUE",
     "override a cluster field, e.g. node.nics.count=4 (repeatable)", true,
     NULL, 0, NULL},
    {"seed", 0, "N", "seed of ECMP path hashing (default: 0)", false, NULL, 0,
     NULL},
    {"trace", 0, "FILE",
     "write a Perfetto/Chrome trace of the iteration (refused above an "
     "estimated 200MB)",
     false, NULL, 0, NULL},
    {"trace-force", 0, NULL,
     "write the --trace even when it is estimated above 200MB", false, NULL, 0,
     NULL},
    {"ops", 0, "FILE",
     "write the kernels and collectives priced for each part of the model "
     "(embedding, dense and MoE layer, MTP module, head; forward and "
     "backward), one row each: tab-separated, or JSON for FILE.json",
     false, NULL, 0, NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

static const char *const onoff[] = {"off", "on", NULL};
static const char *const p2p_names[] = {"async", "sync", NULL};
static const char *const gdt_names[] = {"bf16", "fp16", "fp32", NULL};

typedef struct result {
    pp_model m;
    pp_parallel p;
    const pp_cluster_info *info;
    pp_step_config cfg;
    pp_gpu_profile prof;
    pp_step_result r;
    double tokens; /* 0 when not given */
    double days;
    char placement[16];
    bool tp_overlap_set; /* --tp-overlap given: the table says it */
} result;

/* ep comm and cp comm columns only for layouts that have them, host only
 * for a stack that models the host (a dense layout's table under the
 * 2021 stack is what it always was). */
enum { COL_EPCP = 1, COL_HOST = 2 };

static void row(FILE *fp, const char *name, const pp_breakdown *b, int xc) {
    fprintf(fp, "  %-6s %9.4f %9.4f %9.4f %10.4f %9.4f %9.4f", name,
            b->compute_s, b->tp_comm_s, b->pp_comm_s, b->dp_comm_exposed_s,
            b->bubble_s, b->other_s);
    if (xc & COL_EPCP) fprintf(fp, " %9.4f %9.4f", b->ep_comm_s, b->cp_comm_s);
    if (xc & COL_HOST) fprintf(fp, " %9.4f", b->host_s);
    fputc('\n', fp);
}

static int extra_cols(const result *x) {
    return (x->p.ep > 1 || x->p.cp > 1 ? COL_EPCP : 0) |
           (x->prof.sw.host_kernel_s > 0 ? COL_HOST : 0);
}

static void print_table(FILE *fp, const void *ctx) {
    const result *x = ctx;
    const pp_step_result *r = &x->r;
    char spec[PP_SPEC_MAX];
    fprintf(fp, "model        %s (%s parameters)\n", x->m.name,
            pp_fmtq(pp_model_params(&x->m), PP_Q_COUNT));
    fprintf(fp, "cluster      %s: %lld of %d x %s\n", x->info->name,
            (long long)r->gpus, (int)x->info->gpus,
            x->info->gpu ? x->info->gpu->name : "?");
    fprintf(fp, "parallel     %s\n",
            pp_parallel_format(&x->p, spec, sizeof spec));
    fprintf(
        fp,
        "schedule     %s, placement %s, dp overlap %s, p2p %s%s, %s fidelity\n",
        pp_schedule_name(r->schedule), x->placement,
        x->cfg.dp_overlap ? "on" : "off", x->cfg.p2p_sync ? "sync" : "async",
        x->cfg.p2p_scatter ? "" : " (whole tensors)",
        pp_fidelity_name(x->cfg.fidelity));
    if (x->tp_overlap_set)
        fprintf(fp, "tp overlap   %s (--tp-overlap)\n",
                x->prof.sw.tp_overlap ? "on" : "off");
    char sl[160];
    fprintf(fp, "stack        %s", pp_cli_stack_label(&x->prof, sl, sizeof sl));
    /* The recipe a plain dtype=fp8 took from the stack. */
    if (x->p.dtype == PP_PREC_FP8 && x->p.fp8 == PP_FP8_AUTO)
        fprintf(fp, " (FP8 recipe %s)",
                pp_registry_name(&pp_reg_fp8, (int)x->p.fp8_recipe));
    fputc('\n', fp);
    /* Said only when asked for: the default's tables stay as they were. */
    if (x->cfg.optimizer != PP_OPT_ADAM_MIXED)
        fprintf(fp, "optimizer    %s\n", pp_optimizer_name(x->cfg.optimizer));
    if (x->prof.calibrated[0])
        fprintf(fp, "profile      %s (%s) (calibrated: %s)\n\n", x->prof.name,
                x->prof.source, x->prof.calibrated);
    else
        fprintf(fp,
                "profile      %s (%s) (uncalibrated: published figures)"
                "\n\n",
                x->prof.name, x->prof.source);
    fprintf(fp, "iteration    %.4f s\n", r->iteration_time_s);
    fprintf(fp,
            "throughput   %.1f TFLOP/s per GPU (F_iter %s per iteration, "
            "with recomputation); MFU %.1f%%\n",
            r->tflops_per_gpu, pp_fmtq(r->flops_iter, PP_Q_FLOPS),
            100 * r->mfu);
    fprintf(fp, "memory       %s per GPU of %s",
            pp_fmtq(r->memory.total, PP_Q_BYTES),
            pp_fmtq(r->gpu_memory_bytes, PP_Q_BYTES));
    if (r->memory.offloaded > 0)
        fprintf(fp, " (and %s of activations in host memory)",
                pp_fmtq(r->memory.offloaded, PP_Q_BYTES));
    fputc('\n', fp);
    if (x->tokens > 0)
        fprintf(fp, "training     %.1f days for %s tokens\n", x->days,
                pp_fmtq(x->tokens, PP_Q_COUNT));
    fprintf(fp, "\nbreakdown per pipeline stage, seconds (each row adds up to "
                "the iteration time)\n");
    int xc = extra_cols(x);
    fprintf(fp, "  %-6s %9s %9s %9s %10s %9s %9s", "stage", "compute",
            "tp comm", "pp comm", "dp exposed", "bubble", "other");
    if (xc & COL_EPCP) fprintf(fp, " %9s %9s", "ep comm", "cp comm");
    if (xc & COL_HOST) fprintf(fp, " %9s", "host");
    fputc('\n', fp);
    for (size_t i = 0; i < r->n_stages; i++) {
        char nm[24];
        snprintf(nm, sizeof nm, "%zu", i);
        row(fp, nm, &r->stages[i], xc);
    }
    row(fp, "mean", &r->total, xc);
}

static json_t *bd_json(const pp_breakdown *b, int xc) {
    json_t *o = json_object();
    json_object_set_new(o, "compute_s", pp_json_num(b->compute_s));
    json_object_set_new(o, "tp_comm_s", pp_json_num(b->tp_comm_s));
    json_object_set_new(o, "pp_comm_s", pp_json_num(b->pp_comm_s));
    json_object_set_new(o, "dp_comm_exposed_s",
                        pp_json_num(b->dp_comm_exposed_s));
    json_object_set_new(o, "bubble_s", pp_json_num(b->bubble_s));
    json_object_set_new(o, "other_s", pp_json_num(b->other_s));
    if (xc & COL_EPCP) {
        json_object_set_new(o, "ep_comm_s", pp_json_num(b->ep_comm_s));
        json_object_set_new(o, "cp_comm_s", pp_json_num(b->cp_comm_s));
    }
    if (xc & COL_HOST) json_object_set_new(o, "host_s", pp_json_num(b->host_s));
    return o;
}

static json_t *to_json(const result *x) {
    const pp_step_result *r = &x->r;
    char spec[PP_SPEC_MAX];
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(x->m.name));
    json_object_set_new(o, "cluster", json_string(x->info->name));
    json_object_set_new(
        o, "parallel",
        json_string(pp_parallel_format(&x->p, spec, sizeof spec)));
    json_object_set_new(o, "gpus", json_integer((json_int_t)r->gpus));
    json_object_set_new(o, "schedule",
                        json_string(pp_schedule_name(r->schedule)));
    json_object_set_new(o, "placement", json_string(x->placement));
    json_object_set_new(o, "fidelity",
                        json_string(pp_fidelity_name(x->cfg.fidelity)));
    json_object_set_new(o, "dp_overlap", json_boolean(x->cfg.dp_overlap));
    /* The stack's (or --tp-overlap's) choice, less what NVFP4 rules out. */
    json_object_set_new(o, "tp_overlap",
                        json_boolean(pp_tp_overlap_offered(&x->prof, &x->p)));
    json_object_set_new(o, "p2p_sync", json_boolean(x->cfg.p2p_sync));
    json_object_set_new(o, "p2p_scatter_gather",
                        json_boolean(x->cfg.p2p_scatter));
    json_object_set_new(o, "stack", json_string(x->prof.stack));
    json_object_set_new(o, "stack_default",
                        json_boolean(x->prof.stack_default));
    if (x->p.dtype == PP_PREC_FP8)
        json_object_set_new(
            o, "fp8_recipe",
            json_string(pp_registry_name(&pp_reg_fp8, (int)x->p.fp8_recipe)));
    json_object_set_new(o, "optimizer",
                        json_string(pp_optimizer_name(x->cfg.optimizer)));
    json_object_set_new(o, "profile", json_string(x->prof.name));
    json_object_set_new(o, "profile_calibrated",
                        json_boolean(x->prof.calibrated[0] != '\0'));
    json_object_set_new(o, "iteration_time_s",
                        pp_json_num(r->iteration_time_s));
    json_object_set_new(o, "tflops_per_gpu", pp_json_num(r->tflops_per_gpu));
    json_object_set_new(o, "mfu", pp_json_num(r->mfu));
    json_object_set_new(o, "flops_per_iteration", pp_json_num(r->flops_iter));
    json_object_set_new(o, "model_flops_per_iteration",
                        pp_json_num(r->model_flops_iter));
    json_object_set_new(o, "memory_per_gpu_bytes",
                        pp_json_num(r->memory.total));
    json_object_set_new(o, "gpu_memory_bytes",
                        pp_json_num(r->gpu_memory_bytes));
    if (r->memory.offloaded > 0)
        json_object_set_new(o, "offloaded_activations_bytes",
                            pp_json_num(r->memory.offloaded));
    if (x->tokens > 0) {
        json_object_set_new(o, "tokens", pp_json_num(x->tokens));
        json_object_set_new(o, "training_days", pp_json_num(x->days));
    }
    json_object_set_new(o, "breakdown", bd_json(&r->total, extra_cols(x)));
    json_t *st = json_array();
    for (size_t i = 0; i < r->n_stages; i++)
        json_array_append_new(st, bd_json(&r->stages[i], extra_cols(x)));
    json_object_set_new(o, "stages", st);
    json_t *sim = json_object();
    json_object_set_new(sim, "events", json_integer((json_int_t)r->events));
    json_object_set_new(sim, "transfers",
                        json_integer((json_int_t)r->transfers));
    json_object_set_new(sim, "collectives",
                        json_integer((json_int_t)r->collectives));
    json_object_set_new(sim, "flows",
                        json_integer((json_int_t)r->net.flows_started));
    json_object_set_new(sim, "solver_updates",
                        json_integer((json_int_t)r->net.updates));
    json_object_set_new(sim, "flows_touched",
                        json_integer((json_int_t)r->net.flows_touched));
    json_object_set_new(o, "simulator", sim);
    return o;
}

/* Traces above this are refused without --trace-force: Perfetto's UI
 * struggles past a few hundred MB and the file takes a while to write. */
#define TRACE_LIMIT_BYTES 200e6

/* The trace's size, before running: measured on GPT-3 175B (tp 4 and 8,
 * pp 16, 16 and 64 micro-batches, dp 1 and 4), every layer of every
 * micro-batch on every TP rank of one replica writes about 4.1 kB of
 * spans (forward, backward, recomputation kernels, TP collectives and
 * their link transfers); DP adds about a third (buckets, links).  Within
 * 10% on those; an estimate to warn by, not a bound. */
static double trace_estimate(const pp_model *m, const pp_parallel *p) {
    double layers = m->arch == PP_ARCH_TRANSFORMER ? (double)m->layers : 1;
    return 4100.0 * (double)p->tp * pp_parallel_microbatches(p) * layers *
           (p->dp > 1 ? 1.3 : 1.0);
}

static int get_enum(const pp_args *a, const char *name,
                    const char *const *names, int *out, pp_error *e) {
    return pp_args_enum(a, name, names, out, e) ? PP_EUSAGE : 0;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    static result x;
    memset(&x, 0, sizeof x);
    const char *mspec = NULL, *cspec = NULL, *pspec = NULL;
    (void)pspec;
    /* -1: not given, the stack's value. */
    int fmt = PP_FMT_TABLE, fid = PP_FIDELITY_FLOW, sched = -1, ov = -1;
    int memchk = -1, optz = PP_OPT_ADAM_MIXED;
    int p2p = -1, gdt = -1, scatter = -1, tpov = -1;
    int64_t seed = 0;
    double ctime = 0, bucket = 0;
    pp_cluster *c = NULL;
    pp_outfile tf = {0};
    bool tracing = false;

    pp_parallel_init(&x.p);
    pp_step_config_init(&x.cfg);
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "model", &mspec, &e) ||
        pp_args_need(&a, "cluster", &cspec, &e) ||
        pp_args_need(&a, "parallel", &pspec, &e) ||
        pp_args_choice(&a, "fidelity", &fid, &e) ||
        pp_args_choice(&a, "schedule", &sched, &e) ||
        pp_args_choice(&a, "optimizer", &optz, &e) ||
        get_enum(&a, "dp-overlap", onoff, &ov, &e) ||
        get_enum(&a, "tp-overlap", onoff, &tpov, &e) ||
        get_enum(&a, "memory-check", onoff, &memchk, &e) ||
        get_enum(&a, "p2p", p2p_names, &p2p, &e) ||
        get_enum(&a, "p2p-scatter-gather", onoff, &scatter, &e) ||
        get_enum(&a, "grad-dtype", gdt_names, &gdt, &e) ||
        get_enum(&a, "format", pp_format_names, &fmt, &e) ||
        pp_args_int(&a, "seed", 0, INT64_MAX, &seed, &e) ||
        pp_args_quantity(&a, "compute-time", PP_Q_TIME, NULL, &ctime, &e) ||
        pp_args_quantity(&a, "bucket", PP_Q_BYTES, NULL, &bucket, &e) ||
        pp_args_quantity(&a, "tokens", PP_Q_COUNT, NULL, &x.tokens, &e))
        return pp_cli_fail(cmd->name, &e);
    const char *pl = pp_args_get(&a, "placement");
    if (pl && pp_placement_parse(pl, x.cfg.placement, &e))
        return pp_cli_fail(cmd->name, &e);
    snprintf(x.placement, sizeof x.placement, "%cp,%cp,%cp", x.cfg.placement[0],
             x.cfg.placement[1], x.cfg.placement[2]);
    if (sched >= 0) {
        x.cfg.schedule = (pp_schedule)sched;
        x.cfg.schedule_set = true;
    }
    x.cfg.fidelity = (pp_fidelity)fid;
    x.cfg.seed = (uint64_t)seed;
    int spec_ov;
    if ((rc = pp_cli_load_parallel(&a, &x.p, &spec_ov, &e)) ||
        (rc = pp_cli_load_model(&a, false, &x.m, &e)))
        goto out;
    if (spec_ov >= 0) {
        if (pp_args_get(&a, "dp-overlap") && spec_ov != ov) {
            rc = pp_error_set(&e, PP_EUSAGE,
                              "--parallel says overlap=%s "
                              "but --dp-overlap says %s",
                              spec_ov ? "on" : "off", ov ? "on" : "off");
            goto out;
        }
        ov = spec_ov;
    }
    if (tpov == 1 && x.p.dtype == PP_PREC_FP4) {
        rc = pp_error_set(&e, PP_EUSAGE,
                          "--tp-overlap on: Transformer Engine's userbuffers "
                          "take 16-bit, FP8 and MXFP8 inputs, not NVFP4 "
                          "(dtype=fp4); use --tp-overlap off");
        goto out;
    }
    if (ctime > 0 && x.m.arch != PP_ARCH_GENERIC) {
        rc = pp_error_set(&e, PP_EUSAGE,
                          "--compute-time applies to generic models only; "
                          "%s is a transformer, timed kernel by kernel",
                          x.m.name);
        goto out;
    }
    x.cfg.compute_time_s = ctime;
    if ((rc = pp_cli_load_cluster(&a, &c, &e))) goto out;
    x.info = pp_cluster_info_get(c);
    pp_stack stk;
    if ((rc = pp_cli_load_profile_stack(&a, x.info->gpu, NULL, &x.prof, &stk,
                                        &e)))
        goto out;
    /* The stack's choices, unless an option said otherwise. */
    pp_step_config_stack(&x.cfg, &stk);
    if (ov >= 0) x.cfg.dp_overlap = ov == 1;
    if (tpov >= 0) {
        x.prof.sw.tp_overlap = tpov == 1;
        x.tp_overlap_set = true;
    }
    if (p2p >= 0) x.cfg.p2p_sync = p2p == 1;
    if (scatter >= 0) x.cfg.p2p_scatter = scatter == 1;
    if (bucket > 0) x.cfg.bucket_bytes = bucket;
    if (gdt >= 0) x.cfg.grad_bytes = gdt == 2 ? 4.0 : 2.0;
    x.cfg.optimizer = (pp_optimizer)optz;
    if ((rc = pp_cli_check_stack(&stk, &x.prof, &x.p, &e)) ||
        (rc = pp_stack_optimizer_check(&stk, x.cfg.optimizer, &e)))
        goto out;
    pp_stack_resolve(&x.prof, &x.p);
    x.cfg.model = &x.m;
    x.cfg.par = &x.p;
    x.cfg.cluster = c;
    x.cfg.profile = &x.prof;
    x.cfg.check_memory = memchk != 0;
    /* A simulation that will take long says so before it starts: what
     * plan --a2a-budget keeps out of the planner's simulations. */
    if (x.cfg.fidelity == PP_FIDELITY_FLOW && x.p.ep > 1 && !x.p.deepep &&
        x.m.arch == PP_ARCH_TRANSFORMER) {
        pp_layer_cost lc;
        double n;
        if (pp_layer_cost_get(&x.prof, &x.m, &x.p, &lc, NULL) == 0 &&
            (n = pp_a2a_transfers(&x.m, &x.p, &lc, 0)) > PP_PLAN_A2A_BUDGET)
            pp_cli_note(&a,
                        "this iteration's MoE all-to-alls start %.2g "
                        "transfers: expect %.0f to %.0f minutes of one core "
                        "at flow fidelity (1.5e7 to 4e7 a minute, "
                        "bench/bench_moe), several times less at "
                        "--fidelity analytic (no contention)",
                        n, n / 4e7, n / 1.5e7);
    }
    const char *tpath = pp_args_get(&a, "trace");
    if (tpath && !pp_args_flag(&a, "trace-force")) {
        double est = trace_estimate(&x.m, &x.p);
        if (est > TRACE_LIMIT_BYTES) {
            rc = pp_error_set(&e, PP_EUSAGE,
                              "--trace: this iteration's trace would be about "
                              "%s (%lld micro-batches x %lld layers x %lld "
                              "TP ranks, each kernel and transfer a span), "
                              "more than the %s a trace viewer loads "
                              "comfortably; trace a smaller batch (gbs=) or "
                              "add --trace-force to write it anyway",
                              pp_fmtq(est, PP_Q_BYTES),
                              (long long)pp_parallel_microbatches(&x.p),
                              (long long)x.m.layers, (long long)x.p.tp,
                              pp_fmtq(TRACE_LIMIT_BYTES, PP_Q_BYTES));
            goto out;
        }
    }
    if (tpath) {
        if ((rc = pp_outfile_open(&tf, tpath, &e))) goto out;
        tracing = true;
        x.cfg.trace = tf.fp;
    }
    if ((rc = pp_step_simulate(&x.cfg, &x.r, &e))) goto out;
    if (tracing) {
        tracing = false;
        if ((rc = pp_outfile_commit(&tf, &e))) goto out;
    }
    /* After the simulation: a layout that fails (memory, the network)
     * leaves no ops file behind. */
    const char *opath = pp_args_get(&a, "ops");
    if (opath) {
        if ((rc = pp_cli_write_ops(opath, &x.prof, &x.m, &x.p, &e))) {
            pp_step_result_fini(&x.r);
            goto out;
        }
    }
    if (x.tokens > 0) {
        /* Iterations to see T tokens, each gbs sequences of seq tokens
         * (a generic model's "tokens" are samples). */
        double per = (double)x.p.gbs *
                     (x.m.arch == PP_ARCH_TRANSFORMER ? (double)x.m.seq : 1);
        x.days = x.tokens / per * x.r.iteration_time_s / 86400.0;
    }
    rc = pp_cli_emit(&a, fmt, to_json(&x), print_table, &x);
    pp_step_result_fini(&x.r);
    pp_cluster_free(c);
    return rc;
out:
    if (strncmp(e.msg, "simulate: ", 10) == 0)
        memmove(e.msg, e.msg + 10, strlen(e.msg + 10) + 1);
    if (tracing) pp_outfile_abort(&tf);
    pp_cluster_free(c);
    return pp_cli_fail(cmd->name, &e);
}

const pp_cli_cmd pp_cmd_simulate = {
    "simulate",
    "simulate one training iteration under TP x PP x DP: time, TFLOP/s, "
    "breakdown",
    "simulate --model M --cluster C --parallel SPEC [--fidelity F] "
    "[--schedule S] [--placement tp,pp,dp] "
    "[--dp-overlap on|off] [--tp-overlap on|off] [--p2p sync|async] "
    "[--p2p-scatter-gather on|off] "
    "[--optimizer OPT] [--memory-check on|off] [--profile FILE] "
    "[--stack NAME] [--compute-time TIME] [--tokens T] "
    "[--set PATH=VALUE]... [--trace FILE] [--ops FILE] [--format table|json] "
    "[-o FILE]",
    "Every kernel of every layer is timed by a roofline with the GPU profile\n"
    "(topologies/profiles/); TP collectives, pipeline sends and the DP "
    "gradient\n"
    "synchronisation run as transfers on the cluster's network (contending at\n"
    "flow fidelity).  tflops_per_gpu counts F_iter with recomputation (as the\n"
    "Megatron-LM tables do); mfu counts model FLOPs without it.  A layout "
    "that\n"
    "does not fit in the GPU's memory fails with exit status 1 and the\n"
    "shortfall.  Ranks are laid out TP innermost, then PP, then DP, unless\n"
    "--placement says otherwise (Megatron-LM's initialize_model_parallel uses\n"
    "tp,dp,pp).  Only one data-parallel replica's compute is simulated (all\n"
    "are alike); every transfer of the others that can share a link with it\n"
    "is simulated too.  ZeRO-1 reduce-scatters the gradients once per\n"
    "iteration; ZeRO-2 and 3 keep only a shard of them, so every "
    "micro-batch's\n"
    "are reduce-scattered after its backward (DeepSpeed).  A stack that\n"
    "models the host (host.kernel_issue: Megatron-core's and NeMo's) makes\n"
    "the GPU wait while its host issues kernels slower than it runs them\n"
    "(the host column; a dropless MoE layer holds the host once per forward).",
    opts,
    run,
};
