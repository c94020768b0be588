// Scalar kernels: the precision reference for every other table (SIMD, Vulkan). Weights are
// converted to float with the wtype.h reference functions (exact for F16, BF16, Q8_0, Q4_0, Q5_0,
// IQ4_NL: each dequantized weight is representable in float; the other types round scale
// products and mins to float as the GGUF reference dequantization does) and products are summed in double, so these
// results are as close to the exact dot product as float outputs allow.
#include "engine/cpu/kernels.h"
#include "engine/half.h"
#include "base/base.h"
#include "engine/rope.h"

#include <math.h>

enum {
    CHUNK = 256, // weights converted per step: (CHUNK) floats on the stack, a multiple of 32
    TOK_GROUP = 8, // tokens sharing one converted chunk
};

// Y[t][r] = sum_i W[r][i] * X[t][i] for one weight type; x is float (ACT_F32).
static void matmul_ref(uint32_t type, const void *w, size_t w_row_bytes, int64_t k, int64_t row0,
                       int64_t row1, const void *x, size_t x_row_bytes, int64_t n_tok, float *y,
                       int64_t ldy) {
    const wtype_info *ti = wtype_get(type);
    const int64_t bs = ti->block_size, bb = ti->block_bytes;
    float wf[CHUNK];
    for (int64_t t0 = 0; t0 < n_tok; t0 += TOK_GROUP) {
        const int64_t nt = n_tok - t0 < TOK_GROUP ? n_tok - t0 : TOK_GROUP;
        for (int64_t r = row0; r < row1; r++) {
            const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_row_bytes;
            double acc[TOK_GROUP] = { 0 };
            for (int64_t i0 = 0; i0 < k; i0 += CHUNK) {
                const int64_t n = k - i0 < CHUNK ? k - i0 : CHUNK; // a multiple of bs: k is
                ti->to_f32(wr + i0 / bs * bb, wf, n);
                for (int64_t t = 0; t < nt; t++) {
                    const float *xt =
                        (const float *)((const uint8_t *)x + (size_t)(t0 + t) * x_row_bytes) + i0;
                    double s = 0;
                    for (int64_t i = 0; i < n; i++) s += (double)wf[i] * xt[i];
                    acc[t] += s;
                }
            }
            for (int64_t t = 0; t < nt; t++) y[(t0 + t) * ldy + r] = (float)acc[t];
        }
    }
}

#define REF_MATMUL(name, type)                                                                   \
    static void name(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1,           \
                     const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {          \
        matmul_ref(type, w, wrb, k, row0, row1, x, xrb, n_tok, y, ldy);                          \
    }
REF_MATMUL(matmul_f32, WT_F32)
REF_MATMUL(matmul_f16, WT_F16)
REF_MATMUL(matmul_bf16, WT_BF16)
REF_MATMUL(matmul_q8_0, WT_Q8_0)
REF_MATMUL(matmul_q4_0, WT_Q4_0)
REF_MATMUL(matmul_q4_1, WT_Q4_1)
REF_MATMUL(matmul_q5_0, WT_Q5_0)
REF_MATMUL(matmul_q5_1, WT_Q5_1)
REF_MATMUL(matmul_iq4_nl, WT_IQ4_NL)
REF_MATMUL(matmul_iq4_xs, WT_IQ4_XS)
REF_MATMUL(matmul_q2_k, WT_Q2_K)
REF_MATMUL(matmul_q3_k, WT_Q3_K)
REF_MATMUL(matmul_q4_k, WT_Q4_K)
REF_MATMUL(matmul_q5_k, WT_Q5_K)
REF_MATMUL(matmul_q6_k, WT_Q6_K)
REF_MATMUL(matmul_fp8, WT_FP8)

static void quantize_act_q8_k(const float *x, block_q8_k *y, int64_t k) { quantize_row_q8_k_ref(x, y, k); }
static void quantize_act_q8_0(const float *x, block_q8_0 *y, int64_t k) {
    quantize_row_q8_0_ref(x, y, k);
}

static float dot_f32(const float *a, const float *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return (float)s;
}

static void axpy_f32(float a, const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

static float dot_f16_f32(const uint16_t *a, const float *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)fp16_to_f32(a[i]) * b[i];
    return (float)s;
}

static void axpy_f16_f32(float a, const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += a * fp16_to_f32(x[i]);
}

void attn_scores_ref(const float *q, int G, const float *k, int ns, int hd, float scale, float *s, int64_t lds) {
    for (int g = 0; g < G; g++)
        for (int i = 0; i < ns; i++) s[g * lds + i] = dot_f32(q + (size_t)g * hd, k + (size_t)i * hd, hd) * scale;
}

void attn_values_ref(const float *p, int64_t ldp, int G, const float *v, int ns, int hd, float *o) {
    for (int g = 0; g < G; g++)
        for (int i = 0; i < ns; i++) axpy_f32(p[g * ldp + i], v + (size_t)i * hd, o + (size_t)g * hd, hd);
}

float exp_shift_ref(float *x, int64_t n, float mx) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = x[i] == -INFINITY ? 0.0f : expf(x[i] - mx);
        sum += x[i];
    }
    return (float)sum;
}

void softmax_ref(float *x, int64_t n) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    float sum = exp_shift_ref(x, n, mx);
    float inv = sum > 0 ? 1.0f / sum : 0.0f;
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void rope_rows_ref(const float *cs, int half, int neox, int n, float *rows, int64_t ld) {
    for (int r = 0; r < n; r++) {
        const float *c = cs + (size_t)r * half * 2;
        float *x = rows + (size_t)r * ld;
        for (int i = 0; i < half; i++) {
            int i0 = ROPE_PAIR_FIRST(i, half, neox), i1 = ROPE_PAIR_SECOND(i, half, neox);
            float a = x[i0], b = x[i1], co = c[2 * i], si = c[2 * i + 1];
            x[i0] = a * co - b * si;
            x[i1] = a * si + b * co;
        }
    }
}

void f16_to_f32_ref(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = fp16_to_f32(x[i]);
}

// The KV tile pieces compute exactly what engine/kv_cache.c's kv_cache_read, rope_rows_ref and
// attn_scores_ref compute on row-major tiles (same float operations, same order), only laid
// out channel-major.
static int kv_code(const uint8_t *p, int bits, int64_t i) {
    return bits == 8 ? p[i] : (p[i / 2] >> ((i & 1) * 4)) & 15;
}

void kq_tile_ref(const uint8_t *codes, size_t cstride, int bits, int i0, const uint16_t *sm, int hd, int ns,
                 const float *cst, int64_t ldc, int half, int neox, float *kt, int64_t ldt) {
    for (int c = 0; c < hd; c++) {
        const uint8_t *p = codes + (size_t)c * cstride;
        float sc = fp16_to_f32(sm[2 * c]), mn = fp16_to_f32(sm[2 * c + 1]);
        for (int i = 0; i < ns; i++) kt[c * ldt + i] = mn + sc * (float)kv_code(p, bits, i0 + i);
    }
    if (half > 0) rope_t_ref(cst, ldc, half, neox, ns, kt, ldt);
}

void f16_rows_t_ref(const uint16_t *rows, int64_t ldr, int ns, int hd, const float *cst, int64_t ldc, int half,
                    int neox, float *kt, int64_t ldt) {
    for (int i = 0; i < ns; i++)
        for (int c = 0; c < hd; c++) kt[c * ldt + i] = fp16_to_f32(rows[i * ldr + c]);
    if (half > 0) rope_t_ref(cst, ldc, half, neox, ns, kt, ldt);
}

void rope_t_ref(const float *cst, int64_t ldc, int half, int neox, int ns, float *kt, int64_t ldt) {
    for (int f = 0; f < half; f++) {
        float *x0 = kt + ROPE_PAIR_FIRST(f, half, neox) * ldt, *x1 = kt + ROPE_PAIR_SECOND(f, half, neox) * ldt;
        const float *co = cst + 2 * f * ldc, *si = co + ldc;
        for (int i = 0; i < ns; i++) {
            float a = x0[i], b = x1[i];
            x0[i] = a * co[i] - b * si[i];
            x1[i] = a * si[i] + b * co[i];
        }
    }
}

void attn_scores_t_ref(const float *q, int G, const float *kt, int64_t ldt, int ns, int hd, float scale,
                       float *s, int64_t lds) {
    for (int g = 0; g < G; g++)
        for (int i = 0; i < ns; i++) {
            double acc = 0;
            for (int c = 0; c < hd; c++) acc += (double)q[g * hd + c] * kt[c * ldt + i];
            s[g * lds + i] = (float)acc * scale;
        }
}

void attn_values_q_ref(const float *p, int64_t ldp, int G, const uint8_t *codes, size_t rstride, int bits,
                       int c0, const uint16_t *sm, int64_t smstride, int ns, int nc, float *o, int64_t ldo) {
    for (int g = 0; g < G; g++)
        for (int i = 0; i < ns; i++) {
            const uint8_t *r = codes + (size_t)i * rstride;
            float pi = p[g * ldp + i], sc = fp16_to_f32(sm[i * smstride]), mn = fp16_to_f32(sm[i * smstride + 1]);
            for (int c = 0; c < nc; c++) o[g * ldo + c] += pi * (mn + sc * (float)kv_code(r, bits, c0 + c));
        }
}

void attn_values_f16_ref(const float *p, int64_t ldp, int G, const uint16_t *v, int64_t ldv, int ns, int hd, float *o) {
    for (int g = 0; g < G; g++)
        for (int i = 0; i < ns; i++) {
            float pi = p[g * ldp + i];
            for (int c = 0; c < hd; c++) o[g * hd + c] += pi * fp16_to_f32(v[i * ldv + c]);
        }
}

const cpu_kernels cpu_kernels_scalar_table = {
    .name = "scalar",
    .matmul = {
        [WT_F32] = matmul_f32, [WT_F16] = matmul_f16, [WT_BF16] = matmul_bf16,
        [WT_Q8_0] = matmul_q8_0, [WT_Q4_0] = matmul_q4_0, [WT_Q4_1] = matmul_q4_1,
        [WT_Q5_0] = matmul_q5_0, [WT_Q5_1] = matmul_q5_1, [WT_IQ4_NL] = matmul_iq4_nl,
        [WT_IQ4_XS] = matmul_iq4_xs, [WT_Q2_K] = matmul_q2_k, [WT_Q3_K] = matmul_q3_k,
        [WT_Q4_K] = matmul_q4_k, [WT_Q5_K] = matmul_q5_k, [WT_Q6_K] = matmul_q6_k,
        [WT_FP8] = matmul_fp8,
    },
    .act_format = { 0 },   // ACT_F32 for every type
    .quantize_act_q8_0 = quantize_act_q8_0,
    .quantize_act_q8_k = quantize_act_q8_k,
    .dot_f32 = dot_f32,
    .axpy_f32 = axpy_f32,
    .dot_f16_f32 = dot_f16_f32,
    .axpy_f16_f32 = axpy_f16_f32,
    .attn_scores = attn_scores_ref,
    .attn_values = attn_values_ref,
    .exp_shift = exp_shift_ref,
    .softmax = softmax_ref,
    .rope_rows = rope_rows_ref,
    .f16_to_f32 = f16_to_f32_ref,
    .kq_tile = kq_tile_ref,
    .f16_rows_t = f16_rows_t_ref,
    .rope_t = rope_t_ref,
    .attn_scores_t = attn_scores_t_ref,
    .attn_values_q = attn_values_q_ref,
    .attn_values_f16 = attn_values_f16_ref,
};
