/*
 * xport_tcp.c: the TCP transport behind xport.h.
 *
 * `channels` sockets per peer; each socket carries its sends in the order
 * they were posted and fills its receives in the order they were posted,
 * so a schedule that posts matching sends and receives in the same order
 * on both sides needs no tags.  Sockets are non-blocking and driven by
 * poll() from wait(): bytes go straight between the socket and the
 * caller's buffer (no copy here), every read is bounded by what the
 * request still expects, and a short read or write just waits for the next
 * poll (after a short spin, see progress()).  TCP_NODELAY because the
 * slices are sent whole and latency counts for small messages; large
 * socket buffers so a slice is in flight while the receiver reduces the
 * previous one.
 */
#include "exec_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SOCK_BUF_BYTES (4 << 20)
#define SPIN_S 200e-6
#define CONN_MAGIC 0x70705431u /* "ppT1" */

/* ms left until deadline, for poll(); at least 0, at most 1 s so a signal
 * or a clock step never parks us long past it. */
static int ms_left(double deadline) {
    double left = deadline - pp_exec_now();
    if (left <= 0) return 0;
    if (left > 1.0) return 1000;
    return (int)(left * 1000.0) + 1;
}

void pp__sock_tune(int fd) {
    int one = 1, sz = SOCK_BUF_BYTES;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
}

static int set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL, 0);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int sock_io_all(int fd, void *buf, size_t len, bool wr, double deadline,
                       const char *what, pp_error *e) {
    size_t off = 0;
    while (off < len) {
        ssize_t k = wr ? send(fd, (char *)buf + off, len - off, MSG_NOSIGNAL)
                       : recv(fd, (char *)buf + off, len - off, 0);
        if (k > 0) {
            off += (size_t)k;
            continue;
        }
        if (k == 0 && !wr)
            return pp_error_set(e, PP_EPEER, "%s from %s: connection closed",
                                "recv", what);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return pp_error_set(e, PP_EPEER, "%s %s %s: %s",
                                wr ? "send" : "recv", wr ? "to" : "from", what,
                                strerror(errno));
        if (pp_exec_now() >= deadline)
            return pp_error_set(e, PP_ETIMEOUT, "%s %s %s: timed out",
                                wr ? "send" : "recv", wr ? "to" : "from", what);
        struct pollfd p = {fd, wr ? POLLOUT : POLLIN, 0};
        if (poll(&p, 1, ms_left(deadline)) < 0 && errno != EINTR)
            return pp_error_set(e, PP_EIO, "poll: %s", strerror(errno));
    }
    return 0;
}

int pp__sock_write_all(int fd, const void *buf, size_t len, double deadline,
                       const char *what, pp_error *e) {
    return sock_io_all(fd, (void *)buf, len, true, deadline, what, e);
}

int pp__sock_read_all(int fd, void *buf, size_t len, double deadline,
                      const char *what, pp_error *e) {
    return sock_io_all(fd, buf, len, false, deadline, what, e);
}

/* Whether a failed connect() may succeed if tried again: the listener
 * is not up yet (refused), its backlog is full, or the route is still
 * coming up.  Anything else (EACCES, EADDRNOTAVAIL, ...) is final. */
static bool connect_transient(int err) {
    return err == ECONNREFUSED || err == ETIMEDOUT || err == EAGAIN ||
           err == EINTR || err == ECONNRESET || err == ECONNABORTED ||
           err == EHOSTUNREACH || err == ENETUNREACH;
}

/* One non-blocking connect() attempt, completed by poll() before
 * deadline.  Returns 0 (connected), or an errno value; ETIMEDOUT when the
 * deadline came first (the kernel's own SYN retries would take minutes). */
static int connect_once(int fd, const struct sockaddr_in *sa, double deadline) {
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0) return 0;
    if (errno != EINPROGRESS && errno != EINTR) return errno;
    for (;;) {
        struct pollfd p = {fd, POLLOUT, 0};
        int n = poll(&p, 1, ms_left(deadline));
        if (n < 0 && errno != EINTR) return errno;
        if (n > 0) {
            int err = 0;
            socklen_t len = sizeof err;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                return errno;
            return err;
        }
        if (pp_exec_now() >= deadline) return ETIMEDOUT;
    }
}

int pp__sock_connect(const struct sockaddr_in *sa, double deadline,
                     const char *what, int *fd_out, pp_error *e) {
    double t0 = pp_exec_now();
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof ip);
    unsigned port = ntohs(sa->sin_port);
    int err = 0, tries = 0;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            return pp_error_set(e, PP_EIO, "connect to %s at %s:%u: socket: %s",
                                what, ip, port, strerror(errno));
        /* Buffer sizes before connect(): the window scale is agreed in the
         * handshake. */
        pp__sock_tune(fd);
        tries++;
        err = connect_once(fd, sa, deadline);
        if (err == 0) {
            /* Hand back a blocking socket, as a plain connect() would:
             * callers choose their own mode. */
            int fl = fcntl(fd, F_GETFL, 0);
            if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            *fd_out = fd;
            return 0;
        }
        close(fd);
        if (!connect_transient(err))
            return pp_error_set(e, PP_EPEER, "connect to %s at %s:%u: %s", what,
                                ip, port, strerror(err));
        if (pp_exec_now() >= deadline) break;
        /* Refused at once: the listener is not up yet; try again soon
         * (10 ms, growing to 100 ms), never past the deadline. */
        double pause = 0.01 * tries;
        if (pause > 0.1) pause = 0.1;
        double left = deadline - pp_exec_now();
        if (pause > left) pause = left;
        if (pause > 0) {
            struct timespec ts = {0, (long)(pause * 1e9)};
            nanosleep(&ts, NULL);
        }
        if (pp_exec_now() >= deadline) break;
    }
    return pp_error_set(e, PP_ETIMEOUT,
                        "connect to %s at %s:%u: no connection "
                        "after %.1f s (%d attempt%s; last: %s)",
                        what, ip, port, pp_exec_now() - t0, tries,
                        tries == 1 ? "" : "s",
                        err == ETIMEDOUT ? "no answer" : strerror(err));
}

/* ---- the transport ------------------------------------------------------ */

/* A posted request in a connection's send or receive queue (FIFO). */
typedef struct qitem {
    pp_xreq *r;
    size_t off;
    struct qitem *next;
} qitem;

typedef struct conn {
    int fd; /* -1 when not connected */
    int peer, channel;
    qitem *sq, *sq_tail, *rq, *rq_tail;
} conn;

struct pp_xport {
    int rank, nranks, channels;
    double timeout_s;
    int lfd;
    conn *conns; /* nranks * channels, [peer * channels + ch] */
    qitem *free_items;
    struct pollfd *pfd; /* scratch for wait */
    int *pconn;
    bool spin;         /* pp_xport_opts.spin */
    double idle_since; /* when progress() last found nothing ready, or 0 */
    int dead_peer;     /* first peer whose connection failed, or -1 */
    pp_error dead;     /* and why: every later wait reports it */
};

struct pp_xmr {
    int dummy;
};
static pp_xmr the_mr;

static conn *conn_of(pp_xport *t, int peer, int ch) {
    return &t->conns[(size_t)peer * (size_t)t->channels + (size_t)ch];
}

static int tcp_create(const pp_xport_opts *o, pp_xport **out, char *addr,
                      size_t *addr_len, pp_error *e) {
    if (o->nranks < 1 || o->rank < 0 || o->rank >= o->nranks ||
        o->channels < 1 || o->channels > 64)
        return pp_error_set(e, PP_EUSAGE,
                            "tcp: bad rank %d of %d or %d "
                            "channels (1..64)",
                            o->rank, o->nranks, o->channels);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    const char *ip = o->device && o->device[0] ? o->device : "127.0.0.1";
    struct in_addr adv;
    if (inet_pton(AF_INET, ip, &adv) != 1)
        return pp_error_set(e, PP_EUSAGE, "tcp: \"%s\" is not an IPv4 address",
                            ip);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return pp_error_set(e, PP_EIO, "tcp: socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t sl = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        int err = errno;
        close(fd);
        return pp_error_set(e, PP_EIO, "tcp: listen: %s", strerror(err));
    }
    int n = snprintf(addr, PP_XPORT_ADDR_MAX, "tcp %s %u", ip,
                     (unsigned)ntohs(sa.sin_port));
    *addr_len = (size_t)n + 1;
    pp_xport *t = pp_xcalloc(1, sizeof *t);
    t->rank = o->rank;
    t->nranks = o->nranks;
    t->channels = o->channels;
    t->timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
    t->spin = o->spin;
    t->lfd = fd;
    t->dead_peer = -1;
    t->conns =
        pp_xcalloc((size_t)o->nranks * (size_t)o->channels, sizeof(conn));
    for (int p = 0; p < o->nranks; p++)
        for (int c = 0; c < o->channels; c++) {
            conn *k = conn_of(t, p, c);
            k->fd = -1;
            k->peer = p;
            k->channel = c;
        }
    size_t nc = (size_t)o->nranks * (size_t)o->channels;
    t->pfd = pp_xcalloc(nc, sizeof *t->pfd);
    t->pconn = pp_xcalloc(nc, sizeof *t->pconn);
    *out = t;
    return 0;
}

static int parse_blob(const char *a, size_t len, struct sockaddr_in *sa) {
    char ip[64];
    unsigned port;
    if (len == 0 || len > PP_XPORT_ADDR_MAX || a[len - 1] != '\0' ||
        sscanf(a, "tcp %63s %u", ip, &port) != 2 || port == 0 || port > 65535)
        return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, ip, &sa->sin_addr) == 1 ? 0 : -1;
}

/* Lower rank connects, higher accepts (xport.h): each connecting side
 * sends {magic, rank, channel} so the acceptor knows which slot it is. */
static int tcp_connect(pp_xport *t, const int *peers, size_t n_peers,
                       const char *const *addrs, const size_t *addr_lens,
                       pp_error *e) {
    double deadline = pp_exec_now() + t->timeout_s;
    int expect = 0;
    char what[32];
    for (size_t i = 0; i < n_peers; i++) {
        int p = peers[i];
        if (p < 0 || p >= t->nranks || p == t->rank)
            return pp_error_set(e, PP_EINTERNAL, "tcp: bad peer %d", p);
        if (p < t->rank) {
            expect += t->channels;
            continue;
        }
        struct sockaddr_in sa;
        if (parse_blob(addrs[p], addr_lens[p], &sa) != 0)
            return pp_error_set(e, PP_EPEER,
                                "rank %d: bad tcp address from "
                                "rank %d",
                                t->rank, p);
        for (int c = 0; c < t->channels; c++) {
            int fd = -1;
            /* The peer listens before the blobs are exchanged, so a refusal
             * is final except on a busy backlog: pp__sock_connect retries
             * it, and gives up at the deadline however far the peer is. */
            snprintf(what, sizeof what, "rank %d", p);
            int rc = pp__sock_connect(&sa, deadline, what, &fd, e);
            if (rc) {
                pp_error_prefix(e, "rank %d", t->rank);
                return rc;
            }
            uint32_t hello[3] = {CONN_MAGIC, (uint32_t)t->rank, (uint32_t)c};
            rc = pp__sock_write_all(fd, hello, sizeof hello, deadline, what, e);
            if (rc) {
                close(fd);
                pp_error_prefix(e, "rank %d", t->rank);
                return rc;
            }
            set_nonblock(fd);
            conn_of(t, p, c)->fd = fd;
        }
    }
    while (expect > 0) {
        struct pollfd pl = {t->lfd, POLLIN, 0};
        if (pp_exec_now() >= deadline)
            return pp_error_set(e, PP_ETIMEOUT,
                                "rank %d: %d connection%s from "
                                "lower ranks not made within %g s",
                                t->rank, expect, expect == 1 ? "" : "s",
                                t->timeout_s);
        if (poll(&pl, 1, ms_left(deadline)) <= 0) continue;
        int fd = accept(t->lfd, NULL, NULL);
        if (fd < 0) continue;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        pp__sock_tune(fd);
        uint32_t hello[3];
        pp_error tmp = PP_ERROR_INIT;
        /* A stranger (a port scanner, a stale rank) is dropped, not fatal. */
        if (pp__sock_read_all(fd, hello, sizeof hello, pp_exec_now() + 2.0,
                              "a connecting rank", &tmp) != 0 ||
            hello[0] != CONN_MAGIC || hello[1] >= (uint32_t)t->rank ||
            hello[2] >= (uint32_t)t->channels) {
            close(fd);
            continue;
        }
        int p = (int)hello[1];
        bool wanted = false;
        for (size_t i = 0; i < n_peers; i++) wanted |= peers[i] == p;
        conn *k = conn_of(t, p, (int)hello[2]);
        if (!wanted || k->fd >= 0) {
            close(fd);
            continue;
        }
        set_nonblock(fd);
        k->fd = fd;
        expect--;
    }
    return 0;
}

static int tcp_reg(pp_xport *t, void *buf, size_t len, bool on_device,
                   pp_xmr **out, pp_error *e) {
    if (on_device)
        return pp_error_set(e, PP_ENOSYS,
                            "tcp: device memory must be staged "
                            "through host buffers");
    *out = &the_mr;
    return 0;
}

static void tcp_dereg(pp_xport *t, pp_xmr *mr) {}

static int tcp_post(pp_xport *t, pp_xreq *r, pp_xmr *mr, pp_error *e) {
    if (r->peer < 0 || r->peer >= t->nranks || r->channel < 0 ||
        r->channel >= t->channels)
        return pp_error_set(e, PP_EINTERNAL, "tcp: post to rank %d channel %d",
                            r->peer, r->channel);
    conn *k = conn_of(t, r->peer, r->channel);
    if (k->fd < 0)
        return pp_error_set(e, PP_EINTERNAL,
                            "rank %d: no connection to rank "
                            "%d",
                            t->rank, r->peer);
    r->done = r->len == 0;
    if (r->done) return 0;
    qitem *q = t->free_items;
    if (q)
        t->free_items = q->next;
    else
        q = pp_xmalloc(sizeof *q);
    q->r = r;
    q->off = 0;
    q->next = NULL;
    qitem **head = r->is_send ? &k->sq : &k->rq;
    qitem **tail = r->is_send ? &k->sq_tail : &k->rq_tail;
    if (*head)
        (*tail)->next = q;
    else
        *head = q;
    *tail = q;
    r->priv = q;
    return 0;
}

/* Moves as many bytes as the socket takes or has for the queue's head
 * requests.  Returns 0, or PP_EPEER with e filled. */
static int progress_conn(pp_xport *t, conn *k, bool wr, pp_error *e) {
    qitem **head = wr ? &k->sq : &k->rq;
    while (*head) {
        qitem *q = *head;
        pp_xreq *r = q->r;
        size_t want = r->len - q->off;
        ssize_t n =
            wr ? send(k->fd, (char *)r->buf + q->off, want, MSG_NOSIGNAL)
               : recv(k->fd, (char *)r->buf + q->off, want, 0);
        if (n > 0) {
            q->off += (size_t)n;
            if (q->off < r->len) continue;
            r->done = true;
            *head = q->next;
            q->next = t->free_items;
            t->free_items = q;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        return pp_error_set(e, PP_EPEER, "rank %d: %s rank %d: %s", t->rank,
                            wr ? "send to" : "recv from", k->peer,
                            n == 0 ? "connection closed" : strerror(errno));
    }
    return 0;
}

static int count_done(pp_xreq *const *reqs, size_t n) {
    int d = 0;
    for (size_t i = 0; i < n; i++) d += reqs[i]->done;
    return d;
}

/* One round: poll every connection with queued work, move bytes. */
static int progress(pp_xport *t, double deadline, pp_error *e) {
    nfds_t np = 0;
    size_t nc = (size_t)t->nranks * (size_t)t->channels;
    for (size_t i = 0; i < nc; i++) {
        conn *k = &t->conns[i];
        if (k->fd < 0 || (!k->sq && !k->rq)) continue;
        t->pfd[np].fd = k->fd;
        t->pfd[np].events =
            (short)((k->sq ? POLLOUT : 0) | (k->rq ? POLLIN : 0));
        t->pfd[np].revents = 0;
        t->pconn[np++] = (int)i;
    }
    if (np == 0) return 0;
    /* Spin first (poll without sleeping, yielding the core) and sleep in
     * poll() only after SPIN_S without a ready socket, as MPI and NCCL
     * progress loops do: the ring waits on its peer at every slice, and
     * a wake-up from poll() each time doubled a 2-rank 1-4 MiB allreduce
     * here (1 MiB: 602 -> 313 us).  Only when every rank of the host has
     * a core (o->spin): spinning ranks that share cores, under other
     * load, took the time a peer needed to send (Open MPI yields when
     * oversubscribed for the same reason). */
    int rc = poll(t->pfd, np, t->spin ? 0 : ms_left(deadline));
    if (rc == 0 && t->spin) {
        double now = pp_exec_now();
        if (t->idle_since == 0) t->idle_since = now;
        if (now - t->idle_since < SPIN_S) {
            sched_yield();
            return 0;
        }
        rc = poll(t->pfd, np, ms_left(deadline));
    }
    t->idle_since = 0;
    if (rc < 0) {
        if (errno == EINTR) return 0;
        return pp_error_set(e, PP_EIO, "poll: %s", strerror(errno));
    }
    for (nfds_t i = 0; i < np && rc > 0; i++) {
        short ev = t->pfd[i].revents;
        if (!ev) continue;
        conn *k = &t->conns[t->pconn[i]];
        /* POLLHUP/POLLERR: let recv/send report what happened. */
        if ((ev & (POLLIN | POLLHUP | POLLERR)) && k->rq) {
            int r = progress_conn(t, k, false, e);
            if (r) return r;
        }
        if ((ev & (POLLOUT | POLLHUP | POLLERR)) && k->sq) {
            int r = progress_conn(t, k, true, e);
            if (r) return r;
        }
    }
    return 0;
}

static int timeout_msg(pp_xport *t, pp_xreq *const *reqs, size_t n,
                       pp_error *e) {
    for (size_t i = 0; i < n; i++)
        if (!reqs[i]->done)
            return pp_error_set(e, PP_ETIMEOUT,
                                "rank %d: %s rank %d: no "
                                "progress within %g s",
                                t->rank,
                                reqs[i]->is_send ? "send to" : "recv from",
                                reqs[i]->peer, t->timeout_s);
    return pp_error_set(e, PP_ETIMEOUT, "rank %d: timed out", t->rank);
}

static int wait_n(pp_xport *t, pp_xreq *const *reqs, size_t n, size_t need,
                  double deadline, pp_error *e) {
    if (t->dead_peer >= 0) {
        pp_error_set(e, t->dead.code, "%s", t->dead.msg);
        return t->dead.code;
    }
    while ((size_t)count_done(reqs, n) < need) {
        if (pp_exec_now() >= deadline) return timeout_msg(t, reqs, n, e);
        pp_error tmp = PP_ERROR_INIT;
        int rc = progress(t, deadline, &tmp);
        if (rc) {
            t->dead_peer = 0;
            t->dead = tmp;
            pp_error_set(e, tmp.code, "%s", tmp.msg);
            return rc;
        }
    }
    return 0;
}

static int tcp_wait(pp_xport *t, pp_xreq *const *reqs, size_t n,
                    double deadline, pp_error *e) {
    return wait_n(t, reqs, n, n, deadline, e);
}

static int tcp_wait_any(pp_xport *t, pp_xreq *const *reqs, size_t n,
                        double deadline, pp_error *e) {
    return wait_n(t, reqs, n, n ? 1 : 0, deadline, e);
}

static void tcp_destroy(pp_xport *t) {
    if (!t) return;
    size_t nc = (size_t)t->nranks * (size_t)t->channels;
    for (size_t i = 0; i < nc; i++) {
        conn *k = &t->conns[i];
        if (k->fd >= 0) close(k->fd);
        /* queued items point at the caller's requests: just free ours */
        for (qitem *q = k->sq, *nx; q; q = nx) {
            nx = q->next;
            free(q);
        }
        for (qitem *q = k->rq, *nx; q; q = nx) {
            nx = q->next;
            free(q);
        }
    }
    for (qitem *q = t->free_items, *nx; q; q = nx) {
        nx = q->next;
        free(q);
    }
    if (t->lfd >= 0) close(t->lfd);
    free(t->conns);
    free(t->pfd);
    free(t->pconn);
    free(t);
}

const pp_xport_ops pp_xport_tcp = {
    .name = "tcp",
    .create = tcp_create,
    .connect = tcp_connect,
    .reg = tcp_reg,
    .dereg = tcp_dereg,
    .post = tcp_post,
    .wait = tcp_wait,
    .destroy = tcp_destroy,
    .wait_any = tcp_wait_any,
};
