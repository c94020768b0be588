// K-quant quantizers (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) from F32 rows: super-blocks of 256 weights.
// Each sub-block's scale (and min) is searched first in float; the sub-block scales are then
// quantized against the super-block's fp16 scale, and every weight is requantized against the
// scale it will really be decoded with. Layouts in engine/wtype.h; the arithmetic (float, in
// the order written) reproduces the established GGUF quantizer without an importance matrix.
// With importances (the _weighted forms) the same searches weigh each weight's error by its
// input column's importance.
#include "engine/quantize.h"
#include "engine/calibrate.h"
#include "engine/wtype.h"
#include "engine/half.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define GROUP_EPS 1e-15f   // a group whose largest magnitude is below this is all zeros

int quant_nearest_int(float x) {
    if (x > 4194303.0f) x = 4194303.0f;
    if (x < -4194303.0f) x = -4194303.0f;
    return (int)lrintf(x);   // the default rounding mode: nearest, ties to even
}

static int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// Fits x[0..n) (n <= 32) as scale * L + min with L in 0..nmax and min <= 0, weights w:
// levels from the group's own range first; then nstep+1 candidate level spacings
// ((nmax + rmin + rdelta*is) levels over the range), each refitted for scale and min in closed
// form (weighted least squares) on its levels; the lowest weighted error wins (squared error,
// or absolute error when abs_err). Returns the scale; *neg_min gets -min (>= 0).
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min,
                           float rmin, float rdelta, int nstep, bool abs_err) {
    uint8_t trial[32];
    float min = x[0], max = x[0], sum_w = 0, sum_x = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_err = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clamp_int(quant_nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        diff = abs_err ? fabsf(diff) : diff * diff;
        best_err += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            const int l = clamp_int(quant_nearest_int(iscale * (x[i] - min)), 0, nmax);
            trial[i] = (uint8_t)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; i++) {
            float diff = this_scale * trial[i] + this_min - x[i];
            diff = abs_err ? fabsf(diff) : diff * diff;
            err += w[i] * diff;
        }
        if (err < best_err) {
            memcpy(L, trial, (size_t)n);
            best_err = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *neg_min = -min;
    return scale;
}

// Symmetric fit of x[0..n) as scale * l, l in -nmax..nmax-1 (L = l + nmax), weights w: the
// largest magnitude mapped to -nmax, the scale refitted by weighted least squares; then the
// spacings nmax ± 0.1..0.9 tried, keeping the one whose refitted scale leaves the lowest
// weighted error (the largest sumlx²/suml2). Returns the scale.
static float fit_scale_symmetric(int n, int nmax, const float *x, const float *w, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (amax < GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = clamp_int(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        sumlx += w[i] * x[i] * (float)l;
        suml2 += w[i] * (float)l * (float)l;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            const int l = clamp_int(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            sumlx += w[i] * x[i] * (float)l;
            suml2 += w[i] * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clamp_int(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// Q3_K's group fit (16 weights, l in -4..3, L = l + 4): levels from the largest magnitude mapped
// to -4, then up to 5 passes that move single weights to the level that lowers the weighted
// error at the refitted scale. Returns the scale.
static float fit_scale_q3(const float *x, const float *w, int8_t *L) {
    enum { N = 16, NMAX = 4 };
    float max = 0, amax = 0;
    for (int i = 0; i < N; i++)
        if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (amax < GROUP_EPS) {
        memset(L, 0, N);
        return 0.0f;
    }
    const float iscale = (float)-NMAX / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < N; i++) {
        const int l = clamp_int(quant_nearest_int(iscale * x[i]), -NMAX, NMAX - 1);
        L[i] = (int8_t)l;
        sumlx += w[i] * x[i] * (float)l;
        suml2 += w[i] * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < N; i++) {
            float slx = sumlx - w[i] * x[i] * (float)L[i];
            if (!(slx > 0)) continue;
            float sl2 = suml2 - w[i] * (float)L[i] * (float)L[i];
            const int l = clamp_int(quant_nearest_int(x[i] * sl2 / slx), -NMAX, NMAX - 1);
            if (l == L[i]) continue;
            slx += w[i] * x[i] * (float)l;
            sl2 += w[i] * (float)l * (float)l;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)l;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < N; i++) L[i] = (int8_t)(L[i] + NMAX);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// imp[i] as a float factor on weight w (imp == NULL: w unchanged).
static float weigh(float w, const double *imp, int i) { return imp ? w * (float)imp[i] : w; }

// ---- Q2_K: 16 groups of 16, 4-bit scale and min under fp16 d and dmin, 2-bit levels ----
static void q2_k_block(const float *x, const double *imp, block_q2_k *y) {
    uint8_t L[256];
    float w[16], scales[16], mins[16], max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; j++) {
        for (int l = 0; l < 16; l++) w[l] = weigh(fabsf(x[16 * j + l]), imp, 16 * j + l);
        scales[j] = fit_scale_min(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    memset(y->scales, 0, sizeof y->scales);
    y->d = y->dmin = f32_to_fp16(0.0f);
    if (max_scale > 0) {
        const float iscale = 15.0f / max_scale;
        for (int j = 0; j < 16; j++) y->scales[j] = (uint8_t)quant_nearest_int(iscale * scales[j]);
        y->d = f32_to_fp16(max_scale / 15.0f);
    }
    if (max_min > 0) {
        const float iscale = 15.0f / max_min;
        for (int j = 0; j < 16; j++) y->scales[j] |= (uint8_t)((unsigned)quant_nearest_int(iscale * mins[j]) << 4);
        y->dmin = f32_to_fp16(max_min / 15.0f);
    }
    for (int j = 0; j < 16; j++) {
        const float d = fp16_to_f32(y->d) * (float)(y->scales[j] & 0x0f);
        if (d == 0) continue;
        const float dm = fp16_to_f32(y->dmin) * (float)(y->scales[j] >> 4);
        for (int i = 0; i < 16; i++)
            L[16 * j + i] = (uint8_t)clamp_int(quant_nearest_int((x[16 * j + i] + dm) / d), 0, 3);
    }
    for (int h = 0; h < 256; h += 128)
        for (int l = 0; l < 32; l++)
            y->qs[h / 4 + l] = (uint8_t)(L[h + l] | L[h + l + 32] << 2 | L[h + l + 64] << 4 | L[h + l + 96] << 6);
}

// ---- Q3_K: 16 groups of 16, 6-bit signed scales under fp16 d, 3-bit levels ----
static void q3_k_block(const float *x, const double *imp, block_q3_k *y) {
    int8_t L[256];
    float w[16], scales[16], max_scale = 0, amax = 0;
    for (int j = 0; j < 16; j++) {
        for (int l = 0; l < 16; l++) w[l] = weigh(x[16 * j + l] * x[16 * j + l], imp, 16 * j + l);
        scales[j] = fit_scale_q3(x + 16 * j, w, L + 16 * j);
        if (fabsf(scales[j]) > amax) { amax = fabsf(scales[j]); max_scale = scales[j]; }
    }
    memset(y->scales, 0, sizeof y->scales);
    y->d = f32_to_fp16(0.0f);
    if (max_scale != 0) {
        const float iscale = -32.0f / max_scale;
        for (int j = 0; j < 16; j++) {   // layout: engine/wtype_kquant.c q3_k_decode
            const int l = clamp_int((int8_t)quant_nearest_int(iscale * scales[j]), -32, 31) + 32;
            if (j < 8) y->scales[j] = (uint8_t)(l & 0x0f);
            else y->scales[j - 8] |= (uint8_t)((l & 0x0f) << 4);
            y->scales[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        y->d = f32_to_fp16(1 / iscale);
    }
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? y->scales[j] & 0x0f : y->scales[j - 8] >> 4;
        const int sc = (lo | ((y->scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
        const float d = fp16_to_f32(y->d) * (float)sc;
        if (d == 0) continue;
        for (int i = 0; i < 16; i++)
            L[16 * j + i] = (int8_t)(clamp_int(quant_nearest_int(x[16 * j + i] / d), -4, 3) + 4);
    }
    // hmask bit b of byte m: weight 32*b + m has level >= 4 (stored as level - 4)
    memset(y->hmask, 0, sizeof y->hmask);
    for (int j = 0; j < 256; j++)
        if (L[j] > 3) {
            y->hmask[j % 32] |= (uint8_t)(1u << (j / 32));
            L[j] = (int8_t)(L[j] - 4);
        }
    for (int h = 0; h < 256; h += 128)
        for (int l = 0; l < 32; l++)
            y->qs[h / 4 + l] = (uint8_t)(L[h + l] | L[h + l + 32] << 2 | L[h + l + 64] << 4 | L[h + l + 96] << 6);
}

// ---- Q4_K / Q5_K: 8 groups of 32, 6-bit (scale, min) pairs under fp16 d and dmin ----
// Fits the groups (levels 0..nmax), packs the pairs into scales[12] (layout: kquant_scale_min)
// and requantizes L[256] against the stored scales.
static void q45_k_block(const float *x, const double *imp, int nmax, float rmin, int nstep, uint16_t *d_out,
                        uint16_t *dmin_out, uint8_t packed[12], uint8_t L[256]) {
    float w[32], scales[8], mins[8], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        const float *xg = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += xg[l] * xg[l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = weigh(av_x + fabsf(xg[l]), imp, 32 * j + l);
        scales[j] = fit_scale_min(32, nmax, xg, w, L + 32 * j, &mins[j], rmin, 0.1f, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    memset(packed, 0, 12);
    for (int j = 0; j < 8; j++) {
        uint8_t ls = (uint8_t)quant_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)quant_nearest_int(inv_min * mins[j]);
        if (ls > 63) ls = 63;
        if (lm > 63) lm = 63;
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = (uint8_t)((ls & 0x0f) | (lm & 0x0f) << 4);
            packed[j - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d_out = f32_to_fp16(max_scale / 63.0f);
    *dmin_out = f32_to_fp16(max_min / 63.0f);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        kquant_scale_min(j, packed, &sc, &m);
        const float d = fp16_to_f32(*d_out) * (float)sc;
        if (d == 0) continue;
        const float dm = fp16_to_f32(*dmin_out) * (float)m;
        for (int i = 0; i < 32; i++)
            L[32 * j + i] = (uint8_t)clamp_int(quant_nearest_int((x[32 * j + i] + dm) / d), 0, nmax);
    }
}

static void q4_k_block(const float *x, const double *imp, block_q4_k *y) {
    uint8_t L[256];
    q45_k_block(x, imp, 15, -1.0f, 20, &y->d, &y->dmin, y->scales, L);
    for (int h = 0; h < 4; h++)   // 64 weights: low nibbles the first 32, high the next
        for (int l = 0; l < 32; l++) y->qs[32 * h + l] = (uint8_t)(L[64 * h + l] | L[64 * h + l + 32] << 4);
}

static void q5_k_block(const float *x, const double *imp, block_q5_k *y) {
    uint8_t L[256];
    q45_k_block(x, imp, 31, -0.5f, 15, &y->d, &y->dmin, y->scales, L);
    memset(y->qh, 0, sizeof y->qh);
    for (int h = 0; h < 4; h++)   // as Q4_K; the 5th bits of the pair of groups in qh bits 2h, 2h+1
        for (int l = 0; l < 32; l++) {
            const int lo = L[64 * h + l], hi = L[64 * h + l + 32];
            y->qs[32 * h + l] = (uint8_t)((lo & 0x0f) | (hi & 0x0f) << 4);
            y->qh[l] |= (uint8_t)((lo >> 4) << (2 * h) | (hi >> 4) << (2 * h + 1));
        }
}

// ---- Q6_K: 16 groups of 16, int8 scales under fp16 d, 6-bit levels ----
static void q6_k_block(const float *x, const double *imp, block_q6_k *y) {
    int8_t L[256];
    float w[16], scales[16], max_scale = 0, max_abs = 0;
    for (int j = 0; j < 16; j++) {
        for (int l = 0; l < 16; l++) w[l] = weigh(x[16 * j + l] * x[16 * j + l], imp, 16 * j + l);
        scales[j] = fit_scale_symmetric(16, 32, x + 16 * j, w, L + 16 * j);
        if (fabsf(scales[j]) > max_abs) { max_abs = fabsf(scales[j]); max_scale = scales[j]; }
    }
    if (max_abs < GROUP_EPS) {
        memset(y, 0, sizeof *y);
        return;
    }
    const float iscale = -128.0f / max_scale;
    y->d = f32_to_fp16(1 / iscale);
    for (int j = 0; j < 16; j++) {
        const int s = quant_nearest_int(iscale * scales[j]);
        y->scales[j] = (int8_t)(s > 127 ? 127 : s);
    }
    for (int j = 0; j < 16; j++) {
        const float d = fp16_to_f32(y->d) * (float)y->scales[j];
        if (d == 0) continue;
        for (int i = 0; i < 16; i++)
            L[16 * j + i] = (int8_t)(clamp_int(quant_nearest_int(x[16 * j + i] / d), -32, 31) + 32);
    }
    for (int h = 0; h < 2; h++) {   // 128 weights: ql low nibbles of groups of 32 (0,1), high (2,3)
        const int8_t *q = L + 128 * h;
        uint8_t *ql = y->ql + 64 * h, *qh = y->qh + 32 * h;
        for (int l = 0; l < 32; l++) {
            ql[l] = (uint8_t)((q[l] & 0x0f) | (q[l + 64] & 0x0f) << 4);
            ql[l + 32] = (uint8_t)((q[l + 32] & 0x0f) | (q[l + 96] & 0x0f) << 4);
            qh[l] = (uint8_t)(q[l] >> 4 | (q[l + 32] >> 4) << 2 | (q[l + 64] >> 4) << 4 | (q[l + 96] >> 4) << 6);
        }
    }
}

#define KQUANT_ROW(name, block_t)                                                             \
    void quantize_row_##name##_weighted(const float *src, const double *imp, void *dst, int64_t n) { \
        block_t *y = dst;                                                                     \
        for (int64_t i = 0; i < n / QK_K; i++) name##_block(src + i * QK_K, imp ? imp + i * QK_K : NULL, &y[i]); \
    }                                                                                         \
    void quantize_row_##name##_ref(const float *src, void *dst, int64_t n) {                  \
        quantize_row_##name##_weighted(src, NULL, dst, n);                                    \
    }

KQUANT_ROW(q2_k, block_q2_k)
KQUANT_ROW(q3_k, block_q3_k)
KQUANT_ROW(q4_k, block_q4_k)
KQUANT_ROW(q5_k, block_q5_k)
KQUANT_ROW(q6_k, block_q6_k)

uint32_t quant_fit_type(uint32_t type, int64_t ne0) {
    const wtype_info *ti = wtype_get(type);
    if (ti && ne0 % ti->block_size == 0) return type;
    uint32_t fallback;
    switch (type) {
    case WT_Q4_K: fallback = WT_Q5_0; break;
    case WT_Q5_K: fallback = WT_Q5_1; break;
    case WT_Q6_K: fallback = WT_Q8_0; break;
    case WT_Q2_K: case WT_Q3_K: case WT_IQ4_XS: fallback = WT_IQ4_NL; break;
    default: return UINT32_MAX;
    }
    return ne0 % wtype_get(fallback)->block_size == 0 ? fallback : WT_F16;
}

quantize_weighted_fn quantize_weighted_for(uint32_t type) {
    switch (type) {
    case WT_Q4_0: return quantize_row_q4_0_weighted;
    case WT_Q2_K: return quantize_row_q2_k_weighted;
    case WT_Q3_K: return quantize_row_q3_k_weighted;
    case WT_Q4_K: return quantize_row_q4_k_weighted;
    case WT_Q5_K: return quantize_row_q5_k_weighted;
    case WT_Q6_K: return quantize_row_q6_k_weighted;
    default: return NULL;
    }
}
