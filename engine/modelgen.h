// Random-weight models of any shape and type, written as GGUF: for tests and benchmarks.
// The vocabulary is copied from another GGUF (tokenizer.* keys) or made up (SPM-style).
#ifndef CABIN_MODELGEN_H
#define CABIN_MODELGEN_H

#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct modelgen_opts {
    const char *arch;        // "llama" or "qwen2"
    int dim, n_layer, n_head, n_kv_head, ffn_dim;
    int n_vocab;             // used when vocab_from is NULL
    int n_ctx;
    float rope_base, rms_eps;
    bool tied;               // no output.weight
    uint32_t type;           // type of the layer matrices
    uint32_t embd_type;      // type of token_embd / output
    const char *vocab_from;  // GGUF whose tokenizer.* keys are copied, or NULL
    uint64_t seed;
    float embd_scale;        // sd of token_embd (1 by default). Tied, it is also the output matrix:
                             // at 1 the logits' sd is about sqrt(dim), a one-hot distribution on
                             // which every KL is 0; 1/sqrt(dim) gives logits near 1.
} modelgen_opts;

modelgen_opts modelgen_defaults(void);   // a tiny llama: dim 64, 2 layers, 4/2 heads, ffn 192
int modelgen_write(const modelgen_opts *o, const char *path, errbuf *err);

#endif
