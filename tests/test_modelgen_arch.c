// Every architecture `cabin make-model` writes (engine/modelgen.c), with the rope scalings files
// carry, run by cabin and checked against tests/forward64.h, an independent float64 forward pass
// over the same dequantized weights:
//   - the file loads (model_load refuses a key or tensor it would not use) with the
//     hyperparameters asked for;
//   - the scalar path's last-position logits of a 20-token prompt are within 1e-3 of the largest
//     logit of the float64 pass's;
//   - the fast CPU path (F16 KV), the fast path with a Q8 KV cache (160 tokens, so keys and values
//     fold into the quantized store, the last 10 decoded one by one) and, when a Vulkan device is
//     present, the Vulkan backend (F16 and Q8 KV) are within 0.003 (F32/F16 weights) or 0.025
//     (quantized) of the largest scalar logit;
//   - a model with window layers runs again with them kept in rings of window + 11 rows (passes
//     of at most 12 tokens: model_forward splits the prefill), on the fast CPU path with an F16
//     cache and on Vulkan with a Q8 one, against the scalar F32 run of the long prompt (0.025);
//   - each scaling, window and context choice changes the float64 logits (the check sees it);
//   - bad combinations of options are refused in one line.
// The prompt's tokens come from tests/rng.h's seed.
#include "test.h"
#include "rng.h"
#include "forward64.h"
#include "model_util.h"
#include "engine/modelgen.h"
#include "engine/wtype.h"

#include <sys/stat.h>
#include <unistd.h>

#define N_PROMPT 20     // tokens compared with the float64 pass
#define N_LONG 160      // tokens of the quantized-KV runs
#define N_DECODE 10     // of them, decoded one at a time at the end
#define KV_RECENT 8     // F16 slots the quantized cache keeps before folding
#define RUN_CTX 192     // the runs' context unless a case says otherwise
#define RING_BATCH 12   // the most tokens a pass appends in the ring runs

typedef struct arch_case {
    const char *name;
    void (*set)(modelgen_opts *o);     // the file, from modelgen_defaults()
    void (*plain)(modelgen_opts *o);   // the same weights without the feature the case checks
                                       // (NULL: none): its logits must differ
    int run_ctx;                       // 0: RUN_CTX
    int plain_ctx;                     // with plain NULL: the same file run at this context must
                                       // give other logits (longrope: short against long)
} arch_case;

// ---- the cases ----

static void small(modelgen_opts *o, const char *arch, uint32_t type, uint64_t seed) {
    o->arch = arch;
    o->type = o->embd_type = type;
    o->seed = seed;
}

// Llama 3.1's per-pair divisors over an original context of 32: pair 0 kept, pair 1 mixed,
// pairs 2..7 slowed 8 times (rope dims 16)
static void llama3(modelgen_opts *o) {
    small(o, "llama", WT_F32, 11);
    o->n_layer = 3;
    o->rope_scaling = "llama3";
    o->rope_orig_ctx = 32;
}
static void no_scaling(modelgen_opts *o) {
    o->rope_scaling = NULL;
    o->rope_factor = 0;
    o->rope_orig_ctx = 0;
    o->rope_low_freq = o->rope_high_freq = 0;
}
static void llama3_plain(modelgen_opts *o) { llama3(o); no_scaling(o); }

// YaRN x4 over an original context of 32: pairs 0..2 ramp, the rest are interpolated
static void llama_yarn(modelgen_opts *o) {
    small(o, "llama", WT_F16, 12);
    o->dim = 96; o->n_head = 6; o->n_kv_head = 2; o->ffn_dim = 256;
    o->rope_scaling = "yarn";
    o->rope_factor = 4;
    o->rope_orig_ctx = 32;
}
static void llama_yarn_plain(modelgen_opts *o) { llama_yarn(o); no_scaling(o); }

static void qwen2_yarn(modelgen_opts *o) {
    small(o, "qwen2", WT_Q4_0, 13);
    o->dim = 128; o->n_head = 4; o->n_kv_head = 4; o->ffn_dim = 256;
    o->tied = true;
    o->rope_base = 1000000.0f;
    o->rope_scaling = "yarn";
    o->n_ctx = 256;
    o->rope_orig_ctx = 16;
}
static void qwen2_yarn_plain(modelgen_opts *o) { qwen2_yarn(o); no_scaling(o); }

// head size 32 with dim 64 and 4 heads: q is 128 wide
static void qwen3(modelgen_opts *o) {
    small(o, "qwen3", WT_Q8_0, 14);
    o->n_layer = 3;
    o->head_dim = 32;
    o->rope_base = 1000000.0f;
    o->rms_eps = 1e-6f;
}

// longrope over an original context of 256 in a file of 4096: long factors 1..16
static void phi3_longrope(modelgen_opts *o) {
    small(o, "phi3", WT_F16, 15);
    o->dim = 96; o->n_head = 3; o->n_kv_head = 3; o->ffn_dim = 160;
    o->n_ctx = 4096;
    o->rope_scaling = "longrope";
    o->rope_orig_ctx = 256;
}

// 6 layers, window 5, every 3rd layer global (2, 5): a 20-token prompt crosses the windows
static void gemma3_window(modelgen_opts *o) {
    small(o, "gemma3", WT_F32, 16);
    o->n_layer = 6;
    o->head_dim = 32;
    o->rope_base = 1000000.0f;
    o->rms_eps = 1e-6f;
    o->swa_window = 5;
    o->swa_pattern = 3;
    o->rope_base_swa = 10000.0f;
}
static void gemma3_wide(modelgen_opts *o) { gemma3_window(o); o->swa_window = 64; }

// Gemma 3 4B's linear x8 on the global layer (1 of 2; layer 0 a window layer). Two layers: the
// fast path rounds the input of every Q8_0 matrix to 8 bits, and on random weights that error
// grows with depth (3 to 6 layers of Q8_0 Gemma reach 0.02-0.035 of the largest logit over 60
// prompts, past the quantized tolerance; 2 layers stay near 0.015)
static void gemma3_linear(modelgen_opts *o) {
    gemma3_window(o);
    small(o, "gemma3", WT_Q8_0, 17);
    o->n_layer = 2;
    o->swa_pattern = 2;
    o->dim = 128; o->n_head = 4; o->n_kv_head = 1; o->ffn_dim = 256;
    o->rope_scaling = "linear";
    o->rope_factor = 8;
}
static void gemma3_linear_plain(modelgen_opts *o) { gemma3_linear(o); no_scaling(o); }

static void gemma3_yarn(modelgen_opts *o) {
    gemma3_window(o);
    small(o, "gemma3", WT_F16, 18);
    o->n_layer = 4;
    o->swa_pattern = 2;
    o->rope_scaling = "yarn";
    o->rope_factor = 8;
    o->rope_orig_ctx = 16;
}
static void gemma3_yarn_plain(modelgen_opts *o) { gemma3_yarn(o); no_scaling(o); }

// Gemma 2: every other layer a window layer of 5, caps low enough to bite on random weights (the
// defaults 50 and 30 do not); its window layers turn by the model's rope, scaled as the others
static void gemma2_caps(modelgen_opts *o) {
    small(o, "gemma2", WT_F32, 19);
    o->n_layer = 4;
    o->head_dim = 32;
    o->rms_eps = 1e-6f;
    o->swa_window = 5;
    o->attn_softcap = 1.5f;
    o->final_softcap = 2.0f;
}
static void gemma2_no_caps(modelgen_opts *o) { gemma2_caps(o); o->attn_softcap = o->final_softcap = -1.0f; }
static void gemma2_linear(modelgen_opts *o) {
    gemma2_caps(o);
    small(o, "gemma2", WT_F16, 20);
    o->n_layer = 2;
    o->attn_softcap = 0;   // the defaults, 50 and 30
    o->final_softcap = 0;
    o->rope_scaling = "linear";
    o->rope_factor = 8;
}
static void gemma2_linear_plain(modelgen_opts *o) { gemma2_linear(o); no_scaling(o); }

static const arch_case CASES[] = {
    { "llama f32 llama3 factors", llama3, llama3_plain, 0, 0 },
    { "llama f16 yarn", llama_yarn, llama_yarn_plain, 0, 0 },
    { "qwen2 q4_0 yarn", qwen2_yarn, qwen2_yarn_plain, 0, 0 },
    { "qwen3 q8_0 head 32", qwen3, NULL, 0, 0 },
    { "phi3 f16 longrope (long)", phi3_longrope, NULL, 512, RUN_CTX },
    { "phi3 f16 longrope (short)", phi3_longrope, NULL, RUN_CTX, 0 },
    { "gemma3 f32 window 5/3", gemma3_window, gemma3_wide, 0, 0 },
    { "gemma3 q8_0 linear x8", gemma3_linear, gemma3_linear_plain, 0, 0 },
    { "gemma3 f16 yarn x8", gemma3_yarn, gemma3_yarn_plain, 0, 0 },
    { "gemma2 f32 caps 1.5/2 window 5", gemma2_caps, gemma2_no_caps, 0, 0 },
    { "gemma2 f16 linear x8", gemma2_linear, gemma2_linear_plain, 0, 0 },
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

// ---- runs ----

static char tmpdir[256];

typedef struct run { backend *b; bool own_b; model *m; kv_cache kv; forward_ctx fc; } run;

// A run of m on b (created here from kernels when b is NULL) with a cache of format kvf; with
// ring_batch > 0, its window layers kept in rings for passes of that many tokens.
static int run_open(run *r, model *m, backend *b, const char *kernels, enum kv_format kvf, int n_ctx, int ring_batch,
                    errbuf *err) {
    memset(r, 0, sizeof *r);
    r->m = m;
    r->b = b;
    if (!b) {
        r->b = backend_cpu_new(2, kernels, err);
        if (!r->b) return -1;
        r->own_b = true;
    }
    kv_windows win = model_kv_windows(m, ring_batch);
    if (model_prepare_backend(m, r->b, err) ||
        kv_cache_init_windows(&r->kv, kvf, KV_RECENT, m->hp.n_layer, n_ctx, m->hp.n_kv_head * m->hp.head_dim,
                              ring_batch > 0 ? &win : NULL, err) ||
        r->b->kv_prepare(r->b, &r->kv, err))
        return -1;
    return forward_ctx_init(&r->fc, r->b, m, N_LONG, N_LONG, err);
}

static void run_close(run *r) {
    forward_ctx_free(&r->fc);
    if (r->kv.k && r->b) r->b->kv_release(r->b, &r->kv);
    kv_cache_free(&r->kv);
    if (r->b) model_release_backend(r->m, r->b);
    if (r->own_b) backend_destroy(r->b);
    memset(r, 0, sizeof *r);
}

// The last logits of toks[0..n): one batch, then (decode > 0) the last `decode` tokens one by one.
static int run_logits(run *r, const int32_t *toks, int n, int decode, float *out, errbuf *err) {
    kv_cache_clear(&r->kv);
    int first = n - decode;
    if (model_forward(&r->fc, &r->kv, toks, first, false, out, err)) return -1;
    for (int i = first; i < n; i++)
        if (model_forward(&r->fc, &r->kv, &toks[i], 1, false, out, err)) return -1;
    return 0;
}

// max |a - b| over n, as a fraction of the largest |b| (a NaN anywhere gives NaN: the check fails).
static double rel_diff(const double *a, const double *b, int n) {
    double worst = 0, big = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= worst)) worst = d;
        if (fabs(b[i]) > big) big = fabs(b[i]);
    }
    return big > 0 ? worst / big : worst;
}

// The logits a run gives, widened for rel_diff.
static const double *wide(const float *x, double *out, int n) {
    for (int i = 0; i < n; i++) out[i] = x[i];
    return out;
}

static int write_case(void (*set)(modelgen_opts *), const char *path, errbuf *err) {
    modelgen_opts o = modelgen_defaults();
    set(&o);
    return modelgen_write(&o, path, err);
}

// What the loader read is what the case asked for.
static void check_hparams(const arch_case *c, const model *m) {
    modelgen_opts o = modelgen_defaults();
    c->set(&o);
    const model_hparams *hp = &m->hp;
    int head = o.head_dim ? o.head_dim : o.dim / o.n_head;
    bool gemma3 = !strcmp(o.arch, "gemma3"), gemma2 = !strcmp(o.arch, "gemma2"), gemma = gemma2 || gemma3;
    CHECK(!strcmp(hp->arch_name, o.arch) && hp->dim == o.dim && hp->n_layer == o.n_layer && hp->n_head == o.n_head &&
          hp->n_kv_head == o.n_kv_head && hp->ffn_dim == o.ffn_dim && hp->head_dim == head && hp->rope_dim == head &&
          hp->n_vocab == o.n_vocab && hp->tied_output == (o.tied || gemma),
          "%s: loaded as %s dim %d, %d layers, %d/%d heads of %d, ffn %d, vocab %d, tied %d", c->name, hp->arch_name,
          hp->dim, hp->n_layer, hp->n_head, hp->n_kv_head, hp->head_dim, hp->ffn_dim, hp->n_vocab, hp->tied_output);
    if (gemma3)
        CHECK(hp->swa_window == o.swa_window && hp->swa_pattern == o.swa_pattern && hp->rope_base_swa == o.rope_base_swa,
              "%s: window %d, pattern %d, base %g", c->name, hp->swa_window, hp->swa_pattern, (double)hp->rope_base_swa);
    if (gemma2) {
        float want_a = o.attn_softcap ? o.attn_softcap : 50.0f, want_f = o.final_softcap ? o.final_softcap : 30.0f;
        CHECK(hp->swa_window == o.swa_window && hp->swa_pattern == 2 && !hp->rope_swa_own &&
              hp->attn_softcap == want_a && hp->final_softcap == want_f,
              "%s: window %d, pattern %d, soft caps %g and %g (want %g, %g)", c->name, hp->swa_window, hp->swa_pattern,
              (double)hp->attn_softcap, (double)hp->final_softcap, (double)want_a, (double)want_f);
    }
    const rope_scaling *s = &hp->rope_scaling;
    const char *rs = o.rope_scaling ? o.rope_scaling : "none";
    const float factor = o.rope_factor ? o.rope_factor : (float)o.n_ctx / (float)o.rope_orig_ctx;   // yarn
    bool ok = !strcmp(rs, "none")       ? s->kind == ROPE_NONE && !s->factors
            : !strcmp(rs, "llama3")     ? s->kind == ROPE_NONE && s->factors && s->factors[0] == 1.0f &&
                                              s->factors[head / 2 - 1] == (o.rope_factor ? o.rope_factor : 8.0f)
            : !strcmp(rs, "linear")     ? s->kind == ROPE_LINEAR && s->factor == o.rope_factor
            : !strcmp(rs, "yarn")       ? s->kind == ROPE_YARN && s->n_ctx_orig == o.rope_orig_ctx && s->factor == factor
            : !strcmp(rs, "longrope")   ? s->kind == ROPE_LONGROPE && s->n_ctx_orig == o.rope_orig_ctx && s->attn_factor > 1.0f &&
                                              s->long_factors && s->short_factors
            : false;
    char desc[256];
    rope_scaling_describe(s, hp->rope_dim, desc, sizeof desc);
    CHECK(ok, "%s: rope scaling '%s' loaded as: %s", c->name, rs, desc);
}

// Prints one line of figures per case: max |diff| / largest logit of each comparison ("-": not run).
static void test_case(const arch_case *c, backend *vk, const int32_t *toks) {
    char path[512], plain_path[512];
    snprintf(path, sizeof path, "%s/case.gguf", tmpdir);
    snprintf(plain_path, sizeof plain_path, "%s/plain.gguf", tmpdir);
    errbuf err = {{0}};
    if (write_case(c->set, path, &err)) { CHECK(0, "%s: %s", c->name, err.msg); return; }
    model *m = NULL;
    if (model_load(&m, path, &err)) { CHECK(0, "%s: %s", c->name, err.msg); return; }
    check_hparams(c, m);
    const int nv = m->hp.n_vocab, n_ctx = c->run_ctx ? c->run_ctx : RUN_CTX;
    const uint32_t wt = m->layers[0].wq.src_type;
    const bool quant = wt != WT_F32 && wt != WT_F16 && wt != WT_BF16;
    const double tol = quant ? 0.025 : 0.003;
    float *scalar = xmalloc((size_t)nv * sizeof(float)), *scalar_long = xmalloc((size_t)nv * sizeof(float));
    float *got = xmalloc((size_t)nv * sizeof(float));
    double *f64 = xmalloc((size_t)nv * sizeof(double)), *other = xmalloc((size_t)nv * sizeof(double));
    double *ref = xmalloc((size_t)nv * sizeof(double)), *ref_long = xmalloc((size_t)nv * sizeof(double));
    double *w = xmalloc((size_t)nv * sizeof(double));
    double d_f64 = -1, d_auto = -1, d_q8 = -1, d_vk = -1, d_vkq8 = -1, d_feature = -1;
    run r;

    // the scalar path, F32 KV: the 20-token prompt against the float64 pass, and the long one
    if (run_open(&r, m, NULL, "scalar", KV_F32, n_ctx, 0, &err) || run_logits(&r, toks, N_PROMPT, 0, scalar, &err) ||
        run_logits(&r, toks, N_LONG, 0, scalar_long, &err)) {
        CHECK(0, "%s: scalar: %s", c->name, err.msg);
        run_close(&r);
        goto out;
    }
    run_close(&r);
    wide(scalar, ref, nv);
    wide(scalar_long, ref_long, nv);
    if (forward64_last_logits(path, toks, N_PROMPT, n_ctx, f64, nv, &err)) {
        CHECK(0, "%s: float64 forward: %s", c->name, err.msg);
    } else {
        d_f64 = rel_diff(ref, f64, nv);
        CHECK(d_f64 <= 1e-3, "%s: scalar vs float64: max diff %.3g of the largest logit (> 1e-3)", c->name, d_f64);
    }

    // the feature changes the numbers: the same weights without it, or the same file at another context
    if (c->plain) {
        if (write_case(c->plain, plain_path, &err) ||
            forward64_last_logits(plain_path, toks, N_PROMPT, n_ctx, other, nv, &err))
            CHECK(0, "%s: plain variant: %s", c->name, err.msg);
        else
            d_feature = rel_diff(other, f64, nv);
        unlink(plain_path);
    } else if (c->plain_ctx) {
        if (forward64_last_logits(path, toks, N_PROMPT, c->plain_ctx, other, nv, &err))
            CHECK(0, "%s: context %d: %s", c->name, c->plain_ctx, err.msg);
        else
            d_feature = rel_diff(other, f64, nv);
    }
    if (c->plain || c->plain_ctx)
        CHECK(d_feature > 0.02, "%s: the scaling/window leaves the float64 logits within %.3g of the largest", c->name,
              d_feature);

    // the fast CPU path, F16 KV (what cabin runs by default)
    if (run_open(&r, m, NULL, "auto", KV_F16, n_ctx, 0, &err) || run_logits(&r, toks, N_PROMPT, 0, got, &err)) {
        CHECK(0, "%s: auto: %s", c->name, err.msg);
    } else {
        d_auto = rel_diff(wide(got, w, nv), ref, nv);
        CHECK(d_auto <= tol, "%s: auto vs scalar: max diff %.3g of the largest logit (> %g)", c->name, d_auto, tol);
    }
    run_close(&r);
    // the fast path with a Q8 cache: prefill, then decode, against the scalar F32 KV
    if (run_open(&r, m, NULL, "auto", KV_Q8, n_ctx, 0, &err) || run_logits(&r, toks, N_LONG, N_DECODE, got, &err)) {
        CHECK(0, "%s: auto kv q8: %s", c->name, err.msg);
    } else {
        CHECK(r.kv.nq[0] > 0, "%s: kv q8: no key was folded into the quantized store", c->name);
        d_q8 = rel_diff(wide(got, w, nv), ref_long, nv);
        CHECK(d_q8 <= 0.025, "%s: auto kv q8 vs scalar f32 kv: max diff %.3g of the largest logit (> 0.025)", c->name, d_q8);
    }
    run_close(&r);

    // Vulkan, F16 KV and Q8 KV
    if (vk) {
        if (run_open(&r, m, vk, NULL, KV_F16, n_ctx, 0, &err) || run_logits(&r, toks, N_PROMPT, 0, got, &err)) {
            CHECK(0, "%s: vulkan: %s", c->name, err.msg);
        } else {
            d_vk = rel_diff(wide(got, w, nv), ref, nv);
            CHECK(d_vk <= tol, "%s: vulkan vs scalar: max diff %.3g of the largest logit (> %g)", c->name, d_vk, tol);
        }
        run_close(&r);
        if (run_open(&r, m, vk, NULL, KV_Q8, n_ctx, 0, &err) || run_logits(&r, toks, N_LONG, N_DECODE, got, &err)) {
            CHECK(0, "%s: vulkan kv q8: %s", c->name, err.msg);
        } else {
            d_vkq8 = rel_diff(wide(got, w, nv), ref_long, nv);
            CHECK(d_vkq8 <= 0.025, "%s: vulkan kv q8 vs scalar f32 kv: max diff %.3g of the largest logit (> 0.025)",
                  c->name, d_vkq8);
        }
        run_close(&r);
    }
    // window layers in rings: the fast path with an F16 cache (its Q8 cache is checked above, and
    // with the 8-bit activations of quantized weights the two roundings together come near the
    // tolerance), Vulkan with a Q8 one
    double d_ring = -1, d_vkring = -1;
    if (m->layer_swa) {
        struct { backend *b; const char *kernels; enum kv_format f; double *d; const char *what; } rr[2] = {
            { NULL, "auto", KV_F16, &d_ring, "auto rings" }, { vk, NULL, KV_Q8, &d_vkring, "vulkan kv q8 rings" } };
        for (int i = 0; i < 2; i++) {
            if (i == 1 && !vk) break;
            if (run_open(&r, m, rr[i].b, rr[i].kernels, rr[i].f, n_ctx, RING_BATCH, &err) ||
                run_logits(&r, toks, N_LONG, N_DECODE, got, &err)) {
                CHECK(0, "%s: %s: %s", c->name, rr[i].what, err.msg);
            } else {
                CHECK(r.kv.ring_rows == m->hp.swa_window + RING_BATCH - 1 && r.kv.ring_rows < N_LONG,
                      "%s: %s: rings of %d rows, want %d (< %d tokens: they wrap)", c->name, rr[i].what, r.kv.ring_rows,
                      m->hp.swa_window + RING_BATCH - 1, N_LONG);
                *rr[i].d = rel_diff(wide(got, w, nv), ref_long, nv);
                CHECK(*rr[i].d <= 0.025, "%s: %s vs scalar f32 kv: max diff %.3g of the largest logit (> 0.025)", c->name,
                      rr[i].what, *rr[i].d);
            }
            run_close(&r);
        }
    }
    char f[8][16];
    const double figs[8] = { d_f64, d_auto, d_q8, d_vk, d_vkq8, d_ring, d_vkring, d_feature };
    for (int i = 0; i < 8; i++) {
        if (figs[i] < 0) snprintf(f[i], sizeof f[i], "-");
        else snprintf(f[i], sizeof f[i], "%.2g", figs[i]);
    }
    printf("note: %-26s scalar/f64 %-7s auto %-7s kv-q8 %-7s vulkan %-7s vulkan-kv-q8 %-7s rings: auto %-7s vulkan-kv-q8 %-7s "
           "without the feature %s\n", c->name, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]);
out:
    free(scalar);
    free(scalar_long);
    free(got);
    free(f64);
    free(other);
    free(ref);
    free(ref_long);
    free(w);
    model_free(m);
    unlink(path);
}

// ---- refusals ----

static void expect_refused(void (*set)(modelgen_opts *), const char *want, const char *what) {
    modelgen_opts o = modelgen_defaults();
    set(&o);
    errbuf err = {{0}};
    int rc = modelgen_check(&o, &err);
    CHECK(rc < 0 && strstr(err.msg, want) && !strchr(err.msg, '\n'), "%s: want one line with '%s', got rc %d '%s'",
          what, want, rc, err.msg);
}
static void window_on_llama(modelgen_opts *o) { o->swa_window = 5; }
static void softcap_on_gemma3(modelgen_opts *o) { o->arch = "gemma3"; o->attn_softcap = 20; }
static void pattern_on_gemma2(modelgen_opts *o) { o->arch = "gemma2"; o->swa_pattern = 3; }
static void longrope_on_llama(modelgen_opts *o) { o->rope_scaling = "longrope"; }
static void llama3_on_qwen3(modelgen_opts *o) { o->arch = "qwen3"; o->rope_scaling = "llama3"; }
static void factor_alone(modelgen_opts *o) { o->rope_factor = 4; }
static void odd_head(modelgen_opts *o) { o->head_dim = 15; }
static void unknown_scaling(modelgen_opts *o) { o->rope_scaling = "dynamic"; }
static void low_freq_on_yarn(modelgen_opts *o) { o->rope_scaling = "yarn"; o->rope_low_freq = 2; }

static void test_refusals(void) {
    expect_refused(window_on_llama, "gemma's (gemma3, gemma2); llama has none", "a window on llama");
    expect_refused(softcap_on_gemma3, "soft caps are gemma2's; gemma3 has none", "a soft cap on gemma3");
    expect_refused(pattern_on_gemma2, "window layers are gemma3's; gemma2 has none", "a window pattern on gemma2");
    expect_refused(longrope_on_llama, "longrope is phi3's", "longrope on llama");
    expect_refused(llama3_on_qwen3, "for llama files, not qwen3", "llama3 factors on qwen3");
    expect_refused(factor_alone, "without a rope scaling", "a rope factor alone");
    expect_refused(odd_head, "head size 15 is odd", "an odd head size");
    expect_refused(unknown_scaling, "unknown rope scaling 'dynamic'", "an unknown scaling");
    expect_refused(low_freq_on_yarn, "llama3's rope scaling only", "low_freq_factor on yarn");
}

int main(void) {
    test_seed();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cabin-test-modelgen-%d", (int)getpid());
    if (mkdir(tmpdir, 0700) != 0) { CHECK(0, "mkdir %s", tmpdir); return test_finish(); }
    int32_t toks[N_LONG];
    for (int i = 0; i < N_LONG; i++) toks[i] = 3 + rng_int(509);   // vocab 512: no <unk>, <s>, </s>
    test_refusals();
    errbuf err = {{0}};
    backend *vk = backend_create(&(backend_opts){ .name = "vulkan" }, &err);
    if (!vk) SKIP("the Vulkan rows: %s", err.msg);
    for (int i = 0; i < N_CASES; i++) test_case(&CASES[i], vk, toks);
    if (vk) backend_destroy(vk);
    rmdir(tmpdir);
    return test_finish();
}
