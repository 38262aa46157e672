/*
 * test_bad_calibrate.c: the broken-measurement corpus (tests/bad_calibrate/).
 * Every importer's broken inputs: podplan must exit 2 with "file:line:
 * what was expected" on stderr, print nothing on stdout and leave no
 * output file.  The same header convention as tests/bad/ (test_bad_inputs.c),
 * for files of any extension (measurement logs are .txt, .log, .csv):
 *   # expect: 9: expected 13 columns (...)
 *   # run: calibrate import {}
 * A '#' line is a comment in every text format read here, so the header
 * does not disturb the parsers (the messages avoid words the importers look
 * for, such as a *_perf name, so the header cannot satisfy them).
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
    char path[1024], expect[1024], run[1024];
} bad_case;

static void run_case(void **state) {
    bad_case *c = *state;
    FILE *fp = fopen(c->path, "r");
    assert_non_null(fp);
    char line[1024];
    c->expect[0] = c->run[0] = '\0';
    while (fgets(line, sizeof line, fp) && line[0] == '#') {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "# expect: ", 10))
            snprintf(c->expect, sizeof c->expect, "%s", line + 10);
        else if (!strncmp(line, "# run: ", 7))
            snprintf(c->run, sizeof c->run, "%s", line + 7);
    }
    fclose(fp);
    if (!c->expect[0] || !c->run[0])
        fail_msg("%s: needs '# expect:' and '# run:' lines", c->path);
    char out[] = "/tmp/podplan-badcal-out-XXXXXX";
    int fd = mkstemp(out);
    assert_true(fd >= 0);
    close(fd);
    unlink(out);
    char cmd[4096] = "";
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
    assert_int_equal(access(out, F_OK), -1);
    assert_null(strstr(r.err, "Sanitizer"));
    assert_null(strstr(r.err, "runtime error"));
    cli_result_free(&r);
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const bad_case *)a)->path, ((const bad_case *)b)->path);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_bad_calibrate DIR\n");
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
        if (de->d_name[0] == '.') continue;
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
    int rc = _cmocka_run_group_tests("bad_calibrate", tests, n, NULL, NULL);
    free(tests);
    free(cases);
    return rc;
}
