// The app object: the assistant (session, simulated car, grammar; app/turn.h), the transcript
// a run prints, its expectations and its front end's hooks. The verbs of the command language
// act on it (app/verbs.h); the grammar and the table that names them are app/cmdlang.c's.
#ifndef CABIN_APP_H
#define CABIN_APP_H

#include "app/cmdlang.h"
#include "app/turn.h"
#include "base/str.h"
#include "engine/session.h"

#include <stdbool.h>
#include <stdio.h>

// What the commands act on: the assistant (session, car, grammar) and what a run prints.
typedef struct app_ctx {
    assistant as;
    session_opts opts;       // how the session was opened (model path, backend, ...)
    char *model_path;
    unsigned front;          // the front end driving it (enum cmd_front_kind): what it parses
    char *last_reply;        // text of the last assistant reply
    strbuf transcript;       // everything the run printed (for snapshot)
    double t0;               // run start (timestamps)
    double speed;            // demo pacing: 1 = human pace for `say`, 0 = instant
    bool check;              // stop at the first failed expectation
    int passed, failed;
    bool quit;
    FILE *out;               // where the transcript is printed (NULL: nowhere)
    bool timestamps;         // prefix lines with [seconds]
    struct sensitivity_map *heatmap;   // the last `heatmap` run (NULL: none)
    // front-end hooks: a turn's events as they happen, besides the transcript lines (ud: the
    // front end's; NULL: the transcript only)
    const turn_hooks *turn;
    // what a loop running beside the commands says (the governor's decisions, app/govern.h):
    // the front end shows it its own way; NULL: app_print (the transcript)
    void (*notice)(void *ud, const char *line);
    void *notice_ud;
    // `compare`: the replies as they stream (compare_opts.on_piece, on the thread running the
    // command); NULL: they are printed side by side with the table when both plans are done
    void (*compare_piece)(void *ud, int side, int idx, const char *prompt, const char *piece, int len);
    void *compare_ud;
    int (*snapshot)(struct app_ctx *c, const char *path, errbuf *err); // screen as text
} app_ctx;

// Application state helpers shared by front ends.
int app_open(app_ctx *c, const session_opts *o, bool free_actions, errbuf *err);
void app_close(app_ctx *c);
// Prints (and records in the transcript) one line: "[  1.234] text" when timestamps are on.
void app_print(app_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// One user turn through the assistant: "you:", "action:", "vehicle:" / "refused:" and "cabin:"
// lines in the transcript, and the turn's events to c->turn.
int app_say(app_ctx *c, const char *text, errbuf *err);
// A metric by name from the session stats (app_metric_names lists them); -1 if unknown. With
// c NULL only the name is checked.
int app_metric(app_ctx *c, const char *name, double *out);
const char *app_metric_names(void);   // "decode_tps, prefill_tps, ..."

// The precision governor on the app's assistant (app/run_governor.c): start (or replace) with a
// target spec; stop, saying why ("the plan was set by hand").
int app_governor_start(app_ctx *c, const char *spec, errbuf *err);
void app_governor_stop(app_ctx *c, const char *why);
// `set KEY VALUE`: whether KEY is a setting, and the keys ("temp, top_k, ...").
bool app_setting_known(const char *name);
const char *app_setting_names(void);
// A spoken turn from a WAV file through the voice pipeline (app/voice_file.c).
int app_voice_file(app_ctx *c, const char *path, errbuf *err);

// `snapshot FILE.png` is a picture of the window (cabin gui); the other faces write text.
bool app_snapshot_is_png(const char *path);
// The one-line error of a PNG asked for where there is no window: always -1.
int app_snapshot_needs_window(const char *path, errbuf *err);

#endif
