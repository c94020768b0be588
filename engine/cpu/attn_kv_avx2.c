// AVX2 kernels for attention over the KV cache: the AVX-512 ones (attn_kv_avx512.c, where the
// layout is explained) at 8 floats per vector, with 16 registers; tails of fewer than 8 slots or
// channels go to the scalar reference (kernels_scalar.c). Compiled with AVX2/FMA/F16C: nothing
// here may run before cpu_kernels_avx2() has said yes.
#include "engine/cpu/kernels.h"
#include "engine/rope.h"

#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

// 8 codes first .. first+7 of a run as floats (4-bit: two per byte, even code low; first even).
INLINE __m256 codes8(const uint8_t *p, int bits, int64_t first) {
    __m128i b;
    if (bits == 8) {
        int64_t x;
        memcpy(&x, p + first, 8);
        b = _mm_cvtsi64_si128(x);
    } else {
        int32_t x;
        memcpy(&x, p + first / 2, 4);
        const __m128i v = _mm_cvtsi32_si128(x), low = _mm_set1_epi8(0x0f);
        b = _mm_unpacklo_epi8(_mm_and_si128(v, low), _mm_and_si128(_mm_srli_epi16(v, 4), low));
    }
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
}

INLINE __m256 deq8(const uint8_t *codes, size_t cstride, int bits, int64_t first, const uint16_t *sm, int c) {
    return _mm256_fmadd_ps(codes8(codes + (size_t)c * cstride, bits, first), _mm256_set1_ps(_cvtsh_ss(sm[2 * c])),
                           _mm256_set1_ps(_cvtsh_ss(sm[2 * c + 1])));
}

void kq_tile_avx2(const uint8_t *codes, size_t cstride, int bits, int i0, const uint16_t *sm, int hd, int ns,
                  const float *cst, int64_t ldc, int half, int neox, float *kt, int64_t ldt) {
    const int n8 = (bits == 4 && (i0 & 1)) ? 0 : ns - ns % 8;
    for (int i = 0; i < n8; i += 8) {
        for (int f = 0; f < half; f++) {
            const int c0 = ROPE_PAIR_FIRST(f, half, neox), c1 = ROPE_PAIR_SECOND(f, half, neox);
            const __m256 a = deq8(codes, cstride, bits, i0 + i, sm, c0), b = deq8(codes, cstride, bits, i0 + i, sm, c1);
            const __m256 co = _mm256_loadu_ps(cst + 2 * f * ldc + i), si = _mm256_loadu_ps(cst + (2 * f + 1) * ldc + i);
            _mm256_storeu_ps(kt + c0 * ldt + i, _mm256_fmsub_ps(a, co, _mm256_mul_ps(b, si)));
            _mm256_storeu_ps(kt + c1 * ldt + i, _mm256_fmadd_ps(a, si, _mm256_mul_ps(b, co)));
        }
        for (int c = 2 * half; c < hd; c++) _mm256_storeu_ps(kt + c * ldt + i, deq8(codes, cstride, bits, i0 + i, sm, c));
    }
    if (n8 < ns)
        kq_tile_ref(codes, cstride, bits, i0 + n8, sm, hd, ns - n8, half > 0 ? cst + n8 : cst, ldc, half, neox,
                    kt + n8, ldt);
}

void rope_t_avx2(const float *cst, int64_t ldc, int half, int neox, int ns, float *kt, int64_t ldt) {
    const int n8 = ns - ns % 8;
    for (int f = 0; f < half; f++) {
        float *x0 = kt + ROPE_PAIR_FIRST(f, half, neox) * ldt, *x1 = kt + ROPE_PAIR_SECOND(f, half, neox) * ldt;
        const float *co = cst + 2 * f * ldc, *si = co + ldc;
        for (int i = 0; i < n8; i += 8) {
            const __m256 a = _mm256_loadu_ps(x0 + i), b = _mm256_loadu_ps(x1 + i);
            const __m256 c = _mm256_loadu_ps(co + i), s = _mm256_loadu_ps(si + i);
            _mm256_storeu_ps(x0 + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
            _mm256_storeu_ps(x1 + i, _mm256_fmadd_ps(a, s, _mm256_mul_ps(b, c)));
        }
    }
    if (n8 < ns && half > 0) rope_t_ref(cst + n8, ldc, half, neox, ns - n8, kt + n8, ldt);
}

// 8x8 blocks: rows converted, transposed (the classic unpack / shuffle / lane-permute rounds).
void f16_rows_t_avx2(const uint16_t *rows, int64_t ldr, int ns, int hd, const float *cst, int64_t ldc, int half,
                     int neox, float *kt, int64_t ldt) {
    const int n8 = ns - ns % 8, c8 = hd - hd % 8;
    for (int i = 0; i < n8; i += 8)
        for (int c = 0; c < c8; c += 8) {
            __m256 r[8], t[8];
            UNROLL
            for (int j = 0; j < 8; j++) r[j] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rows + (i + j) * ldr + c)));
            UNROLL
            for (int j = 0; j < 4; j++) {
                t[2 * j] = _mm256_unpacklo_ps(r[2 * j], r[2 * j + 1]);
                t[2 * j + 1] = _mm256_unpackhi_ps(r[2 * j], r[2 * j + 1]);
            }
            UNROLL
            for (int j = 0; j < 2; j++) {   // r[4j+k], lane h: element 4h+k of rows 4j..4j+3
                r[4 * j] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0x44);
                r[4 * j + 1] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0xEE);
                r[4 * j + 2] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0x44);
                r[4 * j + 3] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0xEE);
            }
            UNROLL
            for (int k = 0; k < 4; k++) {
                _mm256_storeu_ps(kt + (c + k) * ldt + i, _mm256_permute2f128_ps(r[k], r[4 + k], 0x20));
                _mm256_storeu_ps(kt + (c + 4 + k) * ldt + i, _mm256_permute2f128_ps(r[k], r[4 + k], 0x31));
            }
        }
    for (int i = 0; i < ns; i++)   // the slots and channels left over
        for (int c = i < n8 ? c8 : 0; c < hd; c++) kt[c * ldt + i] = _cvtsh_ss(rows[i * ldr + c]);
    if (half > 0) rope_t_avx2(cst, ldc, half, neox, ns, kt, ldt);
}

// gn (1..4) heads over slots [i, i+16): 8 accumulators.
INLINE void scores_t16(const int gn, const float *q, int hd, const float *kt, int64_t ldt, int i, float scale,
                       float *s, int64_t lds) {
    __m256 acc[4][2];
    UNROLL
    for (int g = 0; g < 4; g++) acc[g][0] = acc[g][1] = _mm256_setzero_ps();
    for (int c = 0; c < hd; c++) {
        const __m256 k0 = _mm256_loadu_ps(kt + c * ldt + i), k1 = _mm256_loadu_ps(kt + c * ldt + i + 8);
        UNROLL
        for (int g = 0; g < gn; g++) {
            const __m256 qb = _mm256_broadcast_ss(q + g * hd + c);
            acc[g][0] = _mm256_fmadd_ps(qb, k0, acc[g][0]);
            acc[g][1] = _mm256_fmadd_ps(qb, k1, acc[g][1]);
        }
    }
    const __m256 sv = _mm256_set1_ps(scale);
    UNROLL
    for (int g = 0; g < gn; g++) {
        _mm256_storeu_ps(s + g * lds + i, _mm256_mul_ps(acc[g][0], sv));
        _mm256_storeu_ps(s + g * lds + i + 8, _mm256_mul_ps(acc[g][1], sv));
    }
}

void attn_scores_t_avx2(const float *q, int G, const float *kt, int64_t ldt, int ns, int hd, float scale, float *s,
                        int64_t lds) {
    const int n16 = ns - ns % 16;
    for (int g0 = 0; g0 < G; g0 += 4) {
        const float *qg = q + (size_t)g0 * hd;
        float *sg = s + g0 * lds;
        for (int i = 0; i < n16; i += 16) switch (G - g0 < 4 ? G - g0 : 4) {
            case 1: scores_t16(1, qg, hd, kt, ldt, i, scale, sg, lds); break;
            case 2: scores_t16(2, qg, hd, kt, ldt, i, scale, sg, lds); break;
            case 3: scores_t16(3, qg, hd, kt, ldt, i, scale, sg, lds); break;
            default: scores_t16(4, qg, hd, kt, ldt, i, scale, sg, lds); break;
            }
    }
    if (n16 < ns) attn_scores_t_ref(q, G, kt + n16, ldt, ns - n16, hd, scale, s + n16, lds);
}

// gn (1..4) heads, channels [cc, cc+16) of quantized value rows: 8 accumulators.
INLINE void values_q16(const int gn, const float *p, int64_t ldp, const uint8_t *codes, size_t rstride, int bits,
                       int cc, const uint16_t *sm, int64_t smstride, int ns, float *o, int64_t ldo) {
    __m256 acc[4][2];
    float mins[4] = { 0, 0, 0, 0 };
    UNROLL
    for (int g = 0; g < 4; g++) acc[g][0] = acc[g][1] = _mm256_setzero_ps();
    for (int i = 0; i < ns; i++) {
        const uint8_t *r = codes + (size_t)i * rstride;
        const float sc = _cvtsh_ss(sm[i * smstride]), mn = _cvtsh_ss(sm[i * smstride + 1]);
        const __m256 x0 = codes8(r, bits, cc), x1 = codes8(r, bits, cc + 8);
        UNROLL
        for (int g = 0; g < gn; g++) {
            const float pg = p[g * ldp + i];
            mins[g] += pg * mn;
            const __m256 w = _mm256_set1_ps(pg * sc);
            acc[g][0] = _mm256_fmadd_ps(w, x0, acc[g][0]);
            acc[g][1] = _mm256_fmadd_ps(w, x1, acc[g][1]);
        }
    }
    UNROLL
    for (int g = 0; g < gn; g++) {
        const __m256 mv = _mm256_set1_ps(mins[g]);
        float *og = o + g * ldo;
        _mm256_storeu_ps(og, _mm256_add_ps(_mm256_loadu_ps(og), _mm256_add_ps(acc[g][0], mv)));
        _mm256_storeu_ps(og + 8, _mm256_add_ps(_mm256_loadu_ps(og + 8), _mm256_add_ps(acc[g][1], mv)));
    }
}

void attn_values_q_avx2(const float *p, int64_t ldp, int G, const uint8_t *codes, size_t rstride, int bits, int c0,
                        const uint16_t *sm, int64_t smstride, int ns, int nc, float *o, int64_t ldo) {
    const int n16 = (bits == 4 && (c0 & 1)) ? 0 : nc - nc % 16;
    for (int c = 0; c < n16; c += 16)
        for (int g0 = 0; g0 < G; g0 += 4) {
            const float *pg = p + g0 * ldp;
            float *og = o + g0 * ldo + c;
            switch (G - g0 < 4 ? G - g0 : 4) {
            case 1: values_q16(1, pg, ldp, codes, rstride, bits, c0 + c, sm, smstride, ns, og, ldo); break;
            case 2: values_q16(2, pg, ldp, codes, rstride, bits, c0 + c, sm, smstride, ns, og, ldo); break;
            case 3: values_q16(3, pg, ldp, codes, rstride, bits, c0 + c, sm, smstride, ns, og, ldo); break;
            default: values_q16(4, pg, ldp, codes, rstride, bits, c0 + c, sm, smstride, ns, og, ldo); break;
            }
        }
    if (n16 < nc) attn_values_q_ref(p, ldp, G, codes, rstride, bits, c0 + n16, sm, smstride, ns, nc - n16, o + n16, ldo);
}

// gn (1..4) heads, channels [0, 16) of F16 value rows (o rows at stride hd).
INLINE void values_f16x16(const int gn, const float *p, int64_t ldp, const uint16_t *v, int64_t ldv, int ns, float *o,
                          int hd) {
    __m256 acc[4][2];
    UNROLL
    for (int g = 0; g < 4; g++)
        if (g < gn) {
            acc[g][0] = _mm256_loadu_ps(o + g * hd);
            acc[g][1] = _mm256_loadu_ps(o + g * hd + 8);
        }
    for (int i = 0; i < ns; i++) {
        const __m256 x0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i * ldv)));
        const __m256 x1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i * ldv + 8)));
        UNROLL
        for (int g = 0; g < gn; g++) {
            const __m256 pb = _mm256_broadcast_ss(p + g * ldp + i);
            acc[g][0] = _mm256_fmadd_ps(pb, x0, acc[g][0]);
            acc[g][1] = _mm256_fmadd_ps(pb, x1, acc[g][1]);
        }
    }
    UNROLL
    for (int g = 0; g < gn; g++) {
        _mm256_storeu_ps(o + g * hd, acc[g][0]);
        _mm256_storeu_ps(o + g * hd + 8, acc[g][1]);
    }
}

void attn_values_f16_avx2(const float *p, int64_t ldp, int G, const uint16_t *v, int64_t ldv, int ns, int hd,
                          float *o) {
    const int n16 = hd - hd % 16;
    for (int c = 0; c < n16; c += 16)
        for (int g0 = 0; g0 < G; g0 += 4) {
            const float *pg = p + g0 * ldp;
            float *og = o + g0 * hd + c;
            switch (G - g0 < 4 ? G - g0 : 4) {
            case 1: values_f16x16(1, pg, ldp, v + c, ldv, ns, og, hd); break;
            case 2: values_f16x16(2, pg, ldp, v + c, ldv, ns, og, hd); break;
            case 3: values_f16x16(3, pg, ldp, v + c, ldv, ns, og, hd); break;
            default: values_f16x16(4, pg, ldp, v + c, ldv, ns, og, hd); break;
            }
        }
    for (int g = 0; g < G; g++)   // channels left over
        for (int i = 0; i < ns; i++)
            for (int c = n16; c < hd; c++) o[g * hd + c] += p[g * ldp + i] * _cvtsh_ss(v[i * ldv + c]);
}
