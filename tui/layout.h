// The workbench screen layout (tui/layout.c), shared by the core loop.
#ifndef CABIN_TUI_LAYOUT_H
#define CABIN_TUI_LAYOUT_H

#include "tui/tui.h"

enum { FOCUS_INPUT, FOCUS_CHAT, FOCUS_PANELS };   // FOCUS_PANELS + i: the i-th panel

typedef struct layout_state {
    int focus;
    bool help;
    int help_top;           // the help overlay's first line shown (it scrolls when it does not fit)
    int help_page;          // lines a page of it scrolls; 0 when it all fits (set when drawn)
    char notice[128];       // a short message in the status bar ("" = none)
} layout_state;

bool layout_wide(void);
// Columns of the conversation pane, its border included: the screen less the panels' column.
int layout_chat_cols(void);
// Draws everything; returns how many panels fit.
int layout_draw(layout_state *ls, chat_log *chat, line_edit *le, const ui_snapshot *s);
void layout_status(const layout_state *ls, const ui_snapshot *s);
// The help overlay from line ls->help_top (clamped to what can be scrolled); sets ls->help_page.
void layout_help(layout_state *ls);
// The screen as UTF-8 text, one line a row (trailing blanks cut).
int layout_snapshot(const char *path, errbuf *err);

#endif
