#version 450
// Rotates pairs of each head of x[t] by the angles of position t: cs[t][i] = (cos, sin) of pair
// i, made on the host by engine/rope.h's rope_cos_sin as the CPU makes them. The pairs are
// engine/rope.h's: normal style (2i, 2i+1), NeoX style (i, i + rope_dim/2).
// Grid: (ceil(n_heads*half/64), n).
#include "common.glsl"
#include "../../engine/rope.h"

layout(local_size_x = 64) in;

layout(binding = 0) buffer Xb { float X[]; };
layout(binding = 1) readonly buffer Cb { vec2 CS[]; };

layout(push_constant) uniform PC {
    uint n_heads, head_dim, half_dim, neox, stride;
} pc;

void main() {
    uint g = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (g >= pc.n_heads * pc.half_dim) return;
    uint h = g / pc.half_dim, i = g % pc.half_dim;
    uint base = t * pc.stride + h * pc.head_dim;
    uint i0 = ROPE_PAIR_FIRST(i, pc.half_dim, pc.neox != 0u);
    uint i1 = ROPE_PAIR_SECOND(i, pc.half_dim, pc.neox != 0u);
    vec2 cs = CS[t * pc.half_dim + i];
    float a = X[base + i0], b = X[base + i1];
    X[base + i0] = a * cs.x - b * cs.y;
    X[base + i1] = a * cs.y + b * cs.x;
}
