// The precision governor's decisions: given one telemetry reading per step, which precision to
// run at so that a target holds (decode tok/s at least N, watts or joules per token at most W or
// J) with the least quality lost, and a drift bound (KL against the source precision) that rolls
// a change back. Pure logic: no session, no clock, no files; app/govern.c feeds it readings from
// a running session and applies what it decides. tests/test_governor.c drives it with a
// simulated machine.
//
// The ladder: the layer matrices (layer, kind) whose type can go down to the low type, ordered
// least sensitive first (KL per byte saved, from the sensitivity heat map). Position k of the
// ladder = its first k tensors at the low type, the rest at the source precision. Lowering
// moves k up (the least sensitive go first); raising moves it down, so the most sensitive of
// the lowered tensors come back first.
//
// A step: wait until the plan in force has run `window` tokens and `every` tokens have passed
// since the last change; then, if the reading misses the target, go down the ladder as far as
// the bandwidth model says is needed (tok/s ∝ 1/bytes, J/token ∝ bytes; watts: a fixed step);
// if it beats the target by more than `band`, come up as far as the model says still holds
// the target with half the band to spare. The model's exponent is learnt from each change (a
// machine where part of a token's time does not depend on bytes gains less than bandwidth says). A raise that had to be undone freezes raising for
// `freeze` tokens, doubled each time it happens again: no oscillation. A drift check above the
// KL bound rolls the last lowering back and blocks that part of the ladder for `retry_after`
// tokens.
#ifndef CABIN_APP_GOVERNOR_H
#define CABIN_APP_GOVERNOR_H

#include "base/base.h"
#include "engine/precision.h"

#include <stdbool.h>
#include <stdint.h>

enum gov_metric { GOV_KL_ONLY, GOV_TPS, GOV_WATTS, GOV_JPT };
const char *gov_metric_name(int metric);   // "kl", "tps", "watts", "j_per_token"

typedef struct gov_target {
    int metric;              // enum gov_metric; GOV_KL_ONLY: go down while the KL bound holds
    double value;            // tok/s floor, or watts / joules-per-token ceiling
    double kl_max;           // drift bound in nats per token; < 0: none (KL is still tracked)
} gov_target;

#define GOV_MAX_WINDOW 256        // window and drift_window: tokens held per reading / check

typedef struct gov_knobs {
    int every;               // M: tokens from one change to the next, at least (default 16)
    int window;              // tokens one reading spans, after the plan in force settled (8)
    double band;             // hysteresis: raise only above target × (1 + band) (0.15)
    int freeze;              // tokens raising is frozen after an undone raise; doubles (128)
    int drift_every;         // N: tokens between drift checks (default: 2 × every)
    int drift_window;        // tokens re-scored by a drift check (16)
    int retry_after;         // tokens a rolled-back part of the ladder is not retried (512)
    uint32_t low_type;       // the type tensors go down to (q4_0)
    bool drift;              // run drift checks at all (true)
} gov_knobs;

gov_knobs gov_knobs_default(void);
// "tps>=30", "watts<=12 kl<=0.05", "j_per_token<=0.4 every=32", "kl<=0.02 low=q8_0"; knobs:
// every= window= band= freeze= drift_every= drift_window= retry_after= low= drift=on|off.
// Errors name the word that is wrong.
int gov_parse(const char *spec, gov_target *t, gov_knobs *k, errbuf *err);
// "tps>=30 kl<=0.05" (what gov_parse reads back; knobs left out)
void gov_target_str(const gov_target *t, char *buf, size_t n);

typedef struct gov_tensor {
    int layer, kind;             // enum tensor_kind (a layer kind)
    uint64_t bytes_high;         // bytes at the source precision
    uint64_t bytes_low;          // bytes at the low type
    double sens;                 // KL at the low type (heat map cell), nats per token
} gov_tensor;

typedef struct gov_ladder {
    int n;
    gov_tensor *t;               // n entries, least sensitive (per byte saved) first
    uint64_t bytes_fixed;        // bytes read per token that the ladder does not govern
} gov_ladder;

// Sorts t[0..n) into ladder order (KL per byte saved, ascending; ties by layer, then kind).
void gov_ladder_sort(gov_ladder *l);
// Bytes read per token at position k: the governed tensors plus bytes_fixed.
uint64_t gov_ladder_bytes(const gov_ladder *l, int k);
void gov_ladder_free(gov_ladder *l);

// One reading: what the machine reports over the last `window` tokens.
typedef struct gov_reading {
    long token;              // tokens generated since the governor started
    double tps;              // decode tok/s (median token time over the window)
    double watts;            // mean total power over the window; < 0 unknown
    bool watts_measured;     // false: the labelled estimate
    double j_per_token;      // watts / tps; < 0 unknown
    double cpu_mhz, cpu_max_mhz;   // 0 unknown
    bool throttled;          // the CPU reported throttling over the window
    int on_battery;          // 1, 0, -1 unknown
} gov_reading;

enum gov_action { GOV_HOLD, GOV_LOWER, GOV_RAISE, GOV_ROLLBACK };
const char *gov_action_name(int action);   // "hold", "lower", "raise", "rollback"

typedef struct gov_decision {
    long token;
    int action;                  // enum gov_action
    int from, to;                // ladder positions
    uint64_t bytes_from, bytes_to;
    gov_reading r;               // the reading it was made on
    double kl, top1;             // the last drift check (kl < 0: none yet)
    char reason[240];
} gov_decision;

typedef struct governor {
    gov_target target;
    gov_knobs knobs;
    gov_ladder ladder;           // owned
    int pos;                     // tensors lowered
    bool pending;                // a change decided, not yet running (gov_applied not called)
    long settled_at;             // token from which the plan in force runs (readings count)
    long last_change;            // token of the last change; LONG_MIN/2 before any
    int last_action;             // of the last change
    int freeze_len;              // the next freeze's length (doubles)
    long freeze_until;           // no raise before this token
    int block_pos;               // positions >= block_pos are not entered ...
    long block_until;            // ... before this token (a rollback)
    double kl, top1;             // the last drift check
    double alpha;                // how the metric scales with bytes: tok/s ∝ bytes^-alpha,
                                 // J/token ∝ bytes^alpha; starts at 1 (bandwidth-bound), learnt
                                 // from each change's effect
    double metric_before;        // the reading a change was decided on (0: nothing to learn)
    uint64_t bytes_before;
    bool checked;                // a drift check ran on the plan in force (a kl bound waits
                                 // for one before it goes further down)
    int changes, rollbacks, drift_checks;
    gov_decision *log;           // every change and rollback (holds are not logged)
    int n_log, cap_log;
} governor;

// Takes the ladder (owned from now on). Starts at position 0 (the source precision).
void gov_init(governor *g, const gov_target *t, const gov_knobs *k, gov_ladder *ladder);
void gov_free(governor *g);
// One reading: fills d; returns d->action. For LOWER/RAISE the caller switches to position
// d->to and calls gov_applied once that plan runs.
int gov_step(governor *g, const gov_reading *r, gov_decision *d);
// A drift check's result (KL of the plan in force against the source on the last tokens, and
// top-1 agreement): ROLLBACK (d->to is where to go) when it is above the bound, else HOLD.
int gov_drift(governor *g, long token, double kl, double top1, gov_decision *d);
// The change decided is running from `token` on.
void gov_applied(governor *g, long token);
// The change decided could not be made (the switch failed): back to where it was.
void gov_failed(governor *g);
// The plan at ladder position k: the source plan with the first k tensors at the low type.
int gov_plan(const governor *g, const precision_plan *source, int n_layer, int k, precision_plan *out,
             errbuf *err);

#endif
