#version 450
// Attention over a layer's device store (any KV format, layout: kvq.glsl), reading quantized
// keys and values directly (dequantized per element). Keys are stored un-rotated and rotated here
// by their slot (RT: the cache's (n_ctx, half, 2) cos/sin table, kv->rope_cs), q arrives
// rotated by its own slot, so the score depends on the slot distance only (docs/KV.md).
// Specialization constants: KV_FMT (0 f32, 1 f16, 2 q8, 3 q4) and MODE:
//   0 attention: one (head h, token t) per workgroup over cache slots [lo, hi) of the causal
//     context [0, n_past + t + 1): scores q.K[s]*scale, a numerically stable online softmax in
//     chunks of 64 slots (running max m and sum l, the accumulator rescaled by exp(m_old - m_new)),
//     and the weighted sum of V rows; each invocation owns output dims tid, tid+64, ...
//     With SPLIT=1 the context is cut into gl_NumWorkGroups.z spans (flash-decoding): each
//     workgroup writes its partial (m, l, acc[head_dim]) and attn_combine.comp merges them;
//     without, the workgroup also writes its final (m, l) to ML for the statistics pass.
//   1 statistics (h2o/entropy eviction): grid (n_head, ceil((n_past+n)/64)), one slot per
//     invocation: its softmax weight exp(score - m) / l under every query token t of the batch
//     (m, l from ML), summed into the mass (slots older than the batch accumulate, the batch's own
//     slots start from zero, as a fresh slot's mass is zero on the CPU), and the last token's
//     weight into `last` (layouts of kv->mass and kv->last: (n_layer, n_head, n_ctx)).
// A masked slot (entropy policy: mask byte (layer, kv head, slot) != 0, for slots < mask_n) has
// weight 0. Defines: SPLIT, USE_SUBGROUP; KV_F16 only gives KV_FMT a default (the backend sets
// it). head_dim <= 256 (checked by the backend).
#include "common.glsl"
#include "kvq.glsl"
#include "../../engine/rope.h"   // the rotated pairs

layout(local_size_x = 64) in;

#if defined(KV_F16) && !KV_F16
layout(constant_id = 0) const uint KV_FMT = 0u;
#else
layout(constant_id = 0) const uint KV_FMT = 1u;
#endif
layout(constant_id = 1) const uint MODE = 0u;

layout(binding = 0) readonly buffer Qb { float Q[]; };   // (n, q_stride), head h at h*head_dim
layout(binding = 1) readonly buffer Lb { uint L[]; };     // the layer's store
layout(binding = 2) readonly buffer Rb { float RT[]; };   // (n_ctx, half_, 2) cos, sin
layout(binding = 3) readonly buffer Mb { uint MK[]; };    // (n_layer, n_kv_head, n_ctx) mask bytes
layout(binding = 4) buffer Ob { float O[]; };             // out rows | split partials | statistics
layout(binding = 5) buffer MLb { float ML[]; };           // (n, n_head, 2): final m, l

layout(push_constant) uniform PC {
    KV_PC_FIELDS
    uint n_past, n_tok, head_dim, n_head, group, q_stride, out_stride;
    float scale;
    uint span;                  // SPLIT: slots per workgroup along z
    uint half_, neox, rope;     // rope: 1 = rotate keys by slot (half_ pairs per head)
    uint use_mask, mask_n, layer, n_ctx;
    uint last_off;              // statistics: offset of `last` after the mass in O
    uint window;                // > 0: token t sees slots (n_past + t + 1 - window, n_past + t] only
    uint rope_off;              // floats before this layer's table in RT
    float softcap;              // > 0: scores become softcap * tanh(score / softcap) (gemma2)
} pc;

// ---- reading the store (layout: kvq.glsl) ----

// Element c of an F16 row that starts at word w0.
float f16_elem(uint w0, uint c) { return unpackHalf2x16(L[w0 + (c >> 1)])[c & 1u]; }

// Code i of the run of codes that starts at code index base (a byte for q8, a nibble for q4).
uint code_at(uint word_off, uint base, uint i) {
    uint k = base + i;
    if (KV_FMT == 2u) return (L[word_off + (k >> 2)] >> ((k & 3u) * 8u)) & 255u;
    return (L[word_off + (k >> 3)] >> ((k & 7u) * 4u)) & 15u;
}

// Channel c of slot s's key (un-rotated), any format.
float key_at(uint s, uint c) {
    if (KV_FMT == 0u) return uintBitsToFloat(L[pc.off_k + plain_row(s) * pc.kv_dim + c]);
    if (KV_FMT == 1u) return f16_elem(pc.off_k + plain_row(s) * (pc.kv_dim / 2u), c);
    if (s >= pc.nq) return f16_elem(pc.off_k + (s - pc.nq) * (pc.kv_dim / 2u), c);
    uint ch = (s / KV_GROUP) * pc.kv_dim + c;
    vec2 p = unpackHalf2x16(L[pc.off_kp + ch]);   // (scale, min)
    return p.y + p.x * float(code_at(pc.off_kq, ch * KV_GROUP, s % KV_GROUP));
}

// Channel c of slot s's value, any format.
float value_at(uint s, uint c) {
    if (KV_FMT == 0u) return uintBitsToFloat(L[pc.off_v + plain_row(s) * pc.kv_dim + c]);
    if (KV_FMT == 1u) return f16_elem(pc.off_v + plain_row(s) * (pc.kv_dim / 2u), c);
    if (s >= pc.nqv) return f16_elem(pc.off_v + (s % pc.vcap) * (pc.kv_dim / 2u), c);
    vec2 p = unpackHalf2x16(L[pc.off_vp + s * (pc.kv_dim / pc.gv) + c / pc.gv]);
    return p.y + p.x * float(code_at(pc.off_vq, s * pc.kv_dim, c));
}

#define MAX_HD 256u
shared float q_s[MAX_HD];
shared float p_s[WG];

bool masked(uint kvh, uint s) {
    if (pc.use_mask == 0u || s >= pc.mask_n) return false;
    uint b = ((pc.layer * (pc.n_head / pc.group) + kvh) * pc.n_ctx) + s;
    return ((MK[b >> 2] >> ((b & 3u) * 8u)) & 255u) != 0u;
}

// q_s . rope(K[s] of the head at channel kvo, s) * scale, soft-capped when asked
float score_at(uint s, uint kvo) {
    float dot_ = 0.0;
    uint rd = 0u;
    if (pc.rope != 0u) {
        rd = 2u * pc.half_;
        for (uint i = 0u; i < pc.half_; i++) {
            uint i0 = ROPE_PAIR_FIRST(i, pc.half_, pc.neox != 0u), i1 = ROPE_PAIR_SECOND(i, pc.half_, pc.neox != 0u);
            float a = key_at(s, kvo + i0), b = key_at(s, kvo + i1);
            float c = RT[pc.rope_off + (s * pc.half_ + i) * 2u], sn = RT[pc.rope_off + (s * pc.half_ + i) * 2u + 1u];
            dot_ += q_s[i0] * (a * c - b * sn) + q_s[i1] * (a * sn + b * c);
        }
    }
    for (uint d = rd; d < pc.head_dim; d++) dot_ += q_s[d] * key_at(s, kvo + d);
    float sc = dot_ * pc.scale;
    return pc.softcap > 0.0 ? pc.softcap * tanh(sc / pc.softcap) : sc;
}

// The first slot a token whose context is [0, n_ctx) sees: 0, or n_ctx - window on a window layer.
uint window_first(uint n_ctx) { return pc.window > 0u && n_ctx > pc.window ? n_ctx - pc.window : 0u; }

void load_q(uint t, uint h) {
    for (uint d = gl_LocalInvocationIndex; d < pc.head_dim; d += WG) q_s[d] = Q[t * pc.q_stride + h * pc.head_dim + d];
}

void attention_main() {
    uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
    uint hd = pc.head_dim, kvh = h / pc.group, kvo = kvh * hd;
    uint n_ctx = pc.n_past + t + 1u;
    uint first = window_first(n_ctx);
#if SPLIT
    uint lo = max(gl_WorkGroupID.z * pc.span, first), hi = min(gl_WorkGroupID.z * pc.span + pc.span, n_ctx);
#else
    uint lo = first, hi = n_ctx;
#endif
    load_q(t, h);
    barrier();
    float m = NEG_BIG, l = 0.0;
    float acc[MAX_HD / WG];
    for (uint i = 0u; i < MAX_HD / WG; i++) acc[i] = 0.0;
    for (uint c0 = lo; c0 < hi; c0 += WG) {
        uint s = c0 + tid;
        bool live = s < hi && !masked(kvh, s);
        float score = live ? score_at(s, kvo) : NEG_BIG;
        float m_new = max(m, wg_max(score));
        float p = live ? exp(score - m_new) : 0.0;
        float alpha = exp(m - m_new);
        l = l * alpha + wg_sum(p);
        p_s[tid] = p;
        barrier();
        uint cn = min(WG, hi - c0);
        for (uint i = 0u; i < MAX_HD / WG; i++) {
            uint d = tid + i * WG;
            if (d >= hd) break;
            float a = acc[i] * alpha;
            for (uint j = 0u; j < cn; j++)
                if (p_s[j] != 0.0) a += p_s[j] * value_at(c0 + j, kvo + d);
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
    if (tid == 0u) { ML[(t * pc.n_head + h) * 2u] = m; ML[(t * pc.n_head + h) * 2u + 1u] = l; }
#endif
}

void stats_main() {
    uint h = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex, s = gl_WorkGroupID.y * WG + tid;
    uint kvh = h / pc.group, kvo = kvh * pc.head_dim, n_max = pc.n_past + pc.n_tok;
    bool live = s < n_max && !masked(kvh, s);
    float sum = 0.0, last = 0.0;
    for (uint t = 0u; t < pc.n_tok; t++) {
        barrier();
        load_q(t, h);
        barrier();
        if (live && s < pc.n_past + t + 1u && s >= window_first(pc.n_past + t + 1u)) {
            uint r = (t * pc.n_head + h) * 2u;
            float w = exp(score_at(s, kvo) - ML[r]) / ML[r + 1u];
            sum += w;
            if (t + 1u == pc.n_tok) last = w;
        }
    }
    if (s < n_max) {
        uint o = (pc.layer * pc.n_head + h) * pc.n_ctx + s;
        O[o] = (s < pc.n_past ? O[o] : 0.0) + sum;
        O[pc.last_off + o] = last;
    }
}

void main() {
    if (MODE == 0u) attention_main();
    else stats_main();
}
