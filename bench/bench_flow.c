/*
 * bench_flow.c: the flow network's cost as the simulation grows.
 *
 * A synthetic two-level fabric: one endpoint ("GPU") per host port, 16 per
 * leaf, every leaf wired to 8 spines with half the hosts' bandwidth (2:1
 * over-subscribed), one directed link per direction, ECMP by a hash of
 * (source, destination).
 *
 * (a) rings: groups of 8 GPUs each run a step-by-step ring AllReduce
 *     (2 (n-1) steps; a member sends step s+1 when step s has arrived).
 *     Rings live in pods of 4 leaves, so a pod's directed links are shared
 *     by its own rings only: the coupled set of an update is one pod, and
 *     the selective update should touch about a pod's flows while the
 *     network holds one flow per GPU.  Chunk sizes differ per ring, so
 *     rings drift apart and nearly every completion is its own update.
 * (b) stream: one ring over all GPUs in the pipelined steady state NCCL
 *     reaches (each GPU streams 2 (n-1)/n S to its neighbour at once), the
 *     order interleaved over leaves so every hop crosses the spines: one
 *     coupled set of n flows, ECMP collisions giving a few rate levels.
 * (c) all-to-all: n GPUs over all leaves, one flow per ordered pair with a
 *     random size, all started at once: one coupled set, full solves, and
 *     about n^2 updates of n^2 flows each, so only small n.
 *
 * Prints wall time, engine events and events per second, updates, full
 * solves, and the mean coupled set ("touched") against the mean number of
 * active flows per update.  Figures, not assertions: see DESIGN.md.
 */
#include "podplan/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define HOSTS_PER_LEAF 16
#define SPINES 8
#define PORT_Bps 50e9
#define UPLINK_Bps (PORT_Bps * HOSTS_PER_LEAF / 2 / SPINES)
#define HOP_LAT_s 1e-6

typedef struct fabric {
    int32_t gpus, leaves;
    size_t n_links;
    double *cap;
} fabric;

static void fabric_init(fabric *f, int32_t gpus) {
    f->gpus = gpus;
    f->leaves = (gpus + HOSTS_PER_LEAF - 1) / HOSTS_PER_LEAF;
    /* up, down per GPU; leaf->spine and spine->leaf per (leaf, spine) */
    f->n_links = 2 * (size_t)gpus + 2 * (size_t)f->leaves * SPINES;
    f->cap = malloc(f->n_links * sizeof *f->cap);
    for (size_t l = 0; l < f->n_links; l++)
        f->cap[l] = l < 2 * (size_t)gpus ? PORT_Bps : UPLINK_Bps;
}

/* Writes the path from GPU a to GPU b (a != b) into p; returns its length. */
static size_t route(const fabric *f, int32_t a, int32_t b, int32_t *p) {
    int32_t la = a / HOSTS_PER_LEAF, lb = b / HOSTS_PER_LEAF;
    size_t n = 0;
    p[n++] = a; /* a -> its leaf */
    if (la != lb) {
        uint32_t h = (uint32_t)a * 2654435761u ^ (uint32_t)b * 40503u;
        int32_t s = (int32_t)((h >> 7) % SPINES);
        int32_t base = 2 * f->gpus;
        p[n++] = base + la * SPINES + s;                         /* leaf up */
        p[n++] = base + f->leaves * SPINES + s * f->leaves + lb; /* down */
    }
    p[n++] = f->gpus + b; /* leaf -> b */
    return n;
}

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng;
static double rnd_unit(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static void report(const char *what, int32_t gpus, pp_engine *eng,
                   pp_flownet *net, double secs) {
    pp_flownet_stats st;
    pp_flownet_stats_get(net, &st);
    double u = st.updates ? (double)st.updates : 1;
    uint64_t ev = pp_engine_events(eng);
    printf("%-10s %6d %9llu %8.3f %9llu %10.3g %8llu %6llu %9.1f %9.1f "
           "%10.6f\n",
           what, gpus, (unsigned long long)st.flows_started, secs,
           (unsigned long long)ev, (double)ev / secs,
           (unsigned long long)st.updates, (unsigned long long)st.full_solves,
           (double)st.flows_touched / u, (double)st.active_sum / u,
           pp_engine_now(eng));
}

/* ---- (a) rings --------------------------------------------------------- */

#define RING 8
#define POD_GPUS (4 * HOSTS_PER_LEAF)

typedef struct rings {
    fabric f;
    pp_flownet *net;
    int32_t n_rings;
    int32_t (*member)[RING];
    double *chunk;
} rings;

static void ring_send(rings *R, int32_t r, int32_t k, int32_t step);

static void ring_done(pp_flownet *net, pp_flow_id id, void *ctx, uint64_t arg) {
    (void)net;
    (void)id;
    rings *R = ctx;
    int32_t r = (int32_t)(arg >> 32);
    int32_t step = (int32_t)((arg >> 8) & 0xffffff);
    int32_t k = (int32_t)(arg & 0xff);
    if (step + 1 < 2 * (RING - 1)) ring_send(R, r, (k + 1) % RING, step + 1);
}

static void ring_send(rings *R, int32_t r, int32_t k, int32_t step) {
    int32_t p[4];
    int32_t a = R->member[r][k], b = R->member[r][(k + 1) % RING];
    size_t n = route(&R->f, a, b, p);
    uint64_t arg = (uint64_t)r << 32 | (uint64_t)step << 8 | (uint64_t)k;
    pp_flow_start(R->net, p, n, R->chunk[r], HOP_LAT_s * (double)(n + 1),
                  ring_done, R, arg);
}

static void bench_rings(int32_t gpus) {
    rings R = {0};
    rng = 12345 + (uint64_t)gpus; /* each row reproducible on its own */
    fabric_init(&R.f, gpus);
    R.n_rings = gpus / RING;
    R.member = malloc((size_t)R.n_rings * sizeof *R.member);
    R.chunk = malloc((size_t)R.n_rings * sizeof *R.chunk);
    /* Within a pod of 4 leaves, ring q takes 2 hosts on each leaf and
     * alternates leaves, so every hop crosses a spine. */
    int32_t per_pod = POD_GPUS / RING;
    for (int32_t r = 0; r < R.n_rings; r++) {
        int32_t pod = r / per_pod, q = r % per_pod;
        for (int32_t k = 0; k < RING; k++)
            R.member[r][k] =
                pod * POD_GPUS + (k % 4) * HOSTS_PER_LEAF + q * 2 + k / 4;
        R.chunk[r] = (1.0 + 3.0 * rnd_unit()) * 1e6; /* 1-4 MB per step */
    }
    pp_engine *eng = pp_engine_new();
    R.net = pp_flownet_new(eng, R.f.cap, R.f.n_links);
    double t0 = wall();
    for (int32_t r = 0; r < R.n_rings; r++)
        for (int32_t k = 0; k < RING; k++) ring_send(&R, r, k, 0);
    pp_engine_run(eng, INFINITY);
    double secs = wall() - t0;
    report("rings", gpus, eng, R.net, secs);
    pp_flownet_free(R.net);
    pp_engine_free(eng);
    free(R.member);
    free(R.chunk);
    free(R.f.cap);
}

/* ---- (b) one streaming ring ------------------------------------------ */

static void bench_stream(int32_t gpus) {
    fabric f;
    fabric_init(&f, gpus);
    pp_engine *eng = pp_engine_new();
    pp_flownet *net = pp_flownet_new(eng, f.cap, f.n_links);
    double S = 1e9, bytes = 2.0 * (gpus - 1) / gpus * S;
    double t0 = wall();
    int32_t p[4];
    for (int32_t k = 0; k < gpus; k++) {
        int32_t a = (k % f.leaves) * HOSTS_PER_LEAF + k / f.leaves;
        int32_t k1 = (k + 1) % gpus;
        int32_t b = (k1 % f.leaves) * HOSTS_PER_LEAF + k1 / f.leaves;
        size_t n = route(&f, a, b, p);
        pp_flow_start(net, p, n, bytes, HOP_LAT_s * (double)(n + 1), NULL, NULL,
                      0);
    }
    pp_engine_run(eng, INFINITY);
    double secs = wall() - t0;
    report("stream", gpus, eng, net, secs);
    pp_flownet_free(net);
    pp_engine_free(eng);
    free(f.cap);
}

/* ---- (c) all-to-all ---------------------------------------------------- */

static void bench_alltoall(int32_t gpus) {
    /* Every 4th port of a fabric 4 times as large (at least 4 leaves), so
     * that most pairs cross the spines. */
    fabric big;
    rng = 54321 + (uint64_t)gpus;
    fabric_init(&big, gpus * 4 > 64 ? gpus * 4 : 64);
    int32_t stride = big.gpus / gpus;
    pp_engine *eng = pp_engine_new();
    pp_flownet *net = pp_flownet_new(eng, big.cap, big.n_links);
    double t0 = wall();
    int32_t p[4];
    for (int32_t a = 0; a < gpus; a++)
        for (int32_t b = 0; b < gpus; b++) {
            if (a == b) continue;
            size_t n = route(&big, a * stride, b * stride, p);
            pp_flow_start(net, p, n, (0.5 + rnd_unit()) * 1e6,
                          HOP_LAT_s * (double)(n + 1), NULL, NULL, 0);
        }
    pp_engine_run(eng, INFINITY);
    double secs = wall() - t0;
    report("alltoall", gpus, eng, net, secs);
    pp_flownet_free(net);
    pp_engine_free(eng);
    free(big.cap);
}

/* Usage: bench_flow [max ring GPUs (16384)] [max all-to-all GPUs (96)] */
int main(int argc, char **argv) {
    int32_t max_ring = argc > 1 ? atoi(argv[1]) : 16384;
    int32_t max_a2a = argc > 2 ? atoi(argv[2]) : 96;
    printf("# two-level fabric: %d hosts/leaf at %.0f GB/s, %d spines, "
           "uplinks %.0f GB/s (2:1)\n",
           HOSTS_PER_LEAF, PORT_Bps / 1e9, SPINES, UPLINK_Bps / 1e9);
    printf("# touched/upd: mean flows re-solved per update; "
           "active/upd: mean flows in the network then\n");
    printf("%-10s %6s %9s %8s %9s %10s %8s %6s %9s %9s %10s\n", "case", "gpus",
           "flows", "wall_s", "events", "events/s", "updates", "full",
           "touch/upd", "activ/upd", "sim_s");
    for (int32_t g = 64; g <= max_ring; g *= 4) bench_rings(g);
    for (int32_t g = 1024; g <= max_ring; g *= 4) bench_stream(g);
    static const int32_t a2a[] = {16, 32, 48, 64, 96, 128, 192, 256};
    for (size_t i = 0; i < sizeof a2a / sizeof *a2a && a2a[i] <= max_a2a; i++)
        bench_alltoall(a2a[i]);
    return 0;
}
