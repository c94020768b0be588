#version 450
// Attention for one (head h, token t) per workgroup over cache slots [lo, hi) of the causal
// context [0, n_past + t + 1): scores q.K[s]*scale, a numerically stable online softmax in
// chunks of 64 slots (running max m and sum l, the accumulator rescaled by exp(m_old - m_new)),
// and the weighted sum of V rows; each invocation owns output dims tid, tid+64, ...
// With SPLIT=1 the context is cut into gl_NumWorkGroups.z spans (flash-decoding): each workgroup
// writes its partial (m, l, acc[head_dim]) and attn_combine.comp merges them.
// Defines: KV_F16, SPLIT, USE_SUBGROUP. head_dim <= 256 (checked by the backend).
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Qb { float Q[]; };
#if KV_F16
layout(binding = 1) readonly buffer Kb { uint K[]; };
layout(binding = 2) readonly buffer Vb { uint V[]; };
#else
layout(binding = 1) readonly buffer Kb { float K[]; };
layout(binding = 2) readonly buffer Vb { float V[]; };
#endif
layout(binding = 3) writeonly buffer Ob { float O[]; };

layout(push_constant) uniform PC {
    uint n_past, head_dim, n_head, group, kv_dim, q_stride, out_stride;
    float scale;
    uint span;       // SPLIT: slots per workgroup along z
} pc;

#define MAX_HD 256u
shared float q_s[MAX_HD];
shared float p_s[WG];

float kv_at(uint s, uint d, bool is_k) {   // element d of head kvh's row s (kvh folded into d)
#if KV_F16
    uint w = s * (pc.kv_dim / 2u) + d / 2u;
    return unpackHalf2x16(is_k ? K[w] : V[w])[d & 1u];
#else
    return is_k ? K[s * pc.kv_dim + d] : V[s * pc.kv_dim + d];
#endif
}

void main() {
    uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
    uint hd = pc.head_dim, kvo = (h / pc.group) * hd;
    uint n_ctx = pc.n_past + t + 1u;
#if SPLIT
    uint lo = gl_WorkGroupID.z * pc.span, hi = min(lo + pc.span, n_ctx);
#else
    uint lo = 0u, hi = n_ctx;
#endif
    for (uint d = tid; d < hd; d += WG) q_s[d] = Q[t * pc.q_stride + h * hd + d];
    barrier();
    float m = NEG_BIG, l = 0.0;
    float acc[MAX_HD / WG];
    for (uint i = 0u; i < MAX_HD / WG; i++) acc[i] = 0.0;
    for (uint c0 = lo; c0 < hi; c0 += WG) {
        uint s = c0 + tid;
        float score = NEG_BIG;
        if (s < hi) {
            float dot_ = 0.0;
#if KV_F16
            uint w0 = s * (pc.kv_dim / 2u) + kvo / 2u;
            for (uint j = 0u; j < hd / 2u; j++) {
                vec2 k = unpackHalf2x16(K[w0 + j]);
                dot_ += k.x * q_s[2u * j] + k.y * q_s[2u * j + 1u];
            }
#else
            for (uint j = 0u; j < hd; j++) dot_ += K[s * pc.kv_dim + kvo + j] * q_s[j];
#endif
            score = dot_ * pc.scale;
        }
        float m_new = max(m, wg_max(score));
        float p = s < hi ? exp(score - m_new) : 0.0;
        float alpha = exp(m - m_new);
        l = l * alpha + wg_sum(p);
        p_s[tid] = p;
        barrier();
        uint cn = min(WG, hi - c0);
        for (uint i = 0u; i < MAX_HD / WG; i++) {
            uint d = tid + i * WG;
            if (d >= hd) break;
            float a = acc[i] * alpha;
            for (uint j = 0u; j < cn; j++) a += p_s[j] * kv_at(c0 + j, kvo + d, false);
            acc[i] = a;
        }
        barrier();
        m = m_new;
    }
#if SPLIT
    // partial record (t, h, z): [m, l, acc[0..hd)] at ((t * n_head + h) * nz + z) * (hd + 2)
    uint rec = ((t * pc.n_head + h) * gl_NumWorkGroups.z + gl_WorkGroupID.z) * (hd + 2u);
    if (tid == 0u) { O[rec] = m; O[rec + 1u] = l; }
    for (uint i = 0u; i < MAX_HD / WG; i++) {
        uint d = tid + i * WG;
        if (d < hd) O[rec + 2u + d] = acc[i];
    }
#else
    float inv = 1.0 / l;
    for (uint i = 0u; i < MAX_HD / WG; i++) {
        uint d = tid + i * WG;
        if (d < hd) O[t * pc.out_stride + h * hd + d] = acc[i] * inv;
    }
#endif
}
