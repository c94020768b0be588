// Models of the llama family and its relatives (llama, qwen2, qwen3, phi3, gemma2, gemma3) loaded from
// GGUF (engine/model_load.c), and the forward pass written once over the backend op interface
// (engine/model.c).
#ifndef CABIN_MODEL_H
#define CABIN_MODEL_H

#include "backend.h"
#include "gguf.h"
#include "precision.h"
#include "wtype.h"
#include "kv_cache.h"
#include "tensor.h"
#include "tokenizer.h"

enum model_arch { ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3, ARCH_PHI3, ARCH_GEMMA3, ARCH_GEMMA2, ARCH_COUNT };
// The general.architecture names cabin runs, in enum order (for messages).
#define MODEL_ARCH_NAMES "llama, qwen2, qwen3, phi3, gemma3, gemma2"

typedef struct model_hparams {
    enum model_arch arch;
    char arch_name[32];
    int n_vocab;
    int n_ctx_train;     // <arch>.context_length
    int dim;             // embedding length
    int n_layer;
    int n_head, n_kv_head;
    int head_dim;        // dim / n_head unless attention.key_length says otherwise
    int ffn_dim;
    int rope_dim;        // rope.dimension_count, default head_dim
    float rope_base;
    rope_scaling rope_scaling;   // what the file asks of the rope beyond the base (engine/rope.h);
                                 // its factor arrays are the model's (rope_factors)
    float rms_eps;
    bool rope_neox;      // qwen2, qwen3, phi3, gemma2, gemma3: NeoX-style rotation
    bool tied_output;    // no output.weight: the token embedding is reused
    float attn_scale;    // scores scaled by it: 1/sqrt(head_dim) (the gemma 27Bs: 1/sqrt(dim/n_head))
    int glu_act;         // the FFN gate's activation (enum glu_act): silu, or GELU(tanh) for gemma
    bool embed_scale;    // gemma: the input embedding times sqrt(dim)
    // Sliding-window layers (gemma): every swa_pattern-th layer sees the whole context, the
    // others the last swa_window slots (model.layer_swa flags them); gemma3's turn by
    // rope_base_swa with no scaling (rope_swa_own), gemma2's by the model's rope.
    int swa_window;      // 0: every layer global
    int swa_pattern;
    bool rope_swa_own;
    float rope_base_swa;
    // gemma2's soft caps (0: none): attention scores (after the scale) and the output logits
    // become cap * tanh(x / cap)
    float attn_softcap, final_softcap;
} model_hparams;

// One layer's weights. Matrices are row-major (out_features rows of in_features); the weight
// type of each is whatever the file (or the current precision plan) gives it. phi3's fused
// tensors are bound as row ranges: wq, wk, wv of attn_qkv (rows q, k, v) and w_gate, w_up of
// ffn_up (rows gate, up), each a tensor of its own pointing into the file's rows.
typedef struct layer_weights {
    tensor attn_norm;    // (dim) f32
    tensor wq, wk, wv;   // (n_head*head_dim, dim), (n_kv_head*head_dim, dim) x2
    tensor wo;           // (dim, n_head*head_dim)
    tensor bq, bk, bv;   // optional biases (qwen2); .data == NULL when absent
    tensor q_norm, k_norm; // (head_dim) f32: RMSNorm of each head of q and k before rope (qwen3,
                           // gemma3); .data == NULL when absent
    tensor post_attn_norm, post_ffn_norm;   // (dim) f32: RMSNorm of the attention's and the FFN's
                                            // output before the residual add (gemma); or absent
    tensor ffn_norm;     // (dim) f32
    tensor w_gate, w_up; // (ffn_dim, dim)
    tensor w_down;       // (dim, ffn_dim)
} layer_weights;

typedef struct model {
    gguf_file file;
    model_hparams hp;
    tokenizer *tok;
    char *chat_template;       // tokenizer.chat_template or NULL
    char *name;                // general.name or the file name
    tensor tok_embd;           // (n_vocab, dim)
    tensor output_norm;        // (dim) f32
    tensor output;             // (n_vocab, dim); aliases tok_embd when tied
    layer_weights *layers;
    float *rope_factors[2];    // rope_freqs.weight (llama3), or longrope's long and short factors
    uint8_t *layer_swa;        // (n_layer) 1: a sliding-window layer (hp.swa_window > 0)
    bool *tensor_used;         // per tensor of the file: read by the loader
    int n_unused;              // the file's tensors it did not read (model_load refuses them)
    uint64_t weight_bytes;     // bytes of all weight tensors as loaded
    uint8_t *weights_copy;     // model_copy_weights: the file's weights in anonymous memory
    uint64_t weights_copy_bytes;
} model;

// A file whose tensors are not all read by cabin's forward pass for its architecture is refused
// (a tensor nobody reads may change the numbers): one line naming the first.
int model_load(model **out, const char *path, errbuf *err);
// The same, keeping a file with tensors it does not read (cabin info lists them).
int model_load_any(model **out, const char *path, errbuf *err);
// The names of the tensors the loader did not read (up to max; returns how many there are).
int model_unused_tensors(const model *m, const char **names, int max);
// The angles of the model's rope in a run of n_ctx positions (longrope chooses its factors by it);
// swa: its sliding-window layers' (gemma3: their own base, no scaling; otherwise the same).
void model_rope_freqs(const model *m, int n_ctx, bool swa, rope_freqs *out);
// The model's window layers for a KV cache whose passes append at most `batch` slots (layers
// NULL when it has none): kv_cache_init_windows keeps them in rings.
kv_windows model_kv_windows(const model *m, int batch);
// The same over a GGUF in memory the caller keeps alive until model_free (name is used in
// messages and as the model's name when the file has none): fuzz/fuzz_gguf.c, tests.
int model_load_memory(model **out, const void *data, uint64_t size, const char *name, errbuf *err);
void model_free(model *m);
// The architecture's general.architecture name, and back: 0 and *out set when name is one cabin
// runs, -1 otherwise (the loader and make-model take their names from this one table).
const char *model_arch_name(enum model_arch a);
int model_arch_from_name(const char *name, enum model_arch *out);
// Calls fn for every weight tensor (matrices and vectors; output once even when tied).
void model_for_each_tensor(model *m, void (*fn)(tensor *t, void *ud), void *ud);
// Copies every weight still read from the mapped file (data == src_data) into one block of
// anonymous memory advised for 2 MiB pages and points data and src_data there, then lets go of
// the file's pages in this mapping. Decode reads every weight once per token; from 4 KiB
// page-cache pages it reaches about half the memory bandwidth on this class of machine, from
// 2 MiB pages about two thirds (docs/PERF.md). n_threads copy (0: all cores). Returns the
// bytes copied: 0 when nothing is read from the file, or when the copy would not leave 512 MiB
// of the available memory (the weights then stay in the mapping).
// Weights the backend keeps in a layout of its own (backend.weight_keeps_own) are left where
// they are (b may be NULL: none is), and so is the untied token embedding (a row read per
// token: the mapping serves it).
uint64_t model_copy_weights(model *m, int n_threads, backend *b);
// Before a forward pass or a plan's conversion: when a weight (or the source a conversion
// reads) is still in the mapped file (--mmap, or a copy that did not fit), that the file has
// not been truncated since (reading past its new end would kill the process with SIGBUS). 0,
// or -1 with the file named.
int model_check_file(const model *m, errbuf *err);
// ---- precision plans (engine/precision.h) ----
// The tensor a plan names: layer matrices by (layer, kind); TK_TOKEN_EMBD / TK_OUTPUT with any
// layer (a tied model's output is its token embedding).
tensor *model_tensor_by_kind(model *m, int layer, int kind);

typedef struct plan_change {
    tensor *t;
    uint32_t type;
    void *data;          // converted weights (NULL: back to the file's)
    size_t row_bytes;
} plan_change;

typedef struct plan_staging {
    plan_change *changes;
    int n;
    int n_upcast;        // tensors given a type above their source: dequantized copies
    double secs;         // conversion time
} plan_staging;

// Converts, from the file's weights, every tensor whose type the plan changes, without touching
// the live model (safe on a worker thread while the model runs). *progress goes 0 -> 1.
// Fails (nothing staged) if any target type can't be produced for a tensor.
int model_plan_stage(model *m, const precision_plan *p, plan_staging *st, volatile float *progress, errbuf *err);
// Swaps the staged tensors in (between two forward passes); re-prepares them on the backend.
void model_plan_commit(model *m, plan_staging *st, backend *b);
void model_plan_discard(plan_staging *st);
// stage + commit
int model_apply_plan(model *m, const precision_plan *p, backend *b, errbuf *err);
// Bytes of the plan-governed tensors, by weight type.
void model_bytes_by_type(const model *m, uint64_t bytes[WT_COUNT]);

// Weight bytes read per decoded token (every matrix once, embedding row negligible).
uint64_t model_decode_bytes(const model *m);

// Scratch buffers for running a model on a backend, sized for batches of up to n_batch tokens.
typedef struct forward_ctx {
    backend *b;
    const model *m;
    rope_freqs rope;           // the model's rope for rope_n_ctx positions (model_rope_freqs) ...
    rope_freqs rope_swa;       // ... and its window layers' (hp.swa_window > 0)
    int rope_n_ctx;            // 0: not made yet
    int n_batch;
    bk_act *x, *h, *q, *k, *v, *att, *gate, *up, *logits;
    int logits_rows;           // rows of the logits buffer
    // Optional: called with the input rows of every layer matrix (x: (n_rows, cols) on the
    // host) — kind is the tensor_kind of the matrix the rows feed (q/k/v share attn_q's).
    // For calibration statistics; slows the forward pass.
    void (*observe)(void *ud, int layer, int kind, const float *x, int n_rows, int cols);
    void *observe_ud;
    float *observe_buf;
} forward_ctx;

int forward_ctx_init(forward_ctx *fc, backend *b, const model *m, int n_batch, int logits_rows,
                     errbuf *err);
void forward_ctx_free(forward_ctx *fc);
// Prepares (uploads) every weight on the backend; checks the backend supports each type.
int model_prepare_backend(model *m, backend *b, errbuf *err);
// Prepares one weight (model_prepare_backend, and a plan's commit for each tensor it changed).
// Once b holds the weight in a layout of its own (backend.weight_holds_own) the rows it was
// made from go where nothing else reads them: the file's pages under it are dropped from the
// mapping, and a conversion's buffer is freed (tensor.data NULL) unless it is the token
// embedding, whose rows are read one per token. The embedding of a model with an output matrix
// of its own is never multiplied: b does not get it in its own layout.
int model_prepare_tensor(model *m, backend *b, tensor *t, errbuf *err);
// When [p, p+n) lies in the model file's mapping: drops its pages from the resident set (they
// fault back from the page cache when read) and returns true.
bool model_drop_file_pages(const model *m, const void *p, size_t n);
// Whether t is read a row at a time and never multiplied (the untied token embedding).
bool model_tensor_rows_only(const model *m, const tensor *t);
// Lets go of what b holds of every weight (before b is destroyed while m lives on).
void model_release_backend(model *m, backend *b);

// Runs tokens[0..n) at positions kv->n_used .. +n (n <= fc->n_batch), appends them to the cache.
// logits: if non-NULL, receives n_vocab floats per requested row: all n rows when all_logits,
// else only the last row. A batch longer than the cache's rings take (kv_cache_max_batch) runs
// in parts; a cache whose rings are not this model's window layers is refused.
int model_forward(forward_ctx *fc, kv_cache *kv, const int32_t *tokens, int n, bool all_logits,
                  float *logits, errbuf *err);
// One token for each of n_seq conversations in one pass: tokens[i] at kvs[i]->n_used, stored in
// and attending over kvs[i] (caches of one context size); the weights are read once for all.
// logits: n_seq rows. Each row is the one model_forward gives for that conversation alone. Needs
// a backend with act_rows, n_seq <= fc->n_batch and <= fc->logits_rows, and no observe hook.
int model_forward_seqs(forward_ctx *fc, kv_cache *const *kvs, const int32_t *tokens, int n_seq, float *logits,
                       errbuf *err);

#endif
