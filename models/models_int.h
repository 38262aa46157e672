/*
 * models/models_int.h: helpers shared by the files of the models layer.
 * Private: other layers use include/podplan/models.h only.
 */
#ifndef PODPLAN_MODELS_INT_H
#define PODPLAN_MODELS_INT_H

#include "podplan/models.h"

/* Parameters of one transformer layer (attention, MLP, norms, biases).
 * The counting conventions are in model.c, next to pp_model_params. */
double pp__layer_params(const pp_model *m);

/* Parameters of the input embedding: the word table V*h, plus the learned
 * position table s*h for GPT-style (GeLU) models; LLaMA-style (SwiGLU)
 * models use rotary positions and have no table. */
double pp__embedding_params(const pp_model *m);

/* Parameters held by one GPU of a pipeline stage: its layers and, on the
 * first and last stage, the embedding (or output layer), split over tp;
 * pp__stage_params is the most any stage holds.  With pp == 1 the stage
 * holds everything: pp_model_params / tp.  Generic models cannot be
 * split: params. */
double pp__stage_params(const pp_model *m, const pp_parallel *p);
double pp__stage_params_of(const pp_model *m, const pp_parallel *p,
                           int64_t stage);

#endif /* PODPLAN_MODELS_INT_H */
