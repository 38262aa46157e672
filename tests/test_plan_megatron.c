/*
 * test_plan_megatron.c: the planner against the experts, row by row of the
 * Megatron-LM weak-scaling table (docs/domain.md sec. 5; Narayanan et al.
 * 2021, Table 1) on selene-like (DGX A100 80GB, 8 x HDR per node).
 *
 * The runs of the table used full recomputation, no sequence parallelism
 * (it came a year later), no ZeRO and the DP AllReduce after the pipeline
 * flush; the comparison is made within those means (--fix recompute=full,
 * sp=off, zero=0, overlap=off) and with the rank order of the Megatron-LM
 * of 2021, TP, then DP, then PP (--placement tp,dp,pp: the flag for TP, PP,
 * DP, --use-tp-pp-dp-mapping, came later), so that it asks "given what they could use, would the
 * planner have chosen their TP and PP?".  The table's layout is its (TP,
 * PP) with the best micro-batch and interleaving.
 *
 * Acceptance: the table's layout is feasible, and it is among the top 5 by
 * simulated time or within 3% of the top pick's simulated time.  Each
 * row's outcome is pinned below: the planner's pick and the table's gap
 * to it, so that a change of the models that moves them fails here and
 * the note is revisited.
 *
 * Cost: the best K = 5 by the estimate are simulated at flow fidelity (K
 * is the row's `top`); the 1T row, the longest, takes ~16 s on one core.
 * Each row is its own CTest test (argument: the row, 1..10), so `ctest
 * -j` runs them side by side.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podplan/planner.h"

typedef struct row {
    const char *model;
    int64_t gpus, gbs, tp, pp; /* the table */
    double tflops;             /* the table's measured TFLOP/s per GPU */
    int top;                   /* layouts simulated */
    bool agree;                /* top 5, or within 3% */
    int64_t pick_tp, pick_pp;  /* the planner's simulated top pick */
    double gap_lo, gap_hi;     /* table's best vs the pick, percent */
    const char *why;
} row;

/* Outcomes with the simulator and profile of this tree (flow fidelity). */
static const row rows[] = {
    {"megatron-1.7b", 32, 512, 1, 1, 137, 5, true, 1, 1, 0, 0,
     "the table's layout is the pick"},
    {"megatron-3.6b", 64, 512, 2, 1, 138, 5, true, 1, 1, 3, 8,
     "the pick is TP 1: a 3.6B model fits without TP and its GEMMs are "
     "larger; TP 2 is 4th of the 5 simulated, ~6% behind"},
    {"megatron-7.5b", 128, 512, 4, 1, 142, 5, true, 2, 1, 8, 12,
     "with Megatron-LM's 20 bytes per parameter (the optimizer step's fp32 "
     "gradient copy) TP 2 needs 74.7 GB: it fits in the 77.3 GB usable (the "
     "A100 80GB's 81,920 MiB less the 10% reserve; it did not in the 72 GB "
     "of the marketed 80 GB) and is the pick, ~10% ahead of TP 4, which is "
     "5th of the 5 simulated"},
    {"megatron-18.4b", 256, 1024, 8, 1, 135, 5, false, 2, 4, 8, 14,
     "TP 8 spends 1.4 s of 9.4 s in 8-way AllReduces and, without sequence "
     "parallelism, repeats LayerNorm, dropout and residual work on all 8 "
     "GPUs (7.6 s vs 6.8-7.1 s compute); TP 2 x PP 4 interleaved (vp 5) "
     "pays a 0.5 s bubble and 0.5 s of pipeline sends between servers "
     "instead (0.05 s if its stages shared a server: --placement tp,pp,dp, "
     "+16.5%).  The model reproduces the table's TP 8 figure (135 TFLOP/s) "
     "and predicts ~149 for TP 2 x PP 4, a layout the table's authors did "
     "not run"},
    {"megatron-39.1b", 512, 1536, 8, 2, 138, 5, false, 4, 4, 10, 17,
     "as for 18.4B: TP 8's AllReduces (1.7 s vs 0.7 s) and narrower GEMMs "
     "(11.8 s vs 10.4 s compute) cost more than TP 4 x PP 4's bubble and "
     "pipeline sends; the table's layout reproduces 136 TFLOP/s"},
    {"megatron-76.1b", 1024, 1792, 8, 4, 140, 5, true, 8, 4, 0, 0,
     "the table's layout is the pick"},
    {"megatron-145.6b", 1536, 2304, 8, 8, 148, 5, true, 4, 16, 0, 3,
     "TP 4 x PP 16 edges ahead (within 3%) on TP AllReduces; the table's "
     "layout is third of the 5 simulated"},
    {"megatron-310.1b", 1920, 2160, 8, 16, 155, 5, true, 8, 16, 0, 0,
     "the table's layout is the pick"},
    {"megatron-529.6b", 2520, 2520, 8, 35, 163, 5, true, 8, 21, 0, 3,
     "PP 21 (5 layers a stage) with more DP replicas edges ahead (within "
     "2%) of PP 35"},
    {"megatron-1t", 3072, 3072, 8, 64, 163, 5, true, 8, 64, 0, 0,
     "the table's layout is the pick"},
};

static const row *the_row;

static pp_plan *plan_row(const pp_model *m, const pp_cluster *c, const row *r,
                         int top, bool pin) {
    pp_plan_options o;
    pp_plan_options_init(&o);
    o.gpus = r->gpus;
    o.gbs = r->gbs;
    o.top = top;
    memcpy(o.placement, "tdp", 3);
    pp_error e = PP_ERROR_INIT;
    if (pp_plan_filter_add(&o.filter,
                           "recompute=full,sp=off,zero=0,overlap=off", false,
                           "--fix", &e))
        fail_msg("%s", e.msg);
    if (pin) {
        char spec[64];
        snprintf(spec, sizeof spec, "tp=%lld,pp=%lld", (long long)r->tp,
                 (long long)r->pp);
        if (pp_plan_filter_add(&o.filter, spec, false, "--fix", &e))
            fail_msg("%s", e.msg);
    }
    pp_plan *plan = NULL;
    if (pp_plan_search(m, c, &o, &plan, &e))
        fail_msg("%s%s: %s", r->model, pin ? " (table layout)" : "", e.msg);
    const pp_plan_stats *st = pp_plan_stats_get(plan);
    if (st->sim_error[0]) fail_msg("simulation failed: %s", st->sim_error);
    return plan;
}

static void test_row(void **state) {
    (void)state;
    const row *r = the_row;
    pp_error e = PP_ERROR_INIT;
    pp_model m;
    pp_cluster *c = NULL;
    if (pp_model_load(r->model, &m, &e) ||
        pp_cluster_load("selene-like", NULL, 0, NULL, &c, &e))
        fail_msg("%s", e.msg);
    int top = r->top;

    pp_plan *plan = plan_row(&m, c, r, top, false);
    const pp_plan_candidate *pick = pp_plan_get(plan, 0);
    assert_true(pick->simulated);
    double T_pick = pick->sim_time_s;

    /* The table's (TP, PP) among the simulated: its rank and best time. */
    int rank = 0;
    double T_table = NAN;
    for (size_t i = 0; i < pp_plan_count(plan); i++) {
        const pp_plan_candidate *k = pp_plan_get(plan, i);
        if (!k->simulated) break;
        if (k->par.tp == r->tp && k->par.pp == r->pp) {
            rank = (int)i + 1;
            T_table = k->sim_time_s;
            break;
        }
    }
    /* Not there: simulate the table layout's best by the estimate. */
    const pp_plan_candidate *tk = NULL;
    pp_plan *tplan = NULL;
    if (!rank) {
        tplan = plan_row(&m, c, r, 2, true);
        tk = pp_plan_get(tplan, 0);
        assert_true(tk->simulated);
        T_table = tk->sim_time_s;
    } else {
        tk = pp_plan_get(plan, (size_t)rank - 1);
    }
    /* Feasible: it fits in 80 GB less the reserve. */
    assert_true(tk->memory.total <= tk->memory_limit_bytes);

    char a[256], b[256];
    double gap = 100.0 * (T_table / T_pick - 1.0);
    bool agree = (rank >= 1 && rank <= 5) || gap <= 3.0;
    print_message("%s on %lld GPUs, batch %lld: table TP %lld PP %lld "
                  "(%.0f TFLOP/s measured)\n"
                  "  pick   %s  %.3f s  %.1f TFLOP/s\n"
                  "  table  %s  %.3f s  %.1f TFLOP/s  %+.2f%%, rank %d of "
                  "%d simulated: %s\n  note: %s\n",
                  r->model, (long long)r->gpus, (long long)r->gbs,
                  (long long)r->tp, (long long)r->pp, r->tflops,
                  pp_parallel_format(&pick->par, a, sizeof a), T_pick,
                  pick->tflops_per_gpu,
                  pp_parallel_format(&tk->par, b, sizeof b), T_table,
                  tk->tflops_per_gpu, gap, rank, top,
                  agree ? "agrees" : "DIFFERS", r->why);

    /* The pinned outcome. */
    assert_int_equal(pick->par.tp, r->pick_tp);
    assert_int_equal(pick->par.pp, r->pick_pp);
    if (!(gap >= r->gap_lo - 1e-9 && gap <= r->gap_hi + 1e-9))
        fail_msg("gap %+.2f%% outside the pinned %g..%g%%", gap, r->gap_lo,
                 r->gap_hi);
    assert_int_equal(agree, r->agree);
    /* The model reproduces the table's layout's throughput within 10%
     * (domain.md sec. 5 validation is the simulator's; here it guards the
     * comparison's footing). */
    double rel = tk->tflops_per_gpu / r->tflops;
    if (!(rel > 0.9 && rel < 1.1))
        fail_msg("table layout at %.1f TFLOP/s, measured %.0f",
                 tk->tflops_per_gpu, r->tflops);
    pp_plan_free(tplan);
    pp_plan_free(plan);
    pp_cluster_free(c);
}

int main(int argc, char **argv) {
    int first = 1, last = (int)(sizeof rows / sizeof rows[0]);
    if (argc > 1) first = last = atoi(argv[1]);
    if (first < 1 || last > (int)(sizeof rows / sizeof rows[0])) {
        fprintf(stderr, "usage: test_plan_megatron [row 1..%d]\n",
                (int)(sizeof rows / sizeof rows[0]));
        return 2;
    }
    int failed = 0;
    for (int i = first; i <= last; i++) {
        the_row = &rows[i - 1];
        char name[64];
        snprintf(name, sizeof name, "row %d: %s", i, the_row->model);
        const struct CMUnitTest t[] = {
            cmocka_unit_test_prestate(test_row, NULL),
        };
        failed += _cmocka_run_group_tests(name, t, 1, NULL, NULL);
    }
    return failed ? 1 : 0;
}
