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
// rows. Decode (one token) streams weights four to six rows at a time; prefill uses the widest
// tiles that fit the 32 vector registers.
#include "engine/cpu/kernels.h"
#include "engine/rope.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

enum {
    Q4_BYTES = 18, // block_q4_0: fp16 d, 16 bytes of nibbles
    Q8_BYTES = 34, // block_q8_0: fp16 d, 32 int8
    RMAX = 6,      // weight rows per tile (register arrays are sized for the largest tile)
    TMAX = 6,      // tokens per tile
    // Activation rows of one token group are kept hot in L2 while the weight rows of the range
    // stream past them once per group.
    X_GROUP_BYTES = 384 * 1024,
};

enum { K_Q4_0, K_Q8_0, K_F32, K_F16, K_BF16 };

INLINE uint32_t ld_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

// Two fp16 block scales, at p0 and (for a pair) p1, spread over the 16 float lanes: lanes in
// `second` take the second block's scale (0 when there is none), the others the first's.
INLINE __m512 scale_pair(const uint8_t *p0, const uint8_t *p1, __mmask16 second, int pair) {
    __m256i h = _mm256_set1_epi16((short)ld_u16(p0));
    h = pair ? _mm256_mask_set1_epi16(h, second, (short)ld_u16(p1)) : _mm256_maskz_mov_epi16((__mmask16)~second, h);
    return _mm512_cvtph_ps(h);
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
// Quantized weights (Q4_0, Q8_0) x Q8_0 activations, two blocks (b, b+1 = one "pair") per step.
//
// vpdpbusd multiplies unsigned by signed bytes. The weights are made the unsigned side: Q4_0's
// nibbles as they are (w + 8, 0..15), Q8_0's int8 with the sign bit flipped (w + 128). The
// offset comes back out through the activations: the int32 accumulator is seeded with
// -off * (sums of 4 activation bytes), off = 8 or 128, prepared once per token.
//
// Byte order within a pair register (64 bytes):
//   Q4_0: [lo nibbles of b | lo of b+1 | hi of b | hi of b+1] = weights 0-15 of b, 0-15 of b+1,
//         16-31 of b, 16-31 of b+1 — the cheapest unpack of two 16-byte nibble arrays; int32
//         lanes 0-3, 8-11 belong to block b and 4-7, 12-15 to b+1.
//   Q8_0: [b | b+1], lanes 0-7 block b, 8-15 block b+1.
// The activations are arranged to match, and the scale vectors (d per lane) follow the same
// lane pattern. The last pair of an odd block count has zeros (and zero scales) in its second
// half.
//
// Activations are prepared per call (per token group) into per-thread scratch: for each token,
// np = ceil(nb/2) pair registers of activation bytes in the weights' order (64-byte aligned),
// then np pairs of float scales. That is 72 bytes per pair, close to the 68 of the blocks
// themselves, so a group of tokens stays in L2 while the weights stream past; the seed and the
// per-lane scales are rebuilt from it per (token, pair) at the cost of 3 instructions, shared by
// the R rows of a tile.

static size_t prep_bytes_per_token(int64_t np) {
    return (size_t)np * 64 + ((size_t)np * 8 + 63) / 64 * 64;
}

INLINE __mmask16 second_block_lanes(const int kind) { return kind == K_Q4_0 ? 0xf0f0 : 0xff00; }

// Weights of blocks b (at b0) and b+1 (at b1, when pair) as (unsigned bytes, per-lane scales).
INLINE void unpack_w(const int kind, const uint8_t *b0, const uint8_t *b1, const int pair,
                     __m512i *wq, __m512 *wd) {
    if (kind == K_Q4_0) {
        __m256i q = load_16x2(b0 + 2, b1 + 2, pair);
        __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
        *wq = _mm512_and_si512(both, _mm512_set1_epi8(0x0f));
    } else {
        // Without a second block its bytes become 128, against zero activations: no effect.
        *wq = _mm512_xor_si512(load_32x2(b0 + 2, b1 + 2, pair), _mm512_set1_epi8((char)0x80));
    }
    *wd = scale_pair(b0, b1, second_block_lanes(kind), pair);
}

// x: n_tok rows of nb block_q8_0 (row t at x + t*xrb) -> n_tok prepared rows at out.
INLINE void prep_x(const int kind, const uint8_t *x, size_t xrb, int64_t n_tok, int64_t nb,
                   uint8_t *out) {
    const int64_t np = (nb + 1) / 2;
    const size_t per_tok = prep_bytes_per_token(np);
    for (int64_t t = 0; t < n_tok; t++) {
        __m512i *xq = (__m512i *)(void *)(out + (size_t)t * per_tok);
        float *xd = (float *)(void *)(xq + np);
        for (int64_t p = 0; p < np; p++) {
            const int pair = 2 * p + 1 < nb;
            const uint8_t *x0 = x + (size_t)t * xrb + 2 * p * Q8_BYTES, *x1 = pair ? x0 + Q8_BYTES : x0;
            if (kind == K_Q4_0) {
                __m256i lo = load_16x2(x0 + 2, x1 + 2, pair), hi = load_16x2(x0 + 18, x1 + 18, pair);
                xq[p] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
            } else {
                xq[p] = load_32x2(x0 + 2, x1 + 2, pair);
            }
            xd[2 * p] = _cvtsh_ss((unsigned short)ld_u16(x0));
            xd[2 * p + 1] = pair ? _cvtsh_ss((unsigned short)ld_u16(x1)) : 0.0f;
        }
    }
}

// The R x T products of pair p: acc[r][t] += d_w*d_x * (dot of weight and activation bytes).
// xr[t]: token t's prepared row; np: pairs per row.
INLINE void q_madd(const int kind, const __m512i *wq, const __m512 *wd, const uint8_t *const *xr,
                   int64_t p, int64_t np, __m512 acc[RMAX][TMAX], const int R, const int T) {
    const __m512i off = _mm512_set1_epi8((char)(kind == K_Q4_0 ? 8 : 0x80));
    const __m512i lanes = kind == K_Q4_0
        ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)
        : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    UNROLL for (int t = 0; t < T; t++) {
        const __m512i *xrow = (const __m512i *)(const void *)xr[t];
        const __m512i xq = xrow[p];
        const double *d = (const double *)(const void *)(xrow + np) + p; // 2 floats
        const __m512i corr = _mm512_sub_epi32(_mm512_setzero_si512(),
                                              _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, xq));
        const __m512 xd = _mm512_permutexvar_ps(lanes, _mm512_castpd_ps(_mm512_castpd128_pd512(_mm_load_sd(d))));
        UNROLL for (int r = 0; r < R; r++) {
            __m512i s = _mm512_dpbusd_epi32(corr, wq[r], xq);
            acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(wd[r], xd), acc[r][t]);
        }
    }
}

// Pair b/2 of R weight rows, read (and unpacked) straight from the matrix.
INLINE void q_step(const int kind, const uint8_t *const *wr, const uint8_t *const *xr, int64_t b,
                   int64_t np, __m512 acc[RMAX][TMAX], const int R, const int T, const int pair,
                   size_t pf) {
    const size_t bb = kind == K_Q4_0 ? Q4_BYTES : Q8_BYTES;
    __m512i wq[RMAX];
    __m512 wd[RMAX];
    UNROLL for (int r = 0; r < R; r++) {
        const uint8_t *b0 = wr[r] + b * bb, *b1 = pair ? b0 + bb : b0;
        cpu_prefetch_ahead(b0, pf);
        unpack_w(kind, b0, b1, pair, &wq[r], &wd[r]);
    }
    q_madd(kind, wq, wd, xr, b / 2, np, acc, R, T);
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
                   __m512 acc[RMAX][TMAX], const int R, const int T, const int ft, int n, size_t pf) {
    __m512 wv[RMAX];
    UNROLL for (int r = 0; r < R; r++) {
        // 64 bytes per step for F32, 32 for F16/BF16: one prefetch per cache line.
        if (ft == FT_F32 || !(i & 16)) cpu_prefetch_ahead(wr[r] + i * (ft == FT_F32 ? 4 : 2), pf);
        wv[r] = load_wf(wr[r], i, ft, n);
    }
    UNROLL for (int t = 0; t < T; t++) {
        const float *xp = (const float *)(const void *)xr[t] + i;
        __m512 xv = n == 16 ? _mm512_loadu_ps(xp) : _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), xp);
        UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
}

// ---------------------------------------------------------------------------------------------
// Tiles and the row/token loops around them.

// One R x T tile over the whole of k. w, x point at the tile's first row/token (for quantized
// kinds, x is the prepared activations and xrb their bytes per token); y points at y[t0][r0].
INLINE void tile(const int kind, const uint8_t *w, size_t wrb, const uint8_t *x, size_t xrb,
                 int64_t k, float *y, int64_t ldy, const int R, const int T) {
    const uint8_t *wr[RMAX], *xr[TMAX];
    __m512 acc[RMAX][TMAX];
    UNROLL for (int r = 0; r < R; r++) wr[r] = w + (size_t)r * wrb;
    UNROLL for (int t = 0; t < T; t++) xr[t] = x + (size_t)t * xrb;
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    if (kind == K_Q4_0 || kind == K_Q8_0) {
        const int64_t nb = k / 32, np = (nb + 1) / 2;
        const size_t pf = (size_t)R * wrb;
        int64_t b = 0;
        for (; b + 2 <= nb; b += 2) q_step(kind, wr, xr, b, np, acc, R, T, 1, pf);
        if (b < nb) q_step(kind, wr, xr, b, np, acc, R, T, 0, pf);
    } else {
        const int ft = kind == K_F32 ? FT_F32 : kind == K_F16 ? FT_F16 : FT_BF16;
        int64_t i = 0;
        for (; i + 16 <= k; i += 16) f_step(wr, xr, i, acc, R, T, ft, 16, (size_t)R * wrb);
        if (i < k) f_step(wr, xr, i, acc, R, T, ft, (int)(k - i), (size_t)R * wrb);
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
}

typedef void (*tile_fn)(const uint8_t *w, size_t wrb, const uint8_t *x, size_t xrb, int64_t k,
                        float *y, int64_t ldy);

// Tile functions for kind K: R rows x 1..TMAX tokens, and 1 row x 1..TMAX for the row tail.
#define TILE_FN(K, R, T)                                                                         \
    static void tile_##K##_##R##x##T(const uint8_t *w, size_t wrb, const uint8_t *x, size_t xrb, \
                                     int64_t k, float *y, int64_t ldy) {                         \
        tile(K, w, wrb, x, xrb, k, y, ldy, R, T);                                                \
    }
#define TILE_FNS(K, R)                                                                           \
    TILE_FN(K, R, 1) TILE_FN(K, R, 2) TILE_FN(K, R, 3) TILE_FN(K, R, 4) TILE_FN(K, R, 5)          \
    TILE_FN(K, R, 6) TILE_FN(K, 1, 1) TILE_FN(K, 1, 2) TILE_FN(K, 1, 3) TILE_FN(K, 1, 4)          \
    TILE_FN(K, 1, 5) TILE_FN(K, 1, 6)
#define TILES(K, R, TM)                                                                          \
    { R, TM,                                                                                     \
      { tile_##K##_##R##x1, tile_##K##_##R##x2, tile_##K##_##R##x3, tile_##K##_##R##x4,          \
        tile_##K##_##R##x5, tile_##K##_##R##x6 },                                                \
      { tile_##K##_1x1, tile_##K##_1x2, tile_##K##_1x3, tile_##K##_1x4, tile_##K##_1x5,          \
        tile_##K##_1x6 } }

// Per kind: R-row tiles [T-1] and one-row tiles [T-1], T = 1..tmax.
typedef struct {
    int rows, tmax;
    tile_fn full[TMAX], one[TMAX];
} tile_set;

// Tile shapes (rows x tokens; measured on Zen 5): quantized 4x5 (4x6 spills accumulators:
// 24 + 4 weight + 4 scale registers > 32); F16/BF16 6x4 (each activation load feeds 6 FMAs,
// and decode gets 6 weight streams); F32 4x6 (6 rows of F32 no longer fit L1).
TILE_FNS(K_Q4_0, 4)
TILE_FNS(K_Q8_0, 4)
TILE_FNS(K_F32, 4)
TILE_FNS(K_F16, 6)
TILE_FNS(K_BF16, 6)
static const tile_set tiles_q4_0 = TILES(K_Q4_0, 4, 5);
static const tile_set tiles_q8_0 = TILES(K_Q8_0, 4, 5);
static const tile_set tiles_f32 = TILES(K_F32, 4, 6);
static const tile_set tiles_f16 = TILES(K_F16, 6, 4);
static const tile_set tiles_bf16 = TILES(K_BF16, 6, 4);

// Rows [row0, row1) x tokens [0, n_tok) of x, R-row panels (hot in L1) sweeping the tokens T
// at a time.
static void sweep(const tile_set *ts, const void *w, size_t wrb, int64_t k, int64_t row0,
                  int64_t row1, const uint8_t *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    for (int64_t r = row0; r < row1;) {
        const int R = row1 - r >= ts->rows ? ts->rows : 1;
        const tile_fn *fns = R == ts->rows ? ts->full : ts->one;
        const uint8_t *wp = (const uint8_t *)w + (size_t)r * wrb;
        for (int64_t t = 0; t < n_tok;) {
            const int T = n_tok - t >= ts->tmax ? ts->tmax : (int)(n_tok - t);
            fns[T - 1](wp, wrb, x + (size_t)t * xrb, xrb, k, y + t * ldy + r, ldy);
            t += T;
        }
        r += R;
    }
}

// Tokens per group: activations of one group (x_bytes each) stay hot in L2 while the weight
// rows of the range stream past once per group.
static int64_t token_group(const tile_set *ts, size_t x_bytes, int64_t n_tok) {
    int64_t g = x_bytes ? (int64_t)(X_GROUP_BYTES / x_bytes) : n_tok;
    g = g < ts->tmax ? ts->tmax : g / ts->tmax * ts->tmax;
    return g < n_tok ? g : n_tok;
}

static void matmul_float(const tile_set *ts, const void *w, size_t wrb, int64_t k, int64_t row0,
                         int64_t row1, const void *x, size_t xrb, int64_t n_tok, float *y,
                         int64_t ldy) {
    const int64_t group = token_group(ts, xrb, n_tok);
    for (int64_t g0 = 0; g0 < n_tok; g0 += group) {
        const int64_t ng = n_tok - g0 < group ? n_tok - g0 : group;
        sweep(ts, w, wrb, k, row0, row1, (const uint8_t *)x + (size_t)g0 * xrb, xrb, ng,
              y + g0 * ldy, ldy);
    }
}

// Quantized weights: each token group's activations are prepared (see prep_x) into per-thread
// scratch, then swept like float activations.
static void matmul_quant(const tile_set *ts, int kind, const void *w, size_t wrb, int64_t k,
                         int64_t row0, int64_t row1, const void *x, size_t xrb, int64_t n_tok,
                         float *y, int64_t ldy) {
    const int64_t nb = k / 32;
    const size_t per_tok = prep_bytes_per_token((nb + 1) / 2);
    const int64_t group = token_group(ts, per_tok, n_tok);
    uint8_t *prep = cpu_kernels_scratch((size_t)group * per_tok);
    if (!prep) return;   // out of memory: the pass fails at its end (cpu_kernels_scratch_failed)
    for (int64_t g0 = 0; g0 < n_tok; g0 += group) {
        const int64_t ng = n_tok - g0 < group ? n_tok - g0 : group;
        const uint8_t *xg = (const uint8_t *)x + (size_t)g0 * xrb;
        if (kind == K_Q4_0) prep_x(K_Q4_0, xg, xrb, ng, nb, prep);
        else prep_x(K_Q8_0, xg, xrb, ng, nb, prep);
        sweep(ts, w, wrb, k, row0, row1, prep, per_tok, ng, y + g0 * ldy, ldy);
    }
}

static void matmul_q4_0(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1,
                        const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    matmul_quant(&tiles_q4_0, K_Q4_0, w, wrb, k, row0, row1, x, xrb, n_tok, y, ldy);
}
static void matmul_q8_0(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1,
                        const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    matmul_quant(&tiles_q8_0, K_Q8_0, w, wrb, k, row0, row1, x, xrb, n_tok, y, ldy);
}

#define MATMUL_FN(name, ts)                                                                      \
    static void name(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1,           \
                     const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {          \
        matmul_float(&ts, w, wrb, k, row0, row1, x, xrb, n_tok, y, ldy);                          \
    }
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


// ---------------------------------------------------------------------------------------------
// Attention pieces. Head dims that are multiples of 16 (64 and 128 in practice) take the
// register-blocked paths; others fall back to the row helpers above.

// scores for up to 4 query heads at once: each key row is loaded once and used by every head.
static void attn_scores(const float *q, int G, const float *k, int ns, int hd, float scale, float *s, int64_t lds) {
    if (hd % 16) {
        for (int g = 0; g < G; g++)
            for (int i = 0; i < ns; i++) s[g * lds + i] = dot_f32(q + (size_t)g * hd, k + (size_t)i * hd, hd) * scale;
        return;
    }
    for (int g0 = 0; g0 < G; g0 += 4) {
        const int gn = G - g0 < 4 ? G - g0 : 4;
        const float *q0 = q + (size_t)g0 * hd;
        // heads past G repeat the last one (their results are not stored)
        const float *q1 = q0 + (size_t)(gn > 1 ? 1 : 0) * hd, *q2 = q0 + (size_t)(gn > 2 ? 2 : gn - 1) * hd,
                    *q3 = q0 + (size_t)(gn > 3 ? 3 : gn - 1) * hd;
        for (int i = 0; i < ns; i++) {
            const float *kr = k + (size_t)i * hd;
            __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
                   a3 = _mm512_setzero_ps();
            for (int c = 0; c < hd; c += 16) {
                const __m512 kv = _mm512_loadu_ps(kr + c);
                a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q0 + c), kv, a0);
                a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q1 + c), kv, a1);
                a2 = _mm512_fmadd_ps(_mm512_loadu_ps(q2 + c), kv, a2);
                a3 = _mm512_fmadd_ps(_mm512_loadu_ps(q3 + c), kv, a3);
            }
            float *si = s + (int64_t)g0 * lds + i;
            si[0] = _mm512_reduce_add_ps(a0) * scale;
            if (gn > 1) si[lds] = _mm512_reduce_add_ps(a1) * scale;
            if (gn > 2) si[2 * lds] = _mm512_reduce_add_ps(a2) * scale;
            if (gn > 3) si[3 * lds] = _mm512_reduce_add_ps(a3) * scale;
        }
    }
}

// values: blocks of up to 4 heads x 64 dims stay in 16 registers across the whole tile.
static void attn_values(const float *p, int64_t ldp, int G, const float *v, int ns, int hd, float *o) {
    if (hd % 64) {
        for (int g = 0; g < G; g++)
            for (int i = 0; i < ns; i++) axpy_f32(p[g * ldp + i], v + (size_t)i * hd, o + (size_t)g * hd, hd);
        return;
    }
    for (int g0 = 0; g0 < G; g0 += 4) {
        const int gn = G - g0 < 4 ? G - g0 : 4;
        for (int c0 = 0; c0 < hd; c0 += 64) {
            __m512 acc[4][4];   // (the unrolled loops keep these in registers)
            UNROLL
            for (int g = 0; g < 4; g++)
                UNROLL
                for (int c = 0; c < 4; c++)
                    acc[g][c] = g < gn ? _mm512_loadu_ps(o + (size_t)(g0 + g) * hd + c0 + 16 * c) : _mm512_setzero_ps();
            const float *pg = p + (int64_t)g0 * ldp;
            for (int i = 0; i < ns; i++) {
                const float *vr = v + (size_t)i * hd + c0;
                const __m512 v0 = _mm512_loadu_ps(vr), v1 = _mm512_loadu_ps(vr + 16),
                             v2 = _mm512_loadu_ps(vr + 32), v3 = _mm512_loadu_ps(vr + 48);
                UNROLL
                for (int g = 0; g < 4; g++) {
                    const __m512 pb = _mm512_set1_ps(g < gn ? pg[g * ldp + i] : 0.0f);
                    acc[g][0] = _mm512_fmadd_ps(pb, v0, acc[g][0]);
                    acc[g][1] = _mm512_fmadd_ps(pb, v1, acc[g][1]);
                    acc[g][2] = _mm512_fmadd_ps(pb, v2, acc[g][2]);
                    acc[g][3] = _mm512_fmadd_ps(pb, v3, acc[g][3]);
                }
            }
            UNROLL
            for (int g = 0; g < 4; g++)
                if (g < gn)
                    UNROLL
                    for (int c = 0; c < 4; c++) _mm512_storeu_ps(o + (size_t)(g0 + g) * hd + c0 + 16 * c, acc[g][c]);
        }
    }
}

// e^x for x <= 0 (softmax arguments): x = n ln2 + r, |r| <= ln2/2 (ln2 split in two so r is
// exact to ~1e-10), e^r by its Taylor series to r^7 (remainder < 6e-9 relative), times 2^n.
// Below -87.3 (e^x under the smallest normal float, -inf included) the result is 0.
INLINE __m512 exp_neg512(__m512 x) {
    const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
    __m512 e = _mm512_set1_ps(1.0f / 5040);
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f / 720));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f / 120));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f / 24));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f / 6));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(0.5f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_mov_ps((__mmask16)~tiny, _mm512_scalef_ps(e, n));
}

static float exp_shift(float *x, int64_t n, float mx) {
    if (mx == -INFINITY) { memset(x, 0, (size_t)n * sizeof *x); return 0.0f; }   // every slot masked
    const __m512 m = _mm512_set1_ps(mx);
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 e0 = exp_neg512(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
        const __m512 e1 = exp_neg512(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), m));
        _mm512_storeu_ps(x + i, e0);
        _mm512_storeu_ps(x + i + 16, e1);
        s0 = _mm512_add_ps(s0, e0);
        s1 = _mm512_add_ps(s1, e1);
    }
    for (; i < n; i += 16) {
        const __mmask16 t = n - i >= 16 ? (__mmask16)0xffff : tail_mask(n - i);
        const __m512 e = _mm512_maskz_mov_ps(t, exp_neg512(_mm512_sub_ps(_mm512_maskz_loadu_ps(t, x + i), m)));
        _mm512_mask_storeu_ps(x + i, t, e);
        s0 = _mm512_add_ps(s0, e);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static void softmax(float *x, int64_t n) {
    __m512 m = _mm512_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
    if (i < n) m = _mm512_mask_max_ps(m, tail_mask(n - i), m, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
    const float sum = exp_shift(x, n, _mm512_reduce_max_ps(m));
    const __m512 inv = _mm512_set1_ps(sum > 0 ? 1.0f / sum : 0.0f);
    for (i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), inv));
    if (i < n) _mm512_mask_storeu_ps(x + i, tail_mask(n - i), _mm512_mul_ps(_mm512_maskz_loadu_ps(tail_mask(n - i), x + i), inv));
}

// RoPE, 8 pairs per step. Interleaved pairs: x' = x*cos -/+ swap(x)*sin (fmaddsub); neox pairs
// (i, i + half): the (cos, sin) table is de-interleaved first.
static void rope_rows(const float *cs, int half, int neox, int n, float *rows, int64_t ld) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int r = 0; r < n; r++) {
        const float *c = cs + (size_t)r * half * 2;
        float *x = rows + (size_t)r * ld;
        int i = 0;
        if (!neox) {
            for (; i + 8 <= half; i += 8) {
                const __m512 xv = _mm512_loadu_ps(x + 2 * i), cv = _mm512_loadu_ps(c + 2 * i);
                const __m512 co = _mm512_moveldup_ps(cv), si = _mm512_movehdup_ps(cv);
                const __m512 sw = _mm512_permute_ps(xv, 0xB1);     // (b, a) per pair
                _mm512_storeu_ps(x + 2 * i, _mm512_fmaddsub_ps(xv, co, _mm512_mul_ps(sw, si)));
            }
        } else {
            for (; i + 16 <= half; i += 16) {
                const __m512 c0 = _mm512_loadu_ps(c + 2 * i), c1 = _mm512_loadu_ps(c + 2 * i + 16);
                const __m512 co = _mm512_permutex2var_ps(c0, even, c1), si = _mm512_permutex2var_ps(c0, odd, c1);
                const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + half);
                _mm512_storeu_ps(x + i, _mm512_fmsub_ps(a, co, _mm512_mul_ps(b, si)));
                _mm512_storeu_ps(x + i + half, _mm512_fmadd_ps(a, si, _mm512_mul_ps(b, co)));
            }
        }
        for (; i < half; i++) {   // the pairs left over (rope dims not a multiple of 16 or 32)
            int i0 = ROPE_PAIR_FIRST(i, half, neox), i1 = ROPE_PAIR_SECOND(i, half, neox);
            float a = x[i0], b = x[i1], co = c[2 * i], si = c[2 * i + 1];
            x[i0] = a * co - b * si;
            x[i1] = a * si + b * co;
        }
    }
}

const cpu_kernels cpu_kernels_avx512_table = {
    .name = "avx512",
    .matmul = {
        [WT_F32] = matmul_f32, [WT_F16] = matmul_f16, [WT_BF16] = matmul_bf16,
        [WT_Q8_0] = matmul_q8_0, [WT_Q4_0] = matmul_q4_0,
        DQ8_TYPES(DQ8_MATMUL) [WT_Q4_K] = matmul_q4_k_avx2, [WT_Q6_K] = matmul_q6_k_avx2,
    },
    .act_format = {
        [WT_F32] = ACT_F32, [WT_F16] = ACT_F32, [WT_BF16] = ACT_F32,
        [WT_Q8_0] = ACT_Q8_0, [WT_Q4_0] = ACT_Q8_0,
        DQ8_TYPES(DQ8_ACT) [WT_Q4_K] = ACT_Q8_K, [WT_Q6_K] = ACT_Q8_K,
    },
    .matmul_packed = { [WT_Q4_0] = matmul_q4_0_r16_avx512, [WT_Q8_0] = matmul_q8_0_r16_avx512,
                       [WT_Q4_1] = matmul_q4_1_r16_avx512, [WT_Q5_0] = matmul_q5_0_r16_avx512,
                       [WT_Q5_1] = matmul_q5_1_r16_avx512, [WT_IQ4_NL] = matmul_iq4_nl_r16_avx512,
                       [WT_Q4_K] = matmul_q4_k_r16_avx512, [WT_Q5_K] = matmul_q5_k_r16_avx512,
                       [WT_Q6_K] = matmul_q6_k_r16_avx512, [WT_IQ4_XS] = matmul_iq4_xs_r16_avx512,
                       [WT_Q2_K] = matmul_q2_k_r16_avx512, [WT_Q3_K] = matmul_q3_k_r16_avx512,
                       [WT_F16] = matmul_f16_r16_avx512, [WT_BF16] = matmul_bf16_r16_avx512 },
    .quantize_act_q8_0 = quantize_act_q8_0,
    .quantize_act_q8_k = cpu_quantize_act_q8_k_avx2,
    .dot_f32 = dot_f32,
    .axpy_f32 = axpy_f32,
    .dot_f16_f32 = dot_f16_f32,
    .axpy_f16_f32 = axpy_f16_f32,
    .attn_scores = attn_scores,
    .attn_values = attn_values,
    .exp_shift = exp_shift,
    .softmax = softmax,
    .rope_rows = rope_rows,
    .f16_to_f32 = cvt_f16_f32_avx512,
    .kq_tile = kq_tile_avx512,
    .f16_rows_t = f16_rows_t_avx512,
    .rope_t = rope_t_avx512,
    .attn_scores_t = attn_scores_t_avx512,
    .attn_values_q = attn_values_q_avx512,
    .attn_values_f16 = attn_values_f16_avx512,
};
