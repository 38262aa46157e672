/*
 * flow_int.h: private to sim/net/flow*.c and sim/net/maxmin.c: the
 * solver's entry and the flow network's state, shared by flow.c (flows
 * come and go), flow_solve.c (the update) and flow_check.c (invariants).  The indexed heap and the growable arrays they use are
 * common's (pp_iheap, PP_VEC_RESERVE in podplan/common.h).
 */
#ifndef PODPLAN_FLOW_INT_H
#define PODPLAN_FLOW_INT_H

#include "podplan/net.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the max-min solver (maxmin.c) ------------------------------------ */
typedef struct mm_scratch {
    double *rc;   /* remaining capacity per link */
    int32_t *cnt; /* unfrozen flows per link */
    bool *dirty;  /* rc or cnt changed since the link's key was set */
    size_t cap;
    pp_iheap h;
} mm_scratch;

/* Max-min rates for nf flows over nl links given as CSR both ways (see
 * maxmin.c); scratch s is reused from call to call. */
void pp__maxmin_core(int32_t nl, const double *cap, const int32_t *lf_off,
                     const int32_t *lf, int32_t nf, const int32_t *f_off,
                     const int32_t *fl, double *rate, mm_scratch *s);
void pp__mm_scratch_fini(mm_scratch *s);

/* ---- the network (flow.c) -------------------------------------------- */

/* A link's entry for one flow crossing it.  key is the flow's rate while
 * it is active and INFINITY while it has joined but not been solved: the
 * update's walk decides from it alone whether the flow is re-solved
 * (key >= the update's level) or keeps its rate (and what it uses of the
 * link), reading the link's list front to back instead of every flow's
 * line, a cache miss each on the long lists of spine links. */
typedef struct lentry {
    int32_t slot; /* flow slot */
    int32_t hop;  /* which hop of that flow's path this link is */
    double key;   /* the flow's rate, INFINITY while F_JOINED */
} lentry;

/* One cache line per link (the array is 64-byte aligned): a join, a
 * leave and an update touch a handful of random links each, so keeping
 * everything they read and write about a link in one line (the byte
 * counter included, rather than in an array of its own) is what bounds
 * their cost. */
typedef struct link {
    lentry *fl; /* the joined flows crossing this link */
    uint32_t n, cap;
    double cap_Bps;
    double rate;   /* sum of its flows' rates since t */
    double t;      /* bytes is exact up to t */
    double bytes;  /* carried so far (copied out by link_bytes) */
    uint32_t mark; /* walk epoch */
    int32_t bpos;  /* index in net->busy while it carries flows, else -1 */
    bool seed;     /* changed since the last update */
} link;

_Static_assert(sizeof(link) <= 64, "a link should fit one cache line");

enum { F_FREE, F_WAIT, F_JOINED, F_ACTIVE };

/* What the update's walk (flow_solve.c) reads and writes of a flow, kept
 * apart from the flow's own lines: the walk meets a flow on a link, checks
 * and sets its mark, numbers it and follows its path, and with these in
 * one place that is one cache miss instead of one per array (and none on
 * the flow's lines, which only the rates' write-back needs). */
typedef struct fwalk {
    int32_t *path; /* flow.path */
    int32_t n;     /* flow.n */
    uint32_t mark; /* walk epoch */
    int32_t local; /* index in the component being solved */
} fwalk;

typedef struct flow {
    double bytes;
    double left; /* bytes left at t_last */
    double rate; /* since t_last */
    double t_last;
    double t_end;  /* completion time at this rate (the heap key) */
    int32_t *path; /* n link ids, then n positions in those links' lists */
    int32_t n, path_cap;
    pp_flow_id id;
    int32_t state;
    int32_t apos;   /* index in net->active, or -1 */
    pp_timer timer; /* the latency event while F_WAIT */
    pp_flow_done_fn done;
    void *ctx;
    uint64_t arg;
} flow;

struct pp_flownet {
    pp_engine *eng;
    link *links;
    size_t n_links;
    double *link_bytes;

    flow *fl;      /* slots, recycled */
    int32_t *hpos; /* completion-heap position per slot */
    fwalk *fw;     /* per slot: what the update's walk reads */
    size_t n_fl, cap_fl;
    int32_t *free_fl;
    size_t n_free;

    int32_t *slot_of; /* flow id -> slot, -1 once finished */
    size_t n_ids, cap_ids;

    int32_t *active; /* joined flows (slots) */
    size_t n_active, cap_active;
    int32_t *busy; /* links that carry flows (for full solves) */
    size_t n_busy;

    pp_iheap done_heap; /* ACTIVE flows by t_end */
    pp_timer armed;     /* the completion event, 0 if none */
    double armed_t;
    pp_timer resolve; /* the batched update at now, 0 if none */

    int32_t *seeds; /* links changed since the last update */
    size_t n_seeds, cap_seeds;
    int32_t *fin; /* slots finishing in one completion event */
    size_t n_fin, cap_fin;

    /* One update's component and its CSR form (reused). */
    uint32_t epoch;
    int32_t *c_links, *c_flows;
    size_t cap_c_links, cap_c_flows;
    size_t n_cseeds;   /* the first links of c_links are the seeds */
    double c_level;    /* flows below this rate keep it (see gather) */
    double left_level; /* least rate of the flows that left since the
                           last update */
    size_t n_joined;   /* flows that joined since the last update */
    double *lv;        /* join_level's scratch */
    size_t cap_lv;
    double *c_cap, *c_rate, *c_out;
    size_t cap_c_cap, cap_c_rate, cap_c_out;
    int32_t *lf_off, *lf, *f_off, *f_links;
    size_t cap_lf_off, cap_lf, cap_f_off, cap_f_links;
    mm_scratch mm;

    pp_flownet_stats st;
};

static inline void settle_link(link *lk, double now) {
    lk->bytes += lk->rate * (now - lk->t);
    lk->t = now;
}

/* A hint: no effect on results. */
static inline void prefetch(const void *p) {
#if defined(__GNUC__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

/* Keeps exactly one completion event armed, at the heap top's time
 * (flow.c). */
void pp__flow_rearm(pp_flownet *net);
/* The batched update at this instant (flow_solve.c); an engine event. */
void pp__flow_on_resolve(pp_engine *eng, void *ctx, uint64_t arg);

#ifdef PODPLAN_FLOW_CHECK
/* The invariants of the network (flow_check.c says which): 0, or PP_EINVAL
 * with the first broken one in e.  Read-only.  pp__flownet_check_or_die
 * prints it and aborts; the update calls it after every re-solve. */
int pp__flownet_check(const pp_flownet *net, pp_error *e);
void pp__flownet_check_or_die(const pp_flownet *net);
#endif

#endif /* PODPLAN_FLOW_INT_H */
