// Shared by vulkan/shaders/*.comp: workgroup size, reductions, weight decoding.
// USE_SUBGROUP (0/1) picks subgroup reductions or shared-memory trees; the backend chooses the
// variant at run time from the device's subgroup features.
#ifndef CABIN_COMMON_GLSL
#define CABIN_COMMON_GLSL

#ifndef USE_SUBGROUP
#define USE_SUBGROUP 0
#endif

#if USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

#define WG 64u
#define NEG_BIG (-1.0e30)

// Reduction scratch: enough for any subgroup size (>= 1 invocation per subgroup).
shared float red_s[WG];

// Sum of v over the workgroup; every invocation must call it (it has barriers).
float wg_sum(float v) {
#if USE_SUBGROUP
    v = subgroupAdd(v);
    if (subgroupElect()) red_s[gl_SubgroupID] = v;
    barrier();
    float t = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) t += red_s[i];
    barrier();
    return t;
#else
    uint l = gl_LocalInvocationIndex;
    red_s[l] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (l < s) red_s[l] += red_s[l + s];
        barrier();
    }
    float t = red_s[0];
    barrier();
    return t;
#endif
}

float wg_max(float v) {
#if USE_SUBGROUP
    v = subgroupMax(v);
    if (subgroupElect()) red_s[gl_SubgroupID] = v;
    barrier();
    float t = NEG_BIG;
    for (uint i = 0u; i < gl_NumSubgroups; i++) t = max(t, red_s[i]);
    barrier();
    return t;
#else
    uint l = gl_LocalInvocationIndex;
    red_s[l] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (l < s) red_s[l] = max(red_s[l], red_s[l + s]);
        barrier();
    }
    float t = red_s[0];
    barrier();
    return t;
#endif
}

// Weight type ids (engine/wtype.h) and the device layouts the backend repacks them into:
//   F32:  one word per weight; row stride row_words = K
//   F16, BF16: two weights per word (low half first); rows padded to whole words
//   Q8_0: per row K/32 blocks of 8 words (32 int8, weight j in byte j); scales as f32 words
//         at scale_off + row*(K/32) + block
//   Q4_0: per row K/32 blocks of 4 words (the GGUF 16 nibble bytes); scales as for Q8_0
//   Q4M:  per row K/32 blocks of 4 words of 4-bit codes, byte j: code j (low nibble), code j+16
//         (high); (scale, min) f32 word pairs at scale_off + 2*(row*(K/32) + block):
//         w = scale * code - min (Q4_1, Q4_K)
//   I8M:  per row K/16 groups of 4 words of int8 codes; (scale, min) f32 word pairs at
//         scale_off + 2*(row*(K/16) + group): w = scale * code - min (Q5_1, Q2_K, Q3_K, Q5_K, Q6_K)
//   F8:   FP8, cabin's own: as Q8_0 with E4M3 bytes (e4m3 below) for the int8 codes
// Q8_0 and Q4_0 also hold the types whose codes fit them (Q5_0, IQ4_NL, IQ4_XS: Q8_0).
#define WT_F32 0
#define WT_F16 1
#define WT_Q4_0 2
#define WT_Q8_0 8
#define WT_BF16 30
#define WT_Q4M 3      // the id of Q4_1, whose layout it extends
#define WT_I8M 64     // a device layout only, no GGUF type
#define WT_F8 63      // WT_FP8

// E4M3 byte k (0..3) of word w (engine/wtype_fp8.c): sign, exponent (bias 7), 3 mantissa bits;
// exponent 0 subnormal; S.1111.111 NaN. ldexp keeps it exact.
float e4m3(uint w, uint k) {
    uint b = (w >> (8u * k)) & 0xffu, e = (b >> 3u) & 15u, m = b & 7u;
    float v = e == 0u ? ldexp(float(m), -9) : ldexp(float(8u + m), int(e) - 10);
    if ((b & 0x7fu) == 0x7fu) v = uintBitsToFloat(0x7fc00000u);
    return (b & 0x80u) != 0u ? -v : v;
}

// Byte k of word w as the value it codes: an int8 (Q8_0 layout) or an E4M3 byte (F8).
#if defined(WTYPE) && WTYPE == WT_F8
#define BYTE8(w, k) e4m3(w, k)
#else
#define BYTE8(w, k) i8(w, k)
#endif

vec2 bf16x2(uint w) { return vec2(uintBitsToFloat(w << 16), uintBitsToFloat(w & 0xffff0000u)); }

// int8 k (0..3) of word w, sign-extended
float i8(uint w, uint k) { return float(bitfieldExtract(int(w), int(8u * k), 8)); }

#endif
