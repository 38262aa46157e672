/*
 * sim/hw/catalog.c: the hardware catalogue (topologies/hardware.yaml).
 *
 * The file is read once into plain arrays of specs, one per section, in
 * file order (nothing is sorted, so every lookup and every "did you mean"
 * is deterministic and ties go to the entry written first).  Every map is
 * closed with pp_map_done(), so a misspelt key is an error rather than a
 * silently missing figure, and every error found while reading points at
 * the node it is about: "hw.yaml:13:29: switches.qm8700.port: unknown
 * link "hdrr" (did you mean "hdr"?)".  The schema is documented at the top
 * of topologies/hardware.yaml.
 */
#include <stdlib.h>
#include <string.h>

#include "podplan/hw.h"

struct pp_catalog {
    pp_gpu_spec *gpus;
    size_t n_gpus;
    pp_link_spec *links;
    size_t n_links;
    pp_switch_spec *switches;
    size_t n_switches;
    pp_server_spec *servers;
    size_t n_servers;
};

/* In pp_dtype order, as the keys of `peak`. */
static const char *const dtype_keys[PP_DTYPE__COUNT + 1] = {
    "fp64", "fp64_tc", "fp32", "tf32", "bf16", "fp8", "int8", "fp4", NULL};

/* In pp_link_class order. */
static const char *const class_names[] = {"pcie",     "nvlink", "infiniband",
                                          "ethernet", "cpu",    NULL};

/* Bounds that only catch typos (an extra zero, a price in cents). */
#define PRICE_MAX 1e9 /* US dollars */
#define POWER_MAX 1e6 /* watts: a whole server is ~10kW */
#define YEAR_MIN 1990
#define YEAR_MAX 2100

/* ------------------------------------------------------------------------
 * Small readers.
 * ---------------------------------------------------------------------- */

/* Copies an entry's key into dst after checking it is a usable name: the
 * names end up in dotted paths and on command lines, so no dots, blanks or
 * quotes. */
static int read_name(const pp_node *key, const char *path, char *dst,
                     pp_error *e) {
    const char *s = key->scalar;
    size_t n = strlen(s);
    bool ok = n > 0 && n < PP_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        char ch = s[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
             (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
    }
    if (!ok)
        return pp_error_at(e, PP_EINPUT, key, path,
                           "expected a name of 1 to %d letters, digits, "
                           "'-' or '_'",
                           PP_NAME_MAX - 1);
    memcpy(dst, s, n + 1);
    return 0;
}

/* An optional price in dollars (absent: *out stays 0). */
static int read_usd(pp_node *map, const char *path, const char *key,
                    double *out, bool *given, pp_error *e) {
    int rc = pp_map_number(map, path, key, PP_OPTIONAL, 0, PRICE_MAX, out, e);
    if (rc == 0) *given = true;
    return rc < 0 ? rc : 0;
}

static int read_power(pp_node *map, const char *path, const char *key,
                      int flags, double *out, pp_error *e) {
    int rc = pp_map_number(map, path, key, flags, 0, POWER_MAX, out, e);
    return rc < 0 ? rc : 0;
}

/* `year`: required when a price was given, since a price without its year
 * cannot be compared with another (every price is an estimate of its
 * time). */
static int read_year(pp_node *map, const char *path, bool priced, int *out,
                     pp_error *e) {
    int64_t y;
    char p[256];
    int rc =
        pp_map_int(map, path, "year", PP_OPTIONAL, YEAR_MIN, YEAR_MAX, &y, e);
    if (rc < 0) return rc;
    if (rc == 1) {
        if (priced)
            return pp_error_at(e, PP_EINPUT, map,
                               pp_path(p, sizeof p, path, "year"),
                               "missing (required when a price is given)");
        return 0;
    }
    *out = (int)y;
    return 0;
}

static int read_small_int(pp_node *map, const char *path, const char *key,
                          int64_t min, int64_t max, int *out, pp_error *e) {
    int64_t v;
    int rc = pp_map_int(map, path, key, PP_REQUIRED, min, max, &v, e);
    if (rc < 0) return rc;
    *out = (int)v;
    return 0;
}

/* ------------------------------------------------------------------------
 * Sections.  Each reader fills one spec from the map `m` at `path`.
 * ---------------------------------------------------------------------- */
static int read_gpu(pp_node *m, const char *path, pp_gpu_spec *g, pp_error *e) {
    pp_node *peak, *sub;
    char p[256];
    int rc, n_peak = 0;

    if ((rc = pp_map_node(m, path, "peak", PP_REQUIRED, PP_NODE_MAP, &peak,
                          e)) < 0)
        return rc;
    pp_path(p, sizeof p, path, "peak");
    for (int d = 0; d < PP_DTYPE__COUNT; d++) {
        rc = pp_map_quantity(peak, p, dtype_keys[d], PP_OPTIONAL, PP_Q_FLOPRATE,
                             NULL, false, &g->peak_flops[d], e);
        if (rc < 0) return rc;
        n_peak += rc == 0;
    }
    /* fp16 is two edits from bf16, too far for pp_map_done's "did you
     * mean"; it is the likeliest wrong key, so say where it goes. */
    for (size_t i = 0; i < peak->n; i++)
        if (strcmp(peak->keys[i]->scalar, "fp16") == 0) {
            char kp[256];
            return pp_error_at(e, PP_EINPUT, peak->keys[i],
                               pp_path(kp, sizeof kp, p, "fp16"),
                               "unknown key (the 16-bit rate is bf16, which "
                               "covers fp16)");
        }
    if ((rc = pp_map_done(peak, p, e)) < 0) return rc;
    if (n_peak == 0)
        return pp_error_at(e, PP_EINPUT, peak, p,
                           "expected at least one of fp64, fp64_tc, fp32, "
                           "tf32, bf16, fp8, int8, fp4");

    /* peak.bf16 holds the 16-bit tensor rate either way; launchers must
     * know whether it is bf16's (--bf16) or fp16's only (--fp16). */
    if ((rc = pp_map_bool(m, path, "fp16_only", PP_OPTIONAL, &g->fp16_only,
                          e)) < 0 ||
        (rc = pp_map_bool(m, path, "mxfp8", PP_OPTIONAL, &g->mxfp8, e)) < 0 ||
        (rc = pp_map_bool(m, path, "fp8_any_layout", PP_OPTIONAL,
                          &g->fp8_any_layout, e)) < 0)
        return rc;

    if ((rc = pp_map_quantity(m, path, "hbm", PP_REQUIRED, PP_Q_BYTES, NULL,
                              false, &g->hbm_bytes, e)) < 0 ||
        (rc = pp_map_quantity(m, path, "hbm_bw", PP_REQUIRED, PP_Q_BANDWIDTH,
                              NULL, false, &g->hbm_Bps, e)) < 0)
        return rc;

    /* NVLink is optional: PCIe-only parts have none (nvlink_gen 0). */
    rc = pp_map_node(m, path, "nvlink", PP_OPTIONAL, PP_NODE_MAP, &sub, e);
    if (rc < 0) return rc;
    if (rc == 0) {
        pp_path(p, sizeof p, path, "nvlink");
        if ((rc = read_small_int(sub, p, "gen", 1, 9, &g->nvlink_gen, e)) < 0 ||
            (rc = pp_map_quantity(sub, p, "bw", PP_REQUIRED, PP_Q_BANDWIDTH,
                                  NULL, false, &g->nvlink_Bps, e)) < 0 ||
            (rc = pp_map_done(sub, p, e)) < 0)
            return rc;
    }

    if ((rc = pp_map_node(m, path, "pcie", PP_REQUIRED, PP_NODE_MAP, &sub, e)) <
        0)
        return rc;
    pp_path(p, sizeof p, path, "pcie");
    if ((rc = read_small_int(sub, p, "gen", 1, 9, &g->pcie_gen, e)) < 0 ||
        (rc = read_small_int(sub, p, "lanes", 1, 32, &g->pcie_lanes, e)) < 0 ||
        (rc = pp_map_done(sub, p, e)) < 0)
        return rc;
    if ((rc = pp_map_quantity(m, path, "c2c", PP_OPTIONAL, PP_Q_BANDWIDTH, NULL,
                              false, &g->c2c_Bps, e)) < 0)
        return rc;

    if ((rc = read_small_int(m, path, "sms", 1, 100000, &g->sms, e)) < 0 ||
        (rc = read_power(m, path, "tdp_w", PP_REQUIRED, &g->tdp_w, e)) < 0)
        return rc;

    rc = pp_map_node(m, path, "price", PP_OPTIONAL, PP_NODE_MAP, &sub, e);
    if (rc < 0) return rc;
    if (rc == 0) {
        pp_path(p, sizeof p, path, "price");
        if ((rc = pp_map_number(sub, p, "usd", PP_REQUIRED, 0, PRICE_MAX,
                                &g->price_usd, e)) < 0 ||
            (rc = read_year(sub, p, true, &g->price_year, e)) < 0 ||
            (rc = pp_map_done(sub, p, e)) < 0)
            return rc;
    }
    return pp_map_done(m, path, e);
}

static int read_link(pp_node *m, const char *path, pp_link_spec *l,
                     pp_error *e) {
    int rc, cls = 0;
    bool priced = false;

    if ((rc = pp_map_enum(m, path, "class", PP_REQUIRED, class_names, &cls,
                          e)) < 0)
        return rc;
    l->cls = (pp_link_class)cls;
    /* A zero bandwidth would divide by zero downstream; a zero latency is
     * a legitimate idealisation. */
    if ((rc = pp_map_quantity(m, path, "bw", PP_REQUIRED, PP_Q_BANDWIDTH, NULL,
                              false, &l->bw_Bps, e)) < 0 ||
        (rc = pp_map_quantity(m, path, "latency", PP_REQUIRED, PP_Q_TIME, NULL,
                              true, &l->lat_s, e)) < 0)
        return rc;
    if ((rc = read_usd(m, path, "cable_usd", &l->cable_price_usd, &priced, e)) <
            0 ||
        (rc = read_usd(m, path, "hca_usd", &l->hca_price_usd, &priced, e)) <
            0 ||
        (rc = read_power(m, path, "hca_power_w", PP_OPTIONAL, &l->hca_power_w,
                         e)) < 0 ||
        (rc = read_year(m, path, priced, &l->price_year, e)) < 0)
        return rc;
    return pp_map_done(m, path, e);
}

static int read_switch(const pp_catalog *c, pp_node *m, const char *path,
                       pp_switch_spec *s, pp_error *e) {
    const char *port;
    pp_node *port_node;
    char p[256];
    int rc;
    bool priced = false;

    if ((rc = read_small_int(m, path, "radix", 1, 65536, &s->radix, e)) < 0 ||
        (rc = pp_map_string(m, path, "port", PP_REQUIRED, &port, e)) < 0)
        return rc;
    /* The port must name a link already read (links come before switches
     * whatever the file order), so a cluster can take a switch's port
     * speed from it. */
    port_node = pp_map_get(m, "port");
    pp_path(p, sizeof p, path, "port");
    const pp_link_spec *l = pp_catalog_link(c, port);
    if (!l) {
        const char *near = pp_catalog_suggest(c, PP_CAT_LINK, port);
        if (near)
            return pp_error_at(e, PP_EINPUT, port_node, p,
                               "unknown link \"%s\" (did you mean \"%s\"?)",
                               port, near);
        return pp_error_at(e, PP_EINPUT, port_node, p,
                           "unknown link \"%s\" (not in the catalogue's "
                           "links)",
                           port);
    }
    if (l->cls == PP_LCLASS_PCIE || l->cls == PP_LCLASS_CPU)
        return pp_error_at(e, PP_EINPUT, port_node, p,
                           "link \"%s\" is of class %s; a switch port must "
                           "be infiniband, ethernet or nvlink",
                           port, class_names[l->cls]);
    memcpy(s->port, l->name, sizeof s->port);

    if ((rc = pp_map_quantity(m, path, "latency", PP_REQUIRED, PP_Q_TIME, NULL,
                              true, &s->lat_s, e)) < 0 ||
        (rc = read_usd(m, path, "usd", &s->price_usd, &priced, e)) < 0 ||
        (rc = read_power(m, path, "power_w", PP_OPTIONAL, &s->power_w, e)) <
            0 ||
        (rc = read_year(m, path, priced, &s->price_year, e)) < 0)
        return rc;
    return pp_map_done(m, path, e);
}

static int read_server(pp_node *m, const char *path, pp_server_spec *s,
                       pp_error *e) {
    int rc;
    /* A server entry exists for its price and power, so both are
     * required, with the year of the price. */
    if ((rc = pp_map_number(m, path, "usd", PP_REQUIRED, 0, PRICE_MAX,
                            &s->price_usd, e)) < 0 ||
        (rc = read_power(m, path, "power_w", PP_REQUIRED, &s->power_w, e)) <
            0 ||
        (rc = read_year(m, path, true, &s->price_year, e)) < 0)
        return rc;
    rc = pp_map_bool(m, path, "includes_gpus", PP_OPTIONAL, &s->includes_gpus,
                     e);
    if (rc < 0) return rc;
    rc = pp_map_bool(m, path, "includes_hcas", PP_OPTIONAL, &s->includes_hcas,
                     e);
    if (rc < 0) return rc;
    const char *gpu = NULL;
    rc = pp_map_string(m, path, "gpu", PP_OPTIONAL, &gpu, e);
    if (rc < 0) return rc;
    if (gpu) snprintf(s->gpu, sizeof s->gpu, "%s", gpu);
    return pp_map_done(m, path, e);
}

/* Reads section `name` of root: allocates one spec per entry into
 * *specs (size `size`), fills each in file order and counts them in *n.
 * On failure *specs may hold a partial array: the caller frees it. */
static int read_section(pp_catalog *c, pp_node *root, const char *name,
                        pp_cat_kind kind, size_t size, void **specs, size_t *n,
                        pp_error *e) {
    pp_node *sec;
    int rc = pp_map_node(root, "", name, PP_REQUIRED, PP_NODE_MAP, &sec, e);
    if (rc < 0) return rc;
    *specs = pp_xcalloc(sec->n ? sec->n : 1, size);
    for (size_t i = 0; i < sec->n; i++) {
        pp_node *key = sec->keys[i];
        pp_node *m = pp_map_get(sec, key->scalar);
        char path[256];
        char *spec = (char *)*specs + i * size;
        pp_path(path, sizeof path, name, key->scalar);
        /* Every spec struct starts with its name. */
        if ((rc = read_name(key, path, spec, e)) < 0 ||
            (rc = pp_node_expect(m, path, PP_NODE_MAP, e)) < 0)
            return rc;
        switch (kind) {
        case PP_CAT_GPU:
            rc = read_gpu(m, path, (pp_gpu_spec *)(void *)spec, e);
            break;
        case PP_CAT_LINK:
            rc = read_link(m, path, (pp_link_spec *)(void *)spec, e);
            break;
        case PP_CAT_SWITCH:
            rc = read_switch(c, m, path, (pp_switch_spec *)(void *)spec, e);
            break;
        case PP_CAT_SERVER:
            rc = read_server(m, path, (pp_server_spec *)(void *)spec, e);
            break;
        }
        if (rc < 0) return rc;
        *n = i + 1;
    }
    return pp_map_done(sec, name, e);
}

static int catalog_read(pp_catalog *c, pp_node *root, pp_error *e) {
    static const char *const sections[] = {"gpus", "links", "switches",
                                           "servers"};
    int rc;
    if ((rc = pp_node_expect(root, "", PP_NODE_MAP, e)) < 0) return rc;
    /* Ask for every section first, so that a misspelt one ("switchs")
     * reads "unknown key (did you mean ...)" rather than "missing". */
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        pp_map_get(root, sections[i]);
    if ((rc = pp_map_done(root, "", e)) < 0) return rc;
    /* Links before switches: a switch's port names a link. */
    if ((rc = read_section(c, root, "gpus", PP_CAT_GPU, sizeof(pp_gpu_spec),
                           (void **)&c->gpus, &c->n_gpus, e)) < 0 ||
        (rc = read_section(c, root, "links", PP_CAT_LINK, sizeof(pp_link_spec),
                           (void **)&c->links, &c->n_links, e)) < 0 ||
        (rc = read_section(c, root, "switches", PP_CAT_SWITCH,
                           sizeof(pp_switch_spec), (void **)&c->switches,
                           &c->n_switches, e)) < 0 ||
        (rc = read_section(c, root, "servers", PP_CAT_SERVER,
                           sizeof(pp_server_spec), (void **)&c->servers,
                           &c->n_servers, e)) < 0)
        return rc;
    return 0;
}

/* ------------------------------------------------------------------------
 * Public functions.
 * ---------------------------------------------------------------------- */
int pp_catalog_load(const char *path, pp_catalog **out, pp_error *e) {
    char file[4096];
    pp_doc *doc = NULL;
    pp_catalog *c = NULL;
    int rc;

    if (!out) return pp_error_set(e, PP_EINVAL, "pp_catalog_load: out is NULL");
    if ((rc = pp_data_find("topologies", path ? path : "hardware", file,
                           sizeof file, e)) < 0)
        goto fail;
    if ((rc = pp_doc_load_file(file, &doc, e)) < 0) goto fail;
    c = pp_xcalloc(1, sizeof *c);
    if ((rc = catalog_read(c, pp_doc_root(doc), e)) < 0) goto fail;
    pp_doc_free(doc);
    *out = c;
    return 0;
fail:
    pp_catalog_free(c);
    pp_doc_free(doc);
    return rc;
}

void pp_catalog_free(pp_catalog *c) {
    if (!c) return;
    free(c->gpus);
    free(c->links);
    free(c->switches);
    free(c->servers);
    free(c);
}

/* Every spec starts with char name[PP_NAME_MAX]: one search serves all
 * four arrays. */
static const void *find(const void *arr, size_t n, size_t size,
                        const char *name) {
    if (!arr || !name) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *spec = (const char *)arr + i * size;
        if (strcmp(spec, name) == 0) return spec;
    }
    return NULL;
}

const pp_gpu_spec *pp_catalog_gpu(const pp_catalog *c, const char *name) {
    return c ? find(c->gpus, c->n_gpus, sizeof *c->gpus, name) : NULL;
}

const pp_link_spec *pp_catalog_link(const pp_catalog *c, const char *name) {
    return c ? find(c->links, c->n_links, sizeof *c->links, name) : NULL;
}

const pp_switch_spec *pp_catalog_switch(const pp_catalog *c, const char *name) {
    return c ? find(c->switches, c->n_switches, sizeof *c->switches, name)
             : NULL;
}

const pp_server_spec *pp_catalog_server(const pp_catalog *c, const char *name) {
    return c ? find(c->servers, c->n_servers, sizeof *c->servers, name) : NULL;
}

/* The entries of one kind as an array of names (each entry begins with
 * its name). */
static const char *kind_array(const pp_catalog *c, pp_cat_kind kind, size_t *n,
                              size_t *size) {
    switch (kind) {
    case PP_CAT_GPU:
        *n = c->n_gpus, *size = sizeof *c->gpus;
        return (const char *)c->gpus;
    case PP_CAT_LINK:
        *n = c->n_links, *size = sizeof *c->links;
        return (const char *)c->links;
    case PP_CAT_SWITCH:
        *n = c->n_switches, *size = sizeof *c->switches;
        return (const char *)c->switches;
    case PP_CAT_SERVER:
        *n = c->n_servers, *size = sizeof *c->servers;
        return (const char *)c->servers;
    }
    *n = 0, *size = 0;
    return NULL;
}

size_t pp_catalog_count(const pp_catalog *c, pp_cat_kind kind) {
    size_t n = 0, size;
    if (c) kind_array(c, kind, &n, &size);
    return n;
}

const void *pp_catalog_entry(const pp_catalog *c, pp_cat_kind kind, size_t i) {
    size_t n = 0, size = 0;
    const char *arr = c ? kind_array(c, kind, &n, &size) : NULL;
    return arr && i < n ? arr + i * size : NULL;
}

/* pp_suggest over the entries of one kind, in file order: the same name
 * ignoring case, else the family the name is a prefix of (a100 -> every
 * a100 entry), else the nearest within 3 edits. */
int pp_catalog_suggest_list(const pp_catalog *c, pp_cat_kind kind,
                            const char *name, char *buf, size_t len) {
    size_t n = 0, size = 0;
    if (len) buf[0] = '\0';
    const char *arr = c && name ? kind_array(c, kind, &n, &size) : NULL;
    if (!arr || n == 0) return 0;
    const char **names = pp_xmalloc(n * sizeof *names);
    for (size_t i = 0; i < n; i++) names[i] = arr + i * size;
    int k = pp_suggest(name, names, n, buf, len);
    free(names);
    return k;
}

/* The first name pp_catalog_suggest_list would offer. */
const char *pp_catalog_suggest(const pp_catalog *c, pp_cat_kind kind,
                               const char *name) {
    char buf[PP_NAME_MAX + 4];
    size_t n = 0, size = 0;
    const char *arr = c && name ? kind_array(c, kind, &n, &size) : NULL;
    if (!arr || pp_catalog_suggest_list(c, kind, name, buf, sizeof buf) == 0)
        return NULL;
    /* buf starts with "\"<name>\""; return the entry's own storage. */
    char *q = strchr(buf + 1, '"');
    if (q) *q = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(arr + i * size, buf + 1) == 0) return arr + i * size;
    return NULL;
}
