// The backend op interface. The model's forward pass (engine/model.c) is written once as a
// sequence of these ops; the CPU backend runs each at once, a device backend may record them and
// submit at end_batch. Activations live in backend-owned buffers (bk_act): (rows, cols) float32,
// rows are tokens.
#ifndef CABIN_BACKEND_H
#define CABIN_BACKEND_H

#include "kv_cache.h"
#include "tensor.h"
#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct bk_act bk_act;
typedef struct backend backend;

// Per-op profile (filled when profiling is on).
enum op_kind {
    OP_EMBED, OP_RMSNORM, OP_MATMUL, OP_BIAS, OP_ROPE, OP_KV_STORE, OP_ATTENTION, OP_GLU,
    OP_ADD, OP_SCALE, OP_COUNT
};
const char *op_kind_name(enum op_kind k);

typedef struct rope_params {
    int n_heads;        // heads in this activation (n_head for q, n_kv_head for k)
    int head_dim;
    const rope_freqs *freqs;   // the angles (engine/rope.h); freqs->rope_dim <= head_dim dims rotated
    bool neox;          // NeoX style: rotate pairs (i, i+rope_dim/2) instead of (2i, 2i+1)
} rope_params;

typedef struct attn_params {
    int n_head, n_kv_head, head_dim;
    float scale;        // usually 1/sqrt(head_dim)
    int window;         // > 0: a query at slot p sees slots (p - window, p] only (sliding-window
                        // layers); 0: every slot up to its own
    float softcap;      // > 0: each score s (after the scale) becomes softcap * tanh(s / softcap)
                        // before the softmax (gemma2); 0: none
} attn_params;

// The gated FFN's activation of the gate: silu (llama, qwen, phi3) or GELU with the tanh
// approximation (gemma).
enum glu_act { GLU_SILU, GLU_GELU_TANH };

// What a backend can do, asked by the engine and the front ends instead of its name.
enum backend_cap {
    // Ops read weights where they lie in host memory (tensor.data); a backend without it uploads
    // them in weight_prepare and keeps its own copy.
    BACKEND_CAP_HOST_WEIGHTS = 1u << 0,
    // The KV cache lives in host memory: formats convert live and eviction policies run.
    BACKEND_CAP_HOST_KV      = 1u << 1,
    // Several devices to choose from (--device N; `cabin devices` lists them).
    BACKEND_CAP_DEVICES      = 1u << 2,
};

typedef struct backend_opts backend_opts;

// One row of the backend registry (engine/backend.c): a backend this build has.
typedef struct backend_info {
    const char *name;            // as --backend takes it: "cpu", "cpu-scalar", "vulkan"
    const char *summary;         // one line for --help and `cabin devices`
    unsigned caps;               // BACKEND_CAP_*
    backend *(*create)(const backend_opts *o, errbuf *err);
    // Prints the devices this backend can run on, one per line; NULL without BACKEND_CAP_DEVICES.
    int (*list_devices)(FILE *f, errbuf *err);
} backend_info;

struct backend {
    const char *name;            // the registry row's name: "cpu", "cpu-scalar", "vulkan"
    char description[128];       // e.g. "cpu avx512, 2 threads"
    unsigned caps;               // BACKEND_CAP_*, the registry row's
    void *impl;
    // Set by a device backend when its device is gone (Vulkan's VK_ERROR_DEVICE_LOST): nothing it
    // holds can be read again and every later batch fails; the session moves to the CPU.
    bool lost;

    // Weights: called once per tensor after load (and again after a precision switch) so a
    // device backend can upload it. The CPU backend reads tensor.data directly.
    int (*weight_prepare)(backend *b, tensor *w, errbuf *err);
    void (*weight_release)(backend *b, tensor *w);
    // True when weight_prepare keeps w in a layout of its own (the CPU's row-interleaved
    // kernels, engine/cpu/kernels.h), so that a host copy of its file bytes buys no speed; NULL
    // means never. own_weight_bytes: the bytes of weights so held now.
    bool (*weight_keeps_own)(backend *b, const tensor *w);
    // True when weight_prepare did make that copy of w (it may not have: no memory for it) and
    // multiplies from it alone; NULL means never.
    bool (*weight_holds_own)(backend *b, const tensor *w);
    uint64_t own_weight_bytes;
    // True if the backend can multiply by weights of this type.
    bool (*supports_type)(backend *b, uint32_t wtype);
    // Weight types (bit t: wtype t) whose matmul first rounds each activation row to Q8_0 blocks
    // (32 values sharing one fp16 scale) and multiplies in integers; 0: activations stay float.
    // The product then differs from the float one by up to half a step per block (tests bound it so).
    uint64_t act_q8_types;
    // Of those, the types whose activations are rounded to Q8_K blocks instead (256 values
    // sharing one float scale, as the reference does for the K-quants): half a step per 256.
    uint64_t act_q8k_types;
    // Types whose matmul rounds each activation to bf16 first (8 significant bits: a relative
    // error of at most 2^-8 each) and sums the products in float (the BF16 dot product).
    uint64_t act_bf16_types;
    // Types the backend has no kernel for but takes by converting the weights to convert_type
    // when they are prepared (bit t: wtype t): its products are those of the conversion.
    uint64_t converts_types;
    uint32_t convert_type;

    bk_act *(*act_new)(backend *b, int64_t rows, int64_t cols);
    void (*act_free)(backend *b, bk_act *a);
    // Rows [row0, row0+n_rows) of a to or from host floats (n_rows * cols), outside a batch.
    void (*act_read)(backend *b, const bk_act *a, int64_t row0, int64_t n_rows, float *dst);
    void (*act_write)(backend *b, bk_act *a, int64_t row0, int64_t n_rows, const float *src);

    // Optional (NULL: not offered): rows [row0, row0+n) of a as an activation of their own that
    // shares a's memory (act_free frees the view, not the rows). Decoding several conversations in
    // one pass (model_forward_seqs) needs it, for each one's attention over its own cache.
    bk_act *(*act_rows)(backend *b, bk_act *a, int64_t row0, int64_t n);

    int (*kv_prepare)(backend *b, kv_cache *kv, errbuf *err);  // after kv_cache_init
    void (*kv_release)(backend *b, kv_cache *kv);

    void (*begin_batch)(backend *b);
    int (*end_batch)(backend *b, errbuf *err);   // waits until every recorded op is done

    // ---- ops; n = number of rows (tokens) ----
    // out[t] = row ids[t] of emb (dequantized)
    void (*embed)(backend *b, const tensor *emb, const int32_t *ids, int n, bk_act *out);
    // out[t] = x[t] / rms(x[t]) * w; x and out may be the same buffer. A w shorter than the row
    // (w->ne0 < x->cols, dividing it) normalizes each group of w->ne0 elements on its own, with
    // the same w (per-head q/k norm); then out has x's columns.
    void (*rmsnorm)(backend *b, const bk_act *x, const tensor *w, float eps, int n, bk_act *out);
    // out[t] = W x[t] (out has w->ne1 columns); only the last `n` rows of x starting at x_row0
    void (*matmul)(backend *b, const tensor *w, const bk_act *x, int64_t x_row0, int n, bk_act *out);
    // x[t] += bias
    void (*add_bias)(backend *b, bk_act *x, const tensor *bias, int n);
    // rotate x[t] (n_heads heads of head_dim) for position positions[t]
    void (*rope)(backend *b, bk_act *x, int n, const int32_t *positions, const rope_params *p);
    // store k[t], v[t] at cache slot slots[t] of layer `layer`
    void (*kv_store)(backend *b, kv_cache *kv, int layer, const bk_act *k, const bk_act *v, int n,
                     const int32_t *slots);
    // out[t] = softmax(q[t] K[lo_t..n_ctx_t)ᵀ * scale) V over cache slots [lo_t, n_ctx_t), where
    // n_ctx_t = n_past + t + 1 (causal) and lo_t = 0, or n_ctx_t - window with a window
    void (*attention)(backend *b, const bk_act *q, kv_cache *kv, int layer, int n, int n_past,
                      const attn_params *p, bk_act *out);
    // gate[t] = act(gate[t]) * up[t] (enum glu_act)
    void (*glu)(backend *b, bk_act *gate, const bk_act *up, int n, int act);
    // x[t] += y[t]
    void (*add)(backend *b, bk_act *x, const bk_act *y, int n);
    // x[t] *= s
    void (*scale)(backend *b, bk_act *x, float s, int n);

    // Profiling: seconds spent per op kind since last reset (when enabled).
    void (*set_profiling)(backend *b, bool on);
    void (*profile_read)(backend *b, double secs[OP_COUNT], uint64_t calls[OP_COUNT]);
    void (*profile_reset)(backend *b);

    void (*destroy)(backend *b);
};

struct backend_opts {
    const char *name;      // a registry name or "auto" (NULL = auto; auto = the first row: cpu)
    int n_threads;         // 0 = all cores
    const char *kernels;   // CPU kernel table: "auto", "scalar", "avx2", "avx512"
    const char *device;    // Vulkan device index as `cabin devices` lists it; NULL or "auto":
                           // discrete GPU, then integrated, then any, then CPU (lavapipe)
};

// The backends this program has, in order of preference (the first is "auto"): n rows in *rows.
// A backend whose library is not linked in (VULKAN=0) has no row.
int backend_registry(const backend_info *const **rows);
// The row of that name, or NULL.
const backend_info *backend_find(const char *name);
// "auto, cpu, cpu-scalar, vulkan": the names --backend takes, for messages and --help.
const char *backend_names(void);
// Checks a --backend value: 0, or -1 with "unknown backend 'x' (available: ...)".
int backend_check_name(const char *name, errbuf *err);

// Creates the backend the options ask for. Errors name the backend and what is missing.
backend *backend_create(const backend_opts *opts, errbuf *err);
void backend_destroy(backend *b);
static inline bool backend_has(const backend *b, unsigned cap) { return (b->caps & cap) == cap; }

// CPU backend (engine/cpu/): kernels "auto", "scalar", "avx2", "avx512".
backend *backend_cpu_new(int n_threads, const char *kernels, errbuf *err);
extern const backend_info backend_cpu_info, backend_cpu_scalar_info;

#endif
