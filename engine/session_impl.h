// What the session's files share (engine/session.c, engine/session_shared.c): the session
// object itself, and the few steps both take. Not for callers outside engine/session*.c.
#ifndef CABIN_ENGINE_SESSION_IMPL_H
#define CABIN_ENGINE_SESSION_IMPL_H

#include "session.h"
#include "kv_cache.h"
#include "model.h"
#include "precision.h"

#include <pthread.h>
#include <stdatomic.h>

struct session {
    session_opts opts;
    model *m;
    backend *b;
    kv_cache kv;
    forward_ctx fc;
    forward_ctx fc_all;      // logits for every position (perplexity), made on first use
    sampler *smp;
    const chat_template *tmpl;
    char *system_prompt;
    char *default_system;    // the file template's system text, used when system_prompt is NULL
    float *logits;           // n_vocab: last position's logits
    int32_t *hist;           // every token fed since the last reset, in order (n_hist)
    int n_hist, cap_hist;
    int32_t *reuse;          // the conversation before session_restart: its tokens still in cache
    int n_reuse, cap_reuse;  // slots [0, n_reuse), as long as what is fed again equals them
    bool rows_stale;         // some cached rows were made under another plan or KV format: a
                             // fresh conversation would not make them so, so they are not reused
    unsigned resets;         // session_reset calls (which conversation hist is of)
    bool have_logits;
    bool reply_open;         // last reply ended without its closing token in the cache
    atomic_bool cancel;
    session_stats st;
    precision_plan plan;     // the plan in force
    // a plan being prepared on a worker thread, swapped in between two tokens
    pthread_t switch_thread;
    bool switch_running;
    atomic_bool switch_ready;
    int switch_rc;
    errbuf switch_err;
    precision_plan switch_plan;
    plan_staging switch_staging;
    volatile float switch_progress;
    double switch_requested_at;
    token_filter filter;     // mask == NULL: none
    power_monitor *power;    // not owned
    bool profiling;
    char notice[ERR_LINE];   // said once to the front end (session_take_notice); "" when none
    bool broken;             // a move to the CPU failed half-way: every forward pass refuses
    // slots (session_open_sibling): sessions on one model and backend, each with its own cache
    struct session_group *group;   // NULL: alone
    bool owns_model;         // the first of a group (or one alone): closes the model and backend
    bool decoding;           // counted in group->decoding
    unsigned rows_epoch;     // the group's plan epoch when the cache was last empty
};

// The sessions of one model and backend (session_open_sibling): their forward passes go through
// one gate, first come first served; a decode step (one token, its logits) takes with it the
// decode steps of the others waiting, in one pass (model_forward_seqs). A precision switch is
// seen by all.
#define SESSION_GROUP_MAX 16

typedef struct gate_req gate_req;

typedef struct session_group {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gate_req *head, *tail;         // the passes waiting, in the order they asked
    bool busy;                     // a pass (or a plan swap) holds the gate
    int members;
    int decoding;                  // members between their prefill and their reply's end
    unsigned epoch;                // precision switches so far: rows made before one are stale
    precision_plan plan;           // the plan in force, for every member
    forward_ctx multi;             // buffers of a pass over several conversations (made at first use)
    float *multi_logits;           // its logits on the host: (SESSION_GROUP_MAX, n_vocab)
} session_group;

// The cached rows no longer are what a fresh conversation would compute (other weights, a
// format round trip): session_restart does not offer them again.
void session_rows_stale(session *s);
// Whether rows made since the cache was last empty were made under another plan (a member of a
// group switched it).
bool session_rows_from_other_plan(const session *s);
// The group's plan epoch now (0 alone).
unsigned session_plan_epoch(const session *s);
// One forward pass through the group's gate (alone: straight through).
int session_forward_gated(session *s, forward_ctx *fc, const int32_t *tokens, int n, bool all_logits, float *logits,
                          errbuf *err);
// s joins first's group (made when first has none); leaves it when it closes (the last frees it).
void session_group_join(session *s, session *first);
void session_group_leave(session *s);
// The group's gate held around a step that changes what every member reads (a plan's swap).
void session_gate_enter(session *s);
void session_gate_leave(session *s);
// A member begins (true) or ends (false) decoding a reply: a decode step waits a moment for the
// others decoding to post theirs, to share the pass.
void session_group_decoding(session *s, bool on);
// Passes waiting at the gate (for tests that line them up).
int session_gate_waiting(session *s);

#endif
