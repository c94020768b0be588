// A model with the embedded model's vocabulary and random weights, for the tests that sample
// through constrained decoding: every token is then a random choice among what a filter allows.
#ifndef CABIN_TEST_RANDOM_VOCAB_MODEL_H
#define CABIN_TEST_RANDOM_VOCAB_MODEL_H

#include "engine/modelgen.h"
#include "engine/session.h"

#include <stdlib.h>
#include <unistd.h>

#define RANDOM_VOCAB_FROM "assets/models/cabin-tiny.gguf"

// Writes the model (dim 64, n_layer layers, context n_ctx, weights from seed) to a fresh file
// made from path_template ("/tmp/NAME-XXXXXX", rewritten in place), and fills *so to open it: one
// thread, temperature 1 with no top-k, top-p or min-p, the same seed. 0, or -1 with err.
static inline int random_vocab_model(char *path_template, int n_layer, int n_ctx, uint64_t seed, session_opts *so,
                                     errbuf *err) {
    int fd = mkstemp(path_template);
    if (fd < 0) return err_set(err, "mkstemp %s failed", path_template);
    close(fd);
    modelgen_opts mo = modelgen_defaults();
    mo.dim = 64; mo.n_layer = n_layer; mo.n_head = 2; mo.n_kv_head = 1; mo.ffn_dim = 128; mo.n_ctx = n_ctx;
    mo.vocab_from = RANDOM_VOCAB_FROM;
    mo.seed = seed;
    if (modelgen_write(&mo, path_template, err)) { unlink(path_template); return -1; }
    *so = session_opts_default();
    so->model_path = path_template;
    so->backend.n_threads = 1;
    so->sampling.temp = 1.0f;
    so->sampling.top_k = 0;
    so->sampling.top_p = 1.0f;
    so->sampling.min_p = 0.0f;
    so->sampling.seed = seed;
    return 0;
}

#endif
