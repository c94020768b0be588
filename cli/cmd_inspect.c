// cabin info, cabin tokenize: look inside a GGUF file without running it.
#include "cli/commands.h"
#include "engine/chat_template.h"
#include "engine/gguf.h"
#include "engine/kv_cache.h"
#include "engine/model.h"
#include "engine/tokenizer.h"
#include "engine/wtype.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_kv_if(const gguf_file *g, const char *key, const char *label) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return;
    char buf[256];
    gguf_kv_format(kv, buf, sizeof buf);
    printf("  %-22s %s\n", label, buf);
}

static void human_bytes(uint64_t b, char *out, size_t n) {
    if (b >= (1ull << 30)) snprintf(out, n, "%.2f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20)) snprintf(out, n, "%.1f MiB", (double)b / (1ull << 20));
    else if (b >= 1024) snprintf(out, n, "%.1f KiB", (double)b / 1024);
    else snprintf(out, n, "%" PRIu64 " B", b);
}

// i64 metadata "ARCH.NAME" or def when absent.
static int64_t arch_int(const gguf_file *g, const char *arch, const char *name, int64_t def) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, name);
    int64_t x;
    errbuf e = {{0}};
    return gguf_get_i64(g, key, &x, &e) == 1 ? x : def;
}

// Appends "; TEXT" (or "TEXT" first) to the line of extras.
__attribute__((format(printf, 2, 3))) static void add_extra(strbuf *line, const char *fmt, ...) {
    if (line->len) strbuf_puts(line, "; ");
    va_list ap;
    va_start(ap, fmt);
    strbuf_vprintf(line, fmt, ap);
    va_end(ap);
}

// What the architecture adds to the plain llama block, read from the file's tensors and keys:
// one line, or nothing for a plain llama file.
static void print_extras(const gguf_file *g, const char *arch) {
    strbuf line = { 0 };
    const int64_t dim = arch_int(g, arch, "embedding_length", 0), n_head = arch_int(g, arch, "attention.head_count", 0);
    const int64_t head_dim = arch_int(g, arch, "attention.key_length", n_head ? dim / n_head : 0);
    if (gguf_find_tensor(g, "blk.0.attn_qkv.weight")) add_extra(&line, "fused attn_qkv (rows q, k, v)");
    if (gguf_find_tensor(g, "blk.0.ffn_up.weight") && !gguf_find_tensor(g, "blk.0.ffn_gate.weight"))
        add_extra(&line, "ffn_up holds gate and up");
    if (gguf_find_tensor(g, "blk.0.attn_q_norm.weight")) add_extra(&line, "per-head RMSNorm of q and k before rope");
    if (gguf_find_tensor(g, "blk.0.attn_q.bias")) add_extra(&line, "q/k/v biases");
    if (n_head && head_dim != dim / n_head) add_extra(&line, "head dim %lld (key_length)", (long long)head_dim);
    if (!gguf_find_tensor(g, "output.weight")) add_extra(&line, "tied embeddings");
    if (gguf_find_tensor(g, "blk.0.post_attention_norm.weight")) add_extra(&line, "RMSNorm after attention and FFN too");
    const bool gemma = strcmp(arch, "gemma3") == 0 || strcmp(arch, "gemma2") == 0;
    if (gemma) add_extra(&line, "embedding x sqrt(dim); GELU(tanh)-gated FFN");
    if (strcmp(arch, "qwen2") == 0 || strcmp(arch, "qwen3") == 0 || strcmp(arch, "phi3") == 0 || gemma)
        add_extra(&line, "NeoX rope");
    if (line.len) printf("  %-22s %s\n", "extras", strbuf_str(&line));
    strbuf_free(&line);
}

// What cabin makes of the file, from its loader: the rope it turns by, and whether it runs (a
// file the loader refuses says why in one line; tensors its forward pass would not read are
// named).
static void print_model_view(const char *path) {
    model *m = NULL;
    errbuf e = {{0}};
    if (model_load_any(&m, path, &e)) {
        printf("  %-22s no: %s\n", "runs", e.msg);
        return;
    }
    const model_hparams *hp = &m->hp;
    char rope[256];
    rope_scaling_describe(&hp->rope_scaling, hp->rope_dim, rope, sizeof rope);
    printf("  %-22s %s (base %g, %d of %d dims per head, %s pairs)\n", "rope variant", rope, (double)hp->rope_base,
           hp->rope_dim, hp->head_dim, hp->rope_neox ? "NeoX" : "adjacent");
    if (m->layer_swa) {   // the window layout: which layers see the last swa_window slots only
        strbuf list = { 0 };
        int n_win = 0;
        for (int l = 0; l < hp->n_layer; l++)
            if (m->layer_swa[l]) strbuf_printf(&list, "%s%d", n_win++ ? "," : "", l);
        char rope_where[96];
        if (hp->rope_swa_own)
            snprintf(rope_where, sizeof rope_where, "rope base %g there, %g on the window layers", (double)hp->rope_base,
                     (double)hp->rope_base_swa);
        else
            snprintf(rope_where, sizeof rope_where, "the same rope on every layer");
        int p = hp->swa_pattern;
        const char *th = p % 100 / 10 == 1 ? "th" : p % 10 == 1 ? "st" : p % 10 == 2 ? "nd" : p % 10 == 3 ? "rd" : "th";
        printf("  %-22s sliding window of %d on %d of %d layers (global: every %d%s; %s): %s\n", "attention",
               hp->swa_window, n_win, hp->n_layer, p, th, rope_where, strbuf_str(&list));
        strbuf_free(&list);
    } else {
        printf("  %-22s every layer sees the whole context\n", "attention");
    }
    if (hp->attn_softcap > 0.0f || hp->final_softcap > 0.0f)
        printf("  %-22s attention scores %g * tanh(s / %g), logits %g * tanh(l / %g) (0: none)\n", "soft caps",
               (double)hp->attn_softcap, (double)hp->attn_softcap, (double)hp->final_softcap, (double)hp->final_softcap);
    if (m->n_unused) {
        const char *names[8];
        int n = model_unused_tensors(m, names, 8);
        printf("  %-22s no: %d tensor%s that cabin's %s forward pass does not read:", "runs", n, n > 1 ? "s" : "",
               hp->arch_name);
        for (int i = 0; i < n && i < 8; i++) printf(" %s", names[i]);
        printf("%s\n", n > 8 ? " ..." : "");
    } else {
        printf("  %-22s yes\n", "runs");
    }
    model_free(m);
}

// KV-cache bytes of this model's shape in every format (docs/KV.md): per token per layer (the
// quantized store's rate) and whole caches (all layers, recent windows included) at the model's
// context and at 4096 slots, with the ratio to f16.
static int print_kv_sizes(const gguf_file *g, const char *arch) {
    int64_t n_layer = arch_int(g, arch, "block_count", 0), dim = arch_int(g, arch, "embedding_length", 0);
    int64_t n_head = arch_int(g, arch, "attention.head_count", 0);
    int64_t n_kv = arch_int(g, arch, "attention.head_count_kv", n_head);
    int64_t hd = n_head > 0 ? arch_int(g, arch, "attention.key_length", dim / n_head) : 0;
    int64_t n_ctx = arch_int(g, arch, "context_length", 0);
    int64_t kv_dim = n_kv * hd;
    if (n_layer <= 0 || n_head <= 0 || n_kv <= 0 || hd <= 0 || kv_dim % 2 || kv_dim > (1 << 20) || n_layer > 100000) {
        fprintf(stderr, "cabin info: --kv: the file does not give a usable attention shape (%" PRId64 " layers, %" PRId64
                "/%" PRId64 " heads of %" PRId64 ")\n", n_layer, n_head, n_kv, hd);
        return 1;
    }
    if (n_ctx <= 0 || n_ctx > (1 << 24)) n_ctx = 4096;
    printf("  kv cache: %" PRId64 " layers x %" PRId64 " kv heads x %" PRId64 " = %" PRId64 " per token (K and V each),"
           " recent window %d tokens f16, key groups of %d tokens\n", n_layer, n_kv, hd, kv_dim, KV_RECENT_DEFAULT, KV_GROUP);
    printf("    | format | bytes/token/layer | cache at %-6" PRId64 " | vs f16 | cache at 4096 | vs f16 |\n", n_ctx);
    static const enum kv_format order[] = { KV_F32, KV_F16, KV_Q8, KV_Q4 };
    uint64_t f16_ctx = kv_format_cache_bytes(KV_F16, 0, (int)n_layer, (int)n_ctx, (int)kv_dim);
    uint64_t f16_4k = kv_format_cache_bytes(KV_F16, 0, (int)n_layer, 4096, (int)kv_dim);
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        enum kv_format f = order[i];
        uint64_t at_ctx = kv_format_cache_bytes(f, 0, (int)n_layer, (int)n_ctx, (int)kv_dim);
        uint64_t at_4k = kv_format_cache_bytes(f, 0, (int)n_layer, 4096, (int)kv_dim);
        char a[32], b[32];
        human_bytes(at_ctx, a, sizeof a);
        human_bytes(at_4k, b, sizeof b);
        printf("    | %-6s | %17.1f | %15s | %5.2fx | %13s | %5.2fx |\n", kv_format_name(f),
               kv_format_token_bytes(f, (int)kv_dim), a, (double)f16_ctx / (double)at_ctx, b,
               (double)f16_4k / (double)at_4k);
    }
    return 0;
}

typedef struct info_opts { const char *path; bool meta, kv_sizes, tensors; } info_opts;

#define IO(field) offsetof(info_opts, field)
static const opt_def INFO_OPTS[] = {
    { "MODEL.gguf", NULL, OPT_POS, IO(path), NULL, "the file", NULL, NULL, NULL },
    { "--kv", NULL, OPT_FLAG, IO(kv_sizes), NULL, "KV-cache size of this model in f32/f16/q8/q4 (per token per layer,\n"
      "at the model's context and at 4096 tokens, vs f16; docs/KV.md)", NULL, NULL, NULL },
    { "--meta", NULL, OPT_FLAG, IO(meta), NULL, "print every metadata key and value", NULL, NULL, NULL },
    { "--tensors", NULL, OPT_FLAG, IO(tensors), NULL, "list every tensor with shape and type", NULL, NULL, NULL },
};

static const cmd_spec INFO_SPEC = {
    "cabin info", "cabin info [--kv] [--meta] [--tensors] MODEL.gguf",
    "Architecture, sizes, tensor type histogram, tokenizer and chat template.\n",
};

int cmd_info(int argc, char **argv) {
    info_opts o = {0};
    opt_table own = OPT_TABLE(INFO_OPTS, &o);
    int prc = opts_parse(&INFO_SPEC, &own, 1, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    const char *path = o.path;
    bool all_kv = o.meta, kv_sizes = o.kv_sizes, tensors = o.tensors;
    if (!path) { fprintf(stderr, "cabin info: no model file given (see cabin info --help)\n"); return 2; }
    gguf_file g;
    errbuf err = {{0}};
    if (gguf_open(&g, path, &err)) { fprintf(stderr, "cabin info: %s\n", err.msg); return 1; }
    char hb[32];
    human_bytes(g.size, hb, sizeof hb);
    printf("%s: GGUF v%u, %s, %" PRIu64 " tensors, %" PRIu64 " metadata keys\n", path, g.version, hb,
           g.n_tensors, g.n_kv);
    char *arch = NULL;
    gguf_get_strdup(&g, "general.architecture", &arch, &err);
    print_kv_if(&g, "general.name", "name");
    printf("  %-22s %s\n", "architecture", arch ? arch : "(none)");
    static const char *const keys[][2] = {
        { "context_length", "context length" }, { "embedding_length", "embedding length" },
        { "block_count", "layers" }, { "feed_forward_length", "feed-forward length" },
        { "attention.head_count", "heads" }, { "attention.head_count_kv", "kv heads" },
        { "rope.dimension_count", "rope dims" }, { "rope.freq_base", "rope base" },
        { "attention.layer_norm_rms_epsilon", "rms epsilon" }, { "vocab_size", "vocab size" },
    };
    for (size_t i = 0; arch && i < sizeof keys / sizeof keys[0]; i++) {
        char k[128];
        snprintf(k, sizeof k, "%s.%s", arch, keys[i][0]);
        print_kv_if(&g, k, keys[i][1]);
    }
    if (arch) print_extras(&g, arch);
    print_model_view(path);
    int rc = 0;
    if (kv_sizes) rc = print_kv_sizes(&g, arch ? arch : "llama");
    char arch_name[64];   // for the chat template of a file without one
    snprintf(arch_name, sizeof arch_name, "%s", arch ? arch : "");
    free(arch);
    if (rc) { gguf_close(&g); return rc; }
    // tensor type mix: tensors, bytes, bits per weight and share of the weights per type, then
    // the bits per weight of the whole file's tensor data
    uint64_t count[WT_COUNT] = {0}, bytes[WT_COUNT] = {0}, elems[WT_COUNT] = {0}, params = 0, all_bytes = 0;
    for (uint64_t i = 0; i < g.n_tensors; i++) {
        count[g.tensors[i].type]++;
        bytes[g.tensors[i].type] += g.tensors[i].n_bytes;
        elems[g.tensors[i].type] += g.tensors[i].n_elements;
        params += g.tensors[i].n_elements;
        all_bytes += g.tensors[i].n_bytes;
    }
    printf("  %-22s %.3f M\n", "parameters", (double)params / 1e6);
    printf("  tensor types:\n");
    for (int t = 0; t < WT_COUNT; t++) {
        if (!count[t]) continue;
        human_bytes(bytes[t], hb, sizeof hb);
        printf("    %-8s %5" PRIu64 " tensors %12s  %5.2f bits/weight %5.1f%% of weights%s\n", wtype_name((uint32_t)t),
               count[t], hb, wtype_bpw((uint32_t)t), params ? 100.0 * (double)elems[t] / (double)params : 0.0,
               wtype_get((uint32_t)t)->to_f32 ? "" : "  (not supported yet)");
    }
    if (params) printf("  %-22s %.2f (all tensors)\n", "bits per weight", (double)all_bytes * 8.0 / (double)params);
    // tokenizer: one that does not load (unsupported or malformed) is listed as refused, and
    // the command ends with its one-line error and status 1 after the rest of the listing
    errbuf tok_err = {{0}};
    if (gguf_find_kv(&g, "tokenizer.ggml.model")) {
        tokenizer *tok = tokenizer_load(&g, &tok_err);
        if (tok) {
            printf("  tokenizer: %s (pre: %s), %d tokens, bos %d, eos %d, add_bos %s\n",
                   tokenizer_model_name(tok), tokenizer_pre_name(tok), tokenizer_n_vocab(tok),
                   tokenizer_bos(tok), tokenizer_eos(tok), tokenizer_add_bos(tok) ? "yes" : "no");
            tokenizer_free(tok);
        } else {
            printf("  tokenizer: refused (the error is on stderr)\n");
        }
    } else {
        printf("  tokenizer: (none)\n");
    }
    char *tmpl = NULL;
    gguf_get_strdup(&g, "tokenizer.chat_template", &tmpl, &err);
    bool unrecognised;
    const chat_template *ct = chat_template_for_file(tmpl, arch_name, &unrecognised);
    printf("  chat template: %s%s\n", ct->name,
           tmpl ? (unrecognised ? " (tokenizer.chat_template not recognised)" : "")
                : strcmp(ct->name, "plain") ? " (no template in file: the architecture's)" : " (no template in file)");
    free(tmpl);
    if (all_kv) {
        printf("  metadata:\n");
        for (uint64_t i = 0; i < g.n_kv; i++) {
            char buf[512];
            gguf_kv_format(&g.kv[i], buf, sizeof buf);
            printf("    %-40s %-6s %s\n", g.kv[i].key, gguf_vtype_name(g.kv[i].type), buf);
        }
    }
    if (tensors) {
        printf("  tensors:\n");
        for (uint64_t i = 0; i < g.n_tensors; i++) {
            const gguf_tensor *t = &g.tensors[i];
            printf("    %-32s %-6s [", t->name, wtype_name(t->type));
            for (uint32_t d = 0; d < t->n_dims; d++) printf("%s%" PRIu64, d ? ", " : "", t->ne[d]);
            printf("]\n");
        }
    }
    gguf_close(&g);
    if (tok_err.msg[0]) { fprintf(stderr, "cabin info: %s\n", tok_err.msg); return 1; }
    return 0;
}

typedef struct tokenize_opts { const char *model, *text; bool no_bos, pieces, no_special; } tokenize_opts;

#define TO(field) offsetof(tokenize_opts, field)
static const opt_def TOKENIZE_OPTS[] = {
    { "TEXT", NULL, OPT_POS, TO(text), NULL, "the text", NULL, NULL, NULL },
    { "--model", "-m", OPT_STR, TO(model), "FILE", "GGUF model", "$CABIN_MODEL or " CABIN_DEFAULT_MODEL, NULL, NULL },
    { "--no-bos", NULL, OPT_FLAG, TO(no_bos), NULL, "do not add BOS/EOS even where the model asks for them", NULL, NULL, NULL },
    { "--pieces", NULL, OPT_FLAG, TO(pieces), NULL, "print id:'piece' pairs, one per line", NULL, NULL, NULL },
    { "--no-special", NULL, OPT_FLAG, TO(no_special), NULL, "treat special-token texts like <|im_start|> as plain text", NULL, NULL, NULL },
};

static const cmd_spec TOKENIZE_SPEC = {
    "cabin tokenize", "cabin tokenize [-m MODEL] [--no-bos] [--pieces] [--no-special] TEXT",
    "Prints the token ids of TEXT on one line, space-separated.\n",
};

int cmd_tokenize(int argc, char **argv) {
    tokenize_opts o = {0};
    opt_table own = OPT_TABLE(TOKENIZE_OPTS, &o);
    int prc = opts_parse(&TOKENIZE_SPEC, &own, 1, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    const char *path = o.model, *text = o.text;
    bool no_bos = o.no_bos, pieces = o.pieces, no_special = o.no_special;
    if (!text) { fprintf(stderr, "cabin tokenize: no text given (see cabin tokenize --help)\n"); return 2; }
    if (!path) path = getenv("CABIN_MODEL") ? getenv("CABIN_MODEL") : CABIN_DEFAULT_MODEL;
    gguf_file g;
    errbuf err = {{0}};
    if (gguf_open(&g, path, &err)) { fprintf(stderr, "cabin tokenize: %s\n", err.msg); return 1; }
    tokenizer *tok = tokenizer_load(&g, &err);
    if (!tok) { fprintf(stderr, "cabin tokenize: %s\n", err.msg); gguf_close(&g); return 1; }
    size_t len = strlen(text);
    int32_t cap = (int32_t)len + 16;
    int32_t *ids = xmalloc((size_t)cap * sizeof(int32_t));
    int32_t n = tokenizer_encode(tok, text, len, !no_bos, !no_special, ids, cap);
    if (n < 0) {
        cap = -n;
        ids = xrealloc(ids, (size_t)cap * sizeof(int32_t));
        n = tokenizer_encode(tok, text, len, !no_bos, !no_special, ids, cap);
    }
    for (int32_t i = 0; i < n; i++) {
        if (pieces) {
            char buf[256];
            int l = tokenizer_piece(tok, ids[i], true, buf, sizeof buf);
            if (l > (int)sizeof buf) l = sizeof buf;
            printf("%d '%.*s'\n", ids[i], l, buf);
        } else {
            printf("%s%d", i ? " " : "", ids[i]);
        }
    }
    if (!pieces) printf("\n");
    free(ids);
    tokenizer_free(tok);
    gguf_close(&g);
    return 0;
}
