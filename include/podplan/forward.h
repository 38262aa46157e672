/*
 * podplan/forward.h: the opaque types of sim/'s sub-libraries, declared
 * once so that each per-concern header (hw.h, topo.h, net.h, coll.h,
 * train.h) can name a type of another without including it, and so that
 * a lower layer can take a pointer to an upper one's object without
 * depending on its header.  Only incomplete types here: their contents and
 * functions live in the header of the library that owns them.
 */
#ifndef PODPLAN_FORWARD_H
#define PODPLAN_FORWARD_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pp_catalog pp_catalog; /* hw.h: the hardware catalogue */
typedef struct pp_cluster pp_cluster; /* topo.h: a loaded cluster */
typedef struct pp_router pp_router;   /* topo.h: paths and ECMP */
typedef struct pp_engine pp_engine;   /* net.h: the event engine */
typedef struct pp_flownet pp_flownet; /* net.h: the max-min network */
typedef struct pp_sim pp_sim;         /* net.h: a simulation */

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_FORWARD_H */
