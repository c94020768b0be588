// Loading a model from GGUF: the architecture's hyperparameters, the tensors bound by name and
// shape, the tokenizer; the weights copied out of the file's mapping; and freeing it all.
#include "engine/model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const arch_names[ARCH_COUNT] = {
    [ARCH_LLAMA] = "llama", [ARCH_QWEN2] = "qwen2", [ARCH_QWEN3] = "qwen3", [ARCH_PHI3] = "phi3",
    [ARCH_GEMMA3] = "gemma3", [ARCH_GEMMA2] = "gemma2",
};

const char *model_arch_name(enum model_arch a) { return (unsigned)a < ARCH_COUNT ? arch_names[a] : "?"; }

int model_arch_from_name(const char *name, enum model_arch *out) {
    for (int a = 0; a < ARCH_COUNT && name; a++)
        if (!strcmp(name, arch_names[a])) {
            *out = (enum model_arch)a;
            return 0;
        }
    return -1;
}

// Reads <arch>.<suffix> as a positive int; required keys must be present.
static int hp_int(const gguf_file *g, const char *arch, const char *suffix, bool required,
                  int def, int lo, int hi, int *out, errbuf *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v;
    int r = gguf_get_u32(g, key, &v, err);
    if (r < 0) return -1;
    if (r == 0) {
        if (required) return err_set(err, "%s: missing required key %s", g->path, key);
        *out = def;
        return 0;
    }
    if ((int64_t)v < lo || (int64_t)v > hi)
        return err_set(err, "%s: %s = %u is out of range [%d, %d]", g->path, key, v, lo, hi);
    *out = (int)v;
    return 0;
}

static int hp_float(const gguf_file *g, const char *arch, const char *suffix, float def, float *out,
                    errbuf *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int r = gguf_get_f32(g, key, out, err);
    if (r < 0) return -1;
    if (r == 0) *out = def;
    if (!(*out > 0.0f) || *out > 1e12f)
        return err_set(err, "%s: %s = %g is out of range", g->path, key, (double)*out);
    return 0;
}

// Reads <arch>.<suffix> as a float in [lo, hi] (def when absent).
static int hp_float_in(const gguf_file *g, const char *arch, const char *suffix, float def, float lo, float hi,
                       float *out, errbuf *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int r = gguf_get_f32(g, key, out, err);
    if (r < 0) return -1;
    if (r == 0) *out = def;
    if (!(*out >= lo && *out <= hi))
        return err_set(err, "%s: %s = %g is out of range [%g, %g]", g->path, key, (double)*out, (double)lo, (double)hi);
    return 0;
}

// The loader has read tensor gt (the rest are refused: model_load).
static void mark_used(model *m, const gguf_tensor *gt) { m->tensor_used[gt - m->file.tensors] = true; }

// A per-pair factor tensor of the rope (rope_dim/2 positive finite numbers) as floats the model
// owns; *out stays NULL when the file has no tensor of that name.
static int load_rope_factors(model *m, const char *name, float **out, errbuf *err) {
    const gguf_tensor *gt = gguf_find_tensor(&m->file, name);
    *out = NULL;
    if (!gt) return 0;
    mark_used(m, gt);
    const int half = m->hp.rope_dim / 2;
    const wtype_info *ti = wtype_get(gt->type);
    if (gt->n_dims != 1 || gt->ne[0] != (uint64_t)half || !ti || !ti->to_f32 || ti->block_size != 1)
        return err_set(err, "%s: tensor %s: %u-D of %" PRIu64 " %s values, expected %d floats (rope dims %d / 2)",
                       m->file.path, name, gt->n_dims, gt->ne[0], wtype_name(gt->type), half, m->hp.rope_dim);
    float *f = xmalloc((size_t)half * sizeof(float));
    ti->to_f32(gt->data, f, half);
    for (int i = 0; i < half; i++)
        if (!(f[i] > 0.0f) || f[i] > 1e9f) {
            err_set(err, "%s: tensor %s: factor %d is %g (factors are positive)", m->file.path, name, i, (double)f[i]);
            free(f);
            return -1;
        }
    *out = f;
    return 0;
}

// What the file asks of the rope beyond its base: rope.scaling.type (none, linear, yarn, and
// longrope with its two factor tensors) and llama3's per-pair factors (rope_freqs.weight, with
// any type). Anything else that would change the angles is refused, never ignored.
static int load_rope_scaling(model *m, errbuf *err) {
    const gguf_file *g = &m->file;
    model_hparams *hp = &m->hp;
    const char *a = hp->arch_name;
    rope_scaling *s = &hp->rope_scaling;
    memset(s, 0, sizeof *s);
    s->kind = ROPE_NONE;
    s->factor = 1.0f;
    s->attn_factor = 1.0f;
    char key[128], *type = NULL;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    if (gguf_get_strdup(g, key, &type, err) < 0) return -1;
    bool longrope_tensors = gguf_find_tensor(g, "rope_factors_long.weight") || gguf_find_tensor(g, "rope_factors_short.weight");
    const bool type_given = type != NULL;
    if (type && !strcmp(type, "linear")) s->kind = ROPE_LINEAR;
    else if (type && !strcmp(type, "yarn")) s->kind = ROPE_YARN;
    else if ((type && !strcmp(type, "longrope")) || (!type && longrope_tensors)) s->kind = ROPE_LONGROPE;
    else if (type && strcmp(type, "none") != 0) {
        err_set(err, "%s: %s '%s' is not supported (supported: none, linear, yarn, longrope)", g->path, key, type);
        free(type);
        return -1;
    }
    free(type);
    snprintf(key, sizeof key, "%s.rope.scaling.yarn_log_multiplier", a);
    float f;
    if (gguf_get_f32(g, key, &f, err) == 1 && f != 0.0f)
        return err_set(err, "%s: %s = %g is not supported (YaRN's attention scale of that form)", g->path, key, (double)f);
    if (s->kind == ROPE_LINEAR || s->kind == ROPE_YARN) {
        if (hp_float_in(g, a, "rope.scaling.factor", 1.0f, 1e-3f, 1e6f, &s->factor, err)) return -1;
    } else {
        // a factor with no type (or in the older spelling) is a linear one, as the reference reads it
        for (int k = 0; k < 2 && s->kind != ROPE_LINEAR; k++) {
            if (k == 1 && type_given) break;
            snprintf(key, sizeof key, k ? "%s.rope.scaling.factor" : "%s.rope.scale_linear", a);
            if (gguf_get_f32(g, key, &f, err) != 1 || f == 1.0f) continue;
            if (!(f >= 1e-3f && f <= 1e6f)) return err_set(err, "%s: %s = %g is out of range", g->path, key, (double)f);
            if (s->kind == ROPE_LONGROPE) return err_set(err, "%s: %s with longrope is not supported", g->path, key);
            s->kind = ROPE_LINEAR;
            s->factor = f;
        }
    }
    if (hp_int(g, a, "rope.scaling.original_context_length", false, hp->n_ctx_train, 1, 1 << 24, &s->n_ctx_orig, err) ||
        hp_float_in(g, a, "rope.scaling.attn_factor", 1.0f, 1e-3f, 1e3f, &s->attn_factor, err))
        return -1;
    if (s->kind == ROPE_YARN) {
        float yarn_attn;
        if (hp_float_in(g, a, "rope.scaling.yarn_ext_factor", 1.0f, 0.0f, 1e3f, &s->ext_factor, err) ||
            hp_float_in(g, a, "rope.scaling.yarn_beta_fast", 32.0f, 1e-3f, 1e6f, &s->beta_fast, err) ||
            hp_float_in(g, a, "rope.scaling.yarn_beta_slow", 1.0f, 1e-3f, 1e6f, &s->beta_slow, err) ||
            hp_float_in(g, a, "rope.scaling.yarn_attn_factor", 1.0f, 1e-3f, 1e3f, &yarn_attn, err))
            return -1;
        s->attn_factor *= yarn_attn;
    }
    if (load_rope_factors(m, "rope_freqs.weight", &m->rope_factors[0], err)) return -1;
    if (m->rope_factors[0]) {
        if (s->kind == ROPE_LONGROPE)
            return err_set(err, "%s: rope_freqs.weight beside longrope's factors is not supported", g->path);
        s->factors = m->rope_factors[0];
    }
    if (s->kind == ROPE_LONGROPE) {
        if (load_rope_factors(m, "rope_factors_long.weight", &m->rope_factors[0], err) ||
            load_rope_factors(m, "rope_factors_short.weight", &m->rope_factors[1], err))
            return -1;
        if (!m->rope_factors[0] || !m->rope_factors[1])
            return err_set(err, "%s: longrope needs both rope_factors_long.weight and rope_factors_short.weight", g->path);
        s->long_factors = m->rope_factors[0];
        s->short_factors = m->rope_factors[1];
    }
    return 0;
}

kv_windows model_kv_windows(const model *m, int batch) {
    kv_windows w = { m->layer_swa, m->layer_swa ? m->hp.swa_window : 0, batch };
    return w;
}

void model_rope_freqs(const model *m, int n_ctx, bool swa, rope_freqs *out) {
    if (swa && m->hp.rope_swa_own) rope_freqs_plain(out, m->hp.rope_dim, m->hp.rope_base_swa);
    else rope_freqs_make(out, m->hp.rope_dim, m->hp.rope_base, &m->hp.rope_scaling, n_ctx);
}

// Gemma 3 and Gemma 2: the embedding scaled by sqrt(dim), GELU(tanh) in the FFN, and interleaved
// sliding-window layers: layer l is global when (l + 1) is a multiple of the pattern, a window
// layer (the last `sliding_window` slots) otherwise.
//   gemma3: pattern `sliding_window_pattern` (6), window layers turn by freq_base_swa, unscaled;
//           soft caps are not part of it (a file that has them is refused);
//   gemma2: every other layer (pattern 2), window 4096 unless the file says, the model's rope on
//           every layer, and the soft caps `attn_logit_softcapping` and `final_logit_softcapping`
//           (0 or absent: none).
// The 27B models (gemma3: 62 layers, gemma2: 46) scale their scores by 1/sqrt(dim / n_head)
// instead of the head size, as their training did.
static int load_gemma(model *m, errbuf *err) {
    const gguf_file *g = &m->file;
    model_hparams *hp = &m->hp;
    const char *a = hp->arch_name;
    const bool g2 = hp->arch == ARCH_GEMMA2;
    hp->embed_scale = true;
    hp->glu_act = GLU_GELU_TANH;
    if (hp->n_layer == (g2 ? 46 : 62)) hp->attn_scale = 1.0f / sqrtf((float)hp->dim / (float)hp->n_head);
    if (hp_int(g, a, "attention.sliding_window", false, g2 ? 4096 : 0, 0, 1 << 24, &hp->swa_window, err)) return -1;
    char key[128];
    if (g2) {
        hp->swa_pattern = 2;
        hp->rope_swa_own = false;
        if (hp_float(g, a, "attn_logit_softcapping", 0.0f, &hp->attn_softcap, err) ||
            hp_float(g, a, "final_logit_softcapping", 0.0f, &hp->final_softcap, err))
            return -1;
        if (!(hp->attn_softcap >= 0.0f) || !(hp->final_softcap >= 0.0f) || isinf(hp->attn_softcap) ||
            isinf(hp->final_softcap))
            return err_set(err, "%s: soft caps %g (attention) and %g (logits) must be finite and not negative", g->path,
                           (double)hp->attn_softcap, (double)hp->final_softcap);
    } else {
        hp->rope_swa_own = true;
        if (hp_int(g, a, "attention.sliding_window_pattern", false, 6, 1, 1 << 16, &hp->swa_pattern, err) ||
            hp_float(g, a, "rope.freq_base_swa", 10000.0f, &hp->rope_base_swa, err))
            return -1;
        snprintf(key, sizeof key, "%s.attn_logit_softcapping", a);
        if (gguf_find_kv(g, key)) return err_set(err, "%s: %s is not supported (attention soft-capping)", g->path, key);
        snprintf(key, sizeof key, "%s.final_logit_softcapping", a);
        if (gguf_find_kv(g, key)) return err_set(err, "%s: %s is not supported (logit soft-capping)", g->path, key);
    }
    if (hp->swa_window > 0) {
        m->layer_swa = xcalloc((size_t)hp->n_layer, 1);
        for (int l = 0; l < hp->n_layer; l++) m->layer_swa[l] = (l + 1) % hp->swa_pattern != 0;
    }
    return 0;
}

static int load_hparams(model *m, errbuf *err) {
    const gguf_file *g = &m->file;
    model_hparams *hp = &m->hp;
    char *arch = NULL;
    int r = gguf_get_strdup(g, "general.architecture", &arch, err);
    if (r < 0) return -1;
    if (r == 0) return err_set(err, "%s: missing general.architecture", g->path);
    snprintf(hp->arch_name, sizeof hp->arch_name, "%s", arch);
    if (model_arch_from_name(arch, &hp->arch)) {
        err_set(err, "%s: unsupported architecture '%s' (supported: " MODEL_ARCH_NAMES ")", g->path, arch);
        free(arch);
        return -1;
    }
    free(arch);
    const char *a = hp->arch_name;
    if (hp_int(g, a, "embedding_length", true, 0, 1, 1 << 16, &hp->dim, err) ||
        hp_int(g, a, "block_count", true, 0, 1, 1024, &hp->n_layer, err) ||
        hp_int(g, a, "feed_forward_length", true, 0, 1, 1 << 18, &hp->ffn_dim, err) ||
        hp_int(g, a, "attention.head_count", true, 0, 1, 1024, &hp->n_head, err) ||
        hp_int(g, a, "context_length", false, 4096, 1, 1 << 24, &hp->n_ctx_train, err))
        return -1;
    if (hp_int(g, a, "attention.head_count_kv", false, hp->n_head, 1, hp->n_head, &hp->n_kv_head, err))
        return -1;
    if (hp->n_head % hp->n_kv_head)
        return err_set(err, "%s: head count %d is not a multiple of kv head count %d", g->path,
                       hp->n_head, hp->n_kv_head);
    int value_length;
    if (hp_int(g, a, "attention.key_length", false, hp->dim / hp->n_head, 1, 4096, &hp->head_dim, err) ||
        hp_int(g, a, "attention.value_length", false, hp->head_dim, 1, 4096, &value_length, err))
        return -1;
    if (value_length != hp->head_dim)   // the attention and its cache keep one head size for k and v
        return err_set(err, "%s: %s.attention.value_length %d differs from the key length %d: not supported", g->path, a,
                       value_length, hp->head_dim);
    if (hp->head_dim % 2) return err_set(err, "%s: head size %d is odd", g->path, hp->head_dim);
    if (hp_int(g, a, "rope.dimension_count", false, hp->head_dim, 2, hp->head_dim, &hp->rope_dim, err))
        return -1;
    if (hp->rope_dim % 2 || hp->rope_dim > 1024)
        return err_set(err, "%s: rope dimension count %d is odd or too large", g->path, hp->rope_dim);
    if (hp_float(g, a, "rope.freq_base", 10000.0f, &hp->rope_base, err) ||
        hp_float(g, a, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps, err))
        return -1;
    hp->rope_neox = hp->arch == ARCH_QWEN2 || hp->arch == ARCH_QWEN3 || hp->arch == ARCH_PHI3 || hp->arch == ARCH_GEMMA3 ||
                    hp->arch == ARCH_GEMMA2;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->glu_act = GLU_SILU;
    if ((hp->arch == ARCH_GEMMA3 || hp->arch == ARCH_GEMMA2) && load_gemma(m, err)) return -1;
    if (load_rope_scaling(m, err)) return -1;
    return 0;
}

// Binds a tensor by name, checking its shape (ne0 = in, ne1 = out; ne1 = 1 for vectors).
static int bind(model *m, tensor *t, const char *name, int64_t ne0, int64_t ne1, bool required,
                bool matrix, errbuf *err) {
    const gguf_tensor *gt = gguf_find_tensor(&m->file, name);
    memset(t, 0, sizeof *t);
    if (!gt) return required ? err_set(err, "%s: missing tensor %s", m->file.path, name) : 0;
    mark_used(m, gt);
    int64_t got1 = gt->n_dims >= 2 ? (int64_t)gt->ne[1] : 1;
    if ((int64_t)gt->ne[0] != ne0 || got1 != ne1 || gt->ne[2] != 1 || gt->ne[3] != 1)
        return err_set(err, "%s: tensor %s has shape [%" PRIu64 ", %" PRIu64 "], expected [%" PRId64
                       ", %" PRId64 "]", m->file.path, name, gt->ne[0], gt->ne[1], ne0, ne1);
    const wtype_info *ti = wtype_get(gt->type);
    if (!ti || !ti->to_f32)
        return err_set(err, "%s: tensor %s has type %s, which cabin does not support yet "
                       "(supported: %s)", m->file.path, name, wtype_name(gt->type),
                       wtype_supported_list());
    t->name = gt->name;
    t->type = gt->type;
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->data = gt->data;
    t->row_bytes = wtype_row_bytes(gt->type, (uint64_t)ne0);
    t->n_bytes = (size_t)gt->n_bytes;
    t->src_data = gt->data;
    t->src_type = gt->type;
    t->src_row_bytes = t->row_bytes;
    if (!matrix && t->type != WT_F32) {
        // Norm weights and biases are used as float32 vectors.
        float *f = xmalloc((size_t)ne0 * ne1 * sizeof(float));
        ti->to_f32(gt->data, f, ne0 * ne1);
        t->owned = f;
        t->data = f;
        t->type = WT_F32;
        t->row_bytes = (size_t)ne0 * 4;
        t->n_bytes = (size_t)(ne0 * ne1) * 4;
    }
    m->weight_bytes += gt->n_bytes;
    return 0;
}

// Binds rows [row0, row0 + rows) of the fused matrix `name` (total_rows rows of ne0) as a tensor
// of its own: it points into the fused tensor's bytes and carries its name; the weights are
// counted once, by the first part.
static int bind_rows(model *m, tensor *t, const char *name, int64_t ne0, int64_t total_rows, int64_t row0,
                     int64_t rows, errbuf *err) {
    uint64_t counted = m->weight_bytes;
    if (bind(m, t, name, ne0, total_rows, true, true, err)) return -1;
    if (row0 > 0) m->weight_bytes = counted;
    t->data = t->src_data = (const uint8_t *)t->data + (size_t)row0 * t->row_bytes;
    t->ne1 = rows;
    t->n_bytes = (size_t)rows * t->row_bytes;
    return 0;
}

// phi3: q, k, v from attn_qkv and gate, up from ffn_up.
static int bind_phi3_fused(model *m, layer_weights *L, int l, int64_t q_dim, int64_t kv_dim, errbuf *err) {
    const int64_t dim = m->hp.dim, ffn = m->hp.ffn_dim;
    char qkv[96], up[96];
    snprintf(qkv, sizeof qkv, "blk.%d.attn_qkv.weight", l);
    snprintf(up, sizeof up, "blk.%d.ffn_up.weight", l);
    if (bind_rows(m, &L->wq, qkv, dim, q_dim + 2 * kv_dim, 0, q_dim, err) ||
        bind_rows(m, &L->wk, qkv, dim, q_dim + 2 * kv_dim, q_dim, kv_dim, err) ||
        bind_rows(m, &L->wv, qkv, dim, q_dim + 2 * kv_dim, q_dim + kv_dim, kv_dim, err) ||
        bind_rows(m, &L->w_gate, up, dim, 2 * ffn, 0, ffn, err) ||
        bind_rows(m, &L->w_up, up, dim, 2 * ffn, ffn, ffn, err))
        return -1;
    return 0;
}

static int load_tensors(model *m, errbuf *err) {
    const model_hparams *hp = &m->hp;
    int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = (int64_t)hp->n_kv_head * hp->head_dim;
    if (bind(m, &m->tok_embd, "token_embd.weight", hp->dim, hp->n_vocab, true, true, err) ||
        bind(m, &m->output_norm, "output_norm.weight", hp->dim, 1, true, false, err) ||
        bind(m, &m->output, "output.weight", hp->dim, hp->n_vocab, false, true, err))
        return -1;
    if (!m->output.data) {
        m->hp.tied_output = true;
        m->output = m->tok_embd;
        m->output.owned = NULL;
    }
    m->layers = try_calloc((size_t)hp->n_layer, sizeof(layer_weights));
    if (!m->layers) return err_set(err, "%s: out of memory for %d layers", m->file.path, hp->n_layer);
    for (int l = 0; l < hp->n_layer; l++) {
        layer_weights *L = &m->layers[l];
        char n[96];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)
        bool bias = hp->arch == ARCH_QWEN2, fused = hp->arch == ARCH_PHI3;
        bool qk_norm = hp->arch == ARCH_QWEN3 || hp->arch == ARCH_GEMMA3;
        bool post_norms = hp->arch == ARCH_GEMMA3 || hp->arch == ARCH_GEMMA2;
        if (fused ? bind_phi3_fused(m, L, l, q_dim, kv_dim, err)
                  : bind(m, &L->wq, NAME("attn_q.weight"), hp->dim, q_dim, true, true, err) ||
                        bind(m, &L->wk, NAME("attn_k.weight"), hp->dim, kv_dim, true, true, err) ||
                        bind(m, &L->wv, NAME("attn_v.weight"), hp->dim, kv_dim, true, true, err) ||
                        bind(m, &L->w_gate, NAME("ffn_gate.weight"), hp->dim, hp->ffn_dim, true, true, err) ||
                        bind(m, &L->w_up, NAME("ffn_up.weight"), hp->dim, hp->ffn_dim, true, true, err))
            return -1;
        if (bind(m, &L->attn_norm, NAME("attn_norm.weight"), hp->dim, 1, true, false, err) ||
            bind(m, &L->wo, NAME("attn_output.weight"), q_dim, hp->dim, true, true, err) ||
            bind(m, &L->bq, NAME("attn_q.bias"), q_dim, 1, bias, false, err) ||
            bind(m, &L->bk, NAME("attn_k.bias"), kv_dim, 1, bias, false, err) ||
            bind(m, &L->bv, NAME("attn_v.bias"), kv_dim, 1, bias, false, err) ||
            bind(m, &L->q_norm, NAME("attn_q_norm.weight"), hp->head_dim, 1, qk_norm, false, err) ||
            bind(m, &L->k_norm, NAME("attn_k_norm.weight"), hp->head_dim, 1, qk_norm, false, err) ||
            bind(m, &L->ffn_norm, NAME("ffn_norm.weight"), hp->dim, 1, true, false, err) ||
            bind(m, &L->post_attn_norm, NAME("post_attention_norm.weight"), hp->dim, 1, post_norms, false, err) ||
            bind(m, &L->post_ffn_norm, NAME("post_ffw_norm.weight"), hp->dim, 1, post_norms, false, err) ||
            bind(m, &L->w_down, NAME("ffn_down.weight"), hp->ffn_dim, hp->dim, true, true, err))
            return -1;
#undef NAME
    }
    return 0;
}

// Everything after the file is open: hyperparameters, tokenizer, tensors, names. path names
// the model when the file has no general.name. On failure m is freed.
static int model_load_opened(model **out, model *m, const char *path, bool refuse_unused, errbuf *err) {
    m->tensor_used = try_calloc(m->file.n_tensors ? (size_t)m->file.n_tensors : 1, sizeof(bool));
    if (!m->tensor_used) { err_set(err, "%s: out of memory for %" PRIu64 " tensors", path, m->file.n_tensors); goto fail; }
    if (load_hparams(m, err)) goto fail;
    m->tok = tokenizer_load(&m->file, err);
    if (!m->tok) goto fail;
    m->hp.n_vocab = tokenizer_n_vocab(m->tok);
    if (load_tensors(m, err)) goto fail;
    const char *first = NULL;
    for (uint64_t i = 0; i < m->file.n_tensors; i++)
        if (!m->tensor_used[i] && !m->n_unused++) first = m->file.tensors[i].name;
    if (m->n_unused && refuse_unused) {
        err_set(err, "%s: tensor %s%s is not part of cabin's %s forward pass: refused (it may change the numbers; "
                "cabin info lists them)", m->file.path, first, m->n_unused > 1 ? " (and others)" : "", m->hp.arch_name);
        goto fail;
    }
    if (gguf_get_strdup(&m->file, "tokenizer.chat_template", &m->chat_template, err) < 0) goto fail;
    if (gguf_get_strdup(&m->file, "general.name", &m->name, err) <= 0) {
        const char *base = strrchr(path, '/');
        m->name = xstrdup(base ? base + 1 : path);
    }
    *out = m;
    return 0;
fail:
    model_free(m);
    return -1;
}

static int load_path(model **out, const char *path, bool refuse_unused, errbuf *err) {
    *out = NULL;
    model *m = xcalloc(1, sizeof *m);
    if (gguf_open(&m->file, path, err)) { free(m); return -1; }
    return model_load_opened(out, m, path, refuse_unused, err);
}

int model_load(model **out, const char *path, errbuf *err) { return load_path(out, path, true, err); }
int model_load_any(model **out, const char *path, errbuf *err) { return load_path(out, path, false, err); }

int model_unused_tensors(const model *m, const char **names, int max) {
    int n = 0;
    for (uint64_t i = 0; i < m->file.n_tensors; i++)
        if (!m->tensor_used[i]) {
            if (n < max) names[n] = m->file.tensors[i].name;
            n++;
        }
    return n;
}

int model_load_memory(model **out, const void *data, uint64_t size, const char *name, errbuf *err) {
    *out = NULL;
    model *m = xcalloc(1, sizeof *m);
    if (gguf_open_memory(&m->file, data, size, name, err)) { free(m); return -1; }
    return model_load_opened(out, m, name, true, err);
}

static void free_owned(tensor *t, void *ud) {
    (void)ud;
    free(t->owned);
    t->owned = NULL;
}

// One weight to copy out of the file's mapping.
typedef struct copy_item { tensor *t; const uint8_t *src; uint8_t *dst; size_t n; } copy_item;
typedef struct copy_list { copy_item *items; int n, cap; uint64_t total; backend *b; const model *m; } copy_list;
typedef struct copy_job { const copy_list *l; int ith, nth; bool drop; } copy_job;

#define COPY_ALIGN 64   // bytes: each tensor starts on a cache line
#define COPY_HEADROOM ((uint64_t)512 << 20)   // bytes left to everything else after the copy

static void collect_copy(tensor *t, void *ud) {
    copy_list *l = ud;
    if (!t->data || t->data != t->src_data) return;   // converted (or absent): not read from the file
    if (l->b && l->b->weight_keeps_own && l->b->weight_keeps_own(l->b, t)) return;
    if (model_tensor_rows_only(l->m, t)) return;   // a row per token: the mapping serves
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->items = xrealloc(l->items, (size_t)l->cap * sizeof *l->items);
    }
    l->items[l->n++] = (copy_item){ t, t->src_data, NULL, t->n_bytes };
    l->total += (t->n_bytes + COPY_ALIGN - 1) / COPY_ALIGN * COPY_ALIGN;
}

// Thread ith of nth copies the ith slice of every weight: the kernel's zeroing of the new pages
// and the page-cache reads, most of the time here, are shared out evenly.
static void *copy_worker(void *arg) {
    const copy_job *j = arg;
    for (int i = 0; i < j->l->n; i++) {
        const copy_item *it = &j->l->items[i];
        size_t per = (it->n + (size_t)j->nth - 1) / (size_t)j->nth;
        size_t a = per * (size_t)j->ith, b = a + per < it->n ? a + per : it->n;
        if (a >= b) continue;
        memcpy(it->dst + a, it->src + a, b - a);
        if (j->drop) mem_drop_pages(it->src + a, b - a);
    }
    return NULL;
}

uint64_t model_copy_weights(model *m, int n_threads, backend *b) {
    if (m->weights_copy) return 0;
    copy_list l = { .b = b, .m = m };
    model_for_each_tensor(m, collect_copy, &l);
    // Not when the copy would not fit beside everything else (the mapping pages from the file on
    // demand; a copy larger than the free memory would swap or be killed): keep the mapping.
    uint64_t avail = mem_available_bytes();
    uint8_t *dst = l.n && (avail == 0 || l.total + COPY_HEADROOM < avail) ? malloc_large(l.total) : NULL;
    if (!dst) { free(l.items); return 0; }
    uint64_t off = 0;
    for (int i = 0; i < l.n; i++) {
        l.items[i].dst = dst + off;
        off += (l.items[i].n + COPY_ALIGN - 1) / COPY_ALIGN * COPY_ALIGN;
    }
    n_threads = work_threads(n_threads);
    copy_job jobs[MAX_WORK_THREADS];
    for (int i = 0; i < n_threads; i++) jobs[i] = (copy_job){ &l, i, n_threads, m->file.mapped };
    run_on_threads(copy_worker, jobs, sizeof jobs[0], n_threads);
    for (int i = 0; i < l.n; i++) l.items[i].t->data = l.items[i].t->src_data = l.items[i].dst;
    if (m->hp.tied_output) m->output = m->tok_embd;
    m->weights_copy = dst;
    m->weights_copy_bytes = l.total;
    free(l.items);
    return l.total;
}

void model_free(model *m) {
    if (!m) return;
    if (m->layers) model_for_each_tensor(m, free_owned, NULL);
    free(m->weights_copy);
    free(m->layers);
    free(m->rope_factors[0]);
    free(m->rope_factors[1]);
    free(m->tensor_used);
    free(m->layer_swa);
    tokenizer_free(m->tok);
    free(m->chat_template);
    free(m->name);
    gguf_close(&m->file);
    free(m);
}

void model_for_each_tensor(model *m, void (*fn)(tensor *t, void *ud), void *ud) {
    fn(&m->tok_embd, ud);
    fn(&m->output_norm, ud);
    if (!m->hp.tied_output) fn(&m->output, ud);
    for (int l = 0; l < m->hp.n_layer; l++) {
        layer_weights *L = &m->layers[l];
        tensor *ts[] = { &L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->bq, &L->bk, &L->bv,
                         &L->q_norm, &L->k_norm, &L->ffn_norm, &L->w_gate, &L->w_up, &L->w_down,
                         &L->post_attn_norm, &L->post_ffn_norm };
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if (ts[i]->src_data) fn(ts[i], ud);   // present (data is NULL while a backend holds the only copy)
    }
}

typedef struct file_reads { const uint8_t *lo, *hi; bool any; } file_reads;

static void note_file_read(tensor *t, void *ud) {
    file_reads *r = ud;
    const uint8_t *d = t->data, *src = t->src_data;   // src: what a plan's conversion reads
    if ((d && d >= r->lo && d < r->hi) || (src && src >= r->lo && src < r->hi)) r->any = true;
}

int model_check_file(const model *m, errbuf *err) {
    if (!m->file.mapped || m->file.fd < 0) return 0;
    file_reads r = { m->file.base, m->file.base + m->file.size, false };
    model_for_each_tensor((model *)m, note_file_read, &r);
    return r.any ? gguf_check_size(&m->file, err) : 0;
}
