/*
 * test_planner_placement.c: the rank placement as a dimension of the
 * search: pinned (simulated as asked, reported, asked of the launcher),
 * searched (both orders estimated and simulated, the faster chosen, the
 * same result whatever the threads), and pinned by the formats whose
 * launcher has one order.
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
#include "plan_util.h"
#include "podplan/planner.h"

/* The rank placement: simulated as asked, reported, and asked of the
 * launcher.  GPT-3 175B at TP 8 x PP 16 x DP 8 on titan: tp,pp,dp puts a
 * pipeline's stages on 16 adjacent servers, tp,dp,pp puts them 8 servers
 * apart, where their sends share spine links. */
static double pinned_s[2]; /* test_placement's times, for the search test */

static void test_placement(void **state) {
    (void)state;
    const char *base = "plan --model gpt3-175b --cluster titan --gpus 1024 "
                       "--global-batch 1536 --top 1 --no-timing "
                       "--fix tp=8,pp=16,mbs=1,vp=1,sp=off,recompute=full,"
                       "zero=1,overlap=off";
    const char *order[2] = {"tp,pp,dp", "tp,dp,pp"};
    double t[2];
    for (int k = 0; k < 2; k++) {
        cli_result r;
        cli_runf(&r, "%s --placement %s --format json", base, order[k]);
        if (r.status) fail_msg("exit %d: %s", r.status, r.err);
        json_t *j = cli_json(&r);
        assert_string_equal(json_string_value(json_object_get(j, "placement")),
                            order[k]);
        json_t *c0 = json_array_get(json_object_get(j, "candidates"), 0);
        assert_true(json_is_true(json_object_get(c0, "simulated")));
        t[k] = num(c0, "iteration_time_s");
        /* podplan simulate with that placement gives the same time. */
        cli_result s;
        cli_runf(&s,
                 "simulate --model gpt3-175b --cluster titan --parallel "
                 "%s --placement %s --format json",
                 json_string_value(json_object_get(c0, "parallel")), order[k]);
        if (s.status) fail_msg("simulate: exit %d: %s", s.status, s.err);
        json_t *js = cli_json(&s);
        assert_true(num(js, "iteration_time_s") == t[k]);
        json_decref(js);
        cli_result_free(&s);
        json_decref(j);
        cli_result_free(&r);

        /* Megatron-LM is asked for TP, PP, DP only when that is the plan;
         * NeMo gets the key either way. */
        cli_runf(&r, "%s --placement %s --format megatron", base, order[k]);
        if (r.status) fail_msg("exit %d: %s", r.status, r.err);
        const char *flag =
            megatron_value(r.out, "--use-tp-pp-dp-mapping", NULL, 0);
        if (k == 0)
            assert_non_null(flag);
        else
            assert_null(flag);
        assert_non_null(strstr(r.out, order[k]));
        cli_result_free(&r);
        cli_runf(&r, "%s --placement %s --format nemo", base, order[k]);
        if (r.status) fail_msg("exit %d: %s", r.status, r.err);
        assert_non_null(strstr(r.out, k == 0 ? "use_tp_pp_dp_mapping: true"
                                             : "use_tp_pp_dp_mapping: false"));
        cli_result_free(&r);
    }
    assert_true(t[0] != t[1]);
    pinned_s[0] = t[0];
    pinned_s[1] = t[1];

    /* By default both are searched, and a layout without PP or DP does
     * not need the flag. */
    cli_result r;
    cli_runf(&r, "plan --model gpt3-175b --cluster titan --gpus 1024 "
                 "--global-batch 1536 --top 0");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "ranks tp,pp,dp and tp,dp,pp searched"));
    cli_result_free(&r);
    cli_runf(&r, "plan --model megatron-1.7b --cluster selene-like --gpus 32 "
                 "--global-batch 512 --top 0 --fix pp=1 --format megatron");
    assert_int_equal(r.status, 0);
    assert_null(megatron_value(r.out, "--use-tp-pp-dp-mapping", NULL, 0));
    cli_result_free(&r);
}

/* Searched: the same pinned layout, no --placement.  Its two candidates
 * (one per order) are both simulated, each to the time its pinned run
 * gave, and the faster one wins; the launch line follows the winner; the
 * result does not depend on the threads. */
static void test_placement_search(void **state) {
    (void)state;
    const char *base = "plan --model gpt3-175b --cluster titan --gpus 1024 "
                       "--global-batch 1536 --top 2 --no-timing "
                       "--fix tp=8,pp=16,mbs=1,vp=1,sp=off,recompute=full,"
                       "zero=1,overlap=off";
    assert_true(pinned_s[0] > 0 && pinned_s[1] > 0);
    cli_result r, r2;
    cli_runf(&r, "%s --format json --jobs 1", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    cli_runf(&r2, "%s --format json --jobs 2", base);
    assert_int_equal(r2.status, 0);
    assert_string_equal(r.out, r2.out);
    cli_result_free(&r2);
    json_t *j = cli_json(&r);
    json_t *cands = json_object_get(j, "candidates");
    assert_int_equal(json_array_size(cands), 2);
    json_t *pls = json_object_get(j, "placements_searched");
    assert_int_equal(json_array_size(pls), 2);
    const char *first = NULL;
    double t[2] = {0, 0};
    for (size_t i = 0; i < 2; i++) {
        json_t *c = json_array_get(cands, i);
        assert_true(json_is_true(json_object_get(c, "simulated")));
        const char *pl = json_string_value(json_object_get(c, "placement"));
        assert_non_null(pl);
        int k = strcmp(pl, "tp,pp,dp") == 0 ? 0 : 1;
        if (k == 1) assert_string_equal(pl, "tp,dp,pp");
        t[k] = num(c, "iteration_time_s");
        if (i == 0) first = pl;
    }
    /* Each as simulated when pinned, and the faster first. */
    assert_true(t[0] == pinned_s[0] && t[1] == pinned_s[1]);
    const char *faster = pinned_s[0] < pinned_s[1] ? "tp,pp,dp" : "tp,dp,pp";
    assert_string_equal(first, faster);
    assert_string_equal(json_string_value(json_object_get(j, "placement")),
                        faster);
    json_decref(j);
    cli_result_free(&r);

    /* The table has a ranks column; the launch line follows the choice. */
    cli_runf(&r, "%s", base);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, " ranks "));
    assert_non_null(strstr(r.out, faster));
    cli_result_free(&r);
    cli_runf(&r, "%s --format megatron", base);
    assert_int_equal(r.status, 0);
    const char *flag = megatron_value(r.out, "--use-tp-pp-dp-mapping", NULL, 0);
    if (strcmp(faster, "tp,pp,dp") == 0)
        assert_non_null(flag);
    else
        assert_null(flag);
    cli_result_free(&r);

    /* DeepSpeed and NeMo 2.0 search tp,dp,pp alone. */
    cli_runf(&r, "%s --format deepspeed", base);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.err, "ranks tp,dp,pp"));
    cli_result_free(&r);
    cli_runf(&r, "%s --format json --placement tp,dp,pp", base);
    assert_int_equal(r.status, 0);
    j = cli_json(&r);
    assert_int_equal(json_array_size(json_object_get(j, "placements_searched")),
                     1);
    assert_int_equal(json_array_size(json_object_get(j, "candidates")), 1);
    json_decref(j);
    cli_result_free(&r);
}

/* Library: a layout with PP or DP at 1 is one candidate (the orders give
 * the same ranks), one with both is two. */
static void test_placement_variants(void **state) {
    (void)state;
    pp_model m;
    load_model("megatron-1.7b", &m);
    pp_cluster *c = load_cluster("selene-like");
    pp_plan_options o;
    pp_plan_options_init(&o);
    o.gpus = 32;
    o.gbs = 512;
    o.top = 0;
    pp_error e = PP_ERROR_INIT;
    pp_plan *plan = NULL;
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    size_t both = 0, one = 0;
    for (size_t i = 0; i < pp_plan_count(plan); i++) {
        const pp_plan_candidate *k = pp_plan_get(plan, i);
        if (k->par.pp > 1 && k->par.dp > 1) {
            both++;
        } else {
            one++;
            assert_memory_equal(k->placement, "tpd", 3);
        }
    }
    assert_true(both > 0 && one > 0 && both % 2 == 0);
    size_t n_all = pp_plan_count(plan);
    pp_plan_free(plan);
    /* tp,pp,dp keeps its K simulations and tp,dp,pp gets ceil(K/2) more,
     * so searching both orders never simulates fewer of tp,pp,dp's best. */
    o.top = 4;
    o.jobs = 2;
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    int sim[2] = {0, 0};
    for (size_t i = 0; i < pp_plan_count(plan); i++) {
        const pp_plan_candidate *k = pp_plan_get(plan, i);
        if (k->simulated) sim[k->placement[1] == 'd']++;
    }
    assert_int_equal(sim[0], 4);
    assert_int_equal(sim[1], 2);
    pp_plan_free(plan);
    o.top = 0;
    memcpy(o.placement, "tdp", 3);
    if (pp_plan_search(&m, c, &o, &plan, &e)) fail_msg("%s", e.msg);
    assert_int_equal(pp_plan_count(plan), n_all - both / 2);
    for (size_t i = 0; i < pp_plan_count(plan); i++)
        assert_memory_equal(pp_plan_get(plan, i)->placement, "tdp", 3);
    pp_plan_free(plan);
    /* A target with one order refuses the other. */
    memcpy(o.placement, "tpd", 3);
    o.target = PP_PLAN_TARGET_DEEPSPEED;
    assert_int_equal(pp_plan_search(&m, c, &o, &plan, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "tp,dp,pp"));
    pp_cluster_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_placement_search),
        cmocka_unit_test(test_placement_variants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
