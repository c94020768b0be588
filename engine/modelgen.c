#include "modelgen.h"
#include "gguf.h"
#include "model.h"
#include "rope.h"
#include "wtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

modelgen_opts modelgen_defaults(void) {
    return (modelgen_opts){ .arch = "llama", .dim = 64, .n_layer = 2, .n_head = 4, .n_kv_head = 2,
                            .ffn_dim = 192, .n_vocab = 512, .n_ctx = 2048, .rope_base = 10000.0f,
                            .rms_eps = 1e-5f, .tied = false, .type = WT_F32, .embd_type = WT_F32,
                            .vocab_from = NULL, .seed = 1 };
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}

// Roughly normal values with standard deviation `scale` (sum of 4 uniforms, centred).
static void fill_random(float *x, int64_t n, float scale, uint64_t *rng) {
    const float k = scale * 1.7320508f / 2.0f;   // uniform(-1,1) has sd 1/sqrt(3); 4 of them: 2/sqrt(3)
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(rng);
        float s = 0.0f;
        for (int j = 0; j < 4; j++) s += (float)((r >> (16 * j)) & 0xffff) * (2.0f / 65535.0f) - 1.0f;
        x[i] = s * k;
    }
}

typedef struct gen_state {
    gguf_writer *w;
    void **bufs;
    int n_bufs, cap_bufs;
    uint64_t rng;
} gen_state;

// Adds tensor name of (ne0, ne1) weights of type from buf, which the writer reads when the file is
// written: kept until then (freed with the rest of g's buffers).
static int add_kept(gen_state *g, const char *name, uint32_t type, int64_t ne0, int64_t ne1, void *buf, errbuf *err) {
    if (g->n_bufs == g->cap_bufs) {
        g->cap_bufs = g->cap_bufs ? g->cap_bufs * 2 : 64;
        g->bufs = xrealloc(g->bufs, (size_t)g->cap_bufs * sizeof(void *));
    }
    g->bufs[g->n_bufs++] = buf;
    uint64_t ne[2] = { (uint64_t)ne0, (uint64_t)ne1 };
    return gguf_add_tensor(g->w, name, type, ne1 > 1 ? 2 : 1, ne, buf, err);
}

static int add_tensor(gen_state *g, const char *name, uint32_t type, int64_t ne0, int64_t ne1,
                      float scale, float offset, errbuf *err) {
    const wtype_info *ti = wtype_get(type);
    if (!ti || !ti->from_f32)
        return err_set(err, "make-model: cannot write type %s", wtype_name(type));
    if (ne0 % ti->block_size)
        return err_set(err, "make-model: %s: row length %lld is not a multiple of %u (%s)", name,
                       (long long)ne0, ti->block_size, ti->name);
    size_t row_bytes = (size_t)(ne0 / ti->block_size) * ti->block_bytes;
    uint8_t *buf = xmalloc(row_bytes * (size_t)ne1);
    float *row = xmalloc((size_t)ne0 * sizeof(float));
    for (int64_t r = 0; r < ne1; r++) {
        fill_random(row, ne0, scale, &g->rng);
        for (int64_t i = 0; i < ne0; i++) row[i] += offset;
        ti->from_f32(row, buf + (size_t)r * row_bytes, ne0);
    }
    free(row);
    return add_kept(g, name, type, ne0, ne1, buf, err);
}

// A made-up SentencePiece-style vocabulary: <unk> <s> </s>, 256 byte tokens, then pieces.
static void synth_vocab(gguf_writer *w, int n_vocab) {
    char **toks = xmalloc((size_t)n_vocab * sizeof(char *));
    float *scores = xmalloc((size_t)n_vocab * sizeof(float));
    int32_t *types = xmalloc((size_t)n_vocab * sizeof(int32_t));
    static const char letters[] = "etaoinshrdlucmfwypvbgkjqxz";
    for (int i = 0; i < n_vocab; i++) {
        char buf[32];
        if (i == 0) { snprintf(buf, sizeof buf, "<unk>"); types[i] = 2; }
        else if (i == 1) { snprintf(buf, sizeof buf, "<s>"); types[i] = 3; }
        else if (i == 2) { snprintf(buf, sizeof buf, "</s>"); types[i] = 3; }
        else if (i < 259) { snprintf(buf, sizeof buf, "<0x%02X>", i - 3); types[i] = 6; }
        else {
            // "▁" + a base-26 word, so every id has a distinct piece
            int k = i - 259;
            int o = snprintf(buf, sizeof buf, "\xe2\x96\x81");
            do { buf[o++] = letters[k % 26]; k /= 26; } while (k > 0 && o < 30);
            buf[o] = 0;
            types[i] = 1;
        }
        toks[i] = xstrdup(buf);
        scores[i] = i < 259 ? 0.0f : -(float)(i - 259);
    }
    gguf_set_str(w, "tokenizer.ggml.model", "llama");
    gguf_set_str(w, "tokenizer.ggml.pre", "default");
    gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, (uint64_t)n_vocab);
    gguf_set_arr_data(w, "tokenizer.ggml.scores", GGUF_F32, scores, (uint64_t)n_vocab);
    gguf_set_arr_data(w, "tokenizer.ggml.token_type", GGUF_I32, types, (uint64_t)n_vocab);
    gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    gguf_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    for (int i = 0; i < n_vocab; i++) free(toks[i]);
    free(toks);
    free(scores);
    free(types);
}

enum gen_rope { GR_NONE, GR_LINEAR, GR_YARN, GR_LLAMA3, GR_LONGROPE };

// The options with every 0 replaced by its default (modelgen.h).
typedef struct gen_plan {
    enum model_arch arch;
    enum gen_rope rope;
    int head_dim;
    bool head_dim_key;       // write attention.key_length / value_length
    int swa_window, swa_pattern;
    float rope_base_swa;
    float attn_softcap, final_softcap;   // gemma2; < 0: not written
    float factor, low_freq, high_freq;
    int orig_ctx;
} gen_plan;

static int plan_of(const modelgen_opts *o, gen_plan *p, errbuf *err) {
    memset(p, 0, sizeof *p);
    if (model_arch_from_name(o->arch, &p->arch))
        return err_set(err, "make-model: unknown architecture '%s' (" MODEL_ARCH_NAMES ")", o->arch ? o->arch : "");
    const char *an = o->arch;
    if (o->dim <= 0 || o->n_layer <= 0 || o->n_head <= 0 || o->n_kv_head <= 0 || o->ffn_dim <= 0 ||
        o->head_dim < 0 || (!o->head_dim && o->dim % o->n_head) || o->n_head % o->n_kv_head)
        return err_set(err, "make-model: inconsistent shape (dim %d, heads %d/%d, ffn %d)", o->dim,
                       o->n_head, o->n_kv_head, o->ffn_dim);
    p->head_dim = o->head_dim ? o->head_dim : o->dim / o->n_head;
    p->head_dim_key = o->head_dim != 0 || p->arch == ARCH_QWEN3 || p->arch == ARCH_GEMMA3 || p->arch == ARCH_GEMMA2;
    if (p->head_dim % 2 || p->head_dim > 1024)
        return err_set(err, "make-model: head size %d is odd or above 1024 (the rope turns pairs)", p->head_dim);
    if (o->n_ctx <= 0) return err_set(err, "make-model: context length %d", o->n_ctx);

    // gemma's window layers and gemma2's soft caps
    const bool gemma3 = p->arch == ARCH_GEMMA3, gemma2 = p->arch == ARCH_GEMMA2;
    if (!gemma3 && !gemma2 && o->swa_window)
        return err_set(err, "make-model: a sliding window is gemma's (gemma3, gemma2); %s has none", an);
    if (!gemma3 && (o->swa_pattern || o->rope_base_swa != 0.0f))
        return err_set(err, "make-model: a window pattern and a rope base of the window layers are gemma3's; %s has "
                       "none", an);
    if (!gemma2 && (o->attn_softcap != 0.0f || o->final_softcap != 0.0f))
        return err_set(err, "make-model: soft caps are gemma2's; %s has none", an);
    if (o->swa_window < 0 || o->swa_pattern < 0 || !(o->rope_base_swa >= 0.0f))
        return err_set(err, "make-model: window %d, window pattern %d, window rope base %g: negative",
                       o->swa_window, o->swa_pattern, (double)o->rope_base_swa);
    if (gemma3) {
        p->swa_window = o->swa_window ? o->swa_window : 512;
        p->swa_pattern = o->swa_pattern ? o->swa_pattern : 6;
        p->rope_base_swa = o->rope_base_swa != 0.0f ? o->rope_base_swa : 10000.0f;
    }
    if (gemma2) {
        p->swa_window = o->swa_window ? o->swa_window : 4096;
        p->attn_softcap = o->attn_softcap == 0.0f ? 50.0f : o->attn_softcap;
        p->final_softcap = o->final_softcap == 0.0f ? 30.0f : o->final_softcap;
        if (!(p->attn_softcap < 1e30f) || !(p->final_softcap < 1e30f))
            return err_set(err, "make-model: soft caps %g and %g: not numbers", (double)o->attn_softcap,
                           (double)o->final_softcap);
    }

    // rope scaling
    const char *rs = o->rope_scaling;
    if (!rs || !strcmp(rs, "none")) p->rope = GR_NONE;
    else if (!strcmp(rs, "linear")) p->rope = GR_LINEAR;
    else if (!strcmp(rs, "yarn")) p->rope = GR_YARN;
    else if (!strcmp(rs, "llama3")) p->rope = GR_LLAMA3;
    else if (!strcmp(rs, "longrope")) p->rope = GR_LONGROPE;
    else return err_set(err, "make-model: unknown rope scaling '%s' (none, linear, yarn, llama3, longrope)", rs);
    if (p->rope == GR_LLAMA3 && p->arch != ARCH_LLAMA)
        return err_set(err, "make-model: llama3 rope factors (rope_freqs.weight) are for llama files, not %s", an);
    if (p->rope == GR_LONGROPE && p->arch != ARCH_PHI3)
        return err_set(err, "make-model: longrope is phi3's (rope_factors_long/short.weight), not %s's", an);
    if (p->rope == GR_NONE && (o->rope_factor != 0.0f || o->rope_orig_ctx))
        return err_set(err, "make-model: a rope factor or original context without a rope scaling");
    if (p->rope != GR_LLAMA3 && (o->rope_low_freq != 0.0f || o->rope_high_freq != 0.0f))
        return err_set(err, "make-model: low/high frequency factors are llama3's rope scaling only");
    if (!(o->rope_factor >= 0.0f && o->rope_factor <= 1e6f) || o->rope_orig_ctx < 0 ||
        !(o->rope_low_freq >= 0.0f) || !(o->rope_high_freq >= 0.0f))
        return err_set(err, "make-model: rope factor %g, original context %d, low/high frequency factors %g/%g: "
                       "out of range", (double)o->rope_factor, o->rope_orig_ctx, (double)o->rope_low_freq,
                       (double)o->rope_high_freq);
    if (p->rope == GR_LLAMA3) {
        p->factor = o->rope_factor != 0.0f ? o->rope_factor : 8.0f;
        p->orig_ctx = o->rope_orig_ctx ? o->rope_orig_ctx : 8192;
        p->low_freq = o->rope_low_freq != 0.0f ? o->rope_low_freq : 1.0f;
        p->high_freq = o->rope_high_freq != 0.0f ? o->rope_high_freq : 4.0f;
        if (!(p->high_freq > p->low_freq) || p->factor < 1.0f)
            return err_set(err, "make-model: llama3 rope: high frequency factor %g must be above the low one %g, "
                           "and the factor %g at least 1", (double)p->high_freq, (double)p->low_freq, (double)p->factor);
    } else if (p->rope != GR_NONE) {
        // the context is scaled from orig_ctx to n_ctx: give either, the other follows
        if (o->rope_factor != 0.0f && o->rope_orig_ctx) p->factor = o->rope_factor, p->orig_ctx = o->rope_orig_ctx;
        else if (o->rope_factor != 0.0f) p->factor = o->rope_factor, p->orig_ctx = (int)((float)o->n_ctx / o->rope_factor);
        else if (o->rope_orig_ctx) p->orig_ctx = o->rope_orig_ctx, p->factor = (float)o->n_ctx / (float)o->rope_orig_ctx;
        else p->orig_ctx = o->n_ctx / 4, p->factor = 4.0f;
        if (p->orig_ctx < 1) p->orig_ctx = 1;
        if (!(p->factor >= 1e-3f && p->factor <= 1e6f))
            return err_set(err, "make-model: rope factor %g (context %d over an original %d) is out of range [0.001, 1e6]",
                           (double)p->factor, o->n_ctx, p->orig_ctx);
        if (p->rope == GR_LONGROPE && p->factor < 1.0f)
            return err_set(err, "make-model: longrope factor %g below 1", (double)p->factor);
    }
    return 0;
}

int modelgen_check(const modelgen_opts *o, errbuf *err) {
    gen_plan p;
    return plan_of(o, &p, err);
}

// Llama 3.1's per-pair divisors (rope_freqs.weight), as its conversion defines them: a pair
// whose wavelength 2pi/freq is shorter than orig_ctx / high_freq is kept (1), one longer than
// orig_ctx / low_freq is slowed by the full factor, and between, the frequency is a mix
// (1 - s) freq / factor + s freq with s = (orig_ctx / wavelength - low) / (high - low), whose
// divisor is 1 / ((1 - s) / factor + s). freq_i = base^(-2i/rope_dim). f: (rope_dim/2).
static void llama3_factors(const gen_plan *p, int rope_dim, float base, float *f) {
    const double lo_wave = p->orig_ctx / p->low_freq, hi_wave = p->orig_ctx / p->high_freq;
    for (int i = 0; i < rope_dim / 2; i++) {
        double wave = 2.0 * M_PI / pow((double)base, -2.0 * i / rope_dim);
        if (wave < hi_wave) f[i] = 1.0f;
        else if (wave > lo_wave) f[i] = p->factor;
        else {
            double s = (p->orig_ctx / wave - p->low_freq) / (p->high_freq - p->low_freq);
            f[i] = (float)(1.0 / ((1.0 - s) / p->factor + s));
        }
    }
}

// longrope's factors: long ones rising geometrically from 1 (the fast pairs) to the factor (the
// slowest), short ones the same curve to the power 0.2 (1 to factor^0.2), the shape of Phi-3.5's.
static void longrope_factors(const gen_plan *p, int rope_dim, float *lng, float *shrt) {
    const int half = rope_dim / 2;
    for (int i = 0; i < half; i++) {
        double t = half > 1 ? (double)i / (half - 1) : 1.0;
        lng[i] = (float)pow((double)p->factor, t);
        shrt[i] = (float)pow((double)p->factor, 0.2 * t);
    }
}

// A 1-D F32 tensor of the given values (no draw from the generator).
static int add_values(gen_state *g, const char *name, const float *v, int64_t n, errbuf *err) {
    float *buf = xmalloc((size_t)n * sizeof(float));
    memcpy(buf, v, (size_t)n * sizeof(float));
    return add_kept(g, name, WT_F32, n, 1, buf, err);
}

int modelgen_write(const modelgen_opts *o, const char *path, errbuf *err) {
    gen_plan p;
    if (plan_of(o, &p, err)) return -1;
    const bool qwen = p.arch == ARCH_QWEN2, qk_norm = p.arch == ARCH_QWEN3 || p.arch == ARCH_GEMMA3;
    const bool fused = p.arch == ARCH_PHI3, gemma = p.arch == ARCH_GEMMA3 || p.arch == ARCH_GEMMA2;
    const bool tied = o->tied || gemma;
    gen_state g = { .w = gguf_writer_new(), .rng = o->seed * 0x9e3779b97f4a7c15ull + 1 };
    int rc = 0;
    int n_vocab = o->n_vocab;
    gguf_writer *w = g.w;
    gguf_set_str(w, "general.architecture", o->arch);
    gguf_set_str(w, "general.name", "cabin random-weight model");
    if (o->vocab_from) {
        gguf_file src;
        if (gguf_open(&src, o->vocab_from, err)) { gguf_writer_free(w); return -1; }
        const gguf_kv *toks = gguf_find_kv(&src, "tokenizer.ggml.tokens");
        if (!toks || toks->type != GGUF_ARRAY) {
            err_set(err, "%s: no tokenizer.ggml.tokens to copy", o->vocab_from);
            gguf_close(&src);
            gguf_writer_free(w);
            return -1;
        }
        n_vocab = (int)toks->arr_n;
        for (uint64_t i = 0; i < src.n_kv; i++) {
            if (strncmp(src.kv[i].key, "tokenizer.", 10) != 0) continue;
            gguf_file one = src;      // copy just this key: a view with one kv
            one.kv = &src.kv[i];
            one.n_kv = 1;
            gguf_copy_kvs(w, &one);
        }
        gguf_close(&src);
    } else {
        synth_vocab(w, n_vocab);
    }
    const int head_dim = p.head_dim, rope_dim = head_dim;
    char key[128];
#define SETU(suffix, v) (snprintf(key, sizeof key, "%s.%s", o->arch, suffix), gguf_set_u32(w, key, (uint32_t)(v)))
#define SETF(suffix, v) (snprintf(key, sizeof key, "%s.%s", o->arch, suffix), gguf_set_f32(w, key, (v)))
#define SETS(suffix, v) (snprintf(key, sizeof key, "%s.%s", o->arch, suffix), gguf_set_str(w, key, (v)))
    SETU("vocab_size", n_vocab);
    SETU("context_length", o->n_ctx);
    SETU("embedding_length", o->dim);
    SETU("block_count", o->n_layer);
    SETU("feed_forward_length", o->ffn_dim);
    SETU("attention.head_count", o->n_head);
    SETU("attention.head_count_kv", o->n_kv_head);
    SETU("rope.dimension_count", rope_dim);
    SETF("rope.freq_base", o->rope_base);
    SETF("attention.layer_norm_rms_epsilon", o->rms_eps);
    if (p.head_dim_key) {
        SETU("attention.key_length", head_dim);
        SETU("attention.value_length", head_dim);
    }
    if (p.arch == ARCH_GEMMA3) {
        SETU("attention.sliding_window", p.swa_window);
        SETU("attention.sliding_window_pattern", p.swa_pattern);
        SETF("rope.freq_base_swa", p.rope_base_swa);
    }
    if (p.arch == ARCH_GEMMA2) {
        SETU("attention.sliding_window", p.swa_window);
        if (p.attn_softcap > 0.0f) SETF("attn_logit_softcapping", p.attn_softcap);
        if (p.final_softcap > 0.0f) SETF("final_logit_softcapping", p.final_softcap);
    }
    switch (p.rope) {
    case GR_NONE: case GR_LLAMA3: break;
    case GR_LINEAR:
        SETS("rope.scaling.type", "linear");
        SETF("rope.scaling.factor", p.factor);
        break;
    case GR_YARN:
        SETS("rope.scaling.type", "yarn");
        SETF("rope.scaling.factor", p.factor);
        SETU("rope.scaling.original_context_length", p.orig_ctx);
        break;
    case GR_LONGROPE: {
        // the attention factor Phi-3's conversion writes: sqrt(1 + ln(scale) / ln(orig)) with
        // scale = context / original context (1 when the context is not longer)
        double scale = (double)o->n_ctx / p.orig_ctx;
        double af = scale > 1.0 && p.orig_ctx > 1 ? sqrt(1.0 + log(scale) / log((double)p.orig_ctx)) : 1.0;
        SETF("rope.scaling.attn_factor", (float)af);
        SETU("rope.scaling.original_context_length", p.orig_ctx);
        break;
    }
    }
#undef SETU
#undef SETF
#undef SETS
    gguf_set_u32(w, "general.file_type", o->type == WT_F32 ? 0 : o->type == WT_F16 ? 1 : o->type == WT_Q4_0 ? 2 : o->type == WT_Q8_0 ? 7 : o->type == WT_BF16 ? 32 : 0);
    gguf_set_u32(w, "general.quantization_version", 2);
    const int q_dim = o->n_head * head_dim, kv_dim = o->n_kv_head * head_dim;
    const float s_in = 1.0f / sqrtf((float)o->dim), s_ffn = 1.0f / sqrtf((float)o->ffn_dim);
    const float s_out = 1.0f / sqrtf((float)q_dim);
    const float s_embd = o->embd_scale > 0 ? o->embd_scale : gemma ? s_in : 1.0f;
    rc = add_tensor(&g, "token_embd.weight", o->embd_type, o->dim, n_vocab, s_embd, 0.0f, err);
    if (!rc) rc = add_tensor(&g, "output_norm.weight", WT_F32, o->dim, 1, 0.1f, 1.0f, err);
    if (!rc && !tied) rc = add_tensor(&g, "output.weight", o->embd_type, o->dim, n_vocab, s_in, 0.0f, err);
    if (!rc && (p.rope == GR_LLAMA3 || p.rope == GR_LONGROPE)) {
        float f[2][ROPE_MAX_PAIRS];
        if (p.rope == GR_LLAMA3) {
            llama3_factors(&p, rope_dim, o->rope_base, f[0]);
            rc = add_values(&g, "rope_freqs.weight", f[0], rope_dim / 2, err);
        } else {
            longrope_factors(&p, rope_dim, f[0], f[1]);
            rc = add_values(&g, "rope_factors_long.weight", f[0], rope_dim / 2, err);
            if (!rc) rc = add_values(&g, "rope_factors_short.weight", f[1], rope_dim / 2, err);
        }
    }
    for (int l = 0; l < o->n_layer && !rc; l++) {
        char n[96];
#define T(name, type, ne0, ne1, sc, off) \
        if (!rc) { snprintf(n, sizeof n, "blk.%d.%s", l, name); rc = add_tensor(&g, n, type, ne0, ne1, sc, off, err); }
        T("attn_norm.weight", WT_F32, o->dim, 1, 0.1f, 1.0f)
        if (fused) {
            T("attn_qkv.weight", o->type, o->dim, q_dim + 2 * kv_dim, s_in, 0.0f)
        } else {
            T("attn_q.weight", o->type, o->dim, q_dim, s_in, 0.0f)
            T("attn_k.weight", o->type, o->dim, kv_dim, s_in, 0.0f)
            T("attn_v.weight", o->type, o->dim, kv_dim, s_in, 0.0f)
        }
        if (qwen) {
            T("attn_q.bias", WT_F32, q_dim, 1, 0.1f, 0.0f)
            T("attn_k.bias", WT_F32, kv_dim, 1, 0.1f, 0.0f)
            T("attn_v.bias", WT_F32, kv_dim, 1, 0.1f, 0.0f)
        }
        if (qk_norm) {
            T("attn_q_norm.weight", WT_F32, head_dim, 1, 0.1f, 1.0f)
            T("attn_k_norm.weight", WT_F32, head_dim, 1, 0.1f, 1.0f)
        }
        T("attn_output.weight", o->type, q_dim, o->dim, s_out, 0.0f)
        if (gemma) T("post_attention_norm.weight", WT_F32, o->dim, 1, 0.1f, 1.0f)
        T("ffn_norm.weight", WT_F32, o->dim, 1, 0.1f, 1.0f)
        if (fused) {
            T("ffn_up.weight", o->type, o->dim, 2 * o->ffn_dim, s_in, 0.0f)
        } else {
            T("ffn_gate.weight", o->type, o->dim, o->ffn_dim, s_in, 0.0f)
            T("ffn_up.weight", o->type, o->dim, o->ffn_dim, s_in, 0.0f)
        }
        T("ffn_down.weight", o->type, o->ffn_dim, o->dim, s_ffn, 0.0f)
        if (gemma) T("post_ffw_norm.weight", WT_F32, o->dim, 1, 0.1f, 1.0f)
#undef T
    }
    if (!rc) rc = gguf_write_file(w, path, err);
    for (int i = 0; i < g.n_bufs; i++) free(g.bufs[i]);
    free(g.bufs);
    gguf_writer_free(w);
    return rc;
}
