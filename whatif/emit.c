/*
 * whatif/emit.c: a study's results as a table, CSV or JSON.
 *
 * Money is printed as money ("$1,234,567", "$4.95M"), never in exponent
 * form; the JSON keeps plain dollars (usd in the key names) for scripts.
 * Nothing here depends on the wall clock, so a study gives the same bytes
 * every run and under any number of MPI ranks.
 */
#include "whatif_int.h"

#include <jansson.h>
#include <string.h>

const char *const pp_whatif_format_names[] = {"table", "csv", "json", NULL};

static const char *const level_names[PP_WI_LEVELS] = {"leaf", "spine", "core"};
static const char *const cable_names[PP_WI_CABLE_KINDS] = {"host", "fabric"};

static const char *money(double usd, char *buf, size_t len) {
    return pp_whatif_money(usd, buf, len);
}

static const char *flags(const pp_whatif_result *x, char *buf, size_t len) {
    snprintf(buf, len, "%s%s%s%s", x->pareto ? "*" : "",
             x->meets_deadline ? "" : " late", x->within_budget ? "" : " $$",
             x->within_power ? "" : " W");
    return buf;
}

static void header(const pp_whatif_study *s, FILE *fp) {
    char b[32];
    fprintf(fp, "study: %s (%zu variants)\n", s->name, s->n_variants);
    if (s->description) fprintf(fp, "%s\n", s->description);
    fprintf(fp, "model %s on %s, %.4g tokens, ", s->model, s->cluster,
            s->tokens);
    if (s->gbs > 0)
        fprintf(fp, "global batch %lld", (long long)s->gbs);
    else
        fprintf(fp, "%.4g tokens per batch", s->tokens_per_batch);
    fprintf(fp, ", stack %s\n", s->stack ? s->stack : "(not given)");
    fprintf(fp, "layout: %s\n",
            s->parallel ? s->parallel
                        : "the planner's best per variant (ranked by "
                          "iteration time)");
    if (s->prices.rent_usd_per_gpu_hour > 0)
        fprintf(fp, "cost: rented at $%.2f per GPU-hour\n",
                s->prices.rent_usd_per_gpu_hour);
    else
        fprintf(fp,
                "cost: capital amortised over %g years, power at $%.3f/kWh x "
                "PUE %g\n",
                s->prices.amortization_years, s->prices.usd_per_kwh,
                s->prices.pue);
    if (s->failures.enabled)
        fprintf(fp,
                "failures: Llama 3 rates unless given (sec. 3.3.4), restart "
                "%.0f min, repair %.1f h, checkpoints at Daly's optimum\n",
                s->failures.restart_s / 60, s->failures.repair_s / 3600);
    else
        fprintf(fp, "failures: off\n");
    if (s->deadline_s > 0 || s->budget_usd > 0 || s->power_cap_w > 0) {
        fprintf(fp, "constraints:");
        if (s->deadline_s > 0)
            fprintf(fp, " deadline %g days", s->deadline_s / 86400);
        if (s->budget_usd > 0)
            fprintf(fp, " budget %s", money(s->budget_usd, b, sizeof b));
        if (s->power_cap_w > 0)
            fprintf(fp, " power %.3g MW", s->power_cap_w / 1e6);
        fputc('\n', fp);
    }
}

static void write_table(const pp_whatif_study *s, const pp_whatif_result *r,
                        size_t n, FILE *fp) {
    char m1[32], m2[32], m3[32], f[32];
    header(s, fp);
    fputc('\n', fp);
    fprintf(fp, "%3s  %-30s %-46s %6s %8s %6s %7s %8s %8s %7s %7s %12s %12s "
                "%12s %10s %7s  %s\n",
            "#", "variant", "layout", "GPUs", "iter s", "ratio", "speedup", "days",
            "days+f", "goodput", "ckpt h", "capital", "capex saved",
            "cost/model", "tokens/$", "MW", "front");
    for (size_t i = 0; i < n; i++) {
        const pp_whatif_result *x = &r[i];
        if (x->status) {
            fprintf(fp, "%3zu  %-34s no feasible layout: %s\n", i + 1,
                    x->label, x->error);
            continue;
        }
        double saved = r[0].status == 0
                           ? r[0].cost.capex_usd - x->cost.capex_usd
                           : NAN;
        fprintf(fp,
                "%3zu  %-30s %-46s %6lld %8.3f %6.2f %7.2f %8.1f %8.1f %6.1f%% "
                "%7.2f %12s %12s %12s %10.0f %7.2f  %s\n",
                i + 1, x->label, x->parallel, (long long)x->gpus,
                x->iteration_time_s, x->ratio, x->speedup, x->ideal_days,
                x->expected_days, 100 * x->fail.goodput,
                isfinite(x->fail.interval_s) ? x->fail.interval_s / 3600 : 0,
                money(x->cost.capex_usd, m1, sizeof m1),
                money(saved, m2, sizeof m2),
                money(x->cost.total_usd, m3, sizeof m3), x->tokens_per_usd,
                x->cost.facility_w / 1e6, flags(x, f, sizeof f));
    }
    fputs("\n(ratio: iteration time against variant 1; speedup: variant 1's "
          "days over this one's;\n days: failure-free; days+f: expected with "
          "failures, checkpoints and restarts;\n ckpt h: checkpoint interval; "
          "capex saved: against variant 1; cost/model: amortised\n capital + "
          "energy, or rent, over days+f; MW: facility power; front: * on "
          "the\n Pareto front of (days+f, cost/model); late/$$/W: misses the "
          "deadline/budget/power cap)\n",
          fp);
    fprintf(fp, "\ncapital by item:\n%3s  %-30s %17s %17s %17s", "#",
            "variant", "servers", "GPUs", "HCAs");
    for (int l = 0; l < PP_WI_LEVELS; l++)
        fprintf(fp, " %17s", level_names[l]);
    for (int l = 0; l < PP_WI_CABLE_KINDS; l++)
        fprintf(fp, " %17s", cable_names[l]);
    fputc('\n', fp);
    for (size_t i = 0; i < n; i++) {
        const pp_whatif_cost *k = &r[i].cost;
        if (r[i].status) continue;
        char cell[64], mm[32];
#define CELL(cnt, usd)                                                         \
    (snprintf(cell, sizeof cell, "%.0f %s", (cnt), money((usd), mm, sizeof mm)), \
     cell)
        fprintf(fp, "%3zu  %-30s", i + 1, r[i].label);
        fprintf(fp, " %17s", CELL(k->nodes, k->servers_total_usd));
        fprintf(fp, " %17s", CELL(k->gpus, k->gpus_total_usd));
        fprintf(fp, " %17s", CELL(k->hcas, k->hcas_total_usd));
        for (int l = 0; l < PP_WI_LEVELS; l++)
            fprintf(fp, " %17s", CELL(k->switches[l], k->switches_total_usd[l]));
        for (int l = 0; l < PP_WI_CABLE_KINDS; l++)
            fprintf(fp, " %17s", CELL(k->cables[l], k->cables_total_usd[l]));
#undef CELL
        fprintf(fp, "%s\n", k->gpu_swapped ? "  (server priced with its "
                                             "GPUs swapped)"
                                           : "");
    }
}

/* CSV: one row per variant, plain numbers (dollars unformatted, so a
 * spreadsheet can sum them). */
static void csv_text(FILE *fp, const char *t) {
    fputc('"', fp);
    for (; *t; t++) {
        if (*t == '"') fputc('"', fp);
        fputc(*t, fp);
    }
    fputc('"', fp);
}

static void write_csv(const pp_whatif_result *r, size_t n, FILE *fp) {
    fputs("index,variant,status,parallel,gpus,iteration_time_s,ratio,speedup,"
          "training_days,expected_days,goodput,mtbf_s,checkpoint_bytes,"
          "checkpoint_s,checkpoint_interval_s,checkpoint_interval_young_s,"
          "restart_s,expected_failures,servers,gpus_bought,hcas,leaf,spine,"
          "core,host_cables,fabric_cables,servers_usd,gpus_usd,hcas_usd,"
          "leaf_usd,spine_usd,core_usd,host_cables_usd,fabric_cables_usd,"
          "capex_usd,it_power_w,facility_power_w,capital_usd,energy_usd,"
          "rent_usd,cost_usd,tokens_per_usd,meets_deadline,within_budget,"
          "within_power,pareto\n",
          fp);
    for (size_t i = 0; i < n; i++) {
        const pp_whatif_result *x = &r[i];
        const pp_whatif_cost *k = &x->cost;
        const pp_whatif_goodput *g = &x->fail;
        fprintf(fp, "%zu,", i + 1);
        csv_text(fp, x->label);
        fprintf(fp, ",%s,", x->status ? "infeasible" : "ok");
        csv_text(fp, x->parallel);
        fprintf(fp,
                ",%lld,%.9g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,"
                "%.6g",
                (long long)x->gpus, x->iteration_time_s, x->ratio,
                x->speedup, x->ideal_days, x->expected_days, g->goodput, g->mtbf_s,
                g->checkpoint_bytes, g->checkpoint_s, g->interval_s,
                g->interval_young_s, g->restart_s, g->failures);
        fprintf(fp, ",%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f", k->nodes,
                k->gpus, k->hcas, k->switches[0], k->switches[1],
                k->switches[2], k->cables[0], k->cables[1]);
        fprintf(fp, ",%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f",
                k->servers_total_usd, k->gpus_total_usd, k->hcas_total_usd,
                k->switches_total_usd[0], k->switches_total_usd[1],
                k->switches_total_usd[2], k->cables_total_usd[0],
                k->cables_total_usd[1], k->capex_usd);
        fprintf(fp, ",%.1f,%.1f,%.2f,%.2f,%.2f,%.2f,%.6g,%d,%d,%d,%d\n",
                k->it_power_w, k->facility_w, k->capital_usd, k->energy_usd,
                k->rent_usd, k->total_usd, x->tokens_per_usd,
                x->meets_deadline, x->within_budget, x->within_power,
                x->pareto);
    }
}

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *item(double count, double usd) {
    return json_pack("{s:o,s:o}", "count", num(count), "usd", num(usd));
}

static json_t *result_json(const pp_whatif_result *x) {
    const pp_whatif_cost *k = &x->cost;
    const pp_whatif_goodput *g = &x->fail;
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(x->index + 1));
    json_object_set_new(o, "variant", json_string(x->label));
    json_object_set_new(o, "status",
                        json_string(x->status ? "infeasible" : "ok"));
    if (x->status) {
        json_object_set_new(o, "error", json_string(x->error));
        return o;
    }
    json_object_set_new(o, "parallel", json_string(x->parallel));
    json_object_set_new(o, "gpus", json_integer(x->gpus));
    json_object_set_new(o, "cluster_gpus", json_integer(x->cluster_gpus));
    json_object_set_new(o, "iteration_time_s", num(x->iteration_time_s));
    json_object_set_new(o, "ratio", num(x->ratio));
    json_object_set_new(o, "speedup", num(x->speedup));
    json_object_set_new(o, "tflops_per_gpu", num(x->tflops_per_gpu));
    json_object_set_new(o, "mfu", num(x->mfu));
    json_object_set_new(o, "training_days", num(x->ideal_days));
    json_object_set_new(o, "expected_days", num(x->expected_days));
    json_t *f = json_object();
    json_object_set_new(f, "goodput", num(g->goodput));
    json_object_set_new(f, "mtbf_s", num(g->mtbf_s));
    json_object_set_new(f, "checkpoint_bytes", num(g->checkpoint_bytes));
    json_object_set_new(f, "checkpoint_s", num(g->checkpoint_s));
    json_object_set_new(f, "checkpoint_interval_s", num(g->interval_s));
    json_object_set_new(f, "checkpoint_interval_young_s",
                        num(g->interval_young_s));
    json_object_set_new(f, "restart_s", num(g->restart_s));
    json_object_set_new(f, "p_no_spare", num(g->p_no_spare));
    json_object_set_new(f, "expected_failures", num(g->failures));
    json_object_set_new(o, "failures", f);
    json_t *c = json_object();
    json_object_set_new(c, "servers", item(k->nodes, k->servers_total_usd));
    json_object_set_new(c, "gpus", item(k->gpus, k->gpus_total_usd));
    json_object_set_new(c, "hcas", item(k->hcas, k->hcas_total_usd));
    json_t *sw = json_object();
    for (int l = 0; l < PP_WI_LEVELS; l++)
        json_object_set_new(sw, level_names[l],
                            item(k->switches[l], k->switches_total_usd[l]));
    json_object_set_new(c, "switches", sw);
    json_t *cb = json_object();
    for (int l = 0; l < PP_WI_CABLE_KINDS; l++)
        json_object_set_new(cb, cable_names[l],
                            item(k->cables[l], k->cables_total_usd[l]));
    json_object_set_new(c, "cables", cb);
    json_object_set_new(c, "total_usd", num(k->capex_usd));
    json_object_set_new(c, "gpu_swapped", json_boolean(k->gpu_swapped));
    json_object_set_new(o, "capex", c);
    json_object_set_new(o, "it_power_w", num(k->it_power_w));
    json_object_set_new(o, "facility_power_w", num(k->facility_w));
    json_t *m = json_object();
    json_object_set_new(m, "capital_usd", num(k->capital_usd));
    json_object_set_new(m, "energy_usd", num(k->energy_usd));
    json_object_set_new(m, "rent_usd", num(k->rent_usd));
    json_object_set_new(m, "total_usd", num(k->total_usd));
    json_object_set_new(m, "usd_per_gpu_hour", num(k->usd_per_gpu_hour));
    json_object_set_new(o, "cost_per_model", m);
    json_object_set_new(o, "tokens_per_usd", num(x->tokens_per_usd));
    json_object_set_new(o, "meets_deadline", json_boolean(x->meets_deadline));
    json_object_set_new(o, "within_budget", json_boolean(x->within_budget));
    json_object_set_new(o, "within_power", json_boolean(x->within_power));
    json_object_set_new(o, "pareto", json_boolean(x->pareto));
    return o;
}

static int write_json(const pp_whatif_study *s, const pp_whatif_result *r,
                      size_t n, FILE *fp, pp_error *e) {
    json_t *root = json_object();
    json_object_set_new(root, "study", json_string(s->name));
    json_object_set_new(root, "model", json_string(s->model));
    json_object_set_new(root, "cluster", json_string(s->cluster));
    json_object_set_new(root, "stack",
                        s->stack ? json_string(s->stack) : json_null());
    json_object_set_new(root, "tokens", num(s->tokens));
    json_t *v = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(v, result_json(&r[i]));
    json_object_set_new(root, "variants", v);
    int rc = json_dumpf(root, fp,
                        JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                            JSON_REAL_PRECISION(12));
    json_decref(root);
    if (rc != 0) return pp_error_set(e, PP_EIO, "writing JSON failed");
    fputc('\n', fp);
    return 0;
}

int pp_whatif_write(const pp_whatif_study *s, const pp_whatif_result *r,
                    size_t n, pp_wi_format f, FILE *fp, pp_error *e) {
    switch (f) {
    case PP_WI_FMT_CSV: write_csv(r, n, fp); return 0;
    case PP_WI_FMT_JSON: return write_json(s, r, n, fp, e);
    default: write_table(s, r, n, fp); return 0;
    }
}
