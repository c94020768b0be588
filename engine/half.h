// IEEE half and bfloat16 <-> float, as the GGUF F16 and BF16 types store them.
#ifndef CABIN_HALF_H
#define CABIN_HALF_H

#include <stdint.h>

// IEEE half <-> float, round-to-nearest-even.
float fp16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);
// bfloat16 <-> float; f32_to_bf16 rounds to nearest even and keeps NaN a NaN.
static inline float bf16_to_f32(uint16_t b) {
    union { uint32_t u; float f; } v = { .u = (uint32_t)b << 16 };
    return v.f;
}
uint16_t f32_to_bf16(float f);

#endif
