// Random-weight models of any shape and type, written as GGUF: for tests and benchmarks.
// The vocabulary is copied from another GGUF (tokenizer.* keys) or made up (SPM-style).
//
// Every architecture cabin runs, with the keys and tensors engine/model_load.c reads for it:
//   llama    attn_q/k/v, ffn_gate/up; adjacent-pair rope
//   qwen2    llama plus attn_q/k/v biases; NeoX rope
//   qwen3    llama plus attn_q_norm/attn_k_norm (head_dim each); NeoX rope
//   phi3     fused attn_qkv (rows q, k, v) and ffn_up (rows gate, up); NeoX rope
//   gemma3   qwen3's q/k norms plus post_attention_norm and post_ffw_norm; tied output (always,
//            as every Gemma 3 file); attention.sliding_window, .sliding_window_pattern and
//            rope.freq_base_swa (window layers); attention.key_length written
//   gemma2   gemma3 without the q/k norms; every other layer a window layer (no pattern key, no
//            window base: they turn by the model's rope); attn_logit_softcapping and
//            final_logit_softcapping
// Norm weights are 1 + noise (sd 0.1); matrices have sd 1/sqrt(fan-in).
// The rope scalings (engine/rope.h), each written as the converters write real files:
//   linear    rope.scaling.type "linear", rope.scaling.factor
//   yarn      rope.scaling.type "yarn", rope.scaling.factor, rope.scaling.original_context_length
//   llama3    (llama only) rope_freqs.weight: Llama 3.1's per-pair divisors, from factor,
//             low/high_freq_factor and the original context
//   longrope  (phi3 only) rope_factors_long/short.weight, rope.scaling.attn_factor and
//             rope.scaling.original_context_length; no rope.scaling.type (as Phi-3 files)
// Fields that are 0 take the defaults named beside them.
#ifndef CABIN_MODELGEN_H
#define CABIN_MODELGEN_H

#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct modelgen_opts {
    const char *arch;        // "llama", "qwen2", "qwen3", "phi3", "gemma3" or "gemma2"
    int dim, n_layer, n_head, n_kv_head, ffn_dim;
    int head_dim;            // attention.key_length (= value_length); 0: dim / n_head, no key
                             // written (qwen3 and gemma always write it)
    int n_vocab;             // used when vocab_from is NULL
    int n_ctx;
    float rope_base, rms_eps;
    bool tied;               // no output.weight (gemma: always)
    uint32_t type;           // type of the layer matrices
    uint32_t embd_type;      // type of token_embd / output
    const char *vocab_from;  // GGUF whose tokenizer.* keys are copied, or NULL
    uint64_t seed;
    float embd_scale;        // sd of token_embd: 0 = 1 (gemma: 1/sqrt(dim), as its input is scaled
                             // by sqrt(dim)). Tied, it is also the output matrix: at 1 the logits'
                             // sd is about sqrt(dim), a one-hot distribution on which every KL is
                             // 0; 1/sqrt(dim) gives logits near 1.
    // gemma3: layer l is global when (l + 1) is a multiple of swa_pattern, else it sees the last
    // swa_window positions and turns by rope_base_swa; gemma2: every other layer, the window only
    int swa_window;          // 0: 512 (gemma2: 4096)
    int swa_pattern;         // 0: 6 (gemma3 only)
    float rope_base_swa;     // 0: 10000 (gemma3 only)
    // gemma2's soft caps of the attention scores and the output logits: 0 = 50 and 30 (as Gemma 2
    // files have them); < 0: not written (none)
    float attn_softcap, final_softcap;
    // rope scaling (global layers only on gemma3)
    const char *rope_scaling;   // NULL or "none", "linear", "yarn", "llama3", "longrope"
    float rope_factor;       // linear, yarn: rope.scaling.factor; llama3: the slow pairs' divisor;
                             // longrope: the largest long factor. 0: llama3 8, the others
                             // n_ctx / rope_orig_ctx
    int rope_orig_ctx;       // the context before scaling; 0: llama3 8192, the others
                             // n_ctx / rope_factor (n_ctx / 4 when neither is given)
    float rope_low_freq, rope_high_freq;   // llama3's low/high_freq_factor; 0: 1 and 4
} modelgen_opts;

modelgen_opts modelgen_defaults(void);   // a tiny llama: dim 64, 2 layers, 4/2 heads, ffn 192
// Whether the options make a file cabin runs (the shape, and each key on an architecture that
// has it); 0, or -1 with one line in err. modelgen_write checks it first.
int modelgen_check(const modelgen_opts *o, errbuf *err);
int modelgen_write(const modelgen_opts *o, const char *path, errbuf *err);

#endif
