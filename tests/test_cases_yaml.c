/*
 * test_cases_yaml.c: tests/validation/published.yaml is YAML, and the
 * cases run.sh sees are the cases a YAML reader sees.
 *
 * run.sh reads the file with awk, line by line: a "  - id:" line opens a
 * case and the scalar lines of its "    run:" block are all it takes.  So
 * a case whose notes are broken YAML (a quoted one-line scalar followed by
 * more indented text, which stop 54 nearly committed) still runs, and the
 * file stops being what its name says.  This test parses it with libyaml
 * (common/yaml.c) and checks that both readers count the same cases, in
 * the same order, each with a run mapping of scalars.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podplan/common.h"

#define CASES PODPLAN_SOURCE_DIR "/tests/validation/published.yaml"

/* The ids of the "  - id: NAME" lines, as run.sh's awk finds them. */
static size_t awk_ids(char ***out) {
    FILE *f = fopen(CASES, "r");
    assert_non_null(f);
    char line[4096];
    char **ids = NULL;
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "  - id: ", 8) != 0) continue;
        char *id = line + 8;
        id[strcspn(id, " \t\r\n")] = '\0';
        ids = realloc(ids, (n + 1) * sizeof *ids);
        assert_non_null(ids);
        ids[n] = strdup(id);
        assert_non_null(ids[n]);
        n++;
    }
    fclose(f);
    *out = ids;
    return n;
}

static void test_published_is_yaml(void **state) {
    (void)state;
    pp_doc *doc = NULL;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_doc_load_file(CASES, &doc, &e);
    if (rc) fprintf(stderr, "%s\n", e.msg);
    assert_int_equal(rc, 0);

    pp_node *root = pp_doc_root(doc);
    assert_int_equal(root->kind, PP_NODE_MAP);
    pp_node *cases = pp_map_get(root, "cases");
    assert_non_null(cases);
    assert_int_equal(cases->kind, PP_NODE_SEQ);

    char **ids = NULL;
    size_t n = awk_ids(&ids);
    assert_true(n > 100); /* 156 at stop 54 */
    assert_int_equal(cases->n, n);
    for (size_t i = 0; i < n; i++) {
        pp_node *c = cases->items[i];
        assert_int_equal(c->kind, PP_NODE_MAP);
        pp_node *id = pp_map_get(c, "id");
        assert_non_null(id);
        assert_int_equal(id->kind, PP_NODE_SCALAR);
        if (strcmp(id->scalar, ids[i]) != 0)
            fail_msg("case %zu: YAML reads id %s, awk %s", i, id->scalar,
                     ids[i]);
        pp_node *run = pp_map_get(c, "run");
        if (!run || run->kind != PP_NODE_MAP)
            fail_msg("%s: no run mapping", ids[i]);
        for (size_t k = 0; k < run->n; k++)
            if (run->items[k]->kind != PP_NODE_SCALAR)
                fail_msg("%s: run.%s is not a scalar (run.sh reads scalars)",
                         ids[i], run->keys[k]->scalar);
        free(ids[i]);
    }
    free(ids);
    pp_doc_free(doc);
}

/* The shape that slipped past awk: refused, with the place named. */
static void test_broken_notes_refused(void **state) {
    (void)state;
    static const char text[] = "cases:\n"
                               "  - id: a\n"
                               "    notes: \"one line.\"\n"
                               "      and more text\n"
                               "    run:\n"
                               "      kind: simulate\n";
    pp_doc *doc = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(
        pp_doc_load_string("cases.yaml", text, sizeof text - 1, &doc, &e),
        PP_EINPUT);
    assert_null(doc);
    assert_non_null(strstr(e.msg, "cases.yaml:4:"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published_is_yaml),
        cmocka_unit_test(test_broken_notes_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
