// Each quantized type's weights as codes under per-group (scale, min): the same arithmetic as its
// dequantization (engine/wtype_legacy.c, wtype_kquant.c, wtype.c), split before the last product.
#include "engine/wtype_codes.h"
#include "engine/half.h"
#include "engine/wtype.h"

#include <stddef.h>

static void set_min(float *min, int64_t g, float v) {
    if (min) min[g] = v;
}

static void codes_q4_0(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q4_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++, code += 32) {
        scale[i] = fp16_to_f32(b[i].d);
        set_min(min, i, 0.0f);
        for (int j = 0; j < 16; j++) {
            code[j] = (int8_t)((b[i].qs[j] & 0x0f) - 8);
            code[j + 16] = (int8_t)((b[i].qs[j] >> 4) - 8);
        }
    }
}

static void codes_q8_0(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q8_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++, code += 32) {
        scale[i] = fp16_to_f32(b[i].d);
        set_min(min, i, 0.0f);
        for (int j = 0; j < 32; j++) code[j] = b[i].qs[j];
    }
}

// w = d * q + m: min is -m (negation is exact).
static void codes_q4_1(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q4_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++, code += 32) {
        scale[i] = fp16_to_f32(b[i].d);
        min[i] = -fp16_to_f32(b[i].m);
        for (int j = 0; j < 16; j++) {
            code[j] = (int8_t)(b[i].qs[j] & 0x0f);
            code[j + 16] = (int8_t)(b[i].qs[j] >> 4);
        }
    }
}

static uint32_t q5_high(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

// Q5_0 (offset 16, no min) and Q5_1 (min -m): the nibble plus the 5th bit from qh.
static void codes_q5(const uint8_t qs[16], const uint8_t qh4[4], int offset, int8_t *code) {
    const uint32_t qh = q5_high(qh4);
    for (int j = 0; j < 16; j++) {
        code[j] = (int8_t)(((qs[j] & 0x0f) | (int)((qh >> j) & 1) << 4) - offset);
        code[j + 16] = (int8_t)(((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) - offset);
    }
}

static void codes_q5_0(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q5_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++, code += 32) {
        scale[i] = fp16_to_f32(b[i].d);
        set_min(min, i, 0.0f);
        codes_q5(b[i].qs, b[i].qh, 16, code);
    }
}

static void codes_q5_1(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q5_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++, code += 32) {
        scale[i] = fp16_to_f32(b[i].d);
        min[i] = -fp16_to_f32(b[i].m);
        codes_q5(b[i].qs, b[i].qh, 0, code);
    }
}

static void codes_iq4(const uint8_t qs[16], int8_t *code) {
    for (int j = 0; j < 16; j++) {
        code[j] = iq4_levels[qs[j] & 0x0f];
        code[j + 16] = iq4_levels[qs[j] >> 4];
    }
}

static void codes_iq4_nl(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / 32; i++, code += 32) {
        scale[i] = fp16_to_f32(b[i].d);
        set_min(min, i, 0.0f);
        codes_iq4(b[i].qs, code);
    }
}

static void codes_iq4_xs(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_iq4_xs *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d);
        for (int s = 0; s < 8; s++, code += 32) {
            const int ls = ((b[i].scales_l[s / 2] >> 4 * (s % 2)) & 0x0f) | ((b[i].scales_h >> 2 * s) & 3) << 4;
            scale[i * 8 + s] = d * (float)(ls - 32);
            set_min(min, i * 8 + s, 0.0f);
            codes_iq4(b[i].qs + 16 * s, code);
        }
    }
}

static void codes_q2_k(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q2_k *b = src;
    int64_t g = 0;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
        const uint8_t *q = b[i].qs, *sc = b[i].scales;
        for (int half = 0; half < 2; half++, q += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int part = 0; part < 2; part++, sc++, g++, code += 16) {
                    scale[g] = d * (float)(*sc & 0x0f);
                    min[g] = dmin * (float)(*sc >> 4);
                    for (int l = 0; l < 16; l++) code[l] = (int8_t)((q[l + 16 * part] >> shift) & 3);
                }
    }
}

static void codes_q3_k(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q3_k *b = src;
    int64_t g = 0;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d);
        const uint8_t *q = b[i].qs;
        uint8_t m = 1;   // hmask bit of the current group of 32: set means "no -4"
        int s = 0;
        for (int half = 0; half < 2; half++, q += 32)
            for (int shift = 0; shift < 8; shift += 2, m <<= 1)
                for (int part = 0; part < 2; part++, s++, g++, code += 16) {
                    // 6-bit scale s: low 4 bits in byte s%8 (nibble s/8), high 2 in byte 8 + s%4
                    const int lo = (b[i].scales[s % 8] >> (4 * (s / 8))) & 0x0f;
                    const int hi = (b[i].scales[8 + s % 4] >> (2 * (s / 4))) & 3;
                    scale[g] = d * (float)((lo | hi << 4) - 32);
                    set_min(min, g, 0.0f);
                    for (int l = 0; l < 16; l++) {
                        const int k = l + 16 * part;
                        code[l] = (int8_t)(((q[k] >> shift) & 3) - ((b[i].hmask[k] & m) ? 0 : 4));
                    }
                }
    }
}

// Q4_K and Q5_K: 64 weights per 32 code bytes (low nibbles, then high), a (scale, min) pair per
// 32; Q5_K adds bit u of qh[l] as 16.
static void codes_q45_k(uint16_t d16, uint16_t dmin16, const uint8_t scales[12], const uint8_t *q, const uint8_t *qh,
                        int8_t *code, float *scale, float *min) {
    const float d = fp16_to_f32(d16), dmin = fp16_to_f32(dmin16);
    uint8_t u0 = 1, u1 = 2;
    for (int j = 0; j < 8; j += 2, q += 32, u0 <<= 2, u1 <<= 2, code += 64) {
        uint8_t sc0, m0, sc1, m1;
        kquant_scale_min(j, scales, &sc0, &m0);
        kquant_scale_min(j + 1, scales, &sc1, &m1);
        scale[j] = d * sc0, min[j] = dmin * m0;
        scale[j + 1] = d * sc1, min[j + 1] = dmin * m1;
        for (int l = 0; l < 32; l++) {
            code[l] = (int8_t)((q[l] & 0x0f) + (qh && (qh[l] & u0) ? 16 : 0));
            code[l + 32] = (int8_t)((q[l] >> 4) + (qh && (qh[l] & u1) ? 16 : 0));
        }
    }
}

static void codes_q4_k(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q4_k *b = src;
    for (int64_t i = 0; i < n / 256; i++)
        codes_q45_k(b[i].d, b[i].dmin, b[i].scales, b[i].qs, NULL, code + i * 256, scale + i * 8, min + i * 8);
}

static void codes_q5_k(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q5_k *b = src;
    for (int64_t i = 0; i < n / 256; i++)
        codes_q45_k(b[i].d, b[i].dmin, b[i].scales, b[i].qs, b[i].qh, code + i * 256, scale + i * 8, min + i * 8);
}

// Q6_K: w = d * scale * q, evaluated as (d * scale) * q.
static void codes_q6_k(const void *src, int8_t *code, float *scale, float *min, int64_t n) {
    const block_q6_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d);
        const uint8_t *ql = b[i].ql, *qh = b[i].qh;
        for (int g = 0; g < 16; g++) {
            scale[i * 16 + g] = d * (float)b[i].scales[g];
            set_min(min, i * 16 + g, 0.0f);
        }
        int8_t *c = code + i * 256;
        for (int half = 0; half < 2; half++, c += 128, ql += 64, qh += 32)
            for (int l = 0; l < 32; l++) {
                c[l] = (int8_t)(((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32);
                c[l + 32] = (int8_t)(((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32);
                c[l + 64] = (int8_t)(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
                c[l + 96] = (int8_t)(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
            }
    }
}

const wtype_codes *wtype_codes_get(uint32_t type) {
    static const wtype_codes q4_0 = { 32, -8, 7, false, codes_q4_0 };
    static const wtype_codes q8_0 = { 32, -128, 127, false, codes_q8_0 };
    static const wtype_codes q4_1 = { 32, 0, 15, true, codes_q4_1 };
    static const wtype_codes q5_0 = { 32, -16, 15, false, codes_q5_0 };
    static const wtype_codes q5_1 = { 32, 0, 31, true, codes_q5_1 };
    static const wtype_codes iq4_nl = { 32, -127, 113, false, codes_iq4_nl };
    static const wtype_codes iq4_xs = { 32, -127, 113, false, codes_iq4_xs };
    static const wtype_codes q2_k = { 16, 0, 3, true, codes_q2_k };
    static const wtype_codes q3_k = { 16, -4, 3, false, codes_q3_k };
    static const wtype_codes q4_k = { 32, 0, 15, true, codes_q4_k };
    static const wtype_codes q5_k = { 32, 0, 31, true, codes_q5_k };
    static const wtype_codes q6_k = { 16, -32, 31, false, codes_q6_k };
    switch (type) {
    case WT_Q4_0: return &q4_0;
    case WT_Q8_0: return &q8_0;
    case WT_Q4_1: return &q4_1;
    case WT_Q5_0: return &q5_0;
    case WT_Q5_1: return &q5_1;
    case WT_IQ4_NL: return &iq4_nl;
    case WT_IQ4_XS: return &iq4_xs;
    case WT_Q2_K: return &q2_k;
    case WT_Q3_K: return &q3_k;
    case WT_Q4_K: return &q4_k;
    case WT_Q5_K: return &q5_k;
    case WT_Q6_K: return &q6_k;
    default: return NULL;
    }
}
