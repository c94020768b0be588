// Quantizers from F32 rows to the 32-weight types beyond Q4_0/Q8_0 (Q4_1, Q5_0, Q5_1, IQ4_NL)
// and IQ4_XS (IQ4_NL's grid in 8 sub-blocks of 32 under 6-bit scales). Layouts in
// engine/wtype.h; the arithmetic (float, in the order written) reproduces the established GGUF
// quantizer without an importance matrix. Within a 32-weight block, nibble byte j holds weight j
// (low) and weight j+16 (high).
#include "engine/quantize.h"
#include "engine/wtype.h"
#include "engine/half.h"

#include <float.h>
#include <math.h>
#include <string.h>

// Q4_1 / Q5_1: d = (max - min) / (2^bits - 1), m = min, q = x's position on that grid
// (truncating x/d + 0.5; Q4_1 clamps at 15, Q5_1's top lands at 31 by construction).
static void min_max(const float *x, float *min, float *max) {
    *min = FLT_MAX;
    *max = -FLT_MAX;
    for (int j = 0; j < 32; j++) {
        if (x[j] < *min) *min = x[j];
        if (x[j] > *max) *max = x[j];
    }
}

void quantize_row_q4_1_ref(const float *src, void *dst, int64_t n) {
    block_q4_1 *y = dst;
    for (int64_t i = 0; i < n / 32; i++, src += 32) {
        float min, max;
        min_max(src, &min, &max);
        const float d = (max - min) / 15.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        y[i].m = f32_to_fp16(min);
        for (int j = 0; j < 16; j++) {
            int q0 = (int8_t)((src[j] - min) * id + 0.5f), q1 = (int8_t)((src[j + 16] - min) * id + 0.5f);
            if (q0 > 15) q0 = 15;
            if (q1 > 15) q1 = 15;
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void quantize_row_q5_1_ref(const float *src, void *dst, int64_t n) {
    block_q5_1 *y = dst;
    for (int64_t i = 0; i < n / 32; i++, src += 32) {
        float min, max;
        min_max(src, &min, &max);
        const float d = (max - min) / 31.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        y[i].m = f32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const uint8_t q0 = (uint8_t)((src[j] - min) * id + 0.5f), q1 = (uint8_t)((src[j + 16] - min) * id + 0.5f);
            y[i].qs[j] = (uint8_t)((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= (uint32_t)(q0 >> 4 & 1) << j | (uint32_t)(q1 >> 4 & 1) << (j + 16);
        }
        for (int b = 0; b < 4; b++) y[i].qh[b] = (uint8_t)(qh >> (8 * b));
    }
}

// Q5_0: the weight of largest magnitude (keeping its sign) maps to -16: d = max / -16,
// q = min(31, trunc(x/d + 16.5)).
void quantize_row_q5_0_ref(const float *src, void *dst, int64_t n) {
    block_q5_0 *y = dst;
    for (int64_t i = 0; i < n / 32; i++, src += 32) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; j++)
            if (amax < fabsf(src[j])) { amax = fabsf(src[j]); max = src[j]; }
        const float d = max / -16.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = (int8_t)(src[j] * id + 16.5f), q1 = (int8_t)(src[j + 16] * id + 16.5f);
            if (q0 > 31) q0 = 31;
            if (q1 > 31) q1 = 31;
            y[i].qs[j] = (uint8_t)((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= (uint32_t)(q0 >> 4 & 1) << j | (uint32_t)(q1 >> 4 & 1) << (j + 16);
        }
        for (int b = 0; b < 4; b++) y[i].qh[b] = (uint8_t)(qh >> (8 * b));
    }
}

// The iq4_levels index nearest x (ties toward the higher level only when strictly nearer).
static int nearest_level(float x) {
    if (x <= iq4_levels[0]) return 0;
    if (x >= iq4_levels[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < iq4_levels[mid]) hi = mid;
        else lo = mid;
    }
    return x - iq4_levels[hi - 1] < iq4_levels[hi] - x ? hi - 1 : hi;
}

// One 32-weight sub-block of IQ4_NL/IQ4_XS, weights w: the largest magnitude mapped to the
// grid's end (-127), the scale refitted by weighted least squares; then 15 spacings around it
// ((t - 127) / max for t in -7..7), keeping the one with the lowest weighted error at its
// refitted scale. Returns the scale (0 for an all-zero block); L gets levels (only when the
// block is not all zeros).
static float iq4_block_scale(const float *x, const float *w, uint8_t *L) {
    enum { NTRY = 7 };
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
    if (amax < 1e-15f) return 0.0f;
    float d = -max / iq4_levels[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; j++) {
        const int l = nearest_level(id * x[j]);
        L[j] = (uint8_t)l;
        const float q = iq4_levels[l];
        sumqx += w[j] * q * x[j];
        sumq2 += w[j] * q * q;
    }
    d = sumqx / sumq2;
    float best = d * sumqx;
    for (int t = -NTRY; t <= NTRY; t++) {
        id = (float)(t + iq4_levels[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; j++) {
            const float q = iq4_levels[nearest_level(id * x[j])];
            sumqx += w[j] * q * x[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

static void pack_nibbles_32(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
}

void quantize_row_iq4_nl_ref(const float *src, void *dst, int64_t n) {
    block_iq4_nl *y = dst;
    for (int64_t i = 0; i < n / 32; i++, src += 32) {
        float w[32];
        uint8_t L[32];
        for (int j = 0; j < 32; j++) w[j] = src[j] * src[j];
        const float d = iq4_block_scale(src, w, L);
        y[i].d = f32_to_fp16(d);
        // the levels for the scale as found (before fp16 rounding)
        const float id = d != 0 ? 1 / d : 0;
        for (int j = 0; j < 32; j++) L[j] = (uint8_t)nearest_level(id * src[j]);
        pack_nibbles_32(L, y[i].qs);
    }
}

void quantize_row_iq4_xs_ref(const float *src, void *dst, int64_t n) {
    block_iq4_xs *y = dst;
    for (int64_t i = 0; i < n / 256; i++, src += 256) {
        float w[32], scales[8], max_scale = 0, amax_scale = 0;
        uint8_t L[256];
        memset(L, 0, sizeof L);
        for (int b = 0; b < 8; b++) {
            const float *x = src + 32 * b;
            for (int j = 0; j < 32; j++) w[j] = x[j] * x[j];
            scales[b] = iq4_block_scale(x, w, L + 32 * b);
            if (fabsf(scales[b]) > amax_scale) { amax_scale = fabsf(scales[b]); max_scale = scales[b]; }
        }
        // sub-block scales as 6-bit integers (offset 32) of d = -max_scale / 32
        const float d = -max_scale / 32;
        const float id = d != 0 ? 1 / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        y[i].scales_h = 0;
        memset(y[i].scales_l, 0, sizeof y[i].scales_l);
        for (int b = 0; b < 8; b++) {
            int l = quant_nearest_int(id * scales[b]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            const float dl = d * (float)l;
            const float idl = dl != 0 ? 1 / dl : 0.0f;
            for (int j = 0; j < 32; j++) L[32 * b + j] = (uint8_t)nearest_level(idl * src[32 * b + j]);
            l += 32;
            y[i].scales_l[b / 2] |= (uint8_t)((l & 0x0f) << (4 * (b % 2)));
            y[i].scales_h |= (uint16_t)((l >> 4) << (2 * b));
        }
        for (int b = 0; b < 8; b++) pack_nibbles_32(L + 32 * b, y[i].qs + 16 * b);
    }
}
