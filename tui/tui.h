// The ncurses workbench: a conversation on the left, live panels on the right, a status bar and
// an input line at the bottom. One thread draws (the UI thread); generation runs on a worker
// thread that owns the session and posts events (tokens, lines, snapshots) to a queue the UI
// drains (ui/worker.c, shared with any other face). Panels are plugins of one shape (tui_panel, tui/panels.c).
#ifndef CABIN_TUI_H
#define CABIN_TUI_H

#include "ui/lineedit.h"
#include "ui/panel_data.h"
#include "ui/session.h"

#include <ncurses.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct tui_rect { int y, x, h, w; } tui_rect;

// A panel: its name, a function that reads the newest snapshot (keeps whatever history it
// wants, e.g. a sparkline ring) and one that draws into a rectangle of a window.
typedef struct tui_panel {
    const char *name;
    int (*height)(const ui_snapshot *s, int w);    // rows it would like (border included)
    void (*update)(const ui_snapshot *s);
    void (*draw)(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused);
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
int tui_type_color(uint32_t wtype);   // the pair of a weight type's class (ui_type_class)
int tui_tone_attr(int tone);          // the attribute of an enum ui_tone
// A line of ui/panel_data.h in its tone, clipped to cols; returns the columns used.
int tui_line(WINDOW *w, int y, int x, int cols, const ui_line *l);
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

// ---- the conversation pane (tui/chat.c; the log itself is ui/chat.c) ----
void chat_draw(WINDOW *w, tui_rect r, chat_log *c);

// ---- the input line (ui/lineedit.c edits; tui/lineedit.c draws) ----
int tui_le_key(int key);         // an ncurses key as enum le_key (LE_NONE: not an editing key)
void le_draw(WINDOW *w, int y, int x, int cols, line_edit *e, bool focused);

// ---- the workbench (tui/workbench.c) ----
int tui_workbench_run(const ui_opts *o);


#endif
