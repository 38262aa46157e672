/*
 * coll_sched.c: chunking and the pipelined step engine.
 *
 * The ring collectives and the broadcast chain are all "at step t send
 * chunk a to one neighbour, receive chunk b from the other, reduce or
 * keep it", where the chunk sent at step t is the one received at step
 * t-1.  Waiting for a whole chunk before forwarding it would leave the
 * link idle while the CPU reduces; so, as NCCL's ring does, each chunk is
 * cut into slices and slice j of step t leaves as soon as slice j of step
 * t-1 is in and reduced.  Each channel (a connection per peer) carries one
 * part of every chunk and runs this pipeline independently, which both
 * fills several TCP streams and lets one channel's reduction overlap
 * another channel's transfer.
 */
#include "exec_int.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pp__split(size_t n, size_t parts, size_t i, size_t *begin, size_t *end) {
    size_t q = n / parts, r = n % parts;
    *begin = i * q + (i < r ? i : r);
    *end = *begin + q + (i < r ? 1 : 0);
}

size_t pp__sched_slices(const pp__sched *s) {
    size_t most = 0;
    for (size_t k = 0; k < s->n_chunks; k++) {
        size_t len = s->chunk_begin[k + 1] - s->chunk_begin[k];
        size_t part = (len + (size_t)s->channels - 1) / (size_t)s->channels;
        if (part > most) most = part;
    }
    size_t n = (most + s->slice_elems - 1) / s->slice_elems;
    return n ? n : 1; /* empty buffers still take their steps (in order) */
}

void pp__sched_slice(const pp__sched *s, size_t k, int c, size_t j,
                     size_t *begin, size_t *end) {
    size_t cb = s->chunk_begin[k], ce = s->chunk_begin[k + 1], pb, pe;
    pp__split(ce - cb, (size_t)s->channels, (size_t)c, &pb, &pe);
    size_t b = pb + j * s->slice_elems, e = b + s->slice_elems;
    if (b > pe) b = pe;
    if (e > pe) e = pe;
    *begin = cb + b;
    *end = cb + e;
}

void pp__fault_point(const pp__comm *c, int step) {
    if (c->fault_mode == 0 || c->fault_mode == 'c' ||
        c->rank != c->fault_rank || step != c->fault_step)
        return;
    fprintf(stderr,
            "podplan: rank %d (pid %d): injected fault at %s step %d: "
            "%s\n",
            c->rank, (int)getpid(), c->what, step + 1,
            c->fault_mode == 's'   ? "stopping"
            : c->fault_mode == 'k' ? "killing itself"
                                   : "exiting");
    fflush(stderr);
    if (c->fault_mode == 's')
        raise(SIGSTOP);
    else if (c->fault_mode == 'k')
        raise(SIGKILL);
    _exit(1);
}

int pp__step_error(const pp__comm *c, int step, int n_steps, int rc,
                   pp_error *e) {
    if (!e) return rc;
    char msg[PP_ERROR_MSG_MAX], own[32];
    snprintf(msg, sizeof msg, "%s", e->msg);
    /* Transports name the rank first ("rank 3: recv from rank 2: ...");
     * the rank goes first here too, before the step. */
    int n = snprintf(own, sizeof own, "rank %d: ", c->rank);
    const char *rest = strncmp(msg, own, (size_t)n) == 0 ? msg + n : msg;
    int code = e->code ? e->code : rc;
    pp_error_clear(e);
    pp_error_set(e, code, "rank %d: %s step %d/%d: %s", c->rank, c->what,
                 step + 1, n_steps, rest);
    return code;
}

/* Per channel: the flat sequence of (step, slice) items, i = t*nsl + j. */
typedef struct chan {
    size_t rpost, rproc; /* next receive to post / to process */
    size_t spost, sdone; /* next send to post / to see completed */
    pp_xreq rreq[PP__SLOTS], sreq[PP__SLOTS];
    size_t rbeg[PP__SLOTS], rend[PP__SLOTS]; /* element range of a slot */
    int started;                             /* highest step touched + 1 */
} chan;

static char *slot_buf(pp__comm *c, int ch, size_t slot) {
    return c->tmp + ((size_t)ch * PP__SLOTS + slot) * c->slice_bytes;
}

int pp__sched_run(pp__comm *c, const pp__sched *s, char *buf, pp_error *e) {
    size_t nsl = pp__sched_slices(s), total = (size_t)s->n_steps * nsl;
    int nch = s->channels, rc = 0;
    chan *ch = pp_xcalloc((size_t)nch, sizeof *ch);
    pp_xreq **wl = pp_xcalloc((size_t)nch * 2, sizeof *wl);
    size_t es = c->esize;
    int fail_step = 0;
    for (;;) {
        bool all_done = true;
        size_t nw = 0;
        for (int k = 0; k < nch; k++) {
            chan *h = &ch[k];
            /* Retire what has completed, in order. */
            while (h->rproc < h->rpost && h->rreq[h->rproc % PP__SLOTS].done) {
                size_t slot = h->rproc % PP__SLOTS, t = h->rproc / nsl;
                const pp__step *st = &s->steps[t];
                size_t b = h->rbeg[slot], en = h->rend[slot];
                if (st->recv_peer >= 0 && st->reduce && en > b) {
                    const char *own = s->src ? s->src : buf;
                    if ((rc = c->red.fn(c->red.ctx, buf + b * es, own + b * es,
                                        slot_buf(c, k, slot), en - b, e))) {
                        fail_step = (int)t;
                        goto out;
                    }
                }
                h->rproc++;
            }
            while (h->sdone < h->spost && h->sreq[h->sdone % PP__SLOTS].done)
                h->sdone++;
            /* Receives: as far ahead as the slots allow. */
            while (h->rpost < total && h->rpost - h->rproc < PP__SLOTS) {
                size_t t = h->rpost / nsl, j = h->rpost % nsl;
                const pp__step *st = &s->steps[t];
                size_t slot = h->rpost % PP__SLOTS, b = 0, en = 0;
                if (k == 0 && (int)t >= h->started) {
                    pp__fault_point(c, (int)t);
                    h->started = (int)t + 1;
                }
                pp_xreq *r = &h->rreq[slot];
                memset(r, 0, sizeof *r);
                r->done = true;
                if (st->recv_peer >= 0) {
                    pp__sched_slice(s, st->recv_chunk, k, j, &b, &en);
                    if (en > b) {
                        r->peer = st->recv_peer;
                        r->is_send = false;
                        r->buf =
                            st->reduce ? slot_buf(c, k, slot) : buf + b * es;
                        r->len = (en - b) * es;
                        r->channel = k;
                        r->done = false;
                        if ((rc = c->ops->post(
                                 c->x, r, st->reduce ? c->mr_tmp : c->mr_buf,
                                 e))) {
                            fail_step = (int)t;
                            goto out;
                        }
                    }
                }
                h->rbeg[slot] = b;
                h->rend[slot] = en;
                h->rpost++;
            }
            /* Sends: slice j of step t once slice j of step t-1 is in. */
            while (h->spost < total && h->spost - h->sdone < PP__SLOTS) {
                size_t t = h->spost / nsl, j = h->spost % nsl;
                if (t > 0 && s->steps[t - 1].recv_peer >= 0 &&
                    h->rproc <= (t - 1) * nsl + j)
                    break;
                const pp__step *st = &s->steps[t];
                pp_xreq *r = &h->sreq[h->spost % PP__SLOTS];
                memset(r, 0, sizeof *r);
                r->done = true;
                if (k == 0 && (int)t >= h->started) {
                    pp__fault_point(c, (int)t);
                    h->started = (int)t + 1;
                }
                if (st->send_peer >= 0) {
                    size_t b, en;
                    pp__sched_slice(s, st->send_chunk, k, j, &b, &en);
                    if (en > b) {
                        r->peer = st->send_peer;
                        r->is_send = true;
                        /* the input itself until the ring has written
                         * the chunk (step 0 out of place) */
                        const char *from = t == 0 && s->src ? s->src : buf;
                        r->buf = (char *)from + b * es;
                        r->len = (en - b) * es;
                        r->channel = k;
                        r->done = false;
                        if ((rc = c->ops->post(c->x, r, c->mr_buf, e))) {
                            fail_step = (int)t;
                            goto out;
                        }
                    }
                }
                h->spost++;
            }
            if (h->rproc < total || h->sdone < total) all_done = false;
            if (h->rproc < h->rpost) wl[nw++] = &h->rreq[h->rproc % PP__SLOTS];
            if (h->sdone < h->spost) wl[nw++] = &h->sreq[h->sdone % PP__SLOTS];
        }
        if (all_done) break;
        if (nw == 0) continue; /* something became postable: go again */
        double deadline = pp_exec_now() + c->timeout_s;
        rc = c->ops->wait_any ? c->ops->wait_any(c->x, wl, nw, deadline, e)
                              : c->ops->wait(c->x, wl, 1, deadline, e);
        if (rc) {
            /* the step of the oldest thing outstanding */
            fail_step = s->n_steps;
            for (int k = 0; k < nch; k++) {
                size_t a =
                    ch[k].rproc < ch[k].sdone ? ch[k].rproc : ch[k].sdone;
                if ((int)(a / nsl) < fail_step) fail_step = (int)(a / nsl);
            }
            goto out;
        }
    }
out:
    free(ch);
    free(wl);
    if (rc) pp__step_error(c, fail_step, s->n_steps, rc, e);
    return rc;
}
