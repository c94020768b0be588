// Prefill on AMX (Sapphire Rapids and later, where the OS grants the tile state: cpu_features
// amx_usable): F16 and BF16 weights, 16 tokens or more at a time, on TDPBF16PS. One instruction
// multiplies a 16 x 32 bf16 tile of activations by a 32 x 16 bf16 tile of weights into 16 x 16
// float sums: 8,192 products, where an AVX-512 FMA makes 16.
//
// bf16 keeps 8 significant bits, so each operand goes in as two bf16 numbers whose sum is it:
//   a weight w = wh + wl: an F16 weight (11 bits) exactly: wh = w rounded to bf16, wl = w - wh
//     (at most 4 bits, exact in bf16); a BF16 weight is wh alone;
//   an activation x = xh + xl to 17 bits: xh = x rounded to bf16, xl = x - xh rounded to bf16
//     (ACT_BF16_SPLIT, cpu_act_bf16_split): |x - xh - xl| <= 2^-17 |x|.
// The products xh.wh + xl.wh + xh.wl (wl.xl, at most 2^-16 of the product, is left out) are
// summed in float: every product within 1.5 x 2^-16 of x.w, where the reference implementation
// rounds each activation to f16 (2^-11) for F16 weights and to bf16 (2^-8) for BF16 ones.
//
// Layout: the weights are the packed units of engine/cpu/kernels.h (16 rows x 32 weights, 64-byte
// line p holding weights 2p and 2p + 1 of the 16 rows). A BF16 unit (each row's pair side by side
// in a 32-bit lane) is already the B tile TDPBF16PS reads; an F16 unit (weight 2p of the 16 rows,
// then weight 2p + 1) is split into its wh and wl tiles in that form as it is used. The
// activations come in blocks of 16 tokens, each unit's a 1 KiB A tile (cpu_act_bf16_split), the
// token count rounded up to 16 with zero rows (cpu_matmul pads them): a tile is read from
// consecutive lines, not 16 rows a k apart.
//
// Tiles: C0-C3 the float sums of up to 4 blocks of 16 tokens for one group of 16 rows, A4/A5 a
// block's xh and xl, B6/B7 the unit's wh and wl.
#include "engine/cpu/kernels.h"

#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#define AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

// PF: how far ahead the weight stream is prefetched (as the FMA kernels do: the weights come
// from memory once per pass, and the tiles would wait on them).
enum { R16 = 16, UNIT = R16 * 64, TOKENS = 16, BLOCKS = 4, PF = 8192 };

// The tile configuration of palette 1 (Intel SDM, LDTILECFG): 8 tiles of 16 rows x 64 bytes.
typedef struct tile_config {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

AMX_TARGET static void tiles_configure(void) {
    alignas(64) tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 8; i++) {
        c.rows[i] = 16;
        c.colsb[i] = 64;
    }
    _tile_loadconfig(&c);
}

// Floats rounded to bf16 (to nearest even), kept as floats (their low halves zero). Finite inputs.
INLINE AMX_TARGET __m512i round_bf16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    return _mm512_and_si512(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd)),
                            _mm512_set1_epi32((int)0xffff0000u));
}

// Token `row` (0-15) of a block of 16 (ACT_BF16_SPLIT): x (k floats) -> xh = x rounded to bf16
// and xl = (x - xh) rounded, zeros past k, into the block's A tiles: unit u's 32 weights of the
// 16 tokens are one 1 KiB tile (token t's 64 bytes at t * 64), the nu xh tiles first, then the nu
// xl tiles.
AMX_TARGET void cpu_act_bf16_split(const float *x, uint8_t *block, int row, int64_t k) {
    const int64_t nu = (k + 31) / 32;
    uint8_t *hi = block + (size_t)row * 64, *lo = hi + (size_t)nu * UNIT;
    for (int64_t i = 0; i < nu * 32; i += 16) {
        const __mmask16 m = i + 16 <= k ? (__mmask16)0xffff : i < k ? (__mmask16)((1u << (k - i)) - 1) : 0;
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        const __m512i vh = round_bf16(v);
        const __m512i vl = round_bf16(_mm512_sub_ps(v, _mm512_castsi512_ps(vh)));
        const size_t at = (size_t)(i / 32) * UNIT + (size_t)(i % 32) * 2;
        _mm256_storeu_si256((__m256i *)(void *)(hi + at), _mm512_cvtepi32_epi16(_mm512_srli_epi32(vh, 16)));
        _mm256_storeu_si256((__m256i *)(void *)(lo + at), _mm512_cvtepi32_epi16(_mm512_srli_epi32(vl, 16)));
    }
}

// An F16 unit into its wh and wl tiles (UNIT bytes each): line p, lane n = row n's weights 2p
// (low half) and 2p + 1 (high half).
INLINE AMX_TARGET void split_f16_unit(const uint8_t *unit, uint8_t *wh, uint8_t *wl) {
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u);
    for (int p = 0; p < 16; p++) {
        const __m512 w0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(unit + 64 * p)));
        const __m512 w1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(unit + 64 * p + 32)));
        const __m512i h0 = round_bf16(w0), h1 = round_bf16(w1);
        const __m512i l0 = _mm512_castps_si512(_mm512_sub_ps(w0, _mm512_castsi512_ps(h0)));
        const __m512i l1 = _mm512_castps_si512(_mm512_sub_ps(w1, _mm512_castsi512_ps(h1)));
        _mm512_store_si512((void *)(wh + 64 * p), _mm512_or_si512(_mm512_srli_epi32(h0, 16), h1));
        _mm512_store_si512((void *)(wl + 64 * p), _mm512_or_si512(_mm512_srli_epi32(l0, 16), _mm512_and_si512(l1, top)));
    }
}

// Block b's products with the unit's tiles into C(b): xh.wh, xh.wl (F16 only), xl.wh.
#define BLOCK_PRODUCTS(b)                                                      \
    do {                                                                       \
        _tile_loadd(4, xa + (size_t)(b) * TOKENS * xrb, 64);                   \
        _tile_dpbf16ps(b, 4, 6);                                               \
        if (!bf) _tile_dpbf16ps(b, 4, 7);                                      \
        _tile_loadd(5, xa + (size_t)(b) * TOKENS * xrb + lo_off, 64);          \
        _tile_dpbf16ps(b, 5, 6);                                               \
    } while (0)

// C(b) to y: the block's tokens below n_tok, the group's rows in [row0, row1).
#define BLOCK_STORE(b)                                                                                   \
    do {                                                                                                 \
        _tile_stored(b, sums, 64);                                                                       \
        for (int t = 0; t < TOKENS && t0 + (b) * TOKENS + t < n_tok; t++)                                \
            for (int r = r_lo; r < r_hi; r++)                                                            \
                y[(size_t)(t0 + (b) * TOKENS + t) * (size_t)ldy + (size_t)(g * R16 + r)] = sums[t * R16 + r]; \
    } while (0)

AMX_TARGET static void matmul_amx(const bool bf, const void *w, int64_t k, int64_t row0, int64_t row1, const void *x,
                                  size_t xrb, int64_t n_tok, float *y, int64_t ldy) {
    alignas(64) uint8_t wh[UNIT], wl[UNIT];
    alignas(64) float sums[TOKENS * R16];
    const int64_t nu = (k + 31) / 32;
    const size_t gs = (size_t)nu * UNIT, lo_off = (size_t)nu * UNIT;   // a row group's bytes; a block's xh tiles
    const int64_t n_blocks = (n_tok + TOKENS - 1) / TOKENS;
    tiles_configure();
    for (int64_t g = row0 / R16; g * R16 < row1; g++) {
        const uint8_t *gw = (const uint8_t *)w + (size_t)g * gs;
        const int r_lo = g * R16 < row0 ? (int)(row0 - g * R16) : 0;
        const int r_hi = (g + 1) * R16 > row1 ? (int)(row1 - g * R16) : R16;
        for (int64_t b0 = 0; b0 < n_blocks; b0 += BLOCKS) {
            const int nb = n_blocks - b0 < BLOCKS ? (int)(n_blocks - b0) : BLOCKS;
            const int64_t t0 = b0 * TOKENS;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int64_t u = 0; u < nu; u++) {
                const uint8_t *unit = gw + (size_t)u * UNIT;
                for (int l = 0; l < UNIT; l += 64) _mm_prefetch((const char *)(uintptr_t)((uintptr_t)unit + PF + (size_t)l), _MM_HINT_T0);
                if (bf) {
                    _tile_loadd(6, unit, 64);
                } else {
                    split_f16_unit(unit, wh, wl);
                    _tile_loadd(6, wh, 64);
                    _tile_loadd(7, wl, 64);
                }
                const uint8_t *xa = (const uint8_t *)x + (size_t)t0 * xrb + (size_t)u * UNIT;
                BLOCK_PRODUCTS(0);
                if (nb > 1) BLOCK_PRODUCTS(1);
                if (nb > 2) BLOCK_PRODUCTS(2);
                if (nb > 3) BLOCK_PRODUCTS(3);
            }
            BLOCK_STORE(0);
            if (nb > 1) BLOCK_STORE(1);
            if (nb > 2) BLOCK_STORE(2);
            if (nb > 3) BLOCK_STORE(3);
        }
    }
    _tile_release();
}

static void matmul_f16_amx(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x, size_t xrb,
                           int64_t n_tok, float *y, int64_t ldy) {
    (void)wrb;
    matmul_amx(false, w, k, row0, row1, x, xrb, n_tok, y, ldy);
}

static void matmul_bf16_amx(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x, size_t xrb,
                            int64_t n_tok, float *y, int64_t ldy) {
    (void)wrb;
    matmul_amx(true, w, k, row0, row1, x, xrb, n_tok, y, ldy);
}

void cpu_kernels_add_amx(cpu_kernels *table) {
    table->prefill_min_tokens = TOKENS;
    table->matmul_prefill[WT_F16] = matmul_f16_amx;
    table->matmul_prefill[WT_BF16] = matmul_bf16_amx;
    table->act_format_prefill[WT_F16] = ACT_BF16_SPLIT;
    table->act_format_prefill[WT_BF16] = ACT_BF16_SPLIT;
    table->act_bf16_split = cpu_act_bf16_split;
}
