#define _DEFAULT_SOURCE /* getifaddrs, IFF_* */
/*
 * bootstrap.c: getting the ranks to know each other's transport address.
 *
 * TCP rendezvous (torchrun, srun, --np, or mpirun without an MPI build):
 * rank 0 listens at MASTER_ADDR:MASTER_PORT; every other rank connects and
 * sends a hello {magic, version, rank, nranks, blob_len} and its blob.
 * Rank 0 takes only what it expects -- each rank of 1..n-1 once, the same
 * world size, a blob of at most PP_XPORT_ADDR_MAX bytes -- and answers a
 * bad hello with a reason before closing, so a misconfigured rank fails
 * at once with that reason instead of timing out.  When all have arrived
 * it sends the address book to everyone; that is also a barrier.  The
 * star stays up afterwards for gathers (per-rank times) and barriers.
 *
 * MPI (mpirun on a build with MPI): MPI_Allgather of the blobs only, as
 * nccl-tests does; the data never goes through MPI.
 */
#include "exec_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef PODPLAN_HAVE_MPI
#include <mpi.h>
#endif

struct pp__boot {
    int rank, nranks;
    bool mpi;
    double timeout_s;
    int lfd;  /* rank 0: listening socket */
    int *fds; /* rank 0: one per rank (fds[0] unused) */
    int fd;   /* others: to rank 0 */
    char master[300];
    size_t blob_max; /* the all-gather's stride: every rank's blob fits */
};

typedef struct reply_hdr {
    uint32_t status, len; /* status 0: len = nranks * (4 + ADDR_MAX) table;
                             else len = bytes of a reason */
} reply_hdr;

/* First UP non-loopback IPv4 address, for the MPI path (no rendezvous
 * socket to ask); PODPLAN_EXEC_IFADDR overrides. */
static void guess_local_ip(char ip[64]) {
    const char *env = getenv("PODPLAN_EXEC_IFADDR");
    snprintf(ip, 64, "%s", env && *env ? env : "127.0.0.1");
    if (env && *env) return;
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) != 0) return;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
        inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip,
                  64);
        break;
    }
    freeifaddrs(ifs);
}

static int resolve(const char *host, int port, struct sockaddr_in *sa,
                   pp_error *e) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res)
        return pp_error_set(e, PP_EUSAGE, "MASTER_ADDR \"%s\": %s", host,
                            gai_strerror(rc));
    memcpy(sa, res->ai_addr, sizeof *sa);
    sa->sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return 0;
}

int pp__boot_open(const pp_exec_world *w, double timeout_s, pp__boot **out,
                  char local_ip[64], pp_error *e) {
    pp__boot *b = pp_xcalloc(1, sizeof *b);
    b->blob_max = PP_XPORT_ADDR_MAX;
    b->rank = w->rank;
    b->nranks = w->nranks;
    b->timeout_s = timeout_s;
    b->lfd = b->fd = -1;
    snprintf(b->master, sizeof b->master, "%s:%d", w->master_addr,
             w->master_port);
    snprintf(local_ip, 64, "127.0.0.1");
    int rc = 0;
    if (w->use_mpi) {
#ifdef PODPLAN_HAVE_MPI
        int inited = 0;
        MPI_Initialized(&inited);
        if (!inited) MPI_Init(NULL, NULL);
        b->mpi = true;
        guess_local_ip(local_ip);
        *out = b;
        return 0;
#else
        free(b);
        return pp_error_set(e, PP_EUSAGE, "this podplan was built without MPI");
#endif
    }
    if (w->nranks == 1) {
        *out = b;
        return 0;
    }
    struct sockaddr_in sa;
    if (w->rank == 0 && w->listen_fd >= 0) {
        b->lfd = w->listen_fd;
        socklen_t sl = sizeof sa;
        getsockname(b->lfd, (struct sockaddr *)&sa, &sl);
        inet_ntop(AF_INET, &sa.sin_addr, local_ip, 64);
    } else {
        if ((rc = resolve(w->master_addr, w->master_port, &sa, e))) goto fail;
        if (w->rank == 0) {
            b->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            int one = 1;
            setsockopt(b->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (b->lfd < 0 ||
                bind(b->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
                listen(b->lfd, 1024) != 0) {
                rc = pp_error_set(e, PP_EIO, "rank 0: listen on %s: %s",
                                  b->master, strerror(errno));
                goto fail;
            }
            if (sa.sin_addr.s_addr == htonl(INADDR_ANY))
                guess_local_ip(local_ip);
            else
                inet_ntop(AF_INET, &sa.sin_addr, local_ip, 64);
        } else {
            /* Rank 0 may not listen yet (refused: retried) or its host
             * may not answer at all (poll()ed): either way this rank gives
             * up at the deadline, not after the kernel's SYN retries. */
            char what[320];
            struct in_addr num;
            /* a host name is shown too, for the resolved address may
             * surprise */
            if (inet_pton(AF_INET, w->master_addr, &num) == 1)
                snprintf(what, sizeof what, "rank 0's rendezvous");
            else
                snprintf(what, sizeof what,
                         "rank 0's rendezvous (MASTER_ADDR "
                         "%s)",
                         w->master_addr);
            if ((rc = pp__sock_connect(&sa, pp_exec_now() + timeout_s, what,
                                       &b->fd, e))) {
                pp_error_prefix(e, "rank %d", w->rank);
                goto fail;
            }
            struct sockaddr_in me;
            socklen_t sl = sizeof me;
            getsockname(b->fd, (struct sockaddr *)&me, &sl);
            inet_ntop(AF_INET, &me.sin_addr, local_ip, 64);
        }
    }
    *out = b;
    return 0;
fail:
    if (b->lfd >= 0 && b->lfd != w->listen_fd) close(b->lfd);
    free(b);
    return rc;
}

static void reject(int fd, const char *why) {
    reply_hdr h = {1, (uint32_t)strlen(why)};
    pp_error tmp = PP_ERROR_INIT;
    double dl = pp_exec_now() + 1.0;
    if (pp__sock_write_all(fd, &h, sizeof h, dl, "a rank", &tmp) == 0)
        pp__sock_write_all(fd, why, h.len, dl, "a rank", &tmp);
    /* Closing with unread bytes (the blob we did not take) would send a
     * reset that can overtake the reason: drain a little first. */
    shutdown(fd, SHUT_WR);
    char sink[512];
    struct pollfd p = {fd, POLLIN, 0};
    for (int i = 0; i < 8 && poll(&p, 1, 100) > 0; i++)
        if (read(fd, sink, sizeof sink) <= 0) break;
    close(fd);
}

/* Rank 0: accept hellos until every rank has sent a good one. */
static int accept_ranks(pp__boot *b, char *blobs, size_t *lens, pp_error *e) {
    double deadline = pp_exec_now() + b->timeout_s;
    int missing = b->nranks - 1;
    char rejected[512] = "";
    while (missing > 0) {
        if (pp_exec_now() >= deadline) {
            char list[256] = "";
            for (int r = 1; r < b->nranks; r++) {
                size_t u = strlen(list);
                if (b->fds[r] < 0 && u < sizeof list - 16)
                    snprintf(list + u, sizeof list - u, "%s%d", u ? "," : "",
                             r);
            }
            return pp_error_set(e, PP_ETIMEOUT,
                                "rank 0: rendezvous at %s: "
                                "rank%s %s did not join within %g s%s%s",
                                b->master, missing > 1 ? "s" : "", list,
                                b->timeout_s, rejected[0] ? "; rejected: " : "",
                                rejected);
        }
        struct pollfd p = {b->lfd, POLLIN, 0};
        int left = (int)((deadline - pp_exec_now()) * 1000) + 1;
        if (poll(&p, 1, left > 1000 ? 1000 : left) <= 0) continue;
        int fd = accept(b->lfd, NULL, NULL);
        if (fd < 0) continue;
        pp__sock_tune(fd);
        pp__boot_hello h;
        pp_error tmp = PP_ERROR_INIT;
        char why[160] = "";
        /* Read at most the hello, then at most b->blob_max bytes. */
        if (pp__sock_read_all(fd, &h, sizeof h, pp_exec_now() + 2.0,
                              "a joining rank", &tmp) != 0)
            snprintf(why, sizeof why, "incomplete hello (%.100s)", tmp.msg);
        else if (h.magic != PP__BOOT_MAGIC || h.version != PP__BOOT_VERSION)
            snprintf(why, sizeof why,
                     "not a podplan rank (magic 0x%08x, "
                     "version %u; expected 0x%08x, %u)",
                     h.magic, h.version, PP__BOOT_MAGIC, PP__BOOT_VERSION);
        else if (h.nranks != (uint32_t)b->nranks)
            snprintf(why, sizeof why,
                     "rank %u says the world has %u ranks; "
                     "rank 0 has %d",
                     h.rank, h.nranks, b->nranks);
        else if (h.rank == 0 || h.rank >= (uint32_t)b->nranks)
            snprintf(why, sizeof why, "rank %u out of range 1..%d", h.rank,
                     b->nranks - 1);
        else if (b->fds[h.rank] >= 0)
            snprintf(why, sizeof why, "duplicate rank %u", h.rank);
        else if (h.blob_len == 0 || h.blob_len > b->blob_max)
            snprintf(why, sizeof why,
                     "rank %u: address blob of %u bytes "
                     "(1..%zu allowed)",
                     h.rank, h.blob_len, b->blob_max);
        else if (pp__sock_read_all(fd, blobs + (size_t)h.rank * b->blob_max,
                                   h.blob_len, pp_exec_now() + 2.0,
                                   "a joining rank", &tmp) != 0)
            snprintf(why, sizeof why, "rank %u: incomplete blob", h.rank);
        if (why[0]) {
            fprintf(stderr,
                    "podplan: rank 0: rendezvous: rejected a "
                    "connection: %s\n",
                    why);
            size_t u = strlen(rejected);
            if (u < sizeof rejected - 2)
                snprintf(rejected + u, sizeof rejected - u, "%s%s",
                         u ? "; " : "", why);
            reject(fd, why);
            continue;
        }
        lens[h.rank] = h.blob_len;
        b->fds[h.rank] = fd;
        missing--;
    }
    return 0;
}

int pp__boot_set_blob_max(pp__boot *b, size_t n, pp_error *e) {
    /* Every rank computes n from the same options; bounded so that a
     * rendezvous never allocates more than it can check. */
    if (n < PP_XPORT_ADDR_MAX) n = PP_XPORT_ADDR_MAX;
    if (n > (1u << 20))
        return pp_error_set(e, PP_EUSAGE,
                            "address blobs of %zu bytes: too "
                            "many ranks x channels for one exchange",
                            n);
    b->blob_max = n;
    return 0;
}

size_t pp__boot_blob_max(const pp__boot *b) {
    return b->blob_max;
}

int pp__boot_allgather(pp__boot *b, const void *mine, size_t len, char *blobs,
                       size_t *lens, pp_error *e) {
    if (len > b->blob_max)
        return pp_error_set(e, PP_EINTERNAL, "address blob of %zu bytes", len);
    memset(blobs, 0, (size_t)b->nranks * b->blob_max);
    memcpy(blobs + (size_t)b->rank * b->blob_max, mine, len);
    lens[b->rank] = len;
    if (b->nranks == 1) return 0;
#ifdef PODPLAN_HAVE_MPI
    if (b->mpi) {
        unsigned long l = len,
                      *all = pp_xcalloc((size_t)b->nranks, sizeof *all);
        MPI_Allgather(&l, 1, MPI_UNSIGNED_LONG, all, 1, MPI_UNSIGNED_LONG,
                      MPI_COMM_WORLD);
        char *tmp = pp_xmalloc(b->blob_max);
        memcpy(tmp, blobs + (size_t)b->rank * b->blob_max, b->blob_max);
        MPI_Allgather(tmp, b->blob_max, MPI_CHAR, blobs, b->blob_max, MPI_CHAR,
                      MPI_COMM_WORLD);
        for (int r = 0; r < b->nranks; r++) lens[r] = all[r];
        free(tmp);
        free(all);
        return 0;
    }
#endif
    size_t tab = (size_t)b->nranks * (4 + b->blob_max);
    char *table = pp_xcalloc(1, tab);
    double deadline = pp_exec_now() + b->timeout_s;
    int rc = 0;
    if (b->rank == 0) {
        b->fds = pp_xmalloc((size_t)b->nranks * sizeof *b->fds);
        for (int r = 0; r < b->nranks; r++) b->fds[r] = -1;
        if ((rc = accept_ranks(b, blobs, lens, e))) goto out;
        for (int r = 0; r < b->nranks; r++) {
            uint32_t l = (uint32_t)lens[r];
            memcpy(table + (size_t)r * (4 + b->blob_max), &l, 4);
            memcpy(table + (size_t)r * (4 + b->blob_max) + 4,
                   blobs + (size_t)r * b->blob_max, b->blob_max);
        }
        reply_hdr h = {0, (uint32_t)tab};
        for (int r = 1; r < b->nranks && !rc; r++) {
            char what[32];
            snprintf(what, sizeof what, "rank %d", r);
            rc = pp__sock_write_all(b->fds[r], &h, sizeof h, deadline, what, e);
            if (!rc)
                rc = pp__sock_write_all(b->fds[r], table, tab, deadline, what,
                                        e);
        }
        if (rc) pp_error_prefix(e, "rank 0: rendezvous");
    } else {
        pp__boot_hello h = {PP__BOOT_MAGIC, PP__BOOT_VERSION, (uint32_t)b->rank,
                            (uint32_t)b->nranks, (uint32_t)len};
        reply_hdr rh;
        if ((rc = pp__sock_write_all(b->fd, &h, sizeof h, deadline, "rank 0",
                                     e)) ||
            (rc =
                 pp__sock_write_all(b->fd, mine, len, deadline, "rank 0", e)) ||
            (rc = pp__sock_read_all(b->fd, &rh, sizeof rh, deadline, "rank 0",
                                    e))) {
            pp_error_prefix(e, "rank %d: rendezvous at %s", b->rank, b->master);
            goto out;
        }
        if (rh.status != 0) {
            char why[257] = "";
            size_t n = rh.len < 256 ? rh.len : 256;
            pp_error tmp = PP_ERROR_INIT;
            pp__sock_read_all(b->fd, why, n, deadline, "rank 0", &tmp);
            rc = pp_error_set(e, PP_EUSAGE,
                              "rank %d: rendezvous at %s: rank 0 "
                              "rejected this rank: %s",
                              b->rank, b->master, why);
            goto out;
        }
        if (rh.len != tab) {
            rc = pp_error_set(e, PP_EPEER,
                              "rank %d: rendezvous at %s: address "
                              "book of %u bytes, expected %zu",
                              b->rank, b->master, rh.len, tab);
            goto out;
        }
        if ((rc =
                 pp__sock_read_all(b->fd, table, tab, deadline, "rank 0", e))) {
            pp_error_prefix(e, "rank %d: rendezvous", b->rank);
            goto out;
        }
        for (int r = 0; r < b->nranks; r++) {
            uint32_t l;
            memcpy(&l, table + (size_t)r * (4 + b->blob_max), 4);
            if (l > b->blob_max) {
                rc = pp_error_set(e, PP_EPEER, "rendezvous: bad address book");
                goto out;
            }
            lens[r] = l;
            memcpy(blobs + (size_t)r * b->blob_max,
                   table + (size_t)r * (4 + b->blob_max) + 4, b->blob_max);
        }
    }
out:
    free(table);
    return rc;
}

int pp__boot_gather(pp__boot *b, const void *mine, size_t len, void *all,
                    pp_error *e) {
    if (b->rank == 0 && all) memcpy(all, mine, len);
    if (b->nranks == 1) return 0;
#ifdef PODPLAN_HAVE_MPI
    if (b->mpi) {
        if (len > (size_t)1 << 30)
            return pp_error_set(e, PP_EINTERNAL, "gather of %zu bytes", len);
        MPI_Gather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, 0,
                   MPI_COMM_WORLD);
        return 0;
    }
#endif
    double deadline = pp_exec_now() + b->timeout_s;
    char what[32];
    int rc = 0;
    if (b->rank == 0) {
        for (int r = 1; r < b->nranks && !rc; r++) {
            snprintf(what, sizeof what, "rank %d", r);
            rc = pp__sock_read_all(b->fds[r], (char *)all + (size_t)r * len,
                                   len, deadline, what, e);
        }
    } else {
        rc = pp__sock_write_all(b->fd, mine, len, deadline, "rank 0", e);
    }
    if (rc) pp_error_prefix(e, "rank %d: gather", b->rank);
    return rc;
}

int pp__boot_bcast(pp__boot *b, void *buf, size_t len, pp_error *e) {
    if (b->nranks == 1) return 0;
#ifdef PODPLAN_HAVE_MPI
    if (b->mpi) {
        MPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
        return 0;
    }
#endif
    double deadline = pp_exec_now() + b->timeout_s;
    char what[32];
    int rc = 0;
    if (b->rank == 0) {
        for (int r = 1; r < b->nranks && !rc; r++) {
            snprintf(what, sizeof what, "rank %d", r);
            rc = pp__sock_write_all(b->fds[r], buf, len, deadline, what, e);
        }
    } else {
        rc = pp__sock_read_all(b->fd, buf, len, deadline, "rank 0", e);
    }
    if (rc) pp_error_prefix(e, "rank %d: broadcast", b->rank);
    return rc;
}

int pp__boot_barrier(pp__boot *b, pp_error *e) {
#ifdef PODPLAN_HAVE_MPI
    if (b->mpi) {
        MPI_Barrier(MPI_COMM_WORLD);
        return 0;
    }
#endif
    char one = 1, *all = b->rank == 0 ? pp_xcalloc((size_t)b->nranks, 1) : NULL;
    int rc = pp__boot_gather(b, &one, 1, all, e);
    if (!rc) rc = pp__boot_bcast(b, &one, 1, e);
    free(all);
    return rc;
}

void pp__boot_close(pp__boot *b) {
    if (!b) return;
#ifdef PODPLAN_HAVE_MPI
    if (b->mpi) MPI_Finalize();
#endif
    if (b->fds)
        for (int r = 1; r < b->nranks; r++)
            if (b->fds[r] >= 0) close(b->fds[r]);
    free(b->fds);
    if (b->fd >= 0) close(b->fd);
    if (b->lfd >= 0) close(b->lfd);
    free(b);
}
