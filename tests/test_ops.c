/*
 * tests/test_ops.c: the priced operations of each part of a model
 * (sim/train/ops.c, `podplan simulate --ops`): which parts a model has,
 * that a layer's rows add up to what pp_layer_cost_get says it costs,
 * the TSV and JSON files the CLI writes (deterministic, atomic, none
 * left behind by a failed run), and the errors.
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
#include "models_util.h"
#include "plan_util.h"
#include "podplan/train.h"

/* DeepSeek-V3 has all five parts; Llama 3 8B no MoE layer and no MTP;
 * Mixtral no dense layer. */
static void test_parts(void **state) {
    (void)state;
    pp_model ds = load("deepseek-v3"), ll = load("llama3-8b"),
             mx = load("mixtral-8x7b");
    for (int k = 0; k < PP_OPS_PARTS; k++)
        assert_true(pp_ops_part_present(&ds, (pp_ops_part)k));
    assert_true(pp_ops_part_present(&ll, PP_OPS_DENSE));
    assert_false(pp_ops_part_present(&ll, PP_OPS_MOE));
    assert_false(pp_ops_part_present(&ll, PP_OPS_MTP));
    assert_false(pp_ops_part_present(&mx, PP_OPS_DENSE));
    assert_true(pp_ops_part_present(&mx, PP_OPS_MOE));

    pp_gpu_profile g = load_gpu_profile("h100-sxm5", "nemo-2025");
    pp_parallel p = layout("tp=1,pp=1,dp=8,mbs=1,gbs=8");
    pp_stack_resolve(&g, &p);
    pp_op_table t;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_ops_get(&g, &ll, &p, PP_OPS_MOE, false, &t, &e),
                     PP_EINVAL);
    assert_non_null(strstr(e.msg, "no moe layer"));
}

/* A layer's rows add up to its cost: GEMMs and memory-bound kernels
 * their time, collectives the compute run under them (cost.c's sum). */
static double rows_s(const pp_op_table *t) {
    double s = 0;
    for (size_t i = 0; i < t->n; i++) s += t->v[i].time_s + t->v[i].overlap_s;
    return s;
}

static void check_sums(const char *model, const char *gpu, const char *spec,
                       pp_ops_part part) {
    pp_model m = load(model);
    pp_gpu_profile g = load_gpu_profile(gpu, "nemo-2025");
    pp_parallel p = layout(spec);
    pp_stack_resolve(&g, &p);
    pp_layer_cost c;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_layer_cost_get(&g, &m, &p, &c, &e), 0);
    pp_op_table f, b;
    assert_int_equal(pp_ops_get(&g, &m, &p, part, false, &f, &e), 0);
    assert_int_equal(pp_ops_get(&g, &m, &p, part, true, &b, &e), 0);
    assert_true(f.n > 5 && b.n > f.n);
    assert_true(fabs(rows_s(&f) - c.fwd_s) <= 1e-9 * c.fwd_s);
    /* The backward list holds the recomputation p asks for. */
    double bw = c.bwd_s + c.recompute_s;
    assert_true(fabs(rows_s(&b) - bw) <= 1e-9 * bw);
    /* Every GEMM has FLOPs and a time; every collective a group. */
    for (size_t i = 0; i < f.n; i++) {
        const pp_op_row *r = &f.v[i];
        if (!strcmp(r->kind, "gemm"))
            assert_true(r->flops > 0 && r->time_s > 0);
        if (!strcmp(r->kind, "collective"))
            assert_true(r->group && r->coll && r->time_s == 0);
    }
    pp_op_table_fini(&f);
    pp_op_table_fini(&b);
}

static void test_sums(void **state) {
    (void)state;
    check_sums("llama3-8b", "h100-sxm5", "tp=2,pp=1,dp=4,mbs=1,gbs=8,sp=on",
               PP_OPS_DENSE);
    check_sums("mixtral-8x7b", "h100-sxm5",
               "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,recompute=selective",
               PP_OPS_MOE);
}

/* The dropless dispatch is the row the host waits at; under
 * graphs=full the host issues nothing beyond the graph's launch. */
static void test_host(void **state) {
    (void)state;
    pp_model m = load("mixtral-8x7b");
    pp_gpu_profile g = load_gpu_profile("h100-sxm5", "nemo-2025");
    pp_parallel p = layout("tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8");
    pp_stack_resolve(&g, &p);
    pp_op_table t;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_ops_get(&g, &m, &p, PP_OPS_MOE, false, &t, &e), 0);
    int syncs = 0;
    double host = 0;
    for (size_t i = 0; i < t.n; i++) {
        syncs += t.v[i].sync;
        host += t.v[i].host_kernels;
        if (t.v[i].sync)
            assert_string_equal(t.v[i].name, "ep dispatch alltoall");
    }
    assert_int_equal(syncs, 1);
    assert_true(host > 10);
    pp_op_table_fini(&t);

    p = layout("tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=8,graphs=full");
    pp_stack_resolve(&g, &p);
    assert_int_equal(pp_ops_get(&g, &m, &p, PP_OPS_MOE, false, &t, &e), 0);
    host = 0;
    for (size_t i = 0; i < t.n; i++) host += t.v[i].host_kernels;
    assert_true(host <= 1);
    pp_op_table_fini(&t);
}

#define SIM                                                                    \
    "simulate --model mixtral-8x7b --cluster dgx-h100-ndr --set "              \
    "node.count=1 --fidelity analytic --stack nemo-2025 --parallel "

static void test_cli_files(void **state) {
    (void)state;
    char dir[] = "/tmp/podplan-ops-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char tsv[96], tsv2[96], js[96];
    snprintf(tsv, sizeof tsv, "%s/a.tsv", dir);
    snprintf(tsv2, sizeof tsv2, "%s/b.tsv", dir);
    snprintf(js, sizeof js, "%s/a.json", dir);
    const char *spec = "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=64 --memory-check off";
    cli_result r;
    cli_runf(&r, SIM "%s --ops %s", spec, tsv);
    assert_int_equal(r.status, 0);
    cli_result_free(&r);
    cli_runf(&r, SIM "%s --ops %s", spec, tsv2);
    assert_int_equal(r.status, 0);
    cli_result_free(&r);
    char *a = cli_slurp(tsv), *b = cli_slurp(tsv2);
    assert_non_null(a);
    assert_string_equal(a, b); /* byte-identical */
    assert_true(strncmp(a, "part\tpass\tindex\tname\tkind\t", 25) == 0);
    assert_non_null(strstr(a, "moe layer\tfwd\t"));
    assert_non_null(strstr(a, "\texperts fc1\tgemm\t"));
    assert_non_null(strstr(a, "\tep dispatch alltoall\tcollective\tep\t"
                              "alltoall\t"));
    assert_non_null(strstr(a, "head\tbwd\t"));
    assert_null(strstr(a, "dense layer"));
    /* Every row has the header's 15 fields. */
    for (char *line = a; *line;) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        int tabs = 0;
        for (char *c = line; c < nl; c++) tabs += *c == '\t';
        assert_int_equal(tabs, 14);
        line = nl + 1;
    }
    free(a);
    free(b);

    cli_runf(&r, SIM "%s --ops %s", spec, js);
    assert_int_equal(r.status, 0);
    cli_result_free(&r);
    char *s = cli_slurp(js);
    json_error_t je;
    json_t *doc = json_loads(s, 0, &je);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "profile")),
                        "h100");
    json_t *parts = json_object_get(doc, "parts");
    assert_int_equal(json_array_size(parts), 6); /* 3 parts x 2 passes */
    json_t *moe = json_array_get(parts, 2);
    assert_string_equal(json_string_value(json_object_get(moe, "part")),
                        "moe layer");
    assert_true(json_array_size(json_object_get(moe, "ops")) > 10);
    json_decref(doc);
    free(s);

    /* A run that fails leaves no file: a layout that does not fit. */
    char bad[96];
    snprintf(bad, sizeof bad, "%s/bad.tsv", dir);
    cli_runf(&r, SIM "tp=1,pp=1,dp=8,mbs=8,gbs=64 --ops %s", bad);
    assert_int_equal(r.status, 1);
    cli_result_free(&r);
    assert_int_equal(access(bad, F_OK), -1);

    unlink(tsv);
    unlink(tsv2);
    unlink(js);
    rmdir(dir);
}

static void test_cli_errors(void **state) {
    (void)state;
    cli_expect(2, "--ops: model",
               "simulate --model resnet50 "
               "--cluster dgx-h100-ndr --parallel tp=1,pp=1,dp=8,mbs=1,gbs=8 "
               "--ops /tmp/podplan-ops-generic.tsv");
    cli_expect(1, "/nonexistent-dir/",
               SIM "tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=64 "
                   "--memory-check off --ops /nonexistent-dir/x.tsv");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts),      cmocka_unit_test(test_sums),
        cmocka_unit_test(test_host),       cmocka_unit_test(test_cli_files),
        cmocka_unit_test(test_cli_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
