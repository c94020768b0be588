#version 450
// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w; one workgroup per row t. x and out may be the
// same buffer (each invocation reads and writes only its own elements, after the reduction).
// Defines: USE_SUBGROUP.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Xb { float X[]; };
layout(binding = 1) readonly buffer Gb { float G[]; };
layout(binding = 2) buffer Ob { float O[]; };

layout(push_constant) uniform PC {
    uint d;          // elements per row
    uint x_stride, out_stride;
    float eps;
} pc;

void main() {
    uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex;
    float ss = 0.0;
    for (uint i = tid; i < pc.d; i += WG) { float v = X[t * pc.x_stride + i]; ss += v * v; }
    ss = wg_sum(ss);
    float scale = 1.0 / sqrt(ss / float(pc.d) + pc.eps);
    for (uint i = tid; i < pc.d; i += WG) O[t * pc.out_stride + i] = X[t * pc.x_stride + i] * scale * G[i];
}
