/*
 * getters.c: typed, located reading of the document tree.
 *
 * Every getter reports "file:line:col: dotted.path: expected ..., got ..."
 * and leaves its output untouched on failure, so a loader can read a whole
 * section and unwind with one goto.  Keys asked for are recorded on the
 * map, so pp_map_done() can reject keys nobody reads (a typo in an input
 * file must not silently fall back to a default).
 */
#include "common_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int pp_error_at(pp_error *e, int code, const pp_node *n, const char *path,
                const char *fmt, ...) {
    if (!e || e->code != 0) return code;
    char msg[PP_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    bool has_path = path && *path;
    if (n && n->file)
        return pp_error_set(e, code, "%s:%d:%d: %s%s%s", n->file, n->line,
                            n->col, has_path ? path : "", has_path ? ": " : "",
                            msg);
    return pp_error_set(e, code, "%s%s%s", has_path ? path : "",
                        has_path ? ": " : "", msg);
}

const char *pp_path(char *buf, size_t len, const char *prefix,
                    const char *key) {
    if (prefix && *prefix)
        snprintf(buf, len, "%s.%s", prefix, key);
    else
        snprintf(buf, len, "%s", key);
    return buf;
}

const char *pp_path_index(char *buf, size_t len, const char *prefix, size_t i) {
    snprintf(buf, len, "%s[%zu]", prefix ? prefix : "", i);
    return buf;
}

const char *pp__node_desc(const pp_node *n, char *buf, size_t len) {
    if (n->kind == PP_NODE_SEQ) return "a list";
    if (n->kind == PP_NODE_MAP) return "a mapping";
    if (!n->quoted && n->scalar[0] == '\0') return "nothing";
    /* Cut long scalars: the message is for a person, not a dump. */
    if (strlen(n->scalar) > 40)
        snprintf(buf, len, "\"%.37s...\"", n->scalar);
    else
        snprintf(buf, len, "\"%s\"", n->scalar);
    return buf;
}

/* Optimal string alignment distance (Levenshtein plus transpositions, so
 * "raidx" is one edit from "radix"), stopped early past cap. */
int pp_edit_distance(const char *a, const char *b, int cap) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return cap + 1;
    if ((int)(la > lb ? la - lb : lb - la) > cap) return cap + 1;
    int d[65][65];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb] > cap ? cap + 1 : d[la][lb];
}

static void want(pp_node *map, const char *key) {
    for (size_t i = 0; i < map->n_wanted; i++)
        if (strcmp(map->wanted[i], key) == 0) return;
    if (map->n_wanted == map->cap_wanted) {
        map->cap_wanted = map->cap_wanted ? 2 * map->cap_wanted : 8;
        map->wanted =
            pp_xrealloc(map->wanted, map->cap_wanted * sizeof *map->wanted);
    }
    map->wanted[map->n_wanted++] = pp_xstrdup(key);
}

pp_node *pp_map_get(pp_node *map, const char *key) {
    if (!map || map->kind != PP_NODE_MAP) return NULL;
    want(map, key);
    for (size_t i = 0; i < map->n; i++) {
        if (strcmp(map->keys[i]->scalar, key) == 0) {
            map->asked[i] = 1;
            return map->items[i];
        }
    }
    return NULL;
}

static const char *kind_name(pp_node_kind k) {
    switch (k) {
    case PP_NODE_SCALAR: return "a single value";
    case PP_NODE_SEQ: return "a list";
    case PP_NODE_MAP: return "a mapping";
    }
    return "?";
}

int pp_node_expect(const pp_node *n, const char *path, pp_node_kind kind,
                   pp_error *e) {
    if (n->kind == kind) return 0;
    char buf[64];
    return pp_error_at(e, PP_EINPUT, n, path, "expected %s, got %s",
                       kind_name(kind), pp__node_desc(n, buf, sizeof buf));
}

/* Looks the key up; 1 when absent and optional, PP_EINPUT when absent and
 * required (the error points at the map, which is where it is missing). */
static int lookup(pp_node *map, const char *path, const char *key, int flags,
                  pp_node **out, pp_error *e) {
    char p[256];
    *out = pp_map_get(map, key);
    if (*out) return 0;
    if (flags & PP_OPTIONAL) return 1;
    /* A required key is often missing because it is misspelt: report the
     * misspelling, where it is, rather than the absence at the map. */
    for (size_t i = 0; i < map->n; i++) {
        const char *k = map->keys[i]->scalar;
        if (map->asked[i]) continue;
        bool wanted = false;
        for (size_t j = 0; j < map->n_wanted && !wanted; j++)
            wanted = strcmp(map->wanted[j], k) == 0;
        if (!wanted && pp_edit_distance(k, key, strlen(key) >= 6 ? 2 : 1) <=
                           (strlen(key) >= 6 ? 2 : 1))
            return pp_error_at(e, PP_EINPUT, map->keys[i],
                               pp_path(p, sizeof p, path, k),
                               "unknown key (did you mean \"%s\"?)", key);
    }
    return pp_error_at(e, PP_EINPUT, map, pp_path(p, sizeof p, path, key),
                       "missing (required)");
}

int pp_map_node(pp_node *map, const char *path, const char *key, int flags,
                pp_node_kind kind, pp_node **out, pp_error *e) {
    pp_node *n;
    int rc = lookup(map, path, key, flags, &n, e);
    if (rc) return rc;
    char p[256];
    rc = pp_node_expect(n, pp_path(p, sizeof p, path, key), kind, e);
    if (rc) return rc;
    *out = n;
    return 0;
}

static const char *int_range_text(int64_t min, int64_t max, char *buf,
                                  size_t len) {
    if (min == 1 && max == INT64_MAX) return "a positive integer";
    if (min == 0 && max == INT64_MAX) return "a non-negative integer";
    if (max == INT64_MAX)
        snprintf(buf, len, "an integer >= %lld", (long long)min);
    else
        snprintf(buf, len, "an integer in %lld..%lld", (long long)min,
                 (long long)max);
    return buf;
}

int pp_node_int(const pp_node *n, const char *path, int64_t min, int64_t max,
                int64_t *out, pp_error *e) {
    char want_buf[64], got[64];
    const char *wanted = int_range_text(min, max, want_buf, sizeof want_buf);
    if (n->kind != PP_NODE_SCALAR || n->scalar[0] == '\0')
        return pp_error_at(e, PP_EINPUT, n, path, "expected %s, got %s", wanted,
                           pp__node_desc(n, got, sizeof got));
    char *end;
    errno = 0;
    long long v = strtoll(n->scalar, &end, 10);
    if (*end != '\0' || errno == ERANGE || v < min || v > max)
        return pp_error_at(e, PP_EINPUT, n, path, "expected %s, got %s", wanted,
                           pp__node_desc(n, got, sizeof got));
    *out = v;
    return 0;
}

int pp_node_number(const pp_node *n, const char *path, double min, double max,
                   double *out, pp_error *e) {
    char got[64];
    if (n->kind == PP_NODE_SCALAR && n->scalar[0] != '\0') {
        char *end;
        errno = 0;
        double v = strtod(n->scalar, &end);
        if (*end == '\0' && errno != ERANGE && isfinite(v) && v >= min &&
            v <= max) {
            *out = v;
            return 0;
        }
    }
    return pp_error_at(e, PP_EINPUT, n, path,
                       "expected a number in [%g, %g], got %s", min, max,
                       pp__node_desc(n, got, sizeof got));
}

int pp_node_quantity(const pp_node *n, const char *path, pp_qkind kind,
                     const char *default_unit, bool allow_zero, double *out,
                     pp_error *e) {
    char got[64], why[256];
    if (n->kind != PP_NODE_SCALAR)
        return pp_error_at(e, PP_EINPUT, n, path, "expected %s, got %s",
                           pp_qkind_name(kind),
                           pp__node_desc(n, got, sizeof got));
    double v;
    why[0] = '\0';
    if (pp_unit_parse(n->scalar, kind, default_unit, &v, why, sizeof why)) {
        if (!why[0])
            snprintf(why, sizeof why, "expected %s", pp_qkind_name(kind));
        return pp_error_at(e, PP_EINPUT, n, path, "%s%s%s", why,
                           strstr(why, "got ") ? " in " : ", got ",
                           pp__node_desc(n, got, sizeof got));
    }
    if (v < 0 || (!allow_zero && v == 0))
        return pp_error_at(e, PP_EINPUT, n, path, "expected %s %s, got %s",
                           allow_zero ? "a non-negative" : "a positive",
                           pp_qkind_name(kind) + 2 /* skip "a " */,
                           pp__node_desc(n, got, sizeof got));
    *out = v;
    return 0;
}

int pp_node_string(const pp_node *n, const char *path, const char **out,
                   pp_error *e) {
    char got[64];
    if (n->kind != PP_NODE_SCALAR || n->scalar[0] == '\0')
        return pp_error_at(e, PP_EINPUT, n, path,
                           n->kind == PP_NODE_SCALAR
                               ? "expected a non-empty string, got %s"
                               : "expected a string, got %s",
                           pp__node_desc(n, got, sizeof got));
    *out = n->scalar;
    return 0;
}

int pp_map_int(pp_node *map, const char *path, const char *key, int flags,
               int64_t min, int64_t max, int64_t *out, pp_error *e) {
    pp_node *n;
    char p[256];
    int rc = lookup(map, path, key, flags, &n, e);
    return rc ? rc
              : pp_node_int(n, pp_path(p, sizeof p, path, key), min, max, out,
                            e);
}

int pp_map_number(pp_node *map, const char *path, const char *key, int flags,
                  double min, double max, double *out, pp_error *e) {
    pp_node *n;
    char p[256];
    int rc = lookup(map, path, key, flags, &n, e);
    return rc ? rc
              : pp_node_number(n, pp_path(p, sizeof p, path, key), min, max,
                               out, e);
}

int pp_map_quantity(pp_node *map, const char *path, const char *key, int flags,
                    pp_qkind kind, const char *default_unit, bool allow_zero,
                    double *out, pp_error *e) {
    pp_node *n;
    char p[256];
    int rc = lookup(map, path, key, flags, &n, e);
    return rc ? rc
              : pp_node_quantity(n, pp_path(p, sizeof p, path, key), kind,
                                 default_unit, allow_zero, out, e);
}

int pp_map_string(pp_node *map, const char *path, const char *key, int flags,
                  const char **out, pp_error *e) {
    pp_node *n;
    char p[256];
    int rc = lookup(map, path, key, flags, &n, e);
    return rc ? rc : pp_node_string(n, pp_path(p, sizeof p, path, key), out, e);
}

int pp_map_bool(pp_node *map, const char *path, const char *key, int flags,
                bool *out, pp_error *e) {
    static const char *const yes[] = {"true", "yes", "on", NULL};
    static const char *const no[] = {"false", "no", "off", NULL};
    pp_node *n;
    char p[256], got[64];
    int rc = lookup(map, path, key, flags, &n, e);
    if (rc) return rc;
    if (n->kind == PP_NODE_SCALAR) {
        for (int i = 0; yes[i]; i++)
            if (strcmp(n->scalar, yes[i]) == 0) {
                *out = true;
                return 0;
            }
        for (int i = 0; no[i]; i++)
            if (strcmp(n->scalar, no[i]) == 0) {
                *out = false;
                return 0;
            }
    }
    return pp_error_at(e, PP_EINPUT, n, pp_path(p, sizeof p, path, key),
                       "expected true or false, got %s",
                       pp__node_desc(n, got, sizeof got));
}

int pp_map_enum(pp_node *map, const char *path, const char *key, int flags,
                const char *const *names, int *out, pp_error *e) {
    pp_node *n;
    char p[256], got[64], list[256] = "";
    int rc = lookup(map, path, key, flags, &n, e);
    if (rc) return rc;
    int best = -1, best_d = 3;
    for (int i = 0; names[i]; i++) {
        if (n->kind == PP_NODE_SCALAR && strcmp(n->scalar, names[i]) == 0) {
            *out = i;
            return 0;
        }
        if (n->kind == PP_NODE_SCALAR) {
            int d = pp_edit_distance(n->scalar, names[i], 2);
            if (d < best_d) {
                best_d = d;
                best = i;
            }
        }
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", i ? "|" : "",
                 names[i]);
    }
    if (best >= 0)
        return pp_error_at(e, PP_EINPUT, n, pp_path(p, sizeof p, path, key),
                           "expected one of %s, got %s (did you mean "
                           "\"%s\"?)",
                           list, pp__node_desc(n, got, sizeof got),
                           names[best]);
    return pp_error_at(e, PP_EINPUT, n, pp_path(p, sizeof p, path, key),
                       "expected one of %s, got %s", list,
                       pp__node_desc(n, got, sizeof got));
}

int pp_map_done(pp_node *map, const char *path, pp_error *e) {
    if (!map || map->kind != PP_NODE_MAP) return 0;
    for (size_t i = 0; i < map->n; i++) {
        if (map->asked[i]) continue;
        const char *key = map->keys[i]->scalar;
        const char *best = NULL;
        int best_d = strlen(key) >= 6 ? 3 : 2;
        for (size_t j = 0; j < map->n_wanted; j++) {
            int d = pp_edit_distance(key, map->wanted[j], best_d - 1);
            if (d < best_d) {
                best_d = d;
                best = map->wanted[j];
            }
        }
        char p[256];
        pp_path(p, sizeof p, path, key);
        if (best)
            return pp_error_at(e, PP_EINPUT, map->keys[i], p,
                               "unknown key (did you mean \"%s\"?)", best);
        return pp_error_at(e, PP_EINPUT, map->keys[i], p, "unknown key");
    }
    return 0;
}
