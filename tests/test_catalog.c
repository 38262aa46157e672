/*
 * tests/test_catalog.c: the hardware catalogue (topologies/hardware.yaml)
 * and its loader (sim/hw/catalog.c).  Linked against podplan_sim_hw alone
 * (tests/CMakeLists.txt): the catalogue and GPU profiles must stand
 * without the topology or the simulator, for calibrate/.
 *
 * The shipped figures are checked exactly where they come from domain.md
 * (the units parser is exact, so 312TFLOPS is the double 312e12).  Broken
 * catalogues are written to a temporary directory and must fail with the
 * exact located message, file:line:col included.
 *
 * Run with PODPLAN_DATA_DIR=<source root> (CTest sets it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "podplan/hw.h"

static pp_catalog *load_shipped(void) {
    pp_catalog *c = NULL;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_catalog_load(NULL, &c, &e);
    if (rc != 0) print_error("pp_catalog_load(NULL): %s\n", e.msg);
    assert_int_equal(rc, 0);
    assert_non_null(c);
    return c;
}

/* A GPU profile read and used through podplan_sim_hw alone: the shipped
 * A100 profile, a GEMM's roofline time, a memory-bound kernel's. */
static void test_profile_hw_alone(void **state) {
    (void)state;
    pp_catalog *c = load_shipped();
    pp_gpu_profile g;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(
        pp_profile_load(NULL, pp_catalog_gpu(c, "a100-sxm4-80gb"), &g, &e), 0);
    assert_string_equal(g.name, "a100");
    double t = pp_gemm_time_s(&g, 1, 8192, 8192, 8192);
    assert_true(t > 2.0 * 8192.0 * 8192 * 8192 / g.peak_flops);
    assert_true(pp_memop_time_s(&g, 1e9) > 1e9 / g.hbm_Bps);
    pp_catalog_free(c);
}

/* ------------------------------------------------------------------------
 * The shipped catalogue.
 * ---------------------------------------------------------------------- */
static void test_shipped_a100(void **state) {
    (void)state;
    pp_catalog *c = load_shipped();
    const pp_gpu_spec *g = pp_catalog_gpu(c, "a100-sxm4-80gb");
    assert_non_null(g);
    assert_string_equal(g->name, "a100-sxm4-80gb");
    /* domain.md sec. 1, exactly. */
    assert_true(g->peak_flops[PP_DTYPE_FP64] == 9.7e12);
    assert_true(g->peak_flops[PP_DTYPE_FP64_TC] == 19.5e12);
    assert_true(g->peak_flops[PP_DTYPE_FP32] == 19.5e12);
    assert_true(g->peak_flops[PP_DTYPE_TF32] == 156e12);
    assert_true(g->peak_flops[PP_DTYPE_BF16] == 312e12);
    assert_true(g->peak_flops[PP_DTYPE_INT8] == 624e12);
    assert_true(g->peak_flops[PP_DTYPE_FP8] == 0); /* A100 has no fp8 */
    /* The "80GB" that nvidia-smi reports as 81,920 MiB. */
    assert_true(g->hbm_bytes == 81920.0 * 1048576.0);
    assert_true(g->hbm_Bps == 2039e9);
    assert_int_equal(g->nvlink_gen, 3);
    assert_true(g->nvlink_Bps == 300e9);
    assert_int_equal(g->pcie_gen, 4);
    assert_int_equal(g->pcie_lanes, 16);
    assert_int_equal(g->sms, 108);
    assert_true(g->tdp_w == 400);
    assert_true(g->price_usd > 0);
    assert_int_equal(g->price_year, 2023);

    /* The other A100s differ only in memory (domain.md). */
    const pp_gpu_spec *p80 = pp_catalog_gpu(c, "a100-pcie-80gb");
    const pp_gpu_spec *s40 = pp_catalog_gpu(c, "a100-sxm4-40gb");
    assert_non_null(p80);
    assert_non_null(s40);
    assert_true(p80->hbm_Bps == 1935e9);
    assert_true(s40->hbm_Bps == 1555e9);
    assert_true(s40->hbm_bytes == 40960.0 * 1048576.0);
    assert_true(s40->peak_flops[PP_DTYPE_BF16] == 312e12);
    pp_catalog_free(c);
}

static void test_shipped_gpus(void **state) {
    (void)state;
    static const struct {
        const char *name;
        int nvlink_gen;
        double nvlink_Bps; /* domain.md where it says */
    } gpus[] = {
        {"p100-sxm2-16gb", 1, 80e9},  {"v100-sxm2-32gb", 2, 150e9},
        {"a100-pcie-40gb", 3, 300e9}, {"a100-sxm4-40gb", 3, 300e9},
        {"a100-pcie-80gb", 3, 300e9}, {"a100-sxm4-80gb", 3, 300e9},
        {"h100-pcie", 4, 300e9},      {"h100-sxm5", 4, 450e9},
        {"h200-sxm", 4, 450e9},       {"b200", 5, 900e9},
    };
    pp_catalog *c = load_shipped();
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        const pp_gpu_spec *g = pp_catalog_gpu(c, gpus[i].name);
        if (!g) print_error("missing GPU %s\n", gpus[i].name);
        assert_non_null(g);
        assert_int_equal(g->nvlink_gen, gpus[i].nvlink_gen);
        assert_true(g->nvlink_Bps == gpus[i].nvlink_Bps);
        /* Every GPU has the 16-bit tensor rate and fp32. */
        assert_true(g->peak_flops[PP_DTYPE_BF16] >
                    g->peak_flops[PP_DTYPE_FP32]);
        assert_true(g->peak_flops[PP_DTYPE_FP32] > 0);
        assert_true(g->hbm_bytes > 0 && g->hbm_Bps > 0);
        assert_true(g->sms > 0 && g->tdp_w > 0);
        assert_true(g->pcie_gen >= 3 && g->pcie_lanes == 16);
    }
    /* HBM as nvidia-smi's memory.total reports it, in MiB, not the
     * marketed figure read as decimal GB: the H100's "80GB" is 85.5e9
     * bytes, the GB200's "186GB" 198.7e9, the B300's "288GB" 288.4e9. */
    static const struct {
        const char *name;
        double mib, marketed;
    } hbm[] = {{"h100-sxm5", 81559, 80e9},  {"h800-sxm5", 81559, 80e9},
               {"h200-sxm", 143771, 141e9}, {"b200", 183359, 180e9},
               {"gb200", 189471, 186e9},    {"b300", 275040, 288e9},
               {"gb300", 284208, 288e9}};
    for (size_t i = 0; i < sizeof hbm / sizeof hbm[0]; i++) {
        const pp_gpu_spec *g = pp_catalog_gpu(c, hbm[i].name);
        assert_non_null(g);
        assert_true(g->hbm_bytes == hbm[i].mib * 1048576.0);
        assert_true(g->hbm_bytes > hbm[i].marketed);
    }
    /* fp8 from Hopper on only. */
    assert_true(pp_catalog_gpu(c, "v100-sxm2-32gb")->peak_flops[PP_DTYPE_FP8] ==
                0);
    assert_true(pp_catalog_gpu(c, "h100-sxm5")->peak_flops[PP_DTYPE_FP8] ==
                1979e12);
    pp_catalog_free(c);
}

static void test_shipped_links(void **state) {
    (void)state;
    pp_catalog *c = load_shipped();
    const pp_link_spec *l = pp_catalog_link(c, "hdr");
    assert_non_null(l);
    assert_int_equal(l->cls, PP_LCLASS_INFINIBAND);
    assert_true(l->bw_Bps == 25e9); /* 200Gbps, exactly */
    assert_true(l->lat_s == 600e-9);
    assert_true(l->hca_price_usd > 0 && l->cable_price_usd > 0);
    assert_true(l->hca_power_w > 0);

    static const struct {
        const char *name;
        pp_link_class cls;
        double bw_Bps;
    } links[] = {
        {"edr", PP_LCLASS_INFINIBAND, 12.5e9},
        {"ndr", PP_LCLASS_INFINIBAND, 50e9},
        {"xdr", PP_LCLASS_INFINIBAND, 100e9},
        {"10gbe", PP_LCLASS_ETHERNET, 1.25e9},
        {"25gbe", PP_LCLASS_ETHERNET, 3.125e9},
        {"50gbe", PP_LCLASS_ETHERNET, 6.25e9},
        {"100gbe", PP_LCLASS_ETHERNET, 12.5e9},
        {"200gbe", PP_LCLASS_ETHERNET, 25e9},
        {"400gbe", PP_LCLASS_ETHERNET, 50e9},
        {"pcie3-x16", PP_LCLASS_PCIE, 15.754e9},
        {"pcie4-x1", PP_LCLASS_PCIE, 1.9692e9},
        {"nvlink2", PP_LCLASS_NVLINK, 25e9},
        {"nvlink5", PP_LCLASS_NVLINK, 50e9},
    };
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        const pp_link_spec *x = pp_catalog_link(c, links[i].name);
        if (!x) print_error("missing link %s\n", links[i].name);
        assert_non_null(x);
        assert_int_equal(x->cls, links[i].cls);
        assert_true(x->bw_Bps == links[i].bw_Bps);
        assert_true(x->lat_s > 0);
    }
    /* x16 is 16 lanes, to the digits written. */
    double x1 = pp_catalog_link(c, "pcie5-x1")->bw_Bps;
    double x16 = pp_catalog_link(c, "pcie5-x16")->bw_Bps;
    assert_true(x16 > 15.99 * x1 && x16 < 16.01 * x1);
    /* TCP 10GbE is slower to start than RDMA. */
    assert_true(pp_catalog_link(c, "10gbe")->lat_s >
                pp_catalog_link(c, "100gbe")->lat_s);
    assert_int_equal(pp_catalog_link(c, "upi")->cls, PP_LCLASS_CPU);
    assert_int_equal(pp_catalog_link(c, "xgmi")->cls, PP_LCLASS_CPU);
    pp_catalog_free(c);
}

static void test_shipped_switches_servers(void **state) {
    (void)state;
    pp_catalog *c = load_shipped();
    const pp_switch_spec *s = pp_catalog_switch(c, "qm8700");
    assert_non_null(s);
    assert_int_equal(s->radix, 40);
    assert_string_equal(s->port, "hdr");
    assert_true(s->lat_s == 130e-9);
    assert_int_equal(pp_catalog_switch(c, "qm9700")->radix, 64);
    assert_string_equal(pp_catalog_switch(c, "qm9700")->port, "ndr");
    assert_int_equal(pp_catalog_switch(c, "sb7800")->radix, 36);
    assert_string_equal(pp_catalog_switch(c, "sb7800")->port, "edr");
    assert_string_equal(pp_catalog_switch(c, "eth-10gbe-48")->port, "10gbe");
    assert_string_equal(pp_catalog_switch(c, "eth-100gbe-32")->port, "100gbe");
    assert_string_equal(pp_catalog_switch(c, "eth-400gbe-64")->port, "400gbe");

    const pp_server_spec *d = pp_catalog_server(c, "dgx-a100");
    assert_non_null(d);
    assert_true(d->includes_gpus && d->includes_hcas);
    assert_true(d->price_usd > 0 && d->power_w > 0 && d->price_year > 2000);
    const pp_server_spec *h = pp_catalog_server(c, "hpe-apollo-6500");
    assert_non_null(h);
    assert_false(h->includes_gpus);
    assert_non_null(pp_catalog_server(c, "dgx-h100"));
    assert_non_null(pp_catalog_server(c, "pcie-8gpu"));
    assert_non_null(pp_catalog_server(c, "big-basin-p100"));
    pp_catalog_free(c);
}

static void test_lookup_and_suggest(void **state) {
    (void)state;
    pp_catalog *c = load_shipped();
    assert_null(pp_catalog_gpu(c, "a100-sxm-80gb"));
    assert_string_equal(pp_catalog_suggest(c, PP_CAT_GPU, "a100-sxm-80gb"),
                        "a100-sxm4-80gb");
    assert_string_equal(pp_catalog_suggest(c, PP_CAT_LINK, "hdrr"), "hdr");
    assert_string_equal(pp_catalog_suggest(c, PP_CAT_SWITCH, "qm8800"),
                        "qm8700");
    assert_string_equal(pp_catalog_suggest(c, PP_CAT_SERVER, "dgx-a10"),
                        "dgx-a100");
    assert_null(pp_catalog_suggest(c, PP_CAT_GPU, "tpu-v4-pod"));
    assert_null(pp_catalog_suggest(c, PP_CAT_GPU, NULL));
    /* Kinds do not mix: "hdr" is a link, not a GPU. */
    assert_null(pp_catalog_gpu(c, "hdr"));
    assert_null(pp_catalog_link(c, NULL));
    assert_null(pp_catalog_gpu(NULL, "b200"));
    pp_catalog_free(c);
    pp_catalog_free(NULL);
}

static void test_load_by_name_and_path(void **state) {
    (void)state;
    pp_catalog *c = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_catalog_load("hardware", &c, &e), 0);
    assert_non_null(pp_catalog_gpu(c, "b200"));
    pp_catalog_free(c);

    char path[4096];
    const char *root = getenv("PODPLAN_DATA_DIR");
    snprintf(path, sizeof path, "%s/topologies/hardware.yaml",
             root ? root : PODPLAN_SOURCE_DIR);
    c = NULL;
    assert_int_equal(pp_catalog_load(path, &c, &e), 0);
    assert_non_null(pp_catalog_switch(c, "qm8700"));
    pp_catalog_free(c);

    /* Failure leaves *out untouched. */
    pp_catalog *sentinel = (pp_catalog *)&e;
    c = sentinel;
    assert_int_equal(pp_catalog_load("/nonexistent/hw.yaml", &c, &e),
                     PP_ENOENT);
    assert_ptr_equal(c, sentinel);
}

/* ------------------------------------------------------------------------
 * Broken catalogues.  Each is the minimal catalogue below with one line
 * changed; the message must match exactly, location included.
 * ---------------------------------------------------------------------- */
static const char *const good_lines[] = {
    /*  1 */ "gpus:",
    /*  2 */ "  g1:",
    /*  3 */ "    peak: {bf16: 312TFLOPS}",
    /*  4 */ "    hbm: 80GB",
    /*  5 */ "    hbm_bw: 2039GB/s",
    /*  6 */ "    pcie: {gen: 4, lanes: 16}",
    /*  7 */ "    sms: 108",
    /*  8 */ "    tdp_w: 400",
    /*  9 */ "links:",
    /* 10 */ "  hdr: {class: infiniband, bw: 200Gbps, latency: 600ns}",
    /* 11 */ "  pcie4-x16: {class: pcie, bw: 31.5GB/s, latency: 500ns}",
    /* 12 */ "switches:",
    /* 13 */ "  qm8700: {radix: 40, port: hdr, latency: 130ns}",
    /* 14 */ "servers:",
    /* 15 */ "  s1: {usd: 1000, power_w: 500, year: 2023}",
};
#define N_GOOD (sizeof good_lines / sizeof good_lines[0])

typedef struct {
    char dir[64];
    char path[128];
} tmpcat;

static int setup_tmp(void **state) {
    tmpcat *t = calloc(1, sizeof *t);
    if (!t) return -1;
    snprintf(t->dir, sizeof t->dir, "/tmp/podplan-cat-XXXXXX");
    if (!mkdtemp(t->dir)) {
        free(t);
        return -1;
    }
    snprintf(t->path, sizeof t->path, "%s/hw.yaml", t->dir);
    *state = t;
    return 0;
}

static int teardown_tmp(void **state) {
    tmpcat *t = *state;
    remove(t->path);
    rmdir(t->dir);
    free(t);
    return 0;
}

/* Writes the good catalogue with line `line` (1-based) replaced by
 * `text` (NULL deletes it; line 0 changes nothing) and loads it.
 * Returns the status; the message is in e. */
static int load_variant(const tmpcat *t, size_t line, const char *text,
                        pp_error *e) {
    FILE *fp = fopen(t->path, "w");
    assert_non_null(fp);
    for (size_t i = 0; i < N_GOOD; i++) {
        if (i + 1 == line) {
            if (text) fprintf(fp, "%s\n", text);
        } else {
            fprintf(fp, "%s\n", good_lines[i]);
        }
    }
    assert_int_equal(fclose(fp), 0);
    pp_catalog *c = NULL;
    pp_error_clear(e);
    int rc = pp_catalog_load(t->path, &c, e);
    pp_catalog_free(c);
    return rc;
}

/* The variant must fail with "<path>:<want>". */
static void expect_error(const tmpcat *t, size_t line, const char *text,
                         const char *want) {
    pp_error e = PP_ERROR_INIT;
    char full[PP_ERROR_MSG_MAX];
    int rc = load_variant(t, line, text, &e);
    snprintf(full, sizeof full, "%s:%s", t->path, want);
    if (rc != PP_EINPUT || strcmp(e.msg, full) != 0)
        print_error("line %zu -> \"%s\"\n  got  (%d) %s\n  want %s\n", line,
                    text ? text : "(deleted)", rc, e.msg, full);
    assert_int_equal(rc, PP_EINPUT);
    assert_string_equal(e.msg, full);
}

static void test_minimal_loads(void **state) {
    pp_error e = PP_ERROR_INIT;
    int rc = load_variant(*state, 0, NULL, &e);
    if (rc) print_error("%s\n", e.msg);
    assert_int_equal(rc, 0);
}

static void test_bad_unknown_key(void **state) {
    expect_error(*state, 10,
                 "  hdr: {class: infiniband, bw: 200Gbps, latency: 600ns, "
                 "hca_power: 15}",
                 "10:57: links.hdr.hca_power: unknown key (did you mean "
                 "\"hca_power_w\"?)");
    expect_error(*state, 7, "    smss: 108",
                 "7:5: gpus.g1.smss: unknown key (did you mean \"sms\"?)");
    expect_error(*state, 12, "switchs:",
                 "12:1: switchs: unknown key (did you mean \"switches\"?)");
    expect_error(*state, 3, "    peak: {bf16: 312TFLOPS, fp16: 312TFLOPS}",
                 "3:29: gpus.g1.peak.fp16: unknown key (the 16-bit rate is "
                 "bf16, which covers fp16)");
}

static void test_bad_switch_port(void **state) {
    expect_error(*state, 13,
                 "  qm8700: {radix: 40, port: hdrr, latency: 130ns}",
                 "13:29: switches.qm8700.port: unknown link \"hdrr\" (did "
                 "you mean \"hdr\"?)");
    expect_error(*state, 13, "  qm8700: {radix: 40, port: opa, latency: 130ns}",
                 "13:29: switches.qm8700.port: unknown link \"opa\" (not in "
                 "the catalogue's links)");
    expect_error(*state, 13,
                 "  qm8700: {radix: 40, port: pcie4-x16, latency: 130ns}",
                 "13:29: switches.qm8700.port: link \"pcie4-x16\" is of "
                 "class pcie; a switch port must be infiniband, ethernet or "
                 "nvlink");
}

static void test_bad_bandwidth_unit(void **state) {
    expect_error(*state, 10,
                 "  hdr: {class: infiniband, bw: 200GB, latency: 600ns}",
                 "10:32: links.hdr.bw: expected a bandwidth such as 200Gbps "
                 "or 25GB/s, got a byte size in \"200GB\"");
    expect_error(*state, 5, "    hbm_bw: 0GB/s",
                 "5:13: gpus.g1.hbm_bw: expected a positive bandwidth, got "
                 "\"0GB/s\"");
}

static void test_bad_missing_peak(void **state) {
    expect_error(*state, 3, NULL, "3:5: gpus.g1.peak: missing (required)");
    expect_error(*state, 3, "    peak: {}",
                 "3:11: gpus.g1.peak: expected at least one of fp64, "
                 "fp64_tc, fp32, tf32, bf16, fp8, int8, fp4");
}

static void test_bad_latency(void **state) {
    expect_error(*state, 10,
                 "  hdr: {class: infiniband, bw: 200Gbps, latency: -600ns}",
                 "10:50: links.hdr.latency: expected a non-negative time, "
                 "got \"-600ns\"");
}

static void test_bad_other(void **state) {
    expect_error(*state, 10,
                 "  hdr: {class: infiniband, bw: 200Gbps, latency: 600ns, "
                 "hca_usd: 1500}",
                 "10:8: links.hdr.year: missing (required when a price is "
                 "given)");
    expect_error(*state, 10,
                 "  hdr: {class: infiniban, bw: 200Gbps, latency: 600ns}",
                 "10:16: links.hdr.class: expected one of "
                 "pcie|nvlink|infiniband|ethernet|cpu, got \"infiniban\" "
                 "(did you mean \"infiniband\"?)");
    expect_error(*state, 2, "  g 1:",
                 "2:3: gpus.g 1: expected a name of 1 to 63 letters, "
                 "digits, '-' or '_'");
    expect_error(*state, 15, "  s1: {usd: 1000, year: 2023}",
                 "15:7: servers.s1.power_w: missing (required)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_a100),
        cmocka_unit_test(test_shipped_gpus),
        cmocka_unit_test(test_shipped_links),
        cmocka_unit_test(test_shipped_switches_servers),
        cmocka_unit_test(test_lookup_and_suggest),
        cmocka_unit_test(test_load_by_name_and_path),
        cmocka_unit_test_setup_teardown(test_minimal_loads, setup_tmp,
                                        teardown_tmp),
        cmocka_unit_test_setup_teardown(test_bad_unknown_key, setup_tmp,
                                        teardown_tmp),
        cmocka_unit_test_setup_teardown(test_bad_switch_port, setup_tmp,
                                        teardown_tmp),
        cmocka_unit_test_setup_teardown(test_bad_bandwidth_unit, setup_tmp,
                                        teardown_tmp),
        cmocka_unit_test_setup_teardown(test_bad_missing_peak, setup_tmp,
                                        teardown_tmp),
        cmocka_unit_test_setup_teardown(test_bad_latency, setup_tmp,
                                        teardown_tmp),
        cmocka_unit_test(test_profile_hw_alone),
        cmocka_unit_test_setup_teardown(test_bad_other, setup_tmp,
                                        teardown_tmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
