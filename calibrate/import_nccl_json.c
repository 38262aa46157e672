/*
 * import_nccl_json.c: nccl-tests' own JSON (`-J FILE.json`,
 * `--output_file`), as src/util.cu of github.com/NVIDIA/nccl-tests writes
 * it (JSON_FILE_VERSION 2, read at commit 0fdb00a3):
 *
 *   {"version": 2, "start_time": "...", "args": [argv...], "env": [...],
 *    "nccl_version": 22703,
 *    "config": {"nthreads": 1, "ngpus": 1, ..., "iterations": 20,
 *               "devices": [{"rank": 0, "hostname": "h0", ...}, ...]},
 *    "results": [{"size": 8, "count": 2, "type": "float", "redop": "sum",
 *                 "root": "    -1",
 *                 "out_of_place": {"time": 135.8, "alg_bw": 0.0,
 *                                  "bus_bw": 0.0, "nwrong": 0.0},
 *                 "in_place": {...},
 *                 "out_of_place_per_iter": {"stdev_us": ..., ...},  (-I)
 *                 "actual_iterations": 20, "experiment_name": ""}, ...],
 *    "out_of_bounds": {...}, "average_bus_bandwidth": {...},
 *    "errors": [], "end_time": "..."}
 *
 * Times are microseconds ("cpu_time" instead of "time" with -C); a
 * variant not run is null; NaN is written as the string "nan".  The
 * devices list holds one entry per process (only the first GPU line of a
 * process is parsed by util.cu), so ranks = processes x nthreads x ngpus
 * and nodes = distinct host names.  The collective is the *_perf name in
 * args[0].  Points keep the JSON path (results[3].in_place) as their
 * place: jansson keeps no line numbers for values.
 */
#include "cal_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

bool pp__cal_is_nccl_json(json_t *root) {
    return json_is_object(root) && json_object_get(root, "nccl_version") &&
           json_is_object(json_object_get(root, "config")) &&
           json_object_get(root, "results");
}

static int bad(pp_error *e, const char *name, const char *path,
               const char *what) {
    return pp_error_set(e, PP_EINPUT, "%s:%s: expected %s", name, path, what);
}

/* A number of config, or 1 when absent (older writers). */
static int config_int(json_t *cfg, const char *name, const char *k,
                      int64_t *out, pp_error *e) {
    json_t *v = json_object_get(cfg, k);
    *out = 1;
    if (!v) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1) {
        char p[64];
        snprintf(p, sizeof p, "config.%s", k);
        return bad(e, name, p, "an integer >= 1");
    }
    *out = (int64_t)json_integer_value(v);
    return 0;
}

int pp__cal_import_nccl_json(pp_cal_set *s, int src, const char *name,
                             json_t *root, const pp_cal_hints *h, pp_error *e) {
    json_t *ver = json_object_get(root, "version");
    if (ver && !json_is_integer(ver))
        return bad(e, name, "version", "an integer");
    json_t *cfg = json_object_get(root, "config");
    int64_t nthreads, ngpus;
    int rc;
    if ((rc = config_int(cfg, name, "nthreads", &nthreads, e)) < 0 ||
        (rc = config_int(cfg, name, "ngpus", &ngpus, e)) < 0)
        return rc;

    /* Ranks and nodes from the devices (one per process). */
    json_t *devs = json_object_get(cfg, "devices");
    if (devs && !json_is_array(devs))
        return bad(e, name, "config.devices", "an array");
    size_t nproc = devs ? json_array_size(devs) : 0;
    int64_t nodes = 0;
    for (size_t i = 0; i < nproc; i++) {
        json_t *d = json_array_get(devs, i);
        const char *host = json_string_value(json_object_get(d, "hostname"));
        char p[64];
        snprintf(p, sizeof p, "config.devices[%zu].hostname", i);
        if (!json_is_object(d) || !host) return bad(e, name, p, "a string");
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(host, json_string_value(json_object_get(
                                     json_array_get(devs, j), "hostname")));
        if (!seen) nodes++;
    }
    int64_t ranks = (int64_t)(nproc ? nproc : 1) * nthreads * ngpus;
    if (!nproc) nodes = 1; /* no devices: one process, one node */

    /* The collective: the binary's name, else --op. */
    const char *op = NULL;
    json_t *args = json_object_get(root, "args");
    if (args && !json_is_array(args)) return bad(e, name, "args", "an array");
    const char *argv0 = json_string_value(json_array_get(args, 0));
    if (argv0) op = pp__cal_nccl_op(argv0);
    if (!op && h && h->op) op = h->op;
    if (!op)
        return pp_error_set(e, PP_EINPUT,
                            "%s:args[0]: expected the nccl-tests binary "
                            "(all_reduce_perf, ...), or the collective given "
                            "(--op)",
                            name);

    json_t *res = json_object_get(root, "results");
    if (!json_is_array(res) || !json_array_size(res))
        return bad(e, name, "results", "a non-empty array");
    static const char *const var[2] = {"out_of_place", "in_place"};
    static const char *const var_name[2] = {"out-of-place", "in-place"};
    size_t added = 0;
    for (size_t i = 0; i < json_array_size(res); i++) {
        json_t *o = json_array_get(res, i);
        char path[96];
        snprintf(path, sizeof path, "results[%zu]", i);
        if (!json_is_object(o)) return bad(e, name, path, "an object");
        json_t *sz = json_object_get(o, "size");
        if (!json_is_integer(sz) || json_integer_value(sz) < 0) {
            snprintf(path, sizeof path, "results[%zu].size", i);
            return bad(e, name, path, "a byte count (an integer >= 0)");
        }
        json_t *it = json_object_get(o, "actual_iterations");
        int64_t iters = json_is_integer(it) ? json_integer_value(it) : 0;
        for (int v = 0; v < 2; v++) {
            json_t *b = json_object_get(o, var[v]);
            if (!b || json_is_null(b)) continue; /* not run */
            snprintf(path, sizeof path, "results[%zu].%s", i, var[v]);
            if (!json_is_object(b)) return bad(e, name, path, "an object");
            json_t *t = json_object_get(b, "time");
            if (!t) t = json_object_get(b, "cpu_time");
            /* util.cu writes NaN as "nan": a failed timing, no point. */
            if (json_is_string(t) && !strcmp(json_string_value(t), "nan"))
                continue;
            if (!json_is_number(t) || !(json_number_value(t) > 0)) {
                snprintf(path, sizeof path, "results[%zu].%s.time", i, var[v]);
                return bad(e, name, path, "a time in microseconds > 0");
            }
            pp_cal_point p;
            pp__cal_point_init(&p, PP_CAL_COLL, src, 0);
            snprintf(p.where, sizeof p.where, "%.63s", path);
            pp__cal_strcpy(p.op, op);
            pp__cal_strcpy(p.algo, h && h->algo ? h->algo : "auto");
            pp__cal_strcpy(p.link, h && h->link ? h->link : "unknown");
            pp__cal_strcpy(p.variant, var_name[v]);
            p.ranks = ranks;
            p.nodes = nodes;
            p.scope = nodes == 1 ? PP_CAL_SCOPE_INTRA : PP_CAL_SCOPE_INTER;
            p.bytes = (double)json_integer_value(sz);
            p.time_s = json_number_value(t) * 1e-6;
            json_t *bw = json_object_get(b, "bus_bw");
            if (json_is_number(bw)) p.bw_Bps = json_number_value(bw) * 1e9;
            p.repeats = iters;
            /* -I (per-iteration timing): the spread of the iterations; the
             * standard error of their mean, as exec's points. */
            char pk[32];
            snprintf(pk, sizeof pk, "%s_per_iter", var[v]);
            json_t *sd = json_object_get(json_object_get(o, pk), "stdev_us");
            if (json_is_number(sd) && iters > 0)
                p.time_sd_s =
                    json_number_value(sd) * 1e-6 / sqrt((double)iters);
            pp__cal_add_point(s, &p);
            added++;
        }
    }
    if (!added) return bad(e, name, "results", "at least one timed result");
    return 0;
}
