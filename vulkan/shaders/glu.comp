#version 450
// gate[t][i] = act(gate[t][i]) * up[t][i], act: silu (act 0) or GELU with the tanh approximation
// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (act 1). Grid: (ceil(cols/64), n).
layout(local_size_x = 64) in;

layout(binding = 0) buffer Gb { float G[]; };
layout(binding = 1) readonly buffer Ub { float U[]; };

layout(push_constant) uniform PC { uint cols, g_stride, u_stride, act; } pc;

void main() {
    uint i = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (i >= pc.cols) return;
    float g = G[t * pc.g_stride + i];
    float a = pc.act == 1u ? 0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) : g / (1.0 + exp(-g));
    G[t * pc.g_stride + i] = a * U[t * pc.u_stride + i];
}
