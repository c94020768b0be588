// Importance-aware quantization: activation statistics from running calibration text, and a
// Q4_0 quantizer that picks each block's scale to minimise the activation-weighted error.
// The result is plain Q4_0 (any GGUF tool runs it); only the choice of scales differs.
#ifndef CABIN_CALIBRATE_H
#define CABIN_CALIBRATE_H

#include "model.h"

// Per (layer, input group): mean of x² for every input column of the matrices fed by that group.
// Groups: TK_ATTN_Q (feeds q, k, v), TK_ATTN_OUTPUT, TK_FFN_GATE (feeds gate, up), TK_FFN_DOWN.
typedef struct act_stats {
    int n_layer;
    int cols[TK_LAYER_KINDS];           // input width per group
    double *sum_sq[TK_LAYER_KINDS];     // [layer * cols + c]
    long rows[TK_LAYER_KINDS];          // rows seen per layer (same for every layer)
    long tokens;
} act_stats;

// Runs the model over the tokens in windows of `ctx` (cache cleared between windows) and
// collects statistics. progress (may be NULL) gets 0..1.
int act_stats_collect(act_stats *st, model *m, backend *b, const int32_t *tokens, int n, int ctx,
                      volatile float *progress, errbuf *err);
void act_stats_free(act_stats *st);
// Importance of input column c for a matrix of (layer, kind): mean x² (NULL if no statistics).
const double *act_stats_for(const act_stats *st, int layer, int kind);

// Q4_0 with the block scale chosen (among candidates around the plain max/-8 scale, rounded to
// fp16 as stored) to minimise sum_i imp[i] * (x_i - d*q_i)^2. imp: n importances.
void quantize_row_q4_0_weighted(const float *x, const double *imp, void *dst, int64_t n);

#endif
