// Helpers for engine tests: run a model on a chosen backend and collect logits.
#ifndef CABIN_TEST_MODEL_UTIL_H
#define CABIN_TEST_MODEL_UTIL_H

#include "engine/model.h"

#include <math.h>
#include <stdlib.h>

typedef struct runner {
    model *m;
    backend *b;
    kv_cache kv;
    forward_ctx fc;
} runner;

// kernels: "scalar" for the reference path, "auto" for the fast one.
static inline int runner_open(runner *r, model *m, const char *kernels, int threads,
                              enum kv_format kvf, int n_ctx, int n_batch, errbuf *err) {
    memset(r, 0, sizeof *r);
    r->m = m;
    r->b = backend_cpu_new(threads, kernels, err);
    if (!r->b) return -1;
    if (model_prepare_backend(m, r->b, err)) return -1;
    if (kv_cache_init(&r->kv, kvf, m->hp.n_layer, n_ctx, m->hp.n_kv_head * m->hp.head_dim, err)) return -1;
    return forward_ctx_init(&r->fc, r->b, m, n_batch, n_batch, err);
}

static inline void runner_close(runner *r) {
    forward_ctx_free(&r->fc);
    kv_cache_free(&r->kv);
    if (r->b) backend_destroy(r->b);
    memset(r, 0, sizeof *r);
}

static inline float max_abs(const float *x, int n) {
    float m = 0;
    for (int i = 0; i < n; i++) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    return m;
}

#endif
