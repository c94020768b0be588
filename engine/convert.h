// Fast whole-tensor conversion between weight types (precision switches, quantize): rows in
// parallel over threads, with AVX-512 row converters where the processor allows. Every fast
// converter gives bit-for-bit the result of the reference (wtype.h) functions.
#ifndef CABIN_CONVERT_H
#define CABIN_CONVERT_H

#include <stddef.h>
#include <stdint.h>

// Converts n_rows rows of k weights from src_type to dst_type. Rows are src_row_bytes /
// dst_row_bytes apart. n_threads <= 0: all cores.
void convert_rows(const void *src, uint32_t src_type, size_t src_row_bytes, void *dst, uint32_t dst_type,
                  size_t dst_row_bytes, int64_t k, int64_t n_rows, int n_threads);

// One row through f32 with the fastest functions this machine has (tests compare them with the
// reference functions).
void convert_row(const void *src, uint32_t src_type, void *dst, uint32_t dst_type, int64_t k, float *scratch);

// The AVX-512 row functions (engine/convert_avx512.c): call only when convert_avx512_usable().
void f16_to_f32_avx512(const uint16_t *src, float *dst, int64_t n);
void quantize_row_q4_0_avx512(const float *src, void *dst, int64_t n);
void quantize_row_q8_0_avx512(const float *src, void *dst, int64_t n);
int convert_avx512_usable(void);

#endif
