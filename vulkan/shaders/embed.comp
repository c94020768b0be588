#version 450
// out[t][i] = row ids[t] of the embedding matrix, dequantized. Grid: (ceil(K/64), n).
// Defines: WTYPE.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Wb { uint W[]; };
layout(binding = 1) readonly buffer Ib { int ids[]; };
layout(binding = 2) writeonly buffer Ob { float O[]; };

layout(push_constant) uniform PC {
    uint K;          // row length
    uint row_words;
    uint scale_off;
    uint out_stride;
    int row_lo, row_hi;   // rows held by this weight part (big tensors come in parts)
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (i >= pc.K) return;
    int id = ids[t];
    if (id < pc.row_lo || id >= pc.row_hi) return;
    uint row = uint(id - pc.row_lo);
    float v;
#if WTYPE == WT_F32
    v = uintBitsToFloat(W[row * pc.row_words + i]);
#elif WTYPE == WT_F16
    v = unpackHalf2x16(W[row * pc.row_words + i / 2u])[i & 1u];
#elif WTYPE == WT_BF16
    v = bf16x2(W[row * pc.row_words + i / 2u])[i & 1u];
#elif WTYPE == WT_Q8_0 || WTYPE == WT_F8
    uint b = i / 32u, j = i % 32u;
    float d = uintBitsToFloat(W[pc.scale_off + row * (pc.K / 32u) + b]);
    v = d * BYTE8(W[row * pc.row_words + b * 8u + j / 4u], j % 4u);
#elif WTYPE == WT_Q4_0
    uint b = i / 32u, j = i % 32u, jb = j % 16u;
    float d = uintBitsToFloat(W[pc.scale_off + row * (pc.K / 32u) + b]);
    uint byte = (W[row * pc.row_words + b * 4u + jb / 4u] >> (8u * (jb % 4u))) & 0xffu;
    uint q = j < 16u ? (byte & 15u) : (byte >> 4u);
    v = d * (float(q) - 8.0);
#elif WTYPE == WT_Q4M
    uint b = i / 32u, j = i % 32u, jb = j % 16u;
    uint so = pc.scale_off + 2u * (row * (pc.K / 32u) + b);
    uint byte = (W[row * pc.row_words + b * 4u + jb / 4u] >> (8u * (jb % 4u))) & 0xffu;
    uint q = j < 16u ? (byte & 15u) : (byte >> 4u);
    precise float p = uintBitsToFloat(W[so]) * float(q);   // not fused: the host's arithmetic
    v = p - uintBitsToFloat(W[so + 1u]);
#elif WTYPE == WT_I8M
    uint so = pc.scale_off + 2u * (row * (pc.K / 16u) + i / 16u);
    precise float p = uintBitsToFloat(W[so]) * i8(W[row * pc.row_words + i / 4u], i % 4u);
    v = p - uintBitsToFloat(W[so + 1u]);
#else
#error unknown WTYPE
#endif
    O[t * pc.out_stride + i] = v;
}
