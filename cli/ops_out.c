/*
 * ops_out.c: `podplan simulate --ops FILE`, the kernels and collectives
 * the simulator prices for each part of the model (sim/train/ops.c), one
 * row each: tab-separated values, or JSON when FILE ends in ".json".
 * Written to be set beside a profile of the real run, kernel by kernel.
 */
#include "cli_int.h"
#include "podplan/train.h"

static const char *const HEAD =
    "part\tpass\tindex\tname\tkind\tgroup\tcollective\tflops\tbytes\t"
    "time_s\toverlap_s\tparams\tkernels\thost_kernels\tsync\n";

static void tsv_rows(FILE *fp, pp_ops_part part, bool bwd,
                     const pp_op_table *t) {
    for (size_t i = 0; i < t->n; i++) {
        const pp_op_row *r = &t->v[i];
        fprintf(fp,
                "%s\t%s\t%zu\t%s\t%s\t%s\t%s\t%.9g\t%.9g\t%.9g\t%.9g\t"
                "%.9g\t%.9g\t%.9g\t%d\n",
                pp_ops_part_name(part), bwd ? "bwd" : "fwd", i, r->name,
                r->kind, r->group ? r->group : "-", r->coll ? r->coll : "-",
                r->flops, r->bytes, r->time_s, r->overlap_s, r->params,
                r->kernels, r->host_kernels, r->sync ? 1 : 0);
    }
}

static json_t *json_rows(const pp_op_table *t) {
    json_t *a = json_array();
    for (size_t i = 0; i < t->n; i++) {
        const pp_op_row *r = &t->v[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(r->name));
        json_object_set_new(o, "kind", json_string(r->kind));
        json_object_set_new(o, "group",
                            r->group ? json_string(r->group) : json_null());
        json_object_set_new(o, "collective",
                            r->coll ? json_string(r->coll) : json_null());
        json_object_set_new(o, "flops", pp_json_num(r->flops));
        json_object_set_new(o, "bytes", pp_json_num(r->bytes));
        json_object_set_new(o, "time_s", pp_json_num(r->time_s));
        json_object_set_new(o, "overlap_s", pp_json_num(r->overlap_s));
        json_object_set_new(o, "params", pp_json_num(r->params));
        json_object_set_new(o, "kernels", pp_json_num(r->kernels));
        json_object_set_new(o, "host_kernels", pp_json_num(r->host_kernels));
        json_object_set_new(o, "sync", json_boolean(r->sync));
        json_array_append_new(a, o);
    }
    return a;
}

int pp_cli_write_ops(const char *path, const pp_gpu_profile *g,
                     const pp_model *m, const pp_parallel *p, pp_error *e) {
    if (m->arch != PP_ARCH_TRANSFORMER)
        return pp_error_set(e, PP_EUSAGE,
                            "--ops: model %s is generic (no layers to list)",
                            m->name);
    bool json = pp_cli_json_path(path);
    json_t *parts = json ? json_array() : NULL;
    pp_outfile of;
    int rc = pp_outfile_open(&of, path, e);
    if (rc) goto done;
    if (!json) fputs(HEAD, of.fp);
    for (int k = 0; k < PP_OPS_PARTS && rc == 0; k++) {
        pp_ops_part part = (pp_ops_part)k;
        if (!pp_ops_part_present(m, part)) continue;
        for (int b = 0; b < 2 && rc == 0; b++) {
            pp_op_table t;
            if ((rc = pp_ops_get(g, m, p, part, b == 1, &t, e))) break;
            if (json) {
                json_t *o = json_object();
                json_object_set_new(o, "part",
                                    json_string(pp_ops_part_name(part)));
                json_object_set_new(o, "pass", json_string(b ? "bwd" : "fwd"));
                json_object_set_new(o, "ops", json_rows(&t));
                json_array_append_new(parts, o);
            } else {
                tsv_rows(of.fp, part, b == 1, &t);
            }
            pp_op_table_fini(&t);
        }
    }
    if (rc == 0 && json) {
        json_t *doc = json_object();
        json_object_set_new(doc, "model", json_string(m->name));
        json_object_set_new(doc, "profile", json_string(g->name));
        json_object_set_new(doc, "parts", parts);
        parts = NULL;
        rc = pp_json_write(of.fp, doc, e);
        json_decref(doc);
    }
    if (rc)
        pp_outfile_abort(&of);
    else
        rc = pp_outfile_commit(&of, e);
done:
    json_decref(parts);
    return rc;
}
