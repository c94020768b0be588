#version 450
// y[t][r] = sum_i W[r][i] * x[t][i] for NR rows r and up to NT tokens t per workgroup: each
// invocation walks a strided share of the row's blocks, decodes each weight block once and
// applies it to all NT tokens (weights are reused across tokens; NT = 1 is the matrix x vector
// case), then the workgroup reduces the NR*NT partial sums.
// Defines: WTYPE (weight type id), NR, NT, USE_SUBGROUP.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Wb { uint W[]; };
layout(binding = 1) readonly buffer Xb { float X[]; };
layout(binding = 2) writeonly buffer Yb { float Y[]; };

layout(push_constant) uniform PC {
    uint K;          // row length
    uint M;          // rows
    uint n;          // tokens
    uint x_off;      // index of x[0][0] in X
    uint x_stride;   // floats per x row
    uint y_stride;   // floats per y row
    uint row_words;  // words per weight row
    uint scale_off;  // Q types: word index of the scales
    uint gx;         // workgroups along x (the grid may be 2-D for many rows)
    uint y_row_off;  // output column of this weight part's row 0 (big tensors come in parts)
} pc;

#define NV (NR * NT)
shared float red_m[NV * WG];

void main() {
    uint tid = gl_LocalInvocationIndex;
    uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * pc.gx) * NR;
    uint t0 = gl_WorkGroupID.z * NT;
    float acc[NV];
    for (uint v = 0u; v < NV; v++) acc[v] = 0.0;
    uint rows[NR];
    for (uint r = 0u; r < NR; r++) rows[r] = min(row0 + r, pc.M - 1u);   // clamped; not stored
    uint xb[NT];
    for (uint t = 0u; t < NT; t++) xb[t] = pc.x_off + min(t0 + t, pc.n - 1u) * pc.x_stride;

#if WTYPE == WT_F32
    for (uint i = tid; i < pc.K; i += WG) {
        float w[NR];
        for (uint r = 0u; r < NR; r++) w[r] = uintBitsToFloat(W[rows[r] * pc.row_words + i]);
        for (uint t = 0u; t < NT; t++) {
            float xv = X[xb[t] + i];
            for (uint r = 0u; r < NR; r++) acc[r * NT + t] += w[r] * xv;
        }
    }
#elif WTYPE == WT_F16 || WTYPE == WT_BF16
    for (uint j = tid; j < pc.row_words; j += WG) {
        uint i = 2u * j;
        vec2 w[NR];
        for (uint r = 0u; r < NR; r++) {
            uint word = W[rows[r] * pc.row_words + j];
#if WTYPE == WT_F16
            w[r] = unpackHalf2x16(word);
#else
            w[r] = bf16x2(word);
#endif
        }
        bool two = i + 1u < pc.K;
        for (uint t = 0u; t < NT; t++) {
            vec2 xv = vec2(X[xb[t] + i], two ? X[xb[t] + i + 1u] : 0.0);
            for (uint r = 0u; r < NR; r++) acc[r * NT + t] += dot(w[r], xv);
        }
    }
#elif WTYPE == WT_Q8_0 || WTYPE == WT_F8
    uint nb = pc.K / 32u;
    for (uint b = tid; b < nb; b += WG) {
        for (uint r = 0u; r < NR; r++) {
            uint base = rows[r] * pc.row_words + b * 8u;
            uint q[8];
            for (uint k = 0u; k < 8u; k++) q[k] = W[base + k];
            float d = uintBitsToFloat(W[pc.scale_off + rows[r] * nb + b]);
            for (uint t = 0u; t < NT; t++) {
                uint xi = xb[t] + b * 32u;
                float s = 0.0;
                for (uint k = 0u; k < 8u; k++)
                    for (uint e = 0u; e < 4u; e++) s += BYTE8(q[k], e) * X[xi + 4u * k + e];
                acc[r * NT + t] += d * s;
            }
        }
    }
#elif WTYPE == WT_Q4_0
    uint nb = pc.K / 32u;
    for (uint b = tid; b < nb; b += WG) {
        for (uint r = 0u; r < NR; r++) {
            uint base = rows[r] * pc.row_words + b * 4u;
            uint q[4];
            for (uint k = 0u; k < 4u; k++) q[k] = W[base + k];
            float d = uintBitsToFloat(W[pc.scale_off + rows[r] * nb + b]);
            for (uint t = 0u; t < NT; t++) {
                uint xi = xb[t] + b * 32u;
                float s = 0.0;
                for (uint k = 0u; k < 4u; k++)
                    for (uint e = 0u; e < 4u; e++) {
                        uint byte = (q[k] >> (8u * e)) & 0xffu;
                        uint j = 4u * k + e;
                        s += (float(byte & 15u) - 8.0) * X[xi + j] + (float(byte >> 4u) - 8.0) * X[xi + j + 16u];
                    }
                acc[r * NT + t] += d * s;
            }
        }
    }
#elif WTYPE == WT_Q4M
    uint nb = pc.K / 32u;
    for (uint b = tid; b < nb; b += WG) {
        for (uint r = 0u; r < NR; r++) {
            uint base = rows[r] * pc.row_words + b * 4u;
            uint q[4];
            for (uint k = 0u; k < 4u; k++) q[k] = W[base + k];
            uint so = pc.scale_off + 2u * (rows[r] * nb + b);
            float d = uintBitsToFloat(W[so]), m = uintBitsToFloat(W[so + 1u]);
            for (uint t = 0u; t < NT; t++) {
                uint xi = xb[t] + b * 32u;
                float s = 0.0, sx = 0.0;
                for (uint k = 0u; k < 4u; k++)
                    for (uint e = 0u; e < 4u; e++) {
                        uint byte = (q[k] >> (8u * e)) & 0xffu;
                        uint j = 4u * k + e;
                        float x0 = X[xi + j], x1 = X[xi + j + 16u];
                        s += float(byte & 15u) * x0 + float(byte >> 4u) * x1;
                        sx += x0 + x1;
                    }
                acc[r * NT + t] += d * s - m * sx;
            }
        }
    }
#elif WTYPE == WT_I8M
    uint ng = pc.K / 16u;
    for (uint g = tid; g < ng; g += WG) {
        for (uint r = 0u; r < NR; r++) {
            uint base = rows[r] * pc.row_words + g * 4u;
            uint q[4];
            for (uint k = 0u; k < 4u; k++) q[k] = W[base + k];
            uint so = pc.scale_off + 2u * (rows[r] * ng + g);
            float d = uintBitsToFloat(W[so]), m = uintBitsToFloat(W[so + 1u]);
            for (uint t = 0u; t < NT; t++) {
                uint xi = xb[t] + g * 16u;
                float s = 0.0, sx = 0.0;
                for (uint k = 0u; k < 4u; k++)
                    for (uint e = 0u; e < 4u; e++) {
                        float xv = X[xi + 4u * k + e];
                        s += i8(q[k], e) * xv;
                        sx += xv;
                    }
                acc[r * NT + t] += d * s - m * sx;
            }
        }
    }
#else
#error unknown WTYPE
#endif

#if USE_SUBGROUP
    for (uint v = 0u; v < NV; v++) {
        float s = subgroupAdd(acc[v]);
        if (subgroupElect()) red_m[v * WG + gl_SubgroupID] = s;
    }
    barrier();
    if (tid < NV) {
        float s = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; i++) s += red_m[tid * WG + i];
        red_m[tid * WG] = s;
    }
#else
    for (uint v = 0u; v < NV; v++) red_m[v * WG + tid] = acc[v];
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s)
            for (uint v = 0u; v < NV; v++) red_m[v * WG + tid] += red_m[v * WG + tid + s];
        barrier();
    }
#endif
    if (tid < NV) {
        uint r = tid / NT, t = tid % NT;
        if (row0 + r < pc.M && t0 + t < pc.n) Y[(t0 + t) * pc.y_stride + pc.y_row_off + row0 + r] = red_m[tid * WG];
    }
}
