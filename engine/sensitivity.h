// Sensitivity of a model to quantization, per (layer, tensor kind): quantize ONLY that tensor to
// a target type, run a text, and measure the mean KL divergence against the file-precision run
// and the change in mean NLL. From the map, a precision plan that keeps the most sensitive
// tensors at a higher type within a bits-per-weight budget.
#ifndef CABIN_SENSITIVITY_H
#define CABIN_SENSITIVITY_H

#include "precision.h"
#include "quality.h"
#include "session.h"

typedef struct sens_cell {
    double kl_mean, kl_max;   // vs the base run (nats per token)
    double dnll;              // mean NLL with this tensor quantized - base mean NLL (nats)
    double top1;              // top-1 agreement with the base, 0..1
    uint64_t n_weights;       // ne0 * ne1
    uint32_t file_type;       // the tensor's type in the file
    bool done;
} sens_cell;

typedef struct sensitivity_map {
    int n_layer;
    uint32_t type;            // the target type
    double base_nll;          // mean NLL of the base (file precision) run
    long scored;              // tokens scored per run
    sens_cell *cells;         // (n_layer, TK_LAYER_KINDS) row-major: cells[layer*TK_LAYER_KINDS+kind]
} sensitivity_map;

static inline sens_cell *sens_at(const sensitivity_map *m, int layer, int kind) {
    return &m->cells[(size_t)layer * TK_LAYER_KINDS + (size_t)kind];
}
void sensitivity_map_init(sensitivity_map *m, int n_layer, uint32_t type);
void sensitivity_map_free(sensitivity_map *m);

// Called after the base run (layer -1) and after every cell; return false to stop early.
typedef bool (*sens_progress_fn)(void *ud, int done, int total, int layer, int kind, const sens_cell *c);

// Runs the base at the session's current precision (call on a session opened as in the file),
// then every (layer, kind) with only that tensor at `type`. ids/ctx/max_chunks as quality_eval.
// Restores the plan the session had. Cells already marked done (e.g. from a cache) are skipped.
int sensitivity_run(session *s, const int32_t *ids, int n, int ctx, int max_chunks,
                    sens_progress_fn progress, void *ud, sensitivity_map *m, errbuf *err);

// A plan: every layer matrix at the map's type, except the most sensitive ones at high_type,
// chosen greedily by KL removed per extra bit, while the mean bits per weight over all layer
// matrices stays <= budget_bpw. token_embd and output stay as in the file. Fails (one line)
// when even the all-low plan exceeds the budget or the rules would not fit a plan.
// *bpw receives the plan's mean bits per weight over the layer matrices; *kept the upgraded count.
int sensitivity_plan(const sensitivity_map *m, uint32_t high_type, double budget_bpw,
                     precision_plan *out, double *bpw, int *kept, errbuf *err);

// JSON text (malloc'd): {"type", "base_nll", "scored", "layers", "kinds": [...],
// "cells": [{"layer", "kind", "kl_mean", "kl_max", "dnll", "top1", "n_weights"}, ...]}.
char *sensitivity_to_json(const sensitivity_map *m);
// Reads what sensitivity_to_json wrote (cells become done); the map must be initialised.
int sensitivity_from_json(sensitivity_map *m, const char *json, errbuf *err);

#endif
