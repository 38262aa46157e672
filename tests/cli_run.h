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
/* Parses r->out as JSON; fails the test when it is not JSON. */
json_t *cli_json(const cli_result *r);
/* Runs a command line (as cli_runf) that must exit 0 and print JSON;
 * returns that JSON (the caller's to json_decref), or fails the test
 * with the exit status and stderr. */
json_t *cli_json_ok(const char *fmt, ...);

#endif
