#version 450
// y[t][r] = sum_i W[r][i] * x[t][i] with one output row per invocation and up to NT tokens per
// workgroup: every invocation of a workgroup reads the same x elements at the same time
// (uniform loads) and its own row's weights, so there is no reduction. This suits CPU
// implementations (lavapipe runs invocations as SIMD lanes, where uniform loads are cheap and
// per-lane loads are gathers); GPUs use matmul.comp, whose invocations read adjacent weights.
// Defines: WTYPE, NT.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Wb { uint W[]; };
layout(binding = 1) readonly buffer Xb { float X[]; };
layout(binding = 2) writeonly buffer Yb { float Y[]; };

layout(push_constant) uniform PC {
    uint K, M, n, x_off, x_stride, y_stride, row_words, scale_off, gx, y_row_off;
} pc;

void main() {
    uint row = (gl_WorkGroupID.x + gl_WorkGroupID.y * pc.gx) * WG + gl_LocalInvocationIndex;
    uint t0 = gl_WorkGroupID.z * NT;
    uint nt = min(NT, pc.n - t0);
    uint r = min(row, pc.M - 1u);   // clamped; not stored
    float acc[NT];
    for (uint t = 0u; t < NT; t++) acc[t] = 0.0;
    uint xb = pc.x_off + t0 * pc.x_stride;
#if WTYPE == WT_F32
    for (uint i = 0u; i < pc.K; i++) {
        float w = uintBitsToFloat(W[r * pc.row_words + i]);
        for (uint t = 0u; t < NT; t++)
            if (t < nt) acc[t] += w * X[xb + t * pc.x_stride + i];
    }
#elif WTYPE == WT_F16 || WTYPE == WT_BF16
    for (uint j = 0u; j < pc.row_words; j++) {
        uint word = W[r * pc.row_words + j];
#if WTYPE == WT_F16
        vec2 w = unpackHalf2x16(word);
#else
        vec2 w = bf16x2(word);
#endif
        uint i = 2u * j;
        bool two = i + 1u < pc.K;
        for (uint t = 0u; t < NT; t++)
            if (t < nt) acc[t] += w.x * X[xb + t * pc.x_stride + i] + (two ? w.y * X[xb + t * pc.x_stride + i + 1u] : 0.0);
    }
#elif WTYPE == WT_Q8_0 || WTYPE == WT_Q4_0 || WTYPE == WT_F8
    uint nb = pc.K / 32u;
    for (uint b = 0u; b < nb; b++) {
        float d = uintBitsToFloat(W[pc.scale_off + r * nb + b]);
#if WTYPE == WT_Q8_0 || WTYPE == WT_F8
        uint q[8];
        for (uint k = 0u; k < 8u; k++) q[k] = W[r * pc.row_words + b * 8u + k];
#else
        uint q[4];
        for (uint k = 0u; k < 4u; k++) q[k] = W[r * pc.row_words + b * 4u + k];
#endif
        for (uint t = 0u; t < NT; t++) {
            if (t >= nt) continue;
            uint xi = xb + t * pc.x_stride + b * 32u;
            float s = 0.0;
#if WTYPE == WT_Q8_0 || WTYPE == WT_F8
            for (uint k = 0u; k < 8u; k++)
                for (uint e = 0u; e < 4u; e++) s += BYTE8(q[k], e) * X[xi + 4u * k + e];
#else
            for (uint k = 0u; k < 4u; k++)
                for (uint e = 0u; e < 4u; e++) {
                    uint byte = (q[k] >> (8u * e)) & 0xffu;
                    uint j = 4u * k + e;
                    s += (float(byte & 15u) - 8.0) * X[xi + j] + (float(byte >> 4u) - 8.0) * X[xi + j + 16u];
                }
#endif
            acc[t] += d * s;
        }
    }
#elif WTYPE == WT_Q4M
    uint nb = pc.K / 32u;
    for (uint b = 0u; b < nb; b++) {
        uint so = pc.scale_off + 2u * (r * nb + b);
        float d = uintBitsToFloat(W[so]), m = uintBitsToFloat(W[so + 1u]);
        uint q[4];
        for (uint k = 0u; k < 4u; k++) q[k] = W[r * pc.row_words + b * 4u + k];
        for (uint t = 0u; t < NT; t++) {
            if (t >= nt) continue;
            uint xi = xb + t * pc.x_stride + b * 32u;
            float s = 0.0, sx = 0.0;
            for (uint k = 0u; k < 4u; k++)
                for (uint e = 0u; e < 4u; e++) {
                    uint byte = (q[k] >> (8u * e)) & 0xffu;
                    uint j = 4u * k + e;
                    float x0 = X[xi + j], x1 = X[xi + j + 16u];
                    s += float(byte & 15u) * x0 + float(byte >> 4u) * x1;
                    sx += x0 + x1;
                }
            acc[t] += d * s - m * sx;
        }
    }
#elif WTYPE == WT_I8M
    uint ng = pc.K / 16u;
    for (uint g = 0u; g < ng; g++) {
        uint so = pc.scale_off + 2u * (r * ng + g);
        float d = uintBitsToFloat(W[so]), m = uintBitsToFloat(W[so + 1u]);
        uint q[4];
        for (uint k = 0u; k < 4u; k++) q[k] = W[r * pc.row_words + g * 4u + k];
        for (uint t = 0u; t < NT; t++) {
            if (t >= nt) continue;
            uint xi = xb + t * pc.x_stride + g * 16u;
            float s = 0.0, sx = 0.0;
            for (uint k = 0u; k < 4u; k++)
                for (uint e = 0u; e < 4u; e++) {
                    float xv = X[xi + 4u * k + e];
                    s += i8(q[k], e) * xv;
                    sx += xv;
                }
            acc[t] += d * s - m * sx;
        }
    }
#else
#error unknown WTYPE
#endif
    if (row < pc.M)
        for (uint t = 0u; t < NT; t++)
            if (t < nt) Y[(t0 + t) * pc.y_stride + pc.y_row_off + row] = acc[t];
}
