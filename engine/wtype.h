// Weight types: one table describing every GGUF tensor type cabin knows the layout of.
// Block layouts are bit-for-bit the GGUF ones, so any GGUF file works and files cabin writes load
// elsewhere. A type may be known (sizes, so the reader can validate a file) without being
// supported for compute (no dequantize function): the model loader reports those by name.
#ifndef CABIN_WTYPE_H
#define CABIN_WTYPE_H

#include <stdint.h>
#include <stddef.h>

enum wtype {
    WT_F32 = 0, WT_F16 = 1, WT_Q4_0 = 2, WT_Q4_1 = 3, WT_Q5_0 = 6, WT_Q5_1 = 7, WT_Q8_0 = 8,
    WT_Q8_1 = 9, WT_Q2_K = 10, WT_Q3_K = 11, WT_Q4_K = 12, WT_Q5_K = 13, WT_Q6_K = 14,
    WT_Q8_K = 15, WT_IQ4_NL = 20, WT_IQ4_XS = 23, WT_I8 = 24, WT_I16 = 25, WT_I32 = 26,
    WT_I64 = 27, WT_F64 = 28, WT_BF16 = 30,
    WT_COUNT = 40 // upper bound of type ids in the table
};

// Q4_0: 32 weights = fp16 scale d, then 16 bytes; byte j holds weight j (low nibble) and
// weight j+16 (high nibble); w = d * (nibble - 8).
typedef struct { uint16_t d; uint8_t qs[16]; } block_q4_0;
// Q8_0: 32 weights = fp16 scale d, then 32 int8; w = d * q.
typedef struct { uint16_t d; int8_t qs[32]; } block_q8_0;
#define QK4_0 32
#define QK8_0 32

typedef void (*wtype_to_f32_fn)(const void *src, float *dst, int64_t n);   // n % block_size == 0
typedef void (*wtype_from_f32_fn)(const float *src, void *dst, int64_t n); // reference quantizer

typedef struct wtype_info {
    const char *name;        // as GGUF tools spell it: "F32", "Q4_0", ...
    uint32_t block_size;     // weights per block
    uint32_t block_bytes;    // bytes per block
    wtype_to_f32_fn to_f32;      // NULL: layout known but not supported for compute
    wtype_from_f32_fn from_f32;  // NULL: cabin cannot produce this type
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

// Reference (scalar) conversions, exposed for tests and kernels.
void dequantize_row_q4_0(const void *src, float *dst, int64_t n);
void dequantize_row_q8_0(const void *src, float *dst, int64_t n);
void quantize_row_q4_0_ref(const float *src, void *dst, int64_t n);
void quantize_row_q8_0_ref(const float *src, void *dst, int64_t n);

#endif
