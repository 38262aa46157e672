/*
 * sim/train/params.c: the parameters one GPU holds of a layer, of the
 * embedding, of the output layer and of the MTP modules (what the DP
 * synchronisation and the optimizer step of sim/train move), and the
 * optimizer step's time.  The shapes are compute.c's: Megatron's TP split
 * of every matrix, the norms replicated.
 */
#include "step_int.h"

/* The word table's copy on the last stage, when that is not the first. */
double pp__mtp_embed_params_gpu(const pp__shape *s) {
    return s->p->pp > 1 ? pp__embed_params_gpu(s) : 0.0;
}

/* One module's own parameters on this GPU: the projection (2h x h over
 * t) and the two norms (its layer is counted by pp__layer_params_gpu,
 * its output layer is the head's, the table's copy apart). */
double pp__mtp_params_gpu(const pp__shape *s) {
    double h = (double)s->m->hidden;
    return 2.0 * h * h / (double)s->p->tp + 2.0 * h;
}

/* Memory-bound (Megatron-LM's multi-tensor apply): the bytes per
 * parameter are the optimizer's step_traffic (models/memory.c). */
double pp_optimizer_time_s(const pp_gpu_profile *g, pp_optimizer opt,
                           double params) {
    return params > 0
               ? pp_memop_time_s(g, pp_optimizer_bytes_get(opt)->step_traffic *
                                        params)
               : 0;
}

double pp__layer_params_gpu(const pp__shape *s) {
    if (pp__shape_moe(s)) return pp__moe_layer_params_gpu(s);
    const pp_model *m = s->m;
    double h = (double)m->hidden, t = (double)s->p->tp;
    double f = (double)(m->ffn_hidden > 0 ? m->ffn_hidden : 4 * m->hidden);
    bool swiglu = m->ffn == PP_FFN_SWIGLU;
    if (pp_model_is_mla(m)) {
        pp_attn_shape at;
        pp_model_attn_shape(m, &at);
        double mlp = h * f * (swiglu ? 3.0 : 2.0);
        if (m->bias) mlp += f * (swiglu ? 2.0 : 1.0) + h;
        return (at.split + mlp) / t + at.replicated + 4.0 * h;
    }
    /* Matrices split over t: QKV h x (h + 2 kv d), projection h x h, MLP
     * h x f (x2 SwiGLU) and f x h, with their biases; the two norms
     * (2 x 2h) are replicated. */
    double d = pp_model_kv_channels(m), q = (double)m->heads * d;
    double kvd = (double)(m->kv_heads > 0 ? m->kv_heads : m->heads) * d;
    double mats = h * (q + 2.0 * kvd) + q * h + h * f * (swiglu ? 3.0 : 2.0);
    double bias = (q + 2.0 * kvd) + h + f * (swiglu ? 2.0 : 1.0) + h;
    return (mats + bias) / t + 4.0 * h;
}

double pp__embed_params_gpu(const pp__shape *s) {
    double h = (double)s->m->hidden;
    double pos = pp_model_learned_positions(s->m) ? (double)s->m->seq * h : 0;
    return (double)s->m->vocab * h / (double)s->p->tp + pos;
}

/* The final norm and the output projection: its own matrix when untied;
 * when tied, the last stage of a pipeline keeps a copy of the word table
 * (Megatron-LM), whose gradient is reduced over DP like any other (and
 * then with the first stage's); without a pipeline it is the embedding's
 * own table, counted there. */
double pp__head_params_gpu(const pp__shape *s) {
    double h = (double)s->m->hidden;
    bool own = !s->m->tied_embeddings || s->p->pp > 1;
    return 2.0 * h + (own ? (double)s->m->vocab * h / (double)s->p->tp : 0);
}
