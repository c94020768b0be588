// Quality of a model run against a text: negative log-likelihood (perplexity) and, against a base
// run of the same text, the KL divergence of the next-token distributions. Shared by cabin ppl,
// cabin eval-assistant, the sensitivity heat map and the precision sweep.
#ifndef CABIN_QUALITY_H
#define CABIN_QUALITY_H

#include "session.h"

#include <stdint.h>
#include <stdio.h>

// Per scored token of a base run: the base's top QUALITY_TOP_K (id, log-prob), highest first
// (id -1 where the vocabulary is smaller), and the log-prob it gave the actual next token.
#define QUALITY_TOP_K 64
typedef struct kl_record {
    int32_t id[QUALITY_TOP_K];
    float lp[QUALITY_TOP_K];
    float target_lp;
} kl_record;

typedef struct quality_base {
    kl_record *rec;     // n records, malloc'd
    long n, cap;
} quality_base;
void quality_base_free(quality_base *b);

// log p(target) of one row of n logits.
double quality_log_prob(const float *logits, int n, int target);
// log-softmax of a row into out (n values).
void quality_log_softmax(const float *logits, int n, double *out);
// The top-k record of one log-softmax row (lsm: n values) and the target's log-prob.
void quality_record(const double *lsm, int n, int target, kl_record *rec);
// KL(base || run) of one token: the base's top k plus everything else as one outcome, so the
// figure is a lower bound of the full KL that is exact when the top k hold all the mass.
// lsm: the run's log-softmax row (n values). Never negative.
double quality_kl(const kl_record *base, const double *lsm, int n);

typedef struct quality_result {
    double ppl, ppl_err, mean_nll;
    long scored;
    int windows;
    // against a base (cmp)
    double kl_mean, kl_max, top1, base_ppl, base_nll;
} quality_result;

typedef void (*quality_progress_fn)(void *ud, int done, int total, double ppl);

typedef struct quality_opts {
    int ctx;                    // window, tokens (BOS first when the model has one)
    int max_chunks;             // 0 = every window
    quality_base *save;         // if set: receives this run's records (the base)
    const quality_base *cmp;    // if set: KL / top-1 / base NLL against it
    quality_progress_fn progress;
    void *progress_ud;
} quality_opts;

// Scores ids cut into windows of ctx tokens; each window is scored on its second half (every
// scored token sees at least ctx/2 tokens of context). Resets the session per window.
int quality_eval(session *s, const int32_t *ids, int n, const quality_opts *o, quality_result *out,
                 errbuf *err);

// Base files: "CBKL", u32 version 1, u32 n_vocab, u32 k, u32 ctx, u64 n_tokens, u64 token hash,
// u64 n_scored, then n_scored kl_records.
uint64_t quality_hash_tokens(const int32_t *ids, int n);
int quality_base_save(const char *path, const quality_base *b, int n_vocab, int ctx, int n_tokens,
                      uint64_t hash, errbuf *err);
int quality_base_load(const char *path, quality_base *b, int n_vocab, int ctx, uint64_t hash,
                      errbuf *err);

#endif
