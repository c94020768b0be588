// Quantizers from F32 rows to the GGUF types beyond Q4_0/Q8_0 (engine/quantize_kquant.c,
// engine/quantize_legacy.c). Without importance each one gives, byte for byte, the blocks the
// established GGUF quantizer writes when it has no importance matrix: the same scale searches,
// the same float rounding order, fp16 rounded to nearest even.
//
// The _weighted forms take imp: n importances (the mean squared activation of each input
// column, engine/calibrate.h); the scale searches weigh each weight's error by it. imp == NULL
// is the plain quantizer.
#ifndef CABIN_QUANTIZE_H
#define CABIN_QUANTIZE_H

#include <stdint.h>

// Round to nearest, ties to even, as the reference's float trick does (|x| < 2^22; larger
// magnitudes saturate at ±4194303, which every caller clamps further anyway).
int quant_nearest_int(float x);

// K-quants: n % 256 == 0.
void quantize_row_q2_k_ref(const float *src, void *dst, int64_t n);
void quantize_row_q3_k_ref(const float *src, void *dst, int64_t n);
void quantize_row_q4_k_ref(const float *src, void *dst, int64_t n);
void quantize_row_q5_k_ref(const float *src, void *dst, int64_t n);
void quantize_row_q6_k_ref(const float *src, void *dst, int64_t n);
void quantize_row_q2_k_weighted(const float *src, const double *imp, void *dst, int64_t n);
void quantize_row_q3_k_weighted(const float *src, const double *imp, void *dst, int64_t n);
void quantize_row_q4_k_weighted(const float *src, const double *imp, void *dst, int64_t n);
void quantize_row_q5_k_weighted(const float *src, const double *imp, void *dst, int64_t n);
void quantize_row_q6_k_weighted(const float *src, const double *imp, void *dst, int64_t n);

// 32-weight types (n % 32 == 0) and IQ4_XS (n % 256 == 0).
void quantize_row_q4_1_ref(const float *src, void *dst, int64_t n);
void quantize_row_q5_0_ref(const float *src, void *dst, int64_t n);
void quantize_row_q5_1_ref(const float *src, void *dst, int64_t n);
void quantize_row_iq4_nl_ref(const float *src, void *dst, int64_t n);
void quantize_row_iq4_xs_ref(const float *src, void *dst, int64_t n);

// A type whose block fits rows of ne0 weights: `type` itself when ne0 is a multiple of its
// block, else the established quantizer's fallback (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0;
// Q2_K, Q3_K, IQ4_XS -> IQ4_NL), else F16. UINT32_MAX for a type with no fallback (Q4_0, Q8_0,
// ...: such a tensor cannot take the type). Used by `cabin quantize` and by precision plans.
uint32_t quant_fit_type(uint32_t type, int64_t ne0);

// The importance-aware quantizer of a type, NULL where cabin has none (Q4_0's lives in
// engine/calibrate.h and is returned here too).
typedef void (*quantize_weighted_fn)(const float *src, const double *imp, void *dst, int64_t n);
quantize_weighted_fn quantize_weighted_for(uint32_t type);

#endif
