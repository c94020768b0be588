#version 450
// K[slots[t]] = k[t], V[slots[t]] = v[t], converted to the cache format; one invocation per pair
// of elements (kv_dim is even: heads have even size). Grid: (ceil(kv_dim/2/64), n).
// Defines: KV_F16 (1: fp16 cache, 0: f32).
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Kab { float KA[]; };
layout(binding = 1) readonly buffer Vab { float VA[]; };
layout(binding = 2) writeonly buffer Kb { uint K[]; };
layout(binding = 3) writeonly buffer Vb { uint V[]; };
layout(binding = 4) readonly buffer Sb { int slots[]; };

layout(push_constant) uniform PC {
    uint kv_dim, k_stride, v_stride;
} pc;

void main() {
    uint p = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (2u * p >= pc.kv_dim) return;
    uint s = uint(slots[t]);
    vec2 k = vec2(KA[t * pc.k_stride + 2u * p], KA[t * pc.k_stride + 2u * p + 1u]);
    vec2 v = vec2(VA[t * pc.v_stride + 2u * p], VA[t * pc.v_stride + 2u * p + 1u]);
#if KV_F16
    K[s * (pc.kv_dim / 2u) + p] = packHalf2x16(k);
    V[s * (pc.kv_dim / 2u) + p] = packHalf2x16(v);
#else
    uint o = s * pc.kv_dim + 2u * p;
    K[o] = floatBitsToUint(k.x); K[o + 1u] = floatBitsToUint(k.y);
    V[o] = floatBitsToUint(v.x); V[o + 1u] = floatBitsToUint(v.y);
#endif
}
