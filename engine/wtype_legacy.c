// The 32-weight block types beyond Q4_0/Q8_0 (Q4_1, Q5_0, Q5_1, IQ4_NL) and IQ4_XS (256 weights in
// 8 sub-blocks of 32 sharing IQ4_NL's non-linear grid): scalar dequantization, bit for bit the
// GGUF block layouts (engine/wtype.h gives each layout). Within a 32-weight block, byte j of the
// 16 nibble bytes holds weight j (low nibble) and weight j+16 (high nibble).
#include "engine/wtype.h"
#include "engine/half.h"

#include <string.h>

// IQ4_NL/IQ4_XS: the 16 levels a 4-bit code names, times the block's (sub-block's) scale.
const int8_t iq4_levels[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

// The 5th bit of weight j (j < 32) of a Q5 block: bit j of the little-endian 32-bit qh.
static uint32_t q5_high_bits(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

void dequantize_row_q4_1(const void *src, float *dst, int64_t n) {
    const block_q4_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)(b[i].qs[j] & 0x0f) + m;
            dst[j + 16] = d * (float)(b[i].qs[j] >> 4) + m;
        }
    }
}

void dequantize_row_q5_0(const void *src, float *dst, int64_t n) {
    const block_q5_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = fp16_to_f32(b[i].d);
        const uint32_t qh = q5_high_bits(b[i].qh);
        for (int j = 0; j < 16; j++) {
            const int lo = (b[i].qs[j] & 0x0f) | (int)((qh >> j) & 1) << 4;
            const int hi = (b[i].qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            dst[j] = d * (float)(lo - 16);
            dst[j + 16] = d * (float)(hi - 16);
        }
    }
}

void dequantize_row_q5_1(const void *src, float *dst, int64_t n) {
    const block_q5_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
        const uint32_t qh = q5_high_bits(b[i].qh);
        for (int j = 0; j < 16; j++) {
            const int lo = (b[i].qs[j] & 0x0f) | (int)((qh >> j) & 1) << 4;
            const int hi = (b[i].qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            dst[j] = d * (float)lo + m;
            dst[j + 16] = d * (float)hi + m;
        }
    }
}

void dequantize_row_iq4_nl(const void *src, float *dst, int64_t n) {
    const block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = fp16_to_f32(b[i].d);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)iq4_levels[b[i].qs[j] & 0x0f];
            dst[j + 16] = d * (float)iq4_levels[b[i].qs[j] >> 4];
        }
    }
}

// IQ4_XS sub-block s (of 8) has a 6-bit scale: low 4 bits from scales_l (nibble s%2 of byte
// s/2), high 2 bits from bits 2s, 2s+1 of scales_h; its weights are d * (scale - 32) * level.
void dequantize_row_iq4_xs(const void *src, float *dst, int64_t n) {
    const block_iq4_xs *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d);
        for (int s = 0; s < 8; s++, dst += 32) {
            const int ls = ((b[i].scales_l[s / 2] >> 4 * (s % 2)) & 0x0f) | ((b[i].scales_h >> 2 * s) & 3) << 4;
            const float dl = d * (float)(ls - 32);
            const uint8_t *qs = b[i].qs + 16 * s;
            for (int j = 0; j < 16; j++) {
                dst[j] = dl * (float)iq4_levels[qs[j] & 0x0f];
                dst[j + 16] = dl * (float)iq4_levels[qs[j] >> 4];
            }
        }
    }
}
