// AVX-512 kernels (F, BW, VL, DQ, VNNI; plus AVX2/FMA/F16C). This file is compiled with those
// instruction sets enabled, so nothing in it may run before cpu_kernels_avx512() has checked the
// processor and the OS (kernels.c); the table below is only data until then.
//
// Quantized weights (Q4_0, Q8_0) take Q8_0 activations and use integer dot products
// (vpdpbusd: unsigned bytes x signed bytes, four products summed into each int32 lane); one
// 512-bit register holds two 32-weight blocks. Each block's int32 sum is scaled by
// d_w * d_x in float, exactly as the formats define the weights.
//
// Every matmul is written as a tile of R weight rows x T tokens: each weight block is loaded and
// unpacked once per tile and reused for T tokens, each activation block once and reused for R
// rows. Decode (one token) streams weights four rows at a time; prefill uses the widest tiles
// that fit the 32 vector registers.
#include "engine/cpu/kernels.h"

#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

enum {
    Q4_BYTES = 18, // block_q4_0: fp16 d, 16 bytes of nibbles
    Q8_BYTES = 34, // block_q8_0: fp16 d, 32 int8
    RMAX = 4,      // weight rows per tile (register arrays are sized for the largest tile)
    TMAX = 6,      // tokens per tile
    // Activation rows of one token group are kept hot in L2 while the weight rows of the range
    // stream past them once per group.
    X_GROUP_BYTES = 384 * 1024,
};

INLINE uint32_t ld_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

// Two fp16 block scales (d1 = 0 when there is no second block) spread over the 16 float lanes
// as `pattern` says (lane value 0: first block, 1: second).
INLINE __m512 scale_pair(uint32_t d0, uint32_t d1, __m512i pattern) {
    __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128((int)(d0 | d1 << 16)));
    return _mm512_permutexvar_ps(pattern, _mm512_castps128_ps512(f));
}

// 16 bytes from p0 and, for a pair, 16 from p1 (else zeros) as one 256-bit value.
INLINE __m256i load_16x2(const uint8_t *p0, const uint8_t *p1, int pair) {
    __m128i a = _mm_loadu_si128((const __m128i *)p0);
    if (!pair) return _mm256_zextsi128_si256(a);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(a), _mm_loadu_si128((const __m128i *)p1),
                                   1);
}

// 32 bytes from p0 and, for a pair, 32 from p1 (else zeros).
INLINE __m512i load_32x2(const uint8_t *p0, const uint8_t *p1, int pair) {
    __m256i a = _mm256_loadu_si256((const __m256i *)p0);
    if (!pair) return _mm512_zextsi256_si512(a);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), _mm256_loadu_si256((const __m256i *)p1),
                              1);
}

// ---------------------------------------------------------------------------------------------
// Q4_0 weights x Q8_0 activations.
//
// Weight register (64 bytes): [lo nibbles of block b | lo of b+1 | hi of b | hi of b+1], i.e.
// weights 0-15 of b, 0-15 of b+1, 16-31 of b, 16-31 of b+1 — the cheapest unpack of two blocks'
// 16-byte nibble arrays. The activation register is arranged the same way, so int32 lanes 0-3
// and 8-11 belong to block b and 4-7, 12-15 to block b+1.
// vpdpbusd wants one unsigned operand: the nibbles (0..15) are it, and the format's -8 offset
// comes back out as -8 * sum(x), seeded into the int32 accumulator.
INLINE void q4_0_step(const uint8_t *const *wr, const uint8_t *const *xr, int64_t b,
                      __m512 acc[RMAX][TMAX], const int R, const int T, const int pair) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
    const __m512i pat = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
    __m512i wq[RMAX];
    __m512 wd[RMAX];
    UNROLL for (int r = 0; r < R; r++) {
        const uint8_t *b0 = wr[r] + b * Q4_BYTES, *b1 = pair ? b0 + Q4_BYTES : b0;
#ifdef PF_DIST
        _mm_prefetch((const char *)b0 + PF_DIST, _MM_HINT_T0);
#endif
        __m256i q = load_16x2(b0 + 2, b1 + 2, pair);
        __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
        wq[r] = _mm512_and_si512(both, m4);
        wd[r] = scale_pair(ld_u16(b0), pair ? ld_u16(b1) : 0, pat);
    }
    UNROLL for (int t = 0; t < T; t++) {
        const uint8_t *x0 = xr[t] + b * Q8_BYTES, *x1 = pair ? x0 + Q8_BYTES : x0;
        __m256i lo = load_16x2(x0 + 2, x1 + 2, pair), hi = load_16x2(x0 + 18, x1 + 18, pair);
        __m512i xq = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        __m512i corr = _mm512_sub_epi32(_mm512_setzero_si512(),
                                        _mm512_dpbusd_epi32(_mm512_setzero_si512(), eight, xq));
        __m512 xd = scale_pair(ld_u16(x0), pair ? ld_u16(x1) : 0, pat);
        UNROLL for (int r = 0; r < R; r++) {
            __m512i s = _mm512_dpbusd_epi32(corr, wq[r], xq);
            acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(wd[r], xd), acc[r][t]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Q8_0 weights x Q8_0 activations.
//
// Both registers hold [block b | block b+1] in natural order (int32 lanes 0-7: b, 8-15: b+1).
// vpdpbusd's unsigned operand is the activation moved to x+128 (a sign-bit flip); the extra
// 128 * sum(w) is taken back out by seeding the accumulator with -128 * sum(w), once per row.
INLINE void q8_0_step(const uint8_t *const *wr, const uint8_t *const *xr, int64_t b,
                      __m512 acc[RMAX][TMAX], const int R, const int T, const int pair) {
    const __m512i k80 = _mm512_set1_epi8((char)0x80);
    const __m512i pat = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    __m512i wq[RMAX], wc[RMAX];
    __m512 wd[RMAX];
    UNROLL for (int r = 0; r < R; r++) {
        const uint8_t *b0 = wr[r] + b * Q8_BYTES, *b1 = pair ? b0 + Q8_BYTES : b0;
        wq[r] = load_32x2(b0 + 2, b1 + 2, pair);
        wc[r] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                 _mm512_dpbusd_epi32(_mm512_setzero_si512(), k80, wq[r]));
        wd[r] = scale_pair(ld_u16(b0), pair ? ld_u16(b1) : 0, pat);
    }
    UNROLL for (int t = 0; t < T; t++) {
        const uint8_t *x0 = xr[t] + b * Q8_BYTES, *x1 = pair ? x0 + Q8_BYTES : x0;
        __m512i xq = _mm512_xor_si512(load_32x2(x0 + 2, x1 + 2, pair), k80);
        __m512 xd = scale_pair(ld_u16(x0), pair ? ld_u16(x1) : 0, pat);
        UNROLL for (int r = 0; r < R; r++) {
            __m512i s = _mm512_dpbusd_epi32(wc[r], xq, wq[r]);
            acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(wd[r], xd), acc[r][t]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Float weights (F32, F16, BF16) x F32 activations: 16 weights per step.

enum { FT_F32, FT_F16, FT_BF16 };

// 16 weights from element i of a row, as floats; n < 16 loads only the first n (the rest 0).
INLINE __m512 load_wf(const uint8_t *row, int64_t i, const int ft, int n) {
    const __mmask16 m = (__mmask16)((1u << n) - 1);
    const int full = n == 16;
    if (ft == FT_F32) {
        const float *p = (const float *)(const void *)(row + i * 4);
        return full ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
    }
    const uint8_t *p = row + i * 2;
    __m256i h = full ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(m, p);
    if (ft == FT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

INLINE void f_step(const uint8_t *const *wr, const uint8_t *const *xr, int64_t i,
                   __m512 acc[RMAX][TMAX], const int R, const int T, const int ft, int n) {
    __m512 wv[RMAX];
    UNROLL for (int r = 0; r < R; r++) wv[r] = load_wf(wr[r], i, ft, n);
    UNROLL for (int t = 0; t < T; t++) {
        const float *xp = (const float *)(const void *)xr[t] + i;
        __m512 xv = n == 16 ? _mm512_loadu_ps(xp) : _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), xp);
        UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
}

// ---------------------------------------------------------------------------------------------
// Tiles and the row/token loops around them.

enum { K_Q4_0, K_Q8_0, K_F32, K_F16, K_BF16 };

// One R x T tile over the whole of k. w, x point at the tile's first row/token; y at y[t0][r0].
INLINE void tile(const int kind, const uint8_t *w, size_t wrb, const uint8_t *x, size_t xrb,
                 int64_t k, float *y, int64_t ldy, const int R, const int T) {
    const uint8_t *wr[RMAX], *xr[TMAX];
    __m512 acc[RMAX][TMAX];
    UNROLL for (int r = 0; r < R; r++) wr[r] = w + (size_t)r * wrb;
    UNROLL for (int t = 0; t < T; t++) xr[t] = x + (size_t)t * xrb;
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    if (kind == K_Q4_0 || kind == K_Q8_0) {
        const int64_t nb = k / 32;
        int64_t b = 0;
        for (; b + 2 <= nb; b += 2) {
            if (kind == K_Q4_0) q4_0_step(wr, xr, b, acc, R, T, 1);
            else q8_0_step(wr, xr, b, acc, R, T, 1);
        }
        if (b < nb) {
            if (kind == K_Q4_0) q4_0_step(wr, xr, b, acc, R, T, 0);
            else q8_0_step(wr, xr, b, acc, R, T, 0);
        }
    } else {
        const int ft = kind == K_F32 ? FT_F32 : kind == K_F16 ? FT_F16 : FT_BF16;
        int64_t i = 0;
        for (; i + 16 <= k; i += 16) f_step(wr, xr, i, acc, R, T, ft, 16);
        if (i < k) f_step(wr, xr, i, acc, R, T, ft, (int)(k - i));
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
}

typedef void (*tile_fn)(const uint8_t *w, size_t wrb, const uint8_t *x, size_t xrb, int64_t k,
                        float *y, int64_t ldy);

// Tile functions for kind K: RT_R x (1..RT_T) tokens, and 1 row x (1..RT_T) for the row tail.
#define TILE_FN(K, R, T)                                                                         \
    static void tile_##K##_##R##x##T(const uint8_t *w, size_t wrb, const uint8_t *x, size_t xrb, \
                                     int64_t k, float *y, int64_t ldy) {                         \
        tile(K, w, wrb, x, xrb, k, y, ldy, R, T);                                                \
    }
#define TILE_SET(K, R)                                                                            \
    TILE_FN(K, R, 1) TILE_FN(K, R, 2) TILE_FN(K, R, 3) TILE_FN(K, R, 4) TILE_FN(K, 1, 1)           \
    TILE_FN(K, 1, 2) TILE_FN(K, 1, 3) TILE_FN(K, 1, 4)
#define TILE_SET6(K, R) TILE_SET(K, R) TILE_FN(K, R, 5) TILE_FN(K, R, 6) TILE_FN(K, 1, 5) TILE_FN(K, 1, 6)

// Per kind: full-height tiles [T-1] and one-row tiles [T-1], T = 1..tmax.
typedef struct {
    int rows, tmax;
    tile_fn full[TMAX], one[TMAX];
} tile_set;

TILE_SET(K_Q4_0, 4)
TILE_SET(K_Q8_0, 4)
TILE_SET6(K_F32, 4)
TILE_SET6(K_F16, 4)
TILE_SET6(K_BF16, 4)

#define SET4(K, R) { R, 4, { tile_##K##_##R##x1, tile_##K##_##R##x2, tile_##K##_##R##x3, tile_##K##_##R##x4 }, \
                     { tile_##K##_1x1, tile_##K##_1x2, tile_##K##_1x3, tile_##K##_1x4 } }
#define SET6(K, R) { R, 6, { tile_##K##_##R##x1, tile_##K##_##R##x2, tile_##K##_##R##x3, tile_##K##_##R##x4, \
                             tile_##K##_##R##x5, tile_##K##_##R##x6 },                                  \
                     { tile_##K##_1x1, tile_##K##_1x2, tile_##K##_1x3, tile_##K##_1x4, tile_##K##_1x5,   \
                       tile_##K##_1x6 } }

static const tile_set tiles_q4_0 = SET4(K_Q4_0, 4);
static const tile_set tiles_q8_0 = SET4(K_Q8_0, 4);
static const tile_set tiles_f32 = SET6(K_F32, 4);
static const tile_set tiles_f16 = SET6(K_F16, 4);
static const tile_set tiles_bf16 = SET6(K_BF16, 4);

// Rows [row0, row1) x all tokens, in token groups whose activations stay in L2 while the
// group's weight rows stream past once; within a group, R-row panels (hot in L1) sweep the
// group's tokens T at a time.
static void matmul_tiles(const tile_set *ts, const void *w, size_t wrb, int64_t k, int64_t row0,
                         int64_t row1, const void *x, size_t xrb, int64_t n_tok, float *y,
                         int64_t ldy) {
    int64_t group = xrb ? (int64_t)(X_GROUP_BYTES / xrb) : n_tok;
    group = group < ts->tmax ? ts->tmax : group / ts->tmax * ts->tmax;
    for (int64_t g0 = 0; g0 < n_tok; g0 += group) {
        const int64_t g1 = n_tok - g0 < group ? n_tok : g0 + group;
        for (int64_t r = row0; r < row1;) {
            const int R = row1 - r >= ts->rows ? ts->rows : 1;
            const tile_fn *fns = R == ts->rows ? ts->full : ts->one;
            const uint8_t *wp = (const uint8_t *)w + (size_t)r * wrb;
            for (int64_t t = g0; t < g1;) {
                const int T = g1 - t >= ts->tmax ? ts->tmax : (int)(g1 - t);
                fns[T - 1](wp, wrb, (const uint8_t *)x + (size_t)t * xrb, xrb, k, y + t * ldy + r,
                           ldy);
                t += T;
            }
            r += R;
        }
    }
}

#define MATMUL_FN(name, ts)                                                                      \
    static void name(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1,           \
                     const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {          \
        matmul_tiles(&ts, w, wrb, k, row0, row1, x, xrb, n_tok, y, ldy);                         \
    }
MATMUL_FN(matmul_q4_0, tiles_q4_0)
MATMUL_FN(matmul_q8_0, tiles_q8_0)
MATMUL_FN(matmul_f32, tiles_f32)
MATMUL_FN(matmul_f16, tiles_f16)
MATMUL_FN(matmul_bf16, tiles_bf16)

// ---------------------------------------------------------------------------------------------
// Activation quantizer: same arithmetic as quantize_row_q8_0_ref (d = amax/127 in float,
// q = x * (1/d) rounded half away from zero), so the blocks come out identical.
static void quantize_act_q8_0(const float *x, block_q8_0 *y, int64_t k) {
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    const __m512 sign_mask = _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u));
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
    for (int64_t b = 0; b < k / 32; b++) {
        __m512 v[2] = { _mm512_loadu_ps(x + b * 32), _mm512_loadu_ps(x + b * 32 + 16) };
        const float amax = _mm512_reduce_max_ps(
            _mm512_max_ps(_mm512_and_ps(v[0], abs_mask), _mm512_and_ps(v[1], abs_mask)));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        memcpy(&y[b].d, &dh, 2);
        for (int h = 0; h < 2; h++) {
            __m512 p = _mm512_mul_ps(v[h], _mm512_set1_ps(id));
            // round half away from zero: truncate, then step away from zero when the (exact)
            // remainder is at least one half.
            __m512 tr = _mm512_roundscale_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            __m512 rem = _mm512_and_ps(_mm512_sub_ps(p, tr), abs_mask);
            __mmask16 up = _mm512_cmp_ps_mask(rem, half, _CMP_GE_OQ);
            __m512 step = _mm512_or_ps(_mm512_and_ps(p, sign_mask), one);
            tr = _mm512_mask_add_ps(tr, up, tr, step);
            _mm_storeu_si128((__m128i *)(y[b].qs + h * 16), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(tr)));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Row helpers (any n).

INLINE __mmask16 tail_mask(int64_t n) { return (__mmask16)((1u << n) - 1); }

static float dot_f32(const float *a, const float *b, int64_t n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(),
           s3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static void axpy_f32(float a, const float *x, float *y, int64_t n) {
    const __m512 av = _mm512_set1_ps(a);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i),
                                                        _mm512_maskz_loadu_ps(m, y + i)));
    }
}

INLINE __m512 load_f16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
INLINE __m512 load_f16_tail(const uint16_t *p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

static float dot_f16_f32(const uint16_t *a, const float *b, int64_t n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(),
           s3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_fmadd_ps(load_f16(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(load_f16(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
        s2 = _mm512_fmadd_ps(load_f16(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
        s3 = _mm512_fmadd_ps(load_f16(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(load_f16(a + i), _mm512_loadu_ps(b + i), s0);
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        s1 = _mm512_fmadd_ps(load_f16_tail(a + i, m), _mm512_maskz_loadu_ps(m, b + i), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static void axpy_f16_f32(float a, const uint16_t *x, float *y, int64_t n) {
    const __m512 av = _mm512_set1_ps(a);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, load_f16(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, load_f16_tail(x + i, m),
                                                        _mm512_maskz_loadu_ps(m, y + i)));
    }
}

const cpu_kernels cpu_kernels_avx512_table = {
    .name = "avx512",
    .matmul = {
        [WT_F32] = matmul_f32, [WT_F16] = matmul_f16, [WT_BF16] = matmul_bf16,
        [WT_Q8_0] = matmul_q8_0, [WT_Q4_0] = matmul_q4_0,
    },
    .act_format = {
        [WT_F32] = ACT_F32, [WT_F16] = ACT_F32, [WT_BF16] = ACT_F32,
        [WT_Q8_0] = ACT_Q8_0, [WT_Q4_0] = ACT_Q8_0,
    },
    .quantize_act_q8_0 = quantize_act_q8_0,
    .dot_f32 = dot_f32,
    .axpy_f32 = axpy_f32,
    .dot_f16_f32 = dot_f16_f32,
    .axpy_f16_f32 = axpy_f16_f32,
};
