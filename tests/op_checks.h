// The op checks of engine/backend.h, shared by tests/test_ops.c (every registered backend) and
// tests/test_vulkan.c (the Vulkan backend's variants): a backend under test, b[1], against the
// reference, b[0] (cpu-scalar), on the same random inputs (tests/rng.h). rmsnorm is checked on
// whole rows and per head (a weight shorter than the row).
//
// Tolerances bound the rounding an op may do, from the terms that make up each output element,
// not from the output's size (a sum can cancel to near 0 while its terms are large):
//   matmul    2(K+2)u · Σ|w·x| (float sums of K products in any order, on either side); a backend
//             that rounds activations to 8 bits (backend.act_q8_types) also Σ|w|·step/2, the
//             step amax/127 of each block of 32 (Q8_0) or 256 (Q8_K, backend.act_q8k_types); one
//             that rounds them to bf16 (backend.act_bf16_types) also 2^-8 · Σ|w·x|
//   rmsnorm   (C+32)u of each normalized term, through add, scale, bias and glu (silu: 32u; GELU: 32u|x|): float
//             sums plus the few ULP GLSL allows inversesqrt, division and exp
//   rope      4u · (|a·cos| + |b·sin|) per rotated element (both sides read the same cos/sin
//             from engine/rope.h); elements past rope_dim must not change
// with u = 2^-24, the unit roundoff of float. A type a backend converts at upload
// (backend.converts_types) is checked on that conversion, which the reference is given. Embedding rows are exact dequantizations (1e-6 of
// the largest value); attention is held to 1e-4 of the largest output.
#ifndef CABIN_TEST_OP_CHECKS_H
#define CABIN_TEST_OP_CHECKS_H

#include "test.h"
#include "rng.h"
#include "engine/backend.h"
#include "engine/half.h"
#include "engine/rope.h"
#include "engine/wtype.h"

#include <math.h>
#include <stdbool.h>

#define F32_U 0x1p-24

// Weight types both backends multiply by (n of them into types; at most WT_COUNT).
static int op_matmul_types(backend *b[2], uint32_t *types) {
    int n = 0;
    for (uint32_t t = 0; t < WT_COUNT; t++) {
        const wtype_info *ti = wtype_get(t);
        if (ti && ti->to_f32 && b[0]->supports_type(b[0], t) && b[1]->supports_type(b[1], t))
            types[n++] = t;
    }
    return n;
}

// A host tensor of `type`, ne1 rows of ne0 elements, its bytes allocated and not set.
static tensor op_alloc_tensor(uint32_t type, int64_t ne0, int64_t ne1) {
    tensor t;
    memset(&t, 0, sizeof t);
    t.name = "test";
    t.type = type;
    t.ne0 = ne0;
    t.ne1 = ne1;
    t.row_bytes = (size_t)wtype_row_bytes(type, (uint64_t)ne0);
    t.n_bytes = t.row_bytes * (size_t)ne1;
    t.owned = xmalloc(t.n_bytes);
    t.data = t.owned;
    return t;
}

// A host tensor of `type` from (ne1, ne0) floats.
static tensor op_make_tensor(uint32_t type, int64_t ne0, int64_t ne1, const float *src) {
    tensor t = op_alloc_tensor(type, ne0, ne1);
    for (int64_t r = 0; r < ne1; r++)
        wtype_get(type)->from_f32(src + r * ne0, (uint8_t *)t.owned + (size_t)r * t.row_bytes, ne0);
    return t;
}

// Types cabin reads but does not write: where each block keeps its fp16 super-scales (byte
// offsets, up to 2) and the largest |code × sub-scale| they multiply, so that random blocks
// (random codes and sub-scales) hold weights of about the asked scale.
typedef struct op_block_scales { uint32_t type; int off[2], n_off; double max_code; } op_block_scales;
static const op_block_scales op_rand_block_types[] = {
    { WT_Q4_1, { 0, 2 }, 2, 15 },        { WT_Q5_0, { 0 }, 1, 16 },      { WT_Q5_1, { 0, 2 }, 2, 31 },
    { WT_IQ4_NL, { 0 }, 1, 127 },        { WT_IQ4_XS, { 0 }, 1, 32 * 127 }, { WT_Q2_K, { 80, 82 }, 2, 45 },
    { WT_Q3_K, { 108 }, 1, 32 * 4 },     { WT_Q4_K, { 0, 2 }, 2, 63 * 15 }, { WT_Q5_K, { 0, 2 }, 2, 63 * 31 },
    { WT_Q6_K, { 208 }, 1, 32 * 128 },
};

// Random blocks of a type without a quantizer: random bytes, then each fp16 super-scale set to
// a random value of magnitude up to scale / max_code.
static tensor op_rand_blocks(uint32_t type, int64_t ne0, int64_t ne1, float scale) {
    const op_block_scales *bsc = NULL;
    for (size_t i = 0; i < sizeof op_rand_block_types / sizeof op_rand_block_types[0]; i++)
        if (op_rand_block_types[i].type == type) bsc = &op_rand_block_types[i];
    tensor t = op_alloc_tensor(type, ne0, ne1);
    uint8_t *p = t.owned;
    for (size_t i = 0; i < t.n_bytes; i++) p[i] = (uint8_t)rng_int(256);
    const wtype_info *ti = wtype_get(type);
    for (size_t b = 0; bsc && b < t.n_bytes / ti->block_bytes; b++)
        for (int k = 0; k < bsc->n_off; k++) {
            uint16_t h = f32_to_fp16((float)(rng_uniform() * scale / bsc->max_code));
            memcpy(p + b * ti->block_bytes + bsc->off[k], &h, 2);
        }
    return t;
}

static tensor op_rand_tensor(uint32_t type, int64_t ne0, int64_t ne1, float scale) {
    if (!wtype_get(type)->from_f32) return op_rand_blocks(type, ne0, ne1, scale);
    float *f = xmalloc((size_t)(ne0 * ne1) * sizeof(float));
    for (int64_t i = 0; i < ne0 * ne1; i++) f[i] = rng_uniform() * scale;
    tensor t = op_make_tensor(type, ne0, ne1, f);
    free(f);
    return t;
}

// (ne1, ne0) floats: the tensor's values as every backend reads them.
static float *op_tensor_f32(const tensor *t) {
    float *f = xmalloc((size_t)(t->ne0 * t->ne1) * sizeof(float));
    for (int64_t r = 0; r < t->ne1; r++)
        wtype_get(t->type)->to_f32((const uint8_t *)t->data + (size_t)r * t->row_bytes, f + r * t->ne0, t->ne0);
    return f;
}

static void op_free_tensor(backend *b[2], tensor *t) {
    for (int i = 0; i < 2; i++) b[i]->weight_release(b[i], t);
    free(t->owned);
}

static bool op_prepare(backend *b[2], tensor *t) {
    errbuf err = {{0}};
    for (int i = 0; i < 2; i++)
        if (b[i]->weight_prepare(b[i], t, &err)) { CHECK(0, "%s: %s", b[i]->name, err.msg); return false; }
    return true;
}

// A backend that converts w's type at upload (backend.converts_types) multiplies the conversion
// of w (to its convert_type): the other backend is given that conversion, so both hold the same
// weights. Fills wt[i], the tensor backend i takes, and wc (the conversion, when made).
static bool op_prepare_pair(backend *b[2], tensor *w, tensor *wc, tensor *wt[2]) {
    const int converter = (b[1]->converts_types >> w->type) & 1 ? 1 : (b[0]->converts_types >> w->type) & 1 ? 0 : -1;
    const bool conv = converter >= 0;
    memset(wc, 0, sizeof *wc);
    if (conv) {
        const uint32_t to = b[converter]->convert_type;
        *wc = *w;
        wc->type = to;
        wc->row_bytes = (size_t)wtype_row_bytes(to, (uint64_t)w->ne0);
        wc->n_bytes = wc->row_bytes * (size_t)w->ne1;
        wc->owned = xmalloc(wc->n_bytes);
        wc->data = wc->owned;
        float *f = op_tensor_f32(w);
        for (int64_t r = 0; r < w->ne1; r++)
            wtype_get(to)->from_f32(f + r * w->ne0, (uint8_t *)wc->owned + (size_t)r * wc->row_bytes, w->ne0);
        free(f);
    }
    errbuf err = {{0}};
    for (int i = 0; i < 2; i++) {
        wt[i] = conv && !((b[i]->converts_types >> w->type) & 1) ? wc : w;
        if (b[i]->weight_prepare(b[i], wt[i], &err)) { CHECK(0, "%s: %s", b[i]->name, err.msg); return false; }
    }
    return true;
}

// An activation on both backends: (rows, cols) floats; host: the values written (uniform in
// [-1, 1)), NULL for an output.
typedef struct act2 { bk_act *a[2]; float *host; int64_t rows, cols; } act2;

static act2 op_act(backend *b[2], int64_t rows, int64_t cols, bool random) {
    act2 r = { .rows = rows, .cols = cols };
    if (random) {
        r.host = xmalloc((size_t)(rows * cols) * sizeof(float));
        for (int64_t i = 0; i < rows * cols; i++) r.host[i] = rng_uniform();
    }
    for (int i = 0; i < 2; i++) {
        r.a[i] = b[i]->act_new(b[i], rows, cols);
        if (r.host) b[i]->act_write(b[i], r.a[i], 0, rows, r.host);
    }
    return r;
}
static act2 op_act_rand(backend *b[2], int64_t rows, int64_t cols) { return op_act(b, rows, cols, true); }

static void op_act_free(backend *b[2], act2 *r) {
    for (int i = 0; i < 2; i++) b[i]->act_free(b[i], r->a[i]);
    free(r->host);
}

static bool op_run_end(backend *b, const char *what) {
    errbuf err = {{0}};
    if (b->end_batch(b, &err)) { CHECK(0, "%s %s: %s", b->name, what, err.msg); return false; }
    return true;
}

// The first n rows of both copies: x[0] the reference's, x[1] the tested backend's (free both).
static void op_read(backend *b[2], const act2 *r, int n, float *x[2]) {
    for (int i = 0; i < 2; i++) {
        x[i] = xmalloc((size_t)n * (size_t)r->cols * sizeof(float));
        b[i]->act_read(b[i], r->a[i], 0, n, x[i]);
    }
}

// max |ref - got| / max(max |ref|, floor) over n rows.
static double op_diff_floor(backend *b[2], const act2 *r, int n, double floor) {
    float *x[2];
    op_read(b, r, n, x);
    double worst = 0, scale = floor;
    for (size_t i = 0; i < (size_t)n * (size_t)r->cols; i++) {
        if (fabs(x[0][i]) > scale) scale = fabs(x[0][i]);
        double d = fabs((double)x[0][i] - x[1][i]);
        if (!(d <= worst)) worst = d;   // NaN sticks
    }
    free(x[0]);
    free(x[1]);
    return worst / scale;
}
static double op_diff(backend *b[2], const act2 *r, int n) { return op_diff_floor(b, r, n, 1e-3); }

// Elements of n rows outside their bounds tol (n * cols): how many; *worst: the largest
// |ref - got| / tol (NaN counts as outside).
static int op_outside(backend *b[2], const act2 *r, int n, const double *tol, double *worst) {
    float *x[2];
    op_read(b, r, n, x);
    int bad = 0;
    for (size_t i = 0; i < (size_t)n * (size_t)r->cols; i++) {
        double d = fabs((double)x[0][i] - x[1][i]);
        if (!(d <= tol[i])) bad++;
        double q = tol[i] > 0 ? d / tol[i] : (d > 0 ? INFINITY : 0);
        if (!(q <= *worst)) *worst = q;
    }
    free(x[0]);
    free(x[1]);
    return bad;
}

// ---- matmul ----

// Bounds of y = W x (rows x_row0 .. x_row0+n of x): (n, M).
// act_block: the values sharing one activation scale (32 for Q8_0, 256 for Q8_K), 0: float.
static double *op_matmul_bounds(const tensor *w, const float *x, int64_t x_cols, int n, int act_block,
                                bool act_bf16) {
    int64_t M = w->ne1, K = w->ne0;
    float *wf = op_tensor_f32(w);
    double *tol = xmalloc((size_t)n * (size_t)M * sizeof(double)), eps = 2.0 * (double)(K + 2) * F32_U;
    double *half_step = xmalloc((size_t)K * sizeof(double));   // per x element: half its 8-bit step
    const int64_t blk = act_block > 0 ? act_block : 32;
    for (int t = 0; t < n; t++) {
        const float *xr = x + (int64_t)t * x_cols;
        for (int64_t b0 = 0; b0 < K; b0 += blk) {
            double amax = 0;
            for (int64_t k = b0; k < b0 + blk && k < K; k++) amax = fmax(amax, fabs(xr[k]));
            for (int64_t k = b0; k < b0 + blk && k < K; k++) half_step[k] = amax / 254.0 * (1.0 + 0x1p-9);
        }
        for (int64_t r = 0; r < M; r++) {
            double s = 0, q = 0;
            for (int64_t k = 0; k < K; k++) {
                s += fabs((double)wf[r * K + k] * xr[k]);
                q += fabs((double)wf[r * K + k]) * half_step[k];
            }
            tol[(size_t)t * M + r] = eps * s + (act_block ? q * (1.0 + 2.0 * eps) : 0.0) +
                                     (act_bf16 ? s * 0x1p-8 * (1.0 + 2.0 * eps) : 0.0);
        }
    }
    free(half_step);
    free(wf);
    return tol;
}

static void op_check_matmul(backend *b[2], const char *tag) {
    static const int rows[] = { 1, 3, 17, 67 }, ks[] = { 32, 96, 160 }, ns[] = { 1, 2, 5, 13 };
    uint32_t types[WT_COUNT];
    int n_types = op_matmul_types(b, types), cases = 0, bad = 0;
    double worst = 0;
    for (int ti = 0; ti < n_types; ti++)
        for (int ri = 0; ri < 4; ri++)
            for (int ki = 0; ki < 3; ki++)
                for (int ni = 0; ni < 4; ni++) {
                    // K: 1, 3, 5 blocks of 32, or of 256 for the 256-weight types
                    int M = rows[ri], K = ks[ki] * (int)(wtype_get(types[ti])->block_size > 32 ? 8 : 1);
                    int n = ns[ni], x_row0 = (ri + ni) % 3;
                    tensor w = op_rand_tensor(types[ti], K, M, 0.5f), wc, *wt[2];
                    act2 x = op_act_rand(b, n + x_row0, K), y = op_act(b, n, M, false);
                    if (op_prepare_pair(b, &w, &wc, wt)) {
                        for (int i = 0; i < 2; i++) {
                            b[i]->begin_batch(b[i]);
                            b[i]->matmul(b[i], wt[i], x.a[i], x_row0, n, y.a[i]);
                            op_run_end(b[i], "matmul");
                        }
                        bool act_q8 = ((b[0]->act_q8_types | b[1]->act_q8_types) >> types[ti]) & 1;
                        bool act_q8k = ((b[0]->act_q8k_types | b[1]->act_q8k_types) >> types[ti]) & 1;
                        bool act_bf16 = ((b[0]->act_bf16_types | b[1]->act_bf16_types) >> types[ti]) & 1;
                        double *tol = op_matmul_bounds(wc.owned ? &wc : &w, x.host + (int64_t)x_row0 * K, K, n,
                                                       act_q8k ? 256 : act_q8 ? 32 : 0, act_bf16), q = 0;
                        int out = op_outside(b, &y, n, tol, &q);
                        free(tol);
                        cases++;
                        if (q > worst) worst = q;
                        if (out) {
                            bad++;
                            CHECK(0, "%s matmul %s M=%d K=%d n=%d x_row0=%d: %d elements outside their bounds "
                                  "(worst |diff| / bound %g)", tag, wtype_name(types[ti]), M, K, n, x_row0, out, q);
                        }
                    }
                    op_act_free(b, &x);
                    op_act_free(b, &y);
                    op_free_tensor(b, &w);
                    if (wc.owned) op_free_tensor(b, &wc);
                }
    CHECK(n_types > 0, "%s matmul: no weight type both backends take", tag);
    CHECK(bad == 0, "%s matmul: %d of %d cases differ", tag, bad, cases);
    printf("note: %s matmul, %d weight types, %d cases: worst |diff| / bound %.3g\n", tag, n_types, cases, worst);
}

// ---- embed ----

static void op_check_embed(backend *b[2], const char *tag) {
    uint32_t types[WT_COUNT];
    int n_types = op_matmul_types(b, types);
    for (int ti = 0; ti < n_types; ti++) {
        int K = (ti % 2 ? 96 : 160) * (int)(wtype_get(types[ti])->block_size > 32 ? 8 : 1), V = 17, n = 13;
        tensor e = op_rand_tensor(types[ti], K, V, 1.0f), ec, *et[2];
        act2 y = op_act(b, n, K, false);
        int32_t ids[13];
        for (int t = 0; t < n; t++) ids[t] = t == 0 ? V - 1 : rng_int(V);
        if (op_prepare_pair(b, &e, &ec, et)) {
            for (int i = 0; i < 2; i++) {
                b[i]->begin_batch(b[i]);
                b[i]->embed(b[i], et[i], ids, n, y.a[i]);
                op_run_end(b[i], "embed");
            }
            double d = op_diff(b, &y, n);
            CHECK(d <= 1e-6, "%s embed %s: rel diff %g", tag, wtype_name(types[ti]), d);
        }
        op_act_free(b, &y);
        op_free_tensor(b, &e);
        if (ec.owned) op_free_tensor(b, &ec);
    }
}

// ---- rmsnorm, add, scale, bias, glu ----

static double op_inv_rms(const float *x, int C, double eps) {
    double ss = 0;
    for (int i = 0; i < C; i++) ss += (double)x[i] * x[i];
    return 1.0 / sqrt(ss / C + eps);
}

// GELU with the tanh approximation, in double.
static double op_gelu(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

// z = norm(x); y = (norm(y) + z) * s; z += bias; x = act(x) * z — bounds of x, y, z (each (n, C)).
static void op_elementwise_bounds(const float *x, const float *y, const float *g, const float *bias, int n, int C,
                                  int act, float s, double *tx, double *ty, double *tz) {
    // float sums of C squares (γ_C), then a device's inverse square root and division, which GLSL
    // allows a few ULP each (2 and 2.5): 32u; silu's exp is allowed 3 + 2|x| ULP: 32u for |x| < 1;
    // GELU's tanh an absolute error of a few ULP of 1, which 1 + tanh can leave as it is: 32u |x|
    double e_norm = (double)(C + 32) * F32_U, e_act = 32 * F32_U;
    for (int t = 0; t < n; t++) {
        const float *xr = x + (size_t)t * C, *yr = y + (size_t)t * C;
        double sx = op_inv_rms(xr, C, 1e-5), sy = op_inv_rms(yr, C, 1e-6);
        for (int i = 0; i < C; i++) {
            size_t k = (size_t)t * C + i;
            double nz = xr[i] * sx * g[i], ny = yr[i] * sy * g[i], z = nz + bias[i];
            double a = act == GLU_GELU_TANH ? op_gelu(xr[i]) : xr[i] / (1.0 + exp(-(double)xr[i]));
            double e_a = act == GLU_GELU_TANH ? e_act * fabs(xr[i]) : e_act * fabs(a);
            ty[k] = fabs(s) * ((e_norm + 3 * F32_U) * (fabs(ny) + fabs(nz)));
            tz[k] = e_norm * fabs(nz) + 2 * F32_U * (fabs(nz) + fabs(bias[i]));
            tx[k] = fabs(a) * tz[k] + (e_a + 2 * F32_U * fabs(a)) * fabs(z);
        }
    }
}

static void op_check_elementwise(backend *b[2], const char *tag) {
    static const int cols[] = { 1, 17, 64, 300 }, ns[] = { 1, 2, 5, 13 };
    double worst[3] = { 0, 0, 0 };   // x (glu), y (rmsnorm + add + scale), z (rmsnorm + bias)
    for (int ci = 0; ci < 4; ci++)
        for (int ni = 0; ni < 4; ni++) {
            int C = cols[ci], n = ns[ni], act = (ci + ni) % 2 ? GLU_GELU_TANH : GLU_SILU;
            const float s = ni % 2 ? 16.0f : 0.37f;   // gemma's sqrt(dim), or any factor
            tensor g = op_rand_tensor(WT_F32, C, 1, 1.0f), bias = op_rand_tensor(WT_F32, C, 1, 1.0f);
            act2 x = op_act_rand(b, n, C), y = op_act_rand(b, n, C), z = op_act(b, n, C, false);
            if (op_prepare(b, &g) && op_prepare(b, &bias)) {
                for (int i = 0; i < 2; i++) {
                    b[i]->begin_batch(b[i]);
                    b[i]->rmsnorm(b[i], x.a[i], &g, 1e-5f, n, z.a[i]);   // z = norm(x)
                    b[i]->rmsnorm(b[i], y.a[i], &g, 1e-6f, n, y.a[i]);   // in place
                    b[i]->add(b[i], y.a[i], z.a[i], n);                  // y += z
                    b[i]->scale(b[i], y.a[i], s, n);                     // y *= s
                    b[i]->add_bias(b[i], z.a[i], &bias, n);              // z += bias
                    b[i]->glu(b[i], x.a[i], z.a[i], n, act);             // x = act(x) * z
                    op_run_end(b[i], "elementwise");
                }
                size_t cnt = (size_t)n * C;
                double *tx = xmalloc(cnt * sizeof(double)), *ty = xmalloc(cnt * sizeof(double));
                double *tz = xmalloc(cnt * sizeof(double)), qx = 0, qy = 0, qz = 0;
                op_elementwise_bounds(x.host, y.host, g.data, bias.data, n, C, act, s, tx, ty, tz);
                int bx = op_outside(b, &x, n, tx, &qx), by = op_outside(b, &y, n, ty, &qy),
                    bz = op_outside(b, &z, n, tz, &qz);
                CHECK(bx == 0 && by == 0 && bz == 0,
                      "%s rmsnorm/add/scale/bias/glu (%s) cols %d n %d: %d, %d, %d elements outside their bounds "
                      "(worst |diff| / bound %g %g %g)", tag, act == GLU_GELU_TANH ? "gelu" : "silu", C, n, bx, by, bz,
                      qx, qy, qz);
                worst[0] = fmax(worst[0], qx);
                worst[1] = fmax(worst[1], qy);
                worst[2] = fmax(worst[2], qz);
                free(tx); free(ty); free(tz);
            }
            op_act_free(b, &x); op_act_free(b, &y); op_act_free(b, &z);
            op_free_tensor(b, &g);
            op_free_tensor(b, &bias);
        }
    printf("note: %s worst |diff| / bound: rmsnorm+add+scale %.3g, rmsnorm+bias %.3g, glu %.3g\n", tag, worst[1],
           worst[2], worst[0]);
}

// ---- rmsnorm per head (a weight shorter than the row: groups of its length) ----

static void op_check_rmsnorm_heads(backend *b[2], const char *tag) {
    static const struct { int heads, hd; } shapes[] = { { 4, 16 }, { 3, 64 }, { 8, 8 }, { 2, 128 } };
    double worst = 0;
    for (int si = 0; si < 4; si++)
        for (int n = 1; n <= 13; n += 4) {
            int hd = shapes[si].hd, C = shapes[si].heads * hd;
            tensor g = op_rand_tensor(WT_F32, hd, 1, 1.0f);
            act2 x = op_act_rand(b, n, C);
            if (op_prepare(b, &g)) {
                for (int i = 0; i < 2; i++) {
                    b[i]->begin_batch(b[i]);
                    b[i]->rmsnorm(b[i], x.a[i], &g, 1e-6f, n, x.a[i]);   // in place, as the forward pass
                    op_run_end(b[i], "rmsnorm per head");
                }
                // as op_elementwise_bounds: float sums of hd squares and a device's 32u, both sides
                double *tol = xmalloc((size_t)n * C * sizeof(double)), q = 0, e = (double)(hd + 32) * F32_U;
                const float *gw = g.data;
                for (int t = 0; t < n; t++)
                    for (int h = 0; h < shapes[si].heads; h++) {
                        const float *xr = x.host + (size_t)t * C + (size_t)h * hd;
                        double s = op_inv_rms(xr, hd, 1e-6);
                        for (int i = 0; i < hd; i++) tol[(size_t)t * C + (size_t)h * hd + i] = 2 * e * fabs(xr[i] * s * gw[i]);
                    }
                int out = op_outside(b, &x, n, tol, &q);
                CHECK(out == 0, "%s rmsnorm per head: %d heads of %d, n %d: %d elements outside their bounds (worst %g)",
                      tag, shapes[si].heads, hd, n, out, q);
                worst = fmax(worst, q);
                free(tol);
            }
            op_act_free(b, &x);
            op_free_tensor(b, &g);
        }
    printf("note: %s rmsnorm per head: worst |diff| / bound %.3g\n", tag, worst);
}

// ---- rope ----

// A rope as files scale it: per-pair divisors from 1 to 32 (llama3's rope_freqs) and, on odd
// calls, longrope's attention factor on cos and sin.
static void op_scaled_rope(rope_freqs *f, int rope_dim, float base, bool attn) {
    static float fac[ROPE_MAX_PAIRS];
    for (int i = 0; i < rope_dim / 2; i++) fac[i] = 1.0f + 31.0f * (float)i / (float)(rope_dim / 2);
    rope_scaling s = { .kind = attn ? ROPE_LONGROPE : ROPE_NONE, .factor = 1, .n_ctx_orig = 1,
                       .attn_factor = attn ? 1.19f : 1.0f, .factors = attn ? NULL : fac,
                       .long_factors = fac, .short_factors = fac };
    rope_freqs_make(f, rope_dim, base, &s, 4096);
}

static void op_check_rope(backend *b[2], const char *tag) {
    static const struct { int heads, hd, rd; } shapes[] = { { 3, 8, 8 }, { 2, 32, 16 }, { 5, 64, 64 } };
    double worst = 0;
    for (int si = 0; si < 3; si++)
        for (int neox = 0; neox < 2; neox++)
            for (int n = 1; n <= 13; n += 6) {
                rope_freqs fr;   // plain; scaled (factors, or factors and an attention factor) for n > 1
                if (n == 1) rope_freqs_plain(&fr, shapes[si].rd, si == 1 ? 500000.0f : 10000.0f);
                else op_scaled_rope(&fr, shapes[si].rd, 10000.0f, n > 7);
                rope_params p = { shapes[si].heads, shapes[si].hd, &fr, neox };
                int64_t cols = (int64_t)p.n_heads * p.head_dim;
                act2 x = op_act_rand(b, n, cols);
                int32_t pos[13];
                for (int t = 0; t < n; t++) pos[t] = rng_int(1000);
                for (int i = 0; i < 2; i++) {
                    b[i]->begin_batch(b[i]);
                    b[i]->rope(b[i], x.a[i], n, pos, &p);
                    op_run_end(b[i], "rope");
                }
                int half = fr.rope_dim / 2;
                double *tol = xcalloc((size_t)(n * cols), sizeof(double)), q = 0;   // 0: unrotated
                float cs[64];
                for (int t = 0; t < n; t++) {
                    rope_cos_sin(pos[t], &fr, cs);
                    for (int h = 0; h < p.n_heads; h++) {
                        const float *v = x.host + t * cols + (int64_t)h * p.head_dim;
                        double *o = tol + t * cols + (int64_t)h * p.head_dim;
                        for (int i = 0; i < half; i++) {
                            int i0 = ROPE_PAIR_FIRST(i, half, neox), i1 = ROPE_PAIR_SECOND(i, half, neox);
                            double a = fabs(v[i0]), bb = fabs(v[i1]), c = fabs(cs[2 * i]), sn = fabs(cs[2 * i + 1]);
                            o[i0] = 4 * F32_U * (a * c + bb * sn);   // a cos - b sin
                            o[i1] = 4 * F32_U * (a * sn + bb * c);   // a sin + b cos
                        }
                    }
                }
                int out = op_outside(b, &x, n, tol, &q);
                CHECK(out == 0, "%s rope %s heads %d hd %d rd %d n %d: %d elements outside their bounds (worst %g)", tag,
                      neox ? "neox" : "normal", p.n_heads, p.head_dim, fr.rope_dim, n, out, q);
                if (q > worst) worst = q;
                free(tol);
                op_act_free(b, &x);
            }
    printf("note: %s rope: worst |diff| / bound %.3g\n", tag, worst);
}

// ---- kv_store + attention ----

// Fills slots [0, n_past) and then attends n tokens after them, on both backends.
static void op_attention_case(backend *b[2], enum kv_format f, int n_head, int n_kv, int hd, int n_past, int n,
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
    act2 kp = op_act_rand(b, n_past + n, kv_dim), vp = op_act_rand(b, n_past + n, kv_dim);
    act2 q = op_act_rand(b, n, (int64_t)n_head * hd), o = op_act(b, n, (int64_t)n_head * hd, false);
    attn_params ap = { n_head, n_kv, hd, 1.0f / sqrtf((float)hd), 0, 0.0f };
    int32_t *slots = xmalloc((size_t)(n_past + n) * sizeof *slots);
    for (int s = 0; s < n_past + n; s++) slots[s] = s;
    for (int i = 0; i < 2; i++) {
        b[i]->begin_batch(b[i]);
        b[i]->kv_store(b[i], &kv[i], 0, kp.a[i], vp.a[i], n_past + n, slots);
        b[i]->attention(b[i], q.a[i], &kv[i], 0, n, n_past, &ap, o.a[i]);
        op_run_end(b[i], "attention");
    }
    double d = op_diff(b, &o, n);
    CHECK(d <= 1e-4, "%s attention %s heads %d/%d hd %d n_past %d n %d: rel diff %g", tag, kv_format_name(f), n_head,
          n_kv, hd, n_past, n, d);
    free(slots);
    op_act_free(b, &kp); op_act_free(b, &vp); op_act_free(b, &q); op_act_free(b, &o);
    for (int i = 0; i < 2; i++) { b[i]->kv_release(b[i], &kv[i]); kv_cache_free(&kv[i]); }
}

// Attention over a q8/q4 (or f16/f32) cache as model_forward builds it: keys rotated by slot
// (rope_dim of head_dim, normal or NeoX pairs), the past stored in two batches, then the n new
// tokens stored and attended in one, so the key and value folds happen inside batches (recent
// window 16: keys fold every 128 slots past 143, values one by one past 16). Both sides read the
// same codes (op_check_kv_store), so the tolerance is float rounding: 1e-4 of the largest output.
static double op_q_worst[KV_FORMAT_COUNT];   // largest op_attention_q_case difference per format

// window > 0: a sliding-window layer; alt: the layer turns by the cache's second rotation (a
// gemma3 window layer's base), read from after the first table; softcap > 0: gemma2's soft cap
// on the scores.
static void op_attention_q_case(backend *b[2], enum kv_format f, int n_head, int n_kv, int hd, int rope_dim,
                                bool neox, int n_past, int n, int window, bool alt, float softcap, const char *tag) {
    int kv_dim = n_kv * hd, n_ctx = n_past + n + 5;
    kv_cache kv[2];
    errbuf err = {{0}};
    rope_freqs fr, fr_alt;   // the keys turn as files scale them on every other case
    if (rope_dim && (n_past + n) % 2) op_scaled_rope(&fr, rope_dim, 10000.0f, n_past % 3 == 0);
    else if (rope_dim) rope_freqs_plain(&fr, rope_dim, 10000.0f);
    if (rope_dim) rope_freqs_plain(&fr_alt, rope_dim, 500000.0f);
    const uint8_t alt_layers[1] = { 1 };
    alt = alt && rope_dim;
    kv_shape sh = { n_head, n_kv, hd, rope_dim ? &fr : NULL, alt ? &fr_alt : NULL, alt ? alt_layers : NULL, neox };
    for (int i = 0; i < 2; i++)
        if (kv_cache_init_ex(&kv[i], f, 16, 1, n_ctx, kv_dim, &err) || kv_cache_set_shape(&kv[i], &sh, &err) ||
            b[i]->kv_prepare(b[i], &kv[i], &err)) {
            CHECK(0, "%s", err.msg);
            return;
        }
    int cut = n_past / 3;   // the past in batches [0, cut), [cut, n_past), then the new tokens
    int bounds[4] = { 0, cut, n_past, n_past + n };
    act2 q = op_act_rand(b, n, (int64_t)n_head * hd), o = op_act(b, n, (int64_t)n_head * hd, false);
    attn_params ap = { n_head, n_kv, hd, 1.0f / sqrtf((float)hd), window, softcap };
    int32_t *slots = xmalloc((size_t)(n_past + n) * sizeof *slots);
    for (int s = 0; s < n_past + n; s++) slots[s] = s;
    for (int bi = 0; bi < 3; bi++) {
        int m = bounds[bi + 1] - bounds[bi];
        if (m <= 0) continue;
        act2 kp = op_act_rand(b, m, kv_dim), vp = op_act_rand(b, m, kv_dim);
        for (int i = 0; i < 2; i++) {
            b[i]->begin_batch(b[i]);
            b[i]->kv_store(b[i], &kv[i], 0, kp.a[i], vp.a[i], m, slots + bounds[bi]);
            if (bi == 2) b[i]->attention(b[i], q.a[i], &kv[i], 0, n, n_past, &ap, o.a[i]);
            op_run_end(b[i], "attention");
        }
        op_act_free(b, &kp); op_act_free(b, &vp);
    }
    double d = op_diff(b, &o, n);
    if (!(d <= op_q_worst[f])) op_q_worst[f] = d;
    CHECK(d <= 1e-4, "%s attention %s heads %d/%d hd %d rope %d%s%s window %d n_past %d n %d: rel diff %g (tolerance 1e-4)",
          tag, kv_format_name(f), n_head, n_kv, hd, rope_dim, neox ? " neox" : "", alt ? " (second table)" : "", window,
          n_past, n, d);
    free(slots);
    op_act_free(b, &q); op_act_free(b, &o);
    for (int i = 0; i < 2; i++) { b[i]->kv_release(b[i], &kv[i]); kv_cache_free(&kv[i]); }
}

// long_ctx: also 700 slots (split across workgroups on a device).
static void op_check_attention(backend *b[2], const char *tag, bool long_ctx) {
    static const int pasts[] = { 0, 1, 7, 40 };
    for (int pi = 0; pi < 4; pi++) {
        op_attention_case(b, KV_F16, 4, 2, 16, pasts[pi], 1, tag);
        op_attention_case(b, KV_F16, 3, 1, 32, pasts[pi], 5, tag);
        op_attention_case(b, KV_F32, 4, 4, 8, pasts[pi], 13, tag);
    }
    op_attention_case(b, KV_F16, 2, 1, 256, 9, 2, tag);   // the largest head size
    if (long_ctx) op_attention_case(b, KV_F16, 4, 2, 64, 700, 1, tag);
    static const int qpasts[] = { 0, 20, 150, 290 };
    for (int pi = 0; pi < 4; pi++) {
        op_attention_q_case(b, KV_Q8, 4, 2, 32, 32, false, qpasts[pi], 1, 0, false, 0.0f, tag);
        op_attention_q_case(b, KV_Q4, 4, 2, 32, 32, false, qpasts[pi], 9, 0, false, 0.0f, tag);
        op_attention_q_case(b, pi % 2 ? KV_Q4 : KV_Q8, 3, 1, 64, 32, true, qpasts[pi], 5, 0, false, 0.0f, tag);   // partial NeoX rope
    }
    op_attention_q_case(b, KV_F16, 4, 2, 32, 32, false, 150, 3, 0, false, 0.0f, tag);   // f16/f32 keys rotated by slot too
    op_attention_q_case(b, KV_F32, 3, 1, 64, 32, true, 40, 2, 0, false, 0.0f, tag);
    if (long_ctx) op_attention_q_case(b, KV_Q4, 4, 2, 64, 64, false, 700, 1, 0, false, 0.0f, tag);
    // sliding-window layers (a window shorter than the context, over a prefill that crosses it),
    // and a layer turning by the second table
    op_attention_q_case(b, KV_Q8, 4, 2, 32, 32, false, 150, 9, 37, true, 0.0f, tag);
    op_attention_q_case(b, KV_F16, 3, 1, 64, 64, true, 290, 5, 64, true, 0.0f, tag);
    op_attention_q_case(b, KV_Q4, 4, 2, 32, 32, true, 20, 9, 8, false, 0.0f, tag);
    op_attention_q_case(b, KV_F32, 4, 2, 32, 0, false, 40, 3, 4, false, 0.0f, tag);
    // gemma2's soft caps, on a window layer and on a global one
    op_attention_q_case(b, KV_F16, 4, 2, 32, 32, true, 60, 7, 16, false, 2.0f, tag);
    op_attention_q_case(b, KV_Q8, 4, 2, 32, 32, true, 140, 1, 0, false, 1.0f, tag);
    if (long_ctx) op_attention_q_case(b, KV_F16, 4, 2, 64, 64, false, 700, 1, 100, true, 0.0f, tag);
    printf("note: %s attention over built caches vs %s: rel diff q8 %.3g, q4 %.3g, f16 %.3g, f32 %.3g\n", tag,
           b[0]->name, op_q_worst[KV_Q8], op_q_worst[KV_Q4], op_q_worst[KV_F16], op_q_worst[KV_F32]);
    memset(op_q_worst, 0, sizeof op_q_worst);
}

// Element i of a q8 (one byte) or q4 (nibble, low first) code array.
static int op_code_of(enum kv_format f, const uint8_t *base, size_t i) {
    return kv_format_code_bits(f) == 8 ? base[i] : (base[i / 2] >> ((i & 1) * 4)) & 15;
}

// The tested backend's store against kv_cache_put's: the same rows stored in batches of varied
// size on both backends (key folds inside a batch, a batch longer than the value ring, single
// tokens), then a backend copy of the cache pulled back (kv->bk_sync) and compared section by
// section. F16 rows, f16 scales and mins must be identical; codes too, except that a device
// whose division is not correctly rounded may put a value at an exact half step one code away:
// allowed for at most 1 code in 1000, by one step at most.
static void op_store_case(backend *b[2], const char *tag, enum kv_format f, int kv_dim, int recent, int n_ctx) {
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
        act2 ka = op_act_rand(b, n, kv_dim), va = op_act_rand(b, n, kv_dim);
        for (int t = 0; t < n; t++) slots[t] = used + t;
        for (int i = 0; i < 2; i++) {
            b[i]->begin_batch(b[i]);
            for (int l = 0; l < 2; l++) b[i]->kv_store(b[i], &kv[i], l, ka.a[i], va.a[i], n, slots);
            op_run_end(b[i], "kv_store");
            kv[i].n_used = used + n;
        }
        used += n;
        op_act_free(b, &ka); op_act_free(b, &va);
    }
    if (kv[1].bk_sync && kv[1].bk_sync(&kv[1], KV_SYNC_PULL, &err)) { CHECK(0, "pull: %s", err.msg); goto out; }
    size_t D = (size_t)kv_dim, rb = kv[0].row_bytes;
    long codes = 0, code_diff = 0, bad = 0;
    int worst = 0;
    for (int l = 0; l < 2; l++) {
        if (!kv_format_quantized(f)) {
            bad += memcmp(kv[0].k[l], kv[1].k[l], (size_t)used * rb) != 0;
            bad += memcmp(kv[0].v[l], kv[1].v[l], (size_t)used * rb) != 0;
            continue;
        }
        int nq = kv[0].nq[l], nqv = kv[0].nqv[l], ng = kv_dim / kv[0].gv;
        if (nq != kv[1].nq[l] || nqv != kv[1].nqv[l]) {
            CHECK(0, "store %s: counters %s %d/%d, %s %d/%d", kv_format_name(f), b[0]->name, nq, nqv, b[1]->name,
                  kv[1].nq[l], kv[1].nqv[l]);
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
                int d = abs(op_code_of(f, c0, i) - op_code_of(f, c1, i));
                code_diff += d != 0;
                if (d > worst) worst = d;
            }
            codes += (long)n;
        }
    }
    CHECK(bad == 0, "%s store %s kv_dim %d: %ld F16 row or (scale, min) sections differ", tag, kv_format_name(f), kv_dim,
          bad);
    CHECK(worst <= 1 && code_diff * 1000 <= codes, "%s store %s kv_dim %d: %ld of %ld codes differ (at most %d steps)",
          tag, kv_format_name(f), kv_dim, code_diff, codes, worst);
    if (kv_format_quantized(f))
        printf("note: %s store %s kv_dim %d (value groups of %d): %d slots, %d key / %d value slots quantized, "
               "%ld of %ld codes differ from %s's\n", tag, kv_format_name(f), kv_dim, kv[0].gv, used, kv[0].nq[0],
               kv[0].nqv[0], code_diff, codes, b[0]->name);
out:
    for (int i = 0; i < 2; i++) { b[i]->kv_release(b[i], &kv[i]); kv_cache_free(&kv[i]); }
}

static void op_check_kv_store(backend *b[2], const char *tag) {
    op_store_case(b, tag, KV_Q8, 64, 16, 400);
    op_store_case(b, tag, KV_Q4, 64, 16, 400);
    op_store_case(b, tag, KV_Q8, 192, 32, 400);    // one value group of 192
    op_store_case(b, tag, KV_Q4, 512, 32, 360);    // value groups of 128
    op_store_case(b, tag, KV_F16, 64, 0, 400);
    op_store_case(b, tag, KV_F32, 64, 0, 400);
}

// Every check above.
static inline void op_check_all(backend *b[2], const char *tag) {
    op_check_embed(b, tag);
    op_check_matmul(b, tag);
    op_check_elementwise(b, tag);
    op_check_rmsnorm_heads(b, tag);
    op_check_rope(b, tag);
    op_check_attention(b, tag, true);
    op_check_kv_store(b, tag);
}

#endif
