/*
 * topo_export.c: the device graph for other tools: Graphviz DOT (a
 * picture of the fabric), GraphML (igraph's writer) and JSON.
 *
 * DOT is undirected and draws each physical link once; by default each
 * server is one vertex and its HCA links to one switch are merged into one
 * edge labelled "8 x 200Gbps" (parallel switch-to-switch links likewise),
 * which keeps a 2,000-server picture legible.  GraphML and JSON carry the
 * graph exactly as simulated: every device, and one directed edge per link
 * direction with its own bandwidth and latency.
 */
#include "sim_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static bool is_level(pp_dev_kind k) {
    return k == PP_DEV_LEAF || k == PP_DEV_SPINE || k == PP_DEV_CORE;
}

/* Writes s as a DOT double-quoted ID. */
static void dot_quote(FILE *fp, const char *s) {
    fputc('"', fp);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', fp);
        if (*s == '\n') {
            fputs("\\n", fp);
            continue;
        }
        fputc(*s, fp);
    }
    fputc('"', fp);
}

static const char *dev_style(pp_dev_kind k) {
    switch (k) {
    case PP_DEV_GPU: return "shape=box, style=filled, fillcolor=\"#b7e1a1\"";
    case PP_DEV_NVSWITCH:
        return "shape=hexagon, style=filled, fillcolor=\"#d9f0c8\"";
    case PP_DEV_PCIE_SWITCH: return "shape=diamond";
    case PP_DEV_CPU: return "shape=box3d";
    case PP_DEV_HCA:
        return "shape=ellipse, style=filled, fillcolor=\"#c6dbef\"";
    case PP_DEV_LEAF:
        return "shape=box, style=\"rounded,filled\", fillcolor=\"#fdd0a2\"";
    case PP_DEV_SPINE:
        return "shape=box, style=\"rounded,filled\", fillcolor=\"#fdae6b\"";
    case PP_DEV_CORE:
        return "shape=box, style=\"rounded,filled\", fillcolor=\"#e6550d\"";
    default: return "shape=ellipse";
    }
}

static const char *link_style(pp_link_kind k) {
    switch (k) {
    case PP_LINK_NVLINK: return "color=\"#31a354\", penwidth=2";
    case PP_LINK_PCIE: return "color=\"#636363\"";
    case PP_LINK_SOCKET: return "color=\"#636363\", style=dashed";
    case PP_LINK_HOST: return "color=\"#3182bd\"";
    default: return "color=\"#e6550d\"";
    }
}

/* An aggregated DOT edge: endpoints are collapsed vertex keys. */
typedef struct agg {
    int64_t a, b; /* vertex keys, a at the lower level */
    int ra;       /* level of b: edges are written top down */
    int32_t link; /* first link (style, kind) */
    double bw;    /* per link, the first one's */
    double sum;   /* total capacity of the group */
    int32_t count;
    bool mixed; /* bandwidths differ within the group */
} agg;

static int cmp_agg(const void *x, const void *y) {
    const agg *p = x, *q = y;
    if (p->ra != q->ra) return p->ra > q->ra ? -1 : 1; /* core first */
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    return (p->link > q->link) - (p->link < q->link);
}

/* Collapsed vertex key: a device its id, a server n_devs + node (so the
 * edges sort switches first, then servers in order). */
static int64_t vkey(const pp_cluster *c, int32_t d, bool expand) {
    const pp_device *dv = &c->devs[d];
    if (!expand && dv->node >= 0 && !is_level(dv->kind))
        return (int64_t)c->n_devs + dv->node;
    return d;
}

static int vrank(const pp_cluster *c, int64_t key) {
    if (key >= (int64_t)c->n_devs) return 0;
    switch (c->devs[key].kind) {
    case PP_DEV_LEAF: return 1;
    case PP_DEV_SPINE: return 2;
    case PP_DEV_CORE: return 3;
    default: return 0;
    }
}

static void dot_vertex_name(const pp_cluster *c, int64_t key, FILE *fp) {
    char buf[32];
    if (key >= (int64_t)c->n_devs) {
        snprintf(buf, sizeof buf, "n%lld",
                 (long long)(key - (int64_t)c->n_devs));
        dot_quote(fp, buf);
    } else {
        dot_quote(fp, c->devs[key].name);
    }
}

int pp_topo_dot(const pp_cluster *c, bool expand, FILE *fp, pp_error *e) {
    if (!c || !fp)
        return pp_error_set(e, PP_EINVAL, "pp_topo_dot: NULL argument");
    const pp_cluster_info *in = &c->info;
    fprintf(fp, "graph ");
    dot_quote(fp, in->name);
    fprintf(fp,
            " {\n  graph [rankdir=BT, ranksep=1.2, fontname=\"Helvetica\"];\n"
            "  node [fontname=\"Helvetica\", fontsize=10];\n"
            "  edge [fontname=\"Helvetica\", fontsize=8];\n");

    /* Vertices: fabric switches by level (one rank each), then servers
     * (collapsed) or the devices of each server in a cluster box. */
    for (int lvl = PP_DEV_CORE; lvl >= PP_DEV_LEAF; lvl--) {
        bool any = false;
        for (size_t d = 0; d < c->n_devs; d++) {
            if ((int)c->devs[d].kind != lvl) continue;
            if (!any) fprintf(fp, "  { rank=same;\n");
            any = true;
            fprintf(fp, "    ");
            dot_quote(fp, c->devs[d].name);
            fprintf(fp, " [%s];\n", dev_style((pp_dev_kind)lvl));
        }
        if (any) fprintf(fp, "  }\n");
    }
    if (!expand) {
        char label[160];
        for (int32_t n = 0; n < in->nodes; n++) {
            snprintf(label, sizeof label, "n%d\n%d x %s\n%d HCA", (int)n,
                     (int)in->gpus_per_node, in->gpu ? in->gpu->name : "GPU",
                     (int)in->hcas_per_node);
            fprintf(fp, "  ");
            dot_vertex_name(c, (int64_t)c->n_devs + n, fp);
            fprintf(fp, " [shape=box3d, label=");
            dot_quote(fp, label);
            fprintf(fp, "];\n");
        }
    } else {
        /* Devices grouped by server (a counting sort: the device order
         * need not follow the servers). */
        int32_t nn = in->nodes > 0 ? in->nodes : 0;
        size_t *start = pp_xcalloc((size_t)nn + 1, sizeof *start);
        int32_t *order =
            pp_xmalloc((c->n_devs ? c->n_devs : 1) * sizeof *order);
        for (size_t d = 0; d < c->n_devs; d++) {
            const pp_device *dv = &c->devs[d];
            if (dv->node >= 0 && dv->node < nn && !is_level(dv->kind))
                start[dv->node + 1]++;
        }
        for (int32_t n = 0; n < nn; n++) start[n + 1] += start[n];
        size_t *fill = pp_xmalloc(((size_t)nn + 1) * sizeof *fill);
        memcpy(fill, start, ((size_t)nn + 1) * sizeof *fill);
        for (size_t d = 0; d < c->n_devs; d++) {
            const pp_device *dv = &c->devs[d];
            if (dv->node >= 0 && dv->node < nn && !is_level(dv->kind))
                order[fill[dv->node]++] = (int32_t)d;
        }
        int32_t cur = -1;
        for (int32_t n = 0; n < nn; n++) {
            for (size_t k = start[n]; k < start[n + 1]; k++) {
                const pp_device *dv = &c->devs[order[k]];
                if (cur != n) {
                    if (cur >= 0) fprintf(fp, "  }\n");
                    char sub[48];
                    snprintf(sub, sizeof sub, "cluster_n%d", (int)n);
                    fprintf(fp, "  subgraph ");
                    dot_quote(fp, sub);
                    fprintf(fp, " {\n    label=\"n%d\";\n", (int)n);
                    cur = n;
                }
                fprintf(fp, "    ");
                dot_quote(fp, dv->name);
                fprintf(fp, " [%s];\n", dev_style(dv->kind));
            }
        }
        free(fill);
        free(order);
        free(start);
        if (cur >= 0) fprintf(fp, "  }\n");
        /* devices outside any server that are not fabric switches */
        for (size_t d = 0; d < c->n_devs; d++) {
            const pp_device *dv = &c->devs[d];
            if ((dv->node >= 0 && dv->node < in->nodes) || is_level(dv->kind))
                continue;
            fprintf(fp, "  ");
            dot_quote(fp, dv->name);
            fprintf(fp, " [%s];\n", dev_style(dv->kind));
        }
    }

    /* Edges: each physical link once, merged per pair of vertices. */
    agg *g = pp_xmalloc((c->n_links ? c->n_links : 1) * sizeof *g);
    size_t ng = 0;
    for (size_t i = 0; i < c->n_links; i++) {
        const pp_link *l = &c->links[i];
        if (l->reverse >= 0 && (size_t)l->reverse < i) continue;
        int64_t a = vkey(c, l->src, expand), b = vkey(c, l->dst, expand);
        if (a == b) continue; /* inside a collapsed server */
        /* The lower level first: with rankdir=BT, dot then draws servers
         * at the bottom and the core at the top. */
        int ra = vrank(c, a), rb = vrank(c, b);
        if (ra > rb || (ra == rb && a > b)) {
            int64_t t = a;
            a = b;
            b = t;
        }
        g[ng++] =
            (agg){a, b,    ra > rb ? ra : rb, (int32_t)i, l->bw_Bps, l->bw_Bps,
                  1, false};
    }
    qsort(g, ng, sizeof *g, cmp_agg);
    size_t i = 0;
    while (i < ng) {
        agg m = g[i];
        size_t j = i + 1;
        for (; j < ng && g[j].a == m.a && g[j].b == m.b; j++) {
            m.count++;
            m.sum += g[j].bw;
            if (g[j].bw != m.bw) m.mixed = true;
        }
        char bw[48], label[96];
        if (m.mixed) {
            pp_unit_format(m.sum, PP_Q_BANDWIDTH, 4, bw, sizeof bw);
            snprintf(label, sizeof label, "%d links, %s", (int)m.count, bw);
        } else {
            pp_unit_format(m.bw, PP_Q_BANDWIDTH, 4, bw, sizeof bw);
            if (m.count > 1)
                snprintf(label, sizeof label, "%d x %s", (int)m.count, bw);
            else
                snprintf(label, sizeof label, "%s", bw);
        }
        fprintf(fp, "  ");
        dot_vertex_name(c, m.a, fp);
        fprintf(fp, " -- ");
        dot_vertex_name(c, m.b, fp);
        fprintf(fp, " [label=");
        dot_quote(fp, label);
        fprintf(fp, ", %s];\n", link_style(c->links[m.link].kind));
        i = j;
    }
    free(g);
    fprintf(fp, "}\n");
    if (ferror(fp)) return pp_error_set(e, PP_EIO, "writing DOT: output error");
    return 0;
}

/* ---- GraphML (igraph's writer) ------------------------------------------
 * igraph only stores attributes when an attribute handler is installed
 * before the graph is created, and the handler is process-global.  We
 * install the C handler for the life of a fresh copy of the graph only and
 * put back whatever was there, so graphs others made without attributes
 * are destroyed by the handler they were made with. */
static int export_graphml(const pp_cluster *c, FILE *fp, pp_error *e) {
    igraph_attribute_table_t *old =
        igraph_set_attribute_table(&igraph_cattribute_table);
    igraph_vector_int_t ev;
    igraph_t g;
    igraph_strvector_t sv;
    igraph_vector_t nv;
    bool have_ev = false, have_g = false, have_sv = false, have_nv = false;
    int rc = 0, ig;
    igraph_integer_t nd = (igraph_integer_t)c->n_devs;
    igraph_integer_t nl = (igraph_integer_t)c->n_links;

#define IG(call, what)                                                         \
    do {                                                                       \
        if ((ig = (call))) {                                                   \
            rc = pp__igraph_error(ig, what, e);                                \
            goto cleanup;                                                      \
        }                                                                      \
    } while (0)

    IG(igraph_vector_int_init(&ev, 2 * nl), "GraphML: edge list");
    have_ev = true;
    for (igraph_integer_t i = 0; i < nl; i++) {
        VECTOR(ev)[2 * i] = c->links[i].src;
        VECTOR(ev)[2 * i + 1] = c->links[i].dst;
    }
    IG(igraph_create(&g, &ev, nd, IGRAPH_DIRECTED), "GraphML: graph");
    have_g = true;
    IG(igraph_strvector_init(&sv, nd), "GraphML: names");
    have_sv = true;
    IG(igraph_vector_init(&nv, nd > nl ? nd : nl), "GraphML: numbers");
    have_nv = true;

    /* Vertices: name, kind, node (-1 for fabric switches), pod and rail
     * (-1 where none). */
    for (igraph_integer_t d = 0; d < nd; d++)
        IG(igraph_strvector_set(&sv, d, c->devs[d].name ? c->devs[d].name : ""),
           "GraphML: names");
    IG(SETVASV(&g, "name", &sv), "GraphML: vertex names");
    for (igraph_integer_t d = 0; d < nd; d++)
        IG(igraph_strvector_set(&sv, d, pp_dev_kind_name(c->devs[d].kind)),
           "GraphML: kinds");
    IG(SETVASV(&g, "kind", &sv), "GraphML: vertex kinds");
    IG(igraph_vector_resize(&nv, nd), "GraphML: numbers");
    for (igraph_integer_t d = 0; d < nd; d++) VECTOR(nv)[d] = c->devs[d].node;
    IG(SETVANV(&g, "node", &nv), "GraphML: vertex nodes");
    for (igraph_integer_t d = 0; d < nd; d++) VECTOR(nv)[d] = c->devs[d].pod;
    IG(SETVANV(&g, "pod", &nv), "GraphML: vertex pods");
    for (igraph_integer_t d = 0; d < nd; d++) VECTOR(nv)[d] = c->devs[d].rail;
    IG(SETVANV(&g, "rail", &nv), "GraphML: vertex rails");

    /* Edges: kind, bw_Bps, lat_s, lanes (PCIe width, 0 otherwise). */
    IG(igraph_strvector_resize(&sv, nl), "GraphML: kinds");
    for (igraph_integer_t i = 0; i < nl; i++)
        IG(igraph_strvector_set(&sv, i, pp_link_kind_name(c->links[i].kind)),
           "GraphML: kinds");
    IG(SETEASV(&g, "kind", &sv), "GraphML: edge kinds");
    IG(igraph_vector_resize(&nv, nl), "GraphML: numbers");
    for (igraph_integer_t i = 0; i < nl; i++)
        VECTOR(nv)[i] = c->links[i].bw_Bps;
    IG(SETEANV(&g, "bw_Bps", &nv), "GraphML: bandwidths");
    for (igraph_integer_t i = 0; i < nl; i++) VECTOR(nv)[i] = c->links[i].lat_s;
    IG(SETEANV(&g, "lat_s", &nv), "GraphML: latencies");
    for (igraph_integer_t i = 0; i < nl; i++) VECTOR(nv)[i] = c->links[i].lanes;
    IG(SETEANV(&g, "lanes", &nv), "GraphML: lanes");

    /* prefixattr: vertex and edge both have "kind"; the prefix keeps the
     * GraphML key ids distinct (attr.name stays "kind"). */
    IG(igraph_write_graph_graphml(&g, fp, true), "GraphML: writing");
#undef IG
cleanup:
    if (have_nv) igraph_vector_destroy(&nv);
    if (have_sv) igraph_strvector_destroy(&sv);
    if (have_g) igraph_destroy(&g);
    if (have_ev) igraph_vector_int_destroy(&ev);
    igraph_set_attribute_table(old);
    return rc;
}

/* ---- JSON --------------------------------------------------------------- */
static int export_json(const pp_cluster *c, FILE *fp, pp_error *e) {
    json_t *root = json_object(), *vs = json_array(), *es = json_array();
    if (!root || !vs || !es) pp_oom();
    json_object_set_new(root, "cluster", json_string(c->info.name));
    json_object_set_new(root, "directed", json_true());
    for (size_t d = 0; d < c->n_devs; d++) {
        const pp_device *dv = &c->devs[d];
        json_t *v = json_object();
        json_object_set_new(v, "id", json_integer((json_int_t)d));
        json_object_set_new(v, "name", json_string(dv->name ? dv->name : ""));
        json_object_set_new(v, "kind", json_string(pp_dev_kind_name(dv->kind)));
        json_object_set_new(v, "node", json_integer(dv->node));
        json_object_set_new(v, "pod", json_integer(dv->pod));
        json_object_set_new(v, "rail", json_integer(dv->rail));
        json_array_append_new(vs, v);
    }
    for (size_t i = 0; i < c->n_links; i++) {
        const pp_link *l = &c->links[i];
        json_t *x = json_object();
        json_object_set_new(x, "src", json_integer(l->src));
        json_object_set_new(x, "dst", json_integer(l->dst));
        json_object_set_new(x, "kind", json_string(pp_link_kind_name(l->kind)));
        json_object_set_new(x, "bw_Bps", json_real(l->bw_Bps));
        json_object_set_new(x, "lat_s", json_real(l->lat_s));
        if (l->lanes > 0)
            json_object_set_new(x, "lanes", json_integer(l->lanes));
        json_array_append_new(es, x);
    }
    json_object_set_new(root, "vertices", vs);
    json_object_set_new(root, "edges", es);
    /* Indented, so the file diffs line by line; 17 digits give back the
     * exact doubles. */
    int rc = json_dumpf(root, fp,
                        JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                            JSON_REAL_PRECISION(17));
    json_decref(root);
    if (rc != 0 || fputc('\n', fp) == EOF)
        return pp_error_set(e, PP_EIO, "writing JSON: output error");
    return 0;
}

int pp_topo_export(const pp_cluster *c, pp_export_format fmt, FILE *fp,
                   pp_error *e) {
    if (!c || !fp)
        return pp_error_set(e, PP_EINVAL, "pp_topo_export: NULL argument");
    int rc;
    if (fmt == PP_EXPORT_GRAPHML) {
        pp__igraph_init();
        rc = export_graphml(c, fp, e);
    } else if (fmt == PP_EXPORT_JSON) {
        rc = export_json(c, fp, e);
    } else {
        return pp_error_set(e, PP_EINVAL, "pp_topo_export: unknown format %d",
                            (int)fmt);
    }
    if (rc == 0 && ferror(fp))
        rc = pp_error_set(e, PP_EIO, "writing the graph: output error");
    return rc;
}
