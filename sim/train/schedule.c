/*
 * sim/train/schedule.c: pipeline schedules, the order in which one stage runs
 * the forward and backward passes of its micro-batches.
 *
 * Sources: Huang et al. 2019 (GPipe: all forwards, then all backwards);
 * Narayanan et al. 2021, sec. 2.2 (1F1B, "PipeDream-Flush": stage p of P
 * warms up with P - p - 1 forwards, then alternates one forward and one
 * backward, then drains; the interleaved schedule with v model chunks per
 * GPU), following Megatron-LM's schedules.py
 * (forward_backward_pipelining_with_interleaving) for the exact order.
 * With the all-to-all overlap, Megatron-core's combined_1f1b.py: one more
 * warm-up forward, then forward and backward run in pairs.
 */
#include "step_int.h"

/* Megatron-LM's mapping of the k-th virtual micro-batch of a stage to its
 * model chunk and micro-batch: micro-batches go in groups of P through
 * chunk 0, then the same group through chunk 1, ...; backwards visit the
 * chunks in reverse. */
static pp__task virt(int32_t pp, int32_t vp, int32_t k, bool bwd) {
    int32_t group = k % (pp * vp);
    int32_t chunk = group / pp;
    pp__task t;
    t.bwd = bwd ? 1 : 0;
    t.chunk = bwd ? vp - 1 - chunk : chunk;
    t.mb = (k / (pp * vp)) * pp + k % pp;
    t.pair = 0;
    return t;
}

int pp__schedule_tasks(pp_schedule kind, int32_t pp, int32_t p, int32_t vp,
                       int32_t nmb, bool pair, pp__task *tasks, pp_error *e) {
    if (pp < 1 || p < 0 || p >= pp || vp < 1 || nmb < 1)
        return pp_error_set(e, PP_EINVAL,
                            "schedule: bad stage %d of %d, vp %d, %d "
                            "micro-batches",
                            p, pp, vp, nmb);
    if (pair && kind == PP_SCHED_GPIPE)
        return pp_error_set(e, PP_EINVAL,
                            "schedule: a2a_overlap pairs 1F1B's forwards "
                            "and backwards; gpipe has none to pair");
    int32_t extra = pair ? 1 : 0;
    size_t n = 0;
    if (kind == PP_SCHED_GPIPE || vp == 1) {
        if (vp != 1)
            return pp_error_set(e, PP_EINVAL,
                                "schedule: gpipe runs one model chunk per "
                                "GPU (vp = 1), got vp = %d",
                                vp);
        /* With one chunk per GPU, interleaved is plain 1F1B. */
        if (kind == PP_SCHED_GPIPE) {
            /* Forwards in order; backwards in reverse, so the last stage
             * starts the backward of the micro-batch it just finished. */
            for (int32_t m = 0; m < nmb; m++)
                tasks[n++] = (pp__task){0, 0, 0, m};
            for (int32_t m = nmb - 1; m >= 0; m--)
                tasks[n++] = (pp__task){1, 0, 0, m};
            return 0;
        }
        int32_t warm = pp - p - 1 + extra;
        if (warm > nmb) warm = nmb;
        int32_t f = 0, b = 0;
        for (; f < warm; f++) tasks[n++] = (pp__task){0, 0, 0, f};
        while (f < nmb) {
            tasks[n++] = (pp__task){0, extra, 0, f++};
            tasks[n++] = (pp__task){1, 0, 0, b++};
        }
        while (b < nmb) tasks[n++] = (pp__task){1, 0, 0, b++};
        return 0;
    }
    if (kind == PP_SCHED_1F1B || kind == PP_SCHED_INTERLEAVED) {
        if (nmb % pp != 0)
            return pp_error_set(e, PP_EINVAL,
                                "schedule: interleaved needs the micro-"
                                "batches (%d) to be a multiple of pp (%d)",
                                nmb, pp);
        int32_t total = nmb * vp;
        /* Megatron-LM: all forwards first when nmb == pp; otherwise
         * (P - p - 1) * 2 + (v - 1) * P warm-up forwards. */
        int32_t warm =
            nmb == pp ? total : (pp - p - 1) * 2 + (vp - 1) * pp + extra;
        if (warm > total) warm = total;
        int32_t f = 0, b = 0;
        for (; f < warm; f++) tasks[n++] = virt(pp, vp, f, false);
        while (f < total) {
            tasks[n] = virt(pp, vp, f++, false);
            tasks[n++].pair = (uint8_t)extra;
            tasks[n++] = virt(pp, vp, b++, true);
        }
        while (b < total) tasks[n++] = virt(pp, vp, b++, true);
        return 0;
    }
    return pp_error_set(e, PP_EINVAL, "schedule: unknown kind %d", (int)kind);
}
