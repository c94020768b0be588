// Matmul for the weight types without a SIMD kernel of their own (DQ8_TYPES in kernels.h: Q4_1,
// Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K, Q3_K, Q5_K, FP8), shared by the AVX2 and AVX-512 tables: weights
// dequantized to float a chunk at a time (the wtype.h reference functions), activations as the
// reference implementation rounds them for these weights: Q8_0 blocks of 32 (ACT_Q8_0) for the
// 32-weight types, Q8_K blocks of 256 (ACT_Q8_K) for the 256-weight ones. Float sums; compiled
// for baseline x86-64, so it runs wherever the tables that hold it run.
#include "engine/cpu/kernels.h"
#include "engine/half.h"

enum {
    DQ_CHUNK = 256, // weights dequantized per step: a multiple of every block size (32, 256)
    DQ_TOKS = 8,    // tokens sharing one dequantized chunk
};

// Σ wf[i] * d * q[i] over one chunk of n weights against the activation blocks covering it.
static float chunk_dot(const float *wf, int64_t n, const void *xblocks, enum act_format af) {
    float acc = 0;
    if (af == ACT_Q8_K) {
        const block_q8_k *xb = xblocks;
        float s = 0;
        for (int64_t i = 0; i < n; i++) s += wf[i] * (float)xb->qs[i];
        return s * xb->d;
    }
    const block_q8_0 *xb = xblocks;
    for (int64_t b = 0; b < n / 32; b++) {
        float s = 0;
        for (int j = 0; j < 32; j++) s += wf[b * 32 + j] * (float)xb[b].qs[j];
        acc += s * fp16_to_f32(xb[b].d);
    }
    return acc;
}

static void matmul_dequant_q8(uint32_t type, enum act_format af, const void *w, size_t w_row_bytes, int64_t k,
                              int64_t row0, int64_t row1, const void *x, size_t x_row_bytes, int64_t n_tok,
                              float *y, int64_t ldy) {
    const wtype_info *ti = wtype_get(type);
    const int64_t bs = ti->block_size, bb = ti->block_bytes;
    // Bytes of activation blocks per chunk of DQ_CHUNK values.
    const size_t x_chunk = af == ACT_Q8_K ? sizeof(block_q8_k) : DQ_CHUNK / 32 * sizeof(block_q8_0);
    float wf[DQ_CHUNK];
    for (int64_t t0 = 0; t0 < n_tok; t0 += DQ_TOKS) {
        const int64_t nt = n_tok - t0 < DQ_TOKS ? n_tok - t0 : DQ_TOKS;
        for (int64_t r = row0; r < row1; r++) {
            const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_row_bytes;
            float acc[DQ_TOKS] = { 0 };
            for (int64_t i0 = 0; i0 < k; i0 += DQ_CHUNK) {
                const int64_t n = k - i0 < DQ_CHUNK ? k - i0 : DQ_CHUNK; // a multiple of bs and 32
                ti->to_f32(wr + i0 / bs * bb, wf, n);
                for (int64_t t = 0; t < nt; t++) {
                    const uint8_t *xr = (const uint8_t *)x + (size_t)(t0 + t) * x_row_bytes;
                    acc[t] += chunk_dot(wf, n, xr + (size_t)(i0 / DQ_CHUNK) * x_chunk, af);
                }
            }
            for (int64_t t = 0; t < nt; t++) y[(t0 + t) * ldy + r] = acc[t];
        }
    }
}

#define DQ8_DEFINE(name, type, act)                                                              \
    void matmul_##name##_dq8(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1,   \
                             const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {   \
        matmul_dequant_q8(type, act, w, wrb, k, row0, row1, x, xrb, n_tok, y, ldy);              \
    }
DQ8_TYPES(DQ8_DEFINE)
