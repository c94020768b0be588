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
    { "--out", "-o", OPT_STR, MO(out), "OUT.gguf", "the file to write", NULL, NULL, NULL },
    { "--shape", NULL, OPT_CALL, 0, "NAME", "tiny | llama-1b (dim 2048, 16 layers, 32/8 heads,\n"
      "ffn 8192, tied) | smollm-135m (dim 576, 30 layers, 9/3, ffn 1536)", "tiny", set_shape, NULL },
    { "--arch", NULL, OPT_STR, MO(g.arch), "A", "llama | qwen2", NULL, NULL, NULL },
    { "--dim", NULL, OPT_INT, MO(g.dim), "N", "embedding length", NULL, NULL, NULL },
    { "--layers", NULL, OPT_INT, MO(g.n_layer), "N", "layers", NULL, NULL, NULL },
    { "--heads", NULL, OPT_INT, MO(g.n_head), "N", "attention heads", NULL, NULL, NULL },
    { "--kv-heads", NULL, OPT_INT, MO(g.n_kv_head), "N", "key/value heads", NULL, NULL, NULL },
    { "--ffn", NULL, OPT_INT, MO(g.ffn_dim), "N", "feed-forward length", NULL, NULL, NULL },
    { "--vocab", NULL, OPT_INT, MO(g.n_vocab), "N", "vocabulary size", NULL, NULL, NULL },
    { "--ctx", NULL, OPT_INT, MO(g.n_ctx), "N", "the model's context length", NULL, NULL, NULL },
    { "--rope-base", NULL, OPT_FLOAT, MO(g.rope_base), "F", "RoPE base frequency", NULL, NULL, NULL },
    { "--embd-scale", NULL, OPT_FLOAT, MO(g.embd_scale), "F", "standard deviation of token_embd; tied models\n"
      "(llama-1b) give near one-hot outputs at 1, use 0.02 for\na spread-out distribution (KL comparisons)", NULL, NULL, NULL },
    { "--tied", NULL, OPT_FLAG, MO(g.tied), NULL, "no output.weight (the token embedding is reused)", NULL, NULL, NULL },
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
    if (modelgen_write(&o, out, &err)) { fprintf(stderr, "cabin make-model: %s\n", err.msg); return 1; }
    printf("%s: %s, dim %d, %d layers, %d/%d heads, ffn %d, %s\n", out, o.arch, o.dim, o.n_layer,
           o.n_head, o.n_kv_head, o.ffn_dim, wtype_name(o.type));
    return 0;
}
