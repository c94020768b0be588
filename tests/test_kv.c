// KV cache compression: quantization error bounds, attention over quantized caches against the
// F32 reference, CPU vs Vulkan with keys rotated at attention, eviction policies on a generated
// model run past its trained context, live format switches, and memory accounting; then the
// Vulkan backend's cache against the CPU's (q8/q4, every policy, live switches, one-line errors)
// through sessions and `cabin logits`.
#include <string.h>

#include "engine/modelgen.h"
#include "engine/session.h"
#include "tests/model_util.h"
#include "tests/test.h"
#include "tests/rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

// Quantize -> dequantize: a quantized element is off by at most half a step of its group,
// step = (max - min) / qmax (plus f16 rounding of scale and min: a factor 1 + 2^-9 and 2^-10 of
// the group's largest magnitude); the recent window is F16 (relative 2^-11).
static void test_roundtrip(enum kv_format f) {
    const int D = 64, N = 400, recent = 8;
    kv_cache kv;
    errbuf err = {{0}};
    if (kv_cache_init_ex(&kv, f, recent, 1, 512, D, &err)) { CHECK(0, "%s", err.msg); return; }
    float *K = malloc((size_t)N * D * sizeof(float)), *V = malloc((size_t)N * D * sizeof(float));
    for (int s = 0; s < N; s++)
        for (int c = 0; c < D; c++) {
            K[s * D + c] = rng_uniform() * (1.0f + (float)(c % 7)) + (c % 5 == 0 ? 3.0f : 0.0f);   // channel outliers
            V[s * D + c] = rng_uniform() * 0.5f;
        }
    for (int s = 0; s < N; s++) kv_cache_put(&kv, 0, s, K + s * D, V + s * D);
    kv.n_used = N;
    float *Kr = malloc((size_t)N * D * sizeof(float)), *Vr = malloc((size_t)N * D * sizeof(float));
    kv_cache_read(&kv, 0, 0, 0, N, 0, D, Kr, D, NULL);
    kv_cache_read(&kv, 0, 1, 0, N, 0, D, Vr, D, NULL);
    int qmax = f == KV_Q4 ? 15 : 255, nq = kv.nq[0], nqv = kv.nqv[0];
    CHECK(nq > N - recent - KV_GROUP && nq <= N - recent && nq % KV_GROUP == 0 && nqv == N - recent,
          "%s: %d key and %d value slots quantized of %d", kv_format_name(f), nq, nqv, N);
    double worst_k = 0, worst_v = 0;
    for (int s = 0; s < N; s++)
        for (int c = 0; c < D; c++) {
            double bk, bv;
            if (s < nq) {
                int g0 = s / KV_GROUP * KV_GROUP;
                float lo = INFINITY, hi = -INFINITY, big = 0;
                for (int i = g0; i < g0 + KV_GROUP; i++) { float x = K[i * D + c]; lo = fminf(lo, x); hi = fmaxf(hi, x); big = fmaxf(big, fabsf(x)); }
                bk = 0.5 * (hi - lo) / qmax * (1 + 1.0 / 512) + big / 1024.0 + 1e-6;
            } else {
                bk = fabs(K[s * D + c]) / 2048.0 + 1e-7;
            }
            if (s < nqv) {
                int gv = kv.gv, v0 = c / gv * gv;
                float lo = INFINITY, hi = -INFINITY, big = 0;
                for (int i = v0; i < v0 + gv; i++) { float x = V[s * D + i]; lo = fminf(lo, x); hi = fmaxf(hi, x); big = fmaxf(big, fabsf(x)); }
                bv = 0.5 * (hi - lo) / qmax * (1 + 1.0 / 512) + big / 1024.0 + 1e-6;
            } else {
                bv = fabs(V[s * D + c]) / 2048.0 + 1e-7;
            }
            worst_k = fmax(worst_k, fabs(Kr[s * D + c] - K[s * D + c]) / bk);
            worst_v = fmax(worst_v, fabs(Vr[s * D + c] - V[s * D + c]) / bv);
        }
    CHECK(worst_k <= 1.0, "%s keys: error reaches %.3f of the bound", kv_format_name(f), worst_k);
    CHECK(worst_v <= 1.0, "%s values: error reaches %.3f of the bound", kv_format_name(f), worst_v);
    // convert to F32 keeps the dequantized contents exactly
    if (kv_cache_convert(&kv, KV_F32, 0, &err)) CHECK(0, "%s", err.msg);
    float *K2 = malloc((size_t)N * D * sizeof(float));
    kv_cache_read(&kv, 0, 0, 0, N, 0, D, K2, D, NULL);
    CHECK(memcmp(K2, Kr, (size_t)N * D * sizeof(float)) == 0, "%s -> f32 conversion keeps the contents", kv_format_name(f));
    free(K2); free(K); free(V); free(Kr); free(Vr);
    kv_cache_free(&kv);
}

// A window layer's ring (layer 1 of 3; window 6, passes of 5: rings of 10 rows) under every
// format: it holds the newest 10 slots exactly as a whole F16/F32 layer would, keeps the
// allocation the formula gives, and keeps its newest slots through a compaction (to the rows of
// their new slots), a format conversion and a copy.
static void test_ring(enum kv_format f) {
    const int D = 16, N = 37, W = 6, B = 5, R = W + B - 1, L = 3;
    const uint8_t layers[3] = { 0, 1, 0 };
    kv_windows w = { layers, W, B };
    kv_cache kv, copy;
    errbuf err = {{0}};
    const char *fn = kv_format_name(f);
    if (kv_cache_init_windows(&kv, f, 4, L, 64, D, &w, &err)) { CHECK(0, "ring %s: %s", fn, err.msg); return; }
    CHECK(kv.ring_rows == R && kv_layer_ring(&kv, 1) == R && !kv_layer_ring(&kv, 0) && kv_cache_max_batch(&kv) == B &&
          kv_layer_format(&kv, 1) == (f == KV_F32 ? KV_F32 : KV_F16),
          "ring %s: %d rows (want %d), max batch %d (want %d)", fn, kv.ring_rows, R, kv_cache_max_batch(&kv), B);
    uint64_t want = kv_format_cache_bytes(f, 4, 2, 64, D) + 2ull * R * kv.row_bytes;
    CHECK(kv_cache_bytes(&kv) == want && kv_windows_cache_bytes(f, 4, L, 64, D, &w) == want,
          "ring %s: %llu bytes allocated, want two whole layers and a ring: %llu", fn,
          (unsigned long long)kv_cache_bytes(&kv), (unsigned long long)want);
    float *K = xmalloc(sizeof(float) * N * D), *V = xmalloc(sizeof(float) * N * D);
    for (int i = 0; i < N * D; i++) { K[i] = rng_uniform(); V[i] = rng_uniform(); }
    for (int l = 0; l < L; l++)
        for (int t = 0; t < N; t++) kv_cache_put(&kv, l, t, K + t * D, V + t * D);
    kv.n_used = N;
    CHECK(kv_cache_used_bytes(&kv) >= 2ull * R * kv.row_bytes, "ring %s: used bytes", fn);
    // the newest R slots read back as the ring's element type rounds them
    float got[2][16];
    double worst = 0;
    for (int t = N - R; t < N; t++) {
        kv_cache_read(&kv, 1, 0, t, t + 1, 0, D, got[0], D, NULL);
        kv_cache_read(&kv, 1, 1, t, t + 1, 0, D, got[1], D, NULL);
        for (int c = 0; c < D; c++) {
            worst = fmax(worst, fabs(got[0][c] - K[t * D + c]));
            worst = fmax(worst, fabs(got[1][c] - V[t * D + c]));
        }
    }
    CHECK(worst <= (f == KV_F32 ? 0.0 : 1.0 / 2048), "ring %s: the newest %d slots read back within %g", fn, R, worst);
    // a copy, then a conversion: the ring's newest slots stay, bit for bit
    float before[10][16], after[10][16];
    kv_cache_read(&kv, 1, 0, N - R, N, 0, D, before[0], D, NULL);
    if (kv_cache_init_windows(&copy, f, 4, L, 64, D, &w, &err) || kv_cache_copy(&copy, &kv, &err)) {
        CHECK(0, "ring %s: copy: %s", fn, err.msg);
    } else {
        kv_cache_read(&copy, 1, 0, N - R, N, 0, D, after[0], D, NULL);
        CHECK(!memcmp(before, after, sizeof before), "ring %s: a copy keeps the ring", fn);
        kv_cache_free(&copy);
    }
    enum kv_format to = f == KV_Q4 ? KV_F16 : KV_Q4;
    if (kv_cache_convert(&kv, to, 0, &err)) { CHECK(0, "ring %s -> %s: %s", fn, kv_format_name(to), err.msg); goto out; }
    kv_cache_read(&kv, 1, 0, N - R, N, 0, D, after[0], D, NULL);
    CHECK(kv.ring_rows == R && kv_layer_ring(&kv, 1) == R && (f == KV_F32 || !memcmp(before, after, sizeof before)),
          "ring %s -> %s: the ring and its newest slots stay", fn, kv_format_name(to));
    // compaction to the newest 12 slots (as a policy keeps them on a window layer): new slot i
    // holds old slot N - 12 + i, for the newest R of them
    int32_t keep[12];
    for (int i = 0; i < 12; i++) keep[i] = N - 12 + i;
    kv_cache_read(&kv, 1, 1, N - R, N, 0, D, before[0], D, NULL);
    for (int l = 0; l < L; l++) kv_cache_compact_layer(&kv, l, keep, 12);
    kv.n_used = 12;
    kv_cache_read(&kv, 1, 1, 12 - R, 12, 0, D, after[0], D, NULL);
    CHECK(!memcmp(before, after, sizeof before), "ring %s: compaction moves the newest slots to their new rows", fn);
    // a kept slot the ring no longer holds (0: it holds 2..11) comes back as zeros, one it holds
    // (11) as it was
    keep[0] = 0;
    keep[1] = 11;
    kv_cache_read(&kv, 1, 1, 11, 12, 0, D, before[0], D, NULL);
    kv_cache_compact_layer(&kv, 1, keep, 2);
    kv_cache_read(&kv, 1, 1, 0, 2, 0, D, after[0], D, NULL);
    bool zero = true;
    for (int c = 0; c < D; c++) zero = zero && after[0][c] == 0.0f;
    CHECK(zero && !memcmp(after[1], before[0], sizeof after[1]),
          "ring %s: a slot the ring lost comes back as zeros, one it held as it was", fn);
out:
    free(K);
    free(V);
    kv_cache_free(&kv);
}

// Attention over (n_past + n) random slots: every format against F32 (keys rotated by slot).
static void attention_run(backend *b, enum kv_format f, int n_head, int n_kv, int hd, int n_past, int n,
                          const float *K, const float *V, const float *Q, float *out) {
    int kv_dim = n_kv * hd, total = n_past + n;
    kv_cache kv;
    errbuf err = {{0}};
    if (kv_cache_init_ex(&kv, f, 16, 1, total + 4, kv_dim, &err) || b->kv_prepare(b, &kv, &err)) {
        CHECK(0, "%s", err.msg);
        kv_cache_free(&kv);
        return;
    }
    rope_freqs fr;
    rope_freqs_plain(&fr, hd, 10000.0f);
    kv_shape sh = { n_head, n_kv, hd, &fr, NULL, NULL, false };
    kv_cache_set_shape(&kv, &sh, &err);
    bk_act *ka = b->act_new(b, total, kv_dim), *va = b->act_new(b, total, kv_dim);
    bk_act *qa = b->act_new(b, n, n_head * hd), *oa = b->act_new(b, n, n_head * hd);
    int32_t *slots = malloc((size_t)total * sizeof(int32_t));
    for (int i = 0; i < total; i++) slots[i] = i;
    b->act_write(b, ka, 0, total, K);
    b->act_write(b, va, 0, total, V);
    b->act_write(b, qa, 0, n, Q);
    attn_params ap = { n_head, n_kv, hd, 1.0f / sqrtf((float)hd), 0, 0.0f };
    b->begin_batch(b);
    b->kv_store(b, &kv, 0, ka, va, total, slots);
    b->attention(b, qa, &kv, 0, n, n_past, &ap, oa);
    if (b->end_batch(b, &err)) CHECK(0, "%s", err.msg);
    b->act_read(b, oa, 0, n, out);
    b->act_free(b, ka); b->act_free(b, va); b->act_free(b, qa); b->act_free(b, oa);
    free(slots);
    b->kv_release(b, &kv);
    kv_cache_free(&kv);
}

static double rel_diff(const float *a, const float *b, int n) {
    double m = 0, d = 0;
    for (int i = 0; i < n; i++) { m = fmax(m, fabs(a[i])); d = fmax(d, fabs(a[i] - b[i])); }
    return d / (m > 0 ? m : 1);
}

static void test_attention_formats(backend *cpu, backend *vk) {
    const int n_head = 4, n_kv = 2, hd = 32, n_past = 150, n = 3, total = n_past + n, kv_dim = n_kv * hd;
    float *K = malloc((size_t)total * kv_dim * sizeof(float)), *V = malloc((size_t)total * kv_dim * sizeof(float));
    float *Q = malloc((size_t)n * n_head * hd * sizeof(float));
    for (int i = 0; i < total * kv_dim; i++) { K[i] = rng_uniform(); V[i] = rng_uniform(); }
    for (int i = 0; i < n * n_head * hd; i++) Q[i] = rng_uniform() * 2.0f;
    int no = n * n_head * hd;
    float *ref = calloc((size_t)no, sizeof(float)), *got = calloc((size_t)no, sizeof(float));
    attention_run(cpu, KV_F32, n_head, n_kv, hd, n_past, n, K, V, Q, ref);
    // stated tolerances (relative to the largest output): f16 1e-3, q8 2e-2, q4 0.25
    const struct { enum kv_format f; double tol; } cases[] = { { KV_F16, 1e-3 }, { KV_Q8, 2e-2 }, { KV_Q4, 0.25 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        attention_run(cpu, cases[i].f, n_head, n_kv, hd, n_past, n, K, V, Q, got);
        double d = rel_diff(ref, got, no);
        CHECK(d <= cases[i].tol, "attention %s vs f32: rel diff %g (tolerance %g)", kv_format_name(cases[i].f), d, cases[i].tol);
    }
    if (vk) {
        // every format on the device: keys stored un-rotated and rotated by slot at attention,
        // q8/q4 read (and folded) by the shaders (tests/test_vulkan.c draws fresh random
        // inputs each run; these are fixed). Tolerance: 1e-3
        // of the largest output (the device stores the cpu's codes; tests/test_vulkan.c checks
        // the stores themselves and tighter tolerances op by op).
        for (int f = 0; f < KV_FORMAT_COUNT; f++) {
            enum kv_format kf = (enum kv_format)f;
            float *vg = calloc((size_t)no, sizeof(float));
            attention_run(cpu, kf, n_head, n_kv, hd, n_past, n, K, V, Q, got);
            attention_run(vk, kf, n_head, n_kv, hd, n_past, n, K, V, Q, vg);
            double d = rel_diff(got, vg, no);
            CHECK(d <= 1e-3, "attention %s cpu vs vulkan (keys rotated by slot): rel diff %g", kv_format_name(kf), d);
            printf("note: attention %s cpu vs vulkan: rel diff %.3g\n", kv_format_name(kf), d);
            free(vg);
        }
    }
    free(K); free(V); free(Q); free(ref); free(got);
}

static char tmpdir[256];

static const char *gen_model(void) {
    static char path[512];
    snprintf(path, sizeof path, "%s/kv-llama.gguf", tmpdir);
    modelgen_opts o = modelgen_defaults();
    o.arch = "llama";
    o.dim = 64; o.n_head = 4; o.n_kv_head = 2; o.ffn_dim = 128; o.n_vocab = 300;
    o.n_ctx = 64;   // trained context: the long runs below go far past it
    o.seed = 7;
    errbuf err = {{0}};
    if (modelgen_write(&o, path, &err)) { CHECK(0, "%s", err.msg); return NULL; }
    return path;
}

static bool finite_varied(const float *x, int n) {
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) { if (!isfinite(x[i])) return false; s += x[i]; s2 += (double)x[i] * x[i]; }
    double var = s2 / n - (s / n) * (s / n);
    return var > 1e-6;
}

// Decodes `steps` tokens one at a time under a policy; checks the budget, the sinks and the logits.
static void policy_run(model *m, enum kv_format f, const char *policy, int steps) {
    runner r;
    errbuf err = {{0}};
    if (runner_open(&r, m, "auto", 2, f, 96, 8, &err)) { CHECK(0, "%s", err.msg); runner_close(&r); return; }
    if (kv_policy_parse(policy, &r.kv.policy, &err)) { CHECK(0, "%s", err.msg); runner_close(&r); return; }
    kv_cache_set_tracking(&r.kv, true);
    int nv = m->hp.n_vocab, kv_dim = r.kv.kv_dim, max_used = 0;
    float *logits = malloc((size_t)nv * sizeof(float));
    float sink0[256], sink1[256];
    bool ok = true, varied = true;
    for (int i = 0; i < steps && ok; i++) {
        int32_t tok = (int32_t)((i * 37 + 11) % nv);
        if (model_forward(&r.fc, &r.kv, &tok, 1, false, logits, &err)) { CHECK(0, "%s: step %d: %s", policy, i, err.msg); ok = false; break; }
        if (i == 8) kv_cache_read(&r.kv, 0, 0, 0, 1, 0, kv_dim, sink0, kv_dim, NULL);
        if (!finite_varied(logits, nv)) varied = false;
        if (r.kv.n_used > max_used) max_used = r.kv.n_used;
    }
    if (ok) {
        kv_cache_read(&r.kv, 0, 0, 0, 1, 0, kv_dim, sink1, kv_dim, NULL);
        double d = rel_diff(sink0, sink1, kv_dim);
        CHECK(varied, "%s %s: logits finite and varied over %d steps (trained context %d)", kv_format_name(f), policy, steps, m->hp.n_ctx_train);
        CHECK(max_used <= r.kv.policy.budget && r.kv.evictions > 0, "%s %s: at most %d slots used (budget %d), %d evictions",
              kv_format_name(f), policy, max_used, r.kv.policy.budget, r.kv.evictions);
        CHECK(d <= (f == KV_F16 ? 0 : 0.1), "%s %s: the first sink slot survives eviction (rel diff %g)", kv_format_name(f), policy, d);
    }
    free(logits);
    runner_close(&r);
}

// Before any eviction a policy changes nothing; F16 tracks F32 closely.
static void test_policy_none_equal(model *m) {
    runner a, b;
    errbuf err = {{0}};
    int n = 40, nv = m->hp.n_vocab;
    int32_t toks[40];
    for (int i = 0; i < n; i++) toks[i] = (int32_t)((i * 13 + 5) % nv);
    float *la = malloc((size_t)n * nv * sizeof(float)), *lb = malloc((size_t)n * nv * sizeof(float));
    if (runner_open(&a, m, "auto", 2, KV_F32, 96, 40, &err) || runner_open(&b, m, "auto", 2, KV_F32, 96, 40, &err)) {
        CHECK(0, "%s", err.msg);
    } else {
        kv_policy_parse("window:64", &b.kv.policy, &err);
        model_forward(&a.fc, &a.kv, toks, n, true, la, &err);
        model_forward(&b.fc, &b.kv, toks, n, true, lb, &err);
        CHECK(memcmp(la, lb, (size_t)n * nv * sizeof(float)) == 0, "window policy below its budget = none");
    }
    runner_close(&a); runner_close(&b);
    free(la); free(lb);
}

// Live switch: continue after converting equals a fresh run on a cache converted the same way.
static void test_live_switch(model *m, enum kv_format to) {
    runner a, b;
    errbuf err = {{0}};
    int n = 200, nv = m->hp.n_vocab;   // past KV_GROUP + recent, so key groups are quantized
    int32_t toks[200];
    for (int i = 0; i < n; i++) toks[i] = (int32_t)((i * 29 + 3) % nv);
    float *la = malloc((size_t)nv * sizeof(float)), *lb = malloc((size_t)nv * sizeof(float)), *lf = malloc((size_t)nv * sizeof(float));
    if (runner_open(&a, m, "auto", 2, KV_F16, 256, 32, &err) || runner_open(&b, m, "auto", 2, KV_F16, 256, 32, &err)) {
        CHECK(0, "%s", err.msg);
        goto out;
    }
    for (int i = 0; i < n - 1; i += 32) {
        int c = n - 1 - i < 32 ? n - 1 - i : 32;
        if (model_forward(&a.fc, &a.kv, toks + i, c, false, NULL, &err)) { CHECK(0, "%s", err.msg); goto out; }
    }
    if (kv_cache_copy(&b.kv, &a.kv, &err)) { CHECK(0, "%s", err.msg); goto out; }
    model_forward(&b.fc, &b.kv, toks + n - 1, 1, false, lf, &err);            // stays f16
    kv_cache_convert(&a.kv, to, 0, &err);                                    // live switch
    model_forward(&a.fc, &a.kv, toks + n - 1, 1, false, la, &err);
    // fresh: the same f16 contents converted into a new cache
    b.kv.n_used = n - 1;
    kv_cache fresh;
    kv_cache_init_ex(&fresh, KV_F16, 0, m->hp.n_layer, 256, b.kv.kv_dim, &err);
    kv_cache_copy(&fresh, &b.kv, &err);
    kv_cache_convert(&fresh, to, 0, &err);
    forward_ctx fc;
    forward_ctx_init(&fc, b.b, m, 4, 1, &err);
    model_forward(&fc, &fresh, toks + n - 1, 1, false, lb, &err);
    forward_ctx_free(&fc);
    kv_cache_free(&fresh);
    CHECK(rel_diff(la, lb, nv) <= 1e-6, "switch to %s = fresh run on the converted cache (rel diff %g)", kv_format_name(to), rel_diff(la, lb, nv));
    double tol = to == KV_Q4 ? 0.3 : 0.05;
    CHECK(rel_diff(lf, la, nv) <= tol, "switch to %s stays close to f16 (rel diff %g, tolerance %g)", kv_format_name(to), rel_diff(lf, la, nv), tol);
out:
    runner_close(&a); runner_close(&b);
    free(la); free(lb); free(lf);
}

// The session API: options, live switching, a chat-like completion past n_ctx with a policy.
static void test_session(const char *path) {
    errbuf err = {{0}};
    session_opts o = session_opts_default();
    o.model_path = path;
    o.backend.name = "cpu";
    o.n_ctx = 80;
    o.kv_format = "q8";
    o.kv_policy = "h2o:64";
    o.ignore_eog = true;
    o.sampling.temp = 0;
    session *s = session_open(&o, &err);
    if (!s) { CHECK(0, "%s", err.msg); return; }
    int rc = session_complete(s, "hello there", 150, NULL, NULL, &err);
    session_stats st;
    session_get_stats(s, &st);
    CHECK(rc == 0, "150 tokens past a context of 80 with h2o:64: %s", rc ? err.msg : "ok");
    CHECK(st.n_past <= 64 && st.kv_evictions > 0 && strcmp(st.kv_format, "q8") == 0 && strcmp(st.kv_policy, "h2o:64") == 0,
          "stats: %d slots, %d evictions, %s %s", st.n_past, st.kv_evictions, st.kv_format, st.kv_policy);
    CHECK(session_set_kv(s, "q4", "entropy:48", &err) == 0, "switch to q4 entropy:48: %s", err.msg);
    rc = session_complete(s, " more", 60, NULL, NULL, &err);
    session_get_stats(s, &st);
    // (a context of 80 is too short for q4 to save memory: the F16 recent window dominates)
    CHECK(rc == 0 && st.n_past <= 48 && strcmp(st.kv_format, "q4") == 0 && st.kv_savings > 0,
          "after the switch: rc %d, %d slots, %s, %.2fx", rc, st.n_past, st.kv_format, st.kv_savings);
    float w[128];
    int n = session_attention_last(s, 0, -1, w, 128, &err);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += w[i];
    CHECK(n > 0 && fabs(sum - 1.0) < 1e-3, "last attention weights: %d slots summing to %g", n, sum);
    int used, quant;
    int cap;
    CHECK(session_kv_layer(s, 0, &used, &quant, &cap) == 0 && used == st.n_past && quant <= used && cap == st.n_ctx,
          "layer occupancy %d/%d of %d", quant, used, cap);
    CHECK(session_set_kv(s, "q5", NULL, &err) < 0, "unknown format rejected");
    CHECK(session_set_kv(s, NULL, "window:3", &err) < 0, "too small a budget rejected");
    session_close(s);
    // none stops at the context length with a message
    o.kv_format = NULL; o.kv_policy = NULL; o.n_ctx = 40;
    s = session_open(&o, &err);
    if (!s) { CHECK(0, "%s", err.msg); return; }
    rc = session_complete(s, "hello", 100, NULL, NULL, &err);
    CHECK(rc < 0 && strstr(err.msg, "context full"), "policy none stops: %s", err.msg);
    session_close(s);
}

// ---- the Vulkan backend's KV cache against the CPU's, through sessions ----

static session *open_batch(const char *path, const char *backend_name, const char *kv, const char *policy, int n_ctx,
                           int n_batch, errbuf *err) {
    session_opts o = session_opts_default();
    o.model_path = path;
    o.backend.name = backend_name;
    o.backend.n_threads = 2;
    o.n_ctx = n_ctx;
    o.n_batch = n_batch;
    o.kv_format = kv;
    o.kv_policy = policy;
    o.ignore_eog = true;
    o.sampling.temp = 0;
    return session_open(&o, err);
}

static session *open_on(const char *path, const char *backend_name, const char *kv, const char *policy, int n_ctx,
                        errbuf *err) {
    return open_batch(path, backend_name, kv, policy, n_ctx, 32, err);
}

static int argmax_of(const float *x, int n, float *margin) {
    int best = 0, second = -1;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[best]) { second = best; best = i; }
        else if (second < 0 || x[i] > x[second]) second = i;
    }
    *margin = second >= 0 ? x[best] - x[second] : 0.0f;
    return best;
}

typedef struct vk_cmp {
    double worst;      // largest |cpu - vulkan| logit difference / largest |cpu logit|
    int steps, argmax_differs, argmax_near_tie;
} vk_cmp;

// Feeds the same tokens to a cpu session (s[0]) and a vulkan one (s[1]): `n_prompt` prompt
// tokens (batches of 32), then `steps` tokens one at a time, each the cpu's greedy choice, so
// both stay on one sequence (teacher forcing) and every step's logits can be compared. The
// argmax may differ only where the cpu's top-2 margin is within the logit difference (a tie).
// lg: each session's latest logits (n_vocab floats each), kept between calls (n_prompt 0 goes
// on from them).
static int vk_compare(session *s[2], float *lg[2], int n_prompt, int steps, uint64_t seed, vk_cmp *c, errbuf *err) {
    int nv = session_n_vocab(s[0]);
    int32_t *toks = malloc((size_t)(n_prompt > 0 ? n_prompt : 1) * sizeof(int32_t));
    for (int i = 0; i < n_prompt; i++) toks[i] = (int32_t)((seed + (uint64_t)i * 2654435761u) % (uint64_t)nv);
    int rc = 0;
    for (int step = n_prompt > 0 ? -1 : 0; step < steps && rc == 0; step++) {
        int32_t tok = 0;
        if (step >= 0) { float mg; tok = argmax_of(lg[0], nv, &mg); }
        for (int i = 0; i < 2 && rc == 0; i++)
            rc = step < 0 ? session_eval(s[i], toks, n_prompt, lg[i], err) : session_eval(s[i], &tok, 1, lg[i], err);
        if (rc) break;
        float scale = 0, d = 0, margin;
        for (int j = 0; j < nv; j++) {
            scale = fmaxf(scale, fabsf(lg[0][j]));
            d = fmaxf(d, fabsf(lg[0][j] - lg[1][j]));
        }
        double rel = d / (scale > 0 ? scale : 1);
        if (!(rel <= c->worst)) c->worst = rel;   // NaN sticks
        int a0 = argmax_of(lg[0], nv, &margin), m1;
        float mg1;
        m1 = argmax_of(lg[1], nv, &mg1);
        if (a0 != m1) { if (margin <= 2 * d) c->argmax_near_tie++; else c->argmax_differs++; }
        c->steps++;
    }
    free(toks);
    return rc;
}

static void vk_case(const char *path, const char *kv, const char *policy, int n_ctx, int n_prompt, int steps,
                    double tol) {
    errbuf err = {{0}};
    session *s[2] = { open_on(path, "cpu", kv, policy, n_ctx, &err), NULL };
    if (s[0]) s[1] = open_on(path, "vulkan", kv, policy, n_ctx, &err);
    if (!s[0] || !s[1]) { CHECK(0, "vulkan %s %s: %s", kv, policy, err.msg); goto out; }
    vk_cmp c = { 0, 0, 0, 0 };
    int nv = session_n_vocab(s[0]);
    float *lg[2] = { malloc((size_t)nv * sizeof(float)), malloc((size_t)nv * sizeof(float)) };
    int rc = vk_compare(s, lg, n_prompt, steps, 17, &c, &err);
    free(lg[0]); free(lg[1]);
    session_stats st[2];
    session_get_stats(s[0], &st[0]);
    session_get_stats(s[1], &st[1]);
    CHECK(rc == 0, "vulkan %s %s: %s", kv, policy, err.msg);
    CHECK(c.worst <= tol && c.argmax_differs == 0,
          "vulkan %s %s vs cpu over %d steps: logits rel diff %g (tolerance %g), argmax differs %d times (%d near ties)",
          kv, policy, c.steps, c.worst, tol, c.argmax_differs, c.argmax_near_tie);
    CHECK(st[0].n_past == st[1].n_past && st[0].kv_evictions == st[1].kv_evictions &&
          (strcmp(policy, "none") == 0 || st[1].kv_evictions > 0),
          "vulkan %s %s: %d slots, %d evictions (cpu: %d, %d)", kv, policy, st[1].n_past, st[1].kv_evictions,
          st[0].n_past, st[0].kv_evictions);
    printf("note: vulkan%s vs cpu, kv %s, policy %s, context %d: %d steps, logits rel diff %.3g (tolerance %g), "
           "%d evictions, argmax equal except %d near ties\n", getenv("CABIN_VK_UNMAPPED") ? " (unmapped buffers)" : "",
           kv, policy, n_ctx, c.steps, c.worst, tol, st[1].kv_evictions, c.argmax_near_tie);
out:
    session_close(s[0]);
    session_close(s[1]);
}

// A live format switch on both backends between tokens: the conversation is kept (same slot
// count) and the next tokens agree; then a policy switched on mid-conversation evicts on both.
static void vk_switch(const char *path) {
    errbuf err = {{0}};
    float *lg[2] = { NULL, NULL };
    session *s[2] = { open_on(path, "cpu", "f16", NULL, 512, &err), NULL };
    if (s[0]) s[1] = open_on(path, "vulkan", "f16", NULL, 512, &err);
    if (!s[0] || !s[1]) { CHECK(0, "vulkan switch: %s", err.msg); goto out; }
    vk_cmp c = { 0, 0, 0, 0 };
    int nv = session_n_vocab(s[0]);
    lg[0] = malloc((size_t)nv * sizeof(float));
    lg[1] = malloc((size_t)nv * sizeof(float));
    if (vk_compare(s, lg, 200, 2, 5, &c, &err)) { CHECK(0, "%s", err.msg); goto out; }
    static const struct { const char *kv, *policy; double tol; } seq[] = {
        { "q8", NULL, 2e-3 }, { "q4", NULL, 1e-2 }, { "f32", NULL, 1e-2 }, { "q8", "window:64", 1e-2 },
        { "f16", NULL, 1e-2 } };   // after a q4 stretch the cache holds q4-rounded rows: q4's tolerance
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        session_stats before, after;
        session_get_stats(s[1], &before);
        int rc = 0;
        for (int j = 0; j < 2 && rc == 0; j++) rc = session_set_kv(s[j], seq[i].kv, seq[i].policy, &err);
        session_get_stats(s[1], &after);
        CHECK(rc == 0 && after.n_past == before.n_past && strcmp(after.kv_format, seq[i].kv) == 0,
              "vulkan switch to %s: %s (%d slots before, %d after)", seq[i].kv, rc ? err.msg : "ok", before.n_past,
              after.n_past);
        if (rc) break;
        vk_cmp ci = { 0, 0, 0, 0 };
        rc = vk_compare(s, lg, 0, 12, 0, &ci, &err);
        CHECK(rc == 0 && ci.worst <= seq[i].tol && ci.argmax_differs == 0,
              "vulkan switch to %s%s%s: next tokens' logits rel diff %g (tolerance %g), argmax differs %d times: %s",
              seq[i].kv, seq[i].policy ? " " : "", seq[i].policy ? seq[i].policy : "", ci.worst, seq[i].tol,
              ci.argmax_differs, rc ? err.msg : "ok");
        printf("note: live switch to %s%s%s on vulkan%s: %d slots kept, next 12 tokens' logits rel diff %.3g vs cpu\n",
               seq[i].kv, seq[i].policy ? " " : "", seq[i].policy ? seq[i].policy : "",
               getenv("CABIN_VK_UNMAPPED") ? " (unmapped buffers)" : "", before.n_past, ci.worst);
    }
    session_stats st;
    session_get_stats(s[1], &st);
    CHECK(st.kv_evictions > 0 && st.n_past <= 64, "vulkan: window:64 switched on evicts (%d slots, %d evictions)",
          st.n_past, st.kv_evictions);
out:
    free(lg[0]); free(lg[1]);
    session_close(s[0]);
    session_close(s[1]);
}

// Errors stay one line: a q8 cache on rows the device store cannot hold (36 channels: not a
// multiple of 8), at session open and as a live switch (which keeps the f16 cache).
static void vk_errors(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/kv-odd.gguf", tmpdir);
    modelgen_opts o = modelgen_defaults();
    o.dim = 36; o.n_head = 3; o.n_kv_head = 3; o.ffn_dim = 64; o.n_vocab = 300; o.seed = 3;
    errbuf err = {{0}};
    if (modelgen_write(&o, path, &err)) { CHECK(0, "%s", err.msg); return; }
    session *s = open_on(path, "vulkan", "q8", NULL, 64, &err);
    CHECK(!s && strstr(err.msg, "multiple of 8") && !strchr(err.msg, '\n'), "vulkan q8 on 36-wide rows: %s", err.msg);
    session_close(s);
    s = open_on(path, "vulkan", "f16", NULL, 64, &err);
    if (!s) { CHECK(0, "%s", err.msg); return; }
    float lg[300];
    int32_t ids[3] = { 1, 2, 3 };
    CHECK(session_eval(s, ids, 3, lg, &err) == 0, "%s", err.msg);
    int rc = session_set_kv(s, "q4", NULL, &err);
    session_stats st;
    session_get_stats(s, &st);
    CHECK(rc < 0 && strstr(err.msg, "multiple of 8") && !strchr(err.msg, '\n') && strcmp(st.kv_format, "f16") == 0 &&
          st.n_past == 3, "failed switch keeps the f16 cache: %s (%s, %d slots)", err.msg, st.kv_format, st.n_past);
    CHECK(session_eval(s, ids, 1, lg, &err) == 0, "still runs after the failed switch: %s", err.msg);
    session_close(s);
    unlink(path);
}

// The command line: `cabin make-model`, then `cabin logits --backend cpu|vulkan --kv q8|q4` over
// 200 token ids in one batch (key groups fold inside it); all logits compared, same argmax.
static void vk_cli(void) {
    const char *bin = getenv("CABIN_BIN");
    if (!bin || !*bin || access(bin, X_OK) != 0) { SKIP("cli logits cpu vs vulkan: CABIN_BIN is not set (tests/run.sh sets it)"); return; }
    char model[300], cmd[4096], ids[2000] = "";
    snprintf(model, sizeof model, "%s/cli.gguf", tmpdir);
    snprintf(cmd, sizeof cmd, "%s make-model -o %s --dim 128 --layers 2 --heads 4 --kv-heads 2 --ffn 256 --vocab 300 "
             "--ctx 512 --seed 11 >/dev/null", bin, model);
    if (system(cmd) != 0) { CHECK(0, "%s failed", cmd); return; }
    for (int i = 0; i < 200; i++) {
        size_t len = strlen(ids);
        snprintf(ids + len, sizeof ids - len, "%s%d", i ? " " : "", (i * 97 + 13) % 300);
    }
    static const struct { const char *kv; double tol; } cases[] = { { "q8", 2e-3 }, { "q4", 1e-2 } };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float lg[2][300];
        bool ok = true;
        for (int b = 0; b < 2 && ok; b++) {
            char out[320];
            snprintf(out, sizeof out, "%s/logits-%d.bin", tmpdir, b);
            snprintf(cmd, sizeof cmd, "%s logits -m %s --backend %s -t 2 --kv %s -c 256 --token-ids \"%s\" --top 1 --out %s "
                     ">/dev/null", bin, model, b ? "vulkan" : "cpu", cases[c].kv, ids, out);
            FILE *f = system(cmd) == 0 ? fopen(out, "rb") : NULL;
            ok = f && fread(lg[b], sizeof(float), 300, f) == 300;
            if (f) fclose(f);
            if (!ok) CHECK(0, "cabin logits --backend %s --kv %s failed", b ? "vulkan" : "cpu", cases[c].kv);
        }
        if (!ok) continue;
        float scale = max_abs(lg[0], 300), m0, m1;
        double d = rel_diff(lg[0], lg[1], 300);
        int a0 = argmax_of(lg[0], 300, &m0), a1 = argmax_of(lg[1], 300, &m1);
        CHECK(d <= cases[c].tol && (a0 == a1 || m0 <= 2 * d * scale),
              "cabin logits --kv %s: vulkan vs cpu rel diff %g (tolerance %g), argmax %d vs %d", cases[c].kv, d,
              cases[c].tol, a1, a0);
        printf("note: cabin logits --kv %s (200 ids, one batch): vulkan vs cpu rel diff %.3g, argmax %d both\n",
               cases[c].kv, d, a0);
    }
    unlink(model);
}

// Tolerances (relative to the largest |logit|): f16/f32 1e-3, q8 2e-3, q4 1e-2. The two
// backends' activations differ by float rounding, so a value at a code boundary may quantize to
// neighbouring codes (one q4 step is 1/15 of its group's range); measured differences here are
// near 1e-5 (docs/KV.md).
static void test_vulkan_sessions(const char *path) {
    // q8/q4 stores and attention: prefill folds key groups (200 > 32 + 127), then decode
    vk_case(path, "q8", "none", 512, 200, 40, 2e-3);
    vk_case(path, "q4", "none", 512, 200, 40, 1e-2);
    vk_case(path, "f16", "none", 512, 200, 10, 1e-3);
    // eviction on the device copy: pulled, compacted by the cpu code, pushed back
    vk_case(path, "f16", "window:48", 96, 20, 150, 1e-3);
    vk_case(path, "q8", "window:48", 96, 20, 150, 2e-3);
    vk_case(path, "q4", "window:200", 256, 20, 260, 1e-2);   // key groups fold, then evictions re-quantize
    vk_case(path, "f16", "h2o:48", 96, 20, 120, 1e-3);       // attention statistics gathered on the device
    vk_case(path, "q8", "entropy:48", 96, 20, 120, 2e-3);    // + the per-head mask
    vk_switch(path);
    // again with device buffers that are not host-visible, as on a discrete GPU: pull, push and
    // the re-created store of a switch go through staging buffers
    setenv("CABIN_VK_UNMAPPED", "1", 1);
    vk_case(path, "q8", "entropy:48", 96, 20, 80, 2e-3);
    vk_switch(path);
    unsetenv("CABIN_VK_UNMAPPED");
    vk_errors();
    vk_cli();
}

static const char *gen_gemma(void) {
    static char path[512];
    snprintf(path, sizeof path, "%s/kv-gemma3.gguf", tmpdir);
    modelgen_opts o = modelgen_defaults();
    o.arch = "gemma3";
    o.dim = 64; o.n_head = 4; o.n_kv_head = 2; o.head_dim = 16; o.ffn_dim = 128; o.n_vocab = 300;
    o.n_layer = 4; o.swa_window = 8; o.swa_pattern = 2;   // layers 0 and 2 see the last 8 slots
    o.n_ctx = 64;
    o.seed = 9;
    errbuf err = {{0}};
    if (modelgen_write(&o, path, &err)) { CHECK(0, "%s", err.msg); return NULL; }
    return path;
}

// Window layers in rings through sessions (batches of 32: rings of 8 + 31 rows; a context of 96
// slots, a 20-token prompt and 120 decoded): under window:48 the rings give the logits of a
// cache whose window layers are whole (a batch of 96 needs no ring), as that policy keeps the
// newest slots on every layer; on Vulkan every policy and a live switch against the CPU.
static void test_gemma_rings(const char *path, backend *vk) {
    errbuf err = {{0}};
    float *lg[2] = { NULL, NULL };
    session *s[2] = { open_batch(path, "cpu", "f16", "window:48", 96, 96, &err), NULL };
    if (s[0]) s[1] = open_batch(path, "cpu", "f16", "window:48", 96, 32, &err);
    if (!s[0] || !s[1]) { CHECK(0, "gemma3 rings: %s", err.msg); goto out; }
    session_stats st[2];
    session_get_stats(s[0], &st[0]);
    session_get_stats(s[1], &st[1]);
    CHECK(st[1].kv_bytes < st[0].kv_bytes, "gemma3: rings take %llu bytes, whole window layers %llu",
          (unsigned long long)st[1].kv_bytes, (unsigned long long)st[0].kv_bytes);
    vk_cmp c = { 0, 0, 0, 0 };
    int nv = session_n_vocab(s[0]);
    lg[0] = malloc((size_t)nv * sizeof(float));
    lg[1] = malloc((size_t)nv * sizeof(float));
    int rc = vk_compare(s, lg, 20, 120, 3, &c, &err);
    session_get_stats(s[1], &st[1]);
    CHECK(rc == 0 && c.worst <= 1e-5 && c.argmax_differs == 0 && st[1].kv_evictions > 0,
          "gemma3 cpu rings vs whole window layers, window:48: logits rel diff %g over %d steps, %d evictions: %s",
          c.worst, c.steps, st[1].kv_evictions, rc ? err.msg : "ok");
    printf("note: gemma3 cpu, window layers in rings vs whole, window:48 over 96 slots: %d steps, %d evictions, "
           "logits rel diff %.3g; %.1f KiB vs %.1f KiB\n", c.steps, st[1].kv_evictions, c.worst,
           (double)st[1].kv_bytes / 1024, (double)st[0].kv_bytes / 1024);
out:
    free(lg[0]); free(lg[1]);
    session_close(s[0]);
    session_close(s[1]);
    if (!vk) return;
    vk_case(path, "f16", "none", 256, 20, 60, 1e-3);
    vk_case(path, "q8", "h2o:48", 96, 20, 120, 2e-3);
    vk_case(path, "q4", "entropy:48", 96, 20, 120, 1e-2);
    vk_switch(path);
}

static void test_bytes(void) {
    uint64_t f16 = kv_format_cache_bytes(KV_F16, 0, 16, 4096, 512), q4 = kv_format_cache_bytes(KV_Q4, 0, 16, 4096, 512);
    uint64_t q8 = kv_format_cache_bytes(KV_Q8, 0, 16, 4096, 512);
    double r4 = kv_format_token_bytes(KV_F16, 512) / kv_format_token_bytes(KV_Q4, 512);
    CHECK(r4 >= 3.5, "q4 bytes per token %.2fx smaller than f16", r4);
    CHECK((double)f16 / q4 >= 3.5 && (double)f16 / q8 >= 1.85, "4096-slot caches: q4 %.2fx, q8 %.2fx smaller (recent windows included)",
          (double)f16 / q4, (double)f16 / q8);
    // the formula against what the cache actually allocates, from its own fields
    errbuf err = {{0}};
    for (int f = KV_Q8; f <= KV_Q4; f++) {
        kv_cache kv;
        kv_cache_init(&kv, (enum kv_format)f, 16, 4096, 512, &err);
        uint64_t D = 512, codes_k = f == KV_Q4 ? D * KV_GROUP / 2 : D * KV_GROUP, codes_v = f == KV_Q4 ? D / 2 : D;
        uint64_t per = (uint64_t)kv.q_groups * (codes_k + D * 4) + (uint64_t)kv.res_cap * kv.row_bytes +
                       (uint64_t)(kv.n_ctx - kv.vcap) * (codes_v + D / kv.gv * 4) + (uint64_t)kv.vcap * kv.row_bytes;
        CHECK(kv_cache_bytes(&kv) == 16 * per, "%s: allocated bytes %llu match the formula %llu", kv_format_name((enum kv_format)f),
              (unsigned long long)(16 * per), (unsigned long long)kv_cache_bytes(&kv));
        kv_cache_free(&kv);
    }
    kv_policy p;
    CHECK(kv_policy_parse("window:512", &p, &err) == 0 && p.kind == KVP_WINDOW && p.budget == 512, "parse window:512");
    CHECK(kv_policy_parse("h2o:x", &p, &err) < 0 && kv_policy_parse("lru:5", &p, &err) < 0, "bad policies rejected");
}

int main(void) {
    test_seed();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cabin-test-kv-%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", tmpdir);
    if (system(cmd) != 0) { CHECK(0, "mkdir %s", tmpdir); return test_finish(); }
    test_roundtrip(KV_Q8);
    test_roundtrip(KV_Q4);
    for (int f = 0; f < KV_FORMAT_COUNT; f++) test_ring((enum kv_format)f);
    test_bytes();
    errbuf err = {{0}};
    backend *cpu = backend_cpu_new(2, "auto", &err);
    backend *vk = backend_create(&(backend_opts){ .name = "vulkan" }, &err);
    if (!vk) SKIP("cpu vs vulkan attention: %s", err.msg);
    test_attention_formats(cpu, vk);
    backend_destroy(cpu);
    const char *path = gen_model();
    model *m = NULL;
    if (path && model_load(&m, path, &err) == 0) {
        test_policy_none_equal(m);
        policy_run(m, KV_F16, "window:48", 300);
        policy_run(m, KV_Q8, "window:48", 300);
        policy_run(m, KV_F16, "h2o:48", 200);
        policy_run(m, KV_Q4, "entropy:48", 200);
        test_live_switch(m, KV_Q8);
        test_live_switch(m, KV_Q4);
        test_live_switch(m, KV_F32);
        model_free(m);
        test_session(path);
        if (vk) test_vulkan_sessions(path);
    } else {
        CHECK(0, "model: %s", err.msg);
    }
    const char *gemma = gen_gemma();
    if (gemma) test_gemma_rings(gemma, vk);
    if (vk) backend_destroy(vk);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", tmpdir);
    return test_finish();
}
