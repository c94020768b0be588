// The ncurses workbench: a conversation on the left, live panels on the right, a status bar and
// an input line at the bottom. One thread draws (the UI thread); generation runs on a worker
// thread that owns the session and posts events (tokens, lines, snapshots) to a queue the UI
// drains (tui/worker.c). Panels are plugins of one shape (tui_panel, tui/panels.c).
#ifndef CABIN_TUI_H
#define CABIN_TUI_H

#include "app/cmdlang.h"
#include "engine/hwstate.h"
#include "engine/precision.h"
#include "engine/sensitivity.h"
#include "engine/session.h"
#include "engine/telemetry.h"

#include <ncurses.h>
#include <stdbool.h>
#include <stdint.h>

#define TUI_MAX_LAYERS 128
#define TUI_MAX_VFIELDS 48

// The voice pipeline as the Voice panel sees it (tui/voice.c fills it on the UI thread).
enum tui_voice_state { TV_OFF, TV_STARTING, TV_IDLE, TV_LISTENING, TV_RECOGNISING, TV_THINKING, TV_SPEAKING };
typedef struct tui_voice_view {
    int state;                   // enum tui_voice_state
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
} tui_voice_view;

// The KL of the plan in force against the file's precision (tui/measure.c).
enum tui_kl_state { KL_NONE, KL_FILE, KL_MEASURING, KL_DONE, KL_FAILED };

// Everything the panels draw from. The session half is made on the worker thread (the only one
// that touches the session) and copied out under a lock; the rest is added by the UI thread.
typedef struct tui_snapshot {
    // from the worker
    session_stats st;
    bool have_stats;
    char model_name[96];
    int n_layer;
    uint8_t types[TUI_MAX_LAYERS][TK_LAYER_KINDS];   // the weight type each layer matrix runs at
    uint32_t embd_type, output_type;
    char plan_name[48];          // "q8_0", "as in file", "mixed"
    char kv_format[16];          // "f16", "q8", "q4", ...
    char kv_policy[32];
    int kv_used[TUI_MAX_LAYERS], kv_quant[TUI_MAX_LAYERS];   // slots filled / quantized per layer
#define TUI_ATT_BINS 48
    float att[TUI_MAX_LAYERS][TUI_ATT_BINS];   // last token's attention (mean over heads),
    int att_bins, att_slots;                    // context slots summed into att_bins bins
    bool generating;
    int turn;                    // completed turns (for "changed this turn" marks)
    char vfield[TUI_MAX_VFIELDS][40], vvalue[TUI_MAX_VFIELDS][40];
    int vchanged[TUI_MAX_VFIELDS];   // the turn at which a field last changed (0 = never)
    int n_vfields;
    char switch_target[32];      // the plan being prepared ("" = none)
    double kl, agree;            // KL / top-1 agreement of the current plan vs the file; <0 unknown
    int kl_state;                // enum tui_kl_state
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
    const sensitivity_map *heat; // NULL: no heat map yet
    char heat_status[96];        // "computing 12/42" or ""
    int heat_mode;               // see tui_heat_modes
    tui_voice_view voice;
    double now;                  // seconds
} tui_snapshot;

typedef struct tui_rect { int y, x, h, w; } tui_rect;

// A panel: its name, a function that reads the newest snapshot (keeps whatever history it
// wants, e.g. a sparkline ring) and one that draws into a rectangle of a window.
typedef struct tui_panel {
    const char *name;
    int (*height)(const tui_snapshot *s, int w);    // rows it would like (border included)
    void (*update)(const tui_snapshot *s);
    void (*draw)(WINDOW *w, tui_rect r, const tui_snapshot *s, bool focused);
} tui_panel;

// The table (tui/panels.c); a new panel adds one line there and its own file.
const tui_panel *const *tui_panels(int *n);

// ---- drawing helpers (tui/draw.c) ----
enum tui_color {
    TC_NONE, TC_TITLE, TC_DIM, TC_USER, TC_ASSIST, TC_ACTION, TC_VEHICLE, TC_REFUSED, TC_ERROR,
    TC_INFO, TC_STATUS, TC_SEL, TC_GOOD, TC_WARN,
    TC_T_F32, TC_T_F16, TC_T_BF16, TC_T_Q8, TC_T_Q4, TC_T_OTHER,
    TC_HEAT0,                    // TC_HEAT0 .. TC_HEAT0+TUI_HEAT_STEPS-1: cold to hot
};
#define TUI_HEAT_STEPS 6
void tui_colors_init(void);      // 256, 8 or no colours; NO_COLOR respected
int tui_attr(int color);         // COLOR_PAIR (or a mono attribute) for a tui_color
int tui_type_color(uint32_t wtype);
// Draws the frame and title of a panel; returns the inner rectangle.
tui_rect tui_box(WINDOW *w, tui_rect r, const char *title, bool focused);
// UTF-8 text clipped to at most `cols` columns at (y, x); control bytes and broken UTF-8 are
// shown as '?'. Returns the columns used.
int tui_puts(WINDOW *w, int y, int x, const char *s, int cols, int attr);
int tui_printf(WINDOW *w, int y, int x, int cols, int attr, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
// Sparkline of v[0..n) (oldest first) in `cols` columns, scaled to its max.
void tui_sparkline(WINDOW *w, int y, int x, int cols, const float *v, int n, int attr);
// A horizontal bar of frac (0..1) in `cols` columns.
void tui_bar(WINDOW *w, int y, int x, int cols, double frac, int attr);
// Columns a UTF-8 string takes (broken bytes count 1).
int tui_width(const char *s, int bytes);
// Byte length of the next UTF-8 character at s (1 for a broken byte), and its columns.
int tui_next_char(const char *s, int bytes, int *cols);
extern bool tui_ascii;           // no UTF-8 locale: ASCII drawing characters

// ---- the conversation (tui/chat.c) ----
enum msg_kind { MSG_USER, MSG_ASSIST, MSG_ACTION, MSG_VEHICLE, MSG_REFUSED, MSG_INFO, MSG_ERROR };
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
void chat_draw(WINDOW *w, tui_rect r, chat_log *c);
// Transcript and stats as JSON, written atomically (temp file + rename).
int chat_save_json(const chat_log *c, const tui_snapshot *s, const char *path, errbuf *err);
// $XDG_STATE_HOME/cabin (made if missing) + "/" + name, or "" when there is no home.
void tui_state_path(const char *name, char *out, size_t n);

// ---- the input line (tui/lineedit.c) ----
typedef struct line_edit {
    char buf[2048];
    int len, cur;                // bytes
    char **hist;
    int n_hist, hist_pos;        // hist_pos == n_hist: the line being typed
    char saved[2048];            // the line being typed while browsing history
    bool searching;              // Ctrl-R
    char search[128];
    int search_hit;              // history index shown, -1 none
    char hist_path[1024];
    int comp_i;                  // Tab: next completion index
    char comp_prefix[64];
} line_edit;
void le_init(line_edit *e, const char *hist_path);
void le_free(line_edit *e);
// Handles a key (wget_wch result). Returns 1 when a line was entered (in e->buf, then cleared by
// le_clear after use), 0 otherwise.
int le_key(line_edit *e, int is_key, wint_t ch);
void le_clear(line_edit *e);
void le_history_add(line_edit *e, const char *line);
void le_draw(WINDOW *w, int y, int x, int cols, line_edit *e, bool focused);

// ---- the worker thread (tui/worker.c) ----
// EV_USER: a spoken turn's text; EV_COMPARE: `compare` streaming (msg_kind -1: a prompt begins,
// text the prompt; 0 or 1: a piece of plan A's or B's reply)
enum ev_kind { EV_TOKEN, EV_LINE, EV_TURN_DONE, EV_HEATMAP, EV_USER, EV_COMPARE };
typedef struct tui_event {
    int kind;
    int msg_kind;                // EV_LINE: enum msg_kind
    char *text;                  // malloc'd
    sensitivity_map *heat;       // EV_HEATMAP (ownership passes to the UI)
} tui_event;

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
// Stops the spoken turn being generated, or drops a queued one (barge-in). Thread-safe.
void worker_cancel_voice(worker *w);
// A line in the conversation from any thread (enum msg_kind).
void worker_post_line(worker *w, int msg_kind, const char *text);
// The KL / top-1 agreement of the plan in force vs the file (measured aside, tui/measure.c).
int worker_plan_quality(worker *w, double *kl, double *agree);   // enum tui_kl_state
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
int worker_drain(worker *w, tui_event *out, int max);
// Copies the newest session snapshot into s (the worker half); true if it changed since.
bool worker_snapshot(worker *w, tui_snapshot *s);

// ---- the workbench (tui/workbench.c) ----
typedef struct tui_opts {
    session_opts s;
    const char *scene;           // run this scene file in the workbench first (may be NULL)
    bool exit_after_scene;
    const char *audio_in;        // capture device or FILE.wav (NULL: the default device)
    const char *audio_out;       // playback device or FILE.wav (NULL: the default device; none
                                 // when audio_in is a file)
    bool no_voice;               // open no audio device (F5 off; `:voice FILE` still works)
    bool free_actions;           // no grammar on the model's action lines (--free-actions)
    const char *governor;        // --governor SPEC: started once the session is open (NULL: off)
} tui_opts;
int tui_workbench_run(const tui_opts *o);

extern const char *const tui_heat_modes[];   // names, NULL-terminated

// ---- the voice pipeline in the workbench (tui/voice.c) ----
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
void tvoice_view(tvoice *tv, tui_voice_view *out);

// ---- plan quality measured aside (tui/measure.c) ----
// A thread at the lowest priority measures the KL / top-1 agreement of a precision plan against
// the file's precision on tui_probe_text (engine/quality.h, as `cabin ppl --kl-base`), on a
// session of its own, only while busy(ud) is false (between turns), and caches it per plan.
typedef struct measurer measurer;
measurer *measure_start(bool (*busy)(void *ud), void *ud);
void measure_stop(measurer *m);
// The plan in force and the options its session was opened with (worker thread; cheap when
// nothing changed, so it may be called during a reply).
void measure_note(measurer *m, const session_opts *o, const precision_plan *p);
int measure_get(measurer *m, double *kl, double *agree);   // enum tui_kl_state
extern const char tui_probe_text[];   // a short fixed in-car text (heat maps, plan KL)

#endif
