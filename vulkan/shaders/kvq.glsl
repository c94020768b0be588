// The KV cache's device layout and quantization math, shared by kv_store.comp (store, fold) and
// attention.comp (read). The device store of a layer is one buffer of 32-bit words holding the
// host layer of engine/kv_cache.h byte for byte, each section at a word offset (pc.off_*):
//   F32:    K (n_ctx, kv_dim) f32 rows at off_k, V rows at off_v
//   F16:    K, V (n_ctx, kv_dim) f16 rows, two elements per word (low half first)
//   a window layer's ring: K, V (ring, kv_dim) rows as F32 or F16 (F16 under Q8/Q4), slot s at
//           row s % ring (plain_row)
//   Q8, Q4: off_k  key window: F16 rows; window row r holds slot nq + r
//           off_v  value ring: vcap F16 rows; slot s at row s % vcap (slots >= nqv)
//           off_kq key codes (groups, kv_dim, 128): channel c of group g is 128 codes from
//                  byte (g*kv_dim + c)*128 (q8) or nibble (g*kv_dim + c)*128 (q4, low nibble first)
//           off_kp key (scale, min) f16 pairs, one word per (group, channel): scale low, min high
//           off_vq value codes (slot, kv_dim): row s from byte s*kv_dim (q8) or s*kv_dim/2 (q4)
//           off_vp value (scale, min) words, one per (slot, value group of gv channels)
// Quantization mirrors engine/kv_cache.c exactly: f16 conversions in integer arithmetic (round to
// nearest even, as engine/half.c's f32_to_fp16), min rounded down and scale rounded up to the next f16
// until min + qmax*scale covers the group's max, codes round((x - min) / scale) half away from
// zero, clamped to [0, qmax]. `precise` keeps the compiler from fusing a multiply and an add that
// the C code rounds separately. Only the division may differ from the CPU on a device whose
// division is not correctly rounded (then a code at an exact half step can differ by one).
//
// Shaders include this before their push-constant block (which starts with KV_PC_FIELDS); the
// functions that read the store (they need the buffer and the block) are in attention.comp.
#ifndef CABIN_KVQ_GLSL
#define CABIN_KVQ_GLSL

#define KV_PC_FIELDS \
    uint off_k, off_v, off_kq, off_kp, off_vq, off_vp; \
    uint kv_dim;    /* channels per slot (n_kv_head * head_dim) */ \
    uint nq, nqv;   /* Q: key / value slots in the quantized store (keys: a multiple of 128) */ \
    uint vcap, gv;  /* Q: value ring rows; channels per value group */ \
    uint ring;      /* F32/F16: a window layer's ring rows (slot s at row s % ring); 0: row s */

#define KV_GROUP 128u

// ---- f16 <-> f32, exactly as engine/half.c ----

uint f2h(float f) {
    uint x = floatBitsToUint(f);
    uint sgn = (x >> 16) & 0x8000u, e8 = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    if (e8 == 0xffu) return sgn | 0x7c00u | (man != 0u ? 0x200u : 0u);
    int e = int(e8) - 127 + 15;
    if (e >= 31) return sgn | 0x7c00u;
    if (e <= 0) {
        if (e < -10) return sgn;
        man |= 0x800000u;
        uint shift = uint(14 - e);
        uint h = man >> shift, rem = man & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (h & 1u) != 0u)) h++;
        return sgn | h;
    }
    uint h = (uint(e) << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;
    return sgn | h;
}

float h2f(uint h) {   // exact, subnormals included
    uint sgn = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
    if (e == 0u) { float v = float(m) * (1.0 / 16777216.0); return sgn != 0u ? -v : v; }
    if (e == 31u) return uintBitsToFloat(sgn | 0x7f800000u | (m << 13));
    return uintBitsToFloat(sgn | ((e + 112u) << 23) | (m << 13));
}

float f16_round(float x) { return h2f(f2h(x)); }

// The row of an F32/F16 layer that holds slot s (the push-constant block is pc).
#define plain_row(s) (pc.ring > 0u ? (s) % pc.ring : (s))

uint h_next_up(uint h) {      // smallest f16 > value(h)
    if (h == 0x8000u) return 1u;
    return (h & 0x8000u) != 0u ? h - 1u : h + 1u;
}
uint h_next_down(uint h) {    // largest f16 < value(h)
    if (h == 0u) return 0x8001u;
    return (h & 0x8000u) != 0u ? h + 1u : h - 1u;
}

// (scale, min) as f16 bits for values in [lo, hi]: min <= lo, min + qmax*scale >= hi; returns
// the (scale | min << 16) word of the device layout.
uint group_params(float lo, float hi, float qmax) {
    uint m = f2h(lo);
    if (h2f(m) > lo) m = h_next_down(m);
    precise float mf = h2f(m);
    precise float sc = (hi - mf) / qmax;
    uint s = f2h(sc);
    for (int i = 0; i < 4; i++) {
        precise float top = mf + h2f(s) * qmax;
        if (!(top < hi)) break;
        s = h_next_up(s);
    }
    return s | (m << 16);
}

uint quant_code(float x, float sc, float mn, float qmax) {
    if (!(sc > 0.0)) return 0u;
    precise float v = (x - mn) / sc;
    float t = trunc(v);
    if (abs(v - t) >= 0.5) t += sign(v);   // roundf: halves away from zero (v - t is exact)
    if (!(t >= 0.0)) t = 0.0;
    if (t > qmax) t = qmax;
    return uint(t);
}

#endif
