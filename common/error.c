/*
 * error.c: status codes, pp_error, and the allocation wrappers.
 */
#include "podplan/common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    int code;
    int exit_code;
    const char *str;
} status_table[] = {{PP_OK, 0, "success"},
#define PP__XX(name, val, exitc, str) {PP_##name, exitc, str},
                    PP_ERRNO_MAP(PP__XX)
#undef PP__XX
};

const char *pp_strerror(int code) {
    for (size_t i = 0; i < sizeof status_table / sizeof status_table[0]; i++)
        if (status_table[i].code == code) return status_table[i].str;
    return "unknown error";
}

int pp_exit_code(int code) {
    for (size_t i = 0; i < sizeof status_table / sizeof status_table[0]; i++)
        if (status_table[i].code == code) return status_table[i].exit_code;
    return 1;
}

void pp_error_clear(pp_error *e) {
    if (!e) return;
    e->code = 0;
    e->msg[0] = '\0';
}

int pp_error_set(pp_error *e, int code, const char *fmt, ...) {
    if (!e || e->code != 0) return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
    return code;
}

void pp_error_prefix(pp_error *e, const char *fmt, ...) {
    if (!e || e->code == 0) return;
    char buf[PP_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 2, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t used = strlen(buf);
    memcpy(buf + used, ": ", 3);
    used += 2;
    /* Keep as much of the old message as fits after the new context. */
    size_t room = sizeof buf - used - 1, old = strlen(e->msg);
    if (old > room) old = room;
    memcpy(buf + used, e->msg, old);
    buf[used + old] = '\0';
    memcpy(e->msg, buf, sizeof buf);
}

void pp_oom(void) {
    fputs("podplan: out of memory\n", stderr);
    abort();
}

void *pp_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) pp_oom();
    return p;
}

void *pp_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) pp_oom();
    return p;
}

void *pp_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) pp_oom();
    return q;
}

char *pp_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = pp_xmalloc(n);
    memcpy(d, s, n);
    return d;
}
