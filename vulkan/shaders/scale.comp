#version 450
// x[t][i] *= s. Grid: (ceil(cols/64), n).
layout(local_size_x = 64) in;

layout(binding = 0) buffer Xb { float X[]; };

layout(push_constant) uniform PC { uint cols, x_stride; float s; } pc;

void main() {
    uint i = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (i >= pc.cols) return;
    X[t * pc.x_stride + i] *= pc.s;
}
