// AVX2 kernels for Q4_K and Q6_K weights against Q8_K activations (compiled with AVX2/FMA/F16C:
// nothing here may run before cpu_kernels_avx2() has said yes; the AVX-512 table uses them too).
// Q4_K, per 256-weight super-block, with integer sums:
//   dot = x.d * (d * Σ_g scale_g Σ_{i in g} q_i x_i  -  dmin * Σ_g min_g Σ_{i in g} x_i)
// over its 8 groups of 32: one 256-bit register holds a group's 32 codes (the low or high
// nibbles of 32 bytes); vpmaddubsw (unsigned codes x signed activations, pairs to int16, at most
// 2·15·127) then vpmaddwd by the group's 6-bit scale (pairs to int32) sum the first term; the
// second comes from the activation block's sums of 16 (bsums).
#include "engine/cpu/kernels.h"
#include "engine/half.h"

#include <immintrin.h>

static inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

// One row of k weights (k/256 blocks) against one activation row.
static float dot_q4_k_q8_k(const block_q4_k *w, const block_q8_k *x, int64_t nb) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    float sum = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) kquant_scale_min(j, w[b].scales, &sc[j], &mn[j]);
        __m256i acc = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {   // 64 weights: group 2j in the low nibbles, 2j+1 in the high
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * j));
            const __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            const __m256i x0 = _mm256_loadu_si256((const __m256i *)(x[b].qs + 64 * j));
            const __m256i x1 = _mm256_loadu_si256((const __m256i *)(x[b].qs + 64 * j + 32));
            const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, x0), _mm256_set1_epi16(sc[2 * j]));
            const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x1), _mm256_set1_epi16(sc[2 * j + 1]));
            acc = _mm256_add_epi32(acc, _mm256_add_epi32(p0, p1));
        }
        int summ = 0;
        for (int g = 0; g < 8; g++) summ += mn[g] * (x[b].bsums[2 * g] + x[b].bsums[2 * g + 1]);
        sum += x[b].d * (fp16_to_f32(w[b].d) * (float)hsum_i32(acc) - fp16_to_f32(w[b].dmin) * (float)summ);
    }
    return sum;
}

void matmul_q4_k_avx2(const void *w, size_t w_row_bytes, int64_t k, int64_t row0, int64_t row1, const void *x,
                      size_t x_row_bytes, int64_t n_tok, float *y, int64_t ldy) {
    const int64_t nb = k / 256;
    for (int64_t r = row0; r < row1; r++) {
        const block_q4_k *wr = (const block_q4_k *)((const uint8_t *)w + (size_t)r * w_row_bytes);
        for (int64_t t = 0; t < n_tok; t++)
            y[t * ldy + r] = dot_q4_k_q8_k(wr, (const block_q8_k *)((const uint8_t *)x + (size_t)t * x_row_bytes), nb);
    }
}

// Q6_K, per super-block: dot = x.d * d * Σ_s scale_s (Σ_{i in s} q_i x_i - 32 Σ_{i in s} x_i) over
// its 16 groups of 16, q the unsigned 6-bit code. A register holds a quarter of a 128-weight
// half: 32 codes (low 4 bits from ql, high 2 from qh), whose two groups of 16 fill its two
// 128-bit lanes, so vpmaddwd takes the two scales as one register; the -32 goes through bsums.
static float dot_q6_k_q8_k(const block_q6_k *w, const block_q8_k *x, int64_t nb) {
    const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(0x03);
    float sum = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *sc = w[b].scales;
        __m256i acc = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i ql0 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * h));
            const __m256i ql1 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * h + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * h));
            const __m256i lows[4] = { _mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                                      _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                      _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4) };
            for (int p = 0; p < 4; p++) {   // weights 128h + 32p + l, l < 32
                const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * p), low2);
                const __m256i q = _mm256_or_si256(lows[p], _mm256_slli_epi16(high, 4));
                const __m256i xv = _mm256_loadu_si256((const __m256i *)(x[b].qs + 128 * h + 32 * p));
                const int s = 8 * h + 2 * p;
                const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(sc[s + 1]), _mm_set1_epi16(sc[s]));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), scales));
            }
        }
        int summ = 0;
        for (int s = 0; s < 16; s++) summ += sc[s] * x[b].bsums[s];
        sum += x[b].d * fp16_to_f32(w[b].d) * (float)(hsum_i32(acc) - 32 * summ);
    }
    return sum;
}

void matmul_q6_k_avx2(const void *w, size_t w_row_bytes, int64_t k, int64_t row0, int64_t row1, const void *x,
                      size_t x_row_bytes, int64_t n_tok, float *y, int64_t ldy) {
    const int64_t nb = k / 256;
    for (int64_t r = row0; r < row1; r++) {
        const block_q6_k *wr = (const block_q6_k *)((const uint8_t *)w + (size_t)r * w_row_bytes);
        for (int64_t t = 0; t < n_tok; t++)
            y[t * ldy + r] = dot_q6_k_q8_k(wr, (const block_q8_k *)((const uint8_t *)x + (size_t)t * x_row_bytes), nb);
    }
}
