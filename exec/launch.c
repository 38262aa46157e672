/*
 * launch.c: who this process is (the launcher's environment) and the
 * local launcher behind --np.
 */
#define _GNU_SOURCE /* prctl's PR_SET_PDEATHSIG, sched_setaffinity */
#include "exec_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int env_int(const char *name, int min, int max, int *out, bool *seen,
                   pp_error *e) {
    const char *v = getenv(name);
    if (!v) return 0;
    int64_t x;
    if (pp_parse_i64(v, min, max, &x) != 0)
        return pp_error_set(e, PP_EUSAGE,
                            "%s: expected an integer in %d..%d, "
                            "got \"%s\"",
                            name, min, max, v);
    *out = (int)x;
    if (seen) *seen = true;
    return 0;
}

int pp_exec_world_from_env(pp_exec_world *w, pp_error *e) {
    pp_exec_world x;
    memset(&x, 0, sizeof x);
    x.nranks = 1;
    x.listen_fd = -1;
    x.launcher = "single";
    /* The launcher's own names first: torchrun sets RANK, srun SLURM_*,
     * mpirun OMPI_*; a torchrun inside an allocation sets both RANK and
     * SLURM_PROCID, and RANK is the one that describes this process. */
    static const struct {
        const char *rank, *size, *local, *local_size, *name;
    } kinds[] = {
        {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "torchrun"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
         "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "mpirun"},
        {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
         "SLURM_NTASKS_PER_NODE", "srun"},
    };
    int rc;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        if (!getenv(kinds[k].rank)) continue;
        bool seen_size = false;
        if ((rc = env_int(kinds[k].size, 1, 1 << 20, &x.nranks, &seen_size,
                          e)) ||
            (rc = env_int(kinds[k].rank, 0, 1 << 20, &x.rank, NULL, e)) ||
            (rc = env_int(kinds[k].local, 0, 1 << 20, &x.local_rank, NULL, e)))
            return rc;
        /* informative (the transport's spin): a malformed one is unknown */
        pp_error ignore = PP_ERROR_INIT;
        if (env_int(kinds[k].local_size, 1, 1 << 20, &x.local_size, NULL,
                    &ignore))
            x.local_size = 0;
        if (!seen_size)
            return pp_error_set(e, PP_EUSAGE, "%s is set but %s is not",
                                kinds[k].rank, kinds[k].size);
        if (x.rank >= x.nranks)
            return pp_error_set(e, PP_EUSAGE, "%s=%d is not below %s=%d",
                                kinds[k].rank, x.rank, kinds[k].size, x.nranks);
        x.launcher = kinds[k].name;
        break;
    }
#ifdef PODPLAN_HAVE_MPI
    x.use_mpi = strcmp(x.launcher, "mpirun") == 0 && !getenv("MASTER_ADDR");
#endif
    if (x.nranks > 1 && !x.use_mpi) {
        const char *addr = getenv("MASTER_ADDR");
        if (!addr || !*addr)
            return pp_error_set(e, PP_EUSAGE,
                                "%d ranks under %s: MASTER_ADDR "
                                "and MASTER_PORT must name rank 0's rendezvous "
                                "(host and a free port)%s",
                                x.nranks, x.launcher,
                                strcmp(x.launcher, "mpirun") == 0
                                    ? "; pass them with mpirun -x, or build "
                                      "with MPI"
                                    : "");
        snprintf(x.master_addr, sizeof x.master_addr, "%s", addr);
        if (!getenv("MASTER_PORT"))
            return pp_error_set(e, PP_EUSAGE, "MASTER_PORT is not set");
        if ((rc = env_int("MASTER_PORT", 1, 65535, &x.master_port, NULL, e)))
            return rc;
    }
    *w = x;
    return 0;
}

/* ---- --np --------------------------------------------------------------- */

static volatile sig_atomic_t got_signal;
static void on_signal(int sig) {
    got_signal = sig;
}

static int exit_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 1; /* killed or stopped for good: the work failed */
}

int pp__cpus_allowed(void *set) {
    cpu_set_t cs;
    if (sched_getaffinity(0, sizeof cs, &cs) != 0) return 0;
    if (set) memcpy(set, &cs, sizeof cs);
    return CPU_COUNT(&cs);
}

int pp_exec_spawn_local(int np, pp_exec_rank_fn fn, void *ctx, double grace_s,
                        pp_error *e) {
    if (np < 1 || np > 1024)
        return pp_error_set(e, PP_EUSAGE, "--np: expected 1..1024, got %d", np);
    /* The rendezvous socket is opened here and inherited by rank 0, so the
     * port is free and bound before any rank looks for it. */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(lfd, 1024) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
        int err = errno;
        if (lfd >= 0) close(lfd);
        return pp_error_set(e, PP_EIO, "--np: rendezvous socket: %s",
                            strerror(err));
    }
    fflush(stdout);
    fflush(stderr);
    /* One core per rank when there are enough, as mpirun binds by
     * default: a rank that migrates between cores mid-collective loses
     * its caches and stalls its peer. */
    cpu_set_t allowed;
    bool bind =
        np <= pp__cpus_allowed(&allowed) && !getenv("PODPLAN_EXEC_NOBIND");
    pid_t *pids = pp_xcalloc((size_t)np, sizeof *pids);
    pid_t parent = getpid();
    pid_t pgid = 0;
    int worst = 0, running = 0;
    for (int r = 0; r < np; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            worst = 2;
            fprintf(stderr, "podplan: --np: fork: %s\n", strerror(errno));
            break;
        }
        if (pid == 0) {
            setpgid(0, pgid);
            /* Die with the launcher; and if it died before this line, go. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(1);
            if (bind) {
                cpu_set_t one;
                CPU_ZERO(&one);
                for (int c = 0, k = 0; c < CPU_SETSIZE; c++)
                    if (CPU_ISSET(c, &allowed) && k++ == r) CPU_SET(c, &one);
                sched_setaffinity(0, sizeof one, &one);
            }
            pp_exec_world w;
            memset(&w, 0, sizeof w);
            w.rank = r;
            w.nranks = np;
            w.local_rank = r;
            w.local_size = np;
            w.launcher = "np";
            snprintf(w.master_addr, sizeof w.master_addr, "127.0.0.1");
            w.master_port = ntohs(sa.sin_port);
            w.listen_fd = r == 0 ? lfd : -1;
            if (r != 0) close(lfd);
            int code = fn(&w, ctx);
            fflush(stdout);
            fflush(stderr);
            _exit(code);
        }
        if (pgid == 0) pgid = pid;
        setpgid(pid, pgid); /* both sides: whichever runs first */
        pids[r] = pid;
        running++;
    }
    close(lfd);
    struct sigaction sa_new, sa_int, sa_term;
    memset(&sa_new, 0, sizeof sa_new);
    sa_new.sa_handler = on_signal;
    sigaction(SIGINT, &sa_new, &sa_int);
    sigaction(SIGTERM, &sa_new, &sa_term);
    double kill_at = worst ? pp_exec_now() : -1;
    while (running > 0) {
        if (got_signal && pgid) {
            kill(-pgid, SIGKILL);
            kill_at = -1;
        }
        if (kill_at >= 0 && pp_exec_now() >= kill_at && pgid) {
            /* A stopped rank never reads its sockets: SIGKILL ends it too. */
            kill(-pgid, SIGKILL);
            kill_at = -1;
        }
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid == 0 || (pid < 0 && errno == EINTR)) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (pid < 0) break;
        int code = exit_of(status);
        for (int r = 0; r < np; r++)
            if (pids[r] == pid) {
                pids[r] = 0;
                running--;
                if (code > worst) worst = code;
                if (code != 0 && kill_at < 0 && running > 0)
                    kill_at = pp_exec_now() + grace_s;
            }
    }
    sigaction(SIGINT, &sa_int, NULL);
    sigaction(SIGTERM, &sa_term, NULL);
    free(pids);
    if (got_signal) return 1;
    return worst;
}
