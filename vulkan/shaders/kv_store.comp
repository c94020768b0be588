#version 450
// K[slots[t]] = rope(k[t], slots[t]), V[slots[t]] = v[t], converted to the cache format; one
// invocation per pair of elements (kv_dim is even: heads have even size). Grid:
// (ceil(kv_dim/2/64), n). Keys arrive un-rotated (engine/kv_cache.h); this device copy keeps them
// rotated by their slot (slots never move on the device: eviction runs on the cpu backend), which
// equals the cpu's rotation at attention time. RT: (n, half, 2) cos/sin of slots[t] (rope != 0).
// Defines: KV_F16 (1: fp16 cache, 0: f32).
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Kab { float KA[]; };
layout(binding = 1) readonly buffer Vab { float VA[]; };
layout(binding = 2) writeonly buffer Kb { uint K[]; };
layout(binding = 3) writeonly buffer Vb { uint V[]; };
layout(binding = 4) readonly buffer Sb { int slots[]; };
layout(binding = 5) readonly buffer Rb { float RT[]; };

layout(push_constant) uniform PC {
    uint kv_dim, k_stride, v_stride;
    uint head_dim, half_, neox, rope;   // rope: 1 = rotate keys (half_ pairs per head)
} pc;

// element e of token t's key row, rotated by its slot
float key_at(uint t, uint e) {
    float x = KA[t * pc.k_stride + e];
    if (pc.rope == 0u) return x;
    uint h0 = (e / pc.head_dim) * pc.head_dim, d = e - h0;
    uint i, partner;
    bool first;
    if (pc.neox != 0u) {
        if (d >= 2u * pc.half_) return x;
        first = d < pc.half_;
        i = first ? d : d - pc.half_;
        partner = first ? d + pc.half_ : d - pc.half_;
    } else {
        if (d >= 2u * pc.half_) return x;
        first = (d & 1u) == 0u;
        i = d / 2u;
        partner = d ^ 1u;
    }
    float y = KA[t * pc.k_stride + h0 + partner];
    float c = RT[(t * pc.half_ + i) * 2u], s = RT[(t * pc.half_ + i) * 2u + 1u];
    return first ? x * c - y * s : y * s + x * c;
}

void main() {
    uint p = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (2u * p >= pc.kv_dim) return;
    uint s = uint(slots[t]);
    vec2 k = vec2(key_at(t, 2u * p), key_at(t, 2u * p + 1u));
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
