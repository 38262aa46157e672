/*
 * kv.c: "key=value,key=value" specifications on the command line (the
 * inline model, --parallel), and file stems for default names.
 */
#include "podplan/common.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *pp_closest(const char *word, const char *const *names) {
    const char *best = NULL;
    int best_d = 3;
    for (size_t i = 0; names[i]; i++) {
        int d = pp_edit_distance(word, names[i], 2);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    return best;
}

int pp_name_find(const char *word, const char *const *names,
                 const char **near) {
    if (near) *near = NULL;
    if (!word) return -1;
    for (int i = 0; names[i]; i++)
        if (strcmp(word, names[i]) == 0) return i;
    if (near) *near = pp_closest(word, names);
    return -1;
}

int pp_name_error(pp_error *e, int code, const char *what,
                  const char *expected, const char *got, const char *near) {
    if (near)
        return pp_error_set(e, code,
                            "%s: expected %s, got \"%s\" (did you mean "
                            "\"%s\"?)",
                            what, expected, got, near);
    return pp_error_set(e, code, "%s: expected %s, got \"%s\"", what,
                        expected, got);
}

static bool ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
    return *a == *b;
}

static bool iprefix(const char *word, const char *name) {
    for (; *word; word++, name++)
        if (!*name ||
            tolower((unsigned char)*word) != tolower((unsigned char)*name))
            return false;
    return true;
}

/* Appends "\"name\"" with the joiner its position calls for; k is its
 * index among total. */
static void join_name(char *buf, size_t len, const char *name, size_t k,
                      size_t total) {
    size_t used = strlen(buf);
    if (used >= len) return;
    snprintf(buf + used, len - used, "%s\"%s\"",
             k == 0 ? "" : (k + 1 == total ? " or " : ", "), name);
}

int pp_suggest(const char *word, const char *const *names, size_t n, char *buf,
               size_t len) {
    enum { MAX_LISTED = 8 };
    size_t hit[MAX_LISTED], nh = 0, all = 0;
    if (len) buf[0] = '\0';
    if (!word || !*word || !names) return 0;
    /* Case first (A100 and a100 are the same GPU to a person), then a
     * family by its prefix, and only then spelling: a prefix that names
     * four entries says more than the one entry two edits away. */
    for (size_t i = 0; i < n; i++)
        if (ieq(word, names[i]) && nh < MAX_LISTED) hit[nh++] = i;
    if (nh == 0)
        for (size_t i = 0; i < n; i++)
            if (iprefix(word, names[i])) {
                if (nh < MAX_LISTED) hit[nh++] = i;
                all++;
            }
    if (nh == 0) {
        int best_d = 4;
        size_t wl = strlen(word);
        char low[128];
        size_t k;
        for (k = 0; k + 1 < sizeof low && word[k]; k++)
            low[k] = (char)tolower((unsigned char)word[k]);
        low[k] = '\0';
        for (size_t i = 0; i < n; i++) {
            int d = pp_edit_distance(low, names[i], 3);
            if (d < best_d && (size_t)d < wl && (size_t)d < strlen(names[i])) {
                best_d = d;
                hit[0] = i;
                nh = 1;
            }
        }
    }
    for (size_t k = 0; k < nh; k++) join_name(buf, len, names[hit[k]], k, nh);
    if (all > nh && len) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, " (and %zu more)", all - nh);
    }
    return (int)(all > nh ? all : nh);
}

int pp_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out) {
    char *end;
    /* strtoll skips leading blanks; a value on the command line must not
     * have any, nor anything after the digits. */
    if (!text || text[0] == '\0' || isspace((unsigned char)text[0])) return -1;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) return -1;
    *out = (int64_t)v;
    return 0;
}

int pp_parse_f64(const char *text, double min, double max, double *out) {
    char *end;
    if (!text || text[0] == '\0' || isspace((unsigned char)text[0])) return -1;
    errno = 0;
    double v = strtod(text, &end);
    /* NaN fails both comparisons. */
    if (errno != 0 || *end != '\0' || !(v >= min && v <= max)) return -1;
    *out = v;
    return 0;
}

int pp_kv_parse(const char *spec, const char *what, const char *const *keys,
                pp_kv_fn fn, void *ctx, uint64_t *seen, pp_error *e) {
    uint64_t got = 0;
    int rc = 0;
    char *buf = pp_xstrdup(spec), *item, *next;
    /* Walk by hand rather than with strtok_r, which would merge ",,": an
     * empty item is a mistake worth reporting. */
    for (item = buf; item; item = next) {
        char *comma = strchr(item, ',');
        next = comma ? comma + 1 : NULL;
        if (comma) *comma = '\0';
        /* "tp=8, pp=4" as people write lists: blanks around an item and
         * around its '=' are not part of the key or the value. */
        while (*item == ' ' || *item == '\t') item++;
        char *end = item + strlen(item);
        while (end > item && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
        char *eq = strchr(item, '='), *val;
        if (!eq) {
            rc = pp_error_set(e, PP_EINPUT,
                              "%s: expected key=value, got \"%.100s\"", what,
                              item);
            goto out;
        }
        *eq = '\0';
        for (char *k = eq; k > item && (k[-1] == ' ' || k[-1] == '\t');)
            *--k = '\0';
        for (val = eq + 1; *val == ' ' || *val == '\t';) val++;
        int k = 0;
        while (keys[k] && strcmp(item, keys[k]) != 0) k++;
        if (!keys[k]) {
            const char *near = pp_closest(item, keys);
            char list[256] = "";
            for (int i = 0; keys[i]; i++) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                         keys[i]);
            }
            if (near)
                rc = pp_error_set(e, PP_EINPUT,
                                  "%s: unknown key \"%.100s\" (did you mean "
                                  "\"%s\"?)",
                                  what, item, near);
            else
                rc = pp_error_set(e, PP_EINPUT,
                                  "%s: unknown key \"%.100s\" (keys: %s)", what,
                                  item, list);
            goto out;
        }
        if (got & (UINT64_C(1) << k)) {
            rc = pp_error_set(e, PP_EINPUT, "%s: %s: given twice", what, item);
            goto out;
        }
        got |= UINT64_C(1) << k;
        if ((rc = fn(ctx, k, val, e)) < 0) goto out;
    }
    if (seen) *seen = got;
out:
    free(buf);
    return rc;
}

void pp_file_stem(const char *path, char *dst, size_t len) {
    const char *b = path ? strrchr(path, '/') : NULL;
    b = b ? b + 1 : (path ? path : "");
    size_t n = strlen(b);
    if (n > 5 && strcmp(b + n - 5, ".yaml") == 0)
        n -= 5;
    else if (n > 4 && strcmp(b + n - 4, ".yml") == 0)
        n -= 4;
    if (n >= len) n = len - 1;
    memcpy(dst, b, n);
    dst[n] = '\0';
}
