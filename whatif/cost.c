/*
 * whatif/cost.c: what a built cluster costs, item by item, and what one
 * trained model costs on it.
 *
 *   capital = (nodes + spares) x (server + GPUs + HCAs, those the server's
 *             price does not include)
 *             + leaf, spine and core switches x the fabric's switch
 *             + host cables + fabric cables x cable (a cable with its two
 *               transceivers: the catalogue's cable_usd)
 *   IT power = the same sum of watts (server, GPU TDP, HCA, switch)
 *   per model, owned:  capital x hours / (amortisation years x 8,766 h)
 *                      + IT power x PUE x hours x $/kWh
 *   per model, rented: $/GPU-hour x the cluster's GPUs x hours
 *
 * The counts are those of `podplan topo stats` (physical links: two
 * directed links each; switches by level).  The whole cluster is charged,
 * not the GPUs a layout uses: a procurement buys the cluster.  A year is
 * 365.25 days (8,766 h).  Every price is the catalogue's
 * (topologies/hardware.yaml, estimates from public list prices) unless
 * the study replaces it.
 */
#include "whatif_int.h"

#include <string.h>

#define HOURS_PER_YEAR 8766.0

static double pick(double over, double cat) {
    return isnan(over) ? cat : over;
}

int pp_whatif_cost_compute(const pp_cluster *c, const pp_whatif_prices *p,
                           const pp_whatif_unit_prices *over, double hours,
                           pp_whatif_cost *out, pp_error *e) {
    const pp_cluster_info *info = pp_cluster_info_get(c);
    pp_whatif_unit_prices none = {NAN, NAN, NAN, NAN, NAN};
    if (!over) over = &none;
    pp_whatif_cost k;
    memset(&k, 0, sizeof k);
    const pp_server_spec *srv = info->server;
    const pp_gpu_spec *gpu = info->gpu;
    const pp_link_spec *nic = info->nic;
    const pp_switch_spec *sw = info->fabric_switch;
    const pp_link_spec *cl = info->fabric_link ? info->fabric_link : nic;

    k.nodes = info->nodes + p->spare_nodes;
    k.gpus = k.nodes * info->gpus_per_node;
    k.hcas = k.nodes * info->hcas_per_node;
    k.switches[PP_WI_LEAF] = info->switches[PP_DEV_LEAF];
    k.switches[PP_WI_SPINE] = info->switches[PP_DEV_SPINE];
    k.switches[PP_WI_CORE] = info->switches[PP_DEV_CORE];
    size_t n_links;
    const pp_link *links = pp_cluster_links(c, &n_links);
    for (size_t i = 0; i < n_links; i++) {
        if (links[i].kind == PP_LINK_HOST) k.cables[PP_WI_CABLE_HOST] += 0.5;
        if (links[i].kind == PP_LINK_FABRIC)
            k.cables[PP_WI_CABLE_FABRIC] += 0.5;
    }
    /* Spare nodes hang off the fabric too: one host cable per HCA. */
    k.cables[PP_WI_CABLE_HOST] += p->spare_nodes * info->hcas_per_node;

    double server_w = 0, gpu_w = gpu->tdp_w, hca_w = nic ? nic->hca_power_w : 0;
    k.server_usd = pick(over->server_usd, srv ? srv->price_usd : NAN);
    server_w = srv ? srv->power_w : 0;
    bool gpus_in = srv && srv->includes_gpus && isnan(over->server_usd);
    bool hcas_in = srv && srv->includes_hcas && isnan(over->server_usd);
    k.gpu_usd = pick(over->gpu_usd, gpu->price_usd > 0 ? gpu->price_usd : NAN);
    k.hca_usd = pick(over->hca_usd, nic && nic->hca_price_usd > 0
                                        ? nic->hca_price_usd
                                        : NAN);
    /* A chassis priced with other GPUs inside: take theirs out and count
     * this cluster's separately, so A100 -> H100 in a DGX changes both
     * price and power. */
    if (gpus_in && srv->gpu[0] && strcmp(srv->gpu, gpu->name) != 0) {
        const pp_gpu_spec *native =
            pp_catalog_gpu(pp_cluster_catalog(c), srv->gpu);
        if (native) {
            k.server_usd -= info->gpus_per_node * native->price_usd;
            server_w -= info->gpus_per_node * native->tdp_w;
            gpus_in = false;
            k.gpu_swapped = true;
        }
    }
    if (isnan(k.server_usd))
        return pp_error_set(e, PP_EINPUT,
                            "%s: no server price (node.server names none in "
                            "the catalogue): give prices.servers or a "
                            "bundle's price.server",
                            info->name);
    if (!gpus_in && isnan(k.gpu_usd))
        return pp_error_set(e, PP_EINPUT, "%s: no price for GPU %s",
                            info->name, gpu->name);
    if (!hcas_in && k.hcas > 0 && isnan(k.hca_usd))
        return pp_error_set(e, PP_EINPUT, "%s: no price for the HCAs",
                            info->name);
    double n_sw = k.switches[0] + k.switches[1] + k.switches[2];
    k.switch_usd = pick(over->switch_usd,
                        sw && sw->price_usd > 0 ? sw->price_usd : NAN);
    if (n_sw > 0 && isnan(k.switch_usd))
        return pp_error_set(e, PP_EINPUT, "%s: no price for the switches",
                            info->name);
    double n_cab = k.cables[0] + k.cables[1];
    k.cable_usd = pick(over->cable_usd, cl && cl->cable_price_usd > 0
                                            ? cl->cable_price_usd
                                            : NAN);
    if (n_cab > 0 && isnan(k.cable_usd))
        return pp_error_set(e, PP_EINPUT, "%s: no price for the cables",
                            info->name);

    k.servers_total_usd = k.nodes * k.server_usd;
    k.gpus_total_usd = gpus_in ? 0 : k.gpus * k.gpu_usd;
    k.hcas_total_usd = hcas_in || k.hcas == 0 ? 0 : k.hcas * k.hca_usd;
    k.capex_usd = k.servers_total_usd + k.gpus_total_usd + k.hcas_total_usd;
    for (int l = 0; l < PP_WI_LEVELS; l++) {
        k.switches_total_usd[l] = n_sw > 0 ? k.switches[l] * k.switch_usd : 0;
        k.capex_usd += k.switches_total_usd[l];
    }
    for (int l = 0; l < PP_WI_CABLE_KINDS; l++) {
        k.cables_total_usd[l] = n_cab > 0 ? k.cables[l] * k.cable_usd : 0;
        k.capex_usd += k.cables_total_usd[l];
    }
    k.it_power_w = k.nodes * server_w +
                   (gpus_in ? 0 : k.gpus * gpu_w) +
                   (hcas_in ? 0 : k.hcas * hca_w) +
                   n_sw * (sw ? sw->power_w : 0);
    k.facility_w = k.it_power_w * p->pue;
    if (p->rent_usd_per_gpu_hour > 0) {
        k.rent_usd = p->rent_usd_per_gpu_hour * info->gpus * hours;
        k.total_usd = k.rent_usd;
    } else {
        k.capital_usd =
            k.capex_usd * hours / (p->amortization_years * HOURS_PER_YEAR);
        k.energy_usd = k.facility_w / 1000.0 * hours * p->usd_per_kwh;
        k.total_usd = k.capital_usd + k.energy_usd;
    }
    k.usd_per_gpu_hour =
        hours > 0 && info->gpus > 0 ? k.total_usd / (hours * info->gpus) : 0;
    *out = k;
    return 0;
}

char *pp_whatif_money(double usd, char *buf, size_t len) {
    if (!isfinite(usd)) {
        snprintf(buf, len, "-");
        return buf;
    }
    const char *sign = usd < 0 ? "-" : "";
    double a = fabs(usd);
    if (a >= 9.995e8) {
        snprintf(buf, len, "%s$%.2fB", sign, a / 1e9);
    } else if (a >= 1e7) {
        snprintf(buf, len, "%s$%.2fM", sign, a / 1e6);
    } else {
        /* Whole dollars with thousands separators. */
        long long v = llround(a);
        char digits[32], grouped[48];
        int n = snprintf(digits, sizeof digits, "%lld", v), g = 0;
        for (int i = 0; i < n; i++) {
            if (i > 0 && (n - i) % 3 == 0) grouped[g++] = ',';
            grouped[g++] = digits[i];
        }
        grouped[g] = '\0';
        snprintf(buf, len, "%s$%s", sign, grouped);
    }
    return buf;
}
