/*
 * cmd_list.c: `podplan list models|clusters|profiles|gpus|switches|links|
 * servers`, what ships with podplan, one per line with a short description.
 *
 * The descriptions are computed from the data (a model's size and shape, a
 * cluster's GPUs and fabric, a catalogue entry's figures) rather than kept
 * as prose beside it, so they cannot go stale.  Names that do not load are
 * listed with the error, not skipped: a broken shipped file is news.
 */
#include "cli_int.h"

#include "podplan/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const pp_cli_opt opts[] = {
    {"format", 0, "FMT", "table|json (default: table)", false, NULL, 0, NULL},
    {"output", 'o', "FILE", "write to FILE atomically (default: stdout)", false,
     NULL, 0, NULL},
    {NULL, 0, NULL, NULL, false, NULL, 0, NULL},
};

enum {
    L_MODELS,
    L_CLUSTERS,
    L_PROFILES,
    L_GPUS,
    L_SWITCHES,
    L_LINKS,
    L_SERVERS,
    L_STACKS
};
static const char *const what_names[] = {"models",  "clusters", "profiles",
                                         "gpus",    "switches", "links",
                                         "servers", "stacks",   NULL};
static const char *const link_class[] = {"PCIe", "NVLink", "InfiniBand",
                                         "Ethernet", "socket link"};

typedef struct row {
    char *name, *desc;
} row;

typedef struct listing {
    const char *what;
    row *rows;
    size_t n, cap;
} listing;

static void add(listing *l, const char *name, const char *desc) {
    PP_VEC_RESERVE(l->rows, l->cap, l->n + 1, 16);
    l->rows[l->n].name = pp_xstrdup(name);
    l->rows[l->n].desc = pp_xstrdup(desc);
    l->n++;
}

static void describe_model(const char *name, char *d, size_t len) {
    pp_model m;
    pp_error e = PP_ERROR_INIT;
    if (pp_model_load(name, &m, &e)) {
        snprintf(d, len, "(does not load: %.400s)", e.msg);
        return;
    }
    if (m.arch == PP_ARCH_GENERIC) {
        snprintf(d, len, "%s parameters, %s per sample forward (generic)",
                 pp_fmtq(pp_model_params(&m), PP_Q_COUNT),
                 pp_fmtq(m.flops_per_sample, PP_Q_FLOPS));
        return;
    }
    snprintf(d, len,
             "%s parameters: %lld layers, hidden %lld, %lld heads%s, "
             "seq %lld, vocab %lld",
             pp_fmtq(pp_model_params(&m), PP_Q_COUNT), (long long)m.layers,
             (long long)m.hidden, (long long)m.heads,
             m.kv_heads != m.heads ? " (GQA)" : "", (long long)m.seq,
             (long long)m.vocab);
}

static void describe_cluster(const char *name, char *d, size_t len) {
    pp_cluster *c = NULL;
    pp_error e = PP_ERROR_INIT;
    if (pp_cluster_load(name, NULL, 0, NULL, &c, &e)) {
        snprintf(d, len, "(does not load: %.400s)", e.msg);
        return;
    }
    const pp_cluster_info *i = pp_cluster_info_get(c);
    int32_t sw = i->switches[PP_DEV_LEAF] + i->switches[PP_DEV_SPINE] +
                 i->switches[PP_DEV_CORE];
    snprintf(d, len,
             "%d server%s x %d %s, %d HCA%s per server (%s), %d "
             "fabric switch%s",
             (int)i->nodes, i->nodes == 1 ? "" : "s", (int)i->gpus_per_node,
             i->gpu ? i->gpu->name : "?", (int)i->hcas_per_node,
             i->hcas_per_node == 1 ? "" : "s", i->nic ? i->nic->name : "none",
             (int)sw, sw == 1 ? "" : "es");
    pp_cluster_free(c);
}

/* A profile leaves the peak to the GPU it is used with: it is described
 * with the first catalogue GPU of its family (a100 -> a100-pcie-40gb). */
static void describe_profile(const char *name, char *d, size_t len) {
    pp_gpu_profile p;
    pp_error e = PP_ERROR_INIT;
    pp_catalog *cat = NULL;
    const pp_gpu_spec *gpu = NULL;
    if (pp_catalog_load(NULL, &cat, &e) == 0)
        for (size_t i = 0; !gpu && i < pp_catalog_count(cat, PP_CAT_GPU); i++) {
            const pp_gpu_spec *g = pp_catalog_entry(cat, PP_CAT_GPU, i);
            if (strncmp(g->name, name, strlen(name)) == 0) gpu = g;
        }
    int rc = pp_profile_load(name, gpu, &p, &e);
    pp_catalog_free(cat);
    if (rc) {
        snprintf(d, len, "(does not load: %.400s)", e.msg);
        return;
    }
    /* The share a training step holds at the power cap, where the
     * profile sets one (b200.yaml). */
    char held[64] = "";
    double share = pp_profile_sustained(&p);
    if (share != 1)
        snprintf(held, sizeof held, " (x%.2f sustained at the power cap)",
                 share);
    snprintf(d, len,
             "GPU profile for the %s* GPUs: large GEMMs at %.0f%% of "
             "peak%s, memory-bound kernels at %.0f%% of HBM; default stack "
             "%s",
             name, 100 * p.gemm_efficiency, held, 100 * p.mem_efficiency,
             p.stack);
}

/* A software stack: its framework, what it turns on, where from. */
static void describe_stack(const char *name, char *d, size_t len) {
    pp_stack s;
    pp_error e = PP_ERROR_INIT;
    if (pp_stack_load(name, &s, &e)) {
        snprintf(d, len, "(does not load: %.400s)", e.msg);
        return;
    }
    snprintf(d, len,
             "%s: %s attention, %s, ZeRO up to %d, grad accumulation %s, "
             "recompute %s unless told, TP overlap %s, DP overlap %s%s%s, "
             "loop efficiency %.2f",
             s.framework, s.flash_attention ? "flash" : "standard",
             s.fp8 ? "FP8" : "no FP8", s.zero_max,
             s.grad_accum_bytes > 0 ? "unfused" : "fused",
             pp_recompute_name(s.recompute_default),
             s.tp_overlap ? "on" : "off", s.dp_overlap ? "on" : "off",
             s.moe_a2a_overlap ? ", MoE all-to-all overlap offered" : "",
             s.precision_aware_opt ? ", precision-aware optimizer offered" : "",
             s.efficiency);
}

static int from_files(listing *l, const char *subdir, int what, pp_error *e) {
    char **names = NULL, d[PP_ERROR_MSG_MAX + 64];
    size_t n = pp_data_names(subdir, &names, NULL);
    if (n == 0)
        return pp_error_set(e, PP_ENOENT,
                            "no %s found: no data folder has "
                            "%s/ (set PODPLAN_DATA_DIR)",
                            l->what, subdir);
    for (size_t i = 0; i < n; i++) {
        if (what == L_MODELS)
            describe_model(names[i], d, sizeof d);
        else if (what == L_CLUSTERS)
            describe_cluster(names[i], d, sizeof d);
        else if (what == L_STACKS)
            describe_stack(names[i], d, sizeof d);
        else
            describe_profile(names[i], d, sizeof d);
        add(l, names[i], d);
    }
    pp_data_names_free(names, n);
    return 0;
}

static int from_catalog(listing *l, int what, pp_error *e) {
    pp_catalog *cat = NULL;
    int rc = pp_catalog_load(NULL, &cat, e);
    if (rc) return rc;
    pp_cat_kind kind = what == L_GPUS       ? PP_CAT_GPU
                       : what == L_SWITCHES ? PP_CAT_SWITCH
                       : what == L_LINKS    ? PP_CAT_LINK
                                            : PP_CAT_SERVER;
    char d[512];
    for (size_t i = 0; i < pp_catalog_count(cat, kind); i++) {
        const void *x = pp_catalog_entry(cat, kind, i);
        const char *name = x;
        if (kind == PP_CAT_GPU) {
            const pp_gpu_spec *g = x;
            /* The catalogue holds what nvidia-smi reports (memory.total,
             * in MiB): say it in those units too, so that the figure can
             * be checked against the machine. */
            double mib = g->hbm_bytes / 1048576.0;
            char rep[48] = "";
            if (mib == floor(mib))
                snprintf(rep, sizeof rep, " (%.0f MiB)", mib);
            snprintf(d, sizeof d, "%s HBM%s at %s/s, %s bf16 dense, %s",
                     pp_fmtq(g->hbm_bytes, PP_Q_BYTES), rep,
                     pp_fmtq(g->hbm_Bps, PP_Q_BYTES),
                     pp_fmtq(g->peak_flops[PP_DTYPE_BF16], PP_Q_FLOPRATE),
                     g->nvlink_gen ? "NVLink" : "PCIe only");
            if (g->nvlink_gen) {
                size_t u = strlen(d);
                snprintf(d + u, sizeof d - u, " %d (%s/s per direction)",
                         g->nvlink_gen, pp_fmtq(g->nvlink_Bps, PP_Q_BYTES));
            }
        } else if (kind == PP_CAT_SWITCH) {
            const pp_switch_spec *s = x;
            snprintf(d, sizeof d, "%d ports of %s", s->radix, s->port);
        } else if (kind == PP_CAT_LINK) {
            const pp_link_spec *k = x;
            snprintf(d, sizeof d, "%s, %s per direction (%s/s)",
                     (unsigned)k->cls < 5 ? link_class[k->cls] : "?",
                     pp_fmtq(k->bw_Bps, PP_Q_BANDWIDTH),
                     pp_fmtq(k->bw_Bps, PP_Q_BYTES));
        } else {
            const pp_server_spec *s = x;
            snprintf(d, sizeof d, "server chassis, %.0f W%s", s->power_w,
                     s->includes_gpus ? " (price and power include GPUs)" : "");
        }
        add(l, name, d);
    }
    pp_catalog_free(cat);
    return 0;
}

static void print_table(FILE *fp, const void *ctx) {
    const listing *l = ctx;
    int w = 0;
    for (size_t i = 0; i < l->n; i++) {
        int n = (int)strlen(l->rows[i].name);
        if (n > w) w = n;
    }
    for (size_t i = 0; i < l->n; i++)
        fprintf(fp, "%-*s  %s\n", w, l->rows[i].name, l->rows[i].desc);
}

static json_t *to_json(const listing *l) {
    json_t *o = json_object(), *a = json_array();
    json_object_set_new(o, "what", json_string(l->what));
    for (size_t i = 0; i < l->n; i++) {
        json_t *r = json_object();
        json_object_set_new(r, "name", json_string(l->rows[i].name));
        json_object_set_new(r, "description", json_string(l->rows[i].desc));
        json_array_append_new(a, r);
    }
    json_object_set_new(o, "items", a);
    return o;
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    pp_error e = PP_ERROR_INIT;
    pp_args a;
    int fmt = PP_FMT_TABLE, what = -1, status;
    listing l = {0};
    int rc = pp_cli_parse(cmd, argc, argv, &a, &e);
    if (rc == 1) return 0;
    if (rc || pp_args_enum(&a, "format", pp_format_names, &fmt, &e))
        return pp_cli_fail(cmd->name, &e);
    if (a.n_positional != 1) {
        pp_error_set(
            &e, PP_EUSAGE,
            "expected one of models, clusters, "
            "profiles, gpus, switches, links, servers, stacks; see `podplan "
            "list --help`");
        return pp_cli_fail(cmd->name, &e);
    }
    const char *w = a.positional[0];
    const char *near;
    what = pp_name_find(w, what_names, &near);
    if (what < 0) {
        if (near)
            pp_error_set(&e, PP_EUSAGE,
                         "unknown list \"%s\" (did you mean "
                         "\"%s\"?); expected models, clusters, profiles, "
                         "gpus, switches, links, servers or stacks",
                         w, near);
        else
            pp_error_set(&e, PP_EUSAGE,
                         "unknown list \"%s\"; expected "
                         "models, clusters, profiles, gpus, switches, links, "
                         "servers or stacks",
                         w);
        return pp_cli_fail(cmd->name, &e);
    }
    l.what = what_names[what];
    if (what == L_MODELS)
        rc = from_files(&l, "models/zoo", what, &e);
    else if (what == L_CLUSTERS)
        rc = from_files(&l, "topologies", what, &e);
    else if (what == L_PROFILES)
        rc = from_files(&l, "topologies/profiles", what, &e);
    else if (what == L_STACKS)
        rc = from_files(&l, "topologies/stacks", what, &e);
    else
        rc = from_catalog(&l, what, &e);
    status = rc ? pp_cli_fail(cmd->name, &e)
                : pp_cli_emit(&a, fmt, to_json(&l), print_table, &l);
    for (size_t i = 0; i < l.n; i++) {
        free(l.rows[i].name);
        free(l.rows[i].desc);
    }
    free(l.rows);
    return status;
}

const pp_cli_cmd pp_cmd_list = {
    "list",
    "list what ships: models, clusters, profiles, gpus, switches, links, "
    "servers, stacks",
    "list models|clusters|profiles|gpus|switches|links|servers|stacks "
    "[--format table|json] [-o FILE]",
    "models and clusters are the names --model and --cluster accept (the\n"
    "files in models/zoo/ and topologies/); profiles are the GPU profiles\n"
    "of topologies/profiles/ (--profile); gpus, switches, links and servers\n"
    "are the entries of the hardware catalogue topologies/hardware.yaml,\n"
    "named in cluster files; stacks are the software stacks of\n"
    "topologies/stacks/ (--stack).  JSON: {what, items: [{name, "
    "description}]}.",
    opts,
    run,
};
