/*
 * cli_run.h: run the podplan binary and capture what it prints.
 */
#ifndef PODPLAN_TEST_CLI_RUN_H
#define PODPLAN_TEST_CLI_RUN_H

#include <jansson.h>

typedef struct cli_result {
    int status; /* exit code, or 128 + signal when killed */
    char *out;  /* stdout, NUL-terminated, owned */
    char *err;  /* stderr, NUL-terminated, owned */
} cli_result;

/* Runs PODPLAN_BIN with argv (NULL-terminated, without argv[0]). */
void cli_run(cli_result *r, const char *const *argv);
/* Runs a command line split on spaces: cli_runf(&r, "flops --model %s", x). */
void cli_runf(cli_result *r, const char *fmt, ...);
void cli_result_free(cli_result *r);
/* A whole file, NUL-terminated, the caller's to free; fails the test
 * when it cannot be read. */
char *cli_slurp(const char *path);
/* Parses r->out as JSON; fails the test when it is not JSON. */
json_t *cli_json(const cli_result *r);
/* Runs a command line (as cli_runf) that must exit 0 and print JSON;
 * returns that JSON (the caller's to json_decref), or fails the test
 * with the exit status and stderr. */
json_t *cli_json_ok(const char *fmt, ...);
/* Runs a command line (as cli_runf) that must exit with `status` and
 * print needle: on stdout when status is 0, else on stderr (and nothing
 * on stdout); fails the test otherwise. */
void cli_expect(int status, const char *needle, const char *fmt, ...);
/* A plan --format json result: fails the test unless every candidate's
 * "parallel" has `needle` (present) or lacks it (!present); returns how
 * many candidates there are. */
size_t cli_candidates_all(json_t *plan, const char *needle, int present);
/* The number at key of a JSON object; fails the test when there is
 * none. */
double cli_num(json_t *o, const char *key);
/* A simulate --format json result's breakdown parts (compute, tp, pp, dp
 * exposed, bubble, other, ep, cp, host) add up to its iteration time. */
void cli_assert_parts(json_t *sim);

#endif
