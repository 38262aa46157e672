/*
 * sim/hw/profile.c: GPU profiles and the roofline times of single kernels.
 *
 * Every kernel of a training step is timed by a roofline (Williams et al.
 * 2009): the larger of its FLOPs over the tensor-core rate it can reach
 * and its HBM bytes over the bandwidth it can reach, plus a launch
 * overhead:
 *
 *   t = max(F / (peak x eff_gemm(shape)), B / (hbm x eff_mem)) + launch
 *
 * eff_gemm follows how cuBLAS runs a GEMM: the output is cut into tiles,
 * one per thread block; tiles run in waves of one per SM, so a last,
 * partial wave idles SMs ("wave quantization", NVIDIA's Matrix
 * Multiplication Background User's Guide); tiles hanging over the edge
 * compute padding; each tile's main loop over k pays a fixed prologue and
 * epilogue, k / (k + k_half).  cuBLAS picks the best of several tile
 * shapes, so we do too.  The numbers live in a GPU profile
 * (topologies/profiles/<gpu>.yaml, documented there).
 *
 * Kept apart from the layer model (sim/train/compute.c) so that a
 * calibration layer can read, fit and write profiles by linking
 * podplan_sim_hw alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podplan/hw.h"

/* ------------------------------------------------------------------------
 * Profiles.
 * ---------------------------------------------------------------------- */

/* Builtin defaults, used for a GPU with no shipped profile: the A100
 * profile's shape figures with a more modest GEMM ceiling (80%, between
 * V100's and A100's measured best).  The peak, bandwidth and SMs come
 * from the catalogue. */
static void profile_builtin(pp_gpu_profile *g) {
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "builtin");
    snprintf(g->source, sizeof g->source, "builtin");
    g->gemm_efficiency = 0.80;
    g->gemm_k_half = 64;
    static const pp_gemm_tile t[] = {
        {256, 128, 1.0}, {128, 256, 1.0}, {128, 128, 0.92}, {256, 64, 0.92},
        {64, 256, 0.92}, {128, 64, 0.82}, {64, 128, 0.82},  {64, 64, 0.65}};
    memcpy(g->tiles, t, sizeof t);
    g->n_tiles = sizeof t / sizeof t[0];
    g->mem_efficiency = 0.80;
    /* H100's and H200's measured rate (h100.yaml): atomics-bound, about
     * the same on both, an estimate for other GPUs. */
    g->scatter_add_Bps = 1.2e11;
    g->launch_s = 4e-6;
    g->grad_accum_bytes = 0;
    g->framework_efficiency = 1.0;
    g->sms = 80;
    /* The planner's estimator: fitted to the simulator at flow fidelity
     * (GPT-3 175B on titan, 1,024 A100: 25 layouts spread over the
     * ranking, mean error -0.4%, mean absolute 0.8%).  a100.yaml says
     * what each stands for. */
    /* FP8 and FlashAttention, for a GPU with no profile: the H100
     * profile's figures rounded down (topologies/profiles/h100.yaml). */
    g->fp8_gemm_efficiency = 0.7;
    g->fp8_k_half = 272;
    g->flash_fwd_efficiency = 0.6;
    g->flash_bwd_efficiency = 0.5;
    g->p2p_share_rail = 0.7;
    g->p2p_share_cross_rail = 0.35;
    g->overlap_p2p_penalty = 0.3;
}

static void profile_from_gpu(pp_gpu_profile *g, const pp_gpu_spec *gpu) {
    if (!gpu) return;
    if (gpu->peak_flops[PP_DTYPE_BF16] > 0)
        g->peak_flops = gpu->peak_flops[PP_DTYPE_BF16];
    g->fp8_peak_flops = gpu->peak_flops[PP_DTYPE_FP8];
    g->fp4_peak_flops = gpu->peak_flops[PP_DTYPE_FP4];
    g->mxfp8 = gpu->mxfp8;
    g->fp8_any_layout = gpu->fp8_any_layout;
    if (gpu->hbm_Bps > 0) g->hbm_Bps = gpu->hbm_Bps;
    if (gpu->sms > 0) g->sms = gpu->sms;
}

static int read_tiles(pp_node *seq, const char *path, pp_gpu_profile *g,
                      pp_error *e) {
    char p[256];
    if (seq->n == 0 || seq->n > PP_PROFILE_TILES)
        return pp_error_at(e, PP_EINPUT, seq, path,
                           "expected 1 to %d tiles, got %zu", PP_PROFILE_TILES,
                           seq->n);
    for (size_t i = 0; i < seq->n; i++) {
        pp_node *t = seq->items[i];
        int64_t m, n;
        int rc;
        pp_path_index(p, sizeof p, path, i);
        if ((rc = pp_node_expect(t, p, PP_NODE_MAP, e)) < 0 ||
            (rc = pp_map_int(t, p, "m", PP_REQUIRED, 1, 4096, &m, e)) < 0 ||
            (rc = pp_map_int(t, p, "n", PP_REQUIRED, 1, 4096, &n, e)) < 0 ||
            (rc = pp_map_number(t, p, "efficiency", PP_REQUIRED, 1e-3, 1,
                                &g->tiles[i].efficiency, e)) < 0 ||
            (rc = pp_map_done(t, p, e)) < 0)
            return rc;
        g->tiles[i].m = (int32_t)m;
        g->tiles[i].n = (int32_t)n;
    }
    g->n_tiles = seq->n;
    return 0;
}

/* compute_beside_comm and compute_beside_nccl's points: [{sms: S, time:
 * T}, ...], S increasing, T >= 1, into pts (PP_PROFILE_BESIDE at most). */
static int read_beside(pp_node *seq, const char *path, pp_beside_pt *pts,
                       size_t *n, pp_error *e) {
    char p[256];
    if (seq->n == 0 || seq->n > PP_PROFILE_BESIDE)
        return pp_error_at(e, PP_EINPUT, seq, path,
                           "expected 1 to %d points, got %zu",
                           PP_PROFILE_BESIDE, seq->n);
    for (size_t i = 0; i < seq->n; i++) {
        pp_node *t = seq->items[i];
        int rc;
        pp_path_index(p, sizeof p, path, i);
        if ((rc = pp_node_expect(t, p, PP_NODE_MAP, e)) < 0 ||
            (rc = pp_map_number(t, p, "sms", PP_REQUIRED, 1, 100000,
                                &pts[i].sms, e)) < 0 ||
            (rc = pp_map_number(t, p, "time", PP_REQUIRED, 1, 100, &pts[i].time,
                                e)) < 0 ||
            (rc = pp_map_done(t, p, e)) < 0)
            return rc;
        if (i > 0 && !(pts[i].sms > pts[i - 1].sms))
            return pp_error_at(e, PP_EINPUT, pp_map_get(t, "sms"), p,
                               "expected more SMs than the point before "
                               "(%g)",
                               pts[i - 1].sms);
    }
    *n = seq->n;
    return 0;
}

/* compute_beside_nccl: {measured_on_sms: N, points: [...]}. */
static int read_beside_nccl(pp_node *sec, pp_gpu_profile *g, pp_error *e) {
    static const char *path = "compute_beside_nccl";
    pp_node *pts;
    int rc;
    if ((rc = pp_map_number(sec, path, "measured_on_sms", PP_REQUIRED, 1,
                            100000, &g->beside_nccl_on, e)) < 0 ||
        (rc = pp_map_node(sec, path, "points", PP_REQUIRED, PP_NODE_SEQ, &pts,
                          e)) < 0 ||
        (rc = read_beside(pts, "compute_beside_nccl.points", g->beside_nccl,
                          &g->n_beside_nccl, e)) < 0)
        return rc;
    return pp_map_done(sec, path, e);
}

/* Linear between the points and from (0, 1); the last held beyond. */
static double beside_at(const pp_beside_pt *pts, size_t n, double sms) {
    double s0 = 0, t0 = 1;
    if (!(sms > 0)) return 1;
    for (size_t i = 0; i < n; i++) {
        double s1 = pts[i].sms, t1 = pts[i].time;
        if (sms <= s1) return t0 + (t1 - t0) * (sms - s0) / (s1 - s0);
        s0 = s1;
        t0 = t1;
    }
    return t0;
}

double pp_profile_beside_comm(const pp_gpu_profile *g, double sms) {
    return beside_at(g->beside_comm, g->n_beside_comm, sms);
}

double pp_profile_beside_nccl(const pp_gpu_profile *g, double sms) {
    if (g->n_beside_nccl == 0 || !(sms > 0)) return 1;
    /* The same share of this GPU's SMs as of the measured one's. */
    if (g->sms > 0 && g->beside_nccl_on > 0)
        sms *= g->beside_nccl_on / (double)g->sms;
    return beside_at(g->beside_nccl, g->n_beside_nccl, sms);
}

/* The all-to-all's kernels (NCCL's send/receive channels, DeepEP's and
 * HybridEP's) move data on their SMs for as long as it runs, which is what
 * compute_beside_nccl measured (a copy kernel on K SMs; on the H100 1.26
 * at 20 SMs and 1.37 at 32).  compute_beside_comm's figures, GEMMs aimed
 * at the other SMs with those idle (1.07 and 1.17), are the lower bound
 * kept for a profile without the first. */
double pp_profile_a2a_beside(const pp_gpu_profile *g, const pp_parallel *p) {
    int d = p->hybridep ? PP_MOE_HYBRIDEP
            : p->deepep ? PP_MOE_DEEPEP
                        : PP_MOE_ALLTOALL;
    double sms = g->sw.moe_overlap_sms[d];
    return g->n_beside_nccl ? pp_profile_beside_nccl(g, sms)
                            : pp_profile_beside_comm(g, sms);
}

/* Reads the document into g (which holds the defaults). */
static const char *const net_links[] = {"nvlink",     "nvswitch", "pcie",
                                        "infiniband", "roce",     "ethernet",
                                        "unknown",    NULL};
static const char *const net_scopes[] = {"unknown", "intra", "inter", NULL};

static void copy_str(char *dst, size_t len, const char *src) {
    snprintf(dst, len, "%s", src);
}

/* One entry of `network:` (hw.h's pp_net_fit). */
static int net_entry(pp_node *it, const char *path, pp_net_fit *x,
                     pp_error *e) {
    int rc, li = 0, sc = 0;
    const char *op = NULL, *algo = NULL;
    int64_t ranks = 0;
    memset(x, 0, sizeof *x);
    if ((rc = pp_node_expect(it, path, PP_NODE_MAP, e)) < 0 ||
        (rc = pp_map_enum(it, path, "link", PP_REQUIRED, net_links, &li, e)) <
            0 ||
        (rc = pp_map_enum(it, path, "scope", PP_REQUIRED, net_scopes, &sc,
                          e)) < 0 ||
        (rc = pp_map_string(it, path, "op", PP_REQUIRED, &op, e)) < 0 ||
        (rc = pp_map_string(it, path, "algo", PP_OPTIONAL, &algo, e)) < 0 ||
        (rc = pp_map_int(it, path, "ranks", PP_OPTIONAL, 0, 1 << 24, &ranks,
                         e)) < 0 ||
        (rc = pp_map_quantity(it, path, "alpha", PP_REQUIRED, PP_Q_TIME, NULL,
                              true, &x->alpha_s, e)) < 0 ||
        (rc = pp_map_quantity(it, path, "beta", PP_REQUIRED, PP_Q_BANDWIDTH,
                              NULL, false, &x->beta_Bps, e)) < 0 ||
        (rc = pp_map_quantity(it, path, "alpha_se", PP_OPTIONAL, PP_Q_TIME,
                              NULL, true, &x->alpha_se, e)) < 0 ||
        (rc = pp_map_quantity(it, path, "beta_se", PP_OPTIONAL, PP_Q_BANDWIDTH,
                              NULL, true, &x->beta_se, e)) < 0 ||
        (rc = pp_map_quantity(it, path, "knee", PP_OPTIONAL, PP_Q_BYTES, NULL,
                              false, &x->knee_bytes, e)) < 0 ||
        (rc = pp_map_quantity(it, path, "alpha_lo", PP_OPTIONAL, PP_Q_TIME,
                              NULL, true, &x->alpha_lo_s, e)) < 0 ||
        (rc = pp_map_quantity(it, path, "beta_lo", PP_OPTIONAL, PP_Q_BANDWIDTH,
                              NULL, false, &x->beta_lo_Bps, e)) < 0 ||
        (rc = pp_map_done(it, path, e)) < 0)
        return rc;
    if (!(x->beta_Bps > 0))
        return pp_error_at(e, PP_EINPUT, it, path,
                           "beta: expected a bandwidth > 0");
    if (x->knee_bytes > 0 && !(x->beta_lo_Bps > 0))
        return pp_error_at(e, PP_EINPUT, it, path,
                           "knee: expected alpha_lo "
                           "and beta_lo with it");
    if (strlen(op) >= sizeof x->op || (algo && strlen(algo) >= sizeof x->algo))
        return pp_error_at(e, PP_EINPUT, it, path,
                           "op/algo: expected a name of at most %zu "
                           "characters",
                           sizeof x->algo - 1);
    copy_str(x->link, sizeof x->link, net_links[li]);
    x->scope = (pp_net_scope)sc;
    copy_str(x->op, sizeof x->op, op);
    copy_str(x->algo, sizeof x->algo, algo ? algo : "auto");
    x->ranks = ranks;
    x->line = it->line;
    return 0;
}

/* attention.head_dim_64 or .head_dim_192 (`key`) into f[4] (forward
 * efficiency, backward efficiency, forward and backward flops_half):
 * both efficiencies required, the sizes optional (as at the top level). */
static int load_flash_dim(pp_node *sec, const char *key, double *f[4],
                          pp_error *e) {
    char path[48];
    snprintf(path, sizeof path, "attention.%s", key);
    pp_node *d;
    int rc =
        pp_map_node(sec, "attention", key, PP_OPTIONAL, PP_NODE_MAP, &d, e);
    if (rc != 0) return rc;
    if ((rc = pp_map_number(d, path, "flash_fwd_efficiency", PP_REQUIRED, 1e-3,
                            1, f[0], e)) < 0 ||
        (rc = pp_map_number(d, path, "flash_bwd_efficiency", PP_REQUIRED, 1e-3,
                            1, f[1], e)) < 0 ||
        (rc = pp_map_number(d, path, "flash_fwd_flops_half", PP_OPTIONAL, 0,
                            1e18, f[2], e)) < 0 ||
        (rc = pp_map_number(d, path, "flash_bwd_flops_half", PP_OPTIONAL, 0,
                            1e18, f[3], e)) < 0)
        return rc;
    return pp_map_done(d, path, e);
}

static int load_flash_dims(pp_node *sec, pp_gpu_profile *g, pp_error *e) {
    double *d64[4] = {
        &g->flash_d64_fwd_efficiency, &g->flash_d64_bwd_efficiency,
        &g->flash_d64_fwd_flops_half, &g->flash_d64_bwd_flops_half};
    double *d192[4] = {
        &g->flash_d192_fwd_efficiency, &g->flash_d192_bwd_efficiency,
        &g->flash_d192_fwd_flops_half, &g->flash_d192_bwd_flops_half};
    int rc = load_flash_dim(sec, "head_dim_64", d64, e);
    return rc < 0 ? rc : load_flash_dim(sec, "head_dim_192", d192, e);
}

static int profile_read(pp_node *root, pp_gpu_profile *g, pp_error *e) {
    pp_node *sec, *n;
    const char *name;
    int64_t sms;
    int rc;

    if ((rc = pp_node_expect(root, "", PP_NODE_MAP, e)) < 0) return rc;
    rc = pp_map_string(root, "", "name", PP_OPTIONAL, &name, e);
    if (rc < 0) return rc;
    if (rc == 0) snprintf(g->name, sizeof g->name, "%s", name);
    /* gpus: informative (which catalogue GPUs the profile was written
     * for); any list of names. */
    rc = pp_map_node(root, "", "gpus", PP_OPTIONAL, PP_NODE_SEQ, &n, e);
    if (rc < 0) return rc;
    if ((rc = pp_map_quantity(root, "", "peak", PP_OPTIONAL, PP_Q_FLOPRATE,
                              NULL, false, &g->peak_flops, e)) < 0 ||
        (rc = pp_map_quantity(root, "", "hbm_bw", PP_OPTIONAL, PP_Q_BANDWIDTH,
                              NULL, false, &g->hbm_Bps, e)) < 0)
        return rc;
    rc = pp_map_int(root, "", "sms", PP_OPTIONAL, 1, 100000, &sms, e);
    if (rc < 0) return rc;
    if (rc == 0) g->sms = (int32_t)sms;

    rc = pp_map_node(root, "", "gemm", PP_OPTIONAL, PP_NODE_MAP, &sec, e);
    if (rc < 0) return rc;
    if (rc == 0) {
        if ((rc = pp_map_number(sec, "gemm", "efficiency", PP_OPTIONAL, 1e-3, 1,
                                &g->gemm_efficiency, e)) < 0 ||
            (rc = pp_map_number(sec, "gemm", "k_half", PP_OPTIONAL, 0, 1e6,
                                &g->gemm_k_half, e)) < 0 ||
            (rc = pp_map_number(sec, "gemm", "fp8_efficiency", PP_OPTIONAL,
                                1e-3, 1, &g->fp8_gemm_efficiency, e)) < 0 ||
            (rc = pp_map_number(sec, "gemm", "fp8_k_half", PP_OPTIONAL, 0, 1e6,
                                &g->fp8_k_half, e)) < 0 ||
            (rc = pp_map_number(sec, "gemm", "mxfp8_efficiency", PP_OPTIONAL,
                                1e-3, 1, &g->mxfp8_gemm_efficiency, e)) < 0 ||
            (rc = pp_map_number(sec, "gemm", "nvfp4_efficiency", PP_OPTIONAL,
                                1e-3, 1, &g->nvfp4_gemm_efficiency, e)) < 0 ||
            (rc = pp_map_bool(sec, "gemm", "fp8_waves", PP_OPTIONAL,
                              &g->fp8_waves, e)) < 0)
            return rc;
        rc = pp_map_node(sec, "gemm", "tiles", PP_OPTIONAL, PP_NODE_SEQ, &n, e);
        if (rc < 0) return rc;
        if (rc == 0 && (rc = read_tiles(n, "gemm.tiles", g, e)) < 0) return rc;
        if ((rc = pp_map_done(sec, "gemm", e)) < 0) return rc;
    }
    rc = pp_map_node(root, "", "memory", PP_OPTIONAL, PP_NODE_MAP, &sec, e);
    if (rc < 0) return rc;
    if (rc == 0) {
        if ((rc = pp_map_number(sec, "memory", "efficiency", PP_OPTIONAL, 1e-3,
                                1, &g->mem_efficiency, e)) < 0 ||
            (rc = pp_map_quantity(sec, "memory", "scatter_add_bw", PP_OPTIONAL,
                                  PP_Q_BANDWIDTH, NULL, false,
                                  &g->scatter_add_Bps, e)) < 0 ||
            (rc = pp_map_done(sec, "memory", e)) < 0)
            return rc;
    }
    rc = pp_map_quantity(root, "", "launch_overhead", PP_OPTIONAL, PP_Q_TIME,
                         NULL, true, &g->launch_s, e);
    if (rc < 0) return rc;
    /* Relative to H100's share: a GPU could hold more of its rate than
     * H100 does, so up to 1.5. */
    rc = pp_map_number(root, "", "sustained", PP_OPTIONAL, 0.1, 1.5,
                       &g->sustained, e);
    if (rc < 0) return rc;
    rc = pp_map_node(root, "", "compute_beside_comm", PP_OPTIONAL, PP_NODE_SEQ,
                     &n, e);
    if (rc < 0) return rc;
    if (rc == 0 && (rc = read_beside(n, "compute_beside_comm", g->beside_comm,
                                     &g->n_beside_comm, e)) < 0)
        return rc;
    rc = pp_map_node(root, "", "compute_beside_nccl", PP_OPTIONAL, PP_NODE_MAP,
                     &n, e);
    if (rc < 0) return rc;
    if (rc == 0 && (rc = read_beside_nccl(n, g, e)) < 0) return rc;
    rc = pp_map_node(root, "", "attention", PP_OPTIONAL, PP_NODE_MAP, &sec, e);
    if (rc < 0) return rc;
    if (rc == 0 &&
        ((rc = pp_map_number(sec, "attention", "flash_fwd_efficiency",
                             PP_OPTIONAL, 1e-3, 1, &g->flash_fwd_efficiency,
                             e)) < 0 ||
         (rc = pp_map_number(sec, "attention", "flash_bwd_efficiency",
                             PP_OPTIONAL, 1e-3, 1, &g->flash_bwd_efficiency,
                             e)) < 0 ||
         (rc = pp_map_number(sec, "attention", "flash_fwd_flops_half",
                             PP_OPTIONAL, 0, 1e18, &g->flash_fwd_flops_half,
                             e)) < 0 ||
         (rc = pp_map_number(sec, "attention", "flash_bwd_flops_half",
                             PP_OPTIONAL, 0, 1e18, &g->flash_bwd_flops_half,
                             e)) < 0 ||
         (rc = pp_map_number(sec, "attention", "fp8_fwd_time_ratio",
                             PP_OPTIONAL, 0.1, 2, &g->attn_fp8_fwd_ratio, e)) <
             0 ||
         (rc = pp_map_number(sec, "attention", "fp8_bwd_time_ratio",
                             PP_OPTIONAL, 0.1, 2, &g->attn_fp8_bwd_ratio, e)) <
             0 ||
         (rc = load_flash_dims(sec, g, e)) < 0 ||
         (rc = pp_map_done(sec, "attention", e)) < 0))
        return rc;
    /* framework: is the software stack's now (topologies/stacks/).  Kept
     * readable, deprecated, because `podplan calibrate fit` wrote it into
     * every fitted profile: those files keep their fitted values, which
     * then win over the stack's (pp_stack_apply), and the CLI says so. */
    rc = pp_map_node(root, "", "framework", PP_OPTIONAL, PP_NODE_MAP, &sec, e);
    if (rc < 0) return rc;
    if (rc == 0) {
        g->legacy_framework = true;
        if ((rc = pp_map_number(sec, "framework", "grad_accum_bytes",
                                PP_OPTIONAL, 0, 64, &g->grad_accum_bytes, e)) <
                0 ||
            (rc = pp_map_number(sec, "framework", "efficiency", PP_OPTIONAL,
                                1e-3, 1, &g->framework_efficiency, e)) < 0 ||
            (rc = pp_map_done(sec, "framework", e)) < 0)
            return rc;
    }
    rc = pp_map_node(root, "", "estimator", PP_OPTIONAL, PP_NODE_MAP, &sec, e);
    if (rc < 0) return rc;
    if (rc == 0) {
        if ((rc = pp_map_number(sec, "estimator", "p2p_share_rail", PP_OPTIONAL,
                                1e-3, 1, &g->p2p_share_rail, e)) < 0 ||
            (rc = pp_map_number(sec, "estimator", "p2p_share_cross_rail",
                                PP_OPTIONAL, 1e-3, 1, &g->p2p_share_cross_rail,
                                e)) < 0 ||
            (rc = pp_map_number(sec, "estimator", "overlap_p2p_penalty",
                                PP_OPTIONAL, 0, 10, &g->overlap_p2p_penalty,
                                e)) < 0 ||
            (rc = pp_map_done(sec, "estimator", e)) < 0)
            return rc;
    }
    /* Written by `podplan calibrate fit` (calibrate/README.md): the
     * network's fitted alpha-beta, which sim/coll's collectives use, and
     * where the figures came from. */
    pp_node *seq = NULL;
    rc = pp_map_node(root, "", "network", PP_OPTIONAL, PP_NODE_SEQ, &seq, e);
    if (rc < 0) return rc;
    g->n_net = 0;
    if (seq) {
        if (seq->n > PP_PROFILE_NET_FITS)
            return pp_error_at(e, PP_EINPUT, seq, "network",
                               "expected at most %d entries, got %zu",
                               PP_PROFILE_NET_FITS, seq->n);
        for (size_t i = 0; i < seq->n; i++) {
            char p[64];
            pp_path_index(p, sizeof p, "network", i);
            if ((rc = net_entry(seq->items[i], p, &g->net[i], e)) < 0)
                return rc;
            g->n_net++;
        }
    }
    /* A profile with a provenance date was fitted to measurements; the
     * outputs say so (and say when a profile was not). */
    pp_node *pv = pp_map_get(root, "provenance");
    g->calibrated[0] = '\0';
    if (pv && pv->kind == PP_NODE_MAP) {
        const char *date = NULL, *src = NULL;
        if ((rc = pp_map_string(pv, "provenance", "date", PP_OPTIONAL, &date,
                                e)) < 0 ||
            (rc = pp_map_string(pv, "provenance", "source", PP_OPTIONAL, &src,
                                e)) < 0)
            return rc;
        if (date)
            snprintf(g->calibrated, sizeof g->calibrated, "%.10s, %s", date,
                     src ? src : "podplan calibrate");
    }
    return pp_map_done(root, "", e);
}

/* Every loaded profile carries the software stack its GPU runs by
 * default (pp_stack_default_name); --stack replaces it
 * (pp_profile_load_stack). */
static int default_stack(const pp_gpu_spec *gpu, pp_gpu_profile *g,
                         pp_error *e) {
    pp_stack s;
    int rc = pp_stack_load(pp_stack_default_name(gpu), &s, e);
    if (rc < 0) return rc;
    pp_stack_apply(&s, g, true);
    return 0;
}

/* "a100-sxm4-80gb" -> "a100". */
static void family(const char *name, char *out, size_t len) {
    size_t k = strcspn(name, "-");
    snprintf(out, len, "%.*s", (int)(k < len - 1 ? k : len - 1), name);
}

int pp_profile_load(const char *spec, const pp_gpu_spec *gpu,
                    pp_gpu_profile *out, pp_error *e) {
    pp_gpu_profile g;
    char path[1024];
    pp_error quiet = PP_ERROR_INIT;
    int rc;

    profile_builtin(&g);
    profile_from_gpu(&g, gpu);
    if (!spec) {
        if (!gpu) {
            if ((rc = default_stack(gpu, &g, e)) < 0) return rc;
            *out = g;
            return 0;
        }
        char fam[PP_NAME_MAX];
        family(gpu->name, fam, sizeof fam);
        if (pp_data_find("topologies/profiles", gpu->name, path, sizeof path,
                         &quiet) != 0) {
            pp_error_clear(&quiet);
            if (pp_data_find("topologies/profiles", fam, path, sizeof path,
                             &quiet) != 0) {
                /* No shipped profile: the builtin one. */
                snprintf(g.name, sizeof g.name, "builtin (%.40s)", gpu->name);
                if ((rc = default_stack(gpu, &g, e)) < 0) return rc;
                *out = g;
                return 0;
            }
        }
    } else if ((rc = pp_data_find("topologies/profiles", spec, path,
                                  sizeof path, e)) < 0) {
        return rc;
    }

    pp_doc *doc;
    if ((rc = pp_doc_load_file(path, &doc, e)) < 0) return rc;
    /* The file's base name, unless it says `name:`. */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(g.name, sizeof g.name, "%.*s", (int)strcspn(base, "."), base);
    rc = profile_read(pp_doc_root(doc), &g, e);
    pp_doc_free(doc);
    if (rc < 0) return rc;
    if (!(g.peak_flops > 0) || !(g.hbm_Bps > 0))
        return pp_error_set(e, PP_EINPUT,
                            "%s: the profile gives no peak or hbm_bw and "
                            "there is no GPU to take them from",
                            path);
    snprintf(g.source, sizeof g.source, "%.255s", path);
    if ((rc = default_stack(gpu, &g, e)) < 0) return rc;
    *out = g;
    return 0;
}

/* ------------------------------------------------------------------------
 * Single kernels.
 * ---------------------------------------------------------------------- */
/* A fused attention kernel's fixed costs (its prologue and epilogue per
 * tile, the causal mask's diagonal blocks, the last partial wave) weigh
 * less as its work grows: cuDNN's fused attention on one H200 (profiles/
 * h100.yaml, 26 shapes) rises from 0.09 of peak at 4e9 FLOPs to 0.6 at
 * 1e12, which efficiency x F / (F + F_half) follows within 9-10% rms.
 * Narrow heads run slower per FLOP (each tile's QK^T and PV are half as
 * deep at head dim 64, for the same softmax work), and wide heads'
 * backward does too (its tiles hold more per row: fewer in flight): on a
 * lent H100 head dim 64 reached 0.41 forward and backward, 128 0.59 and
 * 0.49, 192 0.58 and 0.31, so a profile may carry head dim 64's and
 * 192's own figures. */
double pp_flash_efficiency(const pp_gpu_profile *g, bool bwd, double flops,
                           double head_dim) {
    double eff = bwd ? g->flash_bwd_efficiency : g->flash_fwd_efficiency;
    double half = bwd ? g->flash_bwd_flops_half : g->flash_fwd_flops_half;
    double e_end = 0, h_end = 0, x = 0;
    if (g->flash_d64_fwd_efficiency > 0 && head_dim < 128) {
        e_end = bwd ? g->flash_d64_bwd_efficiency : g->flash_d64_fwd_efficiency;
        h_end = bwd ? g->flash_d64_bwd_flops_half : g->flash_d64_fwd_flops_half;
        x = head_dim <= 64 ? 1 : (128 - head_dim) / 64;
    } else if (g->flash_d192_fwd_efficiency > 0 && head_dim > 128) {
        e_end =
            bwd ? g->flash_d192_bwd_efficiency : g->flash_d192_fwd_efficiency;
        h_end =
            bwd ? g->flash_d192_bwd_flops_half : g->flash_d192_fwd_flops_half;
        x = head_dim >= 192 ? 1 : (head_dim - 128) / 64;
    }
    /* x: how far from 128 toward the end (0 at 128, 1 at the end) */
    eff += x * (e_end - eff);
    half += x * (h_end - half);
    if (half > 0 && flops > 0) eff *= flops / (flops + half);
    return eff;
}

/* The best tile's share of the rate on an m x n output (batch of them):
 * its own efficiency, the last wave's idle SMs, the edge tiles' padding. */
static double tile_factor(const pp_gpu_profile *g, double batch, double m,
                          double n) {
    double best = 0, sms = g->sms > 0 ? g->sms : 1;
    for (size_t i = 0; i < g->n_tiles; i++) {
        double tm = g->tiles[i].m, tn = g->tiles[i].n;
        double cm = ceil(m / tm), cn = ceil(n / tn);
        double tiles = batch * cm * cn;
        double waves = ceil(tiles / sms);
        double wave = tiles / (waves * sms);
        double pad = (m * n) / (cm * tm * cn * tn);
        double x = g->tiles[i].efficiency * wave * pad;
        if (x > best) best = x;
    }
    return best;
}

double pp_gemm_efficiency(const pp_gpu_profile *g, double batch, double m,
                          double n, double k) {
    if (!(m > 0 && n > 0 && k > 0 && batch > 0)) return g->gemm_efficiency;
    return g->gemm_efficiency * tile_factor(g, batch, m, n) * k /
           (k + g->gemm_k_half);
}

/* The share of the kernels' speed the stack's training loop sustains
 * (1 when unset): every kernel time below is divided by it. */
static double loop_efficiency(const pp_gpu_profile *g) {
    return g->framework_efficiency > 0 ? g->framework_efficiency : 1;
}

static double roofline(const pp_gpu_profile *g, double flops, double eff,
                       double bytes) {
    double tc =
        flops > 0 ? flops / pp_profile_tensor_rate(g, g->peak_flops, eff) : 0;
    double tm = bytes > 0 ? bytes / (g->hbm_Bps * g->mem_efficiency) : 0;
    double fw = loop_efficiency(g);
    return (tc > tm ? tc : tm) / fw + g->launch_s;
}

double pp_gemm_bytes(double batch, double m, double n, double k) {
    return 2.0 * batch * (m * k + k * n + m * n);
}

double pp_gemm_time_s(const pp_gpu_profile *g, double batch, double m, double n,
                      double k) {
    return roofline(g, 2.0 * batch * m * n * k,
                    pp_gemm_efficiency(g, batch, m, n, k),
                    pp_gemm_bytes(batch, m, n, k));
}

/* A GEMM of low-precision operands (ob bytes per element) at a peak
 * and an asymptote (see pp_gemm_time_prec_s). */
static double lowp_time(const pp_gpu_profile *g, double peak, double asym,
                        double ob, double batch, double m, double n, double k);

static double fp8_time(const pp_gpu_profile *g, double asym, double batch,
                       double m, double n, double k) {
    return lowp_time(g, g->fp8_peak_flops, asym, 1.0, batch, m, n, k);
}

double pp_gemm_time_prec_s(const pp_gpu_profile *g, bool fp8, double batch,
                           double m, double n, double k) {
    if (!fp8 || !(g->fp8_peak_flops > 0))
        return pp_gemm_time_s(g, batch, m, n, k);
    return fp8_time(g, g->fp8_gemm_efficiency, batch, m, n, k);
}

double pp_gemm_time_mxfp8_s(const pp_gpu_profile *g, double batch, double m,
                            double n, double k) {
    if (!(g->fp8_peak_flops > 0)) return pp_gemm_time_s(g, batch, m, n, k);
    return fp8_time(g,
                    g->mxfp8_gemm_efficiency > 0 ? g->mxfp8_gemm_efficiency
                                                 : g->fp8_gemm_efficiency,
                    batch, m, n, k);
}

double pp_gemm_time_nvfp4_s(const pp_gpu_profile *g, double batch, double m,
                            double n, double k) {
    if (!(g->fp4_peak_flops > 0)) return pp_gemm_time_s(g, batch, m, n, k);
    double asym = g->nvfp4_gemm_efficiency > 0   ? g->nvfp4_gemm_efficiency
                  : g->mxfp8_gemm_efficiency > 0 ? g->mxfp8_gemm_efficiency
                                                 : g->fp8_gemm_efficiency;
    return lowp_time(g, g->fp4_peak_flops, asym, PP_NVFP4_BYTES, batch, m, n,
                     k);
}

double pp_gemm_grouped_time_s(const pp_gpu_profile *g, pp_gemm_ops ops,
                              double groups, double m, double n, double k) {
    double t =
        ops == PP_GEMM_OPS_NVFP4   ? pp_gemm_time_nvfp4_s(g, groups, m, n, k)
        : ops == PP_GEMM_OPS_MXFP8 ? pp_gemm_time_mxfp8_s(g, groups, m, n, k)
        : ops == PP_GEMM_OPS_FP8 ? pp_gemm_time_prec_s(g, true, groups, m, n, k)
                                 : pp_gemm_time_s(g, groups, m, n, k);
    return t + (groups - 1.0) * g->launch_s;
}

static double lowp_time(const pp_gpu_profile *g, double peak, double asym,
                        double ob, double batch, double m, double n, double k) {
    /* The FP8 asymptote and its own k_half, with no tile or wave
     * factor: the measured cuBLASLt FP8 kernels on H100 (calibrate/
     * examples/h100/gemm-gpt3-tp8-fp8.json) run the qkv GEMM, whose
     * 288-tile grid leaves a 16-bit wave 27% idle, as fast as fc1
     * (1,400 and 1,383 TFLOP/s): they do not quantize by waves
     * (persistent, stream-K-like scheduling).  Operands of ob bytes
     * (FP8's 1), output 2.  NVFP4 takes the same form and k_half: no
     * NVFP4 GEMM was measured here. */
    double eff = asym * k / (k + g->fp8_k_half);
    /* Blackwell's FP8 GEMMs do quantize: OpenXLA's sm_100 table
     * (b200.yaml) runs a 2048^3 one at 0.44 of the rate of four 4096^3. */
    if (g->fp8_waves && m > 0 && n > 0 && batch > 0)
        eff *= tile_factor(g, batch, m, n);
    double flops = 2.0 * batch * m * n * k;
    double bytes = batch * (ob * (m * k + k * n) + 2.0 * m * n);
    double tc = flops / pp_profile_tensor_rate(g, peak, eff);
    double tm = bytes / (g->hbm_Bps * g->mem_efficiency);
    double fw = loop_efficiency(g);
    return (tc > tm ? tc : tm) / fw + g->launch_s;
}

double pp_memop_time_s(const pp_gpu_profile *g, double bytes) {
    return roofline(g, 0, 1, bytes);
}

/* Not a roofline: the rows' bytes go through atomic adds on the targets
 * (k of them per target row for an MoE layer's top-k), which run far
 * below HBM's rate and about as fast on H100's HBM3 as on H200's HBM3e
 * (h100.yaml: the measurement). */
double pp_scatter_add_time_s(const pp_gpu_profile *g, double bytes) {
    /* A profile built by hand without the figure: at HBM's rate, as a
     * fused kernel, rather than dividing by zero. */
    double bw = g->scatter_add_Bps > 0 ? g->scatter_add_Bps
                                       : g->hbm_Bps * g->mem_efficiency;
    double fw = loop_efficiency(g);
    return bytes / bw / fw + g->launch_s;
}
