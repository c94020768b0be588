// AVX2 kernels (with FMA and F16C). This file is compiled with those instruction sets enabled,
// so nothing in it may run before cpu_kernels_avx2() has checked the processor and the OS
// (kernels.c); the table below is only data until then.
//
// Quantized weights (Q4_0, Q8_0) take Q8_0 activations: one 256-bit register is one 32-weight
// block; vpmaddubsw (unsigned x signed bytes, pairs summed to int16) then vpmaddwd (int16 pairs
// to int32) give the block's integer dot product, scaled by d_w * d_x in float.
//
// Every matmul is a tile of R weight rows x T tokens: each weight block is loaded and unpacked
// once per tile and reused for T tokens, each activation block reused for R rows.
#include "engine/cpu/kernels.h"

#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

enum {
    Q4_BYTES = 18, // block_q4_0: fp16 d, 16 bytes of nibbles
    Q8_BYTES = 34, // block_q8_0: fp16 d, 32 int8
    RMAX = 4,      // weight rows per tile (register arrays are sized for the largest tile)
    TMAX = 4,      // tokens per tile
    X_GROUP_BYTES = 384 * 1024, // activations of one token group, kept hot in L2
};

INLINE float ld_f16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return _cvtsh_ss(v);
}

// ---------------------------------------------------------------------------------------------
// Q4_0 weights x Q8_0 activations. The nibbles (0..15) are vpmaddubsw's unsigned operand; the
// format's -8 offset is subtracted as 8 * (x pair sums), computed per token and block and
// shared by the R rows of a tile.
// Unpacked register: [low nibbles = weights 0-15 | high nibbles = weights 16-31], the order
// of the activation block.
INLINE void q4_0_step(const uint8_t *const *wr, const uint8_t *const *xr, int64_t b,
                      __m256 acc[RMAX][TMAX], const int R, const int T, size_t pf) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), eight = _mm256_set1_epi8(8);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i wq[RMAX];
    __m256 wd[RMAX];
    UNROLL for (int r = 0; r < R; r++) {
        const uint8_t *blk = wr[r] + b * Q4_BYTES;
        if (pf) cpu_prefetch_ahead(blk, pf);
        __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2));
        __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
        wq[r] = _mm256_and_si256(both, m4);
        wd[r] = _mm256_set1_ps(ld_f16(blk));
    }
    UNROLL for (int t = 0; t < T; t++) {
        const uint8_t *xb = xr[t] + b * Q8_BYTES;
        __m256i xq = _mm256_loadu_si256((const __m256i *)(xb + 2));
        __m256i corr = _mm256_maddubs_epi16(eight, xq);
        const __m256 xd = _mm256_set1_ps(ld_f16(xb));
        UNROLL for (int r = 0; r < R; r++) {
            __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(wq[r], xq), corr);
            __m256 s = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
            acc[r][t] = _mm256_fmadd_ps(s, _mm256_mul_ps(wd[r], xd), acc[r][t]);
        }
    }
}

// Q8_0 weights x Q8_0 activations: the sign trick, |w| (unsigned) x (x with w's sign).
INLINE void q8_0_step(const uint8_t *const *wr, const uint8_t *const *xr, int64_t b,
                      __m256 acc[RMAX][TMAX], const int R, const int T, size_t pf) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i wq[RMAX], wa[RMAX];
    __m256 wd[RMAX];
    UNROLL for (int r = 0; r < R; r++) {
        const uint8_t *blk = wr[r] + b * Q8_BYTES;
        cpu_prefetch_ahead(blk, pf);
        wq[r] = _mm256_loadu_si256((const __m256i *)(blk + 2));
        wa[r] = _mm256_abs_epi8(wq[r]);
        wd[r] = _mm256_set1_ps(ld_f16(blk));
    }
    UNROLL for (int t = 0; t < T; t++) {
        const uint8_t *xb = xr[t] + b * Q8_BYTES;
        __m256i xq = _mm256_loadu_si256((const __m256i *)(xb + 2));
        const __m256 xd = _mm256_set1_ps(ld_f16(xb));
        UNROLL for (int r = 0; r < R; r++) {
            __m256i p = _mm256_maddubs_epi16(wa[r], _mm256_sign_epi8(xq, wq[r]));
            __m256 s = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
            acc[r][t] = _mm256_fmadd_ps(s, _mm256_mul_ps(wd[r], xd), acc[r][t]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Float weights (F32, F16, BF16) x F32 activations: 8 weights per step.

enum { FT_F32, FT_F16, FT_BF16 };

INLINE __m256 load_wf(const uint8_t *p, const int ft) {
    if (ft == FT_F32) return _mm256_loadu_ps((const float *)(const void *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (ft == FT_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Elements [i, i+8) of each row, or [i, i+n) with n < 8 (copied to zero-padded buffers first).
INLINE void f_step(const uint8_t *const *wr, const uint8_t *const *xr, int64_t i,
                   __m256 acc[RMAX][TMAX], const int R, const int T, const int ft, int n, size_t pf) {
    const size_t es = ft == FT_F32 ? 4 : 2;
    __m256 wv[RMAX];
    UNROLL for (int r = 0; r < R; r++) {
        if (pf) cpu_prefetch_ahead(wr[r] + i * es, pf);
        if (n == 8) {
            wv[r] = load_wf(wr[r] + i * es, ft);
        } else {
            uint8_t buf[32] = { 0 };
            memcpy(buf, wr[r] + i * es, (size_t)n * es);
            wv[r] = load_wf(buf, ft);
        }
    }
    UNROLL for (int t = 0; t < T; t++) {
        __m256 xv;
        if (n == 8) {
            xv = _mm256_loadu_ps((const float *)(const void *)xr[t] + i);
        } else {
            float buf[8] = { 0 };
            memcpy(buf, (const float *)(const void *)xr[t] + i, (size_t)n * 4);
            xv = _mm256_loadu_ps(buf);
        }
        UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
}

// ---------------------------------------------------------------------------------------------
// Tiles and the row/token loops around them.

enum { K_Q4_0, K_Q8_0, K_F32, K_F16, K_BF16 };

INLINE float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// One R x T tile over the whole of k. w, x point at the tile's first row/token; y at y[t0][r0].
INLINE void tile(const int kind, const uint8_t *w, size_t wrb, const uint8_t *x, size_t xrb,
                 int64_t k, float *y, int64_t ldy, const int R, const int T) {
    const uint8_t *wr[RMAX], *xr[TMAX];
    __m256 acc[RMAX][TMAX];
    UNROLL for (int r = 0; r < R; r++) wr[r] = w + (size_t)r * wrb;
    UNROLL for (int t = 0; t < T; t++) xr[t] = x + (size_t)t * xrb;
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    // One prefetch per row per 32-40 bytes: every other Q4_0 block (18 bytes), every Q8_0 block
    // (34), every other 8-float step (32 bytes) of F16/BF16, every step of F32.
    const size_t pf = (size_t)R * wrb;
    if (kind == K_Q4_0) {
        const int64_t nb = k / 32;
        int64_t b = 0;
        for (; b + 2 <= nb; b += 2) {
            q4_0_step(wr, xr, b, acc, R, T, pf);
            q4_0_step(wr, xr, b + 1, acc, R, T, 0);
        }
        if (b < nb) q4_0_step(wr, xr, b, acc, R, T, pf);
    } else if (kind == K_Q8_0) {
        for (int64_t b = 0; b < k / 32; b++) q8_0_step(wr, xr, b, acc, R, T, pf);
    } else {
        const int ft = kind == K_F32 ? FT_F32 : kind == K_F16 ? FT_F16 : FT_BF16;
        int64_t i = 0;
        if (ft == FT_F32) {
            for (; i + 8 <= k; i += 8) f_step(wr, xr, i, acc, R, T, ft, 8, pf);
        } else {
            for (; i + 16 <= k; i += 16) {
                f_step(wr, xr, i, acc, R, T, ft, 8, pf);
                f_step(wr, xr, i + 8, acc, R, T, ft, 8, 0);
            }
            if (i + 8 <= k) {
                f_step(wr, xr, i, acc, R, T, ft, 8, 0);
                i += 8;
            }
        }
        if (i < k) f_step(wr, xr, i, acc, R, T, ft, (int)(k - i), 0);
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[t * ldy + r] = hsum(acc[r][t]);
}

typedef void (*tile_fn)(const uint8_t *w, size_t wrb, const uint8_t *x, size_t xrb, int64_t k,
                        float *y, int64_t ldy);

#define TILE_FN(K, R, T)                                                                         \
    static void tile_##K##_##R##x##T(const uint8_t *w, size_t wrb, const uint8_t *x, size_t xrb, \
                                     int64_t k, float *y, int64_t ldy) {                         \
        tile(K, w, wrb, x, xrb, k, y, ldy, R, T);                                                \
    }
#define TILE_SET(K, R)                                                                           \
    TILE_FN(K, R, 1) TILE_FN(K, R, 2) TILE_FN(K, R, 3) TILE_FN(K, R, 4) TILE_FN(K, 1, 1)          \
    TILE_FN(K, 1, 2) TILE_FN(K, 1, 3) TILE_FN(K, 1, 4)
#define TILES(K, R, TM)                                                                          \
    { R, TM, { tile_##K##_##R##x1, tile_##K##_##R##x2, tile_##K##_##R##x3, tile_##K##_##R##x4 }, \
      { tile_##K##_1x1, tile_##K##_1x2, tile_##K##_1x3, tile_##K##_1x4 } }

// Per kind: R-row tiles [T-1] and one-row tiles [T-1], T = 1..tmax.
typedef struct {
    int rows, tmax;
    tile_fn full[TMAX], one[TMAX];
} tile_set;

TILE_SET(K_Q4_0, 4)
TILE_SET(K_Q8_0, 4)
TILE_SET(K_F32, 3)
TILE_SET(K_F16, 3)
TILE_SET(K_BF16, 3)
static const tile_set tiles_q4_0 = TILES(K_Q4_0, 4, 4);
static const tile_set tiles_q8_0 = TILES(K_Q8_0, 4, 4);
static const tile_set tiles_f32 = TILES(K_F32, 3, 4);
static const tile_set tiles_f16 = TILES(K_F16, 3, 4);
static const tile_set tiles_bf16 = TILES(K_BF16, 3, 4);

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
// Q8_K activation quantizer: the arithmetic of quantize_row_q8_k_ref, 8 lanes at a time. The
// scale comes from the first element of largest magnitude (its sign included): the largest
// magnitude first (NaN left out as the reference's `>` leaves it out), then the first element
// that has it. q = x * (-127 / max) rounded to nearest even (vcvtps2dq under the default
// rounding, as lrintf); |q| <= 127, so the saturating packs change nothing.
void cpu_quantize_act_q8_k_avx2(const float *x, block_q8_k *y, int64_t k) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < k / QK_K; b++, x += QK_K) {
        block_q8_k *o = &y[b];
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < QK_K; j += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + j), abs_mask), m);
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        memset(o, 0, sizeof *o);
        if (amax == 0.0f) continue;
        int first = 0;
        const __m256 am = _mm256_set1_ps(amax);
        for (int j = 0; j < QK_K; j += 8) {
            int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + j), abs_mask), am, _CMP_EQ_OQ));
            if (hit) { first = j + __builtin_ctz((unsigned)hit); break; }
        }
        const float iscale = -127.0f / x[first];
        const __m256 is = _mm256_set1_ps(iscale);
        for (int g = 0; g < QK_K / 32; g++) {
            __m256i q[4];
            for (int j = 0; j < 4; j++) q[j] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * g + 8 * j), is));
            // the sums of 16: lanes of q[0] + q[1], then of q[2] + q[3]
            for (int h = 0; h < 2; h++) {
                __m256i s = _mm256_add_epi32(q[2 * h], q[2 * h + 1]);
                __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
                s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
                s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
                o->bsums[2 * g + h] = (int16_t)_mm_cvtsi128_si32(s4);
            }
            __m256i p8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(void *)(o->qs + 32 * g), _mm256_permutevar8x32_epi32(p8, order));
        }
        o->d = 1.0f / iscale;
    }
}

// ---------------------------------------------------------------------------------------------
// Activation quantizer: same arithmetic as quantize_row_q8_0_ref (d = amax/127 in float,
// q = x * (1/d) rounded half away from zero), so the blocks come out identical.
static void quantize_act_q8_0(const float *x, block_q8_0 *y, int64_t k) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 sign_mask = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < k / 32; b++) {
        __m256 v[4];
        for (int j = 0; j < 4; j++) v[j] = _mm256_loadu_ps(x + b * 32 + j * 8);
        __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
                                 _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        memcpy(&y[b].d, &dh, 2);
        __m256i q[4];
        for (int j = 0; j < 4; j++) {
            __m256 p = _mm256_mul_ps(v[j], _mm256_set1_ps(id));
            // round half away from zero: truncate, then step away from zero when the (exact)
            // remainder is at least one half.
            __m256 tr = _mm256_round_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            __m256 rem = _mm256_and_ps(_mm256_sub_ps(p, tr), abs_mask);
            __m256 up = _mm256_cmp_ps(rem, half, _CMP_GE_OQ);
            __m256 step = _mm256_or_ps(_mm256_and_ps(p, sign_mask), one);
            q[j] = _mm256_cvttps_epi32(_mm256_add_ps(tr, _mm256_and_ps(up, step)));
        }
        // packs work within 128-bit lanes: dword j of p8 holds elements 4*(j/4)..+3 of q[j%4];
        // one cross-lane permute puts the dwords back in order.
        __m256i p16a = _mm256_packs_epi32(q[0], q[1]), p16b = _mm256_packs_epi32(q[2], q[3]);
        __m256i p8 = _mm256_packs_epi16(p16a, p16b);
        _mm256_storeu_si256((__m256i *)y[b].qs, _mm256_permutevar8x32_epi32(p8, order));
    }
}

// ---------------------------------------------------------------------------------------------
// Row helpers (any n).

static float dot_f32(const float *a, const float *b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(),
           s3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float s = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static void axpy_f32(float a, const float *x, float *y, int64_t n) {
    const __m256 av = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

INLINE __m256 load_f16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

static float dot_f16_f32(const uint16_t *a, const float *b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(),
           s3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(load_f16(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(load_f16(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(load_f16(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(load_f16(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(load_f16(a + i), _mm256_loadu_ps(b + i), s0);
    float s = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++) s += _cvtsh_ss(a[i]) * b[i];
    return s;
}

static void axpy_f16_f32(float a, const uint16_t *x, float *y, int64_t n) {
    const __m256 av = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, load_f16(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * _cvtsh_ss(x[i]);
}

static void f16_to_f32(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, load_f16(x + i));
    for (; i < n; i++) y[i] = _cvtsh_ss(x[i]);
}

static void attn_scores(const float *q, int G, const float *k, int ns, int hd, float scale, float *s, int64_t lds) {
    for (int g = 0; g < G; g++)
        for (int i = 0; i < ns; i++) s[g * lds + i] = dot_f32(q + (size_t)g * hd, k + (size_t)i * hd, hd) * scale;
}

static void attn_values(const float *p, int64_t ldp, int G, const float *v, int ns, int hd, float *o) {
    for (int g = 0; g < G; g++)
        for (int i = 0; i < ns; i++) axpy_f32(p[g * ldp + i], v + (size_t)i * hd, o + (size_t)g * hd, hd);
}

const cpu_kernels cpu_kernels_avx2_table = {
    .name = "avx2",
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
    .matmul_packed = { [WT_Q4_0] = matmul_q4_0_r16_avx2, [WT_Q8_0] = matmul_q8_0_r16_avx2,
                       [WT_Q4_1] = matmul_q4_1_r16_avx2, [WT_Q5_0] = matmul_q5_0_r16_avx2,
                       [WT_Q5_1] = matmul_q5_1_r16_avx2, [WT_IQ4_NL] = matmul_iq4_nl_r16_avx2,
                       [WT_Q2_K] = matmul_q2_k_r16_avx2, [WT_Q3_K] = matmul_q3_k_r16_avx2,
                       [WT_Q4_K] = matmul_q4_k_r16_avx2, [WT_Q5_K] = matmul_q5_k_r16_avx2,
                       [WT_Q6_K] = matmul_q6_k_r16_avx2, [WT_IQ4_XS] = matmul_iq4_xs_r16_avx2,
                       [WT_F16] = matmul_f16_r16_avx2, [WT_BF16] = matmul_bf16_r16_avx2 },
    .quantize_act_q8_0 = quantize_act_q8_0,
    .quantize_act_q8_k = cpu_quantize_act_q8_k_avx2,
    .dot_f32 = dot_f32,
    .axpy_f32 = axpy_f32,
    .dot_f16_f32 = dot_f16_f32,
    .axpy_f16_f32 = axpy_f16_f32,
    .attn_scores = attn_scores,
    .attn_values = attn_values,
    .exp_shift = exp_shift_ref,
    .softmax = softmax_ref,
    .rope_rows = rope_rows_ref,
    .f16_to_f32 = f16_to_f32,
    .kq_tile = kq_tile_avx2,
    .f16_rows_t = f16_rows_t_avx2,
    .rope_t = rope_t_avx2,
    .attn_scores_t = attn_scores_t_avx2,
    .attn_values_q = attn_values_q_avx2,
    .attn_values_f16 = attn_values_f16_avx2,
};
