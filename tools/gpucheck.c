/*
 * gpucheck.c: exec gemm / exec membw without the podplan CLI, for a lent
 * GPU machine that may lack libyaml, jansson, igraph, GSL and cmocka.
 *
 * Built by tools/gpu-check.sh from exec's sources with nvcc and cc alone
 * (no CBLAS: the cpu back-end answers PP_ENODEV here).  It times the same
 * code the CLI runs and prints the same table, plus one "SUMMARY" line
 * per result for the script's closing table.
 *
 *   gpucheck gemm DTYPE gpt3-tp8 [ITERS [PEAK_TFLOPS]]
 *   gpucheck gemm DTYPE square:LIST [ITERS [PEAK_TFLOPS]]   (LIST as -m)
 *   gpucheck membw MiB [MiB ...]
 *
 * Exit status: 0, 1 when a run failed (its check included), 2 bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podplan/exec.h"

static int usage(void) {
    fprintf(stderr, "usage: gpucheck gemm DTYPE gpt3-tp8|square:LIST "
                    "[ITERS [PEAK_TFLOPS]]\n       gpucheck membw MiB...\n");
    return 2;
}

/* GPT-3 175B (Brown et al. 2020) as models/zoo/gpt3-175b.yaml has it,
 * inline: no YAML here. */
static void gpt3(pp_model *m) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "gpt3-175b");
    m->arch = PP_ARCH_TRANSFORMER;
    m->layers = 96;
    m->hidden = 12288;
    m->heads = 96;
    m->kv_heads = 96;
    m->seq = 2048;
    m->vocab = 51200;
    m->ffn_hidden = 4 * 12288;
    m->ffn = PP_FFN_GELU;
    m->tied_embeddings = true;
}

static int gemm(int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_gemm_shape s[64];
    size_t n = 0;
    int dtype = -1;
    if (argc < 4) return usage();
    for (int i = 0; pp_gemm_dtype_names[i]; i++)
        if (strcmp(argv[2], pp_gemm_dtype_names[i]) == 0) dtype = i;
    if (dtype < 0) return usage();
    const char *what = argv[3];
    if (strcmp(what, "gpt3-tp8") == 0) {
        pp_model m;
        pp_parallel p;
        gpt3(&m);
        memset(&p, 0, sizeof p);
        p.tp = 8;
        p.pp = p.dp = p.mbs = p.gbs = p.vp = 1;
        if (pp_layer_gemms(&m, &p, s, 64, &n, &e)) goto fail;
    } else if (strncmp(what, "square:", 7) == 0) {
        int64_t v[64];
        if (pp_exec_parse_dims(what + 7, "square", v, 64, &n, &e)) {
            fprintf(stderr, "gpucheck: %s\n", e.msg);
            return 2;
        }
        for (size_t i = 0; i < n; i++)
            s[i] = (pp_gemm_shape){"", 1, v[i], v[i], v[i], false};
    } else {
        return usage();
    }
    pp_exec_gemm_opts o;
    pp_exec_gemm_opts_init(&o, PP_EXEC_CUDA);
    o.dtype = (pp_gemm_dtype)dtype;
    if (argc > 4) o.iters = atoi(argv[4]) > 0 ? atoi(argv[4]) : 100;
    double peak = argc > 5 ? atof(argv[5]) * 1e12 : 0;
    pp_exec_device dev;
    if (pp_exec_device_info(PP_EXEC_CUDA, 0, 0, &dev, &e)) goto fail;
    pp_exec_gemm_result r[64];
    size_t done = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        pp_error_clear(&e);
        if (pp_exec_gemm_run(&o, &s[i], &r[done], &e)) {
            fprintf(stderr, "gpucheck: %s\n", e.msg);
            printf("SUMMARY gemm %-5s %-9s %-12s %lldx%lldx%lldx%lld FAILED\n",
                   argv[2], strncmp(what, "square", 6) ? what : "square",
                   s[i].name[0] ? s[i].name : "-", (long long)s[i].batch,
                   (long long)s[i].m, (long long)s[i].n, (long long)s[i].k);
            rc = 1;
            continue;
        }
        done++;
    }
    printf("backend cuda (standalone gpucheck), %s, %s\n", argv[2], what);
    pp_exec_gemm_print(stdout, &dev, r, done, peak);
    for (size_t i = 0; i < done; i++) {
        const pp_exec_gemm_result *x = &r[i];
        printf("SUMMARY gemm %-5s %-9s %-12s %lldx%lldx%lldx%lld %9.1f TFLOP/s",
               argv[2], strncmp(what, "square", 6) ? what : "square",
               x->shape.name[0] ? x->shape.name : "-",
               (long long)x->shape.batch, (long long)x->shape.m,
               (long long)x->shape.n, (long long)x->shape.k,
               x->flops_per_s / 1e12);
        if (peak > 0) printf(" %5.1f%% of peak", 100 * x->flops_per_s / peak);
        printf("  median %.1f us\n", x->time.median * 1e6);
    }
    return rc;
fail:
    fprintf(stderr, "gpucheck: %s\n", e.msg);
    return e.code == PP_ENODEV ? 77 : 1;
}

static int membw(int argc, char **argv) {
    pp_exec_membw_result r[3 * 16];
    size_t n = 0;
    int rc = 0;
    if (argc < 3) return usage();
    for (int i = 2; i < argc && i < 18; i++) {
        double mib = atof(argv[i]);
        if (mib <= 0) return usage();
        for (int k = 0; k < PP_MEMBW__KINDS; k++) {
            pp_error e = PP_ERROR_INIT;
            if (pp_exec_membw_run(PP_EXEC_CUDA, (pp_membw_kind)k,
                                  (size_t)(mib * 1048576.0), 20, 1, 0, &r[n],
                                  &e)) {
                fprintf(stderr, "gpucheck: %s\n", e.msg);
                if (e.code == PP_ENODEV) return 77;
                rc = 1;
                continue;
            }
            n++;
        }
    }
    pp_exec_membw_print(stdout, r, n);
    for (size_t i = 0; i < n; i++)
        printf("SUMMARY membw %-6s %8.0f MiB %9.1f GB/s (best %.1f)\n",
               pp_membw_kind_names[r[i].kind],
               (double)r[i].array_bytes / 1048576.0, r[i].bw_Bps / 1e9,
               r[i].best_Bps / 1e9);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    if (strcmp(argv[1], "gemm") == 0) return gemm(argc, argv);
    if (strcmp(argv[1], "membw") == 0) return membw(argc, argv);
    return usage();
}
