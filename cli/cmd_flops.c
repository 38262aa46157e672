/*
 * cmd_flops.c: `podplan flops`, F_iter for a model and a global batch.
 */
#include <string.h>

#include "cli_int.h"

static const pp_cli_opt opts[] = {
    {"model", 'm', "M", "model: YAML file, zoo name or inline spec (required)",
     false, NULL, 0, NULL},
    {"global-batch", 'b', "B", "global batch in sequences (required)", false,
     NULL, 0, NULL},
    {"recompute", 0, "MODE",
     "activation recomputation (default: full), or Megatron-core's modules "
     "joined by '+' (core_attn, layernorm, moe_act, mlp, moe, "
     "shared_experts, mla_up_proj):",
     false, &pp_reg_recompute, 0, NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

typedef struct result {
    pp_model m;
    int64_t batch;
    pp_recompute rc;
    uint8_t mods; /* recompute modules (PP_RECOMP_*): their GEMMs added */
    bool closed;  /* F_iter by the closed form, not counted */
    pp_flops f;
} result;

static void print_table(FILE *fp, const void *ctx) {
    const result *r = ctx;
    const pp_flops *f = &r->f;
    fprintf(fp, "model        %s (%s parameters)\n", r->m.name,
            pp_fmtq(pp_model_params(&r->m), PP_Q_COUNT));
    if (r->m.arch == PP_ARCH_TRANSFORMER)
        fprintf(fp, "batch        %lld sequences x %lld tokens\n",
                (long long)r->batch, (long long)r->m.seq);
    else
        fprintf(fp, "batch        %lld samples\n", (long long)r->batch);
    char rm[64];
    fprintf(fp, "recompute    %s\n",
            pp_recompute_format(r->rc, r->mods, rm, sizeof rm));
    bool none = r->rc != PP_RECOMPUTE_FULL; /* the 72 form */
    if (r->closed)
        fprintf(fp, "\nF_iter = %s B s l h^2 (1 + s/(6h) + %s)%s%s\n\n",
                none ? "72" : "96", none ? "V/(12lh)" : "V/(16lh)",
                r->rc == PP_RECOMPUTE_SELECTIVE ? " + attention recompute" : "",
                r->mods ? " + recomputed modules' GEMMs" : "");
    else
        fprintf(fp, "\nF_iter counted matrix by matrix (the closed form "
                    "needs a GPT shape)\n\n");
    if (r->m.arch == PP_ARCH_TRANSFORMER) {
        const char *dense = r->closed ? "dense: 1" : "dense: GEMMs";
        const char *attn = r->closed ? "attention: s/(6h)" : "attention core";
        const char *logit = !r->closed ? "logit: output layer"
                            : none     ? "logit: V/(12lh)"
                                       : "logit: V/(16lh)";
        fprintf(fp, "  %-28s %14s %10s\n", "term", "FLOP", "share");
        fprintf(fp, "  %-28s %14.4e %10.5f\n", dense, f->dense,
                f->dense / f->total);
        fprintf(fp, "  %-28s %14.4e %10.5f\n", attn, f->attn,
                f->attn / f->total);
        fprintf(fp, "  %-28s %14.4e %10.5f\n", logit, f->logit,
                f->logit / f->total);
    }
    if (r->mods)
        fprintf(fp, "  %-28s %14.4e\n", "recomputed modules' GEMMs",
                f->total - f->dense - f->attn - f->logit);
    fprintf(fp, "  %-28s %14.4e\n", "F_iter", f->total);
    fprintf(fp, "  %-28s %14.4e\n", "model FLOPs (no recompute)", f->model);
}

static json_t *to_json(const result *r) {
    const pp_flops *f = &r->f;
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(r->m.name));
    json_object_set_new(o, "params", pp_json_num(pp_model_params(&r->m)));
    json_object_set_new(o, "global_batch", json_integer(r->batch));
    if (r->m.arch == PP_ARCH_TRANSFORMER)
        json_object_set_new(o, "seq", json_integer(r->m.seq));
    char rm[64];
    json_object_set_new(
        o, "recompute",
        json_string(pp_recompute_format(r->rc, r->mods, rm, sizeof rm)));
    json_object_set_new(o, "method",
                        json_string(r->closed ? "closed-form" : "counted"));
    json_object_set_new(o, "flops_per_iteration", pp_json_num(f->total));
    if (r->m.arch == PP_ARCH_TRANSFORMER) {
        json_t *t = json_object();
        json_object_set_new(t, "dense", pp_json_num(f->dense));
        json_object_set_new(t, "attention", pp_json_num(f->attn));
        json_object_set_new(t, "logit", pp_json_num(f->logit));
        if (r->mods)
            json_object_set_new(
                t, "recompute_modules",
                pp_json_num(f->total - f->dense - f->attn - f->logit));
        json_object_set_new(o, "terms", t);
    }
    json_object_set_new(o, "model_flops_per_iteration", pp_json_num(f->model));
    return o;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    result r = {.rc = PP_RECOMPUTE_FULL};
    const char *spec;
    int mode = PP_RECOMPUTE_FULL, fmt = PP_FMT_TABLE;

    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_need(&a, "model", &spec, &e) ||
        pp_args_need(&a, "global-batch", &(const char *){0}, &e) ||
        pp_args_int(&a, "global-batch", 1, INT64_MAX, &r.batch, &e) ||
        pp_args_enum(&a, "format", pp_format_names, &fmt, &e) ||
        pp_cli_load_model(&a, false, &r.m, &e))
        return pp_cli_fail(cmd->name, &e);
    r.rc = (pp_recompute)mode;
    /* A mode, or modules as the SPEC's recompute= takes them. */
    const char *rv = pp_args_get(&a, "recompute");
    pp_error pe = PP_ERROR_INIT;
    if (rv && pp_recompute_parse(rv, &r.rc, &r.mods, &pe) < 0) {
        /* A single misspelt mode gets the registry's "did you mean"; a
         * module refused by name keeps its reason. */
        if (!strchr(rv, '+') && !strstr(pe.msg, "module ") &&
            pp_args_choice(&a, "recompute", &mode, &e))
            return pp_cli_fail(cmd->name, &e);
        e = pe;
        pp_error_prefix(&e, "--recompute");
        e.code = PP_EUSAGE;
        return pp_cli_fail(cmd->name, &e);
    }
    if (pp_recompute_check(&r.m, r.rc, r.mods, &e)) {
        /* "recompute: ..." names the option. */
        char msg[PP_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", e.msg);
        e.code = 0;
        pp_error_set(&e, PP_EUSAGE, "--%.900s", msg);
        return pp_cli_fail(cmd->name, &e);
    }

    /* The closed form where the model has its shape (GPT: MHA, 4h GeLU
     * MLP); otherwise the matrix-by-matrix count, which equals it there. */
    pp_error not_gpt = PP_ERROR_INIT;
    r.closed = pp_flops_closed(&r.m, r.batch, r.rc, &r.f, &not_gpt) == 0;
    if (!r.closed && pp_flops_count(&r.m, r.batch, r.rc, &r.f, &e))
        return pp_cli_fail(cmd->name, &e);
    r.f.total += pp_flops_recompute_mods(&r.m, r.batch, r.mods);
    return pp_cli_emit(&a, fmt, to_json(&r), print_table, &r);
}

const pp_cli_cmd pp_cmd_flops = {
    "flops",
    "FLOPs per training iteration (F_iter) of a model at a global batch",
    "flops --model M --global-batch B [--recompute MODE] "
    "[--format table|json] [-o FILE]",
    "F_iter = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full activation\n"
    "recomputation (Narayanan et al. 2021).  For models without that shape\n"
    "(GQA, SwiGLU, generic) the FLOPs are counted matrix by matrix.",
    opts,
    run,
};
