#include "calibrate.h"
#include "engine/half.h"
#include "wtype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// The group whose statistics a matrix kind uses.
static int group_of(int kind) {
    switch (kind) {
    case TK_ATTN_Q: case TK_ATTN_K: case TK_ATTN_V: return TK_ATTN_Q;
    case TK_FFN_GATE: case TK_FFN_UP: return TK_FFN_GATE;
    default: return kind;
    }
}

static void observe(void *ud, int layer, int kind, const float *x, int n_rows, int cols) {
    act_stats *st = ud;
    int g = group_of(kind);
    double *acc = st->sum_sq[g] + (size_t)layer * st->cols[g];
    for (int r = 0; r < n_rows; r++)
        for (int c = 0; c < cols; c++) acc[c] += (double)x[(size_t)r * cols + c] * x[(size_t)r * cols + c];
    if (layer == 0) st->rows[g] += n_rows;
}

int act_stats_collect(act_stats *st, model *m, backend *b, const int32_t *tokens, int n, int ctx,
                      volatile float *progress, errbuf *err) {
    memset(st, 0, sizeof *st);
    const model_hparams *hp = &m->hp;
    st->n_layer = hp->n_layer;
    st->cols[TK_ATTN_Q] = hp->dim;
    st->cols[TK_ATTN_OUTPUT] = hp->n_head * hp->head_dim;
    st->cols[TK_FFN_GATE] = hp->dim;
    st->cols[TK_FFN_DOWN] = hp->ffn_dim;
    int groups[] = { TK_ATTN_Q, TK_ATTN_OUTPUT, TK_FFN_GATE, TK_FFN_DOWN };
    for (int i = 0; i < 4; i++)
        st->sum_sq[groups[i]] = xcalloc((size_t)hp->n_layer * st->cols[groups[i]], sizeof(double));
    if (ctx > hp->n_ctx_train) ctx = hp->n_ctx_train;
    if (ctx < 2) ctx = 2;
    kv_cache kv;
    forward_ctx fc;
    if (kv_cache_init(&kv, KV_F16, hp->n_layer, ctx, hp->n_kv_head * hp->head_dim, err)) return -1;
    int batch = ctx < 256 ? ctx : 256;
    if (forward_ctx_init(&fc, b, m, batch, 1, err)) { kv_cache_free(&kv); return -1; }
    fc.observe = observe;
    fc.observe_ud = st;
    int rc = 0;
    int i = 0;
    while (i < n && !rc) {
        if (kv.n_used >= ctx) kv_cache_clear(&kv);   // next window
        int chunk = n - i;
        if (chunk > batch) chunk = batch;
        if (chunk > ctx - kv.n_used) chunk = ctx - kv.n_used;
        rc = model_forward(&fc, &kv, tokens + i, chunk, false, NULL, err);
        i += chunk;
        st->tokens += chunk;
        if (progress) *progress = (float)i / (float)n;
    }
    forward_ctx_free(&fc);
    kv_cache_free(&kv);
    return rc;
}

void act_stats_free(act_stats *st) {
    for (int i = 0; i < TK_LAYER_KINDS; i++) free(st->sum_sq[i]);
    memset(st, 0, sizeof *st);
}

const double *act_stats_for(const act_stats *st, int layer, int kind) {
    int g = group_of(kind);
    if (!st || !st->sum_sq[g] || layer < 0 || layer >= st->n_layer) return NULL;
    return st->sum_sq[g] + (size_t)layer * st->cols[g];
}

// Weighted error of quantizing x with scale d (d as stored: fp16-rounded); fills q.
static double block_error(const float *x, const double *w, float d, int8_t *q) {
    double e = 0.0;
    float id = d ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; j++) {
        int v = (int)lroundf(x[j] * id);
        if (v < -8) v = -8;
        if (v > 7) v = 7;
        q[j] = (int8_t)v;
        double diff = (double)x[j] - (double)d * v;
        e += w[j] * diff * diff;
    }
    return e;
}

void quantize_row_q4_0_weighted(const float *x, const double *imp, void *dst, int64_t n) {
    block_q4_0 *out = dst;
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + b * 32;
        double w[32], wsum = 0.0;
        for (int j = 0; j < 32; j++) wsum += imp[b * 32 + j];
        // Every weight keeps some say (an unused input channel must not be ignored entirely).
        double floor_w = wsum > 0 ? 1e-3 * wsum / 32 : 1.0;
        for (int j = 0; j < 32; j++) w[j] = imp[b * 32 + j] + floor_w;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; j++)
            if (fabsf(xb[j]) > amax) { amax = fabsf(xb[j]); max = xb[j]; }
        int8_t q[32], best_q[32];
        float best_d = 0.0f;
        double best = INFINITY;
        if (amax == 0.0f) {
            memset(best_q, 0, sizeof best_q);
        } else {
            // candidates: the largest weight mapped to -8 (plain Q4_0) or to +7, scaled ±20%
            for (int side = 0; side < 2; side++) {
                float d0 = side == 0 ? max / -8.0f : max / 7.0f;
                for (int k = -20; k <= 20; k++) {
                    float d = fp16_to_f32(f32_to_fp16(d0 * (1.0f + 0.01f * (float)k)));
                    double e = block_error(xb, w, d, q);
                    if (e < best) { best = e; best_d = d; memcpy(best_q, q, sizeof q); }
                }
            }
        }
        out[b].d = f32_to_fp16(best_d);
        for (int j = 0; j < 16; j++)
            out[b].qs[j] = (uint8_t)((best_q[j] + 8) | ((best_q[j + 16] + 8) << 4));
    }
}
