/*
 * planner/simulate.c: the best K layouts by the estimate, simulated.
 *
 * The simulations are independent (each builds its own simulation, router
 * and flow network over the read-only cluster, and the simulator keeps no
 * mutable global state), so they run on `jobs` threads at once: the
 * simulator is the planner's bottleneck (a 3,072-GPU iteration at flow
 * fidelity takes seconds) and K of them are embarrassingly parallel.  The
 * results land in fixed slots and are taken in rank order, so the plan is
 * the same whatever the number of threads.
 */
#include "planner_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct job {
    pp_step_config cfg;
    size_t idx; /* into plan->cand */
    int rc;
    pp_error err;
    pp_step_result res;
} job;

/* The caller's progress report (pp_plan_options.progress): how many
 * simulations have ended of how many planned. */
typedef struct report {
    const pp_plan_options *o;
    size_t done, total;
} report;

typedef struct pool {
    job *jobs;
    size_t n, next;
    pthread_mutex_t mu;
    report *rep;
} pool;

static void run_job(job *j) {
    memset(&j->res, 0, sizeof j->res);
    pp_error_clear(&j->err);
    j->rc = pp_step_simulate(&j->cfg, &j->res, &j->err);
}

static void *worker(void *arg) {
    pool *P = arg;
    for (;;) {
        pthread_mutex_lock(&P->mu);
        size_t k = P->next++;
        pthread_mutex_unlock(&P->mu);
        if (k >= P->n) break;
        run_job(&P->jobs[k]);
        report *r = P->rep;
        /* A layout the simulator finds too large is dropped and its
         * place simulated again: it does not count. */
        if (r->o->progress && P->jobs[k].rc != PP_EINFEASIBLE) {
            /* one call at a time */
            pthread_mutex_lock(&P->mu);
            r->done++;
            r->o->progress(r->o->progress_ctx, r->done, r->total,
                           P->jobs[k].cfg.par);
            pthread_mutex_unlock(&P->mu);
        }
    }
    return NULL;
}

/* Runs the jobs on up to `threads` threads; falls back to this thread
 * when threads cannot be made. */
static void run_all(job *jobs, size_t n, int threads, report *rep) {
    pool P = {jobs, n, 0, PTHREAD_MUTEX_INITIALIZER, rep};
    size_t nt = (size_t)(threads > 0 ? threads : 1);
    if (nt > n) nt = n;
    pthread_t *t = nt > 1 ? malloc(nt * sizeof *t) : NULL;
    size_t started = 0;
    if (t)
        for (; started < nt; started++)
            if (pthread_create(&t[started], NULL, worker, &P) != 0) break;
    worker(&P); /* this thread works too (and alone when none started) */
    for (size_t i = 0; i < started; i++) pthread_join(t[i], NULL);
    free(t);
}

/* Layouts that differ only in the ZeRO stage and have the same estimate
 * (stages 1 and 2 move the same bytes; they differ in memory) would
 * spend simulations on one figure: the first is simulated, the others
 * keep their estimate and rank after the simulated ones. */
static bool twins(const pp_plan_candidate *c, const pp_plan_candidate *d) {
    const pp_parallel *a = &c->par, *b = &d->par;
    return d->est_time_s == c->est_time_s && d->dp_overlap == c->dp_overlap &&
           memcmp(c->placement, d->placement, 3) == 0 && a->tp == b->tp &&
           a->pp == b->pp && a->dp == b->dp && a->mbs == b->mbs &&
           a->gbs == b->gbs && a->vp == b->vp && a->sp == b->sp &&
           a->recompute == b->recompute &&
           a->recompute_mods == b->recompute_mods && a->cp == b->cp &&
           a->cp_comm == b->cp_comm && a->cp_a2a == b->cp_a2a &&
           a->ep == b->ep && a->etp == b->etp && a->dtype == b->dtype &&
           a->a2a_overlap == b->a2a_overlap && a->offload == b->offload;
}

int pp__plan_jobs(int jobs) {
    if (jobs > 0) return jobs;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void pp__plan_simulate(pp_plan *plan, const pp_model *m, const pp_cluster *c,
                       int top, int jobs) {
    const pp_plan_options *o = &plan->opt;
    /* tried[i]: candidate i was simulated or its simulation failed (not
     * for memory: those are dropped). */
    bool *tried = pp_xcalloc(plan->n ? plan->n : 1, sizeof *tried);
    /* over[i]: candidate i is over the all-to-all budget (never
     * simulated; takes no place among the K). */
    bool *over = pp_xcalloc(plan->n ? plan->n : 1, sizeof *over);

    /* With both rank orders searched, tp,pp,dp keeps the K simulations it
     * had when it was the only order, and tp,dp,pp gets ceil(K/2) more:
     * the estimator numbers the ranks of either order but sees no
     * contention, and a pipeline's sends across spines under tp,dp,pp
     * cost seconds it does not see (GPT-3 on titan: 19.9 s estimated,
     * 20.7 s simulated), so ranking the orders against each other is the
     * simulator's job.  Sharing K between them instead made --top 3 miss
     * the layout it found before; this way the search never picks worse
     * than a search of tp,pp,dp alone, for 1.5 times the simulations.
     * Either order's unused share goes to the other. */
    int npl = plan->n_placements > 1 ? 2 : 1;
    size_t k0 = (size_t)(top > 0 ? top : 0);
    size_t quota[2] = {k0, npl > 1 ? (k0 + 1) / 2 : 0};
    size_t total = quota[0] + quota[1];
    job *batch = pp_xcalloc(total ? total : 1, sizeof *batch);
    size_t done = 0;
    int threads = pp__plan_jobs(jobs);
    report rep = {o, 0, total};

    while (done < total) {
        /* The next layouts by the estimate, twins left out (a candidate
         * is its own twin, so none is taken twice). */
        size_t nb = 0, per[2] = {0, 0};
        for (size_t i = 0; i < plan->n; i++)
            if (tried[i]) per[npl > 1 && plan->cand[i].placement[1] == 'd']++;
        for (int pass = 0; pass < 2 && done + nb < total; pass++)
            for (size_t i = 0; i < plan->n && done + nb < total; i++) {
                if (tried[i] || over[i]) continue;
                int pk = npl > 1 && plan->cand[i].placement[1] == 'd';
                if (pass == 0 && per[pk] >= quota[pk]) continue;
                /* Over the all-to-all budget: not simulated, and its
                 * place goes to the next (counted once: it is marked). */
                if (o->a2a_budget > 0 &&
                    plan->cand[i].a2a_transfers > o->a2a_budget) {
                    over[i] = true;
                    plan->st.over_budget++;
                    continue;
                }
                bool twin = false;
                for (size_t j = 0; j < i && !twin; j++)
                    if (tried[j]) twin = twins(&plan->cand[i], &plan->cand[j]);
                for (size_t k = 0; k < nb && !twin; k++)
                    twin = twins(&plan->cand[i], &plan->cand[batch[k].idx]);
                if (twin) continue;
                per[pk]++;
                job *jb = &batch[nb++];
                memset(jb, 0, sizeof *jb);
                jb->idx = i;
                pp_step_config_init(&jb->cfg);
                jb->cfg.model = m;
                jb->cfg.par = &plan->cand[i].par;
                jb->cfg.cluster = c;
                jb->cfg.profile = &plan->profile;
                jb->cfg.fidelity = o->fidelity;
                /* The stack's pipeline sends and DP buckets; the
                 * candidate's DP overlap. */
                if (plan->profile.stack[0])
                    pp_step_config_stack(&jb->cfg, &plan->profile.sw);
                jb->cfg.dp_overlap = plan->cand[i].dp_overlap;
                jb->cfg.optimizer = o->optimizer;
                jb->cfg.seed = o->seed;
                memcpy(jb->cfg.placement, plan->cand[i].placement, 3);
            }
        if (nb == 0) break;
        run_all(batch, nb, threads, &rep);

        /* Take the results in rank order; drop what did not fit. */
        bool dropped = false;
        for (size_t k = 0; k < nb; k++) {
            job *jb = &batch[k];
            pp_plan_candidate *cd = &plan->cand[jb->idx];
            if (jb->rc == PP_EINFEASIBLE) {
                plan->st.rejected[PP_PLAN_REJECT_SIMULATION]++;
                plan->st.feasible--;
                cd->gpus = -1; /* marks it for removal below */
                dropped = true;
            } else if (jb->rc < 0) {
                if (!plan->st.sim_error[0])
                    snprintf(
                        plan->st.sim_error, sizeof plan->st.sim_error, "%.200s",
                        jb->err.msg[0] ? jb->err.msg : pp_strerror(jb->rc));
                tried[jb->idx] = true;
                done++;
            } else {
                cd->simulated = true;
                cd->sim_time_s = jb->res.iteration_time_s;
                cd->sim = jb->res.total;
                tried[jb->idx] = true;
                plan->st.simulated++;
                done++;
            }
            pp_step_result_fini(&jb->res);
        }
        if (dropped) {
            size_t w = 0;
            for (size_t i = 0; i < plan->n; i++) {
                if (plan->cand[i].gpus < 0) continue;
                plan->cand[w] = plan->cand[i];
                over[w] = over[i];
                tried[w++] = tried[i];
            }
            plan->n = w;
        }
    }
    free(batch);
    free(over);
    free(tried);
}
