// AVX-512 row converters, bit-identical to the reference ones in wtype.c: the same float
// operations in the same order (no fused multiply-add), truncation and rounding as C does them.
#include "engine/convert.h"
#include "engine/wtype.h"

#include <immintrin.h>
#include <math.h>

void f16_to_f32_avx512(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
    for (; i < n; i++) dst[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(src[i])));
}

static uint16_t to_half(float f) {
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0);
}

// The first element of largest magnitude (as the reference loop keeps it), with its sign.
static float signed_max(const float *x, __m512 a, __m512 b, float *amax_out) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    __m512 aa = _mm512_andnot_ps(sign, a), ab = _mm512_andnot_ps(sign, b);
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(aa, ab));
    __m512 m = _mm512_set1_ps(amax);
    uint32_t mask = (uint32_t)_mm512_cmp_ps_mask(aa, m, _CMP_EQ_OQ) | ((uint32_t)_mm512_cmp_ps_mask(ab, m, _CMP_EQ_OQ) << 16);
    *amax_out = amax;
    return mask ? x[__builtin_ctz(mask)] : 0.0f;
}

void quantize_row_q4_0_avx512(const float *src, void *dst, int64_t n) {
    block_q4_0 *out = dst;
    const __m512 half8 = _mm512_set1_ps(8.5f);
    const __m512i fifteen = _mm512_set1_epi32(15);
    for (int64_t i = 0; i < n / 32; i++) {
        const float *x = src + i * 32;
        __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
        float amax;
        float max = signed_max(x, a, b, &amax);
        const float d = max / -8.0f;
        const float id = d ? 1.0f / d : 0.0f;
        out[i].d = to_half(d);
        __m512 vid = _mm512_set1_ps(id);
        // (int8_t)(x*id + 8.5f), then min 15: x*id + 8.5 is in [0.5, 16.5] so truncation to
        // int32 and then to int8 agree.
        __m512i qa = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(a, vid), half8));
        __m512i qb = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(b, vid), half8));
        qa = _mm512_min_epi32(qa, fifteen);
        qb = _mm512_min_epi32(qb, fifteen);
        __m512i packed = _mm512_or_si512(qa, _mm512_slli_epi32(qb, 4));
        _mm_storeu_si128((__m128i *)out[i].qs, _mm512_cvtepi32_epi8(packed));
    }
}

void quantize_row_q8_0_avx512(const float *src, void *dst, int64_t n) {
    block_q8_0 *out = dst;
    const __m512 sign = _mm512_set1_ps(-0.0f), one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
    for (int64_t i = 0; i < n / 32; i++) {
        const float *x = src + i * 32;
        __m512 v[2] = { _mm512_loadu_ps(x), _mm512_loadu_ps(x + 16) };
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v[0]), _mm512_andnot_ps(sign, v[1])));
        const float d = amax / 127.0f;
        const float id = d ? 1.0f / d : 0.0f;
        out[i].d = to_half(d);
        __m512 vid = _mm512_set1_ps(id);
        for (int h = 0; h < 2; h++) {
            // roundf (halves away from zero), exactly: t = trunc(y); |y - t| >= 0.5 -> t ± 1
            __m512 y = _mm512_mul_ps(v[h], vid);
            __m512 t = _mm512_roundscale_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            __mmask16 up = _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, _mm512_sub_ps(y, t)), half, _CMP_GE_OQ);
            __m512 step = _mm512_or_ps(_mm512_and_ps(y, sign), one);   // ±1 with y's sign
            t = _mm512_mask_add_ps(t, up, t, step);
            _mm_storeu_si128((__m128i *)(out[i].qs + 16 * h), _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(t)));
        }
    }
}
