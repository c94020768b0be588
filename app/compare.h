// A/B comparison of two precision plans (or KV settings) on the same prompts: each prompt is a
// fresh chat turn for plan A and for plan B with the same seed; per prompt the replies, decode
// speed, joules per token, and KL(A||B) with top-1 agreement teacher-forced on A's tokens; over
// the prompts, who wins each metric and whether the difference is significant (app/paired.h).
// Used by cabin compare (cli/cmd_compare.c) and the command language's `compare`.
#ifndef CABIN_COMPARE_H
#define CABIN_COMPARE_H

#include "app/paired.h"
#include "base/str.h"
#include "engine/session.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct compare_opts {
    session_opts base;          // model, backend, context, sampling (.seed: each prompt's seed)
    const char *plan[2];        // precision plans of A and B (engine/precision.h); NULL: as in the file
    const char *kv[2];          // KV formats of A and B; NULL: base.kv_format
    int assistant_limit;        // embedded model: held-out dialogues for action exact-match; 0 skips
    bool free_actions;          // exact-match without the action grammar (as eval-assistant --free-actions)
    power_monitor *pm;          // attached to both sessions (NULL: no energy figures)
    // Optional: the replies as they stream. Called with side -1 (piece "", len 0) when prompt
    // number idx begins, then with side 0 (A) or 1 (B) for each piece of its reply.
    void (*on_piece)(void *ud, int side, int idx, const char *prompt, const char *piece, int len);
    void *ud;
} compare_opts;

typedef struct compare_prompt {
    char *prompt;
    char *reply[2];             // malloc'd
    int tokens[2];              // generated
    double tps[2];              // decode tok/s
    double j_per_token[2];      // decode joules per token (0 without a monitor)
    double kl_mean, kl_max;     // KL(A||B) per position, over the reply (and the token after it)
    double top1;                // fraction of those positions where A's and B's argmax agree
    int positions;              // positions scored
    bool same;                  // identical reply text
} compare_prompt;

typedef struct compare_result {
    char model[256];
    char plan[2][160], kv[2][16];
    uint64_t weight_bytes[2];   // every tensor of the model under each plan
    char energy_from[32];       // the power source ("" without a monitor)
    bool energy_measured;
    int n;
    compare_prompt *p;          // n
    bool embedded;              // the embedded model: exact-match below was run when turns > 0
    int exact_turns, exact[2];
    // over the prompts (A vs B): decode tok/s (higher wins), J/token and KL-free figures
    paired_result tps, jpt;
    double kl_mean, kl_max, top1_mean;
    int same;                   // prompts with identical replies
} compare_result;

// Prompts from a file: one per line, blank lines and lines starting with # skipped.
// Returns the count (at least 1) with *out malloc'd, or -1 with "FILE: ..." in err.
int compare_read_prompts(const char *path, char ***out, errbuf *err);
void compare_free_prompts(char **p, int n);

// Runs every prompt through A and B. 0, or -1 with err naming the plan, KV format or prompt.
int compare_run(const compare_opts *o, char *const *prompts, int n, compare_result *out, errbuf *err);
void compare_result_free(compare_result *r);

// The per-prompt table, the replies side by side in `width` columns, then the summary.
void compare_report(const compare_result *r, int width, strbuf *out);
// The parts of the report: the per-prompt table; two texts side by side in two columns of
// (width - 3) / 2, wrapped at spaces; the summary.
void compare_table(const compare_result *r, strbuf *out);
void compare_columns(const char *a, const char *b, int width, strbuf *out);
void compare_summary(const compare_result *r, strbuf *out);
// {model, a:{plan, kv, bytes}, b:{...}, prompts:[...], summary:{...}} (malloc'd, ends in '\n').
char *compare_json(const compare_result *r);
// Grouped bars of decode tok/s per prompt for A and B, KL(A||B) as points on the right axis.
int compare_plot(const compare_result *r, const char *path, errbuf *err);

#endif
