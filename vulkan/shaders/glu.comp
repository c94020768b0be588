#version 450
// gate[t][i] = silu(gate[t][i]) * up[t][i]. Grid: (ceil(cols/64), n).
layout(local_size_x = 64) in;

layout(binding = 0) buffer Gb { float G[]; };
layout(binding = 1) readonly buffer Ub { float U[]; };

layout(push_constant) uniform PC { uint cols, g_stride, u_stride; } pc;

void main() {
    uint i = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (i >= pc.cols) return;
    float g = G[t * pc.g_stride + i];
    G[t * pc.g_stride + i] = g / (1.0 + exp(-g)) * U[t * pc.u_stride + i];
}
