/*
 * route.c: paths between devices of a cluster, as link ids.
 *
 * Inside a server.  Two GPUs talk over NVLink when they have it: through
 * an NVSwitch (gpu -> nvs -> gpu), over a direct link, or hopping through
 * other GPUs in a mesh or ring (as NCCL's rings forward).  Anything else
 * (GPU <-> HCA for GPUDirect RDMA, GPU <-> CPU, GPUs without NVLink) takes
 * the PCIe tree: device -> PCIe switch -> (CPU -> socket link -> CPU ->)
 * PCIe switch -> device, passing only through PCIe switches and CPUs.
 * Both are breadth-first searches from the destination over the server's
 * few dozen devices, then a walk from the source that takes, at each hop,
 * one of the links that gets one step closer.
 *
 * Across servers: source -> PCIe -> the HCA nearest the source GPU
 * (pp_cluster_gpu_hca) -> its leaf -> ... -> the leaf of the HCA nearest
 * the destination GPU -> that HCA -> PCIe -> destination.  Both PCIe legs
 * are in the path, so GPUDirect traffic contends with whatever else uses
 * those PCIe links.  The fabric part is a shortest path over the switches
 * (HCAs never forward): for each destination switch the hop distance of
 * every switch to it is computed once, by BFS, when first needed (a few
 * thousand switches even for a 16k-GPU fat-tree, so a table is a few KiB),
 * and the walk from the source leaf picks among the uplinks (and parallel
 * cables) one step closer by a hash of (seed, flow class, endpoints, hop).
 * That is ECMP as switches do it: deterministic per flow, spread over
 * flows, and seedable.  Including the endpoints in the hash matters: with
 * the class alone every flow of one class would pick the same spine.
 *
 * flow_key is reduced to one of PP__ROUTE_CLASSES classes and paths are
 * cached per (src, dst, class) in an open-addressing table; the links sit
 * in an append-only arena of blocks so that a returned path never moves
 * while the router lives.  A cached path costs one hash probe.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"
#include "route_int.h"

#define WAY_CLASS 0x80000000u /* cache class of NVSwitch way k: | k */
#define ANY_CLASS 0x7fffffffu /* cache class of a pair with no ECMP choice */
#define CHOOSES UINT32_MAX    /* n of an ANY_CLASS entry: the pair has one */
#define ARENA_BLOCK 65536     /* link ids per arena block */
#define FAR UINT16_MAX        /* unreachable in a distance table */
#define FRONT 16384           /* entries of the cache's direct-mapped front */

typedef struct centry {
    int32_t src, dst; /* src < 0: empty slot */
    uint32_t cls;
    uint32_t n;
    const int32_t *path;
    double lat_s, bw_Bps;
} centry;

typedef struct ablock {
    struct ablock *next;
    size_t used, cap;
    int32_t a[];
} ablock;

struct pp_router {
    const pp_cluster *c;
    uint64_t seed;

    /* The switch fabric: switches numbered 0..n_sw-1. */
    int32_t n_sw;
    int32_t *sw_of;     /* [device] -> switch index, or -1 */
    int32_t *sw_dev;    /* [switch index] -> device */
    uint16_t **dist_to; /* [switch] -> hops of every switch to it, or NULL */

    /* BFS scratch over devices, reused: a mark is valid when it equals
     * epoch, so nothing is cleared between searches. */
    uint32_t *mark;
    int32_t *dist;
    int32_t *queue;
    uint32_t epoch;

    /* The path cache, and copies of recently used entries in a
     * direct-mapped front (640 KiB, small enough to stay in L2): the table
     * outgrows L2 on big clusters, while collectives send between the
     * same pairs phase after phase (9 lookups in 10 hit the front on
     * megatron-1t at 3,072 GPUs). */
    centry *tab;
    size_t cap, count;
    centry *front;
    ablock *blocks;

    /* The path being built. */
    int32_t *tmp;
    size_t n_tmp, cap_tmp;

    /* Set by pick() when it had more than one next hop to choose from. */
    bool chose;

    /* [device] -> its NVLinks to NVSwitches, or -1 until first asked:
     * pp__route_ways runs on every transfer and would otherwise scan both
     * endpoints' links each time. */
    int32_t *nvs_n;
};

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull; /* splitmix64's finaliser */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The ECMP choice among n equal next hops at hop `hop`. */
static uint32_t pick(pp_router *r, uint32_t cls, int32_t src, int32_t dst,
                     uint32_t hop, uint32_t n) {
    if (n <= 1) return 0;
    r->chose = true;
    uint64_t ends = ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst;
    uint64_t h = mix(mix(mix(r->seed) ^ ends) ^ ((uint64_t)cls << 16 | hop));
    return (uint32_t)(h % n);
}

static bool is_switch(pp_dev_kind k) {
    return k == PP_DEV_LEAF || k == PP_DEV_SPINE || k == PP_DEV_CORE;
}

int pp_router_new(const pp_cluster *c, uint64_t seed, pp_router **out,
                  pp_error *e) {
    if (!c || !out)
        return pp_error_set(e, PP_EINVAL, "pp_router_new: no cluster");
    pp_router *r = pp_xcalloc(1, sizeof *r);
    size_t nd = c->n_devs ? c->n_devs : 1;
    r->c = c;
    r->seed = seed;
    r->sw_of = pp_xmalloc(nd * sizeof *r->sw_of);
    for (size_t d = 0; d < c->n_devs; d++) {
        r->sw_of[d] = -1;
        if (is_switch(c->devs[d].kind)) r->sw_of[d] = r->n_sw++;
    }
    r->sw_dev = pp_xmalloc((r->n_sw ? (size_t)r->n_sw : 1) * sizeof *r->sw_dev);
    for (size_t d = 0; d < c->n_devs; d++)
        if (r->sw_of[d] >= 0) r->sw_dev[r->sw_of[d]] = (int32_t)d;
    r->dist_to = pp_xcalloc(r->n_sw ? (size_t)r->n_sw : 1, sizeof *r->dist_to);
    r->mark = pp_xcalloc(nd, sizeof *r->mark);
    r->dist = pp_xmalloc(nd * sizeof *r->dist);
    r->queue = pp_xmalloc(nd * sizeof *r->queue);
    r->nvs_n = pp_xmalloc(nd * sizeof *r->nvs_n);
    for (size_t d = 0; d < nd; d++) r->nvs_n[d] = -1;
    r->cap = 1024;
    r->tab = pp_xmalloc(r->cap * sizeof *r->tab);
    for (size_t i = 0; i < r->cap; i++) r->tab[i].src = -1;
    r->front = pp_xmalloc(FRONT * sizeof *r->front);
    for (size_t i = 0; i < FRONT; i++) r->front[i].src = -1;
    *out = r;
    return 0;
}

void pp_router_free(pp_router *r) {
    if (!r) return;
    for (int32_t s = 0; s < r->n_sw; s++) free(r->dist_to[s]);
    while (r->blocks) {
        ablock *b = r->blocks;
        r->blocks = b->next;
        free(b);
    }
    free(r->dist_to);
    free(r->sw_of);
    free(r->sw_dev);
    free(r->mark);
    free(r->dist);
    free(r->queue);
    free(r->nvs_n);
    free(r->tab);
    free(r->front);
    free(r->tmp);
    free(r);
}

/* ---- the cache ---------------------------------------------------------- */

static uint64_t key_hash(int32_t src, int32_t dst, uint32_t cls) {
    return mix(((uint64_t)(uint32_t)src << 32 | (uint32_t)dst) ^ mix(cls));
}

static size_t slot_of(const pp_router *r, int32_t src, int32_t dst,
                      uint32_t cls) {
    return (size_t)key_hash(src, dst, cls) & (r->cap - 1);
}

/* The entry for (src, dst, cls), or NULL.  Entries never change once
 * inserted, so a front copy is as good as the table's. */
static const centry *lookup(pp_router *r, int32_t src, int32_t dst,
                            uint32_t cls) {
    uint64_t h = key_hash(src, dst, cls);
    centry *f = &r->front[h & (FRONT - 1)];
    if (f->src == src && f->dst == dst && f->cls == cls) return f;
    for (size_t i = (size_t)h & (r->cap - 1);; i = (i + 1) & (r->cap - 1)) {
        centry *x = &r->tab[i];
        if (x->src < 0) return NULL;
        if (x->src == src && x->dst == dst && x->cls == cls) {
            *f = *x;
            return f;
        }
    }
}

static void grow_table(pp_router *r) {
    centry *old = r->tab;
    size_t old_cap = r->cap;
    r->cap *= 2;
    r->tab = pp_xmalloc(r->cap * sizeof *r->tab);
    for (size_t i = 0; i < r->cap; i++) r->tab[i].src = -1;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].src < 0) continue;
        size_t j = slot_of(r, old[i].src, old[i].dst, old[i].cls);
        while (r->tab[j].src >= 0) j = (j + 1) & (r->cap - 1);
        r->tab[j] = old[i];
    }
    free(old);
}

/* Copies r->tmp into the arena and caches it under (src, dst, cls). */
static centry *insert(pp_router *r, int32_t src, int32_t dst, uint32_t cls) {
    size_t n = r->n_tmp;
    ablock *b = r->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = pp_xmalloc(sizeof *b + cap * sizeof b->a[0]);
        b->cap = cap;
        b->used = 0;
        b->next = r->blocks;
        r->blocks = b;
    }
    int32_t *p = b->a + b->used;
    if (n) memcpy(p, r->tmp, n * sizeof *p);
    b->used += n;

    if (2 * (r->count + 1) > r->cap) grow_table(r);
    size_t i = slot_of(r, src, dst, cls);
    while (r->tab[i].src >= 0) i = (i + 1) & (r->cap - 1);
    centry *x = &r->tab[i];
    r->count++;
    x->src = src;
    x->dst = dst;
    x->cls = cls;
    x->n = (uint32_t)n;
    x->path = p;
    x->lat_s = 0;
    x->bw_Bps = INFINITY;
    for (size_t k = 0; k < n; k++) {
        const pp_link *l = &r->c->links[p[k]];
        x->lat_s += l->lat_s;
        if (l->bw_Bps < x->bw_Bps) x->bw_Bps = l->bw_Bps;
    }
    return x;
}

/* Caches under (src, dst, ANY_CLASS) that the pair's paths depend on
 * the class. */
static void insert_chooses(pp_router *r, int32_t src, int32_t dst) {
    if (2 * (r->count + 1) > r->cap) grow_table(r);
    size_t i = slot_of(r, src, dst, ANY_CLASS);
    while (r->tab[i].src >= 0) i = (i + 1) & (r->cap - 1);
    r->count++;
    r->tab[i] = (centry){src, dst, ANY_CLASS, CHOOSES, NULL, 0, 0};
}

static void tmp_push(pp_router *r, int32_t link) {
    PP_VEC_RESERVE(r->tmp, r->cap_tmp, r->n_tmp + 1, 64);
    r->tmp[r->n_tmp++] = link;
}

/* ---- inside a server ---------------------------------------------------- */

#define KBIT(k) (1u << (k))
#define NVLINK_KINDS KBIT(PP_LINK_NVLINK)
#define NVLINK_VIA (KBIT(PP_DEV_NVSWITCH) | KBIT(PP_DEV_GPU))
#define PCIE_KINDS (KBIT(PP_LINK_PCIE) | KBIT(PP_LINK_SOCKET))
#define PCIE_VIA (KBIT(PP_DEV_PCIE_SWITCH) | KBIT(PP_DEV_CPU))

static void new_epoch(pp_router *r) {
    if (++r->epoch == 0) { /* wrapped: old marks could alias */
        memset(r->mark, 0, r->c->n_devs * sizeof *r->mark);
        r->epoch = 1;
    }
}

/* Hop distances to `to` from the devices of its server reachable over
 * links of `kinds` through devices of `via` (plus `from` itself), BFS
 * stopping once `from` is reached: every device closer than it has its
 * distance by then, which is all the walk needs. */
static bool bfs_server(pp_router *r, int32_t from, int32_t to, unsigned kinds,
                       unsigned via) {
    const pp_cluster *c = r->c;
    int32_t node = c->devs[to].node;
    size_t head = 0, tail = 0;
    new_epoch(r);
    r->mark[to] = r->epoch;
    r->dist[to] = 0;
    r->queue[tail++] = to;
    while (head < tail) {
        int32_t v = r->queue[head++];
        if (v == from) return true;
        for (int32_t i = c->out_off[v]; i < c->out_off[v + 1]; i++) {
            const pp_link *l = &c->links[c->out_ids[i]];
            int32_t w = l->dst;
            if (!(kinds & KBIT(l->kind)) || r->mark[w] == r->epoch ||
                c->devs[w].node != node)
                continue;
            r->mark[w] = r->epoch;
            r->dist[w] = r->dist[v] + 1;
            if (w == from || (via & KBIT(c->devs[w].kind)))
                r->queue[tail++] = w;
        }
    }
    return false;
}

/* Appends a shortest path from `from` to `to` inside one server, over
 * links of `kinds` through devices of `via`; false when there is none. */
static bool server_path(pp_router *r, int32_t from, int32_t to, unsigned kinds,
                        unsigned via, uint32_t cls, int32_t ks, int32_t kd) {
    const pp_cluster *c = r->c;
    if (from == to) return true;
    if (!bfs_server(r, from, to, kinds, via)) return false;
    uint32_t hop = 0;
    for (int32_t u = from; u != to; hop++) {
        uint32_t n = 0, k = 0;
        int32_t want = r->dist[u] - 1, chosen = -1;
        for (int pass = 0; pass < 2; pass++) {
            uint32_t seen = 0;
            for (int32_t i = c->out_off[u]; i < c->out_off[u + 1]; i++) {
                const pp_link *l = &c->links[c->out_ids[i]];
                int32_t w = l->dst;
                if (!(kinds & KBIT(l->kind)) || r->mark[w] != r->epoch ||
                    r->dist[w] != want ||
                    (w != to && !(via & KBIT(c->devs[w].kind))))
                    continue;
                if (pass == 1 && seen == k) {
                    chosen = c->out_ids[i];
                    break;
                }
                seen++;
            }
            if (pass == 0) {
                n = seen;
                k = pick(r, cls, ks, kd, hop, n);
            }
        }
        tmp_push(r, chosen);
        u = c->links[chosen].dst;
    }
    return true;
}

/* The HCA a device sends through: itself, the one nearest a GPU, or for
 * a CPU or PCIe switch the first HCA a BFS over PCIe reaches; -1 none. */
static int32_t endpoint_hca(pp_router *r, int32_t d) {
    const pp_cluster *c = r->c;
    pp_dev_kind k = c->devs[d].kind;
    if (k == PP_DEV_HCA) return d;
    if (k == PP_DEV_GPU) return pp_cluster_gpu_hca(c, d);
    size_t head = 0, tail = 0;
    new_epoch(r);
    r->mark[d] = r->epoch;
    r->queue[tail++] = d;
    while (head < tail) {
        int32_t v = r->queue[head++];
        if (c->devs[v].kind == PP_DEV_HCA) return v;
        if (v != d && !(PCIE_VIA & KBIT(c->devs[v].kind))) continue;
        for (int32_t i = c->out_off[v]; i < c->out_off[v + 1]; i++) {
            const pp_link *l = &c->links[c->out_ids[i]];
            if (!(PCIE_KINDS & KBIT(l->kind)) || r->mark[l->dst] == r->epoch)
                continue;
            r->mark[l->dst] = r->epoch;
            r->queue[tail++] = l->dst;
        }
    }
    return -1;
}

/* ---- the fabric --------------------------------------------------------- */

/* Hops from every switch to switch t, over switch-to-switch links. */
static const uint16_t *dist_table(pp_router *r, int32_t t) {
    if (r->dist_to[t]) return r->dist_to[t];
    const pp_cluster *c = r->c;
    uint16_t *d = pp_xmalloc((size_t)r->n_sw * sizeof *d);
    for (int32_t s = 0; s < r->n_sw; s++) d[s] = FAR;
    size_t head = 0, tail = 0;
    d[t] = 0;
    r->queue[tail++] = t;
    while (head < tail) {
        int32_t v = r->queue[head++], vd = r->sw_dev[v];
        for (int32_t i = c->out_off[vd]; i < c->out_off[vd + 1]; i++) {
            int32_t w = r->sw_of[c->links[c->out_ids[i]].dst];
            if (w < 0 || d[w] != FAR) continue;
            d[w] = (uint16_t)(d[v] + 1 < FAR ? d[v] + 1 : FAR - 1);
            r->queue[tail++] = w;
        }
    }
    r->dist_to[t] = d;
    return d;
}

/* Appends the walk from switch device a to switch device b, which must
 * be reachable (d[a] finite). */
static void fabric_walk(pp_router *r, int32_t a, int32_t b, const uint16_t *d,
                        uint32_t cls, int32_t ks, int32_t kd, uint32_t hop) {
    const pp_cluster *c = r->c;
    for (int32_t u = a; u != b; hop++) {
        int32_t want = d[r->sw_of[u]] - 1, chosen = -1;
        uint32_t n = 0, k = 0;
        for (int pass = 0; pass < 2; pass++) {
            uint32_t seen = 0;
            for (int32_t i = c->out_off[u]; i < c->out_off[u + 1]; i++) {
                int32_t w = r->sw_of[c->links[c->out_ids[i]].dst];
                if (w < 0 || d[w] != want) continue;
                if (pass == 1 && seen == k) {
                    chosen = c->out_ids[i];
                    break;
                }
                seen++;
            }
            if (pass == 0) {
                n = seen;
                k = pick(r, cls, ks, kd, hop, n);
            }
        }
        tmp_push(r, chosen);
        u = c->links[chosen].dst;
    }
}

/* The links by which an endpoint enters the fabric: its HCA's links to
 * switches (or none for a switch, which is in the fabric already). */
static size_t host_links(const pp_cluster *c, int32_t hca, int32_t *out,
                         size_t max) {
    size_t n = 0;
    for (int32_t i = c->out_off[hca]; i < c->out_off[hca + 1] && n < max; i++)
        if (is_switch(c->devs[c->links[c->out_ids[i]].dst].kind))
            out[n++] = c->out_ids[i];
    return n;
}

#define MAX_HOMES 16 /* switches one HCA is cabled to */

static int cross_path(pp_router *r, int32_t src, int32_t dst, uint32_t cls,
                      pp_error *e) {
    const pp_cluster *c = r->c;
    const char *sn = c->devs[src].name, *dn = c->devs[dst].name;
    int32_t ends[2] = {src, dst}, hca[2] = {-1, -1};
    int32_t up[2][MAX_HOMES];
    size_t n_up[2];

    for (int side = 0; side < 2; side++) {
        int32_t d = ends[side];
        if (is_switch(c->devs[d].kind)) {
            up[side][0] = -1; /* no host link: the switch itself */
            n_up[side] = 1;
            continue;
        }
        hca[side] = endpoint_hca(r, d);
        if (hca[side] < 0)
            return pp_error_set(e, PP_EINVAL,
                                "no path from %s to %s: %s has no HCA near "
                                "it",
                                sn, dn, c->devs[d].name);
        n_up[side] = host_links(c, hca[side], up[side], MAX_HOMES);
        if (n_up[side] == 0)
            return pp_error_set(e, PP_EINVAL,
                                "no path from %s to %s: %s is not cabled to "
                                "a switch",
                                sn, dn, c->devs[hca[side]].name);
    }
    /* The pair of entry and exit switches closest to each other; ties go
     * to the hash, as a multi-homed host's bonding would spread them. */
    int32_t best = INT32_MAX, ties = 0;
    const uint16_t *bd = NULL;
    size_t bi = 0, bj = 0;
    for (int pass = 0; pass < 2; pass++) {
        int32_t k = pass ? (int32_t)pick(r, cls, src, dst, 1000, (uint32_t)ties)
                         : 0,
                seen = 0;
        for (size_t j = 0; j < n_up[1]; j++) {
            int32_t ld = up[1][j] < 0 ? dst : c->links[up[1][j]].dst;
            const uint16_t *d = dist_table(r, r->sw_of[ld]);
            for (size_t i = 0; i < n_up[0]; i++) {
                int32_t ls = up[0][i] < 0 ? src : c->links[up[0][i]].dst;
                int32_t h = d[r->sw_of[ls]];
                if (pass == 0) {
                    if (h < best) {
                        best = h;
                        ties = 0;
                    }
                    ties += h == best;
                } else if (h == best && seen++ == k) {
                    bd = d;
                    bi = i;
                    bj = j;
                }
            }
        }
    }
    if (best == FAR)
        return pp_error_set(e, PP_EINVAL,
                            "no path from %s to %s: the fabric does not join "
                            "their switches",
                            sn, dn);
    if (hca[0] >= 0 &&
        !server_path(r, src, hca[0], PCIE_KINDS, PCIE_VIA, cls, src, dst))
        return pp_error_set(e, PP_EINVAL,
                            "no path from %s to %s: no PCIe path to %s", sn, dn,
                            c->devs[hca[0]].name);
    int32_t ls = src, ld = dst;
    if (up[0][bi] >= 0) {
        tmp_push(r, up[0][bi]);
        ls = c->links[up[0][bi]].dst;
    }
    if (up[1][bj] >= 0) ld = c->links[up[1][bj]].dst;
    fabric_walk(r, ls, ld, bd, cls, src, dst, 1);
    if (up[1][bj] >= 0) tmp_push(r, c->links[up[1][bj]].reverse);
    if (hca[1] >= 0 &&
        !server_path(r, hca[1], dst, PCIE_KINDS, PCIE_VIA, cls, src, dst))
        return pp_error_set(e, PP_EINVAL,
                            "no path from %s to %s: no PCIe path from %s", sn,
                            dn, c->devs[hca[1]].name);
    return 0;
}

/* Fills r->tmp with a path from src to dst. */
static int compute(pp_router *r, int32_t src, int32_t dst, uint32_t cls,
                   pp_error *e) {
    const pp_cluster *c = r->c;
    const pp_device *a = &c->devs[src], *b = &c->devs[dst];
    r->n_tmp = 0;
    if (a->node >= 0 && a->node == b->node) {
        bool nvlink = (a->kind == PP_DEV_GPU || a->kind == PP_DEV_NVSWITCH) &&
                      (b->kind == PP_DEV_GPU || b->kind == PP_DEV_NVSWITCH);
        if (nvlink &&
            server_path(r, src, dst, NVLINK_KINDS, NVLINK_VIA, cls, src, dst))
            return 0;
        r->n_tmp = 0;
        if (server_path(r, src, dst, PCIE_KINDS, PCIE_VIA, cls, src, dst))
            return 0;
        r->n_tmp = 0;
        /* No way inside the server: out through the network and back. */
    }
    return cross_path(r, src, dst, cls, e);
}

int pp_route(pp_router *r, int32_t src, int32_t dst, uint64_t flow_key,
             const int32_t **path, size_t *n, double *lat_s,
             double *bottleneck_Bps, pp_error *e) {
    static const int32_t none[1] = {-1};
    const pp_cluster *c = r->c;
    if (src < 0 || dst < 0 || (size_t)src >= c->n_devs ||
        (size_t)dst >= c->n_devs)
        return pp_error_set(e, PP_EINVAL,
                            "pp_route: device %d or %d out of range (%zu "
                            "devices)",
                            src, dst, c->n_devs);
    if (src == dst) {
        *path = none;
        *n = 0;
        *lat_s = 0;
        *bottleneck_Bps = INFINITY;
        return 0;
    }
    /* Most pairs have no choice to make on the way (a rail-optimised
     * fabric, a server's PCIe tree): pick() then returns 0 whatever the
     * class, so the walk, and the path, is the same for every class.
     * Such a pair is cached once, under ANY_CLASS, rather than once per
     * class: one probe finds it, and the cache's working set shrinks
     * accordingly.  A pair that had a choice caches a CHOOSES marker
     * there, and its paths per class as before. */
    uint32_t cls = (uint32_t)(flow_key % PP__ROUTE_CLASSES);
    const centry *x = lookup(r, src, dst, ANY_CLASS);
    if (!x) {
        r->chose = false;
        int rc = compute(r, src, dst, cls, e);
        if (rc) return rc;
        if (r->chose) {
            insert_chooses(r, src, dst);
            x = insert(r, src, dst, cls);
        } else {
            x = insert(r, src, dst, ANY_CLASS);
        }
    } else if (x->n == CHOOSES) {
        x = lookup(r, src, dst, cls);
        if (!x) {
            int rc = compute(r, src, dst, cls, e);
            if (rc) return rc;
            x = insert(r, src, dst, cls);
        }
    }
    *path = x->path;
    *n = x->n;
    *lat_s = x->lat_s;
    *bottleneck_Bps = x->bw_Bps;
    return 0;
}

/* ---- NVSwitch ways ------------------------------------------------------ */

/* The k-th NVLink of GPU g to an NVSwitch (CSR order), or -1; *count
 * receives how many it has. */
static int32_t nvs_link(const pp_cluster *c, int32_t g, int32_t k,
                        int32_t *count) {
    int32_t n = 0, found = -1;
    for (int32_t i = c->out_off[g]; i < c->out_off[g + 1]; i++) {
        const pp_link *l = &c->links[c->out_ids[i]];
        if (l->kind != PP_LINK_NVLINK ||
            c->devs[l->dst].kind != PP_DEV_NVSWITCH)
            continue;
        if (n++ == k) found = c->out_ids[i];
    }
    if (count) *count = n;
    return found;
}

int32_t pp__route_ways(pp_router *r, int32_t src, int32_t dst) {
    const pp_cluster *c = r->c;
    if (src == dst || src < 0 || dst < 0 || (size_t)src >= c->n_devs ||
        (size_t)dst >= c->n_devs)
        return 1;
    const pp_device *a = &c->devs[src], *b = &c->devs[dst];
    if (a->kind != PP_DEV_GPU || b->kind != PP_DEV_GPU || a->node != b->node)
        return 1;
    if (r->nvs_n[src] < 0) nvs_link(c, src, 0, &r->nvs_n[src]);
    if (r->nvs_n[dst] < 0) nvs_link(c, dst, 0, &r->nvs_n[dst]);
    int32_t na = r->nvs_n[src], nb = r->nvs_n[dst];
    return na >= 2 && na == nb ? na : 1;
}

int pp__route_way(pp_router *r, int32_t src, int32_t dst, int32_t k,
                  const int32_t **path, size_t *n, double *lat_s,
                  double *bottleneck_Bps, pp_error *e) {
    int32_t ways = pp__route_ways(r, src, dst);
    if (ways == 1)
        return pp_route(r, src, dst, 0, path, n, lat_s, bottleneck_Bps, e);
    if (k < 0 || k >= ways)
        return pp_error_set(e, PP_EINVAL, "pp__route_way: way %d of %d", k,
                            ways);
    const pp_cluster *c = r->c;
    uint32_t cls = WAY_CLASS | (uint32_t)k;
    const centry *x = lookup(r, src, dst, cls);
    if (!x) {
        int32_t up = nvs_link(c, src, k, NULL), down = -1;
        int32_t nvs = c->links[up].dst;
        for (int32_t i = c->out_off[nvs]; i < c->out_off[nvs + 1]; i++)
            if (c->links[c->out_ids[i]].dst == dst) down = c->out_ids[i];
        if (down < 0)
            return pp_error_set(e, PP_EINVAL, "no NVLink from %s to %s",
                                c->devs[nvs].name, c->devs[dst].name);
        r->n_tmp = 0;
        tmp_push(r, up);
        tmp_push(r, down);
        x = insert(r, src, dst, cls);
    }
    *path = x->path;
    *n = x->n;
    *lat_s = x->lat_s;
    *bottleneck_Bps = x->bw_Bps;
    return 0;
}
