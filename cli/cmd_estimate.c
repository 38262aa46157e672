/*
 * cmd_estimate.c: `podplan estimate`, time to train by T_train = 8TP/(nX),
 * or by iterations x F_iter / (nX).
 */
#include "cli_int.h"

#include <math.h>

static const pp_cli_opt opts[] = {
    {"model", 'm', "M", "model (gives P, and F_iter with --iterations)", false,
     NULL, 0, NULL},
    {"params", 0, "P", "parameter count instead of a model, e.g. 175e9 or 175B",
     false, NULL, 0, NULL},
    {"tokens", 't', "T", "training tokens, e.g. 300e9, 300G or 300B", false,
     NULL, 0, NULL},
    {"iterations", 0, "I",
     "iterations instead of tokens (needs --model, --global-batch)", false,
     NULL, 0, NULL},
    {"global-batch", 'b', "B", "global batch in sequences, with --iterations",
     false, NULL, 0, NULL},
    {"gpus", 'n', "N", "number of GPUs (required)", false, NULL, 0, NULL},
    {"tflops", 'x', "X",
     "achieved FLOP/s per GPU; bare numbers are TFLOPS (required)", false, NULL,
     0, NULL},
    {"recompute", 0, "MODE",
     "activation recomputation: none gives 6TP, the others 8TP (default: "
     "full):",
     false, &pp_reg_recompute, 0, NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

typedef struct result {
    const char *model; /* NULL with --params */
    double params, tokens, gpus, flops_per_gpu;
    int64_t iterations, batch;
    double total_flops;
    bool recompute;
    double seconds;
} result;

#define DAY_S 86400.0
#define YEAR_S (365.0 * DAY_S)

static void print_table(FILE *fp, const void *ctx) {
    const result *r = ctx;
    if (r->iterations) {
        fprintf(fp, "T = iterations x F_iter / (n X)\n\n");
        fprintf(fp, "  model            %s\n", r->model);
        fprintf(fp, "  iterations       %lld x %s per iteration\n",
                (long long)r->iterations,
                pp_fmtq(r->total_flops / (double)r->iterations, PP_Q_FLOPS));
    } else {
        fprintf(fp, "T_train = %d T P / (n X)\n\n", r->recompute ? 8 : 6);
        if (r->model) fprintf(fp, "  model            %s\n", r->model);
        fprintf(fp, "  P parameters     %s\n", pp_fmtq(r->params, PP_Q_COUNT));
        fprintf(fp, "  T tokens         %s\n", pp_fmtq(r->tokens, PP_Q_COUNT));
    }
    fprintf(fp, "  total compute    %s\n", pp_fmtq(r->total_flops, PP_Q_FLOPS));
    fprintf(fp, "  n GPUs           %.0f\n", r->gpus);
    fprintf(fp, "  X per GPU        %s\n",
            pp_fmtq(r->flops_per_gpu, PP_Q_FLOPRATE));
    fprintf(fp, "\n  time to train    %.1f days", r->seconds / DAY_S);
    if (r->seconds >= YEAR_S) fprintf(fp, " (%.1f years)", r->seconds / YEAR_S);
    fputc('\n', fp);
}

static json_t *to_json(const result *r) {
    json_t *o = json_object();
    json_object_set_new(o, "model",
                        r->model ? json_string(r->model) : json_null());
    json_object_set_new(o, "method",
                        json_string(r->iterations  ? "iterations"
                                    : r->recompute ? "8TP/nX"
                                                   : "6TP/nX"));
    json_object_set_new(o, "params", pp_json_num(r->params));
    if (r->iterations) {
        json_object_set_new(o, "iterations", json_integer(r->iterations));
        json_object_set_new(o, "global_batch", json_integer(r->batch));
    } else {
        json_object_set_new(o, "tokens", pp_json_num(r->tokens));
    }
    json_object_set_new(o, "gpus", pp_json_num(r->gpus));
    json_object_set_new(o, "flops_per_gpu", pp_json_num(r->flops_per_gpu));
    json_object_set_new(o, "total_flops", pp_json_num(r->total_flops));
    json_object_set_new(o, "training_s", pp_json_num(r->seconds));
    json_object_set_new(o, "training_days", pp_json_num(r->seconds / DAY_S));
    json_object_set_new(o, "training_years", pp_json_num(r->seconds / YEAR_S));
    return o;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    result r = {0};
    pp_model m;
    int64_t gpus = 0;
    int mode = PP_RECOMPUTE_FULL, fmt = PP_FMT_TABLE;
    const char *spec = NULL;

    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "gpus", &(const char *){0}, &e) ||
        pp_args_int(&a, "gpus", 1, INT64_MAX, &gpus, &e) ||
        pp_args_need(&a, "tflops", &(const char *){0}, &e) ||
        pp_args_quantity(&a, "tflops", PP_Q_FLOPRATE, "TFLOPS",
                         &r.flops_per_gpu, &e) ||
        pp_args_quantity(&a, "params", PP_Q_COUNT, NULL, &r.params, &e) ||
        pp_args_quantity(&a, "tokens", PP_Q_COUNT, NULL, &r.tokens, &e) ||
        pp_args_int(&a, "iterations", 1, INT64_MAX, &r.iterations, &e) ||
        pp_args_int(&a, "global-batch", 1, INT64_MAX, &r.batch, &e) ||
        pp_args_choice(&a, "recompute", &mode, &e) ||
        pp_args_enum(&a, "format", pp_format_names, &fmt, &e))
        return pp_cli_fail(cmd->name, &e);
    /* T_train has only the two constants: selective counts as full (the
     * extra attention forward is a fraction of a percent). */
    r.recompute = mode != PP_RECOMPUTE_NONE;
    r.gpus = (double)gpus;
    spec = pp_args_get(&a, "model");
    if (spec && pp_args_get(&a, "params")) {
        pp_error_set(&e, PP_EUSAGE, "give --model or --params, not both");
        return pp_cli_fail(cmd->name, &e);
    }
    if (spec) {
        if (pp_cli_load_model(&a, false, &m, &e))
            return pp_cli_fail(cmd->name, &e);
        r.model = m.name;
        r.params = pp_model_params(&m);
    }
    if (r.iterations) {
        pp_flops f;
        if (!spec || !r.batch || pp_args_get(&a, "tokens")) {
            pp_error_set(&e, PP_EUSAGE,
                         "--iterations needs --model and "
                         "--global-batch, and no --tokens");
            return pp_cli_fail(cmd->name, &e);
        }
        if (pp_flops_count(&m, r.batch, (pp_recompute)mode, &f, &e))
            return pp_cli_fail(cmd->name, &e);
        r.total_flops = f.total * (double)r.iterations;
        r.seconds = r.total_flops / (r.gpus * r.flops_per_gpu);
    } else {
        if (!r.params || !r.tokens) {
            pp_error_set(&e, PP_EUSAGE,
                         "give --tokens and one of --model or "
                         "--params (or --iterations with --model)");
            return pp_cli_fail(cmd->name, &e);
        }
        r.seconds = pp_train_time_s(r.tokens, r.params, r.gpus, r.flops_per_gpu,
                                    r.recompute);
        r.total_flops = r.seconds * r.gpus * r.flops_per_gpu;
    }
    return pp_cli_emit(&a, fmt, to_json(&r), print_table, &r);
}

const pp_cli_cmd pp_cmd_estimate = {
    "estimate",
    "time to train: T_train = 8 T P / (n X), or iterations x F_iter / (n X)",
    "estimate (--model M | --params P) --tokens T --gpus N --tflops X\n"
    "       podplan estimate --model M --iterations I --global-batch B --gpus "
    "N --tflops X",
    "T_train ~= 8 T P / (n X) with activation recomputation, 6 T P / (n X)\n"
    "without (Narayanan et al. 2021).  Example: GPT-3 175B, 300e9 tokens,\n"
    "1040 A100 at 140 TFLOP/s:  podplan estimate --params 175e9 --tokens "
    "300e9\n"
    "--gpus 1040 --tflops 140   (33.4 days)",
    opts,
    run,
};
