// Quantized weights as small integer codes under per-group affine maps:
//   w[i] = scale[g] * code[i] - min[g],   g = i / group
// in float arithmetic: one product, then one difference (the types without a min skip it, as
// x - 0 is x). This is each quantized type's one decoding rule: its family file
// (engine/wtype.c: Q4_0, Q8_0; engine/wtype_legacy.c: Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS;
// engine/wtype_kquant.c: Q2_K..Q6_K) writes how one block gives its codes, scales and mins, and
// WTYPE_CODES_DEFINE below derives from it both the row decoding to codes (a backend that cannot
// take the block layout repacks from them: vulkan/vk_weights.c) and the float dequantization
// (dequantize_row_X, the type's to_f32), so both compute on exactly the file's weights.
#ifndef CABIN_WTYPE_CODES_H
#define CABIN_WTYPE_CODES_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

typedef struct wtype_codes {
    int group;              // weights per (scale, min): 16 or 32
    int code_lo, code_hi;   // the range of the codes
    bool has_min;           // false: every min is 0
    // n weights (n % the type's block size == 0) to n codes, n/group scales and, when has_min,
    // n/group mins (min may be NULL when !has_min).
    void (*to_codes)(const void *src, int8_t *code, float *scale, float *min, int64_t n);
} wtype_codes;

// NULL for the float types (F32, F16, BF16), FP8 and types cabin does not compute (the type
// table's codes: engine/wtype.c).
const wtype_codes *wtype_codes_get(uint32_t type);

// ---- defining a type's codes (the family files) ----

// Where a decoder writes one block: its block-size codes and block-size/group scales (and
// mins). A decoder leaves min alone when its type has none.
typedef struct wtype_codes_out {
    int8_t *code;
    float *scale, *min;
} wtype_codes_out;

// A block decoder and the helpers it calls are inlined into the loops below (a call per block
// of 32 would cost more than the decoding).
#define WTYPE_DECODER static inline __attribute__((always_inline))

// WTYPE_CODES_DEFINE(name, block_t, qk, group, lo, hi, has_min, decode), where
// `WTYPE_DECODER void decode(const block_t *b, const wtype_codes_out *c)` decodes one block of qk
// weights, defines
//   const wtype_codes wtype_codes_<name>    the descriptor the type table points at;
//   void dequantize_row_<name>(src, dst, n) the type's to_f32: 256 weights at a time (8 blocks
//       of 32 or one of 256), decoded into stack buffers, then w = scale * code - min per group.
// Everything is known at compile time where the macro expands, so the decoding and the float
// loop over a group vectorize. Decoding a whole 256 before the float loop reads them back lets
// the decoder's byte stores reach the cache first (one block of 32 at a time, the loop's wide
// loads would wait on them).
#define WTYPE_CODES_DEFINE(name, block_t, qk, group_, lo, hi, has_min_, decode)                    \
    _Static_assert(256 % (qk) == 0 && (qk) % (group_) == 0 && (group_) % 16 == 0, #name " groups"); \
    static void name##_to_codes(const void *src, int8_t *code, float *scale, float *min, int64_t n) { \
        const block_t *b = src;                                                                     \
        const int64_t ng = (qk) / (group_);                                                         \
        for (int64_t i = 0; i < n / (qk); i++) {                                                    \
            const wtype_codes_out c = { code + i * (qk), scale + i * ng, min ? min + i * ng : NULL }; \
            decode(&b[i], &c);                                                                      \
            if (!(has_min_) && min)                                                                 \
                for (int64_t g = 0; g < ng; g++) min[i * ng + g] = 0.0f;                            \
        }                                                                                           \
    }                                                                                               \
    const wtype_codes wtype_codes_##name = { (group_), (lo), (hi), (has_min_), name##_to_codes };   \
    void dequantize_row_##name(const void *src, float *dst, int64_t n) {                           \
        const block_t *b = src;                                                                     \
        int8_t code[256];                                                                           \
        float scale[256 / (group_)], min[256 / (group_)];                                           \
        for (int64_t i = 0; i < n / (qk); i += 256 / (qk)) {                                        \
            const int nb = n / (qk) - i < 256 / (qk) ? (int)(n / (qk) - i) : 256 / (qk);            \
            for (int k = 0; k < nb; k++) {                                                          \
                const int g0 = k * ((qk) / (group_));                                               \
                const wtype_codes_out c = { code + k * (qk), scale + g0, min + g0 };                \
                decode(&b[i + k], &c);                                                              \
            }                                                                                       \
            for (int g = 0; g < nb * ((qk) / (group_)); g++, dst += (group_)) {                     \
                const float s = scale[g], m = (has_min_) ? min[g] : 0.0f;                           \
                const int8_t *q = code + g * (group_);                                              \
                if (has_min_)                                                                       \
                    for (int j = 0; j < (group_); j++) dst[j] = s * (float)q[j] - m;                \
                else                                                                                \
                    for (int j = 0; j < (group_); j++) dst[j] = s * (float)q[j];                    \
            }                                                                                       \
        }                                                                                           \
    }

#endif
