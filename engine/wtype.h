// Weight types: one table describing every GGUF tensor type cabin knows the layout of.
// Block layouts are bit-for-bit the GGUF ones, so any GGUF file works and files cabin writes load
// elsewhere. A type may be known (sizes, so the reader can validate a file) without being
// supported for compute (no dequantize function): the model loader reports those by name.
#ifndef CABIN_WTYPE_H
#define CABIN_WTYPE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

enum wtype {
    WT_F32 = 0, WT_F16 = 1, WT_Q4_0 = 2, WT_Q4_1 = 3, WT_Q5_0 = 6, WT_Q5_1 = 7, WT_Q8_0 = 8,
    WT_Q8_1 = 9, WT_Q2_K = 10, WT_Q3_K = 11, WT_Q4_K = 12, WT_Q5_K = 13, WT_Q6_K = 14,
    WT_Q8_K = 15, WT_IQ4_NL = 20, WT_IQ4_XS = 23, WT_I8 = 24, WT_I16 = 25, WT_I32 = 26,
    WT_I64 = 27, WT_F64 = 28, WT_BF16 = 30,
    WT_FP8 = 63,  // cabin's own, in memory only (engine/wtype_fp8.c): never in a GGUF file
    WT_COUNT = 64 // upper bound of type ids in the table (type masks are 64-bit)
};

// Q4_0: 32 weights = fp16 scale d, then 16 bytes; byte j holds weight j (low nibble) and
// weight j+16 (high nibble); w = d * (nibble - 8).
typedef struct { uint16_t d; uint8_t qs[16]; } block_q4_0;
// Q8_0: 32 weights = fp16 scale d, then 32 int8; w = d * q.
typedef struct { uint16_t d; int8_t qs[32]; } block_q8_0;
#define QK4_0 32
#define QK8_0 32

// The other 32-weight types (engine/wtype_legacy.c). Nibble byte j: weight j low, j+16 high.
// Q4_1: w = d * q + m, q in 0..15.
typedef struct { uint16_t d, m; uint8_t qs[16]; } block_q4_1;
// Q5_0: w = d * (q - 16); q's 5th bit for weight j is bit j of qh (a little-endian uint32).
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } block_q5_0;
// Q5_1: w = d * q + m, q in 0..31 (5th bit as Q5_0).
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } block_q5_1;
// IQ4_NL: w = d * iq4_levels[q].
typedef struct { uint16_t d; uint8_t qs[16]; } block_iq4_nl;
// IQ4_XS: 256 weights, 8 sub-blocks of 32 coded as IQ4_NL under a 6-bit scale ls (offset 32):
// w = d * (ls - 32) * iq4_levels[q]; ls low nibbles in scales_l, high 2 bits in scales_h.
typedef struct { uint16_t d, scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } block_iq4_xs;
extern const int8_t iq4_levels[16];

// K-quants (engine/wtype_kquant.c): 256 weights per super-block.
// Q2_K: 16 groups of 16, scales[g] = 4-bit scale (low) and 4-bit min (high);
// w = d * scale * q - dmin * min, q 2 bits.
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } block_q2_k;
// Q3_K: 16 groups of 16 with 6-bit scales (offset 32) packed in 12 bytes; q = 2 low bits, minus
// 4 where the group's hmask bit is clear; w = d * scale * q.
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } block_q3_k;
// Q4_K: 8 groups of 32 with 6-bit (scale, min) pairs packed in 12 bytes (kquant_scale_min);
// w = d * scale * q - dmin * min, q 4 bits.
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } block_q4_k;
// Q5_K: Q4_K with a 5th bit per weight in qh.
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } block_q5_k;
// Q6_K: 16 groups of 16 with int8 scales; q = 4 low bits (ql) and 2 high bits (qh), minus 32;
// w = d * scale * q.
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } block_q6_k;
#define QK_K 256
// FP8: 32 weights = fp16 scale d, then 32 E4M3 bytes (sign, 4 exponent bits biased by 7, 3
// mantissa bits; no infinities, S.1111.111 is NaN, largest 448); w = d * e4m3(q). A type of
// cabin's own for precision plans, the heat map and live switching: files keep standard types.
typedef struct { uint16_t d; uint8_t qs[32]; } block_fp8;
float e4m3_to_f32(uint8_t q);
uint8_t f32_to_e4m3(float x);   // nearest, ties to even; beyond ±448 saturates to ±448
void dequantize_row_fp8(const void *src, float *dst, int64_t n);
void quantize_row_fp8(const float *src, void *dst, int64_t n);
// Q8_K: 256 int8 with a float scale (w = d * q) and the sums of each 16: the activation format
// the reference multiplies K-quant weights by (cabin never stores weights in it).
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } block_q8_k;
// Q4_K/Q5_K: the (scale, min) pair j (0..7) of a block's packed 12 bytes.
void kquant_scale_min(int j, const uint8_t q[12], uint8_t *sc, uint8_t *mn);
// Q3_K: the 6-bit scale s (0..15) of a block's packed 12 bytes, before its offset of 32.
int q3_k_scale(int s, const uint8_t q[12]);

typedef void (*wtype_to_f32_fn)(const void *src, float *dst, int64_t n);   // n % block_size == 0
typedef void (*wtype_from_f32_fn)(const float *src, void *dst, int64_t n); // reference quantizer
struct wtype_codes;

typedef struct wtype_info {
    const char *name;        // as GGUF tools spell it: "F32", "Q4_0", ...
    uint32_t block_size;     // weights per block
    uint32_t block_bytes;    // bytes per block
    wtype_to_f32_fn to_f32;      // NULL: layout known but not supported for compute
    wtype_from_f32_fn from_f32;  // NULL: cabin cannot produce this type
    bool in_memory_only;     // cabin's own type: GGUF files never hold it (reader and writer refuse)
    // The quantized types' decoding to codes under per-group (scale, min) (engine/wtype_codes.h),
    // from which their to_f32 is derived; NULL for the float types and FP8.
    const struct wtype_codes *codes;
} wtype_info;

// NULL for an id cabin does not know.
const wtype_info *wtype_get(uint32_t type);
// Name for messages; "type#N" (static buffer per call site is not needed: returns "unknown").
const char *wtype_name(uint32_t type);
// Case-insensitive lookup by name ("q4_0", "F16"); -1 if unknown.
int wtype_from_name(const char *name);
// Bits per weight (block_bytes*8/block_size).
double wtype_bpw(uint32_t type);
// Byte size of a row of n weights; 0 if n is not a multiple of the block size or type unknown.
uint64_t wtype_row_bytes(uint32_t type, uint64_t n);
// Comma-separated names of the types supported for compute, for error messages.
const char *wtype_supported_list(void);

// Reference (scalar) conversions, exposed for tests and kernels. The quantized types'
// dequantize_row_X and their codes wtype_codes_X (for the table; others ask wtype_codes_get) are
// both made by WTYPE_CODES_DEFINE (engine/wtype_codes.h) from the type's one block decoder.
extern const struct wtype_codes wtype_codes_q4_0, wtype_codes_q8_0, wtype_codes_q4_1, wtype_codes_q5_0,
    wtype_codes_q5_1, wtype_codes_iq4_nl, wtype_codes_iq4_xs, wtype_codes_q2_k, wtype_codes_q3_k,
    wtype_codes_q4_k, wtype_codes_q5_k, wtype_codes_q6_k;
void dequantize_row_q4_0(const void *src, float *dst, int64_t n);
void dequantize_row_q8_0(const void *src, float *dst, int64_t n);
void dequantize_row_q4_1(const void *src, float *dst, int64_t n);
void dequantize_row_q5_0(const void *src, float *dst, int64_t n);
void dequantize_row_q5_1(const void *src, float *dst, int64_t n);
void dequantize_row_iq4_nl(const void *src, float *dst, int64_t n);
void dequantize_row_iq4_xs(const void *src, float *dst, int64_t n);
void dequantize_row_q2_k(const void *src, float *dst, int64_t n);
void dequantize_row_q3_k(const void *src, float *dst, int64_t n);
void dequantize_row_q4_k(const void *src, float *dst, int64_t n);
void dequantize_row_q5_k(const void *src, float *dst, int64_t n);
void dequantize_row_q6_k(const void *src, float *dst, int64_t n);
void quantize_row_q4_0_ref(const float *src, void *dst, int64_t n);
void quantize_row_q8_0_ref(const float *src, void *dst, int64_t n);
void quantize_row_q8_k_ref(const float *src, void *dst, int64_t n);

#endif
