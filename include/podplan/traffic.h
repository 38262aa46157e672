/*
 * podplan/traffic.h: explicit traffic matrices (a list of flows between
 * named devices), read from YAML or CSV for `podplan flows` and for anyone
 * who brings measured traffic to the flow network.
 *
 * YAML:   flows:
 *           - {src: n0.gpu0, dst: n1.gpu0, bytes: 1GB, start: 0s}
 * CSV:    a header naming the columns (src,dst,bytes[,start], any order),
 *         then one flow per line; blank lines and lines starting with #
 *         are skipped.
 *
 * Devices are named as `podplan topo export` names them (n3.gpu5, n3.hca5,
 * leaf4, spine1); bytes is a size (a bare number is bytes), start a time (a
 * bare number is seconds; default 0).  Every error names the file, line,
 * column and field: "flows.csv:3:9: bytes: expected a byte size ...".
 *
 * Part of the sim layer (podplan_sim).
 */
#ifndef PODPLAN_TRAFFIC_H
#define PODPLAN_TRAFFIC_H

#include <stddef.h>
#include <stdint.h>

#include "podplan/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pp_traffic_flow {
    int32_t src, dst; /* device ids in the cluster it was read against */
    double bytes;     /* > = 0 */
    double start_s;   /* >= 0 */
    int line, col;    /* where the flow is written (1-based), for messages */
} pp_traffic_flow;

typedef struct pp_traffic {
    char *file;             /* read-only: the path read */
    pp_traffic_flow *flows; /* read-only: n flows, in file order */
    size_t n;
} pp_traffic;

/* Reads the flows of `path` (CSV when the name ends in .csv, else YAML),
 * resolves device names against cluster c (an unknown name gets the
 * nearest of its kind and the kind's range) and routes every flow with
 * ECMP seed `seed`, so that a pair with no path is a located input error
 * rather than a failure halfway through a run.  On success *out is a new
 * pp_traffic the caller frees with pp_traffic_free.  Returns 0, PP_EINPUT
 * (file:line:col: field: what was expected), PP_ENOENT or PP_EIO; on
 * failure *out is untouched. */
int pp_traffic_load(const char *path, const pp_cluster *c, uint64_t seed,
                    pp_traffic **out, pp_error *e);
/* Frees t; NULL is a no-op. */
void pp_traffic_free(pp_traffic *t);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_TRAFFIC_H */
