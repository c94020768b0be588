// The precision governor on a running session: the closed loop of app/governor.h. Every
// generated token it takes one reading (decode tok/s over the last tokens, watts and J/token
// from the power monitor, CPU frequency and throttling), lets the governor decide, and switches
// the session's plan between two tokens (session_request_plan: the conversation is kept). Every
// drift_every tokens the drift guard re-scores the last tokens with a shadow session that runs
// the source precision and tracks KL and top-1 agreement; above the kl<= bound the governor
// rolls the last change back.
//
// The ladder's order comes from the sensitivity heat map at the low type: the one the app
// measured last (`heatmap`), else a cached one ($XDG_CACHE_HOME/cabin/heatmaps/, keyed by the
// model file's name, size and time), else it is measured once on the shadow session (a short
// text, 64 tokens) and cached.
//
// Cost: the shadow holds a second copy of the model at the source precision, and a drift check
// evaluates the tokens generated since the last one at that precision (a prompt-speed pass). It
// runs between two tokens on the generating thread; its time and the governor's own are left
// out of the readings.
#ifndef CABIN_APP_GOVERN_H
#define CABIN_APP_GOVERN_H

#include "app/governor.h"
#include "engine/sensitivity.h"
#include "engine/session.h"

#include <stdbool.h>

typedef struct gov_run gov_run;
// Where the loop says what it did (one line, no newline): a decision, a rollback, progress.
typedef void (*gov_say_fn)(void *ud, const char *line);

// Starts the loop on s (opened with o) from the plan in force (the source). heat: a map the
// app has (used when it is at the low type for this model; may be NULL). 0 and *out, or -1.
int gov_run_start(session *s, const session_opts *o, const char *spec, const sensitivity_map *heat,
                  gov_say_fn say, void *ud, gov_run **out, errbuf *err);
// Stops the loop; the plan in force stays.
void gov_run_free(gov_run *r);

// The generation hooks (app/turn.c): before a reply, after each of its tokens (between two
// tokens: may switch the plan), and after it (a switch still being made lands here).
void gov_run_turn_begin(gov_run *r);
void gov_run_token(gov_run *r, session *s, int32_t token);   // token: the one just sampled
void gov_run_turn_end(gov_run *r, session *s);

const governor *gov_run_governor(const gov_run *r);
// One line for panels and `governor` without arguments: target, position, the last reading,
// KL, changes and rollbacks.
void gov_run_status(const gov_run *r, char *buf, size_t n);
// The last change or rollback in one line ("token 150: lower 0 -> 46: 11.3 tok/s < 18; ..."),
// "" when none yet.
void gov_run_last_change(const gov_run *r, char *buf, size_t n);
// Every change and rollback, one line each, to say.
void gov_run_print_log(const gov_run *r, gov_say_fn say, void *ud);
// The trace (every token's reading, every decision, every drift check) as JSON.
int gov_run_save_json(const gov_run *r, const char *path, errbuf *err);
// The trace as SVG charts (app/plot.h): at path, the reading of the target's metric per token
// with the target's line and, on the right axis, MiB read per token (its steps are the
// changes); at kl_path (path's name + "-kl.svg", filled in; "" when no check ran) the drift
// checks' KL with the bound's line and top-1 agreement. kl_path NULL: the first chart only.
int gov_run_plot(const gov_run *r, const char *path, char *kl_path, size_t kl_n, errbuf *err);
// `expect` metrics of the loop (NULL-terminated names): gov_changes, gov_rollbacks,
// gov_lowered (tensors at the low type), gov_kl (the last drift check; -1 none), gov_tps (the
// last reading), gov_mib_per_token. -1 for an unknown name.
extern const char *const gov_run_metric_names[];
int gov_run_metric(const gov_run *r, const char *name, double *out);

#endif
