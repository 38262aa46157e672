/*
 * cmd_plan.c: `podplan plan`, the best parallel layouts of a model on a
 * cluster (planner.h does the work).
 */
#include "cli_int.h"
#include "podplan/sim.h"

#include "podplan/planner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const pp_cli_opt opts[] = {
    {"model", 'm', "M", "model: YAML file, zoo name or inline spec (required)",
     false, NULL, 0, NULL},
    {"cluster", 'c', "C",
     "cluster: YAML file or a name in topologies/ (required)", false, NULL, 0,
     NULL},
    {"set", 0, "PATH=VALUE",
     "override a cluster field, e.g. node.nics.count=4 (repeatable)", true,
     NULL, 0, NULL},
    {"gpus", 'n', "N",
     "GPUs to use (default: every count up to the cluster's that suits the "
     "batch)",
     false, NULL, 0, NULL},
    {"global-batch", 'b', "B",
     "global batch in sequences (default: the GPU count)", false, NULL, 0,
     NULL},
    {"top", 'k', "K",
     "simulate the best K by the estimate; 0 ranks by the estimate alone "
     "(default: 10)",
     false, NULL, 0, NULL},
    {"show", 0, "N", "candidates listed in full (default: max(K, 10))", false,
     NULL, 0, NULL},
    {"a2a-budget", 0, "T",
     "simulate no layout whose MoE all-to-alls start over T transfers an "
     "iteration (5e7: a minute to a few of one core); it keeps its estimate "
     "and its place among the K goes to the next; 0: no limit (default: 5e7)",
     false, NULL, 0, NULL},
    {"fix", 0, "KEY=V",
     "pin a dimension: tp pp dp mbs gbs vp sp recompute zero overlap first "
     "last cp ep etp dispatcher permute graphs fp8 offload a2a_overlap "
     "rank_capacity dtype fp8_attn cp_comm cp_a2a (repeatable, or a comma "
     "list; "
     "dispatcher=hybridep, rank_capacity, dtype=fp4 and fp8_attn=on "
     "are pinned, not searched)",
     true, NULL, 0, NULL},
    {"exclude", 0, "KEY=V",
     "drop a value of a dimension, e.g. recompute=none (repeatable)", true,
     NULL, 0, NULL},
    {"allow-cross-node-tp", 0, NULL, "let TP groups span servers", false, NULL,
     0, NULL},
    {"uneven", 0, NULL,
     "also try uneven pipeline splits (fewer or more layers on the first and "
     "last stages; the embedding and the loss counted as layers)",
     false, NULL, 0, NULL},
    {"memory-reserve", 0, "F", "HBM kept free, e.g. 10% or 0.1 (default: 10%)",
     false, NULL, 0, NULL},
    {"objective", 0, "O",
     "time (iteration) | train (time to train, needs --tokens) | cost "
     "(default: time)",
     false, NULL, 0, NULL},
    {"tokens", 0, "T",
     "training tokens, e.g. 300e9: adds days (and cost per trained model)",
     false, NULL, 0, NULL},
    {"deadline", 0, "DAYS",
     "with --tokens: layouts that train in more days rank after those that "
     "meet it (the cost objective's cheapest is otherwise the slowest)",
     false, NULL, 0, NULL},
    {"fidelity", 0, "F", "network model of the simulations (default: flow):",
     false, &pp_reg_fidelity, 0, NULL},
    {"optimizer", 0, "OPT",
     "optimizer, for the memory of model states and the step (launch "
     "lines ask for it; default: adam-mixed):",
     false, &pp_reg_optimizer, 0, NULL},
    {"profile", 0, "P",
     "GPU profile: YAML file or a name in topologies/profiles/ (default: the "
     "GPU's)",
     false, NULL, 0, NULL},
    {"stack", 0, "NAME",
     "software stack (podplan list stacks) or a YAML file (default: "
     "the one the launch --format runs, else the GPU's: megatron-lm-2021 "
     "for A100 and older, megatron-core-2024 for H100 and newer)",
     false, NULL, 0, NULL},
    {"amortization", 0, "YEARS", "capital cost spread over (default: 4)", false,
     NULL, 0, NULL},
    {"usd-per-kwh", 0, "X", "electricity price (default: 0.10)", false, NULL, 0,
     NULL},
    {"pue", 0, "X", "power usage effectiveness (default: 1.3)", false, NULL, 0,
     NULL},
    {"placement", 0, "ORDER",
     "pin the rank order, innermost first: tp,pp,dp (Megatron-LM with "
     "--use-tp-pp-dp-mapping) or tp,dp,pp (Megatron-LM's own, DeepSpeed's and "
     "NeMo 2.0's only) (default: both searched; tp,dp,pp with --format "
     "deepspeed|nemo2)",
     false, NULL, 0, NULL},
    {"seed", 0, "N", "seed of the ECMP hash in the simulations (default: 0)",
     false, NULL, 0, NULL},
    {"jobs", 'j', "N",
     "simulations run at once (default: one per CPU; the result is the same)",
     false, NULL, 0, NULL},
    {"no-timing", 0, NULL,
     "leave wall-clock figures out, for byte-identical output", false, NULL, 0,
     NULL},
    {"quiet", 'q', NULL,
     "no progress line on stderr (it is shown only on a terminal)", false, NULL,
     0, NULL},
    {"format", 0, "FMT",
     "table|json|yaml|megatron|nemo|deepspeed|nemo2 (default: table)", false,
     NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

static const char *const objective_names[] = {"time", "train", "cost", NULL};

/* "10%" or "0.1". */
static int parse_fraction(const char *name, const char *v, double *out,
                          pp_error *e) {
    char *end;
    double x = strtod(v, &end);
    if (end != v && *end == '%' && end[1] == '\0')
        x /= 100.0;
    else if (end == v || *end != '\0')
        x = NAN;
    if (!(x >= 0 && x < 1))
        return pp_error_set(e, PP_EUSAGE,
                            "--%s: expected a fraction such as 10%% or 0.1, "
                            "got \"%s\"",
                            name, v);
    *out = x;
    return 0;
}

static int parse_number(const char *name, const char *v, double min,
                        double *out, pp_error *e) {
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v) return 0;
    if (end == v || *end != '\0' || !(x >= min) || !isfinite(x))
        return pp_error_set(e, PP_EUSAGE,
                            "--%s: expected a number of at least %g, got "
                            "\"%s\"",
                            name, min, v);
    *out = x;
    return 0;
}

/* Whether stack st runs launch format f ("megatron", ...). */
static bool launches(const pp_stack *st, const char *f) {
    for (size_t i = 0; i < st->n_launch; i++)
        if (strcmp(st->launch[i], f) == 0) return true;
    return false;
}

/* A launch format runs a stack that launches it: --stack must, and
 * without --stack the GPU's default when it does, else the format's own
 * stack of the GPU's era. */
static int pick_stack(const pp_args *a, pp_plan_format fmt,
                      const pp_gpu_spec *gpu, const char **out, pp_error *e) {
    static const char *const fnames[PP_PLAN_FMT__COUNT] = {
        [PP_PLAN_FMT_MEGATRON] = "megatron",
        [PP_PLAN_FMT_NEMO] = "nemo",
        [PP_PLAN_FMT_DEEPSPEED] = "deepspeed",
        [PP_PLAN_FMT_NEMO2] = "nemo2"};
    const char *f = (unsigned)fmt < PP_PLAN_FMT__COUNT ? fnames[fmt] : NULL;
    const char *given = pp_args_get(a, "stack");
    *out = given;
    if (!f) return 0;
    pp_stack st;
    const char *def = pp_stack_default_name(gpu);
    int rc = pp_stack_load(given ? given : def, &st, e);
    if (rc < 0) return rc;
    if (launches(&st, f)) return 0;
    if (given)
        return pp_error_set(e, PP_EUSAGE,
                            "--stack %s does not run --format %s (its "
                            "launch: lists the formats it runs)",
                            given, f);
    bool newer = strcmp(def, "megatron-lm-2021") != 0;
    *out = strcmp(f, "deepspeed") == 0
               ? (newer ? "deepspeed-2024" : "deepspeed-zero-2021")
               : "nemo-2024";
    return 0;
}

/* The simulations' progress on stderr (a terminal only): a bar, the
 * count and the layout just simulated, overwritten in place. */
typedef struct bar {
    bool open; /* a line is on the terminal without its newline */
} bar;

static void progress(void *ctx, size_t done, size_t total,
                     const pp_parallel *par) {
    bar *b = ctx;
    char spec[PP_SPEC_MAX];
    int w = 30, f = total ? (int)(w * done / total) : w;
    if (f > w) f = w;
    fprintf(stderr, "\rsimulated [%.*s%*s] %zu/%zu %-60.60s", f,
            "##############################", w - f, "", done, total,
            pp_parallel_format(par, spec, sizeof spec));
    b->open = done < total;
    if (!b->open) fputc('\n', stderr);
    fflush(stderr);
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    pp_model m;
    pp_cluster *c = NULL;
    pp_plan *plan = NULL;
    pp_plan_options o;
    pp_plan_prices prices;
    pp_gpu_profile prof;
    const char *mspec, *cspec, *fixes[64];
    int fmt = PP_PLAN_FMT_TABLE, obj = PP_PLAN_OBJ_TIME;
    int fid = PP_FIDELITY_FLOW, optz = PP_OPT_ADAM_MIXED;
    int64_t top = 10, show = -1, seed = 0, jobs = 0;
    double amort = 4, kwh = 0.10, pue = 1.3;
    int rc;

    pp_plan_options_init(&o);
    rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "model", &mspec, &e) ||
        pp_args_need(&a, "cluster", &cspec, &e) ||
        pp_args_int(&a, "gpus", 1, INT64_MAX, &o.gpus, &e) ||
        pp_args_int(&a, "global-batch", 1, INT64_MAX, &o.gbs, &e) ||
        pp_args_int(&a, "top", 0, 100000, &top, &e) ||
        pp_args_int(&a, "show", 1, 1000000, &show, &e) ||
        pp_args_int(&a, "seed", 0, INT64_MAX, &seed, &e) ||
        pp_args_int(&a, "jobs", 1, 1024, &jobs, &e) ||
        pp_args_enum(&a, "objective", objective_names, &obj, &e) ||
        pp_args_choice(&a, "fidelity", &fid, &e) ||
        pp_args_choice(&a, "optimizer", &optz, &e) ||
        pp_args_enum(&a, "format", pp_plan_format_names, &fmt, &e) ||
        parse_number("amortization", pp_args_get(&a, "amortization"), 1e-9,
                     &amort, &e) ||
        parse_number("usd-per-kwh", pp_args_get(&a, "usd-per-kwh"), 0, &kwh,
                     &e) ||
        parse_number("pue", pp_args_get(&a, "pue"), 1, &pue, &e) ||
        parse_number("deadline", pp_args_get(&a, "deadline"), 1e-9,
                     &o.deadline_days, &e))
        return pp_cli_fail(cmd->name, &e);
    if (pp_args_get(&a, "memory-reserve") &&
        parse_fraction("memory-reserve", pp_args_get(&a, "memory-reserve"),
                       &o.memory_reserve, &e))
        return pp_cli_fail(cmd->name, &e);
    const char *budget = pp_args_get(&a, "a2a-budget");
    if (budget && strcmp(budget, "0") == 0)
        o.a2a_budget = 0; /* no limit */
    else if (budget && pp_args_quantity(&a, "a2a-budget", PP_Q_COUNT, NULL,
                                        &o.a2a_budget, &e))
        return pp_cli_fail(cmd->name, &e);
    if (pp_args_get(&a, "tokens")) {
        if (pp_args_quantity(&a, "tokens", PP_Q_COUNT, NULL, &o.tokens, &e))
            return pp_cli_fail(cmd->name, &e);
    }
    size_t n_fix = pp_args_all(&a, "fix", fixes, 64);
    for (size_t i = 0; i < n_fix; i++)
        if (pp_plan_filter_add(&o.filter, fixes[i], false, "--fix", &e))
            return pp_cli_fail(cmd->name, &e);
    n_fix = pp_args_all(&a, "exclude", fixes, 64);
    for (size_t i = 0; i < n_fix; i++)
        if (pp_plan_filter_add(&o.filter, fixes[i], true, "--exclude", &e))
            return pp_cli_fail(cmd->name, &e);
    if (o.deadline_days > 0 && !(o.tokens > 0)) {
        pp_error_set(&e, PP_EUSAGE, "--deadline needs --tokens (the days "
                                    "are those of training on them)");
        return pp_cli_fail(cmd->name, &e);
    }
    o.top = (int)top;
    o.show = (int)show;
    o.seed = (uint64_t)seed;
    o.jobs = (int)jobs;
    /* A terminal sees the simulations advance: they can take minutes. */
    bar pb = {false};
    if (!pp_args_flag(&a, "quiet") && isatty(2)) {
        o.progress = progress;
        o.progress_ctx = &pb;
    }
    o.objective = (pp_plan_objective)obj;
    o.fidelity = (pp_fidelity)fid;
    o.optimizer = (pp_optimizer)optz;
    const char *pl = pp_args_get(&a, "placement");
    if (pl) {
        char order[3];
        /* The planner says which orders it can estimate and which ones a
         * launch format can run. */
        if (pp_placement_parse(pl, order, &e))
            return pp_cli_fail(cmd->name, &e);
        memcpy(o.placement, order, 3);
    }
    o.allow_cross_node_tp = pp_args_flag(&a, "allow-cross-node-tp");
    o.uneven = pp_args_flag(&a, "uneven");
    /* A launch format limits the search to what it can express. */
    o.target = pp_plan_format_target((pp_plan_format)fmt);

    if ((rc = pp_cli_load_model(&a, false, &m, &e)) < 0 ||
        (rc = pp_cli_load_cluster(&a, &c, &e)) < 0)
        goto out;
    const pp_cluster_info *info = pp_cluster_info_get(c);
    /* The planner's default batch, said out loud: a silent one sequence
     * per GPU surprised users comparing with their own runs. */
    if (o.gbs == 0 && !o.filter.fixed[PP_PLAN_DIM_GBS])
        pp_cli_note(&a,
                    "no --global-batch; using gbs=%lld (one sequence "
                    "per GPU of %s%s %lld)",
                    (long long)(o.gpus ? o.gpus : info->gpus),
                    o.gpus ? "--gpus" : info->name, o.gpus ? "" : "'s",
                    (long long)(o.gpus ? o.gpus : info->gpus));
    /* The stack: --stack, else the one the launch format runs, else the
     * GPU's default; stated in every output. */
    const char *sname = NULL;
    if ((rc = pick_stack(&a, (pp_plan_format)fmt, info->gpu, &sname, &e)) < 0)
        goto out;
    if ((rc = pp_cli_load_profile_stack(&a, info->gpu, sname, &prof, NULL,
                                        &e)) < 0)
        goto out;
    o.profile = &prof;
    if ((rc = pp_plan_prices_get(c, amort, kwh, pue, &prices, &e)) < 0)
        goto out;
    o.prices = &prices;
    rc = pp_plan_search(&m, c, &o, &plan, &e);
    if (pb.open) fputc('\n', stderr); /* fewer ran than were planned */
    if (rc < 0) goto out;

    pp_outfile of;
    if ((rc = pp_outfile_open(&of, pp_args_get(&a, "output"), &e)) < 0)
        goto out;
    if ((rc = pp_plan_write(plan, (pp_plan_format)fmt,
                            !pp_args_flag(&a, "no-timing"), of.fp, &e)) < 0)
        pp_outfile_abort(&of);
    else
        rc = pp_outfile_commit(&of, &e);
    /* What the launch format cannot say itself (DeepSpeed's JSON). */
    if (rc == 0)
        pp_plan_write_assumptions(plan, (pp_plan_format)fmt,
                                  "podplan plan: assumed: ", stderr);
out:
    pp_plan_free(plan);
    pp_cluster_free(c);
    return rc < 0 ? pp_cli_fail(cmd->name, &e) : 0;
}

const pp_cli_cmd pp_cmd_plan = {
    "plan",
    "search every parallel layout, rank by simulation, emit launch configs",
    "plan --model M --cluster C [--gpus N] [--global-batch B] [--top K] "
    "[--fix KEY=V]... [--exclude KEY=V]... [--objective time|train|cost] "
    "[--tokens T] [--placement tp,pp,dp|tp,dp,pp] [--stack NAME] "
    "[--format table|json|yaml|megatron|nemo|deepspeed|nemo2] [-o FILE]",
    "Every layout Megatron-LM could launch is enumerated: TP (dividing the\n"
    "heads and K/V heads, inside a server unless --allow-cross-node-tp), PP\n"
    "(dividing the layers), DP = GPUs / (TP x PP) (dividing the batch), the\n"
    "micro-batch, interleaving vp (layers divisible by PP x vp, micro-batches\n"
    "by PP, PP > 2), sequence parallelism (TP > 1), recomputation, ZeRO 0-3\n"
    "and DP overlap (DP > 1); with --uneven also pipeline splits whose first\n"
    "and last stages hold one or two chunks of layers fewer or more (first=,\n"
    "last= in the SPEC; Megatron-LM's --decoder-first/last-pipeline-num-\n"
    "layers), which balance the embedding and the logits those stages add,\n"
    "and the split that counts the embedding and the loss as a layer each\n"
    "(Megatron-core's --account-for-embedding/loss-in-pipeline-split; a PP\n"
    "or vp dividing layers + 2 then qualifies; for a model with multi-token\n"
    "prediction also with its MTP layers counted, layers + 2 + mtp_layers, as\n"
    "NVIDIA's DeepSeek-V3 layout Et|(tt|)*30mL; layout= in the SPEC).\n"
    "Layouts that do not fit in HBM less the reserve are counted and\n"
    "dropped; the rest are scored in closed form and\n"
    "the best K simulated (podplan simulate) and ranked by the simulation.\n"
    "The launch formats restrict the search to what they can express\n"
    "(Megatron-LM and NeMo: ZeRO 0 or 1; DeepSpeed: ZeRO 2 and 3 only\n"
    "without pipelining, no interleaving, no sequence parallelism,\n"
    "recomputation full or none, what it assumed on stderr).\n"
    "Cost: the cluster's catalogue prices amortised over --amortization\n"
    "years plus power at --usd-per-kwh x --pue, per GPU-hour, times the\n"
    "GPUs a layout uses and its time (per iteration, or per trained model\n"
    "with --tokens).  Exit 1 when nothing fits: the message names the\n"
    "closest layout, its shortfall and what would make it fit.\n"
    "The rank order is searched too: TP innermost, then PP, then DP\n"
    "(pipeline neighbours on adjacent servers), or Megatron-LM's own TP, DP,\n"
    "PP; each candidate says which (the ranks column), and the megatron and\n"
    "nemo formats ask for TP, PP, DP where it is chosen and matters\n"
    "(--use-tp-pp-dp-mapping, use_tp_pp_dp_mapping).  --placement pins one;\n"
    "DeepSpeed's pipeline engine and NeMo 2.0 run tp,dp,pp only.",
    opts,
    run,
};
