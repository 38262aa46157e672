/*
 * sim/train/ops.c: pp_ops_get, the operation lists compute.c builds for
 * one part of a model (embedding, a dense or an MoE layer, an MTP
 * module, the head), row by row as the simulator prices them: what
 * `podplan simulate --ops` writes, so that a profile of the real run
 * (Nsight Systems, torch.profiler) can be set beside it kernel by
 * kernel.  The lists are the ones step_build.c runs; nothing is summed
 * or rounded here.
 */
#include <stdlib.h>
#include <string.h>

#include "podplan/vocab.h"
#include "step_int.h"

const char *pp_ops_part_name(pp_ops_part part) {
    switch (part) {
    case PP_OPS_EMBED: return "embedding";
    case PP_OPS_DENSE: return "dense layer";
    case PP_OPS_MOE: return "moe layer";
    case PP_OPS_MTP: return "mtp module";
    case PP_OPS_HEAD: return "head";
    }
    return "?";
}

bool pp_ops_part_present(const pp_model *m, pp_ops_part part) {
    if (m->arch != PP_ARCH_TRANSFORMER) return false;
    if (part == PP_OPS_EMBED || part == PP_OPS_HEAD) return true;
    if (part == PP_OPS_MTP) return m->mtp_layers > 0;
    for (int64_t i = 0; i < m->layers; i++)
        if (pp_model_layer_is_moe(m, i) == (part == PP_OPS_MOE)) return true;
    return false;
}

static const char *kind_name(pp__op_kind k) {
    switch (k) {
    case PP__OP_GEMM: return "gemm";
    case PP__OP_MEM: return "memory";
    case PP__OP_COMM: return "collective";
    case PP__OP_MARK: return "mark";
    }
    return "?";
}

static const char *group_name(uint8_t g) {
    return g == PP__GRP_CP    ? "cp"
           : g == PP__GRP_CPA ? "cp_a2a"
           : g == PP__GRP_EP  ? "ep"
                              : "tp";
}

int pp__mtp_layer_kind(const pp_model *m) {
    return pp_model_layer_is_moe(m, m->layers - 1) ? 2 : 1;
}

void pp__ops_mtp_module(const pp__shape *s, pp__oplist *l, bool bwd,
                        bool table) {
    if (bwd) {
        pp__ops_mtp_head_bwd(s, l);
        pp__ops_layer_bwd(s, l);
        pp__ops_mtp_bwd(s, l, table);
    } else {
        pp__ops_mtp_fwd(s, l);
        pp__ops_layer_fwd(s, l);
        pp__ops_head_fwd(s, l);
    }
}

/* The list of `part`, forward or backward, as step_build.c builds it
 * (the MTP module: the first one, which carries the word table's
 * gradient). */
static void build(pp__shape *s, pp_ops_part part, bool bwd, pp__oplist *l) {
    switch (part) {
    case PP_OPS_EMBED:
        bwd ? pp__ops_embed_bwd(s, l) : pp__ops_embed_fwd(s, l);
        break;
    case PP_OPS_DENSE:
    case PP_OPS_MOE:
        s->kind = part == PP_OPS_MOE ? 2 : 1;
        bwd ? pp__ops_layer_bwd(s, l) : pp__ops_layer_fwd(s, l);
        break;
    case PP_OPS_MTP:
        s->kind = pp__mtp_layer_kind(s->m);
        pp__ops_mtp_module(s, l, bwd, true);
        break;
    case PP_OPS_HEAD:
        bwd ? pp__ops_head_bwd(s, l) : pp__ops_head_fwd(s, l);
        break;
    }
}

int pp_ops_get(const pp_gpu_profile *g, const pp_model *m, const pp_parallel *p,
               pp_ops_part part, bool bwd, pp_op_table *out, pp_error *e) {
    if (!pp_ops_part_present(m, part))
        return pp_error_set(e, PP_EINVAL, "ops: model %s has no %s", m->name,
                            pp_ops_part_name(part));
    pp__shape s = {m, p, g, 0};
    pp__oplist l = {0};
    build(&s, part, bwd, &l);
    pp_op_row *v = l.n ? calloc(l.n, sizeof *v) : NULL;
    if (l.n && !v) {
        pp__oplist_fini(&l);
        return pp_error_set(e, PP_ENOMEM, "ops: out of memory");
    }
    for (size_t i = 0; i < l.n; i++) {
        const pp__op *o = &l.v[i];
        pp_op_row *r = &v[i];
        r->name = o->name;
        r->kind = kind_name(o->kind);
        if (o->kind == PP__OP_COMM) {
            r->group = group_name(o->group);
            r->coll = pp_coll_op_name(o->coll);
        }
        r->flops = o->flops;
        r->bytes = o->bytes;
        r->time_s = o->kind == PP__OP_COMM ? 0 : o->time_s;
        r->overlap_s = o->overlap_s;
        r->params = o->params;
        r->kernels = o->kernels;
        r->host_kernels = pp__op_host_kernels(&l, i, p->graphs);
        r->sync = o->sync;
    }
    out->v = v;
    out->n = l.n;
    pp__oplist_fini(&l);
    return 0;
}

void pp_op_table_fini(pp_op_table *t) {
    free(t->v);
    t->v = NULL;
    t->n = 0;
}
