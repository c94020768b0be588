#version 450
// Rotates pairs of each head of x[t] by the angles of position t: cs[t][i] = (cos, sin) of
// pos[t] * base^(-2i/rope_dim), computed on the host in double precision as the CPU does.
// Normal style rotates (2i, 2i+1); NeoX style (i, i + rope_dim/2). Grid: (ceil(n_heads*half/64), n).
#include "common.glsl"

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
    uint i0 = pc.neox != 0u ? i : 2u * i;
    uint i1 = pc.neox != 0u ? i + pc.half_dim : 2u * i + 1u;
    vec2 cs = CS[t * pc.half_dim + i];
    float a = X[base + i0], b = X[base + i1];
    X[base + i0] = a * cs.x - b * cs.y;
    X[base + i1] = a * cs.y + b * cs.x;
}
