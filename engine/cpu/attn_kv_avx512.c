// AVX-512 kernels for attention over the KV cache (engine/cpu/attn_kv.c calls them through the
// kernel table; the scalar versions in kernels_scalar.c are the reference). Compiled with the
// AVX-512 flags: nothing here may run before cpu_kernels_avx512() has said yes.
//
// Keys are worked on channel-major (a channel's slots in one row), the order of the quantized
// key store (KIVI: per-channel codes contiguous along slots), so dequantization, RoPE by slot
// and the scores all run 16 slots per vector with no horizontal sums; F16 key rows are
// transposed into that order 16x16 at a time. Quantized values are dequantized as they are
// summed: o += sum_i (p_i*scale_i) * code_i + sum_i p_i*min_i.
#include "engine/cpu/kernels.h"
#include "engine/rope.h"

#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
// Small fixed loops (heads of a block, vectors of a chunk, rows of a 16x16 block) must unroll
// so that their arrays live in registers.
#define UNROLL _Pragma("GCC unroll 16")

// Lanes [0, n) of a 16-lane vector (n may be <= 0 or > 16).
INLINE __mmask16 lanes(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

// Codes first .. first+n (n <= 64) of a run as floats, 16 per vector; lanes past n are 0 for
// 8-bit codes and unspecified (but read from bytes inside the run) for 4-bit ones. 4-bit: two
// codes per byte, the even one in the low nibble; `first` must be even.
INLINE void codes_ps(const uint8_t *p, int bits, int64_t first, int n, __m512 out[4]) {
    if (bits == 8) {
        UNROLL
        for (int v = 0; v < 4; v++) {
            const __mmask16 m = lanes(n - 16 * v);
            const __m128i b = m ? _mm_maskz_loadu_epi8(m, p + first + 16 * v) : _mm_setzero_si128();
            out[v] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
        }
        return;
    }
    const uint8_t *b = p + first / 2;
    const int nb = (n + 1) / 2;
    const __m128i low = _mm_set1_epi8(0x0f);
    UNROLL
    for (int h = 0; h < 2; h++) {
        const __mmask16 m = lanes(nb - 16 * h);
        const __m128i x = m ? _mm_maskz_loadu_epi8(m, b + 16 * h) : _mm_setzero_si128();
        const __m128i lo = _mm_and_si128(x, low), hi = _mm_and_si128(_mm_srli_epi16(x, 4), low);
        out[2 * h] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)));
        out[2 * h + 1] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(lo, hi)));
    }
}

void cvt_f16_f32_avx512(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i))));
        _mm512_storeu_ps(y + i + 16, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i + 16))));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = lanes((int)(n - i < 16 ? n - i : 16));
        _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
    }
}

// Channel c of a key tile dequantized: its codes first .. first+n (n <= 64), 16 per vector.
INLINE void kq_channel(const uint8_t *codes, size_t cstride, int bits, int first, int n, const uint16_t *sm,
                       int c, __m512 x[4]) {
    const __m512 sc = _mm512_set1_ps(_cvtsh_ss(sm[2 * c])), mn = _mm512_set1_ps(_cvtsh_ss(sm[2 * c + 1]));
    codes_ps(codes + (size_t)c * cstride, bits, first, n, x);
    UNROLL
    for (int v = 0; v < 4; v++) x[v] = _mm512_fmadd_ps(x[v], sc, mn);
}

// Dequantized and rotated in one pass: each pair of channels is rotated in registers.
void kq_tile_avx512(const uint8_t *codes, size_t cstride, int bits, int i0, const uint16_t *sm, int hd, int ns,
                    const float *cst, int64_t ldc, int half, int neox, float *kt, int64_t ldt) {
    if (bits == 4 && (i0 & 1)) {
        kq_tile_ref(codes, cstride, bits, i0, sm, hd, ns, cst, ldc, half, neox, kt, ldt);
        return;
    }
    for (int i = 0; i < ns; i += 64) {
        const int n = ns - i < 64 ? ns - i : 64;
        for (int f = 0; f < half; f++) {
            const int c0 = ROPE_PAIR_FIRST(f, half, neox), c1 = ROPE_PAIR_SECOND(f, half, neox);
            __m512 a[4], b[4];
            kq_channel(codes, cstride, bits, i0 + i, n, sm, c0, a);
            kq_channel(codes, cstride, bits, i0 + i, n, sm, c1, b);
            const float *co = cst + 2 * f * ldc + i, *si = co + ldc;
            float *x0 = kt + c0 * ldt + i, *x1 = kt + c1 * ldt + i;
            UNROLL
            for (int v = 0; v * 16 < n; v++) {
                const __mmask16 m = lanes(n - 16 * v);
                const __m512 c = _mm512_maskz_loadu_ps(m, co + 16 * v), s = _mm512_maskz_loadu_ps(m, si + 16 * v);
                _mm512_mask_storeu_ps(x0 + 16 * v, m, _mm512_fmsub_ps(a[v], c, _mm512_mul_ps(b[v], s)));
                _mm512_mask_storeu_ps(x1 + 16 * v, m, _mm512_fmadd_ps(a[v], s, _mm512_mul_ps(b[v], c)));
            }
        }
        for (int c = 2 * half; c < hd; c++) {   // channels past the rotary ones
            __m512 a[4];
            kq_channel(codes, cstride, bits, i0 + i, n, sm, c, a);
            UNROLL
            for (int v = 0; v * 16 < n; v++) _mm512_mask_storeu_ps(kt + c * ldt + i + 16 * v, lanes(n - 16 * v), a[v]);
        }
    }
}

// r[j] := column j of the 16x16 block whose row i is r[i] (four rounds of lane shuffles).
INLINE void transpose16(__m512 r[16]) {
    __m512 t[16];
    UNROLL
    for (int i = 0; i < 8; i++) {   // t[2i] lane k: (a4k, b4k, a4k+1, b4k+1); t[2i+1]: the +2, +3
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    UNROLL
    for (int i = 0; i < 4; i++) {   // r[4i+j] lane k: element 4k+j of rows 4i..4i+3
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    UNROLL
    for (int j = 0; j < 4; j++) {   // t[j]: elements j, 8+j of rows 0-3, 4-7; t[8+j]: of rows 8-15
        t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
        t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
        t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    }
    UNROLL
    for (int j = 0; j < 4; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
        r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xDD);
    }
}

// 16x16 blocks: 16 rows converted, transposed into 16 channel vectors and, for interleaved
// pairs, rotated before they are stored (NeoX pairs lie in different blocks: rope_t after).
void f16_rows_t_avx512(const uint16_t *rows, int64_t ldr, int ns, int hd, const float *cst, int64_t ldc, int half,
                       int neox, float *kt, int64_t ldt) {
    const int c16 = hd - hd % 16, fused = !neox && 2 * half <= c16;
    for (int i = 0; i < ns; i += 16) {
        const int n = ns - i < 16 ? ns - i : 16;
        const __mmask16 m = lanes(n);
        for (int c = 0; c < c16; c += 16) {
            __m512 r[16];
            UNROLL
            for (int j = 0; j < 16; j++)
                r[j] = j < n ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rows + (i + j) * ldr + c)))
                             : _mm512_setzero_ps();
            transpose16(r);
            if (fused && c < 2 * half) {
                UNROLL
                for (int j = 0; j < 8; j++) {   // pair (c + 2j, c + 2j + 1): frequency c/2 + j
                    const int f = c / 2 + j;
                    if (f >= half) break;
                    const float *co = cst + 2 * f * ldc + i;
                    const __m512 cv = _mm512_maskz_loadu_ps(m, co), sv = _mm512_maskz_loadu_ps(m, co + ldc);
                    const __m512 a = r[2 * j], b = r[2 * j + 1];
                    r[2 * j] = _mm512_fmsub_ps(a, cv, _mm512_mul_ps(b, sv));
                    r[2 * j + 1] = _mm512_fmadd_ps(a, sv, _mm512_mul_ps(b, cv));
                }
            }
            UNROLL
            for (int j = 0; j < 16; j++) _mm512_mask_storeu_ps(kt + (c + j) * ldt + i, m, r[j]);
        }
        for (int c = c16; c < hd; c++)
            for (int j = 0; j < n; j++) kt[c * ldt + i + j] = _cvtsh_ss(rows[(i + j) * ldr + c]);
    }
    if (half > 0 && !fused) rope_t_avx512(cst, ldc, half, neox, ns, kt, ldt);
}

void rope_t_avx512(const float *cst, int64_t ldc, int half, int neox, int ns, float *kt, int64_t ldt) {
    for (int f = 0; f < half; f++) {
        float *x0 = kt + ROPE_PAIR_FIRST(f, half, neox) * ldt, *x1 = kt + ROPE_PAIR_SECOND(f, half, neox) * ldt;
        const float *co = cst + 2 * f * ldc, *si = co + ldc;
        for (int i = 0; i < ns; i += 16) {
            const __mmask16 m = lanes(ns - i);
            const __m512 a = _mm512_maskz_loadu_ps(m, x0 + i), b = _mm512_maskz_loadu_ps(m, x1 + i);
            const __m512 c = _mm512_maskz_loadu_ps(m, co + i), s = _mm512_maskz_loadu_ps(m, si + i);
            _mm512_mask_storeu_ps(x0 + i, m, _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s)));
            _mm512_mask_storeu_ps(x1 + i, m, _mm512_fmadd_ps(a, s, _mm512_mul_ps(b, c)));
        }
    }
}

// Scores of gn (1..4; a constant where inlined) query heads over slots [i, i+n), n <= 64:
// 16 accumulators, each channel row of the tile loaded once for every head.
INLINE void scores_t_block(const int gn, const float *q, int hd, const float *kt, int64_t ldt, int i, int n,
                           float scale, float *s, int64_t lds) {
    __m512 acc[4][4];
    UNROLL
    for (int g = 0; g < 4; g++)
        UNROLL
        for (int v = 0; v < 4; v++) acc[g][v] = _mm512_setzero_ps();
    const __mmask16 m0 = lanes(n), m1 = lanes(n - 16), m2 = lanes(n - 32), m3 = lanes(n - 48);
    for (int c = 0; c < hd; c++) {
        const float *kr = kt + c * ldt + i;
        const __m512 k0 = _mm512_maskz_loadu_ps(m0, kr), k1 = _mm512_maskz_loadu_ps(m1, kr + 16),
                     k2 = _mm512_maskz_loadu_ps(m2, kr + 32), k3 = _mm512_maskz_loadu_ps(m3, kr + 48);
        UNROLL
        for (int g = 0; g < gn; g++) {
            const __m512 qb = _mm512_set1_ps(q[g * hd + c]);
            acc[g][0] = _mm512_fmadd_ps(qb, k0, acc[g][0]);
            acc[g][1] = _mm512_fmadd_ps(qb, k1, acc[g][1]);
            acc[g][2] = _mm512_fmadd_ps(qb, k2, acc[g][2]);
            acc[g][3] = _mm512_fmadd_ps(qb, k3, acc[g][3]);
        }
    }
    const __m512 sv = _mm512_set1_ps(scale);
    UNROLL
    for (int g = 0; g < gn; g++) {
        float *o = s + g * lds + i;
        _mm512_mask_storeu_ps(o, m0, _mm512_mul_ps(acc[g][0], sv));
        _mm512_mask_storeu_ps(o + 16, m1, _mm512_mul_ps(acc[g][1], sv));
        _mm512_mask_storeu_ps(o + 32, m2, _mm512_mul_ps(acc[g][2], sv));
        _mm512_mask_storeu_ps(o + 48, m3, _mm512_mul_ps(acc[g][3], sv));
    }
}

void attn_scores_t_avx512(const float *q, int G, const float *kt, int64_t ldt, int ns, int hd, float scale,
                          float *s, int64_t lds) {
    for (int g0 = 0; g0 < G; g0 += 4) {
        const float *qg = q + (size_t)g0 * hd;
        float *sg = s + g0 * lds;
        for (int i = 0; i < ns; i += 64) {
            const int n = ns - i < 64 ? ns - i : 64;
            switch (G - g0 < 4 ? G - g0 : 4) {
            case 1: scores_t_block(1, qg, hd, kt, ldt, i, n, scale, sg, lds); break;
            case 2: scores_t_block(2, qg, hd, kt, ldt, i, n, scale, sg, lds); break;
            case 3: scores_t_block(3, qg, hd, kt, ldt, i, n, scale, sg, lds); break;
            default: scores_t_block(4, qg, hd, kt, ldt, i, n, scale, sg, lds); break;
            }
        }
    }
}

// gn (1..4) heads, channels [cc, cc+n) of the value rows, n <= 64: per slot, the row's codes
// are expanded once and scaled by p*scale for each head; the min terms are summed apart.
INLINE void values_q_block(const int gn, const float *p, int64_t ldp, const uint8_t *codes, size_t rstride,
                           int bits, int cc, const uint16_t *sm, int64_t smstride, int ns, int n, float *o,
                           int64_t ldo) {
    __m512 acc[4][4];
    float mins[4] = { 0, 0, 0, 0 };
    UNROLL
    for (int g = 0; g < 4; g++)
        UNROLL
        for (int v = 0; v < 4; v++) acc[g][v] = _mm512_setzero_ps();
    for (int i = 0; i < ns; i++) {
        const uint16_t *si = sm + i * smstride;
        const float sc = _cvtsh_ss(si[0]), mn = _cvtsh_ss(si[1]);
        __m512 x[4];
        codes_ps(codes + (size_t)i * rstride, bits, cc, n, x);
        UNROLL
        for (int g = 0; g < gn; g++) {
            const float pg = p[g * ldp + i];
            mins[g] += pg * mn;
            const __m512 w = _mm512_set1_ps(pg * sc);
            UNROLL
            for (int v = 0; v < 4; v++) acc[g][v] = _mm512_fmadd_ps(w, x[v], acc[g][v]);
        }
    }
    UNROLL
    for (int g = 0; g < gn; g++) {
        const __m512 mv = _mm512_set1_ps(mins[g]);
        UNROLL
        for (int v = 0; v * 16 < n; v++) {
            const __mmask16 m = lanes(n - 16 * v);
            float *ov = o + g * ldo + 16 * v;
            _mm512_mask_storeu_ps(ov, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, ov), _mm512_add_ps(acc[g][v], mv)));
        }
    }
}

void attn_values_q_avx512(const float *p, int64_t ldp, int G, const uint8_t *codes, size_t rstride, int bits,
                          int c0, const uint16_t *sm, int64_t smstride, int ns, int nc, float *o, int64_t ldo) {
    if (bits == 4 && (c0 & 1)) {
        attn_values_q_ref(p, ldp, G, codes, rstride, bits, c0, sm, smstride, ns, nc, o, ldo);
        return;
    }
    for (int c = 0; c < nc; c += 64) {
        const int n = nc - c < 64 ? nc - c : 64;
        for (int g0 = 0; g0 < G; g0 += 4) {
            const float *pg = p + g0 * ldp;
            float *og = o + g0 * ldo + c;
            switch (G - g0 < 4 ? G - g0 : 4) {
            case 1: values_q_block(1, pg, ldp, codes, rstride, bits, c0 + c, sm, smstride, ns, n, og, ldo); break;
            case 2: values_q_block(2, pg, ldp, codes, rstride, bits, c0 + c, sm, smstride, ns, n, og, ldo); break;
            case 3: values_q_block(3, pg, ldp, codes, rstride, bits, c0 + c, sm, smstride, ns, n, og, ldo); break;
            default: values_q_block(4, pg, ldp, codes, rstride, bits, c0 + c, sm, smstride, ns, n, og, ldo); break;
            }
        }
    }
}

// gn (1..4) heads, channels [0, n) (n <= 64) of F16 value rows, converted as they are loaded.
INLINE void values_f16_block(const int gn, const float *p, int64_t ldp, const uint16_t *v, int64_t ldv, int ns,
                             int n, float *o, int hd) {
    __m512 acc[4][4];
    const __mmask16 m[4] = { lanes(n), lanes(n - 16), lanes(n - 32), lanes(n - 48) };
    UNROLL
    for (int g = 0; g < 4; g++)
        UNROLL
        for (int u = 0; u < 4; u++) acc[g][u] = g < gn ? _mm512_maskz_loadu_ps(m[u], o + g * hd + 16 * u) : _mm512_setzero_ps();
    for (int i = 0; i < ns; i++) {
        const uint16_t *r = v + i * ldv;
        __m512 x[4];
        UNROLL
        for (int u = 0; u < 4; u++) x[u] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m[u], r + 16 * u));
        UNROLL
        for (int g = 0; g < gn; g++) {
            const __m512 pb = _mm512_set1_ps(p[g * ldp + i]);
            UNROLL
            for (int u = 0; u < 4; u++) acc[g][u] = _mm512_fmadd_ps(pb, x[u], acc[g][u]);
        }
    }
    UNROLL
    for (int g = 0; g < gn; g++)
        UNROLL
        for (int u = 0; u < 4; u++) _mm512_mask_storeu_ps(o + g * hd + 16 * u, m[u], acc[g][u]);
}

void attn_values_f16_avx512(const float *p, int64_t ldp, int G, const uint16_t *v, int64_t ldv, int ns, int hd,
                            float *o) {
    for (int c = 0; c < hd; c += 64) {
        const int n = hd - c < 64 ? hd - c : 64;
        for (int g0 = 0; g0 < G; g0 += 4) {
            const float *pg = p + g0 * ldp;
            float *og = o + g0 * hd + c;
            switch (G - g0 < 4 ? G - g0 : 4) {
            case 1: values_f16_block(1, pg, ldp, v + c, ldv, ns, n, og, hd); break;
            case 2: values_f16_block(2, pg, ldp, v + c, ldv, ns, n, og, hd); break;
            case 3: values_f16_block(3, pg, ldp, v + c, ldv, ns, n, og, hd); break;
            default: values_f16_block(4, pg, ldp, v + c, ldv, ns, n, og, hd); break;
            }
        }
    }
}
