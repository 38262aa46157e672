/*
 * test_calibrate_import.c: the importers on captured outputs (tests/data/
 * calibrate/, each file's header names its source) and on every other
 * format, with specific sizes and values checked; the measurement set's
 * JSON round trip; SHA-256 against FIPS 180-2's vectors.
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

#include "cal_util.h"
#include "cli_run.h"
#include "podplan/calibrate.h"

void pp__sha256_hex(const void *data, size_t len, char out[65]);

#define DATA PODPLAN_SOURCE_DIR "/tests/data/calibrate/"

static void near(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.9g, want %.9g (rel %.1e)", got, want, rel);
}

static const pp_cal_point *find(const pp_cal_set *s, const char *op,
                                double bytes, const char *variant) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->pts[i].op, op) && s->pts[i].bytes == bytes &&
            (!variant || !strcmp(s->pts[i].variant, variant)))
            return &s->pts[i];
    fail_msg("no %s point at %g bytes", op, bytes);
    return NULL;
}

static void load(pp_cal_set *s, const char *file, const pp_cal_hints *h) {
    pp_error e = PP_ERROR_INIT;
    if (pp_cal_import(s, file, h, &e)) fail_msg("%s", e.msg);
}

static void test_sha256(void **state) {
    (void)state;
    char h[65];
    pp__sha256_hex("abc", 3, h);
    assert_string_equal(
        h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    pp__sha256_hex("", 0, h);
    assert_string_equal(
        h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    pp__sha256_hex(two, strlen(two), h);
    assert_string_equal(
        h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_nccl_multinode(void **state) {
    (void)state;
    pp_cal_set s;
    pp_cal_set_init(&s);
    pp_cal_hints h = {0};
    h.link = "ethernet";
    load(&s, DATA "nccl-h100-2x8-allreduce.txt", &h);
    assert_int_equal(s.n, 62); /* 31 sizes x out-of-place, in-place */
    assert_string_equal(s.src[0].format, "nccl-tests");
    assert_int_equal(strlen(s.src[0].sha256), 64);
    const pp_cal_point *p = find(&s, "allreduce", 8, "out-of-place");
    assert_int_equal(p->line, 30);
    assert_int_equal(p->ranks, 16);
    assert_int_equal(p->nodes, 2);
    assert_int_equal(p->scope, PP_CAL_SCOPE_INTER);
    assert_string_equal(p->link, "ethernet");
    near(p->time_s, 135.8e-6, 1e-12);
    near(find(&s, "allreduce", 8, "in-place")->time_s, 123.5e-6, 1e-12);
    p = find(&s, "allreduce", 1073741824, "out-of-place");
    near(p->time_s, 6759.0e-6, 1e-12);
    near(p->bw_Bps, 297.86e9, 1e-12);
    p = find(&s, "allreduce", 8589934592.0, "in-place");
    near(p->time_s, 47743e-6, 1e-12);
    near(p->bw_Bps, 337.35e9, 1e-12);
    char loc[256];
    assert_non_null(strstr(pp_cal_point_loc(&s, p, loc, sizeof loc),
                           "nccl-h100-2x8-allreduce.txt:60"));
    pp_cal_set_fini(&s);
}

/* nccl-tests' -J output: calibrate/examples/nccl-tests-h100-2x8-allreduce.json
 * is the same run as the text capture, transcribed in util.cu's JSON
 * form; both must give the same points. */
static void test_nccl_json(void **state) {
    (void)state;
    pp_cal_set s, t;
    pp_cal_set_init(&s);
    pp_cal_set_init(&t);
    load(&s, PODPLAN_SOURCE_DIR
         "/calibrate/examples/nccl-tests-h100-2x8-allreduce.json",
         NULL);
    load(&t, DATA "nccl-h100-2x8-allreduce.txt", NULL);
    assert_string_equal(s.src[0].format, "nccl-tests-json");
    assert_int_equal(s.n, 62);
    assert_int_equal(s.n, t.n);
    for (size_t i = 0; i < s.n; i++) {
        const pp_cal_point *a = &s.pts[i], *b = &t.pts[i];
        assert_string_equal(a->op, "allreduce");
        assert_true(a->bytes == b->bytes);
        assert_string_equal(a->variant, b->variant);
        near(a->time_s, b->time_s, 1e-12);
        assert_int_equal(a->ranks, 16); /* 16 processes x 1 x 1 */
        assert_int_equal(a->nodes, 2);  /* two host names */
        assert_int_equal(a->scope, PP_CAL_SCOPE_INTER);
        assert_int_equal(a->repeats, 20);
    }
    char loc[256];
    const pp_cal_point *p = find(&s, "allreduce", 8589934592.0, "in-place");
    near(p->time_s, 47743e-6, 1e-12);
    assert_non_null(strstr(pp_cal_point_loc(&s, p, loc, sizeof loc),
                           "allreduce.json:results[30].in_place"));
    pp_cal_set_fini(&s);
    pp_cal_set_fini(&t);

    /* One process driving 4 GPUs (-g 4, no MPI), per-iteration spread,
     * a variant not run (null) and a NaN timing skipped, cpu_time (-C). */
    static const char one[] =
        "{\"version\":2,\"args\":[\"./build/reduce_scatter_perf\",\"-g\","
        "\"4\"],\"env\":[],\"nccl_version\":22703,\"config\":{\"nthreads\":1,"
        "\"ngpus\":4,\"devices\":[{\"rank\":0,\"hostname\":\"h0\"}]},"
        "\"results\":[{\"size\":1024,\"count\":64,\"out_of_place\":null,"
        "\"in_place\":{\"cpu_time\":12.5,\"alg_bw\":0.08,\"bus_bw\":0.06,"
        "\"nwrong\":0.0},\"in_place_per_iter\":{\"stdev_us\":2.0},"
        "\"actual_iterations\":4},{\"size\":2048,\"count\":128,"
        "\"out_of_place\":{\"time\":\"nan\"},\"in_place\":{\"time\":13.0},"
        "\"actual_iterations\":4}]}";
    pp_error e = PP_ERROR_INIT;
    pp_cal_set_init(&s);
    if (pp_cal_import_text(&s, "one.json", one, strlen(one), NULL, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.pts[0].op, "reducescatter");
    assert_int_equal(s.pts[0].ranks, 4);
    assert_int_equal(s.pts[0].scope, PP_CAL_SCOPE_INTRA);
    assert_string_equal(s.pts[0].variant, "in-place");
    near(s.pts[0].time_s, 12.5e-6, 1e-12);
    near(s.pts[0].time_sd_s, 1e-6, 1e-12); /* 2 us / sqrt(4) */
    near(s.pts[1].time_s, 13e-6, 1e-12);
    pp_cal_set_fini(&s);

    /* Broken: exit with the place and what was expected; nothing added. */
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"{\"nccl_version\":1,\"config\":{},\"results\":[{\"size\":8,",
         "bad.json:1:"},
        {"{\"nccl_version\":1,\"args\":[\"all_gather_perf\"],\"config\":{},"
         "\"results\":[{\"size\":8,\"in_place\":{\"time\":1.0}},"
         "{\"size\":16,\"in_place\":{\"time\":\"fast\"}}]}",
         "bad.json:results[1].in_place.time: expected a time in "
         "microseconds > 0"},
        {"{\"nccl_version\":1,\"args\":[\"all_gather_perf\"],\"config\":{},"
         "\"results\":[{\"size\":-8,\"in_place\":{\"time\":1.0}}]}",
         "bad.json:results[0].size: expected a byte count"},
        {"{\"nccl_version\":1,\"args\":[\"./a.out\"],\"config\":{},"
         "\"results\":[{\"size\":8,\"in_place\":{\"time\":1.0}}]}",
         "bad.json:args[0]: expected the nccl-tests binary"},
        {"{\"nccl_version\":1,\"args\":[\"all_gather_perf\"],\"config\":"
         "{\"ngpus\":0},\"results\":[{\"size\":8}]}",
         "bad.json:config.ngpus: expected an integer >= 1"},
        {"{\"nccl_version\":1,\"args\":[\"all_gather_perf\"],\"config\":{},"
         "\"results\":[]}",
         "bad.json:results: expected a non-empty array"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_cal_set_init(&s);
        pp_error_clear(&e);
        int rc = pp_cal_import_text(&s, "bad.json", bad[i].text,
                                    strlen(bad[i].text), NULL, &e);
        assert_int_equal(rc, PP_EINPUT);
        if (!strstr(e.msg, bad[i].want))
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, e.msg,
                     bad[i].want);
        assert_int_equal(s.n, 0);
        assert_int_equal(s.n_src, 0);
        pp_cal_set_fini(&s);
    }

    /* Through the command: exit 2, no output file. */
    const char *path = "/tmp/podplan-test-nccl-bad.json";
    const char *out = "/tmp/podplan-test-nccl-bad-out.json";
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(bad[1].text, fp);
    fclose(fp);
    unlink(out);
    cli_result r;
    cli_runf(&r, "calibrate import %s -o %s", path, out);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "results[1].in_place.time"));
    assert_int_equal(access(out, F_OK), -1);
    cli_result_free(&r);
}

static void test_nccl_old_format(void **state) {
    (void)state;
    pp_cal_set s;
    pp_cal_set_init(&s);
    pp_cal_hints h = {0};
    h.op = "allgather";
    load(&s, DATA "nccl-2gpu-oldformat.txt", &h);
    assert_int_equal(s.n, 24);
    const pp_cal_point *p = find(&s, "allgather", 65536, "out-of-place");
    near(p->time_s, 16.57e-6, 1e-12);
    assert_int_equal(p->ranks, 2); /* nThread 1 x nGpus 2, one process */
    assert_int_equal(p->scope, PP_CAL_SCOPE_INTRA);
    p = find(&s, "allgather", 134217728, "in-place");
    near(p->time_s, 3070.3e-6, 1e-12);
    near(p->bw_Bps, 21.86e9, 1e-12);
    pp_cal_set_fini(&s);
}

static void test_perftest_gbits(void **state) {
    (void)state;
    pp_cal_set s;
    pp_cal_set_init(&s);
    load(&s, DATA "perftest-ib_write_bw-gbits.txt", NULL);
    assert_int_equal(s.n, 23);
    const pp_cal_point *p = find(&s, "write_bw", 65536, NULL);
    assert_string_equal(p->link, "roce"); /* Link type: Ethernet */
    assert_int_equal(p->repeats, 5000);
    near(p->bw_Bps, 92.38e9 / 8, 1e-12);
    near(p->time_s, 65536 / (92.38e9 / 8), 1e-12);
    near(find(&s, "write_bw", 2, NULL)->bw_Bps, 0.11e9 / 8, 1e-12);
    pp_cal_set_fini(&s);

    pp_cal_set_init(&s);
    load(&s, DATA "perftest-ib_write_bw-postlist.txt", NULL);
    assert_int_equal(s.n, 1);
    near(s.pts[0].bw_Bps, 0.48e9 / 8, 1e-12);
    assert_int_equal(s.pts[0].repeats, 224958464);
    pp_cal_set_fini(&s);
}

static void test_perftest_mbytes_and_latency(void **state) {
    (void)state;
    pp_cal_set s;
    pp_cal_set_init(&s);
    load(&s, DATA "perftest-ib_send-ud-mbytes.txt", NULL);
    assert_int_equal(s.n, 24);
    const pp_cal_point *p = find(&s, "send_bw", 4096, NULL);
    /* perftest's MB is 2^20 B: 4096 B x 1.579554 Mpps = 6170.13 MB/s. */
    near(p->bw_Bps, 6170.13 * 1048576, 1e-12);
    near(p->bw_Bps, 4096 * 1.579554e6, 1e-4);
    assert_string_equal(p->link, "infiniband");
    p = find(&s, "send_lat", 2, NULL);
    near(p->time_s, 1.67e-6, 1e-12); /* t_typical: the median */
    near(p->time_sd_s, 0.28e-6, 1e-12);
    p = find(&s, "send_lat", 4096, NULL);
    near(p->time_s, 3.73e-6, 1e-12);
    pp_cal_set_fini(&s);
}

static const char csv[] = "# a GEMM sweep\n"
                          "m,n,k,batch,time_us,repeats\n"
                          "4096,4096,4096,1,520.5,10\n"
                          "1024, 1024, 64, 8, 35.25, 10\n";

static const char yaml[] = "source: Narayanan et al. 2021, Table 1\n"
                           "iterations:\n"
                           "  - model: megatron-1.7b\n"
                           "    cluster: selene-like\n"
                           "    parallel: tp=1,pp=1,dp=32,mbs=16,gbs=512\n"
                           "    tflops_per_gpu: 137\n"
                           "    dp_overlap: true\n"
                           "    bucket: 25MB\n"
                           "  - model: megatron-3.6b\n"
                           "    parallel: tp=2,pp=1,dp=32,mbs=16,gbs=512\n"
                           "    seconds: 4.5s\n";

static const char mlog[] =
    "some preamble\n"
    " iteration       10/  500000 | consumed samples: 5120 | elapsed time per "
    "iteration (ms): 4120.3 | lr: 1.5E-05 |\n"
    " iteration       20/  500000 | consumed samples: 10240 | elapsed time per "
    "iteration (ms): 4101.9\n";

static void test_other_formats(void **state) {
    (void)state;
    pp_cal_set s;
    pp_error e = PP_ERROR_INIT;
    pp_cal_set_init(&s);
    if (pp_cal_import_text(&s, "sweep.csv", csv, strlen(csv), NULL, &e) ||
        pp_cal_import_text(&s, "it.yaml", yaml, strlen(yaml), NULL, &e))
        fail_msg("%s", e.msg);
    pp_cal_hints h = {0};
    h.model = "megatron-1.7b";
    h.cluster = "selene-like";
    h.parallel = "tp=1,pp=1,dp=32,mbs=16,gbs=512";
    if (pp_cal_import_text(&s, "run.log", mlog, strlen(mlog), &h, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(s.n, 2 + 2 + 2);
    /* CSV */
    assert_int_equal(s.pts[1].kind, PP_CAL_GEMM);
    near(s.pts[1].batch, 8, 0);
    near(s.pts[1].k, 64, 0);
    near(s.pts[1].time_s, 35.25e-6, 1e-12);
    assert_int_equal(s.pts[1].line, 4);
    /* YAML */
    assert_int_equal(s.pts[2].kind, PP_CAL_ITER);
    near(s.pts[2].tflops, 137, 0);
    assert_true(s.pts[2].dp_overlap);
    near(s.pts[2].bucket_bytes, 25e6, 1e-12);
    assert_int_equal(s.pts[2].line, 3);
    near(s.pts[3].time_s, 4.5, 1e-12);
    /* Megatron-LM log */
    assert_int_equal(s.pts[4].line, 2);
    near(s.pts[5].time_s, 4.1019, 1e-12);
    assert_string_equal(s.pts[5].model, "megatron-1.7b");

    /* The set round-trips through its JSON. */
    pp_cal_set t;
    cal_roundtrip(&s, &t);
    for (size_t i = 0; i < s.n; i++) {
        assert_int_equal(t.pts[i].kind, s.pts[i].kind);
        near(t.pts[i].time_s + t.pts[i].tflops,
             s.pts[i].time_s + s.pts[i].tflops, 1e-11);
        assert_int_equal(t.pts[i].line, s.pts[i].line);
        assert_string_equal(t.src[t.pts[i].source].path,
                            s.src[s.pts[i].source].path);
        assert_string_equal(t.src[t.pts[i].source].sha256,
                            s.src[s.pts[i].source].sha256);
    }
    pp_cal_set_fini(&t);
    pp_cal_set_fini(&s);
}

static void test_errors_leave_set_unchanged(void **state) {
    (void)state;
    pp_cal_set s;
    pp_error e = PP_ERROR_INIT;
    pp_cal_set_init(&s);
    if (pp_cal_import_text(&s, "sweep.csv", csv, strlen(csv), NULL, &e))
        fail_msg("%s", e.msg);
    const char bad_json[] =
        "{\"backend\": \"cpu\",\n \"dtype\": \"fp32\",\n \"results\": [}\n";
    assert_int_equal(pp_cal_import_text(&s, "bad.json", bad_json,
                                        strlen(bad_json), NULL, &e),
                     PP_EINPUT);
    assert_non_null(strstr(e.msg, "bad.json:3:"));
    assert_int_equal(s.n, 2);
    assert_int_equal(s.n_src, 1);
    pp_error_clear(&e);
    const char bad_exec[] = "{\"backend\": \"cuda\", \"dtype\": \"bf16\", "
                            "\"results\": [{\"m\": 1, \"n\": 2, "
                            "\"time_median_s\": 1e-3}]}";
    assert_int_equal(
        pp_cal_import_text(&s, "g.json", bad_exec, strlen(bad_exec), NULL, &e),
        PP_EINPUT);
    assert_string_equal(e.msg,
                        "g.json:results[0]: k: expected a number (missing)");
    assert_int_equal(s.n, 2);
    pp_cal_set_fini(&s);
}

/* Writes what a command printed to a file under the build tree. */
static char *save(const cli_result *r, const char *name) {
    static char path[4][256];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, sizeof path[0], "calibrate-import-%s-%d.json", name,
             (int)getpid());
    FILE *fp = fopen(p, "w");
    if (!fp || fputs(r->out, fp) < 0) fail_msg("cannot write %s", p);
    fclose(fp);
    return p;
}

/* The importer against what `podplan exec ... --format json` prints now:
 * small runs made here, so a change of exec's schema fails this test. */
static void test_exec_json(void **state) {
    (void)state;
    cli_result c, g, m;
    cli_runf(&c, "exec collective --np 3 -b 1K -e 64K -f 8 -n 3 -w 1 "
                 "--format json");
    cli_runf(&g, "exec gemm --backend cpu --square 32,64 --iters 3 --warmup 1 "
                 "--format json");
    cli_runf(&m, "exec membw --sizes 1MiB --iters 3 --kernel copy,triad "
                 "--format json");
    assert_int_equal(c.status, 0);
    assert_int_equal(g.status, 0);
    assert_int_equal(m.status, 0);
    const char *pc = save(&c, "coll"), *pg = save(&g, "gemm"),
               *pm = save(&m, "membw");
    pp_cal_set s;
    pp_error e = PP_ERROR_INIT;
    pp_cal_set_init(&s);
    if (pp_cal_import(&s, pc, NULL, &e) || pp_cal_import(&s, pg, NULL, &e) ||
        pp_cal_import(&s, pm, NULL, &e))
        fail_msg("%s", e.msg);
    assert_string_equal(s.src[0].format, "exec-collective");
    assert_string_equal(s.src[1].format, "exec-gemm");
    assert_string_equal(s.src[2].format, "exec-membw");
    /* 1K, 8K, 64K: two points each (out-of-place, in-place). */
    assert_int_equal(s.n, 6 + 2 + 2);
    json_t *cj = cli_json(&c);
    json_t *r0 = json_array_get(json_object_get(cj, "results"), 0);
    const pp_cal_point *p = &s.pts[0];
    assert_int_equal(p->kind, PP_CAL_COLL);
    assert_string_equal(p->op, "allreduce");
    assert_string_equal(p->algo,
                        json_string_value(json_object_get(r0, "algo")));
    assert_string_equal(p->link, "ethernet");
    assert_string_equal(p->variant, "out-of-place");
    assert_string_equal(p->where, "results[0].out_of_place");
    assert_int_equal(p->ranks, 3);
    assert_int_equal(p->nodes, 1);
    assert_int_equal(p->scope, PP_CAL_SCOPE_INTRA);
    near(p->bytes, 1024, 0);
    near(p->time_s,
         json_real_value(
             json_object_get(json_object_get(r0, "out_of_place"), "time_s")),
         1e-12);
    assert_string_equal(s.pts[1].variant, "in-place");
    near(s.pts[5].bytes, 65536, 0);
    json_decref(cj);
    p = &s.pts[6];
    assert_int_equal(p->kind, PP_CAL_GEMM);
    near(p->m, 32, 0);
    near(p->k, 32, 0);
    near(p->batch, 1, 0);
    assert_string_equal(p->device, "cpu");
    assert_string_equal(p->dtype, "fp32");
    assert_true(p->time_s > 0 && p->repeats == 3);
    p = &s.pts[8];
    assert_int_equal(p->kind, PP_CAL_MEMBW);
    near(p->bytes, 2 * 1048576, 0); /* copy moves two arrays */
    near(s.pts[9].bytes, 3 * 1048576, 0);
    assert_string_equal(p->device, "cpu");
    assert_string_equal(p->op, "copy");
    /* Host and CPU figures are measured, never fitted into a GPU profile. */
    pp_cal_fit f;
    pp_gpu_profile gp;
    pp_catalog *cat = NULL;
    if (pp_catalog_load(NULL, &cat, &e) ||
        pp_profile_load("a100", pp_catalog_gpu(cat, "a100-sxm4-80gb"), &gp, &e))
        fail_msg("%s", e.msg);
    pp_catalog_free(cat);
    if (pp_cal_fit_gemm(&s, NULL, &gp, &f, &e)) fail_msg("%s", e.msg);
    assert_int_equal(f.n_points, 0);
    assert_non_null(strstr(f.advice, "2 points not fitted"));
    pp_cal_fit_fini(&f);
    pp_cal_set_fini(&s);
    unlink(pc);
    unlink(pg);
    unlink(pm);
    cli_result_free(&c);
    cli_result_free(&g);
    cli_result_free(&m);
}

/* `exec gemm --streams` files (a lent H100, calibrate/examples/h100/
 * grouped): a grouped result is the GPU's own time of one group (its
 * CUDA-graph replay), validated against the simulator's grouped price,
 * never fitted; a broken grouped object is an input error. */
static void test_exec_grouped(void **state) {
    (void)state;
    const char *dir = PODPLAN_SOURCE_DIR "/calibrate/examples/h100/grouped/";
    char fs[512], fb[512];
    snprintf(fs, sizeof fs, "%sgemm-q30-fc1-bf16-s4.json", dir);
    snprintf(fb, sizeof fb, "%sgemm-q30-fc1-bf16-batch.json", dir);
    pp_cal_set s;
    pp_error e = PP_ERROR_INIT;
    pp_cal_set_init(&s);
    load(&s, fs, NULL);
    load(&s, fb, NULL);
    assert_int_equal(s.n, 4); /* 2048 and 4096 rows, each file */
    json_error_t je;
    json_t *j = json_load_file(fs, 0, &je);
    assert_non_null(j);
    json_t *r0 = json_array_get(json_object_get(j, "results"), 0);
    json_t *g0 = json_object_get(r0, "grouped");
    assert_int_equal(s.pts[0].streams, 4);
    near(s.pts[0].batch, 16, 0);
    near(s.pts[0].time_s, json_real_value(json_object_get(g0, "graph_s")),
         1e-12);
    assert_true(s.pts[0].time_s !=
                json_real_value(json_object_get(r0, "time_median_s")));
    assert_int_equal(s.pts[2].streams, 0);
    json_decref(j);

    /* Validated with the simulator's grouped price; not fitted. */
    pp_cal_result r;
    pp_cal_result_init(&r);
    pp_catalog *cat = NULL;
    if (pp_catalog_load(NULL, &cat, &e) ||
        pp_profile_load("h100", pp_catalog_gpu(cat, "h100-sxm5"), &r.profile,
                        &e))
        fail_msg("%s", e.msg);
    pp_catalog_free(cat);
    pp_cal_validation v;
    if (pp_cal_validate(&s, &r, 0, NULL, &v, &e)) fail_msg("%s", e.msg);
    assert_int_equal(v.n, 4);
    pp_gpu_profile x = r.profile;
    x.framework_efficiency = 1;
    const pp_cal_point *p = &s.pts[0];
    near(v.v[0].predicted_s,
         pp_gemm_grouped_time_s(&x, PP_GEMM_OPS_16, 16, p->m, p->n, p->k),
         1e-12);
    near(v.v[2].predicted_s, pp_gemm_time_s(&x, 16, 2048, 1536, 2048), 1e-12);
    pp_cal_validation_fini(&v);
    pp_cal_fit f;
    if (pp_cal_fit_gemm(&s, NULL, &r.profile, &f, &e)) fail_msg("%s", e.msg);
    assert_int_equal(f.n_points, 2);
    assert_non_null(strstr(f.advice, "2 points not fitted"));
    pp_cal_fit_fini(&f);
    pp_cal_result_fini(&r);

    /* A grouped object without a graph time: located, nothing added. */
    const char *bad = "/tmp/podplan-test-grouped-bad.json";
    FILE *fp = fopen(bad, "w");
    assert_non_null(fp);
    fputs("{\"backend\": \"cuda\", \"dtype\": \"bf16\", \"results\": "
          "[{\"batch\": 4, \"m\": 64, \"n\": 64, \"k\": 64, "
          "\"iters\": 5, \"time_median_s\": 1e-5, \"time_cv\": 0.1, "
          "\"grouped\": {\"streams\": 4, \"graph_s\": 0}}]}\n",
          fp);
    fclose(fp);
    size_t n = s.n;
    assert_int_equal(pp_cal_import(&s, bad, NULL, &e), PP_EINPUT);
    assert_non_null(strstr(e.msg, "results[0].grouped: graph_s"));
    assert_int_equal(s.n, n);
    unlink(bad);
    pp_cal_set_fini(&s);
}

static void test_cli_import(void **state) {
    (void)state;
    cli_result r;
    cli_runf(&r, "calibrate import %s --link ethernet",
             DATA "nccl-h100-2x8-allreduce.txt");
    assert_int_equal(r.status, 0);
    json_t *j = cli_json(&r);
    assert_int_equal(json_array_size(json_object_get(j, "points")), 62);
    json_decref(j);
    cli_result_free(&r);
}

/* A sweep comes as many files (a lent H200's session wrote 44 GEMM files,
 * one per shape set): import takes them all at once, where it stopped at
 * 16 with a bare "too many arguments" before.  Twenty copies of one file
 * give twenty times its points. */
static void test_cli_import_many(void **state) {
    (void)state;
    char cmd[4096];
    size_t n = (size_t)snprintf(cmd, sizeof cmd,
                                "calibrate import --link ethernet");
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " %s",
                              DATA "nccl-h100-2x8-allreduce.txt");
    assert_true(n < sizeof cmd);
    cli_result r;
    cli_runf(&r, "%s", cmd);
    if (r.status != 0) fail_msg("%s", r.err);
    json_t *j = cli_json(&r);
    assert_int_equal(json_array_size(json_object_get(j, "points")), 20 * 62);
    json_decref(j);
    cli_result_free(&r);
}

/* The whole loop with 2 and 3 local ranks and tiny sizes: the profile is
 * written, with the rank model, and both hold-outs are reported.  The
 * errors themselves are measurements of real TCP loopback, not something
 * a test may time: on a loaded 2-core machine (ctest -j2 beside other
 * suites, 3 ranks oversubscribed) the held-out size error was seen from
 * 35% to 85%.  So the test asserts what the loop must produce (a profile,
 * the hold-out reports, positive finite errors) and only a gross bound
 * that no noise reaches but a broken model does: predictions off by 10x
 * (a wrong unit, step count squared) give errors of 900%.  The figures
 * the README states come from runs on an idle machine. */
static void test_cli_run(void **state) {
    (void)state;
    char prof[64], rep[64];
    snprintf(prof, sizeof prof, "calibrate-run-%d.yaml", (int)getpid());
    snprintf(rep, sizeof rep, "calibrate-run-%d.json", (int)getpid());
    cli_result r;
    cli_runf(&r,
             "calibrate run --ranks 2,3 -b 4KiB -e 1MiB -f 4 -n 10 "
             "--holdout 3 --backend cpu -o %s --report %s",
             prof, rep);
    if (r.status) fail_msg("exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "rank count 3 (rank model fitted on the "
                                  "other counts)"));
    char *y = cli_slurp(prof);
    assert_non_null(y);
    assert_non_null(strstr(y, "network:"));
    assert_non_null(strstr(y, "(rank model)"));
    assert_non_null(strstr(y, "exec-collective-3ranks.json"));
    free(y);
    json_error_t je;
    json_t *j = json_load_file(rep, 0, &je);
    if (!j) fail_msg("%s: %s", rep, je.text);
    json_t *k = json_object_get(j, "holdout_sizes"),
           *h = json_object_get(j, "holdout_ranks");
    double ek = json_number_value(json_object_get(k, "mean_abs_error"));
    double eh = json_number_value(json_object_get(h, "mean_abs_error"));
    json_int_t hn = json_integer_value(json_object_get(h, "points")),
               hs = json_integer_value(json_object_get(h, "skipped"));
    printf("  held-out sizes: mean |error| %.1f%%; held-out 3 ranks: %.1f%% "
           "(%lld points, %lld without a fit)\n",
           100 * ek, 100 * eh, (long long)hn, (long long)hs);
    /* 5 sizes x 2 placements at 3 ranks: each is priced or counted as
     * skipped.  Skipped: the points of an algorithm whose rank fit the
     * noise made unusable (the ring's has two sizes here, 256 KiB and
     * 1 MiB; under load, CI once saw fewer than 5 of 10 priced).  At
     * least one algorithm's points must be priced. */
    assert_int_equal(hn + hs, 10);
    assert_true(hn >= 2);
    assert_true(ek > 0 && ek < 3.0);
    assert_true(eh > 0 && eh < 3.0);
    json_decref(j);
    unlink(prof);
    unlink(rep);
    cli_result_free(&r);
}

/* fit -> profile (deterministic under SOURCE_DATE_EPOCH, with provenance
 * and network) -> its network section back -> validate -> --plain is a
 * profile today's simulate accepts. */
static void test_cli_fit_validate(void **state) {
    (void)state;
    const char *prof = "/tmp/podplan-test-cal-profile.yaml";
    const char *inputs = DATA "nccl-h100-2x8-allreduce.txt " DATA
                              "perftest-ib_write_bw-gbits.txt";
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    cli_result r;
    char *a = NULL, *b = NULL;
    for (int i = 0; i < 2; i++) {
        cli_runf(&r,
                 "calibrate fit --cluster selene-like --link ethernet %s -o %s",
                 inputs, prof);
        if (r.status != 0) fail_msg("%s", r.err);
        assert_non_null(strstr(r.out, "alpha_s"));
        cli_result_free(&r);
        if (i == 0)
            a = cli_slurp(prof);
        else
            b = cli_slurp(prof);
    }
    assert_string_equal(a, b); /* same inputs, same date: same bytes */
    assert_non_null(strstr(a, "date: \"2023-11-14T22:13:20Z\""));
    assert_non_null(strstr(a, "sha256: "
                              "\"dffab8f4a81daaab42ff50a81bc6a5227f92d64aa3a0c4"
                              "b541f21273df053b8f\""));
    assert_non_null(strstr(a, "\nnetwork:\n"));
    free(a);
    free(b);

    pp_cal_network net;
    pp_error e = PP_ERROR_INIT;
    if (pp_cal_network_load(prof, &net, &e)) fail_msg("%s", e.msg);
    assert_int_equal(net.n,
                     2); /* allreduce over ethernet; write_bw over roce */
    bool seen = false;
    for (size_t i = 0; i < net.n; i++)
        if (!strcmp(net.v[i].op, "allreduce")) {
            seen = true;
            assert_int_equal(net.v[i].ranks, 16);
            assert_int_equal(net.v[i].scope, PP_CAL_SCOPE_INTER);
            assert_true(net.v[i].knee_bytes > 0);
            /* The 1 GiB point predicted within 10%. */
            double t = pp_cal_net_time_s(&net.v[i], 1073741824);
            assert_true(fabs(t / 6759.0e-6 - 1) < 0.10);
        }
    assert_true(seen);
    pp_cal_network_fini(&net);

    cli_runf(&r,
             "calibrate validate --profile %s --link ethernet --format json %s",
             prof, inputs);
    if (r.status != 0) fail_msg("%s", r.err);
    json_t *j = cli_json(&r);
    assert_int_equal(json_array_size(json_object_get(j, "points")), 62 + 23);
    double mean = json_real_value(json_object_get(j, "mean_abs_error"));
    printf("  validate: mean |error| %.2f%%\n", 100 * mean);
    assert_true(mean < 0.10);
    json_decref(j);
    cli_result_free(&r);

    cli_runf(&r,
             "calibrate validate --profile %s --link ethernet --holdout 4 %s",
             prof, DATA "nccl-h100-2x8-allreduce.txt");
    if (r.status != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "(held out)"));
    cli_result_free(&r);

    /* --plain: no network: section, the provenance as comments. */
    cli_runf(&r, "calibrate fit --plain --cluster selene-like %s -o %s",
             DATA "nccl-h100-2x8-allreduce.txt", prof);
    assert_int_equal(r.status, 0);
    cli_result_free(&r);
    cli_runf(&r,
             "simulate --model megatron-1.7b --cluster selene-like "
             "--parallel tp=1,pp=1,dp=32,mbs=16,gbs=512 --fidelity analytic "
             "--profile %s",
             prof);
    if (r.status != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "a100-fitted"));
    cli_result_free(&r);
    unlink(prof);
    unsetenv("SOURCE_DATE_EPOCH");
}

static void test_cli_plot(void **state) {
    (void)state;
    const char *svg = "/tmp/podplan-test-cal.svg";
    unlink(svg);
    cli_result r;
    cli_runf(&r,
             "calibrate validate --profile a100 --cluster selene-like "
             "--plot %s %s",
             svg, PODPLAN_SOURCE_DIR "/calibrate/examples/gemm-sweep.csv");
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        assert_int_equal(r.status, 1);
        assert_non_null(strstr(r.err, "gnuplot not found"));
    } else {
        if (r.status != 0) fail_msg("%s", r.err);
        char *t = cli_slurp(svg);
        assert_non_null(t);
        assert_non_null(strstr(t, "<svg"));
        free(t);
    }
    unlink(svg);
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_nccl_multinode),
        cmocka_unit_test(test_nccl_json),
        cmocka_unit_test(test_nccl_old_format),
        cmocka_unit_test(test_perftest_gbits),
        cmocka_unit_test(test_perftest_mbytes_and_latency),
        cmocka_unit_test(test_other_formats),
        cmocka_unit_test(test_errors_leave_set_unchanged),
        cmocka_unit_test(test_exec_json),
        cmocka_unit_test(test_exec_grouped),
        cmocka_unit_test(test_cli_import),
        cmocka_unit_test(test_cli_import_many),
        cmocka_unit_test(test_cli_run),
        cmocka_unit_test(test_cli_fit_validate),
        cmocka_unit_test(test_cli_plot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
