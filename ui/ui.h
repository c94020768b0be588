// The front-end core shared by the terminal workbench (tui/) and any other face: the worker
// thread that owns the session and posts events to a queue the drawing thread drains
// (ui/worker.c), the snapshot every panel draws from, the plan KL measured aside
// (ui/measure.c) and the voice pipeline glue (ui/voice.c). Nothing here draws or reads keys:
// a face drains the events, copies the snapshot and turns its keys into these calls.
#ifndef CABIN_UI_H
#define CABIN_UI_H

#include "app/app.h"
#include "engine/hwstate.h"
#include "engine/precision.h"
#include "engine/sensitivity.h"
#include "engine/session.h"
#include "engine/telemetry.h"

#include <stdbool.h>
#include <stdint.h>

#define UI_MAX_LAYERS 128
#define UI_MAX_VFIELDS 48

// The voice pipeline as the Voice panel sees it (ui/voice.c fills it on the UI thread).
enum ui_voice_state { TV_OFF, TV_STARTING, TV_IDLE, TV_LISTENING, TV_RECOGNISING, TV_THINKING, TV_SPEAKING };
typedef struct ui_voice_view {
    int state;                   // enum ui_voice_state
    bool hands_free;             // a `:voice FILE` run: the VAD takes the turns
    bool have_level;
    float level_db;              // input level now, dBFS (when have_level)
    char line[240];              // off: why; else the devices ("in: ... | out: ...")
    char transcript[256];        // the last one ("" none yet)
    int turns;                   // turns finished
    double asr_ms, first_token_ms, first_audio_ms;   // last turn, ms from release; <0 unknown
    bool audio_played;           // first_audio_ms is the first sample played (else handed over)
    bool barged_in;              // the last turn's reply was cut off by a new press
    bool turn_vad;               // the last turn ended by the VAD (else by a release)
    int refused;                 // turns refused as not a command (asr_result.refused) ...
    char refused_text[256];      // ... and what the last one was heard as
} ui_voice_view;

// The KL of the plan in force against the file's precision (ui/measure.c).
// KL_WAITING: noted, and waiting for the conversation to be idle a second (it is measured between
// turns); KL_MEASURING: running, kl_done of kl_total windows of the probe text scored.
enum ui_kl_state { KL_NONE, KL_FILE, KL_MEASURING, KL_DONE, KL_FAILED, KL_WAITING };

// What the heat map panel shows; ui_heat_modes has their names (NULL-terminated).
enum ui_heat_mode { HEAT_SENSITIVITY, HEAT_KV, HEAT_ATTENTION, HEAT_MODES };
extern const char *const ui_heat_modes[];

// Everything the panels draw from. The session half is made on the worker thread (the only one
// that touches the session) and copied out under a lock; the rest is added by the UI thread.
typedef struct ui_snapshot {
    // from the worker
    session_stats st;
    bool have_stats;
    char model_name[96];
    int n_layer;
    uint8_t types[UI_MAX_LAYERS][TK_LAYER_KINDS];   // the weight type each layer matrix runs at
    uint32_t embd_type, output_type;
    char plan_name[48];          // "q8_0", "as in file", "mixed"
    char kv_format[16];          // "f16", "q8", "q4", ...
    char kv_policy[32];
    int kv_used[UI_MAX_LAYERS], kv_quant[UI_MAX_LAYERS];   // slots filled / quantized per layer
    int kv_cap[UI_MAX_LAYERS];                             // slots it can hold (a window layer: its ring)
#define UI_ATT_BINS 48
    float att[UI_MAX_LAYERS][UI_ATT_BINS];   // last token's attention (mean over heads),
    int att_bins, att_slots;                    // context slots summed into att_bins bins
    bool generating;
    int turn;                    // completed turns (for "changed this turn" marks)
    char vfield[UI_MAX_VFIELDS][40], vvalue[UI_MAX_VFIELDS][40];
    int vchanged[UI_MAX_VFIELDS];   // the turn at which a field last changed (0 = never)
    int n_vfields;
    char switch_target[32];      // the plan being prepared ("" = none)
    double kl, agree;            // KL / top-1 agreement of the current plan vs the file; <0 unknown
    int kl_state;                // enum ui_kl_state
    int kl_done, kl_total;       // KL_MEASURING: windows scored of the run's
    char governor[200];          // the governor's state line ("" when it is off) ...
    char governor_last[200];     // ... and its last change ("" none yet)
    // from the UI thread
    power_reading pw[TEL_MAX_SOURCES];
    int n_pw;
    char power_from[32];
    bool power_measured;
    double watts;                // the total now
    hw_state hw;                 // CPU clock, throttling, temperature, supply (engine/hwstate.h)
    double hw_t;                 // when hw was read (seconds; at most 2 reads a second)
    bool hw_throttling;          // the throttle count rose between the last two readings
    const sensitivity_map *heat; // NULL: no heat map yet
    char heat_status[96];        // "computing 12/42" or ""
    int heat_mode;               // enum ui_heat_mode (names: ui_heat_modes)
    ui_voice_view voice;
    double now;                  // seconds
} ui_snapshot;

// The kinds of line in the conversation (the worker's EV_LINE events and the faces' logs).
enum msg_kind { MSG_USER, MSG_ASSIST, MSG_ACTION, MSG_VEHICLE, MSG_REFUSED, MSG_INFO, MSG_ERROR };

// ---- the conversation (ui/chat.c) ----
typedef struct chat_msg {
    int kind;
    char *text;
    size_t len, cap;
    double t;
} chat_msg;
typedef struct chat_log {
    chat_msg *m;
    int n, cap;
    int streaming;               // index of the reply being streamed, -1 none
    int scroll;                  // rows scrolled up from the bottom
} chat_log;
void chat_init(chat_log *c);
void chat_free(chat_log *c);
int chat_add(chat_log *c, int kind, const char *text);
void chat_append(chat_log *c, int idx, const char *piece, size_t len);
void chat_set_text(chat_log *c, int idx, const char *text);
// What a message starts with ("you › ", "  ✓ vehicle: "; ascii: no UTF-8 drawing characters).
const char *chat_prefix(int kind, bool ascii);
// What a message shows: a reply being streamed in the assistant format shows its action apart
// ("[climate.set temp=22] ...") and "…" until the action is complete (tmp: room for the former).
const char *chat_display_text(const chat_msg *m, char *tmp, size_t n, bool ascii);
// The conversation pane's rows, the same for every face: each message's display text (ascii as
// chat_display_text takes it) wrapped to `cols` cells after its prefix, cut at spaces, a blank
// row before each turn, newest at the bottom; c->scroll is clamped to what there is. next gives
// the byte length of the character at s (n bytes left) and its width in cells (< 0: shown as 1).
// Returns how many rows the pane shows (at most h): *rows (xmalloc'd; the caller frees) holds
// them top to bottom.
typedef struct chat_row {
    int msg;      // message index, -1 for a blank row
    int off, len; // bytes of the message's display text
    bool first;   // the message's first row (drawn after its prefix)
} chat_row;
typedef int (*chat_char_fn)(const char *s, int n, int *cells);
int chat_layout(chat_log *c, int h, int cols, bool ascii, chat_char_fn next, chat_row **rows);
int chat_text_cells(const char *s, int bytes, chat_char_fn next);   // Σ cells, < 0 counting 1
// What the panels show in words: ui/panel_data.h.
// Transcript and stats as JSON, written atomically (temp file + rename).
int chat_save_json(const chat_log *c, const ui_snapshot *s, const char *path, errbuf *err);
// $XDG_STATE_HOME/cabin (made if missing) + "/" + name, or "" when there is no home.
void ui_state_path(const char *name, char *out, size_t n);

// ---- the worker thread (ui/worker.c) ----
// EV_USER: a spoken turn's text; EV_COMPARE: `compare` streaming (msg_kind -1: a prompt begins,
// text the prompt; 0 or 1: a piece of plan A's or B's reply)
enum ev_kind { EV_TOKEN, EV_LINE, EV_TURN_DONE, EV_HEATMAP, EV_USER, EV_COMPARE };
typedef struct ui_event {
    int kind;
    int msg_kind;                // EV_LINE: enum msg_kind
    char *text;                  // malloc'd
    sensitivity_map *heat;       // EV_HEATMAP (ownership passes to the UI)
} ui_event;

typedef struct worker worker;
worker *worker_start(app_ctx *c, errbuf *err);
// Stops the worker thread (its last events stay queued for worker_drain); worker_free then frees it.
void worker_stop(worker *w);
void worker_free(worker *w);
void worker_say(worker *w, const char *text);
// A spoken turn (any thread but the UI's): the text goes through app_say like a typed turn (the
// UI shows it as the user's), and every reply piece is also given to piece (on the worker
// thread; false stops the reply). Blocks until the turn is done: 0, -1 the turn failed (the
// chat says why), -2 cancelled or the worker stopped before it ran.
int worker_say_voice(worker *w, const char *text, bool (*piece)(void *ud, const char *p, int len), void *ud);
// What a turn asked for from another thread is told besides the conversation (on the worker
// thread; every hook may be NULL).
typedef struct worker_sink {
    void *ud;
    bool (*piece)(void *ud, const char *p, int len);   // a reply piece; false stops the reply
    void (*action)(void *ud, const action *a, const char *desc);   // as turn_hooks (app/turn.h)
    void (*change)(void *ud, const action *a, const char *change);
    void (*refused)(void *ud, const action *a, const char *reason, const char *sentence);
    const char *label;           // a line said in the conversation before the turn (NULL: none)
    bool (*gone)(void *ud);      // the asker left while the turn waited in the queue: it is dropped
                                 // before it starts (NULL: never asked)
} worker_sink;
// A turn another face asks for (any thread but the UI's; cabin workbench --serve): as a spoken
// one, with sink told the pieces and the action, in the queue with the typed turns; *st (may be
// NULL) gets the session's figures once it is done. 0, -1 failed, -2 the worker stopped first,
// -3 sink.gone said the asker left before the turn began (nothing was said).
int worker_say_remote(worker *w, const char *text, const worker_sink *sink, session_stats *st);
// A line of the command language another face asks for (cabin workbench --serve's
// /v1/cabin/command), run in the queue as cabin serve's route runs it (CMD_IN_HTTP), after the
// line label in the conversation: *output (malloc'd) what it printed. 0, or -1 with err.
int worker_exec_remote(worker *w, const char *line, const char *label, char **output, errbuf *err);
// Copies the worker's newest snapshot (its half) without taking its news from the face (any thread).
void worker_peek(worker *w, ui_snapshot *s);
// Stops the spoken turn being generated, or drops a queued one (barge-in). Thread-safe.
void worker_cancel_voice(worker *w);
// A line in the conversation from any thread (enum msg_kind).
void worker_post_line(worker *w, int msg_kind, const char *text);
// The KL / top-1 agreement of the plan in force vs the file (measured aside, ui/measure.c).
int worker_plan_quality(worker *w, double *kl, double *agree, int *done, int *total);   // enum ui_kl_state
void worker_exec(worker *w, const char *line);        // a `:` command through cmdlang
// A live plan switch: prepared on a helper thread, swapped in between two tokens.
void worker_request_plan(worker *w, const precision_plan *p, const char *name);
// A KV cache format switch (f16, q8, q4): applied between turns (the cache is converted).
void worker_request_kv(worker *w, const char *format);
// A heat map for the panel, aside: file a map (.json) to load, a text to measure on at type, or
// "" for a short fixed text.
void worker_heatmap(worker *w, uint32_t type, const char *file);
void worker_cancel(worker *w);                          // Ctrl-C: stop the reply
bool worker_busy(worker *w);
// Drains up to max events into out (the caller frees text); returns how many.
int worker_drain(worker *w, ui_event *out, int max);
// Copies the newest session snapshot into s (the worker half); true if it changed since.
bool worker_snapshot(worker *w, ui_snapshot *s);

// ---- the voice pipeline (ui/voice.c) ----
typedef struct tvoice tvoice;
// Opens nothing on this thread: a device is opened on a thread of its own (the panel says
// "starting" and then "idle" or why voice is off).
tvoice *tvoice_start(worker *w, const char *in, const char *out, bool off);
void tvoice_stop(tvoice *tv);    // before worker_stop: a spoken turn in flight needs the worker
// F5: talk / stop talking (a terminal has no key-up). Writes a short notice to msg; returns -1
// when voice is off (msg says why), else 0.
int tvoice_ptt(tvoice *tv, char *msg, size_t n);
// `:voice FILE.wav`: the turns the VAD finds in the file, through the same pipeline and panel.
int tvoice_file(tvoice *tv, const char *path, errbuf *err);
bool tvoice_busy(tvoice *tv);    // a turn or a `:voice` run in progress (scenes wait)
bool tvoice_talking(tvoice *tv); // talking (between a press and its release)
void tvoice_view(tvoice *tv, ui_voice_view *out);

// ---- plan quality measured aside (ui/measure.c) ----
// A thread at the lowest priority measures the KL / top-1 agreement of a precision plan against
// the file's precision on ui_probe_text (engine/quality.h, as `cabin ppl --kl-base`), on a
// session of its own, only while busy(ud) is false (between turns), and caches it per plan.
typedef struct measurer measurer;
measurer *measure_start(bool (*busy)(void *ud), void *ud);
void measure_stop(measurer *m);
// The plan in force and the options its session was opened with (worker thread; cheap when
// nothing changed, so it may be called during a reply).
void measure_note(measurer *m, const session_opts *o, const precision_plan *p);
int measure_get(measurer *m, double *kl, double *agree, int *done, int *total);   // enum ui_kl_state
extern const char ui_probe_text[];   // a short fixed in-car text (heat maps, plan KL)

#endif
