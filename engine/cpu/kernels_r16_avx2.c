// The packed kernels of the AVX2 table (the K-quants and IQ4_XS first; the 32-weight types, then
// F16 and BF16, further down), over the same row-interleaved units as the AVX-512 ones
// (engine/cpu/kernels.h, "r16"; the sums are written out in engine/cpu/kernels_r16_avx512.c). A
// unit's 64-byte line holds 4 bytes of each of 16 rows: its first 32 bytes are rows 0-7 and its
// last 32 rows 8-15, so each line is two 256-bit registers, one per half of the row group, with
// one int32 lane per row.
//
// AVX2 has no vpdpbusd: vpmaddubsw multiplies unsigned bytes by signed ones and sums adjacent
// pairs into int16, vpmaddwd takes pairs of int16 into the int32 lane. A pair sum cannot
// saturate when the unsigned operand is at most 127, so the codes go in as they are (Q2_K 0..3,
// Q3_K 0..7, Q4_K 0..15, Q5_K 0..31, Q6_K 0..63; Q4_K's high nibbles shifted down first);
// IQ4_XS's signed levels go in as their absolute values with their signs moved onto the
// activations (vpsignb). Small codes leave room: a group's pair sums add up in int16 over as many
// lines as 2 x code x 127 allows (dot4_16), then one vpmaddwd takes them to int32 by the rows'
// scales, so the scale multiply comes free (docs/PERF.md, "the AVX2 table"). One group at a
// time, so that a tile of up to 4 tokens keeps its sums in the 16 registers. Decode and prefill
// tiles of one row group x up to TMK tokens; only the rows asked for are written.
#include "engine/cpu/kernels.h"

#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

enum {
    R16 = 16,
    TMK = 4,   // tokens per tile at most (each type's own limit: MATMUL_FN)
    Q2K_UNIT = 1344, Q3K_UNIT = 1856, Q4K_UNIT = 2368, Q5K_UNIT = 2880, Q6K_UNIT = 3392, IQ4XS_UNIT = 2240,
    PF_K = 8192,   // the weight stream prefetched this far ahead, a quarter of a unit at a time
};

INLINE __m256i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
// v as it is, but a point GCC may not move additions across: left free, it re-associates a
// chain of sums into a tree of products that it spills to the stack (half the speed).
INLINE __m256i in_order(__m256i v) {
    __asm__("" : "+x"(v));
    return v;
}
// acc + Σ of each int32 lane's four products a*b (a unsigned <= 127, b signed).
INLINE __m256i dot4(__m256i acc, __m256i a, __m256i b) {
    return in_order(_mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1))));
}
// acc + each int16 pair's two products a*b (a unsigned, b signed), summed in int16: the caller
// bounds how many it adds up (n sums of pairs <= 2 * max(a) * 127 must stay under 32768).
INLINE __m256i dot4_16(__m256i acc, __m256i a, __m256i b) { return in_order(_mm256_add_epi16(acc, _mm256_maddubs_epi16(a, b))); }
// Each int32 lane's low int16 copied into its high one: a row's scale for both halves of the
// lane, as vpmaddwd takes it (values that fit an int16).
INLINE __m256i pair16(__m256i v) {
    return _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
                                                   0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13));
}
// The scale bytes (int8, or uint8 when !is_signed) of 8 rows for two groups (a, b) as int16
// pairs, one int32 lane per row: what vpmaddwd takes against a token's two bsums (bsum_pair).
INLINE __m256i scale_pairs(const uint8_t *a, const uint8_t *b, const bool is_signed) {
    const __m128i la = _mm_loadl_epi64((const __m128i *)(const void *)a), lb = _mm_loadl_epi64((const __m128i *)(const void *)b);
    const __m128i va = is_signed ? _mm_cvtepi8_epi16(la) : _mm_cvtepu8_epi16(la);
    const __m128i vb = is_signed ? _mm_cvtepi8_epi16(lb) : _mm_cvtepu8_epi16(lb);
    return _mm256_set_m128i(_mm_unpackhi_epi16(va, vb), _mm_unpacklo_epi16(va, vb));
}
// A token's activation sums of groups g and g + 1 (adjacent int16) in every int32 lane.
INLINE __m256i bsum_pair(const block_q8_k *x, int g) { return bcast4((const int8_t *)(const void *)(x->bsums + g)); }
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

// acc + (or -) isum x the rows' scales dw x the token's scale xd (one half of a row group).
INLINE __m256 add_scaled(__m256 acc, __m256i isum, __m256 dw, float xd) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, _mm256_set1_ps(xd)), acc);
}
INLINE __m256 sub_scaled(__m256 acc, __m256i isum, __m256 dw, float xd) {
    return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, _mm256_set1_ps(xd)), acc);
}

// Q4_K and Q5_K: pairs of groups of 32 (low nibbles: group 2jp, high: 2jp+1) under 6-bit scales
// and mins; Q5_K or-s its fifth bits onto the nibbles (bit 2jp, 2jp+1 of the qh chunk at the
// same position, moved to bit 4).
INLINE void tile_q45_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                       unsigned store, const int T, const bool five) {
    TILE_BEGIN
    const __m256i m4 = _mm256_set1_epi8(0x0f), b4 = _mm256_set1_epi8(0x10);
    const size_t unit = five ? Q5K_UNIT : Q4K_UNIT;
    // A group's pair sums add up in int16 over 8 lines for Q4_K (8 x 2*15*127 < 32768) and over
    // 4 for Q5_K (4 x 2*31*127), then go to int32 times the rows' scales (vpmaddwd).
    const int run = five ? 4 : 8;
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * unit, *sc = u + 64, *mn = u + 192, *qs = u + 320, *qh = u + 2368;
        // One group (the low nibbles of 8 lines, then their high ones) at a time, both halves of
        // the row group against each activation broadcast.
        __m256i isum[TMK][2];
        UNROLL for (int t = 0; t < T; t++) isum[t][0] = isum[t][1] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            const int jp = j / 2, hi = j % 2;
            if (!hi) prefetch_unit(u, unit, jp);
            const __m128i shift = _mm_cvtsi32_si128(j);
            __m256i s16[TMK][2];
            UNROLL for (int c = 0; c < 8; c++) {
                __m256i q[2];
                UNROLL for (int h = 0; h < 2; h++) {
                    const __m256i v = load(qs + (size_t)(8 * jp + c) * 64 + 32 * h);
                    q[h] = _mm256_and_si256(hi ? _mm256_srli_epi16(v, 4) : v, m4);
                    if (five)   // the fifth bit: bit j of the qh byte, moved to bit 4
                        q[h] = _mm256_or_si256(q[h], _mm256_and_si256(_mm256_slli_epi16(_mm256_srl_epi16(load(qh + (size_t)c * 64 + 32 * h), shift), 4), b4));
                }
                UNROLL for (int t = 0; t < T; t++) {
                    const __m256i xv = bcast4(xr[t][sb].qs + 32 * j + 4 * c);
                    UNROLL for (int h = 0; h < 2; h++)
                        s16[t][h] = c % run ? dot4_16(s16[t][h], q[h], xv) : _mm256_maddubs_epi16(q[h], xv);
                }
                if (c % run == run - 1)
                    UNROLL for (int h = 0; h < 2; h++) {
                        const __m256i scv = pair16(u8x8(sc + j * 16 + 8 * h));
                        UNROLL for (int t = 0; t < T; t++) isum[t][h] = _mm256_add_epi32(isum[t][h], _mm256_madd_epi16(s16[t][h], scv));
                    }
            }
        }
        UNROLL for (int h = 0; h < 2; h++) {
            // The mins: each group's min x its activation sum (its two bsums), by vpmaddwd.
            __m256i msum[TMK];
            UNROLL for (int t = 0; t < T; t++) msum[t] = _mm256_setzero_si256();
            UNROLL for (int j = 0; j < 8; j++) {
                const __m256i mv = pair16(u8x8(mn + j * 16 + 8 * h));
                UNROLL for (int t = 0; t < T; t++)
                    msum[t] = _mm256_add_epi32(msum[t], _mm256_madd_epi16(mv, bsum_pair(&xr[t][sb], 2 * j)));
            }
            const __m256 dw = f16x8(u + 16 * h), dm = f16x8(u + 32 + 16 * h);
            UNROLL for (int t = 0; t < T; t++) {
                acc[t][h] = add_scaled(acc[t][h], isum[t][h], dw, xr[t][sb].d);
                acc[t][h] = sub_scaled(acc[t][h], msum[t], dm, xr[t][sb].d);
            }
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
// bits and two bits each of p = 3's in their top two; groups of 16 under int8 scales, less 32
// times each group's activation sum (added once a super-block).
INLINE void tile_q6_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      unsigned store, const int T) {
    TILE_BEGIN
    const __m256i m6 = _mm256_set1_epi8(0x3f), m2 = _mm256_set1_epi8(0x03), m0c = _mm256_set1_epi8(0x0c),
                  m30 = _mm256_set1_epi8(0x30);
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * Q6K_UNIT, *sc = u + 32, *px = u + 288;
        // One half of the row group, then one plane (group) at a time, so that a tile of 4 tokens
        // keeps its sums in registers; p = 3 reads the top bits of all three planes.
        UNROLL for (int h = 0; h < 2; h++) {
            __m256i isum[TMK];
            UNROLL for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
            for (int hf = 0; hf < 2; hf++)
                for (int lh = 0; lh < 2; lh++) {
                    if (h == 0) prefetch_unit(u, Q6K_UNIT, 2 * hf + lh);
                    UNROLL for (int p = 0; p < 4; p++) {
                        const __m256i scv = pair16(i8x8(sc + (size_t)(8 * hf + 2 * p + lh) * 16 + 8 * h));
                        __m256i s16[TMK];
                        // Two lines of a group's pair sums add up in int16 (2 x 2*63*127 < 32768).
                        UNROLL for (int cc = 0; cc < 4; cc++) {
                            const size_t c = (size_t)(8 * hf + 4 * lh + cc) * 64 + 32 * h;
                            __m256i q;
                            if (p < 3) q = _mm256_and_si256(load(px + 1024 * (size_t)p + c), m6);
                            else q = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(load(px + c), 6), m2),
                                                     _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(load(px + 1024 + c), 4), m0c),
                                                                     _mm256_and_si256(_mm256_srli_epi16(load(px + 2048 + c), 2), m30)));
                            UNROLL for (int t = 0; t < T; t++) {
                                const __m256i xv = bcast4(xr[t][sb].qs + 128 * hf + 32 * p + 4 * (4 * lh + cc));
                                s16[t] = cc % 2 ? dot4_16(s16[t], q, xv) : _mm256_maddubs_epi16(q, xv);
                            }
                            if (cc % 2)
                                UNROLL for (int t = 0; t < T; t++) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], scv));
                        }
                    }
                }
            // The -32 offset: -32 x each group's scale x its activation sum, two groups (8hf + 2p,
            // + 1: adjacent scales and bsums) to a vpmaddwd.
            __m256i off[TMK];
            UNROLL for (int t = 0; t < T; t++) off[t] = _mm256_setzero_si256();
            UNROLL for (int g = 0; g < 16; g += 2) {
                const __m256i sp = scale_pairs(sc + (size_t)g * 16 + 8 * h, sc + (size_t)(g + 1) * 16 + 8 * h, true);
                UNROLL for (int t = 0; t < T; t++) off[t] = _mm256_add_epi32(off[t], _mm256_madd_epi16(sp, bsum_pair(&xr[t][sb], g)));
            }
            const __m256 dw = f16x8(u + 16 * h);
            UNROLL for (int t = 0; t < T; t++)
                acc[t][h] = add_scaled(acc[t][h], _mm256_sub_epi32(isum[t], _mm256_slli_epi32(off[t], 5)), dw, xr[t][sb].d);
        }
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
        // One half of the row group, then one group of 16 (4 lines at one bit position) at a
        // time: its pair sums add up in int16 (4 x 2*7*127, with Q3_K's offset -4 x its
        // activation sum split over the lane's two int16: at most 7112 + 4064), then times the
        // rows' scales.
        UNROLL for (int h = 0; h < 2; h++) {
            __m256i isum[TMK];
            UNROLL for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
            for (int n = 0; n < 2; n++) {
                if (h == 0) {
                    prefetch_unit(u, unit, 2 * n);
                    prefetch_unit(u, unit, 2 * n + 1);
                }
                for (int j = 0; j < 4; j++)
                    UNROLL for (int p = 0; p < 2; p++) {
                        const int g = 8 * n + 2 * j + p;
                        __m256i s16[TMK];
                        UNROLL for (int t = 0; t < T; t++)
                            s16[t] = three ? _mm256_set1_epi16((int16_t)(-2 * xr[t][sb].bsums[g])) : _mm256_setzero_si256();
                        UNROLL for (int cc = 0; cc < 4; cc++) {
                            const int c = 4 * p + cc;
                            __m256i code = _mm256_and_si256(_mm256_srl_epi16(load(qs + (size_t)(8 * n + c) * 64 + 32 * h), cnt[2 * j]), m3);
                            if (three) {
                                const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(load(hm + (size_t)c * 64 + 32 * h), cnt[4 * n + j]), one);
                                code = _mm256_or_si256(code, _mm256_slli_epi16(hb, 2));
                            }
                            UNROLL for (int t = 0; t < T; t++) s16[t] = dot4_16(s16[t], code, bcast4(xr[t][sb].qs + 16 * g + 4 * cc));
                        }
                        const uint8_t *at = sc + (size_t)g * 16 + 8 * h;
                        const __m256i scv = pair16(three ? i8x8(at) : _mm256_and_si256(u8x8(at), m15));
                        UNROLL for (int t = 0; t < T; t++) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], scv));
                    }
            }
            const __m256 dw = f16x8(u + 16 * h);
            __m256i msum[TMK];
            if (!three) {   // Q2_K's mins (high nibbles) x each group's activation sum, two groups at a time
                UNROLL for (int t = 0; t < T; t++) msum[t] = _mm256_setzero_si256();
                UNROLL for (int g = 0; g < 16; g += 2) {
                    const __m256i mp = _mm256_srli_epi16(scale_pairs(sc + (size_t)g * 16 + 8 * h, sc + (size_t)(g + 1) * 16 + 8 * h, false), 4);
                    UNROLL for (int t = 0; t < T; t++) msum[t] = _mm256_add_epi32(msum[t], _mm256_madd_epi16(mp, bsum_pair(&xr[t][sb], g)));
                }
            }
            UNROLL for (int t = 0; t < T; t++) {
                acc[t][h] = add_scaled(acc[t][h], isum[t], dw, xr[t][sb].d);
                if (!three) acc[t][h] = sub_scaled(acc[t][h], msum[t], f16x8(u + 32 + 16 * h), xr[t][sb].d);
            }
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
        // One half of the row group, then one group at a time (the low nibbles of 8 lines, then
        // their high ones). A pair sum (<= 2*127*127) fills an int16 on its own, so each goes
        // straight to int32 times the rows' scales (vpmaddwd).
        UNROLL for (int h = 0; h < 2; h++) {
            __m256i isum[TMK];
            UNROLL for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
            for (int j = 0; j < 8; j++) {
                const int jp = j / 2, hi = j % 2;
                if (h == 0 && !hi) prefetch_unit(u, IQ4XS_UNIT, jp);
                const __m256i scv = pair16(i8x8(sc + j * 16 + 8 * h));
                UNROLL for (int c = 0; c < 8; c++) {
                    const __m256i v = load(qs + (size_t)(8 * jp + c) * 64 + 32 * h);
                    const __m256i q = _mm256_shuffle_epi8(levels, _mm256_and_si256(hi ? _mm256_srli_epi16(v, 4) : v, m4));
                    const __m256i aq = _mm256_abs_epi8(q);
                    UNROLL for (int t = 0; t < T; t++) {
                        const __m256i xv = _mm256_sign_epi8(bcast4(xr[t][sb].qs + 32 * j + 4 * c), q);
                        isum[t] = in_order(_mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aq, xv), scv)));
                    }
                }
            }
            const __m256 dw = f16x8(u + 16 * h);
            UNROLL for (int t = 0; t < T; t++)
                acc[t][h] = add_scaled(acc[t][h], isum[t], dw, xr[t][sb].d);
        }
    }
    TILE_END
}

#define TILE_FN(K, T)                                                                                          \
    static void tile_##K##_##T(const uint8_t *gw, int64_t n, const uint8_t *x, size_t xrb, float *y, int64_t ldy, \
                               unsigned store) { tile_##K(gw, n, x, xrb, y, ldy, store, T); }
#define TILE_FNS(K)                                                                                          \
    TILE_FN(K, 1) TILE_FN(K, 2) TILE_FN(K, 3) TILE_FN(K, 4)                                                  \
    static const cpu_r16_tile_fn tiles_##K[TMK] = { tile_##K##_1, tile_##K##_2, tile_##K##_3, tile_##K##_4 };
TILE_FNS(q2_k) TILE_FNS(q3_k) TILE_FNS(q4_k) TILE_FNS(q5_k) TILE_FNS(q6_k) TILE_FNS(iq4_xs)

// TMAX: the most tokens a tile of the type takes before its sums no longer fit the registers.
#define MATMUL_FN(K, UNIT, TMAX)                                                                             \
    void matmul_##K##_r16_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x, \
                               size_t xrb, int64_t n_tok, float *y, int64_t ldy) {                            \
        (void)wrb;                                                                                           \
        cpu_r16_sweep(tiles_##K, TMAX, (size_t)(k / 256) * UNIT, k / 256, w, row0, row1, x, xrb, n_tok, y, ldy); \
    }
MATMUL_FN(q2_k, Q2K_UNIT, 4) MATMUL_FN(q3_k, Q3K_UNIT, 4) MATMUL_FN(q4_k, Q4K_UNIT, 4) MATMUL_FN(q5_k, Q5K_UNIT, 4)
MATMUL_FN(q6_k, Q6K_UNIT, 4) MATMUL_FN(iq4_xs, IQ4XS_UNIT, 4)

// ---------------------------------------------------------------------------------------------
// The 32-weight types against Q8_0 activation blocks (fp16 d, 32 int8 in [-127, 127]): a unit is
// a pair of blocks, a header of fp16 row scales (d of the 16 rows for the first block, then the
// second; Q4_1 and Q5_1 then their m likewise), then each block's payload chunked (the 4-bit
// types: 16 bytes of nibbles a row, low nibbles weights 0-15, high 16-31, and Q5's line of fifth
// bits, engine/cpu/pack_r16.c; Q8_0: 32 int8).
// - Q4_0, Q4_1, Q5_0, Q5_1: the codes go in as they are (0..15, 0..31); Q4_0's block sum is
//   seeded with -8 times its activation sum and Q5_0's with -16 (made once per token); Q4_1 and
//   Q5_1 add m times the block's activation sum d_x Σ x_q.
// - IQ4_NL and Q8_0: signed weights (the codebook's levels looked up by vpshufb; int8) go in as
//   absolute values with their signs moved onto the activations.

enum { TML = 4 };
enum { K4_0, K4_1, K5_0, K5_1, KNL, K8_0, N_KINDS };   // Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0

INLINE bool has_min(const int kind) { return kind == K4_1 || kind == K5_1; }
INLINE bool five_bit(const int kind) { return kind == K5_0 || kind == K5_1; }
INLINE size_t head_bytes(const int kind) { return has_min(kind) ? 128 : 64; }
INLINE size_t payload_bytes(const int kind) { return kind == K8_0 ? 512 : five_bit(kind) ? 320 : 256; }
INLINE size_t unit_bytes(const int kind) { return head_bytes(kind) + 2 * payload_bytes(kind); }
static int code_offset(const int kind) { return kind == K4_0 ? 8 : kind == K5_0 ? 16 : 0; }

// Per token and block: -offset x the sum of its activation bytes, its scale d_x as a float, and
// d_x times the sum.
typedef struct { int32_t seed; float d, dsum; } block_prep;

static void prep_blocks(const int off, const uint8_t *x, size_t xrb, int64_t n_tok, int64_t nb, block_prep *out) {
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
            const int sum = _mm_cvtsi128_si32(h);
            const float dx = _cvtsh_ss(d);
            out[t * nb + b] = (block_prep){ -off * sum, dx, dx * (float)sum };
        }
    }
}

// Q5's fifth bits of nibble set j (chunk j/2's low nibbles for even j, high for odd) at bit 4 of
// every byte, from the block's fifth bits (bit j of each byte).
INLINE __m256i fifth_bits(__m256i qh, const int j) {
    const __m256i sh = j <= 4 ? _mm256_slli_epi16(qh, 4 - j) : _mm256_srli_epi16(qh, j - 4);
    return _mm256_and_si256(sh, _mm256_set1_epi8(0x10));
}

INLINE void tile_legacy(const int kind, const uint8_t *gw, int64_t nb, const uint8_t *x, size_t xrb,
                        const block_prep *prep, float *y, int64_t ldy, unsigned store, const int T) {
    const size_t unit = unit_bytes(kind), pay = payload_bytes(kind);
    const block_q8_0 *xb[TML];
    __m256 acc[TML][2];
    UNROLL for (int t = 0; t < T; t++) {
        xb[t] = (const block_q8_0 *)(const void *)(x + (size_t)t * xrb);
        acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    }
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones16 = _mm256_set1_epi16(1);
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)iq4_levels));
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *u = gw + (size_t)(b / 2) * unit, *pl = u + head_bytes(kind) + (size_t)(b % 2) * pay;
        if (b % 2 == 0)
            for (size_t l = 0; l < unit; l += 64) _mm_prefetch((const char *)(uintptr_t)((uintptr_t)u + 2048 + l), _MM_HINT_T1);
        __m256i s[TML][2];
        UNROLL for (int t = 0; t < T; t++) s[t][0] = s[t][1] = _mm256_set1_epi32(prep[t * nb + b].seed);
        if (kind == K4_0 || kind == K4_1) {
            // Both halves of a line against each activation broadcast; the 8 pair sums of
            // nibble x activation (<= 2*15*127 each) a block adds up fit an int16.
            __m256i s16[TML][2];
            UNROLL for (int t = 0; t < T; t++) s16[t][0] = s16[t][1] = _mm256_setzero_si256();
            UNROLL for (int c = 0; c < 4; c++) {
                __m256i lo[2], hi[2];
                UNROLL for (int h = 0; h < 2; h++) {
                    const __m256i v = load(pl + 64 * c + 32 * h);
                    lo[h] = _mm256_and_si256(v, m4);
                    hi[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                }
                UNROLL for (int t = 0; t < T; t++) {
                    const __m256i xl = bcast4(xb[t][b].qs + 4 * c), xh = bcast4(xb[t][b].qs + 16 + 4 * c);
                    UNROLL for (int h = 0; h < 2; h++) s16[t][h] = dot4_16(dot4_16(s16[t][h], lo[h], xl), hi[h], xh);
                }
            }
            UNROLL for (int t = 0; t < T; t++) UNROLL for (int h = 0; h < 2; h++)
                s[t][h] = _mm256_add_epi32(s[t][h], _mm256_madd_epi16(s16[t][h], ones16));
        } else if (five_bit(kind)) {
            // One half of the row group, then the low nibbles of the 4 lines and then their high
            // ones: 4 pair sums of code x activation (<= 2*31*127 each) fit an int16.
            UNROLL for (int h = 0; h < 2; h++) {
                const __m256i qh = load(pl + 256 + 32 * h);
                UNROLL for (int hi = 0; hi < 2; hi++) {
                    __m256i s16[TML];
                    UNROLL for (int t = 0; t < T; t++) s16[t] = _mm256_setzero_si256();
                    UNROLL for (int c = 0; c < 4; c++) {
                        const __m256i v = load(pl + 64 * c + 32 * h);
                        const __m256i q = _mm256_or_si256(_mm256_and_si256(hi ? _mm256_srli_epi16(v, 4) : v, m4),
                                                          fifth_bits(qh, 2 * c + hi));
                        UNROLL for (int t = 0; t < T; t++) s16[t] = dot4_16(s16[t], q, bcast4(xb[t][b].qs + 16 * hi + 4 * c));
                    }
                    UNROLL for (int t = 0; t < T; t++) s[t][h] = _mm256_add_epi32(s[t][h], _mm256_madd_epi16(s16[t], ones16));
                }
            }
        } else if (kind == KNL) {
            UNROLL for (int c = 0; c < 4; c++) {
                __m256i lo[2], hi[2], alo[2], ahi[2];
                UNROLL for (int h = 0; h < 2; h++) {
                    const __m256i v = load(pl + 64 * c + 32 * h);
                    lo[h] = _mm256_shuffle_epi8(levels, _mm256_and_si256(v, m4));
                    hi[h] = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
                    alo[h] = _mm256_abs_epi8(lo[h]);
                    ahi[h] = _mm256_abs_epi8(hi[h]);
                }
                UNROLL for (int t = 0; t < T; t++) {
                    const __m256i xl = bcast4(xb[t][b].qs + 4 * c), xh = bcast4(xb[t][b].qs + 16 + 4 * c);
                    UNROLL for (int h = 0; h < 2; h++) {
                        s[t][h] = dot4(s[t][h], alo[h], _mm256_sign_epi8(xl, lo[h]));
                        s[t][h] = dot4(s[t][h], ahi[h], _mm256_sign_epi8(xh, hi[h]));
                    }
                }
            }
        } else {
            UNROLL for (int c = 0; c < 8; c++) {
                __m256i w[2], aw[2];
                UNROLL for (int h = 0; h < 2; h++) {
                    w[h] = load(pl + 64 * c + 32 * h);
                    aw[h] = _mm256_abs_epi8(w[h]);
                }
                UNROLL for (int t = 0; t < T; t++) {
                    const __m256i xv = bcast4(xb[t][b].qs + 4 * c);
                    UNROLL for (int h = 0; h < 2; h++) s[t][h] = dot4(s[t][h], aw[h], _mm256_sign_epi8(xv, w[h]));
                }
            }
        }
        UNROLL for (int h = 0; h < 2; h++) {
            const __m256 dw = f16x8(u + (size_t)(b % 2) * 32 + 16 * h);
            UNROLL for (int t = 0; t < T; t++)
                acc[t][h] = add_scaled(acc[t][h], s[t][h], dw, prep[t * nb + b].d);
            if (has_min(kind)) {
                const __m256 mw = f16x8(u + 64 + (size_t)(b % 2) * 32 + 16 * h);
                UNROLL for (int t = 0; t < T; t++) acc[t][h] = _mm256_fmadd_ps(mw, _mm256_set1_ps(prep[t * nb + b].dsum), acc[t][h]);
            }
        }
    }
    TILE_END
}

// tile_K_T for the kinds and T = 1..TML, and their table.
typedef void (*legacy_tile_fn)(const uint8_t *gw, int64_t nb, const uint8_t *x, size_t xrb, const block_prep *prep,
                               float *y, int64_t ldy, unsigned store);
#define LTILE_FN(K, T)                                                                                        \
    static void ltile_##K##_##T(const uint8_t *gw, int64_t nb, const uint8_t *x, size_t xrb,                  \
                                const block_prep *prep, float *y, int64_t ldy, unsigned store) {              \
        tile_legacy(K, gw, nb, x, xrb, prep, y, ldy, store, T);                                               \
    }
#define LTILE_FNS(K) LTILE_FN(K, 1) LTILE_FN(K, 2) LTILE_FN(K, 3) LTILE_FN(K, 4)
#define LTILE_ROW(K) [K] = { ltile_##K##_1, ltile_##K##_2, ltile_##K##_3, ltile_##K##_4 }
LTILE_FNS(K4_0) LTILE_FNS(K4_1) LTILE_FNS(K5_0) LTILE_FNS(K5_1) LTILE_FNS(KNL) LTILE_FNS(K8_0)
static const legacy_tile_fn ltiles_of[N_KINDS][TML] = { LTILE_ROW(K4_0), LTILE_ROW(K4_1), LTILE_ROW(K5_0),
                                                        LTILE_ROW(K5_1), LTILE_ROW(KNL), LTILE_ROW(K8_0) };

// Rows [row0, row1) of a packed 32-weight-type matrix: the tokens' block scales, sums and seeds
// prepared once, then every row group sweeps the tokens TML at a time.
static void matmul_legacy(const int kind, const void *w, int64_t k, int64_t row0, int64_t row1, const void *x,
                          size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    const int64_t nb = k / 32, np = (nb + 1) / 2;
    block_prep *prep = cpu_kernels_scratch((size_t)(n_tok * nb) * sizeof(block_prep));
    if (!prep) return;   // out of memory: the pass fails at its end (cpu_kernels_scratch_failed)
    prep_blocks(code_offset(kind), x, xrb, n_tok, nb, prep);
    const size_t unit = unit_bytes(kind);
    for (int64_t g = row0 / R16; g * R16 < row1; g++) {
        const unsigned store = cpu_r16_rows_in(g, row0, row1);
        const uint8_t *gw = (const uint8_t *)w + (size_t)(g * np) * unit;
        for (int64_t t = 0; t < n_tok;) {
            const int T = n_tok - t >= TML ? TML : (int)(n_tok - t);
            ltiles_of[kind][T - 1](gw, nb, (const uint8_t *)x + (size_t)t * xrb, xrb, prep + t * nb,
                                   y + t * ldy + g * R16, ldy, store);
            t += T;
        }
    }
}

#define MATMUL_LEGACY(K, KIND)                                                                                \
    void matmul_##K##_r16_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x, \
                               size_t xrb, int64_t n_tok, float *y, int64_t ldy) {                            \
        (void)wrb;                                                                                            \
        matmul_legacy(KIND, w, k, row0, row1, x, xrb, n_tok, y, ldy);                                         \
    }
MATMUL_LEGACY(q4_0, K4_0) MATMUL_LEGACY(q4_1, K4_1) MATMUL_LEGACY(q5_0, K5_0) MATMUL_LEGACY(q5_1, K5_1)
MATMUL_LEGACY(iq4_nl, KNL) MATMUL_LEGACY(q8_0, K8_0)

// ---------------------------------------------------------------------------------------------
// F16 and BF16 weights against float activations (ACT_F32), in the AVX-512 table's units (16 rows
// x 32 weights, line p holding weights 2p and 2p + 1; engine/cpu/kernels_r16_avx512.c has the
// scheme): a weight of half the row group widens to 8 floats, each token's activation broadcast
// adds to its row sums with one FMA, one at a time along k whatever the tile shape. One row group
// x up to 6 tokens (12 sums in registers), each group sweeping the tokens (cpu_r16_sweep: its
// weights stay in L2 between tiles); the single weight stream is prefetched 8 KiB ahead.
enum { F16_UNIT = 16 * 64, TMF = 6, PF_F16 = 8192 };

// Weight i of the line (odd: the second of its pair) for half h of the row group (rows 8h ..
// 8h + 7), as floats: F16 (weight i of the 16 rows in the line's first 32 bytes, i + 1 in its
// last) by vcvtph2ps; BF16 (each row's pair in a 32-bit lane, rows 8h .. 8h + 7 in half h) by
// moving the low half up or masking the high one in place.
INLINE __m256 widen8(const uint8_t *line, const int odd, const int h, const bool bf) {
    if (!bf) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(line + 32 * odd + 16 * h)));
    const __m256i v = load(line + 32 * h);
    return _mm256_castsi256_ps(odd ? _mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u)) : _mm256_slli_epi32(v, 16));
}

// Weight i of the line (i's parity: which of its pair) against the tokens: both halves of the row
// group widened, each token's activation broadcast once for both.
INLINE void f16_half_step(const bool bf, const uint8_t *line, const float *const *xt, int64_t i, __m256 acc[TMF][2],
                          const int T) {
    const int odd = (int)(i % 2);
    const __m256 w0 = widen8(line, odd, 0, bf), w1 = widen8(line, odd, 1, bf);
    UNROLL for (int t = 0; t < T; t++) {
        const __m256 xv = _mm256_broadcast_ss(xt[t] + i);
        acc[t][0] = _mm256_fmadd_ps(w0, xv, acc[t][0]);
        acc[t][1] = _mm256_fmadd_ps(w1, xv, acc[t][1]);
    }
}

INLINE void tile_f16(const bool bf, const uint8_t *gw, int64_t k, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                     unsigned store, const int T) {
    __m256 acc[TMF][2];
    const float *xt[TMF];
    UNROLL for (int t = 0; t < T; t++) {
        xt[t] = (const float *)(const void *)(x + (size_t)t * xrb);
        acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    }
    const int64_t nfull = k / 32;
    for (int64_t u = 0; u < nfull; u++)
        UNROLL for (int p = 0; p < 16; p++) {
            const uint8_t *line = gw + (size_t)u * F16_UNIT + 64 * p;
            _mm_prefetch((const char *)(uintptr_t)((uintptr_t)line + PF_F16), _MM_HINT_T1);
            f16_half_step(bf, line, xt, 32 * u + 2 * p, acc, T);
            f16_half_step(bf, line, xt, 32 * u + 2 * p + 1, acc, T);
        }
    for (int64_t i = 32 * nfull; i < k; i++)   // the row's last, partial unit
        f16_half_step(bf, gw + (size_t)nfull * F16_UNIT + (size_t)(i % 32 / 2) * 64, xt, i, acc, T);
    UNROLL for (int t = 0; t < T; t++) store16(y + (size_t)t * (size_t)ldy, acc[t][0], acc[t][1], store);
}

#define F16_TILE_FN(K, BF, T)                                                                                  \
    static void tile_##K##_##T(const uint8_t *gw, int64_t n, const uint8_t *x, size_t xrb, float *y, int64_t ldy, \
                               unsigned store) { tile_f16(BF, gw, n, x, xrb, y, ldy, store, T); }
#define F16_TILE_FNS(K, BF) F16_TILE_FN(K, BF, 1) F16_TILE_FN(K, BF, 2) F16_TILE_FN(K, BF, 3) F16_TILE_FN(K, BF, 4) \
    F16_TILE_FN(K, BF, 5) F16_TILE_FN(K, BF, 6)                                                                    \
    static const cpu_r16_tile_fn tiles_##K[TMF] = { tile_##K##_1, tile_##K##_2, tile_##K##_3,                       \
                                                    tile_##K##_4, tile_##K##_5, tile_##K##_6 };
F16_TILE_FNS(f16, false) F16_TILE_FNS(bf16, true)

void matmul_f16_r16_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x,
                         size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    (void)wrb;
    cpu_r16_sweep(tiles_f16, TMF, (size_t)((k + 31) / 32) * F16_UNIT, k, w, row0, row1, x, xrb, n_tok, y, ldy);
}
void matmul_bf16_r16_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x,
                          size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    (void)wrb;
    cpu_r16_sweep(tiles_bf16, TMF, (size_t)((k + 31) / 32) * F16_UNIT, k, w, row0, row1, x, xrb, n_tok, y, ldy);
}
