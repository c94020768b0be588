// The precision governor's loop state, shared by app/govern.c (the loop) and
// app/govern_report.c (status, log, trace as JSON and SVG). Private to those two files.
#ifndef CABIN_APP_GOVERN_RUN_H
#define CABIN_APP_GOVERN_RUN_H

#include "app/govern.h"
#include "engine/hwstate.h"

#define TRACE_MAX 200000          // readings kept for the trace

// A generated token's distribution under the plan in force, kept for the next drift check.
typedef struct capture {
    unsigned conversation;        // session_resets when it was sampled
    int hist_len;                 // tokens in the conversation when it was sampled
    int32_t token;                // the token sampled from it
    float *logits;                // n_vocab
} capture;

// One row of the trace: a token's reading.
typedef struct trace_row {
    long token;
    float tok_ms;                 // this token's time (ms), 0 for a turn's first
    float tps, watts, jpt;        // the reading over the window (< 0 none yet)
    float kl;                     // the last drift check (< 0 none)
    int pos;                      // ladder position in force
} trace_row;

typedef struct drift_row { long token; double kl, top1; int n, pos; double ms; } drift_row;

struct gov_run {
    governor g;
    precision_plan source;        // the plan in force when the loop started
    precision_plan requested;     // the plan of the change in progress
    int n_layer, n_vocab;
    char source_name[24];
    session *shadow;              // the source precision, for drift checks (NULL: drift off)
    power_monitor *pm;            // NULL: no power reading
    gov_say_fn say;
    void *ud;
    bool in_turn;
    strbuf held;                  // lines said during a reply, said after it
    // readings
    long tokens;                  // tokens seen since the start
    double t_out;                 // when the hook last returned (0: a turn's first token next)
    power_mark out_mark;
    bool have_out_mark;
    float *ring_ms, *ring_j;      // the last `window` tokens' times (ms) and joules
    int ring_n, ring_at;
    gov_reading last;
    bool have_reading;
    hw_state hw_prev, hw;         // the machine (engine/hwstate.h), read at most twice a second
    double hw_t;
    bool throttled;               // throttling seen since the last reading
    // drift checks
    capture *caps;                // ring of drift_window
    int n_caps, cap_at;
    long last_check;
    double *lsm_a, *lsm_b;        // n_vocab each
    float *rows;                  // FEED_CHUNK × n_vocab
    bool said_drift_skipped;      // a failed drift check was said (until one runs again)
    // the trace
    trace_row *trace;
    long n_trace, cap_trace;
    drift_row *drifts;
    int n_drift, cap_drift;
};

static inline double mib(uint64_t b) { return (double)b / (1 << 20); }

#endif
