// CPU attention over every KV cache format (engine/cpu/attn_kv.c, backend_cpu.c's attn_worker):
// the fast kernels against the scalar reference backend, and the scalar backend against a plain
// double-precision attention computed from kv_cache_read and kv_cache_rope_rows (the cache's own
// definition of what is stored). Random inputs from the printed seed (tests/rng.h: fixed by
// default, CABIN_TEST_SEED=N or =random): odd lengths, depths on and across key-group (128-slot) and
// tile (64-slot) boundaries, recent windows of several sizes, prefill blocks longer than the
// 16-query block, grouped-query heads 1..7, head dims off the vector width, heads straddling
// value groups, RoPE interleaved / NeoX / partial / none, entropy-style masks and tracking, soft
// caps on the scores (gemma2). A
// window layer runs twice: stored whole, and kept in a ring of window + batch - 1 rows (which the
// writes wrap around), whose outputs must equal those of a whole cache of the ring's rows.
#include "engine/backend.h"
#include "engine/cpu/kernels.h"
#include "engine/kv_cache.h"
#include "base/base.h"
#include "tests/test.h"
#include "tests/rng.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

typedef struct {
    int n_head, n_kv, hd, rope_dim, neox, n_past, n, recent;
    int masked, track;
    int window;          // > 0: a sliding-window layer (attn_params.window)
    float softcap;       // > 0: scores become softcap * tanh(s / softcap)
} acase;

// The CPU backend's activations start with their data pointer (engine/cpu/backend_cpu.c).
typedef struct { float *data; int64_t rows, cols; } cpu_act_view;

// Output (n, n_head*hd) of backend b; mass and last (n_head, n_ctx) when tracking.
static void run_backend(backend *b, kv_cache *kv, const acase *c, const float *Q, float *out, float *mass, float *last) {
    int qd = c->n_head * c->hd;
    if (kv->mass) memset(kv->mass, 0, sizeof(float) * (size_t)c->n_head * kv->n_ctx);
    bk_act *qa = b->act_new(b, c->n, qd), *oa = b->act_new(b, c->n, qd);
    memcpy(((cpu_act_view *)qa)->data, Q, sizeof(float) * (size_t)c->n * qd);
    attn_params ap = { c->n_head, c->n_kv, c->hd, 1.0f / sqrtf((float)c->hd), c->window, c->softcap };
    b->attention(b, qa, kv, 0, c->n, c->n_past, &ap, oa);
    b->act_read(b, oa, 0, c->n, out);
    if (mass && kv->mass) memcpy(mass, kv->mass, sizeof(float) * (size_t)c->n_head * kv->n_ctx);
    if (last && kv->last) memcpy(last, kv->last, sizeof(float) * (size_t)c->n_head * kv->n_ctx);
    b->act_free(b, qa);
    b->act_free(b, oa);
}

// Attention in double from the cache's dequantized, rotated rows.
static void run_naive(const kv_cache *kv, const acase *c, const float *Q, float *out) {
    int D = kv->kv_dim, total = c->n_past + c->n, group = c->n_head / c->n_kv;
    float *K = xmalloc(sizeof(float) * (size_t)total * D), *V = xmalloc(sizeof(float) * (size_t)total * D);
    kv_cache_read(kv, 0, 0, 0, total, 0, D, K, D, NULL);
    kv_cache_read(kv, 0, 1, 0, total, 0, D, V, D, NULL);
    for (int h = 0; h < c->n_kv; h++) kv_cache_rope_rows(kv, 0, 0, total, K + h * c->hd, D);
    double *p = xmalloc(sizeof(double) * (size_t)total);
    for (int t = 0; t < c->n; t++)
        for (int h = 0; h < c->n_head; h++) {
            int kvh = h / group, ctx = c->n_past + t + 1;
            int first = c->window > 0 && ctx > c->window ? ctx - c->window : 0;   // a window layer
            const float *q = Q + ((size_t)t * c->n_head + h) * c->hd;
            const uint8_t *mask = kv->mask ? kv->mask + (size_t)kvh * kv->n_ctx : NULL;
            double mx = -INFINITY, sum = 0;
            for (int s = 0; s < ctx; s++) {
                double d = 0;
                for (int i = 0; i < c->hd; i++) d += (double)q[i] * K[(size_t)s * D + kvh * c->hd + i];
                d /= sqrt((double)c->hd);
                if (c->softcap > 0) d = c->softcap * tanh(d / c->softcap);
                p[s] = (mask && mask[s]) || s < first ? -INFINITY : d;
                mx = p[s] > mx ? p[s] : mx;
            }
            for (int s = 0; s < ctx; s++) { p[s] = mx == -INFINITY ? 0 : exp(p[s] - mx); sum += p[s]; }
            float *o = out + ((size_t)t * c->n_head + h) * c->hd;
            for (int i = 0; i < c->hd; i++) {
                double acc = 0;
                for (int s = 0; s < ctx; s++) acc += p[s] * V[(size_t)s * D + kvh * c->hd + i];
                o[i] = sum > 0 ? (float)(acc / sum) : 0.0f;
            }
        }
    free(K); free(V); free(p);
}

static double rel_diff(const float *a, const float *b, size_t n) {
    double m = 0, d = 0;
    for (size_t i = 0; i < n; i++) { m = fmax(m, fabs(a[i])); d = fmax(d, fabs((double)a[i] - b[i])); }
    return d / (m > 0 ? m : 1);
}
static double abs_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static double worst_fast, worst_ref;

static int rings;   // cases run on a ring

// ring: layer 0 is a window layer kept in a ring (a window case whose ring is shorter than the
// context; otherwise the case runs whole).
static void run_case(backend *const *fasts, int n_fast, backend *ref, enum kv_format f, const acase *c, bool ring) {
    int D = c->n_kv * c->hd, total = c->n_past + c->n, n_ctx = total + 1 + rng_int(40);
    kv_cache kv, whole;
    errbuf err = {{0}};
    const uint8_t window_layer = 1;
    kv_windows w = { &window_layer, c->window, c->n };
    if (kv_cache_init_windows(&kv, f, c->recent, 1, n_ctx, D, ring ? &w : NULL, &err)) { CHECK(0, "%s", err.msg); return; }
    ring = kv.ring_rows > 0;
    rings += ring;
    // the same slots in a whole cache of the ring's format
    if (ring && kv_cache_init_ex(&whole, kv_layer_format(&kv, 0), 0, 1, n_ctx, D, &err)) {
        CHECK(0, "%s", err.msg);
        kv_cache_free(&kv);
        return;
    }
    rope_freqs fr;
    if (c->rope_dim) rope_freqs_plain(&fr, c->rope_dim, 10000.0f);
    kv_shape sh = { c->n_head, c->n_kv, c->hd, c->rope_dim ? &fr : NULL, NULL, NULL, c->neox != 0 };
    if (kv_cache_set_shape(&kv, &sh, &err) || (ring && kv_cache_set_shape(&whole, &sh, &err))) {
        CHECK(0, "%s", err.msg);
        kv_cache_free(&kv);
        if (ring) kv_cache_free(&whole);
        return;
    }
    if (c->track) kv_cache_set_tracking(&kv, true);
    if (c->masked) {   // as the entropy policy leaves it: some slots hidden from some kv heads
        kv.mask = xcalloc((size_t)c->n_kv * n_ctx, 1);
        for (int i = 0; i < c->n_kv * n_ctx; i++) kv.mask[i] = rng_int(5) == 0;
        kv.mask[(size_t)(c->n_kv - 1) * n_ctx] = 1;
        if (ring) whole.mask = memcpy(xmalloc((size_t)c->n_kv * n_ctx), kv.mask, (size_t)c->n_kv * n_ctx);
    }
    // keys with a few outlier channels (what per-channel groups are for), values plain
    float *k = xmalloc(sizeof(float) * D), *v = xmalloc(sizeof(float) * D), *chs = xmalloc(sizeof(float) * D);
    for (int i = 0; i < D; i++) chs[i] = rng_int(10) == 0 ? 8.0f : 1.0f;
    for (int s = 0; s < total; s++) {
        for (int i = 0; i < D; i++) { k[i] = rng_uniform() * chs[i]; v[i] = rng_uniform(); }
        kv_cache_put(&kv, 0, s, k, v);
        if (ring) kv_cache_put(&whole, 0, s, k, v);
    }
    kv.n_used = whole.n_used = total;
    size_t no = (size_t)c->n * c->n_head * c->hd, nm = (size_t)c->n_head * n_ctx;
    float *Q = xmalloc(sizeof(float) * no), *of = xmalloc(sizeof(float) * no), *or = xmalloc(sizeof(float) * no),
          *on = xmalloc(sizeof(float) * no);
    float *mf = xcalloc(nm, sizeof(float)), *mr = xcalloc(nm, sizeof(float)), *lf = xcalloc(nm, sizeof(float)),
          *lr = xcalloc(nm, sizeof(float));
    for (size_t i = 0; i < no; i++) Q[i] = rng_uniform() * 2.0f;
    run_backend(ref, &kv, c, Q, or, mr, lr);
    run_naive(&kv, c, Q, on);
    double dr = rel_diff(on, or, no);
    worst_ref = fmax(worst_ref, dr);
    const char *fn = kv_format_name(f);
    if (ring) {   // the ring holds what the window sees: the same outputs as the whole cache
        run_backend(ref, &whole, c, Q, of, NULL, NULL);
        double dw = rel_diff(of, or, no);
        CHECK(dw <= 1e-6, "%s ring of %d rows, window %d, depth %d+%d: %g from the whole cache", fn, kv.ring_rows,
              c->window, c->n_past, c->n, dw);
    }
    CHECK(dr <= 1e-5, "%s%s heads %d/%d of %d rope %d%s depth %d+%d recent %d: scalar vs plain attention %g", fn,
          ring ? " ring" : "", c->n_head, c->n_kv, c->hd, c->rope_dim, c->neox ? " neox" : "", c->n_past, c->n, c->recent, dr);
    for (int b = 0; b < n_fast; b++) {
        run_backend(fasts[b], &kv, c, Q, of, mf, lf);
        double df = rel_diff(or, of, no);
        worst_fast = fmax(worst_fast, df);
        CHECK(df <= 2e-5, "%s %s%s heads %d/%d of %d rope %d%s depth %d+%d recent %d: fast vs scalar %g",
              fasts[b]->description, fn, ring ? " ring" : "", c->n_head, c->n_kv, c->hd, c->rope_dim, c->neox ? " neox" : "", c->n_past,
              c->n, c->recent, df);
        if (c->track) {
            double dm = abs_diff(mr, mf, nm), dl = abs_diff(lr, lf, nm);
            CHECK(dm <= 1e-5 * c->n && dl <= 1e-5, "%s %s tracking: mass differs by %g, last by %g",
                  fasts[b]->description, fn, dm, dl);
            CHECK(kv.last_n == total, "%s tracking: last_n %d, want %d", fn, kv.last_n, total);
        }
    }
    free(k); free(v); free(chs); free(Q); free(of); free(or); free(on); free(mf); free(mr); free(lf); free(lr);
    kv_cache_free(&kv);   // frees the mask too
    if (ring) kv_cache_free(&whole);
}

int main(void) {
    test_seed();
    errbuf err = {{0}};
    backend *ref = backend_cpu_new(1, "scalar", &err), *fasts[2];
    if (!ref) { CHECK(0, "cpu backend: %s", err.msg); return test_finish(); }
    int n_fast = 0;
    const char *names[2] = { "avx512", "avx2" };
    for (int i = 0; i < 2; i++) {   // several threads: the jobs (kv heads x query blocks) split
        if (!cpu_kernels_select(names[i])) { SKIP("%s kernels: this processor or OS does not allow them", names[i]); continue; }
        fasts[n_fast] = backend_cpu_new(3, names[i], &err);
        if (!fasts[n_fast]) { CHECK(0, "cpu backend %s: %s", names[i], err.msg); continue; }
        printf("fast backend: %s\n", fasts[n_fast++]->description);
    }
    // fixed shapes: smollm-like decode, NeoX prefill across the query block, partial rope with a
    // head dim off the vector width, no rope, 7 query heads per kv head with masks and tracking,
    // heads straddling value groups (kv_dim 320: groups of 160), odd head dim (q4 codes of a head
    // starting mid-byte), sliding windows (16 slots under a 20-token prefill, 40 under 17), soft
    // caps (one under a window)
    const acase fixed[] = {
        { 9, 3, 64, 64, 0, 300, 1, 32, 0, 0, 0, 0 },   { 9, 3, 64, 64, 0, 127, 1, 32, 0, 0, 0, 0 },
        { 9, 3, 64, 64, 0, 128, 1, 32, 0, 1, 0, 0 },   { 4, 2, 32, 32, 1, 517, 20, 16, 0, 0, 16, 0 },
        { 8, 1, 40, 20, 0, 129, 3, 5, 0, 0, 0, 0 },    { 4, 4, 128, 0, 0, 255, 1, 32, 0, 0, 0, 0 },
        { 14, 2, 64, 64, 1, 383, 2, 32, 1, 1, 0, 0 },  { 10, 5, 64, 64, 0, 260, 17, 32, 0, 0, 40, 0 },
        { 2, 2, 33, 0, 0, 200, 2, 7, 0, 0, 0, 0 },     { 6, 3, 64, 48, 0, 0, 37, 32, 1, 1, 0, 0 },
        { 8, 4, 64, 64, 1, 300, 19, 32, 0, 1, 0, 1.5f }, { 4, 2, 32, 32, 1, 90, 1, 16, 0, 0, 24, 3.0f },
    };
    const enum kv_format fmts[] = { KV_F16, KV_Q8, KV_Q4, KV_F32 };
    int cases = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        for (size_t j = 0; j < 4; j++, cases++) {
            run_case(fasts, n_fast, ref, fmts[j], &fixed[i], false);
            if (fixed[i].window) run_case(fasts, n_fast, ref, fmts[j], &fixed[i], true), cases++;
        }
    // random shapes
    static const int hds[] = { 64, 32, 128, 48, 80, 16 };
    for (int r = 0; r < 24; r++, cases++) {
        acase c;
        c.n_kv = 1 + rng_int(3);
        c.n_head = c.n_kv * (1 + rng_int(7));
        c.hd = hds[rng_int(6)];
        int rd[3] = { c.hd, c.hd / 2, 0 };
        c.rope_dim = rd[rng_int(3)] & ~1;
        c.neox = rng_int(2);
        c.n_past = rng_int(700);
        c.n = rng_int(4) ? 1 : 1 + rng_int(40);
        c.recent = 1 + rng_int(64);
        c.masked = rng_int(4) == 0;
        c.track = rng_int(3) == 0;
        c.window = rng_int(3) == 0 ? 1 + rng_int(96) : 0;
        c.softcap = rng_int(4) == 0 ? 2.5f + 2.0f * rng_uniform() : 0.0f;   // 0.5 .. 4.5
        enum kv_format f = fmts[rng_int(4)];
        run_case(fasts, n_fast, ref, f, &c, false);
        if (c.window) run_case(fasts, n_fast, ref, f, &c, true), cases++;
    }
    CHECK(rings >= 8, "%d cases ran on a ring (want every window case whose ring is shorter than its context)", rings);
    printf("%d cases (%d on a ring): fast (each SIMD table) vs scalar worst %.3g (relative to the largest output), scalar vs plain %.3g\n", cases,
           rings, worst_fast, worst_ref);
    backend_destroy(ref);
    for (int i = 0; i < n_fast; i++) backend_destroy(fasts[i]);
    return test_finish();
}
