/*
 * models/comm.c: bytes sent per GPU per iteration by each kind of
 * parallelism.  Volumes only; time comes from sim/ (alpha-beta or flows).
 *
 * Sources: Shoeybi et al. 2019 (Megatron-LM TP, sec. 3: two AllReduces
 * forward, two backward per layer); Korthikanti et al. 2022 (sequence
 * parallelism, sec. 4.2.2: RS + AG instead of AllReduce, same volume);
 * Narayanan et al. 2021 (pipeline sends, sec. 2.2 and 4.1); Rajbhandari et
 * al. 2020 (ZeRO volumes, sec. 7); Patarasuk and Yuan 2009 (ring
 * AllReduce: 2(n-1)/n of the buffer per GPU; domain.md sec. 3).
 */
#include <math.h>
#include <string.h>

#include "models_int.h"

int pp_comm_per_iter(const pp_model *m, const pp_parallel *p,
                     pp_comm_volume *out, pp_error *e) {
    pp_comm_volume v;
    int rc;

    if ((rc = pp_parallel_validate(p, m, e)) < 0) return rc;
    memset(&v, 0, sizeof v);
    double nmb = pp_parallel_microbatches(p);

    /* DP: the gradients of this GPU's parameters, PP_GRAD_SYNC_BYTES each
     * (bf16; models.h says why). */
    v.dp_grad_bytes = pp__stage_params(m, p) * PP_GRAD_SYNC_BYTES;
    if (p->dp > 1) {
        double n = (double)p->dp;
        /* Ring AllReduce = reduce-scatter + all-gather, each (n-1)/n.
         * ZeRO 1 and 2 reduce-scatter the gradients and all-gather the
         * updated parameters: the same 2(n-1)/n.  ZeRO 3 gathers the
         * parameters once more in the backward pass: 3(n-1)/n (ZeRO sec.
         * 7.2.2: 1.5x the data-parallel volume). */
        double k = p->zero >= 3 ? 3.0 : 2.0;
        v.dp_bytes = k * (n - 1.0) / n * v.dp_grad_bytes;
    }

    if (m->arch == PP_ARCH_GENERIC) {
        /* pp_parallel_validate allowed dp only. */
        *out = v;
        return 0;
    }

    double t = (double)p->tp;
    double act = pp_activation_bytes(m, p->mbs); /* one activation tensor */
    /* The first stage's layers. */
    double layers = pp_parallel_uneven(p)
                        ? (double)pp_parallel_stage_layers(p, m, 0)
                        : ceil((double)m->layers / (double)p->pp);

    if (p->tp > 1) {
        /* Per layer per micro-batch: 2 AllReduces forward (after attention
         * and after the MLP) and 2 backward (their conjugates); full
         * recompute replays the forward: 2 more.  With sp each AllReduce
         * becomes a reduce-scatter plus an all-gather: twice the
         * operations, the same bytes. */
        double ar = p->recompute == PP_RECOMPUTE_FULL ? 6.0 : 4.0;
        double n = ar * layers * nmb;
        v.tp_ops = p->sp ? 2.0 * n : n;
        v.tp_bytes = n * 2.0 * (t - 1.0) / t * act;
    }

    if (p->pp > 1) {
        /* Every micro-batch crosses each stage boundary once forward
         * (activations) and once backward (their gradients); with vp
         * chunks per GPU a GPU owns vp boundaries.  The first and last
         * stages send in one direction only, so the busiest GPU is a
         * middle one; with pp == 2 and no interleaving there is none.
         * Megatron's scatter/gather optimisation (Narayanan sec. 4.1) has
         * each of the t GPUs of a stage send 1/t of the tensor (the
         * all-gather on the far side is NVLink traffic, not counted here);
         * with sp the tensor is already split over t. */
        double dirs = (p->pp > 2 || p->vp > 1) ? 2.0 : 1.0;
        v.pp_msgs = dirs * (double)p->vp * nmb;
        v.pp_bytes = v.pp_msgs * act / t;
    }
    *out = v;
    return 0;
}
