// AVX-512 VNNI kernels over the row-interleaved layout (engine/cpu/kernels.h, cpu_pack_r16):
// the 32-weight types (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0) against Q8_0 activations, 16
// weight rows per register (the K-quants, IQ4_XS, F16 and BF16 further down; BF16 on vdpbf16ps
// where the processor has it).
//
// One 512-bit load holds 4 bytes of each of 16 rows; vpdpbusd against the matching 4
// activation bytes broadcast to every lane adds four products to each row's int32 lane, so a
// block of 32 weights of 16 rows is 8 dot-product instructions (the 4-bit types: 4 loads, each
// giving the low and the high nibbles), one conversion of the 16 fp16 row scales and one
// multiply-add into the 16 row sums — no horizontal reduction, and the weights stream from one
// place.
//
// vpdpbusd multiplies unsigned bytes (weights) by signed ones (activations), so each type's
// weights go in as unsigned codes u = q + offset: Q4_0 its nibbles (offset 8), Q5_0 its 5-bit
// codes (16), Q8_0 its int8 with the sign bit flipped (128), IQ4_NL its nibbles looked up
// (vpshufb) in the codebook plus 128 (1..241). The offset is taken back out by seeding each
// block's int32 sum with -offset * sum of the block's activation bytes, made once per token when
// the activations are prepared. Q4_1 and Q5_1 (w = d * q + m) have no offset: their codes are
// summed as they are, and each block adds m times the block's activation sum (d_x * Σ x_q, also
// made once per token).
//
// Prefill runs tiles of one row group x up to TM tokens: the group's weights (k/32 * 288 bytes
// for Q4_0: 18-72 KiB in the model shapes) stay in L1/L2 while the tokens sweep past them.
#include "engine/cpu/kernels.h"

#include "base/clock.h"
#include "engine/half.h"

#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

enum {
    R16 = 16,
    TM = 8,                       // tokens per tile
    X_GROUP_BYTES = 384 * 1024,   // prepared activations kept hot in L2 per token group
    // The weight stream is prefetched into L2 this many bytes ahead: with the hardware
    // prefetchers alone one thread's stream stays under the bandwidth two threads can draw
    // (docs/history/PERF.md has the distances tried).
    PF_AHEAD = 2048,
};

enum { K4_0, K4_1, K5_0, K5_1, KNL, K8_0, N_KINDS };   // Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0

// A kind's unit (engine/cpu/pack_r16.c): the header (d of both blocks, then m of both), then each
// block's payload (the codes, then Q5's line of fifth bits).
INLINE bool has_min(const int kind) { return kind == K4_1 || kind == K5_1; }
INLINE bool five_bit(const int kind) { return kind == K5_0 || kind == K5_1; }
INLINE size_t head_bytes(const int kind) { return has_min(kind) ? 128 : 64; }
INLINE size_t payload_bytes(const int kind) { return kind == K8_0 ? 512 : five_bit(kind) ? 320 : 256; }
INLINE size_t unit_bytes(const int kind) { return head_bytes(kind) + 2 * payload_bytes(kind); }
// The unsigned codes' offset (see the top of the file).
static int code_offset(const int kind) { return kind == K4_0 ? 8 : kind == K5_0 ? 16 : kind == KNL || kind == K8_0 ? 128 : 0; }

// Prepared activations of one token, for blocks [0, 2*np): the 32 activation bytes of each
// block as 8 int32, then each block's seed (-offset * sum of its bytes, int32), its scale d_x
// (float) and d_x times the sum of its bytes (float); a padding block is all zero.
static size_t prep_bytes_per_token(int64_t np) { return ((size_t)np * 2 * 44 + 63) / 64 * 64; }

static void prep_x(const int off, const uint8_t *x, size_t xrb, int64_t n_tok, int64_t nb, uint8_t *out,
                   size_t per_tok) {
    const int64_t nbp = (nb + 1) / 2 * 2;
    for (int64_t t = 0; t < n_tok; t++) {
        int32_t *xq = (int32_t *)(void *)(out + (size_t)t * per_tok), *seed = xq + nbp * 8;
        float *dx = (float *)(void *)(seed + nbp), *dxs = dx + nbp;
        const block_q8_0 *xb = (const block_q8_0 *)(const void *)(x + (size_t)t * xrb);
        for (int64_t b = 0; b < nb; b++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)xb[b].qs);
            _mm256_storeu_si256((__m256i *)(void *)(xq + b * 8), q);
            // sum of the 32 signed bytes: vpdpbusd of ones against them
            __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), q);
            __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
            const int sum = _mm_cvtsi128_si32(h);
            seed[b] = -off * sum;
            uint16_t d;
            memcpy(&d, &xb[b].d, 2);
            dx[b] = _cvtsh_ss(d);
            dxs[b] = dx[b] * (float)sum;
        }
        if (nb < nbp) {
            memset(xq + nb * 8, 0, 32);
            seed[nb] = 0;
            dx[nb] = dxs[nb] = 0.0f;
        }
    }
}

// Q5's fifth bits of nibble set j (chunk j/2's low nibbles for even j, high for odd) at bit 4 of
// every byte, from the block's line of fifth bits (bit j of each byte: engine/cpu/pack_r16.c).
INLINE __m512i fifth_bits(__m512i qh, const int j) {
    const __m512i sh = j <= 4 ? _mm512_slli_epi16(qh, (unsigned)(4 - j)) : _mm512_srli_epi16(qh, (unsigned)(j - 4));
    return _mm512_and_si512(sh, _mm512_set1_epi8(0x10));
}

// One row group (its packed units at gw, np pairs) x T tokens (prepared rows at xp, per_tok
// apart) -> y[t*ldy + lane] for the lanes in `store`.
INLINE void tile(const int kind, const uint8_t *gw, int64_t np, const uint8_t *xp, size_t per_tok,
                 float *y, int64_t ldy, __mmask16 store, const int T) {
    const size_t unit = unit_bytes(kind), pay = payload_bytes(kind);
    const int64_t nbp = 2 * np;
    const int32_t *xq[TM], *seed[TM];
    const float *dx[TM], *dxs[TM];
    __m512 acc[TM];
    UNROLL for (int t = 0; t < T; t++) {
        xq[t] = (const int32_t *)(const void *)(xp + (size_t)t * per_tok);
        seed[t] = xq[t] + nbp * 8;
        dx[t] = (const float *)(const void *)(seed[t] + nbp);
        dxs[t] = dx[t] + nbp;
        acc[t] = _mm512_setzero_ps();
    }
    int8_t lv[16];
    for (int i = 0; i < 16; i++) lv[i] = (int8_t)(iq4_levels[i] + 128);
    const __m512i levels = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)lv));
    const __m512i m4 = _mm512_set1_epi8(0x0f), flip = _mm512_set1_epi8((char)0x80);
    for (int64_t p = 0; p < np; p++) {
        const uint8_t *u = gw + (size_t)p * unit;
        for (size_t l = 0; l < unit; l += 64)
            _mm_prefetch((const char *)(uintptr_t)((uintptr_t)u + PF_AHEAD + l), _MM_HINT_T1);
        UNROLL for (int h = 0; h < 2; h++) {
            const int64_t b = 2 * p + h;
            const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(u + 32 * h)));
            const uint8_t *pl = u + head_bytes(kind) + (size_t)h * pay;
            __m512i s[TM];
            UNROLL for (int t = 0; t < T; t++) s[t] = code_offset(kind) ? _mm512_set1_epi32(seed[t][b]) : _mm512_setzero_si512();
            if (kind == K8_0) {
                UNROLL for (int c = 0; c < 8; c++) {
                    const __m512i v = _mm512_xor_si512(_mm512_loadu_si512((const void *)(pl + 64 * c)), flip);
                    UNROLL for (int t = 0; t < T; t++)
                        s[t] = _mm512_dpbusd_epi32(s[t], v, _mm512_set1_epi32(xq[t][b * 8 + c]));
                }
            } else {
                const __m512i qh = five_bit(kind) ? _mm512_loadu_si512((const void *)(pl + 256)) : _mm512_setzero_si512();
                UNROLL for (int c = 0; c < 4; c++) {
                    const __m512i v = _mm512_loadu_si512((const void *)(pl + 64 * c));
                    __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                    if (five_bit(kind)) {
                        lo = _mm512_or_si512(lo, fifth_bits(qh, 2 * c));
                        hi = _mm512_or_si512(hi, fifth_bits(qh, 2 * c + 1));
                    } else if (kind == KNL) {
                        lo = _mm512_shuffle_epi8(levels, lo);
                        hi = _mm512_shuffle_epi8(levels, hi);
                    }
                    UNROLL for (int t = 0; t < T; t++) {
                        s[t] = _mm512_dpbusd_epi32(s[t], lo, _mm512_set1_epi32(xq[t][b * 8 + c]));
                        s[t] = _mm512_dpbusd_epi32(s[t], hi, _mm512_set1_epi32(xq[t][b * 8 + 4 + c]));
                    }
                }
            }
            UNROLL for (int t = 0; t < T; t++)
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t]), _mm512_mul_ps(dw, _mm512_set1_ps(dx[t][b])), acc[t]);
            if (has_min(kind)) {
                const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(u + 64 + 32 * h)));
                UNROLL for (int t = 0; t < T; t++) acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(dxs[t][b]), acc[t]);
            }
        }
    }
    UNROLL for (int t = 0; t < T; t++) _mm512_mask_storeu_ps(y + (size_t)t * (size_t)ldy, store, acc[t]);
}

// One tile of a kind and a token count as a function: the weights of one row group (np units),
// the tokens' prepared activations (per_tok bytes apart), the group's 16 outputs of each token.
typedef void (*tile_fn)(const uint8_t *gw, int64_t np, const uint8_t *xp, size_t per_tok, float *y,
                        int64_t ldy, __mmask16 store);
#define TILE_FN(K, T)                                                                              \
    static void tile_##K##_##T(const uint8_t *gw, int64_t np, const uint8_t *xp, size_t per_tok,  \
                               float *y, int64_t ldy, __mmask16 store) {                           \
        tile(K, gw, np, xp, per_tok, y, ldy, store, T);                                            \
    }
#define TILE_FNS(K) TILE_FN(K, 1) TILE_FN(K, 2) TILE_FN(K, 3) TILE_FN(K, 4) TILE_FN(K, 5) \
    TILE_FN(K, 6) TILE_FN(K, 7) TILE_FN(K, 8)
#define TILE_ROW(K) [K] = { tile_##K##_1, tile_##K##_2, tile_##K##_3, tile_##K##_4, tile_##K##_5, tile_##K##_6, tile_##K##_7, tile_##K##_8 }
TILE_FNS(K4_0) TILE_FNS(K4_1) TILE_FNS(K5_0) TILE_FNS(K5_1) TILE_FNS(KNL) TILE_FNS(K8_0)
static const tile_fn tiles_of[N_KINDS][TM] = { TILE_ROW(K4_0), TILE_ROW(K4_1), TILE_ROW(K5_0),
                                               TILE_ROW(K5_1), TILE_ROW(KNL), TILE_ROW(K8_0) };

// The lanes of row group g that lie in rows [row0, row1).
INLINE __mmask16 lanes_in(int64_t g, int64_t row0, int64_t row1) { return (__mmask16)cpu_r16_rows_in(g, row0, row1); }

// Rows [row0, row1) of the packed matrix w: each token group's activations are prepared into
// per-thread scratch, then every row group of the range sweeps the group's tokens TM at a time.
static void matmul_r16(const int kind, const void *w, int64_t k, int64_t row0, int64_t row1,
                       const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    const int64_t nb = k / 32, np = (nb + 1) / 2;
    const size_t per_tok = prep_bytes_per_token(np), group_bytes = (size_t)np * unit_bytes(kind);
    int64_t group = (int64_t)(X_GROUP_BYTES / per_tok) / TM * TM;
    if (group < TM) group = TM;
    if (group > n_tok) group = n_tok;
    const tile_fn *tiles = tiles_of[kind];
    uint8_t *prep = cpu_kernels_scratch((size_t)group * per_tok);
    if (!prep) return;   // out of memory: the pass fails at its end (cpu_kernels_scratch_failed)
    for (int64_t t0 = 0; t0 < n_tok; t0 += group) {
        const int64_t ng = n_tok - t0 < group ? n_tok - t0 : group;
        prep_x(code_offset(kind), (const uint8_t *)x + (size_t)t0 * xrb, xrb, ng, nb, prep, per_tok);
        for (int64_t g = row0 / R16; g * R16 < row1; g++) {
            const __mmask16 store = lanes_in(g, row0, row1);
            const uint8_t *gw = (const uint8_t *)w + (size_t)g * group_bytes;
            for (int64_t t = 0; t < ng;) {
                const int T = ng - t >= TM ? TM : (int)(ng - t);
                tiles[T - 1](gw, np, prep + (size_t)t * per_tok, per_tok, y + (t0 + t) * ldy + g * R16, ldy, store);
                t += T;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Q4_K and Q6_K against Q8_K activations (block_q8_k: float d, 256 int8, sums of 16), one
// 256-weight super-block of 16 rows per unit, read straight from the activation rows.
//
// Q4_K unit: d[16], dmin[16] (fp16), scale[8][16], min[8][16] (u8, 6-bit), then the 128 bytes of
// nibbles of each row in 4-byte chunks. Per super-block:
//   dot = x.d * (d * Σ_g scale_g Σ_{i in g} q_i x_i  -  dmin * Σ_g min_g (x sums of group g))
// A load's low nibbles belong to group 2jp and its high ones to 2jp+1; the high ones are
// multiplied as they lie (16 q) and the sum shifted back, exact since every term has the 16.
// Q5_K unit: Q4_K's, then the fifth bits (qh, 32 bytes a row) chunked: the chunk of qh at the
// same position as a nibble chunk holds that chunk's fifth bits, bit 2jp for the low nibbles and
// 2jp+1 for the high ones; each is moved to bit 4 of its byte and or-ed onto the nibble, so the
// codes are 0..31 and the high ones are shifted down rather than multiplied as they lie (16 q
// would overflow a byte). The same sums as Q4_K's.
// Q2_K unit: d[16], dmin[16] (fp16), (scale | min << 4)[16][16] (u8), then the 2-bit codes (64
// bytes a row, chunked as the block has them: weight 128n + 32j + l at bits 2j of byte 32n + l).
// Per super-block, over 16 groups of 16:
//   dot = x.d * (d * Σ_s scale_s Σ_{i in s} q_i x_i  -  dmin * Σ_s min_s Σ_{i in s} x_i)
// Q3_K unit: d[16] (fp16), scale[16][16] (int8, ls - 32), then the 2-bit codes (64 bytes a row)
// and the high bits (hmask, 32 bytes a row), chunked as the block has them: weight 128n + 32j + l
// has its 2 bits at bits 2j of byte 32n + l and its high bit at bit 4n + j of hmask byte l. The
// code u = 2 bits + 4 * high bit (0..7) is the stored q + 4, so each group of 16's int32 sum
// starts at -4 times its activation sum. Per super-block:
//   dot = x.d * d * Σ_s scale_s Σ_{i in s} q_i x_i
// IQ4_XS unit: d[16] (fp16), scale[8][16] (int8, ls - 32), then the codebook indices in Q4_K's
// nibble order. vpshufb looks each index up in the codebook plus 128 (1..241, unsigned for
// vpdpbusd), and each group's int32 sum starts at -128 times its activation sum. Per super-block:
//   dot = x.d * d * Σ_g scale_g Σ_{i in g} level(q_i) x_i
// Q6_K unit: d[16] (fp16), scale[16][16] (int8), then planes X, Y, Z (64 bytes a row each,
// chunked; engine/cpu/pack_r16.c): byte l of half h carries the codes of weights 128h + 32p + l,
// p = 0, 1, 2 in its low 6 bits and two bits of p = 3's in its top two. Per super-block:
//   dot = x.d * d * Σ_s scale_s (Σ_{i in s} q_i x_i  -  32 Σ_{i in s} x_i), q = 6-bit code
// over 16 groups of 16; each group's int32 sum starts at -32 times its activation sum.

enum { TMK = 4, Q2K_UNIT = 1344, Q3K_UNIT = 1856, Q4K_UNIT = 2368, Q5K_UNIT = 2880, Q6K_UNIT = 3392, IQ4XS_UNIT = 2240 };

INLINE __m512i bcast_i32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
INLINE __m512i u8_lanes(const uint8_t *p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)); }
INLINE __m512i i8_lanes(const uint8_t *p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)); }
// A K-quant super-block unit is 2.3-3.3 KiB of work-heavy bytes: its stream is prefetched
// further ahead, a quarter of a unit at a time through the unit's work rather than in one burst
// (together +10% decode on the 1B Q4_K_M; docs/history/PERF.md).
enum { PF_K = 8192 };
// Quarter q of the unit PF_K bytes ahead.
INLINE void prefetch_unit(const uint8_t *u, size_t unit, int q) {
    const size_t l0 = (unit / 64 * (size_t)q / 4) * 64, l1 = (unit / 64 * (size_t)(q + 1) / 4) * 64;   // units are whole lines
    for (size_t l = l0; l < l1; l += 64)
        _mm_prefetch((const char *)(uintptr_t)((uintptr_t)u + PF_K + l), _MM_HINT_T1);
}

// The tokens' Q8_K rows and their float accumulators; at the end, the rows asked for.
#define TILE_BEGIN                                                               \
    const block_q8_k *xr[TMK];                                                  \
    __m512 acc[TMK];                                                            \
    UNROLL for (int t = 0; t < T; t++) {                                        \
        xr[t] = (const block_q8_k *)(const void *)(x + (size_t)t * xrb);        \
        acc[t] = _mm512_setzero_ps();                                           \
    }
#define TILE_END \
    UNROLL for (int t = 0; t < T; t++) _mm512_mask_storeu_ps(y + (size_t)t * (size_t)ldy, store, acc[t]);

// acc += isum * d * x.d, then - msum * dmin * x.d when dmin_at is not NULL (d, dmin: 16 fp16).
INLINE __m512 finish(__m512 acc, __m512i isum, __m512i msum, const uint8_t *d_at, const uint8_t *dmin_at, float xd) {
    const __m512 dx = _mm512_set1_ps(xd);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum),
                          _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)d_at)), dx), acc);
    if (dmin_at)
        acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum),
                               _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)dmin_at)), dx), acc);
    return acc;
}

// Q4_K and Q5_K (five): pairs of groups of 32 under 6-bit scales and mins.
INLINE void tile_q45_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y,
                       int64_t ldy, __mmask16 store, const int T, const bool five) {
    TILE_BEGIN
    const __m512i m4 = _mm512_set1_epi8(0x0f), m4h = _mm512_set1_epi8((char)0xf0), b4 = _mm512_set1_epi8(0x10);
    const size_t unit = five ? Q5K_UNIT : Q4K_UNIT;
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * unit, *sc = u + 64, *mn = u + 192, *qs = u + 320, *qh = u + 2368;
        __m512i isum[TMK];
        UNROLL for (int t = 0; t < T; t++) isum[t] = _mm512_setzero_si512();
        for (int jp = 0; jp < 4; jp++) {
            prefetch_unit(u, unit, jp);
            const __m128i shift = _mm_cvtsi32_si128(2 * jp);   // Q5_K: bits 2jp, 2jp+1 of each byte to bits 0, 1
            __m512i slo[TMK], shi[TMK];
            UNROLL for (int t = 0; t < T; t++) slo[t] = shi[t] = _mm512_setzero_si512();
            UNROLL for (int c = 0; c < 8; c++) {
                const __m512i v = _mm512_loadu_si512((const void *)(qs + (size_t)(8 * jp + c) * 64));
                __m512i lo = _mm512_and_si512(v, m4), hi;
                if (five) {
                    const __m512i h = _mm512_srl_epi16(_mm512_loadu_si512((const void *)(qh + (size_t)c * 64)), shift);
                    lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_slli_epi16(h, 4), b4));
                    hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), _mm512_and_si512(_mm512_slli_epi16(h, 3), b4));
                } else {
                    hi = _mm512_and_si512(v, m4h);   // 16 q: the sum is shifted back below
                }
                UNROLL for (int t = 0; t < T; t++) {
                    slo[t] = _mm512_dpbusd_epi32(slo[t], lo, bcast_i32(xr[t][sb].qs + 64 * jp + 4 * c));
                    shi[t] = _mm512_dpbusd_epi32(shi[t], hi, bcast_i32(xr[t][sb].qs + 64 * jp + 32 + 4 * c));
                }
            }
            const __m512i s0 = u8_lanes(sc + 2 * jp * 16), s1 = u8_lanes(sc + (2 * jp + 1) * 16);
            UNROLL for (int t = 0; t < T; t++)
                isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(slo[t], s0),
                                                                     _mm512_mullo_epi32(five ? shi[t] : _mm512_srai_epi32(shi[t], 4), s1)));
        }
        UNROLL for (int t = 0; t < T; t++) {
            const int16_t *bs = xr[t][sb].bsums;
            __m512i msum = _mm512_setzero_si512();
            UNROLL for (int j = 0; j < 8; j++)
                msum = _mm512_add_epi32(msum, _mm512_mullo_epi32(u8_lanes(mn + j * 16), _mm512_set1_epi32(bs[2 * j] + bs[2 * j + 1])));
            acc[t] = finish(acc[t], isum[t], msum, u, u + 32, xr[t][sb].d);
        }
    }
    TILE_END
}
INLINE void tile_q4_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      __mmask16 store, const int T) {
    tile_q45_k(gw, nsb, x, xrb, y, ldy, store, T, false);
}
INLINE void tile_q5_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      __mmask16 store, const int T) {
    tile_q45_k(gw, nsb, x, xrb, y, ldy, store, T, true);
}

// Q2_K and Q3_K (three): 2-bit codes, groups of 16; Q3_K's high bits add 4 (a masked byte add)
// under int8 scales, sums seeded with -4 times the activation sums; Q2_K's (scale, min) bytes.
INLINE void tile_q23_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y,
                       int64_t ldy, __mmask16 store, const int T, const bool three) {
    TILE_BEGIN
    const __m512i m3 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4), m15 = _mm512_set1_epi32(15);
    const size_t unit = three ? Q3K_UNIT : Q2K_UNIT;
    __m128i shift[4];                 // the 2-bit codes of j at bits 2j
    __m512i hbit[8];                  // Q3_K: the high bit of 4n + j
    for (int j = 0; j < 4; j++) shift[j] = _mm_cvtsi32_si128(2 * j);
    for (int b = 0; b < 8; b++) hbit[b] = _mm512_set1_epi8((char)(1 << b));
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * unit, *sc = u + (three ? 32 : 64);
        const uint8_t *qs = u + (three ? 288 : 320), *hm = u + 1312;
        __m512i isum[TMK];
        UNROLL for (int t = 0; t < T; t++) isum[t] = _mm512_setzero_si512();
        for (int n = 0; n < 2; n++) {
            prefetch_unit(u, unit, 2 * n);
            prefetch_unit(u, unit, 2 * n + 1);
            __m512i s[TMK][8];        // groups 8n + 2j + p
            UNROLL for (int t = 0; t < T; t++) UNROLL for (int g = 0; g < 8; g++)
                s[t][g] = three ? _mm512_set1_epi32(-4 * xr[t][sb].bsums[8 * n + g]) : _mm512_setzero_si512();
            UNROLL for (int c = 0; c < 8; c++) {
                const __m512i q = _mm512_loadu_si512((const void *)(qs + (size_t)(8 * n + c) * 64));
                const __m512i h = three ? _mm512_loadu_si512((const void *)(hm + (size_t)c * 64)) : q;
                UNROLL for (int j = 0; j < 4; j++) {
                    __m512i code = _mm512_and_si512(_mm512_srl_epi16(q, shift[j]), m3);
                    if (three) code = _mm512_mask_add_epi8(code, _mm512_test_epi8_mask(h, hbit[4 * n + j]), code, four);
                    UNROLL for (int t = 0; t < T; t++)
                        s[t][2 * j + c / 4] = _mm512_dpbusd_epi32(s[t][2 * j + c / 4], code,
                                                                  bcast_i32(xr[t][sb].qs + 128 * n + 32 * j + 4 * c));
                }
            }
            UNROLL for (int g = 0; g < 8; g++) {
                const uint8_t *at = sc + (size_t)(8 * n + g) * 16;
                const __m512i scv = three ? i8_lanes(at) : _mm512_and_si512(u8_lanes(at), m15);
                UNROLL for (int t = 0; t < T; t++) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s[t][g], scv));
            }
        }
        __m512i mins[16];
        if (!three) UNROLL for (int g = 0; g < 16; g++) mins[g] = _mm512_srli_epi32(u8_lanes(sc + g * 16), 4);
        UNROLL for (int t = 0; t < T; t++) {
            __m512i msum = _mm512_setzero_si512();
            if (!three) UNROLL for (int g = 0; g < 16; g++)
                msum = _mm512_add_epi32(msum, _mm512_mullo_epi32(mins[g], _mm512_set1_epi32(xr[t][sb].bsums[g])));
            acc[t] = finish(acc[t], isum[t], msum, u, three ? NULL : u + 32, xr[t][sb].d);
        }
    }
    TILE_END
}
INLINE void tile_q2_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      __mmask16 store, const int T) {
    tile_q23_k(gw, nsb, x, xrb, y, ldy, store, T, false);
}
INLINE void tile_q3_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                      __mmask16 store, const int T) {
    tile_q23_k(gw, nsb, x, xrb, y, ldy, store, T, true);
}

INLINE void tile_iq4_xs(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y,
                        int64_t ldy, __mmask16 store, const int T) {
    TILE_BEGIN
    int8_t lv[16];
    for (int i = 0; i < 16; i++) lv[i] = (int8_t)(iq4_levels[i] + 128);
    const __m512i levels = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)lv));
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * IQ4XS_UNIT, *sc = u + 32, *qs = u + 160;
        __m512i isum[TMK];
        UNROLL for (int t = 0; t < T; t++) isum[t] = _mm512_setzero_si512();
        for (int jp = 0; jp < 4; jp++) {
            prefetch_unit(u, IQ4XS_UNIT, jp);
            __m512i slo[TMK], shi[TMK];
            UNROLL for (int t = 0; t < T; t++) {
                const int16_t *bs = xr[t][sb].bsums + 4 * jp;
                slo[t] = _mm512_set1_epi32(-128 * (bs[0] + bs[1]));
                shi[t] = _mm512_set1_epi32(-128 * (bs[2] + bs[3]));
            }
            UNROLL for (int c = 0; c < 8; c++) {
                const __m512i v = _mm512_loadu_si512((const void *)(qs + (size_t)(8 * jp + c) * 64));
                const __m512i lo = _mm512_shuffle_epi8(levels, _mm512_and_si512(v, m4));
                const __m512i hi = _mm512_shuffle_epi8(levels, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
                UNROLL for (int t = 0; t < T; t++) {
                    slo[t] = _mm512_dpbusd_epi32(slo[t], lo, bcast_i32(xr[t][sb].qs + 64 * jp + 4 * c));
                    shi[t] = _mm512_dpbusd_epi32(shi[t], hi, bcast_i32(xr[t][sb].qs + 64 * jp + 32 + 4 * c));
                }
            }
            const __m512i s0 = i8_lanes(sc + 2 * jp * 16), s1 = i8_lanes(sc + (2 * jp + 1) * 16);
            UNROLL for (int t = 0; t < T; t++)
                isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(slo[t], s0),
                                                                     _mm512_mullo_epi32(shi[t], s1)));
        }
        UNROLL for (int t = 0; t < T; t++) acc[t] = finish(acc[t], isum[t], isum[t], u, NULL, xr[t][sb].d);
    }
    TILE_END
}

INLINE void tile_q6_k(const uint8_t *gw, int64_t nsb, const uint8_t *x, size_t xrb, float *y,
                      int64_t ldy, __mmask16 store, const int T) {
    TILE_BEGIN
    const __m512i m6 = _mm512_set1_epi8(0x3f), m2 = _mm512_set1_epi8(0x03), m4 = _mm512_set1_epi8(0x0f);
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *u = gw + (size_t)sb * Q6K_UNIT, *sc = u + 32, *px = u + 288;
        __m512i isum[TMK];
        UNROLL for (int t = 0; t < T; t++) isum[t] = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++)
            for (int lh = 0; lh < 2; lh++) {   // l < 16, l >= 16: the two groups of 16 of a quarter
                prefetch_unit(u, Q6K_UNIT, 2 * h + lh);
                __m512i s[TMK][4];
                UNROLL for (int t = 0; t < T; t++)
                    UNROLL for (int p = 0; p < 4; p++) s[t][p] = _mm512_set1_epi32(-32 * xr[t][sb].bsums[8 * h + 2 * p + lh]);
                UNROLL for (int cc = 0; cc < 4; cc++) {
                    const size_t c = (size_t)(8 * h + 4 * lh + cc) * 64;
                    const __m512i X = _mm512_loadu_si512((const void *)(px + c));
                    const __m512i Y = _mm512_loadu_si512((const void *)(px + 1024 + c));
                    const __m512i Z = _mm512_loadu_si512((const void *)(px + 2048 + c));
                    // q3: bits 0-1 from X's top two, 2-3 from Y's, 4-5 from Z's (ternlog 0xCA:
                    // the second operand where the mask, the first, is set, else the third)
                    const __m512i lo = _mm512_ternarylogic_epi32(m2, _mm512_srli_epi16(X, 6), _mm512_srli_epi16(Y, 4), 0xCA);
                    const __m512i q[4] = {
                        _mm512_and_si512(X, m6), _mm512_and_si512(Y, m6), _mm512_and_si512(Z, m6),
                        _mm512_and_si512(_mm512_ternarylogic_epi32(m4, lo, _mm512_srli_epi16(Z, 2), 0xCA), m6),
                    };
                    UNROLL for (int t = 0; t < T; t++) UNROLL for (int p = 0; p < 4; p++)
                        s[t][p] = _mm512_dpbusd_epi32(s[t][p], q[p], bcast_i32(xr[t][sb].qs + 128 * h + 32 * p + 4 * (4 * lh + cc)));
                }
                UNROLL for (int p = 0; p < 4; p++) {
                    const __m512i scv = i8_lanes(sc + (size_t)(8 * h + 2 * p + lh) * 16);
                    UNROLL for (int t = 0; t < T; t++) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s[t][p], scv));
                }
            }
        UNROLL for (int t = 0; t < T; t++) acc[t] = finish(acc[t], isum[t], isum[t], u, NULL, xr[t][sb].d);
    }
    TILE_END
}

// tile_K_T for T = 1..TMK as cpu_r16_tile_fn, and their table (the sweep: cpu_r16_sweep;
// a group's weights, 37-53 KiB per 2048 of k, stay in L2 between the tiles).
#define KTILE_FN(K, T)                                                                                  \
    static void tile_##K##_##T(const uint8_t *gw, int64_t n, const uint8_t *x, size_t xrb, float *y,   \
                               int64_t ldy, unsigned store) {                                           \
        tile_##K(gw, n, x, xrb, y, ldy, (__mmask16)store, T);                                           \
    }
#define TILE_FNS_K(K) KTILE_FN(K, 1) KTILE_FN(K, 2) KTILE_FN(K, 3) KTILE_FN(K, 4) \
    static const cpu_r16_tile_fn tiles_##K[TMK] = { tile_##K##_1, tile_##K##_2, tile_##K##_3, tile_##K##_4 };
TILE_FNS_K(q2_k) TILE_FNS_K(q3_k) TILE_FNS_K(q4_k) TILE_FNS_K(q5_k) TILE_FNS_K(q6_k) TILE_FNS_K(iq4_xs)

#define MATMUL_KQUANT(K, UNIT)                                                                                \
    void matmul_##K##_r16_avx512(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x, \
                                 size_t xrb, int64_t n_tok, float *y, int64_t ldy) {                            \
        (void)wrb;                                                                                             \
        cpu_r16_sweep(tiles_##K, TMK, (size_t)(k / 256) * UNIT, k / 256, w, row0, row1, x, xrb, n_tok, y, ldy); \
    }
MATMUL_KQUANT(q2_k, Q2K_UNIT) MATMUL_KQUANT(q3_k, Q3K_UNIT) MATMUL_KQUANT(q4_k, Q4K_UNIT)
MATMUL_KQUANT(q5_k, Q5K_UNIT) MATMUL_KQUANT(q6_k, Q6K_UNIT) MATMUL_KQUANT(iq4_xs, IQ4XS_UNIT)

// matmul_K_r16_avx512 for the 32-weight types.
#define MATMUL_LEGACY(K, KIND)                                                                                 \
    void matmul_##K##_r16_avx512(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x, \
                                 size_t xrb, int64_t n_tok, float *y, int64_t ldy) {                            \
        (void)wrb;                                                                                             \
        matmul_r16(KIND, w, k, row0, row1, x, xrb, n_tok, y, ldy);                                             \
    }
MATMUL_LEGACY(q4_0, K4_0) MATMUL_LEGACY(q4_1, K4_1) MATMUL_LEGACY(q5_0, K5_0) MATMUL_LEGACY(q5_1, K5_1)
MATMUL_LEGACY(iq4_nl, KNL) MATMUL_LEGACY(q8_0, K8_0)

// ---------------------------------------------------------------------------------------------
// F16 and BF16 weights against float activations (ACT_F32), in units of 16 rows x 32 weights
// (engine/cpu/kernels.h): line p holds weights 2p and 2p + 1 of the 16 rows. Each widens to 16
// floats, one per row (F16: vcvtph2ps; BF16: a shift or a mask, bf16 being a float's top half),
// and each token's activation broadcast to every lane adds to the 16 row sums with one FMA: no
// horizontal sums, and one widening serves every token of the tile (the row kernel widens each
// weight for at most 4). Each (row, token) sum runs along k in order, one FMA at a time, whatever
// the tile's shape: a token gets the same bits however many share its pass.
// The single weight stream is prefetched 8 KiB ahead (2 KiB, Q4_0's distance, left the 1B F16
// file's decode 9% under the row kernel's, whose tile ahead is several rows on). BF16 runs here
// on processors without AVX-512 BF16 (with it, on vdpbf16ps below).
enum { F16_UNIT = 16 * 64, PF_F16 = 8192 };

// A line's two weights of the 16 rows as floats: F16 (weight 2p in the first half, 2p + 1 in the
// second) widened by vcvtph2ps; BF16 in its own unit (engine/cpu/kernels.h: each row's pair side
// by side in a 32-bit lane) by moving the low half up and masking the high one in place.
INLINE void widen_line(const uint8_t *line, const bool bf, __m512 *w0, __m512 *w1) {
    if (bf) {
        const __m512i v = _mm512_loadu_si512((const void *)line);
        *w0 = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        *w1 = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
    } else {
        *w0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)line));
        *w1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(line + 32)));
    }
}

INLINE void f16_step(const bool bf, const uint8_t *line, size_t gs, const float *const *xt, int64_t i, bool odd_too,
                     __m512 acc[2][TM], const int G, const int T) {
    __m512 w0[2], w1[2];
    UNROLL for (int g = 0; g < G; g++) {
        _mm_prefetch((const char *)(uintptr_t)((uintptr_t)line + g * gs + PF_F16), _MM_HINT_T1);
        widen_line(line + g * gs, bf, &w0[g], &w1[g]);
    }
    UNROLL for (int t = 0; t < T; t++) {
        const __m512 x0 = _mm512_set1_ps(xt[t][i]);
        UNROLL for (int g = 0; g < G; g++) acc[g][t] = _mm512_fmadd_ps(w0[g], x0, acc[g][t]);
        if (odd_too) {
            const __m512 x1 = _mm512_set1_ps(xt[t][i + 1]);
            UNROLL for (int g = 0; g < G; g++) acc[g][t] = _mm512_fmadd_ps(w1[g], x1, acc[g][t]);
        }
    }
}

// G row groups (1 or 2, gs bytes apart) x T tokens (float rows at x, xrb bytes apart).
INLINE void tile_f16(const bool bf, const uint8_t *gw, size_t gs, int64_t k, const uint8_t *x, size_t xrb, float *y,
                     int64_t ldy, const __mmask16 *store, const int G, const int T) {
    __m512 acc[2][TM];
    const float *xt[TM];
    UNROLL for (int t = 0; t < T; t++) xt[t] = (const float *)(const void *)(x + (size_t)t * xrb);
    UNROLL for (int g = 0; g < G; g++) UNROLL for (int t = 0; t < T; t++) acc[g][t] = _mm512_setzero_ps();
    const int64_t nfull = k / 32;
    for (int64_t u = 0; u < nfull; u++)
        UNROLL for (int p = 0; p < 16; p++)
            f16_step(bf, gw + (size_t)u * F16_UNIT + 64 * p, gs, xt, 32 * u + 2 * p, true, acc, G, T);
    for (int64_t i = 32 * nfull; i < k; i += 2)   // the row's last, partial unit
        f16_step(bf, gw + (size_t)nfull * F16_UNIT + 64 * ((i % 32) / 2), gs, xt, i, i + 1 < k, acc, G, T);
    UNROLL for (int g = 0; g < G; g++) UNROLL for (int t = 0; t < T; t++)
        _mm512_mask_storeu_ps(y + (size_t)t * (size_t)ldy + g * R16, store[g], acc[g][t]);
}

typedef void (*f16_tile_fn)(const uint8_t *gw, size_t gs, int64_t k, const uint8_t *x, size_t xrb, float *y,
                            int64_t ldy, const __mmask16 *store);
#define F16_TILE_FN(K, BF, G, T)                                                                              \
    static void tile_##K##_##G##_##T(const uint8_t *gw, size_t gs, int64_t k, const uint8_t *x, size_t xrb,   \
                                     float *y, int64_t ldy, const __mmask16 *store) {                         \
        tile_f16(BF, gw, gs, k, x, xrb, y, ldy, store, G, T);                                                 \
    }
#define F16_TILE_FNS(K, BF, G) F16_TILE_FN(K, BF, G, 1) F16_TILE_FN(K, BF, G, 2) F16_TILE_FN(K, BF, G, 3) \
    F16_TILE_FN(K, BF, G, 4) F16_TILE_FN(K, BF, G, 5) F16_TILE_FN(K, BF, G, 6) F16_TILE_FN(K, BF, G, 7)  \
    F16_TILE_FN(K, BF, G, 8)
#define F16_TILE_ROW(K, G) { tile_##K##_##G##_1, tile_##K##_##G##_2, tile_##K##_##G##_3, tile_##K##_##G##_4, \
                             tile_##K##_##G##_5, tile_##K##_##G##_6, tile_##K##_##G##_7, tile_##K##_##G##_8 }
F16_TILE_FNS(wide_f16, false, 1) F16_TILE_FNS(wide_f16, false, 2) F16_TILE_FNS(wide_bf16, true, 1)
F16_TILE_FNS(wide_bf16, true, 2)
static const f16_tile_fn f16_tiles[2][2][TM] = { { F16_TILE_ROW(wide_f16, 1), F16_TILE_ROW(wide_f16, 2) },
                                                 { F16_TILE_ROW(wide_bf16, 1), F16_TILE_ROW(wide_bf16, 2) } };

// Rows [row0, row1): prefill takes two row groups at a time while both hold rows of the range,
// each pair sweeping the tokens TM at a time (the pair's weights stay in L2 between tiles, and a
// broadcast activation feeds two FMAs); decode (up to 3 tokens) one group, one weight stream
// (two streams decoded the 1B F16 file 15% slower).
static void matmul_wide_r16(const bool bf, const void *w, int64_t k, int64_t row0, int64_t row1, const void *x,
                            size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    const size_t gs = (size_t)((k + 31) / 32) * F16_UNIT;
    for (int64_t g = row0 / R16; g * R16 < row1;) {
        const int G = n_tok > 3 && (g + 1) * R16 < row1 ? 2 : 1;
        const __mmask16 store[2] = { lanes_in(g, row0, row1), G == 2 ? lanes_in(g + 1, row0, row1) : 0 };
        const uint8_t *gw = (const uint8_t *)w + (size_t)g * gs;
        for (int64_t t = 0; t < n_tok;) {
            const int T = n_tok - t >= TM ? TM : (int)(n_tok - t);
            f16_tiles[bf][G - 1][T - 1](gw, gs, k, (const uint8_t *)x + (size_t)t * xrb, xrb, y + t * ldy + g * R16, ldy,
                                        store);
            t += T;
        }
        g += G;
    }
}

void matmul_f16_r16_avx512(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x,
                           size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    (void)wrb;
    matmul_wide_r16(false, w, k, row0, row1, x, xrb, n_tok, y, ldy);
}
void matmul_bf16_r16_avx512(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x,
                            size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    (void)wrb;
    matmul_wide_r16(true, w, k, row0, row1, x, xrb, n_tok, y, ldy);
}

// ---------------------------------------------------------------------------------------------
// BF16 weights on the AVX-512 BF16 dot product (vdpbf16ps), against activations rounded to bf16
// once per token (ACT_BF16). These functions are compiled for the extension by their target
// attribute; cpu_kernels_avx512() puts them in the table it returns only where the processor has
// it (cpu_kernels_avx512_add_bf16).
//
// vdpbf16ps adds to each float lane the products of the lane's two bf16 pairs: one instruction
// does 32 multiply-adds where the float path converts the weights and runs two FMAs over f32
// activations. The activations' rounding to bf16 (relative error at most 2^-8 each) is the
// tolerance this table states for BF16 (tests/op_checks.h).
//
// Packed: a unit is 16 rows x 32 weights, 16 registers each holding one pair of weights of every
// row; the activation pair is broadcast, and there is no horizontal sum. Tiles are two row groups
// x up to TM tokens (one group where a range ends), the groups' weights (64 KiB each per 2048 of
// k) staying in L2 while the tokens sweep past them. The row kernel (weights left as they are,
// when they could not be packed) sums one row and token at a time.
#define BF16_TARGET __attribute__((target("avx512bf16")))
enum { BF16_UNIT = 16 * 64 };   // bytes of a packed unit: 16 rows x 32 weights

// One row of weights (k bf16 at w) · one token x (ACT_BF16: k bf16, zero-padded to a multiple of 32).
BF16_TARGET
static float dot_row(const uint16_t *w, const uint16_t *x, int64_t k) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= k; i += 64) {
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512((const void *)(w + i)),
                              (__m512bh)_mm512_loadu_si512((const void *)(x + i)));
        a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_loadu_si512((const void *)(w + i + 32)),
                              (__m512bh)_mm512_loadu_si512((const void *)(x + i + 32)));
    }
    for (; i < k; i += 32) {   // the last 1-63 weights; masked so the row's end is not passed
        const __mmask32 m = k - i >= 32 ? 0xffffffffu : (__mmask32)((1u << (k - i)) - 1);
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_maskz_loadu_epi16(m, w + i),
                              (__m512bh)_mm512_maskz_loadu_epi16(m, x + i));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

BF16_TARGET
static void matmul_bf16_dp(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1,
                           const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    for (int64_t r = row0; r < row1; r++) {
        const uint16_t *wr = (const uint16_t *)(const void *)((const uint8_t *)w + (size_t)r * wrb);
        for (int64_t t = 0; t < n_tok; t++)
            y[t * ldy + r] = dot_row(wr, (const uint16_t *)(const void *)((const uint8_t *)x + (size_t)t * xrb), k);
    }
}

// G row groups (1 or 2, gs bytes apart) x T tokens: each activation pair broadcast feeds G
// dot products, and 2 x 8 accumulators keep both vdpbf16ps pipes busy in prefill.
INLINE BF16_TARGET void tile_bf16(const uint8_t *gw, size_t gs, int64_t nu, const uint8_t *x, size_t xrb,
                                  float *y, int64_t ldy, const __mmask16 *store, const int G, const int T) {
    __m512 acc[2][TM];
    UNROLL for (int g = 0; g < G; g++) UNROLL for (int t = 0; t < T; t++) acc[g][t] = _mm512_setzero_ps();
    for (int64_t u = 0; u < nu; u++) {
        const uint8_t *pu = gw + (size_t)u * BF16_UNIT;
        const uint8_t *xu = x + (size_t)u * 64;   // the unit's 32 activations of token 0
        UNROLL for (int p = 0; p < 16; p++) {
            __m512bh wv[2];
            UNROLL for (int g = 0; g < G; g++) {
                _mm_prefetch((const char *)(uintptr_t)((uintptr_t)pu + g * gs + PF_AHEAD + 64 * p), _MM_HINT_T1);
                wv[g] = (__m512bh)_mm512_loadu_si512((const void *)(pu + g * gs + 64 * p));
            }
            UNROLL for (int t = 0; t < T; t++) {
                int32_t pair;
                __builtin_memcpy(&pair, xu + (size_t)t * xrb + 4 * p, 4);
                const __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
                UNROLL for (int g = 0; g < G; g++) acc[g][t] = _mm512_dpbf16_ps(acc[g][t], wv[g], xv);
            }
        }
    }
    UNROLL for (int g = 0; g < G; g++) UNROLL for (int t = 0; t < T; t++)
        _mm512_mask_storeu_ps(y + (size_t)t * (size_t)ldy + g * R16, store[g], acc[g][t]);
}

typedef void (*bf16_tile_fn)(const uint8_t *gw, size_t gs, int64_t nu, const uint8_t *x, size_t xrb,
                             float *y, int64_t ldy, const __mmask16 *store);
#define BF16_TILE_FN(G, T)                                                                         \
    static BF16_TARGET void tile_bf16_##G##_##T(const uint8_t *gw, size_t gs, int64_t nu,         \
                                                const uint8_t *x, size_t xrb, float *y,            \
                                                int64_t ldy, const __mmask16 *store) {             \
        tile_bf16(gw, gs, nu, x, xrb, y, ldy, store, G, T);                                        \
    }
#define BF16_TILE_FNS(G) BF16_TILE_FN(G, 1) BF16_TILE_FN(G, 2) BF16_TILE_FN(G, 3) BF16_TILE_FN(G, 4) \
    BF16_TILE_FN(G, 5) BF16_TILE_FN(G, 6) BF16_TILE_FN(G, 7) BF16_TILE_FN(G, 8)
BF16_TILE_FNS(1)
BF16_TILE_FNS(2)
static const bf16_tile_fn bf16_tiles[2][TM] = {
    { tile_bf16_1_1, tile_bf16_1_2, tile_bf16_1_3, tile_bf16_1_4, tile_bf16_1_5, tile_bf16_1_6, tile_bf16_1_7, tile_bf16_1_8 },
    { tile_bf16_2_1, tile_bf16_2_2, tile_bf16_2_3, tile_bf16_2_4, tile_bf16_2_5, tile_bf16_2_6, tile_bf16_2_7, tile_bf16_2_8 },
};

static void matmul_bf16_r16(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1,
                            const void *x, size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    (void)wrb;
    const int64_t nu = (k + 31) / 32;
    const size_t gs = (size_t)nu * BF16_UNIT;
    for (int64_t g = row0 / R16; g * R16 < row1;) {
        const int G = (g + 1) * R16 < row1 ? 2 : 1;   // two groups while both hold rows of the range
        const __mmask16 store[2] = { lanes_in(g, row0, row1), G == 2 ? lanes_in(g + 1, row0, row1) : 0 };
        const uint8_t *gw = (const uint8_t *)w + (size_t)g * gs;
        for (int64_t t = 0; t < n_tok;) {
            const int T = n_tok - t >= TM ? TM : (int)(n_tok - t);
            bf16_tiles[G - 1][T - 1](gw, gs, nu, (const uint8_t *)x + (size_t)t * xrb, xrb, y + t * ldy + g * R16,
                                     ldy, store);
            t += T;
        }
        g += G;
    }
}

// Whether the vdpbf16ps kernels multiply BF16 faster than the FMA ones on this processor, asked
// of the processor itself: the two packed kernels take turns on one in-cache matrix (32 rows x
// 1024, 8 tokens; about 0.5 M multiply-adds, a few microseconds each), eight turns each, and the
// best times are compared. vdpbf16ps does two multiply-adds a lane where an FMA does one, but
// processors issue it at different rates: on the Intel Xeon this project measures on it runs at
// 122 GFLOP/s against 212 for the FMA kernels (docs/PERF.md), so it is taken only when clearly
// faster (by BF16_DOT_MARGIN): a processor near the line keeps the FMA kernels, whose float
// activations are also the more exact.
#define BF16_DOT_MARGIN 1.2
BF16_TARGET bool cpu_bf16_dot_pays(void) {
    enum { ROWS = 32, K = 1024, TOK = 8, CALLS = 16, TURNS = 8 };
    const size_t w_bytes = (size_t)(ROWS / R16) * (K / 32) * BF16_UNIT;
    uint16_t *w = aligned_alloc(64, w_bytes);
    uint16_t *xb = aligned_alloc(64, (size_t)TOK * K * sizeof(uint16_t));
    float *xf = aligned_alloc(64, (size_t)TOK * K * sizeof(float)), *y = aligned_alloc(64, (size_t)TOK * ROWS * sizeof(float));
    bool pays = false;
    if (w && xb && xf && y) {
        for (size_t i = 0; i < w_bytes / 2; i++) w[i] = (uint16_t)(0x3c00 + (i * 37) % 1024);   // bf16 in [2^-7, 2^-6)
        for (size_t i = 0; i < (size_t)TOK * K; i++) {
            xf[i] = (float)((i * 13) % 64) / 64.0f - 0.5f;
            xb[i] = f32_to_bf16(xf[i]);
        }
        double best_dp = 1e30, best_fma = 1e30;
        for (int turn = 0; turn < TURNS; turn++) {
            double t0 = now_sec();
            for (int c = 0; c < CALLS; c++) matmul_bf16_r16(w, 0, K, 0, ROWS, xb, K * sizeof(uint16_t), TOK, y, ROWS);
            double t1 = now_sec();
            for (int c = 0; c < CALLS; c++) matmul_bf16_r16_avx512(w, 0, K, 0, ROWS, xf, K * sizeof(float), TOK, y, ROWS);
            double t2 = now_sec();
            if (t1 - t0 < best_dp) best_dp = t1 - t0;
            if (t2 - t1 < best_fma) best_fma = t2 - t1;
        }
        pays = best_dp * BF16_DOT_MARGIN < best_fma;
    }
    free(w);
    free(xb);
    free(xf);
    free(y);
    return pays;
}

void cpu_kernels_avx512_add_bf16(cpu_kernels *table) {
    table->matmul[WT_BF16] = matmul_bf16_dp;
    table->matmul_packed[WT_BF16] = matmul_bf16_r16;
    table->act_format[WT_BF16] = ACT_BF16;
}
