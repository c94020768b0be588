// K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K): super-blocks of 256 weights in sub-blocks of 16 or 32,
// each sub-block with its own small integer scale (and min) under the super-block's fp16 scales,
// bit for bit the GGUF block layouts (engine/wtype.h gives each layout). Each type's decoding is
// written once, as one super-block's codes under per-group (scale, min); WTYPE_CODES_DEFINE
// (engine/wtype_codes.h) derives the row decoding and the float dequantization from it.
// The low bits of a weight sit in 128-weight halves: byte l of a half's 32 (Q2_K, Q3_K: 2 bits
// at shift 2j for the j-th group of 32) or 64 (Q4_K, Q5_K, Q6_K: nibbles) code bytes.
#include "engine/wtype.h"
#include "engine/half.h"
#include "engine/wtype_codes.h"

#include <math.h>
#include <string.h>

// Q2_K: w = d * scale * q - dmin * min; scale byte g: low nibble scale, high nibble min.
WTYPE_DECODER void q2_k_decode(const block_q2_k *b, const wtype_codes_out *c) {
    const float d = fp16_to_f32(b->d), dmin = fp16_to_f32(b->dmin);
    const uint8_t *q = b->qs;
    int g = 0;
    int8_t *code = c->code;
    for (int half = 0; half < 2; half++, q += 32)
        for (int shift = 0; shift < 8; shift += 2)
            for (int part = 0; part < 2; part++, g++, code += 16) {
                c->scale[g] = d * (float)(b->scales[g] & 0x0f);
                c->min[g] = dmin * (float)(b->scales[g] >> 4);
                for (int l = 0; l < 16; l++) code[l] = (int8_t)((q[l + 16 * part] >> shift) & 3);
            }
}
WTYPE_CODES_DEFINE(q2_k, block_q2_k, QK_K, 16, 0, 3, true, q2_k_decode)

// Q3_K: w = d * (scale - 32) * q. The 16 six-bit scales in 12 bytes: scale s has its low 4 bits
// in byte s%8 (nibble s/8) and its high 2 bits in byte 8 + s%4 (bits 2*(s/4), +1). q is 2 low
// bits, minus 4 where the group of 32's hmask bit is clear.
int q3_k_scale(int s, const uint8_t q[12]) {
    return ((q[s % 8] >> (4 * (s / 8))) & 0x0f) | ((q[8 + s % 4] >> (2 * (s / 4))) & 3) << 4;
}

WTYPE_DECODER void q3_k_decode(const block_q3_k *b, const wtype_codes_out *c) {
    const float d = fp16_to_f32(b->d);
    const uint8_t *q = b->qs;
    uint8_t m = 1;   // hmask bit of the current group of 32: set means "no -4"
    int s = 0;
    int8_t *code = c->code;
    for (int half = 0; half < 2; half++, q += 32)
        for (int shift = 0; shift < 8; shift += 2, m <<= 1)
            for (int part = 0; part < 2; part++, s++, code += 16) {
                c->scale[s] = d * (float)(q3_k_scale(s, b->scales) - 32);
                for (int l = 0; l < 16; l++) {
                    const int k = l + 16 * part;
                    code[l] = (int8_t)(((q[k] >> shift) & 3) - ((b->hmask[k] & m) ? 0 : 4));
                }
            }
}
WTYPE_CODES_DEFINE(q3_k, block_q3_k, QK_K, 16, -4, 3, false, q3_k_decode)

// Q4_K/Q5_K: 8 six-bit (scale, min) pairs in 12 bytes. Pairs 0-3: low 6 bits of bytes j and
// j+4. Pairs 4-7: low 4 bits from byte j+4 (scale: low nibble, min: high nibble), high 2 bits
// from the top bits of bytes j-4 (scale) and j (min).
void kquant_scale_min(int j, const uint8_t q[12], uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0x0f) | (q[j - 4] >> 6) << 4);
        *mn = (uint8_t)((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

// Q4_K and Q5_K's low 4 bits: w = d * scale * q - dmin * min. 64 weights per 32 code bytes (low
// nibbles, then high), a (scale, min) pair per 32.
WTYPE_DECODER void q45_k_low(uint16_t d16, uint16_t dmin16, const uint8_t scales[12], const uint8_t *q,
                             const wtype_codes_out *c) {
    const float d = fp16_to_f32(d16), dmin = fp16_to_f32(dmin16);
    int8_t *code = c->code;
    for (int j = 0; j < 8; j += 2, q += 32, code += 64) {
        uint8_t sc0, m0, sc1, m1;
        kquant_scale_min(j, scales, &sc0, &m0);
        kquant_scale_min(j + 1, scales, &sc1, &m1);
        c->scale[j] = d * sc0, c->min[j] = dmin * m0;
        c->scale[j + 1] = d * sc1, c->min[j + 1] = dmin * m1;
        for (int l = 0; l < 32; l++) {
            code[l] = (int8_t)(q[l] & 0x0f);
            code[l + 32] = (int8_t)(q[l] >> 4);
        }
    }
}

WTYPE_DECODER void q4_k_decode(const block_q4_k *b, const wtype_codes_out *c) {
    q45_k_low(b->d, b->dmin, b->scales, b->qs, c);
}
WTYPE_CODES_DEFINE(q4_k, block_q4_k, QK_K, 32, 0, 15, true, q4_k_decode)

// Q5_K: Q4_K's codes plus 16 where bit g of qh[l] is set (weight 32g + l).
WTYPE_DECODER void q5_k_decode(const block_q5_k *b, const wtype_codes_out *c) {
    q45_k_low(b->d, b->dmin, b->scales, b->qs, c);
    for (int g = 0; g < 8; g++)
        for (int l = 0; l < 32; l++) c->code[32 * g + l] = (int8_t)(c->code[32 * g + l] | ((b->qh[l] >> g) & 1) << 4);
}
WTYPE_CODES_DEFINE(q5_k, block_q5_k, QK_K, 32, 0, 31, true, q5_k_decode)

// Q6_K: w = d * scale * q, evaluated as (d * scale) * q; q = 4 low bits (ql) and 2 high bits
// (qh), minus 32, in 128-weight halves of 4 runs of 32.
WTYPE_DECODER void q6_k_decode(const block_q6_k *b, const wtype_codes_out *c) {
    const float d = fp16_to_f32(b->d);
    const uint8_t *ql = b->ql, *qh = b->qh;
    for (int g = 0; g < 16; g++) c->scale[g] = d * (float)b->scales[g];
    int8_t *code = c->code;
    for (int half = 0; half < 2; half++, code += 128, ql += 64, qh += 32)
        for (int l = 0; l < 32; l++) {
            code[l] = (int8_t)(((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32);
            code[l + 32] = (int8_t)(((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32);
            code[l + 64] = (int8_t)(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
            code[l + 96] = (int8_t)(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
        }
}
WTYPE_CODES_DEFINE(q6_k, block_q6_k, QK_K, 16, -32, 31, false, q6_k_decode)

// Q8_K: the weight of largest magnitude (keeping its sign) maps to -127: iscale = -127 / max,
// q = nearest (ties to even) of iscale * x, at most 127; d = 1 / iscale. An all-zero block gets
// d = 0 and q = 0.
void quantize_row_q8_k_ref(const float *src, void *dst, int64_t n) {
    block_q8_k *b = dst;
    for (int64_t i = 0; i < n / 256; i++, src += 256) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 256; j++)
            if (fabsf(src[j]) > amax) { amax = fabsf(src[j]); max = src[j]; }
        memset(&b[i], 0, sizeof b[i]);
        if (amax == 0.0f) continue;
        const float iscale = -127.0f / max;
        for (int j = 0; j < 256; j++) {
            long v = lrintf(iscale * src[j]);
            b[i].qs[j] = (int8_t)(v > 127 ? 127 : v);
            b[i].bsums[j / 16] = (int16_t)(b[i].bsums[j / 16] + b[i].qs[j]);
        }
        b[i].d = 1.0f / iscale;
    }
}
