// cabin make-model: random-weight models of any shape and type.
#include "app/commands.h"
#include "engine/modelgen.h"
#include "engine/wtype.h"

#include <stdio.h>
#include <string.h>

int cmd_make_model(int argc, char **argv) {
    args a = { argc, argv, 1, "cabin make-model", false };
    modelgen_opts o = modelgen_defaults();
    const char *out = NULL, *type = NULL, *embd_type = NULL, *shape = NULL;
    uint64_t seed = 1;
    while (a.i < argc) {
        if (arg_help(&a)) {
            printf("usage: cabin make-model -o OUT.gguf [--shape NAME] [--type T] [options]\n\n"
                   "Writes a model with random weights (for tests and benchmarks).\n"
                   "  --shape NAME       tiny (default) | llama-1b (dim 2048, 16 layers, 32/8 heads,\n"
                   "                     ffn 8192, tied) | smollm-135m (dim 576, 30 layers, 9/3, ffn 1536)\n"
                   "  --arch A           llama | qwen2\n"
                   "  --dim N --layers N --heads N --kv-heads N --ffn N --vocab N --ctx N\n"
                   "  --rope-base F      (default 10000)\n"
                   "  --embd-scale F     standard deviation of token_embd (default 1); tied models\n"
                   "                     (llama-1b) give near one-hot outputs at 1, use 0.02 for\n"
                   "                     a spread-out distribution (KL comparisons)\n"
                   "  --tied             no output.weight (the token embedding is reused)\n"
                   "  --type T           layer matrices: f32 | f16 | bf16 | q8_0 | q4_0 (default f32)\n"
                   "  --embd-type T      token_embd/output type (default: same as --type)\n"
                   "  --vocab-from FILE  copy the tokenizer of another GGUF (sets the vocab size)\n"
                   "  --seed S\n");
            return 0;
        }
        if (arg_str(&a, "-o", "--out", &out)) continue;
        if (arg_str(&a, "--shape", NULL, &shape)) {
            if (!shape) continue;
            if (strcmp(shape, "llama-1b") == 0) {
                o.dim = 2048; o.n_layer = 16; o.n_head = 32; o.n_kv_head = 8; o.ffn_dim = 8192;
                o.n_vocab = 128256; o.tied = true; o.rope_base = 500000.0f; o.n_ctx = 4096;
            } else if (strcmp(shape, "smollm-135m") == 0) {
                o.dim = 576; o.n_layer = 30; o.n_head = 9; o.n_kv_head = 3; o.ffn_dim = 1536;
                o.n_vocab = 49152; o.tied = true; o.n_ctx = 2048;
            } else if (strcmp(shape, "tiny") != 0) {
                fprintf(stderr, "cabin make-model: unknown shape '%s' (tiny, llama-1b, smollm-135m)\n", shape);
                return 2;
            }
            continue;
        }
        if (arg_str(&a, "--arch", NULL, &o.arch)) continue;
        if (arg_int(&a, "--dim", NULL, &o.dim)) continue;
        if (arg_int(&a, "--layers", NULL, &o.n_layer)) continue;
        if (arg_int(&a, "--heads", NULL, &o.n_head)) continue;
        if (arg_int(&a, "--kv-heads", NULL, &o.n_kv_head)) continue;
        if (arg_int(&a, "--ffn", NULL, &o.ffn_dim)) continue;
        if (arg_int(&a, "--vocab", NULL, &o.n_vocab)) continue;
        if (arg_int(&a, "--ctx", NULL, &o.n_ctx)) continue;
        if (arg_float(&a, "--rope-base", NULL, &o.rope_base)) continue;
        if (arg_float(&a, "--embd-scale", NULL, &o.embd_scale)) continue;
        if (arg_flag(&a, "--tied", NULL)) { o.tied = true; continue; }
        if (arg_str(&a, "--type", NULL, &type)) continue;
        if (arg_str(&a, "--embd-type", NULL, &embd_type)) continue;
        if (arg_str(&a, "--vocab-from", NULL, &o.vocab_from)) continue;
        if (arg_u64(&a, "--seed", NULL, &seed)) continue;
        arg_unknown(&a);
        return 2;
    }
    if (a.failed) return 2;
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
    o.seed = seed;
    errbuf err = {{0}};
    if (modelgen_write(&o, out, &err)) { fprintf(stderr, "cabin make-model: %s\n", err.msg); return 1; }
    printf("%s: %s, dim %d, %d layers, %d/%d heads, ffn %d, %s\n", out, o.arch, o.dim, o.n_layer,
           o.n_head, o.n_kv_head, o.ffn_dim, wtype_name(o.type));
    return 0;
}
