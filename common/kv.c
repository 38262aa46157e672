/*
 * kv.c: "key=value,key=value" specifications on the command line (the
 * inline model, --parallel), and file stems for default names.
 */
#include "podplan/common.h"

#include <ctype.h>
#include <errno.h>
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

int pp_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out) {
    char *end;
    /* strtoll skips leading blanks; a value on the command line must not
     * have any, nor anything after the digits. */
    if (!text || text[0] == '\0' || isspace((unsigned char)text[0]))
        return -1;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) return -1;
    *out = (int64_t)v;
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
        char *eq = strchr(item, '=');
        if (!eq) {
            rc = pp_error_set(e, PP_EINPUT,
                              "%s: expected key=value, got \"%.100s\"", what,
                              item);
            goto out;
        }
        *eq = '\0';
        int k = 0;
        while (keys[k] && strcmp(item, keys[k]) != 0) k++;
        if (!keys[k]) {
            const char *near = pp_closest(item, keys);
            char list[256] = "";
            for (int i = 0; keys[i]; i++) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s",
                         i ? ", " : "", keys[i]);
            }
            if (near)
                rc = pp_error_set(e, PP_EINPUT,
                                  "%s: unknown key \"%.100s\" (did you mean "
                                  "\"%s\"?)", what, item, near);
            else
                rc = pp_error_set(e, PP_EINPUT,
                                  "%s: unknown key \"%.100s\" (keys: %s)",
                                  what, item, list);
            goto out;
        }
        if (got & (UINT64_C(1) << k)) {
            rc = pp_error_set(e, PP_EINPUT, "%s: %s: given twice", what,
                              item);
            goto out;
        }
        got |= UINT64_C(1) << k;
        if ((rc = fn(ctx, k, eq + 1, e)) < 0) goto out;
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
