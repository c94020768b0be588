// Biases added to some tokens' logits before sampling (the API's logit_bias), as a token filter
// (session.h) around another one: the biases first, then the inner filter's mask, so a token the
// inner filter rules out stays out whatever its bias, and a token it forces comes whatever its
// bias.
#ifndef CABIN_TOKEN_BIAS_H
#define CABIN_TOKEN_BIAS_H

#include "base/err.h"
#include "engine/session.h"

#include <stdint.h>

typedef struct token_bias {
    const int32_t *ids;            // n tokens
    const float *bias;             // what is added to each one's logit
    int n;
    token_filter inner;            // zeroed: none
} token_bias;

// 0, or -1 with err naming the first id outside a vocabulary of n_vocab tokens.
int token_bias_check(const int32_t *ids, int n, int n_vocab, errbuf *err);
// The filter (b is read while it is in use).
token_filter token_bias_filter(token_bias *b);

#endif
