// Token sampling: greedy, temperature, top-k, top-p, min-p, repetition penalty, seeded.
#ifndef CABIN_SAMPLER_H
#define CABIN_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sampler_params {
    float temp;            // <= 0: greedy
    int top_k;             // <= 0: off
    float top_p;           // >= 1: off
    float min_p;           // <= 0: off
    float repeat_penalty;  // 1: off; applied to the last repeat_last_n tokens
    int repeat_last_n;
    uint64_t seed;
} sampler_params;

sampler_params sampler_defaults(void);   // temp 0.7, top_k 40, top_p 0.95, min_p 0.05, penalty off (1.0), last 64

typedef struct sampler sampler;

sampler *sampler_new(const sampler_params *p, int n_vocab);   // NULL: out of memory
void sampler_free(sampler *s);
void sampler_reset(sampler *s, uint64_t seed);
// Records a token in the penalty history (prompt and generated tokens alike).
void sampler_accept(sampler *s, int32_t token);
// Picks the next token from logits (n_vocab floats; modified in place by penalties).
int32_t sampler_sample(sampler *s, float *logits);
// A token chosen for the sampler (the only one a filter allows): the random stream advances as
// sampler_sample over logits with one finite entry would advance it, so that what is sampled
// after is what it would have been.
void sampler_skip(sampler *s);
// Index of the largest logit (lowest index on ties).
int32_t argmax_f32(const float *x, int n);

#endif
