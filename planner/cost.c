/*
 * planner/cost.c: what a cluster costs per GPU-hour, from the catalogue's
 * prices (topologies/hardware.yaml; every price there is an estimate from
 * public list prices, for relative comparisons).
 *
 *   capex = nodes x (server + gpus_per_node x GPU  [unless the server's
 *                    price includes its GPUs] + hcas_per_node x HCA
 *                    [unless it includes its adapters])
 *           + switches x switch + network cables x cable
 *   power = the same sum in watts (server, GPU TDP, HCA, switch)
 *   $/GPU-hour = (capex / (amortization_years x 8,760 h)
 *                 + power / 1000 x PUE x $/kWh) / GPUs of the cluster
 *
 * so a layout on n GPUs for T seconds costs n x T / 3600 x $/GPU-hour: the
 * share of the cluster it occupies, as a cloud would bill it.  Cables are
 * the cluster's host and fabric links; every switch is taken to be the
 * fabric's switch type (exact for the generated fabrics, an approximation
 * for explicit ones that mix types).
 *
 * A server whose price includes GPUs of another type (its catalogue
 * `gpu:`) is charged this cluster's GPUs instead of those.
 *
 * The server and switch type names are not part of the cluster's public
 * summary (pp_cluster_info), so the cluster file is read again for them,
 * with the same overrides.
 */
#include "planner_int.h"

#include <stdlib.h>
#include <string.h>

static void note_missing(pp_plan_prices *p, const char *what) {
    p->complete = false;
    size_t u = strlen(p->missing);
    snprintf(p->missing + u, sizeof p->missing - u, "%s%s", u ? ", " : "",
             what);
}

int pp_plan_prices_get(const pp_cluster *c, double amortization_years,
                       double usd_per_kwh, double pue, pp_plan_prices *out,
                       pp_error *e) {
    const pp_cluster_info *info = pp_cluster_info_get(c);

    if (!(amortization_years > 0))
        return pp_error_set(e, PP_EUSAGE,
                            "--amortization: expected a "
                            "positive number of years, got %g",
                            amortization_years);
    if (!(usd_per_kwh >= 0))
        return pp_error_set(e, PP_EUSAGE,
                            "--usd-per-kwh: expected 0 or "
                            "more, got %g",
                            usd_per_kwh);
    if (!(pue >= 1))
        return pp_error_set(e, PP_EUSAGE, "--pue: expected 1 or more, got %g",
                            pue);
    pp_plan_prices p;
    memset(&p, 0, sizeof p);
    p.complete = true;
    p.amortization_years = amortization_years;
    p.usd_per_kwh = usd_per_kwh;
    p.pue = pue;

    double nodes = info->nodes, gpn = info->gpus_per_node;
    double hpn = info->hcas_per_node;
    const pp_server_spec *srv = info->server;
    const pp_gpu_spec *gpu = info->gpu;
    const pp_link_spec *nic = info->nic;

    double per_node = 0, per_node_w = 0;
    if (srv) {
        per_node += srv->price_usd;
        per_node_w += srv->power_w;
    } else {
        note_missing(&p, "server");
    }
    /* A priced chassis holding GPUs of another type (A100s swapped for
     * H100s in a DGX): its price includes the catalogue's GPUs, so those
     * are taken out and this cluster's put in. */
    const pp_gpu_spec *native =
        srv && srv->includes_gpus && srv->gpu[0] &&
                strcmp(srv->gpu, gpu->name) != 0
            ? pp_catalog_gpu(pp_cluster_catalog(c), srv->gpu)
            : NULL;
    if (native) {
        per_node += gpn * (gpu->price_usd - native->price_usd);
        per_node_w += gpn * (gpu->tdp_w - native->tdp_w);
    }
    if (!srv || !srv->includes_gpus) {
        if (gpu->price_usd <= 0) note_missing(&p, "GPU");
        per_node += gpn * gpu->price_usd;
        per_node_w += gpn * gpu->tdp_w;
    }
    if (hpn > 0 && (!srv || !srv->includes_hcas)) {
        if (!nic || nic->hca_price_usd <= 0) note_missing(&p, "HCA");
        if (nic) {
            per_node += hpn * nic->hca_price_usd;
            per_node_w += hpn * nic->hca_power_w;
        }
    }
    p.capex_usd = nodes * per_node;
    p.power_w = nodes * per_node_w;

    double switches = info->switches[PP_DEV_LEAF] +
                      info->switches[PP_DEV_SPINE] +
                      info->switches[PP_DEV_CORE];
    if (switches > 0) {
        const pp_switch_spec *sw = info->fabric_switch;
        if (sw && sw->price_usd > 0) {
            p.capex_usd += switches * sw->price_usd;
            p.power_w += switches * sw->power_w;
        } else {
            note_missing(&p, "switch");
        }
    }
    size_t n_links;
    const pp_link *links = pp_cluster_links(c, &n_links);
    double cables = 0;
    for (size_t i = 0; i < n_links; i++)
        if (links[i].kind == PP_LINK_HOST || links[i].kind == PP_LINK_FABRIC)
            cables += 0.5; /* one physical cable is two directed links */
    if (cables > 0) {
        const pp_link_spec *cl = info->fabric_link ? info->fabric_link : nic;
        if (cl && cl->cable_price_usd > 0)
            p.capex_usd += cables * cl->cable_price_usd;
        else
            note_missing(&p, "cable");
    }
    double per_hour = p.capex_usd / (amortization_years * 8760.0) +
                      p.power_w / 1000.0 * pue * usd_per_kwh;
    p.usd_per_gpu_hour = info->gpus > 0 ? per_hour / info->gpus : 0;
    *out = p;
    return 0;
}
