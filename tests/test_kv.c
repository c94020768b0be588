// KV cache compression: quantization error bounds, attention over quantized caches against the
// F32 reference, CPU vs Vulkan with keys rotated at attention, eviction policies on a generated
// model run past its trained context, live format switches, and memory accounting.
#include <string.h>

#include "engine/modelgen.h"
#include "engine/session.h"
#include "tests/model_util.h"
#include "tests/test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) {   // uniform [-1, 1)
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

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
            K[s * D + c] = frand() * (1.0f + (float)(c % 7)) + (c % 5 == 0 ? 3.0f : 0.0f);   // channel outliers
            V[s * D + c] = frand() * 0.5f;
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
    kv_shape sh = { n_head, n_kv, hd, hd, 10000.0f, false };
    kv_cache_set_shape(&kv, &sh, &err);
    bk_act *ka = b->act_new(b, total, kv_dim), *va = b->act_new(b, total, kv_dim);
    bk_act *qa = b->act_new(b, n, n_head * hd), *oa = b->act_new(b, n, n_head * hd);
    // upload through the ops: embed is not usable for raw floats, so write via act buffers
    int32_t *slots = malloc((size_t)total * sizeof(int32_t));
    for (int i = 0; i < total; i++) slots[i] = i;
    extern void test_act_write(backend *b, bk_act *a, const float *src, int64_t n);
    test_act_write(b, ka, K, (int64_t)total * kv_dim);
    test_act_write(b, va, V, (int64_t)total * kv_dim);
    test_act_write(b, qa, Q, (int64_t)n * n_head * hd);
    attn_params ap = { n_head, n_kv, hd, 1.0f / sqrtf((float)hd) };
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

// Activations are plain host floats on the CPU and host-visible buffers on lavapipe; both are
// written through act_read's inverse: the CPU's bk_act starts with its data pointer.
typedef struct { float *data; int64_t rows, cols; } cpu_act_view;
static backend *vk_for_write;
void test_act_write(backend *b, bk_act *a, const float *src, int64_t n);
#include "vulkan/vk.h"
void test_act_write(backend *b, bk_act *a, const float *src, int64_t n) {
    if (strcmp(b->name, "vulkan") == 0) {
        struct bk_act *va = a;
        if (va->buf.map) memcpy(va->buf.map, src, (size_t)n * sizeof(float));
        return;
    }
    memcpy(((cpu_act_view *)a)->data, src, (size_t)n * sizeof(float));
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
    for (int i = 0; i < total * kv_dim; i++) { K[i] = frand(); V[i] = frand(); }
    for (int i = 0; i < n * n_head * hd; i++) Q[i] = frand() * 2.0f;
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
        for (int f = 0; f < 2; f++) {   // f16, f32: the device copy rotates keys at store
            enum kv_format kf = f ? KV_F32 : KV_F16;
            float *vg = calloc((size_t)no, sizeof(float));
            attention_run(cpu, kf, n_head, n_kv, hd, n_past, n, K, V, Q, got);
            attention_run(vk, kf, n_head, n_kv, hd, n_past, n, K, V, Q, vg);
            double d = rel_diff(got, vg, no);
            CHECK(d <= 1e-3, "attention %s cpu vs vulkan (keys rotated by slot): rel diff %g", kv_format_name(kf), d);
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
    CHECK(session_kv_layer(s, 0, &used, &quant) == 0 && used == st.n_past && quant <= used, "layer occupancy %d/%d", quant, used);
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
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cabin-test-kv-%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", tmpdir);
    if (system(cmd) != 0) { CHECK(0, "mkdir %s", tmpdir); return test_finish(); }
    test_roundtrip(KV_Q8);
    test_roundtrip(KV_Q4);
    test_bytes();
    errbuf err = {{0}};
    backend *cpu = backend_cpu_new(2, "auto", &err);
    backend *vk = backend_vulkan_new(-1, &err);
    if (!vk) SKIP("cpu vs vulkan attention: %s", err.msg);
    vk_for_write = vk;
    test_attention_formats(cpu, vk);
    if (vk) backend_destroy(vk);
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
    } else {
        CHECK(0, "model: %s", err.msg);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", tmpdir);
    return test_finish();
}
