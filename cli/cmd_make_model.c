// cabin make-model: random-weight models of any shape and type.
#include "cli/commands.h"
#include "engine/modelgen.h"
#include "engine/wtype.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct make_model_opts {
    modelgen_opts g;
    const char *out, *type, *embd_type;
} make_model_opts;

// --shape NAME: a whole shape at once (later --dim etc. change it further)
static int set_shape(void *base, const char *shape, errbuf *err) {
    modelgen_opts *o = &((make_model_opts *)base)->g;
    if (strcmp(shape, "llama-1b") == 0) {
        o->dim = 2048; o->n_layer = 16; o->n_head = 32; o->n_kv_head = 8; o->ffn_dim = 8192;
        o->n_vocab = 128256; o->tied = true; o->rope_base = 500000.0f; o->n_ctx = 4096;
    } else if (strcmp(shape, "smollm-135m") == 0) {
        o->dim = 576; o->n_layer = 30; o->n_head = 9; o->n_kv_head = 3; o->ffn_dim = 1536;
        o->n_vocab = 49152; o->tied = true; o->n_ctx = 2048;
    } else if (strcmp(shape, "tiny") != 0) {
        return err_set(err, "unknown shape '%s' (tiny, llama-1b, smollm-135m)", shape);
    }
    return 0;
}

#define MO(field) offsetof(make_model_opts, field)
static const opt_def MAKE_MODEL_OPTS[] = {
    { "--out", "-o", OPT_STR, MO(out), "OUT.gguf", "the file to write", NULL, NULL, NULL, .writes = true },
    { "--shape", NULL, OPT_CALL, 0, "NAME", "tiny | llama-1b (dim 2048, 16 layers, 32/8 heads,\n"
      "ffn 8192, tied) | smollm-135m (dim 576, 30 layers, 9/3, ffn 1536)", "tiny", set_shape, NULL },
    { "--arch", NULL, OPT_STR, MO(g.arch), "A", "llama | qwen2 (q/k/v biases) | qwen3 (q/k norms) |\n"
      "phi3 (fused qkv, gate/up) | gemma3 (q/k norms, post-norms,\nwindow layers, tied output) | gemma2 (post-norms,\n"
      "every other layer a window layer, soft caps, tied output)", NULL, NULL, NULL },
    { "--dim", NULL, OPT_INT, MO(g.dim), "N", "embedding length", NULL, NULL, NULL, OPT_RANGE(1, 65536) },
    { "--layers", NULL, OPT_INT, MO(g.n_layer), "N", "layers", NULL, NULL, NULL, OPT_RANGE(1, 1024) },
    { "--heads", NULL, OPT_INT, MO(g.n_head), "N", "attention heads", NULL, NULL, NULL, OPT_RANGE(1, 1024) },
    { "--kv-heads", NULL, OPT_INT, MO(g.n_kv_head), "N", "key/value heads", NULL, NULL, NULL, OPT_RANGE(1, 1024) },
    { "--ffn", NULL, OPT_INT, MO(g.ffn_dim), "N", "feed-forward length", NULL, NULL, NULL, OPT_RANGE(1, 1048576) },
    { "--head-dim", NULL, OPT_INT, MO(g.head_dim), "N", "head size (attention.key_length); may differ from dim/heads", "dim / heads", NULL, NULL, OPT_RANGE(1, 4096) },
    { "--vocab", NULL, OPT_INT, MO(g.n_vocab), "N", "vocabulary size", NULL, NULL, NULL, OPT_RANGE(1, 4194304) },
    { "--ctx", NULL, OPT_INT, MO(g.n_ctx), "N", "the model's context length", NULL, NULL, NULL, OPT_RANGE(1, 16777216) },
    { "--rope-base", NULL, OPT_FLOAT, MO(g.rope_base), "F", "RoPE base frequency", NULL, NULL, NULL, OPT_RANGE(1, 1e12) },
    { "--rope-scaling", NULL, OPT_STR, MO(g.rope_scaling), "KIND", "none | linear | yarn | llama3 (llama: rope_freqs.weight) |\n"
      "longrope (phi3: long/short factors); on gemma3 it turns\nthe global layers only", "none", NULL, NULL },
    { "--rope-factor", NULL, OPT_FLOAT, MO(g.rope_factor), "F", "the scaling's factor (llama3: of the slowest pairs;\n"
      "longrope: the largest long factor)", "llama3 8, else ctx / orig ctx", NULL, NULL, OPT_RANGE(0.001, 1e6) },
    { "--rope-orig-ctx", NULL, OPT_INT, MO(g.rope_orig_ctx), "N", "the context before scaling (yarn, longrope, llama3)",
      "llama3 8192, else ctx / factor, or ctx / 4", NULL, NULL, OPT_RANGE(1, 16777216) },
    { "--rope-low-freq", NULL, OPT_FLOAT, MO(g.rope_low_freq), "F", "llama3's low_freq_factor", "1", NULL, NULL, OPT_RANGE(0.001, 1e6) },
    { "--rope-high-freq", NULL, OPT_FLOAT, MO(g.rope_high_freq), "F", "llama3's high_freq_factor", "4", NULL, NULL, OPT_RANGE(0.001, 1e6) },
    { "--window", NULL, OPT_INT, MO(g.swa_window), "N", "gemma: positions a window layer sees", "512 (gemma2: 4096)", NULL, NULL, OPT_RANGE(1, 16777216) },
    { "--window-pattern", NULL, OPT_INT, MO(g.swa_pattern), "N", "gemma3: every Nth layer is global, the others window layers", "6", NULL, NULL, OPT_RANGE(1, 1024) },
    { "--rope-base-swa", NULL, OPT_FLOAT, MO(g.rope_base_swa), "F", "gemma3: RoPE base of the window layers", "10000", NULL, NULL, OPT_RANGE(1, 1e12) },
    { "--attn-softcap", NULL, OPT_FLOAT, MO(g.attn_softcap), "F", "gemma2: attention scores become F*tanh(s/F); -1: none", "50", NULL, NULL, OPT_RANGE(-1, 1e4) },
    { "--final-softcap", NULL, OPT_FLOAT, MO(g.final_softcap), "F", "gemma2: logits become F*tanh(l/F); -1: none", "30", NULL, NULL, OPT_RANGE(-1, 1e4) },
    { "--embd-scale", NULL, OPT_FLOAT, MO(g.embd_scale), "F", "standard deviation of token_embd; tied models\n"
      "(llama-1b) give near one-hot outputs at 1, use 0.02 for\na spread-out distribution (KL comparisons)", "1 (gemma: 1/sqrt(dim))", NULL, NULL, OPT_RANGE(0, 1e3) },
    { "--tied", NULL, OPT_FLAG, MO(g.tied), NULL, "no output.weight (the token embedding is reused;\ngemma always)", NULL, NULL, NULL },
    { "--type", NULL, OPT_STR, MO(type), "T", "layer matrices: f32 | f16 | bf16 | q8_0 | q4_0", "f32", NULL, NULL },
    { "--embd-type", NULL, OPT_STR, MO(embd_type), "T", "token_embd/output type", "same as --type", NULL, NULL },
    { "--vocab-from", NULL, OPT_STR, MO(g.vocab_from), "FILE", "copy the tokenizer of another GGUF (sets the vocab size)", NULL, NULL, NULL },
    { "--seed", NULL, OPT_U64, MO(g.seed), "S", "random seed of the weights", NULL, NULL, NULL },
};

static const cmd_spec MAKE_MODEL_SPEC = {
    "cabin make-model", "cabin make-model -o OUT.gguf [--shape NAME] [--type T] [options]",
    "Writes a model with random weights (for tests and benchmarks).\n",
};

int cmd_make_model(int argc, char **argv) {
    make_model_opts mo = { .g = modelgen_defaults() };
    mo.g.seed = 1;
    opt_table own = OPT_TABLE(MAKE_MODEL_OPTS, &mo);
    int prc = opts_parse(&MAKE_MODEL_SPEC, &own, 1, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    modelgen_opts o = mo.g;
    const char *out = mo.out, *type = mo.type, *embd_type = mo.embd_type;
    if (!out) { fprintf(stderr, "cabin make-model: no output file (-o OUT.gguf)\n"); return 2; }
    if (type) {
        int t = wtype_from_name(type);
        if (t < 0 || !wtype_get((uint32_t)t)->from_f32) {
            fprintf(stderr, "cabin make-model: --type %s: not one of f32, f16, bf16, q8_0, q4_0\n", type);
            return 2;
        }
        o.type = o.embd_type = (uint32_t)t;
    }
    if (embd_type) {
        int t = wtype_from_name(embd_type);
        if (t < 0 || !wtype_get((uint32_t)t)->from_f32) {
            fprintf(stderr, "cabin make-model: --embd-type %s: not one of f32, f16, bf16, q8_0, q4_0\n", embd_type);
            return 2;
        }
        o.embd_type = (uint32_t)t;
    }
    if (o.n_vocab < 260 && !o.vocab_from) {
        fprintf(stderr, "cabin make-model: --vocab %d is too small (at least 260 for the synthetic vocabulary)\n", o.n_vocab);
        return 2;
    }
    errbuf err = {{0}};
    if (modelgen_check(&o, &err)) { fprintf(stderr, "cabin %s\n", err.msg); return 2; }
    if (modelgen_write(&o, out, &err)) { fprintf(stderr, "cabin make-model: %s\n", err.msg); return 1; }
    char extra[160] = "";
    int x = 0;
    if (o.head_dim) x += snprintf(extra + x, sizeof extra - (size_t)x, ", head %d", o.head_dim);
    if (!strcmp(o.arch, "gemma3"))
        x += snprintf(extra + x, sizeof extra - (size_t)x, ", window %d, pattern %d",
                      o.swa_window ? o.swa_window : 512, o.swa_pattern ? o.swa_pattern : 6);
    if (!strcmp(o.arch, "gemma2"))
        x += snprintf(extra + x, sizeof extra - (size_t)x, ", window %d, every other layer", o.swa_window ? o.swa_window : 4096);
    if (o.rope_scaling && strcmp(o.rope_scaling, "none"))
        snprintf(extra + x, sizeof extra - (size_t)x, ", rope %s", o.rope_scaling);
    printf("%s: %s, dim %d, %d layers, %d/%d heads, ffn %d, %s%s\n", out, o.arch, o.dim, o.n_layer,
           o.n_head, o.n_kv_head, o.ffn_dim, wtype_name(o.type), extra);
    return 0;
}
