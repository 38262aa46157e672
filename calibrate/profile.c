/*
 * profile.c: writing the fitted profile, and reading its `network:`
 * section back.
 *
 * The file is a GPU profile of topologies/profiles/ (sim reads it with
 * --profile) plus two sections:
 *   network:     alpha-beta per link class, scope and algorithm, which
 *                sim's collectives use (sim/coll/coll_fit.c)
 *   provenance:  inputs with their SHA-256, the date, the fit statistics
 * (`calibrate fit --plain` writes the provenance as comments and no
 * network).
 */
#include "cal_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *q(double v, pp_qkind k, char *buf, size_t len) {
    return pp_unit_format(v, k, 6, buf, len);
}

static void yaml_str(FILE *fp, const char *s) {
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', fp);
        if ((unsigned char)*s < 0x20)
            fputc(' ', fp);
        else
            fputc(*s, fp);
    }
    fputc('"', fp);
}

static void date_utc(char *buf, size_t len) {
    /* SOURCE_DATE_EPOCH (reproducible-builds.org) makes the file a pure
     * function of its inputs. */
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    time_t t = sde && *sde ? (time_t)strtoll(sde, NULL, 10) : time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void fit_stats(FILE *fp, const char *ind, const pp_cal_fit *f) {
    fprintf(fp, "%s- what: ", ind);
    yaml_str(fp, f->what);
    fprintf(fp, "\n%s  points: %zu\n", ind, f->n_points);
    if (isfinite(f->r2)) fprintf(fp, "%s  r2: %.6g\n", ind, f->r2);
    if (isfinite(f->chi2_dof))
        fprintf(fp, "%s  chi2_dof: %.6g\n", ind, f->chi2_dof);
    if (isfinite(f->rel_rms))
        fprintf(fp, "%s  rel_rms: %.6g\n", ind, f->rel_rms);
    if (f->n_params) {
        fprintf(fp, "%s  params:\n", ind);
        for (size_t i = 0; i < f->n_params; i++) {
            fprintf(fp, "%s    %s: {value: %.8g", ind, f->p[i].name,
                    f->p[i].value);
            if (isfinite(f->p[i].se)) fprintf(fp, ", se: %.4g", f->p[i].se);
            fprintf(fp, "}\n");
        }
    }
    if (f->advice[0]) {
        fprintf(fp, "%s  advice: ", ind);
        yaml_str(fp, f->advice);
        fputc('\n', fp);
    }
}

int pp_cal_profile_write(const pp_cal_result *r, const pp_cal_provenance *pv,
                         FILE *fp, pp_error *e) {
    const pp_gpu_profile *g = &r->profile;
    char b1[64], date[32];
    date_utc(date, sizeof date);
    const char *c = pv->plain ? "# " : "";
    fprintf(fp,
            "# %s-fitted: GPU profile fitted by `podplan calibrate fit` "
            "(podplan %s) on %s.\n",
            g->name, PODPLAN_VERSION, date);
    fprintf(fp, "# Schema: topologies/profiles/a100.yaml; network: and "
                "provenance: calibrate/README.md.\n");
    fprintf(fp, "name: %s-fitted\n", g->name);
    fprintf(fp, "peak: %s\n", q(g->peak_flops, PP_Q_FLOPRATE, b1, sizeof b1));
    fprintf(fp, "hbm_bw: %.8gB/s\n", g->hbm_Bps);
    fprintf(fp, "sms: %d\n", (int)g->sms);
    fprintf(fp,
            "gemm:\n  efficiency: %.6g\n  k_half: %.6g\n  fp8_efficiency: "
            "%.6g\n  fp8_k_half: %.6g\n  tiles:\n",
            g->gemm_efficiency, g->gemm_k_half, g->fp8_gemm_efficiency,
            g->fp8_k_half);
    for (size_t i = 0; i < g->n_tiles; i++)
        fprintf(fp, "    - {m: %d, n: %d, efficiency: %.6g}\n",
                (int)g->tiles[i].m, (int)g->tiles[i].n, g->tiles[i].efficiency);
    /* The low-precision figures the fit does not touch, kept. */
    if (g->mxfp8_gemm_efficiency > 0)
        fprintf(fp, "  mxfp8_efficiency: %.6g\n", g->mxfp8_gemm_efficiency);
    if (g->nvfp4_gemm_efficiency > 0)
        fprintf(fp, "  nvfp4_efficiency: %.6g\n", g->nvfp4_gemm_efficiency);
    if (g->fp8_waves) fputs("  fp8_waves: true\n", fp);
    fprintf(fp, "memory:\n  efficiency: %.6g\n  scatter_add_bw: %.8gB/s\n",
            g->mem_efficiency, g->scatter_add_Bps);
    fprintf(fp, "launch_overhead: %s\n",
            q(g->launch_s, PP_Q_TIME, b1, sizeof b1));
    /* The base profile's, which the fitted loop efficiency below was
     * fitted with. */
    if (pp_profile_sustained(g) != 1)
        fprintf(fp, "sustained: %.6g\n", g->sustained);
    if (g->n_beside_comm) {
        fprintf(fp, "compute_beside_comm:\n");
        for (size_t i = 0; i < g->n_beside_comm; i++)
            fprintf(fp, "  - {sms: %.6g, time: %.6g}\n", g->beside_comm[i].sms,
                    g->beside_comm[i].time);
    }
    if (g->n_beside_nccl) {
        fprintf(fp,
                "compute_beside_nccl:\n  measured_on_sms: %.6g\n  points:\n",
                g->beside_nccl_on);
        for (size_t i = 0; i < g->n_beside_nccl; i++)
            fprintf(fp, "    - {sms: %.6g, time: %.6g}\n",
                    g->beside_nccl[i].sms, g->beside_nccl[i].time);
    }
    fprintf(fp,
            "attention:\n  flash_fwd_efficiency: %.6g\n  "
            "flash_bwd_efficiency: %.6g\n",
            g->flash_fwd_efficiency, g->flash_bwd_efficiency);
    if (g->flash_fwd_flops_half > 0 || g->flash_bwd_flops_half > 0)
        fprintf(fp,
                "  flash_fwd_flops_half: %.6g\n  flash_bwd_flops_half: %.6g\n",
                g->flash_fwd_flops_half, g->flash_bwd_flops_half);
    const struct {
        const char *key;
        double v[4];
    } dims[] = {
        {"head_dim_64",
         {g->flash_d64_fwd_efficiency, g->flash_d64_bwd_efficiency,
          g->flash_d64_fwd_flops_half, g->flash_d64_bwd_flops_half}},
        {"head_dim_192",
         {g->flash_d192_fwd_efficiency, g->flash_d192_bwd_efficiency,
          g->flash_d192_fwd_flops_half, g->flash_d192_bwd_flops_half}},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].v[0] > 0)
            fprintf(fp,
                    "  %s:\n    flash_fwd_efficiency: %.6g\n    "
                    "flash_bwd_efficiency: %.6g\n    flash_fwd_flops_half: "
                    "%.6g\n    flash_bwd_flops_half: %.6g\n",
                    dims[i].key, dims[i].v[0], dims[i].v[1], dims[i].v[2],
                    dims[i].v[3]);
    /* The training loop's fitted efficiency is a software-stack figure
     * (topologies/stacks/); written here still, as framework:, which a
     * profile may carry (deprecated: its values win over the stack's and
     * the CLI says so), until calibrate writes stack files. */
    fprintf(fp, "# fitted with stack %s\n", g->stack[0] ? g->stack : "?");
    fprintf(fp, "framework:\n  grad_accum_bytes: %.6g\n  efficiency: %.6g\n",
            g->grad_accum_bytes, g->framework_efficiency);

    if (r->n_net && !pv->plain) {
        fprintf(fp, "network:\n");
        for (size_t i = 0; i < r->n_net; i++) {
            const pp_cal_netfit *n = &r->net[i];
            if (!(n->beta_Bps > 0) || !isfinite(n->alpha_s)) continue;
            fprintf(fp,
                    "  - link: %s\n    scope: %s\n    op: %s\n"
                    "    algo: %s\n",
                    n->link, pp_cal_scope_name(n->scope), n->op, n->algo);
            if (n->ranks) fprintf(fp, "    ranks: %lld\n", (long long)n->ranks);
            /* Seconds and bytes per second as plain numbers: exact. */
            fprintf(fp, "    alpha: %.8gs\n    beta: %.8gB/s\n", n->alpha_s,
                    n->beta_Bps);
            fprintf(fp, "    alpha_se: %.4gs\n    beta_se: %.4gB/s\n",
                    n->alpha_se, n->beta_se);
            if (n->knee)
                fprintf(fp,
                        "    knee: %.8gB\n    alpha_lo: %.8gs\n"
                        "    beta_lo: %.8gB/s\n",
                        n->knee_bytes, n->alpha_lo_s, n->beta_lo_Bps);
        }
    }
    fprintf(fp, "%sprovenance:\n", c);
    fprintf(fp, "%s  tool: \"podplan %s calibrate fit\"\n", c, PODPLAN_VERSION);
    fprintf(fp, "%s  date: \"%s\"\n", c, date);
    if (pv->cluster) fprintf(fp, "%s  cluster: \"%s\"\n", c, pv->cluster);
    if (pv->command) {
        fprintf(fp, "%s  command: ", c);
        yaml_str(fp, pv->command);
        fputc('\n', fp);
    }
    fprintf(fp, "%s  inputs:\n", c);
    for (size_t i = 0; pv->set && i < pv->set->n_src; i++) {
        const pp_cal_source *s = &pv->set->src[i];
        fprintf(fp, "%s    - {file: ", c);
        yaml_str(fp, s->path);
        fprintf(fp, ", format: %s, sha256: \"%s\"}\n", s->format, s->sha256);
    }
    fprintf(fp, "%s  fits:\n", c);
    char ind[16];
    snprintf(ind, sizeof ind, "%s    ", c);
    if (r->mem.n_points) fit_stats(fp, ind, &r->mem);
    if (r->gemm.n_points) fit_stats(fp, ind, &r->gemm);
    if (r->beside.n_points) fit_stats(fp, ind, &r->beside);
    if (r->beside_nccl.n_points) fit_stats(fp, ind, &r->beside_nccl);
    for (size_t i = 0; i < r->n_net; i++) fit_stats(fp, ind, &r->net[i].fit);
    for (size_t i = 0; i < r->n_rank; i++) fit_stats(fp, ind, &r->rank[i].fit);
    if (r->stack.n_points) fit_stats(fp, ind, &r->stack);
    if (ferror(fp))
        return pp_error_set(e, PP_EIO, "writing the profile failed");
    return 0;
}

/* ------------------------------------------------------------------------
 * The network section.
 * ---------------------------------------------------------------------- */
double pp_cal_net_time_s(const pp_cal_net_entry *x, double bytes) {
    if (x->knee_bytes > 0 && bytes <= x->knee_bytes && x->beta_lo_Bps > 0)
        return x->alpha_lo_s + bytes / x->beta_lo_Bps;
    return x->alpha_s + bytes / x->beta_Bps;
}

void pp_cal_network_fini(pp_cal_network *n) {
    if (!n) return;
    free(n->v);
    n->v = NULL;
    n->n = 0;
}

/* The section is read by sim's profile reader (sim/hw/profile.c; the
 * simulator's collectives use the same entries); this copies it into
 * calibrate's form. */
static void from_profile(const pp_gpu_profile *g, pp_cal_network *out) {
    pp_cal_network n = {NULL, 0};
    n.v = pp_xcalloc(g->n_net ? g->n_net : 1, sizeof *n.v);
    for (size_t i = 0; i < g->n_net; i++) {
        const pp_net_fit *f = &g->net[i];
        pp_cal_net_entry *x = &n.v[n.n++];
        pp__cal_strcpy(x->link, f->link);
        x->scope = (pp_cal_scope)f->scope;
        pp__cal_strcpy(x->op, f->op);
        pp__cal_strcpy(x->algo, f->algo);
        x->ranks = f->ranks;
        x->alpha_s = f->alpha_s;
        x->beta_Bps = f->beta_Bps;
        x->alpha_se = f->alpha_se;
        x->beta_se = f->beta_se;
        x->knee_bytes = f->knee_bytes;
        x->alpha_lo_s = f->alpha_lo_s;
        x->beta_lo_Bps = f->beta_lo_Bps;
        x->line = f->line;
    }
    *out = n;
}

/* A file that is only partly a profile (no peak or HBM bandwidth and no
 * GPU to take them from) is still read for its network. */
int pp_cal_network_load(const char *path, pp_cal_network *out, pp_error *e) {
    pp_gpu_spec any;
    memset(&any, 0, sizeof any);
    snprintf(any.name, sizeof any.name, "any");
    for (int d = 0; d < PP_DTYPE__COUNT; d++) any.peak_flops[d] = 1;
    any.hbm_Bps = 1;
    any.sms = 1;
    pp_gpu_profile *g = pp_xmalloc(sizeof *g);
    int rc = pp_profile_load(path, &any, g, e);
    if (rc == 0) from_profile(g, out);
    free(g);
    return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------------------
 * A fitted profile: its GPU part through sim's own reader (which accepts
 * the network: and provenance: sections calibrate writes), then the
 * network section.
 * ---------------------------------------------------------------------- */
int pp_cal_profile_load(const char *path, const pp_gpu_spec *gpu,
                        pp_gpu_profile *prof, pp_cal_network *net,
                        pp_error *e) {
    int rc = pp_profile_load(path, gpu, prof, e);
    if (rc < 0) return rc;
    if (net) from_profile(prof, net);
    return 0;
}
