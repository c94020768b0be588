// Rotary position embedding: the one definition of its angles and of the pairs it rotates. The
// CPU rope op, the KV cache's per-slot table (engine/kv_cache.c) and the Vulkan backend's host-side
// tables all take their (cos, sin) values from rope_cos_sin; the shaders (vulkan/shaders/rope.comp,
// attention.comp) include this file for the pair layout and read those tables.
//
// Included by C and by GLSL: the pair macros are plain expressions both languages take (in GLSL
// pass `neox` as a bool, e.g. `pc.neox != 0u`); the rest is C only.
#ifndef CABIN_ROPE_H
#define CABIN_ROPE_H

// The two elements of a head that pair i (0 <= i < half = rope_dim/2) rotates: normal style
// (2i, 2i+1), NeoX style (i, i + half).
#define ROPE_PAIR_FIRST(i, half, neox)  ((neox) ? (i) : (i) + (i))
#define ROPE_PAIR_SECOND(i, half, neox) ((neox) ? (i) + (half) : (i) + (i) + 1)

#ifdef __STDC__
#include <math.h>
#include <stdint.h>

// Angle of pair i at position pos, in radians: pos * base^(-2i/rope_dim), computed in double.
static inline double rope_theta(int64_t pos, int i, int rope_dim, float base) {
    return (double)pos * pow((double)base, -2.0 * i / rope_dim);
}

// cs: (rope_dim/2, 2) floats, the (cos, sin) of every pair's angle at position pos, each
// rounded to float once.
static inline void rope_cos_sin(int64_t pos, int rope_dim, float base, float *cs) {
    for (int i = 0; i < rope_dim / 2; i++) {
        double theta = rope_theta(pos, i, rope_dim, base);
        cs[2 * i] = (float)cos(theta);
        cs[2 * i + 1] = (float)sin(theta);
    }
}
#endif

#endif
