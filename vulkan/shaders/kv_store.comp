#version 450
// Writes a batch of keys and values into a layer's device store (layout: kvq.glsl) and, for the
// quantized formats, folds what leaves the F16 windows into the quantized store, as
// kv_cache_put does on the CPU. Keys are stored un-rotated: attention rotates them by slot.
// Specialization constants: KV_FMT (0 f32, 1 f16, 2 q8, 3 q4) and MODE:
//   0 STORE   grid (ceil(kv_dim/2/64), n): token t's pair p of elements -> slot slots[t]
//             (Q: key window row slot - nq if slot >= nq, value ring row slot % vcap if slot >= nqv;
//             nq, nqv are the counters after this batch's folds)
//   1 FOLD_K  grid (ceil(kv_dim/64), groups): one invocation per (channel, key group), group
//             nq0/128 + y: its 128 slots come from the old key window (slots < s0, at row s - nq0)
//             or from the batch (slot s is activation row s - s0, rounded to f16 as the window
//             would have stored it); writes 128 codes and one (scale, min) word
//   2 FOLD_V  grid (slots): one workgroup per value slot nqv0 + x (from the ring if < s0, else
//             from the batch): (scale, min) per group of gv channels, then the row's code words
//   3 COPY    grid (ceil(copy_words/64)): copy_words words from L to X (copy_dir 0) or X to L (1);
//             moving the key window down after a fold goes through X (the ranges overlap)
// The quantized formats need kv_dim % 8 == 0 (rows of whole words) and kv_dim/gv <= 256 value
// groups (checked by the backend). KV_F16 (a define of the build's variant list) is only the
// default of KV_FMT: the backend always sets it.
#include "common.glsl"
#include "kvq.glsl"

layout(local_size_x = 64) in;

#if defined(KV_F16) && !KV_F16
layout(constant_id = 0) const uint KV_FMT = 0u;
#else
layout(constant_id = 0) const uint KV_FMT = 1u;
#endif
layout(constant_id = 1) const uint MODE = 0u;

layout(binding = 0) readonly buffer Kab { float KA[]; };   // (n, k_stride) key activations
layout(binding = 1) readonly buffer Vab { float VA[]; };   // (n, v_stride) value activations
layout(binding = 2) buffer Lb { uint L[]; };                // the layer's store
layout(binding = 3) readonly buffer Sb { int slots[]; };    // (n) slot of each token
layout(binding = 4) buffer Xb { uint X[]; };                // scratch (COPY)

layout(push_constant) uniform PC {
    KV_PC_FIELDS
    uint k_stride, v_stride;
    uint s0;           // Q: slot of activation row 0 (a batch's slots are consecutive)
    uint nq0, nqv0;    // Q folds: the counters before this batch
    uint copy_src, copy_dst, copy_words, copy_dir;
} pc;

// Element c of an F16 row that starts at word w0.
float f16_elem(uint w0, uint c) { return unpackHalf2x16(L[w0 + (c >> 1)])[c & 1u]; }

float qmax_f() { return KV_FMT == 3u ? 15.0 : 255.0; }

uint packh(vec2 x) { return f2h(x.x) | (f2h(x.y) << 16); }

void do_store() {
    uint p = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y, hw = pc.kv_dim / 2u;
    if (p >= hw) return;
    uint s = uint(slots[t]);
    vec2 k = vec2(KA[t * pc.k_stride + 2u * p], KA[t * pc.k_stride + 2u * p + 1u]);
    vec2 v = vec2(VA[t * pc.v_stride + 2u * p], VA[t * pc.v_stride + 2u * p + 1u]);
    if (KV_FMT == 0u) {
        uint o = plain_row(s) * pc.kv_dim + 2u * p;
        L[pc.off_k + o] = floatBitsToUint(k.x); L[pc.off_k + o + 1u] = floatBitsToUint(k.y);
        L[pc.off_v + o] = floatBitsToUint(v.x); L[pc.off_v + o + 1u] = floatBitsToUint(v.y);
    } else if (KV_FMT == 1u) {
        L[pc.off_k + plain_row(s) * hw + p] = packh(k);
        L[pc.off_v + plain_row(s) * hw + p] = packh(v);
    } else {
        if (s >= pc.nq) L[pc.off_k + (s - pc.nq) * hw + p] = packh(k);
        if (s >= pc.nqv) L[pc.off_v + (s % pc.vcap) * hw + p] = packh(v);
    }
}

// Key channel c of slot s as the F16 window holds (or would hold) it.
float key_src(uint s, uint c) {
    if (s < pc.s0) return f16_elem(pc.off_k + (s - pc.nq0) * (pc.kv_dim / 2u), c);
    return f16_round(KA[(s - pc.s0) * pc.k_stride + c]);
}

void do_fold_k() {
    uint c = gl_GlobalInvocationID.x;
    if (c >= pc.kv_dim) return;
    uint g = pc.nq0 / KV_GROUP + gl_WorkGroupID.y, s0 = g * KV_GROUP;
    float lo = uintBitsToFloat(0x7f800000u), hi = -lo;
    for (uint i = 0u; i < KV_GROUP; i++) {
        float x = key_src(s0 + i, c);
        lo = min(lo, x);
        hi = max(hi, x);
    }
    float qmax = qmax_f();
    uint ch = g * pc.kv_dim + c, par = group_params(lo, hi, qmax);
    L[pc.off_kp + ch] = par;
    float sc = h2f(par & 0xffffu), mn = h2f(par >> 16);
    uint per = KV_FMT == 2u ? 4u : 8u, bits = 32u / per, w0 = pc.off_kq + ch * (KV_GROUP / per);
    for (uint w = 0u; w < KV_GROUP / per; w++) {
        uint word = 0u;
        for (uint j = 0u; j < per; j++)
            word |= quant_code(key_src(s0 + w * per + j, c), sc, mn, qmax) << (j * bits);
        L[w0 + w] = word;
    }
}

float value_src(uint s, uint c) {
    if (s < pc.s0) return f16_elem(pc.off_v + (s % pc.vcap) * (pc.kv_dim / 2u), c);
    return f16_round(VA[(s - pc.s0) * pc.v_stride + c]);
}

shared float vsc[256], vmn[256];

void do_fold_v() {
    uint s = pc.nqv0 + gl_WorkGroupID.x, tid = gl_LocalInvocationIndex;
    uint ng = pc.kv_dim / pc.gv;
    float qmax = qmax_f();
    for (uint g = tid; g < ng; g += WG) {
        float lo = uintBitsToFloat(0x7f800000u), hi = -lo;
        for (uint c = g * pc.gv; c < (g + 1u) * pc.gv; c++) {
            float x = value_src(s, c);
            lo = min(lo, x);
            hi = max(hi, x);
        }
        uint par = group_params(lo, hi, qmax);
        L[pc.off_vp + s * ng + g] = par;
        vsc[g] = h2f(par & 0xffffu);
        vmn[g] = h2f(par >> 16);
    }
    barrier();
    uint per = KV_FMT == 2u ? 4u : 8u, bits = 32u / per, rw = pc.kv_dim / per;
    for (uint w = tid; w < rw; w += WG) {
        uint word = 0u;
        for (uint j = 0u; j < per; j++) {
            uint c = w * per + j, g = c / pc.gv;
            word |= quant_code(value_src(s, c), vsc[g], vmn[g], qmax) << (j * bits);
        }
        L[pc.off_vq + s * rw + w] = word;
    }
}

void do_copy() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.copy_words) return;
    if (pc.copy_dir == 0u) X[pc.copy_dst + i] = L[pc.copy_src + i];
    else L[pc.copy_dst + i] = X[pc.copy_src + i];
}

void main() {
    if (MODE == 0u) do_store();
    else if (MODE == 1u) do_fold_k();
    else if (MODE == 2u) do_fold_v();
    else do_copy();
}
