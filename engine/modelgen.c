#include "modelgen.h"
#include "gguf.h"
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
    if (g->n_bufs == g->cap_bufs) {
        g->cap_bufs = g->cap_bufs ? g->cap_bufs * 2 : 64;
        g->bufs = xrealloc(g->bufs, (size_t)g->cap_bufs * sizeof(void *));
    }
    g->bufs[g->n_bufs++] = buf;
    uint64_t ne[2] = { (uint64_t)ne0, (uint64_t)ne1 };
    return gguf_add_tensor(g->w, name, type, ne1 > 1 ? 2 : 1, ne, buf, err);
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

int modelgen_write(const modelgen_opts *o, const char *path, errbuf *err) {
    if (o->dim <= 0 || o->n_layer <= 0 || o->n_head <= 0 || o->n_kv_head <= 0 || o->ffn_dim <= 0 ||
        o->dim % o->n_head || o->n_head % o->n_kv_head)
        return err_set(err, "make-model: inconsistent shape (dim %d, heads %d/%d, ffn %d)", o->dim,
                       o->n_head, o->n_kv_head, o->ffn_dim);
    bool qwen = strcmp(o->arch, "qwen2") == 0;
    if (!qwen && strcmp(o->arch, "llama") != 0)
        return err_set(err, "make-model: unknown architecture '%s' (llama, qwen2)", o->arch);
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
    char key[128];
#define SETU(suffix, v) (snprintf(key, sizeof key, "%s.%s", o->arch, suffix), gguf_set_u32(w, key, (uint32_t)(v)))
#define SETF(suffix, v) (snprintf(key, sizeof key, "%s.%s", o->arch, suffix), gguf_set_f32(w, key, (v)))
    SETU("vocab_size", n_vocab);
    SETU("context_length", o->n_ctx);
    SETU("embedding_length", o->dim);
    SETU("block_count", o->n_layer);
    SETU("feed_forward_length", o->ffn_dim);
    SETU("attention.head_count", o->n_head);
    SETU("attention.head_count_kv", o->n_kv_head);
    SETU("rope.dimension_count", o->dim / o->n_head);
    SETF("rope.freq_base", o->rope_base);
    SETF("attention.layer_norm_rms_epsilon", o->rms_eps);
#undef SETU
#undef SETF
    gguf_set_u32(w, "general.file_type", o->type == WT_F32 ? 0 : o->type == WT_F16 ? 1 : o->type == WT_Q4_0 ? 2 : o->type == WT_Q8_0 ? 7 : o->type == WT_BF16 ? 32 : 0);
    gguf_set_u32(w, "general.quantization_version", 2);
    int head_dim = o->dim / o->n_head;
    int q_dim = o->n_head * head_dim, kv_dim = o->n_kv_head * head_dim;
    float s_in = 1.0f / sqrtf((float)o->dim), s_ffn = 1.0f / sqrtf((float)o->ffn_dim);
    rc = add_tensor(&g, "token_embd.weight", o->embd_type, o->dim, n_vocab, o->embd_scale > 0 ? o->embd_scale : 1.0f, 0.0f, err);
    if (!rc) rc = add_tensor(&g, "output_norm.weight", WT_F32, o->dim, 1, 0.1f, 1.0f, err);
    if (!rc && !o->tied) rc = add_tensor(&g, "output.weight", o->embd_type, o->dim, n_vocab, s_in, 0.0f, err);
    for (int l = 0; l < o->n_layer && !rc; l++) {
        char n[96];
#define T(name, type, ne0, ne1, sc, off) \
        if (!rc) { snprintf(n, sizeof n, "blk.%d.%s", l, name); rc = add_tensor(&g, n, type, ne0, ne1, sc, off, err); }
        T("attn_norm.weight", WT_F32, o->dim, 1, 0.1f, 1.0f)
        T("attn_q.weight", o->type, o->dim, q_dim, s_in, 0.0f)
        T("attn_k.weight", o->type, o->dim, kv_dim, s_in, 0.0f)
        T("attn_v.weight", o->type, o->dim, kv_dim, s_in, 0.0f)
        if (qwen) {
            T("attn_q.bias", WT_F32, q_dim, 1, 0.1f, 0.0f)
            T("attn_k.bias", WT_F32, kv_dim, 1, 0.1f, 0.0f)
            T("attn_v.bias", WT_F32, kv_dim, 1, 0.1f, 0.0f)
        }
        T("attn_output.weight", o->type, q_dim, o->dim, s_in, 0.0f)
        T("ffn_norm.weight", WT_F32, o->dim, 1, 0.1f, 1.0f)
        T("ffn_gate.weight", o->type, o->dim, o->ffn_dim, s_in, 0.0f)
        T("ffn_up.weight", o->type, o->dim, o->ffn_dim, s_in, 0.0f)
        T("ffn_down.weight", o->type, o->ffn_dim, o->dim, s_ffn, 0.0f)
#undef T
    }
    if (!rc) rc = gguf_write_file(w, path, err);
    for (int i = 0; i < g.n_bufs; i++) free(g.bufs[i]);
    free(g.bufs);
    gguf_writer_free(w);
    return rc;
}
