/*
 * test_bad_inputs.c: every file in the broken-input corpus (tests/bad/)
 * must make podplan exit 2 with a message naming the file, line, column
 * and field, print nothing on stdout, and leave no output file.
 *
 * Each corpus file starts with comment lines:
 *   # expect: 3:12: layers: expected a positive integer
 *   # run: memory --model {} --parallel tp=2       (optional)
 * "expect" is matched against stderr after "<file>:"; "run" is the command
 * line, {} standing for the file (default: flops --model {} --global-batch 8).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"

typedef struct bad_case {
    char path[1024];
    char expect[1024];
    char run[1024];
} bad_case;

static void read_header(bad_case *c) {
    FILE *fp = fopen(c->path, "r");
    assert_non_null(fp);
    char line[1024];
    c->expect[0] = '\0';
    snprintf(c->run, sizeof c->run, "flops --model {} --global-batch 8");
    while (fgets(line, sizeof line, fp) && line[0] == '#') {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "# expect: ", 10) == 0)
            snprintf(c->expect, sizeof c->expect, "%s", line + 10);
        else if (strncmp(line, "# run: ", 7) == 0)
            snprintf(c->run, sizeof c->run, "%s", line + 7);
    }
    fclose(fp);
}

static void run_case(void **state) {
    bad_case *c = *state;
    read_header(c);
    if (!c->expect[0]) fail_msg("%s: no '# expect:' line", c->path);

    /* Substitute {} and append -o so we can check no file is left. */
    char out[] = "/tmp/podplan-bad-out-XXXXXX";
    int fd = mkstemp(out);
    assert_true(fd >= 0);
    close(fd);
    unlink(out);
    char cmd[2048] = "";
    const char *p = c->run, *brace;
    while ((brace = strstr(p, "{}")) != NULL) {
        strncat(cmd, p, (size_t)(brace - p));
        strcat(cmd, c->path);
        p = brace + 2;
    }
    strcat(cmd, p);
    strcat(cmd, " -o ");
    strcat(cmd, out);

    cli_result r;
    cli_runf(&r, "%s", cmd);
    char want[2200];
    const char *base = strrchr(c->path, '/');
    snprintf(want, sizeof want, "%s:%s", base ? base + 1 : c->path, c->expect);
    if (r.status != 2 || !strstr(r.err, want))
        fail_msg("%s\n  exit %d (want 2)\n  stderr: %s  want:   %s", c->path,
                 r.status, r.err, want);
    assert_string_equal(r.out, "");
    assert_int_equal(access(out, F_OK), -1); /* no partial output file */
    assert_null(strstr(r.err, "Sanitizer"));
    assert_null(strstr(r.err, "runtime error"));
    cli_result_free(&r);
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const bad_case *)a)->path, ((const bad_case *)b)->path);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_bad_inputs DIR\n");
        return 2;
    }
    DIR *dir = opendir(argv[1]);
    if (!dir) {
        perror(argv[1]);
        return 2;
    }
    size_t n = 0, cap = 64;
    bad_case *cases = calloc(cap, sizeof *cases);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0) continue;
        if (n == cap) {
            cap *= 2;
            cases = realloc(cases, cap * sizeof *cases);
        }
        snprintf(cases[n++].path, sizeof cases[0].path, "%s/%s", argv[1],
                 de->d_name);
    }
    closedir(dir);
    qsort(cases, n, sizeof *cases, by_name);

    struct CMUnitTest *tests = calloc(n ? n : 1, sizeof *tests);
    for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(cases[i].path, '/') + 1;
        tests[i] = (struct CMUnitTest){base, run_case, NULL, NULL, &cases[i]};
    }
    int rc = _cmocka_run_group_tests("bad_inputs", tests, n, NULL, NULL);
    free(tests);
    free(cases);
    return rc;
}
