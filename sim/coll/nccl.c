/*
 * nccl.c: NCCL's own performance model, the one it uses to choose an
 * algorithm and a protocol per call, so that the `nccl` algorithm of
 * `podplan collective` reads like nccl-tests on the same machine.
 *
 * Source: src/graph/tuning.cc of github.com/NVIDIA/nccl as stored at
 * commit b6475625 (the 2.19-2.21 generation: NVLS, NVLS-Tree,
 * CollNet Direct/Chain, MNNVL, Hopper tables), ncclTopoTuneModel and
 * ncclTopoGetAlgoTime, transcribed table for table below.  NCCL computes
 * for every (algorithm, protocol)
 *   time = latency + bytes / bandwidth
 * with bandwidth = channels x per-channel speed found by its topology
 * search (src/graph/search.cc), refined per protocol, and takes the
 * fastest.
 *
 * What NCCL reads from the machine, we take from the cluster:
 * - compute capability from the NVLink generation (NVLink 1..5 =
 *   sm 60/70/80/90/100; sm 100 uses the Hopper rows, as this version of
 *   the file predates Blackwell), and NCCL's per-GPU NVLink bandwidth:
 *   links x SMxx_NVLINK_BW of src/graph/topo.h (18.0, 20.0, 20.0, 20.6,
 *   40.1 GB/s per link; a link is 20, 25, 25, 25, 50 GB/s raw), i.e. the
 *   catalogue's NVLink rate scaled by those ratios.  No NVLink: PCIe at
 *   12 GB/s per Gen3 x16 (PCI_BW), doubled per generation after 3.
 * - the NIC rate (NCCL's net bandwidth: port speed / 8) and count.
 * - NVLink SHARP (NVLS) on sm >= 90 with an NVSwitch in the server.
 * - the CPU is taken as Intel (net overhead 1 us; LL's multi-node caps
 *   of the Intel rows); CollNet only when asked (--collnet: NCCL needs
 *   NCCL_COLLNET_ENABLE=1 and the SHARP plugin).
 *
 * The topology search itself (search.cc) is not transcribed; we keep its
 * outcome's rule (our reading of ncclTopoCompute): among the speeds of
 * the architecture's speed array (sm90SpeedArrayIntra/Inter, else
 * speedArrayIntra/Inter, search.cc), the channel count and speed with the
 * largest total that fit: channels <= 16 (MAXCHANNELS/2), channels x
 * speed <= the GPU's NVLink bandwidth, and between servers one channel
 * per NIC per `speed` of its rate; the first (fastest speed) of equal
 * totals.  Rings and trees share that graph.  NVLS: one channel per GPU
 * of the server (search.cc pins NVLS's channel count to the GPU count),
 * the fastest speed with GPUs x speed <= the NVLink bandwidth.  The
 * per-channel halving of ncclTopoDupChannels changes neither product nor
 * the caps that matter here and is left out.  The tree graph is taken as
 * balanced (no x0.85 of NCCL_TOPO_PATTERN_TREE), graphs' latencyInter as
 * 0 (no plugin-reported network latency), one operation per call
 * (numPipeOps 1), and the size is nccl-tests' S: for AllGather and
 * ReduceScatter the whole buffer, the per-rank count times the ranks, as
 * NCCL's enqueue passes it to the model.
 *
 * One departure, for the time only (the choice stays the model's): an
 * NVLS AllReduce in one Hopper server is timed with its chunk pipeline
 * (nvls_pipeline below: two constants fitted to a published sweep),
 * because the model misses its mid-size ramp by up to 44%.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collective_int.h"

enum { T_TREE, T_RING, T_CN_DIRECT, T_CN_CHAIN, T_NVLS, T_NVLS_TREE, T_NALG };
enum { P_LL, P_LL128, P_SIMPLE, P_NPROTO };
enum { HW_NVLINK, HW_PCI, HW_NET };
enum { F_BROADCAST, F_REDUCE, F_ALLGATHER, F_REDUCESCATTER, F_ALLREDUCE };

static const char *const alg_name[T_NALG] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree"};
static const char *const proto_name[P_NPROTO] = {"LL", "LL128", "Simple"};

/* tuning.cc: latencies in us, bandwidths in GB/s. */
static const double baseLat[T_NALG][P_NPROTO] = {
    {6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0},
    {0, 0, 0},      {0, 0, 0},        {0, 0, 0}};
static const double hwLat[3][T_NALG][P_NPROTO] = {
    /* NVLINK */
    {{.6, 1.25, 28},
     {.6, 1.9, 3.4},
     {0, 0, 3.7},
     {0, 0, 2.8},
     {0, 0, 23},
     {0, 0, 23}},
    /* PCI */
    {{1.0, 1.9, 28},
     {1.0, 2.5, 5.7},
     {0, 0, 3.7},
     {0, 0, 2.8},
     {0, 0, 0},
     {0, 0, 0}},
    /* NET */
    {{5.0, 8.5, 28},
     {2.7, 4.0, 14.0},
     {0, 0, 31},
     {0, 0, 30},
     {0, 0, 18},
     {0, 0, 14}}};
/* [Volta, Ampere, Hopper][N1, N2, N4+] */
static const double llMaxBws[3][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
static const double perChMaxRingLL128Bws[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
static const double perChMaxTreeLL128Bws[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
static const double perChMaxTreeBws[3][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
/* Powers of two from 64 B: trees stray from the model at medium sizes. */
static const double treeCorrectionFactor[P_NPROTO][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

/* search.cc's speed arrays (GB/s per channel). */
static const double speedIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                    9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
static const double speedInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0,
                                    12.0, 10.0, 9.0,  7.0,  6.0,  5.0,  4.0,
                                    3.0,  2.4,  1.2,  0.24, 0.12};
static const double sm90Intra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                   15.0, 12.0, 11.0, 6.0,  3.0};
static const double sm90Inter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0,
                                   22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                   3.0,  2.4,  1.2,  0.24, 0.12};

#define N_OF(a) (sizeof(a) / sizeof(a)[0])
#define MAX_SEARCH_CHANNELS 16

typedef struct graph {
    int nch;
    double bw; /* per channel, GB/s (bwIntra = bwInter here) */
} graph;

typedef struct machine {
    int cc;          /* 60..100 */
    bool nvlink;     /* intra-server links are NVLink */
    bool nvswitch;   /* ... through NVSwitches (NVLS possible) */
    double intra_bw; /* NCCL's per-GPU intra-server bandwidth, GB/s */
    double nic_bw;   /* per NIC, GB/s */
    int nics;        /* per server */
} machine;

static int log2i(double x) {
    int l = 0;
    while (x >= 2) x /= 2, l++;
    return l;
}

/* The ring/tree graph: see the header. */
static graph search(const machine *mc, int nodes, int gpn) {
    bool sm90 = mc->cc >= 90, inter = nodes > 1;
    const double *sp = inter ? (sm90 ? sm90Inter : speedInter)
                             : (sm90 ? sm90Intra : speedIntra);
    size_t ns = inter ? (sm90 ? N_OF(sm90Inter) : N_OF(speedInter))
                      : (sm90 ? N_OF(sm90Intra) : N_OF(speedIntra));
    graph best = {0, 0};
    for (size_t i = 0; i < ns; i++) {
        double s = sp[i];
        int nch = MAX_SEARCH_CHANNELS;
        /* One GPU alone in its server still needs a channel. */
        if (gpn > 1 && (int)floor(mc->intra_bw / s) < nch)
            nch = (int)floor(mc->intra_bw / s);
        if (inter) {
            int per_nic = (int)floor(mc->nic_bw / s);
            if (mc->nics * per_nic < nch) nch = mc->nics * per_nic;
        }
        if (nch >= 1 && nch * s > best.nch * best.bw) best = (graph){nch, s};
    }
    return best;
}

static graph search_nvls(const machine *mc, int gpn) {
    graph g = {0, 0};
    if (!(mc->cc >= 90 && mc->nvswitch) || gpn < 2) return g;
    for (size_t i = 0; i < N_OF(sm90Intra); i++)
        if (gpn * sm90Intra[i] <= mc->intra_bw)
            return (graph){gpn, sm90Intra[i]};
    return g;
}

static int func_of(pp_coll_op op) {
    switch (op) {
    case PP_COLL_ALLREDUCE: return F_ALLREDUCE;
    case PP_COLL_ALLGATHER: return F_ALLGATHER;
    case PP_COLL_REDUCESCATTER: return F_REDUCESCATTER;
    case PP_COLL_BROADCAST: return F_BROADCAST;
    default: return -1;
    }
}

/* ncclTopoTuneModel for one collective, then ncclTopoGetAlgoTime for
 * every algorithm and protocol; the fastest wins (first of equals). */
static void tune(const machine *mc, int coll, int nRanks, int nNodes,
                 double nBytes, bool collnet, pp_nccl_choice *out) {
    int gpn = nRanks / nNodes;
    graph g = search(mc, nNodes, gpn), gn = search_nvls(mc, gpn);
    /* NVLS between servers: one channel per NIC-attached GPU, at most
     * the NIC's speed. */
    graph gni = gn;
    if (nNodes > 1 && gn.nch > 0 && gn.bw > mc->nic_bw) gni.bw = mc->nic_bw;
    int cci = mc->cc >= 90 ? 2 : mc->cc >= 80 ? 1 : 0;
    int index2 = nNodes <= 2 ? nNodes - 1 : 2;
    int index1 = nNodes == 1 ? cci : 0; /* Intel CPU between servers */
    double llMaxBw = llMaxBws[index1][index2];
    double perChMaxTreeBw = perChMaxTreeBws[cci][index2];
    double perChMaxRingLL128Bw = perChMaxRingLL128Bws[cci][index2];
    double perChMaxTreeLL128Bw = perChMaxTreeLL128Bws[cci][index2];
    double ppn = (double)nRanks / nNodes;
    int intraHw = mc->nvlink ? HW_NVLINK : HW_PCI;
    int hw = nNodes == 1 ? intraHw : HW_NET;
    int nsteps = coll == F_ALLREDUCE ? 2 * (nRanks - 1)
                 : coll == F_REDUCESCATTER || coll == F_ALLGATHER ? nRanks - 1
                                                                  : nRanks;
    int nInterSteps = coll == F_ALLREDUCE ? (nNodes > 1 ? 2 * nNodes : 0)
                      : coll == F_REDUCESCATTER || coll == F_ALLGATHER
                          ? nNodes - 1
                          : nNodes;
    /* Enabled: LL128 on NVLink for sm 70/80/90 (tuning.cc's default);
     * NVLS-Tree between servers only; CollNet when asked; NVLS between
     * servers only with CollNet. */
    bool ll128 = mc->nvlink && (mc->cc == 70 || mc->cc == 80 || mc->cc == 90);
    bool algo_on[T_NALG] = {true, true, collnet, collnet, true, nNodes > 1};
    if (nNodes > 1 && !collnet) algo_on[T_NVLS] = false;
    if (!mc->nvswitch) algo_on[T_CN_DIRECT] = false;

    memset(out, 0, sizeof *out);
    double best = INFINITY;
    for (int a = 0; a < T_NALG; a++) {
        if (coll == F_BROADCAST && a != T_RING) continue;
        if (coll == F_REDUCE && a != T_RING) continue;
        if ((coll == F_REDUCESCATTER || coll == F_ALLGATHER) && a != T_RING &&
            a != T_NVLS && a != T_CN_DIRECT)
            continue;
        if (!algo_on[a]) continue;
        const graph *ga = a == T_NVLS ? &gn : a == T_NVLS_TREE ? &gni : &g;
        if (ga->nch == 0) continue;
        for (int p = 0; p < P_NPROTO; p++) {
            if ((a == T_NVLS || a == T_NVLS_TREE) && p != P_SIMPLE) continue;
            if (p == P_LL128 && !ll128) continue;
            bool cn = a == T_CN_DIRECT || a == T_CN_CHAIN;
            double bwIntra = ga->bw, bwInter = ga->bw;
            double bw = nNodes <= 2 || cn ? bwIntra : bwInter;
            if (a == T_NVLS) bw = fmin(bwIntra, bwInter);
            if (a == T_NVLS_TREE)
                bw = fmin(bwIntra, nNodes <= 2 ? bwInter : bwInter / 2);
            double busBw = ga->nch * bw;
            if (a == T_RING && p == P_LL)
                busBw =
                    fmin(llMaxBw, busBw * ((nNodes > 1 || coll == F_ALLREDUCE ||
                                            coll == F_REDUCE)
                                               ? 1.0 / 4.0
                                               : 1.0 / 3.0));
            if (a == T_RING && p == P_LL128)
                busBw = fmin(busBw * (ppn < 2 ? 0.7 : 0.92),
                             ga->nch * perChMaxRingLL128Bw);
            if (a == T_TREE)
                busBw = fmin(busBw * .92, ga->nch * perChMaxTreeBw);
            if (a == T_TREE && p == P_LL) busBw = fmin(busBw / 3.8, llMaxBw);
            if (a == T_TREE && p == P_LL128)
                busBw = fmin(busBw * (nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                             ga->nch * perChMaxTreeLL128Bw);
            if (cn && p != P_SIMPLE) busBw = 0;
            if (a == T_CN_DIRECT && p == P_SIMPLE) {
                if (coll == F_ALLGATHER || coll == F_REDUCESCATTER) {
                    busBw = ppn * bw;
                    /* AllGather/ReduceScatter need a NIC per GPU. */
                    if (nNodes > 1 && ppn > mc->nics) busBw = 0;
                    double w = (ppn - 1) / (8 - 1);
                    busBw *= w * 0.85 + (1 - w) * 0.95;
                } else {
                    double factor = ppn / ga->nch; /* GPU/NIC ratio */
                    factor -= (factor - 1) / 2;
                    busBw /= factor;
                    if (mc->cc >= 90) busBw *= .85;
                }
            }
            if (!(a == T_CN_DIRECT &&
                  (coll == F_ALLGATHER || coll == F_REDUCESCATTER))) {
                double ratio = a == T_RING ? (double)nRanks / nsteps
                               : a == T_NVLS || a == T_NVLS_TREE ? 5.0 / 6.0
                                                                 : .5;
                busBw *= ratio;
            }
            double algBw = busBw;
            if (!(algBw > 0)) continue;

            double lat = baseLat[a][p];
            double intraLat = hwLat[intraHw][a][p];
            double interLat = hwLat[HW_NET][a][p]; /* + latencyInter: 0 */
            if (a == T_RING) {
                if (coll == F_REDUCE || coll == F_BROADCAST) {
                    /* Not sameChannels: the chunk latency per step. */
                    double l = hwLat[hw][a][p];
                    if (p == P_SIMPLE) l = hwLat[hw][T_TREE][p];
                    lat += nsteps * l;
                } else {
                    double netOverhead = 0;
                    if (nNodes > 1) {
                        netOverhead = 1.0; /* Intel */
                        if (p == P_SIMPLE) netOverhead *= 3;
                    }
                    intraLat = fmax(intraLat, netOverhead);
                    lat += (nsteps - nInterSteps) * intraLat +
                           nInterSteps * interLat;
                }
            } else if (a == T_TREE) {
                lat += 2 * ((nRanks / nNodes - 1) * intraLat +
                            log2i(nNodes) * interLat);
            } else if (a == T_CN_DIRECT) {
                lat += 2 * (fmin(1, nRanks / nNodes - 1) * intraLat +
                            (nRanks / nNodes - 1) * 0.4) +
                       interLat;
            } else if (a == T_CN_CHAIN) {
                lat += 2 * (nRanks / nNodes - 1) * intraLat + interLat;
            } else if (a == T_NVLS) {
                lat = intraLat + (nNodes > 1 ? interLat : 0);
            } else {
                lat += intraLat + 2 * log2i(nNodes) * interLat;
            }

            /* ncclTopoGetAlgoTime. */
            double b = algBw;
            int logSize = log2i(floor(nBytes / 64));
            if (a == T_TREE && logSize < 23)
                b *= treeCorrectionFactor[p][logSize];
            double l = lat;
            if (a == T_RING && p == P_SIMPLE && nNodes > 1 &&
                coll == F_ALLREDUCE && nBytes / (g.nch * nRanks) >= 64)
                l *= mc->cc < 80 ? 1.9 : 1.4; /* the ring's plateau */
            double t_us = l + nBytes / (1000 * b);
            if (t_us < best) {
                best = t_us;
                out->algo = alg_name[a];
                out->proto = proto_name[p];
                out->time_s = t_us * 1e-6;
                out->lat_s = l * 1e-6;
                out->algbw_Bps = b * 1e9;
                out->channels = ga->nch;
                out->chan_Bps = ga->bw * 1e9;
            }
        }
    }
}

/* NVLS AllReduce in one Hopper server, timed as it runs rather than as
 * the tuning model prices it (the model still makes the choice, as in
 * NCCL).  Measured sweeps fall well below the model between 2 and 512
 * MiB (16 MiB: 237 GB/s busbw against the model's 342), which neither
 * the model's latency nor its bandwidth can produce.  The kernel moves
 * each of its ops = nvlsChannels x nHeads pieces in chunks that
 * enqueue.cc shrinks for smaller buffers (calcCollChunking, the same
 * 2.19-2.21 generation as tuning.cc: 128 KiB, then 64 KiB below 64 x
 * ops x chunk, 32 KiB below 8 x, 16 KiB below 2 x; nvlsChannels is
 * NCCL_NVLS_NCHANNELS' default 16, nHeads the server's GPUs), and its
 * reduce and broadcast stages fill and drain a pipeline of such chunks:
 *   time = L + bytes / algbw + f x min(bytes, ops x chunk) / algbw,
 * with algbw the model's.  L and f are fitted (least squares on relative
 * error) to one published sweep that no validation case uses: AWS p5
 * (8 x H100 SXM), nccl-tests all_reduce_perf from 1 MiB to 16 GiB,
 * aws-samples/awsome-distributed-training, micro-benchmarks/nccl-tests/
 * aws-batch/README.md (15 sizes; residuals within 9%, 3.6% mean).  L is
 * the kernel's latency, below the table's 23 us; f is in chunks.  Only
 * sm 90: no Blackwell sweep was fitted. */
#define NVLS_LAT_US 15.0
#define NVLS_FILL_CHUNKS 2.65
#define NVLS_NCHANNELS 16

static void nvls_pipeline(int nRanks, double nBytes, pp_nccl_choice *out) {
    double ops = (double)NVLS_NCHANNELS * nRanks, chunk = 131072;
    if (nBytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
    if (nBytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
    if (nBytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
    double b = out->algbw_Bps;
    out->lat_s = NVLS_LAT_US * 1e-6;
    out->fill_s = NVLS_FILL_CHUNKS * fmin(nBytes, ops * chunk) / b;
    out->chunk = (int64_t)chunk;
    out->time_s = out->lat_s + nBytes / b + out->fill_s;
}

/* The machine as NCCL would see it (see the header). */
static machine machine_of(const pp_cluster *c) {
    const pp_cluster_info *info = pp_cluster_info_get(c);
    const pp_gpu_spec *gpu = info->gpu;
    machine mc;
    memset(&mc, 0, sizeof mc);
    static const int cc_of_gen[6] = {80, 60, 70, 80, 90, 100};
    static const double nccl_link[6] = {0, 18.0, 20.0, 20.0, 20.6, 40.1};
    static const double raw_link[6] = {1, 20.0, 25.0, 25.0, 25.0, 50.0};
    int gen = gpu && gpu->nvlink_gen > 0 && gpu->nvlink_gen <= 5
                  ? gpu->nvlink_gen
                  : 0;
    mc.cc = cc_of_gen[gen];
    mc.nvlink = gen > 0 && gpu->nvlink_Bps > 0 && info->gpus_per_node > 1;
    if (mc.nvlink) {
        mc.intra_bw = gpu->nvlink_Bps / 1e9 * nccl_link[gen] / raw_link[gen];
    } else {
        int pg = gpu && gpu->pcie_gen > 3 ? gpu->pcie_gen : 3;
        mc.intra_bw = 12.0 * (double)(1 << (pg - 3));
    }
    mc.nvswitch = info->switches[PP_DEV_NVSWITCH] > 0;
    mc.nic_bw = info->nic_Bps / 1e9;
    mc.nics = info->hcas_per_node;
    return mc;
}

int pp_coll_nccl_choose(const pp_cluster *c, const int32_t *gpus, size_t n,
                        pp_coll_op op, double bytes, bool collnet,
                        pp_nccl_choice *out, pp_error *e) {
    int coll = func_of(op);
    if (coll < 0)
        return pp_error_set(e, PP_EINVAL,
                            "collective: nccl: %s is point-to-point in NCCL "
                            "(grouped sends and receives); its tuning model "
                            "times allreduce, allgather, reducescatter and "
                            "broadcast",
                            pp_coll_op_name(op));
    if (n < 2)
        return pp_error_set(e, PP_EINVAL, "collective: nccl: needs 2 GPUs");
    size_t nd;
    const pp_device *devs = pp_cluster_devices(c, &nd);
    const pp_cluster_info *info = pp_cluster_info_get(c);
    int32_t nodes = info->nodes > 0 ? info->nodes : 1;
    int nNodes = 0;
    unsigned char *seen = pp_xcalloc((size_t)nodes, 1);
    for (size_t i = 0; i < n; i++) {
        int32_t nd_i = devs[gpus[i]].node;
        if (nd_i < 0 || nd_i >= nodes) nd_i = 0;
        if (!seen[nd_i]++) nNodes++;
    }
    free(seen);
    if ((int)n % nNodes != 0)
        return pp_error_set(e, PP_EINVAL,
                            "collective: nccl: %zu GPUs on %d servers: "
                            "NCCL's model wants the same count on each",
                            n, nNodes);
    if (!(info->nic_Bps > 0) && nNodes > 1)
        return pp_error_set(e, PP_EINVAL,
                            "collective: nccl: %s has no NIC between its "
                            "servers",
                            info->name);
    machine mc = machine_of(c);
    tune(&mc, coll, (int)n, nNodes, bytes, collnet, out);
    if (!out->algo)
        return pp_error_set(e, PP_EINVAL,
                            "collective: nccl: no algorithm applies");
    if (mc.cc == 90 && nNodes == 1 && coll == F_ALLREDUCE &&
        !strcmp(out->algo, alg_name[T_NVLS]))
        nvls_pipeline((int)n, bytes, out);
    out->nodes = nNodes;
    return 0;
}
