// A float64 forward pass over a GGUF file's dequantized weights, for the reference checks: an
// implementation of its own, independent of engine/model.c and the backends (it shares only the
// GGUF reader and the weight types' dequantizers with them), so that cabin's scalar path can be
// checked against it where a reference record carries no `exact_*` logits of its own.
//
// Every weight row is dequantized to float by its type's to_f32 and widened to double; every
// activation, sum, norm, angle and softmax is double. Only the logits of the last position are
// returned (the whole sequence is evaluated as one causal batch starting at position 0).
//
// Architectures, read from the file's own keys and tensors (../shared/ref/README.md):
//   llama   RMSNorm, SwiGLU, adjacent-pair rope; `rope_freqs.weight` divides each frequency's
//           angle by its factor (Llama 3.1+); `rope.scaling.type` linear divides every angle by
//           `rope.scaling.factor`; yarn as below
//   qwen2   llama plus q/k/v biases; NeoX rope (pairs i, i + rope_dim/2)
//   qwen3   llama plus per-head RMSNorm of q and k before rope (`attn_q_norm`, `attn_k_norm`); NeoX
//   phi3    fused `attn_qkv` (rows q, k, v) and `ffn_up` (rows gate, up); NeoX; longrope:
//           `rope_factors_long`/`_short` chosen by the run's context against
//           `phi3.rope.scaling.original_context_length` (long when n_ctx is larger), cos and sin
//           times `phi3.rope.scaling.attn_factor`
//   gemma3  embedding times sqrt(dim); RMSNorm before and after attention and FFN; q/k RMSNorm
//           per head; GELU(tanh) gate; NeoX; sliding window on every layer but each
//           `sliding_window_pattern`-th, with `rope.freq_base_swa` there and no rope scaling
//           (a file's scaling turns the global layers only); tied output
//   gemma2  the same without q/k norms and with the optional logit soft-caps
//           (`attn_logit_softcapping`, `final_logit_softcapping`)
// Gemma conventions, as the reference implementation (llama.cpp) defines them:
//   - the GGUF norm weights already hold (1 + w) (the converter adds the 1 that Gemma's RMSNorm
//     applies at run time), so every norm multiplies by the stored weight as it is;
//   - layer il is a sliding-window layer iff il % pattern < pattern - 1 (global iff
//     (il + 1) % pattern == 0); a query at position p sees keys at positions k with
//     p - k < window, i.e. k in (p - window, p];
//   - the attention scale is 1/sqrt(key_length), except the 27B shapes (gemma3: 62 layers,
//     gemma2: 46) that use 1/sqrt(dim / n_head) (their query_pre_attn_scalar);
//   - embedding scale sqrt(dim) on token inputs.
// YaRN (`rope.scaling.type` yarn), as the reference implementation's rope op defines it: with
// s = `rope.scaling.factor` and the original context L (`rope.scaling.original_context_length`),
// pair i's frequency theta_i = base^(-2i/rope_dim) makes L theta_i / 2pi turns over L; the pair
// index at which it makes b turns is d(b) = rope_dim ln(L / (2pi b)) / (2 ln base). Between
// lo = max(0, floor(d(beta_fast))) and hi = min(rope_dim - 1, ceil(d(beta_slow))) the angle moves
// linearly, in the pair index, from theta_i (kept: fast pairs) to theta_i / s (interpolated: slow
// pairs): with g = clamp((i - lo) / max(0.001, hi - lo), 0, 1) and e = `yarn_ext_factor`,
// the angle is theta_i (1 - (1 - g) e) / s + theta_i (1 - g) e; cos and sin are scaled by
// (1 + 0.1 ln s) `attn_factor` `yarn_attn_factor` (only `attn_factor` when e = 0). beta_fast 32,
// beta_slow 1, e 1 unless the file says otherwise.
// A key that changes the arithmetic and is not implemented here (other rope scalings, YaRN's
// log multiplier, a sliding window on a non-Gemma file) is refused, never ignored.
#ifndef CABIN_TEST_FORWARD64_H
#define CABIN_TEST_FORWARD64_H

#include "base/base.h"
#include "engine/gguf.h"
#include "engine/wtype.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// One layer's tensors, pointing into the open file. Matrices are (rows, cols) with cols = ne[0].
typedef struct f64_layer {
    const gguf_tensor *attn_norm;            // (dim)
    const gguf_tensor *wq, *wk, *wv;         // (n_head*hd_k, dim), (n_kv*hd_k, dim), (n_kv*hd_v, dim); NULL when fused
    const gguf_tensor *wqkv;                 // phi3: (n_head*hd_k + n_kv*(hd_k + hd_v), dim), rows q, k, v
    const gguf_tensor *bq, *bk, *bv;         // qwen2 biases; NULL when absent
    const gguf_tensor *q_norm, *k_norm;      // (hd_k): RMSNorm of each head; NULL when absent
    const gguf_tensor *wo;                   // (dim, n_head*hd_v)
    const gguf_tensor *post_attn_norm;       // gemma: (dim) on the attention output; NULL otherwise
    const gguf_tensor *ffn_norm;             // (dim)
    const gguf_tensor *w_gate;               // (ffn, dim); NULL: w_up holds the gate rows first
    const gguf_tensor *w_up;                 // (ffn, dim) or (2*ffn, dim) fused
    const gguf_tensor *w_down;               // (dim, ffn)
    const gguf_tensor *post_ffn_norm;        // gemma: (dim) on the FFN output; NULL otherwise
    bool swa;                                // sliding-window layer (gemma)
    bool rope_plain;                         // gemma3's window layers: the plain rope of their base,
                                             // whatever the file's scaling (gemma2's scale them too)
    double rope_base;                        // this layer's rope base
} f64_layer;

typedef struct f64_model {
    gguf_file g;
    char arch[32];
    int dim, n_layer, n_head, n_kv_head, hd_k, hd_v, ffn, n_vocab, rope_dim;
    double eps;
    double embd_scale;        // 1, or sqrt(dim) (gemma)
    double attn_scale;        // on q·k
    double attn_softcap;      // 0: none; else scores = cap * tanh(scores / cap)
    double final_softcap;     // 0: none; on the logits
    double rope_freq_scale;   // linear rope scaling: every angle times this (1: none)
    double rope_attn_factor;  // longrope, yarn: cos and sin times this (1: none)
    bool yarn;                // YaRN (above): the next four apply
    double yarn_factor, yarn_ext, yarn_beta_fast, yarn_beta_slow;
    int yarn_orig_ctx;
    int window;               // sliding window in tokens (0: none)
    int orig_ctx;             // longrope: the context up to which the short factors apply
    bool neox;                // rope pairs (i, i + rope_dim/2), else (2i, 2i+1)
    bool gelu;                // FFN activation GELU(tanh), else SiLU
    const gguf_tensor *tok_embd;     // (n_vocab, dim)
    const gguf_tensor *out_norm;     // (dim)
    const gguf_tensor *output;       // (n_vocab, dim); token_embd when tied
    const gguf_tensor *rope_freqs;   // (rope_dim/2) divisors of the angles; NULL when absent
    const gguf_tensor *rope_long, *rope_short; // longrope factors (rope_dim/2); NULL when absent
    f64_layer *layers;
} f64_model;

// ---- file access ----

// A u32 key ARCH.SUFFIX into *out; absent: *out = def (or an error when required).
static inline int f64_key_u32(const f64_model *m, const char *suffix, bool required, uint32_t def, uint32_t *out,
                              errbuf *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    int r = gguf_get_u32(&m->g, key, out, err);
    if (r < 0) return err_prefix(err, "%s", m->g.path), -1;
    if (r == 0) {
        if (required) return err_set(err, "%s: key %s missing", m->g.path, key);
        *out = def;
    }
    return 0;
}

static inline int f64_key_f64(const f64_model *m, const char *suffix, double def, double *out, errbuf *err) {
    char key[128];
    float v;
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    int r = gguf_get_f32(&m->g, key, &v, err);
    if (r < 0) return err_prefix(err, "%s", m->g.path), -1;
    *out = r ? (double)v : def;
    return 0;
}

// Tensor NAME with ne = (ne0, ne1) (ne1 = 1 for a vector), in a type that dequantizes. Absent:
// NULL, and an error only when required (*failed is set on any error).
static inline const gguf_tensor *f64_tensor(const f64_model *m, const char *name, int64_t ne0, int64_t ne1,
                                            bool required, bool *failed, errbuf *err) {
    const gguf_tensor *t = gguf_find_tensor(&m->g, name);
    if (!t) {
        if (required) {
            err_set(err, "%s: tensor %s missing", m->g.path, name);
            *failed = true;
        }
        return NULL;
    }
    const wtype_info *ti = wtype_get(t->type);
    if (t->ne[0] != (uint64_t)ne0 || t->ne[1] != (uint64_t)ne1 || t->ne[2] != 1 || t->ne[3] != 1) {
        err_set(err, "%s: tensor %s: shape (%llu, %llu, %llu, %llu), expected (%lld, %lld)", m->g.path, name,
                (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                (unsigned long long)t->ne[3], (long long)ne0, (long long)ne1);
        *failed = true;
        return NULL;
    }
    if (!ti || !ti->to_f32 || wtype_row_bytes(t->type, t->ne[0]) == 0) {
        err_set(err, "%s: tensor %s: type %s does not dequantize (row of %llu)", m->g.path, name,
                wtype_name(t->type), (unsigned long long)t->ne[0]);
        *failed = true;
        return NULL;
    }
    return t;
}

static inline const gguf_tensor *f64_blk(const f64_model *m, int il, const char *what, int64_t ne0, int64_t ne1,
                                         bool required, bool *failed, errbuf *err) {
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", il, what);
    return f64_tensor(m, name, ne0, ne1, required, failed, err);
}

// Row r of t dequantized and widened: out (ne[0]); tmp (ne[0]) floats of scratch.
static inline void f64_row(const gguf_tensor *t, int64_t r, float *tmp, double *out) {
    uint64_t rb = wtype_row_bytes(t->type, t->ne[0]);
    wtype_get(t->type)->to_f32((const uint8_t *)t->data + (uint64_t)r * rb, tmp, (int64_t)t->ne[0]);
    for (uint64_t i = 0; i < t->ne[0]; i++) out[i] = (double)tmp[i];
}

// A whole vector tensor (one row).
static inline void f64_vec(const gguf_tensor *t, double *out) {
    float *tmp = xmalloc(t->ne[0] * sizeof(float));
    f64_row(t, 0, tmp, out);
    free(tmp);
}

// y[i*ldy + r] = sum_c W[r0 + r][c] * x[i*cols + c] for i < n tokens, r < rows; each weight
// row is dequantized once for all tokens. x: (n, cols) with cols = t->ne[0].
static inline void f64_matmul(const gguf_tensor *t, int64_t r0, int64_t rows, const double *x, int n, double *y,
                              int64_t ldy) {
    int64_t cols = (int64_t)t->ne[0];
    float *tmp = xmalloc((size_t)cols * sizeof(float));
    double *w = xmalloc((size_t)cols * sizeof(double));
    for (int64_t r = 0; r < rows; r++) {
        f64_row(t, r0 + r, tmp, w);
        for (int i = 0; i < n; i++) {
            const double *xi = x + (size_t)i * (size_t)cols;
            double s = 0;
            for (int64_t c = 0; c < cols; c++) s += w[c] * xi[c];
            y[(size_t)i * (size_t)ldy + (size_t)r] = s;
        }
    }
    free(w);
    free(tmp);
}

// ---- arithmetic ----

// x (n) = x / sqrt(mean(x^2) + eps) * w; w may be NULL (no weight).
static inline void f64_rmsnorm(double *x, int n, const double *w, double eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) x[i] = x[i] * inv * (w ? w[i] : 1.0);
}

static inline double f64_silu(double x) { return x / (1.0 + exp(-x)); }

// GELU, tanh approximation (Gemma's gelu_pytorch_tanh).
static inline double f64_gelu(double x) {
    const double c = 0.7978845608028654; // sqrt(2/pi)
    return 0.5 * x * (1.0 + tanh(c * (x + 0.044715 * x * x * x)));
}

// YaRN's pair index at which theta_i makes `turns` turns over the original context (above).
static inline double f64_yarn_pair(const f64_model *m, double turns, double base) {
    return m->rope_dim * log(m->yarn_orig_ctx / (2.0 * M_PI * turns)) / (2.0 * log(base));
}

// Rotates one head's first rope_dim elements at position pos with the rope of layer L: the plain
// rope of its base (L->rope_plain), else the file's scaling. factors (rope_dim/2) divide the
// angles (NULL: none); mscale multiplies cos and sin (both the file's scaling's).
static inline void f64_rope(const f64_model *m, const f64_layer *L, double *h, int pos, const double *factors,
                            double mscale) {
    const int half = m->rope_dim / 2;
    const double base = L->rope_base, freq_scale = L->rope_plain ? 1.0 : m->rope_freq_scale;
    if (L->rope_plain) factors = NULL, mscale = 1.0;
    const bool yarn = m->yarn && !L->rope_plain;
    double lo = 0, hi = 0;
    if (yarn) {
        lo = fmax(0.0, floor(f64_yarn_pair(m, m->yarn_beta_fast, base)));
        hi = fmin(m->rope_dim - 1.0, ceil(f64_yarn_pair(m, m->yarn_beta_slow, base)));
        if (m->yarn_ext != 0.0) mscale *= 1.0 + 0.1 * log(m->yarn_factor);
    }
    for (int i = 0; i < half; i++) {
        double theta = pos * pow(base, -2.0 * i / m->rope_dim) * freq_scale;
        if (factors) theta /= factors[i];
        if (yarn) {
            double g = fmin(1.0, fmax(0.0, (i - lo) / fmax(0.001, hi - lo)));
            double kept = (1.0 - g) * m->yarn_ext;   // share of the angle left as it is
            theta = theta * (1.0 - kept) / m->yarn_factor + theta * kept;
        }
        double c = cos(theta) * mscale, s = sin(theta) * mscale;
        int a = m->neox ? i : 2 * i, b = m->neox ? i + half : 2 * i + 1;
        double x0 = h[a], x1 = h[b];
        h[a] = x0 * c - x1 * s;
        h[b] = x0 * s + x1 * c;
    }
}

// ---- open / close ----

static inline void forward64_close(f64_model *m) {
    free(m->layers);
    gguf_close(&m->g);
    memset(m, 0, sizeof *m);
}

static inline int forward64_open(f64_model *m, const char *path, errbuf *err) {
    memset(m, 0, sizeof *m);
    if (gguf_open(&m->g, path, err)) return -1;
    char *arch = NULL;
    int r = gguf_get_strdup(&m->g, "general.architecture", &arch, err);
    if (r <= 0 || strlen(arch) >= sizeof m->arch) {
        if (r == 0) err_set(err, "%s: no general.architecture", path);
        else if (r > 0) err_set(err, "%s: architecture name too long", path);
        free(arch);
        gguf_close(&m->g);
        return -1;
    }
    strcpy(m->arch, arch);
    free(arch);
    bool llama = !strcmp(m->arch, "llama"), qwen2 = !strcmp(m->arch, "qwen2"), qwen3 = !strcmp(m->arch, "qwen3");
    bool phi3 = !strcmp(m->arch, "phi3"), gemma3 = !strcmp(m->arch, "gemma3"), gemma2 = !strcmp(m->arch, "gemma2");
    bool gemma = gemma2 || gemma3;
    if (!(llama || qwen2 || qwen3 || phi3 || gemma)) {
        err_set(err, "%s: architecture '%s' not supported by the float64 forward", path, m->arch);
        goto fail;
    }

    uint32_t dim, n_layer, n_head, n_kv, hd_k, hd_v, ffn, rope_dim;
    if (f64_key_u32(m, "embedding_length", true, 0, &dim, err) ||
        f64_key_u32(m, "block_count", true, 0, &n_layer, err) ||
        f64_key_u32(m, "attention.head_count", true, 0, &n_head, err) ||
        f64_key_u32(m, "attention.head_count_kv", false, n_head, &n_kv, err) ||
        f64_key_u32(m, "feed_forward_length", true, 0, &ffn, err))
        goto fail;
    // bounds that keep every product below in int range (these are test models; real ones fit too)
    if (dim == 0 || dim > 65536 || n_layer == 0 || n_layer > 1024 || n_head == 0 || n_head > 1024 || n_kv == 0 ||
        n_head % n_kv != 0 || ffn == 0 || ffn > (1u << 20)) {
        err_set(err, "%s: bad shape (dim %u, layers %u, heads %u/%u, ffn %u)", path, dim, n_layer, n_head, n_kv, ffn);
        goto fail;
    }
    if (f64_key_u32(m, "attention.key_length", false, dim / n_head, &hd_k, err) ||
        f64_key_u32(m, "attention.value_length", false, dim / n_head, &hd_v, err))
        goto fail;
    if (hd_k == 0 || hd_k > 4096 || hd_v == 0 || hd_v > 4096) {
        err_set(err, "%s: bad head dims %u/%u", path, hd_k, hd_v);
        goto fail;
    }
    if (f64_key_u32(m, "rope.dimension_count", false, hd_k, &rope_dim, err)) goto fail;
    if (rope_dim == 0 || rope_dim > hd_k || rope_dim % 2) {
        err_set(err, "%s: bad rope dimension count %u (head dim %u)", path, rope_dim, hd_k);
        goto fail;
    }
    m->dim = (int)dim, m->n_layer = (int)n_layer, m->n_head = (int)n_head, m->n_kv_head = (int)n_kv;
    m->hd_k = (int)hd_k, m->hd_v = (int)hd_v, m->ffn = (int)ffn, m->rope_dim = (int)rope_dim;

    double base, eps;
    if (f64_key_f64(m, "rope.freq_base", 10000.0, &base, err) ||
        f64_key_f64(m, "attention.layer_norm_rms_epsilon", 1e-5, &eps, err))
        goto fail;
    m->eps = eps;
    m->neox = !llama;
    m->gelu = gemma;
    m->embd_scale = gemma ? sqrt((double)dim) : 1.0;
    m->attn_scale = 1.0 / sqrt((double)hd_k);
    if ((gemma3 && n_layer == 62) || (gemma2 && n_layer == 46)) m->attn_scale = 1.0 / sqrt((double)(dim / n_head));
    m->rope_freq_scale = 1.0;
    m->rope_attn_factor = 1.0;
    if (f64_key_f64(m, "attn_logit_softcapping", 0.0, &m->attn_softcap, err) ||
        f64_key_f64(m, "final_logit_softcapping", 0.0, &m->final_softcap, err))
        goto fail;

    // rope scaling: none or linear here (type absent with a factor: linear, the reference's
    // default); phi3's longrope comes from its factor tensors below; anything else is refused
    {
        char key[128], *type = NULL;
        snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch);
        r = gguf_get_strdup(&m->g, key, &type, err);
        if (r < 0) goto fail;
        double factor;
        if (f64_key_f64(m, "rope.scaling.factor", 0.0, &factor, err)) { free(type); goto fail; }
        bool yarn = r > 0 && !strcmp(type, "yarn");
        bool known = r == 0 || !strcmp(type, "none") || !strcmp(type, "linear") || yarn ||
                     (phi3 && !strcmp(type, "longrope"));
        bool linear = (r == 0 || !strcmp(type, "linear")) && factor > 0.0 && factor != 1.0;
        if (!known) err_set(err, "%s: rope scaling '%s' not implemented by the float64 forward", path, type);
        free(type);
        if (!known) goto fail;
        if (linear) m->rope_freq_scale = 1.0 / factor;
        if (yarn) {
            uint32_t orig;
            double log_mul, attn, yarn_attn;
            if (f64_key_u32(m, "context_length", false, 4096, &orig, err) ||
                f64_key_u32(m, "rope.scaling.original_context_length", false, orig, &orig, err) ||
                f64_key_f64(m, "rope.scaling.yarn_ext_factor", 1.0, &m->yarn_ext, err) ||
                f64_key_f64(m, "rope.scaling.yarn_beta_fast", 32.0, &m->yarn_beta_fast, err) ||
                f64_key_f64(m, "rope.scaling.yarn_beta_slow", 1.0, &m->yarn_beta_slow, err) ||
                f64_key_f64(m, "rope.scaling.yarn_attn_factor", 1.0, &yarn_attn, err) ||
                f64_key_f64(m, "rope.scaling.attn_factor", 1.0, &attn, err) ||
                f64_key_f64(m, "rope.scaling.yarn_log_multiplier", 0.0, &log_mul, err))
                goto fail;
            if (!(factor > 0.0) || orig == 0 || log_mul != 0.0 || !(m->yarn_beta_fast > 0.0) ||
                !(m->yarn_beta_slow > 0.0)) {
                err_set(err, "%s: yarn with factor %g, original context %u, log multiplier %g, beta %g/%g: "
                        "not implemented by the float64 forward", path, factor, orig, log_mul, m->yarn_beta_fast,
                        m->yarn_beta_slow);
                goto fail;
            }
            m->yarn = true;
            m->yarn_factor = factor;
            m->yarn_orig_ctx = (int)orig;
            m->rope_attn_factor = attn * yarn_attn;
        }
    }

    // sliding window: Gemma's interleaved layers; refused elsewhere
    uint32_t window = 0, pattern = gemma3 ? 6 : 2;
    {
        if (f64_key_u32(m, "attention.sliding_window", false, gemma2 ? 4096 : 0, &window, err)) goto fail;
        if (window && !gemma) {
            err_set(err, "%s: %s.attention.sliding_window = %u not implemented by the float64 forward", path,
                    m->arch, window);
            goto fail;
        }
        if (gemma && f64_key_u32(m, "attention.sliding_window_pattern", false, pattern, &pattern, err)) goto fail;
        m->window = (int)window;
    }
    double base_swa = base;
    if (gemma3 && f64_key_f64(m, "rope.freq_base_swa", 10000.0, &base_swa, err)) goto fail;

    bool failed = false;
    const gguf_tensor *te = gguf_find_tensor(&m->g, "token_embd.weight");
    if (!te) {
        err_set(err, "%s: tensor token_embd.weight missing", path);
        goto fail;
    }
    if (te->ne[1] == 0 || te->ne[1] > (1u << 24)) {
        err_set(err, "%s: token_embd.weight: bad vocabulary size %llu", path, (unsigned long long)te->ne[1]);
        goto fail;
    }
    m->n_vocab = (int)te->ne[1];
    int64_t D = dim, V = m->n_vocab, F = ffn;
    int64_t QD = (int64_t)n_head * hd_k, KD = (int64_t)n_kv * hd_k, VD = (int64_t)n_kv * hd_v, OD = (int64_t)n_head * hd_v;
    m->tok_embd = f64_tensor(m, "token_embd.weight", D, V, true, &failed, err);
    m->out_norm = f64_tensor(m, "output_norm.weight", D, 1, true, &failed, err);
    m->output = f64_tensor(m, "output.weight", D, V, false, &failed, err);
    if (!m->output) m->output = m->tok_embd;
    m->rope_freqs = f64_tensor(m, "rope_freqs.weight", rope_dim / 2, 1, false, &failed, err);
    m->rope_long = f64_tensor(m, "rope_factors_long.weight", rope_dim / 2, 1, false, &failed, err);
    m->rope_short = f64_tensor(m, "rope_factors_short.weight", rope_dim / 2, 1, false, &failed, err);
    if (failed) goto fail;
    if ((m->rope_long || m->rope_short) && !(phi3 && m->rope_long && m->rope_short)) {
        err_set(err, "%s: longrope factors outside a phi3 file, or only one of long/short", path);
        goto fail;
    }
    if (m->rope_long) {
        uint32_t orig;
        if (f64_key_u32(m, "rope.scaling.original_context_length", true, 0, &orig, err) ||
            f64_key_f64(m, "rope.scaling.attn_factor", 1.0, &m->rope_attn_factor, err))
            goto fail;
        m->orig_ctx = (int)orig;
    }

    m->layers = xcalloc(n_layer, sizeof *m->layers);
    for (int il = 0; il < (int)n_layer; il++) {
        f64_layer *L = &m->layers[il];
        L->attn_norm = f64_blk(m, il, "attn_norm.weight", D, 1, true, &failed, err);
        L->wqkv = f64_blk(m, il, "attn_qkv.weight", D, QD + KD + VD, false, &failed, err);
        if (!L->wqkv) {
            L->wq = f64_blk(m, il, "attn_q.weight", D, QD, true, &failed, err);
            L->wk = f64_blk(m, il, "attn_k.weight", D, KD, true, &failed, err);
            L->wv = f64_blk(m, il, "attn_v.weight", D, VD, true, &failed, err);
        }
        L->bq = f64_blk(m, il, "attn_q.bias", QD, 1, false, &failed, err);
        L->bk = f64_blk(m, il, "attn_k.bias", KD, 1, false, &failed, err);
        L->bv = f64_blk(m, il, "attn_v.bias", VD, 1, false, &failed, err);
        L->q_norm = f64_blk(m, il, "attn_q_norm.weight", hd_k, 1, false, &failed, err);
        L->k_norm = f64_blk(m, il, "attn_k_norm.weight", hd_k, 1, false, &failed, err);
        L->wo = f64_blk(m, il, "attn_output.weight", OD, D, true, &failed, err);
        L->post_attn_norm = f64_blk(m, il, "post_attention_norm.weight", D, 1, false, &failed, err);
        L->ffn_norm = f64_blk(m, il, "ffn_norm.weight", D, 1, true, &failed, err);
        L->w_gate = f64_blk(m, il, "ffn_gate.weight", D, F, false, &failed, err);
        L->w_up = f64_blk(m, il, "ffn_up.weight", D, L->w_gate ? F : 2 * F, true, &failed, err);
        L->w_down = f64_blk(m, il, "ffn_down.weight", F, D, true, &failed, err);
        L->post_ffn_norm = f64_blk(m, il, "post_ffw_norm.weight", D, 1, false, &failed, err);
        if (failed) goto fail;
        bool bias_any = L->bq || L->bk || L->bv, bias_all = L->bq && L->bk && L->bv;
        if ((bias_any && !bias_all) || (L->wqkv && bias_any) || (!L->q_norm != !L->k_norm) ||
            (!L->post_attn_norm != !L->post_ffn_norm)) {
            err_set(err, "%s: layer %d: an incomplete set of biases, q/k norms or post-norms", path, il);
            goto fail;
        }
        if (gemma && !L->post_attn_norm) {
            err_set(err, "%s: layer %d: gemma without post_attention_norm/post_ffw_norm", path, il);
            goto fail;
        }
        if (gemma3 && !L->q_norm) {
            err_set(err, "%s: layer %d: gemma3 without attn_q_norm/attn_k_norm", path, il);
            goto fail;
        }
        // the reference's rule: layer il slides iff il % pattern < pattern - 1 (pattern 0: all)
        L->swa = window > 0 && (pattern == 0 || (uint32_t)il % pattern < pattern - 1);
        L->rope_base = L->swa ? base_swa : base;
        L->rope_plain = L->swa && gemma3;
    }
    return 0;
fail:
    forward64_close(m);
    return -1;
}

// ---- forward ----

// logits (n_vocab) of the last of tokens[0..n) at positions 0..n-1. n_ctx is the context the run
// is taken to have: it chooses a longrope file's factors (long when n_ctx > the original context).
static inline int forward64_run(const f64_model *m, const int32_t *tokens, int n, int n_ctx, double *logits,
                                errbuf *err) {
    if (n <= 0 || n > 1 << 16) return err_set(err, "%s: float64 forward of %d tokens", m->g.path, n);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->n_vocab)
            return err_set(err, "%s: token %d at %d outside the vocabulary (%d)", m->g.path, tokens[i], i, m->n_vocab);
    const int D = m->dim, F = m->ffn, NH = m->n_head, NKV = m->n_kv_head, HK = m->hd_k, HV = m->hd_v;
    const int QD = NH * HK, KD = NKV * HK, VD = NKV * HV, OD = NH * HV, QKV = QD + KD + VD;
    const size_t N = (size_t)n;
    double *x = xmalloc(N * D * sizeof(double));            // (n, dim) residual stream
    double *h = xmalloc(N * D * sizeof(double));            // (n, dim) normed input / block output
    double *qkv = xmalloc(N * QKV * sizeof(double));        // (n, q | k | v)
    double *att = xmalloc(N * OD * sizeof(double));         // (n, n_head*hd_v)
    double *gu = xmalloc(N * 2 * F * sizeof(double));       // (n, gate | up)
    double *act = xmalloc(N * F * sizeof(double));          // (n, ffn)
    double *sc = xmalloc(N * sizeof(double));               // scores of one query
    double *wd = xmalloc((size_t)QKV * sizeof(double));     // the q | k | v biases
    double *wn = xmalloc((size_t)D * sizeof(double));
    float *tmp = xmalloc((size_t)D * sizeof(float));
    double *factors = NULL;
    double mscale = 1.0;

    // per-frequency divisors: rope_freqs (llama3) or the longrope set chosen by the context
    const gguf_tensor *ft = m->rope_freqs;
    if (m->yarn) mscale = m->rope_attn_factor;
    if (m->rope_long) {
        ft = n_ctx > m->orig_ctx ? m->rope_long : m->rope_short;
        mscale = m->rope_attn_factor;
    }
    if (ft) {
        factors = xmalloc((size_t)(m->rope_dim / 2) * sizeof(double));
        f64_vec(ft, factors);
    }

    for (int i = 0; i < n; i++) {
        f64_row(m->tok_embd, tokens[i], tmp, x + (size_t)i * D);
        for (int c = 0; c < D; c++) x[(size_t)i * D + c] *= m->embd_scale;
    }

    for (int il = 0; il < m->n_layer; il++) {
        const f64_layer *L = &m->layers[il];
        // attention
        f64_vec(L->attn_norm, wn);
        memcpy(h, x, N * D * sizeof(double));
        for (int i = 0; i < n; i++) f64_rmsnorm(h + (size_t)i * D, D, wn, m->eps);
        if (L->wqkv) {
            f64_matmul(L->wqkv, 0, QKV, h, n, qkv, QKV);
        } else {
            f64_matmul(L->wq, 0, QD, h, n, qkv, QKV);
            f64_matmul(L->wk, 0, KD, h, n, qkv + QD, QKV);
            f64_matmul(L->wv, 0, VD, h, n, qkv + QD + KD, QKV);
        }
        if (L->bq) {
            f64_vec(L->bq, wd);
            f64_vec(L->bk, wd + QD);
            f64_vec(L->bv, wd + QD + KD);
            for (int i = 0; i < n; i++)
                for (int c = 0; c < QKV; c++) qkv[(size_t)i * QKV + c] += wd[c];
        }
        double *qn = NULL, *kn = NULL;
        if (L->q_norm) {
            qn = xmalloc((size_t)HK * sizeof(double));
            kn = xmalloc((size_t)HK * sizeof(double));
            f64_vec(L->q_norm, qn);
            f64_vec(L->k_norm, kn);
        }
        for (int i = 0; i < n; i++) {
            double *q = qkv + (size_t)i * QKV, *k = q + QD;
            for (int hh = 0; hh < NH; hh++) {
                if (qn) f64_rmsnorm(q + hh * HK, HK, qn, m->eps);
                f64_rope(m, L, q + hh * HK, i, factors, mscale);
            }
            for (int hh = 0; hh < NKV; hh++) {
                if (kn) f64_rmsnorm(k + hh * HK, HK, kn, m->eps);
                f64_rope(m, L, k + hh * HK, i, factors, mscale);
            }
        }
        free(qn);
        free(kn);
        // causal attention; a sliding-window layer's query at p sees keys k with p - k < window
        for (int i = 0; i < n; i++) {
            int j0 = L->swa && i - m->window + 1 > 0 ? i - m->window + 1 : 0;
            for (int hh = 0; hh < NH; hh++) {
                int kvh = hh / (NH / NKV);
                const double *q = qkv + (size_t)i * QKV + hh * HK;
                double mx = -INFINITY;
                for (int j = j0; j <= i; j++) {
                    const double *k = qkv + (size_t)j * QKV + QD + kvh * HK;
                    double s = 0;
                    for (int c = 0; c < HK; c++) s += q[c] * k[c];
                    s *= m->attn_scale;
                    if (m->attn_softcap > 0) s = m->attn_softcap * tanh(s / m->attn_softcap);
                    sc[j] = s;
                    if (s > mx) mx = s;
                }
                double sum = 0;
                for (int j = j0; j <= i; j++) sum += (sc[j] = exp(sc[j] - mx));
                double *o = att + (size_t)i * OD + hh * HV;
                for (int c = 0; c < HV; c++) o[c] = 0;
                for (int j = j0; j <= i; j++) {
                    const double *v = qkv + (size_t)j * QKV + QD + KD + kvh * HV;
                    double p = sc[j] / sum;
                    for (int c = 0; c < HV; c++) o[c] += p * v[c];
                }
            }
        }
        f64_matmul(L->wo, 0, D, att, n, h, D);
        if (L->post_attn_norm) {
            f64_vec(L->post_attn_norm, wn);
            for (int i = 0; i < n; i++) f64_rmsnorm(h + (size_t)i * D, D, wn, m->eps);
        }
        for (size_t e = 0; e < N * D; e++) x[e] += h[e];

        // feed-forward: act(gate) * up, then down
        f64_vec(L->ffn_norm, wn);
        memcpy(h, x, N * D * sizeof(double));
        for (int i = 0; i < n; i++) f64_rmsnorm(h + (size_t)i * D, D, wn, m->eps);
        if (L->w_gate) {
            f64_matmul(L->w_gate, 0, F, h, n, gu, 2 * F);
            f64_matmul(L->w_up, 0, F, h, n, gu + F, 2 * F);
        } else {
            f64_matmul(L->w_up, 0, 2 * F, h, n, gu, 2 * F);
        }
        for (int i = 0; i < n; i++)
            for (int c = 0; c < F; c++) {
                double g = gu[(size_t)i * 2 * F + c], u = gu[(size_t)i * 2 * F + F + c];
                act[(size_t)i * F + c] = (m->gelu ? f64_gelu(g) : f64_silu(g)) * u;
            }
        f64_matmul(L->w_down, 0, D, act, n, h, D);
        if (L->post_ffn_norm) {
            f64_vec(L->post_ffn_norm, wn);
            for (int i = 0; i < n; i++) f64_rmsnorm(h + (size_t)i * D, D, wn, m->eps);
        }
        for (size_t e = 0; e < N * D; e++) x[e] += h[e];
    }

    // final norm and output of the last position only
    double *last = x + (N - 1) * D;
    f64_vec(m->out_norm, wn);
    f64_rmsnorm(last, D, wn, m->eps);
    f64_matmul(m->output, 0, m->n_vocab, last, 1, logits, m->n_vocab);
    if (m->final_softcap > 0)
        for (int v = 0; v < m->n_vocab; v++) logits[v] = m->final_softcap * tanh(logits[v] / m->final_softcap);

    free(factors);
    free(tmp);
    free(wn);
    free(wd);
    free(sc);
    free(act);
    free(gu);
    free(att);
    free(qkv);
    free(h);
    free(x);
    return 0;
}

// One call for a caller that runs a file once: opens GGUF_PATH, runs tokens[0..n) in a context
// of n_ctx, writes the last position's logits to logits_out (n_vocab of them: the file's
// vocabulary must have exactly that many rows), closes. 0, or -1 with err set.
static inline int forward64_last_logits(const char *gguf_path, const int32_t *tokens, int n, int n_ctx,
                                        double *logits_out, int n_vocab, errbuf *err) {
    f64_model m;
    if (forward64_open(&m, gguf_path, err)) return -1;
    int rc;
    if (m.n_vocab != n_vocab)
        rc = err_set(err, "%s: the file's vocabulary has %d rows, the caller expects %d", gguf_path, m.n_vocab, n_vocab);
    else
        rc = forward64_run(&m, tokens, n, n_ctx, logits_out, err);
    forward64_close(&m);
    return rc;
}

#endif
