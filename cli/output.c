/*
 * output.c: JSON writing, error printing, quantity formatting.
 */
#include "cli_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool pp_cli_json_path(const char *path) {
    size_t n = strlen(path), k = strlen(".json");
    return n >= k && strcmp(path + n - k, ".json") == 0;
}

int pp_json_write(FILE *fp, json_t *v, pp_error *e) {
    /* Insertion order and a fixed precision make the output byte-identical
     * across runs; 12 digits keeps doubles readable without losing what
     * any model here can claim. */
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                JSON_REAL_PRECISION(12));
    if (!s) return pp_error_set(e, PP_EINTERNAL, "cannot encode JSON");
    fputs(s, fp);
    fputc('\n', fp);
    free(s);
    return 0;
}

json_t *pp_json_num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

int pp_cli_fail(const char *cmd, const pp_error *e) {
    if (cmd)
        fprintf(stderr, "podplan %s: %s\n", cmd,
                e->msg[0] ? e->msg : pp_strerror(e->code));
    else
        fprintf(stderr, "podplan: %s\n",
                e->msg[0] ? e->msg : pp_strerror(e->code));
    return pp_exit_code(e->code ? e->code : PP_EFAIL);
}

const char *pp_fmtq(double v, pp_qkind kind) {
    static char bufs[8][48];
    static int next;
    char *b = bufs[next++ & 7];
    return pp_unit_format(v, kind, 4, b, sizeof bufs[0]);
}

int pp_cli_emit(const pp_args *a, int fmt, json_t *json,
                void (*table)(FILE *fp, const void *ctx), const void *ctx) {
    pp_error e = PP_ERROR_INIT;
    pp_outfile of;
    int rc = pp_outfile_open(&of, pp_args_get(a, "output"), &e);
    if (rc == 0) {
        if (fmt == PP_FMT_JSON)
            rc = pp_json_write(of.fp, json, &e);
        else
            table(of.fp, ctx);
        if (rc)
            pp_outfile_abort(&of);
        else
            rc = pp_outfile_commit(&of, &e);
    }
    json_decref(json);
    return rc ? pp_cli_fail(a->cmd->name, &e) : 0;
}
