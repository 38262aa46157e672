/*
 * sim/topo/cluster.c: loading a cluster file and the device/link store.
 *
 * pp_cluster_load reads the YAML document, applies the --set overrides to
 * the tree (so the loaders' checks apply to overridden values unchanged),
 * and hands the `node:` and `fabric:` sections to node.c and fabric.c,
 * which add devices and links here; graph.c then builds the CSR arrays and
 * the igraph copy.  The schema is documented in topologies/README.md.
 *
 * Device names live in an arena of fixed blocks (a 16k-GPU cluster has
 * about 50,000 devices: one malloc per name would dominate loading), and an
 * open-addressing hash maps names to ids, kept current on every insertion
 * so the explicit-fabric reader can resolve endpoints before the graph is
 * finished.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

/* ------------------------------------------------------------------------
 * Name arena.
 * ---------------------------------------------------------------------- */
#define PP_NAME_BLOCK 65536

struct pp__name_block {
    struct pp__name_block *next;
    size_t used;
    char text[PP_NAME_BLOCK];
};

static char *arena_strdup(pp_cluster *c, const char *s) {
    size_t len = strlen(s) + 1;
    struct pp__name_block *b = c->name_blocks;
    if (len > PP_NAME_BLOCK)
        len = PP_NAME_BLOCK; /* names are short; cut rather than fail */
    if (!b || b->used + len > PP_NAME_BLOCK) {
        b = pp_xmalloc(sizeof *b);
        b->next = c->name_blocks;
        b->used = 0;
        c->name_blocks = b;
    }
    char *dst = b->text + b->used;
    memcpy(dst, s, len - 1);
    dst[len - 1] = '\0';
    b->used += len;
    return dst;
}

/* ------------------------------------------------------------------------
 * Name index: FNV-1a into a power-of-two table of (id + 1), linear probing,
 * kept under half full.
 * ---------------------------------------------------------------------- */
static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static void index_put(int32_t *slots, size_t cap, const char *name,
                      int32_t id) {
    size_t i = name_hash(name) & (cap - 1);
    while (slots[i] != 0) i = (i + 1) & (cap - 1);
    slots[i] = id + 1;
}

static void index_add(pp_cluster *c, int32_t id) {
    if (2 * ((size_t)id + 1) > c->name_cap) {
        size_t cap = c->name_cap ? 2 * c->name_cap : 1024;
        int32_t *slots = pp_xcalloc(cap, sizeof *slots);
        for (int32_t d = 0; d < id; d++) index_put(slots, cap, c->names[d], d);
        free(c->name_slots);
        c->name_slots = slots;
        c->name_cap = cap;
    }
    index_put(c->name_slots, c->name_cap, c->names[id], id);
}

int32_t pp_cluster_find(const pp_cluster *c, const char *name) {
    if (!c || !name || !c->name_cap) return -1;
    size_t i = name_hash(name) & (c->name_cap - 1);
    while (c->name_slots[i] != 0) {
        int32_t id = c->name_slots[i] - 1;
        if (strcmp(c->names[id], name) == 0) return id;
        i = (i + 1) & (c->name_cap - 1);
    }
    return -1;
}

/* ------------------------------------------------------------------------
 * Devices and links.
 * ---------------------------------------------------------------------- */
int32_t pp__cluster_add_device(pp_cluster *c, pp_dev_kind kind, int32_t node,
                               int32_t local, const char *name) {
    if (c->n_devs == c->cap_devs) {
        PP_VEC_RESERVE(c->devs, c->cap_devs, c->n_devs + 1, 256);
        c->names = pp_xrealloc(c->names, c->cap_devs * sizeof *c->names);
    }
    int32_t id = (int32_t)c->n_devs++;
    char *nm = arena_strdup(c, name);
    c->names[id] = nm;
    c->devs[id] = (pp_device){.kind = kind,
                              .node = node,
                              .local = local,
                              .pod = -1,
                              .rail = kind == PP_DEV_HCA ? local : -1,
                              .name = nm};
    index_add(c, id);
    return id;
}

int32_t pp__cluster_add_link(pp_cluster *c, int32_t a, int32_t b,
                             pp_link_kind kind, double bw_Bps, double lat_s,
                             int32_t lanes) {
    PP_VEC_RESERVE(c->links, c->cap_links, c->n_links + 2, 512);
    int32_t id = (int32_t)c->n_links;
    c->links[id] = (pp_link){a, b, id + 1, kind, bw_Bps, lat_s, lanes};
    c->links[id + 1] = (pp_link){b, a, id, kind, bw_Bps, lat_s, lanes};
    c->n_links += 2;
    return id;
}

/* ------------------------------------------------------------------------
 * Catalogue lookups with "did you mean".
 * ---------------------------------------------------------------------- */
static const void *cat_get(const pp_catalog *cat, pp_cat_kind kind,
                           const char *name) {
    switch (kind) {
    case PP_CAT_GPU: return pp_catalog_gpu(cat, name);
    case PP_CAT_LINK: return pp_catalog_link(cat, name);
    case PP_CAT_SWITCH: return pp_catalog_switch(cat, name);
    case PP_CAT_SERVER: return pp_catalog_server(cat, name);
    }
    return NULL;
}

int pp__cat_lookup(const pp_cluster *c, pp_cat_kind kind, pp_node *map,
                   const char *path, const char *key, int flags,
                   const void **out, pp_node **where, pp_error *e) {
    static const char *const what[] = {"GPU", "link", "switch", "server"};
    const char *name;
    char p[256];
    int rc = pp_map_string(map, path, key, flags, &name, e);
    if (rc) return rc;
    pp_node *n = pp_map_get(map, key);
    if (where) *where = n;
    const void *spec = cat_get(c->cat, kind, name);
    if (spec) {
        *out = spec;
        return 0;
    }
    pp_path(p, sizeof p, path, key);
    char near[512];
    if (pp_catalog_suggest_list(c->cat, kind, name, near, sizeof near))
        return pp_error_at(e, PP_EINPUT, n, p,
                           "unknown %s \"%s\" (did you mean %s?)", what[kind],
                           name, near);
    return pp_error_at(e, PP_EINPUT, n, p,
                       "unknown %s \"%s\" (see topologies/hardware.yaml)",
                       what[kind], name);
}

/* ------------------------------------------------------------------------
 * Loading.
 * ---------------------------------------------------------------------- */
int pp__map_keys(pp_node *map, const char *path, const char *const *keys,
                 pp_error *e) {
    if (!map || map->kind != PP_NODE_MAP) return 0;
    for (size_t i = 0; keys[i]; i++) pp_map_get(map, keys[i]);
    return pp_map_done(map, path, e);
}

static int read_cluster(pp_cluster *c, pp_node *root, pp_error *e) {
    pp_node *node = NULL, *fabric = NULL;
    const char *name = NULL;
    int rc;

    static const char *const keys[] = {"name", "description", "node", "fabric",
                                       NULL};
    if ((rc = pp_node_expect(root, "", PP_NODE_MAP, e)) < 0 ||
        (rc = pp__map_keys(root, "", keys, e)) < 0)
        return rc;
    if ((rc = pp_map_string(root, "", "name", PP_OPTIONAL, &name, e)) < 0)
        return rc;
    if (name) {
        if (strlen(name) >= PP_NAME_MAX)
            return pp_error_at(e, PP_EINPUT, pp_map_get(root, "name"), "name",
                               "expected at most %d characters",
                               PP_NAME_MAX - 1);
        strcpy(c->info.name, name);
    } else {
        pp_file_stem(c->source, c->info.name, sizeof c->info.name);
    }
    /* A free-text description is allowed so shipped files can say what
     * they model in a field a tool can show, besides the comments. */
    const char *desc;
    if ((rc = pp_map_string(root, "", "description", PP_OPTIONAL, &desc, e)) <
        0)
        return rc;
    if ((rc = pp_map_node(root, "", "node", PP_REQUIRED, PP_NODE_MAP, &node,
                          e)) < 0)
        return rc;
    rc = pp_map_node(root, "", "fabric", PP_OPTIONAL, PP_NODE_MAP, &fabric, e);
    if (rc < 0) return rc;
    if (rc == 1) fabric = NULL;
    if ((rc = pp__node_build(c, node, e)) < 0) return rc;
    if (!fabric && c->info.nodes > 1)
        return pp_error_at(e, PP_EINPUT, root, "fabric",
                           "missing (required for more than one node)");
    if ((rc = pp__fabric_build(c, fabric, e)) < 0) return rc;
    return pp__cluster_finish(c, e);
}

int pp_cluster_load(const char *spec, const char *const *sets, size_t n_sets,
                    const pp_catalog *cat, pp_cluster **out, pp_error *e) {
    char path[4096];
    pp_doc *doc = NULL;
    pp_cluster *c = NULL;
    int rc;

    if (!spec || !spec[0])
        return pp_error_set(e, PP_EUSAGE, "--cluster: empty cluster name");
    if ((rc = pp_data_find("topologies", spec, path, sizeof path, e)) < 0)
        return rc;
    if ((rc = pp_doc_load_file(path, &doc, e)) < 0) return rc;
    for (size_t i = 0; i < n_sets; i++)
        if ((rc = pp_doc_set(doc, sets[i], (int)i + 1, e)) < 0) goto fail;

    c = pp_xcalloc(1, sizeof *c);
    c->source = pp_xstrdup(path);
    if (cat) {
        c->cat = cat;
    } else {
        if ((rc = pp_catalog_load(NULL, &c->owned_cat, e)) < 0) goto fail;
        c->cat = c->owned_cat;
    }
    if ((rc = read_cluster(c, pp_doc_root(doc), e)) < 0) goto fail;
    pp_doc_free(doc);
    *out = c;
    return 0;

fail:
    pp_cluster_free(c);
    pp_doc_free(doc);
    return rc;
}

void pp_cluster_free(pp_cluster *c) {
    if (!c) return;
    if (c->has_graph) igraph_destroy(&c->graph);
    while (c->name_blocks) {
        struct pp__name_block *next = c->name_blocks->next;
        free(c->name_blocks);
        c->name_blocks = next;
    }
    free(c->name_slots);
    free(c->names);
    free(c->pcie.slots);
    free(c->gpu_hca);
    free(c->hca_ids);
    free(c->gpu_ids);
    free(c->out_ids);
    free(c->out_off);
    free(c->links);
    free(c->devs);
    free(c->source);
    pp_catalog_free(c->owned_cat);
    free(c);
}

/* ------------------------------------------------------------------------
 * Accessors.
 * ---------------------------------------------------------------------- */
const pp_cluster_info *pp_cluster_info_get(const pp_cluster *c) {
    return &c->info;
}

const pp_catalog *pp_cluster_catalog(const pp_cluster *c) {
    return c->cat;
}

const pp_device *pp_cluster_devices(const pp_cluster *c, size_t *n) {
    if (n) *n = c->n_devs;
    return c->devs;
}

const pp_link *pp_cluster_links(const pp_cluster *c, size_t *n) {
    if (n) *n = c->n_links;
    return c->links;
}

const int32_t *pp_cluster_out(const pp_cluster *c, int32_t dev, size_t *n) {
    if (dev < 0 || (size_t)dev >= c->n_devs || !c->out_off) {
        if (n) *n = 0;
        return NULL;
    }
    if (n) *n = (size_t)(c->out_off[dev + 1] - c->out_off[dev]);
    return c->out_ids + c->out_off[dev];
}

int32_t pp_cluster_gpu(const pp_cluster *c, int32_t node, int32_t local) {
    if (node < 0 || node >= c->info.nodes || local < 0 ||
        local >= c->info.gpus_per_node)
        return -1;
    return c
        ->gpu_ids[(size_t)node * (size_t)c->info.gpus_per_node + (size_t)local];
}

int32_t pp_cluster_hca(const pp_cluster *c, int32_t node, int32_t local) {
    if (node < 0 || node >= c->info.nodes || local < 0 ||
        local >= c->info.hcas_per_node)
        return -1;
    return c
        ->hca_ids[(size_t)node * (size_t)c->info.hcas_per_node + (size_t)local];
}

int32_t pp_cluster_gpu_hca(const pp_cluster *c, int32_t gpu_dev) {
    if (gpu_dev < 0 || (size_t)gpu_dev >= c->n_devs || !c->gpu_hca) return -1;
    return c->gpu_hca[gpu_dev];
}

double pp_cluster_host_Bps(const pp_cluster *c, int32_t gpu_dev) {
    if (gpu_dev < 0 || (size_t)gpu_dev >= c->n_devs) return 0;
    if (c->info.gpu && c->info.gpu->c2c_Bps > 0) return c->info.gpu->c2c_Bps;
    const pp_device *dv = pp_cluster_devices(c, NULL);
    const pp_link *L = pp_cluster_links(c, NULL);
    size_t n, k;
    const int32_t *out = pp_cluster_out(c, gpu_dev, &n);
    for (size_t i = 0; i < n; i++) {
        const pp_link *up = &L[out[i]];
        if (up->kind != PP_LINK_PCIE) continue;
        if (dv[up->dst].kind == PP_DEV_CPU) return up->bw_Bps;
        const int32_t *sw = pp_cluster_out(c, up->dst, &k);
        double cpu = 0, gpus = 0;
        for (size_t j = 0; j < k; j++) {
            const pp_link *x = &L[sw[j]];
            if (dv[x->dst].kind == PP_DEV_CPU) cpu = x->bw_Bps;
            if (dv[x->dst].kind == PP_DEV_GPU) gpus += 1;
        }
        return cpu > 0 && gpus > 0 ? fmin(up->bw_Bps, cpu / gpus) : up->bw_Bps;
    }
    return 0;
}
