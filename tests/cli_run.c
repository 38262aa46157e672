/*
 * cli_run.c: spawns the podplan binary with stdout and stderr sent to
 * temporary files (no pipes, so no deadlock on large output).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <spawn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"

extern char **environ;

char *cli_slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, (size_t)n, fp);
    buf[got] = '\0';
    fclose(fp);
    return buf;
}

void cli_run(cli_result *r, const char *const *argv) {
    char out_path[] = "/tmp/podplan-out-XXXXXX",
         err_path[] = "/tmp/podplan-err-XXXXXX";
    int ofd = mkstemp(out_path), efd = mkstemp(err_path);
    assert_true(ofd >= 0 && efd >= 0);
    const char *args[64];
    int n = 0;
    args[n++] = PODPLAN_BIN;
    for (int i = 0; argv[i] && n < 63; i++) args[n++] = argv[i];
    args[n] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, ofd, 1);
    posix_spawn_file_actions_adddup2(&fa, efd, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc =
        posix_spawn(&pid, PODPLAN_BIN, &fa, NULL, (char *const *)args, environ);
    posix_spawn_file_actions_destroy(&fa);
    assert_int_equal(rc, 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    close(ofd);
    close(efd);
    r->out = cli_slurp(out_path);
    r->err = cli_slurp(err_path);
    unlink(out_path);
    unlink(err_path);
}

void cli_runf(cli_result *r, const char *fmt, ...) {
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    const char *argv[64];
    int n = 0;
    for (char *tok = strtok(line, " "); tok && n < 63; tok = strtok(NULL, " "))
        argv[n++] = tok;
    argv[n] = NULL;
    cli_run(r, argv);
}

void cli_result_free(cli_result *r) {
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Runs the command line fmt ... makes into line (as cli_runf). */
static void run_v(cli_result *r, char *line, size_t n, const char *fmt,
                  va_list ap) {
    vsnprintf(line, n, fmt, ap);
    cli_runf(r, "%s", line);
}

json_t *cli_json_ok(const char *fmt, ...) {
    char line[4096];
    cli_result r;
    va_list ap;
    va_start(ap, fmt);
    run_v(&r, line, sizeof line, fmt, ap);
    va_end(ap);
    if (r.status != 0) fail_msg("%s: exit %d: %s", line, r.status, r.err);
    json_t *j = cli_json(&r);
    cli_result_free(&r);
    return j;
}

size_t cli_candidates_all(json_t *plan, const char *needle, int present) {
    json_t *cs = json_object_get(plan, "candidates"), *c;
    size_t i;
    json_array_foreach(cs, i, c) {
        const char *par = json_string_value(json_object_get(c, "parallel"));
        if (!par || (strstr(par, needle) != NULL) != (present != 0))
            fail_msg("candidate %zu: \"%s\" %s in %s", i, needle,
                     present ? "not" : "found", par ? par : "(none)");
    }
    return json_array_size(cs);
}

void cli_expect(int status, const char *needle, const char *fmt, ...) {
    char line[4096];
    cli_result r;
    va_list ap;
    va_start(ap, fmt);
    run_v(&r, line, sizeof line, fmt, ap);
    va_end(ap);
    const char *text = status == 0 ? r.out : r.err;
    if (r.status != status || !strstr(text, needle))
        fail_msg("%s: exit %d (want %d), \"%s\" not in: %s", line, r.status,
                 status, needle, text);
    if (status != 0 && r.out[0]) fail_msg("%s: output on failure", line);
    cli_result_free(&r);
}

double cli_num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) fail_msg("no number at key %s", key);
    return json_number_value(v);
}

void cli_assert_parts(json_t *sim) {
    static const char *const k[] = {
        "compute_s",         "tp_comm_s", "pp_comm_s",
        "dp_comm_exposed_s", "bubble_s",  "other_s",
        "ep_comm_s",         "cp_comm_s", "host_s"};
    json_t *b = json_object_get(sim, "breakdown");
    double sum = 0, t = cli_num(sim, "iteration_time_s");
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) sum += cli_num(b, k[i]);
    if (!(fabs(sum - t) < 1e-9 * t))
        fail_msg("breakdown adds up to %.9g s, the iteration is %.9g s", sum,
                 t);
}

json_t *cli_json(const cli_result *r) {
    json_error_t je;
    json_t *j = json_loads(r->out, 0, &je);
    if (!j)
        fprintf(stderr, "not JSON (%s): %s\nstderr: %s\n", je.text, r->out,
                r->err);
    assert_non_null(j);
    return j;
}
