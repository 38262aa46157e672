/*
 * collective_sched.c: which transfers make up each phase of a collective
 * (the machinery that runs the phases is in collective.c).
 *
 * Rings (NCCL's Ring).  A ring visits the group server by server, in the
 * order the servers first appear in the group.  The data is split over
 * `channels` rings (NCCL's channels; by default one per NIC of a server
 * when the group spans servers, one otherwise), each carrying S/channels.
 * Every inter-server hop of a ring is rail-aligned: it leaves a server from
 * GPU j and enters the next at GPU j, so both ends use HCA j (the one
 * nearest GPU j) and a rail-optimised fabric keeps the hop on rail j's
 * leaf.  Rail-alignment forces a server's entry and exit GPUs to differ,
 * so the rails form a proper colouring of the cycle of servers: channel c
 * alternates between the NIC-order positions c and c+1 (an even number of
 * servers) and uses c+2 on the last server when the number is odd.
 * Positions count in "NIC order" (GPUs owning different HCAs first: with 8
 * GPUs on 4 HCAs, 0 2 4 6 1 3 5 7), so channels 0..H-1 leave every server
 * through H different HCAs and every NIC of every server carries one ring
 * in each direction.
 *
 * Granularity.  `step`: every one of the ring's steps is a phase of n x
 * channels transfers of one chunk, S/(n channels), ending when the last
 * arrives; the steps of a reduce-scatter then charge the reduction of the
 * chunk that arrived, (S/n)/reduce_Bps (each GPU receives one S/n chunk
 * per step over all channels and must add it to its own before sending
 * the sum on).  `stream` is the pipelined steady state NCCL reaches: each
 * GPU streams all its steps' bytes to its neighbour as one transfer per
 * channel and pays the hop latency once per step, i.e. the transfer's own
 * latency plus (steps-1) hop latencies as a tail; the reductions are
 * charged once at the end, steps_rs x (S/n)/reduce_Bps.  Where nothing
 * contends both give steps x max_hop(lat + chunk/B) + steps_rs x
 * (S/n)/reduce_Bps, the ring of the closed form: the reduction is charged
 * serially, an upper bound of NCCL's kernels (which sum while data
 * streams), small wherever the network is the bottleneck.
 *
 * Trees (NCCL's Tree).  Double binary trees over the servers (NCCL's
 * ncclGetDtree: tree 0 a binary tree in in-order numbering, tree 1 the
 * same mirrored, for an even number of servers, or shifted by one for an
 * odd number, so a server that is a leaf in one is inner in the other),
 * and a chain through the GPUs inside each server ending at the GPU that
 * talks to the other servers.  Every channel runs both trees (NCCL
 * duplicates its tree channels the same way), so 2 x channels instances
 * each carry S/instances; instance i is tree i mod 2 and leaves every
 * server through NIC-order position i/2.  A NIC then carries the inner
 * node's three edges of one tree and the leaf's one edge of the other:
 * 2 S/channels each way, as much as a ring.  `stream`: all edges move
 * their bytes up and down
 * at once (the pipeline); the instance then waits the time for the first
 * byte to climb the deepest path and come back down (the tail), and the
 * busiest GPU's reductions are charged at the end.  `step`: the unpipelined
 * tree, one phase per level up (with the level's reductions) and one per
 * level down.  The default is stream, what NCCL runs.
 *
 * The others.  Broadcast: each channel's ring cut open at the root, a
 * pipeline; stream sends S/channels down every hop at once, the hop j
 * transfer waiting the latency of the j hops before it; step moves
 * 8 (n-1) chunks through the chain, one hop per phase (the pipeline's fill
 * and a latency per chunk included).  AlltoAll: every ordered pair moves
 * S/n; stream starts all n(n-1) at once (NCCL's grouped sends), step is
 * the shifted exchange (phase k: rank i sends to i+k).  SendRecv: rank 0
 * to rank 1.  Hier, naive, ps and sharp are described where they are
 * built.
 *
 * PP_GRAN_AUTO is step up to 64 GPUs and stream above for the ring family
 * (AllReduce, AllGather, ReduceScatter) and hier, where the two agree
 * uncontended and step shows contention step by step; it is stream for
 * broadcast, tree and all-to-all, which NCCL pipelines or issues at once.
 */
#include "collective_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The ring's closed form where nothing contends (the top comment):
 * steps x (lat + chunk / B) + steps_rs x chunk / reduce_Bps, chunk = S/n.
 * One ring (one channel); with C channels on C disjoint paths pass
 * B x C. */
double pp_coll_ring_time_s(pp_coll_op op, double n, double S, double B,
                           double lat, double reduce_Bps) {
    if (n <= 1 || S <= 0) return 0;
    double chunk = S / n, steps, rs;
    switch (op) {
    case PP_COLL_ALLREDUCE: steps = 2 * (n - 1), rs = n - 1; break;
    case PP_COLL_REDUCESCATTER: steps = n - 1, rs = n - 1; break;
    case PP_COLL_ALLGATHER: steps = n - 1, rs = 0; break;
    default: return NAN; /* not a ring-family operation */
    }
    return steps * (lat + chunk / B) + rs * chunk / reduce_Bps;
}

/* Groups larger than this run `stream` under PP_GRAN_AUTO: 2(n-1) phases
 * of n x channels transfers are exact but cost O(n^2) work, and the two
 * agree where nothing contends. */
#define STEP_MAX_GPUS 64
/* Broadcast in step mode pipelines this many chunks per hop of the chain;
 * the pipeline's fill then costs 1/8 of the transfer. */
#define BCAST_CHUNKS_PER_HOP 8
/* Transfers one phase may start at once (an all-to-all of 2,048 GPUs):
 * beyond that the phase alone holds gigabytes of transfers and flows. */
#define MAX_PHASE_XFERS ((size_t)1 << 22)

/* ------------------------------------------------------------------------
 * The group by server.
 * ---------------------------------------------------------------------- */
typedef struct mkey {
    int32_t idx, hca, local, rank;
} mkey;

static int mkey_by_hca(const void *a, const void *b) {
    const mkey *x = a, *y = b;
    if (x->hca != y->hca) return x->hca < y->hca ? -1 : 1;
    return (x->local > y->local) - (x->local < y->local);
}

static int mkey_by_idx(const void *a, const void *b) {
    const mkey *x = a, *y = b;
    if (x->idx != y->idx) return x->idx < y->idx ? -1 : 1;
    if (x->hca != y->hca) return x->hca < y->hca ? -1 : 1;
    return (x->local > y->local) - (x->local < y->local);
}

int pp__coll_group(pp__coll *k, pp_error *e) {
    const pp_cluster_info *info = pp_cluster_info_get(k->c);
    size_t nd;
    const pp_device *devs = pp_cluster_devices(k->c, &nd);
    int32_t nodes = info->nodes > 0 ? info->nodes : 1;
    int32_t *gi = pp_xmalloc((size_t)nodes * sizeof *gi);
    int32_t *grp = pp_xmalloc(k->n * sizeof *grp);
    for (int32_t i = 0; i < nodes; i++) gi[i] = -1;
    int32_t m = 0;
    for (size_t i = 0; i < k->n; i++) {
        int32_t node = devs[k->dev[i]].node;
        if (node < 0 || node >= nodes) node = 0;
        if (gi[node] < 0) gi[node] = m++;
        grp[i] = gi[node];
    }
    k->m = m;
    k->off = pp_xcalloc((size_t)m + 1, sizeof *k->off);
    k->mem = pp_xmalloc(k->n * sizeof *k->mem);
    for (size_t i = 0; i < k->n; i++) k->off[grp[i] + 1]++;
    for (int32_t g = 0; g < m; g++) k->off[g + 1] += k->off[g];
    int32_t *fill = pp_xmalloc(((size_t)m + 1) * sizeof *fill);
    memcpy(fill, k->off, ((size_t)m + 1) * sizeof *fill);
    for (size_t i = 0; i < k->n; i++) k->mem[fill[grp[i]]++] = (int32_t)i;

    /* NIC order inside each server. */
    mkey *key = pp_xmalloc(k->n * sizeof *key);
    for (int32_t g = 0; g < m; g++) {
        int32_t a = k->off[g], cnt = k->off[g + 1] - a;
        for (int32_t j = 0; j < cnt; j++) {
            int32_t r = k->mem[a + j], d = k->dev[r];
            int32_t h = pp_cluster_gpu_hca(k->c, d);
            key[j] = (mkey){0, h >= 0 ? devs[h].local : -1, devs[d].local, r};
        }
        qsort(key, (size_t)cnt, sizeof *key, mkey_by_hca);
        for (int32_t j = 0; j < cnt; j++)
            key[j].idx =
                j > 0 && key[j].hca == key[j - 1].hca ? key[j - 1].idx + 1 : 0;
        qsort(key, (size_t)cnt, sizeof *key, mkey_by_idx);
        for (int32_t j = 0; j < cnt; j++) k->mem[a + j] = key[j].rank;
    }
    free(key);
    free(fill);
    free(grp);
    free(gi);
    (void)e;
    return 0;
}

static inline int32_t gsize(const pp__coll *k, int32_t g) {
    return k->off[g + 1] - k->off[g];
}
static inline int32_t gmem(const pp__coll *k, int32_t g, int64_t pos) {
    int32_t s = gsize(k, g);
    return k->mem[k->off[g] + (int32_t)(pos % s)];
}

/* ------------------------------------------------------------------------
 * Rings.
 * ---------------------------------------------------------------------- */
static void build_rings(pp__coll *k) {
    int32_t n = (int32_t)k->n, m = k->m;
    k->ring = pp_xmalloc((size_t)k->C * k->n * sizeof *k->ring);
    for (int c = 0; c < k->C; c++) {
        int32_t *r = k->ring + (size_t)c * k->n, len = 0;
        if (m == 1) {
            for (int32_t j = 0; j < n; j++) r[len++] = gmem(k, 0, c + j);
            continue;
        }
        for (int32_t g = 0; g < m; g++) {
            /* Entry position of server g and of the next one (colouring). */
            int32_t gn = (g + 1) % m;
            int64_t pe = c + ((m % 2 == 0 || g < m - 1) ? (g & 1) : 2);
            int64_t px = c + ((m % 2 == 0 || gn < m - 1) ? (gn & 1) : 2);
            int32_t s = gsize(k, g);
            int32_t ie = (int32_t)(pe % s), ix = (int32_t)(px % s);
            if (s > 1 && ix == ie) ix = (ie + 1) % s; /* cannot align */
            r[len++] = gmem(k, g, ie);
            for (int32_t j = 1; j < s; j++) {
                int32_t q = (ie + j) % s;
                if (q != ix) r[len++] = gmem(k, g, q);
            }
            if (s > 1) r[len++] = gmem(k, g, ix);
        }
    }
}

static void ring_steps(const pp__coll *k, int64_t *rs, int64_t *ag) {
    int64_t s = (int64_t)k->n - 1;
    *rs = k->op == PP_COLL_ALLGATHER ? 0 : s;
    *ag = k->op == PP_COLL_REDUCESCATTER ? 0 : s;
}

static int gen_ring(pp__coll *k, int64_t phase, pp_error *e) {
    int64_t rs, ag;
    ring_steps(k, &rs, &ag);
    size_t n = k->n;
    double chunk = k->S / ((double)n * k->C), red = k->S / (double)n;
    for (int c = 0; c < k->C; c++) {
        const int32_t *r = k->ring + (size_t)c * n;
        k->key = (uint64_t)c;
        for (size_t i = 0; i < n; i++) {
            int32_t a = r[i], b = r[(i + 1) % n];
            if (k->gran == PP_GRAN_STEP) {
                pp__coll_add(k, a, b, chunk, 0);
                continue;
            }
            double lat;
            int rc = pp__coll_lat(k, a, b, &lat, e);
            if (rc) return rc;
            pp__coll_add(k, a, b, (double)(rs + ag) * chunk,
                         (double)(rs + ag - 1) * lat);
        }
    }
    if (k->gran == PP_GRAN_STEP)
        k->post_s = phase < rs ? red / k->reduce_Bps : 0;
    else
        k->post_s = (double)rs * red / k->reduce_Bps;
    return 0;
}

/* Broadcast: the ring of each channel cut open at the root. */
static int32_t chain_at(const pp__coll *k, int c, int64_t j) {
    const int32_t *r = k->ring + (size_t)c * k->n;
    size_t pos = 0;
    while (r[pos] != k->root) pos++;
    return r[(pos + (size_t)j) % k->n];
}

static int gen_bcast(pp__coll *k, int64_t phase, pp_error *e) {
    int64_t n = (int64_t)k->n;
    for (int c = 0; c < k->C; c++) {
        k->key = (uint64_t)c;
        if (k->gran == PP_GRAN_STREAM) {
            double upstream = 0; /* first byte's latency to this hop */
            for (int64_t j = 0; j + 1 < n; j++) {
                int32_t a = chain_at(k, c, j), b = chain_at(k, c, j + 1);
                double lat;
                int rc = pp__coll_lat(k, a, b, &lat, e);
                if (rc) return rc;
                pp__coll_add(k, a, b, k->S / k->C, upstream);
                upstream += lat;
            }
            continue;
        }
        int64_t K = k->bcast_chunks;
        int64_t lo = phase - K + 1 > 0 ? phase - K + 1 : 0;
        int64_t hi = phase < n - 2 ? phase : n - 2;
        for (int64_t j = lo; j <= hi; j++)
            pp__coll_add(k, chain_at(k, c, j), chain_at(k, c, j + 1),
                         k->S / ((double)k->C * (double)K), 0);
    }
    return 0;
}

/* NCCL's PXN (NCCL 2.12 on, by default; NCCL_PXN_DISABLE): a GPU sends
 * to a GPU of another server through the GPU of its own server that sits
 * on the destination's rail, over NVLink, and that GPU's NIC sends it on.
 * On a rail-optimised fabric the transfer then stays on one rail's leaf
 * instead of crossing the spines, where an all-to-all's flows collide on
 * the hashed paths.  NVIDIA's statement of what an all-to-all reaches
 * (nccl-tests issues #130 and #267: one NIC's bandwidth, about 48 GB/s at
 * NDR, times N/(N-1) over N servers) assumes it.  Built where the
 * servers' GPUs are NVLink-connected and own NICs; the relay must be a
 * rank of the group (NCCL relays through its own ranks' proxies). */
static void build_relays(pp__coll *k) {
    const pp_cluster_info *info = pp_cluster_info_get(k->c);
    int32_t R = info->hcas_per_node;
    if (k->no_pxn || k->m < 2 || R <= 0) return;
    size_t nd, nl, no;
    const pp_device *devs = pp_cluster_devices(k->c, &nd);
    const pp_link *links = pp_cluster_links(k->c, &nl);
    const int32_t *out = pp_cluster_out(k->c, k->dev[0], &no);
    bool nvlink = false;
    for (size_t i = 0; i < no; i++)
        nvlink = nvlink || links[out[i]].kind == PP_LINK_NVLINK;
    if (!nvlink) return;
    size_t n = k->n;
    k->srv_of = pp_xmalloc(n * sizeof *k->srv_of);
    k->rail_of = pp_xmalloc(n * sizeof *k->rail_of);
    k->relay = pp_xmalloc((size_t)k->m * (size_t)R * sizeof *k->relay);
    k->n_rail = R;
    for (size_t i = 0; i < (size_t)k->m * (size_t)R; i++) k->relay[i] = -1;
    for (int32_t g = 0; g < k->m; g++)
        for (int32_t x = k->off[g]; x < k->off[g + 1]; x++) {
            int32_t r = k->mem[x];
            int32_t hca = pp_cluster_gpu_hca(k->c, k->dev[r]);
            int32_t rail = hca >= 0 ? devs[hca].local : -1;
            k->srv_of[r] = g;
            k->rail_of[r] = rail >= 0 && rail < R ? rail : -1;
            if (k->rail_of[r] >= 0 && k->relay[g * R + rail] < 0)
                k->relay[g * R + rail] = r;
        }
}

/* The device rank i relays a transfer to rank j through, -1: direct. */
static int32_t relay_for(const pp__coll *k, int32_t i, int32_t j) {
    if (!k->relay || k->srv_of[i] == k->srv_of[j]) return -1;
    int32_t rj = k->rail_of[j];
    if (rj < 0 || rj == k->rail_of[i]) return -1;
    int32_t r = k->relay[k->srv_of[i] * k->n_rail + rj];
    return r >= 0 && r != i ? k->dev[r] : -1;
}

static int gen_alltoall(pp__coll *k, int64_t phase, pp_error *e) {
    (void)e;
    int32_t n = (int32_t)k->n;
    double b = k->S / n;
    if (k->gran == PP_GRAN_STEP) { /* shifted pairwise exchange */
        int32_t shift = (int32_t)phase + 1;
        for (int32_t i = 0; i < n; i++) {
            int32_t j = (i + shift) % n;
            pp__coll_add_via(k, i, relay_for(k, i, j), j, b);
        }
        return 0;
    }
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = 0; j < n; j++)
            if (i != j) pp__coll_add_via(k, i, relay_for(k, i, j), j, b);
    return 0;
}

static int gen_sendrecv(pp__coll *k, int64_t phase, pp_error *e) {
    (void)phase;
    (void)e;
    pp__coll_add(k, 0, 1, k->S, 0);
    return 0;
}

/* ------------------------------------------------------------------------
 * Double binary trees (NCCL src/graph/trees.cc, ncclGetBtree/ncclGetDtree).
 * ---------------------------------------------------------------------- */
static int32_t btree_parent(int32_t r, int32_t m) {
    if (r == 0) return -1;
    int32_t bit = r & -r;
    int32_t up = (r ^ bit) | (bit << 1);
    if (up >= m) up = r ^ bit;
    return up;
}

static int32_t dtree_parent(int t, int32_t r, int32_t m) {
    if (t == 0) return btree_parent(r, m);
    if (m % 2) { /* shift by one */
        int32_t p = btree_parent((r - 1 + m) % m, m);
        return p < 0 ? -1 : (p + 1) % m;
    }
    int32_t p = btree_parent(m - 1 - r, m); /* mirror */
    return p < 0 ? -1 : m - 1 - p;
}

static void build_trees(pp__coll *k) {
    size_t n = k->n;
    int32_t m = k->m;
    k->inst = 2 * k->C;
    size_t tot = (size_t)k->inst * n;
    k->parent = pp_xmalloc(tot * sizeof *k->parent);
    k->depth = pp_xmalloc(tot * sizeof *k->depth);
    k->height = pp_xcalloc(tot, sizeof *k->height);
    int32_t *stack = pp_xmalloc(n * sizeof *stack);
    int32_t *cnt = pp_xmalloc((n + 2) * sizeof *cnt);
    int32_t *order = pp_xmalloc(n * sizeof *order);
    k->hmax = k->dmax = 0;
    for (int32_t i = 0; i < k->inst; i++) {
        int32_t *par = k->parent + (size_t)i * n;
        int32_t *dep = k->depth + (size_t)i * n;
        int32_t *hgt = k->height + (size_t)i * n;
        for (int32_t g = 0; g < m; g++) {
            int32_t s = gsize(k, g), pi = (i / 2) % s, port = gmem(k, g, pi);
            for (int32_t j = 1; j < s; j++)
                par[gmem(k, g, pi + j)] =
                    j < s - 1 ? gmem(k, g, pi + j + 1) : port;
            int32_t pg = dtree_parent(i % 2, g, m);
            par[port] = pg < 0 ? -1 : gmem(k, pg, i / 2);
        }
        /* Depths by walking up to a known one. */
        for (size_t v = 0; v < n; v++) dep[v] = -1;
        for (size_t v = 0; v < n; v++) {
            int32_t sp = 0, u = (int32_t)v;
            while (dep[u] < 0 && par[u] >= 0) {
                stack[sp++] = u;
                u = par[u];
            }
            if (dep[u] < 0) dep[u] = 0; /* the root */
            int32_t d = dep[u];
            while (sp > 0) dep[stack[--sp]] = ++d;
        }
        /* Heights, deepest first (counting sort by depth). */
        memset(cnt, 0, (n + 2) * sizeof *cnt);
        for (size_t v = 0; v < n; v++) cnt[dep[v] + 1]++;
        for (size_t d = 0; d <= n; d++) cnt[d + 1] += cnt[d];
        for (size_t v = 0; v < n; v++) order[cnt[dep[v]]++] = (int32_t)v;
        for (size_t q = n; q-- > 0;) {
            int32_t v = order[q];
            if (par[v] >= 0 && hgt[par[v]] < hgt[v] + 1)
                hgt[par[v]] = hgt[v] + 1;
            if (dep[v] > k->dmax) k->dmax = dep[v];
            if (par[v] < 0 && hgt[v] > k->hmax) k->hmax = hgt[v];
        }
    }
    free(order);
    free(cnt);
    free(stack);
    k->acc = pp_xcalloc(n, sizeof *k->acc);
}

/* The largest reduction any rank does in this phase, in seconds. */
static double max_reduce(pp__coll *k) {
    double worst = 0;
    for (size_t v = 0; v < k->n; v++) {
        if (k->acc[v] > worst) worst = k->acc[v];
        k->acc[v] = 0;
    }
    return worst / k->reduce_Bps;
}

static int gen_tree(pp__coll *k, int64_t phase, pp_error *e) {
    size_t n = k->n;
    double b = k->S / k->inst;
    if (k->gran == PP_GRAN_STEP) {
        bool up = phase < k->hmax;
        int32_t level = up ? (int32_t)phase : (int32_t)(phase - k->hmax + 1);
        for (int32_t i = 0; i < k->inst; i++) {
            const int32_t *par = k->parent + (size_t)i * n;
            k->key = (uint64_t)i;
            const int32_t *sel = (up ? k->height : k->depth) + (size_t)i * n;
            for (size_t v = 0; v < n; v++) {
                if (par[v] < 0 || sel[v] != level) continue;
                if (up) {
                    pp__coll_add(k, (int32_t)v, par[v], b, 0);
                    k->acc[par[v]] += b;
                } else {
                    pp__coll_add(k, par[v], (int32_t)v, b, 0);
                }
            }
        }
        k->post_s = up ? max_reduce(k) : 0;
        return 0;
    }
    /* Stream: latency sums along the paths (parents before children:
     * walk in order of depth). */
    double *lu = pp_xmalloc(n * sizeof *lu), *ld = pp_xmalloc(n * sizeof *ld);
    double *hu = pp_xmalloc(n * sizeof *hu), *hd = pp_xmalloc(n * sizeof *hd);
    int rc = 0;
    for (int32_t i = 0; i < k->inst && !rc; i++) {
        const int32_t *par = k->parent + (size_t)i * n;
        const int32_t *dep = k->depth + (size_t)i * n;
        double mu = 0, md = 0;
        k->key = (uint64_t)i;
        for (int32_t d = 0; d <= k->dmax && !rc; d++)
            for (size_t v = 0; v < n && !rc; v++) {
                if (dep[v] != d) continue;
                if (par[v] < 0) {
                    lu[v] = ld[v] = hu[v] = hd[v] = 0;
                    continue;
                }
                rc = pp__coll_lat(k, (int32_t)v, par[v], &hu[v], e);
                if (!rc) rc = pp__coll_lat(k, par[v], (int32_t)v, &hd[v], e);
                lu[v] = lu[par[v]] + hu[v];
                ld[v] = ld[par[v]] + hd[v];
                if (lu[v] > mu) mu = lu[v];
                if (ld[v] > md) md = ld[v];
            }
        for (size_t v = 0; v < n && !rc; v++) {
            if (par[v] < 0) continue;
            pp__coll_add(k, (int32_t)v, par[v], b, mu + md - hu[v]);
            pp__coll_add(k, par[v], (int32_t)v, b, mu + md - hd[v]);
            k->acc[par[v]] += b;
        }
    }
    free(lu);
    free(ld);
    free(hu);
    free(hd);
    k->post_s = max_reduce(k);
    return rc;
}

/* ------------------------------------------------------------------------
 * Hierarchical AllReduce: reduce-scatter inside each server (a ring over
 * its GPUs), an AllReduce of S/g over the servers on g rings, one per
 * local position (rail), then an all-gather inside each server.  Every
 * server holds the same number g of the group's GPUs.
 * ---------------------------------------------------------------------- */
typedef struct hier_part {
    int which;    /* 0 intra RS, 1 inter AllReduce, 2 intra AG */
    int64_t step; /* step within it (step mode) */
} hier_part;

static hier_part hier_locate(const pp__coll *k, int64_t phase) {
    int64_t g = gsize(k, 0), m = k->m;
    bool st = k->gran == PP_GRAN_STEP;
    int64_t len[3] = {g > 1 ? (st ? g - 1 : 1) : 0,
                      m > 1 ? (st ? 2 * (m - 1) : 1) : 0,
                      g > 1 ? (st ? g - 1 : 1) : 0};
    hier_part p = {0, phase};
    while (p.which < 2 && p.step >= len[p.which]) p.step -= len[p.which++];
    return p;
}

static int64_t hier_phases(const pp__coll *k) {
    int64_t g = gsize(k, 0), m = k->m;
    if (k->gran == PP_GRAN_STREAM) return (g > 1) * 2 + (m > 1);
    return (g > 1 ? 2 * (g - 1) : 0) + (m > 1 ? 2 * (m - 1) : 0);
}

static int gen_hier(pp__coll *k, int64_t phase, pp_error *e) {
    hier_part p = hier_locate(k, phase);
    int32_t g = gsize(k, 0), m = k->m;
    bool st = k->gran == PP_GRAN_STEP;
    if (p.which != 1) { /* a ring inside every server */
        int64_t steps = g - 1;
        double chunk = k->S / g;
        for (int32_t s = 0; s < m; s++)
            for (int32_t j = 0; j < g; j++) {
                int32_t a = gmem(k, s, j), b = gmem(k, s, j + 1);
                k->key = (uint64_t)j;
                double lat = 0;
                if (!st) {
                    int rc = pp__coll_lat(k, a, b, &lat, e);
                    if (rc) return rc;
                }
                pp__coll_add(k, a, b, st ? chunk : (double)steps * chunk,
                             st ? 0 : (double)(steps - 1) * lat);
            }
        if (p.which == 0)
            k->post_s = (st ? 1.0 : (double)steps) * chunk / k->reduce_Bps;
        return 0;
    }
    int64_t steps = 2 * ((int64_t)m - 1), rs = m - 1;
    double chunk = k->S / ((double)g * m);
    for (int32_t j = 0; j < g; j++)
        for (int32_t s = 0; s < m; s++) {
            int32_t a = gmem(k, s, j), b = gmem(k, (s + 1) % m, j);
            k->key = (uint64_t)j;
            double lat = 0;
            if (!st) {
                int rc = pp__coll_lat(k, a, b, &lat, e);
                if (rc) return rc;
            }
            pp__coll_add(k, a, b, st ? chunk : (double)steps * chunk,
                         st ? 0 : (double)(steps - 1) * lat);
        }
    if (st)
        k->post_s = p.step < rs ? chunk / k->reduce_Bps : 0;
    else
        k->post_s = (double)rs * chunk / k->reduce_Bps;
    return 0;
}

/* ------------------------------------------------------------------------
 * Naive (gather to the root, sum, broadcast) and the parameter server
 * (every worker pushes S to the server, which sums and sends S back).
 * ---------------------------------------------------------------------- */
static int gen_naive(pp__coll *k, int64_t phase, pp_error *e) {
    (void)e;
    int32_t n = (int32_t)k->n, r = k->root;
    bool gather = k->op == PP_COLL_ALLREDUCE && phase == 0;
    for (int32_t i = 0; i < n; i++) {
        if (i == r) continue;
        if (gather)
            pp__coll_add(k, i, r, k->S, 0);
        else
            pp__coll_add(k, r, i, k->S, 0);
    }
    if (gather) k->post_s = (double)(n - 1) * k->S / k->reduce_Bps;
    return 0;
}

static int gen_ps(pp__coll *k, int64_t phase, pp_error *e) {
    (void)e;
    int32_t n = (int32_t)k->n, srv = n;
    for (int32_t i = 0; i < n; i++) {
        if (phase == 0)
            pp__coll_add(k, i, srv, k->S, 0);
        else
            pp__coll_add(k, srv, i, k->S, 0);
    }
    if (phase == 0) k->post_s = (double)n * k->S / k->reduce_Bps;
    return 0;
}

/* ------------------------------------------------------------------------
 * SHARP (NCCL's CollNet): the switches reduce.  The aggregation tree
 * follows the fabric: each GPU's parent is the leaf behind its nearest
 * HCA, each switch's parent the switch its first uplink reaches, up to one
 * switch at the top (SHARP's aggregation manager builds such trees).  Every
 * endpoint streams S to its parent and receives the S bytes of the result,
 * all at once: the switches reduce as the data passes, so each GPU's
 * injection link, and every link of the tree, carries S each way once and
 * the algorithm bandwidth approaches the link rate, twice what a ring
 * reaches.  Transfers wait, as their tail, for the first byte to climb
 * the deepest path and come back down.  No GPU sums anything.
 * k->parent[e] is endpoint e's parent endpoint, -1 at the top.
 * ---------------------------------------------------------------------- */
static int32_t host_leaf(const pp_cluster *c, int32_t hca) {
    size_t no, nl;
    const int32_t *out = pp_cluster_out(c, hca, &no);
    const pp_link *links = pp_cluster_links(c, &nl);
    for (size_t i = 0; i < no; i++)
        if (links[out[i]].kind == PP_LINK_HOST) return links[out[i]].dst;
    return -1;
}

static int32_t upper_switch(const pp_cluster *c, int32_t sw) {
    size_t no, nl, nd;
    const int32_t *out = pp_cluster_out(c, sw, &no);
    const pp_link *links = pp_cluster_links(c, &nl);
    const pp_device *devs = pp_cluster_devices(c, &nd);
    for (size_t i = 0; i < no; i++) {
        const pp_link *l = &links[out[i]];
        if (l->kind == PP_LINK_FABRIC && devs[l->dst].kind > devs[sw].kind)
            return l->dst;
    }
    return -1;
}

typedef struct sharp_build {
    int32_t *ep; /* device -> endpoint, -1 */
    size_t cap;
} sharp_build;

static int32_t sharp_endpoint(pp__coll *k, sharp_build *b, int32_t dev) {
    if (b->ep[dev] >= 0) return b->ep[dev];
    if (k->n_dev == b->cap) {
        b->cap *= 2;
        k->dev = pp_xrealloc(k->dev, b->cap * sizeof *k->dev);
        k->parent = pp_xrealloc(k->parent, b->cap * sizeof *k->parent);
    }
    b->ep[dev] = (int32_t)k->n_dev;
    k->parent[k->n_dev] = -2; /* not climbed yet */
    k->dev[k->n_dev++] = dev;
    return b->ep[dev];
}

static int plan_sharp(pp__coll *k, pp_error *e) {
    size_t nd;
    const pp_device *devs = pp_cluster_devices(k->c, &nd);
    sharp_build b = {pp_xmalloc(nd * sizeof *b.ep), k->n + 8};
    for (size_t d = 0; d < nd; d++) b.ep[d] = -1;
    k->dev = pp_xrealloc(k->dev, b.cap * sizeof *k->dev);
    k->parent = pp_xmalloc(b.cap * sizeof *k->parent);
    int rc = 0;
    for (size_t i = 0; i < k->n && !rc; i++) {
        int32_t h = pp_cluster_gpu_hca(k->c, k->dev[i]);
        int32_t leaf = h >= 0 ? host_leaf(k->c, h) : -1;
        if (leaf < 0)
            rc = pp_error_set(e, PP_EINVAL,
                              "sharp: %s has no HCA on a switch to reduce "
                              "in",
                              devs[k->dev[i]].name);
        else {
            int32_t ep = sharp_endpoint(k, &b, leaf); /* may move parent */
            k->parent[i] = ep;
        }
    }
    /* Climb; endpoints appended while climbing are climbed in turn. */
    int32_t root = -1;
    for (size_t v = k->n; v < k->n_dev && !rc; v++) {
        int32_t up = upper_switch(k->c, k->dev[v]);
        int32_t ep = up >= 0 ? sharp_endpoint(k, &b, up) : -1;
        k->parent[v] = ep;
    }
    /* A fabric whose first uplinks do not meet at one top: hang the other
     * tops under the first (their traffic is routed there). */
    for (size_t v = k->n; v < k->n_dev && !rc; v++) {
        if (k->parent[v] != -1) continue;
        if (root < 0)
            root = (int32_t)v;
        else
            k->parent[v] = root;
    }
    free(b.ep);
    return rc;
}

/* Latency from endpoint v up to the top (dir 0) or down from it (dir 1). */
static int sharp_path_lat(pp__coll *k, int32_t v, int dir, double *out,
                          pp_error *e) {
    double sum = 0, lat;
    for (int32_t p; (p = k->parent[v]) >= 0; v = p) {
        int rc = dir == 0 ? pp__coll_lat(k, v, p, &lat, e)
                          : pp__coll_lat(k, p, v, &lat, e);
        if (rc) return rc;
        sum += lat;
    }
    *out = sum;
    return 0;
}

static int gen_sharp(pp__coll *k, int64_t phase, pp_error *e) {
    (void)phase;
    double mu = 0, md = 0, up, dn;
    int rc = 0;
    for (size_t v = 0; v < k->n && !rc; v++) { /* GPUs are the deepest */
        rc = sharp_path_lat(k, (int32_t)v, 0, &up, e);
        if (!rc) rc = sharp_path_lat(k, (int32_t)v, 1, &dn, e);
        if (up > mu) mu = up;
        if (dn > md) md = dn;
    }
    for (size_t v = 0; v < k->n_dev && !rc; v++) {
        int32_t p = k->parent[v];
        if (p < 0) continue;
        rc = pp__coll_lat(k, (int32_t)v, p, &up, e);
        if (!rc) rc = pp__coll_lat(k, p, (int32_t)v, &dn, e);
        if (rc) break;
        pp__coll_add(k, (int32_t)v, p, k->S, 0);
        pp__coll_add(k, p, (int32_t)v, k->S, mu + md - dn);
    }
    return rc;
}

/* ------------------------------------------------------------------------
 * Choosing the schedule.
 * ---------------------------------------------------------------------- */
static int only(pp__coll *k, pp_coll_op op, pp_error *e) {
    if (k->op == op) return 0;
    return pp_error_set(e, PP_EINVAL,
                        "collective: the %s algorithm implements %s only, "
                        "not %s",
                        pp_coll_algo_name(k->algo), pp_coll_op_name(op),
                        pp_coll_op_name(k->op));
}

int pp__coll_plan(pp__coll *k, pp_error *e) {
    const pp_cluster_info *info = pp_cluster_info_get(k->c);
    int64_t n = (int64_t)k->n;
    if (k->C == 0) /* NCCL opens a channel per NIC when it leaves the server */
        k->C = k->m > 1 && info->hcas_per_node > 0 ? info->hcas_per_node : 1;
    pp_granularity auto_g = n <= STEP_MAX_GPUS ? PP_GRAN_STEP : PP_GRAN_STREAM;
    bool step;
    int rc = 0;

    switch (k->algo) {
    case PP_ALGO_RING:
        switch (k->op) {
        case PP_COLL_ALLREDUCE:
        case PP_COLL_ALLGATHER:
        case PP_COLL_REDUCESCATTER: {
            if (k->gran == PP_GRAN_AUTO) k->gran = auto_g;
            build_rings(k);
            int64_t rs, ag;
            ring_steps(k, &rs, &ag);
            k->gen = gen_ring;
            k->n_phases = k->gran == PP_GRAN_STEP ? rs + ag : 1;
            break;
        }
        case PP_COLL_BROADCAST:
            if (k->gran == PP_GRAN_AUTO) k->gran = PP_GRAN_STREAM;
            build_rings(k);
            k->bcast_chunks = BCAST_CHUNKS_PER_HOP * (n - 1);
            k->gen = gen_bcast;
            k->n_phases = k->gran == PP_GRAN_STEP ? k->bcast_chunks + n - 2 : 1;
            break;
        case PP_COLL_ALLTOALL:
            /* NCCL's all-to-all is grouped sends and receives: all at once. */
            if (k->gran == PP_GRAN_AUTO) k->gran = PP_GRAN_STREAM;
            if (k->gran == PP_GRAN_STREAM &&
                (size_t)n * (size_t)(n - 1) > MAX_PHASE_XFERS)
                return pp_error_set(e, PP_EINVAL,
                                    "collective: alltoall on %lld GPUs is "
                                    "%lld transfers at once; use the step "
                                    "granularity (one shift per step)",
                                    (long long)n, (long long)(n * (n - 1)));
            build_relays(k);
            k->gen = gen_alltoall;
            k->n_phases = k->gran == PP_GRAN_STEP ? n - 1 : 1;
            break;
        case PP_COLL_SENDRECV:
            if (k->gran == PP_GRAN_AUTO) k->gran = PP_GRAN_STREAM;
            k->gen = gen_sendrecv;
            k->n_phases = 1;
            break;
        default:
            return pp_error_set(e, PP_EINVAL, "collective: unknown operation");
        }
        break;
    case PP_ALGO_TREE:
        if ((rc = only(k, PP_COLL_ALLREDUCE, e))) return rc;
        if (k->gran == PP_GRAN_AUTO) k->gran = PP_GRAN_STREAM;
        build_trees(k);
        k->gen = gen_tree;
        k->n_phases = k->gran == PP_GRAN_STEP ? k->hmax + k->dmax : 1;
        break;
    case PP_ALGO_HIER:
        if ((rc = only(k, PP_COLL_ALLREDUCE, e))) return rc;
        for (int32_t g = 1; g < k->m; g++)
            if (gsize(k, g) != gsize(k, 0))
                return pp_error_set(e, PP_EINVAL,
                                    "collective: hier needs the same number "
                                    "of GPUs on every server (%d on the "
                                    "first, %d on server %d of the group)",
                                    (int)gsize(k, 0), (int)gsize(k, g), (int)g);
        if (k->gran == PP_GRAN_AUTO) k->gran = auto_g;
        k->gen = gen_hier;
        k->n_phases = hier_phases(k);
        break;
    case PP_ALGO_NAIVE:
        step = k->op == PP_COLL_ALLREDUCE;
        if (!step && k->op != PP_COLL_BROADCAST)
            return pp_error_set(e, PP_EINVAL,
                                "collective: the naive algorithm implements "
                                "allreduce and broadcast only, not %s",
                                pp_coll_op_name(k->op));
        k->gran = PP_GRAN_STEP;
        k->gen = gen_naive;
        k->n_phases = step ? 2 : 1;
        break;
    case PP_ALGO_PS:
        if ((rc = only(k, PP_COLL_ALLREDUCE, e))) return rc;
        k->gran = PP_GRAN_STEP;
        k->gen = gen_ps;
        k->n_phases = 2;
        break;
    case PP_ALGO_SHARP:
        if ((rc = only(k, PP_COLL_ALLREDUCE, e))) return rc;
        k->gran = PP_GRAN_STREAM;
        if ((rc = plan_sharp(k, e))) return rc;
        k->gen = gen_sharp;
        k->n_phases = 1;
        break;
    default:
        return pp_error_set(e, PP_EINVAL,
                            "collective: the %s algorithm is not simulated "
                            "(podplan exec runs it)",
                            pp_coll_algo_name(k->algo));
    }
    return 0;
}
