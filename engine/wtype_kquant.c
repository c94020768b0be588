// K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K): super-blocks of 256 weights in sub-blocks of 16 or 32,
// each sub-block with its own small integer scale (and min) under the super-block's fp16 scales.
// Scalar dequantization, bit for bit the GGUF block layouts (engine/wtype.h gives each layout).
// The low bits of a weight sit in 128-weight halves: byte l of a half's 32 (Q2_K, Q3_K: 2 bits
// at shift 2j for the j-th group of 32) or 64 (Q4_K, Q5_K, Q6_K: nibbles) code bytes.
#include "engine/wtype.h"
#include "engine/half.h"

#include <math.h>
#include <string.h>

void dequantize_row_q2_k(const void *src, float *dst, int64_t n) {
    const block_q2_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
        const uint8_t *q = b[i].qs, *sc = b[i].scales;   // scale byte: low nibble scale, high min
        for (int half = 0; half < 2; half++, q += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int part = 0; part < 2; part++, sc++, dst += 16) {
                    const float dl = d * (float)(*sc & 0x0f), ml = dmin * (float)(*sc >> 4);
                    for (int l = 0; l < 16; l++) dst[l] = dl * (float)((q[l + 16 * part] >> shift) & 3) - ml;
                }
    }
}

// Q3_K's 16 six-bit scales in 12 bytes: scale s has its low 4 bits in byte s%8 (nibble s/8) and
// its high 2 bits in byte 8 + s%4 (bits 2*(s/4), +1); stored with an offset of 32.
static void q3_k_scales(const uint8_t packed[12], int8_t out[16]) {
    for (int s = 0; s < 16; s++) {
        const int lo = (packed[s % 8] >> (4 * (s / 8))) & 0x0f;
        const int hi = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
        out[s] = (int8_t)((lo | hi << 4) - 32);
    }
}

void dequantize_row_q3_k(const void *src, float *dst, int64_t n) {
    const block_q3_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d);
        int8_t scales[16];
        q3_k_scales(b[i].scales, scales);
        const uint8_t *q = b[i].qs;
        int s = 0;
        uint8_t m = 1;   // hmask bit of the current group of 32: set means "no -4"
        for (int half = 0; half < 2; half++, q += 32)
            for (int shift = 0; shift < 8; shift += 2, m <<= 1)
                for (int part = 0; part < 2; part++, s++, dst += 16) {
                    const float dl = d * (float)scales[s];
                    for (int l = 0; l < 16; l++) {
                        const int k = l + 16 * part;
                        const int v = ((q[k] >> shift) & 3) - ((b[i].hmask[k] & m) ? 0 : 4);
                        dst[l] = dl * (float)v;
                    }
                }
    }
}

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

void dequantize_row_q4_k(const void *src, float *dst, int64_t n) {
    const block_q4_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
        const uint8_t *q = b[i].qs;
        for (int j = 0; j < 8; j += 2, q += 32) {   // 64 weights: low nibbles, then high
            uint8_t sc0, m0, sc1, m1;
            kquant_scale_min(j, b[i].scales, &sc0, &m0);
            kquant_scale_min(j + 1, b[i].scales, &sc1, &m1);
            const float d0 = d * sc0, n0 = dmin * m0, d1 = d * sc1, n1 = dmin * m1;
            for (int l = 0; l < 32; l++) *dst++ = d0 * (float)(q[l] & 0x0f) - n0;
            for (int l = 0; l < 32; l++) *dst++ = d1 * (float)(q[l] >> 4) - n1;
        }
    }
}

void dequantize_row_q5_k(const void *src, float *dst, int64_t n) {
    const block_q5_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
        const uint8_t *q = b[i].qs, *qh = b[i].qh;
        uint8_t u0 = 1, u1 = 2;   // qh bits of the current 64 weights' two groups
        for (int j = 0; j < 8; j += 2, q += 32, u0 <<= 2, u1 <<= 2) {
            uint8_t sc0, m0, sc1, m1;
            kquant_scale_min(j, b[i].scales, &sc0, &m0);
            kquant_scale_min(j + 1, b[i].scales, &sc1, &m1);
            const float d0 = d * sc0, n0 = dmin * m0, d1 = d * sc1, n1 = dmin * m1;
            for (int l = 0; l < 32; l++) *dst++ = d0 * (float)((q[l] & 0x0f) + (qh[l] & u0 ? 16 : 0)) - n0;
            for (int l = 0; l < 32; l++) *dst++ = d1 * (float)((q[l] >> 4) + (qh[l] & u1 ? 16 : 0)) - n1;
        }
    }
}

void dequantize_row_q6_k(const void *src, float *dst, int64_t n) {
    const block_q6_k *b = src;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = fp16_to_f32(b[i].d);
        const uint8_t *ql = b[i].ql, *qh = b[i].qh;
        const int8_t *sc = b[i].scales;
        for (int half = 0; half < 2; half++, dst += 128, ql += 64, qh += 32, sc += 8)
            for (int l = 0; l < 32; l++) {
                const int s = l / 16;
                const int q1 = ((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                dst[l] = d * (float)sc[s] * (float)q1;
                dst[l + 32] = d * (float)sc[s + 2] * (float)q2;
                dst[l + 64] = d * (float)sc[s + 4] * (float)q3;
                dst[l + 96] = d * (float)sc[s + 6] * (float)q4;
            }
    }
}

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
