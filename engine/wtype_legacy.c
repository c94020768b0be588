// The 32-weight block types beyond Q4_0/Q8_0 (Q4_1, Q5_0, Q5_1, IQ4_NL) and IQ4_XS (256 weights in
// 8 sub-blocks of 32 sharing IQ4_NL's non-linear grid), bit for bit the GGUF block layouts
// (engine/wtype.h gives each layout). Each type's decoding is written once, as one block's codes
// under per-group (scale, min); WTYPE_CODES_DEFINE (engine/wtype_codes.h) derives the row decoding
// and the float dequantization from it. Within a 32-weight block, byte j of the 16 nibble bytes
// holds weight j (low nibble) and weight j+16 (high nibble).
#include "engine/wtype.h"
#include "engine/half.h"
#include "engine/wtype_codes.h"

// IQ4_NL/IQ4_XS: the 16 levels a 4-bit code names, times the block's (sub-block's) scale.
const int8_t iq4_levels[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

// Q4_1: w = d * q + m, so min is -m (negation is exact, and x - (-m) is x + m).
WTYPE_DECODER void q4_1_decode(const block_q4_1 *b, const wtype_codes_out *c) {
    c->scale[0] = fp16_to_f32(b->d);
    c->min[0] = -fp16_to_f32(b->m);
    for (int j = 0; j < 16; j++) {
        c->code[j] = (int8_t)(b->qs[j] & 0x0f);
        c->code[j + 16] = (int8_t)(b->qs[j] >> 4);
    }
}
WTYPE_CODES_DEFINE(q4_1, block_q4_1, 32, 32, 0, 15, true, q4_1_decode)

// The 5th bit of weight j (j < 32) of a Q5 block is bit j of the little-endian 32-bit qh:
// code = (nibble | 5th bit << 4) - offset.
WTYPE_DECODER void q5_codes(const uint8_t qs[16], const uint8_t qh4[4], int offset, int8_t *code) {
    const uint32_t qh = (uint32_t)qh4[0] | (uint32_t)qh4[1] << 8 | (uint32_t)qh4[2] << 16 | (uint32_t)qh4[3] << 24;
    for (int j = 0; j < 16; j++) {
        code[j] = (int8_t)(((qs[j] & 0x0f) | (int)((qh >> j) & 1) << 4) - offset);
        code[j + 16] = (int8_t)(((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) - offset);
    }
}

// Q5_0: w = d * (q - 16).
WTYPE_DECODER void q5_0_decode(const block_q5_0 *b, const wtype_codes_out *c) {
    c->scale[0] = fp16_to_f32(b->d);
    q5_codes(b->qs, b->qh, 16, c->code);
}
WTYPE_CODES_DEFINE(q5_0, block_q5_0, 32, 32, -16, 15, false, q5_0_decode)

// Q5_1: w = d * q + m, min -m as Q4_1.
WTYPE_DECODER void q5_1_decode(const block_q5_1 *b, const wtype_codes_out *c) {
    c->scale[0] = fp16_to_f32(b->d);
    c->min[0] = -fp16_to_f32(b->m);
    q5_codes(b->qs, b->qh, 0, c->code);
}
WTYPE_CODES_DEFINE(q5_1, block_q5_1, 32, 32, 0, 31, true, q5_1_decode)

// IQ4_NL/IQ4_XS: the codes are the grid's levels.
WTYPE_DECODER void iq4_codes(const uint8_t qs[16], int8_t *code) {
    for (int j = 0; j < 16; j++) {
        code[j] = iq4_levels[qs[j] & 0x0f];
        code[j + 16] = iq4_levels[qs[j] >> 4];
    }
}

WTYPE_DECODER void iq4_nl_decode(const block_iq4_nl *b, const wtype_codes_out *c) {
    c->scale[0] = fp16_to_f32(b->d);
    iq4_codes(b->qs, c->code);
}
WTYPE_CODES_DEFINE(iq4_nl, block_iq4_nl, 32, 32, -127, 113, false, iq4_nl_decode)

// IQ4_XS sub-block s (of 8) has a 6-bit scale ls: low 4 bits from scales_l (nibble s%2 of byte
// s/2), high 2 bits from bits 2s, 2s+1 of scales_h; its scale is d * (ls - 32).
WTYPE_DECODER void iq4_xs_decode(const block_iq4_xs *b, const wtype_codes_out *c) {
    const float d = fp16_to_f32(b->d);
    for (int s = 0; s < 8; s++) {
        const int ls = ((b->scales_l[s / 2] >> 4 * (s % 2)) & 0x0f) | ((b->scales_h >> 2 * s) & 3) << 4;
        c->scale[s] = d * (float)(ls - 32);
        iq4_codes(b->qs + 16 * s, c->code + 32 * s);
    }
}
WTYPE_CODES_DEFINE(iq4_xs, block_iq4_xs, 256, 32, -127, 113, false, iq4_xs_decode)
