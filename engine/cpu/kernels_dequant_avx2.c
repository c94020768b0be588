// Matmul for the weight types without a SIMD kernel of their own (DQ8_TYPES in kernels.h: Q4_1,
// Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K, Q3_K, Q5_K, FP8), shared by the AVX2 and AVX-512 tables
// (compiled for AVX2 and FMA, which both require): weights dequantized to float a chunk at a
// time (the wtype.h reference functions), activations as the reference implementation rounds
// them for these weights: Q8_0 blocks of 32 (ACT_Q8_0) for the 32-weight types, Q8_K blocks of
// 256 (ACT_Q8_K) for the 256-weight ones. Float sums, 8 lanes wide.
#include "engine/cpu/kernels.h"
#include "engine/half.h"

#include <immintrin.h>

enum {
    DQ_CHUNK = 256, // weights dequantized per step: a multiple of every block size (32, 256)
};

// Σ wf[j] * q[j] over 32 weights, 8 lanes: the int8 codes widened to float.
static inline __m256 dot32(const float *wf, const int8_t *q) {
    __m256 s = _mm256_setzero_ps();
    for (int j = 0; j < 32; j += 8) {
        const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q + j))));
        s = _mm256_fmadd_ps(_mm256_loadu_ps(wf + j), x, s);
    }
    return s;
}

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Σ wf[i] * d * q[i] over one chunk of n weights against the activation blocks covering it.
static float chunk_dot(const float *wf, int64_t n, const void *xblocks, enum act_format af) {
    if (af == ACT_Q8_K) {   // one block of 256 under one float scale
        const block_q8_k *xb = xblocks;
        __m256 s = _mm256_setzero_ps();
        for (int64_t i = 0; i < n; i += 32) s = _mm256_add_ps(s, dot32(wf + i, xb->qs + i));
        return hsum(s) * xb->d;
    }
    const block_q8_0 *xb = xblocks;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++)
        acc = _mm256_fmadd_ps(dot32(wf + b * 32, xb[b].qs), _mm256_set1_ps(fp16_to_f32(xb[b].d)), acc);
    return hsum(acc);
}

// Each weight chunk is dequantized once and applied to every token (a prefill reuses it n_tok
// times); y[t][r] gathers the chunks' sums in order.
static void matmul_dequant_q8(uint32_t type, enum act_format af, const void *w, size_t w_row_bytes, int64_t k,
                              int64_t row0, int64_t row1, const void *x, size_t x_row_bytes, int64_t n_tok,
                              float *y, int64_t ldy) {
    const wtype_info *ti = wtype_get(type);
    const int64_t bs = ti->block_size, bb = ti->block_bytes;
    // Bytes of activation blocks per chunk of DQ_CHUNK values.
    const size_t x_chunk = af == ACT_Q8_K ? sizeof(block_q8_k) : DQ_CHUNK / 32 * sizeof(block_q8_0);
    float wf[DQ_CHUNK];
    for (int64_t r = row0; r < row1; r++) {
        const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_row_bytes;
        for (int64_t t = 0; t < n_tok; t++) y[t * ldy + r] = 0;
        for (int64_t i0 = 0; i0 < k; i0 += DQ_CHUNK) {
            const int64_t n = k - i0 < DQ_CHUNK ? k - i0 : DQ_CHUNK; // a multiple of bs and 32
            ti->to_f32(wr + i0 / bs * bb, wf, n);
            for (int64_t t = 0; t < n_tok; t++) {
                const uint8_t *xr = (const uint8_t *)x + (size_t)t * x_row_bytes;
                y[t * ldy + r] += chunk_dot(wf, n, xr + (size_t)(i0 / DQ_CHUNK) * x_chunk, af);
            }
        }
    }
}

#define DQ8_DEFINE(name, type, act)                                                              \
    void matmul_##name##_dq8(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1,   \
                             const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {   \
        matmul_dequant_q8(type, act, w, wrb, k, row0, row1, x, xrb, n_tok, y, ldy);              \
    }
DQ8_TYPES(DQ8_DEFINE)
