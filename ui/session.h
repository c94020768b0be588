// A workbench session as every face runs it: the app context, the worker thread, the voice
// pipeline, the power monitor, the conversation, the snapshot the panels draw from, a scene being
// played, `compare` streaming and the autosave. A face (tui/: the terminal, sdl/: the window)
// turns its keys into these calls, calls ui_session_poll each loop turn, and draws when it says.
// Nothing here draws; the one thing a face adds to the command language is `snapshot`.
#ifndef CABIN_UI_SESSION_H
#define CABIN_UI_SESSION_H

#include "app/scene.h"
#include "base/str.h"
#include "ui/lineedit.h"
#include "ui/ui.h"

#include <stdarg.h>

typedef struct ui_session ui_session;

// How a workbench starts (cabin workbench, cabin gui, cabin scene --tui).
typedef struct ui_opts {
    session_opts s;
    const char *scene;           // run this scene file first (may be NULL)
    bool exit_after_scene;
    const char *audio_in;        // capture device or FILE.wav (NULL: the default device)
    const char *audio_out;       // playback device or FILE.wav (NULL: the default device; none
                                 // when audio_in is a file)
    bool no_voice;               // open no audio device (talk key off; `:voice FILE` still works)
    bool free_actions;           // no grammar on the model's action lines (--free-actions)
    const char *governor;        // --governor SPEC: started once the session is open (NULL: off)
    // Another face on the same session (cabin workbench --serve: the HTTP API), attached once the
    // session is open (0, or -1 with err: the session does not open) and detached at close, after
    // the worker stopped. NULL: none.
    int (*attach)(ui_session *s, void *ud, errbuf *err);
    void (*detach)(ui_session *s, void *ud);
    void *attach_ud;
} ui_opts;

// What the face lends the session.
typedef struct ui_face {
    const char *name;            // "cabin workbench", "cabin gui": messages and the welcome line
    void *ud;
    // `:snapshot FILE`: the face's picture of itself (the terminal: text; the window: PNG),
    // called only with a path of the kind snapshot_png says
    int (*snapshot)(void *ud, const char *path, errbuf *err);
    // `:type TEXT`: TEXT into the input line, as if typed
    void (*type)(void *ud, const char *text);
    // columns of the conversation pane, its border included (compare's two columns fit in it)
    int (*chat_cols)(void *ud);
    bool snapshot_png;           // the snapshot is a PNG picture (FILE.png), else text
} ui_face;

struct ui_session {
    app_ctx c;
    worker *w;
    tvoice *tv;                  // the voice pipeline (talk key, :voice)
    power_monitor *pm;
    chat_log chat;
    ui_snapshot snap;
    sensitivity_map *heat;
    ui_face face;
    char notice[128];            // a short line for the status bar ("" none) ...
    double notice_until;         // ... shown until then (seconds)
    char autosave[1024];
    bool quit;                   // :quit, the end of a scene with exit_after_scene
    bool help;                   // :help asked for the help overlay (the face clears it)
    bool dirty;                  // something to draw
    double last_draw;
    // a scene played in the workbench
    scene sc;
    bool have_scene, exit_after_scene;
    int scene_i;
    double scene_resume;         // `wait`: the time the next line may run
    // `compare` streaming: the prompt running, A's and B's reply so far, its message
    char *cmp_prompt;
    strbuf cmp_reply[2];
    int cmp_msg;                 // -1 none
    void (*detach)(ui_session *s, void *ud);   // ui_opts.detach, once attached
    void *attach_ud;
};

// Opens the model (through app_ctx), the worker, the voice pipeline and the power monitor.
// Returns 0, or the exit status (2: the scene file is bad, 1: the session did not open) with a
// whole line in err ("cabin workbench: ...").
int ui_session_open(ui_session *s, const ui_opts *o, const ui_face *face, errbuf *err);
// Stops the threads, autosaves the transcript (says where on stderr: call it after the face has
// given the terminal back) and frees all. Returns the exit status (1 when a scene check failed).
int ui_session_close(ui_session *s);
// One loop turn at time now (seconds): drains the worker's events into the conversation, takes
// the newest snapshot, the voice and KL state, steps the scene. Returns true when a frame is due
// (something changed, and 1/fps has passed since the last): s->snap is then complete (power read,
// snap.now set) and the face draws it.
bool ui_session_poll(ui_session *s, double now, double fps);
// A line typed in the input line: a `:` command or a chat turn.
void ui_session_submit(ui_session *s, const char *line);
// Enter in the input line: its text goes to the line's history and to ui_session_submit, and the
// line is cleared.
void ui_session_enter(ui_session *s, line_edit *le);
// The keys both faces share.
void ui_session_cycle_precision(ui_session *s);    // F2: f16 -> q8_0 -> q4_0, live
void ui_session_cycle_kv(ui_session *s);           // F3: f16 -> q8 -> q4, between turns
void ui_session_cycle_heat(ui_session *s);         // F4: sensitivity -> KV -> attention
void ui_session_talk(ui_session *s);               // F5: talk / stop talking
// Hold-to-talk (a face with key-up events): down starts talking (barging in on a reply being
// spoken), up sends; a repeat of the same state does nothing.
void ui_session_talk_hold(ui_session *s, bool down);
// Ctrl-C: stops the reply being written; false when there was none.
bool ui_session_stop(ui_session *s);
void ui_session_notice(ui_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
