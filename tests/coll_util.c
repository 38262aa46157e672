/* coll_util.c: see coll_util.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "coll_util.h"

pp_cluster *coll_load_cluster(const char *name) {
    pp_error e = PP_ERROR_INIT;
    pp_cluster *c = NULL;
    if (pp_cluster_load(name, NULL, 0, NULL, &c, &e))
        fail_msg("loading %s: %s", name, e.msg);
    return c;
}

pp_coll_result coll_run(const pp_cluster *c, pp_fidelity f, pp_coll_op op,
                        pp_coll_algo algo, double bytes, size_t n,
                        const pp_gpu_profile *g) {
    const pp_cluster_info *info = pp_cluster_info_get(c);
    int32_t *gpus = malloc(n * sizeof *gpus);
    for (size_t i = 0; i < n; i++)
        gpus[i] = pp_cluster_gpu(c, (int32_t)(i / (size_t)info->gpus_per_node),
                                 (int32_t)(i % (size_t)info->gpus_per_node));
    pp_coll_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.op = op;
    sp.algo = algo;
    sp.bytes = bytes;
    sp.gpus = gpus;
    sp.n_gpus = n;
    sp.server = -1;
    if (g) {
        sp.fits = g->net;
        sp.n_fits = g->n_net;
    }
    pp_error e = PP_ERROR_INIT;
    pp_sim *s = NULL;
    pp_coll_result r;
    if (pp_sim_new(c, f, 0, &s, &e)) fail_msg("pp_sim_new: %s", e.msg);
    if (pp_sim_collective(s, &sp, &r, &e)) fail_msg("collective: %s", e.msg);
    pp_sim_free(s);
    free(gpus);
    return r;
}
