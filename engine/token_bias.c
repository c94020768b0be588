// Logit biases around another token filter (engine/token_bias.h).
#include "engine/token_bias.h"

int token_bias_check(const int32_t *ids, int n, int n_vocab, errbuf *err) {
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab)
            return err_set(err, "logit_bias: token %d is not in the vocabulary (ids 0 to %d)", ids[i], n_vocab - 1);
    return 0;
}

static void bias_mask(void *ud, float *logits, int n_vocab) {
    token_bias *b = ud;
    for (int i = 0; i < b->n; i++)
        if (b->ids[i] >= 0 && b->ids[i] < n_vocab) logits[b->ids[i]] += b->bias[i];
    if (b->inner.mask) b->inner.mask(b->inner.ud, logits, n_vocab);
}

static void bias_accept(void *ud, int32_t token, const char *piece, int len) {
    token_bias *b = ud;
    if (b->inner.accept) b->inner.accept(b->inner.ud, token, piece, len);
}

static int32_t bias_forced(void *ud) {
    token_bias *b = ud;
    return b->inner.forced ? b->inner.forced(b->inner.ud) : -1;
}

token_filter token_bias_filter(token_bias *b) { return (token_filter){ bias_mask, bias_accept, b, bias_forced }; }
