/*
 * tests/test_cluster.c: loading clusters (sim/topo/cluster.c, node.c, fabric.c,
 * graph.c): every shipped cluster, the figures the acceptance depends on
 * (Hyperconnect's 160 GPUs on 8 rail leaves, TITAN's 1,040 GPUs, the
 * 7-device lane budget), overrides, the invariants of the arrays the
 * simulator walks (link pairs, CSR, names), determinism, and the broken
 * cluster corpus (tests/bad_clusters/) through the library, message for
 * message.
 *
 * Run with PODPLAN_DATA_DIR=<source root> (CTest sets it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podplan/sim.h"

static const char *const shipped[] = {"hyperconnect-superpod",
                                      "titan",
                                      "selene-like",
                                      "dgx-h100-ndr",
                                      "dgx-h200-ndr",
                                      "dgx-h800-2048",
                                      "dgx-b200-ndr",
                                      "gb200-nvl72",
                                      "dgx-b300-xdr",
                                      "gb300-nvl72",
                                      "ethernet-10g",
                                      "big-basin-50g",
                                      "etri-ps",
                                      "pcie-only",
                                      "pcie-7dev",
                                      "fat-tree-16k",
                                      "explicit-example",
                                      NULL};

static pp_catalog *cat; /* shared by every test: loaded once */

static pp_cluster *load_sets(const char *name, const char *const *sets,
                             size_t n) {
    pp_cluster *c = NULL;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_cluster_load(name, sets, n, cat, &c, &e);
    if (rc != 0) fail_msg("pp_cluster_load(%s): %s", name, e.msg);
    assert_non_null(c);
    return c;
}

static pp_cluster *load(const char *name) {
    return load_sets(name, NULL, 0);
}

static int32_t find(const pp_cluster *c, const char *name) {
    int32_t id = pp_cluster_find(c, name);
    if (id < 0) fail_msg("no device \"%s\"", name);
    return id;
}

/* Physical links of a kind leaving devices of kind `from` (each cable is
 * counted once, from its first direction). */
static int count_cables(const pp_cluster *c, pp_link_kind kind,
                        pp_dev_kind from) {
    size_t nd, nl;
    const pp_device *d = pp_cluster_devices(c, &nd);
    const pp_link *l = pp_cluster_links(c, &nl);
    int n = 0;
    for (size_t i = 0; i < nl; i++)
        if (l[i].kind == kind && d[l[i].src].kind == from) n++;
    return n;
}

static int count_devs(const pp_cluster *c, pp_dev_kind kind) {
    size_t nd;
    const pp_device *d = pp_cluster_devices(c, &nd);
    int n = 0;
    for (size_t i = 0; i < nd; i++) n += d[i].kind == kind;
    return n;
}

static int group_setup(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    if (pp_catalog_load(NULL, &cat, &e) != 0) {
        fprintf(stderr, "catalogue: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    pp_catalog_free(cat);
    return 0;
}

/* ------------------------------------------------------------------------
 * Shipped clusters and their invariants.
 * ---------------------------------------------------------------------- */

/* Every cable is two directed links that point at each other, with the
 * same bandwidth and kind; the CSR lists exactly each device's outgoing
 * links in id order; every name resolves to its device. */
static void check_invariants(const pp_cluster *c) {
    size_t nd, nl;
    const pp_device *d = pp_cluster_devices(c, &nd);
    const pp_link *l = pp_cluster_links(c, &nl);
    assert_int_equal(nl % 2, 0);
    for (size_t i = 0; i < nl; i++) {
        const pp_link *r = &l[l[i].reverse];
        assert_true(l[i].reverse >= 0 && (size_t)l[i].reverse < nl);
        assert_int_equal(r->reverse, (int32_t)i);
        assert_int_equal(r->src, l[i].dst);
        assert_int_equal(r->dst, l[i].src);
        assert_true(r->bw_Bps == l[i].bw_Bps);
        assert_int_equal(r->kind, l[i].kind);
        assert_true(l[i].bw_Bps > 0);
        assert_true(l[i].lat_s >= 0);
        assert_true(l[i].src != l[i].dst);
    }
    size_t seen = 0;
    for (size_t v = 0; v < nd; v++) {
        size_t n;
        const int32_t *out = pp_cluster_out(c, (int32_t)v, &n);
        for (size_t k = 0; k < n; k++) {
            assert_int_equal(l[out[k]].src, (int32_t)v);
            if (k > 0) assert_true(out[k] > out[k - 1]);
        }
        seen += n;
        assert_int_equal(pp_cluster_find(c, d[v].name), (int32_t)v);
    }
    assert_int_equal(seen, nl);
    assert_int_equal(pp_cluster_find(c, "no-such-device"), -1);
    assert_int_equal(pp_cluster_find(c, "n999999.gpu0"), -1);

    const pp_cluster_info *in = pp_cluster_info_get(c);
    assert_int_equal(in->gpus, in->nodes * in->gpus_per_node);
    assert_int_equal(in->hcas, in->nodes * in->hcas_per_node);
    assert_int_equal(count_devs(c, PP_DEV_GPU), in->gpus);
    assert_int_equal(count_devs(c, PP_DEV_HCA), in->hcas);
    for (int k = PP_DEV_LEAF; k <= PP_DEV_CORE; k++)
        assert_int_equal(in->switches[k], count_devs(c, (pp_dev_kind)k));
    for (int32_t n = 0; n < in->nodes; n++)
        for (int32_t g = 0; g < in->gpus_per_node; g++) {
            int32_t id = pp_cluster_gpu(c, n, g);
            assert_true(id >= 0);
            assert_int_equal(d[id].kind, PP_DEV_GPU);
            assert_int_equal(d[id].node, n);
            assert_int_equal(d[id].local, g);
            int32_t h = pp_cluster_gpu_hca(c, id);
            if (in->hcas_per_node == 0) {
                assert_int_equal(h, -1);
            } else {
                assert_int_equal(d[h].kind, PP_DEV_HCA);
                assert_int_equal(d[h].node, n);
            }
        }
    assert_int_equal(pp_cluster_gpu(c, in->nodes, 0), -1);
    assert_int_equal(pp_cluster_hca(c, 0, in->hcas_per_node), -1);
}

static void test_shipped_load(void **state) {
    (void)state;
    for (size_t i = 0; shipped[i]; i++) {
        pp_cluster *c = load(shipped[i]);
        check_invariants(c);
        assert_string_equal(pp_cluster_info_get(c)->name, shipped[i]);
        assert_ptr_equal(pp_cluster_catalog(c), cat);
        pp_cluster_free(c);
    }
}

/* Every cluster file in topologies/ is in the list above. */
static void test_shipped_list_complete(void **state) {
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/topologies",
             getenv("PODPLAN_DATA_DIR") ? getenv("PODPLAN_DATA_DIR")
                                        : PODPLAN_SOURCE_DIR);
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0 ||
            strcmp(de->d_name, "hardware.yaml") == 0)
            continue;
        bool listed = false;
        for (size_t i = 0; shipped[i]; i++)
            listed |= strlen(shipped[i]) == len - 5 &&
                      strncmp(shipped[i], de->d_name, len - 5) == 0;
        if (!listed)
            fail_msg("topologies/%s is not in the shipped list", de->d_name);
    }
    closedir(dp);
}

/* The catalogue is loaded and owned by the cluster when none is given. */
static void test_own_catalog(void **state) {
    (void)state;
    pp_cluster *c = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_cluster_load("etri-ps", NULL, 0, NULL, &c, &e), 0);
    assert_non_null(pp_cluster_catalog(c));
    assert_ptr_not_equal(pp_cluster_catalog(c), cat);
    pp_cluster_free(c);
    pp_cluster_free(NULL);
}

static void test_not_found(void **state) {
    (void)state;
    static char sentinel;
    pp_cluster *c = (pp_cluster *)&sentinel; /* must stay untouched */
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_cluster_load("no-such-cluster", NULL, 0, cat, &c, &e),
                     PP_ENOENT);
    assert_ptr_equal(c, (pp_cluster *)&sentinel);
    assert_non_null(strstr(e.msg, "no-such-cluster"));
}

/* ------------------------------------------------------------------------
 * Hyperconnect: the acceptance figures.
 * ---------------------------------------------------------------------- */
static void test_hyperconnect(void **state) {
    (void)state;
    pp_cluster *c = load("hyperconnect-superpod");
    const pp_cluster_info *in = pp_cluster_info_get(c);
    size_t nl;
    const pp_device *d = pp_cluster_devices(c, NULL);
    const pp_link *l = pp_cluster_links(c, &nl);

    assert_int_equal(in->nodes, 20);
    assert_int_equal(in->gpus, 160);
    assert_int_equal(in->hcas, 160);
    assert_int_equal(in->switches[PP_DEV_LEAF], 8);
    assert_int_equal(in->switches[PP_DEV_SPINE], 4);
    assert_int_equal(in->switches[PP_DEV_CORE], 0);
    assert_true(in->nic_Bps == 25e9); /* HDR 200Gb/s */
    assert_true(in->stated_oversubscription == 1);
    assert_string_equal(in->gpu->name, "a100-sxm4-80gb");

    /* Rail-optimised: HCA i of every node is cabled to leaf i, and only. */
    for (int32_t n = 0; n < 20; n++)
        for (int32_t h = 0; h < 8; h++) {
            int32_t hca = pp_cluster_hca(c, n, h);
            size_t k;
            const int32_t *out = pp_cluster_out(c, hca, &k);
            int host = 0;
            for (size_t j = 0; j < k; j++) {
                if (l[out[j]].kind != PP_LINK_HOST) continue;
                host++;
                const pp_device *leaf = &d[l[out[j]].dst];
                assert_int_equal(leaf->kind, PP_DEV_LEAF);
                assert_int_equal(leaf->local, h);
                assert_int_equal(leaf->rail, h);
                char want[16];
                snprintf(want, sizeof want, "leaf%d", h);
                assert_string_equal(leaf->name, want);
            }
            assert_int_equal(host, 1);
            assert_int_equal(d[hca].rail, h);
        }
    /* Every leaf: 20 down, 20 up, 5 to each spine. */
    for (int32_t i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof name, "leaf%d", i);
        size_t k;
        const int32_t *out = pp_cluster_out(c, find(c, name), &k);
        int down = 0, per_spine[4] = {0};
        for (size_t j = 0; j < k; j++) {
            const pp_device *to = &d[l[out[j]].dst];
            if (to->kind == PP_DEV_HCA)
                down++;
            else if (to->kind == PP_DEV_SPINE)
                per_spine[to->local]++;
        }
        assert_int_equal(down, 20);
        for (int s = 0; s < 4; s++) assert_int_equal(per_spine[s], 5);
    }
    /* GPU i's nearest HCA is HCA i (same PCIe switch). */
    for (int32_t g = 0; g < 8; g++)
        assert_int_equal(pp_cluster_gpu_hca(c, pp_cluster_gpu(c, 7, g)),
                         pp_cluster_hca(c, 7, g));
    /* Latency into a switch includes the switch's: HDR 600ns + QM8700
     * 130ns; out of it, the cable's alone. */
    int32_t hca = pp_cluster_hca(c, 0, 0);
    size_t k;
    const int32_t *out = pp_cluster_out(c, hca, &k);
    for (size_t j = 0; j < k; j++)
        if (l[out[j]].kind == PP_LINK_HOST) {
            assert_true(fabs(l[out[j]].lat_s - 730e-9) < 1e-15);
            assert_true(fabs(l[l[out[j]].reverse].lat_s - 600e-9) < 1e-15);
        }
    /* The template: 8 GPUs on one NVSwitch, 4 PCIe switches x16 gen4. */
    assert_int_equal(count_devs(c, PP_DEV_NVSWITCH), 20);
    assert_int_equal(count_devs(c, PP_DEV_PCIE_SWITCH), 80);
    assert_int_equal(count_cables(c, PP_LINK_NVLINK, PP_DEV_GPU), 160);
    assert_int_equal(count_cables(c, PP_LINK_SOCKET, PP_DEV_CPU), 40);
    pp_cluster_free(c);
}

static void test_set_nics(void **state) {
    (void)state;
    const char *sets[] = {"node.nics.count=4"};
    pp_cluster *c = load_sets("hyperconnect-superpod", sets, 1);
    const pp_cluster_info *in = pp_cluster_info_get(c);
    assert_int_equal(in->hcas, 80);
    assert_int_equal(in->hcas_per_node, 4);
    assert_int_equal(in->switches[PP_DEV_LEAF], 4); /* one per rail */
    /* HCA i sits next to GPU 2i: GPUs 2i and 2i+1 share it. */
    for (int32_t g = 0; g < 8; g++)
        assert_int_equal(pp_cluster_gpu_hca(c, pp_cluster_gpu(c, 3, g)),
                         pp_cluster_hca(c, 3, g / 2));
    check_invariants(c);
    pp_cluster_free(c);
}

static void test_set_oversubscription(void **state) {
    (void)state;
    pp_cluster *c = load("hyperconnect-superpod");
    int up = count_cables(c, PP_LINK_FABRIC, PP_DEV_LEAF);
    assert_int_equal(up, 160);
    pp_cluster_free(c);

    const char *sets[] = {"fabric.oversubscription=2:1"};
    c = load_sets("hyperconnect-superpod", sets, 1);
    assert_int_equal(count_cables(c, PP_LINK_FABRIC, PP_DEV_LEAF), up / 2);
    assert_int_equal(count_cables(c, PP_LINK_HOST, PP_DEV_HCA), 160);
    assert_true(pp_cluster_info_get(c)->stated_oversubscription == 2);
    assert_int_equal(pp_cluster_info_get(c)->switches[PP_DEV_SPINE], 2);
    check_invariants(c);
    pp_cluster_free(c);
}

/* An override's bad value is located at "--set". */
static void test_set_errors(void **state) {
    (void)state;
    pp_cluster *c = NULL;
    pp_error e = PP_ERROR_INIT;
    const char *sets[] = {"node.count=20", "node.nics.count=many"};
    assert_int_equal(
        pp_cluster_load("hyperconnect-superpod", sets, 2, cat, &c, &e),
        PP_EINPUT);
    assert_null(c);
    assert_string_equal(e.msg, "--set:2:17: node.nics.count: expected an "
                               "integer in 0..256, got \"many\"");
    pp_error_clear(&e);
    const char *bad[] = {"node.count"};
    assert_int_equal(
        pp_cluster_load("hyperconnect-superpod", bad, 1, cat, &c, &e),
        PP_EUSAGE);
    assert_int_equal(pp_exit_code(PP_EUSAGE), 2);
}

/* ------------------------------------------------------------------------
 * The other shipped clusters.
 * ---------------------------------------------------------------------- */
/* GB200 NVL72: podplan's node is the NVLink domain, the whole rack of 72
 * GPUs on one logical NVSwitch, one 400Gb/s HCA per GPU; 8 racks on a
 * rail-optimised leaf-spine (72 rails of 8). */
static void test_gb200_nvl72(void **state) {
    (void)state;
    pp_cluster *c = load("gb200-nvl72");
    const pp_cluster_info *in = pp_cluster_info_get(c);
    assert_int_equal(in->nodes, 8);
    assert_int_equal(in->gpus, 576);
    assert_int_equal(in->hcas, 576);
    assert_int_equal(in->gpus_per_node, 72);
    assert_int_equal(in->switches[PP_DEV_LEAF], 72);
    assert_int_equal(count_cables(c, PP_LINK_HOST, PP_DEV_HCA), 576);
    pp_cluster_free(c);
}

/* Blackwell Ultra: DGX B300 nodes and GB300 NVL72 racks, one 800Gb/s
 * (XDR) HCA per GPU on 144-port Quantum-X800 switches: 8 rail leaves and
 * 2 spines for 32 DGX B300, 72 leaves for 8 racks. */
static void test_blackwell_ultra(void **state) {
    (void)state;
    pp_cluster *c = load("dgx-b300-xdr");
    const pp_cluster_info *in = pp_cluster_info_get(c);
    assert_int_equal(in->gpus, 256);
    assert_int_equal(in->gpus_per_node, 8);
    assert_int_equal(in->switches[PP_DEV_LEAF], 8);
    assert_int_equal(in->switches[PP_DEV_SPINE], 2);
    assert_string_equal(in->gpu->name, "b300");
    pp_cluster_free(c);
    c = load("gb300-nvl72");
    in = pp_cluster_info_get(c);
    assert_int_equal(in->gpus, 576);
    assert_int_equal(in->hcas, 576);
    assert_int_equal(in->gpus_per_node, 72);
    assert_int_equal(in->switches[PP_DEV_LEAF], 72);
    assert_string_equal(in->gpu->name, "gb300");
    pp_cluster_free(c);
}

static void test_titan(void **state) {
    (void)state;
    pp_cluster *c = load("titan");
    const pp_cluster_info *in = pp_cluster_info_get(c);
    assert_int_equal(in->nodes, 130);
    assert_int_equal(in->gpus, 1040);
    assert_int_equal(in->hcas, 1040);
    assert_int_equal(in->switches[PP_DEV_LEAF], 56);
    assert_int_equal(in->switches[PP_DEV_SPINE], 26);
    assert_int_equal(count_cables(c, PP_LINK_HOST, PP_DEV_HCA), 1040);
    assert_int_equal(count_cables(c, PP_LINK_FABRIC, PP_DEV_LEAF), 1040);
    /* No switch has more cables than the QM8700's 40 ports. */
    size_t nd;
    const pp_device *d = pp_cluster_devices(c, &nd);
    for (size_t v = 0; v < nd; v++)
        if (d[v].kind == PP_DEV_LEAF || d[v].kind == PP_DEV_SPINE) {
            size_t k;
            pp_cluster_out(c, (int32_t)v, &k);
            assert_true(k <= 40);
        }
    pp_cluster_free(c);
}

/* Two sockets of 48 lanes, 7 x16 devices: the socket with four gives two
 * of them x8 (GPU 2 and HCA 0), the other socket's three keep x16. */
static void test_pcie_7dev(void **state) {
    (void)state;
    pp_cluster *c = load("pcie-7dev");
    const pp_device *d = pp_cluster_devices(c, NULL);
    const pp_link *l = pp_cluster_links(c, NULL);
    for (int s = 0; s < 2; s++) {
        char name[16];
        snprintf(name, sizeof name, "n0.cpu%d", s);
        size_t k;
        const int32_t *out = pp_cluster_out(c, find(c, name), &k);
        int devices = 0, x8 = 0, lanes = 0;
        for (size_t j = 0; j < k; j++) {
            const pp_link *x = &l[out[j]];
            if (x->kind != PP_LINK_PCIE) continue;
            devices++;
            lanes += x->lanes;
            if (x->lanes == 8) {
                x8++;
                assert_true(fabs(x->bw_Bps - 8 * 15.754e9 / 16) < 1e3);
                assert_true(strcmp(d[x->dst].name, "n0.gpu2") == 0 ||
                            strcmp(d[x->dst].name, "n0.hca0") == 0);
            } else {
                assert_int_equal(x->lanes, 16);
            }
        }
        assert_int_equal(devices, s == 0 ? 4 : 3);
        assert_int_equal(x8, s == 0 ? 2 : 0);
        assert_true(lanes <= 48);
    }
    pp_cluster_free(c);
}

static void test_fat_tree_16k(void **state) {
    (void)state;
    pp_cluster *c = load("fat-tree-16k");
    const pp_cluster_info *in = pp_cluster_info_get(c);
    assert_int_equal(in->gpus, 16384);
    assert_int_equal(in->switches[PP_DEV_LEAF], 512);
    assert_int_equal(in->switches[PP_DEV_SPINE], 512);
    assert_int_equal(in->switches[PP_DEV_CORE], 256);
    const pp_device *d = pp_cluster_devices(c, NULL);
    /* Pods: 16 of 128 nodes; a node's devices carry its pod. */
    assert_int_equal(d[pp_cluster_gpu(c, 0, 0)].pod, 0);
    assert_int_equal(d[pp_cluster_hca(c, 127, 7)].pod, 0);
    assert_int_equal(d[pp_cluster_hca(c, 128, 0)].pod, 1);
    assert_int_equal(d[pp_cluster_gpu(c, 2047, 7)].pod, 15);
    assert_int_equal(d[find(c, "core0")].pod, -1);
    /* Every port count within the QM9700's 64. */
    size_t nd;
    pp_cluster_devices(c, &nd);
    for (size_t v = 0; v < nd; v++)
        if (d[v].kind >= PP_DEV_LEAF) {
            size_t k;
            pp_cluster_out(c, (int32_t)v, &k);
            assert_int_equal(k, 64);
        }
    pp_cluster_free(c);
}

static void test_small_clusters(void **state) {
    (void)state;
    pp_cluster *c = load("ethernet-10g");
    const pp_cluster_info *in = pp_cluster_info_get(c);
    assert_int_equal(in->gpus, 24);
    assert_int_equal(in->hcas, 3);
    assert_int_equal(in->switches[PP_DEV_LEAF], 1);
    assert_true(in->nic_Bps == 1.25e9);
    /* Hybrid cube-mesh: 12 NVLinks per node, 4 per GPU. */
    assert_int_equal(count_cables(c, PP_LINK_NVLINK, PP_DEV_GPU), 2 * 3 * 16);
    /* One NIC for 8 GPUs: every GPU's nearest HCA is it. */
    for (int32_t g = 0; g < 8; g++)
        assert_int_equal(pp_cluster_gpu_hca(c, pp_cluster_gpu(c, 2, g)),
                         pp_cluster_hca(c, 2, 0));
    pp_cluster_free(c);

    c = load("big-basin-50g");
    /* A 50GbE NIC on a 100GbE switch runs at 50Gb/s. */
    const pp_link *l = pp_cluster_links(c, NULL);
    size_t k;
    const int32_t *out = pp_cluster_out(c, pp_cluster_hca(c, 31, 0), &k);
    for (size_t j = 0; j < k; j++)
        if (l[out[j]].kind == PP_LINK_HOST)
            assert_true(l[out[j]].bw_Bps == 6.25e9);
    pp_cluster_free(c);

    c = load("etri-ps");
    assert_int_equal(pp_cluster_info_get(c)->nodes, 17);
    pp_cluster_free(c);

    c = load("pcie-only");
    in = pp_cluster_info_get(c);
    assert_int_equal(in->hcas, 0);
    assert_null(in->nic);
    assert_int_equal(count_cables(c, PP_LINK_NVLINK, PP_DEV_GPU), 0);
    pp_cluster_free(c);
}

static void test_explicit(void **state) {
    (void)state;
    pp_cluster *c = load("explicit-example");
    const pp_device *d = pp_cluster_devices(c, NULL);
    const pp_link *l = pp_cluster_links(c, NULL);
    int32_t a = find(c, "leaf-a"), s = find(c, "spine0");
    assert_int_equal(d[a].kind, PP_DEV_LEAF);
    assert_int_equal(d[a].rail, 0);
    assert_int_equal(d[s].kind, PP_DEV_SPINE);
    size_t k;
    const int32_t *out = pp_cluster_out(c, a, &k);
    int to_spine = 0, to_leaf = 0, hosts = 0;
    for (size_t j = 0; j < k; j++) {
        if (l[out[j]].dst == s)
            to_spine++;
        else if (d[l[out[j]].dst].kind == PP_DEV_LEAF) {
            to_leaf++;
            /* latency given: 1us, plus leaf-b's 130ns */
            assert_true(fabs(l[out[j]].lat_s - 1.13e-6) < 1e-15);
        } else if (d[l[out[j]].dst].kind == PP_DEV_HCA)
            hosts++;
    }
    assert_int_equal(to_spine, 2);
    assert_int_equal(to_leaf, 1);
    assert_int_equal(hosts, 4);
    pp_cluster_free(c);
}

/* Loading twice gives identical arrays. */
static void test_deterministic(void **state) {
    (void)state;
    const char *names[] = {"selene-like", "explicit-example", "pcie-7dev"};
    for (size_t i = 0; i < 3; i++) {
        pp_cluster *a = load(names[i]), *b = load(names[i]);
        size_t nda, ndb, nla, nlb;
        const pp_device *da = pp_cluster_devices(a, &nda);
        const pp_device *db = pp_cluster_devices(b, &ndb);
        const pp_link *la = pp_cluster_links(a, &nla);
        const pp_link *lb = pp_cluster_links(b, &nlb);
        assert_int_equal(nda, ndb);
        assert_int_equal(nla, nlb);
        for (size_t v = 0; v < nda; v++) {
            assert_int_equal(da[v].kind, db[v].kind);
            assert_int_equal(da[v].node, db[v].node);
            assert_int_equal(da[v].local, db[v].local);
            assert_int_equal(da[v].pod, db[v].pod);
            assert_int_equal(da[v].rail, db[v].rail);
            assert_string_equal(da[v].name, db[v].name);
        }
        for (size_t j = 0; j < nla; j++) {
            assert_int_equal(la[j].src, lb[j].src);
            assert_int_equal(la[j].dst, lb[j].dst);
            assert_int_equal(la[j].reverse, lb[j].reverse);
            assert_int_equal(la[j].kind, lb[j].kind);
            assert_int_equal(la[j].lanes, lb[j].lanes);
            assert_true(la[j].bw_Bps == lb[j].bw_Bps);
            assert_true(la[j].lat_s == lb[j].lat_s);
        }
        pp_cluster_free(a);
        pp_cluster_free(b);
    }
}

/* ------------------------------------------------------------------------
 * The broken-cluster corpus, through the library: the message must be
 * "<file>:<expect>" exactly as the CLI test (test_bad_clusters) wants it
 * on stderr, with exit code 2.  "--set X" words of the run line are
 * applied as overrides.
 * ---------------------------------------------------------------------- */
static void test_bad_clusters(void **state) {
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/bad_clusters", PODPLAN_SOURCE_DIR);
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    struct dirent *de;
    int cases = 0, failed = 0;
    while ((de = readdir(dp)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0) continue;
        char path[8192], line[1024], expect[1024] = "", run[1024] = "";
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        while (fgets(line, sizeof line, fp) && line[0] == '#') {
            line[strcspn(line, "\n")] = '\0';
            if (strncmp(line, "# expect: ", 10) == 0)
                snprintf(expect, sizeof expect, "%s", line + 10);
            else if (strncmp(line, "# run: ", 7) == 0)
                snprintf(run, sizeof run, "%s", line + 7);
        }
        fclose(fp);
        if (!expect[0]) fail_msg("%s: no '# expect:' line", de->d_name);
        const char *sets[8];
        size_t n_sets = 0;
        char *save = NULL;
        for (char *w = strtok_r(run, " ", &save); w;
             w = strtok_r(NULL, " ", &save))
            if (strcmp(w, "--set") == 0 && n_sets < 8)
                sets[n_sets++] = strtok_r(NULL, " ", &save);
        pp_cluster *c = NULL;
        pp_error e = PP_ERROR_INIT;
        int rc = pp_cluster_load(path, sets, n_sets, cat, &c, &e);
        char want[2048];
        snprintf(want, sizeof want, "%s:%s", de->d_name, expect);
        cases++;
        if (rc == 0 || pp_exit_code(rc) != 2 || !strstr(e.msg, want)) {
            print_error("%s\n  got  (%d): %s\n  want: %s\n", de->d_name, rc,
                        e.msg, want);
            failed++;
        }
        if (c) fail_msg("%s: cluster returned with an error", de->d_name);
    }
    closedir(dp);
    assert_true(cases >= 20);
    assert_int_equal(failed, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_load),
        cmocka_unit_test(test_shipped_list_complete),
        cmocka_unit_test(test_own_catalog),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_hyperconnect),
        cmocka_unit_test(test_set_nics),
        cmocka_unit_test(test_set_oversubscription),
        cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_gb200_nvl72),
        cmocka_unit_test(test_blackwell_ultra),
        cmocka_unit_test(test_titan),
        cmocka_unit_test(test_pcie_7dev),
        cmocka_unit_test(test_fat_tree_16k),
        cmocka_unit_test(test_small_clusters),
        cmocka_unit_test(test_explicit),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_bad_clusters),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
