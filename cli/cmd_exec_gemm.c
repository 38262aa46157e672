/*
 * cmd_exec_gemm.c: `podplan exec gemm` and `podplan exec membw`.
 *
 * exec measures; this file joins the measurement to the catalogue: the
 * fraction of peak is taken from topologies/hardware.yaml's entry for the
 * GPU found (a short table maps CUDA device names to catalogue names),
 * or from --gpu NAME or --peak RATE.  sim owns the catalogue and the CLI
 * already links sim, so exec stays free of both.
 */
#include "cli_int.h"
#include "podplan/exec.h"
#include "podplan/sim.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIMS 64
#define MAX_SHAPES 4096

/* Transformer Engine's compute streams for grouped GEMMs
 * (transformer_engine/common/util/multi_stream.cpp). */
#define TE_STREAMS 4

/* --pass: its values, and how the table's header says them. */
static const char *const pass_keys[] = {"fwd", "bwd", "all", NULL};
static const char *const pass_words[] = {"forward", "backward",
                                         "forward and backward"};

static const pp_cli_opt gemm_opts[] = {
    {"backend", 'b', "B",
     "cuda|cpu (default: cuda when a GPU is usable, else cpu)", false, NULL, 0,
     NULL},
    {"dtype", 't', "T",
     "bf16|fp16|tf32|fp32|fp8 (default: bf16 on cuda, fp32 on cpu)", false,
     NULL, 0, NULL},
    {"m", 'm', "LIST", "rows: 4096,8192 or lo:hi:x2 or lo:hi:+S", false, NULL,
     0, NULL},
    {"n", 'n', "LIST", "columns (output features), same syntax", false, NULL, 0,
     NULL},
    {"k", 'k', "LIST", "inner dimension, same syntax", false, NULL, 0, NULL},
    {"square", 's', "LIST", "m = n = k for each size in LIST", false, NULL, 0,
     NULL},
    {"batch", 0, "N", "strided batch count of the sweep's GEMMs (default: 1)",
     false, NULL, 0, NULL},
    {"model", 0, "M", "time the forward GEMMs of one layer of model M", false,
     NULL, 0, NULL},
    {"parallel", 'p', "SPEC",
     "with --model: layout (tp and mbs matter; default tp=1)", false, NULL, 0,
     NULL},
    {"pass", 0, "P",
     "with --model: fwd|bwd|all, the forward GEMMs, the backward ones "
     "(dgrad, wgrad) or both (default: fwd)",
     false, NULL, 0, NULL},
    {"iters", 'i', "N", "timed runs per shape, one sample each (default: 100)",
     false, NULL, 0, NULL},
    {"warmup", 'w', "N", "untimed runs first (default: 10)", false, NULL, 0,
     NULL},
    {"algos", 0, "N", "cuda: cuBLASLt heuristic candidates to try (default: 8)",
     false, NULL, 0, NULL},
    {"streams", 0, "S",
     "cuda: issue the --batch GEMMs as separate calls over S streams, as "
     "Transformer Engine's GroupedLinear does (it uses 4)",
     false, NULL, 0, NULL},
    {"setup", 0, "WHEN",
     "with --streams: once|per-call, descriptors and heuristic built once or "
     "for every call as TE's cublas_gemm does (default: once)",
     false, NULL, 0, NULL},
    {"reserve-sms", 0, "K",
     "cuda: aim the GEMM at all but K SMs (cuBLASLt's SM count target), as "
     "Transformer Engine does beside communication kernels that take K "
     "(DeepEP: 20 of 132; default: 0)",
     false, NULL, 0, NULL},
    {"load-sms", 0, "K",
     "cuda: run a copy kernel on K SMs beside the timed GEMMs, as a NCCL "
     "collective of K channels runs beside the compute it overlaps; "
     "calibrate fit makes compute_beside_nccl of such runs (default: 0, "
     "none)",
     false, NULL, 0, NULL},
    {"load-rate", 0, "RATE",
     "with --load-sms: the HBM traffic the load makes, bytes read plus "
     "written, e.g. 400GB/s; 0 holds its SMs without traffic; max copies "
     "as fast as it can (default: max)",
     false, NULL, 0, NULL},
    {"threads", 0, "N", "cpu: OpenBLAS threads (default: OpenBLAS's own)",
     false, NULL, 0, NULL},
    {"device", 0, "N", "cuda: device ordinal (default: 0)", false, NULL, 0,
     NULL},
    {"peak", 0, "RATE",
     "peak to compare with, e.g. 989TFLOPS (default: the catalogue's)", false,
     NULL, 0, NULL},
    {"gpu", 0, "NAME",
     "catalogue GPU whose peak to use (default: matched by device name)", false,
     NULL, 0, NULL},
    {"no-check", 0, NULL, "skip the spot check against the CPU reference",
     false, NULL, 0, NULL},
    {"list", 0, NULL, "print the shapes (name batch m n k) and time nothing",
     false, NULL, 0, NULL},
    {"seed", 0, "N", "random inputs' seed (default: 1)", false, NULL, 0, NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

typedef struct gemm_out {
    pp_exec_device dev;
    pp_exec_backend backend;
    pp_gemm_dtype dtype;
    double peak; /* 0 = unknown */
    char peak_source[96];
    const char *model; /* or NULL */
    char parallel[256];
    int pass; /* with model: --pass, an index of pass_keys */
    pp_exec_gemm_result *r;
    size_t n;
} gemm_out;

/* The catalogue name of a CUDA device name, or NULL.  Checked in order:
 * the more specific names first. */
static const char *catalogue_name(const char *dev) {
    char low[128];
    size_t i;
    for (i = 0; dev[i] && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)dev[i]);
    low[i] = '\0';
    static const struct {
        const char *a, *b, *name;
    } map[] = {
        {"h100", "pcie", "h100-pcie"},
        {"h100", NULL, "h100-sxm5"},
        {"h200", NULL, "h200-sxm"},
        {"gh200", NULL, "h200-sxm"},
        {"b200", NULL, "b200"},
        {"a100", "pcie-40", "a100-pcie-40gb"},
        {"a100", "80gb pcie", "a100-pcie-80gb"},
        {"a100", "pcie", "a100-pcie-40gb"},
        {"a100", "40gb", "a100-sxm4-40gb"},
        {"a100", NULL, "a100-sxm4-80gb"},
        {"v100", NULL, "v100-sxm2-32gb"},
        {"p100", NULL, "p100-sxm2-16gb"},
    };
    for (i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strstr(low, map[i].a) && (!map[i].b || strstr(low, map[i].b)))
            return map[i].name;
    return NULL;
}

static pp_dtype catalogue_dtype(pp_gemm_dtype t) {
    switch (t) {
    case PP_GEMM_FP32: return PP_DTYPE_FP32;
    case PP_GEMM_TF32: return PP_DTYPE_TF32;
    case PP_GEMM_FP8: return PP_DTYPE_FP8;
    default: return PP_DTYPE_BF16; /* bf16 and fp16 share the rate */
    }
}

/* Fills o->peak from --peak, --gpu or the device name; a GPU missing
 * from the catalogue leaves it 0 (no fraction printed), a bad --gpu is
 * an error. */
static int find_peak(const pp_args *a, gemm_out *o, pp_error *e) {
    int rc = pp_args_quantity(a, "peak", PP_Q_FLOPRATE, NULL, &o->peak, e);
    if (rc) return rc;
    if (o->peak > 0) {
        snprintf(o->peak_source, sizeof o->peak_source, "--peak");
        return 0;
    }
    const char *name = pp_args_get(a, "gpu");
    if (!name && o->backend == PP_EXEC_CUDA) name = catalogue_name(o->dev.name);
    if (!name) return 0;
    pp_gpu_spec g;
    if ((rc = pp_cli_catalog_gpu(name, &g, e)) < 0) return rc;
    o->peak = g.peak_flops[catalogue_dtype(o->dtype)];
    snprintf(o->peak_source, sizeof o->peak_source,
             "topologies/hardware.yaml: %s", name);
    return 0;
}

static void gemm_table(FILE *fp, const void *ctx) {
    const gemm_out *o = ctx;
    fprintf(fp, "backend %s, %s", pp_exec_backend_names[o->backend],
            pp_gemm_dtype_names[o->dtype]);
    if (o->model)
        fprintf(fp, ", one layer of %s at %s (%s)", o->model, o->parallel,
                pass_words[o->pass]);
    fprintf(fp, "\n");
    if (o->peak > 0) fprintf(fp, "peak from %s\n", o->peak_source);
    pp_exec_gemm_print(fp, &o->dev, o->r, o->n, o->peak);
}

static json_t *gemm_json(const gemm_out *o) {
    json_t *j = json_object(), *d = json_object(), *arr = json_array();
    json_object_set_new(d, "name", json_string(o->dev.name));
    if (o->backend == PP_EXEC_CUDA) {
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", o->dev.cc_major, o->dev.cc_minor);
        json_object_set_new(d, "compute_capability", json_string(cc));
    } else {
        json_object_set_new(d, "threads", json_integer(o->dev.threads));
    }
    json_object_set_new(d, "info", json_string(o->dev.info));
    json_object_set_new(j, "backend",
                        json_string(pp_exec_backend_names[o->backend]));
    json_object_set_new(j, "device", d);
    json_object_set_new(j, "dtype", json_string(pp_gemm_dtype_names[o->dtype]));
    if (o->model) {
        json_object_set_new(j, "model", json_string(o->model));
        json_object_set_new(j, "parallel", json_string(o->parallel));
        json_object_set_new(j, "pass", json_string(pass_keys[o->pass]));
    }
    json_object_set_new(j, "peak_flops",
                        o->peak > 0 ? json_real(o->peak) : json_null());
    json_object_set_new(j, "peak_source",
                        o->peak > 0 ? json_string(o->peak_source)
                                    : json_null());
    for (size_t i = 0; i < o->n; i++) {
        const pp_exec_gemm_result *r = &o->r[i];
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(r->shape.name));
        json_object_set_new(x, "batch", json_integer(r->shape.batch));
        json_object_set_new(x, "m", json_integer(r->shape.m));
        json_object_set_new(x, "n", json_integer(r->shape.n));
        json_object_set_new(x, "k", json_integer(r->shape.k));
        json_object_set_new(x, "dtype",
                            json_string(pp_gemm_dtype_names[r->dtype]));
        json_object_set_new(x, "backend",
                            json_string(pp_exec_backend_names[r->backend]));
        json_object_set_new(x, "iters", json_integer((json_int_t)r->time.n));
        json_object_set_new(x, "time_median_s", pp_json_num(r->time.median));
        json_object_set_new(x, "time_p10_s", pp_json_num(r->time.p10));
        json_object_set_new(x, "time_p90_s", pp_json_num(r->time.p90));
        json_object_set_new(x, "time_cv", pp_json_num(r->time.cv));
        json_object_set_new(x, "flops", pp_json_num(r->flops));
        json_object_set_new(x, "tflops", pp_json_num(r->flops_per_s / 1e12));
        json_object_set_new(x, "fraction_of_peak",
                            o->peak > 0 ? pp_json_num(r->flops_per_s / o->peak)
                                        : json_null());
        json_object_set_new(x, "algo", json_string(r->algo));
        json_object_set_new(x, "algo_id", json_integer(r->algo_id));
        json_object_set_new(x, "buffers_rotated", json_integer(r->buffers));
        json_object_set_new(x, "checked", json_boolean(r->checked));
        json_object_set_new(x, "check_error_ratio",
                            r->checked ? pp_json_num(r->check_err)
                                       : json_null());
        if (r->streams > 0) {
            /* Grouped issue: the times above are per group. */
            json_t *g = json_object();
            json_object_set_new(g, "streams", json_integer(r->streams));
            json_object_set_new(
                g, "setup",
                json_string(r->setup_per_call ? "per-call" : "once"));
            json_object_set_new(g, "issue_s", pp_json_num(r->issue_s));
            json_object_set_new(g, "graph_s", pp_json_num(r->graph_s));
            json_object_set_new(g, "graph_tflops",
                                pp_json_num(r->flops / r->graph_s / 1e12));
            json_object_set_new(x, "grouped", g);
        }
        if (r->sms_reserved > 0) {
            json_object_set_new(x, "sms_reserved",
                                json_integer(r->sms_reserved));
            json_object_set_new(x, "sm_target", json_integer(r->sm_target));
        }
        if (r->load_sms > 0) {
            /* The GEMM's time above ran beside this load. */
            json_t *l = json_object();
            json_object_set_new(l, "sms", json_integer(r->load_sms));
            json_object_set_new(l, "rate_asked",
                                r->load_rate_asked < 0
                                    ? json_null()
                                    : pp_json_num(r->load_rate_asked));
            json_object_set_new(l, "rate", pp_json_num(r->load_rate));
            json_object_set_new(x, "load", l);
        }
        json_array_append_new(arr, x);
    }
    json_object_set_new(j, "results", arr);
    return j;
}

static int dims_opt(const pp_args *a, const char *name, int64_t *v, size_t *n,
                    pp_error *e) {
    const char *t = pp_args_get(a, name);
    char what[16];
    if (!t) return 0;
    snprintf(what, sizeof what, "-%s", name);
    if (strlen(name) > 1) snprintf(what, sizeof what, "--%s", name);
    return pp_exec_parse_dims(t, what, v, MAX_DIMS, n, e);
}

/* The shapes to time: the model's layer, the square list, or the
 * product of the m, n, k lists (each of which may be one size). */
static int build_shapes(const pp_args *a, gemm_out *o, pp_model *m,
                        pp_gemm_shape **out, size_t *n_out, pp_error *e) {
    int64_t vm[MAX_DIMS], vn[MAX_DIMS], vk[MAX_DIMS], batch = 1;
    size_t nm = 0, nn = 0, nk = 0, ns = 0;
    int rc;
    const char *model = pp_args_get(a, "model");
    bool any_dims =
        pp_args_get(a, "m") || pp_args_get(a, "n") || pp_args_get(a, "k");
    bool square = pp_args_get(a, "square") != NULL;
    if ((model != NULL) + any_dims + square != 1)
        return pp_error_set(e, PP_EUSAGE,
                            "give one of --model, --square or "
                            "-m/-n/-k (see `podplan exec gemm --help`)");
    if (pp_args_get(a, "parallel") && !model)
        return pp_error_set(e, PP_EUSAGE, "--parallel goes with --model");
    if (pp_args_get(a, "pass") && !model)
        return pp_error_set(e, PP_EUSAGE, "--pass goes with --model");
    int pass = 0;
    if ((rc = pp_args_enum(a, "pass", pass_keys, &pass, e))) return rc;
    if ((rc = pp_args_int(a, "batch", 1, 1 << 20, &batch, e))) return rc;
    pp_gemm_shape *s;
    if (model) {
        pp_parallel p;
        pp_parallel_init(&p);
        const char *spec = pp_args_get(a, "parallel");
        if ((spec && (rc = pp_parallel_parse(spec, &p, e))) ||
            (rc = pp_model_load(model, m, e)) ||
            (rc = pp_parallel_validate(&p, m, e)))
            return rc;
        size_t nb = 0;
        s = pp_xcalloc(PP_LAYER_GEMMS_MAX + PP_LAYER_GEMMS_BWD_MAX, sizeof *s);
        if ((pass != 1 &&
             (rc = pp_layer_gemms(m, &p, s, PP_LAYER_GEMMS_MAX, &ns, e)) < 0) ||
            (pass != 0 &&
             (rc = pp_layer_gemms_bwd(m, &p, s + ns, PP_LAYER_GEMMS_BWD_MAX,
                                      &nb, e)) < 0)) {
            free(s);
            return rc;
        }
        ns += nb;
        o->model = m->name;
        o->pass = pass;
        int w = snprintf(o->parallel, sizeof o->parallel, "tp=%lld,mbs=%lld",
                         (long long)p.tp, (long long)p.mbs);
        if (p.cp > 1)
            w += snprintf(o->parallel + w, sizeof o->parallel - (size_t)w,
                          ",cp=%lld", (long long)p.cp);
        if (pp_model_is_moe(m) && p.ep > 1)
            snprintf(o->parallel + w, sizeof o->parallel - (size_t)w,
                     ",ep=%lld,etp=%lld", (long long)p.ep,
                     (long long)pp_parallel_etp(&p));
    } else if (square) {
        if ((rc = dims_opt(a, "square", vm, &nm, e))) return rc;
        s = pp_xcalloc(nm, sizeof *s);
        for (size_t i = 0; i < nm; i++)
            s[ns++] = (pp_gemm_shape){"", batch, vm[i], vm[i], vm[i], false};
    } else {
        if ((rc = dims_opt(a, "m", vm, &nm, e)) ||
            (rc = dims_opt(a, "n", vn, &nn, e)) ||
            (rc = dims_opt(a, "k", vk, &nk, e)))
            return rc;
        if (!nm || !nn || !nk)
            return pp_error_set(e, PP_EUSAGE,
                                "-m, -n and -k are all needed "
                                "(or --square LIST)");
        if (nm * nn * nk > MAX_SHAPES)
            return pp_error_set(e, PP_ERANGE,
                                "%zu x %zu x %zu shapes: at "
                                "most %d",
                                nm, nn, nk, MAX_SHAPES);
        s = pp_xcalloc(nm * nn * nk, sizeof *s);
        for (size_t i = 0; i < nm; i++)
            for (size_t j = 0; j < nn; j++)
                for (size_t l = 0; l < nk; l++)
                    s[ns++] =
                        (pp_gemm_shape){"", batch, vm[i], vn[j], vk[l], false};
    }
    *out = s;
    *n_out = ns;
    return 0;
}

typedef struct shape_list {
    const pp_gemm_shape *s;
    size_t n;
} shape_list;

static void list_table(FILE *fp, const void *ctx) {
    const shape_list *l = ctx;
    int w = 12; /* wider for the backward's names */
    for (size_t i = 0; i < l->n; i++)
        if ((int)strlen(l->s[i].name) > w) w = (int)strlen(l->s[i].name);
    fprintf(fp, "%-*s %5s %6s %6s %6s %10s\n", w, "gemm", "batch", "m", "n",
            "k", "GFLOP");
    for (size_t i = 0; i < l->n; i++) {
        const pp_gemm_shape *x = &l->s[i];
        fprintf(fp, "%-*s %5lld %6lld %6lld %6lld %10.2f%s\n", w,
                x->name[0] ? x->name : "-", (long long)x->batch,
                (long long)x->m, (long long)x->n, (long long)x->k,
                2e-9 * (double)x->batch * (double)x->m * (double)x->n *
                    (double)x->k,
                x->grouped ? "  grouped" : "");
    }
}

/* --load-rate: a bandwidth, 0, or max (-1: as fast as it can). */
static int load_rate_get(const pp_args *a, double *out, pp_error *e) {
    const char *v = pp_args_get(a, "load-rate");
    if (!v || !strcmp(v, "max")) return 0;
    if (!strcmp(v, "0")) {
        *out = 0;
        return 0;
    }
    return pp_args_quantity(a, "load-rate", PP_Q_BANDWIDTH, NULL, out, e);
}

/* --list: the shapes that would be timed. */
static int emit_list(const pp_args *a, int fmt, const pp_gemm_shape *s,
                     size_t n) {
    shape_list l = {s, n};
    json_t *j = json_object(), *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(s[i].name));
        json_object_set_new(x, "batch", json_integer(s[i].batch));
        json_object_set_new(x, "m", json_integer(s[i].m));
        json_object_set_new(x, "n", json_integer(s[i].n));
        json_object_set_new(x, "k", json_integer(s[i].k));
        if (s[i].grouped) json_object_set_new(x, "grouped", json_true());
        json_array_append_new(arr, x);
    }
    json_object_set_new(j, "shapes", arr);
    return pp_cli_emit(a, fmt, j, list_table, &l);
}

int pp_cli_exec_gemm(int argc, char **argv) {
    const pp_cli_cmd *cmd = &pp__cmd_exec_gemm;
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    gemm_out o;
    pp_model m;
    pp_exec_gemm_opts opt;
    pp_gemm_shape *shapes = NULL;
    int fmt = PP_FMT_TABLE, backend = PP_EXEC_CPU, dtype = -1, rc;
    int64_t iters = 100, warmup = 10, algos = 8, threads = 0, device = 0,
            seed = 1, streams = 0, reserve = 0, load_sms = 0;
    double load_rate = -1;
    int setup = 0;
    static const char *const setup_names[] = {"once", "per-call", NULL};

    memset(&o, 0, sizeof o);
    rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (!rc && !pp_args_get(&a, "backend"))
        backend = pp_exec_cuda_usable(NULL, 0) ? PP_EXEC_CUDA : PP_EXEC_CPU;
    if (rc ||
        pp_args_enum(&a, "backend", pp_exec_backend_names, &backend, &e) ||
        pp_args_enum(&a, "dtype", pp_gemm_dtype_names, &dtype, &e) ||
        pp_args_int(&a, "iters", 1, 1000000, &iters, &e) ||
        pp_args_int(&a, "warmup", 0, 1000000, &warmup, &e) ||
        pp_args_int(&a, "algos", 1, 32, &algos, &e) ||
        pp_args_int(&a, "threads", 1, 1024, &threads, &e) ||
        pp_args_int(&a, "streams", 1, 16, &streams, &e) ||
        pp_args_int(&a, "reserve-sms", 0, 1024, &reserve, &e) ||
        pp_args_int(&a, "load-sms", 0, 1024, &load_sms, &e) ||
        load_rate_get(&a, &load_rate, &e) ||
        pp_args_enum(&a, "setup", setup_names, &setup, &e) ||
        pp_args_int(&a, "device", 0, 1024, &device, &e) ||
        pp_args_int(&a, "seed", 0, INT64_MAX, &seed, &e) ||
        pp_args_enum(&a, "format", pp_format_names, &fmt, &e) ||
        build_shapes(&a, &o, &m, &shapes, &o.n, &e))
        goto fail;
    pp_exec_gemm_opts_init(&opt, (pp_exec_backend)backend);
    if (dtype >= 0) opt.dtype = (pp_gemm_dtype)dtype;
    opt.iters = (int)iters;
    opt.warmup = (int)warmup;
    opt.algos = (int)algos;
    opt.threads = (int)threads;
    opt.device = (int)device;
    opt.seed = (uint64_t)seed;
    opt.check = !pp_args_flag(&a, "no-check");
    opt.streams = (int)streams;
    opt.setup_per_call = setup == 1;
    opt.reserve_sms = (int)reserve;
    opt.load_sms = (int)load_sms;
    opt.load_rate = load_rate;
    if (pp_args_get(&a, "load-rate") && !load_sms) {
        pp_error_set(&e, PP_EUSAGE, "--load-rate goes with --load-sms");
        goto fail;
    }
    if (pp_args_get(&a, "setup") && !streams && !o.model) {
        pp_error_set(&e, PP_EUSAGE, "--setup goes with --streams");
        goto fail;
    }
    /* The back-end's constraints, refused before --list or a device. */
    if (pp_exec_gemm_opts_check(&opt, &e)) goto fail;
    o.backend = opt.backend;
    o.dtype = opt.dtype;
    if (pp_args_flag(&a, "list")) {
        rc = emit_list(&a, fmt, shapes, o.n);
        free(shapes);
        return rc;
    }
    if (opt.backend == PP_EXEC_CPU && opt.dtype != PP_GEMM_FP32) {
        pp_error_set(&e, PP_EUSAGE, "--backend cpu runs fp32 only, not %s",
                     pp_gemm_dtype_names[opt.dtype]);
        goto fail;
    }
    if (pp_exec_device_info(opt.backend, opt.device, opt.threads, &o.dev, &e) ||
        find_peak(&a, &o, &e))
        goto fail;
    o.r = pp_xcalloc(o.n, sizeof *o.r);
    for (size_t i = 0; i < o.n; i++) {
        /* --model: a grouped shape (an MoE layer's experts) is issued as
         * Transformer Engine issues it, over --streams (default its 4);
         * the others as one call each. */
        pp_exec_gemm_opts oi = opt;
        if (o.model) {
            bool g = shapes[i].grouped && opt.backend == PP_EXEC_CUDA;
            oi.streams = g ? (streams ? (int)streams : TE_STREAMS) : 0;
            oi.setup_per_call = g && opt.setup_per_call;
        }
        if ((rc = pp_exec_gemm_run(&oi, &shapes[i], &o.r[i], &e)) < 0)
            goto fail;
    }
    free(shapes);
    rc = pp_cli_emit(&a, fmt, gemm_json(&o), gemm_table, &o);
    free(o.r);
    return rc;
fail:
    free(shapes);
    free(o.r);
    return pp_cli_fail("exec gemm", &e);
}

const pp_cli_cmd pp__cmd_exec_gemm = {
    "exec gemm",
    "time GEMMs",
    "exec gemm (-m LIST -n LIST -k LIST | --square LIST | --model M "
    "[--parallel SPEC]) [--backend cuda|cpu] [--dtype T] [--iters N] "
    "[--format table|json] [-o FILE]",
    "C = A W^T with A [m x k] and W [n x k] (torch.nn.Linear's layout),\n"
    "random inputs in [-1, 1).  Each shape: --warmup untimed runs, then\n"
    "--iters timed runs, one sample each; the table gives the median, the\n"
    "10th and 90th percentiles and the coefficient of variation, and\n"
    "TFLOP/s = 2 batch m n k / median.  When one set of operands would\n"
    "stay in the last-level cache (L2 on a GPU, L3 on the CPU), up to 16\n"
    "sets are rotated so a pass over them is twice the cache (reported).\n"
    "cuda: cuBLASLt; the heuristic's top --algos candidates are timed\n"
    "briefly and the fastest is kept; 32 MiB workspace on Hopper, 4 MiB\n"
    "before.  fp8 is e4m3 in, bf16 out (compute capability 8.9+).  cpu:\n"
    "OpenBLAS cblas_sgemm, fp32, wall clock.  A sample of 16 outputs is\n"
    "checked against a double-precision CPU reference (--no-check skips).\n"
    "--model times the forward GEMMs the simulator prices for one layer\n"
    "(qkv, attn scores/values as batched GEMMs, attn proj, mlp fc1/fc2;\n"
    "an MoE model's router, shared experts and local experts, these\n"
    "grouped over 4 streams on cuda, or --streams); --pass bwd their\n"
    "backward GEMMs (each one's dgrad and wgrad), --pass all both.\n"
    "--streams S issues the --batch GEMMs as separate cuBLASLt calls over\n"
    "S streams, forked and joined by events, as Transformer Engine's\n"
    "GroupedLinear runs an MoE layer's experts (4 streams, the heuristic's\n"
    "first candidate); times are then per group: eager groups back to\n"
    "back, the host's time to issue one group, and one group replayed in\n"
    "a CUDA graph (the GPU's time alone).\n"
    "The peak is the catalogue's (topologies/hardware.yaml) for the GPU\n"
    "matched by its CUDA name, or --gpu NAME, or --peak RATE.",
    gemm_opts,
    NULL,
};

/* ------------------------------------------------------------------------
 * exec membw
 * ---------------------------------------------------------------------- */
static const pp_cli_opt membw_opts[] = {
    {"device", 'd', "D", "host|cuda (default: host)", false, NULL, 0, NULL},
    {"kernel", 0, "LIST", "copy,triad,memcpy or all (default: copy,triad)",
     false, NULL, 0, NULL},
    {"sizes", 0, "LIST",
     "bytes per array, e.g. 64MiB,1GiB (default: 256MiB on host, 1GiB on cuda)",
     false, NULL, 0, NULL},
    {"iters", 'i', "N", "timed iterations, median reported (default: 20)",
     false, NULL, 0, NULL},
    {"threads", 0, "N", "host: threads (default: 1)", false, NULL, 0, NULL},
    {"gpu", 0, "N", "cuda: device ordinal (default: 0)", false, NULL, 0, NULL},
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

typedef struct membw_out {
    pp_exec_membw_result r[64];
    size_t n;
} membw_out;

static void membw_table(FILE *fp, const void *ctx) {
    const membw_out *o = ctx;
    fprintf(fp,
            "STREAM definitions: copy moves 2 x array, triad 3 x array "
            "(read + written); %zu iterations, median\n\n",
            o->n ? o->r[0].time.n : 0);
    pp_exec_membw_print(fp, o->r, o->n);
}

static json_t *membw_json(const membw_out *o) {
    json_t *j = json_object(), *arr = json_array();
    for (size_t i = 0; i < o->n; i++) {
        const pp_exec_membw_result *r = &o->r[i];
        json_t *x = json_object();
        json_object_set_new(
            x, "device",
            json_string(r->device == PP_EXEC_CUDA ? "cuda" : "host"));
        json_object_set_new(x, "kernel",
                            json_string(pp_membw_kind_names[r->kind]));
        json_object_set_new(x, "array_bytes",
                            json_integer((json_int_t)r->array_bytes));
        json_object_set_new(x, "bytes_moved", pp_json_num(r->bytes_moved));
        if (r->device != PP_EXEC_CUDA)
            json_object_set_new(x, "threads", json_integer(r->threads));
        json_object_set_new(x, "iters", json_integer((json_int_t)r->time.n));
        json_object_set_new(x, "time_median_s", pp_json_num(r->time.median));
        json_object_set_new(x, "time_p10_s", pp_json_num(r->time.p10));
        json_object_set_new(x, "time_p90_s", pp_json_num(r->time.p90));
        json_object_set_new(x, "time_cv", pp_json_num(r->time.cv));
        json_object_set_new(x, "bandwidth_Bps", pp_json_num(r->bw_Bps));
        json_object_set_new(x, "best_bandwidth_Bps", pp_json_num(r->best_Bps));
        json_array_append_new(arr, x);
    }
    json_object_set_new(j, "results", arr);
    return j;
}

/* "copy,triad" or "all" into kinds[]. */
static int parse_kernels(const char *t, int *kinds, size_t *n, pp_error *e) {
    *n = 0;
    if (strcmp(t, "all") == 0) {
        for (int k = 0; k < PP_MEMBW__KINDS; k++) kinds[(*n)++] = k;
        return 0;
    }
    while (*t) {
        size_t len = strcspn(t, ",");
        int k;
        for (k = 0; k < PP_MEMBW__KINDS; k++)
            if (strlen(pp_membw_kind_names[k]) == len &&
                strncmp(t, pp_membw_kind_names[k], len) == 0)
                break;
        if (k == PP_MEMBW__KINDS || *n == PP_MEMBW__KINDS)
            return pp_error_set(e, PP_EUSAGE,
                                "--kernel: expected copy, triad,"
                                " memcpy or all, got \"%.*s\"",
                                (int)len, t);
        kinds[(*n)++] = k;
        t += len;
        if (*t == ',') t++;
    }
    return 0;
}

static int parse_sizes(const char *t, size_t *sizes, size_t max, size_t *n,
                       pp_error *e) {
    *n = 0;
    char buf[64];
    while (*t) {
        size_t len = strcspn(t, ",");
        char why[256] = "";
        double v;
        snprintf(buf, sizeof buf, "%.*s", (int)(len < 63 ? len : 63), t);
        if (pp_unit_parse(buf, PP_Q_BYTES, NULL, &v, why, sizeof why) < 0 ||
            v < 1024)
            return pp_error_set(e, PP_EUSAGE,
                                "--sizes: expected sizes of at "
                                "least 1KiB such as 64MiB, got \"%s\"%s%s",
                                buf, why[0] ? ": " : "", why);
        if (*n == max)
            return pp_error_set(e, PP_ERANGE, "--sizes: at most %zu", max);
        sizes[(*n)++] = (size_t)v;
        t += len;
        if (*t == ',') t++;
    }
    if (*n == 0) return pp_error_set(e, PP_EUSAGE, "--sizes: empty list");
    return 0;
}

int pp_cli_exec_membw(int argc, char **argv) {
    const pp_cli_cmd *cmd = &pp__cmd_exec_membw;
    static const char *const where_names[] = {"host", "cuda", NULL};
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    membw_out *o = pp_xcalloc(1, sizeof *o);
    int fmt = PP_FMT_TABLE, where = 0, kinds[PP_MEMBW__KINDS];
    size_t nk = 0, ns = 0, sizes[16];
    int64_t iters = 20, threads = 1, gpu = 0;
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) {
        free(o);
        return 0;
    }
    const char *kt = NULL, *st = NULL;
    if (rc || pp_args_enum(&a, "device", where_names, &where, &e) ||
        pp_args_int(&a, "iters", 1, 100000, &iters, &e) ||
        pp_args_int(&a, "threads", 1, 256, &threads, &e) ||
        pp_args_int(&a, "gpu", 0, 1024, &gpu, &e) ||
        pp_args_enum(&a, "format", pp_format_names, &fmt, &e))
        goto fail;
    kt = pp_args_get(&a, "kernel");
    st = pp_args_get(&a, "sizes");
    if (parse_kernels(kt ? kt : "copy,triad", kinds, &nk, &e) ||
        parse_sizes(st      ? st
                    : where ? "1GiB"
                            : "256MiB",
                    sizes, 16, &ns, &e))
        goto fail;
    for (size_t s = 0; s < ns; s++)
        for (size_t k = 0; k < nk; k++) {
            if ((rc = pp_exec_membw_run(where ? PP_EXEC_CUDA : PP_EXEC_CPU,
                                        (pp_membw_kind)kinds[k], sizes[s],
                                        (int)iters, (int)threads, (int)gpu,
                                        &o->r[o->n], &e)) < 0)
                goto fail;
            o->n++;
        }
    rc = pp_cli_emit(&a, fmt, membw_json(o), membw_table, o);
    free(o);
    return rc;
fail:
    free(o);
    return pp_cli_fail("exec membw", &e);
}

const pp_cli_cmd pp__cmd_exec_membw = {
    "exec membw",
    "memory bandwidth",
    "exec membw [--device host|cuda] [--kernel LIST] [--sizes LIST] "
    "[--iters N] [--threads N] [--format table|json] [-o FILE]",
    "STREAM (McCalpin) copy c = a and triad a = b + 3 c over arrays of the\n"
    "given size each, bytes counted as read + written (2 and 3 arrays per\n"
    "iteration; the write-allocate reads a CPU also does are not counted,\n"
    "as in STREAM).  memcpy: memcpy on the host, cudaMemcpy device to\n"
    "device on a GPU, counted as copy.  Host: doubles, --threads threads\n"
    "each on a slice; cuda: float4 (16-byte) accesses in grid-stride\n"
    "loops, timed with CUDA events.  Two warm-ups, then --iters timed\n"
    "iterations; the median and the best are reported.  For a figure of\n"
    "main memory, make each array several times the last-level cache.",
    membw_opts,
    NULL,
};
