/*
 * test_whatif.c: podplan whatif against hand computations and published
 * figures.
 *
 *   - a 2-node, 1-switch cluster priced item by item by hand;
 *   - Young's and Daly's checkpoint intervals against their formulas, and
 *     the Llama 3 default rates giving the paper's MTBF;
 *   - money printed as money;
 *   - an H100 put into a DGX A100 changes the price;
 *   - the shipped nic-count and ethernet-vs-infiniband studies reproduce
 *     the sources' ratios within 0.05 (docs/domain.md sec. 5);
 *   - --plot's SVG (gnuplot) parsed: both series, one point per variant.
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
#include <unistd.h>

#include "cli_run.h"
#include "podplan/whatif.h"

#define SRC PODPLAN_SOURCE_DIR

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("got %.12g, want %.12g within %g relative", got, want, tol);
}

/* Hand computation from topologies/hardware.yaml: hpe-apollo-6500 $70,000
 * 3,000 W (without GPUs and HCAs); a100-sxm4-80gb $15,000 400 W; hdr HCA
 * $1,500 15 W, cable $600; qm8700 $25,000 250 W.  2 servers, 16 GPUs,
 * 4 HCAs, 1 leaf, 4 host cables, no fabric cables. */
static void test_hand_cost(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c;
    if (pp_cluster_load(SRC "/tests/data/whatif-2node.yaml", NULL, 0, NULL,
                        &c, &e))
        fail_msg("%s", e.msg);
    pp_whatif_prices p = {4, 0.10, 1.3, 0, 0};
    pp_whatif_cost k;
    double hours = 1000;
    if (pp_whatif_cost_compute(c, &p, NULL, hours, &k, &e))
        fail_msg("%s", e.msg);
    assert_true(k.nodes == 2 && k.gpus == 16 && k.hcas == 4);
    assert_true(k.switches[PP_WI_LEAF] == 1 && k.switches[PP_WI_SPINE] == 0);
    assert_true(k.cables[PP_WI_CABLE_HOST] == 4 &&
                k.cables[PP_WI_CABLE_FABRIC] == 0);
    assert_rel(k.servers_total_usd, 2 * 70000.0, 1e-12);
    assert_rel(k.gpus_total_usd, 16 * 15000.0, 1e-12);
    assert_rel(k.hcas_total_usd, 4 * 1500.0, 1e-12);
    assert_rel(k.switches_total_usd[PP_WI_LEAF], 25000.0, 1e-12);
    assert_rel(k.cables_total_usd[PP_WI_CABLE_HOST], 4 * 600.0, 1e-12);
    double capex = 140000 + 240000 + 6000 + 25000 + 2400;
    assert_rel(k.capex_usd, capex, 1e-12);
    double watts = 2 * 3000 + 16 * 400 + 4 * 15 + 250;
    assert_rel(k.it_power_w, watts, 1e-12);
    assert_rel(k.energy_usd, watts * 1.3 / 1000 * hours * 0.10, 1e-12);
    assert_rel(k.capital_usd, capex * hours / (4 * 8766.0), 1e-12);
    /* A study's price replaces the catalogue's, and only that one. */
    pp_whatif_unit_prices over = {NAN, 20000, NAN, NAN, NAN};
    if (pp_whatif_cost_compute(c, &p, &over, hours, &k, &e))
        fail_msg("%s", e.msg);
    assert_rel(k.capex_usd, capex + 16 * 5000.0, 1e-12);
    /* Spare nodes are bought with their HCAs and host cables. */
    p.spare_nodes = 1;
    if (pp_whatif_cost_compute(c, &p, NULL, hours, &k, &e))
        fail_msg("%s", e.msg);
    assert_rel(k.capex_usd, capex + 70000 + 8 * 15000 + 2 * 1500 + 2 * 600,
               1e-12);
    /* Renting: $/GPU-hour x the cluster's GPUs x hours. */
    p.spare_nodes = 0;
    p.rent_usd_per_gpu_hour = 2.5;
    if (pp_whatif_cost_compute(c, &p, NULL, hours, &k, &e))
        fail_msg("%s", e.msg);
    assert_rel(k.total_usd, 2.5 * 16 * hours, 1e-12);
    pp_cluster_free(c);
}

/* H100s in a DGX A100 chassis: the price moves by 8 x ($30,000 -
 * $15,000) per node and the power by 8 x (700 - 400) W. */
static void test_gpu_swap(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    const char *a100[] = {"node.server=dgx-a100",
                          "node.gpus.type=a100-sxm4-80gb"};
    const char *h100[] = {"node.server=dgx-a100", "node.gpus.type=h100-sxm5"};
    pp_cluster *ca, *ch;
    if (pp_cluster_load("dgx-h100-ndr", a100, 2, NULL, &ca, &e) ||
        pp_cluster_load("dgx-h100-ndr", h100, 2, NULL, &ch, &e))
        fail_msg("%s", e.msg);
    pp_whatif_prices p = {4, 0.10, 1.3, 0, 0};
    pp_whatif_cost ka, kh;
    if (pp_whatif_cost_compute(ca, &p, NULL, 1, &ka, &e) ||
        pp_whatif_cost_compute(ch, &p, NULL, 1, &kh, &e))
        fail_msg("%s", e.msg);
    assert_false(ka.gpu_swapped);
    assert_true(kh.gpu_swapped);
    assert_rel(kh.capex_usd - ka.capex_usd, 32 * 8 * 15000.0, 1e-9);
    assert_rel(kh.it_power_w - ka.it_power_w, 32 * 8 * 300.0, 1e-9);
    /* The planner's price follows too (planner/cost.c). */
    pp_plan_prices pa, ph;
    if (pp_plan_prices_get(ca, 4, 0.1, 1.3, &pa, &e) ||
        pp_plan_prices_get(ch, 4, 0.1, 1.3, &ph, &e))
        fail_msg("%s", e.msg);
    assert_rel(ph.capex_usd - pa.capex_usd, 32 * 8 * 15000.0, 1e-9);
    pp_cluster_free(ca);
    pp_cluster_free(ch);
}

static void test_young_daly(void **state) {
    (void)state;
    double delta = 120, M = 3 * 3600.0;
    assert_rel(pp_whatif_young(delta, M), sqrt(2 * delta * M), 1e-15);
    double x = delta / (2 * M);
    assert_rel(pp_whatif_daly(delta, M),
               sqrt(2 * delta * M) * (1 + sqrt(x) / 3 + x / 9) - delta, 1e-15);
    assert_rel(pp_whatif_daly(3 * M, M), M, 0); /* delta >= 2M */
    /* Daly's T_w with R = 0 and tau + delta << M tends to Ts (1 + delta /
     * tau + tau / 2M): the first-order cost Young minimised. */
    double ts = 1e6, tau = 600;
    double tw = pp_whatif_expected_time(ts, tau, 1, 0, 1e9);
    assert_rel(tw, ts * (1 + 1 / tau + (tau + 1) / 2e9), 1e-6);

    /* The Llama 3 default rates: 419 interruptions in 54 days at 16,384
     * GPUs (2,048 nodes of 8, one NIC per GPU) is an MTBF of 54 x 24 /
     * 419 h, and the interval used is Daly's for that MTBF. */
    pp_whatif_failures f;
    pp_whatif_failures_default(&f);
    pp_whatif_goodput g;
    pp_whatif_goodput_compute(&f, 86400 * 30, 2048, 8, 8, 0, 405e9, 0, &g);
    assert_rel(g.mtbf_s, 54 * 24 * 3600 / 419.0, 1e-12);
    assert_rel(g.checkpoint_bytes, 405e9 * 14, 1e-12);
    assert_rel(g.checkpoint_s, 405e9 * 14 / 2e12, 1e-12);
    assert_rel(g.interval_s, pp_whatif_daly(g.checkpoint_s, g.mtbf_s), 1e-15);
    assert_rel(g.interval_young_s, sqrt(2 * g.checkpoint_s * g.mtbf_s), 1e-15);
    assert_true(g.goodput > 0 && g.goodput < 1);
    /* Spares shorten restarts: with enough of them, repair never waits. */
    pp_whatif_goodput gs;
    pp_whatif_goodput_compute(&f, 86400 * 30, 2048, 8, 8, 0, 405e9, 64, &gs);
    assert_true(gs.p_no_spare < 1e-6 && gs.goodput > g.goodput);
    assert_rel(gs.restart_s, f.restart_s, 1e-6);
}

static void test_money(void **state) {
    (void)state;
    char b[32];
    assert_string_equal(pp_whatif_money(1234567, b, sizeof b), "$1,234,567");
    assert_string_equal(pp_whatif_money(495000, b, sizeof b), "$495,000");
    assert_string_equal(pp_whatif_money(4.95e7, b, sizeof b), "$49.50M");
    assert_string_equal(pp_whatif_money(1.89e9, b, sizeof b), "$1.89B");
    assert_string_equal(pp_whatif_money(-13460, b, sizeof b), "-$13,460");
    assert_string_equal(pp_whatif_money(NAN, b, sizeof b), "-");
}

/* Runs a shipped study through the library. */
static pp_whatif_result *run_study(const char *name, size_t *n) {
    pp_error e = PP_ERROR_INIT;
    pp_whatif_study *s;
    char path[1024];
    snprintf(path, sizeof path, SRC "/studies/%s.yaml", name);
    if (pp_whatif_study_load(path, &s, &e)) fail_msg("%s", e.msg);
    *n = pp_whatif_variant_count(s);
    pp_whatif_result *r = calloc(*n, sizeof *r);
    for (size_t i = 0; i < *n; i++)
        if (pp_whatif_run(s, i, &r[i], &e)) fail_msg("%s", e.msg);
    pp_whatif_finish(s, r, *n);
    pp_whatif_study_free(s);
    return r;
}

/* SK Telecom's TITAN talk (domain.md sec. 5): 1.00 / 1.01 / 1.15 / 1.56 at
 * 8 / 4 / 2 / 1 HDR NICs per node, each within 0.05 (the layout as
 * tests/test_validation.c assumes it). */
static void test_nic_count(void **state) {
    (void)state;
    size_t n;
    pp_whatif_result *r = run_study("nic-count", &n);
    const double want[4] = {1.00, 1.01, 1.15, 1.56};
    assert_int_equal(n, 4);
    for (size_t i = 0; i < 4; i++) {
        printf("  %s: ratio %.3f (source %.2f), capital %.0f\n", r[i].label,
               r[i].ratio, want[i], r[i].cost.capex_usd);
        if (!(fabs(r[i].ratio - want[i]) <= 0.05))
            fail_msg("%s: ratio %.3f, source %.2f", r[i].label, r[i].ratio,
                     want[i]);
    }
    /* Fewer NICs: fewer HCAs, host cables and leaf switches bought. */
    for (size_t i = 1; i < 4; i++) {
        assert_true(r[i].cost.hcas < r[i - 1].cost.hcas);
        assert_true(r[i].cost.switches[PP_WI_LEAF] <
                    r[i - 1].cost.switches[PP_WI_LEAF]);
        assert_true(r[i].cost.capex_usd < r[i - 1].cost.capex_usd);
    }
    free(r);
}

/* The NCCL article (domain.md sec. 5): three 10GbE nodes give 1.86x one
 * node's throughput, within 0.05. */
static void test_ethernet(void **state) {
    (void)state;
    size_t n;
    pp_whatif_result *r = run_study("ethernet-vs-infiniband", &n);
    printf("  3 nodes on 10GbE: %.3fx one node\n", r[1].speedup);
    if (!(fabs(r[1].speedup - 1.86) <= 0.05))
        fail_msg("speed-up %.3f, source 1.86", r[1].speedup);
    /* A faster network can only help. */
    assert_true(r[2].speedup > r[1].speedup && r[3].speedup > r[1].speedup);
    free(r);
}

/* --plot: gnuplot's SVG holds the two series, titled, with one point per
 * variant and one per front member. */
static void test_plot(void **state) {
    (void)state;
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("  skipped: gnuplot is not installed (apt-get install "
               "gnuplot-nox)\n");
        skip();
    }
    char svg[] = "/tmp/podplan-whatif-plot-XXXXXX";
    int fd = mkstemp(svg);
    close(fd);
    cli_result r;
    cli_runf(&r, "whatif --study " SRC "/studies/oversubscription.yaml "
                 "--format json --plot %s",
             svg);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    /* stderr is not a terminal here: no progress bar, nothing at all. */
    assert_string_equal(r.err, "");
    json_t *j = cli_json(&r);
    size_t n_front = 0, n = json_array_size(json_object_get(j, "variants"));
    for (size_t i = 0; i < n; i++)
        n_front += json_is_true(json_object_get(
            json_array_get(json_object_get(j, "variants"), i), "pareto"));
    json_decref(j);
    cli_result_free(&r);
    FILE *fp = fopen(svg, "r");
    assert_non_null(fp);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, fp);
    text[len] = '\0';
    fclose(fp);
    unlink(svg);
    assert_non_null(strstr(text, "<svg"));
    assert_non_null(strstr(text, "</svg>"));
    /* gnuplot's svg terminal: one <g id="gnuplot_plot_K"> per series,
     * its <title> the key, a <use xlink:href='#gpPt..'> per point plus
     * one for the key's sample, up to the next series. */
    const char *titles[2] = {"<title>variants</title>",
                             "<title>Pareto front</title>"};
    size_t want[2] = {n, n_front};
    for (int s = 0; s < 2; s++) {
        const char *g = strstr(text, titles[s]);
        if (!g) fail_msg("no series %s in the SVG", titles[s]);
        const char *end = strstr(g + 1, "<g id=\"gnuplot_plot_");
        if (!end) end = strstr(g, "</svg>");
        size_t pts = 0;
        for (const char *p = g; (p = strstr(p, "xlink:href='#gpPt")) && p < end;
             p++)
            pts++;
        pts = pts > 0 ? pts - 1 : 0; /* the key's sample */
        if (pts != want[s])
            fail_msg("%s: %zu points, want %zu", titles[s], pts, want[s]);
    }
}

/* The planner's cost objective with a deadline: without one the cheapest
 * layout of GPT-3 175B on TITAN takes months (fewer GPUs, each busier);
 * with --deadline 40 the pick trains within 40 days, and costs more. */
static void test_plan_deadline(void **state) {
    (void)state;
    const char *base = "plan --model gpt3-175b --cluster titan --tokens 300e9 "
                       "--global-batch 1536 --objective cost --top 0 --show 1 "
                       "--format json";
    double days[2], cost[2];
    for (int k = 0; k < 2; k++) {
        cli_result r;
        cli_runf(&r, "%s%s", base, k ? " --deadline 40" : "");
        if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
        json_t *j = cli_json(&r);
        json_t *c = json_array_get(json_object_get(j, "candidates"), 0);
        days[k] = json_number_value(json_object_get(c, "training_days"));
        cost[k] = json_number_value(json_object_get(c, "cost_usd"));
        json_decref(j);
        cli_result_free(&r);
    }
    printf("  cheapest: %.1f days, $%.0f; with --deadline 40: %.1f days, "
           "$%.0f\n",
           days[0], cost[0], days[1], cost[1]);
    assert_true(days[0] > 40);
    assert_true(days[1] <= 40);
    assert_true(cost[1] >= cost[0]);
    cli_result r;
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --deadline 40");
    assert_int_equal(r.status, 2); /* days need --tokens */
    assert_non_null(strstr(r.err, "--deadline needs --tokens"));
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_cost), cmocka_unit_test(test_gpu_swap),
        cmocka_unit_test(test_young_daly), cmocka_unit_test(test_money),
        cmocka_unit_test(test_nic_count), cmocka_unit_test(test_ethernet),
        cmocka_unit_test(test_plot),      cmocka_unit_test(test_plan_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
