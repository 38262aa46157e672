/*
 * whatif/failures.c: what failures cost a training run.
 *
 * Rates.  The defaults come from the one large run that published its
 * interruptions by component: Llama 3 405B (Dubey et al., "The Llama 3
 * Herd of Models", 2024, sec. 3.3.4 and Table 5): 419 unexpected
 * interruptions in a 54-day snapshot on 16,384 H100 GPUs (2,048 servers of
 * 8, one 400Gb/s NIC per GPU).  We group Table 5's counts by the component
 * a spare would replace (the table's percentages do not all match its
 * counts; we use the counts):
 *
 *   gpu      faulty GPU 148, SRAM 19, GPU system processor 17, silent
 *            data corruption 6, thermal interface/sensor 6      = 196
 *   hbm      GPU HBM3 memory                                     =  72
 *   switch   network switch/cable                                =  35
 *   nic      NIC                                                  =   7
 *   host     host maintenance 32, SSD 3, power supply 3, chassis 2,
 *            IO expansion board 2, CPU 2, system memory 2         =  46
 *   software software bug 54, dependency 2, NCCL watchdog 7     =  63
 *                                                          total  = 419
 *
 * each divided by 54 x 24 h and by the count of that component (GPUs,
 * NICs, servers; the switch count is not published, so network failures
 * are per GPU, the fabric growing with it; software per GPU-hour of the
 * job).  That gives the paper's one interruption per ~3.1 h at 16,384
 * GPUs.  Cross-checks, not used in the figures: the OPT-175B paper and
 * logbook (Zhang et al. 2022, 992 A100s) report at least 35 manual
 * restarts and over 100 hosts cycled in about two months; ByteDance's
 * MegaScale (Jiang et al., NSDI 2024) describes automated detection and
 * recovery as routine on its >10,000-GPU jobs.
 *
 * Checkpoints and restarts.  Young (CACM 17(9), 1974): the interval that
 * minimises lost time is sqrt(2 delta M) for checkpoint time delta and
 * MTBF M.  Daly ("A higher order estimate of the optimum checkpoint
 * interval for restart dumps", FGCS 22(3), 2006) refines it (eq. 37) and
 * gives the expected wall time of a job of solve time Ts with restarts of
 * R (eq. 13), exponential failures:
 *   T_w = M e^{R/M} (e^{(tau + delta)/M} - 1) Ts / tau.
 * We use Daly's optimum and his T_w; Young's interval is printed beside.
 *
 * Spares.  Without a spare node, a hardware interruption waits for the
 * node's repair; with s spares it waits only when more than s - 1 other
 * nodes are in repair.  Nodes in repair at a random time are Poisson with
 * mean (node hardware failure rate x nodes x repair time).
 */
#include "whatif_int.h"

#include <string.h>

/* Table 5 of the Llama 3 paper, grouped as above. */
#define L3_HOURS (54.0 * 24.0)
#define L3_GPUS 16384.0
#define L3_NODES 2048.0
#define L3_NICS 16384.0

void pp_whatif_failures_default(pp_whatif_failures *f) {
    memset(f, 0, sizeof *f);
    f->enabled = true;
    f->gpu_per_h = 196 / (L3_HOURS * L3_GPUS);
    f->hbm_per_h = 72 / (L3_HOURS * L3_GPUS);
    f->switch_per_h = 35 / (L3_HOURS * L3_GPUS);
    f->nic_per_h = 7 / (L3_HOURS * L3_NICS);
    f->host_per_h = 46 / (L3_HOURS * L3_NODES);
    f->software_per_h = 63 / (L3_HOURS * L3_GPUS);
    /* Llama 3 sec. 3.3.1: the Tectonic file system sustains 2TB/s. */
    f->checkpoint_bw_Bps = 2e12;
    /* Assumed: one 100Gb/s storage path per node (12.5GB/s); DGX-class
     * servers have two 200Gb/s storage ports, so this is conservative. */
    f->checkpoint_node_Bps = 12.5e9;
    /* 0: the optimizer's figures (pp_optimizer_bytes: kept weights plus
     * optimizer states, 2 + 12 bytes for mixed-precision Adam; the
     * gradients are not saved). */
    f->checkpoint_bytes_per_param = 0;
    /* Assumed: detection, rescheduling and reloading in 10 minutes, the
     * order MegaScale and Llama 3 report for automated recovery. */
    f->restart_s = 600;
    /* Assumed: a failed node back in service in 4 hours (swap a part). */
    f->repair_s = 4 * 3600;
}

double pp_whatif_young(double delta_s, double mtbf_s) {
    return sqrt(2 * delta_s * mtbf_s);
}

double pp_whatif_daly(double delta_s, double mtbf_s) {
    if (!(delta_s < 2 * mtbf_s)) return mtbf_s;
    double x = delta_s / (2 * mtbf_s);
    return sqrt(2 * delta_s * mtbf_s) * (1 + sqrt(x) / 3 + x / 9) - delta_s;
}

double pp_whatif_expected_time(double ts_s, double tau_s, double delta_s,
                               double r_s, double mtbf_s) {
    if (!(mtbf_s > 0) || !isfinite(mtbf_s)) return ts_s;
    double M = mtbf_s;
    return M * exp(r_s / M) * expm1((tau_s + delta_s) / M) * ts_s / tau_s;
}

/* P(Poisson(mu) <= k), k >= 0. */
static double poisson_cdf(double mu, int64_t k) {
    double term = exp(-mu), sum = term;
    for (int64_t i = 1; i <= k && term > 0; i++) {
        term *= mu / (double)i;
        sum += term;
    }
    return sum > 1 ? 1 : sum;
}

void pp_whatif_goodput_compute(const pp_whatif_failures *f, double ideal_s,
                               double nodes, double gpus_per_node,
                               double hcas_per_node, double switches,
                               double params, double spares,
                               pp_whatif_goodput *out) {
    (void)switches; /* network failures scale with GPUs: see the top */
    memset(out, 0, sizeof *out);
    out->ideal_s = ideal_s;
    out->expected_s = ideal_s;
    out->goodput = 1;
    double gpus = nodes * gpus_per_node;
    const pp_optimizer_bytes *ob = pp_optimizer_bytes_get(PP_OPT_ADAM_MIXED);
    double bpp = f->checkpoint_bytes_per_param > 0
                     ? f->checkpoint_bytes_per_param
                     : ob->weights + ob->states;
    out->checkpoint_bytes = params * bpp;
    double bw = fmin(f->checkpoint_bw_Bps, nodes * f->checkpoint_node_Bps);
    out->checkpoint_s = bw > 0 ? out->checkpoint_bytes / bw : 0;
    if (!f->enabled) {
        out->mtbf_s = INFINITY;
        out->interval_s = out->interval_young_s = INFINITY;
        return;
    }
    double node_hw_per_h =
        gpus_per_node * (f->gpu_per_h + f->hbm_per_h) +
        hcas_per_node * f->nic_per_h + f->host_per_h;
    double hw_per_h = nodes * node_hw_per_h;
    double other_per_h = gpus * (f->switch_per_h + f->software_per_h);
    double per_h = hw_per_h + other_per_h;
    out->mtbf_s = per_h > 0 ? 3600.0 / per_h : INFINITY;
    /* A spare is free when at most spares - 1 other nodes are in repair. */
    double mu = hw_per_h * f->repair_s / 3600.0;
    int64_t s = (int64_t)spares;
    out->p_no_spare = s <= 0 ? 1.0 : 1.0 - poisson_cdf(mu, s - 1);
    double hw_frac = per_h > 0 ? hw_per_h / per_h : 0;
    out->restart_s = f->restart_s + out->p_no_spare * hw_frac * f->repair_s;
    if (!isfinite(out->mtbf_s)) {
        out->interval_s = out->interval_young_s = INFINITY;
        return;
    }
    double delta = out->checkpoint_s, M = out->mtbf_s;
    out->interval_young_s = pp_whatif_young(delta, M);
    out->interval_s = pp_whatif_daly(delta, M);
    if (!(out->interval_s > 0)) out->interval_s = out->interval_young_s;
    if (out->interval_s > 0)
        out->expected_s = pp_whatif_expected_time(ideal_s, out->interval_s,
                                                  delta, out->restart_s, M);
    out->goodput = out->expected_s > 0 ? ideal_s / out->expected_s : 0;
    out->failures = out->expected_s / M;
}
