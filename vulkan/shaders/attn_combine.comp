#version 450
// Merges the nz partial attention records of (head h, token t) written by attention.comp with
// SPLIT=1: out = sum_z e^(m_z - M) acc_z / sum_z e^(m_z - M) l_z, M = max_z m_z. A span that
// holds no slot of a token's causal context has m = -1e30, l = 0 and weighs nothing. (M, L) go to
// ML for attention.comp's statistics pass.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Pb { float P[]; };
layout(binding = 1) writeonly buffer Ob { float O[]; };
layout(binding = 2) writeonly buffer MLb { float ML[]; };   // (n, n_head, 2)

layout(push_constant) uniform PC { uint head_dim, n_head, nz, out_stride; } pc;

void main() {
    uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
    uint hd = pc.head_dim, rec0 = (t * pc.n_head + h) * pc.nz;
    float M = NEG_BIG;
    for (uint z = 0u; z < pc.nz; z++) M = max(M, P[(rec0 + z) * (hd + 2u)]);
    float L = 0.0;
    for (uint z = 0u; z < pc.nz; z++) {
        uint r = (rec0 + z) * (hd + 2u);
        L += exp(P[r] - M) * P[r + 1u];
    }
    if (tid == 0u) { ML[(t * pc.n_head + h) * 2u] = M; ML[(t * pc.n_head + h) * 2u + 1u] = L; }
    for (uint d = tid; d < hd; d += WG) {
        float a = 0.0;
        for (uint z = 0u; z < pc.nz; z++) {
            uint r = (rec0 + z) * (hd + 2u);
            a += exp(P[r] - M) * P[r + 2u + d];
        }
        O[t * pc.out_stride + h * hd + d] = a / L;
    }
}
