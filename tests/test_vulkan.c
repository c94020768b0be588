// The Vulkan backend against the CPU scalar reference: every op on random inputs of odd sizes
// (both reduction variants: subgroup and shared memory; attention also split across
// workgroups; attention over q8/q4 caches too), the device KV store pulled back against
// kv_cache_put's, then whole models (generated, every weight type, llama and qwen2; prefill and
// token-by-token decode) and the reference models of ../shared/ref. Skips, saying why, when no
// Vulkan device is present. CABIN_TEST_SEED fixes the random inputs; CABIN_VK_VALIDATE=1 also
// counts validation-layer errors.
#include "test.h"
#include "ref_util.h"
#include "model_util.h"
#include "engine/modelgen.h"
#include "engine/sampler.h"
#include "engine/wtype.h"
#include "vulkan/vulkan_backend.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// lavapipe (LLVM) keeps allocations that LeakSanitizer would report at exit; they are not ours.
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

static uint64_t rng_state;
static float frand(void) {   // uniform in [-1, 1)
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}
static int irand(int n) { return (int)((frand() * 0.5f + 0.5f) * (float)n) % n; }

static const uint32_t types[] = { WT_F32, WT_F16, WT_BF16, WT_Q8_0, WT_Q4_0 };
#define N_TYPES 5

// A host tensor of `type` from (ne1, ne0) floats.
static tensor make_tensor(uint32_t type, int64_t ne0, int64_t ne1, const float *src) {
    tensor t;
    memset(&t, 0, sizeof t);
    t.name = "test";
    t.type = type;
    t.ne0 = ne0;
    t.ne1 = ne1;
    t.row_bytes = (size_t)wtype_row_bytes(type, (uint64_t)ne0);
    t.n_bytes = t.row_bytes * (size_t)ne1;
    t.owned = xmalloc(t.n_bytes);
    for (int64_t r = 0; r < ne1; r++)
        wtype_get(type)->from_f32(src + r * ne0, (uint8_t *)t.owned + (size_t)r * t.row_bytes, ne0);
    t.data = t.owned;
    return t;
}

static tensor rand_tensor(uint32_t type, int64_t ne0, int64_t ne1, float scale) {
    float *f = xmalloc((size_t)(ne0 * ne1) * sizeof(float));
    for (int64_t i = 0; i < ne0 * ne1; i++) f[i] = frand() * scale;
    tensor t = make_tensor(type, ne0, ne1, f);
    free(f);
    return t;
}

static void free_tensor(backend *b[2], tensor *t) {
    for (int i = 0; i < 2; i++) b[i]->weight_release(b[i], t);
    free(t->owned);
}

// An activation of (rows, cols) random values (the same on every backend it is made for), set
// through the embed op from an F32 table.
typedef struct act2 { bk_act *a[2]; tensor src; int64_t rows, cols; } act2;

static act2 act_rand(backend *b[2], int64_t rows, int64_t cols) {
    act2 r = { .rows = rows, .cols = cols };
    r.src = rand_tensor(WT_F32, cols, rows, 1.0f);
    int32_t *ids = xmalloc((size_t)rows * sizeof *ids);
    for (int64_t i = 0; i < rows; i++) ids[i] = (int32_t)i;
    for (int i = 0; i < 2; i++) {
        errbuf err = {{0}};
        r.a[i] = b[i]->act_new(b[i], rows, cols);
        if (b[i]->weight_prepare(b[i], &r.src, &err)) CHECK(0, "%s", err.msg);
        b[i]->begin_batch(b[i]);
        b[i]->embed(b[i], &r.src, ids, (int)rows, r.a[i]);
        if (b[i]->end_batch(b[i], &err)) CHECK(0, "%s", err.msg);
    }
    free(ids);
    return r;
}

static void act_free2(backend *b[2], act2 *r) {
    for (int i = 0; i < 2; i++) b[i]->act_free(b[i], r->a[i]);
    free_tensor(b, &r->src);
}

// Reads n rows of both backends' copies and returns max |cpu - vulkan| / max(max |cpu|, floor).
static double act_diff_floor(backend *b[2], act2 *r, int n, double floor) {
    size_t cnt = (size_t)n * (size_t)r->cols;
    float *x0 = xmalloc(cnt * sizeof(float)), *x1 = xmalloc(cnt * sizeof(float));
    b[0]->act_read(b[0], r->a[0], 0, n, x0);
    b[1]->act_read(b[1], r->a[1], 0, n, x1);
    double worst = 0, scale = floor;
    for (size_t i = 0; i < cnt; i++) {
        if (fabs(x0[i]) > scale) scale = fabs(x0[i]);
        double d = fabs((double)x0[i] - x1[i]);
        if (!(d <= worst)) worst = d;   // NaN sticks
    }
    free(x0);
    free(x1);
    return worst / scale;
}

static double act_diff(backend *b[2], act2 *r, int n) { return act_diff_floor(b, r, n, 1e-3); }

static bool run_end(backend *b, const char *what) {
    errbuf err = {{0}};
    if (b->end_batch(b, &err)) { CHECK(0, "%s: %s", what, err.msg); return false; }
    return true;
}

// ---- ops ----

static void test_matmul(backend *b[2], const char *tag) {
    static const int rows[] = { 1, 3, 17, 67 }, ks[] = { 32, 96, 160 }, ns[] = { 1, 2, 5, 13 };
    int cases = 0, bad = 0;
    for (int ti = 0; ti < N_TYPES; ti++)
        for (int ri = 0; ri < 4; ri++)
            for (int ki = 0; ki < 3; ki++)
                for (int ni = 0; ni < 4; ni++) {
                    int M = rows[ri], K = ks[ki], n = ns[ni], x_row0 = (ri + ni) % 3;
                    tensor w = rand_tensor(types[ti], K, M, 0.5f);
                    act2 x = act_rand(b, n + x_row0, K), y = act_rand(b, n, M);
                    errbuf err = {{0}};
                    for (int i = 0; i < 2; i++) {
                        if (b[i]->weight_prepare(b[i], &w, &err)) { CHECK(0, "%s", err.msg); continue; }
                        b[i]->begin_batch(b[i]);
                        b[i]->matmul(b[i], &w, x.a[i], x_row0, n, y.a[i]);
                        run_end(b[i], "matmul");
                    }
                    double d = act_diff(b, &y, n);
                    cases++;
                    if (!(d <= 1e-4)) {
                        bad++;
                        CHECK(0, "%s matmul %s M=%d K=%d n=%d x_row0=%d: rel diff %g", tag, wtype_name(types[ti]),
                              M, K, n, x_row0, d);
                    }
                    act_free2(b, &x);
                    act_free2(b, &y);
                    free_tensor(b, &w);
                }
    CHECK(bad == 0, "%s matmul: %d of %d cases differ", tag, bad, cases);
}

static void test_embed(backend *b[2]) {
    for (int ti = 0; ti < N_TYPES; ti++) {
        int K = ti % 2 ? 96 : 160, V = 17, n = 13;
        tensor e = rand_tensor(types[ti], K, V, 1.0f);
        act2 y = act_rand(b, n, K);
        int32_t ids[13];
        for (int t = 0; t < n; t++) ids[t] = t == 0 ? V - 1 : irand(V);
        errbuf err = {{0}};
        for (int i = 0; i < 2; i++) {
            if (b[i]->weight_prepare(b[i], &e, &err)) { CHECK(0, "%s", err.msg); continue; }
            b[i]->begin_batch(b[i]);
            b[i]->embed(b[i], &e, ids, n, y.a[i]);
            run_end(b[i], "embed");
        }
        double d = act_diff(b, &y, n);
        CHECK(d <= 1e-6, "embed %s: rel diff %g", wtype_name(types[ti]), d);
        act_free2(b, &y);
        free_tensor(b, &e);
    }
}

static void test_rmsnorm_add_swiglu_bias(backend *b[2], const char *tag) {
    static const int cols[] = { 1, 17, 64, 300 }, ns[] = { 1, 2, 5, 13 };
    for (int ci = 0; ci < 4; ci++)
        for (int ni = 0; ni < 4; ni++) {
            int C = cols[ci], n = ns[ni];
            tensor g = rand_tensor(WT_F32, C, 1, 1.0f), bias = rand_tensor(WT_F32, C, 1, 1.0f);
            act2 x = act_rand(b, n, C), y = act_rand(b, n, C), z = act_rand(b, n, C);
            errbuf err = {{0}};
            for (int i = 0; i < 2; i++) {
                if (b[i]->weight_prepare(b[i], &g, &err) || b[i]->weight_prepare(b[i], &bias, &err)) {
                    CHECK(0, "%s", err.msg);
                    continue;
                }
                b[i]->begin_batch(b[i]);
                b[i]->rmsnorm(b[i], x.a[i], &g, 1e-5f, n, z.a[i]);   // z = norm(x)
                b[i]->rmsnorm(b[i], y.a[i], &g, 1e-6f, n, y.a[i]);   // in place
                b[i]->add(b[i], y.a[i], z.a[i], n);                  // y += z
                b[i]->add_bias(b[i], z.a[i], &bias, n);              // z += bias
                b[i]->swiglu(b[i], x.a[i], z.a[i], n);               // x = silu(x) * z
                run_end(b[i], "elementwise");
            }
            // Inputs are O(1); sums like norm(y) + norm(x) may cancel, so the scale is at least 1.
            double dx = act_diff_floor(b, &x, n, 1), dy = act_diff_floor(b, &y, n, 1), dz = act_diff_floor(b, &z, n, 1);
            CHECK(dx <= 1e-5 && dy <= 1e-5 && dz <= 1e-5,
                  "%s rmsnorm/add/bias/swiglu cols %d n %d: rel diffs %g %g %g", tag, C, n, dx, dy, dz);
            act_free2(b, &x); act_free2(b, &y); act_free2(b, &z);
            free_tensor(b, &g);
            free_tensor(b, &bias);
        }
}

static void test_rope(backend *b[2]) {
    static const struct { int heads, hd, rd; } shapes[] = { { 3, 8, 8 }, { 2, 32, 16 }, { 5, 64, 64 } };
    for (int si = 0; si < 3; si++)
        for (int neox = 0; neox < 2; neox++)
            for (int n = 1; n <= 13; n += 6) {
                rope_params p = { shapes[si].heads, shapes[si].hd, shapes[si].rd, si == 1 ? 500000.0f : 10000.0f, neox };
                act2 x = act_rand(b, n, (int64_t)p.n_heads * p.head_dim);
                int32_t pos[13];
                for (int t = 0; t < n; t++) pos[t] = irand(1000);
                for (int i = 0; i < 2; i++) {
                    b[i]->begin_batch(b[i]);
                    b[i]->rope(b[i], x.a[i], n, pos, &p);
                    run_end(b[i], "rope");
                }
                double d = act_diff(b, &x, n);
                CHECK(d <= 1e-5, "rope %s heads %d hd %d rd %d n %d: rel diff %g", neox ? "neox" : "normal",
                      p.n_heads, p.head_dim, p.rope_dim, n, d);
                act_free2(b, &x);
            }
}

// Fills slots [0, n_past) and then attends n tokens after them, on both backends.
static void attention_case(backend *b[2], enum kv_format f, int n_head, int n_kv, int hd, int n_past, int n,
                           const char *tag) {
    int kv_dim = n_kv * hd, n_ctx = n_past + n + 3;
    kv_cache kv[2];
    errbuf err = {{0}};
    for (int i = 0; i < 2; i++) {
        if (kv_cache_init(&kv[i], f, 1, n_ctx, kv_dim, &err) || b[i]->kv_prepare(b[i], &kv[i], &err)) {
            CHECK(0, "%s", err.msg);
            return;
        }
    }
    act2 kp = act_rand(b, n_past + n, kv_dim), vp = act_rand(b, n_past + n, kv_dim);
    act2 q = act_rand(b, n, (int64_t)n_head * hd), o = act_rand(b, n, (int64_t)n_head * hd);
    attn_params ap = { n_head, n_kv, hd, 1.0f / sqrtf((float)hd) };
    int32_t *slots = xmalloc((size_t)(n_past + n) * sizeof *slots);
    for (int s = 0; s < n_past + n; s++) slots[s] = s;
    for (int i = 0; i < 2; i++) {
        b[i]->begin_batch(b[i]);
        b[i]->kv_store(b[i], &kv[i], 0, kp.a[i], vp.a[i], n_past + n, slots);
        b[i]->attention(b[i], q.a[i], &kv[i], 0, n, n_past, &ap, o.a[i]);
        run_end(b[i], "attention");
    }
    double d = act_diff(b, &o, n);
    CHECK(d <= 1e-4, "%s attention %s heads %d/%d hd %d n_past %d n %d: rel diff %g", tag, kv_format_name(f), n_head,
          n_kv, hd, n_past, n, d);
    free(slots);
    act_free2(b, &kp); act_free2(b, &vp); act_free2(b, &q); act_free2(b, &o);
    for (int i = 0; i < 2; i++) { b[i]->kv_release(b[i], &kv[i]); kv_cache_free(&kv[i]); }
}

// Attention over a q8/q4 (or f16/f32) cache as model_forward builds it: keys rotated by slot
// (rope_dim of head_dim, normal or NeoX pairs), the past stored in two batches, then the n new
// tokens stored and attended in one, so the key and value folds happen inside batches (recent
// window 16: keys fold every 128 slots past 143, values one by one past 16). The device reads
// the codes the CPU would have written (test_kv_store), so the tolerance is float rounding: 1e-4
// of the largest output.
static double q_worst[KV_FORMAT_COUNT];   // largest attention_q_case difference per format

static void attention_q_case(backend *b[2], enum kv_format f, int n_head, int n_kv, int hd, int rope_dim, bool neox,
                             int n_past, int n, const char *tag) {
    int kv_dim = n_kv * hd, n_ctx = n_past + n + 5;
    kv_cache kv[2];
    errbuf err = {{0}};
    kv_shape sh = { n_head, n_kv, hd, rope_dim, 10000.0f, neox };
    for (int i = 0; i < 2; i++)
        if (kv_cache_init_ex(&kv[i], f, 16, 1, n_ctx, kv_dim, &err) || kv_cache_set_shape(&kv[i], &sh, &err) ||
            b[i]->kv_prepare(b[i], &kv[i], &err)) {
            CHECK(0, "%s", err.msg);
            return;
        }
    int cut = n_past / 3;   // the past in batches [0, cut), [cut, n_past), then the new tokens
    int bounds[4] = { 0, cut, n_past, n_past + n };
    act2 q = act_rand(b, n, (int64_t)n_head * hd), o = act_rand(b, n, (int64_t)n_head * hd);
    attn_params ap = { n_head, n_kv, hd, 1.0f / sqrtf((float)hd) };
    int32_t *slots = xmalloc((size_t)(n_past + n) * sizeof *slots);
    for (int s = 0; s < n_past + n; s++) slots[s] = s;
    for (int bi = 0; bi < 3; bi++) {
        int m = bounds[bi + 1] - bounds[bi];
        if (m <= 0) continue;
        act2 kp = act_rand(b, m, kv_dim), vp = act_rand(b, m, kv_dim);
        for (int i = 0; i < 2; i++) {
            b[i]->begin_batch(b[i]);
            b[i]->kv_store(b[i], &kv[i], 0, kp.a[i], vp.a[i], m, slots + bounds[bi]);
            if (bi == 2) b[i]->attention(b[i], q.a[i], &kv[i], 0, n, n_past, &ap, o.a[i]);
            run_end(b[i], "attention");
        }
        act_free2(b, &kp); act_free2(b, &vp);
    }
    double d = act_diff(b, &o, n);
    if (!(d <= q_worst[f])) q_worst[f] = d;
    CHECK(d <= 1e-4, "%s attention %s heads %d/%d hd %d rope %d%s n_past %d n %d: rel diff %g (tolerance 1e-4)", tag,
          kv_format_name(f), n_head, n_kv, hd, rope_dim, neox ? " neox" : "", n_past, n, d);
    free(slots);
    act_free2(b, &q); act_free2(b, &o);
    for (int i = 0; i < 2; i++) { b[i]->kv_release(b[i], &kv[i]); kv_cache_free(&kv[i]); }
}

static void test_attention(backend *b[2], const char *tag, bool long_ctx) {
    static const int pasts[] = { 0, 1, 7, 40 };
    for (int pi = 0; pi < 4; pi++) {
        attention_case(b, KV_F16, 4, 2, 16, pasts[pi], 1, tag);
        attention_case(b, KV_F16, 3, 1, 32, pasts[pi], 5, tag);
        attention_case(b, KV_F32, 4, 4, 8, pasts[pi], 13, tag);
    }
    attention_case(b, KV_F16, 2, 1, 256, 9, 2, tag);   // the largest head size
    if (long_ctx) attention_case(b, KV_F16, 4, 2, 64, 700, 1, tag);   // split automatically
    static const int qpasts[] = { 0, 20, 150, 290 };
    for (int pi = 0; pi < 4; pi++) {
        attention_q_case(b, KV_Q8, 4, 2, 32, 32, false, qpasts[pi], 1, tag);
        attention_q_case(b, KV_Q4, 4, 2, 32, 32, false, qpasts[pi], 9, tag);
        attention_q_case(b, pi % 2 ? KV_Q4 : KV_Q8, 3, 1, 64, 32, true, qpasts[pi], 5, tag);   // partial NeoX rope
    }
    attention_q_case(b, KV_F16, 4, 2, 32, 32, false, 150, 3, tag);   // f16/f32 keys rotated by slot too
    attention_q_case(b, KV_F32, 3, 1, 64, 32, true, 40, 2, tag);
    if (long_ctx) attention_q_case(b, KV_Q4, 4, 2, 64, 64, false, 700, 1, tag);   // split automatically
    printf("note: %s attention over built caches, cpu vs vulkan: rel diff q8 %.3g, q4 %.3g, f16 %.3g, f32 %.3g\n", tag,
           q_worst[KV_Q8], q_worst[KV_Q4], q_worst[KV_F16], q_worst[KV_F32]);
    memset(q_worst, 0, sizeof q_worst);
}

// Element i of a q8 (one byte) or q4 (nibble, low first) code array.
static int code_of(enum kv_format f, const uint8_t *base, size_t i) {
    return f == KV_Q8 ? base[i] : (base[i / 2] >> ((i & 1) * 4)) & 15;
}

// The device store against kv_cache_put's: the same rows stored in batches of varied size on
// both backends (key folds inside a batch, a batch longer than the value ring, single tokens),
// then the device copy pulled back (kv->bk_sync) and compared section by section. F16 rows,
// f16 scales and mins must be identical; codes too, except that a device whose division is not
// correctly rounded may put a value at an exact half step one code away: allowed for at most
// 1 code in 1000, by one step at most.
static void store_case(backend *b[2], const char *tag, enum kv_format f, int kv_dim, int recent, int n_ctx) {
    kv_cache kv[2];
    errbuf err = {{0}};
    for (int i = 0; i < 2; i++)
        if (kv_cache_init_ex(&kv[i], f, recent, 2, n_ctx, kv_dim, &err) || b[i]->kv_prepare(b[i], &kv[i], &err)) {
            CHECK(0, "store %s: %s", kv_format_name(f), err.msg);
            return;
        }
    static const int batches[] = { 1, 5, 37, 1, 1, 130, 3, 64, 2, 90, 1, 7 };
    int used = 0;
    int32_t slots[256];
    for (size_t bi = 0; bi < sizeof batches / sizeof batches[0] && used + batches[bi] <= n_ctx; bi++) {
        int n = batches[bi];
        act2 ka = act_rand(b, n, kv_dim), va = act_rand(b, n, kv_dim);
        for (int t = 0; t < n; t++) slots[t] = used + t;
        for (int i = 0; i < 2; i++) {
            b[i]->begin_batch(b[i]);
            for (int l = 0; l < 2; l++) b[i]->kv_store(b[i], &kv[i], l, ka.a[i], va.a[i], n, slots);
            run_end(b[i], "kv_store");
            kv[i].n_used = used + n;
        }
        used += n;
        act_free2(b, &ka); act_free2(b, &va);
    }
    if (kv[1].bk_sync(&kv[1], KV_SYNC_PULL, &err)) { CHECK(0, "pull: %s", err.msg); goto out; }
    size_t D = (size_t)kv_dim, rb = kv[0].row_bytes;
    long codes = 0, code_diff = 0, bad = 0;
    int worst = 0;
    for (int l = 0; l < 2; l++) {
        if (f == KV_F16 || f == KV_F32) {
            bad += memcmp(kv[0].k[l], kv[1].k[l], (size_t)used * rb) != 0;
            bad += memcmp(kv[0].v[l], kv[1].v[l], (size_t)used * rb) != 0;
            continue;
        }
        int nq = kv[0].nq[l], nqv = kv[0].nqv[l], ng = kv_dim / kv[0].gv;
        if (nq != kv[1].nq[l] || nqv != kv[1].nqv[l]) {
            CHECK(0, "store %s: counters cpu %d/%d, vulkan %d/%d", kv_format_name(f), nq, nqv, kv[1].nq[l], kv[1].nqv[l]);
            goto out;
        }
        bad += memcmp(kv[0].k[l], kv[1].k[l], (size_t)(used - nq) * rb) != 0;            // key window
        bad += memcmp(kv[0].v[l], kv[1].v[l], (size_t)kv[0].vcap * rb) != 0;             // value ring
        bad += memcmp(kv[0].kp[l], kv[1].kp[l], (size_t)nq / KV_GROUP * D * 4) != 0;     // key scale, min
        bad += memcmp(kv[0].vp[l], kv[1].vp[l], (size_t)nqv * (size_t)ng * 4) != 0;      // value scale, min
        for (int which = 0; which < 2; which++) {
            size_t n = which ? (size_t)nqv * D : (size_t)nq * D;
            const uint8_t *c0 = which ? kv[0].vq[l] : kv[0].kq[l], *c1 = which ? kv[1].vq[l] : kv[1].kq[l];
            for (size_t i = 0; i < n; i++) {
                int d = abs(code_of(f, c0, i) - code_of(f, c1, i));
                code_diff += d != 0;
                if (d > worst) worst = d;
            }
            codes += (long)n;
        }
    }
    CHECK(bad == 0, "store %s kv_dim %d: %ld F16 row or (scale, min) sections differ", kv_format_name(f), kv_dim, bad);
    CHECK(worst <= 1 && code_diff * 1000 <= codes, "store %s kv_dim %d: %ld of %ld codes differ (at most %d steps)",
          kv_format_name(f), kv_dim, code_diff, codes, worst);
    if (f == KV_Q8 || f == KV_Q4)
        printf("note: %s device store %s kv_dim %d (value groups of %d): %d slots, %d key / %d value slots quantized, "
               "%ld of %ld codes differ from the cpu's\n", tag, kv_format_name(f), kv_dim, kv[0].gv, used, kv[0].nq[0],
               kv[0].nqv[0], code_diff, codes);
out:
    for (int i = 0; i < 2; i++) { b[i]->kv_release(b[i], &kv[i]); kv_cache_free(&kv[i]); }
}

static void test_kv_store(backend *b[2], const char *tag) {
    store_case(b, tag, KV_Q8, 64, 16, 400);
    store_case(b, tag, KV_Q4, 64, 16, 400);
    store_case(b, tag, KV_Q8, 192, 32, 400);    // one value group of 192
    store_case(b, tag, KV_Q4, 512, 32, 360);    // value groups of 128
    store_case(b, tag, KV_F16, 64, 0, 400);
    store_case(b, tag, KV_F32, 64, 0, 400);
}

// ---- models ----

static char tmpdir[256];

static const char *gen_model(const char *arch, uint32_t type, uint64_t seed) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s-%s.gguf", tmpdir, arch, wtype_name(type));
    modelgen_opts o = modelgen_defaults();
    o.arch = arch;
    o.type = o.embd_type = type;
    o.dim = 96; o.n_head = 3; o.n_kv_head = 1; o.ffn_dim = 160; o.n_vocab = 300;
    o.seed = seed;
    o.tied = strcmp(arch, "qwen2") == 0;
    errbuf err = {{0}};
    if (modelgen_write(&o, path, &err)) { CHECK(0, "%s", err.msg); return NULL; }
    return path;
}

typedef struct vrun { backend *b; kv_cache kv; forward_ctx fc; } vrun;

static int vrun_open(vrun *r, backend *b, model *m, int n_ctx, int n_batch, errbuf *err) {
    memset(r, 0, sizeof *r);
    r->b = b;
    if (model_prepare_backend(m, b, err)) return -1;
    if (kv_cache_init(&r->kv, KV_F16, m->hp.n_layer, n_ctx, m->hp.n_kv_head * m->hp.head_dim, err)) return -1;
    if (b->kv_prepare(b, &r->kv, err)) return -1;
    return forward_ctx_init(&r->fc, b, m, n_batch, n_batch, err);
}

static void release_one(tensor *t, void *ud) { backend *b = ud; b->weight_release(b, t); }

static void vrun_close(vrun *r, model *m) {
    forward_ctx_free(&r->fc);
    if (r->kv.k) r->b->kv_release(r->b, &r->kv);
    kv_cache_free(&r->kv);
    model_for_each_tensor(m, release_one, r->b);
}

static float max_diff(const float *a, const float *b, size_t n) {
    float w = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= w)) w = d;
    }
    return w;
}

static void test_model(backend *vk, const char *arch, uint32_t type, uint64_t seed) {
    const char *path = gen_model(arch, type, seed);
    if (!path) return;
    model *m;
    errbuf err = {{0}};
    if (model_load(&m, path, &err)) { CHECK(0, "%s", err.msg); return; }
    int nv = m->hp.n_vocab, n = 13;
    int32_t toks[13];
    for (int i = 0; i < n; i++) toks[i] = irand(nv);
    float *ref = xmalloc((size_t)nv * n * sizeof(float)), *got = xmalloc((size_t)nv * n * sizeof(float));
    float *one = xmalloc((size_t)nv * sizeof(float));
    runner r;
    if (runner_open(&r, m, "scalar", 1, KV_F16, 32, n, &err) ||
        model_forward(&r.fc, &r.kv, toks, n, true, ref, &err)) {
        CHECK(0, "%s", err.msg);
        runner_close(&r);
        goto out;
    }
    runner_close(&r);
    float scale = max_abs(ref, nv * n);
    double tol = (type == WT_Q8_0 || type == WT_Q4_0) ? 0.02 : 2e-3;
    vrun v;
    if (vrun_open(&v, vk, m, 32, n, &err) || model_forward(&v.fc, &v.kv, toks, n, true, got, &err)) {
        CHECK(0, "%s %s: %s", arch, wtype_name(type), err.msg);
        vrun_close(&v, m);
        goto out;
    }
    float worst = max_diff(ref, got, (size_t)nv * n);
    CHECK(worst <= tol * scale, "%s %s prefill: max diff %g (scale %g)", arch, wtype_name(type), worst, scale);
    // token by token from an empty cache (profiled: timestamps per op kind)
    kv_cache_clear(&v.kv);
    vk->profile_reset(vk);
    vk->set_profiling(vk, true);
    float dec = 0;
    for (int i = 0; i < n; i++) {
        if (model_forward(&v.fc, &v.kv, &toks[i], 1, false, one, &err)) { CHECK(0, "%s", err.msg); break; }
        float d = max_diff(ref + (size_t)i * nv, one, (size_t)nv);
        if (d > dec) dec = d;
    }
    CHECK(dec <= tol * scale, "%s %s decode: max diff %g (scale %g)", arch, wtype_name(type), dec, scale);
    double secs[OP_COUNT];
    uint64_t calls[OP_COUNT];
    vk->profile_read(vk, secs, calls);
    vk->set_profiling(vk, false);
    CHECK(calls[OP_MATMUL] == (uint64_t)n * (7 * m->hp.n_layer + 1) && calls[OP_ATTENTION] == (uint64_t)n * m->hp.n_layer &&
          secs[OP_MATMUL] > 0 && secs[OP_ATTENTION] > 0, "%s %s profile: %llu matmuls in %g s, %llu attentions in %g s",
          arch, wtype_name(type), (unsigned long long)calls[OP_MATMUL], secs[OP_MATMUL],
          (unsigned long long)calls[OP_ATTENTION], secs[OP_ATTENTION]);
    printf("note: %s %s: vulkan vs scalar max diff prefill %.3g, decode %.3g (largest logit %.3g)\n", arch,
           wtype_name(type), worst, dec, scale);
    vrun_close(&v, m);
out:
    free(ref); free(got); free(one);
    model_free(m);
    unlink(path);
}

static void test_ref_model(backend *vk, const char *dir, const char *json_name) {
    char path[1600];
    errbuf err = {{0}};
    cJSON *root = ref_load_json(dir, json_name, path, sizeof path, &err);
    if (!root) { CHECK(0, "%s", err.msg); return; }
    model *m = NULL;
    if (model_load(&m, path, &err)) {
        SKIP("%s: not loadable here (%s)", json_name, err.msg);
        cJSON_Delete(root);
        return;
    }
    uint32_t t = m->layers[0].wq.type;
    double tol = ref_tolerance(t);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0);
    int32_t *toks;
    int n = ref_load_ids(cJSON_GetObjectItem(c, "tokens"), &toks);
    float *logits = xmalloc((size_t)m->hp.n_vocab * sizeof(float));
    vrun v;
    if (vrun_open(&v, vk, m, n + 4, n, &err) || model_forward(&v.fc, &v.kv, toks, n, false, logits, &err)) {
        CHECK(0, "%s: %s", json_name, err.msg);
    } else {
        const cJSON *top = cJSON_GetObjectItem(c, "top_logits");
        double big, worst = ref_compare_top(top, logits, &big);
        CHECK(worst <= tol * big, "%s: vulkan vs reference top logits: max diff %.5f > %.5f", json_name, worst, tol * big);
        int ref_arg = (int)cJSON_GetArrayItem(cJSON_GetArrayItem(top, 0), 0)->valuedouble;
        double margin = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "greedy_margins"), 0)->valuedouble;
        int ours = argmax_f32(logits, m->hp.n_vocab);
        CHECK(ours == ref_arg || margin < 2 * tol * big, "%s: argmax %d, reference %d", json_name, ours, ref_arg);
        printf("note: %s: vulkan vs reference max diff %.5f (tolerance %.5f)\n", json_name, worst, tol * big);
    }
    vrun_close(&v, m);
    free(logits);
    free(toks);
    model_free(m);
    cJSON_Delete(root);
}

static void test_ref_models(backend *vk) {
    const char *dir = test_ref_dir();
    if (!dir) { SKIP("../shared/ref is absent: no reference models"); return; }
    char mdir[600];
    snprintf(mdir, sizeof mdir, "%s/models", dir);
    DIR *d = opendir(mdir);
    if (!d) { SKIP("%s: cannot open", mdir); return; }
    struct dirent *e;
    char names[32][200];
    int n = 0;
    while ((e = readdir(d)) && n < 32) {
        size_t len = strlen(e->d_name);
        if (len > 5 && len < 200 && strcmp(e->d_name + len - 5, ".json") == 0 && !strstr(e->d_name, "_K_"))
            memcpy(names[n++], e->d_name, len + 1);
    }
    closedir(d);
    for (int i = 0; i < n; i++) test_ref_model(vk, dir, names[i]);
}

// A Vulkan backend made with environment overrides (var=value pairs; NULL ends the list).
static backend *vk_with_env(errbuf *err, const char *var, const char *val, const char *var2, const char *val2) {
    setenv(var, val, 1);
    if (var2) setenv(var2, val2, 1);
    backend *b = backend_vulkan_new(-1, err);
    unsetenv(var);
    if (var2) unsetenv(var2);
    return b;
}

int main(void) {
    const char *s = getenv("CABIN_TEST_SEED");
    uint64_t seed = s && *s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    printf("seed %llu (CABIN_TEST_SEED=%llu repeats this run)\n", (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed * 2654435761u + 88172645463325252ull;
    errbuf err = {{0}};
    backend *vk = backend_vulkan_new(-1, &err);
    if (!vk) {
        SKIP("no usable Vulkan device: %s", err.msg);
        return test_finish();
    }
    printf("device: %s\n", vk->description);
    backend *cpu = backend_cpu_new(1, "scalar", &err);
    if (!cpu) { CHECK(0, "%s", err.msg); backend_destroy(vk); return test_finish(); }
    double t0 = now_sec();
    backend *b[2] = { cpu, vk };
    test_embed(b);
    test_matmul(b, "default");
    test_rmsnorm_add_swiglu_bias(b, "default");
    test_rope(b);
    test_attention(b, "default", true);
    test_kv_store(b, "default");
    printf("note: ops checked in %.1f s\n", now_sec() - t0);

    // Both matmul shapes whatever the device prefers (row per invocation: CPU devices;
    // workgroup per row: GPUs), the shared-memory reductions (devices without subgroup
    // arithmetic) and forced attention splits.
    bool rows = strcmp(getenv("CABIN_VK_MATMUL") ? getenv("CABIN_VK_MATMUL") : "", "rows") == 0 ||
                strstr(vk->description, "llvmpipe") || strstr(vk->description, "CPU");
    backend *other = vk_with_env(&err, "CABIN_VK_MATMUL", rows ? "wg" : "rows", NULL, NULL);
    if (!other) CHECK(0, "%s", err.msg);
    else {
        backend *b1[2] = { cpu, other };
        test_matmul(b1, rows ? "workgroup-per-row" : "row-per-invocation");
        backend_destroy(other);
    }
    backend *sh = vk_with_env(&err, "CABIN_VK_NO_SUBGROUP", "1", "CABIN_VK_MATMUL", "wg");
    if (!sh) CHECK(0, "%s", err.msg);
    else {
        backend *b2[2] = { cpu, sh };
        test_matmul(b2, "shared-memory");
        test_rmsnorm_add_swiglu_bias(b2, "shared-memory");
        test_attention(b2, "shared-memory", false);
        CHECK(backend_vulkan_validation_errors(sh) == 0, "validation errors: %d", backend_vulkan_validation_errors(sh));
        backend_destroy(sh);
    }
    backend *sp = vk_with_env(&err, "CABIN_VK_ATTN_SPLIT", "3", NULL, NULL);
    if (!sp) CHECK(0, "%s", err.msg);
    else {
        backend *b3[2] = { cpu, sp };
        test_attention(b3, "split", false);
        CHECK(backend_vulkan_validation_errors(sp) == 0, "validation errors: %d", backend_vulkan_validation_errors(sp));
        backend_destroy(sp);
    }
    // device buffers that are not host-visible (a discrete GPU's): the KV store's pull, the rope
    // table and statistics uploads go through staging buffers
    backend *um = vk_with_env(&err, "CABIN_VK_UNMAPPED", "1", NULL, NULL);
    if (!um) CHECK(0, "%s", err.msg);
    else {
        backend *b4[2] = { cpu, um };
        test_kv_store(b4, "unmapped");
        attention_q_case(b4, KV_Q4, 4, 2, 32, 32, false, 290, 9, "unmapped");
        attention_q_case(b4, KV_Q8, 3, 1, 64, 32, true, 150, 1, "unmapped");
        CHECK(backend_vulkan_validation_errors(um) == 0, "validation errors: %d", backend_vulkan_validation_errors(um));
        backend_destroy(um);
    }
    printf("note: variants checked in %.1f s\n", now_sec() - t0);

    snprintf(tmpdir, sizeof tmpdir, "/tmp/cabin-test-vulkan-%d", (int)getpid());
    CHECK(mkdir(tmpdir, 0700) == 0, "mkdir %s", tmpdir);
    for (int a = 0; a < 2; a++)
        for (int ti = 0; ti < N_TYPES; ti++) test_model(vk, a ? "qwen2" : "llama", types[ti], seed + (uint64_t)ti);
    rmdir(tmpdir);
    printf("note: models checked in %.1f s\n", now_sec() - t0);
    test_ref_models(vk);

    uint64_t heaps[16];
    int nh = backend_vulkan_heap_bytes(vk, heaps, 16);
    CHECK(nh > 0, "no memory heaps reported");
    CHECK(backend_vulkan_validation_errors(vk) == 0, "validation errors: %d", backend_vulkan_validation_errors(vk));
    backend_destroy(vk);
    backend_destroy(cpu);
    printf("note: total %.1f s\n", now_sec() - t0);
    return test_finish();
}
