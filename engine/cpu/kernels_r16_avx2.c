// The K-quant and IQ4_XS packed kernels of the AVX2 table, over the same row-interleaved units
// as the AVX-512 ones (engine/cpu/kernels.h, "r16"; the sums are written out in
// engine/cpu/kernels_r16_avx512.c). A unit's 64-byte line holds 4 bytes of each of 16 rows: its
// first 32 bytes are rows 0-7 and its last 32 rows 8-15, so each line is two 256-bit registers,
// one per half of the row group, with one int32 lane per row.
//
// AVX2 has no vpdpbusd: dot4 does its arithmetic with vpmaddubsw (unsigned byte x signed byte,
// adjacent pairs summed into int16) and vpmaddwd against ones (pairs of int16 into the int32
// lane). The int16 pair sums cannot saturate when the unsigned operand is at most 127, so the
// codes go in as they are (Q2_K 0..3, Q3_K 0..7, Q4_K 0..15, Q5_K 0..31, Q6_K 0..63) and
// Q4_K's high nibbles are shifted down first; IQ4_XS's signed levels go in as their absolute
// values with their signs moved onto the activations (vpsignb), so it needs no seed.
// Decode and prefill tiles of one row group x up to TMK tokens; only the rows asked for are
// written.
#include "engine/cpu/kernels.h"

#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

enum {
    R16 = 16,
    TMK = 2,   // tokens per tile: two halves of 16 rows x 2 tokens of sums fill the 16 registers
    Q2K_UNIT = 1344, Q3K_UNIT = 1856, Q4K_UNIT = 2368, Q5K_UNIT = 2880, Q6K_UNIT = 3392, IQ4XS_UNIT = 2240,
    PF_K = 8192,   // the weight stream prefetched this far ahead, a quarter of a unit at a time
};

INLINE __m256i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
// acc + Σ of each int32 lane's four products a*b (a unsigned <= 127, b signed).
INLINE __m256i dot4(__m256i acc, __m256i a, __m256i b) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)));
}
INLINE __m256i u8x8(const uint8_t *p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)); }
INLINE __m256i i8x8(const uint8_t *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)); }
INLINE __m256 f16x8(const uint8_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p)); }
INLINE __m256i load(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)(const void *)p); }

INLINE void prefetch_unit(const uint8_t *u, size_t unit, int q) {
    const size_t l0 = (unit / 64 * (size_t)q / 4) * 64, l1 = (unit / 64 * (size_t)(q + 1) / 4) * 64;
    for (size_t l = l0; l < l1; l += 64) _mm_prefetch((const char *)(uintptr_t)((uintptr_t)u + PF_K + l), _MM_HINT_T1);
}

// The 16 sums of one token (rows 0-7 in a0, 8-15 in a1) into y for the rows in `store`.
INLINE void store16(float *y, __m256 a0, __m256 a1, unsigned store) {
    float tmp[R16];
    _mm256_storeu_ps(tmp, a0);
    _mm256_storeu_ps(tmp + 8, a1);
    for (int i = 0; i < R16; i++)
        if (store >> i & 1) y[i] = tmp[i];
}

// The tokens' Q8_K rows and their float accumulators, per half of the row group.
#define TILE_BEGIN                                                                  \
    const block_q8_k *xr[TMK];                                                     \
    __m256 acc[TMK][2];                                                            \
    UNROLL for (int t = 0; t < T; t++) {                                           \
        xr[t] = (const block_q8_k *)(const void *)(x + (size_t)t * xrb);           \
        acc[t][0] = acc[t][1] = _mm256_setzero_ps();                               \
    }
#define TILE_END \
    UNROLL for (int t = 0; t < T; t++) store16(y + (size_t)t * (size_t)ldy, acc[t][0], acc[t][1], store);

// acc += isum * d * x.d (- msum * dmin * x.d when dmin_at is not NULL), per half.
INLINE void finish(__m256 acc[2], const __m256i isum[2], const __m256i *msum, const uint8_t *u, const uint8_t *dmin_at,
                   float xd) {
    const __m256 dx = _mm256_set1_ps(xd);
    UNROLL for (int h = 0; h < 2; h++) {
        acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[h]), _mm256_mul_ps(f16x8(u + 16 * h), dx), acc[h]);
        if (dmin_at)
            acc[h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum[h]), _mm256_mul_ps(f16x8(dmin_at + 16 * h), dx), acc[h]);
    }
}

// Q4_K and Q5_K: pairs of groups of 32 (low nibbles: group 2jp, high: 2jp+1) under 6-bit scales
// and mins; Q5_K or-s its fifth bits onto the nibbles (bit 2jp, 2jp+1 of the qh chunk at the
// same position, moved to bit 4).
INLINE void tile_q45_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                       unsigned store, const int T, const bool five) {
    TILE_BEGIN
    const __m256i m4 = _mm256_set1_epi8(0x0f), b4 = _mm256_set1_epi8(0x10);
    const size_t unit = five ? Q5K_UNIT : Q4K_UNIT;
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * unit, *sc = u + 64, *mn = u + 192, *qs = u + 320, *qh = u + 2368;
        __m256i isum[TMK][2];
        UNROLL for (int t = 0; t < T; t++) isum[t][0] = isum[t][1] = _mm256_setzero_si256();
        for (int jp = 0; jp < 4; jp++) {
            prefetch_unit(u, unit, jp);
            const __m128i shift = _mm_cvtsi32_si128(2 * jp);
            UNROLL for (int h = 0; h < 2; h++) {
                __m256i slo[TMK], shi[TMK];
                UNROLL for (int t = 0; t < T; t++) slo[t] = shi[t] = _mm256_setzero_si256();
                UNROLL for (int c = 0; c < 8; c++) {
                    const __m256i v = load(qs + (size_t)(8 * jp + c) * 64 + 32 * h);
                    __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    if (five) {
                        const __m256i hb = _mm256_srl_epi16(load(qh + (size_t)c * 64 + 32 * h), shift);
                        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hb, 4), b4));
                        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hb, 3), b4));
                    }
                    UNROLL for (int t = 0; t < T; t++) {
                        slo[t] = dot4(slo[t], lo, bcast4(xr[t][sb].qs + 64 * jp + 4 * c));
                        shi[t] = dot4(shi[t], hi, bcast4(xr[t][sb].qs + 64 * jp + 32 + 4 * c));
                    }
                }
                const __m256i s0 = u8x8(sc + 2 * jp * 16 + 8 * h), s1 = u8x8(sc + (2 * jp + 1) * 16 + 8 * h);
                UNROLL for (int t = 0; t < T; t++)
                    isum[t][h] = _mm256_add_epi32(isum[t][h], _mm256_add_epi32(_mm256_mullo_epi32(slo[t], s0),
                                                                                _mm256_mullo_epi32(shi[t], s1)));
            }
        }
        UNROLL for (int t = 0; t < T; t++) {
            const int16_t *bs = xr[t][sb].bsums;
            __m256i msum[2];
            UNROLL for (int h = 0; h < 2; h++) {
                msum[h] = _mm256_setzero_si256();
                UNROLL for (int j = 0; j < 8; j++)
                    msum[h] = _mm256_add_epi32(msum[h], _mm256_mullo_epi32(u8x8(mn + j * 16 + 8 * h),
                                                                           _mm256_set1_epi32(bs[2 * j] + bs[2 * j + 1])));
            }
            finish(acc[t], isum[t], msum, u, u + 32, xr[t][sb].d);
        }
    }
    TILE_END
}
INLINE void tile_q4_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      unsigned store, const int T) {
    tile_q45_k(gw, nsb, x, xrb, y, ldy, store, T, false);
}
INLINE void tile_q5_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      unsigned store, const int T) {
    tile_q45_k(gw, nsb, x, xrb, y, ldy, store, T, true);
}

// Q6_K: planes X, Y, Z carry the codes of weights 128h + 32p + l (p = 0, 1, 2) in their low 6
// bits and two bits each of p = 3's in their top two; groups of 16 under int8 scales, each
// group's sum seeded with -32 times its activation sum.
INLINE void tile_q6_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      unsigned store, const int T) {
    TILE_BEGIN
    const __m256i m6 = _mm256_set1_epi8(0x3f), m2 = _mm256_set1_epi8(0x03), m0c = _mm256_set1_epi8(0x0c),
                  m30 = _mm256_set1_epi8(0x30);
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * Q6K_UNIT, *sc = u + 32, *px = u + 288;
        __m256i isum[TMK][2];
        UNROLL for (int t = 0; t < T; t++) isum[t][0] = isum[t][1] = _mm256_setzero_si256();
        for (int hf = 0; hf < 2; hf++)
            for (int lh = 0; lh < 2; lh++) {
                prefetch_unit(u, Q6K_UNIT, 2 * hf + lh);
                UNROLL for (int h = 0; h < 2; h++) {
                    __m256i s[TMK][4];
                    UNROLL for (int t = 0; t < T; t++) UNROLL for (int p = 0; p < 4; p++)
                        s[t][p] = _mm256_set1_epi32(-32 * xr[t][sb].bsums[8 * hf + 2 * p + lh]);
                    UNROLL for (int cc = 0; cc < 4; cc++) {
                        const size_t c = (size_t)(8 * hf + 4 * lh + cc) * 64 + 32 * h;
                        const __m256i X = load(px + c), Y = load(px + 1024 + c), Z = load(px + 2048 + c);
                        const __m256i q3 = _mm256_or_si256(
                            _mm256_and_si256(_mm256_srli_epi16(X, 6), m2),
                            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(Y, 4), m0c),
                                            _mm256_and_si256(_mm256_srli_epi16(Z, 2), m30)));
                        const __m256i q[4] = { _mm256_and_si256(X, m6), _mm256_and_si256(Y, m6), _mm256_and_si256(Z, m6),
                                               q3 };
                        UNROLL for (int t = 0; t < T; t++) UNROLL for (int p = 0; p < 4; p++)
                            s[t][p] = dot4(s[t][p], q[p], bcast4(xr[t][sb].qs + 128 * hf + 32 * p + 4 * (4 * lh + cc)));
                    }
                    UNROLL for (int p = 0; p < 4; p++) {
                        const __m256i scv = i8x8(sc + (size_t)(8 * hf + 2 * p + lh) * 16 + 8 * h);
                        UNROLL for (int t = 0; t < T; t++) isum[t][h] = _mm256_add_epi32(isum[t][h], _mm256_mullo_epi32(s[t][p], scv));
                    }
                }
            }
        UNROLL for (int t = 0; t < T; t++) finish(acc[t], isum[t], NULL, u, NULL, xr[t][sb].d);
    }
    TILE_END
}

// Q2_K and Q3_K: 2-bit codes at bits 2j of byte 32n + l for weight 128n + 32j + l, groups of 16.
// Q3_K adds 4 where its high bit (bit 4n + j of hmask byte l) is set, under int8 scales, each
// group's sum seeded with -4 times its activation sum; Q2_K's (scale, min) bytes give a scale
// (low nibble) and a min (high nibble).
INLINE void tile_q23_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                       unsigned store, const int T, const bool three) {
    TILE_BEGIN
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), m15 = _mm256_set1_epi32(15);
    const size_t unit = three ? Q3K_UNIT : Q2K_UNIT;
    __m128i cnt[8];
    for (int b = 0; b < 8; b++) cnt[b] = _mm_cvtsi32_si128(b);
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * unit, *sc = u + (three ? 32 : 64);
        const uint8_t *qs = u + (three ? 288 : 320), *hm = u + 1312;
        __m256i isum[TMK][2];
        UNROLL for (int t = 0; t < T; t++) isum[t][0] = isum[t][1] = _mm256_setzero_si256();
        for (int n = 0; n < 2; n++) {
            prefetch_unit(u, unit, 2 * n);
            prefetch_unit(u, unit, 2 * n + 1);
            UNROLL for (int h = 0; h < 2; h++) {
                for (int j = 0; j < 4; j++) {
                    __m256i s[TMK][2];   // groups 8n + 2j + p
                    UNROLL for (int t = 0; t < T; t++) UNROLL for (int p = 0; p < 2; p++)
                        s[t][p] = three ? _mm256_set1_epi32(-4 * xr[t][sb].bsums[8 * n + 2 * j + p]) : _mm256_setzero_si256();
                    UNROLL for (int c = 0; c < 8; c++) {
                        __m256i code = _mm256_and_si256(_mm256_srl_epi16(load(qs + (size_t)(8 * n + c) * 64 + 32 * h), cnt[2 * j]), m3);
                        if (three) {
                            const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(load(hm + (size_t)c * 64 + 32 * h), cnt[4 * n + j]), one);
                            code = _mm256_or_si256(code, _mm256_slli_epi16(hb, 2));
                        }
                        UNROLL for (int t = 0; t < T; t++)
                            s[t][c / 4] = dot4(s[t][c / 4], code, bcast4(xr[t][sb].qs + 128 * n + 32 * j + 4 * c));
                    }
                    UNROLL for (int p = 0; p < 2; p++) {
                        const uint8_t *at = sc + (size_t)(8 * n + 2 * j + p) * 16 + 8 * h;
                        const __m256i scv = three ? i8x8(at) : _mm256_and_si256(u8x8(at), m15);
                        UNROLL for (int t = 0; t < T; t++) isum[t][h] = _mm256_add_epi32(isum[t][h], _mm256_mullo_epi32(s[t][p], scv));
                    }
                }
            }
        }
        UNROLL for (int t = 0; t < T; t++) {
            __m256i msum[2];
            if (!three) {
                const int16_t *bs = xr[t][sb].bsums;
                UNROLL for (int h = 0; h < 2; h++) {
                    msum[h] = _mm256_setzero_si256();
                    UNROLL for (int g = 0; g < 16; g++)
                        msum[h] = _mm256_add_epi32(msum[h], _mm256_mullo_epi32(_mm256_srli_epi32(u8x8(sc + g * 16 + 8 * h), 4),
                                                                               _mm256_set1_epi32(bs[g])));
                }
            }
            finish(acc[t], isum[t], msum, u, three ? NULL : u + 32, xr[t][sb].d);
        }
    }
    TILE_END
}
INLINE void tile_q2_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      unsigned store, const int T) {
    tile_q23_k(gw, nsb, x, xrb, y, ldy, store, T, false);
}
INLINE void tile_q3_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      unsigned store, const int T) {
    tile_q23_k(gw, nsb, x, xrb, y, ldy, store, T, true);
}

// IQ4_XS: the codebook indices in Q4_K's nibble order, looked up (vpshufb) as signed levels;
// groups of 32 under int8 scales.
INLINE void tile_iq4_xs(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                        unsigned store, const int T) {
    TILE_BEGIN
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)iq4_levels));
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * IQ4XS_UNIT, *sc = u + 32, *qs = u + 160;
        __m256i isum[TMK][2];
        UNROLL for (int t = 0; t < T; t++) isum[t][0] = isum[t][1] = _mm256_setzero_si256();
        for (int jp = 0; jp < 4; jp++) {
            prefetch_unit(u, IQ4XS_UNIT, jp);
            UNROLL for (int h = 0; h < 2; h++) {
                __m256i slo[TMK], shi[TMK];
                UNROLL for (int t = 0; t < T; t++) slo[t] = shi[t] = _mm256_setzero_si256();
                UNROLL for (int c = 0; c < 8; c++) {
                    const __m256i v = load(qs + (size_t)(8 * jp + c) * 64 + 32 * h);
                    const __m256i lo = _mm256_shuffle_epi8(levels, _mm256_and_si256(v, m4));
                    const __m256i hi = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
                    const __m256i alo = _mm256_abs_epi8(lo), ahi = _mm256_abs_epi8(hi);
                    UNROLL for (int t = 0; t < T; t++) {
                        slo[t] = dot4(slo[t], alo, _mm256_sign_epi8(bcast4(xr[t][sb].qs + 64 * jp + 4 * c), lo));
                        shi[t] = dot4(shi[t], ahi, _mm256_sign_epi8(bcast4(xr[t][sb].qs + 64 * jp + 32 + 4 * c), hi));
                    }
                }
                const __m256i s0 = i8x8(sc + 2 * jp * 16 + 8 * h), s1 = i8x8(sc + (2 * jp + 1) * 16 + 8 * h);
                UNROLL for (int t = 0; t < T; t++)
                    isum[t][h] = _mm256_add_epi32(isum[t][h], _mm256_add_epi32(_mm256_mullo_epi32(slo[t], s0),
                                                                                _mm256_mullo_epi32(shi[t], s1)));
            }
        }
        UNROLL for (int t = 0; t < T; t++) finish(acc[t], isum[t], NULL, u, NULL, xr[t][sb].d);
    }
    TILE_END
}

#define TILE_FNS(K)                                                                                          \
    static void tile_##K##_1(const uint8_t *gw, int64_t n, const uint8_t *x, size_t xrb, float *y, int64_t ldy, \
                             unsigned store) { tile_##K(gw, n, x, xrb, y, ldy, store, 1); }                  \
    static void tile_##K##_2(const uint8_t *gw, int64_t n, const uint8_t *x, size_t xrb, float *y, int64_t ldy, \
                             unsigned store) { tile_##K(gw, n, x, xrb, y, ldy, store, 2); }                  \
    static const cpu_r16_tile_fn tiles_##K[TMK] = { tile_##K##_1, tile_##K##_2 };
TILE_FNS(q2_k) TILE_FNS(q3_k) TILE_FNS(q4_k) TILE_FNS(q5_k) TILE_FNS(q6_k) TILE_FNS(iq4_xs)

#define MATMUL_FN(K, UNIT)                                                                                   \
    void matmul_##K##_r16_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x, \
                               size_t xrb, int64_t n_tok, float *y, int64_t ldy) {                            \
        (void)wrb;                                                                                           \
        cpu_r16_kquant_sweep(tiles_##K, TMK, UNIT, w, k, row0, row1, x, xrb, n_tok, y, ldy);                 \
    }
MATMUL_FN(q2_k, Q2K_UNIT) MATMUL_FN(q3_k, Q3K_UNIT) MATMUL_FN(q4_k, Q4K_UNIT) MATMUL_FN(q5_k, Q5K_UNIT)
MATMUL_FN(q6_k, Q6K_UNIT) MATMUL_FN(iq4_xs, IQ4XS_UNIT)

// ---------------------------------------------------------------------------------------------
// Q4_0 and Q8_0 against Q8_0 activation blocks (fp16 d, 32 int8 in [-127, 127]): a unit is a
// pair of blocks, 64 bytes of fp16 row scales (16 of the first block, 16 of the second), then
// each block's payload chunked (Q4_0: 16 bytes of nibbles a row, low nibbles weights 0-15, high
// 16-31; Q8_0: 32 int8). Q4_0's nibbles go in as they are, each block's sum seeded with -8 times
// its activation sum (made once per token); Q8_0's int8 weights go in as absolute values with
// their signs moved onto the activations.

enum { TML = 2, Q4_0_UNIT = 576, Q8_0_UNIT = 1088 };

// Per token and block: -8 x the sum of its activation bytes (Q4_0), and its scale as a float.
typedef struct { int32_t seed; float d; } block_prep;

static void prep_blocks(const uint8_t *x, size_t xrb, int64_t n_tok, int64_t nb, block_prep *out) {
    const __m256i ones = _mm256_set1_epi8(1);
    for (int64_t t = 0; t < n_tok; t++) {
        const block_q8_0 *xb = (const block_q8_0 *)(const void *)(x + (size_t)t * xrb);
        for (int64_t b = 0; b < nb; b++) {
            const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones, load((const uint8_t *)xb[b].qs)),
                                                _mm256_set1_epi16(1));
            __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
            uint16_t d;
            memcpy(&d, &xb[b].d, 2);
            out[t * nb + b] = (block_prep){ -8 * _mm_cvtsi128_si32(h), _cvtsh_ss(d) };
        }
    }
}

INLINE void tile_legacy(const bool four, const uint8_t *gw, int64_t nb, const uint8_t *x, size_t xrb,
                        const block_prep *prep, float *y, int64_t ldy, unsigned store, const int T) {
    const size_t unit = four ? Q4_0_UNIT : Q8_0_UNIT, pay = (unit - 64) / 2;
    const block_q8_0 *xb[TML];
    __m256 acc[TML][2];
    UNROLL for (int t = 0; t < T; t++) {
        xb[t] = (const block_q8_0 *)(const void *)(x + (size_t)t * xrb);
        acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    }
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *u = gw + (size_t)(b / 2) * unit, *pl = u + 64 + (size_t)(b % 2) * pay;
        if (b % 2 == 0)
            for (size_t l = 0; l < unit; l += 64) _mm_prefetch((const char *)(uintptr_t)((uintptr_t)u + 2048 + l), _MM_HINT_T1);
        UNROLL for (int h = 0; h < 2; h++) {
            __m256i s[TML];
            UNROLL for (int t = 0; t < T; t++) s[t] = four ? _mm256_set1_epi32(prep[t * nb + b].seed) : _mm256_setzero_si256();
            if (four) {
                UNROLL for (int c = 0; c < 4; c++) {
                    const __m256i v = load(pl + 64 * c + 32 * h);
                    const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    UNROLL for (int t = 0; t < T; t++) {
                        s[t] = dot4(s[t], lo, bcast4(xb[t][b].qs + 4 * c));
                        s[t] = dot4(s[t], hi, bcast4(xb[t][b].qs + 16 + 4 * c));
                    }
                }
            } else {
                UNROLL for (int c = 0; c < 8; c++) {
                    const __m256i w = load(pl + 64 * c + 32 * h), aw = _mm256_abs_epi8(w);
                    UNROLL for (int t = 0; t < T; t++) s[t] = dot4(s[t], aw, _mm256_sign_epi8(bcast4(xb[t][b].qs + 4 * c), w));
                }
            }
            const __m256 dw = f16x8(u + (size_t)(b % 2) * 32 + 16 * h);
            UNROLL for (int t = 0; t < T; t++)
                acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_mul_ps(dw, _mm256_set1_ps(prep[t * nb + b].d)), acc[t][h]);
        }
    }
    TILE_END
}

// Rows [row0, row1) of a packed Q4_0 / Q8_0 matrix: the tokens' block scales and seeds prepared
// once, then every row group sweeps the tokens TML at a time.
static void matmul_legacy(const bool four, const void *w, int64_t k, int64_t row0, int64_t row1, const void *x,
                          size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    const int64_t nb = k / 32, np = (nb + 1) / 2;
    block_prep *prep = cpu_kernels_scratch((size_t)(n_tok * nb) * sizeof(block_prep));
    if (!prep) return;   // out of memory: the pass fails at its end (cpu_kernels_scratch_failed)
    prep_blocks(x, xrb, n_tok, nb, prep);
    const size_t unit = four ? Q4_0_UNIT : Q8_0_UNIT;
    for (int64_t g = row0 / R16; g * R16 < row1; g++) {
        const unsigned store = cpu_r16_rows_in(g, row0, row1);
        const uint8_t *gw = (const uint8_t *)w + (size_t)(g * np) * unit;
        for (int64_t t = 0; t < n_tok;) {
            const uint8_t *xt = (const uint8_t *)x + (size_t)t * xrb;
            float *yt = y + t * ldy + g * R16;
            if (n_tok - t >= TML) {
                if (four) tile_legacy(true, gw, nb, xt, xrb, prep + t * nb, yt, ldy, store, 2);
                else tile_legacy(false, gw, nb, xt, xrb, prep + t * nb, yt, ldy, store, 2);
                t += 2;
            } else {
                if (four) tile_legacy(true, gw, nb, xt, xrb, prep + t * nb, yt, ldy, store, 1);
                else tile_legacy(false, gw, nb, xt, xrb, prep + t * nb, yt, ldy, store, 1);
                t += 1;
            }
        }
    }
}

void matmul_q4_0_r16_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x,
                          size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    (void)wrb;
    matmul_legacy(true, w, k, row0, row1, x, xrb, n_tok, y, ldy);
}

void matmul_q8_0_r16_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x,
                          size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    (void)wrb;
    matmul_legacy(false, w, k, row0, row1, x, xrb, n_tok, y, ldy);
}
