/*
 * test_yaml.c: the document tree, marks, getters and their messages.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>
#include <stdlib.h>

#include "podplan/common.h"

static pp_doc *load_ok(const char *text) {
    pp_doc *d = NULL;
    pp_error e = PP_ERROR_INIT;
    int rc = pp_doc_load_string("t.yaml", text, strlen(text), &d, &e);
    if (rc) fprintf(stderr, "unexpected: %s\n", e.msg);
    assert_int_equal(rc, 0);
    assert_non_null(d);
    return d;
}

static void expect_load_error(const char *text, const char *msg) {
    pp_doc *d = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_doc_load_string("t.yaml", text, strlen(text), &d, &e),
                     PP_EINPUT);
    assert_null(d);
    if (!strstr(e.msg, msg)) fprintf(stderr, "got: %s\nwant: %s\n", e.msg, msg);
    assert_non_null(strstr(e.msg, msg));
}

static void test_marks(void **state) {
    (void)state;
    pp_doc *d = load_ok("a: 1\nb:\n  c: [x, y]\n  d:   hello\n");
    pp_node *root = pp_doc_root(d);
    assert_int_equal(root->kind, PP_NODE_MAP);
    pp_node *b = pp_map_get(root, "b");
    assert_non_null(b);
    pp_node *dd = pp_map_get(b, "d");
    assert_int_equal(dd->line, 4);
    assert_int_equal(dd->col, 8);
    pp_node *c = pp_map_get(b, "c");
    assert_int_equal(c->kind, PP_NODE_SEQ);
    assert_int_equal(c->n, 2);
    assert_int_equal(c->items[1]->line, 3);
    assert_int_equal(c->items[1]->col, 10);
    pp_doc_free(d);
}

static void test_syntax_errors(void **state) {
    (void)state;
    expect_load_error("a: [1, 2\nb: 3\n", "t.yaml:");
    expect_load_error("a: [1, 2\nb: 3\n", "syntax error");
    expect_load_error("a: b: c\n", "t.yaml:1:5: syntax error");
    expect_load_error("", "t.yaml:1:1: empty document");
    expect_load_error("a: 1\n---\nb: 2\n",
                      "t.yaml:2:1: expected one YAML document");
    expect_load_error("a: *nope\n", "t.yaml:1:4: a: unknown anchor \"nope\"");
    expect_load_error("? [a]\n: 1\n", "mapping keys must be plain scalars");
}

static void test_duplicate_key(void **state) {
    (void)state;
    expect_load_error(
        "node:\n  count: 2\n  count: 3\n",
        "t.yaml:3:3: count: duplicate key (first at line 2, column 3)");
}

static void test_anchors_and_merge(void **state) {
    (void)state;
    pp_doc *d = load_ok("base: &b {radix: 40, speed: 200Gbps}\n"
                        "leaf:\n  <<: *b\n  radix: 64\n"
                        "list: [*b, *b]\n");
    pp_node *root = pp_doc_root(d);
    pp_error e = PP_ERROR_INIT;
    pp_node *leaf = pp_map_get(root, "leaf");
    int64_t radix = 0;
    double speed = 0;
    assert_int_equal(pp_map_int(leaf, "leaf", "radix", PP_REQUIRED, 1,
                                INT64_MAX, &radix, &e),
                     0);
    assert_int_equal(radix, 64); /* the map's own key wins over the merge */
    assert_int_equal(pp_map_quantity(leaf, "leaf", "speed", PP_REQUIRED,
                                     PP_Q_BANDWIDTH, NULL, false, &speed, &e),
                     0);
    assert_true(speed == 25e9);
    assert_int_equal(pp_map_done(leaf, "leaf", &e), 0);
    pp_node *list = pp_map_get(root, "list");
    assert_ptr_equal(list->items[0], list->items[1]); /* aliases share */
    pp_doc_free(d);
}

static void test_getter_messages(void **state) {
    (void)state;
    pp_doc *d = load_ok("fabric:\n  leaf:\n    radix: forty\n    speed: 200GB\n"
                        "    kind: lef\n    ratio: 2:1\n    raidx: 3\n");
    pp_node *root = pp_doc_root(d);
    pp_node *fabric = pp_map_get(root, "fabric");
    pp_node *leaf = pp_map_get(fabric, "leaf");
    int64_t radix = 7;
    double speed = 1, ratio = 0;
    int kind = -1;
    static const char *const kinds[] = {"leaf", "spine", NULL};

    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_map_int(leaf, "fabric.leaf", "radix", PP_REQUIRED, 1,
                                INT64_MAX, &radix, &e),
                     PP_EINPUT);
    assert_string_equal(e.msg, "t.yaml:3:12: fabric.leaf.radix: expected a "
                               "positive integer, got \"forty\"");
    assert_int_equal(radix, 7); /* untouched on failure */

    pp_error_clear(&e);
    assert_int_equal(pp_map_quantity(leaf, "fabric.leaf", "speed", PP_REQUIRED,
                                     PP_Q_BANDWIDTH, NULL, false, &speed, &e),
                     PP_EINPUT);
    assert_non_null(strstr(e.msg, "t.yaml:4:12: fabric.leaf.speed: "));
    assert_non_null(strstr(e.msg, "200GB"));
    assert_true(speed == 1);

    pp_error_clear(&e);
    assert_int_equal(
        pp_map_enum(leaf, "fabric.leaf", "kind", PP_REQUIRED, kinds, &kind, &e),
        PP_EINPUT);
    assert_string_equal(e.msg,
                        "t.yaml:5:11: fabric.leaf.kind: expected one of "
                        "leaf|spine, got \"lef\" (did you mean \"leaf\"?)");

    pp_error_clear(&e);
    assert_int_equal(pp_map_quantity(leaf, "fabric.leaf", "ratio", PP_REQUIRED,
                                     PP_Q_RATIO, NULL, false, &ratio, &e),
                     0);
    assert_true(ratio == 2.0);

    pp_error_clear(&e);
    assert_int_equal(pp_map_int(leaf, "fabric.leaf", "ports", PP_REQUIRED, 1,
                                INT64_MAX, &radix, &e),
                     PP_EINPUT);
    assert_string_equal(e.msg,
                        "t.yaml:3:5: fabric.leaf.ports: missing (required)");
    assert_int_equal(pp_map_int(leaf, "fabric.leaf", "ports", PP_OPTIONAL, 1,
                                INT64_MAX, &radix, NULL),
                     1);

    pp_error_clear(&e);
    assert_int_equal(pp_map_done(leaf, "fabric.leaf", &e), PP_EINPUT);
    assert_string_equal(
        e.msg,
        "t.yaml:7:5: fabric.leaf.raidx: unknown key (did you mean \"radix\"?)");
    pp_doc_free(d);
}

static void test_first_error_kept(void **state) {
    (void)state;
    pp_error e = PP_ERROR_INIT;
    pp_error_set(&e, PP_EINPUT, "first");
    pp_error_set(&e, PP_EIO, "second");
    assert_int_equal(e.code, PP_EINPUT);
    assert_string_equal(e.msg, "first");
    pp_error_prefix(&e, "while loading %s", "x");
    assert_string_equal(e.msg, "while loading x: first");
    assert_int_equal(pp_exit_code(PP_EINPUT), 2);
    assert_int_equal(pp_exit_code(PP_EINFEASIBLE), 1);
    assert_string_equal(pp_strerror(PP_ENOENT), "not found");
}

static void test_edit_distance(void **state) {
    (void)state;
    assert_int_equal(pp_edit_distance("radix", "radix", 2), 0);
    assert_int_equal(pp_edit_distance("raidx", "radix", 2), 1);
    assert_int_equal(pp_edit_distance("radx", "radix", 2), 1);
    assert_int_equal(pp_edit_distance("speed", "radix", 2), 3);
}

static void test_load_file_missing(void **state) {
    (void)state;
    pp_doc *d = NULL;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_doc_load_file("/nonexistent/x.yaml", &d, &e),
                     PP_ENOENT);
    assert_non_null(strstr(e.msg, "/nonexistent/x.yaml: cannot open"));
    assert_null(d);
}

static void test_outfile_atomic(void **state) {
    (void)state;
    char path[] = "/tmp/podplan-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    FILE *fp = fopen(path, "w");
    fputs("old", fp);
    fclose(fp);
    pp_outfile of;
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_outfile_open(&of, path, &e), 0);
    fputs("new contents", of.fp);
    pp_outfile_abort(&of); /* a failed run leaves the old file */
    char buf[64] = "";
    fp = fopen(path, "r");
    assert_non_null(fgets(buf, sizeof buf, fp));
    fclose(fp);
    assert_string_equal(buf, "old");
    assert_int_equal(pp_outfile_open(&of, path, &e), 0);
    fputs("new", of.fp);
    assert_int_equal(pp_outfile_commit(&of, &e), 0);
    fp = fopen(path, "r");
    assert_non_null(fgets(buf, sizeof buf, fp));
    fclose(fp);
    assert_string_equal(buf, "new");
    remove(path);
}

/* --set overrides: replace, create, index lists, and locate bad values. */
static void test_doc_set(void **state) {
    (void)state;
    pp_doc *d = load_ok("node:\n  nics: {count: 8, type: hdr}\n"
                        "links: [{a: x}, {a: y}]\n");
    pp_error e = PP_ERROR_INIT;
    assert_int_equal(pp_doc_set(d, "node.nics.count=4", 1, &e), 0);
    assert_int_equal(pp_doc_set(d, "fabric.oversubscription=2:1", 2, &e), 0);
    assert_int_equal(pp_doc_set(d, "links[1].a=z", 3, &e), 0);
    assert_int_equal(pp_doc_set(d, "node.nics.count=four", 4, &e), 0);
    pp_node *root = pp_doc_root(d);
    pp_node *nics = pp_map_get(pp_map_get(root, "node"), "nics");
    int64_t count = 0;
    assert_int_equal(pp_map_int(nics, "node.nics", "count", PP_REQUIRED, 1,
                                INT64_MAX, &count, &e),
                     PP_EINPUT);
    /* The bad value is located on the command line: 4th --set, column 17. */
    assert_string_equal(e.msg, "--set:4:17: node.nics.count: expected a "
                               "positive integer, got \"four\"");
    pp_node *fabric = pp_map_get(root, "fabric");
    assert_non_null(fabric);
    assert_string_equal(pp_map_get(fabric, "oversubscription")->scalar, "2:1");
    pp_node *links = pp_map_get(root, "links");
    assert_string_equal(pp_map_get(links->items[1], "a")->scalar, "z");

    pp_error_clear(&e);
    assert_int_equal(pp_doc_set(d, "node.nics=4", 5, &e), PP_EUSAGE);
    assert_non_null(
        strstr(e.msg, "node.nics is a mapping; set one of its keys"));
    pp_error_clear(&e);
    assert_int_equal(pp_doc_set(d, "node.nics.count.x=4", 6, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "is not a mapping"));
    pp_error_clear(&e);
    assert_int_equal(pp_doc_set(d, "links[7].a=4", 7, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "has no item 7"));
    pp_error_clear(&e);
    assert_int_equal(pp_doc_set(d, "nothing", 8, &e), PP_EUSAGE);
    assert_non_null(strstr(e.msg, "expected path=value"));
    pp_doc_free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marks),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_duplicate_key),
        cmocka_unit_test(test_anchors_and_merge),
        cmocka_unit_test(test_getter_messages),
        cmocka_unit_test(test_first_error_kept),
        cmocka_unit_test(test_edit_distance),
        cmocka_unit_test(test_load_file_missing),
        cmocka_unit_test(test_outfile_atomic),
        cmocka_unit_test(test_doc_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
