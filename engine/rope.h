// Rotary position embedding: the one definition of its angles, of the scalings files ask for
// (engine/rope.c) and of the pairs it rotates. The CPU rope op, the KV cache's per-slot table
// (engine/kv_cache.c) and the Vulkan backend's host-side tables all take their (cos, sin) values
// from rope_cos_sin; the shaders (vulkan/shaders/rope.comp, attention.comp) include this file for
// the pair layout and read those tables.
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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROPE_MAX_PAIRS 512   // rope_dim <= 1024 (checked at load)

// Every position's angles as a model's rope gives them: pair i of position pos turns by
// pos * freq[i] radians, and its (cos, sin) are scaled by mscale. The plain rope has
// freq[i] = base^(-2i/rope_dim) and mscale 1; the scalings a file may ask for (rope_scaling
// below) change freq and mscale only, so every op that rotates (the rope op, attention's keys by
// slot, the Vulkan tables) reads this one struct and never knows which scaling made it.
typedef struct rope_freqs {
    int rope_dim;                   // dims rotated per head: rope_dim/2 pairs
    float mscale;                   // cos and sin multiplied by it (1: none)
    double freq[ROPE_MAX_PAIRS];    // radians per position, pair i
} rope_freqs;

// cs: (rope_dim/2, 2) floats, the (cos, sin) of every pair's angle at position pos, each
// computed in double and rounded to float once.
static inline void rope_cos_sin(int64_t pos, const rope_freqs *f, float *cs) {
    for (int i = 0; i < f->rope_dim / 2; i++) {
        double theta = (double)pos * f->freq[i];
        cs[2 * i] = (float)(cos(theta) * f->mscale);
        cs[2 * i + 1] = (float)(sin(theta) * f->mscale);
    }
}

// What a file asks of its rope beyond the base (engine/rope.c makes the frequencies):
//   none       the plain rope
//   linear     positions scaled by 1/factor (rope.scaling.type linear)
//   yarn       YaRN (rope.scaling.type yarn): each pair interpolated by 1/factor or left as it
//              is, by how many turns it makes over the original context (beta_fast, beta_slow),
//              cos and sin scaled by (1 + 0.1 ln factor) * attn_factor
//   longrope   phi3's long or short per-pair divisors, long when the context is longer than the
//              original one, and cos and sin scaled by attn_factor
// and, with any kind but longrope, factors: one divisor per pair applied first (llama3's
// rope_freqs.weight in Llama 3.1+ files).
enum rope_scaling_kind { ROPE_NONE, ROPE_LINEAR, ROPE_YARN, ROPE_LONGROPE };
typedef struct rope_scaling {
    enum rope_scaling_kind kind;
    float factor;                   // linear, yarn: how much longer the context is made (> 0)
    int n_ctx_orig;                 // yarn, longrope: the context the model was trained for
    float attn_factor;              // yarn, longrope: cos and sin multiplied by it (1: none)
    float beta_fast, beta_slow;     // yarn: the turns at which a pair is left as it is / scaled
    float ext_factor;               // yarn: how much of the ramp applies (1: all of it)
    const float *factors;           // NULL, or rope_dim/2 divisors (llama3)
    const float *long_factors, *short_factors;   // longrope: rope_dim/2 divisors each
} rope_scaling;

// The frequencies of a rope of rope_dim dims over base with scaling s (NULL: none) for a run
// of n_ctx positions (longrope chooses by it).
void rope_freqs_make(rope_freqs *f, int rope_dim, float base, const rope_scaling *s, int n_ctx);
// The plain rope (tests, and what the scaling kind none gives).
void rope_freqs_plain(rope_freqs *f, int rope_dim, float base);
// Whether two ropes give the same angles (their caches may be shared).
bool rope_freqs_same(const rope_freqs *a, const rope_freqs *b);
// The scaling in words ("plain", "per-frequency factors 1 to 32 (rope_freqs, llama3)", ...).
void rope_scaling_describe(const rope_scaling *s, int rope_dim, char *out, size_t n);
#endif

#endif
